"""The book's static figures drawn twice when the book is built: as they are, and for dark mode.

The pages follow the reader's theme (pydata-sphinx-theme's ``html[data-theme=dark]``); a PNG
drawn on white does not. When the build's Sphinx extension (``_ext/dark_figures.py``) has set
``MHA_BOOK_THEMED_FIGURES=1``, which the kernels the build starts inherit, ``import mha_book``
registers an IPython formatter (``register``): every matplotlib Figure a cell shows or glues then
also carries ``MIME``, ``{"light": png, "dark": png}`` in base64. The light PNG is the one the
inline backend drew for ``image/png`` (kept, not drawn again); the dark one is the same figure
drawn by the same printer inside ``dark_theme``: the theme's dark background and light text for
everything that is not data. ``ThemedFigures``, a MyST-NB MIME render plugin (its entry point is
in pyproject.toml), shows the pair as two images, ``only-light`` and ``only-dark``, and the theme
hides the other one. On Colab, in JupyterLab and under nbval the variable is unset: nothing is
registered and nothing is drawn twice.
"""

import dataclasses
import json
import os
import sys
import weakref
from contextlib import contextmanager

__all__ = ["BACKGROUND", "ENV", "MIME", "TEXT", "ThemedFigures", "dark_theme", "register"]

ENV = "MHA_BOOK_THEMED_FIGURES"
MIME = "application/vnd.mha.themed-png+json"
#: the dark theme's page background (``--pst-color-background``: sphinx-book-theme's, which
#: replaces pydata-sphinx-theme's #14181e) and text colour (pydata's ``--pst-color-text-base``)
BACKGROUND = "#121212"
TEXT = "#ced6dd"
#: a colour whose channels differ by at most this is neutral (black, grey, white): not data
NEUTRAL = 0.1
FIGURE = "matplotlib.figure.Figure"


def register(shell=None):
    """Make ``shell`` (default: the running IPython) add ``MIME`` to every Figure it shows,
    when ``MHA_BOOK_THEMED_FIGURES`` is ``"1"``. Returns the formatter, or None (not building,
    or no IPython)."""
    if os.environ.get(ENV) != "1":
        return None
    if shell is None:
        ipython = sys.modules.get("IPython")  # a kernel has it; a plain script does not
        shell = ipython.get_ipython() if ipython is not None else None
        if shell is None:
            return None
    formatters = shell.display_formatter.formatters
    if MIME not in formatters:
        themed = _Themed(shell)
        formatters[MIME] = _formatter_class()(parent=shell.display_formatter)
        formatters[MIME].for_type_by_name("matplotlib.figure", "Figure", themed)
        # the inline backend may replace its PNG printer: wrapped again before every cell
        shell.events.register("pre_run_cell", themed.remember_png)
        themed.remember_png()
    return formatters[MIME]


def _type_name(typ):
    return typ if isinstance(typ, str) else f"{typ.__module__}.{typ.__qualname__}"


def _formatter_class():
    from IPython.core.formatters import BaseFormatter
    from traitlets import ObjectName, Unicode

    class ThemedPNGFormatter(BaseFormatter):
        """A figure's light and dark PNGs, ``{"light": b64, "dark": b64}``."""

        format_type = Unicode(MIME)
        _return_type = dict
        print_method = ObjectName("_repr_mha_themed_png_")

        def pop(self, typ, *default):
            # IPython's inline backend pops every formatter's Figure printer whenever it sets
            # its formats (pylabtools.select_figure_formats, on pyplot's first import): this
            # one is not one of its formats, so it stays
            if _type_name(typ) == FIGURE:
                return default[0] if default else self.lookup_by_type(typ)
            return super().pop(typ, *default)

    return ThemedPNGFormatter


def _remembering_png(shell):
    """Wrap the PNG formatter's Figure printer (the inline backend's, which it may replace
    at any time) in ``_Remembered``; returns the wrapper, or None when there is none."""
    figure = sys.modules.get("matplotlib.figure")
    if figure is None:
        return None
    png = shell.display_formatter.formatters["image/png"]
    try:
        printer = png.lookup_by_type(figure.Figure)
    except KeyError:  # no PNG for figures (an svg or widget backend): nothing to pair
        return None
    if not isinstance(printer, _Remembered):
        printer = _Remembered(printer)
        png.for_type(figure.Figure, printer)
    return printer


class _Remembered:
    """The inline backend's PNG printer, keeping its last picture for the themed printer,
    which IPython calls next for the same figure: the light PNG is drawn once."""

    def __init__(self, printer):
        self.printer = printer
        self._last = None

    def __call__(self, fig):
        out = self.printer(fig)
        self._last = (weakref.ref(fig), out)
        return out

    def take(self, fig):
        """What it drew for ``fig`` just now (drawn afresh if it did not)."""
        last, self._last = self._last, None
        return last[1] if last is not None and last[0]() is fig else self.printer(fig)


class _Themed:
    """The themed format's Figure printer: the light PNG and the dark one, drawn by the same
    printer (savefig's arguments: the inline backend's). A figure shown again unchanged (the
    same light PNG: glued, then the cell's value) reuses its dark PNG."""

    def __init__(self, shell):
        self.shell = shell
        self._last = None  # (weakref to the figure, its light PNG, its dark PNG)

    def remember_png(self, *_):
        return _remembering_png(self.shell)

    def __call__(self, fig):
        printer = self.remember_png()
        if printer is None:
            return None
        light = printer.take(fig)
        if light is None:  # an empty figure: the printer draws nothing
            return None
        light, metadata = light if isinstance(light, tuple) else (light, None)
        last = self._last
        if last is not None and last[0]() is fig and last[1] == light:
            dark = last[2]
        else:
            with _layout_kept(fig), dark_theme(fig):
                dark = printer.printer(fig)
            dark = dark[0] if isinstance(dark, tuple) else dark
            self._last = (weakref.ref(fig), light, dark)
        data = {"light": light, "dark": dark}
        return data if metadata is None else (data, metadata)


@contextmanager
def _layout_kept(fig):
    """Draw ``fig`` where its layout engine (constrained, tight) put everything for the light
    PNG, just drawn: the dark PNG has the same geometry, and skips a third of the work."""
    engine = fig.get_layout_engine()
    if engine is None:
        yield
        return
    fig.set_layout_engine("none")
    try:
        yield
    finally:
        fig.set_layout_engine(engine)


def _darkened(rgba, background, text):
    """The dark theme's counterpart of a neutral colour (white -> the background, black -> the
    text colour, a grey in between); None for a colour (data) or a transparent one."""
    r, g, b, a = rgba
    if a == 0 or max(r, g, b) - min(r, g, b) > NEUTRAL:
        return None
    ink = 1 - (r + g + b) / 3
    return (*(bg + ink * (fg - bg) for bg, fg in zip(background, text)), a)


def _mapped(artist):
    """Data drawn through a colour map, or an image: kept as it is."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.image import _ImageBase

    return isinstance(artist, _ImageBase) or (
        isinstance(artist, ScalarMappable) and artist.get_array() is not None)


def _texts_over_data(fig):
    """The texts drawn on data colours: over a colour-mapped mesh or image (an annotated
    heatmap's numbers, black or white for contrast with their cell, seaborn's choice) or inside
    a coloured patch (a diagram's box, a bar). Kept as they are, as the colours under them."""
    from matplotlib.collections import QuadMesh
    from matplotlib.image import AxesImage
    from matplotlib.transforms import Bbox

    kept = set()
    for ax in fig.axes:
        boxes = []
        for artist in (*ax.collections, *ax.images):
            if not (isinstance(artist, (AxesImage, QuadMesh)) and _mapped(artist)):
                continue
            if isinstance(artist, AxesImage):
                left, right, bottom, top = artist.get_extent()
                box = Bbox([[left, bottom], [right, top]])
            else:
                box = artist.get_datalim(ax.transData)
            boxes.append(box.transformed(ax.transData).contains)
        for patch in ax.patches:
            r, g, b, a = patch.get_facecolor()
            if a > 0.5 and max(r, g, b) - min(r, g, b) > NEUTRAL:
                boxes.append(lambda x, y, patch=patch: patch.contains_point((x, y)))
        for text in ax.texts if boxes else ():
            x, y = text.get_transform().transform(text.get_unitless_position())
            if any(inside(x, y) for inside in boxes):
                kept.add(id(text))
    return kept


def _artists(fig):
    """Every artist of ``fig``, with the boxes and arrows of its texts."""
    from matplotlib.text import Annotation, Text

    for artist in fig.findobj():
        yield artist
        if isinstance(artist, Text) and artist.get_bbox_patch() is not None:
            yield artist.get_bbox_patch()
        if isinstance(artist, Annotation) and artist.arrow_patch is not None:
            yield artist.arrow_patch


@contextmanager
def dark_theme(fig, background=BACKGROUND, text=TEXT):
    """Inside the block ``fig`` has the dark theme's colours for everything that is not data:
    the figure's and axes' backgrounds become ``background``; texts, ticks, spines, grids,
    legends, colour-bar outlines and every other neutral (black, grey, white) line, patch or
    collection their light-on-dark counterpart (black -> ``text``). Colours (lines, bars,
    markers, boxes), colour-mapped meshes and images, and the texts on them are kept. Every
    colour is restored on leaving."""
    from matplotlib.collections import Collection
    from matplotlib.colors import to_rgb, to_rgba, to_rgba_array
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.text import Text

    bg, fg = to_rgb(background), to_rgb(text)
    undo = []

    def swap(setter, raw, rgba):
        dark = _darkened(rgba, bg, fg)
        if dark is not None:
            undo.append((setter, raw))
            setter(dark)

    def swap_array(setter, raw, rgba):
        colours = to_rgba_array(rgba)
        dark = [_darkened(c, bg, fg) for c in colours]
        if any(d is not None for d in dark):
            undo.append((setter, raw))
            setter([c if d is None else d for c, d in zip(colours, dark)])

    kept = _texts_over_data(fig)
    try:
        for artist in _artists(fig):
            if isinstance(artist, Text):
                if id(artist) not in kept:
                    swap(artist.set_color, artist.get_color(), to_rgba(artist.get_color()))
            elif isinstance(artist, Line2D):
                swap(artist.set_color, artist.get_color(), to_rgba(artist.get_color()))
                for part in ("markeredgecolor", "markerfacecolor", "markerfacecoloralt"):
                    raw = getattr(artist, f"_{part}", None)
                    if raw is None or (isinstance(raw, str) and raw.lower() in ("auto", "none")):
                        continue  # follows the line's colour, or is not drawn
                    swap(getattr(artist, f"set_{part}"), raw, to_rgba(raw))
            elif isinstance(artist, Patch):
                swap(artist.set_facecolor, artist._original_facecolor, artist.get_facecolor())
                swap(artist.set_edgecolor, artist._original_edgecolor, artist.get_edgecolor())
            elif isinstance(artist, Collection) and not _mapped(artist):
                swap_array(artist.set_facecolor, artist._original_facecolor,
                           artist.get_facecolor())
                if not (isinstance(artist._original_edgecolor, str)
                        and artist._original_edgecolor == "face"):
                    swap_array(artist.set_edgecolor, artist._original_edgecolor,
                               artist.get_edgecolor())
        yield fig
    finally:
        for setter, raw in reversed(undo):
            setter(raw)


class ThemedFigures:
    """MyST-NB's MIME render plugin for ``MIME`` (entry point ``myst_nb.mime_renderers``): the
    pair as two images with the output's image options (alt text, size), ``only-light`` and
    ``only-dark``, in one container, so that a figure's caption (``{glue:figure}``) follows
    neither (the theme hides a caption that follows an ``only-*`` image). Preferred to
    ``image/png`` by the HTML builders."""

    # before image/png (50), after svg (40)
    mime_priority_overrides = [(b, MIME, 45) for b in ("html", "dirhtml", "singlehtml")]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type != MIME:
            return None
        from docutils import nodes

        content = data.content if isinstance(data.content, dict) else json.loads(data.string)
        metadata = {**data.output_metadata, "image/png": data.output_metadata.get(MIME, {})}
        images = []
        for theme in ("light", "dark"):
            png = dataclasses.replace(data, mime_type="image/png", content=content[theme],
                                      output_metadata=metadata)
            for image in renderer.render_image(png):
                image["classes"].append(f"only-{theme}")
                images.append(image)
        return images if inline else [nodes.container("", *images, classes=["mha-themed"])]

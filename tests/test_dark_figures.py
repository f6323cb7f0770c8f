"""The book's static figures drawn dark (``mha_book.dark_figures``): what the dark PNG keeps and
changes, that the figure is left as it was, the formatter the build turns on, and the MyST-NB
plugin that shows the pair. tests/built_book/test_dark_figures.py checks the built pages."""

import base64
import io
import re
from pathlib import Path

import numpy as np
import pytest
import seaborn as sns
from docutils import nodes
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.pylabtools import print_figure, select_figure_formats
from matplotlib.colors import to_rgb, to_rgba
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from PIL import Image

from mha_book import dark_figures
from mha_book.dark_figures import BACKGROUND, ENV, MIME, TEXT, ThemedFigures, dark_theme

VALUES = np.array([[0.1, 0.9, 0.5], [0.7, 0.3, 0.05]])
DATA_COLOUR = "C1"  # matplotlib's orange, #ff7f0e


def figure():
    """An annotated seaborn heatmap with its colour bar, and a coloured and a black line with a
    legend and a grid (no layout engine: two renders of it are the same bytes)."""
    fig = Figure(figsize=(8, 3), dpi=100)
    heat, lines = fig.subplots(1, 2)
    sns.heatmap(VALUES, annot=True, fmt=".2f", cmap="viridis", vmin=0, vmax=1, ax=heat,
                cbar_kws={"label": "weight"})
    heat.set(title="An annotated heatmap", xlabel="key", ylabel="query")
    x = np.linspace(0, 1, 50)
    lines.plot(x, x, color=DATA_COLOUR, lw=8, label="data")
    lines.plot(x, 1 - x, color="black", label="reference")
    lines.grid(True)
    lines.legend(loc="upper left")
    lines.set(title="Two lines", xlabel="x")
    return fig


def png(fig):
    """The figure as the inline backend draws it (IPython's print_figure, bbox_inches tight)."""
    return print_figure(fig, "png", bbox_inches="tight", base64=True)


def pixels(b64):
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(b64))).convert("RGB")).astype(int)


def rgb255(colour):
    return np.array([round(255 * c) for c in to_rgb(colour)])


def near(image, colour, tol):
    return (np.abs(image - rgb255(colour)) <= tol).all(-1)


def colours(fig):
    """Every colour of every artist of ``fig``, for comparing before and after."""
    found = []
    for artist in dark_figures._artists(fig):
        for name in ("color", "facecolor", "edgecolor", "markeredgecolor", "markerfacecolor"):
            getter = getattr(artist, f"get_{name}", None)
            if getter is not None:
                value = getter()
                found.append((id(artist), name, value if isinstance(value, str)
                              else np.asarray(value, dtype=float).round(6).tolist()))
    return found


def test_the_dark_png_keeps_the_data_and_darkens_the_rest():
    fig = figure()
    heat, lines, bar = fig.axes
    annotations = [t.get_color() for t in heat.texts]
    assert sorted(set(annotations)) == [".15", "w"]  # seaborn's black or white, per cell
    light = png(fig)
    assert png(fig) == light  # the reference: the same bytes every time
    with dark_theme(fig):
        assert to_rgb(heat.get_facecolor()) == to_rgb(BACKGROUND)
        assert to_rgb(fig.get_facecolor()) == to_rgb(BACKGROUND)
        for text in (heat.title, lines.title, heat.xaxis.label, bar.yaxis.label,
                     *heat.get_xticklabels(), *bar.get_yticklabels(),
                     *lines.get_legend().get_texts()):
            assert to_rgb(text.get_color()) == to_rgb(TEXT), text
        assert to_rgb(lines.get_legend().get_frame().get_facecolor()) == to_rgb(BACKGROUND)
        assert to_rgb(lines.spines["left"].get_edgecolor()) == to_rgb(TEXT)
        assert to_rgb(lines.get_lines()[0].get_color()) == to_rgb(DATA_COLOUR)
        assert to_rgb(lines.get_lines()[1].get_color()) == to_rgb(TEXT)
        assert [t.get_color() for t in heat.texts] == annotations
        dark = png(fig)
    assert png(fig) == light, "the figure was not left as it was"
    light_px, dark_px = pixels(light), pixels(dark)
    assert light_px.shape == dark_px.shape
    assert (light_px[0, 0] == 255).all()
    assert (np.abs(dark_px[0, 0] - rgb255(BACKGROUND)) <= 1).all(), dark_px[0, 0]
    # the data: a heatmap cell (0.9, with its white number) and the orange line
    cell = near(light_px, to_rgba(sns.color_palette("viridis", as_cmap=True)(0.9)), 1)
    line = near(light_px, DATA_COLOUR, 2)
    for where, least in ((cell, 1000), (line, 500)):
        assert where.sum() > least
        assert (light_px[where] == dark_px[where]).all(-1).mean() > 0.98
    annotated = (light_px == 255).all(-1) & (dark_px == 255).all(-1)  # white numbers, kept
    assert 0 < annotated.sum() < 0.01 * (light_px == 255).all(-1).sum(), "white left behind"
    assert near(dark_px, TEXT, 3).sum() > 500 and not near(light_px, TEXT, 3).any()


def test_a_text_on_a_coloured_box_keeps_its_colour():
    """A diagram's box (chapter 04's block diagram): black on the box's own pastel, which the
    dark PNG keeps; a text on the background turns light."""
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    box = ax.add_patch(Rectangle((0.1, 0.1), 0.5, 0.5, facecolor="#F9D69A", edgecolor="black"))
    inside = ax.text(0.35, 0.35, "attention", color="black", ha="center")
    outside = ax.text(0.8, 0.8, "(B, L, d)", color="black")
    png(fig)
    with dark_theme(fig):
        assert inside.get_color() == "black"
        assert to_rgb(outside.get_color()) == to_rgb(TEXT)
        assert to_rgb(box.get_facecolor()) == to_rgb("#F9D69A")
        assert to_rgb(box.get_edgecolor()) == to_rgb(TEXT)


def test_every_colour_of_the_figure_is_restored():
    fig = figure()
    png(fig)
    before = colours(fig)
    with dark_theme(fig):
        assert colours(fig) != before
        png(fig)
    assert colours(fig) == before


def test_the_colours_are_the_themes():
    """BACKGROUND and TEXT are the book's dark page and text (sphinx-book-theme on
    pydata-sphinx-theme)."""
    import pydata_sphinx_theme
    import sphinx_book_theme

    def dark_values(module, name):
        css = next(Path(module.__file__).parent.rglob(f"{name}.css")).read_text()
        blocks = re.findall(r"html\[data-theme=dark\]\{([^}]*)\}", css)
        return dict(re.findall(r"(--pst-color-[\w-]+):([^;]+)", ";".join(blocks)))

    pydata = dark_values(pydata_sphinx_theme, "pydata-sphinx-theme")
    book = dark_values(sphinx_book_theme, "sphinx-book-theme")
    assert {**pydata, **book}["--pst-color-background"] == BACKGROUND
    assert {**pydata, **book}["--pst-color-text-base"] == TEXT


@pytest.fixture
def shell():
    """IPython with the inline backend's PNG printer for figures (what a kernel has), left
    as it was found."""
    shell = InteractiveShell.instance()
    formatters = shell.display_formatter.formatters
    kept = formatters["image/png"].pop(Figure, None)
    assert MIME not in formatters
    select_figure_formats(shell, {"png"}, bbox_inches="tight")
    yield shell
    themed = formatters.pop(MIME, None)
    if themed is not None:
        shell.events.unregister("pre_run_cell", themed.lookup_by_type(Figure).remember_png)
    formatters["image/png"].pop(Figure, None)
    if kept is not None:
        formatters["image/png"].for_type(Figure, kept)


@pytest.mark.parametrize("value", [None, "0", ""])
def test_nothing_is_registered_outside_the_build(shell, monkeypatch, value):
    if value is None:
        monkeypatch.delenv(ENV, raising=False)
    else:
        monkeypatch.setenv(ENV, value)
    assert dark_figures.register(shell) is None
    assert MIME not in shell.display_formatter.formatters
    data, _ = shell.display_formatter.format(figure())
    assert set(data) == {"image/png", "text/plain"}


def test_the_build_shows_a_light_and_a_dark_png_drawing_each_once(shell, monkeypatch):
    monkeypatch.setenv(ENV, "1")
    assert dark_figures.register(shell) is not None
    # the inline backend starts after `import mha_book` (pyplot's first import): it pops
    # every formatter's Figure printer and sets its own PNG printer
    select_figure_formats(shell, {"png"}, bbox_inches="tight")
    png_formatter = shell.display_formatter.formatters["image/png"]
    inline, drawn = png_formatter.lookup_by_type(Figure), []
    png_formatter.for_type(Figure, lambda fig: drawn.append(fig) or inline(fig))
    shell.events.trigger("pre_run_cell", None)  # as before every cell
    fig = figure()
    data, _ = shell.display_formatter.format(fig)
    assert set(data) == {"image/png", "text/plain", MIME}
    assert data[MIME]["light"] == data["image/png"] == png(fig)
    assert pixels(data[MIME]["dark"])[0, 0].tolist() == rgb255(BACKGROUND).tolist()
    assert len(drawn) == 2, "the light PNG was drawn twice"
    again, _ = shell.display_formatter.format(fig)  # shown again, unchanged
    assert again[MIME] == data[MIME] and len(drawn) == 3  # its dark PNG reused
    assert shell.display_formatter.formatters[MIME](Figure()) is None  # empty: no PNG


def test_the_plugin_shows_the_pair_with_the_outputs_image_options():
    class Renderer:  # MyST-NB's NbElementRenderer.render_image, as far as the plugin uses it
        def __init__(self):
            self.seen = []

        def render_image(self, data):
            self.seen.append(data)
            return [nodes.image(uri=f"{data.content}.png",
                                alt=data.cell_metadata["mystnb"]["image"]["alt"])]

    from myst_nb.core.render import MimeData

    renderer = Renderer()
    data = MimeData(MIME, {"light": "L", "dark": "D"},
                    cell_metadata={"mystnb": {"image": {"alt": "What the figure shows"}}},
                    output_metadata={MIME: {"width": "300"}})
    assert ThemedFigures.handle_mime(renderer, MimeData("image/png", "L"), False) is None
    (pair,) = ThemedFigures.handle_mime(renderer, data, False)
    assert isinstance(pair, nodes.container) and "mha-themed" in pair["classes"]
    light, dark = pair.children
    assert (light["uri"], light["classes"]) == ("L.png", ["only-light"])
    assert (dark["uri"], dark["classes"]) == ("D.png", ["only-dark"])
    assert light["alt"] == dark["alt"] == "What the figure shows"
    assert {d.mime_type for d in renderer.seen} == {"image/png"}
    assert all(d.output_metadata["image/png"] == {"width": "300"} for d in renderer.seen)
    inline = ThemedFigures.handle_mime(renderer, data, True)
    assert [i["classes"] for i in inline] == [["only-light"], ["only-dark"]]

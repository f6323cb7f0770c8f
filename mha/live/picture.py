"""A live figure as a Jupyter widget: the front end sent once, then data.

A figure displayed as HTML (``Figure.html()``) carries its styles and the whole
front end (mha/static/live.js, about 70 KB) in every output: a kernel that
redraws by replacing an output makes the page parse and run all of it again.
``Picture`` (``picture_class()``; needs anywidget, else None) is an anywidget
instead:

* its ES module (``module()``) is the page's bundles (``mha.live.bundles``: the
  engine, after any extensions named) and the widget entry's bundle
  ``mha/static/widget.js`` after them, which exports ``render({model, el})``
  (sources: mha/static/src/widget.js); its styles (``styles()``) are the
  page's, ``figure.CSS``. Both go to the front end once per widget;
* its ``html`` trait is the figure without them (``markup(figure)``: the
  markup and the spec as JSON, what ``Figure.html()`` has between its styles and
  its script) or a message; setting it sends only that, and the module draws it
  with the front end already loaded (``window.mhaLive.mountAll``).

A saved notebook keeps a widget's picture only where the widget state is saved
with it (JupyterLab: Settings, Save Widget State Automatically; on in ``make
lab``, lab-settings/): the state holds the module and the last figure, so the
picture draws again with no kernel. Without it JupyterLab says the widget's
model is not found; it does not fall back to an output's HTML.
"""

import re
from functools import lru_cache

from . import bundles
from .figure import CSS

__all__ = ["ENTRY", "markup", "module", "picture_class", "styles"]

#: the widget entry's bundle (an ES module): not a part of the page's script
ENTRY = bundles.STATIC / "widget.js"


def _inside(text, tag):
    """The text of the one ``<tag>...</tag>`` that ``text`` is."""
    found = re.fullmatch(rf"<{tag}>(.*)</{tag}>", text.strip(), re.S)
    if found is None:
        raise ValueError(f"expected one <{tag}> element; got {text[:40]!r}...")
    return found.group(1)


@lru_cache(maxsize=None)
def module(*extensions):
    """The ES module: the page's bundles (``extensions``', then the engine's),
    then the widget entry, which exports ``render``. The engine mounts the
    page's figures as it runs; one it cannot draw (an untrusted output whose
    script Lab took out) throws, which must not stop the module loading."""
    entry = ENTRY.read_text(encoding="utf-8")
    page = _inside(bundles.script(*extensions), "script")
    return f"try {{\n{page}\n}} catch (err) {{ console.error(err); }}\n{entry}"


@lru_cache(maxsize=1)
def styles():
    """The page's styles (``figure.CSS``) as CSS text."""
    return _inside(CSS, "style")


def markup(figure):
    """``figure`` without its styles and its front end: its markup and its spec
    (JSON in a script element that never runs), what a ``Picture`` draws."""
    text = figure.html()
    for part in (CSS, bundles.script(*figure.bundles())):
        if text.count(part) != 1:
            raise ValueError("Figure.html() no longer holds the styles and the "
                             "script once each; update mha.live.picture")
        text = text.replace(part, "")
    return text


@lru_cache(maxsize=1)
def picture_class():
    """The ``Picture`` widget class, or None without anywidget (a kernel with
    ipywidgets only: the caller shows the whole HTML in an ``Output``)."""
    try:
        import anywidget
        import traitlets
    except ImportError:
        return None

    class Picture(anywidget.AnyWidget):
        """One live figure drawn by the front end: set ``html`` to
        ``markup(figure)`` (or to a message's HTML) to redraw."""

        _esm = module()
        _css = styles()
        html = traitlets.Unicode("").tag(sync=True)

    Picture.__qualname__ = "Picture"
    return Picture

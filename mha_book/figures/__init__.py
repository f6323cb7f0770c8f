"""The book's live figures, one module per idea (drawn by ``mha.live``'s front end).

A figure is shown by calling its function in a cell, e.g. ``mha_book.figures.dk_softmax()``: one
HTML output that works in the built book without a kernel and in every Jupyter front end.
Chapter 07's explorer, which also has Jupyter controls that recompute with Python, is
``mha_book.widgets.explorer``.

Figures are found, not listed: every module of this package is imported, and each function of
its ``__all__`` marked ``@live_figure`` (``mha_book.figures._registry``) is a figure, exposed
here under its own name and listed in ``FIGURES`` (name -> function, sorted by name).
``build(name)`` makes one with the arguments its mark gives (tests and benchmarks build every
figure so). A new figure is a new module here with a marked function: nothing else to list.
The modules keep their own names (``mha_book.figures.kv_cache``), which no figure function
may take.

The figures with an in-page compute (the explorer, chapter 05's split-heads, the Shakespeare
model) need the book's own bundle of the front end, ``mha_book/static/book.js`` (built from
``mha_book/static/src/`` by frontend/build.mjs): it is registered with ``mha.live`` here, so
such a figure's HTML carries it before the engine's.
"""

import importlib
import pkgutil
from pathlib import Path

from mha.live import bundles

from ._registry import live_figure

#: the in-page computes of the book's bundle (mha_book/static/src/main.js registers them)
COMPUTES = ("explorer", "split-heads", "text-heads")
BUNDLE = bundles.register("mha_book", Path(__file__).resolve().parents[1] / "static" / "book.js",
                          computes=COMPUTES)


def _find():
    found, modules = {}, []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        modules.append(info.name)
        module = importlib.import_module(f"{__name__}.{info.name}")
        for name in getattr(module, "__all__", ()):
            function = getattr(module, name)
            if not hasattr(function, "live_figure_example"):
                continue
            if name in found:
                raise ImportError(f"two live figures are named {name!r}: in "
                                  f"{found[name].__module__} and {module.__name__}")
            found[name] = function
    clash = sorted(set(found) & set(modules))
    if clash:
        raise ImportError(f"a live figure has the name of a module of mha_book.figures: {clash}")
    return dict(sorted(found.items()))


#: every live figure of the book: function name -> the function that makes it
FIGURES = _find()
globals().update(FIGURES)


def build(name):
    """The figure ``name`` (a key of ``FIGURES``) made with the arguments of its mark."""
    function = FIGURES[name]
    return function(**function.live_figure_example)


__all__ = ["FIGURES", "build", "live_figure", *FIGURES]

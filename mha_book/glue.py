"""Helpers for the book's notebooks that work the same inside and outside the book's build.

The book builds with MyST-NB, whose ``glue`` stores a value computed by a cell so that the prose
can show it (``{glue:text}`name```). On Colab, Binder or a plain Jupyter, MyST-NB is absent: the
notebooks must still run, so ``glue`` here uses MyST-NB's when it is installed and otherwise only
keeps the value (and shows it when ``display=True``).
"""

import importlib.util

__all__ = ["glue", "glued"]

_GLUED = {}


def glue(name, value, display=True):
    """Store ``value`` under ``name`` for the book's prose (MyST-NB's glue when present).

    Without MyST-NB the value is kept in ``mha_book.glue.glued`` (and displayed when ``display``),
    so a notebook that glues its numbers runs anywhere.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str; got {name!r}")
    _GLUED[name] = value
    if importlib.util.find_spec("myst_nb") is not None:
        from myst_nb import glue as myst_glue

        myst_glue(name, value, display=display)
    elif display:
        try:
            from IPython.display import display as show
        except ModuleNotFoundError:  # plain Python: no rich display
            show = print
        show(value)


def glued(name):
    """The value last glued under ``name`` (in this Python process)."""
    if name not in _GLUED:
        raise KeyError(f"nothing glued under {name!r}; glued so far: {sorted(_GLUED)}")
    return _GLUED[name]

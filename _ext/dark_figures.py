"""Every static figure of the built book drawn dark in dark mode.

Sets ``MHA_BOOK_THEMED_FIGURES=1`` (unless it is set: ``MHA_BOOK_THEMED_FIGURES=0 make book``
builds without the dark PNGs) before the notebooks run: the kernels the build starts inherit it,
and ``import mha_book`` then gives every matplotlib figure a second, dark PNG
(``mha_book/dark_figures.py``). MyST-NB shows the pair through the MIME render plugin
``mha_book.dark_figures:ThemedFigures``, which pyproject.toml declares (entry point group
``myst_nb.mime_renderers``); web/book.css keeps the theme's light panel from framing the dark
one. tests/built_book/test_dark_figures.py checks every page in both modes.
"""

import os

from myst_nb.core.render import load_mime_renders
from sphinx.errors import ExtensionError

from mha_book.dark_figures import ENV, ThemedFigures


def setup(app):
    if ThemedFigures not in load_mime_renders():
        raise ExtensionError(
            "MyST-NB does not know mha_book.dark_figures:ThemedFigures (the entry point in "
            "pyproject.toml): reinstall the package, .venv/bin/pip install --no-deps -e .")
    os.environ.setdefault(ENV, "1")
    return {"parallel_read_safe": True, "parallel_write_safe": True}

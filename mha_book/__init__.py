"""mha_book: the code behind the book "Multi-Head Attention, from one head to many".

Everything here exists for the chapters and imports the attention library ``mha``, never the
reverse: the synthetic tasks (``tasks``), the tiny transformers and their training (``tiny``,
``train``, ``decode``), the Shakespeare language model (``language_model``, its weights in
``weights/``), the copy-back experiment of the positions chapter (``copy_back``), hand-made
patterns (``patterns``), the explorer (``explore``, ``widgets``, ``sources``), the live figures
(``figures``), the exercises' checks (``exercises``), ``glue`` (the prose's numbers) and the
static figures' dark-mode versions in the built book (``dark_figures``).
Submodules are imported on first use (``mha_book.tasks``).
"""

from mha._lazy import lazy_submodules

from .dark_figures import register as _register_dark_figures
from .glue import glue, glued
from .language_model import load_language_model

__all__ = ["glue", "glued", "load_language_model"]

_LAZY = ("copy_back", "decode", "exercises", "explore", "figures", "language_model",
         "lm_heads", "patterns", "sources", "tasks", "tiny", "train", "widgets")

__getattr__, __dir__ = lazy_submodules(__name__, _LAZY, globals())

# while the book is built (MHA_BOOK_THEMED_FIGURES=1, set by _ext/dark_figures.py), every figure
# a chapter shows also gets a dark PNG (mha_book.dark_figures); elsewhere this does nothing
_register_dark_figures()

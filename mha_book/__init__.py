"""mha_book: the code behind the book "Multi-Head Attention, from one head to many".

Everything here exists for the chapters and imports the attention library ``mha``, never the
reverse: the synthetic tasks (``tasks``), the tiny transformers and their training (``tiny``,
``train``, ``decode``), the Shakespeare language model (``language_model``, its weights in
``weights/``), the copy-back experiment of the positions chapter (``copy_back``), hand-made
patterns (``patterns``), the explorer (``explore``, ``widgets``, ``sources``), the live figures
(``figures``), the exercises' checks (``exercises``) and ``glue`` (the prose's numbers).
Submodules are imported on first use (``mha_book.tasks``).
"""

import importlib

from .glue import glue, glued
from .language_model import load_language_model

__all__ = ["glue", "glued", "load_language_model"]

_LAZY = ("copy_back", "decode", "exercises", "explore", "figures", "language_model",
         "patterns", "sources", "tasks", "tiny", "train", "widgets")


def __getattr__(name):
    """Import a submodule (tasks, figures, exercises, ...) on first access."""
    if name in _LAZY:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise  # a dependency of the submodule is missing: say which
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))

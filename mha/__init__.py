"""mha: multi-head attention, from one head to many (the package behind the book).

Everything public is importable from here; ``mha.viz``, ``mha.widgets``, ``mha.counts``,
``mha.exercises``, ``mha.tiny``, ``mha.tasks``, ``mha.train`` and ``mha.patterns`` are imported on
first use, so ``import mha`` needs only torch.
"""

import importlib

__version__ = "0.1.0"

from .device import device
from .functional import (
    masked_softmax,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from .head import AttentionHead
from .layer import MultiHeadAttention
from .loop import MultiHeadAttentionLoop
from .masks import causal_mask, convert_mask, valid_lens_to_mask
from .record import record_attention
from .relative import RelativeMultiHeadAttention

__all__ = [
    "AttentionHead",
    "MultiHeadAttention",
    "MultiHeadAttentionLoop",
    "RelativeMultiHeadAttention",
    "__version__",
    "causal_mask",
    "convert_mask",
    "device",
    "masked_softmax",
    "merge_heads",
    "record_attention",
    "scaled_dot_product_attention",
    "split_heads",
    "valid_lens_to_mask",
]

_LAZY = ("viz", "widgets", "counts", "exercises", "tiny", "tasks", "train", "patterns")


def __getattr__(name):
    """Import the optional submodules (figures, widgets, exercises, ...) on first access."""
    if name in _LAZY:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise  # a dependency of the submodule is missing: say which
            raise AttributeError(f"module 'mha' has no attribute {name!r}") from None
    raise AttributeError(f"module 'mha' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + list(_LAZY))

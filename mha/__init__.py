"""mha: multi-head attention, from one head to many: an attention library.

Functions, masks, layers, caches, positions, counts, model configurations and analysis tools.
Everything public is importable from here; ``mha.viz`` (matplotlib and seaborn), ``mha.live``
(live figures), ``mha.counts``, ``mha.configs``, ``mha.positions`` and ``mha.head_scores`` are
imported on first use, so ``import mha`` needs only torch. The book's own code (tasks, tiny
models, training, the explorer, figures, exercises) is the separate package ``mha_book``, which
imports ``mha`` and never the reverse.
"""

import importlib

__version__ = "0.1.0"

from mha.backends import peak_memory, sdpa_backend
from mha.blockwise import blockwise_attention, online_softmax_step
from mha.cache import KVCache
from mha.device import device
from mha.functional import (
    masked_softmax,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from mha.head import AttentionHead
from mha.head_figure import head_view, save_html
from mha.importance import attention_layers, head_gates, head_importance, prune_heads
from mha.latent import LatentAttention
from mha.layer import MultiHeadAttention
from mha.loop import MultiHeadAttentionLoop
from mha.masks import causal_mask, convert_mask, valid_lens_to_mask
from mha.record import record_attention
from mha.relative import RelativeMultiHeadAttention
from mha.rotary import RotaryMultiHeadAttention, apply_rope

__all__ = [
    "__version__",
    "apply_rope",
    "attention_layers",
    "AttentionHead",
    "blockwise_attention",
    "causal_mask",
    "convert_mask",
    "device",
    "head_gates",
    "head_importance",
    "head_view",
    "KVCache",
    "LatentAttention",
    "masked_softmax",
    "merge_heads",
    "MultiHeadAttention",
    "MultiHeadAttentionLoop",
    "online_softmax_step",
    "peak_memory",
    "prune_heads",
    "record_attention",
    "RelativeMultiHeadAttention",
    "RotaryMultiHeadAttention",
    "save_html",
    "scaled_dot_product_attention",
    "sinusoidal_positions",
    "sdpa_backend",
    "split_heads",
    "valid_lens_to_mask",
]

_LAZY = ("viz", "counts", "configs", "positions", "live", "head_scores")


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

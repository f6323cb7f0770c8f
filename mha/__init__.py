"""mha: multi-head attention, from one head to many: an attention library.

Functions, masks, layers, caches, positions, counts, model configurations and analysis tools.
Everything public is importable from here; ``mha.viz`` (matplotlib and seaborn), ``mha.live``
(live figures), ``mha.counts``, ``mha.configs``, ``mha.positions``, ``mha.head_scores`` and
``mha.distributed`` (several devices) are imported on first use, so ``import mha`` needs only
torch. The book's own code (tasks, tiny
models, training, the explorer, figures, exercises) is the separate package ``mha_book``, which
imports ``mha`` and never the reverse.
"""

__version__ = "0.1.0"

from ._lazy import lazy_submodules
from .backends import peak_memory, sdpa_backend
from .blockwise import blockwise_attention, online_softmax_step
from .cache import KVCache
from .device import device
from .fixed_state import delta_rule, delta_rule_step, gated_delta_rule, linear_attention
from .flex import flex_attention, flex_available
from .functional import (
    masked_softmax,
    merge_heads,
    scaled_dot_product_attention,
    split_heads,
)
from .gated_deltanet import GatedDeltaNet, KimiDeltaAttention, RecurrentState
from .head import AttentionHead
from .head_figure import head_view, save_html
from .importance import attention_layers, head_gates, head_importance, prune_heads
from .latent import LatentAttention
from .layer import MultiHeadAttention
from .loop import MultiHeadAttentionLoop
from .masks import causal_mask, convert_mask, valid_lens_to_mask
from .paged import PagedKVCache, paged_attention
from .positions import sinusoidal_positions
from .record import record_attention
from .relative import RelativeMultiHeadAttention
from .rope_scaling import rope_frequencies
from .rotary import RotaryMultiHeadAttention, apply_rope

__all__ = [
    "__version__",
    "apply_rope",
    "attention_layers",
    "AttentionHead",
    "blockwise_attention",
    "causal_mask",
    "convert_mask",
    "delta_rule",
    "delta_rule_step",
    "device",
    "flex_attention",
    "flex_available",
    "gated_delta_rule",
    "GatedDeltaNet",
    "head_gates",
    "head_importance",
    "head_view",
    "KimiDeltaAttention",
    "KVCache",
    "LatentAttention",
    "linear_attention",
    "masked_softmax",
    "merge_heads",
    "MultiHeadAttention",
    "MultiHeadAttentionLoop",
    "online_softmax_step",
    "PagedKVCache",
    "paged_attention",
    "peak_memory",
    "prune_heads",
    "record_attention",
    "RecurrentState",
    "RelativeMultiHeadAttention",
    "rope_frequencies",
    "RotaryMultiHeadAttention",
    "save_html",
    "scaled_dot_product_attention",
    "sinusoidal_positions",
    "sdpa_backend",
    "split_heads",
    "valid_lens_to_mask",
]

_LAZY = ("viz", "counts", "configs", "live", "head_scores", "distributed")

__getattr__, __dir__ = lazy_submodules(__name__, _LAZY, globals())

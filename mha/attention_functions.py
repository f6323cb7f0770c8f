"""The attention functions a layer dispatches to, by name (like Hugging Face's
``AttentionInterface``): a layer computes q, k and v, then calls one function.

Shape legend: B batch, H query heads, Hkv key/value heads, Lq/Lk query/key
lengths, Dk query/key features, Dv value features (see ``mha.functional``).

Every function has one signature::

    fn(module, q, k, v, mask=None, *, is_causal=False, scale=None,
       dropout_p=0.0, need_weights=False) -> (output, weights)

q (B, H, Lq, Dk), k (B, Hkv, Lk, Dk), v (B, Hkv, Lk, Dv), Hkv dividing H (a
key/value head broadcast over the heads, stride 0, counts as shared by all);
``mask`` bool broadcastable to (B, H, Lq, Lk), True = may attend, or None;
``is_causal`` (with no mask, Lq == Lk): query i sees keys 0 .. i; ``scale``
None means 1 / sqrt(Dk). Returns output (B, H, Lq, Dv) and, when
``need_weights``, the weights (B, H, Lq, Lk) (else None). A query with no
allowed key gives zeros, never NaN. ``module`` is the calling layer (for what
the function needs of it, e.g. ``module.sinks``).

Built in: ``"sdpa"`` (PyTorch's fused kernel, ``sdpa``; with ``need_weights``
it runs ``"eager"``), ``"eager"`` (the explicit softmax, ``eager``), and, from
their modules, ``"sinks"`` (``mha.modern``), ``"relative"``
(``mha.relative``) and ``"linear"`` (causal linear attention, no softmax:
``mha.fixed_state``). A layer's ``attn_implementation`` names its function;
set it to use another, e.g. one of your own::

    @mha.attention_functions.register("mine")
    def mine(module, q, k, v, mask=None, *, is_causal=False, scale=None,
             dropout_p=0.0, need_weights=False):
        return mha.attention_functions.eager(
            module, q, k, v, mask, is_causal=is_causal, scale=scale,
            dropout_p=dropout_p, need_weights=need_weights)

    layer.attn_implementation = "mine"
"""

import math

import torch
import torch.nn.functional as F

from .functional import _attention
from .masks import _causal_mask

__all__ = ["ATTENTION_FUNCTIONS", "attention_function", "eager", "register",
           "sdpa"]

# enable_gqa (key/value heads shared by groups of query heads) came in
# torch 2.5; the kernels that support it read them without copies (CPU
# flash; CUDA flash, which refuses masks and float32), others copy them
# (CUDA's math fallback); a TorchVersion compares as a version, not text
SDPA_HAS_GQA = torch.__version__ >= "2.5"

#: name -> attention function; ``register`` adds to it
ATTENTION_FUNCTIONS = {}


def register(name):
    """Decorator: ``@register("name")`` adds a function to
    ``ATTENTION_FUNCTIONS`` (replacing one of that name) and returns it."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str; got {name!r}")

    def add(fn):
        if not callable(fn):
            raise TypeError(f"an attention function must be callable; got "
                            f"{type(fn).__name__}")
        ATTENTION_FUNCTIONS[name] = fn
        return fn

    return add


def attention_function(name):
    """The function registered as ``name``; a ValueError lists the names."""
    if not isinstance(name, str) or name not in ATTENTION_FUNCTIONS:
        raise ValueError(
            f"attn_implementation must be the name of a registered attention "
            f"function, one of {sorted(ATTENTION_FUNCTIONS)}; got {name!r} "
            f"(add one with mha.attention_functions.register)")
    return ATTENTION_FUNCTIONS[name]


def repeat_kv(x, num_heads):
    """(B, Hkv, Lk, D) -> (B, H, Lk, D): key/value head g serves query heads
    g*H/Hkv .. (g+1)*H/Hkv - 1 (a copy; a head broadcast by stride 0 stays
    a view)."""
    if x.size(1) == num_heads:
        return x
    return x.repeat_interleave(num_heads // x.size(1), dim=1)


def _shared_head(x):
    """A tensor broadcast over the heads (stride 0) -> its one head."""
    if x.size(1) > 1 and x.stride(1) == 0:
        return x[:, :1]  # (B, H, Lk, D) view -> (B, 1, Lk, D)
    return x


def sdpa(q, k, v, mask=None, *, is_causal=False, scale=None, dropout_p=0.0):
    """``F.scaled_dot_product_attention`` on q (B, H, Lq, Dk), k (B, Hkv, Lk,
    Dk), v (B, Hkv, Lk, Dv) -> (B, H, Lq, Dv), without the (Lq, Lk) weights;
    key/value heads shared through ``enable_gqa`` (PyTorch copies them only
    in a kernel without grouped-query support, e.g. CUDA's math fallback).

    A query row that ``mask`` (bool, True = may attend) leaves without any
    key gives zeros: it is allowed every key for the kernel (no NaN, finite
    gradients), then zeroed. The package's only call of the fused kernel.
    """
    k, v = _shared_head(k), _shared_head(v)
    kw = {} if scale is None else {"scale": scale}
    if q.size(1) != k.size(1):
        if SDPA_HAS_GQA:
            kw["enable_gqa"] = True
        else:  # older torch: copy each key/value head for its query heads
            k, v = repeat_kv(k, q.size(1)), repeat_kv(v, q.size(1))
    if mask is None:
        return F.scaled_dot_product_attention(
            q, k, v, dropout_p=dropout_p, is_causal=is_causal, **kw)
    any_key = mask.any(dim=-1, keepdim=True)  # (B|1, H|1, Lq, 1): any key?
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask | ~any_key, dropout_p=dropout_p, **kw)
    return out.masked_fill(~any_key, 0.0)  # (B, H, Lq, Dv)


def explicit(q, k, v, mask=None, *, is_causal=False, scale=None,
             dropout_p=0.0):
    """softmax(q k^T * scale) v with the weights: q (B, H, Lq, Dk), k
    (B, Hkv, Lk, Dk), v (B, Hkv, Lk, Dv) -> (B, H, Lq, Dv), (B, H, Lq, Lk).
    The computation is ``mha.functional._attention``."""
    if is_causal:
        mask = _causal_mask(q.size(-2), k.size(-2), device=q.device)
    H = q.size(1)
    k, v = repeat_kv(k, H), repeat_kv(v, H)  # (B, H, Lk, D)
    # one copy each into (B, H, L, D) order: the two batched matmuls then
    # need none (a head broadcast by stride 0 stays a view: no copies)
    q, k, v = (x if x.stride(1) == 0 and H > 1 else x.contiguous()
               for x in (q, k, v))
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    return _attention(q, k, v, mask, scale, dropout_p)


@register("eager")
def eager(module, q, k, v, mask=None, *, is_causal=False, scale=None,
          dropout_p=0.0, need_weights=False):
    """The explicit path (``explicit``): builds the (Lq, Lk) weights."""
    out, weights = explicit(q, k, v, mask, is_causal=is_causal, scale=scale,
                            dropout_p=dropout_p)
    return out, (weights if need_weights else None)


@register("sdpa")
def sdpa_attention(module, q, k, v, mask=None, *, is_causal=False,
                   scale=None, dropout_p=0.0, need_weights=False):
    """The fused kernel (``sdpa``); ``need_weights`` runs ``eager``."""
    if need_weights:
        return eager(module, q, k, v, mask, is_causal=is_causal, scale=scale,
                     dropout_p=dropout_p, need_weights=True)
    return sdpa(q, k, v, mask, is_causal=is_causal, scale=scale,
                dropout_p=dropout_p), None


class AttentionName:
    """A layer's ``attn_implementation``: the name of a registered function,
    checked when set (a ValueError lists the names); ``default`` until then.
    """

    def __init__(self, default="sdpa"):
        self.default = default

    def __set_name__(self, owner, name):
        self.slot = "_" + name

    def __get__(self, layer, owner=None):
        if layer is None:
            return self
        return layer.__dict__.get(self.slot, self.default)

    def __set__(self, layer, name):
        attention_function(name)  # known, or a ValueError
        layer.__dict__[self.slot] = name

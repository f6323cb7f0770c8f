"""Multi-head attention with relative position representations (Shaw, Uszkoreit & Vaswani, 2018).

Shape legend: B batch, H heads, Lq/Lk query/key lengths, D d_model, Dh d_head, R = 2 delta + 1
relative distances where delta = max_relative_position (the book's Delta; K is the matrix of
keys; see ``mha.functional``).

Query i and key j are d = clip(j - i, -delta, delta) apart (key minus query). Two learned tables of shape (R, Dh), shared
by all heads, give a^K_ij and a^V_ij for that distance, and (eqs. 3 and 4 of the paper)

    e_ij = q_i . (k_j + a^K_ij) / sqrt(Dh),    z_i = sum_j softmax_j(e_ij) (v_j + a^V_ij).

``relative_attention`` computes that; it is the attention function ``"relative"`` of
``mha.attention_functions``, the one a ``RelativeMultiHeadAttention`` calls.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import _checks
from .attention_functions import AttentionName, register, repeat_kv
from .functional import _softmax_allowed
from .layer import MultiHeadAttention
from .masks import _causal_mask

__all__ = ["RelativeMultiHeadAttention", "relative_attention", "relative_positions"]


def relative_positions(num_queries, num_keys, max_relative_position, device=None):
    """(Lq, Lk) indices into the tables: clip(j - i, -delta, delta) + delta, in 0..2 delta
    (delta = max_relative_position)."""
    num_queries = _checks.check_int("num_queries", num_queries, minimum=0)
    num_keys = _checks.check_int("num_keys", num_keys, minimum=0)
    max_relative_position = _checks.check_int("max_relative_position", max_relative_position,
                                              minimum=0)
    device = _checks.check_device_arg("device", device)
    i = torch.arange(num_queries, device=device)[:, None]  # (Lq, 1)
    j = torch.arange(num_keys, device=device)[None, :]  # (1, Lk)
    delta = max_relative_position
    return (j - i).clamp(-delta, delta) + delta  # (Lq, Lk)


@register("relative")
def relative_attention(module, q, k, v, mask=None, *, is_causal=False,
                       scale=None, dropout_p=0.0, need_weights=False):
    """Attention with the relative tables of ``module`` (``relative_key``,
    ``relative_value``, ``max_relative_position``): q (B, H, Lq, Dh), k and v
    (B, Hkv, Lk, Dh) -> output (B, H, Lq, Dh) and weights (B, H, Lq, Lk)
    (None unless ``need_weights``). Always explicit: the relative terms need
    the weights."""
    (Lq, Dh), Lk = q.shape[-2:], k.size(-2)
    if is_causal:
        mask = _causal_mask(Lq, Lk, device=q.device)  # (Lq, Lk)
    if mask is not None:
        _checks.check_bool_mask(mask, (*q.shape[:2], Lq, Lk), "(B, H, Lq, Lk)")
    k, v = repeat_kv(k, q.size(1)), repeat_kv(v, q.size(1))  # (B, H, Lk, Dh)
    delta = module.max_relative_position
    index = relative_positions(Lq, Lk, delta, q.device)  # (Lq, Lk)
    # (Lq, Lk) -> (Lq, Lk, Dh) each
    a_k, a_v = module.relative_key(index), module.relative_value(index)
    q = q * (1.0 / math.sqrt(Dh) if scale is None else scale)
    scores = q @ k.transpose(-2, -1)  # (B, H, Lq, Dh) @ (B, H, Dh, Lk)
    scores = scores + torch.einsum("bhqd,qkd->bhqk", q, a_k)  # q_i . a^K_ij
    weights = _softmax_allowed(scores, mask)  # (B, H, Lq, Lk)
    if dropout_p > 0:
        weights = F.dropout(weights, p=dropout_p)
    out = weights @ v  # (B, H, Lq, Lk) @ (B, H, Lk, Dh) -> (B, H, Lq, Dh)
    out = out + torch.einsum("bhqk,qkd->bhqd", weights, a_v)  # sum_j w_ij a^V_ij
    return out, (weights if need_weights else None)


class RelativeMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` plus Shaw et al.'s relative position tables ``relative_key`` and
    ``relative_value`` (``nn.Embedding`` with weights (2 * max_relative_position + 1, d_head)).

    Same arguments and forward as ``MultiHeadAttention`` (masks, valid_lens, is_causal,
    head_mask, GQA, kdim/vdim); its attention function is ``relative_attention``
    (``attn_implementation = "relative"``), which always takes the explicit path. With both
    tables at zero it computes exactly what ``MultiHeadAttention`` does.
    """

    attn_implementation = AttentionName("relative")

    def __init__(self, d_model, num_heads, *, max_relative_position=16, **kwargs):
        max_relative_position = _checks.check_int("max_relative_position", max_relative_position,
                                                  minimum=0)
        super().__init__(d_model, num_heads, **kwargs)
        self.max_relative_position = max_relative_position
        w = self.W_q.weight
        kw = {"device": w.device, "dtype": w.dtype}
        self.relative_key = nn.Embedding(2 * max_relative_position + 1, self.d_head, **kw)
        self.relative_value = nn.Embedding(2 * max_relative_position + 1, self.d_head, **kw)
        nn.init.normal_(self.relative_key.weight, std=0.02)
        nn.init.normal_(self.relative_value.weight, std=0.02)

    def forward(self, *args, cache=None, **kwargs):
        """As ``MultiHeadAttention.forward``, without ``cache`` (the relative distances assume
        query i is at position i, which a cache's offset would break)."""
        if cache is not None:
            raise ValueError("RelativeMultiHeadAttention does not support cache=; got a "
                             f"{type(cache).__name__} (use MultiHeadAttention for decoding)")
        return super().forward(*args, **kwargs)

    @classmethod
    def from_torch(cls, module, *, max_relative_position=16):
        """The same function as a ``batch_first`` ``torch.nn.MultiheadAttention``: its weights
        copied as in ``MultiHeadAttention.from_torch``, and both relative tables set to **zero**
        (so the layer computes exactly what the torch module computes, a starting point from
        which training can learn the tables; random tables would change the function)."""
        layer = super().from_torch(module, max_relative_position=max_relative_position)
        with torch.no_grad():
            layer.relative_key.weight.zero_()
            layer.relative_value.weight.zero_()
        return layer

    def extra_repr(self):
        return super().extra_repr() + f", max_relative_position={self.max_relative_position}"

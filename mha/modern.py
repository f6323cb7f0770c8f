"""What 2024-2026 models changed in the attention layer: the pieces behind the
options of the layer's one forward pass (``window``, ``sinks``; ``qk_norm`` and
``gate`` need nothing here; ``RotaryMultiHeadAttention`` switches them on).

Shape legend: B batch, H query heads, Hkv key/value heads, Lq/Lk query/key lengths, Dh d_head
(see ``mha.functional``).

- A sliding window of ``w`` (Mistral; Gemma 3's and gpt-oss's local layers): the query at
  absolute position i sees the keys at positions j with ``i - w < j <= i``, its last ``w``
  positions counting itself (Hugging Face's ``sliding_window=w``). ``window_mask`` builds it;
  ``window_attention`` runs the fused kernel block by block of queries over only the keys each
  block's window reaches, so the cost grows as L * w rather than L * L;
  ``window_attend`` runs any attention function of ``mha.attention_functions``
  within that window.
- Attention sinks (gpt-oss): one learned logit ``s_h`` per head joins every row's softmax and is
  then dropped, so a row's weights sum to ``1 / (1 + exp(s_h - logsumexp(scores)))`` < 1:
  a head can put weight "nowhere" instead of on some key. ``sink_attention`` is the explicit
  formula; ``sink_fused_attention`` has PyTorch's fused kernel compute it, with one extra key.
  Together they are the attention function ``"sinks"`` (``sinks``).
"""

import math

import torch
import torch.nn.functional as F

from . import _checks
from .attention_functions import register, repeat_kv, sdpa
from .functional import _softmax_allowed

__all__ = ["check_window", "sink_attention", "sink_fused_attention", "sinks",
           "window_attend", "window_attention", "window_mask"]


def check_window(window):
    """``window``: None or an int >= 1 (the number of positions a query sees, itself included)."""
    return None if window is None else _checks.check_positive_int("window", window)


def window_mask(num_queries, num_positions, window, *, start=0, device=None):
    """bool (Lq, num_positions - start), True = may attend: the last ``num_queries`` of
    ``num_positions`` positions are the queries, query at position i sees keys j with
    i - window < j <= i; columns are the key positions start .. num_positions - 1."""
    i = torch.arange(num_positions - num_queries, num_positions, device=device)[:, None]  # (Lq, 1)
    j = torch.arange(start, num_positions, device=device)[None, :]  # (1, Lk)
    return (j <= i) & (j > i - window)  # (Lq, Lk)


def window_attention(attend, q, k, v, window, *, past=0, start=0, allowed=None, chunk=None):
    """Sliding-window attention block by block of queries, so that the work grows as
    Lq * (chunk + window), not Lq * Lk: each block of ``chunk`` queries (default
    max(window, 128)) sees only the keys its window reaches, with its own small band mask.

    q (B, H, Lq, Dh): the tokens at positions past .. past + Lq - 1; k, v (B, Hkv, Lk, Dh): the
    positions start .. past + Lq - 1. ``allowed`` (bool, broadcastable to (B, H, Lq, Lk), or
    None): an extra mask, sliced to each block. ``attend(q, k, v, mask) -> output`` runs one
    block (SDPA, with or without sinks). Returns (B, H, Lq, Dh).
    """
    Lq = q.size(-2)
    total = past + Lq
    chunk = max(window, 128) if chunk is None else chunk
    outs = []
    for a in range(0, Lq, chunk):
        b = min(a + chunk, Lq)  # queries a .. b-1, at positions past + a .. past + b - 1
        first = max(past + a - window + 1, start)  # the first key position a query here sees
        last = total - (Lq - b)  # one past the last query's position
        mask = window_mask(b - a, last, window, start=first, device=q.device)  # (b-a, last-first)
        keys = slice(first - start, last - start)
        if allowed is not None:
            rows = slice(a, b) if allowed.size(-2) != 1 else slice(None)
            cols = keys if allowed.size(-1) != 1 else slice(None)
            mask = allowed[..., rows, cols] & mask
        outs.append(attend(q[..., a:b, :], k[..., keys, :], v[..., keys, :], mask))
    return outs[0] if len(outs) == 1 else torch.cat(outs, dim=-2)  # (B, H, Lq, Dh)


def window_attend(attend, q, k, v, window, *, past=0, start=0, allowed=None,
                  need_weights=False):
    """Attention within a causal window of ``window`` positions: q (B, H, Lq, Dh)
    at positions past .. past + Lq - 1, k and v (B, Hkv, Lk, Dh) at positions
    start .. past + Lq - 1; ``allowed``: the caller's mask over those keys, or
    None. ``attend(q, k, v, mask, is_causal, need_weights) -> (output,
    weights)`` is the layer's attention function. Returns (B, H, Lq, Dh) and
    the weights (B, H, Lq, Lk) or None.

    The fused path runs with ``is_causal`` while the window reaches back past
    the first token, and otherwise block by block (``window_attention``); the
    weights need one band mask over all the keys.
    """
    Lq = q.size(-2)
    total = past + Lq
    if allowed is None and total == Lq <= window:  # the window reaches back
        return attend(q, k, v, None, True, need_weights)  # past token 0
    if need_weights:  # the weights (Lq, Lk) are asked for: one band mask
        band = window_mask(Lq, total, window, start=start, device=q.device)
        mask = band if allowed is None else allowed & band  # (.., Lq, Lk)
        return attend(q, k, v, mask, False, True)

    def block(q, k, v, mask):
        return attend(q, k, v, mask, False, False)[0]

    out = window_attention(block, q, k, v, window, past=past, start=start,
                           allowed=allowed)
    return out, None  # (B, H, Lq, Dh)


def _with_sink_column(allowed):
    """bool (..., Lq, Lk) -> (..., Lq, Lk + 1): the sink (last column) is always allowed."""
    return torch.cat([allowed, allowed.new_ones(*allowed.shape[:-1], 1)], dim=-1)


def sink_attention(q, k, v, sinks, allowed=None, scale=1.0, dropout_p=0.0):
    """softmax([q k^T * scale | s_h]) without its last column, times v: the explicit path.

    q (B, H, Lq, Dh), k and v (B, Hkv, Lk, Dh), sinks (H,), allowed bool broadcastable to
    (B, H, Lq, Lk) or None. Returns output (B, H, Lq, Dh) and weights (B, H, Lq, Lk), whose rows
    sum to less than 1 (a row with no allowed key: all zeros).
    """
    B, H, Lq, _ = q.shape
    k, v = repeat_kv(k, H), repeat_kv(v, H)  # (B, Hkv, Lk, Dh) -> (B, H, Lk, Dh)
    scores = (q * scale) @ k.transpose(-2, -1)  # (B, H, Lq, Dh) @ (B, H, Dh, Lk) -> (B, H, Lq, Lk)
    sink = sinks.to(scores.dtype).view(1, H, 1, 1).expand(B, H, Lq, 1)  # (H,) -> (B, H, Lq, 1)
    scores = torch.cat([scores, sink], dim=-1)  # (B, H, Lq, Lk + 1)
    if allowed is not None:
        allowed = _with_sink_column(allowed)  # the sink column is never masked
    weights = _softmax_allowed(scores, allowed)[..., :-1]  # (B, H, Lq, Lk): the sink dropped
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ v, weights  # (B, H, Lq, Lk) @ (B, H, Lk, Dh) -> (B, H, Lq, Dh)


def sink_fused_attention(q, k, v, sinks, allowed=None, causal=False, scale=1.0, dropout_p=0.0):
    """``sink_attention``'s output through ``F.scaled_dot_product_attention``, never forming the
    (Lq, Lk) weights.

    The trick: one extra key, always allowed, whose value is zero and whose score is the sink.
    Every query gets one more feature holding s_h / scale, every key a 0 there, and the extra key
    is 0 everywhere but a 1 there: its score is (s_h / scale) * 1 * scale = s_h, the real scores
    are unchanged, and its zero value adds nothing to the output. The extra key is shared by all
    heads (the per-head logit sits in the queries), so grouped-query attention still shares its
    keys through ``enable_gqa`` (whether the kernel then copies them is PyTorch's choice: the
    CPU flash kernel does not; on CUDA, with this bool mask, the math fallback does). Features are padded with zeros to a multiple of 8 (GPU kernels like
    that), values too (a kernel wants one feature size), and the output sliced back. The mask
    gains an always-True column, so SDPA runs with a bool mask rather than ``is_causal``. Extra
    memory: O(Lk Dh), never O(Lq Lk) per head.

    q (B, H, Lq, Dh), k and v (B, Hkv, Lk, Dh), sinks (H,), allowed bool broadcastable to
    (B, H, Lq, Lk) or None, causal: query i sees keys 0 .. i + Lk - Lq. Returns (B, H, Lq, Dh).
    """
    (B, H, Lq, Dh), (Hkv, Lk) = q.shape, k.shape[1:3]
    pad = 8 - Dh % 8  # >= 1 extra feature
    sink = (sinks.to(q.dtype) / scale).view(1, H, 1, 1).expand(B, H, Lq, 1)  # (B, H, Lq, 1)
    q = F.pad(torch.cat([q, sink], dim=-1), (0, pad - 1))  # (B, H, Lq, Dh + pad)
    sink_key = k.new_zeros(B, Hkv, 1, Dh + pad)
    sink_key[..., Dh] = 1.0
    k = torch.cat([F.pad(k, (0, pad)), sink_key], dim=-2)  # (B, Hkv, Lk + 1, Dh + pad)
    # the sink's value is zero; values padded too, since kernels (the CPU flash one among them)
    # want one feature size for queries, keys and values
    v = F.pad(v, (0, pad, 0, 1))  # (B, Hkv, Lk + 1, Dh + pad)
    if causal:
        allowed = torch.ones(Lq, Lk, dtype=torch.bool, device=q.device).tril(Lk - Lq)
    mask = None if allowed is None else _with_sink_column(allowed)  # (..., Lq, Lk + 1)
    # the package's fused wrapper (mha.attention_functions): (B, H, Lq, Dh + pad)
    out = sdpa(q, k, v, mask, scale=scale, dropout_p=dropout_p)
    return out[..., :Dh]


@register("sinks")
def sinks(module, q, k, v, mask=None, *, is_causal=False, scale=None,
          dropout_p=0.0, need_weights=False):
    """The attention function of a layer with sinks (``module.sinks``, (H,)):
    ``sink_fused_attention``, or ``sink_attention`` when the weights are asked
    for. The sink's key rules out SDPA's ``is_causal``: causal calls run in
    blocks of 128 queries over the keys up to their last, which skips the
    masked upper half of the triangle."""
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    Lq, Lk = q.size(-2), k.size(-2)
    if need_weights:
        if is_causal:  # bottom-right aligned, as the fused path's blocks
            ones = torch.ones(Lq, Lk, dtype=torch.bool, device=q.device)
            mask = ones.tril(Lk - Lq)  # (Lq, Lk)
        return sink_attention(q, k, v, module.sinks, mask, scale, dropout_p)

    def attend(q, k, v, mask):
        return sink_fused_attention(q, k, v, module.sinks, mask, False, scale,
                                    dropout_p)

    if is_causal:
        out = window_attention(attend, q, k, v, Lk, past=Lk - Lq, chunk=128)
        return out, None
    return attend(q, k, v, mask), None

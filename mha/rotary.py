"""Rotary position embedding (RoPE, Su et al.): positions as rotations of queries and keys.

Shape legend: B batch, H query heads, Hkv key/value heads, L length, Lq/Lk query/key lengths,
Dh d_head (see ``mha.functional``).

Feature pair j of a query or key at position m is rotated by the angle m * theta_j, with
theta_j = base ** (-2j / Dh), j = 0 .. Dh/2 - 1. Read a pair (a, b) as the complex number a + ib:
the rotation multiplies it by exp(i m theta_j), and the dot product of a query at position m with a
key at position n becomes Re sum_j q_j conj(k_j) exp(i (m - n) theta_j): it depends on the two
positions only through their distance m - n.

Two conventions pair the features differently (the same idea, different weights):

- "rotate half" (``interleaved=False``, the default; GPT-NeoX, Hugging Face Llama): pair j is
  features (j, j + Dh/2);
- interleaved (``interleaved=True``; the RoFormer paper, Meta's original Llama code): pair j is
  features (2j, 2j + 1).
"""

import math

import torch
from torch import nn

from . import _checks
from .cache import check_cache_call
from .layer import MultiHeadAttention
from .modern import check_window

__all__ = ["RotaryMultiHeadAttention", "apply_rope", "rope_angles"]


def check_base(base):
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number; got {base!r} ({type(base).__name__})")
    if not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1 (10000.0 in most models); got {base}")


def _check_positions(positions, length, device):
    """``positions`` (None, a sequence of ints or an integer tensor) -> a long tensor (L,)."""
    if positions is None:
        return torch.arange(length, device=device)
    if not isinstance(positions, torch.Tensor):
        if not isinstance(positions, (list, tuple, range)):
            raise TypeError(f"positions must be an integer tensor of shape (L,); got "
                            f"{type(positions).__name__}")
        positions = torch.tensor(list(positions), dtype=torch.long)
    _checks.check_integer_tensor("positions", positions)
    if positions.dim() != 1 or positions.size(0) != length:
        raise ValueError(f"positions must have shape (L,) = ({length},), one position per token "
                         f"of x; got shape {tuple(positions.shape)}")
    return positions.to(device=device, dtype=torch.long)


def rope_angles(positions, d_head, *, base=10000.0, dtype=torch.float32):
    """The rotation angles: positions (L,) -> (L, Dh/2), entry (m, j) = positions[m] * theta_j
    with theta_j = base ** (-2j / Dh)."""
    j = torch.arange(d_head // 2, device=positions.device, dtype=dtype)
    theta = base ** (-2.0 * j / d_head)  # (Dh/2,) from 1 down to about 1 / base
    return positions.to(dtype)[:, None] * theta[None, :]  # (L, 1) * (1, Dh/2) -> (L, Dh/2)


def apply_rope(x, positions=None, *, base=10000.0, interleaved=False):
    """Rotate the feature pairs of ``x`` (..., L, Dh) by their position: pair j of the token at
    position m turns by the angle m * base ** (-2j / Dh).

    ``positions``: integers (L,), default 0 .. L-1 (decoding with a cache continues them).
    Pairs are (j, j + Dh/2) by default ("rotate half"), (2j, 2j + 1) with ``interleaved=True``.
    Returns a tensor of the shape and dtype of ``x``; float16 and bfloat16 inputs are rotated in
    float32 and rounded once at the end. ``Dh`` must be even.
    """
    _checks.check_tensor("x", x)
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor (queries or keys); got dtype {x.dtype}")
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., L, Dh); got shape {tuple(x.shape)}")
    L, Dh = x.shape[-2:]
    if Dh % 2:
        raise ValueError(f"x has d_head = {Dh} features (its last dimension) but rotary "
                         f"embeddings rotate pairs of features: d_head must be even")
    check_base(base)
    positions = _check_positions(positions, L, x.device)
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    angles = rope_angles(positions, Dh, base=base, dtype=work)  # (L, Dh/2)
    cos, sin = angles.cos(), angles.sin()
    y = x.to(work)
    if interleaved:
        a, b = y[..., 0::2], y[..., 1::2]  # (..., L, Dh/2) each: features 2j and 2j + 1
    else:
        a, b = y[..., : Dh // 2], y[..., Dh // 2:]  # features j and j + Dh/2
    # (a + ib) * (cos + i sin) = (a cos - b sin) + i (a sin + b cos)
    ra, rb = a * cos - b * sin, a * sin + b * cos  # (..., L, Dh/2) each
    if interleaved:
        out = torch.stack((ra, rb), dim=-1).flatten(-2)  # (..., L, Dh/2, 2) -> (..., L, Dh)
    else:
        out = torch.cat((ra, rb), dim=-1)  # (..., L, Dh)
    return out.to(x.dtype)


class RotaryMultiHeadAttention(MultiHeadAttention):
    """``MultiHeadAttention`` with rotary position embeddings: every head's queries and keys are
    rotated by ``apply_rope`` after the projections, so the scores depend on the positions only
    through their distance.

    Same arguments and forward as ``MultiHeadAttention`` (masks, valid_lens, is_causal,
    head_mask, GQA), and the same fused path: the layer only adds the ``_position`` step.
    Decoding with a ``KVCache`` continues the positions from ``cache.seq_len``; the cache
    stores the rotated keys.

    Self-attention only: queries and keys from two different sequences (cross-attention) have no
    common position axis, so ``forward`` refuses a ``key`` that is not ``query``; use a
    ``MultiHeadAttention`` there (as encoder-decoder models with rotary positions do).

    What recent models add (all off by default; off, the layer is exactly the one above: same
    parameters, same ``state_dict`` keys, same outputs). They are options of the one forward
    pass of ``MultiHeadAttention``, and combine:

    - ``window=w`` (int >= 1): a causal sliding window (Mistral; Gemma 3's and gpt-oss's local
      layers): the query at position i sees the keys at positions j with i - w < j <= i.
      Implies ``is_causal``. The fused path runs with ``is_causal`` while the window reaches
      back past the first token; otherwise it runs block by block of queries, each block over
      only the keys its window reaches, with a small band mask
      (``mha.modern.window_attend``). A ``KVCache(window=w)`` keeps only the last w
      positions (a plain ``KVCache`` keeps all; the band hides the old ones).
    - ``sinks=True``: a learned logit per head, parameter ``sinks`` (H,), joins every row's
      softmax and is dropped, so the weights sum to less than 1 (gpt-oss). The layer's
      attention function is then ``"sinks"`` (``mha.modern.sinks``): the fused path adds one
      always-allowed key of zero value whose score is the sink
      (``mha.modern.sink_fused_attention``), so it runs with a bool mask (causal calls in blocks
      of 128 queries, which skips the masked upper triangle); the returned weights exclude
      the sink.
    - ``qk_norm=True``: ``q_norm`` and ``k_norm``, each ``nn.RMSNorm(Dh, eps=1e-6)``, normalise
      every head's queries and keys after the projection, before the rotation (Qwen 3, OLMo 2).
    - ``gate=True``: an output gate (Qiu et al. 2025; Qwen3-Next): ``W_g``, an
      ``nn.Linear(d_model, H * Dh)`` (with a bias when ``bias=True``); head h's output is
      multiplied elementwise by ``sigmoid(x @ W_g^T)``'s columns h*Dh:(h+1)*Dh, before ``W_o``.
      ``W_g`` joins the packed query/key/value matmul.

    ``qk_norm`` and ``gate`` keep the fused path as it is. Every option works with the others,
    with ``need_weights``, ``head_mask``, GQA, ``mask``/``valid_lens`` and a ``KVCache``.
    """

    def __init__(self, d_model, num_heads, *, base=10000.0, interleaved=False, window=None,
                 sinks=False, qk_norm=False, gate=False, **kwargs):
        window = check_window(window)
        for name, value in (("sinks", sinks), ("qk_norm", qk_norm), ("gate", gate)):
            _checks.check_bool(name, value)
        super().__init__(d_model, num_heads, **kwargs)
        if self.d_head % 2:
            raise ValueError(f"d_head = d_model / num_heads = {self.d_head} must be even: rotary "
                             f"embeddings rotate pairs of features")
        check_base(base)
        self.base, self.interleaved = float(base), bool(interleaved)
        self.window, self.qk_norm, self.gate = window, qk_norm, gate
        w = self.W_q.weight
        kw = {"device": w.device, "dtype": w.dtype}
        if sinks:
            self.sinks = nn.Parameter(torch.zeros(num_heads, **kw))  # (H,)
            self.attn_implementation = "sinks"
        if qk_norm:
            self.q_norm = nn.RMSNorm(self.d_head, eps=1e-6, **kw)
            self.k_norm = nn.RMSNorm(self.d_head, eps=1e-6, **kw)
        if gate:
            self.W_g = nn.Linear(d_model, num_heads * self.d_head,
                                 bias=self.W_q.bias is not None, **kw)

    def forward(self, query, key=None, value=None, *, mask=None, valid_lens=None,
                is_causal=False, need_weights=False, head_mask=None, cache=None):
        """As ``MultiHeadAttention.forward``; ``key`` and ``value``, when given, must be ``query``
        itself (``value`` may differ only with every option off). With ``window``,
        ``is_causal`` is implied; with a cache, ``mask``/``valid_lens`` describe every position
        seen (``cache.seq_len`` + Lq keys), and the returned weights cover the keys the cache
        holds."""
        if key is not None and key is not query:
            raise ValueError("RotaryMultiHeadAttention is for self-attention: key must be None "
                             "or query itself (rotary positions compare positions within one "
                             "sequence); use mha.MultiHeadAttention for cross-attention")
        if cache is not None:
            check_cache_call(cache, query, key, value, window=self.window)
        options = (self.window is not None or self.sinks is not None or self.qk_norm
                   or self.gate)
        if options and value is not None and value is not query:
            raise ValueError("RotaryMultiHeadAttention with window, sinks, qk_norm or gate is for "
                             "self-attention: value must be None or query itself")
        return super().forward(query, key, value, mask=mask, valid_lens=valid_lens,
                               is_causal=is_causal, need_weights=need_weights,
                               head_mask=head_mask, cache=cache)

    def _position(self, q, k, offset):
        """Rotate q (B, H, Lq, Dh) and k (B, Hkv, Lk, Dh) at positions offset, offset + 1, ..."""
        kw = {"base": self.base, "interleaved": self.interleaved}
        q_pos = torch.arange(offset, offset + q.size(-2), device=q.device)  # (Lq,)
        k_pos = torch.arange(offset, offset + k.size(-2), device=k.device)  # (Lk,)
        return apply_rope(q, q_pos, **kw), apply_rope(k, k_pos, **kw)

    def extra_repr(self):
        text = super().extra_repr() + f", base={self.base}, interleaved={self.interleaved}"
        options = {"window": self.window, "sinks": self.sinks is not None,
                   "qk_norm": self.qk_norm, "gate": self.gate}
        return text + "".join(f", {k}={v}" for k, v in options.items() if v not in (None, False))

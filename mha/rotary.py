"""Rotary position embedding (RoPE, Su et al.): positions as rotations of queries and keys.

Shape legend: B batch, H query heads, Hkv key/value heads, L length, Lq/Lk query/key lengths,
Dh d_head, R the rotated features ``rope_dim`` (see ``mha.functional``).

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

Partial rotation (``rope_dim=R`` < Dh; Hugging Face's ``partial_rotary_factor`` = R / Dh:
Qwen3-Next and Qwen3.5 rotate 64 of 256): only the first R features of each head turn, the
others pass through unchanged and carry no position; the frequencies are those of R features,
theta_j = base ** (-2j / R), j = 0 .. R/2 - 1, and the pairs are formed within them. For longer
contexts ``scaling`` changes the frequencies and scales the rotated features
(``mha.rope_scaling``: linear, YaRN, Llama 3).
"""

import torch
from torch import nn

from . import _checks
from .cache import check_cache_call
from .layer import MultiHeadAttention
from .modern import check_window
from .rope_scaling import check_base, check_scaling, rope_frequencies

__all__ = ["RotaryMultiHeadAttention", "apply_rope", "check_temperature_tuning", "rope_angles",
           "temperature_scales"]


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


def _check_rope_dim(rope_dim, d_head, *, allow_zero=False):
    """``rope_dim``: None (all Dh features) or an even int, 0 < rope_dim <= Dh (0 allowed with
    ``allow_zero``: a layer without positions). Returns the int."""
    if rope_dim is None:
        return d_head
    rope_dim = _checks.check_int("rope_dim", rope_dim)
    low = 0 if allow_zero else 1
    if rope_dim % 2 or not low <= rope_dim <= d_head:
        zero = "0 (no positions) or " if allow_zero else ""
        raise ValueError(f"rope_dim must be {zero}an even int with 0 < rope_dim <= d_head = "
                         f"{d_head} (the features of each head that are rotated, in pairs); "
                         f"got {rope_dim}")
    return rope_dim


def rope_angles(positions, d_head, *, base=10000.0, dtype=torch.float32, rope_dim=None,
                scaling=None):
    """The rotation angles: positions (L,) -> (L, R/2), entry (m, j) = positions[m] * theta_j
    with theta_j = base ** (-2j / R), R = ``rope_dim`` (default d_head); with ``scaling``, the
    frequencies of ``mha.rope_scaling.rope_frequencies`` (its attention factor is not an angle:
    ``apply_rope`` applies it)."""
    rope_dim = d_head if rope_dim is None else rope_dim
    theta, _ = rope_frequencies(rope_dim, base=base, scaling=scaling, dtype=dtype,
                                device=positions.device)  # (R/2,) from 1 down to about 1 / base
    return positions.to(dtype)[:, None] * theta[None, :]  # (L, 1) * (1, R/2) -> (L, R/2)


def apply_rope(x, positions=None, *, base=10000.0, interleaved=False, rope_dim=None,
               scaling=None):
    """Rotate the feature pairs of ``x`` (..., L, Dh) by their position: pair j of the token at
    position m turns by the angle m * base ** (-2j / R), R = ``rope_dim``.

    ``positions``: integers (L,), default 0 .. L-1 (decoding with a cache continues them).
    Pairs are (j, j + R/2) by default ("rotate half"), (2j, 2j + 1) with ``interleaved=True``.
    ``rope_dim`` (even, 0 < R <= Dh; default Dh): only the first R features rotate, the other
    Dh - R pass through unchanged (Hugging Face's ``partial_rotary_factor`` = R / Dh).
    ``scaling`` (a dict, see ``mha.rope_scaling``: linear, YaRN, Llama 3): the frequencies of
    ``rope_frequencies``, and the rotated features multiplied by its attention factor (as Hugging
    Face multiplies cos and sin; the features passed through are not).
    Returns a tensor of the shape and dtype of ``x``; float16 and bfloat16 inputs are rotated in
    float32 and rounded once at the end. ``Dh`` must be even when ``rope_dim`` is None.
    """
    _checks.check_tensor("x", x)
    if not x.dtype.is_floating_point:
        raise TypeError(f"x must be a floating-point tensor (queries or keys); got dtype {x.dtype}")
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., L, Dh); got shape {tuple(x.shape)}")
    L, Dh = x.shape[-2:]
    if Dh % 2 and rope_dim is None:
        raise ValueError(f"x has d_head = {Dh} features (its last dimension) but rotary "
                         f"embeddings rotate pairs of features: d_head must be even (or rotate "
                         f"an even number rope_dim < d_head of them)")
    R = _check_rope_dim(rope_dim, Dh)
    check_base(base)
    positions = _check_positions(positions, L, x.device)
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    theta, factor = rope_frequencies(R, base=base, scaling=scaling, dtype=work,
                                     device=x.device)  # (R/2,), a float
    angles = positions.to(work)[:, None] * theta[None, :]  # (L, 1) * (1, R/2) -> (L, R/2)
    cos, sin = angles.cos(), angles.sin()
    if factor != 1.0:  # YaRN: the rotated features scaled, as HF scales its cos and sin
        cos, sin = cos * factor, sin * factor
    y = x.to(work)
    rot, rest = (y, None) if R == Dh else (y[..., :R], y[..., R:])  # (..., L, R), (..., L, Dh-R)
    out = _rotate(rot, cos, sin, interleaved)  # (..., L, R)
    if rest is not None:
        out = torch.cat((out, rest), dim=-1)  # (..., L, R) + (..., L, Dh - R) -> (..., L, Dh)
    return out.to(x.dtype)


def _rotate(y, cos, sin, interleaved):
    """y (..., L, R) rotated by the angles whose cos and sin are (L, R/2)."""
    R = y.size(-1)
    if interleaved:
        a, b = y[..., 0::2], y[..., 1::2]  # (..., L, R/2) each: features 2j and 2j + 1
    else:
        a, b = y[..., : R // 2], y[..., R // 2:]  # features j and j + R/2
    # (a + ib) * (cos + i sin) = (a cos - b sin) + i (a sin + b cos)
    ra, rb = a * cos - b * sin, a * sin + b * cos  # (..., L, R/2) each
    if interleaved:
        return torch.stack((ra, rb), dim=-1).flatten(-2)  # (..., L, R/2, 2) -> (..., L, R)
    return torch.cat((ra, rb), dim=-1)  # (..., L, R)


def check_temperature_tuning(temperature_tuning):
    """None or a pair (floor_scale, attn_scale): floor_scale a number > 0, attn_scale a finite
    number. Returns None or a tuple of two floats."""
    if temperature_tuning is None:
        return None
    if not isinstance(temperature_tuning, (tuple, list)) or len(temperature_tuning) != 2:
        raise TypeError(f"temperature_tuning must be None or a pair (floor_scale, attn_scale), "
                        f"e.g. (8192, 0.1) as in Llama 4; got {_checks._kind(temperature_tuning)}")
    floor_scale = _checks.check_real("temperature_tuning's floor_scale", temperature_tuning[0])
    attn_scale = _checks.check_real("temperature_tuning's attn_scale", temperature_tuning[1])
    if floor_scale <= 0:
        raise ValueError(f"temperature_tuning's floor_scale must be > 0 (8192 in Llama 4); got "
                         f"{floor_scale}")
    return floor_scale, attn_scale


def temperature_scales(positions, floor_scale, attn_scale, *, dtype=torch.float32):
    """Llama 4's attention temperature tuning: positions (L,) -> (L,) factors for the queries,
    1 + attn_scale * ln(1 + floor((p + 1) / floor_scale)): 1 for the first floor_scale - 1
    positions, then growing with the log of the position, which sharpens the softmax of queries
    far into a long context (Nakanishi 2025, "Scalable-Softmax")."""
    p = positions.to(dtype)
    return 1 + attn_scale * torch.log1p(torch.floor((p + 1) / floor_scale))  # (L,)


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
      each head's Dh query and key features on their own, after the projection, before the
      rotation (Qwen 3, Qwen3-Next, Gemma 3; the last two store the gain as 1 + w). OLMo 2 and
      OLMo 3 normalise differently: one RMSNorm over all heads' features together (H * Dh of
      them, a gain per feature), before the split into heads, so one head's scale depends on
      the others'; that is not this option.
    - ``gate=True``: an output gate (Qiu et al. 2025; Qwen3-Next): ``W_g``, an
      ``nn.Linear(d_model, H * Dh)`` (with a bias when ``bias=True``); head h's output is
      multiplied elementwise by ``sigmoid(x @ W_g^T)``'s columns h*Dh:(h+1)*Dh, before ``W_o``.
      ``W_g`` joins the packed query/key/value matmul.
    - ``rope_dim=R`` (even, 0 < R <= Dh): partial rotation: only the first R features of each
      head's queries and keys rotate, with the frequencies of R features; the others carry no
      position (Hugging Face's ``partial_rotary_factor`` = R / Dh; Qwen3-Next and Qwen3.5: 64
      of 256). ``rope_dim=0``: no positions at all (NoPE): the layer is a ``MultiHeadAttention``
      (Llama 4's every fourth layer, SmolLM3's every fourth, Kimi Linear's MLA layers); Dh may
      then be odd, and ``base``, ``interleaved`` do nothing.
    - ``scaling`` (a dict, ``mha.rope_scaling``: ``"linear"``, ``"yarn"``, ``"llama3"``):
      the frequencies for a context longer than the trained one, given to ``apply_rope``; with
      YaRN the rotated features are also multiplied by its attention factor.
    - ``temperature_tuning=(floor_scale, attn_scale)``: the query at absolute position p is
      multiplied by 1 + attn_scale * ln(1 + floor((p + 1) / floor_scale)) (Llama 4's NoPE
      layers, ``attn_temperature_tuning``: floor_scale 8192, attn_scale 0.1), which sharpens
      the softmax far into a long context. With a cache, p counts from ``cache.seq_len``.

    Different bases per layer (Gemma 3: 10 000 in its sliding layers, 1 000 000 in its global
    ones) need nothing new: each layer has its own ``base``.

    ``qk_norm`` and ``gate`` keep the fused path as it is. Every option works with the others,
    with ``need_weights``, ``head_mask``, GQA, ``mask``/``valid_lens`` and a ``KVCache``.
    """

    def __init__(self, d_model, num_heads, *, base=10000.0, interleaved=False, window=None,
                 sinks=False, qk_norm=False, gate=False, rope_dim=None, scaling=None,
                 temperature_tuning=None, **kwargs):
        window = check_window(window)
        for name, value in (("sinks", sinks), ("qk_norm", qk_norm), ("gate", gate)):
            _checks.check_bool(name, value)
        temperature_tuning = check_temperature_tuning(temperature_tuning)
        super().__init__(d_model, num_heads, **kwargs)
        if self.d_head % 2 and rope_dim is None:
            raise ValueError(f"d_head = d_model / num_heads = {self.d_head} must be even: rotary "
                             f"embeddings rotate pairs of features (or give an even "
                             f"rope_dim < d_head, or rope_dim=0 for none)")
        self.rope_dim = _check_rope_dim(rope_dim, self.d_head, allow_zero=True)
        check_base(base)
        if scaling is not None and self.rope_dim == 0:
            raise ValueError("scaling changes rotary frequencies, but rope_dim=0 rotates "
                             "nothing (a layer without positions): leave scaling None")
        check_scaling(scaling)
        self.scaling = None if scaling is None else dict(scaling)
        self.temperature_tuning = temperature_tuning
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
        """Rotate the first ``rope_dim`` features of q (B, H, Lq, Dh) and k (B, Hkv, Lk, Dh) at
        positions offset, offset + 1, ...; with ``temperature_tuning``, scale q by its
        positions' factors."""
        q_pos = torch.arange(offset, offset + q.size(-2), device=q.device)  # (Lq,)
        if self.rope_dim:
            kw = {"base": self.base, "interleaved": self.interleaved, "rope_dim": self.rope_dim,
                  "scaling": self.scaling}
            k_pos = torch.arange(offset, offset + k.size(-2), device=k.device)  # (Lk,)
            q, k = apply_rope(q, q_pos, **kw), apply_rope(k, k_pos, **kw)
        if self.temperature_tuning is not None:
            work = torch.float64 if q.dtype == torch.float64 else torch.float32
            scales = temperature_scales(q_pos, *self.temperature_tuning, dtype=work)  # (Lq,)
            q = (q.to(work) * scales[:, None]).to(q.dtype)  # (B, H, Lq, Dh) * (Lq, 1)
        return q, k

    def extra_repr(self):
        text = super().extra_repr() + f", base={self.base}, interleaved={self.interleaved}"
        options = {"window": self.window, "sinks": self.sinks is not None,
                   "qk_norm": self.qk_norm, "gate": self.gate}
        text += "".join(f", {k}={v}" for k, v in options.items() if v not in (None, False))
        if self.rope_dim != self.d_head:
            text += f", rope_dim={self.rope_dim}"
        for name in ("scaling", "temperature_tuning"):
            if getattr(self, name) is not None:
                text += f", {name}={getattr(self, name)}"
        return text

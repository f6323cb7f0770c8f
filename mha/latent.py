"""Multi-head Latent Attention (MLA; DeepSeek-V2, DeepSeek-V3): cache one small latent per token.

Shape legend: B batch, H heads, Lq new tokens, Lk keys (cached + new), D d_model, R kv_rank,
Dn qk_nope_dim, Dr qk_rope_dim, Dv v_head_dim, Rq q_rank (see ``mha.functional``).

Each token's keys and values for all H heads come from one latent c = RMSNorm(x W_dkv) of R
numbers (R much smaller than 2 H Dh): W_ukv turns it into head h's key features k_nope (Dn) and
its value (Dv). Rotary positions do not commute with that up-projection, so position takes a
separate path: Dr more query features per head and one rotated key k_rope of Dr features, shared
by every head, also from x W_dkv. Head h's score is

    (q_nope . k_nope + q_rope . k_rope) / sqrt(Dn + Dr)

A cache keeps only c and k_rope: R + Dr numbers per token, for all the heads together.

``absorb=True`` never forms the per-head keys and values. With W_uk (H, Dn, R) and W_uv
(H, Dv, R) the two halves of W_ukv, q_nope . (W_uk c) = (W_uk^T q_nope) . c: fold W_uk into the
queries and attend over the latents themselves (one key/value "head" shared by all H, as in
multi-query attention), then apply W_uv to the output, which is a weighted sum of latents.

The attention step is the layer's attention function (``attn_implementation``,
``"sdpa"`` by default; ``mha.attention_functions``), as in
``MultiHeadAttention``.
"""

import math

import torch
from torch import nn

from . import _checks
from .attention_functions import AttentionName, attention_function
from .cache import KVCache
from .functional import _merge_heads
from .masks import layer_mask
from .rotary import apply_rope, check_base

__all__ = ["LatentAttention"]


class LatentAttention(nn.Module):
    """Multi-head Latent Attention (DeepSeek-V2/V3; ``DeepseekV3Attention`` of Hugging Face
    without YaRN). Self-attention over x (B, L, D).

    ``nn.Linear`` attributes: with ``q_rank=None``, ``W_q`` (D -> H (Dn + Dr)); otherwise
    ``W_dq`` (D -> Rq), ``q_norm`` (``nn.RMSNorm(Rq, eps=1e-6)``) and ``W_uq`` (Rq -> H (Dn + Dr)).
    ``W_dkv`` (D -> R + Dr: the latent, then the rotary key shared by every head), ``kv_norm``
    (``nn.RMSNorm(R, eps=1e-6)``, on the latent only), ``W_ukv`` (R -> H (Dn + Dv)) and ``W_o``
    (H Dv -> D). Per head, the query's features are [nope | rope] and ``W_ukv``'s outputs
    [key nope | value], head-major (Hugging Face's layout). ``bias=True`` gives ``W_dq``,
    ``W_dkv`` and ``W_o`` a bias, as DeepSeek's ``attention_bias`` does; ``W_q``, ``W_uq`` and
    ``W_ukv`` never have one.

    ``apply_rope`` (base ``rope_base``, pairs as ``interleaved`` says) rotates the rope parts
    only; scores are scaled by 1 / sqrt(Dn + Dr).

    ``attn_implementation`` (default ``"sdpa"``): its attention function.
    """

    attn_implementation = AttentionName("sdpa")

    def __init__(self, d_model, num_heads, *, kv_rank, qk_nope_dim, qk_rope_dim, v_head_dim,
                 q_rank=None, rope_base=10000.0, interleaved=False, bias=False, device=None,
                 dtype=None):
        super().__init__()
        d_model = _checks.check_positive_int("d_model", d_model)
        num_heads = _checks.check_positive_int("num_heads", num_heads)
        kv_rank = _checks.check_positive_int("kv_rank", kv_rank)
        qk_nope_dim = _checks.check_positive_int("qk_nope_dim", qk_nope_dim)
        qk_rope_dim = _checks.check_positive_int("qk_rope_dim", qk_rope_dim)
        v_head_dim = _checks.check_positive_int("v_head_dim", v_head_dim)
        if qk_rope_dim % 2:
            raise ValueError(f"qk_rope_dim ({qk_rope_dim}) must be even: rotary embeddings "
                             f"rotate pairs of features")
        if q_rank is not None:
            q_rank = _checks.check_positive_int("q_rank", q_rank)
        check_base(rope_base)
        for name, value in (("interleaved", interleaved), ("bias", bias)):
            _checks.check_bool(name, value)
        _checks.check_device_arg("device", device)
        _checks.check_dtype_arg("dtype", dtype)
        self.d_model, self.num_heads = d_model, num_heads
        self.kv_rank, self.q_rank, self.v_head_dim = kv_rank, q_rank, v_head_dim
        self.qk_nope_dim, self.qk_rope_dim = qk_nope_dim, qk_rope_dim
        self.rope_base, self.interleaved = float(rope_base), interleaved
        kw = {"device": device, "dtype": dtype}
        H, Dq = num_heads, qk_nope_dim + qk_rope_dim
        if q_rank is None:
            self.W_q = nn.Linear(d_model, H * Dq, bias=False, **kw)
        else:
            self.W_dq = nn.Linear(d_model, q_rank, bias=bias, **kw)
            self.q_norm = nn.RMSNorm(q_rank, eps=1e-6, **kw)
            self.W_uq = nn.Linear(q_rank, H * Dq, bias=False, **kw)
        self.W_dkv = nn.Linear(d_model, kv_rank + qk_rope_dim, bias=bias, **kw)
        self.kv_norm = nn.RMSNorm(kv_rank, eps=1e-6, **kw)
        self.W_ukv = nn.Linear(kv_rank, H * (qk_nope_dim + v_head_dim), bias=False, **kw)
        self.W_o = nn.Linear(H * v_head_dim, d_model, bias=bias, **kw)

    def forward(self, x, *, mask=None, is_causal=False, need_weights=False, cache=None,
                absorb=False):
        """x (B, Lq, D); mask bool broadcastable to (B, H, Lq, Lk), True = may attend. Returns
        output (B, Lq, D) and weights (B, H, Lq, Lk) with ``need_weights=True`` (else None).

        ``cache`` (a ``mha.KVCache``): the new tokens' normalised latents (its ``keys``,
        (B, 1, L, R)) and rotated shared keys (its ``values``, (B, 1, L, Dr)) are appended, and
        the queries attend to all P cached positions plus the Lq new ones (Lk = P + Lq), with
        ``is_causal`` aligned at the bottom right, as in ``MultiHeadAttention``.
        ``absorb=True``: the same output without per-head keys or values (module docstring).
        """
        past = self._check_forward(x, mask, is_causal, need_weights, cache, absorb)
        (B, Lq, _), H = x.shape, self.num_heads
        Dn, Dr, R = self.qk_nope_dim, self.qk_rope_dim, self.kv_rank
        allowed, causal = layer_mask(mask, None, is_causal, (B, H, Lq, past + Lq),
                                     x.device, cached=cache is not None)
        if self.q_rank is None:
            q = self.W_q(x)  # (B, Lq, D) -> (B, Lq, H*(Dn+Dr))
        else:
            q = self.W_uq(self.q_norm(self.W_dq(x)))  # (B, Lq, D) -> (B, Lq, Rq) -> ...
        q = q.view(B, Lq, H, Dn + Dr).transpose(1, 2)  # -> (B, H, Lq, Dn+Dr)
        q_nope, q_rope = q.split([Dn, Dr], dim=-1)  # (B, H, Lq, Dn), (B, H, Lq, Dr)
        latent, k_rope = self.W_dkv(x).split([R, Dr], dim=-1)  # (B, Lq, R), (B, Lq, Dr)
        latent = self.kv_norm(latent)[:, None]  # (B, 1, Lq, R): one "head" for all
        positions = torch.arange(past, past + Lq, device=x.device)  # (Lq,)
        rope = {"base": self.rope_base, "interleaved": self.interleaved}
        q_rope = apply_rope(q_rope, positions, **rope)
        k_rope = apply_rope(k_rope[:, None], positions, **rope)  # (B, 1, Lq, Dr)
        if cache is not None:  # (B, 1, P + Lq, R) and (B, 1, P + Lq, Dr)
            latent, k_rope = cache.append(latent, k_rope)
        scale = 1 / math.sqrt(Dn + Dr)
        if absorb:
            out, weights = self._attend_absorbed(q_nope, q_rope, latent, k_rope, allowed,
                                                 causal, scale, need_weights)
        else:
            out, weights = self._attend_expanded(q_nope, q_rope, latent, k_rope, allowed,
                                                 causal, scale, need_weights)
        return self.W_o(_merge_heads(out)), weights  # (B, H, Lq, Dv) -> (B, Lq, D)

    def _up_weights(self):
        """W_ukv's weight (H (Dn + Dv), R) as W_uk (H, Dn, R) and W_uv (H, Dv, R)."""
        H, Dn, Dv = self.num_heads, self.qk_nope_dim, self.v_head_dim
        w = self.W_ukv.weight.view(H, Dn + Dv, self.kv_rank)
        return w[:, :Dn], w[:, Dn:]

    def _attend_expanded(self, q_nope, q_rope, latent, k_rope, allowed, causal, scale,
                         need_weights):
        """Form every head's keys and values from the latents, then attention as usual."""
        B, H, Lk = latent.size(0), self.num_heads, latent.size(-2)
        Dn, Dv = self.qk_nope_dim, self.v_head_dim
        kv = self.W_ukv(latent[:, 0])  # (B, Lk, R) -> (B, Lk, H*(Dn+Dv))
        kv = kv.view(B, Lk, H, Dn + Dv).transpose(1, 2)  # -> (B, H, Lk, Dn+Dv)
        k_nope, v = kv.split([Dn, Dv], dim=-1)  # (B, H, Lk, Dn), (B, H, Lk, Dv)
        k = torch.cat([k_nope, k_rope.expand(-1, H, -1, -1)], dim=-1)  # (B, H, Lk, Dn+Dr)
        q = torch.cat([q_nope, q_rope], dim=-1)  # (B, H, Lq, Dn+Dr)
        return self._attention(q, k, v, allowed, causal, scale, need_weights)

    def _attend_absorbed(self, q_nope, q_rope, latent, k_rope, allowed, causal, scale,
                         need_weights):
        """Attention over the latents: W_uk folded into the queries, W_uv into the output."""
        w_uk, w_uv = self._up_weights()  # (H, Dn, R), (H, Dv, R)
        # q_nope . (W_uk c) = (W_uk^T q_nope) . c: (B, H, Lq, Dn) x (H, Dn, R) -> (B, H, Lq, R)
        q_latent = torch.einsum("bhqn,hnr->bhqr", q_nope, w_uk)
        q = torch.cat([q_latent, q_rope], dim=-1)  # (B, H, Lq, R+Dr)
        k = torch.cat([latent, k_rope], dim=-1)  # (B, 1, Lk, R+Dr): shared by every head
        out, weights = self._attention(q, k, latent, allowed, causal, scale, need_weights)
        # sum_j w_j (W_uv c_j) = W_uv (sum_j w_j c_j): (B, H, Lq, R) x (H, Dv, R) -> (B, H, Lq, Dv)
        return torch.einsum("bhqr,hvr->bhqv", out, w_uv), weights

    def _attention(self, q, k, v, allowed, causal, scale, need_weights):
        """q (B, H, Lq, Dk), k (B, 1 or H, Lk, Dk), v (B, 1 or H, Lk, Dv)
        -> (B, H, Lq, Dv) and the weights (B, H, Lq, Lk) or None, by the
        layer's attention function."""
        H = q.size(1)
        # one key/value "head" for all: broadcast, a view (no copies)
        k = k.expand(-1, H, -1, -1)  # (B, 1 or H, Lk, Dk) -> (B, H, Lk, Dk)
        v = v.expand(-1, H, -1, -1)  # (B, 1 or H, Lk, Dv) -> (B, H, Lk, Dv)
        attention = attention_function(self.attn_implementation)
        return attention(self, q, k, v, allowed, is_causal=causal, scale=scale,
                         need_weights=need_weights)

    def _check_forward(self, x, mask, is_causal, need_weights, cache, absorb):
        """Check forward's arguments; returns the number of cached positions P."""
        weight = self.W_dkv.weight
        _checks.check_module_input("x", x, weight, self.d_model, "d_model")
        for name, value in (("is_causal", is_causal), ("need_weights", need_weights),
                            ("absorb", absorb)):
            _checks.check_bool(name, value)
        past = 0
        if cache is not None:
            if not isinstance(cache, KVCache):
                raise TypeError(f"cache must be a mha.KVCache; got {type(cache).__name__}")
            if cache.window is not None:
                raise ValueError(f"LatentAttention needs every cached position: cache must be a "
                                 f"KVCache() without a window; got window={cache.window}")
            past = cache.seq_len
        if mask is not None:
            B, Lq = x.shape[:2]
            _checks.check_layer_mask(mask, (B, self.num_heads, Lq, past + Lq), x.device)
        return past

    def extra_repr(self):
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, kv_rank={self.kv_rank}, "
                f"q_rank={self.q_rank}, qk_nope_dim={self.qk_nope_dim}, "
                f"qk_rope_dim={self.qk_rope_dim}, v_head_dim={self.v_head_dim}, "
                f"rope_base={self.rope_base}, interleaved={self.interleaved}")

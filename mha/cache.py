"""The key/value cache of incremental decoding.

Shape legend: B batch, H query heads, Hkv key/value heads, L cached positions, Lk new positions,
Dh d_head (see ``mha.functional``).

A decoder generates one token at a time. Token t's key and value, once projected, never change
(a causal layer's position t sees only positions <= t), so a layer can keep them and, at the next
step, project only the new token: its query then attends to every cached key. ``KVCache`` holds
those keys and values for one layer, after projection (and after the rotary rotation, for a
layer that rotates), as ``(B, Hkv, L, Dh)`` tensors: with grouped-query attention it holds the
``num_kv_heads`` shared heads, never copies for the query heads.

    cache = mha.KVCache()
    out, _ = layer(prompt, is_causal=True, cache=cache)    # prefill: (B, P, D)
    out, _ = layer(next_token, is_causal=True, cache=cache)  # one step: (B, 1, D)
"""

import torch

from . import _checks

__all__ = ["KVCache"]


class KVCache:
    """Keys and values seen so far by one attention layer, ``(B, Hkv, L, Dh)`` each.

    ``keys`` and ``values`` are ``None`` while the cache is empty; ``seq_len`` is L (0 when
    empty); ``nbytes`` the bytes the keys and values take; ``reset()`` empties it.
    ``append(k, v)`` adds new positions and returns the whole cached ``(k, v)``.
    """

    def __init__(self):
        self.keys = None  # (B, Hkv, L, Dh) or None
        self.values = None  # (B, Hkv, L, Dh) or None

    @property
    def seq_len(self):
        """Number of cached positions L (0 when empty)."""
        return 0 if self.keys is None else self.keys.size(-2)

    @property
    def nbytes(self):
        """The bytes that the cached keys and values take, 2 * B * Hkv * L * Dh * (bytes per number)."""
        if self.keys is None:
            return 0
        return self.keys.numel() * self.keys.element_size() + (
            self.values.numel() * self.values.element_size()
        )

    def reset(self):
        """Forget every cached position (start a new sequence)."""
        self.keys = self.values = None

    def append(self, k, v):
        """Add k, v ``(B, Hkv, Lk, Dh)`` after the cached positions.

        Returns the cached keys and values, ``(B, Hkv, L + Lk, Dh)`` each. Raises ``ValueError``
        (``TypeError`` for a wrong type or dtype) when k or v do not match each other or what is
        already cached (batch size, number of heads, d_head, dtype, device).
        """
        check_append(self, k, v)
        if self.keys is None:
            self.keys, self.values = k, v
        else:  # (B, Hkv, L, Dh) + (B, Hkv, Lk, Dh) -> (B, Hkv, L + Lk, Dh)
            self.keys = torch.cat([self.keys, k], dim=-2)
            self.values = torch.cat([self.values, v], dim=-2)
        return self.keys, self.values

    def __repr__(self):
        if self.keys is None:
            return "KVCache(empty)"
        B, Hkv, L, Dh = self.keys.shape
        return (f"KVCache(B={B}, Hkv={Hkv}, seq_len={L}, d_head={Dh}, dtype={self.keys.dtype}, "
                f"device={self.keys.device}, nbytes={self.nbytes})")


def check_append(cache, k, v):
    """k and v must be (B, Hkv, Lk, Dh) tensors of one shape, dtype and device, matching the
    cache's batch size, heads, d_head, dtype and device."""
    for name, x in (("k", k), ("v", v)):
        _checks.check_tensor(name, x)
        if x.dim() != 4:
            raise ValueError(
                f"{name} must have shape (B, Hkv, Lk, Dh); got shape {_checks._shape(x)}"
            )
    if k.shape != v.shape or k.dtype != v.dtype or k.device != v.device:
        raise ValueError(
            f"k and v must have the same shape, dtype and device; got k {tuple(k.shape)} "
            f"{k.dtype} on {k.device} and v {tuple(v.shape)} {v.dtype} on {v.device}"
        )
    if cache.keys is None:
        return
    B, Hkv, L, Dh = cache.keys.shape
    for i, (what, expected) in enumerate((("batch size B", B), ("number of key/value heads Hkv",
                                                                 Hkv))):
        if k.size(i) != expected:
            raise ValueError(
                f"the cache holds {L} positions with {what} = {expected}, but the new keys have "
                f"{what} = {k.size(i)} (shape {tuple(k.shape)}); use one KVCache per layer and "
                f"per batch, and call cache.reset() before a new batch"
            )
    if k.size(-1) != Dh:
        raise ValueError(
            f"the cache holds keys with d_head = {Dh}, but the new keys have d_head = "
            f"{k.size(-1)} (shape {tuple(k.shape)}); use one KVCache per layer"
        )
    if k.dtype != cache.keys.dtype:
        raise TypeError(
            f"the cache holds keys of dtype {cache.keys.dtype}, but the new keys are {k.dtype}; "
            f"call cache.reset() after converting the layer with .to(dtype)"
        )
    if k.device != cache.keys.device:
        raise ValueError(
            f"the cache holds keys on device {cache.keys.device}, but the new keys are on "
            f"{k.device}; call cache.reset() after moving the layer with .to(device)"
        )


def check_cache_call(cache, query, key, value):
    """``cache=`` needs a ``KVCache`` and self-attention (key and value left out or ``query``)."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a mha.KVCache; got {type(cache).__name__}")
    for name, x in (("key", key), ("value", value)):
        if x is not None and x is not query:
            raise ValueError(
                f"cache= works for self-attention only: {name} must be None or the query tensor "
                f"itself; got a different {name} tensor (for cross-attention, whose keys and "
                f"values do not grow, project them once and reuse them instead of a cache)"
            )

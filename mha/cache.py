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

``KVCache(window=w)`` is for a layer with a sliding window of ``w`` (``RotaryMultiHeadAttention(
..., window=w)``): no query will ever look further back than ``w`` positions, so the cache keeps
only the last ``w`` (``start`` is the position of the first one it holds) while ``seq_len`` still
counts every position seen, which the rotation needs. ``mha.LatentAttention`` keeps its latents
in a ``KVCache`` too: its "keys" are the normalised latents ``(B, 1, L, kv_rank)`` and its
"values" the rotated shared keys ``(B, 1, L, qk_rope_dim)``; keys and values may differ in their
last dimension.
"""

import torch

from . import _checks

__all__ = ["KVCache"]


class KVCache:
    """Keys and values seen so far by one attention layer, ``(B, Hkv, L, Dh)`` each.

    ``keys`` and ``values`` are ``None`` while the cache is empty; ``seq_len`` is L (0 when
    empty); ``nbytes`` the bytes the keys and values take; ``reset()`` empties it.
    ``append(k, v)`` adds new positions and returns the whole cached ``(k, v)``.

    ``window`` (None or an int >= 1): keep only the last ``window`` positions, for a layer with
    a sliding window of that size or less. ``seq_len`` then counts every position seen, while
    ``keys`` and ``values`` hold the last ``min(seq_len, window)``, from position ``start``.
    """

    def __init__(self, *, window=None):
        self.window = None if window is None else _checks.check_positive_int("window", window)
        self.keys = None  # (B, Hkv, L, Dh) or None
        self.values = None  # (B, Hkv, L, Dh) or None
        self.start = 0  # the position of keys[..., 0, :]: the positions dropped by the window

    @property
    def seq_len(self):
        """Number of positions seen, L (0 when empty); all of them are cached unless ``window``
        dropped the first ``start``."""
        return self.start + (0 if self.keys is None else self.keys.size(-2))

    @property
    def nbytes(self):
        """The bytes that the cached keys and values take, B * Hkv * L * (Dh + Dv) * (bytes per
        number), i.e. 2 * B * Hkv * L * Dh when values have d_head features as keys do."""
        if self.keys is None:
            return 0
        return self.keys.numel() * self.keys.element_size() + (
            self.values.numel() * self.values.element_size()
        )

    def reset(self):
        """Forget every cached position (start a new sequence)."""
        self.keys = self.values = None
        self.start = 0

    def append(self, k, v):
        """Add k, v ``(B, Hkv, Lk, Dh)`` after the cached positions.

        Returns the cached keys and values, ``(B, Hkv, L + Lk, Dh)`` each. Raises ``ValueError``
        (``TypeError`` for a wrong type or dtype) when k or v do not match each other or what is
        already cached (batch size, number of heads, d_head, dtype, device). Values may have
        another feature size than keys, ``(B, Hkv, Lk, Dv)``.

        With a ``window``, the return value is still every position held before the call plus
        the new ones (the new queries need them), but the cache then keeps only the last
        ``window`` of them (and ``start`` moves on by the number dropped).
        """
        check_append(self, k, v)
        if self.keys is None:
            keys, values = k, v
        else:  # (B, Hkv, L, Dh) + (B, Hkv, Lk, Dh) -> (B, Hkv, L + Lk, Dh)
            keys = torch.cat([self.keys, k], dim=-2)
            values = torch.cat([self.values, v], dim=-2)
        self.keys, self.values = keys, values
        drop = 0 if self.window is None else max(keys.size(-2) - self.window, 0)
        if drop:  # keep the last `window` positions (a copy: the dropped ones are freed)
            self.keys = keys[..., drop:, :].clone()
            self.values = values[..., drop:, :].clone()
            self.start += drop
        return keys, values

    def __repr__(self):
        if self.keys is None:
            window = "" if self.window is None else f", window={self.window}"
            return f"KVCache(empty{window})"
        B, Hkv, L, Dh = self.keys.shape
        window = "" if self.window is None else f", window={self.window}, start={self.start}"
        return (f"KVCache(B={B}, Hkv={Hkv}, seq_len={self.seq_len}, d_head={Dh}, "
                f"dtype={self.keys.dtype}, device={self.keys.device}, nbytes={self.nbytes}"
                f"{window})")


def check_append(cache, k, v):
    """k (B, Hkv, Lk, Dh) and v (B, Hkv, Lk, Dv) of one dtype and device, matching the cache's
    batch size, heads, feature sizes, dtype and device."""
    for name, x in (("k", k), ("v", v)):
        _checks.check_tensor(name, x)
        if x.dim() != 4:
            raise ValueError(
                f"{name} must have shape (B, Hkv, Lk, Dh); got shape {_checks._shape(x)}"
            )
    if k.shape[:-1] != v.shape[:-1] or k.dtype != v.dtype or k.device != v.device:
        raise ValueError(
            f"k and v must have the same shape (B, Hkv, Lk) but for their features, the same "
            f"dtype and device; got k {tuple(k.shape)} "
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
    if v.size(-1) != cache.values.size(-1):
        raise ValueError(
            f"the cache holds values with {cache.values.size(-1)} features, but the new values "
            f"have {v.size(-1)} (shape {tuple(v.shape)}); use one KVCache per layer"
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


def check_cache_call(cache, query, key, value, window=None):
    """``cache=`` needs a ``KVCache`` and self-attention (key and value left out or ``query``);
    a ``KVCache(window=w)`` only for a layer whose own ``window`` is at most w."""
    if not isinstance(cache, KVCache):
        raise TypeError(f"cache must be a mha.KVCache; got {type(cache).__name__}")
    if cache.window is not None and (window is None or cache.window < window):
        needs = "every position" if window is None else f"the last {window}"
        raise ValueError(
            f"cache is a KVCache(window={cache.window}), which keeps only the last "
            f"{cache.window} positions, but this layer has window={window} (it needs {needs}): "
            f"use KVCache(), or KVCache(window=w) with w >= the layer's window"
        )
    for name, x in (("key", key), ("value", value)):
        if x is not None and x is not query:
            raise ValueError(
                f"cache= works for self-attention only: {name} must be None or the query tensor "
                f"itself; got a different {name} tensor (for cross-attention, whose keys and "
                f"values do not grow, project them once and reuse them instead of a cache)"
            )

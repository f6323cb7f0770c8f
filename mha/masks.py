"""Attention masks: the causal mask, d2l valid lengths, and conversions between conventions.

Shape legend: B batch, H heads, Lq queries, Lk keys (see ``mha.functional``).

The package's convention is the one of ``torch.nn.functional.scaled_dot_product_attention``:
a bool mask, **True = may attend**. Four conventions are in use in the wild:

=================  ===========================================================================
``"sdpa"``         bool, True = may attend (this package, ``F.scaled_dot_product_attention``)
``"nn_mha"``       bool, True = blocked (``attn_mask`` / ``key_padding_mask`` of
                   ``torch.nn.MultiheadAttention``)
``"zero_blocked"`` numbers, ``mask == 0`` = blocked (The Annotated Transformer); produced as
                   an int64 tensor of 1 (may attend) and 0 (blocked)
``"valid_lens"``   d2l: integer lengths, ``(B,)`` (one per sequence) or ``(B, Lq)`` (one per
                   query); key ``j`` is allowed when ``j < valid_len``
=================  ===========================================================================
"""

import torch

from . import _checks

__all__ = ["causal_mask", "combine_masks", "convert_mask", "valid_lens_to_mask"]

CONVENTIONS = ("sdpa", "nn_mha", "zero_blocked", "valid_lens")


def causal_mask(num_queries, num_keys=None, *, device=None):
    """bool (Lq, Lk), True where query i may attend key j, i.e. j <= i.

    Aligned at the top left, like ``is_causal=True`` in ``F.scaled_dot_product_attention``
    (query i sees keys 0..i even when Lk != Lq). ``num_keys`` defaults to ``num_queries``.
    """
    num_queries = _checks.check_positive_int("num_queries", num_queries)
    num_keys = num_queries if num_keys is None else _checks.check_positive_int("num_keys", num_keys)
    return _causal_mask(num_queries, num_keys, _checks.check_device_arg("device", device))


def _causal_mask(num_queries, num_keys, device=None):
    """The triangle of ``causal_mask``, on checked arguments (Lq, Lk >= 0)."""
    ones = torch.ones(num_queries, num_keys, dtype=torch.bool, device=device)
    return ones.tril()  # (Lq, Lk): True where j <= i


def valid_lens_to_mask(valid_lens, num_queries, num_keys, *, batch_size=None):
    """d2l valid lengths -> bool mask (B, Lq, Lk), True = may attend (key j < valid length).

    valid_lens: integers, (B,) or (B, Lq). ``batch_size``, when given, is checked against B.
    """
    num_queries = _checks.check_positive_int("num_queries", num_queries)
    num_keys = _checks.check_positive_int("num_keys", num_keys)
    if batch_size is not None:
        batch_size = _checks.check_int("batch_size", batch_size, minimum=0)
    _checks.check_valid_lens(valid_lens, batch_size, num_queries)
    return _lens_to_mask(valid_lens, num_queries, num_keys)


def _lens_to_mask(valid_lens, num_queries, num_keys):
    """The comparison of ``valid_lens_to_mask``, on checked arguments."""
    keys = torch.arange(num_keys, device=valid_lens.device)  # (Lk,)
    if valid_lens.dim() == 1:
        valid_lens = valid_lens[:, None].expand(-1, num_queries)  # -> (B, Lq)
    return keys < valid_lens[..., None]  # (Lk,) < (B, Lq, 1) -> (B, Lq, Lk)


def _mask_to_valid_lens(allowed):
    """bool (B, [1, ...], [Lq], Lk), True = may attend -> valid lengths (B,) or (B, Lq)."""
    middle = allowed.shape[1:-1]
    if allowed.dim() < 2 or any(n != 1 for n in middle[:-1]):
        raise ValueError(
            "to convert to valid_lens the mask must have shape (B, Lk), (B, 1, Lk), (B, Lq, Lk) "
            f"or (B, 1, Lq, Lk); got shape {tuple(allowed.shape)}"
        )
    lens = allowed.sum(dim=-1)  # (B, ..., Lq)
    keys = torch.arange(allowed.size(-1), device=allowed.device)  # (Lk,)
    if not torch.equal(keys < lens[..., None], allowed):
        raise ValueError(
            "mask cannot be expressed as valid_lens: valid_lens can only describe masks whose "
            "rows allow a prefix of the keys (0..n-1) and block the rest, and this mask "
            "allows a key after a blocked one"
        )
    lens = lens.reshape(allowed.size(0), -1)  # (B, 1.., Lq) -> (B, Lq)
    return lens[:, 0] if lens.size(1) == 1 else lens  # (B, 1) -> (B,)


def convert_mask(mask, *, source, target, num_keys=None):
    """Convert a mask between the conventions ``"sdpa"``, ``"nn_mha"``, ``"zero_blocked"`` and
    ``"valid_lens"`` (see the module docstring).

    Shapes are kept as they are between the first three. From ``"valid_lens"`` (which needs
    ``num_keys``) the result broadcasts to (B, H, Lq, Lk): (B, 1, 1, Lk) for lengths of shape
    (B,) and (B, 1, Lq, Lk) for lengths of shape (B, Lq). To ``"valid_lens"`` the mask must
    have shape (B, Lk), (B, 1, Lk), (B, Lq, Lk) or (B, 1, Lq, Lk) and allow a prefix of the keys
    in every row (otherwise ValueError); the result is (B,) or (B, Lq) (so lengths of shape
    (B, 1) come back as (B,)).
    """
    for name, value in (("source", source), ("target", target)):
        if not isinstance(value, str) or value not in CONVENTIONS:
            raise ValueError(f"{name} must be one of {CONVENTIONS}; got {value!r}")
    _checks.check_tensor("mask", mask)
    if num_keys is not None:
        num_keys = _checks.check_positive_int("num_keys", num_keys)
    if source == "valid_lens":
        if num_keys is None:
            raise ValueError("num_keys is required to convert from source='valid_lens'")
        lens = mask
        # the caller passed the lengths as `mask`: say so, rather than blame a mask
        _checks.check_integer_tensor(
            "mask (the valid_lens, since source='valid_lens')", lens)
        num_queries = lens.size(1) if lens.dim() == 2 else 1
        allowed = valid_lens_to_mask(lens, num_queries, num_keys)  # (B, Lq, Lk)
        allowed = allowed.unsqueeze(1)  # (B, Lq, Lk) -> (B, 1, Lq, Lk)
    elif source == "zero_blocked":
        if mask.dtype.is_complex:
            raise TypeError(f"a mask with source='zero_blocked' must be real; got dtype {mask.dtype}")
        allowed = mask != 0
    elif mask.dtype != torch.bool:
        raise TypeError(f"a mask with source={source!r} must be bool; got dtype {mask.dtype}")
    else:
        allowed = mask if source == "sdpa" else ~mask
    if source != "valid_lens" and num_keys is not None:
        raise ValueError(f"num_keys is used only with source='valid_lens'; got num_keys={num_keys} "
                         f"with source={source!r}")
    if target == "sdpa":
        return allowed
    if target == "nn_mha":
        return ~allowed
    if target == "zero_blocked":
        return allowed.long()
    return _mask_to_valid_lens(allowed)


def combine_masks(mask, valid_lens, is_causal, shape, device):
    """The one bool mask (True = may attend) a layer uses, or None when nothing is masked.

    mask: bool, broadcastable to shape = (B, H, Lq, Lk); valid_lens: (B,) or (B, Lq);
    is_causal: query i sees keys 0..i. All on ``device``. Returns a mask broadcastable to
    (B, H, Lq, Lk). Lq or Lk may be 0.
    """
    B, _, Lq, Lk = shape
    _checks.check_bool("is_causal", is_causal)
    allowed = None
    if mask is not None:
        _checks.check_bool_mask(mask, shape, "(B, H, Lq, Lk)", device)
        allowed = mask
    if valid_lens is not None:
        _checks.check_valid_lens(valid_lens, B, Lq, device)
        rows = Lq if valid_lens.dim() == 2 else 1  # lengths (B,) need only one row
        lens_mask = _lens_to_mask(valid_lens, rows, Lk)  # (B, Lq or 1, Lk)
        lens_mask = lens_mask.unsqueeze(1)  # (B, Lq or 1, Lk) -> (B, 1, Lq or 1, Lk)
        allowed = lens_mask if allowed is None else allowed & lens_mask
    if is_causal:
        causal = _causal_mask(Lq, Lk, device=device)  # (Lq, Lk)
        allowed = causal if allowed is None else allowed & causal
    return allowed


def layer_mask(mask, valid_lens, is_causal, shape, device, *, cached=False,
               window=None, start=0):
    """(allowed, causal): the mask a layer attends with, and whether SDPA's
    ``is_causal`` flag stands in for it (is_causal alone, Lq == Lk: no mask
    is built). shape = (B, H, Lq, Lk).

    ``cached``: the keys are P cached positions then the Lq new ones
    (Lk = P + Lq), and the causal triangle is aligned at the bottom right:
    query i sees keys 0 .. P + i. Otherwise it is aligned at the top left,
    like ``F.scaled_dot_product_attention`` (query i sees keys 0 .. i).
    ``window`` (an int): the attention applies the causal band itself, so
    only ``mask`` and ``valid_lens`` are combined here; ``start``: the first
    key position a window's cache still holds (the mask's columns from it).
    """
    Lq, Lk = shape[-2:]
    if window is not None:  # causal whatever is_causal says: the band
        allowed = combine_masks(mask, valid_lens, False, shape, device)
        if allowed is not None and start and allowed.size(-1) != 1:
            allowed = allowed[..., start:]  # (..., Lq, Lk - start)
        return allowed, False
    if is_causal is True and cached and Lk > Lq:
        allowed = combine_masks(mask, valid_lens, False, shape, device)
        if Lq == 1:  # one new token: it sees every key, nothing to hide
            return allowed, False
        ones = torch.ones(Lq, Lk, dtype=torch.bool, device=device)
        causal = ones.tril(Lk - Lq)  # (Lq, Lk): query i sees keys 0 .. P + i
        return (causal if allowed is None else allowed & causal), False
    if is_causal is True and mask is None and valid_lens is None and Lq == Lk:
        return None, True
    return combine_masks(mask, valid_lens, is_causal, shape, device), False

"""Attention as plain functions: scaled dot-product attention, masked softmax, head split/merge.

Shape legend (used in every module of the package)
    B   batch size
    H   number of (query) heads; Hkv the number of key/value heads (grouped-query attention)
    Lq  number of queries, Lk number of keys (= number of values)
    L   a sequence length where queries and keys are the same tokens (self-attention)
    D   d_model, the features of the layer's input and output
    Dh  d_head = D / H, the features of one head
    Dk, Dv  the query/key and value features of a bare attention call

Masks are bool with **True = may attend** (the convention of
``torch.nn.functional.scaled_dot_product_attention``); ``mha.masks`` converts the others.
"""

import math

import torch

from . import _checks

__all__ = ["masked_softmax", "merge_heads", "scaled_dot_product_attention", "split_heads"]


def _softmax_allowed(scores, allowed=None, *, in_place=False):
    """Softmax over the last axis of ``scores`` using only the keys where ``allowed`` is True.

    A row with no allowed key gets all-zero weights, never NaN, and finite gradients: such a
    row is first allowed every key (so the softmax is well defined) and zeroed afterwards.
    ``in_place`` (for scores nobody else holds, with autograd off) reuses the scores' memory, as
    PyTorch's own inference kernel does: a fresh (..., Lq, Lk) buffer costs as much as the softmax.
    """
    if allowed is None:
        return torch.softmax(scores, dim=-1, out=scores) if in_place else scores.softmax(dim=-1)
    any_key = allowed.any(dim=-1, keepdim=True)  # (..., Lq, 1): does the row allow any key?
    blocked = ~(allowed | ~any_key)
    if in_place:
        weights = torch.softmax(scores.masked_fill_(blocked, float("-inf")), dim=-1, out=scores)
        return weights.masked_fill_(~allowed, 0.0)
    weights = scores.masked_fill(blocked, float("-inf")).softmax(dim=-1)
    return weights.masked_fill(~allowed, 0.0)


def scaled_dot_product_attention(query, key, value, mask=None, *, dropout_p=0.0, scale=None):
    """softmax(query @ key^T * scale) @ value, with the attention weights returned too.

    query (..., Lq, Dk), key (..., Lk, Dk), value (..., Lk, Dv)
    mask  bool, broadcastable to (..., Lq, Lk), True = may attend
    returns output (..., Lq, Dv) and weights (..., Lq, Lk).

    ``scale`` defaults to 1 / sqrt(Dk). A query with no allowed key gets zero weights and a zero
    output (never NaN). ``dropout_p`` drops weights (always, whatever the mode: a layer passes 0
    in eval mode); like ``torch.nn.MultiheadAttention``, the weights returned are the ones that
    multiplied the values, i.e. after dropout.
    """
    _checks.check_attention_inputs(query, key, value, mask)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = (query * scale) @ key.transpose(-2, -1)  # (..., Lq, Dk) @ (..., Dk, Lk) -> (..., Lq, Lk)
    in_place = not (torch.is_grad_enabled() and scores.requires_grad)  # inference: reuse memory
    weights = _softmax_allowed(scores, mask, in_place=in_place)
    if dropout_p > 0.0:
        weights = torch.nn.functional.dropout(weights, p=dropout_p)
    return weights @ value, weights  # (..., Lq, Lk) @ (..., Lk, Dv) -> (..., Lq, Dv)


def masked_softmax(scores, valid_lens=None):
    """Softmax over the last axis that gives weight 0 to keys at index >= the valid length.

    scores (B, ..., Lq, Lk); valid_lens None, (B,) (one length per sequence) or (B, Lq) (one
    per query), integers, as in d2l. A valid length of 0 gives an all-zero row.
    """
    if valid_lens is None:
        return torch.softmax(scores, dim=-1)
    from .masks import valid_lens_to_mask

    if scores.dim() < 3:
        raise ValueError(
            f"scores must have shape (B, ..., Lq, Lk) when valid_lens is given; "
            f"got shape {tuple(scores.shape)}"
        )
    B, Lq, Lk = scores.size(0), scores.size(-2), scores.size(-1)
    allowed = valid_lens_to_mask(valid_lens, Lq, Lk, batch_size=B)  # (B, Lq, Lk)
    allowed = allowed.view(B, *[1] * (scores.dim() - 3), Lq, Lk)  # (B, Lq, Lk) -> (B, 1.., Lq, Lk)
    return _softmax_allowed(scores, allowed.to(scores.device))


def split_heads(x, num_heads):
    """(B, L, D) -> (B, H, L, Dh): head h gets the feature columns h*Dh:(h+1)*Dh."""
    _checks.check_split(x, num_heads)
    B, L, D = x.shape
    x = x.view(B, L, num_heads, D // num_heads)  # (B, L, D) -> (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, L, H, Dh) -> (B, H, L, Dh)


def merge_heads(x):
    """(B, H, L, Dh) -> (B, L, H * Dh), the inverse of ``split_heads``."""
    if not isinstance(x, torch.Tensor) or x.dim() != 4:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"merge_heads expects x of shape (B, H, L, Dh); got {shape}")
    B, H, L, Dh = x.shape
    return x.transpose(1, 2).reshape(B, L, H * Dh)  # (B, H, L, Dh) -> (B, L, H, Dh) -> (B, L, D)

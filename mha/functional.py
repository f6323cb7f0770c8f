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

Each public function checks its arguments first (``mha._checks``: bad input raises a
``ValueError``/``TypeError`` naming the argument) and then calls a small private function that
does only the maths on checked inputs: ``_attention``, ``_split_heads``, ``_merge_heads``.
Those unchecked functions (and ``_softmax_allowed``) are the package's internal maths: the
layers and ``mha.attention_functions`` call them on inputs they have checked themselves (the
book shows them under these names). The layers' attention step itself, fused or explicit, is
in ``mha.attention_functions``.
"""

import math

import torch

from . import _checks

__all__ = ["masked_softmax", "merge_heads", "scaled_dot_product_attention", "split_heads"]


def _softmax_allowed(scores, allowed=None, *, in_place=False):
    """Softmax over the last axis, using only the keys ``allowed`` (True).

    A row with no allowed key gets all-zero weights, never NaN, and finite
    gradients: such a row is first allowed every key (so the softmax is well
    defined) and zeroed afterwards.
    """
    if in_place:  # scores nobody else holds, no autograd: reuse their memory
        return _softmax_allowed_(scores, allowed)
    if allowed is None:
        return scores.softmax(dim=-1)
    any_key = allowed.any(dim=-1, keepdim=True)  # (..., Lq, 1): any key at all?
    blocked = ~(allowed | ~any_key)  # a row with no allowed key blocks nothing
    weights = scores.masked_fill(blocked, float("-inf")).softmax(dim=-1)
    return weights.masked_fill(~allowed, 0.0)


def _softmax_allowed_(scores, allowed=None):
    """``_softmax_allowed`` written into ``scores``' own memory, as PyTorch's inference kernel
    does: a fresh (..., Lq, Lk) buffer costs as much as the softmax itself."""
    if allowed is None:
        return torch.softmax(scores, dim=-1, out=scores)
    if torch.broadcast_shapes(scores.shape, allowed.shape) != scores.shape:
        return _softmax_allowed(scores, allowed)  # a mask wider than the scores: a new tensor
    any_key = allowed.any(dim=-1, keepdim=True)  # (..., Lq, 1)
    scores = scores.masked_fill_(~(allowed | ~any_key), float("-inf"))
    return torch.softmax(scores, dim=-1, out=scores).masked_fill_(~allowed, 0.0)


def _attention(query, key, value, mask=None, scale=1.0, dropout_p=0.0):
    """softmax(query @ key^T * scale) @ value, and the weights (checked)."""
    # (..., Lq, Dk) @ (..., Dk, Lk) -> (..., Lq, Lk)
    scores = (query * scale) @ key.transpose(-2, -1)
    weights = _softmax_allowed(scores, mask, in_place=not scores.requires_grad)
    if dropout_p > 0.0:
        weights = torch.nn.functional.dropout(weights, p=dropout_p)
    # (..., Lq, Lk) @ (..., Lk, Dv) -> (..., Lq, Dv)
    return weights @ value, weights


def scaled_dot_product_attention(query, key, value, mask=None, *, dropout_p=0.0, scale=None):
    """softmax(query @ key^T * scale) @ value, with the attention weights returned too.

    query (..., Lq, Dk), key (..., Lk, Dk), value (..., Lk, Dv), one dtype and one device;
    batch dimensions (all but the last two) broadcast.
    mask  bool, broadcastable to (..., Lq, Lk), True = may attend
    returns output (..., Lq, Dv) and weights (..., Lq, Lk).

    ``scale`` defaults to 1 / sqrt(Dk). A query with no allowed key gets zero weights and a zero
    output (never NaN). ``dropout_p`` in [0, 1) drops weights (always, whatever the mode: a layer
    passes 0 in eval mode); like ``torch.nn.MultiheadAttention``, the weights returned are the
    ones that multiplied the values, i.e. after dropout. The computation is ``_attention``.
    """
    scale = _checks.check_attention_inputs(query, key, value, mask, dropout_p, scale)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    return _attention(query, key, value, mask, scale, dropout_p)


def masked_softmax(scores, valid_lens=None):
    """Softmax over the last axis that gives weight 0 to keys at index >= the valid length.

    scores (B, ..., Lq, Lk), floating point; valid_lens None, (B,) (one length per sequence) or
    (B, Lq) (one per query), integers on the device of ``scores``, as in d2l. A valid length
    of 0 gives an all-zero row.
    """
    _checks.check_float_tensor("scores", scores)
    if valid_lens is None:
        if scores.dim() == 0:
            raise ValueError("scores must have at least one dimension (the keys); got a 0-D tensor")
        return torch.softmax(scores, dim=-1)
    if scores.dim() < 3:
        raise ValueError(
            f"scores must have shape (B, ..., Lq, Lk) when valid_lens is given; "
            f"got shape {tuple(scores.shape)}"
        )
    B, Lq, Lk = scores.size(0), scores.size(-2), scores.size(-1)
    _checks.check_valid_lens(valid_lens, B, Lq, scores.device)
    from .masks import _lens_to_mask

    allowed = _lens_to_mask(valid_lens, Lq, Lk)  # (B, Lq, Lk)
    allowed = allowed.view(B, *[1] * (scores.dim() - 3), Lq, Lk)  # (B, Lq, Lk) -> (B, 1.., Lq, Lk)
    return _softmax_allowed(scores, allowed)


def split_heads(x, num_heads):
    """(B, L, D) -> (B, H, L, Dh): head h gets the feature columns h*Dh:(h+1)*Dh."""
    num_heads = _checks.check_split(x, num_heads)
    return _split_heads(x, num_heads)


def _split_heads(x, num_heads):
    """The reshape of ``split_heads``, on checked inputs."""
    B, L, D = x.shape
    x = x.view(B, L, num_heads, D // num_heads)  # (B, L, D) -> (B, L, H, Dh)
    return x.transpose(1, 2)  # (B, L, H, Dh) -> (B, H, L, Dh)


def merge_heads(x):
    """(B, H, L, Dh) -> (B, L, H * Dh), the inverse of ``split_heads``."""
    _checks.check_merge(x)
    return _merge_heads(x)


def _merge_heads(x):
    """The reshape of ``merge_heads``, on checked inputs."""
    B, H, L, Dh = x.shape
    x = x.transpose(1, 2)  # (B, H, L, Dh) -> (B, L, H, Dh)
    return x.reshape(B, L, H * Dh)  # (B, L, H, Dh) -> (B, L, D)

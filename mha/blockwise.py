"""Blockwise attention: the online softmax of FlashAttention, written in plain PyTorch.

Shape legend: Lq queries, Lk keys, Bk keys in one block, Dk query/key features, Dv value
features, ``...`` any batch axes (e.g. B, H) (see ``mha.functional``).

The explicit computation builds the (..., Lq, Lk) scores, softmaxes them and multiplies by the
values. ``blockwise_attention`` walks over the keys in blocks of ``block_size`` instead and keeps,
for every query, three running quantities (``online_softmax_step``):

- ``running_max`` m: the largest score seen so far (the softmax's stabiliser),
- ``running_sum`` l: the sum of exp(score - m) over the keys seen so far,
- ``acc``: the sum of exp(score - m) * value over the keys seen so far.

When a block raises the maximum from m to m', the old sums are rescaled by exp(m - m'). After the
last block, acc / l is the softmax-weighted sum of the values: the same output, without ever
holding more than (..., Lq, block_size) scores.
"""

import math

import torch

from . import _checks

__all__ = ["blockwise_attention", "online_softmax_step"]


def online_softmax_step(running_max, running_sum, acc, scores, value):
    """Fold one block of keys into the online-softmax state; returns the new state.

    running_max (..., Lq), running_sum (..., Lq), acc (..., Lq, Dv): the state after the
    blocks so far (before the first block: -inf, 0 and 0);
    scores (..., Lq, Bk): this block's scaled scores, -inf where a key is blocked;
    value (..., Bk, Dv): this block's values.
    A row that has seen no allowed key keeps max -inf, sum 0 and acc 0; an empty block
    (Bk = 0) leaves the state as it is.
    """
    _check_step(running_max, running_sum, acc, scores, value)
    if scores.size(-1) == 0:
        return running_max, running_sum, acc
    # the maximum is only a stabiliser (the result does not depend on it): no gradient through it
    new_max = torch.maximum(running_max, scores.amax(dim=-1)).detach()  # (..., Lq)
    safe_max = new_max.masked_fill(new_max == float("-inf"), 0.0)  # rows with no key yet
    rescale = torch.exp(running_max - safe_max)  # (..., Lq): exp(m - m'), 0 when m = -inf
    p = torch.exp(scores - safe_max[..., None])  # (..., Lq, Bk): 0 where blocked
    running_sum = running_sum * rescale + p.sum(dim=-1)  # (..., Lq)
    acc = acc * rescale[..., None] + p @ value  # (..., Lq, Bk) @ (..., Bk, Dv) -> (..., Lq, Dv)
    return new_max, running_sum, acc


def blockwise_attention(query, key, value, mask=None, *, is_causal=False, block_size=64,
                        scale=None):
    """softmax(query @ key^T * scale) @ value, computed over blocks of keys (online softmax).

    query (..., Lq, Dk), key (..., Lk, Dk), value (..., Lk, Dv) -> output (..., Lq, Dv).
    mask: bool, broadcastable to (..., Lq, Lk), True = may attend.
    is_causal: query i sees keys 0..i, aligned at the top left like ``is_causal=True`` in
    ``torch.nn.functional.scaled_dot_product_attention`` (also when Lq != Lk); combined with
    ``mask`` (both must allow a key) when both are given.
    block_size: keys per block; at most (..., Lq, block_size) scores exist at any time.
    scale defaults to 1 / sqrt(Dk). A query with no allowed key gets a zero output (never NaN).

    float16 and bfloat16 inputs are computed in float32 and the output rounded once (the tests
    hold it within 2e-3 of SDPA in float16 and 1.6e-2 in bfloat16, for outputs of order 1).

    Gradients flow through the loop (autograd), but autograd then keeps every block's weights
    for the backward pass, so training memory is O(Lq * Lk) again: FlashAttention's backward
    pass recomputes them instead. The memory saving holds for the forward pass under
    ``torch.no_grad()``.
    """
    scale = _check_blockwise(query, key, value, mask, is_causal, block_size, scale)
    Lq, Lk = query.size(-2), key.size(-2)
    scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
    work = torch.promote_types(query.dtype, torch.float32)  # float16/bfloat16 -> float32
    batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
    q = query.to(work) * scale  # (..., Lq, Dk)
    running_max = q.new_full((*batch, Lq), float("-inf"))  # (..., Lq)
    running_sum = q.new_zeros((*batch, Lq))  # (..., Lq)
    acc = q.new_zeros((*batch, Lq, value.size(-1)))  # (..., Lq, Dv)
    rows = torch.arange(Lq, device=query.device)[:, None]  # (Lq, 1): query positions
    stop = min(Lk, Lq) if is_causal else Lk  # top-left causal: keys >= Lq are never seen
    for start in range(0, stop, block_size):
        end = min(start + block_size, stop)
        k = key[..., start:end, :].to(work)  # (..., Bk, Dk)
        v = value[..., start:end, :].to(work)  # (..., Bk, Dv)
        scores = q @ k.transpose(-2, -1)  # (..., Lq, Dk) @ (..., Dk, Bk) -> (..., Lq, Bk)
        if mask is not None:  # a mask that broadcasts over the keys (last axis 1) is not sliced
            block = mask if mask.size(-1) == 1 else mask[..., start:end]
            scores = scores.masked_fill(~block.to(scores.device), float("-inf"))
        if is_causal:
            keys = torch.arange(start, end, device=query.device)  # (Bk,)
            scores = scores.masked_fill(keys > rows, float("-inf"))  # (Lq, Bk): key j > query i
        running_max, running_sum, acc = online_softmax_step(running_max, running_sum, acc,
                                                            scores, v)
    denominator = running_sum.masked_fill(running_sum == 0, 1.0)  # no key: acc is 0, output 0
    return (acc / denominator[..., None]).to(query.dtype)  # (..., Lq, Dv)


def _check_step(running_max, running_sum, acc, scores, value):
    """The online-softmax state and one block: floating tensors whose shapes fit together."""
    named = (("running_max", running_max), ("running_sum", running_sum), ("acc", acc),
             ("scores", scores), ("value", value))
    for name, x in named:
        _checks.check_tensor(name, x)
        if not x.dtype.is_floating_point:
            raise TypeError(f"{name} must be a floating-point tensor; got dtype {x.dtype}")
    if scores.dim() < 2 or value.dim() < 2 or acc.dim() < 2:
        raise ValueError(
            f"scores (..., Lq, Bk), value (..., Bk, Dv) and acc (..., Lq, Dv) need two axes each; "
            f"got shapes {tuple(scores.shape)}, {tuple(value.shape)} and {tuple(acc.shape)}"
        )
    Lq, Bk = scores.shape[-2:]
    expected = {"running_max": (Lq,), "running_sum": (Lq,), "value": (Bk,),
                "acc": (Lq, value.size(-1))}
    for name, x in named[:3] + named[4:]:
        tail = tuple(x.shape[-len(expected[name]):]) if name != "value" else (x.size(-2),)
        if tail != expected[name]:
            raise ValueError(
                f"{name} has shape {tuple(x.shape)}, which does not fit scores of shape "
                f"{tuple(scores.shape)} (Lq = {Lq}, Bk = {Bk}): expected running_max and "
                f"running_sum (..., Lq), acc (..., Lq, Dv), value (..., Bk, Dv)"
            )


def _check_blockwise(query, key, value, mask, is_causal, block_size, scale):
    """As for the explicit path (tensors, dtypes, devices, shapes, mask, scale), plus the flags;
    returns the scale as a float or None."""
    scale = _checks.check_attention_inputs(query, key, value, mask, scale=scale)
    _checks.check_bool("is_causal", is_causal)
    _checks.check_positive_int("block_size", block_size)
    return scale

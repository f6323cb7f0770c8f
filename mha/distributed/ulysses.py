"""DeepSpeed-Ulysses: split by position outside attention, by head inside.

Shapes: B batch, H query heads, Hkv key/value heads, L the whole sequence,
Lr = L / world the positions one rank holds, Dh the features of a head.

The ranks hold contiguous blocks of positions, as in ring attention. But
the heads of attention are independent of one another, so one all-to-all
regroups query, key and value by head: afterwards rank r holds every
position of its H / world query heads (``layout.heads_of_rank``) and of the
key/value heads they read, and runs ordinary attention on them, causal over
the whole sequence if asked. A second all-to-all sends each rank's output
rows back to the rank that holds their positions.

With fewer key/value heads than ranks (grouped-query attention, Hkv <
world), each rank needs one key/value head that other ranks need too:
every rank copies its key/value heads up to world before the all-to-all,
so that rank r receives the one head its query heads read
(``layout.kv_heads_of_rank``).
"""

import torch
import torch.distributed as dist

from .. import _checks
from ..attention_functions import sdpa
from . import _traffic
from .layout import kv_heads_of_rank
from .ring import _check_tensors, check_blocks

__all__ = ["ulysses_attention"]


def ulysses_attention(query, key, value, *, is_causal=False, scale=None,
                      group=None):
    """This rank's rows of attention over the sequence the ranks share.

    query (B, H, Lr, Dh), key and value (B, Hkv, Lr, Dh): the contiguous
    block of positions r*Lr .. (r+1)*Lr - 1 on rank r, the same shapes on
    every rank; world must divide H, and divide Hkv or be a multiple of
    it. Returns (B, H, Lr, Dh), this rank's rows of
    ``scaled_dot_product_attention`` on the whole sequence. is_causal: a
    query sees the keys at positions <= its own; scale: 1 / sqrt(Dh) by
    default; group: the process group (default: every rank). Forward pass
    only: the all-to-alls carry no gradient back to the other ranks.
    """
    scale = _check_ulysses(query, key, value, is_causal, scale, group)
    world = dist.get_world_size(group)
    if key.size(1) < world:  # one kv head a rank: copy each world/Hkv times
        copies = world // key.size(1)
        key = key.repeat_interleave(copies, dim=1)  # -> (B, world, Lr, Dh)
        value = value.repeat_interleave(copies, dim=1)
    q = _by_heads(query, group)  # -> (B, H / world, L, Dh)
    k = _by_heads(key, group)  # -> (B, Hkv / world or 1, L, Dh)
    v = _by_heads(value, group)
    # the package's fused attention (GQA: each kv head serves its group)
    out = sdpa(q, k, v, is_causal=is_causal, scale=scale)  # (B, H/world, L, Dh)
    return _by_positions(out, group)  # -> (B, H, Lr, Dh)


def _by_heads(x, group):
    """(B, Hx, Lr, Dh), positions of this rank, all heads ->
    (B, Hx / world, L, Dh), all positions, this rank's heads."""
    world = dist.get_world_size(group)
    B, Hx, Lr, Dh = x.shape
    chunks = x.unflatten(1, (world, Hx // world)).transpose(0, 1)
    # (B, Hx, Lr, Dh) -> (world, B, Hx / world, Lr, Dh): chunk j to rank j
    chunks = chunks.contiguous()
    received = torch.empty_like(chunks)
    _traffic.all_to_all_single(received, chunks, group)
    # received[i]: rank i's positions of our heads
    received = received.permute(1, 2, 0, 3, 4)  # (B, Hx/world, world, Lr, Dh)
    return received.flatten(2, 3)  # -> (B, Hx / world, L, Dh)


def _by_positions(x, group):
    """(B, H / world, L, Dh) -> (B, H, Lr, Dh): the inverse of _by_heads."""
    world = dist.get_world_size(group)
    chunks = x.unflatten(2, (world, x.size(2) // world))
    # (B, Hl, L, Dh) -> (B, Hl, world, Lr, Dh), Hl = H / world
    chunks = chunks.permute(2, 0, 1, 3, 4).contiguous()
    # -> (world, B, Hl, Lr, Dh): chunk j holds rank j's positions
    received = torch.empty_like(chunks)
    _traffic.all_to_all_single(received, chunks, group)
    # received[i]: rank i's heads at our positions
    return received.transpose(0, 1).flatten(1, 2)  # -> (B, H, Lr, Dh)


def _check_ulysses(query, key, value, is_causal, scale, group):
    """The arguments of ``ulysses_attention``, on every rank at once:
    returns the scale (None or a float)."""

    def local():
        if scale is not None:
            _checks.check_real("scale", scale)
        _checks.check_bool("is_causal", is_causal)
        _check_tensors(query, key, value)
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        kv_heads_of_rank(rank, world, query.size(1), key.size(1))

    check_blocks(query, key, value, group, local)
    return None if scale is None else _checks.check_real("scale", scale)

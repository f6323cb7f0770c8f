"""Counting what one rank sends: ``with traffic() as t: ...``.

Every communication of ring and Ulysses attention goes through one small
wrapper below (``send_recv``, ``all_to_all_single``), which adds the bytes
this rank sends to every open ``traffic()`` block at the moment it sends
them: the counts are measured, never estimated from a formula, and the tests
compare them with ``layout.sent_bytes``'s formulas exactly.

Not counted: the few integers that the argument checks gather from every
rank (their shapes), which are not part of the attention's traffic; and
tensor parallelism's all-reduce, which DTensor issues itself (count it with
``CommDebugMode``, as the chapter and the tests do).
"""

import contextlib
from dataclasses import dataclass, field

import torch.distributed as dist

__all__ = ["Traffic", "traffic"]

_open = []  # the records of the traffic() blocks now open, outermost first


@dataclass(eq=False)
class Traffic:
    """What this rank sent, and ring attention's causal work, in one block.

    sent_bytes: bytes sent to other ranks (an all-to-all counts the chunks
        for the other ranks, not the one the rank keeps);
    calls: (operation name, bytes) for every communication, in order;
    blocks_computed, blocks_skipped: ring attention's work, counted in
        (query chunk, key chunk) pairs. A chunk is half of a rank's block
        (L / (2 world) positions: zigzag's chunks; the two halves of a
        contiguous block), so every key/value block that reaches a rank
        brings 2 x 2 chunk pairs. Causal attention computes a pair when
        one of its queries sees one of its keys (with the mask when the
        pair straddles the diagonal) and skips it when every key is in
        every query's future; without a causal mask all are computed.
        These are the units of ``layout.causal_blocks``.
    """

    sent_bytes: int = 0
    calls: list = field(default_factory=list)
    blocks_computed: int = 0
    blocks_skipped: int = 0


@contextlib.contextmanager
def traffic():
    """Count what this rank sends through ``mha.distributed`` in the block.

    ``with traffic() as t: ring_attention(q, k, v)`` then ``t.sent_bytes``,
    ``t.calls``, ``t.blocks_computed``, ``t.blocks_skipped``. Blocks nest:
    an inner block's traffic counts in the outer one too.
    """
    record = Traffic()
    _open.append(record)
    try:
        yield record
    finally:
        _open.remove(record)


def _count(operation, nbytes):
    for record in _open:
        record.sent_bytes += nbytes
        record.calls.append((operation, nbytes))


def count_blocks(computed, skipped):
    """Add ring attention's chunk pairs (computed, skipped) to open blocks."""
    for record in _open:
        record.blocks_computed += computed
        record.blocks_skipped += skipped


def _nbytes(tensor):
    return tensor.numel() * tensor.element_size()


def send_recv(send, dst, recv, src, group=None):
    """Start sending ``send`` to rank ``dst`` and receiving ``recv`` from
    ``src`` (ranks of ``group``); returns the requests to ``wait()`` on."""
    _count("send", _nbytes(send))
    ops = [dist.P2POp(dist.isend, send, _peer(dst, group), group),
           dist.P2POp(dist.irecv, recv, _peer(src, group), group)]
    return dist.batch_isend_irecv(ops)


def _peer(rank, group):
    """A rank of ``group`` as a global rank (what P2POp expects)."""
    if group is None:
        return rank
    return dist.get_global_rank(group, rank)


def all_to_all_single(output, input, group=None):
    """``torch.distributed.all_to_all_single`` in equal chunks: chunk j of
    ``input`` (along dim 0) goes to rank j, chunk i of ``output`` comes
    from rank i. Counts the chunks for the other ranks."""
    world = dist.get_world_size(group)
    _count("all_to_all", _nbytes(input) // world * (world - 1))
    dist.all_to_all_single(output, input, group=group)
    return output

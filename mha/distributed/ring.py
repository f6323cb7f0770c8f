"""Ring attention: context parallelism, the sequence split over the ranks.

Shapes: B batch, H query heads, Hkv key/value heads, L the whole sequence,
Lr = L / world the positions one rank holds, Dh the features of a head.

Each rank holds the queries, keys and values of its own block of positions
(``layout="contiguous"``: rank r holds r*Lr .. (r+1)*Lr - 1; ``"zigzag"``:
``layout.positions_of_rank``). Its queries need every key, so the key/value
blocks travel round the ring: at each step a rank sends the block it holds
to rank r + 1, receives the next from rank r - 1, and meanwhile merges the
block it holds into its queries' running softmax with exactly the online
softmax of chapter 13 (``mha.blockwise.online_softmax_step``). After world
steps every key has passed by and acc / sum is the rank's rows of the full
attention. Only key/value heads travel: grouped-query attention sends less.

Causal attention works in chunks, the two halves of a block (zigzag's two
chunks of L / (2 world)): a (query chunk, key chunk) pair wholly in the
queries' future is skipped, one that straddles the diagonal is masked, the
rest are computed as they are. The contiguous layout gives the last rank
the most work; zigzag gives every rank the same (``layout.causal_blocks``,
counted by ``traffic()``).
"""

import math
from typing import NamedTuple

import torch
import torch.distributed as dist

from .. import _checks
from ..blockwise import online_softmax_step
from . import _traffic
from .layout import LAYOUTS, positions_of_rank

__all__ = ["ring_attention"]


def ring_attention(query, key, value, *, is_causal=False, layout="contiguous",
                   scale=None, group=None):
    """This rank's rows of attention over the sequence that the ranks share.

    query (B, H, Lr, Dh), key and value (B, Hkv, Lr, Dh): this rank's block
    of positions (see ``layout``), the same shapes on every rank; H a
    multiple of Hkv. Returns (B, H, Lr, Dh), this rank's rows of
    ``scaled_dot_product_attention`` on the whole sequence. is_causal: a
    query sees the keys at positions <= its own. scale: 1 / sqrt(Dh) by
    default. group: the process group (default: every rank). float16 and
    bfloat16 blocks travel as they are and are computed in float32.
    Forward pass only: the blocks received carry no gradient back to the
    ranks that sent them.
    """
    scale = _check_ring(query, key, value, is_causal, layout, scale, group)
    world, rank = dist.get_world_size(group), dist.get_rank(group)
    B, H, Lr, Dh = query.shape
    Hkv = key.size(1)
    work = torch.promote_types(query.dtype, torch.float32)
    q = (query.to(work) * scale).unflatten(1, (Hkv, H // Hkv))
    # (B, H, Lr, Dh) -> (B, Hkv, G, Lr, Dh): G query heads share a kv head
    mine = _chunks(rank, world, Lr, layout)
    states = [_start(q[..., c.start:c.stop, :]) for c in mine]
    kv = torch.stack((key, value))  # (2, B, Hkv, Lr, Dh): what travels
    for step in range(world):
        source = (rank - step) % world  # the rank whose block kv is
        if step < world - 1:  # pass kv on while computing with it
            incoming = torch.empty_like(kv)
            requests = _traffic.send_recv(kv, (rank + 1) % world,
                                          incoming, (rank - 1) % world, group)
        theirs = _chunks(source, world, Lr, layout)
        states = _fold(states, q, kv.to(work), mine, theirs, is_causal)
        if step < world - 1:
            for request in requests:
                request.wait()
            kv = incoming
    out = torch.cat([acc / total[..., None] for _, total, acc in states], -2)
    return out.flatten(1, 2).to(query.dtype)  # -> (B, H, Lr, Dh)


class Chunk(NamedTuple):
    """Rows start .. stop - 1 of a rank's block, at positions first .. last
    of the sequence (each half of a block is a run of positions)."""

    start: int
    stop: int
    first: int

    @property
    def last(self):
        return self.first + self.stop - self.start - 1


def _chunks(rank, world, block, layout):
    """The two halves of ``rank``'s block (one if it has one position)."""
    positions = positions_of_rank(rank, world, block * world, layout)
    half = block // 2
    halves = [(0, half), (half, block)]
    return [Chunk(a, b, positions[a]) for a, b in halves if b > a]


def _start(q):
    """The online softmax before any key: max -inf, sum 0, acc 0."""
    running_max = q.new_full(q.shape[:-1], float("-inf"))  # (..., n)
    return running_max, q.new_zeros(q.shape[:-1]), torch.zeros_like(q)


def _fold(states, q, kv, mine, theirs, is_causal):
    """Merge one key/value block into the state of each query chunk."""
    key, value = kv.unsqueeze(3)  # each (B, Hkv, 1, Lr, Dh)
    computed = skipped = 0
    for i, rows in enumerate(mine):
        for cols in theirs:
            sees = _sees(rows, cols) if is_causal else "all"
            if sees == "none":  # every key in the future: no work
                skipped += 1
                continue
            k = key[..., cols.start:cols.stop, :]  # (B, Hkv, 1, m, Dh)
            scores = q[..., rows.start:rows.stop, :] @ k.transpose(-2, -1)
            # (B, Hkv, G, n, Dh) @ (B, Hkv, 1, Dh, m) -> (B, Hkv, G, n, m)
            if sees == "some":
                scores = scores.masked_fill(~_mask(rows, cols, q.device),
                                            float("-inf"))
            v = value[..., cols.start:cols.stop, :]  # (B, Hkv, 1, m, Dh)
            states[i] = online_softmax_step(*states[i], scores, v)
            computed += 1
    _traffic.count_blocks(computed, skipped)
    return states


def _sees(rows, cols):
    """How many keys of chunk ``cols`` the queries of ``rows`` see."""
    if cols.last <= rows.first:
        return "all"  # every key at or before every query
    if cols.first > rows.last:
        return "none"  # every key after every query
    return "some"  # the pair straddles the diagonal


def _mask(rows, cols, device):
    """(n, m) bool: True where key position <= query position."""
    q_pos = torch.arange(rows.first, rows.last + 1, device=device)
    k_pos = torch.arange(cols.first, cols.last + 1, device=device)
    return k_pos <= q_pos[:, None]


# --- checks: every rank raises, none waits for a rank that stopped ---------


def _check_ring(query, key, value, is_causal, layout, scale, group):
    """The arguments of ``ring_attention``: returns the scale as a float."""

    def local():
        if scale is not None:
            _checks.check_real("scale", scale)
        _checks.check_bool("is_causal", is_causal)
        _checks.check_choice("layout", layout, LAYOUTS)
        _check_tensors(query, key, value)
        if layout == "zigzag" and query.size(2) % 2:
            raise ValueError(
                f"layout='zigzag' cuts each rank's block into two chunks, so "
                f"its length Lr must be even; got query of shape "
                f"{tuple(query.shape)} (Lr = {query.size(2)})")

    check_blocks(query, key, value, group, local)
    if scale is None:
        return 1.0 / math.sqrt(query.size(-1))
    return _checks.check_real("scale", scale)


def _check_tensors(query, key, value):
    """query (B, H, Lr, Dh), key and value (B, Hkv, Lr, Dh), H = G Hkv."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        _checks.check_float_tensor(name, x)
        if x.dim() != 4:
            raise ValueError(
                f"{name} must have shape (B, heads, Lr, Dh); got shape "
                f"{tuple(x.shape)}")
    _checks.check_same_dtype("query", query, ("key", key), ("value", value))
    _checks.check_same_device("query", query, "key", key)
    _checks.check_same_device("query", query, "value", value)
    if key.shape != value.shape:
        raise ValueError(
            f"key has shape {tuple(key.shape)} but value has "
            f"{tuple(value.shape)}: each key needs one value of its size")
    (B, H, Lr, Dh), Hkv = query.shape, key.size(1)
    if (B, Lr, Dh) != (key.size(0), key.size(2), key.size(3)):
        raise ValueError(
            f"query (B, H, Lr, Dh) = {tuple(query.shape)} and key (B, Hkv, "
            f"Lr, Dh) = {tuple(key.shape)} must agree in B, Lr and Dh")
    if H % Hkv:
        raise ValueError(
            f"query has {H} heads but key and value have {Hkv}: the query "
            f"heads must be a multiple of the key/value heads")


_FIELDS = ("batch size B", "query heads H", "key/value heads Hkv",
           "block length Lr", "head size Dh", "dtype")
_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def check_blocks(query, key, value, group, local):
    """Run ``local()`` (this rank's checks), then gather every rank's
    verdict and shapes (a few integers), so that when one rank's input is
    wrong, or the ranks' blocks differ, every rank raises."""
    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "no process group: run under mha.distributed.launch or torchrun "
            "(torch.distributed.init_process_group)")
    try:
        local()
        error = None
    except (TypeError, ValueError) as raised:
        error = raised
    every = _gather_summary(error, query, key, value, group)
    if error is not None:
        raise error
    for rank, summary in enumerate(every):
        if summary[0]:
            kind = TypeError if summary[0] == 2 else ValueError
            raise kind(
                f"the arguments on rank {rank} are wrong (it raised a "
                f"{kind.__name__} there): every rank stops with it")
    for i, name in enumerate(_FIELDS, start=1):
        values = [summary[i] for summary in every]
        if len(set(values)) > 1:
            if name == "dtype":
                values = [_DTYPES[v] if v >= 0 else "other" for v in values]
            raise ValueError(
                f"the ranks hold blocks of different {name}: {values} on "
                f"ranks 0 .. {len(values) - 1}; every rank must hold a "
                f"block of the same shape (Lr = L / world positions)")


def _gather_summary(error, query, key, value, group):
    """Every rank's [error code, B, H, Hkv, Lr, Dh, dtype] as lists."""
    code = 0 if error is None else 2 if isinstance(error, TypeError) else 1
    summary = [code] + [-1] * len(_FIELDS)
    if error is None:
        dtype = _DTYPES.index(query.dtype) if query.dtype in _DTYPES else -1
        B, H, Lr, Dh = query.shape
        summary = [0, B, H, key.size(1), Lr, Dh, dtype]
    device = torch.device("cpu")
    if dist.get_backend(group) == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    mine = torch.tensor(summary, dtype=torch.int64, device=device)
    every = [torch.empty_like(mine)
             for _ in range(dist.get_world_size(group))]
    dist.all_gather(every, mine, group=group)
    return [row.tolist() for row in every]

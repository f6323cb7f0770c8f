"""Check for the coding exercise of chapter 16 (from one device to many): what one rank holds.

==============  ======== ==================================================================
check           chapter  the reader writes
==============  ======== ==================================================================
``rank_holds``  16       ``fn(rank, world, scheme, num_heads, num_kv_heads, seq_len)`` ->
                         ``{"query_heads": [...], "kv_heads": [...], "positions": [...]}``
==============  ======== ==================================================================

``scheme`` is one of ``mha.distributed.SCHEMES``: "tensor" and "ulysses" (during attention) give
the rank a block of num_heads / world query heads, its key/value heads (a block of
num_kv_heads / world, or, with fewer key/value heads than devices, the one its query heads
read) and every position; "ring" gives every head and the block of seq_len / world positions;
"zigzag" every head and chunks r and 2 world - 1 - r of seq_len / (2 world). Lists of ints in
increasing order (a ``range`` is fine). See ``mha.distributed.layout``.
"""

import numbers

import torch

from mha.distributed import layout
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant

KEYS = ("query_heads", "kv_heads", "positions")


def _reference(rank, world, scheme, num_heads, num_kv_heads, seq_len):
    return layout.rank_holds(rank, world, scheme, num_heads=num_heads,
                             num_kv_heads=num_kv_heads, seq_len=seq_len)


def _as_ints(value):
    """``value`` as a list of ints, or None when it is not a sequence of whole numbers."""
    if isinstance(value, torch.Tensor) or hasattr(value, "tolist"):
        value = value.tolist()  # a tensor or a numpy array
    try:
        items = list(value)
    except TypeError:
        return None
    if not all(isinstance(x, numbers.Integral) and not isinstance(x, bool)
               for x in items):
        return None
    return [int(x) for x in items]  # numpy's ints too


def _compare(expected, actual):
    if not isinstance(actual, dict):
        return (f"expected a dict with the keys {', '.join(KEYS)}; got "
                f"{type(actual).__name__}")
    missing = [k for k in KEYS if k not in actual]
    if missing:
        return f"the dict has no {', '.join(repr(k) for k in missing)}"
    for key in KEYS:
        got = _as_ints(actual[key])
        if got is None:
            return (f"{key}: expected a list of ints, got "
                    f"{type(actual[key]).__name__} {actual[key]!r:.60}")
        want = expected[key]
        if got != want:
            extra = sorted(set(got) - set(want))[:4]
            lacking = sorted(set(want) - set(got))[:4]
            say = f"{key}: expected {_short(want)}, got {_short(got)}"
            if extra or lacking:
                say += (f" (not its own: {extra})" if extra else "") + (
                    f" (missing: {lacking})" if lacking else "")
            elif sorted(got) == want:
                say += " (the right ones, in the wrong order: give them in increasing order)"
            return say
    return None


def _short(items):
    text = repr(items)
    return text if len(text) <= 60 else text[:57] + "...]"


def _cases():
    return [
        Case("tensor parallelism, 8 heads on 4 devices, rank 1", args=(1, 4, "tensor", 8, 8, 16)),
        Case("tensor parallelism with GQA: 8 query heads, 2 key/value heads, 2 devices, rank 1",
             args=(1, 2, "tensor", 8, 2, 16)),
        Case("fewer key/value heads than devices: 8 heads, 2 key/value heads, 4 devices, rank 3",
             args=(3, 4, "tensor", 8, 2, 16)),
        Case("ring attention, 16 positions on 4 devices, rank 2", args=(2, 4, "ring", 4, 2, 16)),
        Case("zigzag, 16 positions on 4 devices, rank 1: two chunks of 2",
             args=(1, 4, "zigzag", 4, 2, 16)),
        Case("Ulysses during attention: 8 heads, 4 key/value heads, 4 devices, rank 0",
             args=(0, 4, "ulysses", 8, 4, 12)),
        Case("one device holds everything", args=(0, 1, "zigzag", 2, 1, 6)),
    ]


def _variants(rng):
    out = []
    for scheme in ("tensor", "zigzag"):
        world = rng.choice([2, 4, 8])
        kv = rng.choice([1, 2, 4, 8, 16])
        heads = kv * rng.choice([1, 2, 4])
        while heads % world or (kv % world and world % kv):
            heads, kv = heads * 2, kv * 2
        seq_len = 2 * world * rng.randint(1, 6)
        args = (rng.randrange(world), world, scheme, heads, kv, seq_len)
        out.append(variant(f"rank, world, scheme, heads, kv heads, seq_len = {args}", args))
    return out


register(
    "rank_holds",
    reference=_reference,
    cases=_cases,
    compare=_compare,
    hint=(
        "Heads are split in contiguous blocks of num_heads // world (tensor, ulysses), positions "
        "in blocks of seq_len // world (ring) or, for zigzag, in 2 * world chunks of which rank r "
        "takes r and 2 * world - 1 - r. With fewer key/value heads than devices, a rank keeps "
        "the one key/value head its query heads read: query head h reads key/value head "
        "h // (num_heads // num_kv_heads)."
    ),
    variants=_variants,
    forbidden=[layout.rank_holds, layout.heads_of_rank, layout.kv_heads_of_rank,
               layout.positions_of_rank],
)

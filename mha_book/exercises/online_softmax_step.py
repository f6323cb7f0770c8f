"""Check for the coding exercise of chapter 13 (fast attention): one online-softmax step.

=======================  ======== ==========================================================
check                    chapter  the reader writes
=======================  ======== ==========================================================
``online_softmax_step``  13       ``fn(running_max, running_sum, acc, scores, value)`` ->
                                  the new ``(running_max, running_sum, acc)``
=======================  ======== ==========================================================

Shapes: running_max, running_sum (..., Lq); acc (..., Lq, Dv); scores (..., Lq, Bk) with -inf
where a key is blocked; value (..., Bk, Dv) (see ``mha.blockwise``).
"""

import torch

from mha.blockwise import online_softmax_step
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant

NEG_INF = float("-inf")


def _start(*batch, num_queries, dv):
    """The state before the first block: max -inf, sum 0, acc 0."""
    return (torch.full((*batch, num_queries), NEG_INF), torch.zeros(*batch, num_queries),
            torch.zeros(*batch, num_queries, dv))


def _after(block_scores, block_value):
    """The state after one block (computed with the package's step)."""
    *batch, num_queries, _ = block_scores.shape
    return online_softmax_step(*_start(*batch, num_queries=num_queries,
                                       dv=block_value.size(-1)), block_scores, block_value)


def _cases():
    first = torch.randn(2, 3, 4), torch.randn(2, 4, 5)  # (B, Lq, Bk), (B, Bk, Dv)
    state = _after(*first)
    low = torch.randn(2, 3, 4) - 5.0  # every score below the running max
    high = torch.randn(2, 3, 4) + 5.0  # every score above it: the old sums must shrink
    partly = torch.randn(2, 3, 4)
    partly[:, 1] = NEG_INF  # query 1 may attend no key of this block
    partly[0, 2, :2] = NEG_INF
    masked_start = torch.randn(2, 3, 4)
    masked_start[:, 0] = NEG_INF  # query 0 has seen no key at all yet
    return [
        Case("the first block (max -inf, sum 0, acc 0 before it)",
             args=(*_start(2, num_queries=3, dv=5), *first)),
        Case("a second block whose scores are all lower than the running max",
             args=(*state, low, torch.randn(2, 4, 5))),
        Case("a second block whose scores are all higher: rescale the old sum and acc",
             args=(*state, high, torch.randn(2, 4, 5))),
        Case("a block where one query may attend no key (-inf scores)",
             args=(*state, partly, torch.randn(2, 4, 5))),
        Case("a first block where one query may attend no key: its state stays (-inf, 0, 0)",
             args=(*_start(2, num_queries=3, dv=5), masked_start, torch.randn(2, 4, 5))),
        Case("an empty block (0 keys): the state does not change",
             args=(*state, torch.randn(2, 3, 0), torch.randn(2, 0, 5))),
        Case("large scores (around 1000): exp must not overflow",
             args=(*_start(2, num_queries=3, dv=5), torch.randn(2, 3, 4) + 1000.0,
                   torch.randn(2, 4, 5))),
        Case("extra batch axes (B, H) and one key per block",
             args=(*_after(torch.randn(2, 2, 3, 1), torch.randn(2, 2, 1, 4)),
                   torch.randn(2, 2, 3, 1), torch.randn(2, 2, 1, 4))),
    ]


def _variants(rng):
    B, Lq, Bk, Dv = (rng.randint(1, 2), rng.randint(1, 4), rng.randint(1, 5),
                     rng.randint(1, 4))
    state = _after(torch.randn(B, Lq, Bk) * 3, torch.randn(B, Bk, Dv))
    shift = rng.randint(-6, 6)
    return [variant(f"a second block, scores shifted by {shift}",
                    (*state, torch.randn(B, Lq, Bk) + shift,
                     torch.randn(B, Bk, Dv)))]


register(
    "online_softmax_step",
    reference=online_softmax_step,
    cases=_cases,
    hint=(
        "Return (new_max, new_sum, new_acc) with new_max = max(running_max, the block's max "
        "score); rescale the old sum and acc by exp(running_max - new_max) and add "
        "exp(scores - new_max) (summed over the keys, and @ value). Where new_max is -inf (no key "
        "allowed yet) subtract 0 instead, or you get exp(-inf - (-inf)) = NaN; an empty block "
        "has no max at all: return the state unchanged."
    ),
    variants=_variants,
    forbidden=[online_softmax_step],
)

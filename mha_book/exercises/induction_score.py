"""The check of chapter 10's coding exercise (heads on text): the induction score of a head.

Shapes: B batch, H heads, T the length of one random block, 2T the repeated sequence.
"""

import torch

from mha.head_scores import induction_score
from mha.masks import causal_mask
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _causal_rows(shape, *, seed, sharpness=1.0):
    """Random causal attention weights of ``shape`` (B, H, L, L): row i sees keys 0..i."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(shape, generator=g) * sharpness
    return scores.masked_fill(~causal_mask(shape[-1]), float("-inf")).softmax(-1)


def _induction_cases():
    T = 5
    perfect = torch.zeros(1, 2, 2 * T, 2 * T)
    for i in range(2 * T):
        # head 0: an induction head (second copy: the token after the earlier occurrence)
        perfect[0, 0, i, i - T + 1 if i >= T else 0] = 1.0
        perfect[0, 1, i, i] = 1.0  # head 1: every query on itself
    uniform = causal_mask(2 * T).float()
    uniform = (uniform / uniform.sum(-1, keepdim=True))[None, None]  # (1, 1, 2T, 2T)
    return [
        Case("head 0 is a perfect induction head, head 1 looks at itself (T = 5)",
             args=(perfect, T)),
        Case("a uniform causal head: query i puts 1/(i+1) on every key (T = 5)",
             args=(uniform, T)),
        Case("random causal weights, B=3, H=4, T=6", args=(_causal_rows((3, 4, 12, 12), seed=1),
                                                          6)),
        Case("sharp random causal weights, B=2, H=1, T=1 (one query in the second copy)",
             args=(_causal_rows((2, 1, 2, 2), seed=2, sharpness=4.0), 1)),
    ]


def _variants(rng):
    T, B, H = rng.randint(1, 6), rng.randint(1, 3), rng.randint(1, 4)
    w = _causal_rows((B, H, 2 * T, 2 * T), seed=rng.randint(10, 10**6))
    return [variant(f"causal weights, B={B}, H={H}, T={T}", (w, T))]


register(
    "induction_score",
    reference=induction_score,
    cases=_induction_cases,
    hint="Only the second copy's queries count: i = T .. 2T-1. Query i's token appeared at "
    "i - T, so the token that followed it sits at i - T + 1: average weights[..., i, i - T + 1] "
    "over the batch and those T queries (torch.diagonal with offset=-(T - 1) gives them all, "
    "drop its first entry), one value per head: shape (H,).",
    variants=_variants,
    forbidden=[induction_score],
)

"""The check of chapter 08's second coding exercise: a previous-token score per head.

The reader writes ``fn(weights)``: weights (B, H, L, L) -> the mean weight of each query on
the key before it (queries 1 .. L-1), one value per head, (H,).
"""

import torch

from mha.head_scores import previous_token_score
from mha.masks import causal_mask
from mha_book.exercises import Case, register
from mha_book.exercises._shared import course_weights, seeded_rows, variant
from mha_book.tasks import pattern_score


def _previous_score(weights):
    L = weights.size(-1)
    target = torch.zeros(L, L, dtype=torch.bool, device=weights.device)
    target[torch.arange(1, L), torch.arange(L - 1)] = True  # query i -> key i - 1
    return pattern_score(weights, target)


def _previous_cases():
    shifted = torch.zeros(1, 2, 5, 5)
    shifted[0, 0, 1:, :-1] = torch.eye(4)  # head 0: a perfect previous-token head
    shifted[0, 0, 0, 0] = 1.0
    shifted[0, 1] = 1 / 5  # head 1: uniform
    return [
        Case("head 0 is a perfect previous-token head, head 1 is uniform (query 0 has no "
             "previous token and is left out)", args=(shifted,)),
        Case("random weights, B=4, H=3, L=8", args=(seeded_rows((4, 3, 8, 8), seed=4),)),
        Case("causal weights, B=2, H=2, L=6",
             args=(seeded_rows((2, 2, 6, 6), seed=5, sharpness=2.0,
                               allowed=causal_mask(6)),)),
    ]


def _variants(rng):
    w = course_weights(rng, causal=True)
    return [variant(f"causal weights {tuple(w.shape)}", (w,))]


register(
    "previous_token_score",
    reference=_previous_score,
    cases=_previous_cases,
    hint="For queries i = 1 .. L-1 take weights[..., i, i - 1] (e.g. torch.diagonal(weights, "
    "offset=-1, dim1=-2, dim2=-1)), then average over the batch and those queries: shape (H,).",
    variants=_variants,
    forbidden=[pattern_score, previous_token_score],
)

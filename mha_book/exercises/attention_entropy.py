"""The check of chapter 08's first coding exercise (what trained heads learn): the mean
attention entropy of each head.

The reader writes ``fn(weights)``: weights (B, H, Lq, Lk) -> one entropy per head, (H,).

Shapes: B batch, H heads, Lq/Lk query/key lengths, L = Lq = Lk (see ``mha.functional``).
"""

import torch

from mha.masks import causal_mask
from mha_book.exercises import Case, register
from mha_book.exercises._shared import course_weights, seeded_rows, variant
from mha_book.tasks import attention_entropy


def _entropy_cases():
    one_hot = torch.zeros(1, 2, 4, 4)
    one_hot[0, 0] = torch.eye(4)
    one_hot[0, 1, :, 0] = 1.0  # every query on key 0
    padded = torch.ones(2, 1, 6, 6, dtype=torch.bool)
    padded[1, :, 4:] = False  # the second sequence: queries 4 and 5 are padding, may see nothing
    padded[1, :, :, 4:] = False
    return [
        Case("uniform weights over 9 keys: every head has entropy log 9",
             args=(torch.full((2, 4, 9, 9), 1 / 9),)),
        Case("one-hot rows (0 log 0 counts as 0): entropy 0, not NaN", args=(one_hot,)),
        Case("random weights, B=3, H=2, 12 queries x 9 keys (cross-attention)",
             args=(seeded_rows((3, 2, 12, 9), seed=1),)),
        Case("causal weights (row i sees keys 0..i), 5 heads",
             args=(seeded_rows((2, 5, 7, 7), seed=2, sharpness=3.0, allowed=causal_mask(7)),)),
        Case("padding: all-zero rows are left out of the mean",
             args=(seeded_rows((2, 3, 6, 6), seed=3, allowed=padded),)),
    ]


def _variants(rng):
    w, c = course_weights(rng), course_weights(rng, causal=True)
    return [variant(f"random weights {tuple(w.shape)}", (w,)),
            variant(f"causal weights {tuple(c.shape)}", (c,))]


register(
    "attention_entropy",
    reference=attention_entropy,
    cases=_entropy_cases,
    hint="Per row: -(p * log p).sum(-1) with 0 log 0 = 0 (torch.special.xlogy(p, p) does that); "
    "then average over the batch and the queries, skipping rows whose weights sum to 0; "
    "return one value per head, shape (H,).",
    variants=_variants,
    forbidden=[attention_entropy],
)


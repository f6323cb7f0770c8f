"""The check of chapter 05's first coding exercise: split the features into heads.

The reader writes ``fn(x, num_heads)``: (B, L, D) -> (B, H, L, Dh), Dh = D / H.
"""

import torch

from mha import functional as F
from mha_book.exercises import Case, _compare, register
from mha_book.exercises._shared import arange_sentence, variant


def _compare_split(expected, actual):
    """Default comparison, plus a diagnosis of the classic mistake (no transpose)."""
    message = _compare(expected, actual, 0.0, 0.0)
    if message and isinstance(actual, torch.Tensor) and actual.shape == expected.shape:
        B, H, L, Dh = expected.shape
        no_transpose = F.merge_heads(expected).reshape(B, H, L, Dh)  # what a bare reshape gives
        if torch.equal(actual.detach().cpu(), no_transpose.cpu()) and H > 1:
            message += (
                ". This is what reshaping (B, L, D) straight to (B, H, L, Dh) gives: head 0 then "
                "holds whole tokens one after the other, instead of columns 0..Dh-1 of every "
                "token. Reshape to (B, L, H, Dh) and then swap the L and H axes"
            )
    return message


def _variants(rng):
    B, L, H, Dh = (rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6),
                   rng.randint(1, 5))
    return [variant(f"x {(B, L, H * Dh)}, {H} heads",
                    (torch.randn(B, L, H * Dh), H))]


register(
    "split_heads",
    reference=F.split_heads,
    cases=lambda: [
        Case("1 x 9 x 512 sequential numbers, 8 heads", args=(arange_sentence(), 8)),
        Case("batch of 2, 5 tokens, d_model 12, 3 heads", args=(torch.randn(2, 5, 12), 3)),
        Case("one head: only a new axis", args=(torch.randn(2, 4, 6), 1)),
        Case("d_head = 1: one feature per head", args=(torch.randn(3, 2, 6), 6)),
        Case("a single token", args=(torch.randn(2, 1, 8), 4)),
    ],
    hint="Reshape (B, L, D) to (B, L, H, Dh) first, then transpose the L and H axes.",
    compare=_compare_split,
    variants=_variants,
    forbidden=[F.split_heads, F._split_heads],
)

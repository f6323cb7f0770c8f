"""The check of chapter 05's second coding exercise: merge the heads back.

The reader writes ``fn(x)``: (B, H, L, Dh) -> (B, L, D), D = H * Dh.
"""

import torch

from mha import functional as F
from mha_book.exercises import Case, _compare, register
from mha_book.exercises._shared import arange_sentence, variant


def _compare_merge(expected, actual):
    message = _compare(expected, actual, 0.0, 0.0)
    if message and isinstance(actual, torch.Tensor) and actual.shape == expected.shape:
        B, L, D = expected.shape
        for H in range(2, D + 1):
            if D % H == 0:
                no_transpose = F.split_heads(expected, H).reshape(B, L, D)
                if torch.equal(actual.detach().cpu(), no_transpose.cpu()):
                    message += (
                        ". This is what reshaping (B, H, L, Dh) straight to (B, L, D) gives: it "
                        "glues the rows of one head together instead of the heads of one token. "
                        "Transpose H and L back first, then reshape"
                    )
                    break
    return message


def _variants(rng):
    B, H, L, Dh = (rng.randint(1, 3), rng.randint(1, 6), rng.randint(1, 6),
                   rng.randint(1, 5))
    return [variant(f"x {(B, H, L, Dh)}", (torch.randn(B, H, L, Dh),)),
            variant(f"x {(B, H, L, Dh)}, not contiguous",
                    (torch.randn(B, L, H, Dh).transpose(1, 2),))]


register(
    "merge_heads",
    reference=F.merge_heads,
    cases=lambda: [
        Case("8 heads x 9 tokens x 64 (the split sentence)",
             args=(F.split_heads(arange_sentence(), 8),)),
        Case("batch of 2, 3 heads, 5 tokens, d_head 4", args=(torch.randn(2, 3, 5, 4),)),
        Case("one head", args=(torch.randn(1, 1, 3, 7),)),
        Case("non-contiguous input (a transposed tensor)",
             args=(torch.randn(2, 6, 4, 3).transpose(1, 2),)),
    ],
    hint=(
        "Transpose (B, H, L, Dh) to (B, L, H, Dh), then reshape to (B, L, H * Dh); use .reshape "
        "(or .contiguous().view), because the transposed tensor is not contiguous."
    ),
    compare=_compare_merge,
    variants=_variants,
    forbidden=[F.merge_heads, F._merge_heads],
)

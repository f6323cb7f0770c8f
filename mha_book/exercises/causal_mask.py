"""The check of chapter 02's second coding exercise: the causal mask.

The reader writes ``fn(num_queries, num_keys)`` -> bool (Lq, Lk), True = may attend.
"""

import torch

from mha import masks, modern
from mha.masks import causal_mask
from mha_book.exercises import Case, register
from mha_book.exercises._shared import as_tensor_message, variant


def _compare_causal(expected, actual):
    message = as_tensor_message(actual, expected)
    if message:
        return message
    if actual.dtype != torch.bool:
        return (f"expected a bool tensor (True = may attend), got dtype {actual.dtype}; "
                "compare with a comparison (e.g. j <= i) or call .bool()")
    actual = actual.cpu()
    if torch.equal(actual, expected):
        return None
    if torch.equal(actual, ~expected):
        return ("your mask is the exact opposite: True must mean 'may attend' (the convention "
                "of F.scaled_dot_product_attention), not 'blocked' (nn.MultiheadAttention's)")
    if torch.equal(actual, expected.T.contiguous()) or torch.equal(
            actual, torch.ones_like(actual).triu()):
        return ("your mask lets queries see the future: query i may attend keys 0..i only, so the "
                "True entries are on and below the diagonal (tril), not above it")
    i, j = (int(k) for k in (actual != expected).nonzero()[0])
    return (f"query {i}, key {j}: expected {bool(expected[i, j])}, got {bool(actual[i, j])} "
            f"(query i may attend key j exactly when j <= i)")


def _variants(rng):
    sizes = [(rng.randint(1, 12), rng.randint(1, 12)) for _ in range(3)]
    return [variant(f"{q} queries, {k} keys", (q, k)) for q, k in sizes]


register(
    "causal_mask",
    reference=causal_mask,
    cases=lambda: [
        Case("4 queries, 4 keys", args=(4, 4)),
        Case("one query, one key", args=(1, 1)),
        Case("3 queries, 5 keys (aligned at the top left, like is_causal=True)", args=(3, 5)),
        Case("5 queries, 3 keys", args=(5, 3)),
    ],
    hint="torch.ones(num_queries, num_keys, dtype=torch.bool).tril(), or compare "
    "torch.arange(num_keys) with torch.arange(num_queries)[:, None].",
    compare=_compare_causal,
    variants=_variants,
    forbidden=[causal_mask, masks._causal_mask, masks.combine_masks, modern.window_mask],
)

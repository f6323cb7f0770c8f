"""The check of chapter 06's coding exercise: scaled per-head scores.

The reader writes ``fn(query, key, num_heads)``: projected (B, Lq, D) and (B, Lk, D) ->
scaled per-head scores (B, H, Lq, Lk).
"""

import math

import torch

from mha import functional as F
from mha_book.exercises import Case, _compare, register
from mha_book.exercises._shared import variant


def _head_scores(query, key, num_heads):
    """Scaled per-head scores: split_heads(q) @ split_heads(k)^T / sqrt(d_head)."""
    # (B, L, D) -> (B, H, L, Dh)
    q, k = F.split_heads(query, num_heads), F.split_heads(key, num_heads)
    return q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Lq, Dh) @ (B, H, Dh, Lk)


def _compare_scores(expected, actual):
    message = _compare(expected, actual, 1e-5, 1e-4)
    if message and isinstance(actual, torch.Tensor) and actual.shape == expected.shape:
        H = expected.size(1)
        if H > 1 and torch.allclose(actual.detach().cpu() * math.sqrt(H), expected.cpu(),
                                    atol=1e-5, rtol=1e-4):
            message += (
                f". Your scores are the expected ones divided by sqrt({H}) = sqrt(num_heads): "
                "you scaled by 1/sqrt(d_model), but each head's dot product has only d_head terms"
            )
    return message


def _scores_case(name, batch, num_queries, num_keys, d_model, num_heads):
    return Case(name, args=(torch.randn(batch, num_queries, d_model),
                            torch.randn(batch, num_keys, d_model), num_heads))


def _variants(rng):
    B, Lq, Lk = rng.randint(1, 2), rng.randint(1, 7), rng.randint(1, 7)
    H, Dh = rng.randint(1, 6), rng.randint(1, 6)
    return [variant(f"{Lq} queries, {Lk} keys, d_model {H * Dh}, {H} heads",
                    (torch.randn(B, Lq, H * Dh), torch.randn(B, Lk, H * Dh),
                     H))]


register(
    "head_scores",
    reference=_head_scores,
    cases=lambda: [
        _scores_case("9 tokens x 512, 8 heads", 1, 9, 9, 512, 8),
        _scores_case("cross-attention: 12 queries over 9 keys, d_model 32, 4 heads", 2, 12, 9,
                     32, 4),
        _scores_case("one head (the big single head)", 1, 5, 5, 16, 1),
        _scores_case("d_head = 1", 2, 3, 4, 6, 6),
    ],
    hint=(
        "Split both into heads ((B, L, D) -> (B, H, L, Dh)), multiply query by the transposed "
        "key within each head, and divide by sqrt(d_head)."
    ),
    compare=_compare_scores,
    variants=_variants,
    forbidden=[],
    allowed=[F.split_heads],
)

"""The check of chapter 04's first coding exercise: the parameters of a multi-head layer.

The reader writes ``fn(d_model, num_heads, bias=False) -> int``.
"""

import torch

from mha.counts import count_parameters
from mha.layer import MultiHeadAttention
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _parameter_count(d_model, num_heads, bias=False):
    """The package's answer: count the parameters of a real layer (on the meta device)."""
    layer = MultiHeadAttention(d_model, num_heads, bias=bias, device="meta")
    return sum(p.numel() for p in layer.parameters())


def _compare_counts(expected, actual):
    if isinstance(actual, torch.Tensor) and actual.numel() == 1:
        actual = actual.item()
    if isinstance(actual, bool) or not isinstance(actual, (int, float)):
        return f"expected a number ({expected:,}), got {type(actual).__name__} {actual!r}"
    if actual != expected:
        return f"expected {expected:,} parameters, got {actual:,}"
    return None


def _variants(rng):
    out = []
    for bias in (False, True):
        H, Dh = rng.randint(1, 16), rng.randint(1, 64)
        out.append(variant(f"d_model = {H * Dh}, {H} heads, bias={bias}",
                           (H * Dh, H), {"bias": bias}))
    return out


register(
    "parameter_count",
    reference=_parameter_count,
    cases=lambda: [
        Case("d_model = 512, 8 heads", args=(512, 8)),
        Case("d_model = 768, 12 heads (GPT-3 Small, BERT-base)", args=(768, 12)),
        Case("d_model = 12288, 96 heads (GPT-3 175B)", args=(12288, 96)),
        Case("d_model = 64, one head", args=(64, 1)),
        Case("d_model = 768, 12 heads, with biases", args=(768, 12), kwargs={"bias": True}),
    ],
    hint=(
        "Each of W_q, W_k, W_v holds num_heads blocks of d_head x d_model, and W_o is "
        "d_model x (num_heads * d_head); with bias=True each of the four also has d_model biases. "
        "The number of heads should not appear in the final formula."
    ),
    compare=_compare_counts,
    variants=_variants,
    forbidden=[MultiHeadAttention, "torch.nn.MultiheadAttention", count_parameters],
)

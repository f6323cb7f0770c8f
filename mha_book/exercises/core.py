"""Checks for the package's own building blocks: softmax and scaled dot-product attention.

Shapes: B batch, H heads, Lq/Lk query/key lengths, Dk/Dv features (see ``mha.functional``).
"""

import torch

from mha.functional import scaled_dot_product_attention
from mha.masks import causal_mask
from mha_book.exercises import Case, register


def _softmax_cases():
    return [
        Case("one row [1, 2, 3]", args=(torch.tensor([1.0, 2.0, 3.0]),)),
        Case("equal scores give equal weights", args=(torch.zeros(2, 4),)),
        Case("large scores [1000, 1001, 1002] (subtract the max first)",
             args=(torch.tensor([1000.0, 1001.0, 1002.0]),)),
        Case("very negative scores [-1000, -1001]", args=(torch.tensor([-1000.0, -1001.0]),)),
        Case("a -inf score gets weight 0", args=(torch.tensor([0.0, float("-inf"), 1.0]),)),
        Case("batch (2, 3, 5), softmax over the last axis", args=(torch.randn(2, 3, 5),)),
    ]


register(
    "softmax",
    reference=lambda x: torch.softmax(x, dim=-1),
    cases=_softmax_cases,
    hint="exp(x - max) / sum(exp(x - max)) over the last axis (dim=-1, keepdim=True); "
    "subtracting the row's max avoids overflow and changes nothing else.",
)


def _attention_cases():
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 3)
    pad = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])[:, None, :]  # (B, 1, Lk)
    x = torch.randn(2, 5, 8)
    return [
        Case("one query, three keys", args=(torch.randn(1, 4), torch.randn(3, 4),
                                            torch.randn(3, 2))),
        Case("self-attention, batch (2, 5, 8)", args=(x, x, x)),
        Case("4 queries over 6 keys, values of size 3", args=(q, k, v)),
        Case("heads (B, H, L, Dh) = (2, 3, 5, 4)",
             args=(torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4), torch.randn(2, 3, 5, 4))),
        Case("padding mask: the second sequence has 3 real keys", args=(q, k, v, pad)),
        Case("causal mask (query i sees keys 0..i)", args=(x, x, x, causal_mask(5))),
        Case("large features (Dk = 256): scale by 1/sqrt(Dk)",
             args=(torch.randn(3, 256), torch.randn(4, 256), torch.randn(4, 2))),
    ]


register(
    "scaled_dot_product_attention",
    reference=scaled_dot_product_attention,
    cases=_attention_cases,
    hint="scores = query @ key.transpose(-2, -1) / sqrt(Dk); blocked scores (mask False) become "
    "-inf before the softmax over the last axis; return (weights @ value, weights).",
)

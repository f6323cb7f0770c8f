"""The check of scaled dot-product attention, the package's own building block.

The reader writes ``fn(query, key, value, mask=None)`` -> ``(output, weights)``.
Shapes: B batch, H heads, Lq/Lk query/key lengths, Dk/Dv features (see ``mha.functional``).
"""

import torch

from mha import functional
from mha.functional import scaled_dot_product_attention
from mha.masks import causal_mask
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


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


def _variants(rng):
    Lq, Lk, Dk, Dv = (rng.randint(1, 6), rng.randint(1, 6), rng.randint(1, 9),
                      rng.randint(1, 5))
    return [variant(f"{Lq} queries, {Lk} keys, Dk {Dk}, Dv {Dv}",
                    (torch.randn(2, Lq, Dk), torch.randn(2, Lk, Dk),
                     torch.randn(2, Lk, Dv)))]


register(
    "scaled_dot_product_attention",
    reference=scaled_dot_product_attention,
    cases=_attention_cases,
    hint="scores = query @ key.transpose(-2, -1) / sqrt(Dk); blocked scores (mask False) become "
    "-inf before the softmax over the last axis; return (weights @ value, weights).",
    variants=_variants,
    forbidden=[scaled_dot_product_attention,
               "torch.nn.functional.scaled_dot_product_attention",
               functional._attention],
)

"""The check of chapter 04's second coding exercise: a multi-head forward pass.

The reader writes ``fn(query, key, value, W_q, W_k, W_v, W_o, num_heads)``, the weights in
``nn.Linear`` layout (out_features, in_features).
"""

import math

import torch

from mha.functional import scaled_dot_product_attention
from mha.layer import MultiHeadAttention
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _multi_head_forward(query, key, value, W_q, W_k, W_v, W_o, num_heads):
    """The package's layer, holding the given weights (nn.Linear layout: (out, in))."""
    layer = MultiHeadAttention(W_q.size(1), num_heads, kdim=W_k.size(1), vdim=W_v.size(1))
    layer = layer.to(dtype=query.dtype, device=query.device)
    with torch.no_grad():
        for name, weight in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v), ("W_o", W_o)):
            getattr(layer, name).weight.copy_(weight)
        output, _ = layer(query, key, value)
    return output


def _forward_case(name, batch, num_queries, num_keys, d_model, num_heads, self_attention=False):
    query = torch.randn(batch, num_queries, d_model)
    key = query if self_attention else torch.randn(batch, num_keys, d_model)
    weights = [torch.randn(d_model, d_model) / math.sqrt(d_model) for _ in range(4)]
    return Case(name, args=(query, key, key, *weights, num_heads))


def _variants(rng):
    out = []
    for self_attention in (True, False):
        H, Dh = rng.randint(1, 4), rng.randint(1, 6)
        B, Lq, Lk = rng.randint(1, 2), rng.randint(1, 6), rng.randint(1, 6)
        case = _forward_case("", B, Lq, Lk, H * Dh, H, self_attention)
        kind = "self" if self_attention else "cross"
        out.append(variant(f"{kind}-attention, d_model {H * Dh}, {H} heads",
                           case.args))
    return out


register(
    "multi_head_forward",
    reference=_multi_head_forward,
    cases=lambda: [
        _forward_case("self-attention, batch 2, 5 tokens, d_model 12, 3 heads", 2, 5, 5, 12, 3,
                      self_attention=True),
        _forward_case("cross-attention, 4 queries over 6 keys, d_model 16, 4 heads", 1, 4, 6,
                      16, 4),
        _forward_case("one head (d_head = d_model = 8)", 2, 3, 3, 8, 1),
        _forward_case("d_head = 1: 4 heads of one feature", 1, 3, 5, 4, 4),
        _forward_case("9 tokens x 512, 8 heads (the book's sentence)", 1, 9, 9, 512, 8,
                      self_attention=True),
    ],
    hint=(
        "Project with x @ W.T (nn.Linear layout), split the features into heads "
        "((B, L, D) -> (B, L, H, Dh) -> (B, H, L, Dh)), scale each head's scores by "
        "1/sqrt(d_head) (not 1/sqrt(d_model)), softmax over the keys, merge the heads back "
        "((B, H, Lq, Dh) -> (B, Lq, D)) and finish with W_o."
    ),
    atol=1e-4,
    rtol=1e-4,
    variants=_variants,
    forbidden=[MultiHeadAttention, "torch.nn.MultiheadAttention",
               "torch.nn.functional.multi_head_attention_forward"],
    allowed=[scaled_dot_product_attention],
)

"""The check of chapter 07's second coding exercise: the FLOPs of attention.

The reader writes ``fn(seq_len, d_model, num_heads, num_kv_heads) -> int``: the FLOPs of one
self-attention forward pass (multiply-add = 2 FLOPs), as
``mha.counts.count_flops(...)["total"]`` (the explorer's count) counts them.
"""

from mha.counts import count_flops
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _variants(rng):
    out = []
    for _ in range(3):
        H, Dh, L = rng.randint(1, 16), rng.randint(1, 128), rng.randint(1, 5000)
        kv = rng.choice([d for d in range(1, H + 1) if H % d == 0])
        out.append(variant(f"{L} tokens, d_model {H * Dh}, {H} heads, "
                           f"{kv} key/value heads", (L, H * Dh, H, kv)))
    return out


register(
    "flop_count",
    reference=lambda seq_len, d_model, num_heads, num_kv_heads: count_flops(
        seq_len, d_model, num_heads, num_kv_heads)["total"],
    cases=lambda: [
        Case("the explorer's start: 12 tokens, d_model 64, 8 heads", args=(12, 64, 8, 8)),
        Case("9 tokens, d_model 512, 8 heads", args=(9, 512, 8, 8)),
        Case("one head", args=(10, 64, 1, 1)),
        Case("long sequence: 4096 tokens, d_model 768, 12 heads", args=(4096, 768, 12, 12)),
        Case("grouped-query: 8 heads, 2 key/value heads", args=(10, 64, 8, 2)),
        Case("multi-query: 8 heads, 1 key/value head", args=(10, 64, 8, 1)),
    ],
    hint="count a multiply-add as 2 FLOPs, so (m x k) @ (k x n) costs 2*m*k*n. Add the Q and "
    "output projections (2*L*D*D each), the K and V projections (2*L*D*(num_kv_heads*d_head) "
    "each), QK^T and weights @ V (2*H*L*L*d_head each); leave the softmax out.",
    variants=_variants,
    forbidden=[count_flops],
)

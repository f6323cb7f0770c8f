"""The check of chapter 11's coding exercise: the size of a key/value cache in bytes.

The reader writes ``fn(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch_size,
bytes_per_value)``; the cases cover multi-head, grouped-query and multi-query models, an empty
cache, a batch and other number formats.
"""

from mha.configs import kv_cache_bytes
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _reference(num_layers, num_heads, num_kv_heads, d_model, seq_len, batch_size,
               bytes_per_value):
    return kv_cache_bytes(num_layers, num_kv_heads, d_model // num_heads, seq_len,
                          batch_size=batch_size, bytes_per_value=bytes_per_value)


def _cases():
    return [
        Case("Llama 2 7B (MHA), one token, float16", args=(32, 32, 32, 4096, 1, 1, 2)),
        Case("Llama 2 70B (GQA: 64 query heads, 8 key/value heads), 4096 tokens",
             args=(80, 64, 8, 8192, 4096, 1, 2)),
        Case("Falcon-7B (multi-query: one key/value head of 64), 2048 tokens",
             args=(32, 71, 1, 4544, 2048, 1, 2)),
        Case("an empty cache (seq_len = 0)", args=(2, 4, 2, 32, 0, 1, 2)),
        Case("a batch of 8 sequences in float32", args=(2, 4, 2, 32, 10, 8, 4)),
        Case("8-bit keys and values (1 byte each)", args=(4, 8, 2, 64, 100, 2, 1)),
    ]


def _variants(rng):
    out = []
    for _ in range(3):
        H, Dh = rng.randint(1, 64), rng.randint(1, 128)
        kv = rng.choice([d for d in range(1, H + 1) if H % d == 0])
        args = (rng.randint(1, 96), H, kv, H * Dh, rng.randint(0, 9000),
                rng.randint(1, 8), rng.choice([1, 2, 4]))
        out.append(variant("layers, heads, kv heads, d_model, seq_len, "
                           f"batch, bytes = {args}", args))
    return out


register(
    "kv_cache_bytes",
    reference=_reference,
    cases=_cases,
    hint="every layer stores a key AND a value vector (factor 2) of d_head = d_model / num_heads "
    "numbers per key/value head (num_kv_heads, not num_heads), per position and per sequence; "
    "multiply by bytes_per_value.",
    variants=_variants,
    forbidden=[kv_cache_bytes],
)

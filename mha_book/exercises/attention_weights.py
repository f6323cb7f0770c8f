"""The check of chapter 01's coding exercise: the attention weights of one query.

The reader writes ``fn(query, keys, temperature=1.0)``: query (d,), keys (n, d) -> the n
weights softmax(query @ keys.T / temperature).
"""

import torch

from mha import functional
from mha.functional import scaled_dot_product_attention
from mha_book.exercises import Case, register
from mha_book.exercises._shared import as_tensor_message, first_difference, variant


def _attention_weights(query, keys, temperature=1.0):
    """The package's answer: one query (d,) over keys (n, d), with the scores divided by T."""
    _, weights = scaled_dot_product_attention(query[None], keys, keys, scale=1.0 / temperature)
    return weights[0]  # (1, n) -> (n,)


def _weights_cases():
    embeddings = torch.tensor([[1.0, 0.2, 0.0, 0.0], [1.0, 0.3, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0],
                               [1.0, 1.0, 0.0, 0.0], [0.6, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0],
                               [0.0, 0.0, 0.0, 1.0], [0.0, 0.3, 0.5, 0.0], [0.4, 0.8, 0.2, 0.0]])
    return [
        Case('the chapter\'s sentence, query "Michael"', args=(embeddings[3], embeddings)),
        Case("random query and 6 keys with 5 features", args=(torch.randn(5), torch.randn(6, 5))),
        Case("temperature 0.25 (sharper)", args=(embeddings[3], embeddings),
             kwargs={"temperature": 0.25}),
        Case("temperature 10 (blurrier)", args=(torch.randn(5), torch.randn(6, 5)),
             kwargs={"temperature": 10.0}),
        Case("a zero query gives uniform weights", args=(torch.zeros(3), torch.randn(4, 3))),
        Case("a single key gets weight 1", args=(torch.randn(4), torch.randn(1, 4))),
        Case("very large scores (around 1000: exp overflows unless you subtract the max)",
             args=(torch.tensor([30.0, 31.0]), torch.tensor([[20.0, 15.0], [15.0, 20.0],
                                                               [0.0, 0.0]]))),
    ]


def _compare_weights(expected, actual):
    message = as_tensor_message(actual, expected)
    if message:
        return message
    if bool(torch.isnan(actual).any()) or bool(torch.isinf(actual).any()):
        return ("the weights contain NaN or inf: exp() of a large score overflows; subtract the "
                "largest score before exp() (softmax does not change when every score moves by "
                "the same amount)")
    total = actual.detach().double().sum().item()
    if abs(total - 1.0) > 1e-4:
        return f"the weights must sum to 1; yours sum to {total:.6g} (divide by their sum)"
    return first_difference(expected, actual, atol=1e-5, rtol=1e-4)


def _variants(rng):
    out = []
    for _ in range(2):
        d, n = rng.randint(2, 8), rng.randint(2, 10)
        t = rng.randint(1, 40) / 8
        out.append(variant(f"{n} keys of {d} features, temperature {t:g}",
                           (torch.randn(d), torch.randn(n, d)),
                           {"temperature": t}))
    return out


register(
    "attention_weights",
    reference=_attention_weights,
    cases=_weights_cases,
    hint="scores = query @ keys.T / temperature (s = q K^T: one score per key), then softmax "
    "over the keys: exp(scores - scores.max()) / its sum.",
    compare=_compare_weights,
    variants=_variants,
    forbidden=[scaled_dot_product_attention,
               "torch.nn.functional.scaled_dot_product_attention",
               functional._attention],
)

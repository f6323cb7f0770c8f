"""The check of chapter 03's coding exercise: one head, in three attempts.

The reader writes ``fn(x, W_q, W_k=None, W_v=None)``: x (B, L, D), W_q and W_k (D, Dh), W_v
(D, Dv) in the equations' layout (``x @ W``); ``W_k=None`` shares W_q (attempt 1),
``W_v=None`` leaves the values unprojected -> (output, weights).
"""

import torch

from mha import functional
from mha.functional import scaled_dot_product_attention
from mha_book.exercises import Case, register
from mha_book.exercises._shared import as_tensor_message, first_difference, variant


def _attention_head(x, W_q, W_k=None, W_v=None):
    """The package's answer: project x, then scaled dot-product attention (scale 1/sqrt(Dh))."""
    query = x @ W_q  # (B, L, D) @ (D, Dh) -> (B, L, Dh)
    key = query if W_k is None else x @ W_k  # (B, L, D) @ (D, Dh) -> (B, L, Dh)
    value = x if W_v is None else x @ W_v  # (B, L, D) @ (D, Dv) -> (B, L, Dv)
    return scaled_dot_product_attention(query, key, value)


def _head_cases():
    x, D, Dh = torch.randn(2, 5, 8), 8, 4
    W_q, W_k, W_v = torch.randn(D, Dh), torch.randn(D, Dh), torch.randn(D, 3)
    return [
        Case("attempt 3: W_q, W_k, W_v (B, L, D) = (2, 5, 8), Dh = 4, Dv = 3",
             args=(x, W_q, W_k, W_v)),
        Case("attempt 2: W_q and W_k, values unprojected", args=(x, W_q, W_k)),
        Case("attempt 1: one shared W (W_k=None, W_v=None)", args=(x, W_q)),
        Case("one token (L = 1): its weight is 1", args=(torch.randn(3, 1, 8), W_q, W_k, W_v)),
        Case("a wide head (Dh = 64): the scale 1/sqrt(Dh) matters",
             args=(torch.randn(1, 6, 16), torch.randn(16, 64) / 4, torch.randn(16, 64) / 4,
                   torch.randn(16, 2))),
    ]


def _compare_head(expected, actual):
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        return f"expected a pair (output, weights), got {type(actual).__name__}"
    out_e, w_e = expected
    out_a, w_a = actual
    for name, e, a in (("weights", w_e, w_a), ("output", out_e, out_a)):
        message = as_tensor_message(a, e)
        if message:
            return f"{name}: {message}"
    w_a = w_a.detach().cpu().double()
    if not torch.allclose(w_a.sum(dim=-1), torch.ones_like(w_a.sum(dim=-1)), atol=1e-4):
        if torch.allclose(w_a.sum(dim=-2), torch.ones_like(w_a.sum(dim=-2)), atol=1e-4):
            return ("weights: the columns sum to 1 but the rows must (each query's weights over "
                    "the keys): take the softmax over the last axis, dim=-1")
        return "weights: each row (one query's weights over the keys) must sum to 1"
    message = first_difference(w_e, w_a, atol=1e-5, rtol=1e-4)
    if message:
        return "weights: " + message + _scale_diagnosis(w_e.detach().cpu().double(), w_a)
    message = first_difference(out_e, out_a, atol=1e-4, rtol=1e-4, what="output value")
    return "output: " + message if message else None


def _scale_diagnosis(w_e, w_a):
    """If the reader's log-weights are the expected ones times a constant, say which constant."""
    if bool((w_e <= 0).any()) or bool((w_a <= 0).any()):
        return ""
    le = w_e.log() - w_e.log().mean(dim=-1, keepdim=True)  # scores up to a shift per row
    la = w_a.log() - w_a.log().mean(dim=-1, keepdim=True)
    if float((le * le).sum()) < 1e-12:
        return ""
    factor = float((le * la).sum() / (le * le).sum())  # least squares: la ~ factor * le
    if abs(factor - 1) > 0.05 and torch.allclose(la, factor * le, atol=1e-3, rtol=1e-3):
        return (f"; your scores are {factor:.3g} times the expected ones: check the scale, "
                f"1/sqrt(Dh) with Dh = W_q.shape[1] (the features of one query)")
    return ""


def _variants(rng):
    B, L, D = rng.randint(1, 3), rng.randint(1, 7), rng.randint(2, 12)
    Dh, Dv = rng.randint(1, 9), rng.randint(1, 5)
    x = torch.randn(B, L, D)
    W_q, W_k, W_v = torch.randn(D, Dh), torch.randn(D, Dh), torch.randn(D, Dv)
    return [
        variant(f"x {(B, L, D)}, Dh = {Dh}, Dv = {Dv}", (x, W_q, W_k, W_v)),
        variant(f"x {(B, L, D)}, W_k shared", (x.clone(), W_q.clone())),
    ]


register(
    "attention_head",
    reference=_attention_head,
    cases=_head_cases,
    hint="query = x @ W_q; key = x @ W_k (or the query itself when W_k is None); value = "
    "x @ W_v (or x itself when W_v is None); weights = softmax(query @ key.transpose(-2, -1) / "
    "sqrt(Dh), dim=-1) where Dh = W_q.shape[1]; return (weights @ value, weights).",
    compare=_compare_head,
    variants=_variants,
    forbidden=[scaled_dot_product_attention,
               "torch.nn.functional.scaled_dot_product_attention",
               functional._attention],
)

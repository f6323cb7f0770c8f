"""The check of chapter 07's first coding exercise (the attention explorer): a
previous-token head by hand.

The reader writes ``fn(seq_len) -> (W_q, W_k)``: two (L, L) matrices, in the layout of
``nn.Linear.weight`` (q = W_q @ x), that make every token attend to the one before it when
token i is the one-hot vector of position i. Checked by a score: row i must put more than 0.9
of its weight on key i - 1, for every i >= 1.

Shapes: L tokens; the one-hot inputs make d_model = d_head = L (one head).
"""

import math

import torch

from mha.functional import scaled_dot_product_attention
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant

THRESHOLD = 0.9


def previous_token_weights(W_q, W_k):
    """Attention weights (L, L) of one head whose inputs are the one-hot positions of L tokens."""
    x = torch.eye(W_q.size(1))  # (L, L): row i is token i, the one-hot vector of position i
    q, k = x @ W_q.T, x @ W_k.T  # (L, L) @ (L, L) -> (L, L), as nn.Linear computes them
    _, weights = scaled_dot_product_attention(q, k, x)  # scale 1/sqrt(L)
    return weights


def reference_previous_token(seq_len, strength=6.0):
    """A solution: W_q = c*I reads the position, W_k moves it one slot on (k_j points at j + 1)."""
    c = math.sqrt(strength * math.sqrt(seq_len))  # a match adds ``strength`` to the scaled score
    W_q = c * torch.eye(seq_len)
    W_k = c * torch.eye(seq_len).roll(1, dims=0)  # column j has its c in row j + 1 (mod L)
    return W_q, W_k


def _compare_previous_token(expected, actual):
    if not isinstance(actual, (tuple, list)) or len(actual) != 2:
        return "return a pair (W_q, W_k)"
    expected_shape = tuple(expected[0].shape)  # (L, L)
    W_q, W_k = actual
    for name, m in (("W_q", W_q), ("W_k", W_k)):
        if not isinstance(m, torch.Tensor) or tuple(m.shape) != expected_shape:
            got = tuple(m.shape) if isinstance(m, torch.Tensor) else type(m).__name__
            return f"{name} must be a tensor of shape {expected_shape}; got {got}"
    weights = previous_token_weights(W_q.detach().float().cpu(), W_k.detach().float().cpu())
    for i in range(1, weights.size(0)):
        w_prev = weights[i, i - 1].item()
        if not w_prev > THRESHOLD:
            top = int(weights[i].argmax())
            return (f"row {i} (the query of token {i}) puts {w_prev:.3f} of its weight on token "
                    f"{i - 1}, needs more than {THRESHOLD}; its largest weight ({weights[i, top]:.3f})"
                    f" is on token {top}")
    return None


def _variants(rng):
    sizes = sorted({rng.choice([3, 4, 6, 7, 8, 10, 11, 12, 13, 14, 15])
                    for _ in range(2)})
    return [variant(f"{n} tokens", (n,)) for n in sizes]


register(
    "pattern_previous_token",
    reference=reference_previous_token,
    cases=lambda: [Case(f"{n} tokens", args=(n,)) for n in (2, 5, 9, 16)],
    compare=_compare_previous_token,
    hint="token i is the one-hot e_i and q = W_q @ e_i is column i of W_q. Make q_i point at "
    "slot i (W_q = c * I) and k_j point at slot j + 1 (put c at row j + 1, column j of W_k); "
    "the score c*c is divided by sqrt(L), so pick c large enough (c = 5 passes up to 16 "
    "tokens).",
    variants=_variants,
    forbidden=[reference_previous_token],
)


"""Checks for chapter 08 (what trained heads learn): scoring heads from their attention weights.

Shapes: B batch, H heads, Lq/Lk query/key lengths, L = Lq = Lk (see ``mha.functional``).
"""

import torch

from mha.masks import causal_mask
from mha_book.exercises import Case, register
from mha_book.tasks import attention_entropy, pattern_score


def _rows(shape, *, seed, sharpness=1.0, allowed=None):
    """Random attention weights of ``shape`` (B, H, Lq, Lk); ``allowed`` zeroes blocked keys and
    gives all-zero rows where a query may attend to nothing."""
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(shape, generator=g) * sharpness
    if allowed is None:
        return scores.softmax(-1)
    any_key = allowed.any(-1, keepdim=True)
    weights = scores.masked_fill(~(allowed | ~any_key), float("-inf")).softmax(-1)
    return weights.masked_fill(~allowed, 0.0)


def _entropy_cases():
    one_hot = torch.zeros(1, 2, 4, 4)
    one_hot[0, 0] = torch.eye(4)
    one_hot[0, 1, :, 0] = 1.0  # every query on key 0
    padded = torch.ones(2, 1, 6, 6, dtype=torch.bool)
    padded[1, :, 4:] = False  # the second sequence: queries 4 and 5 are padding, may see nothing
    padded[1, :, :, 4:] = False
    return [
        Case("uniform weights over 9 keys: every head has entropy log 9",
             args=(torch.full((2, 4, 9, 9), 1 / 9),)),
        Case("one-hot rows (0 log 0 counts as 0): entropy 0, not NaN", args=(one_hot,)),
        Case("random weights, B=3, H=2, 12 queries x 9 keys (cross-attention)",
             args=(_rows((3, 2, 12, 9), seed=1),)),
        Case("causal weights (row i sees keys 0..i), 5 heads",
             args=(_rows((2, 5, 7, 7), seed=2, sharpness=3.0, allowed=causal_mask(7)),)),
        Case("padding: all-zero rows are left out of the mean",
             args=(_rows((2, 3, 6, 6), seed=3, allowed=padded),)),
    ]


register(
    "attention_entropy",
    reference=attention_entropy,
    cases=_entropy_cases,
    hint="Per row: -(p * log p).sum(-1) with 0 log 0 = 0 (torch.special.xlogy(p, p) does that); "
    "then average over the batch and the queries, skipping rows whose weights sum to 0; "
    "return one value per head, shape (H,).",
)


def _previous_score(weights):
    L = weights.size(-1)
    target = torch.zeros(L, L, dtype=torch.bool, device=weights.device)
    target[torch.arange(1, L), torch.arange(L - 1)] = True  # query i -> key i - 1
    return pattern_score(weights, target)


def _previous_cases():
    shifted = torch.zeros(1, 2, 5, 5)
    shifted[0, 0, 1:, :-1] = torch.eye(4)  # head 0: a perfect previous-token head
    shifted[0, 0, 0, 0] = 1.0
    shifted[0, 1] = 1 / 5  # head 1: uniform
    return [
        Case("head 0 is a perfect previous-token head, head 1 is uniform (query 0 has no "
             "previous token and is left out)", args=(shifted,)),
        Case("random weights, B=4, H=3, L=8", args=(_rows((4, 3, 8, 8), seed=4),)),
        Case("causal weights, B=2, H=2, L=6",
             args=(_rows((2, 2, 6, 6), seed=5, sharpness=2.0, allowed=causal_mask(6)),)),
    ]


register(
    "previous_token_score",
    reference=_previous_score,
    cases=_previous_cases,
    hint="For queries i = 1 .. L-1 take weights[..., i, i - 1] (e.g. torch.diagonal(weights, "
    "offset=-1, dim1=-2, dim2=-1)), then average over the batch and those queries: shape (H,).",
)

"""The check of chapter 02's first coding exercise: the masked softmax.

The reader writes ``fn(scores, valid_lens)``: scores (B, Lq, Lk), valid_lens None, (B,) or
(B, Lq) -> weights (B, Lq, Lk); keys at index >= the valid length get 0 and a valid length of 0
gives a zero row.
"""

import torch

from mha import functional, masks
from mha.functional import masked_softmax
from mha_book.exercises import Case, register
from mha_book.exercises._shared import ATTENTION, as_tensor_message, first_difference, variant


def _masked_softmax_cases():
    return [
        Case("no valid_lens: a plain softmax over the keys", args=(torch.randn(2, 3, 4), None)),
        Case("valid_lens (B,) = [2, 3]: one length per sequence",
             args=(torch.randn(2, 2, 4), torch.tensor([2, 3]))),
        Case("valid_lens (B, Lq) = [[1, 3], [2, 4]]: one length per query",
             args=(torch.randn(2, 2, 4), torch.tensor([[1, 3], [2, 4]]))),
        Case("a valid length of 0 (a fully masked row) gives all-zero weights",
             args=(torch.randn(2, 3, 5), torch.tensor([0, 2]))),
        Case("a valid length of 0 for one query only",
             args=(torch.randn(1, 3, 4), torch.tensor([[2, 0, 4]]))),
        Case("valid lengths equal to Lk mask nothing",
             args=(torch.randn(3, 2, 6), torch.tensor([6, 6, 6]))),
        Case("large scores (around 100) stay finite",
             args=(100 * torch.randn(2, 3, 4), torch.tensor([3, 1]))),
    ]


def _compare_masked(expected, actual):
    message = as_tensor_message(actual, expected)
    if message:
        return message
    actual = actual.detach().cpu().double()
    expected = expected.detach().cpu().double()
    if bool(torch.isnan(actual).any()):
        return ("your weights contain NaN: a row whose keys are all masked gives NaN when you fill "
                "with -inf (exp(-inf) / 0); such a row must come out as zeros")
    zero_rows = expected.sum(dim=-1) == 0  # rows with a valid length of 0
    if bool(zero_rows.any()):
        rows = actual[zero_rows]
        if bool(torch.allclose(rows, torch.full_like(rows, 1.0 / rows.size(-1)))):
            return ("a row with valid length 0 must be all zeros, but yours gives every key the "
                    f"weight 1/{rows.size(-1)}: filling the masked scores with a large negative "
                    "number (like -1e6) and taking the softmax attends uniformly to the padding")
    masked = expected == 0
    if bool((actual[masked].abs() > 1e-6).any()):
        return ("a key at index >= its valid length got a nonzero weight; mask every key j with "
                "j >= valid_len (compare torch.arange(Lk) with valid_lens)")
    return first_difference(expected, actual, atol=1e-5, rtol=1e-4)


def _variants(rng):
    B, Lq, Lk = rng.randint(1, 3), rng.randint(1, 5), rng.randint(2, 8)
    per_seq = torch.tensor([rng.randint(0, Lk) for _ in range(B)])
    per_query = torch.tensor([[rng.randint(0, Lk) for _ in range(Lq)]
                              for _ in range(B)])
    scores = torch.randn(B, Lq, Lk) * rng.randint(1, 10)
    return [
        variant(f"scores {(B, Lq, Lk)}, valid_lens {per_seq.tolist()}",
                (scores, per_seq)),
        variant(f"scores {(B, Lq, Lk)}, valid_lens {per_query.tolist()}",
                (scores.clone(), per_query)),
    ]


register(
    "masked_softmax",
    reference=masked_softmax,
    cases=_masked_softmax_cases,
    hint="Build a bool mask 'key index < valid length' of shape (B, Lq, Lk) (expand lengths of "
    "shape (B,) to (B, Lq) first), take the softmax over the allowed keys only, and set the "
    "blocked weights, and rows with no allowed key, to 0.",
    compare=_compare_masked,
    variants=_variants,
    forbidden=[masked_softmax, functional._softmax_allowed, functional._softmax_allowed_,
               masks._lens_to_mask, masks.valid_lens_to_mask, *ATTENTION],
)

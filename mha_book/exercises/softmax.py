"""The check of the preface's coding exercise: a numerically stable softmax.

The reader writes ``fn(x)``: the softmax of ``x`` over its last axis.
"""

import torch

from mha_book.exercises import Case, register
from mha_book.exercises._shared import ATTENTION, variant


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


def _variants(rng):
    shape = (rng.randint(1, 4), rng.randint(2, 9))
    scale = rng.randint(2, 30)
    big = torch.randn(rng.randint(2, 7)) * 20 + rng.randint(500, 900)
    return [variant(f"scores {shape} times {scale}",
                    (torch.randn(*shape) * scale,)),
            variant(f"{big.numel()} scores around {big.mean():.0f}", (big,))]


register(
    "softmax",
    reference=lambda x: torch.softmax(x, dim=-1),
    cases=_softmax_cases,
    hint="exp(x - max) / sum(exp(x - max)) over the last axis (dim=-1, keepdim=True); "
    "subtracting the row's max avoids overflow and changes nothing else.",
    variants=_variants,
    forbidden=["torch.softmax", "torch.nn.functional.softmax",
               "torch.Tensor.softmax", "torch.special.softmax",
               "torch.nn.Softmax", "torch._softmax", *ATTENTION],
)

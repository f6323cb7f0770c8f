"""Check for the coding exercise of chapter 15 (a fixed-size memory): one step of the delta rule.

===================  ======== ==============================================================
check                chapter  the reader writes
===================  ======== ==============================================================
``delta_rule_step``  15       ``fn(state, query, key, value, beta, decay)`` -> ``(output,
                              new_state)``: one token of the (gated) delta rule
===================  ======== ==============================================================

Shapes: state (B, H, Dk, Dv); query, key (B, H, Dk); value (B, H, Dv); beta (B, H); decay
(B, H), log space (<= 0), or None (no gate). The order: forget (``S * exp(decay)``), write
(``S + beta k (v - S^T k)^T``), read (``S^T q / sqrt(Dk)``). See ``mha.fixed_state``.
"""

import torch
import torch.nn.functional as F

from mha.fixed_state import (
    _delta_rule_step,
    delta_rule,
    delta_rule_step,
    gated_delta_rule,
    linear_attention,
)
from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def _reference(state, query, key, value, beta, decay):
    return delta_rule_step(state, query, key, value, beta, decay)


def _token(B, H, Dk, Dv, *, seed, unit=True, gated=True):
    """(state, query, key, value, beta, decay) for one token, seeded."""
    g = torch.Generator().manual_seed(seed)
    key = torch.randn(B, H, Dk, generator=g)
    key = F.normalize(key, dim=-1) if unit else key
    decay = -torch.rand(B, H, generator=g) if gated else None
    return (torch.randn(B, H, Dk, Dv, generator=g), torch.randn(B, H, Dk, generator=g), key,
            torch.randn(B, H, Dv, generator=g), torch.rand(B, H, generator=g), decay)


def _cases():
    empty = list(_token(2, 3, 4, 5, seed=1))
    empty[0] = torch.zeros(2, 3, 4, 5)  # the first token: nothing stored yet
    full_write = list(_token(1, 2, 4, 4, seed=2, gated=False))
    full_write[4] = torch.ones(1, 2)  # beta = 1: the pair is stored exactly
    no_write = list(_token(1, 2, 4, 4, seed=3))
    no_write[4] = torch.zeros(1, 2)  # beta = 0: only the gate acts
    forget_all = list(_token(1, 1, 3, 2, seed=4))
    forget_all[5] = torch.full((1, 1), -30.0)  # the gate wipes the state first
    return [
        Case("the first token: the state starts at zeros", args=tuple(empty)),
        Case("no gate (decay None), beta = 1", args=tuple(full_write)),
        Case("beta = 0: nothing written, the gate still decays the state",
             args=tuple(no_write)),
        Case("a gate near 0 (decay -30): the old state is forgotten before the write",
             args=tuple(forget_all)),
        Case("d_k = 6 and d_v = 3 differ: mind which axis is which",
             args=_token(2, 2, 6, 3, seed=5)),
        Case("a key that is not of length 1", args=_token(1, 2, 4, 4, seed=6, unit=False)),
    ]


def _variants(rng):
    B, H, Dk, Dv = (rng.randint(1, 2), rng.randint(1, 4), rng.randint(2, 8), rng.randint(1, 6))
    gated = rng.random() < 0.5
    return [variant(f"B {B}, H {H}, d_k {Dk}, d_v {Dv}, {'gated' if gated else 'no gate'}",
                    _token(B, H, Dk, Dv, seed=rng.randint(0, 10**6), gated=gated))]


register(
    "delta_rule_step",
    reference=_reference,
    cases=_cases,
    hint=(
        "Return (output, new_state). The state's rows are key features and its columns value "
        "features: S^T k is (state * key[..., :, None]).sum(-2). Forget first (multiply by "
        "exp(decay), skipped when decay is None), then write beta * k (v - S^T k)^T with the "
        "state after forgetting, then read S^T q / sqrt(d_k) from the new state."
    ),
    variants=_variants,
    forbidden=[delta_rule_step, _delta_rule_step, delta_rule, gated_delta_rule,
               linear_attention],
)

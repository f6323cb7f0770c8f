"""One attention head, in the three forms the book builds up.

Shape legend: B batch, L length, D d_model, Dh d_head (see ``mha.functional``).

``variant="shared"``  scores (x W)(x W)^T / sqrt(Dh), values x itself: output (B, L, D)
``variant="qk"``      scores (x W^Q)(x W^K)^T / sqrt(Dh), values x itself: output (B, L, D)
``variant="qkv"``     scores (x W^Q)(x W^K)^T / sqrt(Dh), values x W^V: output (B, L, Dh)
"""

import math

from torch import nn

from . import _checks
from .functional import _attention

__all__ = ["AttentionHead"]

VARIANTS = ("shared", "qk", "qkv")


class AttentionHead(nn.Module):
    """One head of self-attention: forward(x (B, L, D), mask=None) with a bool mask broadcastable
    to (B, L, L), True = may attend, returns (output (B, L, Dh) or (B, L, D), weights (B, L, L)).

    Projections are bias-free ``nn.Linear`` attributes: ``W`` for "shared", ``W_q`` and ``W_k``
    for "qk", and ``W_q``, ``W_k``, ``W_v`` for "qkv".
    """

    def __init__(self, d_model, d_head, *, variant="qkv"):
        super().__init__()
        d_model, d_head, variant = _check_head_args(d_model, d_head, variant)
        self.d_model, self.d_head, self.variant = d_model, d_head, variant
        if variant == "shared":
            self.W = nn.Linear(d_model, d_head, bias=False)
        else:
            self.W_q = nn.Linear(d_model, d_head, bias=False)
            self.W_k = nn.Linear(d_model, d_head, bias=False)
        if variant == "qkv":
            self.W_v = nn.Linear(d_model, d_head, bias=False)

    def forward(self, x, *, mask=None):
        """x (B, L, D), mask bool broadcastable to (B, L, L) -> (output, weights (B, L, L))."""
        _check_head_input(self, x, mask)
        if self.variant == "shared":
            q = k = self.W(x)  # (B, L, D) -> (B, L, Dh)
        else:
            q, k = self.W_q(x), self.W_k(x)  # (B, L, D) -> (B, L, Dh)
        v = self.W_v(x) if self.variant == "qkv" else x  # (B, L, Dh) or (B, L, D)
        return _attention(q, k, v, mask, scale=1 / math.sqrt(self.d_head))  # (B, L, Dh|D)

    def extra_repr(self):
        return f"d_model={self.d_model}, d_head={self.d_head}, variant={self.variant!r}"


def _check_head_args(d_model, d_head, variant):
    d_model = _checks.check_positive_int("d_model", d_model)
    d_head = _checks.check_positive_int("d_head", d_head)
    return d_model, d_head, _checks.check_choice("variant", variant, VARIANTS)


def _check_head_input(head, x, mask):
    """x (B, L, D) in the weights' dtype and device; mask bool, broadcastable to (B, L, L)."""
    weight = next(head.parameters())
    _checks.check_module_input("x", x, weight, head.d_model, "d_model")
    if mask is not None:
        B, L, _ = x.shape
        _checks.check_bool_mask(mask, (B, L, L), "(B, L, L)", x.device)

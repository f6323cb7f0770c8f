"""Multi-head attention as a loop over separate heads: the readable version of the layer.

Shape legend: B batch, H heads, L length, D d_model, Dh d_head = D / H (see ``mha.functional``).
"""

import torch
from torch import nn

from . import _checks
from .head import AttentionHead
from .layer import MultiHeadAttention
from .masks import _causal_mask

__all__ = ["MultiHeadAttentionLoop"]


class MultiHeadAttentionLoop(nn.Module):
    """H independent ``AttentionHead``s ("qkv"), their outputs concatenated, then ``W_o``.

    forward(x (B, L, D), mask=None, is_causal=False) with a bool mask broadcastable to (B, L, L)
    returns (output (B, L, D), weights (B, H, L, L)).
    """

    def __init__(self, d_model, num_heads):
        super().__init__()
        d_model, num_heads = _check_loop_args(d_model, num_heads)
        self.d_model, self.num_heads, self.d_head = d_model, num_heads, d_model // num_heads
        self.heads = nn.ModuleList(AttentionHead(d_model, self.d_head) for _ in range(num_heads))
        self.W_o = nn.Linear(d_model, d_model, bias=False)

    def forward(self, x, *, mask=None, is_causal=False):
        """x (B, L, D) -> (output (B, L, D), weights (B, H, L, L)); every head gets ``mask``."""
        _check_loop_input(self, x, mask, is_causal)
        if is_causal:
            causal = _causal_mask(x.size(1), x.size(1), device=x.device)  # (L, L)
            mask = causal if mask is None else mask & causal
        outputs, weights = zip(*(head(x, mask=mask) for head in self.heads))
        out = torch.cat(outputs, dim=-1)  # H x (B, L, Dh) -> (B, L, D)
        return self.W_o(out), torch.stack(weights, dim=1)  # H x (B, L, L) -> (B, H, L, L)

    def to_batched(self):
        """A ``MultiHeadAttention`` holding the same weights: W_q is the heads' W_q stacked."""
        w = self.W_o.weight
        layer = MultiHeadAttention(self.d_model, self.num_heads, device=w.device, dtype=w.dtype)
        with torch.no_grad():
            for name in ("W_q", "W_k", "W_v"):
                heads = [getattr(head, name).weight for head in self.heads]  # H x (Dh, D)
                stacked = torch.cat(heads)  # (H*Dh, D): head i (from 0) at rows i*Dh..(i+1)*Dh-1
                getattr(layer, name).weight.copy_(stacked)
            layer.W_o.weight.copy_(w)
        return layer.train(self.training)


def _check_loop_args(d_model, num_heads):
    """Positive ints, d_model divisible by num_heads: returns them as ints."""
    d_model, num_heads, *_ = _checks.check_layer_args(d_model, num_heads, num_heads, None, None, 0)
    return d_model, num_heads


def _check_loop_input(loop, x, mask, is_causal):
    """x (B, L, D) in the weights' dtype and device; mask bool, broadcastable to (B, L, L)."""
    _checks.check_module_input("x", x, loop.W_o.weight, loop.d_model, "d_model")
    _checks.check_bool("is_causal", is_causal)
    if mask is not None:
        B, L, _ = x.shape
        _checks.check_bool_mask(mask, (B, L, L), "(B, L, L)", x.device)

"""Shared fixtures for the tests: seeds, a hypothesis profile, and an explicit reference layer."""

import math

import pytest
import torch
from hypothesis import HealthCheck, settings

# property tests: no deadline (CPU time is shared), few but reproducible examples
settings.register_profile(
    "mha", deadline=None, max_examples=20, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("mha")


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def explicit_attention(layer, query, key, value, allowed=None, head_mask=None):
    """Multi-head attention written out from the equations with einsum, as an independent
    reference for ``mha.MultiHeadAttention``: returns (output (B, Lq, D), weights (B, H, Lq, Lk))."""
    H, Hkv, Dh = layer.num_heads, layer.num_kv_heads, layer.d_head
    q = layer.W_q(query).unflatten(-1, (H, Dh))  # (B, Lq, H, Dh)
    k = layer.W_k(key).unflatten(-1, (Hkv, Dh)).repeat_interleave(H // Hkv, dim=2)  # (B, Lk, H, Dh)
    v = layer.W_v(value).unflatten(-1, (Hkv, Dh)).repeat_interleave(H // Hkv, dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(Dh)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = scores.softmax(-1).nan_to_num(0.0)  # fully blocked rows -> 0
    out = torch.einsum("bhqk,bkhd->bqhd", weights, v)  # (B, Lq, H, Dh)
    if head_mask is not None:
        out = out * head_mask.reshape(-1, 1, H, 1)
    return layer.W_o(out.flatten(2)), weights  # (B, Lq, H, Dh) -> (B, Lq, D)


@pytest.fixture(scope="session")
def explicit():
    return explicit_attention

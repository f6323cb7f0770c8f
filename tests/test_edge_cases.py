"""Edge cases that must keep working (the other side of ``test_bad_input.py``): L = 0 and 1,
Lq != Lk, B = 0, all-zero valid_lens, float16/bfloat16 on CPU, requires_grad, fully masked rows
with no NaN, numpy integers where an int is meant; and the decisions on 3-D masks,
``record_attention`` and ``RelativeMultiHeadAttention.from_torch``.

Shapes: B batch, H heads, Lq/Lk query/key lengths, D d_model.
"""

import re

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

import mha


def both_paths(layer, *args, **kwargs):
    """(output, weights) of the explicit path, after asserting the fused path's output equals it."""
    explicit, weights = layer(*args, need_weights=True, **kwargs)
    fused, none = layer(*args, **kwargs)
    assert none is None
    assert explicit.shape == fused.shape
    assert torch.allclose(explicit, fused, atol=1e-5)
    return explicit, weights


@pytest.fixture
def layer():
    return mha.MultiHeadAttention(8, 2).eval()


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("length", [0, 1])
def test_lengths_zero_and_one_agree_on_both_paths(layer, length, is_causal):
    out, weights = both_paths(layer, torch.randn(2, length, 8), is_causal=is_causal)
    assert out.shape == (2, length, 8) and weights.shape == (2, 2, length, length)
    if length == 1:
        assert torch.equal(weights, torch.ones(2, 2, 1, 1))


@given(st.integers(1, 6), st.integers(1, 6), st.booleans())
def test_cross_attention_lengths_differ(num_queries, num_keys, is_causal):
    layer = mha.MultiHeadAttention(8, 2).eval()
    out, weights = both_paths(layer, torch.randn(2, num_queries, 8),
                              torch.randn(2, num_keys, 8), is_causal=is_causal)
    assert weights.shape == (2, 2, num_queries, num_keys)
    rows = weights.sum(-1)
    assert torch.allclose(rows, torch.ones_like(rows), atol=1e-6)


def test_empty_batch(layer):
    x = torch.randn(0, 4, 8)
    out, weights = both_paths(layer, x, valid_lens=torch.zeros(0, dtype=torch.long))
    assert out.shape == (0, 4, 8) and weights.shape == (0, 2, 4, 4)
    out, _ = both_paths(layer, x, is_causal=True, head_mask=torch.ones(2))
    assert out.shape == (0, 4, 8)


def test_all_zero_valid_lens_give_zero_weights_and_no_nan(layer):
    x = torch.randn(2, 4, 8)
    out, weights = both_paths(layer, x, valid_lens=torch.zeros(2, dtype=torch.long))
    assert torch.equal(weights, torch.zeros_like(weights)) and not out.isnan().any()
    assert torch.equal(mha.masked_softmax(torch.randn(2, 3, 4), torch.tensor([0, 0])),
                       torch.zeros(2, 3, 4))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_on_cpu_with_fully_masked_rows(dtype):
    layer = mha.MultiHeadAttention(8, 2, dtype=dtype).eval()
    x = torch.randn(2, 4, 8, dtype=dtype)
    lens = torch.tensor([0, 2])
    out, weights = layer(x, valid_lens=lens, need_weights=True)
    fused, _ = layer(x, valid_lens=lens)
    for t in (out, weights, fused):
        assert t.dtype == dtype and not t.isnan().any()
    assert torch.equal(weights[0], torch.zeros_like(weights[0]))
    blocked = torch.zeros(4, 4, dtype=torch.bool)
    o, w = mha.scaled_dot_product_attention(x, x, x, blocked)
    assert not o.isnan().any() and torch.equal(w, torch.zeros_like(w))


@pytest.mark.parametrize("need_weights", [False, True])
def test_gradients_are_finite_through_fully_masked_rows(layer, need_weights):
    x = torch.randn(2, 4, 8, requires_grad=True)
    out, _ = layer(x, valid_lens=torch.tensor([0, 2]), need_weights=need_weights)
    out.sum().backward()
    assert torch.isfinite(x.grad).all() and x.grad[1].abs().sum() > 0


def test_sdpa_keeps_the_callers_scores_and_broadcasts_batch_dims():
    q, k, v = torch.randn(3, 1, 4, 8), torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 3)
    out, weights = mha.scaled_dot_product_attention(q, k, v)
    assert out.shape == (3, 2, 4, 3) and weights.shape == (3, 2, 4, 5)
    reference = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(out, reference, atol=1e-6)
    # a mask wider than the query/key batch (it broadcasts with value's batch)
    out, _ = mha.scaled_dot_product_attention(torch.randn(4, 8), torch.randn(5, 8),
                                              torch.randn(2, 5, 3),
                                              torch.ones(2, 4, 5, dtype=torch.bool))
    assert out.shape == (2, 4, 3)
    scores = torch.randn(2, 3, 4)
    before = scores.clone()
    mha.masked_softmax(scores, torch.tensor([1, 2]))
    assert torch.equal(scores, before)  # the caller's scores are not overwritten


def test_numpy_integers_and_scalars_are_accepted_where_an_int_or_number_is_meant():
    layer = mha.MultiHeadAttention(np.int64(8), np.int64(2), num_kv_heads=np.int32(1))
    assert type(layer.d_model) is int and layer.d_head == 4
    assert mha.causal_mask(np.int64(3)).shape == (3, 3)
    assert mha.split_heads(torch.randn(1, 2, 8), np.int64(2)).shape == (1, 2, 2, 4)
    out, _ = mha.scaled_dot_product_attention(torch.randn(4, 8), torch.randn(5, 8),
                                              torch.randn(5, 3), scale=np.float32(0.5))
    assert out.shape == (4, 3)
    for heads in (torch.tensor([0, 1]), np.array([0, 1]), range(2), (1, 0)):
        assert mha.MultiHeadAttention(8, 4).prune_heads(heads).num_heads == 2


# --- decisions ------------------------------------------------------------------------------


def test_a_3d_mask_is_rejected_in_the_layer_with_both_4d_spellings():
    """Decision: a 3-D mask in a layer is ambiguous ((B, Lq, Lk) per sequence or (H, Lq, Lk) per
    head broadcast alike when B == H), so it is refused unless its first axis is 1."""
    layer = mha.MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    per_sequence = torch.rand(2, 5, 5) > 0.3
    per_sequence[..., 0] = True
    with pytest.raises(ValueError, match=re.escape("mask[:, None] for (B, 1, Lq, Lk)")) as info:
        layer(x, mask=per_sequence)
    assert "mask[None] for (1, H, Lq, Lk)" in str(info.value)
    # the two 4-D spellings are accepted and mean different things
    a, _ = layer(x, mask=per_sequence[:, None])
    b, _ = layer(x, mask=per_sequence[None])
    assert not torch.allclose(a, b)
    # a 3-D mask with a leading 1 is unambiguous
    c, _ = both_paths(layer.eval(), x, mask=per_sequence[:1])
    d, _ = layer(x, mask=per_sequence[0])
    assert torch.allclose(c, d)


def test_record_attention_refuses_a_model_without_mha_layers():
    """Decision: an error, not an empty dict (and a hint for torch's own layer)."""
    with pytest.raises(ValueError, match="contains no attention layer"):
        with mha.record_attention(nn.Sequential(nn.Linear(2, 2))):
            pass
    with pytest.raises(ValueError, match="from_torch"):
        with mha.record_attention(nn.Sequential(nn.MultiheadAttention(8, 2))):
            pass


@pytest.mark.parametrize("kdim", [None, 6])
def test_relative_from_torch_is_the_torch_function_with_zero_tables(kdim):
    """Decision: RelativeMultiHeadAttention.from_torch zeroes both relative tables."""
    torch_layer = nn.MultiheadAttention(8, 2, batch_first=True, kdim=kdim, vdim=kdim).eval()
    ours = mha.RelativeMultiHeadAttention.from_torch(torch_layer, max_relative_position=3).eval()
    assert ours.max_relative_position == 3
    assert torch.equal(ours.relative_key.weight, torch.zeros(7, 4))
    assert torch.equal(ours.relative_value.weight, torch.zeros(7, 4))
    x, memory = torch.randn(2, 5, 8), torch.randn(2, 4, kdim or 8)
    expected, _ = torch_layer(x, memory, memory)
    assert torch.allclose(ours(x, memory)[0], expected, atol=1e-6)


def test_prune_heads_refuses_a_string():
    with pytest.raises(TypeError, match="a str is read character by character"):
        mha.MultiHeadAttention(8, 4).prune_heads("01")

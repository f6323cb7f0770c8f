"""mha.MultiHeadAttention.from_torch computes what torch.nn.MultiheadAttention computes."""

import pytest
import torch
from torch import nn

import mha


def _pair(bias=True, **kw):
    ref = nn.MultiheadAttention(32, 4, batch_first=True, bias=bias, **kw).eval()
    return ref, mha.MultiHeadAttention.from_torch(ref)


def _assert_parity(ref, layer, q, k, v, torch_kw, mha_kw):
    expected, expected_w = ref(q, k, v, average_attn_weights=False, **torch_kw)
    for need_weights in (False, True):
        out, w = layer(q, k, v, need_weights=need_weights, **mha_kw)
        torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(w, expected_w, atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("bias", [False, True])
def test_self_attention(bias):
    ref, layer = _pair(bias)
    x = torch.randn(3, 7, 32)
    _assert_parity(ref, layer, x, x, x, {}, {})


def test_cross_attention_12_queries_over_9_keys():
    ref, layer = _pair()
    q, kv = torch.randn(2, 12, 32), torch.randn(2, 9, 32)
    _assert_parity(ref, layer, q, kv, kv, {}, {})


def test_kdim_vdim():
    ref, layer = _pair(kdim=10, vdim=6)
    assert (layer.kdim, layer.vdim) == (10, 6)
    q, k, v = torch.randn(2, 12, 32), torch.randn(2, 9, 10), torch.randn(2, 9, 6)
    _assert_parity(ref, layer, q, k, v, {}, {})


def test_padding_via_valid_lens_and_via_mask():
    ref, layer = _pair()
    q, kv = torch.randn(3, 12, 32), torch.randn(3, 9, 32)
    lens = torch.tensor([9, 4, 1])
    key_padding_mask = mha.convert_mask(lens, source="valid_lens", target="nn_mha",
                                        num_keys=9)[:, 0, 0]  # (B, 1, 1, Lk) -> (B, Lk)
    torch_kw = {"key_padding_mask": key_padding_mask}
    _assert_parity(ref, layer, q, kv, kv, torch_kw, {"valid_lens": lens})
    mask = ~key_padding_mask[:, None, None, :]  # (B, Lk) -> (B, 1, 1, Lk), True = may attend
    _assert_parity(ref, layer, q, kv, kv, torch_kw, {"mask": mask})


def test_arbitrary_mask():
    ref, layer = _pair()
    q, kv = torch.randn(2, 12, 32), torch.randn(2, 9, 32)
    allowed = torch.rand(12, 9) > 0.3
    allowed[:, 0] = True  # torch gives NaN for fully blocked rows; keep one key per row
    _assert_parity(ref, layer, q, kv, kv, {"attn_mask": ~allowed}, {"mask": allowed})


def test_causal():
    ref, layer = _pair()
    x = torch.randn(2, 8, 32)
    blocked = ~mha.causal_mask(8)
    _assert_parity(ref, layer, x, x, x, {"attn_mask": blocked, "is_causal": True},
                   {"is_causal": True})


def test_gradients_match():
    ref, layer = _pair()
    x1 = torch.randn(2, 6, 32, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    ref(x1, x1, x1)[0].pow(2).sum().backward()
    layer(x2)[0].pow(2).sum().backward()
    torch.testing.assert_close(x2.grad, x1.grad, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(layer.W_q.weight.grad, ref.in_proj_weight.grad[:32],
                               atol=1e-5, rtol=1e-4)


def test_from_torch_copies_dropout_and_mode():
    ref = nn.MultiheadAttention(32, 4, dropout=0.25, batch_first=True)
    layer = mha.MultiHeadAttention.from_torch(ref)
    assert layer.dropout == 0.25 and layer.training

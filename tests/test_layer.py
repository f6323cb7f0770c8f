import pytest
import torch

import mha


def _layer(**kw):
    return mha.MultiHeadAttention(32, 4, **kw).eval()


def test_shapes_and_defaults():
    layer = _layer()
    assert (layer.d_model, layer.num_heads, layer.num_kv_heads, layer.d_head) == (32, 4, 4, 8)
    x = torch.randn(2, 6, 32)
    out, w = layer(x)
    assert out.shape == (2, 6, 32) and w is None
    out2, w = layer(x, x, x, need_weights=True)
    assert w.shape == (2, 4, 6, 6)
    torch.testing.assert_close(out, out2)
    assert layer.W_q.bias is None and _layer(bias=True).W_o.bias is not None


@pytest.mark.parametrize("bias", [False, True])
def test_fused_equals_weights_path_equals_explicit(explicit, bias):
    layer = _layer(bias=bias)
    q, kv = torch.randn(3, 5, 32), torch.randn(3, 7, 32)
    allowed = torch.rand(3, 1, 5, 7) > 0.4
    ref, ref_w = explicit(layer, q, kv, kv, allowed)
    fused, _ = layer(q, kv, mask=allowed)
    slow, w = layer(q, kv, mask=allowed, need_weights=True)
    torch.testing.assert_close(fused, ref)
    torch.testing.assert_close(slow, ref)
    torch.testing.assert_close(w, ref_w)


def test_mask_valid_lens_and_causal_combine(explicit):
    layer = _layer()
    x = torch.randn(2, 6, 32)
    mask = torch.rand(6, 6) > 0.2
    lens = torch.tensor([4, 6])
    allowed = mask & mha.valid_lens_to_mask(lens, 6, 6)[:, None] & mha.causal_mask(6)
    ref, ref_w = explicit(layer, x, x, x, allowed)
    for need_weights in (False, True):
        out, w = layer(x, mask=mask, valid_lens=lens, is_causal=True, need_weights=need_weights)
        torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, ref_w)


def test_is_causal_flag_equals_mask():
    layer = _layer()
    x = torch.randn(2, 6, 32)
    flag, _ = layer(x, is_causal=True)
    masked, w = layer(x, mask=mha.causal_mask(6), need_weights=True)
    torch.testing.assert_close(flag, masked)
    assert (w.triu(1) == 0).all()


@pytest.mark.parametrize("need_weights", [False, True])
def test_causality_by_perturbing_the_future(need_weights):
    layer = _layer()
    x = torch.randn(1, 8, 32)
    y = x.clone()
    y[:, 5:] = torch.randn(1, 3, 32)  # change tokens 5, 6, 7
    out_x, _ = layer(x, is_causal=True, need_weights=need_weights)
    out_y, _ = layer(y, is_causal=True, need_weights=need_weights)
    torch.testing.assert_close(out_x[:, :5], out_y[:, :5])
    assert not torch.allclose(out_x[:, 5:], out_y[:, 5:])


def test_dropout_only_in_training():
    layer = mha.MultiHeadAttention(32, 4, dropout=0.5)
    x = torch.randn(2, 16, 32)
    layer.eval()
    a, wa = layer(x, need_weights=True)
    b, _ = layer(x)
    torch.testing.assert_close(a, b)
    layer.train()
    c, wc = layer(x, need_weights=True)
    d, _ = layer(x)
    assert not torch.allclose(a, c) and not torch.allclose(a, d)
    assert (wc == 0).float().mean() > 0.3 and (wa == 0).sum() == 0


@pytest.mark.parametrize("shape", [(4,), (2, 4)])
def test_head_mask(explicit, shape):
    layer = _layer()
    x = torch.randn(2, 5, 32)
    head_mask = (torch.rand(shape) > 0.5).float()
    ref, _ = explicit(layer, x, x, x, head_mask=head_mask)
    for need_weights in (False, True):
        out, _ = layer(x, head_mask=head_mask, need_weights=need_weights)
        torch.testing.assert_close(out, ref)


def test_cross_attention_with_kdim_vdim(explicit):
    layer = mha.MultiHeadAttention(32, 4, kdim=10, vdim=6, bias=True).eval()
    q, k, v = torch.randn(2, 12, 32), torch.randn(2, 9, 10), torch.randn(2, 9, 6)
    ref, ref_w = explicit(layer, q, k, v)
    out, w = layer(q, k, v, need_weights=True)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, ref_w)
    torch.testing.assert_close(layer(q, k, v)[0], ref)


@pytest.mark.parametrize("need_weights", [False, True])
def test_gradcheck_float64(need_weights):
    layer = mha.MultiHeadAttention(8, 2, num_kv_heads=1, bias=True, dtype=torch.float64)
    q = torch.randn(2, 3, 8, dtype=torch.float64, requires_grad=True)
    kv = torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True)
    lens = torch.tensor([4, 0])  # includes rows with no allowed key

    def f(q, kv):
        return layer(q, kv, valid_lens=lens, need_weights=need_weights)[0]

    assert torch.autograd.gradcheck(f, (q, kv))


def test_self_attention_packed_projection_equals_separate():
    layer = _layer(bias=True, num_kv_heads=2)
    x = torch.randn(2, 5, 32)
    packed, _ = layer(x)  # query is key is value: one packed matmul
    separate, _ = layer(x, x.clone(), x.clone())
    torch.testing.assert_close(packed, separate)


# Claims the chapters make about the layer (see appendix/claims.md).


def test_initialisation_is_the_nn_linear_default():
    """Ch 02 and 06: the package keeps nn.Linear's default init, uniform in +-1/sqrt(d_model),
    variance 1/(3 d_model), so a projection of unit-variance inputs has about a third of their
    variance (not 1, and not nn.MultiheadAttention's Xavier 1/2)."""
    torch.manual_seed(0)
    d = 512
    layer = mha.MultiHeadAttention(d, 8)
    for lin in (layer.W_q, layer.W_k, layer.W_v, layer.W_o):
        w = lin.weight
        assert w.abs().max() <= 1 / d**0.5
        assert abs(w.var().item() * 3 * d - 1) < 0.02
    x = torch.randn(4096, d)
    with torch.no_grad():
        ratio = layer.W_q(x).var().item() / x.var().item()
    assert 0.3 < ratio < 0.37
    torch_q = torch.nn.MultiheadAttention(d, 8).in_proj_weight[:d]
    assert abs(torch_q.var().item() * 2 * d - 1) < 0.02  # Xavier: 2 / (d + 3d) = 1 / (2d)


@pytest.mark.parametrize("d_model,num_heads", [(512, 8), (768, 12), (768, 1)])
def test_parameter_count_is_4_d_squared_plus_4_d_with_bias(d_model, num_heads):
    """Ch 04 and 07: 4 d_model^2 parameters without biases, whatever the number of heads, and
    4 d_model more with a bias on each of the four projections (nn.MultiheadAttention's count)."""
    with torch.device("meta"):
        plain = mha.MultiHeadAttention(d_model, num_heads)
        biased = mha.MultiHeadAttention(d_model, num_heads, bias=True)
        torch_layer = torch.nn.MultiheadAttention(d_model, num_heads)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(plain) == 4 * d_model**2
    assert count(biased) == count(torch_layer) == 4 * d_model**2 + 4 * d_model


def test_value_defaults_to_key_not_to_query():
    """Ch 05: `key` defaults to `query` and `value` to `key`, so layer(q, m) attends over m."""
    layer = _layer()
    q, m = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    torch.testing.assert_close(layer(q, m)[0], layer(q, m, m)[0])
    assert not torch.allclose(layer(q, m)[0], layer(q, m, q[:, :1].expand(2, 7, 32))[0])


def test_weights_returned_in_training_are_the_ones_after_dropout():
    """Ch 02: in training mode the returned weights are the ones that multiplied the values."""
    torch.manual_seed(3)
    layer = mha.MultiHeadAttention(16, 2, dropout=0.5).train()
    x = torch.randn(1, 6, 16)
    out, w = layer(x, need_weights=True)
    assert (w == 0).any()
    v = mha.split_heads(layer.W_v(x), 2)  # (B, H, L, Dh)
    torch.testing.assert_close(out, layer.W_o(mha.merge_heads(w @ v)))


def test_valid_lens_become_a_mask_that_broadcasts_over_heads_and_queries():
    """Ch 05: lengths (B,) give a (B, 1, 1, Lk) mask, lengths (B, Lq) a (B, 1, Lq, Lk) mask."""
    from mha.masks import combine_masks

    shape = (2, 4, 3, 6)  # (B, H, Lq, Lk)
    per_sequence = combine_masks(None, torch.tensor([2, 5]), False, shape, "cpu")
    per_query = combine_masks(None, torch.tensor([[1, 2, 3], [4, 5, 6]]), False, shape, "cpu")
    assert per_sequence.shape == (2, 1, 1, 6) and per_query.shape == (2, 1, 3, 6)
    assert per_sequence[1, 0, 0].tolist() == [True] * 5 + [False]

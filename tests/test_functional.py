import math

import pytest
import torch
import torch.nn.functional as F

import mha


def test_sdpa_matches_formula_and_torch():
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 4)
    out, w = mha.scaled_dot_product_attention(q, k, v)
    expected_w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(8), dim=-1)
    torch.testing.assert_close(w, expected_w)
    torch.testing.assert_close(out, expected_w @ v)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v))
    assert out.shape == (2, 3, 5, 4) and w.shape == (2, 3, 5, 7)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 3, 5))


def test_sdpa_mask_and_scale_match_torch():
    q, k, v = torch.randn(2, 5, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 3)
    mask = torch.rand(2, 5, 6) > 0.3
    mask[..., 0] = True
    out, w = mha.scaled_dot_product_attention(q, k, v, mask, scale=0.5)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.5)
    torch.testing.assert_close(out, ref)
    assert (w[~mask] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_row_is_zero_not_nan(dtype):
    q, k, v = (torch.randn(1, 4, 8, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.ones(4, 4, dtype=torch.bool)
    mask[2] = False  # query 2 may attend nothing
    out, w = mha.scaled_dot_product_attention(q, k, v, mask)
    assert not out.isnan().any() and not w.isnan().any()
    assert (out[0, 2] == 0).all() and (w[0, 2] == 0).all()
    torch.testing.assert_close(w[0, [0, 1, 3]].float().sum(-1), torch.ones(3), atol=1e-2, rtol=0)
    out.float().sum().backward()
    assert all(torch.isfinite(t.grad).all() for t in (q, k, v))


def test_dropout_scales_kept_weights():
    q = k = v = torch.randn(1, 64, 4)
    _, w0 = mha.scaled_dot_product_attention(q, k, v)
    _, w = mha.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    dropped = w == 0
    assert 0.3 < dropped.float().mean() < 0.7
    torch.testing.assert_close(w[~dropped], 2 * w0[~dropped])


def test_masked_softmax_valid_lens_1d_and_2d():
    scores = torch.randn(2, 3, 5)
    w = mha.masked_softmax(scores, torch.tensor([2, 5]))
    torch.testing.assert_close(w[0, :, :2], scores[0, :, :2].softmax(-1))
    assert (w[0, :, 2:] == 0).all()
    torch.testing.assert_close(w[1], scores[1].softmax(-1))
    w = mha.masked_softmax(scores, torch.tensor([[1, 2, 0], [5, 4, 3]]))
    assert (w[0, 2] == 0).all()  # a valid length of 0 gives a zero row
    torch.testing.assert_close(w[0, 0], torch.tensor([1.0, 0, 0, 0, 0]))
    torch.testing.assert_close(w[1, 2, :3], scores[1, 2, :3].softmax(-1))
    torch.testing.assert_close(mha.masked_softmax(scores), scores.softmax(-1))


def test_masked_softmax_heads_axis_broadcasts():
    scores = torch.randn(2, 4, 3, 5)  # (B, H, Lq, Lk)
    lens = torch.tensor([3, 1])
    w = mha.masked_softmax(scores, lens)
    flat = mha.masked_softmax(scores.flatten(0, 1), lens.repeat_interleave(4))  # d2l's way
    torch.testing.assert_close(w.flatten(0, 1), flat)


def test_split_merge_heads():
    x = torch.arange(2 * 3 * 12.0).reshape(2, 3, 12)
    heads = mha.split_heads(x, 4)
    assert heads.shape == (2, 4, 3, 3)
    for h in range(4):
        torch.testing.assert_close(heads[:, h], x[..., h * 3:(h + 1) * 3])
    torch.testing.assert_close(mha.merge_heads(heads), x)


def test_sdpa_returns_the_weights_after_dropout():
    """Ch 02: the weights returned are the ones that multiplied the values, after dropout."""
    q, k, v = torch.randn(2, 8, 4), torch.randn(2, 8, 4), torch.randn(2, 8, 5)
    out, w = mha.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert (w == 0).any()
    torch.testing.assert_close(out, w @ v)

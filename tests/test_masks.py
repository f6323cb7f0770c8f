import pytest
import torch

import mha
from mha.masks import combine_masks


def test_causal_mask():
    m = mha.causal_mask(3)
    assert m.dtype == torch.bool and m.shape == (3, 3)
    assert torch.equal(m, torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=torch.bool))
    wide = mha.causal_mask(2, 4)  # top-left aligned, like SDPA's is_causal
    assert torch.equal(wide, torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0]], dtype=torch.bool))
    assert mha.causal_mask(2, device="cpu").device.type == "cpu"


def test_valid_lens_to_mask_shapes():
    m = mha.valid_lens_to_mask(torch.tensor([1, 3]), 2, 4)
    assert m.shape == (2, 2, 4)
    assert torch.equal(m[0], torch.tensor([[1, 0, 0, 0]] * 2, dtype=torch.bool))
    m = mha.valid_lens_to_mask(torch.tensor([[1, 2], [0, 4]]), 2, 4)
    assert torch.equal(m[1], torch.tensor([[0, 0, 0, 0], [1, 1, 1, 1]], dtype=torch.bool))


@pytest.mark.parametrize("a", ["sdpa", "nn_mha", "zero_blocked"])
@pytest.mark.parametrize("b", ["sdpa", "nn_mha", "zero_blocked"])
def test_round_trip_between_boolean_conventions(a, b):
    allowed = torch.rand(2, 1, 5, 6) > 0.5
    source = mha.convert_mask(allowed, source="sdpa", target=a)
    there = mha.convert_mask(source, source=a, target=b)
    back = mha.convert_mask(there, source=b, target="sdpa")
    assert back.dtype == torch.bool and torch.equal(back, allowed)


def test_convention_meanings():
    allowed = torch.tensor([[True, False]])
    assert torch.equal(mha.convert_mask(allowed, source="sdpa", target="nn_mha"), ~allowed)
    assert torch.equal(mha.convert_mask(allowed, source="sdpa", target="zero_blocked"),
                       torch.tensor([[1, 0]]))


def test_valid_lens_round_trip_1d_and_2d():
    lens = torch.tensor([3, 0, 5])
    m = mha.convert_mask(lens, source="valid_lens", target="sdpa", num_keys=5)
    assert m.shape == (3, 1, 1, 5)
    assert torch.equal(mha.convert_mask(m, source="sdpa", target="valid_lens"), lens)
    lens2 = torch.tensor([[1, 2, 3], [4, 4, 0]])
    m2 = mha.convert_mask(lens2, source="valid_lens", target="nn_mha", num_keys=4)
    assert m2.shape == (2, 1, 3, 4)
    assert torch.equal(mha.convert_mask(m2, source="nn_mha", target="valid_lens"), lens2)
    # a causal mask is a prefix mask: query i sees i + 1 keys (d2l's decoder valid_lens)
    causal = mha.causal_mask(4).expand(2, 4, 4)
    assert torch.equal(mha.convert_mask(causal, source="sdpa", target="valid_lens"),
                       torch.tensor([[1, 2, 3, 4]] * 2))
    # key_padding_mask shape (B, Lk), True = blocked
    kpm = torch.tensor([[False, False, True], [False, True, True]])
    assert torch.equal(mha.convert_mask(kpm, source="nn_mha", target="valid_lens"),
                       torch.tensor([2, 1]))


def test_non_prefix_mask_to_valid_lens_raises():
    with pytest.raises(ValueError, match="cannot be expressed as valid_lens.*prefix"):
        mha.convert_mask(torch.tensor([[True, False, True]]), source="sdpa", target="valid_lens")


def test_combine_masks():
    mask = torch.tensor([True, True, False, True])  # (Lk,)
    got = combine_masks(mask, torch.tensor([3, 4]), True, (2, 1, 4, 4), "cpu")
    expected = mask & mha.valid_lens_to_mask(torch.tensor([3, 4]), 4, 4)[:, None] \
        & mha.causal_mask(4)
    assert torch.equal(got.expand(2, 1, 4, 4), expected)
    assert combine_masks(None, None, False, (2, 1, 4, 4), "cpu") is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("need_weights", [False, True])
def test_layer_fully_masked_rows_no_nan(dtype, need_weights):
    layer = mha.MultiHeadAttention(16, 4, bias=True, dtype=dtype)
    x = torch.randn(2, 5, 16, dtype=dtype, requires_grad=True)
    lens = torch.tensor([[2, 0, 3, 0, 5], [0, 0, 1, 1, 1]])  # some queries see no key
    out, _ = layer(x, valid_lens=lens, need_weights=need_weights)
    assert not out.isnan().any()
    blocked = lens == 0
    expected = layer.W_o.bias.expand(int(blocked.sum()), 16)  # zero heads -> W_o's bias only
    torch.testing.assert_close(out[blocked], expected)
    out.float().sum().backward()
    assert torch.isfinite(x.grad).all()
    assert all(torch.isfinite(p.grad).all() for p in layer.parameters())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_inference_in_place_softmax_equals_autograd_path(dtype):
    layer = mha.MultiHeadAttention(16, 4, dtype=dtype)
    x = torch.randn(2, 5, 16, dtype=dtype)
    lens = torch.tensor([[2, 0, 3, 0, 5], [0, 0, 1, 1, 1]])
    for kw in ({"valid_lens": lens}, {}):
        out, w = layer(x, need_weights=True, **kw)  # weights require grad: a fresh softmax
        with torch.no_grad():  # the softmax overwrites the scores
            out_ng, w_ng = layer(x, need_weights=True, **kw)
        assert w.requires_grad and not w_ng.requires_grad
        assert torch.equal(out, out_ng) and torch.equal(w, w_ng)
        assert not w_ng.isnan().any()

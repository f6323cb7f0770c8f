"""blockwise_attention (the online softmax in plain PyTorch) equals
torch.nn.functional.scaled_dot_product_attention: block sizes that do and do not divide Lk,
masks, causal (top-left), fully masked rows, Lq != Lk, half precision, gradients; bad input fails
with a clear message. The exercise check of chapter 13 passes the package's step and fails the
common mistakes."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import mha
from mha_book.exercises import check

# float16/bfloat16: blockwise_attention computes in float32 and rounds the output once, so it is
# within these of SDPA run in the same dtype (whose own rounding is of the same size)
HALF_TOLERANCES = {torch.float16: {"atol": 2e-3, "rtol": 0.0},
                   torch.bfloat16: {"atol": 1.6e-2, "rtol": 0.0}}


def qkv(*batch, num_queries, num_keys, dk=16, dv=None, dtype=torch.float32):
    dv = dk if dv is None else dv
    return (torch.randn(*batch, num_queries, dk, dtype=dtype),
            torch.randn(*batch, num_keys, dk, dtype=dtype),
            torch.randn(*batch, num_keys, dv, dtype=dtype))


@pytest.mark.parametrize("block_size", [1, 3, 8, 16, 37, 64, 100])
def test_equals_sdpa_over_block_sizes(block_size):
    q, k, v = qkv(2, 3, num_queries=37, num_keys=37)  # 37: divided only by 1 and 37
    out = mha.blockwise_attention(q, k, v, block_size=block_size)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v), atol=1e-5, rtol=0)


@pytest.mark.parametrize("num_queries, num_keys", [(5, 40), (40, 5), (1, 33), (33, 1)])
@pytest.mark.parametrize("is_causal", [False, True])
def test_lq_not_lk_and_causal_top_left(num_queries, num_keys, is_causal):
    q, k, v = qkv(2, 2, num_queries=num_queries, num_keys=num_keys, dv=7)
    out = mha.blockwise_attention(q, k, v, is_causal=is_causal, block_size=4)
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    assert out.shape == (2, 2, num_queries, 7)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


def test_causal_equals_the_package_causal_mask():
    q, k, v = qkv(1, 2, num_queries=6, num_keys=10)
    mask = mha.causal_mask(6, 10)  # top left: query i sees keys 0..i
    out = mha.blockwise_attention(q, k, v, is_causal=True, block_size=3)
    torch.testing.assert_close(out, mha.blockwise_attention(q, k, v, mask, block_size=3))
    # changing a key the queries may not see changes nothing
    k2 = k.clone()
    k2[..., 7:, :] += 10
    torch.testing.assert_close(out, mha.blockwise_attention(q, k2, v, is_causal=True,
                                                            block_size=3))


@pytest.mark.parametrize("mask_shape", [(2, 3, 9, 21), (2, 1, 1, 21), (9, 21), (2, 1, 9, 1),
                                        (21,)])
@pytest.mark.parametrize("block_size", [4, 7, 64])
def test_masks_that_broadcast(mask_shape, block_size):
    q, k, v = qkv(2, 3, num_queries=9, num_keys=21)
    mask = torch.rand(mask_shape) > 0.3
    mask[..., 0] = True  # every query keeps a key (fully masked rows: below)
    out = mha.blockwise_attention(q, k, v, mask, block_size=block_size)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask.expand(2, 3, 9, 21))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


def test_mask_and_causal_combine():
    q, k, v = qkv(2, 2, num_queries=12, num_keys=12)
    mask = torch.rand(2, 1, 12, 12) > 0.4
    mask[..., 0] = True
    out = mha.blockwise_attention(q, k, v, mask, is_causal=True, block_size=5)
    both = mask & mha.causal_mask(12)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, attn_mask=both),
                               atol=1e-5, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_rows_are_zero(dtype):
    q, k, v = qkv(2, 2, num_queries=6, num_keys=10, dtype=dtype)
    mask = torch.rand(2, 2, 6, 10) > 0.5
    mask[..., 0] = True
    mask[0, 1, 3] = False  # query 3 of head 1 of sequence 0 may attend no key
    mask[1, :, :2] = False  # queries 0 and 1 of sequence 1: none
    out = mha.blockwise_attention(q, k, v, mask, block_size=4)
    assert not out.isnan().any()
    assert torch.all(out[0, 1, 3] == 0) and torch.all(out[1, :, :2] == 0)
    expected, _ = mha.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask)
    tol = {"atol": 1e-5, "rtol": 0.0} if dtype == torch.float32 else HALF_TOLERANCES[dtype]
    torch.testing.assert_close(out.double(), expected, **tol)


def test_no_keys_at_all_gives_zeros():
    q, k, v = qkv(1, num_queries=3, num_keys=0)
    assert torch.equal(mha.blockwise_attention(q, k, v), torch.zeros(1, 3, 16))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("is_causal", [False, True])
def test_half_precision_within_stated_tolerance(dtype, is_causal):
    q, k, v = qkv(2, 4, num_queries=50, num_keys=50, dk=32, dtype=dtype)
    out = mha.blockwise_attention(q, k, v, is_causal=is_causal, block_size=16)
    assert out.dtype == dtype
    expected = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    torch.testing.assert_close(out, expected, **HALF_TOLERANCES[dtype])
    # and closer to the exact answer (float64 on the same rounded inputs) than the tolerance
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                           is_causal=is_causal)
    assert (out.double() - exact).abs().max() <= HALF_TOLERANCES[dtype]["atol"] / 2


@pytest.mark.parametrize("is_causal", [False, True])
def test_gradients_equal_sdpa(is_causal):
    q, k, v = (x.double().requires_grad_() for x in qkv(2, 2, num_queries=11, num_keys=11))
    mask = torch.rand(2, 1, 11, 11) > 0.3
    mask[..., 0] = True
    grad = torch.randn(2, 2, 11, 16, dtype=torch.float64)
    ours = torch.autograd.grad(mha.blockwise_attention(q, k, v, mask, is_causal=is_causal,
                                                       block_size=4), (q, k, v), grad)
    both = mask & mha.causal_mask(11) if is_causal else mask
    theirs = torch.autograd.grad(F.scaled_dot_product_attention(q, k, v, attn_mask=both),
                                 (q, k, v), grad)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-8)


def test_gradients_finite_for_fully_masked_rows():
    q, k, v = (x.requires_grad_() for x in qkv(1, num_queries=4, num_keys=6))
    mask = torch.ones(4, 6, dtype=torch.bool)
    mask[2] = False
    mha.blockwise_attention(q, k, v, mask, block_size=4).sum().backward()
    for x in (q, k, v):
        assert torch.isfinite(x.grad).all()
    assert torch.all(q.grad[0, 2] == 0)  # the masked query does not influence anything


def test_scale_argument():
    q, k, v = qkv(2, num_queries=8, num_keys=8)
    out = mha.blockwise_attention(q, k, v, scale=0.3, block_size=3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.3),
                               atol=1e-5, rtol=0)


def test_broadcast_batch_axes():
    q = torch.randn(2, 4, 9, 8)  # (B, H, Lq, Dk)
    k, v = torch.randn(2, 1, 12, 8), torch.randn(2, 1, 12, 8)  # one key/value head for all
    out = mha.blockwise_attention(q, k, v, block_size=5)
    expected = F.scaled_dot_product_attention(q, k.expand(2, 4, 12, 8), v.expand(2, 4, 12, 8))
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)


@given(
    batch=st.integers(1, 3), heads=st.integers(1, 3), num_queries=st.integers(1, 20),
    num_keys=st.integers(1, 20), dk=st.integers(1, 9), dv=st.integers(1, 9),
    block_size=st.integers(1, 25), is_causal=st.booleans(), masked=st.booleans(),
)
def test_property_equals_sdpa(batch, heads, num_queries, num_keys, dk, dv, block_size,
                              is_causal, masked):
    q, k, v = qkv(batch, heads, num_queries=num_queries, num_keys=num_keys, dk=dk, dv=dv)
    mask = torch.rand(batch, 1, num_queries, num_keys) > 0.3 if masked else None
    out = mha.blockwise_attention(q, k, v, mask, is_causal=is_causal, block_size=block_size)
    allowed = torch.ones(num_queries, num_keys, dtype=torch.bool) if mask is None else mask
    if is_causal:
        allowed = allowed & mha.causal_mask(num_queries, num_keys)
    expected, _ = mha.scaled_dot_product_attention(q, k, v, allowed)  # zeros for empty rows
    assert out.shape == (batch, heads, num_queries, dv)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
    if mask is None:  # SDPA's own causal alignment, no empty rows
        torch.testing.assert_close(
            out, F.scaled_dot_product_attention(q, k, v, is_causal=is_causal), atol=1e-5, rtol=0)


def test_peak_memory_grows_with_lq_times_block_not_lq_times_lk():
    peaks = {}
    for L in (256, 512, 1024):
        q, k, v = qkv(1, 2, num_queries=L, num_keys=L, dk=16)
        with torch.no_grad():
            _, peaks[L] = mha.peak_memory(mha.blockwise_attention, q, k, v, block_size=32)
    assert peaks[1024] < 2 * 1024 * 1024 * 4 / 4  # far below the (H, L, L) float32 scores
    assert 1.8 < peaks[1024] / peaks[512] < 2.2  # linear in L
    assert 1.8 < peaks[512] / peaks[256] < 2.2


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, error, message", [
    ({"block_size": 0}, ValueError, "block_size must be a positive int; got 0"),
    ({"block_size": 2.5}, TypeError, "block_size must be an int; got 2.5"),
    ({"block_size": True}, TypeError, "block_size must be an int; got True"),
    ({"is_causal": 1}, TypeError, "is_causal must be a bool; got 1"),
    ({"scale": "0.1"}, TypeError, "scale must be a number; got"),
    ({"scale": float("nan")}, ValueError, "scale must be a finite number; got nan"),
])
def test_bad_arguments(kwargs, error, message):
    q, k, v = qkv(1, num_queries=3, num_keys=4)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        mha.blockwise_attention(q, k, v, **kwargs)


def test_bad_tensors():
    q, k, v = qkv(2, num_queries=3, num_keys=4)
    with pytest.raises(ValueError, match="query has 16 features but key has 8"):
        mha.blockwise_attention(q, k[..., :8], v)
    with pytest.raises(ValueError, match="key has 4 positions but value has 3"):
        mha.blockwise_attention(q, k, v[:, :3])
    with pytest.raises(TypeError, match="must be a bool tensor"):
        mha.blockwise_attention(q, k, v, torch.ones(3, 4))
    with pytest.raises(ValueError, match=r"mask of shape \(3, 5\) cannot broadcast"):
        mha.blockwise_attention(q, k, v, torch.ones(3, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="key has dtype torch.float64 but query has torch.float32"):
        mha.blockwise_attention(q, k.double(), v)
    with pytest.raises(TypeError, match="query must be a floating-point tensor"):
        mha.blockwise_attention(q.long(), k, v)
    with pytest.raises(TypeError, match="key must be a"):
        mha.blockwise_attention(q, [1, 2], v)
    with pytest.raises(ValueError, match="broadcast"):
        mha.blockwise_attention(q, k, torch.randn(3, 4, 16))


# --- the exercise check of chapter 13 ----------------------------------------------------------


def test_online_softmax_check_passes_the_package_step():
    assert check("online_softmax_step", mha.online_softmax_step, verbose=False).passed


def test_online_softmax_check_catches_nan_and_empty_block():
    def naive(running_max, running_sum, acc, scores, value):  # no guard for -inf, no empty block
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        rescale, p = torch.exp(running_max - new_max), torch.exp(scores - new_max[..., None])
        return new_max, running_sum * rescale + p.sum(-1), acc * rescale[..., None] + p @ value

    result = check("online_softmax_step", naive, verbose=False)
    text = "\n".join(result.failures)
    assert not result.passed and len(result.failures) == 2
    assert "may attend no key: its state stays" in text and "got nan" in text
    assert "an empty block" in text and "raised" in text
    assert "exp(-inf - (-inf)) = NaN" in text  # the hint


def test_online_softmax_check_catches_missing_rescale():
    def no_rescale(running_max, running_sum, acc, scores, value):
        if scores.size(-1) == 0:
            return running_max, running_sum, acc
        new_max = torch.maximum(running_max, scores.amax(dim=-1))
        p = torch.exp(scores - new_max.masked_fill(new_max == float("-inf"), 0)[..., None])
        return new_max, running_sum + p.sum(-1), acc + p @ value

    result = check("online_softmax_step", no_rescale, verbose=False)
    assert not result.passed
    assert any("all higher: rescale" in failure for failure in result.failures)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_cuda_equals_sdpa(dtype):
    q, k, v = (x.cuda() for x in qkv(2, 8, num_queries=300, num_keys=300, dk=64, dtype=dtype))
    mask = torch.rand(2, 1, 300, 300, device="cuda") > 0.2
    mask[..., 0] = True
    tol = {"atol": 1e-5, "rtol": 1e-4} if dtype == torch.float32 else HALF_TOLERANCES[dtype]
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": mask}):
        out = mha.blockwise_attention(q, k, v, kwargs.get("attn_mask"),
                                      is_causal=kwargs.get("is_causal", False), block_size=64)
        assert out.device.type == "cuda" and out.dtype == dtype
        torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, **kwargs), **tol)

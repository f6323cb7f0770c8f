"""mha.sdpa_backend names the SDPA kernel that really ran (cross-checked by forcing each backend
and against torch.profiler's own record), and mha.peak_memory measures tensor memory."""

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import mha
from mha.backends import SDPA_KERNELS


def qkv(device="cpu", dtype=torch.float32, length=64):
    return [torch.randn(2, 4, length, 32, device=device, dtype=dtype) for _ in range(3)]


def kineto_op_names(fn, *args, **kwargs):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn(*args, **kwargs)
    return {event.name for event in prof.events()}


def test_cpu_default_is_what_the_profiler_records():
    q, k, v = qkv()
    name = mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v)
    assert name in SDPA_KERNELS.values()
    op = next(op for op, n in SDPA_KERNELS.items() if n == name)
    assert op in kineto_op_names(F.scaled_dot_product_attention, q, k, v)
    if hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu"):
        assert name == "flash (CPU)"  # torch >= 2.2 on CPU, float32, no dropout


def test_cpu_reports_the_backend_that_was_forced():
    q, k, v = qkv()
    with sdpa_kernel(SDPBackend.MATH):
        assert mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v) == "math"
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        assert mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v) == "flash (CPU)"


def test_cpu_falls_back_to_math_when_flash_cannot_run():
    q, k, v = qkv()
    # the CPU flash kernel needs Dk == Dv and no dropout; SDPA takes the math path otherwise
    assert mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v[..., :16]) == "math"
    assert mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v, dropout_p=0.5) == "math"


def test_layer_and_none():
    layer = mha.MultiHeadAttention(32, 4).eval()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():
        assert mha.sdpa_backend(layer, x) == "flash (CPU)"  # the fused path
        assert mha.sdpa_backend(layer, x, need_weights=True) == "none"  # the explicit path
    with pytest.raises(TypeError, match="fn must be callable"):
        mha.sdpa_backend(torch.randn(3))


def test_several_backends_are_joined_in_order():
    q, k, v = qkv()

    def two_calls():
        F.scaled_dot_product_attention(q, k, v)
        with sdpa_kernel(SDPBackend.MATH):
            F.scaled_dot_product_attention(q, k, v)

    assert mha.sdpa_backend(two_calls) == "flash (CPU) + math"


def test_peak_memory_counts_tensors_alive_together():
    def two_temporaries():
        a = torch.ones(1000)  # 4000 bytes
        del a
        b = torch.ones(500)  # freed before: the peak is 4000, not 6000
        return b

    result, peak = mha.peak_memory(two_temporaries)
    assert peak == 4000 and result.shape == (500,)

    def together():
        return torch.ones(1000), torch.ones(500)

    assert mha.peak_memory(together)[1] == 6000


def test_peak_memory_sees_the_explicit_scores_and_not_the_fused_ones():
    q, k, v = qkv(length=512)
    scores = 2 * 4 * 512 * 512 * 4  # (B, H, L, L) float32
    with torch.no_grad():
        _, explicit = mha.peak_memory(mha.scaled_dot_product_attention, q, k, v)
        _, fused = mha.peak_memory(F.scaled_dot_product_attention, q, k, v)
    assert explicit >= scores
    assert fused < scores / 10
    with pytest.raises(TypeError, match="fn must be callable"):
        mha.peak_memory(None)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_half_runs_a_fused_kernel(dtype):
    q, k, v = qkv("cuda", dtype, length=256)
    name = mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v, is_causal=True)
    assert name in ("flash", "cuDNN", "memory-efficient")
    with sdpa_kernel(SDPBackend.MATH):
        assert mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v) == "math"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_peak_memory_and_blockwise():
    q, k, v = qkv("cuda", length=2048)
    with torch.no_grad():
        out, explicit = mha.peak_memory(mha.scaled_dot_product_attention, q, k, v)
        blockwise, small = mha.peak_memory(mha.blockwise_attention, q, k, v)
    assert explicit >= 2 * 4 * 2048 * 2048 * 4 and small < explicit / 8
    torch.testing.assert_close(blockwise, out[0], atol=1e-5, rtol=1e-4)


def test_sdpa_backend_prints_nothing(capfd):
    q, k, v = qkv()
    mha.sdpa_backend(F.scaled_dot_product_attention, q, k, v)
    out, err = capfd.readouterr()
    assert out == "" and err == ""  # the profiler's native log lines would show in a notebook


def test_peak_memory_refuses_devices_it_cannot_measure():
    x = torch.randn(4, device="meta")
    with pytest.raises(ValueError, match="measures CPU and CUDA memory; got tensors on meta"):
        mha.peak_memory(torch.sin, x)


def test_explicit_path_without_autograd_keeps_one_score_matrix():
    """Ch 13: without autograd the explicit path runs the softmax in place, so S and P share one
    (B, H, L, L) buffer; with autograd both are kept for the backward pass."""
    q, k, v = qkv(length=512)
    scores = 2 * 4 * 512 * 512 * 4  # (B, H, L, L) float32
    with torch.no_grad():
        _, no_grad = mha.peak_memory(mha.scaled_dot_product_attention, q, k, v)
    assert scores <= no_grad < 1.5 * scores
    q.requires_grad_(True)
    _, with_grad = mha.peak_memory(mha.scaled_dot_product_attention, q, k, v)
    assert with_grad >= 2 * scores


def test_device_prefers_cuda_then_mps_then_cpu(monkeypatch):
    """Ch 00: mha.device() picks cuda, then mps, then cpu."""
    mps = getattr(torch.backends, "mps", None)
    for cuda_ok, mps_ok, expected in ((True, True, "cuda"), (False, True, "mps"),
                                      (False, False, "cpu")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda ok=cuda_ok: ok)
        if mps is not None:
            monkeypatch.setattr(mps, "is_available", lambda ok=mps_ok: ok)
        elif expected == "mps":
            continue
        assert mha.device() == torch.device(expected)

"""The fused path on a CUDA GPU: it runs there, agrees with the weights path, in fp32 and bf16."""

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

import mha

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none present)"),
]

TOLERANCES = {torch.float32: {"atol": 2e-5, "rtol": 2e-4}, torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2}}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("num_kv_heads", [8, 2])
def test_fused_equals_weights_path_on_cuda(dtype, num_kv_heads):
    layer = mha.MultiHeadAttention(256, 8, num_kv_heads=num_kv_heads, bias=True,
                                   device="cuda", dtype=dtype).eval()
    x = torch.randn(2, 64, 256, device="cuda", dtype=dtype)
    lens = torch.tensor([64, 17], device="cuda")
    for kw in ({}, {"is_causal": True}, {"valid_lens": lens}):
        fused, _ = layer(x, **kw)
        reference, w = layer(x, need_weights=True, **kw)
        assert fused.device.type == "cuda" and fused.dtype == dtype
        torch.testing.assert_close(fused, reference, **TOLERANCES[dtype])
        assert w.shape == (2, 8, 64, 64)


def test_from_torch_parity_on_cuda():
    ref = torch.nn.MultiheadAttention(128, 4, batch_first=True, device="cuda").eval()
    layer = mha.MultiHeadAttention.from_torch(ref)
    x = torch.randn(2, 32, 128, device="cuda")
    expected, expected_w = ref(x, x, x, average_attn_weights=False)
    out, w = layer(x, need_weights=True)
    torch.testing.assert_close(out, expected, **TOLERANCES[torch.float32])
    torch.testing.assert_close(w, expected_w, **TOLERANCES[torch.float32])
    torch.testing.assert_close(layer(x)[0], expected, **TOLERANCES[torch.float32])


@pytest.mark.parametrize("backend", [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION])
def test_fused_kernels_run_forward_and_backward_in_bf16(backend):
    layer = mha.MultiHeadAttention(512, 8, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(2, 256, 512, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    reference, _ = layer(x, is_causal=True, need_weights=True)
    with sdpa_kernel(backend):  # fails if this kernel cannot run the layer's call
        out, _ = layer(x, is_causal=True)
        out.float().sum().backward()
    torch.testing.assert_close(out, reference, **TOLERANCES[torch.bfloat16])
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_rows_on_cuda(dtype):
    layer = mha.MultiHeadAttention(64, 4, device="cuda", dtype=dtype)
    x = torch.randn(2, 8, 64, device="cuda", dtype=dtype, requires_grad=True)
    lens = torch.tensor([[0] * 4 + [8] * 4, [3] * 8], device="cuda")
    for need_weights in (False, True):
        out, _ = layer(x, valid_lens=lens, need_weights=need_weights)
        assert not out.isnan().any() and (out[0, :4] == 0).all()
        out.float().sum().backward()
        assert torch.isfinite(x.grad).all()

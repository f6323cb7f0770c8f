"""The fused path on a CUDA GPU: it runs there, agrees with the weights path, in fp32 and bf16;
FlexAttention compiled, FlashAttention-3/4 through SDPA, and the paged cache there."""

import importlib.util
import math

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import mha
from mha import flex
from mha.attention_functions import repeat_kv
from mha.modern import sink_attention, window_mask
from mha.paged import PagedKVCache, paged_attention

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


# --- FlexAttention compiled, FlashAttention-3/4 through SDPA, the paged cache -----------------

CUDA = "cuda"  # the device of the tests below
LOW_PRECISION = {torch.float16: {"atol": 5e-3, "rtol": 5e-3},
                 torch.bfloat16: {"atol": 2e-2, "rtol": 2e-2}}


def needs_compiled_flex():
    """Skip, saying why, unless torch.compile(flex_attention) can run here; then forget the
    kernels compiled so far: each case (mask, score change, dtype) compiles its own, and past
    dynamo's recompile limit (8) torch would quietly run the unfused path instead."""
    if not flex.flex_available():
        pytest.skip(f"FlexAttention needs torch >= 2.5; this is torch {torch.__version__}")
    if importlib.util.find_spec("triton") is None:
        pytest.skip("torch.compile(flex_attention) on CUDA needs triton, which is not installed")
    torch._dynamo.reset()


def explicit_scores(q, k, v, change=None, allowed=None):
    """softmax(change(q k^T / sqrt(Dh))) v in float32, keys shared by GQA groups."""
    q, k, v = q.float(), repeat_kv(k.float(), q.size(1)), repeat_kv(v.float(), q.size(1))
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))  # (B, H, Lq, Lk)
    scores = scores if change is None else change(scores)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1).nan_to_num(0.0) @ v  # (B, H, Lq, Dh)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("case", ["causal", "window", "documents", "soft cap", "alibi", "sinks"])
def test_compiled_flex_attention_equals_the_package_on_cuda(case, dtype):
    needs_compiled_flex()
    B, H, Hkv, L, Dh = 2, 8, 2, 256, 64  # L a multiple of the 128 block: no partial tile
    q, k, v = (torch.randn(B, h, L, Dh, device=CUDA).to(dtype) for h in (H, Hkv, Hkv))
    ids = torch.repeat_interleave(torch.arange(3, device=CUDA),
                                  torch.tensor([100, 28, 128], device=CUDA))  # (L,)
    causal = torch.ones(L, L, dtype=torch.bool, device=CUDA).tril()
    sinks = torch.randn(H, device=CUDA)
    slopes = flex.alibi_slopes(H, device=CUDA).view(H, 1, 1)
    distance = torch.arange(L, device=CUDA)[None, :] - torch.arange(L, device=CUDA)[:, None]
    mask_mod, score_mod, change, allowed = flex.causal(), None, None, causal
    if case == "window":
        mask_mod, allowed = flex.sliding_window(64), window_mask(L, L, 64, device=CUDA)
    elif case == "documents":
        mask_mod = flex.document_mask(ids, causal=True)
        allowed = causal & (ids[:, None] == ids[None, :])
    elif case == "soft cap":
        score_mod, change = flex.soft_cap(2.0), (lambda s: 2.0 * torch.tanh(s / 2.0))
    elif case == "alibi":
        score_mod, change = flex.alibi(H, device=CUDA), (lambda s: s + slopes * distance)
    out = flex.flex_attention(q, k, v, mask_mod=mask_mod, score_mod=score_mod,
                              sinks=sinks if case == "sinks" else None, compile=True)
    assert out.device.type == torch.device(CUDA).type and out.dtype == dtype
    assert out.shape == (B, H, L, Dh)
    if case == "sinks":
        expected, _ = sink_attention(q.float(), k.float(), v.float(), sinks, causal,
                                     scale=1 / math.sqrt(Dh))
    else:
        expected = explicit_scores(q, k, v, change, allowed)
    torch.testing.assert_close(out.float(), expected, **LOW_PRECISION[dtype])


def test_compiled_flex_sinks_gradients_equal_sink_attentions_on_cuda():
    """The backward FlexAttention lacks on CPU: the sinks' factor sigmoid(lse - s_h) carries
    the gradients of q, k, v and the sinks through the log-sum-exp."""
    needs_compiled_flex()
    q, k, v = (torch.randn(1, h, 128, 64, device=CUDA, requires_grad=True) for h in (4, 2, 2))
    sinks = torch.randn(4, device=CUDA, requires_grad=True)
    causal = torch.ones(128, 128, dtype=torch.bool, device=CUDA).tril()
    out = flex.flex_attention(q, k, v, mask_mod=flex.causal(), sinks=sinks, compile=True)
    expected, _ = sink_attention(q, k, v, sinks, causal, scale=1 / 8)
    grad = torch.randn_like(out)
    tol = {"atol": 1e-4, "rtol": 1e-4}
    torch.testing.assert_close(out, expected, **tol)
    for a, b in zip(torch.autograd.grad(out, (q, k, v, sinks), grad),
                    torch.autograd.grad(expected, (q, k, v, sinks), grad)):
        torch.testing.assert_close(a, b, **tol)


# FlashAttention-3 and -4 plug into SDPA's flash backend (torch.nn.attention.
# activate_flash_attention_impl); each needs its own package and a GPU generation.
FLASH_IMPLS = {
    "FA3": ("flash_attn_interface", (9,), "a Hopper GPU (compute capability 9.x, sm90)",
            "FlashAttention-3, built from flash-attention's hopper/ directory"),
    "FA4": ("flash_attn.cute.interface", (9, 10),
            "a Hopper or Blackwell GPU (compute capability 9.x or 10.x, sm90/sm100)",
            "FlashAttention-4, flash-attention's CuTe-DSL kernels"),
}


def flash_impl_skip_reason(impl):
    """Why ``impl`` cannot run here (torch, GPU or package), or None when it can."""
    attention = torch.nn.attention
    if not hasattr(attention, "activate_flash_attention_impl"):
        return (f"torch {torch.__version__} has no torch.nn.attention."
                f"activate_flash_attention_impl (pluggable FlashAttention implementations)")
    if impl not in attention.list_flash_attention_impls():
        return (f"torch {torch.__version__} registers no {impl} implementation (it has "
                f"{attention.list_flash_attention_impls()})")
    module, majors, gpu, package = FLASH_IMPLS[impl]
    major, minor = torch.cuda.get_device_capability()
    if major not in majors:
        return (f"{impl} needs {gpu}; this GPU ({torch.cuda.get_device_name()}) has compute "
                f"capability {major}.{minor}")
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package (flash_attn) is missing
        found = False
    if not found:
        return f"{impl} needs the package {module} ({package}), which is not installed"
    return None


@pytest.mark.parametrize("impl", sorted(FLASH_IMPLS))
def test_activated_flash_impl_equals_the_math_backend(impl):
    reason = flash_impl_skip_reason(impl)
    if reason is not None:
        pytest.skip(reason)
    attention = torch.nn.attention
    q, k, v = (torch.randn(2, 8, 256, 64, device=CUDA, dtype=torch.bfloat16) for _ in range(3))
    layer = mha.MultiHeadAttention(512, 8, num_kv_heads=2, device=CUDA,
                                   dtype=torch.bfloat16).eval()
    x = torch.randn(2, 256, 512, device=CUDA, dtype=torch.bfloat16)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH):
        expected = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        expected_layer, _ = layer(x, is_causal=True)
    # FA2 gives the same numbers, so count the calls of the new kernel's forward: the test
    # fails if activating it changed nothing
    shim = importlib.import_module(f"torch.nn.attention._{impl.lower()}")
    run_name = f"_{impl.lower()}_run_forward"
    run, calls = getattr(shim, run_name), []

    def counted(*args, **kwargs):
        calls.append(1)
        return run(*args, **kwargs)

    setattr(shim, run_name, counted)
    attention.activate_flash_attention_impl(impl)
    try:
        assert attention.current_flash_attention_impl() == impl
        with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # only flash may run
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            out_layer, _ = layer(x, is_causal=True)
    finally:
        attention.restore_flash_attention_impl()
        setattr(shim, run_name, run)
    assert len(calls) >= 2, f"{impl} was activated but its forward ran {len(calls)} times"
    torch.testing.assert_close(out, expected, **TOLERANCES[torch.bfloat16])
    torch.testing.assert_close(out_layer, expected_layer, **TOLERANCES[torch.bfloat16])


@torch.no_grad()
def test_paged_cache_on_cuda_equals_the_contiguous_one():
    layer = mha.RotaryMultiHeadAttention(256, 8, num_kv_heads=2, device=CUDA).eval()
    lengths, prompts = {"a": 40, "b": 17, "c": 29}, {"a": 8, "b": 1, "c": 5}
    xs = {s: torch.randn(1, n, 256, device=CUDA) for s, n in lengths.items()}
    pool = PagedKVCache(32, 4, 2, 32, device=CUDA)
    caches = {s: mha.KVCache() for s in xs}
    outs = {s: [] for s in xs}
    for s, x in xs.items():  # prefill each, then one token of each per round
        for cache in (pool.sequence(s), caches[s]):
            outs[s].append(layer(x[:, :prompts[s]], is_causal=True, cache=cache)[0])
    for t in range(max(lengths.values())):
        for s, x in xs.items():
            if prompts[s] <= t < lengths[s]:
                for cache in (pool.sequence(s), caches[s]):
                    outs[s].append(layer(x[:, t:t + 1], is_causal=True, cache=cache)[0])
    for s, x in xs.items():
        paged, plain = torch.cat(outs[s][0::2], 1), torch.cat(outs[s][1::2], 1)
        assert paged.device.type == torch.device(CUDA).type
        torch.testing.assert_close(paged, plain, **TOLERANCES[torch.float32])
        torch.testing.assert_close(paged, layer(x, is_causal=True)[0], **TOLERANCES[torch.float32])
        keys, _ = pool.gather(s)
        torch.testing.assert_close(keys, caches[s].keys[0], **TOLERANCES[torch.float32])
    tables = [pool.block_table(s) for s in xs]
    assert any(t != list(range(t[0], t[0] + len(t))) for t in tables)  # scattered blocks
    q = torch.randn(3, 8, 1, 32, device=CUDA)  # one new query per sequence, batched
    out = paged_attention(q, pool, list(xs))
    for n, s in enumerate(xs):
        k, v = caches[s].keys, caches[s].values  # (1, Hkv, L, Dh)
        expected = F.scaled_dot_product_attention(q[n:n + 1], repeat_kv(k, 8), repeat_kv(v, 8))
        torch.testing.assert_close(out[n:n + 1], expected, **TOLERANCES[torch.float32])

"""The attention core: the registry of attention functions, the one fused
wrapper (``sdpa``) and the one explicit path (``eager``), and the options of
the one forward pass.

Shape legend: B batch, H query heads, Hkv key/value heads, Lq/Lk query/key
lengths, Dh d_head.
"""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from test_modern_attention import OPTIONS, make, modern_ref

import mha
from mha import attention_functions as af

TOL = {"atol": 1e-5, "rtol": 1e-5}


def formula(q, k, v, allowed=None, scale=None):
    """softmax(q k^T * scale) v from scratch: q (B, H, Lq, Dk), k and v
    (B, Hkv, Lk, D); a row with no allowed key gives zeros."""
    H = q.size(1)
    k = k.repeat_interleave(H // k.size(1), 1)  # (B, H, Lk, Dk)
    v = v.repeat_interleave(H // v.size(1), 1)
    scale = 1 / math.sqrt(q.size(-1)) if scale is None else scale
    scores = q @ k.transpose(-2, -1) * scale  # (B, H, Lq, Lk)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    weights = scores.softmax(-1).nan_to_num(0.0)
    return weights @ v, weights


@pytest.fixture
def registry():
    """Registers made by a test are removed after it."""
    saved = dict(af.ATTENTION_FUNCTIONS)
    yield af.ATTENTION_FUNCTIONS
    af.ATTENTION_FUNCTIONS.clear()
    af.ATTENTION_FUNCTIONS.update(saved)


# --- the registry ----------------------------------------------------------

def test_built_in_functions_are_registered():
    assert {"sdpa", "eager", "sinks", "relative"} <= set(af.ATTENTION_FUNCTIONS)
    assert af.attention_function("eager") is af.eager
    assert mha.MultiHeadAttention(8, 2).attn_implementation == "sdpa"
    assert mha.RotaryMultiHeadAttention(8, 2).attn_implementation == "sdpa"
    assert mha.RotaryMultiHeadAttention(8, 2, sinks=True).attn_implementation == "sinks"
    assert mha.RelativeMultiHeadAttention(8, 2).attn_implementation == "relative"


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("num_kv_heads", [None, 2])
def test_a_registered_function_is_what_the_layer_calls(registry, need_weights,
                                                       num_kv_heads):
    """A function that reimplements the built-in, registered and named by
    attn_implementation: the layer calls it, with the same output."""
    calls = []

    @af.register("mine")
    def mine(module, q, k, v, mask=None, *, is_causal=False, scale=None,
             dropout_p=0.0, need_weights=False):
        calls.append((module, q.shape, k.shape, need_weights))
        if is_causal:
            mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
        if not need_weights:
            return af.sdpa(q, k, v, mask, scale=scale, dropout_p=dropout_p), None
        return formula(q, k, v, mask, scale)

    torch.manual_seed(0)
    layer = mha.MultiHeadAttention(32, 4, num_kv_heads=num_kv_heads).eval()
    x = torch.randn(2, 7, 32)
    mask = torch.rand(2, 1, 7, 7) > 0.3
    mask[0, 0, 2] = False  # a query with no key
    want = [layer(x, need_weights=need_weights, **kw)
            for kw in ({}, {"is_causal": True}, {"mask": mask})]
    layer.attn_implementation = "mine"
    got = [layer(x, need_weights=need_weights, **kw)
           for kw in ({}, {"is_causal": True}, {"mask": mask})]
    assert len(calls) == 3 and calls[0][0] is layer
    Hkv = num_kv_heads or 4
    assert calls[0][1:] == ((2, 4, 7, 8), (2, Hkv, 7, 8), need_weights)
    for (out, w), (out_want, w_want) in zip(got, want):
        if need_weights:
            torch.testing.assert_close(out, out_want, **TOL)
            torch.testing.assert_close(w, w_want, **TOL)
        else:  # the same fused call: the same numbers
            assert torch.equal(out, out_want) and w is None and w_want is None


def test_eager_on_every_call(registry):
    """attn_implementation = "eager": the explicit path even without
    need_weights (weights still None then), equal to the fused one."""
    torch.manual_seed(0)
    layer = mha.MultiHeadAttention(32, 4, num_kv_heads=2).eval()
    x = torch.randn(2, 6, 32)
    fused, _ = layer(x, is_causal=True)
    layer.attn_implementation = "eager"
    calls = []
    real = F.scaled_dot_product_attention
    try:
        F.scaled_dot_product_attention = lambda *a, **kw: calls.append(1) or real(*a, **kw)
        out, w = layer(x, is_causal=True)
    finally:
        F.scaled_dot_product_attention = real
    assert w is None and not calls
    torch.testing.assert_close(out, fused, **TOL)


def test_the_window_wraps_any_function(registry):
    """With a window, the layer's function runs once per block of queries."""
    blocks = []

    @af.register("counting")
    def counting(module, q, k, v, mask=None, **kwargs):
        blocks.append(q.size(-2))
        return af.sdpa_attention(module, q, k, v, mask, **kwargs)

    layer = make(("window", "gate"))
    x = torch.randn(1, 300, 32)
    want, _ = layer(x)
    layer.attn_implementation = "counting"
    got, _ = layer(x)
    assert blocks == [128, 128, 44] and torch.equal(got, want)


def test_latent_attention_dispatches_too(registry):
    calls = []

    @af.register("spy")
    def spy(module, q, k, v, mask=None, **kwargs):
        calls.append(k.shape)
        return af.sdpa_attention(module, q, k, v, mask, **kwargs)

    torch.manual_seed(0)
    layer = mha.LatentAttention(32, 4, kv_rank=10, qk_nope_dim=6,
                                qk_rope_dim=4, v_head_dim=5).eval()
    x = torch.randn(2, 5, 32)
    for absorb, need_weights in itertools.product([False, True], [False, True]):
        want = layer(x, is_causal=True, absorb=absorb, need_weights=need_weights)
        layer.attn_implementation = "spy"
        got = layer(x, is_causal=True, absorb=absorb, need_weights=need_weights)
        layer.attn_implementation = "sdpa"
        assert torch.equal(got[0], want[0])
        assert (got[1] is None) == (want[1] is None) == (not need_weights)
        if need_weights:
            assert torch.equal(got[1], want[1])
    # per-head keys (B, H, Lk, Dn + Dr); absorbed, the latent (B, H, Lk, R + Dr)
    assert calls == [(2, 4, 5, 10)] * 2 + [(2, 4, 5, 14)] * 2


def test_unknown_name_is_a_clear_error():
    layer = mha.MultiHeadAttention(8, 2)
    names = str(sorted(af.ATTENTION_FUNCTIONS))
    with pytest.raises(ValueError, match="attn_implementation must be") as error:
        layer.attn_implementation = "flash_attention_9"
    assert names in str(error.value) and "'flash_attention_9'" in str(error.value)
    assert layer.attn_implementation == "sdpa"  # unchanged
    with pytest.raises(ValueError, match=r"one of \[.*'eager'.*'sdpa'.*\]"):
        af.attention_function("nope")
    with pytest.raises(ValueError, match="got 3"):
        af.attention_function(3)


def test_register_refuses_bad_input():
    with pytest.raises(TypeError, match="name must be a non-empty str; got ''"):
        af.register("")
    with pytest.raises(TypeError, match="must be callable; got int"):
        af.register("x")(3)
    assert "x" not in af.ATTENTION_FUNCTIONS


# --- the one fused wrapper and the one explicit path ------------------------

@settings(deadline=None, max_examples=60)
@given(batch=st.integers(1, 3), kv=st.sampled_from([1, 2, 4]),
       group=st.sampled_from([1, 2, 3]), lq=st.integers(1, 9),
       lk=st.integers(1, 9), dk=st.sampled_from([4, 8]),
       dv=st.sampled_from([4, 6]), masked=st.sampled_from(["none", "rows", "heads"]),
       causal=st.booleans(), seed=st.integers(0, 99))
def test_fused_equals_explicit_equals_formula(batch, kv, group, lq, lk, dk, dv,
                                              masked, causal, seed):
    """sdpa == explicit == the formula, GQA included; a query with no allowed
    key gives zeros, never NaN."""
    g = torch.Generator().manual_seed(seed)
    H, lk = kv * group, lq if causal else lk  # is_causal: no mask, Lq == Lk
    q = torch.randn(batch, H, lq, dk, generator=g)
    k = torch.randn(batch, kv, lk, dk, generator=g)
    v = torch.randn(batch, kv, lk, dv, generator=g)
    mask = None
    if masked != "none" and not causal:
        heads = H if masked == "heads" else 1
        mask = torch.rand(batch, heads, lq, lk, generator=g) > 0.4
        mask[0, 0, 0] = False  # a fully masked row
    fused = af.sdpa(q, k, v, mask, is_causal=causal)
    out, weights = af.explicit(q, k, v, mask, is_causal=causal)
    allowed = torch.ones(lq, lk, dtype=torch.bool).tril() if causal else mask
    want, want_weights = formula(q, k, v, allowed)
    assert torch.isfinite(fused).all() and torch.isfinite(out).all()
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(out, want, **TOL)
    torch.testing.assert_close(weights, want_weights, **TOL)
    if mask is not None:
        empty = ~mask.expand(batch, H, lq, lk).any(-1)  # (B, H, Lq)
        assert (fused[empty] == 0).all() and (out[empty] == 0).all()


def test_fused_wrapper_gradients_are_finite_on_empty_rows():
    q = torch.randn(1, 4, 3, 8, requires_grad=True)
    k, v = torch.randn(1, 2, 5, 8), torch.randn(1, 2, 5, 8)
    mask = torch.ones(1, 1, 3, 5, dtype=torch.bool)
    mask[..., 1, :] = False
    af.sdpa(q, k, v, mask).sum().backward()
    assert torch.isfinite(q.grad).all() and (q.grad[:, :, 1] == 0).all()


def test_one_head_broadcast_is_not_copied():
    """A key/value head broadcast over the heads (stride 0, as MLA's shared
    latent) goes to the kernel as one shared head (enable_gqa)."""
    q = torch.randn(2, 4, 5, 8)
    k, v = torch.randn(2, 1, 5, 8), torch.randn(2, 1, 5, 8)
    shared = (k.expand(-1, 4, -1, -1), v.expand(-1, 4, -1, -1))
    assert torch.equal(af.sdpa(q, *shared), af.sdpa(q, k, v))
    out, _ = af.explicit(q, *shared)
    torch.testing.assert_close(out, formula(q, k, v)[0], **TOL)


def test_only_the_wrapper_calls_the_fused_kernel():
    """grep: the package calls F.scaled_dot_product_attention in one place."""
    from pathlib import Path

    root = Path(mha.__file__).parent
    callers = sorted(
        p.name for p in root.rglob("*.py")
        if "F.scaled_dot_product_attention(" in p.read_text()
        or "functional.scaled_dot_product_attention(" in p.read_text())
    assert callers == ["attention_functions.py"], callers


# --- the options of the one forward pass ------------------------------------

COMBINATIONS = [tuple(name for name, on in zip(OPTIONS, flags) if on)
                for flags in itertools.product([False, True], repeat=4)]


@pytest.mark.parametrize("options", COMBINATIONS)
@pytest.mark.parametrize("num_kv_heads", [None, 2])
def test_every_combination_matches_the_formula(options, num_kv_heads):
    """All 16 combinations of window, sinks, qk_norm and gate, both paths, a
    mask and a head_mask: the formula written out in test_modern_attention."""
    layer = make(options, num_kv_heads=num_kv_heads)
    x = torch.randn(2, 7, 32)
    allowed = torch.rand(2, 1, 7, 7) > 0.2
    want, want_weights = modern_ref(layer, x, allowed)
    fused, none = layer(x, is_causal=True, mask=allowed)
    out, weights = layer(x, is_causal=True, mask=allowed, need_weights=True)
    assert none is None
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(out, want, **TOL)
    torch.testing.assert_close(weights, want_weights, **TOL)
    head_mask = torch.tensor([1.0, 0.0, 1.0, 1.0])
    pruned = make(options, num_kv_heads=num_kv_heads)
    if num_kv_heads is None:
        pruned.prune_heads([1])
        torch.testing.assert_close(
            pruned(x, is_causal=True, mask=allowed)[0],
            layer(x, is_causal=True, mask=allowed, head_mask=head_mask)[0], **TOL)


@pytest.mark.parametrize("options", COMBINATIONS)
def test_every_combination_fused_path_stays_fused(options):
    """need_weights=False calls the fused kernel, need_weights=True never."""
    layer = make(options)
    x = torch.randn(1, 6, 32)
    calls = []
    real = F.scaled_dot_product_attention
    try:
        F.scaled_dot_product_attention = lambda *a, **kw: calls.append(1) or real(*a, **kw)
        layer(x, is_causal=True)
        fused_calls = len(calls)
        layer(x, is_causal=True, need_weights=True)
    finally:
        F.scaled_dot_product_attention = real
    assert fused_calls >= 1 and len(calls) == fused_calls


def test_layers_keep_their_state_dict_keys_and_attributes():
    layer = make(OPTIONS)
    assert list(layer.state_dict()) == [
        "sinks", "W_q.weight", "W_k.weight", "W_v.weight", "W_o.weight",
        "q_norm.weight", "k_norm.weight", "W_g.weight"]
    plain = mha.MultiHeadAttention(8, 2)
    assert (plain.window, plain.sinks, plain.qk_norm, plain.gate) == (None, None, False, False)
    assert list(plain.state_dict()) == [f"W_{n}.weight" for n in "qkvo"]
    rel = mha.RelativeMultiHeadAttention(8, 2, max_relative_position=2)
    assert list(rel.state_dict()) == [f"W_{n}.weight" for n in "qkvo"] + [
        "relative_key.weight", "relative_value.weight"]

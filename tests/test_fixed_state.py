"""Attention with a fixed-size state (``mha.fixed_state``, ``mha.gated_deltanet``):
each form against another computation of the same thing.

- linear attention: token by token = by chunks = the parallel form ``tril(Q K^T) V * scale``,
  and through ``MultiHeadAttention(attn_implementation="linear")``;
- the gated delta rule: by chunks = the recurrence (``delta_rule_step`` in a loop), for every
  chunk size and length, one decay per position or per key feature, Hv = 2 Hk; a state handed
  on continues the sequence; gradients equal the recurrence's;
- the layers: one token at a time, the state fed back, = one call; the state's size does not
  grow with the length;
- the delta rule with beta = 1 and orthonormal keys stores and recalls exactly;
- bad input raises a ValueError/TypeError that names the argument.

The Hugging Face parity of the same functions and layers is in ``tests/test_parity_hf.py``.
Shapes: B batch, Hk query/key heads, Hv value heads, L length, Dk/Dv features.
"""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import mha

F64 = {"atol": 1e-10, "rtol": 1e-10}
LENGTHS = [1, 5, 17, 64, 100]
CHUNKS = [1, 3, 16, 64]


def qkv(B=2, Hk=1, Hv=2, L=9, Dk=4, Dv=3, *, seed=0, dtype=torch.float64, channel=False):
    """Unit-norm queries and keys (as the layers make them), values, decay <= 0, beta in
    [0, 1], a random state."""
    g = torch.Generator().manual_seed(seed)
    q = F.normalize(torch.randn(B, Hk, L, Dk, generator=g, dtype=dtype), dim=-1)
    k = F.normalize(torch.randn(B, Hk, L, Dk, generator=g, dtype=dtype), dim=-1)
    v = torch.randn(B, Hv, L, Dv, generator=g, dtype=dtype)
    shape = (B, Hv, L, Dk) if channel else (B, Hv, L)
    decay = -torch.rand(shape, generator=g, dtype=dtype)
    beta = torch.rand(B, Hv, L, generator=g, dtype=dtype)
    state = torch.randn(B, Hv, Dk, Dv, generator=g, dtype=dtype)
    return q, k, v, decay, beta, state


def repeat(x, Hv):
    return x.repeat_interleave(Hv // x.size(1), dim=1)


# --- linear attention ------------------------------------------------------------------------


def parallel_linear(q, k, v, scale):
    """tril(Q K^T) V * scale, with q and k repeated to the value heads."""
    q, k = repeat(q, v.size(1)), repeat(k, v.size(1))
    return (q @ k.transpose(-2, -1)).tril() @ v * scale


@pytest.mark.parametrize("L", LENGTHS)
def test_linear_attention_recurrence_is_the_parallel_form(L):
    q, k, v, *_ = qkv(L=L)
    out, S = mha.linear_attention(q, k, v)
    torch.testing.assert_close(out, parallel_linear(q, k, v, 1 / math.sqrt(4)), **F64)
    # the state is the sum of every k v^T
    torch.testing.assert_close(S, repeat(k, 2).transpose(-2, -1) @ v, **F64)


@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("L", LENGTHS)
def test_linear_attention_chunked_is_the_recurrence(L, chunk_size):
    q, k, v, _, _, state = qkv(L=L)
    want, want_state = mha.linear_attention(q, k, v, state=state, scale=0.7)
    out, S = mha.linear_attention(q, k, v, state=state, scale=0.7, chunk_size=chunk_size)
    torch.testing.assert_close(out, want, **F64)
    torch.testing.assert_close(S, want_state, **F64)


def test_linear_attention_state_hand_off():
    q, k, v, *_ = qkv(L=20)
    want, want_state = mha.linear_attention(q, k, v, chunk_size=8)
    a, S = mha.linear_attention(q[:, :, :7], k[:, :, :7], v[:, :, :7])
    b, S = mha.linear_attention(q[:, :, 7:], k[:, :, 7:], v[:, :, 7:], state=S, chunk_size=5)
    torch.testing.assert_close(torch.cat([a, b], dim=2), want, **F64)
    torch.testing.assert_close(S, want_state, **F64)


@pytest.mark.parametrize("num_kv_heads", [4, 2])
def test_multi_head_attention_runs_linear_attention(num_kv_heads):
    torch.manual_seed(0)
    layer = mha.MultiHeadAttention(16, 4, num_kv_heads=num_kv_heads).double()
    layer.attn_implementation = "linear"
    x = torch.randn(2, 70, 16, dtype=torch.float64)
    out, weights = layer(x, is_causal=True)
    assert weights is None
    q = mha.split_heads(layer.W_q(x), 4)  # (B, H, L, Dh)
    k = repeat(layer.W_k(x).unflatten(-1, (num_kv_heads, 4)).transpose(1, 2), 4)
    v = repeat(layer.W_v(x).unflatten(-1, (num_kv_heads, 4)).transpose(1, 2), 4)
    scores = (q @ k.transpose(-2, -1)).tril() * 0.5  # scale 1 / sqrt(4)
    want = layer.W_o(mha.merge_heads(scores @ v))
    torch.testing.assert_close(out, want, **F64)
    out2, weights = layer(x, is_causal=True, need_weights=True)
    torch.testing.assert_close(out2, want, **F64)
    torch.testing.assert_close(weights, scores, **F64)


def test_linear_attention_function_is_causal_without_a_mask():
    layer = mha.MultiHeadAttention(8, 2)
    layer.attn_implementation = "linear"  # a registered attention function
    x = torch.randn(1, 5, 8)
    with pytest.raises(ValueError, match="causal and takes no mask.*is_causal=False"):
        layer(x)
    with pytest.raises(ValueError, match="causal and takes no mask.*a mask of shape"):
        layer(x, is_causal=True, valid_lens=torch.tensor([3]))
    fn = mha.attention_functions.attention_function("linear")
    q = torch.randn(1, 2, 5, 4)
    with pytest.raises(ValueError, match="no dropout.*dropout_p=0.1"):
        fn(None, q, q, q, is_causal=True, dropout_p=0.1)


# --- the gated delta rule: chunks = recurrence -----------------------------------------------


@pytest.mark.parametrize("channel", [False, True], ids=["scalar decay", "channel-wise decay"])
@pytest.mark.parametrize("chunk_size", CHUNKS)
@pytest.mark.parametrize("L", LENGTHS)
def test_chunked_is_the_recurrence(L, chunk_size, channel):
    q, k, v, decay, beta, state = qkv(L=L, Hk=2, Hv=4, channel=channel, seed=L)
    want, want_state = mha.gated_delta_rule(q, k, v, decay, beta, state=state)
    out, S = mha.gated_delta_rule(q, k, v, decay, beta, state=state, chunk_size=chunk_size)
    torch.testing.assert_close(out, want, **F64)
    torch.testing.assert_close(S, want_state, **F64)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_strong_channel_wise_decay_stays_finite(dtype):
    """Decays of up to e^-30 a step per feature: the chunked form factorises exp(G_i - G_j)
    at the chunk's middle, so chunks over which the decay spans too much are halved
    (``_too_wide``); the result is still the recurrence's, and finite."""
    q, k, v, decay, beta, state = qkv(L=70, channel=True, dtype=dtype)
    decay = decay * 30
    decay[:, :, :, 0] = 0  # one feature never decays: the state keeps something
    want, want_state = mha.gated_delta_rule(q, k, v, decay, beta, state=state)
    out, S = mha.gated_delta_rule(q, k, v, decay, beta, state=state, chunk_size=64)
    assert torch.isfinite(out).all() and torch.isfinite(S).all()
    tol = F64 if dtype == torch.float64 else {"atol": 1e-5, "rtol": 1e-5}
    torch.testing.assert_close(out, want, **tol)
    torch.testing.assert_close(S, want_state, **tol)


def test_recurrence_is_delta_rule_step_in_a_loop():
    """The reference written out: decay, write the correction, read."""
    q, k, v, decay, beta, S = qkv(L=6, Hk=1, Hv=2)
    out, last = mha.gated_delta_rule(q, k, v, decay, beta, state=S)
    q, k = repeat(q, 2), repeat(k, 2)
    for t in range(6):
        S = S * decay[:, :, t, None, None].exp()
        recalled = torch.einsum("bhkv,bhk->bhv", S, k[:, :, t])  # S^T k
        S = S + torch.einsum("bhk,bhv->bhkv", k[:, :, t],
                             beta[:, :, t, None] * (v[:, :, t] - recalled))
        torch.testing.assert_close(out[:, :, t], torch.einsum("bhkv,bhk->bhv", S, q[:, :, t]) / 2,
                                   **F64)
    torch.testing.assert_close(last, S, **F64)


@pytest.mark.parametrize("chunk_size", [None, 4])
@pytest.mark.parametrize("channel", [False, True], ids=["scalar decay", "channel-wise decay"])
def test_state_hand_off_equals_one_call(channel, chunk_size):
    q, k, v, decay, beta, state = qkv(L=23, Hk=1, Hv=2, channel=channel)
    want, want_state = mha.gated_delta_rule(q, k, v, decay, beta, state=state, chunk_size=8)
    first, second = slice(0, 10), slice(10, None)
    a, S = mha.gated_delta_rule(q[:, :, first], k[:, :, first], v[:, :, first],
                                decay[:, :, first], beta[:, :, first], state=state,
                                chunk_size=chunk_size)
    b, S = mha.gated_delta_rule(q[:, :, second], k[:, :, second], v[:, :, second],
                                decay[:, :, second], beta[:, :, second], state=S,
                                chunk_size=chunk_size)
    torch.testing.assert_close(torch.cat([a, b], dim=2), want, **F64)
    torch.testing.assert_close(S, want_state, **F64)


def test_delta_rule_is_the_gated_rule_without_decay():
    q, k, v, decay, beta, state = qkv(L=12)
    want = mha.gated_delta_rule(q, k, v, torch.zeros_like(decay), beta, state=state)
    for chunk_size in (None, 5):
        got = mha.delta_rule(q, k, v, beta, state=state, chunk_size=chunk_size)
        torch.testing.assert_close(got[0], want[0], **F64)
        torch.testing.assert_close(got[1], want[1], **F64)
    # one step: decay None is decay 0, a channel-wise decay of one value is the scalar one
    S, qt, kt, vt, bt = state, q[:, :, 0], k[:, :, 0], v[:, :, 0], beta[:, :, 0]
    qt, kt = repeat(qt, 2), repeat(kt, 2)
    none = mha.delta_rule_step(S, qt, kt, vt, bt)
    zero = mha.delta_rule_step(S, qt, kt, vt, bt, torch.zeros_like(bt))
    torch.testing.assert_close(none[1], zero[1], **F64)
    g = -torch.rand_like(bt)
    scalar = mha.delta_rule_step(S, qt, kt, vt, bt, g)
    channel = mha.delta_rule_step(S, qt, kt, vt, bt, g[..., None].expand(-1, -1, 4))
    torch.testing.assert_close(scalar[0], channel[0], **F64)


def test_delta_rule_stores_and_recalls_exactly():
    """beta = 1 and orthonormal keys: the state maps each key to its latest value exactly
    (S^T k_i = v_i), where linear attention adds the values written under one key."""
    Dk = Dv = 6
    keys = torch.linalg.qr(torch.randn(Dk, Dk, dtype=torch.float64))[0].T  # rows orthonormal
    values = torch.randn(Dk, Dv, dtype=torch.float64)
    order = [0, 1, 2, 3, 4, 5, 2, 0]  # keys 2 and 0 written again, with new values
    new = torch.randn(2, Dv, dtype=torch.float64)
    vals = torch.cat([values, new])  # (8, Dv)
    k = keys[order].view(1, 1, 8, Dk)
    v = vals.view(1, 1, 8, Dv)
    beta = torch.ones(1, 1, 8, dtype=torch.float64)
    out, S = mha.delta_rule(k, k, v, beta, scale=1.0)
    latest = values.clone()
    latest[2], latest[0] = new[0], new[1]
    torch.testing.assert_close(keys @ S[0, 0], latest, **F64)  # row i: S^T k_i
    torch.testing.assert_close(out[0, 0], vals, **F64)  # each token reads what it wrote
    _, S_lin = mha.linear_attention(k, k, v, scale=1.0)
    assert not torch.allclose(keys[0] @ S_lin[0, 0], latest[0])  # two values, added


@pytest.mark.parametrize("channel", [False, True], ids=["scalar decay", "channel-wise decay"])
def test_gradients_of_the_chunked_form_are_the_recurrences(channel):
    inputs = [x.requires_grad_() for x in qkv(L=13, Hk=1, Hv=2, channel=channel)]
    grads = []
    for chunk_size in (None, 4):
        out, S = mha.gated_delta_rule(*inputs[:5], state=inputs[5], chunk_size=chunk_size)
        loss = (out * torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view(out.shape)).sum() \
            + (S ** 2).sum()
        grads.append(torch.autograd.grad(loss, inputs))
    for name, a, b in zip(["query", "key", "value", "decay", "beta", "state"], *grads):
        torch.testing.assert_close(a, b, **F64, msg=name)
        assert a.abs().sum() > 0, name


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_computes_in_float32(dtype):
    q, k, v, decay, beta, _ = qkv(L=20, dtype=torch.float32)
    want, want_state = mha.gated_delta_rule(q, k, v, decay, beta, chunk_size=8)
    low = [x.to(dtype) for x in (q, k, v)]
    out, S = mha.gated_delta_rule(*low, decay, beta, chunk_size=8)
    assert out.dtype == dtype and S.dtype == torch.float32
    ref, _ = mha.gated_delta_rule(*(x.float() for x in low), decay, beta, chunk_size=8)
    torch.testing.assert_close(out, ref.to(dtype))
    torch.testing.assert_close(out.float(), want, atol=0.05, rtol=0.05)


@settings(max_examples=25, deadline=None)
@given(B=st.integers(1, 2), Hk=st.integers(1, 2), ratio=st.integers(1, 2),
       L=st.integers(0, 40), Dk=st.integers(1, 6), Dv=st.integers(1, 5),
       chunk_size=st.integers(1, 20), channel=st.booleans(), seed=st.integers(0, 99))
def test_chunked_is_the_recurrence_for_random_shapes(B, Hk, ratio, L, Dk, Dv, chunk_size,
                                                     channel, seed):
    q, k, v, decay, beta, state = qkv(B, Hk, Hk * ratio, L, Dk, Dv, seed=seed, channel=channel)
    want = mha.gated_delta_rule(q, k, v, decay, beta, state=state)
    got = mha.gated_delta_rule(q, k, v, decay, beta, state=state, chunk_size=chunk_size)
    assert got[0].shape == (B, Hk * ratio, L, Dv) and got[1].shape == (B, Hk * ratio, Dk, Dv)
    torch.testing.assert_close(got[0], want[0], **F64)
    torch.testing.assert_close(got[1], want[1], **F64)
    lin = mha.linear_attention(q, k, v, chunk_size=chunk_size)[0]
    torch.testing.assert_close(lin, parallel_linear(q, k, v, 1 / math.sqrt(Dk)), **F64)


# --- the layers ------------------------------------------------------------------------------


def layers():
    torch.manual_seed(0)
    gdn = mha.GatedDeltaNet(32, 2, d_head_k=8, d_head_v=6, num_value_heads=4).double()
    kda = mha.KimiDeltaAttention(32, 3, 8, conv_size=3).double()
    for layer in (gdn, kda):
        with torch.no_grad():
            layer.norm_weight.uniform_(0.5, 1.5)
    return {"GatedDeltaNet": gdn, "KimiDeltaAttention": kda}


@pytest.mark.parametrize("name", ["GatedDeltaNet", "KimiDeltaAttention"])
def test_one_token_at_a_time_is_one_call(name):
    layer = layers()[name]
    x = torch.randn(2, 19, 32, dtype=torch.float64)
    want, want_state = layer(x)
    recurrent, _ = layer(x, chunk_size=None)
    torch.testing.assert_close(recurrent, want, **F64)
    out, state = layer(x[:, :4], chunk_size=3)  # a prefix by chunks, then token by token
    outs = [out]
    for t in range(4, 19):
        out, state = layer(x[:, t:t + 1], state=state)
        outs.append(out)
    torch.testing.assert_close(torch.cat(outs, dim=1), want, **F64)
    for a, b in zip(state, want_state):
        torch.testing.assert_close(a, b, **F64)


@pytest.mark.parametrize("name", ["GatedDeltaNet", "KimiDeltaAttention"])
def test_the_state_does_not_grow_with_the_length(name):
    layer = layers()[name].float()
    sizes = {L: layer(torch.randn(1, L, 32))[1].nbytes for L in (8, 512)}
    assert sizes[8] == sizes[512] > 0
    state = layer(torch.randn(1, 8, 32))[1]
    assert isinstance(state, mha.RecurrentState)
    assert state.conv.shape == (1, sum(layer._sizes), layer.conv_size - 1)
    assert state.matrix.shape == (1, layer.num_value_heads, layer.d_head_k, layer.d_head_v)


def test_layer_attributes_follow_the_contract():
    gdn = mha.GatedDeltaNet(32, 2, d_head_k=8, d_head_v=6, num_value_heads=4, conv_size=5)
    shapes = {name: tuple(p.shape) for name, p in gdn.named_parameters()}
    assert shapes == {"W_qkv.weight": (2 * 2 * 8 + 4 * 6, 32), "W_z.weight": (24, 32),
                      "W_b.weight": (4, 32), "W_a.weight": (4, 32),
                      "conv.weight": (56, 1, 5), "A_log": (4,), "dt_bias": (4,),
                      "norm_weight": (6,), "W_o.weight": (32, 24)}
    kda = mha.KimiDeltaAttention(32, 2, 8)
    shapes = {name: tuple(p.shape) for name, p in kda.named_parameters()}
    assert shapes == {"W_q.weight": (16, 32), "W_k.weight": (16, 32), "W_v.weight": (16, 32),
                      "conv.weight": (48, 1, 4), "W_f_down.weight": (8, 32),
                      "W_f_up.weight": (16, 8), "A_log": (2,), "dt_bias": (16,),
                      "W_b.weight": (2, 32), "W_g_down.weight": (8, 32),
                      "W_g_up.weight": (16, 8), "norm_weight": (8,), "W_o.weight": (32, 16)}


# --- bad input -------------------------------------------------------------------------------


def bad_rule_calls():
    q, k, v, decay, beta, state = qkv(B=2, Hk=2, Hv=4, L=5, Dk=4, Dv=3, dtype=torch.float32)
    ok = {"query": q, "key": k, "value": v, "decay": decay, "beta": beta}
    return [
        ({"query": q[0]}, r"query must have shape \(B, Hk, L, Dk\); got shape \(2, 5, 4\)"),
        ({"key": k[:, :, :4]}, r"query and key must have the same shape"),
        ({"value": v[:1]}, r"value must have key's batch size B = 2 and length L = 5"),
        ({"value": v[:, :3]}, r"Hv \(3\) must be a multiple of key's heads Hk \(2\)"),
        ({"decay": decay[:, :2]}, r"decay must have shape \(B, Hv, L\) = \(2, 4, 5\)"),
        ({"beta": beta[..., None]}, r"beta must have shape \(B, Hv, L\) = \(2, 4, 5\)"),
        ({"decay": decay - decay.max() + 0.3}, r"decay must be <= 0 .*got max 0.3"),
        ({"beta": beta + 1.5}, r"beta must be in \[0, 1\].*got values from 1.5"),
        ({"beta": beta - 2}, r"beta must be in \[0, 1\]"),
        ({"state": state[..., :2]}, r"state must have shape \(B, Hv, Dk, Dv\) = \(2, 4, 4, 3\)"),
        ({"chunk_size": 0}, r"chunk_size must be a positive int; got 0"),
        ({"query": q.long()}, r"query must be a floating-point tensor"),
        ({"key": k.double()}, r"key has dtype torch.float64 but query has torch.float32"),
    ], ok


@pytest.mark.parametrize("case", range(13))
def test_gated_delta_rule_errors_name_the_argument(case):
    calls, ok = bad_rule_calls()
    bad, message = calls[case]
    kwargs = {**ok, **bad}
    extra = {name: kwargs.pop(name) for name in ("state", "chunk_size") if name in kwargs}
    with pytest.raises(ValueError if case < 11 else TypeError, match=message):
        mha.gated_delta_rule(kwargs["query"], kwargs["key"], kwargs["value"], kwargs["decay"],
                             kwargs["beta"], **extra)


def test_other_entry_points_check_their_arguments():
    q, k, v, decay, beta, state = qkv(B=2, Hk=2, Hv=4, L=5, Dk=4, Dv=3, dtype=torch.float32)
    with pytest.raises(TypeError, match="chunk_size must be an int; got True"):
        mha.linear_attention(q, k, v, chunk_size=True)
    with pytest.raises(ValueError, match=r"value's heads Hv \(3\)"):
        mha.linear_attention(q, k, v[:, :3])
    with pytest.raises(ValueError, match=r"beta must have shape \(B, Hv, L\)"):
        mha.delta_rule(q, k, v, beta[:, :1])
    with pytest.raises(TypeError, match="scale must be a number"):
        mha.delta_rule(q, k, v, beta, scale="1")
    S, qt, vt, bt = state, repeat(q, 4)[:, :, 0], v[:, :, 0], beta[:, :, 0]
    with pytest.raises(ValueError, match=r"key must have shape \(2, 4, 4\)"):
        mha.delta_rule_step(S, qt, qt[..., :3], vt, bt)
    with pytest.raises(ValueError, match=r"decay must be None or have shape \(B, Hv\)"):
        mha.delta_rule_step(S, qt, qt, vt, bt, decay[:, :, 0, None])
    with pytest.raises(ValueError, match="decay must be <= 0"):
        mha.delta_rule_step(S, qt, qt, vt, bt, bt)


@pytest.mark.parametrize("name", ["GatedDeltaNet", "KimiDeltaAttention"])
def test_layer_errors_name_the_argument(name):
    layer = layers()[name]
    x = torch.randn(2, 5, 32, dtype=torch.float64)
    with pytest.raises(ValueError, match="x has 16 features but the layer expects d_model = 32"):
        layer(x[..., :16])
    with pytest.raises(ValueError, match=r"x must be batched"):
        layer(x[0])
    with pytest.raises(TypeError, match="x has dtype torch.float32"):
        layer(x.float())
    with pytest.raises(ValueError, match="chunk_size must be a positive int"):
        layer(x, chunk_size=-1)
    _, state = layer(x)
    with pytest.raises(TypeError, match="state must be the RecurrentState"):
        layer(x, state=tuple(state)[:1])
    with pytest.raises(ValueError, match=r"state.matrix must have shape .* batch size 1"):
        layer(x[:1], state=mha.RecurrentState(state.conv[:1], state.matrix))


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"num_value_heads \(3\) must be a multiple of num_heads"):
        mha.GatedDeltaNet(16, 2, d_head_k=4, d_head_v=4, num_value_heads=3)
    with pytest.raises(TypeError, match="d_head_k must be an int"):
        mha.GatedDeltaNet(16, 2, d_head_k=4.0, d_head_v=4)
    with pytest.raises(ValueError, match="conv_size must be a positive int; got 0"):
        mha.KimiDeltaAttention(16, 2, 4, conv_size=0)
    with pytest.raises(ValueError, match="eps must be > 0"):
        mha.KimiDeltaAttention(16, 2, 4, eps=0.0)

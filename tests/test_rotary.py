"""Rotary position embeddings: `mha.apply_rope` against an independent complex-number
formulation, its relative property, both pair conventions, dtypes, errors; and
`mha.RotaryMultiHeadAttention` (fused path == weights path, GQA, an explicit reference)."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha.rotary import apply_rope

# a YaRN stretch used by several tests (4 times over an original context of 4 tokens)
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4}


def rope_complex(x, positions, base=10000.0, interleaved=False):
    """The rotation written as a complex multiplication, in float64: pair j -> a + ib, times
    exp(i * position * base ** (-2j / Dh))."""
    x = x.double()
    Dh = x.size(-1)
    if interleaved:
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], Dh // 2, 2).contiguous())
    else:
        z = torch.complex(x[..., : Dh // 2], x[..., Dh // 2:])
    theta = base ** (-2.0 * torch.arange(Dh // 2, dtype=torch.float64) / Dh)
    angle = torch.as_tensor(positions, dtype=torch.float64)[:, None] * theta  # (L, Dh/2)
    z = z * torch.polar(torch.ones_like(angle), angle)
    if interleaved:
        return torch.view_as_real(z).flatten(-2)
    return torch.cat([z.real, z.imag], dim=-1)


def to_interleaved(x):
    """Rotate-half feature order (j, j + Dh/2) -> interleaved order (2j, 2j + 1)."""
    Dh = x.size(-1)
    return torch.stack([x[..., : Dh // 2], x[..., Dh // 2:]], dim=-1).flatten(-2)


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 3), heads=st.integers(1, 3), length=st.integers(1, 9),
       half=st.integers(1, 8), interleaved=st.booleans(), start=st.integers(0, 500),
       base=st.sampled_from([100.0, 10000.0, 500000.0]))
def test_apply_rope_equals_complex_multiplication(batch, heads, length, half, interleaved,
                                                  start, base):
    x = torch.randn(batch, heads, length, 2 * half, dtype=torch.float64)
    positions = torch.arange(start, start + length)
    got = apply_rope(x, positions, base=base, interleaved=interleaved)
    want = rope_complex(x, positions, base, interleaved)
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)


def test_default_positions_are_0_to_L_minus_1_and_position_0_is_identity():
    x = torch.randn(2, 7, 8)
    torch.testing.assert_close(apply_rope(x), apply_rope(x, torch.arange(7)))
    torch.testing.assert_close(apply_rope(x, [0] * 7), x)
    torch.testing.assert_close(apply_rope(x, range(7)), rope_complex(x, range(7)).float())


def test_rotation_keeps_norms():
    x = torch.randn(3, 10, 16, dtype=torch.float64)
    for interleaved in (False, True):
        y = apply_rope(x, interleaved=interleaved)
        torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))


@pytest.mark.parametrize("interleaved", [False, True])
def test_score_depends_only_on_distance(interleaved):
    q, k = torch.randn(16, dtype=torch.float64), torch.randn(16, dtype=torch.float64)
    pairs = [(5, 2), (3, 0), (103, 100), (1003, 1000)]  # all at distance m - n = 3

    def score(m, n):
        qm = apply_rope(q[None], [m], interleaved=interleaved)[0]
        kn = apply_rope(k[None], [n], interleaved=interleaved)[0]
        return (qm @ kn).item()

    scores = [score(m, n) for m, n in pairs]
    assert max(scores) - min(scores) < 1e-9
    assert abs(score(5, 2) - score(5, 3)) > 1e-3  # another distance gives another score


def test_the_two_conventions_differ_by_a_feature_permutation():
    x = torch.randn(2, 6, 12)
    rotate_half = apply_rope(x)
    interleaved = apply_rope(to_interleaved(x), interleaved=True)
    torch.testing.assert_close(interleaved, to_interleaved(rotate_half))
    assert not torch.allclose(apply_rope(x, interleaved=True), rotate_half, atol=1e-3)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("interleaved", [False, True])
def test_half_precision_keeps_dtype_and_computes_angles_in_float32(dtype, interleaved):
    x = torch.randn(2, 3, 40, 16).to(dtype)
    positions = torch.arange(1000, 1040)  # large angles: half-precision angles would be far off
    y = apply_rope(x, positions, interleaved=interleaved)
    assert y.dtype == dtype and y.shape == x.shape
    exact = rope_complex(x, positions, interleaved=interleaved)  # float64
    eps = torch.finfo(dtype).eps
    torch.testing.assert_close(y.double(), exact, atol=2 * eps, rtol=2 * eps)
    # angles computed in the half dtype itself miss by far more than one rounding
    theta = 10000.0 ** (-2 * torch.arange(8) / 16)
    naive = positions.to(dtype)[:, None] * theta.to(dtype)  # (L, Dh/2) in half precision
    exact_angles = positions.double()[:, None] * theta.double()
    assert (naive.double() - exact_angles).abs().max() > 0.1


@pytest.mark.parametrize("d_head", [1, 7, 15])
def test_odd_d_head_is_rejected(d_head):
    with pytest.raises(ValueError, match=rf"d_head = {d_head} .* must be even"):
        apply_rope(torch.randn(2, 5, d_head))


def test_bad_positions_and_inputs_are_rejected():
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match=r"positions must have shape \(L,\) = \(5,\).*\(4,\)"):
        apply_rope(x, torch.arange(4))
    with pytest.raises(ValueError, match=r"positions must have shape"):
        apply_rope(x, torch.zeros(1, 5, dtype=torch.long))
    with pytest.raises(TypeError, match="positions must be an integer tensor.*float32"):
        apply_rope(x, torch.arange(5.0))
    with pytest.raises(TypeError, match="positions must be an integer tensor.*str"):
        apply_rope(x, "01234")
    with pytest.raises(TypeError, match="x must be a floating-point tensor"):
        apply_rope(torch.ones(2, 5, 8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., L, Dh\)"):
        apply_rope(torch.randn(8))
    with pytest.raises(ValueError, match="base must be a finite number > 1"):
        apply_rope(x, base=0.5)
    with pytest.raises(TypeError, match="base must be a number"):
        apply_rope(x, base="10000")


# --- RotaryMultiHeadAttention ---------------------------------------------------------------


def attend_reference(layer, q, k, v, is_causal):
    """Plain attention of rotated q (B, H, L, Dh), k and v (B, Hkv, L, Dh), float64, then W_o."""
    B, H, L, Dh = q.shape
    k, v = (t.repeat_interleave(H // layer.num_kv_heads, dim=1) for t in (k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(Dh)
    if is_causal:
        scores = scores.masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), float("-inf"))
    out = scores.softmax(-1) @ v  # (B, H, L, Dh)
    return out.transpose(1, 2).reshape(B, L, H * Dh) @ layer.W_o.weight.double().T


def reference_rotary_attention(layer, x, is_causal=False):
    """Explicit per-head computation with the complex-number rotation (float64)."""
    B, L, _ = x.shape
    H, Hkv, Dh = layer.num_heads, layer.num_kv_heads, layer.d_head
    x = x.double()
    q = (x @ layer.W_q.weight.double().T).view(B, L, H, Dh).transpose(1, 2)
    k = (x @ layer.W_k.weight.double().T).view(B, L, Hkv, Dh).transpose(1, 2)
    v = (x @ layer.W_v.weight.double().T).view(B, L, Hkv, Dh).transpose(1, 2)
    q = rope_complex(q, range(L), layer.base, layer.interleaved)
    k = rope_complex(k, range(L), layer.base, layer.interleaved)
    return attend_reference(layer, q, k, v, is_causal)


@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("is_causal", [False, True])
def test_rotary_layer_matches_reference_fused_and_weights_paths(num_kv_heads, interleaved,
                                                                is_causal):
    torch.manual_seed(0)
    layer = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=num_kv_heads,
                                         interleaved=interleaved)
    x = torch.randn(2, 9, 32)
    fused, none = layer(x, is_causal=is_causal)
    explicit, weights = layer(x, is_causal=is_causal, need_weights=True)
    assert none is None and weights.shape == (2, 4, 9, 9)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-4)
    want = reference_rotary_attention(layer, x, is_causal).float()
    torch.testing.assert_close(explicit, want, atol=1e-5, rtol=1e-4)


def test_rotary_layer_differs_from_plain_layer_and_is_shift_invariant():
    torch.manual_seed(0)
    rotary = mha.RotaryMultiHeadAttention(16, 2)
    plain = mha.MultiHeadAttention(16, 2)
    plain.load_state_dict(rotary.state_dict())
    x = torch.randn(1, 6, 16)
    assert not torch.allclose(rotary(x)[0], plain(x)[0], atol=1e-3)
    # the weights depend on the distances only: the same pattern for every shift of the start
    _, w = rotary(x, need_weights=True)
    q_pos = torch.arange(50, 56)
    q, k, _, _ = rotary._project(x, x, x)
    q50, k50 = (apply_rope(t, q_pos) for t in (q, k))
    w50 = (q50 @ k50.transpose(-2, -1) / math.sqrt(rotary.d_head)).softmax(-1)
    torch.testing.assert_close(w, w50, atol=1e-5, rtol=1e-4)


def test_rotary_layer_errors():
    with pytest.raises(ValueError, match=r"d_head = d_model / num_heads = 3 must be even"):
        mha.RotaryMultiHeadAttention(12, 4)
    with pytest.raises(ValueError, match="base must be a finite number > 1"):
        mha.RotaryMultiHeadAttention(16, 2, base=-1.0)
    layer = mha.RotaryMultiHeadAttention(16, 2)
    x, memory = torch.randn(1, 4, 16), torch.randn(1, 5, 16)
    with pytest.raises(ValueError, match="self-attention: key must be None or query itself"):
        layer(x, memory)
    out, _ = layer(x, x, x)  # key given but it is the query: fine
    torch.testing.assert_close(out, layer(x)[0])


def test_rotary_layer_in_half_precision_keeps_dtype():
    layer = mha.RotaryMultiHeadAttention(16, 2, dtype=torch.bfloat16)
    out, _ = layer(torch.randn(1, 5, 16, dtype=torch.bfloat16))
    assert out.dtype == torch.bfloat16


def test_relative_attention_is_unchanged_by_rotary():
    # RelativeMultiHeadAttention still reduces to MultiHeadAttention with zero tables
    torch.manual_seed(0)
    rel = mha.RelativeMultiHeadAttention(16, 2, max_relative_position=3)
    with torch.no_grad():
        rel.relative_key.weight.zero_()
        rel.relative_value.weight.zero_()
    plain = mha.MultiHeadAttention(16, 2)
    plain.load_state_dict({k: v for k, v in rel.state_dict().items() if k.startswith("W_")})
    x = torch.randn(2, 7, 16)
    torch.testing.assert_close(rel(x, need_weights=True)[0], plain(x)[0], atol=1e-6, rtol=1e-5)


# --- decoding with a KVCache ----------------------------------------------------------------


@pytest.mark.parametrize("num_kv_heads", [None, 2])
@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 10, [4, 1, 3, 2], [10]])
def test_cache_decoding_equals_the_full_causal_forward(num_kv_heads, interleaved, chunks):
    torch.manual_seed(0)
    layer = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=num_kv_heads,
                                         interleaved=interleaved)
    x = torch.randn(2, sum(chunks), 32)
    full, _ = layer(x, is_causal=True)
    cache, outs, start = mha.KVCache(), [], 0
    for n in chunks:
        out, _ = layer(x[:, start:start + n], is_causal=True, cache=cache)
        outs.append(out)
        start += n
    torch.testing.assert_close(torch.cat(outs, dim=1), full, atol=1e-5, rtol=1e-5)
    # the cache holds the ROTATED keys, Hkv heads of them, never copies
    Hkv = num_kv_heads or 4
    assert cache.keys.shape == (2, Hkv, 10, 8)
    _, k, _, _ = layer._project(x, x, x)  # (B, Hkv, L, Dh), not rotated
    rotated = apply_rope(k, interleaved=interleaved)
    torch.testing.assert_close(cache.keys, rotated, atol=1e-5, rtol=1e-5)


def test_cache_decoding_weights_path_and_positions_continue():
    torch.manual_seed(0)
    layer = mha.RotaryMultiHeadAttention(16, 2)
    x = torch.randn(1, 6, 16)
    _, full_weights = layer(x, is_causal=True, need_weights=True)  # (1, 2, 6, 6)
    cache = mha.KVCache()
    layer(x[:, :5], is_causal=True, cache=cache)
    _, step_weights = layer(x[:, 5:], is_causal=True, cache=cache, need_weights=True)
    torch.testing.assert_close(step_weights[:, :, 0], full_weights[:, :, 5], atol=1e-6,
                               rtol=1e-5)
    assert cache.seq_len == 6

    class ForgetsOffset(mha.RotaryMultiHeadAttention):  # rotates new tokens from position 0
        def _position(self, q, k, offset):
            return super()._position(q, k, 0)

    wrong_layer = ForgetsOffset(16, 2)
    wrong_layer.load_state_dict(layer.state_dict())
    cache = mha.KVCache()
    wrong_layer(x[:, :5], is_causal=True, cache=cache)
    _, wrong = wrong_layer(x[:, 5:], is_causal=True, cache=cache, need_weights=True)
    assert not torch.allclose(wrong[:, :, 0], full_weights[:, :, 5], atol=1e-3)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (none present)")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("options", [
    {},  # full rotation
    {"rope_dim": 16, "scaling": YARN, "temperature_tuning": (8, 0.1)},
    {"rope_dim": 0, "temperature_tuning": (8, 0.1)},  # no positions
], ids=["full", "partial-yarn-temperature", "nope-temperature"])
def test_rotary_layer_on_cuda(dtype, options):
    """The fused path equals the explicit one and decoding equals one call, on a GPU, with the
    default rotation and with the options of 2025-2026 models."""
    tol = {torch.float32: 2e-5, torch.bfloat16: 2e-2}[dtype]
    layer = mha.RotaryMultiHeadAttention(256, 8, num_kv_heads=2, device="cuda", dtype=dtype,
                                         **options)
    x = torch.randn(2, 64, 256, device="cuda", dtype=dtype)
    fused, _ = layer(x, is_causal=True)
    explicit, _ = layer(x, is_causal=True, need_weights=True)
    assert fused.device.type == "cuda" and fused.dtype == dtype
    torch.testing.assert_close(fused, explicit, atol=tol, rtol=tol)
    cache = mha.KVCache()
    steps = [layer(x[:, t:t + 8], is_causal=True, cache=cache)[0] for t in range(0, 64, 8)]
    torch.testing.assert_close(torch.cat(steps, 1), fused, atol=tol, rtol=tol)


# --- partial rotation (rope_dim) ------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(batch=st.integers(1, 2), heads=st.integers(1, 3), length=st.integers(1, 9),
       half=st.integers(1, 6), rest=st.integers(0, 7), interleaved=st.booleans(),
       start=st.integers(0, 500), base=st.sampled_from([100.0, 10000.0, 1e6]))
def test_partial_rotation_rotates_the_first_rope_dim_features_only(batch, heads, length, half,
                                                                   rest, interleaved, start,
                                                                   base):
    R = 2 * half
    x = torch.randn(batch, heads, length, R + rest, dtype=torch.float64)  # Dh = R + rest
    positions = torch.arange(start, start + length)
    got = apply_rope(x, positions, base=base, interleaved=interleaved, rope_dim=R)
    assert got.shape == x.shape
    # the rotated part: RoPE of R features, frequencies base ** (-2j / R), pairs within them
    want = rope_complex(x[..., :R], positions, base, interleaved)
    torch.testing.assert_close(got[..., :R], want, atol=1e-10, rtol=1e-10)
    assert torch.equal(got[..., R:], x[..., R:])  # the others untouched, bit for bit


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("interleaved", [False, True])
def test_rope_dim_d_head_is_todays_rotation(dtype, interleaved):
    x = torch.randn(2, 3, 20, 16).to(dtype)
    positions = torch.arange(990, 1010)
    today = apply_rope(x, positions, interleaved=interleaved)
    assert torch.equal(apply_rope(x, positions, interleaved=interleaved, rope_dim=16), today)
    assert torch.equal(apply_rope(x, positions, interleaved=interleaved, scaling=None), today)


@pytest.mark.parametrize("interleaved", [False, True])
def test_partial_score_depends_on_distance_in_the_rotated_part_only(interleaved):
    q, k = torch.randn(24, dtype=torch.float64), torch.randn(24, dtype=torch.float64)
    R = 8

    def score(m, n, part):
        qm = apply_rope(q[None], [m], interleaved=interleaved, rope_dim=R)[0]
        kn = apply_rope(k[None], [n], interleaved=interleaved, rope_dim=R)[0]
        return (qm[part] @ kn[part]).item()

    rotated, passed = slice(0, R), slice(R, None)
    pairs = [(5, 2), (3, 0), (103, 100), (1003, 1000)]  # all at distance 3
    scores = [score(m, n, rotated) for m, n in pairs]
    assert max(scores) - min(scores) < 1e-9
    assert abs(score(5, 2, rotated) - score(5, 3, rotated)) > 1e-3
    # the features passed through carry no position at all: the same score at any distance
    passed_scores = [score(m, n, passed) for m, n in pairs + [(0, 700), (9, 1)]]
    assert max(passed_scores) - min(passed_scores) == 0
    assert passed_scores[0] == pytest.approx((q[R:] @ k[R:]).item())


def test_partial_rotation_frequencies_count_the_rotated_features_only():
    # Hugging Face's partial_rotary_factor: theta_j = base ** (-2j / R), not ** (-2j / Dh)
    x = torch.zeros(1, 2, 64, dtype=torch.float64)
    x[0, :, 1] = 1.0  # the second pair's first feature (rotate-half: pair j = (j, j + R/2))
    y = apply_rope(x, [0, 1], rope_dim=16)  # position 1: pair 1 turns by theta_1
    theta_1 = 10000.0 ** (-2.0 / 16)
    assert y[0, 1, 1].item() == pytest.approx(math.cos(theta_1))
    assert y[0, 1, 1 + 8].item() == pytest.approx(math.sin(theta_1))


def test_partial_rotation_with_an_odd_d_head():
    x = torch.randn(2, 5, 7)
    y = apply_rope(x, rope_dim=4)
    assert torch.equal(y[..., 4:], x[..., 4:])
    with pytest.raises(ValueError, match=r"d_head = 7 .* must be even"):
        apply_rope(x)


@pytest.mark.parametrize("rope_dim,error,match", [
    (3, ValueError, r"rope_dim must be an even int with 0 < rope_dim <= d_head = 8 .*got 3"),
    (10, ValueError, "rope_dim must be an even int.*got 10"),
    (0, ValueError, "rope_dim must be an even int with 0 < rope_dim"),
    (-2, ValueError, "got -2"),
    (4.0, TypeError, "rope_dim must be an int"),
    (True, TypeError, "rope_dim must be an int"),
])
def test_bad_rope_dim_is_rejected(rope_dim, error, match):
    with pytest.raises(error, match=match):
        apply_rope(torch.randn(2, 5, 8), rope_dim=rope_dim)


# --- the layer's new options: rope_dim, scaling, temperature_tuning ---------------------------

LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 16}


def reference_layer(layer, x, is_causal=False):
    """The layer with every position option written out in float64: rotate the first rope_dim
    features with frequencies from the definitions, scale by the attention factor, multiply
    the queries by the temperature, then plain attention (no qk_norm, gate, window, sinks)."""
    from mha.rope_scaling import rope_frequencies

    B, L, _ = x.shape
    H, Hkv, Dh, R = layer.num_heads, layer.num_kv_heads, layer.d_head, layer.rope_dim
    x = x.double()
    q = (x @ layer.W_q.weight.double().T).view(B, L, H, Dh).transpose(1, 2)
    k = (x @ layer.W_k.weight.double().T).view(B, L, Hkv, Dh).transpose(1, 2)
    v = (x @ layer.W_v.weight.double().T).view(B, L, Hkv, Dh).transpose(1, 2)
    if R:
        inv_freq, factor = rope_frequencies(R, base=layer.base, scaling=layer.scaling,
                                            dtype=torch.float64)
        angles = torch.arange(L, dtype=torch.float64)[:, None] * inv_freq  # (L, R/2)
        turn = torch.polar(torch.full_like(angles, factor), angles)  # factor * exp(i angle)

        def rotate(t):
            if layer.interleaved:
                z = torch.view_as_complex(t[..., :R].reshape(*t.shape[:-1], R // 2, 2)
                                          .contiguous()) * turn
                return torch.cat([torch.view_as_real(z).flatten(-2), t[..., R:]], -1)
            z = torch.complex(t[..., : R // 2], t[..., R // 2:R]) * turn
            return torch.cat([z.real, z.imag, t[..., R:]], -1)

        q, k = rotate(q), rotate(k)
    if layer.temperature_tuning is not None:
        floor_scale, attn_scale = layer.temperature_tuning
        scales = [1 + attn_scale * math.log(1 + math.floor((p + 1) / floor_scale))
                  for p in range(L)]
        q = q * torch.tensor(scales, dtype=torch.float64)[:, None]
    return attend_reference(layer, q, k, v, is_causal)


LAYER_OPTIONS = {
    "partial": {"rope_dim": 4},
    "partial interleaved": {"rope_dim": 6, "interleaved": True},
    "NoPE": {"rope_dim": 0},
    "NoPE + temperature": {"rope_dim": 0, "temperature_tuning": (3, 0.5)},
    "rotary + temperature": {"temperature_tuning": (2.0, 0.25)},
    "yarn": {"scaling": YARN},
    "yarn, partial": {"scaling": YARN, "rope_dim": 4},
    "llama3 interleaved": {"scaling": LLAMA3, "interleaved": True},
    "linear": {"scaling": {"rope_type": "linear", "factor": 8.0}},
}


@pytest.mark.parametrize("name", sorted(LAYER_OPTIONS))
@pytest.mark.parametrize("is_causal", [False, True])
def test_layer_options_match_the_reference(name, is_causal):
    torch.manual_seed(0)
    layer = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2, **LAYER_OPTIONS[name])
    x = torch.randn(2, 11, 32)
    fused, _ = layer(x, is_causal=is_causal)
    explicit, _ = layer(x, is_causal=is_causal, need_weights=True)
    want = reference_layer(layer, x, is_causal).float()
    torch.testing.assert_close(fused, want, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(explicit, want, atol=1e-5, rtol=1e-4)
    # and each option changes the output of the plain rotary layer
    plain = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2)
    plain.load_state_dict(layer.state_dict())
    assert not torch.allclose(plain(x, is_causal=is_causal)[0], fused, atol=1e-4)


@pytest.mark.parametrize("num_kv_heads", [None, 2])
@pytest.mark.parametrize("d_model,num_heads", [(32, 4), (12, 4)])  # d_head 8, and an odd 3
def test_nope_layer_is_a_plain_multi_head_attention(num_kv_heads, d_model, num_heads):
    torch.manual_seed(0)
    nope = mha.RotaryMultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads,
                                        rope_dim=0)
    plain = mha.MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads)
    plain.load_state_dict(nope.state_dict())
    assert nope.state_dict().keys() == plain.state_dict().keys()
    x = torch.randn(2, 7, d_model)
    for is_causal in (False, True):
        for need_weights in (False, True):
            got, w = nope(x, is_causal=is_causal, need_weights=need_weights)
            want, w_want = plain(x, is_causal=is_causal, need_weights=need_weights)
            assert torch.equal(got, want)
            assert (w is None and w_want is None) or torch.equal(w, w_want)


def test_temperature_tuning_scales_the_queries_by_position():
    torch.manual_seed(0)
    layer = mha.RotaryMultiHeadAttention(16, 2, rope_dim=0, temperature_tuning=(4, 0.5))
    x = torch.randn(1, 12, 16)
    q, k, _, _ = layer._project(x, x, x)
    tuned, same_k = layer._position(q, k, 0)
    assert torch.equal(same_k, k)
    scales = tuned / q  # (1, H, L, Dh): one factor per position
    want = [1 + 0.5 * math.log(1 + (p + 1) // 4) for p in range(12)]  # 1 for p < 3
    torch.testing.assert_close(scales[0, :, :, 0], torch.tensor([want] * 2), atol=1e-6,
                               rtol=1e-6)
    torch.testing.assert_close(scales, scales[..., :1].expand_as(scales), atol=1e-6, rtol=1e-5)
    later, _ = layer._position(q, k, 100)  # with a cache: the absolute positions 100 ..
    assert not torch.allclose(later, tuned)
    torch.testing.assert_close(
        mha.rotary.temperature_scales(torch.arange(100, 112), 4, 0.5),
        torch.tensor([1 + 0.5 * math.log(1 + (p + 1) // 4) for p in range(100, 112)]))


@pytest.mark.parametrize("name", sorted(LAYER_OPTIONS) + ["all together"])
@pytest.mark.parametrize("chunks", [[1] * 10, [4, 1, 3, 2]])
def test_cache_decoding_equals_one_call_for_each_option(name, chunks):
    torch.manual_seed(0)
    options = LAYER_OPTIONS.get(name) or {
        "rope_dim": 4, "scaling": YARN, "temperature_tuning": (2, 0.3), "window": 6,
        "sinks": True, "qk_norm": True, "gate": True}
    layer = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2, **options)
    x = torch.randn(2, sum(chunks), 32)
    full, _ = layer(x, is_causal=True)
    cache, outs, start = mha.KVCache(), [], 0
    for n in chunks:
        outs.append(layer(x[:, start:start + n], is_causal=True, cache=cache)[0])
        start += n
    torch.testing.assert_close(torch.cat(outs, dim=1), full, atol=1e-5, rtol=1e-5)


def test_new_options_keep_the_parameters_and_show_in_the_repr():
    plain = mha.RotaryMultiHeadAttention(16, 2)
    text = repr(plain)
    for name, options in sorted(LAYER_OPTIONS.items()):
        layer = mha.RotaryMultiHeadAttention(16, 2, **options)
        assert layer.state_dict().keys() == plain.state_dict().keys(), name
        shown = repr(layer)
        for key, value in options.items():
            if key == "temperature_tuning":  # stored as two floats
                value = tuple(float(v) for v in value)
            if key != "interleaved":
                assert f"{key}={value}" in shown, (name, shown)
    assert "rope_dim" not in text and "scaling" not in text and "temperature" not in text
    assert plain.rope_dim == 8 and plain.scaling is None and plain.temperature_tuning is None
    assert "rope_dim" not in repr(mha.RotaryMultiHeadAttention(16, 2, rope_dim=8))


def test_new_options_in_half_precision_keep_dtype():
    layer = mha.RotaryMultiHeadAttention(32, 4, rope_dim=4, scaling=YARN,
                                         temperature_tuning=(2, 0.3), dtype=torch.bfloat16)
    out, _ = layer(torch.randn(1, 9, 32, dtype=torch.bfloat16), is_causal=True)
    assert out.dtype == torch.bfloat16


def test_layer_option_errors():
    with pytest.raises(ValueError, match=r"rope_dim must be 0 \(no positions\) or an even int"
                                         r" with 0 < rope_dim <= d_head = 8 .*got 10"):
        mha.RotaryMultiHeadAttention(16, 2, rope_dim=10)
    with pytest.raises(ValueError, match="rope_dim must be 0 .*got 5"):
        mha.RotaryMultiHeadAttention(16, 2, rope_dim=5)
    with pytest.raises(ValueError, match="rope_dim=0 rotates nothing"):
        mha.RotaryMultiHeadAttention(16, 2, rope_dim=0, scaling=YARN)
    with pytest.raises(ValueError, match="scaling must have a 'rope_type' key"):
        mha.RotaryMultiHeadAttention(16, 2, scaling={"factor": 4.0})
    with pytest.raises(TypeError, match=r"temperature_tuning must be None or a pair"):
        mha.RotaryMultiHeadAttention(16, 2, temperature_tuning=(4, 0.1, 2))
    with pytest.raises(ValueError, match="temperature_tuning's floor_scale must be > 0"):
        mha.RotaryMultiHeadAttention(16, 2, temperature_tuning=(0, 0.1))
    with pytest.raises(TypeError, match="temperature_tuning's attn_scale must be a number"):
        mha.RotaryMultiHeadAttention(16, 2, temperature_tuning=(4, "0.1"))
    # an odd d_head needs a partial or no rotation
    assert mha.RotaryMultiHeadAttention(12, 4, rope_dim=2).rope_dim == 2
    with pytest.raises(ValueError, match="d_head = d_model / num_heads = 3 must be even"):
        mha.RotaryMultiHeadAttention(12, 4)

"""Frequencies for longer contexts: `mha.rope_scaling.rope_frequencies` (plain, linear, YaRN,
Llama 3) from their definitions, written here independently in float64 (rotations per original
context for YaRN, wavelengths for Llama 3), their effect through `mha.apply_rope`, and the
errors for bad `scaling` dicts. Parity with Hugging Face's functions: tests/test_parity_hf.py."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.rope_scaling import check_scaling, rope_frequencies
from mha.rotary import apply_rope


def plain(rope_dim, base=10000.0):
    """theta_j = base ** (-2j / rope_dim), float64 (rope_dim/2,)."""
    return base ** (-2.0 * torch.arange(rope_dim // 2, dtype=torch.float64) / rope_dim)


def yarn(s, context, **extra):
    return {"rope_type": "yarn", "factor": s, "original_max_position_embeddings": context,
            **extra}


def llama3(s, low, high, context):
    return {"rope_type": "llama3", "factor": s, "low_freq_factor": low,
            "high_freq_factor": high, "original_max_position_embeddings": context}


def rotate_complex(x, angles):
    """x (..., L, R) rotate-half pairs times exp(i angles (L, R/2)), float64."""
    R = x.size(-1)
    z = torch.complex(x[..., : R // 2].double(), x[..., R // 2:].double())
    z = z * torch.polar(torch.ones_like(angles), angles)
    return torch.cat([z.real, z.imag], dim=-1)


# --- plain and linear ---------------------------------------------------------------------------


@pytest.mark.parametrize("rope_dim", [2, 8, 64, 128])
def test_no_scaling_is_plain_rope(rope_dim):
    for scaling in (None, {"rope_type": "default"}):
        inv_freq, factor = rope_frequencies(rope_dim, base=500000.0, scaling=scaling)
        assert inv_freq.shape == (rope_dim // 2,) and inv_freq.dtype == torch.float32
        assert factor == 1.0
        torch.testing.assert_close(inv_freq.double(), plain(rope_dim, 500000.0), atol=0,
                                   rtol=2e-7)
    inv64, _ = rope_frequencies(rope_dim, dtype=torch.float64)
    torch.testing.assert_close(inv64, plain(rope_dim), atol=0, rtol=1e-15)


@pytest.mark.parametrize("s", [1.0, 2.0, 8.0, 40.0])
def test_linear_scaling_divides_the_positions_by_the_factor(s):
    inv_freq, factor = rope_frequencies(16, scaling={"rope_type": "linear", "factor": s},
                                        dtype=torch.float64)
    torch.testing.assert_close(inv_freq, plain(16) / s, atol=0, rtol=1e-15)
    assert factor == 1.0
    # through apply_rope: the token at position m turns as one at position m / s did
    x = torch.randn(2, 3, 12, 16, dtype=torch.float64)
    positions = torch.arange(100, 112)
    got = apply_rope(x, positions, scaling={"rope_type": "linear", "factor": s})
    angles = (positions.double() / s)[:, None] * plain(16)  # fractional positions m / s
    torch.testing.assert_close(got, rotate_complex(x, angles), atol=1e-10, rtol=1e-10)


# --- YaRN ---------------------------------------------------------------------------------------


def rotations(rope_dim, base, context):
    """How many full turns pair j makes over the original context: context * theta_j / 2 pi."""
    return context * plain(rope_dim, base) / (2 * math.pi)


@pytest.mark.parametrize("rope_dim,base,context,s", [(64, 10000.0, 4096, 32.0),
                                                     (128, 1e6, 32768, 4.0),
                                                     (64, 150000.0, 4096, 32.0),
                                                     (16, 10000.0, 1024, 8.0)])
def test_yarn_keeps_fast_pairs_divides_slow_ones_and_ramps_between(rope_dim, base, context, s):
    # truncate=False: the ramp runs exactly between the (fractional) pairs that turn beta_fast
    # and beta_slow times over the original context
    inv_freq, _ = rope_frequencies(rope_dim, base=base, scaling=yarn(s, context, truncate=False),
                                   dtype=torch.float64)
    theta, r = plain(rope_dim, base), rotations(rope_dim, base, context)
    fast, slow = r >= 32, r <= 1
    assert fast.any() and slow.any()  # both ends are there
    torch.testing.assert_close(inv_freq[fast], theta[fast], atol=0, rtol=1e-15)
    torch.testing.assert_close(inv_freq[slow], theta[slow] / s, atol=0, rtol=1e-15)
    # between: a linear ramp in j from the pair turning 32 times to the one turning once
    j = torch.arange(rope_dim // 2, dtype=torch.float64)

    def pair(turns):  # solve context * base ** (-2j / rope_dim) / (2 pi) = turns for j
        return rope_dim / 2 * math.log(context / (2 * math.pi * turns)) / math.log(base)

    ramp = ((j - pair(32)) / (pair(1) - pair(32))).clamp(0, 1)
    torch.testing.assert_close(inv_freq, theta * (1 - ramp) + theta / s * ramp, atol=0,
                               rtol=1e-12)
    middle = ~fast & ~slow
    assert ((inv_freq[middle] < theta[middle]) & (inv_freq[middle] > theta[middle] / s)).all()


def test_yarn_truncate_rounds_the_ramp_outwards_to_whole_pairs():
    rope_dim, base, context, s = 64, 10000.0, 4096, 32.0
    exact, _ = rope_frequencies(rope_dim, base=base, scaling=yarn(s, context, truncate=False),
                                dtype=torch.float64)
    rounded, _ = rope_frequencies(rope_dim, base=base, scaling=yarn(s, context),
                                  dtype=torch.float64)
    theta = plain(rope_dim, base)
    kept = (rounded == theta).nonzero().flatten()
    divided = torch.isclose(rounded, theta / s, rtol=1e-15, atol=0).nonzero().flatten()
    r = rotations(rope_dim, base, context)
    # the ramp starts at floor(pair(32)) and ends at ceil(pair(1)): fewer kept, fewer divided
    assert kept.max() == int((r >= 32).sum()) - 1  # pair(32) lies between these two pairs
    assert divided.min() == int((r > 1).sum())
    assert not torch.equal(exact, rounded)


@pytest.mark.parametrize("s", [1.0, 2.0, 4.0, 40.0])
def test_yarn_attention_factor(s):
    _, factor = rope_frequencies(32, scaling=yarn(s, 4096))
    assert factor == pytest.approx(0.1 * math.log(s) + 1)  # 1.0 for s = 1
    _, given = rope_frequencies(32, scaling=yarn(s, 4096, attention_factor=1.25))
    assert given == 1.25
    _, ratio = rope_frequencies(32, scaling=yarn(s, 4096, mscale=0.707, mscale_all_dim=1.0))
    assert ratio == pytest.approx((0.0707 * math.log(s) + 1) / (0.1 * math.log(s) + 1))
    _, deepseek = rope_frequencies(32, scaling=yarn(s, 4096, mscale=1.0, mscale_all_dim=1.0))
    assert deepseek == 1.0


def test_yarn_in_apply_rope_scales_only_the_rotated_features():
    scaling = yarn(4.0, 16)
    factor = 0.1 * math.log(4.0) + 1
    x = torch.randn(2, 3, 40, 16, dtype=torch.float64)
    y = apply_rope(x, scaling=scaling, rope_dim=8)
    torch.testing.assert_close(y[..., 8:], x[..., 8:], atol=0, rtol=0)  # passed through
    torch.testing.assert_close(y[..., :8].norm(dim=-1), factor * x[..., :8].norm(dim=-1))
    inv_freq, _ = rope_frequencies(8, scaling=scaling, dtype=torch.float64)
    angles = torch.arange(40, dtype=torch.float64)[:, None] * inv_freq
    torch.testing.assert_close(y[..., :8], factor * rotate_complex(x[..., :8], angles))
    # so the scores of the rotated parts grow by factor ** 2, still a function of distance
    q, k = x[0, 0], x[0, 1]  # (40, 16)
    qr, kr = apply_rope(q, scaling=scaling, rope_dim=8), apply_rope(k, scaling=scaling, rope_dim=8)
    scores = qr[:, :8] @ kr[:, :8].T
    q0, k0 = apply_rope(q, rope_dim=8), apply_rope(k, rope_dim=8)  # plain at distance 0
    torch.testing.assert_close(scores.diagonal(), factor ** 2 * (q0[:, :8] * k0[:, :8]).sum(-1))


# --- Llama 3 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("rope_dim,base,s,low,high,context", [(128, 500000.0, 8.0, 1.0, 4.0, 8192),
                                                              (128, 500000.0, 16.0, 1.0, 4.0, 8192),
                                                              (64, 10000.0, 8.0, 2.0, 8.0, 512)])
def test_llama3_bands_by_wavelength(rope_dim, base, s, low, high, context):
    inv_freq, factor = rope_frequencies(rope_dim, base=base,
                                        scaling=llama3(s, low, high, context),
                                        dtype=torch.float64)
    assert factor == 1.0
    theta = plain(rope_dim, base)
    wavelength = 2 * math.pi / theta
    short, long = wavelength < context / high, wavelength > context / low
    middle = ~short & ~long
    assert short.any() and long.any() and middle.any()
    torch.testing.assert_close(inv_freq[short], theta[short], atol=0, rtol=1e-15)
    torch.testing.assert_close(inv_freq[long], theta[long] / s, atol=0, rtol=1e-15)
    smooth = (context / wavelength[middle] - low) / (high - low)  # 0 .. 1 across the band
    want = (1 - smooth) * theta[middle] / s + smooth * theta[middle]
    torch.testing.assert_close(inv_freq[middle], want, atol=0, rtol=1e-12)


# --- every type: shapes and bounds ------------------------------------------------------------


SCALINGS = st.one_of(
    st.just(None),
    st.floats(1.0, 64.0).map(lambda s: {"rope_type": "linear", "factor": s}),
    st.tuples(st.floats(1.0, 64.0), st.sampled_from([256, 4096, 32768]), st.booleans()).map(
        lambda a: yarn(a[0], a[1], truncate=a[2])),
    st.tuples(st.floats(1.0, 64.0), st.sampled_from([(1.0, 4.0), (2.0, 8.0)]),
              st.sampled_from([512, 8192])).map(lambda a: llama3(a[0], *a[1], a[2])),
)


@settings(max_examples=40, deadline=None)
@given(half=st.integers(1, 64), base=st.sampled_from([100.0, 10000.0, 1e6]), scaling=SCALINGS)
def test_frequencies_lie_between_theta_over_s_and_theta(half, base, scaling):
    inv_freq, factor = rope_frequencies(2 * half, base=base, scaling=scaling,
                                        dtype=torch.float64)
    theta = plain(2 * half, base)
    s = 1.0 if scaling is None else scaling["factor"]
    assert inv_freq.shape == (half,) and factor >= 1.0
    assert (inv_freq <= theta * (1 + 1e-12)).all() and (inv_freq >= theta / s * (1 - 1e-12)).all()
    assert (inv_freq[1:] <= inv_freq[:-1]).all()  # still from fast to slow pairs
    if scaling is not None:
        assert check_scaling(scaling)["rope_type"] == scaling["rope_type"]


# --- bad scaling dicts ------------------------------------------------------------------------


@pytest.mark.parametrize("scaling,error,match", [
    ("yarn", TypeError, "scaling must be None or a dict"),
    ({"factor": 4.0}, ValueError, "scaling must have a 'rope_type' key"),
    ({"type": "yarn", "factor": 4.0}, ValueError, "older configs call it 'type'"),
    ({"rope_type": "dynamic", "factor": 4.0}, ValueError, r"scaling\['rope_type'\] must be one of"),
    ({"rope_type": "longrope"}, ValueError, "'dynamic'|must be one of"),
    ({"rope_type": "linear"}, ValueError, r"needs the keys \['factor'\]; missing \['factor'\]"),
    ({"rope_type": "linear", "factor": None}, ValueError, r"missing \['factor'\]"),
    ({"rope_type": "yarn", "factor": 4.0}, ValueError,
     r"missing \['original_max_position_embeddings'\]"),
    ({"rope_type": "linear", "factor": 2.0, "beta_fast": 3}, ValueError,
     "unknown for rope_type 'linear'"),
    ({"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6}, ValueError, "pass it as base="),
    ({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 64,
      "partial_rotary_factor": 0.25}, ValueError, "pass it as rope_dim="),
    ({"rope_type": "linear", "factor": 0.5}, ValueError, r"scaling\['factor'\].* >= 1.0; got 0.5"),
    ({"rope_type": "linear", "factor": "4"}, TypeError, r"scaling\['factor'\].* must be a number"),
    ({"rope_type": "linear", "factor": float("inf")}, ValueError, "finite"),
    (yarn(4.0, 0), ValueError, r"original_max_position_embeddings'\] \(yarn\) must be a positive"),
    (yarn(4.0, 64.5), TypeError, "original_max_position_embeddings.*must be an int"),
    (yarn(4.0, 64, beta_fast=1.0, beta_slow=2.0), ValueError, "beta_fast.*greater than"),
    (yarn(4.0, 64, beta_slow=-1.0), ValueError, r"beta_slow'\] \(yarn\) must be a number > 0"),
    (yarn(4.0, 64, mscale=1.0), ValueError, "go together"),
    (yarn(4.0, 64, mscale=1.0, mscale_all_dim=1.0, attention_factor=1.2), ValueError,
     "not both"),
    (yarn(4.0, 64, attention_factor=0.0), ValueError, r"attention_factor'\] \(yarn\) must be"),
    (yarn(4.0, 64, truncate="no"), TypeError, r"scaling\['truncate'\] \(yarn\) must be a bool"),
    (llama3(8.0, 4.0, 1.0, 8192), ValueError, "high_freq_factor.*must be at least"),
    (llama3(8.0, 0.0, 4.0, 8192), ValueError, "low_freq_factor.*> 0"),
])
def test_bad_scaling_is_rejected(scaling, error, match):
    with pytest.raises(error, match=match):
        rope_frequencies(16, scaling=scaling)
    with pytest.raises(error, match=match):
        apply_rope(torch.randn(2, 5, 16), scaling=scaling)


@pytest.mark.parametrize("rope_dim", [0, 3, -2, 2.0, True, "8"])
def test_bad_rope_dim_is_rejected(rope_dim):
    with pytest.raises((TypeError, ValueError), match="rope_dim must be"):
        rope_frequencies(rope_dim)


def test_check_scaling_fills_defaults_and_copies():
    given = yarn(4, 4096)
    checked = check_scaling(given)
    assert checked == {"rope_type": "yarn", "factor": 4.0,
                       "original_max_position_embeddings": 4096, "beta_fast": 32.0,
                       "beta_slow": 1.0, "mscale": None, "mscale_all_dim": None,
                       "attention_factor": None, "truncate": True}
    assert checked is not given and given == yarn(4, 4096)
    assert check_scaling(None) is None


def test_llama3_with_equal_factors_is_a_step_as_in_llama4_scout():
    """Llama 4 Scout sets low_freq_factor = high_freq_factor = 1: no blend, every pair that
    turns less than once over the original context is divided by the factor, the rest kept."""
    from mha.rope_scaling import rope_frequencies as freqs

    plain, _ = freqs(128, base=500000.0)
    theta, factor = freqs(128, base=500000.0, scaling=llama3(16.0, 1.0, 1.0, 8192))
    turns = 8192 * plain / (2 * math.pi)
    assert factor == 1.0
    assert torch.equal(theta[turns >= 1], plain[turns >= 1])
    assert torch.allclose(theta[turns < 1], plain[turns < 1] / 16)
    assert 0 < int((turns < 1).sum()) < 64

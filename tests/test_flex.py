"""mha.flex: the book's masks and score changes as FlexAttention mask_mods and score_mods give
what the package gives (float32, atol 1e-5): causal and windowed attention, packed documents,
soft-capping, ALiBi, attention sinks (from FlexAttention's log-sum-exp), grouped-query heads.

FlexAttention runs here without torch.compile (its unfused reference, on CPU): the shapes are
small and the examples few. The mask builders need no FlexAttention (``dense_mask``), so their
tests run on any torch; the others skip before torch 2.5.
"""

import math
import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import flex
from mha.attention_functions import repeat_kv
from mha.modern import sink_attention, window_mask

TOL = {"atol": 1e-5, "rtol": 1e-5}
needs_flex = pytest.mark.skipif(
    not flex.flex_available(),
    reason=f"FlexAttention (torch.nn.attention.flex_attention, torch >= 2.5) is not in this "
           f"torch ({torch.__version__})")

MAX_DIFF = {}  # test -> the largest |flex - package| it saw, printed at the end


def close(name, out, expected):
    """assert_close at TOL, and remember the largest difference under ``name``."""
    torch.testing.assert_close(out, expected, **TOL)
    diff = (out - expected).abs().max().item() if out.numel() else 0.0
    MAX_DIFF[name] = max(MAX_DIFF.get(name, 0.0), diff)


def qkv(B=2, H=4, Hkv=None, Lq=9, Lk=None, Dh=8):
    """q (B, H, Lq, Dh), k and v (B, Hkv, Lk, Dh), float32."""
    Hkv, Lk = H if Hkv is None else Hkv, Lq if Lk is None else Lk
    return torch.randn(B, H, Lq, Dh), torch.randn(B, Hkv, Lk, Dh), torch.randn(B, Hkv, Lk, Dh)


def package(q, k, v, allowed=None, scale=None):
    """The package's explicit attention, key/value heads repeated for GQA: (B, H, Lq, Dh)."""
    H = q.size(1)
    out, _ = mha.scaled_dot_product_attention(q, repeat_kv(k, H), repeat_kv(v, H), allowed,
                                              scale=scale)
    return out


def explicit(q, k, v, change_scores, allowed=None):
    """softmax(change_scores(q k^T / sqrt(Dh))) v written out, masked entries -inf."""
    H = q.size(1)
    k, v = repeat_kv(k, H), repeat_kv(v, H)  # (B, Hkv, Lk, Dh) -> (B, H, Lk, Dh)
    scores = change_scores(q @ k.transpose(-2, -1) / math.sqrt(q.size(-1)))  # (B, H, Lq, Lk)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ v  # (B, H, Lq, Lk) @ (B, H, Lk, Dh) -> (B, H, Lq, Dh)


# --- availability -----------------------------------------------------------------------------


def test_flex_available_follows_the_torch_version():
    major, minor = (int(x) for x in torch.__version__.split(".")[:2])
    assert flex.flex_available() == ((major, minor) >= (2, 5))


@pytest.mark.parametrize("version", ["2.4.1", "2.4.0+cu121", "2.3.0"])
def test_old_torch_gets_a_clear_error(monkeypatch, version):
    monkeypatch.setattr(flex, "_TORCH_VERSION", version)
    assert not flex.flex_available()
    q, k, v = qkv()
    with pytest.raises(RuntimeError, match=r"torch 2\.5") as info:
        flex.flex_attention(q, k, v, mask_mod=flex.causal())
    assert f"this is torch {version}" in str(info.value)
    assert "dense_mask" in str(info.value)
    # the builders need no FlexAttention: their masks run through the package
    allowed = flex.dense_mask(flex.causal(), 9, 9)
    close("old torch: dense_mask path", package(q, k, v, allowed),
          package(q, k, v, mha.causal_mask(9)))


def test_version_parsing_reads_major_and_minor():
    assert flex._version("2.13.0+cpu") == (2, 13)
    assert flex._version("2.5.0.dev20240901") == (2, 5)
    assert flex._version("2.4.1") < flex.FLEX_MIN_TORCH <= flex._version("2.5.0a0")


# --- the masks, as bool tensors (any torch) ---------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.integers(1, 9), st.integers(0, 6), st.integers(1, 10))
def test_causal_and_window_masks_are_the_packages(num_queries, past, window):
    Lk = past + num_queries  # the queries are the last Lq of Lk positions
    causal = flex.dense_mask(flex.causal(offset=past), num_queries, Lk)[0, 0]
    assert torch.equal(causal, torch.ones(num_queries, Lk, dtype=torch.bool).tril(past))
    band = flex.dense_mask(flex.sliding_window(window, offset=past), num_queries, Lk)[0, 0]
    assert torch.equal(band, window_mask(num_queries, Lk, window))
    assert (band.sum(-1) <= window).all()  # w keys, itself included


def block_diagonal(lengths):
    """bool (L, L): True within each document of the given lengths."""
    ids = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths))
    return ids[:, None] == ids[None, :]


def test_document_mask_is_block_diagonal():
    ids = torch.repeat_interleave(torch.arange(3), torch.tensor([3, 4, 2]))  # (9,)
    mask = flex.dense_mask(flex.document_mask(ids), 9, 9)[0, 0]
    assert torch.equal(mask, block_diagonal([3, 4, 2]))
    causal = flex.dense_mask(flex.document_mask(ids, causal=True), 9, 9)[0, 0]
    assert torch.equal(causal, block_diagonal([3, 4, 2]).tril())
    rows = torch.stack([ids, ids.flip(0)])  # (B, L): one packing per row
    both = flex.dense_mask(flex.document_mask(rows), 9, 9, batch_size=2)
    assert both.shape == (2, 1, 9, 9)
    assert torch.equal(both[1, 0], block_diagonal([2, 4, 3]))


def test_and_masks_is_the_intersection():
    ids = torch.repeat_interleave(torch.arange(2), torch.tensor([5, 6]))
    mods = (flex.sliding_window(3), flex.document_mask(ids))
    both = flex.dense_mask(flex.and_masks(*mods), 11, 11)
    assert torch.equal(both, flex.dense_mask(mods[0], 11, 11) & flex.dense_mask(mods[1], 11, 11))
    assert flex.and_masks(*mods).tensors["document_ids"] is ids  # for the device check


# --- FlexAttention against the package ----------------------------------------------------------


@needs_flex
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_causal_equals_the_package(num_kv_heads):
    q, k, v = qkv(Hkv=num_kv_heads, Lq=13)
    out = flex.flex_attention(q, k, v, mask_mod=flex.causal())
    close("causal (GQA)", out, package(q, k, v, mha.causal_mask(13)))
    assert out.shape == (2, 4, 13, 8)


@needs_flex
def test_no_mask_and_a_scale_equal_the_package():
    q, k, v = qkv(Lq=5, Lk=11)
    close("no mask, scale", flex.flex_attention(q, k, v, scale=0.3), package(q, k, v, scale=0.3))


@needs_flex
@settings(max_examples=6, deadline=None)
@given(st.integers(1, 2), st.sampled_from([(2, 2), (4, 2), (4, 1)]), st.integers(1, 12),
       st.integers(0, 7), st.integers(1, 6), st.sampled_from([4, 8]))
def test_decoding_window_equals_the_package(batch, heads, num_queries, past, window, d_head):
    """Lq new queries after ``past`` positions: the window aligned at the bottom right."""
    Lk = past + num_queries
    q, k, v = qkv(batch, heads[0], heads[1], num_queries, Lk, d_head)
    out = flex.flex_attention(q, k, v, mask_mod=flex.sliding_window(window, offset=past))
    close("sliding window (hypothesis)", out,
          package(q, k, v, window_mask(num_queries, Lk, window)))


@needs_flex
def test_window_equals_the_layers_windowed_attention():
    """RotaryMultiHeadAttention(window=3)'s attention step (mha.modern.window_attend), on the
    layer's own rotated q and k."""
    layer = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2, window=3).eval()
    x = torch.randn(2, 10, 32)
    with torch.no_grad():  # FlexAttention has no backward on CPU
        q, k, v, _ = layer._project(x, x, x)
        q, k = layer._position(q, k, 0)  # rotated: (B, H, L, Dh), (B, Hkv, L, Dh)
        expected, _ = layer._attend(q, k, v, None, False, False)
    close("sliding window vs the layer", flex.flex_attention(
        q, k, v, mask_mod=flex.sliding_window(3)), expected)


@needs_flex
@pytest.mark.parametrize("causal", [False, True])
def test_document_mask_equals_a_block_diagonal_mask(causal):
    lengths = [3, 7, 1, 5]
    ids = torch.repeat_interleave(torch.arange(4), torch.tensor(lengths))  # (16,)
    q, k, v = qkv(Lq=16)
    allowed = block_diagonal(lengths)  # (16, 16)
    allowed = allowed.tril() if causal else allowed
    out = flex.flex_attention(q, k, v, mask_mod=flex.document_mask(ids, causal=causal))
    close("document mask", out, package(q, k, v, allowed))


@needs_flex
def test_per_row_documents_and_a_window_compose():
    ids = torch.stack([torch.repeat_interleave(torch.arange(2), torch.tensor([4, 8])),
                       torch.repeat_interleave(torch.arange(3), torch.tensor([6, 3, 3]))])
    q, k, v = qkv(Hkv=2, Lq=12)
    mod = flex.and_masks(flex.document_mask(ids, causal=True), flex.sliding_window(4))
    allowed = flex.dense_mask(mod, 12, 12, batch_size=2)  # (B, 1, L, L)
    expected = (ids[:, :, None] == ids[:, None, :]) & window_mask(12, 12, 4)  # (B, L, L)
    assert torch.equal(allowed[:, 0], expected)
    close("documents per row & window", flex.flex_attention(q, k, v, mask_mod=mod),
          package(q, k, v, expected[:, None]))


@needs_flex
def test_block_size_changes_nothing():
    q, k, v = qkv(Lq=37)
    mod = flex.sliding_window(5)
    close("block_size 16 vs 128", flex.flex_attention(q, k, v, mask_mod=mod, block_size=16),
          flex.flex_attention(q, k, v, mask_mod=mod))


@needs_flex
@pytest.mark.parametrize("cap", [0.5, 2.0, 50.0])
def test_soft_cap_equals_the_formula(cap):
    q, k, v = qkv(Hkv=2, Lq=10)
    q = q * 3  # scores of several units, so that a small cap bites
    allowed = mha.causal_mask(10)
    out = flex.flex_attention(q, k, v, mask_mod=flex.causal(), score_mod=flex.soft_cap(cap))
    close("soft cap", out, explicit(q, k, v, lambda s: cap * torch.tanh(s / cap), allowed))
    if cap == 0.5:  # it changed the result
        assert (out - package(q, k, v, allowed)).abs().max() > 1e-2


def paper_slopes(n):
    """ALiBi's get_slopes, as in the paper's code (github.com/ofirpress/attention_with_linear_biases)."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + paper_slopes(2 * closest)[0::2][:n - closest]


@pytest.mark.parametrize("num_heads", [1, 2, 3, 4, 6, 8, 12, 16])
def test_alibi_slopes_follow_the_paper(num_heads):
    slopes = flex.alibi_slopes(num_heads)
    torch.testing.assert_close(slopes, torch.tensor(paper_slopes(num_heads)))
    if num_heads == 8:
        assert slopes.tolist() == [2.0 ** -i for i in range(1, 9)]


@needs_flex
@pytest.mark.parametrize("num_heads, num_kv_heads, past", [(4, 2, 0), (6, 3, 0), (8, 8, 5)])
def test_alibi_equals_an_explicit_bias(num_heads, num_kv_heads, past):
    Lq, Lk = 7, 7 + past
    q, k, v = qkv(H=num_heads, Hkv=num_kv_heads, Lq=Lq, Lk=Lk)
    slopes = flex.alibi_slopes(num_heads).view(-1, 1, 1)  # (H, 1, 1)
    i = torch.arange(past, Lk)[:, None]  # (Lq, 1): the queries' positions
    j = torch.arange(Lk)[None, :]  # (1, Lk)
    bias = slopes * (j - i)  # (H, Lq, Lk): -m_h * distance
    allowed = window_mask(Lq, Lk, Lk)  # causal, bottom right
    out = flex.flex_attention(q, k, v, mask_mod=flex.causal(offset=past),
                              score_mod=flex.alibi(num_heads, offset=past))
    close("ALiBi", out, explicit(q, k, v, lambda s: s + bias, allowed))


@needs_flex
@pytest.mark.parametrize("num_kv_heads", [4, 2])
@pytest.mark.parametrize("masked", ["causal", "window", "empty rows"])
def test_sinks_equal_sink_attention(num_kv_heads, masked):
    q, k, v = qkv(Hkv=num_kv_heads, Lq=11)
    sinks = torch.randn(4) * 2
    mods = {"causal": flex.causal(), "window": flex.sliding_window(3),
            "empty rows": lambda b, h, qi, ki: (ki <= qi) & (qi % 4 != 1)}
    allowed = flex.dense_mask(mods[masked], 11, 11)  # (1, 1, Lq, Lk)
    expected, weights = sink_attention(q, k, v, sinks, allowed, scale=1 / math.sqrt(8))
    out = flex.flex_attention(q, k, v, mask_mod=mods[masked], sinks=sinks)
    close("sinks", out, expected)
    if masked == "empty rows":  # no key, no sink's share: zeros, never NaN
        assert (out[:, :, 1::4] == 0).all() and not out.isnan().any()
    assert (weights.sum(-1) < 1).all() or masked == "empty rows"


@needs_flex
def test_no_backward_on_cpu_is_torchs_clear_error():
    """FlexAttention differentiates on a GPU only (tests/test_gpu.py checks the sinks' gradients
    there); on a CPU torch refuses inputs that require grad, saying so."""
    q, k, v = qkv(B=1, Lq=4)
    with pytest.raises(NotImplementedError, match="backward on CPU"):
        flex.flex_attention(q.requires_grad_(), k, v, mask_mod=flex.causal())


@needs_flex
def test_flex_lse_is_a_natural_log():
    """What the sinks rest on: torch returns the log-sum-exp of the scaled, modified scores in
    base e (its kernels work in base 2 and convert back), -inf for a row with no key."""
    fa = flex._flex()
    q, k, v = qkv(B=1, H=2, Lq=6)
    mask = fa.create_block_mask(lambda b, h, qi, ki: (ki <= qi) & (qi != 2), 1, 2, 6, 6,
                                device="cpu")
    kwargs = ({"return_aux": fa.AuxRequest(lse=True)} if hasattr(fa, "AuxRequest")
              else {"return_lse": True})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, aux = fa.flex_attention(q, k, v, block_mask=mask, **kwargs)
    lse = aux if isinstance(aux, torch.Tensor) else aux.lse  # (B, H, Lq)
    allowed = mha.causal_mask(6) & (torch.arange(6) != 2)[:, None]
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8)).masked_fill(~allowed, float("-inf"))
    expected = scores.logsumexp(-1)  # natural log; row 2: -inf
    assert lse.dtype == torch.float32 and lse.shape == (1, 2, 6)
    assert torch.isneginf(lse[..., 2]).all()
    rows = [0, 1, 3, 4, 5]
    close("lse (natural log)", lse[..., rows], expected[..., rows])
    assert (lse[..., rows] - expected[..., rows] / math.log(2)).abs().max() > 0.1  # not base 2


@needs_flex
def test_the_eager_warning_is_silenced_and_only_it(monkeypatch):
    fa = flex._flex()
    if not hasattr(fa, "_WARNINGS_SHOWN"):
        pytest.skip("this torch keeps no _WARNINGS_SHOWN set to reset")
    q, k, v = qkv(B=1, H=1, Lq=4)
    monkeypatch.setattr(fa, "_WARNINGS_SHOWN", set())  # as in a fresh process
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        flex.flex_attention(q, k, v, mask_mod=flex.causal())
    assert not [w for w in seen if flex._EAGER_WARNING in str(w.message)]
    monkeypatch.setattr(fa, "_WARNINGS_SHOWN", set())
    with warnings.catch_warnings(record=True) as seen:  # torch's own call does warn
        warnings.simplefilter("always")
        fa.flex_attention(q, k, v)
    assert [w for w in seen if flex._EAGER_WARNING in str(w.message)]


@needs_flex
def test_a_tensor_on_another_device_is_named():
    q, k, v = qkv(Lq=4)
    ids = torch.zeros(4, dtype=torch.long, device="meta")
    with pytest.raises(ValueError, match="document_ids on device meta"):
        flex.flex_attention(q, k, v, mask_mod=flex.document_mask(ids))


def teardown_module():
    width = max(map(len, MAX_DIFF), default=0)
    print("\ntest_flex: largest |flex - package| per test")
    for name, diff in sorted(MAX_DIFF.items()):
        print(f"  {name:<{width}}  {diff:.2e}")


@needs_flex
def test_document_ids_must_cover_the_queries_and_keys():
    """A document mask is for self-attention over its own positions: ids shorter than the
    sequence (an index past the end) or Lq != Lk are refused with the shapes named."""
    q = torch.randn(2, 2, 8, 4)
    ids = torch.tensor([0, 0, 0, 1, 1, 1])  # 6 positions for 8 tokens
    with pytest.raises(ValueError, match=r"document_ids has shape \(6,\).*Lq = 8, Lk = 8"):
        mha.flex.flex_attention(q, q, q, mask_mod=mha.flex.document_mask(ids))
    ids8 = torch.tensor([0, 0, 0, 1, 1, 1, 1, 1])
    with pytest.raises(ValueError, match="L = Lq = Lk"):
        mha.flex.flex_attention(q[:, :, :5], q, q, mask_mod=mha.flex.document_mask(ids8))
    with pytest.raises(ValueError, match="B rows"):
        mha.flex.flex_attention(q, q, q, mask_mod=mha.flex.document_mask(ids8[None].repeat(3, 1)))

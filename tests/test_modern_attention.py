"""Part V: what recent models changed in the attention layer.

``RotaryMultiHeadAttention``'s ``window``, ``sinks``, ``qk_norm`` and ``gate``, and
``LatentAttention`` (Multi-head Latent Attention), against references written out here from
the formulas (an explicit windowed mask, a softmax with an extra sink column, RMSNorm then rope,
a sigmoid gate; MLA's per-head keys and values); fused path == weights path; decoding one token
(or chunk) at a time == one call; absorb == plain; the windowed cache keeps ``w`` positions; the
error messages. Parity with Hugging Face ``transformers`` is in ``test_parity_hf.py``.

Shape legend: B batch, L length, D d_model, H heads, Hkv key/value heads, Dh d_head.
"""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import mha
from mha.modern import window_mask

TOL = {"atol": 1e-5, "rtol": 1e-5}
OPTIONS = ("window", "sinks", "qk_norm", "gate")


# --- references, from the formulas ------------------------------------------------------------

def rope_ref(x, positions, base=10000.0):
    """Rotate-half rotary embedding, x (..., L, Dh): x cos + rotate_half(x) sin (the HF form)."""
    Dh = x.size(-1)
    theta = base ** (-torch.arange(0, Dh, 2, dtype=torch.float64) / Dh)  # (Dh/2,)
    angle = positions.double()[:, None] * theta  # (L, Dh/2)
    cos, sin = torch.cat([angle, angle], -1).cos(), torch.cat([angle, angle], -1).sin()
    half = torch.cat([-x[..., Dh // 2:], x[..., : Dh // 2]], dim=-1)
    return (x.double() * cos + half.double() * sin).to(x.dtype)


def rms_norm_ref(x, weight, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def modern_ref(layer, x, allowed=None, past=0):
    """RotaryMultiHeadAttention with its options, written out: x (B, L, D) are the tokens at
    positions past .. past + L - 1 after ``past`` earlier ones (here: none, past=0), causal, with
    the window; ``allowed`` (B, 1, L, L) or None, an extra bool mask. Returns (out, weights)."""
    B, L, _ = x.shape
    H, Hkv, Dh = layer.num_heads, layer.num_kv_heads, layer.d_head
    q = layer.W_q(x).unflatten(-1, (H, Dh)).transpose(1, 2)  # (B, H, L, Dh)
    k = layer.W_k(x).unflatten(-1, (Hkv, Dh)).transpose(1, 2)  # (B, Hkv, L, Dh)
    v = layer.W_v(x).unflatten(-1, (Hkv, Dh)).transpose(1, 2)
    if layer.qk_norm:  # RMSNorm of each head's features, then the rotation
        q, k = rms_norm_ref(q, layer.q_norm.weight), rms_norm_ref(k, layer.k_norm.weight)
    positions = torch.arange(past, past + L)
    q, k = rope_ref(q, positions, layer.base), rope_ref(k, positions, layer.base)
    k, v = k.repeat_interleave(H // Hkv, 1), v.repeat_interleave(H // Hkv, 1)  # (B, H, L, Dh)
    scores = q @ k.transpose(-2, -1) / math.sqrt(Dh)  # (B, H, L, L)
    i, j = positions[:, None], positions[None, :]
    keep = j <= i  # causal
    if layer.window is not None:
        keep = keep & (j > i - layer.window)  # i - w < j <= i
    if allowed is not None:
        keep = keep & allowed
    scores = scores.masked_fill(~keep, float("-inf"))
    if layer.sinks is not None:  # one more column: the head's sink logit, dropped after
        sink = layer.sinks.view(1, H, 1, 1).expand(B, H, L, 1)
        weights = torch.cat([scores, sink], dim=-1).softmax(-1)[..., :-1]
    else:
        weights = scores.softmax(-1).nan_to_num(0.0)
    out = (weights @ v).transpose(1, 2).flatten(2)  # (B, H, L, Dh) -> (B, L, H*Dh)
    if layer.gate:
        out = out * torch.sigmoid(layer.W_g(x))  # head h's columns times its gate
    return layer.W_o(out), weights


def make(options, num_heads=4, num_kv_heads=None, d_model=32, bias=False, seed=0, **kwargs):
    """A RotaryMultiHeadAttention with the named options on (window: 3), random sinks."""
    torch.manual_seed(seed)
    kw = {"window": 3 if "window" in options else None, "sinks": "sinks" in options,
          "qk_norm": "qk_norm" in options, "gate": "gate" in options, **kwargs}
    layer = mha.RotaryMultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads,
                                         bias=bias, **kw).eval()
    with torch.no_grad():
        if layer.sinks is not None:
            layer.sinks.normal_(0.0, 2.0)
        if layer.qk_norm:
            layer.q_norm.weight.normal_(1.0, 0.3)
            layer.k_norm.weight.normal_(1.0, 0.3)
    return layer


def decode(layer, x, chunks, cache, **kwargs):
    outs, start = [], 0
    for size in chunks:
        outs.append(layer(x[:, start:start + size], is_causal=True, cache=cache, **kwargs)[0])
        start += size
    assert start == x.size(1)
    return torch.cat(outs, dim=1)


SINGLE = [(name,) for name in OPTIONS]
SOME = SINGLE + [("window", "sinks"), ("qk_norm", "gate"), OPTIONS]


# --- every option off: today's layer ----------------------------------------------------------

def test_options_off_is_todays_layer():
    torch.manual_seed(0)
    today = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2, bias=True)
    torch.manual_seed(0)
    off = mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2, bias=True, window=None,
                                       sinks=False, qk_norm=False, gate=False)
    assert list(off.state_dict()) == list(today.state_dict()) == [
        f"W_{n}.{p}" for n in "qkvo" for p in ("weight", "bias")]
    for a, b in zip(off.parameters(), today.parameters(), strict=True):
        assert torch.equal(a, b)
    assert repr(off) == repr(today)
    x = torch.randn(2, 6, 32)
    for kwargs in ({}, {"is_causal": True}, {"need_weights": True}):
        got, want = off(x, **kwargs), today(x, **kwargs)
        assert torch.equal(got[0], want[0])


@pytest.mark.parametrize("options", SOME)
def test_new_parameters_and_keys(options):
    layer = make(options, num_kv_heads=2, bias=True)
    keys = set(layer.state_dict())
    assert ("sinks" in keys) == ("sinks" in options)
    if "sinks" in options:
        assert layer.sinks.shape == (4,)
    assert ({"q_norm.weight", "k_norm.weight"} <= keys) == ("qk_norm" in options)
    if "qk_norm" in options:
        assert isinstance(layer.q_norm, torch.nn.RMSNorm) and layer.q_norm.eps == 1e-6
        assert layer.q_norm.normalized_shape == (8,)
    assert ({"W_g.weight", "W_g.bias"} <= keys) == ("gate" in options)
    if "gate" in options:
        assert (layer.W_g.in_features, layer.W_g.out_features) == (32, 32)
    assert layer.window == (3 if "window" in options else None)


def test_options_that_change_nothing_give_the_plain_layer():
    """A window longer than the sequence, a sink at -inf-ish, a gate of sigmoid(0) = 1/2."""
    torch.manual_seed(0)
    plain = mha.RotaryMultiHeadAttention(32, 4).eval()
    x = torch.randn(2, 7, 32)
    want, _ = plain(x, is_causal=True)
    for kwargs in ({"window": 7}, {"window": 100}, {"sinks": True}):
        layer = mha.RotaryMultiHeadAttention(32, 4, **kwargs).eval()
        layer.load_state_dict(plain.state_dict(), strict=False)
        if layer.sinks is not None:
            with torch.no_grad():
                layer.sinks.fill_(-1e4)
        for need_weights in (False, True):
            torch.testing.assert_close(layer(x, need_weights=need_weights, is_causal=True)[0],
                                       want, **TOL)
    gated = mha.RotaryMultiHeadAttention(32, 4, gate=True).eval()
    gated.load_state_dict(plain.state_dict(), strict=False)
    with torch.no_grad():
        gated.W_g.weight.zero_()
        gated.W_o.weight.mul_(2)  # sigmoid(0) = 1/2 on every head
    torch.testing.assert_close(gated(x, is_causal=True)[0], want, **TOL)


# --- against the references -------------------------------------------------------------------

@pytest.mark.parametrize("options", SOME)
@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
def test_matches_the_formula(options, num_kv_heads):
    layer = make(options, num_kv_heads=num_kv_heads, bias=True)
    x = torch.randn(2, 8, 32)
    want, want_weights = modern_ref(layer, x)
    fused, none = layer(x, is_causal=True)
    out, weights = layer(x, is_causal=True, need_weights=True)
    assert none is None and weights.shape == (2, 4, 8, 8)
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(out, want, **TOL)
    torch.testing.assert_close(weights, want_weights, **TOL)


@given(batch=st.integers(1, 3), length=st.integers(1, 10),
       heads=st.sampled_from([(1, 1), (2, 1), (2, 2), (4, 2), (4, 1)]),
       d_head=st.sampled_from([2, 4, 8]), window=st.one_of(st.none(), st.integers(1, 12)),
       flags=st.tuples(st.booleans(), st.booleans(), st.booleans()),
       valid=st.booleans(), seed=st.integers(0, 99))
def test_random_shapes_match_the_formula(batch, length, heads, d_head, window, flags, valid,
                                         seed):
    (num_heads, num_kv_heads), (sinks, qk_norm, gate) = heads, flags
    torch.manual_seed(seed)
    layer = mha.RotaryMultiHeadAttention(num_heads * d_head, num_heads, num_kv_heads=num_kv_heads,
                                         window=window, sinks=sinks, qk_norm=qk_norm,
                                         gate=gate, bias=bool(seed % 2)).eval()
    if sinks:
        with torch.no_grad():
            layer.sinks.normal_(0.0, 2.0)
    x = torch.randn(batch, length, num_heads * d_head)
    lens = torch.randint(0, length + 1, (batch,)) if valid else None
    allowed = None if lens is None else (torch.arange(length) < lens[:, None])[:, None, None]
    want, want_weights = modern_ref(layer, x, allowed)
    fused, _ = layer(x, is_causal=True, valid_lens=lens)
    out, weights = layer(x, is_causal=True, valid_lens=lens, need_weights=True)
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(out, want, **TOL)
    torch.testing.assert_close(weights, want_weights, **TOL)


def test_window_implies_causal_and_sees_w_keys():
    layer = make(("window",))
    x = torch.randn(1, 9, 32)
    a, w = layer(x, need_weights=True)  # is_causal left out
    b, _ = layer(x, is_causal=True)
    torch.testing.assert_close(a, b, **TOL)
    seen = (w[0, 0] > 0).sum(-1)  # keys with weight, per query
    assert seen.tolist() == [1, 2, 3, 3, 3, 3, 3, 3, 3]
    i, j = torch.arange(9)[:, None], torch.arange(9)[None, :]
    assert torch.equal(w[0, 0] > 0, (j <= i) & (j > i - 3))
    assert torch.equal(window_mask(9, 9, 3), (j <= i) & (j > i - 3))


@given(length=st.integers(1, 12), past=st.integers(0, 5), dropped=st.integers(0, 5),
       window=st.integers(1, 6), chunk=st.integers(1, 5), masked=st.booleans(),
       seed=st.integers(0, 99))
def test_window_attention_by_blocks_equals_one_band(length, past, dropped, window, chunk,
                                                    masked, seed):
    """mha.modern.window_attention (blocks of queries, each over the keys its window reaches)
    == one SDPA call with the whole band, with cached positions and a dropped prefix."""
    from mha.attention_functions import sdpa as fused_attention

    start = min(dropped, past)
    torch.manual_seed(seed)
    total = past + length
    q = torch.randn(2, 4, length, 8)
    k, v = torch.randn(2, 2, total - start, 8), torch.randn(2, 2, total - start, 8)
    band = window_mask(length, total, window, start=start)  # (Lq, Lk)
    allowed = torch.rand(2, 1, length, total - start) > 0.3 if masked else None
    want = fused_attention(q, k, v, band if allowed is None else band & allowed)
    blocks = []

    def attend(q, k, v, mask):
        blocks.append(q.size(-2))
        return fused_attention(q, k, v, mask)

    got = mha.modern.window_attention(attend, q, k, v, window, past=past, start=start,
                                      allowed=allowed, chunk=chunk)
    torch.testing.assert_close(got, want, **TOL)
    assert sum(blocks) == length and max(blocks) <= chunk


@pytest.mark.parametrize("options", [("window",), ("window", "sinks", "gate"), ("sinks",)])
def test_long_sequence_takes_several_blocks(options):
    """300 tokens, window 5 (or sinks, causal): the fused path runs in blocks of 128 queries."""
    torch.manual_seed(0)
    layer = mha.RotaryMultiHeadAttention(8, 2, num_kv_heads=1,
                                         window=5 if "window" in options else None,
                                         sinks="sinks" in options, gate="gate" in options).eval()
    if layer.sinks is not None:
        with torch.no_grad():
            layer.sinks.normal_(0.0, 2.0)
    x = torch.randn(1, 300, 8)
    calls = []
    original = mha.modern.window_mask
    try:
        mha.rotary.window_mask = mha.modern.window_mask = (
            lambda *a, **kw: calls.append(a[0]) or original(*a, **kw))
        fused, _ = layer(x, is_causal=True)
    finally:
        mha.rotary.window_mask = mha.modern.window_mask = original
    assert calls == [128, 128, 44]
    want, _ = modern_ref(layer, x)
    torch.testing.assert_close(fused, want, **TOL)
    torch.testing.assert_close(layer(x, is_causal=True, need_weights=True)[0], want, **TOL)


def test_sink_weights_sum_below_one():
    layer = make(("sinks",))
    x = torch.randn(2, 6, 32)
    _, w = layer(x, is_causal=True, need_weights=True)
    sums = w.sum(-1)  # (B, H, L)
    assert w.shape == (2, 4, 6, 6) and (sums < 1).all() and (sums > 0).all()
    # the sink scales a row of softmax weights by 1 / (1 + exp(s_h) / sum_j exp(score_ij)):
    # the same factor for every key of the row, smaller for a larger sink
    plain = mha.RotaryMultiHeadAttention(32, 4).eval()
    plain.load_state_dict(layer.state_dict(), strict=False)
    _, w_plain = plain(x, is_causal=True, need_weights=True)
    ratio = w / w_plain.clamp_min(1e-30)  # (B, H, L, L): one value per row where allowed
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    torch.testing.assert_close(ratio[..., causal], sums[..., None].expand(-1, -1, -1, 6)[
        ..., causal], **TOL)
    with torch.no_grad():
        layer.sinks.add_(1.0)
    assert (layer(x, is_causal=True, need_weights=True)[1].sum(-1) < sums).all()


def test_sinks_empty_rows_give_zeros_never_nan():
    layer = make(("sinks", "window"))
    x = torch.randn(2, 5, 32)
    mask = torch.ones(2, 1, 5, 5, dtype=torch.bool)
    mask[0, :, 2] = False  # query 2 of sequence 0 may attend no key
    for need_weights in (False, True):
        out, w = layer(x, mask=mask, need_weights=need_weights)
        assert torch.isfinite(out).all()
    assert torch.equal(w[0, :, 2], torch.zeros(4, 5))
    want, _ = modern_ref(layer, x, mask)
    torch.testing.assert_close(out, want, **TOL)


@pytest.mark.parametrize("options", [("sinks",), ("window", "sinks", "gate")])
def test_fused_and_explicit_gradients_agree(options):
    layer = make(options, num_kv_heads=2, bias=True).train()
    x = torch.randn(2, 7, 32)
    grads = []
    for need_weights in (False, True):
        layer.zero_grad()
        layer(x, is_causal=True, need_weights=need_weights)[0].square().sum().backward()
        grads.append({n: p.grad.clone() for n, p in layer.named_parameters()})
    assert grads[0]["sinks"].abs().sum() > 0
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], atol=1e-4, rtol=1e-4)


def test_mask_valid_lens_and_head_mask_combine():
    layer = make(OPTIONS, num_kv_heads=2)
    x = torch.randn(2, 6, 32)
    torch.manual_seed(3)
    mask = torch.rand(2, 1, 6, 6) > 0.3
    head_mask = torch.tensor([1.0, 0.0, 0.5, 1.0])
    want, want_w = modern_ref(layer, x, mask)
    # head_mask: remove head 1 and halve head 2, by hand on the reference (before gate and W_o)
    out, w = layer(x, mask=mask, need_weights=True, head_mask=head_mask)
    fused, _ = layer(x, mask=mask, head_mask=head_mask)
    torch.testing.assert_close(w, want_w, **TOL)
    torch.testing.assert_close(out, fused, **TOL)
    scale = head_mask.repeat_interleave(8)  # (H*Dh,)
    o = layer.W_o
    with torch.no_grad():
        layer.W_o = torch.nn.Linear(32, 32, bias=False)
        layer.W_o.weight.copy_(o.weight * scale)
        want_hm, _ = modern_ref(layer, x, mask)
        layer.W_o = o
    torch.testing.assert_close(out, want_hm, **TOL)


def test_prune_heads_matches_head_mask():
    layer = make(("sinks", "gate", "qk_norm"), num_heads=4)
    x = torch.randn(2, 5, 32)
    masked, _ = layer(x, is_causal=True, head_mask=torch.tensor([1.0, 0.0, 1.0, 0.0]))
    layer.prune_heads([1, 3])
    assert layer.num_heads == 2 and layer.sinks.shape == (2,) and layer.W_g.out_features == 16
    torch.testing.assert_close(layer(x, is_causal=True)[0], masked, **TOL)


def test_record_attention_sees_the_modern_layer():
    layer = make(OPTIONS)
    x = torch.randn(1, 5, 32)
    with mha.record_attention(layer) as recorded:
        out, weights = layer(x)
    assert weights is None
    torch.testing.assert_close(recorded["RotaryMultiHeadAttention"], modern_ref(layer, x)[1],
                               **TOL)


# --- decoding with a cache --------------------------------------------------------------------

@pytest.mark.parametrize("options", SOME)
@pytest.mark.parametrize("need_weights", [False, True])
def test_token_by_token_equals_one_call(options, need_weights):
    layer = make(options, num_kv_heads=2, bias=True)
    x = torch.randn(2, 9, 32)
    want, _ = layer(x, is_causal=True)
    caches = [mha.KVCache()] + ([mha.KVCache(window=3), mha.KVCache(window=5)]
                                if "window" in options else [])
    for cache in caches:
        got = decode(layer, x, [1] * 9, cache, need_weights=need_weights)
        torch.testing.assert_close(got, want, **TOL)
        assert cache.seq_len == 9


@given(chunks=st.lists(st.integers(1, 5), min_size=1, max_size=5),
       window=st.integers(1, 6), cache_window=st.integers(0, 3), flags=st.tuples(
           st.booleans(), st.booleans(), st.booleans()))
def test_any_chunking_equals_one_call(chunks, window, cache_window, flags):
    sinks, qk_norm, gate = flags
    torch.manual_seed(len(chunks))
    layer = mha.RotaryMultiHeadAttention(16, 2, num_kv_heads=1, window=window, sinks=sinks,
                                         qk_norm=qk_norm, gate=gate).eval()
    x = torch.randn(1, sum(chunks), 16)
    want, _ = layer(x, is_causal=True)
    cache = mha.KVCache(window=None if cache_window == 0 else window + cache_window - 1)
    torch.testing.assert_close(decode(layer, x, chunks, cache), want, **TOL)


def test_windowed_cache_keeps_only_w_positions():
    layer = make(("window",), num_kv_heads=2)  # window 3
    x = torch.randn(2, 10, 32)
    cache = mha.KVCache(window=3)
    assert cache.seq_len == 0 and cache.start == 0 and repr(cache) == "KVCache(empty, window=3)"
    layer(x[:, :2], cache=cache)
    assert cache.seq_len == 2 and cache.keys.shape == (2, 2, 2, 8) and cache.start == 0
    layer(x[:, 2:8], cache=cache)  # a chunk longer than the window
    assert cache.seq_len == 8 and cache.start == 5 and cache.keys.shape == (2, 2, 3, 8)
    for t in range(8, 10):
        layer(x[:, t:t + 1], cache=cache)
        assert cache.keys.size(-2) == 3 and cache.values.size(-2) == 3
    assert cache.seq_len == 10 and cache.start == 7
    assert cache.nbytes == 2 * 2 * 2 * 3 * 8 * 4  # keys and values, B Hkv w Dh, float32
    assert "window=3, start=7" in repr(cache)
    # the kept keys are the rotated keys of positions 7, 8, 9
    full = mha.KVCache()
    layer(x, cache=full)
    torch.testing.assert_close(cache.keys, full.keys[..., 7:, :], **TOL)
    cache.reset()
    assert cache.seq_len == 0 and cache.start == 0 and cache.keys is None


def test_windowed_cache_weights_cover_the_kept_keys():
    layer = make(("window", "sinks"))
    x = torch.randn(1, 6, 32)
    _, want = layer(x, need_weights=True)  # (1, H, 6, 6)
    cache = mha.KVCache(window=3)
    layer(x[:, :5], cache=cache)
    _, w = layer(x[:, 5:], cache=cache, need_weights=True)
    assert w.shape == (1, 4, 1, 4)  # the 3 kept positions (2, 3, 4) and the new one (5)
    torch.testing.assert_close(w[..., 1:], want[:, :, 5:, 3:], **TOL)
    assert torch.equal(w[..., 0], torch.zeros(1, 4, 1))  # position 2 is outside the window


def test_cache_with_mask_over_every_position():
    layer = make(("window", "gate"), num_kv_heads=2)
    x = torch.randn(2, 7, 32)
    torch.manual_seed(5)
    mask = torch.rand(2, 1, 7, 7) > 0.2
    want, _ = layer(x, mask=mask)
    lens = torch.tensor([4, 7])
    want_lens, _ = layer(x, valid_lens=lens)
    for window in (None, 3):
        cache, cache_lens, outs, outs_lens = (mha.KVCache(window=window),
                                              mha.KVCache(window=window), [], [])
        for t in range(7):
            outs.append(layer(x[:, t:t + 1], mask=mask[:, :, t:t + 1, :t + 1], cache=cache)[0])
            outs_lens.append(layer(x[:, t:t + 1], valid_lens=lens, cache=cache_lens)[0])
        torch.testing.assert_close(torch.cat(outs, 1), want, **TOL)
        torch.testing.assert_close(torch.cat(outs_lens, 1), want_lens, **TOL)


def test_cache_values_may_have_their_own_feature_size():
    cache = mha.KVCache()
    k, v = torch.randn(2, 1, 3, 8), torch.randn(2, 1, 3, 4)
    cache.append(k, v)
    keys, values = cache.append(k[:, :, :1], v[:, :, :1])
    assert keys.shape == (2, 1, 4, 8) and values.shape == (2, 1, 4, 4)
    with pytest.raises(ValueError, match=r"the cache holds values with 4 features, but the new "
                                         r"values have 5"):
        cache.append(k[:, :, :1], torch.randn(2, 1, 1, 5))
    with pytest.raises(ValueError, match=r"k and v must have the same shape \(B, Hkv, Lk\)"):
        mha.KVCache().append(k, v[:, :, :2])


# --- LatentAttention --------------------------------------------------------------------------

MLA = {"kv_rank": 8, "qk_nope_dim": 6, "qk_rope_dim": 4, "v_head_dim": 5}


def make_latent(q_rank=None, interleaved=False, bias=False, seed=0, num_heads=4, **kwargs):
    torch.manual_seed(seed)
    layer = mha.LatentAttention(32, num_heads, **{**MLA, **kwargs}, q_rank=q_rank,
                                interleaved=interleaved, bias=bias).eval()
    with torch.no_grad():
        for norm in ("kv_norm", "q_norm"):
            if hasattr(layer, norm):
                getattr(layer, norm).weight.normal_(1.0, 0.3)
    return layer


def latent_ref(layer, x, allowed=None):
    """MLA written out per head, causal: every head's key [k_nope | k_rope] and value from the
    latent, the query [q_nope | q_rope], score / sqrt(Dn + Dr)."""
    B, L, _ = x.shape
    H, R, Dn, Dr, Dv = (layer.num_heads, layer.kv_rank, layer.qk_nope_dim, layer.qk_rope_dim,
                        layer.v_head_dim)
    if layer.q_rank is None:
        q = layer.W_q(x)
    else:
        q = layer.W_uq(rms_norm_ref(layer.W_dq(x), layer.q_norm.weight))
    q = q.view(B, L, H, Dn + Dr)  # (B, L, H, Dn+Dr)
    ckv = layer.W_dkv(x)  # (B, L, R + Dr)
    c = rms_norm_ref(ckv[..., :R], layer.kv_norm.weight)  # (B, L, R)
    positions = torch.arange(L)
    k_rope = rope_ref(ckv[..., R:], positions, layer.rope_base)  # (B, L, Dr)
    kv = layer.W_ukv(c).view(B, L, H, Dn + Dv)
    outs, weights = [], []
    for h in range(H):
        qh = torch.cat([q[:, :, h, :Dn], rope_ref(q[:, :, h, Dn:], positions, layer.rope_base)],
                       -1)  # (B, L, Dn+Dr)
        kh = torch.cat([kv[:, :, h, :Dn], k_rope], -1)  # (B, L, Dn+Dr)
        vh = kv[:, :, h, Dn:]  # (B, L, Dv)
        scores = qh @ kh.transpose(1, 2) / math.sqrt(Dn + Dr)  # (B, L, L)
        keep = torch.ones(L, L, dtype=torch.bool).tril()
        if allowed is not None:
            keep = keep & allowed[:, 0]
        w = scores.masked_fill(~keep, float("-inf")).softmax(-1).nan_to_num(0.0)
        outs.append(w @ vh)
        weights.append(w)
    return layer.W_o(torch.cat(outs, -1)), torch.stack(weights, 1)


def test_latent_parameters_follow_the_contract():
    layer = make_latent()
    shapes = {n: tuple(p.shape) for n, p in layer.named_parameters()}
    assert shapes == {"W_q.weight": (40, 32), "W_dkv.weight": (12, 32), "kv_norm.weight": (8,),
                      "W_ukv.weight": (44, 8), "W_o.weight": (32, 20)}
    layer = make_latent(q_rank=12, bias=True)
    shapes = {n: tuple(p.shape) for n, p in layer.named_parameters()}
    assert shapes == {"W_dq.weight": (12, 32), "W_dq.bias": (12,), "q_norm.weight": (12,),
                      "W_uq.weight": (40, 12), "W_dkv.weight": (12, 32), "W_dkv.bias": (12,),
                      "kv_norm.weight": (8,), "W_ukv.weight": (44, 8), "W_o.weight": (32, 20),
                      "W_o.bias": (32,)}
    assert isinstance(layer.kv_norm, torch.nn.RMSNorm) and layer.kv_norm.eps == 1e-6
    assert "kv_rank=8" in repr(layer)


@pytest.mark.parametrize("q_rank", [None, 12])
@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_latent_matches_the_formula(q_rank, absorb, need_weights):
    layer = make_latent(q_rank=q_rank, bias=True)
    x = torch.randn(2, 7, 32)
    want, want_weights = latent_ref(layer, x)
    out, weights = layer(x, is_causal=True, absorb=absorb, need_weights=need_weights)
    torch.testing.assert_close(out, want, **TOL)
    if need_weights:
        torch.testing.assert_close(weights, want_weights, **TOL)
    else:
        assert weights is None


@given(batch=st.integers(1, 3), length=st.integers(1, 9), heads=st.integers(1, 4),
       dims=st.tuples(st.integers(1, 9), st.integers(1, 4), st.integers(1, 6), st.integers(1, 9)),
       q_rank=st.one_of(st.none(), st.integers(1, 10)), interleaved=st.booleans(),
       causal=st.booleans(), seed=st.integers(0, 99))
def test_latent_absorb_equals_plain(batch, length, heads, dims, q_rank, interleaved, causal,
                                    seed):
    kv_rank, half_rope, nope, v_dim = dims
    layer = make_latent(q_rank=q_rank, interleaved=interleaved, seed=seed, num_heads=heads,
                        kv_rank=kv_rank, qk_nope_dim=nope, qk_rope_dim=2 * half_rope,
                        v_head_dim=v_dim)
    x = torch.randn(batch, length, 32)
    mask = None if causal else torch.rand(batch, 1, length, length) > 0.3
    plain, w = layer(x, is_causal=causal, mask=mask, need_weights=True)
    for need_weights in (False, True):
        fused, _ = layer(x, is_causal=causal, mask=mask, need_weights=need_weights)
        absorbed, wa = layer(x, is_causal=causal, mask=mask, need_weights=need_weights,
                             absorb=True)
        torch.testing.assert_close(fused, plain, **TOL)
        torch.testing.assert_close(absorbed, plain, **TOL)
    torch.testing.assert_close(wa, w, **TOL)


def test_latent_absorb_forms_no_per_head_keys():
    """With absorb=True, W_ukv's forward never runs (its weight is only folded)."""
    layer = make_latent()
    calls = []
    layer.W_ukv.register_forward_hook(lambda *args: calls.append(1))
    layer(torch.randn(1, 4, 32), is_causal=True, absorb=True)
    assert calls == []
    layer(torch.randn(1, 4, 32), is_causal=True)
    assert calls == [1]


@pytest.mark.parametrize("absorb", [False, True])
@pytest.mark.parametrize("q_rank", [None, 12])
def test_latent_token_by_token_equals_one_call(absorb, q_rank):
    layer = make_latent(q_rank=q_rank, interleaved=True)
    x = torch.randn(2, 9, 32)
    want, _ = layer(x, is_causal=True)
    for chunks in ([1] * 9, [4, 1, 3, 1]):
        cache = mha.KVCache()
        got = decode(layer, x, chunks, cache, absorb=absorb, need_weights=len(chunks) < 9)
        torch.testing.assert_close(got, want, **TOL)
        # per token only the normalised latent and the rotated shared key
        assert cache.keys.shape == (2, 1, 9, 8) and cache.values.shape == (2, 1, 9, 4)
        assert cache.nbytes == 2 * 9 * (8 + 4) * 4


def test_latent_cache_holds_the_latent_and_the_rotated_key():
    layer = make_latent()
    x = torch.randn(1, 5, 32)
    cache = mha.KVCache()
    layer(x, is_causal=True, cache=cache)
    ckv = layer.W_dkv(x)
    torch.testing.assert_close(cache.keys[:, 0], rms_norm_ref(ckv[..., :8], layer.kv_norm.weight),
                               **TOL)
    torch.testing.assert_close(cache.values[:, 0], rope_ref(ckv[..., 8:], torch.arange(5)), **TOL)
    layer16 = make_latent().to(torch.bfloat16)
    cache16 = mha.KVCache()
    layer16(x.to(torch.bfloat16), is_causal=True, cache=cache16)
    assert cache16.nbytes == 1 * 5 * (8 + 4) * 2


def test_latent_mask_and_cache_mask():
    layer = make_latent(q_rank=12)
    x = torch.randn(2, 6, 32)
    mask = torch.rand(2, 1, 6, 6) > 0.3
    want, _ = latent_ref(layer, x, mask)
    got, _ = layer(x, is_causal=True, mask=mask)
    torch.testing.assert_close(got, want, **TOL)
    cache, outs = mha.KVCache(), []
    for t in range(6):
        outs.append(layer(x[:, t:t + 1], mask=mask[:, :, t:t + 1, :t + 1], cache=cache,
                          absorb=bool(t % 2))[0])
    torch.testing.assert_close(torch.cat(outs, 1), want, **TOL)


# --- errors -----------------------------------------------------------------------------------

@pytest.mark.parametrize("window, error, match", [
    (0, ValueError, r"window must be a positive int; got 0"),
    (-2, ValueError, r"window must be a positive int; got -2"),
    (2.5, TypeError, r"window must be an int; got 2.5 \(float\)"),
    (True, TypeError, r"window must be an int; got True \(bool\)"),
    ("4", TypeError, r"window must be an int; got '4' \(str\)"),
])
def test_bad_window(window, error, match):
    with pytest.raises(error, match=match):
        mha.RotaryMultiHeadAttention(32, 4, window=window)
    with pytest.raises(error, match=match):
        mha.KVCache(window=window)


@pytest.mark.parametrize("name", ["sinks", "qk_norm", "gate"])
def test_bad_flags(name):
    with pytest.raises(TypeError, match=rf"{name} must be a bool; got 1 \(int\)"):
        mha.RotaryMultiHeadAttention(32, 4, **{name: 1})


def test_windowed_cache_on_a_layer_that_needs_more():
    x = torch.randn(1, 3, 32)
    with pytest.raises(ValueError, match=r"cache is a KVCache\(window=2\).*window=None"):
        mha.RotaryMultiHeadAttention(32, 4)(x, cache=mha.KVCache(window=2))
    with pytest.raises(ValueError, match=r"KVCache\(window=2\).*layer has window=3"):
        make(("window",))(x, cache=mha.KVCache(window=2))
    with pytest.raises(ValueError, match=r"LatentAttention needs every cached position.*window=2"):
        make_latent()(x, cache=mha.KVCache(window=2))
    with pytest.raises(ValueError, match=r"KVCache\(window=4\).*window=None"):
        mha.MultiHeadAttention(32, 4)(x, cache=mha.KVCache(window=4))
    make(("window",))(x, cache=mha.KVCache(window=4))  # a longer window is fine


def test_modern_layer_is_self_attention_only():
    layer = make(("gate",))
    x = torch.randn(1, 3, 32)
    with pytest.raises(ValueError, match=r"value must be None or query itself"):
        layer(x, value=torch.randn(1, 3, 32))
    with pytest.raises(ValueError, match=r"key must be None or query itself"):
        layer(x, torch.randn(1, 3, 32))


@pytest.mark.parametrize("kwargs, error, match", [
    ({"kv_rank": 0}, ValueError, r"kv_rank must be a positive int; got 0"),
    ({"kv_rank": 4.0}, TypeError, r"kv_rank must be an int; got 4.0 \(float\)"),
    ({"qk_rope_dim": 5}, ValueError, r"qk_rope_dim \(5\) must be even"),
    ({"qk_rope_dim": 0}, ValueError, r"qk_rope_dim must be a positive int; got 0"),
    ({"qk_nope_dim": -1}, ValueError, r"qk_nope_dim must be a positive int; got -1"),
    ({"v_head_dim": None}, TypeError, r"v_head_dim must be an int; got None"),
    ({"q_rank": 0}, ValueError, r"q_rank must be a positive int; got 0"),
    ({"rope_base": 1.0}, ValueError, r"base must be a finite number > 1"),
    ({"interleaved": "yes"}, TypeError, r"interleaved must be a bool"),
])
def test_bad_latent_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        mha.LatentAttention(32, 4, **{**MLA, **kwargs})


@pytest.mark.parametrize("call, error, match", [
    (lambda m: m(torch.randn(2, 5, 16)), ValueError,
     r"x has 16 features but the layer expects d_model = 32"),
    (lambda m: m(torch.randn(5, 32)), ValueError, r"x must be batched"),
    (lambda m: m(torch.randn(2, 5, 32), absorb=1), TypeError, r"absorb must be a bool"),
    (lambda m: m(torch.randn(2, 5, 32), mask=torch.ones(2, 1, 5, 4, dtype=torch.bool)),
     ValueError, r"mask of shape \(2, 1, 5, 4\) cannot broadcast to \(B, H, Lq, Lk\)"),
    (lambda m: m(torch.randn(2, 5, 32), cache="cache"), TypeError, r"cache must be a mha.KVCache"),
    (lambda m: m(torch.randn(2, 5, 32, dtype=torch.float64)), TypeError, r"x has dtype"),
])
def test_bad_latent_calls(call, error, match):
    with pytest.raises(error, match=match):
        call(make_latent())

"""KVCache and MultiHeadAttention(cache=...): decoding one token (or one chunk) at a time gives
what one causal call over the whole sequence gives, against F.scaled_dot_product_attention."""

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
import mha_book
from mha.attention_functions import repeat_kv as _repeat_kv

TOL = {"atol": 1e-5, "rtol": 1e-5}


def reference_causal(layer, x):
    """The layer's causal self-attention over the whole x (B, L, D), with torch's own SDPA."""
    H, Hkv = layer.num_heads, layer.num_kv_heads
    q = mha.split_heads(layer.W_q(x), H)  # (B, L, D) -> (B, H, L, Dh)
    k = _repeat_kv(mha.split_heads(layer.W_k(x), Hkv), H)  # (B, Hkv, L, Dh) -> (B, H, L, Dh)
    v = _repeat_kv(mha.split_heads(layer.W_v(x), Hkv), H)
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, L, Dh)
    return layer.W_o(mha.merge_heads(out))  # (B, H, L, Dh) -> (B, L, D)


def decode(layer, x, chunks, need_weights=False, **kwargs):
    """Feed x (B, L, D) in chunks of the given sizes through one cache; outputs concatenated."""
    cache, outs, start = mha.KVCache(), [], 0
    for size in chunks:
        out, _ = layer(x[:, start:start + size], is_causal=True, cache=cache,
                       need_weights=need_weights, **kwargs)
        outs.append(out)
        start += size
    assert start == x.size(1)
    return torch.cat(outs, dim=1), cache


def make(d_model=32, num_heads=4, num_kv_heads=None, bias=False, seed=0):
    torch.manual_seed(seed)
    return mha.MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, bias=bias).eval()


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
@pytest.mark.parametrize("bias", [False, True])
def test_token_by_token_equals_full_causal(need_weights, num_kv_heads, bias):
    layer = make(num_kv_heads=num_kv_heads, bias=bias)
    x = torch.randn(3, 9, 32)
    expected = reference_causal(layer, x)
    out, cache = decode(layer, x, [1] * 9, need_weights=need_weights)
    torch.testing.assert_close(out, expected, **TOL)
    torch.testing.assert_close(layer(x, is_causal=True)[0], expected, **TOL)
    assert cache.seq_len == 9


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("chunks", [[5, 1, 1, 1, 1], [4, 3, 2], [1, 8], [9]])
def test_chunked_prefill_then_tokens(need_weights, chunks):
    layer = make(num_kv_heads=2, bias=True)
    x = torch.randn(2, 9, 32)
    out, _ = decode(layer, x, chunks, need_weights=need_weights)
    torch.testing.assert_close(out, reference_causal(layer, x), **TOL)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=6), st.integers(1, 3),
       st.sampled_from([(4, 4), (4, 2), (4, 1), (2, 2)]))
def test_any_chunking_equals_full_causal(chunks, batch, heads):
    layer = make(d_model=16, num_heads=heads[0], num_kv_heads=heads[1])
    x = torch.randn(batch, sum(chunks), 16)
    out, cache = decode(layer, x, chunks)
    torch.testing.assert_close(out, reference_causal(layer, x), **TOL)
    assert cache.keys.shape == (batch, heads[1], sum(chunks), 16 // heads[0])


def test_weights_path_returns_bottom_right_weights():
    layer = make()
    x = torch.randn(1, 6, 32)
    cache = mha.KVCache()
    layer(x[:, :3], is_causal=True, cache=cache)
    _, weights = layer(x[:, 3:], is_causal=True, cache=cache, need_weights=True)
    assert weights.shape == (1, 4, 3, 6)  # (B, H, Lq, P + Lq)
    _, full = layer(x, is_causal=True, need_weights=True)
    torch.testing.assert_close(weights, full[:, :, 3:], **TOL)
    # new query i (position 3 + i) sees keys 0 .. 3 + i and nothing after
    assert (weights[0, :, 0, 4:] == 0).all() and (weights[0, :, 0, :4] > 0).all()


def test_record_attention_with_a_cache():
    layer = make()
    x = torch.randn(1, 5, 32)
    cache = mha.KVCache()
    layer(x[:, :4], is_causal=True, cache=cache)
    with mha.record_attention(layer) as rec:
        out, weights = layer(x[:, 4:], is_causal=True, cache=cache)
    assert weights is None and rec["MultiHeadAttention"].shape == (1, 4, 1, 5)
    torch.testing.assert_close(out, reference_causal(layer, x)[:, 4:], **TOL)


def test_not_causal_chunk_sees_all_its_keys():
    layer = make()
    x = torch.randn(2, 7, 32)
    cache = mha.KVCache()
    layer(x[:, :4], cache=cache)
    out, _ = layer(x[:, 4:], cache=cache)  # no is_causal: every new query sees all 7 keys
    torch.testing.assert_close(out, layer(x)[0][:, 4:], **TOL)


@pytest.mark.parametrize("need_weights", [False, True])
def test_mask_and_valid_lens_cover_cached_and_new_keys(need_weights):
    layer = make(num_kv_heads=2)
    x = torch.randn(2, 6, 32)
    mask = torch.rand(2, 1, 6, 6) > 0.3  # (B, 1, Lq, Lk)
    lens = torch.tensor([6, 4])
    full = layer(x, mask=mask, valid_lens=lens, is_causal=True)[0]
    cache = mha.KVCache()
    first = layer(x[:, :4], mask=mask[:, :, :4, :4], valid_lens=lens, is_causal=True,
                  cache=cache, need_weights=need_weights)[0]
    rest = layer(x[:, 4:], mask=mask[:, :, 4:, :], valid_lens=lens, is_causal=True, cache=cache,
                 need_weights=need_weights)[0]
    torch.testing.assert_close(torch.cat([first, rest], dim=1), full, **TOL)


def test_cache_holds_kv_heads_only_and_nbytes():
    layer = make(d_model=32, num_heads=8, num_kv_heads=2)
    x = torch.randn(3, 5, 32)
    cache = mha.KVCache()
    assert cache.keys is None and cache.values is None
    assert cache.seq_len == 0 and cache.nbytes == 0
    layer(x, is_causal=True, cache=cache)
    assert cache.keys.shape == cache.values.shape == (3, 2, 5, 4)  # (B, Hkv, L, Dh): no copies
    assert cache.seq_len == 5
    assert cache.nbytes == 2 * 3 * 2 * 5 * 4 * 4  # keys and values, B Hkv L Dh, 4 bytes
    layer(x[:, :1], is_causal=True, cache=cache)
    assert cache.seq_len == 6 and cache.nbytes == 2 * 3 * 2 * 6 * 4 * 4
    # the cached keys are the projected keys of the tokens, in order
    k = mha.split_heads(layer.W_k(torch.cat([x, x[:, :1]], 1)), 2)  # (B, L, 8) -> (B, 2, L, 4)
    torch.testing.assert_close(cache.keys, k, **TOL)
    assert "seq_len=6" in repr(cache)
    cache.reset()
    assert cache.keys is None and cache.seq_len == 0 and cache.nbytes == 0
    assert repr(cache) == "KVCache(empty)"


def test_half_precision_nbytes():
    cache = mha.KVCache()
    k = torch.zeros(1, 2, 3, 4, dtype=torch.bfloat16)
    keys, values = cache.append(k, k.clone())
    assert keys is cache.keys and values is cache.values
    assert cache.nbytes == 2 * 1 * 2 * 3 * 4 * 2


def test_append_returns_concatenation():
    cache = mha.KVCache()
    a, b = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 1, 5)
    cache.append(a, -a)
    k, v = cache.append(b, -b)
    torch.testing.assert_close(k, torch.cat([a, b], dim=2))
    torch.testing.assert_close(v, -torch.cat([a, b], dim=2))


def test_decoding_with_grad_flows():
    layer = make()
    x = torch.randn(1, 4, 32, requires_grad=True)
    out, _ = decode(layer, x, [2, 1, 1])
    out.sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()


# ---- bad input -------------------------------------------------------------------------------


def test_batch_size_mismatch():
    layer, cache = make(), mha.KVCache()
    layer(torch.randn(2, 3, 32), is_causal=True, cache=cache)
    with pytest.raises(ValueError, match=r"batch size B = 2.*batch size B = 3"):
        layer(torch.randn(3, 1, 32), is_causal=True, cache=cache)
    assert cache.seq_len == 3  # the failed call left the cache as it was


def test_heads_mismatch():
    cache = mha.KVCache()
    make(num_kv_heads=2)(torch.randn(1, 3, 32), cache=cache)
    with pytest.raises(ValueError, match=r"key/value heads Hkv = 2.*Hkv = 4"):
        make()(torch.randn(1, 1, 32), cache=cache)


def test_d_head_mismatch():
    cache = mha.KVCache()
    make(d_model=32, num_heads=4)(torch.randn(1, 3, 32), cache=cache)
    with pytest.raises(ValueError, match=r"d_head = 8.*d_head = 4"):
        make(d_model=16, num_heads=4)(torch.randn(1, 1, 16), cache=cache)


def test_dtype_mismatch():
    layer, cache = make(), mha.KVCache()
    layer(torch.randn(1, 3, 32), cache=cache)
    layer = layer.double()
    with pytest.raises(TypeError, match=r"dtype torch.float32.*torch.float64"):
        layer(torch.randn(1, 1, 32, dtype=torch.float64), cache=cache)


def test_key_not_query():
    layer, x = make(), torch.randn(1, 3, 32)
    with pytest.raises(ValueError, match=r"self-attention only: key must be None or the query"):
        layer(x, x.clone(), cache=mha.KVCache())
    with pytest.raises(ValueError, match=r"value must be None or the query"):
        layer(x, x, x.clone(), cache=mha.KVCache())
    layer(x, x, x, cache=mha.KVCache())  # the query itself is fine


def test_cache_wrong_type():
    with pytest.raises(TypeError, match=r"cache must be a mha.KVCache; got dict"):
        make()(torch.randn(1, 3, 32), cache={})


def test_mask_shape_counts_cached_keys():
    layer, cache = make(), mha.KVCache()
    layer(torch.randn(1, 3, 32), cache=cache)
    with pytest.raises(ValueError, match=r"cannot broadcast to \(B, H, Lq, Lk\) = \(1, 4, 1, 4\)"):
        layer(torch.randn(1, 1, 32), mask=torch.ones(1, 1, dtype=torch.bool).expand(1, 3),
              cache=cache)


@pytest.mark.parametrize("k, v, match", [
    (torch.zeros(2, 3, 4), torch.zeros(2, 3, 4), r"k must have shape \(B, Hkv, Lk, Dh\)"),
    (torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 2, 4), r"k and v must have the same shape"),
])
def test_append_bad_shapes(k, v, match):
    with pytest.raises(ValueError, match=match):
        mha.KVCache().append(k, v)


def test_append_not_a_tensor():
    with pytest.raises(TypeError, match=r"k must be a torch.Tensor; got list"):
        mha.KVCache().append([1.0], torch.zeros(1, 1, 1, 1))


def test_relative_layer_rejects_cache():
    layer = mha.RelativeMultiHeadAttention(16, 2)
    with pytest.raises(ValueError, match=r"does not support cache="):
        layer(torch.randn(1, 2, 16), cache=mha.KVCache())


# ---- the incremental decoder -----------------------------------------------------------------


@pytest.fixture(scope="module")
def translator():
    return mha_book.tiny.load_pretrained("translation")


def test_decoder_with_and_without_cache_agree(translator):
    task = mha_book.tasks.make_task("translation")
    batch = task.sample(16, seed=3)
    fast, fast_logits = mha_book.decode.generate(translator, batch.inputs, 12, bos=task.bos)
    slow, slow_logits = mha_book.decode.generate(translator, batch.inputs, 12, bos=task.bos,
                                            use_cache=False)
    assert torch.equal(fast, slow)
    torch.testing.assert_close(fast_logits, slow_logits, atol=1e-5, rtol=1e-5)
    assert torch.equal(fast, translator.greedy_decode(batch.inputs, 12, bos=task.bos))
    assert fast_logits.shape == (16, 12, task.tgt_vocab_size)


def test_decoder_logits_match_the_model_forward(translator):
    batch = mha_book.tasks.make_task("translation").sample(4, seed=0)
    memory = translator.encoder(batch.inputs)
    expected = translator(batch.inputs, batch.decoder_inputs)
    torch.testing.assert_close(mha_book.decode.decoder_logits(translator, batch.decoder_inputs, memory),
                               expected, **TOL)
    caches = mha_book.decode.new_caches(translator)  # a prefill of 5 then the rest one at a time
    parts = [mha_book.decode.decoder_logits(translator, batch.decoder_inputs[:, :5], memory,
                                       caches=caches)]
    for t in range(5, 12):
        parts.append(mha_book.decode.decoder_logits(translator, batch.decoder_inputs[:, t:t + 1],
                                               memory, caches=caches, start=t))
    torch.testing.assert_close(torch.cat(parts, dim=1), expected, **TOL)
    assert [c.keys.shape for c in caches] == [(4, 4, 12, 8)] * 2  # (B, Hkv, L, Dh) per layer


def test_decoder_logits_bad_start(translator):
    memory = translator.encoder(torch.zeros(1, 9, dtype=torch.long))
    ids = torch.zeros(1, 1, dtype=torch.long)
    with pytest.raises(ValueError, match=r"start must be 0 without caches"):
        mha_book.decode.decoder_logits(translator, ids, memory, start=3)
    with pytest.raises(ValueError, match=r"every cache must hold start = 2 positions"):
        mha_book.decode.decoder_logits(translator, ids, memory, caches=mha_book.decode.new_caches(
            translator), start=2)
    with pytest.raises(ValueError, match=r"exceed the model's max_len \(12\)"):
        mha_book.decode.decoder_logits(translator, torch.zeros(1, 13, dtype=torch.long), memory)


# ---- memory arithmetic -----------------------------------------------------------------------


def test_kv_cache_bytes_by_hand():
    from mha.configs import kv_cache_bytes

    # Llama 2 7B, one token, float16: 2 (k, v) x 32 layers x 32 heads x 128 x 2 bytes
    assert kv_cache_bytes(32, 32, 128) == 524_288 == 512 * 1024
    # Llama 2 70B, 4096 tokens: 2 x 80 x 8 x 128 x 4096 x 2 bytes = 1.25 GiB
    assert kv_cache_bytes(80, 8, 128, 4096) == 1_342_177_280 == 1.25 * 2**30
    assert kv_cache_bytes(96, 96, 128, 2048) == 9_663_676_416  # GPT-3: 9 GiB at 2048 tokens
    assert kv_cache_bytes(32, 1, 64, 2048) == 16 * 2**20  # Falcon-7B: 16 MiB at 2048
    assert kv_cache_bytes(2, 4, 8, 10, batch_size=3, bytes_per_value=4) == 2 * 2 * 4 * 8 * 10 * 3 * 4
    assert kv_cache_bytes(2, 4, 8, 0) == 0


def test_kv_cache_bytes_matches_a_real_cache():
    from mha.configs import kv_cache_bytes

    layers = [mha.MultiHeadAttention(32, 8, num_kv_heads=2) for _ in range(3)]
    caches = [mha.KVCache() for _ in layers]
    x = torch.randn(5, 7, 32)
    for layer, cache in zip(layers, caches):
        layer(x, is_causal=True, cache=cache)
    assert sum(c.nbytes for c in caches) == kv_cache_bytes(3, 2, 4, 7, batch_size=5,
                                                           bytes_per_value=4)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"num_layers": 0}, ValueError, r"num_layers must be a positive int; got 0"),
    ({"d_head": 2.5}, TypeError, r"d_head must be an int; got 2.5"),
    ({"seq_len": -1}, ValueError, r"seq_len must be an int >= 0; got -1"),
    ({"bytes_per_value": True}, TypeError, r"bytes_per_value must be an int"),
])
def test_kv_cache_bytes_bad_input(kwargs, error, match):
    from mha.configs import kv_cache_bytes

    args = {"num_layers": 2, "num_kv_heads": 2, "d_head": 4, "seq_len": 3, **kwargs}
    with pytest.raises(error, match=match):
        kv_cache_bytes(**args)


# (layers, d_model, heads, kv heads, d_head, context) as the sources state them
PUBLISHED = {
    "GPT-3 175B": (96, 12288, 96, 96, 128, 2048),
    "Llama 2 7B": (32, 4096, 32, 32, 128, 4096),
    "Llama 2 70B": (80, 8192, 64, 8, 128, 4096),
    "Mistral 7B": (32, 4096, 32, 8, 128, 8192),
    "Llama 3 8B": (32, 4096, 32, 8, 128, 8192),
    "Falcon-7B": (32, 4544, 71, 1, 64, 2048),
}


def test_model_configs_as_published():
    from mha.configs import MODELS

    assert set(MODELS) == set(PUBLISHED)
    bib = open("references.bib").read()
    for name, config in MODELS.items():
        assert (config.num_layers, config.d_model, config.num_heads, config.num_kv_heads,
                config.d_head, config.context) == PUBLISHED[name], name
        assert config.num_heads * config.d_head == config.d_model, name
        assert config.num_heads % config.num_kv_heads == 0, name
        assert "{" + config.source + ",\n" in bib, name  # cited in references.bib
    assert [c.attention for c in MODELS.values()] == ["MHA", "MHA", "GQA", "GQA", "GQA", "MQA"]
    # Falcon-7B's fused query/key/value projection has 71 query heads + 1 key + 1 value head of
    # 64 features: 4672 outputs, as its model card's module printout shows
    falcon = MODELS["Falcon-7B"]
    assert (falcon.num_heads + 2 * falcon.num_kv_heads) * falcon.d_head == 4672
    # Llama 2 70B's k_proj maps 8192 features to 8 heads x 128 = 1024
    assert MODELS["Llama 2 70B"].num_kv_heads * MODELS["Llama 2 70B"].d_head == 1024
    # Mistral 7B v0.1 (Table 1: window_size 4096) is the one sliding-window model: its rolling
    # cache holds at most 4096 positions
    assert {n: c.window for n, c in MODELS.items() if c.window} == {"Mistral 7B": 4096}
    assert "sliding window 4096" in MODELS["Mistral 7B"].where
    assert [MODELS["Mistral 7B"].cached_positions(n) for n in (100, 4096, 8192)] == \
        [100, 4096, 4096]
    assert MODELS["Llama 3 8B"].cached_positions(8192) == 8192


def test_bottom_right_matches_torch_causal_lower_right():
    from torch.nn.attention.bias import causal_lower_right

    layer = make(num_kv_heads=2)
    x = torch.randn(2, 7, 32)
    cache = mha.KVCache()
    layer(x[:, :4], is_causal=True, cache=cache)
    out, _ = layer(x[:, 4:], is_causal=True, cache=cache)  # 3 new queries over 7 keys
    H = layer.num_heads
    q = mha.split_heads(layer.W_q(x[:, 4:]), H)  # (B, 3, D) -> (B, H, 3, Dh)
    k, v = (_repeat_kv(c, H) for c in (cache.keys, cache.values))  # (B, H, 7, Dh)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_lower_right(3, 7))
    torch.testing.assert_close(out, layer.W_o(mha.merge_heads(ref)), **TOL)
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # the pitfall
    assert not torch.allclose(layer.W_o(mha.merge_heads(top_left)), out, atol=1e-3)


class _Scaled(mha.MultiHeadAttention):
    """A position-dependent _position hook (as rotary embeddings are): scales query and key
    position p by 1 + p / 10, positions counted from ``offset``."""

    offsets = []

    def _position(self, q, k, offset):
        self.offsets.append(offset)
        pos_q = offset + torch.arange(q.size(-2), dtype=q.dtype)  # (Lq,)
        pos_k = offset + torch.arange(k.size(-2), dtype=k.dtype)  # (Lk,)
        return q * (1 + pos_q[:, None] / 10), k * (1 + pos_k[:, None] / 10)


@pytest.mark.parametrize("need_weights", [False, True])
def test_position_hook_gets_the_cache_offset(need_weights):
    torch.manual_seed(0)
    layer = _Scaled(32, 4, num_kv_heads=2).eval()
    x = torch.randn(2, 7, 32)
    full, _ = layer(x, is_causal=True, need_weights=need_weights)
    _Scaled.offsets = []
    out, cache = decode(layer, x, [3, 1, 2, 1], need_weights=need_weights)
    assert _Scaled.offsets == [0, 3, 4, 6]
    torch.testing.assert_close(out, full, **TOL)
    # the cache holds the keys after the hook (position-scaled), not the raw projections
    raw = mha.split_heads(layer.W_k(x), 2)  # (B, L, Hkv*Dh) -> (B, Hkv, L, Dh)
    scale = 1 + torch.arange(7.0)[:, None] / 10  # (L, 1)
    torch.testing.assert_close(cache.keys, raw * scale, **TOL)

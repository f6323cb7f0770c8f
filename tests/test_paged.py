"""mha.paged: sequences of different lengths decoded token by token through one pool of blocks
give what a contiguous KVCache per sequence and one causal call give (float32, 1e-5), with their
blocks scattered through the pool; freeing returns blocks, a full pool says so, and the waste
stays under one block per sequence."""

import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import flex
from mha.attention_functions import repeat_kv
from mha.paged import PagedKVCache, PagedSequence, paged_attention

TOL = {"atol": 1e-5, "rtol": 1e-5}
MAX_DIFF = {}  # test -> the largest |paged - reference| it saw, printed at the end


def close(name, out, expected):
    torch.testing.assert_close(out, expected, **TOL)
    MAX_DIFF[name] = max(MAX_DIFF.get(name, 0.0), (out - expected).abs().max().item())


LAYERS = {
    "MultiHeadAttention GQA": lambda: mha.MultiHeadAttention(32, 4, num_kv_heads=2, bias=True),
    "Rotary": lambda: mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=2),
    "Rotary window=3 sinks": lambda: mha.RotaryMultiHeadAttention(32, 4, num_kv_heads=1,
                                                                   window=3, sinks=True),
}
LENGTHS = {"a": 11, "b": 6, "c": 9}  # three sequences of different lengths
PROMPTS = {"a": 3, "b": 1, "c": 4}  # prefilled at once, then one token at a time


def contiguous(table):
    return table == list(range(table[0], table[0] + len(table)))


def decode_interleaved(layer, xs, cache_of):
    """Prefill every sequence, then one token of each unfinished sequence per round (so their
    appends interleave): xs seq -> (1, L, D), cache_of(seq) -> its cache. Returns seq ->
    outputs (1, L, D)."""
    outs = {s: [layer(x[:, :PROMPTS[s]], is_causal=True, cache=cache_of(s))[0]]
            for s, x in xs.items()}
    for t in range(max(LENGTHS.values())):
        for s, x in xs.items():
            if PROMPTS[s] <= t < LENGTHS[s]:
                outs[s].append(layer(x[:, t:t + 1], is_causal=True, cache=cache_of(s))[0])
    return {s: torch.cat(o, dim=1) for s, o in outs.items()}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_interleaved_decoding_equals_a_kv_cache_and_one_causal_call(name):
    layer = LAYERS[name]().eval()
    xs = {s: torch.randn(1, n, 32) for s, n in LENGTHS.items()}
    pool = PagedKVCache(16, 2, layer.num_kv_heads, layer.d_head)
    caches = {s: mha.KVCache() for s in xs}
    with torch.no_grad():
        paged = decode_interleaved(layer, xs, pool.sequence)
        plain = decode_interleaved(layer, xs, caches.__getitem__)
        for s, x in xs.items():
            close(f"{name}: paged vs KVCache", paged[s], plain[s])
            close(f"{name}: paged vs one causal call", paged[s], layer(x, is_causal=True)[0])
            keys, values = pool.gather(s)  # (Hkv, L, Dh): what the KVCache holds
            close(f"{name}: gather vs KVCache keys", keys, caches[s].keys[0])
            close(f"{name}: gather vs KVCache values", values, caches[s].values[0])
    tables = {s: pool.block_table(s) for s in xs}
    assert {s: len(t) for s, t in tables.items()} == {"a": 6, "b": 3, "c": 5}  # ceil(L / 2)
    assert not all(contiguous(t) for t in tables.values())  # the blocks are scattered
    assert sorted(sum(tables.values(), [])) == list(range(14))  # no block shared or lost
    assert pool.num_free_blocks == 2


def project(layer, x):
    """q (B, H, L, Dh), k and v (B, Hkv, L, Dh) of a MultiHeadAttention (no positions)."""
    return (mha.split_heads(layer.W_q(x), layer.num_heads),
            mha.split_heads(layer.W_k(x), layer.num_kv_heads),
            mha.split_heads(layer.W_v(x), layer.num_kv_heads))


@torch.no_grad()
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
def test_paged_attention_batches_sequences_of_different_lengths(num_kv_heads):
    layer = mha.MultiHeadAttention(32, 4, num_kv_heads=num_kv_heads).eval()
    H = layer.num_heads
    qkv = {s: project(layer, torch.randn(1, n, 32)) for s, n in LENGTHS.items()}
    expected = {s: F.scaled_dot_product_attention(q, repeat_kv(k, H), repeat_kv(v, H),
                                                  is_causal=True)  # (1, H, L, Dh)
                for s, (q, k, v) in qkv.items()}
    pool = PagedKVCache(12, 3, num_kv_heads, layer.d_head)
    for s, (q, k, v) in qkv.items():  # prefill: Lq = the prompt, one sequence per call
        P = PROMPTS[s]
        pool.append(s, k[0, :, :P], v[0, :, :P])
        close("paged_attention prefill", paged_attention(q[:, :, :P], pool, [s]),
              expected[s][:, :, :P])
    for t in range(max(LENGTHS.values())):  # then one batched call per step
        active = [s for s in qkv if PROMPTS[s] <= t < LENGTHS[s]]
        for s in active:
            _, k, v = qkv[s]
            pool.append(s, k[0, :, t:t + 1], v[0, :, t:t + 1])
        if active:
            q = torch.cat([qkv[s][0][:, :, t:t + 1] for s in active])  # (N, H, 1, Dh)
            out = paged_attention(q, pool, active)  # (N, H, 1, Dh)
            close("paged_attention decode step", out,
                  torch.cat([expected[s][:, :, t:t + 1] for s in active]))
    assert not all(contiguous(pool.block_table(s)) for s in qkv)


@torch.no_grad()
@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 9), min_size=1, max_size=4), st.integers(1, 4),
       st.integers(1, 3), st.sampled_from([(2, 2), (4, 2), (4, 1)]))
def test_any_lengths_and_block_size(lengths, block_size, num_queries, heads):
    H, Hkv = heads
    lengths = [max(n, num_queries) for n in lengths]
    pool = PagedKVCache(sum(-(-n // block_size) for n in lengths), block_size, Hkv, 4)
    ks = [torch.randn(Hkv, n, 4) for n in lengths]
    vs = [torch.randn(Hkv, n, 4) for n in lengths]
    for t in range(max(lengths)):  # round robin, one position each
        for i, n in enumerate(lengths):
            if t < n:
                pool.append(i, ks[i][:, t:t + 1], vs[i][:, t:t + 1])
    assert pool.num_free_blocks == 0  # exactly the blocks they need
    q = torch.randn(len(lengths), H, num_queries, 4)
    out = paged_attention(q, pool, list(range(len(lengths))))
    for i, n in enumerate(lengths):  # the last num_queries positions, causal
        allowed = torch.ones(num_queries, n, dtype=torch.bool).tril(n - num_queries)
        expected, _ = mha.scaled_dot_product_attention(
            q[i], repeat_kv(ks[i][None], H)[0], repeat_kv(vs[i][None], H)[0], allowed)
        close("paged_attention (hypothesis)", out[i], expected)


def test_freed_blocks_are_reused_and_overwritten():
    pool = PagedKVCache(6, 2, 1, 4)
    data = {s: torch.randn(1, n, 4) for s, n in (("a", 5), ("b", 3))}
    for s, x in data.items():
        pool.append(s, x, -x)
    a_blocks = pool.block_table("a")
    assert a_blocks == [0, 1, 2] and pool.block_table("b") == [3, 4]
    pool.free("a")
    assert "a" not in pool and pool.num_free_blocks == 4 and pool.length("a") == 0
    new = torch.randn(1, 7, 4)
    pool.append("c", new, -new)  # takes a's blocks first, then the last free one
    assert pool.block_table("c") == a_blocks + [5]
    close("reused blocks", pool.gather("c")[0], new)
    close("reused blocks", pool.gather("c")[1], -new)
    close("untouched sequence", pool.gather("b")[0], data["b"])
    pool.reset()
    assert pool.seq_ids == [] and pool.num_free_blocks == 6 and pool.nbytes_in_use == 0


def test_a_full_pool_says_so_and_writes_nothing():
    pool = PagedKVCache(3, 4, 2, 8)
    pool.append("a", torch.randn(2, 9, 8), torch.randn(2, 9, 8))  # 3 blocks
    pool.append("a", torch.randn(2, 3, 8), torch.randn(2, 3, 8))  # fills its last block
    with pytest.raises(RuntimeError, match=r"the pool is full: sequence 'b'") as info:
        pool.append("b", torch.randn(2, 1, 8), torch.randn(2, 1, 8))
    message = str(info.value)
    assert "needs 1 more block(s) of 4 positions" in message
    assert "only 0 of 3 blocks are free" in message and "cache.free(seq_id)" in message
    with pytest.raises(RuntimeError, match="the pool is full"):
        pool.append("a", torch.randn(2, 1, 8), torch.randn(2, 1, 8))
    assert pool.length("a") == 12 and "b" not in pool and pool.num_free_blocks == 0
    pool.free("a")
    pool.append("b", torch.randn(2, 12, 8), torch.randn(2, 12, 8))  # room again


@pytest.mark.parametrize("block_size", [1, 4, 16])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fragmentation_is_under_one_block_per_sequence(block_size, dtype):
    lengths = [1, 7, 16, 33, 50]
    pool = PagedKVCache(128, block_size, 2, 8, dtype=dtype)
    for i, n in enumerate(lengths):
        pool.append(i, torch.randn(2, n, 8).to(dtype), torch.randn(2, n, 8).to(dtype))
    per_position = 2 * 2 * 8 * (4 if dtype == torch.float32 else 2)  # keys + values, Hkv * Dh
    assert pool.bytes_per_block == per_position * block_size
    assert pool.nbytes == 128 * pool.bytes_per_block
    blocks = sum(-(-n // block_size) for n in lengths)
    assert pool.nbytes_in_use == blocks * pool.bytes_per_block
    written = sum(lengths) * per_position
    assert pool.nbytes_wasted == pool.nbytes_in_use - written
    assert 0 <= pool.nbytes_wasted < len(lengths) * pool.bytes_per_block
    if block_size == 1:
        assert pool.nbytes_wasted == 0
    # a contiguous cache per sequence sized for the longest wastes far more
    assert pool.nbytes_wasted < len(lengths) * max(lengths) * per_position - written


def test_a_sequence_is_a_kv_cache_for_the_layer():
    pool = PagedKVCache(8, 4, 2, 8)
    seq = pool.sequence(7)
    assert isinstance(seq, mha.KVCache) and isinstance(seq, PagedSequence)
    assert seq.seq_len == 0 and seq.keys is None and seq.values is None and seq.nbytes == 0
    assert seq.window is None and seq.start == 0
    layer = mha.MultiHeadAttention(32, 4, num_kv_heads=2).eval()
    with torch.no_grad():
        layer(torch.randn(1, 5, 32), is_causal=True, cache=seq)
    assert seq.seq_len == 5 == pool.length(7) and seq.keys.shape == (1, 2, 5, 8)
    assert seq.nbytes == 2 * pool.bytes_per_block == pool.nbytes_in_use
    assert pool.sequence(7).seq_len == 5  # handles hold nothing: the pool does
    assert "seq_len=5" in repr(seq) and "sequences=1" in repr(pool)
    seq.reset()
    assert 7 not in pool and pool.num_free_blocks == 8
    seq.reset()  # nothing left to free: no error


def test_decoding_with_gradients_on_is_refused_with_the_fix():
    layer = mha.MultiHeadAttention(32, 4)
    pool = PagedKVCache(4, 4, 4, 8)
    with pytest.raises(ValueError, match=r"k requires grad.*torch.no_grad\(\)"):
        layer(torch.randn(1, 3, 32), is_causal=True, cache=pool.sequence("a"))
    assert "a" not in pool


@pytest.mark.skipif(not flex.flex_available(), reason=(
    f"torch's PagedAttention runs on FlexAttention (torch >= 2.5), which is not in this torch "
    f"({torch.__version__})"))
@torch.no_grad()
def test_torchs_paged_attention_reads_our_block_tables_alike():
    """torch.nn.attention.experimental._paged_attention.PagedAttention, given our block tables
    and our pool (as its (1, Hkv, num_blocks * S, Dh) storage), computes what paged_attention
    computes: FlexAttention over the physical positions, with the logical mask mapped onto them."""
    pytest.importorskip("torch.nn.attention.experimental._paged_attention")
    from torch.nn.attention.experimental._paged_attention import PagedAttention

    fa = flex._flex()
    S, Hkv, H, Dh = 4, 2, 4, 8
    pool = PagedKVCache(16, S, Hkv, Dh)
    for t in range(max(LENGTHS.values())):
        for s, n in LENGTHS.items():
            if t < n:
                pool.append(s, torch.randn(Hkv, 1, Dh), torch.randn(Hkv, 1, Dh))
    ids = list(LENGTHS)
    q = torch.randn(len(ids), H, 1, Dh)  # (N, H, 1, Dh): one new token each

    theirs = PagedAttention(pool.num_blocks, S, len(ids), device="cpu")
    for n, s in enumerate(ids):
        table = torch.tensor(pool.block_table(s))
        theirs.page_table[n, :len(table)] = table
        theirs.physical_to_logical[n, table] = torch.arange(len(table))
        theirs.capacity[n] = len(table) * S
    kv_len = torch.tensor([pool.length(s) for s in ids])  # (N,)
    width = max(len(pool.block_table(s)) for s in ids)

    def logical(b, h, q_idx, kv_idx):
        return kv_idx < kv_len[b]

    block_mask = fa.create_block_mask(logical, len(ids), 1, 1, width * S, device="cpu",
                                      BLOCK_SIZE=(S, S))
    physical = theirs.convert_logical_block_mask(block_mask, kv_len=kv_len)
    keys = pool.key_blocks.transpose(0, 1).reshape(1, Hkv, -1, Dh)  # (1, Hkv, blocks * S, Dh)
    values = pool.value_blocks.transpose(0, 1).reshape(1, Hkv, -1, Dh)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's "called without torch.compile" note
        out = fa.flex_attention(q, keys, values, block_mask=physical, enable_gqa=True)
    close("torch's PagedAttention vs paged_attention", paged_attention(q, pool, ids), out)


def teardown_module():
    width = max(map(len, MAX_DIFF), default=0)
    print("\ntest_paged: largest |paged - reference| per test")
    for name, diff in sorted(MAX_DIFF.items()):
        print(f"  {name:<{width}}  {diff:.2e}")

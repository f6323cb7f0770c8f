"""Property tests over random shapes (hypothesis): the paths agree, masks behave, shapes hold."""

import torch
from hypothesis import given
from hypothesis import strategies as st

import mha

heads_and_dims = st.sampled_from([(1, 4), (2, 8), (4, 16), (3, 12), (8, 32)])


@given(batch=st.integers(1, 3), lq=st.integers(1, 9), lk=st.integers(1, 9),
       heads_dim=heads_and_dims, kv_divisor=st.sampled_from([1, 2]), seed=st.integers(0, 99))
def test_fused_weights_and_explicit_agree(explicit, batch, lq, lk, heads_dim, kv_divisor, seed):
    num_heads, d_model = heads_dim
    num_kv_heads = num_heads // kv_divisor if num_heads % kv_divisor == 0 else num_heads
    torch.manual_seed(seed)
    layer = mha.MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, bias=True)
    q, kv = torch.randn(batch, lq, d_model), torch.randn(batch, lk, d_model)
    lens = torch.randint(0, lk + 1, (batch,))
    allowed = mha.valid_lens_to_mask(lens, lq, lk)[:, None]  # (B, 1, Lq, Lk)
    ref, ref_w = explicit(layer, q, kv, kv, allowed)
    fused, _ = layer(q, kv, valid_lens=lens)
    out, w = layer(q, kv, valid_lens=lens, need_weights=True)
    assert fused.shape == (batch, lq, d_model) and w.shape == (batch, num_heads, lq, lk)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(w, ref_w)


@given(batch=st.integers(1, 3), length=st.integers(1, 10), heads_dim=heads_and_dims)
def test_split_merge_round_trip(batch, length, heads_dim):
    num_heads, d_model = heads_dim
    x = torch.randn(batch, length, d_model)
    heads = mha.split_heads(x, num_heads)
    assert heads.shape == (batch, num_heads, length, d_model // num_heads)
    assert torch.equal(mha.merge_heads(heads), x)


@given(batch=st.integers(1, 4), lq=st.integers(1, 6), lk=st.integers(1, 6),
       per_query=st.booleans(), seed=st.integers(0, 99))
def test_masked_softmax_rows_sum_to_one_or_zero(batch, lq, lk, per_query, seed):
    torch.manual_seed(seed)
    shape = (batch, lq) if per_query else (batch,)
    lens = torch.randint(0, lk + 1, shape)
    w = mha.masked_softmax(torch.randn(batch, lq, lk) * 5, lens)
    expected = (lens > 0).float()
    expected = expected if per_query else expected[:, None].expand(batch, lq)
    torch.testing.assert_close(w.sum(-1), expected)
    back = mha.convert_mask(lens, source="valid_lens", target="sdpa", num_keys=lk)
    lens_back = mha.convert_mask(back, source="sdpa", target="valid_lens")
    assert torch.equal(lens_back.reshape(lens.shape), lens)  # (B, 1) lengths come back as (B,)


@given(lq=st.integers(1, 8), lk=st.integers(1, 8), seed=st.integers(0, 99))
def test_random_masks_round_trip_and_match_torch_sdpa(lq, lk, seed):
    torch.manual_seed(seed)
    allowed = torch.rand(2, 1, lq, lk) > 0.5
    for convention in ("nn_mha", "zero_blocked"):
        there = mha.convert_mask(allowed, source="sdpa", target=convention)
        assert torch.equal(mha.convert_mask(there, source=convention, target="sdpa"), allowed)
    q, k, v = torch.randn(2, 3, lq, 4), torch.randn(2, 3, lk, 4), torch.randn(2, 3, lk, 5)
    out, _w = mha.scaled_dot_product_attention(q, k, v, allowed)
    rows = allowed.any(-1).expand(2, 3, lq)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    torch.testing.assert_close(out[rows], ref[rows], atol=1e-5, rtol=1e-4)
    assert (out[~rows] == 0).all() and not out.isnan().any()

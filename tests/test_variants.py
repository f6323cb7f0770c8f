"""Heads, the loop, grouped-query attention, pruning and relative positions."""

import math

import pytest
import torch

import mha


def test_attention_head_variants():
    x = torch.randn(2, 5, 12)
    shared = mha.AttentionHead(12, 4, variant="shared")
    out, w = shared(x)
    p = shared.W(x)  # (B, L, Dh)
    scores = p @ p.transpose(1, 2) / 2.0
    torch.testing.assert_close(scores, scores.transpose(1, 2))  # one matrix: symmetric scores
    torch.testing.assert_close(w, scores.softmax(-1))
    torch.testing.assert_close(out, w @ x)
    assert out.shape == (2, 5, 12)

    qk = mha.AttentionHead(12, 4, variant="qk")
    out, w = qk(x)
    torch.testing.assert_close(w, (qk.W_q(x) @ qk.W_k(x).transpose(1, 2) / 2.0).softmax(-1))
    torch.testing.assert_close(out, w @ x)

    qkv = mha.AttentionHead(12, 4)
    out, w = qkv(x, mask=mha.causal_mask(5))
    assert out.shape == (2, 5, 4) and (w.triu(1) == 0).all()
    torch.testing.assert_close(out, w @ qkv.W_v(x))
    assert not hasattr(qk, "W_v") and not hasattr(shared, "W_q")


@pytest.mark.parametrize("is_causal", [False, True])
def test_loop_equals_batched_equals_fused_equals_explicit(explicit, is_causal):
    loop = mha.MultiHeadAttentionLoop(24, 3)
    batched = loop.to_batched().eval()
    x = torch.randn(2, 6, 24)
    mask = torch.rand(2, 6, 6) > 0.3
    out_loop, w_loop = loop(x, mask=mask, is_causal=is_causal)
    out_w, w = batched(x, mask=mask[:, None], is_causal=is_causal, need_weights=True)
    out_fused, _ = batched(x, mask=mask[:, None], is_causal=is_causal)
    allowed = mask[:, None] & mha.causal_mask(6) if is_causal else mask[:, None]
    ref, ref_w = explicit(batched, x, x, x, allowed)
    for out in (out_w, out_fused, ref):
        torch.testing.assert_close(out_loop, out)
    torch.testing.assert_close(w_loop, w)
    torch.testing.assert_close(w_loop, ref_w)


def test_gqa_equals_mha_with_repeated_kv_weights():
    gqa = mha.MultiHeadAttention(32, 8, num_kv_heads=2, bias=True).eval()
    assert gqa.W_k.weight.shape == (2 * 4, 32)
    full = mha.MultiHeadAttention(32, 8, bias=True).eval()
    with torch.no_grad():
        for name in ("W_q", "W_o"):
            getattr(full, name).load_state_dict(getattr(gqa, name).state_dict())
        for name in ("W_k", "W_v"):
            src, dst = getattr(gqa, name), getattr(full, name)
            # (Hkv*Dh, D) -> (Hkv, Dh, D) -> (H, Dh, D) -> (H*Dh, D): kv head g serves heads 4g..4g+3
            dst.weight.copy_(src.weight.view(2, 4, 32).repeat_interleave(4, 0).reshape(32, 32))
            dst.bias.copy_(src.bias.view(2, 4).repeat_interleave(4, 0).reshape(32))
    q, kv = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    lens = torch.tensor([7, 3])
    for need_weights in (False, True):
        a, wa = gqa(q, kv, valid_lens=lens, need_weights=need_weights)
        b, wb = full(q, kv, valid_lens=lens, need_weights=need_weights)
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(wa, wb)


@pytest.mark.parametrize("num_kv_heads,heads", [(None, [0, 2]), (None, [3]), (2, [2, 3])])
def test_head_mask_zeros_equal_prune_heads(num_kv_heads, heads):
    layer = mha.MultiHeadAttention(32, 4, num_kv_heads=num_kv_heads, bias=True).eval()
    x = torch.randn(2, 6, 32)
    head_mask = torch.ones(4)
    head_mask[heads] = 0
    masked, masked_w = layer(x, head_mask=head_mask, need_weights=True)
    keep = [h for h in range(4) if h not in heads]
    layer.prune_heads(heads)
    assert layer.num_heads == len(keep) and layer.W_q.weight.shape == (8 * len(keep), 32)
    assert layer.W_o.weight.shape == (32, 8 * len(keep))
    for need_weights in (False, True):
        pruned, pruned_w = layer(x, need_weights=need_weights)
        torch.testing.assert_close(pruned, masked)
    torch.testing.assert_close(pruned_w, masked_w[:, keep])


def _zero_tables(layer):
    with torch.no_grad():
        layer.relative_key.weight.zero_()
        layer.relative_value.weight.zero_()
    return layer


def test_relative_with_zero_tables_equals_plain():
    rel = _zero_tables(mha.RelativeMultiHeadAttention(32, 4, max_relative_position=3, bias=True))
    plain = mha.MultiHeadAttention(32, 4, bias=True)
    plain.load_state_dict(rel.state_dict(), strict=False)
    q, kv = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    kw = {"valid_lens": torch.tensor([7, 2]), "is_causal": True}
    a, wa = rel(q, kv, need_weights=True, **kw)
    b, wb = plain(q, kv, need_weights=True, **kw)
    assert torch.equal(a, b) and torch.equal(wa, wb)  # exactly the same computation
    torch.testing.assert_close(plain(q, kv, **kw)[0], a)  # and the fused path agrees


def test_relative_matches_shaw_equations_written_as_loops():
    K = 2
    rel = mha.RelativeMultiHeadAttention(8, 2, max_relative_position=K).double()
    assert rel.relative_key.weight.shape == (2 * K + 1, 4)
    x = torch.randn(1, 6, 8, dtype=torch.float64)
    out, w = rel(x, need_weights=True)
    q = rel.W_q(x).view(1, 6, 2, 4)  # (B, L, H, Dh)
    k, v = rel.W_k(x).view(1, 6, 2, 4), rel.W_v(x).view(1, 6, 2, 4)
    z = torch.zeros(1, 6, 2, 4, dtype=torch.float64)
    for h in range(2):
        for i in range(6):
            a_k = torch.stack([rel.relative_key.weight[min(max(j - i, -K), K) + K]
                               for j in range(6)])  # (Lk, Dh)
            a_v = torch.stack([rel.relative_value.weight[min(max(j - i, -K), K) + K]
                               for j in range(6)])
            e = (k[0, :, h] + a_k) @ q[0, i, h] / math.sqrt(4)  # e_ij, eq. (4)
            alpha = e.softmax(0)
            torch.testing.assert_close(w[0, h, i], alpha)
            z[0, i, h] = alpha @ (v[0, :, h] + a_v)  # z_i, eq. (3)
    torch.testing.assert_close(out, rel.W_o(z.flatten(2)))


def test_relative_masks_and_causality():
    rel = mha.RelativeMultiHeadAttention(16, 2, max_relative_position=4, num_kv_heads=1)
    x = torch.randn(2, 7, 16)
    out, w = rel(x, is_causal=True, valid_lens=torch.tensor([7, 3]), need_weights=True)
    assert (w.triu(1) == 0).all() and (w[1, :, :, 3:] == 0).all()
    y = x.clone()
    y[:, 4:] += 1.0
    out_y, _ = rel(y, is_causal=True, valid_lens=torch.tensor([7, 3]))
    torch.testing.assert_close(out[:, :4], out_y[:, :4])
    mask = torch.zeros(7, 7, dtype=torch.bool)
    out_m, w_m = rel(x, mask=mask, need_weights=True)  # nothing allowed: zeros, no NaN
    assert (w_m == 0).all() and not out_m.isnan().any()


# Claims the chapters make about the package (see appendix/claims.md).


@pytest.mark.parametrize("variant", ["shared", "qk", "qkv"])
def test_attention_head_projections_have_no_bias(variant):
    """Ch 03: the head's projections are nn.Linear layers without bias."""
    head = mha.AttentionHead(12, 4, variant=variant)
    linears = [m for m in head.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(m.bias is None for m in linears)


@pytest.mark.skipif(not mha.attention_functions.SDPA_HAS_GQA,
                    reason="enable_gqa needs torch >= 2.5")
def test_fused_gqa_passes_enable_gqa_and_does_not_copy_kv_heads(monkeypatch):
    """Ch 11: with PyTorch 2.5 or later the fused path hands SDPA the Hkv key/value heads with
    enable_gqa=True instead of copying them for every query head."""
    calls = []
    real = mha.layer.F.scaled_dot_product_attention

    def spy(q, k, v, **kwargs):
        calls.append((q.shape, k.shape, kwargs.get("enable_gqa", False)))
        return real(q, k, v, **kwargs)

    monkeypatch.setattr(mha.layer.F, "scaled_dot_product_attention", spy)
    layer = mha.MultiHeadAttention(32, 8, num_kv_heads=2).eval()
    x = torch.randn(2, 5, 32)
    layer(x)
    layer(x, valid_lens=torch.tensor([5, 3]))
    assert len(calls) == 2
    for q_shape, k_shape, gqa in calls:
        assert q_shape == (2, 8, 5, 4) and k_shape == (2, 2, 5, 4) and gqa


def test_relative_layer_always_takes_the_explicit_path():
    """Ch 12: relative attention needs its (L, L, Dh) tables, so it never calls an SDPA kernel."""
    layer = mha.RelativeMultiHeadAttention(32, 4, max_relative_position=3).eval()
    x = torch.randn(1, 6, 32)
    assert mha.sdpa_backend(layer, x) == "none"
    assert mha.sdpa_backend(mha.MultiHeadAttention(32, 4).eval(), x) != "none"

"""Chapter 06's live figure (mha_book.figures.one_vs_many): one head against h heads, same projections."""

import math

import pytest
import torch
from live_texts import strings

import mha
from mha_book.figures import one_big_head


def test_every_h_uses_the_same_matrices_and_its_own_scale():
    layer, x = one_big_head._default_layer_and_input()
    weights = one_big_head.weights_per_h(layer, x)
    with torch.no_grad():
        q, k = layer.W_q(x)[0], layer.W_k(x)[0]  # (9, 512) each
    for h in one_big_head.HEADS:
        d = 512 // h
        qh, kh = q.view(9, h, d).transpose(0, 1), k.view(9, h, d).transpose(0, 1)
        want = torch.softmax(qh @ kh.transpose(-2, -1) / math.sqrt(d), -1)  # (h, 9, 9)
        torch.testing.assert_close(weights[h], want, atol=1e-5, rtol=0)


def test_the_normalised_product_is_the_one_head_and_the_mean_is_not():
    weights = one_big_head.weights_per_h()
    for h in one_big_head.HEADS[1:]:
        for query in range(9):
            p_heads = weights[h][:, query]
            torch.testing.assert_close(one_big_head.product_of_heads(p_heads), weights[1][0, query],
                                       atol=1e-5, rtol=0)
    gaps = [one_big_head.many_heads_state(8, query, weights)["state"]["gap"] for query in range(9)]
    assert max(gaps) > 0.05


def test_the_figure_takes_the_chapters_layer():
    torch.manual_seed(3)
    eight = mha.MultiHeadAttention(512, 8)
    x = 3 * torch.randn(1, 9, 512)
    before = torch.get_rng_state()
    fig = one_big_head.one_vs_many(layer=eight, x=x)
    assert torch.equal(torch.get_rng_state(), before)
    assert len(fig.states) == len(one_big_head.HEADS) * 9
    with torch.no_grad():
        _, w8 = eight(x, need_weights=True)
    s = fig.state(h=8, query=3)
    torch.testing.assert_close(torch.tensor(s["views"]["heads"]["grids"][0]), w8[0, :, 3],
                               atol=1e-5, rtol=0)
    rows = s["views"]["scale"]["rows"]
    assert rows[1] == ["scores divided by sqrt(d_k)", "22.63", "8.00"]
    # the largest weight over all 8 heads, and which head holds it (not "all heads")
    top = w8[0, :, 3].max()
    head = int(w8[0, :, 3].max(-1).values.argmax())
    assert rows[3][0] == 'largest weight for "Michael"'
    assert rows[3][2] == f"{float(top):.2f} (head {head})"
    assert all(len(c) <= 13 for r in rows for c in r[1:] if isinstance(c, str))  # short cells
    assert fig.state(h=1)["views"]["heads"]["grids"][0][0] == \
        fig.state(h=1)["views"]["one"]["grids"][0][0]


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="h must be one of"):
        one_big_head.one_vs_many(h=3)
    with pytest.raises(ValueError, match="layer must be a MultiHeadAttention with d_model 512"):
        one_big_head.one_vs_many(layer=mha.MultiHeadAttention(64, 8))


def test_every_setting_reads_as_english():
    """h = 1 is not "the product of the 1 head ... for each of 1"; no "0 of the 8 heads
    prefer it"; one agreeing head "prefers", several "prefer"; the product row names its
    exponent 1/sqrt(h)."""
    fig = one_big_head.one_vs_many()
    for state in fig.states.values():
        h, agree = state["state"]["h"], state["state"]["agree"]
        text = " | ".join(strings([state["readout"], state["views"]]))
        for wrong in ("1 heads", "of the 1 ", "each of 1", " 0 of the", "the 1 head"):
            assert wrong not in text.replace("16 heads", ""), (wrong, text)
        assert f"product ^ 1/sqrt({h})" in state["views"]["one"]["rows"][1]
        if h > 1 and agree == 1:
            assert f"1 of the {h} heads prefers it" in state["readout"]
        if h > 1 and agree == 0:
            assert f"none of the {h} heads prefers it" in state["readout"]
    assert "the layer is the 1-head layer itself" in fig.state(h=1)["readout"]


def test_the_scale_tables_columns_are_named():
    """An empty header cell is an axe violation (empty-table-header): every column is named."""
    for h in (1, 8):
        columns = one_big_head.one_vs_many().state(h=h)["views"]["scale"]["columns"]
        assert all(columns) and columns[0] == "quantity", columns

"""Chapter 04's live figure (mha_book.figures.head_width): num_heads at d_model = 512."""

import math

import pytest
import torch
from live_texts import strings

import mha
from mha_book.figures import head_width


def test_each_heads_weights_are_the_softmax_of_its_own_scaled_scores():
    x = 3 * torch.randn(1, 9, 512, generator=torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    layer = mha.MultiHeadAttention(512, 8)
    with torch.no_grad():
        q = layer.W_q(x).view(1, 9, 8, 64).transpose(1, 2)  # by hand: (1, 8, 9, 64)
        k = layer.W_k(x).view(1, 9, 8, 64).transpose(1, 2)
        want = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(64), -1)[0]
    torch.testing.assert_close(head_width.head_weights(8), want)
    torch.testing.assert_close(head_width.head_weights(8, x), want)


def test_the_parameters_stay_four_d_model_squared():
    for h in head_width.HEADS:
        c = head_width.parameter_counts(h)
        assert c["d_head"] * h == 512
        assert c["one_head"] == 3 * 512 * (512 // h)
        assert c["layer"] == c["loop"] == c["all_heads"] + c["W_o"] == 4 * 512**2
        assert c["layer"] == sum(p.numel() for p in mha.MultiHeadAttention(512, h).parameters())


def test_the_figure_lists_every_setting_and_leaves_the_random_state_alone():
    torch.manual_seed(7)
    before = torch.get_rng_state()
    fig = head_width.heads_at_fixed_width()
    assert torch.equal(torch.get_rng_state(), before)
    assert len(fig.states) == len(head_width.HEADS) * 9
    s = fig.state(num_heads=16, query=3)
    grid = s["views"]["weights"]["grids"][0]
    assert len(grid) == 16 and all(len(row) == 9 for row in grid)
    torch.testing.assert_close(torch.tensor(grid), head_width.head_weights(16)[:, 3], atol=1e-5,
                               rtol=0)
    rows = s["views"]["counts"]["rows"]
    assert rows[0][1] == 3 * 512 * 32 and rows[-3][1] == 1_048_576
    assert "16 heads of width 512 / 16 = 32" in s["readout"] and "1,048,576" in s["readout"]
    assert "512 / 16 = 32" in s["views"]["counts"]["caption"]
    assert "untrained" in s["readout"] and "largest weights on all 9 keys" in s["readout"]
    few = head_width.width_state(2, 3)["readout"]  # up to 4 heads: each head's top key by name
    assert '(heads 0 and 1)' in few and few.count('", "') == 1
    assert "(heads 0 to 3)" in head_width.width_state(4, 3)["readout"]
    assert len(s["readout"]) < 210  # two lines at 1280 px (it was four or five)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="num_heads must be one of"):
        head_width.heads_at_fixed_width(num_heads=3)
    with pytest.raises(ValueError, match="query must be one of the tokens"):
        head_width.heads_at_fixed_width(query="Hopkin")
    with pytest.raises(ValueError, match=r"x must have shape \(1, 9, 512\)"):
        head_width.heads_at_fixed_width(x=torch.zeros(1, 9, 64))


def test_every_setting_reads_as_english():
    """No "1 heads", "all 1 head" or "one row each" for one head; tokens in quotes ("a" is a
    token, not an article)."""
    fig = head_width.heads_at_fixed_width()
    for state in fig.states.values():
        text = " | ".join(strings([state["readout"], state["views"]]))
        for wrong in ("1 heads", " 1 distributions", "all 1 head", "of the 1 "):
            assert wrong not in text.replace("16 heads", ""), (wrong, text)
        if state["state"]["num_heads"] == 1:
            assert "one row each" not in text and "still has" not in state["readout"]
    one = fig.state(num_heads=1, query=6)["readout"]  # the query "a"
    assert '1 distribution for "a", its largest weight on "' in one

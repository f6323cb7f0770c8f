"""Chapter 05's live figures (mha_book.figures.batched_heads): split_heads on the numbers, folded valid_lens."""

import base64
import math

import numpy as np
import pytest
import torch

import mha
from mha_book.figures import batched_heads


def test_split_state_follows_each_number_through_split_and_merge():
    for h in batched_heads.HEADS:
        d = 512 // h
        for token, feature in ((0, 0), (2, 209), (8, 511), (5, 300)):
            s = batched_heads.split_state(h, token, feature)["state"]
            n = 512 * token + feature + 1
            assert s["number"] == n
            assert (s["head"], s["row"], s["column"]) == (feature // d, token, feature % d)
            assert mha.split_heads(batched_heads.numbers(), h)[0, s["head"], s["row"], s["column"]] == n
            assert s["back"] == [token, feature]


def test_the_reshape_without_transpose_deals_numbers_in_reading_order():
    s = batched_heads.split_state(8, 2, 209, wrong=True)["state"]
    n = 512 * 2 + 209 + 1
    assert (s["head"], s["row"], s["column"]) == ((n - 1) // (9 * 64), (n - 1) // 64 % 9,
                                                  (n - 1) % 64)
    assert s["back"] != [2, 209]  # merge_heads does not bring it home
    assert batched_heads.numbers().reshape(1, 8, 9, 64)[0, s["head"], s["row"], s["column"]] == n


def test_strips_colour_every_number_by_its_head():
    v = batched_heads.split_state(4, 0, 0)["views"]["strips"]
    grid = torch.tensor(v["panels"][0]["grid"])  # (9, 512)
    assert torch.equal(grid, (torch.arange(512) // 128).expand(9, 512))
    assert torch.equal(torch.tensor(v["panels"][2]["grid"]), grid)  # merged back in place
    wrong = torch.tensor(batched_heads.split_state(8, 0, 0, True)["views"]["strips"]["panels"][0]["grid"])
    assert (wrong[0] == 0).all()  # "head 0" gets the whole first token


def test_the_exported_tensors_are_the_packages():
    data = batched_heads._export()

    def ints(b64):
        return torch.from_numpy(np.frombuffer(base64.b64decode(b64), "<i2").astype("int64"))

    assert torch.equal(ints(data["input"]), batched_heads.numbers().flatten())
    for h in batched_heads.HEADS:
        split = mha.split_heads(batched_heads.numbers(), h)
        assert torch.equal(ints(data["layouts"][f"{h},0"]["split"]), split.flatten())
        assert torch.equal(ints(data["layouts"][f"{h},0"]["merged"]),
                           mha.merge_heads(split).flatten())


def test_folded_weights_match_the_layer_only_with_repeat_interleave():
    for h in batched_heads.FOLD_HEADS:
        right, package = batched_heads.folded_weights(h, 2, 5, batched_heads.EXPANSIONS[0])
        torch.testing.assert_close(right.reshape(2, h, 3, 6), package)
    wrong, package = batched_heads.folded_weights(4, 2, 5, batched_heads.EXPANSIONS[1])
    bad = (wrong.reshape(2, 4, 3, 6) - package).abs().amax((-2, -1)) > 1e-6  # (B, H)
    assert bad.flatten().tolist() == [False, True, False, True, True, False, True, False]
    # by hand: the folded row r of sequence r // H, its own scaled scores
    layer, query, memory = batched_heads._small(4)
    with torch.no_grad():
        q = layer.W_q(query)[0, :, 8:16]  # sequence 0, head 1 (d_head 8)
        k = layer.W_k(memory)[0, :, 8:16]
        s = q @ k.T / math.sqrt(8)
    torch.testing.assert_close(wrong[1], torch.softmax(s.masked_fill(torch.arange(6) >= 5,
                                                                     float("-inf")), -1))


def test_fold_figure_marks_the_wrong_rows():
    fig = batched_heads.fold_valid_lens()
    assert len(fig.states) == 2 * 3 * 6 * 6
    s = fig.state()
    assert s["state"]["wrong_rows"] == [1, 3, 4, 6]
    assert "4 of 8 folded rows get the other sequence's length" in s["readout"]
    right = fig.state(expansion=batched_heads.EXPANSIONS[0])
    assert right["state"]["wrong_rows"] == [] and not right["views"]["mask"]["marks"]
    assert not right["views"]["weights"]["marks"]
    assert fig.state(num_heads=1)["state"]["wrong_rows"] == []  # one head: both the same


def test_the_fold_mask_colour_bar_names_its_two_values():
    """A 0/1 mask: the colour bar says blocked and may attend, not 0.25, 0.5, 0.75."""
    mask = batched_heads.fold_valid_lens().state()["views"]["mask"]
    assert mask["ticks"] == [0.0, 1.0] and mask["tick_labels"] == ["blocked", "may attend"]
    assert {v for row in mask["grids"][0] for v in row} == {0, 1}


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="feature must be one of"):
        batched_heads.split_explorer(feature=512)
    with pytest.raises(ValueError, match="expansion must be one of"):
        batched_heads._expand(torch.tensor([1, 2]), 2, "tile")


def test_a_number_the_bug_leaves_in_place_is_called_luck():
    """With the reshape bug a few numbers come back where they started (the first of every
    head's block, among others): the readout says so and how few, and the merge panel's title
    says why its stripes look like a correct round trip's."""
    back = int((batched_heads.merge_heads(batched_heads.layout(8, wrong=True)) == batched_heads.numbers()).sum())
    assert 0 < back < 9 * 512
    s = batched_heads.split_state(8, 0, 0, wrong=True)
    assert s["state"]["back"] == [0, 0]
    assert f"where it started, by luck: the wrong round trip leaves only {back:,} of the 4,608" \
        in s["readout"]
    assert "a correct round trip's stripes" in s["views"]["strips"]["panels"][2]["title"]
    right = batched_heads.split_state(8, 0, 0, wrong=False)
    assert right["readout"].count("where it started.") == 1 and "luck" not in right["readout"]
    assert "stripes" not in right["views"]["strips"]["panels"][2]["title"]
    one_head = batched_heads.split_state(1, 0, 0, wrong=True)  # one head: the reshape is the identity
    assert "luck" not in one_head["readout"]

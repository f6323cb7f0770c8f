"""Chapter 02's live figures compute what PyTorch computes (mha_book.figures.scaled_scores)."""

import math

import torch

from mha_book.figures import scaled_scores


def test_dk_weights_are_the_softmax_of_the_scaled_scores():
    q, k = scaled_scores._query_and_keys()
    for d_k in (1, 16, 1024):
        for scaled in (True, False):
            scores = k[:, :d_k] @ q[0, :d_k] / (math.sqrt(d_k) if scaled else 1.0)
            torch.testing.assert_close(scaled_scores.dk_weights(d_k, scaled), torch.softmax(scores, -1))


def test_the_figure_shows_saturation_without_the_scale():
    fig = scaled_scores.dk_softmax()
    cold = fig.state(d_k=1024, scaled=False)["views"]["weights"]["values"]
    warm = fig.state(d_k=1024, scaled=True)["views"]["weights"]["values"]
    assert max(cold) > 0.99 and max(warm) < 0.6
    curves = fig.state()["views"]["entropy"]["series"]
    assert [c["label"] for c in curves] == ["scaled by 1/sqrt(d_k)", "unscaled",
                                            "uniform (log 16)"]
    assert curves[1]["y"][-1] < 0.01 < curves[0]["y"][-1]
    assert curves[2]["y"] == [round(math.log(16), 5)] * len(scaled_scores.DIMS)  # the title's 2.77


def test_the_entropy_plot_rings_only_the_curve_the_box_selects():
    fig = scaled_scores.dk_softmax()
    for scaled, ringed in ((False, [1]), (True, [0])):
        for d_k in (1, 64, 1024):
            view = fig.state(d_k=d_k, scaled=scaled)["views"]["entropy"]
            assert view["marker_series"] == ringed
            assert view["marker"] == scaled_scores.DIMS.index(d_k)
            assert view["y_max"] > math.log(16)  # the uniform line is inside the plot


def test_the_mask_readout_says_when_the_causal_mask_is_on():
    fig = scaled_scores.mask_builder()
    assert "causal (query i sees keys j <= i)" in fig.state(causal=True)["readout"]
    assert "no causal mask" in fig.state(causal=False)["readout"]


def test_mask_weights_follow_each_fill():
    allowed = scaled_scores.mask_allowed(2, 5, False, True)
    assert allowed[0, 2:].any() == torch.tensor(False) and allowed[0, :2, :2].all()
    inf = scaled_scores.mask_weights(2, 5, False, True, "-inf")
    assert inf[0, 2:].isnan().all() and not inf[0, :2].isnan().any()
    big = scaled_scores.mask_weights(2, 5, False, True, "-1e9 (float32)")
    torch.testing.assert_close(big[0, 2:], torch.full((3, 5), 0.2))  # uniform over blocked
    half = scaled_scores.mask_weights(2, 5, False, True, "-1e9 (float16)")
    assert half[0, 2:].isnan().all()  # -1e9 is -inf in float16
    pkg = scaled_scores.mask_weights(2, 5, False, True, scaled_scores.FILLS[3])
    assert (pkg[0, 2:] == 0).all()
    torch.testing.assert_close(pkg[0, :2], inf[0, :2])
    torch.testing.assert_close(pkg[1], torch.softmax(
        scaled_scores._scores()[0][1] @ scaled_scores._scores()[1][1].T / math.sqrt(8), -1))


def test_mask_builder_lists_every_setting_and_says_which_rows_are_nan():
    fig = scaled_scores.mask_builder()
    assert len(fig.states) == 6 * 6 * 2 * 2 * 4
    s = fig.state(len0=0, fill="-inf")
    assert "Sequence 0: every row has no key, so its weights are NaN" in s["readout"]
    assert "no causal mask" in s["readout"] and "crossed cells: NaN" in s["views"]["seq0"]["axes"]
    one = fig.state(len0=4, pad_queries=True, fill=scaled_scores.FILLS[3])["readout"]
    assert "Sequence 0: row 4 has no key, so its weights are all zero." in one
    assert "crossed" not in fig.state(len0=3, len1=5)["views"]["seq0"]["axes"]  # no NaN there
    assert s["views"]["seq0"]["grids"][0][0] == [None] * 5
    assert "Every query" in fig.state(len0=3, len1=5)["readout"]


def test_dk_figure_starts_where_the_chapter_says_and_names_the_orange_bar():
    fig = scaled_scores.dk_softmax()
    assert fig.state()["state"] == {**fig.state()["state"], "d_k": 1, "scaled": False}
    assert "the box changes nothing" in fig.state()["readout"]  # sqrt(1) = 1
    assert "orange: the largest weight" in fig.state()["views"]["weights"]["x_label"]
    # one random query: the unscaled entropy is not monotone (the chapter says it is bumpy)
    unscaled = fig.state()["views"]["entropy"]["series"][1]["y"]
    assert any(b > a for a, b in zip(unscaled, unscaled[1:]))


def test_mask_readout_says_what_a_blocked_row_becomes():
    fig = scaled_scores.mask_builder()
    big = fig.state(len0=0, fill="-1e9 (float32)")["readout"]
    assert "every row has no key, so its weights are uniform over the 5 keys, all blocked" in big
    assert "loss" in fig.state(len0=0, fill="-inf")["readout"]


def _cells(name):
    import json
    from pathlib import Path

    nb = Path(__file__).resolve().parent.parent / "chapters" / name
    return [(c.get("id"), "".join(c["source"])) for c in json.loads(nb.read_text())["cells"]]


def test_the_dk_figure_closes_its_section_and_the_mask_figure_names_its_box():
    """'Try it: d_k and the scale' ends 'What large scores do to the softmax', before the masks
    start (it used to split the padding subsection from its code), with a closing paragraph."""
    cells = _cells("02_scaled_dot_product.ipynb")
    where = {cid: i for i, (cid, _) in enumerate(cells)}
    masks = next(i for i, (_, s) in enumerate(cells) if "## Masks: which keys" in s)
    assert where["live02a1"] < where["live02a2"] < where["live02a4"] < masks
    assert "Without the scale, the largest weight" in cells[where["live02a1"] - 1][1]
    lead = cells[where["live02a1"]][1]
    assert "starts at $d_k = 1$ with the box off" in lead and "bumpy" in lead
    mask_lead = cells[where["live02b1"]][1]
    assert "last box" not in mask_lead and "**padded queries attend nothing**" in mask_lead


def test_the_float16_fill_says_what_raises_and_what_fills_instead():
    """A reader asked: if masked_fill(-1e9) raises on float16, where do the weights come from?
    The readout says both: the call raises, and -1e9 converted to float16 is -inf, the fill."""
    import pytest

    scores16 = torch.zeros(2, 2, dtype=torch.float16)
    with pytest.raises(RuntimeError, match="overflow"):
        scores16.masked_fill(torch.eye(2, dtype=torch.bool), -1e9)
    assert torch.tensor(-1e9).to(torch.float16).item() == float("-inf")
    readout = scaled_scores.mask_builder().state(len0=0, fill=scaled_scores.FILLS[2])["readout"]
    assert "In float16 -1e9 is -inf." in readout  # the prose says masked_fill raises
    assert "every row has no key, so its weights are NaN" in readout
    # the package's fill is named for what it does
    assert scaled_scores.FILLS[3] == "-inf, 0 for a row with no key (mha)"
    assert "all zero" in scaled_scores.mask_builder().state(len0=0, fill=scaled_scores.FILLS[3])["readout"]


def test_the_mask_builders_longest_readout_is_short():
    """The page keeps a readout as tall as the figure's longest (so the heatmaps below it do not
    move while the reader clicks). At 519 characters the longest left 6 empty lines under a
    one-line readout at 1280 px, 10 on a phone: every readout now fits in about 3 lines."""
    fig = scaled_scores.mask_builder()
    lengths = [len(state["readout"]) for state in fig.states.values()]
    assert max(lengths) <= 330, max(lengths)
    worst = fig.state(len0=0, len1=0, causal=True, fill=scaled_scores.FILLS[2])["readout"]
    assert worst.count("every row has no key, so its weights are NaN") == 2, worst

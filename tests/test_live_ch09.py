"""Chapter 09's live figure: every subset it offers, its accuracy as PyTorch computes it."""

import json

import torch

from mha.live import ch09
from mha.tasks import IGNORE


def reference_accuracy(removed):
    """Accuracy per job with the model's own head_mask (1 = kept), by hand."""
    model, _, _, held_out = ch09._setup()
    mask = torch.ones(2, 8)
    for layer, h in removed:
        mask[layer, h] = 0.0
    with torch.no_grad():
        pred = model(held_out.inputs, head_mask=mask).argmax(-1)  # (B, L, K)
    labelled = held_out.targets != IGNORE
    return ((pred == held_out.targets) & labelled).sum((0, 1)) / labelled.sum((0, 1))


def test_orders_put_the_essential_heads_where_chapter_09_finds_them():
    assert ch09.essential() == ((0, 6), (1, 6))
    assert set(ch09.order_of("ablation")[-2:]) == {(0, 6), (1, 6)}
    assert ch09.order_of("reverse") == ch09.order_of("gradient score")[::-1]
    for name in ch09.ORDERS:
        assert sorted(ch09.order_of(name)) == [(n, h) for n in range(2) for h in range(8)]


def test_every_offered_subset_has_the_accuracy_of_the_masked_model():
    subsets = ch09.head_subsets()
    assert 30 <= len(subsets) <= 136
    for removed in subsets[::5] + [()]:
        torch.testing.assert_close(ch09.accuracy_with(removed), reference_accuracy(removed))


def test_the_figure_lists_every_setting_and_stays_small():
    fig = ch09.head_switches()
    assert len(fig.states) == 4 * 17 * 2
    s = fig.state(order="reverse", removed=3, spare=True)
    order = ch09.order_of("reverse")
    gone = [lh for lh in order[:3] if lh not in ((0, 6), (1, 6))]
    assert s["state"]["removed_heads"] == [list(lh) for lh in gone]
    acc = reference_accuracy(gone)
    torch.testing.assert_close(torch.tensor(s["state"]["accuracy"][:3]), acc)
    grid = s["views"]["heads"]["grids"][0]
    assert all(grid[layer][h] is None for layer, h in gone)
    assert grid[0][6] is not None and s["views"]["heads"]["marks"] == [[0, 0, 6], [0, 1, 6]]
    full = fig.state(order="ablation", removed=16)
    assert full["state"]["accuracy"][-1] < 0.2  # every head gone: near chance
    curve = full["views"]["curve"]["series"][0]["y"]
    assert curve[0] > 0.99 and curve[-1] == round(full["state"]["accuracy"][-1], 5)
    assert len(json.dumps(fig.spec())) < 300_000


def test_slider_counts_the_heads_of_the_order_and_the_readout_says_both():
    fig = ch09.head_switches()
    assert fig.spec()["controls"][1]["label"] == "heads of the order removed"
    assert fig.spec()["controls"][1]["label"] == fig.state()["views"]["curve"]["x_label"]
    s = fig.state(order="reverse", removed=7, spare=True)  # (1, 6), (0, 6) are the first two
    assert "the first 7 heads of the order, 5 of 16 removed (layer 0 head 6 and layer 1 " \
           "head 6 put back)" in s["readout"]
    assert len(s["state"]["removed_heads"]) == 5


def test_every_bar_below_99_percent_of_the_full_models_is_accented_the_mean_too():
    fig = ch09.head_switches()
    full = ch09.accuracy_with(())
    fulls = full.tolist() + [float(full.mean())]
    seen_mean = False
    for order in ch09.ORDERS:
        for removed in range(17):
            bars = fig.state(order=order, removed=removed)["views"]["accuracy"]
            want = [k for k, (a, f) in enumerate(zip(bars["values"], fulls))
                    if a < ch09.KEEP * f]
            assert bars["highlight"] == want, (order, removed)
            seen_mean |= 3 in bars["highlight"]
    assert seen_mean
    # the learner's case: ablation order, 12 removed: first 0.72 and the mean 0.90 both accented
    bars = fig.state(order="ablation", removed=12)["views"]["accuracy"]
    assert bars["values"][3] < 0.99 and 3 in bars["highlight"]


def test_accuracy_axis_stops_just_above_1():
    """An accuracy is at most 1: the axis stops at 1.1 (was 1.2), the least that keeps the
    plot's legend, drawn inside the top of the plot, off the line at 1."""
    curve = ch09.head_switches().state()["views"]["curve"]
    assert 1.0 < curve["y_max"] <= 1.1
    assert max(y for s in curve["series"] for y in s["y"]) <= 1.0

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

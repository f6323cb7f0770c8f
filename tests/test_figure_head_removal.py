"""Chapter 09's live figure: every subset it offers, its accuracy as PyTorch computes it."""

import json
import re
from decimal import ROUND_HALF_UP, Decimal

import torch

from mha_book.figures import head_removal
from mha_book.tasks import IGNORE


def reference_accuracy(removed):
    """Accuracy per job with the model's own head_mask (1 = kept), by hand."""
    model, _, _, held_out = head_removal._setup()
    mask = torch.ones(2, 8)
    for layer, h in removed:
        mask[layer, h] = 0.0
    with torch.no_grad():
        pred = model(held_out.inputs, head_mask=mask).argmax(-1)  # (B, L, K)
    labelled = held_out.targets != IGNORE
    return ((pred == held_out.targets) & labelled).sum((0, 1)) / labelled.sum((0, 1))


def test_orders_put_the_essential_heads_where_chapter_09_finds_them():
    assert head_removal.essential() == ((0, 6), (1, 6))
    assert set(head_removal.order_of("ablation")[-2:]) == {(0, 6), (1, 6)}
    assert head_removal.order_of("reverse") == head_removal.order_of("gradient score")[::-1]
    for name in head_removal.ORDERS:
        assert sorted(head_removal.order_of(name)) == [(n, h) for n in range(2) for h in range(8)]


def test_every_offered_subset_has_the_accuracy_of_the_masked_model():
    subsets = head_removal.head_subsets()
    assert 30 <= len(subsets) <= 136
    for removed in subsets[::5] + [()]:
        torch.testing.assert_close(head_removal.accuracy_with(removed), reference_accuracy(removed))


def test_the_figure_lists_every_setting_and_stays_small():
    fig = head_removal.head_switches()
    assert len(fig.states) == 4 * 17 * 2
    s = fig.state(order="reverse", removed=3, spare=True)
    order = head_removal.order_of("reverse")
    gone = [lh for lh in order[:3] if lh not in ((0, 6), (1, 6))]
    assert s["state"]["removed_heads"] == [list(lh) for lh in gone]
    acc = reference_accuracy(gone)
    torch.testing.assert_close(torch.tensor(s["state"]["accuracy"][:3]), acc)
    grid = s["views"]["heads"]["grids"][0]
    assert all(grid[layer][h] is None for layer, h in gone)
    assert grid[0][6] is not None and s["views"]["heads"]["marks"] == [[0, 0, 6], [0, 1, 6]]
    full = fig.state(order="ablation", removed=16)
    assert full["state"]["accuracy"][-1] < 0.2  # every head gone: near chance
    curve = full["views"]["curve"]["series"][0]["y"]  # in percent
    assert curve[0] > 99 and abs(curve[-1] - 100 * full["state"]["accuracy"][-1]) < 1e-4
    assert len(json.dumps(fig.spec())) < 300_000


def test_the_step_control_counts_places_in_the_order_and_the_readout_says_both():
    fig = head_removal.head_switches()
    control = fig.spec()["controls"][1]
    assert control["kind"] == "step"  # previous/next buttons: one click a place
    # the control's label is short (on a phone its value once wrapped onto a row of its own)
    assert control["label"] == "up to place"
    assert fig.state()["views"]["curve"]["x_label"] == "remove up to place"
    assert control["labels"][:3] == ["none", "1", "2"]
    s = fig.state(order="reverse", removed=7, spare=True)  # (1, 6), (0, 6) are the first two
    assert "Gradient, most first, up to place 7: 5 of 16 heads removed (places 1\u20137, " \
           "less the 2 essential heads at places 1 and 2, kept)" in s["readout"]
    assert len(s["state"]["removed_heads"]) == 5
    s = fig.state(order="ablation", removed=3, spare=True)
    assert "3 of 16 heads removed (places 1\u20133; the 2 essential heads, at places 15 " \
           "and 16, not reached yet)" in s["readout"]
    s = fig.state(order="random", removed=7, spare=True)
    assert "6 of 16 heads removed (places 1\u20137, less the essential head at place 4, " \
           "kept)" in s["readout"]
    assert "up to place 1: 0 of 16 heads removed (place 1: the essential head, kept)" \
        in fig.state(order="reverse", removed=1, spare=True)["readout"]
    assert "nothing removed yet" in fig.state(order="reverse", removed=0)["readout"]


def test_readouts_are_grammatical_at_every_setting():
    fig = head_removal.head_switches()
    for state in fig.states.values():
        text = state["readout"] + " " + state["views"]["heads"]["caption"]
        assert not re.search(r"\b1 heads\b|\bfirst 1\b|\b0 head\b", text), text


def test_ring_marks_only_the_curve_the_controls_select():
    fig = head_removal.head_switches()
    for spare in (False, True):
        curve = fig.state(order="reverse", removed=4, spare=spare)["views"]["curve"]
        assert curve["marker"] == 4 and curve["marker_series"] == [1 if spare else 0]
        assert [s["label"] for s in curve["series"]] == ["essential removed too",
                                                         "essential kept"]


def test_layout_does_not_depend_on_the_settings():
    """The same views at every setting, the grid's legend and the bars' caption the same: the
    toggle once made the grid's legend longer, which pushed the bars below the grid."""
    fig = head_removal.head_switches()
    legends = {s["views"]["heads"]["axes"] for s in fig.states.values()}
    captions = {s["views"]["accuracy"]["caption"] for s in fig.states.values()}
    assert len(legends) == 1 and len(captions) == 1
    assert all(s["views"]["heads"]["marks"] == [[0, 0, 6], [0, 1, 6]]
               for s in fig.states.values())
    assert all(all(s["views"][v] is not None for v in ("heads", "accuracy", "curve"))
               for s in fig.states.values())


def test_every_bar_below_99_percent_of_the_full_models_is_accented_the_mean_too():
    fig = head_removal.head_switches()
    full = head_removal.accuracy_with(())
    assert (full == 1).all()  # so "99% of the full model's" is 99.0 on every bar
    fulls = full.tolist() + [float(full.mean())]
    seen_mean = False
    for order in head_removal.ORDERS:
        for removed in range(17):
            bars = fig.state(order=order, removed=removed)["views"]["accuracy"]
            want = [k for k, (a, f) in enumerate(zip(bars["values"], fulls))
                    if a < 100 * head_removal.KEEP * f]
            assert bars["highlight"] == want, (order, removed)
            seen_mean |= 3 in bars["highlight"]
    assert seen_mean
    # the learner's case: ablation order, 12 removed: first 72% and the mean 90% both accented
    bars = fig.state(order="ablation", removed=12)["views"]["accuracy"]
    assert bars["values"][3] < 99 and 3 in bars["highlight"]


def test_numbers_written_agree_with_the_colour():
    """A mean of 0.989 was written "0.99" on a bar in the "under 99%" colour. Now the bars are
    in percent with one decimal, as the readout writes them (they wrote 99.96 where the readout
    wrote 100.0%): at every setting each bar's number is the readout's, and it is under 99
    exactly when its bar is accented."""
    fig = head_removal.head_switches()
    for state in fig.states.values():
        bars = state["views"]["accuracy"]
        assert bars["decimals"] == 1
        written = re.findall(r"(\d+\.\d)%", state["readout"])[:4]  # 3 jobs, the mean
        assert len(written) == len(bars["values"]) == 4
        for k, (value, text) in enumerate(zip(bars["values"], written)):
            accented = k in bars["highlight"]
            # the page's toFixed(1): the stored value, exactly, a tie rounded up (10.25 is
            # "10.3"; Python's format gives "10.2", which the readout once wrote)
            page = Decimal(value).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
            assert str(page) == text, (state["readout"], value)
            assert (round(value, 1) < 99) == accented, (state["readout"], value)
            assert (float(text) < 99) == accented, (state["readout"], text)
    tie = fig.state(order="reverse", removed=4)  # induction 10.25%: the bar writes 10.3
    assert tie["views"]["accuracy"]["values"][2] == 10.25
    assert "induction 10.3%" in tie["readout"]
    mean = fig.state(order="reverse", removed=7, spare=True)
    assert "mean 98.9%, below 99%" in mean["readout"]
    assert 3 in mean["views"]["accuracy"]["highlight"]


def test_the_grid_counts_places_from_1_to_16_as_the_controls_do():
    """The colour bar ran 0 to 15 while the step control and the readout count places 1 to
    16: now the grid's scale is 1 to 16, its ticks start at 1 and end at 16, and a head's
    colour is its place (the place the readout names)."""
    fig = head_removal.head_switches()
    for state in fig.states.values():
        grid = state["views"]["heads"]
        assert (grid["vmin"], grid["vmax"]) == (1, 16)
        assert grid["ticks"][0] == 1 and grid["ticks"][-1] == 16
        places = [v for row in grid["grids"][0] for v in row if v is not None]
        assert all(1 <= v <= 16 for v in places)
    grid = fig.state(order="ablation")["views"]["heads"]["grids"][0]
    for place, (layer, h) in enumerate(head_removal.order_of("ablation"), start=1):
        assert grid[layer][h] == place


def test_accuracy_axis_stops_just_above_100():
    """An accuracy is at most 100%: the axis stops at 110, the least that keeps the plot's
    legend, drawn inside the top of the plot, off the line at 100."""
    curve = head_removal.head_switches().state()["views"]["curve"]
    assert 100 < curve["y_max"] <= 110 and curve["y_label"] == "mean accuracy (%)"
    assert max(y for s in curve["series"] for y in s["y"]) <= 100

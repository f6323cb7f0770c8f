"""Chapter 01's live figure (mha_book.figures.temperature): the temperature slider's labels and readout."""

import math

import torch

from mha_book.figures import temperature

SCORES = torch.tensor([2.0, 1.6, 0.0])  # chapter 01's two best keys and a function word


def figure():
    return temperature.temperature_bars(SCORES, ["Michael", "Bay", "as"], value=0.3)


def test_every_step_of_the_slider_shows_a_new_label():
    """Two significant figures: 0.010, 0.012, 0.013, ... not 0.01 three times."""
    slider = figure().controls[0]
    assert len(set(slider.labels)) == len(slider.values)
    assert slider.labels[:3] == ["0.010", "0.012", "0.013"]


def test_the_slider_is_evenly_spaced_with_its_start_and_1_on_it():
    """Not "0.28, 0.3, 0.31": each step multiplies T by one ratio, and the starting value and
    T = 1 (the chapter's bar chart) are exactly among the steps, labelled as the prose says."""
    for value in (0.3, 1.0, 0.5, 2.0, 0.05):
        grid = temperature.temperatures(value)
        ratios = [b / a for a, b in zip(grid, grid[1:])]
        assert max(ratios) - min(ratios) < 1e-9, value
        assert 1.1 < ratios[0] < 1.15 and value in grid and 1.0 in grid
        assert grid[0] < 0.0125 and grid[-1] > 80
    slider = figure().controls[0]
    i, one = slider.values.index(0.3), slider.values.index(1.0)
    assert slider.labels[i - 1:i + 2] == ["0.27", "0.30", "0.34"] and slider.labels[one] == "1.0"
    assert figure().state()["readout"].startswith("T = 0.30: ")


def test_the_readout_never_calls_an_underflowed_zero_small():
    fig = figure()
    grid = fig.controls[0].values
    cold = fig.state(temperature=grid[0])
    assert cold["state"]["smallest"] == 0.0  # e^(-2 / 0.010) underflows in float32 ...
    assert "underflows to 0 in float32" in cold["readout"]
    assert "never gives exactly 0" not in cold["readout"]
    warm = fig.state(temperature=1.0)  # ... a weight that is not 0 is said to be above 0
    assert "never gives exactly 0" in warm["readout"] and warm["state"]["smallest"] > 0


def test_at_a_high_temperature_the_readout_says_uniform_and_gives_the_entropy():
    fig = figure()
    hot = fig.state(temperature=fig.controls[0].values[-1])
    assert "all weights close to 1/3 = 0.33 (uniform)" in hot["readout"]
    assert "never gives exactly 0" not in hot["readout"]
    w = torch.softmax(SCORES / 1.0, -1)
    at_1 = fig.state(temperature=1.0)
    assert math.isclose(at_1["state"]["entropy"], float(-(w * w.log()).sum()), rel_tol=1e-5)
    assert f"entropy {at_1['state']['entropy']:.2f} nats (uniform: log 3 = 1.10)" \
        in at_1["readout"]


def test_the_chapter_says_what_to_try_and_what_was_seen():
    import json
    from pathlib import Path

    nb = Path(__file__).resolve().parent.parent / "chapters" / "01_soft_lookup.ipynb"
    cells = {c.get("id"): "".join(c["source"]) for c in json.loads(nb.read_text())["cells"]}
    assert "far left" in cells["3605a8af"] and "far right" in cells["3605a8af"]
    assert "underflows" in cells["live01c2"] and "ch01_live_hot_min" in cells["live01c2"]


def test_the_axis_label_says_what_the_orange_bar_is():
    """Chapter 02's orange is the largest weight; here it is the query's own key: the figure
    says which, on its axis (a reader could not tell)."""
    tokens = ["Michael", "Bay", "as"]
    plain = temperature.temperature_bars(SCORES, tokens).state()["views"]["weights"]
    assert plain["x_label"] == "key token" and plain["highlight"] == []
    named = temperature.temperature_bars(SCORES, tokens, highlight="Michael").state()
    assert named["views"]["weights"]["x_label"] == 'key token (orange: "Michael")'
    said = temperature.temperature_bars(SCORES, tokens, highlight="Michael",
                                 orange='"Michael", the query itself').state()
    assert said["views"]["weights"]["x_label"] == \
        'key token (orange: "Michael", the query itself)'
    assert said["views"]["weights"]["highlight"] == [0]
    import json
    from pathlib import Path

    nb = Path(__file__).resolve().parent.parent / "chapters" / "01_soft_lookup.ipynb"
    cells = {c.get("id"): "".join(c["source"]) for c in json.loads(nb.read_text())["cells"]}
    assert "orange='\"Michael\", the query itself'" in cells["23b00ec7"]

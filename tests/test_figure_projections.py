"""Chapter 03's live figure (mha_book.figures.projections): the ring task, a shared W and separate W^Q, W^K."""

import math

import torch

from mha_book.figures import projections


def test_rings_are_chapter_03s_task():
    x, y, letters = projections.make_rings(5, torch.Generator().manual_seed(0))
    assert x.shape == (5, 6, 14) and torch.equal(y[:, 1:], letters[:, :-1])
    assert torch.equal(y[:, 0], letters[:, -1])  # seat 0 wraps round to seat 5
    assert torch.equal(x[..., :8].argmax(-1), letters) and torch.equal(x[0, :, 8:], torch.eye(6))


def test_scores_are_the_heads_own_and_symmetric_only_when_shared():
    _, (x, _, _) = projections._data()
    for variant in ("shared", "qk"):
        model = projections.ring_head(variant, 200)
        with torch.no_grad():
            s = model.scores(x[:4])
            _, w = model(x[:4])
        torch.testing.assert_close(torch.softmax(s, -1), w)  # the head's weights: softmax(S)
        asym = (s - s.transpose(-2, -1)).abs().max()
        assert (asym < 1e-5) == (variant == "shared")


def test_training_leaves_the_global_random_state_alone_and_separate_heads_learn():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    fig = projections.shared_vs_separate()
    assert torch.equal(torch.get_rng_state(), before)
    shared, separate = fig.state(separate=False)["state"], fig.state(separate=True)["state"]
    assert separate["accuracy"] > 0.99 > shared["accuracy"]
    loss = projections.trained_heads("qk")[1]
    assert len(loss) == 200 and loss[0] > math.log(8) - 0.2 and loss[-1] < 0.01


def test_the_figure_lists_every_setting():
    fig = projections.shared_vs_separate()
    assert len(fig.states) == 2 * len(projections.CHECKPOINTS) * projections.N_RINGS
    s = fig.state(separate=True, step=0, ring=2)
    assert s["state"] == {**s["state"], "separate": True, "step": 0, "ring": 2}
    assert "not symmetric" in s["readout"]
    assert "are symmetric" in fig.state(separate=False, step=3)["readout"]


def test_each_score_map_has_its_own_symmetric_colour_scale():
    """The scale follows the map shown (max |s|), so the separate head's scores and the
    untrained heads' are not washed out by the shared head's scores of about 95."""
    fig = projections.shared_vs_separate()
    ranges = {}
    for separate in (False, True):
        for step in range(len(projections.CHECKPOINTS)):
            s = fig.state(separate=separate, step=step)
            view = s["views"]["scores"]
            top = torch.tensor(view["grids"][0]).abs().max().item()
            assert view["vmax"] == -view["vmin"] == s["state"]["score_range"]
            assert top <= view["vmax"] < top + 0.011
            ranges[separate, step] = view["vmax"]
    assert ranges[True, 5] < 15 < 90 < ranges[False, 5]  # separate: about 11, shared: 95
    assert ranges[False, 0] < 1 and ranges[True, 0] < 1  # untrained: small scores


def test_the_readouts_average_is_over_the_1000_test_rings():
    _, (x, _, _) = projections._data()
    model = projections.ring_head("shared", 200)
    with torch.no_grad():
        _, w = model(x)
    seats = torch.arange(6)
    left = float(w[:, seats, (seats - 1) % 6].mean())
    s = projections.shared_vs_separate().state(separate=False)
    assert abs(s["state"]["left"] - left) < 1e-6 and x.shape[0] == 1000
    assert (f"Over all 1,000 test rings: on average each seat puts {left:.2f}"
            in s["readout"])


def test_the_readout_says_which_number_is_for_the_ring_shown():
    """|s_ij - s_ji| is the shown ring's; the accuracy is over the 1,000 test rings."""
    fig = projections.shared_vs_separate()
    for ring in range(projections.N_RINGS):
        s = fig.state(separate=True, step=2, ring=ring)
        assert f"On the ring shown (test ring {ring}) the scores are not symmetric" in s["readout"]
        assert "Over all 1,000 test rings:" in s["readout"]


def test_the_lead_in_describes_the_layout_readers_see():
    """The lead-in names the panels in order (first / then / last), which holds whether they
    stack or stand side by side, never where they are, and says which of the chapter's
    attempts 'separate' is."""
    import json
    from pathlib import Path

    nb = Path(__file__).resolve().parent.parent / "chapters" / "03_one_head.ipynb"
    cells = {c.get("id"): "".join(c["source"]) for c in json.loads(nb.read_text())["cells"]}
    lead = cells["live03a1"]
    assert "On the left" not in lead and "On the right" not in lead
    for where in ("on top", "wide screen"):
        assert where not in lead, where
    assert "First come" in lead and "attempt 2" in lead
    assert "ch03_live_left_shared" in cells["live03a4"]  # a closing paragraph, glued


def test_the_readout_gives_each_seats_accuracy():
    """Shared W: 70.9% = 4 seats solved + 2 at chance. The readout lists the six accuracies
    (a reader could not parse "4 of the 6 seats right in over 90% of the rings")."""
    _, (x, y, _) = projections._data()
    for separate, variant in ((False, "shared"), (True, "qk")):
        with torch.no_grad():
            logits, _ = projections.ring_head(variant, 200)(x)
        per_seat = (logits.argmax(-1) == y).float().mean(0)  # (6,)
        s = projections.shared_vs_separate().state(separate=separate)
        assert s["state"]["solved"] == int((per_seat > 0.9).sum())
        listed = ", ".join(f"{a:.0%}" for a in per_seat.tolist())
        assert f"(seat by seat, 0 to 5: {listed})." in s["readout"]
        assert "right in over" not in s["readout"]
    shared = projections.shared_vs_separate().state(separate=False)
    assert shared["state"]["solved"] == 4
    assert "(seat by seat, 0 to 5: 100%, 13%, 100%, 100%, 12%, 100%)" in shared["readout"]


def test_the_figure_writes_w_q_and_w_k_one_way():
    """Plain text has no superscript: W_Q and W_K everywhere in the figure, never W^Q."""
    import json

    fig = projections.shared_vs_separate()
    text = json.dumps(fig.spec())
    assert "W^" not in text and "W_Q" in text and "W_K" in text

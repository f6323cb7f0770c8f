"""The projections' live figure in Chromium (mha_book.figures.projections): a shared W or
separate W^Q, W^K on the ring task.

Without a build: the figure alone in a blank page; the toggle, the step buttons and slider and
the ring select each change the picture from the keyboard, and the scores and weights drawn
equal the trained head's (to 1e-3). On the built book: the same on the page that holds it.
(axe, a phone, touch targets and layout, for every figure: test_every_figure.py.)
"""


import pytest
import torch
from live_figures import (
    DRAW_MS,
    drawn,
    page_with,
    press,
    readout,
    root_of,
    same,
    show,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import projections

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def figure():
    return projections.shared_vs_separate()


def expected(v):
    """Scores and weights (L, L) of the head after ``v["step"]`` steps, on test ring v["ring"]."""
    model = projections.ring_head("qk" if v["separate"] else "shared", v["step"])
    _, (x, _, _) = projections._data()
    with torch.no_grad():
        _, w = model(x[v["ring"]:v["ring"] + 1])
        s = model.scores(x[v["ring"]:v["ring"] + 1])
    return s.tolist(), w.tolist()


def check(root):
    v = values(root)
    s, w = expected(v)
    assert same(drawn(root, "scores"), s) and same(drawn(root, "weights"), w), v
    sym = torch.tensor(drawn(root, "scores")[0])
    assert ((sym - sym.T).abs().max() < 2e-3) == (not v["separate"])
    return v


def move(page, root):
    times = []
    for knob, key in (("separate", "Space"), ("step", "ArrowLeft"), ("ring", "ArrowDown"),
                      ("step", "Home"), ("separate", "Space"), ("step", "End")):
        before = drawn(root, "scores")
        times.append(press(page, root, knob, key))
        assert drawn(root, "scores") != before, f"{knob} {key}: the picture did not change"
        check(root)
    return times


def test_shared_vs_separate_draws_the_trained_heads(page, figure):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    root = show(page, figure)
    assert check(root) == {**values(root), "separate": False, "step": 200, "ring": 0}
    times = move(page, root)
    # the step buttons: one click back, one forward
    for name, step in (("previous", 100), ("next", 200)):
        root.get_by_role("button", name=f"training step: {name} step").click()
        assert check(root)["step"] == step
    assert "symmetric" in readout(root)
    print(f"\nchapter 03 shared vs separate, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")
    assert not errors, errors


def test_the_figure_is_live_in_the_built_book(page, book_url):
    page.goto(f"{book_url}/{page_with('shared-vs-separate')}", wait_until="load")
    root = root_of(page, "shared-vs-separate")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    check(root)
    times = move(page, root)
    print(f"\nchapter 03 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")

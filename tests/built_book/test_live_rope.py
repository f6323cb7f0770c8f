"""The RoPE live figure in Chromium (mha_book.figures.rope): each pair of a query and a key turning with its
position, and the score against the distance.

Without a build: the figure alone in a blank page; both position sliders change the picture from
the keyboard; the arrows drawn equal the pairs rotated by hand (angle position * theta_j,
rotate-half pairing) and the score curve equals q_m . k_n by hand, to 1e-3; moving both
positions by the same amount leaves the score where it was; also after a tap on a phone. On the
built book: the same on the page that holds it.
(axe, a phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

import json

import pytest
import torch
from live_figures import (
    DRAW_MS,
    drawn,
    label,
    offline,
    page_with,
    press,
    readout,
    root_of,
    same,
    show,
    tap,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import rope

pytestmark = pytest.mark.browser


def by_hand(x, position):
    theta = 10000.0 ** (-2 * torch.arange(4, dtype=torch.float64) / 8)
    c, s = torch.cos(position * theta), torch.sin(position * theta)
    return torch.cat([x[:4] * c - x[4:] * s, x[:4] * s + x[4:] * c])


def check(root):
    v = values(root)
    q, k = rope._vectors()
    qm, kn = by_hand(q, v["m"]), by_hand(k, v["n"])
    want = [[[float(qm[j]), float(qm[j + 4])], [float(kn[j]), float(kn[j + 4])],
             [float(q[j]), float(q[j + 4])]] for j in range(4)]
    assert same(drawn(root, "pairs"), want), v
    curve = [float(by_hand(q, max(d, 0)) @ by_hand(k, max(-d, 0))) for d in rope.DISTANCES]
    assert same(drawn(root, "score"), [curve, curve]), v
    assert abs(v["score"] - float(qm @ kn)) < 1e-3
    assert f"distance {v['m'] - v['n']};" in readout(root)
    d = v["m"] - v["n"]
    where = f"with the key at 0, the query at {d}" if d >= 0 else \
        f"with the query at 0, the key at {-d}"
    assert where in readout(root) and "q\u00b7k" in readout(root), readout(root)
    # the score axis: ticks at whole numbers (not +-1.54, +-3.09)
    ticks = json.loads(root.locator('canvas[data-view="score"]').get_attribute("data-ticks"))
    assert len(ticks) >= 3 and all(t == round(t) for t in ticks), ticks
    assert "coincide" in label(root, "score")
    return v


def move(page, root):
    times = []
    for knob, key in (("m", "ArrowRight"), ("n", "ArrowRight"), ("m", "End"), ("n", "End"),
                      ("m", "Home"), ("n", "Home")):
        before = drawn(root, "pairs")
        times.append(press(page, root, knob, key))
        assert drawn(root, "pairs") != before, f"{knob} {key}: the picture did not change"
        check(root)
    return times


def test_rope_rotation_draws_the_rotated_pairs(page):
    root = show(page, rope.rope_rotation())
    v = check(root)
    assert (v["m"], v["n"]) == (3, 0)
    score = v["score"]
    times = move(page, root)
    # both positions moved by 4: the arrows turn, the score stays
    for knob in ("m", "n"):
        root.locator(f'[data-knob="{knob}"]').fill(str({"m": 7, "n": 4}[knob]))
    v = check(root)
    assert (v["m"], v["n"]) == (7, 4) and abs(v["score"] - score) < 1e-9
    print(f"\nchapter 12 RoPE, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")


def test_a_tap_on_a_phone_draws_the_rotated_pairs(phone_page):
    """A tap on the key's position slider (on a 390 x 844 touch phone): still the pairs rotated
    by hand (a tap on every control, and the width, for every figure: test_every_figure.py)."""
    root = show(phone_page, rope.rope_rotation())
    tap(phone_page, root, root.locator('[data-knob="n"]'))
    assert check(root)["n"] != 0


def test_the_figure_lives_in_the_built_book(page, book_url):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    outside = offline(page, book_url)  # nothing may come from outside the book
    page.goto(f"{book_url}/{page_with('rope-rotation')}", wait_until="load")
    root = root_of(page, "rope-rotation")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    check(root)
    times = move(page, root)
    print(f"\nchapter 12 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside

"""The RoPE live figure in Chromium (mha_book.figures.rope): each pair of a query and a key turning with its
position, and the score against the distance.

Without a build: the figure alone in a blank page; both position sliders change the picture from
the keyboard; the arrows drawn equal the pairs rotated by hand (angle position * theta_j,
rotate-half pairing) and the score curve equals q_m . k_n by hand, to 1e-3; moving both
positions by the same amount leaves the score where it was; also after a tap on a phone. On the
built book: the same on the page that holds it.

The score against the distance (``rope.rope_distance``), without a build: each control (base,
rotation, length) moved from the keyboard changes the curves drawn and the readout, which stay
the listed state's (the package's numbers, to 1e-3); on a 390 x 844 phone the plot and the
controls fit the screen for every rotation, also after a tap; on chapter 12's built page the same
(``test_the_distance_figure_lives_in_the_built_book``).
(axe, a phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

import json

import pytest
import torch
from live_figures import (
    DRAW_MS,
    drawn,
    figure_layout_problems,
    label,
    open_in_book,
    press,
    readout,
    same,
    set_control,
    show,
    tap,
    timing,
    values,
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
    root, errors, outside = open_in_book(page, book_url, "rope-rotation")
    check(root)
    times = move(page, root)
    print(f"\nchapter 12 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside


# ----------------------------------------------------------------------------- rope-distance

WIDEST = ("() => Math.max(...[...document.querySelectorAll('.mha-live canvas, .mha-live "
          ".mha-control, .mha-live .mha-readout')].map(e => e.getBoundingClientRect().right))")


def check_distance(root, figure):
    """The curves drawn and the readout are the listed state's for the values drawn."""
    v = values(root)
    want = figure.state(base=v["base"], rotation=v["rotation"], length=v["length"])
    plot = want["views"]["score"]
    assert same(drawn(root, "score"), [s["y"] for s in plot["series"]]), v
    assert readout(root) == want["readout"]
    said = label(root, "score")
    assert said.startswith(plot["caption"]) and "0.84d to 1.19d" in said
    assert f"{v['length']:,}" in readout(root)
    return v


def move_distance(page, root, figure):
    times = []
    for knob, key in (("base", "ArrowRight"), ("rotation", "ArrowDown"), ("length", "ArrowLeft"),
                      ("rotation", "End"), ("base", "End"), ("length", "End"),
                      ("rotation", "Home"), ("length", "Home"), ("base", "Home")):
        before, said = drawn(root, "score"), readout(root)
        times.append(press(page, root, knob, key))
        assert drawn(root, "score") != before, f"{knob} {key}: the curves did not change"
        assert readout(root) != said, f"{knob} {key}: the readout did not change"
        check_distance(root, figure)
    return times


def test_rope_distance_moves_from_the_keyboard(page):
    figure = rope.rope_distance()
    root = show(page, figure)
    v = check_distance(root, figure)
    assert (v["base"], v["rotation"], v["length"]) == (10_000, "partial", 131072)
    assert "halfway there (0.875) first at d \u2248 42" in readout(root)
    times = move_distance(page, root, figure)
    v = values(root)  # after Home on every knob but rotation's End then Home: the firsts
    assert (v["base"], v["rotation"], v["length"]) == (10_000, "full", 4096)
    assert "half (0.5) first at d \u2248 52" in readout(root)
    print(f"\nchapter 12 RoPE distance, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors


def test_rope_distance_fits_a_phone(phone_page):
    """390 x 844 with touch: for every rotation (YaRN's and 25 %'s three legend entries, the
    longest readouts) the plot, the controls and the readout fit the screen, no page is wider,
    no text overlaps or is cut; a tap on the length slider redraws the package's numbers."""
    figure = rope.rope_distance()
    root = show(phone_page, figure)
    for label_ in ("full (128 of 128)", "none (NoPE)", "YaRN 4x over 32K", "25 % (32 of 128)"):
        set_control(phone_page, root, "rotation", label_)
        check_distance(root, figure)
        assert phone_page.evaluate(WIDEST) <= 390, label_
        assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390, label_
        assert not figure_layout_problems(root), (label_, figure_layout_problems(root))
    before = values(root)["length"]
    tap(phone_page, root, root.locator('[data-knob="length"]'), position={"x": 4, "y": 10})
    assert values(root)["length"] != before
    check_distance(root, figure)
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    assert not phone_page.errors, phone_page.errors


def test_the_distance_figure_lives_in_the_built_book(page, book_url):
    root, errors, outside = open_in_book(page, book_url, "rope-distance")
    figure = rope.rope_distance()  # the chapter's call may set other starting values
    check_distance(root, figure)
    times = move_distance(page, root, figure)
    print(f"\nchapter 12 RoPE distance (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside

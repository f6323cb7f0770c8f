"""The batched heads' live figures in Chromium (mha_book.figures.batched_heads): where split_heads puts a number; valid_lens folded.

Without a build: each figure alone in a blank page. The split explorer computes in the page
from the tensors the package exported; every control moved from the keyboard changes the
picture, and what it draws (the head of every number in the three strips, the focused number's
index at every step, the readout) equals ``mha_book.figures.batched_heads.split_state`` in Python, which in turn
is checked against ``mha.split_heads`` and ``mha.merge_heads`` (tests/test_figure_batched_heads.py). The
folded valid_lens figure's masks and weights equal a by-hand computation (to 1e-3), also after
a tap on a phone. On the built book: the same on the page that holds them. (axe, a phone's
width, touch targets and layout, for every figure: test_every_figure.py.)
"""

import math

import pytest
import torch
from live_figures import (
    DRAW_MS,
    PANEL_RGB,
    drawn,
    font_px,
    layout_problems,
    oklab,
    page_with,
    phone,
    pixel,
    press,
    readout,
    root_of,
    same,
    show,
    tap,
    texts,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import batched_heads

pytestmark = pytest.mark.browser


def table_rows(root, view):
    return root.locator(f'[data-view="{view}"]').evaluate(
        "el => [...el.querySelectorAll('tr')].slice(1).map(r => [...r.children]"
        ".map(c => c.textContent))")


def check_split(root):
    v = values(root)
    want = batched_heads.split_state(v["num_heads"], v["token"], v["feature"], v["wrong"])
    assert v == want["state"], (v, want["state"])
    panels = want["views"]["strips"]["panels"]
    assert drawn(root, "strips") == [{"grid": p["grid"], "focus": p["focus"]} for p in panels]
    rows = [[str(c) if not isinstance(c, int) else f"{c:,}" for c in r]
            for r in want["views"]["path"]["rows"]]
    assert table_rows(root, "path") == rows
    assert readout(root) == want["readout"]
    return v


def move_split(page, root):
    times = []
    moves = (("feature", "ArrowRight"), ("num_heads", "ArrowRight"), ("token", "ArrowDown"),
             ("wrong", "Space"), ("feature", "PageUp"), ("num_heads", "Home"),
             ("wrong", "Space"), ("feature", "End"), ("num_heads", "End"))
    for knob, key in moves:
        before = root.get_attribute("data-state")
        times.append(press(page, root, knob, key))
        assert root.get_attribute("data-state") != before, f"{knob} {key}: nothing changed"
        check_split(root)
    return times


def expected_fold(v):
    """The folded rows' masks (B * H, Lk) and first-query weights by hand."""
    H, lens = v["num_heads"], torch.tensor([v["len0"], v["len1"]])
    lens = lens.repeat_interleave(H) if v["expansion"].startswith("repeat_interleave") \
        else lens.repeat(H)
    allowed = torch.arange(6) < lens[:, None]  # (B * H, Lk)
    layer, query, memory = batched_heads._small(H)
    d = 32 // H
    with torch.no_grad():
        q = layer.W_q(query)[:, 0].view(2, H, d).reshape(2 * H, d)  # first query of each row
        k = layer.W_k(memory).view(2, 6, H, d).transpose(1, 2).reshape(2 * H, 6, d)
        s = (k @ q[:, :, None])[..., 0] / math.sqrt(d)  # (B * H, Lk)
    w = torch.softmax(s.masked_fill(~allowed, float("-inf")), -1)
    return [allowed.float().tolist()], [w.tolist()]


def check_fold(root):
    v = values(root)
    mask, weights = expected_fold(v)
    assert same(drawn(root, "mask"), mask) and same(drawn(root, "weights"), weights), v
    return v


def move_fold(page, root):
    times = []
    for knob, key in (("expansion", "ArrowUp"), ("len0", "ArrowRight"), ("expansion",
                      "ArrowDown"), ("num_heads", "ArrowLeft"), ("len1", "Home"),
                      ("num_heads", "End")):
        before = drawn(root, "mask") + drawn(root, "weights")
        times.append(press(page, root, knob, key))
        assert drawn(root, "mask") + drawn(root, "weights") != before, \
            f"{knob} {key}: the picture did not change"
        check_fold(root)
    return times


def test_split_explorer_draws_what_the_package_computes(page):
    root = show(page, batched_heads.split_explorer())
    assert check_split(root)["head"] == 3
    times = move_split(page, root)
    assert values(root)["num_heads"] == 16 and values(root)["feature"] == 511
    # a number anywhere: the slider filled with a value
    root.locator('[data-knob="feature"]').fill("300")
    assert check_split(root)["feature"] == 300
    print(f"\nchapter 05 split explorer, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors


def test_split_explorer_says_when_the_bug_leaves_a_number_in_place(page):
    """Token 0, feature 0 comes back home even with the bug: the page says "by luck" and how
    few numbers do, as Python does (check_split compares the whole readout)."""
    root = show(page, batched_heads.split_explorer(num_heads=8, token=0, feature=0, wrong=True))
    assert check_split(root)["back"] == [0, 0]
    assert "by luck" in readout(root)
    press(page, root, "wrong", "Space")  # the correct split: home, and no luck about it
    assert "by luck" not in readout(root) and check_split(root)["wrong"] is False
    assert not page.errors, page.errors


def test_fold_valid_lens_draws_what_pytorch_computes(page):
    root = show(page, batched_heads.fold_valid_lens())
    v = check_fold(root)
    assert v["expansion"] == batched_heads.EXPANSIONS[1] and "4 of 8 folded rows" in readout(root)
    times = move_fold(page, root)
    print(f"\nchapter 05 folded valid_lens, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_what_the_package_computes(phone_page):
    """On a 390 x 844 touch phone, a tap on the bug's box and one at the len0 slider's right end:
    the pictures are still the package's (a tap on every control, and the width, for every
    figure: test_every_figure.py)."""
    root = show(phone_page, batched_heads.split_explorer())
    tap(phone_page, root, root.locator('[data-knob="wrong"]'))
    assert check_split(root)["wrong"] is True
    root = show(phone_page, batched_heads.fold_valid_lens())
    slider = root.locator('[data-knob="len0"]')
    box = slider.bounding_box()
    tap(phone_page, root, slider, position={"x": box["width"] - 4, "y": box["height"] / 2})
    assert check_fold(root)["len0"] == 6


@pytest.mark.parametrize("width", [1280, 390])
def test_sixteen_heads_have_sixteen_colours_and_labels_are_readable(browser, width):
    """At 16 heads the colours repeated (head 3 and head 10 both green, 1 and 8 both teal) and
    the labels were 8 px: every pair of the 16 heads' colours is far apart (Oklab distance
    0.1 or more), none is near the book's light output panel, and no text is under 11 px."""
    import math

    context = phone(browser) if width == 390 else browser.new_context()
    page = context.new_page()
    try:
        root = show(page, batched_heads.split_explorer(num_heads=16))
        geom = root.locator('canvas[data-view="strips"]').evaluate("c => c.mhaGeom")
        focus_row = values(root)["row"]
        row = 0 if focus_row >= 4 else 8
        seen = []
        for h in range(16):
            x = geom["lab"] + h * (32 * geom["cw"] + geom["gap"]) + 32 * geom["cw"] / 4
            y = geom["tops"][1] + (row + 0.5) * geom["rowH"]
            seen.append(oklab(pixel(root, "strips", x, y)))
        close = min((math.dist(a, b), i, j) for i, a in enumerate(seen)
                    for j, b in enumerate(seen) if i < j)
        assert close[0] >= 0.1, f"heads {close[1]} and {close[2]}: {close[0]:.3f} apart"
        assert min(math.dist(c, oklab(PANEL_RGB)) for c in seen) >= 0.1
        small = sorted({t["text"] for t in texts(root, "strips")[0] if font_px(t) < 11})
        assert not small, small
        assert not layout_problems(root, "strips")
    finally:
        context.close()


def test_both_figures_are_live_in_the_built_book(page, book_url):
    page.goto(f"{book_url}/{page_with('split-explorer')}", wait_until="load")
    split, fold = root_of(page, "split-explorer"), root_of(page, "fold-valid-lens")
    for root in (split, fold):
        wait_drawn(page, root)
    split.scroll_into_view_if_needed()
    check_split(split)
    times = move_split(page, split)
    fold.scroll_into_view_if_needed()
    check_fold(fold)
    times_fold = move_fold(page, fold)
    draws = DRAW_MS[-len(times + times_fold):]
    print(f"\nchapter 05 (built book), key press to picture: split explorer {timing(times)}; "
          f"folded valid_lens {timing(times_fold)}; redraw {timing(draws)}")
    assert not page.errors, page.errors

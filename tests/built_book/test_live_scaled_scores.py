"""The scaled scores' live figures in Chromium (mha_book.figures.scaled_scores): the d_k slider
with the scale, and the mask builder.

Without a build: the figure the package writes, alone in a blank page; every control moved from
the keyboard, and a tap on a phone, changes the picture, and the numbers drawn equal PyTorch's
(to 1e-3, NaN exactly where PyTorch has NaN). On the built book: the same on the page that holds
them, with the key-press-to-picture times printed. (axe, a phone's width, touch targets and
layout, for every figure: test_every_figure.py.)
"""

import math

import pytest
import torch
from live_figures import (
    DRAW_MS,
    drawn,
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

from mha import scaled_dot_product_attention
from mha_book.figures import scaled_scores

pytestmark = pytest.mark.browser


def expected_dk(d_k, scaled):
    """softmax(q . k / sqrt(d_k)) (or unscaled) by hand, from the figure's query and keys."""
    q, k = scaled_scores._query_and_keys()
    scores = k[:, :d_k] @ q[0, :d_k]  # (16,)
    return torch.softmax(scores / (math.sqrt(d_k) if scaled else 1.0), -1).tolist()


def expected_mask(len0, len1, causal, pad_queries, fill):
    """The weights (2, 5, 5): PyTorch's masked_fill + softmax, or the package for its fill."""
    q, k = scaled_scores._scores()
    allowed = scaled_scores.mask_allowed(len0, len1, causal, pad_queries)
    if fill == scaled_scores.FILLS[3]:
        w = scaled_dot_product_attention(q, k, torch.zeros(2, 5, 1), allowed)[1]
        torch.testing.assert_close(w.sum(-1), allowed.any(-1).float())  # zeros, never NaN
    else:
        value = {scaled_scores.FILLS[0]: float("-inf"), scaled_scores.FILLS[1]: -1e9,
                 scaled_scores.FILLS[2]: float(torch.tensor(-1e9).half())}[fill]
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(8)
        w = torch.softmax(scores.masked_fill(~allowed, value), -1)
    return [[[None if math.isnan(x) else x for x in row] for row in seq] for seq in w.tolist()]


def dk_values(root):
    """The d_k figure's controls as drawn (its state also carries the readout's numbers)."""
    v = values(root)
    return {"d_k": v["d_k"], "scaled": v["scaled"]}


def check_dk(root):
    v = dk_values(root)
    assert same(drawn(root, "weights"), expected_dk(v["d_k"], v["scaled"])), v
    return v


def check_mask(root):
    v = values(root)
    want = expected_mask(v["len0"], v["len1"], v["causal"], v["pad_queries"], v["fill"])
    assert same(drawn(root, "seq0"), [want[0]]) and same(drawn(root, "seq1"), [want[1]]), v
    return v


def move_dk(page, root):
    times = []
    # from d_k = 1 unscaled (where the box changes nothing: sqrt(1) = 1)
    # (unscaled, 512 and 1024 are both one-hot on the same key: no move between them)
    for knob, key in (("d_k", "ArrowRight"), ("d_k", "End"), ("scaled", "Space"),
                      ("d_k", "ArrowLeft"), ("scaled", "Space"), ("d_k", "Home")):
        before = drawn(root, "weights")
        times.append(press(page, root, knob, key))
        assert drawn(root, "weights") != before, f"{knob} {key}: the picture did not change"
        check_dk(root)
    return times


def move_mask(page, root):
    times = []
    moves = (("pad_queries", "Space"), ("len0", "ArrowLeft"), ("fill", "ArrowDown"),
             ("len1", "Home"), ("fill", "ArrowDown"), ("causal", "Space"),
             ("fill", "ArrowDown"), ("len0", "End"))
    for knob, key in moves:
        before = drawn(root, "seq0") + drawn(root, "seq1")
        text = readout(root)
        times.append(press(page, root, knob, key))
        assert drawn(root, "seq0") + drawn(root, "seq1") != before or readout(root) != text, \
            f"{knob} {key}: nothing changed"
        check_mask(root)
    return times


def test_dk_softmax_draws_what_pytorch_computes(page):
    root = show(page, scaled_scores.dk_softmax())
    # it starts where the chapter's instructions start: unscaled, d_k = 1
    assert check_dk(root) == {"d_k": 1, "scaled": False}
    times = move_dk(page, root)
    assert dk_values(root) == {"d_k": 1, "scaled": False}
    # unscaled at d_k = 1024 the softmax is nearly one-hot; the readout says so
    root.locator('[data-knob="d_k"]').focus()
    page.keyboard.press("End")
    assert dk_values(root) == {"d_k": 1024, "scaled": False}
    assert max(drawn(root, "weights")) > 0.99 and "unscaled" in readout(root)
    print(f"\nchapter 02 d_k slider, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")
    assert not page.errors, page.errors


def test_mask_builder_draws_what_pytorch_computes(page):
    root = show(page, scaled_scores.mask_builder())
    check_mask(root)
    times = move_mask(page, root)
    # -inf with a padded query: NaN rows, crossed; the package: zeros
    for knob, option in (("len0", "2"), ("fill", "0")):
        el = root.locator(f'[data-knob="{knob}"]')
        if knob == "fill":
            el.select_option(option)
        else:
            el.fill(option)
    if not values(root)["pad_queries"]:
        root.locator('[data-knob="pad_queries"]').check()
    v = check_mask(root)
    assert v["fill"] == "-inf" and drawn(root, "seq0")[0][4] == [None] * 5
    assert "NaN" in readout(root)
    root.locator('[data-knob="fill"]').select_option("3")
    check_mask(root)
    assert drawn(root, "seq0")[0][4] == [0] * 5 and "all zero" in readout(root)
    print(f"\nchapter 02 mask builder, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-8:])}")
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_what_pytorch_computes(phone_page):
    """A tap (on a 390 x 844 touch phone) that ticks a box: the numbers drawn are still PyTorch's
    (a tap on every control, and the width, for every figure: test_every_figure.py)."""
    for figure, knob, check in ((scaled_scores.dk_softmax(), "scaled", check_dk),
                                (scaled_scores.mask_builder(), "causal", check_mask)):
        root = show(phone_page, figure)
        tap(phone_page, root, root.locator(f'[data-knob="{knob}"]'))
        assert values(root)[knob] is True
        check(root)


def test_both_figures_live_in_the_built_book(page, book_url):
    outside = offline(page, book_url)
    page.goto(f"{book_url}/{page_with('dk-softmax')}", wait_until="load")
    dk, mask = root_of(page, "dk-softmax"), root_of(page, "mask-builder")
    for root in (dk, mask):
        wait_drawn(page, root)
    dk.scroll_into_view_if_needed()
    check_dk(dk)
    times = move_dk(page, dk)
    mask.scroll_into_view_if_needed()
    check_mask(mask)
    times_mask = move_mask(page, mask)
    draws = DRAW_MS[-len(times + times_mask):]
    print(f"\nchapter 02 (built book), key press to picture: d_k slider {timing(times)}; "
          f"mask builder {timing(times_mask)}; redraw {timing(draws)}")
    assert not page.errors, page.errors
    assert not outside, outside


def test_the_variance_equation_fits_a_phone(phone_page, book_url):
    """At 390 x 844 the variance argument's display equation, Var(q . k) = d_k and
    Var(q . k / sqrt(d_k)) = 1, fits its column: it is split into lines that each fit, so no
    part of it hides behind a sideways scroll that nothing shows."""
    page = phone_page
    page.goto(f"{book_url}/{page_with('dk-softmax')}", wait_until="load")
    page.wait_for_function("() => document.querySelectorAll("
                           "'mjx-container[display=\"true\"]').length >= 2", timeout=30_000)
    page.wait_for_timeout(500)
    sizes = page.evaluate("() => [...document.querySelectorAll("
                          "'mjx-container[display=\"true\"]')]"
                          ".filter(m => m.textContent.includes('Var(q'))"
                          ".map(m => [m.scrollWidth, m.clientWidth])")
    assert len(sizes) == 1, sizes
    (wide, column), = sizes
    assert column <= 360 and wide <= column + 1, f"{wide} px in a {column} px column"

"""The blockwise softmax's live figure in Chromium (mha_book.figures.blockwise_softmax): the online softmax, one block of keys at a time.

Without a build: the figure alone in a blank page; the block-size slider, the step slider and
the next/previous buttons change the picture from the keyboard; the weights drawn equal
exp(s - m) / l by hand over the keys seen, the running maximum and output equal the online
softmax by hand, and after the last block the output equals PyTorch's softmax attention, to
1e-3, also after a tap on a phone. On the built book: the same on the page that holds it.
(axe, a phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

import json
import math

import pytest
import torch.nn.functional as F
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

from mha_book.figures import blockwise_softmax

pytestmark = pytest.mark.browser


def by_hand(block_size):
    """(m, l, acc) after each block, in plain Python."""
    _, _, v, s = blockwise_softmax.problem()
    m, ell, acc, after = -math.inf, 0.0, 0.0, []
    for j in range(blockwise_softmax.N_KEYS):
        x = float(s[0, j])
        new_m = max(m, x)
        ell = ell * math.exp(m - new_m) + math.exp(x - new_m)
        acc = acc * math.exp(m - new_m) + math.exp(x - new_m) * float(v[j, 0])
        m = new_m
        if (j + 1) % block_size == 0:
            after.append((m, ell, acc))
    return after


def check(root):
    v = values(root)
    bs, b = v["block_size"], v["block"]
    _, _, _, s = blockwise_softmax.problem()
    after = by_hand(bs)
    m, ell, acc = after[b]
    seen = (b + 1) * bs
    weights = [math.exp(float(s[0, j]) - m) / ell if j < seen else None  # None: "not yet"
               for j in range(blockwise_softmax.N_KEYS)]
    assert same(drawn(root, "weights"), weights), v
    if seen < blockwise_softmax.N_KEYS:
        assert "k11 not yet" in label(root, "weights")
    # the running lines stop at this block (None beyond it); the full softmax goes across
    def so_far(xs):
        return [x if i <= b else None for i, x in enumerate(xs)]

    assert same(drawn(root, "running"), [so_far([a[0] for a in after]),
                                         so_far([a[1] for a in after])]), v
    q, k, vv, _ = blockwise_softmax.problem()
    full = float(F.scaled_dot_product_attention(q[None], k[None], vv[None])[0, 0, 0])
    assert same(drawn(root, "output"), [so_far([a[2] / a[1] for a in after]),
                                        [full] * len(after)]), v
    if b == len(after) - 1:
        assert abs(acc / ell - full) < 1e-3 and "equals the full" in readout(root)
    return v


def nice(ticks):
    """Ticks at a step of 1, 2, 2.5 or 5 x 10^k, each a whole number of steps."""
    step = ticks[1] - ticks[0]
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    return (any(abs(mantissa - c) < 1e-6 for c in (1, 2, 2.5, 5))
            and all(abs(t / step - round(t / step)) < 1e-6 for t in ticks)
            and all(abs(b - a - step) < 1e-9 * max(1, step) for a, b in zip(ticks, ticks[1:])))


def check_ticks(root):
    for view in ("weights", "running", "output"):
        ticks = json.loads(root.locator(f'canvas[data-view="{view}"]').get_attribute("data-ticks"))
        assert len(ticks) >= 3 and nice(ticks), (view, ticks)


def check_slider(root, changed):
    """The block slider runs to this block size's last block; a new block size starts at 0."""
    v = values(root)
    knob = root.locator('[data-knob="block"]')
    assert int(knob.get_attribute("max")) == blockwise_softmax.N_KEYS // v["block_size"] - 1, v
    assert int(knob.input_value()) == v["block"]
    if changed == "block_size":
        assert v["block"] == 0, v


def move(page, root):
    times = []
    for knob, key in (("block", "ArrowRight"), ("block", "ArrowRight"),
                      ("block_size", "ArrowLeft"), ("block", "End"), ("block_size", "Home"),
                      ("block", "End"), ("block_size", "End")):
        before = drawn(root, "weights") + drawn(root, "running")
        times.append(press(page, root, knob, key))
        assert drawn(root, "weights") + drawn(root, "running") != before, f"{knob} {key}"
        check(root)
        check_slider(root, knob)
        check_ticks(root)
    return times


def test_nice_ticks_rule():
    assert nice([1, 2, 3, 4]) and nice([0, 0.25, 0.5]) and nice([-3, -2, -1, 0])
    assert not nice([0.67, 1.61, 2.55]) and not nice([0, 1.15, 2.3]) and not nice([1.54, 3.09])


def test_online_softmax_draws_the_online_softmax(page):
    root = show(page, blockwise_softmax.online_softmax())
    assert values(root)["block_size"] == 3 and values(root)["block"] == 0
    check(root)
    times = move(page, root)
    # block size 3 again, then the next button to the last block: the full softmax
    root.locator('[data-knob="block_size"]').fill("2")
    for _ in range(3):
        root.get_by_role("button", name="block: next step").click()
    v = check(root)
    assert v["block_size"] == 3 and v["block"] == 3 and v["done"]
    # the last block: "next" goes no further, says so, and keeps the focus; the first block
    # explains its rescale
    nxt = root.get_by_role("button", name="block: next step")
    prev = root.get_by_role("button", name="block: previous step")
    assert nxt.get_attribute("aria-disabled") == "true"
    assert prev.get_attribute("aria-disabled") == "false"
    before = root.get_attribute("data-draws")
    nxt.click(force=True)  # a reader can still press it (Playwright waits for enabled ones)
    assert root.get_attribute("data-draws") == before and values(root)["block"] == 3
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == \
        "block: next step"
    prev.click()
    assert values(root)["block"] == 2
    assert nxt.get_attribute("aria-disabled") == "false"
    width = root.locator(".mha-table").bounding_box()["width"]
    press(page, root, "block", "Home")
    assert prev.get_attribute("aria-disabled") == "true"  # the first block
    table = root.locator(".mha-table").inner_text()
    assert "\u2014" in table and "m_old = \u2212\u221e" in readout(root), table
    # the table keeps its width from the first block to the next (it once jumped)
    assert abs(root.locator(".mha-table").bounding_box()["width"] - width) <= 4
    assert "\u2113 = " in readout(root) and " l = " not in readout(root)
    print(f"\nchapter 13 online softmax, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-7:])}")


def test_a_tap_on_a_phone_draws_the_online_softmax(phone_page):
    """A tap on the "next" button (on a 390 x 844 touch phone): block 1, still the online softmax
    by hand (a tap on every control, and the width, for every figure: test_every_figure.py)."""
    root = show(phone_page, blockwise_softmax.online_softmax())
    tap(phone_page, root, root.get_by_role("button", name="block: next step"))
    assert values(root)["block"] == 1
    check(root)


def test_the_figure_lives_in_the_built_book(page, book_url):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    outside = offline(page, book_url)  # nothing may come from outside the book
    page.goto(f"{book_url}/{page_with('online-softmax')}", wait_until="load")
    root = root_of(page, "online-softmax")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    check(root)
    times = move(page, root)
    print(f"\nchapter 13 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside

"""The head width's live figure in Chromium (mha_book.figures.head_width): num_heads at
d_model = 512.

Without a build: the figure alone in a blank page; the num_heads slider and the query select
change the picture from the keyboard, and a tap on a phone; the weights drawn equal PyTorch's
softmax of each head's own scaled scores (to 1e-3) and the table's counts equal the package's
modules'. On the built book: the same on the page that holds it. (axe, a phone's width, touch
targets and layout, for every figure: test_every_figure.py.)
"""

import json
import math

import pytest
import torch
from live_figures import (
    DRAW_MS,
    drawn,
    layout_problems,
    page_with,
    phone,
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

import mha
from mha_book.figures import head_width

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def figure():
    return head_width.heads_at_fixed_width()


def expected(num_heads, query):
    """Each head's weights of the query (H, 9), by hand from the seeded layer's matrices."""
    x = 3 * torch.randn(1, 9, 512, generator=torch.Generator().manual_seed(0))
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(0)
        layer = mha.MultiHeadAttention(512, num_heads)
        d = 512 // num_heads
        q = layer.W_q(x)[0].view(9, num_heads, d).transpose(0, 1)  # (H, 9, d)
        k = layer.W_k(x)[0].view(9, num_heads, d).transpose(0, 1)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d), -1)  # (H, 9, 9)
    return [w[:, query].tolist()]


def table_rows(root, view):
    return root.locator(f'[data-view="{view}"]').evaluate(
        "el => [...el.querySelectorAll('tr')].slice(1).map(r => [...r.children]"
        ".map(c => c.textContent))")


def check(root):
    v = values(root)
    assert same(drawn(root, "weights"), expected(v["num_heads"], v["query"])), v
    rows = table_rows(root, "counts")
    layer = mha.MultiHeadAttention(512, v["num_heads"])
    counted = f"{sum(p.numel() for p in layer.parameters()):,}"
    assert rows[3][1] == rows[4][1] == rows[5][1] == counted == "1,048,576"
    assert f"{v['num_heads']} head" in readout(root)
    assert f"of width 512 / {v['num_heads']} = {512 // v['num_heads']}:" in readout(root)
    assert "random (untrained)" in readout(root)
    return v


def move(page, root):
    times = []
    for knob, key in (("num_heads", "ArrowRight"), ("query", "ArrowDown"),
                      ("num_heads", "Home"), ("query", "ArrowUp"), ("num_heads", "End"),
                      ("num_heads", "ArrowLeft")):
        before = drawn(root, "weights")
        times.append(press(page, root, knob, key))
        assert drawn(root, "weights") != before, f"{knob} {key}: the picture did not change"
        check(root)
    return times


def test_heads_at_fixed_width_draws_what_pytorch_computes(page, figure):
    root = show(page, figure)
    assert check(root)["num_heads"] == 8
    times = move(page, root)
    assert values(root)["num_heads"] == 8 and len(drawn(root, "weights")[0]) == 8
    print(f"\nchapter 04 heads at fixed width, key press to picture (no build): "
          f"{timing(times)}; redraw {timing(DRAW_MS[-6:])}")
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_what_pytorch_computes(phone_page, figure):
    """A tap at the num_heads slider's right end (on a 390 x 844 touch phone): 16 heads, and the
    weights and counts drawn are still PyTorch's (a tap on every control, and the width, for
    every figure: test_every_figure.py)."""
    root = show(phone_page, figure)
    slider = root.locator('[data-knob="num_heads"]')
    box = slider.bounding_box()
    tap(phone_page, root, slider, position={"x": box["width"] - 4, "y": box["height"] / 2})
    assert check(root)["num_heads"] == 16


def test_the_figure_is_live_in_the_built_book(page, book_url):
    page.goto(f"{book_url}/{page_with('heads-at-fixed-width')}", wait_until="load")
    root = root_of(page, "heads-at-fixed-width")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    check(root)
    times = move(page, root)
    print(f"\nchapter 04 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [1280, 390])
def test_one_head_has_a_readable_colour_bar(browser, figure, width):
    """At num_heads 1 the heatmap is one query row and its colour bar was squeezed into that
    row's height, five ticks and "attention weight" crammed together: the bar lies under the
    row, 100 px or longer, and no text touches another or is cut."""
    context = phone(browser) if width == 390 else browser.new_context()
    page = context.new_page()
    try:
        root = show(page, figure)
        press(page, root, "num_heads", "Home")
        assert values(root)["num_heads"] == 1
        canvas = root.locator('canvas[data-view="weights"]')
        assert canvas.get_attribute("data-colour-bar") == "below"
        assert int(canvas.get_attribute("data-colour-bar-length")) >= 100
        assert json.loads(canvas.get_attribute("data-ticks")) == [0, 0.25, 0.5, 0.75, 1]
        assert not layout_problems(root, "weights")
    finally:
        context.close()

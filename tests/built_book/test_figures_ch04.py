"""Chapter 04's live figure in Chromium: num_heads at d_model = 512.

Without a build: the figure alone in a blank page; the num_heads slider and the query select
change the picture from the keyboard; the weights drawn equal PyTorch's softmax of each head's
own scaled scores (to 1e-3) and the table's counts equal the package's modules'; axe-core finds
nothing in light and dark mode; at 390 x 844 with touch a tap redraws and nothing is wider than
the screen. On the built book: the same on chapter 04's page.
"""

import json
import math

import pytest
import torch
from live_figures import (
    DRAW_MS,
    axe_violations,
    drawn,
    layout_problems,
    phone,
    press,
    readout,
    root_of,
    same,
    show,
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


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_heads_at_fixed_width_passes_axe(page, figure, dark):
    show(page, figure, dark=dark)
    problems = axe_violations(page)
    assert not problems, problems


def test_phone_touch(browser, figure):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                  is_mobile=True, device_scale_factor=2)
    page = context.new_page()
    try:
        root = show(page, figure)
        before = root.get_attribute("data-draws")
        slider = root.locator('[data-knob="num_heads"]')
        box = slider.bounding_box()
        slider.tap(position={"x": box["width"] - 4, "y": box["height"] / 2})  # the right end
        page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                               arg=[root.element_handle(), before], timeout=5_000)
        widest = page.evaluate("() => Math.max(...[...document.querySelectorAll("
                               "'.mha-live canvas, .mha-live .mha-control, .mha-live table')]"
                               ".map(e => e.getBoundingClientRect().right))")
        assert widest <= 390, f"{widest} px wide on a 390 px screen"
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        check(root)
    finally:
        context.close()


def test_chapter_04_figure_is_live_in_the_built_book(page, book_url):
    page.goto(f"{book_url}/chapters/04_heads_in_a_loop.html", wait_until="load")
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

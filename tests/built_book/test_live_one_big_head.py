"""One big head's live figure in Chromium (mha_book.figures.one_big_head): one head against h heads with the same projections.

Without a build: the figure alone in a blank page; the h slider and the query select change the
picture from the keyboard; the h heads' weights drawn equal PyTorch's softmax of each head's
partial scores over sqrt(512 / h), the one head's its full scores over sqrt(512), and the
"product" row equals the one head (to 1e-3), also after a tap on a phone. On the built book:
the same on the page that holds it. (axe, a phone's width, touch targets and layout, for every
figure: test_every_figure.py.)
"""

import math

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
    tap,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import one_big_head

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def figure():
    return one_big_head.one_vs_many()


def expected(h, query):
    """(one head's row, the h heads' rows) by hand from the default layer's W_q, W_k."""
    layer, x = one_big_head._default_layer_and_input()
    with torch.no_grad():
        q, k = layer.W_q(x)[0], layer.W_k(x)[0]  # (9, 512)
    one = torch.softmax(k @ q[query] / math.sqrt(512), -1)  # (9,)
    d = 512 // h
    qh, kh = q[query].view(h, d), k.view(9, h, d).transpose(0, 1)  # (h, d), (h, 9, d)
    heads = torch.softmax((kh @ qh[:, :, None])[..., 0] / math.sqrt(d), -1)  # (h, 9)
    return one, heads


def check(root):
    v = values(root)
    one, heads = expected(v["h"], v["query"])
    rows = drawn(root, "one")[0]  # one head, product, mean
    assert same(rows[0], one.tolist()) and same(rows[1], one.tolist()), v
    assert same(rows[2], heads.mean(0).tolist()), v
    assert same(drawn(root, "heads"), [heads.tolist()]), v
    scale = root.locator('[data-view="scale"]').inner_text()
    assert f"sqrt(d_k)\t22.63\t{math.sqrt(512 // v['h']):.2f}" in scale
    assert f"{v['h']} head" in readout(root)
    return v


def move(page, root):
    times = []
    for knob, key in (("h", "ArrowRight"), ("query", "ArrowDown"), ("h", "Home"),
                      ("query", "ArrowUp"), ("h", "End"), ("h", "ArrowLeft")):
        before = drawn(root, "heads")
        times.append(press(page, root, knob, key))
        assert drawn(root, "heads") != before, f"{knob} {key}: the picture did not change"
        check(root)
    return times


def test_one_vs_many_draws_what_pytorch_computes(page, figure):
    root = show(page, figure)
    assert check(root)["h"] == 8
    times = move(page, root)
    assert values(root)["h"] == 8  # End (16), then ArrowLeft
    print(f"\nchapter 06 one head vs h heads, key press to picture (no build): "
          f"{timing(times)}; redraw {timing(DRAW_MS[-6:])}")
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_what_pytorch_computes(phone_page, figure):
    """A tap at the h slider's right end (on a 390 x 844 touch phone): 16 heads, still PyTorch's
    weights (a tap on every control, and the width, for every figure: test_every_figure.py)."""
    root = show(phone_page, figure)
    slider = root.locator('[data-knob="h"]')
    box = slider.bounding_box()
    tap(phone_page, root, slider, position={"x": box["width"] - 4, "y": box["height"] / 2})
    assert check(root)["h"] == 16


def test_the_figure_is_live_in_the_built_book(page, book_url):
    """On the page the figure holds the chapter's own layer and sentence: compare with the
    identity instead (product row = one head; the mean row = the heads' mean)."""
    page.goto(f"{book_url}/{page_with('one-vs-many')}", wait_until="load")
    root = root_of(page, "one-vs-many")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    times = []
    for knob, key in (("h", "ArrowRight"), ("query", "ArrowDown"), ("h", "Home")):
        times.append(press(page, root, knob, key))
        one, product, mean = drawn(root, "one")[0]
        heads = torch.tensor(drawn(root, "heads")[0])
        assert same(one, product) and same(mean, heads.mean(0).tolist())
        assert len(heads) == values(root)["h"]
    print(f"\nchapter 06 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-3:])}")
    assert not page.errors, page.errors

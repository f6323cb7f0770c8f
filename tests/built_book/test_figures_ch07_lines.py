"""Chapter 07's explorer, its second view: one head as lines, in Chromium with no build.

The "view" control switches the explorer from every head's heatmap to one head's lines (same
weights, from the same in-page compute); the lines view's head picker picks the head, and a
focused query token shows exactly that query's lines, whose weights equal ``explore_once``'s
row for that head (to 1e-3); switching back shows the heatmaps again. axe-core finds nothing in
the lines view in light or dark mode. On the built book: the same on chapter 07's page, offline.
"""

import json
from urllib.parse import urlparse

import pytest
import torch
from live_figures import axe_violations, press, root_of, show, values, wait_drawn

from mha import explore
from mha.live import explorer as live_explorer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def figure():
    return live_explorer.explorer_figure({})


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    context.close()


def expected(s):
    knobs = {"source": s["source"], "seed": s["seed"], "temperature": s["temperature"]}
    if s["source"] == "random layer":
        knobs.update(num_heads=s["num_heads"], num_kv_heads=s["num_kv_heads"],
                     seq_len=s["seq_len"], mask_kind=s["mask_kind"], sentence=s["sentence"])
    result = explore.explore_once(**knobs)
    assert result.ok, result.message
    return result.weights  # (H, Lq, Lk)


def lines_drawn(root):
    return json.loads(root.locator('[data-view="lines"]').get_attribute("data-values"))


def to_lines(page, root):
    press(page, root, "view", "ArrowDown")
    assert values(root)["view"] == "lines"
    assert root.locator('canvas[data-view="heads"]').is_hidden()


def test_the_lines_view_shows_a_focused_querys_weights(page, figure):
    root = show(page, figure)
    to_lines(page, root)
    s = values(root)
    w = expected(s)
    got = lines_drawn(root)
    assert got["focus"] is None and got["head"] == 0
    assert len(got["lines"]) == w.shape[1] * w.shape[2]
    torch.testing.assert_close(torch.tensor([x for _, _, x in got["lines"]]),
                               w[0].flatten(), atol=1e-3, rtol=0)
    picker = root.locator('[data-view="lines"] select')
    picker.select_option("2")
    for i in (0, 3, w.shape[1] - 1):
        root.locator('[data-view="lines"] button[aria-label^="query "]').nth(i).focus()
        got = lines_drawn(root)
        assert got["head"] == 2 and got["focus"]["side"] == "query" and \
            got["focus"]["index"] == i
        assert [(q, k) for q, k, _ in got["lines"]] == [(i, k) for k in range(w.shape[2])]
        torch.testing.assert_close(torch.tensor([x for _, _, x in got["lines"]]), w[2, i],
                                   atol=1e-3, rtol=0)
    # another setting recomputes the lines; the head picked stays
    press(page, root, "mask", "ArrowDown")  # causal
    s = values(root)
    w = expected(s)
    root.locator('[data-view="lines"] button[aria-label^="query "]').nth(1).focus()
    got = lines_drawn(root)
    assert s["mask_kind"] == "causal" and got["head"] == 2
    torch.testing.assert_close(torch.tensor([x for _, _, x in got["lines"]]), w[2, 1],
                               atol=1e-3, rtol=0)
    press(page, root, "view", "ArrowUp")
    assert root.locator('[data-view="lines"]').is_hidden()
    assert root.locator('canvas[data-view="heads"]').is_visible()
    assert not page.errors, page.errors


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_the_lines_view_passes_axe(page, figure, dark):
    root = show(page, figure, dark=dark)
    to_lines(page, root)
    root.locator('[data-view="lines"] button[aria-label^="key "]').nth(2).click()
    problems = axe_violations(page, '.mha-live [data-view="lines"]')
    assert not problems, f"{'dark' if dark else 'light'}: {problems}"


def test_chapter_07_lines_view_in_the_built_book(page, book_url):
    origin = urlparse(book_url).netloc
    outside = []

    def route(r):
        if urlparse(r.request.url).netloc == origin or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(f"{book_url}/chapters/07_attention_explorer.html", wait_until="load")
    root = root_of(page, "explorer")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    to_lines(page, root)
    w = expected(values(root))
    root.locator('[data-view="lines"] button[aria-label^="query "]').nth(2).focus()
    got = lines_drawn(root)
    assert got["focus"]["index"] == 2 and got["head"] == 0
    torch.testing.assert_close(torch.tensor([x for _, _, x in got["lines"]]), w[0, 2],
                               atol=1e-3, rtol=0)
    assert not page.errors, page.errors
    assert not outside, outside

"""The explorer on the live-figure front end (mha/static/src/, mha_book/static/src/) in Chromium, with no kernel and
no network.

* Without a build: the HTML the package writes for the book, loaded into a blank page; the
  numbers the canvas drew (its ``data-values``) equal ``explore_once`` for the same knobs.
* On the built book: chapter 07's explorer redraws when each of num_heads, seq_len, temperature,
  mask, window, sink, seed, sentence and source is changed from the keyboard (the time from key
  press to new picture is printed: median and worst), the drawn values equal ``explore_once``
  for several settings, and chapter 01's temperature slider redraws softmax(scores / T); no
  console error, no request outside localhost.
"""

import json
import statistics
from urllib.parse import urlparse

import pytest
import torch

from mha_book import widgets
from mha_book.figures import explorer as live_explorer
from mha_book.figures import temperature

pytestmark = pytest.mark.browser


@pytest.fixture
def page(page):
    """conftest's page, with ``page.outside`` for the requests that leave the server."""
    page.outside = []
    return page


def block_outside(page, origin):
    def route(r):
        if urlparse(r.request.url).netloc == origin or r.request.url.startswith("data:"):
            r.continue_()
        else:
            page.outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)


def drawn(page, root):
    return json.loads(root.locator("canvas").first.get_attribute("data-values"))


def state(root):
    """The knobs the explorer says it drew (None for chapter 01's bars: one knob)."""
    text = root.get_attribute("data-state")
    return None if text is None else json.loads(text)


def expected(s):
    """explore_once for the knobs the page says it drew."""
    knobs = {"source": s["source"], "seed": s["seed"], "temperature": s["temperature"],
             "window": s.get("window"), "sink": s.get("sink")}
    if s["source"] == "random layer":
        knobs.update(num_heads=s["num_heads"], num_kv_heads=s["num_kv_heads"],
                     seq_len=s["seq_len"], mask_kind=s["mask_kind"], sentence=s["sentence"])
    result = widgets.explore_once(**knobs)
    assert result.ok, result.message
    return result.weights


def assert_matches(page, root):
    s = state(root)
    w = torch.tensor(drawn(page, root))
    torch.testing.assert_close(w, expected(s), atol=1e-3, rtol=0)
    return s


def press(page, root, knob, key):
    """Press ``key`` on control ``knob``; returns (ms from key press to new picture, state)."""
    before = root.get_attribute("data-draws")
    page.evaluate("() => { window.__keyAt = null; document.addEventListener('keydown', "
                  "() => { window.__keyAt = performance.now(); }, {capture: true, once: true}); }")
    root.locator(f'[data-knob="{knob}"]').focus()
    page.keyboard.press(key)
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)
    ms, draw = page.evaluate("el => [Number(el.dataset.drawnAt) - window.__keyAt,"
                             " Number(el.dataset.drawMs)]", root.element_handle())
    DRAW_MS.append(draw)  # the redraw itself (in-page compute and drawing), as the front end timed it
    return ms, state(root)


DRAW_MS = []


# ----------------------------------------------------------------------------- without a build

def test_front_end_draws_what_python_computes(page):
    """The package's static explorer in a blank page: drawn values equal explore_once."""
    fig = live_explorer.explorer_figure({**widgets.DEFAULTS, "temperature": 0.5})
    page.set_content(fig.page())
    root = page.locator('.mha-live[data-figure="explorer"]')
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle())
    assert assert_matches(page, root)["temperature"] == pytest.approx(0.5)
    page.select_option('[data-knob="num_heads"]', "16")
    page.select_option('[data-knob="num_kv_heads"]', "4")
    page.select_option('[data-knob="mask"]', "padding")
    page.select_option('[data-knob="sentence"]', "cat on the mat")
    page.evaluate("() => { const s = document.querySelector('[data-knob=seq_len]');"
                  " s.value = 18; s.dispatchEvent(new Event('input')); }")  # index 18: 20 tokens
    s = assert_matches(page, root)
    assert (s["num_heads"], s["num_kv_heads"], s["seq_len"]) == (16, 4, 20)
    page.select_option('[data-knob="num_heads"]', "2")  # kv 4 is no longer valid: it follows
    s = assert_matches(page, root)
    assert s["num_heads"] == 2 and s["num_kv_heads"] in (1, 2)
    assert page.locator('[data-knob="num_kv_heads"] option').count() == 2
    page.select_option('[data-knob="source"]', "letters model: layer 0")
    s = assert_matches(page, root)
    assert page.locator('[data-knob="num_heads"]').is_disabled()
    assert "previous-token head" in root.locator("canvas").first.get_attribute("aria-label")
    assert s["temperature"] == 1.0  # a trained source from the random layer: T = 1, as trained
    assert root.locator('[data-knob="temperature"]').get_attribute("aria-valuetext") == "1.00"
    # the sizes a trained layer does not use show no stale value (a learner read "seq_len 20"
    # beside "A trained layer: 4 heads" as a contradiction)
    for knob in ("seq_len", "d_model"):
        slider = root.locator(f'[data-knob="{knob}"]')
        assert slider.get_attribute("aria-valuetext") == "not used by this source"
        assert slider.locator("xpath=..").locator("output").text_content() == "\u2014"
    page.select_option('[data-knob="source"]', "random layer")
    assert_matches(page, root)
    assert root.locator('[data-knob="seq_len"]').get_attribute("aria-valuetext") == "20"
    assert not page.errors, page.errors


def test_window_and_sink_set_through_the_pages_controls(page):
    """Chapter 14's knobs in the page: the window and the sink chosen in their selects give
    the weights explore_once gives (causal band, rows summing to less than 1), the readout says
    what went to the sink, and a cross-attention source greys the window out (a dash), which
    comes back on a self-attention source."""
    fig = live_explorer.explorer_figure({**widgets.DEFAULTS})
    page.set_content(fig.page())
    root = page.locator('.mha-live[data-figure="explorer"]')
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle())
    window = root.locator('[data-knob="window"]')

    def shown():
        return window.evaluate("s => s.options[s.selectedIndex].text")

    s = assert_matches(page, root)
    assert (s["window"], s["sink"], shown()) == (None, None, "off")
    page.select_option('[data-knob="window"]', label="4 positions")
    page.select_option('[data-knob="sink"]', label="s = 2")
    s = assert_matches(page, root)
    assert (s["window"], s["sink"]) == (4, 2)
    w = torch.tensor(drawn(page, root))  # (H, L, L)
    i, j = torch.arange(12)[:, None], torch.arange(12)[None, :]
    assert w[:, (j > i) | (j <= i - 4)].abs().max() == 0 and w.sum(-1).max() < 1
    kept = float(w.sum(-1).mean())
    readout = root.locator(".mha-readout").text_content()
    assert "causal window 4" in readout and f"rows sum to {kept:.2f} on average" in readout
    page.select_option('[data-knob="num_heads"]', "2")
    page.select_option('[data-knob="mask"]', "padding")
    page.select_option('[data-knob="sink"]', label="s = -2")
    assert assert_matches(page, root)["sink"] == -2
    page.select_option('[data-knob="source"]', "translator cross-attention: layer 1")
    s = assert_matches(page, root)  # the sink still applies, the window does not
    assert s["window"] is None and window.is_disabled() and shown() == "\u2014"
    page.select_option('[data-knob="source"]', "letters model: layer 0")
    s = assert_matches(page, root)  # a layer trained without a mask, made causal
    assert s["window"] == 4 and not window.is_disabled() and shown() == "4 positions"
    assert torch.tensor(drawn(page, root)).triu(1).abs().max() == 0
    page.select_option('[data-knob="window"]', label="off")
    page.select_option('[data-knob="sink"]', label="off")
    s = assert_matches(page, root)
    assert (s["window"], s["sink"]) == (None, None) and "sink" not in root.locator(
        ".mha-readout").text_content()
    assert not page.errors, page.errors


def test_live_view_draws_the_payload(page):
    r = widgets.explore_once(num_heads=4, num_kv_heads=2, seq_len=7)
    page.set_content(live_explorer.view_figure(r).page())
    canvas = page.locator(".mha-live canvas")
    page.wait_for_function("el => el.dataset.heads === '4'", arg=canvas.element_handle())
    torch.testing.assert_close(torch.tensor(json.loads(canvas.get_attribute("data-values"))),
                               r.weights, atol=1e-5, rtol=0)
    assert not page.errors, page.errors


# ----------------------------------------------------------------------------- the built book

def open_book_explorer(page, book_url):
    """Chapter 07's page of the built book, requests outside it blocked; the explorer's root,
    drawn and scrolled into view."""
    block_outside(page, urlparse(book_url).netloc)
    page.goto(f"{book_url}/chapters/07_attention_explorer.html", wait_until="load")
    root = page.locator('.mha-live[data-figure="explorer"]').first
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle(),
                           timeout=20_000)
    root.scroll_into_view_if_needed()
    return root


def test_chapter_07_explorer_is_live_in_the_built_book(page, book_url):
    root = open_book_explorer(page, book_url)
    first = assert_matches(page, root)
    assert first["temperature"] == pytest.approx(0.5) and first["num_heads"] == 8
    # no widget of the explorer is left as a static picture: the page shows the live HTML
    assert page.locator('.mha-live[data-figure="explorer"]').count() == 1
    moves = [("num_heads", "ArrowUp"), ("seq_len", "ArrowLeft"), ("temperature", "ArrowRight"),
             ("mask", "ArrowDown"), ("window", "ArrowDown"), ("sink", "ArrowDown"),
             ("seed", "ArrowRight"), ("sentence", "ArrowDown"), ("num_kv_heads", "ArrowUp"),
             ("source", "ArrowDown")]
    times, checked = [], 1
    for knob, key in moves:
        before = drawn(page, root)
        ms, s = press(page, root, knob, key)
        times.append(ms)
        assert drawn(page, root) != before, f"{knob}: the picture did not change"
        if knob in ("num_heads", "mask", "window", "sink", "sentence", "num_kv_heads",
                    "source"):
            assert_matches(page, root)
            checked += 1
    assert s["source"] != "random layer"
    assert (s["window"], s["sink"]) == (2, -2)  # off -> the first choice: they still apply
    assert checked >= 3
    ms, s = press(page, root, "seed", "ArrowRight")  # a trained layer: another input sample
    times.append(ms)
    assert_matches(page, root)
    draws = DRAW_MS[-len(times):]
    print(f"\nchapter 07, key press to new picture over {len(times)} changes: median "
          f"{statistics.median(times):.1f} ms, worst {max(times):.1f} ms; the redraw itself: "
          f"median {statistics.median(draws):.1f} ms, worst {max(draws):.1f} ms")
    assert not page.errors, page.errors
    assert not page.outside, page.outside


def test_chapter_01_slider_is_live_in_the_built_book(page, book_url):
    block_outside(page, urlparse(book_url).netloc)
    page.goto(f"{book_url}/chapters/01_soft_lookup.html", wait_until="load")
    root = page.locator('.mha-live[data-figure="temperature-bars"]')
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle(),
                           timeout=20_000)
    spec = json.loads(root.locator("script.mha-spec").text_content())
    first = spec["pool"][spec["states"][str(spec["controls"][0]["value"])]["views"]["weights"]]
    assert first["labels"][3] == "Michael"
    grid = spec["controls"][0]["values"]
    at_1 = spec["pool"][spec["states"][str(grid.index(1.0))]["views"]["weights"]]
    # the scores, up to a constant (softmax ignores one): log of the weights at T = 1; chapter
    # 01's two best keys score 2.0 (Michael) and 1.6
    scores = torch.tensor(at_1["values"], dtype=torch.float64).log()
    best = scores.topk(2)
    assert best.indices[0] == 3 and float(best.values[0] - best.values[1]) == pytest.approx(
        0.4, abs=1e-3)
    times = []
    for key in ("ArrowRight", "ArrowRight", "ArrowLeft", "Home"):
        before = drawn(page, root)
        ms, _ = press(page, root, "temperature", key)
        times.append(ms)
        assert drawn(page, root) != before
        T = grid[int(root.locator('[data-knob="temperature"]').input_value())]
        torch.testing.assert_close(torch.tensor(drawn(page, root), dtype=torch.float64),
                                   torch.softmax(scores / T, -1), atol=1e-3, rtol=0)
    assert T == pytest.approx(10 ** -2, rel=0.2)  # Home: the coldest, nearly one-hot
    print(f"\nchapter 01, key press to new picture: median {statistics.median(times):.1f} ms, "
          f"worst {max(times):.1f} ms; the redraw itself: median "
          f"{statistics.median(DRAW_MS[-4:]):.1f} ms")
    assert not page.errors, page.errors
    assert not page.outside, page.outside


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_explorer_and_slider_pass_axe(page, dark):
    """axe-core finds no violation of any impact in the explorer (page and kernel views) and
    chapter 01's slider, in light and dark mode."""
    from live_figures import axe_violations, show


    r = widgets.explore_once(source="letters model: layer 1")  # a trained source: its table too
    for fig in (live_explorer.explorer_figure({**widgets.DEFAULTS, "temperature": 0.5}),
                live_explorer.view_figure(r),
                temperature.temperature_bars([2.0, 1.6, 0.0], ["Michael", "Bay", "as"])):
        show(page, fig, dark=dark)
        problems = axe_violations(page)
        assert not problems, f"{fig.name}: {problems}"


def test_explorer_on_a_phone(browser):
    """390 x 844 with touch: tapping a select and choosing redraws; nothing is wider than the
    screen."""
    from live_figures import show, show_page

    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True,
                                  is_mobile=True, device_scale_factor=2)
    page = context.new_page()
    try:
        root = show(page, live_explorer.explorer_figure({**widgets.DEFAULTS}))
        # twelve controls: on a phone a tab shows each group of them
        assert root.locator('[data-knob="num_heads"]').is_hidden()
        show_page(page, root, "num_heads", touch=True)
        bar = root.locator(".mha-bar").evaluate("b => [b.scrollHeight, b.clientHeight]")
        assert bar[0] <= bar[1] + 1, f"the bar scrolls inside itself: {bar}"
        before = root.get_attribute("data-draws")
        root.locator('[data-knob="num_heads"]').tap()
        root.locator('[data-knob="num_heads"]').select_option(index=1)  # 2 heads
        page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                               arg=[root.element_handle(), before], timeout=5_000)
        assert state(root)["num_heads"] == 2
        assert_matches(page, root)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()


def test_ungrouped_kv_heads_follow_num_heads_in_the_page(page):
    """As in the Jupyter controls (mha_book.widgets): without grouping, num_kv_heads moves with
    num_heads, so 8 -> 4 -> 8 heads ends at 8 key/value heads and 16,384 parameters again."""
    fig = live_explorer.explorer_figure({**widgets.DEFAULTS})
    page.set_content(fig.page())
    root = page.locator('.mha-live[data-figure="explorer"]')
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle())
    for heads in ("4", "8"):
        page.select_option('[data-knob="num_heads"]', heads)
        s = assert_matches(page, root)
        assert s["num_heads"] == s["num_kv_heads"] == int(heads), s
    assert "parameters 16,384" in root.locator('[data-view="counts"]').text_content()
    page.select_option('[data-knob="num_kv_heads"]', "2")  # grouped: it stays where it is
    page.select_option('[data-knob="num_heads"]', "4")
    assert assert_matches(page, root)["num_kv_heads"] == 2
    assert not page.errors, page.errors


def test_a_trained_source_shows_no_stale_select_and_gives_the_readers_values_back(page):
    """With "translator decoder: layer 0" the greyed selects still said num_heads 8,
    num_kv_heads 8 and mask none, under "A trained layer: 4 heads, d_head = 8, causal": every
    control the trained layer does not use shows a dash (selects too), the page still computes
    with the reader's own values, and back on the random layer the reader's num_heads, mask
    and temperature are there again."""
    fig = live_explorer.explorer_figure({**widgets.DEFAULTS, "temperature": 0.5})
    page.set_content(fig.page())
    root = page.locator('.mha-live[data-figure="explorer"]')
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle())
    page.select_option('[data-knob="num_heads"]', "4")
    page.select_option('[data-knob="mask"]', "causal")
    mine = assert_matches(page, root)
    assert (mine["num_heads"], mine["mask_kind"], mine["temperature"]) == (4, "causal", 0.5)

    def shown(knob):  # the text a select shows
        return root.locator(f'[data-knob="{knob}"]').evaluate(
            "s => s.options[s.selectedIndex].text")

    for source in ("translator decoder: layer 0", "letters model: layer 1"):
        page.select_option('[data-knob="source"]', source)
        assert_matches(page, root)
        assert "A trained layer" in root.locator('[data-view="counts"]').text_content()
        for knob in ("num_heads", "num_kv_heads", "mask", "sentence"):
            select = root.locator(f'[data-knob="{knob}"]')
            assert select.is_disabled() and shown(knob) == "\u2014", (source, knob)
            assert select.evaluate("s => s.options[s.selectedIndex].getAttribute("
                                   "'aria-label')") == "not used by this source"
    page.select_option('[data-knob="source"]', "random layer")
    back = assert_matches(page, root)
    assert (back["num_heads"], back["mask_kind"], back["temperature"]) == (4, "causal", 0.5)
    assert (shown("num_heads"), shown("mask")) == ("4", "causal")
    assert not root.locator('[data-knob="num_heads"] option[data-unused]').count()
    assert not page.errors, page.errors


def test_masked_cells_are_blank_and_many_heads_fit_the_screen(browser):
    """A cell the mask blocks is drawn blank and struck through, not in the colour scale's
    dark end, which a weight near 0 also takes (a reader could not tell them apart); and 8
    heads of 12 tokens on a 1280 x 800 screen go 3 a row in smaller cells (12 px: every token
    still labelled), about half as far down the page as 2 a row (1,347 px), so that below the
    controls' bar 6 of them show at once."""
    from live_figures import pixel

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        page = context.new_page()
        fig = live_explorer.explorer_figure({**widgets.DEFAULTS, "mask_kind": "causal"})
        page.set_content(fig.page())
        page.evaluate("() => document.querySelector('main').style.width = '688px'")
        root = page.locator('.mha-live[data-figure="explorer"]')
        page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle())
        root.evaluate("r => r.mhaRedraw()")
        geom = root.locator('canvas[data-view="heads"]').evaluate(
            "c => [c.mhaGeom.cell, c.mhaGeom.panels, c.dataset.columns, c.dataset.labelStride,"
            " c.getBoundingClientRect().height]")
        cell, panels, columns, stride, height = geom
        assert (int(columns), int(stride)) == (3, 1) and cell >= 12, geom
        # about half as far down as 2 a row (1,347 px); the text's metrics move it a few px
        # (703 px with Debian's Chromium 156.0.8078.114 and DejaVu fonts)
        assert height <= 720, geom
        bar = root.locator(".mha-bar").evaluate("b => b.offsetHeight")
        assert panels[5][1] + cell * 12 <= 800 - bar, (geom, bar)  # head 5's grid in view
        x0, y0 = panels[0]
        weights = drawn(page, root)
        blank = pixel(root, "heads", x0 + 11.25 * cell, y0 + 0.25 * cell)  # query 0, key 11
        assert blank[3] == 0 and weights[0][0][11] == 0, blank  # nothing painted: the page
        near_zero = min((weights[0][i][j], i, j) for i in range(12) for j in range(i + 1))
        _, i, j = near_zero
        painted = pixel(root, "heads", x0 + (j + 0.25) * cell, y0 + (i + 0.25) * cell)
        assert painted[3] == 255, painted  # an allowed cell, even the smallest weight
        assert "Blank cells: masked." in root.locator(
            'canvas[data-view="heads"]').get_attribute("aria-label")
    finally:
        context.close()

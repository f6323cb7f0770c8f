"""The explorer's second view (mha_book.figures.explorer): one head as lines, in Chromium with
no build.

The "view" control switches the explorer from every head's heatmap to one head's lines (same
weights, from the same in-page compute); the lines view's head picker picks the head, and a
focused query token shows exactly that query's lines, whose weights equal ``explore_once``'s
row for that head (to 1e-3); switching back shows the heatmaps again. axe-core finds nothing in
the lines view, a key pinned, in light or dark mode (the explorer at its start, on a phone and
every other figure: test_every_figure.py). On the built book: the same on the explorer's page,
offline.
"""

import json

import pytest
import torch
from live_figures import (
    axe_violations,
    hover_each_token,
    lines_drawn,
    narrow,
    offline,
    page_with,
    press,
    root_of,
    show,
    values,
    wait_drawn,
)

from mha_book import explore
from mha_book.figures import explorer as live_explorer

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def figure():
    return live_explorer.explorer_figure({})


def expected(s):
    knobs = {"source": s["source"], "seed": s["seed"], "temperature": s["temperature"]}
    if s["source"] == "random layer":
        knobs.update(num_heads=s["num_heads"], num_kv_heads=s["num_kv_heads"],
                     seq_len=s["seq_len"], mask_kind=s["mask_kind"], sentence=s["sentence"])
    result = explore.explore_once(**knobs)
    assert result.ok, result.message
    return result.weights  # (H, Lq, Lk)


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


def test_the_lines_view_in_the_built_book(page, book_url):
    outside = offline(page, book_url)
    page.goto(f"{book_url}/{page_with('explorer')}", wait_until="load")
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


def test_a_focused_token_says_its_weights_and_a_key_without_lines_says_so(page, figure):
    """The lines view states its threshold and what width and opacity mean; a focused query
    lists its largest weights with numbers ("m -> c: 0.97"); a focused key no query puts
    more than the threshold on says so instead of drawing nothing."""
    root = show(page, figure)
    root.locator('[data-knob="source"]').select_option(label="letters model: layer 1")
    assert values(root)["source"] == "letters model: layer 1"
    to_lines(page, root)
    s = values(root)
    r = explore.explore_once(source=s["source"], seed=s["seed"], temperature=s["temperature"])
    rows, cols, w = r.tokens, r.key_tokens or r.tokens, r.weights[1]  # head 1
    root.locator('[data-view="lines"] select').select_option("1")
    box = root.locator('[data-view="lines"]')
    cut = lines_drawn(root)["threshold"]
    assert cut == 0.05
    legend = box.locator(".mha-lines-legend").inner_text()
    assert "width and opacity" in legend and f"lines under {cut} are not drawn" in legend
    empty = [j for j in range(len(cols)) if float(w[:, j].max()) < cut]
    assert empty, "every key of head 1 has a line: pick another example"
    j = empty[0]
    box.locator('button[aria-label^="key "]').nth(j).focus()
    said = box.locator(".mha-lines-readout").inner_text()
    assert said.startswith(f"No query puts more than {cut} on key {cols[j]} ({j})"), said
    assert lines_drawn(root)["shown"] == 0
    i = len(rows) - 1
    box.locator('button[aria-label^="query "]').nth(i).focus()
    got, said = lines_drawn(root), box.locator(".mha-lines-readout").inner_text()
    top = sorted(range(len(cols)), key=lambda k: -float(w[i, k]))[:3]
    top = [k for k in top if float(w[i, k]) >= cut]
    assert [k for _, k, _ in got["largest"]] == top, (got["largest"], top)
    def name(labels, n):  # a label that occurs twice is named with its position
        return f"{labels[n]} ({n})" if list(labels).count(labels[n]) > 1 else labels[n]

    for _, k, x in got["largest"]:
        assert abs(x - float(w[i, k])) < 1e-3
        assert f"{name(rows, i)} \u2192 {name(cols, k)}: " in said, said
    assert got["shown"] == int((w[i] >= cut).sum())
    assert not page.errors, page.errors


def select_fit(page):
    """Per select of the figure: (width, width its longest option needs, right edge)."""
    return page.evaluate("""() => [...document.querySelectorAll('.mha-live select')].map(s => {
      const c = document.createElement('canvas').getContext('2d'), cs = getComputedStyle(s);
      c.font = cs.fontSize + ' ' + cs.fontFamily;
      const need = Math.max(...[...s.options].map(o => c.measureText(o.text).width));
      const r = s.getBoundingClientRect();
      return [s.id || 'head', r.width, need, r.right];
    })""")


def test_heatmaps_form_a_grid_and_selects_show_their_text(browser, figure):
    """In the book's 624-px column the 8 heatmaps sit 2 a row (not a 3,000-px column), on a
    390-px phone too (their rows labelled once, at the left, the colour bar under them: 8
    heads stacked one a row were 2,300 px tall); every select is as wide as its longest option
    plus its arrow, and nothing is wider than the phone."""
    for width, per_row in ((624, 2), (390, 2)):
        context = browser.new_context(viewport={"width": 1280 if width > 390 else 390,
                                                "height": 900}, has_touch=width == 390)
        page = context.new_page()
        try:
            page.set_content(figure.page())
            if width > 390:
                page.evaluate("w => { document.querySelector('main').style.width = w + 'px' }",
                              width)
            root = root_of(page, "explorer")
            wait_drawn(page, root)
            root.evaluate("r => r.mhaRedraw()")
            heads = root.locator('canvas[data-view="heads"]')
            assert int(heads.get_attribute("data-heads")) == 8
            assert int(heads.get_attribute("data-columns")) == per_row, width
            assert heads.bounding_box()["height"] < (1700 if width > 390 else 1200), \
                heads.bounding_box()
            if width == 390:
                assert heads.get_attribute("data-colour-bar") == "below"
                assert heads.evaluate("c => c.mhaGeom.labelFont") >= 9
            ticks = json.loads(heads.get_attribute("data-ticks"))  # the colour bar's
            assert ticks == [0, 0.25, 0.5, 0.75, 1], ticks
            to_lines(page, root)
            fits = []
            for tab in root.locator(".mha-tabs [role=tab]").all() or [None]:
                if tab is not None:  # a phone's bar: every page of controls in turn
                    tab.click()
                fits += [f for f in select_fit(page) if f[1]]  # a page not shown: 0 px
            assert fits
            for name, got, need, right in fits:
                assert got >= need + 16, f"{width} px: {name} is {got:.0f} px, its text {need:.0f}"
                assert right <= width + 8, f"{width} px: {name} ends at {right:.0f}"
            if width == 390:
                assert page.evaluate("document.documentElement.scrollWidth") <= 390
        finally:
            context.close()


def test_the_readout_gives_L(page, figure):
    root = show(page, figure)
    assert ", L = 12, d_model = 64," in root.locator(".mha-readout").inner_text()
    press(page, root, "seq_len", "ArrowRight")
    assert ", L = 13, d_model = 64," in root.locator(".mha-readout").inner_text()


def test_the_kernel_explorers_lines_view_draws_its_weights(page):
    """In Jupyter the explorer's "view" control asks Python for ``view_figure(result,
    "lines")``: the page draws one head's lines from exactly those weights."""
    result = explore.explore_once(num_heads=4, seq_len=6)
    root = show(page, live_explorer.view_figure(result, "lines"))
    drawn = json.loads(root.locator('[data-view="lines"]').get_attribute("data-values"))
    assert drawn["head"] == 0 and drawn["lines"]
    for query, key, weight in drawn["lines"]:
        assert abs(weight - float(result.weights[0, query, key])) < 1e-3
    assert root.locator('[data-view="heads"]').is_hidden()
    assert not page.errors, page.errors


def test_hovering_the_tokens_moves_none_of_them(page, figure):
    """Hovering "river" kept showing "the" (the readout above the columns grew and the
    columns moved 23 px): each token hovered is the token whose lines are shown."""
    root = show(page, figure)
    narrow(page, root)
    to_lines(page, root)
    hover_each_token(page, root, "query")
    assert not page.errors, page.errors


def test_a_repeated_word_is_named_with_its_position(page, figure):
    """"the -> river: 0.10, the -> river: 0.10": which "the"? A label that occurs twice is
    named with its position."""
    root = show(page, figure)
    to_lines(page, root)
    rows = lines_drawn(root)
    labels = [b.get_attribute("aria-label").split(": ", 1)[1] for b in
              root.locator('[data-view="lines"] button[aria-label^="query "]').all()]
    twice = [i for i, s in enumerate(labels) if labels.count(s) > 1]
    assert twice, labels
    river = labels.index("river")
    root.locator('[data-view="lines"] button[aria-label^="key "]').nth(river).focus()
    words = root.locator('[data-view="lines"] canvas').get_attribute("aria-label")
    for i in twice:
        assert f"{labels[i]} ({i}) " in words, (labels[i], i, words)
    said = root.locator(".mha-lines-readout").inner_text()
    for q, _, _ in lines_drawn(root)["largest"]:
        name = f"{labels[q]} ({q})" if q in twice else labels[q]
        assert f"{name} \u2192 river: " in said, said
    assert rows["lines"], rows


def test_a_line_of_weight_0_3_is_not_pale(page, figure):
    """Lines of 0.26-0.33 were thin and pale (opacity = the weight): the faintest line drawn
    has opacity 0.25 + 1.5 x its weight, so a 0.3 line is drawn at 0.7 or more."""
    root = show(page, figure)
    to_lines(page, root)
    every = lines_drawn(root)["lines"]
    i, j, w = min(every, key=lambda line: abs(line[2] - 0.3))
    assert 0.2 < w < 0.4, w
    root.locator('[data-view="lines"] button[aria-label^="query "]').nth(i).focus()
    canvas = root.locator('[data-view="lines"] canvas')
    width = canvas.evaluate("c => parseFloat(c.style.width)")
    x, y = width / 2, ((i + 0.5) * 26 + (j + 0.5) * 26) / 2
    alpha = max(canvas.evaluate(
        "(c, [x, y]) => { const k = c.width / parseFloat(c.style.width);"
        " return c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), 1, 1)"
        ".data[3]; }", [x, y + dy]) for dy in (-1, 0, 1))
    assert alpha >= 0.65 * 255, (w, alpha)

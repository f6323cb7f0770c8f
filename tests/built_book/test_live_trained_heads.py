"""The trained heads' live figure in Chromium (mha_book.figures.trained_heads): a trained head
as lines, query by query.

Without a build: the figure alone in a blank page. Stepping through the queries from the
keyboard shows exactly the current query's lines, whose weights equal the row of the weights
``mha.record_attention`` recorded (to 1e-3), and the bars the same row; focusing a token (Tab,
arrow keys) or a mouse over it shows exactly that token's lines (a query: its row, a key: its
column); a click pins them; the head and sequence pickers change the picture. axe-core finds
nothing in light or dark mode with a key pinned; at 390 x 844 with touch a tap on a token pins
its lines. On the built book: the same on the page that holds it, offline. (axe at the start, a
phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

import json

import pytest
from live_figures import (
    DRAW_MS,
    axe_violations,
    drawn,
    hover_each_token,
    lines_drawn,
    narrow,
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

from mha_book.figures import trained_heads

pytestmark = pytest.mark.browser


def weights_of(v):
    """The package's weights (L, L) of the head and sequence the figure says it drew."""
    _, weights, _ = trained_heads.recorded()
    return weights[v["layer"], v["sequence"], v["head"]]


def check_focus(root, side, index):
    """Exactly the lines of token ``index`` on ``side`` are drawn, with the package's weights."""
    got, w = lines_drawn(root), weights_of(values(root))
    assert got["focus"] is not None and (got["focus"]["side"], got["focus"]["index"]) == \
        (side, index), got["focus"]
    want = w[index] if side == "query" else w[:, index]
    ends = [(q, k) for q, k, _ in got["lines"]]
    if side == "query":
        assert ends == [(index, k) for k in range(w.shape[1])], ends
    else:
        assert ends == [(q, index) for q in range(w.shape[0])], ends
    assert same([x for _, _, x in got["lines"]], want.tolist())


def check_state(root):
    v = values(root)
    got = lines_drawn(root)
    if v["query"] is None:  # every line: the whole matrix
        assert got["focus"] is None and len(got["lines"]) == 16 * 16
        assert root.locator('canvas[data-view="row"]').is_hidden()  # no query: no bars
        assert same([x for _, _, x in got["lines"]], weights_of(v).flatten().tolist())
    else:
        check_focus(root, "query", v["query"])
        assert same(drawn(root, "row"), weights_of(v)[v["query"]].tolist())
    return v


def token(root, side, index):
    return root.locator(f'[data-view="lines"] button[aria-label^="{side} {index}:"]')


def focus_draws(root):
    return root.locator('[data-view="lines"]').get_attribute("data-focus-draws")


def test_stepping_through_the_queries_shows_each_querys_lines(page):
    root = show(page, trained_heads.trained_head_lines())
    assert check_state(root)["query"] is None
    times = []
    # the step control's positions 0..15 are the queries 0..15, the last one "all"
    for key, want in (("Home", 0), ("ArrowRight", 1), ("End", None), ("ArrowLeft", 15),
                      ("Home", 0)):
        before = lines_drawn(root)
        times.append(press(page, root, "query", key))
        assert lines_drawn(root) != before, key
        assert check_state(root)["query"] == want, key
        assert root.locator('[data-knob="query"]').get_attribute("aria-valuetext") == \
            ("all" if want is None else str(want))
    for knob, key in (("head", "ArrowDown"), ("sequence", "ArrowDown"), ("head", "End")):
        before = lines_drawn(root)
        times.append(press(page, root, knob, key))
        assert lines_drawn(root) != before, f"{knob} {key}: the lines did not change"
        check_state(root)
    assert "query 0 " in readout(root)
    print(f"\nchapter 08 lines, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors


def focus_times(page, root):
    """Focus tokens from the keyboard; each shows exactly its lines. Returns the times (ms)
    from the key press to the view's redraw."""
    times = []

    def key(name, side, index):
        n = focus_draws(root)
        page.evaluate("() => { window.__keyAt = null; document.addEventListener('keydown', "
                      "() => { window.__keyAt = performance.now(); }, "
                      "{capture: true, once: true}); }")
        page.keyboard.press(name)
        page.wait_for_function("([el, n]) => el.dataset.focusDraws !== n",
                               arg=[root.locator('[data-view="lines"]').element_handle(), n])
        times.append(page.evaluate("el => Number(el.dataset.drawnAt) - window.__keyAt",
                                   root.locator('[data-view="lines"]').element_handle()))
        check_focus(root, side, index)

    token(root, "query", 0).focus()
    check_focus(root, "query", 0)
    for name, side, index in (("ArrowDown", "query", 1), ("ArrowDown", "query", 2),
                              ("ArrowRight", "key", 2), ("ArrowUp", "key", 1),
                              ("End", "key", 15), ("ArrowLeft", "query", 15),
                              ("Home", "query", 0)):
        key(name, side, index)
    return times


def test_a_focused_token_shows_exactly_its_lines(page):
    root = show(page, trained_heads.trained_head_lines())
    # Tab from the last control reaches the query column (one tab stop per column)
    root.locator('[data-knob="query"]').focus()
    for _ in range(4):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.getAttribute('aria-label') || ''") \
                .startswith("query "):
            break
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith("query ")
    times = focus_times(page, root)
    # Enter pins query 0; leaving the view keeps its lines; Escape unpins
    page.keyboard.press("Enter")
    assert token(root, "query", 0).get_attribute("aria-pressed") == "true"
    root.locator('[data-knob="head"]').focus()
    check_focus(root, "query", 0)
    token(root, "key", 7).click()
    check_focus(root, "key", 7)
    assert token(root, "query", 0).get_attribute("aria-pressed") == "false"
    page.keyboard.press("Escape")
    root.locator('[data-knob="head"]').focus()
    assert lines_drawn(root)["focus"] is None  # back to every line (query step: all)
    # with a query stepped to, focusing a key still shows only that key's lines
    press(page, root, "query", "Home")
    token(root, "key", 3).focus()
    check_focus(root, "key", 3)
    root.locator('[data-knob="head"]').focus()
    check_focus(root, "query", 0)
    # a mouse over a token shows its lines while it stays there
    token(root, "key", 9).hover()
    check_focus(root, "key", 9)
    page.mouse.move(1, 1)
    check_focus(root, "query", 0)
    ms = [float(root.locator('[data-view="lines"]').get_attribute("data-draw-ms"))]
    print(f"\nchapter 08 lines, token focus: key press to picture {timing(times)}; "
          f"view redraw {ms[0]:.1f} ms")
    assert not page.errors, page.errors


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_a_pinned_key_passes_axe(page, dark):
    root = show(page, trained_heads.trained_head_lines(query=3), dark=dark)
    token(root, "key", 2).click()
    problems = axe_violations(page)
    assert not problems, f"{'dark' if dark else 'light'}: {problems}"


def test_a_tap_on_a_phone_pins_a_tokens_lines(phone_page):
    """On a 390 x 844 touch phone a tap on a token pins its lines, a second tap unpins, a tap on
    the "previous" button steps to query 15 (the width, and a tap on every control, for every
    figure: test_every_figure.py)."""
    root = show(phone_page, trained_heads.trained_head_lines())
    token(root, "query", 5).tap()
    check_focus(root, "query", 5)
    assert token(root, "query", 5).get_attribute("aria-pressed") == "true"
    token(root, "query", 5).tap()  # a second tap unpins
    assert lines_drawn(root)["focus"] is None
    # the "previous" button: from "all" (the last position) to query 15
    tap(phone_page, root, root.locator('[data-knob="query"]').locator("xpath=..")
        .locator("button").first)
    assert check_state(root)["query"] == 15


def test_the_figure_lives_in_the_built_book(page, book_url):
    outside = offline(page, book_url)
    page.goto(f"{book_url}/{page_with('trained-head-lines')}", wait_until="load")
    root = root_of(page, "trained-head-lines")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    check_state(root)
    times = [press(page, root, "query", key) for key in ("Home", *["ArrowRight"] * 3)]
    check_state(root)
    token(root, "key", 4).focus()
    check_focus(root, "key", 4)
    print(f"\nchapter 08 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-4:])}")
    assert not page.errors, page.errors
    assert not outside, outside


def said(root):
    return root.locator('[data-view="lines"] .mha-lines-readout').inner_text()


def test_a_focused_token_overrides_the_step_and_the_view_says_so(page):
    """A reader put the step on query 5, then tabbed to token 9 b: the lines showed query 9
    while the readout and the bars spoke of query 5. The lines view says whose lines it draws:
    the focused token's, not the step's query, which comes back when the focus leaves."""
    root = show(page, trained_heads.trained_head_lines(query=5))
    labels = json.loads(root.locator('[data-view="lines"]').get_attribute("data-values"))
    assert labels["focus"]["index"] == 5
    five = labels["focus"]["label"]
    assert f"the step's query {five}" in said(root), said(root)
    token(root, "query", 9).focus()
    check_focus(root, "query", 9)
    nine = lines_drawn(root)["focus"]["label"]
    text = said(root)
    assert text.startswith(f"Query {nine} (9), largest weights"), text
    assert f"lines of the query {nine} you focus or point at, not of the step's query {five}" \
        in text, text
    assert "come back when the focus or pointer leaves" in text, text
    root.locator('[data-knob="head"]').focus()
    check_focus(root, "query", 5)
    assert f"the step's query {five}" in said(root), said(root)
    assert not page.errors, page.errors


def test_hovering_the_tokens_moves_none_of_them(page):
    """The readout above the token columns grew from one line to two for some tokens, the
    columns dropped 23 px and the pointer landed on another token: nothing above the columns
    changes with the pointer, so each token hovered is the token shown."""
    root = show(page, trained_heads.trained_head_lines(query=5))
    narrow(page, root)
    for side in ("query", "key"):
        hover_each_token(page, root, side)
    assert not page.errors, page.errors

"""The Shakespeare heads' live figure in Chromium (mha_book.figures.shakespeare_heads): the
Shakespeare model runs in the page.

Without a build: the figure alone in a blank page. For every passage and for texts typed from
the keyboard (at the end, where the page recomputes only the new position, and at the start,
where it recomputes all), the weights the page computed (``root.mhaText.export()``, what it
drew) equal ``lm.attention`` to 1e-3, and its head scores equal ``mha.head_scores``. Text the
model cannot read says why under the bar (its alert) and keeps the last picture, with no console
error.
With a text of the model's full context_length no text on a canvas overlaps or is cut, at 390 px
and at 1280 px, nothing is wider than a phone, and axe finds nothing on a dark phone page. The
key press to picture times are printed (benchmarks/bench_live_figures.py checks them). On the
built book: the page that holds it, offline, runs the model as the reader types, at 1280 px and
on a 390 px phone, and in the book's dark mode. (axe at the start in light and dark mode, a
phone, touch targets and layout, for every figure: test_every_figure.py.)
"""

import json
import statistics

import pytest
import torch
from live_figures import (
    axe_violations,
    layout_problems,
    offline,
    page_with,
    phone,
    press,
    readout,
    root_of,
    set_control,
    set_dark,
    show,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import shakespeare_heads as T
from mha_book.figures import text_heads

pytestmark = pytest.mark.browser

WORST = []  # the largest difference page - package of every comparison


@pytest.fixture(scope="module")
def fig():
    return text_heads()


def box(root):
    return root.locator('[data-knob="text"]')


def check(root, text):
    """The page's weights and scores for ``text`` equal the package's."""
    got = root.evaluate("r => r.mhaText.export()")
    assert got["text"] == text
    want = T.text_state(text)
    diff = (torch.tensor(got["weights"]) - want["weights"]).abs().max().item()
    WORST.append(diff)
    assert diff <= 1e-3, (text, diff)
    if want["previous"] is not None:
        torch.testing.assert_close(torch.tensor(got["previous"]), want["previous"], atol=1e-3,
                                   rtol=0)
    prefix = torch.tensor([[float("nan") if x is None else x for x in r] for r in got["prefix"]])
    torch.testing.assert_close(prefix, want["prefix"], atol=1e-3, rtol=0, equal_nan=True)
    assert got["matches"] == want["matches"]
    return want


def wait_text(page, root, text):
    page.wait_for_function("([el, t]) => JSON.parse(el.dataset.state).text === t",
                           arg=[root.element_handle(), text], timeout=10_000)


def table_rows(root):
    return root.locator('[data-view="scores"]').evaluate(
        "el => [...el.querySelectorAll('tr')].slice(1).map(r => [...r.children]"
        ".map(c => c.textContent))")


def test_every_passage_and_a_typed_text_equal_the_package(page, fig):
    root = show(page, fig)
    for name, text in T.PASSAGES.items():
        if values(root)["passage"] != name:
            set_control(page, root, "passage", name)
        assert box(root).input_value() == text and values(root)["passage"] == name
        want = check(root, text)
        rows = table_rows(root)
        assert len(rows) == want["weights"].shape[0] * want["weights"].shape[1]
        for row, p, q in zip(rows, want["previous"].flatten(), want["prefix"].flatten()):
            assert abs(float(row[1]) - float(p)) <= 0.006, row
            assert row[2] == "n/a" if torch.isnan(q) else abs(float(row[2]) - float(q)) <= 0.006
    typed = "To be, or not to be: to be"
    box(root).focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(typed)
    wait_text(page, root, typed)
    check(root, typed)
    assert values(root)["passage"] == ""  # your own text
    assert root.locator('[data-knob="passage"] option:checked').text_content() == "your own text"
    assert not page.errors, page.errors
    print(f"\npage - package, every passage and a typed text: max abs {max(WORST):.2e}")


def test_typing_at_the_end_and_at_the_start_of_a_full_context(page, fig):
    """With context_length - 1 characters: a key at the end recomputes one position, one at the
    start all of them; both give the package's numbers."""
    root = show(page, fig)
    C = fig.data["model"]["config"]["context_length"]
    text = ("\n".join(T.PASSAGES.values()) * 3)[:C - 1]
    set_control(page, root, "text", text)
    check(root, text)
    times = {"end": [], "start": []}
    for where, undo in (("end", "Backspace"), ("start", "Delete")):
        for n in range(4):  # each check runs the package on the whole text: 2 a place
            box(root).focus()
            page.keyboard.press("Control+End" if where == "end" else "Control+Home")
            times[where].append(press(page, root, None, "e" if n % 2 == 0 else undo))
            now = text + "e" if where == "end" else "e" + text
            if n % 2 == 0:
                check(root, now)
    check(root, text)
    for where, t in times.items():
        print(f"\ntyping at the {where} of {C - 1} characters, key press to picture: "
              f"{timing(t)}")
    assert statistics.median(times["end"]) < 1000  # speed goals: benchmarks/
    assert not page.errors, page.errors


def test_the_passage_select_and_your_own_text(page, fig):
    root = show(page, fig)
    box(root).focus()
    page.keyboard.press("Control+End")
    page.keyboard.type(" Hey")
    own = T.PASSAGES["Julius Caesar: Antony"] + " Hey"
    wait_text(page, root, own)
    assert values(root)["passage"] == ""
    set_control(page, root, "passage", "Sonnet 18")
    assert box(root).input_value() == T.PASSAGES["Sonnet 18"]
    check(root, T.PASSAGES["Sonnet 18"])
    set_control(page, root, "passage", "your own text")
    assert box(root).input_value() == own
    check(root, own)
    count = root.locator('[data-knob="text"] + output').text_content()
    assert count == f"{len(own)} characters of {fig.data['model']['config']['context_length']}"
    assert not page.errors, page.errors


def alert(root):
    return root.locator(".mha-alert").text_content()


def test_text_the_model_cannot_read_says_why(page, fig):
    root = show(page, fig)
    page.evaluate("() => document.body.insertAdjacentHTML('beforeend',"
                  " '<p style=\"height:3000px\"></p>')")  # the page goes on below it
    good = T.PASSAGES["Julius Caesar: Antony"] + " "  # the last text it can read
    # scrolled to the second layer's heatmaps, as a reader who types there
    root.evaluate("r => scrollTo(0, r.querySelector('[data-view=\"heads\"]')"
                  ".getBoundingClientRect().top + scrollY + 600)")
    box(root).evaluate("b => b.focus({preventScroll: true})")
    page.keyboard.press("Control+End")
    page.keyboard.type(" 5\u00e9")
    wait_text(page, root, good + "5\u00e9")
    where = root.evaluate("""r => [r.querySelector('.mha-bar').getBoundingClientRect().bottom,
      r.querySelector('.mha-alert').getBoundingClientRect().top,
      r.querySelector('.mha-alert').getBoundingClientRect().bottom, innerHeight]""")
    assert where[0] - 1 <= where[1] and where[2] <= where[3], where  # on screen, under the bar
    said = alert(root)  # under the bar, on screen wherever the figure is scrolled
    assert "outside the model's vocabulary: '5', '\u00e9'" in said, said
    assert "letters, space, newline and ! \" ' ( ) , - . : ; ? [ ]" in said
    assert root.locator(".mha-bar + .mha-alert").is_visible()
    assert "still those of the last text" in readout(root)
    heads = root.locator('canvas[data-view="heads"]')
    assert heads.is_visible()
    assert heads.get_attribute("aria-label").startswith(f"Every head on your text ({len(good)} ")
    assert values(root)["error"]
    check(root, good)  # the picture of the last text it could read
    page.keyboard.press("Control+a")
    page.keyboard.press("Backspace")
    wait_text(page, root, "")
    assert "the text is empty" in alert(root)
    set_control(page, root, "text", "a" * 300)  # a program can pass maxlength
    assert "the model reads at most" in alert(root)
    set_control(page, root, "text", "O Romeo, Romeo!")
    check(root, "O Romeo, Romeo!")
    assert values(root)["error"] is None and "Prefix matching" in readout(root)
    assert not alert(root) and not root.locator(".mha-alert").is_visible()
    assert not page.errors, page.errors
    assert not root.locator(".mha-error").text_content()


def test_curly_quotes_are_read_as_straight_ones(page, fig):
    """A phone types ’ for an apostrophe: the box and the model get ', the caret stays."""
    root = show(page, fig)
    box(root).focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("Romeo’s “name”")
    want = "Romeo's \"name\""
    wait_text(page, root, want)
    assert box(root).input_value() == want
    check(root, want)
    assert values(root)["error"] is None
    page.keyboard.press("Control+Home")  # a quote at the start: the caret stays after it
    page.keyboard.type("\u2018")
    wait_text(page, root, "'" + want)
    page.keyboard.type("x")
    wait_text(page, root, "'x" + want)
    assert not page.errors, page.errors


def test_labels_lines_and_the_head_selects(page, fig):
    root = show(page, fig)
    said = root.locator('canvas[data-view="heads"]').get_attribute("aria-label")
    assert "\u2423" in said and "\u21b5" in said  # a space, a newline
    set_control(page, root, "layer", "0")
    set_control(page, root, "head", "1")
    lines = root.locator('[data-view="lines"]')
    assert lines.locator("p").first.text_content().startswith("layer 0, head 1")
    drawn = json.loads(lines.get_attribute("data-values"))["lines"]
    want = T.text_state(T.PASSAGES["Julius Caesar: Antony"])["weights"][0, 1]
    assert max(abs(w - float(want[i, j])) for i, j, w in drawn) <= 1e-3
    labels = lines.locator("button[aria-label^='query']").all_text_contents()
    assert labels == T.token_labels(T.PASSAGES["Julius Caesar: Antony"])
    assert [r[0] for r in table_rows(root)][1] == "layer 0, head 1 (lines)"
    assert not page.errors, page.errors


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_full_context_text_is_readable(browser, page, fig, size):
    context = phone(browser) if size == "phone" else None
    p = context.new_page() if context else page
    try:
        root = show(p, fig)
        C = fig.data["model"]["config"]["context_length"]
        set_control(p, root, "text", ("\n".join(T.PASSAGES.values()) * 3)[:C])
        for view in ("heads",):
            assert not layout_problems(root, view)
        width = 390 if size == "phone" else 1280
        assert p.evaluate("document.documentElement.scrollWidth") <= width
        if size == "phone":
            set_dark(p)
            root.evaluate("r => r.mhaRedraw()")
            assert not axe_violations(p)
    finally:
        if context:
            context.close()


@pytest.mark.parametrize("size", ["desktop", "phone", "dark"])
def test_the_figure_lives_in_the_built_book(browser, page, book_url, size):
    context = phone(browser) if size == "phone" else None
    p = context.new_page() if context else page
    if context:
        p.errors = []
        p.on("pageerror", lambda e: p.errors.append(str(e)))
    try:
        if size == "desktop":
            p.set_viewport_size({"width": 1280, "height": 800})
        outside = offline(p, book_url)
        p.goto(f"{book_url}/{page_with('text-heads')}", wait_until="load")
        if size == "dark":
            set_dark(p)
        root = root_of(p, "text-heads")
        wait_drawn(p, root)
        root.scroll_into_view_if_needed()
        check(root, T.PASSAGES["Julius Caesar: Antony"])
        # the reader's own words: a name said twice, typed from the keyboard
        box(root).focus()
        p.keyboard.press("Control+a")
        typed = "Romeo, Romeo! wherefore art thou Romeo?"
        p.keyboard.type(typed)
        wait_text(p, root, typed)
        check(root, typed)
        assert "Prefix matching" in readout(root)
        assert p.evaluate("document.documentElement.scrollWidth") <= p.viewport_size["width"]
        if size == "dark":
            assert not axe_violations(p)
        assert not p.errors, p.errors
        assert not outside, outside
    finally:
        if context:
            context.close()

"""Control and effect on one screen: every control of every live figure of the built book, at
1280 x 800 (a mouse) and on a 390 x 844 touch phone, in light and dark mode.

A figure's controls sit in a bar that stays in view (``.mha-bar``, CSS position:
sticky, below the book's own sticky header) while the reader scrolls to the view a control
changes. For each control this test first finds the views it changes (it moves the control and
compares every view's drawing), then, for each such view, scrolls the page as a reader would
to that view, and there uses the control as a reader does (a key on a slider or a select, a tap
or click on a box or a step button, a letter typed into a text box; nothing that scrolls the
page). It asserts that the control was visible and not covered when used, that the view
changed, and that the view intersects the part of the screen below the bar; that the bar never
scrolls inside itself (on a phone a bar of many controls is split into pages behind tabs, which
the test taps as a reader would); and that an alert or error the use shows is on screen there
too (an alert sticks under the bar), not under the bar. On a phone each control is also used with the
figure scrolled to its start, as a reader who has just reached it: a view it changed and the
readout (right under the bar) must both be on screen there; and no box inside a figure may
scroll inside itself, but for a long text's token list in a lines view (its own box of
``max_rows`` rows: 190 characters would be 4,900 px of page). Dark mode has
light mode's layout: there each control is used beside the first view it changes.

In dark mode every figure is drawn dark (its own colour scheme and a dark background behind
it), it switches with the theme without a reload, and axe finds nothing in it.
"""

import pytest
from conftest import HTML
from live_figures import SIZES, axe_violations, show_page

pytestmark = pytest.mark.browser

MODES = ("light", "dark")


def live_pages():
    """The built pages holding a live figure with controls (found, not listed)."""
    found = []
    for path in sorted(HTML.rglob("*.html")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if 'class="mha-live"' in text and 'class="mha-bar"' in text:
            found.append(path.relative_to(HTML).as_posix())
    return found


PAGES = live_pages()
# a page's tests in one process (make browser: --dist loadgroup), which learns once which
# views each control changes (the same at every size and in both modes)
PAGE_PARAMS = [pytest.param(p, marks=pytest.mark.xdist_group(p)) for p in PAGES]
CHANGES = {}  # (page, figure, knob) -> the views it changes

# every view's drawing: a canvas's numbers, size and caption; another view's text
SIGNATURES = """root => Object.fromEntries([...root.querySelectorAll('.mha-views [data-view]')]
  .filter(e => !e.hidden).map(e => [e.dataset.view, e.tagName === 'CANVAS'
    ? [e.dataset.values, e.width, e.height, e.dataset.caption, e.getAttribute('aria-label')]
    : e.innerHTML]))"""

# the controls a reader can use: [knob, kind], kind one of range, select, toggle, text, step
CONTROLS = """root => [...root.querySelectorAll('.mha-bar [data-knob]')].map(e =>
  [e.dataset.knob, e.tagName === 'SELECT' ? 'select' : e.tagName === 'TEXTAREA' ? 'text'
    : e.type === 'checkbox' ? 'toggle'
    : e.parentElement.classList.contains('mha-step') ? 'step' : 'range', e.disabled])"""

# where the control (its row) and the view are; what covers the control's centre
WHERE = """([root, knob, view]) => {
  const input = root.querySelector(`[data-knob="${knob}"]`), row = input.closest('.mha-control');
  const bar = root.querySelector('.mha-bar').getBoundingClientRect();
  const v = root.querySelector(`.mha-views [data-view="${view}"]`).getBoundingClientRect();
  const c = input.getBoundingClientRect(), x = c.left + c.width / 2, y = c.top + c.height / 2;
  const top = document.elementFromPoint(x, y);
  return {control: [c.top, c.bottom], view: [v.top, v.bottom], bar: bar.bottom,
          height: innerHeight, hit: !!top && row.contains(top)};
}"""


# the readout, the bar's alert and the error box: their text, where they are
SAYS = """root => Object.fromEntries(['.mha-readout', '.mha-alert', '.mha-error'].map(sel => {
  const e = root.querySelector(sel), r = e.getBoundingClientRect();
  const bar = root.querySelector('.mha-bar').getBoundingClientRect();
  return [sel, {text: e.textContent, top: r.top, bottom: r.bottom, bar: bar.bottom,
                height: innerHeight}]; }))"""


def said_out_of_sight(after, readout=False):
    """A non-empty alert or error (and with ``readout``, the readout) that is not on screen
    below the bar (the readout scrolls with the views, the alert sticks under the bar)."""
    bad = []
    for sel, now in after.items():
        shown = now["text"].strip() and (sel != ".mha-readout" or readout)
        if shown and not (now["top"] >= now["bar"] - 1 and now["bottom"] <= now["height"] + 1):
            bad.append(f"{sel} {now['text'][:60]!r} at {now['top']:.0f}..{now['bottom']:.0f}"
                       f" (bar ends at {now['bar']:.0f}, screen {now['height']})")
    return bad


def draws(root):
    return int(root.get_attribute("data-draws") or 0)


def wait_redrawn(page, root, before):
    page.wait_for_function("([el, n]) => Number(el.dataset.draws) > n",
                           arg=[root.element_handle(), before], timeout=5_000)


def use(page, root, knob, kind, direction, touch):
    """Use control ``knob`` once as a reader does, without scrolling the page; ``direction``
    alternates (+1, -1) so that two uses come back where they started."""
    input_ = root.locator(f'[data-knob="{knob}"]')
    before = draws(root)
    if kind == "step":
        label = "next step" if direction > 0 else "previous step"
        at_end = input_.evaluate("(e, d) => d > 0 ? Number(e.value) >= Number(e.max)"
                                 " : Number(e.value) <= 0", direction)
        if at_end:
            label = "previous step" if direction > 0 else "next step"
        tap(page, root.locator(f'.mha-step:has([data-knob="{knob}"]) '
                               f'button[aria-label$="{label}"]'), touch)
    elif kind == "toggle":
        tap(page, input_, touch)
    else:
        input_.evaluate("e => e.focus({preventScroll: true})")
        if kind == "text":
            page.keyboard.press("End")
            page.keyboard.type("e" if direction > 0 else "")
            if direction < 0:
                page.keyboard.press("Backspace")
        else:
            key = "ArrowRight" if kind == "range" else "ArrowDown"
            back = "ArrowLeft" if kind == "range" else "ArrowUp"
            old = input_.evaluate("e => e.value")
            page.keyboard.press(key if direction > 0 else back)
            if input_.evaluate("e => e.value") == old:  # at an end: the other way
                page.keyboard.press(back if direction > 0 else key)
    wait_redrawn(page, root, before)


def tap(page, locator, touch):
    box = locator.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    if touch:
        page.touchscreen.tap(x, y)
    else:
        page.mouse.click(x, y)


def scroll_to(page, root, view, knob):
    """Scroll as a reader would to ``view``: its top just under the figure's bar, or, for the
    views right under the bar, to the figure's start."""
    root.evaluate(
        """(r, [view, knob]) => {
          const v = r.querySelector(`.mha-views [data-view="${view}"]`);
          const bar = r.querySelector('.mha-bar');
          const top = parseFloat(getComputedStyle(bar).top) || 0;
          const y = v.getBoundingClientRect().top + scrollY - top - bar.offsetHeight - 8;
          const start = r.getBoundingClientRect().top + scrollY - top - 8;
          scrollTo(0, Math.max(0, Math.max(start, y)));
        }""", [view, knob])
    page.wait_for_timeout(30)


def open_page(browser, book_url, page_path, size, mode):
    context = browser.new_context(**SIZES[size])
    context.add_init_script(f"localStorage.setItem('mode', '{mode}');"
                            f"localStorage.setItem('theme', '{mode}');")
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.goto(f"{book_url}/{page_path}")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.mha-live')].every(r => r.dataset.draws)",
        timeout=30_000)
    assert page.evaluate("() => document.documentElement.dataset.theme") == mode
    return context, page


def changes(page, root, knob, kind, touch, key):
    """The views that using ``knob`` changes (found once per page, figure and control)."""
    if key not in CHANGES:
        show_page(page, root, knob, touch)
        root.locator(f'[data-knob="{knob}"]').scroll_into_view_if_needed()  # a tap needs it
        before = root.evaluate(SIGNATURES)
        use(page, root, knob, kind, +1, touch)
        after = root.evaluate(SIGNATURES)
        CHANGES[key] = [v for v in after if before.get(v) != after[v]]
        use(page, root, knob, kind, -1, touch)  # back where it was
    return CHANGES[key]


# the boxes of a figure that scroll inside themselves: a text box's own text aside, and a long
# text's token list in the lines view (data-scrolls: chapter 10's passages of 190 characters
# would make it 4,900 px tall on a phone), a view's and not the bar's
INNER_SCROLL = """root => [...root.querySelectorAll('*')].filter(e => e.tagName !== 'TEXTAREA'
  && !e.dataset.scrolls
  && /auto|scroll/.test(getComputedStyle(e).overflowY) && e.scrollHeight > e.clientHeight + 1)
  .map(e => `${e.tagName.toLowerCase()}.${e.className} ${e.scrollHeight} > ${e.clientHeight}`)"""


def at_home(page, root, knob, kind, changed, direction, touch):
    """Use ``knob`` with the figure scrolled to its start (its bar, the readout under it, the
    first views): a view it changed and the readout are on screen there. Returns failures."""
    show_page(page, root, knob, touch)
    root.evaluate("""r => { const bar = r.querySelector('.mha-bar');
      const top = parseFloat(getComputedStyle(bar).top) || 0;  // the book's sticky header
      // the readout just under the bar, the bar where it sits (a note above it scrolled by)
      scrollTo(0, r.querySelector('.mha-readout').getBoundingClientRect().top + scrollY
        - top - bar.offsetHeight); }""")
    page.wait_for_timeout(30)
    before = root.evaluate(SIGNATURES)
    use(page, root, knob, kind, direction, touch)
    after = root.evaluate(SIGNATURES)
    where = [page.evaluate(WHERE, [root.element_handle(), knob, v]) for v in changed
             if v in after and before.get(v) != after[v]]
    bad = [f"at the figure's start: {b}"
           for b in said_out_of_sight(root.evaluate(SAYS), readout=True)]
    if not any(w["view"][1] > w["bar"] + 4 and w["view"][0] < w["height"] - 4 for w in where):
        bad.append(f"at the figure's start no view it changed is on screen: {where}")
    use(page, root, knob, kind, -direction, touch)  # back where it was
    return bad


def check_figure(page, root, touch, page_path, home=False, every_view=True):
    """Every control of one figure: returns the failures (and the uses made). ``home``: also
    use each control at the figure's start (``at_home``); ``every_view`` False: use each
    control beside the first view it changes only (dark mode: the layout is light mode's)."""
    failures, uses = [], 0
    name = root.get_attribute("data-figure")
    bar = root.locator(".mha-bar").evaluate("b => [b.scrollHeight, b.clientHeight]")
    if bar[0] > bar[1] + 1:
        failures.append(f"{name}: the bar scrolls inside itself: {bar}")
    if touch:
        failures += [f"{name}: a box scrolls inside the figure: {e}"
                     for e in root.evaluate(INNER_SCROLL)]
    for knob, kind, disabled in root.evaluate(CONTROLS):
        if disabled:
            continue
        changed = changes(page, root, knob, kind, touch, (page_path, name, knob))
        if home and changed:
            failures += [f"{name}: {knob} ({kind}): {b}"
                         for b in at_home(page, root, knob, kind, changed, +1, touch)]
            uses += 2
        direction = +1
        for view in changed if every_view else changed[:1]:
            show_page(page, root, knob, touch)
            hidden = root.locator(f'.mha-views [data-view="{view}"]').evaluate("e => e.hidden")
            if hidden:  # a view the control brings in: scroll to where it appears
                use(page, root, knob, kind, direction, touch)
            scroll_to(page, root, view, knob)
            if hidden:
                use(page, root, knob, kind, -direction, touch)
            seen = page.evaluate(WHERE, [root.element_handle(), knob, view])
            was = root.evaluate(SIGNATURES).get(view)
            use(page, root, knob, kind, direction, touch)
            uses += 1
            direction = -direction
            now = root.evaluate(SIGNATURES).get(view)
            after_use = page.evaluate(WHERE, [root.element_handle(), knob, view])
            where = f"{name}: {knob} ({kind}) -> {view}"
            failures += [f"{where}: {bad}" for bad in said_out_of_sight(root.evaluate(SAYS))]
            top, bottom = seen["control"]
            if not (top >= 0 and bottom <= seen["height"] and seen["hit"]):
                failures.append(f"{where}: the control is not in view or covered: {seen}")
            if now == was:
                failures.append(f"{where}: the view did not change where it was looked at")
            vt, vb = after_use["view"]
            if not (vb > after_use["bar"] + 4 and vt < after_use["height"] - 4):
                failures.append(f"{where}: the view is off screen while the control is "
                                f"used: {after_use}")
        if direction < 0 and changed:  # an odd number of uses: one more, back to the start
            use(page, root, knob, kind, -1, touch)
    return failures, uses


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("page_path", PAGE_PARAMS)
def test_every_control_is_used_beside_the_view_it_changes(browser, book_url, page_path, size,
                                                          mode):
    context, page = open_page(browser, book_url, page_path, size, mode)
    try:
        failures, uses = [], 0
        roots = page.locator(".mha-live:has(.mha-bar)")
        assert roots.count(), f"{page_path}: no live figure with controls"
        for k in range(roots.count()):
            # at the figure's start on a phone, in one of the modes (the same layout in both)
            f, n = check_figure(page, roots.nth(k), size == "phone", page_path,
                                home=size == "phone" and mode == "light",
                                every_view=mode == "light")
            failures += f
            uses += n
        assert uses, f"{page_path}: no control changed any view"
        assert not failures, "\n".join(failures)
        assert not page.errors, page.errors
    finally:
        context.close()


# the colour behind an element: the first ancestor (or itself) with an opaque background
BACKGROUND = """el => { for (let e = el; e; e = e.parentElement) {
  const c = getComputedStyle(e).backgroundColor.match(/[\\d.]+/g).map(Number);
  if (c.length === 3 || c[3] > 0.9) return c.slice(0, 3); }
  return [255, 255, 255]; }"""


def luminance(rgb):
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("page_path", PAGE_PARAMS)
def test_figures_are_drawn_dark_in_dark_mode_and_switch_without_reload(browser, book_url,
                                                                       page_path):
    context, page = open_page(browser, book_url, page_path, "desktop", "dark")
    try:
        roots = page.locator(".mha-live")
        for k in range(roots.count()):
            root = roots.nth(k)
            name = root.get_attribute("data-figure")
            assert root.evaluate("r => r.style.colorScheme") == "dark", name
            behind = root.evaluate(BACKGROUND)
            bar = root.locator(".mha-bar")
            assert luminance(behind) < 0.05, f"{name}: drawn on {behind} in dark mode"
            if bar.count():
                assert luminance(bar.evaluate(BACKGROUND)) < 0.05, f"{name}: a light bar"
        assert not axe_violations(page), "axe violations in dark mode"
        # the theme's switch, without a reload: light, then dark again
        for mode, scheme in (("light", "light"), ("dark", "dark")):
            counts = roots.evaluate_all("rs => rs.map(r => Number(r.dataset.draws))")
            page.evaluate("m => document.documentElement.dataset.theme = m", mode)
            page.wait_for_function(
                "([sel, n]) => [...document.querySelectorAll(sel)].every((r, i) =>"
                " Number(r.dataset.draws) > n[i])", arg=[".mha-live", counts], timeout=5_000)
            schemes = roots.evaluate_all("rs => rs.map(r => r.style.colorScheme)")
            assert set(schemes) == {scheme}, (mode, schemes)
            if mode == "light":
                assert not axe_violations(page), "axe violations after switching to light"
    finally:
        context.close()

"""Helpers for the browser tests of the live figures (``mha.live``, drawn by the front end, mha/static/src/).

A figure's root is ``.mha-live[data-figure=NAME]``; its controls carry ``data-knob``, its
canvases ``data-view`` and ``data-values`` (the numbers drawn, JSON, NaN as null), the root
``data-draws`` (a counter) and ``data-drawn-at`` (performance.now() of the last draw).
``show(page, figure)`` loads one figure into a blank page: no build, no kernel, no network.
"""

import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"


def root_of(page, name):
    return page.locator(f'.mha-live[data-figure="{name}"]').first


def wait_drawn(page, root, timeout=20_000):
    page.wait_for_function("el => Number(el.dataset.draws) >= 1", arg=root.element_handle(),
                           timeout=timeout)


def show(page, figure, *, dark=False):
    """Load ``figure`` (an ``mha_book.figures.Figure``) alone into the page; returns its root."""
    page.set_content(figure.page())
    if dark:
        set_dark(page)
    root = root_of(page, figure.name)
    wait_drawn(page, root)
    return root


def set_dark(page):
    """What the book's theme does in dark mode: data-theme on <html>, light text on dark."""
    page.evaluate("() => { document.documentElement.dataset.theme = 'dark';"
                  " document.body.style.background = '#121212';"
                  " document.body.style.color = '#ced6dd'; }")


def drawn(root, view):
    """The numbers the canvas of ``view`` drew (NaN as None)."""
    return json.loads(root.locator(f'canvas[data-view="{view}"]').get_attribute("data-values"))


def label(root, view):
    return root.locator(f'canvas[data-view="{view}"]').get_attribute("aria-label")


def readout(root):
    return root.locator(".mha-readout").text_content()


def press(page, root, knob, key):
    """Focus control ``knob`` (None: keep the focus, e.g. a text box's caret), press ``key``;
    returns ms from key press to the new picture (``DRAW_MS`` collects the redraw's own time,
    look-up and drawing, as the front end measured it)."""
    before = root.get_attribute("data-draws")
    page.evaluate("() => { window.__keyAt = null; document.addEventListener('keydown', "
                  "() => { window.__keyAt = performance.now(); }, {capture: true, once: true}); }")
    if knob is not None:
        show_page(page, root, knob, touch=False)  # a phone's bar shows a page of controls
        root.locator(f'[data-knob="{knob}"]').focus()
    page.keyboard.press(key)
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)
    ms, draw = page.evaluate("el => [Number(el.dataset.drawnAt) - window.__keyAt,"
                             " Number(el.dataset.drawMs)]", root.element_handle())
    DRAW_MS.append(draw)
    return ms


#: the redraw times (ms) the front end measured in every ``press`` of this test session
DRAW_MS = []


def values(root):
    """The control values the figure says it drew (its data-state)."""
    return json.loads(root.get_attribute("data-state"))


def timing(times):
    return f"median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms"


def same(a, b, atol=1e-3):
    """Nested lists equal to ``atol``, None (NaN) only where the other is None."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y, atol)
                                                               for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= atol


AXE_JS = """
async (sel) => {
  const r = await axe.run(document.querySelector(sel), {resultTypes: ['violations']});
  return r.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' ' +
    v.nodes.map(n => n.html.slice(0, 120)).join(' | '));
}
"""


def axe_violations(page, selector=".mha-live"):
    """axe-core's violations of ANY impact inside ``selector``."""
    if not AXE.exists():
        raise AssertionError(f"{AXE} is missing: run `make assets` (npm ci in web/)")
    page.add_script_tag(path=str(AXE))
    return page.evaluate(AXE_JS, selector)


# ----------------------------------------------------------------------------- layout checks
# Every text a canvas view draws is recorded by the front end (core.js, record()) with the four
# corners of its ink in CSS px, after any rotation: canvas.mhaTexts = [{text, font, corners}].

#: what MyST-NB's stylesheet gives an HTML output in the book's dark mode: a light grey panel
PANEL = ('<div class="output text_html" style="background: rgb(206, 214, 221); '
         'color: rgb(34, 40, 50); padding: 8px">{}</div>')
PANEL_RGB = (206, 214, 221)


def show_on_panel(page, figure):
    """``figure`` on the book's dark-mode output panel (a dark page, a light panel)."""
    page.set_content(f"<html lang='en'><head><meta name='viewport' content='width=device-width,"
                     f"initial-scale=1'><title>t</title></head><body><main>"
                     f"{PANEL.format(figure.html())}</main></body></html>")
    set_dark(page)
    root = root_of(page, figure.name)
    wait_drawn(page, root)
    root.evaluate("r => r.mhaRedraw()")
    return root


def narrow(page, root, width=560):
    """The figure in a column ``width`` px wide (a book's column, where words wrap), with
    the page going on below it, as a chapter does."""
    page.evaluate("w => { document.querySelector('main').style.width = w + 'px';"
                  " const rest = document.createElement('p');"  # the page goes on after it
                  " rest.style.height = '2000px'; document.body.appendChild(rest); }", width)
    root.evaluate("r => r.mhaRedraw()")


#: the two screens every figure is checked on: a 1280 x 800 desktop, a 390 x 844 touch phone
SIZES = {"desktop": dict(viewport={"width": 1280, "height": 800}),
         "phone": dict(viewport={"width": 390, "height": 844}, has_touch=True,
                       is_mobile=True, device_scale_factor=2)}


def phone(browser):
    """A 390 x 844 touch phone's context (close it when done)."""
    return browser.new_context(**SIZES["phone"])


def texts(root, view):
    """The texts the canvas of ``view`` drew: [{text, font, corners}], and its (width, height)."""
    return root.locator(f'canvas[data-view="{view}"]').evaluate(
        "c => [c.mhaTexts || [], [parseFloat(c.style.width), c.height / (window.devicePixelRatio"
        " || 1)]]")


def _sides(quad):
    return [(quad[(k + 1) % 4][0] - quad[k][0], quad[(k + 1) % 4][1] - quad[k][1])
            for k in range(4)]


def separation(a, b):
    """The widest gap (px) between convex quads ``a`` and ``b`` along a side's normal
    (separating axis theorem): negative when they overlap."""
    best = -float("inf")
    for quad in (a, b):
        for dx, dy in _sides(quad):
            n = (dx * dx + dy * dy) ** 0.5
            if n == 0:
                continue
            ax = (-dy / n, dx / n)
            pa = [ax[0] * x + ax[1] * y for x, y in a]
            pb = [ax[0] * x + ax[1] * y for x, y in b]
            best = max(best, min(pb) - max(pa), min(pa) - max(pb))
    return best


def _apart(a, b, gap):
    return separation(a, b) >= gap


def overlaps(drawn_texts, gap=0.5):
    """Pairs of texts whose ink comes closer than ``gap`` px (they touch or overlap)."""
    out = []
    for i, a in enumerate(drawn_texts):
        for b in drawn_texts[i + 1:]:
            if not _apart(a["corners"], b["corners"], gap):
                out.append((a["text"], b["text"]))
    return out


def cut_off(drawn_texts, size, tol=0.5):
    """Texts whose ink reaches outside the canvas (clipped)."""
    w, h = size
    return [t["text"] for t in drawn_texts
            if any(x < -tol or y < -tol or x > w + tol or y > h + tol for x, y in t["corners"])]


def font_px(t):
    return float(t["font"].split("px")[0].split()[-1])


def layout_problems(root, view):
    """What a reader could not read on the canvas of ``view``: texts that touch or overlap,
    texts cut at its edges, a caption whose drawn lines are not the whole caption."""
    drawn_texts, size = texts(root, view)
    problems = [f"{view}: overlap {a!r} / {b!r}" for a, b in overlaps(drawn_texts)]
    problems += [f"{view}: cut off {s!r} (canvas {size})" for s in cut_off(drawn_texts, size)]
    return problems



def figure_layout_problems(root):
    """``layout_problems`` of every canvas the figure shows; a caption drawn whole is also
    where its aria-label starts, and every canvas records its texts."""
    found = []
    for view in root.locator("canvas[data-view]").evaluate_all(
            "cs => cs.filter(c => !c.hidden).map(c => c.dataset.view)"):
        found += layout_problems(root, view)
        lines = caption_drawn(root, view)
        said = label(root, view)
        if lines:  # drawn whole: the aria-label starts with the caption
            assert said.startswith(" ".join(lines) + "."), (view, lines, said[:120])
        drawn_texts, _ = texts(root, view)
        assert drawn_texts, f"{view}: no text recorded"
        for line in lines or []:
            assert line in [t["text"] for t in drawn_texts], (view, line)
    return found

def pixel(root, view, x, y):
    """The canvas's RGBA at CSS px (x, y)."""
    return root.locator(f'canvas[data-view="{view}"]').evaluate(
        "(c, [x, y]) => { const k = c.width / parseFloat(c.style.width);"
        " return [...c.getContext('2d').getImageData(Math.round(x * k), Math.round(y * k), 1, 1)"
        ".data]; }", [x, y])


def luminance(rgb):
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b):
    """WCAG contrast ratio of two RGB colours."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def caption_drawn(root, view):
    """The caption's lines as the canvas of ``view`` drew them (data-caption)."""
    text = root.locator(f'canvas[data-view="{view}"]').get_attribute("data-caption")
    return None if text is None else json.loads(text)


def set_control(page, root, knob, value):
    """Set control ``knob`` to the option labelled ``value`` (a select) or to index ``value``
    (a slider), or tick/untick a box, as the reader would, and wait for the redraw."""
    before = root.get_attribute("data-draws")
    root.locator(f'[data-knob="{knob}"]').evaluate(
        """(e, v) => {
          if (e.tagName === 'SELECT') {
            const o = [...e.options].find(o => o.text === String(v));
            e.value = o ? o.value : String(v); e.dispatchEvent(new Event('change'));
          } else if (e.type === 'checkbox') { e.checked = !!v; e.dispatchEvent(new Event('change')); }
          else { e.value = String(v); e.dispatchEvent(new Event('input')); }
        }""", value)
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)


def oklab(rgb):
    """An sRGB colour (0-255) in Oklab, where Euclidean distance is about perceptual."""
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb[:3])
    lms = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b,
           0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b,
           0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b)
    lo, mid, sh = (v ** (1 / 3) for v in lms)  # long, medium, short cone responses
    return (0.2104542553 * lo + 0.7936177850 * mid - 0.0040720468 * sh,
            1.9779984951 * lo - 2.4285922050 * mid + 0.4505937099 * sh,
            0.0259040371 * lo + 0.7827717662 * mid - 0.8086757660 * sh)


def offline(page, book_url):
    """Let ``page`` load only from the book's own server: every other request is aborted and
    listed in the returned list (assert it stays empty)."""
    from urllib.parse import urlparse

    outside = []

    def route(r):
        if urlparse(r.request.url).netloc == urlparse(book_url).netloc \
                or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    return outside


def tap(page, root, target, **position):
    """Tap ``target`` (a locator in ``root``; ``position``: where in it) on a touch screen and
    wait for the figure's redraw."""
    before = root.get_attribute("data-draws")
    target.tap(**position)
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)


def open_in_book(page, book_url, name):
    """Load the built page that holds the live figure ``name``, from the book's own server only,
    and wait for the figure to draw: ``(root, errors, outside)``, the figure's element, the
    page's script errors and the requests that tried to leave the book (assert both stay
    empty)."""
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    outside = offline(page, book_url)  # nothing may come from outside the book
    page.goto(f"{book_url}/{page_with(name)}", wait_until="load")
    root = root_of(page, name)
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    return root, errors, outside


def page_with(name):
    """The built book's page (its path under _build/html) that holds the live figure ``name``
    (its data-figure): found in the build, so a chapter renumbered renames nothing here."""
    html = ROOT / "_build" / "html"
    for path in sorted(html.glob("**/*.html")):
        if f'data-figure="{name}"' in path.read_text(encoding="utf-8", errors="replace"):
            return path.relative_to(html).as_posix()
    raise AssertionError(f"no page of the built book ({html}) holds the figure {name!r}")


def show_page(page, root, knob, touch):
    """Tap the tab of the page holding ``knob`` when the bar is split into pages (a phone)
    and that page is not the one shown."""
    row = root.locator(f'.mha-control:has([data-knob="{knob}"])')
    number = row.get_attribute("data-page")
    if number is None or not row.evaluate("e => e.hidden"):
        return
    before = root.get_attribute("data-page")
    tab = root.locator(f'.mha-tabs [data-page="{number}"]')
    if touch:
        tab.tap()
    else:
        tab.click()
    page.wait_for_function("([r, p]) => r.dataset.page === p",
                           arg=[root.element_handle(), number], timeout=5_000)
    assert before != root.get_attribute("data-page")


def lines_drawn(root):
    """The lines view's data-values: {head, focus, lines: [[query, key, weight], ...]}."""
    return json.loads(root.locator('[data-view="lines"]').get_attribute("data-values"))


def hover_each_token(page, root, side):
    """Hover every ``side`` ("query" or "key") token of the lines view in turn: each one
    hovered is the one whose lines are shown, and none moves (a readout above the columns that
    grew with the pointer moved them 23 px, and the pointer landed on another token)."""
    buttons = root.locator(f'[data-view="lines"] button[aria-label^="{side} "]')
    buttons.first.evaluate("b => b.scrollIntoView({block: 'start'})")  # all in view
    page.wait_for_timeout(100)
    boxes = [buttons.nth(i).bounding_box() for i in range(buttons.count())]
    for i, b in enumerate(boxes):
        page.mouse.move(b["x"] + b["width"] / 2, b["y"] + b["height"] / 2)
        got = lines_drawn(root)["focus"]
        assert (got["side"], got["index"]) == (side, i), (side, i, got)
        # headless Chromium's boxes jitter by 0.625 px at times
        moved = buttons.nth(i).bounding_box()["y"] - b["y"]
        assert abs(moved) < 1.5, (side, i, moved)

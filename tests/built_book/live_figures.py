"""Helpers for the browser tests of the live figures (``mha.live``, drawn by mha/static/live/).

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
    """Load ``figure`` (an ``mha.live.Figure``) alone into the page; returns its root."""
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
    """Focus control ``knob``, press ``key``; returns ms from key press to the new picture
    (``root.draw_ms`` collects the redraw's own time, look-up and drawing, as the front end measured
    it)."""
    before = root.get_attribute("data-draws")
    page.evaluate("() => { window.__keyAt = null; document.addEventListener('keydown', "
                  "() => { window.__keyAt = performance.now(); }, {capture: true, once: true}); }")
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

"""On a touch screen (pointer: coarse) every control of a live figure is a target of at least
44 x 44 CSS px (WCAG 2.5.5): sliders, selects and buttons; a checkbox's row, whose label is part
of the target, too. With a mouse the controls keep their compact size."""

import pytest
from live_figures import phone, show

from mha_book import figures as live

pytestmark = pytest.mark.browser

# figures with every kind of control: slider and select (ch14), toggle (ch05), step buttons (ch13)
FIGURES = {"ch14 kv_bytes": live.kv_bytes, "ch05 split_explorer": live.split_explorer,
           "ch13 online_softmax": live.online_softmax}
TARGETS = ("select, input[type=range], button, .mha-control:has(input[type=checkbox])")


def sizes(root):
    return root.locator(TARGETS).evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return [e.tagName + (e.dataset.knob ? ':' + e.dataset.knob : ''), r.width, r.height]; })")


@pytest.mark.parametrize("name", FIGURES)
def test_touch_targets_are_44_px_on_a_phone(browser, name):
    context = phone(browser)
    try:
        page = context.new_page()
        root = show(page, FIGURES[name]())
        found = sizes(root)
        assert found, f"{name}: no controls found"
        small = [(what, round(w), round(h)) for what, w, h in found if min(w, h) < 44]
        assert not small, f"{name}: touch targets under 44 x 44 px: {small}"
    finally:
        context.close()


def test_a_mouse_keeps_the_compact_controls(page):
    root = show(page, live.kv_bytes())
    heights = [h for _, _, h in sizes(root)]
    assert heights and max(heights) < 44, heights

"""What every live figure must do, whatever it shows: one suite over ``mha_book.figures.FIGURES``
(the figures are found, not listed: a new figure is checked here with nothing to add).

Each figure is made with the arguments of its mark (``mha_book.figures.build``) and loaded alone
into a blank page (no build, no kernel), then:

- **layout**, at 1280 px and on a 390 x 844 touch phone, and on the book's dark-mode output panel
  on a phone: no two texts a canvas draws touch or overlap, none is cut at the canvas's edges, a
  caption is drawn whole (``live_figures.layout_problems``), and the phone's page is no wider
  than the phone (``CASES`` adds settings where texts crowd: 24 tokens, 16 heads, long captions);
- **a phone**: a tap on every slider, toggle and step button redraws the figure, and no canvas,
  control, table or button reaches past the 390 px screen;
- **touch targets**: on a touch screen every control is 44 x 44 CSS px or more (WCAG 2.5.5);
  with a mouse they keep their compact size;
- **light and dark**: axe-core finds no violation, of any impact, in the figure on a light page
  and on a dark page, where the figure uses its dark palette;
- **weight**: the figure's HTML, sent gzip-compressed, fits in a chapter page's 3 MB.

What a figure computes (its numbers, its controls' effects, its readouts) is checked in its own
file, ``test_figure_<module>.py``; the built book's pages, figures in place, in
``test_live_viewport.py`` (every control beside the view it changes, dark mode) and
``test_reading_comfort.py``.
"""

import gzip

import pytest
from live_figures import (
    axe_violations,
    figure_layout_problems,
    set_control,
    show,
    show_on_panel,
    show_page,
)
from test_page_weight import LIMIT

from mha_book import figures as live

pytestmark = pytest.mark.browser

NAMES = list(live.FIGURES)
# (figure, the controls set before looking: knob -> option label or slider index)
CASES = [(name, {}) for name in NAMES] + [
    ("heads_at_fixed_width", {"num_heads": 0}),  # one head: one query row, the colour bar
    ("split_explorer", {"num_heads": 4}),  # 16 heads
    ("explorer_figure", {"seq_len": 22}),  # 24 tokens
    ("explorer_figure", {"source": "translator decoder: layer 0"}),
    ("explorer_figure", {"source": "translator cross-attention: layer 0"}),
    ("explorer_figure", {"source": "Shakespeare model: layer 1"}),  # 48 characters of a passage
    ("explorer_figure", {"num_heads": "16"}),
    # the window and sink knobs: the longest captions (the window, what went to the sink)
    ("explorer_figure", {"seq_len": 22, "window": "8 positions", "sink": "s = -2"}),
    ("explorer_figure", {"source": "translator cross-attention: layer 0", "sink": "s = 2"}),
    ("head_switches", {"removed": 10, "spare": True}),
    ("text_heads", {"passage": "Sonnet 18"}),  # 127 characters
    ("kv_bytes", {"kv_heads": "1", "window": "128"}),  # 1.9 to 499,712 MiB: the widest ticks
    ("window_sink", {"window": 3, "sink": 5}),  # window 4, sink 12
    ("trained_head_lines", {"query": 5}),  # one query's lines and its bars
]
PANEL_CASES = [(name, {}) for name in NAMES] + [
    ("heads_at_fixed_width", {"num_heads": 0}), ("explorer_figure", {"seq_len": 22}),
    ("head_switches", {"removed": 10, "spare": True})]
# axe in a state other than the start: the crossed-out heads and the spare toggle
AXE_CASES = [(name, {}) for name in NAMES] + [("head_switches", {"removed": 5, "spare": True})]


def ids(cases):
    return [f"{n}-{'-'.join(map(str, s.values())) or 'start'}" for n, s in cases]


def shown(page, fig, settings, **how):
    root = show(page, fig, **how)
    for knob, value in settings.items():
        set_control(page, root, knob, value)
    return root



# ----------------------------------------------------------------------------- layout

@pytest.mark.parametrize("name,settings", CASES, ids=ids(CASES))
def test_no_text_overlaps_or_is_cut_on_a_phone(phone_page, built_figure, name, settings):
    root = shown(phone_page, built_figure(name), settings)
    found = figure_layout_problems(root)
    assert not found, found
    assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("name,settings", CASES, ids=ids(CASES))
def test_no_text_overlaps_or_is_cut_on_a_desktop(page, built_figure, name, settings):
    root = shown(page, built_figure(name), settings)
    found = figure_layout_problems(root)
    assert not found, found


@pytest.mark.parametrize("name,settings", PANEL_CASES, ids=ids(PANEL_CASES))
def test_no_text_overlaps_or_is_cut_on_the_books_dark_panel_on_a_phone(phone_page, built_figure,
                                                                      name, settings):
    """The book's dark mode puts a figure on a padded light panel: 16 px narrower still."""
    root = show_on_panel(phone_page, built_figure(name))
    for knob, value in settings.items():
        set_control(phone_page, root, knob, value)
    found = figure_layout_problems(root)
    assert not found, found


# ----------------------------------------------------------------------------- a phone

# the controls a tap changes: [knob, kind] for sliders, toggles and step sliders (on a page of
# the bar that a tab shows, or in view)
TAPPABLE = """root => [...root.querySelectorAll('[data-knob]')].filter(e => !e.disabled
  && (e.getClientRects().length || e.closest('[data-page]'))
  && (e.type === 'range' || e.type === 'checkbox')).map(e =>
  [e.dataset.knob, e.type === 'checkbox' ? 'toggle'
    : e.parentElement.classList.contains('mha-step') ? 'step' : 'range'])"""

WIDEST = ("() => Math.max(...[...document.querySelectorAll('.mha-live canvas, .mha-live "
          ".mha-control, .mha-live table, .mha-live button')].map(e => "
          "e.getBoundingClientRect().right))")


def tap_control(page, root, knob, kind):
    """Tap control ``knob`` as a reader does: a box, a step button (next, or previous at the
    end), or a slider's far end from its value; wait for the redraw."""
    control = root.locator(f'[data-knob="{knob}"]')
    at_end = control.evaluate("e => Number(e.value) >= Number(e.max)")
    before = root.get_attribute("data-draws")
    if kind == "toggle":
        control.tap()
    elif kind == "step":
        side = "previous step" if at_end else "next step"
        root.locator(f'.mha-step:has([data-knob="{knob}"]) button[aria-label$="{side}"]').tap()
    else:
        box = control.bounding_box()
        control.tap(position={"x": 4 if at_end else box["width"] - 4, "y": box["height"] / 2})
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)


@pytest.mark.parametrize("name", NAMES)
def test_a_tap_redraws_and_nothing_is_wider_than_a_phone(phone_page, built_figure, name):
    """390 x 844 with touch: from the figure's start, a tap on each slider, toggle and step
    button redraws the figure; no canvas, control, table or button reaches past the screen."""
    fig = built_figure(name)
    controls = show(phone_page, fig).evaluate(TAPPABLE)  # none: selects and a text box only
    for knob, kind in [(None, None), *controls]:
        root = show(phone_page, fig)  # each control from the start
        if knob is not None:
            show_page(phone_page, root, knob, touch=True)
            tap_control(phone_page, root, knob, kind)
        widest = phone_page.evaluate(WIDEST)
        assert widest <= 390, f"{name}, after a tap on {knob}: {widest} px wide on a 390 px screen"
        assert phone_page.evaluate("document.documentElement.scrollWidth") <= 390
    assert not phone_page.errors, phone_page.errors


# ----------------------------------------------------------------------------- touch targets

TARGETS = "select, input[type=range], button, .mha-control:has(input[type=checkbox])"


def sizes(root):
    """[what, width, height] of every control of the figure's bar."""
    return root.locator(".mha-bar").locator(TARGETS).evaluate_all(
        "els => els.map(e => { const r = e.getBoundingClientRect();"
        " return [e.tagName + (e.dataset.knob ? ':' + e.dataset.knob : ''), r.width, r.height]; })")


@pytest.mark.parametrize("name", NAMES)
def test_touch_targets_are_44_px_on_a_phone(phone_page, built_figure, name):
    """WCAG 2.5.5: sliders, selects and buttons; a checkbox's row, whose label is part of the
    target, too."""
    root = show(phone_page, built_figure(name))
    found = sizes(root)
    for tab in root.locator(".mha-tabs [role=tab]").all():  # every page of a split bar
        tab.tap()
        found += sizes(root)
    found = [f for f in found if f[1] or f[2]]  # a page not shown has no size
    assert found, f"{name}: no controls found"
    small = [(what, round(w), round(h)) for what, w, h in found if min(w, h) < 44]
    assert not small, f"{name}: touch targets under 44 x 44 px: {small}"


@pytest.mark.parametrize("name", NAMES)
def test_a_mouse_keeps_the_compact_controls(page, built_figure, name):
    heights = [h for _, _, h in sizes(show(page, built_figure(name)))]
    assert heights and max(heights) < 44, heights


# ----------------------------------------------------------------------------- light and dark

@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
@pytest.mark.parametrize("name,settings", AXE_CASES, ids=ids(AXE_CASES))
def test_axe_finds_nothing_in_light_and_dark_mode(page, built_figure, name, settings, dark):
    root = shown(page, built_figure(name), settings, dark=dark)
    assert root.evaluate("r => r.style.colorScheme") == ("dark" if dark else "light")
    problems = axe_violations(page)
    assert not problems, f"{name} ({'dark' if dark else 'light'}): {problems}"
    assert not page.errors, page.errors


# ----------------------------------------------------------------------------- weight

@pytest.mark.parametrize("name", NAMES)
def test_a_figure_fits_in_a_chapter_pages_weight(built_figure, name):
    sent = len(gzip.compress(built_figure(name).html().encode(), 6))
    assert sent <= LIMIT, f"{name}: {sent / 1e6:.2f} MB sent, over a page's 3 MB"

"""Every live figure's canvases can be read, on a 390 x 844 phone and at 1280 px, with no build.

The front end records every text a canvas view draws with the corners of its ink
(``canvas.mhaTexts``, core.js): no two texts touch or overlap (token labels at 24 tokens, a
bar chart's key labels on a phone, a colour bar's ticks beside one query row), none is cut at
the canvas's edges, and a caption is drawn whole, on as many lines as it needs (``data-caption``:
the phone cut "translator cross-attention: layer 0 (trained), input sample 0, Lo"). On a phone
every bar still shows its number (chapter 01's 3e-4, chapter 02's d_k bars), and chapter 06's
heatmap with numbers in its cells keeps them.
"""

import json

import pytest
from live_figures import (
    caption_drawn,
    label,
    layout_problems,
    phone,
    separation,
    set_control,
    show,
    show_on_panel,
    texts,
)

from mha_book import figures as live
from mha_book import widgets
from mha_book.figures import explorer

pytestmark = pytest.mark.browser

SCORES = [2.1, 0.3, -1.2, 5.0, 0.8, -0.5, 1.9, -2.2, 0.1]
TOKENS = ["Anthony", "Hopkins", "admired", "Michael", "Bay", "as", "a", "great", "director."]
FIGURES = {
    "ch01": lambda: live.temperature_bars(SCORES, TOKENS, highlight="Michael", value=0.3),
    "ch02-dk": live.dk_softmax, "ch02-mask": live.mask_builder,
    "ch03": live.shared_vs_separate, "ch04": live.heads_at_fixed_width,
    "ch05-split": live.split_explorer, "ch05-fold": live.fold_valid_lens,
    "ch06": live.one_vs_many,
    "ch07": lambda: explorer.explorer_figure({**widgets.DEFAULTS}),
    "ch08": live.trained_head_lines, "ch08-query": lambda: live.trained_head_lines(query=5),
    "ch09": live.head_switches,
    "ch11-decode": live.decode_steps, "ch11-cache": live.kv_cache_size,
    "ch12": live.rope_rotation, "ch13": live.online_softmax,
    "ch14-cache": live.kv_bytes, "ch14-sink": live.window_sink,
    "text": live.text_heads,  # the Shakespeare model in the page
}
# (figure, the controls set before looking: knob -> option label or slider index)
CASES = [(name, {}) for name in FIGURES] + [
    ("ch04", {"num_heads": 0}),  # one head: one query row, the colour bar beside it
    ("ch05-split", {"num_heads": 4}),  # 16 heads
    ("ch07", {"seq_len": 22}),  # 24 tokens
    ("ch07", {"source": "translator decoder: layer 0"}),
    ("ch07", {"source": "translator cross-attention: layer 0"}),
    ("ch07", {"source": "Shakespeare model: layer 1"}),  # the first 48 characters of a passage
    ("ch07", {"num_heads": "16"}),
    # chapter 14's knobs: the longest captions (the window, what went to the sink)
    ("ch07", {"seq_len": 22, "window": "8 positions", "sink": "s = -2"}),
    ("ch07", {"source": "translator cross-attention: layer 0", "sink": "s = 2"}),
    ("ch09", {"removed": 10, "spare": True}),
    ("text", {"passage": "Sonnet 18"}),  # 127 characters
    ("ch14-cache", {"kv_heads": "1", "window": "128"}),  # 1.9 to 499,712 MiB: the widest ticks
    ("ch14-sink", {"window": 3, "sink": 5}),  # window 4, sink 12
]


@pytest.fixture(scope="module")
def figures():
    return {}


def figure(figures, name):
    if name not in figures:
        figures[name] = FIGURES[name]()
    return figures[name]


def problems(page, fig, settings, panel=False):
    if panel:
        root = show_on_panel(page, fig)
    else:
        root = show(page, fig)
    for knob, value in settings.items():
        set_control(page, root, knob, value)
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
    return found, root


@pytest.mark.parametrize("name,settings", CASES,
                         ids=[f"{n}-{'-'.join(map(str, s.values())) or 'start'}" for n, s in CASES])
def test_no_text_overlaps_or_is_cut_on_a_phone(browser, figures, name, settings):
    context = phone(browser)
    page = context.new_page()
    try:
        found, _ = problems(page, figure(figures, name), settings)
        assert not found, found
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
    finally:
        context.close()


@pytest.mark.parametrize("name,settings", CASES,
                         ids=[f"{n}-{'-'.join(map(str, s.values())) or 'start'}" for n, s in CASES])
def test_no_text_overlaps_or_is_cut_on_a_desktop(page, figures, name, settings):
    found, _ = problems(page, figure(figures, name), settings)
    assert not found, found


PANEL_CASES = [("ch04", {"num_heads": 0}), ("ch06", {}), ("ch07", {}), ("ch07", {"seq_len": 22}),
               ("ch09", {"removed": 10, "spare": True}), ("text", {}), ("ch14-sink", {})]


@pytest.mark.parametrize("name,settings", PANEL_CASES,
                         ids=[f"{n}-{'-'.join(map(str, s.values())) or 'start'}"
                              for n, s in PANEL_CASES])
def test_no_text_overlaps_or_is_cut_on_the_books_dark_panel_on_a_phone(browser, figures, name,
                                                                      settings):
    """The book's dark mode puts a figure on a padded light panel: 16 px narrower still."""
    context = phone(browser)
    page = context.new_page()
    try:
        found, root = problems(page, figure(figures, name), settings, panel=True)
        assert not found, found
        if name == "ch07" and not settings:  # 8 heads 2 a row, every token labelled
            heads = root.locator('canvas[data-view="heads"]')
            assert heads.get_attribute("data-columns") == "2"
            assert heads.get_attribute("data-label-stride") == "1"
            assert heads.evaluate("c => c.mhaGeom.labelFont") >= 9
    finally:
        context.close()


def numbers_written(root, view):
    """The numbers the bar chart wrote at its bars, and whether each is among its texts."""
    said = json.loads(root.locator(f'canvas[data-view="{view}"]').get_attribute("data-numbers"))
    drawn_texts = [t["text"] for t in texts(root, view)[0]]
    return said, [s in drawn_texts for s in said]


@pytest.mark.parametrize("name,view", [("ch01", "weights"), ("ch02-dk", "weights"),
                                       ("ch08-query", "row")])
def test_every_bar_shows_its_number_on_a_phone(browser, figures, name, view):
    fig = figure(figures, name)
    context = phone(browser)
    page = context.new_page()
    try:
        root = show(page, fig)
        said, shown = numbers_written(root, view)
        values = root.locator(f'canvas[data-view="{view}"]').get_attribute("data-values")
        assert len(said) == values.count(",") + 1 and all(shown), (said, shown)
        # the key labels: 4 px or more between neighbours ("6 p7 o8 n" ran together)
        keys = fig.state()["views"][view]["labels"]
        quads = [t["corners"] for t in texts(root, view)[0] if t["text"] in keys]
        assert len(quads) == len(keys) > 0
        gaps = [separation(a, b) for a, b in zip(quads, quads[1:])]
        assert min(gaps) >= 4, gaps
    finally:
        context.close()


def test_chapter_06_keeps_the_numbers_in_its_cells_on_a_phone(browser, figures):
    fig = figure(figures, "ch06")
    context = phone(browser)
    page = context.new_page()
    try:
        root = show(page, fig)
        for view in ("one", "heads"):
            size = int(root.locator(f'canvas[data-view="{view}"]').get_attribute("data-numbers"))
            assert size >= 9, f"{view}: no numbers in the cells on a phone"
            grid = texts(root, view)[0]
            cells = [t for t in grid if t["font"].startswith(f"{size}px")]
            assert len(cells) >= 27, (view, len(cells))
    finally:
        context.close()

"""Layout checks that name their figure (every figure's texts, on a phone and at 1280 px, are
checked by test_every_figure.py, over the registry).

On a phone every bar still shows its number (the temperature bars' 3e-4, the d_k bars, one
query's row of a trained head), with 4 px or more between the key labels; one head against many
keeps the numbers in its heatmaps' cells; the explorer on the book's dark panel keeps two heads a
row with every token labelled.
"""

import json

import pytest
from live_figures import separation, show, show_on_panel, texts

from mha_book import figures as live

pytestmark = pytest.mark.browser



def numbers_written(root, view):
    """The numbers the bar chart wrote at its bars, and whether each is among its texts."""
    said = json.loads(root.locator(f'canvas[data-view="{view}"]').get_attribute("data-numbers"))
    drawn_texts = [t["text"] for t in texts(root, view)[0]]
    return said, [s in drawn_texts for s in said]


@pytest.mark.parametrize("name,view", [("temperature_bars", "weights"), ("dk_softmax", "weights"),
                                       ("trained_head_lines", "row")])
def test_every_bar_shows_its_number_on_a_phone(phone_page, built_figure, name, view):
    fig = live.trained_head_lines(query=5) if name == "trained_head_lines" else built_figure(name)
    root = show(phone_page, fig)
    said, shown = numbers_written(root, view)
    values = root.locator(f'canvas[data-view="{view}"]').get_attribute("data-values")
    assert len(said) == values.count(",") + 1 and all(shown), (said, shown)
    # the key labels: 4 px or more between neighbours ("6 p7 o8 n" ran together)
    keys = fig.state()["views"][view]["labels"]
    quads = [t["corners"] for t in texts(root, view)[0] if t["text"] in keys]
    assert len(quads) == len(keys) > 0
    gaps = [separation(a, b) for a, b in zip(quads, quads[1:])]
    assert min(gaps) >= 4, gaps


def test_one_vs_many_keeps_the_numbers_in_its_cells_on_a_phone(phone_page, built_figure):
    root = show(phone_page, built_figure("one_vs_many"))
    for view in ("one", "heads"):
        size = int(root.locator(f'canvas[data-view="{view}"]').get_attribute("data-numbers"))
        assert size >= 9, f"{view}: no numbers in the cells on a phone"
        grid = texts(root, view)[0]
        cells = [t for t in grid if t["font"].startswith(f"{size}px")]
        assert len(cells) >= 27, (view, len(cells))


def test_the_explorer_on_the_books_dark_panel_keeps_two_heads_a_row_on_a_phone(
        phone_page, built_figure):
    """8 heads 2 a row, every token labelled, at 9 px or more."""
    root = show_on_panel(phone_page, built_figure("explorer_figure"))
    heads = root.locator('canvas[data-view="heads"]')
    assert heads.get_attribute("data-columns") == "2"
    assert heads.get_attribute("data-label-stride") == "1"
    assert heads.evaluate("c => c.mhaGeom.labelFont") >= 9

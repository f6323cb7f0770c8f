"""mha.head_view's saved page in Chromium, offline: no build, no kernel.

``mha.save_html(mha.head_view(...), path)`` writes one page; opened from
file:// with every other request aborted, it draws the heatmaps of the
chosen layer (the numbers the canvas drew equal the weights, to 1e-3), the
layer control redraws them, and the view control switches to the lines view,
whose head picker and focused query show exactly that head's row. Nothing is
fetched and the console stays free of errors. axe-core finds nothing in
either view, light or dark, and no text of the heatmaps overlaps or is cut,
on a phone or a desktop, for word pieces and for a line of characters.
"""

import json

import pytest
import torch
from live_figures import (
    axe_violations,
    layout_problems,
    offline,
    phone,
    root_of,
    same,
    show,
    texts,
    values,
    wait_drawn,
)

import mha
import mha_book

pytestmark = pytest.mark.browser

B, H, L = 2, 4, 6
TOKENS = ["The", "cat", "sat", "on", "the", "mat"]


@pytest.fixture(scope="module")
def weights():
    g = torch.Generator().manual_seed(3)
    return [torch.softmax(2 * torch.randn(B, H, L, L, generator=g), -1)
            for _ in range(2)]


@pytest.fixture
def opened(page, weights, tmp_path):
    """The saved page, opened offline; returns (root, requests refused)."""
    fig = mha.head_view(weights, TOKENS, batch=1, title="Two layers")
    path = mha.save_html(fig, tmp_path / "heads.html")
    outside = offline(page, "file://")  # file: URLs (no host) and data: only
    page.goto(path.as_uri(), wait_until="load")
    root = root_of(page, "head-view")
    wait_drawn(page, root)
    yield root, outside
    assert not page.errors, page.errors
    assert not outside, outside


def heat_values(root):
    canvas = root.locator('canvas[data-view="heads"]')
    return json.loads(canvas.get_attribute("data-values"))


def inked(root):
    """How many pixels of the heatmap canvas are not transparent."""
    return root.locator('canvas[data-view="heads"]').evaluate(
        "c => { const d = c.getContext('2d').getImageData(0, 0, c.width,"
        " c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4)"
        " if (d[i]) n++; return n; }")


def lines_values(root):
    box = root.locator('[data-view="lines"]')
    return json.loads(box.get_attribute("data-values"))


def test_the_saved_page_draws_every_layer_offline(opened, weights):
    root, _ = opened
    assert root.page.title() == "Two layers"
    assert inked(root) > 1000
    assert same(heat_values(root), weights[0][1].tolist())
    assert values(root) == {"layer": "layer 0", "view": "heatmaps",
                            "batch": 1}
    root.locator('[data-knob="layer"]').select_option("1")
    assert values(root)["layer"] == "layer 1"
    assert same(heat_values(root), weights[1][1].tolist())
    readout = root.locator(".mha-readout").text_content()
    assert readout.startswith("layer 1: 4 heads, 6 queries x 6 keys")


def test_the_lines_view_shows_the_chosen_heads_rows(opened, weights):
    root, _ = opened
    root.locator('[data-knob="layer"]').select_option("1")
    root.locator('[data-knob="view"]').select_option("1")  # lines
    assert values(root)["view"] == "lines"
    assert root.locator('canvas[data-view="heads"]').is_hidden()
    assert root.locator('[data-view="lines"] canvas').first.is_visible()
    w = weights[1][1]  # (H, L, L): layer 1, sequence 1
    got = lines_values(root)
    assert got["head"] == 0 and got["focus"] is None
    assert len(got["lines"]) == L * L
    assert same([x for _, _, x in got["lines"]], w[0].flatten().tolist())
    root.locator('[data-view="lines"] select').select_option("2")
    for i in (0, 3, L - 1):
        root.locator('[data-view="lines"] button[aria-label^="query "]') \
            .nth(i).focus()
        got = lines_values(root)
        assert got["head"] == 2 and got["focus"]["index"] == i
        assert [(q, k) for q, k, _ in got["lines"]] == [(i, k)
                                                        for k in range(L)]
        assert same([x for _, _, x in got["lines"]], w[2, i].tolist())
    root.locator('[data-knob="view"]').select_option("0")  # back
    assert root.locator('[data-view="lines"]').is_hidden()
    assert same(heat_values(root), w.tolist())


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_both_views_pass_axe(page, weights, dark):
    root = show(page, mha.head_view(weights, TOKENS), dark=dark)
    problems = axe_violations(page)
    root.locator('[data-knob="view"]').select_option("1")
    root.locator('[data-view="lines"] button[aria-label^="key "]').nth(2) \
        .click()
    problems += axe_violations(page)
    assert not problems, problems
    assert not page.errors, page.errors


def word_pieces():
    tokens = ["[CLS]", "the", "heads", "##man", "wasn", "'", "t", "there",
              ",", "was", "he", "?", "[SEP]"]
    g = torch.Generator().manual_seed(5)
    w = torch.softmax(2 * torch.randn(12, len(tokens), len(tokens),
                                      generator=g), -1)
    return mha.head_view([w, w.flip(0)], tokens)


def characters():
    from mha_book.language_model import PASSAGES, token_labels

    lm = mha_book.load_language_model()
    line = PASSAGES["Twelfth Night: the Duke"][:28]
    with torch.no_grad(), mha.record_attention(lm) as recorded:
        lm(lm.encode(line)[None])
    return mha.head_view(recorded, token_labels(line))


@pytest.mark.parametrize("make", [word_pieces, characters])
@pytest.mark.parametrize("where", ["phone", "desktop"])
def test_no_text_overlaps_or_is_cut(browser, page, make, where):
    context = phone(browser) if where == "phone" else None
    try:
        tab = context.new_page() if context else page
        fig = make()
        root = show(tab, fig)
        heads = len(fig.state()["views"]["heads"]["grids"])
        canvas = root.locator('canvas[data-view="heads"]')
        assert canvas.get_attribute("data-heads") == str(heads)
        drawn_texts, _ = texts(root, "heads")
        assert len(drawn_texts) > 2 * heads  # titles and token labels
        found = layout_problems(root, "heads")
        assert not found, found
    finally:
        if context:
            context.close()

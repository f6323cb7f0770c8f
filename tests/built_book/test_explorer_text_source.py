"""Chapter 07's explorer on the Shakespeare model, in Chromium (no kernel, no network).

The page's in-page compute (compute.js, on the queries and keys ``mha_book.figures.explorer`` exported)
draws, for every layer of the model and the passages the seed picks, the weights the package
computes: ``lm.attention`` of the passage, to 1e-5 (the canvas keeps six decimals). Without a
build: the package's HTML in a blank page; on the built book: chapter 07 itself.
"""

import json

import pytest
import torch
from test_explorer_page import open_book_explorer

from mha_book import sources, widgets
from mha_book.figures import explorer as live_explorer
from mha_book.language_model import PASSAGES as ALL_PASSAGES
from mha_book.language_model import load_language_model
from mha_book.sources import TEXT_CHARS

#: what the explorer shows: the first TEXT_CHARS characters of each passage
PASSAGES = {name: text[:TEXT_CHARS] for name, text in ALL_PASSAGES.items()}

pytestmark = pytest.mark.browser


@pytest.fixture
def page(page):
    """conftest's page, with ``page.outside`` for the requests that leave the server."""
    page.outside = []
    return page


@pytest.fixture(scope="module")
def lm():
    return load_language_model()


def text_sources(lm):
    return [f"Shakespeare model: layer {n}" for n in range(lm.num_layers)]


def set_seed(page, root, seed):
    before = root.get_attribute("data-draws")
    root.locator('[data-knob="seed"]').evaluate(
        "(s, v) => { s.value = String(v); s.dispatchEvent(new Event('input')); }", seed)
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)


def check_drawn(page, root, lm):
    """The page drew the model's own weights on the passage its state names; returns it."""
    state = json.loads(root.get_attribute("data-state"))
    layer = text_sources(lm).index(state["source"])
    name, text = list(PASSAGES.items())[state["seed"] % len(PASSAGES)]
    canvas = root.locator('canvas[data-view="heads"]')
    drawn = torch.tensor(json.loads(canvas.get_attribute("data-values")))
    expected = lm.attention(lm.encode(text)[None])[layer][0]  # (H, L, L)
    torch.testing.assert_close(drawn, expected, atol=1e-5, rtol=0)
    package = widgets.explore_once(source=state["source"], seed=state["seed"],
                                   temperature=state["temperature"]).weights
    torch.testing.assert_close(drawn, package, atol=1e-5, rtol=0)
    assert state["seq_len"] == len(text) and state["mask_kind"] == "causal"
    caption = " ".join(json.loads(canvas.get_attribute("data-caption")))  # its lines
    assert f'passage "{name}"' in caption, caption
    label = canvas.get_attribute("aria-label")
    assert "rows: " + " ".join(sources.text_labels(text)) in label  # '␣' and '↵' visible
    return state


def test_the_page_draws_the_models_weights(page, lm):
    fig = live_explorer.explorer_figure({**widgets.DEFAULTS, "temperature": 0.5})
    page.set_content(fig.page())
    root = page.locator('.mha-live[data-figure="explorer"]')
    page.wait_for_function("el => el.dataset.draws >= 1", arg=root.element_handle())
    for source in text_sources(lm):
        page.select_option('[data-knob="source"]', source)
        state = check_drawn(page, root, lm)
        assert state["temperature"] == 1.0  # as trained
        assert page.locator('[data-knob="num_heads"]').is_disabled()
        note = root.locator('[data-view="counts"]').text_content()
        assert "picks the passage" in note and all(n in note for n in PASSAGES)
        titles = sources.head_table(source)["names"]
        assert all(f"head {h}: {n}" in root.locator('canvas[data-view="heads"]').get_attribute(
            "aria-label") for h, n in enumerate(titles))
        table = root.locator('[data-view="table"]').text_content()
        assert "prefix match" in table and "previous" in table
    for seed in (2, len(PASSAGES) - 1):
        set_seed(page, root, seed)
        assert check_drawn(page, root, lm)["seed"] == seed
    assert not page.errors, page.errors


def test_chapter_07_offers_the_shakespeare_model(page, book_url, lm):
    root = open_book_explorer(page, book_url)
    for source in text_sources(lm):
        page.select_option('[data-knob="source"]', source)
        check_drawn(page, root, lm)
    set_seed(page, root, 1)
    check_drawn(page, root, lm)
    assert not page.errors, page.errors
    assert not page.outside, page.outside


def test_the_shakespeare_source_passes_axe(page, lm):
    """axe-core finds no violation in the page's explorer showing the model nor in the kernel's
    view of it (the character labels, the head table)."""
    from live_figures import axe_violations, set_control, show

    source = text_sources(lm)[-1]
    root = show(page, live_explorer.explorer_figure({**widgets.DEFAULTS}))
    set_control(page, root, "source", source)
    assert not axe_violations(page), axe_violations(page)
    show(page, live_explorer.view_figure(widgets.explore_once(source=source, seed=3)))
    assert not axe_violations(page), axe_violations(page)

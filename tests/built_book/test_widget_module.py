"""The explorer's anywidget module (mha.live.picture) in Chromium, without
Jupyter: imported from a Blob URL as anywidget imports it, ``render`` given a
stand-in model, then the model's ``html`` changed as a kernel would change it.
Needs Chromium only (no built book, no JupyterLab)."""

import json

import pytest

from mha.live import picture
from mha_book import widgets
from mha_book.figures import explorer as live_explorer

pytestmark = pytest.mark.browser

# a model as anywidget hands it to render(): get, on, off, and set, which
# fires "change:NAME" as a kernel's update does
SETUP = """async ([esm, html]) => {
  const url = URL.createObjectURL(new Blob([esm], {type: "text/javascript"}));
  const mod = await import(url);
  const on = {}, values = {html: html};
  const fire = (e) => (on[e] || []).forEach((f) => f());
  window.model = {
    get: (k) => values[k],
    set: (k, v) => { values[k] = v; fire("change:" + k); },
    on: (e, f) => { (on[e] = on[e] || []).push(f); },
    off: (e, f) => { on[e] = (on[e] || []).filter((g) => g !== f); },
  };
  window.el = document.createElement("div");  // not in the page yet
  window.cleanup = mod.default.render({model: window.model, el: window.el});
  return typeof mod.default.render;
}"""
PAGE = "<!doctype html><html><body>{}<main></main></body></html>"


def figure_html(**knobs):
    result = widgets.explore_once(**knobs)
    return picture.markup(live_explorer.view_figure(result)), result


def heads(page):
    return page.evaluate(
        "() => { const c = el.querySelector('.mha-live canvas');"
        " return c ? c.dataset.heads : null; }")


def attach(page):
    """Put the view in the page, as Jupyter does after render(), and wait for
    its canvas."""
    page.evaluate("() => document.querySelector('main').appendChild(el)")
    page.wait_for_function("() => !!el.querySelector('.mha-live canvas')",
                           timeout=5_000)


def test_render_draws_and_redraws_from_the_html_trait(page):
    page.set_content(PAGE.format(""))
    first, result = figure_html(num_heads=4, num_kv_heads=4, seq_len=6)
    assert page.evaluate(SETUP, [picture.module(), first]) == "function"
    page.wait_for_timeout(100)
    assert heads(page) is None  # not drawn while out of the page
    attach(page)
    assert heads(page) == "4"
    drawn = json.loads(page.evaluate(
        "() => el.querySelector('.mha-live canvas').dataset.values"))
    want = result.weights.tolist()  # (4, 6, 6)
    assert len(drawn) == 4 and len(drawn[0]) == 6
    assert max(abs(a - b) for g, w in zip(drawn, want) for r, s in zip(g, w)
               for a, b in zip(r, s)) < 1e-5

    second, _ = figure_html(num_heads=2, num_kv_heads=1, seq_len=6)
    page.evaluate("(h) => model.set('html', h)", second)
    assert heads(page) == "2"  # redrawn at once, from the spec alone
    assert page.locator(".mha-live").count() == 1  # the old picture is gone

    page.evaluate("(h) => model.set('html', h)",
                  live_explorer.message_html("no such layer"))
    assert heads(page) is None and "Cannot compute" in page.inner_text("main")
    page.evaluate("() => cleanup()")  # render's clean-up: no more redraws
    page.evaluate("(h) => model.set('html', h)", first)
    assert heads(page) is None
    assert not page.errors, page.errors


def test_a_figure_the_page_cannot_draw_does_not_stop_the_picture(page):
    """An untrusted output's figure whose script Lab took out: the front end
    fails on it (and says so in it), the module still loads and draws."""
    page.set_content(PAGE.format(
        "<div class='mha-live' data-figure='stripped'>"
        "<div class='mha-error'></div></div>"))
    first, _ = figure_html(num_heads=8)
    assert page.evaluate(SETUP, [picture.module(), first]) == "function"
    attach(page)
    assert heads(page) == "8"
    second, _ = figure_html(num_heads=1)
    page.evaluate("(h) => model.set('html', h)", second)
    assert heads(page) == "1"
    stripped = page.locator("[data-figure='stripped'] .mha-error").inner_text()
    assert "could not draw" in stripped
    assert all("textContent" in e for e in page.errors), page.errors

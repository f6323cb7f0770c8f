"""The explorer's picture in a kernel (mha.live.picture): an anywidget whose ES
module is the page's front end, sent once; a change of a control sends only the
figure (its markup and spec). Without anywidget, the old ``Output`` path."""

import json
import re
import shutil
import subprocess

import pytest
import torch

from mha.live import bundles, picture
from mha.live import figure as F
from mha_book import widgets
from mha_book.figures import explorer as live_explorer

pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")

SPEC = re.compile(
    r'<script type="application/json" class="mha-spec">(.*?)</script>', re.S)


def spec_of(html_text):
    (found,) = SPEC.findall(html_text)
    return json.loads(found.replace("<\\/", "</"))


def weights_of(html_text):
    spec = spec_of(html_text)
    (state,) = spec["states"].values()
    return torch.tensor(spec["pool"][state["views"]["heads"]]["grids"])


def test_the_module_is_the_page_script_then_the_widget_entry():
    esm, page = picture.module(), F.script()
    inside = page[len("<script>"):-len("</script>")]
    entry = picture.ENTRY.read_text()
    # the same bundles, no copy of the front end
    assert esm.startswith(f"try {{\n{inside}\n}} catch (err) {{")
    assert esm.endswith(f"}}\n{entry}")
    assert entry not in page and "mha/static/src/widget.js" in entry
    assert "widget_default as default" in entry and "render({ model, el })" in entry
    # the page's script stays a classic script
    assert not re.search(r"^export ", inside, re.M)
    # a module for figures that need the book's bundle: it comes before the engine
    import mha_book.figures  # noqa: F401

    book = picture.module("mha_book")
    assert book.index(bundles.text("mha_book")) < book.index(bundles.text(bundles.ENGINE))
    assert picture.styles() == F.CSS.strip()[len("<style>"):-len("</style>")]


def test_the_module_is_valid_javascript(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node.js to check the module's syntax")
    path = tmp_path / "picture.mjs"
    path.write_text(picture.module("mha_book"))
    done = subprocess.run([node, "--check", str(path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr


def test_markup_is_the_figure_without_styles_and_front_end():
    fig = widgets.temperature_bars([2.0, 1.0, 0.0], ["a", "b", "c"])
    text = picture.markup(fig)
    assert text.startswith(
        '<div class="mha-live" data-figure="temperature-bars"')
    assert "<style" not in text and "window.mhaLive" not in text
    assert text.count("<script") == 1 and spec_of(text) == json.loads(
        json.dumps(fig.spec()))
    assert len(text) < len(fig.html()) - 60_000


def test_the_explorer_picture_is_an_anywidget():
    anywidget = pytest.importorskip("anywidget")
    ex = widgets.explorer(num_heads=4)
    assert isinstance(ex.view, anywidget.AnyWidget)
    assert ex.view in ex.widget.children
    assert ex.view._esm == picture.module() and ex.view._css == picture.styles()
    text = ex.drawn_html()
    assert text == ex.view.html and "window.mhaLive" not in text
    torch.testing.assert_close(weights_of(text), ex.result.weights, atol=1e-6,
                               rtol=0)


def test_a_change_sends_only_the_figure():
    """What reaches the front end when a control moves: one update of the
    picture's ``html`` (the spec, ~12 KB), never its module."""
    pytest.importorskip("anywidget")
    ex = widgets.explorer()
    sent = []
    ex.view.comm.send = lambda data=None, buffers=None, **kw: sent.append(data)
    ex.controls["num_heads"].value = 2
    (msg,) = sent
    assert msg["method"] == "update" and set(msg["state"]) == {"html"}
    size = len(json.dumps(msg))
    assert size < 30_000 and "mhaLive" not in msg["state"]["html"], size
    assert len(weights_of(msg["state"]["html"])) == 2
    ex.controls["view"].value = "lines"  # the other view: the spec again, only
    assert set(sent[-1]["state"]) == {"html"} and len(sent) == 2
    assert '"kind":"lines"' in sent[-1]["state"]["html"]

    def broken(query, key, value, mask):
        raise RuntimeError("oops")

    # a message in place of the picture
    ex = widgets.explorer(attention_fn=broken)
    assert "RuntimeError: oops" in ex.view.html
    assert "mha-spec" not in ex.view.html


def test_without_anywidget_the_picture_is_an_output(monkeypatch):
    import ipywidgets

    monkeypatch.setattr(widgets, "picture_class", lambda: None)
    ex = widgets.explorer(num_heads=2)
    assert isinstance(ex.view, ipywidgets.Output)
    (out,) = ex.view.outputs
    assert ex.drawn_html() == out["data"]["text/html"]
    # the whole front end, at each change
    assert "window.mhaLive = " in ex.drawn_html()
    ex.controls["seq_len"].value = 5
    torch.testing.assert_close(weights_of(ex.drawn_html()), ex.result.weights,
                               atol=1e-6, rtol=0)
    assert ex.result.weights.shape == (2, 5, 5)
    ex.controls["temperature"].value = live_explorer.temperature_grid()[0]
    assert ex.redraws == 3 and ex.result.ok


def test_markup_fails_clearly_when_html_changes_shape(monkeypatch):
    fig = widgets.temperature_bars([2.0, 1.0], ["a", "b"])
    monkeypatch.setattr(type(fig), "html", lambda self: "<div>no script</div>")
    with pytest.raises(ValueError, match="update mha.live.picture"):
        picture.markup(fig)

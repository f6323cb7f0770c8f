"""mha.live.figure: a figure lists every state of its controls, stores each picture once, and
refuses bad declarations with a message naming what is wrong."""

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

import mha_book
import mha_book.figures
from mha.live import bundles, views
from mha.live import figure as F


def tiny(**kw):
    def state(n, flip):
        w = torch.softmax(torch.arange(n, dtype=torch.float32) * (-1 if flip else 1), -1)
        return {"views": {"w": F.bars(w, range(n)), "same": F.table(["a"], [["x", 1]])},
                "readout": f"n = {n}, flip {flip}"}

    return F.Figure(name="tiny", title="Tiny", controls=[F.slider("n", "n", [2, 3, 4], 3),
                                                         F.toggle("flip", "flip")],
                    views=[F.View("w", "bars"), F.View("same", "table")], state_fn=state, **kw)


def test_every_state_is_listed_and_looked_up():
    fig = tiny()
    assert len(fig.states) == 3 * 2
    s = fig.state(n=4, flip=True)
    assert s["readout"] == "n = 4, flip True"
    want = torch.softmax(-torch.arange(4.0), -1)
    torch.testing.assert_close(torch.tensor(s["views"]["w"]["values"]), want, atol=1e-5, rtol=0)


def test_spec_stores_each_picture_once_and_is_json():
    spec = tiny().spec()
    json.dumps(spec, allow_nan=False)
    assert len(spec["pool"]) == 6 + 1  # six different bar charts, one table shared by all
    assert spec["controls"][0]["value"] == 1 and spec["controls"][1]["labels"] == ["off", "on"]
    assert all(isinstance(i, int) for s in spec["states"].values() for i in s["views"].values())


def test_html_carries_spec_and_script_once():
    text = tiny().html()
    assert text.count('<script type="application/json" class="mha-spec">') == 1
    assert text.count("window.mhaLive = ") == 1
    assert "</script" not in text.split('class="mha-spec">')[1].split("</script>")[0]


def test_nan_and_infinity_travel_as_null():
    assert views._numbers([1.0, float("nan"), float("-inf"), 0.1234567]) == [1.0, None, None,
                                                                          0.12346]


@pytest.mark.parametrize("make, words", [
    (lambda: F.slider("a", "a", [1, 2], 3), "value must be one of [1, 2]; got 3"),
    (lambda: F.select("a", "a", [], None), "values must not be empty"),
    (lambda: F.Control("a", "a", "knob", [1], 1), "kind must be one of"),
    (lambda: F.slider("a", "a", [1, 2], 1, labels=["x"]), "labels has 1 entries"),
    (lambda: F.View("v", "pie"), "kind must be one of"),
])
def test_bad_declarations_are_named(make, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        make()


def test_a_state_missing_a_view_is_refused():
    with pytest.raises(ValueError, match="lacks the views"):
        F.Figure(name="x", title="x", controls=[F.toggle("t", "t")],
                 views=[F.View("w", "bars")], state_fn=lambda t: {"views": {}})


def test_unknown_control_in_lookup():
    with pytest.raises(TypeError, match="unknown controls"):
        tiny().state(m=1)


# ----------------------------------------------------------------------------- the design
# "One front end, one-way imports, no module over ~300 lines" (CONTRIBUTING.md, design).

LIVE = Path(F.__file__).resolve().parent
SOURCES = sorted((LIVE.parent / "static" / "src").glob("*.js"))


def test_the_script_is_the_engines_bundle_in_strict_mode():
    text = F.script()
    engine = bundles.text(bundles.ENGINE)
    assert text == f'<script>"use strict";\n{engine}</script>'
    assert engine.startswith("// Built from mha/static/src/ by frontend/build.mjs")
    assert "</script" not in engine and "window.mhaLive = " in engine
    # a figure of the engine alone needs no other bundle
    assert tiny().bundles() == () and tiny().html().count("<script>") == 1


def test_the_engines_bundle_holds_no_book_code():
    engine = bundles.text(bundles.ENGINE)
    assert "// mha_book/" not in engine and "mha/static/src/main.js" in engine
    for compute in ("text-heads", "split-heads", "TextModel", "COMPUTE.explorer"):
        assert compute not in engine


def test_a_figure_carries_the_bundle_of_its_compute():
    import mha_book.figures  # noqa: F401 (registers the book's bundle)

    fig = F.Figure(name="c", title="c", controls=[F.toggle("t", "t")],
                   views=[F.View("w", "text")], compute="split-heads", data={})
    assert fig.bundles() == ("mha_book",)
    text = fig.html()
    book, engine = bundles.text("mha_book"), bundles.text(bundles.ENGINE)
    # one script: the book's bundle first (it registers with the engine that follows)
    assert text.count("<script>") == 1 and text.index(book) < text.index(engine)
    assert F.Figure(name="e", title="e", controls=[], views=[F.View("w", "text")],
                    state_fn=lambda: {"views": {"w": {"text": "x"}}},
                    extensions=("mha_book",)).bundles() == ("mha_book",)


def test_a_compute_no_bundle_provides_is_named():
    with pytest.raises(ValueError, match="no registered bundle provides the in-page compute "
                                         "'nope'"):
        F.Figure(name="c", title="c", controls=[], views=[F.View("w", "text")],
                 compute="nope", data={})
    with pytest.raises(ValueError, match="no front-end bundle 'nope' is registered"):
        F.Figure(name="c", title="c", controls=[], views=[F.View("w", "text")],
                 state_fn=lambda: {"views": {"w": {"text": "x"}}}, extensions=("nope",))
    with pytest.raises(ValueError, match="already registered by bundle 'mha_book'"):
        import mha_book.figures  # noqa: F401

        bundles.register("other", bundles.STATIC / "live.js", computes=["explorer"])


@pytest.mark.parametrize("path", SOURCES + sorted(LIVE.glob("*.py")), ids=lambda p: p.name)
def test_no_front_end_module_is_over_400_lines(path):
    # JS: eslint's max-lines checks the same (make lint); lines of 100 characters at most
    n = len(path.read_text().splitlines())
    cap = 400 if path.suffix == ".js" else 300
    assert n <= cap, f"{path.name} has {n} lines; split it (one module per idea)"


@pytest.mark.parametrize("name", ["mha.live", "mha_book"])
def test_the_bundle_is_valid_javascript(tmp_path, name):
    import mha_book.figures  # noqa: F401

    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node.js to check the script's syntax (the browser tests run it)")
    bundle = tmp_path / "live.js"
    bundle.write_text(bundles.script(name)[len("<script>"):-len("</script>")])
    done = subprocess.run([node, "--check", str(bundle)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_imports_go_one_way():
    """views, style and bundles import nothing of mha.live; figure only them; a figure of the
    book (mha_book/figures/) never imports another figure's module."""
    def imported(path):
        tree = ast.parse(path.read_text())
        found = set()
        for n in ast.walk(tree):  # from .x / . / mha.live.x / mha.live import
            if not isinstance(n, ast.ImportFrom):
                continue
            if n.level == 1:
                found.update([n.module] if n.module else [a.name for a in n.names])
            elif n.module and n.module.startswith("mha.live."):
                found.add(n.module.split(".")[2])
            elif n.module == "mha.live":
                found.update(a.name for a in n.names)
        return found

    assert imported(LIVE / "views.py") == imported(LIVE / "style.py") == set()
    assert imported(LIVE / "figure.py") == {"views", "style", "bundles"}
    assert imported(LIVE / "bundles.py") == set()
    figures = Path(mha_book.figures.__file__).parent
    names = {p.stem for p in figures.glob("*.py") if not p.stem.startswith("_")}  # _registry: the mark
    assert len(names) >= 13
    for path in figures.glob("*.py"):
        if path.stem.startswith("_"):
            continue
        absolute = {n.module.rsplit(".", 1)[-1] for n in ast.walk(ast.parse(path.read_text()))
                    if isinstance(n, ast.ImportFrom) and n.module
                    and n.module.startswith("mha_book.figures.")}
        assert not (imported(path) | absolute) & (names - {path.stem}), path.stem


def test_plot_rings_only_the_series_named():
    d = views.plot([1, 2], {"a": [0.1, 0.2], "b": [0.3, 0.4]}, marker=1, marker_series=[1])
    assert d["marker_series"] == [1] and d["marker"] == 1
    assert views.plot([1], {"a": [0.1]})["marker_series"] is None
    with pytest.raises(ValueError, match=r"marker_series must index the 2 series; got \[2\]"):
        views.plot([1, 2], {"a": [0.1, 0.2], "b": [0.3, 0.4]}, marker=0, marker_series=[2])


def test_bars_say_what_a_missing_value_means():
    d = views.bars([0.5, float("nan")], ["k0", "k1"], null_label="not yet")
    assert d["values"] == [0.5, None] and d["null_label"] == "not yet"
    assert views.bars([1.0], ["k"])["null_label"] == "n/a"


def test_small_values_keep_a_significant_digit():
    assert views._numbers([7.2e-06, -3e-09, 0.0, 0.123456, 2e-4]) == [7e-06, -3e-09, 0.0,
                                                                     0.12346, 0.0002]


def test_heatmap_ticks_and_bar_decimals():
    d = views.heatmap([[0.0, 1.0]], ["q"], ["a", "b"], ticks=[0, 1],
                      tick_labels=["blocked", "may attend"])
    assert d["ticks"] == [0.0, 1.0] and d["tick_labels"] == ["blocked", "may attend"]
    with pytest.raises(ValueError, match=r"ticks must lie in vmin..vmax = 0.0..1.0; got \[2.0\]"):
        views.heatmap([[0.0]], ["q"], ["a"], ticks=[2])
    with pytest.raises(ValueError, match="tick_labels must have one label per tick"):
        views.heatmap([[0.0]], ["q"], ["a"], ticks=[0, 1], tick_labels=["x"])
    assert views.bars([99.96], ["k"], decimals=1)["decimals"] == 1
    assert "decimals" not in views.bars([0.5], ["k"])

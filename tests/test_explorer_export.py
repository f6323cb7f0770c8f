"""The explorer's export for the built book (mha_book.figures.explorer) and its trained source (mha_book.sources).

Round trip: the data the page receives, put through the page's arithmetic (reimplemented here in
numpy, line for line as in mha_book/static/src/explorer.js's compute: split into heads, mask, scores / (sqrt(Dh) T),
softmax), equals ``explore_once`` for the same knobs. The same page code runs in Chromium in
tests/built_book/test_explorer_page.py, and explorer.js itself runs here in Node.js on the
window and sink settings.
"""

import base64
import html
import json
import re
import shutil

import numpy as np
import pytest
import torch
from node_js import BOOK, run_modules

import mha
import mha_book
from mha_book import sources, widgets
from mha_book.figures import explorer as webview


def decode(b64):
    return np.frombuffer(base64.b64decode(b64), dtype="<f4")


def page_attention(q, k, H, Hkv, Dh, Lq, Lk, q_stride, k_stride, T, allowed, sink=None):
    """attention.js ``attention``: weights (H, Lq, Lk) in float64; with a ``sink`` logit s, the
    softmax runs over the tempered scores and s, whose share is dropped."""
    q = q.astype(np.float64).reshape(-1, q_stride)[:Lq]
    k = k.astype(np.float64).reshape(-1, k_stride)[:Lk]
    out = np.zeros((H, Lq, Lk))
    group = H // Hkv
    for h in range(H):
        g = h // group
        s = q[:, h * Dh:(h + 1) * Dh] @ k[:, g * Dh:(g + 1) * Dh].T / (np.sqrt(Dh) * T)
        s = np.where(allowed, s, -np.inf)
        m = s.max(-1, keepdims=True) if sink is None else np.maximum(s.max(-1, keepdims=True),
                                                                     sink)
        with np.errstate(invalid="ignore"):  # a row with no key (and no sink): inf - inf
            e = np.where(allowed, np.exp(s - m), 0.0)
        total = e.sum(-1, keepdims=True) + (0.0 if sink is None else np.exp(sink - m))
        out[h] = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    return out


def page_random(data, num_heads, num_kv_heads, seq_len, temperature, mask_kind, seed, sentence,
                window=None, sink=None):
    """explorer.js ``explorer`` for the random layer."""
    D = data["d_model"]
    Dh, L = D // num_heads, seq_len
    src = data["sources"]["random layer"]
    q = decode(src["q"][f"{seed}|{sentence}"])
    k = decode(src["k"][f"{seed}|{sentence}|{num_kv_heads * Dh}"])
    i, j = np.arange(L)[:, None], np.arange(L)[None, :]
    valid = min(data["lengths"][sentence], L)
    allowed = {"none": np.ones((L, L), bool), "causal": j <= i,
               "padding": np.broadcast_to(j < valid, (L, L))}[mask_kind]
    if window is not None:
        allowed = allowed & (j <= i) & (j > i - window)
    return page_attention(q, k, num_heads, num_kv_heads, Dh, L, L, D, num_kv_heads * Dh,
                          temperature, allowed, sink), data["tokens"][sentence][:L]


@pytest.fixture(scope="module")
def data():
    return webview.explorer_data()


SETTINGS = [
    {},
    {"num_heads": 4, "num_kv_heads": 2, "seq_len": 9, "mask_kind": "causal", "temperature": 0.5},
    {"num_heads": 16, "num_kv_heads": 1, "seq_len": 24, "mask_kind": "padding", "seed": 3,
     "sentence": "counting", "temperature": 2.0},
    {"num_heads": 1, "num_kv_heads": 1, "seq_len": 2, "seed": 4, "sentence": "cat on the mat",
     "temperature": 0.05},
    {"num_heads": 2, "num_kv_heads": 2, "seq_len": 17, "mask_kind": "padding",
     "sentence": "deposit at the bank", "seed": 1},
    # the window and the sink (chapter 14's knobs)
    {"window": 4, "mask_kind": "causal"},
    {"window": 2, "sink": 2.0, "num_heads": 4, "num_kv_heads": 2, "temperature": 0.5},
    {"sink": -2.0, "seed": 3, "sentence": "counting", "temperature": 2.0},
    # 11 words, 20 tokens: the last queries' windows hold only <pad> keys: all to the sink
    {"window": 8, "sink": 0.0, "mask_kind": "padding", "seq_len": 20,
     "sentence": "cat on the mat", "num_heads": 16, "num_kv_heads": 1},
]


@pytest.mark.parametrize("knobs", SETTINGS)
def test_round_trip_random_layer(data, knobs):
    k = {**{key: v for key, v in widgets.DEFAULTS.items() if key not in ("source", "d_model")},
         **knobs}
    weights, tokens = page_random(data, **k)
    expected = widgets.explore_once(**k)
    assert expected.ok and tokens == expected.tokens
    np.testing.assert_allclose(weights, expected.weights.double().numpy(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("source", ["letters model: layer 1", "translator decoder: layer 0",
                                    "translator cross-attention: layer 1"])
@pytest.mark.parametrize("seed,temperature", [(0, 1.0), (4, 0.3)])
def test_round_trip_trained_layer(data, source, seed, temperature):
    src = data["sources"][source]
    view = src["views"][str(seed)]
    Lq, Lk = len(view["tokens_q"]), len(view["tokens_k"])
    allowed = np.tril(np.ones((Lq, Lk), bool)) if src["causal"] else np.ones((Lq, Lk), bool)
    H, Dh = src["H"], src["Dh"]
    weights = page_attention(decode(view["q"]), decode(view["k"]), H, H, Dh, Lq, Lk, H * Dh,
                             H * Dh, temperature, allowed)
    expected = widgets.explore_once(source=source, seed=seed, temperature=temperature)
    assert expected.ok and view["tokens_q"] == expected.tokens
    assert view["tokens_k"] == expected.key_tokens
    np.testing.assert_allclose(weights, expected.weights.double().numpy(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("source,window,sink", [
    ("letters model: layer 1", 4, 2.0),  # trained without a mask: the window makes it causal
    ("translator decoder: layer 0", 2, None),  # causal: the window narrows it
    ("translator encoder: layer 0", None, -2.0),
    ("translator cross-attention: layer 1", None, 4.0),  # a sink, but no window
])
def test_round_trip_trained_layer_window_and_sink(data, source, window, sink):
    src = data["sources"][source]
    view = src["views"]["1"]
    Lq, Lk = len(view["tokens_q"]), len(view["tokens_k"])
    i, j = np.arange(Lq)[:, None], np.arange(Lk)[None, :]
    allowed = j <= i if src["causal"] else np.ones((Lq, Lk), bool)
    if window is not None:
        allowed = allowed & (j <= i) & (j > i - window)
    H, Dh = src["H"], src["Dh"]
    weights = page_attention(decode(view["q"]), decode(view["k"]), H, H, Dh, Lq, Lk, H * Dh,
                             H * Dh, 0.5, allowed, sink)
    expected = widgets.explore_once(source=source, seed=1, temperature=0.5, window=window,
                                    sink=sink)
    assert expected.ok, expected.message
    np.testing.assert_allclose(weights, expected.weights.double().numpy(), atol=1e-5, rtol=0)
    if sink is not None:
        rows = expected.weights.sum(-1)  # (H, Lq): a sharp trained head leaves it almost 0
        assert rows.max() <= 1 + 1e-6 and rows.mean() < 1


# ------------------------------------------------------------------------ explorer.js in Node.js

NODE = shutil.which("node")


def run_page_compute(tmp_path, data, settings):
    """The page's explorer compute (mha_book/static/src/explorer.js, imported as an ES module)
    in Node.js, once per setting of the page's controls: [{grids, caption, state, unused,
    disabled}]."""
    body = (f"emit({json.dumps(settings)}.map((v) => {{\n"
            "  const st = ex.explorer(v, data, null, {});\n"
            "  return {grids: st.views.heads.grids, caption: st.views.heads.caption,\n"
            "    state: st.state, unused: st.unused, disabled: st.disabled,\n"
            "    masked: st.views.heads.masked || null, fit: st.views.heads.fit,\n"
            "    readout: st.readout, counts: st.views.counts.text};\n}));")
    return run_modules(tmp_path, {"ex": BOOK / "explorer.js"}, body, data=data)


def page_knobs(**knobs):
    """The page's controls (``explorer_figure``'s names: "mask", not "mask_kind")."""
    v = {**widgets.DEFAULTS, "view": "heatmaps", **knobs}
    v["mask"] = v.pop("mask_kind")
    return v


def said(pattern, caption):
    found = re.search(pattern, caption)
    return found and found.group()


def test_the_pages_compute_in_node_is_explore_once_with_window_and_sink(tmp_path, data):
    """explorer.js itself (not a copy in numpy): its weights equal explore_once's to 1e-5 for
    window and sink settings of the random layer and of trained sources, its captions say the
    same window and the same share of the weight on the sink, and a cross-attention source
    leaves the window out (greyed out, a dash)."""
    text = next(s for s in widgets.SOURCES if s.startswith("Shakespeare model"))
    cross = "translator cross-attention: layer 1"
    settings = [
        page_knobs(),  # everything off: as before
        page_knobs(window=4),
        page_knobs(window=2, sink=2.0, num_heads=4, num_kv_heads=2, temperature=0.5,
                   mask_kind="causal"),
        page_knobs(sink=-2.0, seed=3, sentence="counting", temperature=2.0),
        page_knobs(window=8, sink=0.0, mask_kind="padding", seq_len=20,
                   sentence="cat on the mat", num_heads=16, num_kv_heads=1),
        page_knobs(source="letters model: layer 1", window=4, sink=2.0, seed=2),
        page_knobs(source="translator decoder: layer 0", window=2, temperature=0.5),
        page_knobs(source=cross, window=4, sink=0.0, seed=1),
        page_knobs(source=text, window=8, sink=4.0, seed=1),
    ]
    names = {"random layer", *(v["source"] for v in settings)}
    small = {**data, "sources": {n: data["sources"][n] for n in names}}
    for v, got in zip(settings, run_page_compute(tmp_path, small, settings)):
        s = got["state"]
        knobs = {k: s[k] for k in ("source", "seed", "temperature", "window", "sink")}
        if s["source"] == "random layer":
            knobs.update({k: s[k] for k in ("num_heads", "num_kv_heads", "seq_len", "mask_kind",
                                            "sentence")})
        expected = widgets.explore_once(**knobs)
        assert expected.ok, (v, expected.message)
        assert (s["window"], s["sink"]) == (None if v["source"] == cross else v["window"],
                                           v["sink"])
        torch.testing.assert_close(torch.tensor(got["grids"], dtype=torch.float64),
                                   expected.weights.double(), atol=1e-5, rtol=0)
        heads = webview.payload(expected)["heads"]
        caption = heads["caption"]
        # the cells a mask or window blocks, drawn blank (not as weights near 0): the same
        # cells in the page and in Jupyter, and none without a mask
        assert got["masked"] == heads.get("masked"), v
        blocked = None if expected.mask is None else (~expected.mask).tolist()
        if blocked is not None and any(map(any, blocked)):
            assert [[c == "1" for c in row] for row in got["masked"]] == blocked, v
            assert (expected.weights[:, ~expected.mask] == 0).all()
        else:
            assert got["masked"] is None, v
        assert got["fit"] is True and heads["fit"] is True
        for pattern in (r", causal window \d+", r", sink s = .*"):
            assert said(pattern, got["caption"]) == said(pattern, caption), (pattern, v)
        # one template (webview.CAPTIONS) for both: the same words, the same numbers
        assert got["caption"] == caption and got["readout"] == caption + ".", v
        assert bool(said("sink", got["caption"])) == (v["sink"] is not None)
        assert bool(said("window", got["caption"])) == (s["window"] is not None)
        trained = s["source"] != "random layer"
        assert bool(got["disabled"]["window"]) == (v["source"] == cross)
        assert bool(trained and got["unused"]["window"]) == (v["source"] == cross)
    last = widgets.explore_once(window=8, sink=0.0, mask_kind="padding", seq_len=20,
                                sentence="cat on the mat", num_heads=16, num_kv_heads=1)
    assert last.weights[:, -1].abs().max() == 0  # query 19 sees only <pad> keys: all to the sink


def test_window_and_sink_controls_in_the_page(data):
    """Off by default (the page as before); a reader's own value joins the choices; a value the
    knob cannot take is a ValueError naming it; the export says which sources are cross."""
    default = {c.name: c for c in webview.explorer_figure(widgets.DEFAULTS, data).controls}
    assert default["window"].value is None and default["sink"].value is None
    assert default["window"].values == list(widgets.WINDOWS)
    assert default["window"].labels == ["off", "2 positions", "4 positions", "8 positions"]
    assert default["sink"].labels == ["off", "s = -2", "s = 0", "s = 2", "s = 4"]
    mine = {c.name: c for c in webview.explorer_figure(
        {**widgets.DEFAULTS, "window": 3, "sink": 1}, data).controls}
    assert mine["window"].values == [None, 2, 3, 4, 8] and mine["window"].value == 3
    assert mine["sink"].values == [None, -2.0, 0.0, 1.0, 2.0, 4.0] and mine["sink"].value == 1
    for knobs, word in (({"window": 0}, "window"), ({"window": 2.5}, "window"),
                        ({"sink": float("nan")}, "sink"), ({"sink": "2"}, "sink")):
        with pytest.raises(ValueError, match=f"^{word} must be None"):
            webview.explorer_figure({**widgets.DEFAULTS, **knobs}, data)
    for name, src in data["sources"].items():
        if name != "random layer":
            assert src["cross"] == name.startswith("translator cross-attention"), name


def test_export_covers_every_static_combination(data):
    src = data["sources"]["random layer"]
    D = data["d_model"]
    for H in webview.STATIC_HEADS:
        for Hkv in (h for h in range(1, H + 1) if H % h == 0):
            for seed in webview.STATIC_SEEDS:
                for sentence in widgets.EXAMPLE_SENTENCES:
                    q = decode(src["q"][f"{seed}|{sentence}"])
                    k = decode(src["k"][f"{seed}|{sentence}|{Hkv * D // H}"])
                    assert q.size == webview.MAX_LEN * D
                    assert k.size == webview.MAX_LEN * Hkv * D // H
            for L in range(2, webview.MAX_LEN + 1):
                params, flops, kv = data["counts"][f"{H},{Hkv},{L}"]
                assert params == mha.counts.count_parameters(D, H, Hkv)["total"]
                assert flops == mha.counts.count_flops(L, D, H, Hkv)["total"]
    assert set(data["sources"]) == set(widgets.SOURCES)
    text = {s for s, (_, _, kind) in sources.TRAINED_SOURCES.items() if kind == "text"}
    rest = {name: src for name, src in data["sources"].items() if name not in text}
    assert len(json.dumps({**data, "sources": rest})) < 1_200_000  # the page stays light
    # with chapter 10's model: float32 queries and keys of its passages, about 1.5 MB
    # (tests/test_explorer_text_source.py); chapter 07's page must stay under 3 MB
    assert len(json.dumps(data)) < 2_700_000


# ----------------------------------------------------------------------------- trained source

def test_trained_source_is_the_models_own_attention():
    model = mha_book.tiny.load_pretrained("multitask")
    batch = mha_book.tasks.make_task("multitask").sample(1, seed=2)
    with torch.no_grad(), mha.record_attention(model) as recorded:
        model(batch.inputs)
    for n in (0, 1):
        r = widgets.explore_once(source=f"letters model: layer {n}", seed=2)
        assert r.ok and r.weights.shape == (4, 16, 16)
        torch.testing.assert_close(r.weights, recorded[f"encoder.layers.{n}.self_attn"][0],
                                   atol=1e-5, rtol=0)
    cold = widgets.explore_once(source="letters model: layer 1", seed=2, temperature=0.2)
    assert cold.weights.max(-1).values.mean() > r.weights.max(-1).values.mean()
    assert cold.config["num_heads"] == 4 and cold.config["seq_len"] == 16


def test_trained_source_translator_layers_and_mask():
    model = mha_book.tiny.load_pretrained("translation")
    batch = mha_book.tasks.make_task("translation").sample(1, seed=1)
    with torch.no_grad(), mha.record_attention(model) as recorded:
        model(batch.inputs, batch.decoder_inputs)
    for source, (_, layer, kind) in sources.TRAINED_SOURCES.items():
        if not source.startswith("translator"):
            continue
        r = widgets.explore_once(source=source, seed=1)
        torch.testing.assert_close(r.weights, recorded[layer][0], atol=1e-5, rtol=0)
        assert r.config["mask_kind"] == ("causal" if kind == "decoder" else "none")
    cross = widgets.explore_once(source="translator cross-attention: layer 0", seed=1)
    assert cross.weights.shape == (4, 12, 9) and len(cross.key_tokens) == 9


def test_head_table_names_chapter_08s_heads():
    layer0 = sources.head_table("letters model: layer 0")
    layer1 = sources.head_table("letters model: layer 1")
    assert "previous-token head" in layer0["names"]  # chapter 08: previous-token head in layer 0
    assert layer1["names"].count("induction head") >= 1
    names = layer0["names"] + layer1["names"]
    first = layer0["columns"].index("first")
    scores = [row[1 + first] for row in layer0["rows"] + layer1["rows"]]
    assert sum(s > 0.95 for s in scores) == 5  # chapter 08 asserts five first-token heads
    assert names.count("first-token head") == 5
    assert layer1["names"].count("induction head") == 1  # chapter 08 names one: head 1
    assert layer1["names"][1] == "induction head" and layer1["names"][3] == "mixed"
    cross = sources.head_table("translator cross-attention: layer 1")
    assert cross["columns"][:3] == ["article", "noun", "adjective"]
    assert max(row[1] for row in cross["rows"]) > 0.95  # an article head, as in chapter 08
    assert cross["names"][1] == "article aligner"
    # a head whose best two scores are close (0.53 adjective, 0.48 noun) is not named
    assert sources.head_table("translator cross-attention: layer 0")["names"][0] == "mixed"
    for table in (layer0, layer1, cross):
        for row, name in zip(table["rows"], table["names"]):
            top, second = sorted(row[1:], reverse=True)[:2]
            named = top > sources.NAME_MIN and top - second >= sources.NAME_MARGIN
            assert (name != "mixed") == named


def test_head_table_uses_chapter_08s_inputs():
    """The explorer's scores are the numbers of chapter 08's tables: same inputs, same sums."""
    model = mha_book.tiny.load_pretrained("translation")
    task = mha_book.tasks.make_task("translation")
    batch = task.sample(200, seed=1)  # chapter 08's cross-attention table
    with torch.no_grad(), mha.record_attention(model) as recorded:
        model(batch.inputs, batch.decoder_inputs)
    w = recorded["decoder.layers.0.cross_attn"]
    aligned = task.alignment_mask(len(batch.inputs))
    on_aligned = (w * aligned[:, None]).sum(-1).mean(0)  # (H, Lt)
    where = [j for j, r in enumerate(task.target_roles) if r == "adjective"]
    table = sources.head_table("translator cross-attention: layer 0")
    column = table["columns"].index("adjective")
    got = torch.tensor([row[1 + column] for row in table["rows"]])
    torch.testing.assert_close(got, on_aligned[:, where].mean(-1), atol=1e-4, rtol=0)


def test_unknown_source_is_a_message_and_a_value_error():
    r = widgets.explore_once(source="gpt-5")
    assert not r.ok and "source must be one of" in r.message
    with pytest.raises(ValueError, match="source"):
        sources.trained_view("gpt-5", 0)


# ----------------------------------------------------------------------------- the HTML

def test_static_html_labels_every_control_and_greys_out_what_needs_python(data):
    fig = webview.explorer_figure(widgets.DEFAULTS, data)
    controls = fig.spec()["controls"]
    assert len(controls) == 12 and all(c["label"] for c in controls)  # 11 knobs + view
    assert [c["name"] for c in controls if c["disabled"]] == ["d_model"]
    html_text = fig.html()
    assert "no kernel" in html_text and "Colab" in html_text
    assert "https://" not in html_text and "http://" not in html_text  # nothing from outside
    assert html_text.count('<script type="application/json" class="mha-spec">') == 1
    assert "window.mhaLive = " in html_text


def test_display_publishes_the_widget_and_the_static_html():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    published = []
    original = shell.display_pub.publish
    shell.display_pub.publish = lambda data, *a, **kw: published.append(data)
    try:
        widgets.explorer(seed=2)._ipython_display_()
    finally:
        shell.display_pub.publish = original
    (bundle,) = published
    assert {"text/plain", "text/html", widgets.WIDGET_VIEW} <= set(bundle)
    assert bundle[widgets.WIDGET_VIEW]["model_id"]
    assert 'data-figure="explorer"' in bundle["text/html"]
    # chapter 01's slider needs no kernel anywhere: one HTML output, no widget
    bars, _ = shell.display_formatter.format(
        widgets.temperature_bars([2.0, 1.0, 0.0], ["a", "b", "c"], value=0.5))
    assert 'data-figure="temperature-bars"' in bars["text/html"]
    assert widgets.WIDGET_VIEW not in bars


def test_frozen_html_for_a_readers_function():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")

    def uniform(query, key, value, mask):
        w = torch.full(query.shape[:-1] + (key.size(-2),), 1 / key.size(-2))
        return w @ value, w

    html_text = widgets.explorer(attention_fn=uniform).static_html()
    assert "Needs a live kernel" in html_text and '"controls":[]' in html_text  # no dead controls
    assert "mha-live" in html_text


def test_temperature_bars_weights_and_checks():
    scores = torch.tensor([2.0, 1.6, 0.0])
    bars = widgets.temperature_bars(scores, ["Michael", "Bay", "as"], value=1.0)
    grid = bars.controls[0].values
    assert 1.0 in grid and 0.5 in grid and 2.0 in grid and grid[0] < 0.012 and grid[-1] > 90
    for T in (grid[0], 0.5, 1.0, grid[-1]):
        drawn = bars.state(temperature=T)["views"]["weights"]["values"]
        torch.testing.assert_close(torch.tensor(drawn), torch.softmax(scores / T, -1),
                                   atol=1e-5, rtol=0)
    assert bars.state(temperature=grid[0])["views"]["weights"]["values"][0] > 0.99
    with pytest.raises(ValueError, match="tokens"):
        widgets.temperature_bars([1.0, 2.0], ["a"])
    with pytest.raises(ValueError, match="value"):
        widgets.temperature_bars([1.0, 2.0], ["a", "b"], value=0)


def test_pattern_tables_say_the_patterns_overlap():
    """A row of pattern scores need not sum to 1 (for query 0, self and first are one key): the
    caption says so; cross-attention alignment tables are left as they are."""
    for name in ("letters model: layer 0", "letters model: layer 1"):
        t = webview._table(sources.head_table(name))
        assert t["caption"].endswith(webview.OVERLAP) and "overlap" in webview.OVERLAP
        assert any(abs(sum(r[1:]) - 1) > 0.05 for r in t["rows"])  # indeed not a partition
    cross = webview._table(sources.head_table("translator cross-attention: layer 1"))
    assert webview.OVERLAP not in cross["caption"]


def test_the_title_gives_L():
    """The readout line gives L, so it ties to 2 x L x h_kv x d_k (the KV cache)."""
    r = widgets.explore_once(seq_len=14, num_heads=8, num_kv_heads=2)
    assert webview.payload(r)["heads"]["caption"].startswith("8 heads, 2 key/value heads, "
                                                             "L = 14, d_model = 64,")
    t = widgets.explore_once(source="letters model: layer 1")
    assert f", L = {len(t.tokens)}, T = " in webview.payload(t)["heads"]["caption"]
    one = widgets.explore_once(seq_len=6, num_heads=1, num_kv_heads=1)
    assert webview.payload(one)["heads"]["caption"].startswith("1 head, L = 6,")
    kv1 = widgets.explore_once(seq_len=6, num_heads=4, num_kv_heads=1)
    assert webview.payload(kv1)["heads"]["caption"].startswith("4 heads, 1 key/value head, ")


def test_temperature_stops_are_even_on_a_log_scale_with_the_chapters_values(data):
    """The slider used to stop at 10.08 and 17.96 while chapter 07 names T = 0.1, 0.5, 1 and 10:
    those are stops now, with 0.05 and 20 at the ends, and every step multiplies T by about
    1.26 (within 0.2%); the labels are the page titles' two decimals."""
    import math

    slider = webview.explorer_figure({**widgets.DEFAULTS, "temperature": 0.5}, data).controls[5]
    grid = slider.values
    for t in (0.05, 0.1, 0.5, 1.0, 10.0, 20.0):
        assert t in grid, t
    assert grid[0] == 0.05 and grid[-1] == 20.0 and slider.value == 0.5
    ratios = [b / a for a, b in zip(grid, grid[1:])]
    assert max(ratios) / min(ratios) < 1.002
    assert abs(math.log10(ratios[0]) - 0.1) < 0.001  # ten steps per decade
    assert slider.labels[grid.index(10.0)] == "10.00" and slider.labels[grid.index(0.1)] == "0.10"
    assert len(set(slider.labels)) == len(grid)
    # a starting value off the stops is put on them exactly
    assert 0.37 in webview.temperature_grid(0.37) and 20.0 in webview.temperature_grid(0.37)
    with pytest.raises(ValueError, match="temperature"):
        webview.temperature_grid(0)


def test_the_widgets_temperature_slider_has_the_pages_stops():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    ex = widgets.explorer(temperature=0.5)
    options = ex.controls["temperature"].options
    assert [v for _, v in options] == webview.temperature_grid(0.5)
    assert [label for label, _ in options] == webview.temperature_labels(
        webview.temperature_grid(0.5))
    ex.controls["temperature"].value = 10.0
    assert ex.result.ok and ex.result.config["temperature"] == 10.0


def test_translator_notes_say_what_the_rows_are():
    """The decoder's rows are its input tokens, cross-attention's the words being written: the
    page's note and the widget's say which, the same words; other sources say nothing of it."""
    from mha_book.explore import explore_once
    from mha_book.figures.explorer import explorer_data
    from mha_book.sources import rows_said

    sources = explorer_data()["sources"]
    for name in ("translator decoder: layer 0", "translator cross-attention: layer 1"):
        said = rows_said(name)
        assert said and said in sources[name]["note"]
        assert html.escape(said) in explore_once(source=name).counts_html()
    assert "input tokens" in rows_said("translator decoder: layer 1")
    assert "words being written" in rows_said("translator cross-attention: layer 0")
    for name in ("letters model: layer 0", "translator encoder: layer 0"):
        assert rows_said(name) == "" and "Rows" not in sources[name]["note"]

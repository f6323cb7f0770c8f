"""The Shakespeare model's live figure (mha_book.figures.text_heads): what Python exports for the page's forward pass, the
passages, the text box control, and bad arguments. The page's own numbers are checked in
Chromium (tests/built_book/test_live_shakespeare_heads.py); here the front end's model (lm.js) also runs
in Node.js, when it is installed, against the package."""

import base64
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch
from node_js import BOOK, run_modules

from mha import head_scores
from mha.live import figure as F
from mha_book.figures import shakespeare_heads as T
from mha_book.figures import text_heads
from mha_book.language_model import VOCAB, load_language_model

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "data" / "shakespeare"


@pytest.fixture(scope="module")
def lm():
    return load_language_model()


@pytest.fixture(scope="module")
def fig():
    return text_heads()


def halves(b64, shape):
    data = np.frombuffer(base64.b64decode(b64), dtype="<f2").astype(np.float32)
    return torch.from_numpy(data.copy()).reshape(shape)


def test_the_export_is_the_state_dict_exactly(lm):
    data = T.model_data(lm)
    state = lm.state_dict()
    assert list(data["weights"]) == T.needed_parameters(lm)
    for name, b64 in data["weights"].items():
        assert data["shapes"][name] == list(state[name].shape)
        assert torch.equal(halves(b64, state[name].shape), state[name]), name
    c = data["config"]
    assert {k: c[k] for k in lm.config} == lm.config
    assert c["eps"] == lm.encoder.layers[0].res_attn.norm.eps == 1e-5
    assert c["d_head"] * c["num_heads"] == c["d_model"] and c["num_kv_heads"] == c["num_heads"]
    json.dumps(data, allow_nan=False)


def test_what_is_left_out_changes_no_weight(lm):
    """The page skips the last layer's W_v, W_o and feed-forward, the final LayerNorm and the
    readout: changing them leaves every weight as it was; changing a kept one does not."""
    kept = set(T.needed_parameters(lm))
    left = [n for n in lm.state_dict() if n not in kept]
    last = lm.num_layers - 1
    assert f"encoder.layers.{last}.self_attn.W_v.weight" in left
    assert f"encoder.layers.{last}.ff.0.weight" in left and "readout.weight" in left
    assert "encoder.norm.weight" in left
    assert f"encoder.layers.{last}.self_attn.W_k.weight" in kept
    ids = lm.encode(T.PASSAGES["Sonnet 18"])[None]
    before = torch.cat(lm.attention(ids))
    model = load_language_model()
    params = dict(model.named_parameters())
    with torch.no_grad():
        for n in left:
            params[n].add_(torch.randn_like(params[n]))
        torch.testing.assert_close(torch.cat(model.attention(ids)), before, atol=0, rtol=0)
        params[f"encoder.layers.{last}.self_attn.W_k.weight"].mul_(2)
        assert not torch.allclose(torch.cat(model.attention(ids)), before, atol=1e-3)


def test_passages_fit_the_model_and_repeat_themselves(lm):
    assert 4 <= len(T.PASSAGES) <= 5
    for name, text in T.PASSAGES.items():
        assert 0 < len(text) <= lm.context_length, name
        assert set(text) <= set(VOCAB), name
        assert head_scores.prefix_match_targets(lm.encode(text), T.N_PREFIX).any(), name
    assert any("." + "\n" in t and t.split("\n")[0].isupper() for t in T.PASSAGES.values()), \
        "a dialogue with the corpus's speaker tags (ANTONY.)"


def test_text_state_is_the_packages(lm):
    text = T.PASSAGES["Julius Caesar: Antony"]
    st = T.text_state(text)
    ids = lm.encode(text)
    w = torch.cat(lm.attention(ids[None]))
    L = len(text)
    assert st["weights"].shape == (lm.num_layers, lm.num_heads, L, L)
    torch.testing.assert_close(st["weights"], w)
    torch.testing.assert_close(st["weights"].sum(-1), torch.ones(lm.num_layers, lm.num_heads, L))
    assert (st["weights"].triu(1) == 0).all()  # causal
    torch.testing.assert_close(st["previous"][1], head_scores.previous_token_score(w[1:2]))
    torch.testing.assert_close(st["prefix"][0], head_scores.prefix_match_score(w[0], ids, 2))
    assert st["matches"] == int(head_scores.prefix_match_targets(ids, 2).any(-1).sum()) > 0
    one = T.text_state("A")
    assert one["previous"] is None and one["matches"] == 0 and torch.isnan(one["prefix"]).all()


def test_token_labels_show_space_and_newline():
    assert T.token_labels("a b\nc") == ["a", "\u2423", "b", "\u21b5", "c"]


def test_the_figure(fig, lm):
    spec = fig.spec()
    assert spec["compute"] == "text-heads" and fig.alt and "states" not in spec
    kinds = {c["name"]: c["kind"] for c in spec["controls"]}
    assert kinds == {"passage": "select", "text": "text", "layer": "select", "head": "select"}
    box = spec["controls"][1]
    assert box["max_length"] == lm.context_length and box["value"] == next(iter(T.PASSAGES.values()))
    passage = spec["controls"][0]
    assert passage["values"] == [*T.PASSAGES, ""] and passage["labels"][-1] == "your own text"
    assert spec["controls"][2]["values"] == list(range(lm.num_layers))
    assert spec["controls"][3]["values"] == list(range(lm.num_heads))
    # the lines view starts at the head that matches prefixes most on the starting text
    prefix = T.text_state(box["value"])["prefix"].nan_to_num(-1.0)
    layer, head = divmod(int(prefix.flatten().argmax()), lm.num_heads)
    assert (spec["controls"][2]["value"], spec["controls"][3]["value"]) == (layer, head)
    assert [v["kind"] for v in spec["views"]] == ["heatmap", "lines", "table"]
    assert spec["data"]["vocab"] == VOCAB and spec["data"]["n"] == 2
    assert fig.html().count('class="mha-spec"') == 1
    own = text_heads(text="To be, or not")  # not a passage: the select says "your own text"
    assert own.spec()["controls"][0]["value"] == len(T.PASSAGES)
    assert own.spec()["controls"][1]["value"] == "To be, or not"
    mine = text_heads(passages={"two": "abab abab"})
    assert mine.spec()["data"]["names"] == ["two"] and mine.spec()["controls"][1]["value"] == "abab abab"


@pytest.mark.parametrize("kwargs,error,words", [
    ({"text": "It costs 5 pounds"}, ValueError, "outside the model's vocabulary: '5'"),
    ({"text": ""}, ValueError, "empty"),
    ({"text": "a" * 10_000}, ValueError, "reads at most"),
    ({"text": 5}, ValueError, "must be a str"),
    ({"passages": {}}, TypeError, "non-empty dict"),
    ({"passages": ["To be"]}, TypeError, "non-empty dict"),
    ({"passages": {"x": "caf\u00e9"}}, ValueError, "passage 'x'.*'\u00e9'"),
    ({"passages": {"your own text": "abc"}}, ValueError, "names must be"),
    ({"passages": {"": "abc"}}, ValueError, "names must be"),
])
def test_bad_arguments_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        text_heads(**kwargs)


def test_the_text_box_control():
    c = F.textbox("t", "your text", "abc", 8)
    assert c.spec() == {"name": "t", "label": "your text", "kind": "text", "values": [],
                        "labels": [], "value": "abc", "max_length": 8, "disabled": False}
    assert "text" in F.CONTROL_KINDS
    assert text_heads().bundles() == ("mha_book",)  # the model runs in the book's bundle
    with pytest.raises(ValueError, match="max_length must be a positive int"):
        F.textbox("t", "t", "abc", 0)
    with pytest.raises(ValueError, match="4 characters; max_length is 3"):
        F.textbox("t", "t", "abcd", 3)
    with pytest.raises(TypeError, match="must be a str"):
        F.textbox("t", "t", 5, 3)
    with pytest.raises(ValueError, match="lists no values"):
        F.Control("t", "t", "text", ["a"], "a", max_length=3)
    with pytest.raises(ValueError, match="needs an in-page compute"):
        F.Figure("f", "f", [c], [F.View("v", "text")], state_fn=lambda t: {})


# ----------------------------------------------------------------------------- lm.js in Node.js

NODE = shutil.which("node")


def run_node(tmp_path, body):
    """``body`` in Node.js with the page's model (mha_book/static/src/lm.js: TextModel, its head
    scores) and its arithmetic (lm_math.js: erf, erfTable), imported from the ES modules."""
    return run_modules(tmp_path, {"lm": BOOK / "lm.js", "lm_math": BOOK / "lm_math.js"},
                       "const { TextModel } = lm;\nconst { erf, erfTable } = lm_math;\n" + body)


def test_the_pages_erf_is_accurate_to_1e_7(tmp_path):
    """erf (series and continued fraction) and erfTable (its table, interpolated: the GELU's)"""
    xs = [i / 997 - 8 for i in range(15953)]
    got = run_node(tmp_path, f"var xs = {json.dumps(xs)}; "
                             f"console.log(JSON.stringify([xs.map(erf), xs.map(erfTable)]));")
    for name, values in zip(("erf", "erfTable"), got):
        worst = max(abs(g - math.erf(x)) for g, x in zip(values, xs))
        assert worst < 1e-7, (name, worst)


def test_the_pages_model_in_node_is_the_packages(tmp_path, lm):
    """lm.js's forward pass equals lm.attention to 1e-4; typing at the end and editing the
    start (the page reuses what did not change) give the same as a text computed afresh."""
    texts = [T.PASSAGES["Twelfth Night: the Duke"], T.PASSAGES["Twelfth Night: the Duke"] + "X",
             "Y" + T.PASSAGES["Twelfth Night: the Duke"][1:], "Yes"]
    body = f"""
    var data = {json.dumps(T.model_data(lm))}, texts = {json.dumps(texts)}, out = [];
    var m = new TextModel(data);
    texts.forEach(function (t) {{
      m.run(t.split("").map(function (c) {{ return m.index[c]; }}));
      var w = m.W.map(function (hs) {{ return hs.map(function (W) {{
        var g = []; for (var i = 0; i < t.length; i++) g.push(Array.from(W.subarray(i * m.C, i * m.C + t.length)));
        return g; }}); }});
      out.push({{ w: w, scores: m.scores(t.length, 2) }});
    }});
    console.log(JSON.stringify(out));"""
    for text, got in zip(texts, run_node(tmp_path, body)):
        want = T.text_state(text)
        diff = (torch.tensor(got["w"]) - want["weights"]).abs().max().item()
        assert diff < 1e-4, (text, diff)
        torch.testing.assert_close(torch.tensor(got["scores"]["previous"]), want["previous"],
                                   atol=1e-5, rtol=0)
        prefix = torch.tensor([[math.nan if x is None else x for x in r]
                               for r in got["scores"]["prefix"]])
        torch.testing.assert_close(prefix, want["prefix"], atol=1e-5, rtol=0, equal_nan=True)
        assert got["scores"]["matches"] == want["matches"]


def test_the_pages_model_reads_its_sizes_from_the_config(tmp_path):
    """Another size (3 layers of 3 heads, d_model 24, context 40), saved in float16 as the
    shipped file is: the page's forward pass still equals the package's."""
    from mha_book.language_model import LanguageModel, save_language_model

    torch.manual_seed(0)
    model = LanguageModel(context_length=40, d_model=24, num_heads=3, num_layers=3, d_ff=40)
    small = load_language_model(save_language_model(model, tmp_path / "small.pt"))
    text = "abab, abab! To be, or not to be: abab"
    body = f"""
    var m = new TextModel({json.dumps(T.model_data(small))}), t = {json.dumps(text)};
    m.run(t.split("").map(function (c) {{ return m.index[c]; }}));
    console.log(JSON.stringify(m.W.map(function (hs) {{ return hs.map(function (W) {{
      var g = []; for (var i = 0; i < t.length; i++) g.push(Array.from(W.subarray(i * m.C, i * m.C + t.length)));
      return g; }}); }})));"""
    got = torch.tensor(run_node(tmp_path, body))
    want = torch.cat(small.attention(small.encode(text)[None]))
    assert got.shape == want.shape == (3, 3, len(text), len(text))
    assert (got - want).abs().max().item() < 1e-4


@pytest.mark.parametrize("positions", ["sinusoidal", "rotary"])
def test_the_pages_model_follows_the_positions(tmp_path, positions):
    """A model whose positions are a fixed sinusoidal table or rotary (queries and keys rotated,
    no table), saved in float16: the page's forward pass equals the package's to 1e-4, also
    when it reuses what a text shares with the last one (typing at the end, editing the start)."""
    from mha.rotary import RotaryMultiHeadAttention
    from mha_book.language_model import LanguageModel, save_language_model

    torch.manual_seed(0)
    model = LanguageModel(context_length=32, d_model=32, num_heads=4, num_layers=2, d_ff=64,
                          positions=positions)
    small = load_language_model(save_language_model(model, tmp_path / f"{positions}.pt"))
    rotary = positions == "rotary"
    assert isinstance(small.encoder.layers[0].self_attn, RotaryMultiHeadAttention) == rotary
    data = T.model_data(small)
    assert data["config"]["positions"] == positions
    if rotary:
        assert (data["config"]["rope_base"], data["config"]["rope_interleaved"]) == (10000.0, False)
    texts = ["abab, abab! To be, or not to be", "abab, abab! To be, or not to be:",
             "Xbab, abab! To be, or not to be:", "abab"]
    body = f"""
    var m = new TextModel({json.dumps(data)}), texts = {json.dumps(texts)}, out = [];
    texts.forEach(function (t) {{
      m.run(t.split("").map(function (c) {{ return m.index[c]; }}));
      out.push(m.W.map(function (hs) {{ return hs.map(function (W) {{
        var g = []; for (var i = 0; i < t.length; i++) g.push(Array.from(W.subarray(i * m.C, i * m.C + t.length)));
        return g; }}); }}));
    }});
    console.log(JSON.stringify(out));"""
    for text, got in zip(texts, run_node(tmp_path, body)):
        got = torch.tensor(got)
        want = torch.cat(small.attention(small.encode(text)[None]))
        assert got.shape == want.shape == (2, 4, len(text), len(text))
        assert (got - want).abs().max().item() < 1e-4, text

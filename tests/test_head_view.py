"""mha.head_view: any model's heads as one live figure (mha.head_figure).

What the figure lists is the weights it was given (every layer, heatmaps and
lines, to the page's rounding), for every form the weights come in: one
tensor, a list or tuple per layer, a stack, record_attention's dict, numpy,
any float dtype, tensors that need grad; a Hugging Face BERT and GPT-2 built
from tiny random configs (no download) drawn from ``outputs.attentions``;
every bad input refused with a message naming the argument. The page itself
is tested in Chromium in tests/built_book/test_head_view_page.py.
"""

import json
import re
import subprocess
import sys

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import mha
import mha_book
from mha import head_figure
from mha.live.figure import MAX_STATES, Figure

ATOL = 1e-4  # the page keeps 4 decimals (head_figure.DIGITS)


def softmax_weights(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(3 * torch.randn(*shape, generator=g), -1)


def drawn(fig, view, **values):
    """The (H, L, S) grids the figure's state draws in ``view``."""
    state = fig.state(view=view, **values)
    name = "heads" if view == "heatmaps" else "lines"
    assert state["views"]["lines" if view == "heatmaps" else "heads"] is None
    return torch.tensor(state["views"][name]["grids"])


def assert_draws(fig, layers, batch=0):
    """Every state of ``fig`` draws ``layers`` [(H, L, S) or (B, H, L, S)]."""
    assert len(fig.states) == 2 * len(layers)
    for n, w in enumerate(layers):
        w = torch.as_tensor(w).detach().float()
        w = w[batch] if w.ndim == 4 else w
        values = {"layer": n} if len(layers) > 1 else {}
        for view in ("heatmaps", "lines"):
            torch.testing.assert_close(drawn(fig, view, **values), w,
                                       atol=ATOL, rtol=0)


# ------------------------------------------------------------------ shapes

forms = st.sampled_from(["tensor", "list", "tuple", "dict", "stack", "3-d"])


@given(layers=st.integers(1, 3), B=st.integers(1, 3), H=st.integers(1, 4),
       L=st.integers(1, 7), S=st.integers(1, 7), form=forms,
       data=st.data())
def test_the_figure_draws_the_weights_it_was_given(layers, B, H, L, S, form,
                                                   data):
    if form in ("tensor", "3-d"):
        layers = 1
    if form == "3-d":
        B = 1
    ws = [softmax_weights(B, H, L, S, seed=n) for n in range(layers)]
    batch = data.draw(st.integers(0, B - 1))
    weights = {"tensor": ws[0], "3-d": ws[0][0] if form == "3-d" else None,
               "list": ws, "tuple": tuple(ws),
               "dict": {f"blocks.{n}.attn": w for n, w in enumerate(ws)},
               "stack": torch.stack(ws)}[form]
    queries = [f"q{i}" for i in range(L)]
    keys = None if L == S else [f"k{j}" for j in range(S)]
    fig = mha.head_view(weights, queries, key_tokens=keys, batch=batch)
    assert isinstance(fig, Figure)
    assert_draws(fig, ws, batch)
    names = [c.name for c in fig.controls]
    assert names == (["layer", "view"] if layers > 1 else ["view"])
    if form == "dict" and layers > 1:
        assert fig.controls[0].labels == [f"blocks.{n}.attn"
                                          for n in range(layers)]
    heads = fig.state()["views"]["heads"]
    assert heads["rows"] == queries and heads["cols"] == (keys or queries)
    assert heads["vmin"] == 0.0 and heads["vmax"] == 1.0  # one scale, 0..1
    assert heads["titles"] == [f"head {h}" for h in range(H)]
    lines = fig.state(view="lines")["views"]["lines"]
    assert lines["rows"] == queries and lines["titles"] == heads["titles"]
    json.dumps(fig.spec(), allow_nan=False)


def test_layers_may_differ_in_heads_and_layer_picks_them():
    """Pruned heads: layers of 4, 2 and 3 heads; ``layer`` by index,
    negative index, name or list."""
    ws = [softmax_weights(1, h, 5, 5, seed=h) for h in (4, 2, 3)]
    tokens = list("abcde")
    assert_draws(mha.head_view(ws, tokens), ws)
    assert_draws(mha.head_view(ws, tokens, layer=-1), ws[2:])
    assert_draws(mha.head_view(ws, tokens, layer=[2, 0]), [ws[2], ws[0]])
    fig = mha.head_view({"enc": ws[0], "dec": ws[1]}, tokens, layer="dec")
    assert_draws(fig, ws[1:2])
    assert "dec" in fig.state()["readout"]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16,
                                   torch.float64])
def test_any_float_dtype_and_tensors_that_need_grad(dtype):
    w = softmax_weights(2, 3, 4, 4).to(dtype).requires_grad_()
    fig = mha.head_view(w, list("abcd"), batch=1)
    assert_draws(fig, [w.detach().float()], batch=1)


def test_numpy_and_nested_lists():
    w = softmax_weights(3, 4, 4)
    assert_draws(mha.head_view(w.numpy(), list("abcd")), [w])
    assert_draws(mha.head_view([w.tolist()], list("abcd")), [w])


def test_rows_may_sum_to_less_than_one_and_a_long_input_is_drawn_small():
    """A masked row (zeros) and a sink's rows (< 1) are weights; more tokens
    than the explorer draws: small cells drawn as images, scrolling lines."""
    w = softmax_weights(2, 30, 30) * 0.9
    w[:, 0] = 0
    fig = mha.head_view(w, [f"t{i}" for i in range(30)])
    assert_draws(fig, [w])
    heads = fig.state()["views"]["heads"]
    lines = fig.state(view="lines")["views"]["lines"]
    assert heads["raster"] and heads["cell_min"] == 1
    assert lines["max_rows"] == head_figure.LONG_MAX_ROWS
    short = mha.head_view(w[:, :5, :5], list("abcde")).state()
    assert "raster" not in short["views"]["heads"]


def test_readouts_alt_and_title():
    ws = [softmax_weights(2, 4, 3, 5, seed=n) for n in range(2)]
    fig = mha.head_view(ws, list("abc"), key_tokens=list("vwxyz"), batch=1,
                        title="Cross-attention")
    assert fig.title == "Cross-attention"
    assert fig.state()["readout"] == (
        "layer 0: 4 heads, 3 queries x 5 keys, sequence 1 of 2; one colour "
        "scale from 0 to 1.")
    assert fig.state(layer=1, view="lines")["readout"].startswith(
        "layer 1: one head of 4 as lines from each query (left) to each key")
    assert fig.state(layer=1)["state"] == {"layer": "layer 1",
                                           "view": "heatmaps", "batch": 1}
    assert "2 layers of 4 heads on 3 tokens and 5 key tokens" in fig.alt
    one = mha.head_view(softmax_weights(1, 2, 2), ["x", "y"])
    assert one.alt.startswith("Attention weights of one layer of 1 head on 2 "
                              "tokens: ")
    lines = one.state(view="lines")["readout"]
    assert lines.startswith("the weights: its head as lines")
    assert "pick the head" not in lines


# ------------------------------------------------------------ our own models

def test_record_attention_and_the_language_model():
    """What record_attention records and LanguageModel.attention returns."""
    class Two(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = mha.MultiHeadAttention(16, 4)
            self.b = mha.MultiHeadAttention(16, 2)

        def forward(self, x):
            return self.b(self.a(x)[0])[0]

    model = Two()
    x = torch.randn(2, 6, 16)
    with mha.record_attention(model) as rec:
        model(x)
    fig = mha.head_view(rec, [f"t{i}" for i in range(6)], batch=1)
    assert fig.controls[0].labels == ["a", "b"]
    assert_draws(fig, [rec["a"], rec["b"]], batch=1)

    lm = mha_book.load_language_model()
    text = "To be, or not"
    ws = lm.attention(lm.encode(text)[None])
    from mha_book.language_model import token_labels

    fig = mha.head_view(ws, token_labels(text))
    assert_draws(fig, ws)
    assert fig.state()["views"]["heads"]["rows"][2] == "␣"


# ------------------------------------------------------------------ masks

def masked_cells(d, h):
    """The (L, S) bool cells a view's data marks as masked for head ``h``
    (the page's format: one string per row, or one list of them per head)."""
    rows = d.get("masked")
    if rows is None:
        return None
    rows = rows if isinstance(rows[0], str) else rows[h]
    return torch.tensor([[c == "1" for c in r] for r in rows])


def causal_weights(B, H, L, seed=0):
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, H, L, L, generator=g)
    return scores.masked_fill(~mha.causal_mask(L), float("-inf")).softmax(-1)


@pytest.mark.parametrize("shape", [(6, 6), (1, 6, 6), (1, 1, 6, 6), (2, 3, 6, 6)])
def test_a_mask_draws_its_blocked_cells_blank_in_both_views(shape):
    """A causal model's hidden upper triangle: the spec marks exactly the cells
    the mask blocks (True = may attend), in the heatmaps and in the lines, for
    every layer and head; the weights drawn are unchanged."""
    ws = [causal_weights(2, 3, 6, seed=n) for n in range(2)]
    allowed = mha.causal_mask(6).expand(shape)
    fig = mha.head_view(ws, list("abcdef"), batch=1, mask=allowed)
    assert_draws(fig, ws, batch=1)
    for n in range(2):
        heads = fig.state(layer=n)["views"]["heads"]
        lines = fig.state(layer=n, view="lines")["views"]["lines"]
        assert heads["masked"] == lines["masked"]  # one (L, S) for every head
        assert isinstance(heads["masked"][0], str)
        for h in range(3):
            assert torch.equal(masked_cells(heads, h), ~mha.causal_mask(6))
            assert torch.equal(masked_cells(lines, h), ~mha.causal_mask(6))
    assert "Blank cells: masked." in fig.state()["readout"]
    assert "No line to masked cells." in fig.state(view="lines")["readout"]
    assert "Cells a mask blocks are blank" in fig.alt
    json.dumps(fig.spec(), allow_nan=False)
    plain = mha.head_view(ws, list("abcdef"), batch=1)  # no mask: no blank cells
    assert "masked" not in plain.state()["views"]["heads"]
    assert "masked" not in plain.state(view="lines")["views"]["lines"]
    assert "Blank" not in plain.state()["readout"]


def test_a_mask_per_head_and_per_sequence():
    """A (B, H, L, S) mask that differs between heads is sent per head; the
    sequence drawn picks its own (padding: (B, 1, 1, S))."""
    w = causal_weights(2, 2, 5)
    allowed = mha.causal_mask(5).repeat(2, 2, 1, 1)  # (B, H, L, S)
    allowed[1, 1] &= mha.causal_mask(5, 5).tril(-2) | torch.eye(5, dtype=bool)
    w = w * allowed
    w = w / w.sum(-1, keepdim=True)
    fig = mha.head_view(w, list("abcde"), batch=1, mask=allowed)
    heads = fig.state()["views"]["heads"]
    assert isinstance(heads["masked"][0], list) and len(heads["masked"]) == 2
    for h in range(2):
        assert torch.equal(masked_cells(heads, h), ~allowed[1, h])
        assert torch.equal(masked_cells(fig.state(view="lines")["views"]["lines"],
                                        h), ~allowed[1, h])
    padded = softmax_weights(2, 2, 4, 4)
    keep = torch.ones(2, 1, 1, 4, dtype=torch.bool)
    keep[1, ..., 3] = False  # the second sequence's last key is padding
    padded[1, ..., 3] = 0
    padded[1] = padded[1] / padded[1].sum(-1, keepdim=True)
    assert "masked" not in mha.head_view(padded, T, mask=keep).state()[
        "views"]["heads"]  # sequence 0 has no padding: nothing blank
    drawn_mask = masked_cells(mha.head_view(padded, T, batch=1, mask=keep)
                              .state()["views"]["heads"], 0)
    assert drawn_mask[:, 3].all() and not drawn_mask[:, :3].any()


def test_the_language_models_heads_with_its_causal_mask():
    lm = mha_book.load_language_model()
    text = "To be, or not"
    ws = lm.attention(lm.encode(text)[None])
    fig = mha.head_view(ws, list(text), mask=mha.causal_mask(len(text)))
    for n in range(len(ws)):
        heads = fig.state(layer=n)["views"]["heads"]
        assert torch.equal(masked_cells(heads, 0), ~mha.causal_mask(len(text)))


CAUSAL = causal_weights(2, 3, 4)
MASK_BAD = [
    (lambda: mha.head_view(CAUSAL, T, mask=mha.causal_mask(4).float()),
     TypeError, r"mask must be a bool tensor \(True = may attend\); got dtype "
     r"torch.float32 \(a 0/1 mask: pass mask.bool\(\)"),
    (lambda: mha.head_view(CAUSAL, T, mask=mha.causal_mask(4).long()),
     TypeError, r"got dtype torch.int64"),
    (lambda: mha.head_view(CAUSAL, T, mask="causal"), TypeError,
     r"mask must be a bool tensor \(True = may attend\); got str"),
    (lambda: mha.head_view(CAUSAL, T, mask=mha.causal_mask(5)), ValueError,
     r"mask has shape \(5, 5\), which does not broadcast to \(B, H, L, S\) = "
     r"\(2, 3, 4, 4\) of weights \(shape \(2, 3, 4, 4\)\); it must be \(L, S\) "
     r"= \(4, 4\)"),
    (lambda: mha.head_view(CAUSAL, T, mask=torch.ones(3, 2, 1, 4, 4,
                                                      dtype=torch.bool)),
     ValueError, r"mask must have shape \(L, S\) = \(4, 4\) or broadcast to "
     r"\(B, H, L, S\) = \(2, 3, 4, 4\); got shape \(3, 2, 1, 4, 4\)"),
    (lambda: mha.head_view(CAUSAL, T, mask=torch.ones(4, dtype=torch.bool)),
     ValueError, r"got shape \(4,\)"),
    (lambda: mha.head_view(CAUSAL, T, mask=torch.ones(2, 4, 4, 4,
                                                      dtype=torch.bool)),
     ValueError, r"does not broadcast"),
    (lambda: mha.head_view(CAUSAL, T, mask=~mha.causal_mask(4)), ValueError,
     r"mask blocks keys that weights gives weight: .* at head \d, query \d, "
     r"key \d; a mask is True where a query may attend .*pass ~mask"),
    (lambda: mha.head_view(W, T, mask=mha.causal_mask(4)), ValueError,
     r"mask blocks keys that weights gives weight"),
]


@pytest.mark.parametrize("call, error, words", MASK_BAD,
                         ids=[f"mask{n}" for n in range(len(MASK_BAD))])
def test_a_bad_mask_is_refused_with_a_clear_message(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_pages_mask_reads_what_python_sends(tmp_path):
    """masked.js (the heatmap's and the lines' test of a cell) reads both
    forms views.py sends: one list of rows for every grid, or one per grid."""
    from node_js import LIB, run_modules

    from mha.live.views import heatmap

    every = torch.tensor([[False, True], [False, False]])
    per = torch.stack([every, ~every])
    sent = [heatmap(torch.zeros(2, 2, 2), list("ab"), list("ab"),
                    masked=m)["masked"] for m in (every, per)]
    got = run_modules(tmp_path, {"m": LIB / "masked.js"}, """
        emit(data.map((masked) => [0, 1].map((h) => [0, 1].map((i) =>
          [0, 1].map((j) => m.isMasked(masked, h, i, j))))).concat(
          [[m.isMasked(undefined, 0, 0, 0), m.isMasked(null, 1, 1, 1)]]));
    """, data=sent)
    assert got[0] == [every.tolist()] * 2
    assert got[1] == per.tolist()
    assert got[2] == [False, False]


# ---------------------------------------------------------- Hugging Face

def hf_models():
    transformers = pytest.importorskip(
        "transformers", reason="transformers is a test-only dependency "
        "(requirements-parity.txt; make unit installs it)")
    bert = transformers.BertModel(transformers.BertConfig(
        vocab_size=40, hidden_size=16, num_hidden_layers=3,
        num_attention_heads=4, intermediate_size=32,
        max_position_embeddings=16, attn_implementation="eager"))
    gpt2 = transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=40, n_embd=16, n_layer=2, n_head=2, n_positions=16,
        bos_token_id=0, eos_token_id=0, attn_implementation="eager"))
    return transformers, {"bert": bert.eval(), "gpt2": gpt2.eval()}


@pytest.mark.parametrize("name", ["bert", "gpt2"])
def test_a_hugging_face_models_attentions(name):
    """A tiny random BERT (bidirectional, padding) and GPT-2 (causal), built
    from configs (no download), called with output_attentions=True: the
    figure draws outputs.attentions."""
    _, models = hf_models()
    model = models[name]
    ids = torch.randint(1, 40, (2, 7), generator=torch.Generator()
                        .manual_seed(1))
    mask = torch.ones(2, 7, dtype=torch.long)
    mask[1, 5:] = 0  # the second sequence padded: its keys 5, 6 get 0
    outputs = model(ids, attention_mask=mask, output_attentions=True)
    att = outputs.attentions
    assert isinstance(att, tuple) and att[0].requires_grad
    tokens = [f"w{i}" for i in range(7)]
    fig = mha.head_view(att, tokens, batch=1)
    assert_draws(fig, list(att), batch=1)
    assert len(fig.controls[0].values) == len(att)
    if name == "gpt2":  # causal: nothing above the diagonal is drawn
        grid = drawn(fig, "heatmaps", layer=1)
        assert (grid.triu(1) == 0).all()
    with pytest.raises(TypeError, match="outputs.attentions"):
        mha.head_view(outputs, tokens)


def test_a_hugging_face_model_that_returns_no_weights():
    """SDPA (transformers' default) returns an empty tuple of attentions:
    the message says to load the model with eager attention."""
    transformers, _ = hf_models()
    sdpa = transformers.BertModel(transformers.BertConfig(
        vocab_size=40, hidden_size=16, num_hidden_layers=1,
        num_attention_heads=4, intermediate_size=32,
        attn_implementation="sdpa")).eval()
    att = sdpa(torch.randint(1, 40, (1, 4)), output_attentions=True).attentions
    assert att == ()
    with pytest.raises(ValueError, match='attn_implementation="eager"'):
        mha.head_view(att, list("abcd"))


# ------------------------------------------------------------------ errors

W = softmax_weights(2, 3, 4, 4)
T = list("abcd")
NEG = W.clone()
NEG[1, 2, 3, 0] = -0.25
SCORES = torch.randn(2, 3, 4, 4).abs() + 1
NAN = W.clone()
NAN[0, 1, 2, 3] = float("nan")
BAD = [
    (lambda: mha.head_view(W[0, 0], T), ValueError,
     r"weights must have shape \(B, H, L, S\) or \(H, L, S\).*got shape "
     r"\(4, 4\)"),
    (lambda: mha.head_view([W, W[0, 0]], T), ValueError,
     r"weights\[1\] must have shape .*got shape \(4, 4\)"),
    (lambda: mha.head_view(W.unsqueeze(0).unsqueeze(0), T), ValueError,
     r"got shape \(1, 1, 2, 3, 4, 4\)"),
    (lambda: mha.head_view(NEG, T, batch=1), ValueError,
     r"weights\[1\] has negative values \(the smallest -0.25, at head 2, "
     r"query 3, key 0\).*after the softmax, not the scores"),
    (lambda: mha.head_view(SCORES, T), ValueError,
     r"weights\[0\] has rows summing to more than 1 \(the largest .*\).*"
     r"not the scores"),
    (lambda: mha.head_view(NAN, T), ValueError,
     r"weights\[0\] holds 1 NaN or infinite values \(the first at head 1, "
     r"query 2, key 3\)"),
    (lambda: mha.head_view(W, list("abc")), ValueError,
     r"tokens has 3 tokens but the weights have 4 queries \(weights has "
     r"shape \(2, 3, 4, 4\)\)"),
    (lambda: mha.head_view(W[..., :3], T), ValueError,
     r"key_tokens is None.*4 queries and 3 keys.*pass key_tokens, the 3 key "
     r"tokens"),
    (lambda: mha.head_view(W[..., :3], T, key_tokens=list("xy")), ValueError,
     r"key_tokens has 2 tokens but the weights have 3 keys"),
    (lambda: mha.head_view(W, "abcd"), TypeError,
     r"tokens must be a list of str, one per query; got a str \(for one "
     r"token per character, pass list\(text\)\)"),
    (lambda: mha.head_view(W, torch.arange(4)), TypeError,
     r"tokens must be a list of str.*got torch.Tensor \(token ids\?"),
    (lambda: mha.head_view(W, None), TypeError,
     r"tokens must be a list of str, one per query; got NoneType"),
    (lambda: mha.head_view([W, W[:, :, :3, :3]], T), ValueError,
     r"every layer must have the same batch, query and key lengths \(B, L, "
     r"S\); got weights\[0\] \(2, 3, 4, 4\), weights\[1\] \(2, 3, 3, 3\): "
     r"pick layers of one shape with layer="),
    (lambda: mha.head_view(W, T, batch=2), ValueError,
     r"batch \(2\) must be in 0..1: the weights hold B = 2 sequences"),
    (lambda: mha.head_view(W, T, batch=-1), ValueError, r"batch \(-1\)"),
    (lambda: mha.head_view(W, T, batch=True), TypeError,
     r"batch must be an int; got True \(bool\)"),
    (lambda: mha.head_view([], T), ValueError,
     r"weights is an empty list: expected one \(B, H, L, S\) tensor per "
     r"layer \(a Hugging Face model .*attn_implementation=\"eager\""),
    (lambda: mha.head_view({}, T), ValueError, r"weights is an empty dict"),
    (lambda: mha.head_view([None, None], T), ValueError,
     r"weights\[0\] is None: the model returned no attention weights"),
    (lambda: mha.head_view(W[:, :, :0], T), ValueError,
     r"weights is empty: shape \(2, 3, 0, 4\)"),
    (lambda: mha.head_view(W > 0.5, T), TypeError,
     r"weights must hold floating-point weights; got dtype torch.bool"),
    (lambda: mha.head_view("weights", T), TypeError,
     r"weights must be a tensor or an array of attention weights; got str"),
    (lambda: mha.head_view({"a": [W, W]}, T), ValueError,
     r"weights\['a'\] is a list of 2 tensors: the layer ran 2 times in the "
     r"record_attention block"),
    (lambda: mha.head_view([W, W], T, layer=2), ValueError,
     r"layer must be an index in -2..1 \(the weights have 2 layers\), or a "
     r"list of them; got 2"),
    (lambda: mha.head_view({"enc": W}, T, layer="dec"), ValueError,
     r"layer must be a name \(enc\) or an index in -1..0 .*got 'dec'"),
    (lambda: mha.head_view([W, W], T, layer=[]), ValueError,
     r"layer is an empty list"),
    (lambda: mha.head_view([W, W], T, layer=[0, -2]), ValueError,
     r"layer names a layer twice; got \[0, -2\]"),
    (lambda: mha.head_view(W, T, title=3), TypeError,
     r"title must be a str or None; got int"),
    (lambda: mha.head_view(softmax_weights(1, 12, 210, 210), ["t"] * 210),
     ValueError,
     r"weights: too many to draw, 1 layer, 12 heads in all, 210 x 210 each "
     r"= 529,200 weights; head_view draws at most 500,000 .*narrow it with "
     r"layer= \(e.g. layer=0 or layer=\[0, -1\]\) or pass a shorter input"),
    (lambda: mha.head_view([torch.ones(1, 1, 1)] * (MAX_STATES // 2 + 1),
                           ["a"]), ValueError,
     rf"weights has {MAX_STATES // 2 + 1} layers to draw; head_view draws at "
     rf"most {MAX_STATES // 2}: pick some with layer="),
]


@pytest.mark.parametrize("call, error, words", BAD,
                         ids=[f"bad{n}" for n in range(len(BAD))])
def test_bad_input_is_refused_with_a_clear_message(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_bad_input_in_a_half_precision_model():
    """16-bit weights may sum to a little over 1; scores may not."""
    w = softmax_weights(2, 8, 200).half()
    mha.head_view(w, [str(i) for i in range(8)], key_tokens=["k"] * 200)
    with pytest.raises(ValueError, match="summing to more than 1"):
        mha.head_view(w * 1.05, [str(i) for i in range(8)],
                      key_tokens=["k"] * 200)


# ----------------------------------------------------------------- saving

def test_save_html_writes_a_page_that_needs_no_network(tmp_path):
    fig = mha.head_view([W, W.flip(-1)], T, title="Two <layers>")
    path = mha.save_html(fig, tmp_path / "heads.html")
    assert path == tmp_path / "heads.html"
    text = path.read_text(encoding="utf-8")
    assert text == fig.page() and text.startswith("<!doctype html>")
    assert "<title>Two &lt;layers&gt;</title>" in text
    # nothing to fetch: no element with a source, no address; inlined script
    assert not re.search(r"<\w+[^>]*\s(src|href)=", text)
    assert not re.search(r"https?://", text)
    assert text.count("window.mhaLive = ") == 1
    assert mha.save_html(fig, str(tmp_path / "again.html")).exists()


@pytest.mark.parametrize("call, error, words", [
    (lambda p: mha.save_html("figure", p / "x.html"), TypeError,
     "figure must be a live figure .*got str"),
    (lambda p: mha.save_html(mha.head_view(W, T), 3), TypeError,
     "path must be a str or a path; got int"),
    (lambda p: mha.save_html(mha.head_view(W, T), p / "no" / "x.html"),
     ValueError, "its folder .* does not exist"),
])
def test_save_html_refuses_bad_input(tmp_path, call, error, words):
    with pytest.raises(error, match=words):
        call(tmp_path)


def test_exported_and_import_mha_stays_light():
    """``import mha`` does not load the live figures (mha.live): head_view
    imports them when called."""
    assert {"head_view", "save_html"} <= set(mha.__all__)
    assert mha.head_view is head_figure.head_view
    code = ("import sys, mha; assert 'mha.live' not in sys.modules; "
            "print(mha.head_view.__module__)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "mha.head_figure"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(),
                    reason="needs a CUDA GPU (none present)")
def test_weights_on_a_gpu_in_bfloat16():
    """Only the sequence drawn comes to the CPU; the figure draws it."""
    layer = mha.MultiHeadAttention(32, 4, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(3, 9, 32, device="cuda", dtype=torch.bfloat16)
    with mha.record_attention(layer) as recorded:
        layer(x)
    w = recorded["MultiHeadAttention"]
    assert w.device.type == "cuda" and w.dtype == torch.bfloat16
    fig = mha.head_view(recorded, [f"t{i}" for i in range(9)], batch=2)
    assert_draws(fig, [w.float().cpu()], batch=2)

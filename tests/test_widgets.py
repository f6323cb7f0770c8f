"""The attention explorer (mha_book.widgets), the pattern gallery (mha_book.patterns) and chapter 07's checks."""

import math

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

import mha
import mha_book
from mha.layer import MultiHeadAttention
from mha_book import patterns, widgets
from mha_book.exercises import check
from mha_book.exercises.pattern_previous_token import (
    previous_token_weights,
    reference_previous_token,
)


def entropy(weights):
    """Mean entropy (nats) of the rows of ``weights`` (..., L)."""
    return float(-(weights * weights.clamp_min(1e-12).log()).sum(-1).mean())


# ----------------------------------------------------------------------------- recompute

def test_default_result_shapes_and_rows_sum_to_one():
    r = widgets.explore_once()
    assert r.ok and r.message is None
    assert r.weights.shape == (8, 12, 12)
    assert len(r.tokens) == 12 and r.tokens[:3] == ["The", "bank", "by"]
    assert r.output.shape == (12, 64)
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(8, 12))


@pytest.mark.parametrize("num_kv_heads", [8, 2, 1])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_weights_equal_the_layers_own_forward(mask_kind, num_kv_heads):
    r = widgets.explore_once(num_kv_heads=num_kv_heads, mask_kind=mask_kind, seq_len=14, seed=3)
    layer = widgets.build_layer(64, 8, num_kv_heads, 3)
    x = widgets.embed_tokens(r.tokens, 64)
    kw = {"none": {}, "causal": {"is_causal": True},
          "padding": {"valid_lens": torch.tensor([11])}}[mask_kind]
    with torch.no_grad():
        out, weights = layer(x, need_weights=True, **kw)
    torch.testing.assert_close(r.weights, weights[0])
    torch.testing.assert_close(r.output, out[0])


def test_causal_mask_is_respected():
    r = widgets.explore_once(mask_kind="causal")
    future = torch.ones(12, 12, dtype=torch.bool).triu(1)
    assert r.weights[:, future].abs().max() == 0
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(8, 12))
    assert torch.allclose(r.weights[:, 0, 0], torch.ones(8))  # the first token sees only itself


def test_padding_mask_is_respected():
    r = widgets.explore_once(mask_kind="padding", seq_len=15)
    pads = [i for i, t in enumerate(r.tokens) if t == "<pad>"]
    assert pads == [11, 12, 13, 14]
    assert r.weights[:, :, pads].abs().max() == 0
    torch.testing.assert_close(r.weights.sum(-1), torch.ones(8, 15))
    unmasked = widgets.explore_once(mask_kind="none", seq_len=15)
    assert unmasked.weights[:, :, pads].sum() > 0.1  # without the mask pads do get weight


def test_seq_len_trims_and_pads():
    assert widgets.explore_once(seq_len=4).tokens == ["The", "bank", "by", "the"]
    assert widgets.explore_once(seq_len=13).tokens[-2:] == ["<pad>", "<pad>"]


def test_lower_temperature_gives_lower_entropy():
    ents = [entropy(widgets.explore_once(temperature=t).weights) for t in (0.1, 0.3, 1, 3, 10)]
    assert all(a < b for a, b in zip(ents, ents[1:])), ents
    assert ents[-1] > 0.98 * math.log(12)  # T = 10: nearly uniform
    assert ents[0] < 0.2 * math.log(12)  # T = 0.1: close to one-hot


def test_temperature_is_the_scale_1_over_T_sqrt_dhead():
    r = widgets.explore_once(temperature=0.5, seed=1)
    layer = widgets.build_layer(64, 8, 8, 1)
    x = widgets.embed_tokens(r.tokens, 64)
    with torch.no_grad():
        q = mha.split_heads(layer.W_q(x), 8)  # (1, 8, L, 8)
        k = mha.split_heads(layer.W_k(x), 8)
        scores = q @ k.transpose(-2, -1) / (0.5 * math.sqrt(8))
    torch.testing.assert_close(r.weights, scores.softmax(-1)[0])


def test_same_knobs_same_numbers_and_seed_changes_them():
    a, b = widgets.explore_once(seed=4), widgets.explore_once(seed=4)
    assert torch.equal(a.weights, b.weights)
    assert not torch.allclose(a.weights, widgets.explore_once(seed=5).weights)


def test_gqa_heads_of_a_group_share_keys():
    """With one key/value head, the keys are shared: the output of all heads uses the same V."""
    r = widgets.explore_once(num_kv_heads=1)
    assert r.ok and r.weights.shape == (8, 12, 12)
    assert r.params["W_k"] == 64 * 8 and r.params["W_v"] == 64 * 8


# ----------------------------------------------------------------------------- counts

@pytest.mark.parametrize("d_model,num_heads,num_kv_heads", [(64, 8, 8), (64, 8, 2), (64, 8, 1),
                                                            (768, 12, 12), (96, 6, 3), (30, 5, 5)])
def test_parameter_counts_equal_the_module(d_model, num_heads, num_kv_heads):
    layer = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads)
    counts = widgets.count_parameters(d_model, num_heads, num_kv_heads)
    assert counts["total"] == sum(p.numel() for p in layer.parameters())
    for name in ("W_q", "W_k", "W_v", "W_o"):
        assert counts[name] == getattr(layer, name).weight.numel()
    d_kv = num_kv_heads * d_model // num_heads
    assert counts["total"] == 2 * d_model ** 2 + 2 * d_model * d_kv
    with_bias = MultiHeadAttention(d_model, num_heads, num_kv_heads=num_kv_heads, bias=True)
    assert widgets.count_parameters(d_model, num_heads, num_kv_heads, bias=True)["total"] == sum(
        p.numel() for p in with_bias.parameters())


def test_parameter_counts_of_the_seed():
    assert widgets.count_parameters(768, 12)["total"] == 2_359_296
    assert widgets.count_parameters(12288, 96)["total"] == 603_979_776


def test_flop_counts_by_hand():
    f = widgets.count_flops(12, 64, 8)
    assert f["Q projection"] == 2 * 12 * 64 * 64
    assert f["scores QK^T"] == f["weights x V"] == 2 * 12 * 12 * 64
    assert f["total"] == 8 * 12 * 64 ** 2 + 4 * 12 ** 2 * 64 == 430_080
    # the attention products do not depend on the number of heads ...
    assert {widgets.count_flops(12, 64, h)["scores QK^T"] for h in (1, 2, 4, 8, 16)} == {18_432}
    # ... and grouped-query attention shrinks only the K and V projections
    g = widgets.count_flops(12, 64, 8, 2)
    assert g["K projection"] == g["V projection"] == f["K projection"] // 4
    assert g["total"] == f["total"] - 2 * (f["K projection"] - g["K projection"])


def test_flop_count_matches_a_measured_matmul_count():
    """torch's FLOP counter agrees with the hand formula (it counts matmuls only)."""
    from torch.utils.flop_counter import FlopCounterMode

    L, D, H = 12, 64, 8
    layer = MultiHeadAttention(D, H)
    x = torch.randn(1, L, D)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        layer(x, need_weights=True)
    assert counter.get_total_flops() == widgets.count_flops(L, D, H)["total"]


def test_counts_panel_is_html_with_the_numbers():
    html = widgets.explore_once().counts_html()
    assert "<table" in html and "16,384" in html and "430,080" in html


# ----------------------------------------------------------------------------- impossible knobs

def test_d_model_not_divisible_gives_a_message_not_an_exception():
    r = widgets.explore_once(d_model=30, num_heads=4)
    assert not r.ok and r.weights is None
    assert "d_model (30)" in r.message and "num_heads (4)" in r.message
    assert r.message.endswith("num_heads can be 1, 2, 3, 5, 6, 10, 15.")  # what the UI offers
    assert r.counts_html() == ""  # the message shows once: in place of the picture


def test_num_heads_not_multiple_of_num_kv_heads_gives_a_message():
    r = widgets.explore_once(num_heads=8, num_kv_heads=3)
    assert not r.ok
    assert "num_heads (8)" in r.message and "num_kv_heads (3)" in r.message


@pytest.mark.parametrize("knobs,word", [
    ({"seq_len": 0}, "seq_len"), ({"d_model": -4}, "d_model"), ({"temperature": 0}, "temperature"),
    ({"temperature": float("nan")}, "temperature"), ({"mask_kind": "diagonal"}, "mask_kind"),
    ({"sentence": "   "}, "sentence"), ({"seed": -1}, "seed"), ({"num_heads": 2.5}, "num_heads"),
    ({"window": 0}, "window"), ({"window": 2.5}, "window"), ({"window": True}, "window"),
    ({"sink": float("inf")}, "sink"), ({"sink": "2"}, "sink"),
    ({"source": "letters model: layer 1", "window": -1}, "window"),
    ({"source": "letters model: layer 1", "sink": float("nan")}, "sink"),
])
def test_invalid_values_give_a_message(knobs, word):
    r = widgets.explore_once(**knobs)
    assert not r.ok and word in r.message


# ----------------------------------------------------------------------------- window and sink

def _base_mask(mask_kind, L, valid):
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    return {"none": torch.ones(L, L, dtype=torch.bool), "causal": j <= i,
            "padding": (j < valid).expand(L, L)}[mask_kind]


@pytest.mark.parametrize("window", [1, 2, 4, 8])
@pytest.mark.parametrize("mask_kind", ["none", "causal", "padding"])
def test_window_is_the_mask_and_window_mask(mask_kind, window):
    """window w and-s mha.modern.window_mask (query i sees keys i - w < j <= i) with the mask:
    the layer's own forward with that mask gives the same weights and output."""
    r = widgets.explore_once(num_kv_heads=2, mask_kind=mask_kind, seq_len=14, seed=3,
                             window=window)
    assert r.ok and r.config["window"] == window
    allowed = _base_mask(mask_kind, 14, 11) & mha.modern.window_mask(14, 14, window)  # (L, L)
    layer = widgets.build_layer(64, 8, 2, 3)
    x = widgets.embed_tokens(r.tokens, 64)
    with torch.no_grad():
        out, weights = layer(x, mask=allowed, need_weights=True)
    torch.testing.assert_close(r.weights, weights[0])
    torch.testing.assert_close(r.output, out[0])
    assert r.weights[:, ~allowed].abs().max() == 0
    i, j = torch.arange(14)[:, None], torch.arange(14)[None, :]
    assert not allowed[(j > i) | (j <= i - window)].any()  # causal, and w positions at most
    if mask_kind != "padding":
        torch.testing.assert_close(r.weights.sum(-1), torch.ones(8, 14))
    if window == 1:  # each query sees only itself (a <pad> query with padding: nothing)
        torch.testing.assert_close(r.weights, allowed.float().expand(8, 14, 14))


def test_a_window_as_long_as_the_sentence_is_the_causal_mask():
    wide = widgets.explore_once(window=12)
    assert torch.equal(wide.weights, widgets.explore_once(mask_kind="causal").weights)
    assert torch.equal(widgets.explore_once(window=None).weights, widgets.explore_once().weights)


@pytest.mark.parametrize("sink,temperature,window,num_kv_heads", [
    (2.0, 1.0, None, 8), (-2.0, 0.5, 4, 2), (0.0, 2.0, None, 1), (4.0, 1.0, 2, 8)])
def test_sink_rows_are_sink_attention(sink, temperature, window, num_kv_heads):
    """sink s: the weights of mha.modern.sink_attention on the tempered queries (scale
    1/sqrt(d_head)), i.e. each row is the row without the sink times 1 / (1 + exp(s - lse)),
    lse the logsumexp of the row's scores q.k / (T sqrt(d_head)): T does not divide s."""
    knobs = {"num_kv_heads": num_kv_heads, "temperature": temperature, "window": window,
             "mask_kind": "causal", "seed": 2}
    r = widgets.explore_once(sink=sink, **knobs)
    plain = widgets.explore_once(**knobs)
    assert r.ok and r.config["sink"] == sink
    layer = widgets.build_layer(64, 8, num_kv_heads, 2)
    x = widgets.embed_tokens(r.tokens, 64)
    allowed = torch.ones(12, 12, dtype=torch.bool).tril()
    if window is not None:
        allowed &= mha.modern.window_mask(12, 12, window)
    with torch.no_grad():
        q = mha.split_heads(layer.W_q(x), 8)  # (1, 8, L, 8)
        k = mha.split_heads(layer.W_k(x), num_kv_heads)  # (1, Hkv, L, 8)
        v = mha.split_heads(layer.W_v(x), num_kv_heads)
        out, weights = mha.modern.sink_attention(q / temperature, k, v, torch.full((8,), sink),
                                                 allowed, scale=8 ** -0.5)
        output = layer.W_o(mha.merge_heads(out))[0]  # (1, H, L, Dh) -> (L, D)
    torch.testing.assert_close(r.weights, weights[0])
    torch.testing.assert_close(r.output, output)
    scores = (q @ mha.attention_functions.repeat_kv(k, 8).transpose(-2, -1))[0] / (temperature * 8 ** 0.5)
    lse = scores.masked_fill(~allowed, float("-inf")).logsumexp(-1)  # (H, L)
    kept = 1 / (1 + torch.exp(sink - lse))  # the share the keys keep
    torch.testing.assert_close(r.weights.sum(-1), kept)
    torch.testing.assert_close(r.weights, plain.weights * kept[..., None])
    assert (r.weights.sum(-1) < 1).all()


def test_a_row_with_no_key_gives_all_to_the_sink():
    """padding and a window: query 19 of "cat on the mat" (11 words) sees only <pad> keys."""
    r = widgets.explore_once(mask_kind="padding", window=4, seq_len=20, sentence="cat on the mat",
                             sink=1.0)
    assert r.ok and r.weights[:, 14:].abs().max() == 0  # queries 14..19: keys 11.. are <pad>
    assert r.weights[:, :11].sum(-1).min() > 0


def test_window_and_sink_on_trained_sources():
    """A trained layer without a mask becomes causal; a causal one narrows; the sink only
    rescales rows; cross-attention takes a sink but no window (a message, not an exception)."""
    for source in ("letters model: layer 0", "translator decoder: layer 0"):
        r = widgets.explore_once(source=source, seed=1, window=3)
        L = len(r.tokens)
        view = mha_book.sources.trained_view(source, 1)
        H = view.num_heads
        q, k = (mha.split_heads(t[None], H) for t in (view.q, view.k))  # (1, H, L, Dh)
        allowed = mha.modern.window_mask(L, L, 3)
        _, expected = mha.scaled_dot_product_attention(q, k, k, allowed)
        torch.testing.assert_close(r.weights, expected[0], atol=1e-6, rtol=0)
        assert r.config["window"] == 3 and r.weights[:, ~allowed].abs().max() == 0
        sunk = widgets.explore_once(source=source, seed=1, window=3, sink=2.0)
        rows = sunk.weights.sum(-1)
        torch.testing.assert_close(sunk.weights, r.weights * rows[..., None])
        assert rows.max() <= 1 and rows.mean() < 1
    cross = "translator cross-attention: layer 1"
    r = widgets.explore_once(source=cross, window=4)
    assert not r.ok and "window" in r.message and "cross-attention" in r.message
    assert widgets.explore_once(source=cross, sink=0.0).ok


def test_a_readers_attention_fn_takes_a_window_but_no_sink():
    seen = {}

    def spy(query, key, value, mask):
        seen["mask"] = mask
        return mha.scaled_dot_product_attention(query, key, value, mask)

    r = widgets.explore_once(attention_fn=spy, window=4)
    assert r.ok and torch.equal(seen["mask"][0, 0], mha.modern.window_mask(12, 12, 4))
    r = widgets.explore_once(attention_fn=spy, sink=2.0)
    assert not r.ok and "sink" in r.message and "attention_fn" in r.message


def test_the_caption_says_the_window_and_what_went_to_the_sink():
    r = widgets.explore_once(window=4, sink=2.0)
    caption = widgets.payload(r)["heads"]["caption"]
    kept = float(r.weights.sum(-1).mean())
    assert ", mask: causal window 4, seed 0" in caption
    assert caption.endswith(f", sink s = 2: rows sum to {kept:.2f} on average "
                            f"({1 - kept:.2f} to the sink)")
    assert "sink" not in widgets.payload(widgets.explore_once())["heads"]["caption"]


# ----------------------------------------------------------------------------- attention_fn

def uniform_attention(query, key, value, mask):
    L = key.size(-2)
    weights = torch.full((*query.shape[:-1], L), 1.0 / L)  # (1, H, Lq, Lk)
    return weights @ value, weights


def test_reader_attention_fn_drives_the_explorer():
    r = widgets.explore_once(attention_fn=uniform_attention)
    assert r.ok
    assert widgets.payload(r)["heads"]["caption"].startswith("attention_fn = uniform_attention: ")
    torch.testing.assert_close(r.weights, torch.full((8, 12, 12), 1 / 12))


def test_attention_fn_gets_the_documented_arguments():
    seen = {}

    def spy(query, key, value, mask):
        seen.update(q=query.shape, k=key.shape, v=value.shape, mask=mask)
        return mha.scaled_dot_product_attention(query, key, value, mask)

    r = widgets.explore_once(num_kv_heads=2, mask_kind="causal", attention_fn=spy)
    assert seen["q"] == seen["k"] == seen["v"] == (1, 8, 12, 8)
    assert seen["mask"].dtype == torch.bool and seen["mask"].shape == (1, 1, 12, 12)
    assert torch.equal(seen["mask"][0, 0], mha.causal_mask(12))
    torch.testing.assert_close(r.weights, widgets.explore_once(num_kv_heads=2,
                                                               mask_kind="causal").weights)
    widgets.explore_once(attention_fn=spy)
    assert seen["mask"] is None  # mask_kind "none"


def test_broken_attention_fn_gives_a_message():
    def broken(query, key, value, mask):
        raise RuntimeError("oops")

    r = widgets.explore_once(attention_fn=broken)
    assert not r.ok and "RuntimeError: oops" in r.message
    r = widgets.explore_once(attention_fn=lambda q, k, v, m: (v, torch.ones(3, 3)))
    assert not r.ok and "weights of shape (3, 3)" in r.message and "(1, 8, 12, 12)" in r.message


# ----------------------------------------------------------------------------- the widget

def _drawn(ex):
    """What the front end draws, read back from what the view was given (the
    figure's spec, see mha.live.figure): the heatmaps' weights, labels and
    titles and the table."""
    import json
    import re

    html_text = ex.drawn_html()
    found = re.search(r'<script type="application/json" class="mha-spec">(.*?)</script>',
                      html_text, re.S)
    if not found:
        return html_text
    spec = json.loads(found.group(1).replace("<\\/", "</"))
    (state,) = spec["states"].values()  # no controls: one state
    heads, table = (spec["pool"][state["views"][v]] for v in ("heads", "table"))
    return {"weights": heads["grids"], "tokens_q": heads["rows"], "tokens_k": heads["cols"],
            "titles": heads["titles"], "caption": heads["caption"], "table": table}


def test_widget_builds_headless_and_recomputes_on_change():
    ipywidgets = pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    ex = mha_book.widgets.explorer()
    assert isinstance(ex.widget, ipywidgets.VBox)
    assert ex.redraws == 1 and ex.result.ok and ex.result.weights.shape == (8, 12, 12)
    drawn = _drawn(ex)  # what the canvas front end draws: the weights Python computed
    assert len(drawn["weights"]) == 8 and drawn["tokens_q"][:2] == ["The", "bank"]
    torch.testing.assert_close(torch.tensor(drawn["weights"]), ex.result.weights,
                               atol=1e-6, rtol=0)
    assert "16,384" in ex.counts.value

    # coupled knobs: num_heads offers only divisors of d_model, num_kv_heads of num_heads
    assert list(ex.controls["num_heads"].options) == [1, 2, 4, 8, 16]
    ex.controls["num_heads"].value = 4  # kv heads follow (8 -> 4): never an impossible layer
    assert ex.redraws == 2 and ex.result.ok and ex.controls["num_kv_heads"].value == 4
    assert list(ex.controls["num_kv_heads"].options) == [1, 2, 4]
    ex.controls["num_kv_heads"].value = 2
    assert ex.redraws == 3 and ex.result.weights.shape == (4, 12, 12)
    assert ex.result.config["num_heads"] == 4 and ex.result.params["W_k"] == 64 * 32
    assert len(_drawn(ex)["weights"]) == 4
    ex.controls["seq_len"].value = 6
    assert ex.result.weights.shape == (4, 6, 6) and len(_drawn(ex)["tokens_q"]) == 6
    before = _drawn(ex)["weights"]
    ex.controls["temperature"].value = 0.1
    assert _drawn(ex)["weights"] != before

    ex.controls["d_model"].value = 30  # 4 does not divide 30: num_heads moves to a divisor
    assert ex.result.ok and 30 % ex.controls["num_heads"].value == 0
    assert list(ex.controls["num_heads"].options) == [1, 2, 3, 5, 6, 10, 15]
    assert ex.controls["num_heads"].value == 3 and ex.controls["num_kv_heads"].value == 1
    ex.controls["d_model"].value = 32
    assert ex.result.ok and ex.controls["num_heads"].value == 2


def test_widget_trained_source_and_message_once():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    ex = widgets.explorer(temperature=0.5)
    ex.controls["source"].value = "letters model: layer 1"
    assert ex.result.ok and ex.result.weights.shape == (4, 16, 16)
    assert all(ex.controls[n].disabled for n in ("d_model", "num_heads", "seq_len", "sentence"))
    # trained heads are first shown as trained: the temperature is reset to 1
    assert ex.controls["temperature"].value == 1.0 and ex.result.config["temperature"] == 1.0
    torch.testing.assert_close(ex.result.weights, widgets.explore_once(
        source="letters model: layer 1", temperature=1.0).weights)
    drawn = _drawn(ex)
    assert drawn["titles"][1] == "head 1: induction head" and drawn["table"]["rows"]
    assert drawn["titles"][3] == "head 3: mixed"  # induction score 0.51: not named
    ex.controls["temperature"].value = 0.5  # between trained sources the reader's T stays
    ex.controls["source"].value = "letters model: layer 0"
    assert ex.controls["temperature"].value == 0.5
    ex.controls["source"].value = "random layer"
    assert not ex.controls["num_heads"].disabled and ex.result.weights.shape == (8, 12, 12)

    # a reader's function that fails: the message shows once, in place of the picture
    def broken(query, key, value, mask):
        raise RuntimeError("oops")

    ex = widgets.explorer(attention_fn=broken)
    assert not ex.result.ok and ex.counts.value == ""
    assert "RuntimeError: oops" in _drawn(ex) and "mha-spec" not in _drawn(ex)


def test_widget_with_reader_function_and_initial_knobs():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    ex = widgets.explorer(attention_fn=uniform_attention, mask_kind="causal", num_heads=2,
                          num_kv_heads=1)
    torch.testing.assert_close(ex.result.weights, torch.full((2, 12, 12), 1 / 12))
    ex.controls["mask_kind"].value = "padding"
    assert ex.result.config["mask_kind"] == "padding" and ex.redraws == 2
    with pytest.raises(TypeError, match="heads"):
        widgets.explorer(heads=3)


def test_widget_window_and_sink():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    ex = widgets.explorer()
    assert ex.config()["window"] is None and ex.config()["sink"] is None  # off: as before
    assert [label for label, _ in ex.controls["window"].options][0] == "off"
    ex.controls["window"].value = 4
    ex.controls["sink"].value = 2.0
    assert ex.redraws == 3 and ex.result.ok
    torch.testing.assert_close(ex.result.weights, widgets.explore_once(window=4, sink=2.0).weights)
    assert "causal window 4" in _drawn(ex)["caption"] and "to the sink" in _drawn(ex)["caption"]
    ex.controls["source"].value = "translator cross-attention: layer 0"  # no window: greyed
    assert ex.controls["window"].disabled and ex.result.ok and ex.config()["window"] is None
    assert ex.result.weights.sum(-1).mean() < 1  # the sink still applies
    ex.controls["source"].value = "letters model: layer 0"  # the window again, made causal
    assert not ex.controls["window"].disabled and ex.result.config["window"] == 4
    assert ex.result.weights.triu(1).abs().max() == 0
    mine = widgets.explorer(window=3, sink=1)
    assert (3 in [v for _, v in mine.controls["window"].options]
            and mine.result.config["window"] == 3 and mine.result.config["sink"] == 1)
    for knobs, word in (({"window": 0}, "window"), ({"sink": float("nan")}, "sink")):
        with pytest.raises(ValueError, match=f"^{word} must be None"):
            widgets.explorer(**knobs)
    assert 0 < widgets.measure_latency(repeats=2, change="sink") < 5


def test_render_draws_one_heatmap_per_head():
    r = widgets.explore_once(num_heads=4, num_kv_heads=4, seq_len=6)
    fig = widgets.render(r)
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert len(titled) >= 4
    matplotlib.pyplot.close(fig)


def test_redraw_latency_is_measured():
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    for change in ("seed", "num_heads", "source"):
        seconds = widgets.measure_latency(repeats=3, change=change)
        assert 0 < seconds < 5
    with pytest.raises(ValueError, match="change"):
        widgets.measure_latency(1, change="colour")


# ----------------------------------------------------------------------------- the gallery

def test_gallery_patterns_are_produced_by_the_layer():
    for pat in patterns.gallery():
        assert pat.weights.shape == (9, 9) and pat.tokens == patterns.GALLERY_TOKENS
        torch.testing.assert_close(pat.weights.sum(-1), torch.ones(9))
        assert pat.reason and pat.W_q.shape == pat.W_k.shape
        again = patterns.pattern_from_projections(pat.W_q, pat.W_k)
        torch.testing.assert_close(again, pat.weights)


def test_diagonal():
    w = patterns.diagonal().weights
    assert torch.equal(w.argmax(-1), torch.arange(9)) and w.diagonal().min() > 0.9


def test_previous_token():
    w = patterns.previous_token().weights
    for i in range(1, 9):
        assert w[i].argmax() == i - 1 and w[i, i - 1] > 0.9
    assert w[0, 0] > 0.9  # nothing before the first token: it keeps to itself


def test_vertical_stripe_sink():
    w = patterns.vertical_stripe().weights
    assert w[:, 0].min() > 0.9
    w3 = patterns.vertical_stripe(sink=3).weights
    assert w3[:, 3].min() > 0.9
    with pytest.raises(ValueError, match="sink"):
        patterns.vertical_stripe(sink=12)


def test_horizontal_stripe():
    w = patterns.horizontal_stripe().weights
    torch.testing.assert_close(w[-1], torch.full((9,), 1 / 9))  # the broad row: uniform
    assert w[:-1].diagonal().min() > 0.9  # the other rows stay sharp
    assert entropy(w[-1]) > 0.99 * math.log(9) and entropy(w[:-1]) < 0.2


def test_blocks():
    w = patterns.blocks().weights
    seg = torch.tensor(patterns.GALLERY_SEGMENTS)
    same = seg[:, None] == seg[None, :]
    assert w[same.logical_not()].max() < 0.02
    for s in range(4):
        rows = (seg == s).nonzero().flatten()
        block = w[rows][:, rows]
        assert block.sum(-1).min() > 0.9
        assert block.max() - block.min() < 1e-6  # even within the phrase


def test_same_word():
    w = patterns.same_word().weights
    assert w[1, 4] > 0.45 and w[4, 1] > 0.45  # the two "the"s find each other
    assert w[2, 2] > 0.9  # "bank" occurs once


def test_plot_gallery_has_a_labelled_panel_per_pattern():
    fig = patterns.plot_gallery()
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert titles == [p.name for p in patterns.gallery()]
    matplotlib.pyplot.close(fig)


# ----------------------------------------------------------------------------- exercise checks

def test_previous_token_check_passes_the_reference():
    assert check("pattern_previous_token", reference_previous_token, verbose=False).passed
    W_q, W_k = reference_previous_token(9)
    assert previous_token_weights(W_q, W_k).diagonal(offset=-1).min() > 0.9  # w[i, i-1]


def test_previous_token_check_fails_wrong_answers_with_useful_messages():
    weak = check("pattern_previous_token",
                 lambda n: (torch.eye(n), torch.eye(n).roll(1, 0)), verbose=False)
    assert not weak.passed and "needs more than 0.9" in weak.failures[0]
    diag = check("pattern_previous_token", lambda n: (5 * torch.eye(n), 5 * torch.eye(n)),
                 verbose=False)
    assert not diag.passed and "largest weight" in diag.failures[0] and "on token 1" in (
        diag.failures[0])
    shape = check("pattern_previous_token", lambda n: (torch.eye(n + 1), torch.eye(n)),
                  verbose=False)
    assert not shape.passed and "W_q must be a tensor of shape" in shape.failures[0]
    todo = check("pattern_previous_token", lambda n: (_ for _ in ()).throw(NotImplementedError()),
                 verbose=False)
    assert not todo.passed and "not written yet" in todo.failures[0]


def test_flop_count_check():
    right = check("flop_count", lambda L, D, H, Hkv: widgets.count_flops(L, D, H, Hkv)["total"],
                  verbose=False)
    assert right.passed
    no_gqa = check("flop_count", lambda L, D, H, Hkv: 8 * L * D * D + 4 * L * L * D, verbose=False)
    assert not no_gqa.passed and len(no_gqa.failures) == 2
    assert "grouped-query" in no_gqa.failures[0] and "expected 230400, got 353280" in (
        no_gqa.failures[0])


def test_widget_view_switches_to_one_head_as_lines():
    """The kernel explorer has the page's second view: its "view" control redraws the same
    weights as one head's lines (issue 22), and is not a knob of the layer."""
    import json
    import re

    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    ex = mha_book.widgets.explorer(num_heads=4)
    assert "view" not in ex.config() and ex.controls["view"].value == "heatmaps"
    ex.controls["view"].value = "lines"
    assert ex.redraws == 2 and ex.result.ok
    found = re.search(r'class="mha-spec">(.*?)</script>', ex.drawn_html(), re.S)
    spec = json.loads(found.group(1).replace("<\\/", "</"))
    (state,) = spec["states"].values()
    assert spec["pool"][state["views"]["heads"]] is None
    lines = spec["pool"][state["views"]["lines"]]
    assert lines["head"] == 0 and lines["rows"][:2] == ["The", "bank"]
    torch.testing.assert_close(torch.tensor(lines["grids"]), ex.result.weights, atol=1e-6,
                               rtol=0)
    with pytest.raises(ValueError, match="view must be one of"):
        mha_book.figures.explorer.payload(ex.result, "bars")

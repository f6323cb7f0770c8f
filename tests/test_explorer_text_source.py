"""Chapter 07's explorer on the Shakespeare model: one source per layer, the held-out
passages (``mha_book.language_model.PASSAGES``) as its inputs.

Independent of the trained values (the weights file is replaced by each training run): the
sources follow the model's layer count, the queries and keys are the ones the model computes in
its forward pass (checked against the blocks run step by step), the explorer's weights, the
page's arithmetic on the exported queries and keys (as in test_explorer_export.py) and the
kernel-mode widget all equal ``lm.attention`` to 1e-5, and the head table holds chapter 10's scores
and names (``mha_book.lm_heads``) and the pattern scores (``mha.head_scores``) on the passages.
"""

import json

import numpy as np
import pytest
import torch
from test_explorer_export import decode, page_attention

import mha
import mha_book
from mha import head_scores
from mha_book import sources, widgets
from mha_book.figures import explorer as webview
from mha_book.language_model import PASSAGES as ALL_PASSAGES
from mha_book.language_model import load_language_model
from mha_book.sources import TEXT_CHARS

#: what the explorer shows: the first TEXT_CHARS characters of each passage
PASSAGES = {name: text[:TEXT_CHARS] for name, text in ALL_PASSAGES.items()}


@pytest.fixture(scope="module")
def lm():
    return load_language_model()


@pytest.fixture(scope="module")
def data():
    return webview.explorer_data()


def text_sources(lm):
    return [f"Shakespeare model: layer {n}" for n in range(lm.num_layers)]


def reference(lm, text, layer):
    """The model's own weights (H, L, L) of ``layer`` on ``text``."""
    return lm.attention(lm.encode(text)[None])[layer][0]


def test_one_source_per_layer_everywhere(lm, data):
    named = [s for s, (_, _, kind) in sources.TRAINED_SOURCES.items() if kind == "text"]
    assert named == text_sources(lm)
    for source in named:
        assert source in widgets.SOURCES and source in data["sources"]
        model, layer, kind = sources.TRAINED_SOURCES[source]
        assert dict(lm.named_modules())[layer] is not None and kind == "text"


def test_views_are_the_passages_labelled_with_visible_characters(lm):
    names, texts = list(PASSAGES), list(PASSAGES.values())
    for seed in range(len(PASSAGES) + 2):  # past the last passage the seed wraps round
        i = seed % len(PASSAGES)
        view = sources.trained_view(text_sources(lm)[0], seed)
        text = texts[i]
        assert view.name == names[i] and view.causal
        assert view.tokens_q == view.tokens_k == sources.text_labels(text)
        assert len(view.tokens_q) == len(text)
        assert " " not in view.tokens_q and "\n" not in view.tokens_q
        assert view.tokens_q.count(sources.GLYPHS[" "]) == text.count(" ")
        assert view.tokens_q.count(sources.GLYPHS["\n"]) == text.count("\n")
        assert (view.num_heads, view.num_heads * view.d_head) == (lm.num_heads,
                                                                  lm.config["d_model"])
        assert view.q.shape == view.k.shape == (len(text), lm.config["d_model"])


def test_glyphs_are_chapter_10s():

    from mha_book.figures import shakespeare_heads as text

    assert text.GLYPHS is sources.GLYPHS is mha_book.language_model.GLYPHS


def test_queries_and_keys_are_the_forward_pass_own(lm):
    """The blocks run step by step (pre-LN: layer n reads layer n - 1's output after its
    residuals, through its own LayerNorm) give the queries and keys the explorer shows."""
    for seed, text in enumerate(PASSAGES.values()):
        ids = lm.encode(text)[None]
        with torch.no_grad():
            x = lm.encoder.embed(ids)  # (1, L, D)
            for n, block in enumerate(lm.encoder.layers):
                h = block.res_attn.norm(x)
                view = sources.trained_view(text_sources(lm)[n], seed)
                attn = block.self_attn
                q, k = attn.W_q(h), attn.W_k(h)
                if isinstance(attn, mha.RotaryMultiHeadAttention):  # rotated at 0 .. L-1
                    q, k = rotate(attn, q, attn.num_heads), rotate(attn, k, attn.num_kv_heads)
                torch.testing.assert_close(view.q, q[0], atol=1e-5, rtol=0)
                torch.testing.assert_close(view.k, k[0], atol=1e-5, rtol=0)
                x = block(x, is_causal=True)


def rotate(attn, x, heads):
    """x (B, L, heads*Dh) with every head rotated as ``attn`` rotates it (``mha.apply_rope``)."""
    B, L, _ = x.shape
    x = x.view(B, L, heads, attn.d_head).transpose(1, 2)  # (B, heads, L, Dh)
    x = mha.apply_rope(x, base=attn.base, interleaved=attn.interleaved)
    return x.transpose(1, 2).reshape(B, L, heads * attn.d_head)


def test_explorer_weights_are_lm_attention(lm):
    for n, source in enumerate(text_sources(lm)):
        for seed, (name, text) in enumerate(PASSAGES.items()):
            r = widgets.explore_once(source=source, seed=seed)
            assert r.ok, r.message
            torch.testing.assert_close(r.weights, reference(lm, text, n), atol=1e-5, rtol=0)
            assert r.tokens == r.key_tokens == sources.text_labels(text)
            c = r.config
            assert (c["mask_kind"], c["seq_len"], c["num_heads"], c["passage"]) == (
                "causal", len(text), lm.num_heads, name)
            assert f'passage "{name}" (seed {seed})' in webview.payload(r)["heads"]["caption"]
    hot = widgets.explore_once(source=source, seed=0, temperature=0.3)
    assert hot.weights.max(-1).values.mean() > r.weights.max(-1).values.mean()
    wrapped = widgets.explore_once(source=source, seed=len(PASSAGES))
    torch.testing.assert_close(wrapped.weights, widgets.explore_once(source=source).weights)
    assert "picks the passage" in wrapped.counts_html()


@pytest.mark.parametrize("temperature", [1.0, 0.4])
def test_page_arithmetic_on_the_export_is_lm_attention(lm, data, temperature):
    texts = list(PASSAGES.values())
    for n, source in enumerate(text_sources(lm)):
        src = data["sources"][source]
        assert src["kind"] == "trained" and src["causal"]
        assert (src["H"], src["H"] * src["Dh"]) == (lm.num_heads, lm.config["d_model"])
        for seed in webview.STATIC_SEEDS:
            view = src["views"][str(seed)]
            text = texts[seed % len(texts)]
            L = len(view["tokens_q"])
            assert L == len(text) and view["name"] == list(PASSAGES)[seed % len(texts)]
            H, Dh = src["H"], src["Dh"]
            weights = page_attention(decode(view["q"]), decode(view["k"]), H, H, Dh, L, L,
                                     H * Dh, H * Dh, temperature, np.tril(np.ones((L, L), bool)))
            expected = reference(lm, text, n) if temperature == 1.0 else widgets.explore_once(
                source=source, seed=seed, temperature=temperature).weights
            np.testing.assert_allclose(weights, expected.double().numpy(), atol=1e-5, rtol=0)


def test_the_export_is_the_queries_and_keys_only(lm, data):
    """What the text sources add to chapter 07's page: float32 queries and keys of every
    exported passage (base64: 4/3 of the bytes), their labels, the table and the note."""
    for source in text_sources(lm):
        src = data["sources"][source]
        chars = sum(len(v["tokens_q"]) for v in src["views"].values())
        tensors = 2 * chars * lm.config["d_model"] * 4 * 4 / 3
        assert tensors < len(json.dumps(src)) < tensors + 6 * chars + 10_000


def test_head_table_holds_chapter_10s_scores(lm):
    """First chapter 10's two scores (``mha_book.lm_heads``: previous token on the held-out
    windows, induction on repeated random letters), which name the heads; then, pooled over
    the passages' queries, the prefix-matching score (n = 2) over the queries with a match, as
    `mha.head_scores` gives it for each passage, weighted by those queries' number."""
    from mha_book import lm_heads

    previous, induction = lm_heads.shipped_scores(lm)
    names = lm_heads.head_names(previous, induction)
    for n, source in enumerate(text_sources(lm)):
        table = sources.head_table(source)
        assert table["columns"] == [*sources.LM_SCORES, *sources.TEXT_PATTERNS]
        assert [r[0] for r in table["rows"]] == [f"head {h}" for h in range(lm.num_heads)]
        prefix, rows_prefix = 0, 0
        for text in ALL_PASSAGES.values():  # the scores use the whole passages
            ids = lm.encode(text)
            w = reference(lm, text, n)[None]  # (1, H, L, L)
            m = int(head_scores.prefix_match_targets(ids, sources.PREFIX_N).any(-1).sum())
            if m:
                prefix = prefix + head_scores.prefix_match_score(w, ids, sources.PREFIX_N) * m
                rows_prefix += m
        got = torch.tensor([r[1:] for r in table["rows"]])  # (H, scores)
        columns = table["columns"]
        torch.testing.assert_close(got[:, columns.index("previous token")], previous[n],
                                   atol=1e-4, rtol=0)
        torch.testing.assert_close(got[:, columns.index("induction")], induction[n],
                                   atol=1e-4, rtol=0)
        torch.testing.assert_close(got[:, columns.index("prefix match")],
                                   prefix / rows_prefix, atol=1e-4, rtol=0)
        assert ((got >= 0) & (got <= 1)).all()
        assert table["names"] == names[n]  # chapter 10's rule, not the 0.8 of chapter 08
        assert table["caption"].startswith("Pattern scores of the Shakespeare model")
        assert "as chapter 10 names it" in table["caption"]
    assert sources.ROLE["prefix match"] == "induction head"


def test_widget_in_a_kernel_draws_lm_attention(lm):
    pytest.importorskip("ipywidgets", reason="the explorer's UI needs ipywidgets")
    from test_widgets import _drawn

    ex = widgets.explorer(temperature=0.5)
    source = text_sources(lm)[-1]
    ex.controls["source"].value = source
    assert ex.controls["temperature"].value == 1.0  # a trained source: as trained
    assert all(ex.controls[k].disabled for k in ("d_model", "num_heads", "seq_len", "sentence"))
    for seed in (0, 2):
        ex.controls["seed"].value = seed
        text = list(PASSAGES.values())[seed]
        expected = reference(lm, text, lm.num_layers - 1)
        torch.testing.assert_close(ex.result.weights, expected, atol=1e-5, rtol=0)
        drawn = _drawn(ex)
        torch.testing.assert_close(torch.tensor(drawn["weights"]), expected, atol=1e-5, rtol=0)
        assert drawn["tokens_q"] == drawn["tokens_k"] == sources.text_labels(text)
        assert drawn["titles"] == [f"head {h}: {name}" for h, name in
                                   enumerate(sources.head_table(source)["names"])]
        assert list(PASSAGES)[seed] in ex.counts.value


@pytest.fixture
def rotary_lm(monkeypatch):
    """A seeded random rotary model of as many layers as the shipped one, in place of the
    shipped model for the explorer's sources (its cached captures and tables cleared before
    and after)."""
    from mha_book.language_model import LanguageModel

    torch.manual_seed(0)
    model = LanguageModel(context_length=256, d_model=32, num_heads=4,
                          num_layers=len(text_sources(load_language_model())), d_ff=64,
                          positions="rotary").eval()
    shipped = sources._model
    caches = (sources._text_capture, sources._text_scores, sources._lm_head_scores,
              sources.head_table)
    for cache in caches:
        cache.cache_clear()
    monkeypatch.setattr(sources, "_model",
                        lambda name: model if name == "shakespeare" else shipped(name))
    yield model
    for cache in caches:
        cache.cache_clear()


def test_a_rotary_models_queries_and_keys_are_rotated(rotary_lm):
    """With rotary positions the exported queries and keys are the rotated ones: the explorer's
    weights and the page's arithmetic on them are still ``lm.attention``."""
    lm = rotary_lm
    assert isinstance(lm.encoder.layers[0].self_attn, mha.RotaryMultiHeadAttention)
    texts = list(PASSAGES.values())
    for n, source in enumerate(text_sources(lm)):
        for seed in range(len(PASSAGES)):
            text = texts[seed][:sources.TEXT_CHARS]
            expected = reference(lm, text, n)
            r = widgets.explore_once(source=source, seed=seed)
            assert r.ok, r.message
            torch.testing.assert_close(r.weights, expected, atol=1e-5, rtol=0)
            view = sources.trained_view(source, seed)
            L, H, Dh = len(text), view.num_heads, view.d_head
            weights = page_attention(view.q.numpy(), view.k.numpy(), H, H, Dh, L, L, H * Dh,
                                     H * Dh, 1.0, np.tril(np.ones((L, L), bool)))
            np.testing.assert_allclose(weights, expected.double().numpy(), atol=1e-5, rtol=0)
            if seed == 0:  # unrotated, the scores would differ
                attn = lm.encoder.layers[n].self_attn
                with torch.no_grad():
                    x = lm.encoder.embed(lm.encode(text)[None])
                    for block in lm.encoder.layers[:n]:
                        x = block(x, is_causal=True)
                    h = lm.encoder.layers[n].res_attn.norm(x)
                    plain = page_attention(attn.W_q(h)[0].numpy(), attn.W_k(h)[0].numpy(), H, H,
                                           Dh, L, L, H * Dh, H * Dh, 1.0,
                                           np.tril(np.ones((L, L), bool)))
                assert np.abs(plain - expected.double().numpy()).max() > 1e-3

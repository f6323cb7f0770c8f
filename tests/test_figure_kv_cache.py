"""Chapter 11's live figures compute what the package and PyTorch compute (mha_book.figures.kv_cache)."""

import math
import re

import pytest
import torch

from mha import record_attention
from mha.configs import MODELS, kv_cache_bytes
from mha_book import tasks, tiny
from mha_book.decode import generate
from mha_book.figures import kv_cache


def test_decoding_with_the_cache_writes_what_generate_writes():
    run = kv_cache.decode_run()
    model = tiny.load_pretrained("translation")
    task = tasks.make_task("translation")
    sentence = task.sample(1, seed=kv_cache.SEED)
    ids, logits = generate(model, sentence.inputs, task.tgt_len, bos=task.bos,
                           use_cache=False)  # no cache: the whole prefix every step
    assert run["written"] == task.decode_tgt(ids[0]) == run["targets"]
    torch.testing.assert_close(run["logits"], logits[0], atol=1e-5, rtol=1e-5)


def test_the_new_query_reads_every_cached_key_as_the_full_pass_does():
    """Step t's weights (H, t + 1) equal row t of the causal weights of a full pass."""
    run = kv_cache.decode_run()
    model = tiny.load_pretrained("translation")
    task = tasks.make_task("translation")
    sentence = task.sample(1, seed=kv_cache.SEED)
    with torch.no_grad(), record_attention(model) as rec:
        model(sentence.inputs, run["ids"][:, :-1])  # teacher forcing: all 12 at once
    for layer in kv_cache.LAYERS:
        full = rec[f"decoder.layers.{layer}.self_attn"][0]  # (H, L, L)
        for t, w in enumerate(run["weights"][layer]):
            assert w.shape == (4, t + 1)
            torch.testing.assert_close(w, full[:, t, :t + 1], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(w.sum(-1), torch.ones(4))


def test_the_cache_grows_by_one_position_a_step():
    run = kv_cache.decode_run()
    fig = kv_cache.decode_steps()
    assert len(fig.states) == 12 * 2
    for layer in kv_cache.LAYERS:
        assert run["shape"][layer] == [(1, 4, t + 1, 8) for t in range(12)]
        assert run["nbytes"][layer] == [2 * 4 * 8 * 4 * (t + 1) for t in range(12)]
    s = fig.state(step=5, layer=1)
    assert len(s["views"]["weights"]["cols"]) == 6 and "1,536 bytes" in s["readout"]


def test_cache_sizes_are_kv_cache_bytes_of_the_chapters_models():
    fig = kv_cache.kv_cache_size()
    assert len(fig.states) == len(MODELS) * 3 * len(kv_cache.CONTEXTS)
    for name, c in MODELS.items():
        for context in kv_cache.CONTEXTS:
            if context > c.context:
                continue
            s = fig.state(model=name, context=context)
            got = s["views"]["sizes"]["values"]
            want = [kv_cache_bytes(c.num_layers, kv, c.d_head, context) / 2**20
                    for kv in (c.num_heads, 8, 1)]
            if c.num_heads % 8:  # Falcon-7B's 71 heads: no GQA with 8 groups
                assert got[1] is None
                want[1] = None
            for g, w in zip(got, want):
                assert (g is None and w is None) or math.isclose(g, w, abs_tol=1e-5)
            # in MiB every number is exact: whole numbers, written as such
            assert all(g is None or g == int(g) for g in got)
    # the chapter's numbers: Llama 2 70B 1.25 GiB as built (GQA 8), 10 GiB as MHA at 4096
    s = fig.state(model="Llama 2 70B", context=4096)
    assert s["views"]["sizes"]["values"][:2] == [10 * 1024, 1.25 * 1024]
    assert s["state"]["mib"] == 1280 and "320 KiB per token" in s["readout"]
    assert "4,096 tokens (its full context) x 320 KiB = 1,280 MiB (1.25 GiB) for one" \
        in s["readout"]
    assert fig.state(model="Falcon-7B", kind="GQA")["state"]["mib"] is None


def test_each_model_is_offered_only_its_own_contexts():
    """The slider went to 128K for every model, past the contexts the chapter's table gives
    ("Llama 2 7B ... 64 GiB for one sequence of 131,072 tokens"): each state now caps it at the
    model's context, and a setting past it shows the model's context."""
    fig = kv_cache.kv_cache_size()
    for name, c in MODELS.items():
        top = kv_cache.CONTEXTS.index(c.context)
        for kind in kv_cache.KINDS:
            for context in kv_cache.CONTEXTS:
                s = fig.state(model=name, kind=kind, context=context)
                assert s["limits"] == {"context": {"max": top, "reset": "model", "to": "max"}}
                assert s["state"]["context"] == min(context, c.context)
                assert max(s["views"]["growth"]["x"]) == c.context
    assert kv_cache.CONTEXTS[0] == 512 and kv_cache.CONTEXTS[-1] == max(c.context for c in
                                                                 MODELS.values())
    with pytest.raises(ValueError, match="at most GPT-3 175B's 2,048"):
        kv_cache.kv_cache_size(model="GPT-3 175B", context=8192)


def test_as_built_follows_mistrals_sliding_window():
    """Mistral 7B v0.1's window (mha.configs, from its paper's Table 1) caps its cache at 4,096
    positions: 512 MiB at 8,192 tokens, not the 1,024 of a cache that keeps every position."""
    mistral = MODELS["Mistral 7B"]
    s = kv_cache.size_state("Mistral 7B", "GQA", 8192)
    series = {x["label"]: x["y"] for x in s["views"]["growth"]["series"]}
    assert list(series) == ["as built: GQA 8, window 4,096", "chosen: GQA 8, all kept"]
    # each line as a multiple of its own cache at 512 tokens: all kept, 16 times at 8,192
    assert series["chosen: GQA 8, all kept"][-1] == 16
    built = series["as built: GQA 8, window 4,096"]
    want = [kv_cache_bytes(32, 8, 128, mistral.cached_positions(n)) / 2**20
            for n in (512, 1024, 2048, 4096, 8192)]
    assert built == [w / want[0] for w in want] and built[-2:] == [8, 8]
    assert want[-2:] == [512, 512]
    assert s["state"]["built_mib"] == 512
    assert "sliding window of 4,096 positions caps the cache at 4,096 positions: 512 MiB" \
        in s["readout"]
    # a model without a window: the chosen kind's line lies on the model as built's
    one = kv_cache.size_state("Llama 3 8B", "GQA", 8192)["views"]["growth"]["series"]
    assert [x["label"] for x in one] == ["as built: GQA 8", "chosen: GQA 8"]
    assert one[0]["y"] == one[1]["y"]


def test_the_growth_plot_is_log_log_and_every_line_has_slope_1():
    """Proportional growth drawn on log-log axes is a straight line of slope 1 (a log x-axis
    with a linear y-axis made it look exponential); Mistral's as-built line is flat past its
    window."""
    for name, c in MODELS.items():
        for kind in kv_cache.KINDS:
            growth = kv_cache.size_state(name, kind, c.context)["views"]["growth"]
            assert growth["x_log"] and growth["y_log"] and "y_min" not in growth
            assert growth["square"]  # a doubling as long on both axes: slope 1 at 45 deg
            assert "log scale" in growth["x_label"] and "log scale" in growth["y_label"]
            x = torch.tensor(growth["x"], dtype=torch.float64).log2()
            for series in growth["series"]:
                y = torch.tensor(series["y"], dtype=torch.float64).log2()
                slopes = (y[1:] - y[:-1]) / (x[1:] - x[:-1])
                want = torch.tensor([1.0 if c.window is None or n <= c.window else 0.0
                                     for n in growth["x"][1:]], dtype=torch.float64)
                if "as built" not in series["label"]:
                    want = torch.ones_like(slopes)
                torch.testing.assert_close(slopes, want, atol=1e-3, rtol=0)


def test_the_ring_is_on_the_chosen_kinds_line_only():
    for name in MODELS:
        for kind in kv_cache.KINDS:
            growth = kv_cache.size_state(name, kind, 2048)["views"]["growth"]
            gqa_missing = kind == "GQA" and MODELS[name].num_heads % 8
            assert growth["marker_series"] == ([] if gqa_missing else [1])


def test_the_chosen_kind_is_the_accent_colour_in_both_views():
    """Orange meant the chosen kind in the bars but "as built" in the line plot. The front end
    draws a plot's second series, and a highlighted bar, in the accent colour: the chosen
    kind's line is second (the model as built first), its bar highlighted, and both captions
    say so; the line's numbers are its bar's at the chosen context."""
    for name, c in MODELS.items():
        for kind in kv_cache.KINDS:
            s = kv_cache.size_state(name, kind, c.context)
            sizes, growth = s["views"]["sizes"], s["views"]["growth"]
            assert sizes["highlight"] == [kv_cache.KINDS.index(kind)]
            assert "(accent: chosen)" in sizes["caption"]
            labels = [x["label"] for x in growth["series"]]
            assert labels[0].startswith("as built: ")
            if s["state"]["mib"] is None:  # Falcon-7B has no GQA: the model as built alone
                assert len(labels) == 1
                continue
            assert labels[1].startswith(f"chosen: {kind} ")
            # the line: the chosen kind's cache over its cache at the first context
            chosen = growth["series"][1]["y"]
            kv = kv_cache.kv_heads(c, kind)
            first = kv_cache_bytes(c.num_layers, kv, c.d_head, kv_cache.CONTEXTS[0]) / 2**20
            assert chosen[growth["marker"]] * first == pytest.approx(
                sizes["values"][kv_cache.KINDS.index(kind)])


def test_readouts_count_heads_and_quote_the_tokens_written():
    s = kv_cache.size_state("Falcon-7B", "MQA", 2048)["readout"]
    assert "(1 key/value head of 71)" in s and "1 key/value heads" not in s
    fig = kv_cache.kv_cache_size()
    for state in list(fig.states.values()) + list(kv_cache.decode_steps().states.values()):
        assert not re.search(r"\b1 (key/value heads|keys|tokens|bytes)\b", state["readout"])
    assert "(8 key/value heads of 32)" in kv_cache.size_state("Mistral 7B", "GQA", 2048)["readout"]
    run = kv_cache.decode_run()
    last = kv_cache.decode_state(11, 0)["readout"]
    assert run["written"][-1] == "."  # the model's full stop is a token of its own
    assert "wrote the token '.'" in last
    assert last.endswith("\u201c" + " ".join(run["written"]) + "\u201d") and ".." not in last
    assert "1 token (" in kv_cache.decode_state(0, 0)["readout"]

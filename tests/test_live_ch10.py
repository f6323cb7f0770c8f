"""Chapter 10's live figures compute what the package and PyTorch compute (mha.live.ch10)."""

import math

import torch

from mha import record_attention, tasks, tiny
from mha.configs import MODELS, kv_cache_bytes
from mha.decode import generate
from mha.live import ch10


def test_decoding_with_the_cache_writes_what_generate_writes():
    run = ch10.decode_run()
    model = tiny.load_pretrained("translation")
    task = tasks.make_task("translation")
    sentence = task.sample(1, seed=ch10.SEED)
    ids, logits = generate(model, sentence.inputs, task.tgt_len, bos=task.bos,
                           use_cache=False)  # no cache: the whole prefix every step
    assert run["written"] == task.decode_tgt(ids[0]) == run["targets"]
    torch.testing.assert_close(run["logits"], logits[0], atol=1e-5, rtol=1e-5)


def test_the_new_query_reads_every_cached_key_as_the_full_pass_does():
    """Step t's weights (H, t + 1) equal row t of the causal weights of a full pass."""
    run = ch10.decode_run()
    model = tiny.load_pretrained("translation")
    task = tasks.make_task("translation")
    sentence = task.sample(1, seed=ch10.SEED)
    with torch.no_grad(), record_attention(model) as rec:
        model(sentence.inputs, run["ids"][:, :-1])  # teacher forcing: all 12 at once
    for layer in ch10.LAYERS:
        full = rec[f"decoder.layers.{layer}.self_attn"][0]  # (H, L, L)
        for t, w in enumerate(run["weights"][layer]):
            assert w.shape == (4, t + 1)
            torch.testing.assert_close(w, full[:, t, :t + 1], atol=1e-5, rtol=1e-5)
            torch.testing.assert_close(w.sum(-1), torch.ones(4))


def test_the_cache_grows_by_one_position_a_step():
    run = ch10.decode_run()
    fig = ch10.decode_steps()
    assert len(fig.states) == 12 * 2
    for layer in ch10.LAYERS:
        assert run["shape"][layer] == [(1, 4, t + 1, 8) for t in range(12)]
        assert run["nbytes"][layer] == [2 * 4 * 8 * 4 * (t + 1) for t in range(12)]
    s = fig.state(step=5, layer=1)
    assert len(s["views"]["weights"]["cols"]) == 6 and "1,536 bytes" in s["readout"]


def test_cache_sizes_are_kv_cache_bytes_of_the_chapters_models():
    fig = ch10.kv_cache_size()
    assert len(fig.states) == len(MODELS) * 3 * len(ch10.CONTEXTS)
    for name, c in MODELS.items():
        for context in ch10.CONTEXTS:
            s = fig.state(model=name, context=context)
            got = s["views"]["sizes"]["values"]
            want = [kv_cache_bytes(c.num_layers, kv, c.d_head, context) / 2**30
                    for kv in (c.num_heads, 8, 1)]
            if c.num_heads % 8:  # Falcon-7B's 71 heads: no GQA with 8 groups
                assert got[1] is None
                want[1] = None
            for g, w in zip(got, want):
                assert (g is None and w is None) or math.isclose(g, w, abs_tol=1e-5)
    # the chapter's numbers: Llama 2 70B 1.25 GiB as built (GQA 8), 10 GiB as MHA at 4096
    s = fig.state(model="Llama 2 70B", context=4096)
    assert s["views"]["sizes"]["values"][:2] == [10.0, 1.25]
    assert s["state"]["gib"] == 1.25 and "320 KiB per token" in s["readout"]
    assert fig.state(model="Falcon-7B", kind="GQA")["state"]["gib"] is None


def test_the_growth_plot_is_log_log_and_every_line_has_slope_1():
    """Proportional growth drawn on log-log axes is a straight line of slope 1 (a log x-axis
    with a linear y-axis made it look exponential)."""
    for name in MODELS:
        for kind in ch10.KINDS:
            growth = ch10.size_state(name, kind, 8192)["views"]["growth"]
            assert growth["x_log"] and growth["y_log"] and "y_min" not in growth
            assert "log scale" in growth["x_label"] and "log scale" in growth["y_label"]
            x = torch.tensor(growth["x"], dtype=torch.float64).log2()
            for series in growth["series"]:
                if series["y"][0] is None:  # Falcon-7B: no GQA with 8 groups
                    continue
                y = torch.tensor(series["y"], dtype=torch.float64).log2()
                slopes = (y[1:] - y[:-1]) / (x[1:] - x[:-1])
                torch.testing.assert_close(slopes, torch.ones_like(slopes), atol=1e-3, rtol=0)


def test_readouts_count_heads_and_quote_the_tokens_written():
    s = ch10.size_state("Falcon-7B", "MQA", 2048)["readout"]
    assert "(1 key/value head of 71)" in s and "1 key/value heads" not in s
    assert "(8 key/value heads of 32)" in ch10.size_state("Mistral 7B", "GQA", 2048)["readout"]
    run = ch10.decode_run()
    last = ch10.decode_state(11, 0)["readout"]
    assert run["written"][-1] == "."  # the model's full stop is a token of its own
    assert "wrote the token '.'" in last
    assert last.endswith("\u201c" + " ".join(run["written"]) + "\u201d") and ".." not in last
    assert "1 token (" in ch10.decode_state(0, 0)["readout"]

"""Chapter 15's live figures compute what the package and plain loops compute
(mha_book.figures.fixed_state): the states of linear attention and the (gated) delta rule after
each write, what they return for each key, and the hybrid models' memory
(``mha.configs.HybridConfig``)."""

import math

import pytest
import torch

from mha import delta_rule, gated_delta_rule, linear_attention
from mha.configs import DEEPSEEK_V3, HYBRIDS, MODELS, latent_cache_bytes
from mha_book import figures
from mha_book.figures import fixed_state as fs

RULES = list(fs.RULES)


def by_hand(gate, steps):
    """The state after ``steps`` writes, in float64 plain loops: linear attention (gate None)
    adds k v^T; the delta rule scales by the gate, then adds k (v - S^T k)^T."""
    K = fs.keys().double()
    S = torch.zeros(4, 4, dtype=torch.float64)
    for name, j in fs.WRITES[:steps]:
        k, v = K[fs.KEYS.index(name)], torch.eye(4, dtype=torch.float64)[j - 1]
        if gate is None:
            S = S + torch.outer(k, v)
        else:
            S = gate * S
            S = S + torch.outer(k, v - k @ S)
    return S


def sequence():
    """The writes as a sequence (1, 1, L, 4): keys and one-hot values."""
    K = fs.keys()
    k = torch.stack([K[fs.KEYS.index(n)] for n, _ in fs.WRITES])[None, None]
    v = torch.stack([torch.eye(4)[j - 1] for _, j in fs.WRITES])[None, None]
    return k, v


def test_the_keys_are_unit_vectors_four_nearly_orthogonal_two_mixtures():
    K = fs.keys()
    torch.testing.assert_close(K.norm(dim=1), torch.ones(6))
    cos = K[:4] @ K[:4].T
    off = cos - torch.eye(4)
    assert 0 < float(off.abs().max()) <= 0.3  # nearly orthogonal, not exactly
    a, b, c, d = K[:4]
    torch.testing.assert_close(K[4], (a + b) / (a + b).norm())
    torch.testing.assert_close(K[5], (c - d) / (c - d).norm())
    # a, b and c are written twice: overwrites; every key is written
    names = [n for n, _ in fs.WRITES]
    assert {n for n in names if names.count(n) > 1} == {"a", "b", "c"}
    assert set(names) == set(fs.KEYS)


@pytest.mark.parametrize("rule", RULES)
def test_every_state_is_the_plain_loops(rule):
    for t, (S, _) in enumerate(fs.run(rule)):
        torch.testing.assert_close(S.double(), by_hand(fs.RULES[rule], t + 1), atol=1e-5,
                                   rtol=0)


def test_the_last_states_are_the_packages_whole_sequence_rules():
    """Token by token (delta_rule_step, linear_attention with L = 1, as the figure runs them)
    equals the package's rules over the whole sequence, by chunks of 4."""
    k, v = sequence()
    L = k.size(2)
    _, S = linear_attention(k, k, v, scale=1.0, chunk_size=4)
    torch.testing.assert_close(fs.run("linear attention")[-1][0], S[0, 0], atol=1e-5, rtol=0)
    torch.testing.assert_close(S[0, 0], k[0, 0].T @ v[0, 0], atol=1e-5, rtol=0)  # sum k v^T
    _, S = delta_rule(k, k, v, torch.ones(1, 1, L), scale=1.0, chunk_size=4)
    torch.testing.assert_close(fs.run("delta rule")[-1][0], S[0, 0], atol=1e-5, rtol=0)
    for gate in (0.9, 0.7):
        decay = torch.full((1, 1, L), math.log(gate))
        _, S = gated_delta_rule(k, k, v, decay, torch.ones(1, 1, L), scale=1.0, chunk_size=4)
        got = fs.run(f"gated delta rule, gate {gate}")[-1][0]
        torch.testing.assert_close(got, S[0, 0], atol=1e-5, rtol=0)


@pytest.mark.parametrize("rule", RULES)
def test_the_figure_draws_the_state_and_what_it_returns(rule):
    fig = fs.delta_state()
    K = fs.keys()
    for t, (S, out) in enumerate(fs.run(rule)):
        s = fig.state(rule=rule, step=t)
        views = s["views"]
        torch.testing.assert_close(torch.tensor(views["state"]["grids"][0]), S, atol=1e-3,
                                   rtol=0)
        assert views["state"]["cols"] == views["returned"]["cols"] == ["v1", "v2", "v3", "v4"]
        latest = {}
        for name, j in fs.WRITES[:t + 1]:
            latest[name] = j
        back = views["returned"]["grids"][0]
        dist = views["error"]["values"]
        for i, name in enumerate(fs.KEYS):
            if name not in latest:  # not written yet: no numbers, no bar
                assert back[i] == [None] * 4 and dist[i] is None
                continue
            want = K[i] @ S  # S^T k
            torch.testing.assert_close(torch.tensor(back[i]), want, atol=1e-3, rtol=0)
            err = float((want - torch.eye(4)[latest[name] - 1]).norm())
            assert math.isclose(dist[i], err, abs_tol=1e-3)
            assert (name in s["state"]["right"]) == (err < fs.RIGHT)
            # the bars in the accent colour: the keys returned wrong
            assert (i in views["error"]["highlight"]) == (err >= fs.RIGHT)
        # the outlines: each written key's latest value
        assert sorted(map(tuple, views["returned"]["marks"])) == sorted(
            (0, fs.KEYS.index(n), j - 1) for n, j in latest.items())
        # what the layer outputs at this token is what the state returns for its key
        name = fs.WRITES[t][0]
        torch.testing.assert_close(out, K[fs.KEYS.index(name)] @ S, atol=1e-5, rtol=0)
        assert views["error"]["highlight"] == [fs.KEYS.index(n) for n in s["state"]["wrong"]]


def _nan(x):
    """Nested lists with None (a NaN sent as JSON's null) as NaN."""
    return [_nan(v) for v in x] if isinstance(x, list) else math.nan if x is None else x


def test_what_is_drawn_has_no_round_off():
    """Numbers under SHOWN_ZERO in size are drawn as 0 (the delta rule's distance after a
    write is 1e-7, its state's 8e-5 at step 4); the others as computed."""
    zeroed = 0
    for rule in RULES:
        for t, (S, _) in enumerate(fs.run(rule)):
            views = fs.write_state(rule, t)["views"]
            back, dist = fs._returned(S, t)
            for got, want in ((views["state"]["grids"][0], S),
                              (views["returned"]["grids"][0], back),
                              (views["error"]["values"], dist)):
                flat = torch.tensor(_nan(got), dtype=torch.float64).flatten()
                want = want.double().flatten()
                assert not ((flat != 0) & (flat.abs() < fs.SHOWN_ZERO)).any(), (rule, t)
                tiny = want.abs() < fs.SHOWN_ZERO
                assert (flat[tiny] == 0).all()
                torch.testing.assert_close(flat[~tiny], want[~tiny], atol=5e-4, rtol=0,
                                           equal_nan=True)
                zeroed += int((tiny & (want != 0)).sum())
    assert zeroed > 0
    assert fs.write_state("delta rule", 0)["views"]["error"]["values"][0] == 0.0


def test_linear_attention_is_wrong_where_the_delta_rule_is_right():
    """Step 5 writes a a second time: linear attention returns the old and the new value
    added, the delta rule the new one; the mixtures e and f blur linear attention's keys. The
    delta rule always returns the value of the key just written (beta 1), with a gate too."""
    fig = fs.delta_state()

    def right(rule, step):
        return fig.state(rule=rule, step=step)["state"]["right"]

    for rule in RULES:  # four nearly orthogonal keys: every rule holds them (no gate yet)
        if fs.RULES[rule] in (None, 1.0, 0.9):
            assert right(rule, 3) == ["a", "b", "c", "d"], rule
    assert "a" not in right("linear attention", 4) and "a" in right("delta rule", 4)
    lin_a = fig.state(rule="linear attention", step=4)["views"]["returned"]["grids"][0][0]
    assert lin_a[0] > 0.9 and lin_a[2] > 0.85  # value 1 and value 3, added
    assert right("delta rule", 4) == ["a", "b", "c", "d"]
    assert right("linear attention", len(fs.WRITES) - 1) == []
    for step in range(len(fs.WRITES)):
        lin, delta = right("linear attention", step), right("delta rule", step)
        assert len(delta) >= len(lin)
        name = fs.WRITES[step][0]
        for rule in RULES[1:]:
            assert name in right(rule, step), (rule, step)
    # six keys in four dimensions: no rule holds them all at the end
    assert all(len(right(r, len(fs.WRITES) - 1)) < 6 for r in RULES)
    # the gate 0.7 forgets: a, written at step 1, is faded by step 3
    assert "a" not in right("gated delta rule, gate 0.7", 2)
    assert "a" in right("delta rule", 2)


def test_one_colour_scale_for_every_rule_and_step():
    fig = figures.build("delta_state")
    assert len(fig.states) == len(fs.RULES) * len(fs.WRITES)
    M = fs.state_scale()
    tops = []
    for s in fig.states.values():
        for view in ("state", "returned"):
            d = s["views"][view]
            assert (d["vmin"], d["vmax"], d["scale"]) == (-M, M, "diverging")
            tops += [abs(x) for row in d["grids"][0] for x in row if x is not None]
        assert s["views"]["error"]["y_max"] >= max(x or 0 for x in s["views"]["error"]["values"])
    assert max(tops) <= M < max(tops) + 0.25


def test_the_readouts_say_what_was_written_and_how_many_keys_return_their_value():
    fig = fs.delta_state()
    s = fig.state(rule="linear attention", step=4)["readout"]
    assert s.startswith("Step 5 of 10 wrote a \u2192 3 (written before with 1: an overwrite)")
    assert "bytes" not in s  # the state's size is in the state's caption, not each readout
    assert "right value for 3 of the 4 keys written: b, c and d; wrong for a." in s
    s = fig.state(rule="delta rule", step=0)["readout"]
    assert "returns the right value for a, the one key written. a returns (1.00, 0.00, 0.00, " \
           "0.00) against its value 1 (1.00, 0.00, 0.00, 0.00): 0.00 away." in s
    s = fig.state(rule="linear attention", step=9)["readout"]
    assert "returns the right value for none of the 6 keys written." in s
    for state in fig.states.values():
        assert "-0.00" not in state["readout"]
        assert state["views"]["state"]["caption"].endswith(
            ": 4 x 4 = 16 numbers, 64 bytes in float32 at every step")


# ----------------------------------------------------------------------------- the memory

def test_the_memory_is_the_configs_bytes():
    fig = fs.hybrid_memory()
    assert len(fig.states) == len(HYBRIDS) * len(fs.CONTEXTS)
    llama = MODELS["Llama 3 8B"]
    for name, c in HYBRIDS.items():
        for n in fs.CONTEXTS:
            if n > c.context:
                continue
            s = fig.state(model=name, context=n)
            want = [c.cache_bytes(n), c.all_full_bytes(n), llama.cache_bytes(n),
                    latent_cache_bytes(61, 512, 64, n)]
            assert s["state"]["bytes"] == want
            assert s["state"]["state_bytes"] == c.state_bytes()
            assert s["state"]["full_bytes"] == c.full_cache_bytes(n)
            unit = s["state"]["unit"]
            assert unit == ("GiB" if max(want) >= 2**30 else "MiB")
            div = 2**30 if unit == "GiB" else 2**20
            got = s["views"]["sizes"]["values"]
            assert all(math.isclose(g, w / div, abs_tol=1e-4) for g, w in zip(got, want))
            assert s["views"]["sizes"]["y_label"] == unit
            growth = s["views"]["growth"]
            i = growth["x"].index(n)
            assert growth["marker"] == i and growth["marker_series"] == [1]
            # every layer full first, the model as built second (the accent colour), ringed
            assert [x["label"] for x in growth["series"]] == [
                "every layer full", "as built", "Llama 3 8B (GQA), upper grey",
                "DeepSeek-V3 (MLA), lower grey"]
            # the two greys: Llama 3 8B's line is the upper one, as its label says
            assert all(a > b for a, b in zip(growth["series"][2]["y"],
                                             growth["series"][3]["y"]))
            for series, w in zip(growth["series"], [want[1], want[0], want[2], want[3]]):
                assert math.isclose(series["y"][i], w / 2**30, rel_tol=1e-4)
            assert s["views"]["sizes"]["highlight"] == [0]  # as built: the accent colour
    assert DEEPSEEK_V3.kv_rank == 512 and DEEPSEEK_V3.qk_rope_dim == 64


def test_each_model_is_offered_contexts_up_to_its_own():
    """Each state caps the context slider at the model's context, and nothing more: a new
    model keeps the reader's context (the front end brings one past the cap down to it)."""
    fig = fs.hybrid_memory()
    for name, c in HYBRIDS.items():
        top = max(n for n in fs.CONTEXTS if n <= c.context)
        assert top == c.context  # every hybrid's context is a power of 2 of the slider
        for n in fs.CONTEXTS:
            s = fig.state(model=name, context=n)
            assert s["state"]["context"] == min(n, top)
            assert s["limits"] == {"context": {"max": fs.CONTEXTS.index(top)}}
            assert s["views"]["growth"]["x"] == [x for x in fs.CONTEXTS if x <= top]
    assert fs.CONTEXTS[0] == 4096 and fs.CONTEXTS[-1] == 2**20
    with pytest.raises(ValueError, match="at most OLMo-Hybrid-7B's 65,536"):
        fs.hybrid_memory(model="OLMo-Hybrid-7B", context=2**17)


def test_the_plot_is_log_log_in_gib_and_the_state_flattens_the_hybrid():
    """Every full-attention line has slope 1 on log-log axes; the hybrid's is below 1 where its
    fixed state is a large part of its memory (Kimi Linear at 4K: 41.4 MiB of state, 31.5 MiB
    of cache) and tends to 1."""
    for name in HYBRIDS:
        g = fs.hybrid_state(name, 4096)["views"]["growth"]
        assert g["x_log"] and g["y_log"] and g["y_label"] == "GiB, log scale"
        x = torch.tensor(g["x"], dtype=torch.float64).log2()
        for series in g["series"]:
            y = torch.tensor(series["y"], dtype=torch.float64).log2()
            slopes = (y[1:] - y[:-1]) / (x[1:] - x[:-1])
            if series["label"] != "as built":  # all full, GQA, MLA: in proportion
                torch.testing.assert_close(slopes, torch.ones_like(slopes), atol=1e-3, rtol=0)
            else:
                assert (slopes < 1).all() and (slopes[1:] >= slopes[:-1]).all()
    kimi = fs.hybrid_state("Kimi-Linear-48B-A3B", 4096)["views"]["growth"]["series"][1]["y"]
    assert kimi[0] * 2**30 == pytest.approx(HYBRIDS["Kimi-Linear-48B-A3B"].cache_bytes(4096),
                                            rel=1e-4)


def test_the_readout_and_table_of_qwen3_next_at_its_context():
    s = fs.hybrid_state("Qwen3-Next-80B-A3B", 262144)
    r = s["readout"]
    # the state: 36 x (32 x 128 x 128 x 4 + 3 x 8192 x 2) = 77,266,944 bytes, 73.69 MiB
    assert r.startswith("Qwen3-Next-80B-A3B at 262,144 tokens (its full context): its 36 "
                        "linear-attention layers (Gated DeltaNet) hold a state of 73.7 MiB "
                        "whatever the context; ")
    assert "its 12 full-attention layers (GQA, 2 kv heads of 256) cache 6.00 GiB (24 KiB a " \
           "token)" in r
    # (6 GiB + 73.69 MiB) / 24 GiB = 0.2530
    assert "Together 6.07 GiB, 25 % of the 24.00 GiB of every layer full attention." in r
    assert "lies on" not in r
    assert len(r) < 330  # a few lines on a phone
    rows = dict(s["views"]["layers"]["rows"])
    assert rows["state, a linear layer"] == ("32 value heads x 128 x 128 = 524,288 numbers, "
                                             "and the convolution's last 3 inputs")
    # the bars: Llama 3 8B's shape (GQA) would cache 32.00 GiB, DeepSeek-V3's (MLA) 17.16 GiB
    assert [round(b, 2) for b in s["views"]["sizes"]["values"][2:]] == [32.00, 17.16]
    assert rows["linear layers"] == "36 (Gated DeltaNet)"
    assert rows["full layers"] == "12 (GQA, 2 kv heads of 256)"
    assert rows["state of the linear layers"] == "73.7 MiB"
    assert rows["total, as built"] == "6.07 GiB"
    assert rows["as built / every layer full"] == "25 %"
    assert s["views"]["layers"]["caption"] == (
        "The state in float32 (4 bytes a number, as transformers keeps it); the cache and the "
        "convolution's inputs at 2 bytes (bfloat16)")
    qwen35 = fs.hybrid_state("Qwen3.5-27B", 262144)  # 48 x (48 x 128^2 x 4 + 3 x 10240 x 2)
    assert qwen35["state"]["state_bytes"] == 153_944_064
    assert "hold a state of 146.8 MiB" in qwen35["readout"]
    kimi = fs.hybrid_state("Kimi-Linear-48B-A3B", 4096)
    assert kimi["state"]["unit"] == "MiB" and "(7.88 KiB a token)" in kimi["readout"]
    assert dict(kimi["views"]["layers"]["rows"])["full layers"] == (
        "7 (MLA, latent 512 + rotary key 64)")


def test_olmo_hybrids_line_lies_on_llama_3_8bs():
    """OLMo Hybrid's 8 full layers are MHA with 30 key/value heads: 61,440 numbers a token,
    against Llama 3 8B's 65,536 (and its state is 52.2 MiB): the readout says the two lines
    lie together, at every context, and for no other model."""
    for n in (4096, 65536):
        r = fs.hybrid_state("OLMo-Hybrid-7B", n)["readout"]
        assert r.endswith("its 8 full layers are multi-head attention with 30 key/value "
                          "heads, 8 x 2 x 30 x 128 = 61,440 numbers a token, against Llama 3 "
                          "8B's 32 x 2 x 8 x 128 = 65,536.")
    assert "Its line lies on Llama 3 8B's (within 4 % of it)" in fs.hybrid_state(
        "OLMo-Hybrid-7B", 4096)["readout"]  # 532.2 MiB against 512 MiB
    assert "Its line lies on Llama 3 8B's (within 6 % of it)" in fs.hybrid_state(
        "OLMo-Hybrid-7B", 65536)["readout"]  # 7.55 GiB against 8 GiB
    for name, c in HYBRIDS.items():
        for n in fs.CONTEXTS:
            if n > c.context:
                continue
            s = fs.hybrid_state(name, n)
            a, llama = s["state"]["bytes"][0], s["state"]["bytes"][2]
            assert ("lies on Llama 3 8B's" in s["readout"]) == (abs(a / llama - 1) <= 0.1)
            assert ("lies on" in s["readout"]) == (name == "OLMo-Hybrid-7B")


@pytest.mark.parametrize("n, text", [(77_266_944, "73.7 MiB"), (2**30, "1.00 GiB"),
                                     (6 * 2**30 + 77_266_944, "6.07 GiB"),
                                     (17.15625 * 2**30, "17.16 GiB"),
                                     (68.625 * 2**30, "68.63 GiB"),  # as the bars write it
                                     (2**40, "1,024.00 GiB")])
def test_size_text(n, text):
    assert fs.size_text(n) == text

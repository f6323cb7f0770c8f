"""Chapter 14's live figures compute what the package and PyTorch compute (mha_book.figures.modern_layers)."""

import json
import math
import re

import pytest
import torch
from live_texts import strings
from node_js import LIB, run_modules

from mha import record_attention
from mha.configs import DEEPSEEK_V3, kv_cache_bytes, latent_cache_bytes
from mha_book.figures import modern_layers
from mha_book.language_model import load_language_model, token_labels

KINDS = ("MHA", "GQA", "MQA", "MLA")


@pytest.fixture(scope="module")
def cache_fig():
    return modern_layers.kv_bytes()


@pytest.fixture(scope="module")
def sink_fig():
    return modern_layers.window_sink()


def valid(num_heads):
    return [kv for kv in modern_layers.KV_HEADS if kv <= num_heads and num_heads % kv == 0]


# ----------------------------------------------------------------------------- kv-bytes

def test_bars_are_the_packages_bytes_per_token(cache_fig):
    assert len(cache_fig.states) == 5 * 8 * 5 * 4
    for num_heads in modern_layers.NUM_HEADS:
        for kv in valid(num_heads):
            for rank in modern_layers.KV_RANKS:
                s = cache_fig.state(num_heads=num_heads, kv_heads=kv, kv_rank=rank)
                want = [kv_cache_bytes(61, num_heads, 128), kv_cache_bytes(61, kv, 128),
                        kv_cache_bytes(61, 1, 128), latent_cache_bytes(61, rank, 64)]
                got = [v * 2**10 for v in s["views"]["sizes"]["values"]]  # KiB -> bytes
                assert got == want, (num_heads, kv, rank)
                assert want == [modern_layers.per_token(num_heads, kv, rank)[k] for k in KINDS]
                # by hand: 2 (keys, values) x layers x kv heads x d_head x 2 bytes; MLA one
                # latent and one rotary key a layer
                assert want[1] == 2 * 61 * kv * 128 * 2 and want[3] == 61 * (rank + 64) * 2
                assert s["views"]["sizes"]["highlight"] == [1, 3]  # the two the reader sets
                assert f"{want[1]:,} bytes" in s["readout"]
                assert f"{want[3]:,} bytes" in s["readout"]
    # DeepSeek-V3's constants, from mha.configs
    assert (modern_layers.LAYERS, modern_layers.D_HEAD, modern_layers.ROPE) == (DEEPSEEK_V3.num_layers, 128, 64)


def test_deepseek_v3s_own_setting_says_56_9x(cache_fig):
    s = cache_fig.state()  # 128 query heads, 8 kv heads, kv_rank 512, no window
    b = modern_layers.per_token(128, 8, 512)
    assert (b["MHA"], b["GQA"], b["MLA"]) == (3_997_696, 249_856, 70_272)
    assert f"{b['MHA'] / b['MLA']:.1f}" == "56.9" and f"{b['GQA'] / b['MLA']:.1f}" == "3.6"
    text = s["readout"]
    for said in ("2 x 61 layers x 8 kv heads x 128 x 2 bytes = 249,856 bytes (244 KiB) per "
                 "token", "MLA: 61 x (512 + 64) x 2 bytes = 70,272 bytes (68.6 KiB), 3.56x less "
                 "than GQA", "MHA (128 kv heads): 3,997,696 bytes, 56.9x the latent cache, "
                 "DeepSeek-V3's shape", "At 128K tokens: MHA 488 GiB, GQA 30.5 GiB, "
                 "MLA 8.58 GiB."):
        assert said in text, said
    assert s["views"]["sizes"]["values"] == [3904.0, 244.0, 30.5, 68.625]
    assert "DeepSeek-V3" not in cache_fig.state(kv_rank=256)["readout"]
    # fewer kv heads than the latent's numbers: MLA is the larger cache, and says so
    assert "2.25x more than GQA" in cache_fig.state(kv_heads=1)["readout"]


def test_impossible_kv_heads_snap_back_without_an_error(cache_fig):
    """More key/value heads than query heads cannot be: each state stops the kv select at
    num_heads (``limits``, which the page applies before it draws), and the state past it has
    the clamped pictures and says why, never a traceback."""
    for num_heads in modern_layers.NUM_HEADS:
        top = modern_layers.KV_HEADS.index(num_heads)
        for kv in modern_layers.KV_HEADS:
            for window in modern_layers.WINDOWS:
                s = cache_fig.state(num_heads=num_heads, kv_heads=kv, window=window)
                assert s["limits"] == {"kv_heads": {"max": top}}
                if kv <= num_heads:
                    assert "cannot" not in s["readout"]
                    continue
                clamped = cache_fig.state(num_heads=num_heads, kv_heads=num_heads,
                                          window=window)
                assert s["views"] == clamped["views"]
                assert s["readout"] == (f"{num_heads} query heads cannot share {kv} key/value "
                                        f"heads; GQA has at most {num_heads}: shown with "
                                        f"{num_heads}.")
    # the constructor takes such a start too, and shows the clamped picture
    fig = modern_layers.kv_bytes(num_heads=8, kv_heads=128)
    assert fig.state()["views"]["sizes"]["values"][1] == 8 * 30.5
    assert "(as many as the query heads: MHA)" in cache_fig.state(num_heads=8, kv_heads=8)[
        "readout"]
    assert "(one: MQA)" in cache_fig.state(kv_heads=1)["readout"]


def test_every_line_has_slope_1_and_the_window_is_flat_after_the_window(cache_fig):
    x = torch.tensor(modern_layers.CONTEXTS, dtype=torch.float64).log2()
    for window in modern_layers.WINDOWS:
        for kv in (1, 8, 128):
            s = cache_fig.state(kv_heads=kv, kv_rank=128, window=window)
            growth = s["views"]["growth"]
            assert growth["x_log"] and growth["y_log"] and growth["x"] == list(modern_layers.CONTEXTS)
            series = {d["label"]: d["y"] for d in growth["series"]}
            names = ["MHA 128", f"GQA {kv}", "MLA 128"]
            assert list(series) == names + ([] if window == "off" else
                                            [f"GQA {kv}, window {window:,}"])
            assert series[f"GQA {kv}"] == [kv_cache_bytes(61, kv, 128, n) / 2**20
                                           for n in modern_layers.CONTEXTS]
            assert series["MLA 128"] == [latent_cache_bytes(61, 128, 64, n) / 2**20
                                         for n in modern_layers.CONTEXTS]
            for name in names:
                y = torch.tensor(series[name], dtype=torch.float64).log2()
                slopes = (y[1:] - y[:-1]) / (x[1:] - x[:-1])
                torch.testing.assert_close(slopes, torch.ones(4, dtype=torch.float64))
            if window == "off":
                continue
            rolled = series[f"GQA {kv}, window {window:,}"]
            cap = kv_cache_bytes(61, kv, 128, window) / 2**20
            for n, got, full in zip(modern_layers.CONTEXTS, rolled, series[f"GQA {kv}"]):
                assert got == (full if n <= window else cap), (window, n)
            assert rolled[-1] == cap  # flat: the rolling cache stops growing at the window
            assert f"stops GQA at {cap:,g} MiB" in s["readout"]


def _y_range(state):
    growth = state["views"]["growth"]
    ys = [y for line in growth["series"] for y in line["y"] if y > 0]
    return [min(ys), max(ys)]


def test_the_log_axis_is_labelled_in_binary_units(cache_fig, tmp_path):
    """The page labels the plot's log2 ticks (format.js's log2Ticks and log2Text, run here in
    Node.js on every state's numbers) in KiB to TiB, each tick in its own unit: never a number
    of more than 4 digits before the decimal point (the axis said 2,097,152 MiB)."""
    states = [cache_fig.state()] + list(cache_fig.states.values())  # the opening one first
    for state in states:
        growth = state["views"]["growth"]
        assert growth["y_unit"] == "MiB" and growth["y_log"]
        assert growth["y_label"] == "cache, log scale"  # the unit is on every tick
    got = run_modules(tmp_path, {"f": LIB / "format.js"}, """
        emit(data.map(([lo, hi]) => {
          const ticks = f.log2Ticks(lo, hi);
          return [ticks, ticks.map((k) => f.log2Text(k, "MiB"))];
        }));""", data=[_y_range(s) for s in states])
    units = {"KiB": 2**-10, "MiB": 1, "GiB": 2**10, "TiB": 2**20}
    for state, (ticks, labels) in zip(states, got):
        lo, hi = _y_range(state)
        assert 2 ** ticks[0] <= lo and hi <= 2 ** ticks[-1]  # the ticks span the lines
        for k, text in zip(ticks, labels):
            number, unit = text.split(" ")
            assert len(re.sub(r"\D", "", number.split(".")[0])) <= 4, text
            assert unit in units and 1 <= float(number) < 1024, text
            assert float(number) * units[unit] == 2 ** k, (text, k)  # 2^k MiB exactly
    # DeepSeek-V3's setting: 68.6 MiB (MLA at 1K tokens) to 488 GiB (MHA at 128K)
    assert got[0][1] == ["64 MiB", "512 MiB", "4 GiB", "32 GiB", "256 GiB", "2 TiB"]
    assert len({tuple(labels) for _, labels in got}) >= 3  # the axis follows the lines
    # an axis with no unit keeps its numbers: 65,536 and 1/8, as chapter 11's and 16's
    plain = run_modules(tmp_path, {"f": LIB / "format.js"},
                        "emit([f.log2Text(16), f.log2Text(-3), f.log2Text(3, 'bytes')]);")
    assert plain == ["65,536", "1/8", "8 bytes"]


def test_the_kv_figure_stays_light(cache_fig):
    spec = json.dumps(cache_fig.spec(), allow_nan=False)
    assert len(spec) < 700_000  # 800 states; 18 KB gzip-compressed


# ----------------------------------------------------------------------------- window-sink

@pytest.fixture(scope="module")
def recorded():
    """Layer 1's weights (H, L, L) on the figure's line, as the model computes them."""
    lm = load_language_model()
    with torch.no_grad(), record_attention(lm.encoder) as rec:
        lm(lm.encode(modern_layers.TEXT)[None])
    return rec["layers.1.self_attn"][0]


def test_no_window_and_no_sink_are_the_models_own_weights(recorded, sink_fig):
    assert "\n" in modern_layers.TEXT and 32 <= len(modern_layers.TEXT) <= 48
    for head in range(4):
        w, on_sink = modern_layers.sink_weights(head, "full", "off")
        torch.testing.assert_close(w, recorded[head], atol=1e-6, rtol=0)
        assert torch.equal(on_sink, torch.zeros(len(modern_layers.TEXT)))
    for head in modern_layers.HEADS:
        drawn = sink_fig.state(head=head)["views"]["weights"]
        assert drawn["rows"] == drawn["cols"] == token_labels(modern_layers.TEXT)
        assert "\u21b5" in drawn["rows"]  # the line break, labelled
        torch.testing.assert_close(torch.tensor(drawn["grids"][0], dtype=torch.float32),
                                   recorded[head], atol=5e-4, rtol=0)


def by_hand(head, window, sink):
    """softmax([q k^T / sqrt(Dh) | s]) over the keys the window allows, the sink column
    dropped: the formula, from the figure's queries and keys, in float64."""
    q, k, _, _, scale = modern_layers.head_problem()
    L = q.size(-2)
    q, k = q[0, head].double(), k[0, head].double()
    scores = (q @ k.T) * scale  # (L, Dh) @ (Dh, L) -> (L, L)
    i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
    w = L if window == "full" else window
    scores = scores.masked_fill(~((j <= i) & (j > i - w)), -math.inf)
    s = torch.full((L, 1), -math.inf if sink == "off" else float(sink), dtype=torch.float64)
    full = torch.cat([scores, s], dim=-1).softmax(-1)  # (L, L + 1)
    return full[:, :-1], full[:, -1]  # the weights (L, L) and the sink's (L,)


def test_the_weights_are_sink_attentions_formula_and_rows_sum_below_1():
    L = len(modern_layers.TEXT)
    for head in modern_layers.HEADS:
        for window in modern_layers.WINDOW_SIZES:
            for sink in modern_layers.SINKS:
                w, on_sink = modern_layers.sink_weights(head, window, sink)
                exact, sunk = by_hand(head, window, sink)
                torch.testing.assert_close(w.double(), exact, atol=2e-6, rtol=0)
                torch.testing.assert_close(on_sink.double(), sunk, atol=2e-6, rtol=0)
                sums = w.sum(-1)
                if sink == "off":
                    torch.testing.assert_close(sums, torch.ones(L), atol=1e-6, rtol=0)
                    assert (sunk == 0).all()
                else:  # below 1 (in float64: a sink of 6 against scores near 20 takes ~1e-6)
                    assert (exact.sum(-1) < 1).all() and (sunk > 0).all(), (head, window, sink)
                    assert (sums <= 1 + 1e-6).all()
                # a window of w leaves exactly min(i + 1, w) keys in row i: i - w < j <= i
                n = L if window == "full" else window
                nonzero = w > 0
                assert nonzero.sum(-1).tolist() == [min(i + 1, n) for i in range(L)]
                for i in range(L):
                    assert nonzero[i].nonzero().flatten().tolist() == list(
                        range(max(0, i - n + 1), i + 1))


def test_the_readout_gives_the_line_break_and_sink_shares(sink_fig):
    nl = [i for i, ch in enumerate(modern_layers.TEXT) if ch == "\n"]
    for head in modern_layers.HEADS:
        for window in modern_layers.WINDOW_SIZES:
            for sink in modern_layers.SINKS:
                s = sink_fig.state(head=head, window=window, sink=sink)
                w, on_sink = modern_layers.sink_weights(head, window, sink)
                st = s["state"]
                breaks = float(w[:, nl].sum(-1).mean())
                assert math.isclose(st["line_breaks"], breaks, abs_tol=1e-7)
                assert math.isclose(st["sink_share"], float(on_sink.mean()), abs_tol=1e-7)
                bare = modern_layers.sink_weights(head, window, "off")[0][:, nl].sum(-1).mean()
                assert math.isclose(st["no_sink_line_breaks"], float(bare), abs_tol=1e-7)
                text = s["readout"]
                assert f"on average {100 * breaks:.1f}% of its weight on the line break" in text
                if sink == "off":
                    assert "every row sums to 1" in text and "on the sink" not in text
                    assert all(v == 0 for v in s["views"]["shares"]["series"][1]["y"])
                else:
                    assert f"{100 * st['sink_share']:.1f}% on the sink, so a row sums to " \
                        f"{1 - st['sink_share']:.3f}" in text
                    assert f"With no sink the same head and window put {100 * bare:.1f}% " \
                        f"on the line break; with sink {sink}, " \
                        f"{100 * st['sink_share']:.1f}% goes to the sink" in text
                shares = s["views"]["shares"]["series"]
                # the line as trained is drawn where it differs from the first line
                as_trained = ["line break, as trained"] if (window, sink) != ("full", "off") else []
                assert [x["label"] for x in shares] == ["on the line break", "on the sink",
                                                        *as_trained]
                torch.testing.assert_close(torch.tensor(shares[0]["y"]), w[:, nl].sum(-1),
                                           atol=1e-5, rtol=0)


def test_every_step_of_the_sink_slider_changes_the_picture(sink_fig):
    """The slider's first step, from no sink to the smallest logit, visibly changes every
    head's picture at every window (it started at b = 0, which took 0.03% of the induction
    head's weight: the same picture); every later step changes what the views show too, and
    the readout gives the rows' log-sum-exps that a logit b is compared with."""
    first = modern_layers.SINKS[1]
    assert modern_layers.SINKS[0] == "off" and 0 not in modern_layers.SINKS
    for head in modern_layers.HEADS:
        for window in modern_layers.WINDOW_SIZES:
            views = [sink_fig.state(head=head, window=window, sink=b)["views"]
                     for b in modern_layers.SINKS]
            for a, b in zip(views, views[1:]):
                assert a != b, (head, window)
            off, on = (torch.tensor(v["shares"]["series"][1]["y"]) for v in views[:2])
            assert off.abs().max() == 0 and on.max() > 0.05, (head, window)  # of a 0-1 axis
            grids = [torch.tensor(v["weights"]["grids"][0]) for v in views[:2]]
            assert (grids[0] - grids[1]).abs().max() > 0.01, (head, window)
            # the readout's log-sum-exps are the rows' own (by_hand's scores)
            q, k, _, _, scale = modern_layers.head_problem()
            L, w = q.size(-2), len(modern_layers.TEXT) if window == "full" else window
            scores = (q[0, head].double() @ k[0, head].double().T) * scale
            i, j = torch.arange(L)[:, None], torch.arange(L)[None, :]
            lse = scores.masked_fill(~((j <= i) & (j > i - w)), -math.inf).logsumexp(-1)
            said = (f"with LSE the log-sum-exp of the row's scores: {float(lse.min()):.1f} to "
                    f"{float(lse.max()):.1f} on this head's rows (median "
                    f"{float(lse.median()):.1f})")
            for b in modern_layers.SINKS:
                text = sink_fig.state(head=head, window=window, sink=b)["readout"]
                assert said in text and "\u03c3(b \u2212 LSE)" in text, text
            # what the sink takes is sigma(b - LSE) of each row, as the readout says
            torch.testing.assert_close(
                modern_layers.sink_weights(head, window, first)[1].double(),
                torch.sigmoid(first - lse), atol=1e-5, rtol=0)


def test_the_induction_head_parks_on_the_line_break_and_a_sink_takes_over(sink_fig):
    """Chapter 10's induction head parks much of its weight on the line break; a window that
    hides the line break leaves less there, and then a sink takes more of the row."""
    trained = sink_fig.state(head=0)["state"]["line_breaks"]
    assert 0.5 < trained < 0.75
    assert sink_fig.state(head=3)["state"]["line_breaks"] < 0.1  # the other induction head
    assert sink_fig.state(head=0, window=8)["state"]["line_breaks"] < trained / 2
    for sink in (8, 10, 12):
        shares = [sink_fig.state(head=0, window=w, sink=sink)["state"]["sink_share"]
                  for w in modern_layers.WINDOW_SIZES]
        assert shares == sorted(shares), sink  # narrower windows: more on the sink
    # the larger the sink logit, the more of every row it takes
    for window in modern_layers.WINDOW_SIZES:
        shares = [sink_fig.state(window=window, sink=s)["state"]["sink_share"]
                  for s in modern_layers.SINKS]
        assert shares == sorted(shares) and shares[0] == 0.0


def test_every_state_is_json_and_reads_well(cache_fig, sink_fig):
    for fig in (cache_fig, sink_fig):
        spec = fig.spec()
        json.dumps(spec, allow_nan=False)
        assert all(isinstance(i, int) for s in spec["states"].values()
                   for i in s["views"].values())
        for state in fig.states.values():
            text = " | ".join(strings([state["readout"], state["views"]]))
            assert not re.search(r"\bnan\b|\bNone\b|-0\.0%|\b1 (heads|bytes|positions)\b",
                                 text), text
            assert state["readout"].endswith(".")
    assert len(json.dumps(sink_fig.spec(), allow_nan=False)) < 520_000
    assert sink_fig.spec()["controls"][0]["labels"] == list(modern_layers.HEAD_LABELS)

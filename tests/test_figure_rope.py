"""Chapter 12's live figures compute what mha.apply_rope and PyTorch compute (mha_book.figures.rope)."""

import itertools
import math

import pytest
import torch

from mha import apply_rope
from mha.rope_scaling import rope_frequencies
from mha_book.figures import rope


def by_hand(x, position):
    """Rotate-half RoPE by hand: pair j = features (j, j + 4) turned by position * theta_j."""
    theta = 10000.0 ** (-2 * torch.arange(4, dtype=torch.float64) / 8)
    a, b = x[:4], x[4:]
    c, s = torch.cos(position * theta), torch.sin(position * theta)
    return torch.cat([a * c - b * s, a * s + b * c])


def test_the_arrows_are_the_rotated_pairs():
    q, k = rope._vectors()
    fig = rope.rope_rotation()
    assert len(fig.states) == len(rope.POSITIONS) ** 2
    for m, n in ((0, 0), (5, 2), (9, 7), (3, 9)):
        panels = fig.state(m=m, n=n)["views"]["pairs"]["panels"]
        qm, kn = by_hand(q, m), by_hand(k, n)
        for j, p in enumerate(panels):
            want = [[qm[j], qm[j + 4]], [kn[j], kn[j + 4]], [q[j], q[j + 4]]]
            for got, w in zip(p["arrows"], want):
                assert math.isclose(got[0], w[0], abs_tol=1e-5)
                assert math.isclose(got[1], w[1], abs_tol=1e-5)
        # an arrow keeps its length: a rotation
        torch.testing.assert_close(qm.view(2, 4).norm(dim=0), q.view(2, 4).norm(dim=0))


def test_the_score_depends_on_the_distance_only():
    q, k = rope._vectors()
    fig = rope.rope_rotation()
    for d in range(-9, 10):
        scores = [fig.state(m=n + d, n=n)["state"]["score"]
                  for n in rope.POSITIONS if 0 <= n + d <= 9]
        assert max(scores) - min(scores) < 1e-9
        assert math.isclose(scores[0], float(by_hand(q, max(d, 0)) @ by_hand(k, max(-d, 0))),
                            abs_tol=1e-9)
    s = fig.state(m=5, n=2)
    shares = [float(row[-1]) for row in s["views"]["shares"]["rows"][:4]]
    assert math.isclose(sum(shares), s["state"]["score"], abs_tol=2e-3)
    # the table's sum is written as the caption and the readout write the score
    assert s["views"]["shares"]["rows"][-1][-1] == "0.615" == f"{s['state']['score']:.3f}"
    assert "(sum 0.615)" in s["views"]["shares"]["caption"] and "is 0.615" in s["readout"]
    curves = s["views"]["score"]["series"]
    assert curves[0]["y"] == curves[1]["y"]  # key at 0 or at n: the same curve
    assert s["views"]["score"]["marker"] == rope.DISTANCES.index(3)
    assert math.isclose(curves[0]["y"][rope.DISTANCES.index(3)], s["state"]["score"],
                        abs_tol=1e-4)


def test_the_arrows_view_is_a_view_kind_and_its_data_json():
    from mha.live.figure import View, arrows

    View("pairs", "arrows")  # accepted
    d = arrows([{"title": "pair 0", "arrows": [[1.0, float("nan")], [0.123456789, -2]]}],
               ["q", "k"], caption="c", radius=2)
    assert d == {"panels": [{"title": "pair 0", "arrows": [[1.0, None], [0.12346, -2.0]]}],
                 "labels": ["q", "k"], "caption": "c", "radius": 2.0}


def test_the_angle_table_reads_m_theta_minus_n_theta_for_every_pair():
    """Three significant digits: for the slow pairs m*theta - n*theta = (m - n)*theta can be
    read off the table (rounded to 2 decimals, pair 3 read 0.01 - 0.00 = 0.00)."""
    for m in rope.POSITIONS:
        for n in rope.POSITIONS:
            for row in rope.rope_state(m, n)["views"]["shares"]["rows"][:4]:
                mt, nt, dt = (float(x) for x in row[2:5])
                assert abs(mt - nt - dt) <= 0.0051 * max(abs(mt), abs(nt), 1e-3), (m, n, row)
    rows = rope.rope_state(5, 2)["views"]["shares"]["rows"]
    assert rows[3][2:5] == ["0.005", "0.002", "0.003"]
    assert rope.angle(0) == "0" and rope.angle(2e-4) == "2.00e-04"


def test_the_readout_never_puts_a_position_below_0_and_writes_q_dot_k():
    for m in rope.POSITIONS:
        for n in rope.POSITIONS:
            text = rope.rope_state(m, n)["readout"]
            assert "q\u00b7k" in text and "q . k" not in text
            # "-3 apart" read oddly, and "pair" is a pair of features here
            assert "apart" not in text and f"with m \u2212 n = {m - n} (" in text
            d = m - n
            if d < 0:
                assert f"with the query at 0, the key at {-d}:" in text, text
            else:
                assert f"with the key at 0, the query at {d}:" in text, text
            assert f"{rope.score(max(d, 0), max(-d, 0)):.3f})." in text


def test_the_plot_says_its_two_curves_coincide():
    plot = rope.rope_state(5, 2)["views"]["score"]
    assert "the two curves coincide" in plot["caption"]
    assert plot["series"][0]["y"] == plot["series"][1]["y"]
    assert "q\u00b7k" in plot["y_label"] and "query minus key" in plot["x_label"]


# ----------------------------------------------------------------------------- rope_distance
# The score against the distance for full, partial and no rotation and YaRN (rope.rope_distance):
# the curve is E[q_m . k_n] / d_head for q = k with i.i.d. N(0, 1) features.

D = rope.DISTANCE_D_HEAD
ROPE_DIMS = {"full": 128, "partial": 32, "yarn": 128}


def rotated_trace(d, base, rotation, n=3):
    """E[q_m . k_n] / d_head with q = k ~ N(0, I), by mha.apply_rope itself: E[(R_m q) . (R_n q)]
    = trace(R_m^T R_n), R_m e_i the i-th basis vector rotated to m = n + d."""
    eye = torch.eye(D, dtype=torch.float64)[:, None, :]  # (D, 1, D): D "sequences" of one token
    kw = {"base": float(base), "rope_dim": ROPE_DIMS[rotation],
          "scaling": rope.YARN if rotation == "yarn" else None}
    qm, kn = apply_rope(eye, torch.tensor([n + d]), **kw), apply_rope(eye, torch.tensor([n]), **kw)
    return float((qm * kn).sum()) / D


@pytest.mark.parametrize("rotation", ["full", "partial", "yarn"])
@pytest.mark.parametrize("base", [10_000, 1_000_000])
def test_the_formula_is_the_expected_score_of_apply_rope(rotation, base):
    theta, factor = rope.frequencies(base, rotation)
    assert theta.numel() == ROPE_DIMS[rotation] // 2
    for d in (0, 1, 7, 100, 5000, 131072):
        # YaRN's apply_rope also multiplies q and k by the attention factor: the curve leaves it
        # out (the readout says it), so the rotation's trace is divided by its square
        got = rotated_trace(d, base, rotation) / factor ** 2
        assert math.isclose(float(rope.expected_score(d, theta)), got, abs_tol=1e-9), (d, got)
    assert math.isclose(rotated_trace(0, base, rotation), factor ** 2, rel_tol=1e-12)


def test_a_random_query_equal_to_its_key_scores_the_curve_on_average():
    """20,000 draws of q = k ~ N(0, I_128), rotated by mha.apply_rope with rope_dim 32 to
    positions n + d and n: the mean of q_m . k_n / 128 is the formula's, to 6e-3 (5 standard
    errors)."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(20_000, 1, D, generator=gen, dtype=torch.float64)  # (N, 1 token, D)
    theta, _ = rope.frequencies(10_000, "partial")
    for d in (1, 30, 2000):
        qm = apply_rope(q, torch.tensor([5 + d]), rope_dim=32)
        kn = apply_rope(q, torch.tensor([5]), rope_dim=32)
        mean = float((qm * kn).sum(-1).mean()) / D
        assert abs(mean - float(rope.expected_score(d, theta))) < 6e-3, (d, mean)


def test_each_point_is_the_mean_of_the_exact_curve_over_its_window():
    theta, _ = rope.frequencies(10_000, "full")
    y = rope.curve(10_000, "full")
    x = rope.distances(rope.LENGTHS[-1])
    w = rope.WINDOW
    for i in (0, 7, 20, 33, 45, 60):  # d = 1 .. 4,096: a fine grid, trapezoids
        grid = torch.linspace(x[i] / w, x[i] * w, 40_001, dtype=torch.float64)
        exact = rope.expected_score(grid, theta)
        mean = float(torch.trapezoid(exact, grid)) / float(grid[-1] - grid[0])
        assert abs(y[i] - mean) < 1e-5, (x[i], y[i], mean)
    for i in (80, 85):  # d = 65,536 and 131,072: the integers in the window
        ints = torch.arange(math.ceil(x[i] / w), math.floor(x[i] * w) + 1, dtype=torch.float64)
        assert abs(y[i] - float(rope.expected_score(ints, theta).mean())) < 1e-3
    # the distances: 5 an octave, the powers of 2 exact (the axis labels them)
    assert x[0] == 1 and x[-1] == 2 ** 20 and len(x) == 101
    assert all(x[5 * k] == 2 ** k for k in range(21))
    assert all(b > a for a, b in zip(x, x[1:]))


def test_partial_rotation_settles_around_its_unrotated_share_and_none_is_flat():
    fig = rope.rope_distance()
    for base, length in itertools.product(rope.BASES, rope.LENGTHS):
        part = fig.state(base=base, rotation="partial", length=length)
        assert part["state"]["level"] == 0.75 and part["state"]["rope_dim"] == 32
        series = {s["label"]: s["y"] for s in part["views"]["score"]["series"]}
        assert set(series) == {"25 % rotated", "plain RoPE (full)", "unrotated share 0.75"}
        assert all(v == 0.75 for v in series["unrotated share 0.75"])
        # the partial curve is 0.75 + a quarter of a 32-feature rotation's curve, which is
        # negative at some distances: averaged, it stays within a twentieth below 0.75
        assert all(0.75 - 0.25 * 0.2 <= v <= 1 for v in series["25 % rotated"])
        none = fig.state(base=base, rotation="none", length=length)
        flat = none["views"]["score"]["series"][0]["y"]
        assert flat == [1.0] * len(flat) and none["state"]["level"] == 1.0
        assert "scores 1 at every distance" in none["readout"]
    # far away, the fast pairs average out: the partial curve sits on 0.75, the full one at 0
    far = fig.state(base=10_000, rotation="partial", length=2 ** 20)
    assert abs(far["state"]["score"] - 0.75) < 0.01 and abs(far["state"]["full"]) < 0.01
    assert math.isclose(float(rope.expected_score(0, rope.frequencies(10_000, "partial")[0])),
                        1.0)


def yarn_by_the_paper(base, s=4.0, L0=32768, rope_dim=128, beta_fast=32, beta_slow=1):
    """YaRN (Peng et al. 2023), written from the paper: pair j turns r_j = L0 theta_j / (2 pi)
    times over the original context; r_j >= beta_fast: kept, r_j <= beta_slow: divided by s,
    between: a linear ramp over j from floor(j at beta_fast) to ceil(j at beta_slow)."""
    j = torch.arange(rope_dim // 2, dtype=torch.float64)
    theta = base ** (-2 * j / rope_dim)

    def at(r):
        return rope_dim * math.log(L0 / (2 * math.pi * r)) / (2 * math.log(base))

    lo, hi = max(math.floor(at(beta_fast)), 0), min(math.ceil(at(beta_slow)), rope_dim - 1)
    ramp = ((j - lo) / (hi - lo)).clamp(0, 1)
    return theta * (1 - ramp) + theta / s * ramp, 0.1 * math.log(s) + 1


@pytest.mark.parametrize("base", rope.BASES)
def test_yarn_keeps_the_fast_pairs_and_slows_the_slow_ones(base):
    theta, factor = rope.frequencies(base, "yarn")
    plain, _ = rope.frequencies(base, "full")
    turns = rope.YARN["original_max_position_embeddings"] * plain / (2 * math.pi)
    fast, slow = turns >= 32, turns <= 1
    assert fast.any() and slow.any()
    torch.testing.assert_close(theta[fast], plain[fast], rtol=0, atol=0)
    torch.testing.assert_close(theta[slow], plain[slow] / 4, rtol=1e-15, atol=0)
    ratio = theta / plain  # 1 for the fast pairs, down to 1/4 for the slow ones
    assert all(b <= a for a, b in zip(ratio, ratio[1:]))
    want, want_factor = yarn_by_the_paper(base)
    torch.testing.assert_close(theta, want, rtol=1e-12, atol=0)
    assert math.isclose(factor, want_factor) and math.isclose(factor, 1 + 0.1 * math.log(4))
    # factor 1 is plain RoPE: no stretch, no attention factor
    one, f1 = rope_frequencies(128, base=float(base), dtype=torch.float64,
                               scaling={**rope.YARN, "factor": 1.0})
    torch.testing.assert_close(one, plain, rtol=1e-15, atol=0)
    assert f1 == 1.0
    # the curve: YaRN at distance 4d is full rotation at d, far beyond the original context
    fig = rope.rope_distance()
    for length in (131072, 2 ** 20):
        s = fig.state(base=base, rotation="yarn", length=length)
        y = {c["label"]: c["y"] for c in s["views"]["score"]["series"]}
        assert abs(y["YaRN 4x"][-1] - y["full at d/4"][-1]) < 0.01, (base, length)
        assert y["plain RoPE (full)"] == fig.state(base=base, rotation="full",
                                               length=length)["views"]["score"]["series"][0]["y"]
        assert f"{factor:.3f}\u00b2 = {factor ** 2:.3f} times" in s["readout"]
        slowed, kept = int(slow.sum()), int(fast.sum())
        assert f"{slowed} slow pairs" in s["readout"] and f"{kept} fast ones" in s["readout"]


def test_every_control_value_builds_a_state_the_formula_says():
    fig = rope.rope_distance()
    assert fig.name == "rope-distance"
    assert len(fig.states) == len(rope.BASES) * len(rope.ROTATIONS) * len(rope.LENGTHS) == 64
    for base, rotation, length in itertools.product(rope.BASES, rope.ROTATIONS, rope.LENGTHS):
        s = fig.state(base=base, rotation=rotation, length=length)
        plot = s["views"]["score"]
        x = rope.distances(length)
        assert plot["x"] == list(x) and x[-1] == length and plot["x_log"]
        assert plot["marker"] == len(x) - 1 and plot["marker_series"] == [0]
        theta, _ = rope.frequencies(base, rotation)
        want = rope.averaged_score(torch.tensor(x, dtype=torch.float64), theta)
        assert max(abs(a - b) for a, b in zip(plot["series"][0]["y"], want.tolist())) < 1e-5
        assert plot["series"][0]["label"] == rope.SERIES_LABELS[rotation]
        assert len(plot["series"]) == {"full": 1, "partial": 3, "none": 2, "yarn": 3}[rotation]
        assert plot["y_min"] <= min(min(c["y"]) for c in plot["series"])
        assert max(max(c["y"]) for c in plot["series"]) <= plot["y_max"] == 1.0
        st = s["state"]
        assert st == {**st, "base": base, "rotation": rotation, "length": length}
        exact = float(rope.expected_score(length, theta))
        assert math.isclose(st["exact"], exact, abs_tol=1e-12)
        text = s["readout"]
        assert f"Base {base:,}" in text
        if rotation != "none":
            assert f"scores {st['score']:.3f} at distance {length:,}" in text
            assert f"(exactly there: {exact:.3f})" in text
            assert st["halfway"] is None or f"first at d \u2248 {rope._sig(st['halfway'])}." \
                in text
        for label in (plot["x_label"], plot["y_label"], plot["caption"]):
            assert label
    assert "log scale" in plot["x_label"] and "d_head" in plot["y_label"]
    assert "0.84d to 1.19d" in plot["caption"]


def test_the_default_readout_gives_the_numbers_the_prose_can_use():
    s = rope.rope_distance().state()
    assert s["state"]["rotation"] == "partial" and s["state"]["length"] == 131072
    assert s["readout"] == (
        "Base 10,000 (RoFormer, Llama 2; Gemma 3's local layers), 25 % rotated (32 of 128 "
        "features): a key equal to the query scores 0.749 at distance 131,072 (exactly there: "
        "0.787), plain RoPE -0.005. It settles around the 96/128 = 0.75 of its unrotated "
        "features, rippling about it; halfway there (0.875) first at d \u2248 42.")
    # a larger base keeps the score up longer: full rotation is at half at 52 (10,000) and
    # 490 (1,000,000)
    fig = rope.rope_distance()
    halves = [fig.state(base=b, rotation="full")["state"]["halfway"] for b in rope.BASES]
    assert all(b > a for a, b in zip(halves, halves[1:]))
    assert rope._sig(halves[0]) == "52" and rope._sig(halves[-1]) == "490"


def test_the_figure_is_registered_labelled_and_described():
    from mha_book import figures

    assert figures.FIGURES["rope_distance"] is rope.rope_distance
    fig = figures.build("rope_distance")
    assert [c.label for c in fig.controls] == ["base", "rotation", "distances up to"]
    assert [c.name for c in fig.controls] == ["base", "rotation", "length"]
    assert list(fig.controls[1].labels) == list(rope.ROTATION_LABELS)
    for words in ("log scale", "around the 0.75", "96 unrotated", "YaRN 4x", "N(0, 1)",
                  "dashed"):
        assert words in fig.alt, words
    assert 'data-figure="rope-distance"' in fig.html()


def test_the_partial_curve_is_not_a_floor_it_ripples_below_it():
    """0.75 is the level the 25 % curve settles around, not a bound: the rotated pairs' cosines
    go negative, so the exact curve falls well below it at some distances (to about 0.59 over
    the first 131,072 at base 10,000)."""
    theta, _ = rope.frequencies(10_000, "partial")
    d = torch.arange(131073, dtype=torch.float64)
    exact = rope.expected_score(d, theta)
    assert 0.58 < float(exact.min()) < 0.6
    assert 0.4 < float((exact < 0.75).double().mean()) < 0.6

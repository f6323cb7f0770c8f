"""Chapter 12's live figure computes what mha.apply_rope and PyTorch compute (mha_book.figures.rope)."""

import math

import torch

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

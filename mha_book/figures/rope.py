"""Chapter 12's live figure: rotary position embedding, pair by pair.

``rope_rotation()``: one query vector q and one key vector k of d_head = 8 features (seeded
N(0, 1) draws), placed at positions m and n. ``mha.apply_rope`` (the default "rotate half"
pairing: pair j is features (j, j + 4)) turns pair j of each by the angle position * theta_j,
theta_j = 10000 ** (-2j / 8) = 1, 0.1, 0.01, 0.001 radians per position. The arrows view
draws the four pairs as 2-D arrows (q at m, k at n, and q at position 0 faded); the table gives
each pair's angles and share of the score q_m . k_n (the four add up to it); the plot is the
score against the distance m - n, computed once with the key at position 0 and once with the key
at n: the two curves are the same curve, since the score depends on m - n only.

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

from functools import lru_cache

import torch

from mha.live.figure import Figure, View, arrows, plot, slider, table
from mha.rotary import apply_rope, rope_angles

from ._registry import live_figure

__all__ = ["D_HEAD", "POSITIONS", "angle", "at_origin", "pair_contributions", "rope_rotation", "rope_state",
           "rotated", "score"]

D_HEAD = 8
POSITIONS = tuple(range(10))
DISTANCES = tuple(range(-9, 10))


@lru_cache(maxsize=1)
def _vectors():
    """q and k (D_HEAD,) each, float64, always the same draw."""
    gen = torch.Generator().manual_seed(3)
    return (torch.randn(D_HEAD, generator=gen, dtype=torch.float64),
            torch.randn(D_HEAD, generator=gen, dtype=torch.float64))


def rotated(x, position):
    """``x`` (D_HEAD,) placed at ``position``: ``mha.apply_rope`` of a length-1 sequence."""
    return apply_rope(x[None], torch.tensor([position]))[0]


@lru_cache(maxsize=None)
def _placed(which, position):
    """q (``which`` 0) or k (1) rotated to ``position``, (D_HEAD,)."""
    return rotated(_vectors()[which], position)


def score(m, n):
    """q at position m dotted with k at position n."""
    return float(_placed(0, m) @ _placed(1, n))


def _pairs(x):
    """(D_HEAD,) -> (D_HEAD/2, 2): pair j is features (j, j + D_HEAD/2) (rotate half)."""
    return torch.stack([x[: D_HEAD // 2], x[D_HEAD // 2:]], dim=-1)


def pair_contributions(m, n):
    """Pair j's share of the score, (D_HEAD/2,): (q_m)_j . (k_n)_j over its two features."""
    return (_pairs(_placed(0, m)) * _pairs(_placed(1, n))).sum(-1)


@lru_cache(maxsize=None)
def _curve(n):
    return tuple(score(n + d, n) for d in DISTANCES)


@lru_cache(maxsize=1)
def _limit():
    return round(max(abs(x) for n in POSITIONS for x in _curve(n)) * 1.05, 2)


def angle(x):
    """An angle in radians as the table writes it: three significant digits (exponent form
    under 0.001), so that m\u03b8 \u2212 n\u03b8 = (m \u2212 n)\u03b8 can be read off for
    the slow pairs too (0.005 \u2212 0.002 = 0.003, not 0.01 \u2212 0.00 = 0.00)."""
    return "0" if x == 0 else f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def at_origin(d):
    """Where the readout puts the pair ``d`` apart with one of them at 0: the key at 0 for
    d >= 0, the query at 0 (and the key at |d|) for d < 0; no position is negative."""
    return f"with the key at 0, the query at {d}" if d >= 0 else \
        f"with the query at 0, the key at {-d}"


def rope_state(m, n):
    qm, kn, q0 = _pairs(_placed(0, m)), _pairs(_placed(1, n)), _pairs(_vectors()[0])
    theta = rope_angles(torch.tensor([1]), D_HEAD, dtype=torch.float64)[0]  # (D_HEAD/2,)
    radius = float(torch.cat([qm, kn]).norm(dim=-1).max()) * 1.05
    panels = [{"title": f"pair {j}: {float(theta[j]):g} rad/pos",
               "arrows": [qm[j].tolist(), kn[j].tolist(), q0[j].tolist()]}
              for j in range(D_HEAD // 2)]
    d = m - n
    share = pair_contributions(m, n)
    # the shares and their sum as text with three decimals, as the caption and the readout
    # write the score (a number would be shown with two: "0.61" under "sum 0.615")
    rows = [[str(j), f"{float(theta[j]):g}", angle(m * float(theta[j])),
             angle(n * float(theta[j])), angle(d * float(theta[j])),
             f"{float(share[j]):.3f}"] for j in range(D_HEAD // 2)]
    s = float(share.sum())
    lim = _limit()
    curves = {"key at 0, query at d": list(_curve(0)),
              "key at n, query at n + d": list(_curve(n))}
    return {
        "views": {
            "pairs": arrows(panels, [f"q at m = {m}", f"k at n = {n}", "q at 0"], radius=radius,
                            caption=f"The four pairs of q (at m = {m}) and k (at n = {n})"),
            "shares": table(["pair", "\u03b8 (rad/pos)", "m\u03b8", "n\u03b8",
                             "(m\u2212n)\u03b8", "share"],
                            rows + [["sum", "", "", "", "", f"{s:.3f}"]],
                            caption=f"Each pair's share of the score (sum {s:.3f})"),
            "score": plot(DISTANCES, curves, marker=DISTANCES.index(d), y_min=-lim, y_max=lim,
                          x_label="distance d = m \u2212 n (query minus key)",
                          y_label="score q\u00b7k",
                          caption="The score against the distance (the two curves coincide)")},
        "readout": (f"m = {m}, n = {n}: distance {d}; the score q\u00b7k is {s:.3f}, the same "
                    f"for every query and key with m \u2212 n = {d} ({at_origin(d)}: "
                    f"{score(max(d, 0), max(-d, 0)):.3f})."),
        "state": {"m": m, "n": n, "score": s},
    }


@live_figure
def rope_rotation(m=3, n=0):
    """Chapter 12: slide the positions of a query and a key; see each pair turn and the score
    depend on m - n only."""
    return Figure(
        name="rope-rotation", title="RoPE: each pair turns with its position",
        controls=[slider("m", "query position m", POSITIONS, m),
                  slider("n", "key position n", POSITIONS, n)],
        views=[View("pairs", "arrows"), View("shares", "table"), View("score", "plot")],
        state_fn=rope_state,
        alt="Four small panels, one per feature pair, each with the query's and the key's "
            "2-D arrow rotated by its position; a table of each pair's angles and share of the score; a line "
            "plot of the score against the distance m - n, the same with the key at 0 or at n.")

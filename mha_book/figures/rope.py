"""Chapter 12's live figures: rotary position embedding pair by pair, and the score against the
distance for the rotations of today's models.

``rope_rotation()``: one query vector q and one key vector k of d_head = 8 features (seeded
N(0, 1) draws), placed at positions m and n. ``mha.apply_rope`` (the default "rotate half"
pairing: pair j is features (j, j + 4)) turns pair j of each by the angle position * theta_j,
theta_j = 10000 ** (-2j / 8) = 1, 0.1, 0.01, 0.001 radians per position. The arrows view
draws the four pairs as 2-D arrows (q at m, k at n, and q at position 0 faded); the table gives
each pair's angles and share of the score q_m . k_n (the four add up to it); the plot is the
score against the distance m - n, computed once with the key at position 0 and once with the key
at n: the two curves are the same curve, since the score depends on m - n only.

``rope_distance()``: what a key identical to the query still scores at distance d, for the
rotations models use today. For q = k with d_head = 128 i.i.d. N(0, 1) features, rotated by
rotary positions at m and n = m - d, the expected score over d_head is

    E[q_m . k_n] / d_head = (2 * sum_j cos(d * theta_j) + (d_head - rope_dim)) / d_head

(``expected_score``; 1 at d = 0): each rotated pair j contributes 2 cos(d theta_j), each of the
d_head - rope_dim features left unrotated contributes 1. The reader picks the base (theta_j =
base ** (-2j / rope_dim), j < rope_dim / 2, from ``mha.rope_scaling.rope_frequencies``), the
length (the distances drawn: 1 to it, log2-spaced, 5 points an octave) and the rotation: full
(rope_dim = 128), 25 % (32 of 128, Qwen3-Next's share: it rotates 64 of 256; the curve settles
around the unrotated share (128 - 32) / 128 = 0.75 and ripples about it, since the rotated
pairs' cosines go negative too), none (NoPE, Llama 4's every fourth layer: 1 at
every distance) or YaRN 4x over an original context of 32K (Qwen 3's setting: the frequencies
of ``rope_frequencies(128, base=..., scaling={"rope_type": "yarn", "factor": 4,
"original_max_position_embeddings": 32768})``: the slow pairs turn 4x slower, so that part of
the curve at distance 4d is the original's at d; its attention factor, q and k each times
0.1 ln 4 + 1 = 1.139, scores by 1.296 at every distance, is left out of the curve and said in
the readout). Each point is the curve's mean over the distances d / 2 ** 0.25 to d * 2 ** 0.25
(0.84d to 1.19d, a quarter octave either side; ``averaged_score``, each cosine's mean exact:
(sin(b theta) - sin(a theta)) / ((b - a) theta)): the fast pairs' cosines swing once every few
positions, and 5 samples an octave of them would alias into noise; their mean is what the eye
should see, and the slow pairs' ripples (RoFormer's oscillations) survive it. The readout also
gives the exact value at the chosen length. Plain RoPE over the whole head is drawn dashed
beside every other rotation for reference.

Each ``*_state`` function is the figure's data for one setting of the controls (pure torch); the
figure lists it for every setting (``mha.live.figure``).
"""

import math
from functools import lru_cache

import torch

from mha.live.figure import Figure, View, arrows, plot, select, slider, table
from mha.rope_scaling import rope_frequencies
from mha.rotary import apply_rope, rope_angles

from ._registry import live_figure

__all__ = ["BASES", "DISTANCE_D_HEAD", "D_HEAD", "LENGTHS", "POSITIONS", "ROTATIONS", "YARN",
           "angle", "at_origin", "averaged_score", "curve", "distance_state", "distances",
           "expected_score", "frequencies", "pair_contributions", "rope_distance",
           "rope_rotation", "rope_state", "rotated", "score"]

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


# ----------------------------------------------------------------------------- rope_distance

DISTANCE_D_HEAD = 128
BASES = (10_000, 100_000, 500_000, 1_000_000)
#: who uses each base (the readout says it)
BASE_USERS = {10_000: "RoFormer, Llama 2; Gemma 3's local layers", 100_000: "",
              500_000: "Llama 3", 1_000_000: "Qwen 3; Gemma 3's global layers"}
ROTATIONS = ("full", "partial", "none", "yarn")
ROTATION_LABELS = ("full (128 of 128)", "25 % (32 of 128)", "none (NoPE)", "YaRN 4x over 32K")
#: the legend's names
SERIES_LABELS = {"full": "plain RoPE (full)", "partial": "25 % rotated", "none": "no rotation",
                 "yarn": "YaRN 4x"}
PARTIAL = 32  # the features the partial rotation turns: 25 % of 128 (Qwen3-Next: 64 of 256)
YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
LENGTHS = (4096, 32768, 131072, 1048576)
LENGTH_LABELS = ("4K", "32K", "128K", "1M")
PER_OCTAVE = 5
#: each point is the mean of the curve over d / WINDOW .. d * WINDOW
WINDOW = 2 ** 0.25  # a quarter octave either side


def frequencies(base, rotation):
    """(theta (rope_dim/2,) float64, attention factor) of a ``rotation`` of ``ROTATIONS`` with
    ``base``: ``mha.rope_scaling.rope_frequencies`` of the rotated features (none for NoPE)."""
    if rotation == "none":
        return torch.zeros(0, dtype=torch.float64), 1.0
    rope_dim = PARTIAL if rotation == "partial" else DISTANCE_D_HEAD
    inv_freq, factor = rope_frequencies(rope_dim, base=float(base), dtype=torch.float64,
                                        scaling=YARN if rotation == "yarn" else None)
    return inv_freq, float(factor)


def expected_score(d, theta, d_head=DISTANCE_D_HEAD):
    """E[q_m . k_n] / d_head at distances ``d`` = m - n (a number or (N,)) for q = k with
    ``d_head`` i.i.d. N(0, 1) features, the pairs of ``theta`` (rope_dim/2,) rotated, the other
    d_head - rope_dim features not: (2 sum_j cos(d theta_j) + d_head - rope_dim) / d_head."""
    d = torch.as_tensor(d, dtype=torch.float64)
    turned = torch.cos(d[..., None] * theta).sum(-1)  # (N, rope_dim/2) -> (N,)
    return (2 * turned + d_head - 2 * theta.numel()) / d_head


def averaged_score(d, theta, d_head=DISTANCE_D_HEAD, window=WINDOW):
    """``expected_score``'s mean over the distances d / window .. d * window, exact: a pair's
    cosine averages to (sin(b theta) - sin(a theta)) / ((b - a) theta) over [a, b]."""
    d = torch.as_tensor(d, dtype=torch.float64)
    a, b = (d / window)[..., None], (d * window)[..., None]  # (N, 1) each
    mean = (torch.sin(b * theta) - torch.sin(a * theta)) / ((b - a) * theta)  # (N, rope_dim/2)
    return (2 * mean.sum(-1) + d_head - 2 * theta.numel()) / d_head


def distances(length):
    """The distances drawn, 1 to ``length`` (a power of 2): PER_OCTAVE points an octave, the
    powers of 2 exact (the axis labels them), the others to 3 significant digits."""
    out = []
    for i in range(PER_OCTAVE * (length.bit_length() - 1) + 1):
        x = 2 ** (i / PER_OCTAVE)
        out.append(2 ** (i // PER_OCTAVE) if i % PER_OCTAVE == 0 else
                   int(float(f"{x:.3g}")) if x >= 100 else float(f"{x:.3g}"))
    return tuple(out)


@lru_cache(maxsize=None)
def curve(base, rotation, stretch=1):
    """The averaged curve (a tuple) at the distances ``distances(LENGTHS[-1])`` divided by
    ``stretch``; a shorter length's is its first points."""
    theta, _ = frequencies(base, rotation)
    x = torch.tensor(distances(LENGTHS[-1]), dtype=torch.float64) / stretch
    return tuple(averaged_score(x, theta).tolist())


def _halfway(x, y, level):
    """The first distance where ``y`` falls to ``level``, log-linear between two points; None
    when it stays above it."""
    for i in range(1, len(y)):
        if y[i] <= level < y[i - 1]:
            t = (y[i - 1] - level) / (y[i - 1] - y[i])
            return 2 ** (math.log2(x[i - 1]) + t * (math.log2(x[i]) - math.log2(x[i - 1])))
    return None


def _sig(x):
    """Two significant digits, as a distance: 52, 1,300, 0.86."""
    return f"{float(f'{x:.2g}'):,g}" if x < 1000 else f"{int(float(f'{x:.2g}')):,}"


def _yarn_pairs(base):
    """(slowed, kept, on the ramp): how many pairs YaRN turns ``factor`` times slower, leaves
    alone, or slows by less."""
    theta, _ = frequencies(base, "yarn")
    ratio = theta / frequencies(base, "full")[0]
    slowed = int(torch.isclose(ratio, torch.tensor(1 / YARN["factor"], dtype=ratio.dtype)).sum())
    kept = int(torch.isclose(ratio, torch.ones_like(ratio)).sum())
    return slowed, kept, theta.numel() - slowed - kept


def distance_state(base, rotation, length):
    x = distances(length)
    n = len(x)
    y, full = list(curve(base, rotation)[:n]), list(curve(base, "full")[:n])
    theta, factor = frequencies(base, rotation)
    rope_dim, D = 2 * theta.numel(), DISTANCE_D_HEAD
    level = (D - rope_dim) / D  # the unrotated features' share: what the curve settles around
    exact = float(expected_score(length, theta))
    s, L0 = YARN["factor"], YARN["original_max_position_embeddings"]
    series = {SERIES_LABELS[rotation]: y}
    if rotation != "full":
        series[SERIES_LABELS["full"]] = full
    if rotation == "partial":
        series[f"unrotated share {level:g}"] = [level] * n
    stretched = list(curve(base, "full", s)[:n])
    if rotation == "yarn":
        series[f"full at d/{s:g}"] = stretched
    view = plot(x, series, marker=n - 1, marker_series=[0], y_min=-0.2, y_max=1.0, x_log=True,
                x_label="distance d = m \u2212 n (log scale)", y_label="E[q\u00b7k] / d_head",
                caption=f"What a key equal to the query scores at distance d (1 at d = 0; "
                        f"each point the mean over {1 / WINDOW:.2f}d to {WINDOW:.2f}d)")
    users = BASE_USERS[base]
    head = f"Base {base:,}" + (f" ({users})" if users else "")
    say = {"full": "full rotation", "partial": f"25 % rotated ({rope_dim} of {D} features)",
           "none": "no rotation (NoPE, as in Llama 4's every fourth layer)",
           "yarn": f"YaRN {s:g}x over {L0 // 1024}K"}
    half, halfway_level = None, (1 + level) / 2
    text = f"{head}, {say[rotation]}: "
    if rotation == "yarn":
        slowed, kept, ramp = _yarn_pairs(base)
        text += (f"{slowed} slow pairs (a wavelength over {L0:,}) turn {s:g}x slower, {kept} "
                 f"fast ones (32 turns or more in {L0:,}) as before, {ramp} between. ")
    if rotation == "none":
        text += (f"a key equal to the query scores 1 at every distance; with plain RoPE, "
                 f"{full[-1]:.3f} at {length:,}.")
    else:
        half = _halfway(x, y, halfway_level)
        text += (f"{'A' if rotation == 'yarn' else 'a'} key equal to the query scores "
                 f"{y[-1]:.3f} at distance {length:,} (exactly there: {exact:.3f})")
        if rotation == "partial":
            text += f", plain RoPE {full[-1]:.3f}"
        elif rotation == "yarn":
            text += f", plain RoPE {stretched[-1]:.3f} at {length:,}/{s:g}"
        if rotation == "partial":
            text += (f". It settles around the {D - rope_dim}/{D} = {level:g} of its unrotated "
                     f"features, rippling about it; halfway there ({halfway_level:g}) ")
        else:
            text += "; half (0.5) "
        text += f"first at d \u2248 {_sig(half)}." if half else f"never, up to {length:,}."
    if rotation == "yarn":
        text += (f" Every score also grows {factor:.3f}\u00b2 = {factor ** 2:.3f} times (left "
                 f"out of the curve).")
    return {"views": {"score": view}, "readout": text,
            "state": {"base": base, "rotation": rotation, "length": length,
                      "rope_dim": rope_dim, "level": level, "score": y[-1], "exact": exact,
                      "full": full[-1], "halfway": half, "attention_factor": factor}}


@live_figure
def rope_distance(base=10_000, rotation="partial", length=131072):
    """Chapter 12, positions today: pick the base, the rotation (full, 25 %, none, YaRN) and
    the length; see what a key identical to the query still scores at distance d: for q = k
    with 128 i.i.d. N(0, 1) features, E[q_m . k_n] / 128 = (2 sum_j cos(d theta_j) + 128 -
    rope_dim) / 128, d = m - n, each point its mean over 0.84d to 1.19d (module docstring)."""
    return Figure(
        name="rope-distance", title="RoPE's score against the distance: full, partial, none, YaRN",
        controls=[slider("base", "base", BASES, base, labels=[f"{b:,}" for b in BASES]),
                  select("rotation", "rotation", ROTATIONS, rotation, labels=ROTATION_LABELS),
                  slider("length", "distances up to", LENGTHS, length, labels=LENGTH_LABELS)],
        views=[View("score", "plot")],
        state_fn=distance_state,
        alt="A line plot of the expected score of a key identical to the query (128 features "
            "drawn i.i.d. from N(0, 1), divided by 128: 1 at distance 0) against the distance, "
            "1 to the chosen length on a log scale, each point the mean over 0.84 to 1.19 "
            "times its distance. "
            "Plain RoPE falls from 1 toward 0 in ripples, sooner for a small base; 25 % "
            "rotation settles around the 0.75 that its 96 unrotated features keep, rippling "
            "about it; no rotation is flat at 1; YaRN 4x over 32K follows plain RoPE at short "
            "distances and stretches the slow pairs' part of the curve 4 times longer. Plain "
            "RoPE is drawn dashed beside the others, with the unrotated share or the plain "
            "curve at a quarter of the distance where they apply.")

"""Chapter 03's live figure: one shared W against separate W^Q and W^K on the ring task.

(The figure's text writes W^Q and W^K as W_Q and W_K: a canvas has no superscripts.)

The task is chapter 03's: six seats round a table, a letter (of eight) on each seat, every token
the one-hot of its letter and of its seat; the answer at seat i is the letter at seat i - 1 (seat
0 wraps round to seat 5). One ``mha.AttentionHead`` (``variant="shared"`` or ``"qk"``) and a
linear read-out are trained with the chapter's recipe (same data seeds, 200 full-batch steps of
Adam, learning rate 0.05) and kept at a few steps of training. The figure shows, for a test ring,
the head's score matrix (with its largest asymmetry |s_ij - s_ji|), its attention weights with
the target (the left neighbour) outlined, and the loss of both heads as training goes on. Each
score map has its own colour scale, symmetric around 0 at its largest |s|.
"""

import math
from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from mha._threads import one_thread
from mha.head import AttentionHead
from mha.live.figure import Figure, View, heatmap, plot, select, steps, toggle

from ._registry import live_figure

__all__ = ["CHECKPOINTS", "make_rings", "ring_head", "shared_vs_separate", "trained_heads"]

N_LETTERS, N_SEATS, D_HEAD = 8, 6, 8
D_MODEL = N_LETTERS + N_SEATS
LETTERS = "ABCDEFGH"
CHECKPOINTS = (0, 10, 25, 50, 100, 200)
SEPARATE = "separate W_Q, W_K"  # W^Q, W^K of the formulas, in plain text
N_RINGS = 4  # test rings the figure offers


def make_rings(n, generator):
    """``n`` random rings: inputs (n, L, D), targets (n, L) (the letter on the left), letters."""
    letter = torch.randint(0, N_LETTERS, (n, N_SEATS), generator=generator)
    seat = torch.eye(N_SEATS).expand(n, N_SEATS, N_SEATS)  # (n, L, L) one-hot
    x = torch.cat([F.one_hot(letter, N_LETTERS).float(), seat], dim=-1)  # (n, L, 8 + 6)
    return x, letter.roll(1, dims=1), letter


class RingModel(nn.Module):
    """One attention head, then a linear map from its output to scores for the 8 letters."""

    def __init__(self, variant):
        super().__init__()
        self.head = AttentionHead(D_MODEL, D_HEAD, variant=variant)
        self.readout = nn.Linear(D_MODEL, N_LETTERS)

    def forward(self, x):
        out, weights = self.head(x)  # (B, L, D), (B, L, L)
        return self.readout(out), weights  # (B, L, 8)

    def scores(self, x):
        """The head's scores (B, L, L): q . k / sqrt(d_head), before the softmax."""
        head = self.head
        q, k = (head.W(x), head.W(x)) if head.variant == "shared" else (head.W_q(x), head.W_k(x))
        return q @ k.transpose(-2, -1) / math.sqrt(D_HEAD)  # (B, L, Dh) @ (B, Dh, L)


@lru_cache(maxsize=1)
def _data():
    gen = torch.Generator().manual_seed(0)
    train = make_rings(512, gen)
    test = make_rings(1000, gen)
    return train, test


@lru_cache(maxsize=2)
def trained_heads(variant):
    """The model after each of ``CHECKPOINTS`` steps of training and the loss of every step.
    The global random state is left as it was."""
    (x, y, _), _ = _data()
    snapshots, losses = {}, []
    # tiny matrices train faster on one CPU thread than on several
    with torch.random.fork_rng(devices=[]), torch.enable_grad(), one_thread():
        torch.manual_seed(0)
        model = RingModel(variant)
        optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
        for step in range(CHECKPOINTS[-1] + 1):
            if step in CHECKPOINTS:
                snapshots[step] = {k: v.clone() for k, v in model.state_dict().items()}
            if step == CHECKPOINTS[-1]:
                break
            logits, _ = model(x)
            loss = F.cross_entropy(logits.reshape(-1, N_LETTERS), y.reshape(-1))
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
    return snapshots, losses


def ring_head(variant, step):
    """The ring model of ``variant`` after ``step`` (one of ``CHECKPOINTS``) steps, eval mode."""
    with torch.random.fork_rng(devices=[]):  # nn.Linear's init draws from the global state
        model = RingModel(variant)
    model.load_state_dict(trained_heads(variant)[0][step])
    return model.eval()


@lru_cache(maxsize=None)
def _evaluate(variant, step):
    _, (x, y, _) = _data()
    with torch.no_grad():
        model = ring_head(variant, step)
        logits, weights = model(x)
        scores = model.scores(x)
    right = (logits.argmax(-1) == y).float()  # (n, L)
    accuracy = float(right.mean())
    per_seat = right.mean(0).tolist()  # (L,): each seat's accuracy over the test rings
    solved = sum(a > 0.9 for a in per_seat)  # seats answered right on over 90% of the rings
    seats = torch.arange(N_SEATS)
    left = float(weights[:, seats, (seats - 1) % N_SEATS].mean())  # over every test ring
    return scores[:N_RINGS], weights[:N_RINGS], accuracy, left, solved, per_seat


def _labels(ring):
    _, (_, _, letters) = _data()
    return [f"{s}:{LETTERS[i]}" for s, i in enumerate(letters[ring].tolist())]


def _loss_view(step):
    curves = {}
    for variant, label in (("shared", "shared W"), ("qk", SEPARATE)):
        losses = trained_heads(variant)[1]
        # the loss at each checkpoint: before its first step; the last, after training
        curves[label] = [losses[s] if s < len(losses) else losses[-1] for s in CHECKPOINTS]
    return plot(CHECKPOINTS, curves, marker=CHECKPOINTS.index(step), y_min=0.0,
                caption="Training loss of both heads (guessing: log 8 = 2.08)",
                x_label="training step", y_label="cross-entropy loss")


def score_range(s):
    """The colour scale of one score map: symmetric around 0 at its largest |s| (rounded up to
    0.01), so the pattern shows at every step and for both heads."""
    return max(math.ceil(float(s.abs().max()) * 100) / 100, 0.01)


def ring_state(separate, step, ring):
    variant = "qk" if separate else "shared"
    scores, weights, accuracy, left, solved, per_seat = _evaluate(variant, step)
    s, w = scores[ring], weights[ring]  # (L, L) each
    asym = float((s - s.T).abs().max())
    labels = _labels(ring)
    targets = [(0, i, (i - 1) % N_SEATS) for i in range(N_SEATS)]
    name = SEPARATE if separate else "shared W"
    top = score_range(s)
    return {
        "views": {
            "scores": heatmap(s, labels, labels, vmin=-top, vmax=top, scale="diverging",
                              numbers=True, label="score", marks=targets,
                              caption=f"Scores, {name}, step {step}: max |s_ij - s_ji| = "
                                      f"{asym:.2f}",
                              axes=f"rows: queries, columns: keys; outlined: the left seat; "
                                   f"colours from -{top:g} to {top:g}"),
            "weights": heatmap(w, labels, labels, numbers=True, marks=targets,
                               caption=f"Weights, {name}, step {step}",
                               axes="rows: queries, columns: keys; outlined: the target"),
            "loss": _loss_view(step)},
        "readout": (f"{name} after {step} steps. On the ring shown (test ring {ring}) the "
                    f"scores are {'symmetric' if asym < 1e-5 else 'not symmetric'} (largest "
                    f"|s_ij - s_ji| = {asym:.2f}). Over all 1,000 test rings: on average each "
                    f"seat puts {left:.2f} of its weight on its left neighbour, and the test "
                    f"accuracy is {accuracy:.1%} (seat by seat, 0 to {N_SEATS - 1}: "
                    f"{', '.join(f'{a:.0%}' for a in per_seat)})."),
        "state": {"separate": separate, "step": step, "ring": ring, "accuracy": accuracy,
                  "left": left, "solved": solved, "per_seat": per_seat, "score_range": top},
    }


@live_figure
def shared_vs_separate(separate=False, step=CHECKPOINTS[-1], ring=0):
    """Chapter 03: the shared W against W^Q and W^K on the ring task, as training goes on."""
    return Figure(
        name="shared-vs-separate", title="One shared W or separate W_Q and W_K on the ring task",
        controls=[toggle("separate", "separate W_Q and W_K", separate),
                  steps("step", "training step", len(CHECKPOINTS), CHECKPOINTS.index(step),
                        labels=[str(s) for s in CHECKPOINTS]),
                  select("ring", "test ring", list(range(N_RINGS)), ring)],
        views=[View("scores", "heatmap"), View("weights", "heatmap"), View("loss", "plot")],
        state_fn=lambda separate, step, ring: ring_state(separate, CHECKPOINTS[step], ring),
        alt="Two heatmaps for one ring of six seats: the head's scores (blue negative, red "
            "positive) and its attention weights, the seat on the left outlined; a line plot "
            "of both heads' training loss.")

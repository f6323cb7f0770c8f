"""The pattern gallery: attention patterns made by setting W_q and W_k by hand.

Every pattern here is *produced*, not drawn: we build a one-head ``mha.MultiHeadAttention``,
write chosen numbers into its ``W_q`` and ``W_k``, run the layer on a sentence and read the
weights it returns. Each function's docstring (and the ``reason`` it returns) says in one line
why the pattern appears.

The input features are hand-made too, so that a projection can "read" one property of a token:

    x_i = [ position one-hot (L) | segment one-hot (S) | word one-hot (V) | 1 ]

so D = L + S + V + 1. A projection is a D x D matrix; ``W[out, in] = c`` copies feature ``in``
of the token into coordinate ``out`` of its query (or key), scaled by ``c``. Two features meet in
a score when the query and the key put them in the same output coordinate. We pick ``c`` so a
match adds ``strength`` to the *scaled* score q.k / sqrt(D): with the default strength 6 a match
beats a non-match by a factor e^6, about 400.

Shapes: L tokens, D = d_model (one head, so d_head = D).
"""

import math
from dataclasses import dataclass, field

import torch

__all__ = [
    "GALLERY_SEGMENTS",
    "GALLERY_TOKENS",
    "Pattern",
    "blocks",
    "diagonal",
    "embed",
    "gallery",
    "horizontal_stripe",
    "pattern_from_projections",
    "plot_gallery",
    "previous_token",
    "same_word",
    "vertical_stripe",
]

#: the gallery's sentence, with a start token, and its phrases (segment ids) for the block pattern
GALLERY_TOKENS = ["<s>", "the", "bank", "by", "the", "river", "was", "flooded", "."]
GALLERY_SEGMENTS = [0, 1, 1, 2, 2, 2, 3, 3, 3]


@dataclass
class Pattern:
    """One hand-made head: its weights (L, L), the tokens, and why the pattern appears."""

    name: str
    tokens: list
    weights: torch.Tensor  # (L, L): row = query, column = key
    reason: str
    W_q: torch.Tensor = field(repr=False)  # (D, D), as in nn.Linear: q = W_q @ x
    W_k: torch.Tensor = field(repr=False)  # (D, D)


@dataclass
class _Layout:
    """Where each group of features sits inside x."""

    L: int
    S: int
    vocab: list

    @property
    def d_model(self):
        return self.L + self.S + len(self.vocab) + 1

    def pos(self, i):
        return i

    def seg(self, s):
        return self.L + s

    def word(self, w):
        return self.L + self.S + self.vocab.index(w)

    @property
    def const(self):
        return self.d_model - 1


def _layout(tokens, segments):
    vocab = sorted({t.lower() for t in tokens})
    return _Layout(L=len(tokens), S=max(segments) + 1, vocab=vocab)


def _segments(tokens, segments):
    if segments is None:
        segments = GALLERY_SEGMENTS if list(tokens) == GALLERY_TOKENS else [0] * len(tokens)
    if len(segments) != len(tokens):
        raise ValueError(
            f"segments must give one segment id per token: got {len(segments)} ids for "
            f"{len(tokens)} tokens"
        )
    return list(segments)


def embed(tokens=None, segments=None):
    """The hand-made features x (1, L, D) of ``tokens``: position, segment, word, constant 1."""
    tokens = list(GALLERY_TOKENS if tokens is None else tokens)
    segments = _segments(tokens, segments)
    lay = _layout(tokens, segments)
    x = torch.zeros(lay.L, lay.d_model)
    for i, (tok, seg) in enumerate(zip(tokens, segments)):
        x[i, lay.pos(i)] = 1.0
        x[i, lay.seg(seg)] = 1.0
        x[i, lay.word(tok.lower())] = 1.0
        x[i, lay.const] = 1.0
    return x.unsqueeze(0)  # (L, D) -> (1, L, D)


def _gain(d_model, strength):
    """c such that one matching feature adds ``strength`` to the scaled score (c*c/sqrt(D))."""
    return math.sqrt(strength * math.sqrt(d_model))


def pattern_from_projections(W_q, W_k, tokens=None, segments=None, *, mask=None):
    """Run a one-head ``mha.MultiHeadAttention`` whose W_q, W_k are the given (D, D) matrices.

    W_v and W_o are identities (the output is then the weighted average of the features).
    Returns the weights (L, L). ``mask``: bool (L, L), True = may attend, or None.
    """
    from mha.layer import MultiHeadAttention

    x = embed(tokens, segments)  # (1, L, D)
    D = x.size(-1)
    layer = MultiHeadAttention(D, 1)
    with torch.no_grad():
        layer.W_q.weight.copy_(W_q)
        layer.W_k.weight.copy_(W_k)
        layer.W_v.weight.copy_(torch.eye(D))
        layer.W_o.weight.copy_(torch.eye(D))
        _, weights = layer(x, mask=mask, need_weights=True)  # weights (1, 1, L, L)
    return weights[0, 0]  # (1, 1, L, L) -> (L, L)


def _make(name, reason, tokens, segments, fill, strength):
    tokens = list(GALLERY_TOKENS if tokens is None else tokens)
    segments = _segments(tokens, segments)
    lay = _layout(tokens, segments)
    c = _gain(lay.d_model, strength)
    W_q, W_k = torch.zeros(lay.d_model, lay.d_model), torch.zeros(lay.d_model, lay.d_model)
    fill(lay, W_q, W_k, c)
    weights = pattern_from_projections(W_q, W_k, tokens, segments)
    return Pattern(name, tokens, weights, reason, W_q, W_k)


def diagonal(tokens=None, segments=None, *, strength=6.0):
    """Diagonal: W_q and W_k both copy the position, so each query matches only its own key."""
    reason = "W_q and W_k both copy the position one-hot, so q_i.k_j is large only for j = i."

    def fill(lay, W_q, W_k, c):
        for i in range(lay.L):
            W_q[lay.pos(i), lay.pos(i)] = c
            W_k[lay.pos(i), lay.pos(i)] = c

    return _make("diagonal", reason, tokens, segments, fill, strength)


def previous_token(tokens=None, segments=None, *, strength=6.0):
    """Previous token: W_k writes position j into slot j+1, so query i matches the key of i-1."""
    reason = ("W_k shifts each key's position by one (k_j lands in slot j+1), so query i "
              "matches key i-1; the first token, with nothing before it, matches itself.")

    def fill(lay, W_q, W_k, c):
        for i in range(lay.L):
            W_q[lay.pos(i), lay.pos(i)] = c  # q_i points at slot i
        for j in range(lay.L - 1):
            W_k[lay.pos(j + 1), lay.pos(j)] = c  # k_j points at slot j + 1
        W_k[lay.pos(0), lay.pos(0)] = c  # k_0 also points at slot 0: the first token meets itself

    return _make("previous token", reason, tokens, segments, fill, strength)


def vertical_stripe(tokens=None, segments=None, *, sink=0, strength=6.0):
    """Vertical stripe: every query is the same vector, and only the sink's key points along it."""
    reason = (f"every query is the same vector (W_q reads the constant feature) and only token "
              f"{sink}'s key points the same way, so all rows put their weight on one column: "
              "a 'sink'.")

    def fill(lay, W_q, W_k, c):
        if not 0 <= sink < lay.L:
            raise ValueError(f"sink must be a token index in [0, {lay.L}); got {sink}")
        W_q[lay.const, lay.const] = c  # q_i = c * u for every i
        W_k[lay.const, lay.pos(sink)] = c  # k_j = c * u only for j = sink

    return _make("vertical stripe (sink)", reason, tokens, segments, fill, strength)


def horizontal_stripe(tokens=None, segments=None, *, row=-1, strength=6.0):
    """Horizontal stripe: one query is the zero vector, so it scores all keys 0 and spreads out."""
    reason = ("W_q drops one token's position, so its query is the zero vector: every score in "
              "its row is 0 and softmax spreads the weight evenly (the other rows stay diagonal).")

    def fill(lay, W_q, W_k, c):
        target = row % lay.L
        for i in range(lay.L):
            W_k[lay.pos(i), lay.pos(i)] = c
            if i != target:
                W_q[lay.pos(i), lay.pos(i)] = c

    return _make("horizontal stripe", reason, tokens, segments, fill, strength)


def blocks(tokens=None, segments=None, *, strength=6.0):
    """Blocks: W_q and W_k copy the segment id, so tokens attend evenly within their phrase."""
    reason = ("W_q and W_k both copy the segment (phrase) id, so a query scores every key of its "
              "own phrase equally and all others lower: a block on the diagonal per phrase.")

    def fill(lay, W_q, W_k, c):
        for s in range(lay.S):
            W_q[lay.seg(s), lay.seg(s)] = c
            W_k[lay.seg(s), lay.seg(s)] = c

    return _make("blocks (phrases)", reason, tokens, segments, fill, strength)


def same_word(tokens=None, segments=None, *, strength=6.0):
    """Same word: W_q and W_k copy the word's identity, so a token matches every copy of itself."""
    reason = ("W_q and W_k both copy the word one-hot (content, not position), so a token "
              "attends to every occurrence of the same word, wherever it is.")

    def fill(lay, W_q, W_k, c):
        for w in lay.vocab:
            W_q[lay.word(w), lay.word(w)] = c
            W_k[lay.word(w), lay.word(w)] = c

    return _make("same word", reason, tokens, segments, fill, strength)


def gallery(tokens=None, segments=None, *, strength=6.0):
    """All six patterns on the same sentence, as a list of ``Pattern``."""
    makers = (diagonal, previous_token, vertical_stripe, horizontal_stripe, blocks, same_word)
    return [make(tokens, segments, strength=strength) for make in makers]


def plot_gallery(patterns=None, *, ncols=3, cmap="viridis"):
    """One heatmap per pattern (``mha.viz.plot_heads``: shared 0..1 colour scale, tokens on both
    axes, titled with the pattern's name); returns the figure."""
    from mha.viz import plot_heads

    patterns = gallery() if patterns is None else patterns
    tokens = patterns[0].tokens
    if any(p.tokens != tokens for p in patterns):
        raise ValueError("plot_gallery needs patterns over the same tokens")
    weights = torch.stack([p.weights for p in patterns])  # P x (L, L) -> (P, L, L)
    return plot_heads(weights, tokens, tokens, head_labels=[p.name for p in patterns],
                      ncols=ncols, cmap=cmap, vmax=1.0,
                      title="Attention patterns from hand-set W_q and W_k (one head each)")

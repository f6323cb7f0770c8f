"""The Shakespeare model's heads as chapter 10 measures and names them: one definition, which
the chapter and the explorer's table (``mha_book.sources.head_table``) both use.

Two scores per head (`mha.head_scores`, after Olsson et al. 2022):

- the **previous-token score** on held-out text: the first ``HELD_OUT_WINDOWS`` windows of
  ``context_length`` characters of the held-out sample that ships with the model
  (``info["validation_sample"]``);
- the **induction score** on ``REPEATS`` blocks of ``info["repeat_len"]`` random lowercase
  letters, each followed by itself (`mha.head_scores.repeated_sequence`, seed
  ``REPEAT_SEED``).

And one rule that names a head from them (``head_names``): an **induction head** scores above
``INDUCTION_MIN`` on induction; a **previous-token head** scores above ``PREVIOUS_MIN`` on the
previous token and more than ``PREVIOUS_RATIO`` times every other head of its layer (so a layer
whose heads all look one back a little names none of them); any other head is "mixed".

Shapes: N windows, L context length, T block length, H heads.
"""

import functools

import torch

from mha import head_scores

__all__ = ["HELD_OUT_WINDOWS", "INDUCTION_MIN", "PREVIOUS_MIN", "PREVIOUS_RATIO", "REPEATS",
           "REPEAT_SEED", "head_names", "held_out_windows", "measure", "repeated_letters",
           "shipped_scores"]

#: the held-out windows the previous-token score averages over
HELD_OUT_WINDOWS = 32
#: the repeated random blocks of the induction score, and their seed
REPEATS, REPEAT_SEED = 64, 1
#: an induction head: an induction score above this
INDUCTION_MIN = 0.3
#: a previous-token head: a previous-token score above PREVIOUS_MIN and more than
#: PREVIOUS_RATIO times that of every other head of its layer
PREVIOUS_MIN, PREVIOUS_RATIO = 0.3, 3.0


def held_out_windows(lm, sample):
    """The held-out ``sample`` (str) as ids (N, L): its whole windows of the model's
    ``context_length`` characters."""
    ids = lm.encode(sample)
    L = lm.context_length
    if len(ids) < L:
        raise ValueError(f"sample has {len(ids)} characters; it must hold at least one "
                         f"window of context_length = {L}")
    return ids[: len(ids) // L * L].view(-1, L)  # (N, L)


def repeated_letters(vocab, length):
    """(REPEATS, 2 * length) ids over ``vocab`` (a str holding a-z in order, as
    ``mha_book.language_model.VOCAB``): a block of ``length`` random lowercase letters, twice."""
    if not isinstance(vocab, str) or "a" not in vocab:
        raise ValueError(f"vocab must be a str with the letters a-z; got {vocab!r:.40}")
    a = vocab.index("a")
    if vocab[a: a + 26] != "abcdefghijklmnopqrstuvwxyz":
        raise ValueError("vocab must hold the 26 lowercase letters in order, from 'a'")
    return head_scores.repeated_sequence(a + 26, length, batch=REPEATS, seed=REPEAT_SEED,
                                         low=a)


@torch.no_grad()
def measure(lm, held_out, repeated, length):
    """Every head's two scores: ``(previous, induction)``, each (layers, H) on the CPU.
    ``held_out`` (N, L) ids of held-out text (``held_out_windows(...)[:HELD_OUT_WINDOWS]``),
    ``repeated`` (B, 2T) ids of repeated blocks (``repeated_letters``) and ``length`` = T.
    The inputs go to the model's device."""
    device = next(lm.parameters()).device
    previous = torch.stack([head_scores.previous_token_score(w.cpu())
                            for w in lm.attention(held_out.to(device))])  # (layers, H)
    induction = torch.stack([head_scores.induction_score(w.cpu(), length)
                             for w in lm.attention(repeated.to(device))])  # (layers, H)
    return previous, induction


def head_names(previous, induction):
    """Chapter 10's name of every head from its scores (layers, H) each: a list per layer of
    "induction head", "previous-token head" or "mixed" (see the module docstring)."""
    # compared as the chapter compares them: in the scores' dtype
    previous, induction = torch.as_tensor(previous), torch.as_tensor(induction)
    if previous.dim() != 2 or previous.shape != induction.shape:
        raise ValueError(f"previous and induction must both have shape (layers, H); got "
                         f"{tuple(previous.shape)} and {tuple(induction.shape)}")
    names = []
    for prev, ind in zip(previous, induction):  # one layer: (H,) each
        row = []
        for h in range(len(prev)):
            others = torch.cat([prev[:h], prev[h + 1:]])  # the layer's other heads
            ahead = not len(others) or bool(prev[h] > PREVIOUS_RATIO * others.max())
            if ind[h] > INDUCTION_MIN:
                row.append("induction head")
            elif prev[h] > PREVIOUS_MIN and ahead:
                row.append("previous-token head")
            else:
                row.append("mixed")
        names.append(row)
    return names


@functools.lru_cache(maxsize=None)
def _info():
    from mha_book.language_model import load_language_model

    return load_language_model(with_info=True)[1]


def shipped_scores(lm):
    """``measure`` on the inputs chapter 10 uses: ``lm`` (the shipped model, or one with its
    vocabulary and context) on the held-out sample and block length of the shipped model's
    ``info``."""
    info = _info()
    held_out = held_out_windows(lm, info["validation_sample"])[:HELD_OUT_WINDOWS]
    T = info["repeat_len"]
    return measure(lm, held_out, repeated_letters(lm.vocab, T), T)

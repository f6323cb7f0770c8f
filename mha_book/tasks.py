"""Seeded synthetic tasks whose solutions need different attention heads, and tools to score heads.

Two tasks train the tiny transformers of chapter 08 (`mha_book.tiny`):

- `SequenceTasks`: 16 letters; the first 8 are distinct, the last 8 are the same letters shuffled.
  At every position an encoder predicts up to three things at once ("jobs"):
  ``previous`` (the letter just before), ``first`` (the letter at position 0) and ``induction``
  (the letter that followed the earlier occurrence of the current letter: "... c f ... c -> f").
  Each job needs attention to a different place, so heads specialise.
- `Translation`: a toy English -> French with 9 source and 12 target tokens. Nouns gain an article
  (``cat -> le chat``: one word becomes two) and adjectives move behind their noun and agree with
  its gender (``black cat -> le chat noir``), so cross-attention has a readable, crossing alignment.

Every sampler takes a ``torch.Generator`` (or a seed), so the same seed gives the same data.
Targets use -100 where a job is undefined (``torch.nn.functional.cross_entropy`` ignores it).

Reading the heads: `pattern_masks` gives, for every query, the keys a named pattern points at
(previous token, first token, same token, induction target, ...), `pattern_score` measures the
fraction of a head's weight on them, and `attention_entropy` measures how spread out a head is.

Shapes: B batch, H heads, L length, Lq / Lk query / key length, K jobs, Ls / Lt source / target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Union

import torch

IGNORE = -100  # label value that cross_entropy skips

Seed = Union[int, torch.Generator, None]


def _generator(seed: Seed) -> torch.Generator:
    """A CPU generator from an int seed (or the generator itself)."""
    if isinstance(seed, torch.Generator):
        return seed
    if seed is not None and not isinstance(seed, int):
        raise TypeError(f"seed must be an int or a torch.Generator, got {type(seed).__name__}")
    return torch.Generator().manual_seed(0 if seed is None else seed)


def _check_batch_size(batch_size: int) -> None:
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")


@dataclass
class TaskBatch:
    """One batch of a task (all tensors on the CPU; move them with `.to(device)`).

    - ``inputs``: (B, L) token ids (the source sentence for translation).
    - ``targets``: the labels; (B, L, K) for `SequenceTasks`, (B, Lt) for `Translation`.
    - ``decoder_inputs``: (B, Lt) the target shifted right behind ``<s>`` (translation only).
    """

    inputs: torch.Tensor
    targets: torch.Tensor
    decoder_inputs: torch.Tensor | None = None

    def to(self, device) -> TaskBatch:
        move = (lambda t: None if t is None else t.to(device))
        return TaskBatch(move(self.inputs), move(self.targets), move(self.decoder_inputs))


class SequenceTasks:
    """Letters in two halves (8 distinct, then the same 8 shuffled), up to three jobs per position.

    ``jobs`` picks which labels to produce, in order, from ``previous``, ``first``, ``induction``.
    """

    JOBS = ("previous", "first", "induction")

    def __init__(self, jobs=JOBS, *, num_letters: int = 16, half: int = 8):
        jobs = tuple([jobs] if isinstance(jobs, str) else jobs)
        unknown = [j for j in jobs if j not in self.JOBS]
        if not jobs or unknown:
            raise ValueError(f"jobs must be a non-empty subset of {self.JOBS}, got {jobs}")
        if half > num_letters:
            raise ValueError(f"half ({half}) must be <= num_letters ({num_letters})")
        self.jobs, self.half = jobs, half
        self.vocab = [chr(ord("a") + i) for i in range(num_letters)]
        self.length = 2 * half

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def sample(self, batch_size: int, seed: Seed = None) -> TaskBatch:
        """``inputs`` (B, L) letters, ``targets`` (B, L, K) with -100 where a job is undefined."""
        _check_batch_size(batch_size)
        g = _generator(seed)
        V, n = self.vocab_size, self.half
        first = torch.rand(batch_size, V, generator=g).argsort(dim=1)[:, :n]  # (B, n) distinct
        order = torch.rand(batch_size, n, generator=g).argsort(dim=1)  # (B, n) a shuffle
        x = torch.cat([first, first.gather(1, order)], dim=1)  # (B, L)
        return TaskBatch(x, self.labels(x))

    def labels(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L) ids -> (B, L, K) labels for ``self.jobs``."""
        B, L = x.shape
        out = torch.full((B, L, len(self.jobs)), IGNORE, dtype=torch.long)
        for k, job in enumerate(self.jobs):
            if job == "previous":
                out[:, 1:, k] = x[:, :-1]
            elif job == "first":
                out[:, :, k] = x[:, :1]
            else:  # induction: the key the induction pattern points at holds the label
                target = pattern_masks(x)["induction"]  # (B, L, L)
                has = target.any(-1)
                out[:, :, k] = torch.where(has, x.gather(1, target.float().argmax(-1)), IGNORE)
        return out

    def decode(self, ids) -> list:
        """A row of ids -> list of letters."""
        return [self.vocab[int(i)] for i in ids]


# (English, French, gender) for nouns; (English, masculine, feminine) for adjectives.
NOUNS = [("cat", "chat", "m"), ("dog", "chien", "m"), ("horse", "cheval", "m"),
         ("wolf", "loup", "m"), ("mouse", "souris", "f"), ("cow", "vache", "f"),
         ("owl", "chouette", "f"), ("frog", "grenouille", "f")]
ADJECTIVES = [("black", "noir", "noire"), ("green", "vert", "verte"),
              ("white", "blanc", "blanche"), ("grey", "gris", "grise"),
              ("slow", "lent", "lente"), ("strong", "fort", "forte")]
VERBS = [("sees", "voit"), ("likes", "aime"), ("follows", "suit"), ("chases", "chasse"),
         ("watches", "regarde"), ("helps", "aide")]
PREPOSITIONS = [("with", "avec"), ("under", "sous"), ("on", "sur"), ("without", "sans")]


class Translation:
    """A toy English -> French: ``ADJ NOUN VERB ADJ NOUN PREP ADJ NOUN .`` (9 tokens) becomes
    ``DET NOUN ADJ VERB DET NOUN ADJ PREP DET NOUN ADJ .`` (12 tokens).

    ``alignment[j]`` is the source position that target position j translates (the article's is
    its noun's, whose gender it needs), the answer key for cross-attention; ``target_roles[j]``
    names the kind of word at target position j.
    """

    SOURCE_PATTERN = "A N V A N P A N ."
    alignment = (1, 1, 0, 2, 4, 4, 3, 5, 7, 7, 6, 8)
    target_roles = ("article", "noun", "adjective", "verb", "article", "noun", "adjective",
                    "preposition", "article", "noun", "adjective", "full stop")

    def __init__(self):
        self.src_vocab = ([a[0] for a in ADJECTIVES] + [n[0] for n in NOUNS]
                          + [v[0] for v in VERBS] + [p[0] for p in PREPOSITIONS] + ["."])
        self.tgt_vocab = (["<s>", "le", "la"] + [n[1] for n in NOUNS]
                          + [w for a in ADJECTIVES for w in a[1:]]
                          + [v[1] for v in VERBS] + [p[1] for p in PREPOSITIONS] + ["."])
        self.src_len, self.tgt_len = 9, 12
        self.bos = 0

    @property
    def src_vocab_size(self) -> int:
        return len(self.src_vocab)

    @property
    def tgt_vocab_size(self) -> int:
        return len(self.tgt_vocab)

    def translate(self, words: list) -> list:
        """English words (9) -> French words (12), by the toy grammar."""
        if len(words) != self.src_len:
            raise ValueError(f"words must have {self.src_len} tokens, got {len(words)}")
        noun = {n[0]: n for n in NOUNS}
        adj = {a[0]: a for a in ADJECTIVES}
        other = dict(VERBS + PREPOSITIONS + [(".", ".")])
        out = []
        for a, n in ((0, 1), (3, 4), (6, 7)):  # (adjective, noun) positions in the source
            _, fr, gender = noun[words[n]]
            out.append([("le" if gender == "m" else "la"), fr,
                        adj[words[a]][1 if gender == "m" else 2]])
        return out[0] + [other[words[2]]] + out[1] + [other[words[5]]] + out[2] + ["."]

    def sample(self, batch_size: int, seed: Seed = None) -> TaskBatch:
        """``inputs`` (B, 9) source ids, ``decoder_inputs`` (B, 12), ``targets`` (B, 12)."""
        _check_batch_size(batch_size)
        g = _generator(seed)
        pools = {"A": [a[0] for a in ADJECTIVES], "N": [n[0] for n in NOUNS],
                 "V": [v[0] for v in VERBS], "P": [p[0] for p in PREPOSITIONS], ".": ["."]}
        src_index = {w: i for i, w in enumerate(self.src_vocab)}
        tgt_index = {w: i for i, w in enumerate(self.tgt_vocab)}
        src, tgt = [], []
        picks = [torch.randint(len(pools[c]), (batch_size,), generator=g).tolist()
                 for c in self.SOURCE_PATTERN.split()]  # one column of choices per slot
        for row in range(batch_size):
            words = [pools[c][col[row]] for c, col in zip(self.SOURCE_PATTERN.split(), picks)]
            src.append([src_index[w] for w in words])
            tgt.append([tgt_index[w] for w in self.translate(words)])
        src, tgt = torch.tensor(src), torch.tensor(tgt)  # (B, Ls), (B, Lt)
        dec_in = torch.cat([torch.full((batch_size, 1), self.bos), tgt[:, :-1]], dim=1)
        return TaskBatch(src, tgt, dec_in)

    def decode_src(self, ids) -> list:
        return [self.src_vocab[int(i)] for i in ids]

    def decode_tgt(self, ids) -> list:
        return [self.tgt_vocab[int(i)] for i in ids]

    def alignment_mask(self, batch_size: int = 1) -> torch.Tensor:
        """(B, Lt, Ls) bool: True where target position j translates source position i."""
        m = torch.zeros(self.tgt_len, self.src_len, dtype=torch.bool)
        m[torch.arange(self.tgt_len), torch.tensor(self.alignment)] = True
        return m.expand(batch_size, -1, -1)


TASKS = {
    "previous_token": lambda: SequenceTasks(("previous",)),
    "first_token": lambda: SequenceTasks(("first",)),
    "induction": lambda: SequenceTasks(("induction",)),
    "multitask": lambda: SequenceTasks(SequenceTasks.JOBS),
    "translation": Translation,
}


def make_task(name: str):
    """A task by name: ``previous_token``, ``first_token``, ``induction``, ``multitask`` or
    ``translation``."""
    if name not in TASKS:
        raise ValueError(f"task must be one of {sorted(TASKS)}, got {name!r}")
    return TASKS[name]()


# ---------------------------------------------------------------- reading the heads


def pattern_masks(x: torch.Tensor) -> dict:
    """For self-attention over ids ``x`` (B, L): {pattern name: (B, L, L) bool}, True where the
    pattern says query i should look at key j.

    ``self`` (j = i), ``previous`` (j = i - 1), ``next`` (j = i + 1), ``first`` (j = 0, for i > 0),
    ``same token`` (an earlier j with x_j = x_i), ``induction`` (j = k + 1 for the latest earlier k
    with x_k = x_i: the token that followed the last time the current token appeared).
    """
    if x.dim() != 2:
        raise ValueError(f"x must be (B, L) token ids, got shape {tuple(x.shape)}")
    B, L = x.shape
    i = torch.arange(L, device=x.device)
    eye = i[:, None] == i[None, :]  # (L, L)
    earlier = i[None, :] < i[:, None]  # (L, L): key j before query i
    same = (x[:, :, None] == x[:, None, :]) & earlier  # (B, Lq, Lk)
    # latest earlier occurrence k, shifted one to the right
    latest = torch.where(same, i, -1).amax(-1)  # (B, L), -1 where none
    induction = (i[None, None, :] == (latest + 1)[:, :, None]) & (latest >= 0)[:, :, None]
    first = torch.zeros(L, L, dtype=torch.bool, device=x.device)
    first[1:, 0] = True
    return {
        "self": eye.expand(B, L, L),
        "previous": (i[None, :] == i[:, None] - 1).expand(B, L, L),
        "next": (i[None, :] == i[:, None] + 1).expand(B, L, L),
        "first": first.expand(B, L, L),
        "same token": same,
        "induction": induction,
    }


def pattern_score(weights: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean fraction of each head's attention on the keys ``target`` marks.

    weights (B, H, Lq, Lk); target bool broadcastable to (B, Lq, Lk). Queries whose target row is
    empty are left out. Returns (H,): 1 means all weight exactly where the pattern says.
    """
    if weights.dim() != 4:
        raise ValueError(f"weights must be (B, H, Lq, Lk), got shape {tuple(weights.shape)}")
    B, H, Lq, Lk = weights.shape
    target = target.to(weights.device).expand(B, Lq, Lk)
    on_target = (weights * target[:, None]).sum(-1)  # (B, H, Lq)
    rows = target.any(-1)[:, None].expand(B, H, Lq)  # (B, H, Lq)
    if not rows.any():
        raise ValueError("target marks no key for any query: nothing to score")
    return (on_target * rows).sum((0, 2)) / rows[:, 0].sum()


def attention_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Mean entropy (in nats) of each head's attention rows: (B, H, Lq, Lk) -> (H,).

    A row's entropy is -sum_j p_j log p_j with 0 log 0 = 0: 0 for a one-hot row, log(Lk) for a
    uniform one. Rows that are all zero (a query that may attend to nothing) are left out of the
    mean.
    """
    if weights.dim() != 4:
        raise ValueError(f"weights must be (B, H, Lq, Lk), got shape {tuple(weights.shape)}")
    p = weights.float()
    plogp = torch.where(p > 0, p * p.clamp_min(1e-30).log(), torch.zeros_like(p))
    entropy = -plogp.sum(-1)  # (B, H, Lq)
    live = p.sum(-1) > 0.5  # (B, H, Lq): rows that hold a distribution
    return (entropy * live).sum((0, 2)) / live.sum((0, 2)).clamp_min(1)


def uniform_entropy(num_keys: int) -> float:
    """The largest possible row entropy, log(num_keys), for comparison."""
    return math.log(num_keys)

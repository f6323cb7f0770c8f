"""Chapter 08's live figure: a trained head, query by query, as lines.

The model is chapter 08's shipped letters model (``mha_book.tiny.load_pretrained("multitask")``: two
layers of 4 heads; at every position it outputs the previous letter, the first letter and the
letter that followed the earlier occurrence of the current one). Its weights for three of the
chapter's sequences (``task.sample(256, seed=1)``, the first three) are recorded with
``mha.record_attention``; every head is named by its best pattern score (``mha_book.tasks``'
``pattern_masks`` and ``pattern_score`` over the 256 sequences), and given the name chapter 07's
explorer gives it (``mha_book.sources.head_table``: its best pattern's role when that score is above
0.8 and at least 0.1 ahead of the next, else "mixed"), so the two chapters name a head alike.

The figure: pick a head and a sequence, step through the queries (positions 0..15 of the step
control are the queries 0..15, the last one "all"); the lines view shows the head's lines (all
of them, or the current query's), the bars the current query's weights with
the keys its head's pattern points at in the accent colour (the caption says so only when the
pattern points somewhere: at query 0 the previous-token pattern has no key).
"""

from functools import lru_cache

import torch

from mha._threads import one_thread
from mha.live.figure import Control, Figure, View, bars, lines, select
from mha.record import record_attention
from mha_book import tasks as _tasks
from mha_book import tiny as _tiny
from mha_book.sources import head_table

from ._registry import live_figure

__all__ = ["ALL", "PATTERNS", "head_names", "head_role", "recorded", "trained_head_lines"]

#: the patterns a head is named by (``mha_book.tasks.pattern_masks``' names) and the role they name
PATTERNS = {"previous": "previous-token head", "first": "first-token head",
            "same token": "matching head (an earlier copy of its letter)",
            "induction": "induction head", "self": "self head", "next": "next-token head"}
#: a pattern's name as the readout writes it ("the previous pattern" read as "the pattern
#: before")
PATTERN_WORDS = {"previous": "previous-token", "first": "first-token", "same token": "same-token",
                 "induction": "induction", "self": "self", "next": "next-token"}
N_SEQUENCES = 3
#: the query control's last value: every query's lines
ALL = "all"


@lru_cache(maxsize=1)
def recorded():
    """``(inputs (256, L), weights (layers, 256, H, L, L), patterns {name: (256, L, L)})`` of the
    shipped letters model on ``task.sample(256, seed=1)``, recorded with
    ``mha.record_attention``. The global random state is left as it was."""
    task = _tasks.make_task("multitask")
    batch = task.sample(256, seed=1)
    with torch.random.fork_rng(devices=[]), one_thread(), torch.no_grad():
        model = _tiny.load_pretrained("multitask").eval()
        with record_attention(model) as weights:
            model(batch.inputs)
    stacked = torch.stack([weights[f"encoder.layers.{n}.self_attn"]
                           for n in range(model.config["num_layers"])])
    return batch.inputs, stacked, _tasks.pattern_masks(batch.inputs)


@lru_cache(maxsize=1)
def head_names():
    """``[(layer, head, pattern, score)]`` for every head: its best pattern score over the
    256 sequences (``mha_book.tasks.pattern_score``), as chapter 08 names heads."""
    _, weights, patterns = recorded()
    out = []
    for layer in range(weights.shape[0]):
        scores = {p: _tasks.pattern_score(weights[layer], patterns[p]) for p in PATTERNS}
        for h in range(weights.shape[2]):
            best = max(PATTERNS, key=lambda p: float(scores[p][h]))
            out.append((layer, h, best, float(scores[best][h])))
    return out


def head_role(k):
    """The name chapter 07's explorer gives head ``k`` of ``head_names()``
    (``mha_book.sources.head_table``'s rule: a role such as "induction head", or "mixed")."""
    layer, h, _, _ = head_names()[k]
    return head_table(f"letters model: layer {layer}")["names"][h]


def _tokens(seq):
    inputs, _, _ = recorded()
    letters = _tasks.make_task("multitask").decode(inputs[seq])
    return [f"{i} {c}" for i, c in enumerate(letters)]


def head_label(k):
    layer, h, _, _ = head_names()[k]
    return f"L{layer} H{h}: {head_role(k)}"


def trained_head_state(head, sequence, query):
    """One state: ``head`` an index into ``head_names()``, ``sequence`` 0..2, ``query`` the
    query shown (0..15) or ``ALL`` for every query's lines."""
    inputs, weights, patterns = recorded()
    layer, h, pattern, score = head_names()[head]
    words = PATTERN_WORDS[pattern]
    w = weights[layer, sequence, h]  # (L, L)
    tokens = _tokens(sequence)
    L = len(tokens)
    name = f"layer {layer}, head {h}"
    caption = (f"{name} ({head_role(head)}; best pattern: {pattern} {score:.2f}), "
               f"sequence {sequence}")
    view = lines(w, tokens, tokens, caption=caption,
                 focus_from=("query", list(range(L)) + [None]))
    target = patterns[pattern][sequence]  # (L, L): the keys the head's pattern points at
    state = {"layer": layer, "head": h, "sequence": sequence,
             "query": None if query == ALL else query}
    if query == ALL:
        here = float(_tasks.pattern_score(w[None, None], target[None])[0])
        readout = (f"{name}, every query's lines: {here:.2f} of its weight where the "
                   f"{words} pattern points on this sequence ({score:.2f} over 256 sequences)")
        return {"views": {"lines": view, "row": None}, "readout": readout + ".", "state": state}
    i = query
    row = w[i]
    top = int(row.argmax())
    keys = target[i].nonzero().flatten().tolist()
    where = (f"the {words} pattern points at key{'s' if len(keys) > 1 else ''} "
             f"{', '.join(tokens[j] for j in keys)}"
             if keys else f"the {words} pattern points nowhere for this query")
    readout = (f"{name}, query {tokens[i]}: {float(row[top]):.2f} of its weight on key "
               f"{tokens[top]}; {where}.")
    # the caption promises an accent bar only where there is one
    accent = (f"accent: the {words} key{'s' if len(keys) > 1 else ''}" if keys
              else f"no {words} key for this query")
    row_view = bars(row, tokens, highlight=keys, x_label="key",
                    caption=f"Query {tokens[i]}'s weights ({accent})")
    return {"views": {"lines": view, "row": row_view}, "readout": readout, "state": state}


@live_figure
def trained_head_lines(head=None, sequence=0, query=ALL):
    """Chapter 08's figure: pick a head of the shipped letters model and a sequence; step through
    the queries and see each one's lines. ``head`` defaults to the previous-token head;
    ``query`` is a query position or ``ALL``."""
    names = head_names()
    if head is None:
        head = max(range(len(names)),
                   key=lambda k: names[k][3] if names[k][2] == "previous" else -1)
    L = len(_tokens(0))
    return Figure(
        name="trained-head-lines",
        title="A trained head, query by query",
        controls=[select("head", "head", list(range(len(names))), head,
                         labels=[head_label(k) for k in range(len(names))]),
                  select("sequence", "sequence", list(range(N_SEQUENCES)), sequence,
                         labels=[f"{s}: " + "".join(t.split()[1] for t in _tokens(s))[:8]
                                 + "..." for s in range(N_SEQUENCES)]),
                  Control("query", "query position", "step", list(range(L)) + [ALL], query,
                          labels=[str(i) for i in range(L)] + ["all"])],
        views=[View("lines", "lines"), View("row", "bars")],
        state_fn=trained_head_state,
        alt="One trained head of chapter 08's letters model as lines from each query (left) to "
            "each key (right), width and opacity the attention weight; stepping through the "
            "queries shows one query's lines and its weights as bars.")

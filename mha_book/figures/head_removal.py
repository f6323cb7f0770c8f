"""Chapter 09's live figure: switch heads of the shipped 16-head model off and read the accuracy.

The model is chapter 09's (``mha_book.tiny.load_pretrained("multitask_8heads")``: two layers of 8
heads on the letters task). As in the chapter, heads are ranked on 512 scoring sequences
(``task.sample(512, seed=1)``, batches of 32) by ablation (the loss increase when the head's
gate is 0, through ``mha.head_gates``) and by the gradient score of Michel et al.
(``mha.head_importance``), and accuracy is measured on 300 held-out sequences
(``task.sample(300, seed=2024)``) with ``mha_book.train.accuracy`` (one value per job) while
``mha.head_gates`` holds the removed heads' gates at 0.

The page offers, and lists exactly, every subset its controls reach: an order (least important
first by ablation or by the gradient score, most important first, or a random order), how far
along it heads are removed (up to place 0 to 16: the step control counts places in the order,
not heads removed), and whether the two heads whose removal costs most are kept (then the heads
removed are those at places 1 to k less those two). The grid colours each head by its place, 1
to 16, as the controls and the readout count places. Accuracies are drawn and written in percent
with one decimal, the bars as the readout; a job's bar, and the mean's, is accented when it is
below 99% of the full model's (``KEEP``), which is the 99.0% that the bars' numbers are compared
with (the full model gets every job right). 4 x 17 x 2 = 136 settings; the accuracy of each is
computed when the figure is made (a fraction of a second on a CPU).
"""

from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

import torch

from mha._threads import one_thread
from mha.importance import attention_layers, head_gates, head_importance
from mha.live.figure import Figure, View, bars, heatmap, plot, select, steps, toggle
from mha_book import tasks as _tasks
from mha_book import tiny as _tiny
from mha_book import train as _train

from ._registry import live_figure

__all__ = ["ORDERS", "accuracy_with", "head_scores", "head_subsets", "head_switches", "order_of"]

ORDERS = ("ablation", "gradient score", "reverse", "random")
#: a bar is accented below KEEP times the full model's accuracy (the chapter's knee rule)
KEEP = 0.99
ORDER_LABELS = {"ablation": "ablation, least first",
                "gradient score": "gradient, least first",
                "reverse": "gradient, most first",
                "random": "random (seed 0)"}


@lru_cache(maxsize=1)
def _setup():
    with torch.random.fork_rng(devices=[]):
        model = _tiny.load_pretrained("multitask_8heads").eval()
    task = _tasks.make_task("multitask")
    scoring = task.sample(512, seed=1)
    held_out = task.sample(300, seed=2024)
    return model, task, scoring, held_out


def _loss(model, batch):
    return _train.loss_of(_train.logits_of(model, batch), batch.targets)


@lru_cache(maxsize=1)
def head_scores():
    """``(ablation, gradient)``, each (layers, H): the loss increase on the scoring sequences
    when one head's gate is 0, and ``mha.head_importance`` over batches of 32."""
    model, _, scoring, _ = _setup()
    names = _layer_names(model)
    layers, H = len(names), model.config["num_heads"]
    ablation = torch.zeros(layers, H)
    with one_thread(), torch.no_grad(), head_gates(model) as gates:
        full = _loss(model, scoring).item()
        for n, name in enumerate(names):
            for h in range(H):
                gates[name][h] = 0.0
                ablation[n, h] = _loss(model, scoring).item() - full
                gates[name][h] = 1.0
    batches = [_tasks.TaskBatch(x, y) for x, y in
               zip(scoring.inputs.split(32), scoring.targets.split(32))]
    with one_thread():
        gradient = torch.stack(list(head_importance(model, batches, _loss).values()))
    return ablation, gradient


def _layer_names(model):
    return list(attention_layers(model))


def order_of(name):
    """The 16 heads as ``(layer, head)`` in the order ``name`` (one of ``ORDERS``) removes them,
    as chapter 09 orders them."""
    ablation, gradient = head_scores()
    layers, H = ablation.shape
    heads = [(n, h) for n in range(layers) for h in range(H)]
    if name == "ablation":
        return sorted(heads, key=lambda lh: ablation[lh].item())
    if name == "gradient score":
        return sorted(heads, key=lambda lh: gradient[lh].item())
    if name == "reverse":
        return sorted(heads, key=lambda lh: gradient[lh].item())[::-1]
    if name == "random":
        perm = torch.randperm(len(heads), generator=torch.Generator().manual_seed(0))
        return [heads[i] for i in perm.tolist()]
    raise ValueError(f"order must be one of {ORDERS}; got {name!r}")


@lru_cache(maxsize=1)
def essential():
    """The two heads whose removal alone raises the scoring loss most, sorted."""
    ablation, _ = head_scores()
    H = ablation.shape[1]
    return tuple(sorted(divmod(int(i), H) for i in ablation.flatten().topk(2).indices))


def removed_heads(order, removed, spare):
    """The heads a setting removes: the first ``removed`` of ``order``, less the two essential
    heads when ``spare``."""
    heads = order_of(order)[:removed]
    return [lh for lh in heads if not (spare and lh in essential())]


@lru_cache(maxsize=None)
def accuracy_with(removed):
    """Held-out accuracy per job (K,) with the heads in ``removed`` (a tuple of (layer, head))
    gated to 0 by ``mha.head_gates``, measured by ``mha_book.train.accuracy``."""
    model, _, _, held_out = _setup()
    names = _layer_names(model)
    with one_thread(), torch.no_grad(), head_gates(model) as gates:
        for layer, h in removed:
            gates[names[layer]][h] = 0.0
        return _train.accuracy(model, held_out)


def head_subsets():
    """Every subset of heads the figure's controls reach (sorted tuples), once each."""
    return sorted({tuple(sorted(removed_heads(o, k, s))) for o in ORDERS for k in range(17)
                   for s in (False, True)})


def _mean(removed):
    return float(accuracy_with(tuple(sorted(removed))).mean())


def _places(places):
    """Places in the order as words: "place 3", "places 1 and 2", "places 1-7"."""
    if len(places) == 1:
        return f"place {places[0]}"
    if len(places) == 2:
        return f"places {places[0]} and {places[1]}"
    return f"places {places[0]}\u2013{places[-1]}"


def _heads(n):
    return f"{n} head{'' if n == 1 else 's'}"


def _which(order, removed, spare):
    """What a setting removes, in words: the places passed, less the essential heads kept."""
    places = order_of(order)
    if removed == 0:
        return "nothing removed yet"
    gone = removed_heads(order, removed, spare)
    passed = _places(list(range(1, removed + 1)))
    text = f"up to place {removed}: {len(gone)} of 16 heads removed ("
    if not spare:
        return text + passed + ")"
    kept = sorted(places.index(lh) + 1 for lh in essential())
    reached = [k for k in kept if k <= removed]
    which = "the 2 essential heads" if len(reached) == 2 else "the essential head"
    if not reached:
        return text + f"{passed}; the 2 essential heads, at {_places(kept)}, not reached yet)"
    if not gone:
        return text + f"{passed}: {which}, kept)"
    return text + f"{passed}, less {which} at {_places(reached)}, kept)"


def _pct(x):
    """A fraction in percent with one decimal, written as the page writes the bars' numbers:
    the value the bar stores (five decimals), a tie rounded up as JavaScript's toFixed rounds
    it (10.25 is "10.3" on the bar; Python's format would write "10.2")."""
    stored = round(100 * float(x), 5)
    return f"{Decimal(stored).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)}%"


def heads_state(order, removed, spare):
    ablation, _ = head_scores()
    layers, H = ablation.shape
    _, task, _, _ = _setup()
    gone = removed_heads(order, removed, spare)
    acc = accuracy_with(tuple(sorted(gone)))
    full = accuracy_with(())
    place = torch.zeros(layers, H)
    for rank, lh in enumerate(order_of(order)):
        place[lh] = rank + 1
    for lh in gone:
        place[lh] = float("nan")
    # the essential heads are outlined at every setting: the grid's legend never changes
    marks = [(0, layer, h) for layer, h in essential()]
    jobs = list(task.jobs)
    values = acc.tolist() + [float(acc.mean())]
    fulls = full.tolist() + [float(full.mean())]
    broken = [k for k, (a, f) in enumerate(zip(values, fulls)) if a < KEEP * f]
    n = len(order_of(order))
    curves = {"essential removed too": [100 * _mean(removed_heads(order, k, False))
                                          for k in range(n + 1)],
              "essential kept": [100 * _mean(removed_heads(order, k, True))
                                       for k in range(n + 1)]}
    readout = (f"{ORDER_LABELS[order].capitalize()}, {_which(order, removed, spare)}; "
               "held-out accuracy "
               + ", ".join(f"{j} {_pct(a)}" for j, a in zip(jobs, values))
               + f"; mean {_pct(values[-1])}, "
               + ("below" if len(values) - 1 in broken else "not below")
               + f" 99% of the full model's {_pct(fulls[-1])}.")
    kept = 16 - len(gone)
    return {
        "views": {
            "heads": heatmap(place[None], [f"layer {n}" for n in range(layers)],
                             [f"head {h}" for h in range(H)], vmin=1, vmax=n,
                             ticks=PLACE_TICKS, marks=marks, label="place in the order",
                             caption=f"{_heads(len(gone))} removed, {kept} kept",
                             axes="crossed out: removed; outlined: the 2 essential"),
            "accuracy": bars([100 * a for a in values], jobs + ["mean"], highlight=broken,
                             x_label="job", y_label="held-out accuracy (%)", y_max=100.0,
                             decimals=1,  # as the readout writes them: 99.9, 100.0
                             caption="Accent: under 99% of the full model's"),
            "curve": plot(list(range(n + 1)), curves, marker=removed,
                          marker_series=[1 if spare else 0], y_min=0.0, y_max=110.0,
                          x_label=PLACE_LABEL, y_label="mean accuracy (%)",
                          caption=f"Pruning curve, order: {ORDER_LABELS[order]}"),
        },
        "readout": readout,
        "state": {"order": order, "removed": removed, "spare": spare,
                  "removed_heads": [list(lh) for lh in gone], "accuracy": values},
    }


#: the curve's x-axis, and the step control's label: both count places in the order (the
#: control's is short, under "order of removal", so that on a phone its value stays on its row)
PLACE_LABEL = "remove up to place"
STEP_LABEL = "up to place"
#: the grid's colour bar: places 1 to 16, as the controls and the readout count them
PLACE_TICKS = (1, 4, 8, 12, 16)


@live_figure
def head_switches(order="ablation", removed=0, spare=False):
    """Chapter 09's figure: remove heads of the 16-head model along an order (up to a place in
    it), keep the two essential ones if asked, read the accuracy."""
    return Figure(
        name="head-switches",
        title="Switch heads off and read the accuracy",
        controls=[select("order", "order of removal", list(ORDERS), order,
                         labels=[ORDER_LABELS[o] for o in ORDERS]),
                  steps("removed", STEP_LABEL, 17, removed,
                        labels=["none"] + [str(k) for k in range(1, 17)]),
                  toggle("spare", "keep the 2 essential heads", spare)],
        views=[View("heads", "heatmap"), View("accuracy", "bars"), View("curve", "plot")],
        state_fn=heads_state,
        alt="The 16 heads of chapter 09's model as a 2 by 8 grid, removed heads crossed out "
            "and the 2 essential heads outlined; bars of the held-out accuracy of each job, "
            "in percent, with those heads removed; and the pruning curves of the chosen "
            "order, removing every head of it or keeping the 2 essential ones, with the "
            "current setting ringed on the curve the controls select.")

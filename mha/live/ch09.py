"""Chapter 09's live figure: switch heads of the shipped 16-head model off and read the accuracy.

The model is chapter 09's (``mha.tiny.load_pretrained("multitask_8heads")``: two layers of 8
heads on the letters task). As in the chapter, heads are ranked on 512 scoring sequences
(``task.sample(512, seed=1)``, batches of 32) by ablation (the loss increase when the head's
gate is 0, through ``mha.head_gates``) and by the gradient score of Michel et al.
(``mha.head_importance``), and accuracy is measured on 300 held-out sequences
(``task.sample(300, seed=2024)``) with ``mha.train.accuracy`` (one value per job) while
``mha.head_gates`` holds the removed heads' gates at 0.

The page offers, and lists exactly, every subset its controls reach: an order (least important
first by ablation or by the gradient score, most important first, or a random order), how many
heads of that order are taken (0 to 16), and whether the two heads whose removal costs most are
put back (then the heads removed are the order's first k less those two). A job's bar, and the
mean's, is accented when it is below 99% of the full model's (``KEEP``). 4 x 17 x 2 = 136 settings; the accuracy of each is computed when the figure is
made (a fraction of a second on a CPU).
"""

from functools import lru_cache

import torch

from .. import tasks as _tasks
from .. import tiny as _tiny
from .. import train as _train
from .._threads import one_thread
from ..importance import attention_layers, head_gates, head_importance
from .figure import Figure, View, bars, heatmap, plot, select, slider, toggle

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
    gated to 0 by ``mha.head_gates``, measured by ``mha.train.accuracy``."""
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
    marks = [(0, layer, h) for layer, h in essential()] if spare else []
    jobs = list(task.jobs)
    values = acc.tolist() + [float(acc.mean())]
    fulls = full.tolist() + [float(full.mean())]
    broken = [k for k, (a, f) in enumerate(zip(values, fulls)) if a < KEEP * f]
    n = len(order_of(order))
    curves = {"along the order": [_mean(removed_heads(order, k, False))
                                          for k in range(n + 1)],
              "essential 2 put back": [_mean(removed_heads(order, k, True))
                                                      for k in range(n + 1)]}
    spared = " and ".join(f"layer {layer} head {h}" for layer, h in essential())
    readout = (f"Order {ORDER_LABELS[order]}: the first {removed} heads of the order, "
               + (f"{len(gone)} of 16 removed ({spared} put back)" if removed > len(gone)
                  else f"{len(gone)} of 16 removed")
               + "; held-out accuracy " + ", ".join(f"{j} {a:.2f}" for j, a in zip(jobs, acc))
               + f"; mean {values[-1]:.3f}, "
               + ("below" if len(values) - 1 in broken else "not below")
               + f" 99% of the full model's {fulls[-1]:.3f}.")
    return {
        "views": {
            "heads": heatmap(place[None], [f"layer {n}" for n in range(layers)],
                             [f"head {h}" for h in range(H)], vmin=0, vmax=16,
                             marks=marks, label="place in the order",
                             caption=f"{len(gone)} heads removed, {16 - len(gone)} kept",
                             axes="crossed: removed; colour: place in the order"
                                  + ("; outlined: put back" if spare else "")),
            "accuracy": bars(values, jobs + ["mean"], highlight=broken, x_label="job",
                             y_label="held-out accuracy",
                             caption="Accuracy (accent: under 99% of the full model's)"),
            "curve": plot(list(range(n + 1)), curves, marker=removed, y_min=0.0, y_max=1.1,
                          x_label="heads of the order removed", y_label="mean accuracy",
                          caption=f"Pruning curve, order: {ORDER_LABELS[order]}"),
        },
        "readout": readout,
        "state": {"order": order, "removed": removed, "spare": spare,
                  "removed_heads": [list(lh) for lh in gone], "accuracy": values},
    }


def head_switches(order="ablation", removed=0, spare=False):
    """Chapter 09's figure: remove heads of the 16-head model along an order, put the two
    essential ones back, read the accuracy."""
    return Figure(
        name="head-switches",
        title="Switch heads off and read the accuracy",
        controls=[select("order", "order of removal", list(ORDERS), order,
                         labels=[ORDER_LABELS[o] for o in ORDERS]),
                  slider("removed", "heads of the order removed", list(range(17)), removed),
                  toggle("spare", "put back the 2 essential heads", spare)],
        views=[View("heads", "heatmap"), View("accuracy", "bars"), View("curve", "plot")],
        state_fn=heads_state,
        alt="The 16 heads of chapter 09's model as a 2 by 8 grid, removed heads crossed out; "
            "bars of the held-out accuracy of each job with those heads removed; and the "
            "pruning curve of the chosen order with the current number of heads marked.")

"""The check of chapter 09's coding exercise (which heads matter): a pruning order found by ablation, re-measured
after every removal (greedy), so that redundant heads are not all removed together.

The reader's function is called as ``fn(evaluate, num_layers, num_heads, num_remove)``, where
``evaluate(head_mask)`` takes a (num_layers, num_heads) mask (1 = kept, 0 = removed) and returns
a loss (lower is better), and returns the removed heads in order, as (layer, head) pairs.
"""

import torch

from mha_book.exercises import Case, register
from mha_book.exercises._shared import variant


def greedy_pruning_order(evaluate, num_layers, num_heads, num_remove):
    """Remove ``num_remove`` heads one at a time; each step removes the head whose removal, on top
    of those already removed, gives the lowest ``evaluate(head_mask)`` (ties: the lowest
    (layer, head)). Returns the list of (layer, head) pairs in the order removed."""
    mask = torch.ones(num_layers, num_heads)  # (num_layers, H): 1 = kept
    order = []
    for _ in range(num_remove):
        best = None
        for layer in range(num_layers):
            for head in range(num_heads):
                if mask[layer, head] == 0:
                    continue  # already removed
                trial = mask.clone()
                trial[layer, head] = 0.0
                value = float(evaluate(trial))
                if best is None or value < best[0]:
                    best = (value, layer, head)
        mask[best[1], best[2]] = 0.0
        order.append((best[1], best[2]))
    return order


def _additive(costs):
    """evaluate(mask) = sum of the costs of the removed heads."""
    def evaluate(mask):
        return float((costs * (1 - mask)).sum())
    return evaluate


def _redundant_pair(mask):
    """Heads (0, 0) and (0, 1) do the same job: either alone can go, not both; heads (1, 0) and
    (1, 1) cost 1 and 2."""
    both_gone = float(mask[0, 0] == 0 and mask[0, 1] == 0)
    return 10.0 * both_gone + float(1 - mask[1, 0]) + 2.0 * float(1 - mask[1, 1])


def _helpful(mask):
    """Removing head (1, 2) lowers the loss (it was adding noise); others cost their index."""
    costs = torch.arange(6, dtype=torch.float32).view(2, 3) + 1.0
    costs[1, 2] = -0.5
    return torch.tensor(3.0) + (costs * (1 - mask)).sum()  # a 0-d tensor, not a float


def _cases():
    g = torch.Generator().manual_seed(9)
    costs = torch.rand(3, 4, generator=g)
    return [
        Case("additive costs, 3 layers x 4 heads, remove 5 (cheapest first)",
             args=(_additive(costs), 3, 4, 5)),
        Case("num_remove = 0: nothing removed, an empty list", args=(_additive(costs), 3, 4, 0)),
        Case("one layer with one head, remove it", args=(_additive(torch.ones(1, 1)), 1, 1, 1)),
        Case("a redundant pair: after (0, 0) goes, (0, 1) becomes essential (re-measure after "
             "every removal)", args=(_redundant_pair, 2, 2, 3)),
        Case("all heads cost nothing: ties go to the lowest (layer, head)",
             args=(_additive(torch.zeros(2, 3)), 2, 3, 4)),
        Case("evaluate returns a 0-d tensor; removing head (1, 2) lowers the loss, so it goes "
             "first", args=(_helpful, 2, 3, 3)),
        Case("remove every head of a 2 x 2 model: each head exactly once",
             args=(_additive(torch.tensor([[0.3, 0.1], [0.4, 0.2]])), 2, 2, 4)),
    ]


def _compare(expected, actual):
    if not isinstance(actual, (list, tuple)):
        return f"expected a list of (layer, head) pairs, got {type(actual).__name__}"
    try:
        got = [(int(layer), int(head)) for layer, head in actual]
    except (TypeError, ValueError):
        return f"expected a list of (layer, head) pairs, got {actual!r}"
    if len(got) != len(expected):
        return f"expected {len(expected)} heads removed {expected}, got {len(got)}: {got}"
    for step, (e, a) in enumerate(zip(expected, got)):
        if e != a:
            return (f"removal {step} (counting from 0): expected {e}, got {a}; "
                    f"expected order {expected}, got {got}")
    return None


def _variants(rng):
    layers, heads = rng.randint(1, 3), rng.randint(2, 4)
    remove = rng.randint(1, layers * heads)
    return [variant(f"additive costs, {layers} x {heads} heads, remove "
                    f"{remove}", (_additive(torch.rand(layers, heads)),
                                  layers, heads, remove))]


register(
    "greedy_pruning_order",
    reference=greedy_pruning_order,
    cases=_cases,
    compare=_compare,
    hint="Keep one mask of ones; at every step try each head still kept (a copy of the mask with "
    "that head at 0), call evaluate on it, remove the head with the lowest value (strictly "
    "lower, so ties keep the first (layer, head) tried), and start the next step from the new "
    "mask: the costs change once a head is gone.",
    variants=_variants,
    forbidden=[greedy_pruning_order],
)

"""The chapter 09 exercise check (mha_book/exercises/greedy_pruning_order.py): a greedy pruning order passes,
and the mistakes readers make (one-shot ranking, forgetting removed heads) fail with a message."""

import torch

from mha_book.exercises import available, check


def run(fn):
    result = check("greedy_pruning_order", fn, verbose=False)
    return result, "\n".join(result.failures)


def greedy(evaluate, num_layers, num_heads, num_remove):
    mask = torch.ones(num_layers, num_heads)
    order = []
    for _ in range(num_remove):
        kept = [(layer, head) for layer in range(num_layers) for head in range(num_heads)
                if mask[layer, head] == 1]
        costs = []
        for layer, head in kept:
            trial = mask.clone()
            trial[layer, head] = 0
            costs.append(float(evaluate(trial)))
        layer, head = kept[min(range(len(kept)), key=costs.__getitem__)]
        mask[layer, head] = 0
        order.append((layer, head))
    return order


def test_check_is_registered_and_passes_a_greedy_solution():
    assert "greedy_pruning_order" in available()
    assert check("greedy_pruning_order", greedy, verbose=False).passed


def test_one_shot_ranking_fails_on_the_redundant_pair():
    def one_shot(evaluate, num_layers, num_heads, num_remove):
        costs = {}
        for layer in range(num_layers):
            for head in range(num_heads):
                mask = torch.ones(num_layers, num_heads)
                mask[layer, head] = 0
                costs[(layer, head)] = float(evaluate(mask))
        return sorted(costs, key=costs.get)[:num_remove]

    result, text = run(one_shot)
    assert not result.passed
    assert "redundant pair" in text and "removal 1" in text
    assert "re-measure" in text or "start the next step" in text  # case name or hint


def test_forgetting_removed_heads_fails():
    def forgetful(evaluate, num_layers, num_heads, num_remove):  # may pick a head twice
        mask, order = torch.ones(num_layers, num_heads), []
        for _ in range(num_remove):
            best = None
            for layer in range(num_layers):
                for head in range(num_heads):
                    trial = mask.clone()
                    trial[layer, head] = 0
                    value = float(evaluate(trial))
                    if best is None or value < best[0]:
                        best = (value, layer, head)
            mask[best[1], best[2]] = 0
            order.append(best[1:])
        return order

    result, text = run(forgetful)
    assert not result.passed
    assert "each head exactly once" in text or "ties go to the lowest" in text


def test_wrong_return_types_are_reported():
    # None is what an unsolved stub returns: one line that says what to do
    result, text = run(lambda evaluate, num_layers, num_heads, num_remove: None)
    assert not result.passed and "not solved yet" in text
    result, text = run(lambda evaluate, num_layers, num_heads, num_remove: 3)
    assert not result.passed and "list of (layer, head) pairs" in text
    result, text = run(lambda evaluate, num_layers, num_heads, num_remove: [])
    assert not result.passed and "heads removed" in text

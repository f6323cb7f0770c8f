"""mha_book.lm_heads: chapter 10's scores and names of the Shakespeare model's heads, and the
explorer of chapter 07 naming them the same way.

The rule on made-up scores (each branch, the thresholds' edges, bad input); the scores against
the chapter's own computation (its inputs rebuilt here from ``mha.head_scores``); and the
explorer's head labels for the Shakespeare sources: exactly the heads chapter 10 names (its
previous-token head in layer 0, its two induction heads in layer 1), every other head "mixed".
"""

import pytest
import torch

from mha import head_scores
from mha_book import lm_heads, sources
from mha_book.figures import explorer as webview
from mha_book.language_model import VOCAB, load_language_model


@pytest.fixture(scope="module")
def shipped():
    return load_language_model(with_info=True)


def test_the_rule_on_made_up_scores():
    previous = torch.tensor([[0.05, 0.09, 0.03, 0.47],   # one head far ahead of its layer
                             [0.05, 0.37, 0.38, 0.33],   # all look one back a little
                             [0.31, 0.10, 0.10, 0.10],   # just over both edges
                             [0.30, 0.01, 0.01, 0.01]])  # on the edge: not above 0.3
    induction = torch.tensor([[0.0, 0.0, 0.0, 0.0],
                              [0.72, 0.02, 0.31, 0.30],  # 0.30 is not above 0.3
                              [0.0, 0.0, 0.0, 0.0],
                              [0.0, 0.0, 0.0, 0.0]])
    assert lm_heads.head_names(previous, induction) == [
        ["mixed", "mixed", "mixed", "previous-token head"],
        ["induction head", "mixed", "induction head", "mixed"],
        ["previous-token head", "mixed", "mixed", "mixed"],
        ["mixed", "mixed", "mixed", "mixed"]]
    # more than 3 times every other head of the layer: 0.31 against 0.11 is not enough
    assert lm_heads.head_names([[0.31, 0.11]], [[0.0, 0.0]]) == [["mixed", "mixed"]]
    # an induction head that also looks one back is named for its induction
    assert lm_heads.head_names([[0.9, 0.0]], [[0.5, 0.0]]) == [["induction head", "mixed"]]
    # a layer of one head: nothing to be ahead of
    assert lm_heads.head_names([[0.5]], [[0.0]]) == [["previous-token head"]]


@pytest.mark.parametrize("previous, induction, words", [
    (torch.zeros(4), torch.zeros(4), r"shape \(layers, H\); got \(4,\) and \(4,\)"),
    (torch.zeros(2, 4), torch.zeros(2, 3), r"got \(2, 4\) and \(2, 3\)"),
])
def test_head_names_refuses_bad_shapes(previous, induction, words):
    with pytest.raises(ValueError, match=words):
        lm_heads.head_names(previous, induction)


def test_inputs_refuse_bad_input(shipped):
    lm, _ = shipped
    with pytest.raises(ValueError, match="at least one window of context_length = 256"):
        lm_heads.held_out_windows(lm, "To be, or not to be")
    with pytest.raises(ValueError, match="vocab must be a str with the letters a-z"):
        lm_heads.repeated_letters("ABC", 8)
    with pytest.raises(ValueError, match="26 lowercase letters in order"):
        lm_heads.repeated_letters("abc", 8)


def test_the_scores_are_chapter_10s(shipped):
    """Chapter 10's cell, rebuilt from ``mha.head_scores``: the first 32 windows of the held-out
    sample, 64 repeated blocks of random lowercase letters (seed 1)."""
    lm, info = shipped
    ids = lm.encode(info["validation_sample"])
    L, T = lm.context_length, info["repeat_len"]
    held_out = ids[: len(ids) // L * L].view(-1, L)[:32]
    repeated = head_scores.repeated_sequence(len(VOCAB), T, batch=64, seed=1,
                                             low=VOCAB.index("a"))
    assert torch.equal(lm_heads.held_out_windows(lm, info["validation_sample"])[:32], held_out)
    assert torch.equal(lm_heads.repeated_letters(VOCAB, T), repeated)
    previous = torch.stack([head_scores.previous_token_score(w)
                            for w in lm.attention(held_out)])
    induction = torch.stack([head_scores.induction_score(w, T)
                             for w in lm.attention(repeated)])
    got = lm_heads.shipped_scores(lm)
    torch.testing.assert_close(got[0], previous)
    torch.testing.assert_close(got[1], induction)


def test_the_explorer_names_the_heads_chapter_10_names(shipped):
    """The explorer's labels for the Shakespeare sources (the table's names and the heatmaps'
    titles of the page's data): chapter 10's previous-token head (the best of layer 0) and its
    induction heads (every head over 0.3 on induction, two, in layer 1), no other head named."""
    lm, _ = shipped
    previous, induction = lm_heads.shipped_scores(lm)
    # chapter 10's own choice (its cell): the best of layer 0, well ahead of the others ...
    best_prev = (0, int(previous[0].argmax()))
    others = previous[0][torch.arange(lm.num_heads) != best_prev[1]]
    assert previous[0].max() > 0.3 and previous[0].max() > 3 * others.max()
    # ... and every head over 0.3 where induction looks, in layer 1
    induction_heads = [divmod(int(i), lm.num_heads)
                       for i in (induction.flatten() > 0.3).nonzero().flatten()]
    assert len(induction_heads) == 2 and all(layer == 1 for layer, _ in induction_heads)
    expected = [["mixed"] * lm.num_heads for _ in range(lm.num_layers)]
    expected[best_prev[0]][best_prev[1]] = "previous-token head"
    for layer, head in induction_heads:
        expected[layer][head] = "induction head"
    data = webview.explorer_data([f"Shakespeare model: layer {n}"
                                  for n in range(lm.num_layers)])
    for n in range(lm.num_layers):
        source = f"Shakespeare model: layer {n}"
        assert sources.head_table(source)["names"] == expected[n], source
        assert data["sources"][source]["titles"] == [
            f"head {h}: {name}" for h, name in enumerate(expected[n])], source

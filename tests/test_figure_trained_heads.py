"""Chapter 08's live figure and the lines view compute what PyTorch computes (mha_book.figures.trained_heads)."""

import math
import re

import pytest
import torch

from mha.live.figure import lines
from mha_book.figures import trained_heads


def test_lines_data_checks_its_arguments():
    w = torch.softmax(torch.randn(2, 3, 4), -1)
    d = lines(w, list("abc"), list("wxyz"), titles=["h0", "h1"], head=1, focus=("key", 3),
              focus_from=("query", [None, 0, 2]))
    assert len(d["grids"]) == 2 and d["head"] == 1 and d["focus"] == ["key", 3]
    assert d["focus_from"] == {"knob": "query", "queries": [None, 0, 2]}
    torch.testing.assert_close(torch.tensor(d["grids"]), w, atol=1e-5, rtol=0)
    assert len(lines(w[0], list("abc"), list("wxyz"))["grids"]) == 1  # one head
    with pytest.raises(ValueError, match="query_labels and key_labels"):
        lines(w, list("ab"), list("wxyz"))
    with pytest.raises(ValueError, match="focus must be"):
        lines(w, list("abc"), list("wxyz"), focus=("query", 3))
    with pytest.raises(ValueError, match="head must be"):
        lines(w, list("abc"), list("wxyz"), head=2)
    with pytest.raises(ValueError, match="focus_from"):
        lines(w, list("abc"), list("wxyz"), focus_from=("query", [5]))


def test_recorded_weights_are_the_layers_softmax():
    """Layer 0's recorded weights equal softmax(q k^T / sqrt(d_head)) by hand from the model."""
    inputs, weights, _ = trained_heads.recorded()
    model = trained_heads._tiny.load_pretrained("multitask")
    layer = model.encoder.layers[0]
    attn = layer.self_attn
    with torch.no_grad():
        x = layer.res_attn.norm(model.encoder.embed(inputs[:4]))  # pre-LN: (B, L, D)
        B, L, _ = x.shape
        H, Dh = attn.num_heads, attn.d_head
        q = attn.W_q(x).view(B, L, H, Dh).transpose(1, 2)  # (B, H, L, Dh)
        k = attn.W_k(x).view(B, L, H, Dh).transpose(1, 2)
        ref = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(Dh), -1)
    torch.testing.assert_close(weights[0, :4], ref, atol=1e-5, rtol=1e-4)


def test_heads_are_named_as_chapter_08_names_them():
    names = trained_heads.head_names()
    assert len(names) == 8
    best = {p: max(names, key=lambda n: n[3] if n[2] == p else -1) for p in trained_heads.PATTERNS}
    assert best["previous"][0] == 0 and best["previous"][3] > 0.8
    assert best["induction"][0] == 1 and best["induction"][3] > 0.99
    assert sum(n[2] == "first" and n[3] > 0.95 for n in names) >= 4


def test_state_shows_the_weights_of_the_query_stepped_to():
    fig = trained_heads.trained_head_lines()
    assert len(fig.states) == 8 * 3 * 17
    _, weights, patterns = trained_heads.recorded()
    layer, h, pattern, _ = trained_heads.head_names()[1]
    s = fig.state(head=1, sequence=2, query=4)
    assert s["state"] == {"layer": layer, "head": h, "sequence": 2, "query": 4}
    torch.testing.assert_close(torch.tensor(s["views"]["lines"]["grids"][0]),
                               weights[layer, 2, h], atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.tensor(s["views"]["row"]["values"]),
                               weights[layer, 2, h, 4], atol=1e-5, rtol=0)
    assert s["views"]["row"]["highlight"] == patterns[pattern][2, 4].nonzero().flatten().tolist()
    top = int(weights[layer, 2, h, 4].argmax())
    assert f"on key {top} " in s["readout"]
    assert fig.state(head=1, sequence=2, query=trained_heads.ALL)["views"]["row"] is None
    # the step control: positions 0..15 are the queries 0..15, the last one every query
    query = fig.spec()["controls"][2]
    assert query["values"] == list(range(16)) + ["all"] and query["labels"][:2] == ["0", "1"]
    # the weights are stored once per head and sequence, whatever the query
    spec = fig.spec()
    stored = [d for d in spec["pool"] if d and "grids" in d]
    assert len(stored) == 8 * 3
    assert stored[0]["focus_from"]["queries"] == list(range(16)) + [None]


def test_heads_are_named_by_chapter_07s_rule():
    """One rule for both chapters: mha_book.sources.head_table's (best pattern above 0.8 and at
    least 0.1 ahead of the next, else "mixed"); layer 1 head 3 scores 0.51 on induction and is
    "mixed" in both, its best pattern still named in the title."""
    from mha_book.sources import NAME_MARGIN, NAME_MIN, head_table

    fig = trained_heads.trained_head_lines()
    labels = fig.spec()["controls"][0]["labels"]
    for k, (layer, h, pattern, score) in enumerate(trained_heads.head_names()):
        table = head_table(f"letters model: layer {layer}")
        role = table["names"][h]
        assert trained_heads.head_role(k) == role and labels[k] == f"L{layer} H{h}: {role}"
        row = sorted(table["rows"][h][1:], reverse=True)
        assert (role == "mixed") == (not (row[0] > NAME_MIN and row[0] - row[1] >= NAME_MARGIN))
        caption = fig.state(head=k)["views"]["lines"]["caption"]
        assert caption.startswith(f"layer {layer}, head {h} ({role}; best pattern: "
                                  f"{pattern} {score:.2f})")
    k = [(layer, h) for layer, h, _, _ in trained_heads.head_names()].index((1, 3))
    assert trained_heads.head_role(k) == "mixed" and "induction head" not in labels[k]
    assert [trained_heads.head_role(k) for k in range(8)].count("induction head") == 1


def test_a_query_with_no_previous_token_says_so():
    names = trained_heads.head_names()
    prev = max(range(8), key=lambda k: names[k][3] if names[k][2] == "previous" else -1)
    s = trained_heads.trained_head_lines().state(head=prev, sequence=0, query=0)
    assert "the previous-token pattern points nowhere for this query" in s["readout"]
    assert s["views"]["row"]["highlight"] == []


def test_readouts_name_patterns_plainly_and_count_keys():
    """"the first pattern" read as "the first of the patterns": a pattern is named by what it
    points at; a query whose pattern points at several keys says "keys"."""
    fig = trained_heads.trained_head_lines()
    for state in fig.states.values():
        text = state["readout"]
        assert not re.search(r"the (previous|first|next|same token) pattern", text), text
        found = re.search(r"points at (keys?) ([^;]+);", text)
        if found:
            many = found.group(2).count(",") > 0
            assert found.group(1) == ("keys" if many else "key"), text


def test_the_bars_promise_an_accent_bar_only_where_one_is_drawn():
    """At query 0 the previous-token pattern points nowhere: the caption says so, and promises
    no accent bar (a learner looked for one)."""
    fig = trained_heads.trained_head_lines()
    for state in fig.states.values():
        row = state["views"]["row"]
        if row is None:
            continue
        assert ("accent" in row["caption"]) == bool(row["highlight"]), row["caption"]
        if not row["highlight"]:
            assert "key for this query" in row["caption"], row["caption"]


def test_no_weight_is_stored_as_0():
    """A softmax weight is never 0, and the prose says the bars never write 0: even a weight
    below the five decimals the page stores keeps one significant digit (7e-06)."""
    fig = trained_heads.trained_head_lines()
    for state in fig.states.values():
        row = state["views"]["row"]
        if row is not None:
            assert min(row["values"]) > 0, state["readout"]

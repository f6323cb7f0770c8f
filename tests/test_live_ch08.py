"""Chapter 08's live figure and the lines view compute what PyTorch computes (mha.live.ch08)."""

import math

import pytest
import torch

from mha.live import ch08
from mha.live.figure import lines


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
    inputs, weights, _ = ch08.recorded()
    model = ch08._tiny.load_pretrained("multitask")
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
    names = ch08.head_names()
    assert len(names) == 8
    best = {p: max(names, key=lambda n: n[3] if n[2] == p else -1) for p in ch08.PATTERNS}
    assert best["previous"][0] == 0 and best["previous"][3] > 0.8
    assert best["induction"][0] == 1 and best["induction"][3] > 0.99
    assert sum(n[2] == "first" and n[3] > 0.95 for n in names) >= 4


def test_state_shows_the_weights_of_the_query_stepped_to():
    fig = ch08.trained_head_lines()
    assert len(fig.states) == 8 * 3 * 17
    _, weights, patterns = ch08.recorded()
    layer, h, pattern, _ = ch08.head_names()[1]
    s = fig.state(head=1, sequence=2, query=5)  # query 4
    assert s["state"] == {"layer": layer, "head": h, "sequence": 2, "query": 4}
    torch.testing.assert_close(torch.tensor(s["views"]["lines"]["grids"][0]),
                               weights[layer, 2, h], atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.tensor(s["views"]["row"]["values"]),
                               weights[layer, 2, h, 4], atol=1e-5, rtol=0)
    assert s["views"]["row"]["highlight"] == patterns[pattern][2, 4].nonzero().flatten().tolist()
    top = int(weights[layer, 2, h, 4].argmax())
    assert f"on key {top} " in s["readout"]
    assert fig.state(head=1, sequence=2, query=0)["views"]["row"] is None
    # the weights are stored once per head and sequence, whatever the query
    spec = fig.spec()
    stored = [d for d in spec["pool"] if d and "grids" in d]
    assert len(stored) == 8 * 3
    assert stored[0]["focus_from"]["queries"] == [None] + list(range(16))

"""Chapter 13's live figure computes what the package and PyTorch compute (mha_book.figures.online_softmax)."""

import math
import re

import torch
import torch.nn.functional as F

from mha_book.figures import blockwise_softmax


def by_hand(block_size, blocks):
    """The online softmax in plain Python over the first ``blocks`` blocks: m, l, acc."""
    _, _, v, s = blockwise_softmax.problem()
    m, ell, acc = -math.inf, 0.0, 0.0
    for j in range(min(blockwise_softmax.N_KEYS, blocks * block_size)):
        x, new_m = float(s[0, j]), max(m, float(s[0, j]))
        ell = ell * math.exp(m - new_m) + math.exp(x - new_m)
        acc = acc * math.exp(m - new_m) + math.exp(x - new_m) * float(v[j, 0])
        m = new_m
    return m, ell, acc


def test_every_block_size_ends_at_the_full_softmax():
    q, k, v, s = blockwise_softmax.problem()
    full = float(F.scaled_dot_product_attention(q[None], k[None], v[None])[0, 0, 0])
    fig = blockwise_softmax.online_softmax()
    assert len(fig.states) == len(blockwise_softmax.BLOCK_SIZES) * blockwise_softmax.N_KEYS
    for bs in blockwise_softmax.BLOCK_SIZES:
        n = blockwise_softmax.N_KEYS // bs
        last = fig.state(block_size=bs, block=n - 1)["state"]
        assert last["done"] and math.isclose(last["output"], full, abs_tol=1e-5)
        assert math.isclose(last["blockwise"], full, abs_tol=1e-5)
        assert math.isclose(last["full"], full, abs_tol=1e-6)
        # past the last block the figure shows the last state
        assert fig.state(block_size=bs, block=blockwise_softmax.N_KEYS - 1)["state"]["block"] == n - 1
        weights = fig.state(block_size=bs, block=n - 1)["views"]["weights"]["values"]
        torch.testing.assert_close(torch.tensor(weights), torch.softmax(s[0], -1), atol=1e-5,
                                   rtol=0)


def test_each_step_is_the_online_softmax_by_hand():
    fig = blockwise_softmax.online_softmax()
    for bs in blockwise_softmax.BLOCK_SIZES:
        for b in range(blockwise_softmax.N_KEYS // bs):
            st = fig.state(block_size=bs, block=b)
            m, ell, acc = by_hand(bs, b + 1)
            rows = dict((r[0], r[1]) for r in st["views"]["numbers"]["rows"])
            assert math.isclose(float(rows["running max m"]), m, abs_tol=1e-4)
            assert math.isclose(float(rows["running sum \u2113"]), ell, abs_tol=1e-4)
            assert math.isclose(st["state"]["output"], acc / ell, abs_tol=1e-5)
            maxes = st["views"]["running"]["series"][0]["y"]
            assert math.isclose(maxes[b], m, abs_tol=1e-4)
            assert st["views"]["weights"]["highlight"] == list(range(b * bs, (b + 1) * bs))


def test_the_maximum_rises_in_later_blocks():
    """The draw is chosen so that the rescale happens: the maximum rises at every block of 3."""
    maxes = [float(st[0]) for st in blockwise_softmax.fold(3)]
    assert all(b > a for a, b in zip(maxes, maxes[1:]))
    assert "multiplied by" in blockwise_softmax.online_softmax().state(block_size=3, block=1)["readout"]


def test_keys_not_yet_folded_in_have_no_weight_and_say_so():
    """Keys the online softmax has not reached were drawn as "0", which reads as zero weight:
    they have no value (None) and the bars write "not yet"."""
    fig = blockwise_softmax.online_softmax()
    for bs in blockwise_softmax.BLOCK_SIZES:
        for b in range(blockwise_softmax.N_KEYS // bs):
            bars = fig.state(block_size=bs, block=b)["views"]["weights"]
            seen = (b + 1) * bs
            assert bars["null_label"] == "not yet"
            assert all(v is None for v in bars["values"][seen:])
            assert all(v is not None and v > 0 for v in bars["values"][:seen])


def test_readouts_are_grammatical_at_every_setting():
    for state in blockwise_softmax.online_softmax().states.values():
        text = state["readout"] + " " + state["views"]["weights"]["caption"]
        assert not re.search(r"\b1 (blocks|keys)\b|All [12]\b|keys (\d+)\.\.\1\b", text), text
    s = blockwise_softmax.online_softmax().state(block_size=12, block=0)["readout"]
    assert "The one block is folded in" in s
    s = blockwise_softmax.online_softmax().state(block_size=6, block=1)["readout"]
    assert "Both blocks are folded in" in s
    s = blockwise_softmax.online_softmax().state(block_size=1, block=10)["readout"]
    assert ": key 10;" in s and "Still to come: 1 key;" in s


def test_the_block_slider_follows_the_block_size():
    """Each state limits the block slider to its block size's blocks (0..n-1) and sends it back
    to block 0 when the block size changes, so every block size starts at its first block."""
    fig = blockwise_softmax.online_softmax()
    for bs in blockwise_softmax.BLOCK_SIZES:
        for b in range(blockwise_softmax.N_KEYS):
            limits = fig.state(block_size=bs, block=b)["limits"]
            assert limits == {"block": {"max": blockwise_softmax.N_KEYS // bs - 1, "reset": "block_size"}}


def test_the_first_block_has_no_rescale_and_the_readout_writes_ell():
    fig = blockwise_softmax.online_softmax()
    for bs in blockwise_softmax.BLOCK_SIZES:
        first = dict((r[0], r[1]) for r in fig.state(block_size=bs, block=0)["views"]["numbers"]
                     ["rows"])
        assert first["rescale exp(m_old \u2212 m)"] == blockwise_softmax.FIRST_RESCALE == "\u2014"
        assert "m_old = \u2212\u221e" in fig.state(block_size=bs, block=0)["readout"]
        if blockwise_softmax.N_KEYS // bs > 1:
            second = dict((r[0], r[1]) for r in fig.state(block_size=bs, block=1)["views"]
                          ["numbers"]["rows"])
            assert re.fullmatch(r"\d\.\d{4}", second["rescale exp(m_old \u2212 m)"])
        for b in range(blockwise_softmax.N_KEYS // bs):
            text = fig.state(block_size=bs, block=b)["readout"]
            assert "\u2113 = " in text and " l = " not in text and "acc / l " not in text


def test_the_running_lines_stop_at_the_current_block():
    """At block 1 the plots drew the whole future path while the bars said "not yet": the
    running max, sum and output are drawn up to the current block only (None beyond it); the
    full softmax's output, the target, is drawn across; the axes stay the same at every
    block."""
    fig = blockwise_softmax.online_softmax()
    for bs in blockwise_softmax.BLOCK_SIZES:
        n = blockwise_softmax.N_KEYS // bs
        axes = set()
        for b in range(n):
            st = fig.state(block_size=bs, block=b)
            running, output = st["views"]["running"], st["views"]["output"]
            for series in running["series"] + output["series"][:1]:
                assert all(v is not None for v in series["y"][:b + 1]), (bs, b)
                assert all(v is None for v in series["y"][b + 1:]), (bs, b)
            assert all(v is not None for v in output["series"][1]["y"])
            assert running["marker"] == output["marker"] == b
            assert output["marker_series"] == [0]  # the running output, not the target
            axes.add((running["y_min"], running["y_max"], output["y_min"], output["y_max"]))
        assert len(axes) == 1, bs

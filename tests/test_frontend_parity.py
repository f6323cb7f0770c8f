"""The page's JavaScript and the package's Python on the same inputs: the ES modules
(mha/static/src/, mha_book/static/src/) imported in Node.js, their results compared with
Python's. (The explorer's compute and the Shakespeare model's forward pass have theirs in
test_explorer_export.py and test_live_text.py.) Skipped without Node.js, except in CI."""

import importlib
import random

import pytest
from node_js import BOOK, LIB, run_modules

from mha.live.views import fill
from mha_book import explore
from mha_book.figures import explorer as webview

batched = importlib.import_module("mha_book.figures.batched_heads")


def page_fill(tmp_path, cases):
    body = "emit(data.map(([t, v]) => format.fill(t, v)));"
    return run_modules(tmp_path, {"format": LIB / "format.js"}, body, data=cases)


def test_fill_writes_what_python_writes(tmp_path):
    """Every caption template of the explorer with the values a page can give it (the
    temperature slider's stops, the sink's options, shares of the weight, head counts): the
    page's fill and Python's give the same text."""
    rng = random.Random(0)
    P = webview.CAPTIONS
    cases = []
    for T in webview.temperature_grid():
        cases.append((P["random"], {"heads": "8 heads", "kv": "", "L": 12, "d_model": 64, "T": T,
                                    "mask": "causal", "window": "", "seed": "3", "sink": ""}))
        cases.append((P["trained"], {"source": "letters model: layer 1",
                                     "sample": "input sample 2", "lengths": "L = 9", "T": T,
                                     "window": ", causal window 4", "sink": ""}))
    for s in explore.knob_options("sink", None):
        if s is not None:
            kept = rng.random()
            cases.append((P["sink"], {"s": float(s), "kept": kept, "lost": 1 - kept}))
    for n in (1, 2, 16):
        cases.append((P["kv"], {"n": n, "s": "" if n == 1 else "s"}))
    cases += [(P["passage"], {"name": "Twelfth Night: the Duke", "seed": "1"}),
              (P["lengths"], {"Lq": 7, "Lk": 9}), (P["head_kv"], {"h": 5, "g": 2}),
              ("{n:,} FLOPs, {x:g}, {y:.3f}", {"n": 1234567, "x": 0.25, "y": 2 / 3})]
    got = page_fill(tmp_path, cases)
    assert got == [fill(t, **v) for t, v in cases]
    assert fill(P["random"], **cases[0][1]).endswith("T = 0.05, mask: causal, seed 3")


def test_fill_refuses_what_the_page_cannot_write():
    with pytest.raises(ValueError, match="not one of the forms"):
        fill("{x:.2e}", x=1.0)
    with pytest.raises(TypeError, match="is a float; give it a spec"):
        fill("T = {T}", T=1.0)
    with pytest.raises(KeyError, match="no value for 'T'"):
        fill("T = {T:.2f}")


def test_the_explorers_caption_in_python_says_T_as_the_page_does():
    """It said "T = 1" where the page said "T = 1.00": one template now."""
    result = explore.explore_once(temperature=1.0)
    assert ", T = 1.00, " in webview._title(result.config, result.weights)
    assert webview.temperature_labels([1.0]) == ["1.00"]  # as the slider writes it


@pytest.mark.parametrize("settings", [
    [{"num_heads": 8, "token": 2, "feature": 209, "wrong": False},
     {"num_heads": 1, "token": 0, "feature": 0, "wrong": False},
     {"num_heads": 4, "token": 8, "feature": 511, "wrong": True},
     {"num_heads": 16, "token": 5, "feature": 100, "wrong": True},
     {"num_heads": 2, "token": 3, "feature": 300, "wrong": True}],
])
def test_split_heads_in_the_page_is_split_state(tmp_path, settings):
    """Chapter 05's split-heads compute (split_heads.js) on the exported tensors equals
    batched_heads.split_state, the same picture computed with split_heads and merge_heads:
    every panel's heads, where the number goes, the readout and the state."""
    body = "emit(data.settings.map((v) => split.splitHeads(v, data.data, null, {})));"
    got = run_modules(tmp_path, {"split": BOOK / "split_heads.js"}, body,
                      data={"settings": settings, "data": batched._export()})
    for v, page in zip(settings, got):
        want = batched.split_state(**v)
        assert page["readout"] == want["readout"], v
        assert page["state"] == want["state"], v
        assert page["views"] == _json(want["views"]), v


def _json(x):
    """What JSON makes of x (tuples become lists)."""
    import json

    return json.loads(json.dumps(x))


def test_the_pages_round_is_the_packages_rounding(tmp_path):
    """format.js's round (the numbers a canvas records in data-values, which the browser tests
    compare with Python's to 1e-3) is Python's round to 6 decimals, give or take a tie (the
    page rounds half up, Python half to even)."""
    rng = random.Random(1)
    xs = [rng.uniform(-3, 3) for _ in range(500)] + [0.0, 1.0, 1e-7, 0.1234565]
    got = run_modules(tmp_path, {"format": LIB / "format.js"},
                      "emit(data.map(format.round));", data=xs)
    assert all(abs(g - round(x, 6)) <= 1e-6 + 1e-12 and abs(g - x) <= 5e-7 + 1e-12
               for g, x in zip(got, xs))
    assert sum(g == round(x, 6) for g, x in zip(got, xs)) >= 0.99 * len(xs)

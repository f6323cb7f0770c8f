"""mha.live.figure: a figure lists every state of its controls, stores each picture once, and
refuses bad declarations with a message naming what is wrong."""

import json

import pytest
import torch

from mha.live import figure as F


def tiny(**kw):
    def state(n, flip):
        w = torch.softmax(torch.arange(n, dtype=torch.float32) * (-1 if flip else 1), -1)
        return {"views": {"w": F.bars(w, range(n)), "same": F.table(["a"], [["x", 1]])},
                "readout": f"n = {n}, flip {flip}"}

    return F.Figure(name="tiny", title="Tiny", controls=[F.slider("n", "n", [2, 3, 4], 3),
                                                         F.toggle("flip", "flip")],
                    views=[F.View("w", "bars"), F.View("same", "table")], state_fn=state, **kw)


def test_every_state_is_listed_and_looked_up():
    fig = tiny()
    assert len(fig.states) == 3 * 2
    s = fig.state(n=4, flip=True)
    assert s["readout"] == "n = 4, flip True"
    want = torch.softmax(-torch.arange(4.0), -1)
    torch.testing.assert_close(torch.tensor(s["views"]["w"]["values"]), want, atol=1e-5, rtol=0)


def test_spec_stores_each_picture_once_and_is_json():
    spec = tiny().spec()
    json.dumps(spec, allow_nan=False)
    assert len(spec["pool"]) == 6 + 1  # six different bar charts, one table shared by all
    assert spec["controls"][0]["value"] == 1 and spec["controls"][1]["labels"] == ["off", "on"]
    assert all(isinstance(i, int) for s in spec["states"].values() for i in s["views"].values())


def test_html_carries_spec_and_script_once():
    text = tiny().html()
    assert text.count('<script type="application/json" class="mha-spec">') == 1
    assert text.count("window.mhaLive = ") == 1
    assert "</script" not in text.split('class="mha-spec">')[1].split("</script>")[0]


def test_nan_and_infinity_travel_as_null():
    assert F._numbers([1.0, float("nan"), float("-inf"), 0.1234567]) == [1.0, None, None,
                                                                          0.12346]


@pytest.mark.parametrize("make, words", [
    (lambda: F.slider("a", "a", [1, 2], 3), "value must be one of [1, 2]; got 3"),
    (lambda: F.select("a", "a", [], None), "values must not be empty"),
    (lambda: F.Control("a", "a", "knob", [1], 1), "kind must be one of"),
    (lambda: F.slider("a", "a", [1, 2], 1, labels=["x"]), "labels has 1 entries"),
    (lambda: F.View("v", "pie"), "kind must be one of"),
])
def test_bad_declarations_are_named(make, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        make()


def test_a_state_missing_a_view_is_refused():
    with pytest.raises(ValueError, match="lacks the views"):
        F.Figure(name="x", title="x", controls=[F.toggle("t", "t")],
                 views=[F.View("w", "bars")], state_fn=lambda t: {"views": {}})


def test_unknown_control_in_lookup():
    with pytest.raises(TypeError, match="unknown controls"):
        tiny().state(m=1)

"""The modern layers' live figures in Chromium (mha_book.figures.modern_layers): the cache per token, and a window and a sink on a head.

Without a build: each figure alone in a blank page; the query-head, kv-head and window selects
and the latent-rank slider, and the head select and the window and sink sliders, change the
picture from the keyboard; the bars drawn equal ``mha.configs.kv_cache_bytes`` and
``latent_cache_bytes`` per token (KiB), the plot one sequence's cache against the context
(MiB), the weights drawn ``mha.modern.sink_attention`` of the head's queries and keys with the
window's mask (the model's own weights, recorded, with the full window and no sink), to 1e-3,
and the readouts the package's numbers; more kv heads than query heads snap back to the query
heads; also after a tap on a phone. On the built book: the same on the page that holds them,
offline. (axe, a phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

from functools import lru_cache

import pytest
from live_figures import (
    DRAW_MS,
    drawn,
    label,
    offline,
    page_with,
    press,
    readout,
    root_of,
    same,
    show,
    tap,
    timing,
    values,
    wait_drawn,
)

from mha.configs import kv_cache_bytes, latent_cache_bytes
from mha_book.figures import modern_layers

pytestmark = pytest.mark.browser



@lru_cache(maxsize=1)
def cache_figure():
    return modern_layers.kv_bytes()


@pytest.fixture(scope="module")
def recorded():
    """Layer 1's weights (H, L, L) on the figure's line as the model computes them
    (``mha.record_attention``; tests/test_figure_modern_layers.py checks this against its own recording)."""
    return modern_layers.head_problem()[3]


# ----------------------------------------------------------------------------- kv-bytes

def check_bytes(root):
    v = values(root)  # the controls' values as drawn (kv_heads after the snap back)
    h, kv, rank, window = v["num_heads"], v["kv_heads"], v["kv_rank"], v["window"]
    assert kv <= h and h % kv == 0, v
    kib = [kv_cache_bytes(61, h, 128) / 2**10, kv_cache_bytes(61, kv, 128) / 2**10,
           kv_cache_bytes(61, 1, 128) / 2**10, latent_cache_bytes(61, rank, 64) / 2**10]
    assert same(drawn(root, "sizes"), kib), v
    mib = [[kv_cache_bytes(61, h, 128, n) / 2**20 for n in modern_layers.CONTEXTS],
           [kv_cache_bytes(61, kv, 128, n) / 2**20 for n in modern_layers.CONTEXTS],
           [latent_cache_bytes(61, rank, 64, n) / 2**20 for n in modern_layers.CONTEXTS]]
    if window != "off":  # every layer windowed: flat from the window on
        mib.append([kv_cache_bytes(61, kv, 128, min(n, window)) / 2**20 for n in modern_layers.CONTEXTS])
    assert same(drawn(root, "growth"), mib), v
    assert "Both axes on a log scale" in label(root, "growth")
    text = readout(root)
    assert text == cache_figure().state(**v)["readout"]
    assert f"{kv_cache_bytes(61, kv, 128):,} bytes" in text
    assert f"{latent_cache_bytes(61, rank, 64):,} bytes" in text and "cannot" not in text
    knob = root.locator('[data-knob="kv_heads"]')
    assert int(knob.input_value()) == modern_layers.KV_HEADS.index(kv)
    return v


def move_bytes(page, root):
    times = []
    for knob, key in (("kv_heads", "ArrowDown"), ("kv_rank", "ArrowLeft"),
                      ("window", "ArrowDown"), ("num_heads", "ArrowUp"),
                      ("num_heads", "Home"), ("window", "End"), ("kv_rank", "End"),
                      ("num_heads", "End")):
        before = drawn(root, "sizes") + drawn(root, "growth")
        times.append(press(page, root, knob, key))
        assert drawn(root, "sizes") + drawn(root, "growth") != before, f"{knob} {key}"
        v = check_bytes(root)
        if (knob, key) == ("num_heads", "Home"):  # 8 query heads: the 16 kv heads snap to 8
            assert v["num_heads"] == 8 and v["kv_heads"] == 8, v
    return times


def test_kv_bytes_draws_the_packages_bytes(page):
    root = show(page, modern_layers.kv_bytes())
    v = check_bytes(root)
    assert v == {"num_heads": 128, "kv_heads": 8, "kv_rank": 512, "window": "off"}
    assert drawn(root, "sizes") == [3904, 244, 30.5, 68.625]  # KiB per token
    text = readout(root)
    assert "3,997,696 bytes, 56.9x the latent cache" in text and "70,272 bytes" in text
    times = move_bytes(page, root)
    print(f"\nchapter 14 kv bytes, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors


def test_more_kv_heads_than_query_heads_snap_back(page):
    """8 query heads: choosing 128 kv heads (a click, then the keyboard's End) draws 8, the
    select shows 8, and the readout is that of 8, with no error."""
    root = show(page, modern_layers.kv_bytes(num_heads=8, kv_heads=4))
    knob = root.locator('[data-knob="kv_heads"]')
    before = root.get_attribute("data-draws")
    knob.select_option(str(modern_layers.KV_HEADS.index(128)))
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)
    assert check_bytes(root)["kv_heads"] == 8 and knob.input_value() == "3"
    press(page, root, "kv_heads", "Home")
    assert check_bytes(root)["kv_heads"] == 1
    press(page, root, "kv_heads", "End")
    assert check_bytes(root)["kv_heads"] == 8
    assert not page.errors, page.errors


# ----------------------------------------------------------------------------- window-sink

def check_sink(root, recorded):
    v = values(root)
    head, window, sink = v["head"], v["window"], v["sink"]
    w, on_sink = modern_layers.sink_weights(head, window, sink)
    assert same(drawn(root, "weights"), [w.tolist()]), v
    if (window, sink) == ("full", "off"):  # the model's own weights
        assert same(drawn(root, "weights"), [recorded[head].tolist()]), v
    nl = [i for i, ch in enumerate(modern_layers.TEXT) if ch == "\n"]
    breaks = w[:, nl].sum(-1)
    trained = modern_layers.sink_weights(head, "full", "off")[0][:, nl].sum(-1)
    # no sink: zeros on the sink; the line as trained only where it differs from the first
    lines = [breaks.tolist(), on_sink.tolist()]
    if (window, sink) != ("full", "off"):
        lines.append(trained.tolist())
    assert same(drawn(root, "shares"), lines), v
    text = readout(root)
    assert f"on average {100 * float(breaks.mean()):.1f}% of its weight on the line break" \
        in text, text
    if sink == "off":
        assert "every row sums to 1" in text
    else:
        assert f"{100 * float(on_sink.mean()):.1f}% on the sink" in text
        assert f"a row sums to {1 - float(on_sink.mean()):.3f}" in text
    assert "\u21b5" in label(root, "weights")  # the line break, said to a screen reader
    return v


def move_sink(page, root, recorded):
    times = []
    for knob, key in (("window", "ArrowRight"), ("sink", "ArrowRight"), ("sink", "End"),
                      ("head", "ArrowDown"), ("window", "End"), ("head", "End"),
                      ("sink", "Home"), ("window", "Home")):
        before = drawn(root, "weights") + drawn(root, "shares")
        times.append(press(page, root, knob, key))
        assert drawn(root, "weights") + drawn(root, "shares") != before, f"{knob} {key}"
        check_sink(root, recorded)
    return times


def test_window_sink_draws_sink_attention(page, recorded):
    root = show(page, modern_layers.window_sink())
    v = check_sink(root, recorded)
    assert (v["head"], v["window"], v["sink"]) == (0, "full", "off")
    assert label(root, "weights").count("\u21b5") >= 2  # a row label and a column label
    times = move_sink(page, root, recorded)
    assert values(root)["head"] == modern_layers.HEADS[-1]
    print(f"\nchapter 14 window and sink, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors



# ----------------------------------------------------------------------------- both

def test_a_tap_on_a_phone_draws_the_packages_numbers(phone_page, recorded):
    """On a 390 x 844 touch phone, a tap in the middle of the latent-rank and the sink sliders: a
    new value, and the numbers drawn are still the package's (a tap on every control, and the
    width, for every figure: test_every_figure.py)."""
    root = show(phone_page, modern_layers.kv_bytes())
    tap(phone_page, root, root.locator('[data-knob="kv_rank"]'))
    assert values(root)["kv_rank"] != 512
    check_bytes(root)
    root = show(phone_page, modern_layers.window_sink())
    tap(phone_page, root, root.locator('[data-knob="sink"]'))
    assert values(root)["sink"] != "off"
    check_sink(root, recorded)


def test_both_figures_live_in_the_built_book(page, book_url, recorded):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    outside = offline(page, book_url)  # nothing may come from outside the book
    response = page.goto(f"{book_url}/{page_with('kv-bytes')}", wait_until="load")
    assert response is not None and response.ok, "the page is missing from the built book"
    cache, sink = root_of(page, "kv-bytes"), root_of(page, "window-sink")
    for root in (cache, sink):
        wait_drawn(page, root)
    cache.scroll_into_view_if_needed()
    check_bytes(cache)
    times = move_bytes(page, cache)
    sink.scroll_into_view_if_needed()
    check_sink(sink, recorded)
    assert values(sink)["window"] == "full"
    assert drawn(sink, "weights")[0][0] == [1] + [0] * (len(modern_layers.TEXT) - 1)  # query 0: itself
    times += move_sink(page, sink, recorded)
    print(f"\nchapter 14 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside

"""The KV cache's live figures in Chromium (mha_book.figures.kv_cache): decoding with a KV cache, and the cache's size.

Without a build: each figure alone in a blank page; the step control (slider keys and the "next"
button), the layer picker, the model, attention and context controls each change the picture
from the keyboard, and the numbers drawn equal the package's (the new query's weights equal row t
of a full teacher-forced pass, the sizes equal ``mha.configs.kv_cache_bytes``, in MiB) to 1e-3,
and the context slider stops at each model's own context, also after a tap on a phone. On the
built book: the same on the page that holds them.
(axe, a phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch
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

from mha import record_attention
from mha.configs import MODELS, kv_cache_bytes
from mha_book import tasks, tiny
from mha_book.figures import kv_cache

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def full_weights():
    """The decoder's self-attention weights (H, L, L) per layer, all 12 positions at once."""
    run = kv_cache.decode_run()
    model = tiny.load_pretrained("translation")
    sentence = tasks.make_task("translation").sample(1, seed=kv_cache.SEED)
    with torch.no_grad(), record_attention(model) as rec:
        model(sentence.inputs, run["ids"][:, :-1])
    return {n: rec[f"decoder.layers.{n}.self_attn"][0] for n in kv_cache.LAYERS}


def check_decode(root, full_weights):
    v = values(root)
    t, layer = v["step"], v["layer"]
    want = full_weights[layer][:, t, :t + 1].tolist()  # (H, t + 1): query t over keys 0..t
    assert same(drawn(root, "weights"), [want]), v
    assert f"read {t + 1} cached key" in readout(root)
    return v


def check_size(root):
    v = values(root)
    c = MODELS[v["model"]]
    want = [kv_cache_bytes(c.num_layers, kv, c.d_head, v["context"]) / 2**20 if kv else None
            for kv in (c.num_heads, 8 if c.num_heads % 8 == 0 else None, 1)]  # MiB
    assert same(drawn(root, "sizes"), want), v
    # the slider offers this model's contexts only, up to the one the chapter's table gives
    slider = root.locator('[data-knob="context"]')
    assert int(slider.get_attribute("max")) == kv_cache.CONTEXTS.index(c.context), v
    assert v["context"] <= c.context
    # the growth plot: both axes on a log scale, the package's numbers (a straight line of
    # slope 1 for a cache in proportion to the context)
    growth = kv_cache.size_state(v["model"], v["kind"], v["context"])["views"]["growth"]
    assert same(drawn(root, "growth"), [series["y"] for series in growth["series"]]), v
    assert "Both axes on a log scale" in label(root, "growth")
    return v


def move_decode(page, root, full_weights):
    times = []
    for knob, key in (("step", "ArrowRight"), ("step", "ArrowRight"), ("layer", "ArrowDown"),
                      ("step", "End"), ("layer", "ArrowUp"), ("step", "Home")):
        before = drawn(root, "weights")
        times.append(press(page, root, knob, key))
        assert drawn(root, "weights") != before, f"{knob} {key}: the picture did not change"
        check_decode(root, full_weights)
    # the "next token" button: one more column, the cache one position longer
    step = values(root)["step"]
    root.get_by_role("button", name="next token (step): next step").click()
    page.wait_for_function("([el, n]) => JSON.parse(el.dataset.state).step === n",
                           arg=[root.element_handle(), step + 1], timeout=5_000)
    check_decode(root, full_weights)
    return times


def move_size(page, root):
    times = []
    for knob, key in (("kind", "ArrowUp"), ("context", "ArrowLeft"), ("model", "Home"),
                      ("context", "Home"), ("kind", "ArrowDown"), ("context", "End"),
                      ("model", "End")):
        # the kind changes which bar and line are the chosen one (the bars show every kind,
        # and each line its growth: the same numbers), the rest the numbers themselves
        def picture():
            return [drawn(root, "sizes"), drawn(root, "growth"), label(root, "sizes"),
                    label(root, "growth")]
        before = picture()
        times.append(press(page, root, knob, key))
        assert picture() != before, f"{knob} {key}"
        check_size(root)
    return times


def test_decode_steps_draws_what_the_package_computes(page, full_weights):
    root = show(page, kv_cache.decode_steps())
    assert check_decode(root, full_weights) == {"step": 0, "layer": 0}
    times = move_decode(page, root, full_weights)
    print(f"\nchapter 11 decoding steps, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-6:])}")


def test_kv_cache_size_draws_kv_cache_bytes(page):
    root = show(page, kv_cache.kv_cache_size())
    v = check_size(root)
    assert v["mib"] == 1280 and drawn(root, "sizes")[:2] == [10240, 1280]  # the chapter's 70B
    times = move_size(page, root)
    # Falcon-7B's 71 heads: no GQA bar, and the readout says why
    root.locator('[data-knob="model"]').select_option(str(list(MODELS).index("Falcon-7B")))
    root.locator('[data-knob="kind"]').select_option("1")
    check_size(root)
    assert drawn(root, "sizes")[1] is None and "cannot" in readout(root)
    print(f"\nchapter 11 cache size, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")


def test_the_context_slider_stops_at_each_models_context(page):
    """Mistral 7B at the end of its slider (8,192), then GPT-3 175B: the slider's end moves to
    2,048 and the value with it; back to Mistral, the end is 8,192 again. Choosing a model moves
    the slider to that model's own context, so the bars show the chapter table's number (Llama 2
    7B: 2 GiB at 4,096 tokens, not 1 GiB at the 2,048 the slider was left at)."""
    root = show(page, kv_cache.kv_cache_size(model="Mistral 7B", context=8192))
    assert values(root)["built_mib"] == 512  # the sliding window: 4,096 positions kept
    model = root.locator('[data-knob="model"]')
    model.select_option(str(list(MODELS).index("GPT-3 175B")))
    page.wait_for_function("el => JSON.parse(el.dataset.state).model === 'GPT-3 175B'",
                           arg=root.element_handle(), timeout=5_000)
    assert check_size(root)["context"] == 2048
    press(page, root, "context", "Home")
    assert check_size(root)["context"] == 512
    model.select_option(str(list(MODELS).index("Mistral 7B")))
    page.wait_for_function("el => JSON.parse(el.dataset.state).model === 'Mistral 7B'",
                           arg=root.element_handle(), timeout=5_000)
    assert check_size(root)["context"] == 8192  # the model chosen: its own context
    press(page, root, "context", "Home")
    press(page, root, "context", "ArrowRight")
    press(page, root, "context", "ArrowRight")
    assert check_size(root)["context"] == 2048
    model.select_option(str(list(MODELS).index("Llama 2 7B")))
    page.wait_for_function("el => JSON.parse(el.dataset.state).model === 'Llama 2 7B'",
                           arg=root.element_handle(), timeout=5_000)
    now = check_size(root)
    assert now["context"] == 4096 and now["built_mib"] == 2048  # the table's 2 GiB
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_what_the_package_computes(phone_page, full_weights):
    """On a 390 x 844 touch phone, a tap on the "previous" button and one on the context slider:
    the numbers drawn are still the package's (a tap on every control, and the width, for every
    figure: test_every_figure.py)."""
    root = show(phone_page, kv_cache.decode_steps(step=11))
    tap(phone_page, root, root.get_by_role("button", name="next token (step): previous step"))
    assert values(root)["step"] == 10
    check_decode(root, full_weights)
    root = show(phone_page, kv_cache.kv_cache_size())
    tap(phone_page, root, root.locator('[data-knob="context"]'))
    check_size(root)


def test_both_figures_live_in_the_built_book(page, book_url, full_weights):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    outside = offline(page, book_url)  # nothing may come from outside the book
    page.goto(f"{book_url}/{page_with('decode-steps')}", wait_until="load")
    decode, size = root_of(page, "decode-steps"), root_of(page, "kv-cache-size")
    for root in (decode, size):
        wait_drawn(page, root)
    decode.scroll_into_view_if_needed()
    times = move_decode(page, decode, full_weights)
    size.scroll_into_view_if_needed()
    times += move_size(page, size)
    print(f"\nchapter 11 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside


def test_a_figure_the_page_is_still_parsing_is_mounted_once_it_is_all_there(page):
    """The built page once threw "Cannot read properties of null (reading 'textContent')" at
    load: the first figure's front end mounts again on timers (for front ends that insert an
    output after running its script), and a timer that fired while the page was still arriving
    found the second figure's root before its spec. Here the page arrives in two parts, the
    second figure cut before its spec, with a pause between: no error, both figures drawn."""
    first, second = kv_cache.decode_steps(), kv_cache.kv_cache_size()
    page_html = first.page().replace("</main>", second.html() + "</main>")
    cut = page_html.index('<script type="application/json" class="mha-spec">',
                          page_html.index('data-figure="kv-cache-size"'))
    parts = [page_html[:cut].encode(), page_html[cut:].encode()]

    class Slow(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server API)
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(parts[0])
            self.wfile.flush()
            time.sleep(1.5)  # longer than the front end's re-mount timers (0 to 1 s)
            self.wfile.write(parts[1])

        def log_message(self, *args):
            pass

    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/", wait_until="load")
        for name in ("decode-steps", "kv-cache-size"):
            root = root_of(page, name)
            wait_drawn(page, root)
            assert root.locator(".mha-error").text_content() == ""
        check_size(root_of(page, "kv-cache-size"))
        assert not errors, errors
    finally:
        server.shutdown()

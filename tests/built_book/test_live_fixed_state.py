"""Chapter 15's live figures in Chromium (mha_book.figures.fixed_state): what a fixed-size state
holds, and the memory of hybrid models against the context.

Without a build: each figure alone in a blank page; the write control (slider keys and the
"next" button), the rule picker, the model picker and the context slider each change the
picture from the keyboard, and the numbers drawn equal the package's to 1e-3: the state S after
each write (``mha.delta_rule_step``, ``mha.linear_attention``), what it returns for each key
(S^T k) and how far that is from the key's value; the memory in bytes
(``mha.configs.HybridConfig.cache_bytes``, ``all_full_bytes``, Llama 3 8B's
``ModelConfig.cache_bytes``, DeepSeek-V3's ``latent_cache_bytes``). The numbers a heatmap or
bar draws as 0 are those under ``fs.SHOWN_ZERO`` (round-off). The context slider stops at each
model's own context, also after a tap on a phone, and a new model keeps the reader's context
(brought down to the model's own where it is past it). On the built book
(``chapters/15_fixed_size_memory.html``, found by ``page_with``): the same on the page that holds
them. (axe, a phone's width, touch targets and layout, for every figure: test_every_figure.py.)
"""

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

from mha.configs import DEEPSEEK_V3, HYBRIDS, MODELS, latent_cache_bytes
from mha_book.figures import fixed_state as fs

pytestmark = pytest.mark.browser

RULES = list(fs.RULES)
MODEL_NAMES = list(HYBRIDS)


def check_delta(root):
    """The numbers drawn are the rule's state after this write, S^T k for every key written
    (none for the others) and the distances from their values, round-off drawn as 0."""
    v = values(root)
    rule, step = v["rule"], v["step"]
    S, _ = fs.run(rule)[step]
    assert same(drawn(root, "state"), [fs.shown(S).tolist()]), v
    assert same(drawn(root, "state"), [S.tolist()]), v
    written = {name for name, _ in fs.WRITES[:step + 1]}
    back = fs.shown(fs.keys() @ S).tolist()  # row i: S^T k_i
    want = [row if name in written else [None] * fs.D for name, row in zip(fs.KEYS, back)]
    assert same(drawn(root, "returned"), [want]), v
    dist = fs.write_state(rule, step)["views"]["error"]["values"]
    assert same(drawn(root, "error"), dist), v
    assert [d is None for d in dist] == [name not in written for name in fs.KEYS]
    name, j = fs.WRITES[step]
    assert readout(root).startswith(f"Step {step + 1} of {len(fs.WRITES)} wrote {name} "
                                    f"\u2192 {j}"), readout(root)
    return v


def picture_delta(root):
    return [drawn(root, "state"), drawn(root, "returned"), drawn(root, "error"),
            readout(root)]


def move_delta(page, root):
    """From the start (the delta rule, write 1). At write 1 every rule draws the same state
    (a first write into zeros), so the rule is changed further on, where they differ."""
    times = []
    for knob, key in (("step", "ArrowRight"), ("step", "ArrowRight"), ("rule", "ArrowDown"),
                      ("step", "End"), ("rule", "ArrowUp"), ("rule", "Home"),
                      ("step", "ArrowLeft"), ("step", "Home"), ("rule", "End")):
        before = picture_delta(root)
        times.append(press(page, root, knob, key))
        assert picture_delta(root) != before, f"{knob} {key}: the picture did not change"
        check_delta(root)
    # the "next" button: one more write
    step = values(root)["step"]
    root.get_by_role("button", name="write: next step").click()
    page.wait_for_function("([el, n]) => JSON.parse(el.dataset.state).step === n",
                           arg=[root.element_handle(), step + 1], timeout=5_000)
    check_delta(root)
    return times


def memory_bytes(name, n):
    """The package's bytes: the hybrid as built, all full, Llama 3 8B, DeepSeek-V3."""
    c = HYBRIDS[name]
    return [c.cache_bytes(n), c.all_full_bytes(n), MODELS["Llama 3 8B"].cache_bytes(n),
            latent_cache_bytes(DEEPSEEK_V3.num_layers, DEEPSEEK_V3.kv_rank,
                               DEEPSEEK_V3.qk_rope_dim, n)]


def check_memory(root):
    v = values(root)
    c, n = HYBRIDS[v["model"]], v["context"]
    want = memory_bytes(v["model"], n)
    div = 2**30 if v["unit"] == "GiB" else 2**20
    assert v["unit"] == ("GiB" if max(want) >= 2**30 else "MiB")
    assert same(drawn(root, "sizes"), [w / div for w in want]), v
    # the slider offers this model's contexts only, up to its own
    slider = root.locator('[data-knob="context"]')
    assert int(slider.get_attribute("max")) == fs.CONTEXTS.index(c.context), v
    assert n <= c.context
    contexts = [x for x in fs.CONTEXTS if x <= c.context]
    lines = list(zip(*(memory_bytes(v["model"], x) for x in contexts)))  # per line, per x
    lines = [lines[1], lines[0], lines[2], lines[3]]  # drawn: every layer full, then as built
    assert same(drawn(root, "growth"), [[b / 2**30 for b in line] for line in lines]), v
    assert "Both axes on a log scale" in label(root, "growth")
    table = root.locator('[data-view="layers"]').inner_text()
    assert f"{c.num_linear} ({c.linear_kind})" in table
    assert fs.size_text(c.state_bytes()) in table and fs.size_text(want[0]) in table
    assert f"at {n:,} tokens" in table
    assert readout(root).startswith(f"{v['model']} at {n:,} tokens"), readout(root)
    return v


def picture_memory(root):
    return [drawn(root, "sizes"), drawn(root, "growth"), label(root, "sizes"),
            root.locator('[data-view="layers"]').inner_text()]


def move_memory(page, root):
    """From the start (Qwen3-Next at its 262,144 tokens): a new model keeps the context (4,096
    from Qwen3.5 to OLMo Hybrid, 65,536 from OLMo Hybrid to Kimi Linear)."""
    times = []
    for knob, key in (("context", "ArrowLeft"), ("model", "ArrowDown"), ("context", "Home"),
                      ("model", "End"), ("context", "End"), ("model", "ArrowUp"),
                      ("context", "ArrowLeft"), ("model", "Home")):
        before = picture_memory(root)
        times.append(press(page, root, knob, key))
        assert picture_memory(root) != before, f"{knob} {key}"
        check_memory(root)
    return times


def test_delta_state_draws_what_the_package_computes(page):
    root = show(page, fs.delta_state())
    v = check_delta(root)
    assert (v["rule"], v["step"]) == ("delta rule", 0)
    times = move_delta(page, root)
    assert not page.errors, page.errors
    print(f"\nchapter 15 fixed-size state, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")


def test_every_rule_at_its_last_write(page):
    """The last write under each rule: linear attention returns no key's value, the delta rules
    the last keys written; the outlines sit on each key's latest value."""
    root = show(page, fs.delta_state(step=len(fs.WRITES) - 1))
    rule = root.locator('[data-knob="rule"]')
    for i, name in enumerate(RULES):
        rule.select_option(str(i))
        page.wait_for_function("([el, r]) => JSON.parse(el.dataset.state).rule === r",
                               arg=[root.element_handle(), name], timeout=5_000)
        v = check_delta(root)
        assert v["step"] == len(fs.WRITES) - 1
        if name == "linear attention":
            assert v["right"] == [] and "none of the 6 keys" in readout(root)
        else:
            assert fs.WRITES[-1][0] in v["right"]
    assert not page.errors, page.errors


def test_hybrid_memory_draws_the_configs_bytes(page):
    root = show(page, fs.hybrid_memory())
    v = check_memory(root)
    assert (v["model"], v["context"], v["unit"]) == ("Qwen3-Next-80B-A3B", 262144, "GiB")
    assert same(drawn(root, "sizes"), [6 + 77_266_944 / 2**30, 24, 32, 17.15625])
    times = move_memory(page, root)
    assert not page.errors, page.errors
    print(f"\nchapter 15 hybrid memory, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")


def test_the_context_slider_stops_at_each_models_context(page):
    """Kimi Linear at 1M tokens, then OLMo Hybrid: the slider's end moves to 65,536 and the
    value with it; Qwen3.5 (its end 262,144) and back to Kimi Linear (1M again) keep the 65,536
    tokens; the slider then goes to Kimi Linear's end. At 4K tokens Kimi Linear's bars are in
    MiB (the largest, Llama 3 8B's shape, is 512 MiB)."""
    root = show(page, fs.hybrid_memory(model="Kimi-Linear-48B-A3B", context=2**20))
    assert check_memory(root)["context"] == 2**20
    model = root.locator('[data-knob="model"]')
    for name, context in (("OLMo-Hybrid-7B", 65536), ("Qwen3.5-27B", 65536),
                          ("Kimi-Linear-48B-A3B", 65536)):
        model.select_option(str(MODEL_NAMES.index(name)))
        page.wait_for_function("([el, m]) => JSON.parse(el.dataset.state).model === m",
                               arg=[root.element_handle(), name], timeout=5_000)
        assert check_memory(root)["context"] == context
    press(page, root, "context", "End")
    assert check_memory(root)["context"] == 2**20
    press(page, root, "context", "Home")
    v = check_memory(root)
    assert v["context"] == 4096 and v["unit"] == "MiB"
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_what_the_package_computes(phone_page):
    """On a 390 x 844 touch phone, a tap on the "previous" button and one on the context
    slider: the numbers drawn are still the package's."""
    root = show(phone_page, fs.delta_state(step=len(fs.WRITES) - 1))
    tap(phone_page, root, root.get_by_role("button", name="write: previous step"))
    assert values(root)["step"] == len(fs.WRITES) - 2
    check_delta(root)
    root = show(phone_page, fs.hybrid_memory())
    tap(phone_page, root, root.locator('[data-knob="context"]'))
    check_memory(root)
    assert not phone_page.errors, phone_page.errors


def test_both_figures_live_in_the_built_book(page, book_url):
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    outside = offline(page, book_url)  # nothing may come from outside the book
    where = page_with("delta-state")
    assert where == page_with("hybrid-memory") == "chapters/15_fixed_size_memory.html"
    page.goto(f"{book_url}/{where}", wait_until="load")
    state, memory = root_of(page, "delta-state"), root_of(page, "hybrid-memory")
    for root in (state, memory):
        wait_drawn(page, root)
    state.scroll_into_view_if_needed()
    assert check_delta(state) == fs.delta_state().state()["state"]  # the chapter's defaults
    times = move_delta(page, state)
    memory.scroll_into_view_if_needed()
    check_memory(memory)
    times += move_memory(page, memory)
    print(f"\nchapter 15 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not errors, errors
    assert not outside, outside


def test_the_state_drawn_is_the_delta_rules_from_the_package(page):
    """The last write of the delta rule, drawn, against the package's whole-sequence rule
    (``mha.delta_rule``, by chunks) rather than the figure's own steps."""
    from mha import delta_rule

    K = fs.keys()
    k = torch.stack([K[fs.KEYS.index(n)] for n, _ in fs.WRITES])[None, None]  # (1, 1, L, 4)
    v = torch.stack([torch.eye(fs.D)[j - 1] for _, j in fs.WRITES])[None, None]
    _, S = delta_rule(k, k, v, torch.ones(1, 1, k.size(2)), scale=1.0, chunk_size=3)
    root = show(page, fs.delta_state(step=len(fs.WRITES) - 1))
    assert same(drawn(root, "state"), [S[0, 0].tolist()])

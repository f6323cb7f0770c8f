"""Live figures in a live kernel: JupyterLab from the project's venv, driven by Chromium.

Starts ``jupyter lab`` on 127.0.0.1 (a free port, a token, its own config, runtime, settings and
workspace folders under a temporary directory, copies of chapters 02, 07 and 10 so nothing in
the repository is written), opens chapter 07, runs every cell, moves the first explorer's
num_heads slider from the keyboard and waits for the canvas to show the new number of heads,
drawn by the front end from what the kernel sent; then opens chapter 02, runs it, and toggles
the scale of its d_k figure (drawn in the page, no kernel round trip); then opens chapter 10,
runs it, and types into the Shakespeare figure's text box (the model runs in the page); then
opens chapter 14, runs it, and moves a slider of each of its two figures; chapter 15 likewise.
Chapters 10, 14 and 15 are run as copies with their prose and only their figures' cells
(``figures_only``): their experiments are nbval's to run, not Lab's. Every wait is bounded; the server is stopped (its whole process
group) at the end, also when the test fails. Only localhost is contacted.

Lab runs with the project's settings (lab-settings/, as `make lab`): a notebook
saves its widgets' state, and a saved explorer draws again after its kernel is
gone.
"""

import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest

from mha_book.figures import modern_layers, scaled_scores

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = ROOT / "chapters" / "07_attention_explorer.ipynb"
CHAPTER_02 = ROOT / "chapters" / "02_scaled_dot_product.ipynb"
CHAPTER_10 = ROOT / "chapters" / "10_heads_on_text.ipynb"
CHAPTER_14 = ROOT / "chapters" / "14_modern_attention.ipynb"
CHAPTER_15 = ROOT / "chapters" / "15_fixed_size_memory.ipynb"
TOKEN = "mha-live-lab-test"
# JupyterLab's settings for the book (`make lab`)
LAB_SETTINGS = ROOT / "lab-settings"

pytestmark = pytest.mark.browser


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def figures_only(chapter, to):
    """A copy of ``chapter`` with its prose and only the code cells that draw its live figures
    (each such cell imports what it needs): the figures in a live kernel, in a notebook as
    long as the chapter, without rerunning the chapter's experiments (nbval runs those)."""
    nb = json.loads(chapter.read_text(encoding="utf-8"))
    nb["cells"] = [c for c in nb["cells"] if c["cell_type"] == "markdown"
                   or re.search(r"^figures\.\w+\(", "".join(c["source"]), re.MULTILINE)]
    drawn = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert drawn and "from mha_book import figures" in "".join(drawn[0]["source"]), chapter
    to.write_text(json.dumps(nb), encoding="utf-8")


@pytest.fixture
def lab(tmp_path):
    jupyter = Path(sys.executable).with_name("jupyter")
    if not jupyter.exists() or shutil.which("jupyter-lab", path=str(jupyter.parent)) is None:
        pytest.skip("JupyterLab is not installed in this environment (pip install -r requirements.txt)")
    work = tmp_path / "notebooks"
    work.mkdir()
    shutil.copy(CHAPTER, work / CHAPTER.name)
    shutil.copy(CHAPTER_02, work / CHAPTER_02.name)
    for chapter in (CHAPTER_10, CHAPTER_14, CHAPTER_15):
        figures_only(chapter, work / chapter.name)
    port = free_port()
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"), "MPLBACKEND": "Agg"}
    log = open(tmp_path / "lab.log", "w")
    server = subprocess.Popen(
        [str(jupyter), "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--port={port}",
         "--port-retries=0", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={work}",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
         "--LabApp.news_url=", "--LabApp.extension_manager=readonly",
         "--ServerApp.terminals_enabled=False", "--allow-root",
         f"--LabApp.app_settings_dir={LAB_SETTINGS}"],
        cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    log.flush()
                    pytest.fail(f"JupyterLab did not start: {(tmp_path / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.5)
        yield url
    finally:
        stop(server)
        log.close()


def stop(server):
    """SIGTERM the server's process group (the kernels too), then SIGKILL if need be."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            return
        try:
            server.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def test_num_heads_slider_redraws_in_jupyterlab(browser, lab):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    outside = []

    def route(r):
        if urlparse(r.request.url).hostname in ("127.0.0.1", "localhost") \
                or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    frames = []  # the size of every message from the server (websocket frames)
    page.on("websocket", lambda ws: ws.on(
        "framereceived", lambda payload: frames.append(len(payload))))
    try:
        page.goto(f"{lab}/lab/tree/{CHAPTER.name}?token={TOKEN}", wait_until="load",
                  timeout=90_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        choose = page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True)
        try:  # a fresh Lab may ask which kernel to start: the venv's python3
            choose.wait_for(timeout=15_000)
            choose.click()
        except PlaywrightTimeout:
            pass
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               timeout=90_000)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

        cell = page.locator(".jp-CodeCell", has_text="widgets.explorer(temperature=0.5)").first
        canvas = cell.locator(".mha-live canvas")
        try:
            canvas.wait_for(timeout=240_000)
        except Exception:
            page.screenshot(path=str(Path(os.environ.get("MHA_LAB_SHOT", "/tmp")) / "lab.png"))
            print(cell.inner_html()[:3000] if cell.count() else "no cell")
            raise
        assert canvas.get_attribute("data-heads") == "8"
        # let Run All finish: a busy kernel would queue the slider's message behind the cells
        page.locator(".jp-InputArea-prompt", has_text="[*]").first.wait_for(
            state="detached", timeout=240_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               timeout=60_000)
        slider = cell.locator(".widget-slider, .widget-hslider").filter(has_text="num_heads")
        handle = slider.locator(".noUi-handle, .ui-slider-handle").first
        handle.scroll_into_view_if_needed()
        handle.focus()
        times, in_page = [], []
        frames.clear()
        # the slider offers the divisors of d_model = 64: 8 -> 4 -> 2 -> 4 -> 8 heads
        for key, heads in (("ArrowLeft", 4), ("ArrowLeft", 2), ("ArrowRight", 4),
                           ("ArrowRight", 8)):
            page.evaluate("() => document.addEventListener('keydown', () => {"
                          " window.__keyAt = performance.now(); },"
                          " {capture: true, once: true})")
            start = time.perf_counter()
            page.keyboard.press(key)
            page.wait_for_function(
                "([c, h]) => { const el = c.querySelector('.mha-live canvas');"
                " return el && el.dataset.heads === h; }",
                arg=[cell.element_handle(), str(heads)], timeout=30_000)
            times.append(time.perf_counter() - start)
            in_page.append(cell.locator(".mha-live").evaluate(
                "r => Number(r.dataset.drawnAt) - window.__keyAt"))
            weights = cell.locator(".mha-live canvas").get_attribute("data-values")
            assert weights.count("],[[") == heads - 1  # that many heads of (L, L) weights
        # a redraw brings the figure's spec (~12 KB for 8 heads), never the
        # front end again (~120 KB: the whole HTML figure came at each change
        # before mha.live.picture)
        assert frames and max(frames) < 40_000, sorted(frames)[-3:]
        # the window knob (chapter 14): a dropdown; the kernel recomputes with a causal band
        before = cell.locator(".mha-live canvas").get_attribute("data-values")
        cell.locator(".widget-dropdown", has_text="window").locator("select").select_option(
            label="4 positions")
        page.wait_for_function(
            "([c, v]) => { const el = c.querySelector('.mha-live canvas');"
            " return el && el.dataset.values !== v; }",
            arg=[cell.element_handle(), before], timeout=30_000)
        drawn = json.loads(cell.locator(".mha-live canvas").get_attribute("data-values"))
        for head in drawn:  # (L, L) each: query i sees keys i - 4 < j <= i only
            for i, row in enumerate(head):
                assert not any(v for j, v in enumerate(row) if j > i or j <= i - 4), (i, row)
                assert abs(sum(v or 0 for v in row) - 1) < 1e-3  # no sink: rows sum to 1
        print(f"\nJupyterLab: num_heads 8 -> 4 -> 2 -> 4 -> 8, key press to new picture: "
              f"median {statistics.median(times) * 1000:.0f} ms, worst {max(times) * 1000:.0f} ms "
              f"(kernel round trip, drawing and the test's polling included); "
              f"in the page, keydown to drawn: median "
              f"{statistics.median(in_page):.0f} ms")
        assert not outside, f"requests outside localhost: {outside}"
    finally:
        context.close()


def test_dk_slider_redraws_in_jupyterlab(browser, lab):
    """Chapter 02's d_k figure (a live figure, no kernel round trip) in JupyterLab: each click
    on the scale box redraws the bars with the package's weights; click to picture is timed."""
    import json

    import torch


    context, page, outside = local_page(browser)
    try:
        root = open_figure(page, lab, CHAPTER_02, "dk-softmax")
        box = root.locator('[data-knob="scaled"]')
        box.scroll_into_view_if_needed()
        # the figure starts at d_k = 1 (where the scale changes nothing): set d_k = 64 first,
        # as a drag of the slider would
        start = json.loads(root.get_attribute("data-state"))
        assert (start["d_k"], start["scaled"]) == (1, False), start
        at64 = scaled_scores.dk_softmax().controls[0].values.index(64)  # the slider's index of 64
        set_slider(root.locator('[data-knob="d_k"]'), at64)
        page.wait_for_function("el => JSON.parse(el.dataset.state).d_k === 64",
                               arg=root.element_handle(), timeout=10_000)
        times = []
        # clicks, not keys: after Run All, Lab hands the keyboard focus back to its active cell
        # (the keyboard is tested on the same figure in the built book, test_live_scaled_scores.py)
        for scaled in (True, False, True, False):
            before = root.get_attribute("data-draws")
            page.evaluate("() => { window.__clickAt = null; document.addEventListener("
                          "'mousedown', () => { window.__clickAt = performance.now(); },"
                          " {capture: true, once: true}); }")
            box.click()
            page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                                   arg=[root.element_handle(), before], timeout=10_000)
            times.append(page.evaluate("el => Number(el.dataset.drawnAt) - window.__clickAt",
                                       root.element_handle()))
            s = json.loads(root.get_attribute("data-state"))
            assert (s["d_k"], s["scaled"]) == (64, scaled), s
            drawn = json.loads(root.locator('canvas[data-view="weights"]')
                               .get_attribute("data-values"))
            torch.testing.assert_close(torch.tensor(drawn), scaled_scores.dk_weights(64, scaled),
                                       atol=1e-3, rtol=0)
        print(f"\nJupyterLab: chapter 02's d_k figure, click on the scale box to picture: "
              f"median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms")
        assert not outside, f"requests outside localhost: {outside}"
    finally:
        context.close()


def set_slider(slider, index):
    """Move a page slider to stop ``index`` as a drag would (an input event)."""
    slider.evaluate("(el, i) => { el.value = String(i); el.dispatchEvent(new Event('input',"
                    " {bubbles: true})); }", index)


def local_page(browser):
    """A 1400 x 1000 page that may load only from localhost: (context, page, the list of the
    other requests it tried, aborted)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    outside = []
    page.route("**/*", lambda r: r.continue_() if urlparse(r.request.url).hostname in (
        "127.0.0.1", "localhost") or r.request.url.startswith(("data:", "blob:"))
        else (outside.append(r.request.url), r.abort()))
    return context, page, outside


def shown_text(page, root):
    """The text a reader sees in ``root``: Lab renders only the cells in view (a cell scrolled
    out of the notebook's window reads as empty), so bring it into view and wait for its text."""
    root.scroll_into_view_if_needed()
    page.wait_for_function("el => el.innerText.trim().length > 0", arg=root.element_handle(),
                           timeout=10_000)
    return root.inner_text()


def open_figure(page, lab, chapter, figure):
    """``chapter`` opened and run in Lab; the root of its live figure ``figure``, drawn."""
    open_and_run_all(page, lab, chapter)
    root = page.locator(f'.mha-live[data-figure="{figure}"]').first
    root.wait_for(timeout=60_000)
    page.wait_for_function("el => Number(el.dataset.draws) >= 1", arg=root.element_handle(),
                           timeout=30_000)
    return root


def open_and_run_all(page, lab, chapter):
    """Open ``chapter`` in Lab, start its kernel, Run All Cells and wait until the kernel has
    been idle for 3 s (Lab does not render the prompts of cells out of view)."""
    page.goto(f"{lab}/lab/tree/{chapter.name}?token={TOKEN}", wait_until="load",
              timeout=90_000)
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
    choose = page.locator(".jp-Dialog").get_by_role("button", name="Select", exact=True)
    try:
        choose.wait_for(timeout=15_000)
        choose.click()
    except Exception:  # noqa: BLE001 - no dialog: the kernel started by itself
        pass
    idle = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
    page.wait_for_selector(idle, timeout=90_000)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_timeout(1000)
    deadline, quiet = time.monotonic() + 240, 0
    while quiet < 12 and time.monotonic() < deadline:
        quiet = quiet + 1 if page.locator(idle).count() else 0
        page.wait_for_timeout(250)
    assert quiet >= 12, "the notebook did not finish running"


def test_typing_into_the_shakespeare_figure_in_jupyterlab(browser, lab):
    """Chapter 10's figure in JupyterLab: text typed into its box from the keyboard is read by
    the model in the page, and the weights it drew equal the package's to 1e-3."""
    import torch

    from mha_book.figures import shakespeare_heads as T

    context, page, outside = local_page(browser)
    try:
        root = open_figure(page, lab, CHAPTER_10, "text-heads")
        box = root.locator('[data-knob="text"]')
        box.scroll_into_view_if_needed()
        box.click()
        page.keyboard.press("Control+a")
        typed = "Romeo, Romeo! wherefore art thou Romeo?"
        start = time.perf_counter()
        page.keyboard.type(typed)
        page.wait_for_function("([el, t]) => JSON.parse(el.dataset.state).text === t",
                               arg=[root.element_handle(), typed], timeout=20_000)
        seconds = time.perf_counter() - start
        got = root.evaluate("r => r.mhaText.export()")
        assert got["text"] == typed
        want = T.text_state(typed)
        diff = (torch.tensor(got["weights"]) - want["weights"]).abs().max().item()
        assert diff <= 1e-3, diff
        # typing did not leak into Lab's shortcuts (the notebook is unchanged)
        assert page.locator(".jp-Notebook .jp-Cell").count() > 10
        print(f"\nJupyterLab: chapter 10's text box, {len(typed)} keys typed and drawn in "
              f"{seconds:.1f} s; page - package {diff:.1e}")
        assert not outside, f"requests outside localhost: {outside}"
    finally:
        context.close()


def test_chapter_14_figures_move_in_jupyterlab(browser, lab):
    """Chapter 14 run in Lab: the latent rank slider of the cache figure and the sink slider of
    the window/sink figure redraw with the package's numbers (both figures draw in the page)."""
    import torch


    context, page, outside = local_page(browser)
    try:
        root = open_figure(page, lab, CHAPTER_14, "kv-bytes")
        rank = root.locator('[data-knob="kv_rank"]')
        rank.scroll_into_view_if_needed()
        set_slider(rank, modern_layers.KV_RANKS.index(1024))
        page.wait_for_function("el => JSON.parse(el.dataset.state).kv_rank === 1024",
                               arg=root.element_handle(), timeout=10_000)
        assert "61 x (1024 + 64) x 2 bytes = 132,736 bytes" in shown_text(page, root)

        sink = page.locator('.mha-live[data-figure="window-sink"]').first
        knob = sink.locator('[data-knob="sink"]')
        knob.scroll_into_view_if_needed()
        set_slider(knob, modern_layers.SINKS.index(12))
        page.wait_for_function("el => JSON.parse(el.dataset.state).sink === 12",
                               arg=sink.element_handle(), timeout=10_000)
        drawn = json.loads(sink.locator('canvas[data-view="weights"]')
                           .get_attribute("data-values"))
        expected, _ = modern_layers.sink_weights(0, "full", 12)
        torch.testing.assert_close(torch.tensor(drawn, dtype=torch.float32).reshape(
            expected.shape), expected, atol=2e-3, rtol=0)
        assert "73.1% on the sink" in shown_text(page, sink)
        bar_stays_beside_its_view(page, sink, "sink", "shares")
        assert not outside, f"requests outside localhost: {outside}"
    finally:
        context.close()


def test_chapter_15_figures_move_in_jupyterlab(browser, lab):
    """Chapter 15 run in Lab: the rule select and the step of the state figure redraw the
    package's state (``mha.delta_rule_step`` through the figure's ``run``), and the model select
    of the memory figure keeps the chosen context and shows the configuration's bytes."""
    import torch

    from mha.configs import HYBRIDS
    from mha_book.figures import fixed_state

    context, page, outside = local_page(browser)
    try:
        root = open_figure(page, lab, CHAPTER_15, "delta-state")
        rule = root.locator('[data-knob="rule"]')
        rule.scroll_into_view_if_needed()
        rule.select_option(str(list(fixed_state.RULES).index("linear attention")))
        step = root.locator('[data-knob="step"]')
        set_slider(step, 4)  # write 5: a written again, with 3
        page.wait_for_function(
            "el => { const s = JSON.parse(el.dataset.state);"
            " return s.rule === 'linear attention' && s.step === 4; }",
            arg=root.element_handle(), timeout=10_000)
        drawn = json.loads(root.locator('canvas[data-view="state"]')
                           .get_attribute("data-values"))
        expected = fixed_state.run("linear attention")[4][0]
        torch.testing.assert_close(torch.tensor(drawn, dtype=torch.float32).reshape(
            expected.shape), expected, atol=1e-3, rtol=0)
        assert "an overwrite" in shown_text(page, root)

        memory = page.locator('.mha-live[data-figure="hybrid-memory"]').first
        knob = memory.locator('[data-knob="context"]')
        knob.scroll_into_view_if_needed()
        set_slider(knob, fixed_state.CONTEXTS.index(32768))
        names = list(HYBRIDS)
        memory.locator('[data-knob="model"]').select_option(
            str(names.index("OLMo-Hybrid-7B")))
        page.wait_for_function(
            "el => { const s = JSON.parse(el.dataset.state);"
            " return s.model === 'OLMo-Hybrid-7B' && s.context === 32768; }",
            arg=memory.element_handle(), timeout=10_000)
        state = json.loads(memory.get_attribute("data-state"))
        assert state["bytes"][0] == HYBRIDS["OLMo-Hybrid-7B"].cache_bytes(32768)
        assert "lies on Llama 3 8B" in shown_text(page, memory)
        assert not outside, f"requests outside localhost: {outside}"
    finally:
        context.close()


def bar_stays_beside_its_view(page, root, knob, view):
    """In Lab too a figure's controls stay in view (position: sticky in the notebook's own
    scroller) while the reader looks at a view further down: scroll the notebook until
    ``view`` starts under the bar, move the slider ``knob`` there, and see the control unhidden
    and the view redrawn on screen."""
    root.evaluate(
        """(r, view) => {
          const v = r.querySelector(`[data-view="${view}"]`), bar = r.querySelector('.mha-bar');
          let s = r.parentElement;
          while (s && !(s.scrollHeight > s.clientHeight &&
                        /auto|scroll/.test(getComputedStyle(s).overflowY))) s = s.parentElement;
          s.scrollTop += v.getBoundingClientRect().top - s.getBoundingClientRect().top
            - bar.offsetHeight - 8;
        }""", view)
    page.wait_for_timeout(300)
    before = root.locator(f'[data-view="{view}"]').get_attribute("data-values")
    draws = int(root.get_attribute("data-draws"))
    slider = root.locator(f'[data-knob="{knob}"]')
    set_slider(slider, int(slider.evaluate("e => e.value")) - 1)  # no scroll: a drag
    page.wait_for_function("([el, n]) => Number(el.dataset.draws) > n",
                           arg=[root.element_handle(), draws], timeout=10_000)
    where = root.evaluate(
        """(r, [knob, view]) => {
          const c = r.querySelector(`[data-knob="${knob}"]`).getBoundingClientRect();
          const v = r.querySelector(`[data-view="${view}"]`).getBoundingClientRect();
          const bar = r.querySelector('.mha-bar').getBoundingClientRect();
          const hit = document.elementFromPoint(c.left + c.width / 2, c.top + c.height / 2);
          let s = r.parentElement;
          while (s && !(s.scrollHeight > s.clientHeight &&
                        /auto|scroll/.test(getComputedStyle(s).overflowY))) s = s.parentElement;
          const top = s.getBoundingClientRect().top;
          return {control: [c.top, c.bottom], view: [v.top, v.bottom], bar: [bar.top, bar.bottom],
                  stuck: r.getBoundingClientRect().top < top && bar.top >= top - 1,
                  holders: (() => { const out = []; for (let e = r.parentElement; e && e !== s;
                    e = e.parentElement) { const st = getComputedStyle(e);
                    if (st.overflowY !== 'visible' || st.overflowX !== 'visible' ||
                        st.contain !== 'none') out.push(e.className + ' ' + st.overflowX + '/' +
                        st.overflowY + ' ' + st.contain); } return out; })(),
                  hit: !!hit && r.querySelector(`[data-knob="${knob}"]`).closest(
                    '.mha-control').contains(hit), height: innerHeight};
        }""", [knob, view])
    assert where["stuck"], f"the bar did not stay at the top of the notebook: {where}"
    assert where["hit"] and 0 <= where["control"][0] < where["height"], where
    assert where["view"][0] < where["height"] and where["view"][1] > where["bar"][1], where
    assert root.locator(f'[data-view="{view}"]').get_attribute("data-values") != before


def sessions(lab):
    """The server's sessions (a notebook and its kernel each)."""
    url = f"{lab}/api/sessions?token={TOKEN}"
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def test_saved_explorer_draws_again_without_its_kernel(browser, lab, tmp_path):
    """An explorer run in Lab, saved, its kernel shut down, the notebook
    reopened: the picture draws again from the widget state saved in the
    notebook (the project's Lab saves it: lab-settings/), which holds the
    picture's module (mha.live.picture) and its last figure. Lab starts a fresh
    kernel for the reopened notebook; that kernel never ran the cell, so the
    picture cannot come from it. (Without saved state Lab shows "Error
    displaying widget: model not found", never the output's HTML.)"""
    import nbformat

    from mha.live import picture

    path = tmp_path / "notebooks" / "saved_explorer.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from mha_book import widgets\nwidgets.explorer(num_heads=4, seq_len=6)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    context, page, outside = local_page(browser)
    try:
        open_and_run_all(page, lab, path)
        canvas = page.locator(".mha-live canvas").first
        canvas.wait_for(timeout=60_000)
        drawn = canvas.get_attribute("data-values")
        assert canvas.get_attribute("data-heads") == "4"
        assert drawn.count("],[[") == 3
        page.get_by_role("menuitem", name="File", exact=True).click()
        label = page.locator(".lm-Menu-itemLabel",
                             has_text=re.compile(r"^Save Notebook$"))
        page.locator(".lm-Menu-item").filter(has=label).click()
        deadline, widgets = time.monotonic() + 30, None
        while widgets is None:
            assert time.monotonic() < deadline, "not saved with its widgets"
            # not time.sleep: the page's requests go through page.route
            page.wait_for_timeout(500)
            try:  # None until Lab saved the notebook with its widgets' state
                saved = json.loads(path.read_text())
                widgets = saved["metadata"].get("widgets")
            except ValueError:
                pass
        state = widgets["application/vnd.jupyter.widget-state+json"]["state"]
        (saved,) = [m["state"] for m in state.values()
                    if m["model_name"] == "AnyModel"]
        # the front end, to draw with no kernel, and the last figure
        assert saved["_esm"] == picture.module()
        assert 'class="mha-spec"' in saved["html"]
        assert "mhaLive" not in saved["html"]
        (old,) = sessions(lab)
        request = urllib.request.Request(
            f"{lab}/api/sessions/{old['id']}?token={TOKEN}", method="DELETE")
        urllib.request.urlopen(request, timeout=30)  # the kernel is shut down
        assert sessions(lab) == []

        page.reload(wait_until="load", timeout=90_000)
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
        canvas = page.locator(".mha-live canvas").first
        canvas.wait_for(timeout=60_000)
        assert canvas.get_attribute("data-heads") == "4"
        # the saved figure, drawn again
        assert canvas.get_attribute("data-values") == drawn
        output = page.locator(".jp-OutputArea").first.inner_text()
        assert "model not found" not in output
        kernels = [s["kernel"]["id"] for s in sessions(lab)]
        assert old["kernel"]["id"] not in kernels
        assert not outside, f"requests outside localhost: {outside}"
    finally:
        context.close()

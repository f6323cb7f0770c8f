"""Chapter 16's live figure in Chromium (mha_book.figures.many_devices): who holds which heads and
positions on W devices, and the bytes each rank sends.

Each control is moved from the keyboard (the scheme through all four, the devices, the length,
the key/value and query heads) along a path that passes through impossible settings (12 query
heads over 8 devices under Ulysses and tensor parallelism; 32 key/value heads for 12 query
heads); after every move what is drawn is the listed state's for the values the figure says it
drew (its data-state): the table's text cell by cell and its caption, the picture's ranks and
its caption, the plot's numbers and the readout; an impossible setting keeps every view in
place, the picture crossed out and both captions saying why.

Without a build: the figure alone in a blank page, at 1280 px in light mode and on a 390 x 844
touch phone in dark mode. On the built book: chapter 16's page (``16_many_devices.html``, found
by the figure's name), at 1280 x 800 and on the phone, in the book's light and dark modes, with
nothing loaded from outside the book. (axe, touch targets and every text's layout, for every
figure: test_every_figure.py; every control beside the view it changes: test_live_viewport.py.)
"""

import pytest
from live_figures import (
    DRAW_MS,
    SIZES,
    caption_drawn,
    drawn,
    figure_layout_problems,
    label,
    offline,
    page_with,
    press,
    readout,
    root_of,
    same,
    show,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import many_devices

pytestmark = pytest.mark.browser

NAME = "device-layout"
#: (control, key) from the figure's start (128 query and 8 key/value heads, 8 devices, L 8,192,
#: tensor parallelism): every control moves, every key changes the setting
MOVES = [("scheme", "ArrowDown"), ("scheme", "ArrowDown"), ("scheme", "ArrowDown"),  # Ulysses
         ("world", "ArrowLeft"), ("seq_len", "End"), ("num_kv_heads", "Home"),  # copies of kv 0
         ("num_heads", "Home"),  # 12 heads over 4 devices: 3 each
         ("world", "End"),  # 12 heads over 8 devices: Ulysses impossible
         ("scheme", "Home"),  # tensor parallelism impossible too
         ("num_kv_heads", "End"),  # 32 key/value heads for 12 query heads: no scheme at all
         ("num_heads", "End"), ("seq_len", "Home"), ("scheme", "ArrowDown")]
#: what the path shows where the setting is impossible: data-state -> the captions' message
IMPOSSIBLE = {
    (12, 1, 8, 131072, "ulysses"): "Ulysses on 8 devices is impossible: 12 query heads cannot be "
                                   "split over 8 devices (8 does not divide 12)",
    (12, 1, 8, 131072, "tensor"): "Tensor parallelism on 8 devices is impossible: 12 query heads "
                                  "cannot be split over 8 devices (8 does not divide 12)",
    (12, 32, 8, 131072, "tensor"): "No scheme can split this layer: 12 query heads cannot share "
                                   "32 key/value heads: each key/value head serves one query "
                                   "head or more, so there are at most 12",
}
KNOBS = ("num_heads", "num_kv_heads", "world", "seq_len", "scheme")

TABLE = """e => { const t = e.querySelector('table'); return t && {caption: t.caption ?
  t.caption.textContent : '', rows: [...t.querySelectorAll('tr')].map(r => [...r.children]
  .map(c => c.textContent))}; }"""


@pytest.fixture(scope="module")
def figure():
    return many_devices.device_layout()


def check(root, figure):
    """What is drawn is the listed state's for the values drawn; returns those values."""
    v = values(root)
    want = figure.state(**v)
    views = want["views"]
    assert readout(root) == want["readout"], v
    for view in ("layout", "ranks", "bytes"):  # never hidden, impossible or not
        assert not root.locator(f'[data-view="{view}"]').evaluate("e => e.hidden"), (view, v)
    assert same(drawn(root, "layout"), views["layout"]["grids"]), v  # ranks; None: crossed out
    assert same(drawn(root, "bytes"), [s["y"] for s in views["bytes"]["series"]]), v
    assert label(root, "layout").startswith(views["layout"]["caption"] + ". ")
    t = root.locator('[data-view="ranks"]').evaluate(TABLE)
    assert t["caption"] == views["ranks"]["caption"]
    assert t["rows"] == [views["ranks"]["columns"], *views["ranks"]["rows"]], v
    key = tuple(v[k] for k in KNOBS)
    if key in IMPOSSIBLE:  # the message, in the picture's caption and the table's
        assert t["caption"] == IMPOSSIBLE[key]
        assert caption_drawn(root, "layout") and " ".join(
            caption_drawn(root, "layout")) == IMPOSSIBLE[key]
        assert IMPOSSIBLE[key].split(": ", 1)[1] in readout(root)  # the reason, said again
    return key


def move(page, root, figure, phone=False):
    """Every move of ``MOVES``: the picture changes, and is the listed state's."""
    times, seen = [], [check(root, figure)]
    for knob, key in MOVES:
        before = values(root)
        times.append(press(page, root, knob, key))
        assert values(root) != before, f"{knob} {key}: the setting did not change"
        seen.append(check(root, figure))
        if phone:
            assert page.evaluate("document.documentElement.scrollWidth") <= 390, seen[-1]
    assert set(IMPOSSIBLE) <= set(seen), "the path missed an impossible setting"
    assert not figure_layout_problems(root)
    return times


def test_moving_each_control_draws_the_listed_state(page, figure):
    root = show(page, figure)
    assert check(root, figure) == (128, 8, 8, 8192, "tensor")
    assert "tensor 448 MiB, ring 28 MiB, zigzag 28 MiB, Ulysses 59.5 MiB" in readout(root)
    times = move(page, root, figure)
    print(f"\nchapter 16 device layout, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors


def test_on_a_dark_phone_too(phone_page, figure):
    root = show(phone_page, figure, dark=True)
    assert root.evaluate("r => r.style.colorScheme") == "dark"
    move(phone_page, root, figure, phone=True)
    assert not phone_page.errors, phone_page.errors


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("size", list(SIZES))
def test_the_figure_lives_in_chapter_16(browser, book_url, figure, size, mode):
    path = page_with(NAME)
    assert path.endswith("16_many_devices.html"), path
    context = browser.new_context(**SIZES[size])
    context.add_init_script(f"localStorage.setItem('mode', '{mode}');"
                            f"localStorage.setItem('theme', '{mode}');")
    page = context.new_page()
    try:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        outside = offline(page, book_url)
        page.goto(f"{book_url}/{path}", wait_until="load")
        assert page.evaluate("() => document.documentElement.dataset.theme") == mode
        root = root_of(page, NAME)
        wait_drawn(page, root)
        root.scroll_into_view_if_needed()
        assert root.evaluate("r => r.style.colorScheme") == mode
        # the chapter may start the figure elsewhere: back to the figure's own start first
        for knob, value in zip(KNOBS, (128, 8, 8, 8192, "tensor")):
            control = figure.controls[KNOBS.index(knob)]
            index = str(control.values.index(value))
            locator = root.locator(f'[data-knob="{knob}"]')
            if locator.evaluate("e => e.value") != index:
                before = root.get_attribute("data-draws")
                locator.evaluate("(e, i) => { e.value = i; e.dispatchEvent(new Event("
                                 "e.tagName === 'SELECT' ? 'change' : 'input')); }", index)
                page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                                       arg=[root.element_handle(), before], timeout=5_000)
        times = move(page, root, figure, phone=size == "phone")
        print(f"\nchapter 16 (built book, {size}, {mode}), key press to picture: "
              f"{timing(times)}")
        assert not errors, errors
        assert not outside, outside
    finally:
        context.close()

"""The head removal's live figure in Chromium (mha_book.figures.head_removal): remove heads along an order and read the accuracy.

Without a build: the figure alone in a blank page; every control moved from the keyboard changes
the picture, and the accuracies drawn equal those of the model with those heads masked by its
own ``head_mask`` (computed here by hand, to 1e-3, in percent), the grid crosses out exactly the
removed heads, the step buttons move one place along the order, and no control moves a view
(the "keep" toggle once pushed the bars below the grid), also after a tap on a phone; removed
heads stand out on every background. On the built book: the same on the page that holds it,
offline. (axe, at the start and with 5 places removed and the spare heads kept, a phone's
width, touch targets and layout, for every figure: test_every_figure.py.)
"""


import pytest
import torch
from live_figures import (
    DRAW_MS,
    PANEL_RGB,
    axe_violations,
    contrast,
    drawn,
    offline,
    page_with,
    pixel,
    press,
    readout,
    root_of,
    same,
    show,
    show_on_panel,
    tap,
    timing,
    values,
    wait_drawn,
)

from mha_book.figures import head_removal
from mha_book.tasks import IGNORE

pytestmark = pytest.mark.browser


def reference(removed):
    """Accuracy per job and their mean with ``removed`` heads masked by hand."""
    model, _, _, held_out = head_removal._setup()
    mask = torch.ones(2, 8)
    for layer, h in removed:
        mask[layer, h] = 0.0
    with torch.no_grad():
        pred = model(held_out.inputs, head_mask=mask).argmax(-1)  # (B, L, K)
    labelled = held_out.targets != IGNORE
    acc = ((pred == held_out.targets) & labelled).sum((0, 1)) / labelled.sum((0, 1))
    return [100 * a for a in acc.tolist() + [acc.mean().item()]]  # drawn in percent


def check(root):
    v = values(root)
    order = head_removal.order_of(v["order"])[:v["removed"]]
    gone = [lh for lh in order if not (v["spare"] and lh in ((0, 6), (1, 6)))]
    assert v["removed_heads"] == [list(lh) for lh in gone], v
    assert same(drawn(root, "accuracy"), reference(gone)), v
    grid = drawn(root, "heads")[0]
    crossed = sorted((n, h) for n in range(2) for h in range(8) if grid[n][h] is None)
    assert crossed == sorted(gone)
    # the step control counts places in the order (the curve's x-axis); the readout says
    # both the place and how many heads are removed
    if v["removed"]:
        assert f"up to place {v['removed']}: {len(gone)} of 16 heads removed" \
            in readout(root), readout(root)
    else:
        assert "nothing removed yet" in readout(root)
    assert root.locator('label[for$="-removed"]').text_content() == "up to place"
    return v


def move(page, root):
    times = []
    for knob, key in (("removed", "ArrowRight"), ("removed", "End"), ("spare", "Space"),
                      ("order", "ArrowDown"), ("removed", "Home"), ("order", "ArrowDown"),
                      ("removed", "ArrowRight"), ("spare", "Space"), ("removed", "ArrowRight")):
        before = drawn(root, "heads") + drawn(root, "accuracy")
        text = readout(root)
        times.append(press(page, root, knob, key))
        assert drawn(root, "heads") + drawn(root, "accuracy") != before \
            or readout(root) != text, f"{knob} {key}: nothing changed"
        check(root)
    return times


def test_head_switches_draw_the_masked_models_accuracy(page):
    root = show(page, head_removal.head_switches())
    assert check(root)["removed_heads"] == []
    times = move(page, root)
    # most important first: one head gone, the previous-token head, breaks two jobs
    root.locator('[data-knob="order"]').select_option("2")
    root.locator('[data-knob="spare"]').uncheck()
    root.locator('[data-knob="removed"]').fill("1")
    v = check(root)
    assert v["order"] == "reverse" and v["accuracy"][-1] < 0.9
    # the step buttons move one place at a time
    before = root.get_attribute("data-draws")
    root.get_by_role("button", name="up to place: next step").click()
    page.wait_for_function("([el, n]) => el.dataset.draws !== n",
                           arg=[root.element_handle(), before], timeout=5_000)
    assert check(root)["removed"] == 2
    print(f"\nchapter 09 head switches, key press to picture (no build): {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors


def boxes(root):
    return [root.locator(f'canvas[data-view="{v}"]').bounding_box()
            for v in ("heads", "accuracy", "curve")]


def test_the_toggle_does_not_move_the_views(page):
    """Ticking "keep the 2 essential heads" once lengthened the grid's legend, and the bars
    jumped below the grid at 1280 px: every view stays where it is, whatever the settings."""
    page.set_viewport_size({"width": 1280, "height": 900})
    root = show(page, head_removal.head_switches(order="ablation", removed=10))
    where = boxes(root)
    assert where[1]["y"] == where[0]["y"] == where[2]["y"]  # one row at 1280 px
    for knob, key in (("spare", "Space"), ("removed", "End"), ("order", "ArrowDown"),
                      ("spare", "Space")):
        press(page, root, knob, key)
        assert boxes(root) == where, (knob, key)
    assert not page.errors, page.errors


def test_a_tap_on_a_phone_draws_the_masked_models_accuracy(phone_page):
    """On a 390 x 844 touch phone, 8 places removed, a tap on "keep the 2 essential heads": the
    accuracies drawn are still the masked model's (a tap on every control, and the width, for
    every figure: test_every_figure.py)."""
    root = show(phone_page, head_removal.head_switches(removed=8))
    tap(phone_page, root, root.locator('[data-knob="spare"]'))
    assert check(root)["spare"] is True


def test_the_figure_lives_in_the_built_book(page, book_url):
    outside = offline(page, book_url)
    page.goto(f"{book_url}/{page_with('head-switches')}", wait_until="load")
    root = root_of(page, "head-switches")
    wait_drawn(page, root)
    root.scroll_into_view_if_needed()
    check(root)
    times = move(page, root)
    print(f"\nchapter 09 (built book), key press to picture: {timing(times)}; "
          f"redraw {timing(DRAW_MS[-len(times):])}")
    assert not page.errors, page.errors
    assert not outside, outside


@pytest.mark.parametrize("where", ["book dark mode", "light page", "dark page"])
def test_removed_heads_stand_out_in_every_mode(page, where):
    """In the book's dark mode a figure sits on a light grey panel (#ced6dd), where the light
    grey crossed-out cells (#ccc) all but vanished: a removed head's cell has 3:1 or more
    against the background, and its cross 3:1 or more against the cell."""
    figure = head_removal.head_switches(removed=10)
    if where == "book dark mode":
        root, background = show_on_panel(page, figure), PANEL_RGB
    else:
        root = show(page, figure, dark=where == "dark page")
        background = (18, 18, 18) if where == "dark page" else (255, 255, 255)
    grid = drawn(root, "heads")[0]
    geom = root.locator('canvas[data-view="heads"]').evaluate("c => c.mhaGeom")
    (x0, y0), cell = geom["panels"][0], geom["cell"]
    crossed = [(i, j) for i, row in enumerate(grid) for j, v in enumerate(row) if v is None]
    assert len(crossed) == 10
    for i, j in crossed:
        fill = pixel(root, "heads", x0 + (j + 0.5) * cell, y0 + (i + 0.2) * cell)
        cross = pixel(root, "heads", x0 + (j + 0.5) * cell, y0 + (i + 0.5) * cell)
        assert contrast(fill, background) >= 3, (where, fill)
        assert contrast(cross, fill) >= 3, (where, cross, fill)
    assert not axe_violations(page)

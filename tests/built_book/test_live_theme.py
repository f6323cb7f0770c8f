"""The live figures pick their palette from the background they are drawn on.

In the book's dark mode, MyST-NB draws HTML outputs on a light panel with dark text; a figure
there must use its light palette (grey legends on light grey were illegible, 1.7:1) and light
form controls (a dark unticked checkbox looks ticked). On a dark page (a dark Jupyter theme, or
the figure alone with the page's dark colours) it uses the dark palette.
"""

import pytest
from live_figures import axe_violations, root_of, set_dark, wait_drawn

from mha_book.figures import batched_heads

pytestmark = pytest.mark.browser

# what MyST-NB's stylesheet gives an HTML output in the book's dark mode
PANEL = ('<div class="output text_html" style="background: rgb(206, 214, 221); '
         'color: rgb(34, 40, 50); padding: 4px">{}</div>')


def scheme(root):
    return root.evaluate("el => el.style.colorScheme")


def test_a_figure_on_the_books_dark_mode_panel_uses_the_light_palette(page):
    figure = batched_heads.fold_valid_lens()
    page.set_content(f"<html><body>{PANEL.format(figure.html())}</body></html>")
    set_dark(page)  # the page is dark; the output panel stays light
    root = root_of(page, figure.name)
    wait_drawn(page, root)
    page.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
    page.wait_for_timeout(100)
    assert scheme(root) == "light"
    assert not axe_violations(page), "a contrast or other axe violation on the light panel"


def test_a_figure_on_a_dark_page_uses_the_dark_palette(page):
    figure = batched_heads.fold_valid_lens()
    page.set_content(f"<html><body>{figure.html()}</body></html>")
    set_dark(page)
    root = root_of(page, figure.name)
    wait_drawn(page, root)
    page.evaluate("() => document.documentElement.setAttribute('data-theme', 'light')")
    page.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
    page.wait_for_timeout(100)
    assert scheme(root) == "dark"

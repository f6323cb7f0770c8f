"""Every static figure of the built book has a dark version, and each mode shows only its own.

The build draws every matplotlib figure twice (mha_book/dark_figures.py, _ext/dark_figures.py)
and shows the pair as ``img.only-light`` and ``img.only-dark`` in one ``div.mha-themed``. From
the HTML files: every PNG a notebook output or a glued figure shows (MyST-NB names them by
their hash) is in such a pair, the two with the same real alt text and the same size, the dark
one drawn on the dark page's background or transparent (its corner pixel on the page, read from
_build/html/_images). In
Chromium, one load per page: in dark mode only the dark images are displayed, with nothing light
behind them (the theme puts output images on a light panel in dark mode); switched to light
mode, only the light ones.
"""

import re

import pytest
from conftest import HTML
from PIL import Image
from test_book import PAGES
from test_live_viewport import BACKGROUND as BEHIND
from test_live_viewport import luminance

from mha_book.dark_figures import BACKGROUND

#: a notebook output's image: MyST-NB names the file by its content's sha256
OUTPUT_PNG = re.compile(r'<img [^>]*src="[^"]*_images/[0-9a-f]{64}\.png"[^>]*>')
PAIR = re.compile(r'<div class="mha-themed[^"]*">\s*(<img [^>]*>)\s*(<img [^>]*>)\s*</div>')
#: alt text must have at least this many words (as in test_reading_comfort.py)
MIN_ALT_WORDS = 4


def attributes(tag):
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def pairs(path):
    """The (light, dark) image pairs of a built page, as their attributes."""
    html = (HTML / path).read_text(encoding="utf-8")
    return [(attributes(light), attributes(dark)) for light, dark in PAIR.findall(html)]


PAGES_WITH_FIGURES = [p for p in PAGES if (HTML / p).exists() and pairs(p)]


def test_the_book_has_themed_figures(require_build):
    require_build()
    assert PAGES_WITH_FIGURES, (
        "no page shows a light and dark figure pair: is the build's _ext/dark_figures.py "
        "loaded, and the package installed (pip install --no-deps -e .)?")


@pytest.mark.parametrize("path", PAGES)
def test_every_output_png_has_a_dark_version(require_build, path):
    require_build()
    html = (HTML / path).read_text(encoding="utf-8")
    found = pairs(path)
    assert len(OUTPUT_PNG.findall(html)) == 2 * len(found), (
        f"{path}: {len(OUTPUT_PNG.findall(html))} output PNGs, {len(found)} light and dark "
        "pairs: a figure without its dark version")
    for light, dark in found:
        where = f"{path}: {light['src']}"
        assert light["class"].split() == ["only-light"], where
        assert dark["class"].split() == ["only-dark"], where
        assert light["alt"] == dark["alt"] and len(light["alt"].split()) >= MIN_ALT_WORDS, where
        with Image.open((HTML / path).parent / light["src"]) as image:
            size = image.size
        with Image.open((HTML / path).parent / dark["src"]) as image:
            assert image.size == size, f"{where}: the dark version is {image.size}, not {size}"
            *rgb, alpha = image.convert("RGBA").getpixel((0, 0))
        page = [int(BACKGROUND[i:i + 2], 16) for i in (1, 3, 5)]
        corner = [(c * alpha + p * (255 - alpha)) / 255 for c, p in zip(rgb, page)]  # on the page
        assert max(abs(c - p) for c, p in zip(corner, page)) <= 2, (
            f"{where}: the dark version's corner is {corner}, not the page's {BACKGROUND}")


SHOWN = """() => [...document.querySelectorAll('div.mha-themed')].map(pair => {
  const shown = img => getComputedStyle(img).display !== 'none';
  const light = pair.querySelector('img.only-light'), dark = pair.querySelector('img.only-dark');
  return [light.getAttribute('src'), shown(light), shown(dark)];
})"""


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES_WITH_FIGURES)
def test_each_mode_shows_its_own_figures(browser, book_url, path):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script("localStorage.setItem('mode', 'dark');"
                            "localStorage.setItem('theme', 'dark');")
    try:
        page = context.new_page()
        page.goto(f"{book_url}/{path}", wait_until="load")
        assert page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        shown = page.evaluate(SHOWN)
        assert len(shown) == len(pairs(path))
        wrong = [src for src, light, dark in shown if light or not dark]
        assert not wrong, f"{path}: in dark mode these show the light image: {wrong}"
        darks = page.locator("div.mha-themed img.only-dark")
        for k in range(darks.count()):
            behind = darks.nth(k).evaluate(BEHIND)
            assert luminance(behind) < 0.05, (
                f"{path}: {darks.nth(k).get_attribute('src')} shown on {behind}")
        page.evaluate("() => { document.documentElement.dataset.theme = 'light'; }")
        wrong = [src for src, light, dark in page.evaluate(SHOWN) if dark or not light]
        assert not wrong, f"{path}: in light mode these show the dark image: {wrong}"
    finally:
        context.close()

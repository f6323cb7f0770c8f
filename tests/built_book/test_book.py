"""Every page of the built book, in a real headless browser with no network: it loads, its own
scripts log no errors, it requests nothing from outside localhost, its math is typeset by MathJax,
its figures are real images, no ipywidgets view or state is left without a manager to draw it,
chapters have launch buttons, and exercise solutions stay hidden until clicked.
"""

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
TOC = ROOT / "_toc.yml"


def book_pages() -> list[str]:
    """The pages listed in _toc.yml, as paths relative to the HTML root."""
    text = TOC.read_text()
    docs = re.findall(r"^\s*(?:root|- file):\s*(\S+)", text, re.MULTILINE)
    return [f"{doc}.html" for doc in docs]


PAGES = book_pages()
NOTEBOOK_PAGES = {p for p in PAGES if p.startswith("chapters/")}


def test_every_toc_page_was_built():
    missing = [p for p in PAGES if not (HTML / p).exists()]
    assert PAGES and not missing, f"pages in _toc.yml but not in {HTML}: {missing}"


def visit(page, url: str):
    """Load ``url`` with every request outside localhost blocked, collecting errors and requests."""
    origin = urlparse(url).netloc
    outside, console_errors, page_errors = [], [], []

    def route(r):
        if urlparse(r.request.url).netloc == origin or r.request.url.startswith("data:"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("console", lambda m: console_errors.append(m) if m.type == "error" else None)
    page.on("pageerror", lambda e: page_errors.append(str(e)))
    response = page.goto(url, wait_until="load")
    return response, outside, console_errors, page_errors


def wait_or_fail(page, condition: str, arg, message: str):
    """Wait up to 20 s for a JavaScript condition; fail with ``message`` rather than a timeout."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(condition, arg=arg, timeout=20_000)
    except PlaywrightTimeout:
        pytest.fail(message)


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGES)
def test_page(page, book_url, path):
    url = f"{book_url}/{path}"
    print(f"visiting {url}")
    response, outside, console_errors, page_errors = visit(page, url)
    assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
    page.wait_for_load_state("networkidle", timeout=90_000)  # a busy 2-core machine is slow

    # Math: every math element is typeset by MathJax (no raw TeX left).
    math_count = page.locator(".math").count()
    if math_count:
        wait_or_fail(page, "() => document.querySelectorAll('mjx-container').length > 0", None,
                     f"{path}: MathJax typeset none of its {math_count} math elements")
        raw = page.evaluate(
            "() => [...document.querySelectorAll('.math')].filter(e => !e.querySelector('mjx-container')).length"
        )
        assert raw == 0, f"{path}: {raw} of {math_count} math elements were not typeset"

    # Figures: every image in the article has loaded and is not empty.
    images = page.evaluate(
        "() => [...document.querySelectorAll('article img, .bd-article img')]"
        ".map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0 && i.naturalHeight > 0])"
    )
    broken = [src for src, ok in images if not ok]
    assert not broken, f"{path}: images that did not load: {broken}"
    text = page.inner_text("article") if page.locator("article").count() else ""
    if path in NOTEBOOK_PAGES and "plt" in (HTML / path).read_text():
        assert images, f"{path}: the notebook plots, but the page has no figures"

    # No ipywidgets view reaches a page: the book loads no widget manager (_ext/lean_pages.py),
    # so a view would be an empty box. Live figures are plain HTML (mha.live), and the
    # explorer's widget output carries an HTML version the book shows instead.
    views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    assert views == 0, f"{path}: {views} ipywidgets views, which no widget manager draws here"
    state = page.locator('script[type="application/vnd.jupyter.widget-state+json"]').count()
    assert state == 0, f"{path}: ipywidgets state on a page without widget views"

    # Launch buttons on every notebook page (Colab and Binder).
    if path in NOTEBOOK_PAGES:
        html = page.content()
        assert "colab.research.google.com" in html, f"{path}: no Colab launch button"
        assert "mybinder.org" in html, f"{path}: no Binder launch button"

    # Solutions are hidden until their toggle is clicked (sphinx-exercise + sphinx-togglebutton).
    solutions = page.locator("div.solution.dropdown")
    if path in NOTEBOOK_PAGES:
        assert solutions.count() >= 3, f"{path}: {solutions.count()} solutions, expected >= 3"
    for i in range(solutions.count()):
        solution = solutions.nth(i)
        body = solution.locator(".admonition-title ~ *").first
        assert not body.is_visible(), f"{path}: solution {i + 1} is visible before it is clicked"
        solution.locator("button.toggle-button").first.click()
        body.wait_for(state="visible", timeout=5_000)

    # The book's own scripts must not fail, and nothing may come from outside localhost.
    own = [m for m in console_errors if (m.location or {}).get("url", "").startswith(book_url)]
    assert not page_errors, f"{path}: JavaScript errors: {page_errors}"
    assert not own, f"{path}: console errors: {[m.text for m in own]}"
    assert not outside, f"{path}: requests to outside localhost (the book must work offline): {outside}"
    assert "Traceback (most recent call last)" not in text, f"{path}: a cell raised"

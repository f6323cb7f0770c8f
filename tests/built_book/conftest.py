"""Serve the built book on localhost and drive it with Debian's Chromium through Playwright.

Runs after `make book` (``make test`` does both). Without Chromium the tests skip with a message,
except in CI (CI=true), where a missing browser or a missing build is a failure.
"""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
CHROMIUM_FLAGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _unavailable(reason: str):
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: the browser test must run in CI)")
    pytest.skip(reason)


def _require_build(path=HTML / "index.html"):
    """Skip (fail in CI) when the book has not been built."""
    if not Path(path).exists():
        _unavailable(f"no built book ({path} is missing): run `make book` first")


@pytest.fixture(scope="session")
def require_build():
    return _require_build


@pytest.fixture(scope="session")
def book_url():
    _require_build()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    executable = chromium_path()
    if executable is None:
        _unavailable("Chromium is not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A fresh page (its own context) in a 1280 x 1000 window; ``page.errors`` collects the
    console's errors and the uncaught exceptions, for tests to assert it stays empty."""
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.errors = []
    page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    context.close()


@pytest.fixture
def phone_page(browser):
    """A fresh page on a 390 x 844 touch phone (``live_figures.phone``); ``page.errors``
    collects its uncaught exceptions."""
    from live_figures import phone

    context = phone(browser)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    yield page
    context.close()


@pytest.fixture(scope="session")
def built_figure():
    """``built_figure(name)``: the registered figure ``name`` (``mha_book.figures.FIGURES``) made
    with the arguments of its mark, once per test process."""
    from mha_book import figures

    return functools.lru_cache(maxsize=None)(figures.build)

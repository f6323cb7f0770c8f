"""No chapter page over 3 MB, as a reader's browser loads it the first time.

Each chapter page is opened in a fresh browser context (an empty cache) and every response the
page asks for is counted: the HTML (live figures and their data are inline), the theme's CSS,
scripts and fonts, MathJax and its fonts, the search index and the images. The weight is what
travels: text (HTML, CSS, JavaScript, JSON, SVG) gzip-compressed, as GitHub Pages, Read the Docs
and any common server send it, and images and fonts as they are. The uncompressed total is printed
beside it (benchmarks/README.md records both); the page's own bytes (its HTML and images, all a
reader downloads again for each new chapter once the shared files are cached) must also stay
under 3 MB uncompressed.
"""

import gzip

import pytest
from conftest import ROOT

TEXT = ("text/", "javascript", "json", "svg", "xml")

pytestmark = pytest.mark.browser

LIMIT = 3_000_000  # bytes: "no chapter page over 3 MB"
CHAPTERS = sorted(p.stem + ".html" for p in (ROOT / "chapters").glob("*.ipynb"))


def load_weight(page, url):
    """(bytes, bytes sent compressed) of every response the page asks for, by URL."""
    sizes = {}

    def record(response):
        try:
            body = response.body()
        except Exception:  # noqa: BLE001 - a redirect or an aborted request has no body
            sizes.setdefault(response.url, (0, 0))
            return
        kind = response.headers.get("content-type", "")
        sent = len(gzip.compress(body, 6)) if any(t in kind for t in TEXT) else len(body)
        sizes[response.url] = (len(body), sent)

    page.on("response", record)
    page.goto(url, wait_until="networkidle")
    # MathJax typesets after load and then fetches its fonts: wait for both
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || "
                           "MathJax.startup.promise.then(() => true)")
    page.wait_for_load_state("networkidle")
    return sizes


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_page_weighs_at_most_3_mb(book_url, browser, name):
    context = browser.new_context()
    try:
        sizes = load_weight(context.new_page(), f"{book_url}/chapters/{name}")
    finally:
        context.close()
    raw = sum(r for r, _ in sizes.values())
    sent = sum(c for _, c in sizes.values())
    own = sum(r for url, (r, _) in sizes.items() if url.split("?")[0].endswith(f"/{name}")
              or "/_images/" in url)
    largest = sorted(sizes.items(), key=lambda kv: -kv[1][0])[:3]
    print(f"\n{name}: {sent / 1e6:.2f} MB sent ({raw / 1e6:.2f} MB uncompressed) in "
          f"{len(sizes)} files; the page's own HTML and images {own / 1e6:.2f} MB; largest: "
          + ", ".join(f"{url.rsplit('/', 1)[-1].split('?')[0]} {r / 1e6:.2f} MB"
                      for url, (r, _) in largest))
    assert sizes, f"{name}: the page loaded nothing"
    assert sent <= LIMIT, f"{name}: {sent / 1e6:.2f} MB travel, over the 3 MB limit: {largest}"
    assert own <= LIMIT, f"{name}: its HTML and images are {own / 1e6:.2f} MB, over 3 MB"

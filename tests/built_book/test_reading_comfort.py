"""Reading comfort and accessibility of every page of the built book, in headless Chromium.

Each check is about what a reader meets, at a laptop's 1280 px width:

- no line of a code cell, or of its printed output, is cut off: code cells are at most 80
  characters wide (tests/test_notebooks.py) and web/book.css sizes them to fit the column;
- nothing overflows the article column: an element wider than the article must sit inside its own
  scroll box (``overflow-x: auto`` or ``scroll``), as display equations and wide tables should;
- figures are not shrunk below a readable size: an image shown at less than ``MIN_SCALE`` of its
  natural width has fonts that were readable in the notebook and are not on the page. A figure
  that is meant to be wide can be marked (a ``zoomable`` or ``full-width`` class on the image or
  around it, e.g. the ``full-width`` cell tag) and is then exempt;
- every image in the article has alt text that says what it shows (not MyST-NB's default, the
  image's file hash; not empty; at least a few words), and every slider has an accessible name;
- axe-core (pinned in web/package.json, injected into the page from web/node_modules, never
  shipped with the book) finds no violation at all, of any impact, in the theme's markup or the
  book's content, in light mode and in dark mode. Where the toolchain's markup breaks a rule, the
  book mends it (``_ext/a11y_fixes.py``); no rule is turned off.

On a 390 x 844 phone (a mobile browser, which widens its layout viewport to the widest content
and lets the reader pan the page sideways), every page keeps the phone's width: chapter 02 was
515 px wide, for a URL in plain text in its references.

Solutions are opened before the checks, so that what they contain is checked too. Each page is
loaded once for all its light-mode checks (the ``opened`` fixture; ``scope="module"`` on the
``path`` parameter makes pytest run one page's checks together) and once more in dark mode for
axe: loading a page, its math and its figures is what these tests spend their time on.
"""

import re
from pathlib import Path

import pytest
from test_book import PAGES, visit

ROOT = Path(__file__).resolve().parents[2]
AXE = ROOT / "web" / "node_modules" / "axe-core" / "axe.min.js"

#: an image may be shown at no less than this fraction of its natural width
MIN_SCALE = 0.6
#: alt text must have at least this many words to say what a figure shows
MIN_ALT_WORDS = 4
#: the article column; the theme puts the page's content in it
ARTICLE = "article.bd-article"


#: every page as a parameter that keeps its checks together: in one worker under pytest-xdist
#: (``--dist loadgroup``), after each other in one process (``scope="module"``)
PAGE_PARAMS = [pytest.param(p, marks=pytest.mark.xdist_group(p)) for p in PAGES]

#: the window the checks read the pages in
VIEWPORT = {"width": 1280, "height": 1000}


def open_page(page, book_url, path):
    """Load a page, wait for math and widgets, open every solution."""
    response, *_ = visit(page, f"{book_url}/{path}")
    assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
    page.wait_for_load_state("networkidle", timeout=90_000)  # a busy 2-core machine is slow
    if page.locator(".math").count():
        page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0",
                               timeout=20_000)
    for button in page.locator(f"{ARTICLE} button.toggle-button").all():
        if button.is_visible():
            button.click()
    page.wait_for_timeout(300)


def fresh_page(browser, book_url, path, mode):
    """A new context (nothing cached, nothing shared) with ``path`` loaded in colour ``mode``."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.add_init_script(f"localStorage.setItem('mode', '{mode}')")
    open_page(page, book_url, path)
    return context, page


#: a phone: its browser lays the page out at the device's width unless content is wider
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}


@pytest.fixture(scope="module")
def opened_on_a_phone(browser, book_url, path):
    """``path`` loaded once, afresh, on a phone: a mobile layout viewport is sized by what the
    page holds as it loads (CSS added afterwards would not show a problem, nor hide one)."""
    context = browser.new_context(**PHONE)
    page = context.new_page()
    page.add_init_script("localStorage.setItem('mode', 'light')")
    open_page(page, book_url, path)
    yield page
    context.close()


@pytest.fixture(scope="module")
def opened(browser, book_url, path):
    """``path`` loaded once in light mode, solutions open, for every light-mode check of it."""
    context, page = fresh_page(browser, book_url, path, "light")
    yield page
    context.close()


OVERFLOW_JS = """
(article) => {
  const box = document.querySelector(article).getBoundingClientRect();
  const scrolls = (el) => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const marked = (el) => el.closest('.full-width, .margin, aside, .sidebar, .zoomable');
  const out = [];
  for (const el of document.querySelectorAll(article + ' *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || marked(el)) continue;
    if (r.left >= box.left - 1 && r.right <= box.right + 1) continue;
    // inside its own scroll box (the box itself fits, or is the article): fine
    let parent = el.parentElement, contained = false;
    while (parent && parent !== document.querySelector(article).parentElement) {
      if (scrolls(parent)) { contained = true; break; }
      parent = parent.parentElement;
    }
    if (contained) continue;
    out.push(`<${el.tagName.toLowerCase()} class="${el.className && el.className.baseVal
      !== undefined ? el.className.baseVal : el.className}"> ${Math.round(r.width)} px wide, `
      + `from ${Math.round(r.left - box.left)} to ${Math.round(r.right - box.left)} px `
      + `(article: ${Math.round(box.width)} px): `
      + JSON.stringify((el.textContent || '').trim().slice(0, 60)));
  }
  return out;
}
"""

IMAGES_JS = """
(article) => [...document.querySelectorAll(article + ' img')].map(img => {
  const r = img.getBoundingClientRect();
  return {
    src: img.getAttribute('src') || '',
    alt: img.getAttribute('alt'),
    label: img.getAttribute('aria-label'),
    natural: img.naturalWidth,
    shown: r.width,
    visible: r.width > 0 && r.height > 0,
    marked: !!img.closest('.zoomable, .full-width'),
    widget: !!img.closest('.jupyter-widgets'),
  };
})
"""

SLIDERS_JS = """
(article) => [...document.querySelectorAll(
    article + ' input[type=range], ' + article + ' [role=slider]')].map(el => {
  const labelled = (el.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean)
    .map(id => document.getElementById(id)).filter(Boolean)
    .map(e => e.textContent.trim()).join(' ');
  const label = el.id ? document.querySelector(`label[for="${el.id}"]`) : null;
  return {
    html: el.outerHTML.slice(0, 120),
    name: (el.getAttribute('aria-label') || labelled || (label && label.textContent) ||
           el.getAttribute('title') || '').trim(),
  };
})
"""


CODE_JS = """
(article) => [...document.querySelectorAll(
    article + ' div.cell_input pre, ' + article + ' div.cell_output pre')]
  .filter(pre => pre.getBoundingClientRect().width > 0 && pre.scrollWidth > pre.clientWidth + 1)
  .map(pre => {
    const longest = pre.textContent.split('\\n')
      .reduce((a, b) => (b.length > a.length ? b : a), '');
    const kind = pre.closest('.cell_output') ? 'output' : 'code';
    return `${kind}, ${pre.scrollWidth} px in a ${pre.clientWidth} px box: ${longest.slice(0, 90)}`;
  })
"""


def is_default_alt(alt: str, src: str) -> bool:
    """MyST-NB's default alt text is the image's file name (a hash); so is any alt that is a
    hex digest or names the file."""
    alt = alt.strip()
    stem = Path(src).stem
    return bool(re.fullmatch(r"[0-9a-f]{16,}(\.\w+)?", alt)) or (stem and stem in alt)


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_code_cells_are_not_cut_off(opened, path):
    page = opened
    cut = page.evaluate(CODE_JS, ARTICLE)
    assert not cut, (
        f"{path}: {len(cut)} code cells or printed outputs are wider than their box, so the end "
        "of their longest line is hidden (wrap the code at 80 characters, print shorter "
        "lines):\n" + "\n".join(cut)
    )


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_nothing_overflows_the_article(opened, path):
    page = opened
    overflowing = page.evaluate(OVERFLOW_JS, ARTICLE)
    assert not overflowing, (
        f"{path}: {len(overflowing)} elements stick out of the article column and are not inside "
        "a scroll box (give them one, or make them fit):\n" + "\n".join(overflowing[:15])
    )


WIDER_THAN_THE_SCREEN_JS = """
(width) => {
  // the innermost elements whose box or content (a long word) reaches past the screen's edge,
  // unless a box that fits clips them; the theme's drawers and skip link are the page's width
  const past = (el) => el.getBoundingClientRect().left + Math.max(el.getBoundingClientRect().width,
    getComputedStyle(el).overflowX === 'visible' ? el.scrollWidth : 0) > width + 1;
  const clipped = (el) => {
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible' && a.getBoundingClientRect().right <= width + 1)
        return true;
    }
    return false;
  };
  const found = [...document.querySelectorAll('article.bd-article *')].filter(el =>
    el.getBoundingClientRect().width > 0 && past(el) && !clipped(el));
  return found.filter(el => !found.some(o => o !== el && el.contains(o))).slice(0, 10).map(el =>
    `<${el.tagName.toLowerCase()} class="${el.className}"> from ` +
    `${Math.round(el.getBoundingClientRect().left)} px, ${el.scrollWidth} px wide: ` +
    JSON.stringify((el.textContent || '').trim().slice(0, 100)));
}
"""


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_a_phone_shows_the_page_at_its_own_width(opened_on_a_phone, path):
    page = opened_on_a_phone
    screen = PHONE["viewport"]["width"]
    inner, scroll = page.evaluate(
        "() => [window.innerWidth, document.documentElement.scrollWidth]")
    wide = page.evaluate(WIDER_THAN_THE_SCREEN_JS, screen)
    assert inner == screen and scroll <= screen, (
        f"{path}: on a {screen} px phone the page is {inner} px wide (scrollWidth {scroll}): the "
        "reader can pan it sideways and the text is smaller. Wider than the screen:\n"
        + "\n".join(wide)
    )


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_figures_are_not_shrunk(opened, path):
    page = opened
    images = page.evaluate(IMAGES_JS, ARTICLE)
    shrunk = [
        f"{img['src']}: shown at {img['shown']:.0f} px of its {img['natural']} px "
        f"({img['shown'] / img['natural']:.0%})"
        for img in images
        if img["visible"] and img["natural"] > 0 and not img["marked"]
        and img["shown"] / img["natural"] < MIN_SCALE
    ]
    assert not shrunk, (
        f"{path}: figures shown below {MIN_SCALE:.0%} of their size, so their labels are too "
        "small to read (make the figure narrower, split it, or mark it zoomable):\n"
        + "\n".join(shrunk)
    )


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_formulas_are_not_tab_stops(opened, path):
    """A keyboard reader tabs from control to control: MathJax's formulas stay out of the Tab
    order (mathjax3_config in _config.yml; its menu can put them back)."""
    page = opened
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || "
                           "MathJax.startup.promise !== undefined", timeout=10_000)
    page.evaluate("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    stops = page.evaluate("() => [...document.querySelectorAll('mjx-container')]"
                          ".filter(m => m.tabIndex >= 0).length")
    assert stops == 0, f"{path}: {stops} formulas are Tab stops"


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_images_have_real_alt_text(opened, path):
    page = opened
    images = page.evaluate(IMAGES_JS, ARTICLE)
    missing = []
    for img in images:
        text = (img["alt"] or img["label"] or "").strip()
        if not text or is_default_alt(text, img["src"]) or len(text.split()) < MIN_ALT_WORDS:
            missing.append(f"{img['src']}: alt={img['alt']!r}")
    assert not missing, (
        f"{path}: {len(missing)} of {len(images)} images lack alt text that says what they show "
        "(set it in the code cell's metadata, mystnb: image: alt):\n" + "\n".join(missing)
    )


@pytest.mark.browser
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_sliders_have_names(opened, path):
    page = opened
    nameless = [s["html"] for s in page.evaluate(SLIDERS_JS, ARTICLE) if not s["name"]]
    assert not nameless, f"{path}: sliders without an accessible name: {nameless}"


AXE_JS = """
async (article) => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => {
      const el = document.querySelector(n.target[0]);
      return {target: n.target.join(' '), html: n.html.slice(0, 160),
              impact: n.impact, inArticle: !!(el && el.closest(article))};
    }),
  }));
}
"""


#: the colour modes a reader can choose with the theme's button (stored by the theme under
#: localStorage "mode" and applied before the page is drawn)
MODES = ("light", "dark")


@pytest.mark.browser
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", PAGE_PARAMS, scope="module")
def test_axe_finds_no_violation(opened, browser, book_url, path, mode):
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `make assets` (npm ci in web/)")
    context = None
    if mode == "light":
        page = opened
    else:
        context, page = fresh_page(browser, book_url, path, mode)
    try:
        shown = page.evaluate("() => document.documentElement.dataset.theme")
        assert shown == mode, f"{path}: asked the theme for {mode} mode, the page shows {shown!r}"
        if not page.evaluate("() => !!window.axe"):
            page.add_script_tag(path=str(AXE))
        violations = page.evaluate(AXE_JS, ARTICLE)
    finally:
        if context is not None:
            context.close()
    problems = []
    for violation in violations:
        for node in violation["nodes"]:
            where = "the page's content" if node["inArticle"] else "the theme"
            problems.append(f"[{violation['id']}, {node['impact'] or violation['impact']}, in "
                            f"{where}] {violation['help']}: {node['target']} {node['html']}")
    assert not problems, (
        f"{path} ({mode} mode): axe-core found {len(problems)} violations:\n"
        + "\n".join(problems[:20])
    )


@pytest.mark.browser
def test_the_favicon_is_served(page, book_url):
    open_page(page, book_url, PAGES[0])
    href = page.evaluate(
        "() => { const l = document.querySelector('link[rel~=icon]'); return l && l.href; }"
    )
    assert href, "the page names no favicon (html.favicon in _config.yml)"
    response = page.request.get(href)
    assert response.ok, f"the favicon {href} is not served: HTTP {response.status}"


#: what a cell printed to stderr, or a warning Python printed, in the built page
NOISE = re.compile(r'class="output stderr"|\b(User|Deprecation|Future|Runtime|Syntax)Warning\b')


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("chapters/")])
def test_no_warnings_or_stderr_in_outputs(require_build, path):
    """A reader sees no warning and no stderr stream in any output (fix the cause, do not hide
    it): the notebooks run clean."""
    require_build()
    html = (Path(__file__).resolve().parents[2] / "_build" / "html" / path).read_text()
    found = sorted({m.group(0) for m in NOISE.finditer(html)})
    assert not found, f"{path}: outputs show {found}"

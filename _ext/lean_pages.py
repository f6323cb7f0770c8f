"""Keep scripts that draw nothing out of the book's pages (the page-weight limit: 3 MB a page).

- The ipywidgets state. Chapter 07's explorer publishes one output with a widget view (for a live
  kernel) and a text/html version; the book shows the HTML (``nb_mime_priority_overrides``), so
  no widget view reaches a page, but MyST-NB still writes the notebook's saved widget state
  (176 KB on chapter 07) into it. A page with no widget view gets none. The widget manager
  itself (``embed-amd.js``, 3.6 MB) is not loaded at all: ``nb_ipywidgets_js`` is empty in
  _config.yml. tests/built_book/test_book.py fails if a widget view ever reaches a page again,
  since nothing would draw it.
- The theme's ``fontawesome.js`` (1.5 MB on every page), Font Awesome's SVG script "so that
  users can add custom icons" (pydata-sphinx-theme's words). The book adds none; the icons the
  theme shows are drawn by the webfont its stylesheet already loads.

tests/built_book/test_page_weight.py measures every chapter page as a browser loads it.
"""

import re
from pathlib import Path

WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
#: the theme's <script> tag for fontawesome.js (its ?digest= changes with the theme's version)
FONTAWESOME = re.compile(r'[ \t]*<script[^>]*src="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*>'
                         r"</script>\n?")


def _drop_widget_state(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts or WIDGET_VIEW in (context.get("body") or ""):
        return
    context["script_files"] = [
        s for s in scripts if getattr(s, "attributes", {}).get("type") != WIDGET_STATE]


def _drop_fontawesome(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        lean = FONTAWESOME.sub("", text)
        if lean != text:
            path.write_text(lean, encoding="utf-8")


def setup(app):
    app.connect("html-page-context", _drop_widget_state, priority=900)
    app.connect("build-finished", _drop_fontawesome)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

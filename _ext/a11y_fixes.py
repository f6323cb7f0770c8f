"""Two accessibility fixes to the HTML that the toolchain writes into every page's body.

Both are serious or critical violations for axe-core (tests/built_book/test_reading_comfort.py):

- docutils writes a reference list as ``<div role="list" class="citation-list">`` whose entries
  have ``role="doc-biblioentry"``; a list must contain list items (axe: aria-required-children,
  critical), so the entries become ``role="listitem"``;
- MyST-NB's ``hide-input`` toggle is ``<summary aria-label="Toggle hidden content">`` around the
  visible text "Show code cell source": an accessible name that does not contain the visible
  label (axe: label-content-name-mismatch, serious). Without the aria-label the name is the text.
"""

FIXES = (
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
)


def _fix(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if not body:
        return
    for old, new in FIXES:
        body = body.replace(old, new)
    context["body"] = body


def setup(app):
    app.connect("html-page-context", _fix)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

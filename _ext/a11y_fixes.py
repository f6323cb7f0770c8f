"""Accessibility fixes to the HTML that the toolchain writes into every page's body.

Each is a violation for axe-core (tests/built_book/test_reading_comfort.py, which allows none):

- docutils writes a reference list as ``<div role="list" class="citation-list">`` whose entries
  have ``role="doc-biblioentry"``; a list must contain list items (axe: aria-required-children,
  critical), so the entries become ``role="listitem"``;
- MyST-NB's ``hide-input`` toggle is ``<summary aria-label="Toggle hidden content">`` around the
  visible text "Show code cell source": an accessible name that does not contain the visible
  label (axe: label-content-name-mismatch, serious). Without the aria-label the name is the text;
- pandas writes a table's empty corner (above the index) as an empty header cell, ``<th></th>``
  or, from a ``Styler``, ``<th class="blank ...">&nbsp;</th>``, and a Markdown table with an
  empty first header gives ``<th class="head"><p></p></th>`` (axe: empty-table-header): a
  header that names nothing is a plain cell, ``<td>``.

The theme's own markup (search buttons, colour-mode button, the sidebar's logo) is mended by the
book's versions of those components in ``_templates/``.
"""

import re

#: an empty header cell, with or without attributes: pandas' corner and Styler blanks
EMPTY_HEADER = re.compile(r"<th((?:\s[^>]*)?)>(?:\s|&nbsp;|<p>\s*</p>)*</th>")

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
    context["body"] = EMPTY_HEADER.sub(r"<td\1></td>", body)


def setup(app):
    app.connect("html-page-context", _fix)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

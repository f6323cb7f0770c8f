"""Drop inline <script> blocks that appear twice on a page.

Sphinx 7.4 registers an inline script (``app.add_js_file(None, body=...)``) added after the builder
starts under two names, ``None`` and ``""``, so extensions that do this (sphinx-thebe,
sphinx-togglebutton) get their script emitted twice, and the second ``const THEBE_JS_URL`` is a
JavaScript error on every page. The browser test (tests/browser) catches it; this removes the copy.
"""


def _dedupe(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        attributes = getattr(script, "attributes", {})
        key = (getattr(script, "filename", script) or "", tuple(sorted(attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

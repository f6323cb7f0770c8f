"""Number exercises per chapter: "Exercise 5.2" is the second exercise of chapter 05.

Sphinx numbers enumerable nodes (sphinx-exercise's exercises are one) once for the whole book
when the table of contents is not numbered, so chapter 08's first exercise used to be "Exercise
21". After Sphinx has assigned its numbers, this renumbers the ``exercise`` kind in every page:
the chapter number from the file name (``chapters/05_heads_as_matmul`` -> 5), then 1, 2, 3 in
the order the exercises appear. Pages outside ``chapters/`` just count 1, 2, 3.
"""

import re


def _renumber(app, env):
    changed = []
    for docname, fignumbers in env.toc_fignumbers.items():
        numbers = fignumbers.get("exercise")
        if not numbers:
            continue
        match = re.match(r"chapters/(\d+)_", docname)
        chapter = (int(match.group(1)),) if match else ()
        in_order = sorted(numbers, key=numbers.get)  # the book-wide numbers keep page order
        fignumbers["exercise"] = {node_id: chapter + (n,) for n, node_id in enumerate(in_order, 1)}
        changed.append(docname)
    return changed


def setup(app):
    # after Sphinx's own numbering (TocTreeCollector, default priority 500)
    app.connect("env-get-updated", _renumber, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Write an nbgrader course directory from the chapters: one assignment per chapter.

Usage: python scripts/assignments.py COURSE_DIR [NOTEBOOK ...]   (default: chapters/*.ipynb)

COURSE_DIR gets ``nbgrader_config.py`` and ``source/<chapter>/<chapter>.ipynb`` for every
chapter (the preface too: it has a coding exercise). Each source notebook is the chapter with
its solutions taken out (``scripts/student_notebooks.py``) and turned into nbgrader cells:

- a coding exercise's starter cell becomes an autograded answer cell: its ``my_...`` functions,
  each body replaced by the chapter's solution between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` (nbgrader puts ``raise NotImplementedError()`` there in the release);
  its ``check(...)`` calls move to read-only test cells worth ``CHECK_POINTS`` each, which
  pass exactly when ``mha.exercises.check`` passes and print its report;
- every other exercise (a question, or an open experiment) is followed by a manually graded
  markdown answer cell worth ``QUESTION_POINTS`` (``EXPERIMENT_POINTS`` for an open
  experiment) that holds the chapter's model answer (the release shows "YOUR ANSWER HERE");
- every other cell is locked (read-only).

The assignments are generated, never kept in the repository: run ``make assignments``.
"""

import ast
import io
import json
import re
import sys
import tokenize
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from student_notebooks import (  # noqa: E402 (the sibling script, importable from anywhere)
    EXERCISE_BLOCK,
    ROOT,
    directive_options,
    solution_blocks,
    source,
    split_solutions,
    strip_solutions,
    write_notebook,
)

CHECK_POINTS = 2  # one autograded test cell per mha.exercises.check
QUESTION_POINTS = 1  # a written answer to a question
EXPERIMENT_POINTS = 2  # a written report of an open experiment
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
ANSWER_NOTE = ("*Model answer (the teacher's copy; students see an empty answer cell). "
               "Grade it by hand in the formgrader.*\n\n")

CONFIG = '''\
# nbgrader's configuration for the course written by scripts/assignments.py (make assignments)
c = get_config()  # noqa: F821 (nbgrader defines it)
c.CourseDirectory.course_id = "mha-book"
# a chapter trains small models: give a cell time (the book allows 120 s per cell)
c.Execute.timeout = 300
'''


def nbgrader_meta(grade_id, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return meta


def check_calls(tree):
    """[(statement, check name, function name)] for the top-level statements of ``tree`` that
    call ``check("name", fn)`` (``mha.exercises.check`` or an imported ``check``)."""
    found = []
    for statement in tree.body:
        for node in ast.walk(statement):
            if (isinstance(node, ast.Call) and len(node.args) >= 2
                    and (getattr(node.func, "attr", None) == "check"
                         or getattr(node.func, "id", None) == "check")
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and isinstance(node.args[1], ast.Name)):
                found.append((statement, node.args[0].value, node.args[1].id, node))
    return found


def functions(tree):
    return {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}


def is_stub(function):
    """Whether a function's body is only ``raise NotImplementedError(...)`` (a starter)."""
    body = [s for s in function.body
            if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return (len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None
            and "NotImplementedError" in ast.unparse(body[0].exc))


def header_end(text, function):
    """(line number (1-based), column) of the colon that ends ``function``'s signature."""
    depth = 0
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    for token in tokens:
        if token.start[0] < function.lineno:
            continue
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif token.type == tokenize.OP and token.string == ":" and depth == 0:
            return token.start
    raise ValueError(f"no end to the signature of {function.name}")


def body_lines(text, function):
    """The lines of ``function``'s body (comments included), without its common indent."""
    lines = text.split("\n")
    end, column = header_end(text, function)
    if lines[end - 1][column + 1:].split("#")[0].strip():
        raise ValueError(f"{function.name}: put the body on its own lines")
    body = lines[end:function.end_lineno]
    indent = min(len(line) - len(line.lstrip()) for line in body if line.strip())
    return [line[indent:] for line in body]


def solutions_by_check(cells, where):
    """{check name: (solution function, its body lines)} from a gated solution's code
    cells (``def solution_x(...)`` and ``assert check("name", solution_x).passed``)."""
    found = {}
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        text = source(cell)
        tree = ast.parse(text)
        defined = functions(tree)
        for _, name, fn, _ in check_calls(tree):
            if fn not in defined:
                raise ValueError(f"{where}: check({name!r}, {fn}) in a solution cell, but "
                                 f"{fn} is not defined in that cell")
            found[name] = (defined[fn], body_lines(text, defined[fn]))
    return found


def exercise_kind(label, title, blocks, regions, solved):
    if label in solved:
        return "code"
    if "open experiment" in title.lower():
        return "experiment"
    if label in regions and any(c["cell_type"] == "code" for c in regions[label]):
        return "experiment"
    return "question"


def model_answer(label, blocks, regions):
    if label in blocks:
        return blocks[label]
    parts = []
    for cell in regions.get(label, []):
        text = source(cell).strip("\n")
        parts.append(text if cell["cell_type"] == "markdown" else f"```python\n{text}\n```")
    return "\n\n".join(parts)


def answer_cell(label, kind, blocks, regions, cell_id):
    points = QUESTION_POINTS if kind == "question" else EXPERIMENT_POINTS
    text = ANSWER_NOTE + model_answer(label, blocks, regions)
    return {"cell_type": "markdown", "id": cell_id,
            "metadata": {"nbgrader": nbgrader_meta(f"answer-{label}", solution=True,
                                                   grade=True, points=points)},
            "source": text.splitlines(True)}


def split_markdown(cell, kinds, regions, blocks):
    """The markdown cell cut after every exercise that needs a written answer, with the
    answer cell after it (a list of cells)."""
    text, out, start, part = source(cell), [], 0, 0
    for match in EXERCISE_BLOCK.finditer(text):
        label = directive_options(match["body"])[0].get("label", "")
        if kinds.get(label, "code") == "code":
            continue
        piece = text[start:match.end()].strip("\n")
        if piece.strip():
            out.append({**cell, "id": f"{cell['id']}-{part}", "source": piece.splitlines(True)})
            part += 1
        out.append(answer_cell(label, kinds[label], blocks, regions, f"answer-{label}"))
        start = match.end()
    rest = text[start:].strip("\n")
    if rest.strip():
        out.append({**cell, "id": cell["id"] if not out else f"{cell['id']}-{part}",
                    "source": rest.splitlines(True)})
    return out


def coding_cells(cell, solved, where):
    """A starter cell as [answer cell, test cell, ...], or None if ``cell`` is no starter."""
    text = source(cell)
    try:
        tree = ast.parse(text)
    except SyntaxError:  # a cell with IPython magics is no starter
        return None
    defined = functions(tree)
    calls = [(s, name, fn, call) for s, name, fn, call in check_calls(tree)
             if fn in defined and is_stub(defined[fn])]
    if not calls:
        return None
    lines = text.split("\n")
    drop = set()
    for statement, *_ in calls:
        drop.update(range(statement.lineno, statement.end_lineno + 1))
    replace = {}  # line number of a stub's raise -> the solution body between the markers
    renames = {}
    for _, name, fn, _ in calls:
        if name not in solved:
            raise ValueError(f"{where}: starter {fn} is checked with {name!r}, but no gated "
                             f"solution ({{solution-start}} ... {{solution-end}}) checks it")
        solution = solved[name][0]
        renames[solution.name] = fn
        ours = [a.arg for a in defined[fn].args.args]
        theirs = [a.arg for a in solution.args.args]
        if ours != theirs:
            raise ValueError(f"{where}: {fn}{tuple(ours)} and {solution.name}{tuple(theirs)} "
                             f"take different arguments")
    for _, name, fn, _ in calls:
        stub = [s for s in defined[fn].body if isinstance(s, ast.Raise)][0]
        indent = " " * stub.col_offset
        body = [re.sub(r"\b(" + "|".join(map(re.escape, renames)) + r")\b",
                       lambda m: renames[m[1]], line) for line in solved[name][1]]
        replace[stub.lineno] = [indent + BEGIN] + [(indent + b).rstrip() for b in body] + \
            [indent + END]
        drop.update(range(stub.lineno + 1, stub.end_lineno + 1))
    out_lines = []
    for number, line in enumerate(lines, start=1):
        if number in replace:
            out_lines += replace[number]
        elif number not in drop:
            out_lines.append(line)
    answer = "\n".join(out_lines).strip("\n")
    label = "-".join(sorted({solved[name][2] for _, name, _, _ in calls}))
    cells = [{**cell, "metadata": {**cell["metadata"], "nbgrader": nbgrader_meta(
        f"answer-{label}", solution=True)}, "source": answer.splitlines(True)}]
    for _, name, fn, call in calls:
        test = (f"# Autograded ({CHECK_POINTS} points): passes exactly when the check passes.\n"
                f"result = {ast.unparse(call.func)}({json.dumps(name)}, {fn})\n"
                f"assert result.passed, \"\\n\".join(result.failures)")
        cells.append({"cell_type": "code", "id": f"check-{name}", "execution_count": None,
                      "metadata": {"nbgrader": nbgrader_meta(
                          f"check-{name}", grade=True, locked=True, points=CHECK_POINTS)},
                      "outputs": [], "source": test.splitlines(True)})
    return cells


def assignment(nb, where="notebook"):
    """The nbgrader source notebook of chapter ``nb`` (a new dict)."""
    _, regions = split_solutions(nb)
    blocks = solution_blocks(nb)
    solved, solved_labels = {}, set()
    for label, cells in regions.items():
        found = solutions_by_check(cells, f"{where}, solution of {label}")
        solved.update({name: (*value, label) for name, value in found.items()})
        if found:
            solved_labels.add(label)
    kinds = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for match in EXERCISE_BLOCK.finditer(source(cell)):
                label = directive_options(match["body"])[0].get("label", "")
                if not label:
                    raise ValueError(f"{where}: exercise {match['title']!r} has no :label:")
                kinds[label] = exercise_kind(label, match["title"], blocks, regions,
                                             solved_labels)
    cells, seen = [], set()
    for cell in strip_solutions(nb)["cells"]:
        if cell["cell_type"] == "markdown":
            new = split_markdown(cell, kinds, regions, blocks)
        else:
            new = coding_cells(cell, solved, where) or [cell]
            seen.update(c["id"] for c in new if c["id"].startswith("check-"))
        for c in new:
            if "nbgrader" not in c["metadata"]:
                c = {**c, "metadata": {**c["metadata"], "nbgrader": nbgrader_meta(
                    f"cell-{c['id']}", locked=True)}}
            cells.append(c)
    missing = sorted(f"check-{name}" for name in solved if f"check-{name}" not in seen)
    if missing:
        raise ValueError(f"{where}: no starter cell for the solved checks {missing}")
    answers = [c for c in cells if c["metadata"]["nbgrader"]["solution"]]
    if not answers:
        raise ValueError(f"{where}: no exercise to turn into an assignment")
    return {**nb, "cells": cells}


def points(nb):
    """{grade_id: points} of an assignment notebook's graded cells."""
    return {c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"]["points"]
            for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")}


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    course = Path(argv[0])
    paths = [Path(a) for a in argv[1:]] or sorted((ROOT / "chapters").glob("*.ipynb"))
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(CONFIG, "utf-8")
    for path in paths:
        nb = assignment(json.loads(path.read_text(encoding="utf-8")), path.name)
        folder = course / "source" / path.stem
        folder.mkdir(parents=True, exist_ok=True)
        write_notebook(nb, folder / path.name)
        graded = points(nb)
        auto = sum(p for g, p in graded.items() if g.startswith("check-"))
        print(f"{folder / path.name}: {len(graded)} graded cells, {sum(graded.values())} "
              f"points ({auto} autograded)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

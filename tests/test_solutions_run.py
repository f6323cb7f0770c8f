"""Every piece of code in an exercise or a solution runs.

Coding exercises keep their solutions in gated code cells (`{solution-start}` ... code cells ...
`{solution-end}`), which nbval executes with the rest of the notebook. Code written *inside* the
text of an exercise or a solution (a ```` ```python ```` fence in a markdown cell, such as the
starting point of an open experiment) is not a cell, so nbval never runs it: this test does. For
each chapter that has such fences it executes the chapter's code cells once, in a fresh kernel, and
then every fence in order, as a reader who pastes them at the end of the notebook would; a fence
that raises fails the test with the chapter, the fence and the error.

Code that is not meant to run (pseudo-code, an indented sketch) has no place in a solution: it must
be a complete ```` ```python ```` fence or prose. The first tests enforce that.
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = ROOT / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))
PYTHON = {"python", "py", "python3", "ipython", "ipython3", "{code-cell}", "{code-block}"}
FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                   re.MULTILINE | re.DOTALL)


def markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def code_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def fences(markdown: str, inside: str = "") -> list[tuple[str, str, str]]:
    """(info, body, directive) for every fence of a markdown text, nested ones included;
    ``directive`` is the innermost enclosing directive (``{solution}``, ...) or ''."""
    found = []
    for match in FENCE.finditer(markdown):
        info, body = match.group("info").strip(), match.group("body")
        found.append((info, body, inside))
        if info.startswith("{"):
            found.extend(fences(body, inside=info.split()[0]))
    return found


def python_snippets(path: Path) -> list[str]:
    """The code of every python fence in the chapter's markdown (exercise and solution text)."""
    return [
        body for cell in markdown_cells(path) for info, body, _ in fences(cell)
        if (info.split() or [""])[0] in PYTHON
    ]


def indented_code(markdown: str) -> list[str]:
    """Indented code blocks (four spaces after a blank line, not a list item's continuation) in the
    body of an exercise or a solution: code that looks runnable but is never run."""
    found = []
    for info, body, _ in fences(markdown):
        if not info.startswith(("{exercise}", "{solution}")):
            continue
        text = FENCE.sub("", body)  # nested fences are checked on their own
        for match in re.finditer(r"(?:^|\n)\s*\n((?: {4}|\t)\S[^\n]*)", text):
            before = text[:match.start()].rstrip().splitlines()
            if before and re.match(r"\s*([-*+]|\d+[.)])\s", before[-1]):
                continue  # the second paragraph of a list item
            found.append(match.group(1).strip())
    return found


SNIPPETS = {path.name: python_snippets(path) for path in NOTEBOOKS}


# --- the finder, on small strings ---------------------------------------------------------------

def test_the_finder_sees_fences_inside_solutions_and_indented_sketches():
    cell = "\n".join([
        "````{solution} ex-x", ":class: dropdown", "A start:", "", "```python", "x = 1", "```",
        "", "    y = 2", "", "- a list", "", "    continued", "````",
        "```{exercise} Title", ":label: ex-y", "Run `f()`.", "```",
    ])
    assert [(i, b) for i, b, _ in fences(cell) if i == "python"] == [("python", "x = 1\n")]
    assert [d for i, _, d in fences(cell) if i == "python"] == ["{solution}"]
    assert indented_code(cell) == ["y = 2"]


# --- the book ------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_code_in_solutions_that_cannot_run(path):
    sketches = [code for cell in markdown_cells(path) for code in indented_code(cell)]
    assert not sketches, (
        f"{path.name}: indented code in an exercise or solution is never executed; make it a "
        f"```python fence (this test runs those) or prose: {sketches}")
    other = [info for cell in markdown_cells(path) for info, _, d in fences(cell)
             if d in ("{exercise}", "{solution}") and info and info.split()[0] not in PYTHON
             and not info.startswith("{")]
    assert not other, f"{path.name}: code fences in solutions must be python: {other}"


def test_there_are_snippets_to_run():
    assert sum(len(s) for s in SNIPPETS.values()) >= 2, SNIPPETS


@pytest.mark.parametrize(
    "name", [name for name, snippets in SNIPPETS.items() if snippets])
def test_solution_snippets_run_after_the_chapter(name):
    """The chapter's code cells, then every python fence of its exercises and solutions."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is installed by requirements.txt")
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = CHAPTERS / name
    notebook = nbformat.v4.new_notebook()
    chapter = code_cells(path)
    notebook.cells = [nbformat.v4.new_code_cell(code) for code in chapter + SNIPPETS[name]]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(CHAPTERS)}})
    try:
        client.execute()
    except CellExecutionError as error:
        failed = next((i for i, c in enumerate(notebook.cells)
                       if any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
        where = ("the chapter's own code cell %d" % failed if failed is not None
                 and failed < len(chapter) else
                 "solution snippet %d:\n%s" % (failed - len(chapter) + 1, notebook.cells[failed].source)
                 if failed is not None else "an unknown cell")
        pytest.fail(f"{name}: {where}\n{error}", pytrace=False)

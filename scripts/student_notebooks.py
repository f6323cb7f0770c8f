"""Write copies of the chapters without exercise solutions, for an assessed lab.

Usage: python scripts/student_notebooks.py OUTPUT_DIR [NOTEBOOK ...]   (default: chapters/*.ipynb)

Removes every ```{solution} ...``` block from markdown cells (fenced with
three backticks or more), every cell from a ```{solution-start}``` marker to
its ```{solution-end}``` marker, inclusive, and every book-only code cell: a
cell tagged ``remove-cell`` is hidden on the website but runs in the
notebook, and these cells check the chapter's numbers, some of them the
answers to its exercises (``book_only``; the set-up cell that installs the
package stays). Outputs are cleared. Exercises, starter cells and
``mha_book.exercises.check`` calls stay, so students still get the automatic
checks. ``scripts/assignments.py`` (``make assignments``) builds on the same
functions; tests/assignments/test_course.py looks for every solution's lines
in every copy.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# a directive block: its opening fence (3 or more backticks) up to the closing fence of the
# same length, so that a ````{solution} block may hold a ```python block
SOLUTION_BLOCK = re.compile(
    r"^(?P<fence>`{3,})\{solution\}[ \t]*(?P<label>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.DOTALL | re.MULTILINE)
EXERCISE_BLOCK = re.compile(
    r"^(?P<fence>`{3,})\{exercise\}[ \t]*(?P<title>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$\n?",
    re.DOTALL | re.MULTILINE)


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def directive_options(body: str) -> tuple[dict, str]:
    """The ``:name: value`` option lines at the top of a directive's body, and the rest."""
    options, lines = {}, body.split("\n")
    while lines and re.match(r":[\w-]+:", lines[0]):
        name, _, value = lines.pop(0)[1:].partition(":")
        options[name] = value.strip()
    return options, "\n".join(lines).strip("\n")


def solution_blocks(nb: dict) -> dict:
    """{exercise label: the text of its ```{solution}``` block, options removed}."""
    blocks = {}
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for match in SOLUTION_BLOCK.finditer(source(cell)):
                blocks[match["label"].strip()] = directive_options(match["body"])[1]
    return blocks


def split_solutions(nb: dict) -> tuple[list, dict]:
    """The cells outside the gated solutions, and {label: the cells of its gated solution}.

    Markers can sit anywhere in a markdown cell, so each cell is scanned: text between a
    ``{solution-start} label`` block and the next ``{solution-end}`` block goes to the label's
    solution (as a markdown cell of its own), and so do whole cells in between. The cells
    kept are new dicts; ``nb`` is not changed."""
    cells, regions, label = [], {}, None
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            (regions[label] if label is not None else cells).append(cell)
            continue
        text, pos, kept = source(cell), 0, []
        while True:
            marker = "```{solution-end}" if label is not None else "```{solution-start}"
            found = text.find(marker, pos)
            piece = text[pos:] if found == -1 else text[pos:found]
            if label is None:
                kept.append(piece)
            elif piece.strip():
                regions[label].append({"cell_type": "markdown", "metadata": {},
                                       "source": piece.strip("\n")})
            if found == -1:
                break
            close = text.find("```", found + len(marker))  # the directive's closing fence
            if close == -1:
                raise ValueError(f"unclosed {marker[3:]} block in a markdown cell")
            if label is None:
                header = text[found + len(marker):close].split("\n")[0].strip()
                label = header or f"solution-{len(regions) + 1}"
                regions[label] = []
            else:
                label = None
            pos = close + 3
        kept_text = "".join(kept).strip("\n")
        if kept_text.strip():
            cells.append({**cell, "source": kept_text.splitlines(True)})
    if label is not None:
        raise ValueError("a {solution-start} has no matching {solution-end}")
    return cells, regions


def book_only(cell: dict) -> bool:
    """Whether ``cell`` is a book-only code cell: tagged ``remove-cell`` (the
    book's own checks and glued numbers), other than the set-up cell that
    installs the package."""
    tags = cell["metadata"].get("tags", [])
    return (cell["cell_type"] == "code" and "remove-cell" in tags
            and "pip install" not in source(cell))


def strip_solutions(nb: dict) -> dict:
    """The notebook without its solutions, its book-only cells and its
    outputs (a new dict; ``nb`` is not changed)."""
    cells = []
    for cell in split_solutions(nb)[0]:
        if cell["cell_type"] == "markdown":
            text = SOLUTION_BLOCK.sub("", source(cell)).strip("\n")
            if not text.strip():
                continue
            cell = {**cell, "source": text.splitlines(True)}
        elif book_only(cell):
            continue
        elif cell["cell_type"] == "code":
            cell = {**cell, "outputs": [], "execution_count": None}
        cells.append(cell)
    return {**nb, "cells": cells}


def write_notebook(nb: dict, path: Path) -> None:
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", "utf-8")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    paths = [Path(a) for a in argv[1:]] or sorted((ROOT / "chapters").glob("*.ipynb"))
    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        nb = strip_solutions(json.loads(path.read_text(encoding="utf-8")))
        write_notebook(nb, out / path.name)
        print(f"{out / path.name}: {len(nb['cells'])} cells, no solutions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

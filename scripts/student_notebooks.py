"""Write copies of the chapters without exercise solutions, for an assessed lab.

Usage: python scripts/student_notebooks.py OUTPUT_DIR [NOTEBOOK ...]   (default: chapters/*.ipynb)

Removes every ```{solution} ...``` block from markdown cells and every cell from a
```{solution-start}``` marker to its ```{solution-end}``` marker, inclusive. Exercises, starter
cells and ``mha.exercises.check`` calls stay, so students still get the automatic checks.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOLUTION_BLOCK = re.compile(r"```\{solution\}.*?\n```[ \t]*\n?", re.DOTALL)


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def strip_solutions(nb: dict) -> dict:
    """The notebook without its solutions (a new dict; ``nb`` is not changed). Markers can sit
    anywhere in a markdown cell, so each cell is scanned: text between a ``{solution-start}``
    block and the next ``{solution-end}`` block goes, and so do whole cells in between."""
    cells, inside = [], False
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            if not inside:
                cells.append(cell)
            continue
        text, pos, kept = source(cell), 0, []
        while True:
            marker = "```{solution-end}" if inside else "```{solution-start}"
            found = text.find(marker, pos)
            if found == -1:
                if not inside:
                    kept.append(text[pos:])
                break
            if not inside:
                kept.append(text[pos:found])
            close = text.find("```", found + len(marker))  # the directive's closing fence
            if close == -1:
                raise ValueError(f"unclosed {marker[3:]} block in a markdown cell")
            pos, inside = close + 3, not inside
        kept_text = SOLUTION_BLOCK.sub("", "".join(kept)).strip("\n")
        if kept_text.strip():
            cells.append({**cell, "source": kept_text.splitlines(True)})
    if inside:
        raise ValueError("a {solution-start} has no matching {solution-end}")
    return {**nb, "cells": cells}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    paths = [Path(a) for a in argv[1:]] or sorted((ROOT / "chapters").glob("*.ipynb"))
    out.mkdir(parents=True, exist_ok=True)
    for path in paths:
        nb = strip_solutions(json.loads(path.read_text(encoding="utf-8")))
        (out / path.name).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", "utf-8")
        print(f"{out / path.name}: {len(nb['cells'])} cells, no solutions")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

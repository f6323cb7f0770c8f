"""Normalise notebooks for committing: no outputs, python3 kernelspec, cell metadata limited to
tags and `mystnb` (alt text of figures),
stable cell ids.

Usage: python scripts/normalize_notebooks.py [--check] [NOTEBOOK ...]   (default: chapters/*.ipynb)
With --check nothing is written; the exit status is 1 if any notebook would change.
"""

import hashlib
import json
import sys
from pathlib import Path

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
ROOT = Path(__file__).resolve().parent.parent
KEPT_METADATA = ("tags", "mystnb")


def normalize(nb: dict) -> dict:
    nb["metadata"] = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    nb["nbformat"], nb["nbformat_minor"] = 4, 5
    seen = set()
    for index, cell in enumerate(nb["cells"]):
        # keep only the metadata the book reads: tags, and MyST-NB's (a figure's alt text)
        meta = cell.get("metadata", {})
        cell["metadata"] = {key: meta[key] for key in KEPT_METADATA if meta.get(key)}
        if cell["cell_type"] == "code":
            cell["outputs"], cell["execution_count"] = [], None
        cell.pop("attachments", None) if not cell.get("attachments") else None
        cell_id = cell.get("id")
        if not cell_id or cell_id in seen:
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            cell_id = hashlib.sha1(f"{index}:{source}".encode()).hexdigest()[:8]
        seen.add(cell_id)
        cell["id"] = cell_id
    return nb


def dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    paths = [Path(a) for a in argv if a != "--check"] or sorted((ROOT / "chapters").glob("*.ipynb"))
    changed = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        new = dump(normalize(json.loads(text)))
        if new != text:
            changed.append(str(path))
            if not check:
                path.write_text(new, encoding="utf-8")
    for path in changed:
        print(("would change: " if check else "normalised: ") + path)
    return 1 if (check and changed) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

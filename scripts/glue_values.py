"""Execute every chapter and write every glued value (name -> text/plain) as JSON.

    python scripts/glue_values.py OUT.json [--jobs 2]
    python scripts/glue_values.py --compare BEFORE.json AFTER.json

MyST-NB's glue leaves, in the executed notebook, an output whose metadata names the value
(``scrapbook.name``); its ``text/plain`` is what ``{glue:text}`` formats. Comparing two such
files (before and after a change) shows whether any number a reader sees moved.
"""
import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def _run(path):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    values = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            name = out.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                values[name] = out.get("data", {}).get("text/plain")
    return path.name, values


def compare(before, after):
    """Print every value that differs; returns the number of differences."""
    a, b = (json.loads(Path(p).read_text()) for p in (before, after))
    flat_a = {(ch, k): v for ch, vs in a.items() for k, v in vs.items()}
    flat_b = {(ch, k): v for ch, vs in b.items() for k, v in vs.items()}
    diff = sorted(k for k in flat_a.keys() | flat_b.keys() if flat_a.get(k) != flat_b.get(k))
    for key in diff:
        print(f"{key[0]} {key[1]}: {flat_a.get(key)!r} -> {flat_b.get(key)!r}")
    print(f"{len(flat_a)} values before, {len(flat_b)} after, {len(diff)} differ")
    return len(diff)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--root", default=str(ROOT))
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        return 1 if compare(*args.compare) else 0
    if not args.out:
        parser.error("give OUT.json, or --compare BEFORE AFTER")
    paths = sorted(Path(args.root, "chapters").glob("*.ipynb"))
    with ProcessPoolExecutor(args.jobs) as pool:
        results = dict(pool.map(_run, paths))
    Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True))
    print(sum(map(len, results.values())), "glued values in", len(results), "chapters")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run the front end's ES modules (mha/static/src/, mha_book/static/src/) in Node.js, for the
parity tests: the page's JavaScript and the package's Python on the same inputs.

Without Node.js (or without the front end's npm tools, for the bundle and lint checks) a test
skips with the reason, except in CI (CI=true), where it fails: CI has both.
"""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "mha" / "static" / "src"
BOOK = ROOT / "mha_book" / "static" / "src"
FRONTEND = ROOT / "frontend"
NODE = shutil.which("node")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def unavailable(reason):
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: CI has Node.js and runs `make frontend-deps`)")
    pytest.skip(reason)


def need_node():
    if NODE is None:
        unavailable("needs Node.js to run the front end's modules")
    return NODE


def need_tools():
    """Node.js and the front end's npm tools (frontend/node_modules: `make frontend-deps`)."""
    need_node()
    if not (FRONTEND / "node_modules" / "esbuild").is_dir():
        unavailable("needs the front end's npm tools: run `make frontend-deps` (npm ci in "
                    "frontend/)")


def run_modules(tmp_path, imports, body, data=None, timeout=120):
    """Run ``body`` (JavaScript that ends by printing one JSON value with ``emit(value)`` (or console.log of its JSON)) in an
    ES module importing ``imports`` ({local name: path of a module}: ``import * as name``);
    ``data`` (JSON-able) is ``data`` in the body. Returns the printed value."""
    need_node()
    lines = [f"import * as {name} from {json.dumps(Path(path).resolve().as_uri())};"
             for name, path in imports.items()]
    lines.append('import { readFileSync } from "node:fs";')
    if data is not None:
        file = tmp_path / "data.json"
        file.write_text(json.dumps(data))
        lines.append(f"const data = JSON.parse(readFileSync({json.dumps(str(file))}, 'utf8'));")
    lines.append("const emit = (v) => process.stdout.write(JSON.stringify(v));")
    script = tmp_path / "harness.mjs"
    script.write_text("\n".join(lines) + "\n" + body + "\n")
    done = subprocess.run([NODE, str(script)], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)

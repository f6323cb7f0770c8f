"""The boundary between the attention library (``mha``) and the book's package (``mha_book``).

``mha`` needs only torch: ``import mha`` (and every submodule but the figures' ``mha.viz``) loads
no book module and none of matplotlib, seaborn, ipywidgets, pandas, tqdm, anywidget. The book's
package imports ``mha``; ``mha`` never imports the book's package (also checked by import-linter
in ``make lint``, ``[tool.importlinter]`` in pyproject.toml).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("matplotlib", "seaborn", "ipywidgets", "pandas", "tqdm", "anywidget")

SCRIPT = f"""
import importlib, pkgutil, sys
for name in {HEAVY!r}:
    sys.modules[name] = None  # importing any of them now fails
import torch, mha
layer = mha.MultiHeadAttention(16, 4)
out, w = layer(torch.randn(1, 3, 16), need_weights=True)
assert out.shape == (1, 3, 16) and w.shape == (1, 4, 3, 3)
with mha.record_attention(layer) as weights:
    layer(torch.randn(1, 3, 16))
assert weights["MultiHeadAttention"].shape == (1, 4, 3, 3)
for info in pkgutil.walk_packages(mha.__path__, "mha."):
    if info.name != "mha.viz":
        importlib.import_module(info.name)
loaded = sorted(m for m in sys.modules
                if m.split(".")[0] in ("mha_book",) + {HEAVY!r} and sys.modules[m] is not None)
print("loaded:", loaded)
try:
    mha.viz.plot_heads(torch.rand(2, 3, 3))
except ImportError as error:
    print("viz needs:", error.name)
print("ok", mha.__version__)
"""


def test_import_mha_needs_only_torch():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                            timeout=120, check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert "ok 0.1.0" in result.stdout
    assert "loaded: []" in result.stdout, result.stdout  # no book module, no figure library
    assert "viz needs: matplotlib" in result.stdout  # figures fail only when asked for


def _imported(path):
    """Every module name a file imports (at any depth, relative ones made absolute)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = node.module if not node.level else ".".join(
                base + ([node.module] if node.module else []))
            yield module
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.startswith("mha_book")):
            yield node.value  # importlib.import_module("mha_book...") and the like


@pytest.mark.parametrize("path", sorted((ROOT / "mha").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_library_never_imports_the_book(path):
    book = [m for m in _imported(path) if m.split(".")[0] == "mha_book"]
    assert not book, f"{path.relative_to(ROOT)} imports the book's package: {book}"


def test_lazy_submodules_and_exports():
    import mha
    import mha_book

    assert mha.viz.__name__ == "mha.viz" and mha_book.exercises.__name__ == "mha_book.exercises"
    assert {"MultiHeadAttention", "record_attention", "convert_mask"} <= set(mha.__all__)
    with pytest.raises(AttributeError, match="no attribute 'not_a_module'"):
        mha.not_a_module  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'not_a_module'"):
        mha_book.not_a_module  # noqa: B018
    assert not hasattr(mha, "load_language_model")  # the book's model lives in the book
    assert mha_book.load_language_model().num_layers >= 1

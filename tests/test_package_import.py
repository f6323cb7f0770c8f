import subprocess
import sys

import pytest

SCRIPT = """
import sys
for name in ("matplotlib", "seaborn", "ipywidgets", "tqdm", "anywidget"):
    sys.modules[name] = None  # importing any of them now fails
import torch, mha
layer = mha.MultiHeadAttention(16, 4)
out, w = layer(torch.randn(1, 3, 16), need_weights=True)
assert out.shape == (1, 3, 16) and w.shape == (1, 4, 3, 3)
with mha.record_attention(layer) as weights:
    layer(torch.randn(1, 3, 16))
assert weights["MultiHeadAttention"].shape == (1, 4, 3, 3)
try:
    mha.viz.plot_heads(torch.rand(2, 3, 3))
except ImportError as error:
    print("viz needs:", error.name)
print("ok", mha.__version__)
"""


def test_import_mha_needs_only_torch():
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    assert "ok 0.1.0" in result.stdout
    assert "viz needs: matplotlib" in result.stdout  # figures fail only when asked for


def test_lazy_submodules_and_exports():
    import mha

    assert mha.viz.__name__ == "mha.viz" and mha.exercises.__name__ == "mha.exercises"
    assert {"MultiHeadAttention", "record_attention", "convert_mask"} <= set(mha.__all__)
    with pytest.raises(AttributeError, match="no attribute 'not_a_module'"):
        mha.not_a_module  # noqa: B018

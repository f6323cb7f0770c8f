import json

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

import mha


def _heatmaps(fig):
    return [ax for ax in fig.axes if ax.collections and ax.get_label() != "<colorbar>"]


def test_plot_heads_grid_shared_scale_and_labels():
    before = plt.get_fignums()
    w = torch.softmax(torch.randn(6, 4, 5), -1)
    fig = mha.viz.plot_heads(w, list("abcd"), list("ABCDE"), title="layer 0")
    assert isinstance(fig, Figure)
    maps = _heatmaps(fig)
    assert len(maps) == 6
    assert [ax.get_title() for ax in maps] == [f"head {h}" for h in range(6)]
    norms = [(ax.collections[0].norm.vmin, ax.collections[0].norm.vmax) for ax in maps]
    assert norms == [(0.0, pytest.approx(float(w.max())))] * 6
    assert sum(ax.get_label() == "<colorbar>" for ax in fig.axes) == 1
    ax = maps[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key", "query")
    assert [t.get_text() for t in ax.get_xticklabels()] == list("ABCDE")
    assert [t.get_text() for t in ax.get_yticklabels()] == list("abcd")
    assert plt.get_fignums() == before  # not left in pyplot: shown once as a cell's value


def test_plot_heads_single_matrix_numpy_and_vmax():
    fig = mha.viz.plot_heads(np.eye(3), vmax=0.5, head_labels=["only"], cmap="rocket")
    (ax,) = _heatmaps(fig)
    assert ax.get_title() == "only" and ax.collections[0].norm.vmax == 0.5


def test_plot_layers_rows_are_layers():
    w = {"layer 0": torch.rand(3, 4, 4), "layer 1": torch.rand(1, 3, 4, 4)}
    fig = mha.viz.plot_layers(w, list("abcd"), list("abcd"))
    maps = _heatmaps(fig)
    assert len(maps) == 6
    assert maps[4].get_title() == "layer 1, head 1"
    vmax = max(float(v.max()) for v in w.values())
    assert [ax.collections[0].norm.vmax for ax in maps] == [pytest.approx(vmax)] * 6


def test_viz_bad_input():
    with pytest.raises(ValueError, match="key_tokens has 2 tokens but the weights have 5"):
        mha.viz.plot_heads(torch.rand(2, 4, 5), key_tokens=["a", "b"])
    with pytest.raises(ValueError, match=r"shape \(Lq, Lk\), \(H, Lq, Lk\).*got shape \(2, 2, 4, 5\)"):
        mha.viz.plot_heads(torch.rand(2, 2, 4, 5))


def test_figure_displays_exactly_once_in_a_notebook(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import torch, mha\nmha.viz.plot_heads(torch.rand(2, 3, 3), list('abc'), list('abc'))"
    )]
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) == 1, json.dumps(outputs)[:500]

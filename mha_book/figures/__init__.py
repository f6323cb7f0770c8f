"""The book's live figures, one module per idea (drawn by ``mha.live``'s front end).

A figure is shown by calling its function in a cell, e.g. ``mha_book.figures.dk_softmax()``: one
HTML output that works in the built book without a kernel and in every Jupyter front end.
Chapter 07's explorer, which also has Jupyter controls that recompute with Python, is
``mha_book.widgets.explorer``.

The figures with an in-page compute (the explorer, chapter 05's split-heads, the Shakespeare
model) need the book's own bundle of the front end, ``mha_book/static/book.js`` (built from
``mha_book/static/src/`` by frontend/build.mjs): it is registered with ``mha.live`` here, so
such a figure's HTML carries it before the engine's.
"""

from pathlib import Path as _Path

from mha.live import bundles as _bundles

from .batched_heads import fold_valid_lens, split_explorer  # noqa: F401
from .blockwise_softmax import online_softmax  # noqa: F401
from .head_removal import head_switches  # noqa: F401
from .head_width import heads_at_fixed_width  # noqa: F401
from .kv_cache import decode_steps, kv_cache_size  # noqa: F401
from .modern_layers import kv_bytes, window_sink  # noqa: F401
from .one_big_head import one_vs_many  # noqa: F401
from .projections import shared_vs_separate  # noqa: F401
from .rope import rope_rotation  # noqa: F401
from .scaled_scores import dk_softmax, mask_builder  # noqa: F401
from .shakespeare_heads import text_heads  # noqa: F401 (the Shakespeare model)
from .temperature import temperature_bars  # noqa: F401
from .trained_heads import trained_head_lines  # noqa: F401

#: the in-page computes of the book's bundle (mha_book/static/src/main.js registers them)
COMPUTES = ("explorer", "split-heads", "text-heads")
BUNDLE = _bundles.register("mha_book", _Path(__file__).resolve().parents[1] / "static" / "book.js",
                           computes=COMPUTES)


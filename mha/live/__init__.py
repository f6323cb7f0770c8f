"""The book's live figures (``mha/static/live/`` draws them; ``mha.live.figure`` declares them).

A figure is shown by calling its function in a cell, e.g. ``mha.live.dk_softmax()``: one HTML
output that works in the built book without a kernel and in every Jupyter front end. One line per
chapter below (CONTRIBUTING.md: "How to add a live figure"). Chapter 07's explorer, which also
has Jupyter controls that recompute with Python, is ``mha.widgets.explorer``.
"""

from .ch01 import temperature_bars  # noqa: F401
from .ch02 import dk_softmax, mask_builder  # noqa: F401
from .ch03 import shared_vs_separate  # noqa: F401
from .ch04 import heads_at_fixed_width  # noqa: F401
from .ch05 import fold_valid_lens, split_explorer  # noqa: F401
from .ch06 import one_vs_many  # noqa: F401
from .ch08 import trained_head_lines  # noqa: F401
from .ch09 import head_switches  # noqa: F401
from .ch11 import decode_steps, kv_cache_size  # noqa: F401
from .ch12 import rope_rotation  # noqa: F401
from .ch13 import online_softmax  # noqa: F401
from .ch14 import kv_bytes, window_sink  # noqa: F401
from .text import text_heads  # noqa: F401 (the Shakespeare model)

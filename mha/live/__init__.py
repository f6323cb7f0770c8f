"""The book's live figures (``mha/static/live.js`` draws them; ``mha.live.figure`` declares them).

A figure is shown by calling its function in a cell, e.g. ``mha.live.dk_softmax()``: one HTML
output that works in the built book without a kernel and in every Jupyter front end. One line per
chapter below (CONTRIBUTING.md: "How to add a live figure").
"""

from .ch02 import dk_softmax, mask_builder  # noqa: F401
from .ch03 import shared_vs_separate  # noqa: F401
from .ch04 import heads_at_fixed_width  # noqa: F401
from .ch05 import fold_valid_lens, split_explorer  # noqa: F401
from .ch06 import one_vs_many  # noqa: F401

"""Absolute position encodings added to the token embeddings.

Shape legend: L positions, D d_model (see ``mha.functional``). Rotary embeddings
(``mha.rotary``) and relative positions (``mha.relative``) act inside the layer
instead.
"""

import torch

from . import _checks

__all__ = ["sinusoidal_positions"]


def sinusoidal_positions(length, d_model, *, device=None):
    """The Transformer's fixed position encoding (L, D): PE[m, 2i] = sin(m / 10000^(2i/D)),
    PE[m, 2i+1] = cos(m / 10000^(2i/D))."""
    _checks.check_int("length", length, minimum=0)
    _checks.check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even (sine and cosine pairs); got {d_model}")
    device = _checks.check_device_arg("device", device)
    m = torch.arange(length, device=device, dtype=torch.float32)[:, None]  # (L, 1)
    freq = 10000.0 ** (-torch.arange(0, d_model, 2, device=device) / d_model)  # (D/2,)
    pe = torch.zeros(length, d_model, device=device)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(m * freq), torch.cos(m * freq)  # (L, D/2) each
    return pe

"""Pick the best available device: CUDA, then Apple's MPS, then the CPU."""

import torch


def device() -> torch.device:
    """Return ``cuda`` if a CUDA GPU is present, else ``mps`` on Apple silicon, else ``cpu``."""
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")

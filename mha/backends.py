"""What a call runs and what it costs: the kernel ``F.scaled_dot_product_attention`` dispatched
to, and the peak memory the call's tensors took.

Both watch the call as it runs, so they report what actually happened on this machine, not what
the dispatcher's rules say should happen.
"""

import contextlib
import os
import sys
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["peak_memory", "sdpa_backend"]

# the aten operator each SDPA backend runs, and the name the book gives it
SDPA_KERNELS = {
    "aten::_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "aten::_scaled_dot_product_flash_attention": "flash",
    "aten::_scaled_dot_product_efficient_attention": "memory-efficient",
    "aten::_scaled_dot_product_cudnn_attention": "cuDNN",
    "aten::_scaled_dot_product_fused_attention_overrideable": "overrideable (XPU, HPU, ...)",
    "aten::_scaled_dot_product_attention_math_for_mps": "math (MPS)",
    "aten::_scaled_dot_product_attention_math": "math",
}


def _check_callable(fn):
    if not callable(fn):
        raise TypeError(f"fn must be callable (a function or a module); got {type(fn).__name__}")


@contextlib.contextmanager
def _quiet_native_stderr():
    """Send what C++ code writes to file descriptor 2 to /dev/null for a moment: the profiler's
    library logs every start and stop there, and a notebook would show it. Python's own
    ``sys.stderr`` (warnings, tracebacks) is not touched in a notebook, where it is not fd 2."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no usable fd 2: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            try:
                yield
            finally:
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def _op_names(fn, args, kwargs):
    """The names of the operators ``fn`` called, in the order they started."""
    try:  # the autograd profiler without kineto starts in milliseconds; kineto takes seconds
        profiler = torch.autograd.profiler.profile(use_kineto=False)
    except (TypeError, RuntimeError):  # a torch without the legacy profiler
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU])
    with _quiet_native_stderr(), profiler:
        fn(*args, **kwargs)
    events = profiler.function_events if hasattr(profiler, "function_events") else profiler.events()
    return [e.name for e in sorted(events, key=lambda e: e.time_range.start)]


def sdpa_backend(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)`` once under the profiler and name the SDPA kernel it ran.

    ``fn`` is anything that calls ``torch.nn.functional.scaled_dot_product_attention``: the
    function itself (``sdpa_backend(F.scaled_dot_product_attention, q, k, v, is_causal=True)``)
    or a layer (``sdpa_backend(layer, x)``). Returns one of "flash", "memory-efficient",
    "cuDNN", "math", "flash (CPU)", "math (MPS)", "overrideable (XPU, HPU, ...)", several
    joined by " + " in the order they first ran, or "none" when no SDPA kernel ran. The call
    runs under the caller's autograd mode (the choice can depend on it).
    """
    _check_callable(fn)
    found = []
    for op in _op_names(fn, args, kwargs):
        name = SDPA_KERNELS.get(op)
        if name is not None and name not in found:
            found.append(name)
    return " + ".join(found) if found else "none"


class _LiveTensorBytes(TorchDispatchMode):
    """Counts the bytes of every tensor storage an operator returns while it stays alive."""

    def __init__(self):
        super().__init__()
        self.live, self.peak, self._alive = 0, 0, {}

    def _freed(self, key):
        self.live -= self._alive.pop(key)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if not isinstance(tensor, torch.Tensor):
                continue
            storage = tensor.untyped_storage()
            key = (storage.device, storage.data_ptr())
            if storage.nbytes() == 0 or key in self._alive:
                continue  # empty, or a view of a storage already counted
            self._alive[key] = storage.nbytes()
            self.live += storage.nbytes()
            self.peak = max(self.peak, self.live)
            weakref.finalize(storage, self._freed, key)
        return out


def peak_memory(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)``; return ``(result, peak_bytes)``, the most tensor memory the
    call held at one time on top of what was allocated before it.

    On CUDA (when a tensor argument or a parameter of ``fn`` lives there) this is
    ``torch.cuda.max_memory_allocated()`` minus the memory allocated at the start: everything,
    the kernels' workspaces included. Elsewhere (CPU, MPS) every tensor an operator returns is
    counted from its creation until it is freed: outputs and intermediates, but not the scratch
    space a kernel allocates and frees inside itself (a few small blocks per thread for the CPU
    flash kernel).
    """
    _check_callable(fn)
    tensors = [x for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
    if isinstance(fn, torch.nn.Module):
        tensors += list(fn.parameters())
    cuda = next((x.device for x in tensors if x.device.type == "cuda"), None)
    if cuda is not None:
        torch.cuda.synchronize(cuda)
        torch.cuda.reset_peak_memory_stats(cuda)
        start = torch.cuda.memory_allocated(cuda)
        result = fn(*args, **kwargs)
        torch.cuda.synchronize(cuda)
        return result, torch.cuda.max_memory_allocated(cuda) - start
    with _LiveTensorBytes() as counter:
        result = fn(*args, **kwargs)
    return result, counter.peak

"""What a call runs and what it costs: the kernel ``F.scaled_dot_product_attention`` dispatched
to, and the peak memory the call's tensors took.

Both watch the call as it runs, so they report what actually happened on this machine, not what
the dispatcher's rules say should happen.
"""

import contextlib
import os
import sys

import torch
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
    _, events = _profiled(fn, args, kwargs)
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


def _profiled(fn, args, kwargs, **options):
    """(result, profiler) of one call of ``fn`` under the autograd profiler, quietly."""
    try:  # the autograd profiler without kineto starts in milliseconds; kineto takes seconds
        profiler = torch.autograd.profiler.profile(use_kineto=False, **options)
    except (TypeError, RuntimeError):  # a torch without the legacy profiler
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                          **options)
    with _quiet_native_stderr(), profiler:
        result = fn(*args, **kwargs)
    events = profiler.function_events if hasattr(profiler, "function_events") else profiler.events()
    return result, events


def _peak_from_events(events):
    """The peak of the running sum of the allocations (+) and frees (-) the profiler recorded.

    Each operator's own (self) allocations are counted at its start and its own frees at its end;
    frees outside any operator ("[memory]" events) when they happen.
    """
    changes = []
    for event in events:
        size = event.self_cpu_memory_usage
        if size > 0:
            changes.append((event.time_range.start, size))
        elif size < 0:
            changes.append((event.time_range.end, size))
    live = peak = 0
    for _, size in sorted(changes, key=lambda change: (change[0], change[1] < 0)):
        live += size
        peak = max(peak, live)
    return peak


def peak_memory(fn, *args, **kwargs):
    """Run ``fn(*args, **kwargs)``; return ``(result, peak_bytes)``, the most tensor memory the
    call held at one time on top of what was allocated before it.

    On CUDA (when a tensor argument or a parameter of ``fn`` lives there) this is
    ``torch.cuda.max_memory_allocated()`` minus the memory allocated at the start: everything,
    the kernels' workspaces included. On the CPU the profiler records every allocation and free
    of PyTorch's CPU allocator (``profile_memory=True``), operator by operator; an operator's own
    allocations count from its start and its own frees until its end, so the peak is exact to
    within one operator's temporaries (a kernel's scratch space counts in full).
    """
    _check_callable(fn)
    tensors = [x for x in tree_leaves((args, kwargs)) if isinstance(x, torch.Tensor)]
    if isinstance(fn, torch.nn.Module):
        tensors += list(fn.parameters())
    others = sorted({x.device.type for x in tensors} - {"cpu", "cuda"})
    if others:
        raise ValueError(
            f"peak_memory measures CPU and CUDA memory; got tensors on {', '.join(others)} "
            f"(PyTorch has no peak-memory counter there): measure on the CPU instead"
        )
    cuda = next((x.device for x in tensors if x.device.type == "cuda"), None)
    if cuda is not None:
        torch.cuda.synchronize(cuda)
        torch.cuda.reset_peak_memory_stats(cuda)
        start = torch.cuda.memory_allocated(cuda)
        result = fn(*args, **kwargs)
        torch.cuda.synchronize(cuda)
        return result, torch.cuda.max_memory_allocated(cuda) - start
    result, events = _profiled(fn, args, kwargs, profile_memory=True)
    return result, _peak_from_events(events)

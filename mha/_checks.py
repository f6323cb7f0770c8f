"""Argument checks: bad input fails at once with a message naming the argument, the value received
and what was expected (never a bare shape error from deep inside a matmul, never a silent wrong
answer).

Every public function and class of the package calls these first and then a small function that
does only the maths (``functional._attention``, ``functional._split_heads``, ...). The checks
read shapes, dtypes and devices only (no pass over the data), except ``valid_lens`` (one
``min()``), so they cost microseconds.

Shapes: B batch, H heads, Lq/Lk query/key lengths, D d_model (see ``mha.functional``).
"""

import math
import operator

import torch


def _same_device(a, b):
    """Whether devices ``a`` and ``b`` (torch.device or str) are one: "cuda" matches "cuda:0"."""
    a, b = torch.device(a), torch.device(b)
    return a.type == b.type and (a.index is None or b.index is None or a.index == b.index)


def _shape(x):
    return tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__


def _kind(value):
    """``value`` as a message shows it: repr plus its type, e.g. ``'01' (str)``."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({type(value).__name__})"


# --- plain Python arguments ------------------------------------------------------------------


def check_int(name, value, *, minimum=None):
    """An int (numpy and 0-d integer tensors accepted; bool and float rejected): returns it."""
    if isinstance(value, bool) or (isinstance(value, torch.Tensor) and value.dtype == torch.bool):
        raise TypeError(f"{name} must be an int; got {_kind(value)}")
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int; got {_kind(value)}") from None
    if minimum is not None and number < minimum:
        what = "a positive int" if minimum == 1 else f">= {minimum}"
        raise ValueError(f"{name} must be {what}; got {number}")
    return number


def check_positive_int(name, value):
    """A positive int (see ``check_int``): returns it."""
    return check_int(name, value, minimum=1)


def check_bool(name, value):
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool; got {_kind(value)}")
    return value


def check_real(name, value):
    """A finite real number (int or float, numpy scalars included; not bool): returns a float."""
    if isinstance(value, bool) or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number; got {_kind(value)}")
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{name} must be a number; got {_kind(value)}") from None
    if isinstance(value, torch.Tensor) and value.numel() != 1:
        raise TypeError(f"{name} must be a number; got a tensor of shape {_shape(value)}")
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number; got {number}")
    return number


def check_probability(name, value):
    """A dropout probability in [0, 1): returns it as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not _is_numpy_real(value):
        raise TypeError(f"{name} must be a probability in [0, 1) (a float); got {_kind(value)}")
    if not 0 <= value < 1:
        raise ValueError(f"{name} must be a probability in [0, 1); got {value!r}")
    return float(value)


def _is_numpy_real(value):
    module = type(value).__module__
    return module == "numpy" and hasattr(value, "dtype") and value.dtype.kind in "iuf"


def check_choice(name, value, choices):
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}; got {_kind(value)}")
    return value


def check_device_arg(name, value):
    """None, a str or a torch.device that torch understands: returns it."""
    if value is None:
        return value
    if isinstance(value, torch.device):
        check_device_available(name, value, value)
        return value
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise TypeError(f"{name} must be None, a str or a torch.device; got {_kind(value)}")
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError):
        raise ValueError(f"{name} must name a device such as 'cpu' or 'cuda'; got {value!r}") from None
    check_device_available(name, value, device)
    return device


def available_devices():
    """The device types this machine can use: always 'cpu', then 'cuda' and 'mps' if present."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found.append(f"cuda (devices 0 to {torch.cuda.device_count() - 1})")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append("mps")
    return found


def check_device_available(name, value, device):
    """A cuda or mps ``device`` must exist on this machine: torch itself would fail later with a
    bare AssertionError ('Torch not compiled with CUDA enabled') or a dispatcher error."""
    if device.type == "cuda":
        ok = torch.cuda.is_available() and (device.index is None
                                            or device.index < torch.cuda.device_count())
    elif device.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        ok = mps is not None and mps.is_available()
    else:
        return
    if not ok:
        what = {"cuda": "a CUDA GPU", "mps": "Apple's MPS"}[device.type]
        raise ValueError(
            f"{name}={value!r} asks for {what}, which this machine does not have (available: "
            f"{', '.join(available_devices())}); pass {name}=mha.device() to use the best "
            f"device this machine has"
        )


def check_dtype_arg(name, value):
    """None or a floating-point torch.dtype."""
    if value is None:
        return value
    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be None or a torch.dtype such as torch.float32; "
                        f"got {_kind(value)}")
    if not value.is_floating_point:
        raise TypeError(f"{name} must be a floating-point dtype; got {value}")
    return value


# --- tensors ---------------------------------------------------------------------------------


def check_tensor(name, x):
    if not isinstance(x, torch.Tensor):
        hint = ""
        if type(x).__module__ == "numpy":
            hint = f"; convert it with torch.from_numpy({name})"
        elif isinstance(x, (list, tuple)):
            hint = f"; convert it with torch.tensor({name})"
        raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}{hint}")


def check_float_tensor(name, x):
    check_tensor(name, x)
    if not x.dtype.is_floating_point:
        raise TypeError(
            f"{name} must be a floating-point tensor (e.g. torch.float32); got dtype {x.dtype}"
        )


def check_same_dtype(reference_name, reference, *others):
    """Every (name, tensor) in ``others`` has the dtype of ``reference``."""
    for name, x in others:
        if x.dtype != reference.dtype:
            raise TypeError(
                f"{name} has dtype {x.dtype} but {reference_name} has {reference.dtype}; "
                f"convert one with .to({reference.dtype})"
            )


def check_same_device(reference_name, reference, name, x):
    """``x`` lives on the device of ``reference`` (no silent copies, no ignored tensor)."""
    if x.device != reference.device:
        raise ValueError(
            f"{name} is on device {x.device} but {reference_name} is on {reference.device}; "
            f"all tensors must be on one device: move it with {name}.to({reference_name}.device)"
        )


def check_layer_args(d_model, num_heads, num_kv_heads, kdim, vdim, dropout, bias=False,
                     device=None, dtype=None):
    """The constructor arguments of a multi-head layer: returns them checked (ints as ints)."""
    d_model = check_positive_int("d_model", d_model)
    num_heads = check_positive_int("num_heads", num_heads)
    num_kv_heads = check_positive_int("num_kv_heads", num_kv_heads)
    if d_model % num_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})"
        )
    kdim = None if kdim is None else check_positive_int("kdim", kdim)
    vdim = None if vdim is None else check_positive_int("vdim", vdim)
    check_probability("dropout", dropout)
    check_bool("bias", bias)
    check_device_arg("device", device)
    check_dtype_arg("dtype", dtype)
    return d_model, num_heads, num_kv_heads, kdim, vdim


def check_split(x, num_heads):
    check_tensor("x", x)
    num_heads = check_positive_int("num_heads", num_heads)
    if x.dim() != 3:
        raise ValueError(f"split_heads expects x of shape (B, L, D); got shape {_shape(x)}")
    if x.size(-1) % num_heads:
        raise ValueError(
            f"the last dimension of x ({x.size(-1)}) must be divisible by num_heads ({num_heads})"
        )
    return num_heads


def check_merge(x):
    check_tensor("x", x)
    if x.dim() != 4:
        raise ValueError(f"merge_heads expects x of shape (B, H, L, Dh); got {_shape(x)}")


def check_bool_mask(mask, target_shape, target_name, device=None):
    """``mask`` must be a bool tensor that broadcasts to ``target_shape`` (on ``device``)."""
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be a bool tensor (True = may attend); got dtype {mask.dtype}. "
            f"Convert other conventions with mha.convert_mask(mask, source=..., target='sdpa')"
        )
    if device is not None and not _same_device(mask.device, device):
        raise ValueError(
            f"mask is on device {mask.device} but the inputs are on {device}; "
            f"all tensors must be on one device: move it with mask.to(query.device)"
        )
    ok = mask.dim() <= len(target_shape) and all(
        m in (1, t) for m, t in zip(reversed(mask.shape), reversed(target_shape))
    )
    if not ok:
        raise ValueError(
            f"mask of shape {_shape(mask)} cannot broadcast to {target_name} = {tuple(target_shape)}"
        )


def check_layer_mask(mask, shape, device):
    """A layer's mask: broadcastable to (B, H, Lq, Lk), and never 3-D unless its first axis is 1.

    A 3-D mask is ambiguous in a layer: (B, Lq, Lk) (one mask per sequence) and (H, Lq, Lk)
    (one per head) both broadcast when B == H, and would silently be read as per head.
    """
    check_bool_mask(mask, shape, "(B, H, Lq, Lk)", device)
    if mask.dim() == 3 and mask.size(0) != 1:
        raise ValueError(
            f"mask of shape {_shape(mask)} is 3-D, which is ambiguous in a layer: write "
            f"mask[:, None] for (B, 1, Lq, Lk) (one mask per sequence, shared by the heads) or "
            f"mask[None] for (1, H, Lq, Lk) (one mask per head)"
        )


def _broadcast(names_shapes):
    try:
        return torch.broadcast_shapes(*(s for _, s in names_shapes))
    except RuntimeError:
        listed = ", ".join(f"{n} {tuple(s)}" for n, s in names_shapes)
        raise ValueError(
            f"the batch dimensions (all but the last two) must broadcast; got {listed}"
        ) from None


def check_attention_inputs(query, key, value, mask=None, dropout_p=0.0, scale=None):
    """Arguments of ``scaled_dot_product_attention``: returns the scale as a float or None."""
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_float_tensor(name, x)
        if x.dim() < 2:
            raise ValueError(f"{name} must have shape (..., L, features); got shape {_shape(x)}")
    check_same_dtype("query", query, ("key", key), ("value", value))
    check_same_device("query", query, "key", key)
    check_same_device("query", query, "value", value)
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query has {query.size(-1)} features but key has {key.size(-1)}; "
            f"their dot products need the same size"
        )
    if query.size(-1) == 0 and scale is None:
        raise ValueError("query has 0 features: the default scale 1 / sqrt(Dk) needs Dk >= 1")
    if key.size(-2) != value.size(-2):
        raise ValueError(
            f"key has {key.size(-2)} positions but value has {value.size(-2)}; "
            f"each key needs one value"
        )
    batch = _broadcast([("query", query.shape[:-2]), ("key", key.shape[:-2]),
                        ("value", value.shape[:-2])])
    if mask is not None:
        check_bool_mask(mask, (*batch, query.size(-2), key.size(-2)), "(..., Lq, Lk)",
                        query.device)
    check_probability("dropout_p", dropout_p)
    return None if scale is None else check_real("scale", scale)


def check_integer_tensor(name, x):
    check_tensor(name, x)
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise TypeError(
            f"{name} must be an integer tensor (e.g. torch.long); got dtype {x.dtype}"
        )


def check_valid_lens(valid_lens, batch_size, num_queries, device=None):
    check_integer_tensor("valid_lens", valid_lens)
    if device is not None and not _same_device(valid_lens.device, device):
        raise ValueError(
            f"valid_lens is on device {valid_lens.device} but the inputs are on {device}; "
            f"all tensors must be on one device: move it with valid_lens.to(query.device)"
        )
    shapes = [f"(B,) = ({batch_size},)", f"(B, Lq) = ({batch_size}, {num_queries})"]
    if batch_size is None:
        shapes = ["(B,)", f"(B, Lq) = (B, {num_queries})"]
    ok = valid_lens.dim() == 1 or (valid_lens.dim() == 2 and valid_lens.size(1) == num_queries)
    if ok and batch_size is not None:
        ok = valid_lens.size(0) == batch_size
    if not ok:
        raise ValueError(
            f"valid_lens must have shape {shapes[0]} or {shapes[1]}; got shape {_shape(valid_lens)}"
        )
    if valid_lens.device.type == "meta":
        raise ValueError("valid_lens is on the meta device: its values cannot be read")
    if valid_lens.numel() and valid_lens.min() < 0:
        raise ValueError(f"valid_lens must be >= 0; got a value {int(valid_lens.min())}")


def check_features(name, x, features, what):
    """``x`` must be a batched (B, L, features) floating tensor with ``features`` = ``what``."""
    check_float_tensor(name, x)
    if x.dim() != 3:
        hint = f"; add a batch dimension with {name}.unsqueeze(0)" if x.dim() == 2 else ""
        raise ValueError(
            f"{name} must be batched, of shape (B, L, features); "
            f"got a {x.dim()}-D tensor of shape {_shape(x)}{hint}"
        )
    if x.size(-1) != features:
        raise ValueError(f"{name} has {x.size(-1)} features but the layer expects {what} = {features}")


def check_dtype(name, x, weight):
    if x.dtype != weight.dtype:
        raise TypeError(
            f"{name} has dtype {x.dtype} but the layer's weights are {weight.dtype}; "
            f"convert one with .to(dtype)"
        )


def check_device(name, x, weight):
    if x.device != weight.device:
        raise ValueError(
            f"{name} is on device {x.device} but the layer's weights are on {weight.device}; "
            f"move one with .to(device)"
        )


def check_module_input(name, x, weight, features, what):
    """A layer's input: batched (B, L, features), the dtype and device of the layer's weights."""
    check_features(name, x, features, what)
    check_dtype(name, x, weight)
    check_device(name, x, weight)


def check_layer_inputs(layer, query, key, value):
    weight = layer.W_q.weight
    for name, x, features, what in (("query", query, layer.d_model, "d_model"),
                                    ("key", key, layer.kdim, "kdim"),
                                    ("value", value, layer.vdim, "vdim")):
        check_module_input(name, x, weight, features, what)
    if not query.size(0) == key.size(0) == value.size(0):
        raise ValueError(
            f"query, key and value must have the same batch size B; got "
            f"{query.size(0)}, {key.size(0)} and {value.size(0)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(
            f"key and value must have the same length Lk; got {key.size(1)} and {value.size(1)}"
        )


def check_head_mask(head_mask, batch_size, num_heads, device=None):
    check_tensor("head_mask", head_mask)
    if head_mask.dtype.is_complex:
        raise TypeError(f"head_mask must hold real multipliers; got dtype {head_mask.dtype}")
    if device is not None and not _same_device(head_mask.device, device):
        raise ValueError(
            f"head_mask is on device {head_mask.device} but the inputs are on {device}; "
            f"all tensors must be on one device: move it with head_mask.to(query.device)"
        )
    if tuple(head_mask.shape) not in ((num_heads,), (batch_size, num_heads)):
        raise ValueError(
            f"head_mask must have shape (H,) = ({num_heads},) or (B, H) = "
            f"({batch_size}, {num_heads}); got shape {_shape(head_mask)}"
        )


def check_forward_args(layer, query, key, value, mask, valid_lens, is_causal, need_weights,
                       head_mask, past=0):
    """Every argument of ``MultiHeadAttention.forward`` (key and value already defaulted);
    ``past`` keys already in a KV cache come before the new ones (Lk = past + key length)."""
    check_layer_inputs(layer, query, key, value)
    check_bool("is_causal", is_causal)
    check_bool("need_weights", need_weights)
    B, Lq, Lk, device = query.size(0), query.size(1), past + key.size(1), query.device
    if mask is not None:
        check_layer_mask(mask, (B, layer.num_heads, Lq, Lk), device)
    if valid_lens is not None:  # its values (one min(), a sync on GPU) are read by combine_masks
        check_integer_tensor("valid_lens", valid_lens)
    if head_mask is not None:
        check_head_mask(head_mask, B, layer.num_heads, device)


def check_heads(heads, num_heads):
    """The heads to prune: an iterable of int indices (not a str): returns them sorted, unique."""
    if isinstance(heads, (str, bytes)):
        raise TypeError(
            f"heads must be a list of int head indices, e.g. [0, 1]; got {_kind(heads)} "
            f"(a str is read character by character)"
        )
    if isinstance(heads, torch.Tensor):
        check_integer_tensor("heads", heads)
        heads = heads.reshape(-1).tolist()
    try:
        items = list(heads)
    except TypeError:
        raise TypeError(f"heads must be a list of int head indices; got {_kind(heads)}") from None
    out = sorted({check_int("heads[i]", h) for h in items})
    if any(not 0 <= h < num_heads for h in out):
        raise ValueError(
            f"heads must be indices in 0..{num_heads - 1} (num_heads = {num_heads}); got {out}"
        )
    return out

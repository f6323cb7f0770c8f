"""Argument checks: bad input fails at once with a message naming the argument, the value received
and what was expected (never a bare shape error from deep inside a matmul).

Shapes: B batch, H heads, Lq/Lk query/key lengths, D d_model (see ``mha.functional``).
"""

import torch


def _shape(x):
    return tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__


def check_tensor(name, x):
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor; got {type(x).__name__}")


def check_positive_int(name, value):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int; got {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int; got {value}")


def check_layer_args(d_model, num_heads, num_kv_heads, kdim, vdim, dropout):
    check_positive_int("d_model", d_model)
    check_positive_int("num_heads", num_heads)
    check_positive_int("num_kv_heads", num_kv_heads)
    if d_model % num_heads:
        raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must be a multiple of num_kv_heads ({num_kv_heads})"
        )
    for name, dim in (("kdim", kdim), ("vdim", vdim)):
        if dim is not None:
            check_positive_int(name, dim)
    if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
        raise ValueError(f"dropout must be a probability in [0, 1); got {dropout!r}")


def check_split(x, num_heads):
    check_tensor("x", x)
    check_positive_int("num_heads", num_heads)
    if x.dim() != 3:
        raise ValueError(f"split_heads expects x of shape (B, L, D); got shape {_shape(x)}")
    if x.size(-1) % num_heads:
        raise ValueError(
            f"the last dimension of x ({x.size(-1)}) must be divisible by num_heads ({num_heads})"
        )


def check_bool_mask(mask, target_shape, target_name):
    """``mask`` must be a bool tensor that broadcasts to ``target_shape``."""
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must be a bool tensor (True = may attend); got dtype {mask.dtype}. "
            f"Convert other conventions with mha.convert_mask(mask, source=..., target='sdpa')"
        )
    ok = mask.dim() <= len(target_shape) and all(
        m in (1, t) for m, t in zip(reversed(mask.shape), reversed(target_shape))
    )
    if not ok:
        raise ValueError(
            f"mask of shape {_shape(mask)} cannot broadcast to {target_name} = {tuple(target_shape)}"
        )


def check_attention_inputs(query, key, value, mask):
    for name, x in (("query", query), ("key", key), ("value", value)):
        check_tensor(name, x)
        if x.dim() < 2:
            raise ValueError(f"{name} must have shape (..., L, features); got shape {_shape(x)}")
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query has {query.size(-1)} features but key has {key.size(-1)}; "
            f"their dot products need the same size"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(
            f"key has {key.size(-2)} positions but value has {value.size(-2)}; "
            f"each key needs one value"
        )
    if mask is not None:
        target = (*torch.broadcast_shapes(query.shape[:-2], key.shape[:-2]), query.size(-2),
                  key.size(-2))
        check_bool_mask(mask, target, "(..., Lq, Lk)")


def check_valid_lens(valid_lens, batch_size, num_queries):
    check_tensor("valid_lens", valid_lens)
    if valid_lens.dtype.is_floating_point or valid_lens.dtype.is_complex or (
        valid_lens.dtype == torch.bool
    ):
        raise TypeError(
            f"valid_lens must be an integer tensor (e.g. torch.long); got dtype {valid_lens.dtype}"
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
    if valid_lens.numel() and valid_lens.min() < 0:
        raise ValueError(f"valid_lens must be >= 0; got a value {int(valid_lens.min())}")


def check_features(name, x, features, what):
    """``x`` must be a batched (B, L, features) tensor with ``features`` = ``what``."""
    check_tensor(name, x)
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


def check_layer_inputs(layer, query, key, value):
    for name, x, features, what in (("query", query, layer.d_model, "d_model"),
                                    ("key", key, layer.kdim, "kdim"),
                                    ("value", value, layer.vdim, "vdim")):
        check_features(name, x, features, what)
        check_dtype(name, x, layer.W_q.weight)
    if not query.size(0) == key.size(0) == value.size(0):
        raise ValueError(
            f"query, key and value must have the same batch size B; got "
            f"{query.size(0)}, {key.size(0)} and {value.size(0)}"
        )
    if key.size(1) != value.size(1):
        raise ValueError(
            f"key and value must have the same length Lk; got {key.size(1)} and {value.size(1)}"
        )


def check_head_mask(head_mask, batch_size, num_heads):
    check_tensor("head_mask", head_mask)
    if tuple(head_mask.shape) not in ((num_heads,), (batch_size, num_heads)):
        raise ValueError(
            f"head_mask must have shape (H,) = ({num_heads},) or (B, H) = "
            f"({batch_size}, {num_heads}); got shape {_shape(head_mask)}"
        )

"""Which heads matter: gates on the heads, Michel et al.'s importance score, whole-model pruning.

Shape legend: B batch, H heads of one layer (see ``mha.functional``).

- `head_gates(model)`: a context manager that puts a gate xi_h (1 = kept, 0 = removed) on the
  output of every head of every `MultiHeadAttention` inside ``model``, through the layer's
  ``head_mask``; set a gate to 0 to ablate a head, or ask for gradients with respect to the gates.
- `head_importance(model, batches, loss_fn)`: the score of Michel, Levy and Neubig (2019), the
  mean over batches of ``|dL / d xi_h|``.
- `prune_heads(model, heads)`: remove heads from any layers of a model for good, with
  `MultiHeadAttention.prune_heads`, so that their parameters are gone.

Layers are keyed as `mha.record_attention` keys them: by their name in ``model.named_modules()``
(e.g. ``encoder.layers.0.self_attn``), or by the class name when ``model`` is itself the layer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping

import torch
from torch import nn

from .layer import MultiHeadAttention

__all__ = ["attention_layers", "head_gates", "head_importance", "prune_heads"]


def attention_layers(model: nn.Module) -> dict:
    """Every `MultiHeadAttention` (or subclass) inside ``model``, in module order:
    ``{name: layer}``, keyed as `mha.record_attention` keys them."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    return {(name or type(module).__name__): module for name, module in model.named_modules()
            if isinstance(module, MultiHeadAttention)}


@contextlib.contextmanager
def head_gates(model: nn.Module, *, requires_grad: bool = False):
    """Gate every head of every attention layer inside ``model`` during the block::

        with mha.head_gates(model) as gates:   # {name: (H,) tensor of ones}
            gates["encoder.layers.1.self_attn"][3] = 0.0   # remove head 3 of that layer
            loss = loss_fn(model, batch)

    Each layer multiplies head h's output by ``gates[name][h]`` before ``W_o`` (its ``head_mask``;
    a ``head_mask`` the caller passes is multiplied by the gate). With ``requires_grad=True`` the
    gates are leaf tensors whose gradients ``torch.autograd.grad`` can ask for (edit them in place
    only under ``torch.no_grad()``). The hooks are removed on exit, also when the block raises.
    """
    layers = attention_layers(model)
    if not layers:
        raise ValueError(f"model ({type(model).__name__}) contains no MultiHeadAttention layer")
    gates = {}
    for name, layer in layers.items():
        weight = layer.W_o.weight
        dtype = weight.dtype if weight.is_floating_point() else torch.float32
        gates[name] = torch.ones(layer.num_heads, device=weight.device, dtype=dtype,
                                 requires_grad=requires_grad)  # (H,)

    def gate_hook(name):
        def hook(module, args, kwargs):
            gate = gates[name]  # (H,)
            given = kwargs.get("head_mask")  # None, (H,) or (B, H)
            return args, {**kwargs, "head_mask": gate if given is None else given * gate}

        return hook

    handles = [layer.register_forward_pre_hook(gate_hook(name), with_kwargs=True)
               for name, layer in layers.items()]
    try:
        yield gates
    finally:
        for handle in handles:
            handle.remove()


def head_importance(model: nn.Module, batches: Iterable, loss_fn: Callable) -> dict:
    """Head importance of Michel et al. (2019): for every attention layer inside ``model``, the
    mean over ``batches`` of ``|dL/d xi_h|``, where xi_h is a gate multiplying head h's output
    (xi_h = 1: the model as it is) and L = ``loss_fn(model, batch)``, a scalar.

    Returns ``{name: (H,) tensor}``, keyed as `mha.record_attention` keys the layers. The
    absolute value is taken per batch (batches of one example give Michel's per-example
    expectation). The model's parameters and their ``.grad`` are left untouched; the model runs
    in whatever mode (train or eval) it is in.
    """
    if not callable(loss_fn):
        raise TypeError(f"loss_fn must be callable as loss_fn(model, batch); "
                        f"got {type(loss_fn).__name__}")
    totals, count = None, 0
    with head_gates(model, requires_grad=True) as gates:
        names = list(gates)
        for batch in batches:
            loss = loss_fn(model, batch)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise ValueError(f"loss_fn must return a scalar tensor; got "
                                 f"{getattr(loss, 'shape', type(loss).__name__)}")
            grads = torch.autograd.grad(loss.reshape(()), [gates[n] for n in names],
                                        allow_unused=True)
            grads = [torch.zeros_like(gates[n]) if g is None else g.abs()  # unused layer: 0
                     for n, g in zip(names, grads)]
            totals = grads if totals is None else [t + g for t, g in zip(totals, grads)]
            count += 1
    if count == 0:
        raise ValueError("batches is empty: head_importance needs at least one batch")
    return {n: (t / count).detach() for n, t in zip(names, totals)}


def _by_layer(heads, layers: dict) -> dict:
    """{name: sorted head indices} from {layer: heads} or (layer, head) pairs; a layer is a name
    or an index into ``layers``."""
    names = list(layers)
    pairs = ([(layer, h) for layer, hs in heads.items() for h in hs]
             if isinstance(heads, Mapping) else list(heads))
    out = {}
    for pair in pairs:
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"heads must hold (layer, head) pairs; got {pair!r}")
        layer, head = pair
        if isinstance(layer, int) and not isinstance(layer, bool):
            if not 0 <= layer < len(names):
                raise ValueError(f"layer index {layer} out of range: the model has "
                                 f"{len(names)} attention layers (0..{len(names) - 1})")
            layer = names[layer]
        if layer not in layers:
            raise ValueError(f"no attention layer named {layer!r}; the model has {names}")
        H = layers[layer].num_heads
        if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < H:
            raise ValueError(f"head {head!r} of layer {layer!r} must be an int in 0..{H - 1} "
                             f"(num_heads = {H})")
        out.setdefault(layer, set()).add(head)
    for layer, hs in out.items():
        if len(hs) == layers[layer].num_heads:
            raise ValueError(f"cannot prune all {len(hs)} heads of layer {layer!r}; "
                             f"keep at least one (or remove the layer)")
    return {layer: sorted(hs) for layer, hs in out.items()}


def prune_heads(model: nn.Module, heads) -> nn.Module:
    """Remove ``heads`` from the attention layers inside ``model`` for good; returns ``model``.

    ``heads`` is ``{layer: [head, ...]}`` or an iterable of ``(layer, head)`` pairs, where a layer
    is its name (as `mha.record_attention` keys it) or its index in `attention_layers` order, and
    head indices count the layer's heads as they are now. Every layer is checked before any is
    changed. Each layer runs `MultiHeadAttention.prune_heads`: its weight matrices lose those
    heads' rows (W_q, W_k, W_v) and columns (W_o), and the model computes what it computed with
    those heads' gates at 0. A layer's ``num_heads`` drops, so a model-wide ``head_mask`` of the
    old shape no longer fits; code that read ``num_heads`` from a config should ask the layers.
    """
    layers = attention_layers(model)
    for name, hs in _by_layer(heads, layers).items():
        layers[name].prune_heads(hs)
    return model

"""Record the per-head attention weights of every attention layer inside a model.

Shape legend: B batch, H heads, Lq/Lk query/key lengths (see ``mha.functional``).
"""

import contextlib

from torch import nn

from . import _checks
from .latent import LatentAttention
from .layer import MultiHeadAttention

__all__ = ["record_attention"]


@contextlib.contextmanager
def record_attention(model):
    """Capture the weights (B, H, Lq, Lk) of every attention layer inside ``model`` during the
    forward passes in the block: every ``MultiHeadAttention`` (and subclass, e.g.
    ``RelativeMultiHeadAttention``) and every ``LatentAttention`` (the same ``need_weights``
    keyword; ``absorb=True`` or not, the weights are the same)::

        with mha.record_attention(model) as weights:
            model(x)
        weights["blocks.0.attn"]        # (B, H, Lq, Lk), detached

    The dict is keyed by the layer's name in ``model.named_modules()`` (the class name when
    ``model`` itself is the layer). A layer called once maps to one tensor; a layer called
    several times maps to a list of tensors in call order. The dict is filled when the block
    ends. The layers run their explicit (weights) path while recording, even if the caller asked
    for ``need_weights=False``, and still return what the caller asked for (weights or None);
    the hooks are removed on exit, also when the block raises.

    A ``model`` that holds no such layer is an error (``ValueError``), not an empty dict:
    ``torch.nn.MultiheadAttention`` layers are not recorded (convert them with
    ``MultiHeadAttention.from_torch``).
    """
    layers = _attention_layers(model)
    calls = {}
    handles = []

    def before(module, args, kwargs):
        module._mha_asked_weights = _checks.check_bool("need_weights",
                                                       kwargs.get("need_weights", False))
        return args, {**kwargs, "need_weights": True}

    def after(name):
        def hook(module, args, kwargs, output):
            out, weights = output
            calls.setdefault(name, []).append(weights.detach())
            return out, (weights if module.__dict__.pop("_mha_asked_weights", False) else None)

        return hook

    recorded = {}
    try:
        for name, module in layers:
            handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
            handles.append(module.register_forward_hook(after(name), with_kwargs=True))
        yield recorded
    finally:
        for handle in handles:
            handle.remove()
        for module in model.modules():
            module.__dict__.pop("_mha_asked_weights", None)
        recorded.update({k: v[0] if len(v) == 1 else v for k, v in calls.items()})


#: the layers recorded: their forward takes ``need_weights`` and returns (output, weights)
_RECORDED = (MultiHeadAttention, LatentAttention)


def _attention_layers(model):
    """[(name, layer)] for every ``_RECORDED`` layer in ``model``; an error if there is none."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module; got {type(model).__name__}")
    layers = [(name or type(m).__name__, m) for name, m in model.named_modules()
              if isinstance(m, _RECORDED)]
    if not layers:
        torch_layers = [n or type(m).__name__ for n, m in model.named_modules()
                        if isinstance(m, nn.MultiheadAttention)]
        hint = (f"; it has torch.nn.MultiheadAttention layers ({', '.join(torch_layers[:3])}): "
                f"convert them with mha.MultiHeadAttention.from_torch" if torch_layers else "")
        raise ValueError(
            f"model ({type(model).__name__}) contains no attention layer "
            f"(mha.MultiHeadAttention or mha.LatentAttention), so record_attention would record "
            f"nothing{hint}"
        )
    return layers

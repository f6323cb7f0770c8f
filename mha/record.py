"""Record the per-head attention weights of every attention layer inside a model.

Shape legend: B batch, H heads, Lq/Lk query/key lengths (see ``mha.functional``).
"""

import contextlib

from .layer import MultiHeadAttention

__all__ = ["record_attention"]


@contextlib.contextmanager
def record_attention(model):
    """Capture the weights (B, H, Lq, Lk) of every ``MultiHeadAttention`` (and subclass, e.g.
    ``RelativeMultiHeadAttention``) inside ``model`` during the forward passes in the block::

        with mha.record_attention(model) as weights:
            model(x)
        weights["blocks.0.attn"]        # (B, H, Lq, Lk), detached

    The dict is keyed by the layer's name in ``model.named_modules()`` (the class name when
    ``model`` itself is the layer). A layer called once maps to one tensor; a layer called
    several times maps to a list of tensors in call order. The dict is filled when the block
    ends. The layers run their explicit (weights) path while recording, even if the caller asked
    for ``need_weights=False``, and still return what the caller asked for (weights or None);
    the hooks are removed on exit, also when the block raises.
    """
    calls = {}
    handles = []

    def before(module, args, kwargs):
        module._mha_asked_weights = kwargs.get("need_weights", False)
        return args, {**kwargs, "need_weights": True}

    def after(name):
        def hook(module, args, kwargs, output):
            out, weights = output
            calls.setdefault(name, []).append(weights.detach())
            return out, (weights if module.__dict__.pop("_mha_asked_weights", False) else None)

        return hook

    recorded = {}
    try:
        for name, module in model.named_modules():
            if isinstance(module, MultiHeadAttention):
                name = name or type(module).__name__
                handles.append(module.register_forward_pre_hook(before, with_kwargs=True))
                handles.append(module.register_forward_hook(after(name), with_kwargs=True))
        yield recorded
    finally:
        for handle in handles:
            handle.remove()
        for module in model.modules():
            module.__dict__.pop("_mha_asked_weights", None)
        recorded.update({k: v[0] if len(v) == 1 else v for k, v in calls.items()})

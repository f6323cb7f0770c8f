"""The multi-head attention layer: all heads in one batched computation.

Shape legend: B batch, H query heads, Hkv key/value heads, Lq/Lk query/key lengths, D d_model,
Dh d_head = D / H (see ``mha.functional``).

One forward pass: project (one packed matmul for self-attention), add
positions (the ``_position`` hook), append to a ``KVCache``, attend, then
``W_o``. The attention step is the function that ``attn_implementation`` names
in ``mha.attention_functions``: ``"sdpa"`` by default, which with
``need_weights=False`` hands the heads to
``torch.nn.functional.scaled_dot_product_attention`` (a fused kernel that
never stores the (Lq, Lk) weights) and with ``need_weights=True`` runs the
explicit softmax(Q K^T / sqrt(Dh)) V of ``mha.functional`` and returns the
per-head weights.

The options of recent models are options of this same pass, all off here
(``RotaryMultiHeadAttention`` switches them on): ``window`` (a causal sliding
window, ``mha.modern.window_attend``), ``sinks`` (the ``"sinks"`` attention
function), ``qk_norm`` (``q_norm`` and ``k_norm`` after the projection) and
``gate`` (``W_g``, in the packed matmul).
"""

import torch
import torch.nn.functional as F
from torch import nn

from . import _checks
from .attention_functions import AttentionName, attention_function
from .cache import check_cache_call
from .functional import _merge_heads
from .masks import layer_mask
from .modern import window_attend

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention: concat_h softmax(Q_h K_h^T / sqrt(Dh)) V_h, then W_o.

    With ``num_kv_heads`` < ``num_heads`` (grouped-query attention) each key/value head serves
    num_heads / num_kv_heads consecutive query heads.

    ``forward`` checks its arguments first (``mha._checks``): all tensors on the layer's device
    and in its dtype, ``is_causal`` and ``need_weights`` bools, and a 3-D ``mask`` refused
    unless its first axis is 1, since (B, Lq, Lk) and (H, Lq, Lk) broadcast alike when B == H:
    write ``mask[:, None]`` (B, 1, Lq, Lk) for one mask per sequence or ``mask[None]``
    (1, H, Lq, Lk) for one per head.

    ``attn_implementation`` (default ``"sdpa"``): the name of the attention
    function in ``mha.attention_functions`` the layer calls; set it to
    ``"eager"`` or to a function of your own (``attention_functions.register``).
    """

    attn_implementation = AttentionName("sdpa")
    #: None, or the number of devices ``mha.distributed.tensor_parallel`` split
    #: the heads over (num_heads, num_kv_heads are then this rank's)
    tp_world = None

    def __init__(self, d_model, num_heads, *, num_kv_heads=None, kdim=None, vdim=None,
                 bias=False, dropout=0.0, device=None, dtype=None):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        d_model, num_heads, num_kv_heads, kdim, vdim = _checks.check_layer_args(
            d_model, num_heads, num_kv_heads, kdim, vdim, dropout, bias, device, dtype)
        self.d_model, self.num_heads, self.num_kv_heads = d_model, num_heads, num_kv_heads
        self.d_head, self.dropout = d_model // num_heads, float(dropout)
        self.kdim, self.vdim = kdim or d_model, vdim or d_model
        kw = {"bias": bias, "device": device, "dtype": dtype}
        self.W_q = nn.Linear(d_model, num_heads * self.d_head, **kw)
        self.W_k = nn.Linear(self.kdim, num_kv_heads * self.d_head, **kw)
        self.W_v = nn.Linear(self.vdim, num_kv_heads * self.d_head, **kw)
        self.W_o = nn.Linear(num_heads * self.d_head, d_model, **kw)
        # the options of recent models, off (RotaryMultiHeadAttention sets them)
        self.window, self.sinks, self.qk_norm, self.gate = None, None, False, False

    def forward(self, query, key=None, value=None, *, mask=None, valid_lens=None,
                is_causal=False, need_weights=False, head_mask=None, cache=None):
        """query (B, Lq, D), key (B, Lk, kdim) defaults to query, value
        (B, Lk, vdim) to key; mask bool broadcastable to (B, H, Lq, Lk), True =
        may attend; valid_lens (B,) or (B, Lq); head_mask (H,) or (B, H).
        Returns output (B, Lq, D) and weights (B, H, Lq, Lk) or None.

        ``cache`` (a ``mha.KVCache``, self-attention only): the new tokens'
        keys and values are appended to it and the queries attend to all P
        cached positions plus the Lq new ones, so Lk = P + Lq.
        ``is_causal=True`` is then aligned at the bottom right (new query i, at
        position P + i, sees keys 0 .. P + i), and ``mask``/``valid_lens``, if
        given, describe all those keys: mask broadcastable to
        (B, H, Lq, P + Lq), lengths counted from key 0."""
        if cache is not None:
            check_cache_call(cache, query, key, value, window=self.window)
        key = query if key is None else key
        value = key if value is None else value
        past = 0 if cache is None else cache.seq_len  # positions cached before
        start = 0 if cache is None else cache.start  # the first one it holds
        _checks.check_forward_args(self, query, key, value, mask, valid_lens,
                                   is_causal, need_weights, head_mask, past=past)
        (B, Lq, _), Lk, H = query.shape, key.size(1), self.num_heads
        allowed, causal = layer_mask(
            mask, valid_lens, is_causal, (B, H, Lq, past + Lk), query.device,
            cached=cache is not None, window=self.window, start=start)
        # (B, H, Lq, Dh), 2 x (B, Hkv, Lk, Dh), the gate's (B, Lq, H*Dh) or None
        q, k, v, gate = self._project(query, key, value)
        q, k = self._position(q, k, past)  # identity here; rotary rotates
        if cache is not None:
            k, v = cache.append(k, v)  # (B, Hkv, P + Lk, Dh)
        out, weights = self._attend(q, k, v, allowed, causal, need_weights,
                                    past=past, start=start)  # (B, H, Lq, Dh)
        if head_mask is not None:  # (H,) or (B, H) -> (B|1, H, 1, 1)
            out = out * head_mask.to(out).view(-1, H, 1, 1)
        out = _merge_heads(out)  # (B, H, Lq, Dh) -> (B, Lq, H*Dh)
        if gate is not None:  # head h's columns h*Dh:(h+1)*Dh times its gate
            out = out * torch.sigmoid(gate)  # (B, Lq, H*Dh)
        return self.W_o(out), weights  # (B, Lq, H*Dh) -> (B, Lq, D)

    def _position(self, q, k, offset):
        """Position information for q (B, H, Lq, Dh) and k (B, Hkv, Lk, Dh):
        the identity here (positions enter the model before the layer). The
        positions of the new tokens start at ``offset`` (the number of cached
        positions); a subclass such as ``RotaryMultiHeadAttention`` rotates q
        and k by them."""
        return q, k

    def _project(self, query, key, value):
        """Project and split into heads: q (B, H, Lq, Dh), k and v
        (B, Hkv, Lk, Dh), q and k normalised with ``qk_norm``, and the gate's
        logits (B, Lq, H*Dh) with ``gate`` (else None). Self-attention does it
        in one packed matmul, ``W_g`` included (not when the weights are
        split over devices, ``tp_world``: each projection then shards its
        own)."""
        H, Hkv, Dh = self.num_heads, self.num_kv_heads, self.d_head
        linears = [self.W_q, self.W_k, self.W_v]
        linears += [self.W_g] if self.gate else []
        if query is key is value and self.tp_world is None:
            # (H*Dh + 2*Hkv*Dh [+ H*Dh], D): all the weights, one matmul
            weight = torch.cat([m.weight for m in linears])
            bias = (None if self.W_q.bias is None
                    else torch.cat([m.bias for m in linears]))
            sizes = [m.out_features for m in linears]
            # (B, L, D) -> (B, L, H*Dh), (B, L, Hkv*Dh) x 2 [, (B, L, H*Dh)]
            parts = F.linear(query, weight, bias).split(sizes, dim=-1)
        else:
            inputs = (query, key, value, query)
            parts = [m(x) for m, x in zip(linears, inputs)]
        q = parts[0].unflatten(-1, (H, Dh))  # (B, Lq, H*Dh) -> (B, Lq, H, Dh)
        k = parts[1].unflatten(-1, (Hkv, Dh))  # -> (B, Lk, Hkv, Dh)
        v = parts[2].unflatten(-1, (Hkv, Dh))
        if self.qk_norm:  # RMSNorm of each head's Dh features, before rope
            q, k = self.q_norm(q), self.k_norm(k)
        # (B, L, H, Dh) -> (B, H, L, Dh) and (B, L, Hkv, Dh) -> (B, Hkv, L, Dh)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        return q, k, v, (parts[3] if self.gate else None)

    def _attend(self, q, k, v, allowed, causal, need_weights, *, past=0,
                start=0):
        """Attention of every head: (B, H, Lq, Dh) output and (B, H, Lq, Lk)
        weights or None, by the function ``attn_implementation`` names
        (``mha.attention_functions``): for ``"sdpa"``, the fused kernel, or
        the explicit softmax when ``need_weights`` asks for the weights.

        With a ``window`` the function runs within the band (q at positions
        past .. past + Lq - 1, k from position start on)."""
        attention = attention_function(self.attn_implementation)
        dropout_p = self.dropout if self.training else 0.0

        def attend(q, k, v, mask, is_causal, need_weights):
            return attention(self, q, k, v, mask, is_causal=is_causal,
                             dropout_p=dropout_p, need_weights=need_weights)

        if self.window is None:
            return attend(q, k, v, allowed, causal, need_weights)
        return window_attend(attend, q, k, v, self.window, past=past,
                             start=start, allowed=allowed,
                             need_weights=need_weights)

    @classmethod
    def from_torch(cls, module, **kwargs):
        """The same function as a ``batch_first`` ``torch.nn.MultiheadAttention``, weight for
        weight (separate or packed input projections, kdim/vdim, biases, dropout).
        ``kwargs``: more arguments for a subclass (``max_relative_position``)."""
        return _from_torch(cls, module, **kwargs)

    def prune_heads(self, heads):
        """Remove the query heads in ``heads`` (a list of int indices) for good (rows of W_q,
        columns of W_o; and the rows of W_k and W_v when no other head uses them;
        those heads' rows of W_g and entries of sinks). Returns self."""
        if self.tp_world is not None:
            raise ValueError("prune_heads cannot change a layer whose heads "
                             "tensor_parallel split over devices: prune first")
        heads = _checks.check_heads(heads, self.num_heads)
        keep = [h for h in range(self.num_heads) if h not in heads]
        _prune_heads(self, heads)
        _prune_options(self, keep)
        return self

    def extra_repr(self):
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, "
                f"num_kv_heads={self.num_kv_heads}, d_head={self.d_head}, dropout={self.dropout}")


def _from_torch(cls, module, **kwargs):
    if not isinstance(module, nn.MultiheadAttention):
        raise TypeError(f"module must be a torch.nn.MultiheadAttention; got {type(module).__name__}")
    if not module.batch_first:
        raise ValueError(
            "module has batch_first=False (inputs (L, B, D)) but MultiHeadAttention takes (B, L, D);"
            " build the torch module with batch_first=True"
        )
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError(
            f"module has add_bias_kv={module.bias_k is not None}, add_zero_attn="
            f"{module.add_zero_attn}; from_torch supports only add_bias_kv=False, add_zero_attn=False"
        )
    out = module.out_proj.weight
    layer = cls(module.embed_dim, module.num_heads, kdim=module.kdim, vdim=module.vdim,
                bias=module.in_proj_bias is not None, dropout=module.dropout,
                device=out.device, dtype=out.dtype, **kwargs)
    if module._qkv_same_embed_dim:
        weights = module.in_proj_weight.chunk(3)  # (3D, D) -> 3 x (D, D)
    else:
        weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
    biases = (None,) * 3 if module.in_proj_bias is None else module.in_proj_bias.chunk(3)
    with torch.no_grad():
        for linear, w, b in zip((layer.W_q, layer.W_k, layer.W_v, layer.W_o),
                                (*weights, out), (*biases, module.out_proj.bias)):
            linear.weight.copy_(w)
            if b is not None:
                linear.bias.copy_(b)
    return layer.train(module.training)


def _keep_rows(linear, rows, dim):
    """A copy of ``linear`` keeping the given rows (dim=0, outputs) or columns (dim=1, inputs)."""
    w = linear.weight.detach().index_select(dim, rows)
    new = nn.Linear(w.size(1), w.size(0), bias=linear.bias is not None,
                    device=w.device, dtype=w.dtype)
    with torch.no_grad():
        new.weight.copy_(w)
        if linear.bias is not None:
            new.bias.copy_(linear.bias.index_select(0, rows) if dim == 0 else linear.bias)
    return new


def _prune_heads(layer, heads):
    H, Hkv, Dh = layer.num_heads, layer.num_kv_heads, layer.d_head
    heads = _checks.check_heads(heads, H)  # sorted, without repeats
    if len(heads) == H:
        raise ValueError(f"cannot prune all {H} heads (got heads = {heads}); keep at least one")
    group = H // Hkv  # query heads per key/value head
    gone_kv = sorted({h // group for h in heads})
    partial = [g for g in gone_kv if any(h not in heads for h in range(g * group, (g + 1) * group))]
    if group > 1 and partial:
        raise ValueError(
            f"with num_kv_heads = {Hkv}, query heads share key/value heads in groups of {group}; "
            f"heads must remove whole groups (e.g. {list(range(group))}); got heads = {heads}"
        )
    keep = [h for h in range(H) if h not in heads]
    keep_kv = [g for g in range(Hkv) if g not in gone_kv] if group > 1 else keep

    def rows(hs):  # feature rows of heads hs: head h owns h*Dh:(h+1)*Dh
        return torch.cat([torch.arange(h * Dh, (h + 1) * Dh) for h in hs]).to(layer.W_q.weight.device)

    layer.W_q = _keep_rows(layer.W_q, rows(keep), 0)
    layer.W_k = _keep_rows(layer.W_k, rows(keep_kv), 0)
    layer.W_v = _keep_rows(layer.W_v, rows(keep_kv), 0)
    layer.W_o = _keep_rows(layer.W_o, rows(keep), 1)
    layer.num_heads, layer.num_kv_heads = len(keep), len(keep_kv)


def _prune_options(layer, keep):
    """The per-head parts of the options, kept for the heads ``keep`` only:
    the rows of W_g, the entries of sinks."""
    Dh, device = layer.d_head, layer.W_q.weight.device
    if layer.gate:
        rows = [torch.arange(h * Dh, (h + 1) * Dh) for h in keep]
        layer.W_g = _keep_rows(layer.W_g, torch.cat(rows).to(device), 0)
    if layer.sinks is not None:
        index = torch.tensor(keep, device=device)
        layer.sinks = nn.Parameter(layer.sinks.detach()[index])  # (H',)

"""The multi-head attention layer: all heads in one batched computation.

Shape legend: B batch, H query heads, Hkv key/value heads, Lq/Lk query/key lengths, D d_model,
Dh d_head = D / H (see ``mha.functional``).

Two paths compute the same function. With ``need_weights=False`` (the default) the heads go
through ``torch.nn.functional.scaled_dot_product_attention``, which picks a fused kernel and never
stores the (Lq, Lk) weights; with ``need_weights=True`` the explicit
softmax(Q K^T / sqrt(Dh)) V of ``mha.functional`` runs and the per-head weights come back.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from . import _checks
from .cache import check_cache_call
from .functional import _attention, _merge_heads, _split_heads
from .masks import _causal_mask, combine_masks

__all__ = ["MultiHeadAttention"]

# enable_gqa (key/value heads shared by groups of query heads, without copies) came in torch 2.5
_SDPA_HAS_GQA = torch.__version__ >= "2.5"  # a TorchVersion: compares as a version, not text


def _repeat_kv(x, num_heads):
    """(B, Hkv, Lk, Dh) -> (B, H, Lk, Dh): key/value head g serves query heads g*H/Hkv..."""
    return x if x.size(1) == num_heads else x.repeat_interleave(num_heads // x.size(1), dim=1)


def fused_attention(q, k, v, allowed=None, is_causal=False, dropout_p=0.0):
    """SDPA on q (B, H, Lq, Dh), k and v (B, Hkv, Lk, Dh) -> (B, H, Lq, Dh), no (Lq, Lk) weights.

    A query row that ``allowed`` (bool, True = may attend) leaves without any key gives zeros:
    it is allowed every key for the kernel (no NaN, finite gradients), then zeroed.
    """
    gqa = {}
    if q.size(1) != k.size(1):
        if _SDPA_HAS_GQA:
            gqa = {"enable_gqa": True}
        else:  # older torch: copy each key/value head for the query heads of its group
            k, v = _repeat_kv(k, q.size(1)), _repeat_kv(v, q.size(1))
    if allowed is None:
        return F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=is_causal,
                                              **gqa)
    any_key = allowed.any(dim=-1, keepdim=True)  # (B, H, Lq, 1), broadcast dims kept at 1
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | ~any_key,
                                         dropout_p=dropout_p, **gqa)
    return out.masked_fill(~any_key, 0.0)


class MultiHeadAttention(nn.Module):
    """Multi-head attention: concat_h softmax(Q_h K_h^T / sqrt(Dh)) V_h, then W_o.

    With ``num_kv_heads`` < ``num_heads`` (grouped-query attention) each key/value head serves
    num_heads / num_kv_heads consecutive query heads.

    ``forward`` checks its arguments first (``mha._checks``): all tensors on the layer's device
    and in its dtype, ``is_causal`` and ``need_weights`` bools, and a 3-D ``mask`` refused
    unless its first axis is 1, since (B, Lq, Lk) and (H, Lq, Lk) broadcast alike when B == H:
    write ``mask[:, None]`` (B, 1, Lq, Lk) for one mask per sequence or ``mask[None]``
    (1, H, Lq, Lk) for one per head.
    """

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

    def forward(self, query, key=None, value=None, *, mask=None, valid_lens=None,
                is_causal=False, need_weights=False, head_mask=None, cache=None):
        """query (B, Lq, D), key (B, Lk, kdim) defaults to query, value (B, Lk, vdim) to key;
        mask bool broadcastable to (B, H, Lq, Lk), True = may attend; valid_lens (B,) or (B, Lq);
        head_mask (H,) or (B, H). Returns output (B, Lq, D) and weights (B, H, Lq, Lk) or None.

        ``cache`` (a ``mha.KVCache``, self-attention only): the new tokens' keys and values are
        appended to it and the queries attend to all P cached positions plus the Lq new ones, so
        Lk = P + Lq. ``is_causal=True`` is then aligned at the bottom right (new query i, at
        position P + i, sees keys 0 .. P + i), and ``mask``/``valid_lens``, if given, describe
        all those keys: mask broadcastable to (B, H, Lq, P + Lq), lengths counted from key 0."""
        if cache is not None:
            check_cache_call(cache, query, key, value)
        key = query if key is None else key
        value = key if value is None else value
        past = 0 if cache is None else cache.seq_len  # keys already cached, before the new ones
        _checks.check_forward_args(self, query, key, value, mask, valid_lens, is_causal,
                                   need_weights, head_mask, past=past)
        (B, Lq, _), Lk, H = query.shape, key.size(1), self.num_heads
        allowed, causal = _layer_mask(mask, valid_lens, is_causal, (B, H, Lq, past + Lk),
                                      query.device, cached=cache is not None)
        q, k, v = self._project(query, key, value)  # (B, H, Lq, Dh), 2 x (B, Hkv, Lk, Dh)
        q, k = self._position(q, k, past)  # identity here; RotaryMultiHeadAttention rotates
        if cache is not None:
            k, v = cache.append(k, v)  # (B, Hkv, P + Lk, Dh)
        out, weights = self._attend(q, k, v, allowed, causal, need_weights)  # (B, H, Lq, Dh)
        if head_mask is not None:
            out = out * head_mask.to(out).view(-1, H, 1, 1)  # (H,) or (B, H) -> (B|1, H, 1, 1)
        return self.W_o(_merge_heads(out)), weights  # (B, H, Lq, Dh) -> (B, Lq, H*Dh) -> (B, Lq, D)

    def _position(self, q, k, offset):
        """Position information for q (B, H, Lq, Dh) and k (B, Hkv, Lk, Dh): the identity here
        (positions enter the model before the layer). The positions of the new tokens start at
        ``offset`` (the number of cached positions); a subclass such as
        ``RotaryMultiHeadAttention`` rotates q and k by them."""
        return q, k

    def _project(self, query, key, value):
        """Project and split into heads; self-attention does it in one packed matmul."""
        if query is key is value:
            linears = (self.W_q, self.W_k, self.W_v)
            weight = torch.cat([m.weight for m in linears])  # (H*Dh + 2*Hkv*Dh, D)
            bias = None if self.W_q.bias is None else torch.cat([m.bias for m in linears])
            sizes = [m.out_features for m in linears]
            q, k, v = F.linear(query, weight, bias).split(sizes, dim=-1)  # (B, L, H*Dh), ...
        else:
            q, k, v = self.W_q(query), self.W_k(key), self.W_v(value)
        # (B, L, H*Dh) -> (B, H, L, Dh) and (B, L, Hkv*Dh) -> (B, Hkv, L, Dh)
        return (_split_heads(q, self.num_heads), _split_heads(k, self.num_kv_heads),
                _split_heads(v, self.num_kv_heads))

    def _attend(self, q, k, v, allowed, causal, need_weights):
        """Attention of every head: (B, H, Lq, Dh) output and (B, H, Lq, Lk) weights or None."""
        dropout_p = self.dropout if self.training else 0.0
        if not need_weights:
            return fused_attention(q, k, v, allowed, causal, dropout_p), None
        if causal:
            allowed = _causal_mask(q.size(-2), k.size(-2), device=q.device)  # (Lq, Lk)
        k, v = _repeat_kv(k, self.num_heads), _repeat_kv(v, self.num_heads)  # (B, H, Lk, Dh)
        # one copy each into (B, H, L, Dh) order: the two batched matmuls then need none
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        return _attention(q, k, v, allowed, 1 / math.sqrt(self.d_head), dropout_p)

    @classmethod
    def from_torch(cls, module):
        """The same function as a ``batch_first`` ``torch.nn.MultiheadAttention``, weight for
        weight (separate or packed input projections, kdim/vdim, biases, dropout)."""
        return _from_torch(cls, module)

    def prune_heads(self, heads):
        """Remove the query heads in ``heads`` (a list of int indices) for good (rows of W_q,
        columns of W_o; and the rows of W_k and W_v when no other head uses them). Returns self."""
        _prune_heads(self, heads)
        return self

    def extra_repr(self):
        return (f"d_model={self.d_model}, num_heads={self.num_heads}, "
                f"num_kv_heads={self.num_kv_heads}, d_head={self.d_head}, dropout={self.dropout}")


def _layer_mask(mask, valid_lens, is_causal, shape, device, cached=False):
    """(allowed, causal): is_causal alone (Lq == Lk) stays a flag for SDPA, so no mask is built.

    ``cached``: the keys are P cached positions then the Lq new ones (Lk = P + Lq), and the causal
    triangle is aligned at the bottom right: query i sees keys 0 .. P + i. Otherwise it is
    aligned at the top left, like ``F.scaled_dot_product_attention`` (query i sees keys 0 .. i).
    """
    Lq, Lk = shape[-2:]
    if is_causal is True and cached and Lk > Lq:
        allowed = combine_masks(mask, valid_lens, False, shape, device)
        if Lq == 1:  # one new token: it sees every key, nothing to hide
            return allowed, False
        causal = torch.ones(Lq, Lk, dtype=torch.bool, device=device).tril(Lk - Lq)  # (Lq, Lk)
        return (causal if allowed is None else allowed & causal), False
    if is_causal is True and mask is None and valid_lens is None and Lq == Lk:
        return None, True
    return combine_masks(mask, valid_lens, is_causal, shape, device), False


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

"""Parameters and FLOPs of one multi-head attention layer, by formula (chapters 04, 07, the KV cache).

``count_parameters(d_model, num_heads, num_kv_heads)`` and ``count_flops(seq_len, d_model,
num_heads, num_kv_heads)`` return dicts with one entry per part and a ``"total"``. They are
checked against ``mha.MultiHeadAttention``'s real parameters and against PyTorch's FLOP counter
(``torch.utils.flop_counter``) in the tests and in chapter 07.

Shapes: H heads, Hkv key/value heads, L = seq_len, D = d_model, Dh = d_head = D / H.
"""

__all__ = ["count_flops", "count_parameters"]


def count_parameters(d_model, num_heads, num_kv_heads=None, *, bias=False):
    """Parameters of ``mha.MultiHeadAttention(d_model, num_heads, num_kv_heads=...)``.

    W_q, W_o: D x D. W_k, W_v: D x (Hkv * Dh), which is D x D without GQA (Hkv = H).
    With ``bias=True`` each projection adds its number of outputs.
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    d_kv = num_kv_heads * (d_model // num_heads)  # Hkv * Dh
    b = 1 if bias else 0
    params = {"W_q": d_model * d_model + b * d_model, "W_k": d_model * d_kv + b * d_kv,
              "W_v": d_model * d_kv + b * d_kv, "W_o": d_model * d_model + b * d_model}
    params["total"] = sum(params.values())
    return params


def count_flops(seq_len, d_model, num_heads, num_kv_heads=None):
    """FLOPs of one self-attention forward pass over ``seq_len`` tokens (batch of 1).

    A multiply-add counts as 2 FLOPs (an (n1 x n2) @ (n2 x n3) product costs 2*n1*n2*n3).
    Projections: Q and output 2*L*D*D each; K and V 2*L*D*(Hkv*Dh) each.
    Scores Q K^T: H heads of (L x Dh) @ (Dh x L) = 2*H*L*L*Dh = 2*L*L*D, whatever H is.
    Weights x V: the same, 2*L*L*D. The softmax and scaling (a few FLOPs per score, H*L*L,
    no factor D) are left out.
    """
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    L, D, H = seq_len, d_model, num_heads
    d_head = D // H
    d_kv = num_kv_heads * d_head
    flops = {"Q projection": 2 * L * D * D, "K projection": 2 * L * D * d_kv,
             "V projection": 2 * L * D * d_kv, "scores QK^T": 2 * H * L * L * d_head,
             "weights x V": 2 * H * L * L * d_head, "output projection": 2 * L * D * D}
    flops["total"] = sum(flops.values())
    return flops

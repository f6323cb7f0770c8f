"""The attention shapes of real language models, and the size of their key/value cache.

Shape legend: B batch, L cached positions, Hkv key/value heads, Dh d_head (see ``mha.functional``).

A decoder that caches its keys and values stores, for every layer, every key/value head and every
position, one key vector and one value vector of ``d_head`` numbers::

    bytes = 2 (keys and values) * num_layers * num_kv_heads * d_head * seq_len * batch_size
            * bytes_per_value

``MODELS`` holds the published configurations of a few well-known models, each with the source
that states it (a ``references.bib`` key and where in it). ``num_kv_heads == num_heads`` is
multi-head attention, ``1`` multi-query attention, anything between grouped-query attention.
"""

from dataclasses import dataclass

from . import _checks

__all__ = ["MODELS", "ModelConfig", "kv_cache_bytes"]


@dataclass(frozen=True)
class ModelConfig:
    """The attention shape of a published model: ``d_model = num_heads * d_head`` in all of these
    (``d_head`` is given because models need not follow that rule). ``context`` is the length the
    model was trained for; ``source`` a citation key of ``references.bib``, ``where`` the place in
    it that states the numbers. ``window`` is the sliding window of a model whose every position
    attends to at most the last ``window`` positions (Mistral 7B v0.1), so that its cache needs
    to hold no more than ``window`` positions; None for a model that attends to the whole
    context."""

    name: str
    num_layers: int
    d_model: int
    num_heads: int
    num_kv_heads: int
    d_head: int
    context: int
    source: str
    where: str
    window: int = None

    def cached_positions(self, seq_len):
        """The positions a cache must hold after ``seq_len`` tokens: all of them, or at most
        ``window`` for a sliding-window model (a rolling cache drops the older ones)."""
        return seq_len if self.window is None else min(seq_len, self.window)

    @property
    def attention(self):
        """"MHA", "GQA" or "MQA"."""
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"


MODELS = {
    config.name: config
    for config in (
        ModelConfig("GPT-3 175B", 96, 12288, 96, 96, 128, 2048, "brown2020language",
                    "Table 2.1 (n_layers, d_model, n_heads, d_head; n_ctx = 2048)"),
        ModelConfig("Llama 2 7B", 32, 4096, 32, 32, 128, 4096, "touvron2023llama2",
                    "Table 1 (no GQA at 7B; context 4k); Section 2.2: architecture of LLaMA, "
                    "whose 7B has 32 layers, d_model 4096, 32 heads (touvron2023llama, Table 2)"),
        ModelConfig("Llama 2 70B", 80, 8192, 64, 8, 128, 4096, "touvron2023llama2",
                    "Table 1 (GQA, context 4k), Appendix A.2.1 (8 key/value projections); "
                    "80 layers, d_model 8192, 64 heads as LLaMA 65B (touvron2023llama, Table 2)"),
        ModelConfig("Mistral 7B", 32, 4096, 32, 8, 128, 8192, "jiang2023mistral",
                    "Table 1 (dim, n_layers, head_dim, n_heads, n_kv_heads, context_len; "
                    "sliding window 4096): v0.1, the paper's model; v0.2 on drop the window",
                    window=4096),
        ModelConfig("Llama 3 8B", 32, 4096, 32, 8, 128, 8192, "grattafiori2024llama3",
                    "Table 3 (layers, model dimension, attention heads, key/value heads); "
                    "8K-token pre-training sequences (Section 3.4), the context of the first "
                    "Llama 3 release before the 128K extension"),
        ModelConfig("Falcon-7B", 32, 4544, 71, 1, 64, 2048, "tii2023falcon7b",
                    "hyperparameter table: 32 layers, d_model 4544, head_dim 64 (so 71 heads), "
                    "multi-query attention, sequence length 2048"),
    )
}


def kv_cache_bytes(num_layers, num_kv_heads, d_head, seq_len=1, *, batch_size=1,
                   bytes_per_value=2):
    """Bytes of the key/value cache: 2 * num_layers * num_kv_heads * d_head * seq_len *
    batch_size * bytes_per_value (keys and values, every layer, head and position).

    ``bytes_per_value`` is 2 for float16/bfloat16 (the default), 4 for float32, 1 for 8-bit.
    With the defaults (one sequence, one position) it is the cache's cost per token.
    """
    for name, value in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads),
                        ("d_head", d_head), ("batch_size", batch_size),
                        ("bytes_per_value", bytes_per_value)):
        _checks.check_positive_int(name, value)
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 0:
        raise ValueError(f"seq_len must be an int >= 0; got {seq_len!r}")
    return 2 * num_layers * num_kv_heads * d_head * seq_len * batch_size * bytes_per_value

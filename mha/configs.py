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

__all__ = ["DEEPSEEK_V3", "INTERLEAVED", "LatentConfig", "MODELS", "ModelConfig",
           "kv_cache_bytes", "latent_cache_bytes"]


@dataclass(frozen=True)
class ModelConfig:
    """The attention shape of a published model: ``d_model = num_heads * d_head`` in all of these
    (``d_head`` is given because models need not follow that rule). ``context`` is the length the
    model was trained for; ``source`` a citation key of ``references.bib``, ``where`` the place in
    it that states the numbers. ``window`` is the sliding window of a model whose every position
    attends to at most the last ``window`` positions (Mistral 7B v0.1), so that its cache needs
    to hold no more than ``window`` positions; None for a model that attends to the whole
    context. ``global_every = n`` interleaves: only every n-th layer is global, the others have
    ``window`` (``layer_windows``). ``d_model`` need not be ``num_heads * d_head``
    (gpt-oss: 2880 against 64 x 64)."""

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
    global_every: int = None

    def layer_windows(self):
        """Per layer, the positions it attends to: None for a global (full) layer, else its
        window. With ``global_every = n`` layers n-1, 2n-1, ... are global and the others local
        (Gemma 3: n = 6, five local layers then one global; gpt-oss: n = 2, alternating, local
        first); without it every layer has ``window`` (None: every layer global)."""
        if self.global_every is None:
            return [self.window] * self.num_layers
        return [None if (i + 1) % self.global_every == 0 else self.window
                for i in range(self.num_layers)]

    def cache_bytes(self, seq_len, *, bytes_per_value=2):
        """The key/value cache of one sequence after ``seq_len`` tokens, each local layer
        keeping only its window (a rolling cache) and each global layer every position."""
        return sum(kv_cache_bytes(1, self.num_kv_heads, self.d_head,
                                  seq_len if w is None else min(seq_len, w),
                                  bytes_per_value=bytes_per_value)
                   for w in self.layer_windows())

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


#: Models that interleave sliding-window (local) layers with global ones (chapter 14)
INTERLEAVED = {
    config.name: config
    for config in (
        ModelConfig("Gemma 3 27B", 62, 5376, 32, 16, 128, 131072, "gemma2025gemma3",
                    "Section 2.1 (5 local layers for every global one, local span 1,024 "
                    "tokens, 128K context); layers, heads and head size from the released "
                    "google/gemma-3-27b-pt config.json", window=1024, global_every=6),
        ModelConfig("gpt-oss-120b", 36, 2880, 64, 8, 64, 131072, "openai2025gptoss",
                    "Section 2.1 (36 layers, residual width 2880, 64 query heads of size 64, "
                    "8 key/value heads, layers alternating between a banded window of 128 "
                    "tokens and dense attention, 131,072 context); GptOssConfig of "
                    "transformers 5.24.0 (the same numbers)", window=128, global_every=2),
    )
}


@dataclass(frozen=True)
class LatentConfig:
    """The attention shape of a model with Multi-head Latent Attention (``mha.LatentAttention``):
    per token and layer the cache holds ``kv_rank + qk_rope_dim`` numbers, for all heads."""

    name: str
    num_layers: int
    d_model: int
    num_heads: int
    kv_rank: int
    q_rank: int
    qk_nope_dim: int
    qk_rope_dim: int
    v_head_dim: int
    source: str
    where: str


DEEPSEEK_V3 = LatentConfig(
    "DeepSeek-V3", 61, 7168, 128, 512, 1536, 128, 64, 128, "deepseekai2024v3",
    "Section 4.2, Model Hyper-Parameters (61 layers, hidden 7168, 128 heads of size 128, KV "
    "compression 512, query compression 1536, decoupled rotary key 64 per head); "
    "DeepseekV3Config of transformers 5.24.0 (the same numbers)")


def latent_cache_bytes(num_layers, kv_rank, qk_rope_dim, seq_len=1, *, batch_size=1,
                       bytes_per_value=2):
    """Bytes of a Multi-head Latent Attention cache: num_layers * (kv_rank + qk_rope_dim) *
    seq_len * batch_size * bytes_per_value (one latent and one shared rotary key per token and
    layer, whatever the number of heads)."""
    for name, value in (("num_layers", num_layers), ("kv_rank", kv_rank),
                        ("qk_rope_dim", qk_rope_dim), ("batch_size", batch_size),
                        ("bytes_per_value", bytes_per_value)):
        _checks.check_positive_int(name, value)
    if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 0:
        raise ValueError(f"seq_len must be an int >= 0; got {seq_len!r}")
    return num_layers * (kv_rank + qk_rope_dim) * seq_len * batch_size * bytes_per_value


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

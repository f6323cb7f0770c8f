"""The attention shapes of real language models, and the size of their key/value cache.

Shape legend: B batch, L cached positions, Hkv key/value heads, Dh d_head (see ``mha.functional``).

A decoder that caches its keys and values stores, for every layer, every key/value head and every
position, one key vector and one value vector of ``d_head`` numbers::

    bytes = 2 (keys and values) * num_layers * num_kv_heads * d_head * seq_len * batch_size
            * bytes_per_value

``MODELS`` holds the published configurations of a few well-known models, each with the source
that states it (a ``references.bib`` key and where in it). ``num_kv_heads == num_heads`` is
multi-head attention, ``1`` multi-query attention, anything between grouped-query attention.

``HYBRIDS`` holds models whose layers are either linear attention (Gated DeltaNet, Kimi Delta
Attention: a recurrent state of fixed size, ``linear_state_bytes``) or full attention (a cache
that grows with the context); ``HybridConfig.cache_bytes`` adds the two. The caches and the
convolutions' inputs are counted at ``bytes_per_value`` (2: bfloat16, the model's dtype), the
recurrent states' matrices at ``state_bytes_per_value`` (4: float32, as transformers keeps them).
"""

from dataclasses import dataclass

from . import _checks

__all__ = ["DEEPSEEK_V3", "HYBRIDS", "HybridConfig", "INTERLEAVED", "LatentConfig", "MODELS",
           "ModelConfig", "kv_cache_bytes", "latent_cache_bytes", "linear_state_bytes"]


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


def linear_state_bytes(num_layers, num_value_heads, d_head_k, d_head_v, *, conv_channels=0,
                       conv_size=4, batch_size=1, bytes_per_value=2, state_bytes_per_value=4):
    """Bytes of the recurrent state of linear-attention layers, the same after any number of
    tokens: num_layers * batch_size * (num_value_heads * d_head_k * d_head_v *
    state_bytes_per_value + conv_channels * (conv_size - 1) * bytes_per_value).

    Per layer and value head, one (d_head_k, d_head_v) matrix (``mha.delta_rule_step``'s state),
    at ``state_bytes_per_value`` bytes a number: 4 (float32) by default, as transformers keeps
    it when the model runs in bfloat16 (``torch_chunk_gated_delta_rule`` returns a float32
    state, ``LinearAttentionLayer`` stores it as it is, Kimi Linear casts it to float32; so does
    ``mha.GatedDeltaNet``). The state is multiplied by a gate at every token, and a decay like
    0.999 rounds to 1.0 in bfloat16 (8 bits of mantissa): the gate would vanish and the state
    would not forget. Serving engines make the state's dtype a setting.
    Per layer, the last ``conv_size - 1`` inputs of its short causal convolution over
    ``conv_channels`` channels (the queries', keys' and values' features: 2 * Hk * Dk + Hv * Dv
    for Gated DeltaNet and Kimi Delta Attention), all the next token's convolution needs, at
    ``bytes_per_value`` bytes a number: 2 by default, the model's dtype (bfloat16), as
    transformers keeps them (it keeps ``conv_size`` inputs; serving engines keep the
    ``conv_size - 1`` that suffice). ``conv_channels=0``: no convolution.
    """
    for name, value in (("num_layers", num_layers), ("num_value_heads", num_value_heads),
                        ("d_head_k", d_head_k), ("d_head_v", d_head_v),
                        ("conv_size", conv_size), ("batch_size", batch_size),
                        ("bytes_per_value", bytes_per_value),
                        ("state_bytes_per_value", state_bytes_per_value)):
        _checks.check_positive_int(name, value)
    _checks.check_int("conv_channels", conv_channels, minimum=0)
    per_layer = (num_value_heads * d_head_k * d_head_v * state_bytes_per_value
                 + conv_channels * (conv_size - 1) * bytes_per_value)
    return num_layers * batch_size * per_layer


LAYER_TYPES = ("linear", "full")


@dataclass(frozen=True)
class HybridConfig:
    """A model whose layers are linear attention or full attention: ``layer_types`` has one
    entry per layer, "linear" or "full" (the Hugging Face config's ``layer_types``,
    "linear_attention" / "full_attention", shortened).

    The full layers are grouped-query attention (``num_kv_heads`` key/value heads of ``d_head``,
    as ``ModelConfig``) or Multi-head Latent Attention (``kv_rank`` and ``qk_rope_dim``, as
    ``LatentConfig``): give one pair, leave the other None. ``num_heads`` is their query heads.
    The linear layers (``linear_kind``: "Gated DeltaNet" or "Kimi Delta Attention") have
    ``linear_num_key_heads`` query/key heads of ``linear_d_head_k`` and
    ``linear_num_value_heads`` value heads of ``linear_d_head_v`` (a state of
    ``linear_d_head_k x linear_d_head_v`` per value head) and a short causal convolution of
    ``conv_size`` taps. ``context``, ``source`` and ``where`` as in ``ModelConfig``."""

    name: str
    layer_types: tuple
    num_heads: int
    linear_kind: str
    linear_num_key_heads: int
    linear_num_value_heads: int
    linear_d_head_k: int
    linear_d_head_v: int
    context: int
    source: str
    where: str
    num_kv_heads: int = None
    d_head: int = None
    kv_rank: int = None
    qk_rope_dim: int = None
    conv_size: int = 4

    def __post_init__(self):
        types = tuple(self.layer_types)
        bad = sorted(set(types) - set(LAYER_TYPES))
        if not types or bad:
            raise ValueError(f"layer_types must be a non-empty tuple of {LAYER_TYPES}; got "
                             f"{self.layer_types!r}")
        object.__setattr__(self, "layer_types", types)
        for name in ("num_heads", "linear_num_key_heads", "linear_num_value_heads",
                     "linear_d_head_k", "linear_d_head_v", "conv_size", "context"):
            _checks.check_positive_int(name, getattr(self, name))
        gqa = [getattr(self, n) is not None for n in ("num_kv_heads", "d_head")]
        mla = [getattr(self, n) is not None for n in ("kv_rank", "qk_rope_dim")]
        if not ((all(gqa) and not any(mla)) or (all(mla) and not any(gqa))):
            raise ValueError(f"{self.name}: give the full layers' num_kv_heads and d_head (GQA) "
                             f"or kv_rank and qk_rope_dim (MLA), one pair; got num_kv_heads="
                             f"{self.num_kv_heads!r}, d_head={self.d_head!r}, kv_rank="
                             f"{self.kv_rank!r}, qk_rope_dim={self.qk_rope_dim!r}")
        for name in ("num_kv_heads", "d_head") if all(gqa) else ("kv_rank", "qk_rope_dim"):
            _checks.check_positive_int(name, getattr(self, name))

    @property
    def num_layers(self):
        return len(self.layer_types)

    @property
    def num_linear(self):
        """How many layers are linear attention."""
        return self.layer_types.count("linear")

    @property
    def num_full(self):
        """How many layers are full attention."""
        return self.layer_types.count("full")

    @property
    def full_attention(self):
        """The full layers' kind: "MLA", or "MHA", "GQA", "MQA" as ``ModelConfig.attention``."""
        if self.kv_rank is not None:
            return "MLA"
        if self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"

    @property
    def conv_channels(self):
        """The channels of the linear layers' short convolution: the queries', keys' and values'
        features, 2 * Hk * Dk + Hv * Dv (3 * H * D for Kimi Delta Attention, whose key and
        value heads are the same 32 of 128)."""
        return (2 * self.linear_num_key_heads * self.linear_d_head_k
                + self.linear_num_value_heads * self.linear_d_head_v)

    def _full_layers_bytes(self, num_layers, seq_len, batch_size, bytes_per_value):
        if num_layers == 0:
            _checks.check_int("seq_len", seq_len, minimum=0)
            return 0
        if self.kv_rank is not None:
            return latent_cache_bytes(num_layers, self.kv_rank, self.qk_rope_dim, seq_len,
                                      batch_size=batch_size, bytes_per_value=bytes_per_value)
        return kv_cache_bytes(num_layers, self.num_kv_heads, self.d_head, seq_len,
                              batch_size=batch_size, bytes_per_value=bytes_per_value)

    def state_bytes(self, *, batch_size=1, bytes_per_value=2, state_bytes_per_value=4):
        """The linear layers' state (``linear_state_bytes``): the same at every context; its
        matrices at ``state_bytes_per_value`` (4: float32, as transformers keeps them), the
        convolution's inputs at ``bytes_per_value`` (2: bfloat16, the model's dtype)."""
        if self.num_linear == 0:
            return 0
        return linear_state_bytes(self.num_linear, self.linear_num_value_heads,
                                  self.linear_d_head_k, self.linear_d_head_v,
                                  conv_channels=self.conv_channels, conv_size=self.conv_size,
                                  batch_size=batch_size, bytes_per_value=bytes_per_value,
                                  state_bytes_per_value=state_bytes_per_value)

    def full_cache_bytes(self, seq_len, *, batch_size=1, bytes_per_value=2,
                         state_bytes_per_value=4):
        """The full layers' cache after ``seq_len`` tokens, at ``bytes_per_value``: in
        proportion to ``seq_len``. (``state_bytes_per_value`` is taken, as by every method
        here, and unused: the full layers keep no recurrent state.)"""
        _checks.check_positive_int("state_bytes_per_value", state_bytes_per_value)
        return self._full_layers_bytes(self.num_full, seq_len, batch_size, bytes_per_value)

    def cache_bytes(self, seq_len, *, batch_size=1, bytes_per_value=2, state_bytes_per_value=4):
        """What the model keeps for ``seq_len`` tokens of one sequence: the full layers' cache
        (``bytes_per_value``, 2: bfloat16) plus the linear layers' state (its matrices at
        ``state_bytes_per_value``, 4: float32, its convolution's inputs at
        ``bytes_per_value``)."""
        return (self.full_cache_bytes(seq_len, batch_size=batch_size,
                                      bytes_per_value=bytes_per_value)
                + self.state_bytes(batch_size=batch_size, bytes_per_value=bytes_per_value,
                                   state_bytes_per_value=state_bytes_per_value))

    def all_full_bytes(self, seq_len, *, batch_size=1, bytes_per_value=2,
                       state_bytes_per_value=4):
        """The cache of the same model with every layer one of its full-attention layers (no
        recurrent state: ``state_bytes_per_value`` is checked and unused)."""
        _checks.check_positive_int("state_bytes_per_value", state_bytes_per_value)
        return self._full_layers_bytes(self.num_layers, seq_len, batch_size, bytes_per_value)


def _every(n, num_layers, first):
    """"full" at layers first, first + n, ... (0-indexed), "linear" elsewhere."""
    return tuple("full" if i >= first and (i - first) % n == 0 else "linear"
                 for i in range(num_layers))


#: Hybrid models of 2025-2026 that keep full attention in about one layer in four
HYBRIDS = {
    config.name: config
    for config in (
        HybridConfig(
            "Qwen3-Next-80B-A3B", _every(4, 48, 3), 16, "Gated DeltaNet", 16, 32, 128, 128,
            262144, "qwen2025qwen3next",
            "Qwen3NextConfig of transformers 5.24.0 (defaults for Qwen/Qwen3-Next-80B-A3B-"
            "Instruct): 48 layers, every 4th full attention (full_attention_interval 4), 16 "
            "query and 2 key/value heads of head_dim 256, linear attention with 16 key heads "
            "and 32 value heads of 128, conv kernel 4; context 262,144 from the checkpoint's "
            "config.json (max_position_embeddings; the class's default is 32,768)",
            num_kv_heads=2, d_head=256),
        HybridConfig(
            "Qwen3.5-27B", _every(4, 64, 3), 24, "Gated DeltaNet", 16, 48, 128, 128, 262144,
            "qwen2026qwen35",
            "Qwen3_5TextConfig of transformers 5.24.0 (checkpoint Qwen/Qwen3.5-27B) for the "
            "layout (every 4th layer full attention), head_dim 256, 4 key/value heads, linear "
            "key heads 16 of 128, value heads of 128 and conv kernel 4; the checkpoint's "
            "config.json for what its defaults (a 32-layer, 16-head shape) do not give: 64 "
            "layers, 24 query heads, 48 linear value heads, context 262,144",
            num_kv_heads=4, d_head=256),
        HybridConfig(
            "Kimi-Linear-48B-A3B",
            tuple("full" if i + 1 in (4, 8, 12, 16, 20, 24, 27) else "linear"
                  for i in range(27)),
            32, "Kimi Delta Attention", 32, 32, 128, 128, 1048576, "kimi2025linear",
            "KimiLinearConfig of transformers 5.24.0 (defaults for moonshotai/Kimi-Linear-48B-"
            "A3B-Instruct): 27 layers, MLA full layers with kv_lora_rank 512 and "
            "qk_rope_head_dim 64 (32 heads), KDA layers with 32 heads of 128 and conv kernel 4, "
            "context 1,048,576 (model_max_length); the layers from the checkpoint's "
            "linear_attn_config (full_attn_layers 4, 8, ..., 24, 27, counted from 1: 7 MLA, 20 "
            "KDA; the class's default layer_types has 6 full layers)",
            kv_rank=512, qk_rope_dim=64),
        HybridConfig(
            "OLMo-Hybrid-7B", _every(4, 32, 3), 30, "Gated DeltaNet", 30, 30, 96, 192, 65536,
            "olmo2026hybrid",
            "OlmoHybridConfig of transformers 5.24.0 (defaults for allenai/Olmo-Hybrid-7B): 32 "
            "layers, every 4th full attention, 30 heads (num_key_value_heads defaults to "
            "num_attention_heads: MHA) of head_dim 128 (hidden_size 3840 / 30), linear "
            "attention with 30 key and 30 value heads, key head dim 96 (0.75 * 3840 / 30), "
            "value head dim 192 (2 x 96), conv kernel 4, context 65,536",
            num_kv_heads=30, d_head=128),
    )
}

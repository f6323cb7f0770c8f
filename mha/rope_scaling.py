"""Rotary frequencies for contexts longer than the one a model was trained on.

Plain RoPE turns feature pair j of a token at position m by the angle m * theta_j, with
theta_j = base ** (-2j / d), j = 0 .. d/2 - 1, over the d = ``rope_dim`` rotated features
(``mha.rotary``). Pair j turns L * theta_j / (2 pi) times over a context of L tokens: the first
pairs many times (they see the distance to the last few tokens), the last ones less than once
(they see where in a long context a token is). Beyond the training context the slow pairs meet
angles they never saw; the methods here change the frequencies so that the angles of the longer
context stay within the trained range. ``rope_frequencies`` returns the frequencies and a factor
for the rotated features, in Hugging Face's ``rope_parameters`` vocabulary (``scaling``):

- ``{"rope_type": "linear", "factor": s}``: position interpolation (Chen et al. 2023,
  "Extending context window of large language models via positional interpolation"): every
  frequency divided by s, so position m turns as position m / s did; s times the context
  fits into the trained angles (Gemma 3's global layers: s = 8).
- ``{"rope_type": "yarn", "factor": s, "original_max_position_embeddings": L, ...}``
  (Peng et al. 2023, "YaRN: efficient context window extension"; DeepSeek-V3, gpt-oss,
  Qwen 3): pairs that turn more than ``beta_fast`` (32) times over the original context L keep
  their frequency (they only measure short distances), pairs that turn fewer than
  ``beta_slow`` (1) times are divided by s (interpolated, as ``linear``), with a linear ramp
  between. The rotated features are multiplied by the attention factor 0.1 ln(s) + 1 (Hugging
  Face multiplies cos and sin by it), so the scores of the rotated part by its square: a
  longer context spreads the softmax, a larger logit scale sharpens it back. With
  ``mscale`` and ``mscale_all_dim`` (DeepSeek-V3: both 1.0) the factor is the ratio
  (0.1 mscale ln(s) + 1) / (0.1 mscale_all_dim ln(s) + 1), 1.0 there; DeepSeek's layers then
  multiply the softmax scale itself by (0.1 mscale_all_dim ln(s) + 1) ** 2, which reaches every
  feature of the score, not only the rotated ones (not done here: a layer's own scale).
- ``{"rope_type": "llama3", "factor": s, "low_freq_factor": a, "high_freq_factor": b,
  "original_max_position_embeddings": L}`` (Llama 3.1, Llama 4): three bands too, by the
  turns L / wavelength of pair j over L (wavelength 2 pi / theta_j), with other edges and
  another blend: more than b turns kept, fewer than a divided by s, and between them a blend
  whose weight grows linearly in the turns (YaRN's ramp is linear in the pair index j). No
  attention factor. a = b is a step with no blend (Llama 4 Scout: a = b = 1).

``scaling=None`` (or ``{"rope_type": "default"}``) is plain RoPE. The base and the rotated
fraction, which Hugging Face keeps in the same dict (``rope_theta``, ``partial_rotary_factor``),
are the arguments ``base`` and ``rope_dim`` here. The methods whose frequencies change with the
sequence length or come as per-frequency lists (``"dynamic"``, ``"longrope"``) are not here.
"""

import math

import torch

from . import _checks

__all__ = ["check_base", "check_scaling", "rope_frequencies"]

# rope_type -> (required keys, optional keys with their defaults)
_KEYS = {
    "default": ((), {}),
    "linear": (("factor",), {}),
    "yarn": (("factor", "original_max_position_embeddings"),
             {"beta_fast": 32.0, "beta_slow": 1.0, "mscale": None, "mscale_all_dim": None,
              "attention_factor": None, "truncate": True}),
    "llama3": (("factor", "low_freq_factor", "high_freq_factor",
                "original_max_position_embeddings"), {}),
}
# keys of Hugging Face's rope_parameters that are other arguments here
_ELSEWHERE = {"rope_theta": "base=", "partial_rotary_factor": "rope_dim= (the number of "
              "rotated features: partial_rotary_factor * d_head)"}
_EXAMPLE = "{'rope_type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 32768}"


def check_base(base):
    if isinstance(base, bool) or not isinstance(base, (int, float)):
        raise TypeError(f"base must be a number; got {base!r} ({type(base).__name__})")
    if not math.isfinite(base) or base <= 1:
        raise ValueError(f"base must be a finite number > 1 (10000.0 in most models); got {base}")


def _number(rope_type, key, value, *, minimum, strict=False):
    """``scaling[key]``: a finite real >= minimum (> minimum with ``strict``): returns a float."""
    name = f"scaling[{key!r}] ({rope_type})"
    number = _checks.check_real(name, value)
    if number < minimum or (strict and number == minimum):
        raise ValueError(f"{name} must be a number {'>' if strict else '>='} {minimum}; "
                         f"got {number}")
    return number


def check_scaling(scaling):
    """``scaling`` (None or a dict in Hugging Face's ``rope_parameters`` vocabulary) -> None or
    a new dict with every key of its rope type, defaults filled in, values checked."""
    if scaling is None:
        return None
    if not isinstance(scaling, dict):
        raise TypeError(f"scaling must be None or a dict such as {_EXAMPLE}; "
                        f"got {_checks._kind(scaling)}")
    if "rope_type" not in scaling:
        hint = " (Hugging Face's older configs call it 'type')" if "type" in scaling else ""
        raise ValueError(f"scaling must have a 'rope_type' key, one of {tuple(_KEYS)}{hint}; "
                         f"got the keys {sorted(map(str, scaling))}")
    rope_type = scaling["rope_type"]
    if not isinstance(rope_type, str) or rope_type not in _KEYS:
        raise ValueError(f"scaling['rope_type'] must be one of {tuple(_KEYS)} (those whose "
                         f"frequencies do not change with the sequence length); got "
                         f"{_checks._kind(rope_type)}")
    required, optional = _KEYS[rope_type]
    for key in scaling:
        if key in _ELSEWHERE:
            raise ValueError(f"scaling[{key!r}]: pass it as {_ELSEWHERE[key]}, not in scaling")
        if key != "rope_type" and key not in required and key not in optional:
            raise ValueError(f"scaling has the key {key!r}, unknown for rope_type "
                             f"{rope_type!r}: it takes {list(required)} and optionally "
                             f"{list(optional)}")
    missing = [key for key in required if scaling.get(key) is None]
    if missing:
        raise ValueError(f"scaling of rope_type {rope_type!r} needs the keys {list(required)}; "
                         f"missing {missing}")
    out = {"rope_type": rope_type, **optional, **{k: v for k, v in scaling.items()
                                                  if k != "rope_type" and v is not None}}
    _check_values(rope_type, out)
    return out


def _check_values(rope_type, p):
    """Check and convert ``p``'s values in place (numbers to float, lengths to int)."""
    if "factor" in p:
        p["factor"] = _number(rope_type, "factor", p["factor"], minimum=1.0)
    if "original_max_position_embeddings" in p:
        p["original_max_position_embeddings"] = _checks.check_positive_int(
            f"scaling['original_max_position_embeddings'] ({rope_type})",
            p["original_max_position_embeddings"])
    if rope_type == "llama3":
        low = _number(rope_type, "low_freq_factor", p["low_freq_factor"], minimum=0, strict=True)
        high = _number(rope_type, "high_freq_factor", p["high_freq_factor"], minimum=0,
                       strict=True)
        if high < low:
            raise ValueError(f"scaling['high_freq_factor'] ({high}) must be at least "
                             f"scaling['low_freq_factor'] ({low}) (Llama 3.1: 4 and 1; equal, "
                             f"as in Llama 4 Scout's 1 and 1, is a step with no blend)")
        p["low_freq_factor"], p["high_freq_factor"] = low, high
    if rope_type == "yarn":
        fast = _number(rope_type, "beta_fast", p["beta_fast"], minimum=0, strict=True)
        slow = _number(rope_type, "beta_slow", p["beta_slow"], minimum=0, strict=True)
        if fast <= slow:
            raise ValueError(f"scaling['beta_fast'] ({fast}) must be greater than "
                             f"scaling['beta_slow'] ({slow}) (the paper: 32 and 1)")
        p["beta_fast"], p["beta_slow"] = fast, slow
        for key in ("mscale", "mscale_all_dim", "attention_factor"):
            if p[key] is not None:
                p[key] = _number(rope_type, key, p[key], minimum=0, strict=True)
        if (p["mscale"] is None) != (p["mscale_all_dim"] is None):
            raise ValueError("scaling['mscale'] and scaling['mscale_all_dim'] (yarn) go together "
                             "(DeepSeek-V3: both 1.0): give both or neither")
        if p["attention_factor"] is not None and p["mscale"] is not None:
            raise ValueError("scaling (yarn): give either 'attention_factor' or 'mscale' and "
                             "'mscale_all_dim' (from which it follows), not both")
        _checks.check_bool("scaling['truncate'] (yarn)", p["truncate"])


def _check_rope_dim(rope_dim):
    rope_dim = _checks.check_int("rope_dim", rope_dim)
    if rope_dim <= 0 or rope_dim % 2:
        raise ValueError(f"rope_dim must be an even int > 0 (the number of rotated features, "
                         f"in pairs); got {rope_dim}")
    return rope_dim


def rope_frequencies(rope_dim, *, base=10000.0, scaling=None, dtype=torch.float32, device=None):
    """The rotary frequencies of ``rope_dim`` rotated features and the factor for them:
    returns ``(inv_freq, attention_factor)``, inv_freq (rope_dim/2,) in ``dtype``, entry j the
    angle pair j turns per position, and a float that multiplies the rotated features.

    ``scaling=None``: plain RoPE, theta_j = base ** (-2j / rope_dim), factor 1.0. Otherwise a
    dict in Hugging Face's ``rope_parameters`` vocabulary (see the module docstring):
    ``{"rope_type": "linear", "factor": s}``, ``{"rope_type": "yarn", "factor": s,
    "original_max_position_embeddings": L}`` (optionally ``beta_fast``, ``beta_slow``,
    ``mscale`` with ``mscale_all_dim``, ``attention_factor``, ``truncate``) or
    ``{"rope_type": "llama3", "factor": s, "low_freq_factor": a, "high_freq_factor": b,
    "original_max_position_embeddings": L}``.
    """
    rope_dim = _check_rope_dim(rope_dim)
    check_base(base)
    scaling = check_scaling(scaling)
    j = torch.arange(rope_dim // 2, device=device, dtype=dtype)
    theta = base ** (-2.0 * j / rope_dim)  # (rope_dim/2,) from 1 down to about 1 / base
    rope_type = "default" if scaling is None else scaling["rope_type"]
    if rope_type == "default":
        return theta, 1.0
    if rope_type == "linear":
        return theta / scaling["factor"], 1.0
    if rope_type == "yarn":
        return _yarn(theta, rope_dim, float(base), scaling)
    return _llama3(theta, scaling), 1.0


def _yarn(theta, rope_dim, base, p):
    """YaRN: (rope_dim/2,) frequencies, ramped from theta_j (fast pairs) to theta_j / s (slow
    ones), and the attention factor."""
    s, context = p["factor"], p["original_max_position_embeddings"]

    def pair_turning(rotations):  # the (fractional) pair j that turns `rotations` times over L
        # L * theta_j / (2 pi) = r  <=>  j = rope_dim * ln(L / (2 pi r)) / (2 ln base)
        return rope_dim * math.log(context / (2 * math.pi * rotations)) / (2 * math.log(base))

    low, high = pair_turning(p["beta_fast"]), pair_turning(p["beta_slow"])  # low < high
    if p["truncate"]:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, rope_dim - 1)
    if high == low:
        high += 1e-3  # a step rather than a ramp (as Hugging Face and the YaRN code)
    j = torch.arange(theta.numel(), device=theta.device, dtype=theta.dtype)
    ramp = ((j - low) / (high - low)).clamp(0, 1)  # 0: pair j kept, 1: divided by s
    inv_freq = theta * (1 - ramp) + theta / s * ramp
    return inv_freq, _yarn_attention_factor(p)


def _yarn_attention_factor(p):
    s = p["factor"]

    def m(a):  # the paper's sqrt(1/t) = 0.1 ln(s) + 1, with DeepSeek's coefficient a
        return 1.0 if s <= 1 else 0.1 * a * math.log(s) + 1.0

    if p["attention_factor"] is not None:
        return p["attention_factor"]
    if p["mscale"] is not None:  # DeepSeek-V3: the ratio, 1.0 when the two are equal
        return m(p["mscale"]) / m(p["mscale_all_dim"])
    return m(1.0)


def _llama3(theta, p):
    """Llama 3.1: (rope_dim/2,) frequencies, by the turns of each pair over the original
    context: many kept, fewer than ``low`` divided by s, a blend linear in the turns between."""
    s, context = p["factor"], p["original_max_position_embeddings"]
    low, high = p["low_freq_factor"], p["high_freq_factor"]
    wavelength = 2 * math.pi / theta  # (rope_dim/2,) tokens per full turn of pair j
    turns = context / wavelength  # turns of pair j over the original context
    if high == low:  # no blend: a step at L / low (Llama 4 Scout: 1 and 1)
        keep = (turns >= low).to(theta.dtype)
    else:  # weight of the kept frequency: 1 from `high` turns up, 0 below `low`
        keep = ((turns - low) / (high - low)).clamp(0, 1)
    return theta * keep + theta / s * (1 - keep)

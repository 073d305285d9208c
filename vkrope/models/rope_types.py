"""Every rope type as a row of small functions, as transformers 5 keys its
`ROPE_INIT_FUNCTIONS` by rope type: what the type requires of a
`ModelRope`, its inverse frequencies (in float32 step by step, as
transformers computes them, or the same formulas in float64), its attention
factor, and what a call's positions decide (dynamic's base, longrope's
short / long factors). A new rope type is one row here and its oracle in
tests/oracles/oracle_hf.py."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..yarn import YaRN
from ..exact_math import pow32, pow64
from ..words import brief

if TYPE_CHECKING:
    from .rope import ModelRope


# llama.cpp's q scale (a GGUF's attention temperature: its scale and the positions per step, ModelRope.q_scale):
# read from a GGUF file only (from_hf ignores such keys in a config's rope dict: transformers never reads them).
GGUF_PARAMS = frozenset({"attn_temperature_scale", "attn_temperature_length"})
# Keys read whatever the rope type: the rotated width (from_hf's rotary_dim; proportional's pairs), Ministral 3's
# and Mistral 4's q scale (transformers' llama_4_scaling_beta), and llama.cpp's.
COMMON_PARAMS = frozenset({"partial_rotary_factor", "llama_4_scaling_beta"}) | GGUF_PARAMS


def powers(t: Any, base: Any, n_pairs: int, denom: int) -> np.ndarray:
    """base ** (2i / denom) for the first n_pairs pairs, in dtype t (float32: the power correctly rounded)."""
    if t is np.float32:
        return pow32(base, np.arange(0, 2 * n_pairs, 2, dtype=np.float32) / np.float32(denom))
    return pow64(base, np.arange(0, 2 * n_pairs, 2, dtype=np.float64) / denom)


def _default(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    return t(1.0) / powers(t, r.theta, r.rotary_dim // 2, r.rotary_dim)


def _linear(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    return _default(r, seq_len, t) / t(r.factor)


def _proportional(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    """Gemma 4's: the first partial_rotary_factor of the head's pairs turn, on the head's exponents."""
    angles = int(r.param("partial_rotary_factor", 1.0) * r.head_dim // 2)
    inv = np.zeros(r.head_dim // 2, t)
    inv[:angles] = t(1.0) / powers(t, r.theta, angles, r.head_dim)
    return inv / t(r.factor)


def _dynamic(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    return t(1.0) / powers(t, dynamic_base(r, seq_len, t), r.rotary_dim // 2, r.rotary_dim)


def _ntk_alpha(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    """HunYuan's (transformers' compute_ntk_alpha_rope_parameters): the base stretched once by
    alpha ** (dim / (dim - 2)), in float64 as Python computes it, then the default frequencies."""
    dim = r.rotary_dim
    return t(1.0) / powers(t, r.theta * r.param("alpha") ** (dim / (dim - 2)), dim // 2, dim)


def dynamic_base(r: ModelRope, seq_len: int | None, t: Any) -> Any:
    """dynamic NTK's base for `seq_len`: transformers computes it from a
    tensor (max(position_ids) + 1), so in float32, once past
    max_position_embeddings; at initialisation (no positions) as at
    max_position_embeddings, in Python floats (the base itself, but for a
    factor whose f - 1 rounds; the exact angles take the base itself)."""
    dim, mpe, f = r.rotary_dim, r.mpe, r.factor
    if seq_len is None or seq_len <= mpe:
        return r.theta if t is np.float64 else r.theta * _ratio64(r, mpe) ** (dim / (dim - 2))
    if t is np.float64:
        return r.theta * _ratio64(r, seq_len) ** (dim / (dim - 2))
    s = np.float32(seq_len)
    ratio = (np.float32(f) * s) / np.float32(mpe) - np.float32(f - 1)  # (Python scalars as float32)
    powered = np.float32(math.pow(float(ratio), dim / (dim - 2)))  # (torch: a float32 tensor to a double power)
    return float(np.float32(np.float32(r.theta) * powered))


def _ratio64(r: ModelRope, seq_len: int) -> float:
    """(factor * seq_len / max_position_embeddings) - (factor - 1), the ratio transformers' dynamic function
    raises to dim / (dim - 2), in Python floats: at initialisation (seq_len max_position_embeddings) 1, but 0
    where factor - 1 rounds to factor."""
    return (r.factor * seq_len / r.mpe) - (r.factor - 1)


def is_long(r: ModelRope, seq_len: int | None) -> bool:
    """longrope's switch: the long factors (and long_mscale) when the
    call's max(position_ids) + 1 exceeds original_max_position_embeddings."""
    return bool(seq_len and seq_len > r.orig)


def one_factor_list(r: ModelRope) -> bool:
    """Whether a longrope's short and long factors are one list (a GGUF's, which llama.cpp picks by its
    context: models.gguf.at_context)."""
    return r.rope_type == "longrope" and r.param("short_factor") == r.param("long_factor")


def _longrope_varies(r: ModelRope) -> bool:
    """Whether a longrope's call can change its frequencies or factor: not with one factor list and no
    mscales switch."""
    return not one_factor_list(r) or mscales(r) is not None


def mscales(r: ModelRope) -> tuple[float, float] | None:
    """PhiMoE's longrope (`short_mscale`, `long_mscale`), or None: transformers' PhimoeRotaryEmbedding
    recomputes its frequencies without the length (the short factors at every length) and scales cos / sin
    by long_mscale past the original length, short_mscale within it (the golden phi-3.5-moe-shape). from_hf
    keeps the mscales only where the config class reads them (PhiMoE's)."""
    short, long = r.param("short_mscale"), r.param("long_mscale")
    return None if r.rope_type != "longrope" or short is None else (float(short), float(long))


def _longrope(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    """longrope's frequencies: the short or long factors by `is_long`; always the short ones for PhiMoE
    (`mscales`)."""
    long = is_long(r, seq_len) and mscales(r) is None
    ext = np.asarray(r.param("long_factor") if long else r.param("short_factor"), t)
    return t(1.0) / (ext * powers(t, r.theta, r.rotary_dim // 2, r.rotary_dim))


def _yarn(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    """transformers' _compute_yarn_parameters, in dtype t: the ramp is
    `vkrope.YaRN`'s (the same correction dims, truncation and guard)."""
    p = r.param
    pos = powers(t, r.theta, r.rotary_dim // 2, r.rotary_dim)
    betas = {k: float(p(k)) for k in ("beta_fast", "beta_slow") if p(k) is not None}  # (else YaRN's defaults)
    y = YaRN(r.orig, **betas, truncate=bool(p("truncate", True)))
    extrap_w = y.mix(r.rotary_dim, r.theta, t)  # (times ext_factor 1: exact)
    extrap = t(1.0) / pos
    interp = t(1.0) / (t(r.factor) * pos)
    return interp * (t(1) - extrap_w) + extrap * extrap_w


def _llama3(r: ModelRope, seq_len: int | None, t: Any) -> np.ndarray:
    """transformers' _compute_llama3_parameters, in dtype t."""
    p = r.param
    inv = _default(r, seq_len, t)
    factor, lff, hff = p("factor"), p("low_freq_factor"), p("high_freq_factor")
    old = r.orig
    low_wl, high_wl = old / lff, old / hff
    # (a Python number over a tensor is torch's `reciprocal() * number`, not a division: 26% of float32
    # quotients differ by an ulp, which the smoothing below magnifies to several)
    wavelen = (t(1) / inv) * t(2 * math.pi)
    llama = np.where(wavelen > t(low_wl), inv / t(factor), inv)
    smooth = ((t(1) / wavelen) * t(old) - t(lff)) / t(hff - lff)
    smoothed = (t(1) - smooth) * llama / t(factor) + smooth * llama
    medium = ~(wavelen < t(high_wl)) & ~(wavelen > t(low_wl))
    return np.where(medium, smoothed, llama)


def _one(r: ModelRope) -> float:
    return 1.0


def _yes(r: ModelRope) -> bool:
    return True


def _yarn_factor(r: ModelRope) -> float:
    """yarn's `attention_factor`, else 0.1 m ln(factor) + 1 with m = mscale / mscale_all_dim's ratio
    (DeepSeek) or 1."""
    given = r.param("attention_factor")
    if given is not None:
        return float(given)
    f = r.factor

    def g(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    ms, msa = r.param("mscale"), r.param("mscale_all_dim")
    if ms and msa:
        return float(g(f, ms) / g(f, msa))
    return g(f)


def _longrope_factor(r: ModelRope) -> float:
    """longrope's `attention_factor`, else sqrt(1 + ln(factor) / ln(original_max_position_embeddings)); PhiMoE's
    `short_mscale` (what a call within the original length is scaled by: `ModelRope.attention_factor_for`)."""
    pair = mscales(r)
    if pair is not None:
        return pair[0]
    given = r.param("attention_factor")
    if given is not None:
        return float(given)
    f = r.factor
    if f <= 1.0:
        return 1.0
    return math.sqrt(1 + math.log(f) / math.log(r.orig))


def _no_check(r: ModelRope) -> None:
    pass


def _check_dynamic(r: ModelRope) -> None:
    if r.max_position_embeddings is None:
        raise ValueError("rope_type 'dynamic' needs max_position_embeddings")
    if r.rotary_dim < 4:
        raise ValueError(f"rope_type 'dynamic' needs a rotary dim of 4 or more (its base grows by the power "
                         f"dim / (dim - 2)); got {r.rotary_dim}")
    if not _ratio64(r, r.mpe) > 0:  # (an adversary's: factor 1e17, whose factor - 1 rounds to itself)
        raise ValueError(f"rope_type 'dynamic': factor {r.factor:g} makes the ratio of transformers' initial base, "
                         f"factor * L / L - (factor - 1) in float64, {_ratio64(r, r.mpe):g}, so its base theta * ratio ** "
                         "(dim / (dim - 2)) is none (its cos / sin are NaN): refused")


def _check_ntk_alpha(r: ModelRope) -> None:
    alpha = r.param("alpha")
    if alpha is None or not alpha > 0:
        raise ValueError(f"rope_type 'ntk_alpha' needs alpha > 0; got {brief(alpha)}")
    if r.rotary_dim != r.head_dim or r.rotary_dim < 4:
        raise ValueError("rope_type 'ntk_alpha' rotates the whole head (its base grows by the power dim / (dim - 2) "
                         f"of head_dim), of 4 or more; got rotary_dim {r.rotary_dim} of head_dim {r.head_dim}")


def _check_yarn(r: ModelRope) -> None:
    if not r.theta > 1:
        raise ValueError(f"yarn needs rope_theta > 1 (its ramp divides by ln(rope_theta)); got {r.theta}")
    if r.param("factor") is None and r.max_position_embeddings is None:
        raise ValueError("yarn needs factor (or max_position_embeddings to derive it)")


def _check_longrope(r: ModelRope) -> None:
    if r.param("factor") is None and r.max_position_embeddings is None:  # (transformers: None / orig, a TypeError)
        raise ValueError("longrope needs factor (or max_position_embeddings to derive it)")
    if (r.param("short_mscale") is None) != (r.param("long_mscale") is None):
        raise ValueError("longrope: short_mscale and long_mscale go together (PhiMoE's): give both or neither")
    if r.factor > 1 and r.orig < 2:
        raise ValueError(f"longrope's attention factor divides by ln(original_max_position_embeddings): it must be "
                         f">= 2; got {r.orig}")
    for key in ("short_factor", "long_factor"):
        f = r.param(key)
        if not isinstance(f, tuple) or len(f) != r.rotary_dim // 2:
            raise ValueError(f"longrope: {key} must hold rotary_dim / 2 = {r.rotary_dim // 2} numbers; got "
                             f"{brief(f)}")


def _check_llama3(r: ModelRope) -> None:
    for key in ("low_freq_factor", "high_freq_factor"):
        if r.param(key) is None:
            raise ValueError(f"rope_type 'llama3' needs {key}")
    # (a high_freq_factor below the low one is read as transformers computes it, which only warns: no column is
    # smoothed, those past old / low_freq_factor divided by the factor)


def _check_proportional(r: ModelRope) -> None:
    if r.rotary_dim != r.head_dim:
        raise ValueError(f"proportional RoPE rotates the whole head: rotary_dim must be head_dim ({r.head_dim}); "
                         f"got {r.rotary_dim} (partial_rotary_factor picks the pairs that turn)")


def _dynamic_key(r: ModelRope, seq_len: int | None) -> Any:
    """The base itself up to max_position_embeddings: one spec for those."""
    return seq_len if seq_len is not None and seq_len > r.mpe else None


@dataclass(frozen=True)
class RopeType:
    """One rope type: `check` raises ValueError for a ModelRope it cannot compute; `inv_freq(rope, seq_len, t)`
    its inverse frequencies [rotary_dim / 2] in dtype t for a call whose max(position_ids) + 1 is seq_len (None:
    at initialisation); `attention_factor(rope)` what cos and sin are multiplied by; `needs_orig` whether it reads
    original_max_position_embeddings; `call_key(rope, seq_len)` what of the call's positions decides its
    frequencies (None for every call alike) and `varies(rope)` whether it can change them for this rope;
    `per_call` that, in words ("" when nothing); `params` the rope-dict
    keys its functions read (with COMMON_PARAMS: what a ModelRope takes; from_hf keeps those of a rope dict but
    GGUF_PARAMS, listing the rest in `ignored`, as transformers reads no other); `in_files` whether a config
    file may name it (not a type only a model's code makes of another: HunYuan's ntk_alpha, of "dynamic" with
    alpha, the model table's type_by_key); `factor` how it takes its factor: "needed" (a number, or the
    ModelRope is refused), "key" (yarn's: transformers indexes rope_parameters["factor"], so a file must give
    the key; a null is max_position_embeddings / original_max_position_embeddings), "derived" (longrope's:
    absent or null, that ratio), "" (1 where absent); `compares_lengths` whether transformers' validation
    compares max_position_embeddings with the original length (so a null one fails); `zero_is_default` the
    keys its function reads with `or` (0 is the default) and `lists` those holding a number per pair."""

    check: Callable[[ModelRope], None]
    inv_freq: Callable[[ModelRope, int | None, Any], np.ndarray]
    attention_factor: Callable[[ModelRope], float] = _one
    needs_orig: bool = False
    call_key: Callable[[ModelRope, int | None], Any] | None = None
    varies: Callable[[ModelRope], bool] = _yes
    per_call: str = ""
    params: frozenset[str] = frozenset()
    in_files: bool = True
    whole_head: bool = False  # its cos / sin span the head whatever the partial factor (proportional: the factor
    # says how many pairs turn)
    factor: str = ""
    compares_lengths: bool = False
    zero_is_default: frozenset[str] = frozenset()
    lists: frozenset[str] = frozenset()


RULES: dict[str, RopeType] = {
    "default": RopeType(_no_check, _default),
    "linear": RopeType(_no_check, _linear, params=frozenset({"factor"}), factor="needed"),
    "dynamic": RopeType(_check_dynamic, _dynamic, call_key=_dynamic_key,
                        per_call="the base, from max(position_ids) + 1", params=frozenset({"factor"}), factor="needed"),
    "yarn": RopeType(_check_yarn, _yarn, _yarn_factor, needs_orig=True,
                     params=frozenset({"factor", "beta_fast", "beta_slow", "truncate", "attention_factor", "mscale",
                                       "mscale_all_dim"}), factor="key", compares_lengths=True,
                     zero_is_default=frozenset({"beta_fast", "beta_slow", "mscale", "mscale_all_dim"})),
    "longrope": RopeType(_check_longrope, _longrope, _longrope_factor, needs_orig=True, call_key=is_long,
                         varies=_longrope_varies, per_call="short / long factors, by max(position_ids) + 1 > {orig}",
                         params=frozenset({"factor", "short_factor", "long_factor", "attention_factor",
                                           "short_mscale", "long_mscale"}),  # (the mscales: PhiMoE's)
                         factor="derived", lists=frozenset({"short_factor", "long_factor"})),
    "llama3": RopeType(_check_llama3, _llama3, needs_orig=True,
                       params=frozenset({"factor", "low_freq_factor", "high_freq_factor"}), factor="needed",
                       compares_lengths=True),
    "proportional": RopeType(_check_proportional, _proportional, params=frozenset({"factor"}), whole_head=True),
    "ntk_alpha": RopeType(_check_ntk_alpha, _ntk_alpha, params=frozenset({"alpha"}), in_files=False),
}
# Every key some rope type reads: `ModelRope.param` refuses any other, so a rope function reading a new key fails
# until its row names it.
PARAMS = COMMON_PARAMS.union(*(rule.params for rule in RULES.values()))
# The keys some rope type reads with `or` (0: its default), and those holding a number per pair.
ZERO_IS_DEFAULT = frozenset().union(*(rule.zero_is_default for rule in RULES.values()))
LIST_PARAMS = frozenset().union(*(rule.lists for rule in RULES.values()))


def read_by(rope_type: str) -> frozenset[str]:
    """The rope-dict keys a ModelRope of `rope_type` takes."""
    return RULES[rope_type].params | COMMON_PARAMS

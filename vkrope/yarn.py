"""`vkrope.YaRN`: YaRN context extension of a RopeFreqs spec, as Hugging Face's "yarn" rope type and
llama.cpp's rope_yarn do it: each pair's inverse frequency a ramp-weighted blend of the scaled and unscaled
ones, and cos / sin multiplied by an attention factor."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .runtime.dtypes import as_dtype
from .words import typed
from .spec_checks import check_int, check_number, check_positive

@dataclass(frozen=True)
class YaRN:
    """YaRN context extension for `RopeFreqs(dim, base, scale=factor, yarn=YaRN(...))`,
    as Hugging Face's "yarn" rope type and llama.cpp's rope_yarn compute it.

    original_context: the context the model was trained on (HF
    original_max_position_embeddings, llama.cpp n_ctx_orig); beta_fast,
    beta_slow: the rotation counts bounding the ramp (beta_fast below
    beta_slow turns it around, which HF computes and only warns about, and
    from_hf reads so; RopeFreqs refuses the empty ramp that mostly makes);
    ext_factor: in [0, 1], how much of the ramp blends back to the unscaled
    frequencies (llama.cpp's; HF's is 1; 0 is plain linear scaling);
    attn_factor: multiplies the magnitude (llama.cpp's; HF's
    attention_factor A is attn_factor = A / (0.1 ln(scale) + 1)); truncate:
    floor / ceil the ramp's ends (HF's truncate, llama.cpp always does).

    Pair i's inverse frequency: with extrap = 1 / base ** (2i / dim) and
    interp = 1 / (scale * base ** (2i / dim)), low / high the correction
    dims of beta_fast / beta_slow (dim * ln(original_context / (beta * 2
    pi)) / (2 ln base), clamped to [0, dim - 1]; high += 0.001 when they
    are equal) and mix = (1 - clamp((i - low) / (high - low), 0, 1)) *
    ext_factor: interp * (1 - mix) + extrap * mix, each step in float32 as
    HF does (the float32 power correctly rounded); freq_factors, if
    any, then divide it (llama.cpp divides both terms first, the same in
    exact arithmetic). RopeFreqs refuses a spec whose ramp is empty (low
    above high: an original_context of a few tokens, or of tens of billions and
    more (by the base and head width); HF and
    llama.cpp blend oppositely there), a scale below 1 (HF's validator only
    warns, and from_hf reads such a factor as HF computes it) and a base of 1 or less (the ramp divides by ln(base)). cos and sin are multiplied by `magnitude`: attn_factor *
    (0.1 ln(scale) + 1) when scale > 1 and ext_factor != 0, else
    attn_factor (HF's get_mscale and llama.cpp's rope_yarn agree on it).
    """

    original_context: int
    beta_fast: float = 32.0
    beta_slow: float = 1.0
    ext_factor: float = 1.0
    attn_factor: float = 1.0
    truncate: bool = True

    def __post_init__(self) -> None:
        check_int("original_context", self.original_context, 1)
        check_positive("beta_fast", self.beta_fast)
        check_positive("beta_slow", self.beta_slow)
        check_number("ext_factor", self.ext_factor, 0.0, 1.0)
        check_positive("attn_factor", self.attn_factor)
        if not isinstance(self.truncate, (bool, np.bool_)):
            raise TypeError(f"truncate must be a bool; got {typed(self.truncate)}")

    def ramp_ends(self, dim: int, base: float) -> tuple[float, float]:
        """(low, high): the pair indices where the blend starts and ends."""
        def corr_dim(rotations: float) -> float:
            return dim * math.log(self.original_context / (rotations * 2 * math.pi)) / (2 * math.log(base))

        low, high = corr_dim(self.beta_fast), corr_dim(self.beta_slow)
        if self.truncate:
            low, high = math.floor(low), math.ceil(high)
        return max(low, 0), min(high, dim - 1)

    def mix(self, dim: int, base: float, dtype: Any = np.float32) -> np.ndarray:
        """[dim/2] the weight of the unscaled frequency, in `dtype` steps; for
        a ramp whose low end lies above its high end (RopeFreqs refuses it),
        the weights transformers' ramp gives there, turned around (from_hf
        reads yarn so where beta_fast is below beta_slow)."""
        low, high = self.ramp_ends(dim, base)
        if low == high:
            high += 0.001  # HF's guard (llama.cpp's max(0.001, high - low) is the same for high >= low)
        t = as_dtype(dtype).type
        ramp = np.clip((np.arange(dim // 2, dtype=t) - t(low)) / t(high - low), t(0), t(1))
        return (t(1) - ramp) * t(self.ext_factor)

    def magnitude(self, scale: float) -> float:
        """The factor cos and sin are multiplied by (float64)."""
        if scale > 1 and np.float32(self.ext_factor) != 0:  # llama.cpp: float ext_factor != 0
            return float(self.attn_factor) * (0.1 * math.log(scale) + 1.0)
        return float(self.attn_factor)

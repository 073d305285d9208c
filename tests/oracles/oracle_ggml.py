"""llama.cpp's rope (ggml-cpu ops.cpp: rope_yarn, ggml_rope_cache_init, ggml_mrope_cache_init; ggml.c:
ggml_rope_yarn_corr_dims) restated in float64, with no vkrope import: the (cos, sin) of each rotated pair
for given positions, the oracle of the GGUF tests that cross what llama.cpp does differently from
transformers (YaRN's correction dims in float32, Qwen3-VL's pairs of the fourth position)."""

from __future__ import annotations

import math

import numpy as np


def corr_dims(n_dims: int, n_ctx_orig: int, base: float, beta_fast: float, beta_slow: float) -> tuple[float, float]:
    """ggml_rope_yarn_corr_dims: the ramp's ends, each computed in float32 (logf) as ggml does."""
    f = np.float32

    def corr_dim(rotations: float) -> np.float32:
        ratio = f(n_ctx_orig) / (f(rotations) * f(2) * f(math.pi))
        return f(n_dims) * np.log(ratio, dtype=f) / (f(2) * np.log(f(base), dtype=f))

    start, end = math.floor(corr_dim(beta_fast)), math.ceil(corr_dim(beta_slow))
    return float(max(0, start)), float(min(n_dims - 1, end))


def pair_axes(n_pairs: int, sections: tuple[int, int, int, int], imrope: bool) -> np.ndarray:
    """ggml_mrope_cache_init: each pair's position row (0 t, 1 h, 2 w, 3 e)."""
    s = sections
    axes = []
    for j in range(n_pairs):
        sector = j % sum(s)
        if imrope:
            axis = 1 if sector % 3 == 1 and sector < 3 * s[1] else 2 if sector % 3 == 2 and sector < 3 * s[2] \
                else 0 if sector % 3 == 0 and sector < 3 * s[0] else 3
        else:
            axis = 0 if sector < s[0] else 1 if sector < s[0] + s[1] else 2 if sector < s[0] + s[1] + s[2] else 3
        axes.append(axis)
    return np.array(axes)


def cos_sin(positions: np.ndarray, n_dims: int, base: float, *, freq_scale: float = 1.0, ext_factor: float = 0.0,
            attn_factor: float = 1.0, beta_fast: float = 32.0, beta_slow: float = 1.0, n_ctx_orig: int = 0,
            freq_factors: np.ndarray | None = None, sections: tuple[int, int, int, int] | None = None,
            imrope: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) [S, n_dims / 2] of ggml's rope at `positions`: [S], or with `sections` [4, S] (t, h, w, e)."""
    i = np.arange(n_dims // 2)
    powers = base ** (-2.0 * i / n_dims)
    p = np.asarray(positions, np.float64)
    rows = p[pair_axes(len(i), sections, imrope)].T if sections is not None else p[:, None] * np.ones(len(i))
    theta_extrap = rows * powers
    if freq_factors is not None:
        theta_extrap = theta_extrap / np.asarray(freq_factors, np.float64)[: len(i)]
    theta = freq_scale * theta_extrap
    scale = attn_factor
    if ext_factor != 0:
        low, high = corr_dims(n_dims, n_ctx_orig, base, beta_fast, beta_slow)
        mix = (1 - np.clip((i - low) / max(0.001, high - low), 0, 1)) * ext_factor
        theta = theta * (1 - mix) + theta_extrap * mix
        scale *= 1 + 0.1 * math.log(1 / freq_scale)
    return np.cos(theta) * scale, np.sin(theta) * scale

"""A model's RoPE from its configuration: `vkrope.from_hf` reads a Hugging
Face config.json (both styles: `rope_scaling` + `rope_theta`, and
transformers 5's `rope_parameters`, per layer type too), `vkrope.from_gguf`
llama.cpp's GGUF metadata; both give a `ModelRope`.

A `ModelRope` computes the inverse frequencies as transformers 5's
`modeling_rope_utils` does, in float32 step by step (the power correctly
rounded, `freqs.pow32`), for every rope type: default, linear, dynamic
(NTK), yarn, longrope, llama3, proportional; with M-RoPE (Qwen2-VL,
Qwen2.5-VL chunked sections, Qwen3-VL interleaved). What depends on the
call (dynamic's base, longrope's short / long factors) is decided from that
call's `max(position_ids) + 1`, with no state kept between calls
(transformers keeps dynamic's frequencies as module state that only
shrinks back below the original length; vLLM fixes dynamic's base for its
longest context; llama.cpp switches longrope by the allocated context). `ModelRope.freqs(position_ids)` gives the `InvFreqs`
the kernels read for that call.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from . import hf_models
from .freqs import MROPE_AXES, InvFreqs, YaRN, _short, check_position_ids, pow32, pow64

ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "proportional")
# Hub aliases transformers reads as one of ROPE_TYPES ("mrope": Qwen2-VL's default with sections; "su" and
# "longrope" are Phi-3's; "fope" etc. are not supported).
_ALIASES = {"mrope": "default", "su": "longrope"}


def _key_number(params: dict, key: str, where: str) -> float:
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}{key} must be a number; got {_short(value)}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}{key} must be a positive finite number; got {value}")
    return float(value)


def _key_int(params: dict, key: str, where: str) -> int:
    value = params[key]
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
        raise ValueError(f"{where}{key} must be an integer; got {_short(value)}")
    if value < 1:
        raise ValueError(f"{where}{key} must be >= 1; got {value}")
    return int(value)


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int; got {_short(value)}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1; got {value}")


def _check_params(params: Any) -> tuple:
    """A rope type's parameters as sorted (key, value) pairs: numbers,
    booleans (truncate) or tuples of numbers (longrope's factors)."""
    try:
        items = dict(params).items()
    except (TypeError, ValueError):
        raise TypeError(f"params must be (key, value) pairs; got {_short(params)}") from None
    out = []
    for key, value in items:
        if not isinstance(key, str):
            raise TypeError(f"params keys must be strings; got {_short(key)}")
        if key == "truncate":
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"truncate must be true or false; got {_short(value)}")
            value = bool(value)
        elif isinstance(value, (list, tuple, np.ndarray)):
            vals = list(value)
            if not all(not isinstance(v, bool) and isinstance(v, (int, float, np.floating, np.integer))
                       and math.isfinite(v) and v > 0 for v in vals):
                raise ValueError(f"{key} must hold positive finite numbers; got {_short(value)}")
            value = tuple(float(v) for v in vals)
        elif isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
                or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{key} must be a positive finite number; got {_short(value)}")
        else:
            value = float(value)
        out.append((key, value))
    return tuple(sorted(out))


@dataclass(frozen=True)
class ModelRope:
    """A model's RoPE, as its config defines it (`vkrope.from_hf`,
    `vkrope.from_gguf`), for `vkrope.apply_rotary_pos_emb` and, with one
    position axis, the table operators and the decode step
    (`rotary_embedding`, `apply_rotary_emb`, `apply_rotary_emb_hf`,
    `rope_and_cache`), which decide its frequencies from their positions.

    rope_type: one of `ROPE_TYPES`; head_dim: D; rotary_dim: the channels
    that rotate (`int(D * partial_rotary_factor)`; proportional: D);
    theta: the base; params: the rope type's other parameters as given
    (factor, low_freq_factor, beta_fast, short_factor, ...), as sorted
    (key, value) pairs; max_position_embeddings and
    original_max_position_embeddings: the config's (None when absent);
    mrope_section: M-RoPE's pairs per axis (temporal, height, width), None
    without; mrope_interleaved: Qwen3-VL's interleaved sections, else
    chunked (Qwen2-VL); interleaved: pairs (2i, 2i + 1) (GGUF's llama-style
    rope and DeepSeek's `rope_interleave`), else rotate-half (i, i +
    rotary_dim / 2); freq_factors: llama.cpp's per-pair divisors of the
    frequencies (a GGUF's `rope_freqs.weight`), None without; layer_type:
    the layer type read (Gemma 3: "sliding_attention", "full_attention");
    angle: "float32" (transformers' float32 product) or "exact" (the exact
    product, for long contexts; see `vkrope.RopeFreqs`).
    """

    rope_type: str
    head_dim: int
    rotary_dim: int
    theta: float
    params: tuple = ()
    max_position_embeddings: int | None = None
    original_max_position_embeddings: int | None = None
    mrope_section: tuple[int, ...] | None = None
    mrope_interleaved: bool = False
    interleaved: bool = False
    freq_factors: tuple[float, ...] | None = None
    layer_type: str | None = None
    angle: str = "float32"
    source: str = field(default="", compare=False)  # where it was read (for messages)
    ignored: tuple[str, ...] = field(default=(), compare=False)  # rope keys of the config it does not read
    model: str = field(default="", compare=False)  # the config's model_type, or the GGUF's architecture
    cos_layout: str = field(default="halves", compare=False)  # the model's cos / sin: "halves" cat(f, f), "repeated"
    # (each value twice, adjacent), "single" (one per pair)
    # the config's layers that apply no RoPE (None: unknown, the config lacks the key that says)
    nope_layers: tuple[int, ...] | None = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.rope_type not in ROPE_TYPES:
            raise ValueError(f"rope_type must be one of {ROPE_TYPES}; got {self.rope_type!r}")
        if self.angle not in ("float32", "exact"):
            raise ValueError(f"angle must be 'float32' or 'exact'; got {self.angle!r}")
        for name in ("head_dim", "rotary_dim"):
            _positive_int(name, getattr(self, name))
        for name in ("max_position_embeddings", "original_max_position_embeddings"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name))
        if isinstance(self.theta, bool) or not isinstance(self.theta, (int, float, np.floating, np.integer)) \
                or not math.isfinite(self.theta) or self.theta <= 0:
            raise ValueError(f"theta (rope_theta) must be a positive finite number; got {_short(self.theta)}")
        object.__setattr__(self, "theta", float(self.theta))
        for name in ("mrope_interleaved", "interleaved"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool; got {_short(getattr(self, name))}")
        if self.rotary_dim % 2 or self.rotary_dim > self.head_dim:
            raise ValueError(f"the rotary dim ({self.rotary_dim}, from head_dim {self.head_dim} and "
                             "partial_rotary_factor) must be even and <= head_dim")
        if self.rope_type == "proportional" and self.rotary_dim != self.head_dim:
            raise ValueError(f"proportional RoPE rotates the whole head: rotary_dim must be head_dim ({self.head_dim}); "
                             f"got {self.rotary_dim} (partial_rotary_factor picks the pairs that turn)")
        if self.layer_type is not None and not isinstance(self.layer_type, str):
            raise TypeError(f"layer_type must be a str or None; got {_short(self.layer_type)}")
        if self.mrope_interleaved and self.mrope_section is None:
            raise ValueError("mrope_interleaved needs mrope_section")
        object.__setattr__(self, "params", _check_params(self.params))
        p = self.param
        if self.rope_type in ("yarn", "longrope", "llama3") and self.original_max_position_embeddings is None:
            raise ValueError(f"rope_type {self.rope_type!r} needs original_max_position_embeddings")
        if self.rope_type in ("linear", "dynamic", "llama3"):
            if p("factor") is None:
                raise ValueError(f"rope_type {self.rope_type!r} needs factor")
        if self.rope_type == "dynamic":
            if self.max_position_embeddings is None:
                raise ValueError("rope_type 'dynamic' needs max_position_embeddings")
            if self.rotary_dim < 4:
                raise ValueError(f"rope_type 'dynamic' needs a rotary dim of 4 or more (its base grows by the power "
                                 f"dim / (dim - 2)); got {self.rotary_dim}")
        if self.rope_type == "yarn" and not self.theta > 1:
            raise ValueError(f"yarn needs rope_theta > 1 (its ramp divides by ln(rope_theta)); got {self.theta}")
        if self.rope_type == "longrope" and self.factor > 1 and self.orig < 2:
            raise ValueError(f"longrope's attention factor divides by ln(original_max_position_embeddings): it must be "
                             f">= 2; got {self.orig}")
        if self.rope_type == "llama3":
            for key in ("low_freq_factor", "high_freq_factor"):
                if p(key) is None:
                    raise ValueError(f"rope_type 'llama3' needs {key}")
            if p("high_freq_factor") < p("low_freq_factor"):
                raise ValueError(f"llama3: high_freq_factor ({p('high_freq_factor')}) must be >= low_freq_factor "
                                 f"({p('low_freq_factor')})")
        if self.rope_type == "longrope":
            for key in ("short_factor", "long_factor"):
                f = p(key)
                if not isinstance(f, tuple) or len(f) != self.rotary_dim // 2:
                    raise ValueError(f"longrope: {key} must hold rotary_dim / 2 = {self.rotary_dim // 2} numbers; got "
                                     f"{_short(f)}")
        if self.rope_type == "yarn" and p("factor") is None and self.max_position_embeddings is None:
            raise ValueError("yarn needs factor (or max_position_embeddings to derive it)")
        if self.mrope_section is not None:
            sec = self.mrope_section
            if isinstance(sec, (str, bytes)) or not hasattr(sec, "__len__") or len(sec) != MROPE_AXES or any(
                    isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0 for v in sec):
                raise ValueError(f"mrope_section must hold 3 pair counts >= 0 (temporal, height, width); got "
                                 f"{_short(sec)}")
            object.__setattr__(self, "mrope_section", tuple(int(v) for v in sec))
            if sum(self.mrope_section) != self.rotary_dim // 2:
                raise ValueError(f"mrope_section {list(sec)} must sum to rotary_dim / 2 = {self.rotary_dim // 2}")
        if self.freq_factors is not None:
            try:
                ff = np.asarray(self.freq_factors, np.float64)
            except (TypeError, ValueError):
                raise ValueError(f"freq_factors must be numbers; got {_short(self.freq_factors)}") from None
            if ff.shape != (self.rotary_dim // 2,):
                raise ValueError(f"freq_factors must hold rotary_dim / 2 = {self.rotary_dim // 2} values; got shape "
                                 f"{list(ff.shape)}")
            if not (np.isfinite(ff) & (ff > 0)).all():
                raise ValueError(f"freq_factors must be positive finite numbers; got {ff[~(np.isfinite(ff) & (ff > 0))][0]}")
            object.__setattr__(self, "freq_factors", tuple(float(v) for v in ff))
        # Every parameter usable at every length: a bad one is a ValueError here, not in a later call.
        lengths: list[int | None] = [None]
        if self.uses_seq_len():
            lengths.append(max(self.max_position_embeddings or 0, self.original_max_position_embeddings or 0) + 1)
        try:
            self.attention_factor  # noqa: B018  (computed for its errors)
            for n in lengths:
                self._freqs(n)
        except (ZeroDivisionError, OverflowError, ArithmeticError) as exc:
            raise ValueError(f"{self.rope_type}: these parameters give no usable frequencies ({exc}): theta "
                             f"{self.theta}, {dict(self.params)}") from None

    @property
    def orig(self) -> int:
        """original_max_position_embeddings, where the rope type reads it (yarn, longrope, llama3 require it)."""
        if self.original_max_position_embeddings is None:
            raise ValueError(f"rope_type {self.rope_type!r} needs original_max_position_embeddings")
        return self.original_max_position_embeddings

    @property
    def mpe(self) -> int:
        """max_position_embeddings, where the rope type reads it (dynamic requires it)."""
        if self.max_position_embeddings is None:
            raise ValueError(f"rope_type {self.rope_type!r} needs max_position_embeddings")
        return self.max_position_embeddings

    def param(self, key: str, default: Any = None) -> Any:
        """The rope type's parameter `key` (as in the config), or `default`."""
        return dict(self.params).get(key, default)

    # --- what the model computes -------------------------------------------------
    @property
    def factor(self) -> float:
        """The scaling factor (yarn, longrope: max_position_embeddings /
        original_max_position_embeddings when the config gives none)."""
        f = self.param("factor")
        if f is None and self.rope_type in ("yarn", "longrope") and self.max_position_embeddings:
            return self.mpe / self.orig
        return 1.0 if f is None else float(f)

    @property
    def attention_factor(self) -> float:
        """What cos and sin are multiplied by (transformers' attention_scaling):
        yarn's `attention_factor`, else 0.1 m ln(factor) + 1 with
        m = mscale / mscale_all_dim's ratio (DeepSeek) or 1; longrope's,
        else sqrt(1 + ln(factor) / ln(original_max_position_embeddings));
        1 for the other types. (DeepSeek also scales its softmax by
        (0.1 mscale_all_dim ln(factor) + 1)^2: the attention's business.)"""
        given = self.param("attention_factor")
        if self.rope_type == "yarn":
            if given is not None:
                return float(given)
            f = self.factor

            def g(scale: float, m: float = 1.0) -> float:
                return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

            ms, msa = self.param("mscale"), self.param("mscale_all_dim")
            if ms and msa:
                return float(g(f, ms) / g(f, msa))
            return g(f)
        if self.rope_type == "longrope":
            if given is not None:
                return float(given)
            f = self.factor
            if f <= 1.0:
                return 1.0
            return math.sqrt(1 + math.log(f) / math.log(self.orig))
        return 1.0

    def attention_factor_for(self, seq_len: int | None) -> float:
        """The attention factor of a call whose max(position_ids) + 1 is
        `seq_len`: `attention_factor`, except for longrope with
        `short_mscale` / `long_mscale` (Phi-3.5-MoE), switched with the
        factors (long past original_max_position_embeddings)."""
        if self.rope_type == "longrope" and self.param("short_mscale") is not None:
            return float(self.param("long_mscale" if self._long(seq_len) else "short_mscale"))
        return self.attention_factor

    def _long(self, seq_len: int | None) -> bool:
        """longrope's switch: the long factors (and long_mscale) when the
        call's max(position_ids) + 1 exceeds original_max_position_embeddings."""
        return bool(seq_len and seq_len > self.orig)

    def seq_len(self, position_ids: Any) -> int | None:
        """max(position_ids) + 1 (None without positions): what dynamic and
        longrope decide by."""
        if position_ids is None:
            return None
        p = np.asarray(position_ids)
        return int(p.max()) + 1 if p.size else 0

    def uses_seq_len(self) -> bool:
        """Whether the frequencies depend on the call's positions (dynamic, longrope)."""
        return self.rope_type in ("dynamic", "longrope")

    def inv_freq(self, seq_len: int | None = None, dtype: Any = np.float32) -> np.ndarray:
        """The inverse frequencies [rotary_dim / 2] for a call whose
        max(position_ids) + 1 is `seq_len` (None: at initialisation, as
        transformers' module starts), as transformers computes them
        (float32: step by step in float32; float64: the same formulas in
        float64, the exact angle's)."""
        t = np.dtype(dtype).type
        dim, half = self.rotary_dim, self.rotary_dim // 2
        base = self.theta
        p = self.param

        def powers(b: Any, n_pairs: int, denom: int) -> np.ndarray:
            if t is np.float32:
                return pow32(b, np.arange(0, 2 * n_pairs, 2, dtype=np.float32) / np.float32(denom))
            return pow64(b, np.arange(0, 2 * n_pairs, 2, dtype=np.float64) / denom)

        kind = self.rope_type
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if kind == "proportional":
                angles = int(p("partial_rotary_factor", 1.0) * self.head_dim // 2)
                inv = np.zeros(self.head_dim // 2, t)
                inv[:angles] = t(1.0) / powers(base, angles, self.head_dim)
                inv = inv / t(self.factor)
            elif kind == "dynamic":
                inv = t(1.0) / powers(self._dynamic_base(seq_len, t), half, dim)
            elif kind == "longrope":
                ext = np.asarray(p("long_factor") if self._long(seq_len) else p("short_factor"), t)
                inv = t(1.0) / (ext * powers(base, half, dim))
            elif kind == "yarn":
                inv = self._yarn(t, powers(base, half, dim))
            elif kind == "llama3":
                inv = self._llama3(t, t(1.0) / powers(base, half, dim))
            else:  # default, linear
                inv = t(1.0) / powers(base, half, dim)
                if kind == "linear":
                    inv = inv / t(self.factor)
            if self.freq_factors is not None:
                inv = inv / np.asarray(self.freq_factors, t)
        inv = np.asarray(inv, t)
        if not np.isfinite(inv).all() or (inv < 0).any():
            raise ValueError(f"{kind}: these parameters give inverse frequencies that are not finite numbers >= 0 "
                             f"(theta {self.theta}, {dict(self.params)})")
        return inv

    def _dynamic_base(self, seq_len: int | None, t: Any) -> Any:
        """dynamic NTK's base for `seq_len`: transformers computes it from a
        tensor (max(position_ids) + 1), so in float32, once past
        max_position_embeddings; at initialisation (no positions) it is the
        base itself."""
        dim, mpe, f = self.rotary_dim, self.mpe, self.factor
        if seq_len is None or seq_len <= mpe:
            return self.theta
        if t is np.float64:
            return self.theta * ((f * seq_len / mpe) - (f - 1)) ** (dim / (dim - 2))
        s = np.float32(seq_len)
        ratio = (np.float32(f) * s) / np.float32(mpe) - np.float32(f - 1)  # (Python scalars as float32)
        powered = np.float32(math.pow(float(ratio), dim / (dim - 2)))  # (torch: a float32 tensor to a double power)
        return float(np.float32(np.float32(self.theta) * powered))

    def _yarn(self, t: Any, pos: np.ndarray) -> np.ndarray:
        """transformers' _compute_yarn_parameters, in dtype t: the ramp is
        `vkrope.YaRN`'s (the same correction dims, truncation and guard)."""
        p = self.param
        y = YaRN(self.orig, float(p("beta_fast") or 32), float(p("beta_slow") or 1), truncate=bool(p("truncate", True)))
        extrap_w = y.mix(self.rotary_dim, self.theta, t)  # (times ext_factor 1: exact)
        extrap = t(1.0) / pos
        interp = t(1.0) / (t(self.factor) * pos)
        return interp * (t(1) - extrap_w) + extrap * extrap_w

    def _llama3(self, t: Any, inv: np.ndarray) -> np.ndarray:
        """transformers' _compute_llama3_parameters, in dtype t."""
        p = self.param
        factor, lff, hff = p("factor"), p("low_freq_factor"), p("high_freq_factor")
        old = self.orig
        low_wl, high_wl = old / lff, old / hff
        wavelen = t(2 * math.pi) / inv
        llama = np.where(wavelen > t(low_wl), inv / t(factor), inv)
        smooth = (t(old) / wavelen - t(lff)) / t(hff - lff)
        smoothed = (t(1) - smooth) * llama / t(factor) + smooth * llama
        medium = ~(wavelen < t(high_wl)) & ~(wavelen > t(low_wl))
        return np.where(medium, smoothed, llama)

    @property
    def pair_axis(self) -> tuple[int, ...] | None:
        """M-RoPE: each pair's position axis (0 temporal, 1 height, 2 width)."""
        if self.mrope_section is None:
            return None
        s = self.mrope_section
        half = self.rotary_dim // 2
        if self.mrope_interleaved:  # Qwen3-VL: h on j % 3 == 1 below 3 s1, w on j % 3 == 2 below 3 s2
            return tuple(1 if j % 3 == 1 and j < 3 * s[1] else 2 if j % 3 == 2 and j < 3 * s[2] else 0
                         for j in range(half))
        return tuple(int(a) for a in np.repeat(np.arange(3), s))  # Qwen2-VL: chunks of s0, s1, s2 pairs

    def freqs(self, position_ids: Any = None) -> InvFreqs:
        """The `InvFreqs` the kernels read for a call with these position ids
        (dynamic and longrope decide by their max + 1; the others ignore them)."""
        n = self.seq_len(position_ids) if self.uses_seq_len() else None
        return self._freqs(n)

    def _freqs(self, seq_len: int | None) -> InvFreqs:
        if self.rope_type == "dynamic":  # the base itself up to max_position_embeddings: one spec for those
            key: Any = seq_len if seq_len is not None and seq_len > self.mpe else None
        elif self.rope_type == "longrope":
            key = self._long(seq_len)
        else:
            key = None
        cache = self.__dict__.setdefault("_freqs_cache", {})
        spec = cache.get(key)
        if spec is None:
            if len(cache) >= 64:
                cache.clear()
            n = seq_len if key is not None else None
            spec = cache[key] = InvFreqs(self.inv_freq(n), self.inv_freq(n, np.float64),
                                         attention_factor=self.attention_factor_for(n), pair_axis=self.pair_axis,
                                         angle=self.angle)
        return spec

    def check_position_ids(self, position_ids: Any, name: str = "position_ids") -> np.ndarray:
        """int64 [B, S] positions ([3, B, S] with M-RoPE; see
        `freqs.check_position_ids`), or a TypeError / ValueError naming `name`."""
        return check_position_ids(position_ids, self.mrope_section is not None, name)

    def cos_sin(self, position_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [B, S, rotary_dim]: what the model's rotary
        module returns for these position ids ([B, S]; M-RoPE [3, B, S]):
        the halves duplicated (`cat(freqs, freqs)`, also for DeepSeek's and
        GLM's interleaved pairs, whose modules return the same and re-order
        in the attention; Cohere's module repeats each value twice,
        adjacent, and so does this for its models), times the attention
        factor: the call's `InvFreqs.table`."""
        p = self.check_position_ids(position_ids)
        spec = self.freqs(p)
        b, s = p.shape[-2:]
        ids = np.moveaxis(p, 0, -1).reshape(-1, MROPE_AXES) if self.mrope_section is not None else p.reshape(-1)
        c, sn = (t.reshape(b, s, spec.dim // 2) for t in spec.table(ids))
        if self.cos_layout == "repeated":
            return np.repeat(c, 2, -1), np.repeat(sn, 2, -1)
        if self.cos_layout == "single":  # GPT-OSS: one value per pair
            return c, sn
        return np.concatenate([c, c], -1), np.concatenate([sn, sn], -1)

    def q_scale(self, position_ids: Any) -> np.ndarray | None:
        """Ministral 3's and Mistral 4's `llama_4_scaling_beta`: what their
        attention multiplies q by after RoPE, float32 [B, S] (transformers'
        `1 + beta * log(1 + floor(position_ids / original_max_position_
        embeddings))`, in float32); None for a model without it. The kernels
        do not fuse it: scale q by it before the attention product, as the
        model's attention does."""
        beta = self.param("llama_4_scaling_beta")
        if beta is None:
            return None
        p = self.check_position_ids(position_ids)
        p = p[0] if self.mrope_section is not None else p
        ratio = np.floor(p.astype(np.float32) / np.float32(self.orig))
        return (np.float32(1) + np.float32(beta) * np.log(np.float32(1) + ratio)).astype(np.float32)

    def summary(self) -> dict[str, Any]:
        """What the CLI prints: the resolved RoPE as plain values."""
        d: dict[str, Any] = dict(model=self.model, rope_type=self.rope_type, head_dim=self.head_dim,
                                 rotary_dim=self.rotary_dim,
                                 theta=self.theta, attention_factor=self.attention_factor,
                                 pairs="interleaved" if self.interleaved else "rotate-half")
        if self.layer_type:
            d["layer_type"] = self.layer_type
        for key in ("max_position_embeddings", "original_max_position_embeddings"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        if self.mrope_section is not None:
            d["mrope_section"] = list(self.mrope_section)
            d["mrope"] = "interleaved" if self.mrope_interleaved else "chunked"
        for k, v in self.params:
            d[k] = list(v) if isinstance(v, tuple) else v
        if self.freq_factors is not None:
            d["freq_factors"] = list(self.freq_factors)
        if self.ignored:
            d["ignored_keys"] = list(self.ignored)
        if self.nope_layers is None:
            d["layers_without_rope"] = "unknown: the config lacks the key that says (pass it as transformers saves it)"
        elif self.nope_layers:
            d["layers_without_rope"] = list(self.nope_layers)
        if self.param("llama_4_scaling_beta") is not None:
            d["q_scale_after_rope"] = "1 + llama_4_scaling_beta * ln(1 + floor(position / " \
                                      f"{self.original_max_position_embeddings})) (the attention's; ModelRope.q_scale)"
        if self.uses_seq_len():
            d["decided_per_call"] = ("the base, from max(position_ids) + 1" if self.rope_type == "dynamic"
                                     else "short / long factors, by max(position_ids) + 1 > "
                                     f"{self.original_max_position_embeddings}")
        return d


# --- Hugging Face config.json ------------------------------------------------------
_KNOWN_PARAMS = {"factor", "low_freq_factor", "high_freq_factor", "beta_fast", "beta_slow", "mscale",
                 "mscale_all_dim", "attention_factor", "truncate", "short_factor", "long_factor",
                 "partial_rotary_factor", "short_mscale", "long_mscale", "llama_4_scaling_beta"}
# keys a rope dict may hold that say nothing about the frequencies here
_IGNORED = {"rope_type", "type", "rope_theta", "original_max_position_embeddings", "mrope_section",
            "mrope_interleaved", "max_position_embeddings"}


def _load(config: Any) -> dict:
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        try:
            with open(path, encoding="utf-8") as f:
                config = json.load(f)
        except FileNotFoundError:
            raise ValueError(f"config: no such file {path!r}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ValueError(f"config: {path!r} is not JSON in UTF-8 ({exc})") from None
        except OSError as exc:
            raise ValueError(f"config: {path!r} cannot be read ({exc})") from None
    elif hasattr(config, "to_dict") and callable(config.to_dict):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json's contents), a path to a config.json, or an object "
                        f"with to_dict(); got {type(config).__name__}")
    return config


def _text_config(cfg: dict, e: dict, like: str | None = None) -> dict:
    """The language model's config inside `cfg` (the table's `text_config`
    path: text_config, thinker_config.text_config, ...; a config with no
    such part is its own), with the outer config's RoPE keys where it has
    none, the config class's attribute aliases (GPT-J's n_embd) and its
    defaults where the file is silent (the table's, from transformers)."""
    inner = cfg
    for key in e.get("text_config", []):
        part = inner.get(key)
        if not isinstance(part, dict):
            break  # (a flat Hub file: the text keys at the top)
        inner = part
    if like is not None and inner is cfg and isinstance(cfg.get("text_config"), dict):
        inner = cfg["text_config"]  # (read as another type: the language model's part is still text_config)
    merged = dict(inner)
    if inner is not cfg:
        for key in ("rope_scaling", "rope_parameters", "rope_theta", "max_position_embeddings", "model_type"):
            if key not in merged and key in cfg:
                merged[key] = cfg[key]
    for key, stored in e.get("aliases", {}).items():  # the class's attribute_map: GPT-J's n_embd is hidden_size
        if merged.get(key) is None and merged.get(stored) is not None:
            merged[key] = merged[stored]
    defaults = e.get("defaults", {})
    for key, value in defaults.items():
        if key not in ("rope_parameters", "rope_theta") and key not in merged:  # (an explicit null stays null)
            merged[key] = value
    given = [k for k in ("rope_scaling", "rope_parameters", "rope_theta", "rope_local_base_freq", "rotary_emb_base")
             if merged.get(k) is not None]
    dr = defaults.get("rope_parameters")
    if _nested(dr) and not _nested(merged.get("rope_parameters")):
        # the class keeps RoPE per layer type (Gemma 3, Gemma 4): flat Hub keys go where its conversion puts them
        merged["rope_parameters"] = _per_type_from_flat(merged, dr) if given else json.loads(json.dumps(dr))
        merged.pop("rope_scaling", None)
    elif _nested(dr):  # per type as given: the class's thetas where a type gives none
        merged["rope_parameters"] = {k: dict(v) for k, v in merged["rope_parameters"].items()}
        for k, v in merged["rope_parameters"].items():
            if "rope_theta" not in v and "rope_theta" in dr.get(k, {}):
                v["rope_theta"] = dr[k]["rope_theta"]
    elif not given and isinstance(dr, dict) and dr:  # nothing said: the class's own (GPT-OSS's is yarn)
        merged["rope_parameters"] = dict(dr)
        if merged.get("partial_rotary_factor") is not None or merged.get("rotary_pct") is not None:
            merged["rope_parameters"].pop("partial_rotary_factor", None)  # (the file's own factor, not the class's)
    elif "rope_theta" in defaults and merged.get("rope_theta") is None and merged.get("rotary_emb_base") is None \
            and not any(isinstance(merged.get(k), dict) and "rope_theta" in merged[k]
                        for k in ("rope_scaling", "rope_parameters")):
        merged["rope_theta"] = defaults["rope_theta"]
    return merged


def _nested(rope: Any) -> bool:
    return isinstance(rope, dict) and bool(rope) and all(isinstance(v, dict) for v in rope.values())


def _per_type_from_flat(cfg: dict, default: dict) -> dict:
    """transformers' conversion of a Hub config's flat RoPE keys for a class
    with RoPE per layer type (Gemma3TextConfig.convert_rope_params_to_dict):
    rope_scaling (or a flat rope_parameters) and rope_theta go to the full
    layers, rope_local_base_freq to the sliding ones; the rest as the class
    defaults them."""
    out = json.loads(json.dumps(default))
    flat = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    if not isinstance(flat, dict):
        raise ValueError(f"config: rope_scaling / rope_parameters must be a dict; got {_short(flat)}")
    if "full_attention" in out:
        full = {"rope_type": "default", **flat} if flat else out["full_attention"]
        full.setdefault("rope_theta", cfg.get("rope_theta", out["full_attention"].get("rope_theta")))
        out["full_attention"] = full
    if "sliding_attention" in out and cfg.get("rope_local_base_freq") is not None:
        out["sliding_attention"]["rope_theta"] = cfg["rope_local_base_freq"]
    return out


def _head_dim(cfg: dict, key: str | None, model: str) -> int:
    """The rotated head's width: cfg[key] (the table's key for the model and
    layer type), else hidden_size // num_attention_heads (transformers'
    `getattr(config, key, None) or hidden // heads`)."""
    if key and cfg.get(key) is not None:
        return _key_int(cfg, key, "config: ")
    if key not in (None, "head_dim"):  # (qk_rope_head_dim, kv_channels, ...: no quotient stands in for them)
        raise ValueError(f"config: {key} is missing; {model!r} rotates heads of that width")
    for name in ("hidden_size", "num_attention_heads"):
        if cfg.get(name) is None:
            raise ValueError(f"config: the head dim of {model!r} needs {key or 'head_dim'}, or hidden_size and "
                             f"num_attention_heads; {name} is missing")
    hidden, heads = _key_int(cfg, "hidden_size", "config: "), _key_int(cfg, "num_attention_heads", "config: ")
    return hidden // heads  # (transformers' floor: q_proj then has heads * (hidden // heads) outputs)


def _entry_of(config: Any, like: str | None) -> tuple[dict, dict, dict]:
    """(outer config, table entry, text config) of a from_hf argument."""
    outer = _load(config)
    e = hf_models.entry(outer.get("model_type"), like)
    return outer, e, _text_config(outer, e, like)


def layer_types(config: Any, *, like: str | None = None) -> tuple[str, ...]:
    """The layer types of a config with RoPE per layer type (Gemma 3:
    ("full_attention", "sliding_attention")); () when one RoPE serves every
    layer."""
    _, _, cfg = _entry_of(config, like)
    return tuple(sorted(_per_layer(cfg) or ()))


def _per_layer(cfg: dict) -> dict[str, dict] | None:
    """{layer type: its rope dict} for per-layer configs, else None."""
    params = cfg.get("rope_parameters")
    types = set(cfg.get("layer_types") or ()) | {"sliding_attention", "full_attention"}
    if isinstance(params, dict) and params and any(k in types for k in params):
        nested = {k: v for k, v in params.items() if k in types}
        for k, v in nested.items():
            if v is not None and not isinstance(v, dict):
                raise ValueError(f"config: rope_parameters[{k!r}] must be a dict; got {_short(v)}")
        out = {k: dict(v) for k, v in nested.items() if v is not None}
        if "rope_local_base_freq" in cfg and "sliding_attention" in out:  # Gemma 3's local base, as its config class
            out["sliding_attention"].setdefault("rope_theta", cfg["rope_local_base_freq"])
        return out
    return None


def _overrides(cfg: dict, e: dict) -> dict[int, dict]:
    """{layer index: keys it overrides}: transformers 5's `per_layer_config`
    (a saved config's), else what the config class makes of a key such as
    Gemma 4's `global_head_dim` (the table's `per_layer_keys`: that key's
    value becomes `field` of the layers of those types)."""
    given = cfg.get("per_layer_config")
    if isinstance(given, dict):
        try:
            return {int(k): dict(v) for k, v in given.items() if isinstance(v, dict)}
        except ValueError:
            raise ValueError(f"config: per_layer_config keys must be layer indices; got {sorted(given)}") from None
    out: dict[int, dict] = {}
    types: list = cfg["layer_types"] if isinstance(cfg.get("layer_types"), list) else []
    for rule in e.get("per_layer_keys", []):
        value = cfg.get(rule["key"], rule.get("default"))
        if value is not None:
            for i, t in enumerate(types):
                if t in rule["types"]:
                    out.setdefault(i, {})[rule["field"]] = value
    return out


def _for_layer(cfg: dict, e: dict, layer: int | None, layer_type: str | None) -> dict:
    """The config as layer `layer` (or the first layer of `layer_type`) sees
    it: its per-layer overrides merged. Without either, a config whose
    layers differ in a head-dim key is refused (which layer is meant?)."""
    types: list = cfg["layer_types"] if isinstance(cfg.get("layer_types"), list) else []
    if layer is None and layer_type is not None and not types:  # no layer list: the class's rules by type
        extra = {r["field"]: cfg.get(r["key"], r.get("default")) for r in e.get("per_layer_keys", [])
                 if layer_type in r["types"] and cfg.get(r["key"], r.get("default")) is not None}
        return {**cfg, **extra}
    over = _overrides(cfg, e)
    if not over:
        return cfg
    if layer is None and layer_type is not None:
        layer = next((i for i, t in enumerate(types) if t == layer_type), None)
    if layer is None:
        keys = sorted({k for v in over.values() for k in v if k.endswith("head_dim")})
        if keys:
            raise ValueError(f"layer: this config's layers differ in {', '.join(keys)} (per_layer_config); pass "
                             "layer= (an index) or layer_type=")
        return cfg
    return {**cfg, **over.get(int(layer), {})}


def _layer_of(cfg: dict, e: dict, layer: Any) -> tuple[list[bool] | None, str | None]:
    """(per layer whether it rotates, or None; the layer type of `layer`, if given and the config has types)."""
    rotates = hf_models.rope_layers(cfg, e)
    if layer is None:
        return rotates, None
    if isinstance(layer, bool) or not isinstance(layer, (int, np.integer)):
        raise TypeError(f"layer must be an int (a decoder layer index) or None; got {_short(layer)}")
    n = len(rotates) if rotates is not None else cfg.get("num_hidden_layers")
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"config: num_hidden_layers must be an integer; got {_short(n)}")
    if not 0 <= layer < n:
        raise ValueError(f"layer must be in [0, {n}) (the config's num_hidden_layers); got {layer}")
    types = cfg.get("layer_types")
    return rotates, (types[layer] if isinstance(types, list) and layer < len(types) else None)


def layers(config: Any, *, like: str | None = None, angle: str = "float32") -> tuple[ModelRope | None, ...]:
    """Every decoder layer's RoPE, by index (`from_hf(config, layer=i)`):
    None for a layer whose attention applies none (Llama 4's and SmolLM3's
    NoPE layers, the global layers of EXAONE 4 and Cohere 2)."""
    _, e, cfg = _entry_of(config, like)
    rotates = hf_models.rope_layers(cfg, e)
    n = len(rotates) if rotates is not None else cfg.get("num_hidden_layers")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"config: num_hidden_layers must be a positive integer; got {_short(n)}")
    over = _overrides(cfg, e)
    memo: dict[Any, ModelRope | None] = {}
    out = []
    for i in range(n):
        types = cfg.get("layer_types")
        key = (rotates[i] if rotates else True, types[i] if isinstance(types, list) and i < len(types) else None,
               json.dumps(over.get(i, {}), sort_keys=True, default=str))
        if key not in memo:
            memo[key] = from_hf(config, layer=i, like=like, angle=angle)
        out.append(memo[key])
    return tuple(out)


def from_hf(config: Any, *, layer_type: str | None = None, layer: int | None = None, like: str | None = None,
            angle: str = "float32") -> ModelRope | None:
    """A model's RoPE from its Hugging Face config (a config.json's dict, its
    path or its folder, or a `PretrainedConfig`-like object with `to_dict()`).

    How the model applies RoPE comes from vkrope's model table
    (`vkrope/data/hf_models.json`, generated from transformers' own code by
    scripts/hf_model_table.py): where the text config sits (text_config,
    thinker_config.text_config), the config class's defaults, the key of
    the rotated head's width per layer type (head_dim, global_head_dim,
    qk_rope_head_dim, kv_channels, ...), pairs (rotate-half, interleaved),
    and which layers apply none. A model type not in the table, or one
    whose RoPE vkrope does not compute as the model does, is refused with
    a ValueError naming it; `like="llama"` reads a config as that model
    type does (the caller's word that its attention is the same).

    The rest as transformers 5 reads it: `rope_parameters` or `rope_scaling`
    (`type` / `rope_type`) plus `rope_theta`; the rotary dim from
    `partial_rotary_factor` (GPT-NeoX's `rotary_pct`); M-RoPE's
    `mrope_section`, chunked or interleaved as the table found the model
    type's rotary module doing it.

    `layer_type`: for configs with RoPE per layer type (Gemma 3, Gemma 4;
    `vkrope.hf_layer_types` lists them); `layer`: a decoder layer index
    (its layer type read from the config). Returns None when that layer
    (or every layer of that type) applies no RoPE. Without either, the
    RoPE every rotating layer shares (`summary()` lists the layers without).
    Unknown rope type, missing or contradictory field: ValueError naming the key.
    """
    if angle not in ("float32", "exact"):
        raise ValueError(f"angle must be 'float32' or 'exact'; got {angle!r}")
    if layer_type is not None and not isinstance(layer_type, str):
        raise TypeError(f"layer_type must be a str or None; got {_short(layer_type)}")
    outer, e, cfg = _entry_of(config, like)
    model_type = like or str(outer.get("model_type"))
    rotates, type_of_layer, unknown = _rotating(cfg, e, layer, layer_type)
    nested = _per_layer(cfg)
    types = cfg.get("layer_types") if isinstance(cfg.get("layer_types"), list) else None
    if layer is not None:
        if layer_type is not None and type_of_layer is not None and layer_type != type_of_layer:
            raise ValueError(f"layer_type {layer_type!r} is not layer {layer}'s ({type_of_layer!r})")
        if rotates is not None and not rotates[layer]:
            return None
        if nested is not None:
            if type_of_layer is None:
                raise ValueError(f"layer: the config has no layer_types, so layer {layer}'s type is unknown (the "
                                 "config class derives it); pass layer_type=, or the config as transformers saves "
                                 "it, AutoConfig.from_pretrained(path).to_dict()")
            layer_type = type_of_layer
    elif layer_type is not None and rotates is not None and types is not None and layer_type in types \
            and not any(r for r, t in zip(rotates, types) if t == layer_type):
        return None  # (every layer of that type applies none)
    cfg = _for_layer(cfg, e, layer, layer_type)
    rope, where = _rope_dict(cfg, nested, layer_type)
    kind = _rope_kind(rope, where, model_type)
    shape = e["by_layer_type"].get(layer_type if layer_type in e["by_layer_type"] else "*")
    if shape is None:
        raise ValueError(f"layer_type {layer_type!r}: the model table has no RoPE of {model_type!r} for it "
                         f"(it has {sorted(e['by_layer_type'])})")
    head_dim = _head_dim(cfg, shape["head_dim"], model_type)
    rotary, partial = _rotary_dim(cfg, rope, kind, head_dim, shape["rotary"])
    params, ignored = _params(rope, where, model_type, e)
    params.pop("partial_rotary_factor", None)
    if partial != 1.0:  # (1.0 is no parameter: specs with one set of frequencies compare equal)
        params["partial_rotary_factor"] = float(partial)
    mpe, orig = _lengths(cfg, rope, where, kind, params)
    section, inter = _mrope(rope, where, model_type, e.get("mrope"))
    nope = None if unknown else tuple(i for i, r in enumerate(rotates or ()) if not r)
    try:
        return ModelRope(kind, head_dim, rotary, _theta(cfg, rope, where), tuple(sorted(params.items())), mpe, orig,
                         section, bool(inter), _interleaved(cfg, e), None, layer_type, angle, source="config",
                         ignored=tuple(ignored), model=model_type,
                         cos_layout=e["cos_layout"] if e["cos_layout"] in ("repeated", "single") else "halves",
                         nope_layers=nope)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"config: {exc}") from None


def _rotating(cfg: dict, e: dict, layer: Any, layer_type: Any) -> tuple[list[bool] | None, str | None, str | None]:
    """(per layer whether it rotates, or None; layer `layer`'s type; why the pattern is unknown): a plain
    read (no layer, no layer type) of a config lacking the key that says still gives the rotating layers'
    RoPE, with its layers without RoPE unknown."""
    try:
        rotates, type_of_layer = _layer_of(cfg, e, layer)
    except ValueError as exc:
        if layer is not None or layer_type is not None or "is missing, empty" not in str(exc):
            raise
        return None, None, str(exc)
    return rotates, type_of_layer, None


def _rope_dict(cfg: dict, nested: dict | None, layer_type: str | None) -> tuple[dict, str]:
    """(the rope dict to read, where it is, for messages)."""
    if nested is not None:
        if layer_type is None:
            raise ValueError(f"layer_type: this config has RoPE per layer type; pass one of {sorted(nested)} (or a "
                             "layer index, layer=)")
        if layer_type not in nested:
            raise ValueError(f"layer_type must be one of {sorted(nested)} for this config; got {layer_type!r}")
        return dict(nested[layer_type]), f"config: rope_parameters[{layer_type!r}]."
    if layer_type is not None and layer_type not in (cfg.get("layer_types") or ()):
        raise ValueError(f"layer_type: this config has one RoPE for every layer; got layer_type={layer_type!r} "
                         "(pass None)")
    for key in ("rope_scaling", "rope_parameters"):
        if cfg.get(key) is not None and not isinstance(cfg[key], dict):  # ([] is not "no scaling")
            raise ValueError(f"config: {key} must be a dict or null; got {_short(cfg[key])}")
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}  # (transformers: rope_scaling first)
    if not isinstance(rope, dict):
        raise ValueError(f"config: rope_scaling / rope_parameters must be a dict; got {_short(rope)}")
    return dict(rope), "config: rope_scaling." if cfg.get("rope_scaling") else "config: rope_parameters."


def _rope_kind(rope: dict, where: str, model_type: str) -> str:
    kind = rope.get("rope_type", rope.get("type", "default"))
    if "rope_type" in rope and "type" in rope and rope["type"] != rope["rope_type"] \
            and _ALIASES.get(rope["type"], rope["type"]) != _ALIASES.get(rope["rope_type"], rope["rope_type"]):
        raise ValueError(f"{where}type ({rope['type']!r}) and {where}rope_type ({rope['rope_type']!r}) "
                         "contradict each other")
    if not isinstance(kind, str):
        raise ValueError(f"{where}rope_type must be a string; got {_short(kind)}")
    kind = _ALIASES.get(kind, kind)
    if model_type in ("phi3", "phi4_multimodal") and rope.get("rope_type", rope.get("type")) == "yarn":
        kind = "longrope"  # Phi3Config: "su" and "yarn" are early names of its longrope
    if kind not in ROPE_TYPES:
        raise ValueError(f"{where}rope_type {kind!r} is not supported; vkrope reads {list(ROPE_TYPES)}")
    return kind


def _theta(cfg: dict, rope: dict, where: str) -> float:
    if "rope_theta" in rope:
        return _key_number(rope, "rope_theta", where)
    if "rope_theta" in cfg:
        return _key_number(cfg, "rope_theta", "config: ")
    if "rotary_emb_base" in cfg:  # GPT-NeoX
        return _key_number(cfg, "rotary_emb_base", "config: ")
    return 10000.0


def _rotary_dim(cfg: dict, rope: dict, kind: str, head_dim: int, rule: str) -> tuple[int, float]:
    """(rotary dim, partial_rotary_factor) by the table's rule: "partial"
    (int(head_dim * partial_rotary_factor)), "whole" (the head: the config
    class has folded the factor into the head key already, MLA),
    "whole_default" (the head for the default rope type, whose frequencies
    the model computes itself, Llama's; partial for the others), or a key
    holding the rotated channels (GPT-J's rotary_dim)."""
    partial = rope.get("partial_rotary_factor", cfg.get("partial_rotary_factor", cfg.get("rotary_pct")))
    if partial is None:
        partial = 1.0
    elif isinstance(partial, bool) or not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise ValueError(f"config: partial_rotary_factor must be a number in (0, 1]; got {_short(partial)}")
    if kind == "proportional":
        return head_dim, partial
    if rule == "whole" or (rule == "whole_default" and kind == "default"):
        return head_dim, 1.0  # ("whole_default": the model's own default frequencies span the head; the library's
        # functions of the other rope types read the factor, as transformers' ROPE_INIT_FUNCTIONS do)
    if rule == "whole_default":
        return int(head_dim * partial), partial
    if rule != "partial":
        if cfg.get(rule) is None:
            raise ValueError(f"config: {rule} (the rotated channels) is missing")
        return _key_int(cfg, rule, "config: "), 1.0
    return int(head_dim * partial), partial


def _params(rope: dict, where: str, model_type: str, e: dict) -> tuple[dict[str, Any], list[str]]:
    """The rope type's parameters of a rope dict, checked, and the keys it does not read
    (`llama_4_scaling_beta` is read where the type's class defaults carry it, Ministral 3's and Mistral 4's:
    their attention scales q by it; elsewhere nothing reads it)."""
    params: dict[str, Any] = {}
    ignored: list[str] = []
    scales_q = "llama_4_scaling_beta" in json.dumps(e.get("defaults", {}).get("rope_parameters") or {})
    for key, value in rope.items():
        if key in _IGNORED:
            continue
        if key not in _KNOWN_PARAMS or (key in ("short_mscale", "long_mscale") and model_type != "phimoe") \
                or (key == "llama_4_scaling_beta" and not scales_q):
            ignored.append(key)  # as transformers: a key its rope type does not read is not an error
            continue
        if value is None or (key in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim") and value == 0):
            continue  # (transformers reads these with `or`: 0 means its default)
        if key in ("short_factor", "long_factor"):
            if not isinstance(value, (list, tuple)) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                    for v in value):
                raise ValueError(f"{where}{key} must be a list of positive numbers; got {_short(value)}")
            value = tuple(float(v) for v in value)
        elif key == "truncate":
            if not isinstance(value, bool):
                raise ValueError(f"{where}truncate must be true or false; got {_short(value)}")
        else:
            value = _key_number(rope, key, where)
        params[key] = value
    return params, ignored


def _lengths(cfg: dict, rope: dict, where: str, kind: str, params: dict) -> tuple[int | None, int | None]:
    """(max_position_embeddings, original_max_position_embeddings), checked against what the rope type needs."""
    orig_src = cfg if "original_max_position_embeddings" in cfg else rope  # Phi-3 keeps it at the top level
    orig = _key_int(orig_src, "original_max_position_embeddings", "config: ") \
        if orig_src.get("original_max_position_embeddings") is not None else None
    mpe = _key_int(cfg, "max_position_embeddings", "config: ") if cfg.get("max_position_embeddings") is not None \
        else None
    if orig is None and kind in ("yarn", "longrope", "llama3"):
        orig = mpe  # transformers' default
        if orig is None:
            raise ValueError(f"{where}original_max_position_embeddings (or max_position_embeddings) is "
                             f"needed by rope_type {kind!r}")
    if kind == "yarn" and "factor" not in rope:
        raise ValueError(f"{where}factor is needed by rope_type 'yarn' (null derives it from max_position_embeddings "
                         "/ original_max_position_embeddings, as transformers)")
    if kind == "yarn" and "factor" not in params:
        if mpe is None:
            raise ValueError(f"{where}factor is null and no max_position_embeddings derives it")
    elif kind in ("linear", "dynamic", "llama3") and "factor" not in params:
        raise ValueError(f"{where}factor is needed by rope_type {kind!r}")
    if kind == "longrope" and ("short_mscale" in params) != ("long_mscale" in params):
        raise ValueError(f"{where}short_mscale and long_mscale go together (Phi-3.5-MoE); one is missing")
    return mpe, orig


def _mrope(rope: dict, where: str, model_type: str, layout: Any) -> tuple[tuple[int, ...] | None, bool | None]:
    """(mrope_section, interleaved sections) of a rope dict; the layout is
    the model table's (what the type's rotary module does with three axes)."""
    section = rope.get("mrope_section")
    inter = rope.get("mrope_interleaved")
    if section is not None:
        if not isinstance(section, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                             for v in section):
            raise ValueError(f"{where}mrope_section must be a list of 3 integers; got {_short(section)}")
        section = tuple(section)
        # transformers' rotary module decides by model class, whatever the flag says; another layout (or a
        # module the table could not run with three axes) is not guessed
        if layout not in ("chunked", "interleaved"):
            raise ValueError(f"{where}mrope_section: the M-RoPE layout of model_type {model_type!r} is not one "
                             "vkrope knows (the model table has it as "
                             f"{'one axis' if layout is None else repr(layout)}; chunked as Qwen2-VL's or "
                             "interleaved as Qwen3-VL's are)")
        inter = layout == "interleaved"
    elif inter:
        raise ValueError(f"{where}mrope_interleaved is set but mrope_section is missing")
    if inter is not None and not isinstance(inter, bool):
        raise ValueError(f"{where}mrope_interleaved must be true or false; got {_short(inter)}")
    return section, inter


def _interleaved(cfg: dict, e: dict) -> bool:
    """Pairs (2i, 2i + 1) as the model's attention rotates them (the table's
    `pairs`), or by `rope_interleave` where the config class has that key
    (MLA models: DeepSeek-V3, Kimi-K2, Youtu, ... default it to true)."""
    if "rope_interleave" in e.get("defaults", {}):
        pairs = cfg.get("rope_interleave")
        if not isinstance(pairs, bool):
            raise ValueError(f"config: rope_interleave must be true or false; got {_short(pairs)}")
        return pairs
    return e["pairs"] != "rotate_half"


# --- GGUF -----------------------------------------------------------------------------
def from_gguf(path: Any, *, layer_type: str | None = None, angle: str = "float32") -> ModelRope:
    """A model's RoPE from a GGUF file's metadata (llama.cpp's), read with the
    `gguf` package (`pip install vkrope[gguf]`): `{arch}.rope.freq_base`,
    `.rope.dimension_count` (else the head dim), `.rope.scaling.type`
    (none, linear, yarn, longrope), `.factor`, `.original_context_length`,
    `.attn_factor`, `.yarn_beta_fast` / `_slow`, `.rope.dimension_sections`
    (M-RoPE; Qwen3-VL's archs interleaved), and the `rope_freqs.weight`
    tensor (Llama 3.1's llama3 scaling, stored as per-pair divisors) or
    `rope_factors_short.weight` / `rope_factors_long.weight` (Phi-3's
    longrope). Pairs are interleaved for llama.cpp's "normal" rope archs
    (llama, ...: the converter permuted Q and K), rotate-half for the
    NeoX-style ones (qwen2, phi3, gemma3, ...). layer_type
    "sliding_attention" (Gemma 3's local layers): `{arch}.rope.freq_base_swa`
    (10000 when absent), unscaled; "full_attention" or None: the rest."""
    try:
        import gguf  # noqa: PLC0415  (an optional extra)
    except ImportError:
        raise ImportError("vkrope.from_gguf needs the gguf package: pip install 'vkrope[gguf]' (or pip install gguf)"
                          ) from None
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or os.PathLike (a .gguf file); got {_short(path)}")
    if layer_type is not None and not isinstance(layer_type, str):
        raise TypeError(f"layer_type must be a str or None; got {_short(layer_type)}")
    if layer_type not in (None, "full_attention", "sliding_attention"):
        raise ValueError(f"layer_type must be None, 'full_attention' or 'sliding_attention'; got {layer_type!r}")
    p = os.fspath(path)
    if not os.path.isfile(p):
        raise ValueError(f"path: no such file {p!r}")
    try:
        reader = gguf.GGUFReader(p)
    except Exception as exc:  # noqa: BLE001  (gguf raises ValueError, struct.error, ...)
        raise ValueError(f"path: {p!r} is not a GGUF file ({type(exc).__name__}: {exc})") from None

    def field_value(key: str) -> Any:
        f = reader.fields.get(key)
        if f is None:
            return None
        return f.contents()

    arch = field_value("general.architecture")
    if not isinstance(arch, str):
        raise ValueError(f"path: {p!r} has no general.architecture")
    kv = {k[len(arch) + 1:]: field_value(k) for k in reader.fields if k.startswith(arch + ".")}
    tensors = {t.name: np.asarray(t.data, np.float32).reshape(-1) for t in reader.tensors
               if t.name in ("rope_freqs.weight", "rope_factors_short.weight", "rope_factors_long.weight")}
    swa_keys = [k for k in ("rope.freq_base_swa", "rope.dimension_count_swa", "attention.key_length_swa") if k in kv]
    if layer_type is not None and not arch.startswith("gemma3") and not swa_keys:
        raise ValueError(f"layer_type: {p!r} ({arch}) has one RoPE for every layer (no rope.freq_base_swa, "
                         f"rope.dimension_count_swa or attention.key_length_swa); got layer_type={layer_type!r} "
                         "(pass None)")
    if layer_type is None and any(k != "rope.freq_base_swa" for k in swa_keys):
        raise ValueError(f"layer_type: {p!r} ({arch}) has sliding layers of another head width or rotary dim "
                         f"({', '.join(swa_keys)}); pass layer_type='sliding_attention' or 'full_attention'")
    if layer_type == "sliding_attention":  # llama.cpp's *_swa keys; no scaling, and rope_freqs serve full layers only
        kv = {k: v for k, v in kv.items() if not k.startswith("rope.scaling.")}
        kv["rope.freq_base"] = kv.get("rope.freq_base_swa", 10000.0)
        for key in ("rope.dimension_count", "attention.key_length"):
            if key + "_swa" in kv:
                kv[key] = kv[key + "_swa"]
        tensors = {}
    rope = _from_gguf_kv(arch, kv, tensors, angle, p)
    return rope if layer_type is None else replace(rope, layer_type=layer_type)


# llama.cpp's llama_model_rope_type (src/llama-model.cpp, 2026), by GGUF architecture name: adjacent pairs
# ("normal": its converter permuted Q and K), NeoX pairs (rotate-half), M-RoPE sections (chunked, interleaved).
# glm4 / glm4moe / hunyuan_vl take M-RoPE when the file has sections. An architecture in none of them is
# refused (llama.cpp aborts on it too) rather than guessed.
_NORM = ("llama", "llada", "llama4", "deci", "baichuan", "starcoder", "internlm2", "minicpm", "xverse", "command-r",
         "cohere2", "olmo", "arctic", "deepseek", "deepseek2", "deepseek2-ocr", "plm", "chatglm", "granite",
         "granitemoe", "granitehybrid", "chameleon", "bailingmoe", "neo-bert", "smollm3", "arcee", "ernie4_5",
         "ernie4_5-moe", "mistral3", "mistral4", "llama-embed", "maincoder", "glm-dsa", "glm4")
_NEOX = ("falcon", "falcon-h1", "grok", "dbrx", "jina-bert-v3", "modern-bert", "nomic-bert", "nomic-bert-moe",
         "eurobert", "stablelm", "bitnet", "qwen", "qwen2", "dream", "qwen2moe", "qwen3", "qwen3moe", "llada-moe",
         "rnd1", "olmo2", "olmoe", "phi2", "phi3", "phimoe", "plamo", "plamo2", "plamo3", "gemma", "gemma2", "gemma3",
         "gemma3n", "gemma4", "gemma-embedding", "starcoder2", "openelm", "gptneox", "codeshell", "orion", "nemotron",
         "exaone", "exaone4", "exaone-moe", "minicpm3", "bailingmoe2", "dots1", "hunyuan-moe", "jais2",
         "hunyuan-dense", "lfm2", "lfm2moe", "smallthinker", "seed_oss", "grovemoe", "apertus", "cogvlm",
         "pangu-embedded", "afmoe", "qwen3next", "mimo2", "step35", "glm4moe", "hunyuan_vl", "gpt-oss", "minimax-m2")
# Listed above by llama.cpp, but its graph (src/models/bert.cpp) rotates only nomic-bert, nomic-bert-moe and
# jina-bert-v3: bert adds learned position embeddings, jina-bert-v2 uses ALiBi.
_NO_ROPE = ("bert", "jina-bert-v2")
_MROPE = ("qwen2vl", "paddleocr")
_IMROPE = ("qwen3vl", "qwen3vlmoe", "qwen35", "qwen35moe")
_MROPE_IF_SECTIONS = ("glm4", "glm4moe", "hunyuan_vl")


def _from_gguf_kv(arch: str, kv: dict, tensors: dict, angle: str, where: str) -> ModelRope:
    def num(key: str, default: Any = None) -> Any:
        v = kv.get(key, default)
        if isinstance(v, list) and key == "attention.head_count":  # per layer: the first attention layer's
            v = next((h for h in v if h), None)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise ValueError(f"{where}: {arch}.{key} must be a number; got {_short(v)}")
        return v

    heads = num("attention.head_count")
    head_dim = num("attention.key_length")
    if not head_dim and heads and num("embedding_length"):
        if num("embedding_length") % heads:
            raise ValueError(f"{where}: {arch}.embedding_length {num('embedding_length')} is not a multiple of "
                             f"attention.head_count {heads} (and no attention.key_length)")
        head_dim = num("embedding_length") // heads
    if arch == "deepseek2":
        head_dim = num("rope.dimension_count")
    rot = num("rope.dimension_count", head_dim)
    if not head_dim or not rot:
        raise ValueError(f"{where}: {arch}.rope.dimension_count (or the head dim) is missing")
    theta = float(num("rope.freq_base", 10000.0))
    kind = kv.get("rope.scaling.type") or "none"
    params: dict[str, Any] = {}
    factor = num("rope.scaling.factor") or num("rope.scale_linear")
    orig = num("rope.scaling.original_context_length")
    mpe = num("context_length")
    freq_factors = None
    if kind == "none" and factor and factor != 1:
        kind = "linear"
    if kind == "none":
        kind = "default"
    if kind == "linear":
        params["factor"] = float(factor or 1.0)
    elif kind == "yarn":
        params["factor"] = float(factor or 1.0)
        for k, name in (("rope.scaling.yarn_beta_fast", "beta_fast"), ("rope.scaling.yarn_beta_slow", "beta_slow")):
            if num(k) is not None:
                params[name] = float(num(k))
        # llama.cpp's attn_factor multiplies yarn's own 0.1 ln(s) + 1: HF's attention_factor is the product.
        # DeepSeek's converter writes 0.1 * mscale_all_dim as yarn_log_multiplier (and mscale equals it in
        # every DeepSeek config): HF's factor is then g(s, mscale) / g(s, mscale_all_dim) = 1.
        attn = num("rope.scaling.attn_factor")
        log_mul = num("rope.scaling.yarn_log_multiplier")
        if log_mul:
            params["mscale"] = params["mscale_all_dim"] = float(log_mul) / 0.1
        elif attn is not None:
            base_m = 1.0 + 0.1 * math.log(params["factor"]) if params["factor"] > 1 else 1.0
            params["attention_factor"] = float(attn) * base_m
        if orig is None:
            raise ValueError(f"{where}: yarn needs {arch}.rope.scaling.original_context_length")
    elif kind == "longrope" and not ("rope_factors_short.weight" in tensors and "rope_factors_long.weight" in tensors):
        raise ValueError(f"{where}: {arch}.rope.scaling.type longrope needs the rope_factors_short.weight and "
                         "rope_factors_long.weight tensors")
    elif kind not in ("default", "longrope"):
        raise ValueError(f"{where}: {arch}.rope.scaling.type {kind!r} is not supported (none, linear, yarn, longrope)")
    if "rope_factors_short.weight" in tensors or "rope_factors_long.weight" in tensors:
        kind = "longrope"
        for name, key in (("short_factor", "rope_factors_short.weight"), ("long_factor", "rope_factors_long.weight")):
            if key not in tensors:
                raise ValueError(f"{where}: longrope needs both rope_factors_short.weight and rope_factors_long.weight")
            params[name] = tuple(float(v) for v in tensors[key])
        attn = num("rope.scaling.attn_factor")
        if attn is not None:
            params["attention_factor"] = float(attn)
        if orig is None:
            raise ValueError(f"{where}: longrope needs {arch}.rope.scaling.original_context_length")
    elif "rope_freqs.weight" in tensors:
        freq_factors = tuple(float(v) for v in tensors["rope_freqs.weight"])
    if arch in _NO_ROPE:
        raise ValueError(f"{where}: architecture {arch!r} applies no RoPE in llama.cpp's graph (learned position "
                         "embeddings), though its rope table lists it")
    if arch not in _NORM + _NEOX + _MROPE + _IMROPE:
        raise ValueError(f"{where}: architecture {arch!r} is not in llama.cpp's rope table as vkrope knows it (its "
                         "pairs, adjacent or rotate-half, would be a guess); read the model's config.json with "
                         "vkrope.from_hf")
    sections = kv.get("rope.dimension_sections")
    has_sections = isinstance(sections, list) and any(int(v) for v in sections[:3])
    section = None
    if arch in _MROPE + _IMROPE or (arch in _MROPE_IF_SECTIONS and has_sections):
        if not isinstance(sections, list) or len(sections) < 3:
            raise ValueError(f"{where}: {arch}.rope.dimension_sections must hold the M-RoPE sections")
        section = tuple(int(v) for v in sections[:3])
    try:
        return ModelRope(kind, int(head_dim), int(rot), theta, tuple(sorted(params.items())), mpe, orig, section,
                         arch in _IMROPE, arch in _NORM and section is None, freq_factors, None, angle,
                         source=where, model=arch)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


__all__ = ["ModelRope", "from_hf", "from_gguf", "layer_types", "layers", "ROPE_TYPES"]

"""`ModelRope`: a model's RoPE as its config defines it (`vkrope.from_hf`,
vkrope/models/hf.py; `vkrope.from_gguf`, vkrope/models/gguf.py).

A `ModelRope` computes the inverse frequencies as transformers 5's
`modeling_rope_utils` does, in float32 step by step (the power correctly
rounded, `exact_math.pow32`), for every rope type of `ROPE_TYPES` (rope_types.py
says each one's rule); with M-RoPE in each of `MROPE_LAYOUTS` (Qwen2-VL's
chunked sections, Qwen3-VL's interleaved, and alternating). What depends on the
call (dynamic's base, longrope's short / long factors) is decided from that
call's `max(position_ids) + 1`, with no state kept between calls
(transformers keeps dynamic's frequencies as module state that only
shrinks back below the original length; vLLM fixes dynamic's base for its
longest context; llama.cpp switches longrope by the allocated context). `ModelRope.freqs(position_ids)` gives the `InvFreqs`
the kernels read for that call.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..spec_checks import (
    EXACT_MIN_FREQ, MAX_INT, MROPE_AXES, check_angle, check_head_dim, check_position_ids, finite, position_range_error,
)
from ..freqs import InvFreqs
from ..words import brief, typed
from .rope_types import LIST_PARAMS, PARAMS, RULES, is_long, mscales, one_factor_list, read_by
from .model_table import recompute_at, within_limit
from ..runtime.dtypes import as_dtype, is_int, is_integer_dtype, is_real_float_dtype, is_real_scalar, without_repeats

ROPE_TYPES = tuple(RULES)
# how M-RoPE's three position axes spread over the pairs (`ModelRope.pair_axis` says each pair's axis): the
# layouts the model table finds running each type's rotary module (scripts/hf_model_table.py mrope_layout)
MROPE_LAYOUTS = ("chunked", "interleaved", "alternating")


def key_number(params: dict, key: str, where: str) -> float:
    """params[key] as a positive finite float, else a ValueError naming `where` + key."""
    value = params[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{where}{key} must be a number; got {brief(value)}")
    if not 0 < value <= sys.float_info.max:  # (NaN, inf and an int past float64 fail it; float() would raise)
        raise ValueError(f"{where}{key} must be a positive finite number; got {brief(value)}")
    _check_int64(value, key, where)
    return float(value)


def _check_int64(value: Any, key: str, where: str) -> None:
    """A ValueError for a Python int past int64: transformers' torch code fails on one where it computes with it
    (an OverflowError: rope_theta, a linear factor), where vkrope would read it as the nearest float."""
    if isinstance(value, int) and not -2 ** 63 <= value < 2 ** 63:
        raise ValueError(f"{where}{key} is an integer past int64, which transformers' torch code cannot take where "
                         f"it computes with it (OverflowError): refused rather than read as a float; got {brief(value)}")


def key_int(params: dict, key: str, where: str) -> int:
    """params[key] as an int >= 1 (an integral float too), else a ValueError naming `where` + key."""
    value = params[key]
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, float) and value.is_integer())):
        raise ValueError(f"{where}{key} must be an integer; got {typed(value)}")  # (a numpy int64: named so)
    if value < 1:
        raise ValueError(f"{where}{key} must be >= 1; got {brief(value)}")
    _check_int64(value, key, where)
    return int(value)


def seq_len_of(position_ids: Any) -> int | None:
    """max(position_ids) + 1, None without positions (`ModelRope.seq_len`)."""
    if position_ids is None:
        return None
    p = without_repeats(np.asarray(position_ids))  # (a broadcast array's repeats are not read)
    if p.size and not is_integer_dtype(p.dtype):  # (the call's own checks say so too, after this)
        raise TypeError(f"position_ids must be integers; got dtype {p.dtype}")
    return int(p.max()) + 1 if p.size else 0


def checked_seq_len(seq_len: Any) -> int | None:
    """`seq_len` as an int >= 0 (a call's max(position_ids) + 1), None as None; a TypeError / ValueError naming
    it otherwise (a float, NaN or inf would pick longrope's factors or dynamic's base by a comparison alone)."""
    if seq_len is None:
        return None
    if not is_int(seq_len):
        raise TypeError(f"seq_len must be an int (max(position_ids) + 1) or None; got {typed(seq_len)}")
    if not 0 <= seq_len <= MAX_INT + 1:  # (max + 1 of uint64 positions; past it float() of a base may overflow)
        raise ValueError(f"seq_len must be >= 0 and at most 2^64; got {brief(seq_len)}")
    return int(seq_len)


def _positive_int(name: str, value: Any) -> None:
    if not is_int(value):
        raise TypeError(f"{name} must be an int; got {brief(value)}")
    if value < 1 or value > MAX_INT:
        raise ValueError(f"{name} must be in [1, 2^64 - 1]; got {brief(value)}" if value > MAX_INT else
                         f"{name} must be >= 1; got {brief(value)}")


def _width(name: str, value: Any) -> None:
    """A head's or rotary width: an int in [1, MAX_HEAD_DIM] (checked before any frequency is made)."""
    _positive_int(name, value)
    check_head_dim(name, value)


def _check_params(params: Any) -> tuple:
    """A rope type's parameters as sorted (key, value) pairs: numbers,
    booleans (truncate) or tuples of numbers (longrope's factors)."""
    try:
        items = dict(params).items()
    except (TypeError, ValueError):
        raise TypeError(f"params must be (key, value) pairs; got {brief(params)}") from None
    out = []
    for key, value in items:
        if not isinstance(key, str):
            raise TypeError(f"params keys must be strings; got {brief(key)}")
        if key == "truncate":
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"truncate must be true or false; got {brief(value)}")
            value = bool(value)
        elif isinstance(value, (list, tuple, np.ndarray)):
            vals = list(value)
            bad = next((i for i, v in enumerate(vals)
                        if isinstance(v, bool) or not is_real_scalar(v) or not finite(v) or v <= 0), None)
            if bad is not None:
                raise ValueError(f"{key} must hold positive finite numbers; got {brief(vals[bad])} at [{bad}] "
                                 f"of {len(vals)}")
            value = tuple(float(v) for v in vals)
        elif isinstance(value, bool) or not is_real_scalar(value) or not finite(value) or value <= 0:
            raise ValueError(f"{key} must be a positive finite number; got {brief(value)}")
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
    (factor, beta_fast, short_factor, ...: only keys the rope type reads),
    as sorted (key, value) pairs; max_position_embeddings and
    original_max_position_embeddings: the config's (None when absent);
    mrope_section: M-RoPE's pairs per axis (temporal, height, width), None
    without; mrope_layout: how the axes spread over the pairs, one of
    `MROPE_LAYOUTS` ("chunked": Qwen2-VL's runs of s0, s1, s2 pairs;
    "interleaved": Qwen3-VL's every third pair; "alternating": ERNIE 4.5
    VL's height and width on alternate pairs, then time, which may have
    none, as two-axis rotations do; ERNIE's module needs one, and from_hf
    refuses its configs without); interleaved: pairs (2i, 2i + 1) (GGUF's llama-style
    rope and DeepSeek's `rope_interleave`), else rotate-half (i, i +
    rotary_dim / 2); freq_factors: llama.cpp's per-pair divisors of the
    frequencies (a GGUF's `rope_freqs.weight`; inf: a still pair), None without; layer_type:
    the layer type read (Gemma 3: "sliding_attention", "full_attention");
    angle: "float32" (transformers' float32 product) or "exact" (the exact
    product, for long contexts; see `vkrope.RopeFreqs`).

    Not compared between specs: source (where it was read), model (the
    model_type or GGUF architecture), ignored (the config's RoPE keys the
    model's code does not read), cos_layout (the model's cos / sin: "halves"
    cat(f, f), "repeated" each twice, adjacent, "single" one per pair),
    nope_layers (the layers that apply no RoPE; None: unknown, and nope_why
    says why: a config lacking the key that says, a GGUF file's llama.cpp
    rule vkrope cannot run), part (of a model whose layers rotate two ways:
    the one read, DeepSeek-V3.2's "attention" or "indexer"; "" otherwise),
    part_channels (for a part with heads of its own, an indexer's: which of
    each head's channels head_dim covers, "first" (DeepSeek-V3.2's
    q[..., :qk_rope_head_dim]) or "last" (HY-V4's q[..., -qk_rope_head_dim:]);
    "" otherwise).
    """

    rope_type: str
    head_dim: int
    rotary_dim: int
    theta: float
    params: tuple = ()
    max_position_embeddings: int | None = None
    original_max_position_embeddings: int | None = None
    mrope_section: tuple[int, ...] | None = None
    mrope_layout: str = "chunked"
    interleaved: bool = False
    freq_factors: tuple[float, ...] | None = None
    layer_type: str | None = None
    angle: str = "float32"
    source: str = field(default="", compare=False)
    ignored: tuple[str, ...] = field(default=(), compare=False)
    model: str = field(default="", compare=False)
    cos_layout: str = field(default="halves", compare=False)
    nope_layers: tuple[int, ...] | None = field(default=(), compare=False)
    nope_why: str = field(default="", compare=False)
    part: str = field(default="", compare=False)
    part_channels: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _check_fields(self)

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
        assert key in PARAMS, f"{key} is not in rope_types.PARAMS: from_hf would drop it"
        return dict(self.params).get(key, default)

    # --- what the model computes -------------------------------------------------
    @property
    def factor(self) -> float:
        """The scaling factor (yarn, longrope: max_position_embeddings /
        original_max_position_embeddings when the config gives none)."""
        f = self.param("factor")
        if f is None and RULES[self.rope_type].factor in ("key", "derived") and self.max_position_embeddings:
            return self.mpe / self.orig
        return 1.0 if f is None else float(f)

    @property
    def attention_factor(self) -> float:
        """What cos and sin are multiplied by (transformers' attention_scaling):
        yarn's `attention_factor`, else 0.1 m ln(factor) + 1 with
        m = mscale / mscale_all_dim's ratio (DeepSeek) or 1; longrope's,
        else sqrt(1 + ln(factor) / ln(original_max_position_embeddings)),
        PhiMoE's short_mscale; 1 for the others. (DeepSeek also scales its softmax by
        (0.1 mscale_all_dim ln(factor) + 1)^2: the attention's business.)"""
        return RULES[self.rope_type].attention_factor(self)

    def attention_factor_for(self, seq_len: int | None) -> float:
        """The attention factor of a call whose max(position_ids) + 1 is `seq_len`: `attention_factor`, except
        for longrope with `short_mscale` / `long_mscale` (Phi-3.5-MoE): long_mscale past the original length."""
        seq_len, pair = checked_seq_len(seq_len), mscales(self)
        return self.attention_factor if pair is None else pair[is_long(self, seq_len)]

    @property
    def recompute_at(self) -> int | None:
        """The sequence length (input_ids' length, padding included) at which the model's own generate() in
        transformers drops its KV cache and runs every position again, where that call's frequencies differ
        from the calls' before (Phi-3 / 3.5 / Phi-4-mini and Phi-3.5-MoE with longrope:
        original_max_position_embeddings + 1, the first call with the long factors): a decode loop matching
        generate() runs its prefill again over the whole sequence at the first step that brings it to this
        length or past it while fewer tokens are cached, rewriting every cached key (where left padding keeps
        that call's positions at or below the original length, the factors and the keys stay as they were).
        None for every other model (Phi-4-multimodal's generate() drops its cache there and runs the newest
        token alone, which no cached loop reproduces: docs/guide/decode.md), and a GGUF's."""
        return recompute_at(self)

    def seq_len(self, position_ids: Any) -> int | None:
        """max(position_ids) + 1 (None without positions): what dynamic and longrope decide by."""
        return seq_len_of(position_ids)

    def uses_seq_len(self) -> bool:
        """Whether the frequencies (PhiMoE: the factor) depend on the call's positions (dynamic, longrope; not a
        longrope whose short and long factors are the same, as a GGUF's at its context)."""
        return RULES[self.rope_type].call_key is not None and RULES[self.rope_type].varies(self)

    def inv_freq(self, seq_len: int | None = None, dtype: Any = np.float32) -> np.ndarray:
        """The inverse frequencies [rotary_dim / 2] for a call whose
        max(position_ids) + 1 is `seq_len` (None: at initialisation, as
        transformers' module starts), as transformers computes them
        (float32: step by step in float32; float64: the same formulas in
        float64, the exact angle's)."""
        seq_len, t = checked_seq_len(seq_len), as_dtype(dtype).type
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            inv = np.asarray(RULES[self.rope_type].inv_freq(self, seq_len, t), t)
            # (where the factors alone make them so, the message names them: a tiny factor overflows a quotient)
            by_factors = self.freq_factors is not None and _valid_inv(inv)
            if self.freq_factors is not None:
                inv = np.asarray(inv / np.asarray(self.freq_factors, t), t)
        if not _valid_inv(inv):
            raise ValueError(f"{self.rope_type}: these parameters give inverse frequencies that are not finite numbers >= 0 "
                             f"(theta {self.theta}, {dict(self.params)}"
                             f"{', divided by its freq_factors' if by_factors else ''})")
        return inv

    @property
    def pair_axis(self) -> tuple[int, ...] | None:
        """M-RoPE: each pair's position axis (0 temporal, 1 height, 2 width)."""
        if self.mrope_section is None:
            return None
        s = self.mrope_section
        half = self.rotary_dim // 2
        if self.mrope_layout == "interleaved":  # (a pair no section claims turns by time, as transformers turns it)
            return tuple(a % 3 for a in interleaved_axes(s, half))
        if self.mrope_layout == "alternating":  # ERNIE 4.5 VL: h, w, h, w, ... over 2 s1 pairs, then t
            return tuple(1 + j % 2 if j < 2 * s[1] else 0 for j in range(half))
        return tuple(int(a) for a in np.repeat(np.arange(3), s))  # Qwen2-VL: chunks of s0, s1, s2 pairs

    def freqs(self, position_ids: Any = None) -> InvFreqs:
        """The `InvFreqs` the kernels read for a call with these position ids
        (dynamic and longrope decide by their max + 1; the others ignore them)."""
        within_limit(self, position_ids)
        return self._freqs(self.seq_len(position_ids) if self.uses_seq_len() else None)

    def _freqs(self, seq_len: int | None) -> InvFreqs:
        call_key = RULES[self.rope_type].call_key
        key = None if call_key is None else call_key(self, seq_len)
        cache = self.__dict__.setdefault("_freqs_cache", {})
        spec = cache.get(key)
        if spec is None:
            if len(cache) >= 64:
                cache.clear()
            n = seq_len if key is not None else None
            spec = cache[key] = InvFreqs(self.inv_freq(n), _exact_still(self, self.inv_freq(n, np.float64)),
                                         attention_factor=self.attention_factor_for(n), pair_axis=self.pair_axis,
                                         angle=self.angle)
        return spec

    def check_position_ids(self, position_ids: Any, name: str = "position_ids") -> np.ndarray:
        """int64 [B, S] positions ([3, B, S] with M-RoPE; see
        `spec_checks.check_position_ids`), read-only (a broadcast axis stays one:
        copy it to write), or a TypeError / ValueError naming `name`. Float
        positions are taken where every one is a whole number (Qwen3-Omni's
        get_rope_index builds float ids; the rotary module turns by
        `position_ids.float()`): a fractional one is a ValueError."""
        p = check_position_ids(_whole(position_ids, name), self.mrope_section is not None, name)
        _check_fourth_position(self.freq_factors, position_ids, name)
        return p

    def cos_sin(self, position_ids: Any) -> tuple[np.ndarray, np.ndarray]:
        """(cos, sin) float32 [B, S, rotary_dim] ([B, S, rotary_dim / 2] where
        the module returns one value per pair, as GPT-OSS's): what the model's rotary
        module returns for these position ids ([B, S]; M-RoPE [3, B, S]):
        the halves duplicated (`cat(freqs, freqs)`, also for DeepSeek's and GLM's
        interleaved pairs, whose modules return the same and re-order in the
        attention; Cohere's repeats each value twice, adjacent, as this does for
        its models), times the attention factor: the call's `InvFreqs.table` (the
        operators compute cos / sin in the shader, within 2 float32 ulps of it).
        A module returning another form holds the same values in it, not this
        layout: GPT-J's and CodeGen's (sin, cos) of one table, Llama 4's and
        DeepSeek-V2's complex freqs_cis [..., rotary_dim / 2]. A GGUF spec of
        adjacent pairs (llama.cpp's NORM mode, `interleaved` True) has no
        rotary module: its halves come duplicated too, so pair k's cos is
        `cos[..., k]`; `np.repeat(cos[..., :rotary_dim // 2], 2, -1)` lays
        them out for the adjacent-pair formula."""
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
        """What the model's attention multiplies q by after RoPE, float32
        [B, S]; None for a model without it. Ministral 3's and Mistral 4's
        `llama_4_scaling_beta` (a config's): transformers' `1 + beta *
        log(1 + floor(position_ids / original_max_position_embeddings))`,
        in float32. A GGUF's attention temperature (Mistral 3's, DeepSeek-V2's,
        Mistral 4's `attention.temperature_scale` s, over
        `attn_temperature_length` L positions): llama.cpp's `log(floor(pos /
        L) + 1) * s + 1`, the quotient in float32, the rest in double,
        rounded to float32 once. The kernels do not fuse it: scale q by it
        before the attention product, as the model's attention does."""
        if self.param("llama_4_scaling_beta") is None and self.param("attn_temperature_scale") is None:
            return None
        p = self.check_position_ids(position_ids)
        return _q_factors(self, p[0] if self.mrope_section is not None else p)

    def summary(self) -> dict[str, Any]:
        """What the CLI prints: the resolved RoPE as plain values."""
        return summary(self)


def _valid_inv(inv: np.ndarray) -> bool:
    """Whether inverse frequencies are finite numbers >= 0."""
    return bool(np.isfinite(inv).all() and not (inv < 0).any())


def _check_fields(rope: ModelRope) -> None:
    """A ModelRope's fields checked (and theta, params, sections, divisors
    normalised in place), each parameter tried at every length its rope type
    uses, so that a bad one is a ValueError here, not in a later call."""
    if rope.rope_type not in ROPE_TYPES:
        raise ValueError(f"rope_type must be one of {ROPE_TYPES}; got {rope.rope_type!r}")
    check_angle(rope.angle)
    if not isinstance(rope.part, str):  # (a label: the part of a model rotating two ways it was read for)
        raise TypeError(f"part must be a str ('attention', 'indexer', or '' for none); got {brief(rope.part)}")
    if rope.part_channels not in ("", "first", "last"):
        raise ValueError(f"part_channels must be 'first', 'last' or ''; got {brief(rope.part_channels)}")
    for name in ("head_dim", "rotary_dim"):
        _width(name, getattr(rope, name))
    for name in ("max_position_embeddings", "original_max_position_embeddings"):
        if getattr(rope, name) is not None:
            _positive_int(name, getattr(rope, name))
    if isinstance(rope.theta, bool) or not is_real_scalar(rope.theta) or not finite(rope.theta) or rope.theta <= 0:
        raise ValueError(f"theta (rope_theta) must be a positive finite number; got {brief(rope.theta)}")
    object.__setattr__(rope, "theta", float(rope.theta))
    if not isinstance(rope.interleaved, bool):
        raise TypeError(f"interleaved must be a bool; got {brief(rope.interleaved)}")
    if not isinstance(rope.mrope_layout, str):
        raise TypeError(f"mrope_layout must be a str, one of {list(MROPE_LAYOUTS)}; got {brief(rope.mrope_layout)}")
    if rope.mrope_layout not in MROPE_LAYOUTS:
        raise ValueError(f"mrope_layout must be one of {list(MROPE_LAYOUTS)}; got {brief(rope.mrope_layout)}")
    object.__setattr__(rope, "mrope_layout", str(rope.mrope_layout))  # (a numpy str_ held as the str it equals)
    if rope.rotary_dim % 2 or rope.rotary_dim > rope.head_dim:
        raise ValueError(f"rotary_dim must be even and <= head_dim ({rope.head_dim}); got {rope.rotary_dim}")
    if rope.layer_type is not None and not isinstance(rope.layer_type, str):
        raise TypeError(f"layer_type must be a str or None; got {brief(rope.layer_type)}")
    if rope.mrope_layout != "chunked" and rope.mrope_section is None:
        raise ValueError(f"mrope_layout {rope.mrope_layout!r} needs mrope_section")
    object.__setattr__(rope, "params", _check_params(rope.params))
    _check_temperature(dict(rope.params))
    unread = [k for k, _ in rope.params if k not in read_by(rope.rope_type)]
    if unread:
        raise ValueError(f"params: rope_type {rope.rope_type!r} does not read {unread} (it reads "
                         f"{sorted(read_by(rope.rope_type))})")
    rule = RULES[rope.rope_type]
    if rule.needs_orig and rope.original_max_position_embeddings is None:
        raise ValueError(f"rope_type {rope.rope_type!r} needs original_max_position_embeddings")
    if rule.factor == "needed" and rope.param("factor") is None:
        raise ValueError(f"rope_type {rope.rope_type!r} needs factor")
    rule.check(rope)
    if rope.mrope_section is not None:
        object.__setattr__(rope, "mrope_section", _checked_sections(rope.mrope_section, rope.rotary_dim,
                                                                    rope.mrope_layout))
    if rope.freq_factors is not None:
        object.__setattr__(rope, "freq_factors", _checked_divisors(rope.freq_factors, rope.rotary_dim))
    if rope.nope_layers is not None:
        object.__setattr__(rope, "nope_layers", _checked_layers(rope.nope_layers))
    lengths: list[int | None] = [None]
    if rope.uses_seq_len():
        lengths.append(max(rope.max_position_embeddings or 0, rope.original_max_position_embeddings or 0) + 1)
    try:
        rope.attention_factor  # noqa: B018  (computed for its errors)
        for n in lengths:
            rope._freqs(n)
    except (ZeroDivisionError, OverflowError, ArithmeticError) as exc:
        raise ValueError(f"{rope.rope_type}: these parameters give no usable frequencies ({exc}): theta "
                         f"{rope.theta}, {dict(rope.params)}") from None


def _checked_sections(sec: Any, rotary_dim: int, layout: str) -> tuple[int, ...]:
    """M-RoPE's pair counts per axis: chunked, summing to rotary_dim / 2 (the
    chunks are the pairs); interleaved, any (Qwen3-VL's height and width take
    every third pair below 3 s1 and 3 s2, temporal the rest, as transformers'
    `recomposition_frequencies` does whatever the sum); alternating, summing
    to rotary_dim / 2 with as many height pairs as width pairs (they
    alternate)."""
    if isinstance(sec, (str, bytes)) or not hasattr(sec, "__len__") or len(sec) != MROPE_AXES or any(
            not is_int(v) or not 0 <= v <= MAX_INT for v in sec):
        raise ValueError(f"mrope_section must hold 3 pair counts >= 0 (temporal, height, width); got "
                         f"{brief(sec)}")
    if layout != "interleaved" and sum(int(v) for v in sec) != rotary_dim // 2:
        raise ValueError(f"mrope_section {list(sec)} must sum to rotary_dim / 2 = {rotary_dim // 2}")
    if layout == "alternating" and sec[1] != sec[2]:
        raise ValueError(f"mrope_section {list(sec)}: the alternating layout needs as many height pairs as width "
                         "pairs (they alternate)")
    return tuple(int(v) for v in sec)


def interleaved_axes(section: tuple[int, ...], pairs: int) -> tuple[int, ...]:
    """Qwen3-VL's interleaved M-RoPE: each pair's position axis, h on j % 3 == 1 below 3 s1, w on j % 3 == 2
    below 3 s2, t on j % 3 == 0 below 3 s0; 3 where no section claims the pair (transformers turns it by
    time; llama.cpp by a fourth position, e, that it keeps 0)."""
    s0, s1, s2 = section[:3]
    return tuple(1 if j % 3 == 1 and j < 3 * s1 else 2 if j % 3 == 2 and j < 3 * s2
                 else 0 if j % 3 == 0 and j < 3 * s0 else 3 for j in range(pairs))


def _exact_still(rope: ModelRope, exact: np.ndarray) -> np.ndarray:
    """The exact angle's float64 inverse frequencies, where a divisor leaves one below the 2^-64 that angle
    holds (Gemma 4's converter writes 1e30 for a pair that does not turn) 0: a still pair, as an inf divisor
    makes it (llama.cpp turns it by under 2^-40 rad at any position below 2^24)."""
    if rope.angle != "exact" or rope.freq_factors is None:
        return exact
    with np.errstate(invalid="ignore"):  # (an inf divisor's 0 times inf: already still)
        divided_away = (exact < EXACT_MIN_FREQ) & (exact * np.asarray(rope.freq_factors) >= EXACT_MIN_FREQ)
    return np.where(divided_away, 0.0, exact)


def _check_temperature(params: dict[str, Any]) -> None:
    """llama.cpp's attention temperature in a ModelRope's params: its scale and length together, the length a
    whole count of positions, and not beside transformers' llama_4_scaling_beta (each a model's one q scale)."""
    scale, length = params.get("attn_temperature_scale"), params.get("attn_temperature_length")
    if (scale is None) != (length is None):
        raise ValueError("params: attn_temperature_scale and attn_temperature_length go together (llama.cpp's "
                         "attention temperature: its scale, and the positions per step)")
    if length is not None and not (float(length).is_integer() and length <= 0xFFFFFFFF):
        raise ValueError(f"params: attn_temperature_length must be a whole number of positions below 2^32 (llama.cpp's "
                         f"uint32_t); got {length}")
    with np.errstate(over="ignore", under="ignore"):
        scale32 = None if scale is None else np.float32(scale)
    if scale32 is not None and not 0 < scale32 < np.inf:
        raise ValueError(f"params: attn_temperature_scale must be a positive float32 (llama.cpp's float, which "
                         f"asserts it is not 0); got {scale}")
    if scale is not None and "llama_4_scaling_beta" in params:
        raise ValueError("params: llama_4_scaling_beta (transformers') and attn_temperature_scale (llama.cpp's) "
                         "are two forms of one q scale: give one")


def _q_factors(r: ModelRope, p: np.ndarray) -> np.ndarray:
    """ModelRope.q_scale's factors for checked positions `p` [B, S]."""
    temp = r.param("attn_temperature_scale")
    if temp is not None:  # (llm_graph_input_attn_temp::set_input; its offset is 0 where vkrope reads one)
        steps = np.floor(p.astype(np.float32) / np.float32(r.param("attn_temperature_length")))
        return (np.log(steps.astype(np.float64) + 1.0) * float(np.float32(temp)) + 1.0).astype(np.float32)
    ratio = np.floor(p.astype(np.float32) / np.float32(r.orig))
    return (np.float32(1) + np.float32(r.param("llama_4_scaling_beta")) * np.log(np.float32(1) + ratio)).astype(
        np.float32)


def _whole(position_ids: Any, name: str) -> Any:
    """A float position array as int64 where every value is a whole number, else a ValueError naming the first
    that is not (anything else as given, for check_position_ids to judge). A model that builds fractional
    positions (Qwen3-Omni's video time axis: frame times of second_per_grids * position_id_per_seconds) turns by
    them; vkrope's kernels take whole positions, and rounding would change the rotation."""
    if type(position_ids) is not np.ndarray or not is_real_float_dtype(position_ids.dtype):
        return position_ids
    small = without_repeats(position_ids)  # (a broadcast array's repeats are not read)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(small) | (small != np.floor(small))
    if bad.any():
        at = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"{name}{list(at)} is {float(small[at])!r}: vkrope takes whole positions (float ids whose "
                         "values are whole numbers are read as integers); a model that builds fractional positions "
                         "(Qwen3-Omni's video time axis) turns by them, and rounding would change the rotation")
    if small.size and float(np.abs(small).max()) >= 2.0 ** 62:  # (past int64, which the range check's cast would
        # wrap; compared as a Python float: float16's own cast of 2^62 overflowed with a warning)
        raise position_range_error(name, float(small.flat[np.argmax(np.abs(small))]))
    return np.broadcast_to(small.astype(np.int64), position_ids.shape)


def _check_fourth_position(freq_factors: tuple[float, ...] | None, position_ids: np.ndarray, name: str) -> None:
    """A ValueError where llama.cpp's [4 * S] layout (checked already) gives a fourth position, e, other than
    0 while some pairs do not turn (inf divisors: llama.cpp turns them by e, and sets it to 0 for every
    token; vkrope reads them as still)."""
    if freq_factors is not None and math.inf in freq_factors and position_ids.ndim == 1 \
            and np.any(without_repeats(position_ids.reshape(4, -1)[3])):  # (a broadcast row: its one value)
        raise ValueError(f"{name}: the fourth position (e) of llama.cpp's [4 * S] layout must be 0 for this RoPE: "
                         "llama.cpp turns some of its pairs by it, and sets it to 0 for every token; vkrope reads "
                         "those pairs as still")


def _checked_layers(nope_layers: Any) -> tuple[int, ...]:
    """The layers that apply no RoPE: layer indices (ints >= 0), as a tuple."""
    if isinstance(nope_layers, (str, bytes)) or not hasattr(nope_layers, "__iter__"):
        raise TypeError(f"nope_layers must be a sequence of layer indices (or None: unknown); got {brief(nope_layers)}")
    layers = tuple(nope_layers)
    bad = next((i for i, v in enumerate(layers) if not is_int(v) or not 0 <= v <= MAX_INT), None)
    if bad is not None:
        raise ValueError(f"nope_layers must hold layer indices (ints >= 0); got {brief(layers[bad])} at [{bad}] of "
                         f"{len(layers)}")
    return tuple(int(v) for v in layers)


def _checked_divisors(freq_factors: Any, rotary_dim: int) -> tuple[float, ...]:
    """llama.cpp's per-pair divisors: rotary_dim / 2 positive numbers (inf: a pair that does not turn, the
    pairs Qwen3-VL's llama.cpp M-RoPE turns by a position it keeps 0)."""
    try:
        ff = np.asarray(freq_factors, np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"freq_factors must be numbers; got {brief(freq_factors)}") from None
    except OverflowError:  # (an int past float64)
        raise ValueError(f"freq_factors must be finite numbers (float64's); got {brief(freq_factors)}") from None
    if ff.shape != (rotary_dim // 2,):
        raise ValueError(f"freq_factors must hold rotary_dim / 2 = {rotary_dim // 2} values; got shape "
                         f"{list(ff.shape)}")
    if not (ff > 0).all():  # (NaN fails it too)
        raise ValueError(f"freq_factors must be positive numbers; got {ff[~(ff > 0)][0]}")
    return tuple(float(v) for v in ff)


def part_slice(r: ModelRope) -> str:
    """The channels of a part's own heads a ModelRope read for it rotates, as a slice of q (`part_channels`:
    DeepSeek-V3.2's indexer "q[..., :64]", HY-V4's "q[..., -64:]"); "" for any other."""
    if not r.part_channels:
        return ""
    return f"q[..., :{r.head_dim}]" if r.part_channels == "first" else f"q[..., -{r.head_dim}:]"


def summary(r: ModelRope) -> dict[str, Any]:
    """What the CLI prints of a ModelRope: the resolved RoPE as plain values."""
    d: dict[str, Any] = dict(model=r.model, rope_type=r.rope_type, head_dim=r.head_dim,
                             rotary_dim=r.rotary_dim,
                             theta=r.theta, attention_factor=r.attention_factor,
                             pairs="interleaved" if r.interleaved else "rotate-half")
    if r.layer_type:
        d["layer_type"] = r.layer_type
    if r.part:
        d["part"] = r.part
    if r.part_channels:  # (where in each of the part's own heads the RoPE's head_dim sits)
        d["part_channels"] = f"the {r.part_channels} {r.head_dim} of each {r.part} head ({part_slice(r)})"
    for key in ("max_position_embeddings", "original_max_position_embeddings"):
        if getattr(r, key) is not None:
            d[key] = getattr(r, key)
    if r.mrope_section is not None:
        d["mrope_section"] = list(r.mrope_section)
        d["mrope"] = r.mrope_layout
        if r.mrope_layout == "alternating":  # (held as time, height, width; ERNIE 4.5 VL's config lists them
            # as height, width, time: both said, so neither is copied into the other's place)
            d["mrope_section_as_config_lists"] = [*r.mrope_section[1:], r.mrope_section[0]]
    one_list = one_factor_list(r)
    for k, v in r.params:
        if one_list and k in LIST_PARAMS:
            k = "factors"  # (one list: every position takes it)
        d[k] = list(v) if isinstance(v, tuple) else v
    if r.freq_factors is not None:  # ("inf": a pair that does not turn; JSON has no infinity)
        d["freq_factors"] = [v if math.isfinite(v) else "inf" for v in r.freq_factors]
        still = [i for i, v in enumerate(r.freq_factors) if v == math.inf]
        if still:
            d["still_pairs"] = still
    if r.ignored:
        d["ignored_keys"] = list(r.ignored)
    if r.nope_layers is None:
        d["layers_without_rope"] = "unknown" + (f": {r.nope_why}" if r.nope_why else "")
    elif r.nope_layers:
        d["layers_without_rope"] = list(r.nope_layers)
    if r.param("llama_4_scaling_beta") is not None:
        d["q_scale_after_rope"] = "1 + llama_4_scaling_beta * ln(1 + floor(position / " \
                                  f"{r.original_max_position_embeddings})) (the attention's; ModelRope.q_scale)"
    if r.param("attn_temperature_scale") is not None:
        d["q_scale_after_rope"] = "1 + attn_temperature_scale * ln(1 + floor(position / " \
                                  f"{int(r.param('attn_temperature_length'))})) (llama.cpp's attention " \
                                  "temperature; ModelRope.q_scale)"
    if r.uses_seq_len():
        d["decided_per_call"] = RULES[r.rope_type].per_call.format(orig=r.original_max_position_embeddings) \
            if mscales(r) is None else f"short / long mscale, by max(position_ids) + 1 > " \
                                       f"{r.original_max_position_embeddings} (the short factors always)"
    return d

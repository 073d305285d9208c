"""The numbers llama.cpp's graph rotates a GGUF model's layers with: the
RoPE fields `llama_model_base::load_hparams` reads from the file
(llama-model.cpp; the table's `base` program, which gguf_layers runs), the
context parameters `llama_context` derives from them
(llama-context.cpp: the frequency scale, YaRN's extrapolation mix and
attention factor), and, per layer, the arguments of the graph's rope calls
(`rope_forms` in vkrope/data/gguf_archs.json, read from each graph by
scripts/gguf_arch_table.py) evaluated over those.

`Rotation` is what one layer's rope call does; `rope_args` turns it into a
vkrope rope type and its parameters, or refuses what vkrope's rope types do
not express. The arithmetic mirrors llama.cpp's generic code line by line
(which architecture sets what comes from the table, never from here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from ..yarn import YaRN


class Unknown(Exception):
    """A name, statement or condition whose value the table cannot give."""


_TYPE = "LLAMA_ROPE_SCALING_TYPE_"  # (llama_context's own tests of the type: NONE, YARN)


@dataclass(frozen=True)
class Rotation:
    """One layer's rope call: rotated channels, llama.cpp's mode, whether
    they stand apart from the head's (MLA), whether the call takes the
    per-pair factors (rope_freqs / longrope tensors), ggml_rope_ext's
    frequency arguments, and the factor the graph multiplies Q by after it
    (llm_graph_input_attn_temp; None where it does not)."""

    dims: int
    head: int  # the layer's head width (llama_hparams::n_embd_head_k(il)), where the rotated channels are
    mode: str
    apart: bool
    factors: bool
    base: float
    scale: float
    ext_factor: float
    attn_factor: float
    beta_fast: float
    beta_slow: float
    n_ctx_orig: int
    q_scale: tuple[float, int] | None = None  # the attention temperature's (scale, positions per step) after RoPE
    part: str = "attention"  # the model's part the call rotates (the table's: DeepSeek-V3.2's "indexer" heads)


def _mscale(scale: float, mscale: float) -> float:
    return 1.0 if scale <= 1.0 else 0.1 * mscale * math.log(scale) + 1.0


def context_fields(f: dict[str, Any], own_mscale: bool) -> dict[str, Any]:
    """The graph's names for llama_context's cparams (freq_base, freq_scale,
    ext_factor, attn_factor, beta_fast, beta_slow, n_ctx_orig) from the
    hparams fields `f`, as llama_context's constructor derives them;
    `own_mscale`: the architecture takes the log multiplier as its mscale too
    (the table's `own_mscale`: DeepSeek-V2)."""
    scale = 1.0 if f["rope_scaling_type_train"] == _TYPE + "NONE" else f["rope_freq_scale_train"]
    ext = f["yarn_ext_factor"]
    if ext < 0:  # (negative: not set)
        ext = 1.0 if f["rope_scaling_type_train"] == _TYPE + "YARN" else 0.0
    attn = f["yarn_attn_factor"]
    if ext != 0:
        factor = 1.0 / scale
        log_mul = f["rope_yarn_log_mul"]
        if log_mul != 0:
            mscale = log_mul if own_mscale and log_mul != 1.0 else 1.0
            attn = _mscale(factor, mscale) / _mscale(factor, log_mul)
        else:
            attn = _mscale(factor, 1.0)
        # (cancels what ggml's rope_yarn multiplies in; a negative factor's logf is NaN in C: rope_args refuses
        # the calls that take it, a plain ggml_rope does not)
        attn *= 1.0 / (1.0 + 0.1 * (math.log(factor) if factor > 0 else math.nan))
    attn *= f["rope_attn_factor"]
    orig = f["n_ctx_orig_yarn"] or f["n_ctx_train"] or 0
    if ext != 0 and orig > 2**31 - 1:  # (the graph's n_ctx_orig is an int32: negative, YaRN's ramp NaN)
        raise ValueError(f"rope.scaling.original_context_length (else context_length) {orig} is past 2^31 - 1: "
                         "llama.cpp's graph holds it as an int32, so its YaRN frequencies are NaN")
    base = float(np.float32(f["rope_freq_base_train"]))  # (a float field: HunyuanVL's alpha-scaled base)
    return {"freq_base": base, "freq_scale": scale, "ext_factor": ext, "attn_factor": attn,
            "beta_fast": f["yarn_beta_fast"], "beta_slow": f["yarn_beta_slow"], "n_ctx_orig": orig}


def rotation(form: dict, evaluate: Callable[[str], Any], head: int) -> Rotation:
    """One rope call of the table (`form`) evaluated for a layer; Unknown where it names what the
    file and the table do not give (DeepSeek-V4's compression ratios, a plain ggml_rope's defaults aside)."""
    s = form["scaling"]
    if s == "plain":  # (ggml_rope: base 10000, no scaling, no factors)
        s = {"freq_base": "10000.0", "freq_scale": "1.0", "ext_factor": "0.0", "attn_factor": "1.0",
             "beta_fast": "0.0", "beta_slow": "0.0", "n_ctx_orig": "0"}
    elif not isinstance(s, dict):
        s = {k: "unknown()" for k in ("freq_base", "freq_scale", "ext_factor", "attn_factor", "beta_fast",
                                      "beta_slow", "n_ctx_orig")}
    if "head" in form:  # (a part with heads of its own, [rope | nope]: DeepSeek-V3.2's indexer_head_size)
        head = evaluate(form["head"])
    elif "il" not in form["dims"] and head != evaluate("n_embd_head_k(0)"):  # (Gemma 3's graph: layer 0's width)
        raise Unknown("the layers' head widths differ and its graph rotates layer 0's n_rot on each: which width "
                      "a layer's heads have there is not read")
    return Rotation(int(evaluate(form["dims"])), int(head), form["mode"], bool(form["slice"]),
                    form["scaling"] != "plain" and bool(evaluate(form["factors"])),
                    float(evaluate(s["freq_base"])), float(evaluate(s["freq_scale"])),
                    float(evaluate(s["ext_factor"])), float(evaluate(s["attn_factor"])),
                    float(evaluate(s["beta_fast"])), float(evaluate(s["beta_slow"])), int(evaluate(s["n_ctx_orig"])),
                    part=form.get("part", "attention"))


def rope_args(r: Rotation, longrope: bool, where: str,
              attn_keys: Callable[[], str] = lambda: "rope.scaling.attn_factor") -> tuple[str, dict[str, Any]]:
    """(vkrope rope type, its parameters) doing what ggml's rope_yarn does with `r`: the angle is
    freq_scale * p * theta_i, mixed back towards p * theta_i by YaRN's ramp times ext_factor, and cos / sin
    are multiplied by attn_factor (times 1 + 0.1 ln(1 / freq_scale) where ext_factor is not 0). `longrope`:
    the call takes a long / short factor pair (switched by length), whatever the file's rope.scaling.type;
    `attn_keys`: the file's keys attn_factor comes from, for a refusal to name (asked for only then)."""
    if r.scale < 0:  # (its YaRN's attention factor is NaN; its linear angles turn backwards: no rope type's factor)
        raise ValueError(f"{where}: rope.scaling.factor (or rope.scale_linear) must be positive, or 0 for none; got "
                         f"{1 / r.scale:.9g}")
    if r.ext_factor not in (0.0, 1.0):
        raise ValueError(f"{where}: llama.cpp mixes YaRN's ramp by yarn_ext_factor {r.ext_factor}; vkrope's yarn "
                         "mixes fully (1) or not at all (0)")
    factor = 1.0 / r.scale
    magnitude = r.attn_factor * ((1.0 + 0.1 * math.log(factor)) if r.ext_factor else 1.0)
    if longrope:
        if r.scale != 1.0 or r.ext_factor:
            raise ValueError(f"{where}: llama.cpp scales longrope's frequencies by {r.scale} here; vkrope's longrope "
                             "does not")
        return "longrope", {"attention_factor": magnitude}
    if r.ext_factor and (factor != 1.0 or magnitude != 1.0):
        check_ramp(r, where)
        return "yarn", {"factor": factor, "beta_fast": r.beta_fast, "beta_slow": r.beta_slow,
                        "attention_factor": magnitude}
    if magnitude != 1.0:
        raise ValueError(f"{where}: llama.cpp multiplies cos and sin by {magnitude:.9g} here ({attn_keys()}), "
                         "which vkrope's rope types other than yarn and longrope do not")
    return ("linear", {"factor": factor}) if factor != 1.0 else ("default", {})


def check_ramp(r: Rotation, where: str) -> None:
    """A ValueError where vkrope's yarn (transformers', its ramp ends in float64) would blend YaRN's ramp
    otherwise than ggml: ggml_rope_yarn_corr_dims computes the ends in float32 (`logf`), so an end within
    float32 rounding of an integer may floor / ceil to the other side; and where the ramp is empty (its low
    end above its high end, after both clamp them to [0, dims - 1]: an original length of a few tokens or a
    base near 1), ggml's rope_yarn_ramp divides by max(0.001, high - low) and blends as a step, transformers
    the opposite way."""
    try:
        yarn = YaRN(r.n_ctx_orig, r.beta_fast, r.beta_slow, truncate=False)
        ends = yarn.ramp_ends(r.dims, r.base)
        low, high = replace(yarn, truncate=True).ramp_ends(r.dims, r.base)
    except (ValueError, ZeroDivisionError):
        return  # (no original length, a base <= 1, bad betas: ModelRope's checks refuse them, by name)
    for name, beta, end in zip(("beta_fast", "beta_slow"), (r.beta_fast, r.beta_slow), ends):
        # (float32's error here is a few ulps of the end: 64 of them is the margin; a clamped end is exact)
        if 0 < end < r.dims - 1 and abs(end - round(end)) <= 64 * 2.0 ** -23 * abs(end):
            raise ValueError(f"{where}: YaRN's ramp end for {name} {beta:g} is {end!r}, within float32 rounding of "
                             "an integer: llama.cpp computes it in float32 and may round it to the other side than "
                             "vkrope's yarn, which computes it as transformers does; vkrope refuses this file")
    if high < low:
        cause = (f"rope.scaling.yarn_beta_fast {r.beta_fast:g} below yarn_beta_slow {r.beta_slow:g}"
                 if r.beta_fast < r.beta_slow else
                 f"original_context_length {r.n_ctx_orig} and base {r.base:g}")
        raise ValueError(f"{where}: YaRN's ramp is empty here (its low end {low} above its high end {high}, from "
                         f"{cause}): llama.cpp blends it as a step, vkrope's yarn (transformers') the opposite "
                         "way; vkrope refuses this file")

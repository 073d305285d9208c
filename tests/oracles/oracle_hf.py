"""An oracle for the Hugging Face rope types (frequencies in float32 steps
as torch takes them, the rotation in float64), written from the
formulas of transformers 5's `modeling_rope_utils` and the models' rotary
modules (docs: ../shared/design/models.md), sharing no code with vkrope
(config reading included).

`rope_of(cfg, layer_type)` reads a config.json dict the way transformers
does; `inv_freq(rope, seq_len)` gives the float32 inverse frequencies,
each step in float32 as torch takes it; `attention_factor(rope)`;
`pair_axes(rope)` (M-RoPE); `cos_sin(rope, pos)`; `rotate(x, cos, sin,
rot, interleaved)` the rotation in float64.
"""

from __future__ import annotations

import math

import numpy as np

F = np.float32


def _pow32(base, exps) -> np.ndarray:
    """float32(base) ** float32 exps, the float64 power rounded to float32."""
    e = np.asarray(exps, np.float32).astype(np.float64)
    return np.array([float(np.float64(F(base)) ** v) for v in e], np.float64).astype(np.float32)


def rope_of(cfg: dict, layer_type=None) -> dict:
    """The rope parameters of a config: a flat dict with type, theta,
    head_dim, dim (rotary), orig, mpe and the type's keys."""
    if isinstance(cfg.get("text_config"), dict):
        cfg = cfg["text_config"]
    elif cfg.get("model_type") == "unlimited_ocr" and isinstance(cfg.get("language_config"), dict):
        cfg = cfg["language_config"]  # (UnlimitedOcrConfig: its original checkpoints' text config)
    if layer_type is not None:
        if "rope_local_base_freq" in cfg:
            if layer_type == "sliding_attention":
                r = {"rope_type": "default", "rope_theta": cfg["rope_local_base_freq"]}
            else:
                r = dict(cfg.get("rope_scaling") or {"rope_type": "default"})
                r.setdefault("rope_theta", cfg.get("rope_theta", 1e6))
        else:
            r = dict(cfg["rope_parameters"][layer_type])
    else:
        r = dict(cfg.get("rope_parameters") or cfg.get("rope_scaling") or {})
    if str(cfg.get("model_type", "")).startswith("hy_v4_vl"):  # (its config class sets these sections into any
        r.setdefault("mrope_section", [12, 10, 10])  # rope dict lacking them: convert_rope_params_to_dict)
    kind = r.get("rope_type", r.get("type", "default"))
    kind = {"mrope": "default", "su": "longrope"}.get(kind, kind)
    if kind == "deepseek_yarn" and cfg.get("model_type") == "sarvam_mla" and cfg.get("rope_scaling"):
        r, kind = dict(cfg["rope_scaling"]), "yarn"  # (SarvamMLAConfig's __post_init__: its original rope_scaling
        # format is yarn, over any rope_parameters)
    if kind == "dynamic" and r.get("alpha") and str(cfg.get("model_type", "")).startswith("hunyuan"):
        kind = "ntk_alpha"  # (HunYuan's rotary module: a fixed base, theta * alpha ** (d / (d - 2)))
    theta = r.get("rope_theta", cfg.get("rope_theta", 10000.0))
    head = cfg.get("qk_rope_head_dim") or cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    partial = r.get("partial_rotary_factor", cfg.get("partial_rotary_factor", 1.0))
    if layer_type is not None and cfg.get("model_type") == "mimo_v2_flash" and "partial_rotary_factor" not in r \
            and kind == "default":  # (its rotary module's own default frequencies:
        partial = 0.334  # rope_parameters[layer_type].get("partial_rotary_factor", 0.334); other types: 1.0)
    mpe = orig = cfg.get("max_position_embeddings")
    if cfg.get("model_type") == "bailing_hybrid" and "model_max_length" in cfg:
        # (its class keeps max_position_embeddings as model_max_length, which a file's key sets after the
        # RoPE standardization filled the original length from max_position_embeddings: the file's, else 262144)
        mpe, orig = cfg["model_max_length"], cfg.get("max_position_embeddings", 262144)
    out = dict(r, type=kind, theta=float(theta), head_dim=head, partial=partial, model=cfg.get("model_type"),
               dim=head if kind == "proportional" else int(head * partial),
               mpe=mpe, orig=cfg.get("original_max_position_embeddings", r.get("original_max_position_embeddings", orig)))
    if "mrope_section" in r:
        # as the models' rotary modules: Qwen2-VL and Qwen2.5-VL chunk, the Qwen3 family and HY-V4-VL interleave, ERNIE 4.5
        # VL alternates height and width (its recomposition_frequencies)
        model = str(cfg.get("model_type", ""))
        out["mrope_layout"] = ("alternating" if model.startswith("ernie4_5_vl") else
                               "interleaved" if model.startswith(("qwen3", "hy_v4_vl")) else
                               "chunked" if model.startswith("qwen2") else
                               "interleaved" if r.get("mrope_interleaved") else "chunked")
    return out


def inv_freq(rope: dict, seq_len=None) -> np.ndarray:
    """float32 inverse frequencies [dim / 2] of the rope type."""
    d, theta, kind = rope["dim"], rope["theta"], rope["type"]
    exps = np.arange(0, d, 2).astype(np.float32) / F(d)
    if kind == "proportional":
        n = int(rope["partial"] * rope["head_dim"] // 2)
        inv = np.zeros(rope["head_dim"] // 2, np.float32)
        inv[:n] = F(1) / _pow32(theta, np.arange(0, 2 * n, 2).astype(np.float32) / F(rope["head_dim"]))
        return inv / F(rope.get("factor", 1.0))
    if kind == "ntk_alpha":
        return F(1) / _pow32(theta * rope["alpha"] ** (d / (d - 2)), exps)
    if kind == "dynamic":
        mpe, f = rope["mpe"], rope["factor"]
        if seq_len is not None and seq_len > mpe:
            t = F(f) * F(seq_len) / F(mpe) - F(f - 1)
            theta = float(F(F(theta) * F(math.pow(float(t), d / (d - 2)))))
        return F(1) / _pow32(theta, exps)
    pw = _pow32(theta, exps)
    if kind in ("default", "linear"):
        inv = F(1) / pw
        return inv / F(rope["factor"]) if kind == "linear" else inv
    if kind == "longrope":
        # (PhiMoE's rotary module recomputes its frequencies without the length: the short factors always)
        long = seq_len and seq_len > rope["orig"] and rope["model"] != "phimoe"
        ext = rope["long_factor"] if long else rope["short_factor"]
        return F(1) / (np.asarray(ext, np.float32) * pw)
    if kind == "llama3":
        inv = F(1) / pw
        f, lo, hi, old = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"], rope["orig"]
        wl = (F(1) / inv) * F(2 * math.pi)  # (torch's number / tensor: the reciprocal times the number)
        out = np.empty_like(inv)
        for i in range(inv.size):  # (long wavelengths divided by the factor, then those between the two
            # bounds smoothed: none where high_freq_factor < low_freq_factor puts the bounds the other way)
            out[i] = inv[i] / F(f) if wl[i] > F(old / lo) else inv[i]
            if F(old / hi) <= wl[i] <= F(old / lo):
                s = ((F(1) / wl[i]) * F(old) - F(lo)) / F(hi - lo)
                out[i] = (F(1) - s) * out[i] / F(f) + s * out[i]
        return out
    if kind == "yarn":
        f = rope.get("factor") or rope["mpe"] / rope["orig"]
        bf, bs = rope.get("beta_fast") or 32, rope.get("beta_slow") or 1

        def cd(n):
            return d * math.log(rope["orig"] / (n * 2 * math.pi)) / (2 * math.log(theta))

        lo, hi = cd(bf), cd(bs)
        if rope.get("truncate", True):
            lo, hi = math.floor(lo), math.ceil(hi)
        lo, hi = max(lo, 0), min(hi, d - 1)
        if lo == hi:
            hi += 0.001
        out = np.empty(d // 2, np.float32)
        for i in range(d // 2):
            ramp = min(max((F(i) - F(lo)) / F(hi - lo), F(0)), F(1))
            w = F(1) - ramp
            out[i] = (F(1) / (F(f) * pw[i])) * (F(1) - w) + (F(1) / pw[i]) * w
        return out
    raise ValueError(kind)


def attention_factor(rope: dict, seq_len=None) -> float:
    """transformers' factor of cos / sin for a call whose max(position_ids) + 1 is `seq_len`."""
    kind = rope["type"]
    if kind == "yarn":
        if rope.get("attention_factor") is not None:
            return rope["attention_factor"]
        f = rope.get("factor") or rope["mpe"] / rope["orig"]

        def g(s, m=1.0):
            return 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0

        if rope.get("mscale") and rope.get("mscale_all_dim"):
            return g(f, rope["mscale"]) / g(f, rope["mscale_all_dim"])
        return g(f)
    if kind == "longrope":
        if rope["model"] == "phimoe":  # (its forward's mscale: long past the original length)
            return rope["long_mscale"] if seq_len and seq_len > rope["orig"] else rope["short_mscale"]
        if rope.get("attention_factor") is not None:
            return rope["attention_factor"]
        f = rope.get("factor") or rope["mpe"] / rope["orig"]
        return 1.0 if f <= 1 else math.sqrt(1 + math.log(f) / math.log(rope["orig"]))
    return 1.0


def pair_axes(rope: dict):
    """M-RoPE: the position axis of each pair, or None."""
    sec = rope.get("mrope_section")
    if sec is None:
        return None
    half = rope["dim"] // 2
    if rope.get("mrope_layout") == "interleaved":
        ax = np.zeros(half, int)
        ax[1:3 * sec[1]:3] = 1
        ax[2:3 * sec[2]:3] = 2
        return ax
    if rope.get("mrope_layout") == "alternating":  # sections [h, w, t]: h, w, h, w, ... then t
        ax = np.zeros(half, int)
        ax[0:sec[0] + sec[1]:2] = 1
        ax[1:sec[0] + sec[1]:2] = 2
        return ax
    return np.concatenate([np.full(n, a) for a, n in enumerate(sec)])


def angles(rope: dict, pos: np.ndarray) -> np.ndarray:
    """float32 angles [B, S, dim/2] for pos [B, S] (M-RoPE: [3, B, S])."""
    pos = np.asarray(pos)
    inv = inv_freq(rope, int(pos.max()) + 1)
    ax = pair_axes(rope)
    if ax is None:
        p = pos.astype(np.float32)[..., None]
        return (p * inv).astype(np.float32)
    p3 = np.broadcast_to(pos, (3,) + pos.shape[-2:]) if pos.ndim == 2 else pos
    cols = np.stack([p3[a] for a in ax], -1).astype(np.float32)  # [B, S, half]
    return (cols * inv).astype(np.float32)


def cos_sin(rope: dict, pos) -> tuple[np.ndarray, np.ndarray]:
    """float64 cos / sin [B, S, dim] (halves duplicated) times the attention factor."""
    a = angles(rope, pos).astype(np.float64)
    m = float(F(attention_factor(rope, int(np.max(pos)) + 1)))
    c, s = m * np.cos(a), m * np.sin(a)
    return np.concatenate([c, c], -1), np.concatenate([s, s], -1)


def rotate(x, cos, sin, rot: int, interleaved: bool = False) -> np.ndarray:
    """float64: x [B, H, S, D] rotated on its first rot channels by cos /
    sin [B, S, rot] (halves duplicated); interleaved pairs (2i, 2i+1) take
    column i."""
    x = np.asarray(x, np.float64)
    c, s = cos[:, None, :, : rot // 2], sin[:, None, :, : rot // 2]
    out = x.copy()
    if interleaved:
        a, b = x[..., 0:rot:2], x[..., 1:rot:2]
        out[..., 0:rot:2], out[..., 1:rot:2] = a * c - b * s, b * c + a * s
    else:
        h = rot // 2
        a, b = x[..., :h], x[..., h:rot]
        out[..., :h], out[..., h:rot] = a * c - b * s, b * c + a * s
    return out

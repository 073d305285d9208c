"""An oracle for model families that transformers runs only with their
remote code, written from each family's published modeling code (the
rotary module and the apply function named below), in float64 with exact
angles; it shares no code with vkrope (config reading included).

`family_rope(cfg)` reads a config.json dict as the family's code does:
(rotary channels, base, interleaved pairs); `rotate(x, pos, rope)` the
rotation of x [B, H, S, D] at positions [B, S].
"""

from __future__ import annotations

import numpy as np

import oracle_hf


def _chatglm(cfg: dict) -> tuple[int, float, bool]:
    # modeling_chatglm.py (ChatGLM 2 / 3, GLM-4 remote code): rotary_dim = kv_channels (or hidden / heads);
    # RotaryEmbedding(rotary_dim // 2) with base 10000 * rope_ratio; apply_rotary_pos_emb rotates the first
    # rotary_dim // 2 channels as adjacent pairs (x.reshape(..., rot // 2, 2)).
    rotary = cfg.get("kv_channels") or cfg["hidden_size"] // cfg["num_attention_heads"]
    return rotary // 2, 10000.0 * cfg.get("rope_ratio", 1), True


def _qwen(cfg: dict) -> tuple[int, float, bool]:
    # modeling_qwen.py (Qwen 1): rotary_ndims = int(kv_channels * rotary_pct), RotaryEmbedding(base=
    # rotary_emb_base), apply_rotary_pos_emb with _rotate_half (the two halves of the rotary channels).
    return int(cfg["kv_channels"] * cfg.get("rotary_pct", 1.0)), float(cfg.get("rotary_emb_base", 10000)), False


def _minicpm(cfg: dict) -> tuple[int, float, bool]:
    # modeling_minicpm.py (MiniCPM 1 / 2): Llama's rotary module over head_dim = hidden / heads, base
    # rope_theta, rotate_half.
    return cfg["hidden_size"] // cfg["num_attention_heads"], float(cfg.get("rope_theta", 10000.0)), False


FAMILIES = {"ChatGLMModel": _chatglm, "QWenLMHeadModel": _qwen, "MiniCPMForCausalLM": _minicpm}


def family_rope(cfg: dict) -> tuple[int, float, bool]:
    """(rotary channels, base, interleaved) of a config, by its architecture."""
    return FAMILIES[cfg["architectures"][0]](cfg)


def rotate(x: np.ndarray, pos: np.ndarray, rope: tuple[int, float, bool]) -> np.ndarray:
    """float64: x [B, H, S, D] rotated at positions [B, S] on its first `rot` channels."""
    rot, base, interleaved = rope
    inv = base ** -(np.arange(0, rot, 2, dtype=np.float64) / rot)
    ang = np.asarray(pos, np.float64)[..., None] * inv
    cos, sin = (np.concatenate([f(ang), f(ang)], -1) for f in (np.cos, np.sin))
    return oracle_hf.rotate(x, cos, sin, rot, interleaved=interleaved)

#!/usr/bin/env python3
"""Regenerate tests/data/nd_golden.npz: what diffusers' own rotary modules
and `apply_rotary_emb` compute for N-D axial RoPE (Flux, Flux Kontext,
Wan 2.1, HunyuanVideo, CogVideoX, Qwen-Image's centred positions, Cosmos's
and CogView4's rotate-half pairs, Cosmos's theta per axis, HiDream), for
tests/ops/test_nd.py to compare vkrope with. Needs torch and diffusers (only
here: vkrope and its tests never import them):

    python -m venv /tmp/gold && /tmp/gold/bin/pip install torch diffusers ml_dtypes
    /tmp/gold/bin/python scripts/diffusers_golden.py

Each case stores: ids [N, n_axes] (float64, what the module was given or
built), axes widths, theta (one per axis), the angle mode the module uses
("exact" for diffusers' float64 frequencies, "float32" for its float32
ones), whether its pairs are interleaved (else rotate-half over the head),
the (cos, sin) [N, D] the module returned (float32), an x [B, H, N, D] (or
[B, N, H, D]: Wan's, HiDream's attention) and diffusers' rotated x (float32).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "nd_golden.npz"
RNG = np.random.default_rng(2222)


def flux_ids(text: int, h: int, w: int, first: float = 0.0) -> np.ndarray:
    """Flux's text ids (zeros) then image ids (first, row, col), as its pipeline builds them."""
    img = np.zeros((h, w, 3))
    img[..., 0] = first
    img[..., 1] = np.arange(h)[:, None]
    img[..., 2] = np.arange(w)[None, :]
    return np.concatenate([np.zeros((text, 3)), img.reshape(-1, 3)])


def rotate_bhsd(x: np.ndarray, cos: Any, sin: Any, interleaved: bool = True) -> np.ndarray:
    """diffusers' apply_rotary_emb (use_real: interleaved pairs, or rotate-half with use_real_unbind_dim=-2,
    as Cosmos and CogView4 call it) on x [B, H, S, D]."""
    import torch
    from diffusers.models.embeddings import apply_rotary_emb

    return apply_rotary_emb(torch.from_numpy(x), (cos, sin), use_real=True,
                            use_real_unbind_dim=-1 if interleaved else -2).numpy()


def rotate_wan(x: np.ndarray, cos: Any, sin: Any) -> np.ndarray:
    """Wan's attention processor's apply_rotary_emb on x [B, S, H, D] (cos / sin [1, S, 1, D]): a copy
    of the function diffusers 0.42.1 defines inside WanAttnProcessor.__call__ (not importable)."""
    import torch

    h = torch.from_numpy(x)
    x1, x2 = h.unflatten(-1, (-1, 2)).unbind(-1)
    c, s = cos[..., 0::2], sin[..., 1::2]
    out = torch.empty_like(h)
    out[..., 0::2] = x1 * c - x2 * s
    out[..., 1::2] = x1 * s + x2 * c
    return out.type_as(h).numpy()


def case(name: str, ids: np.ndarray, axes: list[int], theta: float | list[float], angle: str, cos: Any,
         sin: Any, layout: str, heads: int = 2, interleaved: bool = True,
         rotate: Callable[[np.ndarray], np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """One case's arrays: x rotated by `rotate` (default: diffusers' apply_rotary_emb for "bhsd", Wan's
    attention's for "bshd"; rotate-half pairs: apply_rotary_emb's use_real_unbind_dim=-2)."""
    n, d = ids.shape[0], sum(axes)
    cos2, sin2 = cos.reshape(n, d), sin.reshape(n, d)
    x = RNG.standard_normal((1, heads, n, d) if layout == "bhsd" else (1, n, heads, d)).astype(np.float32)
    if rotate is not None:
        y = rotate(x)
    elif layout == "bhsd":
        y = rotate_bhsd(x, cos2, sin2, interleaved)
    else:
        y = rotate_wan(x, cos.reshape(1, n, 1, d), sin.reshape(1, n, 1, d))
    print(f"{name}: N {n}, axes {axes}, theta {theta}, {angle}, interleaved {interleaved}, x {list(x.shape)}")
    return {f"{name}/ids": ids.astype(np.float64), f"{name}/axes": np.array(axes),
            f"{name}/theta": np.array(theta, np.float64).reshape(-1), f"{name}/angle": np.array(angle),
            f"{name}/layout": np.array(layout), f"{name}/interleaved": np.bool_(interleaved),
            f"{name}/cos": cos2.numpy(), f"{name}/sin": sin2.numpy(), f"{name}/x": x, f"{name}/y": y}


def rotate_half_cases() -> dict[str, np.ndarray]:
    """Cosmos (rotate-half over the head, a theta per axis: 10000 times its NTK factors, float32 frequencies;
    its time ids scaled by fps as it scales them, t / fps * 24 in float32) and CogView4 (rotate-half; its image
    tokens, whose ids are row * 256 // h and column * 256 // w)."""
    import torch
    from diffusers.models.transformers.transformer_cogview4 import CogView4RotaryPosEmbed
    from diffusers.models.transformers.transformer_cosmos import CosmosRotaryPosEmbed

    out: dict[str, np.ndarray] = {}
    for name, scale, fps in (("cosmos", (2.0, 1.0, 1.0), 30), ("cosmos_image", (1.0, 4.0, 4.0), None)):
        m = CosmosRotaryPosEmbed(hidden_size=128, max_size=(128, 240, 240), patch_size=(1, 2, 2), rope_scale=scale)
        cos, sin = m(torch.zeros(1, 16, 3, 10, 14), fps=fps)
        t = np.arange(3, dtype=np.float32)
        if fps is not None:
            t = (t / np.float32(fps)).astype(np.float32) * np.float32(24)
        tt, hh, ww = np.meshgrid(t, np.arange(5), np.arange(7), indexing="ij")
        ids = np.stack([tt, hh, ww], -1).reshape(-1, 3).astype(np.float64)
        thetas = [10000.0 * m.t_ntk_factor, 10000.0 * m.h_ntk_factor, 10000.0 * m.w_ntk_factor]
        out.update(case(name, ids, [m.dim_t, m.dim_h, m.dim_w], thetas, "float32", cos, sin, "bhsd",
                        interleaved=False))
    h, w = 5, 7
    cos, sin = CogView4RotaryPosEmbed(dim=128, patch_size=2, rope_axes_dim=(256, 256), theta=10000.0)(
        torch.zeros(1, 16, 2 * h, 2 * w))
    r, c = np.meshgrid(np.arange(h) * 256 // h, np.arange(w) * 256 // w, indexing="ij")
    ids = np.stack([r, c], -1).reshape(-1, 2).astype(np.float64)
    out.update(case("cogview4", ids, [64, 64], 10000.0, "float32", cos, sin, "bhsd", interleaved=False))
    return out


def hidream_case() -> dict[str, np.ndarray]:
    """HiDream-I1: axes (64, 32, 32), theta 1e4, float64 frequencies; image ids (0, row, col) then text ids 0;
    its own apply_rope on x [B, S, H, D] (q of its pair)."""
    import torch
    from diffusers.models.transformers.transformer_hidream_image import HiDreamImageEmbedND, apply_rope

    r, c = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    ids = np.concatenate([np.stack([np.zeros_like(r), r, c], -1).reshape(-1, 3), np.zeros((6, 3))]).astype(np.float64)
    pe = HiDreamImageEmbedND(theta=10000, axes_dim=[64, 32, 32])(torch.from_numpy(ids).float()[None])
    cos = pe[0, :, 0, :, 0, 0].repeat_interleave(2, -1)  # (its [[cos, -sin], [sin, cos]] per pair)
    sin = pe[0, :, 0, :, 1, 0].repeat_interleave(2, -1)

    def rotate(x: np.ndarray) -> np.ndarray:
        q = torch.from_numpy(x)
        return apply_rope(q, q, pe)[0].numpy()

    return case("hidream", ids, [64, 32, 32], 10000.0, "exact", cos, sin, "bshd", rotate=rotate)


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    import diffusers
    import torch
    from diffusers.models.embeddings import get_3d_rotary_pos_embed
    from diffusers.models.transformers.transformer_flux import FluxPosEmbed
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed
    from diffusers.models.transformers.transformer_qwenimage import QwenEmbedRope, apply_rotary_emb_qwen
    from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

    data: dict[str, np.ndarray] = {}
    # Flux.1: text ids 0, image ids (0, row, col); axes 16 / 56 / 56, theta 1e4, float64 frequencies.
    ids = flux_ids(8, 6, 7)
    cos, sin = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(torch.from_numpy(ids))
    data.update(case("flux", ids, [16, 56, 56], 10000.0, "exact", cos, sin, "bhsd"))
    # Flux Kontext: a second (reference) image offset by 1 on the first axis; a big grid
    # (positions up to 127) to exercise large angles.
    ids = np.concatenate([flux_ids(4, 4, 4), flux_ids(0, 4, 4, first=1.0), flux_ids(0, 2, 128)])
    ids[-128:, 1] = 127  # the far corner of a 128 x 128 latent
    cos, sin = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(torch.from_numpy(ids))
    data.update(case("flux_kontext", ids, [16, 56, 56], 10000.0, "exact", cos, sin, "bhsd"))
    # Wan 2.1: head dim 128 -> axes 44 / 42 / 42, (t, h, w) of a 3 x 4 x 5 latent (patch 1, 2, 2).
    wan = WanRotaryPosEmbed(attention_head_dim=128, patch_size=(1, 2, 2), max_seq_len=1024)
    cos, sin = wan(torch.zeros(1, 16, 3, 8, 10))
    t, h, w = np.meshgrid(np.arange(3), np.arange(4), np.arange(5), indexing="ij")
    ids = np.stack([t, h, w], -1).reshape(-1, 3).astype(np.float64)
    data.update(case("wan", ids, [wan.t_dim, wan.h_dim, wan.w_dim], 10000.0, "exact", cos, sin, "bshd"))
    # HunyuanVideo: axes 16 / 56 / 56, theta 256, float32 frequencies; a 2 x 6 x 5 latent (patch 1, 2, 2).
    cos, sin = HunyuanVideoRotaryPosEmbed(patch_size=2, patch_size_t=1, rope_dim=[16, 56, 56], theta=256.0)(
        torch.zeros(1, 16, 2, 12, 10))
    t, h, w = np.meshgrid(np.arange(2), np.arange(6), np.arange(5), indexing="ij")
    ids = np.stack([t, h, w], -1).reshape(-1, 3).astype(np.float64)
    data.update(case("hunyuan_video", ids, [16, 56, 56], 256.0, "float32", cos, sin, "bhsd"))
    # CogVideoX: axes D/4, 3D/8, 3D/8 (D 64), float32 frequencies, its linspace grids over a crop
    # region other than the grid (fractional positions: steps 2/3 and 7/5).
    th, tw, tt = 6, 5, 3
    crops = ((0, 0), (4, 7))
    cos, sin = get_3d_rotary_pos_embed(64, crops, (th, tw), tt, theta=10000, use_real=True)
    gh = torch.linspace(crops[0][0], crops[1][0] * (th - 1) / th, th, dtype=torch.float32).numpy()  # as it builds them
    gw = torch.linspace(crops[0][1], crops[1][1] * (tw - 1) / tw, tw, dtype=torch.float32).numpy()
    gt = torch.linspace(0, tt * (tt - 1) / tt, tt, dtype=torch.float32).numpy()
    t, h, w = np.meshgrid(gt, gh, gw, indexing="ij")
    ids = np.stack([t, h, w], -1).reshape(-1, 3).astype(np.float64)
    data.update(case("cogvideox", ids, [16, 24, 24], 10000.0, "float32", cos, sin, "bhsd"))
    # Qwen-Image: QwenEmbedRope (scale_rope, as the model uses it) on an odd 5 x 7 grid: rows and
    # columns centred at -(n - n // 2), text tokens at (k, k, k) from max(h // 2, w // 2) on; float32
    # frequencies; its complex apply_rotary_emb_qwen on x [B, S, H, D].
    h, w, text = 5, 7, 6
    qwen = QwenEmbedRope(theta=10000, axes_dim=[16, 56, 56], scale_rope=True)
    vid, txt = qwen([(1, h, w)], device=None, max_txt_seq_len=text)
    freqs = torch.cat([vid, txt])
    rows = np.arange(h) - (h - h // 2)
    cols = np.arange(w) - (w - w // 2)
    r, c = np.meshgrid(rows, cols, indexing="ij")
    k = max(h // 2, w // 2) + np.arange(text)
    ids = np.concatenate([np.stack([np.zeros_like(r), r, c], -1).reshape(-1, 3), np.stack([k, k, k], -1)])
    x = RNG.standard_normal((1, len(ids), 2, 128)).astype(np.float32)
    y = apply_rotary_emb_qwen(torch.from_numpy(x), freqs, use_real=False).numpy()
    cos, sin = freqs.real.repeat_interleave(2, -1), freqs.imag.repeat_interleave(2, -1)
    print(f"qwen_image: N {len(ids)}, axes [16, 56, 56], theta 10000.0, float32, x {list(x.shape)}")
    data.update({"qwen_image/ids": ids.astype(np.float64), "qwen_image/axes": np.array([16, 56, 56]),
                 "qwen_image/theta": np.float64(10000.0), "qwen_image/angle": np.array("float32"),
                 "qwen_image/layout": np.array("bshd"), "qwen_image/cos": cos.float().numpy(),
                 "qwen_image/sin": sin.float().numpy(), "qwen_image/x": x, "qwen_image/y": y})
    data.update(rotate_half_cases())
    data.update(hidream_case())
    data["versions"] = np.array(f"torch {torch.__version__}, diffusers {diffusers.__version__}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **data)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes); {data['versions']}")


if __name__ == "__main__":
    sys.exit(main())

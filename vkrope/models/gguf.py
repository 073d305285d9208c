"""A model's RoPE from a GGUF file's metadata (`from_gguf`), as llama.cpp
reads it."""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any

import numpy as np

from .rope import ModelRope, _short

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

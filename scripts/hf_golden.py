"""Regenerate tests/data/hf_golden.npz: transformers' own rotary modules and
apply_rotary_pos_emb on the configs of tests/data/hf_configs/*.json.

    python scripts/hf_golden.py [--out tests/data/hf_golden.npz]

Needs torch and transformers (not vkrope's dependencies: run it from a venv
that has them, e.g. `pip install torch==2.13.0+cpu transformers==5.25.0
--extra-index-url https://download.pytorch.org/whl/cpu`); the tests read
the committed file. For each config and each case (a set of position ids)
it builds a fresh rotary module (transformers' dynamic / longrope update
is module state; a fresh module is the stateless per-call answer) and
stores, under "<config>/<case>/" ("<config>#<part>/<case>/" for each part of a
model whose layers rotate two ways, DeepSeek-V3.2's attention and indexer):
  pos          int64 position ids ([1, S], M-RoPE [3, 1, S])
  inv_freq     float32, the module's inverse frequencies after the call
  scaling      float64 [1], its attention_scaling (the factor its cos / sin carry where that differs:
               PhiMoE's mscale)
  cos, sin     float32 [1, S, rot], the module's output for float32 x
  q, k         float32 [1, 2, S, D] / [1, 1, S, D] inputs (seeded)
  q_out, k_out float32: the model's apply_rotary_pos_emb on them (partial
               rotary: on the first rot channels, the rest concatenated;
               where the model table found the pairs interleaved_to_halves,
               DeepSeek's: apply_rotary_pos_emb_interleave)
  q_bf16_out   the same with bfloat16 q, k and cos / sin (as uint16 bits)
  pow_base,    the base the module raised (dynamic: the grown one) and torch's
  torch_pow    float32 powers base ** (arange(0, rot, 2) / rot): with these
               in place of vkrope's correctly rounded power, its float32 steps
               must give inv_freq bit for bit (the step order, proven)
plus "<config>/layer_type" where the module takes one (Gemma 3, 3n) and
"proportional/inv_freq" from _compute_proportional_rope_parameters.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import inspect
import json
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)  # (vkrope's model table, from this checkout: which pairs each model rotates)
CONFIGS = os.path.join(ROOT, "tests", "data", "hf_configs")


def _cases(name: str, cfg: dict, built: Any = None) -> dict:
    """{case: position ids as nested lists} per config: small and large
    positions, both sides of longrope's switch and dynamic's length (`built`:
    the class's text config, whose rope dict holds the original length its
    standardization filled in where the file gives none: Bailing hybrid's
    class default 262144 beside a file's model_max_length)."""
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(sum(map(ord, name)))
    text = cfg.get("text_config", cfg)
    mpe = int(text.get("max_position_embeddings", 4096))
    filled = (getattr(built, "rope_parameters", None) or {}).get("original_max_position_embeddings") \
        if "model_max_length" in text else None  # (elsewhere the file's lengths, as the cases always read them)
    orig = int(text.get("original_max_position_embeddings",
                        (text.get("rope_scaling") or {}).get("original_max_position_embeddings", filled or mpe)))

    def spread(top: int, n: int = 12) -> list:
        p = np.concatenate([np.arange(4), rng.integers(4, top, n - 5), [top - 1]])
        return [sorted(int(v) for v in p)]

    if "mrope_section" in json.dumps(cfg) or _mrope_layouts().get(cfg.get("model_type")) not in (None, "unknown"):
        # (an M-RoPE model's file without sections: its class's or module's, HY-V4-VL's)
        # text, an image of t=1 x h=4 x w=6 patches, text: Qwen-VL's get_rope_index layout
        t_ids, h_ids, w_ids = [], [], []
        for i in range(3):
            t_ids.append(i), h_ids.append(i), w_ids.append(i)
        for hh in range(4):
            for ww in range(6):
                t_ids.append(3), h_ids.append(3 + hh), w_ids.append(3 + ww)
        nxt = 3 + 6
        for i in range(3):
            t_ids.append(nxt + i), h_ids.append(nxt + i), w_ids.append(nxt + i)
        far = [[[v + 200000 for v in a]] for a in (t_ids, h_ids, w_ids)]
        return {"grid": [[t_ids], [h_ids], [w_ids]], "far": far}
    cases = {"short": spread(min(orig, mpe) // 2), "max": spread(max(mpe, 2))}
    if "longrope" in json.dumps(cfg):
        cases["below_switch"] = spread(orig)  # max + 1 == orig: short factors
        cases["above_switch"] = [[0, 1, 2, orig]]  # max + 1 == orig + 1: long factors
    if '"dynamic"' in json.dumps(cfg):
        cases["at_length"] = spread(mpe)
        cases["beyond"] = spread(3 * mpe + 7)
    return cases


def _rotary_modules(transformers) -> dict:
    """{model_type: (modeling module, rotary class name)} of the configs."""
    mods = transformers.models
    return {
        "llama": (mods.llama.modeling_llama, "LlamaRotaryEmbedding"),
        "phi3": (mods.phi3.modeling_phi3, "Phi3RotaryEmbedding"),
        "phimoe": (mods.phimoe.modeling_phimoe, "PhimoeRotaryEmbedding"),
        "phi": (mods.phi.modeling_phi, "PhiRotaryEmbedding"),
        "qwen2": (mods.qwen2.modeling_qwen2, "Qwen2RotaryEmbedding"),
        "deepseek_v3": (mods.deepseek_v3.modeling_deepseek_v3, "DeepseekV3RotaryEmbedding"),
        "deepseek_v32": (mods.deepseek_v32.modeling_deepseek_v32, "DeepseekV32RotaryEmbedding"),
        "gemma3": (mods.gemma3.modeling_gemma3, "Gemma3RotaryEmbedding"),
        "gemma3n": (mods.gemma3n.modeling_gemma3n, "Gemma3nRotaryEmbedding"),
        "qwen2_vl": (mods.qwen2_vl.modeling_qwen2_vl, "Qwen2VLRotaryEmbedding"),
        "qwen3_vl": (mods.qwen3_vl.modeling_qwen3_vl, "Qwen3VLTextRotaryEmbedding"),
        "glm4": (mods.glm4.modeling_glm4, "Glm4RotaryEmbedding"),
        "glm_ocr": (mods.glm_ocr.modeling_glm_ocr, "GlmOcrTextRotaryEmbedding"),
        "glm4v": (mods.glm4v.modeling_glm4v, "Glm4vTextRotaryEmbedding"),
        "cohere": (mods.cohere.modeling_cohere, "CohereRotaryEmbedding"),
        "ernie4_5_vl_moe": (mods.ernie4_5_vl_moe.modeling_ernie4_5_vl_moe, "Ernie4_5_VLMoeTextRotaryEmbedding"),
        "hunyuan_v1_dense": (mods.hunyuan_v1_dense.modeling_hunyuan_v1_dense, "HunYuanDenseV1RotaryEmbedding"),
        "bailing_hybrid": (mods.bailing_hybrid.modeling_bailing_hybrid, "BailingHybridRotaryEmbedding"),
        "hy_v4_vl_text": (mods.hy_v4_vl.modeling_hy_v4_vl, "HYV4VLRotaryEmbedding"),
        "mimo_v2_flash": (mods.mimo_v2_flash.modeling_mimo_v2_flash, "MiMoV2FlashRotaryEmbedding"),
        "step3p5": (mods.step3p7.modeling_step3p7, "Step3p7RotaryEmbedding"),  # (step3p5 lives in step3p7)
    }


def _found_rotary(model_type: str) -> tuple:
    """(modeling module, rotary class name) of a model type `_rotary_modules` does not list: the text rotary class
    of the model transformers builds for it, as the model table's probe finds it (Exaone's and InternLM3's
    LlamaRotaryEmbedding: their configs run LlamaModel, hf_probe.mapped_model)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from hf_model_table import text_rotary  # noqa: PLC0415

    cls = text_rotary(model_type)[1]
    if cls is None:
        raise SystemExit(f"{model_type}: the probe finds no text rotary class")
    return sys.modules[cls.__module__], cls.__name__


def _head(cfg: dict, text) -> int:
    """The head width the model's attention uses."""
    if cfg["model_type"] in ("deepseek_v3", "deepseek_v32", "bailing_hybrid"):
        return text.qk_rope_head_dim
    if getattr(text, "head_dim", None):
        return text.head_dim
    return text.hidden_size // text.num_attention_heads


def _pow_base(text, layer_type: str | None, pos_t, rdim: int):
    """The base the module raised (dynamic: the grown one) and torch's
    float32 powers of it."""
    import torch  # noqa: PLC0415

    params = text.rope_parameters
    if layer_type is not None:
        params = params[layer_type]
    base = params["rope_theta"]
    if params.get("rope_type") == "dynamic" and params.get("alpha"):  # (HunYuan's fixed ntk_alpha base)
        base = base * params["alpha"] ** (rdim / (rdim - 2))
    elif params.get("rope_type") == "dynamic":
        seq = torch.maximum(torch.max(pos_t) + 1, torch.tensor(text.max_position_embeddings))
        if int(seq) > text.max_position_embeddings:
            f = params["factor"]
            base = base * ((f * seq / text.max_position_embeddings) - (f - 1)) ** (rdim / (rdim - 2))
    turning = rdim
    if params.get("rope_type") == "proportional":  # (only the pairs the factor turns are powers; the rest are 0)
        turning = 2 * int(params.get("partial_rotary_factor", 1.0) * rdim // 2)
    return base, base ** (torch.arange(0, turning, 2, dtype=torch.int64).float() / rdim)


@functools.cache
def _mrope_layouts() -> dict:
    """{model_type: its M-RoPE layout} from the committed model table (read once a run)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    from hf_model_table import TABLE  # noqa: PLC0415

    with open(TABLE, encoding="utf-8") as f:
        return {t: e.get("mrope") for t, e in json.load(f)["models"].items()}


def _apply_of(module, cfg: dict, part: str | None):
    """The modeling file's function that rotates q and k as the model's attention (or its `part`, by the pairs the
    model table found it rotating) does: MLA's apply_rotary_pos_emb_interleave, else apply_rotary_pos_emb."""
    from vkrope.models import model_table  # noqa: PLC0415

    e = model_table.table()["models"][cfg["model_type"]]
    pairs = e["parts"][part]["pairs"] if part else e["pairs"]
    return getattr(module, "apply_rotary_pos_emb_interleave") if pairs == "interleaved_to_halves" \
        else module.apply_rotary_pos_emb


def _one_case(cfg: dict, text, rotary: tuple, layer_type: str | None, key: str, case: str, pos,
              part: str | None = None) -> dict:
    """The arrays of one config, layer type (and part, of a model whose layers rotate two ways) and case, under
    "<key>/<case>/"."""
    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415

    module, cls_name = rotary
    pos_t = torch.tensor(pos, dtype=torch.int64)
    rot = getattr(module, cls_name)(config=text)
    extra = {} if layer_type is None else {"layer_type": layer_type}
    with torch.no_grad():
        cos, sin = rot(torch.zeros(1, dtype=torch.float32), pos_t, **extra)
        inv = getattr(rot, "inv_freq" if layer_type is None else f"{layer_type}_inv_freq")
        # PhiMoE's forward recomputes its frequencies without the length: not the buffer the longrope update wrote
        if cfg["model_type"] == "phimoe":
            inv = rot.rope_init_fn(rot.config)[0]
        # (a module that keeps its frequencies in another order than its pairs turn, ERNIE 4.5 VL's pre-rotated
        # ones: stored in pair order, by the layout the model table found)
        from hf_model_table import pair_order_inv  # noqa: PLC0415

        inv = torch.from_numpy(pair_order_inv(_mrope_layouts().get(cfg["model_type"]), inv.numpy(),
                                              getattr(rot, "mrope_section", None)))
        scaling = rot.attention_scaling if layer_type is None else getattr(rot, f"{layer_type}_attention_scaling")
        at_zero = (pos_t.reshape(-1, pos_t.shape[-1])[0] == 0).nonzero()
        if pos_t.dim() == 2 and len(at_zero) and float(cos[0, at_zero[0, 0], 0]) != float(torch.tensor(scaling)):
            # the module scales cos / sin by another factor than its attention_scaling (PhiMoE's forward
            # multiplies by short_mscale / long_mscale): the factor it applied, its cos at position 0
            scaling = float(cos[0, at_zero[0, 0], 0])
        s, head, rdim = pos_t.shape[-1], _head(cfg, text), cos.shape[-1]
        if cfg["model_type"] == "glm4":  # (its module returns cos / sin of the rotary part)
            assert rdim == head // 2, rdim
        g = torch.Generator().manual_seed(len(key) * 1000 + len(case))
        q = torch.randn(1, 2, s, head, generator=g)
        k = torch.randn(1, 1, s, head, generator=g)
        apply = _apply_of(module, cfg, part)
        if list(inspect.signature(apply).parameters)[:2] == ["x", "cos"]:  # (Gemma 3n's rotates one tensor)
            one = apply

            def apply(qq, kk, cc, ss):
                return one(qq, cc, ss), one(kk, cc, ss)

        def run(qq, kk, cc, ss):
            if rdim < head:  # (GLM's apply_rotary_pos_emb splits the rotary part itself, its cos / sin's width;
                try:  # the others fail on the whole head)
                    return apply(qq, kk, cc, ss)
                except RuntimeError:
                    pass
            qr, qp = qq[..., :rdim], qq[..., rdim:]
            kr, kp = kk[..., :rdim], kk[..., rdim:]
            qo, ko = apply(qr, kr, cc, ss)
            return torch.cat([qo, qp], -1), torch.cat([ko, kp], -1)

        qo, ko = run(q, k, cos, sin)
        cb, sb = getattr(module, cls_name)(config=text)(torch.zeros(1, dtype=torch.bfloat16), pos_t, **extra)
        qb, kb = q.bfloat16(), k.bfloat16()
        qbo, _ = run(qb, kb, cb, sb)
        base, torch_pow = _pow_base(text, layer_type, pos_t, rdim)
    p = f"{key}/{case}/"
    print(f"{p}: S {s}, rot {rdim}, scaling {float(scaling):.6g}", file=sys.stderr)
    return {p + "pow_base": np.array([float(base)], np.float32),
            p + "torch_pow": torch_pow.numpy().astype(np.float32),
            p + "pos": np.asarray(pos, np.int64),
            p + "inv_freq": inv.numpy().astype(np.float32),
            p + "scaling": np.array([float(scaling)]),
            p + "cos": cos.numpy(), p + "sin": sin.numpy(),
            p + "q": q.numpy(), p + "k": k.numpy(),
            p + "q_out": qo.numpy(), p + "k_out": ko.numpy(),
            p + "q_bf16": qb.view(torch.int16).numpy().view(np.uint16),
            p + "q_bf16_out": qbo.view(torch.int16).numpy().view(np.uint16)}


def _proportional(transformers) -> dict:
    """Gemma 4's proportional type, straight from transformers' function."""
    import numpy as np  # noqa: PLC0415
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: PLC0415

    cfg = {"hidden_size": 1024, "num_attention_heads": 4, "head_dim": 256,
           "rope_parameters": {"rope_type": "proportional", "rope_theta": 1000000.0, "partial_rotary_factor": 0.25}}
    inv, _ = ROPE_INIT_FUNCTIONS["proportional"](transformers.LlamaConfig(**cfg))
    return {"proportional/inv_freq": inv.numpy().astype(np.float32),
            "proportional/config": np.array(json.dumps(cfg))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "hf_golden.npz"))
    args = ap.parse_args(argv)

    import numpy as np  # noqa: PLC0415
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415

    rotary = _rotary_modules(transformers)
    out: dict[str, np.ndarray] = {}
    for fname in sorted(os.listdir(CONFIGS)):
        name = fname[:-5]
        with open(os.path.join(CONFIGS, fname)) as f:
            cfg = json.load(f)
        conf = AutoConfig.for_model(**{k: v for k, v in cfg.items() if not k.startswith("_")})
        text = conf.get_text_config() if hasattr(conf, "get_text_config") else conf
        nested = (cfg.get("text_config", cfg).get("rope_parameters") or {})
        nested = sorted(nested) if nested and all(isinstance(v, dict) for v in nested.values()) else []
        layer_types = ["sliding_attention", "full_attention"] if cfg["model_type"] in ("gemma3", "gemma3n") else \
            nested or [None]  # (RoPE per layer type: MiMo-V2-Flash's rope_parameters by type)
        from vkrope.models import model_table  # noqa: PLC0415

        parts = sorted(model_table.table()["models"][cfg["model_type"]].get("parts") or [None], key=str)
        for layer_type, part in itertools.product(layer_types, parts):
            key = (name if layer_type is None else f"{name}@{layer_type}") + (f"#{part}" if part else "")
            if layer_type is not None:
                out[f"{key}/layer_type"] = np.array(layer_type)
            for case, pos in _cases(name, cfg, text).items():
                out.update(_one_case(cfg, text, rotary.get(cfg["model_type"]) or _found_rotary(cfg["model_type"]),
                                     layer_type, key, case, pos, part))
    out.update(_proportional(transformers))
    out["versions"] = np.array(f"torch {torch.__version__}, transformers {transformers.__version__}")
    np.savez_compressed(args.out, **out)
    print(f"wrote {args.out}: {len(out)} arrays ({os.path.getsize(args.out) / 1024:.0f} KiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Regenerate tests/data/hf_per_layer_golden.json: what transformers' own
models make of a config.json's `per_layer_config`: where their modeling code
reads none (Llama's, Qwen's, Mistral's: every layer built from one config),
where it reads some of it (Gemma 4's head widths per layer type, NeoMME's
attention per layer), and at the top of a composite config.

    python scripts/hf_per_layer_golden.py [--out tests/data/hf_per_layer_golden.json]

Needs torch and transformers (run it from a venv that has them; the tests read
the committed file). For each model type and each per_layer_config below it
builds a tiny model with AutoModel.from_config and stores either its rotary
module's inverse frequencies and attention scaling (per layer type: each
`<type>_inv_freq` buffer, "inv_freqs"), or the exception its
config or model raised (transformers 5's HeterogeneousConfigMixin raises
where the model reads a key the file overrides per layer:
AmbiguousGlobalPerLayerAttributeError).
"""

from __future__ import annotations

import argparse
import json
import os
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "tests", "data", "hf_per_layer_golden.json")
TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "granite", "exaone")
BASE = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
        "intermediate_size": 64, "vocab_size": 128, "max_position_embeddings": 256, "pad_token_id": 0,
        "bos_token_id": 1, "eos_token_id": 2}
ROPE = {"rope_type": "default", "rope_theta": 500.0}
PER_LAYER: dict[str, Any] = {  # (a name: the file's per_layer_config)
    "null": None,
    "empty": {},
    "empty-layer": {"0": {}},
    "head-dim-other": {"0": {"head_dim": 8}},
    "head-dim-same": {"0": {"head_dim": 16}, "1": {"head_dim": 16}},
    "mlp-width": {"1": {"intermediate_size": 32}},
    "skip": {"0": {"skip": ["mlp"]}},
    "rope-every-layer": {"0": {"rope_parameters": ROPE}, "1": {"rope_parameters": ROPE}},
    "rope-one-layer": {"1": {"rope_parameters": ROPE}},
    "theta-every-layer": {"0": {"rope_theta": 500.0}, "1": {"rope_theta": 500.0}},
    "partial-factor": {"0": {"partial_rotary_factor": 0.5}},
    "heads": {"0": {"num_attention_heads": 2}},
    "unknown-every-layer": {"0": {"not_a_key": 1}, "1": {"not_a_key": 1}},
    "unknown-one-layer": {"1": {"not_a_key": 1}},
}


# (model type, a name, the config's other keys): models that read per_layer_config, and composite configs
LAYERED = {"head_dim": 16, "layer_types": ["sliding_attention", "full_attention"]}
MORE: list[tuple[str, str, dict]] = [
    ("gemma4_text", "full-head-dim", {**LAYERED, "global_head_dim": 32, "per_layer_config": {"1": {"head_dim": 32}}}),
    ("gemma4_text", "full-length", {**LAYERED, "global_head_dim": 32,
                                    "per_layer_config": {"1": {"max_position_embeddings": 64}}}),
    ("gemma4_text", "full-rope", {**LAYERED, "global_head_dim": 32, "per_layer_config": {"1": {"rope_parameters": {
        "sliding_attention": ROPE, "full_attention": ROPE}}}}),
    ("gemma4_text", "full-head-dim-float", {**LAYERED, "global_head_dim": 32,
                                            "per_layer_config": {"1": {"head_dim": 32.0}}}),
    ("gemma4_text", "global-head-dim-float", {**LAYERED, "global_head_dim": 32.0}),
    ("gemma4_text", "global-head-dim-one-layer", {**LAYERED, "per_layer_config": {"1": {"global_head_dim": 64}}}),
    ("gemma4_text", "layer-types-every-layer", {**LAYERED, "global_head_dim": 32, "per_layer_config": {
        "0": {"layer_types": ["full_attention"] * 2}, "1": {"layer_types": ["full_attention"] * 2}}}),
    ("neomme", "head-dim", {**LAYERED, "per_layer_config": {"0": {"head_dim": 8}}}),
    ("neomme", "mlp-width", {**LAYERED, "per_layer_config": {"0": {"intermediate_size": 32}}}),
    ("gemma3_text", "partial-every-layer", {**LAYERED, "per_layer_config": {
        "0": {"partial_rotary_factor": 0.5}, "1": {"partial_rotary_factor": 0.5}}}),
]
COMPOSITE = ("gemma3", "llava", "qwen2_vl")  # (an empty per_layer_config at the top of each)


def more_outcome(model_type: str, cfg: dict) -> dict:
    """{"inv_freqs": {layer type: [...]}} of the model's rotary module, or {"raises": name, "message": ...}."""
    from transformers import AutoConfig, AutoModel  # noqa: PLC0415

    try:
        model = AutoModel.from_config(AutoConfig.for_model(model_type, **cfg))
        return {"inv_freqs": {n.split(".")[-1].removesuffix("_inv_freq"): b.float().tolist()
                              for n, b in model.named_buffers() if n.endswith("_inv_freq") and "original" not in n}}
    except Exception as exc:  # noqa: BLE001  (the outcome recorded)
        return {"raises": type(exc).__name__, "message": str(exc).splitlines()[0][:300]}


def composite_outcome(model_type: str) -> dict:
    """What the composite config class makes of a top-level per_layer_config {}: nothing, or the exception."""
    from transformers import AutoConfig  # noqa: PLC0415

    try:
        AutoConfig.for_model(model_type, per_layer_config={})
        return {}
    except Exception as exc:  # noqa: BLE001  (the outcome recorded)
        return {"raises": type(exc).__name__, "message": str(exc).splitlines()[0][:300]}


def outcome(model_type: str, per_layer: Any) -> dict:
    """{"inv_freq": [...], "scaling": s} of the model's rotary module, or {"raises": name, "message": ...}."""
    import torch  # noqa: PLC0415
    from transformers import AutoConfig, AutoModel  # noqa: PLC0415

    torch.manual_seed(0)
    try:
        cfg = AutoConfig.for_model(model_type, **BASE, per_layer_config=per_layer)
        model = AutoModel.from_config(cfg)
        rotary = model.rotary_emb
        return {"inv_freq": rotary.inv_freq.float().tolist(), "scaling": float(rotary.attention_scaling)}
    except Exception as exc:  # noqa: BLE001  (the outcome recorded: the config or model refused it)
        return {"raises": type(exc).__name__, "message": str(exc).splitlines()[0][:300]}


def main() -> None:
    """Write the golden file."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    import transformers  # noqa: PLC0415  (after --help, which needs none)

    warnings.filterwarnings("ignore")
    cases = [{"config": {"model_type": t, **BASE, "per_layer_config": p}, "name": name, "want": outcome(t, p)}
             for t in TYPES for name, p in PER_LAYER.items()]
    cases += [{"config": {"model_type": t, **BASE, **cfg}, "name": name, "want": more_outcome(t, {**BASE, **cfg})}
              for t, name, cfg in MORE]
    cases += [{"config": {"model_type": t, "per_layer_config": {}}, "name": "top-level", "want": composite_outcome(t)}
              for t in COMPOSITE]
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump({"transformers": transformers.__version__, "generated_by": "scripts/hf_per_layer_golden.py",
                   "cases": cases}, f, indent=1)
        f.write("\n")
    print(f"{len(cases)} cases -> {args.out}")


if __name__ == "__main__":
    main()

"""The files llama.cpp's own converter writes (tests/data/gguf_convert_golden.json.gz, from
scripts/gguf_convert_golden.py: convert_hf_to_gguf.py's metadata and rope tensors for 117 configs)
against from_gguf's refusals of a key llama.cpp's loader requires and of a factor tensor's shape: data
the converter produced, not the table those refusals read, so a required flag or a size the table got
wrong shows here. The few the loader refuses too are listed, each with why."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import gguf

import vkrope
from gguf_writer import add_values, finish

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "gguf_convert_golden.json.gz"

# The converter's files llama.cpp's loader refuses as well (its load_arch_hparams reads these keys without
# `false`; the converter writes them only where the config gives them, and transformers' default configs
# of these types do not).
LOADER_REFUSES = {
    "deepseek_v32:DeepseekV32ForCausalLM": "expert_gating_func",  # (the default config has no scoring_func)
    "exaone_moe:ExaoneMoeForCausalLM": "expert_gating_func",
    "qwen2_vl:Qwen2VLForConditionalGeneration": "rope.dimension_sections",  # (no mrope_section by default)
    "qwen3_asr:Qwen3ASRForConditionalGeneration": "rope.dimension_sections",
    "qwen3_omni_moe:Qwen3OmniMoeForConditionalGeneration": "rope.dimension_sections",
    "qwen3_vl:Qwen3VLForConditionalGeneration": "rope.dimension_sections",
    "qwen3_vl_moe:Qwen3VLMoeForConditionalGeneration": "rope.dimension_sections",
    # (the converter writes layer_norm_epsilon, qwen.cpp reads the RMS key without `false`)
    "qwen-7b": "attention.layer_norm_rms_epsilon",
}
# Where the golden cannot stand for the converter's file: it records nothing written through the converter's
# impl object (Ministral 3: an empty file), and a None where the converter got no value (Dots1's
# n_shared_experts; a real run fails writing it).
GOLDEN_GAPS = {"ministral3:Ministral3ForCausalLM": "block_count", "dots1:Dots1ForCausalLM": "expert_shared_count"}
# What vkrope refuses for another reason, each named: no RoPE in llama.cpp's graph, a rule vkrope cannot read
# from its code, a layer type to choose, a layer rotated two ways, sections covering no pair (PaddleOCR's
# default), an odd rotated width (GLM-4-MoE's default 4096 / 96 heads of 42, no key_length, half of them
# rotated: 21 channels, no whole pairs).
OTHER = ("applies no RoPE", "vkrope cannot read", "pass layer_type", "in 2 ways",
         "paddleocr.rope.dimension_sections [0, 0, 0, 0]", "rotary_dim must be even and <= head_dim (42); got 21")


TABLE = json.loads((Path(__file__).resolve().parents[2] / "vkrope" / "data" / "gguf_archs.json").read_text())


def _write(path: Path, arch: str, kv: dict, tensors: dict) -> str:
    """The converter's keys and tensors, none added. The golden keeps values, not GGUF types: a number is
    written in the type llama.cpp reads the key as (the converter's add_rope_freq_base writes a FLOAT32
    whatever Python number it gets), an int elsewhere as uint32, a float as float32."""
    reads = {**TABLE["hparams"]["key_types"], **(TABLE["archs"].get(arch, {}).get("key_types") or {})}
    typed = {}
    for key, v in kv.items():
        accept = reads.get(key, {}).get("accept")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and isinstance(accept, list) and accept:
            kind = {"FLOAT32": "float32", "UINT32": "uint32", "INT32": "int32", "FLOAT64": "float64"}.get(accept[0])
            v = (kind, float(v) if kind.startswith("float") else int(v)) if kind else v
        typed[key] = v
    w = gguf.GGUFWriter(str(path), arch=arch)
    add_values(w, typed)
    return finish(w, tensors, path, fill=False)


def test_the_converters_files_are_refused_only_where_the_loader_refuses_them(tmp_path):
    cases = [c for c in json.loads(gzip.open(GOLDEN).read())["configs"]
             if isinstance(c["result"], dict) and "kv" in c["result"]]
    refused, unexplained = {}, []
    for i, case in enumerate(cases):
        res = case["result"]
        try:
            vkrope.from_gguf(_write(tmp_path / f"{i}.gguf", res["arch"], res["kv"], res.get("tensors") or {}))
        except ValueError as exc:
            if "is missing: llama.cpp's loader requires" in str(exc):
                refused[case["name"]] = str(exc).split(f"{res['arch']}.", 1)[-1].split(" is missing")[0]
            elif not any(why in str(exc) for why in OTHER):
                unexplained.append(f"{case['name']}: {exc}")
    assert len(cases) > 80
    assert refused == {**LOADER_REFUSES, **GOLDEN_GAPS}
    assert not unexplained

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
    "dots1:Dots1ForCausalLM": "expert_shared_count",  # (no n_shared_experts in the default config: None)
    "qwen2_vl:Qwen2VLForConditionalGeneration": "rope.dimension_sections",  # (no mrope_section by default)
    "qwen3_asr:Qwen3ASRForConditionalGeneration": "rope.dimension_sections",
    "qwen3_omni_moe:Qwen3OmniMoeForConditionalGeneration": "rope.dimension_sections",
    "qwen3_vl:Qwen3VLForConditionalGeneration": "rope.dimension_sections",
    "qwen3_vl_moe:Qwen3VLMoeForConditionalGeneration": "rope.dimension_sections",
    # (the golden records nothing the converter writes through its impl object: an empty file)
    "ministral3:Ministral3ForCausalLM": "block_count",
}


def _write(path: Path, arch: str, kv: dict, tensors: dict) -> str:
    """The converter's file as it wrote it: its keys and tensors, none added."""
    w = gguf.GGUFWriter(str(path), arch=arch)
    add_values(w, kv)
    return finish(w, tensors, path, fill=False)


def test_the_converters_files_are_refused_only_where_the_loader_refuses_them(tmp_path):
    cases = [c for c in json.loads(gzip.open(GOLDEN).read())["configs"]
             if isinstance(c["result"], dict) and "kv" in c["result"]]
    refused = {}
    for i, case in enumerate(cases):
        res = case["result"]
        try:
            vkrope.from_gguf(_write(tmp_path / f"{i}.gguf", res["arch"], res["kv"], res.get("tensors") or {}))
        except ValueError as exc:
            if "is missing: llama.cpp's loader requires" in str(exc) or "shape" in str(exc) \
                    or "loader requires" in str(exc):
                refused[case["name"]] = str(exc).split(f"{res['arch']}.", 1)[-1].split(" is missing")[0]
    assert len(cases) > 80
    assert refused == LOADER_REFUSES

"""Write docs/MODELS.md, the table of models the README points to, from the
model table vkrope/data/hf_models.json (itself written by
scripts/hf_model_table.py from transformers' own code): per model type with
a text rotary module, read or refused and why, and how it is read; then,
from vkrope/data/gguf_convert.json and gguf_archs.json (llama.cpp's code),
the architectures whose configs `from_hf` reads through llama.cpp's
converter when transformers does not know their model type (remote code).

    python scripts/models_md.py [--check]

--check: exit 1 if docs/MODELS.md is not what the table gives (the suite
runs it), instead of writing it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLE = os.path.join(ROOT, "vkrope", "data", "hf_models.json")
CONVERT = os.path.join(ROOT, "vkrope", "data", "gguf_convert.json")
ARCHS = os.path.join(ROOT, "vkrope", "data", "gguf_archs.json")
RULES = os.path.join(ROOT, "vkrope", "data", "hf_config_rules.json")  # (keys a config class fills in: its sections)
OUT = os.path.join(ROOT, "docs", "MODELS.md")


def _types_text(rule: dict) -> str:
    """A layer_types rule's types in words: those that rotate, those that do not, and whether the model fails
    on others (refused: docs/guide/model-rules.md)."""
    text = f"rotating: {', '.join(rule['rotate']) or 'none'}"
    if rule.get("still"):
        text += f"; not: {', '.join(rule['still'])}"
    return text + ("; other types refused" if rule.get("failed") else "")


def _at_text(at: str | None) -> str:
    """Which channels of a part's own heads rotate (DeepSeek-V3.2's indexer the first, HY-V4's the last)."""
    return {"start": " (first channels of its heads)", "end": " (last channels of its heads)"}.get(at or "", "")


def _runs_text(runs: dict | None) -> str:
    """Which layers run a part, where not every layer does (GLM-5's indexer: by indexer_types)."""
    if not runs:
        return ""
    return f" on layers whose {runs['key']} is {' or '.join(runs['run'])} (not {' or '.join(runs['skip'])})"


def _nope_text(rule: dict, null_refused: list) -> str:
    """Which layers apply no RoPE, from the table's rule (`null_refused`: the keys the config rules refuse as
    null, before this rule is read: Cohere 2's sliding_window, on which its model fails)."""
    if rule["kind"] == "flags":
        return f"no RoPE by {rule['key']}"
    if rule["kind"] == "indices":
        return f"no RoPE on the layers {rule['key']} lists"
    cond = rule.get("if_null")
    if cond and cond["key"] in null_refused:
        return f"no RoPE by {rule['key']} ({_types_text(rule)}; a null {cond['key']} refused: transformers fails on one)"
    return f"no RoPE by {rule['key']} ({_types_text(rule)}" + (
        f"; when {cond['key']} is null, {_types_text(cond)})" if cond else ")")


def _how(e: dict, rules: dict) -> str:
    """How an ok type is read: pairs, head-dim key per layer type, the rotary rule, NoPE and M-RoPE (`rules`: the
    type's config rules: the keys its config class fills into a file's rope dict, HY-V4-VL's sections, ahead of
    its module's, and those refused as null)."""
    fills = (rules.get("one") or {}).get("fills")
    parts = [e["pairs"].replace("_", " ")]
    if e.get("parts"):  # (two ways in each layer: from_hf(part=) names one)
        parts = [", ".join(f"part={p!r}: {v['pairs'].replace('_', ' ')}" + _at_text(v.get("at"))
                           + _runs_text(v.get("runs")) for p, v in sorted(e["parts"].items()))]
    for lt, shape in sorted(e["by_layer_type"].items()):
        where = "" if lt == "*" else f"{lt}: "
        head = {None: "hidden_size // num_attention_heads",
                "quotient": "hidden_size // num_attention_heads (another head_dim refused)"}.get(
            shape["head_dim"], shape["head_dim"])
        rot = {"partial": "x partial_rotary_factor", "whole": "whole head",
               "whole_default": "whole head (default rope type)",
               "partial_unprobed": "whole head (a partial factor refused: the model's code did not run with one)"}.get(
            shape["rotary"], f"rotary dim {shape['rotary']}")
        parts.append(f"{where}{head}, {rot}")
    if e.get("nope"):
        parts.append(_nope_text(e["nope"], rules.get("null_refused") or []))
    if e.get("mrope"):
        section = (fills or {}).get("mrope_section") or e.get("mrope_section")
        parts.append(f"M-RoPE {e['mrope']}" + (f" (sections {section} where the config has none)" if section else "")
                     if e["mrope"] != "unknown" else "M-RoPE refused (neither layout)")
    if e.get("text_config"):
        parts.append("text config at " + ".".join(e["text_config"]))
    if e.get("ignores"):
        parts.append("its code ignores " + ", ".join(e["ignores"]) + " (the class's value is used)")
    if e.get("refuses"):
        parts.append("only the class's " + ", ".join(sorted(e["refuses"])))
    for key, switch in sorted(e.get("switches", {}).items()):
        value = "null" if switch["value"] is None else str(switch["value"]).lower()
        parts.append(f"{key} {value}: " + ("no layer rotates (NoRopeLayers)" if switch["then"] == "none"
                                           else "refused"))
    return "; ".join(parts)


def render(table: dict) -> str:
    """The Markdown page for `table`."""
    models = table["models"]
    rope = {t: e for t, e in sorted(models.items()) if e.get("rope") is not False}
    ok = [t for t, e in rope.items() if e.get("status") == "ok"]
    with open(RULES, encoding="utf-8") as f:
        rules = json.load(f)["models"]
    lines = [
        "# Models: what `vkrope.from_hf` reads, and what it refuses",
        "",
        f"Written by `scripts/models_md.py` from `vkrope/data/hf_models.json` (transformers "
        f"{table['transformers']}, by `scripts/hf_model_table.py`); do not edit by hand. Of "
        f"{len(models)} model types, {len(models) - len(rope)} have no text rotary embedding "
        f"(`from_hf` says so), {len(ok)} are read as their own code runs them, and "
        f"{len(rope) - len(ok)} are refused with the reason below (`like=` reads a config as another type).",
        "",
        "| model type | read | how / why not |",
        "|---|---|---|",
    ]
    for t, e in rope.items():
        if e.get("status") == "ok":
            lines.append(f"| `{t}` | yes | {_how(e, rules.get(t, {}))} |")
        else:
            why = str(e.get("status")).replace("|", "/").replace("\n", " ")
            lines.append(f"| `{t}` | refused | {why[:220]} |")
    return "\n".join(lines) + "\n"


def _converted(arch: dict | None, rows: str) -> str:
    """What from_hf makes of a converter architecture: the checkpoint's pairs, or why it refuses."""
    if arch is None:
        return "refused: its GGUF architecture is not in the table of llama.cpp's graphs"
    pairs, rotates = arch["pairs"], arch.get("rotates")
    if pairs == "none" or rotates == "False":
        return "refused: llama.cpp's graph applies no RoPE"
    if rotates == "unknown" or pairs == "unknown":
        return "refused: llama.cpp decides where it rotates or its pairs at run time"
    if rows not in ("none", "llama"):
        return f"refused: how the converter orders Q / K rows is {rows} (measured on tests/data/remote_configs)"
    if isinstance(pairs, dict) or pairs in ("mrope", "imrope"):
        return "M-RoPE" if rows == "none" else "refused: M-RoPE of reordered rows"
    if rows == "llama":
        return "rotate-half (the converter permutes Q / K: full rotary only)" if pairs == "norm" else \
            "refused: NeoX pairs of reordered rows"
    return "interleaved" if pairs == "norm" else "rotate-half"


def render_converter(convert: dict, archs: dict) -> str:
    """The section on configs read through llama.cpp's converter."""
    lines = [
        "",
        "## Model types transformers does not know: through llama.cpp's converter",
        "",
        f"A config whose `model_type` is not one of transformers' (a model with remote code: ChatGLM, Qwen 1, "
        f"MiniCPM, ...) and whose `architectures` llama.cpp's converter registers (and transformers does not) is "
        f"read as that converter writes it: vkrope runs the converter's own methods ({convert['source']}, "
        f"copied into `vkrope/data/gguf_convert.json` by `scripts/gguf_convert_table.py`) on the config with a "
        f"whitelisted interpreter, then reads the metadata as `from_gguf` does. Refused: code the interpreter "
        f"does not run, a rope type the converter drops (InternLM 2's dynamic NTK), and, unless you pass "
        f"`like=\"llama.cpp\"`, keys about positions or head sizes the converter does not use (ChatGLM's "
        f"`original_rope` and `kv_channels`, Qwen 1's `use_dynamic_ntk`). The pairs come from how the converter "
        f"orders each head's Q / K rows, measured by running its `modify_tensors` on the configs of "
        f"tests/data/remote_configs; an architecture not measured is refused. Per architecture (whether a "
        f"config runs depends on its keys):",
        "",
        "| architecture | converter class | GGUF architecture | pairs in the checkpoint |",
        "|---|---|---|---|",
    ]
    for name, e in sorted(convert["architectures"].items()):
        if e.get("transformers"):
            continue  # (read from transformers' code, by its model type)
        cls = convert["classes"][e["class"]]
        arch_src = next((v for c in [e["class"], *cls["bases"]] for k, v in convert["classes"].get(c, {}).get(
            "attrs", {}).items() if k == "model_arch"), None)
        gguf_name = convert["gguf"]["arch_names"].get(arch_src.rsplit(".", 1)[-1] if arch_src else "", "?")
        lines.append(f"| `{name}` | {e['class']} | `{gguf_name}` | {_converted(archs.get(gguf_name), e['qk_rows'])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if docs/MODELS.md differs from the table's")
    args = ap.parse_args()
    with open(TABLE, encoding="utf-8") as f, open(CONVERT, encoding="utf-8") as g, open(ARCHS, encoding="utf-8") as h:
        text = render(json.load(f)) + render_converter(json.load(g), json.load(h)["archs"])
    if args.check:
        with open(OUT, encoding="utf-8") as f:
            same = f.read() == text
        print("docs/MODELS.md is current" if same else "docs/MODELS.md differs: run python scripts/models_md.py")
        return 0 if same else 1
    with open(OUT, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

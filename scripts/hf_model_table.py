"""Regenerate vkrope/data/hf_models.json (the model table `vkrope.from_hf`
reads) and tests/data/hf_models_golden.npz from transformers' own code.

    python scripts/hf_model_table.py [--probes DIR [--cached-only]] [--only TYPE ... | --update TYPE ...]

Needs torch and transformers, the release to read (not vkrope's dependencies: run it from a
venv that has them, as scripts/hf_golden.py; vkrope itself is imported from
this checkout). For every model type of transformers' CONFIG_MAPPING it
probes the framework (scripts/hf_probe.py): the config class's defaults,
where the text config sits, the text rotary module, and each decoder
layer's attention run on random weights with the rotary functions of its
modeling file recorded. From what the code did it writes, per model type:

  text_config   the path of the language model's config in the outer one
  defaults      the config class's defaults of the keys vkrope reads
  rope          false when the model has no text rotary module
  pairs, sign   how the attention rotates: rotate_half, interleaved
                (2i, 2i+1), interleaved_to_halves (MLA's apply_rotary_pos_
                emb_interleave: read interleaved, written cat(even, odd));
                sign -1 for a rotation by -theta
  parts         where each layer's attention and a module in it both
                rotate, over the same angles (DeepSeek-V3.2's sparse
                indexer rotate-half beside the attention's interleaved
                pairs; GLM-5's interleaved as its attention's), told apart
                by the module that made the call: each part's pairs, and
                the key of a part's own head width (index_head_dim);
                from_hf(part=) reads one, and refuses a config whose parts'
                pairs differ without it
  cos_layout    halves (cat(f, f)), repeated (each value twice), single
                (one per pair) or complex (Llama 4's freqs_cis)
  mrope         how M-RoPE's axes spread over the pairs (chunked,
                interleaved; null: one axis), found by running the module
                at positions whose axes differ
  head_dim      per rope layer type: the config key holding the rotated
                head's width (null: hidden_size // num_attention_heads;
                "quotient": that, and another head_dim refused, where the
                code ran with no other); with `rotary`, how wide the
                rotation is ("partial", "whole", "whole_default",
                "partial_unprobed", or a key such as GPT-J's rotary_dim)
  mrope_section the sections the rotary module takes where a config has none
  layer_keys    lists of one value per layer that decide RoPE per layer in the
                whole model (Granite SWA's layer_rope_theta): refused unless
                every value is the theta read
  switches      true / false keys whose other value switches RoPE off at the
                model level (Falcon's alibi) or rotates otherwise: refused
  ignores, refuses, fixed
                RoPE keys the rotary module does not read (GPT-J's base
                10000) or reads otherwise than vkrope, found by running it
                with each changed; fixed: the values it uses per rope layer
                type on the default config
  nope          the rule for layers without RoPE, checked against every
                layer of the default config (and of a changed one), and for
                a layer_types rule, every layer type of transformers'
                (ALLOWED_ATTN_LAYER_TYPES) run on a layer of its whole model:
                the types that rotate, those that do not ("still"), and those
                it fails on ("failed", refused; the golden keeps the answers)
  status        "ok", or why vkrope refuses the model type

(and docs/MODELS.md, through scripts/models_md.py; the golden also keeps
each changed config the rules were decided by, as "type@key/"), and checks
vkrope.from_hf on the default config against the rotary
module (inverse frequencies, attention factor) and the attention's output,
so a model type is "ok" only where vkrope computes what the model does.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import pickle
import sys
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)
from vkrope.models.config_rules import PARTIAL_KEYS, per_layer_type  # noqa: E402
from vkrope.models.hf import angles_part  # noqa: E402
from vkrope.models.rope import MROPE_LAYOUTS  # noqa: E402
from vkrope.models.rope_types import COMMON_PARAMS, PARAMS, RULES  # noqa: E402
TABLE = os.path.join(ROOT, "vkrope", "data", "hf_models.json")
GOLDEN = os.path.join(ROOT, "tests", "data", "hf_models_golden.npz")
INV_ULPS = 4  # how far torch's float32 inverse frequencies may be from vkrope's (its power is not correctly
# rounded; measured up to 3 ulps at Apertus' base of 1.2e7, 2 at SmolLM3's 2e6); a wrong base is millions off
OLD_POS = np.array([[0, 3, 17, 250, 1029]])  # the probe's positions before they were stored with its facts

# The config keys from_hf reads, whose class defaults the table keeps (where not derived from other keys).
DEFAULT_KEYS = ("partial_rotary_factor", "rotary_pct", "rotary_dim", "rope_interleave", "head_dim", "global_head_dim",
                "qk_rope_head_dim", "kv_channels", "attention_head_dim", "head_size", "hidden_size",
                "num_attention_heads", "num_hidden_layers", "max_position_embeddings",
                "original_max_position_embeddings", "rotary_emb_base", "sliding_window", "no_rope_layers",
                "layer_types", "rope_local_base_freq")
# Keys that may hold the rotated head's width, most specific first (the table takes the first whose value is
# what the attention rotated and with which vkrope's reading matches the model).
HEAD_KEYS = ("global_head_dim", "qk_rope_head_dim", "attention_head_dim", "kv_channels", "head_size", "head_dim")
PERTURB = ("hidden_size", "num_attention_heads", "num_hidden_layers", "num_key_value_heads", "qk_rope_head_dim",
           "kv_lora_rank", "qk_nope_head_dim", "max_position_embeddings", "head_dim", "sliding_window")


def small_table_main(doc: str, out: str, script: str, argv: list[str] | None,
                     run: Callable[[], tuple[Any, dict]]) -> int:
    """The main of a script that writes one small table (`--out`, default `out`): warnings off, `run()` gives
    the table's models and its own fields, written by write_small_table."""
    import warnings  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--out", default=out)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    models, fields = run()
    write_small_table(args.out, script, fields, models)
    return 0


def write_small_table(out: str, script: str, fields: dict, models: Any) -> None:
    """Write one of the small tables beside the model table (hf_position_limits.json, hf_cache_drops.json):
    the script that wrote it, the transformers release it measured, its own `fields` and `models`."""
    import transformers  # noqa: PLC0415

    with open(out, "w", encoding="utf-8") as f:
        json.dump({"generated_by": script, "transformers": transformers.__version__, **fields, "models": models},
                  f, indent=1)
        f.write("\n")
    print(f"wrote {out}: {models}", file=sys.stderr)


def derived(text_cls: Any, base: dict) -> set[str]:
    """The DEFAULT_KEYS whose class default follows another argument (head_dim = hidden // heads, layer_types
    from num_hidden_layers, ...): changing one PERTURB argument of the class changes them."""
    out: set[str] = set()
    for key in PERTURB:
        v = base.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            continue
        try:
            other = text_cls(**{key: v * 2}).to_dict()
        except Exception:  # noqa: BLE001  (a class that refuses the value tells nothing)
            continue
        out |= {k for k in DEFAULT_KEYS if k != key and other.get(k) != base.get(k)}
    return out


def alias_fields(text_cls: Any) -> list[str]:
    """The names of the class's attribute_map that are its own dataclass fields (Bailing hybrid's
    max_position_embeddings, stored as model_max_length): transformers sets the fields first, runs its RoPE
    standardization, then sets the other keys a file gives, so a file's stored name wins over the field and
    the standardization saw the field's value (the file's, else the class default)."""
    import dataclasses  # noqa: PLC0415

    fields = {f.name for f in dataclasses.fields(text_cls)} if dataclasses.is_dataclass(text_cls) else set()
    return sorted(k for k, stored in getattr(text_cls, "attribute_map", {}).items()
                  if k in fields and stored not in fields)


def defaults_of(text_cls: Any, text: dict) -> dict:
    """The class defaults from_hf fills in where a config.json is silent (see hf_models): the text config
    class's own (an outer class may preset its text config otherwise; a text_config a user gives is built
    from its class)."""
    try:
        text = text_cls().to_dict()
    except Exception:  # noqa: BLE001  (a class with no defaults: the probed config's)
        pass
    skip = derived(text_cls, text)
    out = {k: text[k] for k in DEFAULT_KEYS if k in text and text[k] is not None and k not in skip}
    for key, stored in getattr(text_cls, "attribute_map", {}).items():  # (a key saved under another name: GPT-J's
        # hidden_size as n_embd, Bailing's field max_position_embeddings as model_max_length; from_hf reads both;
        # one saved under a key of its own, JetMoE's head_dim as kv_channels, has its default there)
        if key in DEFAULT_KEYS and stored not in DEFAULT_KEYS and key not in skip and text.get(stored) is not None:
            out[key] = text[stored]
    rp = text.get("rope_parameters")
    if isinstance(rp, dict) and rp:
        out["rope_parameters"] = rp  # (whole: GPT-OSS's class default is yarn)
        if not per_layer_type(rp) and isinstance(rp.get("rope_theta"), (int, float)):
            out["rope_theta"] = rp["rope_theta"]
    if "rope_interleave" in text and text["rope_interleave"] is not None:
        out["rope_interleave"] = text["rope_interleave"]
    return out


CACHE: str | None = None  # the --probes folder: probes with overrides are kept there too
SANE_HEAD = 128  # the head a degenerate default config (hidden_size not a multiple of its heads) is probed with
CHANGED: dict[str, dict[str, dict]] = {}  # model type -> {change: its probe}: the golden's changed configs


def probe(model_type: str, overrides: dict, first_only: bool = False) -> dict:
    """hf_probe.probe with overrides, kept in the --probes folder (a rerun skips them)."""
    import hf_probe  # noqa: PLC0415

    name = f"{model_type}@{'_'.join(f'{k}={v}' for k, v in sorted(overrides.items()))}{'@1' if first_only else ''}"
    if len(name) > 120:  # (a file name has at most 255 bytes: a long set of overrides by its digest)
        name = f"{model_type}@{hashlib.sha256(name.encode()).hexdigest()[:32]}"
    path = os.path.join(CACHE, name + ".pkl") if CACHE else None
    if path and os.path.exists(path):
        with open(path, "rb") as f:
            return pickle.load(f)
    facts = hf_probe.probe(model_type, overrides, first_only=first_only)
    if path:
        with open(path, "wb") as f:
            pickle.dump(facts, f)
    return facts


def meta_probe(kind: str, model_type: str, overrides: dict) -> Any:
    """hf_probe.rotary_calls ("calls") or hf_probe.passed_rope ("passed"), kept in the --probes folder too
    (as JSON: layer indices come back as strings)."""
    import hf_probe  # noqa: PLC0415

    name = f"{model_type}@{kind}@{'_'.join(f'{k}={v}' for k, v in sorted(overrides.items()))}"
    path = os.path.join(CACHE, hashlib.sha256(name.encode()).hexdigest()[:32] + "." + kind) if CACHE else None
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    got = {"calls": hf_probe.rotary_calls, "passed": hf_probe.passed_rope}[kind](model_type, overrides)
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(got, f)
    return json.loads(json.dumps(got))  # (the same whether cached or not)


def vkrope_refuses(model_type: str, facts: dict, entry: dict, rope: Any) -> bool:
    """Whether from_hf refuses the default config with `rope` as its rope_parameters (a rope type the config
    class's validation refuses: the model's code cannot be run with it either)."""
    import vkrope  # noqa: PLC0415

    install({model_type: entry})
    cfg = config_of(model_type, {**facts, "text": {**facts["text"], "rope_parameters": rope}}, entry)
    try:
        for key in entry["by_layer_type"]:
            vkrope.from_hf(cfg, layer_type=None if key == "*" else key, part=angles_part(entry))
    except ValueError:
        return True
    return False


def install(models: dict) -> None:
    """Make vkrope.models.model_table read `models` (the table being built), so from_hf is checked with it."""
    import transformers  # noqa: PLC0415
    from vkrope.models import model_table as hf_models  # noqa: PLC0415

    hf_models.table = lambda: {"transformers": transformers.__version__, "models": models}


def halves_of(r: Any, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """vkrope's per-pair (cos, sin) [S, rot/2] of a ModelRope at one row of positions."""
    c, s = r.cos_sin(pos)
    c, s = c[0].astype(np.float64), s[0].astype(np.float64)
    if r.cos_layout == "repeated":
        return c[:, 0::2], s[:, 0::2]
    if r.cos_layout == "single":
        return c, s
    return c[:, : c.shape[-1] // 2], s[:, : s.shape[-1] // 2]


def expected_out(x: np.ndarray, c: np.ndarray, s: np.ndarray, interleaved: bool, token_axis: int) -> np.ndarray:
    """x [.., D] rotated as vkrope does (interleaved pairs written in place), float64, by (c, s) [S, rot/2]."""
    xs = np.moveaxis(x, token_axis, -2).astype(np.float64)
    y, half = xs.copy(), c.shape[-1]
    if interleaved:
        a, b = xs[..., 0:2 * half:2], xs[..., 1:2 * half:2]
        y[..., 0:2 * half:2], y[..., 1:2 * half:2] = a * c - b * s, b * c + a * s
    else:
        a, b = xs[..., :half], xs[..., half:2 * half]
        y[..., :half], y[..., half:2 * half] = a * c - b * s, b * c + a * s
    return np.moveaxis(y, -2, token_axis)


def to_halves(y: np.ndarray, rot: int) -> np.ndarray:
    """MLA's order: the interleaved rotation's pairs written cat(even, odd) over the first rot channels."""
    z = y.copy()
    z[..., :rot] = np.concatenate([y[..., 0:rot:2], y[..., 1:rot:2]], -1)
    return z


def angle_tol(r: Any, pt: dict, pos: np.ndarray) -> np.ndarray:
    """[S, rot/2]: how far vkrope's cos or sin may be from the module's: 2 float32 ulps of 1 each side, and
    where its inverse frequency differs from torch's (whose float32 power is not always the correctly rounded
    one vkrope takes) that difference times the position plus one ulp of the angle; times the attention
    factor."""
    p = np.asarray(pos, np.float64).reshape(-1, 1)
    ours = np.asarray(r.freqs(np.asarray(pos)).inv_freq, np.float64)
    theirs = pt["inv_freq"]
    if theirs is None or np.shape(theirs) != ours.shape:
        return np.full((p.size, ours.size), 4 * 2.0**-23 * max(1.0, pt["scaling"]))
    d = np.abs(ours - np.asarray(theirs, np.float64))  # (check() has held it to 1 float32 ulp)
    off = p * d + (d > 0) * np.spacing(np.abs(p * ours).astype(np.float32)).astype(np.float64)
    return max(1.0, pt["scaling"]) * (off + 4 * 2.0**-23)


def inv_freq_ulps(r: Any, pt: dict, pos: np.ndarray) -> int:
    """How many float32 ulps vkrope's inverse frequencies are from the module's (0 where it keeps none)."""
    theirs = pt["inv_freq"]
    if theirs is None:
        return 0
    ours = np.asarray(r.freqs(np.asarray(pos)).inv_freq, np.float32)
    theirs = np.asarray(theirs, np.float32).reshape(-1)
    if ours.shape != theirs.shape:
        return 1 << 30
    return int(np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64)).max())


def config_of(model_type: str, facts: dict, entry: dict) -> dict:
    """The probed config as a config.json: a composite type's text config nested where its class reads it (a
    flat file is read by config_rules' own rules)."""
    cfg = dict(facts["text"])
    for key in reversed(entry.get("text_config") or []):
        cfg = {key: cfg}
    return {**cfg, "model_type": model_type}


def check(model_type: str, facts: dict, entry: dict) -> str | None:
    """None when vkrope.from_hf, with `entry`, computes what the model did on its default config; else why not
    (of each part, where its layers rotate two ways)."""
    for part in sorted(entry.get("parts") or [None], key=str):
        why = check_part(model_type, facts, entry, part)
        if why is not None:
            return why if part is None else f"part {part!r}: {why}"
    return None


def check_part(model_type: str, facts: dict, entry: dict, part: str | None) -> str | None:
    """check() of one part (None: a model type whose layers rotate one way)."""
    import vkrope  # noqa: PLC0415

    install({model_type: entry})
    cfg = config_of(model_type, facts, entry)
    pos = facts.get("pos", OLD_POS)
    try:
        per_layer = vkrope.hf_layers(cfg, part=part)
    except ValueError as exc:
        return f"from_hf: {exc}"
    for info in facts["layers"]:
        r = per_layer[info["index"]] if info["index"] < len(per_layer) else "missing"
        rotates = info["rotates"] and (part in (None, "attention") or part in (info.get("parts") or {}))
        if (r is None) != (not rotates):  # (a part its layer does not run rotates nothing there)
            return f"layer {info['index']}: the model {'rotates' if rotates else 'does not rotate'}, " \
                   f"vkrope says {'none' if r is None else 'a RoPE'}"
        if r is None:
            continue
        pt = facts["per_type"][info["rope_key"]]
        pt = {**pt, "inv_freq": module_inv(pt, facts, entry)}
        if r.head_dim != head_width(info, facts):
            return f"layer {info['index']}: head dim {r.head_dim}, the model's {head_width(info, facts)}"
        if inv_freq_ulps(r, pt, pos) > INV_ULPS:  # torch's float32 power and reciprocal vs the correctly rounded
            return f"layer {info['index']}: inverse frequencies {inv_freq_ulps(r, pt, pos)} ulps from the module's"
        c, s = halves_of(r, pos)
        _, mc, ms = pt["pv"]
        if c.shape != mc.shape:
            return f"layer {info['index']}: {c.shape[-1]} pairs, the model's {mc.shape[-1]}"
        tol = angle_tol(r, pt, pos)
        if (np.abs(c - mc) > tol).any() or (np.abs(s - ms) > tol).any():
            return f"layer {info['index']}: cos / sin differ by {max(np.abs(c - mc).max(), np.abs(s - ms).max()):.3g}"
        ex = pt.get("example") if part is None else pt["part_examples"][part]
        if ex is not None:  # the pairs and their order, with the model's own cos / sin
            want = expected_out(ex["q_in"], mc, ms, r.interleaved, ex["token_axis"])
            if ex["pairs"] == "interleaved_to_halves":
                want = to_halves(want, 2 * c.shape[-1])
            err = np.abs(want - ex["q_out"]).max() / max(1e-30, np.abs(ex["q_in"]).max())
            if err > 1e-5:
                return f"layer {info['index']}: the rotation differs from the attention's by {err:.3g} (relative)"
    return None


def rotating_pattern(facts: dict) -> list[bool]:
    """Per decoder layer whether the model rotated there (a layer with no attention module, a linear-attention
    or convolution layer, rotates nothing)."""
    rotates = {l["index"]: l["rotates"] for l in facts["layers"]}
    n = facts["text"].get("num_hidden_layers")
    n = n if isinstance(n, int) and n >= max(rotates) + 1 else max(rotates) + 1
    return [rotates.get(i, False) for i in range(n)]


TYPE_ANSWERS: dict[tuple, dict[str, bool | None]] = {}  # type_answers' per text model, layer and overrides


# The text config keys a layer's attention reads beside its type: a wrapper's values go with each probe of its
# text model type (the wrapper's own config may differ from the text model type's default in them)
ATTN_KEYS = ("sliding_window", "attention_chunk_size", "rope_parameters", "head_dim", "hidden_size",
             "num_attention_heads", "num_key_value_heads", "partial_rotary_factor")
WINDOWS = {"sliding_window": 4096, "attention_chunk_size": 8192}  # the windows a probe sets where null


def type_answers(model_type: str, facts: dict, overrides: dict | None = None) -> tuple[int, dict[str, bool | None]]:
    """(the layer probed, per attention layer type of transformers' (ALLOWED_ATTN_LAYER_TYPES) whether a layer of
    that type rotates in the model's code): the default config's first rotating layer given that type (the
    layers after it dropped), its attention probed and the whole model run on the meta device
    (hf_probe.passed_rope: the model must run with it, and pass that layer its position embeddings); None where
    the model does not build or run with it. A default config's types say only what its own layers do (LFM2's
    lists every layer as attention; a file's "conv" layers rotate nothing)."""
    from transformers.configuration_utils import ALLOWED_ATTN_LAYER_TYPES  # noqa: PLC0415
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES  # noqa: PLC0415

    types, pattern = facts["text"]["layer_types"], rotating_pattern(facts)
    first = next((i for i, p in enumerate(pattern) if p), None)
    if first is None or first >= len(types):
        return 0, {}
    # (the answers are the text model's code's: a wrapper of the same text model, Qwen2's thirteen, asks it,
    # with the wrapper's values of the keys its attention reads; so the probes' files are shared)
    text_type = facts.get("text_model_type")
    who = text_type if text_type in CONFIG_MAPPING_NAMES else model_type
    base = {**{k: facts["text"][k] for k in ATTN_KEYS if k in facts["text"]}, **facts.get("overrides", {})}
    for key, value in WINDOWS.items():  # (a file with sliding or chunked layers sets their window: Qwen2's
        if key in base and base[key] is None:  # class nulls it unless use_sliding_window)
            base[key] = value
    base.update(overrides or {})
    memo = (who, tuple(types[:first]), json.dumps(base, sort_keys=True, default=str))
    if memo in TYPE_ANSWERS:
        return first, dict(TYPE_ANSWERS[memo])

    def asked(names: tuple[str, ...], anchor: tuple[str, ...] = ()) -> list[bool | None]:
        """Each type's answer from one model of the layers [*types[:first], *names, *anchor] (an anchor: a
        layer of the rotating type after them, where a model of convolutions alone does not run: LFM2's)."""
        layers = [*types[:first], *names, *anchor]
        over = {**base, "num_hidden_layers": len(layers), "layer_types": layers}
        rope = base.get("rope_parameters")
        if isinstance(rope, dict) and isinstance(rope.get(types[first]), dict):  # RoPE per layer type: a type
            # the default config has none for takes the rotating type's (a file naming it gives its own)
            over["rope_parameters"] = {**{n: rope[types[first]] for n in names}, **rope}
        try:
            got = probe(who, over)
            passed = rotary_passed(who, over)
        except Exception:  # noqa: BLE001  (the model does not build with one of them)
            got, passed = {}, None
        if passed is None:  # (the whole model does not run with them)
            return [None] * len(names)
        if got.get("why") == "no decoder attention modules found":  # (it ran, with no attention: LFM2's conv)
            return [False] * len(names)
        if not got.get("layers") or "why" in got:
            return [None] * len(names)
        answer = rotating_pattern(got)[first:]
        answer += [False] * (len(names) - len(answer))  # (layers past the last attention have none)
        return [bool(answer[i] and passed.get(first + i, True)) for i in range(len(names))]

    # (all types in one model first; a type the model fails on spoils that run, so then one run each)
    names = tuple(sorted(ALLOWED_ATTN_LAYER_TYPES))
    together = asked(names)
    out = dict(zip(names, together))
    if None in together:
        out = {name: asked((name,), (types[first],))[0] for name in names}
        out.update({name: asked((name,))[0] for name, a in out.items() if a is None})  # (the anchor's type
        # may be what fails: EXAONE 4's sliding layers without a window)
    TYPE_ANSWERS[memo] = out
    return first, dict(out)


def types_rule(model_type: str, facts: dict, pattern: list[bool],
               overrides: dict | None = None) -> dict[str, Any] | None:
    """The layer_types rule: the types that rotate, those that do not ("still"), and those the model fails on
    ("failed", refused), from every attention layer type probed (type_answers) and, without `overrides`, the
    default config's own layers (overriding: the null sliding window's, which its whole model may not run).
    None where the default config's layers disagree with their types."""
    seen: dict[str, bool | None] = {}
    for t, p in zip(facts["text"]["layer_types"], pattern):
        if seen.setdefault(t, p) != p:
            return None
    first, probed = type_answers(model_type, facts, overrides)
    answers = probed if overrides else {**probed, **seen}
    facts.setdefault("type_answers", {})["null" if overrides else "default"] = {"layer": first, "types": answers}
    return {"kind": "types", "key": "layer_types", "rotate": sorted(t for t, a in answers.items() if a is True),
            "still": sorted(t for t, a in answers.items() if a is False),
            "failed": sorted(t for t, a in answers.items() if a is None)}


def covering_types(facts: dict) -> dict | None:
    """Overrides whose layer_types name every layer type the default config's rope_parameters has a RoPE for,
    in turn, where its own layer_types do not (Laguna's and Mellum's default layers are all full attention,
    their rope_parameters also hold the sliding layers'): a probe of the default layers would read only those
    it names, and a file's other layers would be refused. None where they name them all."""
    from transformers.configuration_utils import ALLOWED_ATTN_LAYER_TYPES  # noqa: PLC0415

    text = facts.get("text") or {}
    types, rope = text.get("layer_types"), text.get("rope_parameters")
    if not isinstance(types, list) or not types or not per_layer_type(rope):
        return None
    missing = [k for k in rope if k not in types and k in ALLOWED_ATTN_LAYER_TYPES]  # (DeepSeek-V4's keys
    # are its attention's two RoPEs, main and compress: no layer types)
    if not missing:
        return None
    cycle = [*dict.fromkeys(types), *missing]
    n = max(len(types), len(cycle))  # (layers enough for each type: the count follows the list)
    return {"layer_types": [cycle[i % len(cycle)] for i in range(n)],
            **({"num_hidden_layers": n} if n > len(types) else {})}


def indices_rule(model_type: str, text: dict, pattern: list[bool]) -> dict | None:
    """{"kind": "indices", "key": K} where the layers without RoPE are those a list of the text config names by
    index (Mllama's cross_attention_layers: its cross-attention layers take no RoPE), found on the default
    config and checked by a probe with each index moved one layer on; None where no key lists them so."""
    still = [i for i, r in enumerate(pattern) if not r]
    for key, value in text.items():
        if not isinstance(value, list) or not value or any(isinstance(v, bool) or not isinstance(v, int)
                                                           for v in value) or sorted(set(value)) != still:
            continue
        moved = sorted({(v + 1) % len(pattern) for v in value})
        try:
            again = probe(model_type, {key: moved})
        except Exception:  # noqa: BLE001  (the class or model does not take another list: not this key's rule)
            continue
        if again.get("layers") and [i for i, r in enumerate(rotating_pattern(again)) if not r] == moved:
            CHANGED.setdefault(model_type, {})[key] = again  # (its pattern kept in the golden)
            return {"kind": "indices", "key": key}
    return None


def nope_rule(model_type: str, facts: dict) -> tuple[dict | None, str | None]:
    """(the rule that gives the layers without RoPE, or None when all rotate, whatever their types; why none
    fits)."""
    text = facts["text"]
    pattern = rotating_pattern(facts)
    types = text.get("layer_types")
    if all(pattern) and not isinstance(types, list):
        return None, None
    flags = text.get("no_rope_layers")
    if not all(pattern) and isinstance(flags, list) and [bool(v) for v in flags[: len(pattern)]] == pattern:
        return {"kind": "flags", "key": "no_rope_layers"}, None
    listed = indices_rule(model_type, text, pattern)
    if listed is not None:
        return listed, None
    if not isinstance(types, list):
        return None, "its layers without RoPE follow no config key vkrope knows"
    rule = types_rule(model_type, facts, pattern)
    if rule is None:
        return None, "its layers without RoPE follow no config key vkrope knows"
    if all(pattern) and not rule["still"] and not rule["failed"]:
        return None, None  # (every layer rotates, whatever its type)
    if text.get("sliding_window") is not None:  # does the attention test the window? probe without one
        try:
            again_facts = probe(model_type, {"sliding_window": None})
        except Exception:  # noqa: BLE001  (the config class takes no null window: nothing to read for it)
            again_facts = {}
        again = rotating_pattern(again_facts) if again_facts.get("layers") else []  # (every layer: LFM3's
        # convolution layers rotate nothing either way)
        if again and again != pattern:
            null = types_rule(model_type, facts, again, {"sliding_window": None})
            if null is None:
                return None, "its layers without RoPE change with sliding_window in a way vkrope does not read"
            rule["if_null"] = {"key": "sliding_window", **{k: null[k] for k in ("rotate", "still", "failed")}}
    return rule, None


def per_layer_keys(text_cls: Any, text: dict) -> list[dict]:
    """Keys the config class turns into per-layer overrides (Gemma 4's global_head_dim -> per_layer_config's
    head_dim on its full-attention layers), found by giving the class each head-dim key it does not save; and
    whether it still does so beside a file's own per_layer_config (`beside_per_layer_config`, given null:
    Gemma 4's applies global_head_dim only where the file has none, not even a null one)."""
    out = []
    base = text.get("per_layer_config") or {}
    types = text.get("layer_types") or []
    for key in HEAD_KEYS:
        if key in text and text[key] is not None:
            continue
        try:
            other = text_cls(**{key: 1000}).to_dict().get("per_layer_config") or {}
        except Exception:  # noqa: BLE001  (the class does not take it)
            continue
        changed = {int(i): v for i, v in other.items() if v != base.get(i)}
        fields = {f for v in changed.values() for f, x in v.items() if x == 1000}
        if changed and len(fields) == 1:
            default = {x for i, v in base.items() for f, x in v.items() if f in fields}
            field = fields.pop()
            out.append({"key": key, "field": field, "types": sorted({types[i] for i in changed}),
                        "default": default.pop() if len(default) == 1 else None,
                        "beside_per_layer_config": beside_per_layer_config(text_cls, key, field)})
    return out


def beside_per_layer_config(text_cls: Any, key: str, field: str) -> bool | None:
    """Whether the class still turns `key` into per-layer `field` overrides beside a file's own
    per_layer_config, given null, empty and holding one layer's empty dict (Gemma 4's: never, its code tests
    the key's presence); None where those differ or the class raises on one (from_hf then refuses such a
    file)."""
    seen = set()
    for given in (None, {}, {"0": {}}):
        try:
            made = text_cls(**{key: 1000, "per_layer_config": given}).to_dict().get("per_layer_config") or {}
        except Exception:  # noqa: BLE001  (unknown: refused)
            return None
        seen.add(any(isinstance(v, dict) and v.get(field) == 1000 for v in made.values()))
    return seen.pop() if len(seen) == 1 else None


def layer_text(facts: dict, index: int) -> dict:
    """The default config as layer `index` sees it (its per_layer_config merged, its attribute_map's names)."""
    over = facts["text"].get("per_layer_config") or {}
    text = {**facts["text"], **next((v for k, v in over.items() if int(k) == index), {})}
    for key, stored in facts.get("aliases", {}).items():
        if text.get(key) is None and text.get(stored) is not None:
            text[key] = text[stored]
    return text


def head_width(info: dict, facts: dict) -> int:
    """The width of the heads the user passes: the q the attention rotated, or, where it rotated a slice of
    its heads (q[..., :rot], Phi, StableLM, GLM-4-MoE), the attention's own head_dim."""
    w = 2 * facts["per_type"][info["rope_key"]]["pv"][1].shape[-1]
    full = info.get("attn_head_dim")
    if info["head_dim"] == w and isinstance(full, int) and full > w:
        return full
    return info["head_dim"]


def candidates(facts: dict, key: Any) -> list[tuple[Any, str]]:
    """(head-dim key, rotary rule) pairs to try for one rope layer type."""
    first = next(l["index"] for l in facts["layers"] if l["rotates"] and l["rope_key"] == key)
    text = layer_text(facts, first)
    dims = {head_width(l, facts) for l in facts["layers"] if l["rotates"] and l["rope_key"] == key}
    if len(dims) != 1:
        return []
    d = dims.pop()
    w = 2 * facts["per_type"][key]["pv"][1].shape[-1]
    heads: list[Any] = [k for k in HEAD_KEYS if text.get(k) == d]
    hid, nh = text.get("hidden_size"), text.get("num_attention_heads")
    if isinstance(hid, int) and isinstance(nh, int) and nh and hid // nh == d:
        heads.append(None)
    rotary = ["partial", "whole"] + [k for k in ("rotary_dim", "qk_rope_head_dim", "kv_channels") if text.get(k) == w]
    return [(h, r) for h in heads for r in rotary]


def ran(model_type: str, facts: dict, variants: list[dict], first_only: bool) -> dict | None:
    """The probe with the first of `variants` (override sets, over those `facts` was probed with) the model's
    code runs (None: it ran none)."""
    for overrides in variants:
        try:
            again = probe(model_type, {**facts.get("overrides", {}), **overrides}, first_only=first_only)
        except Exception:  # noqa: BLE001  (the class refuses the values)
            continue
        if "why" not in again and "error" not in again and any(l["rotates"] for l in again.get("layers", [])):
            return again
    return None


def sections_times(rope: Any, factor: float) -> Any:
    """A rope dict (or per-layer-type dicts) with its mrope_section scaled (M-RoPE's sections span the rotated
    pairs: a probe of another width needs them scaled too); None where it holds none."""
    if per_layer_type(rope):
        out = {k: sections_times(v, factor) for k, v in rope.items()}
        return None if all(v is None for v in out.values()) else {k: out[k] or rope[k] for k in rope}
    sec = rope.get("mrope_section") if isinstance(rope, dict) else None
    if not isinstance(sec, (list, tuple)) or not all(isinstance(v, int) and v * factor == int(v * factor)
                                                     for v in sec):
        return None
    return {**rope, "mrope_section": [int(v * factor) for v in sec]}


def with_sections(overrides: dict, rope: Any, factor: float) -> list[dict]:
    """`overrides`, first with the rope dict's M-RoPE sections scaled by `factor` where it has them."""
    scaled = sections_times(overrides.get("rope_parameters", rope), factor)
    return ([{**overrides, "rope_parameters": scaled}] if scaled is not None else []) + [overrides]


def text_rotary(model_type: str) -> tuple[Any, Any]:
    """(the default text config, the class of its text rotary module, or None)."""
    import hf_probe  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415

    text = AutoConfig.for_model(model_type).get_text_config(decoder=True)
    module = hf_probe.modeling_module(text)
    return text, hf_probe.text_rotary_class(module, text) if module else None


def spanning_partial(model_type: str) -> dict | None:
    """Overrides whose partial_rotary_factor makes the M-RoPE sections the text rotary module takes span the
    rotated pairs, where the default config's head is wider (GLM-4V's default rotates its whole 128-wide head,
    64 pairs, over sections [8, 12, 12]: transformers' split fails, and its released files rotate half); None
    where no factor below 1 does."""
    text, _ = text_rotary(model_type)
    rope = getattr(text, "rope_parameters", None)
    if not isinstance(rope, dict) or per_layer_type(rope):
        return None
    section = section_of(model_type, {k: v for k, v in rope.items() if k != "mrope_section"}).get("mrope_section")
    over: dict[str, Any] = {}
    head = getattr(text, "head_dim", None)
    if head is None and text.hidden_size % text.num_attention_heads:  # (a degenerate default, GLM-4.5V's
        head = over["head_dim"] = SANE_HEAD  # 4096 / 96 heads: the head main() probes too)
    head = head or text.hidden_size // text.num_attention_heads
    if not section or not head:
        return None
    partial = 2 * sum(section) / head
    return {**over, "rope_parameters": {**rope, "partial_rotary_factor": partial}} if 0 < partial < 1 else None


def own_rope_reads(model_type: str) -> list[str]:
    """The rope dict keys the text model's modeling file reads (`rope_parameters["K"]`, `.get("K")`, or
    rope_scaling's) that from_hf does not know (HunYuan's `alpha`, which turns its "dynamic" into a fixed NTK
    base): from_hf refuses a file that gives one, where it would otherwise list it as ignored."""
    import inspect  # noqa: PLC0415
    import re  # noqa: PLC0415

    import hf_probe  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415
    from vkrope.models.hf_rope_dict import IGNORED, MSCALES  # noqa: PLC0415

    module = hf_probe.modeling_module(AutoConfig.for_model(model_type).get_text_config(decoder=True))
    if module is None:
        return []
    src = inspect.getsource(module)
    keys = set(re.findall(r"rope_(?:parameters|scaling)(?:\[[^\]]*\])?(?:\.get\(|\[)[\"'](\w+)[\"']", src))  # (a
    # layer type's dict too: rope_parameters[layer_type]["K"])
    known = COMMON_PARAMS.union(*(rule.params for rule in RULES.values() if rule.in_files))  # (a key only a
    return sorted(keys - known - IGNORED - set(MSCALES))  # type code makes reads is type_by_key's to measure)


def per_type_view(model_type: str) -> dict:
    """{"per_type_view": True} where the text rotary module builds each layer type's frequencies from
    `config.per_layer_config[layer_type]` (Gemma 4's, read from its source): transformers' per-type view of a
    heterogeneous config, which raises where that type's layers carry different overrides (from_hf refuses
    those); {} for any other (NeoMME's reads rope_parameters[layer_type] alone)."""
    import inspect  # noqa: PLC0415

    _, cls = text_rotary(model_type)
    return {"per_type_view": True} if cls is not None and "per_layer_config[layer_type]" in inspect.getsource(cls) \
        else {}


READ_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "num_hidden_layers", "max_position_embeddings",
             "original_max_position_embeddings", "partial_rotary_factor", "rotary_pct", "rope_theta", "rope_parameters",
             "rope_scaling", "layer_types", "qk_rope_head_dim", "kv_channels", "global_head_dim", "rotary")  # (Falcon's
# rotary: its RoPE switch, derived from alibi)


def readonly_keys(text_cls: Any, aliases: dict) -> dict:
    """{"readonly_keys": [...]}: the RoPE keys a file may give (READ_KEYS, and their attribute_map names) that
    the config class holds as a property with no setter (Falcon's head_dim, derived from hidden_size and the
    heads): its from_dict raises on a file giving one (AttributeError); {} where there are none."""
    import inspect  # noqa: PLC0415

    found = sorted(k for k in {*READ_KEYS, *aliases} if isinstance(inspect.getattr_static(text_cls, k, None), property)
                   and inspect.getattr_static(text_cls, k).fset is None)
    return {"readonly_keys": found} if found else {}


def per_layer_model(model_type: str) -> dict:
    """{"per_layer_model": True} where the text model's modeling file reads `config.per_layer_config` (builds
    its attention per layer from it, NeoMME's and Step's, or its RoPE per layer type too, Gemma 4's: the table's
    per_type_view); {} where it reads none: transformers' model then builds every layer from the global config
    and raises where it reads a key a file's per_layer_config overrides (from_hf refuses those of a key a RoPE
    reads, or that change a layer's RoPE, and reads the rest as the global config)."""
    import inspect  # noqa: PLC0415

    import hf_probe  # noqa: PLC0415

    text, _ = text_rotary(model_type)
    module = hf_probe.modeling_module(text)
    return {"per_layer_model": True} if module is not None and "per_layer_config" in inspect.getsource(module) \
        else {}


def partial_absent(model_type: str, facts: dict) -> dict:
    """For a model with RoPE per layer type whose rotary module reads a layer type's partial factor from that
    type's dict with a fallback of its own (`rope_parameters[layer_type].get("partial_rotary_factor", X)` in its
    modeling file: MiMo-V2-Flash's 0.334, ZAYA's 1.0), {"partial_absent": X}, checked by building the module
    with every type's dict lacking the key (each default type's width int(head_dim * X), each linear one's the
    head), and "partial_top": "merged" where the config class, given a top-level factor, merges it into every
    type's dict (Step 3.5's); {} for any other. from_hf reads X where a type's dict lacks it, and a top-level
    factor only where merged (elsewhere the module takes it only where transformers' standardization has run
    for another layer type first: refused)."""
    import inspect  # noqa: PLC0415
    import re  # noqa: PLC0415

    import hf_probe  # noqa: PLC0415

    rp = facts["text"].get("rope_parameters")
    text, rot_cls = text_rotary(model_type)
    module = hf_probe.modeling_module(text)
    if not per_layer_type(rp) or module is None or rot_cls is None:
        return {}
    found = set(re.findall(r"rope_parameters\[layer_type\]\.get\(\s*[\"']partial_rotary_factor[\"']\s*,\s*([0-9.]+)\s*\)",
                           inspect.getsource(module)))
    if len(found) != 1:
        return {}
    fallback = float(found.pop())
    merged = top_merged(text, rp)
    text.rope_parameters = {t: {k: v for k, v in d.items() if k != "partial_rotary_factor"} for t, d in rp.items()}
    for key in PARTIAL_KEYS:
        if hasattr(text, key):
            setattr(text, key, None)
    head = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    stripped = text.rope_parameters
    for kind, factor in (("default", fallback), ("linear", 1.0)):  # (the library's functions of the other
        # types read 1.0 where the dict has none: from_hf reads the fallback for the module's own default only)
        text.rope_parameters = {t: {**d, "rope_type": kind, **({"factor": 2.0} if kind == "linear" else {})}
                                for t, d in stripped.items()}
        rot = rot_cls(text)
        for t in set(getattr(text, "layer_types", None) or rp) & set(rp):  # (the module sets up the types its
            inv = getattr(rot, f"{t}_inv_freq", None)  # layers name: ZAYA's)
            if inv is None or inv.numel() != len(range(0, int(head * factor), 2)):
                raise SystemExit(f"{model_type}: a {kind} layer type {t} without a partial factor: "
                                 f"{None if inv is None else inv.numel()} frequencies, not int({head} x {factor}) / 2")
    return {"partial_absent": fallback, **({"partial_top": "merged"} if merged else {})}


def top_merged(text: Any, rp: dict) -> bool:
    """Whether the text config class, built with a top-level partial_rotary_factor beside per-type dicts that
    lack one, puts it in every type's dict (Step 3.5's; ZAYA's and MiMo-V2-Flash's keep theirs without)."""
    d = {k: v for k, v in text.to_dict().items() if k != "model_type"}
    stripped = {t: {k: v for k, v in r.items() if k != "partial_rotary_factor"} for t, r in rp.items()}
    built = type(text)(**{**d, "rope_parameters": stripped, "partial_rotary_factor": 0.3125})
    return all(isinstance(r, dict) and r.get("partial_rotary_factor") == 0.3125 for r in built.rope_parameters.values())


TURNED_FROM = ("default", "linear", "dynamic")  # the rope types a rope_reads key is probed beside (type_by_key)


def type_by_key(model_type: str, facts: dict, entry: dict) -> dict[str, dict[str, str]]:
    """{key: {a file's rope type: the vkrope rope type the model's code makes of it}} for each of the entry's
    rope_reads keys (read by the modeling file, not by from_hf) that a rope type only code makes reads
    (RopeType.in_files false: HunYuan's "dynamic" with alpha becomes its fixed-base ntk_alpha): probed with the
    key beside each of TURNED_FROM, kept where from_hf, told so, computes what the model did (those probes go
    into the golden). from_hf still refuses the key beside any other rope type."""
    out: dict[str, dict[str, str]] = {}
    rp = facts["text"].get("rope_parameters") or {}
    if not isinstance(rp, dict) or per_layer_type(rp):
        return out
    for key in entry.get("rope_reads", []):
        for to in (name for name, rule in RULES.items() if key in rule.params and not rule.in_files):
            for frm in TURNED_FROM:
                parts = {**rp, "rope_type": frm, key: 1000.0, **({"factor": 2.0} if frm != "default" else {})}
                again = ran(model_type, facts, [{"rope_parameters": parts}], True)
                if again is not None and check(model_type, again, {**entry, "type_by_key": {key: {frm: to}}}) is None:
                    out.setdefault(key, {})[frm] = to
                    CHANGED.setdefault(model_type, {})[f"{key}_{frm}"] = again
    return out


FILL_LAYERS = 512  # the most layers filled_sizes gives a layer_types list (llama.cpp's limit; defaults have fewer)


def filled_sizes(model_type: str) -> dict | None:
    """Overrides giving the default config the sizes its class leaves None and its model reads without a
    fallback (Ministral's and HunYuan's head_dim, Nemotron's num_key_value_heads, dots.llm1's expert counts,
    LFM2-MoE's layer_types: their code fails on the bare config, and their released files give them):
    head_dim hidden_size // num_attention_heads (SANE_HEAD where that does not divide), num_key_value_heads
    num_attention_heads, 2 for a None key naming experts (routed, shared, per token: a router's top-2 needs two;
    no RoPE reads them), layer_types all full attention; None where none is None. scripts/hf_config_rules.py
    probes such a type over the same fill (only where the bare model fails and the filled one runs), and
    from_hf refuses a file without those keys (absent_refused)."""
    from transformers import AutoConfig  # noqa: PLC0415

    text = AutoConfig.for_model(model_type).get_text_config(decoder=True)  # (text_rotary would build a model)
    heads, hidden = getattr(text, "num_attention_heads", None), getattr(text, "hidden_size", None)
    if not isinstance(heads, int) or not isinstance(hidden, int) or heads <= 0:
        return None
    over: dict[str, Any] = {}
    if getattr(text, "head_dim", 0) is None:
        over["head_dim"] = hidden // heads if hidden % heads == 0 else SANE_HEAD
    if getattr(text, "num_key_value_heads", 0) is None:
        over["num_key_value_heads"] = heads
    over.update({k: 2 for k, v in text.to_dict().items() if v is None and "expert" in k})
    layers = getattr(text, "num_hidden_layers", None)
    if getattr(text, "layer_types", 0) is None and isinstance(layers, int) and 0 < layers <= FILL_LAYERS:
        over["layer_types"] = ["full_attention"] * layers  # (LFM2-MoE's model indexes it; the table's probe of
        # each layer type, type_answers, then finds which rotate)
    return over or None


def section_of(model_type: str, rope: Any) -> Any:
    """A flat rope dict with the M-RoPE sections the text rotary module takes where the config gives none
    (Qwen2-VL's module defaults them; found with the default config's own sections taken out): what a
    probe of another width scales, and from_hf's sections where a file has none."""
    if not isinstance(rope, (dict, type(None))) or per_layer_type(rope) or "mrope_section" in (rope or {}):
        return rope
    text, cls = text_rotary(model_type)
    own = getattr(text, "rope_parameters", None)
    if isinstance(own, dict) and not per_layer_type(own):
        text.rope_parameters = {k: v for k, v in own.items() if k != "mrope_section"}
    try:
        section = getattr(cls(text), "mrope_section", None) if cls else None
    except Exception:  # noqa: BLE001  (a module that cannot be built from the default config: none)
        section = None
    return {**(rope or {}), "mrope_section": list(section)} if isinstance(section, (list, tuple)) else rope


def quotient_only(model_type: str, facts: dict, options: list, given: Any) -> list:
    """Where the default config gives head_dim as hidden_size // heads, ask the code whether it runs with
    another (2 D, M-RoPE sections doubled): Helium's o_proj and ESM-C's norms follow hidden_size, so it does not,
    and "quotient" replaces "head_dim" among the options (from_hf refuses another head_dim); else as they are."""
    hidden, heads = facts["text"].get("hidden_size"), facts["text"].get("num_attention_heads")
    if not (isinstance(hidden, int) and isinstance(heads, int) and heads > 0 and given == hidden // heads):
        return options
    rope = facts["text"].get("rope_parameters") or {}
    if ran(model_type, facts, with_sections({"head_dim": 2 * given}, section_of(model_type, rope), 2), True):
        return options
    return [("quotient" if h == "head_dim" else h, r) for h, r in options]


def reads_head_dim(model_type: str, facts: dict, options: list) -> list:
    """Where the default config leaves head_dim null (the attention then takes hidden_size // heads), ask the
    code whether it reads head_dim when one is given: probe with head_dim = 2 D (M-RoPE sections doubled). If
    it does, "head_dim" (falling back to hidden // heads as transformers does) replaces the bare quotient among
    the options; if its code runs with no such head_dim (OLMoE's q_norm spans hidden_size), or runs with M-RoPE
    sections of its width while the attention keeps D (GLM-4V's rotary module reads head_dim, its attention
    does not: the model runs only where the sections fit the module's width), "quotient": from_hf refuses a
    head_dim other than the quotient."""
    given = facts["text"].get("head_dim")
    if given is not None:
        return quotient_only(model_type, facts, options, given)
    if not any(h is None for h, _ in options):
        return options
    d = next(head_width(l, facts) for l in facts["layers"] if l["rotates"])
    rope = facts["text"].get("rope_parameters") or {}
    variants = with_sections({"head_dim": 2 * d}, section_of(model_type, rope), 2)
    again = ran(model_type, facts, variants, True)
    if again is None:
        return [("quotient" if h is None else h, r) for h, r in options]
    got = [head_width(l, again) for l in again.get("layers", []) if l["rotates"]]
    CHANGED.setdefault(model_type, {})["head_dim"] = again
    if got and got[0] == 2 * d:
        return [("head_dim" if h is None else h, r) for h, r in options]
    if got and got[0] == d and len(variants) == 2 and ran(model_type, facts, variants[:1], True) is not None:
        return [("quotient" if h is None else h, r) for h, r in options]  # (sections of 2 D's width were read;
        # where variants[0] ran, `again` is its probe, read back from --probes)
    return options


def reads_partial(model_type: str, facts: dict, options: list, key: Any = None) -> list:
    """Does the default rope type's rotary module read partial_rotary_factor? (Llama's and 143 other modeling
    files compute their own default frequencies over the whole head.) At the default factor of 1 "partial" and
    "whole" agree; probe with 0.5 (M-RoPE sections halved, then as they are): the rule that gives the probed
    width stays. Where the code runs neither, "partial_unprobed": from_hf refuses another factor (how the model
    would read it is unknown; its attention rotated whole heads)."""
    rp = facts["text"].get("rope_parameters")
    nested = per_layer_type(rp)
    mine = rp.get(key) if nested and isinstance(key, str) else rp  # (per layer type: that type's dict)
    if not isinstance(mine, dict) or mine.get("rope_type", "default") != "default" \
            or mine.get("partial_rotary_factor", 1.0) != 1.0 or not any(r == "whole" for _, r in options):
        return options
    half = {**rp, key: {**mine, "partial_rotary_factor": 0.5}} if nested else {**mine, "partial_rotary_factor": 0.5}
    again = ran(model_type, facts, with_sections({"rope_parameters": section_of(model_type, half)}, None, 0.5),
                not nested)
    got = [l for l in (again or {}).get("layers", []) if l["rotates"] and l["rope_key"] == key]
    if again is None or not got:
        return [(h, "partial_unprobed") for h, r in options if r == "partial"] or options
    CHANGED.setdefault(model_type, {})["partial_rotary_factor"] = again
    w = 2 * again["per_type"][got[0]["rope_key"]]["pv"][1].shape[-1]
    d = head_width(got[0], again)
    keep = "whole_default" if w == d else "partial"  # (other rope types: the library's functions read it)
    kept = [o for o in options if o[1] == "partial"]
    return [(h, keep) for h, _ in kept] or options


def _other_theta(rope: dict) -> dict | None:
    theta = rope.get("rope_theta")
    return {**rope, "rope_theta": 2.0 * theta} if isinstance(theta, (int, float)) and theta > 0 else None


# The keys of a rope dict that are its rope type's parameters (the rest: theta, lengths, M-RoPE sections,
# Ministral 3's llama_4_scaling_beta stay when a probe changes the type)
# A rope type's own keys: every key a rope type reads, less those read for any type.
TYPE_PARAMS = ("rope_type", "type", *sorted(PARAMS - COMMON_PARAMS))


def _linear(rope: dict) -> dict:
    return {**{k: v for k, v in rope.items() if k not in TYPE_PARAMS}, "rope_type": "linear", "factor": 2.0}


# The RoPE keys whose reading each table entry is checked for, each with the change a probe makes to a rope
# dict: the model's code reads it (as from_hf does), ignores it (GPT-J's and CodeGen's fixed base 10000 and no
# scaling), or reads it otherwise (from_hf refuses a value other than the class's; for a theta, also where the
# code did not run with another).
CHANGES = {"rope_theta": _other_theta, "rope_type": _linear}


def same_rotation(a: dict, b: dict) -> bool:
    """Whether two probes' rotary modules gave the same cos / sin for every rope layer type."""
    return a["per_type"].keys() == b["per_type"].keys() and all(
        np.array_equal(a["per_type"][k]["pv"][1], b["per_type"][k]["pv"][1])
        and np.array_equal(a["per_type"][k]["pv"][2], b["per_type"][k]["pv"][2]) for k in a["per_type"])


def read_default(model_type: str, facts: dict, entry: dict) -> dict:
    """{rope layer type or "*": {"rope_theta", "rope_type"}} as from_hf reads the default config (check() has
    held them to what the model did): the values a key the model ignores keeps."""
    import vkrope  # noqa: PLC0415

    install({model_type: entry})
    out = {}
    for key in entry["by_layer_type"]:
        r = vkrope.from_hf(config_of(model_type, facts, entry), layer_type=None if key == "*" else key,
                           part=angles_part(entry))
        out[key] = {"rope_theta": r.theta, "rope_type": r.rope_type,
                    "params": {k: list(v) if isinstance(v, tuple) else v for k, v in r.params
                               if k != "partial_rotary_factor"}}  # (as JSON keeps them)
    return out


def reads_rope(model_type: str, facts: dict, entry: dict) -> tuple[list[str], dict[str, str], dict]:
    """(keys the model's code ignores, {key: why from_hf refuses another value}, read_default) of CHANGES, each
    found by probing the model with the key changed and checking from_hf's reading of that config against it."""
    fixed = read_default(model_type, facts, entry)
    rp = facts["text"].get("rope_parameters") or ({"rope_type": fixed["*"]["rope_type"],
                                                    "rope_theta": fixed["*"]["rope_theta"]} if "*" in fixed else {})
    nested = per_layer_type(rp)
    ignores, refuses = [], {}
    for key, change in CHANGES.items():
        parts = {k: change(v) for k, v in rp.items()} if nested else change(rp) if rp else None
        if parts is None or (nested and any(v is None for v in parts.values())):
            refuses[key] = "the model table could not probe another value"
            continue
        again = ran(model_type, facts, [{"rope_parameters": parts}], not nested)
        if again is None:  # (Gemma 4's full layers run no rope type but their own: its partial cos spans the head)
            if not vkrope_refuses(model_type, facts, entry, parts):  # (PhiMoE's class refuses linear: so does vkrope)
                refuses[key] = "transformers' code did not run with another value when the model table was made"
            continue
        CHANGED.setdefault(model_type, {})[key] = again
        why = check(model_type, again, entry)
        if why is None or why.startswith("from_hf: "):  # (read alike, or refused by vkrope already)
            continue
        told = {**entry, "ignores": [key], "fixed": fixed}
        if same_rotation(facts, again) and not fixed.get("*", {}).get("params") \
                and check(model_type, again, told) is None:
            ignores.append(key)  # (and from_hf, told so, computes what the model did)
        else:
            refuses[key] = f"transformers' code reads it otherwise than vkrope ({why})"
    install({model_type: entry})
    return ignores, refuses, fixed


def reads_switches(model_type: str, facts: dict, entry: dict) -> dict[str, dict]:
    """{key: {"value", "then"}} of the default config's true / false keys whose other value stops the model
    rotating ("then": "none", Falcon's alibi) or makes it rotate otherwise than from_hf reads ("refused"),
    found by probing each flipped (a flip the code does not run with is passed over: it says nothing of RoPE);
    and rope_theta null where the model then rotates nothing (OLMo hybrid's)."""
    out = {}
    base = facts.get("overrides", {})
    rotating = meta_probe("calls", model_type, base)
    rope = facts["text"].get("rope_parameters")
    if rotating and isinstance(rope, dict) and not per_layer_type(rope) and "rope_theta" in rope \
            and meta_probe("calls", model_type, {**base, "rope_parameters": {**rope, "rope_theta": None}}) == 0:
        out["rope_theta"] = {"value": None, "then": "none"}  # (a null theta switches RoPE off: OLMo hybrid's
        # released files; the other models' code fails on one)
    for key, value in sorted(facts["text"].items()):
        if not isinstance(value, bool):
            continue
        if rotating and meta_probe("calls", model_type, {**base, key: not value}) == 0:
            out[key] = {"value": not value, "then": "none"}  # (the model switches RoPE off: Falcon's alibi)
            continue
        try:
            again = probe(model_type, {**base, key: not value}, first_only=True)
        except Exception:  # noqa: BLE001
            continue
        if "why" in again or "error" in again or "layers" not in again:
            continue
        why = check(model_type, again, entry)
        if why is not None and not why.startswith("from_hf: "):
            out[key] = {"value": not value, "then": "refused"}
            print(f"  {model_type}: {key}={not value} read otherwise ({why}): refused", flush=True)
    install({model_type: entry})
    return out


def model_level(model_type: str, facts: dict, entry: dict) -> tuple[str | None, list[str]]:
    """(why the type is refused, or None; its per-layer keys) from what its whole model passes each attention
    (hf_probe.passed_rope, on the meta device): a layer it passes no position embeddings where from_hf would
    rotate (Muse Spark's zero layer_rope_theta, Lara's global layers) is a rule vkrope does not read; a list of
    one value per layer whose first value set to 0 stops the first layer's RoPE (Granite SWA's
    layer_rope_theta) decides RoPE per layer: from_hf refuses one that is not the theta it reads throughout."""
    import vkrope  # noqa: PLC0415

    base = facts.get("overrides", {})
    passed = rotary_passed(model_type, base)
    if not passed:
        return None, []
    install({model_type: entry})
    layers = vkrope.hf_layers(config_of(model_type, facts, entry), part=angles_part(entry))
    unread = [i for i, p in sorted(passed.items()) if not p and i < len(layers) and layers[i] is not None]
    if unread:
        return (f"its model passes no RoPE to layers {unread[:6]} where their attention would rotate (a per-layer "
                "rule vkrope does not read)"), []
    n = len(layers)
    keys = []
    for key, value in sorted(facts["text"].items()):
        if isinstance(value, list) and len(value) == n and value and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in value):
            again = rotary_passed(model_type, {**base, key: [0] + list(value[1:])})
            if again and not again.get(min(again), True):
                keys.append(key)
    return None, keys


def rotary_passed(model_type: str, overrides: dict) -> dict[int, bool] | None:
    """{layer index: passed position embeddings} of meta_probe("passed", ...)."""
    got = meta_probe("passed", model_type, overrides)
    return None if got is None else {int(k): v for k, v in got.items()}


def refuse_unread(model_type: str, entry: dict) -> None:
    """Where from_hf reads a changed head_dim or partial factor otherwise than the model did (GPT-NeoX's
    rotary module reads head_dim, its attention does not; GPT-NeoX-Japanese's attention names its width
    head_size), refuse that key rather than keep a rule the default config could not tell apart."""
    for name, rule in (("head_dim", ("head_dim", "quotient")),
                       ("partial_rotary_factor", ("rotary", "partial_unprobed"))):
        again = CHANGED.get(model_type, {}).get(name)
        why = None if again is None else check(model_type, again, entry)
        if why is None or why.startswith("from_hf: "):
            continue
        field, value = rule
        for shape in entry["by_layer_type"].values():
            if field == "head_dim" and shape["head_dim"] not in (None, "head_dim"):
                continue  # (a key of its own, MLA's qk_rope_head_dim: not what the probe changed)
            shape[field] = value
        print(f"  {model_type}: a changed {name} read otherwise ({why}): refused", flush=True)


def parts_refused(rotating: list[dict]) -> str | None:
    """Why a model type whose layers rotate two ways is refused, or None (also where they rotate one way): vkrope
    reads parts alike on every layer that differ in their pairs only (the same angles, width and sign:
    DeepSeek-V3.2's indexer and attention)."""
    parted = [l for l in rotating if l.get("parts")]  # (a layer running only its attention: GLM-5's shared
    # indexer layers, which the part's `runs` rule must then say, or check() refuses the model type)
    kinds = {json.dumps(l["parts"], sort_keys=True) for l in parted}
    if len(kinds) > 1:
        return f"its layers' parts rotate in {len(kinds)} ways ({sorted(kinds)})"
    parts = parted[0]["parts"] if parted else None
    if not parts:
        return None
    parts = {p: v for p, v in parts.items() if v["pairs"] != "unknown"}  # (from_hf refuses those by name)
    if len({(v["sign"], v["head_dim"]) for v in parts.values()}) != 1 or parts["attention"]["sign"] != 1:
        return f"its layers' parts rotate different widths or signs ({parts}): vkrope reads parts that differ " \
               "in their pairs only"
    return None


def part_entries(model_type: str, facts: dict, rotating: list[dict], text_cls: Any) -> dict:
    """{"parts": ...} where the first rotating layer with parts rotates in them ({} where none does): each
    one's pairs, and for a part whose module has
    heads of its own (the indexer's index_head_dim, its first channels rotating), the config key holding their
    width and its class default (from_hf refuses a rotated width past it, which the part cannot split); for
    a part some layers do not run, the rule saying which (`runs`: hf_part_layers.py; its probe kept in the
    golden under the rule's key)."""
    import hf_part_layers  # noqa: PLC0415

    layer = next((l for l in rotating if l.get("parts")), None)
    if layer is None:
        return {}
    out: dict[str, dict] = {}
    for part, v in sorted(layer["parts"].items()):
        out[part] = {"pairs": v["pairs"]}
        if part == "attention" or v["pairs"] == "unknown":
            continue
        key = part_head_key(model_type, facts, layer["index"], part, v["width"])
        if key is not None:
            out[part].update(head_key=key, head_default=facts["text"][key])
        # (where in its heads it rotates: the offset its q was found at in the part's projection, hf_probe.rotated_at)
        out[part]["at"] = {v["width"] - v["head_dim"]: "end", 0: "start"}.get(v.get("at"), "unknown") \
            if isinstance(v["width"], int) and v.get("at") is not None else "unknown"
        runs = hf_part_layers.runs_rule(model_type, facts, part, text_cls, probe)
        if runs is not None:
            out[part]["runs"] = runs[0]
            if runs[1] is not facts:
                CHANGED.setdefault(model_type, {})[runs[0]["key"]] = runs[1]
    return {"parts": out}


def part_head_key(model_type: str, facts: dict, index: int, part: str, width: Any) -> str | None:
    """The text config key that sets a part module's head_dim (DeepSeek-V3.2's indexer: index_head_dim): of the
    keys holding that width, the one whose change alone moves it, the model built on the meta device with each
    changed; None where no key or several do."""
    import hf_probe  # noqa: PLC0415

    if not isinstance(width, int) or isinstance(width, bool):
        return None
    found = []
    for key, value in sorted(facts["text"].items()):
        if value != width or isinstance(value, bool) or not isinstance(value, int):
            continue
        built = hf_probe.meta_model(model_type, {**facts.get("overrides", {}), key: width + 2})
        if built is None:
            continue
        attns = {i: a for i, _, a in hf_probe.attention_modules(built[0])}
        module = attns[index].get_submodule(part) if index in attns else None
        if getattr(module, "head_dim", None) == width + 2:
            found.append(key)
    return found[0] if len(found) == 1 else None


def probe_refusal(facts: dict) -> str | None:
    """Why a probe's facts alone refuse its model type (what it could not verify, a rotary module whose weights
    decide its frequencies, several attention stacks), or None."""
    if "why" in facts:
        return f"not verified: {facts['why']}"
    if facts.get("learned"):  # (a module whose frequencies its weights scale: Mistral Large 3's LeRoPE alpha)
        return f"its rotary module holds learned parameters ({', '.join(facts['learned'])}), loaded with the " \
               "model's weights: its frequencies depend on them, which a config does not hold"
    if len({l["index"] for l in facts["layers"]}) != len(facts["layers"]):
        return "several attention stacks (an encoder and a decoder): which one a config's RoPE serves is not one " \
               "question"
    return None


def build(model_type: str, facts: dict, text_cls: Any) -> dict:
    """The table entry of one model type from its probe (see the module docstring)."""
    if "error" in facts:
        return {"rope": None, "status": f"transformers' code could not be probed ({facts['error'][:200]})"}
    if facts.get("rope") is False:
        return {"rope": False}
    if facts.get("rope") is None:
        return {"rope": None, "status": f"transformers' code could not be probed ({facts.get('why')})"}
    entry: dict[str, Any] = {"rope": True, "text_config": facts["text_config"]}
    why = probe_refusal(facts)
    if why:
        return {**entry, "status": why}
    rotating = [l for l in facts["layers"] if l["rotates"]]
    kinds = {(l["pairs"], l["sign"]) for l in rotating}
    if len(kinds) != 1:
        return {**entry, "status": f"its layers rotate in {len(kinds)} ways ({sorted(kinds)})"}
    (pairs, sign), = kinds
    why = parts_refused(rotating)
    if why:
        return {**entry, "status": why}
    entry.update(part_entries(model_type, facts, rotating, text_cls))  # (DeepSeek-V3.2's indexer rotate-half
    # beside its attention: part=)
    layouts = {facts["per_type"][l["rope_key"]]["pv"][0] for l in rotating}
    entry.update(pairs=pairs, sign=sign, cos_layout=sorted(layouts)[0],
                 aliases={a: k for a, k in getattr(text_cls, "attribute_map", {}).items()},
                 defaults=defaults_of(text_cls, facts["text"]), by_layer_type={},
                 per_layer_keys=per_layer_keys(text_cls, facts["text"]))
    entry.update(readonly_keys(text_cls, entry["aliases"]), **({"alias_fields": alias_fields(text_cls)}
                                                                if alias_fields(text_cls) else {}))
    if len(layouts) != 1:
        return {**entry, "status": f"its rotary module returns cos / sin in {len(layouts)} layouts"}
    if sign != 1:
        return {**entry, "status": "its attention rotates by -theta (rotate_half as cat(x2, -x1)); vkrope's "
                                   "kernels rotate by +theta"}
    facts["aliases"] = entry["aliases"]
    own = own_rope_reads(model_type)
    if own:
        entry["rope_reads"] = own
    entry["mrope"] = mrope_layout(model_type, entry["cos_layout"], facts.get("overrides"))
    if entry["mrope"] in MROPE_LAYOUTS:  # (the sections its module takes where a config has none)
        entry["mrope_section"] = section_of(model_type, {}).get("mrope_section")
    rule, why = nope_rule(model_type, facts)
    if why:
        return {**entry, "status": why}
    entry["nope"] = rule
    entry.update(partial_absent(model_type, facts), **per_type_view(model_type), **per_layer_model(model_type))
    keys = sorted({l["rope_key"] for l in rotating}, key=str)
    options = [candidates(facts, k) for k in keys]
    reason = "no head-dim key holds the width its attention rotates"
    options = [reads_head_dim(model_type, facts, opts) for opts in options]
    options = [reads_partial(model_type, facts, opts, k) for opts, k in zip(options, keys)]
    for combo in itertools.product(*options):
        entry["by_layer_type"] = {("*" if k is None else k): {"head_dim": h, "rotary": r}
                                  for k, (h, r) in zip(keys, combo)}
        entry["status"] = "ok"
        reason = check(model_type, facts, entry)
        if reason is None:
            ignores, refuses, fixed = reads_rope(model_type, facts, entry)
            if ignores or refuses:
                entry.update(ignores=ignores, refuses=refuses, fixed=fixed)
            refuse_unread(model_type, entry)
            switches = reads_switches(model_type, facts, entry)
            if switches:
                entry["switches"] = switches
            why, layer_keys = model_level(model_type, facts, entry)
            if why:
                entry["status"] = why
                return entry
            if layer_keys:
                entry["layer_keys"] = layer_keys
            changed = CHANGED.get(model_type, {})
            for name in list(changed):
                if check(model_type, changed[name], entry) is not None:
                    del changed[name]  # (now refused by from_hf: kept out of the golden)
            turns = type_by_key(model_type, facts, entry)
            if turns:
                entry["type_by_key"] = turns
            return entry
    entry["status"] = f"vkrope's reading differs from the model's: {reason}"
    return entry


def golden(model_type: str, facts: dict, out: dict, entry: dict, change: str | None = None,
           base: dict | None = None) -> None:
    """The arrays the suite checks an ok model type against (tests/models/test_hf_models.py), `entry` its table
    entry; `change`: of a probe with one RoPE key changed, under "type@change/" (its config as the keys that
    differ from `base`'s, the default probe's; its angles only: the attention's pairs are the default config's)."""
    name = model_type if change is None else f"{model_type}@{change}"
    if change is None:
        out[f"{name}/config"] = np.array(json.dumps(facts["text"], default=str))  # (its own model_type)
    else:
        text, was = facts["text"], (base or {})["text"]
        out[f"{name}/changes"] = np.array(json.dumps({k: v for k, v in text.items() if was.get(k) != v}, default=str))
    layers = sorted(facts["layers"], key=lambda l: l["index"])
    if change is None or change == (entry.get("nope") or {}).get("key"):  # (a probe of the rule's own key: Mllama's
        out[f"{name}/rotates"] = np.array(rotating_pattern(facts))  # cross_attention_layers moved, indices_rule)
    for part, v in (entry.get("parts") or {}).items():  # (which layers ran a part its `runs` rule says: GLM-5's
        if v.get("runs") and change in (None, v["runs"]["key"]):  # indexer, on its full layers only)
            out[f"{name}/runs#{part}"] = np.array([l["rotates"] and part in (l.get("parts") or {}) for l in layers])
    if change is None:
        if facts.get("type_answers"):  # per layer type, whether a layer of it rotated (None: the model failed)
            out[f"{name}/layer_types"] = np.array(json.dumps(facts["type_answers"], sort_keys=True))
    for key, pt in facts["per_type"].items():
        ex = pt.get("example")
        if ex is None:
            continue
        examples = pt["part_examples"] if entry.get("parts") and change is None else {"": ex}
        for part, ex in examples.items():  # (each part under "type/key#part/": its own rotation, the same angles)
            golden_case(out, f"{name}/{'*' if key is None else key}" + (f"#{part}" if part else ""), key, pt, ex,
                        facts, entry, change)


def golden_case(out: dict, g: str, key: Any, pt: dict, ex: dict, facts: dict, entry: dict,
                change: str | None) -> None:
    """golden()'s arrays of one rope layer type (and part) into `out`, under `g`."""
    layers = sorted(facts["layers"], key=lambda l: l["index"])
    first = next(l["index"] for l in layers if l["rotates"] and l["rope_key"] == key)
    head_axis = 3 - ex["token_axis"]
    keep = [slice(None)] * 4
    keep[head_axis] = slice(0, 2)
    out[g + "/layer"] = np.array(first)
    out[g + "/pos"] = facts.get("pos", OLD_POS)
    out[g + "/cos"], out[g + "/sin"] = pt["pv"][1].astype(np.float32), pt["pv"][2].astype(np.float32)
    out[g + "/scaling"] = np.array(pt["scaling"])
    if pt["inv_freq"] is not None:
        out[g + "/inv_freq"] = np.asarray(module_inv(pt, facts, entry), np.float32)
    if change is not None:
        return
    q_in, q_out = ex["q_in"][tuple(keep)], ex["q_out"][tuple(keep)]
    width = head_width(next(l for l in layers if l["index"] == first), facts)
    if q_in.shape[-1] < width:  # the attention rotated a slice: the rest of the head passes through
        rest = np.random.default_rng(width).standard_normal(q_in.shape[:-1] + (width - q_in.shape[-1],))
        q_in, q_out = np.concatenate([q_in, rest], -1), np.concatenate([q_out, rest], -1)
    out[g + "/q_in"], out[g + "/q_out"] = q_in.astype(np.float32), q_out.astype(np.float32)
    out[g + "/token_axis"] = np.array(ex["token_axis"])
    parted = next((l["parts"][ex["part"]] for l in layers if (l.get("parts") or {}).get(ex["part"], {}).get("at")
                   is not None), None) if ex.get("part", "attention") != "attention" else None
    if parted is not None:  # (a part's own heads: the channel its q started at in them, and their width)
        out[g + "/at"], out[g + "/part_width"] = np.array(parted["at"]), np.array(parted["width"])


def first_probe(model_type: str, path: str) -> dict:
    """hf_probe.probe of the default config (its error where it fails), kept at `path` when it ran."""
    import hf_probe  # noqa: PLC0415

    try:
        facts = hf_probe.probe(model_type)
    except Exception as exc:  # noqa: BLE001  (the table says why)
        facts = {"model_type": model_type, "error": f"{type(exc).__name__}: {exc}"}
        over = spanning_partial(model_type) or filled_sizes(model_type)
        if over:  # (its default M-RoPE sections do not span the default head, and its code fails on them:
            # GLM-4V's [8, 12, 12] span the half its released files rotate; or its head sizes are None)
            try:
                facts = {**hf_probe.probe(model_type, over), "overrides": over}
            except Exception:  # noqa: BLE001  (the first failure is the one the table says)
                pass
    if path and "error" not in facts:  # (kept for the next run, as hf_probe.py DIR keeps them; not a failure,
        # which may be passing: kernels' wrapping once failed every probe)
        with open(path, "wb") as f:
            pickle.dump(facts, f)
    return facts


def main() -> None:
    import warnings  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--probes", help="a folder of probe pickles to reuse (python scripts/hf_probe.py DIR writes "
                                     "them; the probes are most of the run)")
    ap.add_argument("--only", nargs="*", help="these model types only (printed, nothing written)")
    ap.add_argument("--cached-only", action="store_true", help="only the model types --probes has")
    ap.add_argument("--update", nargs="+", metavar="TYPE", help="probe these model types again and write them into "
                                                                "the committed table and golden (the same "
                                                                "transformers version)")
    ap.add_argument("--shard", metavar="I/N", help="every N-th model type from the I-th (0-based), written beside "
                                                   "the outputs as .I; --merge N joins them")
    ap.add_argument("--merge", type=int, metavar="N", help="join the N shards' outputs into the table and golden")
    args = ap.parse_args()
    global CACHE
    CACHE = args.probes
    if args.merge:
        return merge(args.merge)
    warnings.filterwarnings("ignore")
    import transformers  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES  # noqa: PLC0415

    models: dict[str, dict] = {}
    gold: dict[str, np.ndarray] = {}
    types = args.only or args.update or sorted(CONFIG_MAPPING_NAMES)
    if args.shard:
        i, n = (int(v) for v in args.shard.split("/"))
        types = types[i::n]
    for t in types:
        path = os.path.join(args.probes, t + ".pkl") if args.probes else ""
        if path and os.path.exists(path):
            with open(path, "rb") as f:
                facts = pickle.load(f)
        elif args.cached_only:
            continue
        else:
            facts = first_probe(t, path)
        text = facts.get("text") or {}
        hid, nh = text.get("hidden_size"), text.get("num_attention_heads")
        if text.get("head_dim") is None and isinstance(hid, int) and isinstance(nh, int) and nh and hid % nh:
            # the class's default config is degenerate (GLM-4-MoE: 4096 / 96 heads): probe a sane one
            facts = {**probe(t, {"head_dim": SANE_HEAD}), "overrides": {"head_dim": SANE_HEAD}}  # (kept in the probes)
        cover = covering_types(facts)
        if cover:  # (a RoPE per layer type its default layers do not all use: probed on layers that do)
            over = {**facts.get("overrides", {}), **cover}
            facts = {**probe(t, over), "overrides": over}
        try:
            text_cls = type(AutoConfig.for_model(t).get_text_config(decoder=True))
        except Exception:  # noqa: BLE001
            text_cls = None
        e = build(t, facts, text_cls)
        models[t] = e
        if e.get("status") == "ok":
            golden(t, facts, gold, e)
            for change, again in CHANGED.get(t, {}).items():
                golden(t, again, gold, e, change, facts)
        if args.only or e.get("rope") is not False:
            print(t, e.get("status", "no rope"), flush=True)
    if args.only:
        return
    if args.update:
        return update(models, gold, transformers.__version__)
    if args.shard:
        with open(f"{TABLE}.{i}", "w", encoding="utf-8") as f:
            json.dump({"transformers": transformers.__version__, "models": models}, f)
        np.savez_compressed(f"{GOLDEN}.{i}.npz", **gold)
        return
    write(models, gold, transformers.__version__)


def update(models: dict, gold: dict, version: str) -> None:
    """The committed table and golden with these model types' entries and arrays replaced (those of a run of
    the same transformers version: a full run gives the other types' as they are)."""
    with open(TABLE, encoding="utf-8") as f:
        table = json.load(f)
    if table["transformers"] != version:
        raise SystemExit(f"the table is transformers {table['transformers']}'s, this is {version}: run it whole")
    with np.load(GOLDEN) as z:
        kept = {k: z[k] for k in z.files if not any(k.startswith((t + "/", t + "@")) for t in models)}
    write({**table["models"], **models}, {**kept, **gold}, version)


def merge(n: int) -> None:
    """Join the outputs of --shard 0/n ... n-1/n (and remove them)."""
    models: dict = {}
    gold: dict = {}
    version = ""
    for i in range(n):
        with open(f"{TABLE}.{i}", encoding="utf-8") as f:
            part = json.load(f)
        models.update(part["models"])
        version = part["transformers"]
        with np.load(f"{GOLDEN}.{i}.npz") as z:
            gold.update({k: z[k] for k in z.files})
    write(models, gold, version)
    for i in range(n):
        os.remove(f"{TABLE}.{i}")
        os.remove(f"{GOLDEN}.{i}.npz")


def write(models: dict, gold: dict, version: str) -> None:
    """The table (sorted, stable) and the golden."""
    table = {"generated_by": "scripts/hf_model_table.py", "transformers": version, "models": models}
    os.makedirs(os.path.dirname(TABLE), exist_ok=True)
    with open(TABLE, "w", encoding="utf-8") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.write("\n")
    np.savez_compressed(GOLDEN, **gold)
    import models_md  # noqa: PLC0415  (the README's table of models follows the table)

    with open(models_md.CONVERT, encoding="utf-8") as g, open(models_md.ARCHS, encoding="utf-8") as h:
        converter = models_md.render_converter(json.load(g), json.load(h)["archs"])
    with open(models_md.OUT, "w", encoding="utf-8") as f:  # (the whole page, as models_md.py writes it)
        f.write(models_md.render(table) + converter)
    ok = sum(e.get("status") == "ok" for e in models.values())
    print(f"{len(models)} model types: {ok} ok, {sum(e.get('rope') is False for e in models.values())} without "
          f"RoPE, {len(models) - ok - sum(e.get('rope') is False for e in models.values())} refused")



def mrope_axes(section: list, half: int) -> dict[str, np.ndarray]:
    """Each M-RoPE layout's position axis per pair, for the sections as the rotary module holds them: "chunked"
    (Qwen2-VL: runs of s0, s1, s2 pairs), "interleaved" (Qwen3-VL: height every third pair from 1 below 3 s1,
    width from 2 below 3 s2, time the rest), "alternating" (ERNIE 4.5 VL, sections [height, width, time]:
    height and width on alternate pairs below s0 + s1, time the rest): vkrope's MROPE_LAYOUTS, each (a layout
    the table finds is one from_hf reads; the sections in the module's order, not ModelRope's)."""
    axes = {"chunked": np.repeat(np.arange(3), section)[:half],
            "interleaved": np.array([1 if j % 3 == 1 and j < 3 * section[1] else 2 if j % 3 == 2 and j < 3 * section[2]
                                     else 0 for j in range(half)]),
            "alternating": np.array([1 + j % 2 if j < section[0] + section[1] else 0 for j in range(half)])}
    assert tuple(axes) == MROPE_LAYOUTS, (tuple(axes), MROPE_LAYOUTS)
    return axes


def pair_order_inv(layout: str | None, inv: np.ndarray, section: list | None) -> np.ndarray:
    """The rotary module's inverse frequencies in pair order: ERNIE 4.5 VL's module keeps them pre-rotated (the
    height pairs' below s0, then the width pairs', then time's), and recomposes its cos / sin into pair order."""
    if layout != "alternating" or inv is None or section is None:
        return inv
    hw = section[0] + section[1]
    out = np.array(inv, copy=True)
    out[0:hw:2], out[1:hw:2] = inv[:section[0]], inv[section[0]:hw]
    return out


def module_inv(pt: dict, facts: dict, entry: dict) -> np.ndarray | None:
    """A probe's rotary module's inverse frequencies in pair order (as its pairs turn), under the probed
    config's sections or, where it gives none, the module's own (the table's)."""
    rp = facts["text"].get("rope_parameters")
    section = (rp.get("mrope_section") if isinstance(rp, dict) else None) or entry.get("mrope_section")
    return pair_order_inv(entry.get("mrope"), pt["inv_freq"], section)


def mrope_layout(model_type: str, cos_layout: str = "halves", overrides: dict | None = None) -> str | None:
    """How the text rotary module spreads M-RoPE's three position axes over the pairs, by running it at
    positions whose axes differ (and at each axis's positions alone): one of `mrope_axes`' layouts, None where
    it takes one axis, "unknown" where none fits (from_hf then refuses M-RoPE for the type). `cos_layout`: where
    its cos holds each pair's value (GLM's "repeated" twice in a row, read at the even columns); `overrides`:
    the probe's, set on the default text config first (GLM-4V's partial factor)."""
    import hf_probe  # noqa: PLC0415
    import torch  # noqa: PLC0415

    text, cls = text_rotary(model_type)
    if cls is None:
        return None
    for key, value in (overrides or {}).items():
        setattr(text, key, value)
    pos = hf_probe.POS
    pos3 = torch.stack([pos, pos * 2 + 5, pos * 3 + 7])  # [3, 1, S]
    try:
        rot = cls(text)
        cos3, _ = hf_probe.as_pair(rot(torch.zeros(1, 1), pos3))
        cos1, _ = hf_probe.as_pair(rot(torch.zeros(1, 1), pos))
        each = [hf_probe.as_pair(rot(torch.zeros(1, 1), row))[0] for row in pos3]  # (one axis's positions)
    except Exception:  # noqa: BLE001  (a module that takes one axis only, or a default config it cannot run)
        return "unknown" if "mrope" in json.dumps(text.to_dict(), default=str) else None
    if cos3.shape != cos1.shape:  # (one axis: the three rows read as a batch)
        return None
    rp = getattr(text, "rope_parameters", None) or {}
    section = (rp.get("mrope_section") if isinstance(rp, dict) else None) or getattr(rot, "mrope_section", None)
    if torch.equal(cos3, cos1) or not section:
        return None if torch.equal(cos3, cos1) else "unknown"
    half = rot.inv_freq.numel()

    def pairs(c: Any) -> np.ndarray:  # (each pair's cos, [S, half])
        c = c[0].double().numpy()
        return (c[:, 0::2] if cos_layout == "repeated" else c)[:, :half]

    got, alone = pairs(cos3), np.stack([pairs(c) for c in each])  # alone: [3, S, half]
    for name, ax in mrope_axes(list(section), half).items():
        # (each pair turns as its axis's positions alone turn it: whatever order the module keeps its
        # frequencies in, ERNIE's pre-rotated ones too)
        if ax.size == half and np.abs(got - alone[ax, :, np.arange(half)].T).max() < 1e-6:
            return name
    return "unknown"


if __name__ == "__main__":
    main()

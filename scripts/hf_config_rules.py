"""Regenerate vkrope/data/hf_config_rules.json (how each model type's config
class turns a config.json's RoPE keys into what its model reads; see
vkrope/models/config_rules.py) from transformers' own config classes.

    python scripts/hf_config_rules.py [--only TYPE ... | --update TYPE ...]

Needs the transformers release vkrope/data/hf_models.json names (its `transformers`)
(config classes; torch only to run the text rotary module of the few
models whose attention rotates a key of its own, `measure_width`), in a
venv of its own; vkrope is imported
from this checkout. For each model type of the model table:

- a composite config (the table's `text_config` path is not empty) is
  built with a sentinel `rope_theta` at the top beside a `text_config`:
  whether the sentinel reaches the language model's config;
  and with each RoPE and head-size key (MOVED) at each depth of the path
  where a file may stop (a flat Hub file; ColQwen2's vlm_config alone):
  which keys the classes carry into the language model's config (`moves`;
  the golden keeps what they made of each RoPE key there);
- a class with RoPE per layer type is built on probe configs, one key at a
  time (each theta-like key its source names, `rope_scaling`, a layer type
  left out), flat and nested, and the rules read off what it made.

Then the rules are checked: on a set of configs mixing those keys,
`config_rules.per_type_rope` must give what the class gives (rope_type,
rope_theta, factor, partial_rotary_factor) or refuse where the class
raises; a model type whose rules fail that keeps none (vkrope then refuses
its configs' RoPE keys) and says why.
"""

from __future__ import annotations

import argparse
import ast
import copy
import dataclasses
import functools
import gzip
import inspect
import itertools
import json
import math
import os
import random
import re
import sys
import warnings
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
MODELS = os.path.join(ROOT, "vkrope", "data", "hf_models.json")
OUT = os.path.join(ROOT, "vkrope", "data", "hf_config_rules.json")
GOLDEN = os.path.join(ROOT, "tests", "data", "hf_config_golden.json.gz")
from vkrope.models import config_checks, config_rules, config_shapes, hf  # noqa: E402
from vkrope.models.rope import MROPE_LAYOUTS  # noqa: E402
from vkrope.models.rope_types import PARAMS, RULES, read_by  # noqa: E402
sys.path.insert(0, HERE)
from hf_model_table import DEFAULT_KEYS  # noqa: E402  (the keys from_hf reads)
import hf_key_probes as kp  # noqa: E402
SCALING = {"rope_type": "linear", "factor": 3.25}
COMPARED = ("rope_type", "rope_theta", "factor", "partial_rotary_factor")
# the rope types check_rules gives without the original length they read (type_needs), with what else they need
NEEDS_PROBES = {"yarn": {"factor": 2.0}, "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}}


def sentinel(i: int) -> float:
    """A theta no class has as a default."""
    return 1000.5 + 17.0 * i


def rope_of(cls: Any, kw: dict) -> dict:
    """The rope_parameters the config class makes of keyword arguments `kw` (a config.json's keys)."""
    return copy.deepcopy(cls(**copy.deepcopy(kw)).rope_parameters)


def theta_candidates(cls: Any) -> list[str]:
    """The theta-like keys the class's module names (rope_theta, rope_local_base_freq, global_rope_theta, ...)."""
    src = inspect.getsource(sys.modules[cls.__module__])
    found = set(re.findall(r"[\"'](\w*(?:theta|base_freq|rope_base|emb_base)\w*)[\"']", src)) | {"rope_theta"}
    return sorted(found - {"default_theta"})


def measure_shape(cls: Any, lts: list[str], d0: dict, nested: bool, keys: list[str]) -> dict[str, Any]:
    """Per layer type, the rule of one shape of the file's keys (None: the class raises on it)."""
    base = {"rope_parameters": {lt: {"rope_type": "default"} for lt in lts}} if nested else {}
    try:
        plain = rope_of(cls, base)
    except Exception:  # noqa: BLE001  (the class fails on this shape)
        return {lt: None for lt in lts}
    by_key, raises_on = {}, []
    for i, key in enumerate(keys):
        try:
            by_key[key] = rope_of(cls, {**base, key: sentinel(i)})
        except Exception:  # noqa: BLE001
            raises_on.append(key)
            continue
        if not per_type(by_key[key], lts):
            raises_on.append(key)
    try:
        scaled = rope_of(cls, {**base, "rope_scaling": dict(SCALING)})
    except Exception:  # noqa: BLE001
        scaled = None
    if scaled is not None and not per_type(scaled, lts):
        scaled = None  # (rope_scaling replaced the per-type dict: the model would fail on it)
    out: dict[str, Any] = {}
    for lt in lts:
        thetas = [k for i, k in enumerate(keys) if k in by_key
                  and (by_key[k].get(lt) or {}).get("rope_theta") == sentinel(i)]
        rule = {"theta": thetas[0] if len(thetas) == 1 else None,
                "theta_default": (plain.get(lt) or {}).get("rope_theta") == d0[lt].get("rope_theta"),
                "scaling": None if scaled is None else scaled[lt].get("factor") == SCALING["factor"],
                "raises_on": raises_on}
        if len(thetas) > 1:
            rule["theta"] = "ambiguous: " + ", ".join(thetas)
        needs = type_needs(cls, lts, lt, nested)
        if needs:
            rule["needs"] = needs
        if nested:
            rule["fill"] = sorted(k for k, v in d0[lt].items()
                                  if k not in ("rope_type", "rope_theta") and (plain.get(lt) or {}).get(k) == v)
            others = {o: {"rope_type": "default"} for o in lts if o != lt}
            try:
                left_out = rope_of(cls, {"rope_parameters": others})
                rule["fill_missing"] = (left_out.get(lt) or {}).get("rope_type") == "default"
            except Exception:  # noqa: BLE001
                rule["fill_missing"] = False
        out[lt] = rule
    return out


def type_needs(cls: Any, lts: list[str], lt: str, nested: bool) -> dict[str, list[str]]:
    """{rope type: the keys layer type `lt`'s rope dict must give for the class to build it} in one shape of
    the file's keys (`nested`: rope_parameters per layer type, `lt`'s of that type, the others default; flat:
    rope_scaling), each type with the parameters it needs (type_probes); types the class takes in neither
    form say nothing. Step 3.5's class raises on a flat yarn without its original length, where its nested
    dict is filled from max_position_embeddings."""
    def takes(params: dict) -> bool:
        if nested:
            kw: dict = {"rope_parameters": {o: ({"rope_type": kind, "rope_theta": 10000.0, **params} if o == lt
                                                else {"rope_type": "default", "rope_theta": 10000.0})
                                            for o in lts}}
        else:
            kw = {"rope_scaling": {"rope_type": kind, **params}}
        try:
            return per_type(rope_of(cls, kw), lts)
        except Exception:  # noqa: BLE001
            return False

    out = {}
    for kind, params in type_probes(cls).items():
        if not takes(params):
            continue  # (refused given whole, or not merged into this layer type: the shape's other rules)
        needs = [k for k in params if not takes({x: v for x, v in params.items() if x != k})]
        if needs:
            out[kind] = needs
    return out


def per_type(rope: Any, lts: list[str]) -> bool:
    """Whether a class's rope_parameters is a dict per layer type (what its model reads)."""
    return isinstance(rope, dict) and all(isinstance(rope.get(lt), dict) for lt in lts)


def measure_one(cls: Any) -> dict[str, Any] | None:
    """A one-RoPE class's conversion (config_rules.one_rope): its preset where the file says nothing (less the
    theta and partial factor a file's keys replace), the theta and partial factor it fills in where the file's
    rope dict lacks them and where the file gives no rope dict, and the keys it reads them from (the theta's
    with the file's dict and without it, apart)."""
    def built(kw: dict) -> dict | None:
        try:
            rope = rope_of(cls, kw)
        except Exception:  # noqa: BLE001
            return None
        return rope if isinstance(rope, dict) else None

    bare, given = built({}), built({"rope_parameters": {"rope_type": "default"}})
    if bare is None or given is None:
        return None  # (no rules: the shapes probed decide alone)
    def sets(key: str, value: float, field: str, with_dict: bool) -> bool:  # (with a dict of the file's or not)
        kw = {"rope_parameters": {"rope_type": "default"}, key: value} if with_dict else {key: value}
        return (built(kw) or {}).get(field) == value

    # (with the file's dict and without, apart: Cohere 2 MoE's class merges its rope_theta only without one; its
    # rotary module's library functions do, theta_beside)
    theta_keys = [k for i, k in enumerate(theta_candidates(cls)) if sets(k, sentinel(70 + i), "rope_theta", True)]
    theta_keys_bare = [k for i, k in enumerate(theta_candidates(cls)) if sets(k, sentinel(70 + i), "rope_theta", False)]
    partial_keys = [k for k in PARTIAL_KEYS if sets(k, 0.3125, "partial_rotary_factor", True)
                    or sets(k, 0.3125, "partial_rotary_factor", False)]
    head = getattr(cls(), "head_dim", None)  # (MiniMax-M2's rotary_dim: the factor is it over head_dim)
    partial_dims = [k for k in kp.candidates(cls) if k not in PARTIAL_KEYS and isinstance(head, int) and head >= 8
                    and all((built({k: head // n}) or {}).get("partial_rotary_factor") == (head // n) / head
                            for n in (4, 8))]  # (two values: a class's own factor may be one of them, Qwen3-Next's)
    preset = dict(bare)  # (less what a file's key replaces: a theta or factor the class only defaults)
    if any(sets(k, sentinel(80 + i), "rope_theta", False) for i, k in enumerate(theta_keys_bare)):
        preset.pop("rope_theta", None)
    if any(sets(k, 0.3125, "partial_rotary_factor", False) for k in partial_keys):
        preset.pop("partial_rotary_factor", None)
    # (a class may fill in a theta only where the file gives no rope dict: Cohere 2 MoE's 10000)
    out = {"preset": preset, "theta": given.get("rope_theta"), "partial": given.get("partial_rotary_factor"),
           "theta_no_dict": bare.get("rope_theta"), "partial_no_dict": bare.get("partial_rotary_factor"),
           "theta_keys": theta_keys, "theta_keys_no_dict": theta_keys_bare, "partial_keys": partial_keys,
           "partial_dims": partial_dims}
    fills = {k: v for k, v in given.items() if k not in ("rope_type", "rope_theta", "partial_rotary_factor")}
    if fills:  # (other keys it fills into a file's dict lacking them: HY-V4-VL's mrope_section [12, 10, 10])
        out["fills"] = fills
    return out


# PhiMoE's keys: its config class refuses every rope type but default without them (its rotary module scales cos
# and sin by one of them whatever the type), other classes ignore them
MSCALES = {"short_mscale": 1.0, "long_mscale": 1.0}


def type_probes(cls: Any) -> dict[str, dict[str, Any]]:
    """Each rope type but default (every one vkrope's RULES knows) with the parameters it needs: longrope's
    factor lists as long as the class's defaults need, beside PhiMoE's mscales (which other classes ignore)."""
    n = _half_dim(cls) or 64
    probes: dict[str, dict[str, Any]] = {
        "linear": {"factor": 2.0}, "dynamic": {"factor": 2.0}, "proportional": {"factor": 2.0},
        "yarn": {"factor": 2.0, "original_max_position_embeddings": 1024},
        "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 1024},
        "longrope": {"short_factor": [1.0] * n, "long_factor": [1.0] * n, "original_max_position_embeddings": 1024,
                     **MSCALES}}
    if set(probes) != {t for t, rule in RULES.items() if rule.in_files} - {"default"}:  # (a type no file names
        # is no class's to refuse: from_hf refuses it by name, hf_rope_dict.FILE_ROPE_TYPES)
        sys.exit(f"type_probes gives {sorted(probes)}; vkrope's rope types are {sorted(RULES)}: give each its probe")
    return probes


def _takes(cls: Any, one: dict, lts: list[str] | None, top: dict | None = None) -> bool:
    """Whether the class builds a file whose rope_parameters is `one` (per layer type where `lts`), with the
    top-level keys `top`, into what its model can run: a one-RoPE type that reads an original length must
    still have one after the model's standardize_rope_params (a null one beside Llama's longrope builds,
    and the model fails on it)."""
    try:
        c = cls(**copy.deepcopy({"rope_parameters": {lt: dict(one) for lt in lts} if lts else dict(one),
                                 **(top or {})}))
        if lts:
            return True
        c.standardize_rope_params()
    except Exception:  # noqa: BLE001
        return False
    rope = c.rope_parameters
    kind = rope.get("rope_type")
    return not (kind in RULES and RULES[kind].needs_orig and rope.get("original_max_position_embeddings") is None)


def strict_head_dim(kind: str) -> bool:
    """Whether transformers' rope function of `kind` reads the config's head_dim attribute with no fallback
    where it is None (`getattr(config, "head_dim", <default>)` without `or`: yarn, dynamic and longrope's),
    read from its source."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: PLC0415

    if kind not in ROPE_INIT_FUNCTIONS:
        return False
    src = inspect.getsource(ROPE_INIT_FUNCTIONS[kind])
    return bool(re.search(r'getattr\(config, "head_dim", (?!None\) or)', src))


def _own(cls: Any, lts: list[str] | None) -> dict | None:
    """What a file's rope dict must give beside its type for the class to build it (Cosmos 3 Edge's
    mrope_section, which its validation checks before it refuses every type but default): {} where the type
    alone does, the class's own parameters where they do, None where neither (the probe says nothing)."""
    if _takes(cls, {"rope_type": "default", "rope_theta": 10000.0}, lts):
        return {}
    own = {} if lts else {k: v for k, v in rope_of(cls, {}).items() if k not in ("rope_type", "rope_theta")}
    return own if own and _takes(cls, {"rope_type": "default", "rope_theta": 10000.0, **own}, lts) else None


def types_refused(cls: Any, lts: list[str] | None, mscaled: bool = False) -> list[str]:
    """The rope types the class's validation refuses (Phi-3 takes only default and longrope), each given with
    the parameters it needs (and with a head_dim, where only that makes the class take it: type_keys'
    config_needs), where the class takes the default type given the same way; given with PhiMoE's `MSCALES`
    too. `mscaled`: instead, those it refuses given without the mscales and takes given with them (PhiMoE's
    yarn, llama3, ...: its model scales cos and sin by them in place of the type's own factor)."""
    own = _own(cls, lts)
    if own is None:
        return []  # (the probe says nothing of types)

    def refuses(kind: str, params: dict[str, Any]) -> bool:
        one = {"rope_type": kind, "rope_theta": 10000.0, **own, **params}
        return not _takes(cls, one, lts) and not _takes(cls, one, lts, _head_dim(cls))

    return [kind for kind, params in type_probes(cls).items()
            if refuses(kind, params) and refuses(kind, {**params, **MSCALES}) != mscaled]


def _head_dim(cls: Any) -> dict[str, int]:
    """A top-level head_dim of the class's defaults (Mixtral's class validates longrope with its head_dim
    attribute, None unless the file gives one): {} where it has none to give."""
    n = _half_dim(cls)
    return {"head_dim": 2 * n} if n else {}


def type_keys(cls: Any, lts: list[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """{rope type: {"needs": the keys a file's rope dict of that type must give (not at its top level instead:
    checked), "not_null": those it may not give as null (yarn's factor may be: derived)}},
    where the one-RoPE class raises otherwise (Cosmos 3 Edge's
    mrope_section, PhiMoE's short_mscale and long_mscale, Cohere 2 MoE's original length beside yarn; a null
    original length beside llama3; `config_needs`: the top-level keys it needs, Mixtral's head_dim beside
    longrope), of each type the class takes; the theta is left out (its keys have their own rules: `one`). Of
    a class with RoPE per layer type (`lts`), the dict given to every layer type (Gemma 3's validation of a
    null original length beside yarn)."""
    own = _own(cls, lts)
    if own is None:
        return {}
    out = {}
    for kind, params in {"default": {}, **type_probes(cls)}.items():
        one = {"rope_type": kind, "rope_theta": 10000.0, **own, **params}
        top: dict[str, int] = {}
        if not _takes(cls, one, lts):
            top = _head_dim(cls)
            if not top or not _takes(cls, one, lts, top):
                continue  # (refused: types_refused)
        keys = [k for k in one if k not in ("rope_type", "rope_theta")]
        needs = [k for k in keys if not _takes(cls, {x: v for x, v in one.items() if x != k}, lts, top)]
        not_null = [k for k in keys if not _takes(cls, {**one, k: None}, lts, top)]
        if any(_takes(cls, {x: v for x, v in one.items() if x != k}, lts, {**top, k: one[k]}) for k in needs):
            sys.exit(f"{cls.__name__} takes a key of {needs} at the top level instead: config_checks.check_type "
                     "reads them from the rope dict only")
        if not top and strict_head_dim(kind) and _head_dim(cls) and getattr(cls(), "head_dim", 0) is None:
            top = _head_dim(cls)  # (the class's head_dim is None unless the file gives one: Mixtral's)
        entry = {"needs": needs, "not_null": not_null, "config_needs": list(top)}
        if needs or not_null or top:
            out[kind] = {k: v for k, v in entry.items() if v}
    return out


def original_length(cls: Any, lts: list[str] | None) -> dict[str, str] | None:
    """Which original length a one-RoPE class's model reads (its rope dict's, after the model's
    standardize_rope_params) where a file gives one at the top level: `both` (the rope dict's as well): "top"
    or "dict" (PhiMoE's validation copies the dict's over the top level's); `top_only`: "top" or
    "max_position_embeddings" (PhiMoE's class does not read the top level's; nor do the classes with RoPE per
    layer type, `lts`, Gemma 3's, Olmo 3's). Measured on the first of yarn, longrope, llama3 the class takes;
    None where it takes none."""
    own = _own(cls, lts)
    for kind in ("yarn", "longrope", "llama3"):
        if own is None:
            break
        params = {k: v for k, v in type_probes(cls)[kind].items() if k != "original_max_position_embeddings"}

        def made(in_dict: int | None, top: dict) -> Any:
            one = {"rope_type": kind, "rope_theta": 10000.0, **own, **params}
            if in_dict is not None:
                one["original_max_position_embeddings"] = in_dict
            try:
                c = cls(rope_parameters={lt: dict(one) for lt in lts} if lts else one, max_position_embeddings=131072,
                        **top)
                c.standardize_rope_params()
                dicts = [c.rope_parameters[lt] for lt in lts] if lts else [c.rope_parameters]
            except Exception:  # noqa: BLE001
                return None
            values = {d.get("original_max_position_embeddings") for d in dicts}
            return values.pop() if len(values) == 1 else None

        both, top_only = made(2048, {"original_max_position_embeddings": 4096}), \
            made(None, {"original_max_position_embeddings": 4096})
        if both is not None and top_only is not None:
            return {"both": {4096: "top", 2048: "dict"}.get(both, str(both)),
                    "top_only": {4096: "top", 131072: "max_position_embeddings"}.get(top_only, str(top_only))}
    return None


def compared_names(classes: list[Any]) -> list[str]:
    """The strings the classes' config modules compare with a rope type (Phi-3's "su" and "yarn", Qwen2-VL's
    "mrope", ...): the names a class may rename before its model reads them."""
    def is_type(node: ast.AST) -> bool:
        return "rope" in ast.unparse(node) and "type" in ast.unparse(node)

    def strings(node: ast.AST) -> set[str]:  # (a constant, or a list / tuple / set of them)
        items = node.elts if isinstance(node, (ast.List, ast.Tuple, ast.Set)) else [node]
        return {c.value for c in items if isinstance(c, ast.Constant) and isinstance(c.value, str)}

    names: set[str] = set()
    for module in {sys.modules[cls.__module__] for cls in classes}:
        for node in ast.walk(ast.parse(inspect.getsource(module))):
            if isinstance(node, ast.Compare) and len(node.ops) == 1 and is_type(node.left):
                # (`kind == "mrope"`, `kind in ["su", "yarn"]`; not `"type" in rope_parameters`, a key)
                names |= strings(node.comparators[0])
            elif isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) \
                    and is_type(node.comparators[0]):  # (`"mrope" == kind`; Sarvam-MLA's `"deepseek_yarn" in
                names |= strings(node.left)  # (rope_scaling.get("type"), rope_scaling.get("rope_type"))`)
    return sorted(names)


def _half_dim(cls: Any) -> int | None:
    """The number of rotated pairs of the class's defaults (the length of a longrope factor list)."""
    try:
        c = cls()
        rope = c.rope_parameters if isinstance(c.rope_parameters, dict) else {}
        partial = rope.get("partial_rotary_factor", getattr(c, "partial_rotary_factor", None)) or 1.0
        return int((getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads) * partial) // 2
    except Exception:  # noqa: BLE001  (then the probe gives no factor lists)
        return None


def every_type_params(cls: Any) -> dict[str, Any]:
    """The parameters of every rope type at once (longrope's factor lists as long as the class's defaults
    need), so that a name the class renames meets its new type's validation."""
    return {k: v for probe in type_probes(cls).values() for k, v in probe.items()}


def renames(cls: Any, names: list[str], where: str = "rope_parameters") -> dict[str, str]:
    """{name: the rope type the class's conversion makes of it} for each name it changes when a file gives it
    as `rope_type` or `type` in its dict `where` (Phi-3's "su" and "yarn" -> longrope, Qwen2-VL's "mrope" ->
    default; Sarvam-MLA's "deepseek_yarn" -> yarn in rope_scaling only). Each name is given with every type's
    parameters (a class may validate the type it renames to), else alone."""
    params = every_type_params(cls)
    out: dict[str, str] = {}
    for name in names:
        got = set()
        for key in ("rope_type", "type"):
            for extra in (params, {}):
                try:
                    rope = rope_of(cls, {where: {key: name, "rope_theta": 10000.0, **extra}})
                except Exception:  # noqa: BLE001
                    continue
                got.add(rope.get("rope_type"))
                break
        got.discard(name)
        if len(got) > 1:
            sys.exit(f"{cls.__name__} renames {name!r} to {sorted(map(str, got))} by key: not one rule")
        if got:
            out[name] = str(got.pop())
    return out


def renames_by_dict(cls: Any, names: list[str]) -> dict[str, dict[str, str]]:
    """{"renames": those of a file's rope_parameters}, and "scaling_renames" where the class renames otherwise in
    a file's rope_scaling (converting the legacy dict only: Sarvam-MLA's "deepseek_yarn"); not where it turns a
    rope type there into another (Cohere 2 MoE's class drops rope_scaling, every type read as its default: its
    shape rules refuse that dict)."""
    out = {"renames": renames(cls, names)}
    scaling = renames(cls, names, "rope_scaling")
    if scaling != out["renames"] and not any(n in RULES for n in set(scaling) - set(out["renames"])):
        out["scaling_renames"] = scaling
    return out


def per_type_drops(cls: Any, d0: dict) -> dict[str, list[str]]:
    """{"per_type_drops": [...]}: the keys a class with RoPE per layer type drops when a file's rope_parameters
    gives one beside its layer types' dicts (ZAYA's hub config holds a stray `rope_type` there, which its
    convert_rope_params_to_dict deletes), each given as a name, another name and a number and the class's dict
    unchanged by all three; {} for none. from_hf drops them too (any other such key it refuses)."""
    base = rope_of(cls, {"rope_parameters": copy.deepcopy(d0)})
    dropped = []
    for key in ("rope_type", "type", "rope_theta", *sorted(PARAMS)):
        same = []
        for value in ("default", "linear", 12345.0):
            try:
                same.append(rope_of(cls, {"rope_parameters": {**copy.deepcopy(d0), key: value}}) == base)
            except Exception:  # noqa: BLE001  (raised: not dropped)
                same.append(False)
        if all(same):
            dropped.append(key)
    return {"per_type_drops": dropped} if dropped else {}


def measure_per_type(cls: Any, d0: dict) -> dict[str, Any]:
    """{layer type: {"flat": rule, "nested": rule}} of a class with RoPE per layer type."""
    lts = sorted(d0)
    keys = theta_candidates(cls)
    flat = measure_shape(cls, lts, d0, False, keys)
    nested = measure_shape(cls, lts, d0, True, keys)
    return {lt: {"flat": flat[lt], "nested": nested[lt]} for lt in lts}


def scenarios(lts: list[str], keys: list[str]) -> list[dict]:
    """Configs mixing the keys the rules speak of, flat and nested, for the check."""
    flat_parts = [{}] + [{k: sentinel(20 + i)} for i, k in enumerate(keys)] + [{k: sentinel(40 + i) for i, k in
                                                                              enumerate(keys)}]
    scalings = [None, dict(SCALING), {"rope_type": "linear", "factor": 2.0, "rope_theta": 777.0},
                {"rope_type": "dynamic", "factor": 2.0}]
    out = []
    for part, sc in itertools.product(flat_parts, scalings):
        kw = dict(part)
        if sc is not None:
            kw["rope_scaling"] = sc
        out.append(kw)
        nested_sets = [{lt: {"rope_type": "default"} for lt in lts},
                       {lt: {"rope_type": "default", "rope_theta": 5000.0 + j} for j, lt in enumerate(lts)},
                       {lts[0]: {"rope_type": "linear", "factor": 1.5, "rope_theta": 3000.0}}]
        for rp in nested_sets:
            out.append({**kw, "rope_parameters": copy.deepcopy(rp)})
    out.append({"rope_parameters": dict(SCALING)})
    for kind, params in NEEDS_PROBES.items():  # (type_needs: given without the original length, and with it)
        for orig in (None, 2048):
            one = {"rope_type": kind, **params, **({} if orig is None else {"original_max_position_embeddings": orig})}
            out.append({"rope_scaling": dict(one)})
            out.append({"rope_parameters": {lts[0]: {**one, "rope_theta": 3000.0},
                                            **{lt: {"rope_type": "default"} for lt in lts[1:]}}})
    return out


def check_rules(cls: Any, model_type: str, d0: dict, rules: dict) -> str | None:
    """None when config_rules.per_type_rope with `rules` gives what the class does on every scenario (or
    refuses where the class raises); else the first difference."""
    config_rules.table.cache_clear()
    saved = config_rules.table
    config_rules.table = lambda: {"models": {model_type: {"per_type": rules}}}  # type: ignore[assignment]
    try:
        for kw in scenarios(sorted(d0), theta_candidates(cls)):
            try:
                want = rope_of(cls, kw)
            except Exception:  # noqa: BLE001
                want = None
            if not per_type(want, sorted(d0)):
                want = None  # (the class raises, or makes what its model cannot read)
            try:
                got = config_rules.per_type_rope(copy.deepcopy(kw), d0, model_type)
            except ValueError:
                continue  # (refused: allowed where the class reads it too; never a different answer)
            if want is None:
                return f"{kw}: the class raises, the rules read {got}"
            for lt in d0:
                a, b = (want.get(lt) or {}), got.get(lt, {})
                diff = [k for k in COMPARED if a.get(k) != b.get(k) and not (k == "partial_rotary_factor"
                                                                              and {a.get(k), b.get(k)} <= {None, 1.0})]
                if diff:
                    return f"{kw}: {lt} {diff}: the class {a}, the rules {b}"
    finally:
        config_rules.table = saved  # type: ignore[assignment]
    return None


def measure_outer(model_type: str, path: list[str]) -> dict[str, Any] | None:
    """Whether an outer rope_theta reaches the text config beside a text_config (without one: measure_moves),
    the keys the outer class presets otherwise, and the model type of its own text config."""
    from transformers import AutoConfig  # noqa: PLC0415

    def reached(kw: dict) -> bool:
        text = AutoConfig.for_model(model_type, **kw).get_text_config(decoder=True)
        rp = getattr(text, "rope_parameters", None) or {}
        thetas = [rp.get("rope_theta")] + [v.get("rope_theta") for v in rp.values() if isinstance(v, dict)]
        return sentinel(99) in thetas or getattr(text, "rope_theta", None) == sentinel(99)

    def preset(kw: dict) -> list[str]:  # the keys the outer class presets otherwise than the text class
        text = AutoConfig.for_model(model_type, **kw).get_text_config(decoder=True)
        mine, own = text.to_dict(), type(text)().to_dict()
        return sorted(k for k in (*DEFAULT_KEYS, "rope_parameters", "rope_theta") if mine.get(k) != own.get(k))

    part: dict = {}
    for key in reversed(path):
        part = {key: part}
    def honours(own: str) -> bool:  # (whether a text_config naming another model type gets that type's class)
        other = "mistral" if own == "llama" else "llama"
        try:
            text = AutoConfig.for_model(model_type, **_inside(path, {"model_type": other}))
            # (the class's type: the instance's model_type is the file's key, whatever class was built)
            return type(text.get_text_config(decoder=True)).model_type == other
        except Exception:  # noqa: BLE001
            return False

    try:
        own = AutoConfig.for_model(model_type).get_text_config(decoder=True).model_type
        with_text = reached({"rope_theta": sentinel(99), **part})
        return {"text_model_type": own if honours(own) else None, "moves": measure_moves(model_type, path),
                "with_text_config": with_text, "preset_without_text_config": preset({}),
                "preset_with_text_config": preset(part),
                **text_aliases(model_type, path, lambda alias: reached({"rope_theta": sentinel(99), alias: {}}))}
    except Exception:  # noqa: BLE001  (the class cannot be built so: unknown)
        return None


def text_aliases(model_type: str, path: list[str], reached: Callable[[str], bool]) -> dict[str, Any]:
    """{"text_aliases": [...]} where the outer config class builds its text config from another key of a file
    without `path`'s one (Unlimited-OCR's original checkpoints keep it under language_config:
    `self.text_config = kwargs.pop("language_config", {})`): each keyword its module pops or gets that, holding
    a dict with a sentinel theta, gives the text config that theta, and beside which an outer rope_theta
    reaches the text config as it does beside `path` (`reached`; else the alias is not written, and from_hf
    refuses the file as it did); {} for none."""
    from transformers import AutoConfig  # noqa: PLC0415

    if len(path) != 1:
        return {}
    cls = type(AutoConfig.for_model(model_type))
    names = set(re.findall(r"kwargs\.(?:pop|get)\(\s*[\"'](\w+)[\"']", inspect.getsource(sys.modules[cls.__module__])))
    found = []
    for name in sorted(names - {path[0]}):
        try:
            text = AutoConfig.for_model(model_type, **{name: {"rope_theta": sentinel(98)}}).get_text_config(
                decoder=True)
        except Exception:  # noqa: BLE001  (not a dict it takes)
            continue
        rp = getattr(text, "rope_parameters", None) or {}
        if rp.get("rope_theta") != sentinel(98):
            continue
        try:  # (its own: measure_outer's handler would drop the type's whole outer rules unsaid)
            same = reached(name) == reached(path[0])
        except Exception as exc:  # noqa: BLE001
            sys.exit(f"{model_type}: the text alias {name!r} takes a text config, and an outer theta beside it "
                     f"could not be probed ({exc!r}): read its class and extend text_aliases")
        if same:
            found.append(name)
    return {"text_aliases": found} if found else {}


# The keys of a language model's config that say its RoPE or head width, each with the value a probe puts
# where a flat file would have it (a sentinel, or twice the class default) and how to find it in what the
# class made of it (its text config).
MOVED = ("rope_theta", "rope_scaling", "rope_parameters", *config_rules.PARTIAL_KEYS, "head_dim", "hidden_size",
         "num_attention_heads", "max_position_embeddings", "original_max_position_embeddings")


def _moved_value(key: str, text: Any) -> Any:
    if key == "rope_theta":
        return sentinel(98)
    if key in ("rope_scaling", "rope_parameters"):
        return {"rope_type": "linear", "factor": 3.25, "rope_theta": sentinel(97)}
    if key in config_rules.PARTIAL_KEYS:
        return 0.3125
    base = text.to_dict().get(key)  # (not getattr: Gemma 4's per-layer head_dim refuses global access)
    return 2 * base if isinstance(base, int) and not isinstance(base, bool) and base > 0 else 64


def _arrived(key: str, value: Any, text: Any) -> bool:
    made = text.to_dict()  # (not getattr: Gemma 4's per-layer head_dim refuses global access)
    rp = made.get("rope_parameters") or {}
    dicts = [rp] + [v for v in rp.values() if isinstance(v, dict)]
    if key == "rope_theta":
        return any(d.get("rope_theta") == value for d in dicts) or made.get(key) == value
    if key in ("rope_scaling", "rope_parameters"):
        return any(d.get("factor") == 3.25 for d in dicts)
    if key in (*config_rules.PARTIAL_KEYS, "original_max_position_embeddings"):
        # (a class may move these into its rope dicts: standardize_rope_params)
        field = "partial_rotary_factor" if key == "rotary_pct" else key
        return any(d.get(field) == value for d in dicts) or made.get(key) == value
    return made.get(key) == value


def measure_moves(model_type: str, path: list[str]) -> dict[str, list[str]]:
    """{depth: the MOVED keys that reach the language model's config when a file gives them at that depth of
    `path` and leaves the rest of the path out} ("0": a flat Hub file; "1": ColQwen2's vlm_config without
    its text_config, built by its own class): the keys vkrope may read there; a key left out is refused."""
    from transformers import AutoConfig  # noqa: PLC0415

    own = AutoConfig.for_model(model_type).get_text_config(decoder=True)
    out: dict[str, list[str]] = {}
    for depth in range(len(path)):
        moved = []
        for key in MOVED:
            value = _moved_value(key, own)
            try:
                text = AutoConfig.for_model(model_type, **_inside(path[:depth], {key: value}))
                if _arrived(key, value, text.get_text_config(decoder=True)):
                    moved.append(key)
            except Exception:  # noqa: BLE001  (the class refuses the value there: not read)
                continue
        out[str(depth)] = moved
    return out


ABSENT = object()
PARTIAL_KEYS = config_rules.PARTIAL_KEYS


def shape_values(lts: list[str] | None, own: Any = None) -> dict[str, dict[str, list]]:
    """The probe values of every letter of config_shapes.signature, for rope_scaling and rope_parameters;
    `own`, the class's own rope_parameters, gives each dict shape a value the class surely takes (a class
    that takes only its own rope type, M-RoPE's sections, ...), so that a shape is refused for the class
    raising only where it raises on that one too."""
    scaling = {"-": [ABSENT], "0": [None], "e": [{}],
               "d": [{"rope_type": "linear", "factor": 2.5}, {"rope_type": "default", "rope_theta": 4321.0}],
               "t": [{"type": "linear", "factor": 2.5}, {"type": "default", "rope_theta": 4321.0}]}
    params = {"-": [ABSENT], "0": [None], "e": [{}],
              "d": [{"rope_type": "linear", "factor": 1.5}, {"rope_type": "default", "rope_theta": 3210.0}],
              "t": [{"type": "linear", "factor": 1.5}, {"type": "default", "rope_theta": 3210.0}]}
    if lts:
        params.update({
            "n": [{lt: {"rope_type": "default"} for lt in lts},
                  {lt: {"rope_type": "linear", "factor": 1.5, "rope_theta": 3000.0 + j} for j, lt in enumerate(lts)}],
            "m": [{lts[0]: {"rope_type": "default", "rope_theta": 3000.0}}],
            "z": [{lt: ({"rope_type": "default", "rope_theta": 3000.0} if j == 0 else None)
                   for j, lt in enumerate(lts)}],
            "nt": [{lt: {"type": "linear", "factor": 1.5} for lt in lts},
                   {lt: {"type": "default", "rope_theta": 3000.0} for lt in lts}]})
    if isinstance(own, dict) and own:
        nested = lts and all(isinstance(own.get(lt), dict) for lt in lts)
        one = dict(own[lts[0]] if nested else own)
        legacy = {("type" if k == "rope_type" else k): v for k, v in one.items()}
        for shape, value in (("d", dict(one, rope_theta=4444.0)), ("t", legacy)):
            scaling[shape].append(value)
            params[shape].append(dict(value, rope_theta=3333.0))
        if nested:
            params["n"].append({lt: dict(own[lt], rope_theta=3000.0 + j) for j, lt in enumerate(lts)})
            params["nt"].append({lt: {("type" if k == "rope_type" else k): v for k, v in own[lt].items()}
                                 for lt in lts})
    assert tuple(scaling) == config_shapes.SHAPES
    assert tuple(params) == (config_shapes.PER_TYPE_SHAPES if lts else config_shapes.SHAPES)
    return {"rope_scaling": scaling, "rope_parameters": params}


def probes(keys: list[str], lts: list[str] | None, own: Any = None) -> list[tuple[str, dict]]:
    """(signature, config keys) of every shape probed: rope_scaling x rope_parameters x each theta key
    (absent, null, a value; at most two given at once) x the partial factor (absent, null, a value; or
    rotary_pct)."""
    values = shape_values(lts, own)
    theta_shapes = [c for c in itertools.product(config_shapes.THETA_SHAPES, repeat=len(keys))
                    if sum(x != "-" for x in c) <= 2]
    out = []
    for s_key, s_vals in values["rope_scaling"].items():
        for p_key, p_vals in values["rope_parameters"].items():
            for th in theta_shapes:
                for partial in config_shapes.PARTIAL_SHAPES:
                    sig = "|".join([s_key, p_key, *th, *partial])
                    for sv, pv in itertools.product(s_vals, p_vals):
                        kw: dict[str, Any] = {}
                        for key, v in (("rope_scaling", sv), ("rope_parameters", pv)):
                            if v is not ABSENT:
                                kw[key] = copy.deepcopy(v)
                        for i, (key, x) in enumerate(zip(keys, th)):
                            if x != "-":
                                kw[key] = None if x == "0" else sentinel(50 + i)
                        for key, x in zip(PARTIAL_KEYS, partial):
                            if x != "-":
                                kw[key] = None if x == "0" else 0.5
                        out.append((sig, kw))
    return out


def class_reads(t: str, e: dict, kw: dict, lts: list[str] | None) -> dict[Any, dict | None] | None:
    """What the model type's config class makes of the text config keys `kw` (placed where its files keep
    them): per layer type (None: one RoPE) the compared keys of its rope dict, None where its model cannot
    read it; None where the class raises. Over the type's FILL, as file_config gives vkrope the file."""
    from transformers import AutoConfig  # noqa: PLC0415

    kw = {**FILL.get(t, {}), **kw}
    for key in reversed(e.get("text_config") or []):
        kw = {key: kw}
    try:
        text = AutoConfig.for_model(t, **copy.deepcopy(kw)).get_text_config(decoder=True)
    except Exception:  # noqa: BLE001
        return None
    return compared(text, lts)


def compared(text: Any, lts: list[str] | None) -> dict[Any, dict | None]:
    """Per layer type (None: one RoPE) the COMPARED keys of a built text config's rope dict, None where its
    model cannot read it."""
    rp = copy.deepcopy(getattr(text, "rope_parameters", None))
    out: dict[Any, dict | None] = {}
    for lt in lts or [None]:
        one = rp.get(lt) if lt and isinstance(rp, dict) else rp
        ok = isinstance(one, dict) and isinstance(one.get("rope_theta"), (int, float)) \
            and not isinstance(one.get("rope_theta"), bool) and one.get("rope_type", "default") in model_types()
        out[lt] = {k: one.get(k) for k in COMPARED if one.get(k) is not None} if ok else None
    return out


def model_types() -> set[str]:
    """The rope types a model's rotary module runs: its own default, and ROPE_INIT_FUNCTIONS' (a name
    outside them, "su" in a Llama config, is a KeyError there)."""
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # noqa: PLC0415

    return {"default", *ROPE_INIT_FUNCTIONS}


def vkrope_reads(cfg: dict, lt: str | None) -> Any:
    """vkrope.from_hf's reading of a config: (theta, rope type, factor, partial factor), or None where it
    refuses it (of a model type whose layers rotate two ways over the same angles, its attention's part)."""
    import vkrope  # noqa: PLC0415

    try:
        r = vkrope.from_hf(copy.deepcopy(cfg), layer_type=lt, part=kp.angles_part(cfg))
    except ValueError:
        return None
    if r is None:
        return "no rope"
    params = dict(r.params)
    return r.theta, r.rope_type, params.get("factor"), params.get("partial_rotary_factor", 1.0)


def read_factor(rope: dict) -> Any:
    """The factor of a rope dict the class made, where its rope type reads one: transformers' default rope
    type reads none (the class may keep a rope_scaling's factor beside it, which from_hf lists in
    rope.ignored), so none is no difference."""
    kind = rope.get("rope_type")
    return None if kind in RULES and "factor" not in read_by(kind) else rope.get("factor")


def model_partial(e: dict, lt: str | None, rope: dict) -> float:
    """The partial factor the model applies with a rope dict (the table's rotary rule, as scripts/
    hf_model_table.py found the attention doing it: the default rope type of a "whole_default" model spans
    the head whatever the dict says)."""
    shape = e["by_layer_type"].get(lt if lt in e["by_layer_type"] else "*", {})
    if shape.get("rotary") == "whole" or (shape.get("rotary") == "whole_default"
                                          and rope.get("rope_type", "default") == "default"):
        return 1.0
    return float(rope.get("partial_rotary_factor") or 1.0)


def want_of(e: dict, lt: str | None, rope: dict | None) -> list | None:
    """A golden case's `want`: [theta, rope type, factor, partial] of the rope dict the class made for layer
    type `lt` (None: the classes raise, and from_hf must refuse)."""
    if rope is None:
        return None
    return [rope.get("rope_theta"), rope.get("rope_type"), read_factor(rope), model_partial(e, lt, rope)]


def file_config(t: str, e: dict, kw: dict) -> dict:
    """A config.json of model type `t` with the text config keys `kw` where its files keep them (over the type's
    FILL, as _built builds them)."""
    cfg: dict = {**FILL.get(t, {}), **kw}
    for key in reversed(e.get("text_config") or []):
        cfg = {key: cfg}
    cfg["model_type"] = t
    return cfg


def shapes(t: str, e: dict, keys: list[str], lts: list[str] | None, gold: list, fixed: bool) -> dict[str, str]:
    """{signature: why} of the shapes on which vkrope reads model type `t` otherwise than its class (or reads
    what the class raises on); about a dozen of the probes into `gold`; none of a `fixed` type (no_rope_dict)."""
    refused: dict[str, str] = {}
    outcomes: dict[str, list[str]] = {}
    rng = random.Random(t)
    plist = probes(keys, lts, e.get("defaults", {}).get("rope_parameters"))
    keep = 12.0 / len(plist)
    if fixed:  # (measure_reading drops their cases the class takes)
        return refused
    builds = class_reads(t, e, {}, lts) is not None  # (a class that fails on no keys says nothing of shapes)
    picked: list[tuple[str, dict]] = []
    for sig, kw in plist:
        want = class_reads(t, e, kw, lts)
        cfg = file_config(t, e, kw)
        for lt in lts or [None]:
            got = vkrope_reads(cfg, lt)
            w = None if want is None else want[lt]
            expect = want_of(e, lt, w)
            if got is not None:
                same = expect is not None and got == tuple(expect)
                outcomes.setdefault(sig, []).append("same" if same else "raises" if w is None else "differs")
            if rng.random() < keep and (builds or expect is not None):  # (the model's: its rotary rule)
                picked.append((sig, {"config": cfg, "layer_type": lt, "want": expect}))
    for sig, seen in outcomes.items():
        if "differs" in seen:
            refused[sig] = "it reads them otherwise"
        elif "same" not in seen and builds:  # (raised on every value: the shape, not a value it refuses)
            refused[sig] = "the class raises, or makes what its model cannot read"
    # (a value the class's validation refuses in a shape it reads, Phi-3's linear type, is not mirrored)
    gold += [case for sig, case in picked if case["want"] is not None or sig in refused]
    return refused


def no_rope_dict(t: str, e: dict, lts: list[str] | None) -> bool:
    """Whether the class builds a bare file and makes no rope dict of it: GPT-J's and CodeGen's modules fix their
    RoPE, which vkrope reads, listing the file's rope keys as ignored; the class's reading of them says nothing
    (no shapes refused, no golden cases: the model table's changed-config goldens check the fixed RoPE)."""
    made = class_reads(t, e, {}, lts)
    return made is not None and all(v is None for v in made.values())


def bare(t: str, e: dict, lts: list[str] | None, gold: list) -> None:
    """Into `gold`: the file of model type `t` without a RoPE key, and what the class made of it (its preset
    and the theta it fills in only there: the probes of `shapes` pick this shape by chance)."""
    want = class_reads(t, e, {}, lts)
    if want is None:
        return  # (the class fails without the keys real files give beside RoPE's: Exaone 4.5's text model_type)
    for lt in lts or [None]:
        w = want[lt]
        gold.append({"config": file_config(t, e, {}), "layer_type": lt, "want": want_of(e, lt, w)})


def named(t: str, e: dict, cls: Any, names: list[str], gold: list) -> None:
    """Into `gold`: files of one-RoPE model type `t` giving each name a class compares with a rope type (the
    early "su", "mrope", ...) as rope_scaling's `type` and as rope_parameters' `rope_type`, with every type's
    parameters, and what the class made of each (from_hf must read that, or refuse; a name the model's rotary
    module does not run, refuse)."""
    if class_reads(t, e, {}, None) is None:
        return  # (the class fails on a file without RoPE keys: it says nothing of names)
    params = every_type_params(cls)
    for name in names:
        for kw in ({"rope_scaling": {"type": name, **params}},
                   {"rope_parameters": {"rope_type": name, "rope_theta": 20000.0, **params}}):
            w = (class_reads(t, e, kw, None) or {None: None})[None]
            gold.append({"config": file_config(t, e, kw), "layer_type": None, "want": want_of(e, None, w)})


def stopped(t: str, e: dict, lts: list[str] | None, gold: list) -> None:
    """Into `gold`: files of composite type `t` that stop short of its text config's path (a flat Hub file;
    ColQwen2's vlm_config alone), each RoPE key of MOVED at each depth, with what the classes made of them
    (from_hf must read that, or refuse)."""
    from transformers import AutoConfig  # noqa: PLC0415

    path = e.get("text_config") or []
    for depth, key in itertools.product(range(len(path)), MOVED):
        if key not in ("rope_theta", "rope_scaling", "rope_parameters", *config_rules.PARTIAL_KEYS):
            continue  # (the head-width keys: compared by the model table's probes, not by a rope dict)
        kw = _inside(path[:depth], {key: _moved_value(key, None)})
        try:
            made = compared(AutoConfig.for_model(t, **copy.deepcopy(kw)).get_text_config(decoder=True), lts)
        except Exception:  # noqa: BLE001
            made = None
        for lt in lts or [None]:
            w = None if made is None else made[lt]
            gold.append({"config": {**kw, "model_type": t}, "layer_type": lt, "want": want_of(e, lt, w)})


def strict(t: str, e: dict, lts: list[str] | None, rules: dict, gold: list) -> None:
    """Into `gold`: the files of strict_kinds', layer_types_checked's and heads_divide's probes (each key
    from_hf reads that the first refuses as a whole float, and as the int, and as a bool; a value of each kind
    for the first key of each of its groups, other_kinds; layer_types of the class's length, one shorter, one longer and
    with an unknown name; hidden sizes the heads divide or not), with what the classes made of them (from_hf
    must read that, or refuse)."""
    if _raises(t, e, {}):
        return
    built = _built(t, e, {})
    ints = _int_keys(e, built.to_dict())  # (to_dict: a heterogeneous class refuses getattr of a per-layer key)
    kinds = {k: letters for letters, keys in (rules.get("strict") or {}).items() for k in keys}
    probes = [kw for k in ints if "f" in kinds.get(k, "")  # (a head key the model refuses as a float, a class
              for kw in ({k: ints[k]}, {k: float(ints[k])})]  # without the field: model_refused's)
    probes += [{k: True} for k in ints if "b" in kinds.get(k, "")]
    probes += other_kinds(built, rules.get("strict") or {}, e.get("aliases", {}))
    for k in [*(rules.get("null_beside_layer_types") or []), *(rules.get("null_needs_layer_types") or [])]:
        # (a null refused alone, taken beside the layer types)
        probes += [{k: None}, {k: None, "layer_types": built.to_dict()["layer_types"]}]
    heads = heads_probes(t, e) if "heads_divide" in rules else None
    if heads and any(v is not None for v in (class_reads(t, e, heads["multiple"], lts) or {}).values()):
        # (where the class makes a rope dict its model reads: GPT-J's has none; of a class that takes a head
        # count that does not divide, the probes it takes: Granite Docling's fails another hidden size for its
        # vision tower's out_hidden_size, a key vkrope does not read)
        for kind, tail in HEADS_KINDS:
            rule = rules["heads_divide"][kind]
            probes += [] if rule is None else [heads[name + tail] for name in ("multiple", *BREAKS)
                                               if rule or not _raises(t, e, heads[name + tail])]
    if "layer_types" in rules:
        n, own = built.num_hidden_layers, getattr(built, "layer_types", None)
        own = list(own) if isinstance(own, list) and len(own) == n else ["full_attention"] * n
        probes += [{"num_hidden_layers": n, "layer_types": lt}
                   for lt in (own, own[:-1], own + own[-1:], own[:-1] + ["no_such_attention"])]
    saved = built.to_dict()
    for kw in probes:
        made = class_reads(t, e, kw, lts)
        if made is not None and _alias_fails(t, e, kw, saved):  # (stored unchecked: its model decides)
            made = None
        for lt in lts or [None]:
            w = None if made is None else made[lt]
            gold.append({"config": file_config(t, e, kw), "layer_type": lt, "want": want_of(e, lt, w)})


def _alias_fails(t: str, e: dict, kw: dict, saved: dict) -> bool:
    """Whether a probe `kw` of one key given under an attribute_map name fails at the model where the model runs
    the key's own value (as alias_kinds measures it): the class stores it unchecked."""
    if len(kw) != 1:
        return False
    key = next(iter(kw))
    stored = e.get("aliases", {}).get(key)
    if stored is None or stored not in saved:
        return False
    own = {key: _alias_own(t, e, key, saved[stored])}
    checks = [fine for fine in (_model_runs, _model_builds) if _holds(fine, t, {}, e) and _holds(fine, t, own, e)]
    return bool(checks) and not _holds(checks[0], t, kw, e)


# Values of each kind other than strict_kinds' probes: the golden cases check from_hf's reading of a kind, not
# of the probe's value
OTHER_VALUES = {"n": None, "b": False, "i": 3, "f": 3.25, "s": "abc", "e": [], "l": [5, 6], "m": [1.5], "d": {}}


def other_kinds(built: Any, strict: dict[str, list[str]], aliases: dict[str, str]) -> list[dict]:
    """Files giving the first key of each of strict_kinds' groups (`strict`) a value of two kinds it refuses
    (the group's n-th and next, so that the groups share them out) and of one other kind than its own it
    takes (OTHER_VALUES: other values than the probes'; no string where the field takes some, _some_strings);
    under an attribute_map name (`aliases`), whose model decides, alias_kinds' own first probe of the kind (a
    model may fail on one value of a kind and run another: False heads, an empty dict)."""
    out, saved, some_strings = [], built.to_dict(), _some_strings(built)
    for n, (letters, keys) in enumerate(strict.items()):
        own = saved.get(keys[0])
        probes = _kind_probes(64 if own is None else own)  # (_int_keys' probe of a read key the class holds None)
        taken = [c for c in KINDS if c not in letters and probes and c in probes
                 and not (c == "s" and keys[0] in some_strings)]
        kinds = dict.fromkeys([letters[n % len(letters)], letters[(n + 1) % len(letters)], *taken[:1]])
        out += [{keys[0]: probes[c][0] if keys[0] in aliases and probes and c in probes else OTHER_VALUES[c]}
                for c in kinds]
    return out


def outer_probes(t: str, e: dict, rules: dict, lts: list[str] | None, gold: list) -> None:
    """Into `gold`: of a composite's other configs (outer_kinds'), files giving the first key of each path's
    first group a value of two kinds it refuses and of one it takes (as other_kinds), with what the classes
    made of them (None where they raise: from_hf must refuse those)."""
    from transformers import AutoConfig  # noqa: PLC0415

    try:
        outer = AutoConfig.for_model(t, **_inside(e["text_config"], dict(FILL.get(t, {}))))
    except Exception:  # noqa: BLE001
        return
    for n, (path, measured) in enumerate(sorted((rules.get("outer_strict") or {}).items())):
        node = functools.reduce(lambda c, k: vars(c)[k], path.split(".") if path else [], outer)
        if measured.get("untyped_fails"):  # (the preset without its model_type: the class raises)
            bare = {k: v for k, v in _own_values(node).items() if k != "model_type"}
            gold += [{"config": _merged(file_config(t, e, {}), _inside(path.split("."), bare)), "layer_type": lt,
                      "want": None} for lt in lts or [None]]
        if not measured["kinds"]:
            continue
        letters, keys = next(iter(measured["kinds"].items()))
        own = config_checks.value_kind(node.to_dict().get(keys[0]))  # (not its own kind: a value its validator
        taken = [c for c in KINDS if c not in letters and c not in ("s", own)]  # may refuse, not the kind)
        preset = _own_values(node) if path else {}  # (beside the preset's other values, as outer_kinds measured it)
        for c in dict.fromkeys([letters[n % len(letters)], letters[(n + 1) % len(letters)], *taken[:1]]):
            cfg = _merged(file_config(t, e, {}), _inside(path.split(".") if path else [],
                                                         {**preset, keys[0]: OTHER_VALUES[c]}))
            try:
                made = compared(AutoConfig.for_model(t, **{k: v for k, v in copy.deepcopy(cfg).items()
                                                           if k != "model_type"}).get_text_config(decoder=True), lts)
            except Exception:  # noqa: BLE001
                made = None
            for lt in lts or [None]:
                w = None if made is None else made[lt]
                gold.append({"config": cfg, "layer_type": lt, "want": want_of(e, lt, w)})


def head_key(e: dict) -> str | None:
    """The model table's one key of the rotated head's width (head_dim, qk_rope_head_dim, ...), None where
    its layer types name several."""
    keys = {s["head_dim"] for s in e.get("by_layer_type", {}).values()}
    return next(iter(keys)) if len(keys) == 1 else None


def sections(t: str, e: dict, gold: list) -> None:
    """Into `gold`: files of M-RoPE model type `t` giving mrope_section as the class's (or its rotary
    module's) sections, one pair more or less, four or two sections, or none, in rope_parameters and in
    rope_scaling, with the class's head width and one 16 wider; with what the class made of each and the
    sections its model splits by (the file's, else its rotary module's): from_hf must read that, or refuse."""
    known = class_sections(t, e)
    if known is None:
        return
    sec, bare, wrong, head = known
    key = head_key(e)
    heads = [{}] + ([{key: head + 16}] if head is not None else [])
    given = [sec, *wrong, None]
    for where, wide, one in itertools.product(("rope_parameters", "rope_scaling"), heads, given):
        kw = {**wide, where: {**bare, **({} if one is None else {"mrope_section": one})}}
        made = class_reads(t, e, kw, None)
        w = None if made is None else made[None]
        case = {"config": file_config(t, e, kw), "layer_type": None, "want": want_of(e, None, w)}
        if w is not None:
            kept = _built(t, e, kw).rope_parameters.get("mrope_section") or e.get("mrope_section")
            if kept is not None:
                case["sections"] = list(kept)
        gold.append(case)


def _inside(path: list[str], kw: dict) -> dict:
    """`kw` placed at `path` (the language model's config inside the outer one)."""
    for key in reversed(path):
        kw = {key: kw}
    return kw


FILL: dict[str, dict] = {}  # model type -> the sizes its bare config lacks and its model needs (see fills)


def fills(types: list[str], models: dict[str, dict]) -> dict[str, dict]:
    """{model type: hf_model_table.filled_sizes'} for the types whose bare config's model does not run and does
    with them (Ministral's and HunYuan's head_dim, Nemotron's num_key_value_heads, dots.llm1's expert counts: the
    model table probed them so): every probe of those types is made over them (a key probed, null included, replaces its fill), both
    the class's and the file vkrope reads, so that what is measured is what a Hub file (which gives them) does."""
    sys.path.insert(0, HERE)
    from hf_model_table import filled_sizes  # noqa: PLC0415

    out = {}
    for t in types:
        try:
            fill = filled_sizes(t)
        except Exception:  # noqa: BLE001  (a class that does not build bare: nothing to fill)
            continue
        if fill and not _model_runs(t, {}, models[t]) and _model_runs(t, fill, models[t]):
            out[t] = fill
    return out


ROTARY: dict[str, Any] = {}  # model type -> its text rotary module's class (_rotary_class)


def _rotary_class(t: str, e: dict) -> Any:
    """The class of model type `t`'s text rotary module (or None), found on its config as built over its FILL
    (HunYuan's model does not build bare, so the bare config names none)."""
    import hf_probe  # noqa: PLC0415  (torch)

    sys.path.insert(0, HERE)
    from hf_model_table import text_rotary  # noqa: PLC0415

    if t not in ROTARY:
        base = _built(t, e, {}) if t in FILL else None  # (the others as the model table found theirs)
        module = hf_probe.modeling_module(base) if base is not None else None
        ROTARY[t] = text_rotary(t)[1] if base is None else \
            hf_probe.text_rotary_class(module, base) if module else None
    return ROTARY[t]


def _built(t: str, e: dict, kw: dict) -> Any:
    """The language model's config the classes build of text config keys `kw` (placed where files keep them),
    over the type's FILL."""
    from transformers import AutoConfig  # noqa: PLC0415

    kw = {**FILL.get(t, {}), **kw}
    return AutoConfig.for_model(t, **copy.deepcopy(_inside(e.get("text_config") or [], kw))).get_text_config(
        decoder=True)


def _raises(t: str, e: dict, kw: dict) -> bool:
    try:
        _built(t, e, kw)
    except Exception:  # noqa: BLE001
        return True
    return False


def _read_keys(e: dict) -> dict[str, None]:
    """The keys from_hf reads of a model type's files: DEFAULT_KEYS and the table's head keys."""
    return dict.fromkeys([*DEFAULT_KEYS, *(s["head_dim"] for s in e["by_layer_type"].values()
                                           if s["head_dim"] not in (None, "quotient")),
                          *(["rope_interleave"] if "rope_interleave" in e.get("defaults", {}) else [])])


def _read_names(e: dict) -> list[str]:
    """_read_keys' keys, each under its own name and the name the class stores it by (its attribute_map:
    GPT-J's n_positions for max_position_embeddings): a file may give either."""
    aliases = e.get("aliases", {})
    return list(dict.fromkeys(n for k in _read_keys(e) for n in (k, aliases.get(k, k))))


@functools.lru_cache(maxsize=1)
def _model_table() -> dict[str, Any]:
    """vkrope/data/hf_models.json, read once."""
    with open(MODELS, encoding="utf-8") as f:
        return json.load(f)


def _int_keys(e: dict, saved: dict) -> dict[str, int]:
    """The keys from_hf reads whose value a built config (`saved`: its to_dict) holds as an int or None (a
    field a file may fill: Mixtral's head_dim, Qwen2's sliding_window), with the int a probe gives (the
    class's own, else 64), each under its own name and the name the class stores it by (its attribute_map:
    GPT-J's n_embd for hidden_size): a file may give either."""
    aliases = e.get("aliases", {})
    out: dict[str, int] = {}
    for k in _read_keys(e):
        stored = aliases.get(k, k)
        v = saved[stored] if stored in saved else 0.5
        v = 64 if v is None else v
        if type(v) is int:
            out.update(dict.fromkeys((k, stored), v))
    return out


# A value's kind as vkrope/models/config_rules.py's value_kind names it: null, bool, int, float, str, a list of
# ints, another list, a dict (the kinds a JSON file holds)
KINDS = "".join(config_checks.KIND_NAMES)
# The values tried, in order, as the own value of a field the class holds None (its first the class takes): an
# int, a float, a bool, a string, and 1 for an int the class caps (_alias_own's example; a Literal's field takes
# none of these: its kinds not measured)
NONE_OWN = (64, 0.5, True, "x", 1)
# The same for a field the class holds an empty list (Qwen2-MoE's mlp_only_layers): a list of one integer, float
# or string, the first the class takes (a per-layer list's length check refuses all three: not measured)
EMPTY_OWN = ([1], [0.5], ["x"])


def _kind_probes(v: Any) -> dict[str, tuple] | None:
    """The probe values of each kind other than the field's own (`v`: the value the class holds; a
    fractional float of a float field is its own kind, as is any string of a string field: a Literal takes
    some); two per kind where values may differ (a float field's 1 and 2: its validator may refuse a range);
    a list field's lists of its own length (a validator may check the length: a length refused is no kind
    refused), its items as integers, floats or strings; None where the class holds no scalar or non-empty list
    there (a dict, None, []: its own kind not known)."""
    own = config_checks.value_kind(v)
    if own in "lm":  # (Qwen2.5-VL's vision fullatt_block_indexes: 7 raises; Falcon-H1's float multipliers [1, 1])
        ints = [int(x) if isinstance(x, (int, float)) and math.isfinite(x) else 1 for x in v]
        probes = {"n": (None,), "b": (True, False), "i": (1, 2), "f": (0.5, 1.0), "s": ("x",), "e": ([],),
                  "l": (ints, list(range(len(v)))), "m": ([float(x) for x in ints], [str(x) for x in ints]),
                  "d": ({"k": v},)}
        del probes[own]
        return probes
    if own not in "bifs":
        return None
    probes = {"n": (None,), "b": (True, False), "i": (1, 2), "f": (float(v), v + 0.5) if own == "i" else (0.5, 1.0),
              "s": (str(v), "x"), "e": ([],), "l": ([v] if own == "i" else [1],), "m": ([str(v)], [0.5]),
              "d": ({"k": v},)}
    del probes[own]
    return probes


def _some_strings(built: Any) -> set[str]:
    """The fields of a built config typed with str or a Literal: they take some strings, which no probe finds
    (dtype's "bfloat16", EXAONE 4's sliding_window_pattern "LLLG"), so no string is refused or probed there."""
    own = dataclasses.fields(built) if dataclasses.is_dataclass(built) else ()
    return {f.name for f in own if "str" in repr(f.type) or "Literal" in repr(f.type)}


def strict_kinds(t: str, e: dict, model_floats: list[str]) -> dict[str, list[str]] | None:
    """The kinds of value (KINDS) the classes raise on for each scalar or list field of the text config (the
    class holding an int, a float, a bool, a string or a list, or None and taking one of NONE_OWN: transformers
    5's strict fields, `head_dim: 96.0`, `sliding_window: true`, `num_attention_heads: "32"`, `vocab_size: [32000]`,
    `rms_norm_eps: "1e-6"`, `pad_token_id: "0"`, whether from_hf reads the key or not), and each key from_hf
    reads under its own name and the class's (_int_keys: an int field the class holds None, probed as 64); a
    kind is refused where every probe of it raises and the field's own value does not: {refused kinds: keys}.
    Not null for a key from_hf reads (null_refused measures those beside other keys too). A head key the class
    takes as a float and its text model fails on (`model_floats`, model_refused's) is refused as a float too.
    None where the classes are not built of a file without RoPE keys (not measured: from_hf refuses every
    other kind for any key the class defaults as an int)."""
    if _raises(t, e, {}):
        return None
    built = _built(t, e, {})
    saved = built.to_dict()  # (to_dict: a heterogeneous class refuses getattr of a per-layer key)
    read = _int_keys(e, saved)
    reads = set(_read_names(e)) | set(MOVED)
    own_fields = dataclasses.fields(built) if dataclasses.is_dataclass(built) else ()
    fields = {**{f.name: saved.get(f.name) for f in own_fields if f.name in saved and f.name != "layer_types"},
              **read}  # (layer_types: its own measure, layer_types_checked, a tuple and a length included)
    refused = field_kinds(fields, lambda kw: _raises(t, e, kw), reads, _some_strings(built))
    for key, kinds in alias_kinds(t, e, saved, reads, _some_strings(built)).items():
        refused[key] = "".join(c for c in KINDS if c in refused.get(key, "") + kinds)
    for key in model_floats:  # (the class takes the float, the model does not)
        refused[key] = "".join(c for c in KINDS if c in refused.get(key, "") + "f")
    return _grouped(refused)


def null_beside_layer_types(t: str, e: dict, strict: dict[str, list[str]] | None) -> list[str] | None:
    """The keys whose null `strict` refuses (measured alone, over the class's defaults) and transformers takes
    beside a file's `layer_types` (the class's own list): the class builds and its text model runs forward on
    the meta device (hf_probe's, as the model table runs it). EXAONE 4's, Gemma 3's and Cohere 2's
    sliding_window_pattern makes the layer types only where the file gives none, so a null there raises alone
    and is never read beside them (EXAONE 4.0 1.2B's file gives both); an MoE's expert count the class takes
    there too, and its model does not. None where there are none."""
    own = _built(t, e, {}).to_dict().get("layer_types") if strict else None
    if not isinstance(own, list) or not _holds(_model_runs, t, {"layer_types": own}, e):
        return None
    keys = sorted(k for letters, keys in strict.items() if "n" in letters for k in keys  # type: ignore[union-attr]
                  if not _raises(t, e, {k: None, "layer_types": own})
                  and _holds(_model_runs, t, {k: None, "layer_types": own}, e))
    return keys or None


def null_needs_layer_types(t: str, e: dict, nulls: list[str]) -> list[str] | None:
    """The keys whose null the classes raise on where a file gives no layer_types (alone, over the class's
    defaults) and take beside the class's own layer_types, not refused anyway (`nulls`, null_refused's): the
    class derives the layer types from them where a file gives none (EXAONE 4's sliding_window: 4 % 0; Cohere 2's
    and Gemma 3's sliding_window_pattern, which their code pops from its keyword arguments: `legacy_kwargs`).
    transformers loads such a file only with its layer_types. The keys from_hf reads and those legacy ones; None
    where there are none."""
    if _raises(t, e, {}) or "layer_types" in FILL.get(t, {}):
        return None
    built = _built(t, e, {})
    own = built.to_dict().get("layer_types")
    if not isinstance(own, list):
        return None
    keys = [k for k in dict.fromkeys([*_read_names(e), *legacy_kwargs(type(built))])
            if k not in nulls and k != "layer_types" and _raises(t, e, {k: None})
            and not _raises(t, e, {k: None, "layer_types": own})]
    return keys or None


def legacy_kwargs(cls: type) -> list[str]:
    """The keys a config class's own code takes out of its keyword arguments (`kwargs.pop("name"` or
    `kwargs.get("name"`): older names its files still hold (Cohere 2's sliding_window_pattern), read from its
    source."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return []
    return list(dict.fromkeys(re.findall(r"""kwargs\.(?:pop|get)\(\s*["'](\w+)["']""", source)))


def field_kinds(fields: dict[str, Any], raises: Callable[[dict], bool], reads: set[str],
                some_strings: set[str]) -> dict[str, str]:
    """{key: the kinds (KINDS) of value `raises` is true of for it} of each scalar or list field of `fields` (key ->
    the value the class holds), as strict_kinds measures them: a field the class holds None measured at the
    first of NONE_OWN it takes, one it holds [] at the first of EMPTY_OWN; no string where the field takes some
    (`some_strings`); not null for a key from_hf reads (`reads`: null_refused measures those)."""
    refused: dict[str, str] = {}
    for key, v in sorted(fields.items()):
        if v is None or v == []:  # (pad_token_id's None, mlp_only_layers' []: its own kind the first value it takes)
            tried = NONE_OWN if v is None else EMPTY_OWN
            v = next((own for own in tried if not raises({key: own})), None)
        probes = _kind_probes(v)
        if probes is not None and key in some_strings:
            probes.pop("s", None)
        if probes is not None and not raises({key: v}):
            refused[key] = "".join(kind for kind, values in probes.items() if (kind != "n" or key not in reads)
                                   and all(raises({key: x}) for x in values))
    return refused


def alias_kinds(t: str, e: dict, saved: dict, reads: set[str], some_strings: set[str]) -> dict[str, str]:
    """{name: the kinds (KINDS) refused under it} of each attribute_map name of the text class whose stored field
    holds a scalar: the classes validate their fields before they set a file's other keys, so a value given
    under the alias is stored unchecked (Mixtral's `num_experts: 8.0`, GPT-J's `hidden_size: 512.0`), and its
    model decides: a kind is refused where the class raises or its text model, built on the meta device and run
    forward (else only built, where the forward does not run bare), fails on every probe of it; not null for a
    key from_hf reads (null_refused measures those)."""
    out: dict[str, str] = {}
    for alias, stored in e.get("aliases", {}).items():
        held = _alias_own(t, e, alias, saved.get(stored))
        probes = _kind_probes(held)
        if probes is None:
            continue
        if stored in some_strings:
            probes.pop("s", None)
        own = {alias: held}
        checks = [fine for fine in (_model_runs, _model_builds) if _holds(fine, t, {}, e) and _holds(fine, t, own, e)]
        if not checks:
            continue
        out[alias] = "".join(kind for kind, values in probes.items() if (kind != "n" or alias not in reads)
                             and all(not _holds(checks[0], t, {alias: x}, e) for x in values))
    return out


def _alias_own(t: str, e: dict, alias: str, held: Any) -> Any:
    """The value an attribute_map name is probed beside: the class's own (`held`), or where it holds None, the
    first of NONE_OWN the class takes under the name (ERNIE 4.5 MoE's num_mtp_layers, as field_kinds)."""
    if held is not None:
        return held
    return next((own for own in NONE_OWN if not _raises(t, e, {alias: own})), None)


def _grouped(refused: dict[str, str]) -> dict[str, list[str]]:
    """{refused kinds: keys} of {key: refused kinds} (the keys refusing none left out)."""
    out: dict[str, list[str]] = {}
    for key, kinds in refused.items():
        if kinds:
            out.setdefault(kinds, []).append(key)
    return out


def outer_kinds(t: str, e: dict) -> dict[str, dict[str, Any]] | None:
    """Of a composite model type (the language model's config at the table's `text_config` path): {the dotted
    path of each other config in the file ("" the outer one, "vision_config", "thinker_config.audio_config"):
    {"chosen": {the path of each config on the way whose class the file's model_type chooses: the one measured},
    "kinds": {refused kinds: keys}, "untyped_fails": where the class raises on the config given there without its
    model_type}}, strict_kinds' measure of its scalar and list fields,
    each given in the file at that path beside the preset's other values
    (Qwen2-VL's `vision_config.depth: 2.0`, an outer `tie_word_embeddings: null`: transformers' classes raise
    on loading the file, so from_hf refuses it too); None where the class is not built of a bare file."""
    from transformers import AutoConfig, PreTrainedConfig  # noqa: PLC0415

    text_path = e["text_config"]
    base = _inside(text_path, dict(FILL.get(t, {})))

    def build(kw: dict) -> Any:
        return AutoConfig.for_model(t, **copy.deepcopy(kw))

    try:
        outer = build(base)
    except Exception:  # noqa: BLE001
        return None
    out: dict[str, dict[str, Any]] = {}
    nodes: list[tuple[list[str], Any, dict[str, str]]] = [([], outer, {})]
    while nodes:
        path, node, chosen = nodes.pop()
        subs = {f: v for f, v in vars(node).items() if isinstance(v, PreTrainedConfig)}  # (not getattr: a
        # heterogeneous class refuses it of a per-layer key)
        auto = {f for f, cls in getattr(type(node), "sub_configs", {}).items() if cls is AutoConfig}
        nodes += [([*path, f], sub, {**chosen, **({".".join([*path, f]): sub.model_type} if f in auto else {})})
                  for f, sub in subs.items() if [*path, f] != text_path]
        saved = _own_values(node)
        fields = dataclasses.fields(node) if dataclasses.is_dataclass(node) else ()
        own = {f.name: saved.get(f.name) for f in fields if f.name in saved and f.name not in subs}

        preset = saved if path else {}  # (a sub-config's key beside the outer preset's other values, as files
        # give it: CLIP's hidden_size under LLaVA's 16 heads, not its own class's 12 that 1024 does not divide)

        def raises(kw: dict, path: list[str] = path, preset: dict = preset) -> bool:
            try:
                build(_merged(base, _inside(path, {**preset, **kw})))
            except Exception:  # noqa: BLE001
                return True
            return False

        grouped = _grouped(field_kinds(own, raises, set(), _some_strings(node)))
        # (Music Flamingo's audio_config without its model_type: AutoConfig's KeyError; LLaVA's fills in CLIP's)
        untyped = ".".join(path) in chosen and raises({}, preset={k: v for k, v in preset.items() if k != "model_type"})
        if grouped or untyped:  # (with the model types of the configs on its path that the file's model_type
            # chooses, by AutoConfig: one naming another is built by another class; a fixed class, Qwen2-VL's
            # vision, is not)
            out[".".join(path)] = {"chosen": chosen, "kinds": grouped, **({"untyped_fails": True} if untyped else {})}
    return out


def _own_values(node: Any) -> dict:
    """A config's saved values but its sub-configs' (the preset a file gives at its path): vars, not getattr,
    finds those (a heterogeneous class refuses getattr of a per-layer key)."""
    from transformers import PreTrainedConfig  # noqa: PLC0415

    return {k: v for k, v in node.to_dict().items() if not isinstance(vars(node).get(k), PreTrainedConfig)}


def _merged(a: dict, b: dict) -> dict:
    """`b` over `a`, dicts merged key by key (a sub-config's key beside the FILL in the text config's)."""
    out = dict(a)
    for k, v in b.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) and v else v
    return out


def layer_types_checked(t: str, e: dict) -> dict[str, bool] | None:
    """Whether the classes raise on a file's layer_types one shorter ("shorter") or one longer ("longer")
    than num_hidden_layers, on a name outside transformers' layer types ("names") and on a tuple of the
    names in place of a list ("not_list", its strict list field), on an integer ("other": its strict field
    refuses what is no list, where validate_layer_type does not iterate it, Gemma 4's): PreTrainedConfig's
    validate_layer_type, which checks any class's list (one its model reads or not); on any list ("any",
    the others true with it); None where the class does not build the list of its own length."""
    if _raises(t, e, {}):
        return None
    built = _built(t, e, {})
    n, own = getattr(built, "num_hidden_layers", None), getattr(built, "layer_types", None)
    if type(n) is not int or n < 2:
        return None
    own = list(own) if isinstance(own, list) and len(own) == n else ["full_attention"] * n
    kw = {"num_hidden_layers": n}
    if _raises(t, e, {**kw, "layer_types": own}):  # (Falcon-H1's is a property without a setter: any list raises)
        every = all(_raises(t, e, {**kw, "layer_types": lt}) for lt in (["full_attention"] * n, own[:-1], []))
        return dict.fromkeys(("any", "shorter", "longer", "names", "not_list", "other"), True) if every else None
    return {"shorter": _raises(t, e, {**kw, "layer_types": own[:-1]}),
            "longer": _raises(t, e, {**kw, "layer_types": own + own[-1:]}),
            "names": _raises(t, e, {**kw, "layer_types": own[:-1] + ["no_such_attention"]}),
            "not_list": _raises(t, e, {**kw, "layer_types": tuple(own)}),
            "other": _raises(t, e, {**kw, "layer_types": 5})}


def null_refused(t: str, e: dict) -> list[str]:
    """The keys from_hf reads (DEFAULT_KEYS and the table's head keys) on which the classes raise when the file
    gives them as null (a strict int field: Qwen3's head_dim, every class's hidden_size), where they build the
    file without them, alone and beside every other such key as the class saves them (EXAONE 4's class fails
    on a null sliding_window only where it derives layer_types from it); each also under the name the class
    stores it by (its attribute_map: GPT-J's n_positions for max_position_embeddings), which a file may give."""
    if _raises(t, e, {}):
        return []
    keys = dict.fromkeys(_read_names(e))
    built = _built(t, e, {}).to_dict()
    saved = {k: v for k, v in built.items() if k in keys and v is not None}
    heads = built.get("num_attention_heads")
    # (and beside a hidden size of 64 per head: Seed-OSS's defaults derive an odd head_dim 51 from a null, which
    # fails for its oddness, where a Hub file's derive 64 and run)
    even = {"hidden_size": 64 * heads} if isinstance(heads, int) and heads > 0 else {}
    return [k for k in keys if _raises(t, e, {k: None}) and _raises(t, e, {**saved, k: None})
            and _raises(t, e, {**{n: v for n, v in even.items() if n != k}, k: None})]


def model_refused(t: str, e: dict) -> dict[str, list[str]]:
    """The head keys from_hf reads (the table's: head_dim, qk_rope_head_dim, kv_channels; head_dim of a
    "quotient" type, which from_hf takes only as the quotient or null) that the classes
    take as null, or as a whole float, but on which the text model fails while it runs without the key and with
    its integer (Qwen2's and ERNIE 4.5 VL's attention takes getattr(config, "head_dim", quotient): None, whose
    ** -0.5 raises, or a float nn.Linear refuses): {"null": keys, "float": keys}, built on the meta device and
    run forward as the model table runs it, or, where the probe cannot run its forward, only built."""
    out: dict[str, list[str]] = {"null": [], "float": []}
    if _raises(t, e, {}):
        return out
    built = _built(t, e, {}).to_dict()
    aliases = e.get("aliases", {})
    hidden, heads = (built.get(aliases.get(k, k)) for k in ("hidden_size", "num_attention_heads"))
    keys = dict.fromkeys("head_dim" if s["head_dim"] == "quotient" else s["head_dim"]  # (a quotient type's file
                         for s in e["by_layer_type"].values() if s["head_dim"] is not None)  # may give it too)
    for k in keys:
        own = built.get(k)
        width = own if type(own) is int else hidden // heads if type(hidden) is int and type(heads) is int and \
            heads > 0 and hidden % heads == 0 else None
        if width is None:
            continue
        # (run forward where the probe can, else only built: Nemotron 3.5 Transcribe's forward, which the probe
        # cannot run, still fails to build on a null head_dim's ** -0.5)
        checks = [fine for fine in (_model_runs, _model_builds)
                  if _holds(fine, t, {}, e) and _holds(fine, t, {k: width}, e)]
        for kind, value in (("null", None), ("float", float(width))):
            if checks and not _raises(t, e, {k: value}) and not _holds(checks[0], t, {k: value}, e):
                out[kind].append(k)
    return out


def model_refused_null(t: str, e: dict) -> list[str]:
    """The other keys from_hf reads (_read_keys, and the top-level partial factor keys) that the class holds as
    a value, takes as null, and on whose null the text model fails while it runs bare (Ministral's
    sliding_window: its model always builds the sliding mask, which needs one; Mistral's runs with none;
    Phi's partial_rotary_factor, which its attention reads from the rope dict the null left without one),
    built on the meta device and run forward."""
    if _raises(t, e, {}):
        return []
    built = _built(t, e, {}).to_dict()
    aliases = e.get("aliases", {})
    heads = {s["head_dim"] for s in e["by_layer_type"].values()}
    keys = [k for k in dict.fromkeys([*_read_keys(e), *PARTIAL_KEYS]) if k not in heads
            and (k in PARTIAL_KEYS or built.get(aliases.get(k, k)) is not None)  # (a factor sits in rope_parameters)
            and not _raises(t, e, {k: None})]  # (a class default of None: the bare run is its null)
    if not keys or not _model_runs(t, {}, e):
        return []
    return [k for k in keys if not _model_runs(t, {k: None}, e)]


def heads_probes(t: str, e: dict) -> dict[str, dict] | None:
    """Files of the class's own head count and a hidden size it divides ("multiple": the class's own) or not
    ("off_by_one", "off_by_two": one and two past), and of its own hidden size over a head count that does not
    divide it ("other_heads", as many key / value heads: no grouping to fail on), each bare and beside an
    explicit head_dim (the quotient): the probes of `heads_divide`; None where the class does not build bare
    or has fewer than three heads."""
    if _raises(t, e, {}):
        return None
    built = _built(t, e, {}).to_dict()
    aliases = e.get("aliases", {})
    hidden, heads = (built.get(aliases.get(k, k)) for k in ("hidden_size", "num_attention_heads"))
    if type(hidden) is not int or type(heads) is not int or heads < 3 or hidden % heads:
        return None
    d = hidden // heads
    other = next(n for n in range(heads + 1, 2 * hidden) if hidden % n)  # (its own hidden size, not a multiple)
    out = {}
    for name, size, n in (("multiple", hidden, heads), ("off_by_one", hidden + 1, heads),
                          ("off_by_two", hidden + 2, heads), ("other_heads", hidden, other)):
        out[name] = {"hidden_size": size, "num_attention_heads": n, **({"num_key_value_heads": n} if n != heads
                                                                         else {})}
        out[name + "_head_dim"] = {**out[name], "head_dim": d}
    return out


def heads_divide(t: str, e: dict) -> dict[str, bool] | None:
    """Whether transformers' code fails on a hidden_size that num_attention_heads does not divide, without
    ("bare") and beside ("head_dim") an explicit head_dim: where the config class raises on every probe that
    breaks the division, the hidden size's or the head count's (the validate_architecture of Llama's and many
    other classes; a composite whose vision tower must match the hidden size raises on any other hidden size,
    not on another head count: not taken as raising for the division); where the class takes them, where its
    text model runs on its own sizes (built on the meta device and run forward) and on none of those probes
    (GPT-J's attention raises at build; Mistral's runs, its head dim the floor). A kind is None where the
    class raises on its own sizes so; the whole None where not measured (heads_probes)."""
    probes = heads_probes(t, e)
    if probes is None:
        return None
    out: dict[str, bool | None] = {}
    for kind, tail in HEADS_KINDS:
        if _raises(t, e, probes["multiple" + tail]):  # (Falcon's head_dim is a property: no file gives one)
            out[kind] = None
            continue
        out[kind] = all(_raises(t, e, probes[name + tail]) for name in BREAKS) or (
            _model_runs(t, probes["multiple" + tail]) and not any(_model_runs(t, probes[name + tail])
                                                                   for name in BREAKS))
    return out if any(v is not None for v in out.values()) else None


BREAKS = ("off_by_one", "off_by_two", "other_heads")  # the probes of heads_probes that break the division
HEADS_KINDS = (("bare", ""), ("head_dim", "_head_dim"))  # heads_divide's kinds, and their probes' names' tails


def _holds(fine: Callable[[str, dict, dict], bool], t: str, kw: dict, e: dict) -> bool:
    """`fine(t, kw, e)`, False where the classes raise on `kw` (Falcon's head_dim, a property without setter)."""
    try:
        return fine(t, kw, e)
    except Exception:  # noqa: BLE001
        return False


def _model_builds(t: str, kw: dict, e: dict) -> bool:
    """Whether the text model of model type `t`'s default config with `kw` set on it, as the classes build a
    file of `kw` (table entry `e`), builds on the meta device (hf_probe's meta_model)."""
    import hf_probe  # noqa: PLC0415  (torch)

    return hf_probe.meta_model(t, {}, _built(t, e, kw)) is not None


def _model_runs(t: str, kw: dict, e: dict | None = None) -> bool:
    """Whether the text model of model type `t`'s default config with `kw` set on it (with table entry `e`:
    of a file of `kw`, as the classes build it, their defaults filled in) builds on the meta device and runs
    forward (hf_probe's meta_model and meta_forward, as the model table runs it)."""
    import hf_probe  # noqa: PLC0415  (torch)

    built = hf_probe.meta_model(t, {**FILL.get(t, {}), **kw}) if e is None else \
        hf_probe.meta_model(t, {}, _built(t, e, kw))
    return built is not None and hf_probe.meta_forward(built[0], lambda: None)


def nope_longer(t: str, e: dict) -> dict[str, bool] | None:
    """For a model type whose layers say by a flags list whether they rotate (no_rope_layers): whether the
    classes raise on a list longer than num_hidden_layers, where the file gives no layer_types (Llama 4's class
    derives layer_types from the list, one per flag, and validates their count) and where it gives them."""
    rule = e.get("nope") or {}
    if rule.get("kind") != "flags":
        return None
    n = 4
    try:
        base = _built(t, e, {"num_hidden_layers": n})
        flags, types = list(getattr(base, rule["key"])), getattr(base, "layer_types", None)
    except Exception:  # noqa: BLE001
        return None
    longer = {"num_hidden_layers": n, rule["key"]: flags + flags[:1]}
    with_types = dict(longer, layer_types=list(types)) if isinstance(types, list) else None
    return {"without_layer_types": _raises(t, e, longer),
            "with_layer_types": with_types is not None and _raises(t, e, with_types)}


def class_sections(t: str, e: dict) -> tuple[list[int], dict, list[list[int]], int | None] | None:
    """For an M-RoPE model type whose class builds bare: (its sections, or its rotary module's, the table's;
    its rope dict without them; those sections changed: one pair more, one less, four, two; the width of the
    table's head key, None where that is not an int). None for another model type."""
    if e.get("mrope") not in MROPE_LAYOUTS or _raises(t, e, {}):
        return None
    built = _built(t, e, {})
    rope = built.rope_parameters if isinstance(built.rope_parameters, dict) else {}
    sec = list(rope.get("mrope_section") or e.get("mrope_section") or [])
    bare = {k: v for k, v in rope.items() if k != "mrope_section"}
    wrong = [sec[:-1] + [sec[-1] + 1], sec[:-1] + [sec[-1] - 1], sec[:-1] + [sec[-1] - 1, 1], [sec[0], sum(sec[1:])]]
    key = head_key(e)
    head = getattr(built, key, None) if isinstance(key, str) else None
    return sec, bare, wrong, head if isinstance(head, int) and not isinstance(head, bool) else None


def mrope_sections(t: str, e: dict) -> dict[str, Any] | None:
    """For an M-RoPE model type whose config class validates mrope_section (Cosmos 3 Edge's: three sections
    summing to half its head_dim): `key`, the head width they must span half of (a rope dict without them is
    the rope type's `needs`, measured by type_keys). Measured on the class's sections (or
    its rotary module's, the table's) changed: one pair more or less, four or two sections, and on a head 16
    wider with and without sections 8 pairs wider. None where the class takes them all; the run stops on a
    class that refuses some of those only (a rule vkrope does not know)."""
    known = class_sections(t, e)
    if known is None:
        return None
    sec, bare, wrong, head = known

    def refused(sections: list[int], **kw: Any) -> bool:
        return _raises(t, e, {**kw, "rope_parameters": {**bare, "mrope_section": sections}})

    if not any(refused(s) for s in wrong):
        return None
    key = head_key(e)
    wider = {key: head + 16} if head is not None else {}
    if refused(sec) or not all(refused(s) for s in wrong) or not wider \
            or refused(sec[:-1] + [sec[-1] + 8], **wider) or not refused(sec, **wider):
        sys.exit(f"{t}: its config class refuses some mrope_section values and not others in a way "
                 "mrope_sections does not measure: measure it before vkrope reads its sections")
    return {"key": key}


def attention_reads(cls: Any) -> list[str]:
    """The rope dict keys the model's code reads outside its rotary module (`config.rope_parameters.get("K")`
    or `["K"]`: Ministral 3's and Mistral 4's attention scale q by llama_4_scaling_beta over the original
    length, whatever the rope type), read from the modeling module's source; rope_type, rope_theta, the partial
    factor and M-RoPE's keys (read by the rotary module) left out."""
    from hf_probe import is_rotary_class, modeling_module  # noqa: PLC0415  (torch)

    module = modeling_module(cls)  # (its own, or the one of the model class AutoModel builds for it)
    if module is None:
        return []
    tree = ast.parse(inspect.getsource(module))
    rotary = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and is_rotary_class(c.name)
              for n in ast.walk(c)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in rotary:
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and ast.unparse(node.func.value).endswith("rope_parameters") and node.args \
                and isinstance(node.args[0], ast.Constant) and len(node.args) == 1:
            found.add(str(node.args[0].value))
        elif isinstance(node, ast.Subscript) and ast.unparse(node.value).endswith("rope_parameters") \
                and isinstance(node.slice, ast.Constant):
            found.add(str(node.slice.value))
    return sorted(found - {"rope_type", "type", "rope_theta", "partial_rotary_factor", "mrope_section",
                           "mrope_interleaved"})


WIDTH_KEYS = ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "kv_channels")


def measure_width(t: str, e: dict) -> dict[str, Any] | None:
    """For a model type whose attention rotates a width of its own key (the table's head key `key`: DeepSeek's
    qk_rope_head_dim) while transformers' rotary module makes cos / sin of head_dim's width (times the partial
    factor): how the class builds that head_dim (the file's, `head_dim_file`; else the sum of `head_sum`,
    with the class defaults `defaults`) and the factor (`ratio`: Mistral 4's key / head_dim where the file's
    rope_parameters has none), and whether the model's own default rope function reads the factor
    (`default_partial`, run); `alias`: head_dim names the key itself (the class's attribute_map: JetMoe's
    kv_channels). None for another model type, or where the class cannot be measured."""
    key = head_key(e)
    if key in (None, "head_dim", "quotient"):
        return None
    try:
        base = _built(t, e, {})
        ints = {k: getattr(base, k) for k in dict.fromkeys((key, *WIDTH_KEYS))
                if isinstance(getattr(base, k, None), int) and not isinstance(getattr(base, k), bool)}
        head = base.head_dim
        head_file = _built(t, e, {"head_dim": head + 8}).head_dim == head + 8
        moved = [{k: v + 8 * 2 ** i for i, (k, v) in enumerate(ints.items())},  # (no two sums alike)
                 {k: v + 8 * 3 ** i for i, (k, v) in enumerate(ints.items())}]
        sums = [s for n in range(1, len(ints) + 1) for s in itertools.combinations(ints, n)
                if sum(ints[k] for k in s) == head and all(
                    _built(t, e, kw).head_dim == sum(kw[k] for k in s) for kw in moved)]
        rp = _built(t, e, {**moved[0], "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}})
        ratio = rp.rope_parameters.get("partial_rotary_factor") == rp.to_dict()[key] / rp.head_dim
        half = _rotary_width(t, e, {"rope_parameters": {"rope_type": "default", "rope_theta": 1e4,
                                                        "partial_rotary_factor": 0.5}})
    except Exception:  # noqa: BLE001
        return None
    if len(sums) != 1 or half is None:
        return None
    null = _rotary_width(t, e, {"head_dim": None})  # (MiniCPM 3's class ignores a file's head_dim, null too)
    rule = {"key": key, "head_dim_file": head_file, "head_sum": list(sums[0]),
            "alias": getattr(type(base), "attribute_map", {}).get("head_dim") == key,
            "defaults": {k: ints[k] for k in dict.fromkeys((key, *sums[0]))}, "ratio": ratio,
            "default_partial": half[0] != half[1].head_dim,
            "null_head_dim_runs": null is not None and null[0] == null[1].to_dict().get(key)}
    why = check_width(t, e, rule)
    return rule if why is None else {"key": key, "why": why}


def width_step(t: str, e: dict) -> int | None:
    """4 where the class loads a config only if every layer type's rotated width, int(head_dim * its partial
    factor), is a multiple of 4 (NeoMME's: its two position axes take alternate pairs), measured over the head
    dims 64 to 96 with the class's own factors: it raises exactly where a width is not; None where it loads a
    width of 2 mod 4 (or is not measured: no head_dim key, a class that cannot be built)."""
    if head_key(e) != "head_dim":
        return None
    try:
        rp = _built(t, e, {}).rope_parameters or {}
    except Exception:  # noqa: BLE001
        return None
    dicts = [d for d in rp.values() if isinstance(d, dict)] if config_rules.per_layer_type(rp) else [rp]
    factors = [d.get("partial_rotary_factor", 1.0) for d in dicts]
    if not factors or not all(isinstance(f, (int, float)) for f in factors):
        return None
    agrees = [(_raises(t, e, {"head_dim": h}), any(int(h * f) % 4 for f in factors)) for h in range(64, 98, 2)]
    return 4 if any(raised for raised, _ in agrees) and all(raised == off for raised, off in agrees) else None


def _rotary_width(t: str, e: dict, kw: dict) -> tuple[int, Any] | None:
    """(the width of the cos / sin transformers' text rotary module makes of text config keys `kw`, the built
    text config); None where the class or the module raises."""
    try:
        text = _built(t, e, kw)
        inv = _rotary_class(t, e)(text).inv_freq
    except Exception:  # noqa: BLE001
        return None
    return 2 * int(inv.numel()), text


def width_probes(rule: dict) -> list[dict]:
    """Text config keys mixing head_dim (absent, null, the key's, another), the key and the summed keys
    (the class's, another), the rope dict (none, rope_parameters default, yarn or proportional, rope_scaling
    yarn) with a factor in it or not, and a top-level factor."""
    key, d = rule["key"], rule["defaults"]
    heads = [{}, {"head_dim": None}, {"head_dim": d[key]}, {"head_dim": 2 * d[key] + 8}]
    dims = [{}, {key: d[key] // 2}] + [{k: 2 * d[k]} for k in rule["head_sum"] if k != key]
    yarn = {"rope_type": "yarn", "factor": 2.0, "rope_theta": 1e4, "original_max_position_embeddings": 1024}
    proportional = {"rope_type": "proportional", "rope_theta": 1e4}  # (its cos / sin span the head: whole_head)
    dicts = [{}] + [{where: dict(one, **extra)} for where, one in (("rope_parameters", {"rope_type": "default",
                                                                                          "rope_theta": 1e4}),
                                                                   ("rope_parameters", yarn), ("rope_scaling", yarn),
                                                                   ("rope_parameters", proportional))
                    for extra in ({}, {"partial_rotary_factor": 1.0}, {"partial_rotary_factor": 0.5})]
    tops = [{}, {"partial_rotary_factor": 0.5}, {"partial_rotary_factor": None}, {"rotary_pct": 0.5}]
    return [{**h, **k, **r, **p} for h, k, r, p in itertools.product(heads, dims, dicts, tops)]


def check_width(t: str, e: dict, rule: dict) -> str | None:
    """None where config_rules.rotary_width, with `rule`, never takes a probe on which transformers' rotary
    module makes cos / sin of another width than the attention rotates (or raises); else the first such."""
    preset = _built(t, e, {}).rope_parameters.get("rope_type", "default")  # (from_hf: the class's preset)
    for kw in width_probes(rule):
        made = _rotary_width(t, e, kw)
        width = None if made is None else made[0]
        rotated = None if made is None else made[1].to_dict().get(rule["key"])
        kind = (kw.get("rope_scaling") or kw.get("rope_parameters") or {"rope_type": preset}).get("rope_type")
        got = config_rules.rotary_width(copy.deepcopy(kw), rule, kind)
        if got is not None and (width is None or got != (width, rotated) or width != rotated):
            return f"{kw}: the rules read {got}, transformers {(width, rotated)}"
        if got is None and width is not None and width == rotated:  # (a false refusal: counted, not hidden)
            FALSE_WIDTH_REFUSALS[t] = FALSE_WIDTH_REFUSALS.get(t, 0) + 1
    return None


PROBES_FAILED: list[str] = []  # the model types whose key probes raised (listed at the end of the run)
MISREAD: dict[str, str] = {}  # "type.key": a key vkrope reads that, given alone, it read otherwise than transformers
# (refused given so, or dropped where the class ignores it)
FALSE_WIDTH_REFUSALS: dict[str, int] = {}  # per model type, the probes rotary_width refuses that transformers runs


def read_keys(e: dict, rules: dict) -> set[str]:
    """The keys from_hf reads of a model type's text config (those its model table and rules name)."""
    nope = (e.get("nope") or {}).get("key")
    return {*DEFAULT_KEYS, *rules.get("keys", []), *MOVED, *WIDTH_KEYS, *rules.get("attention_reads", []),
            "rope_parameters", "rope_scaling", "layer_types", "per_layer_config", "rope_interleave", "mrope_section",
            "mrope_interleaved", *e.get("aliases", {}), *e.get("aliases", {}).values(), *e.get("layer_keys", []),
            *(r["key"] for r in e.get("per_layer_keys", [])), *e.get("switches", {}), *([nope] if nope else [])}


def _steers(text: Any) -> str:
    """What of a built text config says its RoPE: the rope dict and the head widths (a cheap first look)."""
    d = text.to_dict()
    return json.dumps({k: d.get(k) for k in ("rope_parameters", "head_dim", "hidden_size", "num_attention_heads",
                                             *WIDTH_KEYS)}, sort_keys=True, default=str)


def probe_keys(t: str, e: dict, cls: Any, lts: list[str] | None, read: set[str], gold: list) -> dict[str, Any]:
    """The rules of model type `t`'s other keys (config_checks.check_unread, drop_ignored): each key its class
    names, given alone (hf_key_probes), where vkrope's reading stops agreeing with transformers': `unread`
    {key: {default, moved, and for a key vkrope reads elsewhere the kinds of value read otherwise}},
    `ignored` (keys vkrope reads that the class ignores for every value probed: UnlimitedOCR's head_dim);
    `probe_why` where the type could not be probed. The probes where transformers runs go into `gold`, with
    the cos / sin width where vkrope's agreed without the key."""
    try:
        rotary_cls, base = _rotary_class(t, e), _built(t, e, {})
    except Exception as exc:  # noqa: BLE001
        return {"probe_why": f"its text config or rotary class could not be built ({type(exc).__name__})"}
    def view(kw: dict) -> Any:
        """transformers' reading of text config keys `kw` (hf_key_probes.class_view)."""
        return kp.class_view(lambda k: _built(t, e, k), kw, lts, e, rotary_cls, compared, read_factor, model_partial)
    t0, v0 = (view({}), kp.vkrope_view(file_config(t, e, {}), lts)) if rotary_cls else (None, {})
    if t0 is None or all(v is None for v in v0.values()):
        return {"probe_why": "transformers' rotary module or vkrope does not read its bare config"}
    out: dict[str, Any] = {"unread": {}, "ignored": []}
    layers = kp.attr(base, "num_hidden_layers")
    for key in kp.candidates(cls):
        default = kp.attr(base, key)
        moved: set[str] = set()
        kinds: set[str] = set()
        ignores = []
        for value in kp.probe_values(default, layers if isinstance(layers, int) and 0 < layers <= 512 else 4):
            seen = _probe(t, e, key, value, base, view, (t0, v0), lts, gold)
            if seen is None:
                continue
            bad, unchanged = seen
            ignores.append(unchanged and bool(bad))
            if bad:
                moved |= {b.split(".")[-1] for b in bad}
                kinds.add("list" if isinstance(value, list) else "number")
        if key in read and ignores and all(ignores):
            out["ignored"].append(key)
        elif moved:
            out["unread"][key] = {"default": kp._jsonable(default), "moved": ", ".join(sorted(moved)),
                                  **({"kinds": sorted(kinds)} if key in read else {})}
    return out


def _probe(t: str, e: dict, key: str, value: Any, base: Any, view: Any, start: tuple, lts: list[str] | None,
           gold: list) -> tuple[list[str], bool] | None:
    """(the fields vkrope reads otherwise than transformers with `key` given as `value`, whether transformers'
    reading is the bare file's), or None where the key changes neither or transformers fails on it."""
    t0, v0 = start
    try:
        made = _built(t, e, {key: value})
    except Exception:  # noqa: BLE001
        return None
    cfg = file_config(t, e, {key: value})
    v1 = kp.vkrope_view(cfg, lts)
    if _steers(made) == _steers(base) and v1 == v0:
        return None
    t1 = view({key: value})
    if t1 is None:
        return None
    for lt in lts or [None]:
        if t1[lt] is not None:
            width = t1[lt][4] if v0[lt] is not None and t0[lt] is not None and v0[lt][4] == t0[lt][4] else None
            gold.append({"config": cfg, "layer_type": lt, "want": list(t1[lt][:4]), "width": width})
    return kp.disagreement(t0, v0, t1, v1), t1 == t0


def other_keys(t: str, e: dict, cls: Any, rules: dict, lts: list[str] | None, gold: list) -> None:
    """Into `rules`: model type `t`'s rules of the keys beyond RoPE's shapes (probe_keys, and the modeling
    module's reads: hf_key_probes.modeling_reads); into `gold`, their probes and the fill's."""
    read = read_keys(e, rules)
    try:
        probed = probe_keys(t, e, cls, lts, read, gold)
    except Exception as exc:  # noqa: BLE001  (said, and the run goes on: a class the probes cannot drive)
        probed = {"probe_why": f"the key probes failed ({type(exc).__name__}: {str(exc)[:200]})"}
    rules.update(probed)
    if "probe_why" in probed:
        PROBES_FAILED.append(t)
    MISREAD.update({f"{t}.{k}": r["moved"] for k, r in probed.get("unread", {}).items() if "kinds" in r})
    MISREAD.update({f"{t}.{k}": "ignored by the class" for k in probed.get("ignored", [])})
    try:
        rules["modeling_reads"] = kp.modeling_reads(cls, read | set(rules.get("unread", {})), _built(t, e, {}))
    except Exception:  # noqa: BLE001  (the class cannot be built bare: its files' keys decide alone)
        rules["modeling_reads"] = {}
    if (rules.get("outer") or {}).get("fill"):  # (the text_configs the fill was checked on, with the answer)
        for kw in kp.FILL_PROBES:
            made = class_reads(t, e, kw, lts) or {}
            gold += [{"config": file_config(t, e, kw), "layer_type": lt, "want": want_of(e, lt, w)}
                     for lt, w in made.items()]


def _fill(t: str, e: dict, text_cls: Any, outer: dict) -> None:
    """Into `outer`: the keys composite type `t`'s class fills into a file's text_config (hf_key_probes.text_fill)."""
    from transformers import AutoConfig  # noqa: PLC0415

    d0 = e.get("defaults", {}).get("rope_parameters")
    fill = kp.text_fill(type(AutoConfig.for_model(t)), text_cls, {*DEFAULT_KEYS, *MOVED},
                        lambda kw: _built(t, e, kw), compared, sorted(d0) if config_rules.per_layer_type(d0) else None)
    if fill:
        outer["fill"] = fill
        outer["fill_any_type"] = kp.fill_any_type(lambda kw: _built(t, e, kw), outer.get("text_model_type"), fill)


def theta_beside(t: str, e: dict, cls: Any, one: dict) -> list[str]:
    """The rope types whose text rotary module, built of a file's rope dict of that type without a theta, takes
    the file's top-level theta beside the dict (its key as the class reads it without a dict) and, where the
    file gives none, the class's own (`theta_no_dict`): what it makes equals what it makes of the dict holding
    that theta. Transformers' library functions of every type but default call standardize_rope_params, which
    moves the class's rope_theta into the dict, where Cohere 2 MoE's class itself does not (its default type
    fails on such a file: KeyError); from_hf reads a dict of another type as the class alone would."""
    key = next(iter(one["theta_keys_no_dict"]), None)
    if key is None or one["theta_no_dict"] is None or _rotary_class(t, e) is None:
        return []
    out = []
    for kind, params in {"default": {}, **type_probes(cls)}.items():
        d = {"rope_type": kind, **params}
        try:
            same = [_rotary_state(t, e, d, None, top) == _rotary_state(t, e, {**d, "rope_theta": theta}, None)
                    for top, theta in (({key: 12345.0}, 12345.0), ({}, one["theta_no_dict"]))]
        except Exception:  # noqa: BLE001  (either way: not read so)
            continue
        if all(same):
            out.append(kind)
    return out


def _rotary_state(t: str, e: dict, rope: dict, lts: list[str] | None, top: dict | None = None) -> dict[str, Any]:
    """What model type `t`'s text rotary module holds (its buffers and number attributes) when built of a text
    config whose rope_parameters are `rope`, with every layer type of `lts` among its layers (Laguna's module
    makes frequencies only for the types its layer_types name, and its default names no sliding one), twice
    (Gemma 4's class forces its last layer full)."""
    kw: dict[str, Any] = {**(top or {}), "rope_parameters": rope}  # (`top`: top-level keys beside it)
    if lts:
        kw.update(num_hidden_layers=2 * len(lts), layer_types=list(lts) * 2)
    try:
        config = _built(t, e, {**kw, "sliding_window": 128} if lts else kw)  # (ZAYA's sliding layers need one)
    except Exception:  # noqa: BLE001
        config = _built(t, e, kw)
    module = _rotary_class(t, e)(config)
    state: dict[str, Any] = {k: v.detach().double().numpy().tolist() for k, v in module.named_buffers()}
    return {**state, **{k: v for k, v in vars(module).items() if isinstance(v, (int, float))}}


def partial_null_reads(t: str, e: dict, cls: Any) -> dict[str, list[str]] | None:
    """Per layer type ("*": a model of one RoPE), the rope types whose text rotary module makes of a rope dict
    holding partial_rotary_factor null just what it makes of the dict without the key, where another theta in
    that dict changes what it makes (the module read the dict: Llama's own default frequencies, which read no
    factor); any other is refused by from_hf (the module raised, read no such dict, or was not built). None
    where the module was not found."""
    if _rotary_class(t, e) is None:
        return None
    d0 = e.get("defaults", {}).get("rope_parameters")
    lts = sorted(d0) if config_rules.per_layer_type(d0) else None
    probes = type_probes(cls)
    out: dict[str, list[str]] = {}
    for lt in lts or ["*"]:
        out[lt] = []
        for kind in sorted({"default", *probes}):
            one = {"rope_type": kind, "rope_theta": 10000.0, **probes.get(kind, {})}
            try:
                states = [_rotary_state(t, e, {**d0, lt: d} if lts else d, lts)
                          for d in (one, {**one, "partial_rotary_factor": None}, {**one, "rope_theta": 12345.0})]
            except Exception:  # noqa: BLE001  (either way: not read)
                continue
            if states[0] == states[1] and states[0] != states[2]:
                out[lt].append(kind)
    return out


def model_rules(t: str, e: dict, cls: Any) -> dict[str, Any]:
    """The rules of what transformers fails on beyond the RoPE keys' conversion: `null_refused`, `strict`,
    `attention_reads`, `last_layer_type`, `partial_null_reads`, and where
    measured `nope_longer`, `width`, `heads_divide`, `width_step`, `mrope_sections` and `layer_types`."""
    nulls, failing = null_refused(t, e), model_refused(t, e)
    nulls += [k for k in [*failing["null"], *model_refused_null(t, e)] if k not in nulls]
    strict = strict_kinds(t, e, failing["float"])
    out: dict[str, Any] = {"null_refused": nulls, "strict": strict,
                           "attention_reads": attention_reads(cls),
                           "last_layer_type": kp.last_layer_type(lambda kw: _built(t, e, kw)),
                           "partial_null_reads": partial_null_reads(t, e, cls)}
    for name, measured in (("null_beside_layer_types", null_beside_layer_types(t, e, strict)),
                           ("null_needs_layer_types", null_needs_layer_types(t, e, nulls)),
                           ("nope_longer", nope_longer(t, e)), ("width", measure_width(t, e)),
                           ("heads_divide", heads_divide(t, e)), ("width_step", width_step(t, e)),
                           ("mrope_sections", mrope_sections(t, e)), ("layer_types", layer_types_checked(t, e))):
        if measured is not None:
            out[name] = measured
    return out


def check_renames(out: dict[str, dict]) -> None:
    """Exit where two classes rename one name to different rope types: from_hf's early names take one."""
    targets: dict[str, set] = {}
    for rules in out.values():
        for name, kind in [*rules.get("renames", {}).items(), *rules.get("scaling_renames", {}).items()]:
            targets.setdefault(name, set()).add(kind)
    if any(len(kinds) > 1 for kinds in targets.values()):
        sys.exit(f"classes rename one name to different types ({targets}): from_hf's early names take one")


def need_torch() -> None:
    """Exit without torch: the width rules run rotary modules, and without it they would be dropped, not
    measured (measure_width catches what the classes raise)."""
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError:
        sys.exit("scripts/hf_config_rules.py needs torch (CPU is enough) beside transformers: the rotary widths "
                 "are measured by running rotary modules")


def measured(entry: dict) -> bool:
    """Whether a model table entry's config class is measured: one from_hf reads (status ok), or one whose
    only refusal is that its class is not measured yet (a type newly probed that keeps RoPE per layer type,
    Gemma 3n: its rules come first, and the model table's next run checks the reading with them)."""
    status = entry.get("status") or ""
    return status == "ok" or status.endswith(config_rules.UNMEASURED)


def main() -> None:
    """Measure every model type's rules, check them, and write the rules table and golden (--only: print)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="these model types only (printed, nothing written)")
    ap.add_argument("--update", nargs="*", help="these model types measured again, their rules and golden cases "
                                                "replaced in the tables (the others' kept as written)")
    ap.add_argument("--width-step", action="store_true", help="measure width_step alone, of every model type, "
                                                              "into the rules table (the other rules kept as written)")
    args = ap.parse_args()
    if args.update:
        args.only = args.update
    warnings.filterwarnings("ignore")
    need_torch()
    import transformers  # noqa: PLC0415
    with open(MODELS, encoding="utf-8") as f:
        table = json.load(f)
    if transformers.__version__ != table["transformers"]:
        sys.exit(f"transformers {transformers.__version__}: the model table is from {table['transformers']}")
    types = [t for t, e in sorted(table["models"].items()) if measured(e) and (not args.only or t in args.only)]
    out: dict[str, dict] = {t: {} for t in types}
    FILL.update(fills(types, table["models"]))
    classes = text_classes(table["models"], out)
    if args.width_step:
        write_width_steps(types, table["models"], classes)
        return
    names = compared_names(list(classes.values()))  # (of every class: --update probes the names a whole run does)
    for t in types:  # the rules of each class's conversion
        e, rules = table["models"][t], out[t]
        if e.get("text_config"):
            rules["outer"] = measure_outer(t, e["text_config"])
            rules["outer_strict"] = outer_kinds(t, e)
            if rules["outer"] is None:
                rules["outer_why"] = "the config class could not be built with a top-level rope_theta"
            elif len(e["text_config"]) == 1 and t in classes:
                _fill(t, e, classes[t], rules["outer"])
        if t not in classes:
            continue
        d0 = e.get("defaults", {}).get("rope_parameters")
        lts = sorted(d0) if config_rules.per_layer_type(d0) else None
        rules.update(model_rules(t, e, classes[t]))
        if t in FILL:  # (the keys its model cannot be built without: a file must give them, as Hub files do)
            rules["absent_refused"] = sorted(FILL[t])
        rules["types_refused"] = types_refused(classes[t], lts)
        rules["types_mscaled"] = types_refused(classes[t], lts, mscaled=True)
        rules["original_length"] = original_length(classes[t], lts)
        rules["type_keys"] = type_keys(classes[t], lts)
        if lts is None:
            rules.update(renames_by_dict(classes[t], names))
            one = measure_one(classes[t])
            if one is not None:
                rules["one"] = {**one, "theta_beside": theta_beside(t, e, classes[t], one)}
        else:
            per_type = measure_per_type(classes[t], d0)
            why = check_rules(classes[t], t, d0, per_type)
            if why is None:
                rules["per_type"] = per_type
                rules.update(per_type_drops(classes[t], d0))
            else:
                rules["per_type_why"] = f"the measured rules differ from the class: {why}"[:400]
    check_renames(out)
    config_rules.table.cache_clear()
    config_rules.early_names.cache_clear()  # (read from `out` from here on)
    hf._bare_width.cache_clear()
    # (no shapes refused yet; with --update, the other types as written: a composite reads its text type's)
    known = rules_table({**(written_rules() if args.update else {}), **out})
    config_rules.table = lambda: known  # type: ignore[assignment]
    gold: list[dict] = []
    for t in types:  # the shapes of keys on which vkrope's reading differs from the class's
        if t in classes:
            measure_reading(t, table["models"][t], classes[t], names, out[t], gold)
    if args.update:
        write_outputs(*merged(out, gold))
        return
    if args.only:
        print_only(out, types)
        return
    write_outputs(out, gold)


def measure_reading(t: str, e: dict, cls: Any, names: list[str], rules: dict, gold: list) -> None:
    """Into `rules` (model type `t`'s, with its class `cls`): the theta keys and the shapes of keys on which
    vkrope's reading differs from the class's; into `gold`: the probes' cases."""
    d0 = e.get("defaults", {}).get("rope_parameters")
    lts = sorted(d0) if config_rules.per_layer_type(d0) else None
    fixed = no_rope_dict(t, e, lts)  # (GPT-J's, CodeGen's: their modules fix the RoPE, which the model table's
    kept, gold = gold, [] if fixed else gold  # goldens check; of the cases, those the class raises on are kept)
    rules["keys"] = theta_candidates(cls)
    rules["refused"] = shapes(t, e, rules["keys"], lts, gold, fixed)
    other_keys(t, e, cls, rules, lts, gold)
    stopped(t, e, lts, gold)
    bare(t, e, lts, gold)
    sections(t, e, gold)
    strict(t, e, lts, rules, gold)
    outer_probes(t, e, rules, lts, gold)
    if lts is None:
        named(t, e, cls, names, gold)
    if fixed:
        kept += [case for case in gold if class_reads(t, {}, {k: v for k, v in case["config"].items()
                                                          if k != "model_type"}, lts) is None]
    print(t, len(rules["refused"]), "shapes refused", flush=True)


def print_only(out: dict[str, dict], types: list[str]) -> None:
    """What --only measured, printed (nothing written)."""
    print(json.dumps(out, indent=1)[:3000])
    for t in types:
        print(t, {k: out[t].get(k) for k in ("unread", "ignored", "modeling_reads", "probe_why", "last_layer_type")},
              "fill", (out[t].get("outer") or {}).get("fill"), "partial_dims", (out[t].get("one") or {}).get(
                  "partial_dims"))
    print(f"width probes the rules refuse where transformers runs: {FALSE_WIDTH_REFUSALS or 'none'}")
    print(f"keys vkrope reads that it read otherwise than transformers: {MISREAD or 'none'}")


def text_classes(models: dict[str, dict], out: dict[str, dict]) -> dict[str, Any]:
    """Each measured model type's text config class; a type of `out` whose class cannot be built gets its
    `shape_why`."""
    from transformers import AutoConfig  # noqa: PLC0415

    classes: dict[str, Any] = {}
    for t in [t for t, e in sorted(models.items()) if measured(e)]:
        try:
            classes[t] = type(AutoConfig.for_model(t).get_text_config(decoder=True))
        except Exception as exc:  # noqa: BLE001
            if t in out:
                out[t]["shape_why"] = f"its text config class could not be built ({type(exc).__name__})"
    return classes


def write_width_steps(types: list[str], models: dict[str, dict], classes: dict[str, Any]) -> None:
    """--width-step: width_step measured again for every model type, written into the rules table as it is."""
    written = written_rules()
    for t in types:
        step = width_step(t, models[t]) if t in classes else None
        written.setdefault(t, {}).pop("width_step", None)
        if step is not None:
            written[t]["width_step"] = step
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(rules_table(written), f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print("width_step:", {t: r["width_step"] for t, r in written.items() if "width_step" in r} or "none")


def written_rules() -> dict[str, dict]:
    """The rules of every model type as the rules table holds them."""
    with open(OUT, encoding="utf-8") as f:
        return json.load(f)["models"]


def merged(out: dict[str, dict], gold: list[dict]) -> tuple[dict[str, dict], list[dict]]:
    """The written tables with the model types of `out` measured again: their rules and golden cases replaced
    (a golden case is its config's model type's); the other types' kept as the last whole run wrote them."""
    models = written_rules()
    with gzip.open(GOLDEN, "rt", encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    models.update(out)
    kept = [c for c in cases if c["config"].get("model_type") not in out]
    return models, kept + gold


def rules_table(models: dict[str, dict]) -> dict[str, Any]:
    """The rules table of `models` (what config_rules reads, and the file holds)."""
    import transformers  # noqa: PLC0415
    from transformers import configuration_utils  # noqa: PLC0415

    # (PreTrainedConfig.__init__ renames these layer types in every config: remap_legacy_layer_types)
    legacy = dict(configuration_utils._LEGACY_LAYER_TYPE_REMAP)
    # (and validate_layer_type refuses a name outside these, in a class whose `layer_types` rule says "names")
    names = sorted(configuration_utils.ALLOWED_ATTN_LAYER_TYPES)
    # (the keys from_hf reads of any model type, under the class's names too: all `strict` says of a file read
    # like= another type, whose class does not load it)
    read = sorted({n for e in _model_table()["models"].values() if measured(e) for n in _read_names(e)} | set(MOVED))
    return {"generated_by": "scripts/hf_config_rules.py", "transformers": transformers.__version__,
            "moved_keys": list(MOVED), "read_keys": read, "legacy_layer_types": legacy, "layer_type_names": names,
            "models": models}


def write_outputs(out: dict[str, dict], gold: list[dict]) -> None:
    """The rules table and the golden sample, and what the run counted."""
    import transformers  # noqa: PLC0415

    gold = list({json.dumps(c, sort_keys=True): c for c in gold}.values())  # (two probes may make one case)
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(rules_table(out), f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    with gzip.open(GOLDEN, "wt", encoding="utf-8") as f:
        json.dump({"generated_by": "scripts/hf_config_rules.py", "transformers": transformers.__version__,
                   "cases": gold}, f, separators=(",", ":"), sort_keys=True)
    print(f"{len(out)} model types; {len(gold)} golden cases")
    print(f"width probes the rules refuse where transformers runs (false refusals): {FALSE_WIDTH_REFUSALS or 'none'}")
    print(f"keys vkrope reads that it read otherwise than transformers (misread): {MISREAD or 'none'}")
    print(f"model types whose keys could not be probed (probe_why): {PROBES_FAILED or 'none'}")


if __name__ == "__main__":
    main()

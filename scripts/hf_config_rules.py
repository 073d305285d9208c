"""Regenerate vkrope/data/hf_config_rules.json (how each model type's config
class turns a config.json's RoPE keys into what its model reads; see
vkrope/models/config_rules.py) from transformers' own config classes.

    python scripts/hf_config_rules.py [--only TYPE ...]

Needs transformers 5.24, the release vkrope/data/hf_models.json names
(config classes only: no torch), in a venv of its own; vkrope is imported
from this checkout. For each model type of the model table:

- a composite config (the table's `text_config` path is not empty) is
  built with a sentinel `rope_theta` at the top, with and without a
  `text_config`: whether the sentinel reaches the language model's config;
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
import copy
import inspect
import itertools
import json
import os
import re
import sys
import warnings
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
MODELS = os.path.join(ROOT, "vkrope", "data", "hf_models.json")
OUT = os.path.join(ROOT, "vkrope", "data", "hf_config_rules.json")
GOLDEN = os.path.join(ROOT, "tests", "data", "hf_config_golden.json")
sys.path.insert(0, HERE)
from hf_model_table import DEFAULT_KEYS  # noqa: E402  (the keys from_hf reads)
SCALING = {"rope_type": "linear", "factor": 3.25}
COMPARED = ("rope_type", "rope_theta", "factor", "partial_rotary_factor")


def sentinel(i: int) -> float:
    """A theta no class has as a default."""
    return 1000.5 + 17.0 * i


def rope_of(cls: Any, kw: dict) -> dict:
    """The rope_parameters the config class makes of keyword arguments `kw` (a config.json's keys)."""
    return copy.deepcopy(cls(**copy.deepcopy(kw)).rope_parameters)


def theta_candidates(cls: Any) -> list[str]:
    """The theta-like keys the class's module names (rope_theta, rope_local_base_freq, global_rope_theta, ...)."""
    src = inspect.getsource(sys.modules[cls.__module__])
    found = set(re.findall(r"[\"'](\w*(?:theta|base_freq|rope_base)\w*)[\"']", src)) | {"rope_theta"}
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


def per_type(rope: Any, lts: list[str]) -> bool:
    """Whether a class's rope_parameters is a dict per layer type (what its model reads)."""
    return isinstance(rope, dict) and all(isinstance(rope.get(lt), dict) for lt in lts)


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
    return out


def check_rules(cls: Any, model_type: str, d0: dict, rules: dict) -> str | None:
    """None when config_rules.per_type_rope with `rules` gives what the class does on every scenario (or
    refuses where the class raises); else the first difference."""
    from vkrope.models import config_rules  # noqa: PLC0415

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
    """Whether an outer rope_theta reaches the text config, without and with a text_config."""
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
    try:
        return {"without_text_config": reached({"rope_theta": sentinel(99)}),
                "with_text_config": reached({"rope_theta": sentinel(99), **part}),
                "preset_without_text_config": preset({}), "preset_with_text_config": preset(part)}
    except Exception:  # noqa: BLE001  (the class cannot be built so: unknown)
        return None


def golden_cases(t: str, e: dict, cls: Any | None) -> list[dict]:
    """Configs of model type `t` and what transformers' classes make of them (the suite's golden): per layer
    type (None: one RoPE), the rope dict's compared keys, or None where the class raises."""
    from transformers import AutoConfig  # noqa: PLC0415

    def inside(kw: dict) -> dict:  # (keys of the language model's config, where the file keeps them)
        for key in reversed(e.get("text_config") or []):
            kw = {key: kw}
        return kw

    configs = []
    if e.get("text_config"):
        configs += [{"rope_theta": sentinel(99)}, {"rope_theta": sentinel(99), **inside({})}]
    d0 = e.get("defaults", {}).get("rope_parameters")
    if cls is not None and _nested(d0):
        configs += [inside(kw) for kw in scenarios(sorted(d0), theta_candidates(cls))]
    out = []
    for kw in configs:
        try:
            text = AutoConfig.for_model(t, **copy.deepcopy(kw)).get_text_config(decoder=True)
            rp = copy.deepcopy(getattr(text, "rope_parameters", None) or {})
        except Exception:  # noqa: BLE001
            rp = None
        for lt in (sorted(d0) if _nested(d0) else [None]):
            one = None if rp is None else (rp.get(lt) if lt else rp)
            want = None if not isinstance(one, dict) else {k: one.get(k) for k in COMPARED if one.get(k) is not None}
            out.append({"config": {"model_type": t, **kw}, "layer_type": lt, "want": want})
    return out


def _nested(rope: Any) -> bool:
    return isinstance(rope, dict) and bool(rope) and all(isinstance(v, dict) for v in rope.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="*", help="these model types only (printed, nothing written)")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    import transformers  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415

    with open(MODELS, encoding="utf-8") as f:
        table = json.load(f)
    if transformers.__version__ != table["transformers"]:
        sys.exit(f"transformers {transformers.__version__}: the model table is from {table['transformers']}")
    out: dict[str, dict] = {}
    gold: list[dict] = []
    for t, e in sorted(table["models"].items()):
        if args.only and t not in args.only or e.get("status") != "ok":
            continue
        rules: dict[str, Any] = {}
        if e.get("text_config"):
            rules["outer"] = measure_outer(t, e["text_config"])
            if rules["outer"] is None:
                rules["outer_why"] = "the config class could not be built with a top-level rope_theta"
        d0 = e.get("defaults", {}).get("rope_parameters")
        cls = type(AutoConfig.for_model(t).get_text_config(decoder=True)) if _nested(d0) else None
        gold += golden_cases(t, e, cls)
        if cls is not None:
            per_type = measure_per_type(cls, d0)
            why = check_rules(cls, t, d0, per_type)
            if why is None:
                rules["per_type"] = per_type
            else:
                rules["per_type_why"] = f"the measured rules differ from the class: {why}"[:400]
        if rules:
            out[t] = rules
            print(t, json.dumps(rules, sort_keys=True)[:300], flush=True)
    if args.only:
        return
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump({"generated_by": "scripts/hf_config_rules.py", "transformers": transformers.__version__,
                   "models": out}, f, indent=1, sort_keys=True)
        f.write("\n")
    with open(GOLDEN, "w", encoding="utf-8") as f:
        json.dump({"generated_by": "scripts/hf_config_rules.py", "transformers": transformers.__version__,
                   "cases": gold}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(out)} model types with rules; {len(gold)} golden cases")


if __name__ == "__main__":
    main()

"""How a model type's config class turns a config.json's RoPE keys into what
its model reads, as transformers' own code does it
(`vkrope/data/hf_config_rules.json`, written by scripts/hf_config_rules.py
by building each config class on probe configs; never edited by hand):

- `outer`: for a composite config (a vision-language model's, ...), whether
  the outer config's keys reach the language model's config, when the file
  has no `text_config` (a flat Hub file) and when it has one, and which
  keys the outer class presets there otherwise than the text class;
- `per_type`: for a class with RoPE per layer type (Gemma 3, ModernBERT,
  Olmo 3, ...), per layer type and per shape of the file's keys (`flat`:
  `rope_scaling` and theta keys; `nested`: `rope_parameters` by layer type),
  which key gives the layer type its theta, whether the class default does
  where that key is absent, whether `rope_scaling` is merged in, which
  class defaults fill a given layer type's dict, and whether a layer type
  the file leaves out is filled. A shape the class fails on is null.

`per_type_rope` applies those rules; where the rules are not known, or
a file's keys take a shape the class fails on, the config is refused.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from typing import Any

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "hf_config_rules.json")


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The whole rules table (read once)."""
    with open(PATH, encoding="utf-8") as f:
        return json.load(f)


def rules_of(model_type: str) -> dict[str, Any]:
    """The rules of a model type ({} where none were measured)."""
    return dict(table()["models"].get(model_type, {}))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _layer_dicts(given: Any, types: dict) -> bool:
    """Whether `given` (a file's rope_parameters) is per layer type: a dict keyed by this class's layer types."""
    return isinstance(given, dict) and bool(given) and set(given) <= set(types) \
        and all(v is None or isinstance(v, dict) for v in given.values())


def theta_keys(rules: dict[str, Any]) -> set[str]:
    """Every file key the rules read a theta from."""
    return {m["theta"] for r in rules.get("per_type", {}).values() for m in r.values()
            if m is not None and m.get("theta")}


def per_type_rope(cfg: dict, default: dict, model_type: str) -> dict[str, dict]:
    """{layer type: its rope dict} of a config `cfg` (the text config's keys
    as the file gives them) for a class whose RoPE is per layer type
    (`default`: the class's own), as the class's conversion makes it."""
    rules = rules_of(model_type).get("per_type")
    given, scaling = cfg.get("rope_parameters"), cfg.get("rope_scaling")
    for key, value in (("rope_parameters", given), ("rope_scaling", scaling)):
        if value is not None and not isinstance(value, dict):
            raise ValueError(f"config: {key} must be a dict or null; got {_short(value)}")
    said = bool(given) or bool(scaling) or any(k in cfg for k in theta_keys({"per_type": rules or {}}))
    if not rules:
        if said:
            raise ValueError(f"config: {model_type} keeps RoPE per layer type, and how its config class reads the "
                             "file's RoPE keys is not in vkrope's rules table; refused rather than guessed")
        return json.loads(json.dumps(default))
    if given and not _layer_dicts(given, default):
        raise ValueError(f"config: rope_parameters is one dict ({_short(given)}), but {model_type} keeps RoPE per "
                         f"layer type ({', '.join(sorted(default))}); transformers does not read it as one: give it "
                         "per layer type (as transformers saves it) or as rope_scaling")
    shape = "nested" if given else "flat"
    return {lt: _one_type(cfg, lt, d0, rules.get(lt, {}).get(shape), shape, model_type)
            for lt, d0 in default.items()}


def _one_type(cfg: dict, lt: str, d0: dict, rule: dict | None, shape: str, model_type: str) -> dict:
    """One layer type's rope dict by its rule (see the module docstring)."""
    where = f"config: rope_parameters[{lt!r}]"
    if rule is None:
        raise ValueError(f"{where}: {model_type}'s config class fails on RoPE keys given this way ({shape}: "
                         "transformers raises), so vkrope refuses them too")
    bad = [key for key in rule["raises_on"] if key in cfg]
    if bad:
        raise ValueError(f"config: {bad[0]}: {model_type}'s config class fails on it given this way ({shape}: "
                         "transformers raises, or its model cannot read the result)")
    if shape == "nested":
        d = cfg["rope_parameters"].get(lt)
        if d is None:
            if not rule["fill_missing"]:
                raise ValueError(f"{where} is missing, and {model_type}'s config class does not fill it in")
            d = {"rope_type": "default"}
        d = dict(d)
        for key in rule["fill"]:
            if key in d0:
                d.setdefault(key, d0[key])
    else:
        d = {k: v for k, v in d0.items() if k != "rope_theta"}
    if cfg.get("rope_scaling"):
        if rule["scaling"] is None:
            raise ValueError(f"config: rope_scaling: {model_type}'s config class fails on it given this way "
                             f"({shape}: transformers raises, or its model cannot read the result)")
        if rule["scaling"] and shape == "nested" and cfg["rope_parameters"].get(lt) is None:
            raise ValueError(f"{where} is missing, and {model_type}'s config class merges rope_scaling into it "
                             "(transformers raises)")
        if rule["scaling"]:
            d.update(cfg["rope_scaling"])
    key = rule["theta"]
    if "rope_theta" not in d:
        if key is not None and key in cfg:
            if cfg[key] is None:
                raise ValueError(f"config: {key} is null; {model_type}'s config class takes it as the theta of "
                                 f"its {lt} layers, where transformers then fails")
            d["rope_theta"] = cfg[key]
        elif rule["theta_default"] and "rope_theta" in d0:
            d["rope_theta"] = d0["rope_theta"]
        else:
            raise ValueError(f"{where} has no rope_theta, and {model_type}'s config class gives it none")
    return d


def outer_keys(model_type: str, has_text_config: bool) -> bool | None:
    """Whether a composite config's outer keys reach its language model's
    config: with a `text_config` in the file, or without one (a flat Hub
    file); None where the class could not be probed."""
    rules = rules_of(model_type)
    if "outer" not in rules:
        return True  # (not composite: the config is its own text config)
    if rules["outer"] is None:
        return None
    return bool(rules["outer"]["with_text_config" if has_text_config else "without_text_config"])


def preset(model_type: str, has_text_config: bool) -> list[str]:
    """The keys a composite config class presets in its language model's
    config otherwise than that config's own class does (Voxtral's
    rope_parameters), which the file must then give itself."""
    outer = rules_of(model_type).get("outer") or {}
    return list(outer.get("preset_with_text_config" if has_text_config else "preset_without_text_config", []))

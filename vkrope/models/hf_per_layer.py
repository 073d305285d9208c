"""Which keys each decoder layer reads: transformers 5's `per_layer_config` overrides, checked as its
HeterogeneousConfigMixin and the model's code read them, and a layer type's view of the config (Gemma 4's
head widths); for `from_hf(layer=)` and `hf_layers` (vkrope/models/hf.py)."""

from __future__ import annotations

import collections.abc
import json
from typing import Any

from . import config_rules
from .rope import brief, typed
from ..runtime.dtypes import is_int


def per_layer(cfg: dict, e: dict) -> dict[str, dict] | None:
    """{layer type: its rope dict} for per-layer configs, else None; a ValueError where a model type with one
    RoPE is given a rope dict keyed by layer type (its class takes that as one flat dict of defaults, Llama's,
    or keeps it and its rotary module fails on it, Qwen3-Next's)."""
    params = cfg.get("rope_parameters")
    listed = cfg["layer_types"] if isinstance(cfg.get("layer_types"), list) else []
    own = e.get("defaults", {}).get("rope_parameters")  # (the class's own types: ZAYA's hybrid, hybrid_sliding)
    types = {t for t in listed if isinstance(t, str)} | {"sliding_attention", "full_attention"} | \
        (set(own) if config_rules.per_layer_type(own) else set())
    if not (isinstance(params, dict) and params and any(k in types for k in params)):
        return None
    if not config_rules.per_layer_type(e.get("defaults", {}).get("rope_parameters")):
        keyed = ", ".join(sorted(k for k in params if k in types))
        raise ValueError(f"config: rope_parameters keyed by layer type ({keyed}), but "
                         f"{cfg.get('model_type', 'this model type')!r} has one RoPE for every layer: its config "
                         "class and rotary module do not read such a dict per layer type (they take it as one flat "
                         "dict of defaults, or fail on it); refused rather than guessed (give one flat "
                         "rope_parameters)")
    nested = {k: v for k, v in params.items() if k in types}
    for k, v in nested.items():
        if v is not None and not isinstance(v, dict):
            raise ValueError(f"config: rope_parameters[{k!r}] must be a dict; got {brief(v)}")
    return {k: dict(v) for k, v in nested.items() if v is not None}


def overrides(cfg: dict, e: dict) -> dict[int, dict]:
    """{layer index: keys it overrides}, for a model whose code builds its layers from them (the table's
    `per_layer_model`; any other reads one config for every layer: {}): transformers 5's `per_layer_config`
    (a saved config's), else what the config class makes of a key such as
    Gemma 4's `global_head_dim` (the table's `per_layer_keys`: that key's
    value becomes `field` of the layers of those types)."""
    if not e.get("per_layer_model"):
        return {}
    if cfg.get("per_layer_config") is not None:
        return _given_overrides(cfg)
    types: list = cfg["layer_types"] if isinstance(cfg.get("layer_types"), list) else []
    by_type = {t: _type_overrides(cfg, e, t) for t in set(types)}
    return {i: by_type[t] for i, t in enumerate(types) if by_type[t]}


def _given_overrides(cfg: dict) -> dict[int, dict]:
    """The file's `per_layer_config` as {layer index: overrides}, checked as transformers' config checks it
    (HeterogeneousConfigMixin: a dict of dicts keyed by indices in [0, num_hidden_layers), `skip` an iterable
    of strings), where its class raises: refused, not read in part (the callers read a null as none)."""
    given = cfg.get("per_layer_config")
    if not isinstance(given, dict):
        raise ValueError(f"config: per_layer_config must be a dict {{layer index: overrides}} or null; got "
                         f"{brief(given)}")
    n = cfg.get("num_hidden_layers")
    out = {}
    for k, v in given.items():
        try:
            i = int(k)
        except (TypeError, ValueError):
            raise ValueError(f"config: per_layer_config keys must be layer indices; got {brief(k)}") from None
        if isinstance(n, int) and not 0 <= i < n:
            raise ValueError(f"config: per_layer_config keys must be layer indices in [0, {n}) "
                             f"(num_hidden_layers); got {brief(k)}")
        if not isinstance(v, dict):
            raise ValueError(f"config: per_layer_config[{k!r}] must be a dict of overrides; got {brief(v)}")
        named = [key for key in v if not isinstance(key, str)]  # (a Python dict's: JSON has only str keys)
        if named:  # (transformers sets each as an attribute of the config, which takes only str names)
            raise ValueError(f"config: per_layer_config[{k!r}]'s keys must be config key names (str); got "
                             f"{brief(named[0])}")
        skip = v.get("skip", [])
        if isinstance(skip, str) or not isinstance(skip, collections.abc.Iterable) \
                or not all(isinstance(s, str) for s in skip):  # (any iterable of strings, as transformers)
            raise ValueError(f"config: per_layer_config[{k!r}]['skip'] must be a list of strings; got "
                             f"{brief(skip)}")
        out[i] = dict(v)
    return out


def one_config(cfg: dict, e: dict, model_type: str, read: Any) -> tuple[dict, tuple[str, ...]]:
    """(the config to read, the keys it ignores) where the file has a `per_layer_config`. transformers keeps
    the overrides on the config (less those equal to its class's value) and raises where code reads an
    overridden key from the global config (AmbiguousGlobalPerLayerAttributeError). Gemma 4's rotary module
    reads its head widths from a layer type's view of them (the table's `per_type_view`); NeoMME's and Step's
    models build their attention per layer (`per_layer_model`), their rotary module from the global config;
    any other model builds its layers and rotary module from the global config (transformers' shared rope
    functions read a layer type's view, for the types they compute, a path vkrope does not follow). So an
    override of a key a RoPE reads is refused, equal to the file's value or not (but Gemma 4's head widths,
    and NeoMME's and Step's head counts beside a head width), and one transformers' config refuses (a key it
    lacks, given on some layers only); for a model of one config also one whose layer reads another RoPE
    (`read(config, layer)`); the rest is read as the model reads it: per layer for NeoMME's and Step's
    attention (not RoPE), else the global config, the file's `per_layer_config` listed as ignored."""
    if cfg.get("per_layer_config") is None:
        return cfg, ()
    base = {k: v for k, v in cfg.items() if k != "per_layer_config"}
    over = _checked_overrides(cfg, base, e, model_type)
    if e.get("per_layer_model"):
        return cfg, ()
    if not any(over.values()):
        return base, ()
    for i, d in sorted(over.items()):  # (layer i's RoPE, as the caller's reading of another layer would not show:
        got = _outcome(read, {**base, **d}, i)  # SmolLM3's no_rope_layers; transformers raises on any layer's)
        if got != _outcome(read, base, i):
            _refuse_override(i, sorted(d), _which(got), model_type, e)
    return base, ("per_layer_config",)


def _outcome(read: Any, cfg: dict, layer: int) -> Any:
    """`read(cfg, layer)`, or its refusal as comparable data (its type and words)."""
    try:
        return read(cfg, layer)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc)


def _checked_overrides(cfg: dict, base: dict, e: dict, model_type: str) -> dict[int, dict]:
    """The file's per-layer overrides less `skip` and those equal to the config's own value (`base`), where
    none overrides a key a RoPE reads (equal to the file's value too: transformers compares with its class's,
    which vkrope knows for the RoPE it reads, not for the key: a null head_dim), but Gemma 4's head widths,
    each an integer >= 1 (its class's strict field), nor a key the config lacks on some layers only
    (transformers' config raises: "The following attributes are missing"); else a ValueError."""
    given = _given_overrides(cfg)
    heads = _head_keys(e) if e.get("per_type_view") else set()
    rope_keys = _rope_keys(e, model_type) - heads
    if e.get("per_layer_model") and not heads and any(is_int(base.get(k)) for k in _head_keys(e)):
        rope_keys -= {"hidden_size", "num_attention_heads"}  # (NeoMME's and Step's attention reads them per layer,
        # their rotary module the head width given: Step's class writes its sliding layers' heads so)
    for i, d in sorted(given.items()):
        keys = sorted(k for k in d if k in rope_keys)
        if keys:
            _refuse_override(i, keys, "a key its RoPE reads", model_type, e)
        for k in sorted(heads & set(d)):
            _strict_width(d[k], f"per_layer_config[{i}].{k}")
    over = {i: {k: v for k, v in d.items() if k != "skip" and not (k in base and base[k] == v)}
            for i, d in given.items()}
    layers, popped = cfg.get("num_hidden_layers"), {r["key"] for r in e.get("per_layer_keys", [])}  # (Gemma 4's
    # global_head_dim: its class pops it into per-layer overrides, so it has no such attribute)
    for i, d in sorted(over.items()):
        missing = sorted(k for k in d if (k not in base or k in popped) and sum(k in o for o in over.values()) != layers)
        if missing:
            _refuse_override(i, missing, "on some layers only, of a key vkrope does not know the config class to "
                             "have: transformers' config raises on it where the class lacks it", model_type, e)
    return over


def _strict_width(value: Any, name: str) -> int:
    """A per-layer head width as the class's strict field takes it, an integer >= 1 (Gemma 4's head_dim: its
    class refuses 32.0 or null there, StrictDataclassFieldValidationError, which from_hf reads as a top-level
    head_dim), else a ValueError naming `name`."""
    if not is_int(value) or value < 1:
        raise ValueError(f"config: {name} must be an integer >= 1 (the config class's strict head_dim field, "
                         f"where it puts it per layer); got {typed(value)}")
    return int(value)


def _rope_keys(e: dict, model_type: str) -> set[str]:
    """The config keys a model type's RoPE is read from (its head widths, theta keys, lengths, partial factor,
    rope dicts), by their names and their aliases' (transformers maps an alias to its key before it checks a
    per-layer override: an override by either name may be the one it reads)."""
    named = {*_head_keys(e), "hidden_size", "num_attention_heads", "max_position_embeddings", "layer_types",
             "original_max_position_embeddings", "rope_parameters", "rope_scaling", "rope_theta",
             *config_rules.PARTIAL_KEYS, *config_rules.rules_of(model_type).get("keys", [])}
    aliases = e.get("aliases", {})
    return named | {a for a, k in aliases.items() if k in named} | {k for a, k in aliases.items() if a in named}


def _head_keys(e: dict) -> set[str]:
    """The keys of the rotated head's width (head_dim, and the table's per layer type: qk_rope_head_dim,
    global_head_dim, ...)."""
    return {"head_dim", *(s["head_dim"] for s in e.get("by_layer_type", {}).values())}


def _refuse_override(i: int, keys: list[str], why: str, model_type: str, e: dict) -> None:
    """The ValueError of a per_layer_config override vkrope does not read."""
    builds = "its layers and rotary module from the global config"
    if e.get("per_layer_model"):
        builds = "its attention per layer and its rotary module from the global config"
    if e.get("per_type_view"):
        builds += ", but for each layer type's head width"
    raise ValueError(f"config: per_layer_config[{i}] overrides {', '.join(keys)} ({why}), but the {model_type} "
                     f"model builds {builds}, and transformers raises where code reads a key a layer overrides "
                     "(AmbiguousGlobalPerLayerAttributeError; 'The following attributes are missing' where its config "
                     "lacks the key): refused rather than guessed")


def _which(got: Any) -> str:
    """A short word on what a layer's overrides read: the failure, or the RoPE."""
    if isinstance(got, tuple):
        return f"that layer's reading fails: {got[1].removeprefix('config: ')[:200]}"
    return "that layer then applies no RoPE" if got is None else \
        f"that layer's RoPE then: head_dim {got.head_dim}, rotary_dim {got.rotary_dim}, theta {got.theta:g}"


def _type_overrides(cfg: dict, e: dict, layer_type: str) -> dict:
    """What the config class makes the layers of `layer_type` see (the table's `per_layer_keys`; not beside
    a file's own per_layer_config, null or not, where the class then applies none: Gemma 4's global_head_dim)."""
    out = {}
    for rule in e.get("per_layer_keys", []):
        beside = rule.get("beside_per_layer_config")
        if "per_layer_config" in cfg and beside is None:
            raise ValueError(f"config: per_layer_config beside {rule['key']}: how the config class reads the two "
                             "together was not measured (the table's per_layer_keys); refused rather than guessed")
        if "per_layer_config" in cfg and not beside:
            continue
        value = cfg.get(rule["key"], rule.get("default"))
        if value is not None and layer_type in rule["types"]:
            out[rule["field"]] = _strict_width(value, rule["key"])
    return out


def for_layer(cfg: dict, e: dict, layer: int | None, layer_type: str | None) -> dict:
    """The config as layer `layer` (or the first layer of `layer_type`) sees
    it: its per-layer overrides merged. Without either, a config whose
    layers differ in a head-dim key is refused (which layer is meant?)."""
    types: list = cfg["layer_types"] if isinstance(cfg.get("layer_types"), list) else []
    if layer is None and layer_type is not None and not types:  # no layer list: the class's rules by type
        if cfg.get("per_layer_config"):
            raise ValueError(f"config: per_layer_config is by layer index and the config has no layer_types saying "
                             f"which layers are {layer_type!r} (its config class derives them): pass the config as "
                             "transformers saves it, with its layer_types (AutoConfig.from_pretrained(path).to_dict())")
        return {**cfg, **_type_overrides(cfg, e, layer_type)}
    over = overrides(cfg, e)
    if not over:
        return cfg
    _check_homogeneous(cfg, over, types, e)
    if layer is None and layer_type is not None:
        layer = next((i for i, t in enumerate(types) if t == layer_type), None)
    if layer is None:
        keys = sorted({k for v in over.values() for k in v if k.endswith("head_dim")})
        if keys:
            raise ValueError(f"layer: this config's layers differ in {', '.join(keys)} (per_layer_config); pass "
                             "layer= (an index) or layer_type=")
        return cfg
    return {**cfg, **over.get(int(layer), {})}


def _check_homogeneous(cfg: dict, over: dict[int, dict], types: list, e: dict) -> None:
    """A ValueError where a model whose rotary module reads `per_layer_config[layer_type]` (the table's
    `per_type_view`: Gemma 4's) has layers of one type whose overrides differ: transformers' per-layer-type
    view of the config raises ("not homogeneous across layers"), and the model with it. Compared as
    transformers compares them: an override equal to the config's own value dropped first, `skip` sorted."""
    if not e.get("per_type_view"):
        return

    def norm(i: int) -> str:
        kept = {k: sorted(set(v), key=str) if k == "skip" and isinstance(v, list) else v
                for k, v in over.get(i, {}).items() if k == "skip" or cfg.get(k) != v}
        return json.dumps({k: v for k, v in kept.items() if k != "skip" or v}, sort_keys=True, default=str)

    for kind in dict.fromkeys(types):
        seen = {norm(i) for i, t in enumerate(types) if t == kind}
        if len(seen) > 1:
            raise ValueError(f"config: per_layer_config gives the {kind!r} layers different overrides; the model's "
                             "rotary module reads one config per layer type (transformers raises: not homogeneous "
                             "across layers)")

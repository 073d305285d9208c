"""How a model type's config class turns a config.json's RoPE keys into what
its model reads, as transformers' own code does it
(`vkrope/data/hf_config_rules.json`, written by scripts/hf_config_rules.py
by building each config class on probe configs; never edited by hand):

- `outer`: for a composite config (a vision-language model's, ...), whether
  the outer config's keys reach the language model's config beside the
  file's `text_config`, which keys
  the outer class presets there otherwise than the text class, and the
  model type of its own text config (a file's text_config naming another
  is read as that model type, as transformers builds it), and `moves`: per
  depth of the text config's path at which a file stops (0: a flat Hub
  file; 1: ColQwen2's vlm_config without its text_config), which of the
  table's `moved_keys` the classes carry from there into the language
  model's config; `text_aliases`, another key it builds the language model's
  config from where a file has no text_config (Unlimited-OCR's original
  language_config);
- `one`: for a class with one RoPE, what transformers' conversion
  (PreTrainedConfig.convert_rope_params_to_dict) starts from where the file
  gives neither rope_scaling nor rope_parameters (`preset`: GPT-OSS's yarn,
  Apertus' llama3 with its theta), and the theta and partial factor it
  fills in where the file's dict lacks them (`theta`, `partial`) and where
  the file gives no dict (`theta_no_dict`, `partial_no_dict`: Cohere 2
  MoE fills in its 10000 only there), the file's keys it takes them from
  (`partial_keys`; `theta_keys` where the file gives a dict,
  `theta_keys_no_dict` where it does not: Cohere 2 MoE's rope_theta only
  there), the rope types whose rotary module takes a dict without a theta
  as the class does a file without a dict (`theta_beside`: transformers'
  library functions move the class's theta in, Cohere 2 MoE's default type
  does not), and any other key it fills into a dict lacking it (`fills`:
  HY-V4-VL's mrope_section);
- `per_type`: for a class with RoPE per layer type (Gemma 3, ModernBERT,
  Olmo 3, ...), per layer type and per shape of the file's keys (`flat`:
  `rope_scaling` and theta keys; `nested`: `rope_parameters` by layer type),
  which key gives the layer type its theta, whether the class default does
  where that key is absent, whether `rope_scaling` is merged in, which
  class defaults fill a given layer type's dict, whether a layer type
  the file leaves out is filled, and (`needs`) per rope type the keys its
  dict must give (Step 3.5's flat yarn its original length, which the
  class fills in only where the file nests its dicts). A shape the class
  fails on is null. `per_type_drops`: the keys it drops when a file gives
  one beside its layer types' dicts (ZAYA's hub config has a stray
  `rope_type` there, which its class deletes; any other such key is refused).
- `types_refused`: the rope types the class's validation refuses (Phi-3
  takes only default and longrope), given with the parameters they need;
  `types_mscaled`: those it refuses given without PhiMoE's short_mscale and
  long_mscale and takes given with them (PhiMoE's model then scales cos
  and sin by them in place of the type's own factor, which vkrope does
  beside longrope only: it refuses them);
- `type_keys`: per rope type a class takes (with RoPE per layer type: a
  dict given to every layer type), the keys a file's rope dict of that
  type must give (`needs`: Cosmos 3 Edge's
  mrope_section, PhiMoE's short_mscale and long_mscale) and those it must
  not give as null (`not_null`: llama3's original length), and the
  top-level keys it needs (`config_needs`: Mixtral's head_dim beside
  longrope), where the class raises otherwise; `original_length`: which
  original length its model reads where a file gives one at its top level
  (PhiMoE and the classes with RoPE per layer type: the rope dict's);
- `renames`: for a class with one RoPE, the rope type names its conversion
  changes before its model reads them (Phi-3's early "su" and "yarn" ->
  longrope, Qwen2-VL's "mrope" -> default), each probed as `rope_type` and
  as `type`; the names probed are those transformers' config modules
  compare with a rope type; `scaling_renames`, where a class renames
  otherwise in a file's `rope_scaling` (Sarvam-MLA's original format:
  "deepseek_yarn" -> yarn there only; in `rope_parameters` its model fails);
- `null_refused`: the keys from_hf reads on which the class raises when the
  file gives them as null (strict int fields: Qwen3's head_dim, every
  class's hidden_size), or the text model fails to build (Qwen2's head_dim,
  a class without the field: its attention's getattr gives None) or to run
  (Ministral's sliding_window: its model always builds the sliding mask),
  `check_nulls`;
- `partial_null_reads`: per layer type ("*" for one RoPE), the rope types
  whose rotary module makes of a rope dict holding partial_rotary_factor
  null what it makes without the key (Llama's own default frequencies read
  no factor); with any other it raises (the library's functions multiply
  the head by the dict's value), `check_partial_null`;
- `absent_refused`: the keys a file must give because the class leaves
  them None and the model reads them as given (Ministral's and HunYuan's
  head_dim, Nemotron's num_key_value_heads, dots.llm1's expert counts: the
  model table and these rules probe such a type over them,
  scripts/hf_model_table.py's filled_sizes), `check_absent`;
- `attention_reads`: the rope dict keys the model's code reads outside its
  rotary module whatever the rope type (Ministral 3's and Mistral 4's
  llama_4_scaling_beta and original length, read from the modeling
  source): a rope dict without them is refused;
- `nope_longer`: for a model whose layers say by a flags list whether they
  rotate, whether the class raises on a list longer than num_hidden_layers
  (Llama 4's, where the file gives no layer_types), `check_flags_length`;
- `strict`: {the kinds of value the class raises on: its keys}, for every
  scalar or list field of the text config but layer_types (its own rule,
  below) and every key from_hf reads (strict
  fields: `head_dim: 96.0`, `sliding_window: true`, `num_attention_heads:
  "32"`, `vocab_size: [32000]`, `rms_norm_eps: "1e-6"`; a float head key on
  which the text model fails to build, too; a null only for keys from_hf
  does not read, `null_refused` saying the others'), `check_kinds`;
- `null_beside_layer_types`: the keys whose null `strict` refuses (measured
  alone) that transformers takes beside a file's layer_types, the class
  building and its text model running (EXAONE 4's and AFMoE's pattern
  keys make the layer types only where a file gives none: EXAONE 4.0
  1.2B's file gives the pattern null beside them), `check_kinds`;
- `null_needs_layer_types`: the keys (from_hf's reads, and the older
  names a class's code pops from its keyword arguments) whose null the
  classes raise on where a file gives no layer_types and take beside
  them, not in `null_refused` (EXAONE 4's sliding_window, Cohere 2's
  sliding_window_pattern: the class derives the layer types from them),
  `check_nulls`;
- `layer_types`: whether the class raises on a file's layer_types shorter
  or longer than num_hidden_layers, naming a type outside the table's
  `layer_type_names` (transformers' validate_layer_type), or not a list
  (a tuple; "other", an integer, which its strict field refuses), or
  ("any") any list at all (Falcon-H1's derives them), `check_layer_types`
  and `check_layer_types_given`;
- `heads_divide`: whether transformers' code fails on a hidden_size that
  num_attention_heads does not divide (Llama's config class, GPT-J's
  attention; Mistral's takes one), without (`bare`) and beside
  (`head_dim`) an explicit head_dim, `check_heads_divide`;
- `mrope_sections`: for an M-RoPE model whose class validates mrope_section
  (Cosmos 3 Edge's: three sections summing to half its `key`, head_dim),
  `check_mrope_sections`;
- `width`: for a model whose attention rotates a key of its own (DeepSeek's
  qk_rope_head_dim) while transformers' rotary module makes cos / sin of
  head_dim times the partial factor: how the class builds those
  (`rotary_width`; checked by the rules script against the rotary module
  run on probe configs; `why` where the rule failed that check);
- `unread`: the keys the class reads for RoPE that vkrope does not follow,
  each found by giving it alone on a file both read alike (MiniMax-M2's
  rotary_dim before `partial_dims`, Falcon's n_embed, Step 3.5's
  partial_rotary_factors; scripts/hf_key_probes.py), with the class's
  default; `modeling_reads`: the config attributes named for RoPE that the
  model's code reads and vkrope does not (Molmo2's rope_scaling_layers):
  `check_unread` refuses either given otherwise than the default;
- `one.partial_dims`: the keys a class turns into the partial factor over
  its head_dim (MiniMax-M2's rotary_dim); `outer.fill`: the keys a
  composite class fills into a file's text_config where it lacks them
  (Voxtral's rope_theta and head_dim), checked against its text class;
  `last_layer_type`: the type a class forces on the last layer (Gemma 4);
- `refused`: the shapes of RoPE keys (`signature`: how the file gives
  rope_scaling, rope_parameters, each theta key and the partial factor:
  absent, null, empty, a dict, per layer type, with the legacy `type`, ...)
  on which vkrope's reading differed from what the class made (or the
  class raised), each shape probed on every model type; `keys`, the theta
  keys the class's source names. `check_shape` refuses those shapes, and
  any shape not probed.

This module reads the table: `one_rope` and `per_type_rope` apply the
conversion, `renames` and `early_names` the renames, `outer_keys`, `preset`
and `text_model_type` the composite's rules. The refusals live apart:
config_shapes.py (`check_shape`, the shapes of keys) and config_checks.py
(every other `check_*` named above); where the rules are not known, or a
file's keys take a shape the class fails on, the config is refused.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from typing import Any

from . import data
from .rope import brief, key_number
from .rope_types import RULES

@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The whole rules table, vkrope/data/hf_config_rules.json (read once)."""
    return data.load("hf_config_rules.json")  # type: ignore[no-any-return]


# The end of the refusal of a class with RoPE per layer type that the rules table does not hold
# (scripts/hf_config_rules.py measures the types the model table refuses for this reason only).
UNMEASURED = ("how its config class reads the file's RoPE keys is not in vkrope's rules table; refused rather than "
              "guessed")


def rules_of(model_type: str) -> dict[str, Any]:
    """The rules of a model type ({} where none were measured)."""
    return dict(table()["models"].get(model_type, {}))


def check_rope_dicts(cfg: dict) -> None:
    """A ValueError where the config `cfg` gives rope_scaling or rope_parameters as neither a dict nor null
    ([] is not "no scaling")."""
    for key in ("rope_scaling", "rope_parameters"):
        if cfg.get(key) is not None and not isinstance(cfg[key], dict):
            raise ValueError(f"config: {key} must be a dict or null; got {brief(cfg[key], 60)}")


def per_layer_type(rope: Any) -> bool:
    """Whether a rope dict is kept per layer type (Gemma 3's {"sliding_attention": {...}, "full_attention":
    {...}}): a non-empty dict of dicts, as a config class or the model table keeps one."""
    return isinstance(rope, dict) and bool(rope) and all(isinstance(v, dict) for v in rope.values())


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
    check_rope_dicts(cfg)
    given, scaling = cfg.get("rope_parameters"), cfg.get("rope_scaling")
    said = bool(given) or bool(scaling) or any(k in cfg for k in theta_keys({"per_type": rules or {}}))
    if not rules:
        if said:
            raise ValueError(f"config: {model_type} keeps RoPE per layer type, and {UNMEASURED}")
        return json.loads(json.dumps(default))
    if isinstance(given, dict) and set(given) & set(default):  # (the keys its class drops beside the layer
        drops = rules_of(model_type).get("per_type_drops", [])  # types' dicts, measured: ZAYA's stray rope_type)
        given = {k: v for k, v in given.items() if k not in drops or v is None}
    extra = sorted(k for k in given or () if k not in default) if isinstance(given, dict) else []
    if given and extra and set(given) & set(default):
        raise ValueError(f"config: rope_parameters holds {', '.join(map(repr, extra))} beside the layer types "
                         f"{model_type}'s config class keeps a RoPE for by default ({', '.join(sorted(default))}): how "
                         "its class and rope functions read that is not in vkrope's rules table, measured on its "
                         "default config (Gemma 3's reads an outer truncate, ModernBERT's refuses it); refused rather "
                         "than guessed")
    if given and not _layer_dicts(given, default):
        raise ValueError(f"config: rope_parameters is one dict ({brief(given, 60)}), but {model_type} keeps RoPE per "
                         f"layer type ({', '.join(sorted(default))}); transformers does not read it as one: give it "
                         "per layer type (as transformers saves it) or as rope_scaling")
    named = {t for t in cfg["layer_types"] if isinstance(t, str) and t.endswith("attention")} \
        if isinstance(cfg.get("layer_types"), list) else set()  # (renamed as the classes do: hf_load._rename_layer_types)
    if given and named - set(given) - set(default):  # (Step 3.5's class then drops the file's dicts: unmeasured)
        raise ValueError(f"config: layer_types names {', '.join(sorted(named - set(given) - set(default)))}, which "
                         f"rope_parameters gives no dict for and {model_type}'s class has no RoPE defaults for; how "
                         "its config class reads that was not measured (Step 3.5's drops the file's dicts): refused "
                         "rather than guessed")
    shape = "nested" if given else "flat"
    return {lt: _one_type(cfg, lt, d0, rules.get(lt, {}).get(shape), shape, model_type)
            for lt, d0 in default.items() if not _unused_gap(cfg, lt, rules.get(lt, {}).get(shape), shape)}


def _unused_gap(cfg: dict, lt: str, rule: dict | None, shape: str) -> bool:
    """Whether layer type `lt` has no dict in the file's nested rope_parameters, its class fills none in, and the
    file's own layer_types name no layer of it: the class then keeps no RoPE for it, and no layer needs one
    (ZAYA's file giving only its hybrid layers' dict); its missing dict is refused only where a layer needs it."""
    types = cfg.get("layer_types")
    return shape == "nested" and rule is not None and not rule["fill_missing"] \
        and cfg["rope_parameters"].get(lt) is None and isinstance(types, list) and lt not in types


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
    # (flat: the class checks the file's rope_scaling whichever layer types it merges into; the rules script
    # measured each layer type's needs on a whole config, which the class refuses as a whole. Its legacy
    # "type" names no type there: merged into a dict that has a rope_type, it stays unread)
    given = d if shape == "nested" else cfg.get("rope_scaling") or {}
    kind = given.get("rope_type", given.get("type")) if shape == "nested" else given.get("rope_type")
    for need in rule.get("needs", {}).get(kind, []) if isinstance(kind, str) else []:
        if need not in given:
            raise ValueError(f"{where if shape == 'nested' else 'config: rope_scaling'}: {need} is missing: "
                             f"{model_type}'s config class needs it beside rope_type "
                             f"{kind!r} given this way ({shape}; transformers raises without it), so vkrope does too")
    key = rule["theta"]
    if "rope_theta" not in d:
        if key is not None and key in cfg:
            if cfg[key] is None:
                raise ValueError(f"config: {key} is null; {model_type}'s config class takes it as the theta of "
                                 f"its {lt} layers, where transformers then fails")
            key_number(cfg, key, "config: ")  # (named as the file gives it, not as the dict it moves into)
            d["rope_theta"] = cfg[key]
        elif rule["theta_default"] and "rope_theta" in d0:
            d["rope_theta"] = d0["rope_theta"]
        else:
            raise ValueError(f"{where} has no rope_theta, and {model_type}'s config class gives it none")
    return d


def outer_keys(model_type: str) -> bool | None:
    """Whether a composite config's outer keys reach its language model's
    config beside a `text_config` in the file (without one: `moved`); None
    where the class could not be probed."""
    rules = rules_of(model_type)
    if "outer" not in rules:
        return True  # (not composite: the config is its own text config)
    if rules["outer"] is None:
        return None
    return bool(rules["outer"]["with_text_config"])


def moved(model_type: str, depth: int) -> tuple[list[str], list[str]] | None:
    """(the RoPE and head-width keys measured, those of them the classes
    carry into the language model's config) for a composite file that stops
    at `depth` of the text config's path; None where not measured."""
    moves = (rules_of(model_type).get("outer") or {}).get("moves")
    if not moves or str(depth) not in moves:
        return None
    return list(table()["moved_keys"]), list(moves[str(depth)])


def text_alias(cfg: dict, model_type: str, key: str) -> str | None:
    """The key of a composite file without its text config key `key` (or with a null one) that the outer class
    builds its language model's config from instead, where the file holds a dict there (`outer.text_aliases`,
    measured: Unlimited-OCR's original language_config); None for any other file; a ValueError where the file
    gives one as neither a dict nor null (the class fails on it)."""
    if cfg.get(key) is not None:
        return None
    aliases = (rules_of(model_type).get("outer") or {}).get("text_aliases", [])
    for alias in aliases:
        if cfg.get(alias) is not None and not isinstance(cfg[alias], dict):
            raise ValueError(f"config: {alias} must be a dict or null ({model_type}'s config class builds its "
                             f"language model's config from it); got {brief(cfg[alias], 60)}")
    return next((a for a in aliases if isinstance(cfg.get(a), dict)), None)


def preset(model_type: str, has_text_config: bool) -> list[str]:
    """The keys a composite config class presets in its language model's
    config otherwise than that config's own class does (Voxtral's
    rope_parameters), which the file must then give itself."""
    outer = rules_of(model_type).get("outer") or {}
    return list(outer.get("preset_with_text_config" if has_text_config else "preset_without_text_config", []))


PARTIAL_KEYS = ("partial_rotary_factor", "rotary_pct")


def _theta_where(one: dict[str, Any], filled: str, unread: list[str], kind: Any) -> str:
    """Where a one-RoPE class looks for a theta, for the message that finds none; `unread`: keys the file gives
    that neither the class nor the rotary module of the dict's rope type `kind` moves into the file's rope dict
    (Cohere 2 MoE's rope_theta beside a default one)."""
    if unread:
        return (f" in the rope dict (the file's {', '.join(unread)} beside it is moved into a file's rope dict of "
                f"type {kind!r} neither by this config class nor by its rotary module; give rope_theta inside "
                "rope_parameters)")
    keys = one["theta_keys" + filled]  # (no measured class gets here today: each fills a theta of its own)
    return f" ({', '.join(keys)})" if keys else " in the rope dict"


def one_rope(cfg: dict, model_type: str) -> dict | None:
    """The rope dict a class with one RoPE makes of a text config's keys
    `cfg` (transformers' PreTrainedConfig.convert_rope_params_to_dict):
    rope_scaling if given, else the file's rope_parameters, else the
    class's preset; then the file's theta (from the keys the class reads
    it from: rope_theta, GPT-NeoX's rotary_emb_base) or the class's, and the
    file's partial factor (partial_rotary_factor, GPT-NeoX's rotary_pct,
    where the class reads them; `cfg` loses those keys), else a key the
    class divides by head_dim (`partial_dims`: MiniMax-M2's rotary_dim), or
    the class's, where the dict has none. None where the class's rules were not
    measured."""
    one = rules_of(model_type).get("one")
    if one is None:
        return None
    check_rope_dicts(cfg)
    scaling, given = cfg.get("rope_scaling"), cfg.get("rope_parameters")
    rope = dict(scaling) if scaling else dict(given) if given is not None else json.loads(json.dumps(one["preset"]))
    filled = "" if scaling or given is not None else "_no_dict"  # (Cohere 2 MoE fills a theta only without a dict)
    if "rope_theta" not in rope:
        kind = read_type(rope, model_type)
        beside = filled == "" and isinstance(kind, str) and kind in one["theta_beside"]
        taken = "_no_dict" if beside else filled  # (its rotary module's standardize_rope_params moves the theta in)
        source = next((k for k in one["theta_keys" + taken] if k in cfg), None)
        if source is not None and cfg[source] is not None:
            key_number(cfg, source, "config: ")  # (named as the file gives it, not as the dict it moves into)
        rope["rope_theta"] = one["theta" + taken] if source is None else cfg[source]
        if rope["rope_theta"] is None and source is None:
            unread = [k for k in one["theta_keys_no_dict"] if k in cfg and k not in one["theta_keys" + taken]]
            raise ValueError(f"config: no rope_theta given{_theta_where(one, taken, unread, kind)}, and "
                             f"{model_type}'s config class fills in none here (its model cannot run without one)")
    source = next((k for k in one["partial_keys"] if k in cfg), None)
    partial = one["partial" + filled] if source is None else cfg[source]
    if source is not None and partial is not None and "partial_rotary_factor" not in rope:  # (the one read: named
        # as the file gives it, as the theta is; beside a dict's own, the class's setdefault leaves it unread)
        key_number(cfg, source, "config: ")
        if not partial <= 1:
            raise ValueError(f"config: {source} must be a number in (0, 1]; got {brief(partial)}")
    dims = next((k for k in one.get("partial_dims", []) if cfg.get(k) is not None), None)
    if source is None and dims is not None:  # (MiniMax-M2's legacy rotary_dim: the factor is it over head_dim)
        for key in (dims, "head_dim"):  # (a positive finite number each: the class reads their quotient)
            key_number(cfg, key, "config: ")
        head = cfg["head_dim"]
        if not 2 <= cfg[dims] <= head:
            raise ValueError(f"config: {dims} {brief(cfg[dims], 60)}: {model_type} rotates {dims} of head_dim "
                             f"{brief(head, 60)} channels, so it must be at least 2 and at most head_dim")
        partial = cfg[dims] / head
    if partial is not None:
        rope.setdefault("partial_rotary_factor", partial)
    for key, value in one.get("fills", {}).items():  # (HY-V4-VL's mrope_section, set into any dict lacking it)
        rope.setdefault(key, json.loads(json.dumps(value)))
    _check_late_partial(cfg, rope, source, model_type)
    for key in PARTIAL_KEYS:
        cfg.pop(key, None)  # (read above where the class reads it; a key it does not read is not read below)
    return rope


def _check_late_partial(cfg: dict, rope: dict, source: str | None, model_type: str) -> None:
    """Refuse a file's partial_rotary_factor that the class keeps as an attribute only (not folded into its
    rope dict: Qwen2-VL's) beside a rope type other than default: transformers' functions of those types call
    standardize_rope_params, which moves that attribute into the dict when the model is built (Qwen2-VL's yarn
    then rotates half the head, and its M-RoPE split fails), a step the rules did not measure per class."""
    value = cfg.get("partial_rotary_factor")
    if source is not None or value is None or value == 1.0 or "partial_rotary_factor" in rope:
        return
    kind = read_type(rope, model_type)
    if kind != "default":
        raise ValueError(f"config: partial_rotary_factor {brief(value, 60)}: {model_type}'s config class keeps it "
                         f"beside its rope dict, and transformers' {kind!r} function moves it in when the model is "
                         "built, a step vkrope's rules did not measure for this class: refused rather than guessed "
                         "(give it inside the rope dict)")


def text_model_type(model_type: str) -> str | None:
    """The model type of a composite class's own language model config, where the class builds a text_config
    naming another model type as that type (None: not composite, or it builds its own class whatever)."""
    outer = rules_of(model_type).get("outer") or {}
    return outer.get("text_model_type")


def type_keys(model_type: str, kind: str) -> dict[str, list[str]]:
    """The model type's `type_keys` rule for rope type `kind` ({} where none was measured)."""
    return rules_of(model_type).get("type_keys", {}).get(kind, {})


def needs(model_type: str, kind: str) -> frozenset[str]:
    """The keys the model type's config class needs in a rope dict of type `kind` (`type_keys`' `needs`:
    PhiMoE's short_mscale and long_mscale beside longrope, which its model reads and no other does)."""
    return frozenset(type_keys(model_type, kind).get("needs", ()))


def named_type(rope: dict) -> Any:
    """The rope type a rope dict names, as transformers reads one: rope_type, else the legacy type, else
    "default" (any value: the callers check it)."""
    return rope.get("rope_type", rope.get("type", "default"))


def read_type(rope: dict, model_type: str) -> Any:
    """named_type as the model type's config class reads it: under its early names (renames: Phi-3's "su"
    is longrope, Qwen2-VL's "mrope" default)."""
    kind = named_type(rope)
    return renames(model_type).get(kind, kind) if isinstance(kind, str) else kind


def renames(model_type: str) -> dict[str, str]:
    """{name: rope type} of the names the model type's config class renames (Phi-3's "su" -> longrope)."""
    return rules_of(model_type).get("renames", {})


def rename_scaling(cfg: dict, model_type: str) -> None:
    """A file's `rope_scaling` naming a type the class renames there only (`scaling_renames`: Sarvam-MLA's
    "deepseek_yarn", under `type` or `rope_type`), as the class converts it: the dict without `type`, under
    `rope_type` the type it runs. Any other config is left as it is."""
    scaling = cfg.get("rope_scaling")
    renamed = rules_of(model_type).get("scaling_renames", {})
    if not renamed or not isinstance(scaling, dict):
        return
    name = next((scaling.get(k) for k in ("type", "rope_type") if scaling.get(k) in renamed), None)
    if name is not None:
        cfg["rope_scaling"] = {**{k: v for k, v in scaling.items() if k != "type"}, "rope_type": renamed[name]}


@lru_cache(maxsize=1)
def early_names() -> dict[str, dict[str, str]]:
    """{early name: {model type: the rope type its class renames it to}} of the names some class renames that
    are no rope type of `rope_types` ("su", "mrope"): every other class keeps such a name, and its model has
    no function of that name."""
    early: dict[str, dict[str, str]] = {}
    for model_type, rules in sorted(table()["models"].items()):
        for name, kind in rules.get("renames", {}).items():
            if name not in RULES:
                early.setdefault(name, {})[model_type] = kind
        for name, kind in rules.get("scaling_renames", {}).items():  # (Sarvam-MLA's, in rope_scaling only)
            if name not in RULES and name not in rules.get("renames", {}):
                early.setdefault(name, {})[model_type] = kind
    return early


def early_type(name: str) -> str | None:
    """The rope type early name `name` stands for where a class renames it ("su": longrope); None for any
    other name (one type per early name: the rules script checks)."""
    readers = early_names().get(name)
    return next(iter(readers.values())) if readers else None


def original_length(model_type: str) -> dict[str, str]:
    """Which original length the model type's model reads where a file gives one at its top level
    (scripts/hf_config_rules.py `original_length`): `both`, "top" or "dict"; `top_only`, "top" or
    "max_position_embeddings" (PhiMoE's, and every class's with RoPE per layer type: they read the rope
    dict's only). "unknown" where it was not measured."""
    return rules_of(model_type).get("original_length") or {"both": "unknown", "top_only": "unknown"}


def drop_ignored(cfg: dict, model_type: str) -> None:
    """The keys the class ignores where vkrope would read them (`ignored`: UnlimitedOCR's head_dim, which its
    class makes hidden_size // num_attention_heads whatever the file says), dropped from the text config."""
    for key in rules_of(model_type).get("ignored", []):
        value = cfg.pop(key, None)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):  # (its strict field)
            raise ValueError(f"config: {key} must be an integer or null ({model_type}'s class then ignores it); "
                             f"got {brief(value, 60)}")


def text_fill(model_type: str, other_type: bool = False) -> dict:
    """The RoPE keys a composite class fills into a file's text_config where it lacks them (Voxtral's rope_theta
    and head_dim, GLM-ASR's rope_parameters): measured as its sub-config defaults, merged under the file's;
    `other_type`: into a text_config naming another model type than the class's own, where the class fills that
    too (`fill_any_type`: Voxtral's does, Fuyu's does not)."""
    outer = rules_of(model_type).get("outer") or {}
    if other_type and not outer.get("fill_any_type"):
        return {}
    return json.loads(json.dumps(outer.get("fill") or {}))


def attention_reads(model_type: str) -> list[str]:
    """The rope dict keys the model type's code reads outside its rotary module, whatever the rope type
    (`attention_reads`, from the modeling source: Ministral 3's and Mistral 4's llama_4_scaling_beta and
    original length, by which their attention scales q)."""
    return list(rules_of(model_type).get("attention_reads", []))


def rotary_width(cfg: dict, rule: dict, kind: str) -> tuple[int, int] | None:
    """(the width of transformers' cos / sin, the width the attention rotates) of a text config `cfg` (the
    file's keys) of a model type whose attention rotates a key of its own (`width`: DeepSeek's
    qk_rope_head_dim) with rope type `kind`, where the two agree; None where they do not, or the rule cannot
    tell: transformers' model fails on a cos / sin of another width."""
    d, key = rule["defaults"], rule["key"]
    if "head_dim" in cfg and cfg["head_dim"] is None and not rule.get("null_head_dim_runs"):
        return None  # (a null head_dim the class keeps: it raises, or the rotary module reads the quotient)
    if rule.get("alias") and "head_dim" in cfg:  # (head_dim names the key, and wins: JetMoe's kv_channels)
        cfg = {**cfg, key: cfg["head_dim"]}
    rotated = cfg.get(key, d[key])
    summed = sum(cfg.get(k, d[k]) if isinstance(cfg.get(k, d[k]), int) else math.nan for k in rule["head_sum"])
    head = cfg["head_dim"] if rule["head_dim_file"] and "head_dim" in cfg else summed
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (rotated, head, summed)):
        return None
    scaling = isinstance(cfg.get("rope_scaling"), dict) and bool(cfg["rope_scaling"])
    rope = cfg["rope_scaling"] if scaling else cfg.get("rope_parameters")
    if isinstance(rope, dict) and rope.get("partial_rotary_factor") is not None:  # (a null, where the module takes
        partial = rope["partial_rotary_factor"]  # one, is no factor: check_partial_null refuses it elsewhere)
    elif rule["ratio"] and not scaling:
        partial = rotated / summed  # (the class's own factor, of the head it derives before a file's head_dim)
    else:  # (a null factor is the class's none: its rotary module spans the head, as without the key)
        partial = 1.0 if cfg.get("partial_rotary_factor") is None else cfg["partial_rotary_factor"]
    if isinstance(partial, bool) or not isinstance(partial, (int, float)) or not math.isfinite(partial):
        return None  # (no width: refused by the caller, whose words name the partial factor)
    whole = (kind == "default" and not rule["default_partial"]) or (
        isinstance(kind, str) and kind in RULES and RULES[kind].whole_head)  # (a file's rope_type may be any JSON)
    width = head if whole else int(head * partial)  # (proportional's cos / sin span the head)
    return (int(width), int(rotated)) if width == rotated else None

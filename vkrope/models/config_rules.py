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

`one_rope` and `per_type_rope` apply the conversion, `renames` and
`early_names` the renames, `outer_keys`,
`preset` and `text_model_type` the composite's rules, `check_shape` and
`check_type` the refusals; where the rules are not known, or a file's keys
take a shape the class fails on, the config is refused.
"""

from __future__ import annotations

import json
import math
import os
from functools import lru_cache
from typing import Any

from ..runtime.dtypes import is_int
from .rope import brief, key_number
from .rope_types import RULES

PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "hf_config_rules.json")


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The whole rules table (read once)."""
    with open(PATH, encoding="utf-8") as f:
        return json.load(f)


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
# The shapes scripts/hf_config_rules.py probes: rope_scaling (and a one-RoPE class's rope_parameters) absent,
# null, empty, a dict, a dict with the legacy `type`; per layer type besides: every type, some left out, some
# null, with `type`; each theta key absent, null or a value (at most two given); the partial factor pairs.
SHAPES = ("-", "0", "e", "d", "t")
PER_TYPE_SHAPES = SHAPES + ("n", "m", "z", "nt")
THETA_SHAPES = ("-", "0", "v")
PARTIAL_SHAPES = (("-", "-"), ("v", "-"), ("0", "-"), ("-", "v"))


# What each letter of a shape (`signature`) says of how its key is given
SHAPE_LETTERS = {"-": "absent", "0": "null", "e": "an empty dict", "d": "a dict", "t": "a dict with the legacy type",
                 "n": "a dict per layer type", "m": "a dict per layer type, some left out",
                 "z": "a dict per layer type, some null", "nt": "a dict per layer type, with the legacy type",
                 "mt": "a dict per some layer types, with the legacy type",
                 "zt": "a dict per layer type, some null, with the legacy type", "v": "another value"}


def _value_shape(v: Any, layer_types: Any) -> str:
    """How one RoPE key is given: a key of SHAPE_LETTERS."""
    if v is None:
        return "0"
    if not isinstance(v, dict):
        return "v"
    if not v:
        return "e"
    if layer_types and set(v) <= set(layer_types) and all(x is None or isinstance(x, dict) for x in v.values()):
        kind = "z" if any(x is None for x in v.values()) else "m" if set(v) != set(layer_types) else "n"
        return kind + ("t" if any(isinstance(x, dict) and "type" in x for x in v.values()) else "")
    return "t" if "type" in v else "d"


def signature(cfg: dict, keys: list[str], layer_types: Any) -> str:
    """The shape of a text config's RoPE keys (see the module docstring): one letter per key, '-' absent."""
    parts = []
    for key in ("rope_scaling", "rope_parameters", *keys, *PARTIAL_KEYS):
        parts.append(_value_shape(cfg[key], layer_types) if key in cfg else "-")
    return "".join(p + "|" for p in parts)[:-1]


def probed(sig: str, n_keys: int, per_type: bool) -> bool:
    """Whether scripts/hf_config_rules.py probes shape `sig` (of n_keys theta keys)."""
    parts = sig.split("|")
    theta = parts[2:2 + n_keys]
    return (parts[0] in SHAPES and parts[1] in (PER_TYPE_SHAPES if per_type else SHAPES)
            and all(x in THETA_SHAPES for x in theta) and sum(x != "-" for x in theta) <= 2
            and tuple(parts[2 + n_keys:]) in PARTIAL_SHAPES)


def check_shape(cfg: dict, model_type: str, layer_types: Any) -> None:
    """A ValueError where the file gives its RoPE keys in a shape on which vkrope's reading of this model type
    differed from its config class's (or the class raised), or in one never probed."""
    rules = rules_of(model_type)
    keys = rules.get("keys", ["rope_theta"])
    sig = signature(cfg, keys, layer_types)
    if "v" in sig.split("|")[:2]:
        return  # (rope_scaling or rope_parameters not a dict: their own error comes below)
    if "refused" not in rules:
        why = rules.get("shape_why")
        if why is None or set(sig) <= {"-", "|"}:
            return
    else:
        why = rules["refused"].get(sig)
        if why is None and probed(sig, len(keys), bool(layer_types)):
            return
    named = ("rope_scaling", "rope_parameters", *rules["keys"], *PARTIAL_KEYS)
    given = [k for k in named if k in cfg]
    both = isinstance(cfg.get("rope_scaling"), dict) and isinstance(cfg.get("rope_parameters"), dict)
    # (both dicts: transformers' classes differ on which wins, and its own saved files may hold both, so "as
    # transformers saves them" would lead back here: the caller knows which one the model was trained with)
    advice = ("give only the one of rope_scaling and rope_parameters the model runs" if both else
              "give the RoPE keys as transformers saves them (AutoConfig.from_pretrained(path).to_dict())")
    legend = ", ".join(f"{x} {SHAPE_LETTERS[x]}" for x in dict.fromkeys(sig.split("|")))
    raise ValueError(f"config: {model_type}'s config class reads {', '.join(given) or 'these keys'} given this way "
                     f"otherwise than vkrope ({why or 'a shape not probed'}; shape {sig}, of {' | '.join(named)}: "
                     f"{legend}): refused rather than guessed; {advice}")


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


def check_type(kind: str, model_type: str, where: str, rope: dict, cfg: dict) -> str:
    """`kind`, or a ValueError where the model type's config class refuses that rope type, or the rope dict
    `rope` (the file's, or the class's preset) lacks a key the class needs beside it, or gives it null, or
    the text config `cfg` lacks a top-level key the class needs beside it (transformers raises on each)."""
    rules = rules_of(model_type)
    if kind in rules.get("types_mscaled", []):
        raise ValueError(f"{where}rope_type {kind!r}: {model_type}'s model scales cos and sin by short_mscale or "
                         f"long_mscale in place of {kind!r}'s own factor (its config class refuses {kind!r} without "
                         "them), which vkrope computes beside longrope only: refused, not read otherwise")
    if kind in rules.get("types_refused", []):
        raise ValueError(f"{where}rope_type {kind!r}: {model_type}'s config class refuses it (transformers raised "
                         "on it, given with its parameters, when vkrope's rules were measured), so vkrope does too")
    # (an empty dict: the file gave none and the class's preset was not taken, a shape check_shape judges; the
    # rules script measures those shapes with vkrope's reading, which must not refuse them here first)
    keys = type_keys(model_type, kind) if rope else {}
    for key in keys.get("needs", []):
        if key not in rope:
            raise ValueError(f"{where}{key} is missing: {model_type}'s config class needs it beside rope_type "
                             f"{kind!r} (transformers raises without it), so vkrope does too")
    for key in keys.get("config_needs", []):
        if cfg.get(key) is None:
            raise ValueError(f"config: {key} is missing: {model_type}'s config class needs it beside rope_type "
                             f"{kind!r} (transformers raises without it), so vkrope does too")
    for key in keys.get("not_null", []):
        if key in rope and rope[key] is None:
            raise ValueError(f"{where}{key} is null: {model_type}'s config class needs a value beside rope_type "
                             f"{kind!r} (transformers raises on null), so vkrope does too")
    return kind


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


# The fields the key probes compare (scripts/hf_key_probes.py FIELDS), as a message names them.
_FIELDS = {"theta": "theta", "rope_type": "rope type", "factor": "scaling factor", "partial": "partial rotary factor",
           "width": "rotated width"}


def check_unread(cfg: dict, model_type: str, layers: Any = None) -> None:
    """A ValueError where the text config gives a key otherwise than its class's default that transformers
    reads for RoPE where vkrope does not follow (`unread`: Step 3.5's partial_rotary_factors, Falcon's n_embed;
    `modeling_reads`: Molmo2's rope_scaling_layers, read by its model's code; a list of every layer, where the
    class makes that its default, is the default; `layers`: the class's layer count where the file gives
    none). A key vkrope reads for other models (`kinds` given) is refused only given as a list or a number
    where a probe of that kind was read otherwise (Gemma 3's list rope_theta; its number is read)."""
    rules = rules_of(model_type)
    for key, rule in {**rules.get("unread", {}), **rules.get("modeling_reads", {})}.items():
        value = cfg.get(key)
        n = cfg.get("num_hidden_layers", layers)
        kind = "list" if isinstance(value, list) else "number" if isinstance(value, (int, float)) \
            and not isinstance(value, bool) else None
        every = rule.get("all_layers") and isinstance(value, list) and isinstance(n, int) and not isinstance(n, bool) \
            and len(value) == n and all(v == i for i, v in enumerate(value))
        if key not in cfg or value == rule.get("default") or ("kinds" in rule and kind not in rule["kinds"]) or every:
            continue
        moved = ", ".join(_FIELDS.get(f.strip(), f.strip()) for f in rule.get("moved", "").split(",") if f.strip())
        how = f"given alone it changes the {moved} transformers applies" if moved else \
            "its model's code reads it, in its modeling module"
        if "kinds" in rule:
            kinds = " or a ".join(rule["kinds"])
            taken = f"vkrope does not read it given as a {kinds}; give it as transformers saves it"
        else:
            listed = f" or every layer, list(range({n}))" if rule.get("all_layers") and isinstance(n, int) else ""
            taken = f"only its default {brief(rule.get('default'), 60)}{listed} is read (or no {key})" + (
                "; AutoConfig.from_pretrained(path).to_dict() saves what the class makes of it" if moved else "")
        raise ValueError(f"config: {key} {brief(value, 60)}: transformers' {model_type} reads it for RoPE otherwise "
                         f"than vkrope ({how}); {taken}: refused rather than guessed")


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


def _value_rules(cfg: dict, model_type: str) -> dict:
    """The rules check_nulls and check_kinds apply to the text config `cfg`: the model type's; of a composite the
    script could not build (not measured: its `strict` null), its text config's own model type's where
    that names a measured one (EXAONE 4.5's text config, EXAONE 4's)."""
    rules = rules_of(model_type)
    inner = cfg.get("model_type")
    if _unmeasured(rules) and isinstance(inner, str) and "strict" in rules_of(inner):
        return rules_of(inner)
    return rules


def check_nulls(cfg: dict, model_type: str, defaults: dict) -> None:
    """A ValueError where the text config `cfg` (the file's keys, before the class defaults) gives as null a
    key on which the model type's config class raises when it is null, or its model fails (`null_refused`: a
    strict int field, Qwen3's head_dim, every class's hidden_size; Qwen2's head_dim, which its attention takes
    as given). Where that was not measured, as check_kinds: the text config's own model type's rules, else a
    null head_dim or any key the class defaults (`defaults`) as an int, refused rather than guessed."""
    rules = _value_rules(cfg, model_type)
    keys = rules.get("null_refused", []) if not _unmeasured(rules) else \
        ["head_dim", *(k for k, v in defaults.items() if type(v) is int)]
    for key in keys:
        if key in cfg and cfg[key] is None:
            raise ValueError(f"config: {key} is null: {model_type}'s config class refuses a null {key}, or its "
                             "model fails on one (transformers raises on loading the config, or building the "
                             "model), so vkrope does too")


def check_partial_null(rope: dict, where: str, model_type: str, layer_type: str | None, kind: str) -> None:
    """A ValueError where the rope dict `rope` of one layer type (`layer_type`, None for a model of one RoPE)
    holds partial_rotary_factor null and rope type `kind` is not among those `partial_null_reads` measured
    reading it as no factor. `where` names the dict in the message."""
    if "partial_rotary_factor" not in rope or rope["partial_rotary_factor"] is not None:
        return
    reads = rules_of(model_type).get("partial_null_reads") or {}
    if kind in reads.get("*" if layer_type is None else layer_type, []):
        return
    raise ValueError(f"{where}partial_rotary_factor is null: transformers {table()['transformers']} fails on it "
                     f"with {model_type}'s rope type {kind!r} (its config class or rotary module raises), or was not "
                     "measured reading it as no factor; give a number")


def check_absent(cfg: dict, model_type: str) -> None:
    """A ValueError where the text config `cfg` (the file's keys, its aliases applied: dots.llm1's
    num_local_experts sets n_routed_experts) lacks a key the model type's class leaves None and its model reads
    as given (`absent_refused`: Ministral's head_dim, Nemotron's num_key_value_heads)."""
    for key in _value_rules(cfg, model_type).get("absent_refused", []):
        if cfg.get(key) is None:
            raise ValueError(f"config: {key} is {'null' if key in cfg else 'missing'}: {model_type}'s config class "
                             f"leaves {key} None and its model reads it as given (the model was not built without "
                             "it at the class's sizes; released files give it), so vkrope refuses a file without it")


# The kinds of value a JSON file holds, by the letters the rules' `strict` names them (the script's KINDS)
KIND_NAMES = {"n": "null", "b": "a bool", "i": "an integer", "f": "a float", "s": "a string", "e": "an empty list",
              "l": "a list of integers", "m": "a list of other items", "d": "a dict"}


def value_kind(value: Any) -> str:
    """The letter of `value`'s kind (KIND_NAMES), by Python's types as the config classes check them (a numpy
    integer is no int to them): a list is "e" where it is empty (a list field of any items may take it), "l"
    where every item is an int and no bool, "m" otherwise; "?" for what no JSON file holds."""
    if isinstance(value, list):
        if not value:
            return "e"
        return "l" if all(isinstance(v, int) and not isinstance(v, bool) for v in value) else "m"
    kinds = ((type(None), "n"), (bool, "b"), (int, "i"), (float, "f"), (str, "s"), (dict, "d"))
    return next((letter for kind, letter in kinds if isinstance(value, kind)), "?")


def check_kinds(cfg: dict, model_type: str, defaults: dict, like: bool = False, aliases: Any = ()) -> None:
    """A ValueError where the text config `cfg` (the file's keys) gives a key a kind of value (value_kind) on
    which the model type's config class raises (`strict`: transformers 5's strict fields, `head_dim: 96.0`,
    `sliding_window: true`, `num_attention_heads: "32"`, `vocab_size: [32000]`, `rms_norm_eps: "1e-6"`,
    whether vkrope reads the key or not; a head key the class takes as a float and the model does not), or a
    value no JSON file holds ("?", a numpy integer: the class's isinstance check fails on it; not where only
    the model refuses a float). With `like` (a file read as another type's, whose class does not load it),
    only the keys from_hf reads (the table's `read_keys`). Where that was not measured (a class not built of a
    file without RoPE keys), the rules of the text config's own model type where it names a measured one,
    else head_dim and any key the class defaults (`defaults`) as an int given as anything but an integer:
    refused rather than guessed. A key under an attribute_map name (`aliases`) is stored unchecked: its model,
    measured, decides, and a numpy integer runs there."""
    rules = _value_rules(cfg, model_type)
    measured: dict[str, list[str]] | None = rules.get("strict")
    unmeasured = measured is None
    strict = measured if measured is not None else {"bfselmd": ["head_dim", *(k for k, v in defaults.items()
                                                                            if type(v) is int)]}
    read = set(table().get("read_keys", ())) if like else None
    for refused, keys in strict.items():
        for key in (k for k in keys if k in cfg and (read is None or k in read)):
            kind = value_kind(cfg[key])
            if _refused_kind(kind, refused, cfg[key]) and not (kind == "?" and key in aliases):
                shown, given = _described(cfg[key], kind)
                raise ValueError(f"config: {key} is {shown}: {model_type}'s config class " + (
                    f"was not measured (vkrope's rules script could not build it of a file without RoPE keys) "
                    f"and defaults {key} as an integer, so vkrope refuses {given} there rather than guess"
                    if unmeasured else
                    f"{_taken(refused, key in rules.get('null_refused', []), given)} there, or its model does "
                    "(transformers raises on loading the config, or building the model), so vkrope refuses it too"))


def check_outer_kinds(cfg: dict, model_type: str, text_path: list[str], known: Any) -> None:
    """A ValueError where a composite model type's file (`cfg`, whole) gives a key of one of its configs other
    than the language model's (the outer one, vision_config, thinker_config.audio_config, ...) a kind of value
    its class raises on (`outer_strict`, measured as `strict`: Qwen2-VL's `vision_config.depth: 2.0`, an outer
    `tie_word_embeddings: null`): transformers fails to load that file. Where the file's sub-config, or one
    around it, names another model type than the class measured and its class is chosen by that name (LLaVA's
    AutoConfig: a SigLIP vision_config where the class defaults CLIP's), it is another class's: not checked;
    one naming a type transformers does not have (`known`: the model table's) fails there, and a config at
    `text_path` or a measured path given as anything but a dict or null (the classes' sub-config fields), or
    as a dict without the model_type its class is chosen by where the outer class raises on that
    (`untyped_fails`: Music Flamingo's audio_config)."""
    outer = rules_of(model_type).get("outer_strict") or {}
    for path in dict.fromkeys([*(".".join(text_path[:n]) for n in range(1, len(text_path) + 1)), *outer]):
        given = _at(cfg, path)
        if given is not None and not isinstance(given, dict):
            raise ValueError(f"config: {path} is {_described(given, value_kind(given))[0]}: {model_type}'s config "
                             "class takes a config (a dict) or null there (transformers raises on loading the "
                             "config), so vkrope refuses it too")
        if (outer.get(path) or {}).get("untyped_fails") and isinstance(given, dict) and "model_type" not in given:
            raise ValueError(f"config: {path} has no model_type: {model_type}'s config class chooses its {path} "
                             "class by it and raises without it (transformers fails on loading the config), so "
                             "vkrope refuses it too")
    for path, measured in outer.items():
        named = {at: _node(cfg, at).get("model_type", own) for at, own in measured["chosen"].items()}
        for at, name in named.items():
            if not (isinstance(name, str) and name in known):
                raise ValueError(f"config: {at}.model_type is {brief(name)}, not a model type of transformers "
                                 f"{table()['transformers']} (its config class fails on it), so vkrope refuses it")
        if any(name != measured["chosen"][at] for at, name in named.items()):
            continue
        node = _node(cfg, path)
        for refused, keys in measured["kinds"].items():
            for key in (k for k in keys if k in node):
                kind = value_kind(node[key])
                if _refused_kind(kind, refused, node[key]):
                    shown, given = _described(node[key], kind)
                    raise ValueError(f"config: {path + '.' if path else ''}{key} is {shown}: {model_type}'s "
                                     f"{path or 'config'} class {_taken(refused, False, given)} there (transformers "
                                     "raises on loading the config), so vkrope refuses it too")


def _at(cfg: dict, path: str) -> Any:
    """What the file gives at dotted `path` in `cfg` (None where nothing, or "" the outer config)."""
    parts = path.split(".") if path else []
    return _node(cfg, ".".join(parts[:-1])).get(parts[-1]) if parts else None


def _node(cfg: dict, path: str) -> dict:
    """The dict at dotted `path` in `cfg` ("" itself); {} where there is none."""
    node: Any = cfg
    for part in path.split(".") if path else ():
        node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else {}


def _refused_kind(kind: str, refused: str, value: Any = None) -> bool:
    """Whether a value of `kind` (value_kind's) is refused where the kinds `refused` are: one no JSON file holds
    ("?", a numpy integer) too, as the class's isinstance check refuses it, but not where only the model refuses
    a float (a head key the class has no field for), nor a tuple (`value`) where the field is a list's (its
    refused kinds lack one of a list's: a tuple was never probed, and Qwen2.5-VL's vision class takes one)."""
    if kind == "?" and isinstance(value, tuple) and not ("l" in refused and "m" in refused):
        return False
    return kind in refused or (kind == "?" and refused != "f")


def _described(value: Any, kind: str) -> tuple[str, str]:
    """(the value as a refusal shows it, its kind's words) of a config value of `kind` (value_kind's)."""
    given = KIND_NAMES.get(kind) or f"of type {type(value).__name__}, which no JSON file holds"
    return ("null" if kind == "n" else f"{brief(value, 60)} ({given})"), given


def _taken(refused: str, null_refused: bool, given: str) -> str:
    """What check_kinds says a strict field takes: the kinds it does not refuse ("takes null or an integer"), null
    among them only where the key's null is not refused (null_refused, measured apart); where that is most kinds
    (a key the class has no field for, whose float its model fails on), what it refuses."""
    taken = [name for c, name in KIND_NAMES.items() if c not in refused and not (c == "n" and null_refused)]
    return f"takes {' or '.join(taken)}" if len(taken) <= 3 else \
        f"refuses {'a value ' if given.startswith('of type') else ''}{given}"


def check_heads_divide(cfg: dict, model_type: str, head_dim_given: bool) -> None:
    """A ValueError where num_attention_heads does not divide hidden_size in the text config `cfg` (the file's
    keys and the class's defaults) and the model type's code fails on that (`heads_divide`, bare or beside a
    head_dim the file gives, `head_dim_given`: its config class or its model raises); a model that takes it
    (Mistral's) has the head dim the quotient's floor, as from_hf reads it."""
    rule = rules_of(model_type).get("heads_divide")
    hidden: Any = cfg.get("hidden_size")
    heads: Any = cfg.get("num_attention_heads")
    if not rule or not is_int(hidden) or not is_int(heads) or (heads != 0 and hidden % heads == 0):
        return  # (Python's %, as the class's: 4096 over -4 heads divides, over 0 or -3 does not)
    if rule["head_dim" if head_dim_given else "bare"]:
        raise ValueError(f"config: hidden_size {brief(hidden)} is not a multiple of num_attention_heads "
                         f"{brief(heads)}: "
                         f"{model_type}'s code refuses that (transformers raises on loading the config or running "
                         "the model), so vkrope does too")


def _unmeasured(rules: dict) -> bool:
    """Whether the script could not build the model type's class of a file without RoPE keys, so measured none
    of the rules that need it (its `strict` is null, not a dict)."""
    return "strict" in rules and rules["strict"] is None


def check_layer_types_given(cfg: dict, model_type: str, aliases: Any) -> None:
    """A ValueError where the file gives layer_types (or its attribute_map name, `aliases`) at all and the model
    type's config class raises on any (`layer_types`' "any": Falcon-H1's derives them from its other keys, a
    property without a setter), said with the key and value as the file gives them."""
    if not (rules_of(model_type).get("layer_types") or {}).get("any"):
        return
    names = {"layer_types"} | {a for a, stored in dict(aliases).items() if stored == "layer_types"} | \
        {stored for a, stored in dict(aliases).items() if a == "layer_types"}  # (Falcon-H1's layers_block_type)
    for key in sorted(names):
        if key in cfg:
            raise ValueError(f"config: {key} is {brief(cfg[key], 60)}: {model_type}'s config class derives the "
                             f"layer types itself and raises on loading a file that gives them (even null), so "
                             f"vkrope refuses it too; leave {key} out")


def check_layer_types(cfg: dict, model_type: str, default_layers: Any) -> None:
    """A ValueError where the file's layer_types (legacy names renamed) is not a list, has another length than
    num_hidden_layers (the file's, else the class's `default_layers`), or names a type outside transformers'
    layer types, where the model type's config class raises on that on loading (`layer_types`: its
    validate_layer_type, measured; a class the script could not build refuses each), or is given at all where
    the class raises on any list ("any": Falcon-H1's, a property without a setter)."""
    rules = rules_of(model_type)
    rule = rules.get("layer_types")
    if rule is None and _unmeasured(rules):  # (refused rather than guessed)
        rule = dict.fromkeys(("shorter", "longer", "names", "not_list", "other"), True)
    types = cfg.get("layer_types")
    if rule is None or types is None:
        return
    # (a value no list, measured as the integer 5, "other": the classes' strict list field refuses it, or their
    # validate_layer_type fails iterating it; Gemma 4's and Qwen3's refuse a string, a float, a bool and a dict
    # alike; Llama's, whose field is not strict, iterates a dict's keys and takes it, which vkrope refuses: no
    # file holds one. A tuple, which only Python gives, where the class refuses one)
    if not isinstance(types, list) and (rule["not_list"] if isinstance(types, tuple) else rule.get("other", True)):
        raise ValueError(f"config: layer_types must be a list of layer type names; got {brief(types, 60)} "
                         f"({model_type}'s config class raises on loading it)")
    if not isinstance(types, list):
        return
    n = cfg.get("num_hidden_layers", default_layers)
    if isinstance(n, int) and len(types) != n and rule["shorter" if len(types) < n else "longer"]:
        raise ValueError(f"config: layer_types has {len(types)} entries for num_hidden_layers = {n}: "
                         f"{model_type}'s config class refuses that (transformers raises on loading the config), "
                         "so vkrope does too")
    odd = [name for name in types if name not in table()["layer_type_names"]]
    if odd and rule["names"]:
        raise ValueError(f"config: layer_types names {odd[0]!r}, which is none of transformers' layer types "
                         f"({model_type}'s config class raises on loading it), so vkrope refuses it")


def check_flags_length(cfg: dict, model_type: str, key: str) -> None:
    """A ValueError where `cfg[key]`, a list of per-layer flags (no_rope_layers), is longer than
    num_hidden_layers and the model type's config class raises on that (`nope_longer`: Llama 4's derives
    layer_types from it where the file gives none, and validates their count); transformers' model reads the
    first num_hidden_layers flags of a list its class takes."""
    rule = rules_of(model_type).get("nope_longer")
    flags, n = cfg.get(key), cfg.get("num_hidden_layers")
    if not isinstance(flags, list) or isinstance(n, bool) or not isinstance(n, int) or len(flags) <= n:
        return
    given = isinstance(cfg.get("layer_types"), list)
    if rule is None or rule["with_layer_types" if given else "without_layer_types"]:
        raise ValueError(f"config: {key} has {len(flags)} entries for num_hidden_layers {n}: {model_type}'s "
                         f"config class {'raises on it' if rule else 'was not measured on it'}"
                         f"{'' if given else ' where the file gives no layer_types (it derives them from it)'}, "
                         "so vkrope refuses it")


def check_mrope_sections(section: tuple[int, ...] | None, head_dim: int, model_type: str, where: str) -> None:
    """A ValueError where the model type's config class validates mrope_section (`mrope_sections`: Cosmos 3
    Edge's wants three sections summing to half its head_dim) and the config's `section` (`head_dim`, the
    width of the class's key) fails that; transformers raises on loading the config. (A rope dict without
    sections, on which the class raises too, is the rope type's `needs`.)"""
    rule = rules_of(model_type).get("mrope_sections")
    # (rule["key"] is the model table's one head key, whose width `head_dim` is: the script measured the class
    # by widening that key; not three sections: ModelRope refuses those for every model)
    if rule is not None and section is not None and sum(section) != head_dim // 2:
        raise ValueError(f"{where}mrope_section {list(section)}: {model_type}'s config class refuses "
                         f"sections that are not three summing to half its {rule['key']} {head_dim} "
                         "(transformers raises on loading the config), so vkrope does too")


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

"""The refusals the rules table states (vkrope/data/hf_config_rules.json;
config_rules.py's docstring says what each rule holds): a rope type the
config class refuses or lacks a key for (`check_type`), keys vkrope does
not follow (`check_unread`), a null, absent or wrongly kinded value
(`check_nulls`, `check_partial_null`, `check_absent`, `check_kinds`,
`check_outer_kinds`), layer_types and no-rope flags (`check_layer_types*`,
`check_flags_length`), heads that do not divide the hidden size and
M-RoPE sections the class validates. Each raises a ValueError naming the
key, what the file gave and what the class takes."""

from __future__ import annotations

from typing import Any

from ..runtime.dtypes import is_int
from . import config_rules
from .rope import brief


def check_type(kind: str, model_type: str, where: str, rope: dict, cfg: dict) -> str:
    """`kind`, or a ValueError where the model type's config class refuses that rope type, or the rope dict
    `rope` (the file's, or the class's preset) lacks a key the class needs beside it, or gives it null, or
    the text config `cfg` lacks a top-level key the class needs beside it (transformers raises on each)."""
    rules = config_rules.rules_of(model_type)
    if kind in rules.get("types_mscaled", []):
        raise ValueError(f"{where}rope_type {kind!r}: {model_type}'s model scales cos and sin by short_mscale or "
                         f"long_mscale in place of {kind!r}'s own factor (its config class refuses {kind!r} without "
                         "them), which vkrope computes beside longrope only: refused, not read otherwise")
    if kind in rules.get("types_refused", []):
        raise ValueError(f"{where}rope_type {kind!r}: {model_type}'s config class refuses it (transformers raised "
                         "on it, given with its parameters, when vkrope's rules were measured), so vkrope does too")
    # (an empty dict: the file gave none and the class's preset was not taken, a shape check_shape judges; the
    # rules script measures those shapes with vkrope's reading, which must not refuse them here first)
    keys = config_rules.type_keys(model_type, kind) if rope else {}
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
    rules = config_rules.rules_of(model_type)
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


def _value_rules(cfg: dict, model_type: str) -> dict:
    """The rules check_nulls and check_kinds apply to the text config `cfg`: the model type's; of a composite the
    script could not build (not measured: its `strict` null), its text config's own model type's where
    that names a measured one (EXAONE 4.5's text config, EXAONE 4's)."""
    rules = config_rules.rules_of(model_type)
    inner = cfg.get("model_type")
    if _unmeasured(rules) and isinstance(inner, str) and "strict" in config_rules.rules_of(inner):
        return config_rules.rules_of(inner)
    return rules


def check_nulls(cfg: dict, model_type: str, defaults: dict) -> None:
    """A ValueError where the text config `cfg` (the file's keys, before the class defaults) gives as null a
    key on which the model type's config class raises when it is null, or its model fails (`null_refused`: a
    strict int field, Qwen3's head_dim, every class's hidden_size; Qwen2's head_dim, which its attention takes
    as given); and, where the file gives no layer_types list, a key the class derives them from and raises on
    as null (`null_needs_layer_types`: EXAONE 4's sliding_window, Cohere 2's sliding_window_pattern). Where that
    was not measured, as check_kinds: the text config's own model type's rules, else a null head_dim or any key
    the class defaults (`defaults`) as an int, refused rather than guessed."""
    rules = _value_rules(cfg, model_type)
    keys = rules.get("null_refused", []) if not _unmeasured(rules) else \
        ["head_dim", *(k for k, v in defaults.items() if type(v) is int)]
    for key in keys:
        if key in cfg and cfg[key] is None:
            raise ValueError(f"config: {key} is null: {model_type}'s config class refuses a null {key}, or its "
                             "model fails on one (transformers raises on loading the config, or building the "
                             "model), so vkrope does too")
    if not isinstance(cfg.get("layer_types"), list):  # (the class derives the layer types from these)
        for key in rules.get("null_needs_layer_types") or ():
            if key in cfg and cfg[key] is None:
                raise ValueError(f"config: {key} is null and there is no layer_types list: {model_type}'s config "
                                 f"class derives the layer types from {key} where the file gives none, and raises on "
                                 "a null there (transformers fails to load this file), so vkrope does too; give "
                                 f"{key} or layer_types")


def check_partial_null(rope: dict, where: str, model_type: str, layer_type: str | None, kind: str) -> None:
    """A ValueError where the rope dict `rope` of one layer type (`layer_type`, None for a model of one RoPE)
    holds partial_rotary_factor null and rope type `kind` is not among those `partial_null_reads` measured
    reading it as no factor. `where` names the dict in the message."""
    if "partial_rotary_factor" not in rope or rope["partial_rotary_factor"] is not None:
        return
    reads = config_rules.rules_of(model_type).get("partial_null_reads") or {}
    if kind in reads.get("*" if layer_type is None else layer_type, []):
        return
    raise ValueError(f"{where}partial_rotary_factor is null: transformers {config_rules.table()['transformers']} fails "
                     f"on it with {model_type}'s rope type {kind!r} (its config class or rotary module raises), or was "
                     "not measured reading it as no factor; give a number")


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
    read = set(config_rules.table().get("read_keys", ())) if like else None
    # (a null the class takes beside the file's layer_types: the key only makes the layer types where none are given)
    beside = rules.get("null_beside_layer_types") or () if isinstance(cfg.get("layer_types"), list) else ()
    for refused, keys in strict.items():
        for key in (k for k in keys if k in cfg and (read is None or k in read)):
            kind = value_kind(cfg[key])
            if kind == "n" and key in beside:
                continue
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
    outer = config_rules.rules_of(model_type).get("outer_strict") or {}
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
                                 f"{config_rules.table()['transformers']} (its config class fails on it), so vkrope "
                                 "refuses it")
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
    rule = config_rules.rules_of(model_type).get("heads_divide")
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
    if not (config_rules.rules_of(model_type).get("layer_types") or {}).get("any"):
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
    rules = config_rules.rules_of(model_type)
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
    odd = [name for name in types if name not in config_rules.table()["layer_type_names"]]
    if odd and rule["names"]:
        raise ValueError(f"config: layer_types names {odd[0]!r}, which is none of transformers' layer types "
                         f"({model_type}'s config class raises on loading it), so vkrope refuses it")


def check_flags_length(cfg: dict, model_type: str, key: str) -> None:
    """A ValueError where `cfg[key]`, a list of per-layer flags (no_rope_layers), is longer than
    num_hidden_layers and the model type's config class raises on that (`nope_longer`: Llama 4's derives
    layer_types from it where the file gives none, and validates their count); transformers' model reads the
    first num_hidden_layers flags of a list its class takes."""
    rule = config_rules.rules_of(model_type).get("nope_longer")
    flags, n = cfg.get(key), cfg.get("num_hidden_layers")
    if not isinstance(flags, list) or isinstance(n, bool) or not isinstance(n, int) or len(flags) <= n:
        return
    given = isinstance(cfg.get("layer_types"), list)
    if rule is None or rule["with_layer_types" if given else "without_layer_types"]:
        raise ValueError(f"config: {key} has {len(flags)} entries for num_hidden_layers {n}: {model_type}'s "
                         f"config class {'raises on it' if rule else 'was not measured on it'}"
                         f"{'' if given else ' where the file gives no layer_types (it derives them from it)'}, "
                         "so vkrope refuses it")


def check_width_step(rotary: int, head_dim: int, model_type: str, layer_type: str | None) -> bool:
    """Whether the model type's config class wants every layer type's rotated width a multiple of its
    `width_step` (NeoMME's 4: its two position axes take alternate pairs; transformers raises on loading the
    config otherwise); a ValueError where `rotary` is not."""
    step = config_rules.rules_of(model_type).get("width_step")
    if step and rotary % step:
        of = f" of layer type {layer_type!r}" if layer_type else ""
        raise ValueError(f"config: the rotated width{of} is {rotary} (head_dim {head_dim} times its partial factor): "
                         f"{model_type}'s config class refuses widths that are not a multiple of {step} (transformers "
                         "raises on loading the config), so vkrope does too")
    return bool(step)


def check_mrope_sections(section: tuple[int, ...] | None, head_dim: int, model_type: str, where: str) -> None:
    """A ValueError where the model type's config class validates mrope_section (`mrope_sections`: Cosmos 3
    Edge's wants three sections summing to half its head_dim) and the config's `section` (`head_dim`, the
    width of the class's key) fails that; transformers raises on loading the config. (A rope dict without
    sections, on which the class raises too, is the rope type's `needs`.)"""
    rule = config_rules.rules_of(model_type).get("mrope_sections")
    # (rule["key"] is the model table's one head key, whose width `head_dim` is: the script measured the class
    # by widening that key; not three sections: ModelRope refuses those for every model)
    if rule is not None and section is not None and sum(section) != head_dim // 2:
        raise ValueError(f"{where}mrope_section {list(section)}: {model_type}'s config class refuses "
                         f"sections that are not three summing to half its {rule['key']} {head_dim} "
                         "(transformers raises on loading the config), so vkrope does too")

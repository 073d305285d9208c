"""One rope dict read as transformers' rope functions read it: its rope type, theta, parameters, lengths,
rotated width and pairs, and the checks its config class and model make of them (the second half of
`from_hf`; vkrope/models/hf.py)."""

from __future__ import annotations

import math
from typing import Any

from . import config_checks, config_rules
from .rope import key_int, key_number, brief
from .rope_types import GGUF_PARAMS, LIST_PARAMS, PARAMS, RULES, ZERO_IS_DEFAULT, read_by
from ..runtime.dtypes import is_int
from .hf_per_layer import for_layer

# keys a rope dict may hold that say nothing about the frequencies here
IGNORED = {"rope_type", "type", "rope_theta", "original_max_position_embeddings", "mrope_section",
            "mrope_interleaved", "max_position_embeddings"}
# longrope's per-length attention factors: read where the config class needs them (config_rules.needs: PhiMoE)
MSCALES = ("short_mscale", "long_mscale")
FILE_ROPE_TYPES = tuple(t for t, rule in RULES.items() if rule.in_files)  # (the types a file may name)


def rope_dict(cfg: dict, nested: dict | None, layer_type: str | None, e: dict) -> tuple[dict, str]:
    """(the rope dict to read, where it is, for messages)."""
    if nested is not None:
        if layer_type is None:
            raise ValueError(f"layer_type: this config has RoPE per layer type; pass one of {sorted(nested)} (or a "
                             "layer index, layer=)")
        if layer_type not in nested and layer_type in (cfg.get("layer_types") or ()):
            raise ValueError(f"config: layer_types names {layer_type!r}, whose layers apply RoPE, and vkrope's model "
                             f"table holds {cfg.get('model_type')}'s RoPE for {sorted(nested)} only (measured on its "
                             "default config, which has no such layers); refused rather than guessed")
        if layer_type not in nested:
            raise ValueError(f"layer_type must be one of {sorted(nested)} for this config; got {layer_type!r}")
        where = f"config: rope_parameters[{layer_type!r}]."
        return _absent_partial(cfg, dict(nested[layer_type]), e, where), where
    if layer_type is not None and layer_type not in (cfg.get("layer_types") or ()):
        raise ValueError(f"layer_type: this config has one RoPE for every layer; got layer_type={layer_type!r} "
                         "(pass None)")
    config_rules.check_rope_dicts(cfg)
    rope = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}  # (transformers: rope_scaling first)
    return dict(rope), "config: rope_scaling." if cfg.get("rope_scaling") else "config: rope_parameters."


def checked_kind(rope: dict, where: str, model_type: str, cfg: dict, layer_type: str | None,
                  e: dict) -> tuple[str, dict]:
    """The rope type the dict `rope` names (of layer type `layer_type`, None for a model of one RoPE), as the model
    reads it (config_checks.check_type), and the dict as its rotary module reads it: a null partial factor, where
    the module takes one (config_checks.check_partial_null), is no factor (on a layer type's dict: its fallback)."""
    kind = config_checks.check_type(_rope_kind(rope, where, model_type, layer_type is not None), model_type, where,
                                   rope, cfg)
    config_checks.check_partial_null(rope, where, model_type, layer_type, kind)
    if "partial_rotary_factor" in rope and rope["partial_rotary_factor"] is None:
        rope = {k: v for k, v in rope.items() if k != "partial_rotary_factor"}
        rope = rope if layer_type is None else _absent_partial(cfg, rope, e, where)
    return kind, rope


def _absent_partial(cfg: dict, rope: dict, e: dict, where: str) -> dict:
    """A layer type's dict lacking partial_rotary_factor, where the model's rotary module reads the type's factor
    from it with a fallback of its own (the table's `partial_absent`: MiMo-V2-Flash's 0.334, ZAYA's 1.0): that
    fallback for the default rope type, whose frequencies the module computes itself (the library's functions
    of the other types fall back to 1.0, as vkrope reads them). A top-level factor beside it: read where the
    config class merges it into every type's dict (the table's `partial_top`, Step 3.5's), else refused (the
    module takes one only where transformers' standardization has run for another layer type first: an order
    of its own code). A null top-level factor is none (transformers' standardization skips it); a null in the
    dict is the module's (config_checks.check_partial_null)."""
    if "partial_absent" not in e or "partial_rotary_factor" in rope:
        return rope
    top = next((k for k in config_rules.PARTIAL_KEYS if cfg.get(k) is not None), None)
    if top == "partial_rotary_factor" and e.get("partial_top") == "merged":  # (Step 3.5's class merges it)
        return {**rope, "partial_rotary_factor": cfg[top]}
    if top is not None:
        raise ValueError(f"config: {top} at the top level, and {where.removeprefix('config: ')}partial_rotary_factor "
                         "is missing: this model's "
                         f"rotary module reads a layer type's factor from its dict (else {e['partial_absent']}), and "
                         "a top-level one only where another layer type's RoPE was set up first; give it in the "
                         "layer type's dict")
    # (a layer type's dict: the rules measure early names only of classes with one RoPE)
    return {**rope, "partial_rotary_factor": e["partial_absent"]} if config_rules.named_type(rope) == "default" \
        else rope


def _same_type(name: Any, renamed: dict[str, str]) -> Any:
    """The rope type `name` stands for when a file gives both `type` and
    `rope_type`: the class's own rename (Phi-3's "yarn" is its longrope),
    else an early name's type ("su" is longrope), else the name."""
    if not isinstance(name, str):
        return name
    return renamed.get(name) or config_rules.early_type(name) or name


def _rope_kind(rope: dict, where: str, model_type: str, per_type: bool) -> str:
    renamed = config_rules.renames(model_type)  # (transformers' early names: Phi-3's "su", Qwen2-VL's "mrope")
    if "rope_type" in rope and rope.get("type") is not None and rope["type"] != rope["rope_type"] \
            and _same_type(rope["type"], renamed) != _same_type(rope["rope_type"], renamed):
        merged = " (its config class puts a file's rope_scaling into each layer type's dict, beside the layer " \
            "type's own rope_type)" if per_type else ""  # (Gemma 3n's: the file has neither key there)
        raise ValueError(f"{where}type ({rope['type']!r}) and rope_type ({rope['rope_type']!r}) contradict each "
                         f"other{merged}: transformers reads rope_type; remove the one the model does not run")
    key = "rope_type" if "rope_type" in rope else "type"
    kind = config_rules.read_type(rope, model_type)  # (a str renamed; any other value as given)
    if not isinstance(kind, str):
        raise ValueError(f"{where}{key} must be a string; got {brief(kind)}")
    means = config_rules.early_type(kind)
    if means:  # (this class keeps the name, and its rotary module has no function of that name)
        raise ValueError(f"{where}{key} {kind!r}: {model_type}'s config class keeps this name, and transformers "
                         f"fails on it (ROPE_INIT_FUNCTIONS has no {kind!r}; only the classes of "
                         f"{_readers(kind)} read it, as {means}): write {key} "
                         f"{means!r} if that is what the model runs")
    if kind not in FILE_ROPE_TYPES:
        raise ValueError(f"{where}{key} {kind!r} is not supported; vkrope reads {list(FILE_ROPE_TYPES)}")
    return kind


def _readers(name: str) -> str:
    """The model types whose classes rename early name `name`, each said where it does (in rope_scaling only:
    Sarvam-MLA's deepseek_yarn), for a message."""
    return ", ".join(t + (" (in rope_scaling)" if name in config_rules.rules_of(t).get("scaling_renames", {}) else "")
                     for t in config_rules.early_names()[name])


def _theta(cfg: dict, rope: dict, where: str) -> float:
    """The rope dict's theta (the class moves a top-level rope_theta into it: a bad one is named as the file
    holds it), else the config's, else GPT-NeoX's rotary_emb_base, else 10000."""
    if "rope_theta" in rope:
        moved = "rope_theta" in cfg and cfg["rope_theta"] is rope["rope_theta"]
        return key_number(rope, "rope_theta", "config: " if moved else where)
    if "rope_theta" in cfg:
        return key_number(cfg, "rope_theta", "config: ")
    if "rotary_emb_base" in cfg:  # GPT-NeoX
        return key_number(cfg, "rotary_emb_base", "config: ")
    return 10000.0


def layer_theta(cfg: dict, rope: dict, where: str, e: dict) -> float:
    """The theta of a rope dict, where the table's `layer_keys` (lists of one
    value per layer that decide RoPE per layer in the whole model: Granite
    SWA's layer_rope_theta) agree with it throughout and give every layer one (its model indexes them by
    layer: a shorter list fails there); else a ValueError."""
    theta = _theta(cfg, rope, where)
    for key in e.get("layer_keys", []):
        values, layers = cfg.get(key), cfg.get("num_hidden_layers")
        if isinstance(values, list) and is_int(layers) and len(values) < int(layers or 0):
            raise ValueError(f"config: {key} has {len(values)} values for {layers} layers (num_hidden_layers): this "
                             "model reads one per layer, and transformers fails on a shorter list")
        if values is not None and (not isinstance(values, list) or any(v != theta for v in values)):
            raise ValueError(f"config: {key} {brief(values)}: this model decides RoPE per layer by it (a layer's "
                             f"own theta, or none at 0), which vkrope does not read; only {theta:g} throughout "
                             "(the theta it reads) is taken")
    return theta


def as_model_reads(e: dict, model_type: str, layer_type: str | None, kind: str, theta: float, params: dict,
                    ignored: list[str]) -> tuple[str, float]:
    """(rope type, theta) as the model's code uses them (`_fixed_reads`), and
    `params` less the keys that rope type does not read (another type's key:
    as transformers' rope functions, unread), moved to `ignored` (before the
    table's fixed values are compared, as its script read them, and after).
    The table's `type_by_key` first: a rope type the model's code turns into
    another where a rope-dict key is given and not zero (HunYuan's "dynamic"
    with `alpha`: its fixed-base "ntk_alpha")."""
    for key, turns in e.get("type_by_key", {}).items():
        if params.get(key) and kind in turns:
            kind = turns[kind]
    _unread(kind, params, ignored)
    kind, theta = _fixed_reads(e, model_type, layer_type, kind, theta, params, ignored)
    _unread(kind, params, ignored)
    return kind, theta


def _unread(kind: str, params: dict, ignored: list[str]) -> None:
    """Move the keys rope type `kind` does not read from `params` to `ignored`."""
    for key in [k for k in params if k not in read_by(kind)]:
        del params[key]
        ignored.append(key)


def _fixed_reads(e: dict, model_type: str, layer_type: str | None, kind: str, theta: float, params: dict,
                 ignored: list[str]) -> tuple[str, float]:
    """(rope type, theta) as the model's code uses them. The table's `fixed`
    holds, per rope layer type, what the model uses on its class's default
    config; its `ignores` are keys its rotary module does not read (GPT-J's
    and CodeGen's fixed base 10000, no scaling): the fixed value stands, the
    key is listed in `ignored` and `params` emptied; its `refuses` are keys
    the table found read otherwise than vkrope reads them, or could not
    probe: only the fixed value is taken."""
    if not e.get("ignores") and not e.get("refuses"):
        return kind, theta
    fixed = e["fixed"].get(layer_type if layer_type in e["fixed"] else "*")
    given = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items() if k != "partial_rotary_factor"}
    changed = {"rope_theta": (theta != fixed["rope_theta"], f"rope_theta {theta:g}", fixed["rope_theta"]),
               "rope_type": ((kind, given) != (fixed["rope_type"], fixed["params"]), f"rope type {kind!r} {given}",
                             f"{fixed['rope_type']!r} {fixed['params']}")}
    for key, why in e.get("refuses", {}).items():
        if changed[key][0]:
            raise ValueError(f"config: {changed[key][1]}: the only {key} vkrope takes for {model_type!r} is its "
                             f"class's ({changed[key][2]}): for another, {why}")
    for key in e.get("ignores", []):
        if changed[key][0]:
            theta = fixed["rope_theta"] if key == "rope_theta" else theta
            kind = fixed["rope_type"] if key == "rope_type" else kind
            drop = list(given) if key == "rope_type" else []
            for name in drop:
                del params[name]
            ignored.extend([key, *drop])
    return kind, theta


def rotary_rule(e: dict, layer_type: str | None, kind: str, rule: str) -> str:
    """The table's rotary rule for rope type `kind`. The model table probes a partial factor only where the
    class's own rope type is "default" (hf_model_table.reads_partial); where it is another, "partial" was
    measured only if the class's own factor is one (Gemma 4's proportional 0.25), and then says nothing of
    "default", whose frequencies the modeling file computes itself: unprobed there. Apertus', GPT-OSS's,
    Ministral 3's attention fails on a partial factor their "partial" never ran with."""
    dr = e.get("defaults", {}).get("rope_parameters") or {}
    own = dr.get(layer_type) if config_rules.per_layer_type(dr) else dr
    own = own if isinstance(own, dict) else {}
    probed = config_rules.named_type(own)  # (the class's own dict: its names already its types)
    factor = own.get("partial_rotary_factor", e.get("defaults", {}).get("partial_rotary_factor", 1.0))
    if rule == "partial" and probed != "default" and (factor == 1.0 or kind == "default"):
        return "partial_unprobed"
    return rule


def read_rotary_dim(cfg: dict, rope: dict, kind: str, head_dim: int, rule: str, params: dict[str, Any],
                ignored: list[str]) -> int:
    """_rotated's rotary dim, its partial factor set in `params` (none where 1.0: specs with one set of
    frequencies compare equal); an odd one refused naming what it came from, the head width or the partial
    factor (ModelRope would name rotary_dim, which such a config does not hold; a key of the rotated channels,
    GPT-J's rotary_dim, it names). A factor the model's code does not read (Llama's default frequencies span
    the head whatever the factor) is added to `ignored` under the key that gave it."""
    rotary, partial = _rotated(cfg, rope, kind, head_dim, rule)
    params.pop("partial_rotary_factor", None)
    if partial != 1.0:
        params["partial_rotary_factor"] = float(partial)
    if rule == "whole_default" and kind == "default":
        given = "partial_rotary_factor" if rope.get("partial_rotary_factor") is not None else \
            next((k for k in config_rules.PARTIAL_KEYS if cfg.get(k) is not None), None)
        if given is not None and given not in ignored:
            ignored.append(given)
    if rotary % 2 and rotary == head_dim:
        raise ValueError(f"config: the head width {head_dim} (head_dim, else hidden_size // num_attention_heads) "
                         "must be even: this model rotates the whole head, in pairs")
    if rotary % 2 and rule == "partial":
        raise ValueError(f"config: the rotary dim int(head_dim {head_dim} x the partial factor {partial}: "
                         f"partial_rotary_factor, or rotary_pct) = {rotary} is odd: "
                         f"transformers' rotary module then makes {(rotary + 1) // 2} frequencies of exponents "
                         f"2i / {rotary} (cos / sin {rotary + 1} wide), which vkrope does not compute (the widths it "
                         "rotates are even, each over its own exponents); refused")
    return rotary


def _rotated(cfg: dict, rope: dict, kind: str, head_dim: int, rule: str) -> tuple[int, float]:
    """(rotary dim, partial_rotary_factor) by the table's rule: "partial"
    (int(head_dim * partial_rotary_factor)), "whole" (the head: the config
    class has folded the factor into the head key already, MLA),
    "whole_default" (the head for the default rope type, whose frequencies
    the model computes itself, Llama's; a factor with another type refused:
    its attention was measured only on whole heads),
    "partial_unprobed" (the head, and no factor: the model's code did not
    run with one, or ran it otherwise than vkrope reads it), or a key
    holding the rotated channels (GPT-J's rotary_dim)."""
    partial = rope.get("partial_rotary_factor", next((cfg[k] for k in config_rules.PARTIAL_KEYS if k in cfg), None))
    if partial is None:
        partial = 1.0
    elif isinstance(partial, bool) or not isinstance(partial, (int, float)) or not 0 < partial <= 1:
        raise ValueError(f"config: partial_rotary_factor must be a number in (0, 1]; got {brief(partial)}")
    if RULES[kind].whole_head:  # (proportional: the factor says how many of the head's pairs turn)
        return head_dim, partial
    if rule == "whole" or (rule == "whole_default" and kind == "default"):
        return head_dim, 1.0  # ("whole_default": the model's own default frequencies span the head; the library's
        # functions of the other rope types read the factor, as transformers' ROPE_INIT_FUNCTIONS do)
    if rule == "whole_default" and partial != 1.0:
        raise ValueError(f"config: partial_rotary_factor {partial} with rope type {kind!r}: this model type's own "
                         "default frequencies span the whole head, and its attention was not measured taking the "
                         "narrower cos / sin another rope type makes of the factor (Llama's fails on them), so "
                         "how it would rotate is unknown")
    if rule == "whole_default":
        return head_dim, 1.0
    if rule == "partial_unprobed" and partial != 1.0:  # (whatever the rope type: the attention rotated whole heads)
        raise ValueError(f"config: partial_rotary_factor {partial}: this model type's code did not run with a "
                         f"partial factor and rope type {kind!r} when vkrope's model table was made, so how it "
                         "would read one is unknown")
    if rule == "partial_unprobed":
        return head_dim, 1.0
    if rule != "partial":
        if cfg.get(rule) is None:
            raise ValueError(f"config: {rule} (the rotated channels) is missing")
        return key_int(cfg, rule, "config: "), 1.0
    return int(head_dim * partial), partial


def read_params(rope: dict, where: str, model_type: str, e: dict, per_type: bool,
            kind: str) -> tuple[dict[str, Any], list[str]]:
    """The rope type's parameters of a rope dict, checked, and the keys it does not read
    (`llama_4_scaling_beta` is read where the model's code reads it, config_rules.attention_reads: Ministral
    3's and Mistral 4's attention scales q by it; elsewhere nothing reads it). `per_type`: the dict is one layer type's,
    whose `truncate` transformers' yarn never sees (it reads the outer rope_parameters, keyed by layer
    type: it truncates)."""
    params: dict[str, Any] = {}
    ignored: list[str] = []
    scales_q = "llama_4_scaling_beta" in config_rules.attention_reads(model_type)
    # (keys the model's code reads that vkrope does not: ignoring one is a guess; but beside a rope type the
    # table measured the code turning into one that reads it: HunYuan's dynamic with alpha, ntk_alpha)
    own = [k for k in e.get("rope_reads", ()) if kind not in e.get("type_by_key", {}).get(k, {})]
    turning = [k for k in e.get("type_by_key", {}) if k not in own]
    for key, value in rope.items():
        if key in IGNORED:
            continue
        if key in turning and isinstance(value, (int, float)) and not value:
            ignored.append(key)  # (a key that turns the type, given 0 or false: the code tests its truth)
            continue
        if key in own and value is not None:  # (a null: .get gives None, no code reads a value)
            raise ValueError(f"{where}{key} {brief(value)}: the code of {model_type!r} reads rope_parameters[{key!r}] "
                             "and vkrope does not read it; refused rather than read without it")
        if key not in PARAMS or key in GGUF_PARAMS \
                or (key in MSCALES and key not in config_rules.needs(model_type, "longrope")) \
                or (key == "llama_4_scaling_beta" and not scales_q) or (key == "truncate" and per_type):
            ignored.append(key)  # as transformers: a key its rope type does not read is not an error
            continue
        if key == "truncate" and value is None:
            value = False  # (transformers' yarn tests `rope_parameters.get("truncate", True)`: a null is false)
        elif value is None or (key in ZERO_IS_DEFAULT and value == 0):
            continue  # (transformers reads these with `or`: 0 means its default)
        if key in LIST_PARAMS:
            if not isinstance(value, (list, tuple)) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
                    for v in value):
                raise ValueError(f"{where}{key} must be a list of positive numbers; got {brief(value)}")
            value = tuple(float(v) for v in value)
        elif key == "truncate":  # (transformers' yarn tests its truth: 0 does not truncate; a str or a list is
            # refused rather than read by a truth nobody meant)
            if not isinstance(value, (bool, int, float)):
                raise ValueError(f"{where}truncate must be true or false (or a number, read by its truth as "
                                 f"transformers does); got {brief(value)}")
            value = bool(value)
        else:
            value = key_number(rope, key, where)
        params[key] = value
    return params, ignored


def _check_attention_reads(rope: dict, where: str, model_type: str, filled: int | None) -> None:
    """A ValueError where the model type's code reads a rope dict key outside its rotary module whatever the
    rope type (config_rules.attention_reads: Ministral 3's attention scales q by llama_4_scaling_beta over the
    original length) and the rope dict, as its class makes it, lacks it (transformers' model fails on None).
    `filled`: the original length transformers' standardization puts into the dict for the rope types that
    read one (llama3, yarn, longrope: the top level's, else max_position_embeddings), None for the others."""
    for key in config_rules.attention_reads(model_type):
        value = rope.get(key)
        if value is None and key == "original_max_position_embeddings":
            value = filled  # (default, linear, dynamic: a top-level length stays out of the dict)
        if value is None:
            raise ValueError(f"{where}{key} is missing: {model_type}'s attention reads it from the rope dict "
                             "whatever the rope type (transformers' model fails without it), so vkrope refuses it")


def needs_orig(kind: str) -> bool:
    """Whether rope type `kind` reads original_max_position_embeddings."""
    return kind in RULES and RULES[kind].needs_orig


def read_lengths(cfg: dict, rope: dict, where: str, kind: str, params: dict, model_type: str,
             ignored: list[str]) -> tuple[int | None, int | None]:
    """(max_position_embeddings, original_max_position_embeddings), checked against what the rope type needs
    and the model's code reads (_check_attention_reads); a top-level original length (Phi-3 keeps it there)
    is read where the model type's model reads it. An original length nothing reads (beside a rope type that
    reads none, `needs_orig` false: default, linear, dynamic, proportional, whose functions read
    max_position_embeddings; and an attention that does not read it) is None, the key added to `ignored`."""
    rule = config_rules.original_length(model_type)[
        "both" if "original_max_position_embeddings" in rope else "top_only"]
    if "original_max_position_embeddings" in cfg and needs_orig(kind) \
            and rule not in ("top", "dict", "max_position_embeddings"):
        raise ValueError(f"config: original_max_position_embeddings: {model_type}'s model reads it in a way vkrope "
                         f"does not know ({rule!r}, measured by the rules script); refused rather than guessed")
    orig_src = cfg if "original_max_position_embeddings" in cfg and rule in ("top", "unknown") else rope
    if orig_src is cfg and cfg["original_max_position_embeddings"] is None and needs_orig(kind):
        # (transformers copies the top level's over the rope dict's for these types, null too, and then fails)
        raise ValueError(f"config: original_max_position_embeddings is null, which rope_type {kind!r} cannot take "
                         "(transformers takes the top level's over the rope dict's); remove it or give a number")
    orig = key_int(orig_src, "original_max_position_embeddings", "config: ") \
        if orig_src.get("original_max_position_embeddings") is not None else None
    mpe = key_int(cfg, "max_position_embeddings", "config: ") if cfg.get("max_position_embeddings") is not None \
        else None
    of_type = RULES[kind]
    if mpe is None and of_type.compares_lengths and "max_position_embeddings" in cfg:
        # (null through the key its class stores it by, Bailing hybrid's model_max_length: the class's own null
        # check passed it)
        raise ValueError(f"config: max_position_embeddings (or the key {model_type}'s class stores it by) is null, "
                         f"which transformers' validation of rope_type {kind!r} compares with the original length "
                         "and fails on; refused")
    if orig is None and needs_orig(kind):
        orig = mpe  # transformers' default
        if orig is None:
            raise ValueError(f"{where}original_max_position_embeddings (or max_position_embeddings) is "
                             f"needed by rope_type {kind!r}")
    if of_type.factor == "key" and "factor" not in rope:
        raise ValueError(f"{where}factor is needed by rope_type {kind!r} (null derives it from max_position_embeddings "
                         "/ original_max_position_embeddings, as transformers)")
    if of_type.factor == "key" and "factor" not in params:
        if mpe is None:
            raise ValueError(f"{where}factor is null and no max_position_embeddings derives it")
    elif of_type.factor == "needed" and "factor" not in params:
        raise ValueError(f"{where}factor is needed by rope_type {kind!r}")
    _check_attention_reads(rope, where, model_type, orig if needs_orig(kind) else None)
    if orig is not None and not needs_orig(kind) \
            and "original_max_position_embeddings" not in config_rules.attention_reads(model_type):
        ignored.append("original_max_position_embeddings")
        orig = None
    return mpe, orig


def check_null_original(rope: dict, where: str, kind: str, model_type: str) -> None:
    """A ValueError where a layer type's rope dict gives original_max_position_embeddings as null beside a rope
    type that reads it: the config class keeps the null there, and the rope function fails on it (transformers
    5.25's _compute_longrope_parameters divides by it; an adversary's differential fuzz). The rules measure
    a null in a model's one rope dict (config_checks.check_type's `not_null`), not in a layer type's."""
    if needs_orig(kind) and "original_max_position_embeddings" in rope \
            and rope["original_max_position_embeddings"] is None:
        raise ValueError(f"{where}original_max_position_embeddings is null, which rope_type {kind!r} cannot take: "
                         f"{model_type}'s config class keeps the null in a layer type's dict, and its rotary "
                         "function divides by it (transformers raises); remove it or give a number")


def check_siblings(cfg: dict, nested: dict | None, layer_type: str | None, model_type: str, e: dict,
                    text: dict) -> None:
    """A ValueError where another layer type's rope dict of a config with RoPE per layer type is one on which
    transformers fails (a rope type its class refuses or that lacks a key it needs, a null where it needs a
    value, a null partial factor its module multiplies by, a theta that is no number): its config class and
    rotary module set up every layer type's RoPE (Gemma 3's validate_rope, its module's __init__), so the model
    fails whichever layer is read (an adversary's fuzz: a null rope_type or theta in Gemma 3's sliding dict, its
    full layers read); so does a head width below 1 of another type's layers (Gemma 4's head_dim -1 beside
    its full layers' global_head_dim; `text`: the config before the asked layer's overrides). vkrope's own
    refusals of a dict transformers runs are left to that layer's reading."""
    for other in sorted(k for k in nested or {} if k != layer_type):
        rope, where = rope_dict(cfg, nested or {}, other, e)
        try:
            kind = config_rules.named_type(rope)  # (per layer type: no early names measured, as above)
            if not isinstance(kind, str):
                raise ValueError(f"{where}rope_type must be a string; got {brief(kind)}")
            kind = config_checks.check_type(kind, model_type, where, rope, cfg)
            config_checks.check_partial_null(rope, where, model_type, other, kind)
            check_null_original(rope, where, kind, model_type)
            _theta(cfg, rope, where)
            seen, head_key = for_layer(text, e, None, other), (e["by_layer_type"].get(other) or {}).get("head_dim")
            if head_key and is_int(seen.get(head_key)):
                key_int(seen, head_key, "config: ")
        except ValueError as exc:
            raise ValueError(f"{exc} (of layer type {other!r}: transformers sets up every layer type's RoPE, so "
                             f"the model fails whichever layer is read, {layer_type!r} too)") from None


def pairs_interleaved(cfg: dict, e: dict) -> bool:
    """Pairs (2i, 2i + 1) as the model's attention rotates them (the table's
    `pairs`), or by `rope_interleave` where the config class has that key
    (MLA models: DeepSeek-V3, Kimi-K2, Youtu, ... default it to true)."""
    if "rope_interleave" in e.get("defaults", {}):
        pairs = cfg.get("rope_interleave")
        pairs = False if pairs is None else pairs  # (a null the class keeps: the attention tests it for truth)
        if not isinstance(pairs, bool):
            raise ValueError(f"config: rope_interleave must be true or false; got {brief(pairs)}")
        return pairs
    return e["pairs"] != "rotate_half"

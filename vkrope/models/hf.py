"""A model's RoPE from its Hugging Face config.json (`from_hf`, `layers`,
`layer_types`, `parts`): how the model applies it comes from the model table
(vkrope/models/model_table.py), the rest as transformers 5 reads it; a model
transformers runs only with remote code, as llama.cpp's converter reads it
(gguf_convert.py)."""

from __future__ import annotations

import collections.abc
import contextvars
import dataclasses
import functools
import json
import math
import os
from typing import Any, overload

from ..errors import NoRopeLayers
from ..files import read_json
from . import config_rules, gguf_convert, model_table
from .rope import MROPE_LAYOUTS, ModelRope, key_int, key_number, brief, check_angle, typed
from .rope_types import GGUF_PARAMS, PARAMS, RULES, read_by
from ..runtime.dtypes import is_int

# keys a rope dict may hold that say nothing about the frequencies here
_IGNORED = {"rope_type", "type", "rope_theta", "original_max_position_embeddings", "mrope_section",
            "mrope_interleaved", "max_position_embeddings"}
# longrope's per-length attention factors: read where the config class needs them (config_rules.needs: PhiMoE)
_MSCALES = ("short_mscale", "long_mscale")
FILE_ROPE_TYPES = tuple(t for t, rule in RULES.items() if rule.in_files)  # (the types a file may name)


def _load(config: Any) -> dict:
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        if not os.path.lexists(path):
            raise ValueError(f"config: no such file {path!r}{hub_id_hint(os.fspath(config))}")
        head, config = read_json(path, "config", "a config.json")  # (a regular file, read once, of bounded size)
        if head == b"GGUF":
            raise ValueError(f"config: {path!r} is a GGUF file, not a config.json: read it with vkrope.from_gguf")
    elif hasattr(config, "to_dict") and callable(config.to_dict):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json's contents), a path to a config.json, or an object "
                        f"with to_dict(); got {type(config).__name__}")
    return config


def hub_id_hint(given: str, instead: str = "the path of the model's config.json, or its contents as a dict") -> str:
    """The hint of a missing config path that reads like a Hugging Face Hub
    id ('meta-llama/Llama-3.1-8B': one '/', not a local path), saying to
    pass `instead`; "" for another path."""
    if given.count("/") != 1 or given.startswith((".", "/", "~")) or given.endswith(".json") or os.path.exists(given):
        return ""
    return f" (it looks like a Hugging Face Hub id: vkrope does not download from the Hub; pass {instead})"


def _text_config(cfg: dict, e: dict, like: str | None = None) -> dict:
    """The language model's config inside `cfg` (the table's `text_config`
    path: text_config, thinker_config.text_config, ...; a config with no
    such part is its own), with the outer config's keys where its class
    moves them there (config_rules.outer_keys: Qwen2-VL's flat Hub files),
    the config class's attribute aliases (GPT-J's n_embd) and its defaults
    where the file is silent (the table's, from transformers), the keys a
    composite class fills into its text_config (config_rules.text_fill:
    Voxtral's); RoPE per layer type as the class converts the file's keys
    (config_rules); the keys transformers reads and vkrope does not refused
    (check_unread), those the class ignores dropped (drop_ignored)."""
    model_type = _type_of(cfg, like)
    inner: dict = cfg
    found = True  # (the file has the language model's part where the table says)
    for depth, key in enumerate(e.get("text_config", [])):
        alias = config_rules.text_alias(inner, model_type, key) if depth == 0 else None  # (as the class reads it)
        part = inner.get(alias or key)
        if not isinstance(part, dict):  # a flat Hub file (or part): the text keys there, if the classes move them
            found = False
            if like is None:
                inner = _stopped_at(cfg, inner, e, depth)
            break  # (like: the caller's keys, at the top)
        inner = part
    if found and inner is not cfg:
        fill = config_rules.text_fill(model_type)  # (Voxtral's class fills these in, as measured)
        inner = {**fill, **inner}
        missing = [] if fill else [k for k in config_rules.preset(model_type, True) if k not in inner]
        if missing:
            raise ValueError(f"config: {'.'.join(e['text_config'])} lacks {', '.join(missing)}, which "
                             f"{model_type}'s config class presets otherwise than its text class: give "
                             "them in it (as transformers saves the config)")
    if like is not None and inner is cfg and isinstance(cfg.get("text_config"), dict):
        inner = cfg["text_config"]  # (read as another type: the language model's part is still text_config)
    merged = dict(inner)
    if inner is not cfg:
        keys = [k for k in ("rope_scaling", "rope_parameters", "rope_theta", "max_position_embeddings")
                if k not in merged and k in cfg]
        if found and keys and _outer_keys(cfg, like):
            merged.update({k: cfg[k] for k in keys})
        if "model_type" in cfg and "model_type" not in merged:
            merged["model_type"] = cfg["model_type"]
    config_rules.rename_scaling(merged, model_type)  # (first: the class converts it before anything reads it)
    defaults = e.get("defaults", {})
    dr = defaults.get("rope_parameters")
    config_rules.check_shape(merged, model_type, sorted(dr) if config_rules.per_layer_type(dr) else None)
    config_rules.check_nulls(merged, model_type, defaults)
    config_rules.check_kinds(merged, model_type, defaults, like is not None and cfg.get("model_type") != like,
                             e.get("aliases", {}))
    config_rules.check_unread(merged, model_type, defaults.get("num_hidden_layers"))
    _check_file_keys(merged, e, model_type, like is None or cfg.get("model_type") == like)
    config_rules.check_layer_types_given(merged, model_type, e.get("aliases", {}))  # (as the file names it)
    config_rules.drop_ignored(merged, model_type)
    seen_length = _aliases(merged, e)
    config_rules.check_absent(merged, model_type)
    _rename_layer_types(merged, model_type)  # (first, as every class does on load: the rules below read
    # the types the class sees)
    config_rules.check_layer_types(merged, model_type, defaults.get("num_hidden_layers"))
    _check_width(merged, e, model_type)
    if config_rules.per_layer_type(dr):  # the class keeps RoPE per layer type (Gemma 3, Olmo 3): its conversion
        # of the file's keys
        merged["rope_parameters"] = config_rules.per_type_rope(merged, dr, model_type)
        merged.pop("rope_scaling", None)
    head_dim_given = merged.get("head_dim") is not None  # (the file's, not the class's default)
    for key, value in defaults.items():
        if key not in ("rope_parameters", "rope_theta") and key not in merged:  # (an explicit null stays null)
            merged[key] = value
    config_rules.check_heads_divide(merged, model_type, head_dim_given)
    _check_switches(merged, e, model_type)
    if (e.get("nope") or {}).get("kind") == "flags":
        config_rules.check_flags_length(merged, model_type, e["nope"]["key"])
    if not config_rules.per_layer_type(dr):
        rope = config_rules.one_rope(merged, model_type)
        if rope is None:
            _class_rope(merged, defaults, config_rules.rules_of(model_type).get("keys", []))
        else:  # (the class's own conversion, under the key the file gave: messages name it)
            key = "rope_scaling" if merged.get("rope_scaling") else "rope_parameters"
            merged.pop("rope_scaling", None)
            merged[key] = rope
    _fill_original(merged, seen_length, model_type)
    return merged


def _aliases(merged: dict, e: dict) -> int | None:
    """Both names of each pair of the config class's attribute_map given the file's value (GPT-J's n_embd is
    hidden_size): the one transformers sets last wins, null too (a file's key that is no field of the class,
    set after the fields: GPT-J's hidden_size, JetMoe's head_dim, Bailing hybrid's model_max_length; the
    table's `alias_fields` names the fields). Returns the max_position_embeddings transformers' RoPE
    standardization saw where a file's later name overrides it (Bailing hybrid's model_max_length: the
    field's value, the file's or the class default), else None."""
    fields = e.get("alias_fields", [])
    seen = None
    for key, stored in e.get("aliases", {}).items():
        late, early = (stored, key) if key in fields else (key, stored)
        if key == "max_position_embeddings" and late == stored and stored in merged:
            seen = merged[key] if key in merged else e.get("defaults", {}).get(key)
        if late in merged:
            merged[early] = merged[late]
        if merged.get(late) is None and merged.get(early) is not None:
            merged[late] = merged[early]
    return seen


def _fill_original(merged: dict, seen_length: int | None, model_type: str) -> None:
    """The original length transformers' RoPE standardization puts into a rope dict without one where its rope
    type reads one (llama3, yarn, longrope), taken where the class's max_position_embeddings then differed
    from the file's final one (_aliases: Bailing hybrid's model_max_length; elsewhere _lengths fills the
    same max_position_embeddings)."""
    key = "rope_scaling" if merged.get("rope_scaling") else "rope_parameters"
    rope = merged.get(key)
    if seen_length is None or not isinstance(rope, dict) or config_rules.per_layer_type(rope):
        return
    if _needs_orig(str(config_rules.read_type(rope, model_type))):
        merged[key] = {"original_max_position_embeddings": seen_length, **rope}


def _check_file_keys(cfg: dict, e: dict, model_type: str, own: bool) -> None:
    """A ValueError where the file's text config `cfg` gives a key its config class derives (`own`: read as its
    own type, whose class loads it; the table's `readonly_keys`: a property with no setter, Falcon's head_dim
    and rotary; transformers' from_dict raises on it, AttributeError), or a hidden_size or num_attention_heads
    that is an integer below 1 or past int64, read or not for the head width (beside a head_dim): a model of no
    heads, or none wide, is no model (Cohere 2's class divides by the heads; most fail to build on -1)."""
    given = [k for k in e.get("readonly_keys", []) if k in cfg] if own else []
    if given:
        raise ValueError(f"config: {', '.join(given)}: {model_type}'s config class derives it (a property with no "
                         "setter: transformers raises loading a file that gives it, AttributeError); remove it")
    for key in ("hidden_size", "num_attention_heads"):
        if is_int(cfg.get(key)):
            key_int(cfg, key, "config: ")


def _check_width(cfg: dict, e: dict, model_type: str) -> None:
    """A ValueError where the model type's attention rotates a width of its own key (config_rules.rotary_width:
    DeepSeek's qk_rope_head_dim) and transformers' rotary module makes cos / sin of another width of the file's
    keys (its head_dim times the partial factor: a head_dim of another width, Mistral 4's rope_scaling that
    drops its class's factor), on which transformers' model fails."""
    rule = config_rules.rules_of(model_type).get("width")
    if rule is None:
        return
    if "why" in rule:
        raise ValueError(f"config: how {model_type}'s rotary module and attention agree on the rotated width is "
                         f"not in vkrope's rules table ({rule['why'][:200]}); refused rather than guessed")
    scaling = cfg.get("rope_scaling") if isinstance(cfg.get("rope_scaling"), dict) else None
    rope = scaling or cfg.get("rope_parameters")
    if not isinstance(rope, dict):
        rope = (config_rules.rules_of(model_type).get("one") or {}).get("preset") or e["defaults"].get(
            "rope_parameters") or {}
    kind = config_rules.read_type(rope, model_type)
    if isinstance(kind, str) and kind in RULES and RULES[kind].whole_head and rule["ratio"] \
            and "partial_rotary_factor" not in rope:  # (Mistral 4: its class derives it from the widths)
        raise ValueError(f"config: rope type {kind!r} on {model_type}: which of the head's pairs turn is its partial "
                         f"factor, which {model_type}'s config class derives from {rule['key']} and the head it "
                         "sums (vkrope reads the class's factor as measured on its defaults only); give "
                         "partial_rotary_factor in the rope dict")
    if config_rules.rotary_width(cfg, rule, kind) is None:
        raise ValueError(f"config: {rule['key']}, head_dim and the partial factor: {model_type}'s attention "
                         f"rotates {rule['key']} channels, and transformers' rotary module makes cos / sin of "
                         "another width of these keys (its head_dim times the partial factor, as its config class "
                         "builds them), on which its model fails; refused")


def _rename_layer_types(cfg: dict, model_type: str) -> None:
    """layer_types with the legacy names every config class renames on load (transformers'
    remap_legacy_layer_types: "attention" is full_attention, "mamba" linear_attention; the rules table
    holds its map), and the last layer's type where the class forces it (Gemma 4's full_attention)."""
    names = cfg.get("layer_types")
    if isinstance(names, list):
        odd = next((t for t in names if not isinstance(t, str)), None)
        if odd is not None:  # (the classes' strict field: a list of names)
            raise ValueError(f"config: layer_types must be a list of layer type names; it holds {brief(odd)}")
        remap = config_rules.table()["legacy_layer_types"]
        cfg["layer_types"] = [remap.get(t, t) for t in names]
        last = config_rules.rules_of(model_type).get("last_layer_type")
        if last is not None and cfg["layer_types"]:
            cfg["layer_types"][-1] = last


def _check_switches(cfg: dict, e: dict, model_type: str) -> None:
    """A ValueError where the config sets a true / false key the model table
    found making the model rotate otherwise than vkrope reads (one that
    switches RoPE off, Falcon's alibi, is model_table.switched_off's: no
    layer rotates then)."""
    for key, switch in e.get("switches", {}).items():
        if switch["then"] == "refused" and model_table.switch_set(cfg, key, switch):
            raise ValueError(f"config: {key} {str(switch['value']).lower()}: {model_type!r} rotates otherwise then "
                             "than vkrope reads it, as the model table found running transformers' code")


def _class_rope(merged: dict, defaults: dict, keys: list[str]) -> None:
    """For a class whose conversion could not be measured (config_rules.one_rope: GPT-J, CodeGen, Cosmos 3
    Edge; the shapes its class fails on or reads otherwise are refused before): the class's RoPE where the
    file says none, its theta where the file gives none (an explicit null stays, and is refused). `keys`: the
    theta keys the class's source names (a GPT-NeoX rotary_emb_base in a Cosmos 3 Edge file is no theta: the
    class's RoPE)."""
    dr = defaults.get("rope_parameters")
    given = [k for k in dict.fromkeys(("rope_scaling", "rope_parameters", "rope_theta", *keys))
             if merged.get(k) is not None]
    if not given and isinstance(dr, dict) and dr and "rope_theta" not in merged:
        merged["rope_parameters"] = dict(dr)
        if any(merged.get(k) is not None for k in config_rules.PARTIAL_KEYS):
            merged["rope_parameters"].pop("partial_rotary_factor", None)  # (the file's own factor, not the class's)
    elif "rope_theta" in defaults and "rope_theta" not in merged and (merged.get("rotary_emb_base") is None
                                                                     or "rotary_emb_base" not in keys) \
            and not any(isinstance(merged.get(k), dict) and "rope_theta" in merged[k]
                        for k in ("rope_scaling", "rope_parameters")):
        merged["rope_theta"] = defaults["rope_theta"]


def _outer_keys(cfg: dict, like: str | None) -> bool:
    """Whether the outer config's keys reach the language model's beside its
    text_config (config_rules.outer_keys), or a ValueError where the config
    class could not be probed for it."""
    reach = config_rules.outer_keys(_type_of(cfg, like))
    if reach is None:
        raise ValueError(f"config: whether {_type_of(cfg, like)}'s config class moves the outer config's keys "
                         f"into its language model's config is unknown (transformers' class could not be probed); "
                         f"pass the language model's config (text_config) with its RoPE keys in it")
    return reach


def _stopped_at(cfg: dict, part: dict, e: dict, depth: int) -> dict:
    """The language model's config of a composite file that stops `depth`
    keys into the table's text config path (`part` is where: the file itself
    for a flat Hub file, ColQwen2's vlm_config without its text_config): the
    part where its classes carry its keys into the language model's config
    (config_rules.moved), with a ValueError naming a key given there that
    they do not carry (Fuyu's partial_rotary_factor: transformers ignores
    it); else the class's preset, where the outer class presets nothing
    otherwise than the text class; a ValueError where the classes could not
    be probed."""
    t = str(cfg.get("model_type"))
    where, missing = ".".join(e["text_config"][:depth]) or "the top level", ".".join(e["text_config"][depth:])
    rules = config_rules.moved(t, depth)
    if rules is None:
        raise ValueError(f"config: {missing} is missing, and how {t}'s config classes read a file without it is "
                         "unknown (transformers' classes could not be probed): pass the config with its text_config "
                         "(as transformers saves it)")
    measured, carried = rules
    dropped = [k for k in measured if k in part and k not in carried]
    if dropped:
        raise ValueError(f"config: {where} gives {', '.join(dropped)}, which {t}'s config classes do not carry into "
                         f"the language model's config when {missing} is missing (transformers ignores them): pass "
                         "the config with its text_config (as transformers saves it)")
    if carried:
        return part
    if depth == 0 and config_rules.preset(t, False):
        raise ValueError(f"config: this {t} config has no {missing}; its config class then builds the language "
                         "model from its own preset, not from the file's top-level keys: pass the config with its "
                         "text_config (as transformers saves it)")
    return {}


def _type_of(cfg: dict, like: str | None) -> str:
    """The model type whose config class reads `cfg` (for its rules)."""
    return like if like is not None else str(cfg.get("model_type"))


def _head_dim(cfg: dict, key: str | None, model: str) -> int:
    """The rotated head's width: cfg[key] (the table's key for the model and
    layer type), else hidden_size // num_attention_heads (transformers'
    `getattr(config, key, None) or hidden // heads`). Key "quotient": the
    quotient only, another head_dim refused (the model's code rotated no
    other when the table was made: OLMoE's, Qwen2-VL's, GLM-4V's)."""
    if key and key != "quotient" and cfg.get(key) is not None:
        width = key_int(cfg, key, "config: ")
        if width % 2 and key != "head_dim":  # (such a key's width turns whole: every rule of the table, measured)
            raise ValueError(f"config: {key} {width} must be even: {model!r} rotates the whole of it, in pairs")
        return width
    if key not in (None, "head_dim", "quotient"):  # (qk_rope_head_dim, kv_channels, ...: no quotient stands in)
        raise ValueError(f"config: {key} is missing; {model!r} rotates heads of that width")
    for name in ("hidden_size", "num_attention_heads"):
        if cfg.get(name) is None:
            raise ValueError(f"config: the head dim of {model!r} needs {'head_dim, or ' if key == 'head_dim' else ''}"
                             f"hidden_size and num_attention_heads; {name} is missing")
    hidden, heads = key_int(cfg, "hidden_size", "config: "), key_int(cfg, "num_attention_heads", "config: ")
    given = cfg.get("head_dim")
    if key == "quotient" and given is not None and (isinstance(given, bool) or not isinstance(given, (int, float))):
        raise ValueError(f"config: head_dim must be a number or null; got {brief(given)}")  # (not refused as
        # another width: the rotary module that reads one computes with it, and fails)
    if key == "quotient" and given not in (None, hidden // heads):
        raise ValueError(f"config: head_dim {brief(given)}: the code of {model!r} did not rotate heads "
                         f"of a head_dim other than hidden_size // num_attention_heads ({hidden // heads}) when "
                         "vkrope's model table was made (its attention's weights follow hidden_size: it failed, or "
                         "its rotary module read the head_dim its attention did not), so how it would read one is "
                         "unknown")
    return hidden // heads  # (transformers' floor: q_proj then has heads * (hidden // heads) outputs)


def _remote(config: Any, like: str | None) -> tuple[dict, str, bool] | None:
    """(config, architecture, like == "llama.cpp") for a config to read through llama.cpp's converter: one
    whose model type (a non-empty str) transformers does not know (remote code), or any with
    like="llama.cpp", whose `architectures` the converter registers and transformers does not (a
    transformers class is read from transformers' code, by its model type); None for any other."""
    outer = _load(config)
    model_type = outer.get("model_type")
    known = isinstance(model_type, str) and model_type in model_table.table()["models"]
    if like == "llama.cpp" and known:
        raise ValueError(f"like='llama.cpp' reads configs of model types transformers does not know (remote "
                         f"code); {model_type!r} is one it knows: read it without like=, or its GGUF file with "
                         "vkrope.from_gguf")
    remote = isinstance(model_type, str) and bool(model_type) and not known
    if like != "llama.cpp" and (like is not None or not remote):
        return None
    arch, why = gguf_convert.architecture(outer)
    if arch is not None and gguf_convert.table()["architectures"][arch].get("transformers"):
        raise ValueError(f"config: model_type {model_type!r} is not one of transformers' (remote code), but its "
                         f"architectures name {arch!r}, a transformers class: its pairs and head dim would be a "
                         f"guess; pass like='<the model type of {arch}>' to read it as transformers does")
    if arch is None and like == "llama.cpp":
        raise ValueError(f"like='llama.cpp': {why} ({gguf_convert.table()['source']})")
    return None if arch is None else (outer, arch, like == "llama.cpp")


def _entry_of(config: Any, like: str | None) -> tuple[dict, dict, dict]:
    """(outer config, table entry, text config) of a from_hf argument; a
    composite config whose text_config names another model type than its
    class's own (a llava around Gemma 3's) is read as that text config, as
    transformers builds the language model from it (AutoModel.from_config)."""
    outer = _load(config)
    e = model_table.entry(outer.get("model_type"), like)
    if like is None and e.get("text_config") and outer.get("per_layer_config") is not None:
        raise ValueError(f"config: per_layer_config at the top of a composite {outer.get('model_type')} config: its "
                         "class has no num_hidden_layers to check it against (transformers raises, even on {}); give "
                         "it in the text config")
    if like is None or outer.get("model_type") == like:  # (read as another type: its class does not load the file;
        config_rules.check_outer_kinds(outer, str(outer.get("model_type")), e.get("text_config", []),
                                       model_table.table()["models"])  # (a text_config of another type: this
        # class still loads the file around it)
    inner: Any = outer
    for key in e.get("text_config", []) if like is None else []:
        inner = inner.get(key) if isinstance(inner, dict) else None
    own = config_rules.text_model_type(str(outer.get("model_type")))
    if isinstance(inner, dict) and own is not None and isinstance(inner.get("model_type"), str) \
            and inner["model_type"] != own:
        text_e = model_table.entry(inner["model_type"])
        inner = {**config_rules.text_fill(str(outer.get("model_type")), True), **inner}  # (where the outer class
        # fills the file's text_config before building it as the type it names: Voxtral around Mistral)
        return inner, text_e, _text_config(inner, text_e)
    return outer, e, _text_config(outer, e, like)


_PAIRS_WORDS = {"rotate_half": "rotate-half pairs (i, i + rotary_dim / 2)",
                "interleaved": "interleaved pairs (2i, 2i + 1)",
                "interleaved_to_halves": "interleaved pairs (2i, 2i + 1), written cat(even, odd)",
                "unknown": "a rotation vkrope does not compute"}


def _check_args(angle: Any, part: Any, layer_type: Any = None, layer: Any = None) -> None:
    """from_hf's and layers' arguments besides the config, checked before anything is read (a model of no
    RoPE at all, NoRopeLayers whatever is asked, must not hide a bad argument)."""
    if layer is not None and not is_int(layer):
        raise TypeError(f"layer must be an int (a decoder layer index) or None; got {brief(layer)}")
    check_angle(angle)
    if layer_type is not None and not isinstance(layer_type, str):
        raise TypeError(f"layer_type must be a str or None; got {brief(layer_type)}")
    if part is not None and not isinstance(part, str):
        raise TypeError(f"part must be a str ('attention', 'indexer', or '' for none) or None; got {brief(part)}")


def angles_part(e: dict) -> str | None:
    """The part to read where only a model's angles, layers and keys matter (the same for every part): its
    attention's, for a table entry `e` with `parts`; None for any other."""
    return "attention" if e.get("parts") else None


def _part_entry(e: dict, model_type: str, part: str | None) -> dict:
    """The table entry as the part asked for rotates: a model type whose layers rotate in parts (the table's
    `parts`, found by running them: DeepSeek-V3.2's attention interleaved, its sparse indexer rotate-half) is
    read for the part named, and refused without one where the parts' pairs differ; any other rotates one way,
    its attention's."""
    parts = e.get("parts")
    part = part or None  # ("": a one-way ModelRope's own part, read back)
    if not parts:
        if part not in (None, "attention"):
            raise ValueError(f"part: {model_type!r} rotates one way in its layers, its attention's "
                             f"(part='attention', or no part given); got {part!r}")
        return e
    if part is None:
        if len({v["pairs"] for v in parts.values()}) == 1:  # (GLM-5's indexer rotates as its attention does)
            return e
        ways = "; ".join(f"part={p!r}: {_PAIRS_WORDS.get(v['pairs'], v['pairs'])}" for p, v in sorted(parts.items()))
        raise ValueError(f"config: {model_type!r} rotates {len(parts)} ways in each layer ({ways}), over the same "
                         "angles: pass part= to say which the RoPE is for")
    if part not in parts:
        raise ValueError(f"part must be one of {sorted(parts)} for {model_type!r}; got {part!r}")
    if parts[part]["pairs"] == "unknown":
        raise ValueError(f"part: {model_type!r}'s {part} rotates in a way vkrope does not compute (the model table "
                         "found none of its rotations among those vkrope knows); refused rather than guessed")
    if parts[part].get("at") == "unknown":
        raise ValueError(f"part: where {model_type!r}'s {part} rotates within its heads is unknown (the model table "
                         "found its rotated channels in no projection of the part's); refused rather than guessed")
    return {**e, **parts[part], "part_name": part}


def parts(config: Any, *, like: str | None = None) -> tuple[str, ...]:
    """The parts of a config's layers that rotate, each its own way, that vkrope reads (DeepSeek-V3.2:
    ("attention", "indexer"), each `from_hf(part=)`; GLM-5's indexer rotates as its attention); () where the
    attention alone rotates; NoRopeLayers for a model type of no RoPE at all (BERT's). `like`: as from_hf's."""
    config = _load(config)
    if _remote(config, like) is not None:
        return ()
    _, e, _ = _entry_of(config, like)
    return tuple(sorted(p for p, v in (e.get("parts") or {}).items()
                        if v["pairs"] != "unknown" and v.get("at") != "unknown"))


# Where a part with heads of its own rotates in them (the table's `at`, found by running the model) as ModelRope
# says it: DeepSeek-V3.2's indexer q[..., :qk_rope_head_dim], HY-V4's q[..., -qk_rope_head_dim:]
_AT_CHANNELS = {"start": "first", "end": "last"}
_AT_WORDS = {"start": "at the start of", "end": "at the end of"}


def _part_fields(e: dict, part: str | None) -> dict[str, str]:
    """A ModelRope's part (the one read, of a model rotating in parts; "" for one rotating in one) and which
    channels of the part's own heads it covers."""
    return {"part": (part or "") if e.get("parts") else "",
            "part_channels": _AT_CHANNELS.get(str(e.get("at")), "") if part else ""}


def _check_parts(cfg: dict, e: dict, rotary: int, model_type: str) -> None:
    """A part with heads of its own (DeepSeek-V3.2's indexer: `index_head_dim`, the table's head_key) rotates
    `rotary` of their channels: heads narrower than that are refused, whichever part is read, as the model
    cannot split them (its first layer running the part fails; llama.cpp's graph asserts it too); a first
    layer that skips a part the model fails without (GLM-5's "shared" indexer layer: `runs.first_runs`)
    likewise."""
    for part, v in sorted((e.get("parts") or {}).items()):
        model_table.check_first_runs(cfg, v.get("runs"))
        key = v.get("head_key")
        if key is None:
            continue
        width = cfg.get(key, v["head_default"])
        if not is_int(width) or width < 1:
            raise ValueError(f"config: {key} must be a positive integer (the width of {model_type}'s {part} heads); "
                             f"got {brief(width)}")
        if width < rotary:
            raise ValueError(f"config: {key} {brief(width)} is narrower than the {brief(rotary)} channels "
                             f"{model_type}'s {part} rotates {_AT_WORDS.get(v.get('at'), 'in')} each of its "
                             "heads: its model cannot split them; refused")


def layer_types(config: Any, *, like: str | None = None) -> tuple[str, ...]:
    """The layer types of a config with RoPE per layer type (Gemma 3:
    ("full_attention", "sliding_attention")); () when one RoPE serves every
    layer; NoRopeLayers for a model type of no RoPE at all (BERT's).
    `like`: as from_hf's."""
    config = _load(config)  # (read once: a path is parsed here, not again below)
    remote = _remote(config, like)
    if remote is not None:
        return gguf_convert.layer_types(*remote)
    _, e, cfg = _entry_of(config, like)
    return tuple(sorted(_per_layer(cfg, e) or ()))


def _per_layer(cfg: dict, e: dict) -> dict[str, dict] | None:
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


def _overrides(cfg: dict, e: dict) -> dict[int, dict]:
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
        skip = v.get("skip", [])
        if isinstance(skip, str) or not isinstance(skip, collections.abc.Iterable) \
                or not all(isinstance(s, str) for s in skip):  # (any iterable of strings, as transformers)
            raise ValueError(f"config: per_layer_config[{k!r}]['skip'] must be a list of strings; got "
                             f"{brief(skip)}")
        out[i] = dict(v)
    return out


def _one_config(cfg: dict, e: dict, model_type: str, read: Any) -> tuple[dict, tuple[str, ...]]:
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


def _for_layer(cfg: dict, e: dict, layer: int | None, layer_type: str | None) -> dict:
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
    over = _overrides(cfg, e)
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


def _layer_of(cfg: dict, e: dict, layer: int | None) -> tuple[list[bool] | None, str | None]:
    """(per layer whether it rotates, or None; the layer type of `layer`, if given and the config has types;
    `layer` an int, as _check_args made sure)."""
    rotates = model_table.rope_layers(cfg, e)
    if layer is None:
        return rotates, None
    n = _layer_count(cfg, rotates)
    if not 0 <= layer < n:
        raise ValueError(f"layer must be in [0, {n}) (the config's num_hidden_layers); got {brief(layer)}")
    types = cfg.get("layer_types")
    return rotates, (types[layer] if isinstance(types, list) and layer < len(types) else None)


def _layer_count(cfg: dict, rotates: list[bool] | None) -> int:
    """The decoder layers: those the NoPE rule lists, else num_hidden_layers (an integer)."""
    return model_table.layer_count(len(rotates) if rotates is not None else cfg.get("num_hidden_layers"))


def layers(config: Any, *, like: str | None = None, angle: str = "float32",
           part: str | None = None) -> tuple[ModelRope | None, ...]:
    """Every decoder layer's RoPE, by index (`from_hf(config, layer=i)`):
    None for a layer whose attention applies none (Llama 4's and SmolLM3's
    NoPE layers, the global layers of EXAONE 4 and Cohere 2); NoRopeLayers
    for a model type of no RoPE at all (BERT's). `like`, `angle` and `part`:
    as from_hf's (DeepSeek-V3.2's parts: "attention" or "indexer")."""
    _check_args(angle, part)
    config = _load(config)  # (read once: every layer's from_hf below takes the dict)
    remote = _remote(config, like)
    if remote is not None:
        _part_entry({}, str(config.get("model_type")), part)
        return gguf_convert.layers(*remote, angle)
    outer, e, cfg = _entry_of(config, like)
    e = _part_entry(e, like or str(outer.get("model_type")), part)  # (refused before the first layer is read)
    rotates = model_table.rope_layers(cfg, e)  # (a list of one entry a layer or more: its rules refuse an empty one)
    n = _layer_count(cfg, rotates) if rotates is not None else model_table.positive_layer_count(cfg)
    over = _overrides(cfg, e)
    memo: dict[Any, ModelRope | None] = {}
    out = []
    for i in range(n):
        types = cfg.get("layer_types")
        key = (rotates[i] if rotates else True, types[i] if isinstance(types, list) and i < len(types) else None,
               json.dumps(over.get(i, {}), sort_keys=True, default=str))
        if key not in memo:
            memo[key] = from_hf(config, layer=i, like=like, angle=angle, part=part)
        out.append(memo[key])
    return tuple(out)


# (a call naming no layer and no layer type gives a RoPE or raises: typed so, the documented
# `vkrope.from_hf(path).cos_sin(...)` checks; naming one may get None, a layer without RoPE)
@overload
def from_hf(config: Any, *, layer_type: None = None, layer: None = None, like: str | None = None,
            angle: str = "float32", part: str | None = None) -> ModelRope: ...
@overload
def from_hf(config: Any, *, layer_type: str | None = None, layer: int | None = None, like: str | None = None,
            angle: str = "float32", part: str | None = None) -> ModelRope | None: ...
def from_hf(config: Any, *, layer_type: str | None = None, layer: int | None = None, like: str | None = None,
            angle: str = "float32", part: str | None = None) -> ModelRope | None:
    """A model's RoPE (a `vkrope.ModelRope`) from its Hugging Face config (a config.json's dict, its
    path or its folder, or a `PretrainedConfig`-like object with `to_dict()`).

    How the model applies RoPE comes from vkrope's model table (generated
    from transformers' own code by scripts/hf_model_table.py): where the
    text config sits, the config class's defaults, the key of the rotated
    head's width per layer type (head_dim, global_head_dim, kv_channels,
    ...), pairs, and which layers apply none. A model type not in the table, or one
    whose RoPE vkrope does not compute as the model does, is refused with
    a ValueError naming it; `like="llama"` reads a config as that model
    type does (the caller's word that its attention is the same). A type
    transformers lacks (remote code: ChatGLM, Qwen 1, MiniCPM) is read as
    llama.cpp's converter writes it (models/gguf_convert.py); keys it does
    not use need `like="llama.cpp"`, and are listed in `ignored`.

    The rest as transformers 5 reads it: `rope_parameters` or `rope_scaling`
    (`type` / `rope_type`) plus `rope_theta`; the rotary dim from
    `partial_rotary_factor` (GPT-NeoX's `rotary_pct`); M-RoPE's
    `mrope_section`, chunked, interleaved or alternating (ERNIE 4.5 VL) as
    the table found the model type's rotary module doing it.

    `layer_type`: for configs with RoPE per layer type (Gemma 3, Gemma 4;
    `vkrope.hf_layer_types` lists them); `layer`: a decoder layer index
    (its layer type read from the config). Returns None when that layer
    (or every layer of that type) applies no RoPE (NoRopeLayers for a model
    type of no RoPE at all, BERT's). Without either, the
    RoPE every rotating layer shares (`summary()` lists the layers without),
    never None: `NoRopeLayers` (a ValueError) where the config's layers all apply none;
    an unknown rope type, missing or contradictory field: a ValueError naming the key.

    `part`: for a model whose layers rotate in parts over the same angles (`vkrope.hf_parts` lists them:
    DeepSeek-V3.2 and A.X K2's "attention", interleaved pairs, and "indexer", their sparse indexer's
    rotate-half), which one; refused without it where the parts' pairs differ (GLM-5's indexer rotates as
    its attention). Any other model rotates one way ("attention", or None / ""). `angle`: "float32" (the
    angles as the model's float32 code computes them) or "exact" (float64-exact angles)."""
    _check_args(angle, part, layer_type, layer)
    config = _load(config)  # (read once: a path is parsed here, not again below)
    remote = _remote(config, like)
    if remote is not None:
        _part_entry({}, str(config.get("model_type")), part)
        return _from_converter(remote, layer_type, layer, angle)
    outer, e, cfg = _entry_of(config, like)
    model_type = like or str(outer.get("model_type"))
    e = _part_entry(e, model_type, part)
    cfg, ignored = _one_config(cfg, e, model_type, lambda c, i: _read(c, e, model_type, None, i, angle, part))
    spec = _read(cfg, e, model_type, layer_type, layer, angle, part)
    return spec if spec is None or not ignored else dataclasses.replace(spec, ignored=spec.ignored + ignored)


def _read(cfg: dict, e: dict, model_type: str, layer_type: str | None, layer: int | None, angle: str,
          part: str | None) -> ModelRope | None:
    """from_hf of text config `cfg` read as table entry `e` says (its arguments checked)."""
    rotates, type_of_layer, unknown = _rotating(cfg, e, layer, layer_type, model_type)
    nested = _per_layer(cfg, e)
    rotating, layer_type = _asked_layer(cfg, layer, layer_type, rotates, type_of_layer, nested is not None)
    if not rotating:
        return None
    text, cfg = cfg, _for_layer(cfg, e, layer, layer_type)
    rope, where = _rope_dict(cfg, nested, layer_type, e)
    kind, rope = _checked_kind(rope, where, model_type, cfg, layer_type if nested is not None else None, e)
    if nested is not None:
        _check_null_original(rope, where, kind, model_type)
    shape = e["by_layer_type"].get(layer_type if layer_type in e["by_layer_type"] else "*")
    if shape is None:
        raise ValueError(f"layer_type {layer_type!r}: the model table has no RoPE of {model_type!r} for it "
                         f"(it has {sorted(e['by_layer_type'])})")
    head_dim = _head_dim(cfg, shape["head_dim"], model_type)
    params, ignored = _params(rope, where, model_type, e, nested is not None, kind)
    kind, theta = _as_model_reads(e, model_type, layer_type, kind, _layer_theta(cfg, rope, where, e), params, ignored)
    rule = _rotary_rule(e, layer_type, kind, shape["rotary"])
    rotary = _rotary_dim(cfg, rope, kind, head_dim, rule, params, ignored)
    mpe, orig = _lengths(cfg, rope, where, kind, params, model_type, ignored)
    section, mrope_layout = _mrope(rope, where, model_type, e, rotary, head_dim)
    try:
        spec = ModelRope(kind, head_dim, rotary, theta, tuple(sorted(params.items())), mpe, orig,
                         section, mrope_layout, _interleaved(cfg, e), None, layer_type, angle, source="config",
                         ignored=tuple(ignored), model=model_type,
                         cos_layout=e["cos_layout"] if e["cos_layout"] in ("repeated", "single") else "halves",
                         nope_layers=None if unknown else tuple(i for i, r in enumerate(rotates or ()) if not r),
                         nope_why=(unknown or "").removeprefix("config: "),  # (the reading's words: the key)
                         **_part_fields(e, part))
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc) if str(exc).startswith("config: ") else f"config: {exc}") from None  # (said once)
    _check_parts(cfg, e, spec.rotary_dim, model_type)  # (after the spec's own checks of its widths)
    _check_siblings(cfg, nested, layer_type, model_type, e, text)
    return spec


def _asked_layer(cfg: dict, layer: int | None, layer_type: str | None, rotates: list[bool] | None,
                 type_of_layer: str | None, per_type: bool) -> tuple[bool, str | None]:
    """Whether the layer (or every layer of the type) asked for applies RoPE, and the layer type to read
    for it: a layer's own where the config keeps RoPE per layer type."""
    if layer is None:
        return layer_type is None or not _type_without_rope(cfg, rotates, layer_type), layer_type
    if layer_type is not None and type_of_layer is not None and layer_type != type_of_layer:
        raise ValueError(f"layer_type {layer_type!r} is not layer {layer}'s ({type_of_layer!r})")
    if rotates is not None and not rotates[layer]:
        return False, layer_type
    if per_type:
        if type_of_layer is None:
            raise ValueError(f"layer: the config has no layer_types, so layer {layer}'s type is unknown (the "
                             "config class derives it); pass "
                             f"{'' if cfg.get('per_layer_config') else 'layer_type=, or '}the config as transformers "
                             "saves it, AutoConfig.from_pretrained(path).to_dict()")
        layer_type = type_of_layer
    return True, layer_type


def _from_converter(remote: tuple[dict, str, bool], layer_type: str | None, layer: int | None,
                    angle: str) -> ModelRope | None:
    """from_hf for a remote-code config, through llama.cpp's converter: its arguments checked as from_gguf's
    (`layer` an int, as _check_args made sure)."""
    if layer_type not in (None, "full_attention", "sliding_attention"):
        raise ValueError(f"layer_type must be None, 'full_attention' or 'sliding_attention' for {remote[1]} (read "
                         f"as llama.cpp's converter writes it); got {layer_type!r}")
    return gguf_convert.from_config(*remote, layer_type=layer_type, layer=None if layer is None else int(layer),
                                    angle=angle)


def _type_without_rope(cfg: dict, rotates: list[bool] | None, layer_type: str) -> bool:
    """Whether the config lists layers of `layer_type` and none of them rotates."""
    types = cfg.get("layer_types")
    return rotates is not None and isinstance(types, list) and layer_type in types \
        and not any(r for r, t in zip(rotates, types) if t == layer_type)


def _rotating(cfg: dict, e: dict, layer: Any, layer_type: Any,
              model_type: str) -> tuple[list[bool] | None, str | None, str | None]:
    """(per layer whether it rotates, or None; layer `layer`'s type; why the pattern is unknown): a plain
    read (no layer, no layer type) of a config lacking the key that says still gives the rotating layers'
    RoPE, with its layers without RoPE unknown; one of a config whose layers all apply none: NoRopeLayers."""
    try:
        rotates, type_of_layer = _layer_of(cfg, e, layer)
    except ValueError as exc:
        # (the key that says which layers rotate, the attention's or the part's: absent, null or [])
        key = next((r["key"] for r in (e.get("nope"), e.get("runs")) if r and f"config: {r['key']} is missing"
                    in str(exc)), None)
        given = cfg.get(key) if key is not None else True
        absent = given is None or isinstance(given, list) and not given
        if layer is not None or layer_type is not None or not absent:
            raise
        return None, None, str(exc)
    if layer is None and layer_type is None and rotates and not any(rotates):
        # (a plain read gives the RoPE every rotating layer shares: with none, there is none to give, and
        # None would break its callers, typed to get a RoPE)
        off = model_table.switched_off(cfg, e)
        if off:
            why = f"{off}: {model_type}'s model switches RoPE off then, as the model table found running " \
                  "transformers' code"
        elif not any(model_table.attention_layers(cfg, e) or [True]):
            rule = e["nope"]
            cond = rule.get("if_null")
            null = f", with {cond['key']} null" if cond and cfg.get(cond["key"]) is None else ""
            why = f"by {rule['key']} {brief(cfg[rule['key']])}{null}"
        else:  # (the attention rotates; the part read runs on none of its layers)
            why = f"by {e['runs']['key']} {brief(cfg[e['runs']['key']])}: none runs the {e['part_name']}"
        raise NoRopeLayers(f"config: its layers all apply no RoPE ({why}): it has no RoPE to give", why)
    return rotates, type_of_layer, None


def _rope_dict(cfg: dict, nested: dict | None, layer_type: str | None, e: dict) -> tuple[dict, str]:
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


def _checked_kind(rope: dict, where: str, model_type: str, cfg: dict, layer_type: str | None,
                  e: dict) -> tuple[str, dict]:
    """The rope type the dict `rope` names (of layer type `layer_type`, None for a model of one RoPE), as the model
    reads it (config_rules.check_type), and the dict as its rotary module reads it: a null partial factor, where
    the module takes one (config_rules.check_partial_null), is no factor (on a layer type's dict: its fallback)."""
    kind = config_rules.check_type(_rope_kind(rope, where, model_type, layer_type is not None), model_type, where,
                                   rope, cfg)
    config_rules.check_partial_null(rope, where, model_type, layer_type, kind)
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
    dict is the module's (config_rules.check_partial_null)."""
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
    if "rope_type" in rope and "type" in rope and rope["type"] != rope["rope_type"] \
            and _same_type(rope["type"], renamed) != _same_type(rope["rope_type"], renamed):
        merged = " (its config class puts a file's rope_scaling into each layer type's dict, beside the layer " \
            "type's own rope_type)" if per_type else ""  # (Gemma 3n's: the file has neither key there)
        raise ValueError(f"{where}type ({rope['type']!r}) and rope_type ({rope['rope_type']!r}) contradict each "
                         f"other{merged}: transformers reads rope_type; remove the one the model does not run")
    key = "rope_type" if "rope_type" in rope else "type"
    kind = rope.get(key, "default")
    if not isinstance(kind, str):
        raise ValueError(f"{where}{key} must be a string; got {brief(kind)}")
    kind = renamed.get(kind, kind)
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


def _layer_theta(cfg: dict, rope: dict, where: str, e: dict) -> float:
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


def _as_model_reads(e: dict, model_type: str, layer_type: str | None, kind: str, theta: float, params: dict,
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


def _rotary_rule(e: dict, layer_type: str | None, kind: str, rule: str) -> str:
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


def _rotary_dim(cfg: dict, rope: dict, kind: str, head_dim: int, rule: str, params: dict[str, Any],
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


def _params(rope: dict, where: str, model_type: str, e: dict, per_type: bool,
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
        if key in _IGNORED:
            continue
        if key in turning and isinstance(value, (int, float)) and not value:
            ignored.append(key)  # (a key that turns the type, given 0 or false: the code tests its truth)
            continue
        if key in own and value is not None:  # (a null: .get gives None, no code reads a value)
            raise ValueError(f"{where}{key} {brief(value)}: the code of {model_type!r} reads rope_parameters[{key!r}] "
                             "and vkrope does not read it; refused rather than read without it")
        if key not in PARAMS or key in GGUF_PARAMS \
                or (key in _MSCALES and key not in config_rules.needs(model_type, "longrope")) \
                or (key == "llama_4_scaling_beta" and not scales_q) or (key == "truncate" and per_type):
            ignored.append(key)  # as transformers: a key its rope type does not read is not an error
            continue
        if key == "truncate" and value is None:
            value = False  # (transformers' yarn tests `rope_parameters.get("truncate", True)`: a null is false)
        elif value is None or (key in ("beta_fast", "beta_slow", "mscale", "mscale_all_dim") and value == 0):
            continue  # (transformers reads these with `or`: 0 means its default)
        if key in ("short_factor", "long_factor"):
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


def _needs_orig(kind: str) -> bool:
    """Whether rope type `kind` reads original_max_position_embeddings."""
    return kind in RULES and RULES[kind].needs_orig


def _lengths(cfg: dict, rope: dict, where: str, kind: str, params: dict, model_type: str,
             ignored: list[str]) -> tuple[int | None, int | None]:
    """(max_position_embeddings, original_max_position_embeddings), checked against what the rope type needs
    and the model's code reads (_check_attention_reads); a top-level original length (Phi-3 keeps it there)
    is read where the model type's model reads it. An original length nothing reads (beside a rope type that
    reads none, `needs_orig` false: default, linear, dynamic, proportional, whose functions read
    max_position_embeddings; and an attention that does not read it) is None, the key added to `ignored`."""
    rule = config_rules.original_length(model_type)[
        "both" if "original_max_position_embeddings" in rope else "top_only"]
    if "original_max_position_embeddings" in cfg and _needs_orig(kind) \
            and rule not in ("top", "dict", "max_position_embeddings"):
        raise ValueError(f"config: original_max_position_embeddings: {model_type}'s model reads it in a way vkrope "
                         f"does not know ({rule!r}, measured by the rules script); refused rather than guessed")
    orig_src = cfg if "original_max_position_embeddings" in cfg and rule in ("top", "unknown") else rope
    if orig_src is cfg and cfg["original_max_position_embeddings"] is None and _needs_orig(kind):
        # (transformers copies the top level's over the rope dict's for these types, null too, and then fails)
        raise ValueError(f"config: original_max_position_embeddings is null, which rope_type {kind!r} cannot take "
                         "(transformers takes the top level's over the rope dict's); remove it or give a number")
    orig = key_int(orig_src, "original_max_position_embeddings", "config: ") \
        if orig_src.get("original_max_position_embeddings") is not None else None
    mpe = key_int(cfg, "max_position_embeddings", "config: ") if cfg.get("max_position_embeddings") is not None \
        else None
    if mpe is None and kind in ("yarn", "llama3") and "max_position_embeddings" in cfg:
        # (null through the key its class stores it by, Bailing hybrid's model_max_length: the class's own null
        # check passed it)
        raise ValueError(f"config: max_position_embeddings (or the key {model_type}'s class stores it by) is null, "
                         f"which transformers' validation of rope_type {kind!r} compares with the original length "
                         "and fails on; refused")
    if orig is None and _needs_orig(kind):
        orig = mpe  # transformers' default
        if orig is None:
            raise ValueError(f"{where}original_max_position_embeddings (or max_position_embeddings) is "
                             f"needed by rope_type {kind!r}")
    if kind == "yarn" and "factor" not in rope:
        raise ValueError(f"{where}factor is needed by rope_type 'yarn' (null derives it from max_position_embeddings "
                         "/ original_max_position_embeddings, as transformers)")
    if kind == "yarn" and "factor" not in params:
        if mpe is None:
            raise ValueError(f"{where}factor is null and no max_position_embeddings derives it")
    elif kind in ("linear", "dynamic", "llama3") and "factor" not in params:
        raise ValueError(f"{where}factor is needed by rope_type {kind!r}")
    _check_attention_reads(rope, where, model_type, orig if _needs_orig(kind) else None)
    if orig is not None and not _needs_orig(kind) \
            and "original_max_position_embeddings" not in config_rules.attention_reads(model_type):
        ignored.append("original_max_position_embeddings")
        orig = None
    return mpe, orig


def _mrope(rope: dict, where: str, model_type: str, e: dict, rotary: int,
           head_dim: int) -> tuple[tuple[int, ...] | None, str]:
    """(mrope_section as (temporal, height, width), its layout) of a rope
    dict; the layout is the model table's (what the type's rotary module does
    with three axes), and so are the sections its module takes where the dict
    has none (Qwen2-VL's [16, 24, 24]: text positions read the same either
    way); sections the config class refuses (Cosmos 3 Edge's), refused."""
    layout = e.get("mrope")
    section = rope.get("mrope_section") if "mrope_section" in rope else e.get("mrope_section")
    if "mrope_section" in rope and section is None and layout in MROPE_LAYOUTS:
        raise ValueError(f"{where}mrope_section is null; the rotary module of {model_type!r} splits by it "
                         "(transformers fails on null): give the sections, or leave the key out for the module's own")
    if "mrope_section" not in rope and section is not None and layout in ("chunked", "alternating") \
            and sum(section) != rotary // 2:
        raise ValueError(f"{where}mrope_section is missing, and the sections the rotary module of {model_type!r} "
                         f"takes then, {section}, do not span this head's {rotary // 2} pairs (transformers fails "
                         "on them): give the sections")
    if layout == "unknown" and "mrope_section" not in rope and not _BARE.get() \
            and rotary != _bare_width(model_type):
        bare = _bare_width(model_type)
        raise ValueError(f"config: the rotary module of {model_type!r} splits "
                         f"{f'its {bare // 2} pairs' if bare else 'its pairs'} into M-RoPE sections of its own, which "
                         f"vkrope does not know, so this head's {rotary // 2} pairs are not read (transformers fails "
                         "on them where the sections do not span the pairs): give the config's head size and partial "
                         "factor as the class's")
    inter = rope.get("mrope_interleaved")
    if section is not None:
        if not isinstance(section, (list, tuple)) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                             for v in section):
            raise ValueError(f"{where}mrope_section must be a list of 3 integers; got {brief(section)}")
        section = tuple(section)
        # transformers' rotary module decides by model class, whatever the flag says; another layout (or a
        # module the table could not run with three axes) is not guessed
        if layout not in MROPE_LAYOUTS:
            raise ValueError(f"{where}mrope_section: the M-RoPE layout of model_type {model_type!r} is not one "
                             "vkrope knows (the model table has it as "
                             f"{'one axis' if layout is None else repr(layout)}; chunked as Qwen2-VL's, "
                             "interleaved as Qwen3-VL's and alternating as ERNIE 4.5 VL's are)")
        if layout == "alternating":
            section = _alternating(section, rotary, model_type, where)
    elif inter:
        raise ValueError(f"{where}mrope_interleaved is set but mrope_section is missing")
    if inter is not None and not isinstance(inter, bool):
        raise ValueError(f"{where}mrope_interleaved must be true or false; got {brief(inter)}")
    config_rules.check_mrope_sections(section, head_dim, model_type, where)
    if section is None:
        return None, "chunked"
    return tuple(section), str(layout)


def _alternating(section: tuple[int, ...], rotary: int, model_type: str, where: str) -> tuple[int, ...]:
    """ERNIE 4.5 VL's mrope_section, [height, width, time] in its config, as (time, height, width); the
    sections its rotary module fails on (it stacks the height and width pairs, and fills the time pairs
    from the end of the head's frequencies), refused."""
    if len(section) != 3:
        raise ValueError(f"{where}mrope_section must be a list of 3 integers; got {list(section)}")
    h, w, t = section
    if h != w or t < 1 or h < 0 or h + w + t != rotary // 2:
        raise ValueError(f"{where}mrope_section {list(section)}: the rotary module of {model_type!r} reads it as "
                         f"[height, width, time] pairs and runs only where height equals width, time is at least 1 "
                         f"and they sum to this head's {rotary // 2} pairs (transformers fails on others)")
    return (t, h, w)


def _check_null_original(rope: dict, where: str, kind: str, model_type: str) -> None:
    """A ValueError where a layer type's rope dict gives original_max_position_embeddings as null beside a rope
    type that reads it: the config class keeps the null there, and the rope function fails on it (transformers
    5.25's _compute_longrope_parameters divides by it; an adversary's differential fuzz). The rules measure
    a null in a model's one rope dict (config_rules.check_type's `not_null`), not in a layer type's."""
    if _needs_orig(kind) and "original_max_position_embeddings" in rope \
            and rope["original_max_position_embeddings"] is None:
        raise ValueError(f"{where}original_max_position_embeddings is null, which rope_type {kind!r} cannot take: "
                         f"{model_type}'s config class keeps the null in a layer type's dict, and its rotary "
                         "function divides by it (transformers raises); remove it or give a number")


def _check_siblings(cfg: dict, nested: dict | None, layer_type: str | None, model_type: str, e: dict,
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
        rope, where = _rope_dict(cfg, nested or {}, other, e)
        try:
            kind = config_rules.named_type(rope)  # (per layer type: no early names measured, as above)
            if not isinstance(kind, str):
                raise ValueError(f"{where}rope_type must be a string; got {brief(kind)}")
            kind = config_rules.check_type(kind, model_type, where, rope, cfg)
            config_rules.check_partial_null(rope, where, model_type, other, kind)
            _check_null_original(rope, where, kind, model_type)
            _theta(cfg, rope, where)
            seen, head_key = _for_layer(text, e, None, other), (e["by_layer_type"].get(other) or {}).get("head_dim")
            if head_key and is_int(seen.get(head_key)):
                key_int(seen, head_key, "config: ")
        except ValueError as exc:
            raise ValueError(f"{exc} (of layer type {other!r}: transformers sets up every layer type's RoPE, so "
                             f"the model fails whichever layer is read, {layer_type!r} too)") from None


# (set while _bare_width reads a bare config, whose width is the one it compares with)
_BARE: contextvars.ContextVar[bool] = contextvars.ContextVar("bare", default=False)


@functools.cache
def _bare_width(model_type: str) -> int:
    """The rotated width of the model type's bare config: the one the model table ran its rotary module on (0
    where that config gives none: every other width is refused then)."""
    token = _BARE.set(True)
    try:  # (a model type whose layers rotate in parts: one width, the same for either)
        rope = from_hf({"model_type": model_type}, part=angles_part(model_table.entry(model_type)))
    except ValueError:
        return 0
    finally:
        _BARE.reset(token)
    return 0 if rope is None else rope.rotary_dim


def _interleaved(cfg: dict, e: dict) -> bool:
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

"""A Hugging Face config found and read as transformers builds its class: the file loaded, the text config
of a composite, the keys its class fills or renames, a remote-code model's route, and the model table's
entry for its type (the first half of `from_hf`; vkrope/models/hf.py)."""

from __future__ import annotations

import os
from typing import Any

from ..files import read_json
from . import config_checks, config_rules, config_shapes, gguf_convert, model_table
from .rope import key_int, brief
from .rope_types import RULES
from ..runtime.dtypes import is_int
from .hf_rope_dict import needs_orig


def load_config(config: Any) -> dict:
    """The config as a dict: a path (a config.json, or the folder holding one) read once, a dict as given."""
    if isinstance(config, (str, bytes, os.PathLike)):
        given = path = os.fsdecode(config)  # (bytes, or a path-like giving them: as str, as os escapes them)
        if os.path.isdir(path):
            path = os.path.join(path, "config.json")
        if not os.path.lexists(path):
            if given.lstrip().startswith("{"):
                raise ValueError(f"config: no such file {brief(path, 60)}: a str or bytes is read as a path, and "
                                 "this looks like a config.json's contents: pass json.loads of it")
            raise ValueError(f"config: no such file {path!r}{hub_id_hint(given)}")
        head, config = read_json(path, "config", "a config.json")  # (a regular file, read once, of bounded size)
        if head == b"GGUF":
            raise ValueError(f"config: {path!r} is a GGUF file, not a config.json: read it with vkrope.from_gguf")
        if not isinstance(config, dict):  # (a file holding a JSON number, list or string)
            raise ValueError(f"config: {path!r} holds a JSON {type(config).__name__}, not an object (a config.json "
                             "holds one)")
    elif hasattr(config, "to_dict") and callable(config.to_dict):
        config = config.to_dict()
    if not isinstance(config, dict):
        raise TypeError(f"config must be a dict (a config.json's contents), a path to a config.json (str, bytes or "
                        f"os.PathLike), or an object "
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
    config_shapes.check_shape(merged, model_type, sorted(dr) if config_rules.per_layer_type(dr) else None)
    config_checks.check_nulls(merged, model_type, defaults)
    config_checks.check_kinds(merged, model_type, defaults, like is not None and cfg.get("model_type") != like,
                             e.get("aliases", {}))
    config_checks.check_unread(merged, model_type, defaults.get("num_hidden_layers"))
    _check_file_keys(merged, e, model_type, like is None or cfg.get("model_type") == like)
    config_checks.check_layer_types_given(merged, model_type, e.get("aliases", {}))  # (as the file names it)
    config_rules.drop_ignored(merged, model_type)
    seen_length = _aliases(merged, e)
    config_checks.check_absent(merged, model_type)
    _rename_layer_types(merged, model_type)  # (first, as every class does on load: the rules below read
    # the types the class sees)
    config_checks.check_layer_types(merged, model_type, defaults.get("num_hidden_layers"))
    _check_width(merged, e, model_type)
    if config_rules.per_layer_type(dr):  # the class keeps RoPE per layer type (Gemma 3, Olmo 3): its conversion
        # of the file's keys
        merged["rope_parameters"] = config_rules.per_type_rope(merged, dr, model_type)
        merged.pop("rope_scaling", None)
    head_dim_given = merged.get("head_dim") is not None  # (the file's, not the class's default)
    for key, value in defaults.items():
        if key not in ("rope_parameters", "rope_theta") and key not in merged:  # (an explicit null stays null)
            merged[key] = value
    config_checks.check_heads_divide(merged, model_type, head_dim_given)
    _check_switches(merged, e, model_type)
    if (e.get("nope") or {}).get("kind") == "flags":
        config_checks.check_flags_length(merged, model_type, e["nope"]["key"])
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
    if needs_orig(str(config_rules.read_type(rope, model_type))):
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


def read_head_dim(cfg: dict, key: str | None, model: str) -> int:
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


def remote_of(config: Any, like: str | None) -> tuple[dict, str, bool] | None:
    """(config, architecture, like == "llama.cpp") for a config to read through llama.cpp's converter: one
    whose model type (a non-empty str) transformers does not know (remote code), or any with
    like="llama.cpp", whose `architectures` the converter registers and transformers does not (a
    transformers class is read from transformers' code, by its model type); None for any other."""
    outer = load_config(config)
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


def entry_of(config: Any, like: str | None) -> tuple[dict, dict, dict]:
    """(outer config, table entry, text config) of a from_hf argument; a
    composite config whose text_config names another model type than its
    class's own (a llava around Gemma 3's) is read as that text config, as
    transformers builds the language model from it (AutoModel.from_config)."""
    outer = load_config(config)
    if outer.get("model_type") is None and ("_diffusers_version" in outer or "_class_name" in outer):
        # (like= would read it as a text model's 1-D RoPE: accepted for some, dropping what it does not know)
        raise ValueError(f"config: a diffusers config (_class_name {brief(outer.get('_class_name'), 60)}), not a "
                         "transformers model's: from_hf reads transformers' (nor as like= another model type); a "
                         "diffusers transformer's RoPE is N-D, over each token's grid position: build vkrope.NdFreqs "
                         "for its class as docs/guide/nd.md says and call vkrope.apply_nd")
    e = model_table.entry(outer.get("model_type"), like)
    if like is None and e.get("text_config") and outer.get("per_layer_config") is not None:
        raise ValueError(f"config: per_layer_config at the top of a composite {outer.get('model_type')} config: its "
                         "class has no num_hidden_layers to check it against (transformers raises, even on {}); give "
                         "it in the text config")
    if like is None or outer.get("model_type") == like:  # (read as another type: its class does not load the file;
        config_checks.check_outer_kinds(outer, str(outer.get("model_type")), e.get("text_config", []),
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

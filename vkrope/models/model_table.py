"""The model table: how each Hugging Face model type applies RoPE, as
transformers' own code does it (`vkrope/data/hf_models.json`, written by
scripts/hf_model_table.py from the transformers release its `transformers`
names, by running each model type's rotary module and attention; never
edited by hand).

Per model type: whether it has a text rotary module, where its text config
sits, its config class's defaults of the keys `from_hf` reads, how its
attention pairs and turns the channels, which key holds the rotated
head's width per layer type, which layers apply no RoPE, the parts of a
layer that rotate each its own way (`parts`: DeepSeek-V3.2's indexer
beside its attention, with the key of the part's own head width), and whether
vkrope computes what the model does ("status": "ok", else the reason it
is refused). `from_hf` reads nothing else about a model.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Any

import numpy as np

from ..errors import NoRopeLayers
from . import data
from ..words import brief
from ..runtime.dtypes import without_repeats

MAX_LAYERS = 1 << 16  # decoder layers a config may have (hf_layers lists each; llama.cpp takes 512)

# The model types whose rotary module indexes a table of max_position_embeddings rows (scripts/hf_position_limits.py)
@lru_cache(maxsize=1)
def position_limited() -> dict[str, int]:
    """The model types whose rotary module in transformers has no rotation at or past max_position_embeddings,
    each with its class's default count of rows (the limit where a file gives none)."""
    return dict(data.load("hf_position_limits.json")["models"])


# The model types whose generation drops its KV cache past original_max_position_embeddings (scripts/hf_cache_drops.py)
@lru_cache(maxsize=1)
def cache_drops() -> dict[str, str]:
    """{model type: what its generate() in transformers does when the sequence first grows past
    original_max_position_embeddings}: "recomputes" (drops its KV cache and runs every position again:
    Phi-3, PhiMoE) or "drops" (drops it and runs the newest token alone from then on: Phi-4-multimodal)."""
    return dict(data.load("hf_cache_drops.json")["models"])


def recompute_at(rope: Any) -> int | None:
    """`ModelRope.recompute_at`: original_max_position_embeddings + 1 for a config of a type whose generate()
    recomputes there (cache_drops) and whose frequencies or attention factor differ there from the call
    before (longrope's long factors, PhiMoE's long_mscale); None otherwise (a recomputed key is then the key
    cached: nothing to rewrite)."""
    if rope.source != "config" or cache_drops().get(rope.model) != "recomputes" or not rope.uses_seq_len():
        return None
    n = rope.original_max_position_embeddings
    if n is None:
        return None
    same = (np.array_equal(rope.inv_freq(n), rope.inv_freq(n + 1))
            and rope.attention_factor_for(n) == rope.attention_factor_for(n + 1))
    return None if same else n + 1


def within_limit(rope: Any, position_ids: Any, name: str = "position_ids") -> None:
    """A ValueError where a ModelRope read from a config (`rope.source` "config") is of a model type whose
    rotary module reads a fixed table of max_position_embeddings rows (GPT-J, CodeGen) and a position reaches
    it (the class's default rows where the file gives none: GPT-J's n_positions 2048): the model's own code
    has no answer there (it raises IndexError), so none is made up. Positions that are not integers are left
    to the caller's checks; `name`: the caller's argument holding them."""
    if rope.source != "config" or rope.model not in position_limited() or position_ids is None:
        return
    mpe = rope.max_position_embeddings or position_limited()[rope.model]
    p = without_repeats(np.asarray(position_ids))  # (a broadcast array's repeats are not read)
    if p.dtype.kind in "iu" and p.size and int(p.max()) >= mpe:
        raise ValueError(f"{name}: {rope.model}'s rotary module (transformers {table()['transformers']}) reads "
                         f"a table of max_position_embeddings = {mpe} rows and has no rotation for position "
                         f"{int(p.max())} (it raises IndexError there); pass positions below {mpe}")


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The whole table, vkrope/data/hf_models.json (read once)."""
    return data.load("hf_models.json")  # type: ignore[no-any-return]


def entry(model_type: Any, like: Any = None) -> dict[str, Any]:
    """The table's entry for a config's `model_type` (or for `like`, the
    model type a caller says to read it as), or a ValueError naming it and
    saying how to proceed: an unknown type, a type whose RoPE vkrope does
    not compute as the model does, or (NoRopeLayers, a ValueError) a type
    with no text RoPE."""
    models = table()["models"]
    if like is not None:
        if not isinstance(like, str):
            raise TypeError(f"like must be a str (a model type such as 'llama'); got {type(like).__name__}")
        if like not in models:
            raise ValueError(f"like: {like!r} is not a model type of the table (transformers "
                             f"{table()['transformers']}){_near(like, models)}")
        model_type = like
    elif model_type is not None and not isinstance(model_type, str):
        raise ValueError(f"config: model_type must be a string (a model type such as 'llama'); got "
                         f"{type(model_type).__name__} {brief(model_type)}")
    elif not model_type:
        raise ValueError("config: model_type is missing, so how the model applies RoPE is unknown; pass "
                         "like='<model type>' (for example like='llama') to read it as that model does")
    elif model_type not in models:
        raise ValueError(f"config: model_type {model_type!r} is not in vkrope's model table (transformers "
                         f"{table()['transformers']}'s model types{_near(model_type, models)}): its pairs, head "
                         f"dim and layers would be a guess; if it runs its attention as another model type does, "
                         f"pass like='<that model type>'")
    e = models[model_type]
    named = f"like: {model_type!r}" if like is not None else f"config: model_type {model_type!r}"  # (the caller's)
    if e.get("rope") is False:  # (a model of no RoPE at all: its layers all apply none, whichever is named)
        why = e.get("why") or "it has no text rotary module"
        raise NoRopeLayers(f"{named} applies no rotary embedding to its text attention in transformers ({why})",
                           f"{'like' if like is not None else 'model_type'} {model_type!r}: {why}")
    if e.get("status") != "ok":  # (where the table's probe failed, rope null, nothing is known of the model's
        # RoPE, and a caller who knows its attention runs as another type's may say so; where the table knows a
        # difference, a sign, learned weights, another reading, like= would read it wrong)
        hint = "" if like is not None or e.get("rope") is not None else (
            "; if its attention applies RoPE as another model type's does, pass like='<that model type>' to read "
            "the config as that type's class does (with that class's defaults for any key the file leaves out: "
            "give every RoPE key the model's own class sets)")
        status = str(e.get("status"))
        if status.startswith("not verified:"):  # (what the table probed: a hybrid's default may turn its RoPE off)
            status += (" (the model table runs each type's class on its default config; where a file turns on "
                       "attention layers or a RoPE that default leaves off, what they run is not verified either)")
        raise ValueError(f"{named} is refused: {status}{hint}")
    return e


def head_keys(model_type: str) -> set[str]:
    """The keys the table says a model type's rotated head width is read from (head_dim, DeepSeek's
    qk_rope_head_dim, ...); empty for a type outside the table (a GGUF architecture)."""
    e = table()["models"].get(model_type)
    return {s["head_dim"] for s in (e.get("by_layer_type") or {}).values()} - {None} if isinstance(e, dict) else set()


def _near(name: str, models: dict) -> str:
    close = difflib.get_close_matches(name, list(models), n=3)
    return f"; close: {', '.join(close)}" if close else ""


def layer_count(n: Any) -> int:
    """A config's count of decoder layers (num_hidden_layers, or the length of the list that says which rotate),
    checked: an integer of at most MAX_LAYERS (a list of one entry a layer is made of it), else a ValueError."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"config: num_hidden_layers must be an integer; got {brief(n)}")
    if n > MAX_LAYERS:
        raise ValueError(f"config: num_hidden_layers must be at most {MAX_LAYERS}; got {brief(n)}")
    return n


def switch_set(cfg: dict, key: str, switch: dict) -> bool:
    """Whether the config sets a switch of the table's (`switches`: a true / false key at the value the model
    table flipped it to, as the code tests it, `if config.alibi`; a null, as OLMo hybrid's rope_theta, where the
    config gives it, in the rope dict its class keeps it in or at the top: absent, the class's default stands)."""
    if switch["value"] is None:
        where = next((cfg[k] for k in ("rope_scaling", "rope_parameters")
                      if isinstance(cfg.get(k), dict) and key in cfg[k]), cfg)
        return key in where and where[key] is None
    return cfg.get(key) is not None and bool(cfg[key]) == switch["value"]


def switched_off(cfg: dict, e: dict) -> str | None:
    """The config value that switches the model's RoPE off (the table's `switches` whose "then" is "none":
    Falcon's alibi true, OLMo hybrid's rope_theta null), as "key value"; None where none is set."""
    for key, switch in e.get("switches", {}).items():
        if switch["then"] == "none" and switch_set(cfg, key, switch):
            return f"{key} {'null' if switch['value'] is None else str(switch['value']).lower()}"
    return None


def listed_layers(cfg: dict, key: str, values: Any) -> list[bool]:
    """Per decoder layer whether it applies RoPE where `cfg[key]` lists by index the layers that do not (the
    rule {"kind": "indices"}: Mllama builds a cross-attention layer, which takes no RoPE, where `layer_idx in
    config.cross_attention_layers`; an index past the layers, or negative, names none). A ValueError where
    the list is absent or null (the class fills in its own) or not a list of integers (the class refuses it)."""
    if values is None:
        raise ValueError(f"config: {key} is missing: the layers it lists apply no RoPE, and this model type's "
                         "config class fills in a list of its own where the key is absent or null: pass the "
                         "config as transformers saves it, AutoConfig.from_pretrained(path).to_dict()")
    if not isinstance(values, list) or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"config: {key} must be a list of layer indices (integers), as its config class "
                         f"requires; got {brief(values)}")
    listed = set(values)
    return [i not in listed for i in range(positive_layer_count(cfg))]


def positive_layer_count(cfg: dict) -> int:
    """The config's num_hidden_layers (layer_count), which must be at least 1 where it says which layers rotate."""
    count = layer_count(cfg.get("num_hidden_layers"))
    if count < 1:
        raise ValueError(f"config: num_hidden_layers must be a positive integer; got {brief(count)}")
    return count


def rope_layers(cfg: dict, e: dict) -> list[bool] | None:
    """Per decoder layer, whether the attention (or the part read: `e` a
    part's entry, with its `runs` rule) applies RoPE there; None where
    every layer does. The attention's by `attention_layers`, a part's where
    its layer runs it too (`part_layers`)."""
    attention, part = attention_layers(cfg, e), part_layers(cfg, e)
    if part is None or attention is None:
        return part if attention is None else attention
    return [a and p for a, p in zip(attention, part)]


def part_layers(cfg: dict, e: dict) -> list[bool] | None:
    """Per decoder layer whether it runs the part `e` reads, by the part's `runs` rule (GLM-5's and HY-V4's
    attention builds its sparse indexer only where `config.indexer_types[layer_idx]` is not "shared": such a
    layer reuses the selection of the full one before it and rotates no indexer); None where every layer
    runs it. The list absent: the class's own, every layer running the part where the table found so and
    the file gives no key the class derives the list from; else a ValueError asking for the saved config."""
    rule = e.get("runs")
    if not rule:
        return None
    key, values = rule["key"], cfg.get(rule["key"])
    if values is None:
        given = [k for k in rule["derived_from"] if k in cfg]
        if not given and rule["absent_runs"]:
            return None
        how = f"from {given[0]}, which the file gives" if given else "by its own defaults"
        raise ValueError(f"config: {key} is missing, and its config class derives it (which layers run the "
                         f"{e['part_name']}) {how}: pass the config as transformers saves it, "
                         "AutoConfig.from_pretrained(path).to_dict()")
    n = positive_layer_count(cfg)
    if not isinstance(values, list) or len(values) < n:
        raise ValueError(f"config: {key} must be a list of one entry per layer ({n}; the model reads entry i "
                         f"on layer i, and fails past its end); got {brief(values)}")
    unknown = sorted({str(v) for v in values[:n] if v not in rule["run"] and v not in rule["skip"]})
    if unknown:
        raise ValueError(f"config: {key} names {unknown[0]!r}, a value the model table did not run (layers of "
                         f"{rule['run']} run the {e['part_name']}, of {rule['skip']} do not): "
                         "refused rather than guessed")
    check_first_runs(cfg, rule)
    return [v in rule["run"] for v in values[:n]]


def check_first_runs(cfg: dict, rule: dict | None) -> None:
    """A ValueError where a part's `runs` rule says the model fails on a first layer that skips the part
    (`first_runs`: GLM-5's "shared" indexer layer reuses a selection no earlier layer made) and the config's
    list starts with such a value: no part of the model runs then, whichever is read."""
    first = cfg.get(rule["key"]) if rule else None
    if rule and rule.get("first_runs") and isinstance(first, list) and first and first[0] in rule["skip"]:
        raise ValueError(f"config: {rule['key']} starts with {first[0]!r}: the model's code fails where its first "
                         f"layer is one of {rule['skip']} (the model table ran it so), whatever is read")


def attention_layers(cfg: dict, e: dict) -> list[bool] | None:
    """Per decoder layer, whether its attention applies RoPE, by the table's rule
    `nope` over the (text) config `cfg`; None where every layer does.

    Rules: {"kind": "flags", "key": K}: layer i rotates iff cfg[K][i] is
    true (no_rope_layers); {"kind": "indices", "key": K}: iff i is not in
    the list cfg[K] (`listed_layers`); {"kind": "types", "key": K, "rotate":
    [...]}: iff cfg[K][i] is one of those layer types, and where
    the rule lists "still" (the types seen not rotating), a type in neither
    list ("failed": one the model's code fails on, or one never probed) is a
    ValueError; with "if_null": {"key": N, "rotate": [...], "still": [...]}:
    when cfg[N] is null, those lists instead (EXAONE 4: all its attention
    layers; Cohere 2: none; their attention tests the sliding window).
    A config that switches RoPE off (`switched_off`): no layer rotates."""
    if switched_off(cfg, e):  # (whatever the layers' types: the model passes none of them a RoPE)
        return [False] * positive_layer_count(cfg)
    rule = e.get("nope")
    if not rule:
        return None
    key = rule["key"]
    values = cfg.get(key)
    if rule["kind"] == "indices":
        return listed_layers(cfg, key, values)
    if values is None and rule.get("still") == [] and not rule.get("if_null"):
        return None  # (no layer type the model runs leaves RoPE out: the types its class derives all rotate)
    if not isinstance(values, list) or not values:
        raise ValueError(f"config: {key} is missing, empty or not a list; this model type decides by it which "
                         f"layers apply RoPE (its config class derives it from other keys when absent): pass the "
                         f"config as transformers saves it, AutoConfig.from_pretrained(path).to_dict()")
    n = cfg.get("num_hidden_layers")
    if isinstance(n, int) and not isinstance(n, bool):
        # (the model builds num_hidden_layers layers and reads entry i of each: a flags list may run past them.
        # A file's layer_types of another length was refused by its class's rule (config_checks.check_layer_types):
        # one of another length here is the class's default list, which the class derives anew for the file's
        # layers by keys vkrope does not read)
        if len(values) < n and rule["kind"] == "flags":
            raise ValueError(f"config: {key} has {len(values)} entries for num_hidden_layers {n}: transformers "
                             "fails on it (a layer past the list)")
        if rule["kind"] == "types" and len(values) != n:
            raise ValueError(f"config: {key} has {len(values)} entries for num_hidden_layers {n} (the class's "
                             "default list, where the file gives none): the class derives the list for these layers "
                             "by keys vkrope does not read; pass the config as transformers saves it, "
                             "AutoConfig.from_pretrained(path).to_dict()")
        values = values[:n]
    if rule["kind"] == "flags":
        return [bool(v) for v in values]
    cond = rule.get("if_null")
    if cond and cfg.get(cond["key"]) is None:
        rule = cond
    if "still" in rule:
        unknown = sorted({str(v) for v in values if v not in rule["rotate"] and v not in rule["still"]})
        if unknown:
            from . import config_rules  # noqa: PLC0415  (rope.py imports this module, and config_rules rope.py:
            # imported when refusing, which breaks the cycle)

            legacy = [old for old, new in config_rules.table()["legacy_layer_types"].items() if new == unknown[0]]
            named = f"{unknown[0]!r} (or a legacy name transformers reads so: {', '.join(map(repr, legacy))})" \
                if legacy else repr(unknown[0])
            raise ValueError(f"config: {key} names {named}, a layer type the model's code did not run "
                             f"(the model table ran each of transformers' layer types on one of its layers: "
                             f"{rule['rotate']} rotate, {rule['still']} do not): refused rather than guessed")
    return [v in rule["rotate"] for v in values]

"""A model's RoPE from its Hugging Face config.json (`from_hf`, `layers`,
`layer_types`, `parts`): how the model applies it comes from the model table
(vkrope/models/model_table.py), the rest as transformers 5 reads it; a model
transformers runs only with remote code, as llama.cpp's converter reads it
(gguf_convert.py)."""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
from typing import Any, overload

from ..errors import NoRopeLayers
from . import config_checks, gguf_convert, model_table
from .rope import MROPE_LAYOUTS, ModelRope, brief, check_angle
from ..runtime.dtypes import is_int
from .hf_load import entry_of, load_config, read_head_dim, remote_of
from .hf_per_layer import for_layer, one_config, overrides, per_layer
from .hf_rope_dict import (
    as_model_reads, check_null_original, check_siblings, checked_kind, layer_theta, pairs_interleaved, read_lengths,
    read_params, read_rotary_dim, rope_dict, rotary_rule,
)


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
    config = load_config(config)
    if remote_of(config, like) is not None:
        return ()
    _, e, _ = entry_of(config, like)
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
    config = load_config(config)  # (read once: a path is parsed here, not again below)
    remote = remote_of(config, like)
    if remote is not None:
        return gguf_convert.layer_types(*remote)
    _, e, cfg = entry_of(config, like)
    return tuple(sorted(per_layer(cfg, e) or ()))


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
    config = load_config(config)  # (read once: every layer's from_hf below takes the dict)
    remote = remote_of(config, like)
    if remote is not None:
        _part_entry({}, str(config.get("model_type")), part)
        return gguf_convert.layers(*remote, angle)
    outer, e, cfg = entry_of(config, like)
    e = _part_entry(e, like or str(outer.get("model_type")), part)  # (refused before the first layer is read)
    rotates = model_table.rope_layers(cfg, e)  # (a list of one entry a layer or more: its rules refuse an empty one)
    n = _layer_count(cfg, rotates) if rotates is not None else model_table.positive_layer_count(cfg)
    over = overrides(cfg, e)
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
    path or its folder as a str, bytes or os.PathLike, or a `PretrainedConfig`-like object with `to_dict()`).

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
    config = load_config(config)  # (read once: a path is parsed here, not again below)
    remote = remote_of(config, like)
    if remote is not None:
        _part_entry({}, str(config.get("model_type")), part)
        return _from_converter(remote, layer_type, layer, angle)
    outer, e, cfg = entry_of(config, like)
    model_type = like or str(outer.get("model_type"))
    e = _part_entry(e, model_type, part)
    cfg, ignored = one_config(cfg, e, model_type, lambda c, i: _read(c, e, model_type, None, i, angle, part))
    spec = _read(cfg, e, model_type, layer_type, layer, angle, part)
    return spec if spec is None or not ignored else dataclasses.replace(spec, ignored=spec.ignored + ignored)


def _read(cfg: dict, e: dict, model_type: str, layer_type: str | None, layer: int | None, angle: str,
          part: str | None, siblings: bool = True) -> ModelRope | None:
    """from_hf of text config `cfg` read as table entry `e` says (its arguments checked; with `siblings`, the
    other layer types' widths too where the class checks each: check_width_step)."""
    rotates, type_of_layer, unknown = _rotating(cfg, e, layer, layer_type, model_type)
    nested = per_layer(cfg, e)
    rotating, layer_type = _asked_layer(cfg, layer, layer_type, rotates, type_of_layer, nested is not None)
    if not rotating:
        return None
    text, cfg = cfg, for_layer(cfg, e, layer, layer_type)
    rope, where = rope_dict(cfg, nested, layer_type, e)
    kind, rope = checked_kind(rope, where, model_type, cfg, layer_type if nested is not None else None, e)
    if nested is not None:
        check_null_original(rope, where, kind, model_type)
    shape = e["by_layer_type"].get(layer_type if layer_type in e["by_layer_type"] else "*")
    if shape is None:
        raise ValueError(f"layer_type {layer_type!r}: the model table has no RoPE of {model_type!r} for it "
                         f"(it has {sorted(e['by_layer_type'])})")
    head_dim = read_head_dim(cfg, shape["head_dim"], model_type)
    params, ignored = read_params(rope, where, model_type, e, nested is not None, kind)
    kind, theta = as_model_reads(e, model_type, layer_type, kind, layer_theta(cfg, rope, where, e), params, ignored)
    rule = rotary_rule(e, layer_type, kind, shape["rotary"])
    rotary = read_rotary_dim(cfg, rope, kind, head_dim, rule, params, ignored)
    mpe, orig = read_lengths(cfg, rope, where, kind, params, model_type, ignored)
    section, mrope_layout = _mrope(rope, where, model_type, e, rotary, head_dim)
    try:
        spec = ModelRope(kind, head_dim, rotary, theta, tuple(sorted(params.items())), mpe, orig,
                         section, mrope_layout, pairs_interleaved(cfg, e), None, layer_type, angle, source="config",
                         ignored=tuple(ignored), model=model_type,
                         cos_layout=e["cos_layout"] if e["cos_layout"] in ("repeated", "single") else "halves",
                         nope_layers=None if unknown else tuple(i for i, r in enumerate(rotates or ()) if not r),
                         nope_why=(unknown or "").removeprefix("config: "),  # (the reading's words: the key)
                         **_part_fields(e, part))
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc) if str(exc).startswith("config: ") else f"config: {exc}") from None  # (said once)
    _check_parts(cfg, e, spec.rotary_dim, model_type)  # (after the spec's own checks of its widths)
    check_siblings(cfg, nested, layer_type, model_type, e, text)
    if config_checks.check_width_step(spec.rotary_dim, head_dim, model_type, layer_type) and siblings:
        for other in sorted(k for k in nested or {} if k != layer_type):  # (the class checks every layer type's)
            _read(text, e, model_type, other, None, angle, part, siblings=False)
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
    config_checks.check_mrope_sections(section, head_dim, model_type, where)
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

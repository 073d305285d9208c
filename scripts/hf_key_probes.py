"""Probes of the config keys beyond the RoPE keys' shapes, for
scripts/hf_config_rules.py (each run on transformers' own classes):

- `class_view` / `vkrope_view`: transformers' and vkrope's readings of one
  key given alone on a file both read alike (hf_config_rules.probe_keys):
  where transformers' then changes and vkrope's does not follow
  (Step 3.5's partial_rotary_factors, Falcon's n_embed) the key is refused
  given otherwise than the class's default (`unread`; for a key vkrope
  reads for other models, only given as the kind of value read otherwise:
  `kinds`); where the class ignores a key vkrope reads (UnlimitedOCR's
  head_dim) it is dropped (`ignored`);
- `modeling_reads`: the config attributes the modeling module reads whose
  names say RoPE (Molmo2's rope_scaling_layers) and vkrope does not read:
  refused where a file gives them otherwise than the class's default;
- `partial_dims`: the keys a class turns into the partial factor over its
  head_dim (MiniMax-M2's rotary_dim: partial = rotary_dim / head_dim);
- `last_layer_type`: the layer type a class forces on the last layer
  whatever the file's layer_types say (Gemma 4's full_attention);
- `text_fill`: the keys a composite class fills into the file's text_config
  where it lacks them (Voxtral's rope_theta 1e8 and head_dim 128), checked
  against building the text class on the merged keys.
"""

from __future__ import annotations

import copy
import inspect
import json
import re
import sys
from typing import Any, Callable

ROPE_NAME = re.compile(r"rope|rotary|theta|partial")
# Keys not probed alone: the composite's parts, and the RoPE keys whose shapes hf_config_rules.shapes probes.
SKIP = {"model_type", "text_config", "vision_config", "audio_config", "thinker_config", "talker_config",
        "rope_scaling", "rope_parameters", "layer_types", "per_layer_config", "architectures", "auto_map",
        "torch_dtype", "dtype", "transformers_version", "name_or_path", "_name_or_path"}
# The keys a fill is checked on besides the rope dict: what decides the rotated width.
HEAD_KEYS = ("head_dim", "hidden_size", "num_attention_heads", "partial_rotary_factor", "num_hidden_layers")
# Fields of a view compared: theta, rope type, factor, the partial factor the model applies, the cos / sin width.
FIELDS = ("theta", "rope_type", "factor", "partial", "width")


def candidates(cls: Any) -> list[str]:
    """The keys a config class's module names as strings, and its dataclass fields."""
    src = inspect.getsource(sys.modules[cls.__module__])
    names = set(re.findall(r"[\"']([a-z][a-z0-9_]{2,})[\"']", src)) | set(getattr(cls, "__dataclass_fields__", {}))
    return sorted(n for n in names - SKIP if not n.startswith("_"))


def probe_values(default: Any, layers: int) -> list[Any]:
    """Values of a key unlike its class default: twice an int, half a float, per-layer lists where none."""
    if isinstance(default, bool) or isinstance(default, (str, dict)):
        return []
    if isinstance(default, int):  # (two values: a key the class ignores is ignored for both)
        return [2 * default, max(default // 2, 1)] if default else [48]
    if isinstance(default, float):
        return [default / 2 if default else 0.375]
    if isinstance(default, list):
        nums = [x for x in default if isinstance(x, (int, float)) and not isinstance(x, bool)]
        return [[x * 2 for x in nums]] if nums and len(nums) == len(default) else []
    return [48, 0.375, [0.5] * layers, [20000.0] * layers]


def attr(obj: Any, name: str) -> Any:
    """An attribute of a built config, None where it has none or refuses to say (Gemma 4's per-layer head_dim
    raises AmbiguousGlobalPerLayerAttributeError, no AttributeError)."""
    try:
        return getattr(obj, name, None)
    except Exception:  # noqa: BLE001
        return None


def _jsonable(value: Any) -> Any:
    """`value` as JSON keeps it (its repr where JSON cannot)."""
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return repr(value)


def module_widths(text: Any, lts: list[str] | None, rotary_cls: Any) -> dict[Any, int | None]:
    """Per layer type (None: one RoPE) the width of the cos / sin transformers' text rotary module makes."""
    try:
        mod = rotary_cls(text)
    except Exception:  # noqa: BLE001
        return {lt: None for lt in lts or [None]}
    out = {}
    for lt in lts or [None]:
        inv = getattr(mod, f"{lt}_inv_freq", None) if lt else None
        inv = inv if inv is not None else getattr(mod, "inv_freq", None)
        out[lt] = None if inv is None else 2 * int(inv.numel())
    return out


def class_view(built: Callable[[dict], Any], kw: dict, lts: list[str] | None, e: dict, rotary_cls: Any,
               compared: Callable, read_factor: Callable, model_partial: Callable) -> dict[Any, tuple] | None:
    """Per layer type, transformers' reading of text config keys `kw` (FIELDS); None where the class raises."""
    try:
        text = built(kw)
    except Exception:  # noqa: BLE001
        return None
    made, widths = compared(text, lts), module_widths(text, lts, rotary_cls)
    try:
        return {lt: None if made[lt] is None else (made[lt].get("rope_theta"), made[lt].get("rope_type"),
                                                   read_factor(made[lt]), model_partial(e, lt, made[lt]), widths[lt])
                for lt in lts or [None]}
    except (TypeError, ValueError):  # (a partial factor its model cannot read: a list)
        return None


def angles_part(cfg: dict) -> str | None:
    """The part from_hf reads of a config where only the angles and widths matter (vkrope.models.hf.angles_part
    of its model type's table entry)."""
    from vkrope.models import model_table  # noqa: PLC0415
    from vkrope.models.hf import angles_part as of_entry  # noqa: PLC0415

    e = model_table.table()["models"].get(cfg.get("model_type"))
    return of_entry(e) if isinstance(e, dict) else None


def vkrope_view(cfg: dict, lts: list[str] | None) -> dict[Any, tuple | None]:
    """Per layer type, vkrope.from_hf's reading of a config file (FIELDS); None where it refuses."""
    import vkrope  # noqa: PLC0415

    out: dict[Any, tuple | None] = {}
    for lt in lts or [None]:
        try:
            r = vkrope.from_hf(copy.deepcopy(cfg), layer_type=lt, part=angles_part(cfg))
        except ValueError:
            out[lt] = None
            continue
        p = dict(r.params) if r is not None else {}
        out[lt] = None if r is None else (r.theta, r.rope_type, p.get("factor"), p.get("partial_rotary_factor", 1.0),
                                          r.rotary_dim)
    return out


def disagreement(t0: dict, v0: dict, t1: dict, v1: dict) -> list[str]:
    """The fields on which vkrope agreed with transformers without the key and does not with it (vkrope
    refusing is no disagreement)."""
    bad = []
    for lt, want in t1.items():
        got, want0, got0 = v1.get(lt), t0.get(lt), v0.get(lt)
        if want is None or got is None or want0 is None or got0 is None:
            continue
        bad += [f"{lt or ''}{'.' if lt else ''}{f}" for i, f in enumerate(FIELDS)
                if want0[i] == got0[i] and want[i] != got[i]]
    return bad


FILL_PROBES = [{}, {"hidden_size": 1536}, {"rope_theta": 123456.0}, {"head_dim": 64, "hidden_size": 2048},
               {"rope_parameters": {"rope_type": "default"}},
               {"rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 4321.0}},
               {"rope_parameters": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6}},
               {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}, {"max_position_embeddings": 5000}]


def text_fill(outer_cls: Any, text_cls: Any, keys: set[str], built_outer: Callable[[dict], Any],
              compared: Callable, lts: list[str] | None) -> dict[str, Any] | None:
    """The RoPE keys (`keys`) a composite class fills into a file's text_config where it lacks them (its
    sub_configs_defaults' init_kwargs), where building the outer class on a text_config equals building its
    text class on those keys merged under the file's, for a few text_configs; None where there are none, or
    where the merge does not explain what the class builds."""
    spec = (getattr(outer_cls, "sub_configs_defaults", None) or {}).get("text_config")
    init = getattr(spec, "init_kwargs", None)
    if not isinstance(init, dict):
        return None
    fill = {k: copy.deepcopy(v) for k, v in init.items() if k in keys}
    if not fill:
        return None
    for kw in FILL_PROBES:
        try:
            made = built_outer(kw)
            own = text_cls(**{**copy.deepcopy(fill), **copy.deepcopy(kw)})
        except Exception:  # noqa: BLE001
            return None
        if compared(made, lts) != compared(own, lts) or any(attr(made, k) != attr(own, k)
                                                            for k in (*HEAD_KEYS, *fill, "rope_parameters")):
            return None  # (FastVLM's and idefics2's classes preset a text config only where the file gives none)
    return _jsonable(fill)


def fill_any_type(built_outer: Callable[[dict], Any], own_type: str | None, fill: dict) -> bool:
    """Whether a composite class fills its keys into a file's text_config that names another model type than its
    own too (Voxtral's merges the dict whatever the type; Fuyu's does not)."""
    other = "mistral" if own_type == "llama" else "llama"
    try:
        made = built_outer({"model_type": other})
    except Exception:  # noqa: BLE001
        return False
    rp = attr(made, "rope_parameters") or {}
    return all((rp.get("rope_theta") if k == "rope_theta" else attr(made, k)) == v for k, v in fill.items())


def modeling_reads(cls: Any, read: set[str], built_bare: Any) -> dict[str, Any]:
    """{key: the class's default (as a file would give it), and whether its bare config lists every layer}
    of each config attribute the modeling module reads (`config.K`, `getattr(config, "K"`) whose name says
    RoPE and vkrope does not read (Molmo2's rope_scaling_layers)."""
    from hf_probe import modeling_module  # noqa: PLC0415  (torch)

    module = modeling_module(cls)  # (its own, or the one of the model class AutoModel builds for it)
    if module is None:
        return {}
    src = inspect.getsource(module)
    names = set(re.findall(r"config\.([a-z]\w+)", src)) | set(re.findall(r"getattr\(\w*config, [\"'](\w+)", src))
    out = {}
    fields = getattr(cls, "__dataclass_fields__", {})
    for name in sorted(n for n in names - read - SKIP if ROPE_NAME.search(n)):
        field = fields.get(name)
        default = None if field is None or not isinstance(field.default, (int, float, str, type(None))) \
            else field.default
        bare = attr(built_bare, name)
        n = attr(built_bare, "num_hidden_layers")
        out[name] = {"default": default, "all_layers": isinstance(n, int) and bare == list(range(n))}
    return out


def last_layer_type(built: Callable[[dict], Any]) -> str | None:
    """The layer type a class sets on the last layer whatever a file's layer_types give there (Gemma 4's
    full_attention), where it does so on two lists of each length; else None."""
    try:
        bare = list(attr(built({}), "layer_types") or [])
    except Exception:  # noqa: BLE001
        return None
    last = bare[-1] if bare else None
    other = next((t for t in bare if t != last), None)
    if other is None or not isinstance(last, str):
        return None
    for lts in ([*bare[:-1], other], [other, other, other]):
        try:
            made = built({"layer_types": lts, "num_hidden_layers": len(lts)})
        except Exception:  # noqa: BLE001
            return None
        if list(attr(made, "layer_types") or []) != [*lts[:-1], last]:
            return None
    return last


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description="The key probes of scripts/hf_config_rules.py (a module of it: run that "
                                        "script; this one does nothing alone).").parse_args()
    sys.exit("scripts/hf_key_probes.py is a module of scripts/hf_config_rules.py: run that script")

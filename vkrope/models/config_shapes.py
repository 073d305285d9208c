"""The shapes a config.json may give its RoPE keys in (rope_scaling,
rope_parameters, each theta key, the partial factor: absent, null, empty, a
dict, per layer type, with the legacy `type`, ...; `signature`), those
scripts/hf_config_rules.py probes on every model type (`probed`), and the
refusal of a shape on which vkrope's reading differed from the config
class's or that was never probed (`check_shape`; the rules table's
`refused`, config_rules.py)."""

from __future__ import annotations

from typing import Any

from . import config_rules
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
    for key in ("rope_scaling", "rope_parameters", *keys, *config_rules.PARTIAL_KEYS):
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
    rules = config_rules.rules_of(model_type)
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
    named = ("rope_scaling", "rope_parameters", *rules["keys"], *config_rules.PARTIAL_KEYS)
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

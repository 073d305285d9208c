"""Which decoder layers run a part of the attention that rotates on its own
(the model table's `parts.<part>.runs`, written by scripts/hf_model_table.py),
found by running transformers' code.

GLM-5's attention builds its sparse indexer only where
`config.indexer_types[layer_idx]` is not "shared" (a shared layer reuses the
previous full layer's selection): such a layer rotates its attention and no
indexer, so `from_hf(part="indexer", layer=i)` has no RoPE to give there.
The rule is read from the model's own code, never listed by hand:

- the keys: each list of the text config with one string a layer whose entry
  the modeling file compares with a string (`config.K[layer_idx] == "v"`),
  each such value given to every other layer after the first (a shared layer
  needs a full one before it) and the model run: the values whose layers
  ran the part ("run") and those whose layers did not ("skip");
- what the config class derives the list from where a file gives none (the
  keyword arguments its source reads, `kwargs.get("index_topk_freq")`), each
  kept where giving it, alone or beside another kept one, changes the list:
  from_hf refuses a per-layer reading of a file that gives one of them without
  the list (the class's arithmetic is its code, not vkrope's).
"""

from __future__ import annotations

import inspect
import re
from typing import Any

PROBE_LAYERS = 4  # the layers a probe of a per-layer key builds: a full one first, then the value, alternating
TRIALS = (2, 3, "FS", "SF")  # values given to a keyword the config class reads, to see whether the list follows it


def compared_values(model_type: str, text: dict) -> list[tuple[str, str]]:
    """(key, value) pairs where the modeling file compares an entry of a per-layer list of the text config
    with a string, the attention's own layer_types left to the table's `nope` rule."""
    import hf_probe  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415

    cfg = AutoConfig.for_model(model_type)
    module = hf_probe.modeling_module(cfg.get_text_config(decoder=True)) or hf_probe.modeling_module(cfg)
    if module is None:
        return []
    src = inspect.getsource(module)
    found = re.findall(r"config\.(\w+)\[[^\]]*\]\s*[!=]=\s*[\"'](\w+)[\"']", src)
    return sorted({(k, v) for k, v in found if k != "layer_types" and isinstance(text.get(k), list) and text[k]
                   and all(isinstance(x, str) for x in text[k])})


def ran_part(facts: dict, part: str) -> list[bool] | None:
    """Per layer of a probe whether `part` rotated there (None where the probe did not run every layer, or
    the attention did not rotate on one: the question is the part's alone)."""
    layers = sorted(facts.get("layers") or [], key=lambda l: l["index"])
    if "why" in facts or not layers or not all(l["rotates"] for l in layers):
        return None
    return [part in (l.get("parts") or {}) for l in layers]


def derived_from(text_cls: Any, key: str) -> list[str]:
    """The keyword arguments the config class reads (its source's `kwargs.get` / `kwargs.pop`) that change
    the list `key` it derives where a file gives none: each tried alone, then beside each one found."""
    try:
        src = inspect.getsource(text_cls)
    except (OSError, TypeError):
        return []
    names = sorted(set(re.findall(r"kwargs\.(?:get|pop)\(\s*[\"'](\w+)[\"']", src)))

    def made(**kw: Any) -> Any:
        try:
            return getattr(text_cls(num_hidden_layers=PROBE_LAYERS, **kw), key, None)
        except Exception:  # noqa: BLE001  (a value the class refuses: no answer from it)
            return None

    base = made()
    moving = {n: v for n in names for v in TRIALS if made(**{n: v}) not in (None, base)}
    for n in names:
        for other, v0 in list(moving.items()):
            if n not in moving and any(made(**{other: v0, n: v}) not in (None, made(**{other: v0}))
                                       for v in TRIALS):
                moving[n] = TRIALS[0]
    return sorted(moving)


def _values_ran(model_type: str, facts: dict, part: str, key: str, value: str,
                probe: Any) -> tuple[list, list[bool] | None, dict]:
    """(the key's values per layer, whether each layer ran `part`, the probe): the default config's own where
    its list holds several values (HY-V4's full and shared layers), else a probe giving `value` to every
    other layer after the first."""
    default = facts["text"][key]
    if len(set(default)) > 1:
        ran = ran_part(facts, part)
        return default[: len(ran or [])], ran, facts
    values = [default[0] if i % 2 == 0 else value for i in range(PROBE_LAYERS)]
    try:
        again = probe(model_type, cut(facts, key, values))
    except Exception:  # noqa: BLE001  (the model does not build with it: no answer from this value)
        return values, None, {}
    return values, ran_part(again, part), again


def absent_runs(text_cls: Any, key: str, run: set) -> bool:
    """Whether the config class, given neither the list nor a key it derives it from, fills every layer with a
    value that runs the part (GLM-5's all "full"; HY-V4's default schedule shares some)."""
    try:
        return all(set(getattr(text_cls(num_hidden_layers=n), key)) <= run for n in (1, 4, 7, 64))
    except Exception:  # noqa: BLE001  (a class that builds no list so: from_hf asks for the saved config)
        return False


def cut(facts: dict, key: str, values: list) -> dict:
    """The overrides of a probe of PROBE_LAYERS layers with `key` = `values`: every other list of the text
    config with one entry a layer cut to as many (from_hf, which the table checks on the probe's config,
    refuses a layer_types of another length)."""
    text = facts["text"]
    n = text.get("num_hidden_layers")
    lists = {k: v[:PROBE_LAYERS] for k, v in text.items() if isinstance(v, list) and len(v) == n}
    return {**lists, **facts.get("overrides", {}), "num_hidden_layers": PROBE_LAYERS, key: values}


def first_runs(model_type: str, facts: dict, rule: dict, probe: Any) -> bool:
    """Whether the model fails where its first layer skips the part (GLM-5's shared indexer layer reuses the
    selection of a full one before it: the first has none), each skip value tried there."""
    run = sorted(rule["run"])[0]
    for value in sorted(rule["skip"]):
        values = [value if i % 2 == 0 else run for i in range(PROBE_LAYERS)]
        try:
            again = probe(model_type, cut(facts, rule["key"], values))
        except Exception:  # noqa: BLE001  (the model does not build so: it fails there too)
            return True
        if "why" in again:
            return True
    return False


def runs_rule(model_type: str, facts: dict, part: str, text_cls: Any, probe: Any) -> tuple[dict, dict] | None:
    """({"key", "run", "skip", "derived_from", "absent_runs"}, a probe that showed it) for a part some layers
    do not run by a per-layer key of the config; None where every layer runs it whatever those keys say.
    `probe`: hf_model_table.probe (cached)."""
    rules: dict[str, tuple[dict, dict]] = {}
    for key, value in compared_values(model_type, facts["text"]):
        values, ran, again = _values_ran(model_type, facts, part, key, value, probe)
        if ran is None or all(ran):
            continue
        by_value: dict[str, set] = {}
        for v, r in zip(values, ran):
            by_value.setdefault(v, set()).add(r)
        if any(len(r) > 1 for r in by_value.values()):
            if again is facts:
                continue  # (the default config's list does not say which layers ran it: another key's may)
            raise SystemExit(f"{model_type}: {part} ran on layers {ran} with {key} = {values}: no rule by value")
        rule, _ = rules.setdefault(key, ({"key": key, "run": set(), "skip": set(),
                                          "derived_from": derived_from(text_cls, key)}, again))
        for v, (r,) in by_value.items():
            rule["run" if r else "skip"].add(v)
    if len(rules) > 1:
        raise SystemExit(f"{model_type}: which layers run its {part} follows {sorted(rules)}: no one rule")
    if not rules:
        return None
    rule, again = next(iter(rules.values()))
    rule["absent_runs"] = absent_runs(text_cls, rule["key"], rule["run"])
    rule["first_runs"] = first_runs(model_type, facts, rule, probe)
    return {**rule, "run": sorted(rule["run"]), "skip": sorted(rule["skip"])}, again


def main() -> None:
    """Print each model type's rule from its cached probe (hf_model_table.py writes them into the table)."""
    import argparse  # noqa: PLC0415
    import pickle  # noqa: PLC0415
    import sys  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("probes", help="the --probes folder of scripts/hf_model_table.py")
    ap.add_argument("types", nargs="+", help="model types whose layers rotate in parts (glm_moe_dsa)")
    ap.add_argument("--part", default="indexer")
    args = ap.parse_args()
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import hf_model_table  # noqa: PLC0415
    from transformers import AutoConfig  # noqa: PLC0415

    hf_model_table.CACHE = args.probes
    for t in args.types:
        with open(f"{args.probes}/{t}.pkl", "rb") as f:
            facts = pickle.load(f)
        text_cls = type(AutoConfig.for_model(t).get_text_config(decoder=True))
        rule = runs_rule(t, facts, args.part, text_cls, hf_model_table.probe)
        print(t, rule and rule[0])


if __name__ == "__main__":
    main()

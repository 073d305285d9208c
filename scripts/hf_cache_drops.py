"""Regenerate vkrope/data/hf_cache_drops.json: the model types whose
generation in transformers drops its KV cache when the sequence first grows
past original_max_position_embeddings, and what it runs then: every position
again ("recomputes": Phi-3's switch to longrope's long factors, each key
cached before rotated anew in that one call), or the newest tokens alone,
with no cache from then on ("drops": Phi-4-multimodal in 5.25, whose
override keeps generate()'s next_sequence_length).

    python scripts/hf_cache_drops.py [--out vkrope/data/hf_cache_drops.json]

Needs torch and the transformers release the model table names (not vkrope's
dependencies: run it from a venv that has them, as scripts/hf_model_table.py).
For every model type of transformers, each class of its modeling module whose
prepare_inputs_for_generation is not GenerationMixin's is run (unbuilt: its
config the type's default one with a longrope `rope_parameters` and
original_max_position_embeddings = ORIG set on it) with GenerationMixin's own
method replaced by one that returns what it is given, at three steps: a
cache of ORIG - 1, ORIG and ORIG + 1 tokens and one token more, as generate()
calls it (next_sequence_length 1). A class that changes either at the second
step only is written, with what it does; `ModelRope.recompute_at`
(vkrope/models/rope.py) tells a decode loop where to run the whole sequence
again. A class changing them at another step stops the script, and so does
one whose method raises on the stub and reads original_max_position_embeddings
(its rule is not known: read its code and extend this probe); those that raise
and do not (most overrides need a built model) are listed as unprobed."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "vkrope", "data", "hf_cache_drops.json")
ORIG = 8  # the probe's original_max_position_embeddings
STEPS = ((ORIG - 1, ORIG), (ORIG, ORIG + 1), (ORIG + 1, ORIG + 2))  # (tokens cached, tokens in input_ids)


class _Cache:
    """A stand-in KV cache of `n` tokens (the overrides ask its length only)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.n

    def __len__(self) -> int:
        return 1


def _config(model_type: str) -> Any:
    """The type's default config with a longrope original length set on it (unvalidated: a stub)."""
    from transformers import AutoConfig  # noqa: PLC0415

    config = AutoConfig.for_model(model_type)
    for c in {id(c): c for c in (config, config.get_text_config(decoder=True))}.values():
        object.__setattr__(c, "original_max_position_embeddings", ORIG)
        object.__setattr__(c, "rope_parameters", {"rope_type": "longrope", "rope_theta": 10000.0,
                                                   "original_max_position_embeddings": ORIG,
                                                   "short_factor": [1.0], "long_factor": [2.0]})
    return config


def step_kinds(cls: type, config: Any) -> tuple[str, ...]:
    """What `cls.prepare_inputs_for_generation` passes on at each of STEPS: "kept" (the cache, the newest token
    to run), "recomputes" (no cache, every position to run), "drops" (no cache, the newest token alone), or
    what else it passes (CPM-Ant passes its cache and runs all it is given, at every step alike)."""
    import torch  # noqa: PLC0415

    out = []
    for cached, n in STEPS:
        obj = cls.__new__(cls)  # (unbuilt: the override reads its config only)
        object.__setattr__(obj, "config", config)
        cache, nxt = obj.prepare_inputs_for_generation(
            torch.zeros((1, n), dtype=torch.long), cache=_Cache(cached), next_sequence_length=1,
            attention_mask=torch.ones((1, n), dtype=torch.long))
        out.append("kept" if cache is not None and nxt == 1 else "recomputes" if cache is None and nxt is None
                   else "drops" if cache is None and nxt == 1 else f"cache {type(cache).__name__}, next {nxt!r}")
    return tuple(out)


def overriding(model_type: str, base: Any) -> list[type]:
    """The classes of the type's modeling module whose prepare_inputs_for_generation is not `base`
    (GenerationMixin's), their own or inherited."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name  # noqa: PLC0415

    name = model_type_to_module_name(model_type)
    try:
        mod = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    except ImportError:  # (a type with no modeling module of that name: a sub-config's, tokenizer only, or one
        _refuse_mapped_overrides(model_type, base)  # running another type's code, checked there)
        return []
    return [c for c in vars(mod).values() if isinstance(c, type) and c.__module__ == mod.__name__
            and getattr(c, "prepare_inputs_for_generation", base) is not base]


def _refuse_mapped_overrides(model_type: str, base: Any) -> None:
    """Stop where a model type with no modeling file of its own runs another type's module (Exaone's LlamaModel:
    hf_probe.mapped_model) whose classes override prepare_inputs_for_generation: `measure` keys a class by its
    config's model type, which would name the other type."""
    import hf_probe  # noqa: PLC0415
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING  # noqa: PLC0415

    try:
        mapped = hf_probe.mapped_model(CONFIG_MAPPING[model_type])
    except (KeyError, ImportError, ValueError):
        return
    if mapped is not None and overriding(mapped.config_class.model_type, base):
        raise SystemExit(f"{model_type} runs {mapped.__module__}, whose classes override "
                         f"prepare_inputs_for_generation: extend this probe to key them by {model_type!r}")


def _kind_of(t: str, cls: type, config: Any) -> str | None:
    """The class's kind at the switch ("recomputes" / "drops"), None where it keeps its cache throughout or
    raises on the stub without reading the original length; SystemExit where its rule is not known."""
    try:
        kinds = step_kinds(cls, config)
    except Exception as exc:  # noqa: BLE001  (most overrides need a built model: unprobed, said)
        if "original_max_position_embeddings" in inspect.getsource(cls.prepare_inputs_for_generation):
            raise SystemExit(f"{t}: {cls.__name__} reads the original length and raised on the probe ({exc!r}): "
                             "read its code and extend this probe") from exc
        UNPROBED.add(f"{cls.__module__.removeprefix('transformers.models.')}.{cls.__name__}")
        return None
    if len(set(kinds)) == 1:
        return None  # (the same at every step: nothing switches)
    if kinds[0] != "kept" or kinds[2] != "kept" or kinds[1] not in ("recomputes", "drops"):
        raise SystemExit(f"{t}: {cls.__name__} does {kinds} at {STEPS}: read its code and extend this probe")
    return kinds[1]


UNPROBED: set[str] = set()  # "module.Class" of the overrides that raised on the stub (not reading the length)


def measure(model_types: list[str]) -> dict[str, str]:
    """{model type: "recomputes" / "drops"} of the types whose classes change the cache at the switch (the
    type of the config the class takes: sub-configs' types share their module)."""
    from transformers.generation.utils import GenerationMixin  # noqa: PLC0415

    def passed_on(self: Any, *args: Any, cache: Any = None, next_sequence_length: Any = None, **kw: Any) -> Any:
        return cache, next_sequence_length

    found: dict[str, str] = {}
    base = GenerationMixin.prepare_inputs_for_generation
    classes = {t: overriding(t, base) for t in model_types}
    GenerationMixin.prepare_inputs_for_generation = passed_on  # type: ignore[method-assign]
    try:
        for t, found_classes in classes.items():
            config = _config(t) if found_classes else None
            for cls in found_classes:
                kind = _kind_of(t, cls, config)
                if kind is not None:
                    found[getattr(cls.config_class, "model_type", t)] = kind
    finally:
        GenerationMixin.prepare_inputs_for_generation = base  # type: ignore[method-assign]
    return dict(sorted(found.items()))


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, HERE)
    import hf_model_table  # noqa: PLC0415

    def run() -> tuple[dict, dict]:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES  # noqa: PLC0415

        found = measure(sorted(CONFIG_MAPPING_NAMES))
        return found, {"drops_at": "original_max_position_embeddings + 1", "unprobed": sorted(UNPROBED)}

    return hf_model_table.small_table_main(__doc__, OUT, "scripts/hf_cache_drops.py", argv, run)


if __name__ == "__main__":
    sys.exit(main())

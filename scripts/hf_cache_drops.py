"""Regenerate vkrope/data/hf_cache_drops.json: the model types whose
generation in transformers drops its KV cache when the sequence first grows
past original_max_position_embeddings and runs every position again (Phi-3's
switch to longrope's long factors: each key cached before is rotated anew,
in that one call).

    python scripts/hf_cache_drops.py [--out vkrope/data/hf_cache_drops.json]

Needs torch and the transformers release the model table names (not vkrope's
dependencies: run it from a venv that has them, as scripts/hf_model_table.py).
For every model type of transformers, each class of its modeling module whose
own `prepare_inputs_for_generation` reads original_max_position_embeddings
(the other overrides, 50 of 53 in 5.25, cannot drop by it) is run (unbuilt: its config the
type's default one with a longrope `rope_parameters` and
original_max_position_embeddings = ORIG set on it) with GenerationMixin's own
method replaced by one that returns the cache it is given, at three steps: a
cache of ORIG - 1, ORIG and ORIG + 1 tokens and one token more. A type whose
classes drop the cache at the second step only is written;
`ModelRope.recompute_at` (vkrope/models/rope.py) says so to a decode loop. A
class whose override raises on the stub, or drops it at another step, stops
the script (its rule is not known: read its code and extend this probe)."""

from __future__ import annotations

import argparse
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
DROPS = (False, True, False)  # Phi-3's rule at STEPS: the first step past ORIG only


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


def drops(cls: type, config: Any) -> tuple[bool, ...]:
    """Whether `cls.prepare_inputs_for_generation` passes no cache on, at each of STEPS."""
    import torch  # noqa: PLC0415

    out = []
    for cached, n in STEPS:
        obj = cls.__new__(cls)  # (unbuilt: the override reads its config only)
        object.__setattr__(obj, "config", config)
        got = obj.prepare_inputs_for_generation(torch.zeros((1, n), dtype=torch.long), cache=_Cache(cached),
                                                attention_mask=torch.ones((1, n), dtype=torch.long))
        out.append(got is None)
    return tuple(out)


def overriding(model_type: str) -> list[type]:
    """The classes of the type's modeling module whose own prepare_inputs_for_generation reads
    original_max_position_embeddings."""
    from transformers.models.auto.configuration_auto import model_type_to_module_name  # noqa: PLC0415

    name = model_type_to_module_name(model_type)
    try:
        mod = importlib.import_module(f"transformers.models.{name}.modeling_{name}")
    except ImportError:  # (a type with no modeling module of that name: a sub-config's, or tokenizer only)
        return []
    return [c for c in vars(mod).values() if isinstance(c, type) and c.__module__ == mod.__name__
            and "prepare_inputs_for_generation" in vars(c)
            and "original_max_position_embeddings" in inspect.getsource(vars(c)["prepare_inputs_for_generation"])]


def measure(model_types: list[str]) -> list[str]:
    """The model types whose classes drop the cache as Phi-3's does (DROPS at STEPS)."""
    from transformers.generation.utils import GenerationMixin  # noqa: PLC0415

    def passed_cache(self: Any, *args: Any, cache: Any = None, **kwargs: Any) -> Any:
        return cache

    found, base = [], GenerationMixin.prepare_inputs_for_generation
    GenerationMixin.prepare_inputs_for_generation = passed_cache  # type: ignore[method-assign]
    try:
        for t in model_types:
            classes = overriding(t)
            if not classes:
                continue
            config = _config(t)
            seen = {cls.__name__: drops(cls, config) for cls in classes}
            odd = {k: v for k, v in seen.items() if any(v) and v != DROPS}
            if odd:
                raise SystemExit(f"{t}: {odd} drop the cache at other steps than {STEPS} -> {DROPS}: read the code")
            # (the type of the config the class takes: the sub-configs' types share its module)
            found += [getattr(cls.config_class, "model_type", t) for cls in classes if seen[cls.__name__] == DROPS]
    finally:
        GenerationMixin.prepare_inputs_for_generation = base  # type: ignore[method-assign]
    return sorted(set(found))


def main(argv: list[str] | None = None) -> int:
    import warnings  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    sys.path.insert(0, HERE)
    import hf_model_table  # noqa: PLC0415
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES  # noqa: PLC0415

    found = measure(sorted(CONFIG_MAPPING_NAMES))
    hf_model_table.write_small_table(args.out, "scripts/hf_cache_drops.py",
                                     {"drops_at": "original_max_position_embeddings + 1"}, found)
    return 0


if __name__ == "__main__":
    sys.exit(main())

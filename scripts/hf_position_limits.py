"""Regenerate vkrope/data/hf_position_limits.json: the model types whose
rotary module in transformers cannot rotate a position at or past its
config's max_position_embeddings (GPT-J and CodeGen index a fixed sin / cos
table of that many rows: IndexError on the CPU, a device assert on a GPU).

    python scripts/hf_position_limits.py [--out vkrope/data/hf_position_limits.json]

Needs torch and the transformers release the model table names (not vkrope's dependencies: run it from a
venv that has them, as scripts/hf_model_table.py). For every model type the
model table (vkrope/data/hf_models.json) reads ("ok"), it builds the text
rotary module of the default config and runs it at position
max_position_embeddings - 1 and at max_position_embeddings: a type whose
module runs the first and raises on the second is written, with that
default count of rows (the limit of a file that gives none), and
`vkrope.from_hf` refuses its positions past the limit (where the model's
own code has no answer) instead of rotating them."""

from __future__ import annotations

import inspect
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TABLE = os.path.join(ROOT, "vkrope", "data", "hf_models.json")
OUT = os.path.join(ROOT, "vkrope", "data", "hf_position_limits.json")


def failure_at(module, text, position: int) -> Exception | None:
    """What the rotary module raises for one token at `position` (None: it returned cos / sin); a module
    that takes a layer type gets the config's first."""
    import torch  # noqa: PLC0415

    pos = torch.tensor([[position]], dtype=torch.int64)
    layer_types = getattr(text, "layer_types", None)
    takes = "layer_type" in inspect.signature(module.forward).parameters
    kwargs = {"layer_type": layer_types[0]} if takes and layer_types and isinstance(getattr(module, "rope_type", None), dict) else {}
    try:
        with torch.no_grad():
            module(torch.zeros(1, dtype=torch.float32), pos, **kwargs)
    except Exception as exc:  # noqa: BLE001  (the caller tells an index past a table from the rest)
        return exc
    return None


def limited(model_type: str) -> int | None:
    """The default config's max_position_embeddings where the type's text rotary module runs below it and not
    at it; None for any other type."""
    import hf_model_table  # noqa: PLC0415

    text, cls = hf_model_table.text_rotary(model_type)
    mpe = getattr(text, "max_position_embeddings", None)
    if cls is None or not isinstance(mpe, int) or mpe < 1:
        return None
    try:
        module = cls(text)
    except Exception:  # noqa: BLE001  (a module the default config cannot build: the model table says why)
        return None
    fails = failure_at(module, text, mpe - 1) is None and isinstance(failure_at(module, text, mpe), IndexError)
    return mpe if fails else None


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, HERE)
    import hf_model_table  # noqa: PLC0415

    def run() -> tuple[dict, dict]:
        with open(TABLE, encoding="utf-8") as f:
            models = json.load(f)["models"]
        found = {t: rows for t in sorted(models) if models[t].get("status") == "ok" and (rows := limited(t))}
        return found, {"limit": "max_position_embeddings"}

    return hf_model_table.small_table_main(__doc__, OUT, "scripts/hf_position_limits.py", argv, run)


if __name__ == "__main__":
    sys.exit(main())

"""A model's RoPE from its configuration: `from_hf` reads a Hugging Face
config.json through the model table, `from_gguf` llama.cpp's GGUF
metadata; both give a `ModelRope` (rope.py), which computes the inverse
frequencies as transformers 5's `modeling_rope_utils` does.

Modules: rope.py (`ModelRope`), rope_types.py (every rope type's
frequencies, a table of small functions), hf.py (config.json, with
hf_load.py, hf_per_layer.py and hf_rope_dict.py; through config_rules.py:
each config class's conversion of a file's keys, config_shapes.py and
config_checks.py its refusals, and model_table.py: the
model table, vkrope/data/hf_models.json, written by
scripts/hf_model_table.py), gguf.py (GGUF: gguf_file.py its header,
gguf_split.py a split model's files, gguf_program.py llama.cpp's hparams
loader as its table states it, gguf_layers.py llama.cpp's per-layer
rules, gguf_context.py its context's arithmetic), gguf_convert.py and
pyconv.py (remote-code configs read through llama.cpp's converter),
chart.py (`vkrope config --plot`).
These are data the ops read: they import no op, Vulkan module nor any
runtime module but runtime/dtypes.py.
"""

from .gguf import from_gguf
from .hf import from_hf, layer_types, layers, parts
from .rope import ROPE_TYPES, ModelRope

__all__ = ["ModelRope", "from_hf", "from_gguf", "layer_types", "layers", "parts", "ROPE_TYPES"]

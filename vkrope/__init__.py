"""vkrope: rotary position embedding on any Vulkan device, from numpy.

    import vkrope
    y = vkrope.apply(x, freqs)                                   # SAM2 / EdgeTAM interleaved RoPE
    y = vkrope.rotary_embedding(x, cos, sin, position_ids)      # ONNX RotaryEmbedding-23
    q, k = vkrope.apply_rotary_emb(xq, xk, freqs_cos, freqs_sin)  # ExecuTorch's LLM op
    q = vkrope.rope_and_cache(q, k, v, k_cache, v_cache, spec, pos)  # a decode step: RoPE + KV-cache write
    y = vkrope.apply_nd(x, vkrope.NdFreqs((16, 56, 56)), ids)   # N-D axial RoPE (Flux, Wan, ...)
    rope = vkrope.from_hf("config.json")                        # a model's RoPE from its config
    q, k = vkrope.apply_rotary_pos_emb(q, k, rope, position_ids)  # ... as transformers applies it

See README.md and docs/ (the guides, docs/errors.md, docs/performance.md)
for the full contract, the errors and the measured speed.
"""

import typing as _typing

import numpy as _np

from .api import (
    apply, apply_nd, apply_rotary_emb, apply_rotary_emb_hf, apply_rotary_pos_emb, close_default_device,
    default_device, rope_and_cache, rotary_embedding, shift_cache,
)
from .models import ModelRope, from_gguf, from_hf
from .models import layer_types as hf_layer_types
from .models import layers as hf_layers
from .models import parts as hf_parts
from .yarn import YaRN
from .freqs import AxialFreqs, InvFreqs, RopeFreqs
from .nd_freqs import NdFreqs, grid_ids
from .runtime.array import DeviceArray
from .device import Device, devices
from .errors import (
    DeviceClosedError,
    DeviceLostError,
    DeviceTimeoutError,
    NoRopeLayers,
    OutOfDeviceMemoryError,
    UnsupportedFeatureError,
    VkropeError,
    VulkanError,
    VulkanUnavailableError,
)
from .reference import apply_reference, axial_freqs
from .runtime.dtypes import ML_NAMES as _ML_NAMES
from .runtime.dtypes import ml_dtype as _ml_dtype

# (declared, not assigned: the module's __getattr__ gives each on first use)
bfloat16: "type[_np.generic]"
"""The bfloat16 scalar type (ml_dtypes', which numpy, JAX and ONNX share): `x.astype(vkrope.bfloat16)`.
ml_dtypes is imported when it is first asked for."""
float8_e4m3fn: "type[_np.generic]"
"""A KV cache's fp8 scalar type (ml_dtypes'): `np.zeros(shape, vkrope.float8_e4m3fn)`."""
float8_e5m2: "type[_np.generic]"
"""A KV cache's other fp8 scalar type (ml_dtypes')."""


if not _typing.TYPE_CHECKING:  # (type checkers see the declarations above, and flag any other name as missing)
    def __getattr__(name: str) -> _typing.Any:
        """`vkrope.bfloat16`, `vkrope.float8_e4m3fn`, `vkrope.float8_e5m2`: ml_dtypes' scalar types, imported
        on first use (runtime/dtypes.py: ML_NAMES)."""
        if name in _ML_NAMES:
            globals()[name] = value = _ml_dtype(name).type
            return value
        raise AttributeError(f"module 'vkrope' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names, the lazy ones included (tab completion, the docs' inspection)."""
    return sorted({*globals(), *_ML_NAMES})


__version__ = "0.1.0"

__all__ = [
    "apply",
    "rotary_embedding",
    "apply_rotary_emb",
    "apply_rotary_emb_hf",
    "rope_and_cache",
    "shift_cache",
    "apply_nd",
    "apply_rotary_pos_emb",
    "from_hf",
    "from_gguf",
    "hf_layer_types",
    "hf_layers",
    "hf_parts",
    "ModelRope",
    "InvFreqs",
    "RopeFreqs",
    "AxialFreqs",
    "NdFreqs",
    "grid_ids",
    "YaRN",
    "apply_reference",
    "axial_freqs",
    "Device",
    "DeviceArray",
    "devices",
    "default_device",
    "close_default_device",
    "VkropeError",
    "VulkanUnavailableError",
    "VulkanError",
    "OutOfDeviceMemoryError",
    "DeviceLostError",
    "DeviceTimeoutError",
    "DeviceClosedError",
    "UnsupportedFeatureError",
    "NoRopeLayers",
    "bfloat16",
    "float8_e4m3fn",
    "float8_e5m2",
    "__version__",
]

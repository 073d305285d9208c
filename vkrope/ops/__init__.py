"""The operators, one module each: argument check, plan for a device's
limits, launches over bound resources, per-call tables, float64 reference.
They know no Vulkan; vkrope/runtime runs their plans."""

from typing import Any

import numpy as np


class TensorRequest:
    """What every operator's request says about its tensor `x` (a numpy
    array or DeviceArray): the shape and dtype of x and of the result."""

    x: Any

    @property
    def shape(self) -> tuple[int, ...]:
        """Shape of x (and of the result)."""
        return tuple(self.x.shape)

    @property
    def dtype(self) -> np.dtype:
        """dtype of x (and of the result)."""
        return np.dtype(self.x.dtype)

    def arrays(self) -> list[tuple[str, Any, str]]:
        """(argument name, value, "read" or "write") of every tensor and table
        argument, x first; values may be numpy arrays, DeviceArrays, specs or None."""
        raise NotImplementedError

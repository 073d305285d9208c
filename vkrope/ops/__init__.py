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

    def tensors(self) -> list[Any]:
        """Every array argument as a `runtime.operator.Tensor`, x first;
        declared once per request (a checked request is not changed after:
        `dataclasses.replace` makes a new one)."""
        declared = self.__dict__.get("_tensors")
        if declared is None:
            declared = self.__dict__["_tensors"] = self.declare()
        return declared

    def declare(self) -> list[Any]:
        """The request's tensors (each operator's own)."""
        raise NotImplementedError

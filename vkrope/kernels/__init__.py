"""The kernels, one module per shader (glsl/<kernel>.glsl): the request a
front end (vkrope/ops/) builds, its plan for a device's limits (kernel
variant, workgroup shape, dispatch chunks), the launches of a plan over
bound resources, the per-call tables it binds, the row blocks a too-large
call runs in, and the float64 reference. They know no Vulkan (the runtime,
vkrope/runtime, binds, records and submits) and no front end."""

from typing import Any

import numpy as np

from ..runtime.array import DeviceArray
from ..runtime.operator import Tensor


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


def given_tables(given: tuple[tuple[str, Any], ...]) -> list[Any]:
    """The caller's own table arguments (numpy arrays or DeviceArrays), as
    read-only table tensors: what a batch orders its jobs by (a check may
    have converted or copied them; the caller's memory is what an earlier
    job may write)."""

    return [Tensor(name, a, a.shape, a.dtype, table=True) for name, a in given
            if isinstance(a, (np.ndarray, DeviceArray))]  # (a numpy array's or DeviceArray's: a tuple and a dtype)

"""What a front end's public operation returns: a checked call, as data
(its kernel, its requests, how its result is read from their outputs).
`Device` and the module-level API each bind an operation in one line
(vkrope/device.py `operation`, vkrope/api.py `on_default`), so a public
signature and its docstring are written once, in its front end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, TypeVar

import numpy as np

from ..runtime.array import DeviceArray

R = TypeVar("R")
# A result of x's kind: numpy for numpy x, a DeviceArray for a DeviceArray x.
ArrayT = TypeVar("ArrayT", np.ndarray, DeviceArray)


@dataclass(frozen=True)
class Call(Generic[R]):
    """One checked public call: `kernel` (a kernel module, vkrope/kernels/)
    runs `requests` (one job each, in order, in as few submissions as their
    numpy memory allows), and `result` turns their outputs by tensor name
    into what the caller gets."""

    kernel: Any
    requests: tuple[Any, ...]
    result: Callable[[list[dict[str, Any]]], R]


def one(kernel: Any, req: Any, output: str = "out") -> Call[Any]:
    """A call of one request whose result is its output `output`."""
    return Call(kernel, (req,), lambda outs: outs[0][output])


def two(kernel: Any, first: Any, second: Any) -> Call[tuple[Any, Any]]:
    """A call of two requests (q and k) whose result is their two `out`s."""
    return Call(kernel, (first, second), lambda outs: (outs[0]["out"], outs[1]["out"]))


def result_annotation(annotation: Any) -> Any:
    """What a `Call[...]` return annotation stands for once the call runs
    (the signature `Device` and the module functions show)."""
    if isinstance(annotation, str) and annotation.startswith("Call[") and annotation.endswith("]"):
        return annotation[len("Call["):-1]
    return annotation

"""What a front end's public operation returns: a checked call, as data
(its kernel, its requests, how its result is read from their outputs).
`Device` and the module-level API each bind an operation in one line
(vkrope/device.py `operation`, vkrope/api.py `on_default`, both through
`bind`), so a public signature and its docstring are written once, in its
front end."""

from __future__ import annotations

import inspect
import typing
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


def bind(wrapper: Callable[..., Any], front_end: Callable[..., Any], module: str, qualname: str,
         method: bool = False) -> None:
    """Give `wrapper` (a front end's public operation bound to a device:
    `Device.<name>` or the module function) the front end's name, docstring,
    hints and signature, returning the call's result (`Call[X]` -> `X`), and
    the place it is bound at (`module`, `qualname`: pickle finds it there);
    `method` puts `self` first."""
    hints = typing.get_type_hints(front_end)
    result = hints.pop("return", Any)
    if typing.get_origin(result) is Call:
        result = typing.get_args(result)[0]
    wrapper.__name__ = front_end.__name__
    wrapper.__doc__ = front_end.__doc__
    wrapper.__module__, wrapper.__qualname__ = module, qualname
    wrapper.__annotations__ = {**hints, "return": result}
    params = [p.replace(annotation=hints.get(name, p.annotation))
              for name, p in inspect.signature(front_end).parameters.items()]
    if method:
        params.insert(0, inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD))
    wrapper.__signature__ = inspect.Signature(params, return_annotation=result)  # type: ignore[attr-defined]

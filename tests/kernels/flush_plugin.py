"""A pytest plugin that makes the device act as one that flushes float32
subnormals in shaders (as NVIDIA's H200 did, #35): the float32 and bfloat16
arrays going into and coming out of `Device.apply` and
`Device.rotary_embedding` have their subnormals replaced by signed zeros.
Used by test_flushing_device.py only (loaded with -p in a subprocess)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import vkrope

TINY = np.float32(2.0 ** -126)  # the smallest normal float32 (and bfloat16)


def flushed(a):
    """`a` with its float32 / bfloat16 subnormals as signed zeros (a copy when any)."""
    if isinstance(a, np.ndarray) and a.dtype in (np.float32, np.dtype(ml_dtypes.bfloat16)):
        f = a.astype(np.float32)
        tiny = (f != 0) & (np.abs(f) < TINY)
        if tiny.any():
            a = a.copy()
            a[tiny] = np.copysign(np.float32(0), f[tiny]).astype(a.dtype)
    return a


def _flushing(real):
    def op(self, x, *args, **kwargs):
        y = real(self, flushed(x), *args, **kwargs)
        if isinstance(y, np.ndarray):
            y[...] = flushed(y)
        return y
    return op


vkrope.Device.apply = _flushing(vkrope.Device.apply)
vkrope.Device.rotary_embedding = _flushing(vkrope.Device.rotary_embedding)


@pytest.hookimpl(trylast=True)  # (after conftest.py has marked the slow tier)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The fast tier, and every test of the slow one that reads the device's subnormals (`subnormals_kept`): the
    tiers move tests between them as their durations change, and the subnormal ones must all run here."""
    kept, dropped = [], []
    for item in items:
        slow = item.get_closest_marker("slow") is not None
        (dropped if slow and "subnormals_kept" not in getattr(item, "fixturenames", ()) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept

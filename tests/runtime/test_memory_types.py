"""Which memory each buffer takes (#35). On the H200 the host-visible work
buffers of the discrete path took device-local host-visible memory (behind
the PCIe BAR: write-combined, read back at tens of MB/s), so a 256 KiB numpy
call took 9 ms and a 32 MiB texture3d one 590 ms. Staging buffers now prefer
host-cached memory. lavapipe has one memory type with every flag, so the
choice is checked on a table of a discrete GPU's types and as plumbing."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import vkrope.runtime.engine as engine
from vkrope.errors import UnsupportedFeatureError
from vkrope.vk.resources import memory_flags
from oracle import oracle

DEVICE_LOCAL, HOST_VISIBLE, HOST_COHERENT, HOST_CACHED = 0x1, 0x2, 0x4, 0x8
# A discrete NVIDIA GPU's memory types, in the driver's order: device-local; host (coherent); host
# (coherent, cached); device-local and host-visible (the BAR).
DISCRETE = [0, DEVICE_LOCAL, HOST_VISIBLE | HOST_COHERENT, HOST_VISIBLE | HOST_COHERENT | HOST_CACHED,
            DEVICE_LOCAL | HOST_VISIBLE | HOST_COHERENT]


def _table(flags):
    return SimpleNamespace(memoryTypeCount=len(flags), memoryTypes=[SimpleNamespace(propertyFlags=f) for f in flags])


def test_a_discrete_gpus_staging_buffers_take_cached_host_memory(make_device, monkeypatch):
    ctx = make_device()._context()
    monkeypatch.setattr(ctx, "memory_properties", _table(DISCRETE))
    every = (1 << len(DISCRETE)) - 1
    assert ctx.memory_type(every, *memory_flags(True, staging=True)) == 3  # host, cached
    assert ctx.memory_type(every, *memory_flags(True, staging=False)) == 4  # bound by a kernel: the BAR
    assert ctx.memory_type(every, *memory_flags(False, staging=False)) == 1
    # no cached type allowed: still a coherent host-visible one, never a non-coherent one
    assert ctx.memory_type(every & ~(1 << 3), *memory_flags(True, staging=True)) == 2
    monkeypatch.setattr(ctx, "memory_properties", _table([DEVICE_LOCAL, HOST_VISIBLE | HOST_CACHED]))
    with pytest.raises(UnsupportedFeatureError, match="no memory type"):
        ctx.memory_type(0b11, *memory_flags(True, staging=True))


@pytest.mark.parametrize("unified", [True, False])
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_host_visible_work_buffers_are_staging_exactly_on_the_discrete_path(make_device, monkeypatch, unified,
                                                                            storage):
    dev = make_device(unified=unified)
    made = []
    real = engine.Buffer

    def spy(ctx, size, host_visible, usage=None, staging=False):
        made.append((host_visible, staging))
        return real(ctx, size, host_visible, usage, staging)

    monkeypatch.setattr(engine, "Buffer", spy)
    x = np.random.default_rng(0).standard_normal((2, 64, 16)).astype(np.float32)
    theta = np.random.default_rng(1).uniform(-3, 3, (64, 8))
    f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(64, 16).astype(np.float32)
    y = dev.apply(x, f, storage=storage)
    assert np.abs(y - oracle(x, f)).max() < 1e-5
    host = [staging for visible, staging in made if visible]
    assert host and all(s is (not unified) for s in host), made
    assert not any(staging for visible, staging in made if not visible), made

"""Test set-up: the Khronos validation layer (synchronization validation
included) is on for the whole suite and any message it emits fails the test
that caused it; no usable Vulkan device fails the run loudly."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterator

os.environ.setdefault("VKROPE_VALIDATION", "1")
# The suite's folders by subject (runtime, kernels, specs, ops, models, project) import the shared helpers
# here and the float64 oracles in oracles/ by name.
sys.path[:0] = [os.path.dirname(__file__), os.path.join(os.path.dirname(__file__), "oracles")]

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import vkrope  # noqa: E402
import vkrope.runtime.execute  # noqa: E402
from vkrope.vk.instance import clear_validation_messages, validation_messages  # noqa: E402
from forced import force_limits  # noqa: E402
import shards  # noqa: E402

settings.register_profile(
    "vkrope", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("vkrope")


# This run's shard of the suite (scripts/test.sh), taken out of the environment: a pytest that a test
# starts (the flushing-device test's) runs what it names, not a shard of it.
SHARD = os.environ.pop("VKROPE_SHARD", "")
SLOW = {line.strip() for line in open(os.path.join(os.path.dirname(__file__), "slow_tests.txt"), encoding="utf-8")
        if line.strip() and not line.startswith("#")}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `slow` the test functions tests/slow_tests.txt lists (scripts/test_tiers.py writes it from
    measured durations): plain `pytest` leaves them out (setup.cfg), scripts/test.sh runs everything."""
    for item in items:
        if item.nodeid.split("[")[0] in SLOW:
            item.add_marker(pytest.mark.slow)
    if SHARD:
        _keep_shard(config, items, SHARD)


def _keep_shard(config: pytest.Config, items: list[pytest.Item], spec: str) -> None:
    """Deselect the test files of the other shards (scripts/test.sh runs the shards side by side)."""
    try:
        mine, n = shards.parse(spec)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None
    files = [item.nodeid.split("::")[0] for item in items]
    where = shards.assign(files, shards.measured(), n)
    kept = [item for item, f in zip(items, files) if where[f] == mine]
    config.hook.pytest_deselected(items=[item for item, f in zip(items, files) if where[f] != mine])
    items[:] = kept


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze what collection made (the test modules, their parameters, hypothesis' strategies): the many
    gc.collect() of the lifecycle tests then look only at what tests make (one test's 266 collections took
    87 s in the whole suite against 26 s alone, each walking every object the suite had made)."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def frozen_gc() -> Iterator[None]:
    """For a test that collects garbage at every step: what exists before it is frozen too (the objects of
    the tests before it), so each collection walks only the test's own. After it, everything is looked at
    once (cycles among frozen objects that died are freed) and frozen again."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def pytest_sessionstart(session: pytest.Session) -> None:
    try:
        dev = vkrope.default_device()
    except vkrope.VulkanUnavailableError as exc:
        pytest.exit(f"no usable Vulkan device, the suite cannot run: {exc}", returncode=3)
    if os.environ.get("VKROPE_VALIDATION") == "1" and not dev.info["validation"]:
        pytest.exit("VKROPE_VALIDATION=1 but the device came up without the validation layer", returncode=3)


@pytest.fixture(autouse=True)
def no_validation_messages():
    """Fail the test if the validation layer said anything during it."""
    clear_validation_messages()
    yield
    msgs = validation_messages()
    clear_validation_messages()
    assert not msgs, "Vulkan validation messages:\n" + "\n".join(msgs)


@pytest.fixture(autouse=True)
def injected_faults_fire():
    """Fail the test if a fault it injected (binding.inject_fault) was never raised: its call was not
    made, so the test proved nothing, and the fault would land in a later test (#35: on a GPU a fence poll
    saw the work done and never called vkWaitForFences)."""
    from vkrope.vk import binding  # noqa: PLC0415

    yield
    left = sorted(binding._faults)  # noqa: SLF001  (the tests' own hook)
    binding._faults.clear()  # noqa: SLF001
    assert not left, f"injected faults never raised: {left}"


@pytest.fixture
def blocking_waits(monkeypatch) -> None:
    """Fence waits block in vkWaitForFences at once, with no poll first (vk/commands.py's SPIN_S): for
    tests that inject a fault or a hang into that call, which a poll that saw the work done would skip."""
    from vkrope.vk import commands  # noqa: PLC0415

    monkeypatch.setattr(commands, "SPIN_S", {})


@pytest.fixture
def device() -> vkrope.Device:
    """The default device (re-created by vkrope if a fault test closed it)."""
    return vkrope.default_device()


# Drivers measured to flush float32 subnormals in shaders and to offer no way to keep them (no
# shaderDenormPreserveFloat32): NVIDIA's (580, the H200, #35). The suite's flushing-device test names
# its own in their place through VKROPE_TEST_FLUSHING_DRIVER (lavapipe as one that flushes; on NVIDIA, a
# made-up name: the same flushing must then fail the tests).
FLUSHING_DRIVERS = (os.environ.get("VKROPE_TEST_FLUSHING_DRIVER") or "NVIDIA",)


@pytest.fixture
def subnormals_kept(request, device) -> bool:
    """Whether the device keeps float32 subnormals in shaders, measured (x * cos 0 of 1e-39). A driver
    known to flush them and not to offer keeping them makes the test an expected failure, strict: it
    must still fail there, and a driver that starts keeping them turns it into a failure to look at.
    Anywhere else a flushed subnormal fails the test here: it would be vkrope's bug."""
    x = np.array([[[1e-39, -3e-42]]], np.float32)
    kept = bool(np.array_equal(device.apply(x, np.array([[1.0, 0.0]], np.float32)), x))
    if not kept:
        assert not device.info["denorm_preserve_float32"], "asked to keep subnormals, the device flushed them"
        assert any(name in device.info["driver"] for name in FLUSHING_DRIVERS), (
            f"float32 subnormals came back flushed on {device.info['driver']!r}, not a driver known to flush them")
        request.node.add_marker(pytest.mark.xfail(
            reason=f"{device.info['name']} flushes float32 subnormals in shaders and cannot be asked to keep "
                   "them (docs/accuracy.md)", strict=True))
    return kept


@pytest.fixture
def imports(monkeypatch):
    """Count ImportedBuffer creations: proof that the zero-copy path really ran."""
    made = []

    class Counting(vkrope.runtime.execute.ImportedBuffer):
        def __init__(self, ctx, address, nbytes, holder=None):
            super().__init__(ctx, address, nbytes, holder)
            made.append(nbytes)

    monkeypatch.setattr(vkrope.runtime.execute, "ImportedBuffer", Counting)
    return made


@pytest.fixture
def make_device():
    """Fresh `vkrope.Device`s, optionally with forced (smaller) limits or
    acting as a discrete GPU (`unified=False`); all closed after the test."""
    made: list[vkrope.Device] = []

    def make(*, unified=None, **limits) -> vkrope.Device:
        dev = vkrope.Device()
        made.append(dev)
        if unified is not None or limits:
            force_limits(dev, unified=unified, **limits)
        return dev

    yield make
    for dev in made:
        dev.close()


@pytest.fixture
def vk_spy(monkeypatch):
    """Record the offset and range of every storage-buffer descriptor and the size of
    every memory allocation, at the `vulkan` package's functions (below
    vkrope, whatever its internals). Limits forced with Device._force_limits
    are invisible to the driver and the validation layer, so this is how a
    test sees that vkrope respects them."""
    import vulkan

    seen: dict[str, list[int]] = {"ranges": [], "offsets": [], "allocations": []}
    update, allocate = vulkan.vkUpdateDescriptorSets, vulkan.vkAllocateMemory

    def spy_update(device, count, writes, *rest):
        for i in range(count):
            w = writes[i]
            if w.descriptorType == vulkan.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER:
                seen["ranges"] += [int(w.pBufferInfo[j].range) for j in range(w.descriptorCount)]
                seen["offsets"] += [int(w.pBufferInfo[j].offset) for j in range(w.descriptorCount)]
        return update(device, count, writes, *rest)

    def spy_allocate(device, info, *rest):
        seen["allocations"].append(int(info.allocationSize))
        return allocate(device, info, *rest)

    def spy_dispatch(cmd, x, y, z, dispatch=vulkan.vkCmdDispatch):
        seen["dispatches"].append((int(x), int(y), int(z)))
        return dispatch(cmd, x, y, z)

    seen["dispatches"] = []
    monkeypatch.setattr(vulkan, "vkCmdDispatch", spy_dispatch)
    monkeypatch.setattr(vulkan, "vkUpdateDescriptorSets", spy_update)
    monkeypatch.setattr(vulkan, "vkAllocateMemory", spy_allocate)
    return seen

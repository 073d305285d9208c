"""The runtime's guarantees over every operator (#19): handles released,
faults typed and the device usable after, the discrete-GPU path, the
zero-copy path and its refusals, small forced limits (binding splits, row
blocks, folded images), interrupts. Each operator comes from
tests/op_cases.py, so the next operator inherits these tests; results are
checked against the float64 oracles of tests/."""

from __future__ import annotations

import gc
import signal
import time

import numpy as np
import pytest

import vkrope
from forced import SMALL_LIMITS
from op_cases import OPS, check_results
from vkrope.vk import binding as b
from vkrope.vk.binding import live_handles

RNG = np.random.default_rng(1919)


def _resident(dev, case, args):
    """args with every resident-able argument uploaded to `dev` (outs stay None)."""
    out = dict(args)
    for name in case.resident:
        if args.get(name) is not None:
            out[name] = dev.asarray(args[name])
    return out


@pytest.mark.parametrize("case", OPS, ids=repr)
def test_handles_return_to_baseline(case):
    gc.collect()
    before = live_handles()
    with vkrope.Device() as dev:
        args = case.make(RNG)
        check_results(case, args, case.call(dev, args))
        check_results(case, args, case.call(dev, _resident(dev, case, args)))
    gc.collect()
    assert live_handles() == before


@pytest.mark.parametrize("fault,error", [
    (lambda: b.vk().VkErrorOutOfDeviceMemory(), vkrope.OutOfDeviceMemoryError),
    (lambda: b.vk().VkErrorDeviceLost(), vkrope.DeviceLostError),
], ids=["out_of_memory", "device_lost"])
@pytest.mark.parametrize("case", OPS, ids=repr)
def test_faults_are_typed_and_the_next_call_is_right(make_device, case, fault, error):
    dev = make_device()
    args = case.make(RNG)
    dev.trim()  # the call must allocate again: the fault hits it
    b.inject_fault("vkAllocateMemory", fault)
    with pytest.raises(error):
        case.call(dev, args)
    if error is vkrope.DeviceLostError:
        assert dev.closed
        dev = make_device()
    check_results(case, args, case.call(dev, args))


@pytest.mark.parametrize("resident", [False, True], ids=["numpy", "resident"])
@pytest.mark.parametrize("case", OPS, ids=repr)
def test_the_discrete_gpu_path(make_device, case, resident):
    dev = make_device(unified=False)
    args = case.make(RNG)
    check_results(case, args, case.call(dev, _resident(dev, case, args) if resident else args))


@pytest.mark.parametrize("case", [c for c in OPS if c.moves_numpy], ids=repr)  # (numpy ones)
def test_the_zero_copy_path_and_a_refused_import(device, imports, case):
    """4 MiB numpy tensors are imported; when the driver refuses the memory
    the call takes the copy path and is as right."""
    args = case.make(RNG, big=True)
    check_results(case, args, case.call(device, args))
    assert imports, "the call did not take the zero-copy path"
    imports.clear()
    b.inject_fault("vkAllocateMemory", lambda: b.vk().VkErrorInvalidExternalHandle())
    check_results(case, args, case.call(device, args))


@pytest.mark.parametrize("unified", [None, False], ids=["unified", "discrete"])
@pytest.mark.parametrize("case", OPS, ids=repr)
def test_past_small_limits(make_device, case, unified):
    """Bindings split, row blocks, for every op, numpy and resident."""
    dev = make_device(unified=unified, **{**SMALL_LIMITS, "max_storage_buffer_range": 256 << 10})
    args = case.make(RNG, big=True)
    before = dev.stats()["submissions"]
    check_results(case, args, case.call(dev, args))
    if case.moves_numpy:  # (an op of resident caches only has no row blocks: its bindings split in one submission)
        assert dev.stats()["submissions"] - before > 1  # row blocks: more than one submission
    check_results(case, args, case.call(dev, _resident(dev, case, {k: v for k, v in args.items()})))


class _Interrupt(Exception):
    pass


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # interrupts landing in GC callbacks
@pytest.mark.parametrize("case", OPS, ids=repr)
def test_interrupted_calls_leave_the_device_right(make_device, case):
    """A signal handler's exception at random points of calls: each call
    either completes right or raises it; the device stays usable and every
    later call is right."""
    dev = make_device()
    args = case.make(RNG, big=True)
    res = _resident(dev, case, args)
    check_results(case, args, case.call(dev, args))
    t0 = time.perf_counter()
    case.call(dev, args)
    typical = time.perf_counter() - t0

    def handler(signum, frame):
        raise _Interrupt()

    old = signal.signal(signal.SIGALRM, handler)
    interrupted = 0
    try:
        for i in range(12):
            signal.setitimer(signal.ITIMER_REAL, typical * (i + 0.5) / 12)
            try:
                for form in (args, res):
                    check_results(case, args, case.call(dev, form))
            except _Interrupt:
                interrupted += 1
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert interrupted
    check_results(case, args, case.call(dev, args))
    check_results(case, args, case.call(dev, res))

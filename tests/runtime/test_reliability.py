"""Faults, threads, leaks, edge input and a fuzz test: every call either
matches the reference or raises TypeError / ValueError; faults raise
vkrope's typed errors and the runtime keeps working."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vkrope
import vkrope.vk.commands as commands
from oracle import check_apply, oracle
from vkrope.vk import binding as b
from vkrope.vk.binding import live_handles

RNG = np.random.default_rng(11)
X = RNG.standard_normal((2, 16, 8)).astype(np.float32)
F = RNG.standard_normal((16, 8)).astype(np.float32)


def works(apply=vkrope.apply):
    check_apply(apply, X, F)


# --- faults ---------------------------------------------------------------
def test_out_of_device_memory_then_recovers():
    dev = vkrope.Device()
    try:
        dev.trim()
        b.inject_fault("vkAllocateMemory", lambda: b.vk().VkErrorOutOfDeviceMemory())
        with pytest.raises(vkrope.OutOfDeviceMemoryError) as info:
            dev.apply(X, F)
        assert isinstance(info.value, MemoryError)
        assert "vkAllocateMemory" in str(info.value) and "VK_ERROR_OUT_OF_DEVICE_MEMORY" in str(info.value)
        works(dev.apply)
        b.inject_fault("vkAllocateMemory", lambda: b.vk().VkErrorOutOfDeviceMemory())
        with pytest.raises(vkrope.OutOfDeviceMemoryError):
            dev.asarray(RNG.standard_normal((3, 3, 1000)).astype(np.float32))
        works(dev.apply)
    finally:
        dev.close()


def test_device_lost_closes_device_and_default_is_recreated():
    first = vkrope.default_device()
    works()
    b.inject_fault("vkQueueSubmit", lambda: b.vk().VkErrorDeviceLost())
    with pytest.raises(vkrope.DeviceLostError):
        vkrope.apply(X, F)
    assert first.closed
    works()  # a fresh default device
    assert vkrope.default_device() is not first


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_bounded_wait_raises_timeout(monkeypatch, storage):
    """A real submission with a 1 ns bound: the driver cannot finish in time."""
    dev = vkrope.Device()
    try:
        works(dev.apply)
        monkeypatch.setattr(commands, "TIMEOUT_OVERRIDE_S", 1e-9)
        big = RNG.standard_normal((8, 4096, 64)).astype(np.float32)
        with pytest.raises(vkrope.DeviceTimeoutError) as info:
            dev.apply(big, RNG.standard_normal((4096, 64)).astype(np.float32), storage=storage)
        assert isinstance(info.value, TimeoutError)
        assert dev.closed
    finally:
        dev.close()
    monkeypatch.undo()
    works()


def test_injected_timeout_on_default_device(blocking_waits):
    works()
    b.inject_fault("vkWaitForFences", lambda: b.vk().VkTimeout())
    with pytest.raises(vkrope.DeviceTimeoutError):
        vkrope.apply(X, F)
    works()


# --- threads ----------------------------------------------------------------
@pytest.mark.parametrize("shared", ["module", "device"])
def test_threads(shared):
    dev = vkrope.Device() if shared == "device" else None
    apply = dev.apply if dev else vkrope.apply
    errors: list[BaseException] = []
    cases = []
    for i in range(8):
        n, c = 5 + i, 4 + 2 * i
        cases.append((RNG.standard_normal((2, n, c)).astype(np.float32), RNG.standard_normal((n, c)).astype(np.float32)))
    expected = [oracle(x, f) for x, f in cases]

    def worker(i):
        x, f = cases[i]
        try:
            for _ in range(100):
                y = apply(x, f)
                assert np.abs(y - expected[i]).max() < 1e-4
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if dev:
        dev.close()
    assert not errors, errors[:3]


# --- leaks ------------------------------------------------------------------
def test_dropping_arrays_and_devices_returns_handles_to_baseline():
    import gc

    before = live_handles()
    for _ in range(3):
        dev = vkrope.Device()
        arrays = [dev.asarray(RNG.standard_normal((2, 8, 12)).astype(np.float32), storage=s)
                  for s in ("buffer", "texture3d")]
        outs = dev.apply_many([(a, RNG.standard_normal((8, 12)).astype(np.float32)) for a in arrays])
        del arrays, outs
        dev.close()
    gc.collect()
    assert live_handles() == before


def test_many_calls_grow_neither_rss_nor_handles():
    """10,000 calls (numpy and device-resident) in a fresh process, validation off."""
    code = r"""
import gc, resource, numpy as np, vkrope
from vkrope.vk.binding import live_handles
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
x = np.random.default_rng(0).standard_normal((2, 16, 8)).astype(np.float32)
f = np.random.default_rng(1).standard_normal((16, 8)).astype(np.float32)
dev = vkrope.Device(validation=False)
for _ in range(500):
    dev.apply(x, f); dev.apply(dev.asarray(x), f)
gc.collect()
r0, h0 = rss(), live_handles()
for _ in range(5000):
    dev.apply(x, f)
    dev.apply(dev.asarray(x), f)
gc.collect()
print((rss() - r0) / 2**20, live_handles() == h0)
"""
    env = dict(os.environ)
    env.pop("VKROPE_VALIDATION", None)
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr
    growth, same = res.stdout.split()
    assert float(growth) < 5.0, f"RSS grew {growth} MiB over 10,000 calls"
    assert same == "True"


# --- edge input -------------------------------------------------------------
@pytest.mark.parametrize("shape", [(0, 4, 8), (3, 0, 8), (2, 5, 0)], ids=str)
def test_zero_size_returns_empty_without_device_work(shape, monkeypatch):
    x = np.zeros(shape, np.float32)
    f = np.zeros((shape[1], shape[2]), np.float32)
    dev = vkrope.default_device()  # (opened first: an earlier test in this worker may have closed the default)
    monkeypatch.setattr(b, "call", lambda *a: pytest.fail(f"Vulkan call {a[0]} for a zero-size tensor"))
    y = dev.apply(x, f)
    assert y.shape == shape and y.dtype == np.float32


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_nan_and_inf_follow_the_formula(dtype, storage):
    x = RNG.standard_normal((2, 4, 8)).astype(dtype)
    f = RNG.standard_normal((4, 8)).astype(dtype)
    x[0, 0, 0] = np.nan  # NaN in the real part: its pair becomes NaN, nothing else
    x[0, 1, 2] = np.inf
    x[1, 2, 5] = -np.inf
    f[3, 6] = np.nan
    y = check_apply(vkrope.apply, x, f, storage=storage)
    assert np.isnan(y[0, 0, :2]).all() and not np.isnan(y[0, 0, 2:]).any()


def test_unaligned_and_read_only_inputs():
    raw = np.zeros(2 * 16 * 8 * 4 + 2, np.uint8)
    x = np.frombuffer(raw.data, dtype=np.float32, count=2 * 16 * 8, offset=1).reshape(2, 16, 8).copy()
    xu = np.ndarray((2, 16, 8), np.float32, buffer=raw, offset=1)  # misaligned by one byte
    xu[...] = X
    assert xu.ctypes.data % 4 == 1
    check_apply(vkrope.apply, xu, F)
    ro = X.copy()
    ro.flags.writeable = False
    check_apply(vkrope.apply, ro, F)
    del x


# --- fuzz ---------------------------------------------------------------------
JUNK = st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=3), st.booleans())


CORRUPTIONS = [
    "x_dtype", "odd_c", "rank1", "freqs_rows", "freqs_dtype", "repeat_junk", "exclude_junk", "inverse_junk",
    "positions_range", "positions_dtype", "positions_len", "storage_name", "storage_type", "out_dtype",
    "out_shape", "out_list", "out_readonly", "x_list",
]


@st.composite
def calls(draw):
    """A consistent call (shape, dtype, layout, keywords), then in about half
    of the draws one corruption of it."""
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    c = 2 * draw(st.integers(0, 8))
    dtype = draw(st.sampled_from([np.float32, np.float16]))
    mode = draw(st.sampled_from(["plain", "repeat", "positions"]))
    kw = {}
    if mode == "plain":
        nf = n = draw(st.integers(0, 12))
    elif mode == "repeat":
        nf = draw(st.integers(0, 5))
        kw["repeat"] = draw(st.integers(1, 3))
        kw["exclude_last"] = draw(st.integers(0, 3))
        n = kw["repeat"] * nf + kw["exclude_last"]
    else:
        nf = draw(st.integers(1, 8))
        n = draw(st.integers(0, 12))
        kw["positions"] = np.array(draw(st.lists(st.integers(-1, nf - 1), min_size=n, max_size=n)), dtype=np.int64)
    x = (RNG.standard_normal(lead + (n, c)) * 3).astype(dtype)
    layout = draw(st.sampled_from(["c", "f", "neg", "strided"]))
    if layout == "f":
        x = np.asfortranarray(x)
    elif layout == "neg":
        x = x[::-1, ::-1] if x.ndim >= 2 else x
    elif layout == "strided":
        x = np.repeat(x, 2, axis=-2)[..., ::2, :]
    fdtype = draw(st.sampled_from([np.float32, np.float16, np.float64, np.complex64]))
    per = c // 2 if np.dtype(fdtype).kind == "c" else c
    theta = RNG.uniform(-3, 3, (nf, per))
    f = np.cos(theta).astype(fdtype) if np.dtype(fdtype).kind != "c" else np.exp(1j * theta).astype(fdtype)
    kw["inverse"] = draw(st.booleans())
    kw["storage"] = draw(st.sampled_from(["buffer", "texture3d", "auto"]))
    kw["out"] = draw(st.sampled_from([None, None, "same", "new"]))
    corruption = draw(st.one_of(st.none(), st.sampled_from(CORRUPTIONS)))
    junk = draw(st.one_of(st.none(), st.floats(allow_nan=True), st.text(max_size=2), st.integers(-3, -1)))
    if corruption == "x_dtype":
        x = x.astype(draw(st.sampled_from([np.float64, np.int32, np.complex64, bool, object])))
    elif corruption == "odd_c":
        x = np.zeros(lead + (n, c + 1), dtype)
    elif corruption == "rank1":
        x = np.zeros(c, dtype)
    elif corruption == "freqs_rows":
        f = np.zeros((nf + 1, per), fdtype)
    elif corruption == "freqs_dtype":
        f = np.real(f).astype(draw(st.sampled_from([np.int64, bool, object, np.uint8])))
    elif corruption == "repeat_junk":
        kw["repeat"] = junk if junk is not None else 0
    elif corruption == "exclude_junk":
        kw["exclude_last"] = junk if junk is not None else n + 1
    elif corruption == "inverse_junk":
        kw["inverse"] = junk if junk is not None else 1
    elif corruption == "positions_range":
        kw.pop("repeat", None), kw.pop("exclude_last", None)
        kw["positions"] = np.full(n, nf + draw(st.integers(0, 3)), np.int64) if n else np.array([-2])
    elif corruption == "positions_dtype":
        kw.pop("repeat", None), kw.pop("exclude_last", None)
        kw["positions"] = np.zeros(n, draw(st.sampled_from([np.float32, bool, object])))
    elif corruption == "positions_len":
        kw.pop("repeat", None), kw.pop("exclude_last", None)
        kw["positions"] = np.zeros(n + 1, np.int64)
    elif corruption == "storage_name":
        kw["storage"] = "texture2d"
    elif corruption == "storage_type":
        kw["storage"] = 3
    elif corruption in ("out_dtype", "out_shape", "out_list", "out_readonly", "x_list"):
        kw["out"] = corruption
    return x, f, kw, corruption


FUZZ_OUTCOMES = {"valid": 0, "error": 0}


def test_fuzz_valid_or_clean_error():
    """500 random calls, each a right result or a clean error; both outcomes must occur often."""
    FUZZ_OUTCOMES.update(valid=0, error=0)
    _fuzz_one()
    assert FUZZ_OUTCOMES["valid"] >= 50 and FUZZ_OUTCOMES["error"] >= 50, FUZZ_OUTCOMES


@settings(max_examples=500)
@given(call=calls())
def _fuzz_one(call):
    x, f, kw, corruption = call
    out = kw.get("out")
    if out == "same":
        kw["out"] = x if x.flags.writeable else None
    elif out == "new":
        kw["out"] = np.empty_like(x)  # keeps x's layout
        if x.dtype.kind == "f":
            kw["out"].fill(np.nan)  # poisoned
    elif out == "out_dtype":
        kw["out"] = np.empty(x.shape, np.float64)
    elif out == "out_shape":
        kw["out"] = np.empty(x.shape + (1,), x.dtype)
    elif out == "out_list":
        kw["out"] = []
    elif out == "out_readonly":
        kw["out"] = np.broadcast_to(np.zeros((), x.dtype), x.shape)
    x_before = x.copy()
    if out == "x_list":
        kw["out"] = None
        x = x.tolist()
    try:
        y = vkrope.apply(x, f, **kw)
    except (TypeError, ValueError):
        assert corruption is not None, "a consistent call was refused"
        FUZZ_OUTCOMES["error"] += 1
        works()  # a clean error, and the runtime still serves a call
        return
    FUZZ_OUTCOMES["valid"] += 1
    x = x_before
    ref = oracle(x_before, f, **{k: v for k, v in kw.items() if k not in ("out", "storage")})
    if isinstance(kw.get("out"), np.ndarray):
        assert y is kw["out"]
    ref_r = ref.astype(x.dtype)
    tol = 1e-5 if x.dtype == np.float32 else 2e-3
    scale = np.abs(x_before.astype(np.float64)).max(initial=0) * max(1.0, float(np.abs(f).max(initial=0)))
    with np.errstate(invalid="ignore"):
        ok = (np.abs(y.astype(np.float64) - ref) <= tol * (scale + 1) * 4) | (np.isnan(ref_r) & np.isnan(y))
    assert ok.all()


def test_dropping_arrays_while_another_thread_computes():
    """One thread keeps rotating a resident array while another creates and
    drops arrays on the same device: results stay right, handles return."""
    import gc

    baseline = live_handles()
    dev = vkrope.Device()
    x = RNG.standard_normal((4, 64, 32)).astype(np.float32)
    f = RNG.standard_normal((64, 32)).astype(np.float32)
    expected = oracle(x, f)
    xd = dev.asarray(x)
    dev.apply(xd, f)
    errors: list[BaseException] = []
    stop = threading.Event()

    def compute():
        try:
            for _ in range(200):
                assert np.abs(dev.apply(xd, f).get() - expected).max() < 1e-4
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            stop.set()

    def churn():
        try:
            while not stop.is_set():
                tmp = [dev.asarray(x) for _ in range(3)]
                outs = dev.apply_many([(t, f) for t in tmp])
                del tmp, outs
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=compute), threading.Thread(target=churn)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    del xd
    gc.collect()
    dev.close()
    assert live_handles() == baseline

"""Device-resident arrays, checked against the oracle: round trips, apply with no host round trip,
apply_many in one submission, in place, pooling, and their errors."""

from __future__ import annotations

import decimal
import fractions

import numpy as np
import pytest

import vkrope
from forced import SMALL_LIMITS
from oracle import check_result, poisoned_like
from oracle_family import et_apply_rotary_emb

RNG = np.random.default_rng(7)
STORAGES = ["buffer", "texture3d"]
DTYPES = [np.float32, np.float16]


def data(shape, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    f = RNG.standard_normal((shape[-2], shape[-1])).astype(dtype)
    return x, f


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 8), (5, 6), (2, 2, 9, 10), (1, 4097, 4)], ids=str)
def test_round_trip(shape, dtype, storage, device):
    x, _ = data(shape, dtype)
    arr = device.asarray(x, storage=storage)
    assert arr.shape == x.shape and arr.dtype == x.dtype and arr.nbytes == x.nbytes and arr.storage == storage
    assert arr.device is device
    back = arr.get()
    assert back.tobytes() == x.tobytes()
    assert np.asarray(arr).tobytes() == x.tobytes()
    assert np.asarray(arr, dtype=np.float64).dtype == np.float64


@pytest.mark.parametrize("c", [16, 14], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_apply_on_device_matches_oracle(dtype, storage, c, device):
    x, f = data((3, 40, c), dtype)
    xd = device.asarray(x, storage=storage)
    od = device.asarray(poisoned_like(x), storage=storage)
    assert device.apply(xd, f, inverse=True, out=od) is od
    check_result(od, x, f, inverse=True)
    yd = device.apply(xd, f, inverse=True)  # a fresh output array
    assert isinstance(yd, vkrope.DeviceArray) and yd.storage == storage
    assert yd.shape == x.shape and yd.dtype == x.dtype
    check_result(yd, x, f, inverse=True)
    assert xd.get().tobytes() == x.tobytes()  # input untouched
    # Chained on the device: forward then inverse by unit freqs gives x back.
    theta = RNG.uniform(-3, 3, (40, c // 2))
    u = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(40, c).astype(np.float32)
    fwd = device.apply(xd, u)
    y = check_result(fwd, x, u)
    back = check_result(device.apply(fwd, u, inverse=True), y, u, inverse=True)
    np.testing.assert_allclose(back.astype(np.float64), x, atol=4e-3 if dtype == np.float16 else 1e-5, rtol=4e-3)


@pytest.mark.parametrize("c", [32, 30], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("storage", STORAGES)
def test_apply_many_one_submission(storage, c, device):
    q, fq = data((1, 64, c), np.float32)
    k = RNG.standard_normal((1, 3 * 16 + 2, c)).astype(np.float32)
    fk = RNG.standard_normal((16, c)).astype(np.float32)
    qd, kd = device.asarray(q, storage=storage), device.asarray(k, storage=storage)
    qo = device.asarray(poisoned_like(q), storage=storage)
    zo = poisoned_like(q)
    outs = device.apply_many([(qd, fq, {"out": qo}), (kd, fk, {"repeat": 3, "exclude_last": 2}),
                              (q, fq, {"inverse": True, "out": zo})])
    assert outs[0] is qo and outs[2] is zo
    assert check_result(outs[0], q, fq).tobytes() == vkrope.apply(q, fq).tobytes()
    k_rot = check_result(outs[1], k, fk, repeat=3, exclude_last=2)
    assert k_rot.tobytes() == vkrope.apply(k, fk, repeat=3, exclude_last=2).tobytes()
    assert check_result(outs[2], q, fq, inverse=True).tobytes() == vkrope.apply(q, fq, inverse=True).tobytes()


@pytest.mark.parametrize("c", [12, 14], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("storage", STORAGES)
def test_out_device_array_in_place(storage, c, device):
    x, f = data((2, 10, c), np.float32)
    xd = device.asarray(x, storage=storage)
    r = device.apply(xd, f, out=xd)
    assert r is xd
    assert check_result(xd, x, f).tobytes() == vkrope.apply(x, f).tobytes()


def test_zero_size_device_array(device):
    x = np.zeros((0, 4, 8), np.float32)
    xd = device.asarray(x)
    assert xd.get().shape == (0, 4, 8)
    assert device.apply(xd, np.zeros((4, 8), np.float32)).shape == (0, 4, 8)


def test_pool_reuses_buffers(device):
    from vkrope.vk.binding import live_handles

    x, f = data((4, 64, 64), np.float32)
    device.asarray(x).release()
    before = live_handles()
    for _ in range(20):
        device.apply(device.asarray(x), f)
    import gc

    gc.collect()
    assert live_handles().get("VkBuffer", 0) <= before.get("VkBuffer", 0) + 2


def test_device_array_errors(device):
    x, f = data((2, 3, 8), np.float32)
    xd = device.asarray(x)
    with pytest.raises(TypeError, match="out"):
        device.apply(xd, f, out=np.empty_like(x))
    with pytest.raises(TypeError, match="out"):
        device.apply(x, f, out=xd)
    with pytest.raises(ValueError, match="storage"):
        device.asarray(x, storage="texture2d")
    with pytest.raises(ValueError, match="storage='texture3d' but x is a buffer DeviceArray"):
        device.apply(xd, f, storage="texture3d")
    with pytest.raises(TypeError, match="a must be"):
        device.asarray([1, 2])
    with pytest.raises(TypeError, match=r"calls\[0\]"):
        device.apply_many([(xd,)])
    with pytest.raises(ValueError, match=r"calls\[1\].*freqs"):
        device.apply_many([(xd, f), (xd, f[:2])])
    with vkrope.Device() as other:
        with pytest.raises(ValueError, match="another vkrope.Device"):
            other.apply(xd, f)
        od = other.asarray(x)
        with pytest.raises(ValueError, match="another vkrope.Device"):
            device.apply(xd, f, out=od)
    xd.release()
    with pytest.raises(ValueError, match="released"):
        device.apply(xd, f)
    with pytest.raises(ValueError, match="released"):
        xd.get()


def test_numpy_operators_and_functions_work_on_a_host_copy(device):
    """numpy's operators, ufuncs and reductions take a DeviceArray as np.asarray does, on a host copy (x + arr
    raised numpy's words about sequence concatenation while arr + x copied); none writes into one."""
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    xd = device.asarray(x)
    for got, want in ((xd + x, 2 * x), (x + xd, 2 * x), (x * xd, x * x), (np.sin(xd), np.sin(x)),
                      (np.sum(xd), 28.0), (np.max(xd), 7.0), (np.mean(xd), 3.5), (x == xd, np.ones((2, 4), bool))):
        assert np.array_equal(got, want)
    assert any(xd is a for a in [x, xd]) and np.allclose(xd, x)
    # == / != with a number compare values too (they compared identities: `arr == 1.0` was False, silently, an
    # adversary's); two DeviceArrays, or anything else, compare by identity, so arrays stay hashable and findable
    assert np.array_equal(xd == 3.0, x == 3.0) and np.array_equal(xd != 3, x != 3)
    assert np.array_equal(xd == np.float32(3), x == 3) and np.array_equal(3.0 == xd, x == 3)
    nan = device.asarray(np.full(3, np.nan, np.float32))
    assert (nan == nan) is True and (nan != nan) is False and (nan == xd) is False and (xd == "x") is False
    assert {xd: 1}[xd] == 1 and xd in [nan, xd]
    row = device.asarray(np.array([1.0, 2.0, 3.0], np.float32))  # (any number, and lists, as numpy compares them)
    for other in (fractions.Fraction(1), decimal.Decimal(1), [1, 2, 3], (1, 5, 3)):
        assert np.array_equal(row == other, np.array([1.0, 2.0, 3.0]) == other), other
    with pytest.raises(TypeError, match="unsupported operand"):  # (arithmetic with a number: no silent answer)
        xd + 1
    with pytest.raises(TypeError, match=r"^numpy's add cannot write into a DeviceArray \(out=\)"):
        np.add(x, x, out=xd)
    # ufunc.at writes into its first input: it updated a host copy, thrown away, so the write was lost silently
    # (an adversary's np.add.at on a KV cache)
    for call in (lambda: np.add.at(xd, (0, 0), 1.0), lambda: np.negative.at(xd, (0, 0))):
        with pytest.raises(TypeError, match=r"^numpy's \w+\.at cannot write into a DeviceArray \(its first argument\)"):
            call()
    x2 = x.copy()
    np.add.at(x2, ([0], [0]), device.asarray(np.ones(1, np.float32)))  # (a DeviceArray .at only reads: taken)
    assert x2[0, 0] == x[0, 0] + 1
    assert np.array_equal(xd.get(), x)
    # truth: numpy raises for more than one value, and len() was taken (`if arr:` passed silently)
    for arr in (xd, device.asarray(np.zeros((0, 4), np.float32)), device.asarray(np.ones(1, np.float32))):
        with pytest.raises(TypeError, match=r"^the truth value of a DeviceArray \(\d+(, \d+)?,?\) is not defined"):
            bool(arr)


def test_arrays_of_a_closed_device():
    dev = vkrope.Device()
    x, f = data((2, 3, 8), np.float32)
    xd = dev.asarray(x)
    dev.close()
    with pytest.raises(vkrope.DeviceClosedError):
        xd.get()
    with pytest.raises(vkrope.DeviceClosedError):
        dev.apply(xd, f)
    del xd  # releasing after close is harmless


@pytest.mark.parametrize("c", [512, 510], ids=["aligned", "unaligned"])
@pytest.mark.parametrize("storage", STORAGES)
def test_resident_arrays_past_small_limits(make_device, storage, c):
    """Resident arrays larger than the (forced) storage-buffer range and
    image extent: split bindings and folded images, against the oracle."""
    dev = make_device(**SMALL_LIMITS)
    x, f = data((3, 200, c), np.float32)
    assert x.nbytes > dev.info["max_storage_buffer_range"]
    xd = dev.asarray(x, storage=storage)
    assert xd.get().tobytes() == x.tobytes()
    od = dev.asarray(poisoned_like(x), storage=storage)
    assert dev.apply(xd, f, out=od) is od
    check_result(od, x, f)
    check_result(dev.apply(xd, f[:40], repeat=5, inverse=True), x, f[:40], repeat=5, inverse=True)


def test_jobs_whose_tables_fit_alone_but_not_together_run_in_several_submissions(make_device):
    """apply_many's grouping counted the numpy tensors only: two resident jobs with a 4 MiB numpy table each,
    under an 8 MiB allocation, raised "split the call" where each alone ran (so did ExecuTorch's op, q and k in
    one call). The group runs in halves, in order (the second job reads the first's result)."""
    dev = make_device(max_memory_allocation_size=8 << 20, max_storage_buffer_range=1 << 20)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 4096, 256)).astype(np.float32)
    f, g = (rng.standard_normal((4096, 256)).astype(np.float32) for _ in range(2))
    dx, mid = dev.asarray(x), dev.asarray(np.full(x.shape, np.nan, np.float32))
    before = dev.stats()["submissions"]
    first, second = dev.apply_many([(dx, f, {"out": mid}), (mid, g)])
    assert dev.stats()["submissions"] - before == 2
    y = check_result(first, x, f)
    check_result(second, y, g)
    q = rng.standard_normal((1, 8192, 1, 128)).astype(np.float32)
    cos, sin = (rng.standard_normal((8192, 64)).astype(np.float32) for _ in range(2))
    qo, ko = dev.apply_rotary_emb(dev.asarray(q), dev.asarray(q), cos, sin)
    want, _ = et_apply_rotary_emb(q, q, cos, sin)
    for got in (qo.get(), ko.get()):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


def test_a_group_with_a_job_too_big_alone_is_refused_before_any_of_it_runs(make_device):
    """Halving a group whose tables pass the arena together ran its first half, then refused the second, a job
    whose own tables pass one allocation: the first job's output was written though the call failed. Such a
    group is refused whole, nothing run, as a call that does not fit always was."""
    dev = make_device(max_memory_allocation_size=8 << 20, max_storage_buffer_range=1 << 20)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 4096, 256)).astype(np.float32)
    f = rng.standard_normal((4096, 256)).astype(np.float32)
    y = rng.standard_normal((1, 12288, 256)).astype(np.float16)
    g = rng.standard_normal((12288, 256)).astype(np.float32)  # (12 MiB of float32 table: past the 8 MiB alone)
    dx, dy, mid = dev.asarray(x), dev.asarray(y), dev.asarray(np.full(x.shape, np.nan, np.float32))
    with pytest.raises(ValueError, match="more than the device's maxMemoryAllocationSize"):
        dev.apply_many([(dx, f, {"out": mid}), (dy, g)])
    assert np.isnan(mid.get()).all()
    check_result(dev.apply(dx, f), x, f)  # (usable afterwards)


@pytest.mark.parametrize("n", [4096, 1536], ids=["row-blocked-first", "own-group-first"])
def test_a_call_too_big_after_others_is_refused_before_any_runs(make_device, n):
    """apply_many ran its earlier jobs (a row-blocked one, or a group of their own) and then refused a later one
    whose numpy table alone passes one allocation: their outputs were written though the call failed. Every
    job's tables are made first; such a job refuses the call before any of it runs."""
    dev = make_device(max_memory_allocation_size=8 << 20, max_storage_buffer_range=1 << 20)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, n, 256)).astype(np.float32)
    f = rng.standard_normal((n, 256)).astype(np.float32)
    out = np.full_like(x, np.nan)
    y = dev.asarray(rng.standard_normal((1, 12288, 256)).astype(np.float16))
    g = rng.standard_normal((12288, 256)).astype(np.float32)  # (12 MiB of float32 table)
    with pytest.raises(ValueError, match="this call's tables need 12583120 bytes of staging"):
        dev.apply_many([(x, f, {"out": out}), (x[:, :512], f[:512]), (y, g)])
    assert np.isnan(out).all()
    check_result(dev.apply(x, f), x, f)


def test_a_texture_array_past_one_allocation_is_refused_before_it_is_allocated(make_device, vk_spy):
    """A texture3d array whose image needs more than maxMemoryAllocationSize (forced to 256 KiB) is refused
    before vkAllocateMemory sees it, as a buffer is, naming the image; smaller ones work after."""
    dev = make_device(max_memory_allocation_size=1 << 18, max_storage_buffer_range=1 << 16)
    with pytest.raises(vkrope.OutOfDeviceMemoryError, match=r"^a: a buffer of 1048576 bytes exceeds the device's "
                                                             r"maxMemoryAllocationSize of 262144 bytes$"):
        dev.asarray(np.zeros((4, 256, 256), np.float32))  # (a buffer too, naming the argument: an adversary's)
    with pytest.raises(vkrope.OutOfDeviceMemoryError, match=r"^a: a 3D image of \d+ x \d+ x \d+ texels needs \d+ "
                                                             r"bytes, more than the device's maxMemoryAllocationSize "
                                                             r"of 262144 bytes"):
        dev.asarray(np.zeros((2, 4, 300, 40), np.float32), storage="texture3d")
    assert all(size <= 1 << 18 for size in vk_spy["allocations"])
    x = np.random.default_rng(3).standard_normal((2, 4, 30, 40)).astype(np.float32)
    assert np.array_equal(dev.asarray(x, storage="texture3d").get(), x)


def test_a_device_array_of_another_dtype_is_told_to_convert_on_the_host(device):
    """A DeviceArray has no astype: an fp8 or float64-born x was told `x.astype(np.float32)` (an adversary's)."""
    x = device.asarray(np.zeros((1, 2, 8), vkrope.float8_e4m3fn))
    with pytest.raises(TypeError, match=r"^x must have dtype float32, float16 or bfloat16; got float8_e4m3fn \(a "
                                        r"DeviceArray converts on the host: Device.asarray\(x.get\(\).astype\(np.float32\)\)\)$"):
        device.apply(x, np.ones((2, 8), np.float32))
    with pytest.raises(TypeError, match=r"\(convert with x.astype\(np.float32\)\)$"):  # (numpy: its own astype)
        device.apply(np.zeros((1, 2, 8), np.int32), np.ones((2, 8), np.float32))

"""The runtime on its own, through a test-only operator with no RoPE in it
(tests/probe_op.py, glsl/runtime_probe.glsl): tensors of several shapes and
dtypes, one updated in place at given rows, numpy and resident in any mix,
both storages, batches ordered through an updated tensor, the discrete-GPU
path, row blocks past one allocation, recordings replayed, handles
released. Results against the probe's float64 reference (in probe_op.py,
sharing no code with vkrope's operators)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import vkrope
import probe_op
from vkrope.vk.binding import live_handles

RNG = np.random.default_rng(1919)
STORAGES = ["buffer", "texture3d"]


def _data(shape=(3, 5, 12), acc_rows=20, dtype=np.float32):
    x = RNG.standard_normal(shape).astype(dtype)
    acc = RNG.standard_normal((acc_rows, shape[-1])).astype(np.float32)
    rows = np.full(int(np.prod(shape[:-1])), -1)
    picked = RNG.choice(acc_rows, size=min(acc_rows, rows.size), replace=False)
    rows[RNG.choice(rows.size, size=picked.size, replace=False)] = picked
    return x, acc, rows


def _check(y, acc_after, x, acc, rows, scale=2.0):
    want_y, want_acc = probe_op.reference(x, acc, rows, scale)
    y = y.get() if isinstance(y, vkrope.DeviceArray) else y
    a = acc_after.get() if isinstance(acc_after, vkrope.DeviceArray) else acc_after
    tol_y = 1e-6 if y.dtype == np.float32 else 2.0 ** -10
    assert np.allclose(y, want_y, rtol=tol_y, atol=tol_y * np.abs(want_y).max()), np.abs(y - want_y).max()
    assert np.allclose(a, want_acc, rtol=1e-6, atol=1e-5), np.abs(a - want_acc).max()


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("x_on,acc_on", [(False, False), (True, False), (False, True), (True, True)],
                         ids=["numpy", "resident_x", "resident_acc", "resident"])
def test_tensors_of_several_shapes_one_updated_in_place(device, dtype, storage, x_on, acc_on):
    x, acc, rows = _data(dtype=dtype)
    xin = device.asarray(x, storage=storage) if x_on else x
    acc_in = device.asarray(acc) if acc_on else acc.copy()
    out = np.full_like(x, np.nan) if not x_on else None
    y = probe_op.run(device, xin, acc_in, rows, out=out, storage=storage if not x_on else "auto")
    assert (y is out) if out is not None else isinstance(y, vkrope.DeviceArray)
    _check(y, acc_in, x, acc, rows)


@pytest.mark.parametrize("storage", STORAGES)
def test_a_batch_is_ordered_through_the_tensor_it_updates(device, storage):
    """Three jobs in one submission that update one resident acc (and one
    reads the other's output): the recorder's barriers order them."""
    x1, acc, rows1 = _data()
    x2, _, rows2 = _data()
    dacc = device.asarray(acc)
    dx1 = device.asarray(x1, storage=storage)
    d_out = device.asarray(np.zeros_like(x1), storage=storage)
    jobs = [probe_op._job(probe_op.check(dx1, dacc, rows1, out=d_out)),
            probe_op._job(probe_op.check(d_out, dacc, rows2, scale=0.5)),
            probe_op._job(probe_op.check(device.asarray(x2, storage=storage), dacc, rows1))]
    device._run(probe_op, jobs)
    want = probe_op.reference(x1, acc, rows1)[1]
    want = probe_op.reference(2 * x1, want, rows2)[1]
    want = probe_op.reference(x2, want, rows1)[1]
    assert np.allclose(dacc.get(), want, atol=1e-5)


def test_out_that_is_x_runs_in_place(device):
    x, acc, rows = _data(shape=(20, 12))
    dx = device.asarray(x)
    assert probe_op.run(device, dx, acc.copy(), rows, out=dx) is dx  # may alias: in place
    assert np.allclose(dx.get(), 2 * x)


def test_two_outputs_on_one_memory_are_refused(device):
    """Which of two results would win is not defined: refused by name,
    before any work (the #19 review)."""
    a = RNG.standard_normal((20, 12)).astype(np.float32)
    da = device.asarray(a)
    s0 = device.stats()["submissions"]
    with pytest.raises(ValueError, match="^acc and out are the same memory, and both are written"):
        probe_op.run(device, da, da, np.arange(20), out=da)
    h = a.copy()
    with pytest.raises(ValueError, match="^acc and out are the same memory"):
        probe_op.run(device, np.zeros_like(h), h, np.arange(20), out=h)
    assert device.stats()["submissions"] == s0
    assert np.array_equal(da.get(), a)


@pytest.mark.parametrize("resident", [True, False], ids=["resident", "numpy"])
def test_an_updated_tensor_that_is_also_an_input_goes_through_a_temporary(device, resident):
    """x is acc: the kernel may not update memory other invocations read, so
    acc is updated in a temporary (copied in before, back after): x reads
    acc as it was."""
    a = RNG.standard_normal((20, 12)).astype(np.float32)
    rows = RNG.permutation(20)
    held = device.asarray(a) if resident else a.copy()
    y = probe_op.run(device, held, held, rows)
    want_y, want_acc = probe_op.reference(a, a, rows)
    assert np.allclose(y.get() if resident else y, want_y)
    assert np.allclose(held.get() if resident else held, want_acc)


def test_a_copy_after_two_launches_is_ordered(device):
    """The #19 review's hazard: a launch writes D, a later launch reads it,
    then a copy reads it (an update through a temporary starts from D): the
    barrier after the first launch must cover the copy's stage too. The
    validation layer (synchronization validation on) fails this test
    otherwise."""
    x, acc, rows = _data(shape=(20, 12))
    d = device.asarray(np.zeros_like(x))
    other = device.asarray(acc)
    jobs = [probe_op._job(probe_op.check(device.asarray(x), other, rows, out=d)),
            probe_op._job(probe_op.check(d, device.asarray(acc), rows)),
            probe_op._job(probe_op.check(d, d, np.arange(20), scale=1.0))]
    outs = device._run(probe_op, jobs)
    assert np.allclose(outs[1]["out"].get(), 4 * x)
    assert np.allclose(outs[2]["out"].get(), 2 * x)
    assert np.allclose(d.get(), 4 * x)  # 2 x, then 2 x added to every row by the third job


@pytest.mark.parametrize("storage", STORAGES)
def test_the_discrete_gpu_path(make_device, storage):
    dev = make_device(unified=False)
    x, acc, rows = _data()
    a = acc.copy()
    y = probe_op.run(dev, x, a, rows, storage=storage)
    _check(y, a, x, acc, rows)
    da = dev.asarray(acc)
    y = probe_op.run(dev, dev.asarray(x, storage=storage), da, rows)
    _check(y, da, x, acc, rows)


def test_row_blocks_past_one_allocation_update_in_turn(make_device):
    dev = make_device(max_memory_allocation_size=64 << 10, max_storage_buffer_range=16 << 10)
    x, acc, rows = _data(shape=(4, 700, 12), acc_rows=300)
    assert x.nbytes > 64 << 10
    a = acc.copy()
    before = dev.stats()["submissions"]
    y = probe_op.run(dev, x, a, rows)
    assert dev.stats()["submissions"] - before > 2  # blocks, one submission each
    _check(y, a, x, acc, rows)


def test_changing_rows_replay_one_recording(device):
    x, acc, _ = _data()
    dacc = device.asarray(acc)
    probe_op.run(device, x, dacc, np.arange(15))
    made = device.stats()["recordings"]
    for k in range(1, 20):
        probe_op.run(device, x, dacc, (np.arange(15) + k) % 20)
    assert device.stats()["recordings"] == made


def test_stats_count_the_bytes_moved(device):
    x, acc, rows = _data()
    s0 = device.stats()
    probe_op.run(device, x, acc.copy(), rows)
    s1 = device.stats()
    # up: x, acc and the rows table; back: out and acc
    assert s1["bytes_uploaded"] - s0["bytes_uploaded"] == x.nbytes + acc.nbytes + 4 * rows.size
    assert s1["bytes_read_back"] - s0["bytes_read_back"] == x.nbytes + acc.nbytes
    assert s1["submissions"] - s0["submissions"] == 1


def test_handles_return_to_baseline():
    gc.collect()
    before = live_handles()
    with vkrope.Device() as dev:
        for storage in STORAGES:
            x, acc, rows = _data()
            probe_op.run(dev, x, acc.copy(), rows, storage=storage)
            probe_op.run(dev, dev.asarray(x, storage=storage), dev.asarray(acc), rows)
    gc.collect()
    assert live_handles() == before


def test_refusals_before_any_work(device):
    x, acc, rows = _data()
    bad_rows = rows.copy()
    bad_rows[:2] = 3
    s0 = device.stats()
    with pytest.raises(ValueError, match="rows names an acc row twice"):
        probe_op.run(device, x, acc, bad_rows)
    with pytest.raises(TypeError, match="acc must be a float32"):
        probe_op.run(device, x, acc.astype(np.float16), rows)
    with vkrope.Device() as other:
        with pytest.raises(ValueError, match=r"^acc lives on another vkrope.Device"):
            probe_op.run(device, x, other.asarray(acc), rows)
    assert device.stats()["submissions"] == s0["submissions"]


def test_a_batch_through_numpy_memory_runs_as_calls_in_order(device):
    """Two jobs that update one numpy acc, the second reading the first's
    numpy out: ordered from what the requests declare (the #19 review: the
    second update was lost, the second x read zeros)."""
    x1, acc, rows1 = _data()
    _, _, rows2 = _data()
    a, mid = acc.copy(), np.full_like(x1, np.nan)
    jobs = [probe_op._job(probe_op.check(x1, a, rows1, out=mid)), probe_op._job(probe_op.check(mid, a, rows2))]
    outs = device._run(probe_op, jobs)
    after1 = probe_op.reference(x1, acc, rows1)[1]
    want_out2, want_acc = probe_op.reference(2 * x1, after1, rows2)
    assert np.allclose(mid, 2 * x1)
    assert np.allclose(outs[1]["out"], want_out2)
    assert np.allclose(a, want_acc, atol=1e-5)

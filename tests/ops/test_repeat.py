"""A call's structure checked once for arguments that repeat (#32,
vkrope/ops/repeat.py): `apply` and `rope_and_cache` keep what their checks
derive from every argument but the positions, by the arguments' identity.
These tests hunt for a kept structure used where it no longer holds: an
argument that changed (a numpy array's data, a value of another type or
sign), an object that died and whose id came back, a DeviceArray released
or of a closed device (the front end's own error, by the caller's name),
per-call data that must be checked at every call; and for a structure that
keeps the caller's arrays alive. Results are compared with float64 oracles
written here (tests/oracles/oracle_cache.py), outputs poisoned first."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import vkrope
from vkrope.ops import decode, sam2
from vkrope.ops.repeat import Structures

from oracle_cache import decode_step, poisoned

D = 16


class Counted:
    """A structure check that counts its calls and returns a fresh object per call (a hit returns the kept one)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return (self.calls, repr(args))


def counting(monkeypatch, structures: Structures) -> Counted:
    """Count the calls of a front end's structure check (its kept structures forgotten first)."""
    real = structures._check
    seen = Counted()

    def check(*args):
        seen.calls += 1
        return real(*args)

    structures.clear()
    monkeypatch.setattr(structures, "_check", check)
    return seen


def test_values_are_kept_by_type_and_value_zero_by_its_sign():
    """True and 1 and 1.0, np.float32(1) and 1.0, 0.0 and -0.0: each its own structure; equal ones kept."""
    counted = Counted()
    s = Structures(counted)
    firsts = [s(v)[0] for v in (True, 1, 1.0, np.float32(1.0), 0.0, -0.0, "a", None, (1, 2))]
    assert firsts == list(range(1, 10))
    again = [s(v)[0] for v in (True, 1, 1.0, np.float32(1.0), 0.0, -0.0, "a", None, (1, 2))]
    assert again == firsts and counted.calls == 9


def test_a_numpy_array_is_never_kept():
    """Its data (which a check may read) and even its shape can change in place: every call checks it."""
    counted = Counted()
    s = Structures(counted)
    a = np.zeros(4, np.float32)
    s(a)
    a[0] = 1.0
    s(a)
    s((a, 1))
    assert counted.calls == 3 and len(s) == 0


def test_an_id_that_comes_back_is_another_object():
    """A spec dies and a new one takes its id (CPython reuses the address): the new one is checked, not taken for
    the old one."""
    counted = Counted()
    s = Structures(counted)
    reused = 0
    for i in range(200):
        spec = vkrope.RopeFreqs(16, base=10000.0 + i)
        before, old_id = counted.calls, id(spec)
        got = s(spec)
        assert counted.calls == before + 1 and got[1] == repr((spec,))
        del spec
        spec = vkrope.RopeFreqs(16, base=20000.0 + i)
        reused += id(spec) == old_id
        assert s(spec)[1] == repr((spec,))
        del spec
    assert reused > 0  # (else this test tried nothing: CPython gives a freed address to the next object of its size)


def test_kept_structures_keep_no_array_alive(make_device):
    """A DeviceArray the caller drops is freed as before: the kept structures hold weak references only."""
    dev = make_device()
    x = dev.asarray(np.ones((2, 3, D), np.float32))
    t = dev.asarray(np.ones((3, D), np.float32))
    out = dev.asarray(np.zeros((2, 3, D), np.float32))
    dev.apply(x, t, out=out)
    kc, vc = (dev.asarray(np.zeros((1, 1, 8, D), np.float32)) for _ in range(2))
    q = dev.asarray(np.ones((1, 2, 1, D), np.float32))
    dev.rope_and_cache(q, np.ones((1, 1, 1, D), np.float32), np.ones((1, 1, 1, D), np.float32), kc, vc,
                       vkrope.RopeFreqs(D), np.array([[3]]))
    table = weakref.ref(t)
    del t  # (alone first: the others alive, their entries kept, must not hold it)
    gc.collect()
    assert table() is None
    refs = [weakref.ref(a) for a in (x, out, kc, vc, q)]
    del x, out, kc, vc, q
    gc.collect()
    assert all(r() is None for r in refs)


def test_a_repeated_resident_apply_checks_its_structure_once(make_device, monkeypatch):
    """The tiny resident call of the benchmark: one structure check for many calls, each result right."""
    seen = counting(monkeypatch, sam2._structures)
    dev = make_device()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, D)).astype(np.float32)
    ang = rng.uniform(-3, 3, (3, D // 2))
    table = np.stack([np.cos(ang), np.sin(ang)], -1).reshape(3, D).astype(np.float32)
    dx, dt = dev.asarray(x), dev.asarray(table)
    out = dev.asarray(np.full(x.shape, np.nan, np.float32))
    for _ in range(5):
        dev.apply(dev.asarray(np.full(x.shape, np.nan, np.float32)), dt, out=out)  # (poison: its own structure)
        dev._rt.kept_calls.clear()  # (else the call is replayed whole, and its front end not called at all)
        dev.apply(dx, dt, out=out)
        c, s = np.cos(ang), np.sin(ang)
        re, im = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
        want = np.stack([re * c - im * s, re * s + im * c], -1).reshape(x.shape)
        assert np.abs(out.get() - want).max() < 1e-5
    assert seen.calls == 1 + 5  # (each poisoning call has a new array: checked)


def test_positions_are_checked_at_every_call(make_device, monkeypatch):
    """apply with a spec: the structure is kept, the positions are not (one out of range is refused on a kept
    structure, the output untouched)."""
    seen = counting(monkeypatch, sam2._structures)
    dev = make_device()
    dx = dev.asarray(np.ones((1, 2, D), np.float32))
    out = dev.asarray(np.zeros((1, 2, D), np.float32))
    table = dev.asarray(np.tile(np.array([1.0, 0.0], np.float32), (4, D // 2)))
    dev.apply(dx, table, positions=np.array([0, 3]), out=out)
    with pytest.raises(ValueError, match=r"positions entries must lie in \[-1, Nf\) = \[-1, 4\).*got 4"):
        dev.apply(dx, table, positions=np.array([0, 4]), out=out)
    with pytest.raises(TypeError, match="positions must be an integer"):
        dev.apply(dx, table, positions=np.array([0.0, 1.0]), out=out)
    assert seen.calls == 1
    np.testing.assert_array_equal(out.get(), np.ones((1, 2, D), np.float32))


def test_a_value_of_another_type_is_checked_again(make_device):
    """inverse=True kept; inverse=1 (not a bool) is still refused."""
    dev = make_device()
    dx = dev.asarray(np.ones((1, 2, D), np.float32))
    table = dev.asarray(np.tile(np.array([1.0, 0.0], np.float32), (2, D // 2)))
    dev.apply(dx, table, inverse=True, out=dx)
    with pytest.raises(TypeError, match="inverse must be a bool"):
        dev.apply(dx, table, inverse=1, out=dx)


def test_a_released_array_gets_the_front_ends_own_error(make_device):
    """A kept structure whose DeviceArray was released, or whose device closed: the call fails as its first
    would have, naming the argument as the caller passed it (`out`, not the kernel's `q_out`)."""
    dev = make_device()
    q = dev.asarray(np.ones((1, 2, 1, D), np.float32))
    out = dev.asarray(np.zeros((1, 2, 1, D), np.float32))
    kc, vc = (dev.asarray(np.zeros((1, 1, 8, D), np.float32)) for _ in range(2))
    kv = dev.asarray(np.ones((1, 1, 1, D), np.float32))  # (resident: a numpy argument is never kept)
    spec = vkrope.RopeFreqs(D)
    dev.rope_and_cache(q, kv, kv, kc, vc, spec, np.array([[1]]), out=out)
    assert len(decode._structures)
    out.release()
    with pytest.raises(ValueError, match=r"^out is a released DeviceArray"):
        dev.rope_and_cache(q, kv, kv, kc, vc, spec, np.array([[2]]), out=out)
    out = dev.asarray(np.zeros((1, 2, 1, D), np.float32))
    dev.rope_and_cache(q, kv, kv, kc, vc, spec, np.array([[2]]), out=out)
    dev.close()
    with pytest.raises(vkrope.DeviceClosedError, match=r"^q is a DeviceArray of a vkrope.Device that was closed"):
        dev.rope_and_cache(q, kv, kv, kc, vc, spec, np.array([[3]]), out=out)


def test_numpy_norm_weights_changed_in_place_take_effect(make_device):
    """q_norm / k_norm are numpy: never kept, so weights written between two steps are the second step's."""
    dev = make_device()
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((1, h, 1, D)).astype(np.float32) for h in (2, 1, 1))
    table = np.arange(8 * D // 2, dtype=np.float32).reshape(8, D // 2) * 0.01
    cos, sin = np.cos(table), np.sin(table)
    w = np.ones(D, np.float32)
    kc0 = vc0 = np.zeros((1, 1, 8, D), np.float32)
    for step, scale in enumerate((1.0, 3.0)):
        w[:] = scale
        kc, vc = dev.asarray(poisoned(kc0.shape, np.float32)), dev.asarray(poisoned(vc0.shape, np.float32))
        pos = np.array([[step]])
        y = dev.rope_and_cache(q, k, v, kc, vc, (cos, sin), pos, q_norm=w, k_norm=w)
        kc_want = poisoned(kc0.shape, np.float32).astype(np.float64)
        q_rot, kc_ref, _, written = decode_step(q, k, v, kc_want, kc_want, cos, sin, pos, q_norm=w, k_norm=w)
        assert np.abs(y - q_rot).max() < 1e-5 * scale
        assert np.abs(kc.get()[written] - kc_ref[written]).max() < 1e-5 * scale


def _copy_into(dev, values: np.ndarray, dst) -> None:
    """Write numpy `values` into the resident `dst` (the identity rotation at position 0: cos 1, sin 0 exactly)."""
    dev.apply(dev.asarray(values), vkrope.RopeFreqs(D), positions=np.zeros(values.shape[-2], np.int64), out=dst)


@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_a_decode_loop_on_a_kept_structure_follows_positions_and_slots(make_device, monkeypatch, paged):
    """Ten steps of one layer over the same arrays (new data each step): one structure check; each step's rows
    land where its own positions (or slots) say, and one past the cache is refused with the caches untouched."""
    seen = counting(monkeypatch, decode._structures)
    dev = make_device()
    rng = np.random.default_rng(6 + paged)
    s_max = 12
    spec = vkrope.RopeFreqs(D, base=500.0)
    ang = np.arange(s_max)[:, None] * (1.0 / 500.0 ** (np.arange(0, D, 2) / D))
    cos, sin = np.cos(ang), np.sin(ang)
    shape = (3, 4, 1, D) if paged else (1, 1, s_max, D)
    kc_ref = vc_ref = poisoned(shape, np.float32).astype(np.float64)
    kc, vc = dev.asarray(poisoned(shape, np.float32)), dev.asarray(poisoned(shape, np.float32))
    dq, dk, dv = (dev.asarray(np.zeros((1, h, 1, D), np.float32)) for h in (2, 1, 1))
    q_out = dev.asarray(np.zeros((1, 2, 1, D), np.float32))
    for p in range(10):
        q, k, v = (rng.standard_normal((1, h, 1, D)).astype(np.float32) for h in (2, 1, 1))
        for values, dst in ((q, dq), (k, dk), (v, dv)):
            _copy_into(dev, values, dst)
        _copy_into(dev, np.full(q_out.shape, np.nan, np.float32), q_out)
        pos, slots = np.array([[p]]), (np.array([[(7 * p) % 12]]) if paged else None)
        dev.rope_and_cache(dq, dk, dv, kc, vc, spec, pos, slots=slots, out=q_out)
        q_rot, kc_ref, vc_ref, _ = decode_step(q, k, v, kc_ref, vc_ref, cos, sin, pos, slots=slots)
        assert np.abs(q_out.get() - q_rot).max() < 1e-5
        written = ~np.isnan(kc_ref)
        assert np.abs(kc.get()[written] - kc_ref[written]).max() < 1e-5
        assert np.abs(vc.get()[written] - vc_ref[written]).max() < 1e-6
    before = kc.get()
    with pytest.raises(ValueError, match="slots must lie in" if paged else "position_ids must be < S_max = 12"):
        dev.rope_and_cache(dq, dk, dv, kc, vc, spec, np.array([[10 if paged else 12]]),
                           slots=np.array([[12]]) if paged else None, out=q_out)
    np.testing.assert_array_equal(kc.get(), before)
    assert seen.calls == 1


def test_a_model_rope_resolves_at_every_call(make_device):
    """A ModelRope's frequencies depend on the positions (dynamic NTK past max_position_embeddings): a kept
    structure resolves them at each call, bit for bit as the caller's own `rope.freqs(positions)` does."""
    dev = make_device()
    rope = vkrope.from_hf({"model_type": "llama", "hidden_size": 2 * D, "num_attention_heads": 2,
                           "rope_theta": 10000.0, "max_position_embeddings": 64,
                           "rope_scaling": {"rope_type": "dynamic", "factor": 4.0}})
    assert rope.freqs(np.array([[5]])).inv_freq != rope.freqs(np.array([[200]])).inv_freq  # (the test's premise)
    q = dev.asarray(np.random.default_rng(8).standard_normal((1, 2, 1, D)).astype(np.float32))
    kv = np.ones((1, 1, 1, D), np.float32)
    kc, vc = (dev.asarray(np.zeros((1, 1, 300, D), np.float32)) for _ in range(2))
    out = dev.asarray(np.zeros((1, 2, 1, D), np.float32))
    for p in (5, 200, 5, 250):
        pos = np.array([[p]])
        dev.rope_and_cache(q, kv, kv, kc, vc, rope, pos, out=out)
        kept = out.get()
        dev.rope_and_cache(q, kv, kv, kc, vc, rope.freqs(pos), pos, out=out)
        np.testing.assert_array_equal(out.get(), kept)


def test_entries_go_with_their_arrays(make_device):
    """A structure (holding, say, an [N] row table) and a kept call are dropped when an array they were made from
    dies, not when the memo fills."""
    dev = make_device()
    sam2._structures.clear()
    t = dev.asarray(np.ones((16, 4), np.float32))
    for _ in range(3):
        x = dev.asarray(np.ones((1, 4096, 4), np.float32))
        dev.apply(x, t, out=x, repeat=256)
        assert len(sam2._structures) == 1 and len(dev._rt.kept_calls) == 1
        del x
        gc.collect()
        assert len(sam2._structures) == 0 and len(dev._rt.kept_calls) == 0


def test_the_operation_is_part_of_the_key(make_device):
    """Two operations given the very same arguments are two calls: neither replays the other."""
    from vkrope.device import operation

    def apply_inverse(x: vkrope.DeviceArray, freqs: vkrope.DeviceArray, *,
                      out: vkrope.DeviceArray | None = None) -> "sam2.Call[vkrope.DeviceArray]":
        """apply with inverse=True (a second operation, for this test)."""
        return sam2.apply(x, freqs, out=out, inverse=True)

    inverse = operation(apply_inverse)
    dev = make_device()
    x = np.random.default_rng(9).standard_normal((1, 2, D)).astype(np.float32)
    dx, out = dev.asarray(x), dev.asarray(np.zeros_like(x))
    dt = dev.asarray(np.tile(np.array([0.0, 1.0], np.float32), (2, D // 2)))  # a quarter turn
    quarter = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
    for _ in range(3):
        np.testing.assert_array_equal(dev.apply(dx, dt, out=out).get(), quarter)
        np.testing.assert_array_equal(inverse(dev, dx, dt, out=out).get(), -quarter)
    assert dev.stats()["replayed_calls"] == 4


def test_a_structures_token_rows_are_small_and_right():
    """apply's structure keeps each token's freqs row as long as a resident x lives: int32 (int64 only past 2^31
    table rows), `t % Nf` for the rotated tokens and -1 after, built a block at a time (a 2^25-token x kept
    256 MiB of int64 before; a broadcast x of 2^28 tokens took 6 GiB of temporaries before its result was
    refused)."""
    rows = sam2._rows(10, 8, 3)
    assert rows.dtype == np.int32 and rows.tolist() == [0, 1, 2, 0, 1, 2, 0, 1, -1, -1]
    assert sam2._rows(4, 4, 2**31).dtype == np.int64  # (a row index past int32 stays exact)
    big = sam2._rows((1 << 20) + 5, (1 << 20) + 3, 7)  # (across a block's end)
    want = np.arange((1 << 20) + 5) % 7
    want[(1 << 20) + 3:] = -1
    np.testing.assert_array_equal(big, want)
    x = np.ones((1, 6, 4), np.float32)
    row_of = sam2.check(x, np.tile(np.float32([1, 0]), (3, 2)), repeat=2).row_of
    assert row_of.dtype == np.int32 and not row_of.flags.writeable

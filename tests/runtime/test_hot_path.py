"""The hot path (#32): a call that repeats a kept call's layout (same
operator, plan, shapes and places of its tensors; new data and positions)
is filled and submitted again without being laid out anew, and a plan that
does not depend on the data is memoised. Both are keyed by hand-written
keys, so these tests hunt for a key that misses a field: calls that differ
in one thing each must never share a plan or a layout, every result is
checked against float64 oracles written here, and outputs are poisoned
before every call."""

from __future__ import annotations

import gc
import threading
import time

import numpy as np
import pytest

import vkrope
from vkrope.kernels import cache as cache_kernel, interleaved, table as table_kernel
from vkrope.ops import decode, executorch, nd as nd_ops, onnx, sam2

from forced import hang_waits
from oracle import oracle
from oracle_family import onnx_rotary_embedding

D = 16


def rotated(x: np.ndarray, pos: np.ndarray, dim: int = D, base: float = 10000.0) -> np.ndarray:
    """float64 interleaved pairs of x [..., N, D] rotated at pos [N] by base^(-2i/dim) (first `dim` channels)."""
    x = np.asarray(x, np.float64)
    a = np.asarray(pos, np.float64)[:, None] * (1.0 / base ** (np.arange(0, dim, 2) / dim))
    c, s = np.cos(a), np.sin(a)
    y = x.copy()
    re, im = x[..., 0:dim:2], x[..., 1:dim:2]
    y[..., 0:dim:2], y[..., 1:dim:2] = re * c - im * s, re * s + im * c
    return y


def close(y, want) -> None:
    y = y.get() if isinstance(y, vkrope.DeviceArray) else np.asarray(y)
    assert np.abs(y.astype(np.float64) - want).max() <= 1e-5 * (np.abs(want).max() + 1)


def poison(dev, out: vkrope.DeviceArray) -> None:
    """NaN over a resident output, through a call of its own (not the path under test)."""
    nan = dev.asarray(np.full(out.shape, np.nan, out.dtype), storage=out.storage)
    dev.apply(nan, vkrope.RopeFreqs(out.shape[-1]), positions=np.zeros(out.shape[-2], np.int64), out=out)


def hot(dev) -> int:
    return dev.stats()["hot_calls"]


def test_a_decode_loop_takes_the_hot_path_and_follows_its_data(make_device):
    """Resident x, `out` and a spec, the position advancing: from the second
    step on each call is hot, and each result is the rotation at its own
    position; numpy x with new data every step the same."""
    dev = make_device()
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 1, D)).astype(np.float32)
    dx, out = dev.asarray(x), dev.asarray(np.zeros_like(x))
    spec = vkrope.RopeFreqs(D, angle="exact")
    dev.apply(dx, spec, positions=np.array([0]), out=out)
    before = hot(dev)
    for p in range(1, 21):
        poison(dev, out)
        dev.apply(dx, spec, positions=np.array([p]), out=out)
        close(out, rotated(x, np.array([p])))
    assert hot(dev) - before >= 20  # (each step's poisoning call is hot too, after its first)
    for p in range(5):
        xn = rng.standard_normal((4, 1, D)).astype(np.float32)
        close(dev.apply(xn, spec, positions=np.array([p])), rotated(xn, np.array([p])))


def test_another_array_of_the_same_shape_is_not_the_last_one(make_device):
    """Two resident inputs and outputs of one shape, alternating: the layout
    binds each call's own arrays (their resources are in the key)."""
    dev = make_device()
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((2, 3, D)).astype(np.float32) for _ in range(2)]
    dxs = [dev.asarray(x) for x in xs]
    outs = [dev.asarray(np.zeros_like(xs[0])) for _ in range(2)]
    spec = vkrope.RopeFreqs(D)
    pos = np.array([3, 7, 11])
    for step in range(6):
        i, j = step % 2, (step // 2) % 2
        poison(dev, outs[j])
        dev.apply(dxs[i], spec, positions=pos, out=outs[j])
        close(outs[j], rotated(xs[i], pos))


def test_a_grown_arena_is_laid_out_again(make_device):
    """A call whose numpy arguments need a larger argument arena replaces
    it (and every recording on it) in between: the small call after it is
    laid out again on the new arena, not replayed on the freed one."""
    dev = make_device()
    rng = np.random.default_rng(3)
    small = rng.standard_normal((2, 1, D)).astype(np.float32)
    big = rng.standard_normal((2, 2048, D)).astype(np.float32)
    spec = vkrope.RopeFreqs(D, angle="exact")
    for _ in range(2):
        close(dev.apply(small, spec, positions=np.array([5])), rotated(small, np.array([5])))
    close(dev.apply(big, spec, positions=np.arange(2048)), rotated(big, np.arange(2048)))
    before = hot(dev)
    close(dev.apply(small, spec, positions=np.array([6])), rotated(small, np.array([6])))
    assert hot(dev) == before  # laid out anew
    close(dev.apply(small, spec, positions=np.array([7])), rotated(small, np.array([7])))
    assert hot(dev) == before + 1


def test_a_released_result_comes_back_hot(make_device):
    """Results released every step: the pool hands the same buffer back, the
    layout repeats, and every result is right."""
    dev = make_device()
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 2, D)).astype(np.float32)
    dx = dev.asarray(x)
    spec = vkrope.RopeFreqs(D)
    before = hot(dev)
    for p in range(8):
        y = dev.apply(dx, spec, positions=np.array([p, p + 1]))
        close(y, rotated(x, np.array([p, p + 1])))
        y.release()
    assert hot(dev) - before >= 6


def test_the_decode_step_is_hot_and_right(make_device):
    """rope_and_cache with numpy q, k, v and out (new data every step),
    resident caches, a spec: hot from the second step; every step's q and cache rows right, rows not
    written keep their bits."""
    dev = make_device()
    rng = np.random.default_rng(5)
    b, hq, hk, s_max = 1, 4, 2, 12
    spec = vkrope.RopeFreqs(D, angle="exact")
    kc = dev.asarray(np.full((b, hk, s_max, D), 7.0, np.float32))
    vc = dev.asarray(np.full((b, hk, s_max, D), 7.0, np.float32))
    q_out = np.zeros((b, hq, 1, D), np.float32)
    before = None
    for p in range(8):
        q, k, v = (rng.standard_normal((b, h, 1, D)).astype(np.float32) for h in (hq, hk, hk))
        q_out[:] = np.nan
        if p == 1:
            before = hot(dev)
        dev.rope_and_cache(q, k, v, kc, vc, spec, np.array([[p]]), interleaved=True, out=q_out)
        close(q_out, rotated(q[0, :, 0], np.array([p] * hq))[None, :, None])
        close(kc.get()[0, :, p], rotated(k[0, :, 0], np.array([p] * hk)))
        close(vc.get()[0, :, p], v[0, :, 0])
    assert hot(dev) - before == 7
    assert (kc.get()[0, :, 8:] == 7.0).all() and (vc.get()[0, :, 8:] == 7.0).all()


def test_threads_alternating_shapes_stay_apart(make_device):
    """Two threads on one device, each with its own shape and arrays: every
    result is its own call's."""
    dev = make_device()
    spec = vkrope.RopeFreqs(D)
    errors: list[BaseException] = []

    def worker(n: int, seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            x = rng.standard_normal((2, n, D)).astype(np.float32)
            dx, out = dev.asarray(x), dev.asarray(np.zeros_like(x))
            for p in range(30):
                pos = np.arange(p, p + n)
                dev.apply(dx, spec, positions=pos, out=out)
                close(out, rotated(x, pos))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n, n)) for n in (1, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_a_decode_loop_past_one_binding_follows_its_positions(make_device):
    """Caches and resident (cos, sin) tables past a 4 KiB binding: the
    caches bind in fixed slices, the tables as a window over the rows each
    step's token reads, so that plan is made per step (never memoised); every
    step's row is right wherever it lies."""
    dev = make_device(max_storage_buffer_range=4096, min_storage_buffer_offset_alignment=256)
    rng = np.random.default_rng(8)
    hk, s_max = 2, 200
    a = np.arange(s_max)[:, None] * (1.0 / 10000.0 ** (np.arange(0, D, 2) / D))
    cos, sin = dev.asarray(np.cos(a).astype(np.float32)), dev.asarray(np.sin(a).astype(np.float32))  # 6.4 KiB each
    kc = dev.asarray(np.zeros((1, hk, s_max, D), np.float32))
    vc = dev.asarray(np.zeros((1, hk, s_max, D), np.float32))
    for p in (3, 190, 77, 120, 5):
        q, k, v = (rng.standard_normal((1, h, 1, D)).astype(np.float32) for h in (2 * hk, hk, hk))
        y = dev.rope_and_cache(q, k, v, kc, vc, (cos, sin), np.array([[p]]), interleaved=True)
        close(y, rotated(q[0, :, 0], np.array([p] * 2 * hk))[None, :, None])
        close(kc.get()[0, :, p], rotated(k[0, :, 0], np.array([p] * hk)))
        close(vc.get()[0, :, p], v[0, :, 0])


@pytest.mark.parametrize("tables", ["resident", "numpy", "spec"])
def test_a_table_kernel_decode_loop_follows_its_positions(make_device, tables):
    """ONNX RotaryEmbedding one token at a time, positions jumping, on a 4
    KiB binding: a resident (cos, sin) table past it binds a window over
    each step's row (a plan per step), a numpy one gathers the step's row
    and a spec computes it (one memoised plan for every step); each step
    right against the float64 oracle, its output poisoned first."""
    dev = make_device(max_storage_buffer_range=4096, min_storage_buffer_offset_alignment=64)
    rng = np.random.default_rng(12)
    s_max = 200
    a = np.arange(s_max)[:, None] * (1.0 / 10000.0 ** (np.arange(0, D, 2) / D))
    cos, sin = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)  # 6.4 KiB each
    args = {"resident": (dev.asarray(cos), dev.asarray(sin)), "numpy": (cos, sin),
            "spec": (vkrope.RopeFreqs(D), None)}[tables]
    for p in (3, 190, 77, 120, 5, 6):
        x = rng.standard_normal((1, 2, 1, D)).astype(np.float32)
        out = dev.asarray(np.full((1, 2, 1, D), np.nan, np.float32))
        y = dev.rotary_embedding(dev.asarray(x), *args, np.array([[p]]), out=out)
        np.testing.assert_allclose(y.get(), onnx_rotary_embedding(x, cos, sin, np.array([[p]])), rtol=0, atol=2e-6)
    plans = [k for k in dev._rt.memo if k[0] == table_kernel.__name__]
    assert len(plans) == (0 if tables == "resident" else 1), plans  # (the window's plans are never memoised)


def _apply_requests(dev) -> list:
    """Checked `apply` requests, each differing from another in one thing."""
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 3, D)).astype(np.float32)
    table = np.stack([np.cos(np.outer(np.arange(8), np.ones(D // 2))),
                      np.sin(np.outer(np.arange(8), np.ones(D // 2)))], -1).reshape(8, D).astype(np.float32)
    pos = np.array([1, 2, 3])
    x4 = rng.standard_normal((2, 4, D)).astype(np.float32)
    axial = vkrope.AxialFreqs(D, end_x=2, end_y=2)  # (takes positions or not)
    return [sam2.check(x, vkrope.RopeFreqs(D), positions=pos),
            sam2.check(x, vkrope.RopeFreqs(D, base=500.0), positions=pos),
            sam2.check(x, vkrope.RopeFreqs(D, angle="exact"), positions=pos),
            sam2.check(x[..., :D - 4], vkrope.RopeFreqs(D - 4), positions=pos),
            sam2.check(x, vkrope.RopeFreqs(D), positions=pos, inverse=True),
            sam2.check(x.astype(np.float16), vkrope.RopeFreqs(D), positions=pos),
            sam2.check(x[:, :2], vkrope.RopeFreqs(D), positions=pos[:2]),
            sam2.check(x, vkrope.RopeFreqs(D), positions=pos, storage="texture3d"),
            sam2.check(x, table[:3]),
            sam2.check(x, table[:3] * 0.5),  # (other data, one plan)
            sam2.check(x, table[:1], repeat=3),
            sam2.check(x, table[:2], exclude_last=1),
            sam2.check(x, dev.asarray(table[:3])),
            sam2.check(x, table, positions=pos),
            sam2.check(x4, table[:2], repeat=2),  # (N 4: n_rot 4 over 2 rows, or 2 rows for 2 of 4 tokens)
            sam2.check(x4, table[:2], exclude_last=2),
            sam2.check(x.astype(np.float16), table[:3].astype(np.float16)),  # (16-bit tables read as they are)
            sam2.check(x.astype(np.float16), table[:3]),
            sam2.check(x4, axial),
            sam2.check(x4, axial, positions=np.arange(4)),
            # positions into tables: a decode loop's plan holds for any positions (fit.rows_matter)
            sam2.check(x, table, positions=np.array([7, 0, 5])),
            sam2.check(x, dev.asarray(table), positions=pos),
            sam2.check(x, dev.asarray(table), positions=np.array([7, 6, 0]))]


def _cache_requests(dev) -> list:
    """Checked `rope_and_cache` requests, each differing from another in one thing."""
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((1, 4, 1, D)).astype(np.float32), rng.standard_normal((1, 2, 1, D)).astype(np.float32)
    kc = dev.asarray(np.zeros((1, 2, 9, D), np.float32))
    vc = dev.asarray(np.zeros((1, 2, 9, D), np.float32))
    paged = [dev.asarray(np.zeros((4, 3, 2, D), np.float32)) for _ in range(2)]
    paged5 = [dev.asarray(np.zeros((5, 3, 2, D), np.float32)) for _ in range(2)]  # more blocks: the same stride
    paged_hk1 = [dev.asarray(np.zeros((8, 3, 1, D), np.float32)) for _ in range(2)]  # as many values, one head
    fp8 = [dev.asarray(np.zeros((1, 2, 9, D), vkrope.float8_e4m3fn)) for _ in range(2)]
    f16 = [dev.asarray(np.zeros((1, 2, 9, D), np.float16)) for _ in range(2)]
    bigger = [dev.asarray(np.zeros((1, 2, 12, D), np.float32)) for _ in range(2)]
    cos, sin = (t.astype(np.float32) for t in (np.cos(np.ones((9, D // 2))), np.sin(np.ones((9, D // 2)))))
    w = np.ones(D, np.float32)
    spec, pos = vkrope.RopeFreqs(D), np.array([[3]])
    return [decode.check(q, k, k, kc, vc, spec, pos),
            decode.check(q, k, k, kc, vc, spec, np.array([[5]])),  # the same plan: positions are data
            decode.check(q, k, k, kc, vc, vkrope.RopeFreqs(D, base=100.0), pos),
            decode.check(q, k, k, kc, vc, vkrope.RopeFreqs(D, angle="exact"), pos),
            decode.check(q, k, k, kc, vc, vkrope.RopeFreqs(D - 8), pos),
            decode.check(q, k, k, kc, vc, spec, pos, interleaved=True),
            decode.check(q, k, k, kc, vc, spec, pos, q_norm=w, k_norm=w),
            decode.check(q, k, k, kc, vc, spec, pos, q_norm=w, k_norm=w, norm_plus_one=True),
            decode.check(q, k, k, kc, vc, spec, pos, q_norm=w, k_norm=w, eps=1e-3),
            decode.check(q.astype(np.float16), k.astype(np.float16), k.astype(np.float16), kc, vc, spec, pos),
            decode.check(q[:, :2], k, k, kc, vc, spec, pos),
            decode.check(q, k, k, *paged, spec, pos, slots=np.array([[4]])),
            decode.check(q, k, k, *paged5, spec, pos, slots=np.array([[4]])),
            decode.check(q, k[:, :1], k[:, :1], *paged_hk1, spec, pos, slots=np.array([[4]])),
            decode.check(q, k, k, *fp8, spec, pos),
            decode.check(q, k, k, *fp8, spec, pos, k_scale=0.5),
            decode.check(q, k, k, *fp8, spec, pos, v_scale=0.5),
            decode.check(q, k, k, *f16, spec, pos),
            decode.check(q, k, k, *bigger, spec, pos),
            decode.check(q, k, k, kc, vc, (cos, sin), pos),
            decode.check(q, k, k, kc, vc, (cos[:, :2], sin[:, :2]), pos),
            decode.check(q, k, k, kc, vc, (dev.asarray(cos), dev.asarray(sin)), pos)]


def _table_requests(dev) -> list:
    """Checked requests of the table kernel (ONNX, ExecuTorch, transformers, N-D), each differing from another
    in one thing; the last six are pairs at other positions (a decode loop's: one plan)."""
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 2, 3, D)).astype(np.float32)  # ONNX [B, H, S, D]
    q, k = rng.standard_normal((1, 3, 2, D)).astype(np.float32), rng.standard_normal((1, 3, 1, D)).astype(np.float32)
    a = np.arange(9)[:, None] * np.ones(D // 2)
    cos, sin = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)
    full_c, full_s = np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1)
    dcos, dsin = dev.asarray(cos), dev.asarray(sin)
    pos, spec = np.array([[1, 2, 3]]), vkrope.RopeFreqs(D)
    nd = vkrope.NdFreqs(axes_dim=(D // 2, D // 2))
    return [onnx.check_onnx(x, cos, sin, pos),
            onnx.check_onnx(x, cos, sin, pos, interleaved=1),
            onnx.check_onnx(x, cos[:, :D // 4], sin[:, :D // 4], pos, rotary_embedding_dim=D // 2),
            onnx.check_onnx(x.astype(np.float16), cos, sin, pos),
            onnx.check_onnx(x.astype(np.float16), cos.astype(np.float16), sin.astype(np.float16), pos),
            onnx.check_onnx(x, cos, sin, pos, storage="texture3d"),
            onnx.check_onnx(x[:, :1], cos, sin, pos),
            onnx.check_onnx(x.transpose(0, 2, 1, 3).reshape(1, 3, 2 * D), cos, sin, pos, num_heads=2),
            onnx.check_onnx(x, dcos, dsin, pos),
            onnx.check_onnx(x, spec, None, pos),
            onnx.check_onnx(x, vkrope.RopeFreqs(D, base=100.0), None, pos),
            onnx.check_onnx(dev.asarray(x), dcos, dsin, pos),
            *executorch.check_hf(q, k, full_c, full_s, 2),
            *executorch.check_llm(q, k, cos[:3], sin[:3]),
            nd_ops.check_nd(rng.standard_normal((1, 3, D)).astype(np.float32), nd, np.array([[0, 1], [1, 0], [2, 2]])),
            onnx.check_onnx(x, cos, sin, np.array([[8, 0, 4]])),  # numpy rows gathered per token
            onnx.check_onnx(x, cos, sin, np.array([[2, 7, 1]])),
            onnx.check_onnx(x, dcos, dsin, np.array([[8, 0, 4]])),  # a resident table bound whole
            onnx.check_onnx(x, dcos, dsin, np.array([[2, 7, 1]])),
            onnx.check_onnx(x, spec, None, np.array([[8, 0, 4]])),  # the spec's columns whole
            onnx.check_onnx(x, spec, None, np.array([[2, 7, 1]]))]


@pytest.mark.parametrize("op,requests", [(interleaved, _apply_requests), (cache_kernel, _cache_requests),
                                         (table_kernel, _table_requests)],
                         ids=["apply", "rope_and_cache", "table"])
def test_equal_plan_keys_mean_equal_plans(device, op, requests):
    """Across requests that each change one thing, two with one plan key
    have one plan; and the decode-shaped ones are memoised at all."""
    limits = device._context().info
    reqs = requests(device)
    keys = [op.plan_key(r, limits) for r in reqs]
    plans = [op.plan(r, limits) for r in reqs]
    assert keys[0] is not None
    for i in range(len(reqs)):
        for j in range(i):
            if keys[i] is not None and keys[i] == keys[j]:
                assert plans[i] == plans[j], f"requests {j} and {i} share a plan key but not a plan"
    if op is cache_kernel:
        assert keys[0] == keys[1]  # a new position is not a new plan
    elif op is table_kernel:  # (numpy and resident tables and a spec, each at two sets of positions)
        assert all(keys[i] is not None and keys[i] == keys[i + 1] for i in (-6, -4, -2))
    else:  # (numpy and resident tables, each at two sets of positions)
        assert keys[13] is not None and keys[13] == keys[-3] and keys[-2] is not None and keys[-2] == keys[-1]


def test_positions_that_shape_the_table_segments_are_not_memoised(make_device):
    """Positions into a table past what one binding holds (a 4 KiB binding): the rows a chunk reads shape
    its window (resident) or what it gathers (numpy, past 256 tokens a chunk): no plan key, and the plans
    do differ with the positions."""
    dev = make_device(max_storage_buffer_range=4096, min_storage_buffer_offset_alignment=64)
    limits = dev._context().info
    rng = np.random.default_rng(10)
    rows = 64  # 64 rows of D 16 float32: 4 KiB, more than a table's share of the binding
    table = rng.standard_normal((rows, D)).astype(np.float32)
    x = rng.standard_normal((1, 2, D)).astype(np.float32)
    near, far = np.array([0, 1]), np.array([60, 61])
    resident = dev.asarray(table)
    a, b = (sam2.check(x, resident, positions=p) for p in (near, far))
    assert interleaved.plan_key(a, limits) is None
    assert interleaved.plan(a, limits) != interleaved.plan(b, limits)
    x_long = rng.standard_normal((1, 300, D)).astype(np.float32)  # past fit.PER_TOKEN_ROWS in one chunk
    assert interleaved.plan_key(sam2.check(x_long, table, positions=np.arange(300) % rows), limits) is None
    # the table kernel's: cos and sin of 200 rows of D / 2 float32, 6.4 KiB each
    x4 = rng.standard_normal((1, 1, 2, D)).astype(np.float32)
    cos, sin = (rng.standard_normal((200, D // 2)).astype(np.float32) for _ in range(2))
    a, b = (onnx.check_onnx(x4, dev.asarray(cos), dev.asarray(sin), p[None]) for p in (near, near + 190))
    assert table_kernel.plan_key(a, limits) is None
    assert table_kernel.plan(a, limits) != table_kernel.plan(b, limits)
    x4_long = rng.standard_normal((1, 1, 300, D)).astype(np.float32)
    assert table_kernel.plan_key(onnx.check_onnx(x4_long, cos, sin, np.arange(300)[None] % 200), limits) is None


def test_equal_plan_keys_mean_equal_plans_past_small_bindings(make_device):
    """The decode step where q's rows split into runs (a 4 KiB binding):
    numpy (cos, sin) rows gathered per token against a resident table of as
    many rows, caches in slices; one plan key, one plan."""
    dev = make_device(max_storage_buffer_range=4096, min_storage_buffer_offset_alignment=256)
    limits = dev._context().info
    rng = np.random.default_rng(9)
    n = 40
    q, k = rng.standard_normal((1, 4, n, D)).astype(np.float32), rng.standard_normal((1, 2, n, D)).astype(np.float32)
    a = np.arange(n)[:, None] * np.ones(D // 2)
    cos, sin = np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)
    caches = [dev.asarray(np.zeros((1, 2, 64, D), np.float32)) for _ in range(2)]
    pos = np.arange(n)[None]
    reqs = [decode.check(q, k, k, *caches, (cos, sin), pos),
            decode.check(q, k, k, *caches, (dev.asarray(cos), dev.asarray(sin)), pos),
            decode.check(q, k, k, *caches, vkrope.RopeFreqs(D), pos)]
    keys = [cache_kernel.plan_key(r, limits) for r in reqs]
    plans = [cache_kernel.plan(r, limits) for r in reqs]
    assert len(plans[0].chunks) > 1  # (runs and slices, or this proves nothing)
    for i in range(len(reqs)):
        for j in range(i):
            if keys[i] is not None and keys[i] == keys[j]:
                assert plans[i] == plans[j], f"requests {j} and {i} share a plan key but not a plan"


def test_calls_differing_in_one_constant_keep_their_own(make_device):
    """The same resident arrays, called with another inverse flag, RMSNorm
    eps or fp8 scale: the same bindings and grid, other push constants; each
    result is its own call's (a recording is never replayed with another
    call's constants)."""
    dev = make_device()
    rng = np.random.default_rng(10)
    x = rng.standard_normal((2, 1, D)).astype(np.float32)
    dx, out = dev.asarray(x), dev.asarray(np.zeros_like(x))
    spec = vkrope.RopeFreqs(D, angle="exact")
    for inverse in (False, True, False, True):
        dev.apply(dx, spec, positions=np.array([9]), inverse=inverse, out=out)
        close(out, rotated(x, np.array([-9 if inverse else 9])))
    q = rng.standard_normal((1, 2, 1, D)).astype(np.float32)
    k = rng.standard_normal((1, 1, 1, D)).astype(np.float32) * 40
    caches = [dev.asarray(np.zeros((1, 1, 4, D), vkrope.float8_e4m3fn)) for _ in range(2)]
    seen = {}
    for scale in (1.0, 0.5, 1.0, 0.5):
        dev.rope_and_cache(q, k, k, *caches, spec, np.array([[0]]), k_scale=scale)
        got = caches[0].get()[0, 0, 0].astype(np.float64) * scale
        assert np.abs(got - k[0, 0, 0]).max() <= np.abs(k).max() * 2.0**-3  # within an fp8 step of k itself
        seen.setdefault(scale, got)
        assert np.array_equal(seen[scale], got)


# --- whole calls replayed: a Device method called again with its very arguments ----------------------------------
def replayed(dev) -> int:
    return dev.stats()["replayed_calls"]


def _tiny(dev, rng, shape=(2, 3, D)):
    """Resident x, a resident table of random angles [N, D], and its float64 rotation of x."""
    x = rng.standard_normal(shape).astype(np.float32)
    ang = rng.uniform(-3, 3, (shape[-2], D // 2))
    table = np.stack([np.cos(ang), np.sin(ang)], -1).reshape(shape[-2], D).astype(np.float32)
    re, im = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
    want = np.stack([re * np.cos(ang) - im * np.sin(ang), re * np.sin(ang) + im * np.cos(ang)], -1).reshape(shape)
    return dev.asarray(x), dev.asarray(table), want


def test_a_repeated_resident_call_is_replayed_and_reads_the_arrays_data(make_device):
    """The same DeviceArrays again: submitted as kept, without its front end, and it computes from what the
    arrays hold now (written in between by other calls), into the poisoned `out` it returns."""
    dev = make_device()
    rng = np.random.default_rng(11)
    dx, dt, want = _tiny(dev, rng)
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    assert dev.apply(dx, dt, out=out) is out
    before = replayed(dev)
    for step in range(6):
        x = rng.standard_normal(dx.shape).astype(np.float32)
        dev.apply(dev.asarray(x), vkrope.RopeFreqs(D), positions=np.zeros(3, np.int64), out=dx)  # x's new data
        poison(dev, out)
        assert dev.apply(dx, dt, out=out) is out
        ang = np.arctan2(dt.get()[:, 1::2], dt.get()[:, 0::2]).astype(np.float64)
        re, im = x[..., 0::2].astype(np.float64), x[..., 1::2].astype(np.float64)
        want = np.stack([re * np.cos(ang) - im * np.sin(ang), re * np.sin(ang) + im * np.cos(ang)], -1)
        close(out, want.reshape(x.shape))
    assert replayed(dev) - before == 6
    y = dev.apply(dx, dt, out=dx)  # in place: another call (its own arguments), kept in turn
    assert y is dx and dev.apply(dx, dt, out=dx) is dx and replayed(dev) - before == 7


def _x_of_storage(dev, rng, storage: str):
    """x (2, 3, D) resident in `storage`, a resident table of random angles: (x, its DeviceArray, the table's
    DeviceArray, the table)."""
    x0 = rng.standard_normal((2, 3, D)).astype(np.float32)
    dt = _tiny(dev, rng)[1]
    return x0, dev.asarray(x0, storage=storage), dt, dt.get()


def _refill(dev, dx, seed: int) -> np.ndarray:
    """New data written into the resident `dx` by another call (the identity rotation); returns it."""
    x = np.random.default_rng(seed).standard_normal(dx.shape).astype(np.float32)
    dev.apply(dev.asarray(x, storage=dx.storage), vkrope.RopeFreqs(D), positions=np.zeros(dx.shape[-2], np.int64),
              out=dx)
    return x


def test_a_call_that_makes_its_result_never_writes_a_live_array(make_device):
    """out=None, each result kept: every call returns a new array on memory of its own (a replay onto the
    kept layout would write the last result again), each right for the data x held then."""
    dev = make_device()
    rng = np.random.default_rng(12)
    dx, dt, _ = _tiny(dev, rng)
    ys, wants = [], []
    for step in range(3):
        x = _refill(dev, dx, 300 + step)
        ys.append(dev.apply(dx, dt))
        wants.append(oracle(x, dt.get()))
    assert ys[0] is not ys[1] and ys[1] is not ys[2] and replayed(dev) == 0
    for y, want in zip(ys, wants):
        close(y, want)


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_a_call_whose_last_result_was_dropped_is_replayed_into_a_new_array(make_device, storage):
    """out=None, each result dropped before the next call (a model's loop): the pool gives the dropped
    memory back, and the call is replayed onto it, as a new DeviceArray computed from what x holds now; a
    poison left in that memory (by the step before) is overwritten each time."""
    dev = make_device()
    x0, dx, dt, table = _x_of_storage(dev, np.random.default_rng(14), storage)
    y = dev.apply(dx, dt)
    close(y, oracle(x0, table))
    before = replayed(dev)
    for step in range(5):
        y.release()  # (its memory back to the pool; the next call takes it again)
        x = _refill(dev, dx, 100 + step)
        old, y = y, dev.apply(dx, dt)
        assert y is not old and old.released and not y.released
        assert (y.shape, y.dtype, y.storage) == (x0.shape, np.float32, storage)
        close(y, oracle(x, table))
        poison(dev, y)
        assert np.isnan(y.get()).all()
    assert replayed(dev) - before == 5


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_a_loop_that_rebinds_its_result_replays_on_two_memories(make_device, storage):
    """`y = dev.apply(dx, dt)`: the last result is alive during each call, so the pool holds the one before
    it; the kept call remembers both memories and replays on them in turn, never on the live one, and
    allocates nothing more."""
    from vkrope.vk.binding import live_handles

    dev = make_device()
    x0, dx, dt, table = _x_of_storage(dev, np.random.default_rng(17), storage)
    y = dev.apply(dx, dt)
    y = dev.apply(dx, dt)
    before, memories = replayed(dev), live_handles().get("VkDeviceMemory", 0)
    for step in range(8):
        x = _refill(dev, dx, 200 + step)
        last, last_data = y, y.get()
        y = dev.apply(dx, dt)
        close(y, oracle(x, table))
        np.testing.assert_array_equal(last.get(), last_data)  # (the live result was not written)
        del last
    assert replayed(dev) - before >= 7
    assert live_handles().get("VkDeviceMemory", 0) <= memories + 1


def test_a_replay_takes_its_own_memory_among_others_in_the_pool(make_device):
    """Released arrays of the same size crowd the pool before the memory the kept layout binds: the replay
    takes that memory by its serial (the first that fits would never be it), and keeps doing so."""
    dev = make_device()
    rng = np.random.default_rng(18)
    dx, dt, want = _tiny(dev, rng)
    dev.apply(dx, dt).release()
    dev.apply(dx, dt).release()
    for a in [dev.asarray(np.zeros(dx.shape, np.float32)) for _ in range(3)]:
        a.release()  # (three more buffers of the size, in the pool)
    before = replayed(dev)
    for _ in range(5):
        y = dev.apply(dx, dt)
        close(y, want)
        y.release()
    assert replayed(dev) - before == 5


def _interrupt_once_after_the_submission(monkeypatch):
    """The next replay's `release_call` (after its submission, before it returns) raises KeyboardInterrupt, as
    a signal landing there would."""
    from vkrope.runtime import kept_calls

    real = kept_calls.release_call

    def release(*args):
        monkeypatch.setattr(kept_calls, "release_call", real)
        real(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(kept_calls, "release_call", release)


@pytest.mark.parametrize("where", ["at the submit", "after the submission"])
def test_an_interrupted_replay_gives_its_memory_back(make_device, monkeypatch, where):
    """A replay that made its output and was interrupted (at the submit, or once the device was done and
    before the array took the memory) returns that memory to the pool: the next call gets it and is
    replayed again, and is right."""
    from vkrope.vk import binding as b

    dev = make_device()
    rng = np.random.default_rng(15)
    dx, dt, want = _tiny(dev, rng)
    dev.apply(dx, dt).release()
    dev.apply(dx, dt).release()
    before = replayed(dev)
    if where == "at the submit":
        b.inject_fault("vkQueueSubmit", lambda: KeyboardInterrupt())
    else:
        _interrupt_once_after_the_submission(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        dev.apply(dx, dt)
    gc.collect()
    y = dev.apply(dx, dt)
    assert replayed(dev) == before + 1  # (the interrupted one is not counted: it raised before)
    close(y, want)
    # ... and given back once: arrays alive together never share it (twice in the pool, two would)
    held = [y] + [dev.apply(dx, dt) for _ in range(3)]
    assert len({a.resource.serial for a in held}) == len(held)
    for a in held:
        close(a, want)


def test_an_array_interrupted_as_it_is_made_takes_no_memory(make_device, monkeypatch):
    """A call's output array interrupted as it is made (a signal in its constructor) has not taken memory
    from the pool yet: none is lost (the memory came first, and leaked, before #35's adversary)."""
    from vkrope.runtime import array

    dev = make_device()
    dx, dt, want = _tiny(dev, np.random.default_rng(16))
    table = dt.get()  # (a numpy table: the call is never replayed, its output made by Device._new_array)
    dev.apply(dx, table).release()  # (its buffer now waits in the pool)
    pooled = {r.serial for r in dev._rt.pool}
    assert pooled
    real = array.DeviceArray.__init__

    def interrupted(self, *args, **kw):
        monkeypatch.setattr(array.DeviceArray, "__init__", real)
        raise KeyboardInterrupt

    monkeypatch.setattr(array.DeviceArray, "__init__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        dev.apply(dx, table)
    assert pooled <= {r.serial for r in dev._rt.pool}
    close(dev.apply(dx, dt), want)


def test_numpy_arguments_are_never_replayed(make_device):
    """numpy x, out or table: data the call reads or writes on the host each time; every call runs in full."""
    dev = make_device()
    dx, dt, want = _tiny(dev, np.random.default_rng(13))
    x, t = dx.get(), dt.get()
    out = np.full(x.shape, np.nan, np.float32)
    for _ in range(3):
        dev.apply(x, dt, out=out)
        close(out, want)
        out[:] = np.nan
        dev.apply(x, t, out=out)
        close(out, want)
        out[:] = np.nan
    assert replayed(dev) == 0


def test_a_released_or_replaced_argument_is_the_front_ends_error(make_device):
    """A kept call whose `out` was released fails as a first call would; a new array (which may take the old
    one's id) is checked and run in full."""
    dev = make_device()
    rng = np.random.default_rng(14)
    dx, dt, want = _tiny(dev, rng)
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    dev.apply(dx, dt, out=out)
    dev.apply(dx, dt, out=out)
    assert replayed(dev) == 1
    out.release()
    with pytest.raises(ValueError, match="^out is a released DeviceArray"):
        dev.apply(dx, dt, out=out)
    reused = False
    for _ in range(100):  # (CPython gives a freed object's address to the next of its size: take the old id)
        old = id(out)
        del out
        out = dev.asarray(np.full(dx.shape, np.nan, np.float32))
        reused = id(out) == old
        if reused:
            break
    assert reused
    assert dev.apply(dx, dt, out=out) is out
    close(out, want)
    assert replayed(dev) == 1
    dev.close()
    with pytest.raises(vkrope.DeviceClosedError, match="^x is a DeviceArray of a vkrope.Device that was closed"):
        dev.apply(dx, dt, out=out)


def test_arguments_that_differ_in_one_value_are_another_call(make_device):
    """inverse, a spec of equal value but another object, keyword order: each its own call, each right."""
    dev = make_device()
    rng = np.random.default_rng(15)
    x = rng.standard_normal((1, 3, D)).astype(np.float32)
    dx, out = dev.asarray(x), dev.asarray(np.zeros_like(x))
    pos = np.array([2, 5, 9])
    spec = vkrope.RopeFreqs(D)
    for inverse in (False, True, False, True):
        poison(dev, out)
        dev.apply(dx, spec, positions=pos, out=out, inverse=inverse)  # (numpy positions: in full each time)
        close(out, rotated(x, -pos if inverse else pos))
    table = dev.asarray(np.tile(np.array([0.0, 1.0], np.float32), (3, D // 2)))  # a quarter turn
    quarter = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape).astype(np.float64)
    for inverse in (False, True, False, True, True):
        poison(dev, out)
        dev.apply(dx, table, inverse=inverse, out=out)
        close(out, -quarter if inverse else quarter)
    poison(dev, out)
    dev.apply(dx, table, out=out, inverse=False)
    close(out, quarter)
    assert replayed(dev) == 3  # (the third to fifth calls of the loop; keyword order is another key)


def test_a_trim_forgets_kept_calls_and_they_come_back(make_device):
    """Device.trim drops the recordings, and with them the kept calls: the next call runs in full, right."""
    dev = make_device()
    dx, dt, want = _tiny(dev, np.random.default_rng(16))
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    dev.apply(dx, dt, out=out)
    dev.trim()
    poison(dev, out)
    dev.apply(dx, dt, out=out)
    close(out, want)
    assert replayed(dev) == 0
    poison(dev, out)
    dev.apply(dx, dt, out=out)
    close(out, want)
    assert replayed(dev) == 1


def test_threads_replaying_their_own_calls_stay_apart(make_device):
    """Four threads, each its own arrays, each replaying its call: every result is its own."""
    dev = make_device()
    rng = np.random.default_rng(17)
    work = [_tiny(dev, rng) for _ in range(4)]
    outs = [dev.asarray(np.zeros(w[0].shape, np.float32)) for w in work]
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            dx, dt, want = work[i]
            for _ in range(30):
                dev.apply(dx, dt, out=outs[i])
            close(outs[i], want)
        except BaseException as exc:  # noqa: BLE001  (reported by the test)
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors and replayed(dev) >= 4 * 29


def test_an_abandoned_devices_kept_calls_are_not_replayed(monkeypatch):
    """A device abandoned after a timeout keeps its runtime (its memory is left to the driver): a kept call must
    not be submitted to it again (its arrays are not alive); the call fails as any call on a closed device does,
    naming its argument."""
    import vkrope.owner as owner

    dev = vkrope.Device()
    dx, dt, _ = _tiny(dev, np.random.default_rng(18))
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    dev.apply(dx, dt, out=out)
    dev.apply(dx, dt, out=out)
    assert replayed(dev) == 1
    hang_waits(monkeypatch, 2)
    with pytest.raises(vkrope.DeviceTimeoutError, match="still running after a second wait"):
        dev.apply(dx, dt, out=out)
    assert dev.closed and dev._rt.kept_calls  # (abandoned: its runtime, and the kept call, are still there)
    submitted = dev._rt.counts["submissions"]
    with pytest.raises(vkrope.DeviceClosedError, match="^x is a DeviceArray of a vkrope.Device that was closed"):
        dev.apply(dx, dt, out=out)
    assert dev._rt.counts["submissions"] == submitted
    ctx = owner._abandoned.pop()  # (here the work did finish: tidy up)
    ctx.close()


def test_a_kept_call_whose_layout_was_dropped_runs_in_full(make_device):
    """More layouts than are kept (execute.MAX_PREPARED) push a kept call's out: it is laid out and run again,
    right, not submitted with another's layout."""
    from vkrope.runtime import execute

    dev = make_device()
    rng = np.random.default_rng(19)
    dx, dt, want = _tiny(dev, rng)
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    dev.apply(dx, dt, out=out)
    others = [_tiny(dev, rng, (1, n, D)) for n in range(1, execute.MAX_PREPARED + 3)]
    for ox, ot, _ in others:
        dev.apply(ox, ot, out=ox)
    poison(dev, out)
    before = replayed(dev)
    dev.apply(dx, dt, out=out)
    close(out, want)
    assert replayed(dev) == before


def test_an_argument_released_once_the_call_is_done_is_not_kept(make_device, monkeypatch):
    """Another thread may release an argument between the call's end and its keeping (both under the device's
    lock, taken twice): the call's result stands, nothing is kept, the next call is refused by name."""
    dev = make_device()
    dx, dt, want = _tiny(dev, np.random.default_rng(20))
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    real = dev._run

    def run_then_release(op, jobs):
        outs = real(op, jobs)
        dt.release()  # (as another thread could, once the lock is free)
        return outs

    monkeypatch.setattr(dev, "_run", run_then_release)
    assert dev.apply(dx, dt, out=out) is out
    close(out, want)
    assert not dev._rt.kept_calls
    monkeypatch.setattr(dev, "_run", real)
    with pytest.raises(ValueError, match="^freqs is a released DeviceArray"):
        dev.apply(dx, dt, out=out)


def test_the_module_functions_replay_on_the_default_device():
    """vkrope.apply called again with the same resident arrays (of the default device) replays too; before any
    default device exists no device is made ahead of the front end's checks."""
    vkrope.close_default_device()
    with pytest.raises(TypeError, match="^x must be a numpy array"):
        vkrope.apply([1.0, 2.0], np.ones((1, 2), np.float32))
    dev = vkrope.default_device()
    dx, dt, want = _tiny(dev, np.random.default_rng(21))
    out = dev.asarray(np.zeros(dx.shape, np.float32))
    before = replayed(dev)
    for _ in range(3):
        poison(dev, out)
        assert vkrope.apply(dx, dt, out=out) is out
        close(out, want)
    assert replayed(dev) - before == 2


def test_replays_under_a_storm_of_handlers_that_release_memory(make_device):
    """Signal handlers that let results go land anywhere inside replayed calls that make their result, with the
    pool kept full and arrays made between the calls: no live array is ever written by another call, no memory
    is held twice, and every result is right (a replay that found its memory's index before a call and took the
    index after once gave it another array's memory, or destroyed memory, #35). A handler's release waits for
    its call (its memory goes back at the next); taking memory there (asarray) is refused, as every transfer
    inside a call is (test_lifecycle)."""
    import signal

    dev = make_device()
    rng = np.random.default_rng(19)
    dx, dt, want = _tiny(dev, rng)
    dev._rt.POOL_COUNT = 6  # noqa: SLF001  (a full pool: what falls out of it is destroyed)
    held: list = []
    marks: list = []  # (array, the value it holds everywhere)

    def handler(signum, frame):
        if held:
            held.pop(int(RNG_STORM.integers(len(held)))).release()

    old = signal.signal(signal.SIGALRM, handler)
    try:
        end = time.monotonic() + 3.0
        while time.monotonic() < end:
            signal.setitimer(signal.ITIMER_REAL, float(RNG_STORM.uniform(1e-5, 3e-4)))
            y = dev.apply(dx, dt)
            signal.setitimer(signal.ITIMER_REAL, 0)
            close(y, want)
            held.append(y)
            if len(held) > 4:
                held.pop(0)
            marks.append((dev.asarray(np.full(dx.shape, float(len(marks)), np.float32)), float(len(marks))))
            if len(marks) > 6:
                marks.pop(0)
            for a, v in list(marks):
                assert (a.get() == v).all(), "an array was written by another call"
            live = [a.resource.serial for a in held + [m[0] for m in marks] if a.resource is not None]
            pooled = [r.serial for r in dev._rt.pool]  # noqa: SLF001
            assert len(set(live)) == len(live) and not set(live) & set(pooled) and len(set(pooled)) == len(pooled)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    assert replayed(dev) > 0


RNG_STORM = np.random.default_rng(20)


def test_a_replayed_result_whose_del_fails_gives_its_memory_back(make_device, monkeypatch):
    """A replayed call's new result (memory taken from the pool) whose
    `__del__` does not get to give it back (a signal handler's exception
    there; here its release raising): the memory was noted with the array,
    so it comes back, and the next call neither loses it nor allocates."""
    from vkrope.runtime import array_memory

    dev = make_device()
    dx, dt, want = _tiny(dev, np.random.default_rng(21))
    for _ in range(3):
        y = dev.apply(dx, dt)
    before = replayed(dev)
    y = dev.apply(dx, dt)
    assert replayed(dev) == before + 1  # (y's memory came from the pool, through the replay)
    made = dev._ctx.allocations

    def fails(self):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(vkrope.DeviceArray, "_release", fails)  # (what __del__ calls)
    del y
    gc.collect()
    monkeypatch.undo()
    assert array_memory.reclaim_dead(dev._rt)  # (its memory, noted with it)
    close(dev.apply(dx, dt), want)
    assert dev._ctx.allocations == made

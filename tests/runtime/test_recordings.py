"""A decode loop records its command buffer once (#19): per-call data
(positions, start_pos, position ids, the rows of a table they pick) is data
in the submission, never part of what a recording is cached on.

Each loop runs 64 steps of one public operator with the position advancing
by one, numpy and resident, with tables and with frequencies computed in
the shader; after the first step `Device.stats()["recordings"]` must not
grow. Every step's result is checked against the float64 oracles."""

from __future__ import annotations

import numpy as np
import pytest

import vkrope
from oracle import oracle
import oracle_hf
from op_cases import OPS as OP_CASES, POS_EMB_CONFIG, POS_EMB_SPEC
from oracle_family import et_apply_rotary_emb, et_apply_rotary_emb_hf, onnx_rotary_embedding

STEPS = 64
MAX_POS = 4096
RNG = np.random.default_rng(19)


def _tables(rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    inv = 1.0 / 10000.0 ** (np.arange(width) / width)
    a = np.outer(np.arange(rows), inv)
    return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)


def _close(y, ref, scale) -> None:
    y = y.get() if isinstance(y, vkrope.DeviceArray) else y
    err = np.abs(np.asarray(y, np.float64) - ref).max()
    assert err <= 1e-5 * scale, err


def _held(dev, arrays: tuple, resident: bool, store: dict) -> tuple:
    """`arrays` as they are, or (resident) uploaded to `dev` once for the loop."""
    if not resident:
        return arrays
    if "held" not in store:
        store["held"] = tuple(dev.asarray(a) for a in arrays)
    return store["held"]


def _loop(dev, step) -> list[int]:
    """Run `step(dev, position)` STEPS times; the recordings count after each."""
    counts = []
    for i in range(STEPS):
        step(dev, 100 + i)
        counts.append(dev.stats()["recordings"])
    return counts


def _pair_tables() -> tuple[np.ndarray, vkrope.RopeFreqs, np.ndarray]:
    """apply's (cos, sin)-pair table, a spec, and the table the spec stands for."""
    table = np.stack(_tables(MAX_POS, 32), -1).reshape(MAX_POS, 64)
    spec = vkrope.RopeFreqs(64)
    return table, spec, np.stack(spec.table(np.arange(MAX_POS)), -1).reshape(MAX_POS, 64)


def _apply(freqs_kind: str, resident: bool):
    table, spec, spec_table = _pair_tables()
    store: dict = {}

    def step(dev, p):
        x = RNG.standard_normal((8, 1, 64)).astype(np.float32)
        if freqs_kind == "spec":
            freqs, ref_table = spec, spec_table
        else:
            (freqs,), ref_table = _held(dev, (table,), resident, store), table
        y = dev.apply(dev.asarray(x) if resident else x, freqs, positions=np.array([p]))
        _close(y, oracle(x, ref_table, positions=np.array([p])), 4 * np.abs(x).max())
    return step


def _onnx(freqs_kind: str, resident: bool):
    cos, sin = _tables(MAX_POS, 32)
    spec = vkrope.RopeFreqs(64)
    store: dict = {}

    def step(dev, p):
        x = RNG.standard_normal((2, 4, 1, 64)).astype(np.float32)
        pos = np.array([[p], [p + 7]])
        if freqs_kind == "spec":
            c, s = spec, None
            ref = onnx_rotary_embedding(x, *spec.table(np.arange(MAX_POS)), pos)
        else:
            c, s = _held(dev, (cos, sin), resident, store)
            ref = onnx_rotary_embedding(x, cos, sin, pos)
        y = dev.rotary_embedding(dev.asarray(x) if resident else x, c, s, pos)
        _close(y, ref, 4 * np.abs(x).max())
    return step


def _hf(freqs_kind: str, resident: bool):
    cos, sin = _tables(MAX_POS, 32)
    fc, fs = np.concatenate([cos, cos], 1), np.concatenate([sin, sin], 1)
    spec = vkrope.RopeFreqs(64)
    store: dict = {}

    def step(dev, p):
        q = RNG.standard_normal((1, 1, 8, 64)).astype(np.float32)
        k = RNG.standard_normal((1, 1, 2, 64)).astype(np.float32)
        if freqs_kind == "spec":
            c, s = spec, None
            sc, ss = spec.table(np.arange(MAX_POS))
            ref = et_apply_rotary_emb_hf(q, k, np.concatenate([sc, sc], 1), np.concatenate([ss, ss], 1), p)
        else:
            c, s = _held(dev, (fc, fs), resident, store)
            ref = et_apply_rotary_emb_hf(q, k, fc, fs, p)
        yq, yk = dev.apply_rotary_emb_hf(dev.asarray(q) if resident else q, dev.asarray(k) if resident else k,
                                         c, s, p)
        _close(yq, ref[0], 4 * np.abs(q).max())
        _close(yk, ref[1], 4 * np.abs(k).max())
    return step


def _llm(freqs_kind: str, resident: bool):
    cos, sin = _tables(MAX_POS, 32)

    def step(dev, p):
        q = RNG.standard_normal((1, 1, 8, 64)).astype(np.float32)
        k = RNG.standard_normal((1, 1, 2, 64)).astype(np.float32)
        c, s = cos[p:p + 1], sin[p:p + 1]  # the caller slices its row: ExecuTorch's op has no position
        ref = et_apply_rotary_emb(q, k, c, s)
        if freqs_kind == "spec":  # (the op has no position: its tokens are at 0 .. S-1; the data still changes)
            spec = vkrope.RopeFreqs(64)
            yq, yk = dev.apply_rotary_emb(dev.asarray(q) if resident else q, dev.asarray(k) if resident else k,
                                          spec, None)
            sc, ss = spec.table(np.arange(1))
            ref = et_apply_rotary_emb(q, k, sc, ss)
        else:
            # (The op has no position: the caller passes this step's rows, as numpy. Fresh
            # resident tables every step would be new buffers, so new recordings.)
            yq, yk = dev.apply_rotary_emb(dev.asarray(q) if resident else q, dev.asarray(k) if resident else k, c, s)
        _close(yq, ref[0], 4 * np.abs(q).max())
        _close(yk, ref[1], 4 * np.abs(k).max())
    return step


def _many(freqs_kind: str, resident: bool):
    """apply_many: a layer's q and k, each at its own advancing position."""
    table, spec, spec_table = _pair_tables()
    store: dict = {}

    def step(dev, p):
        q = RNG.standard_normal((8, 1, 64)).astype(np.float32)
        k = RNG.standard_normal((2, 1, 64)).astype(np.float32)
        if freqs_kind == "spec":
            freqs, ref_table = spec, spec_table
        else:
            (freqs,), ref_table = _held(dev, (table,), resident, store), table
        held = (dev.asarray(q), dev.asarray(k)) if resident else (q, k)
        yq, yk = dev.apply_many([(held[0], freqs, {"positions": np.array([p])}),
                                 (held[1], freqs, {"positions": np.array([p + 3])})])
        _close(yq, oracle(q, ref_table, positions=np.array([p])), 4 * np.abs(q).max())
        _close(yk, oracle(k, ref_table, positions=np.array([p + 3])), 4 * np.abs(k).max())
    return step


def _pos_emb(freqs_kind: str, resident: bool):
    """apply_rotary_pos_emb takes specs only: "table" a RopeFreqs, "spec" a model's (llama3 scaling)."""
    spec, cfg = (POS_EMB_SPEC, POS_EMB_CONFIG) if freqs_kind == "spec" else \
        (vkrope.RopeFreqs(64), {"hidden_size": 64, "num_attention_heads": 1, "rope_theta": 10000.0})
    rope = oracle_hf.rope_of(cfg)

    def step(dev, p):
        q = RNG.standard_normal((1, 4, 1, 64)).astype(np.float32)
        k = RNG.standard_normal((1, 2, 1, 64)).astype(np.float32)
        pos = np.array([[p]])
        yq, yk = dev.apply_rotary_pos_emb(dev.asarray(q) if resident else q, dev.asarray(k) if resident else k,
                                          spec, pos)
        c, sn = oracle_hf.cos_sin(rope, pos)
        _close(yq, oracle_hf.rotate(q, c, sn, rope["dim"]), 4 * np.abs(q).max())
        _close(yk, oracle_hf.rotate(k, c, sn, rope["dim"]), 4 * np.abs(k).max())
    return step


LOOPS = {"apply": _apply, "rotary_embedding": _onnx, "apply_rotary_emb_hf": _hf, "apply_rotary_emb": _llm,
       "apply_many": _many, "apply_rotary_pos_emb": _pos_emb}
# The public ops whose replayed recording is proven elsewhere, and where.
ELSEWHERE = {"rope_and_cache": "tests/kernels/test_rope_cache.py (its decode loops, numpy and resident)",
             "shift_cache": "tests/kernels/test_shift.py (caches only: nothing moves through the host)",
             "apply_nd": "tests/ops/test_nd.py::test_recorded_once_as_ids_change"}


def test_every_public_op_has_its_loop():
    """One list of ops (tests/op_cases.py): each has a decode loop here or a named one elsewhere."""
    assert set(LOOPS) | set(ELSEWHERE) == {case.name for case in OP_CASES}
    assert not set(LOOPS) & set(ELSEWHERE)


@pytest.mark.parametrize("resident", [False, True], ids=["numpy", "resident"])
@pytest.mark.parametrize("freqs_kind", ["table", "spec"])
@pytest.mark.parametrize("op", sorted(LOOPS))
def test_a_decode_loop_records_once(make_device, op, freqs_kind, resident):
    dev = make_device()
    counts = _loop(dev, LOOPS[op](freqs_kind, resident))
    assert counts[-1] == counts[0], f"recordings per step: {counts}"
    assert dev.stats()["submissions"] >= STEPS


def test_a_long_texture3d_batch_stays_within_the_allocation_count(make_device):
    """Past the cached work images, a texture3d batch once made two images
    a job for the call, all alive at once: 50 jobs broke a device allowing
    40 allocations (the #19 adversarial round). The batch now runs in
    submissions of at most 8 such jobs, over the cached images."""
    dev = make_device(max_memory_allocation_count=40)
    f = np.stack(_tables(16, 4), -1).reshape(16, 8)
    calls = [(RNG.standard_normal((1, 16, 8)).astype(np.float32), f, {"storage": "texture3d"}) for _ in range(50)]
    ys = dev.apply_many(calls)
    for (x, _, _), y in zip(calls, ys):
        _close(y, oracle(x, f), 4 * np.abs(x).max())
    made = dev.stats()["recordings"]
    dev.apply_many(calls)
    assert dev.stats()["recordings"] == made  # and the next batch replays them


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
def test_a_decode_loop_over_resident_images_records_once(make_device, storage):
    """A fresh resident output each step: buffers came from the reuse pool
    (the same one each step), images were made anew, so every step
    recorded again (the #19 adversarial round). Images are pooled too."""
    dev = make_device()
    f = np.stack(_tables(MAX_POS, 32), -1).reshape(MAX_POS, 64)
    x = RNG.standard_normal((4, 1, 64)).astype(np.float32)
    dx = dev.asarray(x, storage=storage)
    counts = []
    for p in range(20):
        y = dev.apply(dx, f, positions=np.array([p]))  # (the last y lives on while the next is made:
        _close(y, oracle(x, f, positions=np.array([p])), 4 * np.abs(x).max())  # two outputs take turns)
        counts.append(dev.stats()["recordings"])
    assert counts[-1] == counts[1], counts


@pytest.mark.parametrize("unified", [True, False])
def test_a_decode_loop_over_a_deep_models_layers_records_each_layer_once(make_device, unified):
    """Each layer's caches need a recording of their own: with 32 kept, a loop over 33 or more layers
    (Llama 3 70B has 80) evicted on every call the recording the next call needed and recorded every
    call anew, about 2x slower. 130 layers now record once each (counted from after the caches were
    made: on a discrete GPU each asarray records its staging copy)."""
    dev = make_device(unified=unified)
    layers, d = 130, 8
    spec = vkrope.RopeFreqs(d)
    caches = [(dev.asarray(np.zeros((1, 1, 4, d), np.float32)), dev.asarray(np.zeros((1, 1, 4, d), np.float32)))
              for _ in range(layers)]
    made = dev.stats()["recordings"]
    q = RNG.standard_normal((1, 2, 1, d)).astype(np.float32)
    counts = []
    for step in range(3):
        for kc, vc in caches:
            dev.rope_and_cache(q, q[:, :1], q[:, :1], kc, vc, spec, np.array([[step]]))
        counts.append(dev.stats()["recordings"] - made)
    assert counts[1] == counts[2] == counts[0] <= layers, counts


def test_a_drain_right_after_a_recording_is_built_keeps_it(make_device):
    """A signal handler (or a finaliser) that drains the runtime as soon as a recording is built, before
    the call goes on: the recording is already cached and out of the unfinished list, so the drain neither
    destroys it nor finds it twice (it was released, then cached and submitted, or the call raised
    ValueError from list.remove, #35's adversaries)."""
    dev = make_device()
    rt = dev._rt  # noqa: SLF001

    class Counts(dict):
        def __setitem__(self, name, value):
            super().__setitem__(name, value)
            if name == "recordings":
                rt.drain()  # (as a handler landing right after the build would)

    rt.counts = Counts(rt.counts)
    x = np.random.default_rng(3).standard_normal((2, 8, 16)).astype(np.float32)
    f = np.tile(np.array([0.6, 0.8], np.float32), (8, 8))
    for _ in range(3):
        out = np.full_like(x, np.nan)
        dev.apply(x, f, out=out)
        assert np.abs(out - oracle(x, f)).max() < 1e-5
    assert not rt.unfinished and all(r.cmd is not None for r in rt.recordings.values())

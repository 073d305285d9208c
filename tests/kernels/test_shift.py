"""The context shift (`vkrope.shift_cache`) against float64 rotations by
the difference of the angles, written here from the formulas: exact angles
((new - old) times base^(-2i/rot) in float64) and the frameworks' float32
angles (tests/oracles/oracle_hf.py); every cache dtype, contiguous caches
whose rows move (with their values) and paged caches whose slots stay,
interleaved and rotate-half pairs, partial rotary. Every row a shift does
not write must keep its bits."""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import vkrope
import oracle_hf
from oracle import BF16
from oracle_cache import assert_close, rotate, values

HF_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
IDS = ["f32", "f16", "bf16"]
CONFIG = {"model_type": "llama", "hidden_size": 96, "num_attention_heads": 8, "rope_theta": 10000.0,
          "max_position_embeddings": 4096}  # head 12, every channel rotates, float32 angles


def cached(rng, shape, dtype) -> np.ndarray:
    """A cache of keys (any values: a shift is a rotation of what is stored)."""
    return (rng.standard_normal(shape) * 2).astype(np.float32).astype(dtype)


def interrupted_after(returned: str, call: Callable[[], Any], then: Callable[[], Any] = lambda: None) -> BaseException:
    """`call()` with a KeyboardInterrupt raised, as a signal handler's would be, at the first Python call after
    Device.`returned` (device.py) returned, `then()` run just before it: the exception (sys.settrace)."""
    armed = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if armed:
            sys.settrace(None)
            then()
            raise KeyboardInterrupt
        if frame.f_code.co_name == returned and frame.f_code.co_filename.endswith("device.py"):
            return lambda f, e, a: armed.append(1) if e == "return" else None
        return None

    sys.settrace(tracer)
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            call()
    finally:
        sys.settrace(None)
    assert armed
    return raised.value


def angle_delta(spec_kind: str, rot: int, old: np.ndarray, new: np.ndarray) -> np.ndarray:
    """float64 [n, rot/2]: the new angle less the old one."""
    if spec_kind == "exact":
        inv = 1.0 / 10000.0 ** (np.arange(0, rot, 2) / rot)
        return (new - old).astype(np.float64)[:, None] * inv
    rope = oracle_hf.rope_of(CONFIG)
    a = lambda p: oracle_hf.angles(rope, p.reshape(1, -1))[0].astype(np.float64)  # noqa: E731
    return a(new) - a(old)


def spec_of(spec_kind: str, tmp_path, rot: int, interleaved: bool):
    if spec_kind == "exact":
        return vkrope.RopeFreqs(rot, base=10000.0, angle="exact")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(CONFIG))
    rope = vkrope.from_hf(str(path))  # its frequencies are the same at every position
    # (the model's own pairs are rotate-half; interleaved pairs take its frequencies as an InvFreqs)
    return rope.freqs(np.arange(4)) if interleaved else rope


@pytest.mark.parametrize("spec_kind", ["exact", "float32"])
@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_shift_against_the_rotation_by_the_angle_difference(device, tmp_path, dtype, paged, interleaved, spec_kind):
    seed = zlib.crc32(f"{dtype}-{paged}-{interleaved}-{spec_kind}".encode())
    rng = np.random.default_rng(seed)
    b, hk, d = 2, 3, 12
    rot = 8 if spec_kind == "exact" else 12  # exact: 4 channels past the rotary width move as they are
    spec = spec_of(spec_kind, tmp_path, rot, interleaved)
    if paged:
        shape = (5, 4, hk, d)
        slots = rng.permutation(20)[:8].reshape(b, 4)
        slots[1, 2] = -1  # skipped
        old = rng.integers(0, 1 << 20, (b, 4))
        new = np.maximum(old - rng.integers(0, 5000, (b, 4)), 0)
        new[:, ::2] = rng.integers(0, 100, (b, 2))  # far down: the float32 angles' difference is not exact
    else:
        shape = (b, hk, 16, d)
        slots = None
        old = np.tile(np.arange(6, 16), (b, 1))  # sinks 0..1 stay; tokens 6.. move down by 4 (overlapping rows)
        new = old - 4
    kc0, vc0 = cached(rng, shape, dtype), cached(rng, shape, dtype)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    device.shift_cache(kc, spec, old, new, v_cache=None if paged else vc, slots=slots, interleaved=interleaved)
    k_after, v_after = kc.get(), vc.get()
    want_k, want_v = values(kc0).copy(), values(vc0).copy()
    written = np.zeros(shape[:-1], bool)
    for bi in range(b):
        for si in range(old.shape[1]):
            if paged and slots[bi, si] < 0:
                continue
            a = angle_delta(spec_kind, rot, old[bi, si:si + 1], new[bi, si:si + 1])
            for h in range(hk):
                src = (slots[bi, si] // 4, slots[bi, si] % 4, h) if paged else (bi, h, old[bi, si])
                dst = src if paged else (bi, h, new[bi, si])
                k = values(kc0[src])[None, None, None, :]
                want_k[dst] = rotate(k, np.cos(a)[None], np.sin(a)[None], interleaved)[0, 0, 0]
                want_v[dst] = values(vc0[src])
                written[dst] = True
    assert_close(k_after[written], want_k[written], dtype, "k_cache")
    kb, vb = k_after.view(np.uint8), v_after.view(np.uint8)
    item = dtype.itemsize
    keep = np.repeat(~written[..., None], d * item, -1).reshape(kb.shape)
    assert np.array_equal(kb[keep], kc0.view(np.uint8)[keep]), "k_cache: a row the shift does not write changed"
    if paged:
        assert np.array_equal(vb, vc0.view(np.uint8)), "v_cache: a paged shift touched the values"
    else:
        assert np.array_equal(vb[keep], vc0.view(np.uint8)[keep]), "v_cache: a row the shift does not write changed"
        moved = np.repeat(written[..., None], d * item, -1).reshape(vb.shape)
        want_bits = np.zeros_like(v_after)
        for bi in range(b):
            for h in range(hk):
                want_bits[bi, h, new[bi]] = vc0[bi, h, old[bi]]
        assert np.array_equal(vb[moved], want_bits.view(np.uint8)[moved]), "v_cache: values not moved bit for bit"


@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
def test_a_shifted_key_is_the_key_rotated_at_its_new_position(device, interleaved):
    """rope_and_cache at positions 0..15, then tokens 6.. shifted down by 4
    (two attention sinks kept): the keys are those rope_and_cache writes at
    the new positions, to float32 rounding (exact angles)."""
    rng = np.random.default_rng(3 + interleaved)
    b, hk, s, d = 2, 2, 16, 12
    spec = vkrope.RopeFreqs(8, base=10000.0, angle="exact")
    k0 = rng.standard_normal((b, hk, s, d)).astype(np.float32)
    v = rng.standard_normal((b, hk, s, d)).astype(np.float32)
    kc, vc, kd, vd = (device.asarray(np.zeros((b, hk, s, d), np.float32)) for _ in range(4))
    device.rope_and_cache(k0, k0, v, kc, vc, spec, np.tile(np.arange(s), (b, 1)), interleaved=interleaved)
    old = np.tile(np.arange(6, s), (b, 1))
    before = kc.get()
    device.shift_cache(kc, spec, old, old - 4, v_cache=vc, interleaved=interleaved)
    device.rope_and_cache(k0[:, :, 6:], k0[:, :, 6:], v[:, :, 6:], kd, vd, spec, old - 4, interleaved=interleaved)
    got, want = kc.get()[:, :, 2:12], kd.get()[:, :, 2:12]
    assert np.abs(got - want).max() <= 4 * 2.0**-23 * (np.abs(want).max() + 1)
    assert np.array_equal(vc.get()[:, :, 2:12], v[:, :, 6:])
    after = kc.get()
    assert np.array_equal(after[:, :, :2], before[:, :, :2])  # the sinks stay
    assert np.array_equal(after[:, :, 12:], before[:, :, 12:])  # the rows a move leaves keep their bits


def test_a_shift_by_zero_keeps_the_bits(device):
    """A row named with from == to is not turned at all (no (1, 0) rotation, which would spread a NaN to its
    partner, turn -0 to +0 and an e5m2 inf to its largest finite), so it can pad a batch's shorter moves."""
    for dtype in DTYPES:
        kc0 = cached(np.random.default_rng(1), (1, 2, 8, 16), dtype)
        kc0[0, 0, 1, 0], kc0[0, 0, 3, 2], kc0[0, 0, 3, 10], kc0[0, 1, 5, 4] = np.nan, -0.0, 1.0, np.inf
        kc = device.asarray(kc0)
        pos = np.array([[1, 3, 5, 7]])
        device.shift_cache(kc, vkrope.RopeFreqs(16, angle="exact"), pos, pos)
        assert np.array_equal(kc.get().view(np.uint8), kc0.view(np.uint8)), dtype


def test_bad_input_is_named_and_leaves_the_caches(device, make_device):
    kc0 = cached(np.random.default_rng(2), (1, 2, 8, 12), np.dtype(np.float32))
    kc, vc = device.asarray(kc0), device.asarray(kc0)
    spec = vkrope.RopeFreqs(8)
    old, new = np.array([[4, 5]]), np.array([[2, 3]])
    cases = [
        (TypeError, "k_cache must be a DeviceArray", lambda: device.shift_cache(kc0, spec, old, new, v_cache=vc)),
        (ValueError, "pass v_cache", lambda: device.shift_cache(kc, spec, old, new)),
        (ValueError, "to_positions must be < S_max", lambda: device.shift_cache(kc, spec, old, new + 10, v_cache=vc)),
        (ValueError, "from_positions must lie in", lambda: device.shift_cache(kc, spec, old - 9, new, v_cache=vc)),
        (ValueError, r"to_positions\[0\] names cache row 2 twice", lambda: device.shift_cache(kc, spec, old, np.array([[2, 2]]),
                                                                              v_cache=vc)),
        (ValueError, "same DeviceArray", lambda: device.shift_cache(kc, spec, old, new, v_cache=kc)),
        (TypeError, "freqs must be", lambda: device.shift_cache(kc, "rope", old, new, v_cache=vc)),
        (ValueError, "rotary width 16", lambda: device.shift_cache(kc, vkrope.RopeFreqs(16), old, new, v_cache=vc)),
        (TypeError, "from_positions must be an integer", lambda: device.shift_cache(kc, spec, old * 1.0, new,
                                                                                     v_cache=vc)),
        (ValueError, "to_positions must have shape", lambda: device.shift_cache(kc, spec, old, new[:, :1],
                                                                                 v_cache=vc)),
        (ValueError, "a paged cache's rows stay", lambda: device.shift_cache(kc, spec, old, new, v_cache=vc,
                                                                             slots=np.array([[0, 1]]))),
        (ValueError, "slots must lie in", lambda: device.shift_cache(kc, spec, old, new, slots=np.array([[0, 99]]))),
    ]
    for exc, match, call in cases:
        with pytest.raises(exc, match=match):
            call()
    other = make_device()
    with pytest.raises(ValueError, match="device"):
        device.shift_cache(other.asarray(kc0), spec, old, new, v_cache=vc)
    small = make_device(max_compute_work_group_count=(65535, 1, 65535))  # (one workgroup row: fewer rows fit)
    skc = small.asarray(np.zeros((1, 2, 512, 12), np.float32))
    with pytest.raises(ValueError, match=r"^from_positions: 511 tokens of 2 heads are more rows than one dispatch"):
        small.shift_cache(skc, spec, np.arange(1, 512)[None], np.arange(511)[None],
                          v_cache=small.asarray(np.zeros((1, 2, 512, 12), np.float32)))
    assert np.array_equal(kc.get().view(np.uint8), kc0.view(np.uint8))
    assert np.array_equal(vc.get().view(np.uint8), kc0.view(np.uint8))
    device.shift_cache(kc, spec, old, new, v_cache=vc)  # still usable


def test_caches_past_one_binding_shift_in_slices(make_device):
    """A 256 KiB binding limit: the 1 MiB caches bind in slices (a pair of
    launches each, every gather first); keys move across slice boundaries
    both ways and come out as on an unlimited device."""
    from vkrope.kernels import shift as shift_kernel  # noqa: PLC0415
    from vkrope.ops.shift import check  # noqa: PLC0415

    rng = np.random.default_rng(8)
    kc0 = rng.standard_normal((1, 2, 512, 256)).astype(np.float32)
    vc0 = rng.standard_normal((1, 2, 512, 256)).astype(np.float32)
    spec = vkrope.RopeFreqs(256, angle="exact")
    old = np.concatenate([np.arange(200, 300), np.arange(0, 20)])[None]
    new = np.concatenate([np.arange(100, 200), np.arange(400, 420)])[None]
    results = []
    for limits in ({}, {"max_storage_buffer_range": 256 << 10}):
        dev = make_device(**limits)
        kc, vc = dev.asarray(kc0), dev.asarray(vc0)
        req = check(kc, spec, old, new, v_cache=vc)
        slices = shift_kernel.plan(req, dev._context().info).slices
        assert (len(slices) > 1) == bool(limits)
        dev.shift_cache(kc, spec, old, new, v_cache=vc)
        results.append((kc.get(), vc.get()))
    assert np.array_equal(results[0][0], results[1][0]) and np.array_equal(results[0][1], results[1][1])
    assert np.array_equal(results[1][1][:, :, 100:200], vc0[:, :, 200:300])


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_moves_up_down_and_swaps_per_batch_item(device, dtype):
    """Each batch item its own permutation of rows (up and down overlapping,
    swaps), with a YaRN spec: the keys rotated by the angle difference with
    no second attention factor (the key carries it), values moved bit for bit."""
    rng = np.random.default_rng(11)
    b, hk, s_max, d = 2, 2, 12, 16
    spec = vkrope.RopeFreqs(16, base=10000.0, yarn=vkrope.YaRN(original_context=4), scale=4.0, angle="exact")
    assert spec.magnitude != 1
    old = np.stack([np.arange(2, 10), np.array([0, 1, 2, 3, 4, 5, 6, 7])])
    new = np.stack([np.arange(4, 12), np.array([1, 0, 3, 2, 7, 6, 5, 4])])  # item 0 up by 2; item 1 swaps
    kc0, vc0 = cached(rng, (b, hk, s_max, d), dtype), cached(rng, (b, hk, s_max, d), dtype)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    device.shift_cache(kc, spec, old, new, v_cache=vc)
    k, v = kc.get(), vc.get()
    inv = spec.inv_freq64  # (the spec's own float64 frequencies: YaRN's ramp is the spec's to define)
    for bi in range(b):
        a = (new[bi] - old[bi]).astype(np.float64)[:, None] * inv[None]
        src = values(kc0[bi][:, old[bi]])  # [Hk, S, D]
        want = rotate(src[None], np.cos(a)[None], np.sin(a)[None], False)[0]
        assert_close(k[bi][:, new[bi]], want, dtype, f"k of item {bi}")
        assert np.array_equal(v[bi][:, new[bi]].view(np.uint8), vc0[bi][:, old[bi]].view(np.uint8))


def test_rows_given_apart_from_the_positions(device):
    """A left-padded batch's contiguous cache (rope_and_cache's cache_position): item 1's rows are its
    positions plus 3. The shift turns each key by to - from of its positions and moves it between the rows
    given; rows not named keep their bits. Rows without positions, positions without rows and both with slots
    are refused, as are rows outside the cache."""
    rng = np.random.default_rng(12)
    b, hk, s_max, d = 2, 2, 12, 8
    spec = vkrope.RopeFreqs(8, base=10000.0, angle="exact")
    old = np.stack([np.arange(4, 8), np.arange(4, 8)])
    new = old - 2  # (two tokens dropped after the sinks)
    pad = np.array([[0], [3]])
    kc0, vc0 = cached(rng, (b, hk, s_max, d), np.float32), cached(rng, (b, hk, s_max, d), np.float32)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    device.shift_cache(kc, spec, old, new, v_cache=vc, from_rows=old + pad, to_rows=new + pad)
    k, v = kc.get(), vc.get()
    inv = 1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8)
    for bi in range(b):
        a = (new[bi] - old[bi]).astype(np.float64)[:, None] * inv[None]
        want = rotate(values(kc0[bi][:, old[bi] + pad[bi]])[None], np.cos(a)[None], np.sin(a)[None], False)[0]
        assert_close(k[bi][:, new[bi] + pad[bi]], want, np.dtype(np.float32), f"k of item {bi}")
        assert np.array_equal(v[bi][:, new[bi] + pad[bi]], vc0[bi][:, old[bi] + pad[bi]])
        untouched = sorted(set(range(s_max)) - set(old[bi] + pad[bi]) - set(new[bi] + pad[bi]))
        assert np.array_equal(k[bi][:, untouched].view(np.uint32), kc0[bi][:, untouched].view(np.uint32))
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    for words, kw in (("from_rows and to_rows go together; got from_rows alone", dict(from_rows=old)),
                      (r"to_rows must lie in \[0, 12\) \(S_max, the cache's rows per head\) where from_rows is not -1; "
                       r"got 12",
                       dict(from_rows=old, to_rows=old + 8)),
                      (r"from_rows must lie in \[-1, 12\) .*-1: none\); got -2",
                       dict(from_rows=old - 6, to_rows=old)),
                      (r"to_rows must lie in \[0, 12\) .*; got -1", dict(from_rows=old, to_rows=old - 5)),
                      (r"from_positions must be \[B, S\] with k_cache's B = 2; got \[1, 4\]",
                       dict(from_positions=old[:1], to_positions=new[:1], from_rows=old, to_rows=new)),
                      (r"to_rows\[0\] names cache row 4 twice", dict(from_rows=old, to_rows=np.full_like(old, 4))),
                      ("a paged cache's are its slots", dict(from_rows=old, to_rows=new, slots=old))):
        args = {"from_positions": old, "to_positions": new, **kw}
        with pytest.raises(ValueError, match=words):
            device.shift_cache(kc, spec, args.pop("from_positions"), args.pop("to_positions"), v_cache=vc, **args)
    with pytest.raises(ValueError, match="to_rows moves rows of a contiguous cache: pass v_cache"):
        device.shift_cache(kc, spec, old, old, from_rows=old, to_rows=old + 1)
    assert np.array_equal(kc.get().view(np.uint32), kc0.view(np.uint32))
    # a from_rows of -1 skips its token (cache_position's -1 wrote nothing there): its to_rows is not read
    skip = (old + pad).copy()
    skip[1, 0] = -1
    to = (new + pad).copy()
    to[1, 0] = -7
    device.shift_cache(kc, spec, old, new, v_cache=vc, from_rows=skip, to_rows=to)
    k = kc.get()
    assert np.array_equal(k[1][:, [3]].view(np.uint32), kc0[1][:, [3]].view(np.uint32))  # (its row stays)
    a = (new[1, 1:] - old[1, 1:]).astype(np.float64)[:, None] * inv[None]
    want = rotate(values(kc0[1][:, old[1, 1:] + 3])[None], np.cos(a)[None], np.sin(a)[None], False)[0]
    assert_close(k[1][:, new[1, 1:] + 3], want, np.dtype(np.float32), "k of item 1, a token skipped")


def test_what_a_shift_refuses(device, tmp_path):
    """A ModelRope whose frequencies each call decides from its positions
    (at any positions: which frequencies rotated a cached key depends on the
    call that wrote it, e.g. a prefill past the switch or one token at a
    time), an M-RoPE spec, a source row named twice, slots past int64:
    refused by name, the cache unchanged; a skipped slot's positions are
    not read."""
    kc = device.asarray(np.zeros((1, 2, 16, 128), np.float32))
    vc = device.asarray(np.zeros((1, 2, 16, 128), np.float32))
    paged = device.asarray(np.arange(4 * 2 * 2 * 128, dtype=np.float32).reshape(4, 2, 2, 128))
    before = paged.get()
    for name in ("llama-2-7b-dynamic.json", "phi-3.5-mini.json"):
        rope = vkrope.from_hf(str(HF_CONFIGS / name))
        assert rope.uses_seq_len()
        for old, new in (([[100000]], [[3]]), ([[9]], [[3]]), ([[5]], [[7]])):
            with pytest.raises(ValueError, match="depend on the positions.*rope.freqs"):
                device.shift_cache(paged, rope, np.array(old), np.array(new), slots=np.array([[0]]))
    assert np.array_equal(paged.get(), before)
    device.shift_cache(paged, vkrope.RopeFreqs(128), np.array([[2**40, 9]]), np.array([[-7, 2]]),
                       slots=np.array([[-1, 0]]))
    with pytest.raises(ValueError, match="M-RoPE"):
        device.shift_cache(kc, vkrope.from_hf(str(HF_CONFIGS / "qwen2-vl-7b.json")), np.array([[5]]),
                           np.array([[3]]), v_cache=vc)
    with pytest.raises(ValueError, match=r"from_positions\[0\] names cache row 5 twice"):
        device.shift_cache(kc, vkrope.RopeFreqs(128), np.array([[5, 5]]), np.array([[1, 2]]), v_cache=vc)
    with pytest.raises(ValueError, match="slots holds 18446744073709551615"):
        device.shift_cache(paged, vkrope.RopeFreqs(128), np.array([[4]]), np.array([[2]]),
                           slots=np.array([[2**64 - 1]], np.uint64))
    gptj = vkrope.from_hf({"model_type": "gptj", "n_embd": 512, "n_head": 4, "rotary_dim": 64})  # (2048 rows)
    for old, new, name in (([[3000]], [[10]], "from"), ([[10]], [[3000]], "to")):  # (either end: no rotation there
        with pytest.raises(ValueError, match=f"^{name}_positions: .*has no rotation for position 3000"):  # in its table)
            device.shift_cache(kc, gptj, np.array(old), np.array(new), v_cache=vc, interleaved=True)
    assert not kc.get().any()


def test_a_longrope_of_one_set_of_factors_shifts(device):
    """A longrope whose short and long factors are one set (from_gguf's, fixed by the context llama.cpp
    allocates) rotated every key by it, whatever call wrote it: its frequencies do not depend on the positions,
    and it is shifted as they are."""
    cfg = json.loads((HF_CONFIGS / "phi-3.5-mini.json").read_text())
    cfg["rope_scaling"]["long_factor"] = cfg["rope_scaling"]["short_factor"]
    rope = vkrope.from_hf(cfg)
    assert not rope.uses_seq_len()
    rng = np.random.default_rng(5)
    kc0 = rng.standard_normal((1, 2, 16, rope.head_dim)).astype(np.float32)
    done = []
    for spec in (rope, rope.freqs(np.array([[0]]))):
        kc, vc = device.asarray(kc0), device.asarray(kc0)
        device.shift_cache(kc, spec, np.array([[9, 10]]), np.array([[2, 3]]), v_cache=vc)
        done.append(kc.get())
    assert np.array_equal(done[0], done[1]) and not np.array_equal(done[0], kc0)


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
@pytest.mark.parametrize("when", ["before", "instead", "on", "after"])
def test_an_interrupted_shift_says_whether_it_was_submitted(device, monkeypatch, when):
    """A signal handler's KeyboardInterrupt around the shift's submission: before it (at the fence reset, or
    in place of the submit, after the stream marked it maybe in flight), the cache is untouched and the
    exception carries no note; on the submit (once it returned) or after it (at the wait), the work runs to
    its end (the cache is shifted once, as an uninterrupted call shifts it) and the exception's note says so,
    so that a caller does not shift it again. The submit's own case was noted "may not have been" (an
    adversary found 1 to 5% of those unshifted): the fence, reset before the submit, now settles it."""
    from vkrope.vk import binding

    rng = np.random.default_rng(7)
    spec = vkrope.RopeFreqs(12, base=10000.0, angle="exact")
    kc0, vc0 = cached(rng, (1, 2, 16, 12), np.float32), cached(rng, (1, 2, 16, 12), np.float32)
    old, new = np.arange(6, 16)[None], np.arange(2, 12)[None]
    want_k, want_v = device.asarray(kc0), device.asarray(vc0)
    device.shift_cache(want_k, spec, old, new, v_cache=want_v)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    real, seen = binding.call_direct, []

    def interrupted(name: str, *args):
        if (when == "before" and name == "vkResetFences") or (when == "instead" and name == "vkQueueSubmit"):
            raise KeyboardInterrupt
        result = real(name, *args)
        seen.append(name)
        if (when == "on" and name == "vkQueueSubmit") or (when == "after" and seen[-2:-1] == ["vkQueueSubmit"]):
            raise KeyboardInterrupt
        return result

    monkeypatch.setattr(binding, "call_direct", interrupted)
    with pytest.raises(KeyboardInterrupt) as raised:
        device.shift_cache(kc, spec, old, new, v_cache=vc)
    monkeypatch.undo()
    notes = getattr(raised.value, "__notes__", [])
    if when in ("before", "instead"):
        assert notes == [] and np.array_equal(kc.get(), kc0) and np.array_equal(vc.get(), vc0)
        return
    assert len(notes) == 1 and "had submitted its work (1 submission(s))" in notes[0] and "shift_cache" in notes[0]
    assert np.array_equal(kc.get(), want_k.get()) and np.array_equal(vc.get(), want_v.get())


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
def test_an_interruption_of_a_threads_first_submit_is_settled(device, monkeypatch):
    """A thread whose first submit is interrupted (its counts at nothing queued yet) gets the KeyboardInterrupt
    with no note and the cache untouched (the settling read a count the thread did not have yet: an
    AttributeError replaced the interrupt, a reviewer found)."""
    import threading

    from vkrope.vk import binding

    rng = np.random.default_rng(9)
    spec = vkrope.RopeFreqs(12, base=10000.0, angle="exact")
    kc0 = cached(rng, (1, 2, 16, 12), np.float32)
    kc, vc = device.asarray(kc0), device.asarray(kc0)
    real, caught = binding.call_direct, []

    def interrupted(name: str, *args):
        if name == "vkQueueSubmit":
            raise KeyboardInterrupt
        return real(name, *args)

    def call():
        try:
            device.shift_cache(kc, spec, np.arange(6, 16)[None], np.arange(2, 12)[None], v_cache=vc)
        except BaseException as exc:  # noqa: BLE001  (the test looks at what it is)
            caught.append(exc)

    monkeypatch.setattr(binding, "call_direct", interrupted)
    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    monkeypatch.undo()
    assert len(caught) == 1 and type(caught[0]) is KeyboardInterrupt, caught
    assert getattr(caught[0], "__notes__", []) == [] and np.array_equal(kc.get(), kc0)


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
def test_a_submit_the_driver_refuses_is_not_noted_as_submitted(device):
    """vkQueueSubmit failing (out of memory) queued nothing: the error carries no submitted note, the caches
    are untouched, and the next shift is right."""
    from vkrope.vk import binding as b

    rng = np.random.default_rng(8)
    spec = vkrope.RopeFreqs(12, base=10000.0, angle="exact")
    kc0 = cached(rng, (1, 2, 16, 12), np.float32)
    old, new = np.arange(6, 16)[None], np.arange(2, 12)[None]
    want, want_v = device.asarray(kc0), device.asarray(kc0)
    device.shift_cache(want, spec, old, new, v_cache=want_v)
    kc, vc = device.asarray(kc0), device.asarray(kc0)
    b.inject_fault("vkQueueSubmit", lambda: b.vk().VkErrorOutOfDeviceMemory())
    with pytest.raises(vkrope.OutOfDeviceMemoryError) as raised:
        device.shift_cache(kc, spec, old, new, v_cache=vc)
    assert getattr(raised.value, "__notes__", []) == [] and np.array_equal(kc.get(), kc0)
    device.shift_cache(kc, spec, old, new, v_cache=vc)
    assert np.array_equal(kc.get(), want.get()) and np.array_equal(vc.get(), want_v.get())


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
@pytest.mark.parametrize("target", ["device", "module"])
@pytest.mark.parametrize("path", ["run", "replay", "many"])
def test_an_interruption_after_the_submitting_step_is_noted(target, path):
    """A signal handler's exception may come at any bytecode, also after the step that submitted returned (in
    reading the call's result, keeping it, or returning a replay's): the public call's outermost frame notes it
    all the same, so an unnoted exception still means untouched device arrays. Simulated with sys.settrace: the
    first Python call after Device._run (a shift run; apply_many's jobs) or Device._replay (an in-place apply
    on resident arrays, kept by its first call and submitted again) returned raises, as a handler would there."""
    rng = np.random.default_rng(11)
    owner = vkrope.Device() if target == "device" else vkrope.default_device()
    runner = owner if target == "device" else vkrope
    kc = owner.asarray(cached(rng, (1, 1, 32, 8), np.float32))
    if path == "run":
        spec, old, new = vkrope.RopeFreqs(8, base=10000.0, angle="exact"), np.arange(10, 20)[None], np.arange(10)[None]

        vc = owner.asarray(cached(rng, (1, 1, 32, 8), np.float32))

        def call() -> None:
            runner.shift_cache(kc, spec, old, new, v_cache=vc)
    elif path == "many":
        freqs = owner.asarray(cached(rng, (32, 8), np.float32))

        def call() -> None:
            owner.apply_many([(kc, freqs, {"out": kc})])
    else:
        freqs = owner.asarray(cached(rng, (32, 8), np.float32))

        def call() -> None:
            runner.apply(kc, freqs, out=kc)
    if path == "replay":
        call()  # (kept: the interrupted call is the second, submitted again as it is)
    before = kc.get()
    exc = interrupted_after({"run": "_run", "many": "_run", "replay": "_replay"}[path], call)
    assert not np.array_equal(kc.get(), before)  # (the work was done ...)
    notes = getattr(exc, "__notes__", [])
    assert len(notes) == 1 and "had submitted its work" in notes[0]  # (... and the exception says so)
    if target == "device":
        owner.close()


def test_a_shift_past_one_binding_is_refused_naming_its_positions():
    """The rotated keys of one shift must fit one binding: past it, a ValueError naming from_positions and how
    many tokens it moves over the batch, and the caches as they were."""
    rng = np.random.default_rng(5)
    with vkrope.Device() as dev:
        dev._force_limits(max_storage_buffer_range=64 << 10)
        k0, v0 = cached(rng, (2, 2, 512, 64), np.float32), cached(rng, (2, 2, 512, 64), np.float32)
        kc, vc = dev.asarray(k0), dev.asarray(v0)
        old = np.tile(np.arange(100, 300), (2, 1))
        with pytest.raises(ValueError, match=r"^from_positions: the rotated keys of the 400 tokens it moves "
                                             r"\(every sequence's, 2 heads each\).* shift them in parts"):
            dev.shift_cache(kc, vkrope.RopeFreqs(64), old, old - 90, v_cache=vc)
        assert np.array_equal(kc.get(), k0) and np.array_equal(vc.get(), v0)
        dev.shift_cache(kc, vkrope.RopeFreqs(64), old[:, :20], old[:, :20] - 90, v_cache=vc)  # (a part fits)


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
def test_a_second_interrupt_during_the_noting_is_noted_itself(device):
    """An adversary's finding: a second Ctrl-C landing as the first one's note is written (as note_submitted
    starts) propagated without the note, so a shift that had run looked like one that had not."""
    k0 = np.random.default_rng(0).standard_normal((1, 1, 4, 16)).astype(np.float32)
    kc = device.asarray(k0)

    def second(frame: Any, event: str, arg: Any) -> Any:  # (a profile function: the first's tracer is unset as it
        if event == "call" and frame.f_code.co_name == "note_submitted":  # raises)
            sys.setprofile(None)
            raise KeyboardInterrupt("second")
        return None

    try:
        exc = interrupted_after("_run", lambda: device.shift_cache(
            kc, vkrope.RopeFreqs(16, angle="exact"), np.array([[100]]), np.array([[0]]), from_rows=np.array([[0]]),
            to_rows=np.array([[0]])), then=lambda: sys.setprofile(second))
    finally:
        sys.setprofile(None)
    assert exc.args == ("second",) and isinstance(exc.__context__, KeyboardInterrupt)
    assert "had submitted its work (1 submission(s))" in getattr(exc, "__notes__", [""])[0]
    assert not np.array_equal(kc.get(), k0)  # (the shift ran)


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
def test_a_default_device_made_during_the_call_counts_its_own_submissions(monkeypatch):
    """A module function whose default device is closed as it starts (another thread's close_default_device)
    runs on a new default device: an exception after its submit notes that call's submission, not a count
    taken against the closed one's (which had begun several)."""
    x, f = np.ones((1, 4, 8), np.float32), np.ones((4, 8), np.float32)
    for _ in range(3):
        vkrope.apply(x, f)  # (the default device has begun submissions before the call)
    run_on_default = vkrope.api._on_default

    def closed_first(*args: Any) -> Any:
        vkrope.close_default_device()  # (as another thread may, as the call starts)
        return run_on_default(*args)

    monkeypatch.setattr(vkrope.api, "_on_default", closed_first)
    exc = interrupted_after("_run", lambda: vkrope.apply(x, f))
    assert "had submitted its work (1 submission(s))" in getattr(exc, "__notes__", [""])[0]


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
def test_another_threads_submissions_are_not_the_calls():
    """A call refused by its argument checks submitted nothing, even where another thread submits on the same
    device while it checks them: its exception carries no note (the note counts the calling thread's
    submissions). The other thread's call is made to land inside the checks (sys.settrace)."""
    import threading

    x, f = np.ones((1, 4, 8), np.float32), np.ones((4, 8), np.float32)
    with vkrope.Device() as dev:
        dev.apply(x, f)  # (the pipeline made before)

        def tracer(frame, event, arg):
            if event == "call" and frame.f_code.co_name == "_check_positions":
                sys.settrace(None)
                other = threading.Thread(target=dev.apply, args=(x, f))
                other.start()
                other.join()  # (its call submitted while this one checks)
            return None

        sys.settrace(tracer)
        try:
            with pytest.raises(ValueError, match="positions entries must lie") as raised:
                dev.apply(x, f, positions=np.array([0, 1, 2, 9]))
        finally:
            sys.settrace(None)
        assert getattr(raised.value, "__notes__", []) == []


@pytest.mark.skipif(not hasattr(BaseException, "add_note"), reason="exception notes are Python 3.11's")
def test_a_call_whose_default_device_was_replaced_after_its_submit_is_noted():
    """A module function submits on the default device; before it returns, another thread closes that device
    and makes a new default one; an exception then still carries the note (submissions are counted per thread
    over every device, not on whichever device is the default when the exception comes)."""
    x, f = np.ones((1, 4, 8), np.float32), np.ones((4, 8), np.float32)
    vkrope.apply(x, f)
    exc = interrupted_after("_run", lambda: vkrope.apply(x, f),
                            then=lambda: (vkrope.close_default_device(), vkrope.default_device()))
    assert "had submitted its work (1 submission(s))" in getattr(exc, "__notes__", [""])[0]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_a_16_bit_cache_shift_is_the_exact_values_one_rounding(device, dtype):
    """The shifted key of a float16 or bfloat16 cache is x c - p s of the shader's own (cos, sin) rounded once to
    the cache's dtype (the float32 rotation rounded again was a unit off on 27 of 80,000 float16 values: an
    adversary's). The shader's (cos, sin) are read by shifting (1, 0) pairs in a float32 cache the same way."""
    from fractions import Fraction

    from oracle import bf16_round_exact, half_round_exact

    rng = np.random.default_rng(5)
    d, rows = 8, 512
    spec = vkrope.InvFreqs([0.9, 0.37, 0.013, 1.7])
    old = rng.integers(0, 60000, (1, rows))
    new = rng.integers(0, 60000, (1, rows))
    slots = np.arange(rows)[None]
    unit = np.zeros((rows, 1, 1, d), np.float32)
    unit[..., : d // 2] = 1.0  # (rotate-half: channel i pairs with i + d/2)
    ones = device.asarray(unit)
    device.shift_cache(ones, spec, old, new, slots=slots)
    cs = ones.get()[:, 0, 0]
    cos, sin = cs[:, : d // 2], cs[:, d // 2:]
    dt = vkrope.bfloat16 if dtype == "bfloat16" else np.float16
    bits = rng.integers(0x2000, 0x5000, (rows, 1, 1, d)).astype(np.uint16) | (
        rng.integers(0, 2, (rows, 1, 1, d)) << 15).astype(np.uint16)
    k = bits.view(np.float16).astype(dt) if dtype == "float16" else (bits.astype(np.uint16)).view(dt)
    # (the first 32 rows' pair 0 two values whose x c - p s has a float32 rounding on a midpoint of the cache's
    # dtype while it is not one: that float32 value rounded again takes the tie's even side; values in [1, 2),
    # p scaled by 2^-6 .. 2^6 for bfloat16's fewer significands: float64 holds each x c - p s exactly)
    ones_to_two = (np.arange(0x3C00, 0x4000, dtype=np.uint16).view(np.float16) if dtype == "float16" else
                   np.arange(0x3F80, 0x4000, dtype=np.uint16).view(dt)).astype(np.float64)
    scales = 2.0 ** np.arange(-6, 7) if dtype == "bfloat16" else np.ones(1)
    tie, low = (0x1000, 0x1FFF) if dtype == "float16" else (0x8000, 0xFFFF)  # (half the cache's last bit)
    crafted = 0
    for r in range(32):
        c, s = float(cos[r, 0]), float(sin[r, 0])
        val = ones_to_two[:, None, None] * c - (ones_to_two[None, :, None] * scales) * s
        f32 = val.astype(np.float32)
        hit = np.flatnonzero(((f32.view(np.uint32) & low) == tie) & (f32.astype(np.float64) != val))
        if hit.size:
            i, j, e = np.unravel_index(hit[0], val.shape)
            k[r, 0, 0, 0], k[r, 0, 0, d // 2] = ones_to_two[i], ones_to_two[j] * scales[e]
            crafted += 1
    assert crafted >= 16
    kc = device.asarray(k)
    device.shift_cache(kc, spec, old, new, slots=slots)
    got = kc.get()[:, 0, 0].astype(np.float64)
    kv = k[:, 0, 0].astype(np.float64)
    rnd = half_round_exact if dtype == "float16" else bf16_round_exact
    off = 0
    for r in range(rows):
        for i in range(d // 2):
            a, p = Fraction(float(kv[r, i])), Fraction(float(kv[r, i + d // 2]))
            c, s = Fraction(float(cos[r, i])), Fraction(float(sin[r, i]))
            off += rnd(a * c - p * s) != got[r, i]
            off += rnd(p * c + a * s) != got[r, i + d // 2]
    assert off == 0, f"{off} of {rows * d} not the one rounding"

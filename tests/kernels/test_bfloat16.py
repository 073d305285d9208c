"""bfloat16 (`ml_dtypes.bfloat16`): widened exactly to float32 in the
shader, rotated in float32, rounded once to nearest-even on store.

The oracle rounds on its own (tests/oracles/oracle.py `bf16_round`, from frexp and
numpy's round-half-even; checked here against the bit rule and against
ml_dtypes), so neither ml_dtypes' conversions nor vkrope can hide behind it.

Exact cases are built like the float16 ones (tests/kernels/test_float16_rounding.py):
x is bfloat16 m_x 2^a, one of (cos, sin) is m_c 2^k and the other 0, so each
output is one exact float32 product m 2^e with m odd and one bit too many
for bfloat16: a tie, whose nearest-even neighbour differs from the one a
ties-away or a truncating rounding would give in many of the cases.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import vkrope
from oracle import (
    BF16, BF16_MAX, bf16_round, bf16_round_exact, bf16_ulp, bf16_values, check_result, exact_rotation_check, oracle,
    poisoned_like,
    to_bf16,
)

RNG = np.random.default_rng(1616)
STORAGES = ["buffer", "texture3d"]
INF = float("inf")


def bits(a) -> np.ndarray:
    return np.asarray(a).view(np.uint16)


def words(*w) -> np.ndarray:
    return np.array(w, np.uint16).view(BF16)


# --- the oracle's own rounding -----------------------------------------------------
def test_the_oracles_rounding_is_round_to_nearest_even():
    """bf16_round against the bit rule (add 0x7FFF plus the kept lowest bit,
    drop 16 bits) on random and chosen float32 values, and against
    ml_dtypes' float32 conversion (which rounds to nearest-even)."""
    u = RNG.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    u = np.concatenate([u, np.array([0x3F808000, 0x3F818000, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x00018000,
                                     0x80008000, 0x007FFFFF, 0x00000001, 0xFF7F8000], np.uint32)])
    f = u.view(np.float32)
    f = f[np.isfinite(f)]
    u = f.view(np.uint32)
    rule = ((u.astype(np.uint64) + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
    want = (rule << 16).view(np.float32).astype(np.float64)
    got = bf16_round(f.astype(np.float64))
    assert np.array_equal(got, want, equal_nan=False)
    assert np.array_equal(bits(f.astype(BF16)), bits(to_bf16(got)))
    assert bf16_round([BF16_MAX * (1 + 2.0**-9), BF16_MAX * (1 + 2.0**-8), 2.0**-134, 3 * 2.0**-134]).tolist() == [
        BF16_MAX, INF, 0.0, 4 * 2.0**-134]
    assert bf16_ulp([1.0, 1.5, 2.0**-126, 2.0**-130]).tolist() == [2.0**-7, 2.0**-7, 2.0**-133, 2.0**-133]


# --- ties, subnormal ties, overflow ----------------------------------------------------
def odd(lo, hi):
    lo += 1 - lo % 2
    return None if lo > hi else lo + 2 * int(RNG.integers(0, (hi - lo) // 2 + 1))


def tie(m, e, sign):
    """(tie, nearest-even, ties-away, toward-zero) for sign * m * 2^e, m odd."""
    lo, hi = (m - 1) * 2.0**e, (m + 1) * 2.0**e
    even = lo if ((m - 1) // 2) % 2 == 0 else hi
    return sign * m * 2.0**e, sign * even, sign * hi, sign * lo


def build_ties():
    """x (bfloat16) [P, 2] pairs, freqs (float32) [P, 2] and each output's
    (tie, nearest-even, ties-away, toward-zero)."""
    xs, fs, want = [], [], []
    while len(xs) < 400:
        subnormal = len(xs) >= 300
        m_c = int(RNG.integers(3, 256)) | 1
        if subnormal:
            m_x = [odd(1, 255 // m_c) for _ in range(2)]
            e = -134
            a = int(RNG.integers(-40, -10))
        else:
            m_x = [odd(-(-257 // m_c), min(255, 511 // m_c)) for _ in range(2)]
            e = int(RNG.integers(-100, 100))
            a = e - int(RNG.integers(-20, 20))
        if None in m_x:
            continue
        k = e - a  # x = m_x 2^a, c = m_c 2^k: the product m_x m_c 2^e
        signs = [float(RNG.choice([-1.0, 1.0])) for _ in range(2)]
        x = [s * m * 2.0**a for s, m in zip(signs, m_x)]
        c = m_c * 2.0**k
        if len(xs) % 2:
            xs.append(x)
            fs.append((c, 0.0))  # (re c, im c)
            want += [tie(m_x[0] * m_c, e, signs[0]), tie(m_x[1] * m_c, e, signs[1])]
        else:
            xs.append([x[1], -x[0]])
            fs.append((0.0, c))  # (re c - im s, re s + im c) = (x0 c, x1 c)
            want += [tie(m_x[0] * m_c, e, signs[0]), tie(m_x[1] * m_c, e, signs[1])]
    # overflow: the largest finite value, the tie above it, and just below the tie
    for x, c, v in [(BF16_MAX, 1 + 2.0**-8, INF), (BF16_MAX, 1 + 2.0**-9, BF16_MAX), (73 * 2.0**119, 7.0, INF),
                    (-73 * 2.0**119, 7.0, -INF), (BF16_MAX, 1.0, BF16_MAX), (2.0**-133, 1.0, 2.0**-133)]:
        xs.append([x, x])
        fs.append((c, 0.0))
        want += [(x * c, v, None, None), (x * c, v, None, None)]
    x = to_bf16(np.array(xs))
    f = np.array(fs, np.float64)
    assert np.array_equal(f.astype(np.float32).astype(np.float64), f), "cos / sin must be exact float32"
    return x, f.astype(np.float32), want


def test_ties_and_overflow_round_to_nearest_even(device, subnormals_kept):
    x, f, want = build_ties()
    n = x.shape[0]
    ref = oracle(x.reshape(1, n, 2), f.reshape(n, 2), positions=np.arange(n)).reshape(-1)
    assert np.array_equal(ref, np.array([w[0] for w in want])), "the constructed products are the exact results"
    even = np.array([w[1] for w in want])
    assert np.array_equal(bf16_round(ref), even), "the oracle rounds ties to even"
    ties = [w for w in want if w[2] is not None]
    assert sum(w[1] != w[2] for w in ties) > 100 and sum(w[1] != w[3] for w in ties) > 100, \
        "a ties-away or truncating rounding would differ"
    assert sum(abs(w[0]) < 2.0**-126 for w in ties) >= 100, "subnormal ties"
    for storage in STORAGES:
        for c in (2, 4):  # C % 4 == 2 and 0: pairs and whole texels
            xs = x.reshape(1, -1, c)
            fs = f.reshape(-1, c)
            out = poisoned_like(xs)
            y = device.apply(xs, fs, out=out, storage=storage)
            assert y is out
            bad = np.flatnonzero(bits(y).reshape(-1) != bits(to_bf16(even)))
            assert not bad.size, (storage, c, bad[:5], bf16_values(y).reshape(-1)[bad[:5]], even[bad[:5]])


# --- special values ---------------------------------------------------------------------
SPECIALS = words(0x7F80, 0xFF80, 0x7FC0, 0xFFC1, 0x7FA5, 0x7F81, 0x0000, 0x8000, 0x0001, 0x807F, 0x0080, 0x7F7F,
                 0xFF7F, 0x3F80, 0xBF81, 0x4049)


@pytest.mark.parametrize("storage", STORAGES)
def test_special_values(device, storage, subnormals_kept):
    """inf, NaN (quiet and signalling payloads), signed zeros, subnormals and
    the largest finite values, rotated (against the oracle: NaN for NaN,
    exact infinities, subnormals rounded on their grid) and passed through
    (buffers: every bit kept, NaN payloads included)."""
    v = SPECIALS
    x = np.stack(np.meshgrid(v, v, indexing="ij"), -1).reshape(1, -1, 2).astype(BF16)  # every pair
    x = np.ascontiguousarray(x)
    n = x.shape[1]
    angles = np.array([0.0, np.pi / 2, np.pi, 0.3, -2.0, 1e-3])
    f = np.stack([np.cos(angles), np.sin(angles)], -1).astype(np.float32)
    pos = np.where(np.arange(n) % 7 == 3, -1, np.arange(n) % len(angles))
    with np.errstate(invalid="ignore", over="ignore"):
        y = device.apply(x, f, out=poisoned_like(x), storage=storage, positions=pos)
        ref = oracle(x, f, positions=pos)
    yv, rr = bf16_values(y), bf16_round(ref)
    nan = np.isnan(rr)
    assert np.array_equal(np.isnan(yv), nan)
    rotated = np.broadcast_to((pos >= 0)[None, :, None], x.shape)
    assert ((bits(y)[nan & rotated] & 0x7FC0) == 0x7FC0).all(), "rotated NaNs come out quiet"
    fin = np.isfinite(rr)
    assert np.array_equal(yv[~nan & ~fin], rr[~nan & ~fin])
    # finite results: one rounding of the float64 result (float32 products, then bfloat16)
    err = np.abs(yv[fin] - ref[fin])
    assert (err <= 0.5 * bf16_ulp(rr[fin]) + 2.0**-22 * np.abs(ref[fin]) + 2.0**-149).all()
    passed = pos == -1
    if storage == "buffer":
        assert np.array_equal(bits(y)[0, passed], bits(x)[0, passed]), "pass-through keeps every bit"
    else:
        same = bits(y)[0, passed] == bits(x)[0, passed]
        assert (same | np.isnan(bf16_values(x)[0, passed])).all()
    # Subnormal inputs with cos = 1, sin = 0 come back exactly where the
    # device keeps float32 subnormals in shaders (lavapipe does); where it
    # flushes them (its float32 kernel shows it) they come back as zeros.
    sub = words(0x0001, 0x807F, 0x0040, 0x8001)
    xs = np.ascontiguousarray(np.stack([sub, sub[::-1]], -1).reshape(1, 4, 2))
    ones = np.tile(np.float32([1.0, 0.0]), (4, 1))
    ys = device.apply(xs, ones, storage=storage)
    keeps = device.apply(bf16_values(xs).astype(np.float32), ones, storage=storage)
    if np.array_equal(keeps, bf16_values(xs)):
        assert np.array_equal(bits(ys), bits(xs))
    else:
        assert (bf16_values(ys) == 0).all()


# --- every path of apply -------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("c", [64, 14])
@pytest.mark.parametrize("freqs_kind", ["float32", "bfloat16", "complex", "spec", "axial", "exact"])
@pytest.mark.parametrize("resident", [False, True])
def test_apply(device, storage, c, freqs_kind, resident):
    if freqs_kind == "axial" and c % 4:
        c -= 2  # axial frequencies split C / 4 pairs per axis: C % 4 == 0
    rng = np.random.default_rng(c)
    x = (rng.standard_normal((2, 33, c)) * 100).astype(BF16)
    theta = rng.uniform(-40, 40, (33, c // 2))
    kw = {}
    if freqs_kind in ("spec", "exact"):
        freqs = vkrope.RopeFreqs(c, base=10000.0, angle="exact" if freqs_kind == "exact" else "float32")
        cos, sin = freqs.table(np.arange(33))
        ref_f = np.stack([cos, sin], -1).reshape(33, c)
    elif freqs_kind == "axial":
        freqs = vkrope.AxialFreqs(c, end_x=11, end_y=3)
        ref_f = freqs.table()
    elif freqs_kind == "complex":
        freqs = np.exp(1j * theta).astype(np.complex64)
        ref_f = freqs
    else:
        freqs = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(33, c).astype(
            np.float32 if freqs_kind == "float32" else BF16)
        ref_f = freqs
        if resident and freqs_kind == "bfloat16":
            freqs = device.asarray(freqs)
    pos = rng.integers(-1, 33, 33)
    kw = {"positions": pos}
    if resident:
        y = device.apply(device.asarray(x, storage=storage), freqs, **kw)
        assert y.dtype == BF16
        check_result(y, x, ref_f, **kw)
        inv = device.apply(y, freqs, inverse=True, **kw).get()
        check_result(inv, y.get(), ref_f, inverse=True, **kw)
    else:
        out = poisoned_like(x)
        y = device.apply(x, freqs, out=out, storage=storage, **kw)
        assert y is out
        check_result(y, x, ref_f, **kw)


def test_bfloat16_tables_are_read_as_bfloat16(device):
    """bfloat16 freqs with bfloat16 x are read as they are (the products of
    two bfloat16 values are exact in float32): every result is the float64
    result rounded once, bit for bit."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 64, 16)).astype(BF16)
    f = rng.uniform(-1, 1, (64, 16)).astype(BF16)
    for storage in STORAGES:
        y = device.apply(x, f, storage=storage)
        want = to_bf16(bf16_round(oracle(x, f)))
        # exact products, one float32 rounding of their difference, then one bfloat16 rounding
        assert (bits(y) == bits(want)).mean() > 0.999
        check_result(y, x, f)
        yd = device.apply(device.asarray(x, storage=storage), device.asarray(f)).get()
        assert np.array_equal(bits(yd), bits(y))


# --- arrays ------------------------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
def test_device_arrays_keep_bfloat16_bits(device, storage):
    w = RNG.integers(0, 2**16, (3, 7, 10), dtype=np.uint64).astype(np.uint16)
    a = w.view(BF16)
    d = device.asarray(a, storage=storage)
    assert d.dtype == BF16 and d.shape == a.shape
    back = d.get()
    assert back.dtype == BF16
    assert np.array_equal(bits(back), w)
    assert np.array_equal(bits(copy.copy(d).get()), w)
    assert np.array_equal(bits(np.asarray(d)), w)


def test_out_must_match_x(device):
    x = np.ones((1, 4, 8), BF16)
    f = np.zeros((4, 8), np.float32)
    with pytest.raises(TypeError, match=r"out must have dtype bfloat16 \(the dtype of x\); got float32"):
        device.apply(x, f, out=np.zeros((1, 4, 8), np.float32))
    with pytest.raises(TypeError, match="float32, float16 or bfloat16"):
        device.apply(x.astype(np.float64), f)
    y = device.apply(x, f)  # and the device still works
    assert y.dtype == BF16


def test_ml_dtypes_is_the_bfloat16():
    assert vkrope.bfloat16 is ml_dtypes.bfloat16
    assert (vkrope.float8_e4m3fn, vkrope.float8_e5m2) == (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2)
    names = {}
    exec("from vkrope import *", names)  # noqa: S102  (every name in __all__ resolves, the lazy ones too)
    assert names["bfloat16"] is ml_dtypes.bfloat16
    with pytest.raises(AttributeError, match="no attribute 'bfloat32'"):
        vkrope.bfloat32  # noqa: B018


LAZY = """
import sys
import numpy as np
import vkrope
from vkrope.runtime import dtypes
x = np.arange(32, dtype=np.float32).reshape(1, 4, 8)
y = vkrope.apply(x, np.ones((4, 8), np.float32))
c = vkrope.rotary_embedding(x, np.ones((4, 4), np.float32), np.zeros((4, 4), np.float32), np.arange(4)[None],
                            num_heads=1)
assert np.array_equal(c, x) and y.dtype == np.float32
assert np.dtype(np.float16) in dtypes.TENSOR_DTYPES and np.dtype('V2') not in dtypes.TENSOR_DTYPES
assert dtypes.is_real_scalar(np.float16(1)) and not dtypes.is_real_scalar("1")
print("loaded:", "ml_dtypes" in sys.modules)
if sys.argv[1] in ("in", "bytes"):  # (a name: imports it)
    name = "bfloat16" if sys.argv[1] == "in" else b"bfloat16"
    print("by name:", "float64" not in dtypes.TENSOR_DTYPES and name in dtypes.TENSOR_DTYPES,
          "ml_dtypes" in sys.modules)
else:
    f = vkrope.axial_freqs(8, 2, 2, dtype="bfloat16")
    print("by name:", f.dtype == np.dtype("bfloat16"), "ml_dtypes" in sys.modules)
import ml_dtypes
assert vkrope.bfloat16 is ml_dtypes.bfloat16
"""


@pytest.mark.parametrize("first", ["in", "bytes", "axial_freqs"])
def test_ml_dtypes_is_imported_only_when_its_types_are_used(first):
    """`import vkrope` and float32 / float16 work do not import ml_dtypes (docs/PERFORMANCE.md, "Import
    time"): an array or scalar of its types exists only once its caller has imported it, and a dtype named
    "bfloat16" imports it then."""
    out = subprocess.run([sys.executable, "-c", LAZY, first], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "VKROPE_VALIDATION": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["loaded: False", "by name: True True"]


FORK_MID_IMPORT = """
import importlib.machinery, os, sys, threading, time
class Slow:  # (ml_dtypes' import made to last a second, so the fork lands inside it)
    def find_spec(self, name, path, target=None):
        if name != "ml_dtypes":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        spec.loader.exec_module = lambda module: (time.sleep(1.0), run(module))
        return spec
sys.meta_path.insert(0, Slow())
import numpy as np, vkrope
by_vkrope = sys.argv[1] == "vkrope"
t = threading.Thread(target=(lambda: vkrope.bfloat16) if by_vkrope else (lambda: __import__("ml_dtypes")))
t.start()
time.sleep(0.3)
pid = os.fork()
if pid == 0:
    try:
        vkrope.apply(np.ones((1, 4, 8)), np.ones((4, 8), np.float32))
    except TypeError as e:
        print("child:", str(e).split(";")[0], flush=True)
    if by_vkrope:
        print("child:", vkrope.bfloat16.__name__, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
t.join()
print("parent:", vkrope.bfloat16.__name__)
"""


@pytest.mark.parametrize("importer", ["vkrope", "the caller"])
def test_a_fork_during_the_import_of_ml_dtypes_leaves_a_working_child(importer):
    """A fork while a thread imports ml_dtypes: through vkrope, the fork waits for the import; by the caller
    itself, the child's dtype checks take the half-made module for none (importing it there would wait for
    a thread the child does not have, for ever)."""
    out = subprocess.run([sys.executable, "-c", FORK_MID_IMPORT, importer.split()[-1]], capture_output=True,
                         text=True, timeout=60, env={**os.environ, "VKROPE_VALIDATION": "0"})
    assert out.returncode == 0, out.stderr
    want = ["child: x must have dtype float32, float16 or bfloat16"] + ["child: bfloat16"] * (importer == "vkrope")
    assert out.stdout.splitlines() == want + ["parent: bfloat16"]


def test_a_blocked_ml_dtypes_leaves_the_other_dtypes_working():
    """With ml_dtypes' import blocked (sys.modules entry None), float32 work runs and a float64 x gets the
    usual TypeError naming x (the dtype checks do not try to import it)."""
    code = ("import sys\nsys.modules['ml_dtypes'] = None\nimport numpy as np, vkrope\n"
            "x = np.ones((1, 4, 8))\n"
            "print(vkrope.apply(x.astype(np.float32), np.ones((4, 8), np.float32)).dtype)\n"
            "try:\n    vkrope.apply(x, np.ones((4, 8), np.float32))\n"
            "except TypeError as e:\n    print(str(e).split(';')[0])\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "VKROPE_VALIDATION": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["float32", "x must have dtype float32, float16 or bfloat16"]


@pytest.mark.parametrize("value", [np.float32, np.dtype("<f4"), np.dtype(">f4"), "float32", "bfloat16", BF16,
                                   np.dtype(BF16), ml_dtypes.float8_e4m3fn, np.float64, "V2", np.dtype("V2"),
                                   np.complex64, "f2", np.int16])
def test_dtype_sets_compare_as_tuples_of_dtypes(value):
    """`in` one of vkrope's dtype sets answers as the tuple of its dtypes would."""
    from vkrope.runtime import dtypes

    for dts in (dtypes.TENSOR_DTYPES, dtypes.CACHE_DTYPES, dtypes.FREQS_DTYPES, dtypes.FP8_DTYPES, dtypes.BFLOAT16,
                dtypes.TENSOR_DTYPES + (np.complex64,)):
        assert (value in dts) == (value in tuple(dts)), (value, dts)
    assert [d.name for d in dtypes.CACHE_DTYPES] == list(dtypes.CACHE_DTYPES.names)
    assert dtypes.TENSOR_DTYPE_NAMES == "float32, float16 or bfloat16"


def test_ml_scalars_are_real_scalars():
    from vkrope.runtime.dtypes import is_real_scalar

    for v in (1, 2.5, np.int8(3), np.float16(1), ml_dtypes.bfloat16(1.5), ml_dtypes.float8_e5m2(2), True):
        assert is_real_scalar(v), v
    for v in ("1", None, 1j, np.complex64(1), np.array(1.0), [1.0]):
        assert not is_real_scalar(v), v


# --- cancellation: float32 cos / sin, products that nearly cancel --------------------------------
def cancelling(n, rng):
    """bfloat16 pairs (x0, x1) and float32 (c, s) of the angle atan2(x0, x1):
    x0 c - x1 s is zero but for the float32 rounding of c and s, so it
    cancels to about 2^-24 of its terms."""
    x0 = bf16_round(rng.uniform(0.5, 4, n) * np.exp2(rng.integers(-20, 20, n)))
    x1 = bf16_round(rng.uniform(0.5, 4, n) * np.exp2(rng.integers(-20, 20, n)))
    theta = np.arctan2(x0, x1)
    return x0, x1, np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)


def strict(y, ref, scale):
    """Half a bfloat16 ulp after a float32 sum of exact products (2^-23 of
    the result, 2^-38 of the terms)."""
    yv, rr = bf16_values(y), bf16_round(ref)
    return np.abs(yv - ref) <= 0.5 * bf16_ulp(rr) + 2.0**-23 * np.abs(ref) + 2.0**-38 * scale


@pytest.mark.parametrize("storage", STORAGES)
def test_cancelling_products_are_rounded_once(device, storage):
    """Where x0 c and x1 s cancel to a few bits, a float32 product rounding
    alone is tens of bfloat16 ulps of the result (the plain formula gave
    up to 40 on lavapipe, which does not fuse fma); vkrope's exact products
    keep every element within half an ulp. Interleaved and rotate-half."""
    rng = np.random.default_rng(77)
    n = 4096
    x0, x1, c, s = cancelling(n, rng)
    x = to_bf16(np.stack([x0, x1], -1)).reshape(1, n, 2)
    f = np.stack([c, s], -1).astype(np.float32)
    ref = oracle(x, f)
    scale = np.abs(bf16_values(x[..., 0])) * np.abs(c) + np.abs(bf16_values(x[..., 1])) * np.abs(s)
    scale = np.repeat(scale[..., None], 2, -1)
    rel = np.abs(ref[..., 0]) / scale[..., 0]
    assert (rel < 2.0**-20).mean() > 0.9, "the first outputs cancel to a few bits"
    y = device.apply(x, f, storage=storage, out=poisoned_like(x))
    ok = strict(y, ref, scale)
    assert ok.all(), f"{(~ok).sum()} elements past half an ulp"
    # the same pairs as rotate-half heads [B, H, S, D] = [1, 1, n, 2] through the table kernel
    q = x.reshape(1, 1, n, 2)
    yq = device.rotary_embedding(q, c.reshape(n, 1), s.reshape(n, 1), np.arange(n)[None], storage=storage)
    assert strict(yq.reshape(1, n, 2), ref, scale).all()


@pytest.mark.parametrize("storage", STORAGES)
def test_ties_through_the_table_kernel(device, storage, subnormals_kept):
    """The same ties through the table kernel (rotate-half heads of D = 2:
    out0 = x0 c - x1 s, out1 = x1 c + x0 s, as the interleaved pairs)."""
    x, f, want = build_ties()
    n = x.shape[0]
    even = to_bf16(np.array([w[1] for w in want]))
    q = np.ascontiguousarray(x.reshape(1, 1, n, 2))
    out = poisoned_like(q)
    y = device.rotary_embedding(q, f[:, :1].copy(), f[:, 1:].copy(), np.arange(n)[None], out=out, storage=storage)
    assert y is out
    bad = np.flatnonzero(bits(y).reshape(-1) != bits(even))
    assert not bad.size, (storage, bad[:5])


def test_a_device_without_rgba16ui_storage_images_names_the_storage(monkeypatch):
    """Where rgba16ui cannot be a storage image, texture3d bfloat16 is a
    clear UnsupportedFeatureError naming the format and the way out, before
    any work; buffers and the other dtypes still run."""
    from vkrope.vk import binding

    vk = binding.vk()
    real = vk.vkGetPhysicalDeviceFormatProperties

    def without_rgba16ui(handle, fmt):
        props = real(handle, fmt)
        if fmt == vk.VK_FORMAT_R16G16B16A16_UINT:
            props.optimalTilingFeatures &= ~vk.VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT
        return props

    monkeypatch.setattr(vk, "vkGetPhysicalDeviceFormatProperties", without_rgba16ui)
    x = np.ones((1, 4, 8), BF16)
    f = np.tile(np.float32([1.0, 0.0]), (4, 4))
    with vkrope.Device() as dev:
        with pytest.raises(vkrope.UnsupportedFeatureError, match=r"rgba16ui.*storage='buffer'"):
            dev.apply(x, f, storage="texture3d")
        with pytest.raises(vkrope.UnsupportedFeatureError, match="rgba16ui"):
            dev.asarray(x, storage="texture3d")
        assert np.array_equal(bits(dev.apply(x, f, storage="buffer")), bits(x))
        assert np.array_equal(dev.apply(x.astype(np.float32), f, storage="texture3d"), x.astype(np.float32))


@pytest.mark.parametrize("tables", ["float32", "bfloat16"])
def test_results_are_the_exact_values_rounded_once(device, tables):
    """Against exact rational arithmetic: random bfloat16 bit patterns times
    random float32 (or bfloat16) cos / sin, every result the exact value
    rounded once to nearest-even, nothing rounded twice (float32, then
    bfloat16: 236 of 80,000 with bfloat16 tables before the sum's remainder
    was kept). `python scripts/bf16_exact.py` runs more."""
    assert exact_rotation_check(device.apply, 1500, 21 if tables == "float32" else 22, tables) == 0


def test_a_float32_sum_on_a_midpoint_rounds_by_its_remainder(device):
    """(1.0078125, 2^-20) by (0.75, 2^-10): the exact first output is
    0.755859375 - 2^-30, just below a bfloat16 midpoint; its float32 sum is
    the midpoint itself, which ties to even would round up (0x3F42)."""
    x = words(0x3F81, 0x3580).reshape(1, 1, 2)
    for f in (np.float32([[0.75, 2.0**-10]]), to_bf16(np.array([[0.75, 2.0**-10]]))):
        for storage in STORAGES:
            assert bits(device.apply(x, f, storage=storage))[0, 0, 0] == 0x3F41


@pytest.mark.parametrize("op", ["apply", "rotary_embedding"])
def test_row_blocks_with_tables_wider_than_x(make_device, op):
    """16-bit x with float32 cos / sin staged (no host-memory import) past
    one allocation: a row block whose table rows make its staging larger
    than the allocation is split again, and the call runs (it was a
    ValueError "split the call" for float16 before, and for bfloat16 on its
    float32-table path)."""
    dev = make_device(max_memory_allocation_size=2 << 20, external_memory_host=False)
    rng = np.random.default_rng(23)
    x = rng.standard_normal((2, 1000, 512)).astype(BF16)  # 2 MiB
    theta = rng.uniform(-3, 3, (1000, 256))
    if op == "apply":
        f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(1000, 512).astype(np.float32)  # 2 MiB
        y = dev.apply(x, f)
        check_result(y, x, f)
    else:
        cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
        q = x.reshape(2, 1, 1000, 512)
        y = dev.rotary_embedding(q, cos, sin, np.tile(np.arange(1000), (2, 1)), interleaved=1)
        pairs = np.stack([cos, sin], -1).reshape(1000, 512)
        check_result(y.reshape(2, 1000, 512), x, pairs)


def test_a_loaded_bfloat16_npy_gets_the_right_hint(device, tmp_path):
    """np.load gives '|V2' for a saved bfloat16 array: the TypeError says to
    view it as bfloat16 (astype, the hint for other dtypes, fails on it)."""
    np.save(tmp_path / "x.npy", np.ones((1, 4, 8), BF16))
    loaded = np.load(tmp_path / "x.npy")
    with pytest.raises(TypeError, match=r"x\.view\(vkrope\.bfloat16\)"):
        device.apply(loaded, np.zeros((4, 8), np.float32))
    with pytest.raises(TypeError, match=r"a\.view\(vkrope\.bfloat16\)"):
        device.asarray(loaded)
    assert bits(device.apply(loaded.view(BF16), np.tile(np.float32([1, 0]), (4, 4)))).tolist() == bits(
        np.ones((1, 4, 8), BF16)).tolist()


def test_bfloat16_scalars_in_specs():
    """A base or scale given as a bfloat16 scalar (a model's config read
    with ml_dtypes) is the number it holds, as a float16 scalar is."""
    b = vkrope.bfloat16
    assert vkrope.RopeFreqs(64, base=b(10000), scale=b(2)) == vkrope.RopeFreqs(64, base=9984.0, scale=2.0)
    assert vkrope.AxialFreqs(64, 8, 8, b(10000)) == vkrope.AxialFreqs(64, 8, 8, 9984.0)


@pytest.mark.parametrize("storage", STORAGES)
def test_nan_cos_sin_with_full_payloads_stay_nan(device, storage):
    """float32 cos / sin holding NaNs whose payload fills the low bits
    (0x7FFFFFFF, 0xFFFFFFFF: NVIDIA's arithmetic NaN): rounding such a NaN
    as a number would carry into the sign bit and give -0.0."""
    x = np.ones((1, 4, 4), BF16)
    f = np.array([[0x7FFFFFFF, 0, 0xFFFFFFFF, 0], [0, 0x7FFFFFFF, 0, 0xFFFFFFFF]] * 2, np.uint32).view(np.float32)
    y = bits(device.apply(x, f, storage=storage))
    assert (y & 0x7FC0 == 0x7FC0).all(), [hex(v) for v in y.reshape(-1)]


@pytest.mark.parametrize("tables", ["float32", "bfloat16"])
def test_tiny_inputs_are_rounded_once_too(device, tables, subnormals_kept):
    """Subnormal and tiny x (below 2^-119), whose products would be float32
    subnormals, exact only to 2^-149: scaled by 2^64 in the shader, every
    result (bfloat16 subnormals among them) is the exact value rounded
    once. Where the device flushes float32 subnormals in shaders, subnormal
    inputs and results cannot be held at all: that device's float32 kernel
    shows it, and the test asserts only the normal results there."""
    flushed = device.apply(np.float32([[[1e-40, 0.0]]]), np.float32([[1.0, 0.0]]))[0, 0, 0] == 0
    assert exact_rotation_check(device.apply, 1500, 24 if tables == "float32" else 25, tables, (0, 0x0400),
                                flushed) == 0


@pytest.mark.parametrize("tables", ["float32", "bfloat16"])
def test_tiny_products_of_larger_inputs_are_rounded_once(device, tables):
    """x from 2^-60 up, which the shader scaled by 2^64 only below 2^-60, times tiny cos / sin: products that
    are float32 subnormals (exact only to 2^-149) or below them, beside a product as small or far larger (whose
    rounding then takes the tiny one's sign only). (-3.9e-18, 2.1e-18) by (-6.2e-23, 1.3e-24) gave
    -2 2^-133 where the exact -1.499992 2^-133 rounds to -1 2^-133. No input is subnormal: a device that
    flushes float32 subnormals passes it too, a result below 2^-126 excused as 0 there."""
    flushed = device.apply(np.float32([[[1e-40, 0.0]]]), np.float32([[1.0, 0.0]]))[0, 0, 0] == 0
    # x 2^-60..2^-40 by 2^-100..2^-60 and by 2^-120..1; x 2^64..2^100 (which the scaling would overflow) by
    # 2^-126..2^-100
    for seed, x_bits, cs_bits in ((26, (0x2180, 0x2B80), (0x0D800000, 0x21800000)),
                                  (28, (0x2180, 0x2B80), (0x03800000, 0x3F800000)),
                                  (30, (0x5F80, 0x7180), (0x00800000, 0x0D800000))):
        assert exact_rotation_check(device.apply, 1000, seed + (tables == "bfloat16"), tables, x_bits, flushed,
                                    cs_bits) == 0
    if not flushed:
        x = np.array([[[-3.876022766635678e-18, 2.1412992906588713e-18]]]).astype(BF16)
        f = np.array([[-6.203854594147708e-23, 1.2666203129718236e-24]], np.float32)
        assert bits(device.apply(x, f))[0, 0, 1] == 0x8001  # (-1 2^-133)
        # the second product's top part exactly 2^-150 (it rounds to 0; the whole product to 2^-149): its sign
        # still decides the first result's midpoint
        x = np.array([[[2.0 ** -30, 2.0 ** -100]]]).astype(BF16)
        f = np.array([[2.0 ** -29 * (1 + 3 * 2.0 ** -8), 2.0 ** -50 * (1 + 2.0 ** -20)]], np.float32)
        want = bf16_round_exact(Fraction(2.0 ** -30) * Fraction(float(f[0, 0]))
                                - Fraction(2.0 ** -100) * Fraction(float(f[0, 1])))
        assert float(bf16_values(device.apply(x, f))[0, 0, 0]) == want
    # x from 2^64 by cos / sin below 2^-124 (both products below 2^-60): scaled by 2^64, x overflowed and the
    # float32 formula rounded twice (the reviewer's 4.554e19 by 1.29e-38: 5.8953e-19, not 5.8615e-19)
    for xv, fv in (((4.554e19, 1.546e-11), (1.2908e-38, 2.0417e-21)),
                   ((1.357680363825023e22, -7683964928.0), (-8 * 2.0 ** -149, 60 * 2.0 ** -149))):
        if flushed and min(abs(v) for v in fv) < 2.0 ** -126:
            continue
        x = np.array([[xv]]).astype(BF16)
        f = np.array([fv], np.float32) if tables == "float32" else to_bf16(bf16_round(np.array([fv])))
        a0, a1 = (Fraction(float(v)) for v in bf16_values(x)[0, 0])
        c, s = (Fraction(float(v)) for v in (bf16_values(f)[0] if tables == "bfloat16" else f[0]))
        y = bf16_values(device.apply(x, f))[0, 0]
        assert [float(v) for v in y] == [bf16_round_exact(a0 * c - a1 * s), bf16_round_exact(a0 * s + a1 * c)]


def test_a_subnormal_result_rounds_by_the_exact_value(device):
    """(2^-133, 0) by cos 0.5 + 127 2^-24: the exact 0.50000757 2^-133 is
    just past the midpoint of bfloat16's smallest step: 2^-133, not 0."""
    x = words(0x0001, 0x0000).reshape(1, 1, 2)
    f = np.float32([[0.5 + 127 * 2.0**-24, 0.0]])
    flushed = device.apply(np.float32([[[1e-40, 0.0]]]), np.float32([[1.0, 0.0]]))[0, 0, 0] == 0
    for storage in STORAGES:
        assert bits(device.apply(x, f, storage=storage)).reshape(-1).tolist() == [0 if flushed else 0x0001, 0x0000]


def test_a_subnormal_cos_or_sin_gives_the_exact_values_rounding(device):
    """A float32 subnormal sin makes exact_diff's low part large beside the sum: unrenormalised, the sum was
    16 bfloat16 ulps off the exact value (which is itself a bfloat16 here) and another 1 off (a reviewer's)."""
    from fractions import Fraction

    cases = [(7314866176.0, 140187732541440.0, 1.3685595359392264e-37, 7.141016974199268e-42),
             (-1288.0, -6.93e-35, -1.74e10, -5.12e-42)]
    for a, c, cos, sin in cases:
        x = np.array([[[a, c]]], np.float64).astype(BF16)
        cs = np.array([[cos, sin]], np.float32)
        y = bf16_values(device.apply(x, cs))[0, 0]
        av, cv = bf16_values(x)[0, 0]
        exact = Fraction(float(av)) * Fraction(float(cs[0, 0])) - Fraction(float(cv)) * Fraction(float(cs[0, 1]))
        assert y[0] == bf16_round_exact(exact), (a, c, cos, sin, y[0], float(exact))

"""Test helpers: poisoned outputs, the float64 oracle and the accuracy rules
of the contract.

The oracle shares no code with vkrope, argument handling included: it reads
the README's contract of `vkrope.apply(x, freqs, *, inverse, repeat,
exclude_last, positions)` on its own, so a bug in vkrope's argument
normalisation, its reference or its shaders cannot hide behind it.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
POISON = {np.dtype(np.float32): np.float32(np.nan), np.dtype(np.float16): np.float16(np.nan),
          BF16: np.float32(np.nan).astype(BF16)}


# --- bfloat16, rounded here (not by ml_dtypes, not by vkrope) -------------------
BF16_MAX = float.fromhex("0x1.fep127")  # the largest finite bfloat16, (2 - 2^-7) * 2^127


def bf16_round(v) -> np.ndarray:
    """float64 values rounded once to the nearest bfloat16 (ties to even),
    as float64: 8 significant bits for normal values, multiples of 2^-133
    below 2^-126, infinity from (2 - 2^-8) * 2^127 up; NaN stays NaN."""
    v = np.asarray(v, np.float64)
    out = v.copy()
    fin = np.isfinite(v) & (v != 0)
    _, e = np.frexp(v[fin])  # |v| = m 2^e, 0.5 <= m < 1: the ulp is 2^(e - 8)
    q = np.exp2(np.maximum(e - 8, -133).astype(np.float64))
    r = np.round(v[fin] / q) * q  # numpy rounds halves to even; v / q is exact (a power of two)
    r[np.abs(r) > BF16_MAX] = np.copysign(np.inf, r[np.abs(r) > BF16_MAX])
    out[fin] = r
    return out


def bf16_ulp(v) -> np.ndarray:
    """The spacing of bfloat16 numbers at |v| (bfloat16 values): 2^(e - 7)
    for 2^e <= |v| < 2^(e+1), 2^-133 among subnormals."""
    a = np.abs(np.asarray(v, np.float64))
    _, e = np.frexp(np.where(a > 0, a, 1.0))
    return np.where(a >= 2.0**-126, np.exp2((e - 8).astype(np.float64)), 2.0**-133)


def round_exact(value, bits: int, min_exp: int, largest: float) -> float:
    """An exact rational (fractions.Fraction) rounded to the nearest value of a binary format with `bits`
    significant bits from 2^min_exp (below it, multiples of 2^(min_exp - bits + 1)), ties to even, as a
    float; infinity past `largest`, its largest finite value; a value rounding to zero keeps no sign."""
    from fractions import Fraction

    if value == 0:
        return 0.0
    a = abs(value)
    e = a.numerator.bit_length() - a.denominator.bit_length()  # 2^e <= a < 2^(e+1), after the nudges
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    q = Fraction(2) ** (max(e, min_exp) - bits + 1)
    m = a / q
    whole = m.numerator // m.denominator
    rest = m - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    r = float(whole * q)
    r = float("inf") if r > largest else r
    return -r if value < 0 else r


def bf16_round_exact(value) -> float:
    """An exact rational rounded to the nearest bfloat16 (8 significant bits; infinity past the largest)."""
    return round_exact(value, 8, -126, BF16_MAX)


def half_round_exact(value) -> float:
    """An exact rational rounded to the nearest float16 (11 significant bits from 2^-14, multiples of 2^-24
    below; infinity from 65520, the midpoint above 65504)."""
    return round_exact(value, 11, -14, 65504.0)


def exact_rotation_check(apply, n: int, seed: int, tables: str, x_bits: tuple[int, int] = (0x3000, 0x5000),
                         flushed: bool = False, cs_bits: tuple[int, int] = (0x39800000, 0x3F800000)) -> int:
    """How many of 2n results of `apply(x, freqs, positions=...)` differ from
    the exact rational result rounded once: x random bfloat16 bit patterns
    in `x_bits` (magnitude bits; the default: 2^-31 .. 2^32; (0, 0x0400):
    subnormals and the smallest normals), (cos, sin) random float32 (or
    bfloat16) bit patterns in `cs_bits` (float32 magnitude bits; the default
    [2^-12, 1)), both signs. `flushed`: a device
    that flushes float32 subnormals in shaders may give 0 where an input or
    the exact result is below 2^-126 (the README's Accuracy section)."""
    from fractions import Fraction

    rng = np.random.default_rng(seed)

    def bf_bits(k):
        e = rng.integers(*x_bits, k).astype(np.uint16)
        return (e | (rng.integers(0, 2, k).astype(np.uint16) << 15)).view(BF16)

    x = np.stack([bf_bits(n), bf_bits(n)], -1).reshape(1, n, 2)
    cs = [(rng.integers(*cs_bits, n).astype(np.uint32).view(np.float32)
           * rng.choice(np.float32([-1, 1]), n)) for _ in range(2)]
    f = np.stack(cs, -1)
    if tables == "bfloat16":
        f = to_bf16(bf16_round(f.astype(np.float64)))
    fv = bf16_values(f) if f.dtype == BF16 else f.astype(np.float64)
    y = bf16_values(apply(x, f, positions=np.arange(n)))[0]
    xv = bf16_values(x)[0]
    off = 0
    tiny = Fraction(2) ** -126
    for i in range(n):
        a0, a1, c, s = (Fraction(float(v)) for v in (xv[i, 0], xv[i, 1], fv[i, 0], fv[i, 1]))
        for k, exact in enumerate((a0 * c - a1 * s, a0 * s + a1 * c)):
            if bf16_round_exact(exact) != y[i, k]:
                excused = flushed and y[i, k] == 0 and (abs(exact) < tiny or 0 < abs(a0) < tiny or 0 < abs(a1) < tiny)
                off += not excused
    return int(off)


def to_bf16(v) -> np.ndarray:
    """float64 values that are bfloat16 numbers, as a bfloat16 array (the
    high halves of their float32 bits: no rounding happens)."""
    v32 = np.asarray(v, np.float64).astype(np.float32)
    bits = v32.view(np.uint32)
    assert not (bits[np.isfinite(v32)] & 0xFFFF).any(), "not bfloat16 values"
    return (bits >> 16).astype(np.uint16).view(BF16)


def bf16_values(a) -> np.ndarray:
    """A bfloat16 array as exact float64 values (its words in the high half of a float32)."""
    w = np.asarray(a).view(np.uint16).astype(np.uint32) << 16
    with np.errstate(invalid="ignore"):  # a signalling NaN widens to a quiet one
        return w.view(np.float32).astype(np.float64)


def poisoned_like(x) -> np.ndarray:
    """An output array of x's shape and dtype full of NaN, so unwritten
    elements show."""
    out = np.empty(x.shape, x.dtype, order="C")
    out.fill(POISON[out.dtype])
    return out


def aligned_copy(x, align=4096):
    """A C-contiguous copy of x whose data starts on an `align` boundary
    (importable on any device, whatever numpy's allocator returns)."""
    raw = np.empty(x.nbytes + align, np.uint8)
    start = -raw.ctypes.data % align
    out = raw[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    out[...] = x
    return out


# --- the oracle ---------------------------------------------------------------
def freqs_cos_sin(freqs, c: int) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) as float64 [Nf, C/2] from any freqs form of the contract:
    real float16/32/64 with Nf * C values in any shape ((cos, sin) pairs
    interleaved in the logical C order of the values), or complex64/128 with
    Nf * C/2 values. Values are taken as given (float64 freqs exactly)."""
    f = np.asarray(freqs)
    half = c // 2
    if f.dtype.kind == "c":
        flat = f.astype(np.complex128).ravel(order="C")
        assert flat.size % half == 0, f"{flat.size} complex freqs values are not whole rows of C/2 = {half}"
        rows = flat.reshape(flat.size // half, half)
        return rows.real.copy(), rows.imag.copy()
    assert f.dtype in (np.float16, np.float32, np.float64, BF16), f.dtype
    flat = (bf16_values(f) if f.dtype == BF16 else f.astype(np.float64)).ravel(order="C")
    assert flat.size % c == 0, f"{flat.size} real freqs values are not whole rows of C = {c}"
    rows = flat.reshape(flat.size // c, half, 2)
    return rows[..., 0].copy(), rows[..., 1].copy()


def token_rows(n: int, nf: int, *, repeat=1, exclude_last=0, positions=None) -> list[int]:
    """The freqs row each of the N tokens uses, -1 = passes through unchanged."""
    if positions is not None:
        assert repeat == 1 and exclude_last == 0, "positions is not combined with repeat / exclude_last"
        rows = [int(p) for p in np.asarray(positions).reshape(-1)]
        assert len(rows) == n and all(-1 <= r < nf for r in rows), (rows, nf)
        return rows
    # (SAM2's apply_rotary_enc: every key excluded, "due to dropout", rotates none, whatever the rows)
    assert n - exclude_last in (0, repeat * nf), f"N - exclude_last = {n - exclude_last} != repeat * Nf = {repeat * nf}"
    return [t % nf if t < n - exclude_last else -1 for t in range(n)]


def token_cos_sin(x, freqs, *, inverse=False, repeat=1, exclude_last=0, positions=None):
    """Each token's (cos, sin) float64 [N, C/2] (inverse applied) and the
    rotated-token mask [N]; pass-through tokens get (1, 0)."""
    n, c = x.shape[-2], x.shape[-1]
    half = c // 2
    cos = np.ones((n, half))
    sin = np.zeros((n, half))
    rotated = np.zeros(n, bool)
    if half == 0:
        return cos, sin, rotated
    fc, fs = freqs_cos_sin(freqs, c)
    for t, r in enumerate(token_rows(n, fc.shape[0], repeat=repeat, exclude_last=exclude_last, positions=positions)):
        if r >= 0:
            cos[t], sin[t], rotated[t] = fc[r], -fs[r] if inverse else fs[r], True
    return cos, sin, rotated


def oracle(x, freqs, **kw) -> np.ndarray:
    """The exact float64 result of `vkrope.apply(x, freqs, **kw)` (keywords:
    inverse, repeat, exclude_last, positions): pair (re, im) of token n
    becomes (re*c - im*s, re*s + im*c) with (c, s) of its row, any leading
    axes, any memory layout; pass-through tokens are copied unchanged."""
    x64 = np.array(x, dtype=np.float64)  # logical order, whatever the layout
    cos, sin, rotated = token_cos_sin(x, freqs, **kw)
    if x64.size == 0 or not rotated.any():
        return x64
    pairs = x64.reshape(x64.shape[:-1] + (x64.shape[-1] // 2, 2))
    re, im = pairs[..., 0], pairs[..., 1]
    out = np.empty_like(pairs)
    with np.errstate(all="ignore"):  # NaN / Inf follow the formula
        out[..., 0] = re * cos - im * sin
        out[..., 1] = re * sin + im * cos
    out[..., ~rotated, :, :] = pairs[..., ~rotated, :, :]
    return out.reshape(x64.shape)


def oracle_scale(x, freqs, **kw) -> np.ndarray:
    """Per-element scale |re|*|c| + |im|*|s| (and |re|*|s| + |im|*|c|), the
    magnitude rounding errors are measured against."""
    cos, sin, _ = token_cos_sin(x, freqs, **kw)
    x64 = np.abs(np.array(x, dtype=np.float64))
    re, im = x64[..., 0::2], x64[..., 1::2]
    c, s = np.abs(cos), np.abs(sin)
    out = np.empty_like(x64)
    with np.errstate(all="ignore"):
        out[..., 0::2] = re * c + im * s
        out[..., 1::2] = re * s + im * c
    return out


# --- the older complex formulation (SAM2's x.view(complex) * freqs) ---------------
def full_freqs(x, freqs, *, inverse=False, repeat=1, exclude_last=0, positions=None) -> np.ndarray:
    """Each token's complex factor [N, C/2] (1 for pass-through tokens), built
    with numpy indexing the way SAM2 materialises repeat / exclusion."""
    n, c = x.shape[-2], x.shape[-1]
    if np.iscomplexobj(freqs):
        fc = np.asarray(freqs, dtype=np.complex128).reshape(-1, c // 2)
    else:
        fc = np.ascontiguousarray(np.asarray(freqs, dtype=np.float64)).reshape(-1, c).view(np.complex128)
    if inverse:
        fc = np.conj(fc)
    if positions is None:
        idx = np.tile(np.arange(fc.shape[0]), repeat)
        return np.concatenate([fc[idx], np.ones((exclude_last, c // 2), np.complex128)]).reshape(n, c // 2)
    positions = np.asarray(positions)
    picked = fc[np.maximum(positions, 0)] if fc.shape[0] else np.ones((n, c // 2), np.complex128)
    return np.where((positions >= 0)[:, None], picked, 1)


def complex_oracle(x, freqs, **kw) -> np.ndarray:
    """The operator as SAM2 writes it, in complex128: x.view(complex) * freqs.
    Independent of vkrope; finite inputs only (complex products of Inf differ
    from the pairwise formula)."""
    x64 = np.ascontiguousarray(np.asarray(x, dtype=np.float64))
    out = x64.view(np.complex128) * full_freqs(x, freqs, **kw)
    return out.view(np.float64).reshape(x64.shape)


# --- the accuracy rules -------------------------------------------------------
def check_close(y: np.ndarray, ref: np.ndarray, scale: np.ndarray, x_dtype, freqs_half: bool) -> None:
    """The contract's accuracy rules.

    float32: |y - ref| < 1e-5 * scale (relative error per element scale).
    float16: within one float16 ulp of ref rounded to float16; with float32
    freqs the products are inexact in float32, so where the two products
    cancel the bound is 2**-22 * scale (documented in the README).
    Non-finite references must be matched exactly (NaN for NaN).
    """
    y = np.asarray(y)
    assert y.shape == ref.shape, (y.shape, ref.shape)
    assert y.dtype == np.dtype(x_dtype), (y.dtype, x_dtype)
    bf16 = np.dtype(x_dtype) == BF16
    y64 = bf16_values(y) if bf16 else y.astype(np.float64)
    with np.errstate(over="ignore"):
        ref_r = bf16_round(ref) if bf16 else ref.astype(x_dtype)
    finite = np.isfinite(ref_r)
    bad_nf = ~finite & ~((np.isnan(ref_r) & np.isnan(y64)) | (ref_r == y64))
    assert not bad_nf.any(), f"non-finite mismatch at {np.argwhere(bad_nf)[:5].tolist()}"
    assert np.isfinite(y64[finite]).all(), (
        f"unexpected NaN/Inf (unwritten element?) at {np.argwhere(finite & ~np.isfinite(y64))[:5].tolist()}"
    )
    err = np.abs(y64[finite] - ref[finite])
    sc = scale[finite]
    if np.dtype(x_dtype) == np.float32:
        tol = 1e-5 * sc + 1e-30
    elif bf16:
        # one rounding to bfloat16 (half an ulp) after float32 arithmetic
        # (products exact with bfloat16 tables, then one float32 rounding)
        tol = 0.5 * bf16_ulp(ref[finite]) + 2.0**-22 * sc  # (the ulp at the exact value: below 2^k, not 2^k's)
    else:
        ulp = np.spacing(np.abs(ref_r[finite])).astype(np.float64)
        tol = ulp if freqs_half else np.maximum(ulp, 2.0**-22 * sc)
    worst = np.argmax(err - tol) if err.size else 0
    assert (err <= tol).all(), (
        f"{int((err > tol).sum())} elements off; worst at {np.argwhere(finite)[worst].tolist()}: "
        f"error {err[worst]:.3g} > tolerance {tol[worst]:.3g} (got {y64[finite][worst]!r}, "
        f"oracle {ref[finite][worst]!r})"
    )


def check_result(y, x, freqs, **kw) -> np.ndarray:
    """Check a result (numpy, or anything with .get() such as a DeviceArray)
    of rotating x by freqs with keywords `kw` (inverse, repeat,
    exclude_last, positions) against the oracle; returns it as numpy."""
    if not isinstance(y, np.ndarray):
        y = y.get()
    ref = oracle(x, freqs, **kw)
    freqs_half = np.asarray(freqs).dtype == np.float16
    check_close(y, ref, oracle_scale(x, freqs, **kw), np.asarray(x).dtype, freqs_half)
    return y


def check_apply(apply, x, freqs, **kw) -> np.ndarray:
    """Run `apply(x, freqs, out=<poisoned>, **kw)` and check it against the
    float64 oracle under the contract's accuracy rules; returns the result."""
    out = poisoned_like(x)
    y = apply(x, freqs, out=out, **kw)
    assert y is out
    assert y.dtype == x.dtype and y.shape == x.shape
    kw.pop("storage", None)
    return check_result(y, x, freqs, **kw)

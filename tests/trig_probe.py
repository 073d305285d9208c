"""Runs glsl/trig_probe.glsl (the cos / sin functions of glsl/trig.glsl)
through the runtime, and the float64 references it is held to.

    python tests/trig_probe.py [--million N] [--rounds R]   # kernel ms per million evaluations, per mode
    python tests/trig_probe.py --sweep-short                # cos_sin_short on every float32 in [0, 8192]

Host side of the exact mode: `freq_quarter_turns(f)` is what
`cos_sin_exact(position, freq_q)` takes, round(f * 2/pi * 2^94) mod 2^96, from
exact integer arithmetic (pi by Machin's formula, not from glsl/trig.glsl).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import vkrope  # noqa: E402
from vkrope.runtime.steps import WRITE, Launch, arg  # noqa: E402
from vkrope.vk.resources import Buffer  # noqa: E402

KERNEL = "trig_probe"
COPY, ANGLE, EXACT, EXACT_HILO, BUILTIN, TABLE, SHORT = range(7)
SHORT_LIMIT = 8192.0  # cos_sin_short's range
WORKGROUP = 64
ROW_GROUPS = 1024  # workgroups per grid row (maxComputeWorkGroupCount[0] is at least 65535)


# --- exact constants ----------------------------------------------------------
def _atan_inv(x: int, one: int) -> int:
    """atan(1/x) * one, truncated series (error a few units)."""
    total = term = one // x
    n, sign = 1, -1
    while term:
        term //= x * x
        total += sign * (term // (2 * n + 1))
        sign, n = -sign, n + 1
    return total


def two_over_pi_bits(bits: int) -> int:
    """floor(2/pi * 2^bits), from pi = 16 atan(1/5) - 4 atan(1/239) with 64 guard bits."""
    k = bits + 64
    one = 1 << k
    pi = 16 * _atan_inv(5, one) - 4 * _atan_inv(239, one)
    return ((2 << k) * one // pi) >> (k - bits)


def pi_bits(bits: int) -> int:
    """floor(pi * 2^bits) (64 guard bits)."""
    k = bits + 64
    one = 1 << k
    return (16 * _atan_inv(5, one) - 4 * _atan_inv(239, one)) >> 64


_TWO_OVER_PI = two_over_pi_bits(512)


def pi_over_2_parts() -> tuple[float, float, float]:
    """pi/2 = P1 + P2 + P3 (error below 2^-150), P1 and P2 with 26 significant
    bits each, so that k * P1 and k * P2 are exact in float64 for k < 2^27."""
    h = pi_bits(201)  # floor(pi/2 * 2^202), 203 bits
    return (math.ldexp(h >> 177, -25), math.ldexp((h >> 151) & ((1 << 26) - 1), -51),
            math.ldexp(float(h & ((1 << 151) - 1)), -202))


def freq_quarter_turns(freqs: np.ndarray) -> np.ndarray:
    """uint32 [n, 4]: round(f * 2/pi * 2^94) mod 2^96 as three words, most
    significant first (the fourth unused), for each float64 f."""
    out = np.zeros((len(freqs), 4), np.uint32)
    for i, f in enumerate(np.asarray(freqs, np.float64)):
        num, den = float(f).as_integer_ratio()  # f = num / den, den a power of two
        shift = 512 - 94 + den.bit_length() - 1  # f * C / 2^shift = f * 2/pi * 2^94
        q = (num * _TWO_OVER_PI + (1 << (shift - 1))) >> shift if shift > 0 else (num * _TWO_OVER_PI) << -shift
        q %= 1 << 96
        out[i, :3] = [(q >> 64) & 0xFFFFFFFF, (q >> 32) & 0xFFFFFFFF, q & 0xFFFFFFFF]
    return out


def freq_hilo(freqs: np.ndarray) -> np.ndarray:
    """float32 [n, 2]: (hi, lo) with hi = float32(f), lo = float32(f - hi)."""
    f = np.asarray(freqs, np.float64)
    hi = f.astype(np.float32)
    return np.stack([hi, (f - hi.astype(np.float64)).astype(np.float32)], 1)


def llama_freqs(base: float, dim: int = 128) -> np.ndarray:
    """Llama's inverse frequencies 1 / base^(2i/dim), i < dim/2, in float64."""
    return 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)


# --- references -----------------------------------------------------------------
def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp: x = hi + lo, each with at most 26 significant bits."""
    c = 134217729.0 * x
    hi = c - (c - x)
    return hi, x - hi


def exact_product(positions: np.ndarray, freqs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """position * f for every (position, f), positions integers below 2^27:
    the exact product as an unevaluated float64 pair (s, e), s = fl(s + e)."""
    p = np.asarray(positions, np.float64)[:, None]
    fh, fl = _split(np.asarray(freqs, np.float64))
    a, b = p * fh, p * fl  # exact: 27 + 26 bits each
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)  # Knuth's two-sum


def cos_sin_of_pair(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin) of s + e, |e| <= ulp(s), to first order in e (|e| <= 2^-29
    for s < 2^24: the e^2 / 2 left out is below 2^-59)."""
    c, sn = np.cos(s), np.sin(s)
    return c - sn * e, sn + c * e


def ulp_error(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in float32 ulps of the true value ref (float64): the
    spacing of float32(|ref|), 2^-149 at the bottom. NaN where got is NaN."""
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref) / ulp


# --- running the kernel -------------------------------------------------------------
def _buffer(dev: vkrope.Device, data: np.ndarray | None, nbytes: int = 0) -> Buffer:
    nbytes = max(16, nbytes, 0 if data is None else data.nbytes)
    buf = Buffer(dev._rt.ctx, -(-nbytes // 16) * 16, host_visible=True)
    if data is not None:
        buf.view(np.uint8, data.nbytes)[:] = np.ascontiguousarray(data).view(np.uint8).ravel()
    return buf


def run(dev: vkrope.Device, mode: int, angles: np.ndarray | None = None, positions: np.ndarray | None = None,
        freqs: np.ndarray | None = None, timed: bool = False, repeat: int = 1) -> tuple[np.ndarray, float | None]:
    """out [count, 2] float32 of the probe in `mode`, and the kernel seconds
    (the least of `repeat` timed submissions) when `timed`. ANGLE / SHORT /
    COPY / BUILTIN take float32 `angles` (TABLE: a float32 [count, 2] table);
    EXACT / EXACT_HILO take uint32 `positions` and float64 `freqs` (a power
    of two of them), and evaluate every (position, freq), freqs fastest."""
    rt = dev._rt
    if mode in (EXACT, EXACT_HILO):
        positions = np.ascontiguousarray(positions, np.uint32)
        freq_bits = len(freqs).bit_length() - 1
        if len(freqs) != 1 << freq_bits:
            raise ValueError(f"the probe takes a power of two of frequencies, not {len(freqs)}")
        count = len(positions) * len(freqs)
        q = freq_quarter_turns(freqs) if mode == EXACT else None
        hl = freq_hilo(freqs) if mode == EXACT_HILO else None
    else:
        angles = np.ascontiguousarray(angles, np.float32)
        count, freq_bits, q, hl = (angles.size // 2 if mode == TABLE else angles.size), 0, None, None
    bufs = [_buffer(dev, None, 8 * count), _buffer(dev, angles), _buffer(dev, positions), _buffer(dev, q),
            _buffer(dev, hl)]
    try:
        stride = WORKGROUP * min(ROW_GROUPS, max(1, -(-count // WORKGROUP)))
        launch = Launch(
            kernel=KERNEL, spec=(("local_size_x", WORKGROUP), ("local_size_y", 1), ("MODE", mode)),
            push=(("count", count), ("row_stride", stride), ("freq_bits", freq_bits)),
            args=(arg(bufs[0], 0, 8 * count, WRITE),) + tuple(arg(b) for b in bufs[1:]),
            grid=(stride // WORKGROUP, max(1, -(-count // stride)), 1),
        )
        seconds = None
        for _ in range(repeat):
            t = rt.submit((launch,), timed=timed, cache=False)
            seconds = t if seconds is None or (t is not None and t < seconds) else seconds
        out = bufs[0].view(np.float32, 2 * count).reshape(count, 2).copy()
    finally:
        rt.drain()
        for b in bufs:
            rt.ctx.release(b)
    return out, seconds


def sweep_short(chunk: int = 1 << 24) -> float:
    """Every float32 in [0, 8192] (all 1.17e9 bit patterns) through
    cos_sin_short, against float64 cos / sin; prints and returns the largest
    error in ulp. (Negative angles take the same path with the sign of sin
    flipped on its bits.) About a minute on lavapipe and 2 cores."""
    dev = vkrope.Device(validation=False)
    top = int(np.float32(SHORT_LIMIT).view(np.uint32)) + 1
    worst, where = 0.0, 0.0
    try:
        for start in range(0, top, chunk):
            a = np.arange(start, min(top, start + chunk), dtype=np.uint32).view(np.float32)
            out, _ = run(dev, SHORT, angles=a)
            a64 = a.astype(np.float64)
            for col, ref in ((0, np.cos(a64)), (1, np.sin(a64))):
                err = ulp_error(out[:, col], ref)
                i = int(np.argmax(err))
                if err[i] > worst:
                    worst, where = float(err[i]), float(a[i])
    finally:
        dev.close()
    print(f"cos_sin_short on all {top} float32 in [0, {SHORT_LIMIT:g}]: max error {worst:.3f} ulp (at {where!r})")
    return worst


def main() -> None:
    """Kernel time per million evaluations of each mode on the default device
    (modes interleaved round after round, each the least of 3 calls on the
    same buffers; the least and the median over rounds kept)."""
    import argparse
    import statistics

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--million", type=int, default=8, help="evaluations per call, in Mi (default 8)")
    parser.add_argument("--rounds", type=int, default=9, help="timed calls per mode (default 9)")
    parser.add_argument("--sweep-short", action="store_true",
                        help="check cos_sin_short on every float32 in [0, 8192] against float64 instead")
    args = parser.parse_args()
    if args.sweep_short:
        sweep_short()
        return
    n = args.million << 20
    dev = vkrope.Device(validation=False)
    rng = np.random.default_rng(0)
    angles = rng.uniform(-(2.0**20), 2.0**20, n).astype(np.float32)
    short = rng.uniform(-SHORT_LIMIT, SHORT_LIMIT, n).astype(np.float32)
    freqs = llama_freqs(500000.0)
    positions = np.arange(n // len(freqs), dtype=np.uint32)
    cases = [("copy (float in, vec2 out)", COPY, dict(angles=angles)),
             ("table read (vec2 in, vec2 out)", TABLE, dict(angles=np.repeat(angles, 2))),
             ("cos_sin(float)", ANGLE, dict(angles=angles)),
             ("cos_sin_short(float), |a| <= 8192", SHORT, dict(angles=short)),
             ("cos_sin_exact(position, freq_q)", EXACT, dict(positions=positions, freqs=freqs)),
             ("cos_sin_exact_hilo(position, hilo)", EXACT_HILO, dict(positions=positions, freqs=freqs)),
             ("built-in cos(), sin()", BUILTIN, dict(angles=angles))]
    times: dict[str, list[float]] = {name: [] for name, _, _ in cases}
    for _ in range(args.rounds):
        for name, mode, kw in cases:
            _, s = run(dev, mode, timed=True, repeat=3, **kw)  # the first call also faults the pages in
            if s is not None:
                times[name].append(s * 1e3 / (n / 1e6))
    print(f"{dev.name}: {n / 2**20:.0f} Mi evaluations per call, {args.rounds} rounds; ms per million evaluations")
    for name, ts in times.items():
        print(f"  {name:<36} least {min(ts):7.3f}  median {statistics.median(ts):7.3f}" if ts else
              f"  {name}: no timestamps")
    dev.close()


if __name__ == "__main__":
    main()

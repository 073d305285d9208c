"""glsl/trig.glsl on the device: cos_sin, cos_sin_exact and cos_sin_exact_hilo
against float64, through glsl/trig_probe.glsl (tests/trig_probe.py).

Error rule: |got - ref| / ulp, ulp = the spacing of float32(|ref|) (the float32
ulp of the true value; 2^-149 for denormal results), no absolute floor:
results near zero (tiny angles, angles next to multiples of pi/2) are held
to the same relative bound. Bound: 2 ulp. `pytest -s` prints the largest
error of each sweep.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import trig_probe as tp

ROOT = Path(__file__).resolve().parents[2]
BOUND = 2.0
# cos_sin_short is held to 1 ulp here, tighter than its 2-ulp contract: every
# float32 in [0, 8192] measured within 0.809 (trig_probe.py --sweep-short),
# so a lost error term (still within 2 ulp) shows up as a failure.
SHORT_BOUND = 1.0


def check_angles(device, angles: np.ndarray, what: str, mode: int = tp.ANGLE) -> float:
    """Run cos_sin (or cos_sin_short, mode=tp.SHORT) over float32 `angles`
    and assert both outputs within BOUND ulp of float64."""
    angles = np.asarray(angles, np.float32)
    out, _ = tp.run(device, mode, angles=angles)
    a = angles.astype(np.float64)
    bound = SHORT_BOUND if mode == tp.SHORT else BOUND
    worst = 0.0
    for col, ref in ((0, np.cos(a)), (1, np.sin(a))):
        err = tp.ulp_error(out[:, col], ref)
        i = int(np.argmax(err))
        worst = max(worst, float(err[i]))
        assert err[i] <= bound, (f"{what}: {'cos sin'.split()[col]}({angles[i]!r}) = {out[i, col]!r}, "
                                 f"float64 {ref[i]!r}: {err[i]:.2f} ulp")
    print(f"\ntrig {what}: {angles.size} angles, max {worst:.3f} ulp")
    return worst


def test_two_over_pi_table_is_2_over_pi():
    """The 256 bits of 2/pi in trig.glsl are floor(2/pi * 2^256), from an independent pi."""
    src = (ROOT / "glsl" / "trig.glsl").read_text()
    body = re.search(r"TRIG_TWO_OVER_PI\[8\] = uint\[8\]\((.*?)\);", src, re.S).group(1)
    words = [int(w.rstrip("u"), 16) for w in re.findall(r"0x[0-9A-Fa-f]+u", body)]
    assert sum(w << (32 * (7 - i)) for i, w in enumerate(words)) == tp.two_over_pi_bits(256)


def test_dense_sweep_up_to_1024(device):
    """4 Mi float32 evenly spaced in bit pattern over [0, 1024] (every binade
    from denormals up), and the 1 Mi float32 around pi/4, where the direct
    path hands over to the reduction."""
    top = int(np.float32(1024).view(np.uint32))
    strided = np.linspace(0, top, 4 << 20).astype(np.uint32)
    pio4 = int(np.float32(np.pi / 4).view(np.uint32))
    around = np.arange(pio4 - (1 << 19), pio4 + (1 << 19), dtype=np.uint32)
    check_angles(device, np.concatenate([strided, around]).view(np.float32), "dense [0, 1024]")


def test_random_angles_up_to_2_25_both_signs(device):
    rng = np.random.default_rng(1)
    uniform = rng.uniform(-(2.0**25), 2.0**25, 1 << 20)
    logs = rng.choice([-1.0, 1.0], 1 << 20) * 2.0 ** rng.uniform(-30, 25, 1 << 20)
    check_angles(device, np.concatenate([uniform, logs]).astype(np.float32), "random |a| <= 2^25")


def test_random_finite_floats(device):
    """Past 2^25 too: random bit patterns of every finite float32, both signs
    (the reduction takes other words of 2/pi there)."""
    bits = np.random.default_rng(4).integers(0, 0xFF000000, 1 << 19, dtype=np.uint32)
    bits = (bits % 0x7F800000) | (bits & 0x80000000)
    check_angles(device, bits.view(np.float32), "random finite float32")


def hard_angles(limit: float = 2.0**25, worst: int = 4096) -> np.ndarray:
    """The `worst` float32 nearest to multiples k pi/2 (k < limit / (pi/2)),
    by their distance |a - k pi/2| (computed exactly enough: pi/2 in three
    parts, k P1 and k P2 exact), with their two neighbours."""
    p1, p2, p3 = tp.pi_over_2_parts()
    kmax = int(limit / (np.pi / 2)) + 1
    best_a, best_d = np.zeros(0, np.float32), np.zeros(0)
    for start in range(1, kmax + 1, 1 << 21):
        k = np.arange(start, min(kmax + 1, start + (1 << 21)), dtype=np.float64)
        a = (k * p1 + k * p2).astype(np.float32)
        d = np.abs(((a.astype(np.float64) - k * p1) - k * p2) - k * p3)
        keep = np.argpartition(d, worst)[:worst]
        best_a, best_d = np.concatenate([best_a, a[keep]]), np.concatenate([best_d, d[keep]])
        order = np.argsort(best_d)[:worst]
        best_a, best_d = best_a[order], best_d[order]
    print(f"\ntrig hard cases: closest float32 to a multiple of pi/2 below {limit:g} is {best_d[0]:.3g} away "
          f"({np.log2(best_d[0]):.1f} in log2), the {worst}th {best_d[-1]:.3g}")
    return np.concatenate([best_a, np.nextafter(best_a, np.float32(np.inf)), np.nextafter(best_a, np.float32(0))])


def test_hard_cases_of_range_reduction(device):
    a = hard_angles()
    check_angles(device, np.concatenate([a, -a]), "hard cases (near k pi/2, both signs)")


def hard_angles_per_binade(worst: int = 4) -> np.ndarray:
    """The `worst` float32 nearest to multiples of pi/2 in each binade from
    2^25 up: a = m 2^e, the fraction of a * 2/pi is m times a 64-bit window
    of 2/pi, modulo 2^64 (uint64 arithmetic wraps), error below 2^-40."""
    two_over_pi = tp.two_over_pi_bits(400)
    m = np.arange(1 << 23, 1 << 24, dtype=np.uint64)
    f, g = np.empty_like(m), np.empty_like(m)
    out, closest = [], (1.0, 0.0)
    for e in range(2, 105):
        np.multiply(m, np.uint64((two_over_pi >> (400 - 64 - e)) & ((1 << 64) - 1)), out=f)
        np.minimum(f, np.negative(f, out=g), out=f)  # distance to the nearest integer, in 2^-64 quarter turns
        near, bound = np.zeros(0, np.int64), 45
        while len(near) < worst:  # some 32 of the 2^23 at first (a partition of all of them is slow)
            near, bound = np.flatnonzero(f < np.uint64(1 << bound)), bound + 4
        keep = near[np.argsort(f[near])[:worst]]
        out.append(np.ldexp(m[keep].astype(np.float64), e))
        closest = min(closest, (float(f[keep].min()) * 2.0**-64 * np.pi / 2, float(out[-1][np.argmin(f[keep])])))
    print(f"\ntrig hard cases: the float32 closest to a multiple of pi/2 is {closest[1]:.8g}, "
          f"{closest[0]:.3g} away ({np.log2(closest[0]):.1f} in log2)")
    a = np.concatenate(out).astype(np.float32)
    return np.concatenate([a, np.nextafter(a, np.float32(np.inf)), np.nextafter(a, np.float32(0))])


def test_hard_cases_of_range_reduction_in_every_binade(device):
    a = hard_angles_per_binade()
    check_angles(device, np.concatenate([a, -a]), "hard cases per binade 2^25 .. 2^128 (both signs)")


def test_special_values(device):
    # denormals and the smallest normals
    tiny = np.array([1, 2, 3, 0x7FFFFF, 0x400000, 0x800000, 0x800001], np.uint32).view(np.float32)
    edge = np.float32(2.0**-12)
    finite = np.concatenate([[0.0, np.finfo(np.float32).max, np.float32(2.0**25), np.float32(2.0**24)], tiny,
                             [np.nextafter(edge, np.float32(0)), edge, np.nextafter(edge, np.float32(1))]])
    finite = np.concatenate([finite, -finite]).astype(np.float32)
    check_angles(device, finite, "special finite values")
    out, _ = tp.run(device, tp.ANGLE, angles=np.array([0.0, -0.0, 1e-45, -1e-45], np.float32))
    assert np.array_equal(out.view(np.uint32), np.array([[1.0, 0.0], [1.0, -0.0], [1.0, 1e-45], [1.0, -1e-45]],
                                                        np.float32).view(np.uint32))  # sign of zero, denormals
    nans = np.array([0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF], np.uint32)
    out, _ = tp.run(device, tp.ANGLE, angles=nans.view(np.float32))
    assert np.isnan(out).all()


# --- cos_sin_short: |a| <= 8192 (AxialFreqs grids) ------------------------------------
def test_short_dense_sweep_and_around_pi_over_4(device):
    """4 Mi float32 evenly spaced in bit pattern over [0, 8192] (every binade
    from denormals up) and the 1 Mi around pi/4, both signs of a sample.
    (tests/trig_probe.py --sweep-short checks every float32 in [0, 8192].)"""
    top = int(np.float32(tp.SHORT_LIMIT).view(np.uint32))
    strided = np.linspace(0, top, 4 << 20).astype(np.uint32)
    pio4 = int(np.float32(np.pi / 4).view(np.uint32))
    around = np.arange(pio4 - (1 << 19), pio4 + (1 << 19), dtype=np.uint32)
    a = np.concatenate([strided, around]).view(np.float32)
    check_angles(device, np.concatenate([a, -a[::7]]), "short: dense [0, 8192]", tp.SHORT)


def test_the_lowering_picks_the_short_reduction_only_within_the_range_proven_here():
    """vkrope's lowering sends a spec to cos_sin_short when its angles stay within a limit of its own
    (ops/lowering.py): that limit must not pass the range these sweeps prove (the shader's reduction is wrong
    beyond it, silently)."""
    from vkrope.ops import lowering  # noqa: PLC0415

    assert 0 < lowering.SHORT_ANGLE_LIMIT <= tp.SHORT_LIMIT


def test_short_random_and_hard_cases(device):
    """Uniform angles over [-8192, 8192], and the 4096 float32 nearest to
    multiples of pi/2 below 8192 (252.898..., 2^-27.8 away, the nearest)
    with their neighbours, both signs."""
    rng = np.random.default_rng(6)
    uniform = rng.uniform(-tp.SHORT_LIMIT, tp.SHORT_LIMIT, 1 << 20)
    hard = hard_angles(limit=tp.SHORT_LIMIT)
    hard = hard[np.abs(hard) <= tp.SHORT_LIMIT]
    check_angles(device, np.concatenate([uniform, hard, -hard]).astype(np.float32), "short: random and hard cases",
                 tp.SHORT)


def test_short_special_values(device):
    tiny = np.array([1, 2, 3, 0x7FFFFF, 0x400000, 0x800000, 0x800001], np.uint32).view(np.float32)
    edge = np.float32(2.0**-12)
    finite = np.concatenate([[0.0, tp.SHORT_LIMIT, np.nextafter(np.float32(tp.SHORT_LIMIT), np.float32(0))], tiny,
                             [np.nextafter(edge, np.float32(0)), edge, np.nextafter(edge, np.float32(1))]])
    check_angles(device, np.concatenate([finite, -finite]).astype(np.float32), "short: special values", tp.SHORT)
    out, _ = tp.run(device, tp.SHORT, angles=np.array([0.0, -0.0, 1e-45, -1e-45], np.float32))
    assert np.array_equal(out.view(np.uint32), np.array([[1.0, 0.0], [1.0, -0.0], [1.0, 1e-45], [1.0, -1e-45]],
                                                        np.float32).view(np.uint32))


LLAMA = np.concatenate([tp.llama_freqs(10000.0), tp.llama_freqs(500000.0)])


def exact_positions() -> np.ndarray:
    rng = np.random.default_rng(2)
    return np.concatenate([np.arange(1 << 16), rng.integers(1 << 16, 1 << 24, 1 << 15),
                           [(1 << 24) - 1, 1 << 24]]).astype(np.uint32)


def test_exact_mode_llama_frequencies(device):
    """cos_sin_exact(position, freq_q) at every position < 2^16 and random
    ones up to 2^24, Llama's 2 x 64 inverse frequencies (float64), against
    cos / sin of the exact product position * f."""
    pos = exact_positions()
    out, _ = tp.run(device, tp.EXACT, positions=pos, freqs=LLAMA)
    c, s = tp.cos_sin_of_pair(*tp.exact_product(pos, LLAMA))
    worst = 0.0
    for col, ref in ((0, c.ravel()), (1, s.ravel())):
        err = tp.ulp_error(out[:, col], ref)
        i = int(np.argmax(err))
        worst = max(worst, float(err[i]))
        assert err[i] <= BOUND, (f"{'cos sin'.split()[col]}({pos[i // len(LLAMA)]} * {LLAMA[i % len(LLAMA)]!r}) "
                                 f"= {out[i, col]!r}, exact {ref[i]!r}: {err[i]:.2f} ulp")
    # numpy's own cos(position * f) rounds the product to float64 first (up
    # to 2^-29 rad at 2^24): only that much apart, in absolute terms.
    naive = np.cos(pos.astype(np.float64)[:, None] * LLAMA).ravel()
    err_naive = tp.ulp_error(out[:, 0], naive)
    assert np.abs(out[:, 0] - naive).max() <= 2.0**-24
    print(f"\ntrig exact mode: {out.shape[0]} (position, freq), max {worst:.3f} ulp of the exact product's "
          f"cos / sin; against np.cos(position * f) max {err_naive.max():.1f} ulp, "
          f"{(err_naive > BOUND).mean():.2e} over {BOUND}")


def test_exact_mode_near_zeros(device):
    """Positions p that bring p * f closest to a multiple of pi/2 (tiny cos
    or sin): for f = 1 over all p < 2^24, for the other Llama frequencies
    over 2^16 random multiples each; the 4096 worst with neighbours p +- 1."""
    p1, p2, p3 = tp.pi_over_2_parts()
    rng = np.random.default_rng(3)
    cand_p, cand_f, cand_d = [], [], []
    for j, f in enumerate(LLAMA):
        kmax = int(2.0**24 * f / (np.pi / 2))
        k = (np.arange(1, kmax + 1) if f == 1.0 else rng.integers(1, kmax + 1, 1 << 16)).astype(np.float64)
        p = np.round((k * p1 + k * p2) / f)
        k, p = k[p < 2.0**24], p[p < 2.0**24]
        sh, sl = tp.exact_product(p, np.array([f]))
        d = np.abs(((sh[:, 0] - k * p1) - k * p2) - k * p3 + sl[:, 0])
        keep = np.argpartition(d, 4096)[:4096] if len(d) > 4096 else np.arange(len(d))
        cand_p.append(p[keep]), cand_f.append(np.full(len(keep), j)), cand_d.append(d[keep])
    d = np.concatenate(cand_d)
    order = np.argsort(d)[:4096]
    p, j = np.concatenate(cand_p)[order], np.concatenate(cand_f)[order]
    worst = 0.0
    for shift in (-1, 0, 1):
        pos = np.clip(p + shift, 0, 2**24).astype(np.uint32)
        # one call per position, all frequencies; keep the frequency it was picked for
        out, _ = tp.run(device, tp.EXACT, positions=pos, freqs=LLAMA)
        out = out.reshape(len(pos), len(LLAMA), 2)[np.arange(len(pos)), j]
        c, s = tp.cos_sin_of_pair(*tp.exact_product(pos, LLAMA))
        for col, ref in ((0, c[np.arange(len(pos)), j]), (1, s[np.arange(len(pos)), j])):
            err = tp.ulp_error(out[:, col], ref)
            i = int(np.argmax(err))
            worst = max(worst, float(err[i]))
            assert err[i] <= BOUND, (f"{'cos sin'.split()[col]}({pos[i]} * {LLAMA[j[i]]!r}) = {out[i, col]!r}, "
                                     f"exact {ref[i]!r}: {err[i]:.2f} ulp")
    print(f"\ntrig exact mode near zeros: closest angle {d[order[0]]:.3g} from a multiple of pi/2, "
          f"{3 * len(p)} cases, max {worst:.3f} ulp")


def test_exact_hilo_mode(device):
    """cos_sin_exact_hilo(position, (hi, lo)): the product position * (hi + lo)
    is reduced exactly (within BOUND of its cos / sin), but hi + lo is not
    the float64 f: reported against f, not asserted."""
    pos = exact_positions()[::4]
    out, _ = tp.run(device, tp.EXACT_HILO, positions=pos, freqs=LLAMA)
    hl = tp.freq_hilo(LLAMA).astype(np.float64)
    # position * (hi + lo) exactly: two exact products (24 + 24 bits), then a two-sum
    a = pos.astype(np.float64)[:, None] * hl[:, 0]
    b = pos.astype(np.float64)[:, None] * hl[:, 1]
    sm = a + b
    bb = sm - a
    c, s = tp.cos_sin_of_pair(sm, (a - (sm - bb)) + (b - bb))
    worst = 0.0
    for col, ref in ((0, c.ravel()), (1, s.ravel())):
        err = tp.ulp_error(out[:, col], ref)
        worst = max(worst, float(err.max()))
        assert err.max() <= BOUND
    c64, s64 = tp.cos_sin_of_pair(*tp.exact_product(pos, LLAMA))
    e64 = np.maximum(tp.ulp_error(out[:, 0], c64.ravel()), tp.ulp_error(out[:, 1], s64.ravel()))
    abs64 = max(np.abs(out[:, 0] - c64.ravel()).max(), np.abs(out[:, 1] - s64.ravel()).max())
    assert abs64 <= 2.0**-23
    print(f"\ntrig hilo mode: {out.shape[0]} (position, freq), max {worst:.3f} ulp of cos / sin of "
          f"position * (hi + lo); "
          f"against float64 f: max {e64.max():.0f} ulp ({abs64:.2g} absolute), {(e64 > BOUND).mean():.2e} over {BOUND}")

/*
 * vkrope: fp8 KV caches (OCP 8-bit floats: float8_e4m3fn with C_E4M3,
 * float8_e5m2 with C_E5M2), included by common.glsl when a kernel's cache
 * axis names one. Four values to a 32-bit word, value i in bits 8*(i%4)
 * (little-endian bytes, as numpy lays them out): no 8-bit storage extension.
 *
 *   fp8_decode(byte)      the value, exactly, as a float32
 *   fp8_pack4(vec4)       four values already exact in the format, as a word
 *   fp8_quantize(a, b, c, d, s)
 *       the format's value nearest to (a*b - c*d) / s (s > 0), ties to even:
 *       one rounding of the exact quotient. Past the largest finite value
 *       (e4m3fn 448, e5m2 57344) it saturates to it, infinities too, as
 *       CUDA's __NV_SATFINITE conversion in vLLM's cache kernels does; NaN
 *       stays NaN. An exact zero keeps the sign float32 gives it.
 *
 * How one rounding is had in float32: r = a*b - c*d is formed in float32,
 * with an error bound err. Where a*b and c*d cancel (err more than 2^-12
 * of r: r may lie cells away from the exact value, or have its sign
 * wrong) or overflow (r infinite or NaN while the difference may not be),
 * r is formed again from exact partial products: a and c scaled by a power
 * of two to about 1, a, b, c, d and s split into 12-bit halves, whose
 * products are exact, summed by TwoSum passes (distilled_sum) to within
 * 2^-22, the sign exact (a sum past float32's range saturates, one below
 * it is a zero of its sign). Then the midpoint m of the two values of the
 * format around r / s is found; where r is farther from m*s than its error
 * reaches, its side of m is the exact value's; otherwise (rare: within
 * about 2^-20 of a midpoint, every tie) the sign of a*b - c*d - m*s, from
 * exact partial products the same way, decides. Exact while no partial
 * product (of the scaled values) falls below float32's normal range: the
 * scale within [2^-40, 2^40] (the host checks), the nonzero one of |a|,
 * |c| within 2^40 of the other, and b and d (cos, sin) 0 or within
 * [2^-40, 2^40].
 */
#ifndef VKROPE_FP8_GLSL
#define VKROPE_FP8_GLSL
#define C_FP8

#ifdef C_E4M3
const uint FP8_MBITS = 3u;     // mantissa bits
const int FP8_EMIN = -6;       // exponent of the smallest normal
const int FP8_BIAS = 7;
const float FP8_MAX = 448.0;   // S.1111.110
const uint FP8_NAN = 0x7Fu;    // S.1111.111 (no infinity in this format)
#else
const uint FP8_MBITS = 2u;
const int FP8_EMIN = -14;
const int FP8_BIAS = 15;
const float FP8_MAX = 57344.0; // S.11110.11
const uint FP8_NAN = 0x7Eu;    // a quiet NaN, as ml_dtypes writes one
#endif

// 2^e for e in [-126, 127], exactly (exp2 need not be exact).
float pow2(int e) { return uintBitsToFloat(uint(clamp(e, -126, 127) + 127) << 23); }

// floor(log2 |v|) of a normal v; -127 for zero and subnormals.
int exponent_of(float v) { return int((floatBitsToUint(v) >> 23) & 0xFFu) - 127; }

float fp8_decode(uint b) {
  uint sign = (b & 0x80u) << 24;
  uint e = (b & 0x7Fu) >> FP8_MBITS;
  uint m = b & ((1u << FP8_MBITS) - 1u);
#ifdef C_E4M3
  if ((b & 0x7Fu) == 0x7Fu) {
    return uintBitsToFloat(sign | 0x7FC00000u);
  }
#else
  if (e == 31u) {
    return uintBitsToFloat(sign | (m == 0u ? 0x7F800000u : 0x7FC00000u));
  }
#endif
  float mag = e == 0u ? float(m) * pow2(FP8_EMIN - int(FP8_MBITS))
                      : float((1u << FP8_MBITS) | m) * pow2(int(e) - FP8_BIAS - int(FP8_MBITS));
  return uintBitsToFloat(floatBitsToUint(mag) | sign);
}

// The byte of q, a value of the format (e5m2: infinities too) or NaN (a quiet one: payloads are not kept).
uint fp8_encode(float q) {
  uint u = floatBitsToUint(q);
  uint sign = (u >> 24) & 0x80u;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    return sign | FP8_NAN;
  }
  float a = abs(q);
#ifdef C_E5M2
  if (a > FP8_MAX) {  // an infinity a shift passes through (rounded values saturate)
    return sign | 0x7Cu;
  }
#endif
  if (a < pow2(FP8_EMIN)) {  // subnormal: a multiple of 2^(EMIN - MBITS)
    return sign | uint(a * pow2(int(FP8_MBITS) - FP8_EMIN));
  }
  uint e = uint(exponent_of(a) + FP8_BIAS);
  uint m = (floatBitsToUint(a) >> (23u - FP8_MBITS)) & ((1u << FP8_MBITS) - 1u);
  return sign | (e << FP8_MBITS) | m;
}

uint fp8_pack4(vec4 v) {
  return fp8_encode(v.x) | (fp8_encode(v.y) << 8) | (fp8_encode(v.z) << 16) | (fp8_encode(v.w) << 24);
}

// x == hi + lo, each with at most 12 significant bits (products of two are exact).
void split12(float x, out float hi, out float lo) {
  precise float h = uintBitsToFloat(floatBitsToUint(x) & 0xFFFFF000u);
  precise float l = x - h;
  hi = h;
  lo = l;
}

// t[0] + ... + t[9] (exact float32 values) to within 2^-22 of itself, its
// sign exact: TwoSum passes over the terms (Ogita, Rump and Oishi's
// VecSum) until the float sum outweighs the rest, whose sum is then the
// remaining error, 2^22 times over.
float distilled_sum(float t[10]) {
  for (int pass = 0; pass < 40; ++pass) {
    for (int i = 1; i < 10; ++i) {
      float s, e;
      two_sum(t[i], t[i - 1], s, e);
      t[i] = s;
      t[i - 1] = e;
    }
    float rest = 0.0;
    for (int i = 0; i < 9; ++i) {
      rest += abs(t[i]);
    }
    if (rest <= abs(t[9]) * uintBitsToFloat(0x34000000u)) {  // 2^-23: (rest's own rounding inside the margin)
      break;
    }
  }
  return t[9];
}

// (a*b - c*d - m*s) * 2^-e, e the exponent of max(|a|, |c|) (m >= 0 and m*s
// about |a*b - c*d|, or 0; s in [2^-40, 2^40]), to within 2^-22 of itself,
// its sign exact: a and c scaled by 2^-e (so no partial product underflows,
// nor overflows where a*b does), every product of 12-bit halves exact.
float exact_residual(float a, float b, float c, float d, float m, float s, out int e) {
  float g = max(abs(a), abs(c));
  e = 0;
  if (g == 0.0) {
    return -(m * s);
  }
  e = clamp(exponent_of(g), -126, 126);
  float k = pow2(-e);
  // (m*s is within err of |a*b - c*d| <= 2 g (|b| + |d|) where this is asked: m*k stays finite)
  precise float mk = m * k;
  float a_hi, a_lo, b_hi, b_lo, c_hi, c_lo, d_hi, d_lo, s_hi, s_lo;
  split12(a * k, a_hi, a_lo);
  split12(b, b_hi, b_lo);
  split12(c * k, c_hi, c_lo);
  split12(d, d_hi, d_lo);
  split12(s, s_hi, s_lo);
  precise float t[10];  // (precise: each product rounded as written, never fused into a sum)
  t[0] = a_hi * b_hi;
  t[1] = a_hi * b_lo;
  t[2] = a_lo * b_hi;
  t[3] = a_lo * b_lo;
  t[4] = -(c_hi * d_hi);
  t[5] = -(c_hi * d_lo);
  t[6] = -(c_lo * d_hi);
  t[7] = -(c_lo * d_lo);
  t[8] = -(mk * s_hi);  // m has at most 6 significant bits: exact
  t[9] = -(mk * s_lo);
  return distilled_sum(t);
}

float fp8_quantize(float a, float b, float c, float d, float s) {
  precise float ab = a * b;
  precise float cd = c * d;
  precise float r = ab - cd;
  bool finite_inputs = !(nonfinite(a) || nonfinite(b) || nonfinite(c) || nonfinite(d));
  if (nonfinite(r) && !finite_inputs) {  // an infinite or NaN input: NaN, or an infinity saturating
    return nan_bits(r) ? r : (r > 0.0 ? FP8_MAX : -FP8_MAX);
  }
  // |r - (a*b - c*d)| is below err: three roundings of at most 2^-23 each
  // (2^-24 to nearest; 2^-21 leaves room for a driver's round-toward-zero,
  // Vulkan's rounding mode being the implementation's), or flushed subnormals
  float err = uintBitsToFloat(0x35000000u) * (abs(ab) + abs(cd)) + uintBitsToFloat(0x01800000u);  // 2^-21, 2^-124
  // a*b and c*d cancel (r may lie cells away, or have the wrong sign), or
  // overflow (r infinite or NaN, the difference maybe not): the exact sum
  if (nonfinite(r) || err > abs(r) * uintBitsToFloat(0x39800000u)) {  // 2^-12
    int e;
    float scaled = exact_residual(a, b, c, d, 0.0, s, e);
    if (scaled == 0.0) {
      return nonfinite(r) ? 0.0 : r;  // an exact zero, signed as float32 forms it (+0 past its range)
    }
    r = scaled * pow2(e);
    if (nonfinite(r)) {
      return r > 0.0 ? FP8_MAX : -FP8_MAX;  // the exact value is past float32: saturated
    }
    if (r == 0.0) {
      return scaled < 0.0 ? uintBitsToFloat(0x80000000u) : 0.0;  // below float32: a zero of the exact sign
    }
    err = abs(r) * uintBitsToFloat(0x35000000u) + uintBitsToFloat(0x01800000u);  // 2^-22 of the sum, and room
  }
  float sg = sign(r);
  float ay = abs(r / s);
  if (ay >= 2.0 * FP8_MAX) {
    return sg * FP8_MAX;
  }
  int ey = max(exponent_of(ay), FP8_EMIN);
  float u = pow2(ey - int(FP8_MBITS));  // the format's spacing around ay
  float whole = floor(ay * pow2(int(FP8_MBITS) - ey));  // exact: ay / u
  precise float mid = (whole + 0.5) * u;  // the midpoint above whole * u
  precise float t = mid * s;
  precise float away = abs(r) - t;
  float side = sign(away);
  // err is at most 2^-12 of |r|: y lies in the exact value's cell or next to it; only its side of mid is in doubt
  if (abs(away) <= err + uintBitsToFloat(0x35000000u) * t) {  // (t: one rounding, 2^-21 of room)
    int e;
    side = sign(exact_residual(sg * a, b, sg * c, d, mid, s, e));
  }
  float n = (side > 0.0 || (side == 0.0 && (uint(whole) & 1u) != 0u)) ? whole + 1.0 : whole;
  float q = min(n * u, FP8_MAX);
  return sg < 0.0 ? -q : q;
}

#endif

/*
 * vkrope: code shared by every kernel (included by each glsl/<kernel>.glsl).
 *
 * Defines a kernel may set before including it (from its variant grid,
 * glsl/<kernel>.json, through scripts/compile_shaders.py):
 *   X_HALF   tensors (x / out) are float16
 *   X_BF16   tensors (x / out) are bfloat16, held as 16-bit words
 *            (neither: float32)
 *   F_HALF   frequency tables are float16
 *   F_BF16   frequency tables are bfloat16 words (neither: float32)
 *   C_HALF / C_BF16   KV caches are float16 / bfloat16 (neither: float32)
 *   C_E4M3 / C_E5M2   KV caches are fp8 (glsl/fp8.glsl)
 *
 * bfloat16 needs no device extension (VK_KHR_shader_bfloat16 is rare): a
 * value is the high half of a float32, so widening is a shift (exact, NaN
 * payloads and subnormals kept) and narrowing one round-to-nearest-even on
 * the bits (round_to_bf16). Images hold the words in rgba16ui texels.
 *
 * Kernels move tensor values through these, whatever the dtype:
 *   x_vec4(XVEC4), x_float(XSCALAR)       a stored value widened to float32
 *   to_x_vec4(vec4), to_x_scalar(float)   a value already exact in x's type
 *                                         (after round_to_x), as stored
 *   round_to_x(vec4)                      float32 rounded once to x's type
 *   IMAGE_LOAD(img, pos), IMAGE_STORE(img, pos, vec4)   texels of IMAGE_TYPE
 *   f_vec2, f_vec4, f_float               table values widened to float32
 */
#ifndef VKROPE_COMMON_GLSL
#define VKROPE_COMMON_GLSL

#if defined(X_HALF) || defined(F_HALF) || defined(X_BF16) || defined(F_BF16) || defined(C_HALF) || defined(C_BF16)
#extension GL_EXT_shader_16bit_storage : require
#endif

// float32 values rounded to the nearest bfloat16 (ties to even), still as
// float32. The carry into the exponent is right: the largest finite values
// round up to infinity, subnormals round on the same grid. A NaN keeps its
// sign and top payload bits and is made quiet (truncating a NaN whose
// payload sits in the low bits alone would give infinity).
vec4 round_to_bf16(vec4 v) {
  uvec4 u = floatBitsToUint(v);
  uvec4 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;
  uvec4 quiet = (u | 0x00400000u) & 0xFFFF0000u;
  return uintBitsToFloat(mix(rounded, quiet, greaterThan(u & 0x7FFFFFFFu, uvec4(0x7F800000u))));
}
vec4 bf16_to_vec4(uvec4 w) { return uintBitsToFloat(w << 16); }
float bf16_to_float(uint w) { return uintBitsToFloat(w << 16); }

#ifdef X_HALF
#define XVEC4 f16vec4
#define XSCALAR float16_t
#define IMAGE_FORMAT rgba16f
#define IMAGE_TYPE image3D
#elif defined(X_BF16)
#define XVEC4 u16vec4
#define XSCALAR uint16_t
#define IMAGE_FORMAT rgba16ui
#define IMAGE_TYPE uimage3D
#else
#define XVEC4 vec4
#define XSCALAR float
#define IMAGE_FORMAT rgba32f
#define IMAGE_TYPE image3D
#endif

// Macros, not functions: with 16-bit storage alone (no 16-bit arithmetic
// extension) a 16-bit type may be loaded, stored and converted, not passed.
#ifdef X_BF16
#define x_vec4(v) bf16_to_vec4(uvec4(v))
#define x_float(v) bf16_to_float(uint(v))
#define to_x_vec4(v) XVEC4(floatBitsToUint(v) >> 16)
#define to_x_scalar(v) XSCALAR(floatBitsToUint(v) >> 16)
#define image_vec4(t) bf16_to_vec4(t)
#define vec4_to_image(v) (floatBitsToUint(v) >> 16)
#else
#define x_vec4(v) vec4(v)
#define x_float(v) float(v)
#define to_x_vec4(v) XVEC4(v)
#define to_x_scalar(v) XSCALAR(v)
#define image_vec4(t) (t)
#define vec4_to_image(v) (v)
#endif
#define IMAGE_LOAD(img, pos) image_vec4(imageLoad(img, pos))
#define IMAGE_STORE(img, pos, v) imageStore(img, pos, vec4_to_image(v))

// Tensor values as raw bits (16-bit types: two per uint): a kernel that
// loads and stores through these gives a pass-through value back bit for
// bit (NaN payloads too) while using one load and one store for every
// texel. The *_to_raw functions take values already exact in the tensor's
// type (after round_to_x).
#ifdef X_HALF
#define XRAW4 uvec2
#define XRAW2 uint
vec4 raw_to_vec4(uvec2 r) { return vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y)); }
uvec2 vec4_to_raw(vec4 v) { return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw)); }
vec2 raw_to_vec2(uint r) { return unpackHalf2x16(r); }
uint vec2_to_raw(vec2 v) { return packHalf2x16(v); }
#elif defined(X_BF16)
#define XRAW4 uvec2
#define XRAW2 uint
vec2 raw_to_vec2(uint r) { return uintBitsToFloat(uvec2(r << 16, r & 0xFFFF0000u)); }
uint vec2_to_raw(vec2 v) { uvec2 u = floatBitsToUint(v); return (u.x >> 16) | (u.y & 0xFFFF0000u); }
vec4 raw_to_vec4(uvec2 r) { return vec4(raw_to_vec2(r.x), raw_to_vec2(r.y)); }
uvec2 vec4_to_raw(vec4 v) { return uvec2(vec2_to_raw(v.xy), vec2_to_raw(v.zw)); }
#else
#define XRAW4 uvec4
#define XRAW2 uvec2
vec4 raw_to_vec4(uvec4 r) { return uintBitsToFloat(r); }
uvec4 vec4_to_raw(vec4 v) { return floatBitsToUint(v); }
vec2 raw_to_vec2(uvec2 r) { return uintBitsToFloat(r); }
uvec2 vec2_to_raw(vec2 v) { return floatBitsToUint(v); }
#endif

#ifdef F_HALF
#define FVEC2 f16vec2
#define FVEC4 f16vec4
#define FSCALAR float16_t
#elif defined(F_BF16)
#define FVEC2 u16vec2
#define FVEC4 u16vec4
#define FSCALAR uint16_t
#else
#define FVEC2 vec2
#define FVEC4 vec4
#define FSCALAR float
#endif

#ifdef F_BF16
#define f_vec2(v) uintBitsToFloat(uvec2(v) << 16)
#define f_vec4(v) bf16_to_vec4(uvec4(v))
#define f_float(v) bf16_to_float(uint(v))
#else
#define f_vec2(v) vec2(v)
#define f_vec4(v) vec4(v)
#define f_float(v) float(v)
#endif

// Not a finite float, by its bits: without SignedZeroInfNanPreserve a
// driver may fold isnan / isinf to false.
bool nonfinite(float v) { return (floatBitsToUint(v) & 0x7FFFFFFFu) >= 0x7F800000u; }
bool nan_bits(float v) { return (floatBitsToUint(v) & 0x7FFFFFFFu) > 0x7F800000u; }

// x + y == s + err exactly (Knuth's TwoSum: no fma, either order of size).
void two_sum(float x, float y, out float s, out float err) {
  precise float sum = x + y;
  precise float yy = sum - x;
  precise float e = (x - (sum - yy)) + (y - yy);
  s = sum;
  err = e;
}

// sum += term, the rounding error of each step gathered in err (sum + err is the total within a few ulps
// whatever the count: an RMSNorm's mean of 2^16 squares summed plainly was off by 2^-18).
void add_compensated(inout float sum, inout float err, float term) {
  float s, e;
  two_sum(sum, term, s, e);
  sum = s;
  // (a sum past float32's range is infinite and TwoSum's error NaN: then the sum alone, as a plain sum gives)
  precise float gathered = nonfinite(s) ? err : err + e;
  err = gathered;
}

#if defined(C_HALF) && !defined(X_HALF) && !defined(X_BF16)
// a * b == hi + lo exactly (Dekker's TwoProduct with Veltkamp's split, no fma: lavapipe does not fuse it),
// where nothing overflows and lo is not below float32's normal range.
void two_prod(float a, float b, out float hi, out float lo) {
  precise float p = a * b;
  precise float ta = 4097.0 * a;
  precise float ah = ta - (ta - a);
  precise float al = a - ah;
  precise float tb = 4097.0 * b;
  precise float bh = tb - (tb - b);
  precise float bl = b - bh;
  precise float e = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
  hi = p;
  lo = e;
}

// q + e as two_sum makes them (q the rounded sum, e its error): one step of Grow-Expansion.
void grow(inout float q, inout float e) {
  float sum, err;
  two_sum(q, e, sum, err);
  q = sum;
  e = err;
}

// The sign (-1, 0, 1) of t0 + t1 + t2 + t3 + t4 exactly: Shewchuk's Grow-Expansion makes them a
// nonoverlapping expansion, whose largest nonzero component (the last) has the sign of the whole.
float sign_of_sum5(float t0, float t1, float t2, float t3, float t4) {
  float e0 = t0, e1 = t1, e2 = t2, e3 = t3, e4 = t4;  // (each term grown into the components below it)
  grow(e1, e0);
  grow(e2, e0);
  grow(e2, e1);
  grow(e3, e0);
  grow(e3, e1);
  grow(e3, e2);
  grow(e4, e0);
  grow(e4, e1);
  grow(e4, e2);
  grow(e4, e3);
  return e4 != 0.0 ? sign(e4) : e3 != 0.0 ? sign(e3) : e2 != 0.0 ? sign(e2) : e1 != 0.0 ? sign(e1) : sign(e0);
}

// r, the float32 a*b - c*d, for a float16 KV cache of float32 k (16-bit k's is exact already:
// exact_rounded). Rounding it again is at most one float16 ulp off
// (the accuracy stated), except at float16's overflow midpoint +-65520 (halfway from its largest value
// 65504 to infinity), where a value on one side came back on the other: finite made infinite, or the
// reverse (an adversary's: 65504, 65504 by cos 1, sin 2^-12 - ... gave inf for 65519.99999; a reviewer's,
// scaled tables and float32 k into a float16 cache, r an ulp past the midpoint). Where r lies within its
// own error (an ulp of each product and of r: lavapipe does not fuse fma) of +-65520, the exact value's
// side is decided from Dekker's products and an exact expansion sum: +-infinity at or past it, else a
// value below it (r, or the float32 just below 65520), which float16 rounds to its one rounding. Exact
// where no operand reaches 2^100 (the split would overflow: r as it is) and no nonzero product lies
// between 2^-126 and 2^-150, partly underflowed (one wholly below decides a tie by its sign).
float half_safe(float r, float a, float b, float c, float d) {
  precise float size = abs(a * b) + abs(c * d);
  if (!(abs(abs(r) - 65520.0) <= size * uintBitsToFloat(0x34800000u) + 0.0078125)  // (2^-22, 2^-7; NaN: r)
      || max(max(abs(a), abs(b)), max(abs(c), abs(d))) >= uintBitsToFloat(0x71800000u)) {  // (2^100)
    return r;
  }
  float p, pl, q, ql;
  two_prod(a, b, p, pl);
  two_prod(c, -d, q, ql);
  float m = r < 0.0 ? -65520.0 : 65520.0;
  float side = sign_of_sum5(p, pl, q, ql, -m);  // (the exact value minus the midpoint)
  if (side == 0.0) {  // (the parts kept tie: a product wholly below float32's range decides, by its sign)
    side = (p == 0.0 && pl == 0.0 && a != 0.0 && b != 0.0 ? sign(a) * sign(b) : 0.0)
           - (q == 0.0 && ql == 0.0 && c != 0.0 && d != 0.0 ? sign(c) * sign(d) : 0.0);
  }
  if (side * m >= 0.0) {  // (at or past the midpoint, towards infinity)
    return uintBitsToFloat(floatBitsToUint(m) & 0x80000000u | 0x7F800000u);
  }
  return abs(r) < 65520.0 ? r : uintBitsToFloat(floatBitsToUint(m) - 1u);  // (|m| - 2^-8: 65504 in float16)
}
#endif

#if defined(X_BF16) || defined(X_HALF) || defined(C_BF16) || defined(C_HALF)

// r (a float32 sum) with the sign of its remainder `rest` (exact value =
// r + rest) kept for the one rounding to bfloat16 that follows: where r is
// a bfloat16 rounding midpoint and the exact value is not, r moves one
// float32 ulp towards the exact value, so the rounding is the exact
// value's (rounding r alone would round twice: float32, then bfloat16).
float keep_sticky(float r, float rest) {
  uint u = floatBitsToUint(r);
  if ((u & 0xFFFFu) != 0x8000u || rest == 0.0 || nonfinite(rest)) {
    return r;
  }
  return uintBitsToFloat((rest > 0.0) == (r > 0.0) ? u + 1u : u - 1u);
}

// The sign of x * y where x and y are not zero but each part of their product as exact_diff forms it (`hi`,
// `lo`) underflowed to zero (below 2^-150): it can still decide a rounding at a midpoint; else 0.0.
float lost_sign(float x, float y, float hi, float lo) {
  return (hi == 0.0 && lo == 0.0 && x != 0.0 && y != 0.0) ? sign(x) * sign(y) : 0.0;
}

// The split of a float32 cos / sin whose parts' products with a 16-bit value are exact (exact_diff): a
// bfloat16 value's 8 significant bits by 16 and 8; a float16 value's 11 by 13 and 11.
const uint BF16_HI = 0xFFFFFF00u;  // (16 significant bits of 24)
const uint HALF_HI = 0xFFFFF800u;  // (13 of 24)

// r + rest == a*b - c*d exactly: a and c 16-bit values (x's, or a cache's
// in the shift kernel; under the decode step's norm they are its float32
// results, and the products are rounded as the plain formula's are); b and d tables of their dtype (F_BF16, F_HALF: every
// product exact as it is), else float32 split at `hi_bits` (BF16_HI,
// HALF_HI); the products summed with TwoSums. Exact while no product is a
// float32 subnormal (exact_rounded scales tiny inputs first);
// `lost`: the sign of a*b - c*d's products that underflowed whole
// (lost_sign), 0 where none did.
void exact_diff(float a, float b, float c, float d, uint hi_bits, out float r, out float rest, out float lost) {
#if defined(F_BF16) || defined(F_HALF)
  precise float p = a * b;
  precise float q = c * d;
  two_sum(p, -q, r, rest);
  lost = lost_sign(a, b, p, p) - lost_sign(c, d, q, q);
#else
  precise float b_hi = uintBitsToFloat(floatBitsToUint(b) & hi_bits);
  precise float d_hi = uintBitsToFloat(floatBitsToUint(d) & hi_bits);
  precise float b_lo = b - b_hi;
  precise float d_lo = d - d_hi;
  precise float p_hi = a * b_hi;
  precise float q_hi = c * d_hi;
  precise float p_lo = a * b_lo;
  precise float q_lo = c * d_lo;
  float s, e, lo, e_lo, u, e_u, e_r;
  two_sum(p_hi, -q_hi, s, e);
  two_sum(p_lo, -q_lo, lo, e_lo);
  two_sum(e, lo, u, e_u);
  two_sum(s, u, r, e_r);
  precise float left = e_r + (e_u + e_lo);
  // (renormalised: r the float32 nearest the sum. Where the remainders are large beside r, as a float32
  // subnormal cos / sin makes e_lo, r alone was a bfloat16 unit off: a reviewer's)
  two_sum(r, left, r, rest);
  lost = lost_sign(a, b, p_hi, p_lo) - lost_sign(c, d, q_hi, q_lo);
#endif
}

// r (a float32 sum) with the sign of its remainder `rest` kept for the one rounding to float16 that follows,
// as keep_sticky does for bfloat16: where r is a float16 midpoint (10 fraction bits kept; below 2^-14,
// odd multiples of 2^-25) and the exact value is not, r moves one float32 ulp towards it. Float16's overflow
// midpoint 65520 is one: the exact value's side of it decides infinity.
float keep_half_sticky(float r, float rest) {
  uint u = floatBitsToUint(r);
  uint mag = u & 0x7FFFFFFFu;
  bool mid = mag >= 0x38800000u ? (mag & 0x1FFFu) == 0x1000u : fract(abs(r) * 16777216.0) == 0.5;  // (2^24)
  if (!mid || rest == 0.0 || nonfinite(rest)) {
    return r;
  }
  return uintBitsToFloat((rest > 0.0) == (r > 0.0) ? u + 1u : u - 1u);
}

// The bfloat16 nearest r + rest (ties to even), for an exact result scaled
// by 2^64: its normal range starts at 2^-62 here, below which bfloat16's
// grid is multiples of 2^-133, 2^-69 scaled, rounded on that grid; the
// value returned is exact in bfloat16 (a later rounding keeps it).
float round_scaled_bf16(float r, float rest) {
  float m = abs(r) * uintBitsToFloat(0x62000000u);  // exact: in units of 2^-69
  if (m >= 128.0) {
    return round_to_bf16(vec4(keep_sticky(r, rest))).x * uintBitsToFloat(0x1F800000u);  // x 2^-64, exact
  }
  float whole = floor(m);
  float part = m - whole;  // exact
  float toward = r < 0.0 ? -rest : rest;  // the remainder, towards a larger magnitude
  bool up = part > 0.5 || (part == 0.5 && (toward > 0.0 || (toward == 0.0 && mod(whole, 2.0) == 1.0)));
  precise float units = whole + (up ? 1.0 : 0.0);  // at most 128: 2^-126, the smallest normal
  precise float v = units * uintBitsToFloat(0x1D000000u) * uintBitsToFloat(0x1F800000u);  // x 2^-69 x 2^-64
  return r < 0.0 ? -v : v;
}

// Where exact_rounded's value goes: a float32 (a KV cache of 16-bit k), a float16 or a bfloat16 (x, q, a cache).
const uint TO_F32 = 0u;
const uint TO_HALF = 1u;
const uint TO_BF16 = 2u;

// a*b - c*d of 16-bit a and c (bfloat16: hi_bits BF16_HI; float16: HALF_HI) for one rounding to `to`: the
// exact sum (exact_diff) with its remainder deciding a midpoint of the destination (keep_half_sticky,
// keep_sticky; float16's overflow midpoint 65520 is one); TO_F32: the sum with its remainder added, within a
// float32 ulp of the exact value. Where both products are below 2^-60, and so could be float32 subnormals
// (exact only to 2^-149; the products' sizes, not a's and c's: 2^-60 times a cos of 2^-80 is one too), a and c
// are scaled by 2^64 first (not from 2^64, which that would overflow: no product of them is below 2^-85, exact
// as it is): a bfloat16 result is rounded on its grid there (round_scaled_bf16), a float16 one is a zero
// signed as the exact value (its grid stops at 2^-24). Where a product overflows the sum is not finite and
// the plain formula is returned; so is an exact zero, signed as IEEE signs a*b - c*d (the sums' zero may not
// be). `to` is a constant at every call: the compiler keeps one branch.
float exact_rounded(float a, float b, float c, float d, uint hi_bits, uint to) {
  precise float ab = a * b;
  precise float cd = c * d;
  // (float16 values are below 2^16: the scaling cannot overflow them)
  bool tiny = max(abs(ab), abs(cd)) < uintBitsToFloat(0x21800000u)  // (2^-60)
              && (hi_bits == HALF_HI || max(abs(a), abs(c)) < uintBitsToFloat(0x5F800000u));  // (2^64)
  float k = tiny ? uintBitsToFloat(0x5F800000u) : 1.0;  // (2^64)
  float r, rest, lost;
  exact_diff(a * k, b, c * k, d, hi_bits, r, rest, lost);
  precise float plain = ab - cd;
  if (nonfinite(r) || (r == 0.0 && rest == 0.0)) {
    return plain;
  }
  precise float sum = r + rest;
  if (to == TO_F32) {
    return tiny ? sum * uintBitsToFloat(0x1F800000u) : sum;  // (x 2^-64)
  }
  float sticky = rest == 0.0 ? lost : rest;  // (1 and -1 stand for the underflowed products' signs)
  if (to == TO_HALF) {
    float zero = uintBitsToFloat(sum > 0.0 ? 0u : 0x80000000u);  // (a float16 zero, of the exact value's sign)
    return tiny ? zero : keep_half_sticky(r, sticky);
  }
  return tiny ? round_scaled_bf16(r, sticky) : keep_sticky(r, sticky);
}
#endif

// a*b - c*d, a and c tensor values, b and d cos / sin (or the other way).
//
// float32 x: Kahan's fma form, one rounding error at most about
// 1.5 ulp of the result where the device fuses fma. When c*d is infinite
// the error term e is inf - inf = NaN; then the plain formula is returned
// (+-inf, or NaN where it has NaN: both products past float32's range).
//
// bfloat16 x, for one rounding to bfloat16 with no fma (lavapipe does not
// fuse it): the exact result as a float32 sum and its remainder
// (exact_diff), the remainder deciding the rounding where the sum sits on a
// bfloat16 midpoint (keep_sticky). Where both products are below 2^-60, and
// so could be float32 subnormals (exact only to 2^-149), x is scaled by 2^64
// first and the result rounded on bfloat16's grid there (round_scaled_bf16);
// a product still below 2^-118 there sits 2^32 times below the other (or
// the result is below bfloat16's smallest step), so only its sign can move
// the rounding: kept where it underflows to zero (lost_sign).
// Where a product overflows the sum is not finite, and the plain formula is
// returned; so is an exact zero, whose sign the sums may not keep.
//
// float16 x: the same exact sum for its one rounding to float16 (exact_rounded),
// which decides float16's overflow midpoint 65520 too.
float diff_of_products(float a, float b, float c, float d) {
#if defined(X_BF16)
  return exact_rounded(a, b, c, d, BF16_HI, TO_BF16);
#elif defined(X_HALF)
  return exact_rounded(a, b, c, d, HALF_HI, TO_HALF);
#else
  precise float w = c * d;
  precise float e = fma(-c, d, w);
  precise float f = fma(a, b, -w);
  // e == 0: w is c*d exactly and f the one rounding of a*b - c*d, its sign
  // of zero included (f + e would turn -0 into +0: a -0 input times any
  // cos, as torch keeps it)
  precise float r = e == 0.0 ? f : f + e;
  precise float plain = a * b - c * d;
  return nan_bits(r) ? plain : r;
#endif
}

// y, a rotated key a*b - c*d already formed, for a KV cache's one rounding: for a float16 cache of float32 k
// its overflow midpoint decided (half_safe; 16-bit k's y is the exact value's); as it is for the others.
float c_value(float y, float a, float b, float c, float d) {
#if defined(C_HALF) && !defined(X_HALF) && !defined(X_BF16)
  return half_safe(y, a, b, c, d);
#else
  return y;
#endif
}

// v rounded to the nearest float16 value (ties to even), still as float32.
// Conversion on store is implementation-defined (lavapipe's rgba16f
// imageStore truncates while its buffer conversion rounds to nearest);
// rounding here makes every storage give the same correctly rounded bits.
vec4 round_to_half(vec4 v) {
  uvec4 u = floatBitsToUint(v);
  uvec4 mag = u & 0x7FFFFFFFu;
  uvec4 sign = u & 0x80000000u;
  // Normal float16 range: keep 10 of 23 mantissa bits.
  uvec4 kept = (mag + 0x0FFFu + ((mag >> 13) & 1u)) & 0xFFFFE000u;
  vec4 r = uintBitsToFloat(kept | sign);
  // Subnormal float16 range (|v| < 2^-14): multiples of 2^-24.
  r = mix(r, roundEven(v * 16777216.0) * (1.0 / 16777216.0), lessThan(mag, uvec4(0x38800000u)));
  // Past the largest float16 (65504): infinity, as round-to-nearest gives.
  r = mix(r, uintBitsToFloat(sign | 0x7F800000u), greaterThan(abs(r), vec4(65504.0)));
  // NaN and infinity stay what they are.
  return mix(r, v, greaterThanEqual(mag, uvec4(0x7F800000u)));
}

// v rounded once to x's type (float32: as it is).
vec4 round_to_x(vec4 v) {
#ifdef X_HALF
  return round_to_half(v);
#elif defined(X_BF16)
  return round_to_bf16(v);
#else
  return v;
#endif
}

// The KV caches' dtype (C_HALF / C_BF16 / C_E4M3 / C_E5M2): a stored value
// widened to float32 (c_float; c_load(buf, i) reads value i of a cache
// buffer), a value or texel rounded once to it, as stored. fp8 caches
// (glsl/fp8.glsl) hold four values to a 32-bit word: CSCALAR and CVEC4 are
// that word, and to_c_vec4 packs four values already exact in the format.
#if defined(C_E4M3) || defined(C_E5M2)
#include "fp8.glsl"
#define CSCALAR uint
#define CVEC4 uint
#define c_load(buf, i) fp8_decode(((buf)[(i) >> 2] >> (8u * ((i) & 3u))) & 0xFFu)
#define to_c_vec4(v) fp8_pack4(v)
#elif defined(C_HALF)
#define CSCALAR float16_t
#define CVEC4 f16vec4
#define c_float(v) float(v)
#define to_c_scalar(v) CSCALAR(round_to_half(vec4(v, 0.0, 0.0, 0.0)).x)
#define to_c_vec4(v) CVEC4(round_to_half(v))
#elif defined(C_BF16)
#define CSCALAR uint16_t
#define CVEC4 u16vec4
#define c_float(v) bf16_to_float(uint(v))
#define to_c_scalar(v) CSCALAR(floatBitsToUint(round_to_bf16(vec4(v, 0.0, 0.0, 0.0)).x) >> 16)
#define to_c_vec4(v) CVEC4(floatBitsToUint(round_to_bf16(v)) >> 16)
#else
#define CSCALAR float
#define CVEC4 vec4
#define c_float(v) (v)
#define to_c_scalar(v) (v)
#define to_c_vec4(v) (v)
#endif
#ifndef C_FP8
#define c_load(buf, i) c_float((buf)[i])
#endif

#endif

/*
 * vkrope: code shared by every kernel (included by each glsl/<kernel>.glsl).
 *
 * Defines a kernel may set before including it (from its variant grid,
 * glsl/<kernel>.json, through scripts/compile_shaders.py):
 *   X_HALF   tensors (x / out) are float16 (else float32)
 *   F_HALF   frequency tables are float16 (else float32)
 */
#ifndef VKROPE_COMMON_GLSL
#define VKROPE_COMMON_GLSL

#if defined(X_HALF) || defined(F_HALF)
#extension GL_EXT_shader_16bit_storage : require
#endif

#ifdef X_HALF
#define XVEC4 f16vec4
#define XVEC2 f16vec2
#define XSCALAR float16_t
#define IMAGE_FORMAT rgba16f
#else
#define XVEC4 vec4
#define XVEC2 vec2
#define XSCALAR float
#define IMAGE_FORMAT rgba32f
#endif

// Tensor values as raw bits (float16: two per uint): a kernel that loads
// and stores through these gives a pass-through value back bit for bit
// (NaN payloads too) while using one load and one store for every texel.
// The *_to_raw functions take values already exact in the tensor's type
// (float16: after round_to_half).
#ifdef X_HALF
#define XRAW4 uvec2
#define XRAW2 uint
vec4 raw_to_vec4(uvec2 r) { return vec4(unpackHalf2x16(r.x), unpackHalf2x16(r.y)); }
uvec2 vec4_to_raw(vec4 v) { return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw)); }
vec2 raw_to_vec2(uint r) { return unpackHalf2x16(r); }
uint vec2_to_raw(vec2 v) { return packHalf2x16(v); }
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
#else
#define FVEC2 vec2
#define FVEC4 vec4
#define FSCALAR float
#endif

// a*b - c*d with one rounding error at most about 1.5 ulp of the result
// (Kahan's fma form) where the device fuses fma. When c*d is infinite the
// error term e is inf - inf = NaN; then f alone is what the plain formula
// gives (+-inf, or NaN where that formula has NaN).
float diff_of_products(float a, float b, float c, float d) {
  precise float w = c * d;
  precise float e = fma(-c, d, w);
  precise float f = fma(a, b, -w);
  precise float r = f + e;
  return isnan(r) ? f : r;
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

#endif

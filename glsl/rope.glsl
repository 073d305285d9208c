#version 450
/*
 * vkrope: interleaved ("complex-number") rotary position embedding.
 *
 * One template, compiled per variant by scripts/compile_shaders.py with:
 *   STORAGE_BUFFER or STORAGE_TEXTURE3D   where x and the output live
 *   X_HALF                                x / out are float16 (else float32)
 *   F_HALF                                freqs are float16 (else float32)
 *
 * Inputs (set 0):
 *   binding 0  out        buffer of texels, or a width-packed 3D image (writeonly)
 *   binding 1  x          buffer of texels, or a width-packed 3D image (readonly)
 *   binding 2  freqs      buffer of (cos, sin) pairs, flat [Nf, C/2]
 *   binding 3  positions  buffer of int, one freqs row per token (-1: pass through)
 * out and x may be the same buffer / image: every invocation reads its own
 * texel before writing that texel, and no other invocation touches it.
 *
 * Math, per pair k of token n with (c, s) = freqs[row(n), k]:
 *   out[2k]   = x[2k] * c - x[2k+1] * s
 *   out[2k+1] = x[2k] * s + x[2k+1] * c
 * (s -> -s when the INVERSE flag is set). row(n) = positions[n] when the
 * POSITIONS flag is set, else n % Nf for n < n_rot and -1 (pass through) after.
 * Each a*c - b*s is evaluated with Kahan's fma form so the float32 result is
 * within ~1.5 ulp of the exact value even under cancellation where the device
 * fuses fma. float16 data is widened to float32, and the float32 result is
 * rounded to float16 precision here, to nearest-even, by integer arithmetic:
 * conversion on store is implementation-defined (lavapipe's rgba16f
 * imageStore truncates while its buffer conversion rounds to nearest), and
 * doing it here makes both storages give the same correctly rounded bits.
 *
 * Indexing. The dispatch grid is (texel in row, token, batch): x = texel c4
 * of a row (pairs 2*c4 and 2*c4+1; the last texel of a row holds one pair
 * when C % 4 == 2), y = token n, z = flat batch index b over all leading
 * axes. No integer division is needed to find the token, so the common case
 * costs no divisions at all (CPU drivers scalarise them).
 *  - Buffer storage: pair (b, n, k) is pair (b*N + n)*C/2 + k of the flat
 *    tensor. When C % 4 == 0 (spec constant ALIGNED) rows are whole texels
 *    and x and freqs move as vec4; otherwise as vec2 pairs, through aliased
 *    views of the same bindings.
 *  - Texture storage: texel (c4, y, z) of a width-packed image, extent
 *    (ceil(C/4), N, B) when that fits the device. Otherwise flat rows
 *    (b*N + n) fold over y and z (y = row % height, z = row / height), and
 *    a row wider than the image continues on the next image row(s).
 * The host may split one tensor into several dispatches (grid and storage-
 * buffer range limits); the push constants say which tokens and batches
 * this dispatch covers and where each buffer binding starts, so the indices
 * below are global and then made binding-relative.
 */
#ifdef X_HALF
#extension GL_EXT_shader_16bit_storage : require
#elif defined(F_HALF)
#extension GL_EXT_shader_16bit_storage : require
#endif

layout(local_size_x_id = 0, local_size_y_id = 1) in;
// C % 4 == 0: every row is whole texels, x and out move as vec4.
layout(constant_id = 2) const bool ALIGNED = true;

#ifdef X_HALF
#define XVEC4 f16vec4
#define XVEC2 f16vec2
#define IMAGE_FORMAT rgba16f
#else
#define XVEC4 vec4
#define XVEC2 vec2
#define IMAGE_FORMAT rgba32f
#endif

#ifdef F_HALF
#define FVEC2 f16vec2
#define FVEC4 f16vec4
#else
#define FVEC2 vec2
#define FVEC4 vec4
#endif

#ifdef STORAGE_BUFFER
// Two views of each binding: texels (ALIGNED) and pairs (C % 4 == 2).
layout(std430, set = 0, binding = 0) writeonly buffer OutTexels { XVEC4 out_texels[]; };
layout(std430, set = 0, binding = 0) writeonly buffer OutPairs { XVEC2 out_pairs[]; };
layout(std430, set = 0, binding = 1) readonly buffer InTexels { XVEC4 in_texels[]; };
layout(std430, set = 0, binding = 1) readonly buffer InPairs { XVEC2 in_pairs[]; };
#else
layout(set = 0, binding = 0, IMAGE_FORMAT) uniform writeonly image3D out_image;
layout(set = 0, binding = 1, IMAGE_FORMAT) uniform readonly image3D in_image;
#endif
layout(std430, set = 0, binding = 2) readonly buffer Freqs { FVEC2 freqs[]; };
layout(std430, set = 0, binding = 2) readonly buffer Freqs4 { FVEC4 freqs4[]; };
layout(std430, set = 0, binding = 3) readonly buffer Positions { int positions[]; };

// Bits of p.flags: FLAG_INVERSE and FLAG_POSITIONS come from the compiler
// command line (vkrope/shaders.py FLAGS), the host's one source for them.
#if !defined(FLAG_INVERSE) || !defined(FLAG_POSITIONS)
#error "compile with scripts/compile_shaders.py: it defines FLAG_INVERSE and FLAG_POSITIONS"
#endif

layout(push_constant) uniform Params {
  uint n_tokens;       // N
  uint pairs_per_row;  // C / 2
  uint token_begin;    // first token of this dispatch
  uint token_end;      // one past its last token
  uint batch_begin;    // first flat batch index of this dispatch
  uint batch_end;      // one past its last
  uint x_base;         // global pair at which the x / out buffer bindings start
  uint f_base;         // global freqs pair at which the freqs binding starts
  uint n_rot;          // tokens that use row n % Nf (the rest pass through)
  uint n_freq_rows;    // Nf
  uint flags;          // FLAG_*
  uint image_height;   // texture storage: image rows per z-slice
  uint image_width;    // texture storage: texels per image row
} p;

// a*b - c*d with one rounding error at most about 1.5 ulp of the result.
// When c*d is infinite the error term e is inf - inf = NaN; then f alone is
// what the plain formula gives (+-inf, or NaN where that formula has NaN).
float diff_of_products(float a, float b, float c, float d) {
  precise float w = c * d;
  precise float e = fma(-c, d, w);
  precise float f = fma(a, b, -w);
  precise float r = f + e;
  return isnan(r) ? f : r;
}

#ifdef X_HALF
// v rounded to the nearest float16 value (ties to even), still as float32.
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

// Freqs row of token n; -1 = pass through.
int freqs_row(uint n) {
  if ((p.flags & FLAG_POSITIONS) != 0u) {
    return positions[n];
  }
  if (n >= p.n_rot) {
    return -1;
  }
  return int(n < p.n_freq_rows ? n : n % p.n_freq_rows);
}

vec2 rotate_pair(vec2 v, vec2 cs) {
  float s = (p.flags & FLAG_INVERSE) != 0u ? -cs.y : cs.y;
  float c = cs.x;
  return vec2(diff_of_products(v.x, c, v.y, s), diff_of_products(v.x, s, -v.y, c));
}

void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint n = p.token_begin + gl_GlobalInvocationID.y;
  uint b = p.batch_begin + gl_GlobalInvocationID.z;
  uint k0 = 2u * c4;
  if (k0 >= p.pairs_per_row || n >= p.token_end || b >= p.batch_end) {
    return;
  }
  bool second = k0 + 1u < p.pairs_per_row;
  uint row = b * p.n_tokens + n;
#ifdef STORAGE_BUFFER
  uint g = row * p.pairs_per_row + k0 - p.x_base;
  vec4 v;
  if (ALIGNED) {
    v = vec4(in_texels[g >> 1]);
  } else {
    v.xy = vec2(in_pairs[g]);
    v.zw = second ? vec2(in_pairs[g + 1u]) : vec2(0.0);
  }
#else
  ivec3 pos;
  if (p.image_height == p.n_tokens && p.image_width >= (p.pairs_per_row + 1u) / 2u) {
    pos = ivec3(int(c4), int(n), int(b));
  } else {
    uint parts = (p.pairs_per_row + 1u) / 2u;  // texels per row ...
    parts = (parts + p.image_width - 1u) / p.image_width;  // ... in image rows
    uint vrow = row * parts + c4 / p.image_width;
    pos = ivec3(int(c4 % p.image_width), int(vrow % p.image_height), int(vrow / p.image_height));
  }
  vec4 v = imageLoad(in_image, pos);
#endif
  int frow = freqs_row(n);
  if (frow >= 0) {
    uint fi = uint(frow) * p.pairs_per_row + k0 - p.f_base;
    if (ALIGNED) {
      vec4 cs = vec4(freqs4[fi >> 1]);
      v.xy = rotate_pair(v.xy, cs.xy);
      v.zw = rotate_pair(v.zw, cs.zw);
    } else {
      v.xy = rotate_pair(v.xy, vec2(freqs[fi]));
      if (second) {
        v.zw = rotate_pair(v.zw, vec2(freqs[fi + 1u]));
      }
    }
  }
#ifdef X_HALF
  v = round_to_half(v);
#endif
#ifdef STORAGE_BUFFER
  if (ALIGNED) {
    out_texels[g >> 1] = XVEC4(v);
  } else {
    out_pairs[g] = XVEC2(v.xy);
    if (second) {
      out_pairs[g + 1u] = XVEC2(v.zw);
    }
  }
#else
  imageStore(out_image, pos, v);
#endif
}

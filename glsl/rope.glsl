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
 * Indexing. One invocation writes one texel = 4 values = 2 pairs.
 *  - Buffer storage: texels are flat over the whole tensor (pairs 2t, 2t+1),
 *    so a row whose C % 4 == 2 may share a texel with the next row; each pair
 *    finds its own token. The buffers are padded to whole texels; a pair past
 *    the tensor is left untouched.
 *  - Texture storage: texel (c4, r) holds pairs 2*c4, 2*c4+1 of flat row r
 *    (rows = all leading axes x N); the last texel of a row is half full when
 *    C % 4 == 2. Rows fold over the image's y and z extents (y = r % height,
 *    z = r / height) so that more rows than maxImageDimension3D still fit.
 * The host may split one tensor into several dispatches (storage-buffer range
 * limits); the *_base push constants say where each binding starts, so all
 * indices below are global and then made binding-relative.
 */
#ifdef X_HALF
#extension GL_EXT_shader_16bit_storage : require
#elif defined(F_HALF)
#extension GL_EXT_shader_16bit_storage : require
#endif

layout(local_size_x_id = 0) in;

#ifdef X_HALF
#define XVEC4 f16vec4
#define IMAGE_FORMAT rgba16f
#else
#define XVEC4 vec4
#define IMAGE_FORMAT rgba32f
#endif

#ifdef F_HALF
#define FVEC2 f16vec2
#else
#define FVEC2 vec2
#endif

#ifdef STORAGE_BUFFER
layout(std430, set = 0, binding = 0) writeonly buffer OutTexels { XVEC4 out_texels[]; };
layout(std430, set = 0, binding = 1) readonly buffer InTexels { XVEC4 in_texels[]; };
#else
layout(set = 0, binding = 0, IMAGE_FORMAT) uniform writeonly image3D out_image;
layout(set = 0, binding = 1, IMAGE_FORMAT) uniform readonly image3D in_image;
#endif
layout(std430, set = 0, binding = 2) readonly buffer Freqs { FVEC2 freqs[]; };
layout(std430, set = 0, binding = 3) readonly buffer Positions { int positions[]; };

// Flags bits; the host (vkrope/op.py) sets them from the same names.
const uint FLAG_INVERSE = 1u;
const uint FLAG_POSITIONS = 2u;

layout(push_constant) uniform Params {
  uint texel_begin;    // first global texel of this dispatch
  uint texel_end;      // one past the last global texel of this dispatch
  uint x_base;         // global texel at which the x/out buffer bindings start
  uint f_base;         // global freqs pair at which the freqs binding starts
  uint total_pairs;    // pairs in the whole tensor (buffer storage)
  uint pairs_per_row;  // C / 2
  uint n_tokens;       // N
  uint n_rot;          // tokens that use row n % Nf (the rest pass through)
  uint n_freq_rows;    // Nf
  uint flags;          // FLAG_*
  uint image_height;   // rows per image z-slice (texture storage)
} p;

// a*b - c*d with one rounding error at most about 1.5 ulp of the result.
float diff_of_products(float a, float b, float c, float d) {
  precise float w = c * d;
  precise float e = fma(-c, d, w);
  precise float f = fma(a, b, -w);
  precise float r = f + e;
  return r;
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

// Freqs row of the token on flat row `row` (all leading axes x N); -1 = none.
int freqs_row(uint row) {
  uint n = row % p.n_tokens;
  if ((p.flags & FLAG_POSITIONS) != 0u) {
    return positions[n];
  }
  return n < p.n_rot ? int(n % p.n_freq_rows) : -1;
}

vec2 rotate_pair(vec2 v, uint row, uint k) {
  int frow = freqs_row(row);
  if (frow < 0) {
    return v;
  }
  vec2 cs = vec2(freqs[uint(frow) * p.pairs_per_row + k - p.f_base]);
  float s = (p.flags & FLAG_INVERSE) != 0u ? -cs.y : cs.y;
  float c = cs.x;
  return vec2(diff_of_products(v.x, c, v.y, s), diff_of_products(v.x, s, -v.y, c));
}

void main() {
  // 2D dispatch linearised: x alone is limited to 65535 groups on most devices.
  uint t = p.texel_begin + gl_GlobalInvocationID.x
      + gl_GlobalInvocationID.y * gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (t >= p.texel_end) {
    return;
  }
#ifdef STORAGE_BUFFER
  uint i = t - p.x_base;
  vec4 v = vec4(in_texels[i]);
  uint p0 = 2u * t;
  uint p1 = p0 + 1u;
  v.xy = rotate_pair(v.xy, p0 / p.pairs_per_row, p0 % p.pairs_per_row);
  if (p1 < p.total_pairs) {
    v.zw = rotate_pair(v.zw, p1 / p.pairs_per_row, p1 % p.pairs_per_row);
  }
#ifdef X_HALF
  v = round_to_half(v);
#endif
  out_texels[i] = XVEC4(v);
#else
  uint row_texels = (p.pairs_per_row + 1u) / 2u;
  uint row = t / row_texels;
  uint c4 = t % row_texels;
  ivec3 pos = ivec3(int(c4), int(row % p.image_height), int(row / p.image_height));
  vec4 v = imageLoad(in_image, pos);
  uint k0 = 2u * c4;
  v.xy = rotate_pair(v.xy, row, k0);
  if (k0 + 1u < p.pairs_per_row) {
    v.zw = rotate_pair(v.zw, row, k0 + 1u);
  }
#ifdef X_HALF
  v = round_to_half(v);
#endif
  imageStore(out_image, pos, v);
#endif
}

#version 450
/*
 * vkrope: interleaved ("complex-number") rotary position embedding, the
 * operator of vkrope/kernels/interleaved.py (SAM2 / EdgeTAM, ExecuTorch's
 * et_vk.apply_rotary_emb_interleaved).
 *
 * Compiled per variant of glsl/rope_interleaved.json by
 * scripts/compile_shaders.py, which defines:
 *   STORAGE_BUFFER or STORAGE_TEXTURE3D   where x and the output live
 *   X_HALF / X_BF16, F_HALF / F_BF16      16-bit tensors / table (common.glsl)
 *   FLAG_INVERSE, FLAG_POSITIONS          bits of p.flags (the .json's "flags")
 *
 * Bindings (set 0; the grid numbers them and gives their access):
 *   out        buffer of texels, or a width-packed 3D image
 *   x          buffer of texels, or a width-packed 3D image
 *   freqs      buffer of (cos, sin) pairs, flat [Nf, C/2]
 *   positions  buffer of int, one freqs row per token (-1: pass through)
 * out and x may be the same buffer / image: every invocation reads its own
 * texel before writing that texel, and no other invocation touches it.
 *
 * Math, per pair k of token n with (c, s) = freqs[row(n), k]:
 *   out[2k]   = x[2k] * c - x[2k+1] * s
 *   out[2k+1] = x[2k] * s + x[2k+1] * c
 * (s -> -s when FLAG_INVERSE is set). row(n) = positions[n - pos_base]
 * when FLAG_POSITIONS is set (the positions binding starts at token
 * pos_base, so it spans this dispatch's tokens only), else n % Nf for
 * n < n_rot and -1 (pass through) after.
 * Each a*c - b*s uses Kahan's fma form; 16-bit data is widened to float32
 * and rounded once to nearest-even (common.glsl). Buffer pass-through
 * texels are copied as raw bits (NaN payloads are kept).
 *
 * Indexing. One invocation per output texel: x = texel c4 of a row (pairs
 * 2*c4 and 2*c4+1; the last texel of a row holds one pair when C % 4 == 2).
 *  - Grid (texel, token, batch) when N fills the workgroup's y: y = token n,
 *    z = flat batch index b over all leading axes; no integer division.
 *  - Grid (texel, flat row) when FLAT_ROWS (short rows, N < workgroup y, e.g.
 *    [2M, 1, 2]): y = flat row b*N + n; one division finds n. Without it
 *    such shapes would run mostly idle workgroups.
 *  - Buffer storage: pair (b, n, k) is pair (b*N + n)*C/2 + k of the flat
 *    tensor. When C % 4 == 0 (ALIGNED) rows are whole texels and x and freqs
 *    move as vec4; otherwise as vec2 pairs, through aliased views.
 *  - Texture storage: texel (c4, y, z) of a width-packed image, extent
 *    (ceil(C/4), N, B) when that fits the device; otherwise flat rows fold
 *    over y and z, and a row wider than the image continues on the next
 *    image row(s).
 * The host may split one tensor into several dispatches (grid and binding
 * range limits); the push constants say which tokens (or flat rows) and
 * batches this dispatch covers and where each buffer binding starts, so the
 * indices below are global and then made binding-relative.
 */
#include "common.glsl"
#include "tensor.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;
// C % 4 == 0: every row is whole texels, x and out move as vec4.
layout(constant_id = 2) const bool ALIGNED = true;
// y indexes flat rows b*N + n (token_begin / token_end are rows then).
layout(constant_id = 3) const bool FLAT_ROWS = false;
// Some token n < n_rot has n >= Nf: rows repeat, row(n) = n % Nf. Without it
// row(n) = n and no integer division runs (lavapipe runs both sides of a
// select, and a division per lane costs as much as the rest of the kernel).
layout(constant_id = 4) const bool REPEAT = true;
// GENERATED: how the angle is formed (glsl/freqs.glsl's ANGLE_*) and whether
// rows are cells of an axial grid. Specialization constants, not flags: a CPU
// driver runs both sides of every branch, so a flag would pay for every mode.
layout(constant_id = 5) const int ANGLE = 0;
layout(constant_id = 6) const bool AXIAL = false;

// x and out move as raw bits (texels when ALIGNED, pairs when C % 4 == 2).
DECLARE_TENSOR(out)
DECLARE_TENSOR(x)
#ifdef GENERATED
// Frequencies computed here (glsl/freqs.glsl): freqs is the columns
// table, one column per pair. A token's row is its coordinate word (its
// position, or the bits of its float32 scaled position) or its index in an
// axial grid (AXIAL: x = row % axial_end_x, y = row / axial_end_x; the first
// C/4 columns turn by x, the rest by y).
#define FREQ_TABLE freqs
#include "freqs.glsl"
#else
layout(std430, set = 0, binding = BINDING_freqs) ACCESS_freqs buffer Freqs { FVEC2 freqs[]; };
layout(std430, set = 0, binding = BINDING_freqs) ACCESS_freqs buffer Freqs4 { FVEC4 freqs4[]; };
#endif
layout(std430, set = 0, binding = BINDING_positions) ACCESS_positions buffer Positions { int positions[]; };

#if !defined(FLAG_INVERSE) || !defined(FLAG_POSITIONS)
#error "compile with scripts/compile_shaders.py: it defines FLAG_INVERSE and FLAG_POSITIONS"
#endif

layout(push_constant) uniform Params {
  uint n_tokens;       // N
  uint pairs_per_row;  // C / 2
  uint token_begin;    // first token (FLAT_ROWS: flat row) of this dispatch
  uint token_end;      // one past its last
  uint batch_begin;    // first flat batch index of this dispatch
  uint batch_end;      // one past its last
  uint x_base;         // global pair at which the x / out buffer bindings start
  uint f_base;         // global freqs pair at which the freqs binding starts
  uint n_rot;          // tokens that use row n % Nf (the rest pass through)
  uint n_freq_rows;    // Nf
  uint flags;          // FLAG_*
  uint image_height;   // texture storage: image rows per z-slice
  uint image_width;    // texture storage: texels per image row
  uint pos_base;       // token at which the positions binding starts
  uint axial_end_x;    // GENERATED axial grids: tokens per grid row (0: 1-D positions)
  uint magnitude;      // GENERATED: float32 bits of the factor cos and sin are multiplied by
                       // (YaRN's attention factor; 1.0 otherwise). A push constant, not a
                       // specialization constant: a factor per call would build a pipeline each.
} p;

#ifdef GENERATED
// (cos, sin) of pair column k for the coordinate word w (glsl/freqs.glsl).
vec2 generated_cs(int w, float inv, uint k) {
  return freq_cs(ANGLE, false, k, p.pairs_per_row, inv, w, 0u, uintBitsToFloat(p.magnitude));
}

// An axial grid coordinate as the word freq_cs reads: itself for the exact
// angle, else the bits of it as a float32.
int grid_word(uint c) {
  return ANGLE == ANGLE_EXACT ? int(c) : floatBitsToInt(float(c));
}

// n / d for n < 2^24, d >= 1, without an integer division. n times the
// float reciprocal of d is within a few units of the quotient (Vulkan lets
// the reciprocal be 2.5 ulp off: 4 units for d = 1 near 2^24); the
// remainder's own quotient corrects it to within one, and a last step makes
// it exact (the remainder is then in [0, d)).
uint div_small(uint n, uint d) {
  float rcp = 1.0f / float(d);
  int q = int(float(n) * rcp);
  int r = int(n) - q * int(d);       // a few d at most: exact in float
  q += int(floor(float(r) * rcp));
  r = int(n) - q * int(d);
  q += r < 0 ? -1 : (r >= int(d) ? 1 : 0);
  return uint(q);
}
#endif

// Freqs row of token n; -1 = pass through.
int freqs_row(uint n) {
  if ((p.flags & FLAG_POSITIONS) != 0u) {
    return positions[n - p.pos_base];
  }
  if (n >= p.n_rot) {
    return -1;
  }
  return int(REPEAT ? n % p.n_freq_rows : n);
}

vec2 rotate_pair(vec2 v, vec2 cs) {
  float s = (p.flags & FLAG_INVERSE) != 0u ? -cs.y : cs.y;
  float c = cs.x;
  return vec2(diff_of_products(v.x, c, v.y, s), diff_of_products(v.x, s, -v.y, c));
}

void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint n, b, row;
  if (FLAT_ROWS) {
    row = p.token_begin + gl_GlobalInvocationID.y;
    if (row >= p.token_end) {
      return;
    }
    n = row % p.n_tokens;
    b = row / p.n_tokens;
  } else {
    n = p.token_begin + gl_GlobalInvocationID.y;
    b = p.batch_begin + gl_GlobalInvocationID.z;
    if (n >= p.token_end || b >= p.batch_end) {
      return;
    }
    row = b * p.n_tokens + n;
  }
  uint k0 = 2u * c4;
  if (k0 >= p.pairs_per_row) {
    return;
  }
  bool second = k0 + 1u < p.pairs_per_row;
  int frow = freqs_row(n);
#ifdef STORAGE_BUFFER
  uint g = row * p.pairs_per_row + k0 - p.x_base;
  // The texel as stored: a token that passes through gets it back bit for
  // bit (one load and one store either way: no branch around memory).
  XRAW2 raw0, raw1;
  vec4 v;
  if (ALIGNED) {
    XRAW4 raw = x_raw4[g >> 1];
    v = raw_to_vec4(raw);
#if defined(X_HALF) || defined(X_BF16)
    raw0 = raw.x;
    raw1 = raw.y;
#else
    raw0 = raw.xy;
    raw1 = raw.zw;
#endif
  } else {
    raw0 = x_raw2[g];
    raw1 = second ? x_raw2[g + 1u] : XRAW2(0u);
    v = vec4(raw_to_vec2(raw0), raw_to_vec2(raw1));
  }
#else
  ivec3 pos;
  if (!FLAT_ROWS && p.image_height == p.n_tokens && p.image_width >= (p.pairs_per_row + 1u) / 2u) {
    pos = ivec3(int(c4), int(n), int(b));
  } else {
    pos = image_texel(row, c4, (p.pairs_per_row + 1u) / 2u, p.image_width, p.image_height);
  }
  vec4 v = IMAGE_LOAD(x_image, pos);
#endif
  if (frow >= 0) {
#ifdef GENERATED
    // The coordinate word of each of the texel's two pairs, found once per texel.
    int w0 = frow, w1 = frow;
    if (AXIAL) {
      uint y = div_small(uint(frow), p.axial_end_x);
      uint x = uint(frow) - y * p.axial_end_x;
      // The grid's x columns come first, then y's (vkrope/ops/lowering.py):
      // arithmetic, not the column's axis word (a load per pair on a CPU driver).
      uint x_pairs = p.pairs_per_row / 2u;
      w0 = grid_word(k0 < x_pairs ? x : y);
      w1 = grid_word(k0 + 1u < x_pairs ? x : y);
    }
    vec2 inv = ANGLE == ANGLE_EXACT ? vec2(0.0) : freq_inv2[k0 >> 1];  // both pairs' frequencies, one load
    v.xy = rotate_pair(v.xy, generated_cs(w0, inv.x, k0));
    if (second) {
      v.zw = rotate_pair(v.zw, generated_cs(w1, inv.y, k0 + 1u));
    }
#else
    uint fi = uint(frow) * p.pairs_per_row + k0 - p.f_base;
    if (ALIGNED) {
      vec4 cs = f_vec4(freqs4[fi >> 1]);
      v.xy = rotate_pair(v.xy, cs.xy);
      v.zw = rotate_pair(v.zw, cs.zw);
    } else {
      v.xy = rotate_pair(v.xy, f_vec2(freqs[fi]));
      if (second) {
        v.zw = rotate_pair(v.zw, f_vec2(freqs[fi + 1u]));
      }
    }
#endif
  }
  v = round_to_x(v);
#ifdef STORAGE_BUFFER
  XRAW2 out0 = frow >= 0 ? vec2_to_raw(v.xy) : raw0;
  XRAW2 out1 = frow >= 0 ? vec2_to_raw(v.zw) : raw1;
  if (ALIGNED) {
    out_raw4[g >> 1] = XRAW4(out0, out1);
  } else {
    out_raw2[g] = out0;
    if (second) {
      out_raw2[g + 1u] = out1;
    }
  }
#else
  IMAGE_STORE(out_image, pos, v);
#endif
}

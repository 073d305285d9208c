#version 450
/*
 * vkrope: RoPE with separate cos / sin tables, interleaved or rotate-half
 * pairs and partial rotary, the kernel of vkrope/kernels/table.py (ONNX
 * RotaryEmbedding-23, ExecuTorch's et_vk.apply_rotary_emb and
 * apply_rotary_emb_hf, Hugging Face's apply_rotary_pos_emb).
 *
 * Compiled per variant of glsl/rope_table.json by scripts/compile_shaders.py,
 * which defines STORAGE_BUFFER or STORAGE_TEXTURE3D, X_HALF / X_BF16, F_HALF / F_BF16
 * (common.glsl) and the flag bit FLAG_FULL_TABLE.
 *
 * The tensor is a stack of rows of C values (its last axis), R rows in all;
 * each row holds C / D heads of D values (one head for [B, H, S, D] and
 * [B, S, H, D], H heads for [B, S, H*D]). Row r belongs to token
 * s = (r / token_rows) % S of batch item b = r / batch_rows (token_rows: H
 * for [B, S, H, D], else 1), and reads table row row_of[b*S + s].
 *
 * Bindings (set 0; the grid numbers them and gives their access):
 *   out      buffer of values, or a width-packed 3D image
 *   x        buffer of values, or a width-packed 3D image
 *   cos      buffer [table rows, table_width]
 *   sin      buffer [table rows, table_width]
 *   row_of   buffer of int: the table row of each (b, s)
 * out and x may be the same buffer / image only for interleaved pairs with
 * an even D (a pair then never straddles two texels, and an invocation
 * reads only its own); otherwise a partner may sit in a texel another
 * invocation writes, so the host never runs those in place.
 *
 * Math, for head-local channel j < rot of a rotated row, (c, s) from column
 * col of its table row:
 *   interleaved (INTERLEAVED): pair (2i, 2i+1), col = i = j / 2
 *     out[2i]   = x[2i] c - x[2i+1] s,   out[2i+1] = x[2i+1] c + x[2i] s
 *   rotate-half: pair (i, i + rot/2), col = i (FLAG_FULL_TABLE: col = j, the
 *     table holds all rot columns, as Hugging Face's cat(freqs, freqs))
 *     out[i]    = x[i] c - x[i+h] s,     out[i+h]  = x[i+h] c + x[i] s
 * GENERATED: (c, s) of column col computed here (glsl/freqs.glsl) from the
 * token's coordinate, or with ND from its coordinate on the column's axis
 * (N-D axial RoPE, vkrope.apply_nd; M-RoPE: position ids [3, B, S]).
 * Channels j >= rot pass through. Products use Kahan's fma form and float16 and
 * bfloat16 results are rounded once to nearest-even (common.glsl); a texel that only
 * passes through is copied as raw bits on buffers.
 *
 * Indexing: one invocation per output texel, grid (texel of a row, row of
 * this dispatch). Buffers are addressed by value index r*C + v (relative to
 * x_base where the binding starts); when C % 4 == 0 (ALIGNED) the own texel
 * moves as a vec4, else value by value. Images are width-packed like the
 * interleaved kernel's: image row r*parts + v/4/width, folded over y and z.
 */
#include "common.glsl"
#include "tensor.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;
// C % 4 == 0: a row is whole texels (buffer x and out move as vec4).
layout(constant_id = 2) const bool ALIGNED = true;
// D % 4 == 0 and rot % 8 == 0 (every LLM shape): a texel lies in one head
// and rotates or passes whole, a rotate-half partner is a whole texel rot/2
// away and its cos / sin are one vec4 each: no per-value loop.
layout(constant_id = 3) const bool WHOLE_TEXELS = false;
// Pairs (2i, 2i+1), else rotate-half; GENERATED: how the angle is formed
// (glsl/freqs.glsl's ANGLE_*). Specialization constants, not flags: a CPU
// driver (lavapipe) runs both sides of every branch, so a flag would pay for
// both layouts and every angle mode on every texel.
layout(constant_id = 4) const bool INTERLEAVED = false;
layout(constant_id = 5) const int ANGLE = 0;
// Several coordinates per token (GENERATED only: N-D axial RoPE, M-RoPE):
// row_of holds id_words words per token, the two words of its coordinate on
// each axis (glsl/freqs.glsl), and each column reads the axis its column
// word names; every token rotates.
layout(constant_id = 6) const bool ND = false;

DECLARE_TENSOR(out)
DECLARE_TENSOR(x)
#ifdef GENERATED
// Frequencies computed here (glsl/freqs.glsl): cos is the columns
// table, one column per cos / sin column (rot/2); sin is not read.
// Without ND, row_of holds each token's coordinate word (its position, or
// the bits of its float32 scaled position).
#define FREQ_TABLE cos
#include "freqs.glsl"
#else
layout(std430, set = 0, binding = BINDING_cos) ACCESS_cos buffer Cos { FSCALAR cos_table[]; };
layout(std430, set = 0, binding = BINDING_cos) ACCESS_cos buffer Cos4 { FVEC4 cos_table4[]; };
layout(std430, set = 0, binding = BINDING_sin) ACCESS_sin buffer Sin { FSCALAR sin_table[]; };
layout(std430, set = 0, binding = BINDING_sin) ACCESS_sin buffer Sin4 { FVEC4 sin_table4[]; };
#endif
layout(std430, set = 0, binding = BINDING_row_of) ACCESS_row_of buffer RowOf { int row_of[]; };

#ifndef FLAG_FULL_TABLE
#error "compile with scripts/compile_shaders.py: it defines FLAG_FULL_TABLE"
#endif

layout(push_constant) uniform Params {
  uint row_begin;       // first row of this dispatch
  uint row_end;         // one past its last
  uint row_values;      // C
  uint head_dim;        // D
  uint rot_half;        // rot / 2
  uint table_width;     // values per table row (rot/2, or rot with FLAG_FULL_TABLE)
  uint n_tokens;        // S
  uint batch_rows;      // rows per batch item (H * S for 4D x, S for [B, S, H*D])
  uint token_rows;      // consecutive rows of one token (H for [B, S, H, D], else 1)
  uint x_base;          // buffers: value index at which the x / out bindings start;
                        // images: the row that image row 0 holds
  uint t_base;          // table row at which the cos / sin bindings start
  uint idx_base;        // (b, s) index at which the row_of binding starts
  uint flags;           // FLAG_*
  uint image_height;    // texture storage: image rows per z-slice
  uint image_width;     // texture storage: texels per image row
  uint magnitude;       // GENERATED: float32 bits of the factor cos and sin are multiplied by
                        // (YaRN's attention factor; 1.0 otherwise). A push constant, not a
                        // specialization constant: a factor per call would build a pipeline each.
  uint id_words;        // ND: words of row_of per token (2 per axis)
} p;

#ifdef GENERATED
// (cos, sin) of column col (inverse frequency inv) for the coordinate word
// trow (ND: for the coordinates of token tok, its index in row_of's tokens,
// on the column's axis).
vec2 generated_cs(int trow, uint tok, uint col, float inv) {
  int w0 = trow;
  uint w1 = 0u;
  if (ND) {
    uint at = tok * p.id_words + 2u * freq_column(col, p.rot_half).w;
    w0 = row_of[at];
    w1 = uint(row_of[at + 1u]);
  }
  return freq_cs(ANGLE, ND, col, p.rot_half, inv, w0, w1, uintBitsToFloat(p.magnitude));
}
#endif

#ifdef STORAGE_TEXTURE3D
ivec3 texel_pos(uint r, uint c4) {
  return image_texel(r - p.x_base, c4, (p.row_values + 3u) / 4u, p.image_width, p.image_height);
}
#endif

// Value v of row r.
float load_value(uint r, uint v) {
#ifdef STORAGE_BUFFER
  return x_float(x_values[r * p.row_values + v - p.x_base]);
#else
  return IMAGE_LOAD(x_image, texel_pos(r, v >> 2))[v & 3u];
#endif
}

vec4 rotate4(vec4 x, vec4 c, vec4 partner, vec4 s) {
  return vec4(diff_of_products(x.x, c.x, partner.x, s.x), diff_of_products(x.y, c.y, partner.y, s.y),
              diff_of_products(x.z, c.z, partner.z, s.z), diff_of_products(x.w, c.w, partner.w, s.w));
}

vec4 load_texel(uint r, uint v0) {
#ifdef STORAGE_BUFFER
  return x_vec4(x_texels[(r * p.row_values + v0 - p.x_base) >> 2]);
#else
  return IMAGE_LOAD(x_image, texel_pos(r, v0 >> 2));
#endif
}

// WHOLE_TEXELS: the texel at value v0 of row r, table row trow (-1: none;
// ND: token tok's ids).
vec4 rotate_texel(uint r, uint v0, int trow, uint tok, vec4 x) {
  uint j0 = v0 % p.head_dim;
  if (trow < 0 || j0 >= 2u * p.rot_half) {
    return x;
  }
#ifdef GENERATED
  if (INTERLEAVED) {  // columns j0/2 and j0/2 + 1 (j0 % 4 == 0)
    vec2 inv = ANGLE == ANGLE_EXACT ? vec2(0.0) : freq_inv2[j0 >> 2];
    vec2 a = generated_cs(trow, tok, j0 >> 1, inv.x), b = generated_cs(trow, tok, (j0 >> 1) + 1u, inv.y);
    return rotate4(x, vec4(a.x, a.x, b.x, b.x), vec4(x.y, -x.x, x.w, -x.z), vec4(a.y, a.y, b.y, b.y));
  }
  bool first = j0 < p.rot_half;
  uint col = first ? j0 : j0 - p.rot_half;  // a multiple of 4
  vec4 inv = ANGLE == ANGLE_EXACT ? vec4(0.0) : freq_inv4[col >> 2];
  vec2 c0 = generated_cs(trow, tok, col, inv.x), c1 = generated_cs(trow, tok, col + 1u, inv.y);
  vec2 c2 = generated_cs(trow, tok, col + 2u, inv.z), c3 = generated_cs(trow, tok, col + 3u, inv.w);
  vec4 c = vec4(c0.x, c1.x, c2.x, c3.x);
  vec4 s = vec4(c0.y, c1.y, c2.y, c3.y);
#else
  uint tb = (uint(trow) - p.t_base) * p.table_width;
  if (INTERLEAVED) {
    uint i = tb + (j0 >> 1);  // pairs (x, y) and (z, w) use columns i and i + 1
    vec2 c01 = vec2(f_float(cos_table[i]), f_float(cos_table[i + 1u]));
    vec2 s01 = vec2(f_float(sin_table[i]), f_float(sin_table[i + 1u]));
    vec4 c = c01.xxyy;
    vec4 s = s01.xxyy;
    return rotate4(x, c, vec4(x.y, -x.x, x.w, -x.z), s);
  }
  bool first = j0 < p.rot_half;
  uint col = tb + ((p.flags & FLAG_FULL_TABLE) != 0u ? j0 : (first ? j0 : j0 - p.rot_half));
  vec4 c = f_vec4(cos_table4[col >> 2]);
  vec4 s = f_vec4(sin_table4[col >> 2]);
#endif
  vec4 partner = load_texel(r, first ? v0 + p.rot_half : v0 - p.rot_half);
  return rotate4(x, c, first ? partner : -partner, s);
}

void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint r = p.row_begin + gl_GlobalInvocationID.y;
  uint v0 = 4u * c4;
  if (r >= p.row_end || v0 >= p.row_values) {
    return;
  }
  uint lanes = min(4u, p.row_values - v0);
  uint bs = (r / p.batch_rows) * p.n_tokens + (r / p.token_rows) % p.n_tokens;
  uint tok = bs - p.idx_base;
  int trow = ND ? 0 : row_of[tok];  // (ND: every token rotates; its ids are read per column)
  if (WHOLE_TEXELS) {
#ifdef STORAGE_BUFFER
    uint gt = (r * p.row_values + v0 - p.x_base) >> 2;
    if (trow < 0 || v0 % p.head_dim >= 2u * p.rot_half) {
      out_texels[gt] = x_texels[gt];  // pass through, bit for bit
      return;
    }
    vec4 y = rotate_texel(r, v0, trow, tok, x_vec4(x_texels[gt]));
    y = round_to_x(y);
    out_texels[gt] = to_x_vec4(y);
#else
    ivec3 tpos = texel_pos(r, c4);
    vec4 y = rotate_texel(r, v0, trow, tok, IMAGE_LOAD(x_image, tpos));
    y = round_to_x(y);
    IMAGE_STORE(out_image, tpos, y);
#endif
    return;
  }
  uint rot = 2u * p.rot_half;
  // Does any lane of this texel rotate?
  bool rotates = false;
  if (trow >= 0) {
    for (uint l = 0u; l < lanes; ++l) {
      rotates = rotates || ((v0 + l) % p.head_dim < rot);
    }
  }
#ifdef STORAGE_BUFFER
  uint g = r * p.row_values + v0 - p.x_base;
  if (!rotates) {  // pass through, bit for bit
    if (ALIGNED) {
      out_texels[g >> 2] = x_texels[g >> 2];
    } else {
      for (uint l = 0u; l < lanes; ++l) {
        out_values[g + l] = x_values[g + l];
      }
    }
    return;
  }
  vec4 x = vec4(0.0);
  if (ALIGNED) {
    x = x_vec4(x_texels[g >> 2]);
  } else {
    for (uint l = 0u; l < lanes; ++l) {
      x[l] = x_float(x_values[g + l]);
    }
  }
#else
  ivec3 pos = texel_pos(r, c4);
  vec4 x = IMAGE_LOAD(x_image, pos);
#endif
  vec4 y = x;
  uint passing = 0u;  // lanes that pass through (copied as raw bits on buffers)
  if (rotates) {
    bool interleaved = INTERLEAVED;
    bool full = (p.flags & FLAG_FULL_TABLE) != 0u;
    uint t0 = uint(trow) - p.t_base;
    for (uint l = 0u; l < lanes; ++l) {
      uint v = v0 + l;
      uint j = v % p.head_dim;
      if (j >= rot) {
        passing |= 1u << l;
        continue;
      }
      bool first;
      uint i, pj;
      rope_pair(j, p.rot_half, interleaved, first, i, pj);
      uint pv = v - j + pj;  // the partner's value index in the row
      // The partner shares this texel (interleaved pairs with an even D
      // always do), or is read from its own.
      float partner = (pv >= v0 && pv < v0 + 4u) ? x[pv - v0] : load_value(r, pv);
      uint col = full ? j : i;
#ifdef GENERATED
      vec2 cs = generated_cs(trow, tok, col, ANGLE == ANGLE_EXACT ? 0.0 : freq_inv[col]);
      float c = cs.x;
      float s = cs.y;
#else
      float c = f_float(cos_table[t0 * p.table_width + col]);
      float s = f_float(sin_table[t0 * p.table_width + col]);
#endif
      // first: x c - partner s; second: x c + partner s
      y[l] = diff_of_products(x[l], c, first ? partner : -partner, s);
    }
  }
  y = round_to_x(y);
#ifdef STORAGE_BUFFER
  if (ALIGNED && passing == 0u) {
    out_texels[g >> 2] = to_x_vec4(y);
  } else {
    for (uint l = 0u; l < lanes; ++l) {
      if ((passing & (1u << l)) != 0u) {
        out_values[g + l] = x_values[g + l];
      } else {
        out_values[g + l] = to_x_scalar(y[l]);
      }
    }
  }
#else
  IMAGE_STORE(out_image, pos, y);
#endif
}

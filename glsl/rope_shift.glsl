#version 450
/*
 * vkrope: the context shift of a KV cache (`vkrope.shift_cache`, the kernel
 * of vkrope/kernels/shift.py): each named token's cached key, rotated at
 * its old position, rotated again to its new one (llama.cpp's K-shift,
 * StreamingLLM's attention sinks), and where its row moves (a contiguous
 * cache whose row is the position) its key and value moved there.
 *
 * Compiled per variant of glsl/rope_shift.json by scripts/compile_shaders.py,
 * which defines C_HALF / C_BF16 / C_E4M3 / C_E5M2 (the caches; none:
 * float32). An fp8 cache's scale cancels: the key it holds is the rotated
 * key divided by the scale, and a rotation commutes with that division, so
 * the stored values are rotated as they are and rounded once (glsl/fp8.glsl,
 * scale 1); the host takes fp8 caches with D a multiple of 4, so a texel is
 * one word.
 *
 * Bindings (set 0; the grid numbers them and gives their access), all buffers:
 *   k_cache  rows of D values (read, then written in place)
 *   v_cache  rows of D values (moved rows only; move_v 0: not read)
 *   k_tmp    float32 [n_tokens * Hk, D]: the rotated keys
 *   v_tmp    [n_tokens * Hk, D] of the cache's type: the values
 *   freqs    the columns table of glsl/freqs.glsl
 *   tokens   ivec4 per token: (the cache row of its head 0 now,
 *                       the row it goes to, its old coordinate word, its
 *                       new one); head h is head_stride rows further
 *
 * Two launches (role), so that no invocation reads what another writes
 * (a rotate-half partner lies in another texel; a moved row may be one
 * another token reads): ROLE_GATHER rotates each token's key row into k_tmp
 * (and copies its value row into v_tmp), ROLE_SCATTER writes them to the
 * rows they go to, rounded once to the cache's type (values as their bits).
 * One invocation per texel of a (token, head) row: grid (texel c4, token *
 * Hk + head). A cache past one binding is bound in fixed slices
 * [cache_base, cache_end) (values), one launch of each role per slice, every
 * gather before any scatter; a launch touches only the rows of its slice.
 *
 * Math for head-local channel j < rot, (c, s) the rotation by the angle of
 * the new coordinate less that of the old one:
 *   ANGLE_EXACT: (new - old) times the column's float64 frequency, reduced
 *     exactly (the difference of exact angles, exactly);
 *   float32 angles: a_new - a_old, both fl32(t * inv) as the frameworks form
 *     them, taken exactly as a float pair and reduced exactly.
 *   INTERLEAVED: pair (2i, 2i+1), column i; else rotate-half (i, i + rot/2):
 *     out = x c - partner s (first of its pair), x c + partner s (second).
 * No magnitude: the cached key already carries the spec's factor (YaRN's),
 * and a rotation keeps it. Channels j >= rot move as they are.
 */
#include "common.glsl"
#include "tensor.glsl"
#define GENERATED
#define FREQ_TABLE freqs
#include "freqs.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const bool INTERLEAVED = false;
layout(constant_id = 3) const int ANGLE = 0;

DECLARE_BUFFER_TENSOR(CSCALAR, k_cache)
DECLARE_BUFFER_TENSOR(CSCALAR, v_cache)
DECLARE_BUFFER_TENSOR(float, k_tmp)
DECLARE_BUFFER_TENSOR(CSCALAR, v_tmp)
layout(std430, set = 0, binding = BINDING_tokens) ACCESS_tokens buffer Tokens { ivec4 tokens[]; };

const uint ROLE_GATHER = 0u;
const uint ROLE_SCATTER = 1u;

layout(push_constant) uniform Params {
  uint role;         // ROLE_*
  uint n_tokens;     // tokens named in this call
  uint hk;           // heads per token
  uint head_dim;     // D
  uint rot_half;     // rot / 2
  uint head_stride;  // cache rows between head h and h + 1 of one token
  uint move_v;       // 1: value rows move with their keys
  uint cache_base;   // the value at which the cache bindings start (this launch's slice)
  uint cache_end;    // one past the slice's last value
} p;

// (cos, sin) of the rotation from coordinate word w_old to w_new, column col.
vec2 shift_cs(uint col, int w_old, int w_new) {
  if (ANGLE == ANGLE_EXACT) {  // positions below 2^24: the difference is exact
    return freq_cs(ANGLE_EXACT, true, col, p.rot_half, 0.0, w_new - w_old, 0u, 1.0);
  }
  float inv = freq_inv[col];
  precise float a_new = intBitsToFloat(w_new) * inv;  // each rounded once, as fl32(t * inv)
  precise float a_old = intBitsToFloat(w_old) * inv;
  precise float hi = a_new - a_old;  // hi + lo == a_new - a_old exactly (two-sum)
  precise float bb = hi - a_new;
  precise float lo = (a_new - (hi - bb)) + (-a_old - bb);
  return trig_cos_sin_quarters(trig_add128(trig_quarter_turns128(hi), trig_quarter_turns128(lo)).xyz);
}

void main() {
  uint v0 = 4u * gl_GlobalInvocationID.x;
  uint r = gl_GlobalInvocationID.y;  // token * Hk + head
  if (r >= p.n_tokens * p.hk || v0 >= p.head_dim) {
    return;
  }
  ivec4 tok = tokens[r / p.hk];
  uint h = r % p.hk;
  uint lanes = min(4u, p.head_dim - v0);
  uint tmp = r * p.head_dim;
  if (p.role == ROLE_SCATTER) {
    uint dst = (uint(tok.y) + h * p.head_stride) * p.head_dim;
    if (dst < p.cache_base || dst >= p.cache_end) {
      return;  // another slice's row
    }
    dst -= p.cache_base;
#ifdef C_FP8  // k_tmp holds values exact in the format; a word is a texel
    uint t = tmp + v0;
    k_cache_values[(dst + v0) >> 2] = fp8_pack4(vec4(k_tmp_values[t], k_tmp_values[t + 1u], k_tmp_values[t + 2u],
                                                     k_tmp_values[t + 3u]));
    if (p.move_v != 0u) {
      v_cache_values[(dst + v0) >> 2] = v_tmp_values[t >> 2];
    }
#else
    for (uint l = 0u; l < lanes; ++l) {
      k_cache_values[dst + v0 + l] = to_c_scalar(k_tmp_values[tmp + v0 + l]);
      if (p.move_v != 0u) {
        v_cache_values[dst + v0 + l] = v_tmp_values[tmp + v0 + l];
      }
    }
#endif
    return;
  }
  uint src = (uint(tok.x) + h * p.head_stride) * p.head_dim;
  if (src < p.cache_base || src >= p.cache_end) {
    return;  // another slice's row
  }
  src -= p.cache_base;
  uint rot = 2u * p.rot_half;
  for (uint l = 0u; l < lanes; ++l) {
    uint j = v0 + l;
    float xj = c_load(k_cache_values, src + j);
    float y = xj;
    if (j < rot) {
      bool first;
      uint i, pj;
      rope_pair(j, p.rot_half, INTERLEAVED, first, i, pj);
      float partner = c_load(k_cache_values, src + pj);
      partner = first ? partner : -partner;  // (rotate-half's second channel pairs with the negated first)
      vec2 cs = shift_cs(i, tok.z, tok.w);
#ifdef C_FP8
      y = fp8_quantize(xj, cs.x, partner, cs.y, 1.0);
#elif defined(C_HALF)
      y = exact_rounded(xj, cs.x, partner, cs.y, HALF_HI, TO_HALF);  // (the exact value's one rounding)
#elif defined(C_BF16)
      y = exact_rounded(xj, cs.x, partner, cs.y, BF16_HI, TO_BF16);
#else
      y = diff_of_products(xj, cs.x, partner, cs.y);
#endif
    }
    k_tmp_values[tmp + j] = y;
#ifndef C_FP8
    if (p.move_v != 0u) {
      v_tmp_values[tmp + j] = v_cache_values[src + j];
    }
#endif
  }
#ifdef C_FP8
  if (p.move_v != 0u) {
    v_tmp_values[(tmp + v0) >> 2] = v_cache_values[(src + v0) >> 2];
  }
#endif
}

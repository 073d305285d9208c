#version 450
/*
 * vkrope: the decode step in one submission, the kernel of
 * vkrope/kernels/cache.py (`vkrope.rope_and_cache`): q and k RMS-normalised per
 * head (optional), rotated, the rotated k and the given v written into KV
 * caches at each token's row, the rotated q returned. What llama.cpp's
 * Vulkan backend fuses as RMS_NORM + MUL + ROPE + SET_ROWS and vLLM as
 * fused_qknorm_rope_cache.
 *
 * Compiled per variant of glsl/rope_cache.json by scripts/compile_shaders.py,
 * which defines X_HALF / X_BF16 (q, k, v and q_out: common.glsl), C_HALF /
 * C_BF16 / C_E4M3 / C_E5M2 (the caches; none: float32) and GENERATED (frequencies computed
 * here, glsl/freqs.glsl, from a spec: cos is its columns table, one
 * column per cos / sin column, sin is not read, and each token's
 * tokens.x is its coordinate word instead of a cos / sin row).
 *
 * Bindings (set 0; the grid numbers them and gives their access), all buffers:
 *   q_out    [B, Hq, S, D]
 *   q        [B, Hq, S, D]
 *   k        [B, Hk, S, D]
 *   v        [B, Hk, S, D]
 *   k_cache  rows of D values (read and written: rows not named stay)
 *   v_cache  rows of D values
 *   cos      float32 [table rows, rot/2] (GENERATED: the columns table)
 *   sin      float32 [table rows, rot/2] (GENERATED: not read)
 *   tokens   ivec2 per token t = b*S + s: (its cos / sin row, or
 *                       GENERATED its coordinate word; the cache row of its
 *                       head 0, -1: not written)
 *   weights  float32 [2, D]: q's RMSNorm weights, then k's
 *
 * Launches per role (role: ROLE_Q, ROLE_K, ROLE_V), each over a run of
 * rows whose bindings fit the device (the push constants say where each
 * binding starts), one invocation per texel of a head row: grid (texel c4
 * of the row, row r = (b*H + h)*S + s of this dispatch).
 * Math for head-local channel j (x widened to float32):
 *   (c, s) of column i: its table row's, or GENERATED freq_cs of the token's
 *   word times magnitude (YaRN's attention factor; 1.0 otherwise)
 *   NORM:   x_j <- x_j / sqrt(mean_j(x_j^2) + eps) * (w_j + weight_add)
 *           (weight_add 1.0: Gemma's (1 + w); 0.0: Qwen3's w; per head, not OLMo-2's over all heads)
 *   j < rot, INTERLEAVED: pair (2i, 2i+1), column i = j / 2
 *     out[2i] = x[2i] c - x[2i+1] s,  out[2i+1] = x[2i+1] c + x[2i] s
 *   j < rot, rotate-half: pair (i, i + rot/2), column i
 *     out[i] = x[i] c - x[i+h] s,     out[i+h] = x[i+h] c + x[i] s
 *   j >= rot: out = x (normalised when NORM)
 * ROLE_Q writes q_out (rounded once to q's dtype), ROLE_K the k cache row
 * tokens[t].y + h * head_stride, ROLE_V the v cache row (v as it is), each
 * rounded once to the cache's dtype. Products use common.glsl's
 * diff_of_products (exact products for bfloat16 against float32 cos / sin);
 * into an fp8 cache, k and v go through glsl/fp8.glsl's fp8_quantize
 * instead: the exact value divided by the role's scale (k_scale, v_scale),
 * rounded once (`rotated`, `passed`).
 * No invocation reads what another writes: q_out never overlaps q (the
 * host checks), and the host refuses two tokens on one cache row.
 */
#define STORAGE_BUFFER
#include "common.glsl"
#include "tensor.glsl"


layout(local_size_x_id = 0, local_size_y_id = 1) in;
// Pairs (2i, 2i+1), else rotate-half. RMSNorm before the rotation (a
// specialization constant: a CPU driver runs both sides of a branch).
layout(constant_id = 2) const bool INTERLEAVED = false;
layout(constant_id = 3) const bool NORM = false;
// D % 4 == 0 and rot a multiple of 8 (rotate-half) or 4 (pairs), every LLM
// shape: a texel rotates or passes whole, a rotate-half partner is a whole
// texel rot/2 away, and tensors, caches, tables and weights move as vec4.
layout(constant_id = 4) const bool WHOLE_TEXELS = false;

DECLARE_TENSOR(q_out)
DECLARE_TENSOR(q)
DECLARE_TENSOR(k)
DECLARE_TENSOR(v)
DECLARE_BUFFER_TENSOR(CSCALAR, k_cache)
DECLARE_BUFFER_TENSOR(CSCALAR, v_cache)
layout(std430, set = 0, binding = BINDING_k_cache) ACCESS_k_cache buffer KCache4 { CVEC4 k_cache_texels[]; };
layout(std430, set = 0, binding = BINDING_v_cache) ACCESS_v_cache buffer VCache4 { CVEC4 v_cache_texels[]; };
// GENERATED: how the angle is formed (glsl/freqs.glsl's ANGLE_*).
layout(constant_id = 5) const int ANGLE = 0;
#ifdef GENERATED
#define FREQ_TABLE cos
#include "freqs.glsl"
#else
layout(std430, set = 0, binding = BINDING_cos) ACCESS_cos buffer Cos { float cos_table[]; };
layout(std430, set = 0, binding = BINDING_cos) ACCESS_cos buffer Cos2 { vec2 cos2[]; };
layout(std430, set = 0, binding = BINDING_cos) ACCESS_cos buffer Cos4 { vec4 cos4[]; };
layout(std430, set = 0, binding = BINDING_sin) ACCESS_sin buffer Sin { float sin_table[]; };
layout(std430, set = 0, binding = BINDING_sin) ACCESS_sin buffer Sin2 { vec2 sin2[]; };
layout(std430, set = 0, binding = BINDING_sin) ACCESS_sin buffer Sin4 { vec4 sin4[]; };
#endif
layout(std430, set = 0, binding = BINDING_tokens) ACCESS_tokens buffer Tokens { ivec2 tokens[]; };
layout(std430, set = 0, binding = BINDING_weights) ACCESS_weights buffer Weights { float weights[]; };
layout(std430, set = 0, binding = BINDING_weights) ACCESS_weights buffer Weights4 { vec4 weights4[]; };

const uint ROLE_Q = 0u;
const uint ROLE_K = 1u;
const uint ROLE_V = 2u;
const uint ROLE_ALL = 3u;  // one launch for all three: rows of q, then of k, then of v

layout(push_constant) uniform Params {
  uint role;         // ROLE_* (ROLE_ALL: the row says)
  uint q_rows;       // ROLE_ALL: B * Hq * S (rows of q come first)
  uint k_rows;       // ROLE_ALL: B * Hk * S (then k's, then v's)
  uint row_begin;    // first row of this dispatch (rows of this role: (b*H + h)*S + s)
  uint row_end;      // one past its last
  uint hq;           // Hq
  uint hk;           // Hk
  uint n_tokens;     // S
  uint head_dim;     // D
  uint rot_half;     // rot / 2
  uint head_stride;  // cache rows between head h and h + 1 of one token
  uint x_base;       // value at which the q / k / v / q_out bindings start
  uint cache_base;   // value at which the cache bindings start (the slice this dispatch writes)
  uint cache_end;    // one past the slice's last value
  uint tok_base;     // token at which the tokens binding starts
  uint t_base;       // cos / sin row at which those bindings start
  uint eps;          // NORM: float32 bits of eps
  uint weight_add;   // NORM: float32 bits added to each weight (1.0 for Gemma's 1 + w)
  uint magnitude;    // GENERATED: float32 bits of the factor cos and sin are multiplied by
  uint k_scale;      // fp8 caches: float32 bits of the scale k values are divided by
  uint v_scale;      // (and v values)
} p;

uint role;  // this invocation's: role, or from its row with ROLE_ALL

float load_x(uint r, uint j) {
  uint i = r * p.head_dim + j - p.x_base;
  if (role == ROLE_Q) {
    return x_float(q_values[i]);
  }
  return role == ROLE_K ? x_float(k_values[i]) : x_float(v_values[i]);
}

// WHOLE_TEXELS: texel t of the role's tensor (t counted from x_base / 4).
vec4 load_x4(uint t) {
  if (role == ROLE_Q) {
    return x_vec4(q_texels[t]);
  }
  return role == ROLE_K ? x_vec4(k_texels[t]) : x_vec4(v_texels[t]);
}

// A k value x*c - partner*s as q_out / a float cache takes it (rounded by
// the store); for an fp8 cache (ROLE_K) already its one rounding, scaled.
float rotated(float x, float c, float partner, float s) {
#ifdef C_FP8
  if (role == ROLE_K) {
    return fp8_quantize(x, c, partner, s, uintBitsToFloat(p.k_scale));
  }
#endif
  if (role == ROLE_K) {
#if defined(X_BF16) || defined(X_HALF)  // (16-bit k: the exact value, rounded once to the cache's dtype)
#ifdef X_BF16
    const uint hi = BF16_HI;
#else
    const uint hi = HALF_HI;
#endif
#if defined(C_HALF)
    float y = exact_rounded(x, c, partner, s, hi, TO_HALF);
#elif defined(C_BF16)
    float y = exact_rounded(x, c, partner, s, hi, TO_BF16);
#else
    float y = exact_rounded(x, c, partner, s, hi, TO_F32);
#endif
#else
    float y = diff_of_products(x, c, partner, s);
#endif
    return c_value(y, x, c, partner, s);
  }
  return diff_of_products(x, c, partner, s);
}

// A value a k row passes through (or a v value) as its cache takes it: as
// it is, or (fp8) divided by the role's scale and rounded once.
float passed(float x, uint r) {
#ifdef C_FP8
  return fp8_quantize(x, 1.0, 0.0, 0.0, uintBitsToFloat(r == ROLE_K ? p.k_scale : p.v_scale));
#else
  return x;
#endif
}

vec4 passed4(vec4 x, uint r) {
  return vec4(passed(x.x, r), passed(x.y, r), passed(x.z, r), passed(x.w, r));
}

// NORM: the sum of the squares of x * k over row r (its first texel at base: WHOLE_TEXELS), compensated, four
// squares a step (lavapipe's llvmpipe stops a shader's loops silently past 65535 iterations in all: a head of
// 2^16 took 2^16 here).
float sum_of_squares(uint r, uint base, float k) {
  float sum = 0.0, err = 0.0;
  if (WHOLE_TEXELS) {
    for (uint t = 0u; t < p.head_dim >> 2; ++t) {
      vec4 xt = load_x4(base + t) * k;
      add_compensated(sum, err, dot(xt, xt));
    }
    return sum + err;
  }
  uint j = 0u;
  for (; j + 4u <= p.head_dim; j += 4u) {
    vec4 xs = vec4(load_x(r, j), load_x(r, j + 1u), load_x(r, j + 2u), load_x(r, j + 3u)) * k;
    add_compensated(sum, err, dot(xs, xs));
  }
  for (; j < p.head_dim; ++j) {
    float xj = load_x(r, j) * k;
    add_compensated(sum, err, xj * xj);
  }
  return sum + err;
}

// NORM: (k, n) with (x * n) * k row r's x over sqrt(mean(x^2) + eps), then times its weight as torch orders it
// (x * k first made the small values of a huge row float32 subnormals, which kept fewer bits; n * w first
// overflowed for a large weight where x * n * w does not). k is 1 but where the sum of the squares
// passes float32's range while the float64 one may not: then 2^-80 (the largest float32 times it, squared,
// 2^16 times, stays below float32's maximum), its squares summed again, as float64 arithmetic keeps such a row
// (a sum of 1e20 squared was infinite and the row 0). An inf in x is infinite again: x * rsqrt(inf).
vec2 norm_factors(uint r, uint base) {
  float k = 1.0;
  float eps = uintBitsToFloat(p.eps);
  float sum = sum_of_squares(r, base, k);
  if (nonfinite(sum) && !nan_bits(sum)) {
    k = uintBitsToFloat(0x17800000u);  // 2^-80
    eps = eps * k * k;  // (k * k is below float32's range: two steps)
    sum = sum_of_squares(r, base, k);
  }
  return vec2(k, inversesqrt(sum / float(p.head_dim) + eps));
}

vec4 rotate4(vec4 x, vec4 c, vec4 partner, vec4 s) {
  return vec4(rotated(x.x, c.x, partner.x, s.x), rotated(x.y, c.y, partner.y, s.y),
              rotated(x.z, c.z, partner.z, s.z), rotated(x.w, c.w, partner.w, s.w));
}

#ifdef GENERATED
// (cos, sin) of column col for the token's coordinate word w.
vec2 generated_cs(int w, uint col, float inv) {
  return freq_cs(ANGLE, false, col, p.rot_half, inv, w, 0u, uintBitsToFloat(p.magnitude));
}
#endif

// WHOLE_TEXELS: the texel at v0 of row r (q or k), normalised and rotated
// by the (cos, sin) row t0 / rot_half (GENERATED: at coordinate word w).
vec4 rotated_texel(uint r, uint v0, uint t0, int w) {
  uint base = (r * p.head_dim - p.x_base) >> 2;  // the row's first texel
  vec4 x = load_x4(base + (v0 >> 2));
  vec2 norm = vec2(1.0);
  uint w0 = role == ROLE_Q ? 0u : p.head_dim >> 2;
  vec4 add = vec4(uintBitsToFloat(p.weight_add));
  if (NORM) {
    norm = norm_factors(r, base);
    x = ((x * norm.y) * norm.x) * (weights4[w0 + (v0 >> 2)] + add);
  }
  uint rot = 2u * p.rot_half;
  if (v0 >= rot) {
    return role == ROLE_K ? passed4(x, ROLE_K) : x;
  }
  if (INTERLEAVED) {  // pairs (x, y) and (z, w): columns v0/2 and v0/2 + 1
#ifdef GENERATED
    vec2 inv = ANGLE == ANGLE_EXACT ? vec2(0.0) : freq_inv2[v0 >> 2];
    vec2 a = generated_cs(w, v0 >> 1, inv.x), b = generated_cs(w, (v0 >> 1) + 1u, inv.y);
    vec2 c = vec2(a.x, b.x), sn = vec2(a.y, b.y);
#else
    uint i = (t0 + (v0 >> 1)) >> 1;
    vec2 c = cos2[i], sn = sin2[i];
#endif
    return rotate4(x, c.xxyy, vec4(x.y, -x.x, x.w, -x.z), sn.xxyy);
  }
  bool first = v0 < p.rot_half;
  uint pv = first ? v0 + p.rot_half : v0 - p.rot_half;
  vec4 partner = load_x4(base + (pv >> 2));
  if (NORM) {
    partner = ((partner * norm.y) * norm.x) * (weights4[w0 + (pv >> 2)] + add);
  }
#ifdef GENERATED
  uint col = first ? v0 : pv;  // a multiple of 4
  vec4 inv = ANGLE == ANGLE_EXACT ? vec4(0.0) : freq_inv4[col >> 2];
  vec2 c0 = generated_cs(w, col, inv.x), c1 = generated_cs(w, col + 1u, inv.y);
  vec2 c2 = generated_cs(w, col + 2u, inv.z), c3 = generated_cs(w, col + 3u, inv.w);
  return rotate4(x, vec4(c0.x, c1.x, c2.x, c3.x), first ? partner : -partner, vec4(c0.y, c1.y, c2.y, c3.y));
#else
  uint col = (t0 + (first ? v0 : pv)) >> 2;
  return rotate4(x, cos4[col], first ? partner : -partner, sin4[col]);
#endif
}

void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint r = p.row_begin + gl_GlobalInvocationID.y;
  uint v0 = 4u * c4;
  if (r >= p.row_end || v0 >= p.head_dim) {
    return;
  }
  role = p.role;
  if (role == ROLE_ALL) {
    if (r < p.q_rows) {
      role = ROLE_Q;
    } else if (r < p.q_rows + p.k_rows) {
      role = ROLE_K;
      r -= p.q_rows;
    } else {
      role = ROLE_V;
      r -= p.q_rows + p.k_rows;
    }
  }
  uint heads = role == ROLE_Q ? p.hq : p.hk;
  uint lanes = min(4u, p.head_dim - v0);
  uint s = r % p.n_tokens;
  uint h = (r / p.n_tokens) % heads;
  uint b = r / (p.n_tokens * heads);
  ivec2 tok = tokens[b * p.n_tokens + s - p.tok_base];
#ifdef GENERATED
  uint t0 = 0u;
#else
  uint t0 = (uint(tok.x) - p.t_base) * p.rot_half;
#endif
  uint row = uint(tok.y) + h * p.head_stride;  // (k and v) the cache row
  if (role != ROLE_Q && (tok.y < 0 || row * p.head_dim < p.cache_base || row * p.head_dim >= p.cache_end)) {
    return;  // this token writes no cache row, or one outside this dispatch's slice
  }
  if (WHOLE_TEXELS) {
    vec4 y = role == ROLE_V ? passed4(load_x4((r * p.head_dim + v0 - p.x_base) >> 2), ROLE_V)
                              : rotated_texel(r, v0, t0, tok.x);
    if (role == ROLE_Q) {
      q_out_texels[(r * p.head_dim + v0 - p.x_base) >> 2] = to_x_vec4(round_to_x(y));
    } else if (role == ROLE_K) {
      k_cache_texels[(row * p.head_dim + v0 - p.cache_base) >> 2] = to_c_vec4(y);
    } else {
      v_cache_texels[(row * p.head_dim + v0 - p.cache_base) >> 2] = to_c_vec4(y);
    }
    return;
  }
  vec4 y = vec4(0.0);
  if (role == ROLE_V) {
    for (uint l = 0u; l < lanes; ++l) {
      y[l] = passed(load_x(r, v0 + l), ROLE_V);
    }
  } else {
    vec2 norm = vec2(1.0);
    uint w0 = 0u;
    if (NORM) {
      norm = norm_factors(r, 0u);
      w0 = role == ROLE_Q ? 0u : p.head_dim;
    }
    uint rot = 2u * p.rot_half;
    for (uint l = 0u; l < lanes; ++l) {
      uint j = v0 + l;
      float xj = load_x(r, j);
      if (NORM) {
        xj = ((xj * norm.y) * norm.x) * (weights[w0 + j] + uintBitsToFloat(p.weight_add));
      }
      if (j >= rot) {
        y[l] = role == ROLE_K ? passed(xj, ROLE_K) : xj;
        continue;
      }
      bool first;
      uint i, pj;
      rope_pair(j, p.rot_half, INTERLEAVED, first, i, pj);
      float partner = load_x(r, pj);
      if (NORM) {
        partner = ((partner * norm.y) * norm.x) * (weights[w0 + pj] + uintBitsToFloat(p.weight_add));
      }
#ifdef GENERATED
      vec2 cs = generated_cs(tok.x, i, ANGLE == ANGLE_EXACT ? 0.0 : freq_inv[i]);
      float c = cs.x;
      float sn = cs.y;
#else
      float c = cos_table[t0 + i];
      float sn = sin_table[t0 + i];
#endif
      // first: x c - partner s; second: x c + partner s
      y[l] = rotated(xj, c, first ? partner : -partner, sn);
    }
  }
  if (role == ROLE_Q) {
    y = round_to_x(y);
    uint g = r * p.head_dim + v0 - p.x_base;
    for (uint l = 0u; l < lanes; ++l) {
      q_out_values[g + l] = to_x_scalar(y[l]);
    }
    return;
  }
  uint g = row * p.head_dim + v0 - p.cache_base;
#ifdef C_FP8
  // (the host takes fp8 caches with D a multiple of 4: the texel is one whole word)
  if (role == ROLE_K) {
    k_cache_values[g >> 2] = fp8_pack4(y);
  } else {
    v_cache_values[g >> 2] = fp8_pack4(y);
  }
#else
  for (uint l = 0u; l < lanes; ++l) {
    if (role == ROLE_K) {
      k_cache_values[g + l] = to_c_scalar(y[l]);
    } else {
      v_cache_values[g + l] = to_c_scalar(y[l]);
    }
  }
#endif
}

#version 450
/*
 * vkrope: the decode step in one submission, the kernel of
 * vkrope/ops/cache.py (`vkrope.rope_and_cache`): q and k RMS-normalised per
 * head (optional), rotated, the rotated k and the given v written into KV
 * caches at each token's row, the rotated q returned. What llama.cpp's
 * Vulkan backend fuses as RMS_NORM + MUL + ROPE + SET_ROWS and vLLM as
 * fused_qknorm_rope_cache.
 *
 * Compiled per variant of glsl/rope_cache.json by scripts/compile_shaders.py,
 * which defines X_HALF / X_BF16 (q, k, v and q_out: common.glsl) and C_HALF /
 * C_BF16 (the caches; neither: float32).
 *
 * Inputs (set 0), all buffers:
 *   binding 0  q_out    [B, Hq, S, D] (writeonly)
 *   binding 1  q        [B, Hq, S, D]
 *   binding 2  k        [B, Hk, S, D]
 *   binding 3  v        [B, Hk, S, D]
 *   binding 4  k_cache  rows of D values (read and written: rows not named stay)
 *   binding 5  v_cache  rows of D values
 *   binding 6  cos      float32 [table rows, rot/2]
 *   binding 7  sin      float32 [table rows, rot/2]
 *   binding 8  tokens   ivec2 per token t = b*S + s: (its cos / sin row,
 *                       the cache row of its head 0, -1: not written)
 *   binding 9  weights  float32 [2, D]: q's RMSNorm weights, then k's
 *
 * Launches per role (p.role: ROLE_Q, ROLE_K, ROLE_V), each over a run of
 * rows whose bindings fit the device (the push constants say where each
 * binding starts), one invocation per texel of a head row: grid (texel c4
 * of the row, row r = (b*H + h)*S + s of this dispatch).
 * Math for head-local channel j (x widened to float32):
 *   NORM:   x_j <- x_j / sqrt(mean_j(x_j^2) + eps) * (w_j + weight_add)
 *           (weight_add 1.0: Gemma's (1 + w); 0.0: Qwen3 / OLMo-2's w)
 *   j < rot, INTERLEAVED: pair (2i, 2i+1), column i = j / 2
 *     out[2i] = x[2i] c - x[2i+1] s,  out[2i+1] = x[2i+1] c + x[2i] s
 *   j < rot, rotate-half: pair (i, i + rot/2), column i
 *     out[i] = x[i] c - x[i+h] s,     out[i+h] = x[i+h] c + x[i] s
 *   j >= rot: out = x (normalised when NORM)
 * ROLE_Q writes q_out (rounded once to q's dtype), ROLE_K the k cache row
 * tokens[t].y + h * head_stride, ROLE_V the v cache row (v as it is), each
 * rounded once to the cache's dtype. Products use common.glsl's
 * diff_of_products (exact products for bfloat16 against float32 cos / sin).
 * No invocation reads what another writes: q_out never overlaps q (the
 * host checks), and the host refuses two tokens on one cache row.
 */
#if defined(C_HALF) || defined(C_BF16)
#extension GL_EXT_shader_16bit_storage : require
#endif
#define STORAGE_BUFFER
#include "common.glsl"
#include "tensor.glsl"

#if defined(C_HALF)
#define CSCALAR float16_t
#define to_c_scalar(v) CSCALAR(round_to_half(vec4(v, 0.0, 0.0, 0.0)).x)
#elif defined(C_BF16)
#define CSCALAR uint16_t
#define to_c_scalar(v) CSCALAR(floatBitsToUint(round_to_bf16(vec4(v, 0.0, 0.0, 0.0)).x) >> 16)
#else
#define CSCALAR float
#define to_c_scalar(v) (v)
#endif

layout(local_size_x_id = 0, local_size_y_id = 1) in;
// Pairs (2i, 2i+1), else rotate-half. RMSNorm before the rotation (a
// specialization constant: a CPU driver runs both sides of a branch).
layout(constant_id = 2) const bool INTERLEAVED = false;
layout(constant_id = 3) const bool NORM = false;

DECLARE_TENSOR(0, writeonly, q_out)
DECLARE_TENSOR(1, readonly, q)
DECLARE_TENSOR(2, readonly, k)
DECLARE_TENSOR(3, readonly, v)
DECLARE_BUFFER_TENSOR(4, CSCALAR, k_cache)
DECLARE_BUFFER_TENSOR(5, CSCALAR, v_cache)
layout(std430, set = 0, binding = 6) readonly buffer Cos { float cos_table[]; };
layout(std430, set = 0, binding = 7) readonly buffer Sin { float sin_table[]; };
layout(std430, set = 0, binding = 8) readonly buffer Tokens { ivec2 tokens[]; };
layout(std430, set = 0, binding = 9) readonly buffer Weights { float weights[]; };

const uint ROLE_Q = 0u;
const uint ROLE_K = 1u;
const uint ROLE_V = 2u;

layout(push_constant) uniform Params {
  uint role;         // ROLE_*
  uint row_begin;    // first row of this dispatch (rows of this role: (b*H + h)*S + s)
  uint row_end;      // one past its last
  uint heads;        // H of this role (Hq or Hk)
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
} p;

float load_x(uint r, uint j) {
  uint i = r * p.head_dim + j - p.x_base;
  if (p.role == ROLE_Q) {
    return x_float(q_values[i]);
  }
  return p.role == ROLE_K ? x_float(k_values[i]) : x_float(v_values[i]);
}

void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint r = p.row_begin + gl_GlobalInvocationID.y;
  uint v0 = 4u * c4;
  if (r >= p.row_end || v0 >= p.head_dim) {
    return;
  }
  uint lanes = min(4u, p.head_dim - v0);
  uint s = r % p.n_tokens;
  uint h = (r / p.n_tokens) % p.heads;
  uint b = r / (p.n_tokens * p.heads);
  ivec2 tok = tokens[b * p.n_tokens + s - p.tok_base];
  uint row = uint(tok.y) + h * p.head_stride;  // (k and v) the cache row
  if (p.role != ROLE_Q && (tok.y < 0 || row * p.head_dim < p.cache_base || row * p.head_dim >= p.cache_end)) {
    return;  // this token writes no cache row, or one outside this dispatch's slice
  }
  vec4 y = vec4(0.0);
  if (p.role == ROLE_V) {
    for (uint l = 0u; l < lanes; ++l) {
      y[l] = load_x(r, v0 + l);
    }
  } else {
    float scale = 1.0;
    uint w0 = 0u;
    if (NORM) {
      // mean of squares over the head, in float32
      float sum = 0.0;
      for (uint j = 0u; j < p.head_dim; ++j) {
        float xj = load_x(r, j);
        sum += xj * xj;
      }
      scale = inversesqrt(sum / float(p.head_dim) + uintBitsToFloat(p.eps));
      w0 = p.role == ROLE_Q ? 0u : p.head_dim;
    }
    uint rot = 2u * p.rot_half;
    uint t0 = (uint(tok.x) - p.t_base) * p.rot_half;
    for (uint l = 0u; l < lanes; ++l) {
      uint j = v0 + l;
      float xj = load_x(r, j);
      if (NORM) {
        xj *= scale * (weights[w0 + j] + uintBitsToFloat(p.weight_add));
      }
      if (j >= rot) {
        y[l] = xj;
        continue;
      }
      bool first;
      uint i, pj;
      if (INTERLEAVED) {
        first = (j & 1u) == 0u;
        i = j >> 1;
        pj = first ? j + 1u : j - 1u;
      } else {
        first = j < p.rot_half;
        i = first ? j : j - p.rot_half;
        pj = first ? j + p.rot_half : j - p.rot_half;
      }
      float partner = load_x(r, pj);
      if (NORM) {
        partner *= scale * (weights[w0 + pj] + uintBitsToFloat(p.weight_add));
      }
      float c = cos_table[t0 + i];
      float sn = sin_table[t0 + i];
      // first: x c - partner s; second: x c + partner s
      y[l] = diff_of_products(xj, c, first ? partner : -partner, sn);
    }
  }
  if (p.role == ROLE_Q) {
    y = round_to_x(y);
    uint g = r * p.head_dim + v0 - p.x_base;
    for (uint l = 0u; l < lanes; ++l) {
      q_out_values[g + l] = to_x_scalar(y[l]);
    }
    return;
  }
  uint g = row * p.head_dim + v0 - p.cache_base;
  for (uint l = 0u; l < lanes; ++l) {
    if (p.role == ROLE_K) {
      k_cache_values[g + l] = to_c_scalar(y[l]);
    } else {
      v_cache_values[g + l] = to_c_scalar(y[l]);
    }
  }
}

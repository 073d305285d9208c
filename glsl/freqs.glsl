/*
 * vkrope: frequencies computed in the shader from a spec, the one (cos, sin)
 * every kernel's GENERATED variant uses (glsl/trig.glsl does the math).
 * vkrope/kernels/generated.py writes the table read here, from what
 * vkrope/ops/lowering.py makes of any frequency spec.
 *
 * A kernel defines FREQ_TABLE (the grid's name of the columns table's
 * binding, whose BINDING_ / ACCESS_ defines place it) before including this
 * file. The columns table, uint words:
 *   [0, 4 * ceil(n_cols / 4))  the float32 inverse frequency of each column,
 *                              padded to whole uvec4s (a kernel loads the 2
 *                              or 4 columns of a texel as one vec2 / vec4:
 *                              per-lane loads are what costs on a CPU driver);
 *   then one uvec4 per column  its quarter turns (xyz: round(f * 2/pi * 2^94)
 *                              mod 2^96 of its float64 frequency f, for the
 *                              exact angle) and its axis (w: which of a
 *                              token's coordinates it turns by).
 * A token's coordinate on an axis is two words (w0, w1), from the kernel's
 * own token table (`Generated.words`, vkrope/ops/lowering.py):
 *   ANGLE_EXACT                the coordinate w0 + w1 / 2^32 (w0 signed),
 *                              times f, reduced exactly;
 *   ANGLE_FLOAT32, ANGLE_SHORT the float32 angle fl32(t * inv), t the float32
 *                              whose bits are w0 (the frameworks' scaled
 *                              position, divided on the host), inv the
 *                              column's float32 inverse frequency; SHORT when
 *                              the spec bounds |angle| <= 8192 (cos_sin_short).
 */
#ifndef VKROPE_FREQS_GLSL
#define VKROPE_FREQS_GLSL

#ifndef FREQ_TABLE
#error "define FREQ_TABLE (the grid's name of the columns table) before including freqs.glsl"
#endif
#define FREQ_PASTE_TOKENS(a, b) a##b
#define FREQ_PASTE(a, b) FREQ_PASTE_TOKENS(a, b)  // (a second level: FREQ_TABLE expands before the paste)
#define FREQ_BINDING FREQ_PASTE(BINDING_, FREQ_TABLE)
#define FREQ_ACCESS FREQ_PASTE(ACCESS_, FREQ_TABLE)

#include "trig.glsl"

const int ANGLE_FLOAT32 = 0;  // fl32(t * inv), the full range reduction (any float32 angle)
const int ANGLE_SHORT = 1;    // the same angle, |angle| <= 8192 (cos_sin_short)
const int ANGLE_EXACT = 2;    // coordinate * float64 frequency, reduced exactly

layout(std430, set = 0, binding = FREQ_BINDING) FREQ_ACCESS buffer FreqInv { float freq_inv[]; };
layout(std430, set = 0, binding = FREQ_BINDING) FREQ_ACCESS buffer FreqInv2 { vec2 freq_inv2[]; };
layout(std430, set = 0, binding = FREQ_BINDING) FREQ_ACCESS buffer FreqInv4 { vec4 freq_inv4[]; };
layout(std430, set = 0, binding = FREQ_BINDING) FREQ_ACCESS buffer FreqColumns { uvec4 freq_columns[]; };

// Column col's quarter turns (xyz) and axis (w), of a table of n_cols columns.
uvec4 freq_column(uint col, uint n_cols) {
  return freq_columns[(n_cols + 3u) / 4u + col];
}

// (cos, sin) of column col at the coordinate (w0, w1), times magnitude (an
// exact 1.0 for specs without a factor). mode and fractional are
// specialization constants in every caller (a CPU driver runs both sides of
// a branch it cannot fold): fractional false means w1 is 0 and w0 >= 0 (the
// cheaper exact product). inv: the column's float32 inverse frequency (the
// float32 modes; the caller loads it with its neighbours').
vec2 freq_cs(int mode, bool fractional, uint col, uint n_cols, float inv, int w0, uint w1, float magnitude) {
  vec2 cs;
  if (mode == ANGLE_EXACT) {
    uvec3 q = freq_column(col, n_cols).xyz;
    cs = fractional ? cos_sin_exact_fixed(w0, w1, q) : cos_sin_exact(uint(w0), q);
  } else {
    precise float angle = intBitsToFloat(w0) * inv;  // rounded once, as fl32(t * inv)
    cs = mode == ANGLE_SHORT ? cos_sin_short(angle) : cos_sin(angle);
  }
  return cs * magnitude;
}

#endif

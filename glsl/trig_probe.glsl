#version 450
/*
 * vkrope: test and timing probe of glsl/trig.glsl (tests/test_trig.py,
 * tests/trig_probe.py); no operator uses it.
 *
 * One invocation per output value i < count, grid (x, y) flattened as
 * i = y * row_stride + x. MODE (specialization constant 2) picks what
 * out[i] is:
 *   0 COPY        vec2(angle[i], angle[i])          (same traffic as 1)
 *   1 ANGLE       cos_sin(angle[i])
 *   2 EXACT       cos_sin_exact(position[i >> freq_bits], freq_q[i % 2^freq_bits].xyz)
 *   3 EXACT_HILO  cos_sin_exact_hilo(position[i >> freq_bits], freq_hilo[i % 2^freq_bits])
 *   4 BUILTIN     vec2(cos(angle[i]), sin(angle[i]))  (the driver's own)
 *   5 TABLE       table[i], angle read as vec2        (what reading a table costs)
 *   6 SHORT       cos_sin_short(angle[i])             (|angle| <= 8192)
 *
 * Bindings (set 0; the grid numbers them and gives their access):
 *   out        vec2 [count]
 *   angle      float [count] (MODE 0, 1, 4, 6), or vec2 [count] (MODE 5)
 *   position   uint [count >> freq_bits]
 *   freq_q     uvec4 [1 << freq_bits]: round(f * 2/pi * 2^94) mod 2^96, most
 *                         significant word first (w unused)
 *   freq_hilo  vec2 [1 << freq_bits]: (hi, lo) float32 pair of f
 */
#include "trig.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(constant_id = 2) const uint MODE = 1u;

layout(std430, set = 0, binding = BINDING_out) ACCESS_out buffer Out { vec2 out_values[]; };
layout(std430, set = 0, binding = BINDING_angle) ACCESS_angle buffer Angle { float angle[]; };
layout(std430, set = 0, binding = BINDING_angle) ACCESS_angle buffer Table { vec2 table[]; };
layout(std430, set = 0, binding = BINDING_position) ACCESS_position buffer Position { uint position[]; };
layout(std430, set = 0, binding = BINDING_freq_q) ACCESS_freq_q buffer FreqQ { uvec4 freq_q[]; };
layout(std430, set = 0, binding = BINDING_freq_hilo) ACCESS_freq_hilo buffer FreqHilo { vec2 freq_hilo[]; };

layout(push_constant) uniform Params {
  uint count;       // values to write
  uint row_stride;  // invocations per grid row (x extent of the dispatch)
  uint freq_bits;   // MODE 2, 3: 2^freq_bits frequencies per position (shifts: no vector division)
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * p.row_stride + gl_GlobalInvocationID.x;
  if (gl_GlobalInvocationID.x >= p.row_stride || i >= p.count) {
    return;
  }
  vec2 r;
  if (MODE == 0u) {
    r = vec2(angle[i], angle[i]);
  } else if (MODE == 1u) {
    r = cos_sin(angle[i]);
  } else if (MODE == 2u) {
    r = cos_sin_exact(position[i >> p.freq_bits], freq_q[i & ((1u << p.freq_bits) - 1u)].xyz);
  } else if (MODE == 3u) {
    r = cos_sin_exact_hilo(position[i >> p.freq_bits], freq_hilo[i & ((1u << p.freq_bits) - 1u)]);
  } else if (MODE == 4u) {
    r = vec2(cos(angle[i]), sin(angle[i]));
  } else if (MODE == 6u) {
    r = cos_sin_short(angle[i]);
  } else {
    r = table[i];
  }
  out_values[i] = r;
}

#version 450
/*
 * vkrope: a test-only kernel with no RoPE in it, so that the runtime's own
 * tests (tests/test_runtime.py, the operator in tests/probe_op.py) run on
 * a kernel of their own: two moved tensors of one shape (x read, out
 * written, buffers or width-packed images), a third of another shape and
 * dtype updated in place at given rows (acc, float32, as a KV cache), and
 * a per-call table (rows).
 *
 * Bindings (set 0; the grid numbers them and gives their access):
 *   out   tensor [R, C]
 *   x     tensor [R, C]
 *   acc   buffer float32 [A, C], read and written
 *   rows  buffer int: the acc row of each x row (-1: none);
 *                    the host refuses a row given twice
 * Math, texel c4 of row r (values 4 c4 .. 4 c4 + 3 of the row):
 *   out[r] = scale * x[r]  (rounded once to x's dtype)
 *   acc[rows[r]] += x[r]   when rows[r] >= 0
 * One invocation per texel; grid (texel, row of this dispatch).
 */
#include "common.glsl"
#include "tensor.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1) in;

DECLARE_TENSOR(out)
DECLARE_TENSOR(x)
DECLARE_BUFFER_TENSOR(float, acc)
layout(std430, set = 0, binding = BINDING_rows) ACCESS_rows buffer Rows { int rows[]; };

layout(push_constant) uniform Params {
  uint row_begin;     // first row of this dispatch
  uint row_end;       // one past its last
  uint row_values;    // C
  uint x_base;        // buffers: value index at which the x / out bindings start
  uint rows_base;     // row at which the rows binding starts
  uint image_width;   // texture storage: texels per image row
  uint image_height;  // texture storage: image rows per z-slice
  uint scale;         // float32 bits of the factor out = scale * x
} p;

void main() {
  uint c4 = gl_GlobalInvocationID.x;
  uint r = p.row_begin + gl_GlobalInvocationID.y;
  uint v0 = 4u * c4;
  if (r >= p.row_end || v0 >= p.row_values) {
    return;
  }
  uint lanes = min(4u, p.row_values - v0);
  vec4 v = vec4(0.0);
#ifdef STORAGE_BUFFER
  uint g = r * p.row_values + v0 - p.x_base;
  for (uint l = 0u; l < lanes; ++l) {
    v[l] = x_float(x_values[g + l]);
  }
#else
  ivec3 pos = image_texel(r, c4, (p.row_values + 3u) / 4u, p.image_width, p.image_height);
  v = IMAGE_LOAD(x_image, pos);
#endif
  vec4 y = v * uintBitsToFloat(p.scale);
  y = round_to_x(y);
#ifdef STORAGE_BUFFER
  for (uint l = 0u; l < lanes; ++l) {
    out_values[g + l] = to_x_scalar(y[l]);
  }
#else
  IMAGE_STORE(out_image, pos, y);
#endif
  int a = rows[r - p.rows_base];
  if (a >= 0) {
    for (uint l = 0u; l < lanes; ++l) {
      acc_values[uint(a) * p.row_values + v0 + l] += v[l];
    }
  }
}

#version 450
/*
 * vkrope: the texel-copy shader, the roofline of `vkrope bench`
 * (vkrope/runtime/timing.py); no operator uses it.
 *
 * One invocation per texel of x (4 values: 16 bytes float32, 8 float16)
 * copies it to out as raw bits: the same invocations, the same loads and
 * stores of x and out as a RoPE kernel on buffers, and nothing else (a
 * flat 64-wide grid; the kernels use 2-D workgroups). The ratio of its
 * time to a kernel's is about how close that kernel gets to the floor; for
 * texture3d rows it is a buffer floor, not an image one.
 *
 * Bindings (set 0; the grid numbers them and gives their access):
 *   out   buffer of texels
 *   x     buffer of texels
 * Grid (x, y) flattened as texel i = y * row_stride + x (a large tensor
 * spans several grid rows; maxComputeWorkGroupCount[0] may be 65535).
 */
#include "common.glsl"

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = BINDING_out) ACCESS_out buffer Out { XRAW4 out_texels[]; };
layout(std430, set = 0, binding = BINDING_x) ACCESS_x buffer In { XRAW4 in_texels[]; };

layout(push_constant) uniform Params {
  uint texels;      // texels to copy
  uint row_stride;  // invocations per grid row
} p;

void main() {
  uint i = gl_GlobalInvocationID.y * p.row_stride + gl_GlobalInvocationID.x;
  if (gl_GlobalInvocationID.x >= p.row_stride || i >= p.texels) {
    return;
  }
  out_texels[i] = in_texels[i];
}

/*
 * vkrope: what every tensor kernel shares (included after common.glsl):
 * tensor bindings and the texel addressing of width-packed images (the
 * (cos, sin) of frequencies computed in the shader: glsl/freqs.glsl).
 *
 * DECLARE_TENSOR(NAME) declares binding NAME as a tensor, at the grid's
 * BINDING_NAME with its ACCESS_NAME qualifier (the compiler's defines, from
 * glsl/<kernel>.json: the grid states both once):
 *   STORAGE_BUFFER     NAME_raw4[] (XRAW4: a texel as raw bits), NAME_raw2[]
 *                      (XRAW2: a pair as raw bits), NAME_texels[] (XVEC4)
 *                      and NAME_values[] (XSCALAR): views of one buffer, so
 *                      a kernel loads what it needs and a pass-through value
 *                      can go back bit for bit;
 *   STORAGE_TEXTURE3D  NAME_image, a width-packed 3D image (IMAGE_FORMAT,
 *                      IMAGE_TYPE; IMAGE_LOAD / IMAGE_STORE move its texels).
 *
 * DECLARE_BUFFER_TENSOR(TYPE, NAME) declares binding NAME as a buffer-only
 * tensor of another element type than x's (a float32 cache beside float16
 * x, say): NAME_values[] of TYPE.
 *
 * rope_pair(j, rot_half, interleaved, first, col, partner): the pair of
 * head-local channel j (interleaved pairs or rotate-half halves).
 *
 * image_texel(row, c4, row_texels, width, height): where texel c4 of tensor
 * row `row` lies in a width-packed image: each tensor row takes
 * ceil(row_texels / width) image rows of `width` texels, and image rows fold
 * over height then depth (vkrope/runtime/layout.py, image_extent).
 */
#ifndef VKROPE_TENSOR_GLSL
#define VKROPE_TENSOR_GLSL

#ifdef STORAGE_BUFFER
#define DECLARE_TENSOR(NAME) \
  layout(std430, set = 0, binding = BINDING_##NAME) ACCESS_##NAME buffer NAME##Raw4 { XRAW4 NAME##_raw4[]; }; \
  layout(std430, set = 0, binding = BINDING_##NAME) ACCESS_##NAME buffer NAME##Raw2 { XRAW2 NAME##_raw2[]; }; \
  layout(std430, set = 0, binding = BINDING_##NAME) ACCESS_##NAME buffer NAME##Texels { XVEC4 NAME##_texels[]; }; \
  layout(std430, set = 0, binding = BINDING_##NAME) ACCESS_##NAME buffer NAME##Values { XSCALAR NAME##_values[]; };
#elif defined(STORAGE_TEXTURE3D)
#define DECLARE_TENSOR(NAME) \
  layout(set = 0, binding = BINDING_##NAME, IMAGE_FORMAT) uniform ACCESS_##NAME IMAGE_TYPE NAME##_image;
#endif

#define DECLARE_BUFFER_TENSOR(TYPE, NAME) \
  layout(std430, set = 0, binding = BINDING_##NAME) ACCESS_##NAME buffer NAME##Values { TYPE NAME##_values[]; };

// Head-local channel j of a rotated head (j < 2 rot_half): whether it is
// the first of its pair, its cos / sin column and its partner channel;
// pairs (2i, 2i+1) when interleaved, else rotate-half (i, i + rot_half).
void rope_pair(uint j, uint rot_half, bool interleaved, out bool first, out uint col, out uint partner) {
  if (interleaved) {
    first = (j & 1u) == 0u;
    col = j >> 1;
    partner = first ? j + 1u : j - 1u;
  } else {
    first = j < rot_half;
    col = first ? j : j - rot_half;
    partner = first ? j + rot_half : j - rot_half;
  }
}

ivec3 image_texel(uint row, uint c4, uint row_texels, uint width, uint height) {
  uint parts = (row_texels + width - 1u) / width;  // image rows per tensor row
  uint vrow = row * parts + c4 / width;
  return ivec3(int(c4 % width), int(vrow % height), int(vrow / height));
}

#endif

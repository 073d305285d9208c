"""Compute pipelines: shader module, descriptor set layout, pipeline layout
and the pipeline itself (workgroup size and other specialization constants),
plus writing descriptor sets for them. Sets come from a `Recording`'s pools
(vk/commands.py)."""

from __future__ import annotations

from typing import Any, Sequence

from . import binding as b
from .context import Context
from .resources import Buffer, Image3D
from .spirv import with_float_controls

STORAGE_BUFFER = "storage_buffer"
STORAGE_IMAGE = "storage_image"


class ComputePipeline:
    """A compute pipeline and the layouts it needs.

    `bindings` lists each binding's descriptor kind (`STORAGE_BUFFER` or
    `STORAGE_IMAGE`) in binding order; `push_constant_bytes` sizes the
    push-constant range (none when 0: a 0-byte range is invalid);
    `spec_constants` are 32-bit values for specialization constants 0, 1,
    ... (workgroup size among them).
    """

    def __init__(
        self,
        ctx: Context,
        spirv: bytes,
        bindings: Sequence[str],
        push_constant_bytes: int,
        spec_constants: Sequence[int],
    ) -> None:
        vk = b.vk()
        ctx.check_open()
        self.ctx = ctx
        self.bindings = list(bindings)
        self.push_constant_bytes = push_constant_bytes
        self.spec_constants = tuple(spec_constants)
        self.module: Any = None
        self.set_layout: Any = None
        self.layout: Any = None
        self.handle: Any = None
        ctx.adopt(self)  # first: whatever is created below has an owner
        try:
            # (where the device takes them; else its default: NVIDIA's flushes subnormals)
            modes = tuple(m for m, asked in (("DenormPreserve", ctx.info.denorm_preserve_float32),
                                             ("SignedZeroInfNanPreserve",
                                              ctx.info.signed_zero_inf_nan_preserve_float32)) if asked)
            if modes:
                spirv = with_float_controls(spirv, modes)
            module_info = vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv)
            b.create(self, "module", "VkShaderModule", "vkCreateShaderModule", ctx.handle, module_info, None)

            layout_bindings = [
                vk.VkDescriptorSetLayoutBinding(
                    binding=i,
                    descriptorType=descriptor_type(kind),
                    descriptorCount=1,
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
                )
                for i, kind in enumerate(self.bindings)
            ]
            set_layout_info = vk.VkDescriptorSetLayoutCreateInfo(
                bindingCount=len(layout_bindings), pBindings=layout_bindings
            )
            b.create(self, "set_layout", "VkDescriptorSetLayout", "vkCreateDescriptorSetLayout", ctx.handle,
                     set_layout_info, None)

            ranges = []
            if push_constant_bytes:
                ranges.append(vk.VkPushConstantRange(
                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=push_constant_bytes
                ))
            set_layouts = b.array("VkDescriptorSetLayout", [self.set_layout])
            layout_info = vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=1, pSetLayouts=set_layouts, pushConstantRangeCount=len(ranges),
                pPushConstantRanges=ranges or None,
            )
            b.create(self, "layout", "VkPipelineLayout", "vkCreatePipelineLayout", ctx.handle, layout_info, None)

            spec, _keep = _specialization(vk, self.spec_constants)
            stage = vk.VkPipelineShaderStageCreateInfo(
                stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=self.module, pName="main", pSpecializationInfo=spec
            )
            pipeline_info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
            b.create(self, "handle", "VkPipeline", "vkCreateComputePipelines", ctx.handle, b.vk().VK_NULL_HANDLE, 1,
                     [pipeline_info], None)
        except BaseException:
            ctx.release(self)
            raise

    def write_set(self, dset: Any, resources: Sequence[tuple[Buffer, int, int] | Image3D]) -> None:
        """Point descriptor set `dset` (allocated with this pipeline's
        `set_layout`) at `resources`, one per binding: `(buffer, offset,
        range)` for buffers, an `Image3D` for images. The set must not be in
        use by pending work."""
        vk = b.vk()
        writes = []
        for binding, (kind, res) in enumerate(zip(self.bindings, resources)):
            if kind == STORAGE_BUFFER:
                buf, offset, size = res  # type: ignore[misc]
                info = {"pBufferInfo": [vk.VkDescriptorBufferInfo(buffer=buf.handle, offset=offset, range=size)]}
            else:
                img: Image3D = res  # type: ignore[assignment]
                info = {"pImageInfo": [vk.VkDescriptorImageInfo(imageView=img.view_handle,
                                                                imageLayout=vk.VK_IMAGE_LAYOUT_GENERAL)]}
            writes.append(vk.VkWriteDescriptorSet(
                dstSet=dset, dstBinding=binding, descriptorCount=1, descriptorType=descriptor_type(kind), **info
            ))
        # `writes` are copied into a cffi array by the call; the arrays their
        # pBufferInfo / pImageInfo point to stay alive with the structs in the
        # `writes` list until it returns.
        vk.vkUpdateDescriptorSets(self.ctx.handle, len(writes), writes, 0, None)

    def descriptor_counts(self) -> tuple[tuple[int, int], ...]:
        """(descriptor type, count) of one set of this pipeline: what a
        descriptor pool must hold per set."""
        counts: dict[int, int] = {}
        for kind in self.bindings:
            t = descriptor_type(kind)
            counts[t] = counts.get(t, 0) + 1
        return tuple(sorted(counts.items()))

    def destroy(self) -> None:
        """Destroy pipeline, layouts and module (idempotent)."""
        b.destroy_handles(self, self.ctx.handle, (
            ("handle", "vkDestroyPipeline", "VkPipeline"),
            ("layout", "vkDestroyPipelineLayout", "VkPipelineLayout"),
            ("set_layout", "vkDestroyDescriptorSetLayout", "VkDescriptorSetLayout"),
            ("module", "vkDestroyShaderModule", "VkShaderModule"),
        ))


def _specialization(vk: Any, values: Sequence[int]) -> tuple[Any, Any]:
    """VkSpecializationInfo for 32-bit constants 0, 1, ... and the arrays it
    points to (keep them alive until the pipeline is created)."""
    count = len(values)
    entries = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * i, size=4) for i in range(count)]
    data = vk.ffi.new(f"uint32_t[{count}]", list(values))
    info = vk.VkSpecializationInfo(mapEntryCount=count, pMapEntries=entries, dataSize=4 * count, pData=data)
    return info, (entries, data)


def descriptor_type(kind: str) -> int:
    """The VkDescriptorType of a binding kind."""
    vk = b.vk()
    if kind == STORAGE_BUFFER:
        return vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
    if kind == STORAGE_IMAGE:
        return vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
    raise ValueError(f"unknown binding kind {kind!r}")

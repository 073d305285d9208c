"""The synchronisation a recording needs, in the Vulkan layer's words:
the stage and access mask of a step's use of a range (a shader's or a
copy's, reading, writing or both), the image layouts of those uses, and the
barriers a recording opens and closes with. The runtime's recorder
(vkrope/runtime/recorder.py) decides where they go; the Vulkan enums stay
here.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import binding as b
from .commands import Recording
from .resources import Image3D

GENERAL = "general"  # where images rest between submissions, and where shaders use them
TO_IMAGE = "to_image"  # a copy into the image
FROM_IMAGE = "from_image"  # a copy out of it


def use(shader: bool, access: str) -> tuple[int, int]:
    """(stage, access mask) of a use of a range: by a shader (a launch) or a
    transfer (a copy), reading ('read'), writing ('write') or both
    ('update')."""
    vk = b.vk()
    if shader:
        masks = {"read": vk.VK_ACCESS_SHADER_READ_BIT, "write": vk.VK_ACCESS_SHADER_WRITE_BIT,
                 "update": vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT}
        return vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, masks[access]
    # (a copy never updates a range: it reads one and writes another)
    mask = vk.VK_ACCESS_TRANSFER_WRITE_BIT if access == "write" else vk.VK_ACCESS_TRANSFER_READ_BIT
    return vk.VK_PIPELINE_STAGE_TRANSFER_BIT, mask


def layout(name: str) -> int:
    """The Vulkan image layout of GENERAL, TO_IMAGE or FROM_IMAGE."""
    vk = b.vk()
    return {GENERAL: vk.VK_IMAGE_LAYOUT_GENERAL, TO_IMAGE: vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
            FROM_IMAGE: vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL}[name]


def union(masks: Iterable[int]) -> int:
    """The bitwise or of stage or access masks."""
    out = 0
    for m in masks:
        out |= m
    return out


def after_earlier_submissions(rec: Recording) -> None:
    """A recording's first barrier: it runs after what earlier submissions wrote."""
    vk = b.vk()
    every = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
    rw = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
    rec.barrier(every, vk.VK_ACCESS_MEMORY_WRITE_BIT, every, rw)


def before_any_step(rec: Recording, stages: int, access: int) -> None:
    """A hazard's barrier: the uses (stages, access) done before it are made
    visible to every stage a step can use, compute and transfer alike (the
    ranges leave the recorder's pending list, so a later step of either
    stage must be covered too)."""
    vk = b.vk()
    rec.barrier(stages, access, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT
                | vk.VK_ACCESS_TRANSFER_WRITE_BIT)


def transition(rec: Recording, image: Image3D, old: str, new: str, stage: int | None = None,
               access: int | None = None) -> None:
    """Move `image` from layout `old` to `new` after every earlier use,
    before the use (stage, access) (default: any)."""
    vk = b.vk()
    every = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
    rw = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
    rec.image_layout(image, layout(old), layout(new), every, rw, every if stage is None else stage,
                     rw if access is None else access)


def first_layout(rec: Recording, image: Image3D) -> None:
    """A new image's transition from no contents to GENERAL, before anything uses it."""
    vk = b.vk()
    rec.image_layout(image, vk.VK_IMAGE_LAYOUT_UNDEFINED, vk.VK_IMAGE_LAYOUT_GENERAL,
                     vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                     vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT)


def visible_to_host_and_later(rec: Recording) -> None:
    """A recording's last barrier: its writes visible to the host and to later submissions."""
    vk = b.vk()
    every = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
    rec.barrier(every, vk.VK_ACCESS_MEMORY_WRITE_BIT, every | vk.VK_PIPELINE_STAGE_HOST_BIT,
                vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT | vk.VK_ACCESS_HOST_READ_BIT)

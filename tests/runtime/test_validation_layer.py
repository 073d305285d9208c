"""The validation layer is really on and its messages really reach the tests."""

from __future__ import annotations

from vkrope.vk import binding as b
from vkrope.vk.instance import clear_validation_messages, validation_messages


def test_device_runs_with_validation(device):
    assert device.info["validation"] is True


def test_a_deliberate_error_is_reported(device):
    """Create an invalid buffer (size 0) straight through the binding: the
    layer must report it, proving a clean run means something."""
    vk = b.vk()
    ctx = device._ctx
    info = vk.VkBufferCreateInfo(size=0, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                                 sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
    try:
        handle = vk.vkCreateBuffer(ctx.handle, info, None)
        vk.vkDestroyBuffer(ctx.handle, handle, None)
    except vk.VkError:
        pass
    msgs = validation_messages()
    clear_validation_messages()  # keep the autouse check for this test green
    assert any("size" in m for m in msgs), msgs

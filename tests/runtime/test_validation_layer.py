"""The validation layer is really on and its messages really reach the tests."""

from __future__ import annotations

import os
import subprocess
import sys

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


def test_a_missing_layer_is_refused_naming_what_asked_for_it(tmp_path):
    """Validation asked for where the layer is not found (VK_LAYER_PATH at an empty folder): the refusal names
    the argument or the environment variable that asked, and how to stop asking."""
    env = {k: v for k, v in os.environ.items() if k not in ("VKROPE_VALIDATION", "VK_INSTANCE_LAYERS")}
    env["VK_LAYER_PATH"] = str(tmp_path)
    code = ("import vkrope\ntry:\n    vkrope.Device({})\nexcept vkrope.VulkanUnavailableError as e:\n    print(e)\n")
    by_arg = subprocess.run([sys.executable, "-c", code.format("validation=True")], env=env, capture_output=True,
                            text=True, timeout=120)
    assert "validation was requested (validation=True)" in by_arg.stdout and "pass validation=False" in by_arg.stdout, \
        by_arg.stdout + by_arg.stderr
    by_env = subprocess.run([sys.executable, "-c", code.format("")], env={**env, "VKROPE_VALIDATION": "1"},
                            capture_output=True, text=True, timeout=120)
    assert "validation was requested (VKROPE_VALIDATION)" in by_env.stdout and "unset VKROPE_VALIDATION" in \
        by_env.stdout, by_env.stdout + by_env.stderr

"""Float32 subnormals on a device that flushes them by default (#35: on the
H200, NVIDIA's driver flushed them in shaders; tiny float32 and bfloat16
inputs came out 0). vkrope adds SPV_KHR_float_controls' DenormPreserve to
every module it creates where the device reports shaderDenormPreserveFloat32.
lavapipe reports neither keeping nor flushing (it keeps them), so here the
edit is checked as SPIR-V (spirv-val, spirv-dis) and the choice as plumbing;
the subnormal tests (test_bfloat16.py, test_exactness.py) check the effect
on a device that flushes."""

from __future__ import annotations

import dataclasses
import shutil
import struct
import subprocess

import numpy as np
import pytest

import vkrope
import vkrope.vk.pipeline as pipeline
from vkrope.runtime.manifest import manifest, spirv_dir
from vkrope.vk.spirv import with_denorm_preserve, with_float_controls

NAMES = sorted(manifest()["variants"])


def _disassembled(path) -> str:
    assert shutil.which("spirv-dis"), "spirv-dis is required by the test suite (scripts/test.sh installs it)"
    return subprocess.run(["spirv-dis", "--raw-id", str(path)], check=True, capture_output=True, text=True).stdout


@pytest.mark.parametrize("name", NAMES[::7] + NAMES[-1:])
def test_the_edited_module_is_valid_and_asks_once_per_entry_point(name, tmp_path):
    assert shutil.which("spirv-val"), "spirv-val is required by the test suite (scripts/test.sh installs it)"
    original = (spirv_dir() / f"{name}.spv").read_bytes()
    edited = tmp_path / "edited.spv"
    edited.write_bytes(with_denorm_preserve(original))
    subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(edited)], check=True)
    text = _disassembled(edited)
    entries = [line.split()[2] for line in text.splitlines() if "OpEntryPoint" in line]
    assert entries and text.count("OpCapability DenormPreserve") == 1
    assert text.count('OpExtension "SPV_KHR_float_controls"') == 1
    for entry in entries:
        assert text.count(f"OpExecutionMode {entry} DenormPreserve 32") == 1
    # and nothing else changed: the rest, line for line
    before = _disassembled(spirv_dir() / f"{name}.spv").splitlines()
    added = [line for line in text.splitlines() if "DenormPreserve" in line or "SPV_KHR_float_controls" in line]
    assert [line for line in text.splitlines() if line not in added] == before


def test_a_module_is_edited_once_and_only_spirv_is_edited():
    spv = (spirv_dir() / f"{NAMES[0]}.spv").read_bytes()
    with pytest.raises(ValueError, match="already declares DenormPreserve"):
        with_denorm_preserve(with_denorm_preserve(spv))
    with pytest.raises(ValueError, match="magic number"):
        with_denorm_preserve(struct.pack(">I", 0x07230203) + spv[4:])  # (big-endian: not as glslc writes)
    with pytest.raises(ValueError, match="not a SPIR-V module"):
        with_denorm_preserve(spv[:-2])
    with pytest.raises(ValueError, match="malformed instruction"):
        with_denorm_preserve(spv + struct.pack("<I", 5 << 16 | 1))  # (an instruction past the end)
    with pytest.raises(ValueError, match="malformed instruction"):
        with_denorm_preserve(spv + struct.pack("<I", 0))  # (a zero word count would loop)
    words = _words(spv)
    entry = next(i for i in range(5, len(words)) if words[i] & 0xFFFF == 15)
    short = words[:entry] + [2 << 16 | 15, 5] + words[entry + (words[entry] >> 16):]  # an OpEntryPoint of 2 words
    with pytest.raises(ValueError, match="malformed instruction"):
        with_denorm_preserve(_pack(short))
    with pytest.raises(TypeError, match="spirv must be bytes"):
        with_denorm_preserve(np.frombuffer(spv, np.uint32))


def _words(spv: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(spv) // 4}I", spv))


def _pack(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def _without(words: list[int], instruction: list[int]) -> list[int]:
    at = next(i for i in range(len(words)) if words[i:i + len(instruction)] == instruction)
    return words[:at] + words[at + len(instruction):]


CAPABILITY = [2 << 16 | 17, 4464]  # OpCapability DenormPreserve


def test_a_module_that_has_the_extension_gets_it_once():
    spv = (spirv_dir() / f"{NAMES[0]}.spv").read_bytes()
    with_extension = _without(_words(with_denorm_preserve(spv)), CAPABILITY)  # (the extension, no capability)
    again = _words(with_denorm_preserve(_pack(with_extension)))
    extension = _words(with_denorm_preserve(spv))[5:]
    ext = next(extension[i:i + (extension[i] >> 16)] for i in range(len(extension)) if extension[i] & 0xFFFF == 10)
    count = sum(again[i:i + len(ext)] == ext for i in range(len(again)))
    assert count == 1 and sum(again[i:i + 2] == CAPABILITY for i in range(len(again))) == 1


def test_a_module_asking_to_flush_is_refused():
    edited = _without(_words(with_denorm_preserve((spirv_dir() / f"{NAMES[0]}.spv").read_bytes())), CAPABILITY)
    mode = next(i for i in range(len(edited)) if edited[i] & 0xFFFF == 16 and edited[i + 2] == 4459)
    edited[mode + 2] = 4460  # DenormPreserve 32 -> DenormFlushToZero 32
    with pytest.raises(ValueError, match="asks for DenormFlushToZero 32"):
        with_denorm_preserve(_pack(edited))
    edited[mode + 3] = 16  # of 16-bit values: no conflict with keeping 32-bit ones
    assert with_denorm_preserve(_pack(edited))


@pytest.mark.parametrize("preserve", [False, True])
@pytest.mark.parametrize("signed_zero", [False, True])
def test_modules_ask_for_it_exactly_where_the_device_can(make_device, monkeypatch, preserve, signed_zero):
    """Every module a Device creates asks for each mode its facts say the device
    takes, none otherwise (lavapipe cannot be asked for DenormPreserve: the
    edit itself is stubbed to record, so the driver sees the plain module)."""
    dev = make_device()
    ctx = dev._context()
    monkeypatch.setattr(ctx, "info", dataclasses.replace(ctx.info, denorm_preserve_float32=preserve,
                                                         signed_zero_inf_nan_preserve_float32=signed_zero))
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(pipeline, "with_float_controls", lambda spv, modes: asked.append(modes) or spv)
    x = np.ones((1, 4, 8), np.float32)
    f = np.tile(np.array([1.0, 0.0], np.float32), (4, 4))
    np.testing.assert_array_equal(dev.apply(x, f), x)
    want = tuple(m for m, on in (("DenormPreserve", preserve), ("SignedZeroInfNanPreserve", signed_zero)) if on)
    assert set(asked) == ({want} if want else set()), asked


def test_a_device_that_can_keep_them_is_created_with_float_controls(monkeypatch):
    """The execution mode needs VK_KHR_shader_float_controls enabled (vkrope asks
    for Vulkan 1.1): a device whose facts say it can keep subnormals is created
    with it (lavapipe offers the extension; the edit is stubbed, it cannot be asked)."""
    import vkrope.vk.binding as b
    import vkrope.vk.context as context

    real_select, real_call, enabled = context.select_device, b.call, []

    def select(devices, wanted):
        info, why = real_select(devices, wanted)
        return dataclasses.replace(info, denorm_preserve_float32=True), why

    def call(name, *args):
        if name == "vkCreateDevice":
            create = args[1]
            enabled.extend(b.vk().ffi.string(create.ppEnabledExtensionNames[i]).decode()
                           for i in range(create.enabledExtensionCount))
        return real_call(name, *args)

    monkeypatch.setattr(context, "select_device", select)
    monkeypatch.setattr(b, "call", call)
    monkeypatch.setattr(pipeline, "with_float_controls", lambda spv, modes: spv)
    with vkrope.Device() as dev:
        assert dev.info["denorm_preserve_float32"] is True
        x = np.ones((1, 4, 8), np.float32)
        np.testing.assert_array_equal(dev.apply(x, np.tile(np.array([1.0, 0.0], np.float32), (4, 4))), x)
    assert "VK_KHR_shader_float_controls" in enabled, enabled


def test_info_says_whether_subnormals_are_kept():
    assert isinstance(vkrope.default_device().info["denorm_preserve_float32"], bool)


@pytest.mark.parametrize("independence,preserve32,asked", [(0, 1, True), (1, 1, True), (2, 1, False), (1, 0, False)])
def test_asked_only_where_the_device_keeps_them_and_32_bit_may_differ(monkeypatch, independence, preserve32, asked):
    """DenormPreserve 32 alone is valid only where 32-bit floats may have their
    own denormals mode (denormBehaviorIndependence not NONE: with NONE every width
    of a module must share one; the adversary of #35)."""
    from types import SimpleNamespace

    import vkrope.vk.binding as b
    import vkrope.vk.instance as instance

    real = instance._props2

    def props2(vk, pd, inner, stype):
        if inner == "VkPhysicalDeviceFloatControlsProperties":
            return SimpleNamespace(shaderDenormPreserveFloat32=preserve32, denormBehaviorIndependence=independence,
                                   shaderSignedZeroInfNanPreserveFloat32=preserve32)
        return real(vk, pd, inner, stype)

    monkeypatch.setattr(instance, "_props2", props2)
    vk = b.vk()
    info = vkrope.default_device().info
    pd = vkrope.default_device()._context().info.handle
    exts = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    if instance.FLOAT_CONTROLS not in exts:
        pytest.skip("the device does not offer VK_KHR_shader_float_controls: its facts are never read")
    version = int(info["api_version"].split(".")[0]) << 22 | int(info["api_version"].split(".")[1]) << 12
    facts = instance._extended_facts(vk, pd, version, True)
    assert facts[-2] is asked and facts[-1] is bool(preserve32)  # (signed zeros: whatever the independence)


@pytest.mark.parametrize("name", NAMES[::11])
def test_both_modes_make_a_valid_module(name, tmp_path):
    """DenormPreserve and SignedZeroInfNanPreserve together: one capability each, one extension, one execution
    mode of each per entry point, spirv-val content; asking for a mode twice is refused."""
    spv = (spirv_dir() / f"{name}.spv").read_bytes()
    edited = tmp_path / "edited.spv"
    edited.write_bytes(with_float_controls(spv, ("DenormPreserve", "SignedZeroInfNanPreserve")))
    subprocess.run(["spirv-val", "--target-env", "vulkan1.1", str(edited)], check=True)
    text = _disassembled(edited)
    entries = [line.split()[2] for line in text.splitlines() if "OpEntryPoint" in line]
    assert text.count("OpCapability SignedZeroInfNanPreserve") == 1 and text.count("OpCapability DenormPreserve") == 1
    assert text.count('OpExtension "SPV_KHR_float_controls"') == 1
    for entry in entries:
        assert text.count(f"OpExecutionMode {entry} SignedZeroInfNanPreserve 32") == 1
    with pytest.raises(ValueError, match="already declares SignedZeroInfNanPreserve"):
        with_float_controls(edited.read_bytes(), ("SignedZeroInfNanPreserve",))


def test_info_says_whether_signed_zeros_are_kept():
    assert isinstance(vkrope.default_device().info["signed_zero_inf_nan_preserve_float32"], bool)

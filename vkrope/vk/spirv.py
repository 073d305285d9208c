"""One edit of a compiled shader module: asking the device for IEEE float32
behaviour it may otherwise drop (SPV_KHR_float_controls' execution modes):
DenormPreserve, to keep subnormals, and SignedZeroInfNanPreserve, to keep
the sign of a zero and infinities and NaNs through arithmetic (-0 * cos - 0
* sin is -0, as torch returns it; without the mode a driver may fold
either).

Without them the device's default applies, and NVIDIA's flushes float32
subnormals to zero in shaders (measured on an H200: tiny inputs and
bfloat16's smallest values came out 0). A mode may only be used where the
device reports it (`shaderDenormPreserveFloat32`, which lavapipe does not:
it keeps subnormals anyway; `shaderSignedZeroInfNanPreserveFloat32`, which
lavapipe does), so the committed modules leave them out and the Vulkan
layer adds those the device reports as it creates each module.
"""

from __future__ import annotations

import struct

MAGIC = 0x07230203
OP_EXTENSION, OP_CAPABILITY, OP_ENTRY_POINT, OP_EXECUTION_MODE = 10, 17, 15, 16
CAPABILITY_DENORM_PRESERVE = 4464
EXECUTION_MODE_DENORM_PRESERVE, EXECUTION_MODE_DENORM_FLUSH_TO_ZERO = 4459, 4460
# each mode's (capability, execution mode), as SPV_KHR_float_controls numbers them
MODES = {"DenormPreserve": (CAPABILITY_DENORM_PRESERVE, EXECUTION_MODE_DENORM_PRESERVE),
         "SignedZeroInfNanPreserve": (4466, 4461)}
SPV_FLOAT_CONTROLS = "SPV_KHR_float_controls"


def _string_words(text: str) -> list[int]:
    """A SPIR-V literal string: UTF-8, NUL-terminated, zero-padded to whole words."""
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


def _instruction(opcode: int, operands: list[int]) -> list[int]:
    return [(len(operands) + 1) << 16 | opcode, *operands]


def with_denorm_preserve(spirv: bytes, width: int = 32) -> bytes:
    """`spirv` with DenormPreserve of `width` bits (`with_float_controls`)."""
    return with_float_controls(spirv, ("DenormPreserve",), width)


def with_float_controls(spirv: bytes, modes: tuple[str, ...], width: int = 32) -> bytes:
    """`spirv` (a little-endian module, as glslc writes) with the capability,
    extension and per-entry-point execution mode of each of `modes` (names
    in MODES) for floats of `width` bits. ValueError for a module that is
    not SPIR-V or already has a capability (editing twice would declare it
    twice) or asks for the opposite of DenormPreserve (DenormFlushToZero of
    that width)."""
    if not isinstance(spirv, bytes):
        raise TypeError(f"spirv must be bytes (a module as glslc writes it); got {type(spirv).__name__}")
    if len(spirv) % 4 or len(spirv) < 20:
        raise ValueError(f"spirv: {len(spirv)} bytes is not a SPIR-V module (whole 32-bit words, a 5-word header)")
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if words[0] != MAGIC:
        raise ValueError(f"spirv: magic number {words[0]:#010x}, expected {MAGIC:#010x} (a little-endian module)")
    out = words[:5]
    entries, at = [], 5
    capability_end = entry_end = None
    extension, has_extension = _string_words(SPV_FLOAT_CONTROLS), False
    while at < len(words):
        count, opcode = words[at] >> 16, words[at] & 0xFFFF
        shortest = {OP_CAPABILITY: 2, OP_ENTRY_POINT: 4, OP_EXECUTION_MODE: 3, OP_EXTENSION: 2}.get(opcode, 1)
        if count < shortest or at + count > len(words):
            raise ValueError(f"spirv: a malformed instruction at word {at}")
        for mode in modes:
            if opcode == OP_CAPABILITY and words[at + 1] == MODES[mode][0]:
                raise ValueError(f"spirv: the module already declares {mode}")
        if "DenormPreserve" in modes and opcode == OP_EXECUTION_MODE and \
                words[at + 2:at + 4] == [EXECUTION_MODE_DENORM_FLUSH_TO_ZERO, width]:
            raise ValueError(f"spirv: the module asks for DenormFlushToZero {width}")
        has_extension = has_extension or (opcode == OP_EXTENSION and words[at + 1:at + count] == extension)
        if opcode == OP_CAPABILITY:
            capability_end = len(out) + count
        if opcode == OP_ENTRY_POINT:
            entries.append(words[at + 2])
            entry_end = len(out) + count
        out.extend(words[at:at + count])
        at += count
    if capability_end is None or entry_end is None:
        raise ValueError("spirv: the module has no capability or no entry point")
    added = [w for e in entries for m in modes for w in _instruction(OP_EXECUTION_MODE, [e, MODES[m][1], width])]
    # (last first, so the earlier position stays right: the logical layout is
    # capabilities, extensions, ..., entry points, execution modes)
    out[entry_end:entry_end] = added
    out[capability_end:capability_end] = ([w for m in modes for w in _instruction(OP_CAPABILITY, [MODES[m][0]])]
                                          + ([] if has_extension else _instruction(OP_EXTENSION, extension)))
    return struct.pack(f"<{len(out)}I", *out)

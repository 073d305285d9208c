"""A GGUF file's header walked with every count and length held to the
bytes the file has, before the `gguf` package reads it: its reader trusts
them, so a 100-byte file whose array claims 2^40 elements made it loop and
grow memory for ever (an adversarial helper's file). Layout (GGUF v2 / v3,
either byte order): magic, version u32, tensor count u64, metadata count
u64, then each key (a string: u64 length, bytes), its type u32 and value
(a scalar, a string, or an array: element type u32, count u64, elements);
then each tensor's name, dimension count u32, dimensions u64, type u32 and
offset u64."""

from __future__ import annotations

import mmap
import struct

# Sizes of GGUF's scalar value types (gguf's GGUFValueType): u8, i8, u16, i16, u32, i32, f32, bool; u64, i64, f64.
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
_STRING, _ARRAY = 8, 9


class _Walk:
    """A cursor over the file's bytes that refuses to step past their end."""

    def __init__(self, data: bytes | mmap.mmap, order: str) -> None:
        self.data, self.order, self.at = data, order, 0

    def take(self, n: int, what: str) -> int:
        if n < 0 or n > len(self.data) - self.at:
            raise ValueError(f"{what} needs {n} bytes at offset {self.at}; the file has {len(self.data) - self.at} "
                             "left")
        self.at += n
        return self.at - n

    def uint(self, size: int, what: str) -> int:
        start = self.take(size, what)
        return int(struct.unpack_from(self.order + {4: "I", 8: "Q"}[size], self.data, start)[0])

    def string(self, what: str) -> None:
        self.take(self.uint(8, what + "'s length"), what)

    def value(self, kind: int, what: str, depth: int = 0) -> None:
        if kind in _SCALAR:
            self.take(_SCALAR[kind], what)
        elif kind == _STRING:
            self.string(what)
        elif kind == _ARRAY:
            element, count = self.uint(4, what + "'s element type"), self.uint(8, what + "'s length")
            if element in _SCALAR:
                self.take(count * _SCALAR[element], f"{what} ({count} values)")
            elif element == _ARRAY and depth >= 8:
                raise ValueError(f"{what}: arrays nested more than 8 deep")
            elif element in (_STRING, _ARRAY):
                for _ in range(count):  # (each at least 8 bytes of length: a lying count runs out of bytes)
                    self.value(element, what, depth + 1)
            else:
                raise ValueError(f"{what}: an array of value type {element}, which GGUF does not have")
        else:
            raise ValueError(f"{what}: value type {kind}, which GGUF does not have")


def check_sizes(path: str) -> None:
    """ValueError naming what a count or length of `path`'s header claims
    past the end of the file (the file is read through a memory map)."""
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            return  # (not GGUF: the reader says so)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            version = struct.unpack_from("<I", data, 4)[0] if len(data) >= 8 else 0
            walk = _Walk(data, "<" if version & 0xFFFF else ">")  # (a big-endian file's version reads as v << 24)
            walk.take(8, "the header")
            tensors, keys = walk.uint(8, "the tensor count"), walk.uint(8, "the metadata count")
            for i in range(keys):
                walk.string(f"metadata key {i}")
                walk.value(walk.uint(4, f"metadata {i}'s type"), f"metadata {i}")
            for i in range(tensors):
                walk.string(f"tensor {i}'s name")
                dims = walk.uint(4, f"tensor {i}'s dimension count")
                if dims > 4:  # (GGML_MAX_DIMS: llama.cpp's gguf_init refuses the file)
                    raise ValueError(f"tensor {i} has {dims} dimensions; GGUF tensors have at most 4 (llama.cpp "
                                     "refuses the file)")
                walk.take(8 * dims, f"tensor {i}'s dimensions")
                walk.take(12, f"tensor {i}'s type and offset")


def check_layout(tensors: list, data_offset: int, alignment: int) -> None:
    """ValueError where the tensors' data do not lie as llama.cpp's gguf_init requires (else it refuses the
    file, "tensor has offset X, expected Y"): each at the end of the one before it, padded to `alignment`,
    the first at the data section's start. `tensors`: the gguf reader's, in the file's order (their
    absolute `data_offset` and `n_bytes`; the reader refuses a row of partial blocks itself)."""
    expected = 0
    for t in tensors:
        offset = int(t.data_offset) - data_offset
        if offset != expected:
            raise ValueError(f"tensor {t.name!r} has its data at offset {offset} of the data section, expected "
                             f"{expected} (llama.cpp refuses the file)")
        expected += -(-int(t.n_bytes) // int(alignment)) * int(alignment)  # (a stated general.alignment is np.uint32)

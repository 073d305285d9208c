"""A GGUF file's header read as llama.cpp's gguf_init reads it
(ggml/src/gguf.cpp), with only the values asked for decoded.

Every count and length is held to the bytes the file has (a 100-byte file
whose array claims 2^40 elements is refused at once), and the file is read
through a memory map. gguf's own reader made a Python object of every
element of every array, so a Llama 3 file's vocabulary (128,256 tokens and
280,147 merges) took 8 s before any RoPE key was read; here an array is
walked over, and decoded only when asked for. Layout (GGUF v2 / v3, either
byte order): magic, version u32, tensor count u64, metadata count u64, then
each key (a string: u64 length, bytes), its type u32 and value (a scalar, a
string, or an array: element type u32, count u64, elements); then each
tensor's name, dimension count u32, dimensions u64, type u32 and offset
u64; then the data section, at the next multiple of the alignment.

What llama.cpp's gguf_init refuses is refused: a version other than 2 or 3,
an empty or repeated key, an array of arrays, a general.alignment that is
not a UINT32 power of two, a tensor name of 64 bytes or more or given
twice, more than 4 dimensions, a type llama.cpp does not load or a row of
partial blocks, and tensor data not laid end to end (each padded to the
alignment) from the data section's start.
"""

from __future__ import annotations

import contextlib
import importlib
import mmap
import struct
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

# GGUF's value types (gguf's GGUFValueType): name, struct code (None: a string or an array).
_TYPES: dict[int, tuple[str, str | None]] = {
    0: ("UINT8", "B"), 1: ("INT8", "b"), 2: ("UINT16", "H"), 3: ("INT16", "h"), 4: ("UINT32", "I"),
    5: ("INT32", "i"), 6: ("FLOAT32", "f"), 7: ("BOOL", "?"), 8: ("STRING", None), 9: ("ARRAY", None),
    10: ("UINT64", "Q"), 11: ("INT64", "q"), 12: ("FLOAT64", "d")}
_STRING, _ARRAY = 8, 9
_MAX_NAME = 64  # GGML_MAX_NAME: a tensor name is shorter
_MAX_LENGTH = 1 << 30  # GGUF_MAX_STRING_LENGTH and GGUF_MAX_ARRAY_ELEMENTS: gguf_init refuses more
_DEFAULT_ALIGNMENT = 32


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

    def length(self, what: str) -> int:
        """A string's length or an array's count, at most llama.cpp's limit of 2^30."""
        n = self.uint(8, what)
        if n > _MAX_LENGTH:
            raise ValueError(f"{what} is {n}, past llama.cpp's limit of 2^30 (it refuses the file)")
        return n

    def string(self, what: str) -> bytes:
        start = self.take(self.length(what + "'s length"), what)
        return bytes(self.data[start:self.at])

    def value(self, kind: int, what: str) -> None:
        """Step over a value of GGUF type `kind` (an array: of scalars or strings, as llama.cpp takes)."""
        code = _TYPES.get(kind, ("", None))[1]
        if code is not None:
            self.take(struct.calcsize(code), what)
        elif kind == _STRING:
            self.take(self.length(what + "'s length"), what)
        elif kind == _ARRAY:
            element, count = self.uint(4, what + "'s element type"), self.length(what + "'s length")
            element_code = _TYPES.get(element, ("", None))[1]
            if element_code is not None:
                self.take(count * struct.calcsize(element_code), f"{what} ({count} values)")
            elif element == _STRING:
                for _ in range(count):  # (each at least 8 bytes of length: a lying count runs out of bytes)
                    self.value(_STRING, what)
            elif element == _ARRAY:
                raise ValueError(f"{what}: an array of arrays, which llama.cpp's gguf_init refuses")
            else:
                raise ValueError(f"{what}: an array of value type {element}, which GGUF does not have")
        else:
            raise ValueError(f"{what}: value type {kind}, which GGUF does not have")


@dataclass(frozen=True)
class Tensor:
    """One tensor's entry: its name, GGML type name, dimensions, and where its data lie (from the file's start)."""

    name: str
    type_name: str
    dims: tuple[int, ...]
    n_bytes: int
    start: int


class GgufFile:
    """A read header over the file's bytes (valid while the `opened` block lasts): its keys' types and
    values, decoded when asked for, and its tensors."""

    def __init__(self, data: bytes | mmap.mmap, order: str, fields: dict[str, tuple[int, int]],
                 tensors: list[Tensor]) -> None:
        self.data, self.order, self.fields, self.tensors = data, order, fields, tensors

    def type_name(self, key: str) -> str:
        """A key's GGUF type as gguf names them: UINT32, FLOAT32, ..., ARRAY[INT32]."""
        kind, at = self.fields[key]
        if kind != _ARRAY:
            return _TYPES[kind][0]
        return f"ARRAY[{_TYPES[self._uint(4, at)][0]}]"

    def value(self, key: str) -> Any:
        """A key's value (None where the file has none) as gguf's `contents()` gives it: a Python int, float,
        bool or str, or a list of them; a UnicodeDecodeError for a string that is not UTF-8."""
        if key not in self.fields:
            return None
        kind, at = self.fields[key]
        if kind == _ARRAY:
            element, count = self._uint(4, at), self._uint(8, at + 4)
            return self._array(element, count, at + 12)
        if kind == _STRING:
            return self._string(at)[0]
        return struct.unpack_from(self.order + str(_TYPES[kind][1]), self.data, at)[0]

    def float32(self, tensor: Tensor) -> np.ndarray:
        """An F32 tensor's values in numpy's order of its dimensions (ggml's ne reversed), as gguf's reader
        shapes them; a copy, which outlives the file's memory map."""
        flat = np.frombuffer(self.data, np.dtype(self.order + "f4"), tensor.n_bytes // 4,
                             tensor.start).astype(np.float32)
        return flat.reshape(tensor.dims[::-1]) if tensor.dims else flat

    def _uint(self, size: int, at: int) -> int:
        return int(struct.unpack_from(self.order + {4: "I", 8: "Q"}[size], self.data, at)[0])

    def _string(self, at: int) -> tuple[str, int]:
        n = self._uint(8, at)
        return bytes(self.data[at + 8:at + 8 + n]).decode("utf-8"), at + 8 + n

    def _array(self, element: int, count: int, at: int) -> list:
        if element == _STRING:
            out = []
            for _ in range(count):
                s, at = self._string(at)
                out.append(s)
            return out
        code = str(_TYPES[element][1])
        return np.frombuffer(self.data, np.dtype(self.order + code), count, at).tolist()


@contextlib.contextmanager
def opened(path: str) -> Iterator[GgufFile]:
    """The header of the GGUF file at `path`, read (a ValueError naming what llama.cpp refuses), for the block's
    length: its values are decoded from the file's memory map."""
    try:
        gguf = importlib.import_module("gguf")  # (an optional extra: GGML's types and block sizes)
    except ImportError as exc:
        raise ImportError(f"vkrope.from_gguf needs the gguf package: pip install gguf (vkrope's gguf extra); "
                          f"importing it failed: {exc}") from None
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError("it does not start with GGUF's magic")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            header = _read(data, gguf)
            try:
                yield header
            finally:
                header.data = b""  # (nothing keeps a view of the map past the block)


def _read(data: mmap.mmap, gguf: Any) -> GgufFile:
    version = struct.unpack_from("<I", data, 4)[0] if len(data) >= 8 else 0
    order = "<" if version & 0xFFFF else ">"  # (a big-endian file's version reads as v << 24)
    walk = _Walk(data, order)
    walk.take(8, "the header")
    version = struct.unpack_from(order + "I", data, 4)[0]
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}; llama.cpp reads versions 2 and 3")
    n_tensors, n_keys = walk.uint(8, "the tensor count"), walk.uint(8, "the metadata count")
    fields: dict[str, tuple[int, int]] = {}
    seen: set[bytes] = set()  # (llama.cpp compares keys as bytes; a key that is not UTF-8 is named as it decodes)
    for i in range(n_keys):
        raw = walk.string(f"metadata key {i}")
        key = raw.decode("utf-8", "replace")
        if not raw or raw in seen:
            raise ValueError(f"metadata key {i} is {'empty' if not raw else f'{key!r} again'} (llama.cpp refuses "
                             "the file)")
        seen.add(raw)
        kind = walk.uint(4, f"metadata {i}'s type")
        fields[key if key not in fields else f"{key}@{i}"] = (kind, walk.at)  # (two keys decoding alike)
        walk.value(kind, f"metadata {i}")
    header = GgufFile(data, order, fields, [])
    alignment = _alignment(header)
    infos = [_tensor_info(walk, i, gguf) for i in range(n_tensors)]
    if len({raw for raw, *_ in infos}) < len(infos):
        raise ValueError("a tensor name is given twice (llama.cpp refuses the file)")
    start = -(-walk.at // alignment) * alignment if infos else walk.at  # (the data section)
    expected = 0
    for raw, type_name, dims, n_bytes, offset in infos:
        name = raw.decode("utf-8", "replace")
        if offset != expected:
            raise ValueError(f"tensor {name!r} has its data at offset {offset} of the data section, expected "
                             f"{expected} (llama.cpp refuses the file)")
        if start + offset + n_bytes > len(data):
            raise ValueError(f"tensor {name!r}'s data run past the end of the file")
        header.tensors.append(Tensor(name, type_name, dims, n_bytes, start + offset))
        expected += -(-n_bytes // alignment) * alignment
    return header


def _alignment(header: GgufFile) -> int:
    """general.alignment (32 without it): a UINT32 power of two, as llama.cpp takes it."""
    if "general.alignment" not in header.fields:
        return _DEFAULT_ALIGNMENT
    if header.type_name("general.alignment") != "UINT32":
        raise ValueError(f"general.alignment is {header.type_name('general.alignment')}; llama.cpp takes a UINT32")
    value = int(header.value("general.alignment"))
    if value == 0 or value & (value - 1):
        raise ValueError(f"general.alignment {value} is not a power of 2 (llama.cpp refuses the file)")
    return value


def _tensor_info(walk: _Walk, i: int, gguf: Any) -> tuple[bytes, str, tuple[int, ...], int, int]:
    """Tensor i's (name as bytes, GGML type name, dimensions, bytes, data offset), as gguf_init checks them
    (`gguf`: the package, for GGML's types and block sizes)."""
    raw = walk.string(f"tensor {i}'s name")
    name = raw.decode("utf-8", "replace")
    if len(raw) >= _MAX_NAME:
        raise ValueError(f"tensor {i}'s name is {len(raw)} bytes; llama.cpp takes names under {_MAX_NAME}")
    n_dims = walk.uint(4, f"tensor {i}'s dimension count")
    if n_dims > 4:  # (GGML_MAX_DIMS)
        raise ValueError(f"tensor {i} has {n_dims} dimensions; GGUF tensors have at most 4 (llama.cpp refuses the "
                         "file)")
    dims = tuple(walk.uint(8, f"tensor {i}'s dimensions") for _ in range(n_dims))
    kind = walk.uint(4, f"tensor {i}'s type")
    offset = walk.uint(8, f"tensor {i}'s offset")
    try:
        ggml_type = gguf.GGMLQuantizationType(kind)
        block, type_size = gguf.GGML_QUANT_SIZES[ggml_type]
    except (ValueError, KeyError):
        raise ValueError(f"tensor {name!r} has GGML type {kind}, which the gguf package installed "
                         f"({_gguf_version()}) does not know") from None
    n = int(np.prod(dims, dtype=object)) if dims else 1
    if any(d >= 2**63 for d in dims) or n >= 2**63:
        raise ValueError(f"tensor {name!r} has shape {dims}: past int64 (llama.cpp refuses the file)")
    row = dims[0] if dims else 1  # (ggml's ne[0]; 1 without dimensions)
    if row % block:
        raise ValueError(f"tensor {name!r}: row size ({row}) is not a multiple of {ggml_type.name} block size "
                         f"({block})")
    return raw, ggml_type.name, dims, n // block * type_size, offset


def _gguf_version() -> str:
    """The installed gguf package's version, for a message."""
    from importlib import metadata  # noqa: PLC0415

    try:
        return metadata.version("gguf")
    except metadata.PackageNotFoundError:
        return "version unknown"

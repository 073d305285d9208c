"""A GGUF file's header read as llama.cpp's gguf_init reads it
(ggml/src/gguf.cpp), with only the values asked for decoded.

Layout (GGUF v2 / v3): magic, version u32, tensor count u64, metadata count
u64, then each key (a string: u64 length, bytes), its type u32 and value (a
scalar, a string, or an array: element type u32, count u64, elements); then
each tensor's name, dimension count u32, dimensions u64 (ggml's ne), type
u32 and offset u64; then the data section, at the next multiple of the
alignment. Either byte order is read (llama.cpp reads its host's only:
docs/guide/models.md says why vkrope reads both).

Every count and length is held to the bytes the file has, so a 100-byte
file whose array claims 2^40 elements is refused at once. The header is
read into memory, a few MiB at a time until its walk ends (a model's
weights are never read; a file cut while read is a ValueError, where a
memory map's missing page killed the process), and an array is walked
over, decoded only when asked for.

What llama.cpp's gguf_init refuses is refused: a version other than 2 or 3,
a count past int64, an empty or repeated key, a string or array of more
than 2^30, an array of arrays, a general.alignment that is not a UINT32
power of two, a tensor name of 64 bytes or more or given twice, more than 4
dimensions or a shape past int64, a type llama.cpp does not have
(vkrope/data/ggml_types.json) or a row of partial blocks, and tensor data
not laid end to end (each padded to the alignment) from the data section's
start; and what its model loader refuses: two tensors of one name. Names
and string values are C strings to llama.cpp (`c_str()`, strcmp): a key or
tensor is found by its bytes up to a NUL (the first of a name, as
gguf_find_key's loop finds it), and a string value ends at its first NUL.
"""

from __future__ import annotations

import contextlib
import functools
import os
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator, NamedTuple

import numpy as np

from . import data

# The file format as llama.cpp's tree states it (vkrope/data/ggml_types.json, scripts/ggml_types.py).
_FORMAT = data.load("ggml_types.json")
# GGUF's value types (GGUFValueType): name, struct code (None: a string or an array).
_TYPES: dict[int, tuple[str, str | None]] = {int(k): (v[0], v[1]) for k, v in _FORMAT["value_types"].items()}
_STRING, _ARRAY = (next(k for k, v in _TYPES.items() if v[0] == name) for name in ("STRING", "ARRAY"))
_MAX_NAME = int(_FORMAT["max_name"])  # GGML_MAX_NAME: a tensor name is shorter
# GGUF_MAX_STRING_LENGTH and GGUF_MAX_ARRAY_ELEMENTS: gguf_init refuses more
_MAX_STRING, _MAX_ARRAY = int(_FORMAT["max_string_length"]), int(_FORMAT["max_array_elements"])
_INT64_MAX = 2**63 - 1
_DEFAULT_ALIGNMENT = int(_FORMAT["default_alignment"])
_FIRST_READ = 1 << 22  # bytes of the header read at first (4 MiB; then what the walk needs, at least twice that)
# the fewest bytes one metadata entry (key length, type, a 1-byte value) and one tensor entry (name length,
# dimension count, type, offset) take: a count the rest of the file cannot hold is refused before any walk
_MIN_KV, _MIN_TENSOR = 8 + 4 + 1, 8 + 4 + 4 + 8


class _More(Exception):
    """The walk needs the file's bytes up to `end`, past those read so far."""

    def __init__(self, end: int) -> None:
        super().__init__(end)
        self.end = end


def _unpack_uint(data: bytes, order: str, size: int, at: int) -> int:
    return int(struct.unpack_from(order + {2: "H", 4: "I", 8: "Q"}[size], data, at)[0])


class _Walk:
    """A cursor over the header's bytes read so far (`data`, of a file of `size` bytes) that refuses to step
    past the file's end, and asks for more of it (_More) past theirs."""

    def __init__(self, data: bytes, size: int, order: str) -> None:
        self.data, self.size, self.order, self.at = data, size, order, 0

    def take(self, n: int, what: str) -> int:
        if n < 0 or n > self.size - self.at:
            raise ValueError(f"{what} needs {n} bytes at offset {self.at}; the file has {self.size - self.at} left")
        if n > len(self.data) - self.at:
            raise _More(self.at + n)
        self.at += n
        return self.at - n

    def uint(self, size: int, what: str) -> int:
        return _unpack_uint(self.data, self.order, size, self.take(size, what))

    def length(self, what: str, array: bool = False) -> int:
        """A string's length or (`array`) an array's count, at most llama.cpp's limit of each."""
        n = self.uint(8, what)
        most = _MAX_ARRAY if array else _MAX_STRING
        if n > most:
            raise ValueError(f"{what} is {n}, past llama.cpp's limit of {_limit(most)} (it refuses the file)")
        return n

    def string(self, what: str) -> bytes:
        start = self.take(self.length(what + "'s length"), what)
        return self.data[start:self.at]

    def skip_value(self, kind: int, what: str) -> int | None:
        """Step over a value of GGUF type `kind` (an array: of scalars or strings, as llama.cpp takes); an
        array's element type (None for another value)."""
        code = _TYPES.get(kind, ("", None))[1]
        if code is not None:
            self.take(struct.calcsize(code), what)
            return None
        if kind == _STRING:
            self.take(self.length(what + "'s length"), what)
            return None
        if kind != _ARRAY:
            raise ValueError(f"{what}: value type {kind}, which GGUF does not have")
        element, count = self.uint(4, what + "'s element type"), self.length(what + "'s length", array=True)
        element_code = _TYPES.get(element, ("", None))[1]
        if element_code is not None:
            self.take(count * struct.calcsize(element_code), f"{what} ({count} values)")
        elif element == _STRING:
            self.skip_strings(count, what)
        elif element == _ARRAY:
            raise ValueError(f"{what}: an array of arrays, which llama.cpp's gguf_init refuses")
        else:
            raise ValueError(f"{what}: an array of value type {element}, which GGUF does not have")
        return element

    def skip_strings(self, count: int, what: str) -> None:
        """Step over `count` strings (a vocabulary's hundreds of thousands: one loop, no call per string;
        where bytes run out, `take` says whether the file or the read ended)."""
        length = struct.Struct(self.order + "Q")
        data, at, have = self.data, self.at, len(self.data)
        for _ in range(count):  # (each at least 8 bytes of length: a lying count runs out of bytes)
            if at + 8 > have:
                self.at = at
                self.take(8, what + "'s length")
            n = length.unpack_from(data, at)[0]
            if n > _MAX_STRING:
                self.at = at
                raise ValueError(f"{what}'s length is {n}, past llama.cpp's limit of {_limit(_MAX_STRING)} (it "
                                 "refuses the file)")
            at += 8
            if n > have - at:
                self.at = at
                self.take(n, what)
            at += n
        self.at = at


@dataclass(frozen=True)
class Tensor:
    """One tensor's entry: its name (its C string), GGML type name, dimensions (ggml's ne: the first is a
    row), bytes, and where its data start (an offset from the file's start)."""

    name: str
    type_name: str
    dims: tuple[int, ...]
    n_bytes: int
    start: int


class _Info(NamedTuple):
    """A tensor entry as the walk reads it: its name's C string, its type, dims, bytes, offset."""

    name: bytes
    type_name: str
    dims: tuple[int, ...]
    n_bytes: int
    offset: int


class GgufFile:
    """A read header: its keys' types and values (decoded when asked for, from the header's bytes in memory),
    its tensors, and their data read from the file while the `opened` block lasts."""

    def __init__(self, data: bytes, order: str, fields: dict[str, tuple[int, int, int | None]],
                 file: BinaryIO) -> None:
        self.data, self.order, self.fields, self.file = data, order, fields, file
        self.tensors: list[Tensor] = []

    def type_name(self, key: str) -> str:
        """A key's GGUF type as gguf names them: UINT32, FLOAT32, ..., ARRAY[INT32]."""
        kind, _, element = self.fields[key]
        return _TYPES[kind][0] if element is None else f"ARRAY[{_TYPES[element][0]}]"

    def value(self, key: str) -> Any:
        """A key's value (None where the file has none) as gguf's `contents()` gives it, strings as llama.cpp
        reads them (up to a NUL): a Python int, float, bool or str, or a list of them; a UnicodeDecodeError
        for a string that is not UTF-8."""
        if key not in self.fields:
            return None
        kind, at, element = self.fields[key]
        if element is not None:
            return self._array(element, _unpack_uint(self.data, self.order, 8, at + 4), at + 12)
        if kind == _STRING:
            return self._string(at)[0]
        return struct.unpack_from(self.order + str(_TYPES[kind][1]), self.data, at)[0]

    def length(self, key: str) -> int:
        """How many values a key's array holds, or bytes its string (1 for any other), read without decoding
        them."""
        kind, at, element = self.fields[key]
        if element is not None:
            return _unpack_uint(self.data, self.order, 8, at + 4)
        return _unpack_uint(self.data, self.order, 8, at) if kind == _STRING else 1

    def float32(self, tensor: Tensor) -> np.ndarray:
        """An F32 tensor's values in numpy's order of its dimensions (ggml's ne reversed), as gguf's reader
        shapes them, read from the file; a ValueError where it ends before them (cut since the header was read)."""
        if tensor.type_name != "F32":
            raise ValueError(f"tensor {tensor.name!r} is {tensor.type_name}, not F32")
        raw = _read_at(self.file, tensor.n_bytes, tensor.start)
        if len(raw) != tensor.n_bytes:
            raise ValueError(f"tensor {tensor.name!r}'s data: the file ends before them (it was cut while read)")
        flat = np.frombuffer(raw, np.dtype(self.order + "f4")).astype(np.float32)
        return flat.reshape(tensor.dims[::-1]) if tensor.dims else flat

    def _string(self, at: int) -> tuple[str, int]:
        n = _unpack_uint(self.data, self.order, 8, at)
        return self.data[at + 8:at + 8 + n].partition(b"\0")[0].decode("utf-8"), at + 8 + n

    def _array(self, element: int, count: int, at: int) -> list:
        if element == _STRING:
            out = []
            for _ in range(count):
                s, at = self._string(at)
                out.append(s)
            return out
        return np.frombuffer(self.data, np.dtype(self.order + str(_TYPES[element][1])), count, at).tolist()


def _read_at(f: BinaryIO, n: int, at: int) -> bytes:
    """`n` bytes of `f` from `at`, fewer only where the file ends (one pread returns at most 2 GiB on Linux)."""
    parts, got = [], 0
    while got < n:
        part = os.pread(f.fileno(), min(n - got, 1 << 30), at + got)
        if not part:
            break
        parts.append(part)
        got += len(part)
    return b"".join(parts)


@contextlib.contextmanager
def opened(path: str) -> Iterator[GgufFile]:
    """The header of the GGUF file at `path`, read (a ValueError naming what llama.cpp refuses), and the file
    open for its tensors' data for the block's length."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:  # (an empty file, or one that states no size: a /proc file's contents are no GGUF's)
            raise ValueError("it is empty (0 bytes, as its size says; a file under /proc says so whatever it holds)")
        want = min(size, _FIRST_READ)
        while True:
            data = _read_at(f, want, 0)
            if len(data) < want:  # (the file was cut while read: what is there is all of it)
                size = len(data)
            try:
                header = _read(data, size, f)
                break
            except _More as more:
                want = min(size, max(more.end, 2 * len(data)))
        yield header


def _read(data: bytes, size: int, file: BinaryIO) -> GgufFile:
    """The header in `data`, the first bytes of a file of `size` (_More where the walk needs more of them)."""
    if data[:4] != b"GGUF":
        raise ValueError("it does not start with GGUF's magic")
    version = struct.unpack_from("<I", data, 4)[0] if len(data) >= 8 else 0
    order = "<" if version & 0xFFFF else ">"  # (a big-endian file's version reads as v << 24)
    walk = _Walk(data, size, order)
    walk.take(8, "the start (magic and version)")
    version = struct.unpack_from(order + "I", data, 4)[0]
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}; llama.cpp reads versions 2 and 3")
    n_tensors, n_keys = walk.uint(8, "the tensor count"), walk.uint(8, "the metadata count")
    if n_keys * _MIN_KV + n_tensors * _MIN_TENSOR > size - walk.at:  # (gguf_init: past int64, refused too)
        raise ValueError(f"the header counts {n_keys} metadata entries and {n_tensors} tensors, more than the "
                         f"file's {size - walk.at} bytes left can hold")
    fields: dict[str, tuple[int, int, int | None]] = {}
    seen: set[bytes] = set()  # (gguf_init compares keys as whole strings; lookups stop at a NUL)
    for i in range(n_keys):
        raw = walk.string(f"metadata key {i}")
        # (surrogateescape: bytes that are not UTF-8 give distinct str, so keys apart as bytes stay apart)
        key = raw.partition(b"\0")[0].decode("utf-8", "surrogateescape")
        if not raw or raw in seen:
            raise ValueError(f"metadata key {i} is {'empty' if not raw else f'{key!r} again'} (llama.cpp refuses "
                             "the file)")
        seen.add(raw)
        kind = walk.uint(4, f"metadata {i}'s type")
        at = walk.at
        fields.setdefault(key, (kind, at, walk.skip_value(kind, f"metadata {i}")))  # (the first of a name is found)
    header = GgufFile(data, order, fields, file)
    alignment = _alignment(header)
    infos = [_tensor_info(walk, i) for i in range(n_tensors)]
    if len({info.name for info in infos}) < len(infos):  # (gguf_init compares whole names, its loader C strings)
        raise ValueError("a tensor name is given twice (llama.cpp refuses the file)")
    start = -(-walk.at // alignment) * alignment if infos else walk.at  # (the data section)
    expected = 0
    for info in infos:
        name = info.name.decode("utf-8", "surrogateescape")
        if info.offset != expected:
            raise ValueError(f"tensor {name!r} has its data at offset {info.offset} of the data section, expected "
                             f"{expected} (llama.cpp refuses the file)")
        if start + info.offset + info.n_bytes > size:
            raise ValueError(f"tensor {name!r}'s data run past the end of the file")
        header.tensors.append(Tensor(name, info.type_name, info.dims, info.n_bytes, start + info.offset))
        expected += -(-info.n_bytes // alignment) * alignment
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


def _limit(n: int) -> str:
    """A limit as its power of two where it is one (2^30), else as it is."""
    return f"2^{n.bit_length() - 1}" if n > 0 and n & (n - 1) == 0 else str(n)


@functools.lru_cache(maxsize=1)
def ggml_types() -> dict[int, tuple[str, int, int]]:
    """GGML's tensor types: number -> (name, values per block, bytes per block), vkrope/data/ggml_types.json
    (scripts/ggml_types.py, from llama.cpp's tree)."""
    return {int(k): (v[0], int(v[1]), int(v[2])) for k, v in _FORMAT["types"].items()}


def _tensor_info(walk: _Walk, i: int) -> _Info:
    """Tensor i's entry, as gguf_init checks it."""
    raw = walk.string(f"tensor {i}'s name")
    if len(raw) >= _MAX_NAME:
        raise ValueError(f"tensor {i}'s name is {len(raw)} bytes; llama.cpp takes names under {_MAX_NAME}")
    c_name = raw.partition(b"\0")[0]
    name = c_name.decode("utf-8", "surrogateescape")
    n_dims = walk.uint(4, f"tensor {i}'s dimension count")
    if n_dims > 4:  # (GGML_MAX_DIMS)
        raise ValueError(f"tensor {i} has {n_dims} dimensions; GGUF tensors have at most 4 (llama.cpp refuses the "
                         "file)")
    dims = tuple(walk.uint(8, f"tensor {i}'s dimensions") for _ in range(n_dims))
    kind = walk.uint(4, f"tensor {i}'s type")
    offset = walk.uint(8, f"tensor {i}'s offset")
    if kind not in ggml_types():
        raise ValueError(f"tensor {name!r} has GGML type {kind}, which llama.cpp does not have (its types: "
                         "vkrope/data/ggml_types.json)")
    type_name, block, type_size = ggml_types()[kind]
    ne = list(dims) + [1] * (4 - n_dims)
    elements = ne[0]
    for d in ne[1:]:  # (gguf_init's running product, in its order: a later 0 does not undo an overflow)
        if elements > _INT64_MAX or d > _INT64_MAX or (d > 1 and _INT64_MAX // d < elements):
            raise ValueError(f"tensor {name!r} has shape {dims}: past int64 (llama.cpp refuses the file)")
        elements *= d
    if ne[0] > _INT64_MAX:
        raise ValueError(f"tensor {name!r} has shape {dims}: past int64 (llama.cpp refuses the file)")
    if ne[0] % block:
        raise ValueError(f"tensor {name!r}: row size ({ne[0]}) is not a multiple of {type_name} block size "
                         f"({block})")
    # (exact bytes: where ggml's size_t arithmetic would wrap, the file's data cannot be there, and is refused)
    return _Info(c_name, type_name, dims, elements // block * type_size, offset)

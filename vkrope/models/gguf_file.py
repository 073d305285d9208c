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
walked once, up to 4 MiB read at a time (a model's weights are never read; a
file cut while read is a ValueError, where a memory map's missing page
killed the process): a scalar value is kept as read, a string or an array
is kept where it is small and the header's kept values are few (_KEEP_VALUE,
_KEEP_ALL), else stepped over without reading it (an array of strings: their
lengths only); no value is read from the file afterwards. So a header's size
costs no more than those bounds of memory, and its reading time grows only
with its count of keys, tensors and strings, each bounded (_MAX_KEYS,
_MAX_KEY, _MAX_TENSORS, _MAX_STRINGS): a sparse file's array of 2^30 values
took gigabytes, a million keys 22 s.

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
# bytes of the header read at a time: from 4 KiB after a jump (a value stepped over) to 4 MiB while the walk reads
# on (a key after each of many skipped arrays read 4 MiB again: minutes for a sparse file's 2^16 keys)
_MIN_WINDOW, _WINDOW = 1 << 12, 1 << 22
# the fewest bytes one metadata entry (key length, type, a 1-byte value) and one tensor entry (name length,
# dimension count, type, offset) take: a count the rest of the file cannot hold is refused before any walk
_MIN_KV, _MIN_TENSOR = 8 + 4 + 1, 8 + 4 + 4 + 8
# What vkrope walks, at most (llama.cpp bounds none but by memory): keys (a model has about 50) of at most 1 KiB
# each, tensors (a few thousand; an MoE's experts unmerged, tens of thousands) and strings in the header's
# arrays together (a vocabulary and its merges: a few hundred thousand each). A sparse file can state any count
# its zeros fill; walking llama.cpp's 2^30 strings took minutes, a million keys 22 s. Each bound walks in
# seconds here.
_MAX_KEYS, _MAX_KEY, _MAX_TENSORS, _MAX_STRINGS = 1 << 16, 1 << 10, 1 << 18, 1 << 22
# The bytes of a string's or array's value the walk keeps, at most, and of all values together: the keys vkrope
# reads hold a name or one value per layer (gguf.py reads at most 2^16 values, or 4096 bytes); a vocabulary's
# arrays are stepped over, as is anything past the total (a sparse file's 2^16 keys of 2^16 values each).
_KEEP_VALUE, _KEEP_ALL = 1 << 19, 1 << 26


class PastLimit(ValueError):
    """A header past what vkrope walks (_MAX_KEYS, _MAX_KEY, _MAX_TENSORS, _MAX_STRINGS) or keeps (_KEEP_ALL):
    a GGUF file, which llama.cpp may read, that vkrope refuses."""


def _unpack_uint(data: bytes, order: str, size: int, at: int) -> int:
    return int(struct.unpack_from(order + {2: "H", 4: "I", 8: "Q"}[size], data, at)[0])


class _Walk:
    """A cursor over a file of `size` bytes that refuses to step past its end: `take` reads bytes (a window of
    the file held, read _WINDOW at a time), `skip` steps over them unread, `value` keeps a value's bytes where
    they are few (_kept)."""

    def __init__(self, file: BinaryIO, size: int, order: str) -> None:
        self.file, self.size, self.order, self.at = file, size, order, 0
        self.window, self.window_at = b"", 0
        self.kept = 0  # (bytes of values kept: _kept)
        self.strings = 0  # (strings of the arrays walked: _MAX_STRINGS)

    def skip(self, n: int, what: str) -> int:
        """Step over `n` bytes; where they start."""
        if n < 0 or n > self.size - self.at:
            raise ValueError(f"{what} needs {n} bytes at offset {self.at}; the file has {self.size - self.at} left")
        self.at += n
        return self.at - n

    def take(self, n: int, what: str) -> bytes:
        """The next `n` bytes, read."""
        start = self.skip(n, what) - self.window_at
        if start < 0 or start + n > len(self.window):
            self._fill(self.at - n, n, what)
            start = 0
        return self.window[start:start + n]

    def _fill(self, at: int, n: int, what: str) -> None:
        """The window moved to the file's bytes from `at`, at least `n` of them (the file's size said they are
        there: fewer is a file cut while read)."""
        on = at == self.window_at + len(self.window)  # (reading on: a larger window; after a jump, a small one)
        size = max(n, min(_WINDOW, 2 * len(self.window) if on else _MIN_WINDOW))
        self.window = _read_at(self.file, min(size, self.size - at), at)
        self.window_at = at
        if len(self.window) < n:
            raise ValueError(f"{what} needs {n} bytes at offset {at}; the file has {len(self.window)} left (it was "
                             "cut while read)")

    def uint(self, size: int, what: str) -> int:
        return _unpack_uint(self.take(size, what), self.order, size, 0)

    def length(self, what: str, array: bool = False) -> int:
        """A string's length or (`array`) an array's count, at most llama.cpp's limit of each."""
        n = self.uint(8, what)
        most = _MAX_ARRAY if array else _MAX_STRING
        if n > most:
            raise ValueError(f"{what} is {n}, past llama.cpp's limit of {_limit(most)} (it refuses the file)")
        return n

    def string(self, what: str, most: int, limit: str, error: type[ValueError] = ValueError) -> bytes:
        """A string of at most `most` bytes (else `error` saying `limit`, before its bytes are read)."""
        n = self.length(what + "'s length")
        if n > most:
            raise error(f"{what} is {n} bytes; {limit}")
        return self.take(n, what)

    def value(self, kind: int, what: str) -> tuple[int | None, int, Any]:
        """Walk over a value of GGUF type `kind` (an array: of scalars or strings, as llama.cpp takes): (an
        array's element type or None, a string's or array's length (1 for a scalar), its bytes where kept (a
        scalar: its value), else None)."""
        code = _TYPES.get(kind, ("", None))[1]
        if code is not None:
            return None, 1, struct.unpack(self.order + code, self.take(struct.calcsize(code), what))[0]
        if kind == _STRING:
            n = self.length(what + "'s length")
            return None, n, self._kept(self.skip(n, what), n, what)
        if kind != _ARRAY:
            raise ValueError(f"{what}: value type {kind}, which GGUF does not have")
        element, count = self.uint(4, what + "'s element type"), self.length(what + "'s length", array=True)
        element_code = _TYPES.get(element, ("", None))[1]
        start = self.at
        if element_code is not None:
            self.skip(count * struct.calcsize(element_code), f"{what} ({count} values)")
        elif element == _STRING:
            self.strings += count
            if self.strings > _MAX_STRINGS:
                raise PastLimit(f"{what} is an array of {count} strings, {self.strings} in the header's arrays so "
                                f"far; vkrope steps over at most {_limit(_MAX_STRINGS)} in all (a vocabulary holds a "
                                f"few hundred thousand; llama.cpp allows {_limit(_MAX_ARRAY)} an array, which it "
                                "reads into memory)")
            self.skip_strings(count, what)
        elif element == _ARRAY:
            raise ValueError(f"{what}: an array of arrays, which llama.cpp's gguf_init refuses")
        else:
            raise ValueError(f"{what}: an array of value type {element}, which GGUF does not have")
        return element, count, self._kept(start, self.at - start, what)

    def _kept(self, start: int, n: int, what: str) -> bytes | None:
        """The `n` bytes of a value walked over from `start`, read and counted against _KEEP_ALL where they fit
        _KEEP_VALUE and it; else None (not read)."""
        if n > _KEEP_VALUE or n > _KEEP_ALL - self.kept:
            return None
        self.kept += n
        end = self.at
        self.at = start
        raw = self.take(n, what)
        self.at = end
        return raw

    def skip_strings(self, count: int, what: str) -> None:
        """Step over `count` strings, reading their lengths only (a vocabulary's hundreds of thousands: one loop,
        no call per string but where the window ends; `take` and `skip` say whether the file ended)."""
        length = struct.Struct(self.order + "Q")
        for _ in range(count):  # (each at least 8 bytes of length: a lying count runs out of bytes)
            at = self.at - self.window_at
            if at < 0 or at + 8 > len(self.window):
                self.take(8, what + "'s length")
                at = self.at - self.window_at - 8
            else:
                self.at += 8
            n = length.unpack_from(self.window, at)[0]
            if n > _MAX_STRING:
                raise ValueError(f"{what}'s length is {n}, past llama.cpp's limit of {_limit(_MAX_STRING)} (it "
                                 "refuses the file)")
            if n > self.size - self.at:
                self.skip(n, what)
            self.at += n


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
    """A walked header: its keys' types and values (decoded when asked for, from the bytes the walk kept), its
    tensors, and their data read from the file while the `opened` block lasts."""

    def __init__(self, order: str, fields: dict[str, tuple[int, int | None, int, Any]], file: BinaryIO) -> None:
        # fields: key -> (GGUF type, an array's element type or None, a string's or array's length (1 for a
        # scalar), the value's bytes as kept (a scalar: its value) or None where not kept)
        self.order, self.fields, self.file = order, fields, file
        self.tensors: list[Tensor] = []

    def type_name(self, key: str) -> str:
        """A key's GGUF type as gguf names them: UINT32, FLOAT32, ..., ARRAY[INT32]."""
        kind, element, _, _ = self.fields[key]
        return _TYPES[kind][0] if element is None else f"ARRAY[{_TYPES[element][0]}]"

    def value(self, key: str) -> Any:
        """A key's value (None where the file has none) as gguf's `contents()` gives it, strings as llama.cpp
        reads them (up to a NUL): a Python int, float, bool or str, or a list of them; a UnicodeDecodeError
        for a string that is not UTF-8; a ValueError for a value the walk did not keep (_KEEP_VALUE)."""
        if key not in self.fields:
            return None
        kind, element, n, raw = self.fields[key]
        if kind != _STRING and element is None:
            return raw
        if raw is None:
            raise PastLimit(f"{key}: {'a string of' if element is None else 'an array of'} {n} "
                            f"{'bytes' if element is None else 'values'}, which vkrope did not keep: it keeps a "
                            f"value of at most {_limit(_KEEP_VALUE)} bytes and {_limit(_KEEP_ALL)} in all, which "
                            "the header's values before it took (llama.cpp reads the file)")
        if element is None:
            return raw.partition(b"\0")[0].decode("utf-8")
        if element == _STRING:
            out, at = [], 0
            for _ in range(n):
                size = _unpack_uint(raw, self.order, 8, at)
                out.append(raw[at + 8:at + 8 + size].partition(b"\0")[0].decode("utf-8"))
                at += 8 + size
            return out
        return np.frombuffer(raw, np.dtype(self.order + str(_TYPES[element][1])), n).tolist()

    def length(self, key: str) -> int:
        """How many values a key's array holds, or bytes its string (1 for any other), read without decoding
        them."""
        return int(self.fields[key][2])

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
        yield _read(f, size)


def _read(file: BinaryIO, size: int) -> GgufFile:
    """The header of `file`, of `size` bytes."""
    head = _read_at(file, 8, 0)
    if head[:4] != b"GGUF":
        raise ValueError("it does not start with GGUF's magic")
    version = struct.unpack_from("<I", head, 4)[0] if len(head) >= 8 else 0
    order = "<" if version & 0xFFFF else ">"  # (a big-endian file's version reads as v << 24)
    walk = _Walk(file, size, order)
    walk.take(8, "the start (magic and version)")
    version = struct.unpack_from(order + "I", head, 4)[0]
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version}; llama.cpp reads versions 2 and 3")
    n_tensors, n_keys = walk.uint(8, "the tensor count"), walk.uint(8, "the metadata count")
    if n_keys * _MIN_KV + n_tensors * _MIN_TENSOR > size - walk.at:  # (gguf_init: past int64, refused too)
        raise ValueError(f"the header counts {n_keys} metadata entries and {n_tensors} tensors, more than the "
                         f"file's {size - walk.at} bytes left can hold")
    for count, most, what in ((n_keys, _MAX_KEYS, "metadata entries"), (n_tensors, _MAX_TENSORS, "tensors")):
        if count > most:
            raise PastLimit(f"the header counts {count} {what}; vkrope reads at most {_limit(most)} (llama.cpp "
                             "bounds them by memory alone)")
    fields: dict[str, tuple[int, int | None, int, Any]] = {}
    seen: set[bytes] = set()  # (gguf_init compares keys as whole strings; lookups stop at a NUL)
    for i in range(n_keys):
        raw = walk.string(f"metadata key {i}", _MAX_KEY, f"vkrope reads keys of at most {_limit(_MAX_KEY)} bytes (a "
                          f"model's are tens; llama.cpp takes up to {_limit(_MAX_STRING)})", PastLimit)
        # (surrogateescape: bytes that are not UTF-8 give distinct str, so keys apart as bytes stay apart)
        key = raw.partition(b"\0")[0].decode("utf-8", "surrogateescape")
        if not raw or raw in seen:
            raise ValueError(f"metadata key {i} is {'empty' if not raw else f'{key!r} again'} (llama.cpp refuses "
                             "the file)")
        seen.add(raw)
        kind = walk.uint(4, f"metadata {i}'s type")
        fields.setdefault(key, (kind, *walk.value(kind, f"metadata {i}")))  # (the first of a name is found)
    header = GgufFile(order, fields, file)
    alignment = _alignment(header)
    infos: list[_Info] = []
    names: set[bytes] = set()
    for i in range(n_tensors):
        infos.append(_tensor_info(walk, i))
        if infos[-1].name in names:  # (gguf_init compares whole names, its loader C strings)
            raise ValueError("a tensor name is given twice (llama.cpp refuses the file)")
        names.add(infos[-1].name)
    if walk.at and len(_read_at(file, 1, walk.at - 1)) != 1:  # (a value stepped over unread, cut since: the size
        raise ValueError(f"the header ends at offset {walk.at}; the file ends before (it was cut while read)")  # lied)
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
    raw = walk.string(f"tensor {i}'s name", _MAX_NAME - 1, f"llama.cpp takes names under {_MAX_NAME}")
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

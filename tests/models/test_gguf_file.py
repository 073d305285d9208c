"""vkrope's GGUF header reader (vkrope/models/gguf_file.py) against gguf's
own reader (gguf.GGUFReader, the package's, which decodes every value): the
same values, GGUF types, tensor types, sizes, offsets and data, for files
gguf's writer makes in both byte orders; and what llama.cpp's gguf_init
refuses (ggml/src/gguf.cpp), refused by name."""

from __future__ import annotations

import os
import struct

import gguf
import numpy as np
import pytest

import vkrope
from gguf_writer import add_values, finish
from vkrope.models import gguf_file

SCALARS = [("add_uint8", 200), ("add_int8", -100), ("add_uint16", 60000), ("add_int16", -30000),
           ("add_uint32", 4_000_000_000), ("add_int32", -2_000_000_000), ("add_float32", 0.1),
           ("add_bool", True), ("add_uint64", 2**63 + 5), ("add_int64", -(2**62)), ("add_float64", 0.1),
           ("add_string", "grüße, 世界")]
ARRAYS = [[1, 2, 3], [-1.5, 2.25], [True, False], ["a", "ünï", ""], []]


def _write(path, endian: gguf.GGUFEndian, alignment: int | None) -> str:
    w = gguf.GGUFWriter(str(path), arch="llama", endianess=endian)
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for i, (add, value) in enumerate(SCALARS):
        getattr(w, add)(f"llama.s{i}", value)
    for i, value in enumerate(ARRAYS):
        w.add_array(f"llama.a{i}", value)
    w.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(1000)])
    rng = np.random.default_rng(1)
    w.add_tensor("rope_freqs.weight", rng.standard_normal(64).astype(np.float32))
    w.add_tensor("m.f16", rng.standard_normal((3, 5)).astype(np.float16))
    w.add_tensor("m.q8", rng.integers(0, 255, (2, 34), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("m.f32", rng.standard_normal((2, 3, 4)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return str(path)


def _their_type(field) -> str:
    if field.types[0].name != "ARRAY":
        return field.types[0].name
    if len(field.types) > 1:
        return f"ARRAY[{field.types[1].name}]"
    return f"ARRAY[{gguf.GGUFValueType(int(field.parts[3][0])).name}]"  # (an empty array: the header's type)


@pytest.mark.parametrize("endian", [gguf.GGUFEndian.LITTLE, gguf.GGUFEndian.BIG], ids=["little", "big"])
@pytest.mark.parametrize("alignment", [None, 64])
def test_the_header_reads_as_ggufs_reader_reads_it(tmp_path, endian, alignment):
    path = _write(tmp_path / "m.gguf", endian, alignment)
    theirs = gguf.GGUFReader(path)
    fields = {k: f for k, f in theirs.fields.items() if not k.startswith("GGUF.")}  # (its header as fields too)
    with gguf_file.opened(path) as ours:
        assert list(ours.fields) == list(fields)
        for key, field in fields.items():
            assert ours.type_name(key) == _their_type(field), key
            mine, want = ours.value(key), field.contents()
            assert type(mine) is type(want) and mine == want, key
            if isinstance(want, list):
                assert [type(v) for v in mine] == [type(v) for v in want], key
        assert [t.name for t in ours.tensors] == [t.name for t in theirs.tensors]
        for mine_t, t in zip(ours.tensors, theirs.tensors):
            assert (mine_t.type_name, mine_t.n_bytes, mine_t.start) == (t.tensor_type.name, t.n_bytes, t.data_offset)
            assert mine_t.dims == tuple(int(d) for d in t.shape)
            if mine_t.type_name == "F32":
                np.testing.assert_array_equal(ours.float32(mine_t), np.asarray(t.data, np.float32))
    assert ours.file.closed  # (the file is not held past the block)


def _s(b: bytes) -> bytes:
    return struct.pack("<Q", len(b)) + b


def _file(kvs: list[bytes], tensors: list[bytes] = (), version: int = 3, pad: bytes = b"") -> bytes:
    arch = _s(b"general.architecture") + struct.pack("<I", 8) + _s(b"llama")
    body = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs) + 1) + arch + b"".join(kvs) + b"".join(tensors)
    return body + b"\0" * (-len(body) % 32) + pad


def _u32(key: bytes, v: int) -> bytes:
    return _s(key) + struct.pack("<II", 4, v)


def _tensor(name: bytes, dims: tuple[int, ...], kind: int = 0, offset: int = 0) -> bytes:
    return _s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", kind, offset)


@pytest.mark.parametrize("content, match", [
    (_file([], version=1), r"GGUF version 1; llama.cpp reads versions 2 and 3"),
    (_file([], version=4), r"GGUF version 4"),
    (_file([_u32(b"a", 1), _u32(b"a", 2)]), r"metadata key 2 is 'a' again"),
    (_file([_u32(b"", 1)]), r"metadata key 1 is empty"),
    (_file([_s(b"general.alignment") + struct.pack("<IQ", 10, 64)]), r"general.alignment is UINT64; llama.cpp takes"),
    (_file([_u32(b"general.alignment", 48)]), r"general.alignment 48 is not a power of 2"),
    (_file([], [_tensor(b"t", (4,)), _tensor(b"t", (4,), offset=32)], pad=b"\0" * 64), r"a tensor name is given twice"),
    (_file([], [_tensor(b"x" * 64, (4,))], pad=b"\0" * 16), r"tensor 0's name is 64 bytes"),
    (_file([], [_tensor(b"t", (4,), kind=4)], pad=b"\0" * 16), r"tensor 't' has GGML type 4, which llama.cpp does not have"),
    (_file([], [_tensor(b"t", (20,), kind=8)], pad=b"\0" * 64), r"tensor .t.: row size \(20\) is not a multiple of Q8_0"),
    (_file([], [_tensor(b"t", (2**62, 4))]), r"tensor 't' has shape .*: past int64"),
    (_file([], [_tensor(b"t", (64,))], pad=b"\0" * 16), r"tensor 't''s data run past the end of the file"),
    (b"GGML" + bytes(28), r"it does not start with GGUF's magic"),
    (b"", r"it is empty \(0 bytes, as its size says"),  # (a /proc file says 0 too: its contents are not read)
    (_file([], [_tensor(b"t", (), kind=8)], pad=b"\0" * 64), r"tensor 't': row size \(1\) is not a multiple of Q8_0"),
    (_file([_s(b"a\xff") + struct.pack("<II", 4, 1), _s(b"a\xff") + struct.pack("<II", 4, 2)]),
     r"metadata key 2 is 'a\\udcff' again"),
])
def test_what_llama_cpp_refuses_is_refused_by_name(tmp_path, content, match):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        with gguf_file.opened(str(path)):
            pass
    with pytest.raises(ValueError, match=r"is not a GGUF file \(ValueError: " + match):
        vkrope.from_gguf(str(path))


def test_a_strings_and_an_arrays_bounds_are_their_own(tmp_path, monkeypatch):
    """gguf.cpp bounds a string's length (GGUF_MAX_STRING_LENGTH) and an array's count (GGUF_MAX_ARRAY_ELEMENTS)
    apart (both 2^30 today, vkrope/data/ggml_types.json): made small one at a time, each refuses only what it
    bounds (a string in an array by the string's), and both a step larger refuse nothing."""
    path = tmp_path / "m.gguf"
    long = b"x" * 30  # (longer than any key of the file: general.architecture is 20 bytes)
    string = _s(b"s") + struct.pack("<I", 8) + _s(long)
    array = _s(b"a") + struct.pack("<IIQ", 9, 4, 30) + struct.pack("<30I", *range(30))
    path.write_bytes(_file([string, array]))
    names = tmp_path / "names.gguf"
    names.write_bytes(_file([_s(b"n") + struct.pack("<IIQ", 9, 8, 2) + _s(long) + _s(b"g")]))
    cases = ((path, "_MAX_STRING", 29, "metadata 1's length is 30"), (path, "_MAX_ARRAY", 29, "metadata 2's length is 30"),
             (names, "_MAX_STRING", 29, "metadata 1's length is 30"), (names, "_MAX_ARRAY", 29, None),
             (path, "_MAX_STRING", 30, None), (path, "_MAX_ARRAY", 30, None))
    for file, bound, limit, refused in cases:
        monkeypatch.setattr(gguf_file, bound, limit)
        if refused is None:
            with gguf_file.opened(str(file)) as g:
                assert (g.value("s"), g.value("a")) == ("x" * 30, list(range(30))) if file == path else \
                    g.value("n") == ["x" * 30, "g"]
        else:
            with pytest.raises(ValueError, match=refused + ", past llama.cpp's limit of 29"):
                with gguf_file.opened(str(file)):
                    pass
        monkeypatch.undo()


def test_keys_apart_as_bytes_are_two_keys(tmp_path):
    """llama.cpp compares keys as bytes: two that are not UTF-8 and decode alike are two keys, not a repeat."""
    path = tmp_path / "two.gguf"
    path.write_bytes(_file([_s(b"a\xff") + struct.pack("<II", 4, 1), _s(b"a\xfe") + struct.pack("<II", 4, 2)]))
    with gguf_file.opened(str(path)) as g:
        assert len(g.fields) == 3


def test_tensor_sizes_are_llama_cpps(tmp_path):
    """Each tensor's bytes are ggml's (vkrope/data/ggml_types.json, from llama.cpp's tree): a Q8_1 block is 36
    bytes (the gguf package 0.19 says 40) and Q2_0 (type 42) a type llama.cpp loads (that package has none)."""
    for kind, n, block_bytes in ((9, 64, 36), (42, 128, 18)):
        size = n // {9: 32, 42: 64}[kind] * block_bytes
        f32_at = -(-size // 32) * 32
        content = _file([], [_tensor(b"q", (n,), kind=kind), _tensor(b"rope_freqs.weight", (4,), offset=f32_at)],
                        pad=b"\0" * f32_at + np.arange(1, 5, dtype=np.float32).tobytes())
        path = tmp_path / f"t{kind}.gguf"
        path.write_bytes(content)
        with gguf_file.opened(str(path)) as g:
            q, f = g.tensors
            assert (q.n_bytes, f.start - q.start) == (size, f32_at)
            np.testing.assert_array_equal(g.float32(f), [1, 2, 3, 4])


def test_from_gguf_needs_no_gguf_package(tmp_path):
    """The header reader is vkrope's own: from_gguf runs where the gguf package cannot be imported."""
    import subprocess
    import sys

    path = str(tmp_path / "m.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_values(w, {"context_length": 4096, "embedding_length": 256, "attention.head_count": 4, "block_count": 2,
                   "rope.freq_base": 5e5})
    finish(w, {"rope_freqs.weight": np.linspace(1, 8, 32, dtype=np.float32)}, path)
    code = ("import sys; sys.modules['gguf'] = None; import vkrope; "
            f"r = vkrope.from_gguf({path!r}); print(r.theta, r.head_dim)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_names_are_c_strings_as_llama_cpp_finds_them(tmp_path):
    """llama.cpp finds a key (gguf_find_key's strcmp) and names a tensor (ggml_set_name) by its bytes up to a
    NUL: a key or a tensor name with a NUL and more after it is read by its C string (the first of a name), and
    two tensors whose C strings are one name are refused, as its model loader refuses them."""
    kvs = [_u32(b"llama.context_length", 4096), _u32(b"llama.embedding_length", 256),
           _u32(b"llama.attention.head_count", 4), _u32(b"llama.block_count", 2),
           _s(b"llama.attention.layer_norm_rms_epsilon") + struct.pack("<If", 6, 1e-5),
           _s(b"llama.rope.freq_base\0x") + struct.pack("<If", 6, 5e5),
           _s(b"llama.rope.freq_base\0y") + struct.pack("<If", 6, 7e5),  # (a later one of that C string: not found)
           _s(b"general.alignment\0") + struct.pack("<II", 4, 64)]
    factors = np.arange(1, 33, dtype=np.float32)
    body = _file(kvs, [_tensor(b"rope_freqs.weight\0x", (32,))])
    path = tmp_path / "nul.gguf"
    path.write_bytes(body + b"\0" * (-len(body) % 64) + factors.tobytes())  # (the data at a multiple of 64)
    rope = vkrope.from_gguf(str(path))
    assert rope.theta == 5e5 and rope.freq_factors == tuple(factors)
    twice = _file([], [_tensor(b"t\0a", (4,)), _tensor(b"t\0b", (4,), offset=32)], pad=b"\0" * 64)
    path.write_bytes(twice)
    with pytest.raises(ValueError, match="a tensor name is given twice"):
        vkrope.from_gguf(str(path))


def test_a_file_cut_or_rewritten_while_read(tmp_path, monkeypatch):
    """The header is read into memory: a file cut while it is read (its size said more than the reads give) is a
    ValueError, and bytes rewritten after the header was read do not change what it holds."""
    path = str(tmp_path / "m.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_values(w, {"context_length": 4096, "embedding_length": 256, "attention.head_count": 4, "block_count": 2})
    w.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(20000)])
    finish(w, {"rope_freqs.weight": np.linspace(1, 8, 32, dtype=np.float32)}, path)
    with open(path, "rb") as f:
        content = f.read()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(content[:len(content) // 2])
    real_fstat = gguf_file.os.fstat
    monkeypatch.setattr(gguf_file, "_WINDOW", 4096)  # (several reads)
    monkeypatch.setattr(gguf_file.os, "fstat", lambda fd: type("S", (), {"st_size": len(content)})())
    with pytest.raises(ValueError, match="the file has .* left"):  # (the size read first, the bytes since cut)
        with gguf_file.opened(str(cut)):
            pass
    monkeypatch.setattr(gguf_file.os, "fstat", real_fstat)
    with gguf_file.opened(path) as g:
        ctx = g.value("llama.context_length")
        with open(path, "r+b") as f:
            f.write(b"\xff" * 4096)  # (the header's bytes, rewritten)
        assert g.value("llama.context_length") == ctx == 4096 and g.type_name("llama.context_length") == "UINT32"


@pytest.mark.parametrize("dims", [(2**32, 2**32, 0), (2**62, 2, 0)])
def test_a_shape_past_int64_before_a_zero_is_refused(tmp_path, dims):
    """gguf_init multiplies the dimensions in order: one past int64 before a 0 is refused all the same."""
    path = tmp_path / "big.gguf"
    path.write_bytes(_file([], [_tensor(b"t", dims)]))
    with pytest.raises(ValueError, match="past int64"):
        with gguf_file.opened(str(path)):
            pass



def _split(tmp_path, name: str, tensors_count: int, count: int = 3, factors: type = np.float32) -> list[str]:
    """A llama model in `count` files (gguf-split's names), rope_freqs.weight in the last (of dtype `factors`),
    the first file's split.tensors.count `tensors_count` (count + 1 is right: a tensor a file, and the
    factors)."""
    paths = [str(tmp_path / f"{name}-{i + 1:05d}-of-{count:05d}.gguf") for i in range(count)]
    for i, path in enumerate(paths):
        w = gguf.GGUFWriter(path, arch="llama")
        w.add_uint16("split.no", i)
        w.add_uint16("split.count", count)
        tensors = {f"t{i}": np.ones(4, np.float32)}
        if i == count - 1:  # (added here: finish makes its tensors F32)
            w.add_tensor("rope_freqs.weight", np.linspace(1, 8, 32, dtype=factors))
        if i == 0:
            w.add_int32("split.tensors.count", tensors_count)
            add_values(w, {"context_length": 4096, "embedding_length": 256, "attention.head_count": 4,
                           "block_count": 2})
        finish(w, tensors, path, fill=i == 0)
    return paths


def test_a_split_model_is_read_from_its_first_file(tmp_path):
    """llama.cpp loads a split model from its first file and takes every file's tensors: a rope_freqs.weight in
    the last file is read (it had been missed, and the model read as plain RoPE); what its loader refuses is
    refused."""
    paths = _split(tmp_path, "m", 4)
    assert vkrope.from_gguf(paths[0]).freq_factors == tuple(np.linspace(1, 8, 32, dtype=np.float32))
    with pytest.raises(ValueError, match=r"is file 2 of a split model \(split.no 1\); llama.cpp loads a split "
                                         r"model from its first file"):
        vkrope.from_gguf(paths[1])
    with pytest.raises(ValueError, match=r"split.tensors.count is 3, and its 3 files hold 4 tensors"):
        vkrope.from_gguf(_split(tmp_path, "n", 3)[0])
    with pytest.raises(ValueError, match=r"^path: '.*h-00001-of-00003.gguf': in its split file "
                                         r"'.*h-00003-of-00003.gguf': rope_freqs.weight is F16; llama.cpp's rope "
                                         r"takes F32"):  # (a GGUF file llama.cpp reads: its tensor is what is refused)
        vkrope.from_gguf(_split(tmp_path, "h", 4, factors=np.float16)[0])
    os.remove(paths[2])
    with pytest.raises(ValueError, match=r"its split file '.*m-00003-of-00003.gguf' is missing"):
        vkrope.from_gguf(paths[0])
    twice = _split(tmp_path, "d", 4)
    w = gguf.GGUFWriter(twice[1], arch="llama")  # (file 2 again, its tensor named as file 1's)
    w.add_uint16("split.no", 1)
    w.add_uint16("split.count", 3)
    finish(w, {"t0": np.ones(4, np.float32)}, twice[1], fill=False)
    with pytest.raises(ValueError, match=r"tensor 't0' is in two of its split files"):
        vkrope.from_gguf(twice[0])
    renamed = str(tmp_path / "whole.gguf")
    os.rename(paths[0], renamed)
    with pytest.raises(ValueError, match=r"finds the others by its name, which must end in '-00001-of-00003.gguf'"):
        vkrope.from_gguf(renamed)


def test_strings_are_c_strings_and_unread_keys_are_not_decoded(tmp_path):
    """llama.cpp reads a string value through c_str(): 'yarn' and a NUL read as yarn. A key it never reads may
    hold a string that is not UTF-8: the file is read (only the keys read are decoded)."""
    path = str(tmp_path / "c.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_values(w, {"context_length": 4096, "embedding_length": 256, "attention.head_count": 4, "block_count": 2,
                   "rope.scaling.factor": 4.0, "rope.scaling.original_context_length": 1024})
    w.add_string("llama.rope.scaling.type", "yarn\0ignored")
    finish(w, (), path)
    content = open(path, "rb").read()
    path2 = str(tmp_path / "u.gguf")
    marker = b"llama.rope.scaling.type"
    at = content.index(marker)
    bad = content[:at] + b"llama.note.scaling.typ" + content[at + len(marker) - 1:]  # (same length: a new key)
    bad = bad.replace(b"yarn\0ignored", b"\xff\xfern\0ignored")  # (as long: not UTF-8 before the NUL)
    with open(path2, "wb") as f:
        f.write(bad)
    assert vkrope.from_gguf(path).rope_type == "yarn"
    assert vkrope.from_gguf(path2).rope_type == "linear"  # (no scaling type: linear; llama.note.*: not decoded)


def test_a_factor_tensor_too_large_is_refused_before_its_data_are_read(tmp_path, monkeypatch):
    """A rope_freqs.weight of more values than a head has pairs: refused by its shape, its data not read."""
    path = tmp_path / "big.gguf"
    path.write_bytes(_file([], [_tensor(b"rope_freqs.weight", (1 << 16,))], pad=b"\0" * (1 << 18)))
    read = []
    monkeypatch.setattr(gguf_file.GgufFile, "float32", lambda self, t: read.append(t) or np.zeros(1))
    with pytest.raises(ValueError, match=r"rope_freqs.weight has shape \[65536\] .*at most 32768"):
        vkrope.from_gguf(str(path))
    assert read == []


def test_reads_that_return_less_are_read_on(tmp_path, monkeypatch):
    """One pread returns at most 2 GiB on Linux (and a FUSE file system less): a short read is not taken for
    a cut file; the header and the factors read whole."""
    path = str(tmp_path / "m.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_values(w, {"context_length": 4096, "embedding_length": 256, "attention.head_count": 4, "block_count": 2})
    w.add_array("tokenizer.ggml.tokens", [f"t{i}" for i in range(5000)])
    finish(w, {"rope_freqs.weight": np.linspace(1, 8, 32, dtype=np.float32)}, path)
    want = vkrope.from_gguf(path)
    real = os.pread
    monkeypatch.setattr(gguf_file.os, "pread", lambda fd, n, at: real(fd, min(n, 1000), at))
    assert vkrope.from_gguf(path) == want


def test_a_later_split_file_without_an_architecture_is_named_as_such(tmp_path):
    """gguf-split writes the split keys alone after the first file: passing file 2 said 'has no
    general.architecture', as the architecture was looked for before the split keys."""
    paths = _split(tmp_path, "m", 4, count=2)
    w = gguf.GGUFWriter(paths[1], arch="llama")
    del w.kv_data[0]["general.architecture"]
    w.add_uint16("split.no", 1)
    w.add_uint16("split.count", 2)
    finish(w, {"t1": np.ones(4, np.float32)}, paths[1], fill=False)
    with pytest.raises(ValueError, match=r"is file 2 of a split model \(split.no 1\)"):
        vkrope.from_gguf(paths[1])


def test_a_read_key_of_a_billion_values_is_refused_before_it_is_decoded(tmp_path):
    """An array of 2^27 bools as attention.head_count (a 128 MiB file) took 14 s and 3 GiB, decoded whole into
    a Python list before its length was checked; an architecture name of 16 MB went through difflib. Each is
    refused from its length alone (llama.cpp refuses both: an array past LLAMA_MAX_LAYERS, an unknown name)."""
    path = str(tmp_path / "a.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_values(w, {"context_length": 4096, "embedding_length": 256, "block_count": 2,
                   "attention.head_count": [True] * (1 << 17)})
    finish(w, {}, path)
    with pytest.raises(ValueError, match=r"llama: llama.attention.head_count is an array of 131072 values "
                                         r"\(ARRAY\[BOOL\]\); the keys vkrope reads hold at most 65536"):
        vkrope.from_gguf(path)
    path = str(tmp_path / "s.gguf")
    w = gguf.GGUFWriter(path, arch="x" * 5000)
    finish(w, {}, path, fill=False)
    with pytest.raises(ValueError, match=r"^path: '.*s.gguf': general.architecture is a string of 5000 bytes"):
        vkrope.from_gguf(path)


def test_an_original_length_of_0_is_read_where_the_rope_type_reads_none(tmp_path):
    """rope.scaling.original_context_length = 0 on an unscaled or linear file: llama.cpp stores the 0 and runs
    the file (only YaRN and longrope read it); vkrope refused it as 'original_max_position_embeddings must be
    >= 1', naming a transformers field."""
    for scaling in ({}, {"rope.scaling.type": "linear", "rope.scaling.factor": 2.0}):
        path = str(tmp_path / f"o{len(scaling)}.gguf")
        w = gguf.GGUFWriter(path, arch="llama")
        add_values(w, {"context_length": 4096, "embedding_length": 256, "block_count": 2, "attention.head_count": 4,
                       "rope.scaling.original_context_length": 0, **scaling})
        finish(w, {}, path)
        rope = vkrope.from_gguf(path)
        assert rope.original_max_position_embeddings is None
        assert rope.rope_type == ("linear" if scaling else "default")


def test_a_huge_key_llama_cpp_never_reads_is_not_decoded(tmp_path):
    """The size guard is for keys vkrope reads: a llama file's rope.dimension_sections (llama reads none) of 70000
    values, or a huge attn_factor-like key, was decoded and refused though llama.cpp ignores them; `key in kv`
    decoded the key to find it."""
    path = str(tmp_path / "u.gguf")
    w = gguf.GGUFWriter(path, arch="llama")
    add_values(w, {"context_length": 4096, "embedding_length": 256, "block_count": 2, "attention.head_count": 4,
                   "rope.dimension_sections": [1] * 70000, "rope.scaling.not_an_attn_factor": [0.5] * 70000})
    finish(w, {}, path)
    assert vkrope.from_gguf(path).rope_type == "default"
    from vkrope.models import gguf as gguf_reader
    from vkrope.models import gguf_file

    with gguf_file.opened(path) as g:
        kv = gguf_reader._Values(g, "llama.", path)
        assert "rope.dimension_sections" in kv and "rope.nothing" not in kv  # (found, not decoded)
        with pytest.raises(ValueError, match="an array of 70000 values"):
            kv["rope.dimension_sections"]


def _llama_kvs() -> list[bytes]:
    """The keys llama.cpp needs of a llama file, raw."""
    return [_u32(b"llama." + k, v) for k, v in ((b"context_length", 4096), (b"embedding_length", 256),
                                                (b"block_count", 2), (b"attention.head_count", 4))] + \
        [_s(b"llama.attention.layer_norm_rms_epsilon") + struct.pack("<If", 6, 1e-5)]


def _array(key: bytes, element: int, count: int, body: bytes) -> bytes:
    return _s(key) + struct.pack("<IIQ", 9, element, count) + body


def test_values_it_does_not_read_are_stepped_over_unread(tmp_path, monkeypatch):
    """An array of 2^33 bytes (a sparse file: zeros on no disk) before the keys read: stepped over, not read
    (it took gigabytes and a MemoryError); the file's reads stay a few MiB and the RoPE is the file's."""
    path = tmp_path / "sparse.gguf"
    with open(path, "wb") as f:
        head = b"GGUF" + struct.pack("<IQQ", 3, 0, 2 + 5) + _s(b"general.architecture") + struct.pack("<I", 8) + \
            _s(b"llama")
        f.write(head + _s(b"llama.junk") + struct.pack("<IIQ", 9, 10, 2**30))  # (2^30 UINT64)
        f.seek(8 * 2**30, 1)
        f.write(b"".join(_llama_kvs()))
    read = []
    real = os.pread
    monkeypatch.setattr(gguf_file.os, "pread", lambda fd, n, at: read.append(n) or real(fd, n, at))
    rope = vkrope.from_gguf(str(path))
    assert rope.rope_type == "default" and rope.head_dim == 64
    assert sum(read) < 3 * gguf_file._WINDOW, sum(read)


@pytest.mark.parametrize("what", ["keys", "tensors", "strings"])
def test_counts_past_what_vkrope_walks_are_refused_by_name(tmp_path, monkeypatch, what):
    """More keys, tensors or strings in one array than vkrope walks (a sparse file may state any count its zeros
    fill; a million keys took 22 s): a ValueError saying it is vkrope's bound, not that the file is no GGUF;
    one fewer is read."""
    monkeypatch.setattr(gguf_file, {"keys": "_MAX_KEYS", "tensors": "_MAX_TENSORS", "strings": "_MAX_STRINGS"}[what], 8)
    for n, ok in ((8, True), (9, False)):
        kvs = _llama_kvs()
        tensors: list[bytes] = []
        if what == "keys":
            kvs += [_u32(b"k%d" % i, i) for i in range(n - 6)]  # (with the architecture and the 5 llama keys)
        elif what == "tensors":
            tensors = [_tensor(b"t%d" % i, (8,), offset=32 * i) for i in range(n)]
        else:  # (the header's arrays together: 2^22 strings in each of 2^16 keys took hours, a diff reviewer's)
            kvs.append(_array(b"tokenizer.ggml.tokens", 8, 5, b"".join(_s(b"t%d" % i) for i in range(5))))
            kvs.append(_array(b"tokenizer.ggml.merges", 8, n - 5, b"".join(_s(b"m%d" % i) for i in range(n - 5))))
        path = tmp_path / f"{what}{n}.gguf"
        path.write_bytes(_file(kvs, tensors, pad=b"\0" * 32 * len(tensors)))
        if ok:
            assert vkrope.from_gguf(str(path)).rope_type == "default"
            continue
        counted = {"keys": "9 metadata entries", "tensors": "9 tensors", "strings": "9 in the header's arrays"}[what]
        with pytest.raises(ValueError, match=rf"^path: '.*{what}9.gguf': .*{counted}.* vkrope \w+ (over )?at most 2\^3 "
                                             r"(in all )?\("):
            vkrope.from_gguf(str(path))


def test_a_value_past_what_the_walk_keeps_is_refused_by_name(tmp_path, monkeypatch):
    """The walk keeps the bytes of small strings and arrays up to _KEEP_ALL in all: a key vkrope reads whose
    value came past that is refused naming it, never read as another value; within it, read."""
    path = tmp_path / "m.gguf"
    kvs = _llama_kvs() + [_array(b"llama.junk", 4, 64, b"\0" * 256),
                          _s(b"llama.rope.scaling.type") + struct.pack("<I", 8) + _s(b"linear"),
                          _s(b"llama.rope.scaling.factor") + struct.pack("<If", 6, 2.0)]
    path.write_bytes(_file(kvs))
    assert vkrope.from_gguf(str(path)).rope_type == "linear"
    monkeypatch.setattr(gguf_file, "_KEEP_ALL", 256 + 5)  # (the architecture's name, then the junk: full)
    with pytest.raises(ValueError, match=r"llama.rope.scaling.type: a string of 6 bytes, which vkrope did not keep"):
        vkrope.from_gguf(str(path))


def test_bytes_paths_and_path_likes_giving_bytes_are_read_as_str(tmp_path):
    """A path-like whose __fspath__ gives bytes passed the type check and failed inside a split model's search
    (TypeError: endswith first arg must be bytes); a file's ModelRope.source was bytes. Both, and plain bytes,
    are read as os.fsdecode gives them: a split model found, its source a str."""
    paths = _split(tmp_path, "m", 4)

    class BytesPath:
        def __init__(self, p: str) -> None:
            self.p = p

        def __fspath__(self) -> bytes:
            return os.fsencode(self.p)

    want = vkrope.from_gguf(paths[0])
    for given in (BytesPath(paths[0]), os.fsencode(paths[0])):
        got = vkrope.from_gguf(given)
        assert got == want and isinstance(got.source, str) and got.source == want.source
    with pytest.raises(TypeError, match=r"path must be a str, bytes or os.PathLike \(a .gguf file\); got 3"):
        vkrope.from_gguf(3)


def test_keys_after_values_stepped_over_read_little(tmp_path, monkeypatch):
    """After a value stepped over, the walk reads a small window, growing while it reads on: each key after a
    5 MiB array read a 4 MiB window again (minutes for a sparse file's 2^16 keys, a diff reviewer's). A key
    longer than vkrope reads, and a header cut inside a value stepped over at its end, are refused."""
    path = tmp_path / "skips.gguf"
    kvs = [kv for i in range(40) for kv in (_array(b"junk%d" % i, 0, 1 << 20, bytes(1 << 20)), _u32(b"k%d" % i, i))]
    path.write_bytes(_file(_llama_kvs() + kvs))
    read = []
    real = os.pread
    monkeypatch.setattr(gguf_file.os, "pread", lambda fd, n, at: read.append(n) or real(fd, n, at))
    assert vkrope.from_gguf(str(path)).rope_type == "default"
    assert sum(read) < 2 * gguf_file._WINDOW, sum(read)  # (40 keys: 40 small windows, not the rest of the file)
    monkeypatch.undo()
    path.write_bytes(_file(_llama_kvs() + [_u32(b"k" * 1025, 1)]))
    with pytest.raises(ValueError, match=r"^path: '.*': metadata key 6 is 1025 bytes; vkrope reads keys of at most "
                                         r"2\^10 bytes"):
        vkrope.from_gguf(str(path))
    content = _file(_llama_kvs() + [_array(b"last", 0, 64, bytes(64))])
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(content[:-40])  # (inside the last array, which the walk steps over)
    monkeypatch.setattr(gguf_file.os, "fstat", lambda fd: type("S", (), {"st_size": len(content)})())
    monkeypatch.setattr(gguf_file, "_KEEP_VALUE", 32)  # (the last array stepped over, not kept)
    with pytest.raises(ValueError, match=r"the header ends at offset \d+; the file ends before \(it was cut while read\)"):
        with gguf_file.opened(str(cut)):
            pass


def test_a_split_file_past_vkropes_bounds_is_not_called_unreadable(tmp_path, monkeypatch):
    """A later file of a split model past vkrope's bounds was said to be "not a GGUF file llama.cpp reads" (a
    diff reviewer's): the message is vkrope's bound's."""
    paths = _split(tmp_path, "m", 4)
    monkeypatch.setattr(gguf_file, "_MAX_TENSORS", 1)  # (the last file holds its tensor and the factors)
    with pytest.raises(ValueError, match=r"its split file '.*-00003-of-00003.gguf': the header counts 2 tensors; vkrope "
                                         r"reads at most 2\^0") as err:
        vkrope.from_gguf(paths[0])
    assert "not a GGUF file" not in str(err.value)

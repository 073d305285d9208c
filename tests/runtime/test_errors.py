"""Bad input raises TypeError / ValueError naming the argument before any GPU
work, and the runtime serves a correct call right after; no Vulkan loader
gives VulkanUnavailableError on first use, not on import."""

from __future__ import annotations

import gc
import inspect
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import vkrope
from oracle import check_apply
from op_cases import OPS, check_results

X = np.ones((2, 3, 8), np.float32)
F = np.ones((3, 8), np.float32)

BAD = [
    # (description, args, kwargs, exception, words the message must contain)
    ("x not an array", ([1.0, 2.0], F), {}, TypeError, ["x", "numpy array"]),
    ("x None", (None, F), {}, TypeError, ["x"]),
    ("x float64", (X.astype(np.float64), F), {}, TypeError, ["x", "float64", "float32"]),
    ("x int", (X.astype(np.int32), F), {}, TypeError, ["x", "int32"]),
    ("x complex", (X.astype(np.complex64), F), {}, TypeError, ["x", "complex64"]),
    ("x bool", (X.astype(bool), F), {}, TypeError, ["x", "bool"]),
    ("x object", (X.astype(object), F), {}, TypeError, ["x", "object"]),
    ("x rank 1", (np.ones(8, np.float32), F), {}, ValueError, ["x", "(8,)", "at least 2 axes"]),
    ("x odd C", (np.ones((2, 3, 7), np.float32), F), {}, ValueError, ["x", "even", "7"]),
    ("freqs str", (X, "freqs"), {}, TypeError, ["freqs", "str"]),
    ("freqs int", (X, F.astype(np.int64)), {}, TypeError, ["freqs", "int64"]),
    ("freqs size", (X, np.ones((4, 8), np.float32)), {}, ValueError, ["freqs", "4 rows", "3"]),
    ("freqs partial row", (X, np.ones(20, np.float32)), {}, ValueError, ["freqs", "20", "whole rows"]),
    ("storage name", (X, F), {"storage": "texture2d"}, ValueError, ["storage", "texture2d", "buffer"]),
    ("storage type", (X, F), {"storage": 3}, TypeError, ["storage", "3"]),
    ("inverse type", (X, F), {"inverse": "yes"}, TypeError, ["inverse", "bool"]),
    ("repeat zero", (X, F), {"repeat": 0}, ValueError, ["repeat", ">= 1", "0"]),
    ("repeat float", (X, F), {"repeat": 1.5}, TypeError, ["repeat", "1.5"]),
    ("repeat mismatch", (X, F), {"repeat": 2}, ValueError, ["freqs", "repeat", "rows"]),
    ("exclude negative", (X, F), {"exclude_last": -1}, ValueError, ["exclude_last", "-1"]),
    ("exclude past N", (X, F), {"exclude_last": 4}, ValueError, ["exclude_last", "N = 3", "4"]),
    ("positions float", (X, F), {"positions": np.zeros(3)}, TypeError, ["positions", "float64", "integer"]),
    ("positions list", (X, F), {"positions": [0, 1, 2]}, TypeError, ["positions", "list"]),
    ("positions timedelta", (X, F), {"positions": np.zeros(3, "m8[s]")}, TypeError, ["positions", "timedelta64"]),
    ("positions length", (X, F), {"positions": np.zeros(4, int)}, ValueError, ["positions", "(3,)", "(4,)"]),
    ("positions range", (X, F), {"positions": np.array([0, 1, 3])}, ValueError, ["positions", "[-1, 3)", "3"]),
    ("positions below -1", (X, F), {"positions": np.array([0, -2, 1])}, ValueError, ["positions", "-2"]),
    ("positions with repeat", (X, F), {"positions": np.zeros(3, int), "repeat": 2}, ValueError, ["positions", "repeat"]),
    ("out dtype", (X, F), {"out": np.empty((2, 3, 8), np.float16)}, TypeError, ["out", "float16", "float32"]),
    ("out shape", (X, F), {"out": np.empty((2, 3, 4), np.float32)}, ValueError, ["out", "(2, 3, 4)", "(2, 3, 8)"]),
    ("out read-only", (X, F), {"out": np.broadcast_to(np.float32(0), (2, 3, 8))}, ValueError, ["out", "read-only"]),
    ("out list", (X, F), {"out": []}, TypeError, ["out", "list"]),
    ("out overlapping itself", (X, F), {"out": np.lib.stride_tricks.as_strided(np.zeros(8, np.float32), (2, 3, 8),
                                                                                (0, 0, 4))},
     ValueError, ["out", "share memory", "(0, 0, 4)"]),
]


@pytest.mark.parametrize("desc,args,kwargs,exc,words", BAD, ids=[b[0] for b in BAD])
@pytest.mark.parametrize("entry", ["apply", "device", "reference"])
def test_bad_input(desc, args, kwargs, exc, words, entry):
    fn = {"apply": vkrope.apply, "device": vkrope.default_device().apply, "reference": vkrope.apply_reference}[entry]
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in message {msg!r}"
    if entry != "reference":
        # The runtime stays usable.
        rng = np.random.default_rng(0)
        check_apply(vkrope.apply, rng.standard_normal((2, 3, 8)).astype(np.float32), F)


def test_import_without_loader_then_clear_error_on_first_call(tmp_path):
    """Simulate a machine with no libvulkan: the `vulkan` package raises
    OSError at import when its dlopen fails; a stand-in package that does
    exactly that comes first on sys.path. import vkrope works, apply raises
    VulkanUnavailableError naming the Debian packages."""
    fake = tmp_path / "vulkan"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise OSError('Cannot find Vulkan SDK version. Please ensure that it is installed')\n"
    )
    script = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, ".")
        import numpy as np
        import vkrope
        try:
            vkrope.apply(np.ones((1, 2, 4), np.float32), np.ones((2, 4), np.float32))
        except vkrope.VulkanUnavailableError as exc:
            assert isinstance(exc, RuntimeError)
            print("OK", exc)
        """
    )
    env = dict(os.environ)
    env.pop("VKROPE_VALIDATION", None)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("OK"), res.stdout + res.stderr
    assert "libvulkan1 mesa-vulkan-drivers" in res.stdout
    assert res.stderr == ""  # (the instance made before the load failed closes at exit without the binding)
    for cmd in (["info"], ["info", "--json"], ["demo"]):  # (the CLI: one line, no traceback at exit)
        res = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, '.'); from vkrope.__main__ "
                              "import main; sys.exit(main())", *cmd], capture_output=True, text=True, env=env,
                             cwd=tmp_path)
        assert res.returncode == 1, (cmd, res.stdout, res.stderr)
        assert "Traceback" not in res.stderr and "Exception ignored" not in res.stderr, (cmd, res.stderr)
        assert "libvulkan1 mesa-vulkan-drivers" in res.stderr, (cmd, res.stderr)


def test_no_matching_device_lists_what_was_seen():
    with pytest.raises(vkrope.VulkanUnavailableError) as info:
        vkrope.Device("no-such-gpu-name")
    msg = str(info.value)
    assert "Devices seen" in msg
    for d in vkrope.devices():
        assert d["name"] in msg
    assert "no-such-gpu-name" in msg and "(argument)" in msg and "pass device=" in msg
    assert "VKROPE_DEVICE" not in msg  # (the name came from the argument, not the environment)


def test_device_argument_type():
    with pytest.raises(TypeError, match="device"):
        vkrope.Device(1.5)
    with pytest.raises(TypeError, match=r"^Device\.__init__\(\) got an unexpected keyword argument 'foo'"):
        vkrope.Device(foo=1)  # (named as the user called it, not by an internal base class)
    from vkrope.owner import DeviceOwner  # (Device states its base's signature for that: the two must agree)
    assert inspect.signature(vkrope.Device.__init__) == inspect.signature(DeviceOwner.__init__)
    for bad in (np.bool_(False), np.timedelta64(0)):  # (numpy files both under its integers)
        with pytest.raises(TypeError, match=r"device must be an index .* got "):
            vkrope.Device(bad)
    with vkrope.Device(np.int64(0)) as dev:  # (a numpy integer, as every index vkrope takes)
        assert dev.info["index"] == 0


def test_a_device_array_made_by_hand_is_refused(device):
    """DeviceArray's constructor is the device's own: one made by hand held no memory (an AttributeError deep in
    the runtime), or another array's (its garbage collection gave that memory back twice, and the next upload
    shared it with the array still using it): a TypeError saying where DeviceArrays come from; the device serves
    the next call, and the real array keeps its data."""
    real = device.asarray(np.ones((1, 3, 8), np.float32))
    for resource in (None, real.resource):
        with pytest.raises(TypeError, match=r"^DeviceArrays come from a Device: Device\.asarray"):
            vkrope.DeviceArray(device, resource, (1, 3, 8), np.dtype(np.float32), "buffer")
    gc.collect()
    other = device.asarray(np.full((1, 3, 8), 2.0, np.float32))
    assert (real.get() == 1).all() and (other.get() == 2).all()
    check_apply(device.apply, np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32), F)


@pytest.mark.parametrize("value", ["no", "0", 0, 0.0, [], object()])
def test_validation_argument_type(value):
    """validation= takes True, False or None: "no" (truthy) turned the layer on, and [] was kept as the
    device's `info['validation']`."""
    with pytest.raises(TypeError, match=r"validation must be True, False or None .*got "):
        vkrope.Device(validation=value)
    with vkrope.Device(validation=np.bool_(False)) as dev:
        assert dev.info["validation"] is False


ASARRAY_BAD = [
    ([1.0, 2.0], {}, TypeError, ["a must be", "list"]),
    (np.ones((2, 4), np.float64), {}, TypeError, ["float64"]),
    (np.ones(4, np.float32), {"storage": "texture3d"}, ValueError, ["at least 2 axes"]),
    (np.float32(1.0), {}, TypeError, ["a must be", "float32"]),
    (np.ones((), np.float32), {}, ValueError, ["at least 1 axis"]),
    (np.ones((2, 4), np.float32), {"storage": "image"}, ValueError, ["storage", "image"]),
    (np.ones((2, 4), np.float32), {"storage": None}, TypeError, ["storage", "None"]),  # as every op says it
]


@pytest.mark.parametrize("a,kw,exc,words", ASARRAY_BAD)
def test_bad_asarray(a, kw, exc, words, device):
    with pytest.raises(exc) as info:
        device.asarray(a, **kw)
    for w in words:
        assert w in str(info.value), str(info.value)
    check_apply(device.apply, np.random.default_rng(0).standard_normal((2, 3, 8)).astype(np.float32), F)


def usable_device():
    """The first device vkrope can use (whatever the machine has)."""
    return next(d for d in vkrope.devices() if not d["problems"])


@pytest.mark.parametrize("how", ["index", "name", "name-part-other-case"])
def test_vkrope_device_env_picks_a_device(monkeypatch, how):
    want = usable_device()
    name = want["name"]
    value = {"index": str(want["index"]), "name": name, "name-part-other-case": name[: max(3, len(name) // 2)].swapcase()}[how]
    monkeypatch.setenv("VKROPE_DEVICE", value)
    with vkrope.Device() as dev:
        if how == "name-part-other-case":
            assert value.lower() in dev.name.lower()
        else:
            assert dev.name == name
        assert "VKROPE_DEVICE" in dev.info["why_chosen"]


def test_vkrope_device_env_without_match(monkeypatch):
    seen = vkrope.devices()
    monkeypatch.setenv("VKROPE_DEVICE", str(len(seen)))  # one past the last index
    with pytest.raises(vkrope.VulkanUnavailableError) as info:
        vkrope.Device()
    msg = str(info.value)
    assert f"index {len(seen)}" in msg and "VKROPE_DEVICE" in msg
    for d in seen:
        assert d["name"] in msg
    monkeypatch.setenv("VKROPE_DEVICE", "-1")  # (an index: no name is a bare number; the environment's, no argument)
    with pytest.raises(vkrope.VulkanUnavailableError, match=r"VKROPE_DEVICE asks for index -1\."):
        vkrope.Device()


def test_an_empty_device_name_and_a_with_on_a_closed_device_are_refused():
    """'' is in every name (it opened the first device); a closed Device's `with` raises at the `with`."""
    for empty in ("", "  "):
        with pytest.raises(ValueError, match=r"^device must be an index or a part of a device's name; got '"):
            vkrope.Device(empty)
    for negative in (-1, np.int64(-3), " -1"):  # (no device has one: refused as the argument it is)
        with pytest.raises(ValueError, match=r"^device must be an index >= 0 \(vkrope.devices\(\) lists them\) or a "
                                             r"part of a device's name; got '? ?-"):
            vkrope.Device(negative)
    dev = vkrope.Device()
    dev.close()
    with pytest.raises(vkrope.DeviceClosedError, match=r"close\(\) was called"):
        with dev:
            raise AssertionError("entered")


def _tensors(case, args):
    """The numpy tensors of a call (ids and positions are values, read in any
    byte order; the decode step's caches are uploaded by the case itself)."""
    return [name for name in case.resident if isinstance(args.get(name), np.ndarray)
            and name not in ("k_cache", "v_cache")]


@pytest.mark.parametrize("case", [c for c in OPS if c.moves_numpy], ids=repr)
def test_byte_swapped_arrays_are_read_or_named_with_their_byte_order(device, case):
    """A '>f4' array (np.load of a file from a big-endian machine) reads
    like a dtype vkrope takes: either it is read as the numbers it holds (a
    table converted on the host) or the TypeError names the argument and
    says the byte order is what differs; the next call is right."""
    args = case.make(np.random.default_rng(35))
    refused = []
    for name in _tensors(case, args):
        swapped = {**args, name: args[name].astype(args[name].dtype.newbyteorder(">"))}
        try:
            results = case.call(device, swapped)
        except TypeError as e:
            assert re.match(rf"^{case.label(name)}\b.*bytes are swapped", str(e)), str(e)
            refused.append(name)
        else:
            check_results(case, args, results)
    assert refused, "every tensor was read: the case has no x to refuse"
    check_results(case, args, case.call(device, args))


def test_byte_order_hints_only_where_the_order_is_what_differs(device):
    """'>f8' x (float64 is refused in any order) is told to convert to float32, not to float64; an `out`
    of another dtype in the other order is told its dtype, not its order."""
    x, f = np.ones((1, 4, 8), np.float32), np.tile(np.float32([1, 0]), (4, 4))
    with pytest.raises(TypeError, match=r"got >f8 \(convert with x\.astype\(np\.float32\)\)$"):
        device.apply(x.astype(">f8"), f)
    with pytest.raises(TypeError, match=r"out must have dtype float32 \(the dtype of x\); got >f2$"):
        device.apply(x, f, out=np.zeros((1, 4, 8), ">f2"))
    with pytest.raises(TypeError, match=r"got >f8 \(its bytes are swapped; convert with freqs\.astype\(np\.float64\)"):
        device.apply(x, f.astype(">f8"))


def test_a_hint_that_astype_cannot_follow_is_not_given(device):
    """A record of two floats (astype raises), raw bytes (astype raises) and a complex x (astype drops the
    imaginary part, silently) are each told what to pass instead of 'convert with x.astype(np.float32)'."""
    x, f = np.ones((1, 4, 8), np.float32), np.tile(np.float32([1, 0]), (4, 4))
    record = np.zeros((1, 4, 8), [("re", "<f4"), ("im", "<f4")])
    with pytest.raises(TypeError, match=r"\(a structured array \(fields 're', 'im'\): pass one field, as a float "
                                        r"array\)$"):
        device.apply(record, f)
    with pytest.raises(TypeError, match=r"got \|V4 \(raw bytes \(numpy void\): pass a float array\)$"):
        device.apply(x.view("V4"), f)
    with pytest.raises(TypeError, match=r"got complex64 \(a complex array: pass real values \(a cast to float32 "
                                        r"would drop the imaginary part\)\)$"):
        device.apply(x.astype(np.complex64), f)
    sub = np.zeros((1, 4, 8), [("v", "<f4", (2,))])  # (astype keeps each subarray's first value: a record too)
    with pytest.raises(TypeError, match=r"\(a structured array \(fields 'v'\): pass one field, as a float array\)$"):
        device.apply(sub, f)
    assert "convert with x.astype(np.float32)" in _refusal(device, x.astype(np.int16), f)  # (astype works)
    assert _refusal(device, x.astype("S4"), f).endswith("(a string array: pass a float array)")  # (it may not)


def test_ml_dtypes_numbers_are_told_to_convert_and_a_cos_sin_pair_how_to_stack(device):
    """An ml_dtypes float8 / int4 x is numbers astype converts (numpy files them as kind 'V', as raw bytes); a
    (cos, sin) pair given to apply is told how apply reads pairs, and that way gives the pair's rotation."""
    import ml_dtypes

    x, f = np.ones((1, 4, 8), np.float32), np.tile(np.float32([1, 0]), (4, 4))
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.int4):
        assert _refusal(device, x.astype(dt), f).endswith("(convert with x.astype(np.float32))")
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):  # (e5m2 says kind "f": taken before, e4m3fn not)
        with pytest.raises(TypeError, match=rf"ids must hold real numbers .* got dtype {np.dtype(dt)} \(convert with "
                                            r"ids\.astype\(np\.float64\)\)$"):
            device.apply_nd(x[None], vkrope.NdFreqs((4, 4)), np.zeros((4, 2), dt))
    with pytest.raises(TypeError, match=r"ids must hold real numbers .* got dtype bool$"):  # (a mask is no ids)
        device.apply_nd(x[None], vkrope.NdFreqs((4, 4)), np.zeros((4, 2), bool))
    spec, ids = vkrope.NdFreqs((4, 4)), np.arange(8.0).reshape(4, 2)
    cos, sin = spec.cos_sin(ids)
    for pair in ((cos, sin), [cos, sin]):  # (a list too: np.asarray of it reads as twice the rows)
        with pytest.raises(TypeError, match=r"\(a \(cos, sin\) pair: apply turns interleaved pairs .* np\.stack\("
                                            r"\[cos\[\.\.\., ::2\], sin\[\.\.\., ::2\]\], -1\) of "
                                            r"repeat_interleave\(freqs, 2\) tables \[N, D\] \(diffusers'\); a model's "
                                            r"tables \[B or 1, S, rot\] go to vkrope\.rotary_embedding\(x, c, s, "
                                            r"rotary_embedding_dim=rot, interleaved=1\) with c = .*\)$"):
            device.apply(x, pair)
    np.testing.assert_array_equal(device.apply(x, np.stack([cos[:, ::2], sin[:, ::2]], -1)),
                                  device.apply_nd(x, spec, ids))


def _refusal(device, x, f) -> str:
    with pytest.raises(TypeError) as said:
        device.apply(x, f)
    return str(said.value)


INTEGER_ARGUMENTS = {"position_ids", "old", "new"}  # (shift_cache's from_positions / to_positions: old, new)


@pytest.mark.parametrize("case", [c for c in OPS if c.outs], ids=repr)
@pytest.mark.parametrize("overlap", ["zero stride", "rows half over each other"])
def test_an_out_whose_elements_share_memory_is_refused(device, case, overlap):
    """A numpy `out` whose elements overlap (a view made with as_strided) has no defined result, as two outputs on
    one memory have none: each op's out is refused with a ValueError naming it, before any GPU work; an out that
    only looks odd (its strides interleaved, its elements apart) is written right."""
    args = case.make(np.random.default_rng(7))
    for name, x_name in case.outs:
        shape, strides = args[x_name].shape, list(args[x_name].strides)
        axis = next(i for i, n in enumerate(shape) if n > 1)  # (the outermost axis that has two elements)
        strides[axis] = 0 if overlap == "zero stride" else strides[axis] // 2
        base = np.zeros(args[x_name].size * 2, args[x_name].dtype)
        bad = np.lib.stride_tricks.as_strided(base, shape, strides)
        with pytest.raises(ValueError, match=rf"^{case.label(name)} has elements that share memory"):
            case.call(device, {**args, name: bad})
        assert not base.any()
    apart = {name: np.full(args[x].shape[::-1], np.nan, args[x].dtype).T for name, x in case.outs}  # (Fortran order)
    check_results(case, args, case.call(device, {**args, **apart}))
    check_results(case, args, case.call(device, args))


def test_an_out_whose_strides_interleave_with_its_elements_apart_is_written(device):
    """Strides that do not nest (no axis's stride spans the axes inside it) with every element apart: taken, and
    written right; the same strides one element closer overlap and are refused."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    f = np.random.default_rng(4).standard_normal((3, 4)).astype(np.float32)
    base = np.full(28, np.nan, np.float32)
    out = np.lib.stride_tricks.as_strided(base, (2, 3, 4), (4, 16, 24))
    assert device.apply(x, f, out=out) is out
    check_results(OPS[0], {"x": x, "freqs": f}, (out,))
    assert np.isnan(base).sum() == 28 - 24  # (the 4 floats no element of out holds)
    with pytest.raises(ValueError, match="^out has elements that share memory"):
        device.apply(x, f, out=np.lib.stride_tricks.as_strided(base, (2, 3, 4), (4, 16, 20)))



def test_an_out_too_big_to_check_element_by_element_is_refused_clearly(device, monkeypatch):
    """Strides that do not nest over more elements than the exact check compares (their offsets would take
    gigabytes): a ValueError saying so and what to pass, not a guess either way (forced small here)."""
    import vkrope.arguments

    monkeypatch.setattr(vkrope.arguments, "EXACT_OVERLAP_LIMIT", 8)
    x = np.ones((2, 3, 4), np.float32)
    out = np.lib.stride_tricks.as_strided(np.zeros(28, np.float32), (2, 3, 4), (4, 16, 24))  # (apart, not nested)
    with pytest.raises(ValueError, match=r"^out has strides \(4, 16, 24\) over shape \(2, 3, 4\) that do not nest "
                                         r".*too many elements \(24\).*np\.empty_like\(x\)"):
        device.apply(x, np.ones((3, 4), np.float32), out=out)


@pytest.mark.parametrize("case", OPS, ids=lambda c: c.name)
def test_a_timedelta_array_is_no_integer_array(case, device):
    """numpy files timedelta64 under np.integer; positions of that dtype are refused, naming the argument, as any
    other non-integer dtype (each op that takes integer arrays)."""
    args = case.make(np.random.default_rng(0))
    for name in sorted(INTEGER_ARGUMENTS & set(args)):
        bad = {**args, name: args[name].astype("m8[s]")}
        with pytest.raises(TypeError, match=r"(positions|position_ids) must be .*timedelta64"):
            case.call(device, bad)
    check_results(case, args, case.call(device, args))  # (the device serves the next call)


LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2}
TD = np.timedelta64(1)


@pytest.mark.parametrize("case", [
    ("start_pos", lambda x, t: vkrope.apply_rotary_emb_hf(x, x, t, t, TD)),
    ("dim", lambda x, t: vkrope.RopeFreqs(TD * 8)),
    ("end_x", lambda x, t: vkrope.axial_freqs(8, TD * 4, 4)),
    ("token_axis", lambda x, t: vkrope.apply_nd(x, vkrope.NdFreqs((4,)), np.zeros((2, 1)), token_axis=TD * -2)),
    ("interleaved", lambda x, t: vkrope.rotary_embedding(x, t, t, np.zeros((1, 2), np.int64), interleaved=TD)),
    ("layer", lambda x, t: vkrope.from_hf(LLAMA, layer=TD * 0)),
    ("position_ids", lambda x, t: vkrope.from_hf(LLAMA).seq_len(np.zeros((1, 2), "m8[s]"))),
], ids=lambda c: c[0])
def test_a_timedelta_is_no_int(case):
    """An int argument given as np.timedelta64 (an np.integer to numpy) is refused, naming the argument, as any
    other non-int: it was taken as an int, or failed deep inside with a message naming nothing."""
    name, call = case
    x, t = np.ones((1, 2, 1, 4), np.float32), np.ones((4, 4), np.float32)
    with pytest.raises(TypeError, match=rf"^{name}\b.*(int|integer|0 or 1)"):
        call(x, t)


LAST_ROW = 2**31 - 1  # (the last row an int32 index reads)


def _tall(rows: int, width: int, value: float) -> np.ndarray:
    return np.broadcast_to(np.float32(value), (rows, width))  # (a zero-stride table: any row count, no memory)


@pytest.mark.parametrize("op", ["rotary_embedding", "apply_rotary_emb_hf", "apply"])
def test_rows_past_an_int32_index_are_refused_and_the_last_one_is_read(device, op):
    """A kernel reads a table's row by an int32 index: a numpy table of more than 2**31 rows (memory-mapped or
    broadcast) read row p - 2**32 for a position p past it (or raised a bare OverflowError); now such a
    position is refused, naming its argument, and the last row an index reaches, 2**31 - 1, is read."""
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 1, 4)
    c, s = np.float32(0.6), np.float32(0.8)  # (every row: one rotation, cos 0.6 and sin 0.8)
    if op == "rotary_embedding":
        def call(p: int) -> np.ndarray:
            rows = max(p + 1, 2)
            return device.rotary_embedding(x, _tall(rows, 2, c), _tall(rows, 2, s), np.array([[p]]))
        name = "position_ids"
    elif op == "apply_rotary_emb_hf":
        def call(p: int) -> np.ndarray:
            return device.apply_rotary_emb_hf(x, x, _tall(p + 1, 4, c), _tall(p + 1, 4, s), p)[0]
        name = r"start_pos \+ S - 1"
    else:
        def call(p: int) -> np.ndarray:
            pairs = np.broadcast_to(np.array([c, s, c, s], np.float32), (p + 1, 4))  # ((cos, sin) per pair)
            return device.apply(x[0], pairs, positions=np.array([p]))[None]
        name = "positions"
    with pytest.raises(ValueError, match=rf"^{name}: row 2147483648 is past 2147483647, the last a kernel reads"):
        call(LAST_ROW + 1)
    a, b = (x[..., :2], x[..., 2:]) if op != "apply" else (x[..., 0::2], x[..., 1::2])
    want = np.concatenate([a * c - b * s, b * c + a * s], -1) if op != "apply" else \
        np.stack([a * c - b * s, b * c + a * s], -1).reshape(x.shape)
    np.testing.assert_allclose(call(LAST_ROW), want, rtol=1e-6)


def test_tokens_past_an_int32_row_are_refused(device, monkeypatch):
    """The calls whose token s reads table row s (ExecuTorch's LLM op; ONNX's without position_ids, row
    b * S + s) refuse more tokens than a row index reaches, before any copy (the limit forced down to 16 rows
    so that the arrays are small: without the check, these calls would run)."""
    import vkrope.arguments

    monkeypatch.setattr(vkrope.arguments, "MAX_ROWS", 16)
    x = np.ones((1, 17, 1, 2), np.float32)
    with pytest.raises(ValueError, match=r"^xq \(its token s reads row s of freqs_cos\): row 16 is past 15"):
        device.apply_rotary_emb(x, x, np.ones((17, 1), np.float32), np.zeros((17, 1), np.float32))
    x = np.ones((1, 1, 17, 2), np.float32)
    table = np.ones((1, 17, 1), np.float32)
    with pytest.raises(ValueError, match=r"^cos_cache \(row b \* S \+ s of its \[B, S\] tokens\): row 16 is past"):
        device.rotary_embedding(x, table, table)
    monkeypatch.undo()
    device.rotary_embedding(x, table, table)  # (the same call, under the real limit)


def test_a_row_past_the_binding_names_the_callers_argument():
    """The table kernel's row-size refusal names the caller's argument (ExecuTorch's xq), not its own x."""
    with vkrope.Device() as dev:
        dev._force_limits(max_storage_buffer_range=1 << 12)
        q, fc = np.ones((1, 1, 1, 2048), np.float32), np.ones((1, 1024), np.float32)
        with pytest.raises(ValueError, match=r"^one row of xq \(2048 values: 8192 bytes\) does not fit the device's "
                                             r"maxStorageBufferRange \(4096 bytes: \d+ for one binding"):
            dev.apply_rotary_emb(q, q, fc, fc)


def test_a_freqs_row_past_the_binding_is_blamed_not_x():
    """SAM2's kernel named x's row where the float32 freqs row was the one too wide (an adversary's: x in
    float16 is half as wide); it names freqs, its bytes and the way out, and freqs in x's dtype run."""
    with vkrope.Device() as dev:
        dev._force_limits(max_storage_buffer_range=1 << 12)
        x = np.ones((2, 1024), np.float16)  # (2048 bytes a row; a float32 freqs row: 4096, the whole range)
        with pytest.raises(ValueError, match=r"^one row of freqs \(4096 bytes of float32; freqs in x's dtype, "
                                             r"float16, take less\) does not fit the device's maxStorageBufferRange"):
            dev.apply(x, np.ones((2, 1024), np.float32), storage="buffer")
        assert dev.apply(x, np.ones((2, 1024), np.float16), storage="buffer").shape == x.shape
        for f in (np.float16, np.float32):  # (x's row past the range: x is named, whatever freqs are: the
            with pytest.raises(ValueError, match=r"^one row of x \(C = 2048: 4096 bytes\) does not fit"):  # way
                dev.apply(np.ones((2, 2048), np.float16), np.ones((2, 2048), f), storage="buffer")  # out is x's)


def test_a_row_of_position_words_past_the_binding_is_named_as_such():
    """An N-D call has no cos / sin tables: a token's row of ids words too wide for a binding is named as that."""
    with vkrope.Device() as dev:
        dev._force_limits(max_storage_buffer_range=1 << 12)
        with pytest.raises(ValueError, match=r"^one token's row of position words \(4800 bytes\) does not fit"):
            dev.apply_nd(np.ones((2, 1200), np.float16), vkrope.NdFreqs((2,) * 600), np.zeros((2, 600)))
        dev._force_limits(max_storage_buffer_range=1 << 13)  # (q's 4096-byte row fits; a table row does not)
        with pytest.raises(ValueError, match=r"^one row of the cos / sin tables \(8192 bytes\) does not fit"):
            q = np.ones((1, 1, 1, 2048), np.float16)
            dev.apply_rotary_emb_hf(q, q, np.ones((1, 2048), np.float32), np.ones((1, 2048), np.float32))


def test_a_spec_in_a_message_is_named_once(device):
    """A dataclass argument's repr names its class already: the message does not say it twice."""
    x = np.ones((1, 1, 3, 8), np.float32)
    with pytest.raises(ValueError, match=r"got RopeFreqs\(dim=8, ") as info:
        device.rotary_embedding(x, vkrope.RopeFreqs(8), vkrope.RopeFreqs(8))
    assert "RopeFreqs RopeFreqs" not in str(info.value)


@pytest.mark.parametrize("spec, fix", [
    (vkrope.InvFreqs(np.full(4, 0.5, np.float32), attention_factor=1.3), r"pass a spec of attention_factor 1"),
    (vkrope.RopeFreqs(8, scale=4.0, yarn=vkrope.YaRN(original_context=64)),
     r"pass yarn an attn_factor of 1 / \(0\.1 ln\(scale\) \+ 1\) for a factor of 1"),
])
def test_inverse_with_a_scaled_spec_says_how_for_that_spec(device, spec, fix):
    """inverse=True with cos / sin scaled by a factor is refused; the advice fits the spec given (an InvFreqs has
    no yarn to pass a factor to)."""
    x = np.ones((1, 2, 8), np.float32)
    with pytest.raises(ValueError, match=rf"^inverse=True with an? {type(spec).__name__} spec whose cos / sin factor "
                                         rf"is .*; {fix} and scale x yourself$"):
        device.apply(x, spec, positions=np.arange(2), inverse=True)


def test_a_timedelta_is_no_number_of_a_model():
    """A ModelRope's theta and rope parameters refuse np.timedelta64 (an np.integer to numpy), as any
    non-number: they were read as 10000.0 and 2.0."""
    import dataclasses

    rope = vkrope.from_hf({**LLAMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0}})
    with pytest.raises(ValueError, match=r"^theta \(rope_theta\) must be a positive finite number"):
        dataclasses.replace(rope, theta=np.timedelta64(10000))
    with pytest.raises(ValueError, match=r"^factor must be a positive finite number"):
        dataclasses.replace(rope, params=(("factor", np.timedelta64(2)),))


@pytest.mark.parametrize("op", ["apply", "rotary_embedding"])
def test_a_resident_table_row_past_a_tiny_binding_is_named(op):
    """A resident table's window starts at a binding offset, so a device whose binding range holds fewer bytes
    than that offset's step and a row refuses it (forced small: no real device comes near): the ValueError names
    the table and says a numpy one is taken; the same table as numpy runs, right."""
    with vkrope.Device() as dev:
        _resident_table_row_past(dev, op)


def _resident_table_row_past(dev, op):
    dev._force_limits(max_storage_buffer_range=512, min_storage_buffer_offset_alignment=256)
    rng = np.random.default_rng(5)
    if op == "apply":
        x, f = rng.standard_normal((1, 2, 34)).astype(np.float32), rng.standard_normal((2, 34)).astype(np.float32)
        with pytest.raises(ValueError, match=r"^one row of freqs \(136 bytes\) does not fit .* pass it as a numpy"):
            dev.apply(x, dev.asarray(f, "buffer"))
        check_results(OPS[0], {"x": x, "freqs": f}, (dev.apply(x, f),))
    else:
        x = rng.standard_normal((1, 1, 2, 34)).astype(np.float32)
        cos, sin = (rng.standard_normal((4, 17)).astype(np.float32) for _ in range(2))
        pos = np.array([[0, 3]])
        with pytest.raises(ValueError, match=r"^one row of the cos / sin tables \(68 bytes\) does not fit"):
            dev.rotary_embedding(x, dev.asarray(cos, "buffer"), dev.asarray(sin, "buffer"), pos)
        args = {"x": x, "cos_cache": cos, "sin_cache": sin, "position_ids": pos}
        check_results(OPS[1], args, (dev.rotary_embedding(x, cos, sin, pos),))


def test_a_result_numpy_cannot_allocate_is_named(device, monkeypatch):
    """A broadcast x takes no memory, its result does: numpy's MemoryError named neither the result nor what
    to do (a runtime adversary's, a 2^32-value x). Now it names the result, its shape and bytes, before any
    GPU work, and the device stays usable."""
    real_empty = np.empty
    x = np.broadcast_to(np.float32(1), (1, 4096, 1024))

    def empty(shape, dtype=float, *args, **kwargs):
        if np.prod(shape) >= x.size:  # (a result this big stands for one past the host's memory)
            raise MemoryError("Unable to allocate 16.0 MiB")  # (as numpy says it)
        return real_empty(shape, dtype, *args, **kwargs)

    monkeypatch.setattr(np, "empty", empty)
    before = device.stats()["submissions"]
    with pytest.raises(MemoryError, match=r"^the result of x, \[1, 4096, 1024\] float32 \(16777216 bytes\), does not "
                                          r"fit in host memory: rotate fewer rows a call$"):
        device.apply(x, vkrope.RopeFreqs(1024), positions=np.arange(4096))
    q = np.ones((1, 4096, 1, 256), np.float32)
    k = np.broadcast_to(np.float32(1), (1, 4096, 4, 256))  # (of apply_rotary_emb's two results, k's)
    with pytest.raises(MemoryError, match=r"^the result of xk, \[1, 4096, 4, 256\] float32"):
        device.apply_rotary_emb(q, k, np.ones((4096, 128), np.float32), np.zeros((4096, 128), np.float32))
    q = np.broadcast_to(np.float32(1), (1, 4, 4096, 256))  # (the decode step's request names no x: its q)
    kc, vc = (device.asarray(np.zeros((1, 4, 4096, 256), np.float32)) for _ in range(2))
    with pytest.raises(MemoryError, match=r"^the result of q, \[1, 4, 4096, 256\] float32"):
        device.rope_and_cache(q, q, q, kc, vc, (np.ones((4096, 128), np.float32), np.zeros((4096, 128), np.float32)),
                              np.arange(4096)[None])
    small = np.ones((1, 4, 8), np.float32)  # (apply_many's result names its call: a reviewer's)
    with pytest.raises(MemoryError, match=r"^calls\[1\]: the result of x, \[1, 4096, 1024\] float32"):
        device.apply_many([(small, vkrope.RopeFreqs(8), {"positions": np.zeros(4, np.int64)}),
                           (x, vkrope.RopeFreqs(1024), {"positions": np.arange(4096)})])
    assert device.stats()["submissions"] == before
    monkeypatch.undo()
    y = device.apply(np.ones((1, 4, 8), np.float32), vkrope.RopeFreqs(8), positions=np.zeros(4, np.int64))
    assert np.array_equal(y, np.ones((1, 4, 8), np.float32))


def test_fp8_is_no_float_for_tables_weights_or_positions(device):
    """ml_dtypes' float8_e5m2 says kind "f" and float8_e4m3fn not: checks by kind took one and refused the
    other (the decode step's cos / sin and RMSNorm weights, a ModelRope's float positions; a diff reviewer's).
    Both are refused alike; bfloat16 positions are read as float16 ones are."""
    import ml_dtypes

    rope = vkrope.from_hf({"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64})
    q = np.ones((1, 4, 1, 64), np.float32)
    kc = device.asarray(np.zeros((1, 4, 8, 64), np.float32))
    vc = device.asarray(np.zeros((1, 4, 8, 64), np.float32))
    cos, sin = np.ones((8, 32), np.float32), np.zeros((8, 32), np.float32)
    for dt in (ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2):
        with pytest.raises(TypeError, match=r"^position_ids must be integers"):
            rope.cos_sin(np.arange(4).astype(dt)[None])
        with pytest.raises(TypeError, match=rf"^freqs\[0\] \(cos\) must be a real floating array; got dtype "
                                            rf"{np.dtype(dt)}$"):
            device.rope_and_cache(q, q, q, kc, vc, (cos.astype(dt), sin), np.zeros((1, 1), np.int64))
        with pytest.raises(TypeError, match=rf"^q_norm must be a real floating array; got dtype {np.dtype(dt)}$"):
            device.rope_and_cache(q, q, q, kc, vc, (cos, sin), np.zeros((1, 1), np.int64),
                                  q_norm=np.ones(64, dt), k_norm=np.ones(64, np.float32))
    want = rope.cos_sin(np.arange(4)[None])
    for dt in (ml_dtypes.bfloat16, np.float16):
        got = rope.cos_sin(np.arange(4).astype(dt)[None])
        assert all(np.array_equal(g, w) for g, w in zip(got, want))

"""Bad input raises TypeError / ValueError naming the argument before any GPU
work, and the runtime serves a correct call right after; no Vulkan loader
gives VulkanUnavailableError on first use, not on import."""

from __future__ import annotations

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
    (np.ones((), np.float32), {}, ValueError, ["at least 1 axes"]),
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


INTEGER_ARGUMENTS = {"position_ids", "old", "new"}  # (shift_cache's from_positions / to_positions: old, new)


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


def test_a_timedelta_scalar_is_no_int(device):
    """An int argument (start_pos here) given as np.timedelta64, an np.integer to numpy, is refused too."""
    x = np.ones((1, 2, 1, 4), np.float32)
    t = np.ones((4, 4), np.float32)
    with pytest.raises(TypeError, match=r"start_pos must be an int >= 0; got .*timedelta64"):
        device.apply_rotary_emb_hf(x, x, t, t, np.timedelta64(1))


BROADCAST_ROWS = 2**31 + 1  # (a zero-stride numpy table: any row count, no memory)


def _tall(width: int) -> np.ndarray:
    return np.broadcast_to(np.float32(1.0), (BROADCAST_ROWS, width))


@pytest.mark.parametrize("op", ["rotary_embedding", "apply_rotary_emb_hf", "apply"])
def test_a_table_past_int32_rows_is_refused(device, op):
    """A kernel reads a table's row by an int32 index: a numpy table of more than 2**31 rows (memory-mapped or
    broadcast) is refused, naming it, rather than its rows past 2**31 wrapping onto others."""
    x = np.ones((1, 1, 1, 4), np.float32)
    with pytest.raises(ValueError) as info:
        if op == "rotary_embedding":
            device.rotary_embedding(x, _tall(2), _tall(2), np.array([[2**31]]))
        elif op == "apply_rotary_emb_hf":
            device.apply_rotary_emb_hf(x, x, _tall(4), _tall(4), 2**31 - 1)
        else:
            device.apply(x[0], np.broadcast_to(np.float32(1.0), (BROADCAST_ROWS, 4)), positions=np.array([2**31]))
    assert re.search(r"(cos_cache|freqs_cos) has 2147483649 rows|positions entries must be < 2\*\*31",
                     str(info.value)), info.value
    args = OPS[0].make(np.random.default_rng(1))
    check_results(OPS[0], args, OPS[0].call(device, args))


def test_a_row_past_the_binding_names_the_callers_argument():
    """The table kernel's row-size refusal names the caller's argument (ExecuTorch's xq), not its own x."""
    with vkrope.Device() as dev:
        dev._force_limits(max_storage_buffer_range=1 << 12)
        q, fc = np.ones((1, 1, 1, 2048), np.float32), np.ones((1, 1024), np.float32)
        with pytest.raises(ValueError, match=r"^one row of xq \(2048 values\) does not fit"):
            dev.apply_rotary_emb(q, q, fc, fc)


def test_a_spec_in_a_message_is_named_once(device):
    """A dataclass argument's repr names its class already: the message does not say it twice."""
    x = np.ones((1, 1, 3, 8), np.float32)
    with pytest.raises(ValueError, match=r"got RopeFreqs\(dim=8, ") as info:
        device.rotary_embedding(x, vkrope.RopeFreqs(8), vkrope.RopeFreqs(8))
    assert "RopeFreqs RopeFreqs" not in str(info.value)

"""Every example runs and checks itself; the command line works end to end."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkrope
from at_once import run_all
from oracle import check_result

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def run(args, **kw):
    env = dict(os.environ)
    env.update(kw.pop("env", {}))
    kw.setdefault("timeout", 600)
    return subprocess.run(args, capture_output=True, text=True, env=env, **kw)


@pytest.fixture(scope="module")
def example_runs() -> dict[str, subprocess.CompletedProcess[str]]:
    """Every example run, side by side (at_once.py; they write no files)."""
    return run_all({p.name: functools.partial(run, [sys.executable, str(p)], cwd=ROOT, env={"VKROPE_VALIDATION": "1"})
                    for p in EXAMPLES})


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_runs_and_checks_itself(path, example_runs):
    res = example_runs[path.name]
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.rstrip().endswith("OK"), res.stdout
    assert "Vulkan validation" not in res.stderr, res.stderr


def test_examples_exist():
    names = {p.name for p in EXAMPLES}
    assert {"attention_numpy.py", "edgetam_memory_keys.py", "streaming_device.py", "dask_batch.py",
            "onnx_llama_attention.py", "decode_loop.py", "hf_config_attention.py", "flux_attention.py"} <= names


def test_info_lists_the_devices_when_vkrope_device_matches_none():
    """docs/errors.md: `vkrope info` lists every device; with a VKROPE_DEVICE that matches none it still does,
    says it uses none and which VKROPE_DEVICE asked, and exits 1 with the error (it printed only the error)."""
    res = cli("info", env={"VKROPE_DEVICE": "99"})
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"[0] {vkrope.devices()[0]['name']}" in res.stdout and "maxStorageBufferRange" in res.stdout, res.stdout
    assert res.stdout.rstrip().endswith("vkrope uses none of them (VKROPE_DEVICE = '99')"), res.stdout
    assert "*[" not in res.stdout
    err = res.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vkrope: error: VulkanUnavailableError: ") and "index 99" in err[0], err


def test_info_json_when_no_device_is_chosen(monkeypatch, capsys):
    """`vkrope info --json` with no device chosen: the devices and "chosen": null, then the error, exit 1."""
    from vkrope.__main__ import main

    def unusable():
        raise vkrope.VulkanUnavailableError("no usable Vulkan device. Devices seen: ...")

    monkeypatch.setattr(vkrope, "default_device", unusable)
    assert main(["info", "--json"]) == 1
    out, err = capsys.readouterr()
    facts = json.loads(out)
    assert facts["chosen"] is None and [d["index"] for d in facts["devices"]] == [d["index"] for d in vkrope.devices()]
    assert err == "vkrope: error: VulkanUnavailableError: no usable Vulkan device. Devices seen: ...\n", err


def cli(*args, **kw):
    """Run the command with the validation layer on; it must stay silent."""
    # PYTHONPATH: this checkout's vkrope even when cwd is elsewhere.
    env = {"VKROPE_VALIDATION": "1", "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.update(kw.pop("env", {}))
    res = run([sys.executable, "-m", "vkrope", *args], env=env, **kw)
    assert "Vulkan validation" not in res.stderr, res.stderr
    return res


def test_help_and_info():
    res = cli("--help")
    assert res.returncode == 0 and "info" in res.stdout and "bench" in res.stdout and "apply" in res.stdout
    res = cli("info")
    assert res.returncode == 0, res.stderr
    assert vkrope.default_device().name in res.stdout and "vkrope uses" in res.stdout
    res = cli("info", "--json")
    facts = json.loads(res.stdout)
    assert facts["chosen"]["name"] == facts["devices"][facts["chosen"]["index"]]["name"]
    assert facts["chosen"]["name"] == vkrope.default_device().name
    res = cli("info", env={"VKROPE_TIMEOUT_S": "abc"})  # (the diagnostic command lists the devices all the same)
    assert res.returncode == 1 and vkrope.default_device().name in res.stdout and "uses none" in res.stdout
    assert res.stderr == ("vkrope: error: ValueError: VKROPE_TIMEOUT_S must be a number of seconds in (0, 1e6]; got "
                          "'abc'\n"), res.stderr


@pytest.mark.parametrize("extra", [[], ["--inverse"], ["--repeat", "2", "--exclude-last", "1"], ["--storage", "texture3d"]])
def test_cli_apply_round_trip_equals_api(tmp_path, extra):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 9, 12)).astype(np.float32)
    nf = 4 if "--repeat" in extra else 9
    f = rng.standard_normal((nf, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    res = cli("apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "y.npy"), *extra)
    assert res.returncode == 0, res.stderr
    y = np.load(tmp_path / "y.npy")
    kw = {"inverse": "--inverse" in extra}
    if "--repeat" in extra:
        kw.update(repeat=2, exclude_last=1)
    check_result(y, x, f, **kw)
    if "--storage" in extra:
        kw["storage"] = "texture3d"
    assert y.tobytes() == vkrope.apply(x, f, **kw).tobytes()


def test_cli_reads_big_endian_files(tmp_path):
    """#18.11: a '>f4' .npy (written on a big-endian machine) was refused
    with advice for the Python API; the CLI now reads the same numbers."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 9, 12)).astype(np.float32)
    f = rng.standard_normal((9, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x.astype(">f4"))
    np.save(tmp_path / "f.npy", f.astype(">f4"))
    res = cli("apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "y.npy"))
    assert res.returncode == 0, res.stderr
    y = np.load(tmp_path / "y.npy")
    assert y.dtype == np.float32
    assert y.tobytes() == vkrope.apply(x, f).tobytes()


def test_cli_reads_and_writes_bfloat16(tmp_path):
    """bfloat16 .npy files (np.save writes ml_dtypes' bfloat16 as '<V2')
    are read as bfloat16, and the result is saved the same way."""
    from oracle import BF16

    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 9, 12)).astype(BF16)
    f = rng.standard_normal((9, 12)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    assert np.load(tmp_path / "x.npy").dtype == np.dtype("V2")
    res = cli("apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "y.npy"))
    assert res.returncode == 0, res.stderr
    assert "dtype bfloat16" in res.stdout
    y = np.load(tmp_path / "y.npy").view(BF16)
    check_result(y, x, f)
    assert y.tobytes() == vkrope.apply(x, f).tobytes()


def test_cli_apply_positions(tmp_path):
    x = np.ones((1, 3, 4), np.float32)
    f = np.array([[0, 1, 0, 1], [1, 0, 1, 0]], np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    np.save(tmp_path / "p.npy", np.array([1, -1, 0]))
    res = cli("apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "y.npy"),
              "--positions", str(tmp_path / "p.npy"))
    assert res.returncode == 0, res.stderr
    y = np.load(tmp_path / "y.npy")
    check_result(y, x, f, positions=np.array([1, -1, 0]))
    np.testing.assert_array_equal(y, vkrope.apply(x, f, positions=np.array([1, -1, 0])))


@pytest.mark.parametrize("case,words", [
    ("missing_file", ["X", "no such file"]),
    ("bad_dtype", ["TypeError: X.npy must have dtype", "float64 (save it as float32)"]),  # (its file, no Python)
    ("odd_c", ["ValueError", "even"]),
    ("bad_storage", ["ValueError", "storage"]),
    ("bad_repeat", ["ValueError", "repeat"]),
    ("not_npy", ["X.npy", "not a valid .npy file"]),
])
def test_cli_errors_are_one_line(tmp_path, capsys, case, words):
    x = np.ones((1, 3, 4), np.float32)
    f = np.ones((3, 4), np.float32)
    if case == "bad_dtype":
        x = x.astype(np.float64)
    if case == "odd_c":
        x = np.ones((1, 3, 5), np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", f)
    if case == "not_npy":
        (tmp_path / "x.npy").write_text("hello")
    args = ["apply", str(tmp_path / ("nope.npy" if case == "missing_file" else "x.npy")), str(tmp_path / "f.npy"),
            "-o", str(tmp_path / "y.npy")]
    if case == "bad_storage":
        args += ["--storage", "texture2d"]
    if case == "bad_repeat":
        args += ["--repeat", "0"]
    if case == "missing_file":  # the installed command, in its own process: exit status, stderr, --debug
        res = cli(*args)
        rc, err = res.returncode, res.stderr
        debug = cli("--debug", *args)
        assert debug.returncode != 0 and "Traceback" in debug.stderr
    else:  # the same entry point in this process (a process each cost 3.6 s; the suite keeps under 10 minutes)
        from vkrope.__main__ import main

        rc, err = main(args), capsys.readouterr().err
        with pytest.raises(Exception):
            main(["--debug", *args])  # --debug lets the exception through
    assert rc != 0
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vkrope: error:"), err
    for w in words:
        assert w in lines[0], lines[0]
    assert "Traceback" not in err


def _one_line_error(res, *words):
    """Exit 1 and exactly one line `vkrope: error: ...` holding `words`."""
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vkrope: error: "), res.stderr
    assert "Traceback" not in res.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def test_cli_errors_name_the_flags(tmp_path, capsys):
    """Messages of the Python API name its keywords (num_heads, position_ids, storage='buffer'); through the
    command line they name the flags that set them (--num-heads, --position-ids, --storage buffer)."""
    from vkrope.__main__ import main

    x, f = _npy_pair(tmp_path)
    np.save(tmp_path / "p.npy", np.arange(3))
    np.save(tmp_path / "x4.npy", np.ones((2, 8, 4, 8), np.float32))  # [B, S, H, D] given for [B, H, S, D]
    np.save(tmp_path / "c.npy", np.ones((8, 4), np.float32))
    np.save(tmp_path / "pid.npy", np.zeros((2, 8), np.int64))
    out = str(tmp_path / "y.npy")
    c, x4 = str(tmp_path / "c.npy"), str(tmp_path / "x4.npy")
    for args, line in [
        (["apply", x, f, "-o", out, "--positions", str(tmp_path / "p.npy"), "--repeat", "2"],
         "ValueError: --positions cannot be combined with --repeat or --exclude-last (got --repeat 2, --exclude-last 0);"),
        (["apply", x, f, "-o", out, "--storage", "texture2d"], "ValueError: --storage must be one of "),
        (["rotary-embedding", x, c, c, "-o", out], "ValueError: X.npy is 3D [B, S, H*D] = (1, 3, 4): --num-heads must be "
                                                  "given (> 0)"),
        (["rotary-embedding", x4, c, c, "-o", out, "--position-ids", str(tmp_path / "pid.npy")],
         "ValueError: --position-ids must have shape (2, 4); got (2, 8) (X.npy is read as [B, H, S, D]: "),
        (["rotary-embedding", x, c, c, "-o", out, "--num-heads", "1", "--rotary-embedding-dim", "6"],
         "ValueError: --rotary-embedding-dim must be <= the head size 4; got 6"),
    ]:
        assert main(args) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"vkrope: error: {line}") and len(err.splitlines()) == 1, err
        assert "num_heads" not in err and "position_ids" not in err and "storage=" not in err, err


def test_cli_bench_chart_from_a_missing_file(tmp_path, capsys):
    """--chart-from of a file that is not there says so (it said the file was not a bench JSON of this
    version), before any work and without writing anything."""
    from vkrope.__main__ import main

    assert main(["bench", "--chart-from", str(tmp_path / "nope.json")]) == 1
    err = capsys.readouterr().err
    assert err == f"vkrope: error: ValueError: --chart-from: no such file {str(tmp_path / 'nope.json')!r}\n", err
    assert list(tmp_path.iterdir()) == []


def _npy_pair(tmp_path):
    np.save(tmp_path / "x.npy", np.ones((1, 3, 4), np.float32))
    np.save(tmp_path / "f.npy", np.ones((3, 4), np.float32))
    return str(tmp_path / "x.npy"), str(tmp_path / "f.npy")


@pytest.mark.parametrize("which,content", [
    ("X.npy", b""),  # empty: EOFError: No data left in file
    ("X.npy", b"hello, this is text\n"),  # numpy's pickle message
    ("FREQS.npy", b""),
    ("FREQS.npy", b"\x93NUMPY garbage"),  # a broken header
    ("--positions", b"not an array"),
])
def test_cli_invalid_npy_names_the_argument(tmp_path, which, content):
    """#11.15: a file that is not a .npy file is one line naming the argument."""
    x, f = _npy_pair(tmp_path)
    bad = tmp_path / "bad.npy"
    bad.write_bytes(content)
    args = {"X.npy": [str(bad), f], "FREQS.npy": [x, str(bad)], "--positions": [x, f, "--positions", str(bad)]}[which]
    res = cli("apply", *args, "-o", str(tmp_path / "y.npy"))
    line = _one_line_error(res, which, "not a valid .npy file", str(bad))
    assert "pickle" not in line.lower() and "EOFError" not in line, line
    assert not (tmp_path / "y.npy").exists()


def test_cli_refuses_pickled_object_arrays(tmp_path):
    """Arrays are always loaded with allow_pickle=False."""
    x, f = _npy_pair(tmp_path)
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    res = cli("apply", str(tmp_path / "obj.npy"), f, "-o", str(tmp_path / "y.npy"))
    _one_line_error(res, "X.npy", "not a valid .npy file")


def test_cli_refuses_npz_archives(tmp_path):
    x, f = _npy_pair(tmp_path)
    np.savez(tmp_path / "x.npz", x=np.ones((1, 3, 4), np.float32))
    res = cli("apply", str(tmp_path / "x.npz"), f, "-o", str(tmp_path / "y.npy"))
    _one_line_error(res, "X.npy", "not a valid .npy file")


@pytest.mark.parametrize("name", ["out_noext", "out.data", "y.npy"])
def test_cli_writes_exactly_the_output_path(tmp_path, name):
    """#11.15: `-o out_noext` wrote out_noext.npy while saying otherwise."""
    x, f = _npy_pair(tmp_path)
    res = cli("apply", x, f, "-o", str(tmp_path / name))
    assert res.returncode == 0, res.stderr
    assert f"wrote {tmp_path / name}:" in res.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"x.npy", "f.npy", name})
    y = np.load(tmp_path / name)
    assert y.shape == (1, 3, 4) and y.dtype == np.float32


def test_cli_refuses_a_directory_as_output(tmp_path):
    """#11.15: `-o .` printed "wrote ." and wrote `..npy`."""
    x, f = _npy_pair(tmp_path)
    res = cli("apply", x, f, "-o", ".", cwd=tmp_path)
    _one_line_error(res, "-o/--output", "directory")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.npy", "x.npy"]
    res = cli("apply", x, f, "-o", str(tmp_path / "missing" / "y.npy"))
    _one_line_error(res, "-o/--output", "does not exist")


@pytest.mark.parametrize("args,words", [
    (["bench", "--repeats", "-3"], ["--repeats", "positive"]),
    (["bench", "--repeats", "0"], ["--repeats", "positive"]),
    (["bench", "--repeats", "many"], ["--repeats", "positive"]),
    (["bench", "--shapes", "1x-2x4"], ["--shapes"]),
    (["bench", "--shapes", "axb"], ["--shapes"]),
    (["apply", "x.npy", "f.npy", "-o", "y.npy", "--repeat", "-1"], ["repeat"]),
    (["apply", "x.npy", "f.npy", "-o", "y.npy", "--repeat", "two"], ["--repeat"]),
    (["apply", "x.npy", "f.npy", "-o", "y.npy", "--exclude-last", "-2"], ["--exclude-last must be >= 0"]),
    (["apply", "x.npy", "f.npy"], ["-o/--output"]),
    (["nosuchcommand"], ["nosuchcommand"]),
])
def test_cli_numeric_and_usage_errors_are_one_line(tmp_path, args, words):
    """#11.15: `bench --repeats -3` was accepted; every numeric option must
    be checked, and usage errors follow the one-line, exit-1 rule."""
    _npy_pair(tmp_path)
    res = cli(*args, "--out", str(tmp_path / "bench")) if args[0] == "bench" else cli(*args, cwd=tmp_path)
    _one_line_error(res, *words)
    assert not (tmp_path / "bench").exists()


def test_cli_bench_quick_tiny(tmp_path, capsys):
    """The benchmark runs and writes JSON and a chart (sizes kept tiny here):
    per shape and dtype a table row per storage and a generated-frequency
    row, each with its bytes moved and both ceilings; the chart can be drawn
    again from the JSON alone."""
    res = cli("bench", "--shapes", "1x16x8,2x64x16", "--repeats", "1", "--out", str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    result = json.loads((tmp_path / "bench.json").read_text())
    assert len(result["rows"]) == 2 * (3 + 4 + 4)  # shapes x rows of float32, float16, bfloat16 (+ float32 tables)
    assert {r["dtype"] for r in result["rows"]} == {"float32", "float16", "bfloat16"}
    for row in result["rows"]:
        assert row["kernel_s"] > 0 and row["apply_s"] > 0 and row["copy_gbps"] > 0 and row["texel_copy_gbps"] > 0
        assert row["repeats"] == 1  # (as asked: an adversary found 3 taken, the JSON saying 1)
        b, n, c = row["shape"]
        x_bytes = b * n * c * (4 if row["dtype"] == "float32" else 2)
        table = n * c * (4 if row["dtype"] == "float32" or row["freqs"] == "table32" else 2)
        columns = -(-(c // 2) // 4) * 16 + (c // 2) * 16  # float32 inverse frequencies (whole uvec4s), a uvec4 each
        assert row["x_bytes"] == x_bytes
        assert row["bytes_moved"] == 2 * x_bytes + (table if row["freqs"] != "generated" else columns), row
    assert {(r["storage"], r["freqs"]) for r in result["rows"]} == {
        ("buffer", "table"), ("texture3d", "table"), ("buffer", "generated"), ("buffer", "table32")}
    assert (tmp_path / "bench.png").stat().st_size > 1000
    res = cli("bench", "--chart-from", str(tmp_path / "bench.json"), "--plot", str(tmp_path / "again.png"))
    assert res.returncode == 0 and (tmp_path / "again.png").stat().st_size > 1000, res.stdout + res.stderr
    from vkrope.__main__ import main  # (the refusals in this process: each command's start took seconds)

    (tmp_path / "bad.json").write_text("{}")
    assert main(["bench", "--chart-from", str(tmp_path / "bad.json")]) != 0
    err = capsys.readouterr().err
    assert "--chart-from" in err and "bad.json" in err
    for row in result["rows"]:  # a run of an older vkrope: no x_bytes / freqs
        del row["x_bytes"], row["freqs"]
    (tmp_path / "old.json").write_text(json.dumps(result))
    assert main(["bench", "--chart-from", str(tmp_path / "old.json")]) != 0
    err = capsys.readouterr().err
    assert "--chart-from" in err and "x_bytes" in err
    assert not (tmp_path / "old.png").exists()


@pytest.mark.parametrize("plot,word", [("chart", ".png"), ("missing/dir/p.png", "does not exist")])
def test_cli_bench_bad_plot_path_before_any_work(tmp_path, plot, word):
    res = cli("bench", "--shapes", "1x16x8", "--repeats", "1", "--out", str(tmp_path / "out"),
              "--plot", str(tmp_path / plot))
    assert res.returncode != 0 and "--plot" in res.stderr and word in res.stderr, res.stderr
    assert not (tmp_path / "out").exists()


def test_bench_refuses_a_shape_past_the_memory_there_is(tmp_path, capsys, monkeypatch):
    """A shape whose arrays exceed the memory the system has is refused before anything is measured, naming
    --shapes: with Linux's overcommit numpy allocated it and the OOM killer ended the run (an adversary's
    1x1x2^32 took the machine's memory)."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    assert kernel.host_bytes((2, 3, 4), np.dtype(np.float16)) == 24 * (24 + 4) + 12 * 40
    monkeypatch.setattr(kernel, "available_memory", lambda: 1 << 20)
    assert main(["bench", "--shapes", "1x8x8,1x256x1024", "--repeats", "1", "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "--shapes: a shape's arrays do not fit in this machine's memory (shape 1x256x1024 needs about" in err
    assert not (tmp_path / "o" / "bench.partial.json").exists()


def test_bench_names_the_shape_a_device_limit_refuses(tmp_path, capsys, monkeypatch):
    """A shape past a device limit (texture3d's image rows) stopped the run with the API's words (`x: ...; use
    storage='buffer'`): the error names the shape and the flag. The limit is stood in for (a real GPU's are
    larger than any test shape)."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    def refused(dev, x, f, storages, r):
        raise ValueError("x: 9 rows do not fit one 3D image; use storage='buffer'")

    monkeypatch.setattr(kernel, "_measure", refused)
    assert main(["bench", "--shapes", "1x8x8", "--repeats", "1", "--dtype", "float16", "--out",
                 str(tmp_path / "o")]) == 1
    assert capsys.readouterr().err.endswith("vkrope: error: ValueError: --shapes 1x8x8 (float16): x: 9 rows do not "
                                            "fit one 3D image; use --storage buffer\n")


def test_bench_axial_spec():
    from vkrope.bench.kernel import axial_spec

    assert axial_spec(4096, 256) == vkrope.AxialFreqs(256, 64, 64)
    assert axial_spec(1792, 256) == vkrope.AxialFreqs(256, 32, 56)
    assert axial_spec(7, 8) == vkrope.AxialFreqs(8, 1, 7)
    assert axial_spec(16, 6) is None  # C % 4 != 0: no axial frequencies
    assert axial_spec((1 << 24) + 2, 4) is None  # more cells than an axial grid holds
    assert axial_spec(1, 65540) is None  # wider than a spec's head (it stopped `bench --shapes 1x1x65540`)
    assert axial_spec(1, 65536) == vkrope.AxialFreqs(65536, 1, 1)


def test_cli_bench_without_matplotlib(tmp_path):
    """No matplotlib: the numbers are still written, and the message says how
    to get the chart (no second, weaker plotter)."""
    code = ("import sys; sys.modules['matplotlib'] = None; from vkrope.__main__ import main; "
            f"sys.exit(main(['bench', '--shapes', '1x16x8', '--repeats', '1', '--dtype', 'float32', "
            f"'--storage', 'buffer', '--out', {str(tmp_path)!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "bench.json").exists() and not list(tmp_path.glob("*.png")) and not list(tmp_path.glob("*.svg"))
    assert "pip install matplotlib (vkrope's bench extra" in res.stdout and "--chart-from" in res.stdout


def test_cli_demo():
    res = cli("demo")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "correct" in res.stdout and "float16" in res.stdout and "bfloat16" in res.stdout and "AxialFreqs" in res.stdout
    assert "texel-copy shader" in res.stdout and "of its ceiling" in res.stdout
    rows = [line.split() for line in res.stdout.splitlines() if re.match(r"(queries \[|keys )", line)]
    timed = [(float(r[-2]), float(r[-1])) for r in rows]
    # (the verdict compares the times unrounded: a row whose printed times tie may count either way)
    least, most = sum(vk < np_ for vk, np_ in timed), sum(vk <= np_ for vk, np_ in timed)
    said = re.search(r"vkrope was faster than numpy on (\d) of the 6 rows numpy ran", res.stdout)
    assert len(timed) == 6 and said and least <= int(said[1]) <= most, res.stdout
    cpu = str(vkrope.default_device().info["type"]).lower() == "cpu"
    assert ("numpy wins most rows here" in res.stdout) == (cpu and 2 * int(said[1]) < 6), res.stdout


def test_cli_rotary_embedding(tmp_path):
    """`vkrope rotary-embedding` matches the independent ONNX oracle, 3D and
    4D, with and without position ids; bad input is one clear line."""
    from oracle_family import onnx_rotary_embedding

    rng = np.random.default_rng(4)
    cases = [
        (rng.standard_normal((2, 3, 5, 8)).astype(np.float32), (9, 4), True, ["--interleaved"]),
        (rng.standard_normal((2, 5, 24)).astype(np.float32), (2, 5, 2), False,
         ["--num-heads", "3", "--rotary-embedding-dim", "4"]),
    ]
    for x, cshape, with_pos, flags in cases:
        cos, sin = rng.standard_normal(cshape).astype(np.float32), rng.standard_normal(cshape).astype(np.float32)
        np.save(tmp_path / "x.npy", x)
        np.save(tmp_path / "c.npy", cos)
        np.save(tmp_path / "s.npy", sin)
        args = ["rotary-embedding", "x.npy", "c.npy", "s.npy", "-o", "y.npy", *flags]
        pos = None
        if with_pos:
            pos = rng.integers(0, cshape[0], (2, 5))
            np.save(tmp_path / "p.npy", pos)
            args += ["--position-ids", "p.npy"]
        res = cli(*args, cwd=tmp_path)
        assert res.returncode == 0, res.stderr
        kw = {"interleaved": int("--interleaved" in flags)}
        if "--num-heads" in flags:
            kw.update(num_heads=3, rotary_embedding_dim=4)
        ref = onnx_rotary_embedding(x, cos, sin, pos, **kw)
        assert np.abs(np.load(tmp_path / "y.npy") - ref).max() < 1e-5
    res = cli("rotary-embedding", "x.npy", "c.npy", "s.npy", "-o", "y.npy", "--num-heads", "5", cwd=tmp_path)
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "--num-heads = 5" in res.stderr, res.stderr


def _unblock_later(fifo, seconds=5.0):
    """Should the command open `fifo` and block (the bug), open its other end after `seconds` (and every second
    for a minute: it may open it again) so the test fails instead of hanging."""
    import threading
    import time

    def other_end():
        time.sleep(seconds)
        for _ in range(60):
            for flags in (os.O_WRONLY | os.O_NONBLOCK, os.O_RDONLY | os.O_NONBLOCK):
                try:
                    os.close(os.open(fifo, flags))
                except OSError:
                    pass
            time.sleep(1)

    threading.Thread(target=other_end, daemon=True).start()


@pytest.mark.parametrize("which", ["X.npy", "FREQS.npy", "--positions"])
def test_cli_refuses_special_input_files(tmp_path, capsys, which):
    """A FIFO blocked the command with no message; /dev/zero was called "empty" (its st_size): an input that is
    not a regular file is refused, naming the argument, before a byte is read."""
    from vkrope.__main__ import main

    x, f = _npy_pair(tmp_path)
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    _unblock_later(fifo)
    for special, kind in [(fifo, "a pipe (FIFO)"), ("/dev/zero", "a character device"), (str(tmp_path), "a directory")]:
        args = {"X.npy": [special, f], "FREQS.npy": [x, special], "--positions": [x, f, "--positions", special]}[which]
        assert main(["apply", *args, "-o", str(tmp_path / "y.npy")]) == 1
        err = capsys.readouterr().err
        why = "" if kind == "a directory" else " (vkrope reads regular files only: save the data to a file first)"
        assert err == f"vkrope: error: ValueError: {which}: {special!r} is {kind}, not a .npy file{why}\n", err
    assert not (tmp_path / "y.npy").exists()


def _writer_for(fifo, seconds=5.0, data=b""):
    """Hold `fifo` open for writing, with `data` written and no more, for `seconds` (a read past `data` waits
    meanwhile), then close it: a command that waits on it (the bug) then reads its end and fails instead of
    hanging. The descriptor is the thread's own, closed once."""
    import threading
    import time

    opened = threading.Event()

    def hold():
        fd = os.open(fifo, os.O_RDWR)
        os.write(fd, data)
        opened.set()
        time.sleep(seconds)
        os.close(fd)

    threading.Thread(target=hold, daemon=True).start()
    opened.wait()


def test_cli_reads_a_file_that_says_it_is_empty_without_waiting(tmp_path, capsys, monkeypatch):
    """A "regular" file of size 0 may be a kernel's, whose read waits for ever (/proc/kmsg hung `vkrope config`,
    an adversary found): its contents are read without waiting, and one with nothing to give now is refused,
    naming the argument. Stood in for here by a FIFO that a writer holds open, passed as regular; a /proc file
    with contents is read as what it holds, not called empty."""
    from vkrope import files
    from vkrope.__main__ import main

    fifo = str(tmp_path / "kmsg")
    os.mkfifo(fifo)
    _writer_for(fifo)  # (an open writer with nothing written: a read would wait)
    monkeypatch.setattr(files, "not_regular", lambda mode: None)
    assert main(["config", fifo]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: PATH: {fifo!r} has nothing to read now (a "
                                       "kernel file whose read waits, as /proc/kmsg), not a config.json or GGUF "
                                       "file\n")
    # (what such a file holds now is read as a file of those bytes: a .npy whose header was checked against a
    # size the file does not state)
    x, f = _npy_pair(tmp_path)
    held = str(tmp_path / "held")
    os.mkfifo(held)
    _writer_for(held, data=open(f, "rb").read())
    assert main(["apply", x, held, "-o", str(tmp_path / "y.npy")]) == 0, capsys.readouterr().err
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), vkrope.apply(np.load(x), np.load(f)), rtol=0, atol=0)
    monkeypatch.undo()
    if os.path.exists("/proc/self/mem"):  # (Linux: size 0, and a read at 0 fails with EIO: a bare OSError before)
        assert main(["config", "/proc/self/mem"]) == 1
        assert capsys.readouterr().err.startswith("vkrope: error: ValueError: PATH: cannot read '/proc/self/mem' (")
        with pytest.raises(ValueError, match=r"^config: cannot read '/proc/self/mem' \("):
            vkrope.from_hf("/proc/self/mem")
    if os.path.exists("/proc/self/status"):  # (Linux: size 0, contents on read)
        x, _ = _npy_pair(tmp_path)
        assert main(["apply", x, "/proc/self/status", "-o", str(tmp_path / "y.npy")]) == 1
        assert "does not start with the .npy magic string" in capsys.readouterr().err
        assert main(["config", "/proc/self/status"]) == 1
        assert "is not JSON in UTF-8" in capsys.readouterr().err


def test_cli_special_output_files(tmp_path, capsys):
    """-o naming a stream is written as one (not replaced by the atomic write; a review found /dev/null and
    /dev/stdout refused after it came in): a FIFO a process reads gets the .npy, a FIFO nobody reads is an
    error, not a hang, and the line saying what was written goes to stderr; a socket is
    refused before any work. A path that cannot be looked up (a symlink loop) is said so, for inputs and outputs
    alike."""
    import io
    import socket
    import threading
    import time

    from vkrope.__main__ import main

    x, f = _npy_pair(tmp_path)
    fifo = str(tmp_path / "fifo")  # (a stream of the test's own: a test must never write the machine's /dev/null)
    os.mkfifo(fifo)
    assert main(["apply", x, f, "-o", fifo]) == 1  # (no reader: opened without blocking)
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: -o/--output: cannot write {fifo!r} (no process "
                                       "reads the pipe)\n")
    got = []
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # (open before the writer; reads give b"" until it comes)

    def read_all() -> None:
        chunks, deadline = [], time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                chunk = os.read(reader, 1 << 16)
            except BlockingIOError:
                chunk = None
            if chunk:
                chunks.append(chunk)
            elif chunk == b"" and chunks:
                break  # (the writer closed)
            else:
                time.sleep(0.01)
        got.append(b"".join(chunks))

    # 256 KiB of result, more than a pipe holds: the writer waits for the reader (its writes block once the FIFO is
    # open; left non-blocking, a write past the pipe's capacity failed half way)
    rng = np.random.default_rng(4)
    big_x, big_f = str(tmp_path / "big_x.npy"), str(tmp_path / "big_f.npy")
    np.save(big_x, rng.standard_normal((1, 256, 256)).astype(np.float32))
    np.save(big_f, rng.standard_normal((256, 256)).astype(np.float32))
    thread = threading.Thread(target=read_all)
    thread.start()
    assert main(["apply", big_x, big_f, "-o", fifo]) == 0
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"wrote {fifo}: shape")
    thread.join(60)
    os.close(reader)
    assert np.array_equal(np.load(io.BytesIO(got[0])), vkrope.apply(np.load(big_x), np.load(big_f)))
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock"))
    assert main(["apply", x, f, "-o", str(tmp_path / "sock")]) == 1
    assert "is a socket; give the path of a regular file" in capsys.readouterr().err
    sock.close()
    assert main(["apply", x, f, "-o", ""]) == 1  # (an atomic write would aim at the working folder)
    assert capsys.readouterr().err == ("vkrope: error: ValueError: -o/--output: the path is empty; give a file name "
                                       "such as 'out.npy'\n")
    os.symlink("loop2", tmp_path / "loop1")
    os.symlink("loop1", tmp_path / "loop2")
    loop = str(tmp_path / "loop1")
    assert main(["apply", x, f, "-o", loop]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: -o/--output: cannot write {loop!r} "
                                       "(Too many levels of symbolic links)\n")
    assert main(["apply", loop, f, "-o", str(tmp_path / "y.npy")]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: X.npy: cannot read {loop!r} "
                                       "(Too many levels of symbolic links)\n")


def _npy_header(header: str, version: int = 1) -> bytes:
    """The bytes of a .npy file with this header dict text and no data."""
    text = header.encode("latin1") + b"\n"
    size = len(text).to_bytes(2 if version == 1 else 4, "little")
    return b"\x93NUMPY" + bytes([version, 0]) + size + text


@pytest.mark.parametrize("which", ["X.npy", "FREQS.npy"])
def test_cli_npy_header_checked_before_reading(tmp_path, capsys, which):
    """A 100-byte .npy whose header claims (2**20, 2**20, 16) float32 made numpy allocate 64 TiB (MemoryError);
    a header over numpy's 10000-byte limit gave its three-line message advising allow_pickle=True: both are one
    line naming the argument, before any allocation."""
    from vkrope.__main__ import main

    x, f = _npy_pair(tmp_path)
    bad = tmp_path / "bad.npy"
    for content, tail in [
        (_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 16), }"),
         "its header says shape (1048576, 1048576, 16) of float32, 70368744177664 bytes of data; the file holds 0)"),
        (_npy_header("{'descr': '<f2', 'fortran_order': False, 'shape': (3, 4), }", 2) + bytes(23),
         "its header says shape (3, 4) of float16, 24 bytes of data; the file holds 23)"),
        (_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + " " * 10050, 2),
         "its header is 10110 bytes; numpy reads at most 10000)"),
    ]:
        bad.write_bytes(content)
        args = [str(bad), f] if which == "X.npy" else [x, str(bad)]
        assert main(["apply", *args, "-o", str(tmp_path / "y.npy")]) == 1
        err = capsys.readouterr().err
        assert err == f"vkrope: error: ValueError: {which}: {str(bad)!r} is not a valid .npy file ({tail}\n", err
    assert not (tmp_path / "y.npy").exists()


def test_cli_npy_files_read_as_numpy_saves_them(tmp_path, capsys):
    """What the .npy reader decides, in this process: an empty file and one without the magic string are told
    apart; a version-2 header's length is its four bytes (65660 read as two is 124, under numpy's limit); a
    big-endian array is read as the same numbers in this machine's order; a two-byte structured dtype is not
    bfloat16 (only np.save's unnamed '<V2' is), so it is refused as the dtype it is."""
    from vkrope.__main__ import main

    x, f = _npy_pair(tmp_path)
    bad, out = tmp_path / "bad.npy", str(tmp_path / "y.npy")
    for content, why in [
        (b"", "the file is empty"),
        (b"hello", "it does not start with the .npy magic string"),
        (_npy_header("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }" + " " * 65600, 2),
         "its header is 65660 bytes; numpy reads at most 10000"),
    ]:
        bad.write_bytes(content)
        assert main(["apply", str(bad), f, "-o", out]) == 1
        assert capsys.readouterr().err == (f"vkrope: error: ValueError: X.npy: {str(bad)!r} is not a valid .npy file "
                                           f"({why})\n")
    rng = np.random.default_rng(3)
    xs = rng.standard_normal((2, 5, 8)).astype(np.float32)
    fs = rng.standard_normal((5, 8)).astype(np.float32)
    np.save(tmp_path / "xb.npy", xs.astype(">f4"))
    np.save(tmp_path / "fb.npy", fs.astype(">f4"))
    assert main(["apply", str(tmp_path / "xb.npy"), str(tmp_path / "fb.npy"), "-o", out]) == 0
    capsys.readouterr()
    y = np.load(out)
    check_result(y, xs, fs)
    assert y.dtype == np.float32 and y.tobytes() == vkrope.apply(xs, fs).tobytes()
    np.save(bad, np.zeros((1, 3, 4), [("a", "u1"), ("b", "u1")]))
    assert main(["apply", str(bad), f, "-o", out]) == 1
    assert capsys.readouterr().err.startswith("vkrope: error: TypeError: X.npy must have dtype float32, float16 or "
                                              "bfloat16; got [('a', 'u1'), ('b', 'u1')]")


def test_cli_output_is_written_atomically(tmp_path, capsys, monkeypatch):
    """-o was written in place: a write that failed half way (a full disk, a file-size limit) left a truncated
    file, and with -o X the input was lost. The result goes to a new file in the same folder, renamed over -o once
    written; on failure -o is as it was and no temporary file is left."""
    import errno

    import vkrope.__main__ as cli_main

    x, f = _npy_pair(tmp_path)
    before = (tmp_path / "x.npy").read_bytes()
    real_save = np.save

    def save_then_fail(fh, *args, **kw):
        fh.write(b"\x93NUMPY half")
        raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))

    monkeypatch.setattr(cli_main.np, "save", save_then_fail)
    assert cli_main.main(["apply", x, f, "-o", x]) == 1
    assert capsys.readouterr().err == f"vkrope: error: ValueError: -o/--output: cannot write {x!r} (File too large)\n"
    assert (tmp_path / "x.npy").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.npy", "x.npy"]
    monkeypatch.setattr(cli_main.np, "save", real_save)
    os.chmod(x, 0o640)  # an existing file keeps its mode; a symlink keeps pointing at the file it names
    os.symlink("x.npy", tmp_path / "link.npy")
    assert cli_main.main(["apply", str(tmp_path / "link.npy"), f, "-o", str(tmp_path / "link.npy")]) == 0
    assert os.path.islink(tmp_path / "link.npy") and (tmp_path / "x.npy").read_bytes() != before
    assert stat_mode(x) == 0o640 and sorted(p.name for p in tmp_path.iterdir()) == ["f.npy", "link.npy", "x.npy"]
    umask = os.umask(0o022)
    try:
        assert cli_main.main(["apply", x, f, "-o", str(tmp_path / "new.npy")]) == 0
    finally:
        os.umask(umask)
    assert stat_mode(tmp_path / "new.npy") == 0o644  # (as open() makes it)
    real_open = os.open
    for code in (errno.EACCES, errno.EROFS):  # (root may write any file; a read-only mount says so, not EACCES)
        def refused(path, flags, *a, code=code):
            if path == os.path.realpath(x) and flags & (os.O_ACCMODE | os.O_CREAT) == os.O_WRONLY:
                raise OSError(code, os.strerror(code))
            return real_open(path, flags, *a)

        monkeypatch.setattr(cli_main.os, "open", refused)
        assert cli_main.main(["apply", x, f, "-o", x]) == 1
        assert capsys.readouterr().err.endswith(f"-o/--output: cannot write {x!r} ({os.strerror(code)})\n")
    monkeypatch.setattr(cli_main.os, "open", real_open)


def stat_mode(path):
    import stat

    return stat.S_IMODE(os.stat(path).st_mode)


HF_CONFIGS = ROOT / "tests" / "data" / "hf_configs"


def test_cli_config_reads_its_file_once(tmp_path, capsys, monkeypatch):
    """`vkrope config PATH` opened PATH four times for Gemma 3 (the GGUF sniff, the layer types, then from_hf per
    layer type): a pipe lost its content after the first. It is read once; the dict goes on to the library."""
    import builtins

    from vkrope.__main__ import main

    path = str(HF_CONFIGS / "gemma-3-4b.json")
    opened = []
    real_open, real_os_open = builtins.open, os.open
    monkeypatch.setattr(builtins, "open", lambda f, *a, **kw: (opened.append(f), real_open(f, *a, **kw))[1])
    monkeypatch.setattr(os, "open", lambda f, *a, **kw: (opened.append(f), real_os_open(f, *a, **kw))[1])
    assert main(["config", path]) == 0
    assert "layer type full_attention" in capsys.readouterr().out
    assert [f for f in opened if os.fspath(f) == path] == [path]


@pytest.mark.parametrize("case", ["fifo", "too_big", "nested", "big_int", "latin1", "utf16", "array"])
def test_cli_config_bad_files_are_one_line(tmp_path, capsys, case):
    """config PATH of a FIFO blocked, a sparse 1 GB file was read whole (and /dev/zero forever: refused as the FIFO
    is, not tried here); a JSON nested too deeply, an integer of 5001 digits or an array came out of the library
    without the file's name. A UTF-16 file is not read (transformers reads UTF-8 only: json.loads of the bytes
    would guess the encoding and take it)."""
    from vkrope.__main__ import main

    path = str(tmp_path / "config.json")
    if case == "fifo":
        os.mkfifo(path)
        _unblock_later(path)
    elif case == "too_big":
        with open(path, "wb") as fh:
            fh.truncate((64 << 20) + 1)  # (sparse: no disk used)
    else:
        text = {"nested": "[" * 100000 + "]" * 100000, "big_int": '{"rope_theta": ' + "1" * 5001 + "}",
                "latin1": '{"model_type": "ll\xe4ma"}', "array": "[1, 2]",
                "utf16": '{"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8}'}[case]
        # (UTF-16 with its byte order mark, as some editors save it: transformers reads config.json as UTF-8)
        (tmp_path / "config.json").write_bytes(("\ufeff" + text).encode("utf-16-le") if case == "utf16"
                                               else text.encode("latin1"))
    want = {"fifo": f"{path!r} is a pipe (FIFO), not a config.json or GGUF file (vkrope reads regular files only",
            "too_big": f"{path!r} is over 64 MiB, larger than any JSON file vkrope reads",
            "nested": f"{path!r} nests too deeply to read", "big_int": f"{path!r} is not JSON in UTF-8 (Exceeds the",
            "latin1": f"{path!r} is not JSON in UTF-8 ('utf-8' codec can't decode",
            "utf16": f"{path!r} is not JSON in UTF-8 ('utf-8' codec can't decode byte 0xff in position 0",
            "array": f"{path!r} holds an array, not a JSON object (as a config.json does)"}[case]
    assert main(["config", str(tmp_path) if case == "nested" else path]) == 1  # (a folder: its config.json)
    err = capsys.readouterr().err
    assert err.startswith(f"vkrope: error: ValueError: PATH: {want}") and err.count("\n") == 1, err


def _bench_result(**row):
    """A `vkrope bench` result of one row (a device without timestamps: no kernel rate), `row` changed."""
    base = {"shape": [1, 16, 8], "dtype": "float32", "storage": "buffer", "freqs": "table", "x_bytes": 512,
            "bytes_moved": 1536, "apply_s": 1e-4, "kernel_gbps": None, "texel_copy_gbps": 1.5, "copy_gbps": 2.5,
            "memcpy_gbps": 9.0}
    return {"date": "2025-01-01T00:00:00+00:00", "device": {"name": "llvmpipe"}, "rows": [dict(base, **row)]}


@pytest.mark.parametrize("text,why", [
    (json.dumps(_bench_result(shape=5)), "row 0: shape must be a list of 3 positive integers [B, N, C]; got 5"),
    (json.dumps(_bench_result(shape=[1, True, 8])), "row 0: shape must be a list of 3 positive integers [B, N, C]; got "
                                                   "[1, True, 8]"),
    (json.dumps(_bench_result(dtype=["a"])), "row 0: dtype must be a string; got ['a']"),
    (json.dumps(_bench_result(kernel_gbps="fast")), "row 0: kernel_gbps must be a finite number >= 0, or null; got 'fast'"),
    (json.dumps(_bench_result(copy_gbps=-1)), "row 0: copy_gbps must be a finite number >= 0, or null; got -1"),
    (json.dumps(_bench_result(apply_s=0)), "row 0: apply_s must be a finite number > 0; got 0"),
    (json.dumps(_bench_result(x_bytes=None)), "row 0: x_bytes must be a finite number > 0; got None"),
    (json.dumps(_bench_result()).replace('"x_bytes": 512', '"x_bytes": 1e400'), "row 0: x_bytes must be a finite number "
                                                                              "> 0; got inf"),
    (json.dumps(_bench_result()).replace('"x_bytes": 512', '"x_bytes": 1' + "0" * 400), "row 0: x_bytes must be a "
                                                                                      "finite number > 0; got 1000"),
    (json.dumps(dict(_bench_result(), device={"name": {"x": 1}})), "it needs a date and a device name (strings)"),
    (json.dumps({"floor_us": 12.5, "rows_of": []}), "it has no rows: only the kernel benchmark's bench.json has a "
                                                    "chart (the JSON of bench --family, --nd, --overhead or --decode "
                                                    "has none)"),
], ids=["shape_int", "shape_bool", "dtype_list", "rate_text", "rate_negative", "time_zero", "size_null", "size_inf",
        "size_400_digits", "device_name_dict", "a_mode_run"])
def test_cli_bench_chart_from_checks_each_value(tmp_path, capsys, text, why):
    """--chart-from of a JSON with values of the wrong type (5 for a shape, a list for a dtype, "fast" or an
    infinite number for a rate) was drawn anyway or failed with a bare TypeError: one line naming the file, the
    row and the key, and nothing drawn."""
    from vkrope.__main__ import main

    path = tmp_path / "bench.json"
    path.write_text(text)
    assert main(["bench", "--chart-from", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"vkrope: error: ValueError: --chart-from: {str(path)!r} is not a `vkrope bench` JSON of "
                          f"this version: {why}") and err.count("\n") == 1, err
    assert not (tmp_path / "bench.png").exists()


def test_cli_bench_chart_from_files_it_cannot_read(tmp_path, capsys):
    """--chart-from /dev/zero read forever, a FIFO blocked, a JSON nested 100000 deep was a RecursionError: each
    is one line naming the file; a valid JSON (no kernel rate: a device without timestamps) is drawn."""
    from vkrope.__main__ import main

    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    _unblock_later(fifo)
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    with open(tmp_path / "big.json", "wb") as fh:
        fh.truncate((64 << 20) + 1)
    not_file = "(vkrope reads regular files only: save the data to a file first)"
    for path, why in [("/dev/zero", f"is a character device, not a `vkrope bench` JSON file {not_file}"),
                      (fifo, f"is a pipe (FIFO), not a `vkrope bench` JSON file {not_file}"),
                      (str(tmp_path / "deep.json"), "nests too deeply to read"),
                      (str(tmp_path / "big.json"), "is over 64 MiB, larger than any JSON file vkrope reads")]:
        assert main(["bench", "--chart-from", path, "--plot", str(tmp_path / "c.png")]) == 1
        assert capsys.readouterr().err == f"vkrope: error: ValueError: --chart-from: {path!r} {why}\n"
    (tmp_path / "ok.json").write_text(json.dumps(_bench_result()))
    assert main(["bench", "--chart-from", str(tmp_path / "ok.json")]) == 0
    assert (tmp_path / "ok.png").stat().st_size > 1000


@pytest.mark.parametrize("shapes", ["", " "])
def test_cli_bench_refuses_empty_shapes(tmp_path, capsys, monkeypatch, shapes):
    """`bench --shapes ''` ran the full default benchmark (tensors up to 1 GiB): an empty --shapes is refused
    before any work."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    def no_run(**kw):
        raise AssertionError(f"the benchmark ran with {kw}")

    monkeypatch.setattr(kernel, "run", no_run)
    assert main(["bench", "--shapes", shapes, "--out", str(tmp_path / "out")]) == 1
    assert capsys.readouterr().err == ("vkrope: error: ValueError: --shapes is empty; give comma-separated BxNxC "
                                       "shapes such as 1x256x256,8x4096x256, or leave --shapes out for the default\n")
    assert not (tmp_path / "out").exists()


def test_cli_bench_shapes_and_repeats_reach_the_benchmark_as_given(tmp_path, capsys, monkeypatch):
    """--shapes is BxNxC with C even: an odd C or a shape of two numbers is refused naming the flag, before any
    work (the kernel would refuse odd C only once the benchmark ran; two numbers were a bare unpacking error);
    an X reads as x. --repeats takes 1, the least. Both reach the benchmark as given."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    asked = []

    def no_run(**kw):
        asked.append(kw)
        raise ValueError("stopped before any work")

    monkeypatch.setattr(kernel, "run", no_run)
    out = str(tmp_path / "out")
    for shapes in ("1x16x7", "1x16", "1x16x8,2x8", "0x2x2", "1x2x0"):
        assert main(["bench", "--shapes", shapes, "--out", out]) == 1
        assert capsys.readouterr().err == (f"vkrope: error: ValueError: --shapes: each shape is BxNxC of sizes >= 1 "
                                           f"with C even; got {shapes!r}\n")
    assert asked == [] and not os.path.exists(out)
    assert main(["bench", "--shapes", "1X16X8,2x4x4", "--repeats", "1", "--out", out]) == 1
    assert capsys.readouterr().err == "vkrope: error: ValueError: stopped before any work\n"
    assert asked[0]["shapes"] == [(1, 16, 8), (2, 4, 4)] and asked[0]["repeats"] == 1


@pytest.mark.parametrize("command,example", [("config", "freqs.png"), ("bench", "bench.png")])
def test_cli_plot_directory_suggests_a_chart_file(tmp_path, capsys, command, example):
    """`--plot DIR` suggested DIR/out.npy, a name --plot then refuses (not .png): the suggestion is a chart file."""
    from vkrope.__main__ import main

    args = ["config", str(HF_CONFIGS / "llama-3.1-8b.json")] if command == "config" else \
        ["bench", "--shapes", "1x16x8", "--out", str(tmp_path / "out")]
    assert main([*args, "--plot", str(tmp_path)]) == 1
    want = os.path.join(str(tmp_path), example)
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: --plot: {str(tmp_path)!r} is a directory; give a "
                                       f"file name such as {want!r}\n")
    assert not (tmp_path / "out").exists()


def test_cli_names_the_config_it_converts_as_path(capsys):
    """A refusal of `--like llama.cpp` names the file as PATH, as every other config error does (it said
    `config (Arch, ...)`, the Python argument's name)."""
    from vkrope.__main__ import main

    path = os.path.join(ROOT, "tests", "data", "remote_configs", "baichuan2-7b.json")
    assert main(["config", path, "--like", "llama.cpp"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vkrope: error: ValueError: PATH (BaichuanForCausalLM, read as llama.cpp's converter"), err


def test_cli_config_refuses_like_for_gguf(tmp_path, capsys):
    """`config FILE.gguf --like X` ignored --like without a word: it is refused (a GGUF file is read as its
    general.architecture says), before the file is parsed."""
    from vkrope.__main__ import main

    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(60))
    assert main(["config", str(path), "--like", "llama"]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: --like: applies to config.json files; "
                                       f"{str(path)!r} is a GGUF file, read as its general.architecture says "
                                       "(leave --like out)\n")


def test_cli_apply_help_says_how_freqs_is_read(capsys):
    """The help said FREQS is [Nf, C]; the library reads any shape with Nf*C values that ends in a row's axes
    (as ExecuTorch's op; a planar [2, Nf, C/2] is refused)."""
    from vkrope.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(["apply", "--help"])
    assert exit_.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "(cos, sin) pairs: Nf*C values, as [Nf, C] or [1, Nf, C/2, 2] (any shape ending in [C] or [C/2, 2]), " \
           "or complex [Nf, C/2]" in help_text, help_text


def test_cli_charts_and_bench_files_refuse_streams_before_any_work(tmp_path, capsys, monkeypatch):
    """A chart or a bench JSON is written as a regular file: a FIFO there would block (matplotlib opens it
    as a file: `config --plot f.svg` waited for a reader forever) or fail on the image writer's seeks, so it
    is refused naming the flag; a bench output that is a directory is found before the run, not after."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    ran = []
    monkeypatch.setattr(kernel, "run", lambda **kw: ran.append(kw))
    for name in ("f.svg", "f.png"):
        os.mkfifo(tmp_path / name)  # (in a process of its own: a write into the FIFO blocks, so it times out)
        res = cli("config", str(HF_CONFIGS / "llama-3.1-8b.json"), "--plot", str(tmp_path / name), timeout=60)
        assert res.returncode == 1 and res.stderr == (f"vkrope: error: ValueError: --plot: {str(tmp_path / name)!r} "
                                                      "is a pipe (FIFO); give the path of a regular file (new or to "
                                                      "be replaced)\n"), res.stderr
    assert main(["bench", "--shapes", "1x16x8", "--out", str(tmp_path), "--plot", str(tmp_path / "f.png")]) == 1
    assert "--plot:" in capsys.readouterr().err
    (tmp_path / "bo" / "bench.json").mkdir(parents=True)
    assert main(["bench", "--shapes", "1x16x8", "--out", str(tmp_path / "bo")]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: --out: {str(tmp_path / 'bo' / 'bench.json')!r}, "
                                       "the file this run writes, is a directory; remove it or choose another --out\n")
    from vkrope.bench import nd  # noqa: PLC0415

    monkeypatch.setattr(nd, "run", lambda **kw: ran.append(kw) or {})
    (tmp_path / "bench_nd.json").mkdir()
    assert main(["bench", "--nd", "--out", str(tmp_path)]) == 1
    assert "--out:" in capsys.readouterr().err and ran == []


def test_cli_output_near_the_file_name_limit(tmp_path):
    """-o of a 255-byte name (the file system's limit): written through a temporary of a short name of its
    own (one named after the output overflowed the limit)."""
    x, f = _npy_pair(tmp_path)
    out = tmp_path / ("b" * 251 + ".npy")
    res = cli("apply", x, f, "-o", str(out))
    assert res.returncode == 0, res.stderr
    assert np.load(out).shape == (1, 3, 4) and not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_bench_modes_refuse_the_kernel_benchmarks_options(tmp_path, capsys):
    """`bench --decode --family --shapes ... --plot ...` ran the decode benchmark alone and ignored the rest
    (the --shapes check and the chart skipped) with no word: one mode a run, and a mode refuses the options
    it would ignore, before any run."""
    from vkrope.__main__ import main
    with pytest.raises(SystemExit):
        main(["bench", "--decode", "--family"])
    assert "not allowed with argument" in capsys.readouterr().err
    for extra in (["--shapes", "1x2x4"], ["--quick"], ["--plot", str(tmp_path / "c.png")], ["--dtype", "float16"],
                  ["--storage", "buffer"], ["--chart-from", str(tmp_path / "b.json")]):
        assert main(["bench", "--nd", *extra, "--out", str(tmp_path / "o")]) == 1
        assert f"{extra[0]}: the kernel benchmark's options; --nd takes only --repeats and --out" in \
            capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_chart_from_refuses_the_options_of_a_run(tmp_path, capsys):
    """`bench --chart-from B.json --shapes ... --out DIR` redrew B.png and ignored the rest with no word (DIR never
    made): --chart-from runs nothing, so it refuses a run's options, before any work."""
    from vkrope.__main__ import main
    for extra in (["--shapes", "1x2x4"], ["--quick"], ["--dtype", "float16"], ["--storage", "buffer"],
                  ["--repeats", "3"], ["--out", str(tmp_path / "o")]):
        assert main(["bench", "--chart-from", str(tmp_path / "b.json"), *extra]) == 1
        assert capsys.readouterr().err == (f"vkrope: error: ValueError: {extra[0]}: options of a run; --chart-from "
                                           "draws an earlier run's chart and takes only --plot\n")
    assert list(tmp_path.iterdir()) == []


def test_a_reader_that_stops_early_ends_the_command_quietly():
    """`vkrope demo | head -1` ended in "vkrope: error: BrokenPipeError" and status 1: a closed stdout ends the
    command as SIGPIPE ends others (status 141, nothing on stderr); a broken pipe elsewhere stays an error."""
    proc = subprocess.Popen([sys.executable, "-m", "vkrope", "demo"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=ROOT)  # (it prints line by line, for seconds)
    assert proc.stdout is not None and proc.stdout.read(1)  # (the first byte, then the reader is gone)
    proc.stdout.close()
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 141 and b"error" not in err, (proc.returncode, err)


def test_cli_names_every_array_by_its_file(tmp_path, capsys):
    """A message naming several arrays names each by its file ("SIN.npy ... (like COS.npy)"), not only the
    first word; a name inside code (x.shape) is left as it is."""
    from vkrope.__main__ import cli_spelling, main
    np.save(tmp_path / "x.npy", np.ones((1, 1, 2, 4), np.float32))
    np.save(tmp_path / "c.npy", np.ones((4, 2), np.float32))
    np.save(tmp_path / "p.npy", np.zeros((1, 2), np.int64))
    assert main(["rotary-embedding", str(tmp_path / "x.npy"), str(tmp_path / "c.npy"), str(tmp_path / "x.npy"),
                 "--position-ids", str(tmp_path / "p.npy"), "-o", str(tmp_path / "o.npy")]) == 1
    err = capsys.readouterr().err
    assert "SIN.npy must have shape [max_pos, rot/2] (like COS.npy)" in err and "_cache" not in err, err
    assert cli_spelling("freqs has 3 rows for x of shape (1, 2, 4); see x.shape and x[0]", "apply") == \
        "FREQS.npy has 3 rows for X.npy of shape (1, 2, 4); see x.shape and x[0]"
    # (a path or a quoted value holding the word is the user's: kept as given)
    assert cli_spelling("""x: no such file '/data/x/freqs.npy'; got "x" at x/y""", "apply") == \
        """X.npy: no such file '/data/x/freqs.npy'; got "x" at x/y"""
    # (nor the sign of a product: the texture3d message's "1 x 16777218 rows")
    assert cli_spelling("x: 1 x 16777218 rows of 1 texels needs 2 image rows", "apply") == \
        "X.npy: 1 x 16777218 rows of 1 texels needs 2 image rows"


def test_a_broken_pipe_elsewhere_stays_an_error(capsys):
    """Only a closed stdout ends a command quietly: a BrokenPipeError from anything else (a FIFO given as -o
    whose reader left) is the usual one-line error and status 1."""
    import argparse

    from vkrope.__main__ import _command

    def broken(args: argparse.Namespace) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert _command(argparse.Namespace(func=broken, debug=False, command="apply")) == 1
    assert capsys.readouterr().err == "vkrope: error: BrokenPipeError: [Errno 32] Broken pipe\n"


def test_an_output_that_cannot_be_written_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """A folder that takes no new file (a read-only file system, /proc), or a symlink into a missing folder: the
    output's flag named, before the inputs are read or any device work (a benchmark ran to its end, then failed);
    the probe leaves nothing behind."""
    import errno

    import vkrope.__main__ as cli_main

    x, f = _npy_pair(tmp_path)
    loaded = []
    monkeypatch.setattr(cli_main, "load_npy", lambda *a: loaded.append(a))
    os.symlink(str(tmp_path / "missing" / "y.npy"), tmp_path / "dangling.npy")
    assert cli_main.main(["apply", x, f, "-o", str(tmp_path / "dangling.npy")]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: -o/--output: {str(tmp_path / 'dangling.npy')!r} "
                                       f"links into the directory {str(tmp_path / 'missing')!r}, which does not "
                                       "exist\n")
    real_open = os.open

    def read_only(path, flags, *a):
        if flags & os.O_CREAT:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *a)

    monkeypatch.setattr(cli_main.os, "open", read_only)
    out = str(tmp_path / "y.npy")
    assert cli_main.main(["apply", x, f, "-o", out]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: -o/--output: cannot write {out!r} (Read-only file "
                                       "system)\n")
    ran = []
    monkeypatch.setattr("vkrope.bench.overhead.run", lambda **kw: ran.append(kw) or {})
    assert cli_main.main(["bench", "--overhead", "--out", str(tmp_path / "b")]) == 1
    json_path = str(tmp_path / "b" / "bench_overhead.json")
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: --out: cannot write {json_path!r} (Read-only file "
                                       "system)\n")
    assert ran == [] and loaded == []
    monkeypatch.setattr(cli_main.os, "open", real_open)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dangling.npy", "f.npy", "x.npy"]  # (b/: made, then
    # left out again, empty, as the refused run wrote nothing there)
    (tmp_path / "empty").mkdir()
    cli_main.check_output_path(str(tmp_path / "empty" / "y.npy"), "-o/--output")  # (a folder that takes it)
    assert list((tmp_path / "empty").iterdir()) == []


def test_a_chart_asked_for_without_matplotlib_is_refused_before_the_run(tmp_path):
    """bench --plot with no matplotlib: the ImportError before anything is measured (it came after a whole run)."""
    code = ("import sys; sys.modules['matplotlib'] = None; from vkrope.__main__ import main; "
            f"sys.exit(main(['bench', '--shapes', '1x16x8', '--repeats', '1', '--dtype', 'float32', "
            f"'--storage', 'buffer', '--out', {str(tmp_path)!r}, '--plot', {str(tmp_path / 'c.png')!r}]))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 1 and res.stdout == "", res.stdout + res.stderr
    assert res.stderr.startswith("vkrope: error: ImportError: the chart needs matplotlib") and not list(tmp_path.iterdir())


def test_charts_ignore_the_environments_matplotlib_backend(tmp_path):
    """A chart is a file and needs no backend: MPLBACKEND naming one matplotlib does not know failed its import,
    after a whole benchmark run; and a caller's backend is not switched by a chart (figures without pyplot)."""
    bogus = {"MPLBACKEND": "no-such-backend"}
    res = cli("bench", "--shapes", "1x16x8", "--repeats", "1", "--dtype", "float32", "--storage", "buffer",
              "--out", str(tmp_path / "b"), env=bogus, timeout=300)
    assert res.returncode == 0 and (tmp_path / "b" / "bench.png").stat().st_size > 0, res.stdout + res.stderr
    res = cli("config", str(HF_CONFIGS / "llama-3.1-8b.json"), "--plot", str(tmp_path / "c.svg"), env=bogus, timeout=60)
    assert res.returncode == 0 and (tmp_path / "c.svg").read_bytes().startswith(b"<?xml"), res.stdout + res.stderr
    code = (f"import matplotlib; matplotlib.use('svg'); from vkrope.__main__ import main; "
            f"main(['config', {str(HF_CONFIGS / 'llama-3.1-8b.json')!r}, '--plot', {str(tmp_path / 'd.png')!r}]); "
            "print(matplotlib.get_backend())")
    res = run([sys.executable, "-c", code], env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert res.returncode == 0 and res.stdout.splitlines()[-1] == "svg", res.stdout + res.stderr
    assert (tmp_path / "d.png").read_bytes().startswith(b"\x89PNG")
    # a valid MPLBACKEND is the caller's: vkrope importing matplotlib first leaves it to their plots
    code = "import vkrope.charts; vkrope.charts.import_matplotlib(); import matplotlib; print(matplotlib.get_backend())"
    res = run([sys.executable, "-c", code], env={"PYTHONPATH": str(ROOT), "MPLBACKEND": "svg"}, timeout=60)
    assert res.returncode == 0 and res.stdout.split() == ["svg"], res.stdout + res.stderr


def test_ctrl_c_ends_a_command_with_one_line(tmp_path):
    """SIGINT during a run: one line on stderr, no traceback (--debug keeps it), and the process ended by SIGINT
    as Python ends it (a shell's status 130: a loop running the command stops) after the line naming its rows so
    far (bench.partial.json, whole)."""
    import signal
    import time

    from vkrope.bench.kernel import VALIDATION_WARNING

    for debug in ([], ["--debug"]):
        out_dir = tmp_path / ("debug" if debug else "plain")
        proc = subprocess.Popen([sys.executable, "-m", "vkrope", *debug, "bench", "--out", str(out_dir)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        partial = out_dir / "bench.partial.json"
        while not partial.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)  # (the run's first row written: well inside it)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        err = err.removeprefix(VALIDATION_WARNING + "\n")  # (where the suite runs with VKROPE_VALIDATION on)
        if debug:
            assert "Traceback" in err and "KeyboardInterrupt" in err, err
        else:
            assert proc.returncode == -signal.SIGINT and err == (
                f"the rows measured so far are in {partial} (\"complete\": false); no {out_dir / 'bench.json'} was "
                "written\nvkrope: interrupted\n"), (proc.returncode, err)
        assert json.loads(partial.read_text())["complete"] is False
        assert [p.name for p in out_dir.iterdir()] == ["bench.partial.json"]  # (no temporary file left)


def test_a_json_file_over_the_limit_is_refused_by_its_size(tmp_path, monkeypatch):
    """cli.md: "over 64 MiB is refused unread": by its size, before its bytes are read and parsed."""
    import vkrope.files as files

    with open(tmp_path / "big.json", "wb") as fh:
        fh.truncate((64 << 20) + 1)
    monkeypatch.setattr(files, "parse_json", lambda *a: pytest.fail("the file was read"))
    with pytest.raises(ValueError, match=r"^PATH: .* is over 64 MiB, larger than any JSON file vkrope reads$"):
        files.read_json(str(tmp_path / "big.json"), "PATH", "a config.json")


def test_cli_bench_measures_a_storage_or_dtype_given_twice_once(tmp_path, monkeypatch):
    """--storage buffer buffer measured (and printed) every row twice: each is measured once, in the order given."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    asked = []
    monkeypatch.setattr(kernel, "run", lambda **kw: asked.append(kw) or pytest.skip("not run"))
    with pytest.raises(pytest.skip.Exception):
        main(["bench", "--storage", "texture3d", "buffer", "texture3d", "--dtype", "float16", "float16",
              "--shapes", "1x4x4", "--out", str(tmp_path)])
    assert asked[0]["storages"] == ("texture3d", "buffer") and asked[0]["dtypes"] == ("float16",)


def test_cli_config_names_its_path_argument_for_a_bad_gguf_file(tmp_path, capsys):
    """from_gguf's `path:` is the command's PATH, as its other messages say."""
    from vkrope.__main__ import main

    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    assert main(["config", str(tmp_path / "m.gguf")]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: PATH: {str(tmp_path / 'm.gguf')!r} is not a GGUF "
                                       "file (ValueError: the start (magic and version) needs 8 bytes at offset 0; "
                                       "the file has 4 left)\n")


def test_demo_verdict_follows_its_rows():
    """demo said "numpy wins here" on any CPU driver, beside rows where vkrope was faster: the verdict counts them."""
    from vkrope.cli.demo import demo_verdict

    assert demo_verdict([(1.0, 2.0), (3.0, 2.0), (1.0, 1.5)], cpu=True) == [
        "vkrope was faster than numpy on 2 of the 3 rows numpy ran"]
    slow = demo_verdict([(3.0, 2.0), (3.0, 2.0), (1.0, 1.5)], cpu=True)
    assert slow[0] == "vkrope was faster than numpy on 1 of the 3 rows numpy ran" and slow[1].startswith(
        "numpy wins most rows here: this Vulkan device is the CPU itself")
    assert demo_verdict([(3.0, 2.0)], cpu=False) == ["vkrope was faster than numpy on 0 of the 1 rows numpy ran"]

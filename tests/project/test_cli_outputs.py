"""The command line's outputs keep the user's data: stdout as a target, a benchmark cut short, a chart path that
is its input, empty path flags, charts of paths holding `$`, and the messages of inputs it cannot read."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import vkrope

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "hf_configs"


def _vkrope(*args: str, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, VKROPE_VALIDATION="1", PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "vkrope", *args], env=env, timeout=300, **kw)


def _inputs(tmp_path: Path, n: int = 16) -> tuple[str, str]:
    rng = np.random.default_rng(0)
    x, f = tmp_path / "x.npy", tmp_path / "f.npy"
    np.save(x, rng.standard_normal((1, n, 8)).astype(np.float32))
    np.save(f, rng.standard_normal((n, 8)).astype(np.float32))
    return str(x), str(f)


def test_output_to_stdout_appends_where_stdout_appends(tmp_path):
    """`-o /dev/stdout >> log`: /dev/stdout resolves to the log itself, a regular file, which the atomic rename
    replaced (the log's earlier lines gone, the "wrote" line written to the unlinked file). Written through
    stdout now, after what the log held, the "wrote" line on stderr."""
    x, f = _inputs(tmp_path)
    log = tmp_path / "all.log"
    log.write_bytes(b"keep\n")
    with open(log, "ab") as out:
        res = _vkrope("apply", x, f, "-o", "/dev/stdout", stdout=out, stderr=subprocess.PIPE, text=False)
    assert res.returncode == 0 and b"wrote /dev/stdout" in res.stderr, res.stderr
    data = log.read_bytes()
    assert data.startswith(b"keep\n\x93NUMPY")
    with open(log, "rb") as fh:
        fh.seek(5)
        y = np.load(fh)
    assert y.shape == (1, 16, 8) and np.isfinite(y).all()


def test_a_reader_of_stdout_gone_ends_the_command_quietly(tmp_path):
    """`-o /dev/stdout | head -c 10` said "cannot write '/dev/stdout' (Broken pipe)" and exited 1: a reader
    gone (here before the write: a pipe whose read end is closed) is SIGPIPE's status 141, quietly, as for every
    other command."""
    x, f = _inputs(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = _vkrope("apply", x, f, "-o", "/dev/stdout", stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    assert res.returncode == 141 and b"error" not in res.stderr, (res.returncode, res.stderr)


def test_a_benchmark_cut_short_leaves_the_last_complete_json(tmp_path, capsys, monkeypatch):
    """A run saves its rows after each shape: into bench.json, which a run that then failed (or Ctrl-C) left
    partial over a complete one. Now into bench.partial.json, named when the run ends early, and bench.json
    only when it completes; a shape that does not fit in memory names --shapes."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    out = tmp_path / "out"
    out.mkdir()
    (out / "bench.json").write_text('{"complete": true}')

    def cut(**kw):
        Path(kw["json_path"]).write_text('{"complete": false}')
        raise MemoryError("Unable to allocate 9.31 TiB")

    monkeypatch.setattr(kernel, "run", cut)
    assert main(["bench", "--shapes", "1x64x64", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"the rows measured so far are in {out / 'bench.partial.json'}" in err
    assert "vkrope: error: ValueError: --shapes: a shape's arrays do not fit in this machine's memory" in err
    assert (out / "bench.json").read_text() == '{"complete": true}'
    assert json.loads((out / "bench.partial.json").read_text()) == {"complete": False}

    def done(**kw):
        Path(kw["json_path"]).write_text("{}")
        return {"complete": True, "rows": []}

    monkeypatch.setattr(kernel, "run", done)
    monkeypatch.setattr(kernel, "plot", lambda result, path, what: None)
    assert main(["bench", "--shapes", "1x64x64", "--out", str(out)]) == 0
    assert json.loads((out / "bench.json").read_text()) == {"complete": True, "rows": []}
    assert not (out / "bench.partial.json").exists()

    def nothing(**kw):  # (fails before any row: the folder this run made is left out, not left empty)
        raise MemoryError("Unable to allocate 93.1 TiB")

    monkeypatch.setattr(kernel, "run", nothing)
    fresh = tmp_path / "fresh" / "out"
    assert main(["bench", "--shapes", "1x64x64", "--out", str(fresh)]) == 1
    assert not (tmp_path / "fresh").exists()  # (its parent, made too and empty, goes with it)
    monkeypatch.setattr(kernel, "run", cut)
    assert main(["bench", "--shapes", "1x64x64", "--out", str(fresh)]) == 1
    assert (fresh / "bench.partial.json").exists()  # (rows written: the folder stays)
    capsys.readouterr()
    monkeypatch.setattr(kernel, "run", done)  # (a shape the OS refuses outright fails before the run's header)
    assert main(["bench", "--shapes", "1x64x64,1x100000000000x4096", "--out", str(tmp_path / "huge")]) == 1
    said = capsys.readouterr()
    assert said.out == "" and "do not fit in this machine's memory (Unable to allocate" in said.err


def test_chart_from_never_draws_over_its_input(tmp_path, capsys):
    """`--chart-from r.png`: the chart's default path (the input's, .png) was the input, which the chart
    replaced. Refused, the JSON kept."""
    from vkrope.__main__ import main

    src = tmp_path / "r.png"
    src.write_bytes((ROOT / "docs" / "data" / "h200" / "bench-quick.json").read_bytes())
    before = src.read_bytes()
    assert main(["bench", "--chart-from", str(src)]) == 1
    err = capsys.readouterr().err
    assert "is the JSON read; give --plot another file" in err, err
    assert src.read_bytes() == before
    assert main(["bench", "--chart-from", str(src), "--plot", str(src)]) == 1
    assert "--plot: the chart's path" in capsys.readouterr().err and src.read_bytes() == before


@pytest.mark.parametrize("args, flag", [(["bench", "--chart-from", ""], "--chart-from"),
                                        (["bench", "--out", ""], "--out"), (["bench", "--plot", ""], "--plot"),
                                        (["config", str(CONFIGS / "llama-3.1-8b.json"), "--plot", ""], "--plot"),
                                        (["config", ""], "PATH"),
                                        (["apply", "", "f.npy", "-o", "o.npy"], "X.npy")])
def test_an_empty_path_is_refused_not_read_as_left_out(tmp_path, capsys, monkeypatch, args, flag):
    """`bench --chart-from ""` (an unset shell variable) ran the whole default benchmark, `config --plot ""`
    drew nothing and said nothing, `--out ""` wrote into bench-out."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(kernel, "run", lambda **kw: pytest.fail("the benchmark ran"))
    assert main(args) == 1
    assert capsys.readouterr().err.startswith(f"vkrope: error: ValueError: {flag}: the path is empty")
    assert os.listdir(tmp_path) == []


def test_config_json_with_a_chart_keeps_stdout_json(tmp_path):
    """`config --json --plot p.png | python -m json.tool` failed: "wrote p.png" came first on stdout."""
    pytest.importorskip("matplotlib")
    res = _vkrope("config", str(CONFIGS / "llama-3.1-8b.json"), "--json", "--plot", str(tmp_path / "p.png"),
                  capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["rope_type"] == "llama3" and "wrote" in res.stderr
    assert (tmp_path / "p.png").stat().st_size > 0


def test_a_chart_of_a_path_holding_dollars_draws_it_as_written(tmp_path):
    """A `$` in a path (or a bench JSON's device name) was TeX to matplotlib: `a_$2^{$.json` ended in a
    parser's traceback and a balanced pair drew math."""
    pytest.importorskip("matplotlib")
    cfg = tmp_path / "a_$2^{$.json"
    cfg.write_text((CONFIGS / "llama-3.1-8b.json").read_text())
    res = _vkrope("config", str(cfg), "--plot", str(tmp_path / "c.png"), capture_output=True, text=True)
    assert res.returncode == 0 and "wrote" in res.stdout, res.stderr
    assert (tmp_path / "c.png").stat().st_size > 0


def test_config_messages_name_the_file_and_the_flags(tmp_path, capsys):
    """A config.json holding null was "not a GGUF file" (None was the GGUF sign); a GGUF's longrope asked for
    `context_length=`, the Python keyword, not --context-length."""
    from vkrope.__main__ import main

    null = tmp_path / "null.json"
    null.write_text("null")
    assert main(["config", str(null)]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: PATH: {str(null)!r} holds null, not a JSON "
                                       "object (as a config.json does)\n")
    empty = tmp_path / "empty.json"  # (from_hf's `config:`, the Python argument: the command's PATH)
    empty.write_text("{}")
    assert main(["config", str(empty)]) == 1
    assert capsys.readouterr().err.startswith("vkrope: error: ValueError: PATH: model_type is missing")
    assert main(["config", str(CONFIGS / "llama-3.1-8b.json"), "--part", ""]) == 1  # (not read as left out)
    assert capsys.readouterr().err == ("vkrope: error: ValueError: --part: the part is empty; leave --part out, or "
                                       "name a part (vkrope config PATH lists a model's parts)\n")
    from vkrope.__main__ import cli_spelling

    said = cli_spelling("context_length: 'p.gguf' has longrope factors ...: pass context_length= (llama.cpp's)",
                        "config")
    assert said == "--context-length: 'p.gguf' has longrope factors ...: pass --context-length (llama.cpp's)"


def test_an_input_that_is_a_socket_is_named_as_one(tmp_path, capsys):
    """A socket does not open ("No such device or address"): the message says what it is."""
    from vkrope.__main__ import main

    path = tmp_path / "s"
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(str(path))
        assert main(["apply", str(path), "f.npy", "-o", str(tmp_path / "o.npy")]) == 1
        assert f"X.npy: {str(path)!r} is a socket, not" in capsys.readouterr().err
    finally:
        sock.close()


def test_chart_from_a_modes_json_says_only_the_kernel_benchmark_has_a_chart(tmp_path, capsys):
    """`bench --nd` writes a list: "it needs a date and a device name" said nothing of why."""
    from vkrope.__main__ import main

    src = tmp_path / "bench_nd.json"
    for written, said in (("[]", "only the kernel benchmark's bench.json has a chart"),
                          ('{"mode": "nd", "run": {"date": "2026-12-05", "device": {"name": "x"}}, "rows": [{}]}',
                           "is `vkrope bench --nd`'s JSON, which has no chart: only the kernel benchmark's")):
        src.write_text(written)  # (an older run's list, and a mode's JSON with its run said)
        assert main(["bench", "--chart-from", str(src)]) == 1
        assert said in capsys.readouterr().err


def test_an_out_folder_that_is_a_file_says_so(tmp_path, capsys):
    """`bench --out FILE` said "(File exists)"."""
    from vkrope.__main__ import main

    (tmp_path / "f").write_text("")
    os.symlink(tmp_path / "missing", tmp_path / "dangling")
    os.symlink(tmp_path / "loop2", tmp_path / "loop1")
    os.symlink(tmp_path / "loop1", tmp_path / "loop2")
    for name, why in (("f", "a file, not a folder"), ("dangling", "a dangling symlink"), ("loop1", "a symlink loop")):
        assert main(["bench", "--decode", "--out", str(tmp_path / name)]) == 1
        assert capsys.readouterr().err.endswith(f"as the output folder ({why})\n")


def test_config_of_a_model_whose_layers_all_apply_no_rope_says_so(tmp_path, capsys):
    """A llama4_text config with every layer NoPE printed a full RoPE summary under "the layers with RoPE:"
    (and drew it): from_hf raises NoRopeLayers there now, and the command says no layer applies RoPE."""
    from vkrope.__main__ import main

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama4_text", "hidden_size": 512, "num_attention_heads": 4,
                               "num_hidden_layers": 4, "head_dim": 128, "rope_theta": 500000.0,
                               "no_rope_layers": [0, 0, 0, 0], "max_position_embeddings": 8192}))
    why = "(by no_rope_layers [0, 0, 0, 0])"  # (the reason, which said nothing before)
    assert main(["config", str(cfg)]) == 0
    assert capsys.readouterr().out == f"{cfg} (config.json): no layer applies RoPE {why}\n"
    assert main(["config", str(cfg), "--json"]) == 0  # (stdout stays JSON: an empty list)
    said = capsys.readouterr()
    assert json.loads(said.out) == [] and said.err == f"{cfg} (config.json): no layer applies RoPE {why}\n"
    cfg.write_text(json.dumps({"model_type": "falcon", "hidden_size": 512, "num_attention_heads": 4,
                               "num_hidden_layers": 2, "alibi": True}))
    assert main(["config", str(cfg)]) == 0
    assert capsys.readouterr().out.startswith(f"{cfg} (config.json): no layer applies RoPE (alibi true: falcon's ")
    cfg.write_text(json.dumps({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12}))
    assert main(["config", str(cfg)]) == 0  # (a model type of no RoPE at all: said alike, it was an error)
    assert capsys.readouterr().out.startswith(f"{cfg} (config.json): no layer applies RoPE (model_type 'bert': ")


def test_a_chart_path_that_is_the_config_read_is_refused(tmp_path, capsys):
    """`config CFG --plot LINK.png`, LINK.png a symlink to CFG: the chart replaced the config (write_whole
    writes what a link names). Refused, the config kept; a config of no RoPE says no chart was written."""
    from vkrope.__main__ import main

    cfg = tmp_path / "config.json"
    cfg.write_text((CONFIGS / "llama-3.1-8b.json").read_text())
    before = cfg.read_bytes()
    link = tmp_path / "c.png"
    os.symlink(cfg, link)
    assert main(["config", str(cfg), "--plot", str(link)]) == 1
    assert f"--plot: {str(link)!r} is the file read" in capsys.readouterr().err
    assert cfg.read_bytes() == before


@pytest.fixture
def python_sigint():
    """Python's own Ctrl-C handler for the test, as a command run from a terminal has it (a suite run in the
    background inherits Ctrl-C ignored), and the inherited one back after."""
    import signal

    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, inherited)


def test_ctrl_c_at_the_rename_is_dropped_and_before_it_keeps_the_old_file(tmp_path, capsys, monkeypatch,
                                                                           python_sigint):
    """-o OUT.npy replaced and said, or kept and the run interrupted, never "interrupted" with OUT.npy new (an
    adversary's Ctrl-C near the end of a 128 MiB apply): a Ctrl-C during the rename and the line saying so is
    dropped; one during the write interrupts it, leaving the old file and no temporary one."""
    import signal

    from vkrope import files
    from vkrope.__main__ import main

    x = np.random.default_rng(0).standard_normal((1, 3, 4)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "f.npy", np.tile(np.array([1.0, 0.0], np.float32), (3, 2)))  # (the identity)
    out = tmp_path / "out.npy"
    out.write_bytes(b"old")
    real = os.replace

    def replace_amid_ctrl_c(src: str, dst: str) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        real(src, dst)
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(files.os, "replace", replace_amid_ctrl_c)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # (main() sets its own on an interruption)
    try:
        assert main(["apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(out)]) == 0
    except KeyboardInterrupt:  # (a failure of this test, not the end of the run)
        pytest.fail("a Ctrl-C at the rename interrupted the command")
    assert "wrote" in capsys.readouterr().out and np.array_equal(np.load(out), x)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    monkeypatch.setattr(files.os, "replace", real)
    out.write_bytes(b"old")

    def write_amid_ctrl_c(fh) -> None:
        fh.write(b"new")
        os.kill(os.getpid(), signal.SIGINT)
        fh.write(b"er")

    with pytest.raises(KeyboardInterrupt):
        files.write_whole(str(out), write_amid_ctrl_c, "-o", then=lambda: None)
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.npy", "out.npy", "x.npy"]


@pytest.mark.parametrize("layout", ["C", "F", "big-endian", "bfloat16", "format 2.0"])
def test_large_inputs_are_mapped_not_read_whole(tmp_path, monkeypatch, layout):
    """An input from _MAP_FROM bytes is memory-mapped (the page cache holds it: an 8 GiB X and an 8 GiB FREQS
    were killed for memory on a 23 GB machine), read as the file says in every layout; forced small here."""
    import mmap

    import ml_dtypes

    from vkrope.cli import npy_files as cli

    monkeypatch.setattr(cli, "_MAP_FROM", 64)
    a = np.arange(6 * 10, dtype=np.float32).reshape(6, 10) - 7.5
    a = {"C": a, "F": np.asfortranarray(a), "big-endian": a.astype(">f4"), "bfloat16": a.astype(ml_dtypes.bfloat16),
         "format 2.0": a}[layout]
    path = tmp_path / "x.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, a, version=(2, 0) if layout == "format 2.0" else None)
    got = cli.load_npy(str(path), "X.npy")
    assert got.dtype.isnative and got.shape == a.shape and np.array_equal(got.astype(np.float64), a.astype(np.float64))
    base = got
    while not isinstance(base, mmap.mmap) and getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(base, mmap.mmap) or layout == "big-endian", type(base)  # (swapped: a copy in memory)
    assert not got.flags.writeable or layout == "big-endian"
    assert cli.load_npy(str(tmp_path / "x.npy"), "X.npy").flags.f_contiguous == (layout == "F")


def test_an_unknown_npy_version_is_named(tmp_path, monkeypatch):
    """A .npy of a format version numpy never wrote: named as such (it was read as a header of 662372471
    bytes); a minor version too, mapped or not (numpy's read_array refuses 1.5, the mapping read it)."""
    from vkrope.cli import npy_files as cli

    (tmp_path / "v9.npy").write_bytes(b"\x93NUMPY\x09\x00" + b"\x00" * 100)
    np.save(tmp_path / "v15.npy", np.ones((8, 8), np.float32))
    data = bytearray((tmp_path / "v15.npy").read_bytes())
    data[7] = 5  # (format 1.5)
    (tmp_path / "v15.npy").write_bytes(bytes(data))
    monkeypatch.setattr(cli, "_MAP_FROM", 64)
    for name, version in (("v9", "9.0"), ("v15", "1.5")):
        with pytest.raises(ValueError, match=rf"^X.npy: '.*{name}.npy' is not a valid .npy file \(format version "
                                             rf"{version}; numpy writes 1.0, 2.0 and 3.0\)$"):
            cli.load_npy(str(tmp_path / f"{name}.npy"), "X.npy")


def test_a_chart_in_the_out_folder_the_run_makes(tmp_path, capsys, monkeypatch):
    """`bench --out NEW --plot NEW/x.png`: the run makes NEW, so the chart's folder is checked once it is
    there (it was refused as missing); a chart path that is a folder in it is still refused, before the run."""
    pytest.importorskip("matplotlib")
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    drawn, ran = [], []
    monkeypatch.setattr(kernel, "run", lambda **kw: ran.append(1) or {"complete": True, "rows": []})
    monkeypatch.setattr(kernel, "plot", lambda result, path, what: drawn.append(path))
    new = tmp_path / "new"
    assert main(["bench", "--shapes", "1x8x8", "--out", str(new), "--plot", str(new / "x.png")]) == 0, \
        capsys.readouterr().err
    assert drawn == [str(new / "x.png")] and (new / "bench.json").exists()
    (new / "d.png").mkdir()
    assert main(["bench", "--shapes", "1x8x8", "--out", str(new), "--plot", str(new / "d.png")]) == 1
    assert "--plot" in capsys.readouterr().err and len(ran) == 1


def test_usage_mistakes_point_at_the_command(tmp_path, capsys):
    """An unknown argument is said with the command's --help (--debug after the command says where it goes);
    --version answers; -o inside a file is named as such, not as a missing directory."""
    from vkrope.__main__ import main

    with pytest.raises(SystemExit) as stop:
        main(["apply", "x.npy", "f.npy", "-o", "o.npy", "--debug"])
    assert stop.value.code == 1
    assert capsys.readouterr().err == ("vkrope: error: unrecognized arguments: --debug; --debug goes before the "
                                       "command: vkrope --debug apply ... (see vkrope --help)\n")
    for argv, said in ((["apply", "--version"], "--version goes before the command: vkrope --version"),
                       (["--debug", "info", "--debug"], "--debug is given before the command already: drop the one "
                                                        "after it")):
        with pytest.raises(SystemExit) as stop:  # (not "the following arguments are required", nor "goes before")
            main(argv)
        assert stop.value.code == 1
        assert capsys.readouterr().err == f"vkrope: error: unrecognized arguments: {argv[-1]}; {said} (see vkrope --help)\n"
    with pytest.raises(SystemExit):
        main(["--bogus", "apply", "x.npy", "f.npy", "-o", "o.npy"])  # (before the command: the top's --help)
    assert "unrecognized arguments: --bogus (see vkrope --help)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rotary-embedding", "x", "c", "s", "-o", "o", "--interleaved", "1"])
    assert "unrecognized arguments: 1 (see vkrope rotary-embedding --help)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"vkrope {vkrope.__version__}\n"
    np.save(tmp_path / "x.npy", np.ones((1, 2, 4), np.float32))
    assert main(["apply", str(tmp_path / "x.npy"), str(tmp_path / "x.npy"), "-o", str(tmp_path / "x.npy") + "/"]) == 1
    assert "names a file inside" in capsys.readouterr().err


def test_the_line_saying_o_was_written_keeps_its_own_errors(tmp_path):
    """The "wrote" line runs right after -o's rename: a reader of stdout gone then ends the command quietly
    (status 141, as before), not "cannot write OUT.npy (Broken pipe)" about a file that was written."""
    np.save(tmp_path / "x.npy", np.ones((1, 2, 4), np.float32))
    np.save(tmp_path / "f.npy", np.tile(np.array([1.0, 0.0], np.float32), (2, 2)))
    proc = subprocess.run(f"{sys.executable} -m vkrope apply {tmp_path / 'x.npy'} {tmp_path / 'f.npy'} -o "
                          f"{tmp_path / 'o.npy'} | (exec 0<&-; true)", shell=True, capture_output=True,
                          env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert proc.returncode == 0 and b"error" not in proc.stderr, proc.stderr  # (the pipeline's status: true's)
    assert np.array_equal(np.load(tmp_path / "o.npy"), np.load(tmp_path / "x.npy"))


def test_an_interruption_after_o_is_written_is_no_failure(tmp_path, monkeypatch, capsys, python_sigint):
    """A Ctrl-C after -o was replaced and said (freeing the arrays, the interpreter's teardown) reported
    "interrupted" and status 130 with the file new (an adversary's 9 of 40 tries): the command's status is 0
    then, and its own process ignores Ctrl-C from there to its end."""
    from vkrope import __main__ as cli
    from vkrope.cli import npy_files

    np.save(tmp_path / "x.npy", np.ones((1, 2, 4), np.float32))
    np.save(tmp_path / "f.npy", np.tile(np.array([1.0, 0.0], np.float32), (2, 2)))
    real = npy_files._written

    def then_interrupted(line: str) -> None:
        real(line)
        raise KeyboardInterrupt

    monkeypatch.setattr(npy_files, "_written", then_interrupted)
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)  # (main() sets its own on an interruption)
    try:
        assert cli.main(["apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "o.npy")]) == 0
    except KeyboardInterrupt:  # (a failure of this test, not the end of the run)
        pytest.fail("an interruption after -o was written ended the command as interrupted")
    out = capsys.readouterr()
    assert "wrote" in out.out and "interrupted" not in out.err and (tmp_path / "o.npy").exists()
    script = ("import signal, sys; from vkrope import __main__ as cli; cli.npy_files.OWNS_PROCESS = True; "
              "signal.signal(signal.SIGINT, signal.default_int_handler); "  # (not inherited ignored: see the fixture)
              f"rc = cli.main(['apply', {str(tmp_path / 'x.npy')!r}, {str(tmp_path / 'f.npy')!r}, '-o', "
              f"{str(tmp_path / 'p.npy')!r}]); print(rc, signal.getsignal(signal.SIGINT).__name__)")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.stdout.splitlines()[-1] == "0 _ignored", proc.stdout + proc.stderr


def test_a_header_that_lies_is_named_as_not_a_npy_file(tmp_path):
    """numpy's header parser on an unclosed bracket (tokenize.TokenError) or a bool in the shape (TypeError):
    "X.npy: ... is not a valid .npy file", not a bare error naming nothing."""
    from vkrope.__main__ import load_npy

    np.save(tmp_path / "good.npy", np.ones((1, 4, 8), np.float32))
    data = (tmp_path / "good.npy").read_bytes()
    size = int.from_bytes(data[8:10], "little")
    header = data[10:10 + size].decode("latin1")
    for name, text in (("unclosed", header.replace("(1, 4, 8), }", "(1, 4, 8   ")),
                       ("bool", header.replace("(1, 4, 8)", "(True, 4, 8)")),
                       ("huge", header.replace("(1, 4, 8)", "(0, 99999999999999999999, 8)"))):
        raw = text.encode("latin1")[: size - 1].ljust(size - 1) + b"\n"
        (tmp_path / f"{name}.npy").write_bytes(data[:10] + raw + data[10 + size:])
        with pytest.raises(ValueError, match=rf"^X.npy: '.*{name}.npy' is not a valid .npy file \((TokenError|TypeE"
                                             r"|its header says shape \(0, 99999999999999999999, 8\), a dimension "
                                             r"past numpy's largest)"):
            load_npy(str(tmp_path / f"{name}.npy"), "X.npy")


def test_write_whole_refuses_a_file_it_may_not_write(tmp_path, monkeypatch):
    """write_whole itself (a chart, a benchmark JSON, -o: the command checked it before, the file may change
    since) refuses an existing file that does not open for writing, rather than renaming over it (root may write
    any file: the refusal is the file system's, as a read-only mount gives it)."""
    import errno

    from vkrope import files

    target = tmp_path / "kept.json"
    target.write_text("old")
    real_open = os.open

    def refused(path, flags, *a):
        if path == os.path.realpath(target) and flags & (os.O_ACCMODE | os.O_CREAT) == os.O_WRONLY:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_open(path, flags, *a)

    monkeypatch.setattr(files.os, "open", refused)
    with pytest.raises(ValueError, match=rf"^--out: cannot write .*kept.json' \({os.strerror(errno.EROFS)}\)$"):
        files.write_whole(str(target), lambda fh: fh.write(b"new"), "--out")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["kept.json"]


def test_write_whole_and_its_check_never_wait_on_a_fifo(tmp_path):
    """write_whole and its writability check given a FIFO (the command sends streams elsewhere; a caller that
    does not) refuse it at once, read or not, naming what it is, rather than blocking on its open (nobody reads)
    or renaming a regular file over it. An alarm turns a hang into a failure."""
    import signal

    from vkrope import files

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)

    def hung(signum, frame):
        raise TimeoutError("blocked on the FIFO")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        refused = r"^-o/--output: '.*fifo' is a pipe \(FIFO\), not a regular file \(the whole-file write"
        for check in (files.check_writable, lambda p, w: files.write_whole(p, lambda fh: fh.write(b"x"), w)):
            with pytest.raises(ValueError, match=refused):
                check(str(fifo), "-o/--output")
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        try:
            for check in (files.check_writable, lambda p, w: files.write_whole(p, lambda fh: fh.write(b"x"), w)):
                with pytest.raises(ValueError, match=refused):
                    check(str(fifo), "-o/--output")
        finally:
            os.close(reader)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert fifo.is_fifo() and sorted(p.name for p in tmp_path.iterdir()) == ["fifo"]


def test_json_bytes_past_the_cap_are_refused_whatever_the_file_said(tmp_path):
    """parse_json refuses more than JSON_LIMIT bytes itself: a file whose size said less (one that grew after
    its fstat, a /proc-like file of size 0) is read up to one byte past the cap, and that byte refuses it."""
    from vkrope import files

    with pytest.raises(ValueError, match=r"^PATH: 'grown.json' is over 64 MiB, larger than any JSON file vkrope "
                                         r"reads$"):
        files.parse_json(b" " * (files.JSON_LIMIT + 1), "grown.json", "PATH")
    assert files.parse_json(b" " * (files.JSON_LIMIT - 2) + b"{}", "ok.json", "PATH") == {}


def test_a_scaled_ceiling_is_said_to_be_scaled(monkeypatch):
    """Past one binding (maxStorageBufferRange) or a quarter of maxMemoryAllocationSize a ceiling is timed on
    fewer bytes and scaled linearly; the table, the JSON and the chart presented it as measured at x's size.
    Each says it now: the row counts the bytes timed, its values are marked * with a line saying from what
    size, and the chart draws the point hollow, its legend naming the size (a row of an older run, without the
    counts, from its device's limits)."""
    pytest.importorskip("matplotlib")
    from forced import force_limits

    from vkrope.bench import kernel

    monkeypatch.setattr(kernel, "Device", lambda: force_limits(vkrope.Device(), max_memory_allocation_size=256 << 10,
                                                               max_storage_buffer_range=32 << 10))
    lines: list[str] = []
    result = kernel.run(shapes=[(1, 128, 256)], storages=("buffer",), dtypes=("float32",), repeats=1,
                        log=lines.append)
    table = result["rows"][0]  # x 128 KiB; its copy moves x + half the 128 KiB table
    assert (table["texel_copy_timed_bytes"], table["copy_timed_bytes"]) == (32 << 10, 64 << 10)
    row_line = next(line for line in lines if line.startswith("(1, 128, 256)"))
    assert row_line.split()[9:12] == [f"{table['texel_copy_gbps']:.1f}*", f"{table['texel_copy_over_kernel']:.2f}*",
                                       f"{table['copy_gbps']:.1f}*"], row_line
    assert lines[-1].startswith("  * scaled, not measured at this size: tcopy timed on 0.03125 of 0.125 MiB; copy "
                                "(table) timed on 0.0625 of 0.1875 MiB"), lines
    assert "scaled linearly" in result["notes"] and "copy_timed_bytes" in result["notes"]
    drawn = []
    monkeypatch.setattr(kernel, "save_figure", lambda fig, path, what, **kw: drawn.append(fig))
    for row in result["rows"]:  # (an older run's rows: the counts from the device's limits)
        del row["texel_copy_timed_bytes"], row["copy_timed_bytes"]
    kernel.plot(json.loads(json.dumps(result, default=str)), "c.png")
    labels = [t.get_text() for t in drawn[0].axes[0].get_legend().get_texts()]
    assert "texel-copy shader, float32 (roofline); hollow: timed on 0.03125 MiB, scaled linearly" in labels, labels
    assert "vkCmdCopyBuffer, same bytes as the float32 table kernel; hollow: timed on 0.0625 MiB, scaled " \
           "linearly" in labels, labels
    hollow = [ln for ln in drawn[0].axes[0].lines if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 2


def test_a_one_shape_chart_marks_every_series(monkeypatch):
    """`bench --shapes 1x64x32` drew its ceilings as lines without markers: one point each, nothing shown."""
    pytest.importorskip("matplotlib")
    from vkrope.bench import kernel

    result = json.loads((ROOT / "docs" / "data" / "h200" / "bench-quick.json").read_text())
    result["rows"] = [r for r in result["rows"] if r["shape"] == [1, 256, 256] and r["dtype"] == "float16"]
    drawn = []
    monkeypatch.setattr(kernel, "save_figure", lambda fig, path, what, **kw: drawn.append(fig))
    kernel.plot(result, "c.png")
    lines = drawn[0].axes[0].lines
    assert len(lines) >= 5 and all(len(ln.get_xdata()) == 1 for ln in lines)
    unmarked = [ln.get_label() for ln in lines if ln.get_marker() in ("None", "", " ", None)]
    assert unmarked == [], unmarked


@pytest.mark.parametrize("path", ["/dev/fd/0", "/proc/self/fd/0"])
def test_chart_from_a_descriptor_path_asks_for_plot(tmp_path, path):
    """`bench --chart-from /dev/stdin < run.json` wrote /dev/stdin.png: a descriptor's path is no place for a
    chart beside it. Refused without --plot, asking for it; drawn with it."""
    pytest.importorskip("matplotlib")
    src = ROOT / "docs" / "data" / "h200" / "bench-quick.json"
    with open(src, "rb") as stdin:
        res = _vkrope("bench", "--chart-from", path, stdin=stdin, capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 1 and res.stderr == (
        f"vkrope: error: ValueError: --chart-from: {path!r} is no file in a folder to put the chart beside (a "
        "descriptor or device path); give the chart's path with --plot FILE.png\n"), res.stderr
    with open(src, "rb") as stdin:
        res = _vkrope("bench", "--chart-from", path, "--plot", "c.png", stdin=stdin, capture_output=True, text=True,
                      cwd=tmp_path)
    assert res.returncode == 0 and (tmp_path / "c.png").stat().st_size > 1000, res.stderr


def test_a_failed_bench_removes_every_empty_folder_it_made(tmp_path, capsys, monkeypatch):
    """`bench --out n1/n2/n3` failing (a shape too large, a Ctrl-C) removed n3 and left n1/n2/; a name too long
    was an OSError from that clean-up, naming no flag. Every folder the run made and left empty goes; the
    user's own folders stay."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    def stop(**kw):
        raise kw.pop("error")

    (tmp_path / "mine").mkdir()
    for error, made in ((MemoryError("Unable to allocate 9 TiB"), "n1/n2/n3"), (KeyboardInterrupt(), "mine/a/b")):
        monkeypatch.setattr(kernel, "run", lambda **kw: stop(error=error, **kw))
        monkeypatch.chdir(tmp_path)
        if isinstance(error, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                main(["bench", "--shapes", "1x16x8", "--out", made])
        else:
            assert main(["bench", "--shapes", "1x16x8", "--out", made]) == 1
        assert sorted(os.listdir(tmp_path)) == ["mine"] and os.listdir(tmp_path / "mine") == []
    capsys.readouterr()
    long = "a" * 300
    for out in (long, f"p1/{long}"):
        assert main(["bench", "--shapes", "1x16x8", "--out", out]) == 1
        assert capsys.readouterr().err == (f"vkrope: error: ValueError: --out: cannot use {out!r} as the output "
                                           "folder (File name too long)\n")
        assert sorted(os.listdir(tmp_path)) == ["mine"]


def test_bench_shapes_and_repeats_past_any_sane_size_are_refused_first(tmp_path, capsys, monkeypatch):
    """`--shapes 99999999999999999999x64x32` printed the table's header, then numpy's "Maximum allowed
    dimension exceeded" naming no flag; `--repeats 99999999999999999999` was taken and ran for ever. Both are
    refused before any work, naming the flag; --repeats takes up to 1000."""
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    asked = []
    monkeypatch.setattr(kernel, "run", lambda **kw: asked.append(kw) or pytest.fail("ran"))
    out = str(tmp_path / "p1" / "p2")
    assert main(["bench", "--out", out, "--shapes", "99999999999999999999x64x32"]) == 1
    said = capsys.readouterr()
    assert said.out == "" and said.err == (
        "vkrope: error: ValueError: --shapes: 99999999999999999999x64x32 is larger than any numpy array (a float32 "
        "x of B*N*C*4 bytes must be under 2^63); got '99999999999999999999x64x32'\n")
    assert os.listdir(tmp_path) == []
    with pytest.raises(SystemExit) as exit_:  # (a usage error: argparse's exit)
        main(["bench", "--out", out, "--repeats", "99999999999999999999"])
    assert exit_.value.code == 1 and capsys.readouterr().err == ("vkrope: error: argument --repeats: must be a positive integer of at most "
                                       "1000; got '99999999999999999999' (see vkrope bench --help)\n")
    monkeypatch.setattr(kernel, "run", lambda **kw: asked.append(kw) or sys.exit(3))
    with pytest.raises(SystemExit):
        main(["bench", "--out", out, "--shapes", "1x16x8", "--repeats", "1000"])
    assert asked[0]["repeats"] == 1000


def _full_disk_for(name: str, real):
    """write_whole, whose write of a file called `name` fails as on a full disk."""
    def write_whole(path, write, what, then=None):
        def full(fh):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, full if os.path.basename(path) == name else write, what, then)
    return write_whole


def test_a_full_disk_says_where_the_rows_are_and_what_was_written(tmp_path, capsys, monkeypatch):
    """A full disk at bench.json named only bench.json (the rows were in bench.partial.json, unsaid); a chart
    that could not be written was "--plot: cannot write" without --plot: the flag that chose the file."""
    pytest.importorskip("matplotlib")
    from vkrope import charts
    from vkrope.__main__ import main
    from vkrope.bench import kernel

    result = json.loads((ROOT / "docs" / "data" / "h200" / "bench-quick.json").read_text())

    def run(**kw):
        kernel.save_json(result, kw["json_path"])
        return result

    monkeypatch.setattr(kernel, "run", run)
    monkeypatch.setattr(kernel, "write_whole", _full_disk_for("bench.json", kernel.write_whole))
    out = tmp_path / "out"
    assert main(["bench", "--shapes", "1x16x8", "--out", str(out)]) == 1
    partial = out / "bench.partial.json"
    assert capsys.readouterr().err == (
        f"vkrope: error: ValueError: --out: cannot write {str(out / 'bench.json')!r} (No space left on device); the "
        f"run's rows are in {partial} (\"complete\": false there), no {out / 'bench.json'} was written\n")
    assert json.loads(partial.read_text())["rows"] == result["rows"]
    monkeypatch.undo()
    monkeypatch.setattr(kernel, "run", run)
    monkeypatch.setattr(charts, "write_whole", _full_disk_for("bench.png", charts.write_whole))
    assert main(["bench", "--shapes", "1x16x8", "--out", str(out)]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: --out (its chart, bench.png): cannot write "
                                       f"{str(out / 'bench.png')!r} (No space left on device)\n")
    assert main(["bench", "--chart-from", str(out / "bench.json")]) == 1
    assert capsys.readouterr().err == (f"vkrope: error: ValueError: --chart-from (its chart, beside it): cannot write "
                                       f"{str(out / 'bench.png')!r} (No space left on device)\n")


def test_bench_under_the_validation_layer_warns(tmp_path, capsys, monkeypatch):
    """`VKROPE_VALIDATION=1 vkrope bench` printed its (slower) timings without a word: one line on stderr now,
    for the kernel benchmark and a mode alike, and the JSON says so as before; none without the layer."""
    pytest.importorskip("matplotlib")
    from vkrope.__main__ import main
    from vkrope.bench import nd
    from vkrope.bench.kernel import VALIDATION_WARNING

    warning = VALIDATION_WARNING + "\n"
    assert "validation layer is on" in warning and "slower" in warning
    monkeypatch.setattr(nd, "run", lambda **kw: {"rows": []})
    for on in ("1", "0"):
        monkeypatch.setenv("VKROPE_VALIDATION", on)
        out = tmp_path / on
        assert main(["bench", "--shapes", "1x16x8", "--storage", "buffer", "--dtype", "float32", "--repeats", "1",
                     "--out", str(out)]) == 0
        assert capsys.readouterr().err == (warning if on == "1" else "")
        assert json.loads((out / "bench.json").read_text())["device"]["validation"] is (on == "1")
        assert main(["bench", "--nd", "--out", str(out)]) == 0
        assert capsys.readouterr().err == (warning if on == "1" else "")


def test_cli_md_names_every_flag_of_every_command(capsys):
    """docs/cli.md's synopsis lacked `config --part`, which --help lists: every flag a command's --help lists is in
    that command's synopsis lines (its `vkrope COMMAND ...` lines and their continuations, comments left out)."""
    from vkrope.__main__ import main

    synopsis: dict[str, str] = {}
    command = None
    text = (ROOT / "docs" / "cli.md").read_text()
    block = next(part for part in text.split("\n\n") if part.startswith("    vkrope "))  # (the first code block)
    for line in block.splitlines():
        code = line.split("#")[0]
        if code.strip().startswith("vkrope "):
            command = code.split()[1]
        synopsis[command] = synopsis.get(command, "") + " " + code
    for command in ("info", "apply", "rotary-embedding", "config", "demo", "bench"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        said = capsys.readouterr().out
        short = dict((long, s) for s, long in re.findall(r"(?<![\w-])(-\w) \S+, (--[\w-]+)", said))  # (-o, --output)
        flags = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", said)) - {"--help"}
        missing = [flag for flag in sorted(flags)
                   if not re.search(rf"{short.get(flag, flag)}(?![\w-])", synopsis.get(command, ""))]
        assert missing == [], (command, missing)


def test_apply_and_config_say_what_is_wrong(tmp_path, capsys):
    """`apply` with a FREQS.npy of shape (64, 30) for C = 32 said it "has 60 rows", not that its layout differs;
    `config` on a symlink loop said "no such file or folder"."""
    from vkrope.__main__ import main

    np.save(tmp_path / "x.npy", np.zeros((1, 64, 32), np.float32))
    np.save(tmp_path / "f.npy", np.zeros((64, 30), np.float32))
    assert main(["apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"), "-o", str(tmp_path / "o.npy")]) == 1
    assert "FREQS.npy has shape (64, 30), which lays out no rows of X.npy's C = 32 (its last axis is 30 wide, not " \
           "C = 32): expected real [Nf, C] = [Nf, 32] (or [1, Nf, C/2, 2])" in capsys.readouterr().err
    os.symlink(tmp_path / "b", tmp_path / "a")
    os.symlink(tmp_path / "a", tmp_path / "b")
    os.symlink(tmp_path / "nothing", tmp_path / "dangling")
    for path, said in ((tmp_path / "a", "is a symlink loop (its links lead back to themselves: Too many levels of "
                                        "symbolic links)"),
                       (tmp_path / "a" / "config.json", "is a symlink loop"),
                       (tmp_path / "dangling", f"is a symlink to {str(tmp_path / 'nothing')!r}, which does not exist")):
        assert main(["config", str(path)]) == 1
        assert capsys.readouterr().err.startswith(f"vkrope: error: ValueError: PATH: {str(path)!r} {said}")


def test_sigterm_and_sighup_end_a_write_as_ctrl_c_does(tmp_path):
    """An adversary's finding: SIGTERM or SIGHUP while -o was being written left its hidden temporary file (16-31
    MiB of a 64 MiB result, every run): the command now undoes the write as a Ctrl-C does and is then ended by
    that signal, one line said; a SIGHUP the caller ignores (nohup) stays ignored. The signal is sent as the
    written temporary file is given the old file's mode, just before the rename."""
    import signal

    np.save(tmp_path / "x.npy", np.ones((1, 3, 4), np.float32))
    np.save(tmp_path / "f.npy", np.tile(np.array([1.0, 0.0], np.float32), (3, 2)))
    out = tmp_path / "out.npy"
    script = ("import os, signal, sys; from vkrope import files; from vkrope.__main__ import entry\n"
              "sig, at = getattr(signal, sys.argv.pop(1)), sys.argv.pop(1); real = getattr(os, at)\n"
              "def signalled(*args):\n    os.kill(os.getpid(), sig)\n    real(*args)\n"
              "setattr(files.os, at, signalled); entry()\n")
    for name, ignored, at in (("SIGTERM", False, "chmod"), ("SIGHUP", False, "chmod"), ("SIGHUP", True, "chmod"),
                              ("SIGTERM", False, "replace")):
        out.write_bytes(b"old")
        sig = getattr(signal, name)
        proc = subprocess.run([sys.executable, "-c", script, name, at, "apply", str(tmp_path / "x.npy"),
                               str(tmp_path / "f.npy"), "-o", str(out)], capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda sig=sig, ignored=ignored: signal.signal(sig, signal.SIG_IGN if ignored
                                                                                         else signal.SIG_DFL))
        files = sorted(p.name for p in tmp_path.iterdir())
        assert files == ["f.npy", "out.npy", "x.npy"], (name, files)  # (no temporary file left)
        if ignored or at == "replace":  # (ignored: nohup's; during the rename: held, then too late, as a Ctrl-C)
            assert proc.returncode == 0 and "wrote" in proc.stdout and np.load(out).shape == (1, 3, 4), proc.stderr
        else:
            assert proc.returncode == -sig and proc.stderr.endswith(f"vkrope: ended by {name}\n"), proc.stderr
            assert "Traceback" not in proc.stderr and out.read_bytes() == b"old"


def test_after_ctrl_c_the_command_ignores_a_second_one_while_it_ends(tmp_path):
    """An adversary's finding: two Ctrl-C a few ms apart printed a traceback from the exit's cleanup (the
    default device's close in atexit, interrupted by the second): once the first is said, the command's process
    ignores Ctrl-C while it ends (still ended by SIGINT, as Python ends it)."""
    import signal

    np.save(tmp_path / "x.npy", np.ones((1, 3, 4), np.float32))
    np.save(tmp_path / "f.npy", np.tile(np.array([1.0, 0.0], np.float32), (3, 2)))
    script = ("import atexit, os, signal; from vkrope import files; from vkrope.__main__ import entry\n"
              "def interrupted(*args):\n    raise KeyboardInterrupt\n"
              "atexit.register(lambda: print(signal.getsignal(signal.SIGINT).__name__, flush=True))\n"
              "files.os.chmod = interrupted; entry()\n")
    (tmp_path / "out.npy").write_bytes(b"old")
    proc = subprocess.run([sys.executable, "-c", script, "apply", str(tmp_path / "x.npy"), str(tmp_path / "f.npy"),
                           "-o", str(tmp_path / "out.npy")], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.returncode == -signal.SIGINT and proc.stdout == "_ignored\n", (proc.returncode, proc.stdout, proc.stderr)
    assert proc.stderr.endswith("vkrope: interrupted\n") and (tmp_path / "out.npy").read_bytes() == b"old"


def test_a_second_ctrl_c_during_the_cleanup_leaves_no_temporary_file(tmp_path, monkeypatch, python_sigint):
    """The same adversary's: a second Ctrl-C while an interrupted write removes its temporary file left it (128
    bytes beside -o, once): the removal holds Ctrl-C off."""
    import signal

    from vkrope import files

    real = files.os.path.lexists

    def lexists_amid_ctrl_c(path: str) -> bool:
        os.kill(os.getpid(), signal.SIGINT)  # (the second, as the first's cleanup starts)
        return real(path)

    def interrupted(fh) -> None:
        fh.write(b"part")
        monkeypatch.setattr(files.os.path, "lexists", lexists_amid_ctrl_c)
        raise KeyboardInterrupt

    out = tmp_path / "out.npy"
    out.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        files.write_whole(str(out), interrupted, "-o")
    monkeypatch.setattr(files.os.path, "lexists", real)
    assert [p.name for p in tmp_path.iterdir()] == ["out.npy"] and out.read_bytes() == b"old"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_unreadable_config_path_is_not_called_missing(tmp_path, monkeypatch, capsys):
    """The same adversary's: `vkrope config` on a path it cannot reach (a folder without search permission, a
    name too long) said "no such file or folder"; it says why it cannot read it. And -o over another user's file
    in a sticky folder (/tmp's 1777), which the final rename may not replace, is refused before any work."""
    from vkrope import files
    from vkrope.__main__ import main

    long = str(tmp_path / ("c" * 300))
    assert main(["config", long]) == 1
    assert re.fullmatch(r"vkrope: error: ValueError: PATH: cannot read '.*' \(File name too long\)\n",
                        capsys.readouterr().err)
    folder = tmp_path / "sticky"
    folder.mkdir()
    folder.chmod(0o1777)
    theirs = folder / "theirs.npy"
    theirs.write_bytes(b"old")
    if os.geteuid() != 0:  # (the config path's part above has run)
        pytest.skip("another user's file is made by chown, which only root may do (CI runs as root)")
    os.chown(theirs, 54321, 54321)
    monkeypatch.setattr(files.os, "geteuid", lambda: 12345)  # (as another user, neither root nor the folder's)
    with pytest.raises(ValueError, match=r"^-o: cannot replace '.*theirs\.npy': it is another user's file \(uid "
                                         r"54321\) in a sticky folder"):
        files.check_writable(str(theirs), "-o")
    os.chown(theirs, 12345, 12345)
    files.check_writable(str(theirs), "-o")  # (our own file there: replaced)


def test_a_dash_is_no_stream_and_the_wrote_line_stays_one_line(tmp_path, capsys, monkeypatch):
    """The CLI adversary's: `-o -` made a file named '-' and exited 0, `apply -` said "no such file '-'"; and a
    newline in -o's name split the "wrote" line in two (errors escape names, it did not)."""
    from vkrope.__main__ import main

    np.save(tmp_path / "x.npy", np.ones((1, 3, 4), np.float32))
    np.save(tmp_path / "f.npy", np.tile(np.array([1.0, 0.0], np.float32), (3, 2)))
    monkeypatch.chdir(tmp_path)
    assert main(["apply", "x.npy", "f.npy", "-o", "-"]) == 1
    assert ("-o/--output: '-' is a file name here, not stdin or stdout: vkrope reads and writes files (./- for a "
            "file of that name, or /dev/stdout to write there)") in capsys.readouterr().err
    assert main(["apply", "-", "f.npy", "-o", "o.npy"]) == 1
    assert "X.npy: '-' is a file name here, not stdin or stdout: vkrope reads" in capsys.readouterr().err
    assert main(["bench", "--out", "-"]) == 1
    assert "--out: '-' is a folder name here" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.npy", "x.npy"]
    assert main(["apply", "x.npy", "f.npy", "-o", "n\nl.npy"]) == 0
    assert capsys.readouterr().out == "wrote 'n\\nl.npy': shape (1, 3, 4), dtype float32\n"

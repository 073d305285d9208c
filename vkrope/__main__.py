"""The `vkrope` command (also `python -m vkrope`): info, apply, rotary-embedding, demo, bench."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import re
import signal
import sys
import tokenize
from typing import Any, BinaryIO, Callable, NoReturn

import numpy as np

from .charts import import_matplotlib
from .files import check_writable, not_regular, open_input, parse_json, read_json, read_json_bytes, write_whole

from .arguments import STORAGES
from .words import brief
from .runtime.dtypes import BFLOAT16, TENSOR_DTYPES, ml_dtype


def _max_error(y: np.ndarray, ref: np.ndarray) -> tuple[float, float]:
    """Max |y - ref|, and that error relative to the largest |ref| (float32)
    or in units of the ulp of y's 16-bit dtype at each reference value
    (float16, bfloat16: the spacing of that dtype's neighbours there)."""
    diff = np.abs(y.astype(np.float64) - ref)
    err = float(diff.max())
    if y.dtype != np.float32:
        r = np.abs(ref.astype(y.dtype)).astype(np.float64)
        if y.dtype in BFLOAT16:  # 8 significant bits; 2^-133 apart below 2^-126
            _, e = np.frexp(np.where(r > 0, r, 1.0))
            ulp = np.exp2(np.maximum(e - 8, -133).astype(np.float64))
        else:
            ulp = np.spacing(r.astype(np.float16)).astype(np.float64)
        return err, float(np.max(diff / ulp))
    return err, err / float(np.abs(ref).max())


def _fmt(rel: float, dtype: Any) -> str:
    return f"{rel:.1e}" if np.dtype(dtype) == np.float32 else f"{rel:.2f} ulp"


def cmd_demo(args: argparse.Namespace) -> int:
    """EdgeTAM memory attention, rotated on the Vulkan device."""
    import vkrope
    from vkrope.bench.baselines import numpy_rope
    from vkrope.bench.timing import best_seconds

    dev = vkrope.default_device()
    print(f"device: {dev.name} ({dev.info['type']}, Vulkan {dev.info['api_version']})")
    rng = np.random.default_rng(0)
    ok = True
    times: list[tuple[float, float]] = []  # (vkrope, numpy) seconds of each row numpy also ran
    q_freqs = vkrope.axial_freqs(256, 64, 64)  # [4096, 256]: EdgeTAM queries, 64x64 grid
    k_freqs = vkrope.axial_freqs(256, 16, 16)  # [256, 256]: one memory frame, 16x16 grid
    print(f"{'tensor':<40} {'dtype':<8} {'max |err|':>10} {'rel/ulps':>9} {'vkrope ms':>10} {'numpy ms':>9}")
    for dtype in (np.float32, np.float16, ml_dtype("bfloat16")):
        q = rng.standard_normal((1, 4096, 256)).astype(dtype)
        fq = q_freqs.astype(dtype)
        y = vkrope.apply(q, fq)
        err, rel = _max_error(y, vkrope.apply_reference(q, fq))
        t_vk = best_seconds(lambda: vkrope.apply(q, fq))
        t_np = best_seconds(lambda: numpy_rope(q, fq))
        times.append((t_vk, t_np))
        ok &= rel < 1e-6 if dtype == np.float32 else rel <= (1.0 if dtype == np.float16 else 0.5)  # bfloat16: rounded once
        print(f"{'queries [1, 4096, 256], 64x64 axial':<40} {np.dtype(dtype).name:<8} {err:>10.2e} {_fmt(rel, dtype):>9} "
              f"{t_vk * 1e3:>10.3f} {t_np * 1e3:>9.3f}")

        k = rng.standard_normal((1, 7 * 256 + 4, 256)).astype(dtype)
        fk = k_freqs.astype(dtype)
        y = vkrope.apply(k, fk, repeat=7, exclude_last=4)
        err, rel = _max_error(y, vkrope.apply_reference(k, fk, repeat=7, exclude_last=4))
        same_tail = bool(np.array_equal(y[:, -4:], k[:, -4:]))
        t_vk = best_seconds(lambda: vkrope.apply(k, fk, repeat=7, exclude_last=4))
        fk_full = np.concatenate([np.tile(fk, (7, 1)), np.tile(np.array([1, 0], dtype), (4, 128))])
        t_np = best_seconds(lambda: numpy_rope(k, fk_full))
        times.append((t_vk, t_np))
        ok &= same_tail and (rel < 1e-6 if dtype == np.float32 else rel <= (1.0 if dtype == np.float16 else 0.5))
        print(f"{'keys 7x256 + 4 ptr (repeat=7, excl=4)':<40} {np.dtype(dtype).name:<8} {err:>10.2e} {_fmt(rel, dtype):>9} "
              f"{t_vk * 1e3:>10.3f} {t_np * 1e3:>9.3f}")
    spec = vkrope.AxialFreqs(256, 64, 64)  # the same grid, cos / sin computed in the shader
    q = rng.standard_normal((1, 4096, 256)).astype(np.float32)
    y = vkrope.apply(q, spec)
    err, rel = _max_error(y, vkrope.apply_reference(q, spec.table()))
    t_vk = best_seconds(lambda: vkrope.apply(q, spec))
    ok &= rel < 1e-6
    print(f"{'queries, AxialFreqs (no table)':<40} {'float32':<8} {err:>10.2e} {_fmt(rel, np.float32):>9} "
          f"{t_vk * 1e3:>10.3f} {'-':>9}")
    print("rel/ulps: float32 max error over max |ref|; float16 / bfloat16 max error in ulps of that dtype")
    print("times: best of 5, end to end from numpy to numpy; numpy = complex64 multiply "
          "(16-bit types widened to float32), with freqs materialised for repeat/exclusion")
    _demo_ceiling(dev, q, q_freqs, times)
    print("result: " + ("correct (matches the float64 reference)" if ok else "WRONG"))
    return 0 if ok else 1


def _demo_ceiling(dev: Any, q: np.ndarray, freqs: np.ndarray, times: list[tuple[float, float]]) -> None:
    """Where the kernel stands against the driver's own ceiling, and, from
    the rows' `times` (vkrope, numpy), which of the two was faster here (on
    a CPU driver, numpy mostly: why)."""
    from vkrope.bench.timing import time_request, time_texel_copy
    from vkrope.ops import sam2

    req = sam2.check(q, freqs)
    out = np.empty_like(q)
    time_request(dev, req, out)  # warm-up
    kernel = min((t for t in (time_request(dev, req, out) for _ in range(5)) if t), default=None)
    time_texel_copy(dev, q.nbytes, False)
    floor = min((t for t in (time_texel_copy(dev, q.nbytes, False) for _ in range(5)) if t), default=None)
    if kernel and floor:
        print(f"kernel alone (queries, float32): {kernel * 1e3:.3f} ms; this driver's texel-copy shader over the "
              f"same tensor: {floor * 1e3:.3f} ms, so the kernel runs at {floor / kernel:.0%} of its ceiling")
    for line in demo_verdict(times, str(dev.info["type"]).lower() == "cpu"):
        print(line)
    print("GPU measurements, where there are any: docs/PERFORMANCE.md in vkrope's repository")


def demo_verdict(times: list[tuple[float, float]], cpu: bool) -> list[str]:
    """The demo's lines on which was faster, from its rows' (vkrope, numpy) seconds; on a CPU driver where
    numpy wins most rows, why."""
    faster = sum(t_vk < t_np for t_vk, t_np in times)
    lines = [f"vkrope was faster than numpy on {faster} of the {len(times)} rows numpy ran"]
    if cpu and 2 * faster < len(times):
        lines.append("numpy wins most rows here: this Vulkan device is the CPU itself (a software driver), so vkrope "
                     "adds a copy in and out and runs each texel as a shader invocation on the same cores that numpy "
                     "uses directly")
    return lines


def cmd_info(args: argparse.Namespace) -> int:
    """Each Vulkan device and the facts vkrope depends on. Where none can be
    chosen (VKROPE_DEVICE matches none, or none is usable) the devices are
    listed all the same, then the error says why (exit 1): a bad VKROPE_*
    value too."""
    import vkrope

    devs = vkrope.devices()
    try:
        chosen = vkrope.default_device().info
    except (vkrope.VulkanUnavailableError, ValueError) as exc:
        if not devs:
            raise
        chosen, unusable = None, exc
    if args.json:
        print(json.dumps({"devices": devs, "chosen": chosen}, indent=2, default=str))
    else:
        _print_devices(devs, chosen)
    if chosen is None:
        raise unusable
    return 0


def _print_devices(devs: list[dict[str, Any]], chosen: dict[str, Any] | None) -> None:
    """`vkrope info`'s lines: each device, and the one vkrope uses and why
    (or that it uses none)."""
    for d in devs:
        mark = "*" if chosen is not None and d["index"] == chosen["index"] else " "
        print(f"{mark}[{d['index']}] {d['name']} ({d['type']}), Vulkan {d['api_version']}, {d['driver']}")
        print(f"     maxStorageBufferRange {d['max_storage_buffer_range']}, maxImageDimension3D "
              f"{d['max_image_dimension_3d']}, 16-bit storage {d['storage_buffer_16bit']}, "
              f"external host memory {d['external_memory_host']}, timestamps {d['timestamp_valid_bits'] > 0}")
        print("     float32 subnormals: " + ("kept (shaders ask for DenormPreserve)" if d["denorm_preserve_float32"]
                                              else "the device's default (it cannot be asked to keep them)"))
        print("     signed zeros, inf, NaN: " + ("kept (shaders ask for SignedZeroInfNanPreserve)"
                                                  if d["signed_zero_inf_nan_preserve_float32"] else
                                                  "the device's default (it cannot be asked to keep them)"))
        if d["problems"]:
            print(f"     not usable: {'; '.join(d['problems'])}")
    if chosen is None:  # (why: the error that follows)
        wanted = os.environ.get("VKROPE_DEVICE", "").strip()
        print("vkrope uses none of them" + (f" (VKROPE_DEVICE = {wanted!r})" if wanted else ""))
    else:
        print(f"vkrope uses [{chosen['index']}]: {chosen['why_chosen']}")


# What an output may be besides a regular file: written as a stream, not replaced.
_STREAMS = ("a character device", "a pipe (FIFO)")


def load_npy(path: str, what: str) -> np.ndarray:
    """One array from a .npy file (never a pickle, never an .npz archive);
    every failure is a ValueError that names the argument `what`."""
    try:
        with open_input(path, what, "a .npy file") as fh:
            return _read_npy(fh, path, what)
    except ValueError as exc:
        if str(exc).startswith(f"{what}: "):
            raise
        raise ValueError(f"{what}: {path!r} is not a valid .npy file ({' '.join(str(exc).split())})") from None
    except (OSError, EOFError, TypeError, SyntaxError, OverflowError, tokenize.TokenError) as exc:  # (numpy's
        # header parser on a header that lies: an unclosed bracket, a bool among the shape's ints; OverflowError
        # where _check_npy_header's own dimension check does not run, an object array's header)
        raise ValueError(f"{what}: {path!r} is not a valid .npy file ({type(exc).__name__}: {exc})") from None
    except MemoryError as exc:  # (a file read whole, or a big-endian one's byte-swapped copy: a mapped one is not)
        raise ValueError(f"{what}: {path!r} does not fit in this machine's memory ({exc})") from None


_MAP_FROM = 1 << 24  # bytes of data from which an input is memory-mapped, not read (the page cache holds it)


def _read_npy(fh: BinaryIO, path: str, what: str) -> np.ndarray:
    if fh.read(6) != b"\x93NUMPY":
        empty = fh.seek(0, os.SEEK_END) == 0  # (a real file, or what a /proc file held: files.open_input)
        why = "the file is empty" if empty else "it does not start with the .npy magic string"
        raise ValueError(f"{what}: {path!r} is not a valid .npy file ({why})")
    fh.seek(0)
    header = _check_npy_header(fh, path, what)
    if header is not None and header[2].itemsize and math.prod(header[0]) * header[2].itemsize >= _MAP_FROM:
        shape, fortran, dtype, offset = header  # (in the page cache, which the system can reclaim: no private copy)
        a = np.asarray(np.memmap(fh, dtype=dtype, mode="r", offset=offset, shape=shape, order="F" if fortran else "C"))
    else:
        fh.seek(0)
        a = np.lib.format.read_array(fh, allow_pickle=False)
    # ml_dtypes' bfloat16 has no .npy type code: np.save writes it as
    # two-byte void ('<V2'), which is read back as bfloat16 here.
    if a.dtype.kind == "V" and a.dtype.itemsize == 2 and a.dtype.names is None:
        return a.view(ml_dtype("bfloat16"))
    # A file written on a big-endian machine (or with dtype '>f4'):
    # the same numbers in this machine's byte order, which vkrope reads.
    return a.astype(a.dtype.newbyteorder("=")) if not a.dtype.isnative else a


_NPY_HEADER_LIMIT = 10000  # numpy's max_header_size for a file not trusted with pickles


def _check_npy_header(fh: BinaryIO, path: str, what: str) -> tuple[tuple[int, ...], bool, np.dtype, int] | None:
    """Refuse, in one line, a format version numpy does not know, a header
    longer than numpy reads (its message is three lines advising
    allow_pickle=True), and one whose shape needs more bytes than the file
    holds (numpy would allocate them first: a 100-byte file claiming 64
    TiB). (shape, Fortran order, dtype, offset of the data); None for an
    object array (refused by read_array: never a pickle)."""
    fmt = np.lib.format
    major, minor = fmt.read_magic(fh)
    if (major, minor) not in ((1, 0), (2, 0), (3, 0)):  # (numpy's read_array refuses others: so, mapped or not)
        raise ValueError(f"{what}: {path!r} is not a valid .npy file (format version {major}.{minor}; numpy "
                         "writes 1.0, 2.0 and 3.0)")
    length = int.from_bytes(fh.read(2 if major == 1 else 4), "little")
    if length > _NPY_HEADER_LIMIT:
        raise ValueError(f"{what}: {path!r} is not a valid .npy file (its header is {length} bytes; numpy reads "
                         f"at most {_NPY_HEADER_LIMIT})")
    fh.seek(0)
    fmt.read_magic(fh)
    shape, fortran, dtype = fmt.read_array_header_1_0(fh) if major == 1 else fmt.read_array_header_2_0(fh)
    if dtype.hasobject:
        return None
    if any(d > np.iinfo(np.intp).max for d in shape):  # (numpy's reader overflows on it, even of an empty array)
        raise ValueError(f"{what}: {path!r} is not a valid .npy file (its header says shape {shape}, a dimension "
                         f"past numpy's largest, {np.iinfo(np.intp).max})")
    need = math.prod(shape) * dtype.itemsize
    here = fh.tell()  # (a real file, or what a /proc file held: files.open_input)
    have = fh.seek(0, os.SEEK_END) - here
    fh.seek(here)
    if need > have:
        raise ValueError(f"{what}: {path!r} is not a valid .npy file (its header says shape {shape} of {dtype}, "
                         f"{need} bytes of data; the file holds {have})")
    return shape, fortran, dtype, fh.tell()


def check_output_path(path: str, what: str, example: str | None = "out.npy", streams: bool = True) -> None:
    """Refuse an output path that cannot be written as a file, before any work:
    a directory (the message suggests `example` in it; None: the file's name
    is fixed, as a benchmark's in its --out folder), a missing folder, or
    an existing file that is neither a regular file nor a stream (a
    character device such as /dev/null or /dev/stdout, or a FIFO: written
    as they are, `_save`); with `streams` False a stream too (a chart or a
    benchmark JSON is written as a file: a FIFO would block, or refuse the
    seeks of the image writer)."""
    if not path:  # (its real path is the working folder: the rename would aim at that)
        raise ValueError(f"{what}: the path is empty; give a file name" + (f" such as {example!r}" if example else ""))
    if os.path.isdir(path) and example is None:
        raise ValueError(f"{what}: {path!r}, the file this run writes, is a directory; remove it or choose another "
                         f"{what}")
    if os.path.isdir(path):
        raise ValueError(f"{what}: {path!r} is a directory; give a file name such as {os.path.join(path, example or '')!r}")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        if os.path.exists(parent):  # (-o x.npy/, x.npy a file)
            raise ValueError(f"{what}: {path!r} names a file inside {parent!r}, which is not a directory")
        raise ValueError(f"{what}: the directory {parent!r} of {path!r} does not exist")
    try:
        kind = not_regular(os.stat(path).st_mode)
    except FileNotFoundError:
        kind = None
    except OSError as exc:
        raise ValueError(f"{what}: cannot write {path!r} ({exc.strerror or exc})") from None
    if kind is not None and (kind not in _STREAMS or not streams):
        streamed = ", a character device or a pipe" if streams else ""
        raise ValueError(f"{what}: {path!r} is {kind}; give the path of a regular file (new or to be replaced)"
                         f"{streamed}")
    if kind is None:
        check_writable(path, what)


def cmd_apply(args: argparse.Namespace) -> int:
    """Rotate X.npy by FREQS.npy into OUT.npy."""
    import vkrope

    check_output_path(args.output, "-o/--output")
    x = load_npy(args.x, "X.npy")
    freqs = load_npy(args.freqs, "FREQS.npy")
    positions = load_npy(args.positions, "--positions") if args.positions else None
    y = vkrope.apply(x, freqs, inverse=args.inverse, repeat=args.repeat, exclude_last=args.exclude_last,
                     positions=positions, storage=args.storage)
    return _save(args.output, y)


def _save(path: str, y: np.ndarray) -> int:
    """Write `y` to exactly `path` (np.save(path) would append .npy), whole or not at all (files.write_whole: a
    failed write leaves an existing file, X itself with -o X, as it was). A stream (/dev/null, /dev/stdout, a
    FIFO) is written as it is."""
    if _is_stdout(path):  # (-o /dev/stdout into `>> log`: a rename would replace the file stdout appends to)
        _write_stream(sys.stdout.buffer, path, y)  # (a reader gone: BrokenPipeError, which _command ends quietly)
        return 0
    if os.path.exists(path) and not_regular(os.stat(path).st_mode) in _STREAMS:
        return _save_stream(path, y)
    # (through write() alone: numpy's tofile() on a full disk says "N requested and M written", no reason)
    write_whole(path, lambda fh: np.save(_Writes(fh), y, allow_pickle=False), "-o/--output",
                then=lambda: _written(f"wrote {path}: shape {y.shape}, dtype {y.dtype}"))  # (a Ctrl-C then: dropped)
    if _OWNS_PROCESS:  # (the command is done: a Ctrl-C from here to the process's end, its teardown included,
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # would report an interruption with -o replaced)
    return 0


_OWNS_PROCESS = False  # entry() runs the command as its own process (not a caller's main(), a test's)
_WRITTEN: list[str] = []  # what the command wrote: after it, an interruption is no failure (_command)


def _written(line: str) -> None:
    """Say that the output was written, and remember it."""
    _WRITTEN.append(line)
    print(line)


def _is_stdout(path: str) -> bool:
    """Whether `path` is this process's stdout (/dev/stdout, or the file stdout is redirected to)."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):  # (no such file, or a stdout without a descriptor)
        return False


class _Writes:
    """Only a stream's write: numpy writes a real file with tofile(), which asks a pipe its position."""

    def __init__(self, fh: Any) -> None:
        self.write = fh.write


def _save_stream(path: str, y: np.ndarray) -> int:
    """Write `y` into a character device or FIFO (opened without blocking: a
    FIFO no process reads is an error, not a hang); the line saying so goes
    to stderr (stdout may be the stream)."""
    try:
        fd = os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0))
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb") as fh:
            _write_stream(fh, path, y)
    except OSError as exc:
        why = "no process reads the pipe" if exc.errno == errno.ENXIO else exc.strerror or exc
        raise ValueError(f"-o/--output: cannot write {path!r} ({why})") from None
    return 0


def _write_stream(fh: Any, path: str, y: np.ndarray) -> None:
    """`y` as .npy into the stream `fh` (through write() alone), flushed; the line saying so on stderr (stdout
    may be the stream)."""
    np.save(_Writes(fh), y, allow_pickle=False)
    fh.flush()
    print(f"wrote {path}: shape {y.shape}, dtype {y.dtype}", file=sys.stderr)


def cmd_rotary_embedding(args: argparse.Namespace) -> int:
    """ONNX RotaryEmbedding of X.npy with COS.npy / SIN.npy into OUT.npy."""
    import vkrope

    check_output_path(args.output, "-o/--output")
    x = load_npy(args.x, "X.npy")
    cos = load_npy(args.cos, "COS.npy")
    sin = load_npy(args.sin, "SIN.npy")
    position_ids = load_npy(args.position_ids, "--position-ids") if args.position_ids else None
    y = vkrope.rotary_embedding(x, cos, sin, position_ids, interleaved=int(args.interleaved),
                                rotary_embedding_dim=args.rotary_embedding_dim, num_heads=args.num_heads,
                                storage=args.storage)
    return _save(args.output, y)


def _make_dir(path: Any) -> None:
    """`bench --out`'s folder, made where missing; a ValueError naming --out otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or exc
        if isinstance(exc, FileExistsError):  # ("File exists" said nothing of what is there)
            why = "a dangling symlink" if os.path.islink(path) else "a file, not a folder"
        raise ValueError(f"--out: cannot use {str(path)!r} as the output folder ({why})") from None


def _bench_mode(name: str, args: argparse.Namespace, bench: Any, out_dir: Any) -> int:
    """`bench --family` / `--nd` / `--decode` / `--overhead`: its rows into OUT/bench_<name>.json (`out_dir`),
    with when and where it ran."""
    import importlib
    import json

    mode = importlib.import_module(f"vkrope.bench.{name}")
    _make_dir(out_dir)
    check_output_path(str(out_dir / f"bench_{name}.json"), "--out", None, streams=False)
    header = bench.run_header()  # (its start, as the kernel benchmark's date is)
    bench.warn_if_validating(header["device"])
    result = mode.run(**({} if args.repeats is None else {"repeats": args.repeats}))  # (else run()'s default)
    result = {"mode": name, "run": header, **(result if isinstance(result, dict) else {"rows": result})}
    text = (json.dumps(result, indent=1, default=str) + "\n").encode()
    write_whole(str(out_dir / f"bench_{name}.json"), lambda fh: fh.write(text), "--out")
    print(f"wrote {out_dir / f'bench_{name}.json'}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Benchmark table, JSON and (with matplotlib) a chart."""
    from pathlib import Path

    from vkrope.bench import kernel as bench

    name = "decode" if args.decode else "family" if args.family else "nd" if args.nd else \
        "overhead" if args.overhead else None
    given = [flag for flag, v in (("--quick", args.quick), ("--shapes", args.shapes), ("--storage", args.storage),
                                  ("--dtype", args.dtype), ("--plot", args.plot), ("--chart-from", args.chart_from))
             if v]
    if name and given:  # (the modes run their own shapes and draw no chart: these would be ignored)
        raise ValueError(f"{', '.join(given)}: the kernel benchmark's options; --{name} takes only --repeats and "
                         "--out")
    run_flags = [flag for flag, v in (("--quick", args.quick), ("--shapes", args.shapes), ("--storage", args.storage),
                                      ("--dtype", args.dtype), ("--repeats", args.repeats), ("--out", args.out))
                 if v is not None and v is not False]
    if args.chart_from and run_flags:  # (it runs nothing: these would be ignored)
        raise ValueError(f"{', '.join(run_flags)}: options of a run; --chart-from draws an earlier run's chart and "
                         "takes only --plot")
    in_out = not args.chart_from and bool(args.plot) and Path(args.plot).parent.resolve() == Path(
        args.out or BENCH_OUT).resolve()  # (a chart in the --out folder this run makes: checked once it is made)
    if args.plot:
        if not in_out:
            check_output_path(args.plot, "--plot", "bench.png", streams=False)
        if not args.plot.lower().endswith(".png"):
            raise ValueError(f"--plot: the chart is a PNG; give a file name ending in .png, not {args.plot!r}")
    if args.plot or args.chart_from:
        import_matplotlib()  # (matplotlib before the run: a chart asked for is not found missing after it)
    if args.chart_from:  # a chart from an earlier run's JSON (e.g. one from a machine without matplotlib)
        return _chart_from(bench, args.chart_from, args.plot)
    out_dir = Path(args.out or BENCH_OUT)
    made = _missing_folders(out_dir)
    try:
        return _bench_mode(name, args, bench, out_dir) if name else _bench_kernel(args, bench, out_dir, in_out)
    except BaseException:
        for folder in made:  # (a failed run leaves no empty folder it made, --out's parents included; one that
            with contextlib.suppress(OSError):  # wrote rows keeps them; rmdir removes only an empty folder, and
                os.rmdir(folder)  # the run's own error is what is said)
        raise


def _missing_folders(path: Any) -> list[Any]:
    """`path` and each of its parents that is not there (what `bench --out`'s mkdir makes), deepest first."""
    missing = []
    while not os.path.lexists(path) and path.parent != path:  # (lexists: False where the name cannot be looked up)
        missing.append(path)
        path = path.parent
    return missing


def _bench_kernel(args: argparse.Namespace, bench: Any, out_dir: Any, in_out: bool) -> int:
    """The kernel benchmark: its table, OUT/bench.json and (with matplotlib) a chart."""
    shapes = None if args.shapes is None else parse_shapes(args.shapes)
    _make_dir(out_dir)
    json_path = out_dir / "bench.json"
    check_output_path(str(json_path), "--out", None, streams=False)  # (before the run, not after)
    if not args.plot or in_out:
        check_output_path(args.plot or str(out_dir / "bench.png"), "--plot" if args.plot else "--out",
                          "bench.png" if args.plot else None, streams=False)
    storages = list(dict.fromkeys(args.storage or STORAGES))  # (once each)
    dtypes = list(dict.fromkeys(args.dtype or TENSOR_DTYPES.names))
    partial = out_dir / "bench.partial.json"  # (the rows so far, after each: bench.json is a complete run's only)
    check_output_path(str(partial), "--out", None, streams=False)
    partial.unlink(missing_ok=True)  # (an earlier cut run's)
    kept = f"{json_path} is as it was" if json_path.exists() else f"no {json_path} was written"
    try:
        for shape in shapes or []:  # (before the table's header: an x the OS refuses to map at all, past the
            np.empty(shape, np.float32)  # address space or its overcommit heuristic, fails here; mapped lazily, a
            # shape that passes costs nothing, and may still run out of memory later, as before)
        result = bench.run(quick=args.quick, shapes=shapes, repeats=args.repeats, storages=tuple(storages),
                           dtypes=tuple(dtypes), json_path=str(partial))
    except BaseException as exc:
        if partial.exists():
            print(f"the rows measured so far are in {partial} (\"complete\": false); {kept}", file=sys.stderr)
        if isinstance(exc, MemoryError):  # (numpy's "Unable to allocate 9.31 TiB" named no flag)
            raise ValueError(f"{'--shapes' if args.shapes else 'the default shapes (--quick is smaller)'}: a "
                             f"shape's arrays do not fit in this machine's memory ({exc})") from None
        raise
    try:
        bench.save_json(result, str(json_path))
    except ValueError as exc:  # (a full disk: the rows are in the partial JSON, saved after the last shape)
        raise ValueError(f"{exc}; the run's rows are in {partial} (\"complete\": false there), {kept}") from None
    partial.unlink(missing_ok=True)
    print(f"wrote {json_path}")
    plot_path = args.plot or str(out_dir / "bench.png")
    try:
        _chart(bench, result, plot_path, "--plot" if args.plot else "--out (its chart, bench.png)")
    except ImportError:
        if args.plot:
            raise
        print("no chart: matplotlib is not installed. pip install matplotlib (vkrope's bench extra: pip install "
              f"'.[bench]' in its clone), then python -m vkrope bench --chart-from {json_path}")
    return 0


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    """`bench --shapes`: comma-separated BxNxC shapes, C even. An empty value
    is refused (it ran the full default benchmark, up to 1 GiB per tensor)."""
    if not text.strip():
        raise ValueError("--shapes is empty; give comma-separated BxNxC shapes such as 1x256x256,8x4096x256, "
                         "or leave --shapes out for the default")
    try:
        shapes = [tuple(int(v) for v in s.lower().split("x")) for s in text.split(",")]
    except ValueError:
        raise ValueError(f"--shapes must look like 1x256x256,8x4096x256; got {text!r}") from None
    if any(len(sh) != 3 or min(sh) < 1 or sh[2] % 2 for sh in shapes):
        raise ValueError(f"--shapes: each shape is BxNxC of sizes >= 1 with C even; got {text!r}")
    for sh in shapes:  # (numpy's own "Maximum allowed dimension exceeded" came after the table's header)
        if math.prod(sh) * 4 > np.iinfo(np.intp).max:
            raise ValueError(f"--shapes: {'x'.join(map(str, sh))} is larger than any numpy array (a float32 x of "
                             f"B*N*C*4 bytes must be under 2^63); got {text!r}")
    return [(b, n, c) for b, n, c in shapes]


def _chart_from(bench: Any, path: str, plot: str | None) -> int:
    """`bench --chart-from`: the chart of an earlier run's JSON, read from a
    regular file of at most JSON_LIMIT bytes and checked value by value
    before anything is drawn."""
    with open_input(path, "--chart-from", "a `vkrope bench` JSON file") as fh:
        data = read_json_bytes(fh, path, "--chart-from")
    result = parse_json(data, path, "--chart-from")
    if isinstance(result, dict) and isinstance(result.get("mode"), str):
        raise ValueError(f"--chart-from: {path!r} is `vkrope bench --{result['mode']}`'s JSON, which has no chart: "
                         "only the kernel benchmark's bench.json has one")
    try:
        bench.check_result(result)
    except ValueError as exc:
        raise ValueError(f"--chart-from: {path!r} is not a `vkrope bench` JSON of this version: {exc}") from None
    from pathlib import Path  # noqa: PLC0415

    if plot is None and _descriptor_path(path):  # (`--chart-from /dev/stdin < run.json` wrote /dev/stdin.png)
        raise ValueError(f"--chart-from: {path!r} is no file in a folder to put the chart beside (a descriptor or "
                         "device path); give the chart's path with --plot FILE.png")
    target = plot or str(Path(path).with_suffix(".png"))
    what = "--plot" if plot else "--chart-from (its chart, beside it)"
    if os.path.exists(target) and os.path.samefile(target, path):
        raise ValueError(f"{what}: the chart's path {target!r} is the JSON read; give --plot another file")
    check_output_path(target, what, "bench.png", streams=False)
    _chart(bench, result, target, what)
    return 0


def _descriptor_path(path: str) -> bool:
    """Whether `path` is in /dev or /proc (/dev/stdin, /dev/fd/3, /proc/self/fd/0): a name for an open file, not
    the file's place, so no other file's path is made from it."""
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    return any(folder == top or folder.startswith(top + os.sep) for top in ("/dev", "/proc"))


def _chart(bench: Any, result: dict, path: str, what: str) -> None:
    """Draw the chart with matplotlib; ImportError with the way to get it; a failed write a ValueError naming
    `what` (the flag that chose `path`)."""
    bench.plot(result, path, what)
    print(f"wrote {path}")


def read_config(path: str) -> tuple[str, dict | None]:
    """(the file, its JSON) of `vkrope config PATH` (a config.json or its
    folder), read once; (the file, None) for a GGUF file (magic b"GGUF"),
    which from_gguf reads by its path (its header and the rope tensors only: not read here)."""
    file = os.path.join(path, "config.json") if os.path.isdir(path) else path
    head, cfg = read_json(file, "PATH", "a config.json or GGUF file")
    if head == b"GGUF":  # (by its magic: a JSON file holding null is None too)
        return file, None
    if not isinstance(cfg, dict):
        kind = {"list": "an array", "str": "a string", "NoneType": "null", "bool": "a boolean"}.get(type(cfg).__name__,
                                                                                               "a number")
        raise ValueError(f"PATH: {file!r} holds {kind}, not a JSON object (as a config.json does)")
    return file, cfg



def _gguf_types(file: str, n_ctx: int | None, part: str | None) -> list:
    """A GGUF file's RoPE of one part (None: its only one): one, or each layer type's where its sliding layers
    rotate otherwise."""
    from .models.gguf import NeedsLayerType, from_gguf  # noqa: PLC0415

    try:
        return [from_gguf(file, context_length=n_ctx, part=part)]
    except NeedsLayerType:
        return [from_gguf(file, layer_type=lt, context_length=n_ctx, part=part)
                for lt in ("full_attention", "sliding_attention")]


def _check_config_path(path: str, hub_id_hint: Callable[[str, str], str]) -> None:
    """A ValueError naming PATH where `path` leads to nothing: a symlink loop or a dangling symlink said as such,
    not as a missing file."""
    try:
        os.stat(path)
        return
    except OSError as exc:
        why = exc
    if why.errno == errno.ELOOP:
        raise ValueError(f"PATH: {path!r} is a symlink loop (its links lead back to themselves: {why.strerror})")
    if os.path.islink(path):
        raise ValueError(f"PATH: {path!r} is a symlink to {os.readlink(path)!r}, which does not exist")
    raise ValueError(f"PATH: no such file or folder {path!r}{hub_id_hint(path, 'the path of a downloaded config.json')}")


def cmd_config(args: argparse.Namespace) -> int:
    """Print the resolved RoPE of a config.json (or its folder) or a GGUF file:
    per layer type where the model has several."""
    from .models import ModelRope, from_gguf, from_hf, layer_types, parts  # noqa: PLC0415
    from .models.gguf import NeedsLayerType, NeedsPart  # noqa: PLC0415
    from .errors import NoRopeLayers  # noqa: PLC0415
    from .models.hf_load import hub_id_hint  # noqa: PLC0415

    path = args.path
    _check_config_path(path, hub_id_hint)
    if args.plot:
        check_output_path(args.plot, "--plot", "freqs.png", streams=False)
        if os.path.splitext(args.plot)[1].lower() not in (".png", ".svg", ".pdf"):
            raise ValueError(f"--plot: {args.plot!r} must end in .png, .svg or .pdf")
        import_matplotlib()  # (matplotlib before the file is read)
    if args.part == "":  # (the library's part="" is a one-way model's own; a flag given empty is a mistake)
        raise ValueError("--part: the part is empty; leave --part out, or name a part (vkrope config PATH lists a "
                         "model's parts)")
    file, cfg = read_config(path)
    if args.plot and os.path.exists(args.plot) and os.path.samefile(args.plot, file):  # (a link to it: replaced)
        raise ValueError(f"--plot: {args.plot!r} is the file read ({file!r}); give the chart another path")
    is_gguf = cfg is None
    if is_gguf and args.like is not None:  # (it was ignored)
        raise ValueError(f"--like: applies to config.json files; {file!r} is a GGUF file, read as its "
                         "general.architecture says (leave --like out)")
    if not is_gguf and args.context_length is not None:
        raise ValueError(f"--context-length: applies to GGUF files (llama.cpp's context); {file!r} is a config.json")
    ropes: list[ModelRope | None]  # (None: a layer type whose layers apply no RoPE)
    why = ""  # (the reading's own reason when no layer rotates)
    if is_gguf:
        n_ctx = args.context_length
        try:  # (imports gguf, or says how to get it)
            ropes = [from_gguf(file, context_length=n_ctx, part=args.part)]
        except NeedsPart as e:  # (layers that rotate two ways, one per part: each part, as config.json's)
            ropes = [r for p in e.parts for r in _gguf_types(file, n_ctx, p)]
        except NeedsLayerType:  # (sliding layers with another RoPE: each layer type)
            ropes = _gguf_types(file, n_ctx, args.part)
        except NoRopeLayers as e:  # (llama.cpp's graph rotates no layer: said below, with its reason)
            ropes, why = [], e.reason
    else:  # (the dict read once, not the path: from_hf would read the file again per layer type)
        # (a layer type whose layers rotate nothing is left out: the others' summaries list those layers)
        try:
            types = layer_types(cfg, like=args.like)
            asked = (args.part,) if args.part is not None else parts(cfg, like=args.like) or (None,)
            ropes = [from_hf(cfg, layer_type=lt, like=args.like, part=part) for part in asked
                     for lt in (types or (None,))]
        except NoRopeLayers as e:  # (no layer of the config rotates: said below, with its reason)
            ropes, why = [], e.reason
    result = [r.summary() for r in ropes if r is not None]
    if not result:
        print(f"{path} ({'GGUF' if is_gguf else 'config.json'}): no layer applies RoPE"
              + (f" ({why})" if why else "")
              + (f" (--plot: no chart written to {args.plot})" if args.plot else ""),
              file=sys.stderr if args.json else sys.stdout)
        if args.json:
            print("[]")  # (stdout stays JSON: no RoPE to list)
        return 0
    if args.plot:
        from .models.chart import plot  # noqa: PLC0415

        plot([r for r in ropes if r is not None], args.plot, f"{path}: {result[0].get('model', '')}")
        print(f"wrote {args.plot}", file=sys.stderr if args.json else sys.stdout)  # (--json: stdout is JSON)
    if args.json:
        print(json.dumps(result if len(result) > 1 else result[0], indent=1))
        return 0
    for r in result:
        title = f"layer type {r['layer_type']}" if "layer_type" in r else \
            "the layers with RoPE" if r.get("layers_without_rope") else "every layer"
        title = f"part {r['part']}, {title}" if "part" in r else title
        print(f"{path} ({'GGUF' if is_gguf else 'config.json'}), {title}:")
        for key, value in r.items():
            if key not in ("layer_type", "part") and value != "":
                if isinstance(value, list) and len(value) > 4:  # factor lists: their ends
                    ends = [f"{v:.6g}" if isinstance(v, float) else str(v) for v in (value[0], value[1], value[-1])]
                    value = f"[{ends[0]}, {ends[1]}, ..., {ends[2]}] ({len(value)} values)"
                print(f"  {key:34s} {value}")
    return 0


# The Python keywords each command's flags pass on, as its messages spell them: a name read as a word
# ("storage", "positions") only where it names the argument (message start, name=value); one no prose
# uses (num_heads) anywhere.
_FLAG_WORDS = {"bench": ("storage",), "config": ("like", "context_length", "part"),
               "apply": ("positions", "storage", "repeat", "exclude_last", "inverse"),
               "rotary-embedding": ("position_ids", "storage", "interleaved", "rotary_embedding_dim", "num_heads")}
_FLAG_NAMES_ANYWHERE = ("position_ids", "rotary_embedding_dim", "num_heads", "repeat", "exclude_last")
BENCH_OUT = "bench-out"  # bench's folder where --out is not given (given, it refuses --chart-from)
# The positional files of each command, as the API's messages name their arrays.
_FILE_WORDS = {"apply": {"x": "X.npy", "freqs": "FREQS.npy"},
               "rotary-embedding": {"x": "X.npy", "cos_cache": "COS.npy", "sin_cache": "SIN.npy"}}


def _word(match: re.Match, file: str) -> str:
    """`file` for an argument's name matched in a message; the match itself where it stands between two
    numbers (the sign of a product)."""
    text, start, end = match.string, match.start(), match.end()
    product = re.search(r"\d $", text[:start]) is not None and re.match(r" \d", text[end:]) is not None
    return match.group(0) if product else file


def cli_spelling(message: str, command: str) -> str:
    """A message of the Python API in the flags of `command`: like='llama'
    -> --like llama, num_heads -> --num-heads, a leading storage -> --storage."""
    message = re.sub(r" \(vkrope config --like [^)]*\)", "", message)  # (said for Python callers)
    message = re.sub(r"convert with \w+\.astype\(np\.(\w+)\)", r"save it as \1", message)  # (Python code)
    if command == "config":  # (from_gguf's argument is `path`, from_hf's `config`; the command's, PATH)
        message = re.sub(r"^(path|config)(?=: | \()", "PATH", message)  # (config (Arch, read as ...): too)
    for name, file in _FILE_WORDS.get(command, {}).items():  # (a word: not in x.shape, x[0], a path, a quote,
        # nor the x of a product, "1 x 16777218 rows")
        parts = re.split(r"""('[^']*'|"[^"]*")""", message)
        message = "".join(part if i % 2 else re.sub(rf"(?<![\w.'\[/-]){name}(?![\w.\[(/])", lambda m: _word(m, file),
                                                    part) for i, part in enumerate(parts))
    for name in _FLAG_WORDS.get(command, ()):
        flag = "--" + name.replace("_", "-")
        message = re.sub(rf"(?<![\w.-]){name}='([^']*)'", rf"{flag} \1", message)  # like='llama' -> --like llama
        message = re.sub(rf"(?<![\w.-]){name}=(?=[\s,;)]|$)", flag, message)  # 'without like=' -> 'without --like'
        message = re.sub(rf"(?<![\w.-]){name}=(?=[^\s,;)])", f"{flag} ", message)  # repeat=2 -> --repeat 2
        where = r"(?<![\w.'-])" if name in _FLAG_NAMES_ANYWHERE else r"^"
        message = re.sub(rf"{where}{name}(?=[\s:,)]|$)", flag, message)
    return message


class _Parser(argparse.ArgumentParser):
    """Usage errors print one line and exit 1, like every other error."""

    def error(self, message: str) -> NoReturn:
        self.exit(1, f"vkrope: error: {message} (see {self.prog} --help)\n")


def int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an int >= `minimum` (and <= `maximum`, where given)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum or (maximum is not None and value > maximum):
            what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
            most = "" if maximum is None else f" of at most {maximum}"
            raise argparse.ArgumentTypeError(f"must be {what}{most}; got {brief(text)}")  # (cut: 5000 digits stay out)
        return value
    return parse


positive_int = int_at_least(1)
MAX_REPEATS = 1000  # bench --repeats: a median of 1000 timings moves no further, and more ran for days
nonnegative_int = int_at_least(0)


def _version() -> str:
    from . import __version__  # (the package's, stated once)
    return __version__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `vkrope` command."""
    parser = _Parser(prog="vkrope", description="Rotary position embedding (RoPE) on a Vulkan device.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    parser.add_argument("--version", action="version", version=f"vkrope {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="EdgeTAM memory attention walk-through with errors and timings")
    p.set_defaults(func=cmd_demo)
    p = sub.add_parser("info", help="list Vulkan devices and the one vkrope picks")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_info)
    p = sub.add_parser("apply", help="rotate X.npy by FREQS.npy into OUT.npy")
    p.add_argument("x", metavar="X.npy", help="float32/float16/bfloat16 array [..., N, C] (bfloat16: as ml_dtypes saves it, '<V2')")
    p.add_argument("freqs", metavar="FREQS.npy", help="(cos, sin) pairs: Nf*C values, as [Nf, C] or [1, Nf, C/2, 2] "
                                                 "(any shape ending in [C] or [C/2, 2]), or complex [Nf, C/2]")
    p.add_argument("-o", "--output", required=True, metavar="OUT.npy", help="where to write the result")
    p.add_argument("--inverse", action="store_true", help="rotate by -theta")
    p.add_argument("--repeat", type=int, default=1, help="frames sharing the freqs rows (default 1)")
    p.add_argument("--exclude-last", type=int, default=0, help="trailing tokens passed through (default 0)")
    p.add_argument("--positions", metavar="P.npy", help="int array [N]: freqs row per token, -1 = pass through")
    p.add_argument("--storage", default="auto", help="auto, buffer or texture3d (default auto)")
    p.set_defaults(func=cmd_apply)
    p = sub.add_parser("rotary-embedding", help="ONNX RotaryEmbedding (opset 23) of X.npy into OUT.npy")
    p.add_argument("x", metavar="X.npy", help="float32/float16/bfloat16 [B, H, S, D], or [B, S, H*D] with --num-heads")
    p.add_argument("cos", metavar="COS.npy", help="cos cache [max_pos, rot/2] (with --position-ids) or [B, S, rot/2]")
    p.add_argument("sin", metavar="SIN.npy", help="sin cache, shaped like COS.npy")
    p.add_argument("-o", "--output", required=True, metavar="OUT.npy", help="where to write the result")
    p.add_argument("--position-ids", metavar="P.npy", help="int array [B, S]: cache row of each token")
    p.add_argument("--interleaved", action="store_true", help="pairs (2i, 2i+1) (default: rotate-half)")
    p.add_argument("--rotary-embedding-dim", type=nonnegative_int, default=0,
                   help="rotate the first ROT channels of each head (default 0: all)")
    p.add_argument("--num-heads", type=nonnegative_int, default=0, help="heads of a 3D x (required for 3D)")
    p.add_argument("--storage", default="auto", help="auto, buffer or texture3d (default auto)")
    p.set_defaults(func=cmd_rotary_embedding)

    p = sub.add_parser("config", help="the RoPE a config.json or GGUF file resolves to (type, dims, factor, layers)")
    p.add_argument("path", metavar="PATH", help="a config.json, the folder holding it, or a .gguf file")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--like", metavar="MODEL_TYPE",
                   help="read a config.json as this model type's code does (one not in the model table); "
                        "llama.cpp: a remote-code config as llama.cpp's converter reads it (config.json only, "
                        "not GGUF)")
    p.add_argument("--plot", metavar="FILE", help="also draw the inverse frequencies per pair column against "
                                                 "the unscaled ones (.png, .svg or .pdf; needs matplotlib)")
    p.add_argument("--context-length", type=positive_int, metavar="N", help="GGUF: llama.cpp's n_ctx per sequence")
    p.add_argument("--part", metavar="PART", help="a model whose layers rotate two ways (DeepSeek-V3.2: attention "
                                                  "or indexer): that one (default: each)")
    p.set_defaults(func=cmd_config)

    p = sub.add_parser("bench", help="benchmark against the device copy, numpy, torch and wgpu-py")
    p.add_argument("--quick", action="store_true", help="small sizes, fewer repeats (under a minute on 2 cores)")
    modes = p.add_mutually_exclusive_group()  # (one benchmark a run: the kernel's, or one of these)
    modes.add_argument("--family", action="store_true",
                   help="the table operators on Llama-like shapes, with onnxruntime's CPU op as the peer")
    modes.add_argument("--nd", action="store_true",
                   help="N-D axial RoPE: Flux- and Wan-sized calls, in-shader frequencies against the table path")
    modes.add_argument("--overhead", action="store_true",
                   help="host overhead: an empty submission (the floor) beside a tiny call of every operator, "
                        "the decode step at batch 1 and the numpy path, as ratios")
    modes.add_argument("--decode", action="store_true",
                   help="decode loops (advancing against fixed position), the fused step, fp8 against float16 caches, "
                        "the context shift, and the numpy path's cost over resident")
    p.add_argument("--shapes", help="comma-separated BxNxC shapes (default: EdgeTAM's up to 1 GiB)")
    p.add_argument("--repeats", type=int_at_least(1, MAX_REPEATS),
                   help=f"timed repeats per measurement, at most {MAX_REPEATS} (default: 9, or 5 with --quick; "
                        "--family, --decode, --overhead: 7; --nd: 5)")
    storages = list(STORAGES)
    dtypes = list(TENSOR_DTYPES.names)
    p.add_argument("--storage", nargs="+", choices=storages,
                   help=f"the kernel benchmark's storages (default: {' '.join(storages)})")
    p.add_argument("--dtype", nargs="+", choices=dtypes, help=f"the kernel benchmark's dtypes (default: {' '.join(dtypes)})")
    p.add_argument("--out", help=f"folder for bench.json and bench.png (default {BENCH_OUT})")
    p.add_argument("--plot", metavar="FILE.png", help="chart path (default OUT/bench.png; needs matplotlib)")
    p.add_argument("--chart-from", metavar="BENCH.json",
                   help="draw the chart of an earlier run's JSON (default path BENCH.png) and exit; needs matplotlib")
    p.set_defaults(func=cmd_bench)
    return _parse_and_run(parser, sub, argv)


def _parse_and_run(parser: argparse.ArgumentParser, sub: Any, argv: list[str] | None) -> int:
    """Parse `argv` (sys.argv's where None) and run its command; --debug or --version after the command, and
    arguments no parser took, refused by the parser whose --help lists what it takes (`sub`: the commands')."""
    given = sys.argv[1:] if argv is None else argv
    _refuse_late_flags(parser, set(sub.choices), given)
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_extra(parser, sub.choices[args.command], args.command, extra, given)
    return _command(args)


def _refuse_late_flags(parser: argparse.ArgumentParser, commands: set[str], given: list[str]) -> None:
    """--debug or --version after the command, said with where it goes, before argparse parses (the command's
    parser would first say that a positional it needs is missing: `vkrope apply --version`)."""
    at = next((i for i, a in enumerate(given) if a in commands), None)
    if at is None:
        return
    tail = given[at + 1:]
    tail = tail[:tail.index("--")] if "--" in tail else tail  # (past "--", a file may be named so)
    where = {"--debug": f"vkrope --debug {given[at]} ...", "--version": "vkrope --version"}
    late = [flag for flag in where if flag in tail]
    if late:
        parser.error(f"unrecognized arguments: {' '.join(late)}" + "".join(
            f"; {flag} is given before the command already: drop the one after it" if flag in given[:at]
            else f"; {flag} goes before the command: {where[flag]}" for flag in late))


def _refuse_extra(parser: argparse.ArgumentParser, command_parser: argparse.ArgumentParser, command: str,
                  extra: list[str], given: list[str]) -> NoReturn:
    """Arguments no parser took: said by the one whose --help lists what it takes (the command's, for one after
    it)."""
    before = extra[0] in given and given.index(extra[0]) < given.index(command)
    (parser if before else command_parser).error(f"unrecognized arguments: {' '.join(extra)}")


def _stdout_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (poll reports an error on its write end); a broken
    pipe elsewhere (a FIFO given as -o) is an error like any other."""
    import select

    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(event & select.POLLERR for _, event in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # (no poll, or a stdout without a descriptor)
        return False


def _quiet_interrupt(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    """sys.excepthook once Ctrl-C was said in one line: nothing more for it; any other exception as Python
    prints it."""
    if not issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, value, tb)


# The flags that name a file or folder, by their argparse names: an empty value (an unset shell variable) is
# refused, not read as absent (`bench --chart-from ""` ran the whole benchmark); -o has its own check, which
# suggests a name (check_output_path).
_PATH_FLAGS = {"x": "X.npy", "freqs": "FREQS.npy", "cos": "COS.npy", "sin": "SIN.npy", "positions": "--positions",
               "position_ids": "--position-ids", "plot": "--plot", "chart_from": "--chart-from", "out": "--out",
               "path": "PATH"}


def _refuse_empty_paths(args: argparse.Namespace) -> None:
    """A ValueError naming the first path flag given as an empty string."""
    for dest, flag in _PATH_FLAGS.items():
        if getattr(args, dest, None) == "":
            name = "folder" if dest == "out" else "file"
            raise ValueError(f"{flag}: the path is empty; give a {name} name (or leave {flag} out)"
                             if flag.startswith("-") else f"{flag}: the path is empty; give a {name} name")


def _command(args: argparse.Namespace) -> int:
    """The command's status: its errors as one clear line unless --debug; a reader that stopped reading
    (`vkrope demo | head -1`) ends it quietly, as SIGPIPE ends other commands (status 141); Ctrl-C one line
    too, the process then ended by SIGINT as Python ends it (a shell's status 130)."""
    _WRITTEN.clear()
    try:
        _refuse_empty_paths(args)
        return int(args.func(args))
    except KeyboardInterrupt:
        if _WRITTEN:  # (after -o was written and said: the command is done, its status 0)
            return 0
        if not args.debug:
            print("vkrope: interrupted", file=sys.stderr)
            sys.excepthook = _quiet_interrupt
        raise  # (uncaught, Python ends the process by SIGINT after its cleanup: a shell loop running it stops)
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_gone():
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (else the exit's flush fails again)
            return 128 + 13
        if args.debug:
            raise
        print(f"vkrope: error: {type(exc).__name__}: {cli_spelling(str(exc), args.command)}", file=sys.stderr)
        return 1


def entry() -> NoReturn:
    """The `vkrope` command's process (console script and `python -m vkrope`): main()'s status as its exit
    status; once -o is written the command is done, and a Ctrl-C until the process ends changes nothing."""
    global _OWNS_PROCESS
    _OWNS_PROCESS = True
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # (a TextIOWrapper's: a path that is not UTF-8
    if reconfigure is not None:  # printed escaped, as stderr prints it, not a UnicodeEncodeError)
        with contextlib.suppress(ValueError):
            reconfigure(errors="backslashreplace")
    sys.exit(main())


if __name__ == "__main__":
    entry()

"""The `vkrope` command (also `python -m vkrope`): info, apply, rotary-embedding, demo, bench."""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import os
import signal
import sys
from typing import Any, Callable, NoReturn

import numpy as np

from .charts import import_matplotlib
from .files import open_input, parse_json, read_json, read_json_bytes, write_whole

from .arguments import STORAGES
from .words import brief
from .runtime.dtypes import TENSOR_DTYPES
from .cli import npy_files
from .cli.demo import cmd_demo, cmd_info
from .cli.npy_files import check_output_path, load_npy, quoted, save
from .cli.spelling import cli_spelling


def cmd_apply(args: argparse.Namespace) -> int:
    """Rotate X.npy by FREQS.npy into OUT.npy."""
    import vkrope

    check_output_path(args.output, "-o/--output")
    x = load_npy(args.x, "X.npy")
    freqs = load_npy(args.freqs, "FREQS.npy")
    positions = load_npy(args.positions, "--positions") if args.positions else None
    y = vkrope.apply(x, freqs, inverse=args.inverse, repeat=args.repeat, exclude_last=args.exclude_last,
                     positions=positions, storage=args.storage)
    return save(args.output, y)


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
    return save(args.output, y)


def _make_dir(path: Any) -> None:
    """`bench --out`'s folder, made where missing; a ValueError naming --out otherwise."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        why = exc.strerror or exc
        if isinstance(exc, FileExistsError):  # ("File exists" said nothing of what is there)
            why = ("a symlink loop" if _loops(path) else "a dangling symlink") if os.path.islink(path) else \
                "a file, not a folder"
        raise ValueError(f"--out: cannot use {str(path)!r} as the output folder ({why})") from None


def _loops(path: Any) -> bool:
    """Whether the symlink `path` leads back to itself (os.stat: ELOOP), not to nothing."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


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
    print(f"wrote {quoted(str(out_dir / f'bench_{name}.json'))}")
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
    print(f"wrote {quoted(str(json_path))}")
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
    print(f"wrote {quoted(str(path))}")


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
    if why.errno not in (errno.ENOENT, errno.ENOTDIR):  # (a folder without search permission, a name too long)
        raise ValueError(f"PATH: cannot read {path!r} ({why.strerror or why})")
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
        print(f"wrote {quoted(args.plot)}", file=sys.stderr if args.json else sys.stdout)  # (--json: stdout is JSON)
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


BENCH_OUT = "bench-out"  # bench's folder where --out is not given (given, it refuses --chart-from)


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
                        "--family, --decode, --overhead: 7; --nd: 5); at most 3 for a shape of 256 MiB or more")
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


def _refuse_nameless_paths(args: argparse.Namespace) -> None:
    """A ValueError naming the first path flag given as an empty string, or as '-'."""
    for dest, flag in _PATH_FLAGS.items():
        name = "folder" if dest == "out" else "file"
        if getattr(args, dest, None) == "":
            raise ValueError(f"{flag}: the path is empty; give a {name} name (or leave {flag} out)"
                             if flag.startswith("-") else f"{flag}: the path is empty; give a {name} name")
        if getattr(args, dest, None) == "-":  # (the convention of other commands: not stdin here)
            raise npy_files.dash_refused(flag, name)


def _command(args: argparse.Namespace) -> int:
    """The command's status: its errors as one clear line unless --debug; a reader that stopped reading
    (`vkrope demo | head -1`) ends it quietly, as SIGPIPE ends other commands (status 141); Ctrl-C one line
    too, the process then ended by SIGINT as Python ends it (a shell's status 130)."""
    npy_files.WRITTEN.clear()
    try:
        _refuse_nameless_paths(args)
        return int(args.func(args))
    except KeyboardInterrupt:
        if npy_files.WRITTEN:  # (after -o was written and said: the command is done, its status 0)
            return 0
        if not args.debug:
            print("vkrope: interrupted", file=sys.stderr)
            sys.excepthook = _quiet_interrupt
        npy_files.ending()  # (a second Ctrl-C would interrupt the exit's cleanup with a traceback)
        raise  # (uncaught, Python ends the process by SIGINT after its cleanup: a shell loop running it stops)
    except Exception as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_gone():
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (else the exit's flush fails again)
            return 128 + 13
        if args.debug:
            raise
        print(f"vkrope: error: {type(exc).__name__}: {cli_spelling(str(exc), args.command)}", file=sys.stderr)
        return 1


class _Terminated(BaseException):
    """SIGTERM or SIGHUP in the command's process, raised so that what the command was doing is undone as a
    Ctrl-C undoes it (a half-written -o's temporary file removed), then the process ended by that signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: Any) -> None:
    npy_files.ending()  # (once: no second signal interrupts the cleanup)
    raise _Terminated(signum)


def entry() -> NoReturn:
    """The `vkrope` command's process (console script and `python -m vkrope`): main()'s status as its exit
    status; once -o is written the command is done, and a Ctrl-C until the process ends changes nothing.
    SIGTERM and SIGHUP (where not ignored: nohup) end it as a Ctrl-C does, by that signal."""
    npy_files.OWNS_PROCESS = True
    reconfigure = getattr(sys.stdout, "reconfigure", None)  # (a TextIOWrapper's: a path that is not UTF-8
    if reconfigure is not None:  # printed escaped, as stderr prints it, not a UnicodeEncodeError)
        with contextlib.suppress(ValueError):
            reconfigure(errors="backslashreplace")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is signal.SIG_DFL:
            signal.signal(signum, _terminate)
    try:
        status = main()
        npy_files.ending()
    except _Terminated as exc:  # (what it was doing undone on the way here: ended now as the signal ends it)
        if npy_files.WRITTEN:  # (after -o was written and said, as a Ctrl-C then: the command is done)
            sys.exit(0)
        print(f"vkrope: ended by {signal.Signals(exc.signum).name}", file=sys.stderr)
        for stream in (sys.stdout, sys.stderr):  # (the kill skips Python's own flush at exit)
            with contextlib.suppress(Exception):
                stream.flush()
        signal.signal(exc.signum, signal.SIG_DFL)
        os.kill(os.getpid(), exc.signum)
        status = 128 + exc.signum  # (not reached where the signal ends the process)
    sys.exit(status)


if __name__ == "__main__":
    entry()

"""The command's arrays on disk: .npy inputs read as numpy saves them (never a pickle; checked before
they are read; large ones memory-mapped) and outputs written whole or as a stream (/dev/stdout, a FIFO), each
failure a ValueError naming the flag or file."""

from __future__ import annotations

import errno
import math
import os
import signal
import sys
import tokenize
from typing import Any, BinaryIO

import numpy as np

from ..files import check_writable, not_regular, open_input, write_whole
from ..runtime.dtypes import ml_dtype


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
    as they are, `save`); with `streams` False a stream too (a chart or a
    benchmark JSON is written as a file: a FIFO would block, or refuse the
    seeks of the image writer)."""
    if not path:  # (its real path is the working folder: the rename would aim at that)
        raise ValueError(f"{what}: the path is empty; give a file name" + (f" such as {example!r}" if example else ""))
    if path == "-":  # (the convention of other commands, not a file named '-' made quietly)
        raise dash_refused(what, "file", stdout=streams)
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


def save(path: str, y: np.ndarray) -> int:
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
                then=lambda: _written(_wrote(path, y)))  # (a Ctrl-C then: dropped)
    ending()  # (the command is done: a signal from here to the process's end, its teardown included, would
    return 0  # report an interruption with -o replaced)


OWNS_PROCESS = False  # entry() runs the command as its own process (not a caller's main(), a test's)


def ending() -> None:
    """The command's process is ending (its work done, or interrupted and said): Ctrl-C, SIGTERM and SIGHUP
    ignored from here, where it owns its process, so that none interrupts the teardown (the default device's
    close in atexit) with a traceback; Python still ends the process by SIGINT after an interruption. Ignored by
    a handler that does nothing, not SIG_IGN: a signal already pending would then raise OSError ("ignored due to
    race condition")."""
    if OWNS_PROCESS:
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, _ignored)


def _ignored(signum: int, frame: Any) -> None:
    """A signal the ending command takes no notice of."""


def dash_refused(flag: str, kind: str, stdout: bool = False) -> ValueError:
    """The error of a path given as '-', which other commands read as stdin or stdout: vkrope reads and writes
    files (`kind`: "file" or "folder"; `stdout`: the flag writes a stream, /dev/stdout)."""
    there = ", or /dev/stdout to write there" if stdout else ""
    return ValueError(f"{flag}: '-' is a {kind} name here, not stdin or stdout: vkrope reads and writes files (./- "
                      f"for a {kind} of that name{there})")


def _wrote(path: str, y: np.ndarray) -> str:
    """The line saying that `y` was written to `path`."""
    return f"wrote {quoted(path)}: shape {y.shape}, dtype {y.dtype}"


def quoted(path: str) -> str:
    """A path as the "wrote" line prints it: as given where it is one plain line, else as Python writes it
    (a newline in a name would split the line)."""
    return path if path.isprintable() else repr(path)


WRITTEN: list[str] = []  # what the command wrote: after it, an interruption is no failure (__main__._command)


def _written(line: str) -> None:
    """Say that the output was written, and remember it."""
    WRITTEN.append(line)
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
    print(_wrote(path, y), file=sys.stderr)

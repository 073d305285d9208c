"""Reading and writing the files a user names (the command line's inputs, a
config.json; its results, charts and benchmark JSON): regular files only
read, opened without blocking and refused by type before a byte is read (a
FIFO would block, /dev/zero would be read for ever; a file that says it is
empty, as /proc's do, read without waiting), JSON of bounded size
parsed once; files written whole or not at all (`write_whole`); every
failure a ValueError naming the argument."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import signal
import stat
import threading
from typing import Any, BinaryIO, Callable, Iterator

_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(mode: int) -> str | None:
    """What a file of `mode` is when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _NOT_REGULAR if test(mode)), "not a regular file")


def _cannot_read(what: str, path: str, exc: OSError) -> ValueError:
    """The ValueError of a read the system refused (EIO, EACCES, ...), naming the argument and the path."""
    return ValueError(f"{what}: cannot read {path!r} ({exc.strerror or exc})")


def open_input(path: str, what: str, expected: str) -> BinaryIO:
    """`path` opened for reading when it is a regular file; else a ValueError
    naming the argument `what` before a byte is read: a FIFO is opened without
    blocking (O_NONBLOCK) and refused, /dev/zero is never read (it would be
    read forever), a pipe (/dev/stdin) could not be read twice. A regular
    file of size 0 (a /proc file says so, and a read of /proc/kmsg waits for
    ever) is read now, without waiting, into memory: a ValueError where it
    has nothing to give yet."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise ValueError(f"{what}: no such file {path!r}") from None
    except OSError as exc:
        try:  # (a socket does not open: "No such device or address" hid what it is)
            kind = not_regular(os.stat(path).st_mode)
        except OSError:
            kind = None
        if kind is not None:
            raise ValueError(f"{what}: {path!r} is {kind}, not {expected}") from None
        raise _cannot_read(what, path, exc) from None
    raw = None
    try:  # (fd is closed here until a file object owns it, and by that file object after: once)
        st = os.fstat(fd)
        kind = not_regular(st.st_mode)
        if kind is not None:
            why = "" if kind == "a directory" else " (vkrope reads regular files only: save the data to a file first)"
            raise ValueError(f"{what}: {path!r} is {kind}, not {expected}{why}")
        if nonblock and st.st_size == 0:  # (a /proc file says 0 bytes; /proc/kmsg's read would wait for ever)
            raw = os.fdopen(fd, "rb", buffering=0)
        elif nonblock:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    if raw is not None:
        with raw:
            return io.BytesIO(_read_now(raw, path, what, expected))
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_now(raw: Any, path: str, what: str, expected: str) -> bytes:
    """What a non-blocking file holds now (at most JSON_LIMIT bytes and one more): up to its end, or to where a
    read would wait; a ValueError where the first would."""
    chunks: list[bytes] = []
    size = 0
    while size <= JSON_LIMIT:
        try:
            chunk = raw.read(1 << 20)
        except BlockingIOError:
            chunk = None
        except OSError as exc:  # (/proc/self/mem: EIO)
            raise _cannot_read(what, path, exc) from None
        if chunk is None and chunks:
            break
        if chunk is None:
            raise ValueError(f"{what}: {path!r} has nothing to read now (a kernel file whose read waits, as "
                             f"/proc/kmsg), not {expected}")
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


JSON_LIMIT = 64 << 20  # bytes: far more than a config.json or a `vkrope bench` JSON holds


def read_json(path: str, what: str, expected: str) -> tuple[bytes, Any]:
    """(the first 4 bytes, the JSON) of the regular file at `path`; the JSON
    is None where those bytes are b"GGUF" (a GGUF file, read elsewhere by
    its path)."""
    with open_input(path, what, expected) as fh:
        try:
            head = fh.read(4)
        except OSError as exc:  # (a disk's EIO, a file of the kernel's that refuses reads)
            raise _cannot_read(what, path, exc) from None
        if head == b"GGUF":
            return head, None
        if path.lower().endswith(".gguf"):  # (named as one: said so, not that it is not JSON)
            raise ValueError(f"{what}: {path!r} is not a GGUF file (it does not start with GGUF's magic)")
        data = head + read_json_bytes(fh, path, what, len(head))
    return head, parse_json(data, path, what)


def read_json_bytes(fh: BinaryIO, path: str, what: str, done: int = 0) -> bytes:
    """The rest of an open JSON file (`done` bytes of it read already): one over JSON_LIMIT by its size is refused
    unread (a /proc file, read when opened, by what it held); one that grew past it while read is refused by
    parse_json."""
    size = fh.seek(0, os.SEEK_END)  # (a real file's size, or what a /proc file held: open_input)
    if size > JSON_LIMIT:
        raise ValueError(f"{what}: {path!r} is over {JSON_LIMIT >> 20} MiB, larger than any JSON file vkrope reads")
    fh.seek(done)
    try:
        return fh.read(JSON_LIMIT + 1 - done)
    except OSError as exc:
        raise _cannot_read(what, path, exc) from None


def parse_json(data: bytes, path: str, what: str) -> Any:
    """The JSON in `data` (UTF-8, at most JSON_LIMIT bytes: more is refused
    unread), read from `path`; a ValueError naming `what` otherwise."""
    if len(data) > JSON_LIMIT:
        raise ValueError(f"{what}: {path!r} is over {JSON_LIMIT >> 20} MiB, larger than any JSON file vkrope reads")
    try:
        return json.loads(data.decode("utf-8"))
    except RecursionError:
        raise ValueError(f"{what}: {path!r} nests too deeply to read") from None
    except ValueError as exc:  # (JSONDecodeError, UnicodeDecodeError, an integer of over 4300 digits)
        raise ValueError(f"{what}: {path!r} is not JSON in UTF-8 ({exc})") from None


def write_whole(path: str, write: Callable[[BinaryIO], object], what: str,
                then: Callable[[], object] | None = None) -> None:
    """Write the regular file `path` (new or replaced) whole or not at all: `write` fills a new file in the folder
    of what `path` names (a symlink keeps pointing at its file), which is then renamed over it, so an
    interruption (Ctrl-C mid-benchmark) or a failed write (a full disk) leaves the old file as it was and no
    temporary one; an existing file keeps its mode. An OSError of the write is a ValueError naming `what`.
    `then` (the caller's last word, saying it was written) runs right after the rename, its errors its own; with
    it, a Ctrl-C during the rename and `then` is dropped (the file is written), so a caller never reports an
    interruption with the file replaced; one before interrupts the write and leaves the old file."""
    target = os.path.realpath(path)
    try:
        st_mode = os.stat(target).st_mode
    except FileNotFoundError:
        st_mode = None
    if st_mode is not None:
        _refuse_not_regular(st_mode, path, what)
    old_mode = None if st_mode is None else stat.S_IMODE(st_mode)
    if old_mode is not None:
        _check_open_for_writing(target, path, what)
    tmp = _new_name(os.path.dirname(target))
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # (the umask applies, as to open())
        with os.fdopen(fd, "wb") as fh:
            write(fh)
        if old_mode is not None:
            os.chmod(tmp, old_mode)
        with _signals_held() if then is not None else contextlib.nullcontext():
            os.replace(tmp, target)
            tmp = ""  # (written: what follows is the caller's, its errors its own)
            if then is not None:
                then()
    except BaseException as exc:
        if not tmp:
            raise
        with _signals_held():  # (a second signal must not leave the temporary file)
            if os.path.lexists(tmp):
                os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ValueError(f"{what}: cannot write {path!r} ({exc.strerror or exc})") from None
        raise


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """In the main thread, the signals that would stop what is within held off: a Ctrl-C (SIGINT, where Python's
    own handler is set) dropped, what it would have stopped being done (a file renamed into place, a temporary
    one removed); SIGTERM and SIGHUP, where a Python handler is set (the command's), delivered again after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {s: h for s in (signal.SIGTERM, signal.SIGHUP) if callable(h := signal.getsignal(s))}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        held[signal.SIGINT] = signal.default_int_handler
    came: list[int] = []
    for s in held:
        signal.signal(s, lambda signum, frame: came.append(signum))
    try:
        yield
    finally:
        for s, handler in held.items():
            signal.signal(s, handler)
        for signum in dict.fromkeys(came):
            if signum != signal.SIGINT:
                signal.raise_signal(signum)


def _new_name(folder: str) -> str:
    """A temporary file's path in `folder` that no other process picks (a short name: the target's own may be
    near the file system's 255)."""
    return os.path.join(folder, f".vkrope.{os.getpid()}.{os.urandom(4).hex()}.tmp")


def _refuse_not_regular(mode: int, path: str, what: str) -> None:
    """A ValueError naming `what` where `path` (of `mode`) is not a regular file: a FIFO, a device (renaming a new
    file over one is no write to it)."""
    kind = not_regular(mode)
    if kind is not None:
        raise ValueError(f"{what}: {path!r} is {kind}, not a regular file (the whole-file write replaces regular "
                         "files only)")


def _check_open_for_writing(target: str, path: str, what: str) -> None:
    """An existing regular file `target` (what `path` names) opens for writing (not truncated: os.access would
    hide a read-only file system's EROFS behind "Permission denied", and root's bypass); else a ValueError
    naming `what` with the system's reason."""
    try:  # (non-blocking: a FIFO nobody reads fails at once, ENXIO, where a plain open waits for a reader)
        os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
    except OSError as exc:
        raise ValueError(f"{what}: cannot write {path!r} ({exc.strerror or exc})") from None


def _check_replaceable(target: str, folder: str, path: str, what: str) -> None:
    """A ValueError where the folder is sticky (/tmp's mode 1777) and the file is another user's: the rename
    that replaces it is refused there (unless the folder is ours, or we are root: CAP_FOWNER), though the file
    itself may be writable."""
    held, own = os.stat(folder), os.stat(target)
    me = os.geteuid()
    if held.st_mode & stat.S_ISVTX and me not in (0, held.st_uid, own.st_uid):
        raise ValueError(f"{what}: cannot replace {path!r}: it is another user's file (uid {own.st_uid}) in a sticky "
                         "folder, whose files only their owner may replace; give another name")


def check_writable(path: str, what: str) -> None:
    """`write_whole` can write `path` (new or regular): the folder of what it names takes a new file, probed by
    making and removing one, and an existing file is writable; else a ValueError naming `what`, before any
    work (a read-only file system, /proc, a symlink into a missing folder)."""
    target = os.path.realpath(path)
    folder = os.path.dirname(target)
    if not os.path.isdir(folder):
        raise ValueError(f"{what}: {path!r} links into the directory {folder!r}, which does not exist")
    if os.path.exists(target):
        _refuse_not_regular(os.stat(target).st_mode, path, what)
        _check_open_for_writing(target, path, what)
        _check_replaceable(target, folder, path, what)
    probe = _new_name(folder)
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError as exc:
        why = "its folder takes no new file" if exc.errno == errno.ENOENT else exc.strerror or exc
        raise ValueError(f"{what}: cannot write {path!r} ({why})") from None
    try:
        os.unlink(probe)
    except OSError as exc:  # (an append-only folder: the probe stays, and so would a write's temporary file)
        raise ValueError(f"{what}: cannot write {path!r} (a new file in its folder cannot be removed: "
                         f"{exc.strerror or exc}; {probe!r} is left there)") from None


__all__ = ["JSON_LIMIT", "check_writable", "not_regular", "open_input", "parse_json", "read_json", "read_json_bytes",
           "write_whole"]

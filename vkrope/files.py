"""Reading the files a user names (the command line's inputs, a
config.json): regular files only, opened without blocking and refused by
type before a byte is read (a FIFO would block, /dev/zero would be read for
ever), and JSON of bounded size parsed once, every failure a ValueError
naming the argument."""

from __future__ import annotations

import json
import os
import stat
from typing import Any, BinaryIO

_NOT_REGULAR = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular(mode: int) -> str | None:
    """What a file of `mode` is when it is not a regular file (None when it is)."""
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _NOT_REGULAR if test(mode)), "not a regular file")


def open_input(path: str, what: str, expected: str) -> BinaryIO:
    """`path` opened for reading when it is a regular file; else a ValueError
    naming the argument `what` before a byte is read: a FIFO is opened without
    blocking (O_NONBLOCK) and refused, /dev/zero is never read (it would be
    read forever), a pipe (/dev/stdin) could not be read twice."""
    nonblock = getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, os.O_RDONLY | nonblock | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise ValueError(f"{what}: no such file {path!r}") from None
    except OSError as exc:
        raise ValueError(f"{what}: cannot read {path!r} ({exc.strerror or exc})") from None
    try:
        kind = not_regular(os.fstat(fd).st_mode)
        if kind is not None:
            why = "" if kind == "a directory" else " (vkrope reads regular files only: save the data to a file first)"
            raise ValueError(f"{what}: {path!r} is {kind}, not {expected}{why}")
        if nonblock:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


JSON_LIMIT = 64 << 20  # bytes: far more than a config.json or a `vkrope bench` JSON holds


def read_json(path: str, what: str, expected: str) -> tuple[bytes, Any]:
    """(the first 4 bytes, the JSON) of the regular file at `path`; the JSON
    is None where those bytes are b"GGUF" (a GGUF file, read elsewhere by
    its path)."""
    with open_input(path, what, expected) as fh:
        head = fh.read(4)
        if head == b"GGUF":
            return head, None
        data = head + read_json_bytes(fh, path, what, len(head))
    return head, parse_json(data, path, what)


def read_json_bytes(fh: BinaryIO, path: str, what: str, done: int = 0) -> bytes:
    """The rest of an open JSON file (`done` bytes of it read already): one over JSON_LIMIT by its size is refused
    unread; one that grew past it while read is refused by parse_json."""
    if os.fstat(fh.fileno()).st_size > JSON_LIMIT:
        raise ValueError(f"{what}: {path!r} is over {JSON_LIMIT >> 20} MiB, larger than any JSON file vkrope reads")
    return fh.read(JSON_LIMIT + 1 - done)


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


__all__ = ["JSON_LIMIT", "not_regular", "open_input", "parse_json", "read_json", "read_json_bytes"]

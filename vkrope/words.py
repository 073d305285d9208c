"""The words errors describe a value with: `brief` (a value, cut to a width),
`typed` (with its type's name); neither raises, whatever the value (an int
past Python's digit limit included). A leaf: every layer's messages use it."""

from __future__ import annotations

from typing import Any


def _unprintable(value: Any) -> str | None:
    """Words for a value str() cannot print (an int past Python's digit limit, alone or inside a container);
    None for any other."""
    try:
        str(value)
    except ValueError:
        if isinstance(value, int):
            return f"{'a negative' if value < 0 else 'an'} int of {value.bit_length()} bits"
        return f"a {type(value).__name__} holding an int too large to print"
    return None


def brief(value: Any, width: int = 24) -> str:
    """A value for an error message: a string quoted, one longer than `width` characters cut (its length
    said); never raises (_unprintable's words for a value str() cannot print)."""
    unprintable = _unprintable(value)
    if unprintable is not None:
        return unprintable
    text = repr(value) if isinstance(value, str) else str(value)
    n = len(value) if isinstance(value, str) else len(text)
    return text if len(text) <= width else f"{text[:width // 2]}... ({n} characters)"


def typed(value: Any) -> str:
    """A value with its type's name, for a TypeError ("int 5", "str 'x'"); _unprintable's words alone where
    str() cannot print it ("an int of 16610 bits")."""
    return _unprintable(value) or f"{type(value).__name__} {brief(value)}"

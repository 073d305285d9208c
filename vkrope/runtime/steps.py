"""A submission described as data: launches (one compute dispatch each),
buffer copies and buffer <-> image copies, with every resource range tagged
read or write.

A tuple of steps is hashable and is its own cache key: the recorder
(runtime/recorder.py) derives the barriers between steps from the tags, and
the engine caches the recorded command buffer on the tuple itself, so no
field can be forgotten from a key. Resources enter keys by their serial
(unique per created buffer or image), never by the Python object.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Union

READ = "read"
WRITE = "write"
UPDATE = "update"  # read, then written (a kernel's in-place tensor): orders like a write, waits like a read


@dataclass(frozen=True)
class Arg:
    """A range of one resource that a step reads or writes. `size` 0 means
    the whole resource (images always)."""

    resource: Any = field(compare=False, repr=False)
    serial: int
    offset: int = 0
    size: int = 0
    access: str = READ

    @property
    def writes(self) -> bool:
        """Whether the step writes this range (write or update)."""
        return self.access != READ

    @property
    def end(self) -> int:
        """One past the last byte touched (whole resource: unbounded)."""
        return self.offset + self.size if self.size else 1 << 62

    def overlaps(self, other: "Arg") -> bool:
        """Whether the two ranges touch a common byte of one resource."""
        return self.serial == other.serial and self.offset < other.end and other.offset < self.end


def arg(resource: Any, offset: int = 0, size: int = 0, access: str = READ) -> Arg:
    """An `Arg` over `resource` (a Buffer or Image3D of the vk layer)."""
    return Arg(resource, resource.serial, offset, size, access)


@dataclass(frozen=True)
class Launch:
    """One compute dispatch: the kernel variant (by manifest name), its
    specialization constants and push constants by name (each checked
    against the kernel's grid when recorded), one `Arg` per binding in
    binding order, and the workgroup grid."""

    kernel: str
    spec: tuple[tuple[str, int], ...]
    push: tuple[tuple[str, int], ...]
    args: tuple[Arg, ...]
    grid: tuple[int, int, int]

    def __post_init__(self) -> None:
        # Each constant named once, and kept in name order: the same launch
        # written with its constants in another order is the same key.
        for what, pairs in (("specialization", self.spec), ("push", self.push)):
            names = [name for name, _ in pairs]
            if len(set(names)) != len(names):
                raise AssertionError(f"{self.kernel}: a {what} constant is given twice: {names}")
        object.__setattr__(self, "spec", tuple(sorted(self.spec)))
        object.__setattr__(self, "push", tuple(sorted(self.push)))
        # Hashed once (a replayed submission looks its recording up by its steps on every call), over the
        # fields equality compares: the key stays what the dataclass says it is.
        object.__setattr__(self, "_hash", hash(tuple(getattr(self, f.name) for f in fields(self) if f.compare)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined, no-any-return]


@dataclass(frozen=True)
class Copy:
    """vkCmdCopyBuffer of `dst.size` bytes from `src` to `dst`."""

    src: Arg
    dst: Arg


@dataclass(frozen=True)
class ImageCopy:
    """A whole-image copy between tightly packed texels in `buffer` and `image`."""

    buffer: Arg
    image: Arg
    to_image: bool


Step = Union[Launch, Copy, ImageCopy]


def accesses(step: Step) -> tuple[Arg, ...]:
    """The resource ranges `step` touches."""
    if isinstance(step, Launch):
        return step.args
    if isinstance(step, Copy):
        return (step.src, step.dst)
    return (step.buffer, step.image)

"""The 3D images numpy texture3d tensors are staged through (`work_image`):
kept per role (a job slot and a tensor name), the WORK_IMAGES most recently
used of each, so that a loop over two shapes (SAM2's queries and memory
keys) replays its recordings; the older ones are given back at the device's
allocation count (`release_spare`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..vk.resources import Image3D

# Work images kept per role: a loop alternating two shapes replays.
WORK_IMAGES = 2


def work_image(rt: Any, role: str, extent: tuple[int, int, int], dtype: np.dtype) -> Image3D:
    """The 3D image for `role` of this extent and format, the role's WORK_IMAGES most recently used kept
    (with one, calls alternating two shapes re-made it each time, and every recording went with it)."""
    rt.drain()
    fmt = rt.image_format(dtype)
    key = f"{role}|{extent}|{fmt}"
    image = rt.work.pop(key, None)  # (put back last: the dict's order is the use order)
    if image is None:
        mine = [k for k in rt.work if k.startswith(role + "|")]
        if len(mine) >= WORK_IMAGES:
            _give_back(rt, mine[0])
        image = rt.new_image(extent, fmt)
    rt.work[key] = image
    return image


def release_spare(rt: Any) -> None:
    """Give back every work image but each role's most recently used (the one a call in progress may be
    using: a call takes each role once): at the device's allocation count, a cache gives way first."""
    roles: dict[str, list[str]] = {}
    for key in rt.work:
        if "|" in key:
            roles.setdefault(key.split("|", 1)[0], []).append(key)
    for keys in roles.values():
        for key in keys[:-1]:
            _give_back(rt, key)


def _give_back(rt: Any, key: str) -> None:
    rt.forget_recordings()  # (any may bind the image given back)
    rt.ctx.release(rt.work.pop(key))

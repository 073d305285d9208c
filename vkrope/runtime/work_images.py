"""The 3D images numpy texture3d tensors are staged through (`work_image`):
kept per role (a job slot and a tensor name), the WORK_IMAGES most recently
used of each, so that a loop over two shapes (SAM2's queries and memory
keys) replays its recordings; those the call in progress does not bind are
given back at the device's allocation count (`release_idle`)."""

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
    image = rt.work.get(key)
    if image is not None:  # (put back last, the dict's order being the use order; no call between the two)
        del rt.work[key]
        rt.work[key] = image
    else:
        mine = [k for k in rt.work if k.startswith(role + "|")]
        if len(mine) >= WORK_IMAGES:
            rt.release_work(mine[0])  # (its recordings go with it: any may bind the image)
        image = rt.new_image(extent, fmt)
        rt.work[key] = image
    rt.images_in_call.add(key)
    return image


def release_idle(rt: Any) -> None:
    """Give back every work image the call in progress does not bind (every one outside a call): at the
    device's allocation count a cache gives way first, a role's image the call replaces included."""
    for key in [k for k in rt.work if "|" in k and not (rt.in_call and k in rt.images_in_call)]:
        rt.release_work(key)


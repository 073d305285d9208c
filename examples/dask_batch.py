"""A batch larger than one call: dask.array map_blocks over [B, N, C], each
worker process owning its own vkrope Device (the default device of that
process). Needs the optional `dask` extra: pip install ".[dask]" (from a clone).

    python examples/dask_batch.py            # local process pool
"""

from __future__ import annotations

import numpy as np

import vkrope


def rotate_block(block: np.ndarray, freqs: np.ndarray) -> np.ndarray:
    # Runs in a worker process: vkrope.apply creates that process's own device.
    return vkrope.apply(block, freqs)


def main(scheduler: str = "processes") -> None:
    import dask
    import dask.array as da

    b, n, c = 64, 1024, 128
    freqs = vkrope.axial_freqs(c, 32, 32)  # [1024, 128]
    x = da.random.default_rng(3).standard_normal((b, n, c), chunks=(8, n, c)).astype(np.float32)
    y = x.map_blocks(rotate_block, freqs, dtype=np.float32)
    with dask.config.set(scheduler=scheduler, num_workers=2):
        xs, ys = dask.compute(x, y)
    err = float(np.abs(ys - vkrope.apply_reference(xs, freqs)).max())
    print(f"{b} x {n} x {c} in {len(x.chunks[0])} blocks on {scheduler}: max |error| {err:.2e}")
    assert err < 1e-5
    print("OK")


if __name__ == "__main__":
    main()

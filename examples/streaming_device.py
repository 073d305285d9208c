"""A streaming pipeline that keeps tensors on the device: each step uploads
one new frame's keys, rotates the queries and every layer's keys in one
queue submission (apply_many), and only downloads what it needs.

    python examples/streaming_device.py
"""

from __future__ import annotations

import numpy as np

import vkrope


def main() -> None:
    rng = np.random.default_rng(2)
    side, dim, layers, steps = 16, 64, 3, 4
    freqs = vkrope.axial_freqs(dim, side, side)
    with vkrope.Device() as dev:
        print(f"device: {dev.name}")
        memory: list[list[vkrope.DeviceArray]] = [[] for _ in range(layers)]
        for step in range(steps):
            q = rng.standard_normal((1, side * side, dim)).astype(np.float32)
            new_keys = [dev.asarray(rng.standard_normal((1, side * side, dim)).astype(np.float32))
                        for _ in range(layers)]
            calls = [(dev.asarray(q), freqs)] + [(k, freqs) for k in new_keys]
            q_rot, *k_rot = dev.apply_many(calls)  # one submission, results stay on the device
            for layer, k in enumerate(k_rot):
                memory[layer].append(k)
            # Check this step against the reference (downloads only for the check).
            assert np.abs(q_rot.get() - vkrope.apply_reference(q, freqs)).max() < 1e-5
            for k_in, k_out in zip(new_keys, k_rot):
                assert np.abs(k_out.get() - vkrope.apply_reference(k_in.get(), freqs)).max() < 1e-5
            print(f"step {step}: rotated q and {layers} layers' keys; memory holds "
                  f"{sum(len(m) for m in memory)} device arrays")
        # Undo one layer's rotation on the device to show chaining without host round trips.
        back = dev.apply(memory[0][0], freqs, inverse=True)
        assert back.shape == (1, side * side, dim)
    print("OK")


if __name__ == "__main__":
    main()

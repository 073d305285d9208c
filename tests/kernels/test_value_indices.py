"""Value indices past 2^32: a call holds up to 2^33 - 4 values (docs/errors.md), so a row block of a large call
starts past 2^32, which no uint32 push constant holds."""

from __future__ import annotations

import dataclasses

import numpy as np

from oracle_family import onnx_rotary_embedding
from vkrope.ops import onnx


def test_a_row_block_starting_past_2_32_values(device):
    """A call past 2^32 values crashed packing its x_base (struct.error) after its first row blocks were
    written. A block whose rows start at value 2^32 or later pushes its start modulo 2^32, which the shader's
    uint arithmetic (r * C + v - x_base, a place in a binding smaller than 2^32) subtracts exactly: here the
    row block of batch item 1, head 0 of [2, 2^23 + 1, 4, 128] x (its rows from value 2^32 + 512), run as
    the runtime runs one, without the 16 GiB around it."""
    rng = np.random.default_rng(32)
    b, s, d, heads = 2, 4, 128, 2**23 + 1
    x = rng.standard_normal((b, 1, s, d)).astype(np.float32)
    cos, sin = rng.uniform(-1, 1, (2, 16, d // 2)).astype(np.float32)
    pos = np.array([[5, 9, 2, 7], [1, 3, 8, 0]])
    call = onnx.rotary_embedding(x, cos, sin, pos)
    req = call.requests[0]
    block = dataclasses.replace(req, x=x[1, 0], out=None, batch_rows=heads * s, row_offset=heads * s)
    assert block.row_offset * d == 2**32 + s * d  # (not 2^32 itself, which a start of 0 would also give)
    out = np.full((s, d), np.nan, np.float32)
    with device._lock:
        device._run_group(call.kernel, [block], [{"out": out}])
    want = onnx_rotary_embedding(x, cos, sin, pos)[1, 0]
    assert np.allclose(out, want, rtol=0, atol=4 * 2.0**-23 * np.abs(x).max()), np.abs(out - want).max()

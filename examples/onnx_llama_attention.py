"""A Llama-style attention block as an ONNX graph, with vkrope supplying
RotaryEmbedding: no torch anywhere.

The graph (built with onnx.helper, opset 23): x [B, S, hidden] -> q, k, v
projections -> RotaryEmbedding on q and k (3D form, num_heads, position_ids
into [max_pos, D/2] cos / sin caches, rotate-half) -> grouped-query
attention with a causal mask -> output projection. It runs twice:

- onnx.reference.ReferenceEvaluator with `new_ops`: vkrope's
  RotaryEmbedding (on the Vulkan device) replaces the reference one;
- onnxruntime's CPU execution provider, all of it.

The outputs must agree; a float64 numpy pipeline checks both.

    pip install ".[onnx]"  (from a clone); python examples/onnx_llama_attention.py
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun

import vkrope

B, S, HQ, HK, D, MAX_POS, BASE = 2, 12, 4, 2, 32, 64, 10000.0
HIDDEN = HQ * D


class RotaryEmbedding(OpRun):
    """RotaryEmbedding-23 for the reference evaluator, computed by vkrope
    (the evaluator matches new_ops by class name and domain)."""

    op_domain = ""
    calls = 0

    def _run(self, X, cos_cache, sin_cache, position_ids=None, interleaved=0, rotary_embedding_dim=0,
             num_heads=0):  # noqa: N803  (ONNX names)
        RotaryEmbedding.calls += 1
        return (vkrope.rotary_embedding(X, cos_cache, sin_cache, position_ids, interleaved=interleaved,
                                        rotary_embedding_dim=rotary_embedding_dim, num_heads=num_heads),)


def caches() -> tuple[np.ndarray, np.ndarray]:
    """Llama's cos / sin caches [MAX_POS, D/2] (rotate-half form)."""
    inv = 1.0 / BASE ** (np.arange(0, D, 2, dtype=np.float64) / D)
    angles = np.outer(np.arange(MAX_POS), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def model(weights: dict[str, np.ndarray]) -> onnx.ModelProto:
    """The attention block as a graph; the weights and caches are initializers."""
    n = helper.make_node
    mask = np.triu(np.full((S, S), -np.inf, np.float32), 1)
    consts = {
        "shape_q": np.array([B, S, HQ, D], np.int64), "shape_kv": np.array([B, S, HK, D], np.int64),
        "shape_out": np.array([B, S, HIDDEN], np.int64), "scale": np.array(1 / np.sqrt(D), np.float32),
        "mask": mask,
        "shape_kv5": np.array([B, HK, 1, S, D], np.int64), "shape_kvq": np.array([B, HQ, S, D], np.int64),
    }
    nodes = [
        n("MatMul", ["x", "wq"], ["q2"]), n("MatMul", ["x", "wk"], ["k2"]), n("MatMul", ["x", "wv"], ["v2"]),
        n("RotaryEmbedding", ["q2", "cos", "sin", "position_ids"], ["q3"], num_heads=HQ),
        n("RotaryEmbedding", ["k2", "cos", "sin", "position_ids"], ["k3"], num_heads=HK),
        n("Reshape", ["q3", "shape_q"], ["q4"]), n("Transpose", ["q4"], ["q"], perm=[0, 2, 1, 3]),
        n("Reshape", ["k3", "shape_kv"], ["k4"]), n("Transpose", ["k4"], ["k5"], perm=[0, 2, 1, 3]),
        n("Reshape", ["v2", "shape_kv"], ["v4"]), n("Transpose", ["v4"], ["v5"], perm=[0, 2, 1, 3]),
        # grouped-query attention: each key / value head serves HQ / HK query heads
        n("Reshape", ["k5", "shape_kv5"], ["k6"]), n("Expand", ["k6", "expand_shape"], ["k7"]),
        n("Reshape", ["k7", "shape_kvq"], ["k"]),
        n("Reshape", ["v5", "shape_kv5"], ["v6"]), n("Expand", ["v6", "expand_shape"], ["v7"]),
        n("Reshape", ["v7", "shape_kvq"], ["v"]),
        n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), n("MatMul", ["q", "kt"], ["s0"]),
        n("Mul", ["s0", "scale"], ["s1"]), n("Add", ["s1", "mask"], ["s2"]), n("Softmax", ["s2"], ["p"], axis=-1),
        n("MatMul", ["p", "v"], ["o"]), n("Transpose", ["o"], ["o2"], perm=[0, 2, 1, 3]),
        n("Reshape", ["o2", "shape_out"], ["o3"]), n("MatMul", ["o3", "wo"], ["y"]),
    ]
    consts["expand_shape"] = np.array([B, HK, HQ // HK, S, D], np.int64)
    inits = [numpy_helper.from_array(v, name) for name, v in {**weights, **consts}.items()]
    graph = helper.make_graph(
        nodes, "llama_attention",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, HIDDEN]),
         helper.make_tensor_value_info("position_ids", TensorProto.INT64, [B, S])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, HIDDEN])], inits,
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 23)])
    m.ir_version = 10
    onnx.checker.check_model(m)
    return m


def numpy_float64(x, pos, w) -> np.ndarray:
    """The same block in float64 numpy, written out (rotate-half RoPE)."""
    x = x.astype(np.float64)
    inv = 1.0 / BASE ** (np.arange(0, D, 2) / D)
    ang = pos[..., None] * inv  # [B, S, D/2]
    c, s = np.cos(ang)[:, :, None], np.sin(ang)[:, :, None]

    def rope(t, heads):
        t = t.reshape(B, S, heads, D)
        a, b = t[..., : D // 2], t[..., D // 2:]
        return np.concatenate([a * c - b * s, b * c + a * s], -1).transpose(0, 2, 1, 3)

    q, k = rope(x @ w["wq"], HQ), rope(x @ w["wk"], HK)
    v = (x @ w["wv"]).reshape(B, S, HK, D).transpose(0, 2, 1, 3)
    k, v = np.repeat(k, HQ // HK, axis=1), np.repeat(v, HQ // HK, axis=1)
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(D) + np.triu(np.full((S, S), -np.inf), 1)
    p = np.exp(sc - sc.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(B, S, HIDDEN) @ w["wo"]


def main() -> None:
    rng = np.random.default_rng(0)
    w = {name: (rng.standard_normal(shape) / np.sqrt(HIDDEN)).astype(np.float32) for name, shape in
         (("wq", (HIDDEN, HQ * D)), ("wk", (HIDDEN, HK * D)), ("wv", (HIDDEN, HK * D)), ("wo", (HQ * D, HIDDEN)))}
    cos, sin = caches()
    m = model({**w, "cos": cos, "sin": sin})
    x = rng.standard_normal((B, S, HIDDEN)).astype(np.float32)
    pos = np.stack([np.arange(S), np.arange(7, 7 + S)]).astype(np.int64)  # the second row continues a context
    feeds = {"x": x, "position_ids": pos}
    y_vk = ReferenceEvaluator(m, new_ops=[RotaryEmbedding]).run(None, feeds)[0]
    import onnxruntime as ort  # noqa: PLC0415  (optional)

    y_ort = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)[0]
    ref = numpy_float64(x, pos, {k: v.astype(np.float64) for k, v in w.items()})
    scale = np.abs(ref).max()
    err_vk, err_ort = np.abs(y_vk - ref).max() / scale, np.abs(y_ort - ref).max() / scale
    err_pair = np.abs(y_vk - y_ort).max() / scale
    print(f"device: {vkrope.default_device().name}")
    print(f"attention block [B={B}, S={S}, Hq={HQ}, Hk={HK}, D={D}], RotaryEmbedding by vkrope in "
          f"onnx.reference and by onnxruntime")
    print(f"max error / max |y| against float64 numpy: vkrope+reference {err_vk:.2e}, onnxruntime {err_ort:.2e}; "
          f"between them {err_pair:.2e}")
    assert RotaryEmbedding.calls == 2, "the evaluator did not use vkrope's RotaryEmbedding"
    assert err_vk < 1e-5 and err_ort < 1e-5 and err_pair < 1e-5
    print("OK")


if __name__ == "__main__":
    main()

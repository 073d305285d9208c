"""Cross-checks of the family oracles (tests/oracles/oracle_family.py), each against a
second formulation written or run independently of it:

* ONNX RotaryEmbedding-23: onnx.reference.ReferenceEvaluator on a one-node
  model; onnxruntime's CPU kernels, both the ai.onnx op and the
  com.microsoft contrib op through the documented mapping; onnxruntime
  running the schema's function body (the ``_expanded`` conformance models);
  every ONNX backend conformance case (tests/onnx_cases.py).
* ExecuTorch apply_rotary_emb: a complex-number product, the repository's
  existing SAM2 oracle (tests/oracles/oracle.py), the ONNX oracle with interleaved=1.
* Hugging Face rotate-half: a scalar loop over the HF formula, a complex
  product over (i, i + rot/2) pairs, the ONNX oracle with interleaved=0 and
  rotary_embedding_dim.

No test here runs vkrope; the onnx / onnxruntime ones skip when the package
is missing.
"""

from __future__ import annotations

import itertools
import zlib

import ml_dtypes
import numpy as np
import pytest

from oracle import complex_oracle
from oracle_family import (
    et_apply_rotary_emb,
    et_apply_rotary_emb_hf,
    hf_apply_rotary_emb,
    onnx_rotary_embedding,
    rotate_half,
)

EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)


def rng_for(*key) -> np.random.Generator:
    """A generator seeded from the key's text (hash() varies per process)."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def angles_table(rows: int, half: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """cos / sin of arbitrary angles, [rows, half] float32."""
    theta = rng.uniform(-50, 50, (rows, half))
    return np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)


def assert_close_to_oracle(y, ref, bound, ulps=2.0, eps=EPS32):
    """|y - ref| <= ulps * eps * bound, bound an upper limit on the terms'
    magnitude (max |x| * max(|cos| + |sin|)): a float32 (or float16)
    implementation rounds two products and a sum."""
    y = np.asarray(y, dtype=np.float64)
    assert y.shape == ref.shape
    err = np.abs(y - ref).max() if y.size else 0.0
    assert err <= ulps * eps * bound, f"max error {err:.3g} > {ulps} * eps * {bound:.3g}"
    return err


def term_bound(x, *tables) -> float:
    xm = float(np.abs(np.asarray(x, np.float64)).max(initial=0.0))
    tm = sum(float(np.abs(np.asarray(t, np.float64)).max(initial=0.0)) for t in tables)
    return max(xm * max(tm, 1.0), 1e-30)


# ---------------------------------------------------------------------------
# ONNX: the case grid and one-node models
# ---------------------------------------------------------------------------

# (name, B, H, S, D, rot (0 = all), interleaved, rank, with position_ids)
ONNX_GRID = [
    (f"{rank}d-{'il' if il else 'half'}-{'rot' + str(rot) if rot else 'full'}-{'pid' if pid else 'nopid'}-b{b}h{h}s{s}d{d}",
     b, h, s, d, rot, il, rank, pid)
    for (b, h, s, d), rot, il, rank, pid in itertools.product(
        [(2, 3, 5, 8), (1, 2, 1, 16)], [0, 4], [0, 1], [4, 3], [True, False]
    )
] + [
    # odd head size, even partial rotary (the reference allows it)
    ("4d-half-rot4-pid-oddhead", 1, 2, 3, 7, 4, 0, 4, True),
    ("3d-il-rot6-pid-oddhead", 2, 2, 3, 9, 6, 1, 3, True),
    # one channel pair, and rotary over all but two channels
    ("4d-il-rot2-pid", 1, 1, 4, 2, 0, 1, 4, True),
    ("4d-half-rot14-nopid", 2, 2, 2, 16, 14, 0, 4, False),
]


def onnx_case(b, h, s, d, rot, il, rank, pid, seed_name, max_pos=37, dtype=np.float32):
    """Inputs and attributes for one grid entry."""
    rng = rng_for("onnx", seed_name)
    half = (rot or d) // 2
    x4 = rng.standard_normal((b, h, s, d)).astype(dtype)
    X = x4 if rank == 4 else np.ascontiguousarray(x4.transpose(0, 2, 1, 3)).reshape(b, s, h * d)
    attrs = {}
    if il:
        attrs["interleaved"] = 1
    if rot:
        attrs["rotary_embedding_dim"] = rot
    if rank == 3:
        attrs["num_heads"] = h
    if pid:
        cos, sin = angles_table(max_pos, half, rng)
        inputs = {"X": X, "cos_cache": cos.astype(dtype), "sin_cache": sin.astype(dtype),
                  "position_ids": rng.integers(0, max_pos, (b, s)).astype(np.int64)}
    else:
        cos, sin = angles_table(b * s, half, rng)
        inputs = {"X": X, "cos_cache": cos.reshape(b, s, half).astype(dtype),
                  "sin_cache": sin.reshape(b, s, half).astype(dtype)}
    return inputs, attrs


def call_oracle(inputs, attrs, **kw):
    return onnx_rotary_embedding(inputs["X"], inputs["cos_cache"], inputs["sin_cache"],
                                 inputs.get("position_ids"), **attrs, **kw)


def one_node_model(inputs, attrs, *, domain="", order=("X", "cos_cache", "sin_cache", "position_ids")):
    onnx = pytest.importorskip("onnx")
    from onnx import helper

    names = [n for n in order if n in inputs]
    node = helper.make_node("RotaryEmbedding", names, ["Y"], domain=domain, **attrs)
    elem = helper.np_dtype_to_tensor_dtype(inputs["X"].dtype)
    vis = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(inputs[n].dtype), inputs[n].shape)
           for n in names]
    graph = helper.make_graph([node], "rope", vis, [helper.make_tensor_value_info("Y", elem, inputs["X"].shape)])
    opsets = [helper.make_opsetid("", 23)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    if not domain:
        onnx.checker.check_model(model, full_check=True)
    return model, {n: inputs[n] for n in names}


def run_reference(model, feeds):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)[0]


def run_ort(model, feeds):
    ort = pytest.importorskip("onnxruntime")
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # the _expanded models carry unused initializers: warnings, not errors
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


# ---------------------------------------------------------------------------
# ONNX oracle vs onnx.reference and onnxruntime
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["reference", "onnxruntime"])
@pytest.mark.parametrize("case", ONNX_GRID, ids=[g[0] for g in ONNX_GRID])
def test_onnx_oracle_matches_the_engines(case, engine):
    """The oracle against onnx's ReferenceEvaluator and onnxruntime on every case of the grid."""
    pytest.importorskip("onnx")
    if engine == "onnxruntime":
        pytest.importorskip("onnxruntime")
    name, *shape = case
    inputs, attrs = onnx_case(*shape, name)
    ref = call_oracle(inputs, attrs)
    y = (run_reference if engine == "reference" else run_ort)(*one_node_model(inputs, attrs))
    assert y.dtype == np.float32
    assert_close_to_oracle(y, ref, term_bound(inputs["X"], inputs["cos_cache"], inputs["sin_cache"]))


@pytest.mark.parametrize("engine", ["reference", "onnxruntime"])
@pytest.mark.parametrize("name", ["4d-half-full", "3d-il-rot4"])
def test_onnx_oracle_float16(engine, name):
    """float16 X and caches: the engines compute in (or round through)
    float16; the oracle, fed the same float16 values, stays within a few
    float16 ulps of their results."""
    pytest.importorskip("onnx")
    shape = (2, 3, 5, 8, 0, 0, 4, True) if name == "4d-half-full" else (2, 3, 5, 8, 4, 1, 3, True)
    inputs, attrs = onnx_case(*shape, name, dtype=np.float16)
    ref = call_oracle(inputs, attrs)
    model, feeds = one_node_model(inputs, attrs)
    y = run_reference(model, feeds) if engine == "reference" else run_ort(model, feeds)
    assert y.dtype == np.float16
    assert_close_to_oracle(y, ref, term_bound(inputs["X"], inputs["cos_cache"], inputs["sin_cache"]),
                           ulps=4, eps=EPS16)


@pytest.mark.parametrize("name", ["4d-half-full", "3d-il-rot4"])
def test_onnx_oracle_bfloat16(name):
    """bfloat16 X and caches: onnx.reference computes with ml_dtypes'
    bfloat16 arithmetic (each product and sum rounded to bfloat16); the
    oracle, fed the same values, is within a few bfloat16 ulps of the terms.
    (onnxruntime 1.2x has no bfloat16 kernel for the op's Mul: not compared.)"""
    pytest.importorskip("onnx")
    bf16 = np.dtype(ml_dtypes.bfloat16)
    shape = (2, 3, 5, 8, 0, 0, 4, True) if name == "4d-half-full" else (2, 3, 5, 8, 4, 1, 3, True)
    inputs, attrs = onnx_case(*shape, name, dtype=bf16)
    ref = call_oracle(inputs, attrs)
    y = run_reference(*one_node_model(inputs, attrs))
    assert y.dtype == bf16
    assert_close_to_oracle(y.astype(np.float64), ref, term_bound(inputs["X"], inputs["cos_cache"], inputs["sin_cache"]),
                           ulps=4, eps=2.0**-7)


def test_onnx_out_of_range_positions():
    """Past the cache: the oracle raises, as onnxruntime does and the
    reference does for >= max_pos. A negative position: onnxruntime raises;
    the reference wraps it numpy-style, which the oracle reproduces on
    request."""
    pytest.importorskip("onnx")
    inputs, attrs = onnx_case(1, 2, 3, 8, 0, 0, 4, True, "oob", max_pos=10)
    for bad in (10, -1):
        inputs["position_ids"] = np.array([[0, 1, bad]], np.int64)
        with pytest.raises(IndexError):
            call_oracle(inputs, attrs)
        model, feeds = one_node_model(inputs, attrs)
        ort = pytest.importorskip("onnxruntime")
        with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="out of range"):
            run_ort(model, feeds)
        if bad >= 10:
            with pytest.raises(IndexError):
                run_reference(model, feeds)
        else:
            y = run_reference(model, feeds)
            ref = call_oracle(inputs, attrs, wrap_negative_positions=True)
            assert_close_to_oracle(y, ref, term_bound(inputs["X"], inputs["cos_cache"], inputs["sin_cache"]))


# ---------------------------------------------------------------------------
# ONNX oracle vs the com.microsoft contrib op (onnxruntime)
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("rank", [4, 3])
@pytest.mark.parametrize("il", [0, 1])
@pytest.mark.parametrize("rot", [0, 4])
def test_onnx_oracle_matches_contrib_op_with_position_ids(rank, il, rot):
    """com.microsoft RotaryEmbedding(input, position_ids, cos_cache, sin_cache)
    with position_ids [B, S] and 2D caches is ai.onnx RotaryEmbedding with
    its inputs reordered. Its num_heads rule differs: required whenever
    rotary_embedding_dim is set (4D input included; the kernel constructor
    refuses otherwise), not needed for 3D input with full rotary (head_size
    is then 2 * cos_cache.shape[1])."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    name = f"ms-{rank}-{il}-{rot}"
    inputs, attrs = onnx_case(2, 3, 5, 8, rot, il, rank, True, name)
    ref = call_oracle(inputs, attrs)
    ms_attrs = dict(attrs)
    if rot:
        ms_attrs["num_heads"] = 3
    else:
        ms_attrs.pop("num_heads", None)
    model, feeds = one_node_model(inputs, ms_attrs, domain="com.microsoft",
                                  order=("X", "position_ids", "cos_cache", "sin_cache"))
    y = run_ort(model, feeds)
    assert_close_to_oracle(y, ref, term_bound(inputs["X"], inputs["cos_cache"], inputs["sin_cache"]))


@pytest.mark.parametrize("rank", [4, 3])
def test_contrib_op_offset_form_is_consecutive_positions(rank):
    """The contrib op's position_ids of shape [1] is a start offset p: token s
    of every batch row uses cache row p + s, i.e. ai.onnx position_ids
    p + arange(S) broadcast to [B, S]."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    inputs, attrs = onnx_case(2, 3, 5, 8, 0, 0, rank, True, f"offset-{rank}")
    start = 7
    inputs["position_ids"] = np.broadcast_to(start + np.arange(5), (2, 5)).astype(np.int64)
    ref = call_oracle(inputs, attrs)
    ms_attrs = {k: v for k, v in attrs.items() if k != "num_heads"}
    feeds_in = dict(inputs, position_ids=np.array([start], np.int64))
    model, feeds = one_node_model(feeds_in, ms_attrs, domain="com.microsoft",
                                  order=("X", "position_ids", "cos_cache", "sin_cache"))
    y = run_ort(model, feeds)
    assert_close_to_oracle(y, ref, term_bound(inputs["X"], inputs["cos_cache"], inputs["sin_cache"]))


# ---------------------------------------------------------------------------
# ONNX conformance cases
# ---------------------------------------------------------------------------


def _conformance_params():
    try:
        import onnx  # noqa: F401
    except ImportError:
        return [pytest.param(None, marks=pytest.mark.skip(reason="onnx not installed"), id="no-onnx")]
    from onnx_cases import onnx_rotary_cases

    return [pytest.param(c, id=c.name) for c in onnx_rotary_cases()]


CONFORMANCE = _conformance_params()


def test_conformance_case_inventory():
    """The 8 generator cases and their 8 _expanded twins, all float32."""
    pytest.importorskip("onnx")
    from onnx_cases import onnx_rotary_cases

    names = sorted(c.name for c in onnx_rotary_cases())
    base = sorted(n for n in names if not n.endswith("_expanded"))
    assert base == sorted([
        "test_rotary_embedding", "test_rotary_embedding_3d_input", "test_rotary_embedding_interleaved",
        "test_rotary_embedding_with_rotary_dim", "test_rotary_embedding_with_interleaved_rotary_dim",
        "test_rotary_embedding_no_position_ids", "test_rotary_embedding_no_position_ids_interleaved",
        "test_rotary_embedding_no_position_ids_rotary_dim",
    ]), names
    assert sorted(n.removesuffix("_expanded") for n in names if n.endswith("_expanded")) == base
    for c in onnx_rotary_cases():
        assert c.expected.dtype == np.float32
        assert all(v.dtype == (np.int64 if k == "position_ids" else np.float32) for k, v in c.inputs.items())


@pytest.mark.parametrize("case", CONFORMANCE)
def test_onnx_oracle_reproduces_conformance_case(case):
    """Each expected output (float32, from onnx's reference implementation)
    is within 2 float32 ulps of max|X| * (max|cos| + max|sin|) of the oracle.
    The ONNX backend runner itself allows rtol 1e-3, atol 1e-7."""
    i = case.inputs
    ref = onnx_rotary_embedding(i["X"], i["cos_cache"], i["sin_cache"], i.get("position_ids"), **case.attributes)
    assert case.expected.dtype == np.float32 and case.expected.shape == ref.shape
    assert_close_to_oracle(case.expected, ref, term_bound(i["X"], i["cos_cache"], i["sin_cache"]))


@pytest.mark.parametrize("case", [c for c in CONFORMANCE if c.id.endswith("_expanded")])
def test_onnxruntime_runs_function_body_like_the_oracle(case):
    """The _expanded models are the schema's function body (Gather, Split,
    Mul, Concat, ...), a formulation independent of both the reference
    python and the oracle; onnxruntime executes them."""
    pytest.importorskip("onnxruntime")
    from onnx_cases import onnx_rotary_case_model

    i = case.inputs
    ref = onnx_rotary_embedding(i["X"], i["cos_cache"], i["sin_cache"], i.get("position_ids"), **case.attributes)
    model = onnx_rotary_case_model(case.name)
    assert len(model.graph.node) > 1 and all(n.op_type != "RotaryEmbedding" for n in model.graph.node)
    order = [k for k in ("X", "cos_cache", "sin_cache", "position_ids") if k in i]
    feeds = {g.name: i[k] for g, k in zip(model.graph.input, order)}
    y = run_ort(model, feeds)
    assert_close_to_oracle(y, ref, term_bound(i["X"], i["cos_cache"], i["sin_cache"]))


# ---------------------------------------------------------------------------
# ONNX oracle: argument handling
# ---------------------------------------------------------------------------


def test_onnx_oracle_rejects_bad_arguments():
    x4 = np.zeros((1, 2, 3, 8), np.float32)
    c = np.zeros((10, 4), np.float32)
    pid = np.zeros((1, 3), np.int64)
    with pytest.raises(ValueError, match="3D X needs num_heads"):
        onnx_rotary_embedding(np.zeros((1, 3, 16)), c, c, pid)
    with pytest.raises(ValueError, match="multiple of num_heads"):
        onnx_rotary_embedding(np.zeros((1, 3, 16)), c, c, pid, num_heads=3)
    with pytest.raises(ValueError, match="must be even"):
        onnx_rotary_embedding(x4, np.zeros((10, 1)), np.zeros((10, 1)), pid, rotary_embedding_dim=3)
    with pytest.raises(ValueError, match="outside"):
        onnx_rotary_embedding(x4, np.zeros((10, 5)), np.zeros((10, 5)), pid, rotary_embedding_dim=10)
    with pytest.raises(ValueError, match=r"\[max_pos, 2\]"):
        onnx_rotary_embedding(x4, c, c, pid, rotary_embedding_dim=4)
    with pytest.raises(ValueError, match=r"\[B, S, rot/2\]"):
        onnx_rotary_embedding(x4, c, c)
    with pytest.raises(ValueError, match=r"position_ids must be \[B, S\]"):
        onnx_rotary_embedding(x4, c, c, np.zeros((3,), np.int64))
    with pytest.raises(TypeError, match="integer"):
        onnx_rotary_embedding(x4, c, c, pid.astype(np.float32))
    with pytest.raises(ValueError, match="3D or 4D"):
        onnx_rotary_embedding(np.zeros((3, 8)), c, c)


def test_onnx_oracle_hand_example():
    """One head, two tokens, D = 4, worked by hand: interleaved pairs
    (0,1), (2,3); rotate-half pairs (0,2), (1,3); position 0 is the
    identity row."""
    x = np.array([[[[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0]]]])  # [1, 1, 2, 4]
    cos = np.array([[1.0, 1.0], [0.0, -1.0]])
    sin = np.array([[0.0, 0.0], [1.0, 0.0]])
    pid = np.array([[0, 1]])
    y_il = onnx_rotary_embedding(x, cos, sin, pid, interleaved=1)
    # pair (1,2) by 90 degrees -> (-2, 1); pair (3,4) by 180 -> (-3, -4)
    np.testing.assert_array_equal(y_il[0, 0], [[1, 2, 3, 4], [-2, 1, -3, -4]])
    y_half = onnx_rotary_embedding(x, cos, sin, pid)
    # pair (x0, x2) = (1, 3) by 90 -> (-3, 1); pair (x1, x3) = (2, 4) by 180 -> (-2, -4)
    np.testing.assert_array_equal(y_half[0, 0], [[1, 2, 3, 4], [-3, -2, 1, -4]])
    y_part = onnx_rotary_embedding(x, cos[:, :1], sin[:, :1], pid, rotary_embedding_dim=2)
    np.testing.assert_array_equal(y_part[0, 0], [[1, 2, 3, 4], [-2, 1, 3, 4]])


# ---------------------------------------------------------------------------
# ExecuTorch apply_rotary_emb (llama, interleaved)
# ---------------------------------------------------------------------------

ET_SHAPES = [  # (B, S, Hq, Hk, D)
    (1, 1, 4, 2, 32),  # the Vulkan pattern's own export shape (decode step, GQA)
    (1, 7, 8, 8, 64),
    (2, 5, 6, 2, 16),
    (1, 3, 2, 1, 2),
]


def et_inputs(b, s, hq, hk, d, key, dtype=np.float32):
    rng = rng_for("et", key)
    xq = rng.standard_normal((b, s, hq, d)).astype(dtype)
    xk = rng.standard_normal((b, s, hk, d)).astype(dtype)
    theta = rng.uniform(-100, 100, (s, d // 2))
    return xq, xk, theta


@pytest.mark.parametrize("shape", ET_SHAPES, ids=[str(s) for s in ET_SHAPES])
def test_et_rope_matches_complex_product(shape):
    """(x[2i] + i x[2i+1]) * exp(i theta): the complex form of llama's
    interleaved RoPE (rope.py's precompute_freqs_cis docstring lineage)."""
    xq, xk, theta = et_inputs(*shape, key=shape)
    q_out, k_out = et_apply_rotary_emb(xq, xk, np.cos(theta), np.sin(theta))
    rot = np.exp(1j * theta)[None, :, None, :]
    for x, got in ((xq, q_out), (xk, k_out)):
        z = x.astype(np.float64).reshape(*x.shape[:-1], -1, 2)
        want = (z[..., 0] + 1j * z[..., 1]) * rot
        np.testing.assert_allclose(got[..., 0::2], want.real, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got[..., 1::2], want.imag, rtol=0, atol=1e-12)
        assert got.dtype == np.float64


@pytest.mark.parametrize("shape", ET_SHAPES, ids=[str(s) for s in ET_SHAPES])
def test_et_rope_matches_sam2_oracle(shape):
    """The same op is today's vkrope.apply contract with x transposed to
    [B, H, S, D] and the table (cos, sin)-interleaved into [S, D]: checked
    against tests/oracles/oracle.py's complex_oracle (non-unit cos/sin included)."""
    xq, xk, theta = et_inputs(*shape, key=("sam2", shape))
    rng = rng_for("scale", shape)
    cos = np.cos(theta) * rng.uniform(0.5, 2, theta.shape)  # not on the unit circle: a plain product
    sin = np.sin(theta) * rng.uniform(0.5, 2, theta.shape)
    table = np.stack([cos, sin], axis=-1).reshape(theta.shape[0], -1)  # [S, D]
    q_out, k_out = et_apply_rotary_emb(xq, xk, cos, sin)
    for x, got in ((xq, q_out), (xk, k_out)):
        want = complex_oracle(x.transpose(0, 2, 1, 3), table).transpose(0, 2, 1, 3)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", ET_SHAPES, ids=[str(s) for s in ET_SHAPES])
def test_et_rope_is_onnx_interleaved(shape):
    """ExecuTorch apply_rotary_emb == ONNX RotaryEmbedding(interleaved=1) on
    X = x.reshape(B, S, H*D) with num_heads=H, cos_cache = freqs_cos and
    position_ids = arange(S) for every batch row."""
    b, s, hq, hk, d = shape
    xq, xk, theta = et_inputs(*shape, key=("onnx", shape))
    cos, sin = np.cos(theta), np.sin(theta)
    q_out, k_out = et_apply_rotary_emb(xq, xk, cos, sin)
    pid = np.broadcast_to(np.arange(s), (b, s))
    for x, h, got in ((xq, hq, q_out), (xk, hk, k_out)):
        want = onnx_rotary_embedding(x.reshape(b, s, h * d), cos, sin, pid, interleaved=1, num_heads=h)
        np.testing.assert_allclose(got, want.reshape(x.shape), rtol=0, atol=1e-12)
        # and the 4D [B, H, S, D] form with per-token caches, no position_ids
        want4 = onnx_rotary_embedding(x.transpose(0, 2, 1, 3), np.broadcast_to(cos, (b, s, d // 2)),
                                      np.broadcast_to(sin, (b, s, d // 2)), interleaved=1)
        np.testing.assert_allclose(got, want4.transpose(0, 2, 1, 3), rtol=0, atol=1e-12)


def test_et_rope_per_head_freqs():
    """The [S, Hq, D/2] freqs form: head h uses freqs[:, h]."""
    xq, xk, _ = et_inputs(1, 4, 3, 3, 8, key="perhead")
    rng = rng_for("perhead-theta")
    theta = rng.uniform(-10, 10, (4, 3, 4))
    q_out, k_out = et_apply_rotary_emb(xq, xk, np.cos(theta), np.sin(theta))
    for h in range(3):
        qh, kh = et_apply_rotary_emb(xq[:, :, h:h + 1], xk[:, :, h:h + 1], np.cos(theta[:, h]), np.sin(theta[:, h]))
        np.testing.assert_array_equal(q_out[:, :, h:h + 1], qh)
        np.testing.assert_array_equal(k_out[:, :, h:h + 1], kh)


def test_et_rope_float16_inputs_are_read_exactly():
    """float16 q / k are upcast exactly (torch upcasts to float32 first, the
    oracle to float64): the result equals the float64 inputs' result."""
    xq, xk, theta = et_inputs(1, 3, 2, 2, 8, key="f16", dtype=np.float16)
    a = et_apply_rotary_emb(xq, xk, np.cos(theta), np.sin(theta))
    b = et_apply_rotary_emb(xq.astype(np.float64), xk.astype(np.float64), np.cos(theta), np.sin(theta))
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)


def test_et_rope_rejects_bad_arguments():
    q = np.zeros((1, 3, 4, 8))
    k = np.zeros((1, 3, 2, 8))
    f = np.zeros((3, 4))
    with pytest.raises(ValueError, match="4D"):
        et_apply_rotary_emb(q[0], k, f, f)
    with pytest.raises(ValueError, match="share B, S and D"):
        et_apply_rotary_emb(q, np.zeros((1, 2, 2, 8)), f, f)
    with pytest.raises(ValueError, match="even"):
        et_apply_rotary_emb(np.zeros((1, 3, 4, 7)), np.zeros((1, 3, 2, 7)), f, f)
    with pytest.raises(ValueError, match=r"\[S, D/2\]"):
        et_apply_rotary_emb(q, k, np.zeros((4, 4)), np.zeros((4, 4)))  # more rows than S: torch asserts too
    with pytest.raises(ValueError, match=r"Hk == Hq"):
        et_apply_rotary_emb(q, k, np.zeros((3, 4, 4)), np.zeros((3, 4, 4)))
    with pytest.raises(ValueError, match="differ"):
        et_apply_rotary_emb(q, k, f, np.zeros((3, 3)))


# ---------------------------------------------------------------------------
# Hugging Face rotate-half
# ---------------------------------------------------------------------------


def hf_loop(x, cos, sin):
    """The HF formula one element at a time: x [..., D] (rows already
    aligned with cos / sin [..., rot]), out[j] = x[j] cos[j] + rh[j] sin[j]
    with rh = (-x[h:rot], x[:h])."""
    x = np.asarray(x, np.float64)
    cos = np.broadcast_to(np.asarray(cos, np.float64), x.shape[:-1] + (np.shape(cos)[-1],))
    sin = np.broadcast_to(np.asarray(sin, np.float64), cos.shape)
    rot = cos.shape[-1]
    h = rot // 2
    out = x.copy()
    for idx in np.ndindex(x.shape[:-1]):
        for j in range(rot):
            partner = -x[idx + (j + h,)] if j < h else x[idx + (j - h,)]
            out[idx + (j,)] = x[idx + (j,)] * cos[idx + (j,)] + partner * sin[idx + (j,)]
    return out


def hf_table(max_seq, rot, base=10000.0):
    """An HF table: emb = cat(freqs, freqs) -> duplicated halves, [max_seq, rot]."""
    inv = 1.0 / base ** (np.arange(0, rot, 2) / rot)
    t = np.arange(max_seq)[:, None] * inv[None, :]
    emb = np.concatenate([t, t], axis=-1)
    return np.cos(emb), np.sin(emb)


HF_SHAPES = [  # (B, S, Hq, Hk, D, rot)
    (1, 1, 4, 2, 32, 32),  # the Vulkan pattern's full-rotary export shape
    (1, 1, 4, 2, 32, 24),  # its partial_rotary_factor 0.75 shape
    (2, 5, 3, 1, 16, 8),
    (1, 4, 2, 2, 10, 4),
]


@pytest.mark.parametrize("shape", HF_SHAPES, ids=[str(s) for s in HF_SHAPES])
def test_hf_matches_scalar_loop_with_arbitrary_tables(shape):
    """General tables (halves differ): the oracle uses cos[j] for every
    j < rot, exactly as the python source does."""
    b, s, hq, hk, d, rot = shape
    rng = rng_for("hf-loop", shape)
    q = rng.standard_normal((b, s, hq, d))
    k = rng.standard_normal((b, s, hk, d))
    cos = rng.standard_normal((s, rot))
    sin = rng.standard_normal((s, rot))
    q_out, k_out = hf_apply_rotary_emb(q, k, cos, sin)  # ExecuTorch layout: [S, rot] unsqueezed at 1
    np.testing.assert_allclose(q_out, hf_loop(q, cos[:, None, :], sin[:, None, :]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(k_out, hf_loop(k, cos[:, None, :], sin[:, None, :]), rtol=0, atol=1e-12)


def test_hf_layouts_agree():
    """HF's own layout (q [B, H, S, D], cos [B, S, rot], unsqueeze_dim=1) and
    ExecuTorch's (q [B, S, H, D], cos [S, rot] -> [S, 1, rot]; or cos
    [B, S, rot] with unsqueeze_dim=2) are the same rotation."""
    rng = rng_for("hf-layout")
    b, s, h, d, rot = 2, 5, 3, 12, 8
    q = rng.standard_normal((b, s, h, d))
    k = rng.standard_normal((b, s, 1, d))
    cos, sin = hf_table(s, rot)
    bshd = hf_apply_rotary_emb(q, k, cos, sin)
    bhsd = hf_apply_rotary_emb(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),
                               np.broadcast_to(cos, (b, s, rot)), np.broadcast_to(sin, (b, s, rot)))
    bshd2 = hf_apply_rotary_emb(q, k, np.broadcast_to(cos, (b, s, rot)), np.broadcast_to(sin, (b, s, rot)),
                                unsqueeze_dim=2)
    for u, v, w in zip(bshd, bhsd, bshd2):
        np.testing.assert_array_equal(u, v.transpose(0, 2, 1, 3))
        np.testing.assert_array_equal(u, w)


@pytest.mark.parametrize("shape", HF_SHAPES, ids=[str(s) for s in HF_SHAPES])
@pytest.mark.parametrize("start_pos", [0, 3])
def test_et_hf_op_matches_complex_product(shape, start_pos):
    """With an HF table (duplicated halves), pairs (i, i + rot/2) are complex
    numbers x[i] + 1j x[i + rot/2] multiplied by exp(1j * angle[i]); the
    channels past rot pass through."""
    b, s, hq, hk, d, rot = shape
    rng = rng_for("hf-complex", shape)
    q = rng.standard_normal((b, s, hq, d)).astype(np.float32)
    k = rng.standard_normal((b, s, hk, d)).astype(np.float32)
    cos, sin = hf_table(start_pos + s + 2, rot)
    q_out, k_out = et_apply_rotary_emb_hf(q, k, cos, sin, start_pos)
    h = rot // 2
    rows = slice(start_pos, start_pos + s)
    w = (cos[rows, :h] + 1j * sin[rows, :h])[None, :, None, :]
    for x, got in ((q, q_out), (k, k_out)):
        x64 = x.astype(np.float64)
        z = (x64[..., :h] + 1j * x64[..., h:rot]) * w
        np.testing.assert_allclose(got[..., :h], z.real, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got[..., h:rot], z.imag, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(got[..., rot:], x64[..., rot:])


@pytest.mark.parametrize("shape", HF_SHAPES, ids=[str(s) for s in HF_SHAPES])
@pytest.mark.parametrize("start_pos", [0, 5])
def test_et_hf_op_is_onnx_rotate_half(shape, start_pos):
    """et_vk.apply_rotary_emb_hf(xq, xk, cos, sin, start_pos) with an HF
    table == ONNX RotaryEmbedding(interleaved=0, rotary_embedding_dim=rot)
    per tensor, with cos_cache = cos[:, :rot/2] and position_ids =
    start_pos + arange(S); X either 3D [B, S, H*D] + num_heads or 4D
    [B, H, S, D]."""
    b, s, hq, hk, d, rot = shape
    rng = rng_for("hf-onnx", shape)
    q = rng.standard_normal((b, s, hq, d))
    k = rng.standard_normal((b, s, hk, d))
    cos, sin = hf_table(start_pos + s + 1, rot)
    q_out, k_out = et_apply_rotary_emb_hf(q, k, cos, sin, start_pos)
    h = rot // 2
    pid = np.broadcast_to(start_pos + np.arange(s), (b, s))
    attrs = {"rotary_embedding_dim": rot if rot < d else 0}
    for x, nh, got in ((q, hq, q_out), (k, hk, k_out)):
        want3 = onnx_rotary_embedding(x.reshape(b, s, nh * d), cos[:, :h], sin[:, :h], pid, num_heads=nh, **attrs)
        np.testing.assert_allclose(got, want3.reshape(x.shape), rtol=0, atol=1e-12)
        want4 = onnx_rotary_embedding(x.transpose(0, 2, 1, 3), cos[:, :h], sin[:, :h], pid, **attrs)
        np.testing.assert_allclose(got, want4.transpose(0, 2, 1, 3), rtol=0, atol=1e-12)


def test_et_hf_shader_table_reads_first_half_only():
    """The Vulkan shader reads cos / sin columns [0, rot/2) for both halves;
    the python op reads all rot columns. Same result for an HF table,
    different for a table whose halves differ."""
    rng = rng_for("hf-shader")
    q = rng.standard_normal((1, 3, 2, 16))
    k = rng.standard_normal((1, 3, 1, 16))
    cos, sin = hf_table(8, 16)
    for u, v in zip(et_apply_rotary_emb_hf(q, k, cos, sin, 2),
                    et_apply_rotary_emb_hf(q, k, cos, sin, 2, shader_table=True)):
        np.testing.assert_array_equal(u, v)
    cos2 = cos.copy()
    cos2[:, 8:] = 0.25
    a = et_apply_rotary_emb_hf(q, k, cos2, sin, 2)[0]
    b = et_apply_rotary_emb_hf(q, k, cos2, sin, 2, shader_table=True)[0]
    np.testing.assert_array_equal(a[..., :8], b[..., :8])
    assert not np.allclose(a[..., 8:], b[..., 8:])


def test_hf_rejects_bad_arguments():
    q = np.zeros((1, 3, 2, 8))
    k = np.zeros((1, 3, 1, 8))
    t = np.zeros((6, 8))
    with pytest.raises(IndexError, match="outside the table"):
        et_apply_rotary_emb_hf(q, k, t, t, 4)
    with pytest.raises(IndexError):
        et_apply_rotary_emb_hf(q, k, t, t, -1)
    with pytest.raises(ValueError, match="even and <= head_dim"):
        et_apply_rotary_emb_hf(q, k, np.zeros((6, 10)), np.zeros((6, 10)))
    with pytest.raises(ValueError, match="even and <= head_dim"):
        et_apply_rotary_emb_hf(q, k, np.zeros((6, 5)), np.zeros((6, 5)))
    with pytest.raises(ValueError, match="share B, S and D"):
        et_apply_rotary_emb_hf(q, np.zeros((1, 2, 1, 8)), t, t)
    with pytest.raises(ValueError, match="must be even"):
        hf_apply_rotary_emb(q, k, np.zeros((3, 5)), np.zeros((3, 5)))
    with pytest.raises(ValueError, match="larger shape"):
        hf_apply_rotary_emb(q, k, np.zeros((2, 3, 8)), np.zeros((2, 3, 8)), unsqueeze_dim=2)


def test_rotate_half():
    np.testing.assert_array_equal(rotate_half(np.array([1.0, 2.0, 3.0, 4.0])), [-3, -4, 1, 2])


@pytest.mark.parametrize("rank", [4, 3])
def test_rotate_half_is_interleaved_on_permuted_channels(rank):
    """Rotate-half pairs (i, i + rot/2) become interleaved pairs (2i, 2i+1)
    after the channel permutation [0, h, 1, h+1, ...] of the first rot
    channels: one pair layout can serve both with an index map."""
    b, h_, s, d, rot = 2, 3, 4, 12, 8
    inputs, attrs = onnx_case(b, h_, s, d, rot, 0, 4, True, f"perm-{rank}")
    x = inputs["X"].astype(np.float64)
    half = rot // 2
    perm = np.concatenate([np.stack([np.arange(half), np.arange(half) + half], -1).reshape(-1), np.arange(rot, d)])
    inv = np.argsort(perm)
    want = onnx_rotary_embedding(x, inputs["cos_cache"], inputs["sin_cache"], inputs["position_ids"],
                                 rotary_embedding_dim=rot)
    got = onnx_rotary_embedding(x[..., perm], inputs["cos_cache"], inputs["sin_cache"], inputs["position_ids"],
                                rotary_embedding_dim=rot, interleaved=1)[..., inv]
    if rank == 3:  # the same through the 3D layout
        x3 = x.transpose(0, 2, 1, 3).reshape(b, s, h_ * d)
        want3 = onnx_rotary_embedding(x3, inputs["cos_cache"], inputs["sin_cache"], inputs["position_ids"],
                                      rotary_embedding_dim=rot, num_heads=h_)
        np.testing.assert_array_equal(want3.reshape(b, s, h_, d).transpose(0, 2, 1, 3), want)
    np.testing.assert_array_equal(got, want)

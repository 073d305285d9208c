"""The table operators (ONNX RotaryEmbedding-23, ExecuTorch's LLM and HF
RoPE ops) against the independent float64 oracles of tests/oracles/oracle_family.py:
ONNX's own conformance cases, a property test over the whole parameter
space, both storages, float32, float16 and bfloat16, numpy and device-resident inputs,
forced small limits, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vkrope
from oracle import BF16, bf16_ulp, bf16_values
from oracle_family import et_apply_rotary_emb, et_apply_rotary_emb_hf, onnx_rotary_embedding

STORAGES = ["buffer", "texture3d"]
DTYPES = [np.float32, np.float16, BF16]
DTYPE_IDS = ["float32", "float16", "bfloat16"]
EPS32 = 2.0**-24


def poisoned(shape, dtype):
    out = np.empty(shape, dtype)
    out.fill(np.nan)
    return out


def bound(x, *tables) -> float:
    """max |x| * (max |cos| + max |sin|): what the rounding errors scale with."""
    xm = float(np.abs(np.asarray(x, np.float64)).max(initial=0.0))
    tm = sum(float(np.abs(np.asarray(t, np.float64)).max(initial=0.0)) for t in tables)
    return max(xm * max(tm, 1.0), 1e-30)


def assert_close(y, ref, x, *tables, tables_half: bool = False):
    """float32: within 4 float32 ulps of the term bound. float16: each element
    within one float16 ulp of the reference (2^-22 of the term bound where
    float32 tables make the products inexact). bfloat16: half a bfloat16 ulp
    (one rounding; the oracle's own bf16_round) plus 2^-23 of the result and
    2^-38 of the term bound (the float32 sum before it: the products are
    exact, even where they cancel). Never NaN where the reference is
    finite."""
    y = np.asarray(y)
    assert y.shape == ref.shape and y.dtype == np.asarray(x).dtype
    y64 = bf16_values(y) if y.dtype == BF16 else y.astype(np.float64)
    assert np.isfinite(y64).all(), "unwritten (NaN) elements"
    err = np.abs(y64 - ref)
    b = bound(x, *tables)
    if y.dtype == np.float32:
        tol = 4 * EPS32 * b
    elif y.dtype == BF16:
        # exact products (glsl/common.glsl), then one rounding
        tol = 0.5 * bf16_ulp(ref) + 2.0**-23 * np.abs(ref) + 2.0**-38 * b
    else:
        ulp = np.spacing(np.abs(ref.astype(np.float16))).astype(np.float64)
        tol = ulp if tables_half else np.maximum(ulp, 2.0**-22 * b)
    worst = np.argmax(err - tol) if err.size else 0
    assert (err <= tol).all(), f"error {err.flat[worst]:.3g} > {np.broadcast_to(tol, err.shape).flat[worst]:.3g}"


def unit_tables(rows, half, rng, dtype=np.float32):
    theta = rng.uniform(-50, 50, (rows, half))
    return np.cos(theta).astype(dtype), np.sin(theta).astype(dtype)


# --- ONNX conformance (onnx is a test dependency: setup.cfg's test extra) ----------------
import onnx_cases  # noqa: E402
from test_family_oracles import ONNX_GRID, onnx_case, one_node_model, run_reference  # noqa: E402

CASES = onnx_cases.onnx_rotary_cases()


def test_conformance_cases_are_there():
    assert len(CASES) >= 16, [c.name for c in CASES]


@pytest.mark.parametrize("resident", ["numpy", "x", "all"])
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_onnx_conformance(device, case, storage, dtype, resident):
    """ONNX's own RotaryEmbedding cases (float32 expected outputs; float16
    and bfloat16 runs compare with the oracle on their own inputs)."""
    inp, attrs = case.inputs, case.attributes
    x = inp["X"].astype(dtype)
    cos, sin = inp["cos_cache"].astype(dtype), inp["sin_cache"].astype(dtype)
    pos = inp.get("position_ids")
    kw = {k: attrs[k] for k in ("interleaved", "rotary_embedding_dim", "num_heads") if k in attrs}
    ref = onnx_rotary_embedding(x, cos, sin, pos, **kw)
    if dtype == np.float32:
        np.testing.assert_allclose(ref, case.expected, rtol=0, atol=4 * EPS32 * bound(x, cos, sin))
    args = [x, cos, sin]
    if resident != "numpy":
        args[0] = device.asarray(x, storage=storage)
    if resident == "all":
        args[1], args[2] = device.asarray(cos), device.asarray(sin)
    if resident == "numpy":
        y = device.rotary_embedding(*args, pos, out=poisoned(x.shape, dtype), storage=storage, **kw)
    else:
        y = device.rotary_embedding(*args, pos, **kw).get()
    assert_close(y, ref, x, cos, sin, tables_half=dtype != np.float32)


def test_onnx_reference_runs_every_conformance_case_through_the_examples_adapter():
    """examples/onnx_llama_attention.py's `new_ops` adapter on onnx's own cases: onnx.reference passes an absent
    `num_heads` (no default in the schema) as None, which rotary_embedding takes as 0 (a 4D node without it)."""
    pytest.importorskip("onnx")
    import importlib.util
    from pathlib import Path

    from onnx.reference import ReferenceEvaluator

    path = Path(__file__).resolve().parents[2] / "examples" / "onnx_llama_attention.py"
    spec = importlib.util.spec_from_file_location("onnx_llama_attention", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    before = example.RotaryEmbedding.calls
    for case in CASES:
        model, feeds = one_node_model(case.inputs, case.attributes)
        y = ReferenceEvaluator(model, new_ops=[example.RotaryEmbedding]).run(None, feeds)[0]
        x, cos, sin = (case.inputs[n] for n in ("X", "cos_cache", "sin_cache"))
        np.testing.assert_allclose(y, case.expected, rtol=0, atol=4 * EPS32 * bound(x, cos, sin), err_msg=case.name)
    assert example.RotaryEmbedding.calls - before == len(CASES)  # (vkrope ran each, not onnx's own kernel)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("case", ONNX_GRID, ids=[g[0] for g in ONNX_GRID])
def test_onnx_bfloat16_against_onnx_reference(device, case, storage):
    """bfloat16 X and caches against onnx.reference (ml_dtypes' bfloat16
    arithmetic, a rounding per product and sum): vkrope is within half a
    bfloat16 ulp of the float64 oracle, and both within 4 bfloat16 epsilons
    of the terms of the reference's result."""
    pytest.importorskip("onnx")
    name, *shape = case
    inputs, attrs = onnx_case(*shape, name, dtype=BF16)
    x, cos, sin, pos = inputs["X"], inputs["cos_cache"], inputs["sin_cache"], inputs.get("position_ids")
    expected = run_reference(*one_node_model(inputs, attrs)).astype(np.float64)
    y = device.rotary_embedding(x, cos, sin, pos, out=poisoned(x.shape, BF16), storage=storage, **attrs)
    ref = onnx_rotary_embedding(x, cos, sin, pos, **attrs)
    assert_close(y, ref, x, cos, sin, tables_half=True)
    assert np.abs(bf16_values(y) - expected).max(initial=0) <= 4 * 2.0**-7 * bound(x, cos, sin)


# --- the whole parameter space ----------------------------------------------------------
@st.composite
def onnx_calls(draw):
    rank = draw(st.sampled_from([3, 4]))
    b, s, h = draw(st.integers(1, 3)), draw(st.integers(1, 9)), draw(st.integers(1, 4))
    rot = 2 * draw(st.integers(1, 8))
    d = rot + draw(st.sampled_from([0, 0, 1, 2, 3, 6]))  # partial rotary, odd D too
    full = draw(st.booleans()) and d == rot
    with_pos = draw(st.booleans())
    return dict(rank=rank, b=b, s=s, h=h, d=d, rot=rot, full=full, with_pos=with_pos,
                interleaved=draw(st.sampled_from([0, 1, True, False])),
                dtype=draw(st.sampled_from(DTYPES)),
                tables_half=draw(st.booleans()), storage=draw(st.sampled_from(STORAGES)),
                resident=draw(st.sampled_from(["numpy", "x", "tables", "all"])),
                in_place=draw(st.booleans()), max_pos=draw(st.integers(1, 40)), seed=draw(st.integers(0, 2**31)))


@settings(max_examples=120)
@given(onnx_calls())
def test_onnx_properties(c):
    dev = vkrope.default_device()
    rng = np.random.default_rng(c["seed"])
    b, s, h, d, rot = c["b"], c["s"], c["h"], c["d"], c["rot"]
    shape = (b, h, s, d) if c["rank"] == 4 else (b, s, h * d)
    x = rng.standard_normal(shape).astype(c["dtype"])
    tdtype = c["dtype"] if (c["tables_half"] and c["dtype"] != np.float32) else np.float32
    if c["with_pos"]:
        cos, sin = unit_tables(c["max_pos"], rot // 2, rng, tdtype)
        pos = rng.integers(0, c["max_pos"], (b, s))
    else:
        cos, sin = (t.reshape(b, s, rot // 2) for t in unit_tables(b * s, rot // 2, rng, tdtype))
        pos = None
    kw = dict(interleaved=c["interleaved"], rotary_embedding_dim=0 if c["full"] else rot,
              num_heads=h if c["rank"] == 3 else 0)
    ref = onnx_rotary_embedding(x, cos, sin, pos, **{k: int(v) for k, v in kw.items()})
    xa, ca, sa = x, cos, sin
    if c["resident"] in ("x", "all"):
        xa = dev.asarray(x, storage=c["storage"])
    if c["resident"] in ("tables", "all"):
        ca, sa = dev.asarray(cos), dev.asarray(sin)
    if xa is x:
        x_in = x.copy()
        out = x_in if c["in_place"] else poisoned(x.shape, x.dtype)
        y = dev.rotary_embedding(x_in, ca, sa, pos, out=out, storage=c["storage"], **kw)
        assert y is out
    else:
        y = dev.rotary_embedding(xa, ca, sa, pos, out=xa if c["in_place"] else None, **kw)
        assert isinstance(y, vkrope.DeviceArray) and (y is xa) == c["in_place"]
        y = y.get()
    assert_close(y, ref, x, cos, sin, tables_half=tdtype != np.float32)


# --- ExecuTorch's LLM and HF ops ---------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("heads", [(4, 4), (8, 2), (3, 1)], ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("resident", [False, True])
def test_executorch_llm_op(device, storage, dtype, heads, resident):
    rng = np.random.default_rng(hash((storage, heads, resident)) % 2**32)
    b, s, d = 2, 7, 12
    xq = rng.standard_normal((b, s, heads[0], d)).astype(dtype)
    xk = rng.standard_normal((b, s, heads[1], d)).astype(dtype)
    fc, fs = unit_tables(s, d // 2, rng, dtype)
    rq, rk = et_apply_rotary_emb(xq, xk, fc, fs)
    if resident:
        yq, yk = device.apply_rotary_emb(device.asarray(xq, storage=storage), device.asarray(xk, storage=storage),
                                         device.asarray(fc), device.asarray(fs))
        yq, yk = yq.get(), yk.get()
    else:
        yq, yk = device.apply_rotary_emb(xq, xk, fc, fs)
    assert_close(yq, rq, xq, fc, fs, tables_half=dtype != np.float32)
    assert_close(yk, rk, xk, fc, fs, tables_half=dtype != np.float32)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("rot", [16, 10, 4])
@pytest.mark.parametrize("halves", ["equal", "arbitrary"])
def test_executorch_hf_op(device, storage, dtype, rot, halves):
    """Rotate-half with a full-width [max_seq, rot] table, partial rotary,
    start_pos; tables whose halves differ follow the Python definition."""
    rng = np.random.default_rng(rot)
    b, s, d, start = 2, 5, 16, 3
    xq = rng.standard_normal((b, s, 4, d)).astype(dtype)
    xk = rng.standard_normal((b, s, 2, d)).astype(dtype)
    fc, fs = unit_tables(start + s + 2, rot, rng, dtype)
    if halves == "equal":
        fc[:, rot // 2:], fs[:, rot // 2:] = fc[:, :rot // 2], fs[:, :rot // 2]
    rq, rk = et_apply_rotary_emb_hf(xq, xk, fc, fs, start)
    yq, yk = device.apply_rotary_emb_hf(device.asarray(xq, storage=storage), xk, fc, fs, start_pos=start)
    assert_close(yq.get(), rq, xq, fc, fs, tables_half=dtype != np.float32)
    assert_close(yk, rk, xk, fc, fs, tables_half=dtype != np.float32)


def test_module_level_functions_match_the_device_ones():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 2, 5, 8)).astype(np.float32)
    cos, sin = unit_tables(9, 4, rng)
    pos = rng.integers(0, 9, (1, 5))
    assert_close(vkrope.rotary_embedding(x, cos, sin, pos), onnx_rotary_embedding(x, cos, sin, pos), x, cos, sin)
    xq, xk = rng.standard_normal((2, 3, 2, 8)).astype(np.float32), rng.standard_normal((2, 3, 1, 8)).astype(np.float32)
    fc, fs = unit_tables(3, 4, rng)
    for y, r in zip(vkrope.apply_rotary_emb(xq, xk, fc, fs), et_apply_rotary_emb(xq, xk, fc, fs)):
        assert_close(y, r, xq, fc, fs)
    fc, fs = unit_tables(6, 8, rng)
    for y, r in zip(vkrope.apply_rotary_emb_hf(xq, xk, fc, fs, 2), et_apply_rotary_emb_hf(xq, xk, fc, fs, 2)):
        assert_close(y, r, xq, fc, fs)


# --- limits ----------------------------------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("interleaved", [0, 1])
def test_past_forced_small_limits(make_device, storage, interleaved):
    """Tables and x past a 64 KiB binding range (chunks; scattered
    position_ids gather the rows they use) and x past a 256 KiB allocation
    (row blocks)."""
    dev = make_device(max_storage_buffer_range=64 << 10, max_memory_allocation_size=256 << 10)
    rng = np.random.default_rng(interleaved)
    b, h, s, d = 2, 4, 300, 64  # 600 KiB of x
    x = rng.standard_normal((b, h, s, d)).astype(np.float32)
    cos, sin = unit_tables(4096, 32, rng)  # 512 KiB each
    pos = rng.integers(0, 4096, (b, s))
    y = dev.rotary_embedding(x, cos, sin, pos, interleaved=interleaved, out=poisoned(x.shape, x.dtype),
                             storage=storage)
    assert_close(y, onnx_rotary_embedding(x, cos, sin, pos, interleaved=interleaved), x, cos, sin)
    xd = dev.asarray(x[:, :, :100], storage=storage)  # 200 KiB resident, tables gathered from numpy
    pos2 = pos[:, :100]
    y2 = dev.rotary_embedding(xd, cos, sin, pos2, interleaved=interleaved).get()
    assert_close(y2, onnx_rotary_embedding(x[:, :, :100], cos, sin, pos2, interleaved=interleaved), x, cos, sin)


def test_resident_cache_wider_than_one_binding_splits_the_dispatch(make_device):
    """Scattered positions over a resident cache wider than one binding: no
    window can hold both rows, so each token gets a dispatch of its own
    (numpy caches are gathered instead)."""
    dev = make_device(max_storage_buffer_range=64 << 10)
    rng = np.random.default_rng(0)
    cos, sin = unit_tables(4096, 32, rng)
    x = rng.standard_normal((2, 2, 2, 64)).astype(np.float32)
    pos = np.array([[0, 4095], [2000, 7]])
    for c, s in ((dev.asarray(cos), dev.asarray(sin)), (cos, sin)):
        assert_close(dev.rotary_embedding(x, c, s, pos), onnx_rotary_embedding(x, cos, sin, pos), x, cos, sin)


def test_decode_step_moves_only_x_and_positions(make_device):
    """A resident 8192-row cache is not copied again: the only upload of a
    resident decode step is its position rows (Device.stats)."""
    dev = make_device()
    rng = np.random.default_rng(0)
    cos, sin = unit_tables(8192, 64, rng)
    cache_c, cache_s = dev.asarray(cos), dev.asarray(sin)
    x = rng.standard_normal((8, 32, 1, 128)).astype(np.float32)
    pos = rng.integers(0, 8192, (8, 1))
    dx = dev.asarray(x)
    before = dev.stats()
    y = dev.rotary_embedding(dx, cache_c, cache_s, pos)
    after = dev.stats()
    assert after["bytes_uploaded"] - before["bytes_uploaded"] == 8 * 4  # the 4 MiB of caches stayed put
    assert after["bytes_read_back"] == before["bytes_read_back"] and after["submissions"] == before["submissions"] + 1
    assert_close(y.get(), onnx_rotary_embedding(x, cos, sin, pos), x, cos, sin)


# --- bad input ------------------------------------------------------------------------------
X4 = np.zeros((1, 2, 3, 8), np.float32)
C = np.zeros((5, 4), np.float32)
P = np.zeros((1, 3), np.int64)
BAD = [
    ("x", TypeError, dict(x=X4.astype(np.float64))),
    ("x", ValueError, dict(x=np.zeros((2, 8), np.float32))),
    ("x", TypeError, dict(x=[[1.0]])),
    ("num_heads", ValueError, dict(x=np.zeros((1, 3, 8), np.float32))),
    ("num_heads", ValueError, dict(x=np.zeros((1, 3, 8), np.float32), num_heads=3)),
    ("rotary_embedding_dim", ValueError, dict(rotary_embedding_dim=5)),
    ("rotary_embedding_dim", ValueError, dict(rotary_embedding_dim=10)),
    ("rotary_embedding_dim", TypeError, dict(rotary_embedding_dim=2.0)),
    ("interleaved", ValueError, dict(interleaved=2)),
    ("interleaved", TypeError, dict(interleaved="yes")),
    ("cos_cache", ValueError, dict(cos_cache=np.zeros((5, 3), np.float32))),
    ("sin_cache", ValueError, dict(sin_cache=np.zeros((6, 4), np.float32))),
    ("cos_cache", TypeError, dict(cos_cache=C.astype(np.int32))),
    ("cos_cache", ValueError, dict(cos_cache=np.zeros((1, 5, 4), np.float32))),
    ("cos_cache", ValueError, dict(position_ids=None)),
    ("position_ids", ValueError, dict(position_ids=np.zeros((3,), np.int64))),
    ("position_ids", TypeError, dict(position_ids=np.zeros((1, 3), np.float32))),
    ("position_ids", ValueError, dict(position_ids=np.array([[0, 5, 1]]))),
    ("position_ids", ValueError, dict(position_ids=np.array([[0, -1, 1]]))),
    ("caches have no rows", ValueError, dict(cos_cache=np.zeros((0, 4), np.float32),
                                             sin_cache=np.zeros((0, 4), np.float32))),
    ("sin_cache must be a numpy array", TypeError, dict(sin_cache=None)),  # (None: a spec's form only)
    ("cos_cache must be a numpy array", TypeError, dict(cos_cache=None, sin_cache=None)),  # (cos_cache's fault)
    ("x: its head size D = 1 has no pair", ValueError, dict(x=np.zeros((1, 2, 3, 1), np.float32),
                                                            cos_cache=np.zeros((6, 0), np.float32),
                                                            sin_cache=np.zeros((6, 0), np.float32))),
    ("x: its head size D = 3 is odd", ValueError, dict(x=np.zeros((1, 2, 3, 3), np.float32))),
    ("out", ValueError, dict(out=np.zeros((1, 2, 3, 6), np.float32))),
    ("out", TypeError, dict(out=np.zeros((1, 2, 3, 8), np.float16))),
    ("storage", ValueError, dict(storage="image")),
]


@pytest.mark.parametrize("name,exc,change", BAD, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(BAD)])
def test_bad_input_names_the_argument(device, name, exc, change):
    kw = dict(x=X4, cos_cache=C, sin_cache=C, position_ids=P)
    kw.update(change)
    args = [kw.pop(k) for k in ("x", "cos_cache", "sin_cache", "position_ids")]
    with pytest.raises(exc) as info:
        device.rotary_embedding(*args, **kw)
    assert name in str(info.value)
    with pytest.raises(exc):
        vkrope.rotary_embedding(*args, **kw)
    y = device.rotary_embedding(X4 + 1, C + 1, C, P)  # still usable
    assert np.array_equal(y, X4 + 1)


SWAP_HINT = r" \(x is read as \[B, H, S, D\]: is it \[B, S, H, D\]\? transpose\(0, 2, 1, 3\)\)$"


def test_layout_mistakes_name_the_layout():
    """x given as [B, S, H, D] (here S = 8, H = 4) is read as [B, H, S, D]: the position_ids or caches that
    fit it are refused with a hint that x's axes 1 and 2 look exchanged; a mismatch the exchange does not
    explain gets no hint."""
    x = np.zeros((2, 8, 4, 64), np.float32)
    pos = np.tile(np.arange(8), (2, 1))
    table, bs = np.ones((8, 32), np.float32), np.ones((2, 8, 32), np.float32)
    with pytest.raises(ValueError, match=r"^position_ids must have shape \(2, 4\); got \(2, 8\)" + SWAP_HINT):
        vkrope.rotary_embedding(x, vkrope.RopeFreqs(64), None, pos)
    with pytest.raises(ValueError, match=r"^position_ids must have shape \(2, 4\); got \(2, 8\)" + SWAP_HINT):
        vkrope.rotary_embedding(x, table, table, pos)
    with pytest.raises(ValueError, match=r"^cos_cache must have shape .* = \(2, 4, 32\); got \(2, 8, 32\)" + SWAP_HINT):
        vkrope.rotary_embedding(x, bs, bs)
    with pytest.raises(ValueError, match=r"^position_ids must have shape \(2, 4\); got \(2, 5\)$"):
        vkrope.rotary_embedding(x, vkrope.RopeFreqs(64), None, pos[:, :5])
    with pytest.raises(ValueError, match=r"^position_ids must have shape \(2, 4\); got \(2, 8\)$"):  # 3-D x: no axes 1, 2
        vkrope.rotary_embedding(np.zeros((2, 4, 256), np.float32), table, table, pos, num_heads=4)
    # grouped-query q and k of the other layout: they differ on the axis read as S (an adversary's finding)
    q, k = np.zeros((1, 5, 4, 8), np.float32), np.zeros((1, 5, 2, 8), np.float32)
    with pytest.raises(ValueError, match=r"^k \(1, 5, 2, 8\) must share B, S and D with q \(1, 5, 4, 8\) \(\[B, H, S, D\]\) "
                                         r"\(q and k are read as \[B, H, S, D\]: are they \[B, S, H, D\]\? transpose"):
        vkrope.apply_rotary_pos_emb(q, k, vkrope.RopeFreqs(8), np.zeros((1, 4), np.int64))
    with pytest.raises(ValueError, match=r"^xk \(1, 4, 2, 8\) must share B, S and D with xq \(1, 8, 2, 8\) \(\[B, S, H, D\]\) "
                                         r"\(xq and xk are read as \[B, S, H, D\]: are they \[B, H, S, D\]\?"):
        vkrope.apply_rotary_emb(np.zeros((1, 8, 2, 8), np.float32), np.zeros((1, 4, 2, 8), np.float32),
                                np.ones((2, 4), np.float32), np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match=r"must share B, S and D with q \(1, 5, 4, 8\) \(\[B, H, S, D\]\)$"):  # (D differs)
        vkrope.apply_rotary_pos_emb(q, k[..., :6], vkrope.RopeFreqs(8), np.zeros((1, 4), np.int64))
    # (a KV length mistake, q of S 1 beside k of S 10: read the other way Hq 1, Hk 10 is no grouped-query: no hint)
    with pytest.raises(ValueError, match=r"must share B, S and D with q \(1, 8, 1, 64\) \(\[B, H, S, D\]\)$"):
        vkrope.apply_rotary_pos_emb(np.zeros((1, 8, 1, 64), np.float32), np.zeros((1, 8, 10, 64), np.float32),
                                    vkrope.RopeFreqs(64), np.zeros((1, 1), np.int64))


def test_a_3d_x_names_num_heads_in_a_table_width_mismatch():
    """x [B, S, H*D] with a wrong num_heads shows as a wrong table width: the message says the width came from
    num_heads (an adversary read "cos_cache must have shape (10, 2)" as the cache's fault)."""
    x, table = np.zeros((2, 4, 24), np.float32), np.ones((10, 4), np.float32)
    pos = np.zeros((2, 4), np.int64)
    with pytest.raises(ValueError, match=r"^cos_cache must have shape \[max_pos, rot/2\] \(D = 24 / num_heads 6 = 4, so "
                                         r"rot/2 = 2\) = \(10, 2\); got \(10, 4\)$"):
        vkrope.rotary_embedding(x, table, table, pos, num_heads=6)
    bs = np.ones((2, 4, 4), np.float32)
    with pytest.raises(ValueError, match=r"\(no position_ids\) \(D = 24 / num_heads 1 = 24, so rot/2 = 12\) = \(2, 4, 12\)"):
        vkrope.rotary_embedding(x, bs, bs, num_heads=1)
    # (a mismatch of another axis than the width: no note, a diff reviewer's)
    with pytest.raises(ValueError, match=r"^sin_cache must have shape \[max_pos, rot/2\] \(like cos_cache\) = \(10, 4\); "
                                         r"got \(9, 4\)$"):
        vkrope.rotary_embedding(x, table, table[:9], pos, num_heads=3)
    y = vkrope.rotary_embedding(x + 1, table, table * 0, pos, num_heads=3)  # (the right count: D 8, rot/2 4; angle 0)
    assert np.array_equal(y, x + 1)


def test_onnx_reference_absent_attributes_are_zero(device):
    """onnx.reference passes an absent num_heads as None (it has no default in the schema); interleaved and
    rotary_embedding_dim None are their defaults, 0, too: the same result bit for bit as 0 given."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 3, 8)).astype(np.float32)
    cos, sin = rng.standard_normal((2, 5, 4)).astype(np.float32)
    pos = np.array([[0, 4, 2]])
    want = device.rotary_embedding(x, cos, sin, pos, interleaved=0, rotary_embedding_dim=0, num_heads=0)
    got = device.rotary_embedding(x, cos, sin, pos, interleaved=None, rotary_embedding_dim=None, num_heads=None)
    assert np.array_equal(got, want) and not np.array_equal(want, x)


def test_a_narrower_spec_suggests_rotary_embedding_dim():
    x = np.zeros((1, 2, 3, 64), np.float32)
    with pytest.raises(ValueError, match=r"^cos_cache: the frequency spec has dim = 32; this call rotates 64 channels "
                                         r"\(pass rotary_embedding_dim=32 to rotate the first 32\)$"):
        vkrope.rotary_embedding(x, vkrope.RopeFreqs(32), None)
    with pytest.raises(ValueError, match=r"^cos_cache: the frequency spec has dim = 128; this call rotates 64 channels$"):
        vkrope.rotary_embedding(x, vkrope.RopeFreqs(128), None)  # (wider than the heads: no rotary_embedding_dim fits)


@pytest.mark.parametrize("call,name", [
    (lambda: vkrope.apply_rotary_emb(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 3, 6), np.float32),
                                     np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32)), "xk"),
    (lambda: vkrope.apply_rotary_emb(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                     np.zeros((3, 4), np.float32), np.zeros((2, 4), np.float32)), "freqs_cos"),
    (lambda: vkrope.apply_rotary_emb(np.zeros((2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                     np.zeros((2, 4), np.float32), np.zeros((2, 4), np.float32)), "xq"),
    (lambda: vkrope.apply_rotary_emb_hf(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                        np.zeros((4, 10), np.float32), np.zeros((4, 10), np.float32)), "rotary width"),
    (lambda: vkrope.apply_rotary_emb_hf(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                        np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32), 3), "start_pos"),
    (lambda: vkrope.apply_rotary_emb_hf(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                        np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32), -1), "start_pos"),
    (lambda: vkrope.apply_rotary_emb(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                     np.zeros((2, 4), np.float32), None),
     "freqs_sin must be a numpy array (or a vkrope.DeviceArray) as freqs_cos is a table; it is None only where"),
    (lambda: vkrope.apply_rotary_emb_hf(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                        np.zeros((4, 8), np.float32), None), "as freqs_cos is a table; it is None"),
    # (Llama's complex freqs_cis alone: told what a complex table needs, not that freqs_sin is missing)
    (lambda: vkrope.apply_rotary_emb(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                     np.ones((2, 4), np.complex64), None), "got complex64 (a complex array: pass real"),
    (lambda: vkrope.apply_rotary_emb(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                     vkrope.default_device().asarray(np.zeros((2, 4), np.float16)),
                                     np.zeros((2, 4), np.float32)), "float16 DeviceArray but xq is float32"),
    (lambda: vkrope.apply_rotary_emb_hf(np.zeros((1, 2, 3, 8), np.float32), np.zeros((1, 2, 1, 8), np.float32),
                                        np.zeros((4, 8), np.float32),
                                        vkrope.default_device().asarray(np.zeros((4, 8), np.float16))),
     "freqs_sin is a float16 DeviceArray but xq is float32: the kernel reads 16-bit tables only of xq's dtype"),
])
def test_executorch_ops_bad_input(call, name):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert name in str(info.value)


@pytest.mark.parametrize("spec", [vkrope.NdFreqs((4, 4)), vkrope.AxialFreqs(8, 2, 2)], ids=repr)
@pytest.mark.parametrize("op,name", [("rotary_embedding", "cos_cache"), ("apply_rotary_emb", "freqs_cos"),
                                     ("apply_rotary_emb_hf", "freqs_cos")])
def test_a_grid_spec_for_a_table_is_named_with_the_ops_that_take_it(spec, op, name):
    """An op of one position per token given a grid's spec: what its argument takes, and where the spec goes."""
    x = np.zeros((1, 2, 5, 8), np.float32)
    args = (x, spec, None) if op == "rotary_embedding" else (x, x[:, :, :1], spec, None)
    with pytest.raises(TypeError, match=rf"^{name} must be a cos table \(numpy or DeviceArray\) or a vkrope\.RopeFreqs, "
                                        rf"InvFreqs or ModelRope; got {type(spec).__name__}\(.*vkrope\.apply takes"):
        getattr(vkrope, op)(*args)


# --- vkrope.apply with device-resident freqs ------------------------------------------------
@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("c", [16, 14])
def test_apply_with_resident_freqs(device, storage, c):
    """Device.apply takes a DeviceArray as freqs (float32, or a 16-bit dtype
    with x of that dtype); the table is bound where it is."""
    from oracle import oracle

    rng = np.random.default_rng(c)
    for dtype in DTYPES:
        x = rng.standard_normal((2, 40, c)).astype(dtype)
        theta = rng.uniform(-3, 3, (50, c // 2))
        f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(50, c).astype(dtype)
        fd = device.asarray(f)
        pos = rng.integers(-1, 50, 40)
        for kw in ({"positions": pos}, {"positions": pos, "inverse": True}):
            y = device.apply(x, fd, out=poisoned(x.shape, dtype), storage=storage, **kw)
            ref = oracle(x, f, **kw)
            assert_close(y, ref, x, f, tables_half=dtype != np.float32)
            yd = device.apply(device.asarray(x, storage=storage), fd, **kw).get()
            assert_close(yd, ref, x, f, tables_half=dtype != np.float32)
        x40 = x[:, :40]
        y = device.apply(x40, device.asarray(f[:40]), storage=storage)
        assert_close(y, oracle(x40, f[:40]), x, f, tables_half=dtype != np.float32)


def test_resident_freqs_window_and_refusals(make_device):
    from oracle import oracle

    dev = make_device(max_storage_buffer_range=64 << 10)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 64, 64)).astype(np.float32)
    theta = rng.uniform(-3, 3, (4096, 32))
    f = np.stack([np.cos(theta), np.sin(theta)], -1).reshape(4096, 64).astype(np.float32)  # 1 MiB
    fd = dev.asarray(f)
    near = np.arange(1000, 1064)  # a window that fits one binding, at an unaligned row
    assert_close(dev.apply(x, fd, positions=near), oracle(x, f, positions=near), x, f)
    spread = np.r_[0, np.full(63, 4095)]  # no one window holds both: dispatches split until each fits
    assert_close(dev.apply(x, fd, positions=spread), oracle(x, f, positions=spread), x, f)
    with pytest.raises(TypeError, match="float16 DeviceArray but x is float32"):
        dev.apply(x, dev.asarray(f.astype(np.float16)), positions=near)
    with pytest.raises(TypeError, match="bfloat16 DeviceArray but x is float16"):
        dev.apply(x.astype(np.float16), dev.asarray(f.astype(BF16)), positions=near)
    with pytest.raises(TypeError, match="float16 DeviceArray but x is bfloat16"):
        dev.apply(x.astype(BF16), dev.asarray(f.astype(np.float16)), positions=near)
    with pytest.raises(ValueError, match="buffer DeviceArray"):
        dev.apply(x, dev.asarray(f, storage="texture3d"), positions=near)


# --- regressions found in review --------------------------------------------------------------
def test_row_blocks_with_unaligned_block_sizes(make_device):
    """Row blocks whose byte size is no multiple of the binding alignment
    (C = 6): each chunk's binding offset is aligned within its block."""
    dev = make_device(max_memory_allocation_size=256 << 10)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 1000, 6)).astype(np.float32)
    cos, sin = unit_tables(1000, 3, rng)
    pos = np.tile(np.arange(1000), (8, 1))
    for storage in STORAGES:
        y = dev.rotary_embedding(x, cos, sin, pos, num_heads=1, storage=storage, out=poisoned(x.shape, x.dtype))
        assert_close(y, onnx_rotary_embedding(x, cos, sin, pos, num_heads=1), x, cos, sin)


@pytest.mark.parametrize("layout", ["3d", "4d"])
def test_long_sequences_bind_only_their_tokens_rows(make_device, layout):
    """One batch item of 4000 tokens with a 64 KiB allocation: chunks bind
    the cache rows of their own tokens, not the whole sequence's."""
    dev = make_device(max_memory_allocation_size=64 << 10)
    rng = np.random.default_rng(8)
    cos, sin = unit_tables(4000, 4, rng)
    if layout == "3d":
        x, pos, kw = rng.standard_normal((1, 4000, 8)).astype(np.float32), np.arange(4000)[None], {"num_heads": 1}
    else:
        x, pos, kw = rng.standard_normal((2, 3, 4000, 8)).astype(np.float32), np.tile(np.arange(4000), (2, 1)), {}
    y = dev.rotary_embedding(x, cos, sin, pos, **kw)
    assert_close(y, onnx_rotary_embedding(x, cos, sin, pos, **kw), x, cos, sin)
    xs = x[:1, :2, :1000] if layout == "4d" else x[:, :1000]  # one DeviceArray stays within the allocation
    yd = dev.rotary_embedding(dev.asarray(xs), dev.asarray(cos), dev.asarray(sin), pos[:1, :1000], **kw).get()
    assert_close(yd, onnx_rotary_embedding(xs, cos, sin, pos[:1, :1000], **kw), x, cos, sin)


def test_resident_freqs_after_numpy_freqs_of_the_same_shape(make_device):
    """The plan memo tells numpy and resident freqs apart (resident windows
    are aligned differently)."""
    from oracle import oracle

    dev = make_device(max_storage_buffer_range=1048)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 1024, 2)).astype(np.float16)
    f = rng.standard_normal((1024, 2)).astype(np.float16)
    for freqs in (f, dev.asarray(f), f):
        assert_close(dev.apply(x, freqs), oracle(x, f), x, f, tables_half=True)


def test_tiny_resident_tables_are_bound_within_their_buffer(device):
    from oracle import oracle

    rng = np.random.default_rng(10)
    f = rng.standard_normal((5, 2)).astype(np.float16)
    x = rng.standard_normal((1, 3, 2)).astype(np.float16)
    p = np.array([4, 4, 4])
    assert_close(device.apply(x, device.asarray(f), positions=p), oracle(x, f, positions=p), x, f, tables_half=True)
    cos, sin = unit_tables(3, 1, rng)
    x4 = rng.standard_normal((1, 1, 2, 2)).astype(np.float32)
    pos = np.array([[2, 2]])
    y = device.rotary_embedding(x4, device.asarray(cos), device.asarray(sin), pos)
    assert_close(y, onnx_rotary_embedding(x4, cos, sin, pos), x4, cos, sin)


def test_executorch_ops_past_one_allocation(make_device):
    """numpy q and k larger than maxMemoryAllocationSize run in row blocks."""
    dev = make_device(max_memory_allocation_size=1 << 20)
    rng = np.random.default_rng(12)
    xq = rng.standard_normal((1, 600, 8, 64)).astype(np.float32)  # 1.2 MiB
    xk = rng.standard_normal((1, 600, 2, 64)).astype(np.float32)
    fc, fs = unit_tables(600, 32, rng)
    for y, r in zip(dev.apply_rotary_emb(xq, xk, fc, fs), et_apply_rotary_emb(xq, xk, fc, fs)):
        assert_close(y, r, xq, fc, fs)
    hc, hs = unit_tables(610, 64, rng)
    for y, r in zip(dev.apply_rotary_emb_hf(xq, xk, hc, hs, 10), et_apply_rotary_emb_hf(xq, xk, hc, hs, 10)):
        assert_close(y, r, xq, hc, hs)


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("layout", ["rotate_half", "interleaved"])
def test_in_place_on_a_resident_tensor_with_wide_heads(device, storage, layout):
    """out = x on a resident tensor: interleaved pairs run in place; a
    rotate-half partner sits in a texel another invocation writes (16 texels
    away at D = 128, in another subgroup), so that layout goes through a
    temporary. Small heads keep partners in one subgroup, where a wrong
    in-place run can pass unnoticed."""
    rng = np.random.default_rng(77)
    x = rng.standard_normal((2, 8, 64, 128)).astype(np.float32)
    cos, sin = unit_tables(64, 64, rng)
    inter = int(layout == "interleaved")
    xa = device.asarray(x, storage=storage)
    y = device.rotary_embedding(xa, cos, sin, np.tile(np.arange(64), (2, 1)), interleaved=inter, out=xa)
    assert y is xa
    assert_close(xa.get(), onnx_rotary_embedding(x, cos, sin, np.tile(np.arange(64), (2, 1)), interleaved=inter),
                 x, cos, sin)


def test_an_empty_call_of_many_tokens_allocates_no_row_table(device):
    """A call with no values (D = 0, or no heads) runs no kernel, so its B * S may be any size: the per-token
    row table the front ends build from positions is not built for it (2^26 tokens would be 256 MiB of rows)."""
    import tracemalloc  # noqa: PLC0415
    b = s = 2 ** 13
    x = np.zeros((b, 1, s, 0), np.float32)
    q, headless = np.zeros((b, s, 1, 0), np.float32), np.zeros((b, s, 0, 2), np.float32)
    spec = vkrope.RopeFreqs(2)
    calls = [lambda: device.rotary_embedding(x, np.zeros((b, s, 0), np.float32), np.zeros((b, s, 0), np.float32)),
             lambda: device.apply_rotary_emb(q, q, np.zeros((s, 0), np.float32), np.zeros((s, 0), np.float32)),
             lambda: device.apply_rotary_emb(headless, headless, spec, None),
             lambda: device.apply_rotary_emb_hf(headless, headless, spec, None, start_pos=5),
             lambda: device.rotary_embedding(np.zeros((b, 0, s, 2), np.float32), spec, None)]
    # (no values, and more tokens than a row index holds: tables of as many rows, read by no token)
    big = np.broadcast_to(np.float32(0), ((1 << 31) + 1, 1))
    none = np.broadcast_to(np.float32(0), (0, (1 << 31) + 1, 1, 2))
    calls += [lambda: device.apply_rotary_emb(none, none, big, big),
              lambda: device.apply_rotary_emb_hf(none, none, np.broadcast_to(np.float32(0), ((1 << 31) + 1, 2)),
                                                 np.broadcast_to(np.float32(0), ((1 << 31) + 1, 2)))]
    for call in calls:
        tracemalloc.start()
        try:
            out = call()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert all(o.size == 0 for o in (out if isinstance(out, tuple) else (out,)))
        assert peak < 16 << 20, peak

"""The decode step in one submission (`vkrope.rope_and_cache`) against the
float64 oracle of tests/oracles/oracle_cache.py: every dtype of q and of the
caches, contiguous and paged caches, interleaved and rotate-half pairs,
partial rotary, RMSNorm (w and 1 + w), numpy and resident arguments, a
RopeFreqs spec or numpy / resident (cos, sin) caches; a model's own RoPE
(from its config) and the exact angle computed in the shader, against
tests/oracles/oracle_hf.py and float64 angles. Caches are poisoned before
each step: every row the step does not write must keep its bits."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np
import pytest

import vkrope
from oracle import BF16, BF16_MAX, bf16_round, bf16_values
from oracle_cache import assert_close, decode_step, poisoned, values
import oracle_hf

HF_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"

DTYPES = [np.dtype(np.float32), np.dtype(np.float16), BF16]
IDS = ["f32", "f16", "bf16"]
def tables(rng, rows, half):
    a = rng.uniform(-3, 3, (rows, half))
    return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)


def setup(rng, dtype, cache_dtype, paged, b=2, hq=4, hk=2, s=3, d=12, s_max=9, blocks=5, block=4):
    q = (rng.standard_normal((b, hq, s, d)) * 2).astype(dtype)
    k = (rng.standard_normal((b, hk, s, d)) * 2).astype(dtype)
    v = (rng.standard_normal((b, hk, s, d)) * 2).astype(dtype)
    if paged:
        shape = (blocks, block, hk, d)
        slots = rng.permutation(blocks * block)[:b * s].reshape(b, s)
        slots[0, -1] = slots[1, 0] = -1  # padding tokens: each writes nothing (-1 is never a slot named twice)
        pos = rng.integers(0, 40, (b, s))
    else:
        shape = (b, hk, s_max, d)
        slots = None
        pos = np.stack([rng.permutation(s_max)[:s] for _ in range(b)])
    return q, k, v, poisoned(shape, cache_dtype), poisoned(shape, cache_dtype), pos, slots


def check_step(dev, q, k, v, kc0, vc0, cos, sin, pos, y, kc, vc, *, slots=None, interleaved=False, q_norm=None,
               k_norm=None, plus_one=False, eps=1e-6, cache_position=None):
    want_q, want_k, want_v, written = decode_step(q, k, v, values(kc0), values(vc0), cos, sin, pos, slots=slots,
                                                  interleaved=interleaved, q_norm=q_norm, k_norm=k_norm,
                                                  plus_one=plus_one, eps=eps, cache_position=cache_position)
    assert_close(y, want_q, q.dtype, "q")
    kb, vb = kc.view(np.uint8), vc.view(np.uint8)
    item = kc.dtype.itemsize
    keep = np.repeat(~written[..., None], kc.shape[-1] * item, -1).reshape(kb.shape)
    assert np.array_equal(kb[keep], kc0.view(np.uint8)[keep]), "k_cache: a row the step does not write changed"
    assert np.array_equal(vb[keep], vc0.view(np.uint8)[keep]), "v_cache: a row the step does not write changed"
    assert_close(kc[written], want_k[written], kc.dtype, "k_cache")
    # v is stored rounded once to the cache's dtype: those exact bits
    want_v_bits = _rounded(want_v[written], vc.dtype)
    assert np.array_equal(vc[written].view(np.uint8), want_v_bits.view(np.uint8)), "v_cache: not v rounded once"


def _rounded(v64: np.ndarray, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt == BF16:
        bits = bf16_round(v64).astype(np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).view(BF16)
    return v64.astype(dt)  # numpy rounds float64 to nearest-even (exact float16 / float32 values here)


@pytest.mark.parametrize("d", [12, 16], ids=["D12", "D16"])  # D16: every texel whole (the vec4 path)
@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
@pytest.mark.parametrize("cache_dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_decode_step(device, dtype, cache_dtype, paged, interleaved, d):
    seed = zlib.crc32(f"{dtype}-{cache_dtype}-{paged}-{interleaved}-{d}".encode())  # the same every run
    rng = np.random.default_rng(seed)
    q, k, v, kc0, vc0, pos, slots = setup(rng, dtype, cache_dtype, paged, d=d)
    d = q.shape[-1]
    form = seed % 3  # numpy caches, resident caches, a RopeFreqs spec
    if form == 2:
        spec = vkrope.RopeFreqs(8, base=10000.0)  # rot 8 < D 12: the rest passes through
        cos, sin = spec.table(np.arange(64))
        freqs = spec
    else:
        cos, sin = tables(rng, 64, d // 2 if seed % 7 else d // 2 - 2)  # (now and then partial rotary)
        freqs = (cos, sin) if form == 0 else (device.asarray(cos), device.asarray(sin))
    norm = {}
    if seed % 2:
        norm = dict(q_norm=rng.uniform(0.5, 1.5, d).astype(np.float32),
                    k_norm=rng.uniform(-0.5, 0.5, d).astype(np.float32), norm_plus_one=bool(seed % 4 == 1))
    resident = seed % 5 < 2
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    args = [device.asarray(a) for a in (q, k, v)] if resident else [q, k, v]
    y = device.rope_and_cache(*args, kc, vc, freqs, pos, slots=slots, interleaved=interleaved, **norm)
    assert isinstance(y, vkrope.DeviceArray) == resident
    y = y.get() if resident else y
    assert y.dtype == dtype and y.shape == q.shape
    check_step(device, q, k, v, kc0, vc0, cos, sin, pos, y, kc.get(), vc.get(), slots=slots,
               interleaved=interleaved, q_norm=norm.get("q_norm"), k_norm=norm.get("k_norm"),
               plus_one=norm.get("norm_plus_one", False))


@pytest.mark.parametrize("d", [12, 16], ids=["D12", "D16"])  # value by value, and whole texels
@pytest.mark.parametrize("plus_one", [False, True], ids=["w", "1+w"])
def test_rms_norm_forms(device, plus_one, d):
    """Qwen3's x / rms * w and Gemma 3's x / rms * (1 + w), eps inside the
    root; large and tiny heads (the norm makes them alike)."""
    rng = np.random.default_rng(11)
    q, k, v, kc0, vc0, pos, _ = setup(rng, np.float32, np.float32, False, d=d)
    q[0, 0] *= 1e4
    k[1, 1] *= 1e-4
    cos, sin = tables(rng, 64, d // 2)
    wq, wk = rng.uniform(-1, 1, d).astype(np.float32), rng.uniform(-1, 1, d).astype(np.float32)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    y = device.rope_and_cache(q, k, v, kc, vc, (cos, sin), pos, q_norm=wq, k_norm=wk, norm_plus_one=plus_one,
                              eps=1e-5)
    check_step(device, q, k, v, kc0, vc0, cos, sin, pos, y, kc.get(), vc.get(), q_norm=wq, k_norm=wk,
               plus_one=plus_one, eps=1e-5)


@pytest.mark.parametrize("resident", [False, True], ids=["numpy", "resident"])
def test_a_q_of_no_heads_still_writes_the_caches(device, resident):
    """A q of no heads (an encoder step that only fills the caches): k and v
    rotated and written, an empty q returned, numpy or resident (an empty
    DeviceArray holds no memory to bind beside k's)."""
    rng = np.random.default_rng(13)
    q, k, v, kc0, vc0, pos, _ = setup(rng, np.float32, np.float32, False, hq=0)
    cos, sin = tables(rng, 64, 6)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    args = [device.asarray(a) for a in (q, k, v)] if resident else [q, k, v]
    y = device.rope_and_cache(*args, kc, vc, (cos, sin), pos)
    assert isinstance(y, vkrope.DeviceArray) == resident and y.shape == q.shape
    check_step(device, q, k, v, kc0, vc0, cos, sin, pos, y.get() if resident else y, kc.get(), vc.get())
    if resident:
        out = device.asarray(np.zeros_like(q))
        assert device.rope_and_cache(*args, kc, vc, (cos, sin), pos, out=out) is out
        assert device.rope_and_cache(*args, kc, vc, (cos, sin), pos, out=args[0]) is args[0]  # (out=q, in place)
        assert device.rope_and_cache(args[0], k, v, kc, vc, (cos, sin), pos, out=args[0]) is args[0]  # (numpy k)
    else:
        assert device.rope_and_cache(*args, kc, vc, (cos, sin), pos, out=args[0]) is args[0]


def test_out_and_in_place(device):
    """out= receives the rotated q; out=q (numpy or resident) is right too
    (the step reads a whole head of q: the runtime stages it)."""
    rng = np.random.default_rng(12)
    q, k, v, kc0, vc0, pos, _ = setup(rng, np.float32, np.float32, False)
    cos, sin = tables(rng, 64, 6)
    want = decode_step(q, k, v, values(kc0), values(vc0), cos, sin, pos)[0]
    out = np.full_like(q, np.nan)
    y = device.rope_and_cache(q, k, v, device.asarray(kc0), device.asarray(vc0), (cos, sin), pos, out=out)
    assert y is out
    assert_close(y, want, np.float32, "out")
    qq = q.copy()
    y = device.rope_and_cache(qq, k, v, device.asarray(kc0), device.asarray(vc0), (cos, sin), pos, out=qq)
    assert y is qq
    assert_close(qq, want, np.float32, "out=q")
    qd = device.asarray(q)
    y = device.rope_and_cache(qd, k, v, device.asarray(kc0), device.asarray(vc0), (cos, sin), pos, out=qd)
    assert y is qd
    assert_close(qd.get(), want, np.float32, "resident out=q")


def test_module_function_runs_on_the_default_device():
    dev = vkrope.default_device()
    rng = np.random.default_rng(13)
    q, k, v, kc0, vc0, pos, _ = setup(rng, np.float32, BF16, False)
    cos, sin = tables(rng, 64, 6)
    kc, vc = dev.asarray(kc0), dev.asarray(vc0)
    y = vkrope.rope_and_cache(q, k, v, kc, vc, (cos, sin), pos)
    check_step(dev, q, k, v, kc0, vc0, cos, sin, pos, y, kc.get(), vc.get())


# --- bad input: named, before any GPU work, caches unchanged ------------------------------
def bad_cases(rng, dev):
    q, k, v, kc0, vc0, pos, _ = setup(rng, np.float32, np.float32, False)
    cos, sin = tables(rng, 64, 6)
    kc, vc = dev.asarray(kc0), dev.asarray(vc0)
    pk, pv = dev.asarray(poisoned((5, 4, 2, 12), np.float32)), dev.asarray(poisoned((5, 4, 2, 12), np.float32))
    base = dict(q=q, k=k, v=v, k_cache=kc, v_cache=vc, freqs=(cos, sin), position_ids=pos)
    dup = pos.copy()
    dup[1, 1] = dup[1, 0]
    slots = np.array([[0, 1, 2], [3, 4, 5]])
    cases = [
        ("S_max = 9", ValueError, dict(position_ids=np.array([[0, 1, 9], [2, 3, 4]]))),  # distinct, one past
        ("max_pos = 64", ValueError, dict(position_ids=np.array([[0, 1, 64], [2, 3, 4]]), k_cache=pk, v_cache=pv,
                                          slots=slots)),
        (rf"position_ids\[1\] names cache row {dup[1, 0]} twice in this step", ValueError, dict(position_ids=dup)),
        ("position_ids", ValueError, dict(position_ids=pos[:, :2])),
        (r"position_ids must have shape \[B, S\] = \[2, 3\]; got \[3, 2, 3\]$", ValueError,
         dict(position_ids=np.stack([pos] * 3))),  # (tables: no M-RoPE model, no hint; test_hf_configs has one)
        (r"position_ids must have shape \[B, S\] = \[2, 3\]; got \[2, 3, 1\]$", ValueError,
         dict(position_ids=pos[..., None])),  # (3-D, not an M-RoPE model's ids: no hint)
        ("position_ids", TypeError, dict(position_ids=pos.astype(np.float32))),
        ("slots", ValueError, dict(k_cache=pk, v_cache=pv, slots=np.array([[0, 1, 2], [3, 4, 20]]))),
        ("slots names cache slot 4 twice in this step", ValueError, dict(k_cache=pk, v_cache=pv,
                                                               slots=np.array([[0, 1, 2], [3, 4, 4]]))),
        ("slots", ValueError, dict(k_cache=pk, v_cache=pv, slots=np.array([[0, 1, 2], [3, 4, -2]]))),
        ("a paged k_cache", ValueError, dict(slots=slots)),
        (r"cache_position must lie in \[-1, 9\)", ValueError, dict(cache_position=np.array([[0, 1, 9], [2, 3, 4]]))),
        (r"cache_position must lie in \[-1, 9\)", ValueError, dict(cache_position=np.array([[0, 1, -2], [2, 3, 4]]))),
        (r"cache_position\[1\] names cache row 3 twice in this step", ValueError,
         dict(cache_position=np.array([[0, 1, 2], [3, 3, 4]]))),
        (r"cache_position must have shape \[B, S\] = \[2, 3\]", ValueError, dict(cache_position=np.arange(3))),
        ("cache_position must be an integer array", TypeError, dict(cache_position=np.zeros((2, 3)))),
        ("pass one of them", ValueError, dict(k_cache=pk, v_cache=pv, slots=slots, cache_position=slots)),
        ("k_cache must be", ValueError, dict(k_cache=pk, v_cache=pv)),
        ("heads", ValueError, dict(k=k[:, :1].repeat(3, 1), v=v[:, :1].repeat(3, 1))),
        ("k must", ValueError, dict(k=k[..., :8], v=v[..., :8])),
        ("k and v must have one shape", ValueError, dict(v=v[:, :1])),
        ("k must have the dtype of q", TypeError, dict(k=k.astype(np.float16))),
        ("k_cache must be a DeviceArray", TypeError, dict(k_cache=kc0)),
        ("same DeviceArray", ValueError, dict(v_cache=kc)),
        ("k_cache and v_cache must have one dtype; got float32 and float16", TypeError,
         dict(v_cache=dev.asarray(vc0.astype(np.float16)))),
        (r"k_cache and v_cache must have one shape; got \[2, 2, 9, 12\] and \[2, 2, 8, 12\]", ValueError,
         dict(v_cache=dev.asarray(vc0[:, :, :8]))),  # (one token short: v's rows would land past its end)
        ("k_cache must be a buffer DeviceArray; got storage 'texture3d'", ValueError,
         dict(k_cache=dev.asarray(kc0, storage="texture3d"))),
        ("freqs", TypeError, dict(freqs=cos)),
        ("freqs", ValueError, dict(freqs=tables(rng, 64, 7))),  # rot 14 > D 12
        ("max_pos", ValueError, dict(freqs=tables(rng, 5, 6))),
        ("q_norm and k_norm go together", ValueError, dict(q_norm=np.ones(12, np.float32))),
        ("k_norm", ValueError, dict(q_norm=np.ones(12, np.float32), k_norm=np.ones(11, np.float32))),
        (r"k_norm must hold values within float32.s range \(the kernel reads float32; .*\); got 1e\+300", ValueError,
         dict(q_norm=np.ones(12), k_norm=np.full(12, 1e300))),  # (float64 past float32: inf, not the weight)
        ("eps", ValueError, dict(q_norm=np.ones(12, np.float32), k_norm=np.ones(12, np.float32), eps=0.0)),
        ("eps must be a positive", ValueError, dict(q_norm=np.ones(12, np.float32), k_norm=np.ones(12, np.float32),
                                                    eps=10 ** 400)),  # (an int past float64: no numpy message)
        ("interleaved", TypeError, dict(interleaved="yes")),
        (r"interleaved must be a bool \(or 0 / 1\); got int 2", TypeError, dict(interleaved=2)),  # (ONNX's 0 / 1 only)
        ("out", TypeError, dict(out=np.zeros((2, 4, 3, 12), np.float16))),
        ("q must be 4D", ValueError, dict(q=q[0])),
        ("norm_plus_one=True needs q_norm and k_norm", ValueError, dict(norm_plus_one=True)),
        ("k_cache is empty", ValueError, dict(k_cache=dev.asarray(np.zeros((0, 4, 2, 12), np.float32)),
                                              v_cache=dev.asarray(np.zeros((0, 4, 2, 12), np.float32)),
                                              slots=np.full((2, 3), -1))),
    ]
    return base, cases, (kc, vc, pk, pv)


@pytest.mark.parametrize("freqs_form", ["tables", "spec"])
def test_a_contiguous_cache_at_rows_other_than_the_positions(device, freqs_form):
    """A left-padded batch (transformers' generate(): positions cumsum(mask) - 1, rows the padded index; a
    new user's): cache_position gives a contiguous cache's rows apart from the positions, -1 writing nothing;
    a later step appends at its own rows. Checked against the float64 oracle, rows not written keeping
    their (poisoned) bits."""
    rng = np.random.default_rng(31)
    b, hq, hk, s, d, s_max = 2, 4, 2, 4, 12, 9
    mask = np.array([[1, 1, 1, 1], [0, 0, 1, 1]])  # item 1 padded on the left
    pos = np.where(mask, np.cumsum(mask, 1) - 1, 1)  # (transformers' masked_fill(mask == 0, 1))
    rows = np.broadcast_to(np.arange(s), (b, s)).copy()
    rows[1, 0] = -1  # (a pad token whose key the caller keeps out of the cache: item 1's, whose rows start past
    # item 0's, so a -1 read as a row would land in item 0's last one)
    q, k, v = ((rng.standard_normal((b, h, s, d)) * 2).astype(np.float32) for h in (hq, hk, hk))
    kc0, vc0 = poisoned((b, hk, s_max, d), np.float32), poisoned((b, hk, s_max, d), np.float32)
    spec = vkrope.RopeFreqs(d, base=10000.0, angle="exact")  # (float64 angles: the oracle's own tables below)
    a = np.arange(64)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)
    cos, sin = (np.cos(a), np.sin(a)) if freqs_form == "spec" else tables(rng, 64, d // 2)
    freqs = spec if freqs_form == "spec" else (cos, sin)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    y = device.rope_and_cache(q, k, v, kc, vc, freqs, pos, cache_position=rows)
    check_step(device, q, k, v, kc0, vc0, cos, sin, pos, y, kc.get(), vc.get(), cache_position=rows)
    k1, v1 = kc.get(), vc.get()
    q2, k2, v2 = (a[:, :, :1] for a in (q, k, v))
    pos2, rows2 = pos[:, -1:] + 1, np.array([[s], [s]])
    y2 = device.rope_and_cache(q2, k2, v2, kc, vc, freqs, pos2, cache_position=rows2)
    check_step(device, q2, k2, v2, k1, v1, cos, sin, pos2, y2, kc.get(), vc.get(), cache_position=rows2)


def test_an_mrope_model_writes_a_contiguous_cache_at_its_cache_position(device):
    """An M-RoPE model's positions (cache_position + rope_deltas) are not its cache rows: refused on a
    contiguous cache without cache_position, taken with it (text tokens: every axis alike), equal to the
    model's cos / sin at those positions."""
    cfg = {"model_type": "qwen2_vl", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
           "rope_theta": 1000000.0, "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]}}
    rope = vkrope.from_hf(cfg)
    rng = np.random.default_rng(32)
    b, s, d, s_max = 1, 2, 64, 8
    q, k, v = ((rng.standard_normal((b, h, s, d))).astype(np.float32) for h in (4, 2, 2))
    kc0, vc0 = poisoned((b, 2, s_max, d), np.float32), poisoned((b, 2, s_max, d), np.float32)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    pos, rows = np.array([[40, 41]]), np.array([[5, 6]])  # (rope_deltas 35 past an image)
    with pytest.raises(ValueError, match="pass cache_position"):
        device.rope_and_cache(q, k, v, kc, vc, rope, pos)
    y = device.rope_and_cache(q, k, v, kc, vc, rope, pos, cache_position=rows)
    c, sn = oracle_hf.cos_sin(oracle_hf.rope_of(cfg), np.arange(64)[None])  # (text: every axis alike)
    check_step(device, q, k, v, kc0, vc0, c[0, :, :d // 2], sn[0, :, :d // 2], pos, y, kc.get(), vc.get(),
               cache_position=rows)


def test_bad_input_is_named_and_leaves_the_caches(device):
    rng = np.random.default_rng(14)
    base, cases, caches = bad_cases(rng, device)
    before = [c.get().tobytes() for c in caches]
    for words, error, change in cases:
        args = {**base, **change}
        kw = {n: args.pop(n) for n in list(args) if n not in ("q", "k", "v", "k_cache", "v_cache", "freqs",
                                                               "position_ids")}
        with pytest.raises(error, match=words):
            device.rope_and_cache(args["q"], args["k"], args["v"], args["k_cache"], args["v_cache"], args["freqs"],
                                  args["position_ids"], **kw)
    assert [c.get().tobytes() for c in caches] == before
    # and the device still works
    q, k, v = base["q"], base["k"], base["v"]
    y = device.rope_and_cache(q, k, v, caches[0], caches[1], base["freqs"], base["position_ids"])
    assert y.shape == q.shape


def test_the_fused_norm_refuses_heads_past_2_16(device):
    """Each invocation sums its head's squares in one loop (twice where they overflow), which lavapipe stops
    silently past 65535 iterations: a head of 2^17 gave 1.0000572 for 0.8753. Past 2^16 channels the norm is a
    ValueError before any GPU work, the cache untouched; 2^16 itself is read (test_rms_norm_of_a_wide_head's
    lanes-64k, against float64: a run of 2^16 channels takes half a minute on lavapipe, so once)."""
    d = (1 << 16) + 4
    x = np.ones((1, 1, 1, d), np.float32)
    kc, vc = (device.asarray(np.full((1, 1, 1, d), np.nan, np.float32)) for _ in range(2))
    tabs = (np.ones((1, 2), np.float32), np.zeros((1, 2), np.float32))
    w = np.ones(d, np.float32)
    with pytest.raises(ValueError, match=rf"q_norm, k_norm: the fused RMSNorm takes heads of at most 65536 "
                       rf"channels; got D = {d}"):
        device.rope_and_cache(x, x, x, kc, vc, tabs, np.array([[0]]), q_norm=w, k_norm=w)
    assert np.isnan(kc.get()).all()
    assert device.rope_and_cache(x[..., :8], x[..., :8], x[..., :8], device.asarray(np.zeros((1, 1, 1, 8), np.float32)),
                                 device.asarray(np.zeros((1, 1, 1, 8), np.float32)), tabs, np.array([[0]]),
                                 q_norm=w[:8], k_norm=w[:8]).shape == (1, 1, 1, 8)  # (the device still works)


# --- a decode loop replays one recording --------------------------------------------------
@pytest.mark.parametrize("resident", [False, True])
@pytest.mark.parametrize("freqs_form", ["spec", "tables"])
def test_a_decode_loop_records_once(make_device, resident, freqs_form):
    """Positions advancing: one recording for the whole loop. numpy: new
    q, k, v each step; resident: the engine's buffers, the same each step
    (q, k, v and the rotated q's), as a decode loop keeps them."""
    device = make_device()
    rng = np.random.default_rng(15)
    b, hq, hk, d, s_max = 2, 8, 2, 16, 64
    kc, vc = device.asarray(np.zeros((b, hk, s_max, d), BF16)), device.asarray(np.zeros((b, hk, s_max, d), BF16))
    spec = vkrope.RopeFreqs(d, base=500000.0)
    freqs = spec if freqs_form == "spec" else tuple(device.asarray(t) for t in spec.table(np.arange(s_max)))
    held = [device.asarray(rng.standard_normal(shape).astype(np.float32))
            for shape in ((b, hq, 1, d), (b, hk, 1, d), (b, hk, 1, d), (b, hq, 1, d))]
    counts = []
    for step in range(16):
        pos = np.array([[step], [step + 3]])
        if resident:
            device.rope_and_cache(*held[:3], kc, vc, freqs, pos, out=held[3])
        else:
            q = rng.standard_normal((b, hq, 1, d)).astype(np.float32)
            k = rng.standard_normal((b, hk, 1, d)).astype(np.float32)
            v = rng.standard_normal((b, hk, 1, d)).astype(np.float32)
            device.rope_and_cache(q, k, v, kc, vc, freqs, pos)
        counts.append(device.stats()["recordings"])
    assert counts[-1] == counts[0], counts
    k_all = kc.get()
    assert (bf16_values(k_all[0, :, :16]) != 0).any(axis=-1).all() and not bf16_values(k_all[0, :, 16:]).any()


def test_the_benchmarks_two_steps_write_the_same_caches(device):
    """`vkrope bench --decode` times the fused step against RoPE + a row
    scatter: both must compute the same thing for the comparison to mean
    anything (batch 2, an 8-row cache): the same rotated q, the same cache
    rows."""
    from vkrope.bench.step import fused_and_unfused

    fused, unfused, info = fused_and_unfused(device, 2, s_max=8)
    cos, sin, q, k, v, q_out, kc, vc, yq, yk, _ = info["arrays"]
    fused(3)
    k_fused, v_fused, q_fused = kc.get(), vc.get(), q_out.get()
    assert np.abs(k_fused[:, :, 3]).max() > 0 and not k_fused[:, :, 4].any()
    unfused(3)
    assert np.array_equal(yq.get(), q_fused)
    assert np.array_equal(kc.get(), k_fused) and np.array_equal(vc.get(), v_fused)
    want_q, want_k = decode_step(q.get(), k.get(), v.get(), np.zeros((2, 8, 8, 128)), np.zeros((2, 8, 8, 128)),
                                 cos.get(), sin.get(), np.full((2, 1), 3))[:2]
    assert_close(q_fused, want_q, np.float32, "q")
    assert_close(k_fused[:, :, 3], want_k[:, :, 3], np.float32, "k rows")



def test_split_prefill_over_resident_tables_binds_aligned_windows(make_device):
    """A prefill split into several dispatches over resident (cos, sin)
    whose rows (4 bytes: rot 2) are no multiple of the binding alignment:
    each dispatch binds its table rows from an aligned offset (the
    validation layer, on for the suite, fails the test otherwise)."""
    dev = make_device(max_storage_buffer_range=64 << 10)
    rng = np.random.default_rng(16)
    s, d = 300, 64
    cos, sin = tables(rng, s, 1)
    q = rng.standard_normal((1, 1, s, d)).astype(np.float32)
    kc0 = poisoned((1, 1, s, d), np.float32)
    kc, vc = dev.asarray(kc0), dev.asarray(kc0)
    pos = np.arange(s)[None]
    y = dev.rope_and_cache(q, q, q, kc, vc, (dev.asarray(cos), dev.asarray(sin)), pos)
    check_step(dev, q, q, q, kc0, kc0, cos, sin, pos, y, kc.get(), vc.get())


def test_a_run_whose_table_window_is_too_wide_is_halved(make_device):
    """Batch items far apart in a resident table larger than a (forced)
    binding: one run over both items would bind rows 0 to 3000 of the
    table, so the run is halved until each binds a window that fits (one
    item each); the results are right."""
    dev = make_device(max_storage_buffer_range=64 << 10)
    rng = np.random.default_rng(20)
    b, hq, hk, s, d = 2, 2, 1, 8, 32
    cos, sin = tables(rng, 4000, 16)  # 250 KiB each
    q = rng.standard_normal((b, hq, s, d)).astype(np.float32)
    k, v = (rng.standard_normal((b, hk, s, d)).astype(np.float32) for _ in range(2))
    kc0 = poisoned((b, hk, 4000, d), np.float32)
    kc, vc = dev.asarray(kc0), dev.asarray(kc0)
    pos = np.stack([np.arange(s), 3000 + np.arange(s)])
    y = dev.rope_and_cache(q, k, v, kc, vc, (dev.asarray(cos), dev.asarray(sin)), pos)
    check_step(dev, q, k, v, kc0, kc0, cos, sin, pos, y, kc.get(), vc.get())


def test_bfloat16_numpy_tables(device):
    """(cos, sin) in the model's dtype, as Hugging Face's rotary module
    returns them for a bfloat16 model, are read as their float32 values."""
    rng = np.random.default_rng(17)
    q, k, v, kc0, vc0, pos, _ = setup(rng, BF16, BF16, False)
    cos, sin = (t.astype(BF16) for t in tables(rng, 64, 6))
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    y = device.rope_and_cache(q, k, v, kc, vc, (cos, sin), pos)
    check_step(device, q, k, v, kc0, vc0, bf16_values(cos), bf16_values(sin), pos, y, kc.get(), vc.get())


@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_caches_past_one_binding_in_fixed_slices(make_device, vk_spy, paged):
    """Caches larger than a binding: k and v go out in fixed slices, each
    binding within the (forced) range and starting on the (forced)
    alignment; the results are right, and a decode loop over them replays
    one recording (the slices do not follow the positions). B = 2, D = 12
    (a row of 24 bytes in float16: no multiple of the alignment)."""
    dev = make_device(max_storage_buffer_range=20 << 10, min_storage_buffer_offset_alignment=256)
    rng = np.random.default_rng(18)
    b, hq, hk, d = 2, 4, 2, 12
    shape = (100, 8, hk, d) if paged else (b, hk, 400, d)  # 38 KiB as float16: two slices
    kc0, vc0 = poisoned(shape, np.float16), poisoned(shape, np.float16)
    kc, vc = dev.asarray(kc0), dev.asarray(vc0)
    cos, sin = tables(rng, 400, 6)
    rc, rs = dev.asarray(cos), dev.asarray(sin)
    counts = []
    k_want, v_want = kc0, vc0
    for step in range(6):
        q = rng.standard_normal((b, hq, 1, d)).astype(np.float16)
        k = rng.standard_normal((b, hk, 1, d)).astype(np.float16)
        v = rng.standard_normal((b, hk, 1, d)).astype(np.float16)
        pos = np.array([[step], [390 - step]])
        slots = np.array([[step], [790 - step]]) if paged else None
        y = dev.rope_and_cache(q, k, v, kc, vc, (rc, rs), pos, slots=slots)
        k_now, v_now = kc.get(), vc.get()
        check_step(dev, q, k, v, k_want, v_want, cos, sin, pos, y, k_now, v_now, slots=slots)
        k_want, v_want = k_now, v_now
        counts.append(dev.stats()["recordings"])
    assert counts[-1] == counts[0], counts
    assert vk_spy["ranges"] and max(vk_spy["ranges"]) <= 20 << 10
    assert all(o % 256 == 0 for o in vk_spy["offsets"]), sorted(set(o % 256 for o in vk_spy["offsets"]))


def test_row_blocks_of_several_batch_items(make_device):
    """A numpy step past one (forced) allocation on a device that stages
    (no host-memory import): runs of tokens of each batch item, every block
    writing its own rows of the result and of the caches."""
    dev = make_device(max_memory_allocation_size=256 << 10, external_memory_host=False)
    rng = np.random.default_rng(19)
    b, hq, hk, s, d = 3, 8, 2, 40, 32
    q = rng.standard_normal((b, hq, s, d)).astype(np.float32)  # 120 KiB, and its result
    k, v = (rng.standard_normal((b, hk, s, d)).astype(np.float32) for _ in range(2))
    kc0 = poisoned((b, hk, 64, d), np.float32)
    kc, vc = dev.asarray(kc0), dev.asarray(kc0)
    cos, sin = tables(rng, 64, 16)
    pos = np.stack([rng.permutation(64)[:s] for _ in range(b)])
    before = dev.stats()["submissions"]
    y = dev.rope_and_cache(q, k, v, kc, vc, (cos, sin), pos)
    assert dev.stats()["submissions"] - before > 1  # row blocks
    check_step(dev, q, k, v, kc0, kc0, cos, sin, pos, y, kc.get(), vc.get())


@pytest.mark.parametrize("overlaps", ["q", "k", "v"])
@pytest.mark.parametrize("shift", [1, -1])
def test_row_blocks_with_out_overlapping_an_input(make_device, overlaps, shift):
    """A numpy step in row blocks whose `out` overlaps q, k or v one head row apart: each block reads its
    inputs as given, not as earlier blocks wrote them (k had gone into the cache half overwritten)."""
    dev = make_device(max_memory_allocation_size=256 << 10, external_memory_host=False)
    rng = np.random.default_rng(23)
    b, hq, hk, s, d = 2, 4, 4, 60, 32  # (q, k and v of one shape: any may share out's buffer)
    shape = (b, hq, s, d)
    buf = rng.standard_normal(b * hq * s * d + d).astype(np.float32)
    shared, out = (buf[d:], buf[:-d]) if shift > 0 else (buf[:-d], buf[d:])
    args = {n: rng.standard_normal(shape).astype(np.float32) for n in ("q", "k", "v")}
    args[overlaps] = shared.reshape(shape)
    given = {n: a.copy() for n, a in args.items()}
    kc0 = poisoned((b, hk, 64, d), np.float32)
    kc, vc = dev.asarray(kc0), dev.asarray(kc0)
    cos, sin = tables(rng, 64, 16)
    pos = np.stack([rng.permutation(64)[:s] for _ in range(b)])
    before = dev.stats()["submissions"]
    y = dev.rope_and_cache(args["q"], args["k"], args["v"], kc, vc, (cos, sin), pos, out=out.reshape(shape))
    assert dev.stats()["submissions"] - before > 1  # row blocks
    check_step(dev, given["q"], given["k"], given["v"], kc0, kc0, cos, sin, pos, y, kc.get(), vc.get())


# llama3's bands; YaRN's attention factor (the magnitude); partial rotary 32 of
# 80 (whole texels); interleaved pairs over half the head
@pytest.mark.parametrize("name", ["llama-3.1-8b", "qwen2.5-7b-yarn", "phi-2", "glm-4-9b"])
@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
def test_a_models_rope_computed_in_the_shader(device, name, dtype):
    """rope_and_cache with a `ModelRope`: the frequencies come from the
    shader (glsl/freqs.glsl), each token's from its position; against
    transformers' formulas written out in oracle_hf, at positions up to
    100000 (paged caches: a position only picks the angle)."""
    path = HF_CONFIGS / f"{name}.json"
    rope = vkrope.from_hf(str(path))
    ref = oracle_hf.rope_of(json.loads(path.read_text()))
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    b, s, d, rot = 2, 3, rope.head_dim, rope.rotary_dim
    q, k, v, kc0, vc0, _, slots = setup(rng, dtype, dtype, True, d=d, hq=2, hk=1)
    pos = np.array([[0, 1, 4097], [99999, 31, 65536]])
    cos, sin = (t.reshape(b * s, -1)[:, :rot // 2] for t in oracle_hf.cos_sin(ref, pos))
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    y = device.rope_and_cache(q, k, v, kc, vc, rope, pos, slots=slots, interleaved=rope.interleaved)
    check_step(device, q, k, v, kc0, vc0, cos, sin, np.arange(b * s).reshape(b, s), y, kc.get(), vc.get(),
               slots=slots, interleaved=rope.interleaved)


@pytest.mark.parametrize("dtype", DTYPES, ids=IDS)
@pytest.mark.parametrize("interleaved", [False, True], ids=["half", "interleaved"])
def test_a_models_rope_value_by_value(device, tmp_path, interleaved, dtype):
    """Head 10, rotary 6 (phi's partial_rotary_factor 0.6): no texel is
    whole, so the decode step computes each value's cos / sin alone."""
    cfg = {"model_type": "phi", "hidden_size": 40, "num_attention_heads": 4, "partial_rotary_factor": 0.6,
           "rope_theta": 10000.0, "max_position_embeddings": 2048}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    rope = vkrope.from_hf(str(path))
    assert (rope.head_dim, rope.rotary_dim) == (10, 6)
    rng = np.random.default_rng(10 + interleaved)
    b, s = 2, 3
    q, k, v, kc0, vc0, _, slots = setup(rng, dtype, dtype, True, d=10, hq=2, hk=1)
    pos = np.array([[0, 3, 2047], [9000, 1, 77]])
    cos, sin = (t.reshape(b * s, -1)[:, :3] for t in oracle_hf.cos_sin(oracle_hf.rope_of(cfg), pos))
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    # (the pairs are the call's: transformers' phi rotates halves; the kernel takes either)
    y = device.rope_and_cache(q, k, v, kc, vc, rope.freqs(pos), pos, slots=slots, interleaved=interleaved)
    check_step(device, q, k, v, kc0, vc0, cos, sin, np.arange(b * s).reshape(b, s), y, kc.get(), vc.get(),
               slots=slots, interleaved=interleaved)


@pytest.mark.parametrize("d, rot, interleaved", [(16, 16, False), (16, 16, True), (12, 8, False), (12, 6, False),
                                                 (12, 6, True), (10, 6, True)])
def test_the_exact_angle_in_the_shader(device, d, rot, interleaved):
    """A RopeFreqs spec with angle="exact": cos / sin of position times the
    float64 frequency, reduced exactly, at positions where the float32 angle
    is off by far more than the tolerance (up to 2^24 - 1)."""
    rng = np.random.default_rng(d + rot + interleaved)
    q, k, v, kc0, vc0, _, slots = setup(rng, np.dtype(np.float32), np.dtype(np.float32), True, d=d, blocks=8)
    pos = np.array([[0, 12345, 2**24 - 1], [1_000_003, 7, 2**23 + 5]])
    spec = vkrope.RopeFreqs(rot, base=10000.0, angle="exact")
    a = pos.reshape(-1, 1).astype(np.float64) * (1.0 / 10000.0 ** (np.arange(0, rot, 2) / rot))
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    y = device.rope_and_cache(q, k, v, kc, vc, spec, pos, slots=slots, interleaved=interleaved)
    check_step(device, q, k, v, kc0, vc0, np.cos(a), np.sin(a), np.arange(6).reshape(2, 3), y, kc.get(), vc.get(),
               slots=slots, interleaved=interleaved)


@pytest.mark.parametrize("d, rot_half, spike", [(65536, 1, False), (16384, 8192, False), (4098, 1, True),
                                                 (4096, 1024, True)],
                         ids=["lanes-64k", "texels-16k", "lanes-spike", "texels-spike"])
def test_rms_norm_of_a_wide_head(device, d, rot_half, spike):
    """Heads up to 2^16 (the widest the norm takes, in lanes-64k; a lanes-32k case of 32770 channels, the tail
    loop's past 2^15, took 7 s of the suite and proved nothing lanes-64k and lanes-spike do not): the sum of
    squares ran one value a step, and lavapipe's llvmpipe stops a shader's loops
    silently past 65535 iterations in all (D 65524 up lost lanes of q and k: stale memory, no error); summed
    plainly in float32 it was off by 1.6x the documented bound from D 16386. Now four squares a step,
    compensated: within the bound at every width, and where a plain sum loses every small term to the first."""
    rng = np.random.default_rng(d)
    q, k, v = (rng.uniform(0.5, 1.5, (1, 1, 1, d)).astype(np.float32) for _ in range(3))  # (sums that only grow)
    if spike:  # one square of 2^26 and then ones: each plain step's +4 is half an ulp of the sum, lost to the tie
        q[...] = k[...] = 1.0
        q[..., rot_half * 2] = k[..., rot_half * 2] = 8192.0
    kc0, vc0 = poisoned((1, 1, 2, d), np.float32), poisoned((1, 1, 2, d), np.float32)
    cos, sin = tables(rng, 4, rot_half)
    wq, wk = rng.uniform(0.5, 1.5, d).astype(np.float32), rng.uniform(-1, 1, d).astype(np.float32)
    kc, vc = device.asarray(kc0), device.asarray(vc0)
    pos = np.array([[1]])
    y = device.rope_and_cache(q, k, v, kc, vc, (cos, sin), pos, q_norm=wq, k_norm=wk)
    check_step(device, q, k, v, kc0, vc0, cos, sin, pos, y, kc.get(), vc.get(), q_norm=wq, k_norm=wk)
    # the channels past the rotary width, normalised only: each within an ulp plus 2^-20 of itself
    rot = 2 * rot_half
    for got, x, w in ((y[..., rot:], q, wq), (kc.get()[:, :, 1, rot:], k[:, :, 0], wk)):
        x64 = x.astype(np.float64)
        ref = (x64 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6) * w)[..., rot:]
        bound = np.spacing(np.abs(ref).astype(np.float32)) + 2.0 ** -20 * np.abs(ref)
        assert (np.abs(got - ref) <= bound).all(), float((np.abs(got - ref) / bound).max())


@pytest.mark.parametrize("d", [12, 16], ids=["lanes", "texels"])
def test_rms_norm_keeps_every_channel_of_its_row(device, d):
    """Each normalised channel within a float32 ulp plus 2^-20 of itself (identity rotation: q out is the
    normalised q): a huge row's small values (they went through float32 subnormals when scaled by 2^-80
    before the norm: 3.3e-4 off) and a large weight beside zeros and small values (the norm times the weight
    first overflowed to inf, and 0 * inf gave NaN; torch multiplies x by the norm, then by the weight)."""
    rows = [(np.r_[1.9e19, np.full(d - 1, 1.2345678e-18)], np.ones(d)),
            (np.r_[2.0 ** 64, 1.2345678 * 2.0 ** -60, np.ones(d - 2)], np.ones(d)),
            (np.r_[0.0, 1e-30, np.zeros(d - 2)], np.full(d, 1e36)), (np.zeros(d), np.full(d, 1e36))]
    cos, sin = np.ones((2, d // 2), np.float32), np.zeros((2, d // 2), np.float32)
    for row, w in rows:
        x = row.astype(np.float32).reshape(1, 1, 1, d)
        kc, vc = (device.asarray(np.zeros((1, 1, 2, d), np.float32)) for _ in range(2))
        y = device.rope_and_cache(x, x, x, kc, vc, (cos, sin), np.array([[1]]), q_norm=w.astype(np.float32),
                                  k_norm=w.astype(np.float32))
        x64 = x.astype(np.float64)[0, 0, 0]
        ref = x64 / np.sqrt((x64 ** 2).mean() + 1e-6) * w
        bound = np.spacing(np.abs(ref).astype(np.float32)) + 2.0 ** -20 * np.abs(ref)
        for got in (y[0, 0, 0], kc.get()[0, 0, 1]):
            assert np.isfinite(got).all() and (np.abs(got - ref) <= bound).all(), (got, ref)


@pytest.mark.parametrize("dtype", [np.dtype(np.float32), BF16], ids=["f32", "bf16"])
@pytest.mark.parametrize("d", [12, 16], ids=["lanes", "texels"])
def test_rms_norm_whose_squares_pass_float32s_range(device, d, dtype):
    """A head whose sum of squares passes float32's range while its mean square need not (1e20 each, 2^63 each,
    float32's largest, or a few huge values among ordinary ones) is normalised as float64 arithmetic does it:
    the sum is taken again of x * 2^-80 (it gave 0, float32's x * rsqrt(inf), before). One inf value makes its
    own channel (and what it rotates with) NaN, the others 0: x * rsqrt(inf), in float64 as in float32."""
    rng = np.random.default_rng(d)
    big = float(np.finfo(np.float32).max) if dtype != BF16 else BF16_MAX
    rows = [np.full(d, 1e20), np.full(d, 2.0 ** 63), np.full(d, big), rng.uniform(-2, 2, d) * 1e19,
            np.where(np.arange(d) % 5 == 0, -big, rng.uniform(-1, 1, d))]
    for row in rows:
        x = np.asarray(bf16_round(row) if dtype == BF16 else row, np.float32).astype(dtype).reshape(1, 1, 1, d)
        wq, wk = rng.uniform(0.5, 1.5, d).astype(np.float32), rng.uniform(-1, 1, d).astype(np.float32)
        kc0, vc0 = poisoned((1, 1, 2, d), np.float32), poisoned((1, 1, 2, d), np.float32)
        kc, vc = device.asarray(kc0), device.asarray(vc0)
        cos, sin = tables(rng, 4, d // 2)
        pos = np.array([[1]])
        y = device.rope_and_cache(x, x, x, kc, vc, (cos, sin), pos, q_norm=wq, k_norm=wk)
        check_step(device, x, x, x, kc0, vc0, cos, sin, pos, y, kc.get(), vc.get(), q_norm=wq, k_norm=wk)
    one_inf = np.ones((1, 1, 1, d), np.float32)
    one_inf[..., 1] = np.inf
    w = np.ones(d, np.float32)
    kc, vc = (device.asarray(np.zeros((1, 1, 2, d), np.float32)) for _ in range(2))
    y = device.rope_and_cache(one_inf, one_inf, one_inf, kc, vc, vkrope.RopeFreqs(d), np.array([[1]]),
                              q_norm=w, k_norm=w)
    partner = 1 + d // 2  # (rotate-half: channel 1 turns with channel 1 + D/2)
    nan = np.isnan(y[0, 0, 0])
    assert nan[1] and nan[partner] and nan.sum() == 2 and (y[0, 0, 0][~nan] == 0).all()


@pytest.mark.parametrize("d", [12, 16], ids=["lanes", "texels"])
def test_bfloat16_keys_into_a_float32_cache_keep_float32s_precision(device, d):
    """bfloat16 k rotated by tiny cos / sin (both products below 2^-60: computed scaled by 2^64) into a
    float32 cache: within a float32 ulp of the exact value (it was rounded on bfloat16's grid, 8 bits)."""
    rng = np.random.default_rng(d)
    k = rng.uniform(0.5, 2, (1, 1, 1, d)).astype(BF16)
    a = rng.uniform(-3, 3, (2, d // 2))
    cos, sin = (np.cos(a) * 2.0 ** -70).astype(np.float32), (np.sin(a) * 2.0 ** -70).astype(np.float32)
    kc, vc = (device.asarray(np.zeros((1, 1, 2, d), np.float32)) for _ in range(2))
    device.rope_and_cache(k, k, k, kc, vc, (cos, sin), np.array([[1]]))
    x = bf16_values(k)[0, 0, 0]
    c, s = cos[1].astype(np.float64), sin[1].astype(np.float64)
    h = d // 2
    want = np.r_[x[:h] * c - x[h:] * s, x[h:] * c + x[:h] * s]
    got = kc.get()[0, 0, 1]
    assert (np.abs(got - want) <= np.spacing(np.abs(want).astype(np.float32))).all(), (got - want) / want

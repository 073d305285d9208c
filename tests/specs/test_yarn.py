"""YaRN context extension (`vkrope.RopeFreqs(..., scale=factor, yarn=vkrope.YaRN(...))`)
against oracles written here from the two sources, sharing no code with
vkrope: Hugging Face's `_compute_yarn_parameters` (transformers
modeling_rope_utils.py, "yarn"), step by step in numpy float32 as torch
runs it on the CPU, and llama.cpp's rope_yarn / ggml_rope_yarn_corr_dims
(ggml-cpu ops.cpp, the Vulkan rope shaders), in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest

import vkrope
import torch_golden
from oracle_family import onnx_rotary_embedding
from test_generated import STORAGES, pow32, ulps, unit_x

F32 = np.float32


def hf_yarn(dim, base, factor, original, beta_fast=32.0, beta_slow=1.0, truncate=True, attention_factor=None, dtype=F32):
    """(inv_freq float32 [dim/2], attention_factor float) as transformers
    computes them (dtype=np.float64: the same steps in float64, the exact
    angle mode's frequency)."""
    F = dtype  # noqa: N806
    def get_mscale(scale, mscale=1):
        return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0

    if attention_factor is None:
        attention_factor = get_mscale(factor)

    def find_correction_dim(num_rotations):
        return (dim * math.log(original / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = find_correction_dim(beta_fast), find_correction_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=F) - F(low)) / F(high - low), F(0), F(1))
    extrapolation_factor = F(1) - ramp
    if F is F32:  # torch's float32 power, correctly rounded (within 1 ulp of torch's: see the golden tests)
        pos_freqs = pow32(base, np.arange(0, dim, 2, dtype=F32) / F32(dim))
    else:
        pos_freqs = np.array([math.pow(base, i / dim) for i in range(0, dim, 2)])
    extrap = F(1.0) / pos_freqs
    interp = F(1.0) / (F(factor) * pos_freqs)
    inv = interp * (F(1) - extrapolation_factor) + extrap * extrapolation_factor
    assert inv.dtype == F
    return inv, attention_factor


def hf_cache(positions, inv, attention_factor):
    """(cos, sin) float32 [len(positions), dim/2]: HF's float32 angle, its
    cos / sin (float64 here, rounded once), times the attention factor in float32."""
    a = (np.asarray(positions).astype(F32)[:, None] * inv[None, :]).astype(np.float64)
    af = F32(attention_factor)
    return (np.cos(a).astype(F32) * af).astype(F32), (np.sin(a).astype(F32) * af).astype(F32)


def llama_theta(positions, dim, base, freq_scale, n_ctx_orig, ext_factor, beta_fast=32.0, beta_slow=1.0,
                attn_factor=1.0):
    """(theta float64 [len(positions), dim/2], mscale): llama.cpp's rope_yarn in float64."""
    def corr_dim(n_rot):
        return dim * math.log(n_ctx_orig / (n_rot * 2 * math.pi)) / (2 * math.log(base))

    low = max(0.0, math.floor(corr_dim(beta_fast)))
    high = min(dim - 1.0, math.ceil(corr_dim(beta_slow)))
    i0 = np.arange(0, dim, 2, dtype=np.float64)
    y = (i0 / 2 - low) / max(0.001, high - low)
    ramp_mix = (1 - np.clip(y, 0, 1)) * ext_factor
    theta_extrap = np.asarray(positions, np.float64)[:, None] * base ** (-i0 / dim)[None, :]
    theta_interp = freq_scale * theta_extrap
    theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix
    mscale = attn_factor * (1.0 + 0.1 * math.log(1.0 / freq_scale)) if ext_factor != 0 else attn_factor
    return theta, mscale


CONFIGS = [  # (dim, base, factor, original context, beta_fast, beta_slow, truncate)
    (128, 10000.0, 4.0, 4096, 32.0, 1.0, True),        # Llama 2 style YaRN
    (64, 1000000.0, 8.0, 32768, 32.0, 1.0, True),      # Qwen-style long base
    (128, 150000.0, 32.0, 4096, 32.0, 1.0, False),     # gpt-oss: truncate off
    (32, 10000.0, 2.0, 2048, 16.0, 2.0, True),         # other betas
    (64, 10000.0, 4.0, 128, 32.0, 1.0, True),          # low clamped to 0
    (32, 10.0, 4.0, 635, 32.0, 1.0, True),             # high clamped to dim - 1
]


@pytest.mark.parametrize("cfg", CONFIGS)
def test_inverse_frequencies_and_magnitude_are_hugging_faces(cfg):
    """The spec's float32 inverse frequencies are HF's bit for bit, and its
    magnitude is HF's attention factor in float32."""
    dim, base, factor, orig, bf, bs, trunc = cfg
    spec = vkrope.RopeFreqs(dim, base=base, scale=factor,
                            yarn=vkrope.YaRN(orig, beta_fast=bf, beta_slow=bs, truncate=trunc))
    inv, af = hf_yarn(dim, base, factor, orig, bf, bs, trunc)
    assert np.array_equal(spec.inv_freq_float32().view(np.uint32), inv.view(np.uint32))
    assert spec.magnitude == F32(af)
    inv64, _ = hf_yarn(dim, base, factor, orig, bf, bs, trunc, dtype=np.float64)
    assert np.array_equal(spec.inv_freq_float64(), inv64)
    pos = np.arange(0, 3 * orig, 5)
    c, s = spec.table(pos)
    hc, hs = hf_cache(pos, inv, af)
    assert np.array_equal(c, hc) and np.array_equal(s, hs)


@pytest.mark.parametrize("cfg", sorted(torch_golden.YARN))
def test_yarn_against_torchs_own_bits(cfg):
    """torch's bits (tests/torch_golden.py, from scripts/torch_golden.py):
    from torch's own power every later step is bit for bit HF's, and the
    correctly rounded power vkrope uses is within 1 ulp of torch's, the
    inverse frequencies within 2."""
    dim, base, factor, orig, bf, bs, trunc = cfg
    pos_bits, inv_bits, af = torch_golden.YARN[cfg]
    spec = vkrope.RopeFreqs(dim, base=base, scale=factor,
                            yarn=vkrope.YaRN(orig, beta_fast=bf, beta_slow=bs, truncate=trunc))
    torch_pos = np.array(pos_bits, np.int32).view(F32)
    torch_inv = np.array(inv_bits, np.int32).view(F32)
    assert np.array_equal(spec.inv_freq_from(torch_pos).view(np.int32), torch_inv.view(np.int32))
    assert spec.magnitude == F32(af)
    ours = pow32(base, np.arange(0, dim, 2, dtype=F32) / F32(dim))
    assert np.abs(ours.view(np.int32) - torch_pos.view(np.int32)).max() <= 1
    assert np.abs(spec.inv_freq_float32().view(np.int32) - torch_inv.view(np.int32)).max() <= 2


def test_plain_and_axial_frequencies_against_torchs_own_bits():
    """RoPE's and SAM2's inverse frequencies within 1 ulp of torch's."""
    for (dim, base), b in torch_golden.PLAIN.items():
        got = vkrope.RopeFreqs(dim, base=base).inv_freq_float32().view(np.int32)
        assert np.abs(got - np.array(b, np.int32)).max() <= 1, (dim, base)
    for (dim, theta), b in torch_golden.AXIAL.items():
        got = vkrope.AxialFreqs(dim, 4, 4, theta=theta).inv_freq_float32().view(np.int32)
        assert np.abs(got - np.array(b, np.int32)).max() <= 1, (dim, theta)


@pytest.mark.parametrize("kernel", ["table", "interleaved"])
@pytest.mark.parametrize("angle", ["float32", "exact"])
def test_cos_sin_within_two_ulp(device, kernel, angle):
    """Shader cos / sin times the magnitude, against float64 cos / sin of the
    same angle times the float32 magnitude (float32 angle: HF's; exact: the
    float64 frequency times the integer position), positions up to 2^24."""
    rng = np.random.default_rng(17)
    dim, base, factor, orig = 128, 10000.0, 4.0, 4096
    spec = vkrope.RopeFreqs(dim, base=base, scale=factor, yarn=vkrope.YaRN(orig), angle=angle)
    pos = np.concatenate([np.arange(1 << 12), rng.integers(0, 1 << 24, 1 << 11), [(1 << 24) - 1]])
    if angle == "exact":  # the float64 frequency times the integer position, in 64-bit-mantissa long double
        inv, _ = hf_yarn(dim, base, factor, orig, dtype=np.float64)
        a = np.outer(pos.astype(np.longdouble), inv.astype(np.longdouble))
    else:
        inv, _ = hf_yarn(dim, base, factor, orig)
        a = (pos.astype(F32)[:, None] * inv[None, :]).astype(np.longdouble)
    m = np.longdouble(F32(0.1 * math.log(factor) + 1.0))
    if kernel == "table":
        y = device.rotary_embedding(unit_x(1, 1, len(pos), dim), spec, None, pos[None, :], interleaved=1)[0, 0]
    else:
        y = device.apply(unit_x(1, 1, len(pos), dim)[0], spec, positions=pos)[0]
    err_c, err_s = ulps(y[:, 0::2], np.cos(a) * m), ulps(y[:, 1::2], np.sin(a) * m)
    assert err_c.max() <= 2 and err_s.max() <= 2, (float(err_c.max()), float(err_s.max()))


@pytest.mark.parametrize("ext_factor,attn_factor", [(1.0, 1.0), (0.5, 0.8), (0.0, 1.3)])
def test_exact_angle_is_llama_cpps_rope_yarn(device, ext_factor, attn_factor):
    """The exact mode's rotation is llama.cpp's rope_yarn (float64 theta, its
    mscale) to float32 rounding: ext_factor and attn_factor as llama.cpp uses them."""
    dim, base, factor, orig = 64, 10000.0, 8.0, 2048
    spec = vkrope.RopeFreqs(dim, base=base, scale=factor, angle="exact",
                            yarn=vkrope.YaRN(orig, ext_factor=ext_factor, attn_factor=attn_factor))
    pos = np.arange(0, 1 << 20, 997)
    theta, mscale = llama_theta(pos, dim, base, 1.0 / factor, orig, ext_factor, attn_factor=attn_factor)
    y = device.rotary_embedding(unit_x(1, 1, len(pos), dim), spec, None, pos[None, :], interleaved=1)[0, 0]
    assert abs(float(spec.magnitude) - mscale) <= 1e-7 * mscale
    assert np.abs(y[:, 0::2] - mscale * np.cos(theta)).max() < 4e-7 * mscale
    assert np.abs(y[:, 1::2] - mscale * np.sin(theta)).max() < 4e-7 * mscale


@pytest.mark.parametrize("storage", STORAGES)
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("resident", [False, True])
@pytest.mark.parametrize("interleaved", [0, 1])
def test_rotary_embedding_with_yarn_matches_hf_cache(device, storage, dtype, resident, interleaved):
    """ONNX RotaryEmbedding with a YaRN spec equals the oracle fed HF's
    cache (partial rotary, [B, H, S, D]), numpy and resident x, poisoned out."""
    rng = np.random.default_rng(40 + interleaved)
    b, h, s, d, rot = 2, 3, 11, 40, 32
    spec = vkrope.RopeFreqs(rot, base=10000.0, scale=4.0, yarn=vkrope.YaRN(512))
    pos = rng.integers(0, 8192, (b, s))
    inv, af = hf_yarn(rot, 10000.0, 4.0, 512)
    c, sn = hf_cache(pos.reshape(-1), inv, af)
    x = rng.standard_normal((b, h, s, d)).astype(dtype)
    kw = dict(interleaved=interleaved, rotary_embedding_dim=rot)
    ref = onnx_rotary_embedding(x, c.reshape(b, s, -1), sn.reshape(b, s, -1), **kw)
    if resident:
        y = device.rotary_embedding(device.asarray(x, storage=storage), spec, None, pos, **kw).get()
    else:
        y = device.rotary_embedding(x, spec, None, pos, storage=storage, **kw)
    tol = 2e-6 if dtype == np.float32 else 2e-3
    assert np.isfinite(y).all()
    assert np.abs(y.astype(np.float64) - ref).max() < tol * max(1.0, np.abs(ref).max())


def test_apply_rotary_emb_ops_with_yarn(device):
    """ExecuTorch's LLM ops take a YaRN spec like any RopeFreqs."""
    from oracle_family import et_apply_rotary_emb

    rng = np.random.default_rng(9)
    xq = rng.standard_normal((1, 9, 4, 32)).astype(np.float32)
    xk = rng.standard_normal((1, 9, 2, 32)).astype(np.float32)
    spec = vkrope.RopeFreqs(32, base=500000.0, scale=16.0, yarn=vkrope.YaRN(1024, attn_factor=0.9))
    inv, af = hf_yarn(32, 500000.0, 16.0, 1024)
    c, s = hf_cache(np.arange(9), inv, 0.9 * af)
    for y, r in zip(device.apply_rotary_emb(xq, xk, spec, None), et_apply_rotary_emb(xq, xk, c, s)):
        assert np.abs(y - r).max() < 2e-5


def test_specs_differing_only_in_yarn_give_their_own_results(device):
    """No cache keyed on anything less than the whole spec mixes them up."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 2, 6, 32)).astype(np.float32)
    pos = rng.integers(0, 4096, (1, 6))
    cases = [(vkrope.RopeFreqs(32, scale=4.0, yarn=vkrope.YaRN(256)), hf_yarn(32, 10000.0, 4.0, 256)),
             (vkrope.RopeFreqs(32, scale=4.0, yarn=vkrope.YaRN(256, attn_factor=2.0)),
              (hf_yarn(32, 10000.0, 4.0, 256)[0], 2.0 * hf_yarn(32, 10000.0, 4.0, 256)[1])),
             (vkrope.RopeFreqs(32, scale=4.0, yarn=vkrope.YaRN(1024)), hf_yarn(32, 10000.0, 4.0, 1024)),
             (vkrope.RopeFreqs(32, scale=4.0, yarn=vkrope.YaRN(1024, truncate=False)),
              hf_yarn(32, 10000.0, 4.0, 1024, truncate=False))]
    assert len({spec for spec, _ in cases}) == 4
    for spec, (inv, af) in cases + cases[::-1]:
        c, s = hf_cache(pos.reshape(-1), inv, af)
        ref = onnx_rotary_embedding(x, c.reshape(1, 6, -1), s.reshape(1, 6, -1))
        assert np.abs(device.rotary_embedding(x, spec, None, pos) - ref).max() < 2e-5


def test_freq_factors_divide_the_blended_frequencies(device):
    """freq_factors with yarn: HF's blend, then each divided by its factor
    in float32 (llama.cpp divides both terms first: equal to float32 rounding)."""
    rng = np.random.default_rng(12)
    ff = rng.uniform(1, 8, 16)
    spec = vkrope.RopeFreqs(32, scale=4.0, freq_factors=ff, yarn=vkrope.YaRN(512))
    inv, af = hf_yarn(32, 10000.0, 4.0, 512)
    inv = inv / ff.astype(F32)
    assert np.array_equal(spec.inv_freq_float32().view(np.int32), inv.view(np.int32))
    pos = np.arange(0, 1 << 20, 4099)
    theta, mscale = llama_theta(pos, 32, 10000.0, 0.25, 512, 1.0)
    theta = theta / ff[None, :]
    y = device.rotary_embedding(unit_x(1, 1, len(pos), 32), spec.__class__(32, scale=4.0, freq_factors=ff,
                                yarn=vkrope.YaRN(512), angle="exact"), None, pos[None, :], interleaved=1)[0, 0]
    assert np.abs(y[:, 0::2] - mscale * np.cos(theta)).max() < 4e-7 * mscale


def test_apply_reference_with_yarn():
    """vkrope.apply_reference (float64 numpy) with a YaRN spec is HF's rotation."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 7, 32))
    pos = np.array([0, 5, -1, 900, 4095, 17, 3])
    spec = vkrope.RopeFreqs(32, scale=8.0, yarn=vkrope.YaRN(512, attn_factor=0.7))
    inv, af = hf_yarn(32, 10000.0, 8.0, 512)
    a = (np.maximum(pos, 0).astype(F32)[:, None] * inv[None, :]).astype(np.float64)
    m = np.float64(F32(0.7 * af))
    re, im = x[..., 0::2], x[..., 1::2]
    want = x.copy()
    want[..., 0::2] = re * m * np.cos(a) - im * m * np.sin(a)
    want[..., 1::2] = re * m * np.sin(a) + im * m * np.cos(a)
    want[:, 2] = x[:, 2]
    got = vkrope.apply_reference(x.astype(np.float32), spec, positions=pos)
    assert np.abs(got - want).max() < 1e-6


def test_ext_factor_zero_is_linear_interpolation():
    """No blend: every frequency is the scaled one, the magnitude attn_factor."""
    spec = vkrope.RopeFreqs(64, scale=4.0, yarn=vkrope.YaRN(512, ext_factor=0.0, attn_factor=1.25))
    e = np.arange(0, 64, 2, dtype=F32) / F32(64)
    assert np.array_equal(spec.inv_freq_float32(), F32(1) / (F32(4.0) * pow32(10000.0, e)))
    assert spec.magnitude == F32(1.25)


@pytest.mark.parametrize("kw,word", [
    (dict(original_context=0), "original_context"), (dict(original_context=4096.0), "original_context"),
    (dict(original_context=4096, beta_slow=0.0), "beta_slow"),
    (dict(original_context=4096, ext_factor=1.5), "ext_factor"),
    (dict(original_context=4096, ext_factor=float("nan")), "ext_factor"),
    (dict(original_context=4096, attn_factor=0.0), "attn_factor"),
    (dict(original_context=4096, beta_fast=1e308), "beta_fast"),
    (dict(original_context=4096, beta_fast=np.float32(8.0), beta_slow=1e-39), "beta_slow"),
    (dict(original_context=4096, truncate="yes"), "truncate"),
])
def test_bad_yarn_names_the_argument(kw, word):
    with pytest.raises((TypeError, ValueError), match=word):
        vkrope.YaRN(**kw)


def test_bad_yarn_use_names_the_argument():
    with pytest.raises(TypeError, match="yarn"):
        vkrope.RopeFreqs(16, yarn={"original_context": 4096})
    # (beta_fast below beta_slow: a YaRN, which transformers computes turned around and from_hf reads so, but a
    # ramp whose low end lies above its high end, where HF and llama.cpp blend oppositely: no spec)
    with pytest.raises(ValueError, match=r"beta_fast = 1.0, beta_slow = 2.0 with dim = 64.* leave no ramp .*; "
                                         r"beta_fast is below beta_slow, which turns the ramp around$"):
        vkrope.RopeFreqs(64, scale=4.0, yarn=vkrope.YaRN(4096, beta_fast=1.0, beta_slow=2.0))
    with pytest.raises(ValueError, match="base"):
        vkrope.RopeFreqs(16, base=1.0, yarn=vkrope.YaRN(4096))
    for attn in (1e39, 1e-40):  # no float32 factor: inf, or subnormal / zero
        with pytest.raises(ValueError, match="attn_factor"):
            vkrope.RopeFreqs(16, scale=2.0, yarn=vkrope.YaRN(4096, attn_factor=attn))
    with pytest.raises(ValueError, match="base"):
        vkrope.RopeFreqs(16, base=0.5, yarn=vkrope.YaRN(4096))
    with pytest.raises(ValueError, match="scale"):
        vkrope.RopeFreqs(16, scale=0.5, yarn=vkrope.YaRN(4096))


def test_inverse_with_a_yarn_factor_is_refused(device):
    """m R(theta): its inverse divides by m, its gradient multiplies; vkrope
    guesses neither. A factor of exactly 1 keeps inverse (the README's)."""
    x = np.ones((1, 4, 16), np.float32)
    pos = np.arange(4)
    with pytest.raises(ValueError, match="inverse"):
        device.apply(x, vkrope.RopeFreqs(16, scale=4.0, yarn=vkrope.YaRN(64)), positions=pos, inverse=True)
    unit = vkrope.RopeFreqs(16, scale=4.0, yarn=vkrope.YaRN(64, attn_factor=1 / (0.1 * math.log(4.0) + 1)))
    assert unit.magnitude == 1
    y = device.apply(device.apply(x, unit, positions=pos), unit, positions=pos, inverse=True)
    assert np.abs(y - x).max() < 1e-6


@pytest.mark.parametrize("yarn", [
    dict(original_context=5), dict(original_context=3 * 10**10),  # no ramp: HF and llama.cpp disagree
    dict(original_context=4096, beta_fast=1e30, beta_slow=1e30),  # both ends below 0 (an original context past
    # 2^64 - 1, whose ends were not finite, is refused by YaRN itself: tests/ops/test_misuse.py)
])
def test_yarn_without_a_ramp_is_refused_before_any_work(device, yarn):
    with pytest.raises(ValueError, match="original_context") as err:
        vkrope.RopeFreqs(128, scale=4.0, yarn=vkrope.YaRN(**yarn))
    assert "beta_fast" in str(err.value) and "beta_slow" in str(err.value)
    y = device.rotary_embedding(unit_x(1, 1, 2, 8), vkrope.RopeFreqs(8), None, np.arange(2)[None])  # still usable
    assert np.isfinite(y).all()


def test_oracle_and_spec_agree_where_the_ramp_is_one_index():
    """low == high: HF's 0.001 guard (a step at low) on both sides."""
    dim, base, factor = 16, 10000.0, 4.0
    for orig in range(1, 20000):
        low = math.floor(dim * math.log(orig / (32 * 2 * math.pi)) / (2 * math.log(base)))
        high = math.ceil(dim * math.log(orig / (2 * math.pi)) / (2 * math.log(base)))
        if max(low, 0) == min(high, dim - 1):
            break
    else:
        pytest.fail("no original_context gives a one-index ramp")
    spec = vkrope.RopeFreqs(dim, base=base, scale=factor, yarn=vkrope.YaRN(orig))
    inv, _ = hf_yarn(dim, base, factor, orig)
    assert np.array_equal(spec.inv_freq_float32().view(np.uint32), inv.view(np.uint32))


def test_a_factor_per_call_builds_no_pipeline_per_factor(device):
    """The attention factor travels as a push constant: a factor that changes
    per call (dynamic scaling) reuses one pipeline, and each call gets its own."""
    pos = np.arange(16)[None]
    x = np.ones((1, 4, 16, 64), np.float32)
    device.rotary_embedding(x, vkrope.RopeFreqs(64, scale=4.0, yarn=vkrope.YaRN(4096)), None, pos)
    before = len(device._rt.pipelines)
    for k in range(12):
        spec = vkrope.RopeFreqs(64, scale=4.0, yarn=vkrope.YaRN(4096, attn_factor=1.0 + k / 8))
        c, s = spec.table(pos[0])
        y = device.rotary_embedding(x, spec, None, pos)
        assert np.abs(y[0, 0, :, :32] - (c - s)).max() < 1e-5 and np.abs(y[0, 0, :, 32:] - (c + s)).max() < 1e-5
    assert len(device._rt.pipelines) == before


@pytest.mark.parametrize("interleaved", [0, 1])
def test_table_operators_float64_reference_with_a_table_and_yarn(interleaved):
    """vkrope.kernels.table.reference (the table operators' float64 numpy path)
    against the ONNX oracle, given HF's cache and given the YaRN spec."""
    from vkrope.kernels import table
    from vkrope.ops import onnx

    rng = np.random.default_rng(21 + interleaved)
    b, h, s, d, rot = 2, 3, 5, 24, 16
    x = rng.standard_normal((b, h, s, d)).astype(np.float32)
    pos = rng.integers(0, 3000, (b, s))
    spec = vkrope.RopeFreqs(rot, scale=4.0, yarn=vkrope.YaRN(256, attn_factor=1.2))
    inv, af = hf_yarn(rot, 10000.0, 4.0, 256)
    c, sn = hf_cache(pos.reshape(-1), inv, 1.2 * af)
    kw = dict(interleaved=interleaved, rotary_embedding_dim=rot)
    ref = onnx_rotary_embedding(x, c.reshape(b, s, -1), sn.reshape(b, s, -1), **kw)
    table_cache = np.zeros((3000, rot // 2), np.float32), np.zeros((3000, rot // 2), np.float32)
    table_cache[0][pos.reshape(-1)], table_cache[1][pos.reshape(-1)] = c, sn
    got_table = table.reference(onnx.check_onnx(x, *table_cache, pos, **kw)).reshape(x.shape)
    got_spec = table.reference(onnx.check_onnx(x, spec, None, pos, **kw)).reshape(x.shape)
    assert np.abs(got_table - ref).max() < 1e-12
    assert np.abs(got_spec - ref).max() < 2e-6


def test_more_refusals_name_the_argument(device):
    """freq_factors outside float32's normal range, a factor below 1 for
    inverse, the exact angle's lowest frequency, positions of .table()."""
    for ff in ([1e-39, 1.0], [1e39, 1.0]):
        with pytest.raises(ValueError, match="freq_factors"):
            vkrope.RopeFreqs(4, freq_factors=ff)
    with pytest.raises(ValueError, match="inverse"):
        device.apply(np.ones((1, 2, 8), np.float32), vkrope.RopeFreqs(8, scale=2.0, yarn=vkrope.YaRN(64, attn_factor=0.5)),
                     positions=np.arange(2), inverse=True)
    with pytest.raises(ValueError, match="exact"):
        vkrope.RopeFreqs(64, base=1e30, angle="exact")
    vkrope.RopeFreqs(64, base=1e30)  # the float32 angle has no such limit
    with pytest.raises(ValueError, match="exact"):
        vkrope.AxialFreqs(64, 4, 4, theta=1e38, angle="exact")
    for bad in ([-1], [1 << 24]):
        with pytest.raises(ValueError, match="positions"):
            vkrope.RopeFreqs(8).table(bad)
    with pytest.raises(TypeError, match="positions"):
        vkrope.RopeFreqs(8).table([0.5])
    with pytest.raises(ValueError, match="rows"):
        vkrope.AxialFreqs(8, 4, 4).angles([16])


def test_yarn_with_a_factor_of_one_is_hf():
    """factor 1: the blend is of equal frequencies, the magnitude attn_factor."""
    spec = vkrope.RopeFreqs(64, scale=1.0, yarn=vkrope.YaRN(2048, attn_factor=1.1))
    inv, af = hf_yarn(64, 10000.0, 1.0, 2048)
    assert np.array_equal(spec.inv_freq_float32().view(np.int32), inv.view(np.int32))
    assert af == 1.0 and spec.magnitude == F32(1.1)


@pytest.mark.parametrize("make,word", [
    (lambda: vkrope.RopeFreqs(8, base=10**400), "base"), (lambda: vkrope.RopeFreqs(8, scale=10**400), "scale"),
    (lambda: vkrope.RopeFreqs(4, freq_factors=[10**400, 1]), "freq_factors"),
    (lambda: vkrope.AxialFreqs(8, 2, 2, theta=10**400), "theta"),
    (lambda: vkrope.YaRN(4096, attn_factor=10**400), "attn_factor"),
    (lambda: vkrope.YaRN(4096, ext_factor=10**400), "ext_factor"),
])
def test_ints_past_float64_are_a_value_error(make, word):
    """Python ints too large for float64 are out of range like any other,
    not an OverflowError from deep inside."""
    with pytest.raises(ValueError, match=word) as err:
        make()
    assert len(str(err.value)) < 200


def test_equal_betas_as_transformers():
    """beta_fast == beta_slow (Kimi-K2's published 1 and 1): the ramp's ends meet and the guard widens it, as
    transformers' find_correction_range does; the result matches the test's transformers restatement."""
    dim, base, factor, orig = 64, 50000.0, 32.0, 4096
    spec = vkrope.RopeFreqs(dim, base=base, scale=factor, yarn=vkrope.YaRN(orig, beta_fast=1.0, beta_slow=1.0))
    want, _ = hf_yarn(dim, base, factor, orig, beta_fast=1.0, beta_slow=1.0)
    assert np.array_equal(spec.inv_freq_float32().view(np.uint32), want.view(np.uint32))

"""Issue #22: N-D axial RoPE (vkrope.NdFreqs, vkrope.apply_nd, vkrope.grid_ids).

Proof in two parts: diffusers' own modules (FluxPosEmbed, Flux Kontext's
offset ids, WanRotaryPosEmbed with Wan's attention, HunyuanVideoRotaryPosEmbed,
get_3d_rotary_pos_embed's fractional CogVideoX grid, centred negative ids,
Cosmos's and CogView4's rotate-half pairs and Cosmos's theta per axis,
HiDream's own apply_rope) and `apply_rotary_emb`, their results committed in tests/data/nd_golden.npz
by scripts/diffusers_golden.py; and a float64 oracle from the formulas
(tests/oracles/oracle_nd.py) over every dtype, storage, layout and odd shape.
"""

from __future__ import annotations

import fractions
from pathlib import Path

import numpy as np
import pytest

import vkrope
from forced import SMALL_LIMITS
from oracle import BF16, bf16_ulp, poisoned_like
from oracle_nd import nd_rope, pair_scale

GOLDEN = np.load(Path(__file__).parent.parent / "data" / "nd_golden.npz")
CASES = sorted({k.split("/")[0] for k in GOLDEN.files if "/" in k})
RNG = np.random.default_rng(22)
EPS32 = 2.0**-23
DTYPES = [np.float32, np.float16, BF16]


def golden(name):
    g = {k.split("/")[1]: GOLDEN[k] for k in GOLDEN.files if k.startswith(name + "/")}
    thetas = tuple(float(t) for t in np.atleast_1d(g["theta"]))  # (one, or one per axis: Cosmos's)
    spec = vkrope.NdFreqs(tuple(int(v) for v in g["axes"]), thetas[0] if len(thetas) == 1 else thetas,
                          interleaved=bool(g.get("interleaved", True)), angle=str(g["angle"]))
    return spec, g, (-3 if str(g["layout"]) == "bshd" else -2)


def assert_close(y, ref, x, axes, interleaved=True):
    """float32: within 4 float32 ulps of the pair's |u| + |v|; float16: one
    float16 ulp of the result plus 2^-22 of the pair; bfloat16: half a
    bfloat16 ulp (one rounding) plus 2^-22 of the pair (cos / sin are
    float32, within 2 ulp). Never NaN."""
    y = np.asarray(y)
    assert y.dtype == np.asarray(x).dtype and y.shape == ref.shape
    y64 = y.astype(np.float32).astype(np.float64)
    assert np.isfinite(y64).all(), "unwritten (NaN) elements"
    scale = pair_scale(x, axes, interleaved=interleaved)
    err = np.abs(y64 - ref)
    if y.dtype == np.float32:
        tol = 4 * EPS32 * scale
    elif y.dtype == BF16:
        tol = 0.5 * bf16_ulp(ref) + 2.0**-22 * scale
    else:
        tol = np.spacing(np.abs(ref.astype(np.float16))).astype(np.float64) + 2.0**-22 * scale
    worst = np.argmax(err - tol) if err.size else 0
    assert (err <= tol).all(), f"error {err.flat[worst]:.3g} > {tol.flat[worst]:.3g}"


# --- diffusers' own results -----------------------------------------------------------
@pytest.mark.parametrize("name", CASES)
def test_cos_sin_match_diffusers_modules(name):
    """The spec's (cos, sin) against what the model's rotary module returned:
    bit for bit with diffusers' float64 frequencies (vkrope rounds float64
    cos / sin of the same float64 angle); within 1 float32 ulp with its
    float32 ones (torch's float32 power and cos against correctly rounded ones)."""
    spec, g, _ = golden(name)
    cos, sin = spec.cos_sin(g["ids"])
    for mine, theirs in ((cos, g["cos"]), (sin, g["sin"])):
        ulps = np.abs(mine.astype(np.float64) - theirs) / np.spacing(np.maximum(np.abs(theirs), 2.0**-126))
        assert ulps.max() <= (0 if spec.angle == "exact" else 1), f"{name}: {ulps.max()} ulps"


@pytest.mark.parametrize("resident", [False, True])
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("name", CASES)
def test_apply_nd_matches_diffusers(device, name, storage, resident):
    """vkrope.apply_nd against diffusers' apply_rotary_emb (Wan: its own
    attention's) on the module's (cos, sin): within 2 float32 ulps of each
    pair's |u| + |v| (diffusers rounds each product and the sum; vkrope's
    products are exact and its cos / sin within 2 ulp)."""
    spec, g, token_axis = golden(name)
    x = g["x"]
    xin = device.asarray(x, storage=storage) if resident else x
    out = device.apply_nd(xin, spec, g["ids"], token_axis=token_axis, storage="auto" if resident else storage)
    y = out.get() if resident else out
    scale = pair_scale(x, spec.axes_dim, interleaved=spec.interleaved)
    ulps = np.abs(y.astype(np.float64) - g["y"]) / np.spacing(np.float32(scale)).astype(np.float64)
    assert ulps.max() <= 2, f"{name}: {ulps.max()} ulps of the pair"
    assert_close(y, nd_rope(x, spec.axes_dim, spec.theta, g["ids"], interleaved=spec.interleaved, angle=spec.angle,
                            token_axis=token_axis), x, spec.axes_dim, interleaved=spec.interleaved)


def test_apply_reference_takes_nd_specs():
    spec = vkrope.NdFreqs((6, 10), (100.0, 3.0), angle="float32")
    x = RNG.standard_normal((2, 3, 5, 18)).astype(np.float32)
    ids = RNG.uniform(-20, 20, (5, 2))
    ref = vkrope.apply_reference(x, spec, positions=ids)
    np.testing.assert_allclose(ref, nd_rope(x, (6, 10), spec.theta, ids, angle="float32"), rtol=0, atol=1e-12)


def test_apply_with_positions_is_apply_nd(device):
    spec, g, _ = golden("flux")
    a = vkrope.apply(g["x"], spec, positions=g["ids"])
    b = device.apply_nd(g["x"], spec, g["ids"])
    np.testing.assert_array_equal(a, b)


# --- the oracle over every dtype, storage and layout -----------------------------------
@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("interleaved", [True, False], ids=["interleaved", "rotate_half"])
@pytest.mark.parametrize("angle", ["exact", "float32"])
def test_against_the_oracle(device, angle, interleaved, dtype, storage):
    """Three axes of unequal widths (a texel's two pairs on two axes), one
    theta per axis, fractional and negative ids, channels past the rotated
    width passing through, a last axis that is not whole texels."""
    axes, thetas = (6, 10, 4), (10000.0, 256.0, 37.5)
    spec = vkrope.NdFreqs(axes, thetas, interleaved=interleaved, angle=angle)
    x = RNG.standard_normal((2, 3, 7, 22)).astype(dtype)
    ids = np.concatenate([RNG.uniform(-300, 300, (5, 3)), np.array([[0.5, -0.25, 1e5 + 0.125], [-7, 3, 2**20]])])
    out = poisoned_like(x)
    assert device.apply_nd(x, spec, ids, out=out, storage=storage) is out
    assert_close(out, nd_rope(x, axes, thetas, ids, interleaved=interleaved, angle=angle), x, axes, interleaved)
    np.testing.assert_array_equal(out[..., 20:].view(np.uint8), x[..., 20:].view(np.uint8))  # passed through, bits


@pytest.mark.parametrize("storage", ["buffer", "texture3d"])
@pytest.mark.parametrize("layout", ["BHNC", "BNHC"])
@pytest.mark.parametrize("per_batch", [False, True], ids=["shared", "per_batch"])
def test_every_token_of_every_item_reads_its_ids(device, per_batch, layout, storage):
    """B > 1 with either token axis, ids shared or per item, on both storages;
    a last axis of whole texels (24) and not (22); axes whose boundaries fall
    inside a texel (pairs of two axes in one texel: interleaved, and a
    rotate-half texel of 4 columns)."""
    token_axis = -2 if layout == "BHNC" else -3
    for interleaved in (True, False):
        spec = vkrope.NdFreqs((6, 10), (10000.0, 77.0), interleaved=interleaved)
        for c in (24, 22):
            shape = (3, 2, 5, c) if token_axis == -2 else (3, 5, 2, c)
            x = RNG.standard_normal(shape).astype(np.float32)
            ids = RNG.uniform(-60, 60, (3, 5, 2) if per_batch else (5, 2))
            y = device.apply_nd(x, spec, ids, token_axis=token_axis, storage=storage)
            want = nd_rope(x, (6, 10), spec.theta, ids, interleaved=interleaved, token_axis=token_axis)
            assert_close(y, want, x, (6, 10), interleaved)


@pytest.mark.parametrize("per_batch", [False, True], ids=["shared", "per_batch"])
@pytest.mark.parametrize("token_axis", [-2, -3])
def test_layouts_and_per_batch_ids(device, token_axis, per_batch):
    spec = vkrope.NdFreqs((8, 12, 12))
    shape = (3, 2, 5, 32) if token_axis == -2 else (3, 5, 2, 32)  # [B, H, N, C] / [B, N, H, C]
    x = RNG.standard_normal(shape).astype(np.float32)
    ids = RNG.integers(-50, 50, (3, 5, 3) if per_batch else (5, 3))
    y = vkrope.apply_nd(x, spec, ids, token_axis=token_axis)
    assert_close(y, nd_rope(x, (8, 12, 12), spec.theta, ids, token_axis=token_axis), x, (8, 12, 12))


def test_exact_angles_at_large_and_fractional_ids(device):
    """Near 2^30 a float32 angle would be off by radians; the exact one
    (ids kept to 2^-32) matches the float64 product."""
    spec = vkrope.NdFreqs((4, 4), 10000.0)
    ids = np.array([[2.0**29 + 0.5, -(2.0**29) - 0.25], [123456.789, -0.001], [1e-9, 3e8]])
    x = RNG.standard_normal((3, 8)).astype(np.float32)
    assert_close(vkrope.apply_nd(x, spec, ids), nd_rope(x, (4, 4), spec.theta, ids), x, (4, 4))


def test_inverse_undoes_the_rotation(device):
    spec = vkrope.NdFreqs((16, 56, 56))
    ids = vkrope.grid_ids((2, 3, 4), offset=(0, -1, -2))
    x = RNG.standard_normal((2, 24, 128)).astype(np.float32)
    y = vkrope.apply_nd(x, spec, ids)
    back = vkrope.apply_nd(y, spec, ids, inverse=True)
    np.testing.assert_allclose(back, x, atol=8 * EPS32 * np.abs(x).max())
    assert_close(y, nd_rope(x, (16, 56, 56), spec.theta, ids), x, (16, 56, 56))


def test_in_place_and_through_a_temporary(device):
    x = RNG.standard_normal((2, 6, 24)).astype(np.float32)
    ids = RNG.uniform(-9, 9, (6, 2))
    for interleaved in (True, False):  # rotate-half reads a partner texel: never in place, staged
        spec = vkrope.NdFreqs((8, 16), interleaved=interleaved)
        want = nd_rope(x, (8, 16), spec.theta, ids, interleaved=interleaved)
        y = x.copy()
        assert vkrope.apply_nd(y, spec, ids, out=y) is y
        assert_close(y, want, x, (8, 16), interleaved)
        d = device.asarray(x)
        device.apply_nd(d, spec, ids, out=d)
        assert_close(d.get(), want, x, (8, 16), interleaved)


def test_sam2_axial_through_nd(device):
    """SAM2's AxialFreqs is the 2-axis case: the same rotation to float32 rounding."""
    for angle in ("float32", "exact"):
        axial = vkrope.AxialFreqs(64, 8, 6, angle=angle)
        nd, ids = axial.as_nd()
        x = RNG.standard_normal((2, 48, 64)).astype(np.float32)
        a = vkrope.apply(x, axial)
        b = vkrope.apply(x, nd, positions=ids)
        np.testing.assert_allclose(b, a, rtol=0, atol=4 * EPS32 * np.abs(x).max())


def test_past_small_limits(make_device):
    """Binding splits, row blocks and folded images with small forced limits."""
    dev = make_device(**SMALL_LIMITS)
    spec = vkrope.NdFreqs((16, 24, 24))
    x = RNG.standard_normal((3, 4, 700, 64)).astype(np.float32)  # 2.1 MiB: past a 1 MiB binding
    ids = vkrope.grid_ids((7, 10, 10))
    want = nd_rope(x, (16, 24, 24), spec.theta, ids)
    assert_close(dev.apply_nd(x, spec, ids), want, x, (16, 24, 24))
    small = x[:1, :2]  # 1400 rows of 16 texels: folded over a 64-wide image
    assert_close(dev.apply_nd(small, spec, ids, storage="texture3d"), want[:1, :2], small, (16, 24, 24))
    dev2 = make_device(max_memory_allocation_size=1 << 20)
    assert_close(dev2.apply_nd(x, spec, ids), want, x, (16, 24, 24))


def test_recorded_once_as_ids_change(device):
    """The ids are data: a loop over new ids replays one recording."""
    spec = vkrope.NdFreqs((16, 56, 56))
    x = RNG.standard_normal((1, 2, 64, 128)).astype(np.float32)
    out = np.empty_like(x)
    for _ in range(2):  # (x and out passed again are imported on their second call: a recording of their own)
        device.apply_nd(x, spec, vkrope.grid_ids((1, 8, 8)), out=out)
    made = device.stats()["recordings"]
    for step in range(6):
        ids = vkrope.grid_ids((1, 8, 8), offset=(step, step - 3, 0.5 * step))
        device.apply_nd(x, spec, ids, out=out)
        assert_close(out, nd_rope(x, (16, 56, 56), spec.theta, ids), x, (16, 56, 56))
    assert device.stats()["recordings"] == made


def test_empty_calls(device):
    spec = vkrope.NdFreqs((4, 4))
    for shape in ((0, 8), (2, 0, 8), (3, 0, 5, 8)):
        x = np.zeros(shape, np.float32)
        ids = np.zeros((shape[-2], 2))
        assert vkrope.apply_nd(x, spec, ids).shape == shape


# --- the spec, the grid helper and bad input --------------------------------------------
def test_grid_ids():
    g = vkrope.grid_ids((2, 3), offset=(1, -1), step=(1, 0.5))
    np.testing.assert_array_equal(g, [[1, -1], [1, -0.5], [1, 0], [2, -1], [2, -0.5], [2, 0]])
    assert vkrope.grid_ids((0, 4)).shape == (0, 2)
    flux_image = vkrope.grid_ids((1, 2, 2))
    np.testing.assert_array_equal(flux_image, [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1]])
    for bad, err in (((3,), None), ([2.5], TypeError), ((2, -1), ValueError), ((), ValueError), (4, TypeError)):
        if err:
            with pytest.raises(err):
                vkrope.grid_ids(bad)
    with pytest.raises(ValueError, match="offset"):
        vkrope.grid_ids((2, 2), offset=(1, 2, 3))
    with pytest.raises(ValueError, match="step"):
        vkrope.grid_ids((2, 2), step=float("inf"))
    np.testing.assert_array_equal(vkrope.grid_ids((2,), step=np.array(0.5)), [[0.0], [0.5]])
    with pytest.raises(ValueError, match=r"offset\[0\] \+ i \* step\[0\] overflows float64"):  # (not inf ids)
        vkrope.grid_ids((2,), offset=1e308, step=1e308)
    with pytest.raises(ValueError, match=r"step must be one number or a flat sequence .* shape \(1, 2\)"):
        vkrope.grid_ids((2, 2), step=np.array([[1.0, 2.0]]))
    assert vkrope.NdFreqs((4, 4), np.array(100.0)).thetas == (100.0, 100.0)
    with pytest.raises(ValueError, match=r"shape \(100000, 100000, 1000\) has 10000000000000 cells; a grid has at "
                                         "most 4294967294"):  # (before numpy tries 73 TiB)
        vkrope.grid_ids((100000, 100000, 1000))
    with pytest.raises(ValueError, match="4294967295 cells"):
        vkrope.grid_ids((65537, 65535))
    with pytest.raises(ValueError, match="shape must name 1 to 32 axes; got 40"):  # (numpy's RuntimeError)
        vkrope.grid_ids((1,) * 40)
    np.testing.assert_array_equal(vkrope.grid_ids(np.array([1, 2])), [[0, 0], [0, 1]])  # (numpy sizes too)
    assert vkrope.NdFreqs(np.array([4, 6])).axes_dim == (4, 6)  # (as its theta takes numpy)
    with pytest.raises(ValueError, match=r"shape \(0, 4294967295\) has 0 cells; a grid has at most 4294967294 cells on "
                                         "any axis"):
        vkrope.grid_ids((0, 2**32 - 1))
    # (a grid with an empty axis builds none: no cell overflows, and a long axis takes no memory)
    assert vkrope.grid_ids((0, 2), offset=1e308, step=1e308).shape == (0, 2)


def test_a_long_list_given_for_x_is_described_in_short():
    """A nested list passed as x: the message names x and its kind, cut where it says it is cut (not mid-way
    through the list's text)."""
    spec, ids = vkrope.NdFreqs((4, 4)), vkrope.grid_ids((2, 2))
    with pytest.raises(TypeError, match=r"x must be a numpy array; got list \[\[\[.*\.\.\. \(2 items\) \(convert it "
                                        r"with np.asarray\(x\)\)$"):
        vkrope.apply_nd(np.zeros((2, 3, 10, 8), np.float32).tolist(), spec, ids)


def test_wan_and_cogvideox_widths():
    d = 128
    wan = vkrope.NdFreqs((d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6)))
    assert wan.axes_dim == (44, 42, 42) and wan.dim == 128
    assert vkrope.NdFreqs((d // 4, 3 * d // 8, 3 * d // 8), angle="float32").dim == 128


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(axes_dim=(16, 7)), ValueError, r"axes_dim\[1\] must be even"),
    (dict(axes_dim=()), ValueError, "at least one axis"),
    (dict(axes_dim=np.array([[4, 4]])), TypeError, "axes_dim must be a tuple"),
    (dict(axes_dim=16), TypeError, "axes_dim must be a tuple"),
    (dict(axes_dim=(16, 0)), ValueError, r"axes_dim\[1\] must be >= 2"),
    (dict(axes_dim=(16, 16), theta=(1e4,)), ValueError, "one per axis"),
    (dict(axes_dim=(16, 16), theta=np.array([[1e2, 2e2]])), ValueError, r"flat sequence .* shape \(1, 2\)"),
    (dict(axes_dim=(16, 16), theta=(1e4, -1)), ValueError, r"theta\[1\]"),
    (dict(axes_dim=(16, 16), theta=0.0), ValueError, "theta must be a positive"),
    (dict(axes_dim=(16, 16), angle="float64"), ValueError, "angle must be one of"),
    (dict(axes_dim=(16, 16), interleaved="yes"), TypeError, "interleaved must be a bool"),
    (dict(axes_dim=(4,), theta=0.01), ValueError, r"below 2 pi; theta 0\.01 gives 10 "),  # (one base: no tuple)
    (dict(axes_dim=(4,), theta=fractions.Fraction(10000)), TypeError,  # (a number, not one vkrope takes)
     r"^theta must be a real number \(a Python or numpy int or float\); got Fraction"),
    (dict(axes_dim=(1 << 40,)), ValueError, r"axes_dim\[0\] must be at most 65536 \(a head's channels\)"),
    (dict(axes_dim=(32768, 32770)), ValueError, "sum to at most 65536 channels"),
])
def test_bad_specs(kwargs, error, match):
    with pytest.raises(error, match=match):
        vkrope.NdFreqs(**kwargs)


def test_as_nd_names_the_axial_spec_it_has_no_twin_of():
    """An exact AxialFreqs with theta below 1 is taken (its own kernel reduces any frequency); the N-D exact
    kernel keeps frequencies below 2 pi, so as_nd() says which spec has no twin and which one has (an
    adversary's: the error named an NdFreqs the user never made)."""
    with pytest.raises(ValueError, match=r"^as_nd\(\): this AxialFreqs has no exact N-D twin: .*below 2 pi"):
        vkrope.AxialFreqs(8, 5, 5, theta=1e-3, angle="exact").as_nd()
    nd, ids = vkrope.AxialFreqs(8, 5, 5, theta=1e-3, angle="float32").as_nd()
    assert nd.angle == "float32" and ids.shape == (25, 2)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # np.matrix itself
def test_bad_calls_name_the_argument_before_gpu_work(device):
    spec = vkrope.NdFreqs((8, 8))
    x = RNG.standard_normal((2, 5, 16)).astype(np.float32)
    ids = np.zeros((5, 2))
    before = device.stats()["submissions"]
    bad = [
        (lambda: vkrope.apply_nd(x, spec, ids.tolist()), TypeError,
         r"^ids must be a numpy array .*; got list \(convert it with np\.asarray\(ids\)\)$"),
        (lambda: vkrope.apply_nd(x, spec, np.zeros((5, 3))), ValueError, r"ids must have shape \[N, 2\]"),
        (lambda: vkrope.apply_nd(x, spec, np.zeros((4, 2))), ValueError, "one row per token: N = 5"),
        (lambda: vkrope.apply_nd(x, spec, np.zeros((5, 2), bool)), TypeError, "real numbers"),
        (lambda: vkrope.apply_nd(x, spec, np.zeros((5, 2), "m8[s]")), TypeError, "real numbers"),
        (lambda: vkrope.apply_nd(x, spec, np.ma.zeros((5, 2))), TypeError,  # (np.asarray would drop the mask)
         r"^ids must be a plain numpy array, not a masked array \(vkrope would ignore the mask\)"),
        (lambda: vkrope.apply_nd(x, spec, np.asmatrix(np.zeros((5, 2)))), TypeError,  # (as every other argument:
         r"^ids must be a plain numpy array, not np\.matrix; pass np\.asarray\(ids\)$"),  # an adversary's)
        (lambda: vkrope.apply(x, spec, positions=np.asmatrix(np.zeros((5, 2)))), TypeError,
         r"^positions must be a plain numpy array, not np\.matrix"),
        (lambda: vkrope.apply_nd(x, spec, np.full((5, 2), np.nan)), ValueError, r"finite and within \+-2\^30"),
        (lambda: vkrope.apply_nd(x, spec, np.full((5, 2), 2.0**31)), ValueError, r"within \+-2\^30"),
        (lambda: vkrope.apply_nd(x, spec, np.zeros((3, 5, 2))), ValueError, r"first axis to be B = 3 .*\)$"),
        (lambda: vkrope.apply_nd(x, spec, np.zeros((1, 5, 2))), ValueError,  # (an adversary's: say ids[0])
         r"first axis to be B = 1 .* \(ids shared by every item are \[N, 2\]: pass ids\[0\]\)$"),
        (lambda: vkrope.apply_nd(x, vkrope.NdFreqs((16, 8)), ids), ValueError, "more than x's last axis"),
        (lambda: vkrope.apply_nd(x, spec, ids, token_axis=-1), ValueError, "token_axis must be -2"),
        (lambda: vkrope.apply_nd(x, spec, ids, token_axis=-2.0), TypeError, "token_axis must be an int, -2 or -3"),
        (lambda: vkrope.NdFreqs((4, 4), angle=None), TypeError, "angle must be a str"),
        (lambda: vkrope.axial_freqs(8, 2, 2, theta=10**400), ValueError, "theta must be a positive finite float64"),
        (lambda: vkrope.axial_freqs(4, 2**20, 2**20), ValueError, r"end_x \* end_y must be <= 2\^24"),
        (lambda: vkrope.apply_nd(x[0, 0], spec, ids[:1], token_axis=-3), ValueError, "at least 3 axes"),
        (lambda: vkrope.apply_nd(x, spec, ids, inverse=1), TypeError, "inverse must be a bool"),
        (lambda: vkrope.apply_nd(x, (8, 8), ids), TypeError, "spec must be a vkrope.NdFreqs"),
        (lambda: vkrope.apply_nd(x.astype(np.float64), spec, ids), TypeError, "x must have dtype"),
        (lambda: vkrope.apply_nd(x, spec, ids, out=np.empty((2, 5, 8), np.float32)), ValueError, "out"),
        (lambda: vkrope.apply(x, spec), ValueError, "pass positions, the ids"),
        (lambda: vkrope.apply(x, spec, positions=ids, repeat=2), ValueError, "repeat and exclude_last"),
        (lambda: device.apply_many([(x, spec)]), TypeError, "not apply_many"),
    ]
    for call, error, match in bad:
        with pytest.raises(error, match=match):
            call()
    assert device.stats()["submissions"] == before
    y = device.apply_nd(x, spec, ids)  # still usable
    assert_close(y, nd_rope(x, (8, 8), spec.theta, ids), x, (8, 8))


def test_a_token_count_of_the_other_axis_suggests_token_axis():
    """diffusers' [B, S, H, D] with the default token_axis=-2 (its tokens on -3): the ids fit axis -3, and the
    message says to pass token_axis=-3 (and the other way round); ids that fit neither axis get no hint."""
    spec = vkrope.NdFreqs((8, 8))
    x = np.zeros((1, 6, 3, 16), np.float32)  # [B, S = 6, H = 3, D]
    with pytest.raises(ValueError, match=r"^ids must hold one row per token: N = 3 \(x's axis -2\); got \[6, 2\] "
                                         r"\(x's axis -3 has 6: if x is \[\.\.\., N, H, C\] \(diffusers' \[B, S, H, D\]\), "
                                         r"pass token_axis=-3\)$"):
        vkrope.apply_nd(x, spec, np.zeros((6, 2)))
    with pytest.raises(ValueError, match=r"^ids must hold one row per token: N = 6 \(x's axis -3\); got \[3, 2\] "
                                         r"\(x's axis -2 has 3: if x is \[\.\.\., N, C\] \(\[B, H, S, D\]\), pass token_axis=-2\)$"):
        vkrope.apply_nd(x, spec, np.zeros((3, 2)), token_axis=-3)
    with pytest.raises(ValueError, match=r"\(x's axis -3 has 6: .*, use vkrope\.apply_nd\(x, spec, ids, token_axis=-3\)\)$"):
        vkrope.apply(x, spec, positions=np.zeros((6, 2)))
    with pytest.raises(ValueError, match=r"^ids must hold one row per token: N = 3 \(x's axis -2\); got \[5, 2\]$"):
        vkrope.apply_nd(x, spec, np.zeros((5, 2)))
    with pytest.raises(ValueError, match=r"^ids must hold one row per token: N = 6 \(x's axis -2\); got \[3, 2\]$"):
        vkrope.apply_nd(np.zeros((6, 16), np.float32), spec, np.zeros((3, 2)))  # (2-D x: no other axis)
    # per-item ids: the hint only where their B is x's first axis with the other token axis too (an adversary's:
    # B 2 against x's 1 was told to pass token_axis=-3, which then failed on the batch)
    with pytest.raises(ValueError, match=r"got \[1, 6, 2\] \(x's axis -3 has 6: .*pass token_axis=-3\)$"):
        vkrope.apply_nd(x, spec, np.zeros((1, 6, 2)))
    with pytest.raises(ValueError, match=r"^ids must hold one row per token: N = 3 \(x's axis -2\); got \[2, 6, 2\]$"):
        vkrope.apply_nd(x, spec, np.zeros((2, 6, 2)))


def test_bench_nd_runs_its_rows(monkeypatch):
    """`vkrope bench --nd` on small rows: both layouts, both angles, the table
    path agreeing with the in-shader one (the bench asserts it)."""
    import vkrope.bench.nd as bench_nd

    monkeypatch.setattr(bench_nd, "ROWS", {"flux": ((1, 2, 40, 32), (8, 12, 12), -2),
                                           "wan": ((1, 30, 2, 32), (12, 10, 10), -3)})
    monkeypatch.setattr(bench_nd, "_ids", lambda name: vkrope.grid_ids((1, 5, 8) if name == "flux" else (2, 3, 5)))
    lines = []
    rows = bench_nd.run(repeats=1, log=lines.append)
    assert [r["row"] for r in rows] == ["flux", "wan"] and len(lines) == 4
    assert all(r["exact_bytes_moved"] < r["table_bytes_moved"] for r in rows)


def test_a_float32_angle_that_overflows_is_nan_without_warnings(device):
    """theta far below 1: a column's float32 frequency is huge and its float32 angle overflows to inf, whose
    cos / sin are NaN, as diffusers' float32 path gives them (documented in nd.md); cos_sin and apply_nd say
    so without numpy RuntimeWarnings (an adversary saw overflow and invalid-value warnings from cos_sin)."""
    import warnings

    spec = vkrope.NdFreqs((16,), 1e-37, angle="float32")
    ids = np.array([0.0, 1, 1e3, 1e5, 1e6, 1e7])[:, None]
    f32 = spec.inv_freq_float32()
    with np.errstate(over="ignore"):
        overflows = np.isinf(ids.astype(np.float32) * f32[None, :])  # [6, 8]: which pairs' angles are inf
    assert overflows.any() and not overflows.all()
    x = np.zeros((6, 16), np.float32)
    x[:, ::2] = 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cos, sin = spec.cos_sin(ids)
        y = device.apply_nd(x, spec, ids)
    assert np.array_equal(np.isnan(cos[:, ::2]), overflows) and np.array_equal(np.isnan(sin[:, ::2]), overflows)
    assert np.array_equal(np.isnan(y[:, ::2]), overflows)
    np.testing.assert_allclose(y[:, ::2][~overflows], cos[:, ::2][~overflows], rtol=0, atol=2.0**-22)

"""Code ported from SAM2, transformers and ExecuTorch: the calls their own
code makes that vkrope takes (SAM2's grid sides as floats, its keys all
excluded), and the hints of the calls it refuses, each followed (where it
names a call) to the result the model's float64 oracle gives."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import vkrope
from oracle import oracle, poisoned_like
from oracle_family import et_apply_rotary_emb
from oracle_hf import rotate as oracle_rotate

RNG = np.random.default_rng(37)


CAT, INTERLEAVED = "cat", "repeat_interleave"
# (float32 tables against the float64 ones: each product within 2^-24 relative of the table's rounding, and the
# kernel's own float32 roundings; 4 float32 ulps of the pair's scale 2 max|x| holds both)
ULPS = 4 * 2.0**-24


def _angles(b: int, s: int, rot: int, seed: int) -> np.ndarray:
    """Angles [b, S, rot / 2] of per-item positions (b = 1: transformers' [1, S] position_ids)."""
    pos = np.random.default_rng(seed).integers(0, 900, (b, s))
    return pos[..., None] / 10000.0 ** (np.arange(0, rot, 2) / rot)


def _full(f: np.ndarray, form: str) -> tuple[np.ndarray, np.ndarray]:
    """Hugging Face's full-width (cos, sin) float32 tables of angles f: cat(f, f) or repeat_interleave(f, 2)."""
    e = np.concatenate([f, f], -1) if form == CAT else np.repeat(f, 2, -1)
    return np.cos(e).astype(np.float32), np.sin(e).astype(np.float32)


def _exact(x: np.ndarray, f: np.ndarray, form: str) -> np.ndarray:
    """The model's float64 rotation of x [B, H, S, D] by angles f [b, S, rot / 2]: rotate-half for cat tables,
    interleaved pairs (Cohere's, GPT-J's) for repeat_interleave ones."""
    c = np.cos(np.broadcast_to(f, (x.shape[0],) + f.shape[1:]))
    s = np.sin(np.broadcast_to(f, (x.shape[0],) + f.shape[1:]))
    return oracle_rotate(x, np.concatenate([c, c], -1), np.concatenate([s, s], -1), 2 * f.shape[-1],
                         interleaved=form == INTERLEAVED)


def _close(y: np.ndarray, x: np.ndarray, ref: np.ndarray) -> None:
    """y within ULPS of the pair's scale (2 max|x|: |cos| + |sin| <= 2 per term) of the float64 `ref`."""
    np.testing.assert_allclose(y, ref, rtol=0, atol=ULPS * 2 * np.abs(x).max())


ROUTE = {CAT: r"vkrope\.rotary_embedding\(x, c, s, rotary_embedding_dim=rot, interleaved=0\) with c = "
              r"np\.broadcast_to\(cos\[\.\.\., :rot // 2\], \(B, S, rot // 2\)\) and s likewise",
         INTERLEAVED: r"vkrope\.rotary_embedding\(x, c, s, rotary_embedding_dim=rot, interleaved=1\) with c = "
                      r"np\.broadcast_to\(cos\[\.\.\., ::2\], \(B, S, rot // 2\)\) and s likewise"}
STACK = (r"np\.stack\(\[cos\[\.\.\., ::2\], sin\[\.\.\., ::2\]\], -1\) of repeat_interleave\(freqs, 2\) tables "
         r"\[N, D\] \(diffusers'\)")


@pytest.mark.parametrize("form", [CAT, INTERLEAVED])
@pytest.mark.parametrize("rot", [64, 32])
@pytest.mark.parametrize("items", [2, 1])
def test_transformers_tables_follow_the_hint(form, rot, items):
    """apply(x, (cos, sin)) and apply_rotary_pos_emb(q, k, cos, sin) given a rotary module's full-width tables
    (per item, or [1, S] for the batch) are refused, naming the call for the tables' form, rotate-half or
    interleaved (a cut of the other form runs and rotates wrongly: 4.8 off, the reviewer measured); that call
    gives the model's result."""
    q = RNG.standard_normal((2, 3, 5, 64)).astype(np.float32)
    k = RNG.standard_normal((2, 1, 5, 64)).astype(np.float32)
    f = _angles(items, 5, rot, rot)
    cos, sin = _full(f, form)
    with pytest.raises(TypeError, match=r"\(a \(cos, sin\) pair: " + (
            "" if form == CAT else r"apply turns .*" + STACK + "; ") + r"a model's tables \[B or 1, S, rot\] go to "
            + ROUTE[form] + r"\)$"):
        vkrope.apply(q, (cos, sin))
    with pytest.raises(TypeError, match=r"^spec must be .* got an array of shape \(" + f"{items}, 5, {rot}" +
                       r"\) .*\(transformers' apply_rotary_pos_emb\(q, k, cos, sin\) .*" + ROUTE[form] +
                       r", once for q and once for k\)$"):
        vkrope.apply_rotary_pos_emb(q, k, cos, sin)
    cut = (lambda t: t[..., :rot // 2]) if form == CAT else (lambda t: t[..., ::2])
    c, s = (np.broadcast_to(cut(t), (2, 5, rot // 2)) for t in (cos, sin))
    for x in (q, k):
        y = vkrope.rotary_embedding(x, c, s, rotary_embedding_dim=rot, interleaved=int(form == INTERLEAVED),
                                    out=poisoned_like(x))
        _close(y, x, _exact(x, f, form))
    if form == INTERLEAVED and items == 1 and rot == 64:  # (apply's own route: SAM2's [N, C] x, [1, N, C] tables)
        x = q[0]
        y = vkrope.apply(x, np.stack([cos[..., ::2], sin[..., ::2]], -1), out=poisoned_like(x))
        _close(y, x, _exact(x[None], f, form)[0])


def test_a_table_of_no_known_form_is_told_both_cuts():
    """Tables whose columns are all alike (a stand-in of one frequency) show no form: each hint names both."""
    q = np.zeros((1, 2, 5, 64), np.float32)
    ones = np.ones((1, 5, 64), np.float32)
    both = ROUTE[CAT] + r" \(of cat\(freqs, freqs\) tables; of repeat_interleave\(freqs, 2\) ones, " + ROUTE[INTERLEAVED]
    with pytest.raises(TypeError, match=STACK + "; a model's tables .* go to " + both):
        vkrope.apply(q, (ones, ones))
    with pytest.raises(TypeError, match=both + r"\), once for q"):
        vkrope.apply_rotary_pos_emb(q, q, ones, ones)
    with pytest.raises(ValueError, match=r"pass cos_cache\[\.\.\., :rot // 2\] with interleaved=0 of a cat\(freqs, "
                                         r"freqs\) table, cos_cache\[\.\.\., ::2\] with interleaved=1 of a "
                                         r"repeat_interleave\(freqs, 2\) one\)"):
        vkrope.rotary_embedding(q, ones, ones)


def test_spec_refusal_has_no_table_hint_for_other_values():
    """The tables hint is only for float tables: a spec of the wrong kind, or ids in its place, is told what
    spec it takes."""
    q = np.zeros((1, 1, 2, 8), np.float32)
    ids = np.zeros((1, 2), np.int64)
    with pytest.raises(TypeError, match=r"^spec must be a vkrope\.ModelRope .* got str 'llama'$"):
        vkrope.apply_rotary_pos_emb(q, q, "llama", ids)
    with pytest.raises(TypeError, match=r"^spec must be a vkrope\.ModelRope .* got an array of shape \(1, 2\) and "
                                        r"dtype int64$"):
        vkrope.apply_rotary_pos_emb(q, q, ids, ids)


@pytest.mark.parametrize("form", [CAT, INTERLEAVED])
def test_onnx_full_width_caches_hint(form):
    """rotary_embedding given full-width caches says they hold each value twice and the cut of their form;
    followed, it gives the model's result; a width that is not twice the expected one gets no such hint."""
    x = RNG.standard_normal((2, 2, 5, 64)).astype(np.float32)
    f = _angles(2, 5, 64, 1)
    cos, sin = _full(f, form)
    cut = r"cos_cache\[\.\.\., :rot // 2\] with interleaved=0\)" if form == CAT else \
        r"cos_cache\[\.\.\., ::2\] with interleaved=1\)"
    with pytest.raises(ValueError, match=r"^cos_cache must have shape \[B, S, rot/2\] \(no position_ids\) \(a table "
                                         r"of each value twice, as Hugging Face's full-width ones: pass " + cut +
                                         r" = \(2, 5, 32\); got \(2, 5, 64\)$"):
        vkrope.rotary_embedding(x, cos, sin)
    half = (lambda t: t[..., :32]) if form == CAT else (lambda t: t[..., ::2])
    y = vkrope.rotary_embedding(x, half(cos), half(sin), interleaved=int(form == INTERLEAVED), out=poisoned_like(x))
    _close(y, x, _exact(x, f, form))
    with pytest.raises(ValueError, match=r"^cos_cache must have shape \[B, S, rot/2\] \(no position_ids\) = "
                                         r"\(2, 5, 32\); got \(2, 5, 48\)$"):
        vkrope.rotary_embedding(x, cos[..., :48], sin[..., :48])


def test_executorch_whole_tables_hint():
    """apply_rotary_emb given ExecuTorch's Rope.freqs_cos of every position is told to take the call's rows, which
    then gives ExecuTorch's result; a table of D values a row is told the cut of a repeat_interleave one (which
    gives GPT-J's result) or, for a cat one, apply_rotary_emb_hf (which gives transformers')."""
    s, d = 4, 16
    q = RNG.standard_normal((1, s, 2, d)).astype(np.float32)
    k = RNG.standard_normal((1, s, 1, d)).astype(np.float32)
    ang = np.outer(np.arange(64), 1.0 / 10000.0 ** (np.arange(0, d, 2) / d))
    fc, fs = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(64, 8\) \(a table "
                                         r"of every position, as ExecuTorch's Rope\.freqs_cos: pass the rows of "
                                         r"these S = 4 tokens, freqs_cos\[input_pos\], as its Rope\.get_freqs "
                                         r"does\)$"):
        vkrope.apply_rotary_emb(q, k, fc, fs)
    input_pos = np.arange(30, 30 + s)
    yq, yk = vkrope.apply_rotary_emb(q, k, fc[input_pos], fs[input_pos])
    rq, rk = et_apply_rotary_emb(q, k, fc[input_pos], fs[input_pos])
    np.testing.assert_allclose(yq, rq, rtol=0, atol=ULPS * 2 * np.abs(q).max())
    np.testing.assert_allclose(yk, rk, rtol=0, atol=ULPS * 2 * np.abs(k).max())
    f = ang[None, 30:30 + s]
    ri_c, ri_s = (t[0] for t in _full(f, INTERLEAVED))
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(4, 16\) \(D "
                                         r"values a row, each twice: pass freqs_cos\[\.\.\., ::2\] of a "
                                         r"repeat_interleave\(freqs, 2\) table\)$"):
        vkrope.apply_rotary_emb(q, k, ri_c, ri_s)
    yq, yk = vkrope.apply_rotary_emb(q, k, ri_c[..., ::2], ri_s[..., ::2])
    for y, x in ((yq, q), (yk, k)):  # (ExecuTorch's [B, S, H, D] as the oracle's [B, H, S, D])
        _close(y, x, _exact(x.transpose(0, 2, 1, 3), f, INTERLEAVED).transpose(0, 2, 1, 3))
    cat_c, cat_s = (t[0] for t in _full(f, CAT))
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(4, 16\) \(D "
                                         r"values a row, each twice: a rotate-half cat\(freqs, freqs\) table goes to "
                                         r"vkrope\.apply_rotary_emb_hf\)$"):
        vkrope.apply_rotary_emb(q, k, cat_c, cat_s)
    yq, yk = vkrope.apply_rotary_emb_hf(q, k, cat_c, cat_s)
    for y, x in ((yq, q), (yk, k)):
        _close(y, x, _exact(x.transpose(0, 2, 1, 3), f, CAT).transpose(0, 2, 1, 3))
    with pytest.raises(ValueError, match=r"^freqs_cos must have shape \[S, D/2\] = \(4, 8\); got \(3, 8\)$"):
        vkrope.apply_rotary_emb(q, k, fc[:3], fs[:3])


@pytest.mark.parametrize("side", [4.0, np.float32(4.0), np.float64(4.0), math.sqrt(16)])
def test_sam2_float_grid_sides(side):
    """SAM2's RoPEAttention passes math.sqrt(N) as end_x / end_y: a float of whole value is the grid of that int,
    for the spec and the table alike."""
    spec = vkrope.AxialFreqs(16, side, side)
    assert spec == vkrope.AxialFreqs(16, 4, 4) and type(spec.end_x) is int and type(spec.end_y) is int
    assert hash(spec) == hash(vkrope.AxialFreqs(16, 4, 4))
    np.testing.assert_array_equal(vkrope.axial_freqs(16, side, side), vkrope.axial_freqs(16, 4, 4))


@pytest.mark.parametrize("side", [4.5, float("inf"), float("nan"), np.float32(2.5),
                                  np.longdouble(4) + np.finfo(np.longdouble).eps * 4])
def test_sam2_grid_side_not_whole_refused(side):
    """A float grid side that is no whole number (SAM2's math.sqrt of a token count that is not a square) is
    refused, naming the argument."""
    for make in (vkrope.AxialFreqs, vkrope.axial_freqs):
        with pytest.raises(ValueError, match=r"^end_x must be a whole number \(an int, or a float of whole value as "
                                             r"SAM2's math\.sqrt\(N\) of a square N\); got "):
            make(16, side, 4)
        with pytest.raises(ValueError, match=r"^end_y must be a whole number"):
            make(16, 4, side)


@pytest.mark.parametrize("side", [0.0, -0.0, -4.0, 1e300, 2.0**64])
def test_sam2_grid_side_out_of_range_names_the_float(side):
    """A whole float out of range is refused showing the float given, not the int it would be."""
    for make in (vkrope.AxialFreqs, vkrope.axial_freqs):
        with pytest.raises(ValueError, match=r"^end_x must be >= 1 and at most 2\^64 - 1; got float " + re.escape(repr(side)) + "$"):
            make(16, side, 4)


@pytest.mark.parametrize("repeat", [1, 2, 5])
@pytest.mark.parametrize("freqs", ["table", "spec"])
def test_sam2_all_keys_excluded(repeat, freqs):
    """SAM2 rotates no key when every one is excluded ("no keys to rotate, due to dropout"), whatever its
    frequencies' rows: k comes back unchanged (the oracle: every token passes through)."""
    k = RNG.standard_normal((1, 2, 3, 16)).astype(np.float32)
    f = vkrope.axial_freqs(16, 2, 2) if freqs == "table" else vkrope.AxialFreqs(16, 2, 2)
    y = vkrope.apply(k, f, repeat=repeat, exclude_last=3, out=poisoned_like(k))
    np.testing.assert_array_equal(y, oracle(k, vkrope.axial_freqs(16, 2, 2, dtype=np.float64), repeat=repeat,
                                            exclude_last=3))
    np.testing.assert_array_equal(y, k)
    with pytest.raises(ValueError, match=r"^freqs has 4 rows .* expected \(N - exclude_last\) / repeat = "
                                         r"\(3 - 2\) / 1 rows"):
        vkrope.apply(k, f, exclude_last=2)
    empty = np.zeros((1, 2, 0, 16), np.float32)  # (no token: nothing rotates, whatever the rows, as SAM2's [:0])
    assert vkrope.apply(empty, f, repeat=repeat).shape == (1, 2, 0, 16)


def test_the_forms_read_as_a_model_makes_them():
    """form_of: a table both forms fit is no form (a cut of either could be wrong); a decode table whose first
    item sits at position 0 (every column alike) is read from its next items; bfloat16 tables are read."""
    from vkrope.ops import full_width

    a, b = 0.25, 0.75
    assert full_width.form_of(np.array([[a, a, b, b, a, a, b, b]], np.float32)) == ""
    f = np.stack([np.zeros((1, 32)), 3.0 + np.arange(32)[None] * 0.1])  # [2, 1, 32]: item 0 at position 0
    cos, sin = _full(f, INTERLEAVED)
    assert full_width.form_of(cos, sin) == INTERLEAVED + "(freqs, 2)"
    assert full_width.form_of(*(t.astype(vkrope.bfloat16) for t in _full(_angles(1, 5, 64, 3), CAT))) == CAT + \
        "(freqs, freqs)"


def test_the_hints_name_the_pairs_of_the_tables_form():
    """A cut alone rotates the wrong pairs where the call's flag disagrees with the table's form (2.6 off, a
    reviewer measured): the decode step's and ONNX's hints name the flag of the form."""
    q = np.zeros((1, 2, 1, 64), np.float32)
    kc, vc = (vkrope.default_device().asarray(np.zeros((1, 1, 8, 64), np.float32)) for _ in range(2))
    cos, sin = (t[0] for t in _full(_angles(1, 8, 64, 5), INTERLEAVED))
    with pytest.raises(ValueError, match=r"pass cos\[\.\.\., ::2\] with interleaved=True, sin likewise$"):
        vkrope.rope_and_cache(q, q[:, :1], q[:, :1], kc, vc, (cos, sin), np.array([[3]]))
    cat_c, cat_s = _full(_angles(1, 5, 64, 5), CAT)
    x = np.zeros((1, 2, 5, 64), np.float32)
    with pytest.raises(ValueError, match=r"pass cos_cache\[\.\.\., :rot // 2\] with interleaved=0\) = "):
        vkrope.rotary_embedding(x, cat_c, cat_s, interleaved=1)
    bf = (cat_c.astype(vkrope.bfloat16), cat_s.astype(vkrope.bfloat16))  # (bfloat16 tables told too)
    with pytest.raises(TypeError, match=ROUTE[CAT] + ", once for q"):
        vkrope.apply_rotary_pos_emb(x.astype(vkrope.bfloat16), x.astype(vkrope.bfloat16), *bf)


def test_a_numpy_float_of_2_to_the_64_is_out_of_range():
    """numpy compares 2^64 - 1 as the float 2^64: the side is compared as the int it is."""
    with pytest.raises(ValueError, match=r"^end_x must be >= 1 and at most 2\^64 - 1; got "):
        vkrope.AxialFreqs(16, np.float64(2.0**64), 4)

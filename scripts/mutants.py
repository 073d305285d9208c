#!/usr/bin/env python3
"""Mutation check: break vkrope on purpose, one curated mutation at a time,
and report which ones the test suite fails to notice (survivors).

Each mutation replaces one exact snippet of one file in a scratch copy of
the repository (shader mutations are recompiled there), then runs the
selected tests with the validation layer on, stopping at the first
failure. A mutation whose snippet is missing is reported as stale (the
list must follow the code). Exit status 1 when an unexplained mutant
survives or a snippet is stale.

    python scripts/mutants.py                 # every mutation
    python scripts/mutants.py --list          # names only
    python scripts/mutants.py --only NAME ... # some of them
    python scripts/mutants.py --paths vkrope/kernels/cache.py ...  # those of some files
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/kernels/test_contract_shapes.py", "tests/kernels/test_contract_full.py", "tests/runtime/test_device_arrays.py",
    "tests/runtime/test_texture.py", "tests/runtime/test_discrete_path.py", "tests/runtime/test_big_and_zero_copy.py",
    "tests/kernels/test_sequences.py", "tests/kernels/test_float16_rounding.py", "tests/kernels/test_properties.py",
    "tests/ops/test_misuse.py", "tests/runtime/test_reliability.py", "tests/ops/test_family.py", "tests/runtime/test_faults_zero_copy.py",
    "tests/kernels/test_generated.py", "tests/kernels/test_trig.py", "tests/kernels/test_yarn.py", "tests/runtime/test_lifecycle.py", "tests/runtime/test_recordings.py", "tests/runtime/test_runtime.py",
    "tests/kernels/test_bfloat16.py", "tests/kernels/test_rope_cache.py", "tests/runtime/test_runtime_ops.py", "tests/runtime/test_kept_imports.py", "tests/ops/test_nd.py",
    "tests/models/test_hf_configs.py", "tests/models/test_gguf.py", "tests/models/test_hf_models.py",
    "tests/models/test_hf_remote.py", "tests/models/test_pyconv.py", "tests/models/test_chart.py",
    "tests/kernels/test_shift.py", "tests/project/test_api_binding.py", "tests/kernels/test_fp8.py",
    "tests/runtime/test_hot_path.py", "tests/ops/test_repeat.py",
]


@dataclass(frozen=True)
class Mutation:
    """Replace `old` (exactly once) by `new` in `path`; `why_survives` set
    means it is expected to survive, for the reason given."""

    name: str
    path: str
    old: str
    new: str
    why_survives: str = ""


KERNEL = "glsl/rope_interleaved.glsl"
TABLE_KERNEL = "glsl/rope_table.glsl"
COMMON = "glsl/common.glsl"
FREQS = "vkrope/freqs.py"
FREQS_GLSL = "glsl/freqs.glsl"
FP8_GLSL = "glsl/fp8.glsl"
LOWERING = "vkrope/ops/lowering.py"
SHIFT_GLSL = "glsl/rope_shift.glsl"
CONFIGS = "vkrope/models/hf.py"
ROPE = "vkrope/models/rope.py"
ROPE_TYPES = "vkrope/models/rope_types.py"
GGUF = "vkrope/models/gguf.py"
GGUF_LAYERS = "vkrope/models/gguf_layers.py"
CONVERT = "vkrope/models/gguf_convert.py"
PYCONV = "vkrope/models/pyconv.py"
MUTATIONS = [
    # --- the shader's math and indexing
    Mutation("aligned second pair uses the first pair's freqs", KERNEL,
             "v.zw = rotate_pair(v.zw, cs.zw);", "v.zw = rotate_pair(v.zw, cs.xy);"),
    Mutation("cos and sin swapped", KERNEL, "float c = cs.x;", "float c = cs.y;"),
    Mutation("freqs read transposed ([C/2, Nf])", KERNEL,
             "uint fi = uint(frow) * p.pairs_per_row + k0 - p.f_base;",
             "uint fi = k0 * p.n_freq_rows + uint(frow) - p.f_base;"),
    Mutation("inverse flag ignored", KERNEL,
             "float s = (p.flags & FLAG_INVERSE) != 0u ? -cs.y : cs.y;", "float s = cs.y;"),
    Mutation("positions read at the wrong token", KERNEL,
             "return positions[n - p.pos_base];", "return positions[n];"),
    Mutation("repeat: row n / Nf instead of n % Nf", KERNEL,
             "return int(REPEAT ? n % p.n_freq_rows : n);", "return int(REPEAT ? n / p.n_freq_rows : n);"),
    Mutation("repeat: rows never wrap (REPEAT always off)", "vkrope/kernels/interleaved.py",
             "repeat = not ch.positions and self.n_rot > self.n_freq_rows", "repeat = False"),
    Mutation("exclude_last: last excluded token rotated", KERNEL, "if (n >= p.n_rot) {", "if (n > p.n_rot) {"),
    Mutation("unaligned second pair dropped", KERNEL,
             "v.zw = rotate_pair(v.zw, f_vec2(freqs[fi + 1u]));", "v.zw = v.zw;"),
    Mutation("flat rows: token from the batch index", KERNEL, "n = row % p.n_tokens;", "n = row / p.n_tokens;"),
    Mutation("texture fold: rows not folded", "glsl/tensor.glsl",
             "  return ivec3(int(c4 % width), int(vrow % height), int(vrow / height));",
             "  return ivec3(int(c4 % width), int(vrow), 0);"),
    Mutation("pass-through texel re-encoded instead of copied", KERNEL,
             "XRAW2 out0 = frow >= 0 ? vec2_to_raw(v.xy) : raw0;", "XRAW2 out0 = vec2_to_raw(v.xy);"),
    Mutation("pass-through tokens rotated", KERNEL,
             "XRAW2 out1 = frow >= 0 ? vec2_to_raw(v.zw) : raw1;", "XRAW2 out1 = vec2_to_raw(v.zw);\n  v.zw = v.zw * 2.0;"),
    Mutation("float16 ties away from zero", COMMON,
             "uvec4 kept = (mag + 0x0FFFu + ((mag >> 13) & 1u)) & 0xFFFFE000u;",
             "uvec4 kept = (mag + 0x1000u) & 0xFFFFE000u;"),
    Mutation("float16 truncated", COMMON,
             "uvec4 kept = (mag + 0x0FFFu + ((mag >> 13) & 1u)) & 0xFFFFE000u;", "uvec4 kept = mag & 0xFFFFE000u;"),
    Mutation("Kahan form removed", COMMON, "return isnan(r) ? f : r;", "return a * b - c * d;",
             why_survives="lavapipe does not fuse fma: the Kahan form and the plain form give the same bits "
                          "there (README, Accuracy); only a device that fuses fma can tell them apart"),
    # --- the table kernel (ONNX / ExecuTorch LLM and HF)
    Mutation("table: rotate-half partner sign lost (whole texels)", TABLE_KERNEL,
             "return rotate4(x, c, first ? partner : -partner, s);", "return rotate4(x, c, partner, s);"),
    Mutation("table: interleaved pairs not swapped (whole texels)", TABLE_KERNEL,
             "return rotate4(x, c, vec4(x.y, -x.x, x.w, -x.z), s);", "return rotate4(x, c, vec4(x.y, x.x, x.w, x.z), s);"),
    Mutation("table: full-width HF table read as half width (whole texels)", TABLE_KERNEL,
             "uint col = tb + ((p.flags & FLAG_FULL_TABLE) != 0u ? j0 : (first ? j0 : j0 - p.rot_half));",
             "uint col = tb + (first ? j0 : j0 - p.rot_half);"),
    Mutation("table: full-width HF table read as half width (per value)", TABLE_KERNEL,
             "uint col = full ? j : i;", "uint col = i;"),
    Mutation("rotate-half partner on the wrong side (per value: the table kernel and the decode step)", "glsl/tensor.glsl",
             "    partner = first ? j + rot_half : j - rot_half;", "    partner = first ? j - rot_half : j + rot_half;"),
    Mutation("table: token of a row ignores heads-per-token", TABLE_KERNEL,
             "(r / p.token_rows) % p.n_tokens", "r % p.n_tokens"),
    Mutation("table: first pass-through channel rotated", TABLE_KERNEL, "if (j >= rot) {", "if (j > rot) {"),
    Mutation("table: partner read from the own texel only", TABLE_KERNEL,
             "float partner = (pv >= v0 && pv < v0 + 4u) ? x[pv - v0] : load_value(r, pv);",
             "float partner = x[pv & 3u];"),
    Mutation("table op: LLM rows of a batch in the wrong order", "vkrope/ops/executorch.py",
             "row_of = np.tile(np.arange(s, dtype=np.int32), b)\n    return _bshd(\"xq\", q,", "row_of = np.repeat(np.arange(s, dtype=np.int32), b)\n    return _bshd(\"xq\", q,"),
    Mutation("table op: gathered cache rows not renumbered", "vkrope/kernels/table.py",
             "keep, row_of = np.unique(req.row_of[bs0:bs1], return_inverse=True)",
             "keep, _ = np.unique(req.row_of[bs0:bs1], return_inverse=True); row_of = req.row_of[bs0:bs1]"),
    Mutation("table op: rotate-half allowed in place", "vkrope/kernels/table.py",
             "return self.interleaved and self.head_dim % 2 == 0", "return True"),
    Mutation("table op: position ids past the cache accepted", "vkrope/ops/table_args.py",
             "bad = p[(p < 0) | (p >= rows)]", "bad = p[p < 0]"),
    Mutation("generated: exact angle mode ignored (table kernel)", TABLE_KERNEL,
             "  return freq_cs(ANGLE, ND, col,", "  return freq_cs(ANGLE == ANGLE_EXACT ? ANGLE_FLOAT32 : ANGLE, ND, col,"),
    Mutation("generated: position read as an integer, not its float32 bits", FREQS_GLSL,
             "precise float angle = intBitsToFloat(w0) * inv;", "precise float angle = float(w0) * inv;"),
    Mutation("generated: built-in cos / sin instead of the exact ones", FREQS_GLSL,
             "    cs = mode == ANGLE_SHORT ? cos_sin_short(angle) : cos_sin(angle);",
             "    cs = mode == ANGLE_SHORT ? cos_sin_short(angle) : vec2(cos(angle), sin(angle));"),
    Mutation("generated axial: x and y swapped", KERNEL,
             "      w0 = grid_word(k0 < x_pairs ? x : y);", "      w0 = grid_word(k0 < x_pairs ? y : x);"),
    Mutation("generated axial: exact angle mode ignored", KERNEL,
             "  return freq_cs(ANGLE, false, k, p.pairs_per_row,",
             "  return freq_cs(ANGLE == ANGLE_EXACT ? ANGLE_FLOAT32 : ANGLE, false, k, p.pairs_per_row,"),
    Mutation("generated axial: the grid coordinate's float32 bits taken for the exact angle", KERNEL,
             "  return ANGLE == ANGLE_EXACT ? int(c) : floatBitsToInt(float(c));", "  return floatBitsToInt(float(c));"),
    Mutation("generated axial: row split without its corrections", KERNEL,
             "  q += int(floor(float(r) * rcp));\n  r = int(n) - q * int(d);\n  q += r < 0 ? -1 : (r >= int(d) ? 1 : 0);",
             "  r = 0;"),
    Mutation("generated: short reduction past its range", LOWERING,
             "    return ANGLE_SHORT if spec.max_float32_angle <= SHORT_ANGLE_LIMIT else ANGLE_FLOAT32",
             "    return ANGLE_SHORT"),
    Mutation("short reduction: last part of pi/2 dropped", "glsl/trig.glsl",
             "precise float tail = (t3.y + t4.y) - j * TRIG_C5;", "precise float tail = t3.y + t4.y;"),
    Mutation("short reduction: C4 term's rounding error dropped", "glsl/trig.glsl",
             "precise float tail = (t3.y + t4.y) - j * TRIG_C5;", "precise float tail = t3.y - j * TRIG_C5;"),
    Mutation("short reduction: C3 term's rounding error dropped", "glsl/trig.glsl",
             "precise float tail = (t3.y + t4.y) - j * TRIG_C5;", "precise float tail = t4.y - j * TRIG_C5;"),
    Mutation("generated: one texel's frequency load off by a pair (interleaved kernel)", KERNEL,
             "freq_inv2[k0 >> 1];", "freq_inv2[(k0 >> 1) + 1u];"),
    Mutation("generated: rotate-half columns' frequencies swapped (table kernel)", TABLE_KERNEL,
             "c1 = generated_cs(trow, tok, col + 1u, inv.y);", "c1 = generated_cs(trow, tok, col + 1u, inv.z);"),
    Mutation("generated: exact quarter turns read from the frequency words", FREQS_GLSL,
             "freq_columns[(n_cols + 3u) / 4u + col]", "freq_columns[col]"),
    Mutation("yarn: magnitude not applied (table kernel)", TABLE_KERNEL,
             "inv, w0, w1, uintBitsToFloat(p.magnitude));", "inv, w0, w1, 1.0);"),
    Mutation("yarn: magnitude not applied (interleaved kernel)", KERNEL,
             "inv, w, 0u, uintBitsToFloat(p.magnitude));\n}\n\n// An axial", "inv, w, 0u, 1.0);\n}\n\n// An axial"),
    Mutation("yarn: magnitude not applied (the decode step)", "glsl/rope_cache.glsl",
             "inv, w, 0u, uintBitsToFloat(p.magnitude));", "inv, w, 0u, 1.0);"),
    Mutation("yarn: magnitude push constant not sent (the decode step)", "vkrope/kernels/cache.py",
             "weight_add=self.add_bits, magnitude=self.magnitude_bits,", "weight_add=self.add_bits, magnitude=0x3F800000,"),
    Mutation("decode step: exact angle mode ignored", "glsl/rope_cache.glsl",
             "  return freq_cs(ANGLE, false, col, p.rot_half,", "  return freq_cs(ANGLE == ANGLE_EXACT ? ANGLE_FLOAT32 : ANGLE, false, col, p.rot_half,"),
    Mutation("decode step: a whole texel's second pair at its first pair's frequency (generated)", "glsl/rope_cache.glsl",
             "b = generated_cs(w, (v0 >> 1) + 1u, inv.y);", "b = generated_cs(w, v0 >> 1, inv.x);"),
    Mutation("decode step: a value's frequency read from the next column (generated, value by value)",
             "glsl/rope_cache.glsl", "freq_inv[i]);", "freq_inv[i + 1u]);"),
    Mutation("decode step: the spec's words taken as table rows", "vkrope/ops/decode.py",
             "    return gen, None, gen.words(p), rot",
             "    return gen, None, p.astype(np.int32), rot"),
    Mutation("yarn: magnitude push constant not sent (interleaved op)", "vkrope/kernels/interleaved.py",
             "axial_end_x=self.axial_end_x, magnitude=self.magnitude_bits,", "axial_end_x=self.axial_end_x, magnitude=0x3F800000,"),
    Mutation("yarn: magnitude push constant not sent (table op)", "vkrope/kernels/table.py",
             "image_height=height, image_width=width, magnitude=self.magnitude_bits,",
             "image_height=height, image_width=width, magnitude=0x3F800000,"),
    Mutation("yarn: inverse refused only for factors above 1", "vkrope/ops/sam2.py",
             "pairs.magnitude != 1:", "pairs.magnitude > 1:"),
    Mutation("yarn: factor 1 refused", FREQS, "if not self.scale >= 1:", "if not self.scale > 1:"),
    Mutation("freq_factors that float32 rounds to 0 accepted", FREQS,
             "            if not _f32_normal(ff).all():", "            if not (ff > 0).all():"),
    Mutation("exact angle: quarter turns read at the unpadded offset", FREQS_GLSL,
             "freq_columns[(n_cols + 3u) / 4u + col]", "freq_columns[n_cols / 4u + col]"),
    Mutation("columns: frequency words not padded to whole uvec4s", "vkrope/kernels/generated.py",
             "        head = -(-n // 4) * 4\n", "        head = n\n"),
    Mutation("exact angle: tiny frequencies accepted", FREQS, "    if f < EXACT_MIN_FREQ:", "    if False:"),
    Mutation("yarn: an empty ramp accepted", FREQS, "        if high < low:\n", "        if False:\n"),
    Mutation("yarn: positions divided by the scale as well", FREQS,
             "return 1.0 if self.yarn is not None else float(self.scale)", "return float(self.scale)"),
    Mutation("yarn: ext_factor ignored", FREQS,
             "return (t(1) - ramp) * t(self.ext_factor)", "return t(1) - ramp"),
    Mutation("yarn: truncate ignored", FREQS, "        if self.truncate:\n", "        if True:\n"),
    Mutation("yarn: ramp reversed", FREQS,
             "inv = interp * (t(1.0) - mix) + inv * mix", "inv = inv * (t(1.0) - mix) + interp * mix"),
    Mutation("yarn: ramp ends not clamped", FREQS,
             "return max(low, 0), min(high, dim - 1)", "return low, high"),
    Mutation("yarn: high clamped to dim / 2 - 1", FREQS,
             "return max(low, 0), min(high, dim - 1)", "return max(low, 0), min(high, dim // 2 - 1)"),
    Mutation("yarn: HF's one-index guard dropped", FREQS,
             "        if low == high:\n            high += 0.001", "        if False:\n            high += 0.001"),
    Mutation("yarn: freq_factors ignored with yarn", FREQS,
             "        if self.freq_factors is not None:\n            inv = inv /",
             "        if self.freq_factors is not None and self.yarn is None:\n            inv = inv /"),
    Mutation("yarn: inverse allowed with a factor", "vkrope/ops/sam2.py",
             "if inverse and isinstance(pairs, FrequencySpec) and pairs.magnitude != 1:", "if False:"),
    Mutation("yarn: the references without the factor", "vkrope/kernels/generated.py",
             "        m = np.float64(self.magnitude)\n", "        m = 1.0\n"),
    Mutation("frequencies: numpy's float32 power, not the correctly rounded one", FREQS,
             "    return pow64(float(np.float32(base)), np.asarray(exps, np.float32)).astype(np.float32)",
             "    return np.power(np.float32(base), np.asarray(exps, np.float32))"),
    Mutation("yarn: magnitude without the scale's log term", FREQS,
             "return float(self.attn_factor) * (0.1 * math.log(scale) + 1.0)", "return float(self.attn_factor)"),
    # --- the operator's plan and tables
    Mutation("positions reversed", "vkrope/kernels/interleaved.py", "pos = req.positions[t0:t1] if", "pos = req.positions[t0:t1][::-1] if"),
    Mutation("gathered rows not renumbered", "vkrope/kernels/interleaved.py", "pos[rows >= 0] = inverse", "pos[rows >= 0] = rows[rows >= 0]"),
    Mutation("table slice starts at row 0", "vkrope/kernels/interleaved.py", "f = freqs[r0:r1]", "f = freqs[0:r1 - r0]"),
    Mutation("x binding base off by one texel", "vkrope/kernels/interleaved.py", "x0 = x0 // x_align * x_align", "x0 = x0 // x_align * x_align + 2"),
    Mutation("row blocks read x after out was written", "vkrope/kernels/interleaved.py",
             "        x = x.copy()  # blocks written early", "        pass  # blocks written early"),
    Mutation("inverse not in the plan memo key", "vkrope/kernels/interleaved.py",
             "req.n_rot, req.n_freq_rows, req.inverse,", "req.n_rot, req.n_freq_rows,"),
    Mutation("n_rot not in the plan memo key", "vkrope/kernels/interleaved.py",
             "req.n_rot, req.n_freq_rows, req.inverse,", "req.n_freq_rows, req.inverse,"),
    Mutation("n_freq_rows not in the plan memo key", "vkrope/kernels/interleaved.py",
             "req.n_rot, req.n_freq_rows, req.inverse,", "req.n_rot, req.inverse,"),
    Mutation("resident freqs not in the plan memo key", "vkrope/kernels/interleaved.py",
             "            resident, spec, req.positions", "            spec, req.positions"),
    Mutation("frequency spec not in the plan memo key", "vkrope/kernels/interleaved.py",
             "            resident, spec, req.positions", "            resident, req.positions"),
    Mutation("whether positions are given not in the plan memo key", "vkrope/kernels/interleaved.py",
             "            resident, spec, req.positions is not None)", "            resident, spec)"),
    Mutation("shape not in the plan memo key", "vkrope/kernels/interleaved.py", "(KERNEL, req.storage, req.shape, req.dtype,", "(KERNEL, req.storage, req.dtype,"),
    Mutation("storage not in the plan memo key", "vkrope/kernels/interleaved.py", "(KERNEL, req.storage, req.shape, req.dtype,", "(KERNEL, req.shape, req.dtype,"),
    Mutation("x dtype not in the plan memo key", "vkrope/kernels/interleaved.py", "(KERNEL, req.storage, req.shape, req.dtype,", "(KERNEL, req.storage, req.shape,"),
    Mutation("freqs dtype not in the plan memo key", "vkrope/kernels/interleaved.py", "req.dtype, f_dtype_of(req), req.n_rot", "req.dtype, req.n_rot"),
    # --- the runtime's cache keys, barriers and drains
    Mutation("push constants not in the recording key", "vkrope/runtime/steps.py",
             "    push: tuple[tuple[str, int], ...]\n", "    push: tuple[tuple[str, int], ...] = field(compare=False)\n"),
    Mutation("binding offsets not in the recording key", "vkrope/runtime/steps.py",
             "    offset: int = 0\n    size: int = 0\n", "    offset: int = field(default=0, compare=False)\n    size: int = 0\n",
             why_survives="an equivalent mutant today: every plan the operators make puts a binding's offset in "
                          "its push constants too (x_base, f_base, t_base, idx_base, pos_base) or derives it "
                          "from the sizes in the key, so two launches that differ only in an offset do not "
                          "occur; the field stays in the key as the guard for a kernel that binds without one"),
    Mutation("faults on the zero-copy path retried on the copy path", "vkrope/runtime/execute.py",
             "            raise  # device loss, out of memory: the caller must see them",
             "            pass  # (mutant) swallow every failure"),
    Mutation("resource serials not in the recording key", "vkrope/runtime/steps.py",
             "    serial: int\n", "    serial: int = field(compare=False)\n"),
    Mutation("grid not in the recording key", "vkrope/runtime/steps.py",
             "    grid: tuple[int, int, int]\n", "    grid: tuple[int, int, int] = field(compare=False)\n",
             why_survives="an equivalent mutant today: every operator derives the grid from its push constants "
                          "(the row or token range) and specialization constants (the workgroup shape), which "
                          "stay in the key; the field guards a kernel whose grid carries more"),
    Mutation("spec constants not in the pipeline key", "vkrope/runtime/engine.py", "key = (name, spec)", "key = (name,)"),
    Mutation("no derived barriers", "vkrope/runtime/recorder.py", "        if hazards:\n", "        if False:\n"),
    Mutation("no drain before reusing a work buffer", "vkrope/runtime/engine.py",
             '        (after the submission in flight has finished with it)."""\n        self.drain()\n',
             '        (after the submission in flight has finished with it)."""\n',
             why_survives="defence in depth: a submission is only left in flight by an interruption, and the "
                          "interrupted call neither copies its staging back nor returns, while submit() and the "
                          "release of imports drain anyway; the host write it guards can only race a result "
                          "nobody reads"),
    Mutation("temporaries released before the submission ends", "vkrope/runtime/execute.py",
             "            temporaries.append(tmp)\n", "            free_resource(rt, tmp)\n",
             why_survives="equivalent today: a buffer given back goes to the end of the reuse pool, which evicts "
                          "its oldest entries first (a device with no pool at all, maxMemoryAllocationCount < 4, "
                          "cannot hold this call's four allocations), and a later temporary of the same call that "
                          "took it is ordered after the first one's copy back by the derived barriers"),
    Mutation("a numpy output imported over a numpy input it overlaps", "vkrope/runtime/execute.py",
             "    if not t.writes and not any(np.shares_memory(v, values[n]) for n in imported):",
             "    if not t.writes:"),
    # --- N-D axial RoPE (#22)
    Mutation("N-D: a negative id's angle not negated", "glsl/trig.glsl",
             "  if (whole < 0) {\n    w4 = trig_neg128(w4);", "  if (false) {\n    w4 = trig_neg128(w4);"),
    Mutation("N-D: an id's fraction dropped", "glsl/trig.glsl",
             "  uvec4 f = trig_mul128(frac, uvec4(0u, freq_q));", "  uvec4 f = uvec4(0u);"),
    Mutation("N-D: every column on axis 0", "glsl/rope_table.glsl",
             "    uint at = tok * p.id_words + 2u * freq_column(col, p.rot_half).w;", "    uint at = tok * p.id_words;"),
    Mutation("N-D: the exact angle without the fraction's product (and negative ids wrapped as unsigned)",
             "glsl/rope_table.glsl",
             "  return freq_cs(ANGLE, ND, col,", "  return freq_cs(ANGLE, false, col,"),
    Mutation("N-D: inverse ignored", "vkrope/ops/nd.py", "        v = -v  # the rotation by -angle", "        pass"),
    Mutation("N-D: shared ids indexed per leading item", "vkrope/ops/nd.py",
             "        batch_rows = max(1, rows if words.ndim == 2 else rows // max(1, int(v.shape[0])))",
             "        batch_rows = n"),
    Mutation("N-D: heads of [B, S, H, D] taken for tokens", "vkrope/ops/nd.py",
             "    heads = int(x.shape[-2]) if token_axis == -3 else 1", "    heads = 1"),
    Mutation("N-D: the kernel not told", "vkrope/kernels/table.py", "ANGLE=self.angle, ND=self.id_words > 0)", "ANGLE=self.angle, ND=False)"),
    Mutation("N-D: the fraction rounded down", LOWERING, "        q = np.round(ids * 2.0**32)", "        q = np.floor(ids * 2.0**32)",
             why_survives="equivalent within float32: a fraction off by one 2^-32 moves an angle by at most "
                          "2^-32 * f <= 2.3e-10 rad, far below float32 cos / sin rounding"),
    Mutation("N-D: per-axis theta collapsed", FREQS, "        return np.concatenate([1.0 / pow64(t, np.arange(0, d, 2, dtype=np.float64) / d)\n                               for d, t in zip(self.axes_dim, self.thetas)])",
             "        return np.concatenate([1.0 / pow64(self.thetas[0], np.arange(0, d, 2, dtype=np.float64) / d)\n                               for d, t in zip(self.axes_dim, self.thetas)])"),
    Mutation("N-D: texture texels read the ids of the first item", "glsl/rope_table.glsl",
             "    vec4 y = rotate_texel(r, v0, trow, tok, IMAGE_LOAD(x_image, tpos));",
             "    vec4 y = rotate_texel(r, v0, trow, tok % p.n_tokens, IMAGE_LOAD(x_image, tpos));"),
    Mutation("N-D: a rotate-half texel's columns all on its first column's axis", "glsl/rope_table.glsl",
             "  vec2 c0 = generated_cs(trow, tok, col, inv.x), c1 = generated_cs(trow, tok, col + 1u, inv.y);\n  vec2 c2 = generated_cs(trow, tok, col + 2u, inv.z), c3 = generated_cs(trow, tok, col + 3u, inv.w);",
             "  vec2 c0 = generated_cs(trow, tok, col, inv.x), c1 = generated_cs(trow, tok, col, inv.y);\n  vec2 c2 = generated_cs(trow, tok, col, inv.z), c3 = generated_cs(trow, tok, col, inv.w);"),
    # --- imports kept for numpy arrays passed again (#19)
    Mutation("kept imports: a moved array's old import used", "vkrope/runtime/imports.py",
             "        if hit.where == (address, a.nbytes) and hit.buf.handle is not None:", "        if True:"),
    Mutation("kept imports: fresh arrays imported and pinned", "vkrope/runtime/imports.py",
             "            self.seen.popitem(last=False)\n        return False",
             "            self.seen.popitem(last=False)\n        return self._room(root.nbytes)"),
    Mutation("kept imports: unbounded", "vkrope/runtime/execute.py", "        rt.imports.trim()\n", ""),
    Mutation("kept imports: a mmap's memory pinned", "vkrope/runtime/imports.py",
             "    return a if a.base is None and a.flags.owndata else None", "    return a"),
    Mutation("kept imports: a refused array tried again", "vkrope/runtime/imports.py",
             "        if no is not None and no() is a:", "        if False:"),
    Mutation("kept imports: trim keeps them", "vkrope/runtime/engine.py", "        self.imports.clear()\n", ""),
    Mutation("kept imports: close keeps the arrays", "vkrope/owner.py",
             "            self._rt.imports.drop()  # (their memory objects", "            pass  # (their memory objects"),
    Mutation("kept imports: never found", "vkrope/runtime/imports.py",
             "        hit = self.kept.get(key)  # (the array", "        hit = None and self.kept.get(key)  # (the array"),
    Mutation("kept imports: released while still in the table", "vkrope/runtime/imports.py",
             "            self.stale.append(self.kept[key])\n            del self.kept[key]\n        self._release_stale()",
             "            self.ctx.release(self.kept[key].buf)\n            del self.kept[key]\n        self._release_stale()",
             why_survives="defence in depth: find() also refuses an entry whose buffer was destroyed (handle None), "
                          "so an entry an interruption left in the table goes stale instead of being bound; the "
                          "order keeps the table free of destroyed imports in the first place"),
    Mutation("kept imports: a sighting of the same call counts", "vkrope/runtime/imports.py",
             "            return ref[1] < self.call and self._room(root.nbytes)", "            return self._room(root.nbytes)"),
    Mutation("kept imports: admitted without room", "vkrope/runtime/imports.py",
             "        if len(self.kept) < self.COUNT and self._pinned() + nbytes <= self.BYTES:", "        if True:"),
    Mutation("kept imports: a view's whole array not counted", "vkrope/runtime/imports.py",
             "        if root is None or root.nbytes > self.BYTES // 4:", "        if root is None:"),
    Mutation("kept imports: not drained before the call returns", "vkrope/runtime/execute.py",
             "        if imports or temporaries or rt.imports.kept:", "        if imports or temporaries:",
             why_survives="defence in depth: CommandStream.drain re-raises an interruption of the fence wait only "
                          "once the device is done, so a call can leave work in flight only when a signal lands "
                          "between the submit's two statements (in_flight = True; drain()), which no test can aim "
                          "at; this drain covers that window for memory the device writes in place"),
    # --- the lifecycle of devices and arrays (#18)
    Mutation("arrays of a closed device accepted", "vkrope/arguments.py",
             '    if state == "closed":\n', '    if False:\n'),
    Mutation("another device's arrays accepted", "vkrope/owner.py",
             'if isinstance(v, DeviceArray) and (v.device is not self or v.state != "live"):',
             'if isinstance(v, DeviceArray) and v.state != "live":'),
    Mutation("apply_many: numpy read-after-write inside one submission", "vkrope/device.py",
             "                if (any(np.may_share_memory(a, w) for a in reads for w in written)",
             "                if (False"),
    Mutation("apply_many: later job not checked again", "vkrope/device.py",
             "                    req = job.recheck()\n", ""),
    Mutation("close forgets the context before tearing it down", "vkrope/owner.py",
             "            ctx.close()\n            self._rt.imports.drop()", "            self._ctx = None\n            ctx.close()\n            self._rt.imports.drop()"),
    Mutation("instance: a handle cleared after its destroy", "vkrope/vk/instance.py",
             "            self.handle = None\n            b.LIVE[\"VkInstance\"] -= 1\n            destroy_instance(handle, null)\n",
             "            b.LIVE[\"VkInstance\"] -= 1\n            destroy_instance(handle, null)\n            self.handle = None\n"),
    Mutation("buffer pool bounded by bytes only", "vkrope/runtime/arrays.py",
             "while len(rt.pool) > rt.pool_count or sum(", "while sum("),
    Mutation("pooled buffers kept at the allocation limit", "vkrope/vk/context.py",
             "            self.reclaim()\n", "            pass\n"),
    Mutation("every instance failure reported as a missing driver", "vkrope/vk/instance.py",
             "        except VulkanError as exc:\n            if exc.result in NO_DRIVER_RESULTS:",
             "        except Exception as exc:\n            if True:"),
    Mutation("asarray ignores the storage asked for", "vkrope/owner.py",
             'if a.device is self and storage in ("auto", a.storage):', "if a.device is self:"),
    Mutation("a timeout closes the device without saying so", "vkrope/owner.py",
             "        except DeviceTimeoutError as exc:\n            bound", "        except ZeroDivisionError as exc:\n            bound"),
    Mutation("a temporary's result never copied back into out", "vkrope/runtime/execute.py",
             "            after.extend(copy_steps(rt, tmp, v.resource, nbytes, via))", "            pass"),
    Mutation("returned memory dropped before it reaches the pool", "vkrope/runtime/arrays.py",
             "            rt.pool += [res]\n            del rt.returned[-1]",
             "            rt.returned.pop()\n            rt.pool.append(res)"),
    Mutation("imports refused at the allocation count are not retried as staging", "vkrope/runtime/execute.py",
             '"VK_ERROR_UNKNOWN", "VK_ERROR_TOO_MANY_OBJECTS"):', '"VK_ERROR_UNKNOWN"):'),
    Mutation("module functions give up when the default device closes under them", "vkrope/api.py",
             "            if attempt or not dev.closed:", "            if True:"),
    # --- the runtime's placement of declared tensors (#19; tests/runtime/test_runtime.py's probe operator)
    Mutation("an updated numpy tensor not read back", "vkrope/runtime/execute.py",
             "    if t.writes:\n        copies_out.append((handle, i, t.name, t.shape, v.dtype, None))",
             "    if t.access == 'write':\n        copies_out.append((handle, i, t.name, t.shape, v.dtype, None))"),
    Mutation("an updated numpy tensor not uploaded", "vkrope/runtime/execute.py",
             "    handle = arena.add(nbytes, (\"tensor\", i, t.name, None) if starts_full else None, written=t.writes)",
             "    handle = arena.add(nbytes, (\"tensor\", i, t.name, None) if t.access == 'read' else None, written=t.writes)"),
    Mutation("an update ordered like a read", "vkrope/runtime/recorder.py",
             "(p[0].writes or t[0].writes)", "(p[0].access == 'write' or t[0].access == 'write')"),
    Mutation("derived barriers cover only the next step's stage", "vkrope/runtime/recorder.py",
             "_union(h[2] for h in hazards), steps_stages, steps_access)",
             "_union(h[2] for h in hazards), _union(t[1] for t in touched), _union(t[2] for t in touched))"),
    Mutation("a long texture3d batch in one submission", "vkrope/runtime/execute.py",
             "        if used + sum(sizes) > budget or images + imaged > IMAGE_JOBS:",
             "        if used + sum(sizes) > budget:"),
    Mutation("released images not pooled", "vkrope/runtime/arrays.py",
             "        if res.handle is not None:\n            rt.pool += [res]",
             "        if isinstance(res, Buffer) and res.handle is not None:\n            rt.pool += [res]"),
    Mutation("a job writing numpy memory an earlier job reads kept in its submission", "vkrope/device.py",
             "or any(np.may_share_memory(a, w) for a in writes for w in read + written))",
             "or False)"),
    Mutation("flat rows over a too-wide resident table not retried by tokens", "vkrope/kernels/interleaved.py",
             "        flat = False\n        chunks, segments = fitted(flat)", "        raise"),
    Mutation("two outputs on one memory accepted", "vkrope/device.py",
             "                        raise ValueError(f\"{where}{name} and {t.name} are the same memory",
             "                        pass\n                        print(f\"{where}{name} and {t.name} are the same memory"),
    Mutation("a written DeviceArray that is a table of its job written in place", "vkrope/runtime/execute.py",
             "        clash = any(v is u for u in tables) or any(", "        clash = any("),
    # --- bfloat16 (#21)
    Mutation("bfloat16 truncated on store", COMMON,
             "uvec4 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;", "uvec4 rounded = u & 0xFFFF0000u;"),
    Mutation("bfloat16 ties away from zero", COMMON,
             "uvec4 rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) & 0xFFFF0000u;",
             "uvec4 rounded = (u + 0x8000u) & 0xFFFF0000u;"),
    Mutation("bfloat16 products with float32 cos / sin not made exact", COMMON,
             "  precise float b_hi = uintBitsToFloat(floatBitsToUint(b) & 0xFFFFFF00u);\n"
             "  precise float d_hi = uintBitsToFloat(floatBitsToUint(d) & 0xFFFFFF00u);",
             "  precise float b_hi = b;\n  precise float d_hi = d;"),
    Mutation("bfloat16 split keeps too many bits", COMMON,
             "precise float b_hi = uintBitsToFloat(floatBitsToUint(b) & 0xFFFFFF00u);",
             "precise float b_hi = uintBitsToFloat(floatBitsToUint(b) & 0xFFFFFFF0u);"),
    Mutation("bfloat16 TwoSum error term dropped", COMMON,
             "  two_sum(e, lo, u, e_u);", "  two_sum(0.0, lo, u, e_u);"),
    Mutation("bfloat16: the float32 sum rounded alone (twice: float32, then bfloat16)", COMMON,
             "  if ((u & 0xFFFFu) != 0x8000u || rest == 0.0 || nonfinite(rest)) {", "  if (true) {"),
    Mutation("bfloat16: a NaN rounded as a number", COMMON,
             "  return uintBitsToFloat(mix(rounded, quiet, greaterThan(u & 0x7FFFFFFFu, uvec4(0x7F800000u))));",
             "  return uintBitsToFloat(rounded);"),
    Mutation("bfloat16: tiny inputs not scaled (float32 subnormal products)", COMMON,
             "  bool tiny = max(abs(a), abs(c)) < uintBitsToFloat(0x21800000u);  // 2^-60", "  bool tiny = false;"),
    Mutation("bfloat16 pairs widened from swapped halves", COMMON,
             "vec2 raw_to_vec2(uint r) { return uintBitsToFloat(uvec2(r << 16, r & 0xFFFF0000u)); }",
             "vec2 raw_to_vec2(uint r) { return uintBitsToFloat(uvec2(r & 0xFFFF0000u, r << 16)); }"),
    Mutation("bfloat16 images as rgba16f", "vkrope/runtime/engine.py",
             "BFLOAT16: (vk.VK_FORMAT_R16G16B16A16_UINT,", "BFLOAT16: (vk.VK_FORMAT_R16G16B16A16_SFLOAT,"),
    Mutation("a 16-bit resident table accepted with x of another dtype", "vkrope/arguments.py",
             "    if is_16bit(t.dtype) and t.dtype != x.dtype:", "    if False:"),
    Mutation("a row block too wide for its staging not split again", "vkrope/runtime/execute.py",
             "            if limit <= 64 << 10:\n                raise", "            if True:\n                raise"),
    Mutation("a block of a block starts at row 0 of the call", "vkrope/kernels/table.py",
             "row_offset=req.row_offset + r0)", "row_offset=r0)"),
    # --- the decode step (#23)
    Mutation("decode step: every head written to head 0's cache row", "glsl/rope_cache.glsl",
             "uint row = uint(tok.y) + h * p.head_stride;", "uint row = uint(tok.y);"),
    Mutation("decode step: Gemma's 1 + w read as w", "glsl/rope_cache.glsl",
             "xj *= scale * (weights[w0 + j] + uintBitsToFloat(p.weight_add));", "xj *= scale * weights[w0 + j];"),
    Mutation("decode step: k's norm weights are q's", "glsl/rope_cache.glsl",
             "      w0 = role == ROLE_Q ? 0u : p.head_dim;", "      w0 = 0u;"),
    Mutation("decode step: k's norm weights are q's (whole texels)", "glsl/rope_cache.glsl",
             "  uint w0 = role == ROLE_Q ? 0u : p.head_dim >> 2;", "  uint w0 = 0u;"),
    Mutation("decode step: a 16-bit cache value truncated", COMMON,
             "#define to_c_scalar(v) CSCALAR(floatBitsToUint(round_to_bf16(vec4(v, 0.0, 0.0, 0.0)).x) >> 16)",
             "#define to_c_scalar(v) CSCALAR(floatBitsToUint(v) >> 16)"),
    Mutation("decode step: a slot named twice accepted", "vkrope/ops/decode.py",
             "    if np.unique(used).size != used.size:", "    if False:"),
    Mutation("decode step: positions past the cache accepted", "vkrope/ops/decode.py",
             "        if hi >= s_max:", "        if False:"),
    Mutation("decode step: every row block's q into batch item 0", "vkrope/kernels/cache.py",
             'blocks.append((sub, {"q_out": outs["q_out"][bi:bi + 1, :, s0:s1]', 'blocks.append((sub, {"q_out": outs["q_out"][0:1, :, s0:s1]'),
    Mutation("decode step: cache slices not aligned", "vkrope/kernels/cache.py",
             "    step = math.lcm(align, row_bytes) // row_bytes  # cache rows per aligned start",
             "    step = 1  # cache rows per aligned start"),
    Mutation("decode step: a whole-texel rotate-half partner on the wrong side", "glsl/rope_cache.glsl",
             "  uint pv = first ? v0 + p.rot_half : v0 - p.rot_half;", "  uint pv = first ? v0 - p.rot_half : v0 + p.rot_half;"),
    Mutation("decode step: the one dispatch's v rows read as k", "glsl/rope_cache.glsl",
             "      role = ROLE_V;\n      r -= p.q_rows + p.k_rows;", "      role = ROLE_K;\n      r -= p.q_rows + p.k_rows;"),
    Mutation("decode step: a row block's per-token tables not rebased", "vkrope/kernels/cache.py",
             "                tokens[:, 0] -= t0\n", ""),
    # --- recordings a decode loop replays (#19)
    Mutation("decode-sized numpy tables bound as windows (per-call rows in the key)", "vkrope/runtime/fit.py",
             "    if rows_from_data and tokens <= PER_TOKEN_ROWS", "    if False and tokens <= PER_TOKEN_ROWS"),
    Mutation("resident tables bound as windows (per-call rows in the key)", "vkrope/runtime/fit.py",
             "        if resident_rows * row_bytes <= budget:", "        if False:"),
    Mutation("a hung device destroyed without a second wait", "vkrope/owner.py",
             "                self._rt.stream.drain(max(1.0, seconds or 0.0))", "                pass"),
    # --- a model's RoPE from its config (#20)
    Mutation("longrope switches at max + 1 >= original instead of >", ROPE_TYPES,
             "    return bool(seq_len and seq_len > r.orig)", "    return bool(seq_len and seq_len >= r.orig)"),
    Mutation("longrope's default attention factor without the square root", ROPE_TYPES,
             "return math.sqrt(1 + math.log(f) / math.log(r.orig))", "return 1 + math.log(f) / math.log(r.orig)"),
    Mutation("yarn's attention factor ignores mscale_all_dim", ROPE_TYPES,
             "return float(g(f, ms) / g(f, msa))", "return float(g(f, ms))"),
    Mutation("yarn's truncate read as always true", ROPE_TYPES,
             "truncate=bool(p(\"truncate\", True))", "truncate=True"),
    Mutation("llama3's middle band not smoothed", ROPE_TYPES,
             "    return np.where(medium, smoothed, llama)", "    return llama"),
    Mutation("llama3's bands compared in float64 instead of float32", ROPE_TYPES,
             "    llama = np.where(wavelen > t(low_wl), inv / t(factor), inv)",
             "    llama = np.where(wavelen.astype(np.float64) > low_wl, inv / t(factor), inv)",
             "no config's wavelength falls between a band edge in float32 and in float64"),
    Mutation("llama3's smoothing in float64, rounded once", ROPE_TYPES,
             "    smoothed = (t(1) - smooth) * llama / t(factor) + smooth * llama",
             "    s64, l64 = smooth.astype(np.float64), llama.astype(np.float64)\n"
             "    smoothed = ((1 - s64) * l64 / factor + s64 * l64).astype(t)"),
    Mutation("a deepseek2 GGUF read with NeoX pairs", GGUF,
             "pairs == \"imrope\", pairs == \"norm\",", "pairs == \"imrope\", pairs == \"norm\" and arch != \"deepseek2\","),
    Mutation("a ModelRope takes heads of any head dim", "vkrope/ops/__init__.py",
             "    if head_dim != spec.head_dim:", "    if False:"),
    Mutation("out_q on k's memory accepted", "vkrope/ops/transformers.py",
             "        if _same_memory(a, b2):", "        if False:"),
    Mutation("a ModelRope's pairs not checked against the op's", "vkrope/ops/__init__.py",
             "    if interleaved is not None and spec.interleaved != interleaved:", "    if False:"),
    Mutation("dynamic's base grows at the length instead of past it", ROPE_TYPES,
             "    if seq_len is None or seq_len <= mpe:", "    if seq_len is None or seq_len < mpe:",
             "equivalent: at seq_len == max_position_embeddings the formula's ratio is exactly 1 (in float32 too), "
             "the base itself"),
    Mutation("dynamic's power taken with a float32 exponent", ROPE_TYPES,
             "powered = np.float32(math.pow(float(ratio), dim / (dim - 2)))",
             "powered = np.float32(math.pow(float(ratio), float(np.float32(dim / (dim - 2)))))"),
    Mutation("partial_rotary_factor dropped", CONFIGS,
             "        return _key_int(cfg, rule, \"config: \"), 1.0\n    return int(head_dim * partial), partial",
             "        return _key_int(cfg, rule, \"config: \"), 1.0\n    return head_dim, partial"),
    Mutation("Phi-3's top-level original_max_position_embeddings not read", CONFIGS,
             "    orig_src = cfg if \"original_max_position_embeddings\" in cfg else rope",
             "    orig_src = rope"),
    Mutation("Qwen3-VL's interleaved sections read as chunks", ROPE,
             "        if self.mrope_interleaved:  # Qwen3-VL", "        if False:  # Qwen3-VL"),
    Mutation("Gemma 3's local layers on the global base", CONFIGS,
             "        out[\"sliding_attention\"][\"rope_theta\"] = cfg[\"rope_local_base_freq\"]",
             "        out[\"sliding_attention\"][\"rope_theta\"] = out[\"full_attention\"][\"rope_theta\"]"),
    Mutation("a layer type's per-layer key not applied without a layer list (Gemma 4's bare config)", CONFIGS,
             "        return {**cfg, **_type_overrides(cfg, e, layer_type)}", "        return cfg"),
    Mutation("hf_layers reuses a layer's RoPE across per-layer overrides", CONFIGS,
             "               json.dumps(over.get(i, {}), sort_keys=True, default=str))", "               '')"),
    Mutation("like= reads the outer dict of a nested config", CONFIGS,
             "    if like is not None and inner is cfg and isinstance(cfg.get(\"text_config\"), dict):",
             "    if False:"),
    Mutation("a missing MLA head key falls back to hidden // heads", CONFIGS,
             "    if key not in (None, \"head_dim\"):", "    if False:"),

    Mutation("rope_interleave ignored (MLA's pairs from the table only)", CONFIGS,
             "    if \"rope_interleave\" in e.get(\"defaults\", {}):", "    if False:"),
    Mutation("the table's pairs not read (every model rotate-half)", CONFIGS,
             "    return e[\"pairs\"] != \"rotate_half\"", "    return False"),
    Mutation("Cohere's cos / sin layout as cat(freqs, freqs)", ROPE,
             "        if self.cos_layout == \"repeated\":", "        if False:"),
    Mutation("the table's head-dim key not read (hidden // heads)", CONFIGS,
             "    if key and cfg.get(key) is not None:", "    if False:"),
    Mutation("MLA's folded factor applied again", CONFIGS,
             "    if rule == \"whole\" or (rule == \"whole_default\" and kind == \"default\"):",
             "    if rule == \"whole_default\" and kind == \"default\":"),
    Mutation("the text config path not followed", CONFIGS,
             "    for key in e.get(\"text_config\", []):", "    for key in []:"),
    Mutation("the class defaults not filled in", CONFIGS,
             "        if key not in (\"rope_parameters\", \"rope_theta\") and key not in merged:",
             "        if False:"),
    Mutation("per-layer overrides (Gemma 4's global_head_dim) not applied", CONFIGS,
             "    return {**cfg, **over.get(int(layer), {})}", "    return cfg"),
    Mutation("a NoPE layer given a RoPE", CONFIGS,
             "        if rotates is not None and not rotates[layer]:\n            return None",
             "        if False:\n            return None"),
    Mutation("no_rope_layers read inverted", "vkrope/models/table.py",
             "        return [bool(v) for v in values]", "        return [not v for v in values]"),
    Mutation("the sliding-window condition of NoPE layers ignored", "vkrope/models/table.py",
             "    if cond and cfg.get(cond[\"key\"]) is None:", "    if False:"),
    Mutation("a type whose code could not be probed said to have no RoPE", "vkrope/models/table.py",
             "    if e.get(\"rope\") is False:", "    if not e.get(\"rope\"):"),
    Mutation("a refused model type read anyway", "vkrope/models/table.py",
             "    if e.get(\"status\") != \"ok\":", "    if False:"),
    Mutation("a model type not in the table read as Llama", "vkrope/models/table.py",
             "    elif model_type not in models:", "    elif model_type not in models and False:"),
    Mutation("llama_4_scaling_beta read for a type whose attention never applies it", CONFIGS,
             "                or (key == \"llama_4_scaling_beta\" and not scales_q):", "                or False:"),
    Mutation("llama_4_scaling_beta's floor dropped", ROPE,
             "        ratio = np.floor(p.astype(np.float32) / np.float32(self.orig))",
             "        ratio = p.astype(np.float32) / np.float32(self.orig)"),
    Mutation("GGUF's sliding layers keep the full layers' rotary dim", GGUF,
             "    kv = dict(kv)\n    for key in (\"rope.dimension_count\", \"attention.key_length\"):",
             "    kv = dict(kv)\n    for key in ():"),
    Mutation("a config's rope_theta read a tenth too big", CONFIGS,
             "    if \"rope_theta\" in rope:\n        return _key_number(rope, \"rope_theta\", where)",
             "    if \"rope_theta\" in rope:\n        return 1.1 * _key_number(rope, \"rope_theta\", where)"),
    Mutation("the default rope type's whole-head rule ignored (Llama with a partial factor)", CONFIGS,
             "    if rule == \"whole\" or (rule == \"whole_default\" and kind == \"default\"):",
             "    if rule == \"whole\":"),
    Mutation("the class's flat rope_parameters default not used (GPT-OSS's yarn)", CONFIGS,
             "    elif not given and isinstance(dr, dict) and dr:", "    elif False:"),
    Mutation("a BERT GGUF given a RoPE", GGUF,
             "    if entry[\"pairs\"] == \"none\" or entry[\"rotates\"] == \"False\":",
             "    if entry[\"pairs\"] == \"none\":"),
    Mutation("GGUF layers without RoPE not listed", GGUF,
             "    nope = None if lp.rotates is None else tuple(i for i, r in enumerate(lp.rotates) if not r)",
             "    nope = ()"),
    Mutation("a GGUF NoPE layer given the RoPE", GGUF,
             "        if not lp.rotates[layer]:\n            return None", "        if False:\n            return None"),
    Mutation("GGUF sliding layers take 10000 for a missing freq_base_swa", GGUF_LAYERS,
             "                _run(hp, kind, args, kv)", "                if \"rope_freq_base_train\" not in args:\n"
             "                    _run(hp, kind, args, kv)"),
    Mutation("llama.cpp's load_swa_pattern ignores the file's period", GGUF_LAYERS,
             "                n_pattern = given", "                pass"),
    Mutation("an unknown statement of load_arch_hparams is skipped", GGUF_LAYERS,
             "        raise Unknown(f\"a statement vkrope does not run: {args[0] if args else kind}\")",
             "        pass"),
    Mutation("or over three values: an unknown operand ignored", GGUF_LAYERS,
             "        if why is not None:\n            raise why", "        if False:\n            raise why"),
    Mutation("the file's sliding_window_pattern array ignored", GGUF_LAYERS,
             "            if isinstance(given, (list, tuple)):", "            if False:"),
    Mutation("a GGUF's M-RoPE sections read when only the first is set", GGUF_LAYERS,
             "        return bool(hp.evaluate(\"use_mrope()\"))", "        return any(sections[:3])"),
    Mutation("the exact angle's host angles as the float64 product", FREQS,
             "            return exact_angles(np.asarray(positions).reshape(-1), self.quarter_turns)",
             "            return np.outer(np.asarray(positions, np.float64).reshape(-1), self.inv_freq64)"),
    Mutation("Phi-3.5-MoE's long mscale never taken", ROPE,
             "            return float(self.param(\"long_mscale\" if is_long(self, seq_len) else \"short_mscale\"))",
             "            return float(self.param(\"short_mscale\"))"),
    Mutation("GGUF's yarn_log_multiplier taken as an attention factor", GGUF,
             "            params[\"mscale\"] = params[\"mscale_all_dim\"] = float(log_mul) / 0.1",
             "            params[\"attention_factor\"] = 1.0 + float(log_mul) * math.log(params[\"factor\"])"),
    Mutation("M-RoPE pairs all read the temporal axis in the kernel", LOWERING,
             "np.asarray(axes.pair_axis, np.uint32),",
             "np.asarray(axes.pair_axis if isinstance(spec, NdFreqs) else np.zeros(n), np.uint32),"),
    Mutation("apply_rotary_pos_emb's k rotated with q's head count", "vkrope/ops/transformers.py",
             "        h = int(x.shape[1])\n", "        h = int(qx.shape[1])\n"),
    # --- public operations bound from their front ends (ops/call.py)
    Mutation("a bound operation's hints say it returns the Call", "vkrope/ops/call.py",
             "    if typing.get_origin(result) is Call:\n", "    if False:\n"),
    Mutation("a bound method's signature without self", "vkrope/ops/call.py",
             "    if method:\n        params.insert(0,", "    if False:\n        params.insert(0,"),
    Mutation("a module function no longer runs again on a new default device", "vkrope/api.py",
             "            if attempt or not dev.closed:", "            if True:"),
    # --- the context shift (shift_cache)
    Mutation("shift: the old angle not undone (rotated by the new one alone)", SHIFT_GLSL,
             "0.0, w_new - w_old, 0u, 1.0);", "0.0, w_new, 0u, 1.0);"),
    Mutation("shift: the float32 angles' difference without its rounding error", SHIFT_GLSL,
             "trig_add128(trig_quarter_turns128(hi), trig_quarter_turns128(lo))",
             "trig_add128(trig_quarter_turns128(hi), uvec4(0u))"),
    Mutation("shift: a rotate-half partner's sign swapped", SHIFT_GLSL,
             "y = diff_of_products(xj, cs.x, first ? partner : -partner, cs.y);",
             "y = diff_of_products(xj, cs.x, first ? -partner : partner, cs.y);"),
    Mutation("shift: keys written back to the rows they came from", SHIFT_GLSL,
             "uint dst = (uint(tok.y) + h * p.head_stride)", "uint dst = (uint(tok.x) + h * p.head_stride)"),
    Mutation("shift: every head read from head 0's row", SHIFT_GLSL,
             "uint src = (uint(tok.x) + h * p.head_stride)", "uint src = uint(tok.x)"),
    Mutation("shift: values not moved", "vkrope/kernels/shift.py",
             "head_stride=self.head_stride, move_v=int(self.move_v),", "head_stride=self.head_stride, move_v=0,"),
    Mutation("shift: the scatter launch dropped", "vkrope/kernels/shift.py",
             "for role in (ROLE_GATHER, ROLE_SCATTER):", "for role in (ROLE_GATHER,):"),
    Mutation("shift: a slice's scatter before the other slices' gathers", "vkrope/kernels/shift.py",
             "        for role in (ROLE_GATHER, ROLE_SCATTER):\n            for r0, r1 in self.slices:",
             "        for r0, r1 in self.slices:\n            for role in (ROLE_GATHER, ROLE_SCATTER):"),
    Mutation("shift: a launch's rows not kept to its slice", SHIFT_GLSL,
             "  if (src < p.cache_base || src >= p.cache_end) {", "  if (src < p.cache_base) {",
             why_survives="equivalent in what a test sees: the slice whose rows they are gathers them again "
                          "later in the same order; the reads past the binding's range are undefined behaviour, "
                          "which only GPU-assisted validation (not run) would flag"),
    Mutation("shift: a row named twice accepted", "vkrope/ops/shift.py",
             "        if twice.any():\n            raise", "        if False:\n            raise"),
    Mutation("shift: a skipped slot shifted anyway", "vkrope/ops/shift.py",
             "    keep = sl >= 0\n", "    keep = sl >= -1\n"),
    # --- the hot path (#32): laid-out submissions and plans kept by hand-written keys
    Mutation("hot path: a DeviceArray's resource not in the layout key", "vkrope/runtime/execute.py",
             "tensors.append((t.name, v.resource.serial if v.resource is not None else None))",
             "tensors.append((t.name,))"),
    Mutation("hot path: a numpy tensor's shape not in the layout key", "vkrope/runtime/execute.py",
             "tensors.append((t.name, v.shape, v.dtype.str) if not t.table else None)",
             "tensors.append((t.name, v.dtype.str) if not t.table else None)",
             why_survives="each operator's plan holds its tensors' shapes (rows, tokens, heads, channels), and "
                          "the plan is in the key; the shapes stay as the guard of an operator whose plan does not"),
    Mutation("hot path: the plan not in the layout key", "vkrope/runtime/execute.py",
             "        parts.append((job.plan, tuple(tensors), segs))", "        parts.append((tuple(tensors), segs))"),
    Mutation("hot path: the tables' sizes not in the layout key", "vkrope/runtime/execute.py",
             "        parts.append((job.plan, tuple(tensors), segs))", "        parts.append((job.plan, tuple(tensors)))",
             why_survives="every operator's tables follow from its plan and shapes (segments, rows, the spec's "
                          "columns), all in the key; the sizes stay as the guard of an operator whose do not"),
    Mutation("hot path: layouts kept past the recordings they bind", "vkrope/runtime/engine.py",
             "        self.prepared.clear()\n", ""),
    Mutation("hot path: tables not filled again", "vkrope/runtime/execute.py",
             "                    host.view(a.dtype, a.size, offset)[:] = a.reshape(-1)", "                    pass"),
    Mutation("decode plan memoised with table windows that follow the positions", "vkrope/kernels/cache.py",
             "    if _windowed(req, limits)[1]:\n        return None", "    if False:\n        return None"),
    Mutation("decode plan key without the scales", "vkrope/kernels/cache.py",
             "int(req.cos.shape[0]), req.k_scale, req.v_scale)", "int(req.cos.shape[0]))"),
    Mutation("decode plan key without the pairing", "vkrope/kernels/cache.py",
             "req.rot_half, req.head_stride, req.interleaved,", "req.rot_half, req.head_stride,"),
    Mutation("decode plan key without the rotary width", "vkrope/kernels/cache.py",
             "req.rot_half, req.head_stride, req.interleaved,", "req.head_stride, req.interleaved,"),
    Mutation("decode plan key without the head stride (paged or not)", "vkrope/kernels/cache.py",
             "req.rot_half, req.head_stride, req.interleaved,", "req.rot_half, req.interleaved,"),
    Mutation("decode plan key without the norm", "vkrope/kernels/cache.py",
             "            req.weights is not None, req.eps, req.weight_add,", "            req.eps, req.weight_add,"),
    Mutation("decode plan key without eps", "vkrope/kernels/cache.py",
             "            req.weights is not None, req.eps, req.weight_add,", "            req.weights is not None, req.weight_add,"),
    Mutation("decode plan key without the (1 + w) form", "vkrope/kernels/cache.py",
             "            req.weights is not None, req.eps, req.weight_add,", "            req.weights is not None, req.eps,"),
    Mutation("decode plan key without the spec", "vkrope/kernels/cache.py",
             "req.cos if req.generated else int(req.cos.shape[0])", "req.generated"),
    Mutation("decode plan key without the cache dtype", "vkrope/kernels/cache.py",
             "req.dtype, req.k_cache.dtype,", "req.dtype,"),
    Mutation("decode plan key without the q dtype", "vkrope/kernels/cache.py",
             "req.dtype, req.k_cache.dtype,", "req.k_cache.dtype,"),
    Mutation("decode plan key without the cache size", "vkrope/kernels/cache.py",
             "            int(req.k_cache.size), len(req.tokens),", "            len(req.tokens),"),
    Mutation("decode plan key without k's shape", "vkrope/kernels/cache.py",
             "(KERNEL, req.shape, tuple(req.k.shape),", "(KERNEL, req.shape,"),
    Mutation("decode plan key without the gathered flag", "vkrope/kernels/cache.py",
             "req.eps, req.weight_add, req.gathered,", "req.eps, req.weight_add,"),
    # --- a call's structure kept for arguments that repeat, whole calls replayed (#32: ops/repeat.py,
    # runtime/array.py's weak references, execute.keep_call / replay, Device._operate)
    Mutation("kept entries: a dead object's id taken for a new one", "vkrope/runtime/array.py",
             '        if a is None or (isinstance(a, DeviceArray) and a.state != "live"):',
             '        if a is not None and isinstance(a, DeviceArray) and a.state != "live":',
             why_survives="an entry is dropped by its weak references' callback the moment one of its objects "
                          "dies, before the id can come back (CPython); the check stays for an entry that would "
                          "outlive its callback"),
    Mutation("kept entries: a released DeviceArray's entry used", "vkrope/runtime/array.py",
             '        if a is None or (isinstance(a, DeviceArray) and a.state != "live"):',
             "        if a is None:"),
    Mutation("kept structures: entries kept after their objects die", "vkrope/ops/repeat.py",
             "weak_refs(objects, lambda: self._kept.pop(key, None))", "weak_refs(objects, lambda: None)"),
    Mutation("kept calls: entries kept after their objects die", "vkrope/runtime/execute.py",
             "weak_refs(objects, lambda: rt.kept_calls.pop(key, None))", "weak_refs(objects, lambda: None)"),
    Mutation("kept calls: the operation not in the key", "vkrope/device.py",
             "    return None if key is None else (front_end, key)", '    return None if key is None else ("op", key)'),
    Mutation("replay: a call replayed after its layout was dropped", "vkrope/runtime/execute.py",
             "    prepared = rt.prepared.get(kept.hot)\n    if prepared is None:\n        return False, None",
             "    prepared = rt.prepared.get(kept.hot) or next(iter(rt.prepared.values()), None)\n"
             "    if prepared is None:\n        return False, None"),
    Mutation("replay: a call that made its own result kept", "vkrope/runtime/execute.py",
             "    which = next((i for i, o in enumerate(objects) if o is result), None)",
             "    which = next((i for i, o in enumerate(objects) if isinstance(o, DeviceArray)), None)"),
    Mutation("replay: a call with an output made for it kept", "vkrope/runtime/execute.py",
             "        if t.value is None or isinstance(t.value, np.ndarray):\n            return",
             "        if False:\n            return",
             why_survives="every operator's only output made for a call is its result, and a call whose result "
                          "is not one of its arguments is never kept (the check before): this guards an operator "
                          "with a second output"),
    Mutation("replay: the kept call not checked after an argument was released meanwhile", "vkrope/runtime/execute.py",
             "    if not all_usable(refs):\n        return  # (another thread",
             "    if False:\n        return  # (another thread"),
    Mutation("kept structures: -0.0 taken for 0.0", "vkrope/ops/repeat.py",
             "parts.append((type(a), a) if a or not isinstance(a, (float, np.floating)) else (type(a), a, repr(a)))",
             "parts.append((type(a), a))"),
    Mutation("kept structures: values kept without their type", "vkrope/ops/repeat.py",
             "parts.append((type(a), a) if a or not isinstance(a, (float, np.floating)) else (type(a), a, repr(a)))",
             "parts.append(a)"),
    Mutation("kept structures: numpy arrays kept by identity", "vkrope/ops/repeat.py",
             "_OBJECTS = (DeviceArray, FrequencySpec, ModelRope)",
             "_OBJECTS = (DeviceArray, FrequencySpec, ModelRope, np.ndarray)"),
    Mutation("kept structures: apply's resident freqs held by the structure", "vkrope/ops/sam2.py",
             "pairs=None if pairs is freqs else pairs,", "pairs=pairs,"),
    Mutation("kept structures: a ModelRope resolved once, without positions", "vkrope/ops/decode.py",
             '        return "resolve", None, 0, 0, False\n',
             '        freqs = resolve("freqs", freqs, None, None, d)\n'),
    Mutation("decode step: one token per sequence taken for every step", "vkrope/ops/decode.py",
             "        if s > 1:  # (one token per sequence", "        if False:  # (one token per sequence"),
    Mutation("one job: its declaration not checked", "vkrope/device.py",
             "                self._check_request(jobs[0].req, jobs[0].where)\n", ""),
    Mutation("a tensor the kernel updates taken as only written", "vkrope/runtime/operator.py",
             "        self.reads: bool = access in (READ, UPDATE)", "        self.reads: bool = access == READ"),
    # --- fp8 caches
    Mutation("fp8: a value near a midpoint rounded from float32 (no exact side)", FP8_GLSL,
             "    side = sign(exact_residual(sg * a, b, sg * c, d, mid, s, e));", "    side = side;"),
    Mutation("fp8: a residual below float32 read as a tie", FP8_GLSL,
             "    side = sign(exact_residual(sg * a, b, sg * c, d, mid, s, e));",
             "    side = sign(exact_residual(sg * a, b, sg * c, d, mid, s, e) * pow2(e));"),
    Mutation("fp8: products that overflow left to float32 (NaN)", FP8_GLSL,
             "  if (nonfinite(r) || err > abs(r) * uintBitsToFloat(0x39800000u)) {",
             "  if (err > abs(r) * uintBitsToFloat(0x39800000u)) {"),
    Mutation("fp8: a rotation below float32 made +0", FP8_GLSL,
             "      return scaled < 0.0 ? uintBitsToFloat(0x80000000u) : 0.0;", "      return 0.0;"),
    Mutation("fp8: cancelling products left to float32 (cells away, or the sign of a zero wrong)", FP8_GLSL,
             "  if (nonfinite(r) || err > abs(r) * uintBitsToFloat(0x39800000u)) {", "  if (nonfinite(r)) {"),
    Mutation("fp8: float32's error bound taken as 2^-24", FP8_GLSL,
             "  float err = uintBitsToFloat(0x35000000u) *", "  float err = uintBitsToFloat(0x33800000u) *",
             why_survives="lavapipe rounds to nearest: three roundings stay within 2^-24 * 1.5 of the products, "
                          "and a case between that and 2^-23 is a one-in-millions draw; the bound is sized for "
                          "drivers that round toward zero"),
    Mutation("fp8: the midpoint's own rounding left out of the bound", FP8_GLSL,
             "  if (abs(away) <= err + uintBitsToFloat(0x35000000u) * t) {", "  if (abs(away) <= err) {",
             why_survives="err is at least 2^-21 of |r|, eight times t's own rounding (2^-24 of t) wherever "
                          "|r| and t are close enough to ask: the term is margin, which no input can cross"),
    Mutation("fp8: partial products unscaled (tiny values underflow)", FP8_GLSL,
             "  float k = pow2(-e);\n", "  float k = 1.0;\n  e = 0;\n"),
    Mutation("fp8: no absolute floor under float32's error bound", FP8_GLSL,
             " + uintBitsToFloat(0x01800000u);  // 2^-21, 2^-124", ";  // 2^-21, 2^-124"),
    Mutation("fp8: the distilled sum stops when it merely dominates", FP8_GLSL,
             "    if (rest <= abs(t[9]) * uintBitsToFloat(0x34000000u)) {", "    if (rest < abs(t[9]) * 0.5) {"),
    Mutation("fp8: e5m2's infinity passed through a shift as a number", FP8_GLSL,
             "  if (a > FP8_MAX) {  // an infinity", "  if (false) {  // an infinity"),
    Mutation("fp8: a slice's start ignored (value by value)", "glsl/rope_cache.glsl",
             "    k_cache_values[g >> 2] = fp8_pack4(y);", "    k_cache_values[(g + p.cache_base) >> 2] = fp8_pack4(y);"),
    Mutation("fp8: one TwoSum pass decides the sign", FP8_GLSL, "pass < 40; ++pass", "pass < 1; ++pass"),
    Mutation("fp8: 13-bit halves (their products inexact)", FP8_GLSL, "& 0xFFFFF000u", "& 0xFFFFE000u"),
    Mutation("fp8: ties away from zero", FP8_GLSL,
             "(side == 0.0 && (uint(whole) & 1u) != 0u)", "(side == 0.0)"),
    Mutation("fp8: no saturation (past max: NaN in e4m3fn, inf in e5m2)", FP8_GLSL,
             "  float q = min(n * u, FP8_MAX);", "  float q = n * u;"),
    Mutation("fp8: subnormals on the normal grid", FP8_GLSL,
             "  int ey = max(exponent_of(ay), FP8_EMIN);", "  int ey = exponent_of(ay);"),
    Mutation("fp8: e5m2's infinity read as NaN", FP8_GLSL,
             "(m == 0u ? 0x7F800000u : 0x7FC00000u)", "0x7FC00000u"),
    Mutation("fp8: words' bytes in the other order", "glsl/common.glsl",
             "(8u * ((i) & 3u))", "(8u * (3u - ((i) & 3u)))"),
    Mutation("fp8: v not divided by its scale", "glsl/rope_cache.glsl",
             "uintBitsToFloat(r == ROLE_K ? p.k_scale : p.v_scale)", "uintBitsToFloat(p.k_scale)"),
    Mutation("fp8: a shift's values not moved", SHIFT_GLSL,
             "    v_tmp_values[(tmp + v0) >> 2] = v_cache_values[(src + v0) >> 2];",
             "    v_tmp_values[(tmp + v0) >> 2] = 0u;"),
    Mutation("fp8: a scale given with a float cache accepted", "vkrope/ops/decode.py",
             "    if not is_fp8(cache.dtype):\n        raise", "    if False:\n        raise"),
    Mutation("fp8: D not a multiple of 4 accepted", "vkrope/ops/decode.py",
             "    if is_fp8(c.dtype) and int(c.shape[-1]) % 4:", "    if False:"),
    # --- vkrope config --plot
    Mutation("the unscaled frequencies over the head dim, not the rotary dim", "vkrope/models/chart.py",
             "np.arange(0, rope.rotary_dim, 2, dtype=np.float64) / rope.rotary_dim)",
             "np.arange(0, rope.rotary_dim, 2, dtype=np.float64) / rope.head_dim)"),
    # --- remote-code configs through llama.cpp's converter
    Mutation("the converter's Q / K permutation not undone (MiniCPM read interleaved)", CONVERT,
             "interleaved=rope.interleaved and rows == \"none\"", "interleaved=rope.interleaved"),
    Mutation("a permuted head's pairs taken as rotate-half under partial rotary", CONVERT,
             "                            or rope.rotary_dim != rope.head_dim):",
             "                            or False):"),
    Mutation("a rope type the converter drops read as llama.cpp runs it", CONVERT,
             "    if declared not in (None, \"default\", \"none\") and", "    if False and"),
    Mutation("keys the converter does not use accepted without consent", CONVERT,
             "    if unused and not unread_ok:", "    if False:"),
    Mutation("a key looked up taken as used", CONVERT,
             "                if _same(run(changed, hf_arch)[:3], result):", "                if False:"),
    Mutation("True counted as off", CONVERT, "    return not (v is None or v is False or", "    return not (v is None or v in (False, True) or"),
    Mutation("an enum written as the member, not its value", CONVERT,
             "value.value if spec.get(\"enum\") and isinstance(value, EnumValue) else value", "value"),
    Mutation("super() starts at the defining class itself", CONVERT,
             "order[order.index(obj.owner) + 1:]", "order[order.index(obj.owner):]"),
    Mutation("or / and short-circuit inverted", PYCONV,
             "if self.truth(v) == isinstance(n.op, ast.Or):", "if self.truth(v) != isinstance(n.op, ast.Or):"),
    Mutation("a parameter's default taken as None", PYCONV,
             "                local[name] = self.expr(defaults[name], {})", "                local[name] = None"),
    Mutation("chained comparisons compare with the first operand", PYCONV,
             "                return False\n            left = right", "                return False"),
    Mutation("except catches the interpreter's Unknown", PYCONV,
             "        except Raised as exc:\n            for h in s.handlers:",
             "        except (Raised, Unknown) as exc:\n            for h in s.handlers:"),
    Mutation("no limit on a config's arithmetic", PYCONV, "    if _too_large(fn, args):", "    if False:"),
    Mutation("keys looked up with `in` not noted", PYCONV,
             "                if isinstance(right, dict):\n                    self.read(left)",
             "                if isinstance(right, dict):\n                    pass"),
    Mutation("comprehension turns not counted", PYCONV,
             "                self.charge()\n                self.assign(g.target, item, scope)",
             "                self.assign(g.target, item, scope)"),
    Mutation("while's else never run", PYCONV, "        self.block(s.orelse, local)\n\n    def _raise",
             "\n    def _raise"),
    Mutation("except LookupError misses KeyError", PYCONV, "        return issubclass(k, h)", "        return k is h"),
    Mutation("lists += builds a new list", PYCONV, "ops = {ast.Add: operator.iadd,", "ops = {ast.Add: operator.add,"),
    Mutation("a class's plain function bound to the class", CONVERT,
             "if kind == \"staticmethod\" or (kind is None and isinstance(obj, ClassRef)):",
             "if kind == \"staticmethod\":"),
    Mutation("the config not copied for the converter", PYCONV,
             "        return {k: plain(v, depth + 1) for k, v in value.items()}",
             "        return value if depth else {k: v for k, v in value.items()}"),
]


def apply_mutation(tree: Path, m: Mutation) -> bool:
    path = tree / m.path
    text = path.read_text()
    if text.count(m.old) != 1:
        return False
    path.write_text(text.replace(m.old, m.new))
    return True


def run_one(m: Mutation, tests: list[str], python: str) -> tuple[str, float, str]:
    """('killed' | 'survived' | 'stale', seconds, first failing test)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vkrope-mutant-") as tmp:
        tree = Path(tmp) / "repo"
        shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", ".hypothesis",
                                                                   "bench-out", ".offline", "*.egg-info"))
        if not apply_mutation(tree, m):
            return "stale", time.perf_counter() - t0, ""
        if m.path.startswith("glsl/"):
            res = subprocess.run([python, "scripts/compile_shaders.py"], cwd=tree, capture_output=True, text=True)
            if res.returncode:
                return "killed", time.perf_counter() - t0, "shader does not compile"
        env = dict(os.environ, VKROPE_VALIDATION="1", PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")
        tests = [t for t in tests if (tree / t.split("::")[0]).exists()]
        cmd = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *tests]
        res = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
        first = next((line.split(" ")[1] for line in res.stdout.splitlines() if line.startswith("FAILED ")), "")
        if not first and res.returncode:
            first = (res.stdout.strip().splitlines() or ["?"])[-1]
        return ("killed" if res.returncode else "survived"), time.perf_counter() - t0, first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--only", nargs="+", metavar="TEXT", help="run mutations whose name contains any TEXT")
    parser.add_argument("--paths", nargs="+", metavar="FILE", help="run mutations of these files (e.g. a change's)")
    parser.add_argument("--tests", nargs="+", default=TESTS, help="test files to run against each mutant")
    args = parser.parse_args()
    chosen = [m for m in MUTATIONS if (not args.only or any(t in m.name for t in args.only))
              and (not args.paths or m.path in args.paths)]
    if args.list:
        for m in chosen:
            print(f"{m.name}  ({m.path})")
        return 0
    python = sys.executable
    bad = 0
    print(f"{len(chosen)} mutations; tests: {' '.join(args.tests)}")
    for m in chosen:
        verdict, seconds, first = run_one(m, args.tests, python)
        note = ""
        if verdict == "survived":
            note = f"expected: {m.why_survives}" if m.why_survives else "UNEXPLAINED"
            bad += not m.why_survives
        elif verdict == "stale":
            note = "snippet not found: update the mutation list"
            bad += 1
        elif m.why_survives:
            note = "killed although listed as a survivor: drop its reason"
        print(f"{verdict:<8} {seconds:6.1f}s  {m.name}  {first}  {note}", flush=True)
    print(f"{bad} unexplained survivor(s) or stale mutation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Every public operator as data, for the tests that hold for all of them
(device and array lifecycle, resident arguments, ...): a new operator adds
one `OpCase` here and inherits those tests.

Each case makes small numpy arguments, names those that may be
DeviceArrays, calls the operator (on a `vkrope.Device` or through the
module-level function), and computes the expected result with the float64
oracles of tests/ (which share no code with vkrope)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import vkrope
from oracle import oracle
from oracle_cache import decode_step
from oracle_family import et_apply_rotary_emb, et_apply_rotary_emb_hf, onnx_rotary_embedding
import oracle_hf
from oracle_nd import nd_rope


@dataclass(frozen=True)
class OpCase:
    """One operator: `make(rng, big=False)` -> its arguments by name (numpy;
    `big`: its x of 4 MiB or more, which takes the zero-copy path);
    `resident` the names that may be DeviceArrays; `call(target, args)`
    runs it on a Device (or the vkrope module) and returns a tuple of
    results; `expect(args)` the float64 results, a tuple too."""

    name: str
    make: Callable[..., dict[str, Any]]
    resident: tuple[str, ...]
    call: Callable[[Any, dict[str, Any]], tuple]
    expect: Callable[[dict[str, Any]], tuple]
    labels: tuple[tuple[str, str], ...] = ()  # how errors name an argument, where not by its name (a regex)
    outs: tuple[tuple[str, str], ...] = ()  # an `out` argument (None in `make`) and the x it must be like
    moves_numpy: bool = True  # numpy tensors go through the runtime (False: only DeviceArrays, as caches)

    def with_out(self, args: dict[str, Any], name: str, value: Any, device: Any) -> dict[str, Any]:
        """`args` with `value` for argument `name`; an `out` there needs its
        x resident too (on `device`, which runs the call)."""
        args = {**args, name: value}
        x = dict(self.outs).get(name)
        if x is not None:
            args[x] = device.asarray(args[x])
        return args

    def __repr__(self) -> str:
        return self.name

    def label(self, name: str) -> str:
        """The regex an error message names argument `name` with."""
        return dict(self.labels).get(name, name)


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _unit_tables(rng: np.random.Generator, rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    a = rng.uniform(-np.pi, np.pi, (rows, width))
    return np.cos(a).astype(np.float32), np.sin(a).astype(np.float32)


def _apply_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    n, c = (2048, 256) if big else (6, 8)
    a = rng.uniform(-np.pi, np.pi, (n, c // 2))
    freqs = np.stack([np.cos(a), np.sin(a)], -1).reshape(n, c).astype(np.float32)
    return {"x": _f32(rng, 2, n, c), "freqs": freqs, "out": None}


def _onnx_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    h, s, d = (8, 512, 256) if big else (2, 6, 8)
    cos, sin = _unit_tables(rng, 2 * s + 4, d // 2)
    # (big: a prefill's contiguous positions; scattered ones over a resident
    # cache wider than one binding split into a dispatch per token or two)
    pos = (np.arange(s)[None, :] + 4) if big else rng.integers(0, 2 * s + 4, (1, s))
    return {"x": _f32(rng, 1, h, s, d), "cos_cache": cos, "sin_cache": sin, "position_ids": pos, "out": None}


def _llm_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    s, h, d = (512, 8, 256) if big else (6, 2, 8)
    cos, sin = _unit_tables(rng, s, d // 2)
    return {"xq": _f32(rng, 1, s, h, d), "xk": _f32(rng, 1, s, h // 2, d), "freqs_cos": cos, "freqs_sin": sin}


def _hf_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    s, h, d = (512, 8, 256) if big else (6, 2, 8)
    cos, sin = _unit_tables(rng, 2 * s + 4, d // 2)
    return {"xq": _f32(rng, 1, s, h, d), "xk": _f32(rng, 1, s, h // 2, d), "freqs_cos": np.concatenate([cos, cos], 1),
            "freqs_sin": np.concatenate([sin, sin], 1)}


def _many_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    args = _apply_args(rng, big)
    args["x2"] = _f32(rng, 3, *args["x"].shape[1:])
    args["out2"] = None
    return args


ND_AXES = (4, 6, 6)
ND_SPEC = vkrope.NdFreqs(ND_AXES, (10000.0, 256.0, 100.0))


def _nd_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    h, n, c = (8, 512, 256) if big else (2, 6, 20)
    ids = rng.uniform(-40, 40, (n, 3)).round(2)
    return {"x": _f32(rng, 1, h, n, c), "ids": ids, "out": None}


def _cache_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    hq, hk, s, d = (8, 4, 512, 256) if big else (4, 2, 3, 8)
    cos, sin = _unit_tables(rng, s + 8, d // 2)
    return {"q": _f32(rng, 1, hq, s, d), "k": _f32(rng, 1, hk, s, d), "v": _f32(rng, 1, hk, s, d),
            "k_cache": np.zeros((1, hk, s + 8, d), np.float32), "v_cache": np.zeros((1, hk, s + 8, d), np.float32),
            "cos": cos, "sin": sin, "position_ids": (np.arange(s) + 5)[None], "out": None}


def _cache_call(t: Any, a: dict[str, Any]) -> tuple:
    """The step on `t` (a Device or the module: the default device); numpy
    caches are uploaded there first; the results are q's and both caches'
    contents after the step."""
    dev = t if isinstance(t, vkrope.Device) else vkrope.default_device()
    kc, vc = (c if isinstance(c, vkrope.DeviceArray) else dev.asarray(c) for c in (a["k_cache"], a["v_cache"]))
    y = t.rope_and_cache(a["q"], a["k"], a["v"], kc, vc, (a["cos"], a["sin"]), a["position_ids"], out=a["out"])
    return y, kc.get(), vc.get()


def _cache_expect(a: dict[str, Any]) -> tuple:
    q, kc, vc, _ = decode_step(a["q"], a["k"], a["v"], a["k_cache"], a["v_cache"], a["cos"], a["sin"],
                               a["position_ids"])
    return q, kc, vc


# A Llama 3.1-style config (llama3 scaling), read by vkrope.from_hf and, apart, by the oracle's rope_of.
POS_EMB_CONFIG = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "num_key_value_heads": 2,
                  "num_hidden_layers": 2, "max_position_embeddings": 4096, "rope_theta": 500000.0,
                  "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                   "high_freq_factor": 4.0, "original_max_position_embeddings": 512}}
POS_EMB_SPEC = vkrope.from_hf(POS_EMB_CONFIG)


def _pos_emb_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    s = 4096 if big else 6  # (big: q of 4 MiB)
    return {"q": _f32(rng, 1, 4, s, 64), "k": _f32(rng, 1, 2, s, 64),
            "position_ids": rng.integers(0, 4096, (1, s)), "out_q": None, "out_k": None}


def _pos_emb_expect(a: dict[str, Any]) -> tuple:
    rope = oracle_hf.rope_of(POS_EMB_CONFIG)
    c, s = oracle_hf.cos_sin(rope, a["position_ids"])
    return oracle_hf.rotate(a["q"], c, s, rope["dim"]), oracle_hf.rotate(a["k"], c, s, rope["dim"])


SHIFT_SPEC = vkrope.RopeFreqs(8, base=10000.0, angle="exact")


def _shift_args(rng: np.random.Generator, big: bool = False) -> dict[str, Any]:
    """Rows moved to rows they do not overlap, so a call repeated on the same resident caches (the lifecycle tests
    do) gives the same caches: it reads rows no call writes."""
    s, d = (512, 256) if big else (12, 8)  # (big: caches of 1 MiB, past small bindings: sliced)
    old = np.arange(250, 262)[None] if big else np.arange(6, 12)[None]
    return {"k_cache": _f32(rng, 1, 2, s, d), "v_cache": _f32(rng, 1, 2, s, d), "old": old,
            "new": old - (150 if big else 6)}


def _shift_call(t: Any, a: dict[str, Any]) -> tuple:
    """The shift on `t` (a Device or the module); numpy caches uploaded there
    first; the results are both caches' contents after it."""
    dev = t if isinstance(t, vkrope.Device) else vkrope.default_device()
    kc, vc = (c if isinstance(c, vkrope.DeviceArray) else dev.asarray(c) for c in (a["k_cache"], a["v_cache"]))
    assert t.shift_cache(kc, SHIFT_SPEC, a["old"], a["new"], v_cache=vc) is None
    return kc.get(), vc.get()


def _shift_expect(a: dict[str, Any]) -> tuple:
    """Rows old -> new, keys rotated by new - old positions (float64 angles, rotate-half pairs over the first 8
    channels), values as they are."""
    kc, vc = (np.array(a[n], np.float64) for n in ("k_cache", "v_cache"))
    old, new = a["old"][0], a["new"][0]
    ang = (new - old).astype(np.float64)[:, None] * (1.0 / 10000.0 ** (np.arange(0, 8, 2) / 8))[None]
    c, s = np.cos(ang), np.sin(ang)
    k = kc[:, :, old].copy()
    rot = k.copy()
    rot[..., 0:4], rot[..., 4:8] = k[..., 0:4] * c - k[..., 4:8] * s, k[..., 4:8] * c + k[..., 0:4] * s
    kc[:, :, new] = rot
    vc[:, :, new] = np.array(a["v_cache"], np.float64)[:, :, old]
    return kc, vc


OPS = (
    OpCase("apply", _apply_args, ("x", "freqs", "out"),
           lambda t, a: (t.apply(a["x"], a["freqs"], out=a["out"]),),
           lambda a: (oracle(a["x"], a["freqs"]),), outs=(("out", "x"),)),
    OpCase("rotary_embedding", _onnx_args, ("x", "cos_cache", "sin_cache", "out"),
           lambda t, a: (t.rotary_embedding(a["x"], a["cos_cache"], a["sin_cache"], a["position_ids"], out=a["out"]),),
           lambda a: (onnx_rotary_embedding(a["x"], a["cos_cache"], a["sin_cache"], a["position_ids"]),),
           outs=(("out", "x"),)),
    OpCase("apply_rotary_emb", _llm_args, ("xq", "xk", "freqs_cos", "freqs_sin"),
           lambda t, a: t.apply_rotary_emb(a["xq"], a["xk"], a["freqs_cos"], a["freqs_sin"]),
           lambda a: et_apply_rotary_emb(a["xq"], a["xk"], a["freqs_cos"], a["freqs_sin"])),
    OpCase("apply_rotary_emb_hf", _hf_args, ("xq", "xk", "freqs_cos", "freqs_sin"),
           lambda t, a: t.apply_rotary_emb_hf(a["xq"], a["xk"], a["freqs_cos"], a["freqs_sin"], 3),
           lambda a: et_apply_rotary_emb_hf(a["xq"], a["xk"], a["freqs_cos"], a["freqs_sin"], 3)),
    OpCase("apply_many", _many_args, ("x", "x2", "freqs", "out2"),
           lambda t, a: tuple(t.apply_many([(a["x"], a["freqs"]), (a["x2"], a["freqs"], {"out": a["out2"]})])),
           lambda a: (oracle(a["x"], a["freqs"]), oracle(a["x2"], a["freqs"])),
           labels=(("x", r"calls\[0\]: x"), ("x2", r"calls\[1\]: x"), ("freqs", r"calls\[0\]: freqs"),
                   ("out2", r"calls\[1\]: out")),
           outs=(("out2", "x2"),)),
    OpCase("apply_nd", _nd_args, ("x", "out"),
           lambda t, a: (t.apply_nd(a["x"], ND_SPEC, a["ids"], out=a["out"]),),
           lambda a: (nd_rope(a["x"], ND_AXES, ND_SPEC.theta, a["ids"]),), outs=(("out", "x"),)),
    OpCase("rope_and_cache", _cache_args, ("q", "k", "v", "k_cache", "v_cache", "cos", "sin", "out"),
           _cache_call, _cache_expect, labels=(("cos", r"freqs\[0\] \(cos\)"), ("sin", r"freqs\[1\] \(sin\)")),
           outs=(("out", "q"),)),
    OpCase("apply_rotary_pos_emb", _pos_emb_args, ("q", "k", "out_q", "out_k"),
           lambda t, a: t.apply_rotary_pos_emb(a["q"], a["k"], POS_EMB_SPEC, a["position_ids"], out_q=a["out_q"],
                                               out_k=a["out_k"]),
           _pos_emb_expect, outs=(("out_q", "q"), ("out_k", "k"))),
    OpCase("shift_cache", _shift_args, ("k_cache", "v_cache"), _shift_call, _shift_expect, moves_numpy=False),
)


def module_target(case: OpCase) -> Any:
    """What runs `case` through the module-level API: the vkrope module, or
    (a Device's own method, apply_many: no module function) the default device."""
    return vkrope if hasattr(vkrope, case.name) else vkrope.default_device()


def as_numpy(y: Any) -> np.ndarray:
    """A result as numpy (DeviceArrays are copied back)."""
    return y.get() if isinstance(y, vkrope.DeviceArray) else np.asarray(y)


def check_results(case: OpCase, args: dict[str, Any], results: tuple) -> None:
    """Results of `case` on float32 `args` within 1e-5 of each element's
    scale (|x| summed over a pair, and cos, sin within 1)."""
    numpy_args = {k: as_numpy(v) if isinstance(v, vkrope.DeviceArray) else v for k, v in args.items()
                  if v is not None}
    want = case.expect(numpy_args)
    assert len(results) == len(want)
    for y, ref in zip(results, want):
        y = as_numpy(y)
        assert y.shape == ref.shape and y.dtype == np.float32
        scale = 2 * np.abs(ref).max() + 1
        err = np.abs(y.astype(np.float64) - ref).max()
        assert err <= 1e-5 * scale, f"{case.name}: error {err:.3g}"

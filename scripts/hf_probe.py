"""Probe transformers' own code for how each model type applies RoPE: the
facts scripts/hf_model_table.py builds the model table from (it imports
this module); run alone, it caches them, one pickle per model type.

    python scripts/hf_probe.py OUT_DIR [TYPE ...]   (default: every model type)

Needs torch and transformers (never imported by vkrope or its tests). For
a model type: its config class's defaults, the text config inside it, the
text rotary module (instantiated on the CPU from that config), and every
decoder layer's attention module run on random weights with the
module-level rotary functions of its modeling file wrapped, so that what
the attention really does is recorded: which function it calls, from which
module in the attention (a part: DeepSeek-V3.2's indexer), the q (and, for
a part, the k) it passes (head dim and layout), the cos / sin it passes and
what comes back. The answers are what the code computes; names pick only
where to look: the rotary module is a class named *RotaryEmbedding (or
ENCODER_ROTARY's), and a type is "no RoPE" only where its modeling file
defines no rotary function or class by name (`rotary_name`, read with ast)
or its text model's forward calls none (`no_rope`).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import os
import pickle
import re
import sys
import traceback
import warnings
from typing import Any


def _args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description="Cache transformers' RoPE facts per model type (see the docstring).")
    ap.add_argument("out", metavar="OUT_DIR", help="a folder for the pickles (one per model type; kept ones skipped)")
    ap.add_argument("types", metavar="TYPE", nargs="*", help="model types (default: every one transformers has)")
    return ap.parse_args()


ARGS = _args() if __name__ == "__main__" else None  # (--help answers before torch is imported)

import numpy as np  # noqa: E402
import torch  # noqa: E402

SEQ = 5  # tokens of the probe
POS = torch.tensor([[0, 3, 17, 100, 301]])  # positions of the probe (one row); a second run at POS * 3 + 1
# (not a shift: attention with RoPE sees relative positions only), both below every model's table length


def text_config_path(cfg: Any, text: Any) -> list[str]:
    """The attribute path from the outer config to its text config ([] if it is the outer one)."""
    if text is cfg:
        return []
    for name, value in vars(cfg).items():
        if value is text:
            return [name]
        if hasattr(value, "to_dict") and not isinstance(value, type):
            for inner, v2 in vars(value).items():
                if v2 is text:
                    return [name, inner]
    return ["?"]


def mapped_model(cfg: Any) -> Any:
    """The model class transformers' AutoModel builds for config `cfg` (an instance or its class) where that
    class is not in the config's own modeling file, else None: a config class with no modeling file of its own
    runs another model type's code (ExaoneConfig and InternLM3Config run LlamaModel, Param2MoeConfig
    Glm4MoeModel: modeling_auto's MODEL_MAPPING_NAMES)."""
    from transformers.models.auto.modeling_auto import MODEL_MAPPING  # noqa: PLC0415

    cls = cfg if isinstance(cfg, type) else type(cfg)
    try:
        model = MODEL_MAPPING[cls]
    except (KeyError, ValueError, AttributeError):  # (a config AutoModel does not map)
        return None
    own = cls.__module__.replace(".configuration_", ".modeling_")
    if not isinstance(model, type):  # (several classes for one config: Funnel's)
        return None
    try:
        model.config_class  # noqa: B018  (a placeholder of a backend not installed raises here: torchaudio's)
    except ImportError:
        return None
    return model if model.__module__ != own else None


def modeling_module(cfg: Any) -> Any:
    """The modeling module of config `cfg` (an instance or its class): its own file's, else the one holding the
    model class AutoModel builds for it (`mapped_model`), else None."""
    cls = cfg if isinstance(cfg, type) else type(cfg)
    try:
        return importlib.import_module(cls.__module__.replace(".configuration_", ".modeling_"))
    except ImportError:
        mapped = mapped_model(cls)
        return sys.modules[mapped.__module__] if mapped is not None else None


ENCODER_ROTARY = r"Vision|Audio|Speech|Visual|Image|Patch|Encoder|Vit|Depth|Talker|Code2Wav|Mimi|DiT"


def is_text_rotary(name: str) -> bool:
    """Whether a rotary class's name is a text decoder's: not named for an encoder of another modality, or
    named Text (GLM-Image's GlmImageTextRotaryEmbedding, Granite 4 Vision's text one)."""
    return "Text" in name or not re.search(ENCODER_ROTARY, name, re.IGNORECASE)  # (SAM 3's ViT too)


def rotary_classes(module: Any) -> list[type]:
    """The rotary classes of a modeling file that are not a vision / audio encoder's."""
    return [obj for name, obj in vars(module).items() if isinstance(obj, type) and is_rotary_class(name)
            and obj.__module__ == module.__name__ and is_text_rotary(name)]


def held_rotaries(model: Any) -> tuple[list[tuple[str, Any]], list[str]]:
    """(the text rotary modules `model` holds, by path; the class names of every rotary module it holds): what
    its own code runs, where a modeling file's classes may be another model's (Qwen3-Omni's code predictor
    holds the plain one, not the thinker's M-RoPE)."""
    held = rotary_instances(model)
    return [(p, m) for p, m in held if is_text_rotary(type(m).__name__)], sorted({type(m).__name__ for _, m in held})


def text_rotary_class(module: Any, text: Any) -> Any:
    """The class of the rotary module the text model for `text` holds (built on the meta device), where it
    holds one text rotary class; else None (the probe refuses such a type: no text model class, one that does
    not build, none held or several)."""
    cls = text_model(module, text)
    if cls is None:
        return None
    try:
        with torch.device("meta"):
            held = {type(m) for _, m in held_rotaries(cls(text))[0]}
    except Exception:  # noqa: BLE001  (a model its default config does not build)
        return None
    return held.pop() if len(held) == 1 else None


def text_model(module: Any, text: Any) -> Any:
    """The text decoder model class for `text` in `module` (the one whose config_class is text's)."""
    best = None
    for name, obj in vars(module).items():
        if isinstance(obj, type) and issubclass(obj, torch.nn.Module) and obj.__module__ == module.__name__ \
                and getattr(obj, "config_class", None) is type(text) and name.endswith("Model") \
                and not name.endswith("PreTrainedModel") and "ForCausalLM" not in name:
            if best is None or len(name) < len(best.__name__) or "Text" in name:
                best = obj
    mapped = mapped_model(text) if best is None else None  # (ExaoneConfig's LlamaModel: its config_class is
    return mapped if mapped is not None and mapped.__module__ == module.__name__ else best  # LlamaConfig)


def rotary_instances(model: Any) -> list[tuple[str, Any]]:
    return [(n, m) for n, m in model.named_modules() if is_rotary_class(type(m).__name__)]


def layer_index(path: str) -> int | None:
    m = re.search(r"\.(\d+)\.", "." + path + ".")
    return int(m.group(1)) if m else None


def attention_modules(model: Any) -> list[tuple[int, str, Any]]:
    """(layer index, path, module) of each decoder layer's self attention."""
    out = []
    for path, m in model.named_modules():
        last = path.rsplit(".", 1)[-1]
        if last in ("self_attn", "attention", "attn", "self_attention", "mixer") and layer_index(path) is not None \
                and "Attention" in type(m).__name__ and path.count(".") <= 3:
            out.append((layer_index(path), path, m))
    return out


def _own_function(fn: Any, module: Any) -> bool:
    """Whether `fn` is a function `module` defines: a plain one, or one that `kernels` (a dependency of
    transformers 5.25) turned into a module by @use_kernel_forward_from_hub ("rotary_pos_emb": 118 modeling
    files' apply_rotary_pos_emb), which still runs the function where no kernel was loaded (its class is named
    Func in kernels 0.19.1, the version checked)."""
    if getattr(fn, "__module__", None) != module.__name__:
        return False
    return inspect.isfunction(fn) or (isinstance(fn, torch.nn.Module) and type(fn).__name__ == "Func")


def calling_module(frame: Any) -> Any:
    """The torch module whose method made the call (the first frame up whose `self` is one): which part of an
    attention rotated (DeepSeek-V3.2's indexer beside its attention); None where no module did."""
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, torch.nn.Module):
            return owner
        frame = frame.f_back
    return None


def part_names(calls: list[dict], attn: Any) -> None:
    """Name each recorded call's part in place: "attention" for the attention module's own calls, else the path
    of the submodule that made it ("indexer"), the name its attention gives it."""
    paths = {id(m): (path, m) for path, m in attn.named_modules()}
    for call in calls:
        path, module = paths.get(id(call.pop("caller", None)), ("", attn))
        call["part"] = path or "attention"
        call["part_width"] = getattr(module, "head_dim", None)  # (the part's own heads: the indexer's 128)


def is_rotary_class(name: str) -> bool:
    """Whether a class's name says it is a model's rotary module, the one the probe runs (*RotaryEmbedding)."""
    return name.endswith("RotaryEmbedding")


def rotary_name(name: str) -> bool:
    """Whether a function's or class's name says rotary / rope (not M-RoPE's section helpers)."""
    return bool(re.search(r"rotary|rope", name, re.I)) and "mrope" not in name.lower()


def rotary_functions(module: Any) -> list[str]:
    """The module-level functions of `module` whose name says rotary / rope (what `recording` wraps)."""
    return [name for name, fn in vars(module).items() if _own_function(fn, module) and rotary_name(name)
            and not name.startswith("get_")]


@contextlib.contextmanager
def recording(module: Any):
    """Wrap every module-level function of `module` whose name says rotary / rope; yield the list of calls."""
    calls: list[dict] = []
    saved = {}
    names = rotary_functions(module)
    for name, fn in list(vars(module).items()):
        if name in names:
            def wrapped(*args, __fn=fn, __name=name, **kwargs):
                out = __fn(*args, **kwargs)
                calls.append({"fn": __name, "args": args, "kwargs": kwargs, "out": out,
                              "caller": calling_module(sys._getframe(1))})
                return out
            saved[name] = fn
            setattr(module, name, wrapped)
    try:
        yield calls
    finally:
        for name, fn in saved.items():
            setattr(module, name, fn)


def rotary_forward(rot: Any, x: torch.Tensor, pos: torch.Tensor, layer_type: str | None) -> tuple:
    """The rotary module's output for positions [1, S]; an M-RoPE module that wants [3, 1, S] gets the same
    position on its three axes (text tokens)."""
    params = inspect.signature(rot.forward).parameters
    kw = {"layer_type": layer_type} if "layer_type" in params and layer_type is not None else {}
    try:
        return rot(x, pos, **kw)
    except (RuntimeError, IndexError, ValueError):
        return rot(x, pos[None].expand(3, *pos.shape), **kw)


def as_pair(out: Any) -> tuple:
    """(cos, sin) from a rotary module's output: a pair, or one complex tensor (Llama 4's freqs_cis)."""
    if isinstance(out, torch.Tensor) and out.is_complex():
        return out.real.contiguous(), out.imag.contiguous()
    return tuple(out)


def np64(t: Any) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


_RANDOM = torch.Generator().manual_seed(0)
_NOISE = torch.randn(1 << 24, generator=_RANDOM) * 0.02


def materialize(m: Any) -> None:
    """Give a meta module CPU storage filled with fixed small random numbers (fast: copied from one buffer)."""
    m.to_empty(device="cpu")
    with torch.no_grad():
        for i, t in enumerate(list(m.parameters()) + list(m.buffers())):
            if t.is_floating_point():
                # each tensor its own slice (q and k must differ: with equal weights a token's own score,
                # |q|^2, dominates and hides the positions), scaled to keep the softmax soft
                n = t.numel()
                start = (i * 7919 * 1031) % (_NOISE.numel() // 2)
                vals = _NOISE.repeat(-(-(n + start) // _NOISE.numel()))[start:start + n]
                scale = 1.0 / (0.02 * max(1, t.shape[-1]) ** 0.5) if t.ndim >= 2 else 1.0
                t.copy_((vals * scale).view_as(t))


def call_attention(attn: Any, hidden: torch.Tensor, pe: tuple, states: dict | None = None) -> Any:
    """One attention module's output on `hidden` with position embeddings `pe`: every input it requires that
    the probe has no value for is None, and where that fails on a None, the dict `states` (one per probe, an
    empty one where none is given) for each of its "...states" inputs and a causal additive mask
    (DeepSeek-V3.2's and GLM-5's sparse indexers read the mask; sdpa runs causally on None, so the output is
    the same where both run). One dict for the whole probe: Gemma 3n's last layers reuse the keys an earlier
    layer of their type stored in it (their attention rotates only the queries)."""
    params = inspect.signature(attn.forward).parameters
    kw: dict[str, Any] = {"hidden_states": hidden}
    if "position_embeddings" in params:
        kw["position_embeddings"] = pe
    if "attention_mask" in params:
        kw["attention_mask"] = None
    if "position_ids" in params:
        kw["position_ids"] = POS
    if "cache_position" in params:
        kw["cache_position"] = torch.arange(SEQ)
    carry = [n for n, p in params.items() if n.startswith("prev_") and p.default is None]
    if carry and states is not None and "carried" in states:  # (GLM-5's shared indexer layer reuses the top-k
        kw[carry[0]] = states["carried"]  # selection the layer before it returned, as its decoder layer passes it)
    for name, p in params.items():  # other required inputs (Gemma 4's shared_kv_states, ...): None
        if name not in kw and p.default is inspect.Parameter.empty and p.kind in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            kw[name] = None
    try:
        out = attn(**kw)
    except (TypeError, AttributeError, ValueError) as exc:  # (GLM-5's shared indexer layer reads the mask's
        if "NoneType" not in str(exc) and "mask" not in str(exc):  # dtype; Kolibri's asks for one by name)
            raise
        shared = {} if states is None else states
        kw = {k: (shared if v is None and k.endswith("states") else v) for k, v in kw.items()}
        kw.update({name: shared for name, p in params.items() if name.endswith("states") and name not in kw
                   and p.default is None and "dict" in str(p.annotation).lower()})  # (Gemma 3n's shared_kv_states,
        # a KVSharingDict: optional, yet its layers need it; encoder_hidden_states and the like are tensors)
        if "attention_mask" in kw:  # (DeepSeek-V3.2's sparse indexer reads the mask: a causal one, additive)
            kw["attention_mask"] = torch.full((1, 1, SEQ, SEQ), float("-inf")).triu(1)
        out = attn(**kw)
    if carry and states is not None and isinstance(out, tuple) and len(out) > 2 and isinstance(out[2], torch.Tensor):
        states["carried"] = out[2]  # (what the next layer takes as its prev_ input)
    return out[0] if isinstance(out, tuple) else out


def rotation_candidates(x: np.ndarray, c: np.ndarray, s: np.ndarray, token_axis: int) -> dict:
    """{(pairs, sign): y} for x [..., D] with per-(token, pair) c, s [S, W/2]: every way a model may rotate."""
    xs = np.moveaxis(x, token_axis, -2)  # [..., S, D]
    d, half = xs.shape[-1], c.shape[-1]
    w = 2 * half
    out = {}
    for sign in (1, -1):
        sn = sign * s
        y = xs.copy()
        a, b = xs[..., :half], xs[..., half:w]
        y[..., :half], y[..., half:w] = a * c - b * sn, b * c + a * sn
        out[("rotate_half", sign)] = y
        y = xs.copy()
        a, b = xs[..., 0:w:2], xs[..., 1:w:2]
        ya, yb = a * c - b * sn, b * c + a * sn
        y[..., 0:w:2], y[..., 1:w:2] = ya, yb
        out[("interleaved", sign)] = y
        y = xs.copy()
        y[..., :half], y[..., half:w] = ya, yb
        out[("interleaved_to_halves", sign)] = y
    assert d >= w
    return {k: np.moveaxis(v, -2, token_axis) for k, v in out.items()}


def pair_values(cos: np.ndarray, sin: np.ndarray) -> tuple[str, np.ndarray, np.ndarray] | None:
    """(layout, c, s) [S, W/2] from a rotary module's cos / sin [1, S, W]: halves (cat(f, f)) or repeated
    (each value twice, adjacent)."""
    cos, sin = cos.reshape(-1, cos.shape[-1]), sin.reshape(-1, sin.shape[-1])
    w = cos.shape[-1]
    if w % 2:
        return None
    if np.array_equal(cos[:, : w // 2], cos[:, w // 2:]) and np.array_equal(sin[:, : w // 2], sin[:, w // 2:]):
        return "halves", cos[:, : w // 2], sin[:, : w // 2]
    if np.array_equal(cos[:, 0::2], cos[:, 1::2]) and np.array_equal(sin[:, 0::2], sin[:, 1::2]):
        return "repeated", cos[:, 0::2], sin[:, 0::2]
    return "single", cos, sin  # one value per pair (GPT-OSS): the attention's rotation tells whether it fits


def call_pair_values(calls: list[dict]) -> list[tuple]:
    """Candidate (layout, c, s) from the cos / sin tensors a recorded call was given (either order)."""
    out = []
    for call in calls[:1]:
        ts = [a for a in call["args"] if isinstance(a, torch.Tensor) and a.ndim in (2, 3)]
        for a, b in ((0, 1), (1, 0)):
            if len(ts) >= 2 and ts[a].shape == ts[b].shape and ts[a].shape[-2] == SEQ:
                pv = pair_values(np64(ts[a]), np64(ts[b]))
                if pv is not None:
                    out.append(pv)
    return out


def classify(call: dict, pv: tuple) -> dict | None:
    """What one recorded call of a rotary function did, in vkrope's terms, or None if no candidate fits."""
    ins = [a for a in call["args"] if isinstance(a, torch.Tensor) and a.ndim == 4]
    outs = call["out"] if isinstance(call["out"], (tuple, list)) else (call["out"],)
    outs = [o for o in outs if isinstance(o, torch.Tensor)]
    if not ins or not outs or ins[0].shape != outs[0].shape:
        return None
    x, y = np64(ins[0]), np64(outs[0])
    axes = [i for i in (1, 2) if x.shape[i] == SEQ]
    if len(axes) != 1:
        return None
    _, c, s = pv
    if 2 * c.shape[-1] > x.shape[-1]:
        return None
    scale = np.abs(x).max() * 1e-5 + 1e-30
    part = call.get("part", "attention")
    for (pairs, sign), cand in rotation_candidates(x, c, s, axes[0]).items():
        if np.abs(cand - y).max() <= scale and (part == "attention" or k_alike(ins, outs, c, s, axes[0], pairs, sign)):
            return {"pairs": pairs, "sign": sign, "head_dim": int(x.shape[-1]), "token_axis": axes[0],
                    "q_in": x, "q_out": y, "part": part, "part_width": call.get("part_width")}
    return None


def k_alike(ins: list, outs: list, c: np.ndarray, s: np.ndarray, axis: int, pairs: str, sign: int) -> bool:
    """Whether a part's call rotated its second tensor (k) as its first (q): a part (a module in the attention)
    counts only where it rotates both, alike, in one call."""
    if len(ins) < 2 or len(outs) < 2 or ins[1].shape != outs[1].shape or ins[1].shape[axis] != SEQ:
        return False
    x, y = np64(ins[1]), np64(outs[1])
    return bool(np.abs(rotation_candidates(x, c, s, axis)[(pairs, sign)] - y).max() <= np.abs(x).max() * 1e-5 + 1e-30)


def rotary_entry(rot: Any, key: str | None) -> dict:
    """The rotary module's output for one rope layer type: cos / sin at POS and at POS * 3 + 1, per-pair
    values, inverse frequencies and attention scaling."""
    x = torch.zeros(1, SEQ, 4)
    with torch.no_grad():
        pe = rotary_forward(rot, x, POS, key)
        pe2 = rotary_forward(rot, x, POS * 3 + 1, key)
    cos, sin = as_pair(pe)
    inv = getattr(rot, f"{key}_inv_freq", None) if key else None
    inv = inv if inv is not None else getattr(rot, "inv_freq", None)
    scaling = getattr(rot, f"{key}_attention_scaling", None) if key else None
    scaling = scaling if scaling is not None else getattr(rot, "attention_scaling", 1.0)
    pv = ("complex", np64(cos)[0], np64(sin)[0]) if isinstance(pe, torch.Tensor) else pair_values(np64(cos), np64(sin))
    return {"pe": pe, "pe2": pe2, "pv": pv, "cos": np64(cos)[0], "sin": np64(sin)[0],
            "inv_freq": None if inv is None else inv.detach().numpy().copy(), "scaling": float(scaling)}


def rotation(calls: list[dict], entry: dict, info: dict) -> str | None:
    """Classify what a rotating layer's recorded rotary calls did (into `info`), or say why nothing fits."""
    index = info["index"]
    if entry["pv"] is None:
        return f"layer {index}: cos / sin neither cat(f, f) nor repeated"
    got = [g for g in (classify(c, entry["pv"]) for c in calls) if g is not None]
    if not got:  # the attention turned the module's output into its own cos / sin (GPT-J's sincos)
        for pv in call_pair_values(calls):
            got = [g for g in (classify(c, pv) for c in calls) if g is not None]
            if got:
                entry["pv"] = pv
                break
    if not got:
        return f"layer {index}: the attention's rotation is none vkrope knows (calls: {[c['fn'] for c in calls]})"
    kinds = {(g["pairs"], g["sign"], g["head_dim"]) for g in got}
    by_part: dict[str, set] = {}
    for g in got:
        by_part.setdefault(g["part"], set()).add((g["pairs"], g["sign"], g["head_dim"]))
    if len(kinds) > 1 and (len(by_part) == 1 or "attention" not in by_part or
                           any(len(k) > 1 for k in by_part.values())):
        return f"layer {index}: q and k rotated differently: {sorted(kinds)}"
    unknown = sorted({c["part"] for c in calls} - set(by_part))  # (a module whose rotation fits none: MiniMax-M3's
    # indexer, which cuts the cat(f, f) cos / sin to its own narrower heads)
    if (len(by_part) > 1 or unknown) and "attention" in by_part:  # (each part one way: DeepSeek-V3.2's indexer
        # rotate-half beside its attention's interleaved pairs, GLM-5's interleaved as its attention's)
        widths = {c["part"]: c.get("part_width") for c in calls}
        ats = {c["part"]: c.get("part_at") for c in calls}  # (None for the attention's own)
        info["parts"] = {p: {**dict(zip(("pairs", "sign", "head_dim"), next(iter(k)))), "width": widths[p],
                             "at": ats[p]} for p, k in by_part.items()}
        info["parts"].update({p: {"pairs": "unknown", "width": widths[p]} for p in unknown})
        for g in got:
            entry.setdefault("part_examples", {}).setdefault(g["part"], g)
        got = [g for g in got if g["part"] == "attention"]
    info.update({k: got[0][k] for k in ("pairs", "sign", "head_dim")})
    entry.setdefault("example", got[0])
    return None


def passed_rope(model_type: str, overrides: dict) -> dict[int, bool] | None:
    """{layer index: whether the text model's forward passes its attention position embeddings}, run on the
    meta device with `overrides` on its text config, for the attentions that take them; None where the model
    does not run so. The model decides this per layer in some families (Muse Spark's zero layer_rope_theta,
    Lara's global layers), which the attention-level probe cannot see."""
    built = meta_model(model_type, overrides)
    if built is None:
        return None
    model, _ = built
    passed: dict[int, bool] = {}
    for index, _, attn in attention_modules(model):
        if "position_embeddings" in inspect.signature(attn.forward).parameters:
            attn.register_forward_pre_hook(
                lambda m, args, kwargs, i=index: passed.__setitem__(i, kwargs.get("position_embeddings")
                                                                     is not None), with_kwargs=True)
    return passed if meta_forward(model, passed.clear) else None


def meta_model(model_type: str, overrides: dict, text: Any = None) -> tuple[Any, Any] | None:
    """(the text model built on the meta device with `overrides` on its text config, or of the text config
    `text` as a file's keys built it, its modeling module), or None where it has none or its code does not
    build it so (Gemma 4's enable_moe_block flipped on without num_experts: a flip the code does not run with)."""
    from transformers import AutoConfig  # noqa: PLC0415

    if text is None:
        text = AutoConfig.for_model(model_type).get_text_config(decoder=True)
    for k, v in overrides.items():
        setattr(text, k, v)
    module = modeling_module(text)
    cls = text_model(module, text) if module else None
    if cls is None:
        return None
    try:
        with torch.device("meta"):
            return cls(text), module
    except Exception:  # noqa: BLE001  (a model its code does not build with these overrides: unknown)
        return None


def meta_forward(model: Any, restart: Any) -> bool:
    """Run a text model on the meta device (float32, else bfloat16: MoE grouped matmuls take only that;
    `restart()` forgets what a failed try recorded); whether it ran."""
    for dtype in (torch.float32, torch.bfloat16):
        restart()
        try:
            with torch.no_grad():
                model.to(dtype)(input_ids=torch.zeros(1, SEQ, dtype=torch.long, device="meta"))
            return True
        except Exception:  # noqa: BLE001  (a model that does not run on meta tensors: unknown)
            continue
    return False


def rotary_calls(model_type: str, overrides: dict) -> int | None:
    """How many times the text model's forward calls its modeling file's rotary functions, run on the meta
    device (shapes only: fast at any size) with `overrides` set on its text config; None where it does not run
    so. Zero where the config switches RoPE off at the model level (Falcon's alibi: its model passes an ALiBi
    bias, and the attention then rotates nothing), which the attention-level probe cannot see."""
    built = meta_model(model_type, overrides)
    if built is None:
        return None
    model, module = built
    with recording(module) as calls:
        ran = meta_forward(model, calls.clear)
    return len(calls) if ran else None


@contextlib.contextmanager
def linear_outputs(attn: Any):
    """Yield {path: output} of each linear layer in `attn`, on its first run (rotated_at looks in them)."""
    outs: dict[str, torch.Tensor] = {}

    def keep(path: str, out: Any) -> None:  # (a forward hook returning a value would replace the output)
        if path not in outs and isinstance(out, torch.Tensor):
            outs[path] = out.detach().clone()

    handles = [m.register_forward_hook(lambda mod, inp, out, path=path: keep(path, out))
               for path, m in attn.named_modules() if isinstance(m, torch.nn.Linear)]
    try:
        yield outs
    finally:
        for handle in handles:
            handle.remove()


def rotated_at(call: dict, outs: dict, path: str, width: Any) -> int | None:
    """Where a part's rotated channels sit in its heads of `width`: the offset at which the call's q (its first
    argument) is found in the output of one of the part's linear layers viewed as heads of `width`
    (DeepSeek-V3.2's indexer splits [rope, rest]: 0; HY-V4's [rest, rope]: width - rope); None where none
    holds it as it is (a norm or a scale between them)."""
    q = call["args"][0] if call["args"] else None
    if not isinstance(q, torch.Tensor) or q.dim() != 4 or not isinstance(width, int) or q.shape[-1] > width:
        return None
    rope = q.shape[-1]
    for name, out in outs.items():
        if not name.startswith(path + ".") or out.shape[-1] % width:
            continue
        heads = out.reshape(*out.shape[:-1], -1, width)
        for off in range(width - rope + 1):
            cand = heads[..., off:off + rope]
            if any(v.shape == cand.shape and torch.equal(v, cand) for v in (q, q.transpose(1, 2))):
                return off
    return None


def run_twice(module: Any, attn: Any, h: torch.Tensor, entry: dict, states: dict) -> tuple[list[dict], bool]:
    """(the rotary calls of the attention's run on `h` at the probe's positions, each its part named, and for a
    part with heads of its own where its rotated channels sit; whether its output moved when run at the second
    positions)."""
    with torch.no_grad(), recording(module) as calls, linear_outputs(attn) as outs:
        out1 = call_attention(attn, h, entry["pe"], states)
        first = list(calls)
        out2 = call_attention(attn, h, entry["pe2"], states)
    part_names(calls, attn)
    for call in first:
        if call["part"] != "attention":
            call["part_at"] = rotated_at(call, outs, call["part"], call["part_width"])
    return first, not torch.equal(out1, out2)


def no_rope(facts: dict, model_type: str, module: Any) -> dict:
    """`facts` of a model type whose text model holds no rotary module and whose file has no rotary class:
    "rope" False (no RoPE) where its modeling file has no rotary function or its text model's forward calls
    none (Jamba's copied apply_rotary_pos_emb); else None, refused (RoFormer's and CLVP's attention call
    apply_rotary_position_embeddings / apply_rotary_pos_emb on a sinusoidal table of their own: they rotate;
    a forward the probe cannot run may)."""
    names = rotary_functions(module)
    calls = rotary_calls(model_type, {}) if names else 0
    if calls == 0:  # (its module-level ones uncalled: any other it defines, a method or a class, is unrecorded)
        tree = ast.parse(inspect.getsource(module))
        top = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        names = sorted({n.name for n in ast.walk(tree)
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name not in top
                        and (rotary_name(n.name) or "rotate_half" in n.name)})  # (rotate_half too: a
        # rotation whose name says neither, which `recording` does not wrap, rotary_name's use)
        if not names:
            return {**facts, "rope": False}
    return {**facts, "rope": None, "why": f"not verified: its modeling file's {', '.join(names[:4])} "
            + ("rotate with no rotary module the probe reads" if calls else "may rotate (the probe records no call "
               "of a method or a class, nor of a function in a text model that does not run on the meta device)")}


def probe(model_type: str, overrides: dict | None = None, first_only: bool = False) -> dict:
    """Everything transformers' code says about `model_type`'s text RoPE (see the module docstring), with
    `overrides` set on its text config first; `first_only`: stop after one rotating layer."""
    from transformers import AutoConfig  # noqa: PLC0415

    cfg = AutoConfig.for_model(model_type)
    text = cfg.get_text_config(decoder=True)
    for k, v in (overrides or {}).items():
        setattr(text, k, v)
    facts: dict[str, Any] = {"model_type": model_type, "pos": POS.numpy().copy(),
                             "text_model_type": getattr(text, "model_type", ""),
                             "text_config": text_config_path(cfg, text)}
    module = modeling_module(text) or modeling_module(cfg)
    if module is None:
        return {**facts, "rope": None, "why": "no modeling file"}
    classes = rotary_classes(module)
    model_cls = text_model(module, text)
    if model_cls is None:  # (a rotary class in its file, no text model: refused)
        return {**facts, "rope": True, "why": f"no text model class for {type(text).__name__}"} if classes else \
            no_rope(facts, model_type, module)
    try:
        with torch.device("meta"):
            model = model_cls(text)
    except Exception:  # noqa: BLE001  (a model its default config does not build: as its file's classes say)
        if classes:
            raise
        return no_rope(facts, model_type, module)
    rots, held = held_rotaries(model)
    if not held and not classes:
        return no_rope(facts, model_type, module)
    facts.update(rope=True, text=text.to_dict())
    if not rots:
        return {**facts, "why": "the text model holds no text rotary module" + (f" (it holds {held})" if held else "")}
    if len({type(m) for _, m in rots}) > 1:
        return {**facts, "why": f"several text rotary classes: {sorted({type(m).__name__ for _, m in rots})}"}
    rot = type(rots[0][1])(text)
    facts["learned"] = sorted(n for n, _ in rots[0][1].named_parameters())  # (Mistral Large 3's alpha: weights')
    attns = attention_modules(model)
    if not attns:
        return {**facts, "why": "no decoder attention modules found"}
    types = getattr(text, "layer_types", None)
    hidden_size = getattr(text, "hidden_size", None)
    layers: list[dict] = []
    per_type: dict[Any, dict] = {}
    donors: dict[Any, dict] = {}
    states: dict = {}  # (what a layer stores for a later one: see call_attention)
    for index, path, attn in attns:
        lt = types[index] if types is not None and index < len(types) else None
        key = lt if "layer_type" in inspect.signature(rot.forward).parameters else None
        if key not in per_type:
            per_type[key] = rotary_entry(rot, key)
        entry = per_type[key]
        shapes = (type(attn), tuple((n, tuple(t.shape)) for n, t in attn.state_dict().items()))
        if shapes in donors:  # the same weights again: shared, not copied (a layer costs its forward only)
            attn.load_state_dict(donors[shapes], assign=True)
        else:
            materialize(attn)
            donors[shapes] = attn.state_dict()
        h = torch.from_numpy(np.random.default_rng(index).standard_normal((1, SEQ, hidden_size))).float()
        try:
            first, moved = run_twice(module, attn, h, entry, states)
        except Exception as exc:  # noqa: BLE001  (recorded: the model type is then refused)
            return {**facts, "why": f"attention of layer {index} did not run: {type(exc).__name__}: {exc}"[:300]}
        info: dict[str, Any] = {"index": index, "layer_type": lt, "rope_key": key, "rotates": moved,
                                "attn_head_dim": getattr(attn, "head_dim", None)}
        if moved:
            why = rotation(first, entry, info)
            if why:
                return {**facts, "why": why}
        layers.append(info)
        if first_only and moved:
            break
    facts["layers"] = layers
    for entry in per_type.values():
        entry.pop("pe"), entry.pop("pe2")
    facts["per_type"] = per_type
    return facts


def main(args: argparse.Namespace) -> None:
    """Probe each model type once into args.out (a model type already there is kept)."""
    warnings.filterwarnings("ignore")
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES  # noqa: PLC0415

    os.makedirs(args.out, exist_ok=True)
    for t in args.types or sorted(CONFIG_MAPPING_NAMES):
        path = os.path.join(args.out, t + ".pkl")
        if os.path.exists(path):
            continue
        try:
            facts = probe(t)
        except Exception as exc:  # noqa: BLE001  (the table says why)
            facts = {"model_type": t, "error": f"{type(exc).__name__}: {exc}"[:400],
                     "trace": traceback.format_exc()[-2000:]}
        with open(path + ".tmp", "wb") as f:
            pickle.dump(facts, f)
        os.replace(path + ".tmp", path)
        print(t, facts.get("why") or facts.get("error") or ("ok" if facts.get("rope") else "no rope"), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main(ARGS)

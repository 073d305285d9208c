"""A model's RoPE from a Hugging Face config that transformers runs only
with the model's remote code (ChatGLM 2 / 3, InternLM 2, MiniCPM, Baichuan,
Qwen 1, ...), read as llama.cpp's converter reads it: the converter's own
methods (vkrope/data/gguf_convert.json, copied from llama.cpp by
scripts/gguf_convert_table.py) run on the config by a whitelisted
interpreter (pyconv.py) give the GGUF metadata, and from_gguf's reading of
that metadata gives the RoPE. The pairs are the checkpoint's: llama.cpp's
adjacent ("normal") pairs are rotate-half pairs of the config's weights
where the converter applies Llama's permutation to the Q and K rows, and
adjacent where it keeps their order (ChatGLM), as scripts/gguf_convert_table.py
measured by running the converter's modify_tensors; an architecture not
measured, and whatever the interpreter cannot run, is refused.
"""

from __future__ import annotations

import ast
import functools
import math
import re
import struct
from dataclasses import replace
from typing import Any

import numpy as np

from . import data
from . import gguf as gguf_reading
from . import gguf_program
from . import pyconv
from .pyconv import Bound, Builtin, EnumValue, Function, Namespace, Opaque, Unknown
from .rope import ModelRope, brief

_GENERIC_ADDS = ("add_uint8", "add_int8", "add_uint16", "add_int16", "add_uint32", "add_int32", "add_uint64",
                 "add_int64", "add_float32", "add_float64", "add_bool", "add_string", "add_array", "add_key_value")


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """vkrope/data/gguf_convert.json."""
    return data.load("gguf_convert.json")  # type: ignore[no-any-return]


class Instance:
    """The converter's model object: its class name and the attributes its methods set."""

    def __init__(self, cls: str) -> None:
        self.cls = cls
        self.attrs: dict[str, Any] = {}


class ClassRef:
    """A converter class named in its code (LlamaModel.permute, ...)."""

    def __init__(self, name: str) -> None:
        self.name = name


class Super:
    """super() inside a method of `owner`, for `obj`."""

    def __init__(self, owner: str, obj: Any) -> None:
        self.owner, self.obj = owner, obj


class Writer:
    """The GGUF writer: the metadata of the model's architecture that the methods add, by key."""

    def __init__(self, arch: str) -> None:
        self.arch = arch
        self.kv: dict[str, Any] = {}
        self.types: dict[str, str] = {}  # each key's GGUF type as the writer stores it, where it says one


class WriterCall:
    """writer.add_*: one writer method."""

    def __init__(self, writer: Writer, name: str) -> None:
        self.writer, self.name = writer, name


class StubCall:
    """A converter method vkrope replaces (one that reads files or tensors), bound to its object."""

    def __init__(self, fn: Any, obj: Any) -> None:
        self.fn, self.obj = fn, obj


class World:
    """The converter's classes and objects as the interpreter sees them."""

    def __init__(self, config: dict) -> None:
        t = table()
        self.t, self.config, self.classes = t, config, t["classes"]
        g = t["gguf"]
        enums = {name: Namespace(name, {m: EnumValue(name, m, v) for m, v in members.items()})
                 for name, members in g["enums"].items()}
        arch_ns, tensor_ns = enums["MODEL_ARCH"], enums["MODEL_TENSOR"]
        gguf_ns = Namespace("gguf", {
            **enums,
            "MODEL_ARCH_NAMES": {arch_ns.attrs[k]: v for k, v in g["arch_names"].items() if k in arch_ns.attrs},
            "TENSOR_NAMES": {tensor_ns.attrs[k]: v for k, v in g["tensor_names"].items() if k in tensor_ns.attrs},
            "get_tensor_name_map": Builtin(lambda *a, **k: Opaque("the tensor name map"))})
        torch_ns = Namespace("torch", {"tensor": Builtin(_tensor), "float32": "torch.float32"})
        model_type = Namespace("ModelType", {m: EnumValue("ModelType", m, m) for m in t["model_type"]})
        self.globals: dict[str, Any] = {"gguf": gguf_ns, "torch": torch_ns, "ModelType": model_type}
        self.globals.update({name: ClassRef(name) for name in self.classes})
        self.globals.update({name: Function(pyconv.parse_function(src), None) for name, src in t["functions"].items()})
        self.interp = pyconv.Interpreter(self, self.globals)
        self.model_dir = Opaque("the model's folder")
        self._class_attrs: dict[tuple[str, str], Any] = {}
        self._mro: dict[str, tuple[str, ...]] = {}

    def mro(self, cls: str) -> tuple[str, ...]:
        """C3 linearisation of the table's classes."""
        if cls not in self._mro:
            seqs = [list(self.mro(b)) for b in self.classes[cls]["bases"]] + [list(self.classes[cls]["bases"])]
            out = [cls]
            while any(seqs):
                head = next((s[0] for s in seqs if s and not any(s[0] in o[1:] for o in seqs)), None)
                if head is None:
                    raise Unknown(f"no method order for {cls}")
                out.append(head)
                seqs = [s[1:] if s and s[0] == head else s for s in seqs]
            self._mro[cls] = tuple(out)
        return self._mro[cls]

    def lookup(self, order: tuple[str, ...], name: str, obj: Any) -> Any:
        """A method or class attribute found along `order`: bound to an instance `obj`; looked up on a
        class (LlamaModel.permute, GraniteMoeModel.set_gguf_parameters(self)) a plain function stays
        unbound, as in Python."""
        for c in order:
            info = self.classes[c]
            if (c, name) in STUBS:
                return StubCall(STUBS[(c, name)], obj)
            if name in info["methods"]:
                fn = Function(pyconv.parse_function(info["methods"][name]), c)
                kind = info.get("decorators", {}).get(name)
                if kind == "staticmethod" or (kind is None and isinstance(obj, ClassRef)):
                    return fn
                if kind == "classmethod":
                    return Bound(fn, ClassRef(obj.cls) if isinstance(obj, Instance) else obj)
                return Bound(fn, obj)
            if name in info["attrs"]:
                if (c, name) not in self._class_attrs:
                    self._class_attrs[(c, name)] = self.interp.expr(ast.parse(info["attrs"][name], mode="eval").body,
                                                                    {})
                return self._class_attrs[(c, name)]
        raise Unknown(f"{order[0] if order else '?'}.{name}")

    def attr(self, obj: Any, name: str) -> Any:
        """obj.name for the converter's objects."""
        if isinstance(obj, Instance):
            if name in obj.attrs:
                return obj.attrs[name]
            return self.lookup(self.mro(obj.cls), name, obj)
        if isinstance(obj, ClassRef):
            return self.lookup(self.mro(obj.name), name, obj)
        if isinstance(obj, Super):
            order = self.mro(obj.obj.cls if isinstance(obj.obj, Instance) else obj.obj.name)
            return self.lookup(order[order.index(obj.owner) + 1:], name, obj.obj)
        if isinstance(obj, Writer):
            if name == "arch":
                return obj.arch
            if name.startswith("add_"):
                return WriterCall(obj, name)
        raise Unknown(f"attribute {name!r} of {type(obj).__name__}")

    def set_attr(self, obj: Any, name: str, value: Any) -> None:
        """obj.name = value, on the model object only."""
        if not isinstance(obj, Instance):
            raise Unknown(f"setting {name!r} on {type(obj).__name__}")
        obj.attrs[name] = value

    def call(self, fn: Any, args: list, kwargs: dict) -> Any:
        """A writer method: its metadata key recorded; a stub; anything else is Unknown."""
        if isinstance(fn, WriterCall):
            return _write(fn.writer, fn.name, self.t["gguf"]["writer"].get(fn.name), args)
        if isinstance(fn, StubCall):
            return fn.fn(self, fn.obj, *args, **kwargs)
        raise Unknown(f"calling {type(fn).__name__}")

    def super_of(self, owner: str | None, obj: Any) -> Super:
        """super() in a method of `owner`."""
        if owner is None or obj is None:
            raise Unknown("super() outside a method")
        return Super(owner, obj)


def _tensor(data: Any, dtype: Any = None) -> np.ndarray:
    """torch.tensor(list, dtype=torch.float32), as the converter builds rope factor tensors."""
    if dtype not in (None, "torch.float32"):
        raise Unknown(f"torch.tensor of dtype {dtype!r}")
    return np.asarray(data, np.float32)


def _write(writer: Writer, name: str, spec: dict | None, args: list) -> None:
    """Record what writer.<name>(*args) adds under the architecture's keys."""
    if spec is not None:
        if spec["key"] is None:
            return  # (a general.* or tokenizer key)
        if spec["key"] == "unknown" or not args:
            raise Unknown(f"writer.{name}")
        value = args[0]
        writer.kv[spec["key"]] = value.value if spec.get("enum") and isinstance(value, EnumValue) else value
        scalars = [t for t in spec.get("types") or () if t != "array"]
        _stored(writer, spec["key"], value, scalars[0] if len(scalars) == 1 else None)
    elif name in _GENERIC_ADDS and args and isinstance(args[0], str):
        if args[0].startswith(writer.arch + "."):
            key = args[0][len(writer.arch) + 1:]
            writer.kv[key] = args[1]
            _stored(writer, key, args[1], name[len("add_"):])
    else:
        raise Unknown(f"writer.{name}")


def _stored(writer: Writer, key: str, value: Any, scalar: str | None) -> None:
    """Record the GGUF type gguf's writer stores `value` as: an array's by its first element (GGUFValueType.
    get_type: a bool, an int as INT32, a float as FLOAT32, a str), a scalar's by the method's one type."""
    writer.types.pop(key, None)
    if isinstance(value, (list, tuple)) and value:
        first = value[0]
        elem = "BOOL" if isinstance(first, bool) else "INT32" if isinstance(first, int) else \
            "FLOAT32" if isinstance(first, float) else "STRING" if isinstance(first, str) else None
        if elem:
            writer.types[key] = f"ARRAY[{elem}]"
    elif not isinstance(value, (list, tuple)) and scalar not in (None, "array", "key_value"):
        writer.types[key] = scalar.upper()


def _load_hparams(world: World, obj: Any, dir_model: Any, is_mistral_format: Any = False) -> dict:
    """ModelBase.load_hparams of the model's folder, for a config transformers cannot load without remote
    code: config.json itself with load_hparams' renames of nested configs."""
    if dir_model is not world.model_dir or is_mistral_format is not False:
        raise Unknown("load_hparams of another folder or format")
    return world.interp.run(world.globals["load_hparams_renames"], [pyconv.plain(world.config)], {})


_READ = ("block_count", "context_length", "embedding_length", "attention.head_count", "attention.key_length")


def _check_types(kv: dict, where: str) -> None:
    """ValueError for a value vkrope reads that gguf's writer could not store in its field (a None block
    count, a head dim of 64.5): the converter takes them from the config as they are."""
    types = {w["key"]: w.get("types") for w in table()["gguf"]["writer"].values() if w.get("key")}
    for key, value in kv.items():
        if (key.startswith("rope.") or key.startswith(_READ)) and types.get(key) \
                and not any(_fits(value, t) for t in types[key]):
            raise ValueError(f"{where}: the converter writes {key} = {brief(value)} from the config, which is not "
                             f"a GGUF {' or '.join(types[key])}: a key of the config has the wrong type or value")


def _fits(value: Any, kind: str) -> bool:
    """Whether gguf's writer can store `value` as a field of `kind` (uint32, float32, string, array, ...)."""
    if kind in ("float32", "float64"):
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False
        try:  # (gguf's writer packs a float32 field with struct: a finite value past its range overflows)
            struct.pack("<f" if kind == "float32" else "<d", float(value))
        except OverflowError:
            return False
        return True
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, (list, tuple))
    bits = int(kind.lstrip("uint"))
    low, high = (0, 2 ** bits) if kind.startswith("u") else (-(2 ** (bits - 1)), 2 ** (bits - 1))
    return isinstance(value, int) and not isinstance(value, bool) and low <= value < high


def _model_base_init(world: World, obj: Instance, *args: Any, hparams: Any = None, **kwargs: Any) -> None:
    """ModelBase.__init__ for a config: its hparams (given, as DSpark's and NemotronH's __init__ pass
    them, else load_hparams), the writer, and nothing that reads files or tensors."""
    config = _load_hparams(world, obj, world.model_dir) if hparams is None else hparams
    arch = world.attr(obj, "model_arch")
    names = world.globals["gguf"].attrs["MODEL_ARCH_NAMES"]
    if arch not in names:
        raise Unknown(f"the GGUF name of {arch!r}")
    obj.attrs.update(hparams=config, gguf_writer=Writer(names[arch]), dir_model=world.model_dir,
                     ftype=Opaque("the file type"), fname_out=Opaque("the output path"), is_big_endian=False,
                     lazy=True, dry_run=False, remote_hf_model_id=None, model_tensors=Opaque("the model's tensors"),
                     metadata_override=None, model_name=None, dir_model_card=Opaque("the model's folder"),
                     fuse_qkv=False, target_model_dir=None)


def _format_tensor_name(world: World, obj: Any, key: Any, bid: Any = None, suffix: str = ".weight") -> str:
    """ModelBase.format_tensor_name: gguf's name of a tensor (with no block index)."""
    names = world.globals["gguf"].attrs["TENSOR_NAMES"]
    if key not in names or bid is not None:
        raise Unknown(f"the tensor name of {key!r}")
    return names[key] + suffix


STUBS = {("ModelBase", "__init__"): _model_base_init, ("ModelBase", "format_tensor_name"): _format_tensor_name,
         ("ModelBase", "load_hparams"): _load_hparams}


def architecture(config: dict) -> tuple[str | None, str]:
    """(the Hugging Face architecture llama.cpp's converter would pick for `config`, get_model_architecture
    run on it, or None; why None)."""
    world = World(config)
    try:
        renamed = world.interp.run(world.globals["load_hparams_renames"], [pyconv.plain(config)], {})
        text = world.globals["ModelType"].attrs["TEXT"]
        arch = world.interp.run(world.globals["get_model_architecture"], [renamed, text], {})
    except (Unknown, pyconv.Raised) as exc:
        return None, f"the converter cannot tell its architecture ({exc})"
    if not isinstance(arch, str):
        return None, f"its architectures name none ({brief(config.get('architectures'))})"
    if arch not in table()["architectures"]:
        return None, f"its architecture {arch!r} is not one llama.cpp's converter registers"
    return arch, ""


def run(config: dict, hf_arch: str) -> tuple[str, dict, dict, set, Any, dict]:
    """What the converter writes for `config`: (GGUF architecture, its metadata without the prefix, rope
    tensors, the keys its code looked up, the rope type it understood the config to declare, the GGUF
    type of each key where the writer says one). Unknown or pyconv.Raised where it cannot run or refuses."""
    world = World(config)
    obj = Instance(table()["architectures"][hf_arch]["class"])
    world.interp.call(world.attr(obj, "__init__"), [world.model_dir, Opaque("ftype"), Opaque("out")], {})
    world.interp.call(world.attr(obj, "set_gguf_parameters"), [], {})
    extra = world.interp.call(world.attr(obj, "generate_extra_tensors"), [], {}) or []
    tensors = {name: np.asarray(t, np.float32).reshape(-1) for name, t in extra
               if name in gguf_program.factor_tensors()}
    writer = obj.attrs["gguf_writer"]
    declared = obj.attrs.get("rope_parameters")
    kv = {k: (list(v) if isinstance(v, tuple) else v) for k, v in writer.kv.items()}
    return writer.arch, kv, tensors, world.interp.keys_read, \
        declared.get("rope_type") if isinstance(declared, dict) else None, dict(writer.types)


def convert(config: dict, hf_arch: str, unread_ok: bool = False) -> tuple[str, dict, dict, dict, dict]:
    """run(), refused with a ValueError naming the converter class where it cannot run, where the converter
    refuses the config, where it drops the config's rope type (llama.cpp then runs the model without it, as
    for InternLM 2's "dynamic" NTK scaling), or (unless `unread_ok`, the caller's like="llama.cpp") where the
    config has keys about positions or head sizes that the converter does not use. Returns (GGUF
    architecture, metadata, rope tensors, those unused keys with their values, the GGUF types run() says)."""
    info = table()["architectures"][hf_arch]
    where = f"config: {hf_arch} (llama.cpp's converter {info['class']}, {table()['source']})"
    if info["qk_rows"] not in ("none", "llama"):
        raise ValueError(f"{where}: how the converter orders the Q and K rows is {info['qk_rows']} (measured by "
                         "scripts/gguf_convert_table.py on tests/data/remote_configs), so the checkpoint's pairs "
                         "would be a guess; if the model's attention is a transformers model type's, pass "
                         "like='<that model type>'")
    try:
        arch, kv, tensors, looked_up, declared, types = run(config, hf_arch)
        unused = _unused_keys(config, hf_arch, (arch, kv, tensors), looked_up)
    except Unknown as exc:
        raise ValueError(f"{where}: vkrope cannot run the converter's code on this config ({exc}); if the model's "
                         "attention is a transformers model type's, pass like='<that model type>'") from None
    except pyconv.Raised as exc:
        raise ValueError(f"{where}: the converter refuses this config ({exc}): a key it needs is missing or not "
                         "what it expects") from None
    except (*pyconv.PY_ERRORS, RecursionError) as exc:  # (the interpreter's own limit: a refusal, not a crash)
        raise ValueError(f"{where}: vkrope cannot run the converter's code on this config ({type(exc).__name__}: "
                         f"{str(exc)[:200]})") from None
    _check_types(kv, where)
    if declared not in (None, "default", "none") and "rope.scaling.type" not in kv and not tensors:
        raise ValueError(f"{where}: the converter drops the config's rope type {declared!r}, so llama.cpp's "
                         "RoPE is not the model's; if the model's attention is a transformers model type's "
                         "(InternLM 2's is Llama's), pass like='<that model type>'")
    if unused and not unread_ok:
        raise ValueError(f"{where}: the converter does not use "
                         f"{', '.join(f'{k}={brief(v)}' for k, v in unused.items())}: llama.cpp's reading leaves "
                         "them out, which is the model's only if its own code does too (Qwen 1's use_dynamic_ntk "
                         "changes its frequencies past seq_length); if so, pass like='llama.cpp' (vkrope config "
                         "--like llama.cpp)")
    return arch, kv, tensors, unused, types


_ROPE_KEY = re.compile(r"rope|rotary|ntk|position|pos_|logn|theta|head_dim|head_size|channels|partial|seq_len")


def _matters(v: Any) -> bool:
    """A key's value other than absent or off (1 and True matter: Qwen 1's use_dynamic_ntk: 1 is on)."""
    return not (v is None or v is False or (isinstance(v, str) and v in ("", "default", "none"))
                or (isinstance(v, (dict, list)) and not v))


def _unused_keys(config: dict, hf_arch: str, result: tuple, looked_up: set) -> dict[str, Any]:
    """The config's keys about positions or head sizes, with a value that matters, that the converter does
    not use: never looked up, or looked up and yet the metadata is the same with another value (TextModel
    looks up rope_theta, rotary_emb_base, ... and takes the first it finds). llama.cpp runs the model without
    them, and so would vkrope; listed in the ModelRope's `ignored`."""
    out = {}
    if _matters(config.get("per_layer_config")):  # (transformers 5's overrides per layer: the converter reads one
        out["per_layer_config"] = config["per_layer_config"]  # config for every layer)
    paths = _candidate_keys(config)
    if len(paths) > MAX_CANDIDATES:
        raise Unknown(f"{len(paths)} keys about positions or head sizes (vkrope checks at most {MAX_CANDIDATES})")
    for path in paths:
        key, value = ".".join(path[-2:]) if len(path) > 1 and path[-2] != "text_config" else path[-1], \
            _get(config, path)
        if not _matters(value):
            continue
        if path[-1] in looked_up:
            changed = pyconv.plain(config)
            _get(changed, path[:-1])[path[-1]] = _other(value)
            try:
                if _same(run(changed, hf_arch)[:3], result):
                    out[key] = value
            except (Unknown, pyconv.Raised):
                pass  # (the converter reacts to it)
        else:
            out[key] = value
    return out


MAX_CANDIDATES = 32  # keys whose use the converter is rerun to decide (each rerun is a whole run)


def _other(v: Any) -> Any:
    """Another value of the same kind (a key the converter uses changes the metadata with it)."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v + 1.0 if math.isfinite(v) and v + 1.0 != v else 2.0 if v != 2.0 else 3.0
    if isinstance(v, str):
        return v + "_"
    if isinstance(v, list):
        return v + v[-1:]
    return {**v, "_": 1} if isinstance(v, dict) else None


def _candidate_keys(config: dict) -> list[tuple[str, ...]]:
    """Paths of the keys about positions or head sizes, at the top and in text_config; of a dict among
    them (rope_scaling), its own keys instead."""
    out = []
    for prefix, part in (((), config), (("text_config",), config.get("text_config"))):
        if isinstance(part, dict):
            for k, v in part.items():
                if isinstance(k, str) and _ROPE_KEY.search(k):
                    out += [(*prefix, k, sub) for sub in v if isinstance(sub, str)] if isinstance(v, dict) \
                        else [(*prefix, k)]
    return out


def _get(config: dict, path: tuple[str, ...]) -> Any:
    for key in path:
        config = config[key]
    return config


def _same(a: tuple, b: tuple) -> bool:
    """Two (arch, metadata, tensors) alike (a NaN the converter computes equals a NaN: not a change)."""
    return a[0] == b[0] and _alike(a[1], b[1]) and sorted(a[2]) == sorted(b[2]) and \
        all(np.array_equal(a[2][k], b[2][k], equal_nan=True) for k in a[2])


def _alike(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_alike(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def from_config(config: dict, hf_arch: str, unread_ok: bool, *, layer_type: str | None, layer: int | None,
                angle: str) -> ModelRope | None:
    """from_hf for a config the converter reads: the RoPE of a layer, a layer type, or every rotating layer
    (naming neither: NoRopeLayers where llama.cpp's graph rotates none)."""
    converted = convert(config, hf_arch, unread_ok)
    rope = _read(converted, hf_arch, layer_type, layer, angle)
    if rope is None and layer is None and layer_type is None:
        raise gguf_reading.no_rope_layers(f"config ({hf_arch}, read as llama.cpp's converter writes it)",
                                          converted[0], converted[1])
    return rope


def layers(config: dict, hf_arch: str, unread_ok: bool, angle: str) -> tuple[ModelRope | None, ...]:
    """Every layer's RoPE (None where llama.cpp's graph applies none), from one run of the converter."""
    converted = convert(config, hf_arch, unread_ok)
    n = converted[1].get("block_count")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 4096:
        raise ValueError(f"config ({hf_arch}): the converter writes block count {brief(n)} from the config's "
                         "layer count (num_hidden_layers, num_layers, n_layer): it must be an integer in [1, 4096]")
    return tuple(_read(converted, hf_arch, None, i, angle) for i in range(n))


def layer_types(config: dict, hf_arch: str, unread_ok: bool) -> tuple[str, ...]:
    """("full_attention", "sliding_attention") when llama.cpp gives the sliding layers another RoPE, else ()."""
    try:
        _read(convert(config, hf_arch, unread_ok), hf_arch, None, None, "float32")
    except gguf_reading.NeedsLayerType:
        return ("full_attention", "sliding_attention")
    return ()


def _read(converted: tuple, hf_arch: str, layer_type: str | None, layer: int | None,
          angle: str) -> ModelRope | None:
    arch, kv, tensors, unused, types = converted
    info = table()["architectures"][hf_arch]
    where = f"config ({hf_arch}, read as llama.cpp's converter {info['class']} writes it)"
    rope = gguf_reading.layer_rope(arch, kv, tensors, where, layer_type, layer, angle,
                                   "if the model's attention is a transformers model type's, pass like='<that model "
                                   "type>'", types, complete=False)
    if rope is None:
        return None
    rows = info["qk_rows"]  # ("none" or "llama": convert() refused the others)
    # (LlamaModel.permute reorders each whole head so that llama.cpp's adjacent pairs are the checkpoint's
    # rotate-half pairs: only where the rotation spans the head, and not for NeoX-style graphs)
    if rows == "llama" and (not rope.interleaved
                            or rope.rotary_dim != rope.head_dim):
        raise ValueError(f"{where}: how the converter reorders the Q and K rows ({rows}: measured by "
                         "scripts/gguf_convert_table.py) does not say the checkpoint's pairs for this RoPE, so "
                         "they would be a guess; if the model's attention is a transformers model type's, pass "
                         "like='<that model type>'")
    return replace(rope, interleaved=rope.interleaved and rows == "none", model=f"{hf_arch} -> {arch}",
                   source=where, ignored=tuple(f"{k}={brief(v)}" for k, v in sorted(unused.items())))

"""A model's RoPE from a Hugging Face config that transformers runs only
with the model's remote code (ChatGLM 2 / 3, InternLM 2, MiniCPM, Baichuan,
Qwen 1, ...), read as llama.cpp's converter reads it: the converter's own
methods (vkrope/data/gguf_convert.json, copied from llama.cpp by
scripts/gguf_convert_table.py) run on the config by a whitelisted
interpreter (pyconv.py) give the GGUF metadata, and from_gguf's reading of
that metadata gives the RoPE. The pairs are the checkpoint's: llama.cpp's
adjacent ("normal") pairs are rotate-half pairs of the config's weights
where the converter permutes the Q and K rows, and adjacent where it does
not (ChatGLM). Whatever the interpreter cannot run is refused.
"""

from __future__ import annotations

import ast
import functools
import json
import re
from dataclasses import replace
from importlib import resources
from typing import Any

import numpy as np

from . import gguf as gguf_reading
from . import pyconv
from .pyconv import Bound, Builtin, EnumValue, Function, Namespace, Opaque, Unknown
from .rope import ModelRope

_GENERIC_ADDS = ("add_uint8", "add_int8", "add_uint16", "add_int16", "add_uint32", "add_int32", "add_uint64",
                 "add_int64", "add_float32", "add_float64", "add_bool", "add_string", "add_array", "add_key_value")


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """vkrope/data/gguf_convert.json."""
    return json.loads(resources.files("vkrope").joinpath("data/gguf_convert.json").read_text())


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

    @functools.lru_cache(maxsize=None)  # noqa: B019  (one World per config)
    def mro(self, cls: str) -> tuple[str, ...]:
        """C3 linearisation of the table's classes."""
        seqs = [list(self.mro(b)) for b in self.classes[cls]["bases"]] + [list(self.classes[cls]["bases"])]
        out = [cls]
        while any(seqs):
            head = next((s[0] for s in seqs if s and not any(s[0] in o[1:] for o in seqs)), None)
            if head is None:
                raise Unknown(f"no method order for {cls}")
            out.append(head)
            seqs = [s[1:] if s and s[0] == head else s for s in seqs]
        return tuple(out)

    def lookup(self, order: tuple[str, ...], name: str, obj: Any) -> Any:
        """A method (bound to obj) or class attribute found along `order`."""
        for c in order:
            info = self.classes[c]
            if (c, name) in STUBS:
                return StubCall(STUBS[(c, name)], obj)
            if name in info["methods"]:
                fn = Function(pyconv.parse_function(info["methods"][name]), c)
                kind = info.get("decorators", {}).get(name)
                if kind == "staticmethod":
                    return fn
                return Bound(fn, ClassRef(obj.cls) if kind == "classmethod" and isinstance(obj, Instance) else obj)
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
        """A writer method: its metadata key recorded; anything else is Unknown."""
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
    elif name in _GENERIC_ADDS and args and isinstance(args[0], str):
        if args[0].startswith(writer.arch + "."):
            writer.kv[args[0][len(writer.arch) + 1:]] = args[1]
    else:
        raise Unknown(f"writer.{name}")


def _load_hparams(world: World, obj: Any, dir_model: Any, is_mistral_format: Any = False) -> dict:
    """ModelBase.load_hparams of the model's folder, for a config transformers cannot load without remote
    code: config.json itself with load_hparams' renames of nested configs."""
    if dir_model is not world.model_dir or is_mistral_format is not False:
        raise Unknown("load_hparams of another folder or format")
    return world.interp.run(world.globals["load_hparams_renames"], [pyconv.copy_config(world.config)], {})


def _model_base_init(world: World, obj: Instance, *args: Any, **kwargs: Any) -> None:
    """ModelBase.__init__ for a config: its hparams (load_hparams), the writer, and nothing that reads
    files or tensors."""
    config = _load_hparams(world, obj, world.model_dir)
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


def architecture(config: dict) -> str | None:
    """The Hugging Face architecture llama.cpp's converter would pick for `config` (get_model_architecture,
    run on the config), or None when it names none the converter registers."""
    world = World(config)
    try:
        renamed = world.interp.run(world.globals["load_hparams_renames"], [pyconv.copy_config(config)], {})
        text = world.globals["ModelType"].attrs["TEXT"]
        arch = world.interp.run(world.globals["get_model_architecture"], [renamed, text], {})
    except (Unknown, pyconv.Raised):
        return None
    return arch if isinstance(arch, str) and arch in table()["architectures"] else None


def run(config: dict, hf_arch: str) -> tuple[str, dict, dict, dict, Any]:
    """What the converter writes for `config`: (GGUF architecture, its metadata without the prefix, rope
    tensors, the config's keys about positions it never reads (with their values), the rope type it
    understood the config to declare). Unknown or pyconv.Raised where it cannot run or refuses."""
    world = World(config)
    obj = Instance(table()["architectures"][hf_arch]["class"])
    world.interp.call(world.attr(obj, "__init__"), [world.model_dir, Opaque("ftype"), Opaque("out")], {})
    world.interp.call(world.attr(obj, "set_gguf_parameters"), [], {})
    extra = world.interp.call(world.attr(obj, "generate_extra_tensors"), [], {}) or []
    tensors = {name: np.asarray(t, np.float32).reshape(-1) for name, t in extra
               if name in ("rope_freqs.weight", "rope_factors_short.weight", "rope_factors_long.weight")}
    writer = obj.attrs["gguf_writer"]
    declared = obj.attrs.get("rope_parameters")
    unread = _unread_rope_keys(obj.attrs["hparams"], world.interp.keys_read)
    kv = {k: (list(v) if isinstance(v, tuple) else v) for k, v in writer.kv.items()}
    return writer.arch, kv, tensors, unread, declared.get("rope_type") if isinstance(declared, dict) else None


def convert(config: dict, hf_arch: str, unread_ok: bool = False) -> tuple[str, dict, dict, dict]:
    """run(), refused with a ValueError naming the converter class where it cannot run, where the converter
    refuses the config, where it drops the config's rope type (llama.cpp then runs the model without it, as
    for InternLM 2's "dynamic" NTK scaling), or (unless `unread_ok`, the caller's like="llama.cpp") where the
    config has keys about positions that the converter never reads."""
    where = f"config: {hf_arch} (llama.cpp's converter {table()['architectures'][hf_arch]['class']}, " \
            f"{table()['source']})"
    try:
        arch, kv, tensors, unread, declared = run(config, hf_arch)
    except Unknown as exc:
        raise ValueError(f"{where}: vkrope cannot run the converter's code on this config ({exc}); pass "
                         "like='<model type>' to read it as a transformers model type does") from None
    except pyconv.Raised as exc:
        raise ValueError(f"{where}: the converter refuses this config ({exc})") from None
    except (*pyconv.PY_ERRORS, RecursionError) as exc:  # (the interpreter's own limit: a refusal, not a crash)
        raise ValueError(f"{where}: vkrope cannot run the converter's code on this config ({type(exc).__name__}: "
                         f"{exc})") from None
    if declared not in (None, "default", "none") and "rope.scaling.type" not in kv and not tensors:
        raise ValueError(f"{where}: the converter drops the config's rope type {declared!r}, so llama.cpp's "
                         "RoPE is not the model's; if the model's attention is a transformers model type's "
                         "(InternLM 2's is Llama's), pass like='<that model type>'")
    if unread and not unread_ok:
        raise ValueError(f"{where}: the converter never reads {', '.join(f'{k}={v!r}' for k, v in unread.items())}"
                         " (llama.cpp runs the model without them; the model's own code may not: Qwen 1's "
                         "use_dynamic_ntk); pass like='llama.cpp' to read the config as llama.cpp does")
    return arch, kv, tensors, unread


_ROPE_KEY = re.compile(r"rope|rotary|ntk|pos_emb|position_embedding")


def _matters(v: Any) -> bool:
    """A key's value other than absent, off or one (Qwen 1's use_dynamic_ntk: true matters)."""
    return not (v is None or v is False or v in ("default", "none", {}, [])
                or (type(v) in (int, float) and v == 1))


def _unread_rope_keys(hparams: dict, read: set) -> dict[str, Any]:
    """The config's keys about positions that the converter never looked up, with a value that matters:
    llama.cpp runs the model without them, and so does vkrope; they are reported in the ModelRope's
    `ignored`."""
    out = {}
    for part in (hparams, hparams.get("text_config")):
        if isinstance(part, dict):
            out.update({k: v for k, v in part.items()
                        if isinstance(k, str) and _ROPE_KEY.search(k) and k not in read and _matters(v)})
    return out


def from_config(config: dict, hf_arch: str, unread_ok: bool, *, layer_type: str | None, layer: int | None,
                angle: str) -> ModelRope | None:
    """from_hf for a config the converter reads: the RoPE of a layer, a layer type, or every rotating layer."""
    return _read(convert(config, hf_arch, unread_ok), hf_arch, layer_type, layer, angle)


def layers(config: dict, hf_arch: str, unread_ok: bool, angle: str) -> tuple[ModelRope | None, ...]:
    """Every layer's RoPE (None where llama.cpp's graph applies none), from one run of the converter."""
    converted = convert(config, hf_arch, unread_ok)
    n = converted[1].get("block_count")
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"config ({hf_arch}): the converter writes no block count ({n!r})")
    return tuple(_read(converted, hf_arch, None, i, angle) for i in range(n))


def layer_types(config: dict, hf_arch: str, unread_ok: bool) -> tuple[str, ...]:
    """("full_attention", "sliding_attention") when llama.cpp gives the sliding layers another RoPE, else ()."""
    try:
        _read(convert(config, hf_arch, unread_ok), hf_arch, None, None, "float32")
    except ValueError as exc:
        if "pass layer_type=" in str(exc):
            return ("full_attention", "sliding_attention")
        raise
    return ()


def _read(converted: tuple, hf_arch: str, layer_type: str | None, layer: int | None,
          angle: str) -> ModelRope | None:
    arch, kv, tensors, unread = converted
    info = table()["architectures"][hf_arch]
    where = f"config ({hf_arch}, read as llama.cpp's converter {info['class']} writes it)"
    rope = gguf_reading.layer_rope(arch, kv, tensors, where, layer_type, layer, angle,
                                   "if the model's attention is a transformers model type's, pass like='<that model "
                                   "type>'")
    if rope is None:
        return None
    permutes = info["permutes_qk"]
    if permutes == "unknown" or (permutes and not rope.interleaved):
        raise ValueError(f"{where}: whether the converter reorders the Q and K rows ({permutes}) for "
                         f"{arch}'s pairs is unknown, so the checkpoint's pairs would be a guess")
    # (llama.cpp's adjacent pairs are rotate-half pairs of the checkpoint the converter permuted)
    return replace(rope, interleaved=rope.interleaved and not permutes, model=f"{hf_arch} -> {arch}",
                   source=where, ignored=tuple(f"{k}={v!r}" for k, v in sorted(unread.items())))

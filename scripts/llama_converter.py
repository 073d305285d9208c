"""Running llama.cpp's own converter (its conversion/ package) on a config,
for scripts/gguf_convert_table.py and scripts/gguf_convert_golden.py. Needs
torch, transformers and numpy (a separate venv, never vkrope's).

`load(tree)` imports the converter of a llama.cpp tree; `instance(...)`
makes its model object for a config as convert_hf_to_gguf.py does for a
model with remote code (AutoConfig fails, so load_hparams reads
config.json itself), without reading tensors; `metadata(obj)` runs
set_gguf_parameters and generate_extra_tensors; `qk_rows(gguf, obj, kv)` feeds
index-coded Q and K weights through the class's own modify_tensors and says
how it reorders each head's rows; `configs(cb)` the configs both scripts
run: tests/data/remote_configs and transformers' default config of every
model type whose architecture the converter registers (one per class).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import pathlib
import sys
import tempfile
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
REMOTE = ROOT / "tests" / "data" / "remote_configs"
ROPE_TENSORS = ("rope_freqs.weight", "rope_factors_short.weight", "rope_factors_long.weight")


def load(tree: pathlib.Path) -> tuple[Any, Any]:
    """(conversion.base, gguf) of a llama.cpp tree, every model class registered."""
    sys.path[:0] = [str(tree), str(tree / "gguf-py")]
    import gguf  # noqa: PLC0415
    import conversion  # noqa: PLC0415
    from conversion import base  # noqa: PLC0415

    conversion.load_all_models()
    logging.disable(logging.CRITICAL)
    return base, gguf


def _no_auto_config(*args: Any, **kwargs: Any) -> Any:
    raise ValueError("remote code")  # (load_hparams then reads config.json, as for a model with remote code)


def instance(cb: Any, gguf: Any, config: dict, arch: str) -> Any:
    """The converter's model object for `config` (its __init__ run; ModelBase.__init__ reads no tensors)."""
    cls = cb.ModelBase._model_classes[cb.ModelType.TEXT][arch]  # noqa: SLF001
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "config.json").write_text(json.dumps(config))

    def init(self: Any, *args: Any, hparams: dict | None = None, **kwargs: Any) -> None:
        self.dir_model, self.ftype = folder, gguf.LlamaFileType.MOSTLY_F16
        self.hparams = cb.ModelBase.load_hparams(folder, False) if hparams is None else hparams
        self.model_tensors, self.lazy, self.dry_run, self.remote_hf_model_id = {}, True, False, None
        self.fuse_qkv, self.metadata_override, self.model_name, self.is_big_endian = False, None, None, False
        self.fuse_gate_up_exps, self.target_model_dir = False, None
        for buf in ("_q_buffer", "_k_buffer", "_v_buffer", "_gate_exp_buffer", "_up_exp_buffer"):
            setattr(self, buf, {})
        self.gguf_writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[self.model_arch])

    saved = cb.ModelBase.__init__, cb.AutoConfig.from_pretrained
    cb.ModelBase.__init__, cb.AutoConfig.from_pretrained = init, _no_auto_config
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            obj = cls.__new__(cls)
            obj.__init__(folder, None, None)
    finally:
        cb.ModelBase.__init__, cb.AutoConfig.from_pretrained = saved
    return obj


def metadata(obj: Any) -> dict:
    """{"arch", "kv" (the architecture's keys), "tensors" (rope tensors)} the converter writes."""
    import numpy as np  # noqa: PLC0415

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        obj.set_gguf_parameters()
        extra = list(obj.generate_extra_tensors())
    w = obj.gguf_writer
    kv = {}
    for shard in w.kv_data:
        for key, value in shard.items():
            if key.startswith(w.arch + "."):
                v = value.value
                kv[key[len(w.arch) + 1:]] = [x.item() if hasattr(x, "item") else x for x in v] \
                    if isinstance(v, (list, tuple)) else (v.item() if hasattr(v, "item") else v)
    tensors = {n: np.asarray(t.float().numpy(), np.float32).reshape(-1).tolist() for n, t in extra
               if n in ROPE_TENSORS}
    return {"arch": w.arch, "kv": kv, "tensors": tensors}


def _order(rows: list[int], hd: int) -> str:
    """How each head of hd output rows of one projection takes its input rows (`rows`: the input row of
    each output row): "none" (in order), "llama" (LlamaModel.permute: output 2i + c of a head is the head's
    input c * hd / 2 + i), or "other"."""
    if not rows or len(rows) % hd or hd % 2:
        return "other"
    llama = [(j % 2) * (hd // 2) + j // 2 for j in range(hd)]
    seen = set()
    for h in range(len(rows) // hd):
        chunk = rows[h * hd:(h + 1) * hd]
        rel = [r - min(chunk) for r in chunk]
        seen.add("none" if rel == list(range(hd)) else "llama" if rel == llama else "other")
    return seen.pop() if len(seen) == 1 else "other"


def _own_names(obj: Any) -> set[str]:
    """Tensor names of block 0 that the class's modify_tensors methods spell out (InternLM 2's
    f"model.layers.{bid}.attention.wqkv", Baichuan's W_pack): names its tensor map may not list."""
    import ast  # noqa: PLC0415
    import inspect  # noqa: PLC0415
    import textwrap  # noqa: PLC0415

    out = set()
    for cls in type(obj).__mro__:
        fn = cls.__dict__.get("modify_tensors")
        if fn is None:
            continue
        for n in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(fn)))):
            if isinstance(n, ast.JoinedStr):
                text = ast.unparse(n)[2:-1].replace("{bid}", "0")
                if "{" not in text and ".0." in text:
                    out.add(text.removesuffix(".weight"))
    return out


def qk_rows(gguf: Any, obj: Any, kv: dict) -> str:
    """How the class's modify_tensors reorders each head's Q and K rows, over every Q / K / QKV name of its
    tensor map: "other" if any name comes out reordered otherwise, else "llama" if any comes out as
    LlamaModel.permute leaves it, else "none"; "unmeasured" when no name goes through."""
    import torch  # noqa: PLC0415

    heads = kv.get("attention.head_count")
    heads = heads[0] if isinstance(heads, list) else heads
    kv_heads = kv.get("attention.head_count_kv", heads)
    kv_heads = kv_heads[0] if isinstance(kv_heads, list) else kv_heads
    hidden = kv.get("embedding_length")
    hd = kv.get("attention.key_length") or (hidden // heads if hidden and heads else None)
    if not (heads and kv_heads and hidden and hd):
        return "unmeasured"
    kinds = {gguf.MODEL_TENSOR.ATTN_Q: "q", gguf.MODEL_TENSOR.ATTN_K: "k", gguf.MODEL_TENSOR.ATTN_QKV: "qkv"}
    mapped = {name: kinds[kind] for name, (kind, _) in obj.tensor_map.mapping.items()
              if kind in kinds and ".0." in name and not name.endswith((".weight", ".bias"))}
    names = sorted(mapped) + sorted(_own_names(obj) - set(mapped))
    shapes = {"q": [heads * hd], "k": [kv_heads * hd], "qkv": [(heads + 2 * kv_heads) * hd, 3 * hidden]}
    found: set[str] = set()
    for name in names:
        for rows in shapes[mapped[name]] if name in mapped else [r for v in shapes.values() for r in v]:
            data = torch.arange(rows, dtype=torch.float32)[:, None].repeat(1, hidden)
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    outs = list(obj.modify_tensors(data, name + ".weight", 0))
            except Exception:  # noqa: BLE001, S112  (a name or shape this class does not take)
                continue
            for out_name, t in outs:
                part = out_name.split(".")[2] if out_name.count(".") >= 2 else ""
                if part in ("attn_q", "attn_k", "attn_qkv") and t.dim() == 2:
                    ids = [int(v) for v in t[:, 0].tolist()]
                    n = heads * hd if part != "attn_k" else kv_heads * hd
                    found.add(_order(ids[:n], hd))
            if outs:
                break
    # (a class reorders the rows of the names its checkpoints use and passes the map's other spellings through)
    if not found:
        return "unmeasured"
    return "other" if "other" in found else "llama" if "llama" in found else "none"


def _types() -> dict[str, str]:
    """transformers' architecture class names -> a model type of theirs (its auto mappings)."""
    from transformers.models.auto import modeling_auto  # noqa: PLC0415

    types: dict[str, str] = {}
    for name in dir(modeling_auto):
        mapping = getattr(modeling_auto, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(mapping, dict):
            for model_type, cls in mapping.items():
                for c in cls if isinstance(cls, (list, tuple)) else (cls,):
                    types.setdefault(c, model_type)
    return types


def transformers_architectures() -> set[str]:
    """The architecture class names transformers has (its auto mappings' and its top-level names)."""
    import transformers  # noqa: PLC0415

    return set(_types()) | {n for n in dir(transformers) if n[:1].isupper()}


def configs(cb: Any, defaults: bool = True) -> list[tuple[str, dict]]:
    """(name, config): the remote-code configs, then (`defaults`) transformers' defaults, one per class."""
    from transformers import CONFIG_MAPPING  # noqa: PLC0415

    out = [(p.stem, json.loads(p.read_text())) for p in sorted(REMOTE.glob("*.json"))]
    if not defaults:
        return out
    types = _types()
    seen = set()
    for arch, cls in sorted(cb.ModelBase._model_classes[cb.ModelType.TEXT].items()):  # noqa: SLF001
        if arch not in types or cls in seen:
            continue
        try:
            config = CONFIG_MAPPING[types[arch]]().to_dict()
        except Exception:  # noqa: BLE001, S112  (a config class that needs arguments)
            continue
        seen.add(cls)
        config["architectures"] = [arch]
        out.append((f"{types[arch]}:{arch}", json.loads(json.dumps(config, default=str))))
    return out


def main() -> int:
    """Print what the converter writes for config.json files, and how it orders their Q / K rows."""
    import argparse  # noqa: PLC0415

    ap = argparse.ArgumentParser(description="Run llama.cpp's converter on config.json files: its metadata "
                                             "and its Q / K row order.")
    ap.add_argument("--llama-cpp", required=True, help="a llama.cpp source tree")
    ap.add_argument("configs", nargs="+", help="config.json files")
    args = ap.parse_args()
    cb, gguf = load(pathlib.Path(args.llama_cpp))
    for path in args.configs:
        config = json.loads(pathlib.Path(path).read_text())
        obj = instance(cb, gguf, config, config["architectures"][0])
        meta = metadata(obj)
        print(f"{path}: {meta['arch']} {meta['kv']}; Q / K rows {qk_rows(gguf, obj, meta['kv'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

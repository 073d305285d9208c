"""Write tests/data/gguf_convert_golden.json.gz: the GGUF metadata llama.cpp's
own converter writes for a set of configs, for tests/models/test_hf_remote.py
to compare with what vkrope's interpreter of the converter (vkrope/models/
gguf_convert.py) gives. Run it in a separate venv with torch, transformers
and numpy, against the llama.cpp tree the committed table was read from
(scripts/gguf_convert_table.py; its source is recorded with the golden):

    python scripts/gguf_convert_golden.py --llama-cpp PATH

The configs: tests/data/remote_configs/*.json (families transformers runs
only with remote code), and transformers' default config of every model
type whose architecture the converter registers (one per converter class),
with `architectures` set to it. For each, the converter's class runs as
convert_hf_to_gguf.py runs it for a model with remote code (AutoConfig
fails, so load_hparams reads config.json itself, as vkrope does), except
that ModelBase.__init__ reads no tensors: load_hparams on a folder holding
the config, then set_gguf_parameters and generate_extra_tensors; an
exception it raises is recorded as the result.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import gzip
import io
import json
import logging
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "gguf_convert_golden.json.gz"
REMOTE = ROOT / "tests" / "data" / "remote_configs"
TABLE = ROOT / "vkrope" / "data" / "gguf_convert.json"


def table_source() -> str:
    """The llama.cpp the committed table was read from (the golden must come from the same tree)."""
    return json.loads(TABLE.read_text())["source"]


ROPE_TENSORS = ("rope_freqs.weight", "rope_factors_short.weight", "rope_factors_long.weight")


def _no_auto_config(*args, **kwargs):
    """load_hparams' AutoConfig fails, as for a model with remote code: the converter reads config.json."""
    raise ValueError("remote code")


def run_converter(cb, gguf, config: dict, arch: str) -> dict:
    """The converter's metadata (the architecture's keys) and rope tensors for one config."""
    import numpy as np  # noqa: PLC0415

    cls = cb.ModelBase._model_classes[cb.ModelType.TEXT][arch]
    folder = pathlib.Path(tempfile.mkdtemp())
    (folder / "config.json").write_text(json.dumps(config))

    def init(self, *args, **kwargs):  # ModelBase.__init__ without the tensors and the output file
        self.dir_model, self.ftype = folder, gguf.LlamaFileType.MOSTLY_F16
        self.hparams = cb.ModelBase.load_hparams(folder, False)
        self.model_tensors, self.lazy, self.dry_run, self.remote_hf_model_id = {}, True, False, None
        self.fuse_qkv, self.metadata_override, self.model_name, self.is_big_endian = False, None, None, False
        self.gguf_writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[self.model_arch])

    original, auto = cb.ModelBase.__init__, cb.AutoConfig.from_pretrained
    cb.ModelBase.__init__ = init
    cb.AutoConfig.from_pretrained = _no_auto_config
    try:
        obj = cls.__new__(cls)
        obj.__init__(folder, None, None)
        obj.set_gguf_parameters()
        extra = list(obj.generate_extra_tensors())
    except Exception as exc:  # noqa: BLE001  (what the converter raises is the result)
        return {"raises": type(exc).__name__}
    finally:
        cb.ModelBase.__init__, cb.AutoConfig.from_pretrained = original, auto
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


def configs(cb) -> list[tuple[str, dict]]:
    """(name, config) for the remote-code configs and transformers' defaults, one per converter class."""
    from transformers import CONFIG_MAPPING  # noqa: PLC0415
    from transformers.models.auto import modeling_auto  # noqa: PLC0415

    out = [(p.stem, json.loads(p.read_text())) for p in sorted(REMOTE.glob("*.json"))]
    types: dict[str, str] = {}
    for name in dir(modeling_auto):
        mapping = getattr(modeling_auto, name)
        if name.endswith("_MAPPING_NAMES") and isinstance(mapping, dict):
            for model_type, cls in mapping.items():
                for c in cls if isinstance(cls, (list, tuple)) else (cls,):
                    types.setdefault(c, model_type)
    seen = set()
    for arch, cls in sorted(cb.ModelBase._model_classes[cb.ModelType.TEXT].items()):
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", required=True, help="a llama.cpp source tree (the table's)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    tree = pathlib.Path(args.llama_cpp)
    sys.path[:0] = [str(tree), str(tree / "gguf-py")]
    import gguf  # noqa: PLC0415
    import conversion  # noqa: PLC0415
    from conversion import base as cb  # noqa: PLC0415

    conversion.load_all_models()
    logging.disable(logging.CRITICAL)
    golden = []
    for name, config in configs(cb):
        arch = config.get("architectures", [None])[0]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            result = run_converter(cb, gguf, copy.deepcopy(config), arch)
        golden.append({"name": name, "config": config, "architecture": arch, "result": result})
    with gzip.open(args.out, "wt") as f:
        json.dump({"source": table_source(), "configs": golden}, f, sort_keys=True)
    raised = sum(1 for g in golden if "raises" in g["result"])
    print(f"wrote {args.out}: {len(golden)} configs ({raised} the converter refuses)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Write tests/data/gguf_convert_golden.json.gz: the GGUF metadata llama.cpp's
own converter writes for a set of configs, for tests/models/test_hf_remote.py
to compare with what vkrope's interpreter of the converter (vkrope/models/
gguf_convert.py) gives. Run it in a separate venv with torch, transformers
and numpy (scripts/llama_converter.py runs the converter), against the
llama.cpp tree the committed table was read from
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
import copy
import gzip
import json
import pathlib
import sys

import llama_converter

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "data" / "gguf_convert_golden.json.gz"
TABLE = ROOT / "vkrope" / "data" / "gguf_convert.json"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", required=True, help="a llama.cpp source tree (the table's)")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    cb, gguf = llama_converter.load(pathlib.Path(args.llama_cpp))
    golden = []
    for name, config in llama_converter.configs(cb):
        arch = config["architectures"][0]
        try:
            result = llama_converter.metadata(llama_converter.instance(cb, gguf, copy.deepcopy(config), arch))
        except Exception as exc:  # noqa: BLE001  (what the converter raises is the result)
            result = {"raises": type(exc).__name__}
        golden.append({"name": name, "config": config, "architecture": arch, "result": result})
    with gzip.open(args.out, "wt") as f:
        json.dump({"source": json.loads(TABLE.read_text())["source"], "configs": golden}, f, sort_keys=True)
    raised = sum(1 for g in golden if "raises" in g["result"])
    print(f"wrote {args.out}: {len(golden)} configs ({raised} the converter refuses)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

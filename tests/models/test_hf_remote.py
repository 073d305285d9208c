"""Model families transformers runs only with remote code (ChatGLM 2 / 3 and
GLM-4's remote version, Qwen 1, MiniCPM, InternLM 2, Baichuan): `from_hf`
reads them as llama.cpp's converter does, by running the converter's own
methods (vkrope/data/gguf_convert.json) in vkrope's interpreter.

Proof: the metadata matches what llama.cpp's real converter wrote for the
same configs (tests/data/gguf_convert_golden.json.gz, by
scripts/gguf_convert_golden.py); the rotation matches
tests/oracles/oracle_remote.py, written from each family's published
modeling code; what the converter drops or never reads is refused.
tests/data/remote_configs holds these models' config.json keys as their
model pages publish them, written out here (this project's machines reach
package registries only, not the Hub).
"""

from __future__ import annotations

import gzip
import json
import os

import ml_dtypes
import numpy as np
import pytest

import oracle_remote
import vkrope
from vkrope.models import gguf_convert, gguf_program, pyconv

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
REMOTE = os.path.join(DATA, "remote_configs")
with gzip.open(os.path.join(DATA, "gguf_convert_golden.json.gz"), "rt") as _f:
    GOLDEN = json.load(_f)
READ = ["chatglm3-6b", "glm-4-9b-chat", "qwen-7b", "minicpm-2b", "minicpm-2b-128k"]


def remote(name: str) -> str:
    return os.path.join(REMOTE, name + ".json")


def _same(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return np.float32(a) == np.float32(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_golden_comes_from_the_tables_llama_cpp():
    assert GOLDEN["source"] == gguf_convert.table()["source"]
    names = {g["name"] for g in GOLDEN["configs"]}
    assert {n[:-5] for n in os.listdir(REMOTE)} <= names


@pytest.mark.parametrize("entry", GOLDEN["configs"], ids=[g["name"] for g in GOLDEN["configs"]])
def test_interpreter_writes_what_the_converter_writes(entry):
    """Every golden config: the same metadata and rope tensors as llama.cpp's converter, the same
    refusal where it raises, or (for code the interpreter does not run) a refusal, never other values."""
    config, result = entry["config"], entry["result"]
    assert gguf_convert.architecture(config) == (entry["architecture"], "")
    try:
        arch, kv, tensors, _, _, types = gguf_convert.run(config, entry["architecture"])
    except pyconv.Raised as exc:
        assert result.get("raises") == exc.kind, f"the converter: {result}; the interpreter raised {exc}"
        return
    except pyconv.Unknown:
        assert ":" in entry["name"], "a remote-code config must run in the interpreter"
        return
    assert "raises" not in result, f"the converter raises {result.get('raises')}; the interpreter read it"
    assert arch == result["arch"]
    diff = {k: (kv.get(k), result["kv"].get(k)) for k in set(kv) | set(result["kv"])
            if not _same(kv.get(k), result["kv"].get(k))}
    assert not diff
    assert sorted(tensors) == sorted(result["tensors"])
    # (the GGUF types gguf's writer stores: each one llama.cpp's loader takes for its key)
    llama = gguf_program.table()
    reads = {**llama["hparams"]["key_types"], **llama["archs"].get(arch, {}).get("key_types", {})}
    assert set(types) <= set(kv) and types.get("block_count", "UINT32") == "UINT32"
    assert not {k: t for k, t in types.items() if k in reads and t not in reads[k]["accept"]}
    for name, values in result["tensors"].items():
        assert np.array_equal(tensors[name], np.asarray(values, np.float32))


def test_most_golden_configs_run():
    """The interpreter runs most of the converter (a regression that refuses everything fails here)."""
    ran = 0
    for g in GOLDEN["configs"]:
        if "raises" not in g["result"]:
            try:
                gguf_convert.run(g["config"], g["architecture"])
                ran += 1
            except pyconv.Unknown:
                pass
    assert ran >= 65, ran


@pytest.mark.parametrize("name", READ)
@pytest.mark.parametrize("dtype", [np.float32, ml_dtypes.bfloat16])
def test_rotation_matches_the_familys_code(name, dtype):
    with open(remote(name)) as f:
        cfg = json.load(f)
    rope = vkrope.from_hf(cfg, like="llama.cpp", angle="exact")
    ref_rope = oracle_remote.family_rope(cfg)
    assert (rope.rotary_dim, rope.theta, rope.interleaved) == ref_rope
    rng = np.random.default_rng(len(name))
    d = rope.head_dim
    q = rng.standard_normal((2, 4, 5, d)).astype(dtype)
    k = rng.standard_normal((2, 2, 5, d)).astype(dtype)
    limit = cfg.get("seq_length") or cfg.get("max_position_embeddings")
    pos = rng.integers(0, limit, (2, 5))
    yq, yk = vkrope.apply_rotary_pos_emb(q, k, rope, pos)
    eps = {np.float32: 2e-6, ml_dtypes.bfloat16: 2.0 ** -7}[dtype]
    for x, y in ((q, yq), (k, yk)):
        ref = oracle_remote.rotate(x.astype(np.float64), pos, ref_rope)
        err = np.abs(y.astype(np.float64) - ref)
        assert (err <= eps * np.maximum(np.abs(ref), 1)).all(), name
        assert np.array_equal(y[..., rope.rotary_dim:], x[..., rope.rotary_dim:])


def test_minicpm_reads_without_consent():
    """MiniCPM's config has no key about positions the converter skips: read as it is."""
    rope = vkrope.from_hf(remote("minicpm-2b"))
    assert (rope.rotary_dim, rope.theta, rope.interleaved, rope.ignored) == (64, 10000.0, False, ())
    assert rope.model == "MiniCPMForCausalLM -> minicpm"


@pytest.mark.parametrize("name, keys", [("chatglm3-6b", ("kv_channels=128", "original_rope=True")),
                                        ("qwen-7b", ("kv_channels=128", "rotary_pct=1.0", "seq_length=8192",
                                                     "use_dynamic_ntk=True", "use_logn_attn=True"))])
def test_keys_the_converter_does_not_use_need_consent(name, keys):
    """Keys about positions or head sizes the converter never looks up (ChatGLM's original_rope and
    kv_channels, Qwen 1's use_dynamic_ntk, rotary_pct), or looks up without effect (Qwen 1's seq_length:
    max_position_embeddings comes first), need the caller's like='llama.cpp', and are listed."""
    with pytest.raises(ValueError, match=f"does not use {keys[0]}.*like='llama.cpp'"):
        vkrope.from_hf(remote(name))
    assert vkrope.from_hf(remote(name), like="llama.cpp").ignored == keys


def test_a_key_looked_up_without_effect_needs_consent():
    """MiniCPM with rotary_emb_base beside rope_theta: TextModel looks both up and takes rope_theta."""
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    cfg["rotary_emb_base"] = 5e5
    with pytest.raises(ValueError, match="does not use rotary_emb_base=500000.0"):
        vkrope.from_hf(cfg)
    assert vkrope.from_hf(cfg, like="llama.cpp").theta == 10000.0


def test_a_per_layer_config_needs_consent():
    """transformers 5's per_layer_config on a remote-code config (an adversary's): the converter reads one config
    for every layer, and the model's own code is unknown, so it needs like='llama.cpp' and is listed; it was
    read silently before."""
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    for given in ({"0": {"rope_theta": 5e5}}, "x"):
        with pytest.raises(ValueError, match="does not use per_layer_config="):
            vkrope.from_hf({**cfg, "per_layer_config": given})
        rope = vkrope.from_hf({**cfg, "per_layer_config": given}, like="llama.cpp")
        assert rope.theta == 10000.0 and rope.ignored[0].startswith("per_layer_config=")
    assert vkrope.from_hf({**cfg, "per_layer_config": {}}).ignored == ()


def test_chatglm3_rotates_half_of_each_head_in_adjacent_pairs():
    """Item 7 of the issue: 64 of 128 channels, adjacent pairs, base 10000 * rope_ratio."""
    rope = vkrope.from_hf(remote("chatglm3-6b"), like="llama.cpp")
    assert (rope.head_dim, rope.rotary_dim, rope.interleaved, rope.theta) == (128, 64, True, 10000.0)
    assert vkrope.from_hf(remote("glm-4-9b-chat"), like="llama.cpp").theta == 5e6
    layers = vkrope.hf_layers(remote("chatglm3-6b"), like="llama.cpp")
    assert len(layers) == 28 and all(r == rope for r in layers)
    assert vkrope.hf_layer_types(remote("chatglm3-6b"), like="llama.cpp") == ()


def test_dropped_rope_type_is_refused():
    """InternLM 2.5's dynamic NTK: the converter drops it, so llama.cpp's RoPE is not the model's."""
    with pytest.raises(ValueError, match="drops the config's rope type 'dynamic'.*like="):
        vkrope.from_hf(remote("internlm2_5-7b-chat"))
    with pytest.raises(ValueError, match="drops the config's rope type 'dynamic'"):
        vkrope.from_hf(remote("internlm2_5-7b-chat"), like="llama.cpp")
    rope = vkrope.from_hf(remote("internlm2_5-7b-chat"), like="llama")  # (its attention is Llama's)
    assert (rope.rope_type, rope.theta, rope.head_dim) == ("dynamic", 1e6, 128)


def test_baichuan_is_refused_where_llama_cpp_decides_by_size():
    with pytest.raises(ValueError, match="'baichuan': vkrope cannot read where its graph rotates.*like="):
        vkrope.from_hf(remote("baichuan2-7b"))


def test_the_converter_s_own_refusals():
    with open(remote("chatglm3-6b")) as f:
        cfg = json.load(f)
    del cfg["hidden_size"]
    with pytest.raises(ValueError, match="ChatGLMModel.*the converter refuses this config \\(AssertionError"):
        vkrope.from_hf(cfg, like="llama.cpp")


def test_unknown_architecture_keeps_the_table_refusal():
    with open(remote("chatglm3-6b")) as f:
        cfg = json.load(f)
    cfg["architectures"] = ["NoSuchModelForCausalLM"]
    with pytest.raises(ValueError, match="'chatglm' is not in vkrope's model table"):
        vkrope.from_hf(cfg)
    with pytest.raises(ValueError, match="like='llama.cpp'.*NoSuchModelForCausalLM"):
        vkrope.from_hf(cfg, like="llama.cpp")


def test_bad_layer_arguments():
    path = remote("minicpm-2b")
    with pytest.raises(ValueError, match=r"layer must be in \[0, 40\)"):
        vkrope.from_hf(path, layer=40)
    with pytest.raises(TypeError, match="layer must be an int"):
        vkrope.from_hf(path, layer="0")
    with pytest.raises(ValueError, match="layer_type must be None, 'full_attention' or 'sliding_attention'"):
        vkrope.from_hf(path, layer_type="global")
    assert vkrope.from_hf(path, layer=np.int64(3)) == vkrope.from_hf(path)


def test_config_does_not_change():
    """The converter mutates its hparams (TextModel.__init__ writes rope_type and rope_theta into the
    config's rope_scaling dict); the caller's dict stays as it was."""
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    cfg["rope_scaling"] = {"type": "linear", "factor": 2.0}
    before = json.dumps(cfg, sort_keys=True)
    rope = vkrope.from_hf(cfg)
    assert (rope.rope_type, dict(rope.params)["factor"]) == ("linear", 2.0)
    assert json.dumps(cfg, sort_keys=True) == before


def test_model_type_missing_or_a_transformers_class():
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    del cfg["model_type"]
    with pytest.raises(ValueError, match="model_type is missing"):
        vkrope.from_hf(cfg)
    assert vkrope.from_hf(cfg, like="llama.cpp") == vkrope.from_hf(remote("minicpm-2b"))
    cfg.update(model_type="my_llama", architectures=["LlamaForCausalLM"])
    with pytest.raises(ValueError, match="'LlamaForCausalLM', a transformers class.*like="):
        vkrope.from_hf(cfg)
    with pytest.raises(ValueError, match="like='llama.cpp' reads configs of model types transformers does not"):
        vkrope.from_hf(dict(cfg, model_type="llama"), like="llama.cpp")


@pytest.mark.parametrize("key, value, match", [
    ("rope_ratio", [0] * 2_000_000, "too large for a config's arithmetic"),
    ("rope_ratio", 10 ** 400, "rope.freq_base = .* which is not a GGUF float32"),
    # (gguf's writer packs a float32 with struct, which overflows past float32's range: the converter fails)
    ("rope_ratio", 1e36, "rope.freq_base = 1e\\+40 from the config, which is not a GGUF float32"),
    ("num_layers", None, "block_count = None from the config, which is not a GGUF uint32"),
    ("hidden_size", 4096.5, "embedding_length = 4096.5"),
    ("text_config", "x", "architecture"),
])
def test_hostile_values_are_refused_fast(key, value, match):
    with open(remote("chatglm3-6b")) as f:
        cfg = json.load(f)
    cfg[key] = value
    with pytest.raises(ValueError, match=match):
        vkrope.from_hf(cfg, like="llama.cpp")


def test_deep_or_odd_containers():
    import collections
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    deep = cur = {}
    for _ in range(600):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(ValueError, match="nests deeper"):
        vkrope.from_hf(dict(cfg, extra=deep))
    odd = collections.OrderedDict(cfg, hidden_size=np.int64(2304))
    assert vkrope.from_hf(odd) == vkrope.from_hf(cfg)


def test_no_interpreter_state_outlives_a_call():
    import gc
    vkrope.from_hf(remote("minicpm-2b"))
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, gguf_convert.World)]


def test_cli_prints_the_pairs_and_ignored_keys(capsys):
    from vkrope.__main__ import main
    assert main(["config", remote("chatglm3-6b"), "--like", "llama.cpp"]) == 0
    out = capsys.readouterr().out
    assert "interleaved" in out and "original_rope=True" in out and "ChatGLMModel -> chatglm" in out


def test_cli_messages_name_the_flag_not_the_keyword(capsys):
    """The converter's refusal tells a Python caller like='llama.cpp' (and, in brackets, the command's form);
    through the command it says --like llama.cpp, once. like='llama.cpp' on a model type transformers knows says
    to read it without --like (not "without like=")."""
    from vkrope.__main__ import main

    assert main(["config", remote("chatglm3-6b")]) == 1
    err = capsys.readouterr().err
    assert err.endswith("changes its frequencies past seq_length); if so, pass --like llama.cpp\n"), err
    llama = os.path.join(DATA, "hf_configs", "llama-3.1-8b.json")
    assert main(["config", llama, "--like", "llama.cpp"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("vkrope: error: ValueError: --like llama.cpp reads configs of model types transformers "
                          "does not know (remote code); 'llama' is one it knows: read it without --like, or its "
                          "GGUF file with vkrope.from_gguf"), err


def test_permuted_rows_under_partial_rotary_are_refused():
    """LlamaModel.permute reorders a whole head: with a rotary dim below the head dim, llama.cpp's adjacent
    pairs are not the checkpoint's rotate-half pairs, so the pairs would be a guess."""
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    arch, kv, tensors, unused, types = gguf_convert.convert(cfg, "MiniCPMForCausalLM")
    assert gguf_convert._read((arch, kv, tensors, unused, types), "MiniCPMForCausalLM", None, None,
                              "float32").rotary_dim == 64
    kv = dict(kv, **{"rope.dimension_count": 32})
    # (MiniCPM's graph also asserts n_embd_head == n_rot: llama.cpp would abort; either refusal is right)
    with pytest.raises(ValueError, match="reorders the Q and K rows|graph asserts they are equal"):
        gguf_convert._read((arch, kv, tensors, unused, types), "MiniCPMForCausalLM", None, None, "float32")


def test_the_consent_check_is_bounded_and_nan_proof(tmp_path):
    with open(remote("minicpm-2b")) as f:
        cfg = json.load(f)
    many = dict(cfg, **{f"rope_a{i}": {"rope_theta": 1} for i in range(400)})
    with pytest.raises(ValueError, match="checks at most 32"):
        vkrope.from_hf(many, like="llama.cpp")
    # (a NaN the converter computes, MiniCPM's residual_scale, must not make an unused key look used)
    nan = dict(cfg, scale_depth=float("nan"), rope_parameters={"rope_theta": 1e6})
    with pytest.raises(ValueError, match="does not use rope_theta=10000.0"):
        vkrope.from_hf(nan)
    deep = tmp_path / "config.json"
    deep.write_text(json.dumps(cfg)[:-1] + ', "x": ' + '{"a": ' * 5000 + "1" + "}" * 5000 + "}")
    # (Python 3.11's json raises RecursionError: "nests too deeply"; 3.12's C decoder reads 5000 levels and the
    # config walk refuses them)
    with pytest.raises(ValueError, match="nests (too deeply|deeper than 64 levels)"):
        vkrope.from_hf(str(deep))


def test_an_architecture_whose_rows_were_not_measured_is_refused_first():
    cfg = {"model_type": "xverse", "architectures": ["XverseForCausalLM"], "hidden_size": 4096,
           "num_attention_heads": 32, "num_hidden_layers": 2, "max_position_embeddings": 8192}
    with pytest.raises(ValueError, match="orders the Q and K rows is unmeasured"):
        vkrope.from_hf(cfg, like="llama.cpp")

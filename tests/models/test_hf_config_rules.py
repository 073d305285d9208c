"""How each config class turns a config.json's RoPE keys into what its model
reads (vkrope/models/config_rules.py, vkrope/data/hf_config_rules.json):
against what transformers' own classes made of the same configs
(tests/data/hf_config_golden.json, written by scripts/hf_config_rules.py),
and the cases an adversarial review found read wrong before the rules."""

from __future__ import annotations

import collections
import gzip
import json
import pathlib
import re

import numpy as np
import pytest

import vkrope
from vkrope.models import config_checks, config_rules

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
RULES = pathlib.Path(vkrope.__file__).resolve().parent / "data" / "hf_config_rules.json"
LLAMA = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "head_dim": 64}  # (a head_dim beside: from_hf needs no head count)
GEMMA = {"model_type": "gemma3_text", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 16, "max_position_embeddings": 128, "num_hidden_layers": 2,
         "layer_types": ["sliding_attention", "full_attention"]}


def _golden() -> dict:
    with gzip.open(DATA / "hf_config_golden.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


def test_rules_and_golden_come_from_the_model_tables_transformers():
    table = json.loads((pathlib.Path(vkrope.__file__).parent / "data" / "hf_models.json").read_text())
    assert json.loads(RULES.read_text())["transformers"] == table["transformers"] == _golden()["transformers"]


def test_never_a_different_answer_than_transformers_config_classes():
    """Every golden config: vkrope reads what the class made (theta, rope type, factor, and the partial
    factor its model applies), or refuses it with a ValueError, but not as a kind of value the class refuses
    where the class took it (check_kinds: only a float head key's refusal is its model's); where the class
    raised (or made what its model cannot read), vkrope refuses."""
    table = json.loads((pathlib.Path(vkrope.__file__).parent / "data" / "hf_models.json").read_text())["models"]
    read, refused, wrong = collections.Counter(), collections.Counter(), []
    for case in _golden()["cases"]:
        want, t = case["want"], case["config"]["model_type"]
        e = table.get(t, {})
        if want is not None and e.get("ignores"):  # (the class keeps the key; its model's code does not read it)
            fixed = e["fixed"]["*"]
            want = [fixed["rope_theta"] if "rope_theta" in e["ignores"] else want[0],
                    *([fixed["rope_type"], None] if "rope_type" in e["ignores"] else want[1:3]), want[3]]
        try:
            got = vkrope.from_hf(case["config"], layer_type=case["layer_type"])
        except ValueError as exc:
            kind = re.match(r"config: ([\w.]+) is .* \(([^()]*)\): \S+ \S*config class (takes|refuses) ", str(exc))
            if want is not None and kind and kind[2] != "a float":  # (a kind the class took refused as the class's:
                wrong.append((case, f"refused: {exc}"))  # only a float head key's refusal is its model's; a key
                # under an alias, stored unchecked, is its model's, and its golden says so)
            refused[t] += 1
            continue
        if want is None or got is None:
            wrong.append((case, "read where transformers fails" if want is None else "None"))
            continue
        params = dict(got.params)
        held = list(got.mrope_section or ())  # (time, height, width; ERNIE 4.5 VL's configs list height, width, time)
        sections = [*held[1:], held[0]] if got.mrope_layout == "alternating" else held
        if want[1] == "default":  # (the class may keep a factor; transformers' default rope type reads none)
            want = [*want[:2], None, want[3]]
        if [got.theta, got.rope_type, params.get("factor"), params.get("partial_rotary_factor", 1.0)] != want \
                or case.get("width") not in (None, got.rotary_dim) \
                or case.get("sections") not in (None, sections):  # (M-RoPE's split, where probed)
            wrong.append((case, (got.theta, got.rope_type, dict(got.params), got.rotary_dim)))
            continue
        read[t] += 1
    assert wrong == []
    # (the check can fail: most configs are read, of most model types, those with RoPE per layer type too)
    assert sum(read.values()) > 1500 and len(read) > 150
    assert all(read[t] >= 3 for t in ("gemma3", "gemma3_text", "olmo3", "modernbert", "modernbert-decoder"))


def test_gemma3_and_olmo3_flat_theta_goes_to_the_full_layers():
    """Gemma3TextConfig / Olmo3Config.convert_rope_params_to_dict: the file's rope_theta is the full layers'
    theta; Gemma 3's rope_local_base_freq the sliding layers'; Olmo 3's sliding layers keep the class's."""
    g = vkrope.from_hf({**GEMMA, "rope_theta": 2e5, "rope_local_base_freq": 1e3}, layer_type="full_attention")
    assert g.theta == 2e5
    assert vkrope.from_hf({**GEMMA, "rope_theta": 2e5, "rope_local_base_freq": 1e3},
                          layer_type="sliding_attention").theta == 1e3
    olmo = {**GEMMA, "model_type": "olmo3", "rope_theta": 1e4}
    assert vkrope.from_hf(olmo, layer_type="full_attention").theta == 1e4
    assert vkrope.from_hf(olmo, layer_type="sliding_attention").theta == 5e5


def test_modernbert_thetas_and_scaling_for_both_layer_types():
    cfg = {"model_type": "modernbert", "hidden_size": 64, "num_attention_heads": 4, "global_rope_theta": 8e4,
           "local_rope_theta": 5e3, "rope_scaling": {"rope_type": "linear", "factor": 4.0}}
    full = vkrope.from_hf(cfg, layer_type="full_attention")
    sliding = vkrope.from_hf(cfg, layer_type="sliding_attention")
    assert (full.theta, sliding.theta) == (8e4, 5e3)
    assert dict(full.params)["factor"] == dict(sliding.params)["factor"] == 4.0
    want = 1.0 / 5e3 ** (np.arange(0, 16, 2) / 16) / 4.0
    np.testing.assert_allclose(sliding.inv_freq().astype(np.float64), want, rtol=1e-6)


def test_gemma3_nested_rope_parameters():
    nested = {"full_attention": {"rope_type": "linear", "factor": 8.0}, "sliding_attention": {"rope_type": "default"}}
    cfg = {**GEMMA, "rope_theta": 2e5, "rope_local_base_freq": 1e3, "rope_parameters": nested}
    assert vkrope.from_hf(cfg, layer_type="full_attention").theta == 2e5  # (not the class's 1e6)
    assert vkrope.from_hf(cfg, layer_type="sliding_attention").theta == 1e3
    both = {**GEMMA, "rope_scaling": {"rope_type": "linear", "factor": 4.0},
            "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
    assert dict(vkrope.from_hf(both, layer_type="full_attention").params)["factor"] == 4.0
    assert vkrope.from_hf(both, layer_type="sliding_attention").rope_type == "default"
    left_out = {**GEMMA, "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0,
                                                                "rope_theta": 1e6}, "sliding_attention": None}}
    full = vkrope.from_hf(left_out, layer_type="full_attention")
    assert (full.rope_type, dict(full.params)["factor"]) == ("linear", 2.0)
    assert vkrope.from_hf(left_out, layer_type="sliding_attention").theta == 1e4  # (filled in, as the class does)
    with pytest.raises(ValueError, match="rope_parameters is one dict.*per layer type"):
        vkrope.from_hf({**GEMMA, "rope_parameters": {"rope_type": "linear", "factor": 8.0}},
                       layer_type="full_attention")
    with pytest.raises(ValueError, match="merges rope_scaling into it"):  # (Gemma 3's class raises: KeyError)
        vkrope.from_hf({**GEMMA, "rope_scaling": {"rope_type": "linear", "factor": 2.0},
                        "rope_parameters": {"sliding_attention": {"rope_type": "default"}}},
                       layer_type="sliding_attention")


def test_a_flat_file_of_classes_never_probed_is_refused():
    """EXAONE 4.5's config classes could not be built with keys at the top: how they read a file without its
    text_config is unknown, so one is refused, not read as the class defaults."""
    with pytest.raises(ValueError, match="text_config is missing, and how exaone4_5's config classes read a file "
                                         "without it is unknown"):
        vkrope.from_hf({"model_type": "exaone4_5", "hidden_size": 64, "num_attention_heads": 4})


def test_outer_keys_reach_the_text_config_only_where_the_class_moves_them():
    text = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
    llava = {"model_type": "llava", "rope_theta": 1234.0, "text_config": text}
    assert vkrope.from_hf(llava).theta == 10000.0  # (LlavaConfig builds text_config alone)
    with pytest.raises(ValueError, match="the top level gives rope_theta, .* which llava's config classes do not "
                                         "carry into the language model's config when text_config is missing"):
        vkrope.from_hf({**text, "model_type": "llava", "rope_theta": 1234.0})
    qwen = {"model_type": "qwen2_vl", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 5e5,
            "rope_scaling": {"rope_type": "mrope", "mrope_section": [2, 3, 3]}}
    assert vkrope.from_hf(qwen).theta == 5e5  # (Qwen2VLConfig moves a flat file's keys into its text config)
    assert vkrope.from_hf({"model_type": "qwen2_vl", "rope_theta": 5e5, "text_config": {
        k: v for k, v in qwen.items() if k != "rope_theta"}}).theta == 1e6  # (but not over a text_config)


def test_presets_of_the_outer_class_are_not_guessed():
    """PE Audio's class presets hidden_size and num_attention_heads otherwise than its ModernBERT text class, in a
    way its fill does not explain (measured: no `fill`): a file that leaves them out is refused."""
    with pytest.raises(ValueError, match="lacks hidden_size, num_attention_heads, which pe_audio's .*presets"):
        vkrope.from_hf({"model_type": "pe_audio", "text_config": {"max_position_embeddings": 1024}})


def test_nulls_transformers_fails_on_are_refused():
    base = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 128}
    with pytest.raises(ValueError, match="rope_theta must be a number; got None"):
        vkrope.from_hf({**base, "rope_theta": None})
    sf = [1.0] * 8
    with pytest.raises(ValueError, match="original_max_position_embeddings is null"):
        vkrope.from_hf({**base, "original_max_position_embeddings": None, "rope_scaling": {
            "rope_type": "longrope", "short_factor": sf, "long_factor": sf, "original_max_position_embeddings": 32}})
    with pytest.raises(ValueError, match="rope_local_base_freq is null"):
        vkrope.from_hf({**GEMMA, "rope_local_base_freq": None}, layer_type="sliding_attention")


def test_the_classs_partial_factor_stays_when_the_file_gives_its_own_theta():
    """PersimmonConfig (and Fuyu's text config) rotate half the head by default; standardize_rope_params puts
    that factor into the file's rope dict, so a file giving only rope_theta keeps it."""
    r = vkrope.from_hf({"model_type": "persimmon", "rope_theta": 25000.0})
    assert (r.theta, r.rotary_dim, r.head_dim) == (25000.0, 32, 64)
    assert vkrope.from_hf({"model_type": "persimmon", "rope_theta": 25000.0,
                           "partial_rotary_factor": 1.0}).rotary_dim == 64


def test_a_theta_the_class_fills_in_only_where_the_file_gives_no_rope_dict():
    """Cohere2MoeConfig gives rope_theta 10000 only where the file has no rope dict: a file without RoPE keys
    is read with it, a rope dict without its theta is refused (its model cannot run it), naming the key."""
    base = {"model_type": "cohere2_moe", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 2,
            "max_position_embeddings": 8192}
    r = vkrope.from_hf(base)
    assert (r.theta, r.rope_type, r.rotary_dim) == (10000.0, "default", 128)
    assert vkrope.from_hf({**base, "rope_theta": 5.0}).theta == 5.0
    with pytest.raises(ValueError, match="no rope_theta given in the rope dict, and cohere2_moe's config class"):
        vkrope.from_hf({**base, "rope_parameters": {"rope_type": "default"}})


def test_a_theta_beside_a_rope_dict_the_class_does_not_move_into_it():
    """Cohere2MoeConfig moves a file's top-level rope_theta into the rope dict it makes where the file gives
    none, but not into the file's own dict: a default-type rope_parameters (or an empty one) without a theta
    beside rope_theta fails its model (KeyError), so it is refused, saying why; the rotary module's library
    functions of linear and yarn move the class's theta in themselves (standardize_rope_params), so those are
    read, on the top-level theta or the class's 10000 (theta_beside, measured per rope type)."""
    base = {"model_type": "cohere2_moe", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 2,
            "max_position_embeddings": 8192, "layer_types": ["full_attention", "sliding_attention"]}
    for rope in ({"rope_type": "default"}, {}):
        with pytest.raises(ValueError, match=r"no rope_theta given in the rope dict \(the file's rope_theta beside "
                                             "it is moved into a file's rope dict of type 'default' neither"):
            vkrope.from_hf({**base, "rope_parameters": rope, "rope_theta": 5e5}, layer_type="sliding_attention")
    sliding = {"layer_type": "sliding_attention"}
    assert vkrope.from_hf({**base, "rope_parameters": {"rope_type": "default", "rope_theta": 3.0},
                           "rope_theta": 5e5}, **sliding).theta == 3.0
    assert vkrope.from_hf({**base, "rope_theta": 5e5}, **sliding).theta == 5e5
    linear = {"rope_type": "linear", "factor": 2.0}
    yarn = {"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4096}
    for rope in (linear, yarn):
        for top, theta in (({"rope_theta": 5e5}, 5e5), ({}, 10000.0)):
            r = vkrope.from_hf({**base, "rope_parameters": rope, **top}, **sliding)
            assert (r.theta, r.rope_type) == (theta, rope["rope_type"])
    llama = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4}
    assert vkrope.from_hf({**llama, "rope_parameters": {"rope_type": "default"}, "rope_theta": 5e5}).theta == 5e5


def test_a_null_partial_factor_at_the_top_where_the_attention_reads_the_dicts():
    """PhiConfig takes `partial_rotary_factor: null` (its rope dict then holds no factor) and Phi's rotary module
    runs on it, but its attention reads config.rope_parameters["partial_rotary_factor"] and fails (KeyError):
    refused (null_refused, measured at the model); Llama, which reads no factor, runs it as none."""
    phi = {"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4}
    assert vkrope.from_hf(phi).rotary_dim == 32
    with pytest.raises(ValueError, match="^config: partial_rotary_factor is null: phi's config class refuses a null"):
        vkrope.from_hf({**phi, "partial_rotary_factor": None})
    llama = {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4}
    assert vkrope.from_hf({**llama, "partial_rotary_factor": None}).rotary_dim == 64


def test_a_number_given_as_a_string_where_the_class_takes_an_int():
    """LlamaConfig's num_attention_heads is a strict int field: `"4"` fails on loading the config, also beside
    a head_dim (from_hf then needs no head count), so it is refused, naming the key (the rules' `strict`)."""
    llama = dict(LLAMA)
    assert vkrope.from_hf(llama).head_dim == 64
    for key in ("num_attention_heads", "num_hidden_layers", "max_position_embeddings"):
        with pytest.raises(ValueError, match=f"config: {key} is '\\d+' \\(a string\\): llama's config class takes "
                                             "an integer there"):
            vkrope.from_hf({**llama, key: str(llama.get(key, 2))})


# Values transformers 5.25's LlamaConfig refuses on loading (its strict fields, checked against its class:
# `LlamaConfig(**{key: value})` raises), for keys vkrope does not read, and the kinds it takes there
LLAMA_REFUSES = [("vocab_size", "32000", "a string"), ("vocab_size", [32000], "a list of integers"),
                 ("vocab_size", None, None), ("num_key_value_heads", "8", "a string"),
                 ("num_key_value_heads", 8.0, "a float"), ("intermediate_size", {"a": 1}, "a dict"),
                 ("rms_norm_eps", "1e-6", "a string"), ("rms_norm_eps", 1, "an integer"),
                 ("tie_word_embeddings", "true", "a string"), ("tie_word_embeddings", 1, "an integer"),
                 ("hidden_act", 5, "an integer"), ("hidden_act", ["silu"], "a list of other items"),
                 ("eos_token_id", ["2"], "a list of other items"), ("eos_token_id", 2.0, "a float"),
                 ("num_attention_heads", [4], "a list of integers"), ("head_dim", [64], "a list of integers"),
                 ("vocab_size", [], "an empty list"), ("pad_token_id", "0", "a string"), ("bos_token_id", 1.5, "a float")]
LLAMA_TAKES = [("eos_token_id", [1, 2]), ("eos_token_id", None), ("attention_dropout", 0),
               ("attention_dropout", 0.25), ("num_key_value_heads", None), ("hidden_act", "gelu"),
               ("tie_word_embeddings", True), ("rms_norm_eps", 1e-6), ("vocab_size", 7)]


@pytest.mark.parametrize("key, value, kind", LLAMA_REFUSES)
def test_a_kind_the_class_refuses_is_refused_where_vkrope_does_not_read_the_key(key, value, kind):
    """transformers' config classes check every field's type on loading (huggingface_hub's strict dataclasses):
    a file giving vocab_size as a string, a head count as a list, rms_norm_eps as a string, fails there, though
    the key does not touch RoPE; the model cannot be built, so vkrope refuses it too, naming the key, what was
    given and the kinds the class takes."""
    llama = dict(LLAMA)
    shown = "null" if value is None else f"{re.escape(repr(value))} \\({kind}\\)"
    said = f"refuses {kind}" if key == "eos_token_id" else "takes .*"  # (eos_token_id takes four kinds: those
    # it refuses are said; null, an integer, an empty list, a list of integers)
    with pytest.raises(ValueError, match=f"^config: {key} is {shown}: llama's config class {said} there"):
        vkrope.from_hf({**llama, key: value})
    assert vkrope.from_hf(llama).head_dim == 64  # (and nothing kept of the refused call)


@pytest.mark.parametrize("key, value", LLAMA_TAKES)
def test_a_kind_the_class_takes_is_read(key, value):
    """The other kinds LlamaConfig takes there (an eos list, an int dropout where it takes a float or an int,
    a null kv head count) read as without the key."""
    llama = dict(LLAMA)
    assert vkrope.from_hf({**llama, key: value}) == vkrope.from_hf(llama)


def test_a_value_no_json_file_holds_is_refused_where_the_class_checks_the_key():
    """A dict built in Python may hold a numpy integer, which the class's isinstance check refuses as an int
    (transformers raises): refused, naming its type; a numpy float is a Python float and reads."""
    llama = dict(LLAMA)
    with pytest.raises(ValueError, match="^config: vocab_size is 7 \\(of type int64, which no JSON file holds\\): "
                                         "llama's config class takes an integer there"):
        vkrope.from_hf({**llama, "vocab_size": np.int64(7)})
    assert vkrope.from_hf({**llama, "rms_norm_eps": np.float64(1e-6)}) == vkrope.from_hf(llama)
    qwen2 = {"model_type": "qwen2", "hidden_size": 256, "num_attention_heads": 4}  # (its head_dim: no field, its
    with pytest.raises(ValueError, match="^config: head_dim must be an integer; got int64 64$"):  # model fails on
        vkrope.from_hf({**qwen2, "head_dim": np.int64(64)})  # a float only: vkrope's own check, naming the type)


def test_a_file_read_like_another_type_is_held_to_that_class_only_for_the_keys_vkrope_reads():
    """like= reads a file as another type's (a remote-code model's config): that type's class never loads it, so
    its strict fields say nothing of the keys vkrope does not read (a reviewer's: InternLM's tie_word_embeddings
    1 refused as LlamaConfig would); the keys vkrope reads are held to it, as before."""
    internlm = {"model_type": "internlm", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
                "max_position_embeddings": 2048, "rope_theta": 1e4}
    want = vkrope.from_hf(internlm, like="llama")
    for key, value in (("tie_word_embeddings", 1), ("initializer_range", 0), ("rms_norm_eps", 1)):
        assert vkrope.from_hf({**internlm, key: value}, like="llama") == want
    with pytest.raises(ValueError, match="^config: num_attention_heads is '4' \\(a string\\): llama's config class"):
        vkrope.from_hf({**internlm, "num_attention_heads": "4", "head_dim": 64}, like="llama")
    with pytest.raises(ValueError, match="^config: tie_word_embeddings is 1 \\(an integer\\): llama's config class"):
        vkrope.from_hf({**internlm, "model_type": "llama", "tie_word_embeddings": 1}, like="llama")


QWEN2_VL = {"model_type": "qwen2_vl", "text_config": {"model_type": "qwen2_vl_text", "hidden_size": 256,
                                                     "num_attention_heads": 4, "rope_parameters": {
                                                         "rope_type": "default", "rope_theta": 1e6,
                                                         "mrope_section": [8, 12, 12]}}}


def test_a_kind_the_class_refuses_in_a_composites_other_configs_is_refused():
    """A composite's outer class and its vision / audio configs check their fields too: Qwen2-VL's
    `vision_config.depth: 2.0` or an outer `tie_word_embeddings: null` fail on loading in transformers (the
    differential adversary's 99 keys over 69 types were read); refused, naming the path (the rules'
    outer_strict). The kinds they take read; a vision_config naming another class than the one measured (a
    SigLIP tower where LLaVA's class defaults CLIP's) is that class's, not checked."""
    want = vkrope.from_hf(QWEN2_VL)
    for given, shown in (({"vision_config": {"depth": 2.0}}, r"vision_config\.depth is 2\.0 \(a float\)"),
                         ({"tie_word_embeddings": None}, r"tie_word_embeddings is null"),
                         ({"vision_config": {"hidden_act": 1}}, r"vision_config\.hidden_act is 1 \(an integer\)")):
        with pytest.raises(ValueError, match=f"^config: {shown}: qwen2_vl's (vision_)?config class takes .* there "
                                             r"\(transformers raises on loading the config\)"):
            vkrope.from_hf({**QWEN2_VL, **given})
    for given in ({"vision_config": {"depth": 2}}, {"tie_word_embeddings": False}, {"vision_config": None}):
        assert vkrope.from_hf({**QWEN2_VL, **given}) == want
    llava = {"model_type": "llava", "text_config": {"model_type": "llama", "hidden_size": 256,
                                                    "num_attention_heads": 4}}
    with pytest.raises(ValueError, match=r"^config: vision_config\.projection_dim is 'x' \(a string\)"):
        vkrope.from_hf({**llava, "vision_config": {"projection_dim": "x"}})
    assert vkrope.from_hf({**llava, "vision_config": {"model_type": "siglip_vision_model", "projection_dim": "x"}}) \
        == vkrope.from_hf(llava)
    with pytest.raises(ValueError, match="^config: tie_word_embeddings is null"):  # (like= its own type: its
        vkrope.from_hf({**QWEN2_VL, "tie_word_embeddings": None}, like="qwen2_vl")  # class loads the file)
    # (the second adversary's: Qwen2-VL's vision class is fixed, whatever model_type a 4.x file writes in it; a
    # sub-config given as no dict; a model type transformers lacks where the name chooses the class)
    with pytest.raises(ValueError, match=r"^config: vision_config\.depth is 2\.0 \(a float\)"):
        vkrope.from_hf({**QWEN2_VL, "vision_config": {"model_type": "qwen2_vl", "depth": 2.0}})
    for given, shown in ((dict(QWEN2_VL, vision_config=[]), "vision_config is \\[\\] \\(an empty list\\)"),
                         (dict(llava, text_config="x"), "text_config is 'x' \\(a string\\)")):
        with pytest.raises(ValueError, match=f"^config: {shown}: \\w+'s config class takes a config "
                                             r"\(a dict\) or null"):
            vkrope.from_hf(given)
    with pytest.raises(ValueError, match=r"^config: vision_config\.model_type is 'no_such_model', not a model type"):
        vkrope.from_hf({**llava, "vision_config": {"model_type": "no_such_model"}})


def test_a_kind_given_under_an_alias_is_refused_where_the_model_fails_on_it():
    """A key given under its attribute_map name is stored unchecked (the class validates its fields first), so
    the kinds refused there were measured at the model, built on the meta device and run (the differential
    adversary's 52 pairs were read): Mixtral's `num_experts: 8.0` and GPT-J's `hidden_size: 512.0` fail there
    and are refused; GPT-J's `max_position_embeddings: 2048.0` runs (its sinusoid table takes a float length)
    and is read, as its integer."""
    mixtral = {"model_type": "mixtral", "hidden_size": 256, "num_attention_heads": 4}
    with pytest.raises(ValueError, match=r"^config: num_experts is 8\.0 \(a float\): mixtral's config class "):
        vkrope.from_hf({**mixtral, "num_experts": 8.0})
    assert vkrope.from_hf({**mixtral, "num_experts": 8}) == vkrope.from_hf(mixtral)
    gptj = {"model_type": "gptj", "n_embd": 512, "n_head": 4, "rotary_dim": 64}
    with pytest.raises(ValueError, match=r"^config: hidden_size is 512\.0 \(a float\): gptj's config class "):
        vkrope.from_hf({"model_type": "gptj", "hidden_size": 512.0, "n_head": 4, "rotary_dim": 64})
    assert vkrope.from_hf({**gptj, "max_position_embeddings": 2048.0}) == vkrope.from_hf(gptj)
    assert vkrope.from_hf({**mixtral, "num_experts": np.int64(8)}) == vkrope.from_hf(mixtral)  # (stored
    # unchecked, and its model runs it; a key vkrope reads takes no numpy integer of vkrope's own rule)


def test_a_top_level_partial_factor_beside_the_dicts_own_is_not_read():
    """Phi's class reads the rope dict's partial_rotary_factor where it holds one (its setdefault leaves the
    top-level one unread), so a top-level factor out of range beside it is not checked (a reviewer's)."""
    phi = {"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4,
           "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}}
    assert vkrope.from_hf({**phi, "partial_rotary_factor": 1.5}).rotary_dim == 32


def test_the_kinds_of_value():
    """value_kind's letters, by Python's types (the classes' checks): a bool is no integer, an empty list "e",
    a list of ints (no bools) "l", any other list "m"."""
    cases = [(None, "n"), (True, "b"), (0, "i"), (-3, "i"), (0.0, "f"), (1e300, "f"), ("", "s"), ([], "e"),
             ([1, 2], "l"), ([1, True], "m"), ([1.0], "m"), (["a"], "m"), ([[1]], "m"), ({}, "d"),
             (np.int64(1), "?"), ((1,), "?")]
    assert [config_checks.value_kind(v) for v, _ in cases] == [k for _, k in cases]


def test_a_head_dim_the_rotary_module_reads_and_the_attention_does_not():
    """GLM-4V's rotary module takes a file's head_dim, its attention hidden_size // heads: the model runs only
    where the M-RoPE sections fit the module's width, and rotates heads vkrope's reading would not; another
    head_dim is refused (the model table's "quotient", measured), the quotient itself read."""
    glm = {"model_type": "glm4v_text", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 2,
           "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "mrope_section": [4, 6, 6],
                               "partial_rotary_factor": 0.5}}
    assert (vkrope.from_hf(glm).head_dim, vkrope.from_hf({**glm, "head_dim": 64}).rotary_dim) == (64, 32)
    for head in (32, 128):
        with pytest.raises(ValueError, match=f"config: head_dim {head}: the code of 'glm4v_text' did not rotate"):
            vkrope.from_hf({**glm, "head_dim": head})
    for bad in ("64", True):  # (a type error, said so, not another width)
        with pytest.raises(ValueError, match=f"^config: head_dim must be a number or null; got {bad!r}$"):
            vkrope.from_hf({**glm, "head_dim": bad})


def test_a_composite_config_around_another_text_model_is_read_as_that_model():
    """LlavaForConditionalGeneration builds its language model from text_config's own model type: a Gemma 3
    text config inside a llava keeps RoPE per layer type, its sliding layers on their own base."""
    text = {**GEMMA, "rope_theta": 77.0}
    cfg = {"model_type": "llava", "text_config": text}
    assert vkrope.hf_layer_types(cfg) == ("full_attention", "sliding_attention")
    assert vkrope.from_hf(cfg, layer_type="full_attention").theta == 77.0
    assert vkrope.from_hf(cfg, layer_type="sliding_attention").theta == 10000.0
    llama = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "rope_theta": 77.0}
    assert vkrope.from_hf({"model_type": "llava", "text_config": llama}).theta == 77.0  # (llava's own text type)


def test_a_composite_that_builds_its_own_text_class_ignores_the_text_configs_model_type():
    """Qwen2VLConfig, Qwen3VLConfig, Cosmos3EdgeConfig, ... build their own text config class whatever
    text_config's model_type says (llava honours it, above): a Qwen2-VL file whose text_config names qwen2
    is Qwen2-VL's language model (its theta 1e6 and M-RoPE sections), not Qwen2's (found by an adversarial
    user: the rules script had compared the built instance's model_type, which is the file's key)."""
    rules = json.loads(RULES.read_text())["models"]
    assert rules["qwen2_vl"]["outer"]["text_model_type"] is None
    assert rules["llava"]["outer"]["text_model_type"] is not None
    qwen = vkrope.from_hf({"model_type": "qwen2_vl", "text_config": {"model_type": "qwen2", "hidden_size": 3584,
                                                                      "num_attention_heads": 28}})
    assert (qwen.theta, qwen.mrope_section) == (1e6, (16, 24, 24))
    edge = vkrope.from_hf({"model_type": "cosmos3_edge", "text_config": {"model_type": "llama"}})
    assert edge.mrope_section == (24, 20, 20)


def test_a_class_with_rope_per_layer_type_never_reads_a_top_level_original_length(monkeypatch):
    """Gemma 3's, Olmo 3's model (standardize_rope_params per layer type) reads the rope dict's original
    length, else max_position_embeddings, never the top level's (Llama's reads the top level's); where the
    rule was not measured a top-level one beside a type that reads it is refused."""
    yarn = {"rope_type": "yarn", "factor": 4.0, "rope_theta": 1e4}
    both = {**GEMMA, "max_position_embeddings": 8192, "original_max_position_embeddings": 1024,
            "rope_scaling": dict(yarn, original_max_position_embeddings=2048)}
    assert vkrope.from_hf(both, layer_type="full_attention").original_max_position_embeddings == 2048
    top = dict(both, rope_scaling=yarn)
    assert vkrope.from_hf(top, layer_type="full_attention").original_max_position_embeddings == 8192
    llama = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 8192,
             "original_max_position_embeddings": 1024,
             "rope_scaling": dict(yarn, original_max_position_embeddings=2048)}
    assert vkrope.from_hf(llama).original_max_position_embeddings == 1024
    unknown = {"both": "unknown", "top_only": "unknown"}  # (a class whose rule was not measured)
    monkeypatch.setattr(config_rules, "original_length", lambda model_type: unknown)
    with pytest.raises(ValueError, match="original_max_position_embeddings: llama's model reads it in a way"):
        vkrope.from_hf(llama)
    assert vkrope.from_hf(dict(llama, rope_scaling=None)).rope_type == "default"  # (no type that reads it)


def test_a_key_a_class_with_rope_per_layer_type_needs_beside_its_rope_type_is_required():
    """Step 3.5's class raises (transformers' _check_received_keys, a KeyError) on a flat rope_scaling yarn or
    llama3 without its original length, even with one at the top level; nested per layer type it fills the
    dict's from max_position_embeddings (measured: hf_config_rules.json per_type needs). Laguna's raises
    nested as well; Gemma 3's fills it either way."""
    step = {"model_type": "step3p5", "max_position_embeddings": 8192}
    yarn = {"rope_type": "yarn", "factor": 4.0}
    for top in ({}, {"original_max_position_embeddings": 512}):
        with pytest.raises(ValueError, match=r"rope_scaling: original_max_position_embeddings is missing: "
                                             r"step3p5's config class needs it beside rope_type 'yarn'"):
            vkrope.from_hf({**step, **top, "rope_scaling": yarn}, layer_type="full_attention")
    read = vkrope.from_hf({**step, "rope_scaling": dict(yarn, original_max_position_embeddings=2048)},
                          layer_type="full_attention")
    assert read.original_max_position_embeddings == 2048
    nested = {"full_attention": dict(yarn, rope_theta=1e4)}
    read = vkrope.from_hf({**step, "rope_parameters": nested}, layer_type="full_attention")
    assert read.rope_type == "yarn" and read.original_max_position_embeddings == 8192
    with pytest.raises(ValueError, match=r"rope_parameters\['full_attention'\]: original_max_position_embeddings "
                                         "is missing: laguna's"):
        vkrope.from_hf({"model_type": "laguna", "rope_parameters": nested}, layer_type="full_attention")
    gemma = vkrope.from_hf({**GEMMA, "max_position_embeddings": 8192, "rope_scaling": dict(yarn, rope_theta=1e4)},
                           layer_type="full_attention")
    assert gemma.original_max_position_embeddings == 8192
    # a flat dict's legacy "type" names no type (merged into dicts that have a rope_type, it is not read):
    # transformers builds and runs these, their layers' own default, so no key of a "linear" is needed
    for model, legacy in (({**GEMMA}, {"type": "linear"}), ({"model_type": "olmo3"}, {"type": "llama3", "factor": 8.0})):
        assert vkrope.from_hf({**model, "rope_scaling": legacy}, layer_type="sliding_attention").rope_type == "default"


def test_a_flat_rope_dict_the_class_refuses_is_refused_for_every_layer_type(monkeypatch):
    """The class validates a flat rope_scaling whole, whichever layer types it merges it into (Gemma 3: its
    full layers; forced here: none): were Gemma 3's flat yarn to need its original length, every layer
    type's reading of such a file is refused (transformers fails on the config)."""
    cfg = {**GEMMA, "max_position_embeddings": 8192, "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    assert vkrope.from_hf(cfg, layer_type="sliding_attention").rope_type == "default"
    rules = json.loads(json.dumps(config_rules.rules_of("gemma3_text")))
    for per in rules["per_type"].values():
        per["flat"]["needs"] = {"yarn": ["factor", "original_max_position_embeddings"]}
        per["flat"]["scaling"] = False
    real = config_rules.rules_of
    monkeypatch.setattr(config_rules, "rules_of", lambda t: rules if t == "gemma3_text" else real(t))
    with pytest.raises(ValueError, match="rope_scaling: original_max_position_embeddings is missing"):
        vkrope.from_hf(cfg, layer_type="sliding_attention")


def test_a_partial_factor_the_rope_functions_move_in_late_is_refused():
    """Qwen2VLTextConfig keeps a file's partial_rotary_factor as an attribute beside its rope dict; transformers'
    yarn (linear, dynamic, ...) function moves it in (standardize_rope_params) when the model is built, so the
    module rotates half the head and its M-RoPE split fails: refused. The default type's frequencies span the
    head whatever the attribute (read), and so does a factor of 1."""
    base = {"model_type": "qwen2_vl_text", "partial_rotary_factor": 0.5}
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}
    for key in ("rope_parameters", "rope_scaling"):
        with pytest.raises(ValueError, match="partial_rotary_factor 0.5: qwen2_vl_text's config class keeps it "
                                             "beside its rope dict, and transformers' 'yarn' function moves it in"):
            vkrope.from_hf({**base, key: yarn})
    assert vkrope.from_hf(base).rotary_dim == vkrope.from_hf(base).head_dim
    assert vkrope.from_hf({**base, "partial_rotary_factor": 1.0, "rope_scaling": yarn}).rope_type == "yarn"


def test_m_rope_sections_a_width_does_not_span_are_refused():
    """GLM-OCR's rotary module splits its pairs by M-RoPE sections of its own where a config gives none ([8, 12,
    12], Qwen2-VL's chunks over GLM's adjacent pairs, each pair's cos repeated); transformers fails on a head
    whose pairs they do not span (split_with_sizes), so vkrope refuses it, naming the sections."""
    base = {"model_type": "glm_ocr_text"}
    assert vkrope.from_hf(base).rotary_dim == 64 == vkrope.from_hf({**base, "partial_rotary_factor": 1.0}).rotary_dim
    assert vkrope.from_hf(base).mrope_section == (8, 12, 12)
    for changed, pairs in (({"partial_rotary_factor": 0.5}, 16), ({"head_dim": 48}, 24)):
        with pytest.raises(ValueError, match=rf"the sections the rotary module of 'glm_ocr_text' takes then, \[8, 12, "
                                             rf"12\], do not span this head's {pairs} pairs \(transformers fails"):
            vkrope.from_hf({**base, **changed})


def test_a_width_unknown_m_rope_sections_may_not_span_is_refused(monkeypatch):
    """A rotary module splitting its pairs by M-RoPE sections of its own that the model table could not place
    (layout "unknown": GLM-OCR's once, known since; a newer transformers may hold another) is read as one axis at
    the width the table ran it with only (its bare config's); transformers' split fails on another, so vkrope
    refuses it. The table is changed here, as a newer one could be (no type is "unknown" today)."""
    from vkrope.models import hf, model_table

    models = model_table.table()["models"]
    entry = {k: v for k, v in models["glm_ocr_text"].items() if k != "mrope_section"}
    monkeypatch.setitem(models, "glm_ocr_text", {**entry, "mrope": "unknown"})
    hf._bare_width.cache_clear()
    base = {"model_type": "glm_ocr_text"}
    try:
        assert vkrope.from_hf(base).rotary_dim == 64
        for changed in ({"partial_rotary_factor": 0.25}, {"head_dim": 48}):
            with pytest.raises(ValueError, match=r"the rotary module of 'glm_ocr_text' splits its 32 pairs into "
                                                 r"M-RoPE sections of its own, which vkrope does not know"):
                vkrope.from_hf({**base, **changed})
    finally:
        hf._bare_width.cache_clear()  # (the table's own again)


def test_a_misread_key_of_one_kind_refuses_that_kind_only(monkeypatch):
    """A key vkrope reads for other models that a class reads otherwise given as one kind (`unread` with
    `kinds`: Gemma 3's list rope_theta once; no type's rules hold one today, a newer run may) is refused given so
    and read given as another (its number)."""
    from vkrope.models import config_rules

    models = config_rules.table()["models"]
    rule = {"default": 500000.0, "moved": "theta", "kinds": ["list"]}
    monkeypatch.setitem(models, "llama", {**models["llama"], "unread": {"rope_theta": rule}})
    cfg = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2}
    assert vkrope.from_hf({**cfg, "rope_theta": 20000.0}).theta == 20000.0
    with pytest.raises(ValueError, match=r"^config: rope_theta \[20000\.0, 20000\.0\]: transformers' llama reads it "
                                         r"for RoPE otherwise than vkrope .*does not read it given as a list"):
        vkrope.from_hf({**cfg, "rope_theta": [20000.0, 20000.0]})


def test_a_class_fills_its_own_defaults_into_a_layer_type_the_file_gives():
    """NeoMMEConfig.convert_rope_params_to_dict: a layer type's dict without partial_rotary_factor gets the
    class's per-type default (its full layers rotate a quarter of the head), whatever rope type it names."""
    table = json.loads((pathlib.Path(vkrope.__file__).parent / "data" / "hf_models.json").read_text())
    own = table["models"]["neomme"]["defaults"]["rope_parameters"]["full_attention"]["partial_rotary_factor"]
    nested = {"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6},
              "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}
    full = vkrope.from_hf({"model_type": "neomme", "rope_parameters": nested}, layer_type="full_attention")
    assert own != 1.0 and dict(full.params).get("partial_rotary_factor") == own
    assert full.rotary_dim == int(full.head_dim * own)


def test_a_shape_never_probed_is_refused():
    """Both partial keys at once: no probe gave them together, so no reading is vouched for."""
    base = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}
    vkrope.from_hf({**base, "partial_rotary_factor": 0.5})
    with pytest.raises(ValueError, match="a shape not probed"):
        vkrope.from_hf({**base, "partial_rotary_factor": 0.5, "rotary_pct": 0.5})


def test_a_rope_type_the_class_refuses_is_refused():
    """Phi3Config's validation takes only default and longrope rope types: transformers raises on a linear
    one, and so does vkrope (where llama, which takes it, reads it)."""
    base = {"hidden_size": 64, "num_attention_heads": 4, "max_position_embeddings": 4096}
    scaling = {"rope_type": "linear", "factor": 2.0}
    assert dict(vkrope.from_hf({**base, "model_type": "llama", "rope_scaling": scaling}).params)["factor"] == 2.0
    with pytest.raises(ValueError, match="rope_type 'linear': phi3's config class refuses it"):
        vkrope.from_hf({**base, "model_type": "phi3", "rope_scaling": scaling})


def test_a_null_the_config_class_refuses_is_refused():
    """Qwen3's head_dim is a strict int field (transformers raises on a null one, as every class does on a null
    hidden_size); Llama's class reads a null head_dim as hidden_size // num_attention_heads."""
    base = {"hidden_size": 256, "num_attention_heads": 4, "head_dim": None}
    assert "head_dim" in config_rules.rules_of("qwen3")["null_refused"]
    with pytest.raises(ValueError, match="head_dim is null: qwen3's config class refuses"):
        vkrope.from_hf({**base, "model_type": "qwen3"})
    assert vkrope.from_hf({**base, "model_type": "llama"}).head_dim == 64
    with pytest.raises(ValueError, match="hidden_size is null"):
        vkrope.from_hf({"model_type": "llama", "hidden_size": None, "num_attention_heads": 4, "head_dim": 16})


def test_the_llama4_scaling_keys_the_attention_reads_must_be_given():
    """Ministral 3's and Mistral 4's attention scale q by rope_parameters' llama_4_scaling_beta over its
    original length whatever the rope type (read from their modeling source): without either, transformers'
    model fails on None."""
    assert config_rules.attention_reads("ministral3") == ["llama_4_scaling_beta", "original_max_position_embeddings"]
    assert config_rules.attention_reads("llama") == []
    m3 = {"model_type": "ministral3", "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16}
    yarn = {"rope_type": "yarn", "rope_theta": 1e6, "factor": 2.0, "original_max_position_embeddings": 1024}
    with pytest.raises(ValueError, match="llama_4_scaling_beta is missing: ministral3's attention reads it"):
        vkrope.from_hf({**m3, "rope_parameters": yarn})
    default = {"rope_type": "default", "rope_theta": 1e6, "llama_4_scaling_beta": 0.1}
    for top in ({}, {"original_max_position_embeddings": 1024}):  # (the class keeps a top-level one out of the dict)
        with pytest.raises(ValueError, match="original_max_position_embeddings is missing"):
            vkrope.from_hf({**m3, **top, "rope_parameters": default})
    r = vkrope.from_hf({**m3, "rope_parameters": {**default, "original_max_position_embeddings": 1024}})
    assert r.q_scale(np.array([[0, 1024]])).tolist() == [[1.0, np.float32(1 + 0.1 * np.log(2.0))]]
    assert vkrope.from_hf({**m3, "rope_parameters": {**yarn, "llama_4_scaling_beta": 0.1}}).rope_type == "yarn"
    # (yarn, llama3 and longrope: transformers' standardization fills the dict's original length, the top
    # level's else max_position_embeddings, so the attention gets one; a regression refused these)
    bare = {k: v for k, v in yarn.items() if k != "original_max_position_embeddings"}
    for top in ({"max_position_embeddings": 4096}, {"max_position_embeddings": 4096,
                                                    "original_max_position_embeddings": 1024}):
        r = vkrope.from_hf({**m3, **top, "rope_parameters": {**bare, "llama_4_scaling_beta": 0.1}})
        assert r.rope_type == "yarn"


def test_a_rotary_width_other_than_the_attentions_is_refused():
    """DeepSeek-V3's attention rotates qk_rope_head_dim channels, its rotary module head_dim's (the file's
    where given); Mistral 4's rotary module head_dim times the factor its class puts into rope_parameters
    (none into a rope_scaling); transformers' model fails where the two differ."""
    ds = {"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 4, "qk_rope_head_dim": 8}
    assert vkrope.from_hf({**ds, "head_dim": 8}).rotary_dim == 8
    with pytest.raises(ValueError, match="qk_rope_head_dim, head_dim and the partial factor"):
        vkrope.from_hf({**ds, "head_dim": 16})
    with pytest.raises(ValueError, match="^config: head_dim is null: deepseek_v3's config class refuses a null "
                                         "head_dim, or its model fails on one"):  # (measured: its rotary module
        vkrope.from_hf({**ds, "head_dim": None})  # then takes hidden / heads, which q's rope part is not)
    assert vkrope.from_hf({**ds, "model_type": "deepseek_v2", "head_dim": 16}).rotary_dim == 8  # (ignored)
    m4 = {"model_type": "mistral4", "hidden_size": 64, "num_attention_heads": 4, "qk_rope_head_dim": 8,
          "qk_nope_head_dim": 8}
    yarn = {"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0, "original_max_position_embeddings": 64,
            "llama_4_scaling_beta": 0.1}
    assert vkrope.from_hf({**m4, "rope_parameters": yarn}).rotary_dim == 8
    for bad in ({"rope_scaling": yarn}, {"rope_parameters": {**yarn, "partial_rotary_factor": 1.0}},
                {"rope_parameters": {**yarn, "rope_type": "default"}}, {"rope_parameters": yarn, "head_dim": 8}):
        with pytest.raises(ValueError, match="qk_rope_head_dim, head_dim and the partial factor"):
            vkrope.from_hf({**m4, **bad})


def test_a_head_dim_alias_sets_the_key_it_names():
    """JetMoe's head_dim is its kv_channels (the class's attribute_map): a file's head_dim is the width, and
    wins over a kv_channels beside it, in either order, as transformers' class sets it (kv_channels 40); a null
    head_dim nulls kv_channels there, on which its model fails: refused."""
    jet = {"model_type": "jetmoe", "hidden_size": 64, "num_attention_heads": 4}
    assert vkrope.from_hf({**jet, "head_dim": 40}).rotary_dim == 40
    assert vkrope.from_hf({**jet, "head_dim": 40, "kv_channels": 8}).rotary_dim == 40
    assert vkrope.from_hf({**jet, "kv_channels": 8, "head_dim": 40}).rotary_dim == 40
    with pytest.raises(ValueError, match="config: kv_channels, head_dim and the partial factor"):
        vkrope.from_hf({**jet, "head_dim": None, "kv_channels": 128})


def test_a_no_rope_layers_list_longer_than_the_layers():
    """Llama 4's class derives layer_types from no_rope_layers where the file gives none, and validates their
    count (transformers raises); with layer_types, or SmolLM3's class, the model reads the first flags."""
    assert config_rules.rules_of("llama4_text")["nope_longer"] == {"without_layer_types": True,
                                                                  "with_layer_types": False}
    l4 = {"model_type": "llama4_text", "hidden_size": 64, "num_attention_heads": 4, "head_dim": 16,
          "num_hidden_layers": 2, "no_rope_layers": [1, 0, 1]}
    with pytest.raises(ValueError, match="no_rope_layers has 3 entries for num_hidden_layers 2"):
        vkrope.hf_layers(l4)
    layers = vkrope.hf_layers({**l4, "layer_types": ["chunked_attention", "full_attention"]})
    assert [r is None for r in layers] == [False, True]
    assert len(vkrope.hf_layers({**l4, "model_type": "smollm3"})) == 2


def test_nulls_the_classes_take_are_read_as_they_take_them():
    """A false-refusal hunt against transformers 5.25: a null rope_interleave is false to DeepSeek-V3's
    attention (tested for truth; GLM-4-MoE-Lite's class refuses it); a null partial_rotary_factor is none to
    the MLA classes (their rotary module spans the rotated head, 8 wide here, as without the key); MiniCPM 3's
    class ignores a file's head_dim, null too; Seed-OSS's takes a null head_dim as hidden // heads (64 for a
    5120 / 80 file: the rules measured it beside the class defaults' odd 51, which fails for its oddness)."""
    ds = {"model_type": "deepseek_v3", "hidden_size": 64, "num_attention_heads": 4, "qk_rope_head_dim": 8}
    assert vkrope.from_hf({**ds, "rope_interleave": None}) == vkrope.from_hf({**ds, "rope_interleave": False})
    with pytest.raises(ValueError, match="rope_interleave is null: glm4_moe_lite's config class refuses"):
        vkrope.from_hf({**ds, "model_type": "glm4_moe_lite", "rope_interleave": None})
    plain = vkrope.from_hf(ds)
    assert vkrope.from_hf({**ds, "partial_rotary_factor": None}) == plain and plain.rotary_dim == 8
    mc = {**ds, "model_type": "minicpm3"}
    assert vkrope.from_hf({**mc, "head_dim": None}) == vkrope.from_hf(mc)
    seed = vkrope.from_hf({"model_type": "seed_oss", "hidden_size": 5120, "num_attention_heads": 80, "head_dim": None})
    assert (seed.head_dim, seed.rotary_dim) == (64, 64)


# The cases below: an adversarial comparison of from_hf with transformers 5.25's own classes (a fuzz of about
# 34,000 configs) found each read silently wrong; each expected value is what transformers' class made of it.

def test_minimax_m2s_legacy_rotary_dim_is_its_partial_factor():
    """MiniMax-M2's released configs give rotary_dim 64 of head_dim 128 (no partial_rotary_factor): the class
    makes the factor rotary_dim / head_dim (measured: the rules' `partial_dims`); vkrope rotated whole heads."""
    cfg = {"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64, "rope_theta": 5e6}
    r = vkrope.from_hf(cfg)
    assert (r.head_dim, r.rotary_dim, dict(r.params)["partial_rotary_factor"]) == (128, 64, 0.5)
    assert vkrope.from_hf({**cfg, "partial_rotary_factor": 0.25}).rotary_dim == 32  # (the file's factor wins)
    assert vkrope.from_hf({**cfg, "rotary_dim": 64.0}).rotary_dim == 64  # (the class divides a float too)
    for bad in ("64", 10**400, float("nan"), 0):
        with pytest.raises(ValueError, match="rotary_dim must be a (positive finite )?number"):
            vkrope.from_hf({**cfg, "rotary_dim": bad})
    with pytest.raises(ValueError, match="rotary_dim 256: .* at most head_dim"):
        vkrope.from_hf({**cfg, "rotary_dim": 256})


def test_a_composite_fills_its_text_config_as_its_class_does():
    """Voxtral's class fills rope_theta 1e8 and head_dim 128 into a text_config lacking them (its Hub files give
    the legacy rope_theta, which vkrope refused for lacking rope_parameters); GLM-ASR's fills rope_parameters,
    whose theta then wins over a legacy rope_theta beside it."""
    hub = {"model_type": "voxtral", "text_config": {"model_type": "llama", "hidden_size": 3072, "head_dim": 128,
                                                    "rope_theta": 1e8, "num_attention_heads": 32,
                                                    "max_position_embeddings": 131072}}
    r = vkrope.from_hf(hub)
    assert (r.theta, r.head_dim) == (1e8, 128)
    r = vkrope.from_hf({"model_type": "voxtral", "text_config": {"hidden_size": 3072, "num_attention_heads": 32}})
    assert (r.theta, r.head_dim) == (1e8, 128)  # (Llama's own defaults: 1e4 and 3072 / 32 = 96)
    assert vkrope.from_hf({"model_type": "glmasr", "text_config": {"rope_theta": 1e6}}).theta == 1e4
    # (around another text model type, the class fills the text_config before building it as that type)
    r = vkrope.from_hf({"model_type": "voxtral", "text_config": {"model_type": "mistral", "hidden_size": 2048,
                                                                 "num_attention_heads": 32}})
    assert (r.model, r.theta, r.head_dim) == ("mistral", 1e8, 128)


@pytest.mark.parametrize("cfg, key", [
    ({"model_type": "falcon", "n_embed": 2048, "num_attention_heads": 32}, "n_embed"),  # (hidden_size 2048)
    ({"model_type": "step3p5", "num_hidden_layers": 4, "layer_types": ["sliding_attention", "full_attention"] * 2,
      "rope_theta": 5e6, "partial_rotary_factors": [1.0, 0.5, 1.0, 0.5]}, "partial_rotary_factors"),
    ({"model_type": "molmo2", "text_config": {"num_hidden_layers": 4, "rope_scaling_layers": [0, 1],
                                              "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                                                                  "rope_theta": 1e6,
                                                                  "original_max_position_embeddings": 8192}}},
     "rope_scaling_layers"),  # (layers 2 and 3 unscaled)
])
def test_keys_transformers_reads_for_rope_and_vkrope_does_not_are_refused(cfg, key):
    with pytest.raises(ValueError, match=rf"config: {key} .*reads it for RoPE otherwise than vkrope"):
        vkrope.from_hf(cfg)


def test_a_fill_the_class_applies_only_without_a_text_config_is_not_applied():
    """idefics2's and Fuyu's classes fill their presets only where the file gives no text_config (idefics2's
    max_position_embeddings 32768 made a yarn dict's original length 32768, transformers' Mistral 131072), and
    Fuyu's not into a text_config of another model type (Llama's 32 heads, not Fuyu's 64): read as
    transformers builds them, or refused, never with the preset."""
    for cfg, check in (({"model_type": "idefics2", "text_config": {"rope_parameters": {
            "rope_type": "yarn", "factor": 4.0, "rope_theta": 1e6}}},
                        lambda r: r.original_max_position_embeddings == 131072),
                       ({"model_type": "fuyu", "text_config": {"model_type": "llama"}}, lambda r: r.head_dim == 128)):
        try:
            r = vkrope.from_hf(cfg)
        except ValueError:
            continue
        assert check(r), (cfg, r)


def test_a_key_the_class_ignores_is_not_read():
    """UnlimitedOCR's class makes head_dim hidden_size // num_attention_heads whatever the file says."""
    cfg = {"model_type": "unlimited_ocr", "text_config": {"hidden_size": 2048, "num_attention_heads": 32,
                                                          "head_dim": 128}}
    assert vkrope.from_hf(cfg).head_dim == 64


def test_their_class_defaults_are_read():
    """The same keys as the class saves them by default: read (Molmo2's every-layer list, the 4B's null)."""
    text = {"num_hidden_layers": 4, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}}
    for scaled in (None, [0, 1, 2, 3]):
        assert vkrope.from_hf({"model_type": "molmo2", "text_config": {**text, "rope_scaling_layers": scaled}})
    del text["num_hidden_layers"]  # (the class's 36 layers)
    assert vkrope.from_hf({"model_type": "molmo2", "text_config": {**text, "rope_scaling_layers": list(range(36))}})


def test_gemma4s_last_layer_is_full_attention_whatever_the_file_says():
    types = vkrope.hf_layer_types({"model_type": "gemma4_text", "num_hidden_layers": 3})
    layers = vkrope.hf_layers({"model_type": "gemma4_text", "num_hidden_layers": 3,
                               "layer_types": ["sliding_attention"] * 3})
    assert "full_attention" in types and [r.layer_type for r in layers] == ["sliding_attention"] * 2 + [
        "full_attention"]


def test_a_rope_dict_per_layer_type_for_a_model_with_one_rope_is_refused():
    """Llama's class reads {"full_attention": {...}} as one flat dict (default type and theta); vkrope read the
    inner dict's."""
    with pytest.raises(ValueError, match="keyed by layer type .*one RoPE for every layer"):
        vkrope.from_hf({"model_type": "llama", "rope_parameters": {"full_attention": {"rope_type": "default",
                                                                                       "rope_theta": 5e5}}})


def test_a_nested_rope_dict_missing_a_layer_type_the_class_has_no_defaults_for_is_refused():
    """Step 3.5's class keeps a file's nested rope_parameters only where it has a dict for every type of
    layer_types; else it builds its own from rope_theta (a partial factor of 0.75 for full_attention then
    dropped). Such a file is refused (with a dict for every type too: the rules were measured on the class's
    own full_attention only)."""
    text = {"num_hidden_layers": 4, "layer_types": ["sliding_attention", "full_attention"] * 2,
            "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 1e4,
                                                   "partial_rotary_factor": 0.75}}}
    with pytest.raises(ValueError, match="layer_types names sliding_attention, which rope_parameters gives no dict"):
        vkrope.from_hf({"model_type": "step3p5", **text}, layer_type="full_attention")
    text["rope_parameters"]["sliding_attention"] = {"rope_type": "default", "rope_theta": 1e4}
    with pytest.raises(ValueError, match="holds 'sliding_attention' beside the layer types step3p5's config class"):
        vkrope.from_hf({"model_type": "step3p5", **text}, layer_type="full_attention")
    del text["rope_parameters"]  # (an adversary's: the layer type is the file's, not unknown; said so)
    for kw in ({"layer": 0}, {"layer_type": "sliding_attention"}):
        with pytest.raises(ValueError, match="^config: layer_types names 'sliding_attention', whose layers apply "
                                             "RoPE, and vkrope's model table holds step3p5's RoPE for "
                                             r"\['full_attention'\] only"):
            vkrope.from_hf({"model_type": "step3p5", **text}, **kw)


def test_odd_values_beside_the_new_rules_are_errors_not_readings():
    """A reviewer's cases: a non-integer head_dim the class would refuse (it ignores only integers); a huge
    num_hidden_layers beside Molmo2's list (no list of that length is built); legacy layer type names read as
    the classes rename them before the nested-dict check; a list among layer_types; MiniMax-M2's rotary_dim under
    two channels."""
    ocr = {"model_type": "unlimited_ocr_text", "hidden_size": 2048, "num_attention_heads": 32}
    for bad in ("x", 1.5, True, [1]):  # (a float, bool, str: the class's strict int field, float_refused, ...)
        with pytest.raises(ValueError, match="head_dim must be an integer or null|head_dim is (1.5|True|'x'|\\[1\\]) "
                                             "\\(.*\\): unlimited_ocr_text's config class takes .*an integer"):
            vkrope.from_hf({**ocr, "head_dim": bad})
    with pytest.raises(ValueError, match="rope_scaling_layers"):
        vkrope.from_hf({"model_type": "molmo2", "text_config": {"num_hidden_layers": 10**12,
                                                                "rope_scaling_layers": [0, 1]}})
    gemma = dict(GEMMA, layer_types=["sliding_attention", "attention"],
                 rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                                  "full_attention": {"rope_type": "default", "rope_theta": 1e6}})
    assert vkrope.from_hf(gemma, layer_type="full_attention").theta == 1e6
    with pytest.raises(ValueError):
        vkrope.from_hf({"model_type": "llama", "layer_types": [["full_attention"]],
                        "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}})
    with pytest.raises(ValueError, match="rotary_dim 0.5: .* at least 2"):
        vkrope.from_hf({"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 0.5})


@pytest.mark.parametrize("given, why", [
    ({"head_dim": 48}, "half its head_dim 48"),  # (the class's [24, 20, 20] span 64 pairs)
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e8, "mrope_section": [24, 20, 10]}}, "[24, 20, 10]"),
    ({"rope_parameters": {"rope_type": "default", "rope_theta": 1e8, "mrope_section": [24, 20, 19, 1]}}, ""),
])
def test_cosmos3_edge_sections_its_class_refuses_are_refused(given, why):
    """Cosmos3EdgeTextConfig.validate_architecture: three sections summing to half of head_dim, else it raises
    (transformers 5.25); the sections and head sizes it takes are read."""
    with pytest.raises(ValueError, match=r"mrope_section.*" + re.escape(why)):
        vkrope.from_hf({"model_type": "cosmos3_edge_text", **given})
    ok = vkrope.from_hf({"model_type": "cosmos3_edge_text", "head_dim": 96,
                         "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 16, 16]}})
    assert (ok.head_dim, ok.rotary_dim, ok.mrope_section, ok.theta) == (96, 96, (16, 16, 16), 1e6)


def test_a_hidden_size_the_heads_do_not_divide_as_each_class_takes_it():
    """Llama's config class refuses hidden_size 513 over 4 heads (its validate_architecture), head_dim beside it
    or not; Mistral's takes it, its head dim the quotient's floor (q_proj has heads * 128 outputs): read so."""
    for extra in ({}, {"head_dim": 128}):
        with pytest.raises(ValueError, match=r"^config: hidden_size 513 is not a multiple of num_attention_heads 4: "
                                             r"llama's code refuses that"):
            vkrope.from_hf({"model_type": "llama", "hidden_size": 513, "num_attention_heads": 4, **extra})
    assert config_rules.rules_of("llama")["heads_divide"] == {"bare": True, "head_dim": True}
    assert config_rules.rules_of("mistral")["heads_divide"] == {"bare": False, "head_dim": False}
    rope = vkrope.from_hf({"model_type": "mistral", "hidden_size": 513, "num_attention_heads": 4})
    assert rope.head_dim == 128 and rope.rotary_dim == 128
    for heads in (0, -3):  # (no heads: refused before the division, which Python's % fails too)
        with pytest.raises(ValueError, match=rf"^config: num_attention_heads must be >= 1; got {heads}"):
            vkrope.from_hf({"model_type": "llama", "hidden_size": 4096, "num_attention_heads": heads,
                            "head_dim": 128})


@pytest.mark.parametrize("value, refused", [(3, True), ([1.5], True), (["x"], True), ({"k": 1}, True),
                                            ([1, 2], False), ([], False), (None, False)])
def test_a_list_field_the_class_holds_empty_is_measured(value, refused):
    """Qwen2-MoE's class holds mlp_only_layers as [] and raises on anything but null or a list of integers;
    the rules measured no field the class holds empty (its own kind unknown), so `mlp_only_layers: 3` was read
    (the last stop's leftover). It is now measured at the first of [1], [0.5], ['x'] the class takes."""
    config = {"model_type": "qwen2_moe", "hidden_size": 256, "num_attention_heads": 4, "mlp_only_layers": value}
    if refused:
        with pytest.raises(ValueError, match=r"^config: mlp_only_layers is .*qwen2_moe's config class takes null "
                                             r"or an empty list or a list of integers there"):
            vkrope.from_hf(config)
    else:
        assert vkrope.from_hf(config).rope_type == "default"


def test_a_null_the_class_takes_beside_the_layer_types_is_read():
    """EXAONE 4.0 1.2B's config.json gives sliding_window and sliding_window_pattern null beside its
    layer_types: transformers loads it (the pattern makes the layer types only where a file gives none) and
    runs Llama 3's RoPE on every layer; vkrope refused it, the pattern's null measured alone (where the class
    raises) (an adversary's). Each golden case of such a key (the rules' `null_beside_layer_types`): vkrope
    reads what the class made, or refuses where it raised."""
    rules = config_rules.table()["models"]
    cases = [c for c in _golden()["cases"] for r in [rules.get(c["config"]["model_type"], {})]
             for k in [*(r.get("null_beside_layer_types") or []), *(r.get("null_needs_layer_types") or [])]
             if k in c["config"] and c["config"][k] is None]
    assert {c["config"]["model_type"] for c in cases} >= {"exaone4", "exaone_moe", "afmoe", "cohere2"}
    assert any("layer_types" not in c["config"] for c in cases) and any("layer_types" in c["config"] for c in cases)
    read = 0
    for case in cases:
        try:
            got = vkrope.from_hf(case["config"], layer_type=case["layer_type"])
        except ValueError:
            got = None
        want = case["want"]
        if want is None:  # (the class raised: refused)
            assert got is None, case
        elif got is not None:  # (or refused where the model fails, as the model table ran it: EXAONE 4's sliding
            assert [got.theta, got.rope_type] == want[:2], case  # layers with a null window)
            read += 1
    assert read >= 3
    exaone = {"model_type": "exaone4", "head_dim": 64, "hidden_size": 2048, "num_attention_heads": 32,
              "num_key_value_heads": 8, "num_hidden_layers": 4, "max_position_embeddings": 65536,
              "layer_types": ["full_attention"] * 4, "rope_theta": 1000000, "sliding_window": None,
              "sliding_window_pattern": None, "rope_scaling": {"factor": 16.0, "high_freq_factor": 4.0,
              "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
    assert [(r.rope_type, r.theta, r.factor) for r in vkrope.hf_layers(exaone)] == [("llama3", 1e6, 16.0)] * 4
    without = {k: v for k, v in exaone.items() if k != "layer_types"}
    with pytest.raises(ValueError, match="^config: sliding_window is null and there is no layer_types list: exaone4's"):
        vkrope.from_hf(without)  # (alone the class raises: the window and the pattern make the layer types)
    with pytest.raises(ValueError, match="^config: sliding_window_pattern is null: exaone4's config class takes"):
        vkrope.from_hf({**without, "sliding_window": 4096})


@pytest.mark.parametrize("model_type, key, given, layer_type", [
    ("exaone4", "sliding_window", ["full_attention"] * 4, "full_attention"),  # (its sliding layers fail without one)
    ("cohere2", "sliding_window_pattern", ["sliding_attention", "full_attention"] * 2, "sliding_attention"),
    ("gemma3_text", "sliding_window_pattern", ["sliding_attention", "full_attention"] * 2, "sliding_attention")])
def test_a_null_the_class_derives_the_layer_types_from_needs_them(model_type, key, given, layer_type):
    """A null the class derives the layer types from where a file gives none (EXAONE 4's sliding_window: 4 % 0;
    Cohere 2's and Gemma 3's sliding_window_pattern, an older name their code pops from its arguments):
    transformers fails to load such a file without layer_types, and vkrope read it (the second adversary of
    Hugging Face configs); beside a layer_types list both read it."""
    assert key in config_rules.table()["models"][model_type]["null_needs_layer_types"]
    config = {"model_type": model_type, key: None, "num_hidden_layers": 4}
    with pytest.raises(ValueError, match=rf"^config: {key} is null and there is no layer_types list: {model_type}'s "
                                         rf"config class derives the layer types from {key} where the file gives none"):
        vkrope.from_hf(config, layer_type="full_attention")
    rope = vkrope.from_hf({**config, "layer_types": given}, layer_type=layer_type)
    assert rope.rope_type == "default" and rope.theta == 10000.0

"""A config.json's `per_layer_config` (transformers 5's heterogeneous configs)
read as the model's own code reads it, or refused: where that code reads
none (Llama's, Qwen's: every layer built from one config), where it reads
some (Gemma 4's head widths per layer type, NeoMME's and Step's attention),
and at the top of a composite config; against what transformers' own models
made of the same files (tests/data/hf_per_layer_golden.json, written by
scripts/hf_per_layer_golden.py)."""

from __future__ import annotations

import json
import pathlib
import re

import numpy as np
import pytest

import vkrope

GOLDEN = json.loads((pathlib.Path(__file__).resolve().parents[1] / "data" / "hf_per_layer_golden.json").read_text())
# (the keys a RoPE reads, as the test's own word: a per-layer override of one of these makes transformers' model
# raise where it reads it, and vkrope must refuse it, not read some layer's value)
ROPE_KEYS = {"head_dim", "rope_parameters", "rope_theta", "num_attention_heads", "hidden_size",
             "partial_rotary_factor", "max_position_embeddings"}
# (the golden cases transformers runs and vkrope refuses: an override equal to what the class computes, or of a
# key the model no longer reads, that vkrope cannot tell from one it reads; refused, never read wrong)
REFUSED_THOUGH_RUN = {"head-dim-same", "theta-every-layer"}


def _raised_key(message: str) -> str:
    """The key transformers named raising: a per-layer attribute read globally, or one missing globally."""
    m = re.match(r"^'(\w+)' is a per-layer attribute|^The following attributes are missing: \['(\w+)'\]", message)
    assert m, message
    return m[1] or m[2]


def test_the_golden_comes_from_the_model_tables_transformers():
    """The golden was made by the transformers the model table was made from, and holds every case."""
    table = json.loads((pathlib.Path(vkrope.__file__).parent / "data" / "hf_models.json").read_text())
    assert GOLDEN["transformers"] == table["transformers"]
    assert len(GOLDEN["cases"]) == 125


ONE_CONFIG = [c for c in GOLDEN["cases"] if "inv_freq" in c["want"] or "per_layer_config" in c["config"]
              and c["config"]["model_type"] in {"llama", "mistral", "qwen2", "qwen3", "phi3", "olmo2", "granite",
                                                "exaone"}]
LAYERED = [c for c in GOLDEN["cases"] if c not in ONE_CONFIG]


@pytest.mark.parametrize("case", ONE_CONFIG, ids=lambda c: f"{c['config']['model_type']}-{c['name']}")
def test_a_per_layer_config_is_read_as_the_model_reads_it_or_refused(case):
    """Where transformers' model runs, vkrope gives its inverse frequencies bit for bit (0 ulps) and its scaling,
    or (REFUSED_THOUGH_RUN only) refuses; where it raises on a key a RoPE reads, vkrope refuses naming the
    layer and key; where it raises on another key (an MLP's width), vkrope refuses it where transformers' config
    does (a key it lacks, given on some layers only), else reads the global config's RoPE with `per_layer_config`
    listed as ignored (vkrope checks RoPE keys only)."""
    want = case["want"]
    try:
        got: vkrope.ModelRope | ValueError = vkrope.from_hf(case["config"])
    except ValueError as exc:
        got = exc
    if "inv_freq" in want:
        if isinstance(got, ValueError):
            assert case["name"] in REFUSED_THOUGH_RUN, got
            assert re.match(r"^config: per_layer_config\[0\] overrides (head_dim|rope_theta) ", str(got)), got
            return
        assert np.array_equal(got.inv_freq(), np.asarray(want["inv_freq"], np.float32))
        assert got.attention_factor == want["scaling"]
        assert ("per_layer_config" in got.ignored) == (case["name"] == "unknown-every-layer")
        return
    key = _raised_key(want["message"])
    if key in ROPE_KEYS:
        assert isinstance(got, ValueError), (key, got)
        assert re.match(rf"^config: per_layer_config\[\d\] overrides {key} \(a key its RoPE reads\), but the \w+ model "
                        r"builds its layers and rotary module from the global config, and transformers raises where "
                        r"code reads a key a layer overrides \(.*\): refused rather than guessed$", str(got)), got
    elif isinstance(got, ValueError) or want["message"].startswith("The following attributes are missing"):
        assert re.match(rf"^config: per_layer_config\[\d\] overrides {key} \(on some layers only, of a key vkrope "
                        r"does not know the config class to have: transformers' config raises on it where the class "
                        r"lacks it\)", str(got)), got  # (where transformers' config lacks it: its "missing")
    else:
        assert "per_layer_config" in got.ignored and got == vkrope.from_hf(
            {k: v for k, v in case["config"].items() if k != "per_layer_config"})


@pytest.mark.parametrize("case", LAYERED, ids=lambda c: f"{c['config']['model_type']}-{c['name']}")
def test_a_per_layer_config_of_a_layered_or_composite_model_is_read_as_it_reads_it_or_refused(case):
    """Gemma 4 (its rotary module reads each layer type's head width through transformers' per-type view),
    NeoMME (its attention per layer, its rotary module global), Gemma 3 (all global), and a per_layer_config at
    the top of a composite config (Gemma 3's, LLaVA's, Qwen2-VL's: their classes raise, even on {}): where
    transformers' model runs, each layer type's inverse frequencies bit for bit, or (a RoPE key's override:
    Gemma 3's partial factor on every layer, which its default frequencies do not read) a refusal; where it
    raises on a RoPE key or at the top, a refusal; on an MLP's key (NeoMME's), the RoPE read."""
    want, cfg = case["want"], case["config"]
    if "inv_freqs" in want:
        for layer_type, inv in want["inv_freqs"].items():
            try:
                got = vkrope.from_hf(cfg, layer_type=layer_type)
            except ValueError as exc:
                assert case["name"] == "partial-every-layer" and "overrides partial_rotary_factor (a key its RoPE " \
                    "reads)" in str(exc), exc
                continue
            assert np.array_equal(got.inv_freq(), np.asarray(inv, np.float32)), layer_type
        return
    if want.get("raises") and "intermediate_size" in want["message"]:
        assert vkrope.from_hf(cfg, layer_type="full_attention").head_dim == 16
        return
    if case["name"] == "top-level":
        words = "per_layer_config at the top of a composite"
    elif want["raises"] == "StrictDataclassFieldValidationError":  # (the class's strict per-layer head_dim)
        words = r"(per_layer_config\[1\]\.head_dim|global_head_dim) must be an integer >= 1 \(the config class's strict"
    elif want["message"].startswith("The following attributes are missing"):
        words = rf"per_layer_config\[1\] overrides {_raised_key(want['message'])} \(on some layers only"
    else:
        words = rf"per_layer_config\[\d\] overrides {_raised_key(want['message'])} \(a key its RoPE reads\)"
    for layer_type in ("full_attention", "sliding_attention"):
        with pytest.raises(ValueError, match=f"^config: {words}"):
            vkrope.from_hf(cfg, layer_type=layer_type)


def test_every_layer_of_a_one_config_model_reads_the_global_rope():
    """hf_layers gives every layer the global config's RoPE (the overrides are the model's MLP's), and a layer
    asked for by index reads the same: not its overrides merged."""
    cfg = {"model_type": "llama", "num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
           "per_layer_config": {str(i): {"intermediate_size": 32, "num_key_value_heads": 1} for i in range(3)}}
    plain = vkrope.from_hf({k: v for k, v in cfg.items() if k != "per_layer_config"})
    assert vkrope.hf_layers(cfg) == (plain,) * 3 and vkrope.from_hf(cfg, layer=1) == plain
    assert vkrope.from_hf(cfg).ignored == ("per_layer_config",)
    same = vkrope.from_hf({**cfg, "intermediate_size": 32, "per_layer_config": {"0": {"intermediate_size": 32,
                                                                                     "skip": []}}})
    assert same == plain and same.ignored == ()  # (equal to the file's own: dropped, as transformers drops it)
    for given in ({"head_dim": None}, {"head_dim": 16}):  # (a RoPE key equal to the file's value: transformers
        with pytest.raises(ValueError, match=r"^config: per_layer_config\[0\] overrides head_dim \(a key its RoPE "
                                             r"reads\)"):  # compares its class's, 16 where the file gives null)
            vkrope.from_hf({**cfg, **given, "per_layer_config": {"0": given}})
    gptj = {"model_type": "gptj", "n_layer": 2, "n_embd": 64, "n_head": 4, "rotary_dim": 8}
    for key in ("n_positions", "max_position_embeddings"):  # (GPT-J's key and its alias, on every layer: its
        with pytest.raises(ValueError, match=rf"^config: per_layer_config\[0\] overrides {key} \(a key its RoPE "
                                             r"reads\)"):  # sinusoidal table reads n_positions, and raises)
            vkrope.from_hf({**gptj, "per_layer_config": {"0": {key: 64}, "1": {key: 64}}})
    for kw in ({}, {"layer": 2}):  # (another layer's override of a RoPE key refuses the whole config, as the model)
        with pytest.raises(ValueError, match=r"^config: per_layer_config\[0\] overrides head_dim \(a key its RoPE "
                                             r"reads\), but the llama model builds its layers and rotary module from the "
                                             "global config"):
            vkrope.from_hf({**cfg, "per_layer_config": {"0": {"head_dim": 32}}}, **kw)


@pytest.mark.parametrize("model_type", ["llama", "gemma4_text"])
def test_a_per_layer_config_transformers_config_refuses_is_refused(model_type):
    """Checked as transformers' HeterogeneousConfigMixin checks it, for a model that reads it (Gemma 4) and one
    that does not: a dict of dicts keyed by layer indices in [0, num_hidden_layers), `skip` a list of strings;
    a layer's value that is not a dict was dropped before, not refused."""
    cfg = {"model_type": model_type, "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "head_dim": 16, "layer_types": ["sliding_attention", "full_attention"]}
    for given, words in (([{"head_dim": 8}], r"per_layer_config must be a dict \{layer index: overrides\} or null; "
                                              r"got \[\{'head_dim': 8\}\]"),
                         ({"x": {}}, "per_layer_config keys must be layer indices; got 'x'"),
                         ({"2": {}}, r"per_layer_config keys must be layer indices in \[0, 2\) \(num_hidden_layers\); "
                                     "got '2'"),
                         ({"-1": {}}, r"per_layer_config keys must be layer indices in \[0, 2\) \(num_hidden_layers\); "
                                      "got '-1'"),
                         ({"0": None}, r"per_layer_config\['0'\] must be a dict of overrides; got None"),
                         ({"1": 16}, r"per_layer_config\['1'\] must be a dict of overrides; got 16"),
                         ({"0": {"skip": "mlp"}}, r"per_layer_config\['0'\]\['skip'\] must be a list of strings; "
                                                  "got 'mlp'"),
                         ({"0": {"skip": [1]}}, r"per_layer_config\['0'\]\['skip'\] must be a list of strings; got \[1\]"),
                         ({"0": {b"rope_theta": 5.0}}, r"per_layer_config\['0'\]'s keys must be config key names "
                                                       r"\(str\); got b'rope_theta'")):  # (a Python dict's: an adversary's)
        for kw in ({"layer": 1}, {"layer_type": "full_attention"} if model_type != "llama" else {}):
            with pytest.raises(ValueError, match="^config: " + words):
                vkrope.from_hf({**cfg, "per_layer_config": given}, **kw)
    assert vkrope.from_hf({**cfg, "per_layer_config": {"0": {"skip": ["mlp"]}}}, layer=1) is not None


@pytest.mark.parametrize("model_type", ["step3p5", "step3p7"])
def test_steps_per_layer_rope_keys_are_refused_not_applied(model_type):
    """Two helpers' finding: Step 3.5 / 3.7 build their attention per layer but their rotary module from the
    global config (modeling_step3p7.py: Step3p7RotaryEmbedding(config=config) reads
    rope_parameters[layer_type].get("partial_rotary_factor", 1.0)), so a per-layer partial factor changes no
    frequency there; vkrope applied it (rotary_dim 64 of a 128 head, transformers 128). A per-layer head_dim
    makes transformers raise (its rotary module reads config.head_dim). Both are refused now."""
    cfg = {"model_type": model_type, "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "head_dim": 128, "layer_types": ["full_attention"] * 2}
    if model_type == "step3p7":
        cfg = {"model_type": "step3p7", "text_config": {**cfg, "model_type": "step3p7_text"}}
    text = cfg.get("text_config", cfg)
    assert vkrope.from_hf(cfg, layer=0).rotary_dim == 128
    for over in ({"partial_rotary_factor": 0.5}, {"head_dim": 64}):
        text["per_layer_config"] = {"0": over, "1": over}
        for kw in ({"layer": 0}, {"layer_type": "full_attention"}):
            with pytest.raises(ValueError, match=rf"^config: per_layer_config\[0\] overrides {next(iter(over))} \(a "
                                                 r"key its RoPE reads\), but the step3p\d\w* model builds its attention "
                                                 "per layer and its rotary module from the global config"):
                vkrope.from_hf(cfg, **kw)


def test_an_override_that_changes_another_layers_rope_refuses_every_reading():
    """A reviewer's finding: SmolLM3's attention reads the global no_rope_layers[layer_idx], and transformers
    raises on a per-layer override of it; vkrope compared only the layer asked for, so hf_layers read layer 1 as
    rotating while from_hf(layer=1) refused it. Each overriding layer's own RoPE is compared now."""
    cfg = {"model_type": "smollm3", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "num_key_value_heads": 2, "no_rope_layers": [1, 1], "per_layer_config": {"1": {"no_rope_layers": [1, 0]}}}
    for read in (lambda: vkrope.hf_layers(cfg), lambda: vkrope.from_hf(cfg), lambda: vkrope.from_hf(cfg, layer=0)):
        with pytest.raises(ValueError, match=r"^config: per_layer_config\[1\] overrides no_rope_layers \(that layer "
                                             r"then applies no RoPE\)"):
            read()


def test_gemma4s_global_head_dim_per_layer_is_a_key_its_class_lacks():
    """A reviewer's finding: Gemma4TextConfig pops global_head_dim into per-layer head widths, so it has no such
    attribute, and a per-layer global_head_dim on some layers makes transformers' config raise ("The following
    attributes are missing"), the file's top-level global_head_dim beside it or not."""
    cfg = {"model_type": "gemma4_text", "num_hidden_layers": 4, "hidden_size": 64, "num_attention_heads": 4,
           "head_dim": 16, "layer_types": ["sliding_attention", "full_attention"] * 2,
           "per_layer_config": {"1": {"global_head_dim": 64}, "3": {"global_head_dim": 64}}}
    for top in ({}, {"global_head_dim": 32}):
        with pytest.raises(ValueError, match=r"^config: per_layer_config\[1\] overrides global_head_dim \(on some "
                                             "layers only"):
            vkrope.from_hf({**cfg, **top}, layer_type="full_attention")


def test_steps_per_layer_heads_beside_a_head_dim_are_its_attentions():
    """A reviewer's finding: Step's class writes its sliding layers' head counts as per_layer_config overrides,
    its attention reads them per layer, and its rotary module the head_dim given (transformers runs it, and
    vkrope read it bit for bit before the RoPE-key refusal): read, not refused. Without a head_dim the rotary
    module reads hidden_size / heads: refused."""
    cfg = {"model_type": "step3p5", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
           "num_attention_groups": 2, "head_dim": 16, "layer_types": ["full_attention"] * 2,
           "per_layer_config": {"0": {"num_attention_heads": 8}}}
    plain = vkrope.from_hf({k: v for k, v in cfg.items() if k != "per_layer_config"}, layer=0)
    assert vkrope.from_hf(cfg, layer=0) == plain and vkrope.from_hf(cfg, layer=1) == plain
    with pytest.raises(ValueError, match=r"^config: per_layer_config\[0\] overrides head_dim \(a key its RoPE reads"):
        vkrope.from_hf({**cfg, "per_layer_config": {"0": {"head_dim": 8}}}, layer=0)

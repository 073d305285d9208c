"""A config.json's `per_layer_config` (transformers 5's heterogeneous configs)
read as the model's own code reads it: where that code reads none (Llama's,
Qwen's: every layer built from one config), against what transformers' own
models made of the same files (tests/data/hf_per_layer_golden.json, written
by scripts/hf_per_layer_golden.py)."""

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
    table = json.loads((pathlib.Path(vkrope.__file__).parent / "data" / "hf_models.json").read_text())
    assert GOLDEN["transformers"] == table["transformers"]
    assert len(GOLDEN["cases"]) == 104


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: f"{c['config']['model_type']}-{c['name']}")
def test_a_per_layer_config_is_read_as_the_model_reads_it_or_refused(case):
    """Where transformers' model runs, vkrope gives its inverse frequencies bit for bit (0 ulps) and its scaling,
    or (REFUSED_THOUGH_RUN only) refuses; where it raises on a key a RoPE reads, vkrope refuses naming the
    layer and key; where it raises on another key (an MLP's width), the RoPE is the global config's and
    `per_layer_config` is listed as ignored (vkrope checks RoPE keys only)."""
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
        assert re.match(rf"^config: per_layer_config\[\d\] overrides {key} \(.*AmbiguousGlobalPerLayerAttributeError\)"
                        r"; refused rather than guessed$", str(got)), got
    else:
        assert not isinstance(got, ValueError), got
        assert "per_layer_config" in got.ignored and got == vkrope.from_hf(
            {k: v for k, v in case["config"].items() if k != "per_layer_config"})


def test_every_layer_of_a_one_config_model_reads_the_global_rope():
    """hf_layers gives every layer the global config's RoPE (the overrides are the model's MLP's), and a layer
    asked for by index reads the same: not its overrides merged."""
    cfg = {"model_type": "llama", "num_hidden_layers": 3, "hidden_size": 64, "num_attention_heads": 4,
           "per_layer_config": {"1": {"intermediate_size": 32, "num_key_value_heads": 1}}}
    plain = vkrope.from_hf({k: v for k, v in cfg.items() if k != "per_layer_config"})
    assert vkrope.hf_layers(cfg) == (plain,) * 3 and vkrope.from_hf(cfg, layer=1) == plain
    assert vkrope.from_hf(cfg).ignored == ("per_layer_config",)
    same = vkrope.from_hf({**cfg, "per_layer_config": {"0": {"num_attention_heads": 4, "skip": []}}})  # (equal to the
    assert same == plain and same.ignored == ()  # file's own: dropped, as transformers drops it)
    for kw in ({}, {"layer": 2}):  # (another layer's override of a RoPE key refuses the whole config, as the model)
        with pytest.raises(ValueError, match=r"^config: per_layer_config\[0\] overrides head_dim \(that layer's "
                                             r"RoPE then: head_dim 32, rotary_dim 32, theta 10000\), but the llama "
                                             "model builds every layer from one config"):
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
                         ({"0": {"skip": [1]}}, r"per_layer_config\['0'\]\['skip'\] must be a list of strings; got \[1\]")):
        for kw in ({"layer": 1}, {"layer_type": "full_attention"} if model_type != "llama" else {}):
            with pytest.raises(ValueError, match="^config: " + words):
                vkrope.from_hf({**cfg, "per_layer_config": given}, **kw)
    assert vkrope.from_hf({**cfg, "per_layer_config": {"0": {"skip": ["mlp"]}}}, layer=1) is not None

"""Every transformers model type with a text rotary module, read by
`vkrope.from_hf` as its own code runs it, or refused (the model table,
vkrope/data/hf_models.json, and tests/data/hf_models_golden.npz, both
written by scripts/hf_model_table.py from transformers 5.25's own rotary
modules and attentions run on each model type's default config).

Per ok model type and rope layer type, the golden holds the default config,
the positions, the module's inverse frequencies and per-pair cos / sin, and
q before and after the attention's own rotary function (two heads; where
the attention rotated a slice of its heads, the rest of the head appended
unchanged); and, as "type@key/", the rotary module's output for the default
config with one RoPE key changed (theta doubled, a linear factor of 2, a
partial factor of 0.5, head_dim doubled: the probes the table's rules were
decided by). Tolerances: inverse frequencies within 4 float32 ulps of the
module's (torch's float32 power and reciprocal are not correctly rounded:
up to 3 ulps at a base of 1.2e7; a wrong base is millions of ulps off);
cos / sin within 4 float32 ulps of 1, plus, on a
column whose inverse frequency differs from torch's (torch's float32 power
is not always the correctly rounded one vkrope takes), that difference
times the position and one ulp of the angle, times the attention factor;
the kernel's q within that angle bound times |x| of the pair, plus 4 ulps
of the model's own float32 output. The rotation is checked against a
float64 rotation written here, sharing no code with vkrope.
"""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest

import vkrope
from vkrope.models import data as model_data
from vkrope.models import model_table as hf_models

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data")
GOLD = np.load(os.path.join(DATA, "hf_models_golden.npz"))
TABLE = hf_models.table()["models"]
CONFIG_RULES_ALL = model_data.load("hf_config_rules.json")  # (a copy of its own: parsed again)
CONFIG_RULES = CONFIG_RULES_ALL["models"]  # (what each config class refuses, found by scripts/hf_config_rules.py)
OK = sorted(t for t, e in TABLE.items() if e.get("status") == "ok")
ALL_CASES = sorted({k.rsplit("/", 1)[0] for k in GOLD.files if k.count("/") == 2})
CASES = [c for c in ALL_CASES if "@" not in c]  # the default configs
CHANGED = [c for c in ALL_CASES if "@" in c]  # type@key/...: a config with one RoPE key changed, as the model ran it


def golden_config(model_type: str) -> dict:
    """The default (text) config the model ran, nested where the table says the type keeps it (text_config,
    thinker_config.text_config), so from_hf's path through it is what the goldens check."""
    if "@" in model_type:  # a changed config: its model type's, with the keys the probe changed
        cfg = {**json.loads(str(GOLD[f"{model_type.split('@')[0]}/config"])),
               **json.loads(str(GOLD[f"{model_type}/changes"]))}
        model_type = model_type.split("@")[0]
    else:
        cfg = json.loads(str(GOLD[f"{model_type}/config"]))  # (model_type: the text config's own)
    path = TABLE[model_type]["text_config"]
    if not path:
        return dict(cfg, model_type=model_type)
    inner = cfg
    for key in reversed(path):
        inner = {key: inner}
    return dict(inner, model_type=model_type)


def part_of(case: str) -> str | None:
    """The part a golden case reads: its own where it names one ("type/key#part"); for a model type whose layers
    rotate two ways over the same angles (DeepSeek-V3.2), "attention" where only the angles and layers matter."""
    if "#" in case:
        return case.split("#", 1)[1].split("/")[0]
    return "attention" if TABLE[case.split("/")[0].split("@")[0]].get("parts") else None


def test_table_is_complete_and_consistent():
    """The table lists every model type of the transformers it was made from, each with RoPE and ok
    holding what from_hf reads, each refused one saying why; every ok type has goldens."""
    t = hf_models.table()
    assert t["generated_by"] == "scripts/hf_model_table.py" and t["transformers"] == "5.25.0"
    assert len(TABLE) > 800 and len(OK) > 200
    for name, e in TABLE.items():
        assert e.get("rope") in (True, False, None), name
        if e.get("status") == "ok":
            assert e["rope"] is True and e["sign"] == 1, name
            assert e["pairs"] in ("rotate_half", "interleaved", "interleaved_to_halves"), name
            assert e["by_layer_type"] and f"{name}/config" in GOLD.files, name
        elif e.get("rope") is not False:
            assert isinstance(e.get("status"), str) and e["status"], name
    assert {c.split("/")[0] for c in CASES} == set(OK)
    assert {c.split("@")[0] for c in CHANGED} <= set(OK) and len(CHANGED) > 300


def check_angles(rope, case: str) -> tuple:
    """vkrope's inverse frequencies and per-pair cos / sin for a golden case, within the module docstring's
    bounds of the module's; returns (module's cos, sin, the bound, positions)."""
    pos = GOLD[case + "/pos"].astype(np.int64)
    if case + "/inv_freq" in GOLD.files:  # the frequencies on their own: within torch's 1-ulp power
        ours = np.asarray(rope.freqs(pos).inv_freq, np.float32)
        theirs = GOLD[case + "/inv_freq"].astype(np.float32).reshape(-1)
        assert ours.shape == theirs.shape, case
        assert (np.abs(ours.view(np.int32).astype(np.int64) - theirs.view(np.int32).astype(np.int64)) <= 4).all(), case
    c, s = per_pair(rope, pos)
    gc, gs = GOLD[case + "/cos"].astype(np.float64), GOLD[case + "/sin"].astype(np.float64)
    assert c.shape == gc.shape, case
    bound = angle_bound(rope, case, pos)
    assert (np.abs(c - gc) <= bound).all() and (np.abs(s - gs) <= bound).all(), case
    return gc, gs, bound, pos


@pytest.mark.parametrize("case", CHANGED)
def test_changed_configs_read_as_the_model_runs_them(case):
    """The model type's default config with one RoPE key changed (theta doubled, a linear factor of 2, a
    partial factor of 0.5, head_dim doubled), as its rotary module computed it: read alike, or, where the
    module ignores the key (GPT-J's fixed base), read with the key ignored and listed in `ignored`."""
    model_type, change = case.split("/")[0].split("@")
    rules = CONFIG_RULES.get(model_type, {})
    # The module ran the changed parameters (the probe sets them past the class), but the config class
    # refuses a file with that type, or with the sections the probe scaled to half the head (Cosmos 3 Edge's
    # validate_architecture): no model runs it.
    refused = {"rope_type": ("linear" in rules.get("types_refused", []), "'linear': .*config class refuses it"),
               "partial_rotary_factor": ("mrope_sections" in rules, "mrope_section .*config class refuses")}
    if refused.get(change, (False,))[0]:
        with pytest.raises(ValueError, match=refused[change][1]):
            vkrope.from_hf(golden_config(case.split("/")[0]), layer=int(GOLD[case + "/layer"]), part=part_of(case))
        return
    rope = vkrope.from_hf(golden_config(case.split("/")[0]), layer=int(GOLD[case + "/layer"]), part=part_of(case))
    check_angles(rope, case)
    if change in TABLE[model_type].get("ignores", []):
        assert change in rope.ignored, case


def rotate64(x: np.ndarray, c: np.ndarray, s: np.ndarray, interleaved: bool) -> np.ndarray:
    """x [B, H, S, D] rotated in float64 by per-(token, pair) c, s [S, P]; interleaved pairs stay in place."""
    x = x.astype(np.float64)
    y, p = x.copy(), c.shape[-1]
    if interleaved:
        a, b = x[..., 0:2 * p:2], x[..., 1:2 * p:2]
        y[..., 0:2 * p:2], y[..., 1:2 * p:2] = a * c - b * s, b * c + a * s
    else:
        a, b = x[..., :p], x[..., p:2 * p]
        y[..., :p], y[..., p:2 * p] = a * c - b * s, b * c + a * s
    return y


def angle_bound(rope, case: str, pos: np.ndarray) -> np.ndarray:
    """[S, P]: how far cos or sin may be from the module's (see the module docstring)."""
    p = pos.astype(np.float64).reshape(-1, 1)
    ours = np.asarray(rope.freqs(pos).inv_freq, np.float64)
    key = case + "/inv_freq"
    theirs = GOLD[key].astype(np.float64) if key in GOLD.files else ours
    d = np.abs(ours - theirs) if theirs.shape == ours.shape else np.zeros_like(ours)
    off = p * d + (d > 0) * np.spacing(np.abs(p * ours).astype(np.float32)).astype(np.float64)
    return max(1.0, float(GOLD[case + "/scaling"])) * (off + 4 * 2.0**-23)


def per_pair(rope, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c, s = (t[0].astype(np.float64) for t in rope.cos_sin(pos))
    if rope.cos_layout == "repeated":
        return c[:, 0::2], s[:, 0::2]
    if rope.cos_layout == "single":
        return c, s
    return c[:, : c.shape[-1] // 2], s[:, : s.shape[-1] // 2]


@pytest.mark.parametrize("case", CASES)
def test_model_type_matches_its_attention(case):
    """from_hf on the model type's default config: cos / sin as its rotary module's, and the kernel's q as
    its attention's own rotary function returned it."""
    model_type = case.split("/")[0]
    rope = vkrope.from_hf(golden_config(model_type), layer=int(GOLD[case + "/layer"]), part=part_of(case))
    gc, gs, bound, pos = check_angles(rope, case)
    q_in, q_out = GOLD[case + "/q_in"], GOLD[case + "/q_out"].astype(np.float64)
    if int(GOLD[case + "/token_axis"]) == 1:  # [B, S, H, D] -> [B, H, S, D]
        q_in, q_out = q_in.transpose(0, 2, 1, 3), q_out.transpose(0, 2, 1, 3)
    q = np.ascontiguousarray(q_in)
    out = np.full_like(q, np.nan)
    vkrope.apply_rotary_pos_emb(q, q.copy(), rope, pos, out_q=out)
    rot = 2 * gc.shape[-1]
    pairs = TABLE[model_type]["parts"][part_of(case)]["pairs"] if "#" in case else TABLE[model_type]["pairs"]
    ref = rotate64(q, gc, gs, rope.interleaved)
    if pairs == "interleaved_to_halves":  # the model writes cat(even, odd); vkrope keeps the pairs in place
        out = out.copy()
        out[..., :rot] = np.concatenate([out[..., 0:rot:2], out[..., 1:rot:2]], -1)
        ref[..., :rot] = np.concatenate([ref[..., 0:rot:2], ref[..., 1:rot:2]], -1)
    mag = np.abs(q).max(-1, keepdims=True).astype(np.float64)
    tol = 2 * mag * bound.max() + 4 * np.spacing(np.abs(q_out).astype(np.float32)).astype(np.float64)
    assert np.isfinite(out).all(), case
    assert (np.abs(out - ref) <= tol).all(), case  # the float64 rotation by the module's cos / sin
    assert (np.abs(out - q_out) <= tol).all(), case  # and the model's own float32 output


@pytest.mark.parametrize("model_type", OK + [c.split("/")[0] for c in CHANGED if f"{c.split('/')[0]}/rotates" in GOLD])
def test_layers_without_rope(model_type):
    """Which layers rotate, as the model's attention did on the default config (and on one with the key that
    says so changed: Mllama's cross_attention_layers moved)."""
    layers = vkrope.hf_layers(golden_config(model_type), part=part_of(model_type))
    want = GOLD[f"{model_type}/rotates"]
    assert [r is not None for r in layers][: len(want)] == list(want), model_type
    rope_layers = [r for r in layers if r is not None]
    nope = tuple(i for i, w in enumerate(want) if not w)
    assert all(r.nope_layers == nope for r in rope_layers), model_type


TYPED = [t for t in OK if f"{t}/layer_types" in GOLD.files]


@pytest.mark.parametrize("model_type", TYPED)
def test_every_layer_type_as_the_model_ran_it(model_type):
    """LFM2's default config lists every layer as attention, so a file's "conv" layers were read as rotating.
    The golden keeps, per layer type of transformers', whether the model's attention rotated a layer of it
    (None: the model failed on it), with the sliding window as given and, where the window decides, null: each
    type on the layer the probe gave it reads so, or is refused."""
    base = golden_config(model_type)
    inner, path = base, TABLE[model_type]["text_config"]
    for key in path:
        inner = inner[key]
    kinds = json.loads(str(GOLD[f"{model_type}/layer_types"]))
    legacy, names = CONFIG_RULES_ALL["legacy_layer_types"], CONFIG_RULES_ALL["layer_type_names"]
    named = CONFIG_RULES.get(model_type, {}).get("layer_types") or {}
    named_last = CONFIG_RULES.get(model_type, {}).get("last_layer_type") is not None
    types = list(inner["layer_types"])
    base_overrides = dict(inner.get("per_layer_config") or {})
    for window, probed in kinds.items():
        i = probed["layer"]  # (the layer the probe gave the type, after the default config's layers before it)
        for name, rotates in probed["types"].items():
            if name in legacy or (name not in names and named.get("names")):
                continue  # (the config class renames it, or refuses it on loading: not the layer's question)
            after = [types[i]] if named_last else []  # (Gemma 4's class forces the last layer's type)
            inner.update(num_hidden_layers=i + 1 + len(after), layer_types=[*types[:i], name, *after])
            if isinstance(inner.get("per_layer_config"), dict):  # (the fewer layers' overrides only: transformers
                inner["per_layer_config"] = {k: v for k, v in base_overrides.items()  # refuses an index past them)
                                             if int(k) < inner["num_hidden_layers"]}
            if window == "null":
                inner["sliding_window"] = None
            cfg = json.loads(json.dumps(base))
            if rotates is None:  # (refused: the type by name, or the file by its config class)
                with pytest.raises(ValueError) as info:
                    vkrope.hf_layers(cfg, part=part_of(model_type))
                assert re.search(f"layer_types names '?{name}\\b", str(info.value)) or "config class r" in str(
                    info.value), (model_type, window, name, info.value)
                continue
            try:
                got = vkrope.hf_layers(cfg, part=part_of(model_type))[i] is not None
            except ValueError as exc:  # (a refusal: of the file by its config class, or of a rotating type
                # whose RoPE vkrope cannot read)
                assert "config class r" in str(exc) or (rotates and "layer_type" in str(exc) and "did not run"
                                                        not in str(exc)), (model_type, window, name, exc)
                continue
            assert got == rotates, (model_type, window, name)


def test_lfm2s_convolution_layers_apply_no_rope():
    """An LFM2 file's "conv" layers were given a RoPE (its default config lists every layer as attention, so the
    table had seen none): now None, and listed without RoPE."""
    cfg = {"model_type": "lfm2", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4,
           "layer_types": ["conv", "full_attention", "conv", "full_attention"]}
    assert vkrope.from_hf(cfg, layer=0) is None and vkrope.from_hf(cfg, layer=1) is not None
    assert [r is None for r in vkrope.hf_layers(cfg)] == [True, False, True, False]
    assert vkrope.from_hf(cfg).nope_layers == (0, 2)
    with pytest.raises(ValueError, match="layer_types names 'sliding_attention', a layer type the model's code did "
                                         "not run"):  # (its model fails on it: no mask for that type)
        vkrope.hf_layers(dict(cfg, layer_types=["conv", "full_attention", "conv", "sliding_attention"]))


# --- the silently wrong readings of issue #30, each pinned -------------------------------------------------
def gemma4_hub(**text) -> dict:
    """A Gemma 4 config.json as published: the full layers' width in global_head_dim (the class turns it into
    per-layer head_dim), RoPE per layer type."""
    types = ["sliding_attention"] * 5 + ["full_attention"]
    t = {"model_type": "gemma4_text", "hidden_size": 2560, "num_attention_heads": 8, "head_dim": 256,
         "global_head_dim": 512, "num_hidden_layers": 6, "layer_types": types, "max_position_embeddings": 131072,
         "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                             "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                "rope_theta": 1000000.0}}}
    t.update(text)
    return {"model_type": "gemma4", "text_config": t}


def test_gemma4_full_layers_are_512_wide():
    full = vkrope.from_hf(gemma4_hub(), layer_type="full_attention")
    assert (full.head_dim, full.rotary_dim) == (512, 512)
    assert np.count_nonzero(full.inv_freq()) == 64  # int(0.25 * 512 // 2) pairs turn
    inv = full.inv_freq().astype(np.float64)
    assert np.allclose(inv[:64], 1e6 ** (-np.arange(0, 128, 2) / 512), rtol=1e-6)  # over 512, not 256
    assert vkrope.from_hf(gemma4_hub(), layer=5) == full
    bare = vkrope.from_hf({"model_type": "gemma4"}, layer_type="full_attention")  # no layer list: the class's rule
    assert (bare.head_dim, bare.rotary_dim) == (512, 512)
    sliding = vkrope.from_hf(gemma4_hub(), layer=0)
    assert (sliding.head_dim, sliding.rotary_dim, sliding.theta) == (256, 256, 10000.0)
    # (a 256-wide slice of a 512 head: refused, with no hint of a wider head's rotated part)
    with pytest.raises(ValueError, match="head dim is 512 .*D = 256: pass the heads the model rotates$"):
        vkrope.apply_rotary_pos_emb(np.zeros((1, 1, 2, 256), np.float32), np.zeros((1, 1, 2, 256), np.float32),
                                    full, np.arange(2)[None])


@pytest.mark.parametrize("model_type", ["gemma4_text", "embedding_gemma2_text"])
def test_gemma4s_own_per_layer_config_wins_over_its_global_head_dim(model_type):
    """Gemma4TextConfig applies global_head_dim (512 by default) only where a file has no per_layer_config, not
    even a null one (transformers writes {} where the widths agree): then the full layers are head_dim wide
    (transformers 5.25: 128 frequencies of a 256 head; it read 512 here). A per_layer_config by layer index
    without layer_types says no layer's type: refused (the class derives them); one giving a type's layers
    different widths is refused as transformers' per-type view raises ("not homogeneous across layers")."""
    cfg = {"model_type": model_type, "hidden_size": 2560, "num_hidden_layers": 6, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 256, "sliding_window": 512}
    assert vkrope.from_hf(cfg, layer_type="full_attention").head_dim == 512  # (no per_layer_config: the class's)
    for given in (None, {}):
        assert vkrope.from_hf({**cfg, "per_layer_config": given}, layer_type="full_attention").head_dim == 256
    with pytest.raises(ValueError, match="^config: per_layer_config is by layer index and the config has no "
                                         "layer_types saying which layers are 'full_attention'"):
        vkrope.from_hf({**cfg, "per_layer_config": {"5": {"head_dim": 384}}}, layer_type="full_attention")
    types = ["sliding_attention"] * 2 + ["full_attention"] + ["sliding_attention"] * 2 + ["full_attention"]
    same = {**cfg, "layer_types": types, "per_layer_config": {"2": {"head_dim": 384}, "5": {"head_dim": 384}}}
    assert vkrope.from_hf(same, layer_type="full_attention").head_dim == 384
    assert vkrope.from_hf(same, layer=5).head_dim == 384 and vkrope.from_hf(same, layer=0).head_dim == 256
    # (as transformers compares them: an override equal to the config's own value is dropped first, a reviewer's)
    assert vkrope.from_hf({**same, "per_layer_config": {"2": {"head_dim": 256}}}, layer_type="full_attention") \
        .head_dim == 256
    kv = {**same, "per_layer_config": {"2": {"head_dim": 384}, "5": {"head_dim": 384, "num_key_value_heads": 2}}}
    assert vkrope.from_hf(kv, layer_type="full_attention").head_dim == 384
    with pytest.raises(ValueError, match=r"^layer: the config has no layer_types, so layer 5's type is unknown \(the "
                                         r"config class derives it\); pass the config as transformers saves it"):
        vkrope.from_hf({**cfg, "per_layer_config": {"5": {"head_dim": 384}}}, layer=5)  # (no circular advice)
    differ = {**same, "per_layer_config": {"2": {"head_dim": 384}, "5": {"head_dim": 512}}}
    for kw in ({"layer_type": "full_attention"}, {"layer": 0}):
        with pytest.raises(ValueError, match="per_layer_config gives the 'full_attention' layers different "
                                             "overrides.*not homogeneous across layers"):
            vkrope.from_hf(differ, **kw)


def test_a_per_layer_key_not_measured_beside_a_per_layer_config_is_refused(monkeypatch):
    """Where the table could not say whether the class turns its key (Gemma 4's global_head_dim) into per-layer
    overrides beside a file's own per_layer_config (`beside_per_layer_config` None: its probes disagreed or
    raised), such a file is refused, not read one way."""
    from vkrope.models import model_table
    rule = model_table.table()["models"]["gemma4_text"]["per_layer_keys"][0]
    monkeypatch.setitem(rule, "beside_per_layer_config", None)
    cfg = {"model_type": "gemma4_text", "hidden_size": 2560, "num_hidden_layers": 6, "num_attention_heads": 8,
           "num_key_value_heads": 2, "head_dim": 256, "sliding_window": 512}
    assert vkrope.from_hf(cfg, layer_type="full_attention").head_dim == 512
    with pytest.raises(ValueError, match="^config: per_layer_config beside global_head_dim: how the config class "
                                         "reads the two together was not measured"):
        vkrope.from_hf({**cfg, "per_layer_config": {}}, layer_type="full_attention")


def test_refused_model_types_name_themselves():
    base = {"hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 2}
    with pytest.raises(ValueError, match="'chatglm' is not in vkrope's model table.*like="):
        vkrope.from_hf(dict(base, model_type="chatglm", kv_channels=128))  # ChatGLM3: remote code
    with pytest.raises(ValueError, match="'nanochat' is refused.*-theta") as e:
        vkrope.from_hf(dict(base, model_type="nanochat"))
    assert "like=" not in str(e.value)  # (the table knows the difference: like='llama' would read it wrong)
    for layer in (None, 0):  # (a model of no RoPE at all: NoRopeLayers, whichever layer is asked for)
        with pytest.raises(vkrope.NoRopeLayers, match="'bert' applies no rotary embedding") as e:
            vkrope.from_hf(dict(base, model_type="bert"), layer=layer)
        assert e.value.reason.startswith("model_type 'bert': ")
    with pytest.raises(vkrope.NoRopeLayers, match="^like: 'gpt2' applies no rotary embedding") as e:
        vkrope.from_hf(dict(base, model_type="llama"), like="gpt2")  # (the caller's like, not the file's type)
    assert e.value.reason.startswith("like 'gpt2': ")
    with pytest.raises(TypeError, match="^layer must be an int"):  # (a bad argument first, as from_gguf's)
        vkrope.from_hf(dict(base, model_type="bert"), layer="x")
    with pytest.raises(ValueError, match="'dbrx' is refused: transformers' code could not be probed.*; if its "
                       "attention applies RoPE as another model type's does, pass like='<that model type>'"):
        vkrope.from_hf(dict(base, model_type="dbrx"))  # (unknown, not "no RoPE"; the caller may know better)
    with pytest.raises(ValueError, match=r"^like: 'dbrx' is refused: transformers' code could not be probed[^;]*$"):
        vkrope.from_hf(dict(base, model_type="llama"), like="dbrx")  # (like= given: no hint to give it)
    # the rotary module a text model holds, whatever its class is named (Higgs Audio's): refused, never "no
    # RoPE"; Qwen3-Omni's code predictor holds the plain one, not the thinker's M-RoPE
    for t in ("granite4_vision", "higgs_audio_v2", "kyutai_speech_to_text", "qwen3_omni_moe_talker_code_predictor"):
        with pytest.raises(ValueError, match=f"'{t}' is refused: "):
            vkrope.from_hf(dict(base, model_type=t))
    # GLM-Image's text model (probed at the partial factor its M-RoPE sections span): a head they do not span is
    # refused as transformers fails on it, one they span is read
    with pytest.raises(ValueError, match=r"sections the rotary module of 'glm_image_text' takes then, \[8, 12, 12\], "
                                         r"do not span this head's 64 pairs"):
        vkrope.from_hf(dict(base, model_type="glm_image_text"))
    glm = vkrope.from_hf(dict(base, model_type="glm_image_text", rope_parameters={
        "rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5, "mrope_section": [8, 12, 12]}))
    assert (glm.rotary_dim, glm.mrope_section) == (64, (8, 12, 12))
    with pytest.raises(ValueError, match="model_type is missing.*like="):
        vkrope.from_hf(base)
    with pytest.raises(ValueError, match="rope_scaling must be a dict or null; got \\[\\]"):
        vkrope.from_hf(dict(base, model_type="llama", rope_scaling=[]))
    with pytest.raises(ValueError, match="num_hidden_layers is True \\(a bool\\): llama.s config class takes an integer"):
        vkrope.from_hf(dict(base, model_type="llama", num_hidden_layers=True), layer=0)
    with pytest.raises(TypeError, match="layer must be an int"):
        vkrope.from_hf(dict(base, model_type="llama"), layer="0")
    with pytest.raises(ValueError, match="like: 'lama' is not a model type.*llama"):
        vkrope.from_hf(base, like="lama")
    assert vkrope.from_hf(dict(base, model_type="chatglm"), like="llama").head_dim == 128


def test_layers_without_rope_by_index():
    """Llama 4 and SmolLM3 (no_rope_layers), EXAONE 4 (its full layers while it has a sliding window) and
    Cohere 2 (its global layers): None for those layers, in from_hf, hf_layers and the summary."""
    smol = {"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 8,
            "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0], "rope_theta": 2e6}
    assert vkrope.from_hf(smol, layer=3) is None and vkrope.from_hf(smol, layer=2) is not None
    assert [r is None for r in vkrope.hf_layers(smol)] == [False, False, False, True] * 2
    assert vkrope.from_hf(smol).summary()["layers_without_rope"] == [3, 7]
    exa = {"model_type": "exaone4", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 4,
           "sliding_window": 4096, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    assert [r is None for r in vkrope.hf_layers(exa)] == [False, False, False, True]
    assert vkrope.from_hf(exa, layer_type="full_attention") is None
    # (no window: EXAONE-4.0-1.2B's full layers all rotate; a sliding layer, or any Cohere 2 layer, makes
    # transformers raise, "Could not find a `sliding_window` argument": refused)
    glob = dict(exa, sliding_window=None, layer_types=["full_attention"] * 4)
    assert all(r is not None for r in vkrope.hf_layers(glob))
    with pytest.raises(ValueError, match="layer_types names 'sliding_attention', a layer type the model's code did "
                                         "not run"):
        vkrope.hf_layers(dict(exa, sliding_window=None))
    coh = dict(exa, model_type="cohere2")
    assert [r is None for r in vkrope.hf_layers(coh)] == [False, False, False, True]
    with pytest.raises(ValueError, match="^config: sliding_window is null: cohere2's config class refuses a null "
                                         "sliding_window, or its model fails on one"):  # (its mask needs one)
        vkrope.hf_layers(dict(glob, model_type="cohere2"))
    with pytest.raises(ValueError, match="layer must be in \\[0, 4\\)"):
        vkrope.from_hf(exa, layer=4)
    bare = {k: v for k, v in exa.items() if k != "layer_types"}
    assert vkrope.from_hf(bare).nope_layers is None  # which layers rotate is unknown there, and said so
    assert vkrope.from_hf(bare).summary()["layers_without_rope"].startswith(
        "unknown: layer_types is missing, empty or not a list")  # (the key named, as the reading said it)
    # (the model builds num_hidden_layers layers: a longer no_rope_layers is cut, a shorter one fails in
    # transformers, as does a layer_types list of another length: both refused)
    assert len(vkrope.hf_layers(dict(smol, no_rope_layers=[1, 1, 1, 0] * 3))) == 8
    with pytest.raises(ValueError, match="no_rope_layers has 4 entries for num_hidden_layers 8"):
        vkrope.hf_layers(dict(smol, no_rope_layers=[1, 1, 1, 0]))
    with pytest.raises(ValueError, match="no_rope_layers has 4 entries for num_hidden_layers 8"):
        vkrope.from_hf(dict(smol, no_rope_layers=[1, 1, 1, 0]))  # (a plain read too: present and refused, not
        # "unknown", as a missing list is)
    with pytest.raises(ValueError, match="layer_types has 8 entries for num_hidden_layers = 4: cohere2's config class "
                                         "refuses that"):
        vkrope.from_hf(dict(coh, layer_types=coh["layer_types"] * 2))
    with pytest.raises(ValueError, match="layer_types is missing, empty"):
        vkrope.from_hf(bare, layer=3)
    hub = dict(smol, no_rope_layers=[])  # (transformers 5.25's class indexes it: IndexError, so refused)
    for call in (lambda: vkrope.from_hf(hub), lambda: vkrope.from_hf(hub, layer=3), lambda: vkrope.hf_layers(hub)):
        with pytest.raises(ValueError, match=r"^config: no_rope_layers is \[\] \(an empty list\): smollm3's config "
                                             r"class takes null or a list of integers there"):
            call()
    with pytest.raises(ValueError, match=r"^config: no_rope_layers is 5 \(an integer\): smollm3's config class"):
        vkrope.from_hf(dict(smol, no_rope_layers=5))  # (its class refuses it: not read as unknown, a plain read too)
    g3 = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "head_dim": 128, "hidden_size": 5376,
          "num_attention_heads": 32, "num_hidden_layers": 62, "rope_scaling": {"factor": 8.0, "rope_type": "linear"}}}
    with pytest.raises(ValueError, match="no layer_types, so layer 5's type is unknown"):
        vkrope.from_hf(g3, layer=5)  # (a Hub file without layer_types: layer_type= still reads it)
    assert vkrope.from_hf(g3, layer_type="full_attention").params == (("factor", 8.0),)


def test_layers_a_config_lists_by_index_apply_no_rope():
    """Mllama (Llama 3.2 Vision) builds a cross-attention layer, which rotates nothing, where `layer_idx in
    config.cross_attention_layers` (it was refused whole): an index past the layers or negative names none, an
    empty list none at all; a file without the list (its class fills in its own) reads with those layers
    unknown and refuses a layer; a list of anything but integers, which its class refuses, is refused."""
    text = {"model_type": "mllama_text_model", "hidden_size": 4096, "num_attention_heads": 32,
            "num_key_value_heads": 8, "num_hidden_layers": 8, "rope_theta": 500000.0,
            "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                             "original_max_position_embeddings": 8192}, "max_position_embeddings": 131072,
            "cross_attention_layers": [3, 7, 9]}
    assert [r is None for r in vkrope.hf_layers(text)] == [False, False, False, True] + [False] * 3 + [True]
    assert vkrope.from_hf(text, layer=3) is None and vkrope.from_hf(text, layer=2).rope_type == "llama3"
    assert vkrope.from_hf({"model_type": "mllama", "text_config": text}).nope_layers == (3, 7)
    assert vkrope.from_hf(dict(text, cross_attention_layers=[])).nope_layers == ()
    bare = {k: v for k, v in text.items() if k != "cross_attention_layers"}
    assert vkrope.from_hf(bare).nope_layers is None
    assert vkrope.from_hf(bare).summary()["layers_without_rope"].startswith(
        "unknown: cross_attention_layers is missing: the layers it lists apply no RoPE")
    with pytest.raises(ValueError, match=r"^config: cross_attention_layers is missing: .*AutoConfig"):
        vkrope.from_hf(bare, layer=1)
    assert vkrope.from_hf(dict(text, cross_attention_layers=[-1, 3])).nope_layers == (3,)  # (`in`, not indexing)
    for bad in ([3.0], [True], "3"):  # (its class's strict list[int] refuses them: a plain read too)
        for kw in ({}, {"layer": 1}):
            with pytest.raises(ValueError, match=r"^config: cross_attention_layers is .*: mllama_text_model's config "
                                                 r"class takes null or an empty list or a list of integers there"):
                vkrope.from_hf(dict(text, cross_attention_layers=bad), **kw)


def test_a_config_whose_layers_all_apply_no_rope_has_no_rope_to_give(monkeypatch):
    """from_hf naming no layer never returns None, nor a RoPE no layer uses: a config whose layers all apply
    none (Llama 4's no_rope_layers all 0; AFMoE of global layers only; a remote config llama.cpp's graph rotates
    nowhere) is NoRopeLayers, naming the key that says so; layer= still gives None."""
    from vkrope.models import gguf_convert
    from vkrope import NoRopeLayers

    l4 = {"model_type": "llama4_text", "hidden_size": 64, "num_attention_heads": 2, "num_hidden_layers": 4,
          "no_rope_layers": [0, 0, 0, 0]}
    with pytest.raises(NoRopeLayers, match=r"^config: its layers all apply no RoPE \(by no_rope_layers "
                                           r"\[0, 0, 0, 0\]\): it has no RoPE to give$"):
        vkrope.from_hf(l4)
    assert issubclass(NoRopeLayers, ValueError) and issubclass(NoRopeLayers, vkrope.VkropeError)
    assert vkrope.from_hf(l4, layer=0) is None
    assert vkrope.hf_layers(l4) == (None,) * 4
    assert vkrope.from_hf(dict(l4, no_rope_layers=[0, 0, 1, 0])).nope_layers == (0, 1, 3)
    afmoe = {"model_type": "afmoe", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 4,
             "layer_types": ["full_attention"] * 4}  # (its global layers apply none)
    with pytest.raises(NoRopeLayers, match=r"by layer_types \['full_atten"):
        vkrope.from_hf(afmoe)
    monkeypatch.setattr(gguf_convert, "_read", lambda *a, **k: None)  # (a graph rotating no layer)
    minicpm = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "remote_configs", "minicpm-2b.json")
    with pytest.raises(NoRopeLayers, match=r"^config \(MiniCPMForCausalLM, read as llama\.cpp's converter writes "
                                           r"it\): llama\.cpp's graph applies RoPE on none of its layers") as said:
        vkrope.from_hf(minicpm)
    assert said.value.reason.startswith("llama.cpp: its graph rotates where ")  # (its rule, not a bare phrase)
    assert vkrope.from_hf(minicpm, layer=0) is None


def test_head_dim_keys_pairs_and_text_configs():
    """The head-dim keys (JetMoE kv_channels, MLA qk_rope_head_dim with a partial factor saved beside it),
    the pairs (Youtu, OpenAI's privacy filter), the Omni models' thinker text config, Kimi-K2's betas."""
    jet = {"model_type": "jetmoe", "hidden_size": 2048, "num_attention_heads": 16, "kv_channels": 64}
    assert vkrope.from_hf(jet).head_dim == 64
    m4 = {"model_type": "mistral4", "hidden_size": 4096, "num_attention_heads": 32, "qk_rope_head_dim": 64,
          "rope_parameters": {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2.0, "llama_4_scaling_beta": 0.1,
                              "original_max_position_embeddings": 4096, "partial_rotary_factor": 0.5}}
    r = vkrope.from_hf(m4)
    assert (r.head_dim, r.rotary_dim, r.interleaved) == (64, 64, True)  # the factor is folded in already
    assert vkrope.from_hf({"model_type": "youtu", "hidden_size": 1024, "num_attention_heads": 8,
                           "qk_rope_head_dim": 64}).interleaved
    omni = {"model_type": "qwen2_5_omni", "thinker_config": {"text_config": {
        "model_type": "qwen2_5_omni_text", "hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1e6,
        "rope_scaling": {"type": "default", "mrope_section": [16, 24, 24]}}}}
    r = vkrope.from_hf(omni)
    assert (r.head_dim, r.theta, r.mrope_section) == (128, 1e6, (16, 24, 24))
    kimi = {"model_type": "kimi_k2", "hidden_size": 7168, "num_attention_heads": 64, "qk_rope_head_dim": 64,
            "max_position_embeddings": 131072, "rope_theta": 50000.0,
            "rope_scaling": {"type": "yarn", "factor": 32.0, "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0,
                             "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096}}
    with pytest.raises(ValueError, match="'kimi_k2' is not in vkrope's model table"):
        vkrope.from_hf(kimi)
    r = vkrope.from_hf(kimi, like="deepseek_v3")  # its remote code is DeepSeek-V3's
    assert r.rope_type == "yarn" and r.interleaved and np.isfinite(r.inv_freq()).all()


def test_llama4_scaling_beta_is_read_not_ignored():
    m3 = {"model_type": "ministral3", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
          "max_position_embeddings": 262144,
          "rope_parameters": {"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0, "beta_fast": 32.0,
                              "beta_slow": 1.0, "original_max_position_embeddings": 16384,
                              "llama_4_scaling_beta": 0.1}}
    r = vkrope.from_hf(m3)
    assert "llama_4_scaling_beta" not in r.ignored and "q_scale_after_rope" in r.summary()
    pos = np.array([[0, 16383, 16384, 100000]])
    want = 1 + 0.1 * np.log(1 + np.floor(pos / 16384))
    assert np.allclose(r.q_scale(pos), want, rtol=1e-6, atol=0) and r.q_scale(pos).dtype == np.float32
    assert vkrope.from_hf({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2}).q_scale(pos) is None
    other = vkrope.from_hf(dict(m3, model_type="llama"))  # Llama's attention never scales q: the key is not read
    assert other.q_scale(pos) is None and "llama_4_scaling_beta" in other.ignored


HUNYUAN = {"model_type": "hunyuan_v1_dense", "hidden_size": 4096, "head_dim": 128, "num_attention_heads": 32,
           "num_key_value_heads": 8, "max_position_embeddings": 32768, "rope_theta": 10000.0,
           "rope_scaling": {"alpha": 1000.0, "factor": 1.0, "type": "dynamic"}}


def test_hunyuans_alpha_is_its_fixed_base_and_read_nowhere_else():
    """HunYuan's code turns "dynamic" with alpha into its fixed-base ntk_alpha (the table's type_by_key, measured:
    its golden tests/data/hf_configs/hunyuan-7b-alpha.json); beside another rope type its code reads alpha
    otherwise (ignores it) than from_hf would without a measurement: refused, as a rope type no file names."""
    r = vkrope.from_hf(HUNYUAN)
    assert (r.rope_type, r.param("alpha"), r.theta) == ("ntk_alpha", 1000.0, 10000.0) and "factor" in r.ignored
    base = 10000.0 * 1000.0 ** (128 / 126)  # (Python's float64, as the module computes it; torch rounds it)
    want = np.float32(1) / (np.float32(base) ** (np.arange(0, 128, 2) / 128)).astype(np.float32)
    assert np.abs(r.inv_freq(40000).astype(np.float64) / want - 1).max() < 3e-7  # (fixed: past its length too)
    assert np.array_equal(r.inv_freq(1), r.inv_freq(1 << 20))
    for kind in ("default", "linear"):
        cfg = dict(HUNYUAN, rope_scaling={"alpha": 1000.0, "factor": 2.0, "type": kind})
        with pytest.raises(ValueError, match=r"alpha 1000\.0: the code of 'hunyuan_v1_dense' reads "
                                             r"rope_parameters\['alpha'\] and vkrope does not read it"):
            vkrope.from_hf(cfg)
    for falsy in (None, 0, 0.0, False):  # (its code tests alpha's truth: dynamic NTK, growing past its length)
        no_alpha = vkrope.from_hf(dict(HUNYUAN, rope_scaling={"alpha": falsy, "factor": 2.0, "type": "dynamic"}))
        assert no_alpha.rope_type == "dynamic" and no_alpha.param("factor") == 2.0, falsy
        assert ("alpha" in no_alpha.ignored) == (falsy is not None), falsy  # (given, and read by no code)
    with pytest.raises(ValueError, match=r"rope_type 'ntk_alpha' is not supported; vkrope reads \['default'"):
        vkrope.from_hf(dict(HUNYUAN, rope_scaling={"alpha": 1000.0, "rope_type": "ntk_alpha"}))
    llama = vkrope.from_hf(dict(HUNYUAN, model_type="llama"))  # (Llama's code reads no alpha: dynamic, listed)
    assert llama.rope_type == "dynamic" and "alpha" in llama.ignored


def test_a_default_head_dim_the_model_runs_with_only_as_the_quotient():
    """Helium's and ESM-C's default configs give head_dim as hidden_size / heads, and their models run with no
    other (Helium's o_proj is hidden x hidden; ESM-C's norms span hidden_size): another head_dim is refused, as
    a config whose model cannot run (the table asks the code with 2 D, hf_model_table.quotient_only)."""
    helium = {"model_type": "helium", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 4,
              "max_position_embeddings": 128}
    assert vkrope.from_hf(dict(helium, head_dim=16)).head_dim == 16
    for given, head in ((24, 24), (None, 128)):  # (none given: the class's 128, which its model fails on too)
        with pytest.raises(ValueError, match=rf"^config: head_dim {head}: the code of 'helium' did not rotate heads "
                                             r"of a head_dim other than hidden_size // num_attention_heads \(16\)"):
            vkrope.from_hf(helium if given is None else dict(helium, head_dim=given))


def test_a_head_size_a_model_cannot_be_built_without_is_required():
    """Ministral's and HunYuan's classes leave head_dim None and Nemotron's num_key_value_heads, and their
    models read them as given (None ** -0.5, a division by None): the table and the rules were probed over
    them (Hub files give them), and a file without is refused; with them it is read."""
    ministral = {"model_type": "ministral", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                 "head_dim": 128, "rope_theta": 1e8, "max_position_embeddings": 32768}
    assert vkrope.from_hf(ministral).theta == 1e8
    nemotron = {"model_type": "nemotron", "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                "head_dim": 128, "partial_rotary_factor": 0.5, "rope_theta": 10000.0}
    assert vkrope.from_hf(nemotron).rotary_dim == 64
    for cfg, key in ((ministral, "head_dim"), (HUNYUAN, "head_dim"), (nemotron, "num_key_value_heads")):
        for how, given in (("missing", {k: v for k, v in cfg.items() if k != key}), ("null", {**cfg, key: None})):
            with pytest.raises(ValueError, match=rf"^config: {key} is {how}: {cfg['model_type']}'s "):
                vkrope.from_hf(given)  # (a null: the null rule's words, or these; missing: these)
        missing = {k: v for k, v in cfg.items() if k != key}
        with pytest.raises(ValueError, match=rf"^config: {key} is missing: {cfg['model_type']}'s config class leaves "
                                             rf"{key} None and its model reads it as given"):
            vkrope.from_hf(missing)
    dots = {"model_type": "dots1", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
            "rope_theta": 1e7, "n_routed_experts": 128, "n_shared_experts": 2, "num_experts_per_tok": 6}
    assert vkrope.from_hf(dots).theta == 1e7
    aliased = {("num_local_experts" if k == "n_routed_experts" else k): v for k, v in dots.items()}
    assert vkrope.from_hf(aliased).theta == 1e7  # (the class's alias sets it, as transformers' attribute_map)
    with pytest.raises(ValueError, match=r"^config: n_shared_experts is missing: dots1's config class leaves"):
        vkrope.from_hf({k: v for k, v in dots.items() if k != "n_shared_experts"})


# Why a config giving only its model type may be refused (each a reading the class derives or leaves to the file).
BARE_REFUSALS = (r"layer: the config has no layer_types", r"config: (layer_types|no_rope_layers) is missing, empty",
                 r"config: rope_parameters\.mrope_section is missing, and the sections",
                 r"config: the rotary dim int\(head_dim 42 x", r"config: the head width 73 ",
                 r"config: cross_attention_layers is missing", r"config: this \S+ config has no (vlm_config\.)?text_config",
                 r"config: text_config is missing, and how", r"config: \w+ is missing: \w+'s config class leaves")
BARE_PROBED_OTHERWISE = {"glm4_moe_lite"}  # (its golden ran a 128-wide qk_rope_head_dim, the class default is 64)


@pytest.mark.parametrize("model_type", OK)
def test_a_config_giving_only_its_model_type_reads_the_class_defaults(model_type):
    """{"model_type": t} reads as the class's default config (the golden's config, which spells each key as
    the class saves it: GPT-J's n_embd), or is refused for a reason the class derives; GPT-J's and CodeGen's
    hidden_size, given under their attribute_map names, were "missing" before the table kept them."""
    kw = {"layer": 0, "part": part_of(model_type)}
    try:
        bare = vkrope.from_hf({"model_type": model_type}, **kw)
    except ValueError as exc:
        assert any(re.match(why, str(exc)) for why in BARE_REFUSALS), (model_type, str(exc))
        return
    if model_type not in BARE_PROBED_OTHERWISE:
        assert bare == vkrope.from_hf(golden_config(model_type), **kw), model_type


def test_readings_away_from_the_class_defaults():
    """What the table decided by running the code at other values than the defaults: Llama's default rope
    ignores partial_rotary_factor (its own compute_default_rope_parameters), Phi's reads it; like= on a nested
    config reads its text_config; GPT-NeoX's rotary_pct; a missing MLA key is refused, not replaced by
    hidden // heads; per-layer overrides per layer in hf_layers."""
    llama = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32,
             "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}}
    assert vkrope.from_hf(llama).rotary_dim == 128
    phi = dict(llama, model_type="phi", hidden_size=2560)
    assert vkrope.from_hf(phi).rotary_dim == 40
    vlm = {"model_type": "my_remote_vlm", "text_config": {"model_type": "llama", "hidden_size": 2048,
           "num_attention_heads": 32, "rope_theta": 500000.0, "max_position_embeddings": 131072,
           "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                            "original_max_position_embeddings": 8192}}}
    r = vkrope.from_hf(vlm, like="llama")
    assert (r.rope_type, r.head_dim, r.theta) == ("llama3", 64, 5e5)
    neox = {"model_type": "gpt_neox", "hidden_size": 2816, "num_attention_heads": 22, "num_hidden_layers": 36,
            "rotary_pct": 1.0, "rotary_emb_base": 10000, "max_position_embeddings": 2048}
    assert vkrope.from_hf(neox).rotary_dim == 128
    with pytest.raises(ValueError, match="qk_rope_head_dim is null: deepseek_v3.s config class refuses"):
        vkrope.from_hf({"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
                        "qk_rope_head_dim": None})
    oss = vkrope.from_hf({"model_type": "gpt_oss", "hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64})
    assert (oss.rope_type, oss.factor, oss.theta) == ("yarn", 32.0, 150000.0)  # the class's rope_parameters
    g4 = gemma4_hub(num_hidden_layers=12, layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 2,
                    per_layer_config={"5": {"head_dim": 1024}, "11": {"head_dim": 1024}})
    layers = vkrope.hf_layers(g4)
    assert (layers[0].head_dim, layers[5].head_dim, layers[11].head_dim) == (256, 1024, 1024)
    assert layers[11] == vkrope.from_hf(g4, layer=11)
    with pytest.raises(ValueError, match="not homogeneous across layers"):  # (transformers' per-type view raises
        vkrope.hf_layers(gemma4_hub(num_hidden_layers=12, layer_types=g4["text_config"]["layer_types"],  # on it)
                                    per_layer_config={"5": {"head_dim": 512}, "11": {"head_dim": 1024}}))


def test_keys_a_models_code_reads_otherwise():
    """An adversarial review against transformers' own modules: GPT-J and CodeGen build their table at base
    10000 whatever rope_theta or rope_scaling say (read so, the keys listed in `ignored`); Qwen3-Omni's
    thinker rotates the whole head at any partial_rotary_factor of the default rope type; OLMoE and Qwen2-VL
    run no head_dim but hidden // heads (refused), Solar Open no partial factor for its default rope type
    (refused); Qwen2-VL's module takes sections [16, 24, 24] where the
    config has none; Qwen3-VL's interleaved sections need not sum to D / 2. (Every such reading is also held
    to the module's own output by test_changed_configs_read_as_the_model_runs_them.)"""
    gptj = {"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64, "rope_theta": 50000.0,
            "rope_scaling": {"rope_type": "linear", "factor": 4.0}, "n_positions": 16384}  # (9000 rows and more)
    r = vkrope.from_hf(gptj)
    assert (r.theta, r.rope_type, r.params) == (10000.0, "default", ())
    assert {"rope_theta", "rope_type", "factor"} <= set(r.ignored)
    pos = np.array([[9000]])
    want = np.cos(9000 * 10000.0 ** (-2 / 64))  # pair 1 at base 10000 (50000 gives -0.96)
    assert abs(float(r.cos_sin(pos)[0][0, 0, 1 if r.cos_layout == "single" else 2]) - want) < 1e-3
    assert "rope_theta" not in vkrope.from_hf(dict(gptj, rope_theta=10000.0, rope_scaling=None)).ignored
    omni = {"model_type": "qwen3_omni_moe_text", "hidden_size": 2048, "num_attention_heads": 16, "head_dim": 128,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "partial_rotary_factor": 0.5,
                                "mrope_section": [12, 10, 10]}}
    assert vkrope.from_hf(omni).rotary_dim == 128
    for model_type in ("olmoe", "qwen2_vl_text"):  # (a flat qwen2_vl file's head_dim: not carried, refused)
        cfg = {"model_type": model_type, "hidden_size": 512, "num_attention_heads": 4, "head_dim": 64}
        with pytest.raises(ValueError, match=r"head_dim 64: .* other than hidden_size // num_attention_heads \(128\)"):
            vkrope.from_hf(cfg)
        assert vkrope.from_hf(dict(cfg, head_dim=128)).head_dim == 128  # (the quotient itself is fine)
    solar = {"model_type": "solar_open", "hidden_size": 1024, "num_attention_heads": 8, "head_dim": 128,
             "rope_parameters": {"rope_type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}}
    with pytest.raises(ValueError, match="partial_rotary_factor 0.5: .* did not run with a partial factor"):
        vkrope.from_hf(solar)  # (its code ran with no other factor when the table was made: not guessed)
    assert vkrope.from_hf(dict(solar, rope_parameters={"rope_type": "default", "rope_theta": 1e4})).rotary_dim == 128
    with pytest.raises(ValueError, match=r"must be \[B, S\]; got \[2, 1, 3\] \(positions per axis are M-RoPE's; "
                                         "this spec, read without M-RoPE sections, turns every pair by one position per token"):
        vkrope.from_hf({"model_type": "neomme", "hidden_size": 512, "num_attention_heads": 8, "head_dim": 64},
                       layer_type="full_attention").cos_sin(np.zeros((2, 1, 3), np.int64))  # (its 2 axes: not read)
    small = {"model_type": "qwen2_vl", "hidden_size": 512, "num_attention_heads": 8}
    with pytest.raises(ValueError, match=r"mrope_section is missing, and the sections the rotary module of "
                                         r"'qwen2_vl' takes then, \[16, 24, 24\], do not span this head's 32 pairs"):
        vkrope.from_hf(small)
    with pytest.raises(ValueError, match="mrope_section is null"):
        vkrope.from_hf(dict(small, rope_parameters={"rope_type": "default", "mrope_section": None}))
    with pytest.raises(ValueError, match="partial_rotary_factor 0.5: .* did not run with a partial factor"):
        vkrope.from_hf(dict(solar, rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                    "partial_rotary_factor": 0.5}))
    vl = vkrope.from_hf({"model_type": "qwen2_vl", "hidden_size": 1536, "num_attention_heads": 12})
    assert vl.mrope_section == (16, 24, 24) and vl.mrope_layout == "chunked"
    three = np.stack([np.arange(4), np.arange(4) * 2, np.arange(4) * 3])[:, None]  # [3, 1, S]
    c3, _ = vl.cos_sin(three)
    c1, _ = vl.cos_sin(np.arange(4)[None])
    assert not np.array_equal(c3, c1) and np.array_equal(vl.cos_sin(np.stack([np.arange(4)[None]] * 3))[0], c1)
    q3 = vkrope.from_hf({"model_type": "qwen3_vl_text", "hidden_size": 4096, "num_attention_heads": 32,
                         "head_dim": 128, "rope_parameters": {"rope_type": "default", "rope_theta": 5e6,
                                                              "mrope_section": [24, 20, 24]}})
    axis = np.zeros(64, int)  # transformers' recomposition_frequencies: freqs[..., 1:3 s1:3] from h, 2:3 s2:3 w
    axis[1:60:3], axis[2:72:3] = 1, 2
    assert q3.mrope_layout == "interleaved" and q3.pair_axis == tuple(axis)


def test_what_a_second_review_found_read_otherwise():
    """Falcon with alibi applies no RoPE (its model passes an ALiBi bias instead: refused, not a RoPE);
    GPT-NeoX's rotary module reads a head_dim its attention does not (refused); GPT-NeoX-Japanese's attention
    rotates a partial slice the table's default probe could not tell (refused); a flat Fuyu file's
    partial_rotary_factor, which its class does not carry into the language model (refused; its rope_theta,
    carried, is read); ColQwen2 with a flat vlm_config, which Qwen2VLConfig reads (read so, not as the class
    defaults); LFM3's convolution layers rotate nothing (a null sliding window is refused: its model's sliding
    mask fails on one, measured)."""
    falcon = {"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71}
    assert vkrope.from_hf(falcon).theta == 10000.0
    with pytest.raises(vkrope.NoRopeLayers, match=r"^config: its layers all apply no RoPE \(alibi true: falcon's "
                                                  "model switches RoPE off then"):
        vkrope.from_hf(dict(falcon, alibi=True))
    assert vkrope.from_hf(dict(falcon, alibi=True), layer=0) is None
    assert vkrope.hf_layers(dict(falcon, alibi=True)) == (None,) * 32
    with pytest.raises(ValueError, match=r"^config: alibi is 1 \(an integer\): falcon's config class takes null or a "
                                         "bool there"):  # (its strict field: FalconConfig(alibi=1) raises)
        vkrope.from_hf(dict(falcon, alibi=1))
    assert vkrope.from_hf(dict(falcon, alibi=False)).theta == 10000.0
    neox = {"model_type": "gpt_neox", "hidden_size": 2048, "num_attention_heads": 16, "rotary_pct": 0.25}
    with pytest.raises(ValueError, match="head_dim 192: the code of 'gpt_neox' did not rotate heads"):
        vkrope.from_hf(dict(neox, head_dim=192))
    assert vkrope.from_hf(neox).rotary_dim == 32
    jp = {"model_type": "gpt_neox_japanese", "hidden_size": 2560, "num_attention_heads": 32, "rotary_pct": 0.5}
    with pytest.raises(ValueError, match="partial_rotary_factor 0.5"):
        vkrope.from_hf(jp)
    fuyu = {"model_type": "fuyu", "hidden_size": 4096, "num_attention_heads": 64, "rope_theta": 25000.0}
    assert vkrope.from_hf(fuyu).theta == 25000.0
    with pytest.raises(ValueError, match="the top level gives partial_rotary_factor, which fuyu's config classes do "
                                         "not carry"):
        vkrope.from_hf(dict(fuyu, partial_rotary_factor=1.0))
    vlm = {"model_type": "qwen2_vl", "hidden_size": 1024, "num_attention_heads": 16, "rope_theta": 5e5,
           "rope_scaling": {"type": "mrope", "mrope_section": [8, 12, 12]}}
    r = vkrope.from_hf({"model_type": "colqwen2", "vlm_config": vlm})
    assert (r.head_dim, r.theta, r.mrope_section) == (64, 5e5, (8, 12, 12))
    with pytest.raises(ValueError, match="vlm_config gives partial_rotary_factor"):
        vkrope.from_hf({"model_type": "colqwen2", "vlm_config": dict(vlm, partial_rotary_factor=0.5)})
    with pytest.raises(ValueError, match=r"^config: rope_interleave is 1 \(an integer\): deepseek_v3's config class "
                                         r"takes null or a bool there"):  # (said once: its strict field)
        vkrope.from_hf({"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128,
                        "qk_rope_head_dim": 64, "rope_interleave": 1})
    lfm = {"model_type": "lfm3", "hidden_size": 2048, "num_attention_heads": 16, "head_dim": 128,
           "num_hidden_layers": 4, "layer_types": ["conv", "sliding_attention", "conv", "full_attention"]}
    for given in (dict(lfm, sliding_window=256), lfm):  # (given, or the class's)
        assert [r is not None for r in vkrope.hf_layers(given)] == [False, True, False, True], given
    with pytest.raises(ValueError, match="^config: sliding_window is null: lfm3's "):  # (its model's mask needs one)
        vkrope.hf_layers(dict(lfm, sliding_window=None))


def test_a_null_theta_switches_olmo_hybrids_rope_off():
    """OLMo hybrid's released files set rope_theta null, and its model then builds no rotary module (the model
    table's switch, found by running its code with the theta null): its layers all apply no RoPE, given flat or
    in the rope dict; absent, the class's 10000 stands. Other models' code fails on a null theta: refused."""
    olmo = {"model_type": "olmo_hybrid", "hidden_size": 3840, "num_attention_heads": 30, "num_hidden_layers": 8,
            "layer_types": ["linear_attention"] * 3 + ["full_attention"] + ["linear_attention"] * 3
            + ["full_attention"]}
    assert TABLE["olmo_hybrid"]["switches"] == {"rope_theta": {"value": None, "then": "none"}}
    for null in ({"rope_theta": None}, {"rope_parameters": {"rope_type": "default", "rope_theta": None}}):
        with pytest.raises(vkrope.NoRopeLayers, match=r"^config: its layers all apply no RoPE \(rope_theta null: "
                                                      "olmo_hybrid's model switches RoPE off then"):
            vkrope.from_hf(dict(olmo, **null))
        assert vkrope.hf_layers(dict(olmo, **null)) == (None,) * 8
        assert vkrope.from_hf(dict(olmo, **null), layer=3) is None
        assert vkrope.from_hf(dict(olmo, **null), layer_type="full_attention") is None
    for layers in (10**12, 0):  # (a flag a layer is made of the count: bounded first, as hf_layers' list is;
        # it ran out of memory)
        with pytest.raises(ValueError, match="num_hidden_layers must be (at most 65536|an integer|a positive)"):
            vkrope.from_hf({**{k: v for k, v in olmo.items() if k != "layer_types"}, "rope_theta": None,
                            "num_hidden_layers": layers}, layer=0)
    for given, theta in (({}, 10000.0), ({"rope_parameters": None}, 10000.0), ({"rope_theta": 5e5}, 5e5)):
        rope = vkrope.from_hf(dict(olmo, **given))
        assert (rope.theta, rope.nope_layers) == (theta, (0, 1, 2, 4, 5, 6)), given
    with pytest.raises(ValueError, match="rope_theta must be a number; got None"):
        vkrope.from_hf({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 2, "rope_theta": None})


def test_rope_the_whole_model_decides_per_layer():
    """What a third adversarial round found the model, not its attention, decides per layer: Muse Spark's
    zero layer_rope_theta and Lara's global layers get no RoPE (refused: a rule vkrope does not read); Granite
    SWA's layer_rope_theta is read only where it holds the one theta throughout."""
    for model_type in ("muse_spark_text", "lara_mini"):
        with pytest.raises(ValueError, match="its model passes no RoPE to layers"):
            vkrope.from_hf({"model_type": model_type, "hidden_size": 1024, "num_attention_heads": 8})
    granite = {"model_type": "granite_swa", "hidden_size": 2048, "num_attention_heads": 16, "num_hidden_layers": 4,
               "rope_theta": 1e4, "layer_types": ["full_attention"] + ["sliding_attention"] * 3}
    assert vkrope.from_hf(dict(granite, layer_rope_theta=[1e4] * 4), layer=0).theta == 1e4
    for per_layer in ([0.0, 1e4, 1e4, 1e4], [1e4, 1e6, 1e4, 1e4]):
        with pytest.raises(ValueError, match=r"layer_rope_theta .*: this model decides RoPE per layer by it"):
            vkrope.from_hf(dict(granite, layer_rope_theta=per_layer), layer=1)
    # (an adversary's: GraniteSWAModel.forward indexes layer_rope_theta[i] for every layer, IndexError on a shorter
    # list; a longer one it reads to num_hidden_layers)
    for layer_type in ("sliding_attention", "full_attention"):
        with pytest.raises(ValueError, match=r"^config: layer_rope_theta has 3 values for 4 layers \(num_hidden_layers\): "
                                             "this model reads one per layer"):
            vkrope.from_hf(dict(granite, layer_rope_theta=[1e4] * 3), layer_type=layer_type)
    assert vkrope.from_hf(dict(granite, layer_rope_theta=[1e4] * 5), layer=3).theta == 1e4


def test_a_key_the_table_refuses_takes_only_the_class_value(monkeypatch):
    """An entry's `refuses` (a key the model's code read otherwise than vkrope when the table was made): the
    class's value is read, another refused naming the key and the reason; the rest of the config as before."""
    entry = json.loads(json.dumps(TABLE["llama"]))
    entry.update(refuses={"rope_theta": "WHY", "rope_type": "WHY2"},
                 fixed={"*": {"rope_theta": 10000.0, "rope_type": "default", "params": {}}})
    patched = {**hf_models.table(), "models": {**TABLE, "llama": entry}}
    monkeypatch.setattr(hf_models, "table", lambda: patched)
    cfg = {"model_type": "llama", "hidden_size": 4096, "num_attention_heads": 32}
    assert vkrope.from_hf(dict(cfg, rope_theta=10000.0)).theta == 10000.0
    with pytest.raises(ValueError, match=r"rope_theta 500000: the only rope_theta vkrope takes for 'llama' is its "
                                         r"class's \(10000.0\): for another, WHY"):
        vkrope.from_hf(dict(cfg, rope_theta=500000.0))
    with pytest.raises(ValueError, match=r"rope type 'linear' \{'factor': 2.0\}: .*WHY2"):
        vkrope.from_hf(dict(cfg, rope_scaling={"rope_type": "linear", "factor": 2.0}))


def test_gemma4_full_rope_reads_its_factor_and_no_other_types_keys():
    """Gemma 4's full layers (the table refuses another rope type than the class's proportional, parameters
    included): a key of another rope type (yarn's beta_fast) is not read, as transformers does not, so it is no
    other rope type, only listed in `ignored`; a factor is proportional's own key, so it is one (refused). A
    ModelRope of that type made by hand divides by its factor."""
    plain = vkrope.from_hf(gemma4_hub(), layer_type="full_attention")
    for extra, refused in (({"beta_fast": 32.0}, False), ({"factor": 8.0}, True)):
        cfg = gemma4_hub()
        cfg["text_config"]["rope_parameters"]["full_attention"].update(extra)
        if refused:
            with pytest.raises(ValueError, match=r"rope type 'proportional' \{'factor': 8.0\}: the only rope_type "
                                                 r"vkrope takes for 'gemma4' is its class's"):
                vkrope.from_hf(cfg, layer_type="full_attention")
            continue
        rope = vkrope.from_hf(cfg, layer_type="full_attention")
        assert rope.ignored == ("beta_fast",) and rope.params == plain.params
        assert np.array_equal(rope.inv_freq(), plain.inv_freq())
    scaled = vkrope.ModelRope("proportional", 512, 512, 1e6, (("factor", 4.0), ("partial_rotary_factor", 0.25)))
    want = np.zeros(256)
    want[:64] = 1e6 ** (-np.arange(0, 128, 2) / 512) / 4
    assert np.allclose(scaled.inv_freq(), want, rtol=1e-6, atol=0)


def test_layer_indices_and_counts_at_their_bounds():
    """A layer index is in [0, num_hidden_layers), -1 too is refused (not read as the last layer); a config of
    MAX_LAYERS (65536) layers is taken, one more refused; hf_layers of no layers is an error, not ()."""
    cfg = {"model_type": "llama", "hidden_size": 1024, "num_attention_heads": 8, "num_hidden_layers": 4}
    with pytest.raises(ValueError, match=r"layer must be in \[0, 4\) \(the config's num_hidden_layers\); got -1"):
        vkrope.from_hf(cfg, layer=-1)
    most = dict(cfg, num_hidden_layers=1 << 16)
    assert vkrope.from_hf(most, layer=(1 << 16) - 1) == vkrope.from_hf(most)
    with pytest.raises(ValueError, match="num_hidden_layers must be at most 65536; got 65537"):
        vkrope.from_hf(dict(cfg, num_hidden_layers=(1 << 16) + 1), layer=0)
    with pytest.raises(ValueError, match="num_hidden_layers must be a positive integer; got 0"):
        vkrope.hf_layers(dict(cfg, num_hidden_layers=0))


def test_cli_config_says_which_layers_rotate(tmp_path, capsys):
    from vkrope.__main__ import main

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "smollm3", "hidden_size": 2048, "num_attention_heads": 16,
                                "num_hidden_layers": 8, "no_rope_layers": [1, 1, 1, 0, 1, 1, 1, 0]}))
    assert main(["config", str(path)]) == 0
    text = capsys.readouterr().out
    assert "the layers with RoPE:" in text and "layers_without_rope" in text and "[3, 7]" in text
    path.write_text(json.dumps({"model_type": "chatglm", "hidden_size": 4096, "num_attention_heads": 32}))
    assert main(["config", str(path)]) == 1
    assert "'chatglm' is not in vkrope's model table" in capsys.readouterr().err
    assert main(["config", str(path), "--like", "llama"]) == 0
    assert "head_dim                           128" in capsys.readouterr().out


def test_models_page_is_the_tables():
    """docs/MODELS.md (the README's table of models) is what scripts/models_md.py makes of the table."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = subprocess.run([sys.executable, os.path.join(root, "scripts", "models_md.py"), "--check"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    text = open(os.path.join(root, "docs", "MODELS.md"), encoding="utf-8").read()
    assert "| `llama` | yes |" in text and "| `nanochat` | refused | its attention rotates by -theta" in text
    # (Cohere 2's table says no layer rotates where sliding_window is null, but its model fails on one first: the
    # page says what from_hf does, the refusal; the page once said "when sliding_window is null, rotating: none")
    row = next(line for line in text.splitlines() if line.startswith("| `cohere2` |"))
    assert "a null sliding_window refused: transformers fails on one" in row and "is null, rotating" not in row
    cfg = {"model_type": "cohere2", "hidden_size": 512, "num_attention_heads": 8, "num_hidden_layers": 4,
           "sliding_window": None, "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    with pytest.raises(ValueError, match=r"^config: sliding_window is null: cohere2's config class refuses"):
        vkrope.from_hf(cfg)


def test_legacy_layer_type_names_are_renamed_as_every_config_class_does():
    """transformers' PreTrainedConfig renames legacy layer types on load (remap_legacy_layer_types:
    "attention" is full_attention, "mamba" linear_attention; the map is in the rules table, from its
    source): Qwen3-Next's fourth layer of ["mamba"] * 3 + ["attention"] rotates, as with the new names
    (vkrope read "attention" as no rotating type: no RoPE on any layer)."""
    base = {"model_type": "qwen3_next", "hidden_size": 2048, "num_attention_heads": 16, "head_dim": 256,
            "num_hidden_layers": 4, "partial_rotary_factor": 0.25, "rope_theta": 1e7}
    old = dict(base, layer_types=["mamba"] * 3 + ["attention"])
    new = dict(base, layer_types=["linear_attention"] * 3 + ["full_attention"])
    assert [r is None for r in vkrope.hf_layers(old)] == [True, True, True, False]
    assert vkrope.from_hf(old, layer=3) == vkrope.from_hf(new, layer=3)
    assert vkrope.from_hf(old).nope_layers == (0, 1, 2)
    lfm2 = {"model_type": "lfm2_moe", "num_hidden_layers": 2, "layer_types": ["mamba", "attention"]}
    with pytest.raises(ValueError, match=r"layer_types names 'linear_attention' \(or a legacy name transformers "
                                         r"reads so: 'mamba'\), a layer type the model's code did not run"):
        vkrope.hf_layers(lfm2)  # (the refusal names the file's word too: LFM2-MoE runs no linear attention)


def test_positions_past_a_models_fixed_table_are_refused():
    """GPT-J and CodeGen index a sin / cos table of max_position_embeddings
    rows (scripts/hf_position_limits.py found them by running each ok type's
    rotary module at the limit): their last row rotates, the limit is a
    ValueError before any GPU work (transformers raises IndexError there), by
    every front end that takes the ModelRope; a model computing its angles
    has no such limit, nor does a hand-made or GGUF spec."""
    limits = hf_models.position_limited()
    assert limits == {"gptj": 2048, "codegen": 2048} and all(TABLE[t]["status"] == "ok" for t in limits)
    q = np.random.default_rng(3).standard_normal((1, 8, 1, 64)).astype(np.float32)
    for cfg in ({"model_type": "gptj", "n_embd": 512, "n_head": 8, "rotary_dim": 32, "n_positions": 2048},
                {"model_type": "codegen", "n_embd": 512, "n_head": 8, "rotary_dim": 32, "n_positions": 2048},
                {"model_type": "gptj", "n_embd": 512, "n_head": 8, "rotary_dim": 32}):  # (the class's 2048 rows)
        rope = vkrope.from_hf(cfg)
        y, _ = vkrope.apply_rotary_pos_emb(q, q, rope, np.array([[2047]]))
        assert np.isfinite(y).all()
        for call in (lambda p: vkrope.apply_rotary_pos_emb(q, q, rope, p),
                     lambda p: vkrope.rotary_embedding(q, rope, None, p, interleaved=1),
                     lambda p: rope.freqs(p), lambda p: rope.cos_sin(p)):
            with pytest.raises(ValueError, match=r"max_position_embeddings = 2048 rows and has no rotation for "
                                                 r"position 2048 \(it raises IndexError there\)"):
                call(np.array([[0, 2048]]))
    llama = vkrope.from_hf({"model_type": "llama", "hidden_size": 512, "num_attention_heads": 8,
                            "max_position_embeddings": 2048})
    assert np.isfinite(llama.cos_sin(np.array([[5000]]))[0]).all()  # (computed: no table to run past)
    import dataclasses  # noqa: PLC0415
    own = dataclasses.replace(vkrope.from_hf({"model_type": "gptj", "n_embd": 512, "n_head": 8, "rotary_dim": 32,
                                              "n_positions": 2048}), source="")
    assert np.isfinite(own.cos_sin(np.array([[5000]]))[0]).all()  # (a spec not read from a config)


def test_every_mrope_layout_the_table_found_is_one_vkrope_reads():
    """The model table names each type's M-RoPE layout as scripts/hf_model_table.py found it running the
    module; from_hf reads those of MROPE_LAYOUTS and refuses the rest ("unknown"): a layout the generator
    learns must come with its pair axes in ModelRope.pair_axis, not pass as chunked."""
    from vkrope.models.rope import MROPE_LAYOUTS

    found = {e["mrope"] for e in TABLE.values() if e.get("mrope") is not None}
    assert found - {"unknown"} <= set(MROPE_LAYOUTS) and "alternating" in found, found


PARTED = sorted(t for t in OK if TABLE[t].get("parts"))


def test_a_model_rotating_in_parts_has_a_golden_per_part():
    """DeepSeek-V3.2 and A.X K2 rotate each layer two ways (the indexer rotate-half, the attention
    interleaved); GLM-5's indexer rotates as its attention: the table says so, with the
    key of the indexer's own head width, and keeps each part's rotation as the model ran it, each checked by
    test_model_type_matches_its_attention."""
    two_ways = ["axk2", "deepseek_v32"]
    assert set(two_ways) | {"glm_moe_dsa"} <= set(PARTED)
    for t in ("mistral_large4", "mistral_large4_text"):  # (LeRoPE: frequencies scaled by its weights' alpha)
        assert TABLE[t]["status"].startswith("its rotary module holds learned parameters (alpha), loaded with "
                                             "the model's weights"), t
    for t in PARTED:
        want = "rotate_half" if t in two_ways else "interleaved_to_halves"
        assert {p: v["pairs"] for p, v in TABLE[t]["parts"].items()} == {
            "attention": "interleaved_to_halves", "indexer": want}, t
        assert TABLE[t]["parts"]["indexer"]["head_key"] == "index_head_dim", t
        assert {c for c in CASES if c.startswith(f"{t}/")} == {f"{t}/*#attention", f"{t}/*#indexer"}, t
    assert not [c for c in CASES if "#" in c and c.split("/")[0] not in PARTED]


def test_an_indexer_rotating_as_its_attention_reads_either_way(tmp_path):
    """GLM-5 (glm_moe_dsa): its indexer rotates as its attention, so a config reads without part= (the
    attention's, the indexer's alike) and with either part; an indexer's heads narrower than the rotated width
    (its model cannot split them) are refused by the key that holds them."""
    cfg = golden_config("glm_moe_dsa")
    plain, att, idx = vkrope.from_hf(cfg), vkrope.from_hf(cfg, part="attention"), vkrope.from_hf(cfg, part="indexer")
    assert plain == att == idx and (plain.part, att.part, idx.part) == ("", "attention", "indexer")
    rot = plain.rotary_dim
    assert vkrope.from_hf(dict(cfg, index_head_dim=rot), part="indexer") == idx  # (no channel passes through)
    with pytest.raises(ValueError, match=rf"^config: index_head_dim {rot - 2} is narrower than the {rot} channels "
                                         "'?glm_moe_dsa'?'s indexer rotates at the start of each of its heads"):
        vkrope.from_hf(dict(cfg, index_head_dim=rot - 2), part="indexer")
    for bad in (None, "128", 0, 1.5, True):  # (all but 0 a kind its class refuses: its strict int field)
        with pytest.raises(ValueError, match=r"^config: index_head_dim (must be a positive integer|is .*: glm_moe_dsa's "
                                             r"config class takes an integer there)"):
            vkrope.from_hf(dict(cfg, index_head_dim=bad), part="indexer")
    for part in ("attention", None):  # (the model fails on its first layer running the indexer, whatever is read)
        with pytest.raises(ValueError, match=rf"^config: index_head_dim {rot - 2} is narrower than the {rot} channels"):
            vkrope.from_hf(dict(cfg, index_head_dim=rot - 2), part=part)
    ds = golden_config("deepseek_v32")
    with pytest.raises(ValueError, match=r"^config: index_head_dim 48 is narrower than the 64 channels"):
        vkrope.from_hf(dict(ds, index_head_dim=48), part="indexer")


AT = sorted(k.rsplit("/", 1)[0] for k in GOLD.files if k.endswith("/at"))  # type/key#part: its heads' own offset


@pytest.mark.parametrize("case", AT)
def test_a_part_with_heads_of_its_own_says_which_channels_rotate(case):
    """DeepSeek-V3.2's indexer splits its heads [rope, rest], HY-V4's [rest, rope] ("Flipped RoPE position"):
    the golden keeps where the model's q of the rotation sat in the part's projection, viewed as its heads. The
    ModelRope says which channels its head_dim covers (part_channels, its summary), and a call given the whole
    heads is refused naming that slice, not another model's."""
    model_type, part = case.split("/")[0], case.split("#")[1]
    at, width = int(GOLD[case + "/at"]), int(GOLD[case + "/part_width"])
    rope = vkrope.from_hf(golden_config(model_type), part=part)
    want = {0: "first", width - rope.head_dim: "last"}[at]
    assert rope.part_channels == want, case
    cut = f"q[..., :{rope.head_dim}]" if want == "first" else f"q[..., -{rope.head_dim}:]"
    assert rope.summary()["part_channels"] == f"the {want} {rope.head_dim} of each {part} head ({cut})", case
    assert vkrope.from_hf(golden_config(model_type), part="attention").part_channels == "", case
    heads = np.zeros((1, 2, 3, width), np.float32)
    with pytest.raises(ValueError, match=re.escape(f"pass the heads the model rotates ({model_type}'s {part}: {cut})")):
        vkrope.apply_rotary_pos_emb(heads, heads[:, :1], rope, np.arange(3)[None])
    cfg = golden_config(model_type)
    inner = cfg
    for key in TABLE[model_type]["text_config"]:  # (HY-V4-VL's text_config holds the part's head width)
        inner = inner[key]
    inner[TABLE[model_type]["parts"][part]["head_key"]] = rope.head_dim - 2
    with pytest.raises(ValueError, match=f"rotates at the {'start' if want == 'first' else 'end'} of each of its heads"):
        vkrope.from_hf(cfg, part=part)


def test_a_part_whose_channels_the_table_did_not_find_is_refused(monkeypatch):
    """Where the model table found the part's rotated channels in none of its projections ("at": "unknown"),
    which channels of its heads rotate is unknown: refused by name, never read as another model's."""
    monkeypatch.setitem(TABLE["deepseek_v32"]["parts"]["indexer"], "at", "unknown")
    with pytest.raises(ValueError, match=r"^part: where 'deepseek_v32''s indexer rotates within its heads is unknown"):
        vkrope.from_hf(golden_config("deepseek_v32"), part="indexer")
    assert vkrope.from_hf(golden_config("deepseek_v32"), part="attention").part == "attention"


RUNS = sorted(k for k in GOLD.files if "/runs#" in k)  # type[@key]/runs#part: the layers that ran the part


@pytest.mark.parametrize("key", RUNS)
def test_a_part_rotates_on_the_layers_that_run_it(key):
    """GLM-5's and HY-V4's attention builds its sparse indexer only where the layer's indexer_types entry
    is "full" (a "shared" layer reuses the selection of the full one before it): the indexer's RoPE is on
    the layers where the model ran the indexer (the golden's, of the default config and of one with the key
    changed), none elsewhere; the attention's on every layer."""
    case, part = key.split("/runs#")
    cfg, want = golden_config(case), [bool(w) for w in GOLD[key]]
    assert [r is not None for r in vkrope.hf_layers(cfg, part=part)] == want, key
    assert [vkrope.from_hf(cfg, part=part, layer=i) is not None for i in range(len(want))] == want, key
    assert vkrope.from_hf(cfg, part=part).nope_layers == tuple(i for i, w in enumerate(want) if not w), key
    assert all(r is not None for r in vkrope.hf_layers(cfg, part="attention")), key
    assert all(r is not None for r in vkrope.hf_layers(cfg)), key  # (GLM-5's parts alike: the attention's)
    assert any(not w for w in want) or "@" not in case, key  # (a changed config's probe has layers skipping)


def test_which_layers_run_a_part_is_read_as_the_config_class_reads_it():
    """Where a file has no indexer_types, GLM-5's config class derives it: from index_topk_freq /
    index_skip_topk_offset / index_topk_pattern where given (the class's code: refused for a layer, read for
    the rotating layers with the skipping ones unknown), else every layer "full"; HY-V4's by defaults of its
    own (refused for a layer). A first layer that skips, a value the model table did not run, a list shorter
    than the layers (the model fails on each): refused by the key."""
    cfg = golden_config("glm_moe_dsa@indexer_types")
    assert vkrope.from_hf(cfg, part="indexer", layer=1) is None
    bare = {k: v for k, v in cfg.items() if k != "indexer_types"}
    assert all(r is not None for r in vkrope.hf_layers(bare, part="indexer"))
    for key, value in (("index_topk_freq", 2), ("index_topk_pattern", "FSFS"), ("index_skip_topk_offset", 1)):
        with pytest.raises(ValueError, match=rf"^config: indexer_types is missing, and its config class derives it "
                                             rf"\(which layers run the indexer\) from {key}, which the file gives: "
                                             r"pass the config as transformers saves it"):
            vkrope.from_hf(dict(bare, **{key: value}), part="indexer", layer=1)
        plain = vkrope.from_hf(dict(bare, **{key: value}), part="indexer")
        assert plain.nope_layers is None and plain == vkrope.from_hf(cfg, part="indexer")
        assert vkrope.from_hf(dict(bare, **{key: value}), part="attention", layer=1) is not None
    for bad, why in ((["shared", "full", "full", "full"], r"starts with 'shared': the model's code fails where its "
                                                          r"first layer is one of \['shared'\]"),
                     (["full", "Shared", "full", "full"], r"names 'Shared', a value the model table did not run"),
                     (["full", "shared"], r"must be a list of one entry per layer \(4; "),
                     ("full", r"must be a list of one entry per layer")):
        with pytest.raises(ValueError, match=rf"^config: indexer_types {why}"):
            vkrope.from_hf(dict(cfg, indexer_types=bad), part="indexer", layer=2)
        if bad[0] == "shared":  # (the model fails on its first layer: no part of it runs, the skipping one too)
            with pytest.raises(ValueError, match=r"^config: indexer_types starts with 'shared'.*whatever is read"):
                vkrope.from_hf(dict(cfg, indexer_types=bad), part="attention", layer=2)
            with pytest.raises(ValueError, match=r"^config: indexer_types starts with 'shared'"):
                vkrope.from_hf(dict(cfg, indexer_types=bad), part="indexer", layer=0)
            continue
        assert vkrope.from_hf(dict(cfg, indexer_types=bad), part="attention", layer=2) is not None
    hy = {k: v for k, v in golden_config("hy_v4").items() if k != "indexer_types"}
    with pytest.raises(ValueError, match=r"^config: indexer_types is missing, and its config class derives it "
                                         r"\(which layers run the indexer\) by its own defaults"):
        vkrope.hf_layers(hy, part="indexer")


def test_a_model_rotating_two_ways_is_read_for_the_part_named(tmp_path, capsys):
    """from_hf and hf_layers refuse such a config without `part` (a RoPE of one part is wrong for the other),
    read each part named, and check `part` before reading anything; any other model rotates one way."""
    from vkrope.__main__ import main

    cfg = golden_config("deepseek_v32")
    for read in (vkrope.from_hf, vkrope.hf_layers):
        with pytest.raises(ValueError, match=r"'deepseek_v32' rotates 2 ways in each layer \(part='attention': "
                                             r"interleaved .*; part='indexer': rotate-half .*pass part="):
            read(cfg)
        with pytest.raises(ValueError, match=r"part must be one of \['attention', 'indexer'\] for 'deepseek_v32'; "
                                             r"got 'Indexer'"):
            read(cfg, part="Indexer")
        with pytest.raises(TypeError, match=r"part must be a str .* or None; got 1$"):
            read(str(tmp_path / "missing.json"), part=1)  # (before the path is read)
    assert vkrope.hf_parts(cfg) == ("attention", "indexer") and vkrope.hf_parts({"model_type": "llama"}) == ()
    att, idx = (vkrope.from_hf(cfg, part=p) for p in ("attention", "indexer"))
    assert (att.interleaved, idx.interleaved, att.part, idx.part) == (True, False, "attention", "indexer")
    assert np.array_equal(att.freqs(np.arange(8)).inv_freq, idx.freqs(np.arange(8)).inv_freq)
    assert idx.summary()["part"] == "indexer" and idx.summary()["pairs"] == "rotate-half"
    assert all(r.interleaved is False for r in vkrope.hf_layers(cfg, part="indexer") if r is not None)
    heads = np.zeros((1, 2, 3, 128), np.float32)  # (the indexer's whole heads: its first 64 channels rotate)
    with pytest.raises(ValueError, match=r"D = 128: pass the heads the model rotates \(deepseek_v32's indexer: "
                                         r"q\[\.\.\., :64\]\)$"):
        vkrope.apply_rotary_pos_emb(heads, heads, idx, np.arange(3)[None])
    with pytest.raises(ValueError, match=r"D = 128: pass the heads the model rotates \(the rotated part of each "
                                         r"head: q\[\.\.\., qk_nope_head_dim:\]\)$"):
        vkrope.apply_rotary_pos_emb(heads, heads, att, np.arange(3)[None])
    import dataclasses
    with pytest.raises(TypeError, match=r"^part must be a str \('attention', 'indexer', or '' for none\); got 5$"):
        dataclasses.replace(idx, part=5)
    llama = {"model_type": "llama"}
    assert vkrope.from_hf(llama, part="attention") == vkrope.from_hf(llama) and vkrope.from_hf(llama).part == ""
    with pytest.raises(ValueError, match="part: 'llama' rotates one way in its layers, its attention's"):
        vkrope.from_hf(llama, part="indexer")
    remote = os.path.join(os.path.dirname(DATA), "data", "remote_configs", "minicpm-2b.json")
    with pytest.raises(ValueError, match="part: 'minicpm' rotates one way"):
        vkrope.from_hf(remote, part="indexer")
    assert vkrope.from_hf(remote, part="attention") == vkrope.from_hf(remote) == vkrope.from_hf(remote, part="")
    assert vkrope.from_hf(llama, part=vkrope.from_hf(llama).part) == vkrope.from_hf(llama)  # ("" read back)
    like = dict(cfg, model_type="my_v32")  # (the caller's word that its attention is DeepSeek-V3.2's)
    with pytest.raises(ValueError, match=r"^config: 'deepseek_v32' rotates 2 ways in each layer"):
        vkrope.from_hf(like, like="deepseek_v32")
    assert vkrope.from_hf(like, like="deepseek_v32", part="indexer") == idx
    wrapped = {"model_type": "llava", "text_config": cfg, "vision_config": {"model_type": "clip_vision_model"}}
    with pytest.raises(ValueError, match=r"^config: 'deepseek_v32' rotates 2 ways in each layer"):
        vkrope.from_hf(wrapped)  # (a composite config read as the text config it names)
    assert vkrope.from_hf(wrapped, part="indexer") == idx
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main(["config", str(path)]) == 0
    text = capsys.readouterr().out
    assert "part attention, every layer:" in text and "part indexer, every layer:" in text
    assert text.count("rotate-half") == 1 and text.count("interleaved") == 1
    assert main(["config", str(path), "--part", "indexer", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairs"] == "rotate-half"
    assert main(["config", str(path), "--part", "x"]) == 1
    assert "--part must be one of ['attention', 'indexer']" in capsys.readouterr().err


def test_proportional_where_the_class_derives_the_partial_factor_needs_it_given():
    """Mistral 4's config class derives its partial factor from qk_rope_head_dim over the head it sums; the rules
    table holds the factor measured on its defaults, which proportional's turning pairs would take silently
    (an adversary measured errors of 7 at nope 0): refused without partial_rotary_factor in the rope dict, read
    with it."""
    cfg = {"model_type": "mistral4", "qk_rope_head_dim": 64, "qk_nope_head_dim": 0, "num_hidden_layers": 2,
           "rope_parameters": {"rope_type": "proportional", "rope_theta": 1e4, "llama_4_scaling_beta": 0.1,
                               "original_max_position_embeddings": 1024}}
    with pytest.raises(ValueError, match=r"^config: rope type 'proportional' on mistral4: which of the head's pairs "
                                         r"turn is its partial factor, .* give partial_rotary_factor in the rope dict$"):
        vkrope.from_hf(cfg)
    cfg["rope_parameters"]["partial_rotary_factor"] = 0.5
    rope = vkrope.from_hf(cfg)
    inv = rope.freqs(np.arange(4)).inv_freq
    assert rope.rotary_dim == 64 and np.count_nonzero(np.asarray(inv)) == 16

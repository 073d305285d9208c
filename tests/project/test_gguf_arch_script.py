"""scripts/gguf_arch_table.py's readers of llama.cpp's C++ on small
synthetic sources: each either says what the code does or "unknown" /
None, never a wrong condition (the table is only as right as these)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("gguf_arch_table", ROOT / "scripts" / "gguf_arch_table.py")
table = importlib.util.module_from_spec(spec)
sys.modules["gguf_arch_table"] = table
spec.loader.exec_module(table)


def at(body: str, needle: str) -> int:
    return body.index(needle)


def layers_where(body: str, needle: str) -> list[int]:
    """The layers 0..5 on which the code at `needle` runs, by the script's condition."""
    conds = table.enclosing_conditions(body, at(body, needle))
    return [il for il in range(6) if all(eval(c, {}, {"il": il}) for c in conds)]  # noqa: S307  (the test's own)


def test_an_else_after_else_if_negates_every_branch():
    body = "{ if (il < 2) { a(); } else if (il < 4) { b(); } else { rope(); } }"
    assert (layers_where(body, "a()"), layers_where(body, "b()"), layers_where(body, "rope")) == \
        ([0, 1], [2, 3], [4, 5])
    body = "{ if (il == 1) { a(); } else { rope(); } }"
    assert layers_where(body, "rope") == [0, 2, 3, 4, 5]


def test_a_ternary_side_is_read_only_in_the_plain_shapes():
    body = "{ cur = is_recr(il) ? conv(cur) : attn(cur); }"
    assert table.ternary_side(body, at(body, "attn")) == "not (is_recr(il))"
    assert table.ternary_side(body, at(body, "conv")) == "(is_recr(il))"
    body = "{ return il >= 3 ? o(x) : attn(x); }"
    assert table.ternary_side(body, at(body, "attn")) == "not (il >= 3)"
    for body in ("{ f(c ? a : b, attn(x)); }", "{ x = c ? (d ? attn(x) : y) : z; }", "{ x = attn(y) ? a : b; }"):
        assert table.ternary_side(body, at(body, "attn")) is None, body
    assert table.ternary_side("{ x = attn(y); }", 6) == ""


def test_set_offset_marks_only_the_calls_own_value():
    body = ("{ if (ocr) { Qcur = ggml_rope_ext(ctx0, Qcur, pos, nullptr, n_rot, rope_type, n_ctx_orig, freq_base, "
            "freq_scale, ext_factor, attn_factor, beta_fast, beta_slow); Qcur = other(Qcur); } else { "
            "Qcur = ggml_rope_ext(ctx0, q, pos, nullptr, n_rot, rope_type, n_ctx_orig, freq_base, freq_scale, "
            "ext_factor, attn_factor, beta_fast, beta_slow); Qcur = ggml_rope_set_offset(Qcur, nope); } }")
    calls = list(table.ROPE_CALL.finditer(body))
    assert [table.call_form(body, c, {})["slice"] for c in calls] == [False, True]


def test_an_indexer_call_is_its_own_part_with_the_reshaped_width():
    """A rope call on `indexer_*` (DeepSeek-V3.2's lightning indexer) is part "indexer", its heads the width of
    the tensor's last reshape before it (hparams.indexer_head_size, through its local); any other call has no
    part (the attention); an indexer never reshaped has an unknown width."""
    rope = ("ggml_rope_ext(ctx0, {t}, inp_pos, nullptr, n_rot, LLAMA_ROPE_TYPE_NEOX, n_ctx_orig, freq_base, "
            "freq_scale, ext_factor, attn_factor, beta_fast, beta_slow);")
    body = ("{ const int64_t n_embd_indexer_head = hparams.indexer_head_size; indexer_q = ggml_reshape_3d(ctx0, "
            "indexer_q, n_embd_indexer_head, n_indexer_head, n_tokens); indexer_q = " + rope.format(t="indexer_q")
            + " q_pe = " + rope.format(t="q_pe") + " indexer_k = " + rope.format(t="indexer_k") + " }")
    forms = [table.call_form(body, c, table.locals_of(body)) for c in table.ROPE_CALL.finditer(body)]
    assert [(f.get("part"), f.get("head")) for f in forms] == [("indexer", "indexer_head_size"), (None, None),
                                                               ("indexer", "unknown")]
    later = body.replace(" indexer_q = ggml_rope", " indexer_q = ggml_view_3d(ctx0, indexer_q, n_rot, a, b); "
                                                   "indexer_q = ggml_rope", 1)  # (made last by another op)
    first = next(table.ROPE_CALL.finditer(later))
    assert table.call_form(later, first, table.locals_of(later))["head"] == "unknown"
    # (the head's width is a field the program must set: its key read kept)
    assert "indexer_head_size" in table.fields_read({"rope_forms": [{**f, "guard": "True"} for f in forms]}, {})


def test_a_class_member_set_by_the_loader_is_a_local_of_the_program():
    """NanBeige's `n_loops = (int) n_loops_u;` (a member of its model class, no hparams. prefix) sets n_loops, which
    a condition of the program reads: the statement and the key read it depends on are kept."""
    assert table.set_name("n_loops = (int) n_loops_u;") == "n_loops"
    assert table.statement("n_loops = (int) n_loops_u;", {}) == ["local", "n_loops", "n_loops_u"]
    assert table.set_name("if (n_loops == 1) { x(); }") is None


def test_the_unknown_architecture_is_no_architecture_of_the_table(tmp_path):
    """LLM_ARCH_UNKNOWN's name "(unknown)" is what llama_model_create refuses as an unknown architecture: not
    an entry of the table (which would say it applies no RoPE)."""
    (tmp_path / "llama-arch.cpp").write_text('static const std::map<llm_arch, const char *> LLM_ARCH_NAMES = {\n'
                                             '    { LLM_ARCH_LLAMA, "llama" },\n'
                                             '    { LLM_ARCH_UNKNOWN, "(unknown)" },\n};\n')
    assert table.arch_names(tmp_path) == {"LLM_ARCH_LLAMA": "llama"}


def test_a_local_declared_twice_is_unknown():
    body = "{ if (swa) { const int w = n_rot; f(w); } else { const int w = n_rot / 2; g(w); } }"
    assert table.locals_of(body)["w"] == "unknown_local()"
    assert table.locals_of("{ const int w = n_rot; f(w); }")["w"] == "n_rot"


def test_factors_as_a_condition_per_layer():
    body = "{ ggml_tensor * f = nullptr; if (!hparams.is_swa(il)) { f = model.layers[il].rope_freqs; } rope(f); }"
    got = table.factors_taken(body, "f", {}, at(body, "rope(f)"))
    assert re.sub(r"\s", "", got) == "(True)if((notis_swa(il)))else(False)"
    body = "{ ggml_tensor * f = model.get_rope_factors(cparams, il); rope(f); }"
    assert table.factors_taken(body, "f", {}, at(body, "rope(f)")) == "True"
    assert table.factors_taken("{ rope(nullptr); }", "nullptr", {}, 2) == "False"


def test_key_types_follow_each_reads_target():
    """Each key's GGUF types come from its target's C type and the loader call (get_key: exactly that
    type; get_key_or_arr into a std::array: it or an int array; get_arr into a vector: no bools), and a read
    inside a block is not one every file reaches; a key read twice must pass both."""
    kv = {"LLM_KV_A": "a", "LLM_KV_B": "b", "LLM_KV_C": "c", "LLM_KV_D": "d", "LLM_KV_E": "e", "LLM_KV_F": "f"}
    fields = table.field_types("\n    uint32_t n_a = 0;\n    std::array<uint32_t, LLAMA_MAX_LAYERS> n_arr;\n"
                               "    float f_x;\n    enum llama_pooling_type pooling;\n")
    body = ("{ ml.get_key(LLM_KV_A, hparams.n_a); float scale = 0.0f; ml.get_key(LLM_KV_B, scale, false);"
            " ml.get_key_or_arr(LLM_KV_C, hparams.n_arr, hparams.n_layer, false);"
            " std::vector<llama_token> ids; if (x) { ml.get_arr(LLM_KV_D, ids); }"
            " ml.get_key(LLM_KV_E, hparams.pooling); ml.get_key(LLM_KV_F, mystery);"
            " ml.get_key(LLM_KV_GENERAL_NAME, name); ml.get_key(LLM_KV_A, hparams.f_x, false); }")
    got = table.key_types(body, kv, fields, {})
    # (uint32 and float32: no file passes both; one of the two reads requires it)
    assert got["a"] == {"accept": [], "always": True, "cond": "True", "required": "True"}
    assert got["b"] == {"accept": ["FLOAT32"], "always": True, "cond": "True", "required": "False"}
    assert got["c"] == {"accept": ["UINT32", "ARRAY[BOOL]", "ARRAY[UINT32]", "ARRAY[INT32]"], "always": True,
                        "cond": "True", "count": "n_layer", "required": "False"}
    # (a required get_arr of a vector: its arrays, no bools; under a condition, kept to evaluate, required there)
    assert got["d"] == {"accept": ["ARRAY[UINT32]", "ARRAY[INT32]"], "always": False, "cond": "(x)", "required": "(x)"}
    # (the pooling enum: get_key<uint32_t>)
    assert got["e"] == {"accept": ["UINT32"], "always": True, "cond": "True", "required": "True"}
    assert got["f"] == {"accept": "unknown", "always": True, "cond": "True", "required": "True"} and "name" not in got
    # (the required argument as C: DeepSeek-V3.2 passes 0.0f; a variable is unknown, never a guess)
    assert [table.required_flag("get_key", ["K", "x", *rest]) for rest in ([], ["0.0f"], ["1"], ["false"], ["req"])] \
        == [True, False, True, False, None]
    assert table.required_flag("get_key_or_arr", ["K", "x", "n", "0"]) is False
    assert table.required_flag("get_key_or_arr", ["K", "x", "n"]) is True
    assert [table.required_either(a, b) for a, b in (("False", "(x)"), ("(x)", "(y)"), ("(x)", None),
                                                      ("False", "False"), (None, "True"))] == \
        ["(x)", "((x)) or ((y))", None, "False", "True"]


def test_an_optional_array_read_passes_over_a_scalar_and_a_parameter_is_typed():
    """llama.cpp's get_arr with required false returns false for a value that is no array, unchecked
    (classifier.output_labels), and load_swa_pattern reads the period into its uint32_t parameter where the
    file has no array: an array of ints or bools, or a uint32. A local a loader call fills is no constant
    (DeepSeek-V2's n_vocab in is_lite), and `arch ==` is decided for the body's architecture."""
    kv = {"LLM_KV_P": "p", "LLM_KV_L": "l", "LLM_KV_Q": "q", "LLM_KV_V": "v"}
    fields = table.field_types("\n    std::array<uint32_t, LLAMA_MAX_LAYERS> is_swa_impl;\n    uint32_t n_q;\n")
    swa = ("{ if (ml.get_arr(LLM_KV_P, hparams.is_swa_impl, false)) { return; } "
           "ml.get_key(LLM_KV_P, n_pattern, false); hparams.set_swa_pattern(n_pattern, dense_first); }")
    got = table.key_types(swa, kv, fields, {}, params="llama_model_loader & ml, uint32_t n_pattern, bool dense_first")
    assert got["p"]["accept"] == ["ARRAY[BOOL]", "ARRAY[UINT32]", "ARRAY[INT32]", "UINT32"]
    labels = table.key_types("{ ml.get_arr(LLM_KV_L, labels, false); }", kv, fields, {"labels": "std::vector<std::string>"})
    assert labels["l"]["accept"][0] == "ARRAY[STRING]" and "UINT32" in labels["l"]["accept"]
    body = ("{ uint32_t n_vocab = 0; ml.get_key(LLM_KV_V, n_vocab, false); const bool lite = (n_vocab == 7); "
            "if (!lite) { ml.get_key(LLM_KV_Q, hparams.n_q); } if (arch == LLM_ARCH_E) { ml.get_key(LLM_KV_L, hparams.n_q); } }")
    got = table.key_types(body, kv, fields, {}, arch="LLM_ARCH_E")
    assert "n_vocab" in got["q"]["cond"] and "0 ==" not in got["q"]["cond"] and got["l"]["cond"] == "(True)"


class _Bodies:
    """Sources' `functions` over given load_arch_tensors bodies."""

    def __init__(self, *bodies: str) -> None:
        self.bodies = list(bodies)

    def functions(self, prefix: str) -> list[str]:
        return self.bodies if prefix == "m::load_arch_tensors" else []


def test_factor_sizes_read_the_created_shape_or_say_unknown():
    """A factor tensor's length is its create_tensor's one dimension over LLAMA_LOAD_LOCALS and the body's
    locals, and Step 3.5's n_rot_max, a maximum over the layers; a local set again after its declaration
    otherwise, two shapes, or two sites that differ are unknown, never a guess."""
    saved = dict(table.LOAD_LOCALS), set(table.DEFAULT_IL)
    try:
        _factor_sizes()
    finally:
        table.LOAD_LOCALS.clear()
        table.LOAD_LOCALS.update(saved[0])
        table.DEFAULT_IL.clear()
        table.DEFAULT_IL.update(saved[1])


def _factor_sizes() -> None:
    table.LOAD_LOCALS.clear()
    table.read_load_locals("#define LLAMA_LOAD_LOCALS \\\n    const int64_t n_rot = hparams.n_rot(); \\\n"
                           "    const int64_t n_embd = hparams.n_embd;\n")
    table.DEFAULT_IL.add("n_rot")
    mk = "layer.rope_freqs = create_tensor(tn(LLM_TENSOR_ROPE_FREQS, \"weight\", i), {%s}, 0);"
    got = table.factor_sizes(_Bodies("{ LLAMA_LOAD_LOCALS; " + mk % "n_rot/2" + " }"), "m")
    assert got == {"rope_freqs.weight": "(n_rot(0))/2"}
    body = "{ const int64_t h = n_embd / hparams.n_head(); " + mk % "h/2" + " }"
    assert table.factor_sizes(_Bodies(body), "m") == {"rope_freqs.weight": "(n_embd / n_head())/2"}
    body = "{ LLAMA_LOAD_LOCALS; uint32_t m = 0; for (int i = 0; i < 4; ++i) { m = max(m, n_rot); } " + mk % "m/2" + " }"
    assert table.factor_sizes(_Bodies(body), "m") == {"rope_freqs.weight": "unknown"}
    loop = "uint32_t m = 0; for (int i = 0; i < n_layer; ++i) { m = std::max(m, hparams.n_rot(i)); } "
    most = "layers_max(n_rot(i), n_layer)"
    assert table.factor_sizes(_Bodies("{ " + loop + mk % "m/2" + " }"), "m") == {"rope_freqs.weight": f"({most})/2"}
    fallback = loop + "if (m == 0) { m = n_rot; } "  # (Step 3.5's: a maximum over the layers, or n_rot)
    assert table.factor_sizes(_Bodies("{ LLAMA_LOAD_LOCALS; " + fallback + mk % "m/2" + " }"), "m") == \
        {"rope_freqs.weight": f"(((n_rot(0))) if ({most} == 0) else ({most}))/2"}
    after = ("m = 2; ", "m += 2; ", "m *= 2; ", "++m; ", "m--; ", "m <<= 1; ", "tweak(m); ")
    early = "uint32_t m = 0; if (m == 0) { m = n_rot; } " + loop[len("uint32_t m = 0; "):]  # (C: max(n_rot, ...))
    for other in (loop.replace("= 0;", "= 1;"), loop.replace("std::max", "std::min"), early,
                  *(fallback + a for a in after)):
        assert table.factor_sizes(_Bodies("{ " + other + mk % "m/2" + " }"), "m") == {"rope_freqs.weight": "unknown"}
    assert table.factor_sizes(_Bodies("{ " + mk % "n_rot/2, 2" + " }"), "m") == {"rope_freqs.weight": "unknown"}
    two = _Bodies("{ LLAMA_LOAD_LOCALS; " + mk % "n_rot/2" + " }", "{ LLAMA_LOAD_LOCALS; " + mk % "n_rot" + " }")
    assert table.factor_sizes(two, "m") == {"rope_freqs.weight": "unknown"}
    assert table.factor_sizes(two, None) == {}


def test_factor_required_reads_the_flags_or_says_unknown():
    """A factor tensor is required where its create_tensor's flags never hold TENSOR_NOT_REQUIRED (Gemma 4's
    rope_freqs_flag: 0, then TENSOR_DUPLICATED); a flag set otherwise is unknown."""
    mk = "layer.rope_freqs = create_tensor(tn(LLM_TENSOR_ROPE_FREQS, \"weight\", i), {n_rot/2}, %s);"
    assert table.factor_required(_Bodies("{ " + mk % "TENSOR_NOT_REQUIRED | (i != 0 ? TENSOR_DUPLICATED : 0)"
                                         + " }"), "m") == {"rope_freqs.weight": "False"}
    g4 = "{ int f = 0; for (int i = 0; i < n; ++i) { " + mk % "f" + " f = TENSOR_DUPLICATED; } }"
    assert table.factor_required(_Bodies(g4), "m") == {"rope_freqs.weight": "True"}
    odd = "{ int f = pick(); " + mk % "f" + " }"
    assert table.factor_required(_Bodies(odd), "m") == {"rope_freqs.weight": "unknown"}
    assert table.factor_required(_Bodies("{ " + mk % "0" + " }"), "m") == {"rope_freqs.weight": "True"}


def test_branches_that_both_scale_q_merge_and_others_do_not():
    """DeepSeek-V2's graph scales Q in both its MLA and its other branch: the condition it cannot decide
    (is_mla()) drops out; a condition without its negation beside it stays."""
    a, b, c = "(scale != 0)", "((is_mla()))", "not (((is_mla())))"
    assert table.merged({frozenset({a, b}), frozenset({a, c})}) == {frozenset({a})}
    assert table.merged({frozenset({a, b})}) == {frozenset({a, b})}
    assert table.merged({frozenset({a, b}), frozenset({"(other)", c})}) == {frozenset({a, b}),
                                                                             frozenset({"(other)", c})}
    assert table.merged({frozenset({"False", a})}) == set()  # (a site that never runs)


def test_a_throw_is_kept_only_over_fields_the_program_knows():
    """Mistral 3's refusal of a temperature without an original length is kept; a throw over a field the
    program never reads (the experts') is not, as its value would be a guess."""
    body = ("{ ml.get_key(LLM_KV_T, hparams.f_attn_temp_scale, false); if (hparams.f_attn_temp_scale != 0.0f) { "
            "hparams.n_attn_temp_floor_scale = hparams.n_ctx_orig_yarn; if (hparams.n_attn_temp_floor_scale == 0) "
            "{ throw std::runtime_error(\"invalid n_ctx_orig_yarn\"); } } if (hparams.n_expert == 0) { "
            "throw std::runtime_error(\"n_expert must be > 0\"); } if (hparams.f_attn_temp_scale != 0.0f && "
            "hparams.n_expert > 2) { throw std::runtime_error(\"mixed\"); } }")
    stmts = [(m.start() + len(m.group()) - len(m.group().lstrip()), " ".join(m.group().split()))
             for m in re.finditer(r"[^;{}]*;", body)]
    chosen = {at for at, st in stmts if "attn_temp" in st and not st.startswith("throw")}
    kept = table.refusals(body, stmts, chosen, {"f_attn_temp_scale", "n_attn_temp_floor_scale"})
    assert [st for at, st in stmts if at in kept] == ['throw std::runtime_error("invalid n_ctx_orig_yarn");']
    assert table.statement('throw std::runtime_error("invalid n_ctx_orig_yarn");', {}) == \
        ["throw", "invalid n_ctx_orig_yarn"]
    assert table.statement('throw std::runtime_error(arch_name() + " needs");', {})[0] == "unknown"


def test_q_scale_guard_reads_where_the_tensor_is_built_and_used(tmp_path):
    """The temperature's condition: where the graph multiplies Qcur by it, with the tensor's name read as the
    condition it is built under; a use on another tensor stops the script rather than be misread."""
    class Srcs:
        def __init__(self, body):
            self.body = body

        def named_functions(self, _pattern):
            return [("graph", self.body)]

    body = ("{ ggml_tensor * inp_attn_scale = nullptr; if (hparams.f_attn_temp_scale != 0.0f) { inp_attn_scale = "
            "build_inp_attn_scale(); } for (int il = 0; il < n_layer; ++il) { Qcur = ggml_rope_ext(ctx0, Qcur); "
            "if (inp_attn_scale) { Qcur = ggml_mul(ctx0, Qcur, inp_attn_scale); } } }")
    guard = table.q_scale_guard(Srcs(body), "m", "LLM_ARCH_M")
    assert eval(guard, {}, {"f_attn_temp_scale": 0.1}) and not eval(guard, {}, {"f_attn_temp_scale": 0.0})  # noqa: S307
    assert table.q_scale_guard(Srcs("{ Qcur = ggml_rope_ext(ctx0, Qcur); }"), "m", "LLM_ARCH_M") == "False"
    with pytest.raises(SystemExit, match="Kcur"):
        table.q_scale_guard(Srcs(body.replace("ggml_mul(ctx0, Qcur,", "ggml_mul(ctx0, Kcur,")), "m", "LLM_ARCH_M")
    # built and used otherwise (another argument order), or built and not used as read: unknown, not "False"
    for other in (body.replace("ggml_mul(ctx0, Qcur, inp_attn_scale)", "ggml_mul(ctx0, inp_attn_scale, Qcur)"),
                  body.replace("Qcur = ggml_mul(ctx0, Qcur, inp_attn_scale);", "")):
        assert table.q_scale_guard(Srcs(other), "m", "LLM_ARCH_M") == "unknown"


class _Srcs:
    """A stand-in for the script's Sources: one load_arch_hparams body."""

    def __init__(self, body: str) -> None:
        self.body = body

    def functions(self, name: str) -> list[str]:
        return [self.body]


def test_per_layer_loops_read_only_the_plain_shape():
    """A loop setting one per-layer field entry by entry (the hybrids' is_recr) becomes a statement; a loop of
    another shape is left as C++, whose statements the program then keeps as unknown, never a guess."""
    read = table.per_layer_loops
    assert read("{ for (uint32_t i = 0; i < hparams.n_layer(); ++i) { hparams.is_recr_impl[i] = "
                "hparams.n_head_kv(i) == 0; } }") == \
        "{ PER_LAYER(is_recr_impl) = [i | 0 | hparams.n_layer() | hparams.n_head_kv(i) == 0]; }"
    assert read("for (uint32_t il = hparams.n_layer(); il < hparams.n_layer_all; il++) { hparams.is_swa_impl[il] = "
                "true; }") == "PER_LAYER(is_swa_impl) = [il | hparams.n_layer() | hparams.n_layer_all | true];"
    for other in ("for (uint32_t i = 0; i < n; ++i) hparams.is_recr_impl[i] = true;",  # (no braces)
                  "for (uint32_t i = 0; i < n; ++i) { hparams.a[i] = 1; hparams.b[i] = 2; }",  # (two statements)
                  "for (uint32_t i = 0; i <= n; ++i) { hparams.a[i] = 1; }",  # (another bound)
                  "for (uint32_t i = 0; i < n; ++i) { hparams.a[dst] = 1; }",  # (another entry)
                  "for (uint32_t i = 0; i < n; i += 2) { hparams.a[i] = 1; }"):  # (another step)
        assert read(other) == other, other
    assert read("if (const auto is_swa = ml.get_key(LLM_KV_W, hparams.n_swa, false); is_swa && hparams.n_swa > 0) {") \
        == "const bool is_swa = ml.get_key(LLM_KV_W, hparams.n_swa, false); if (is_swa && hparams.n_swa > 0) {"
    assert read("if (!ml.get_key_or_arr(LLM_KV_R, hparams.is_recr_impl, hparams.n_layer_all, false)) {") == \
        ("const bool found_is_recr_impl = ml.get_key_or_arr(LLM_KV_R, hparams.is_recr_impl, hparams.n_layer_all, "
         "false); if (!found_is_recr_impl) {")


def test_a_hybrid_loader_is_read_as_a_program():
    """Qwen3-Next's loader: the recurrent layers' array if the file has it, else every interval-th layer
    attends; DFlash's `if (ml.get_key(...) && c)`: the read, then the condition on whether it was there."""
    kv = {"LLM_KV_R": "attention.recurrent_layers", "LLM_KV_I": "full_attention_interval",
          "LLM_KV_W": "attention.sliding_window"}
    body = ("{ if (!ml.get_key_or_arr(LLM_KV_R, hparams.is_recr_impl, hparams.n_layer_all, false)) { "
            "uint32_t full_attn_interval = 4; ml.get_key(LLM_KV_I, full_attn_interval, false); "
            "for (uint32_t i = 0; i < hparams.n_layer_all; ++i) { hparams.is_recr_impl[i] = (i < hparams.n_layer()) "
            "&& ((i + 1) % full_attn_interval != 0); } } }")
    assert table.hparams_program(_Srcs(body), "q", kv, {"is_recr_impl"}) == [
        ["True", "key_or_arr", "is_recr_impl", "attention.recurrent_layers", "n_layer_all", False,
         "found_is_recr_impl"],
        ["(not found_is_recr_impl)", "local", "full_attn_interval", "4"],
        ["(not found_is_recr_impl)", "key", "full_attn_interval", "full_attention_interval", None, False],
        ["(not found_is_recr_impl)", "per_layer", "is_recr_impl", "i", "0", "n_layer_all",
         "(i < n_layer) and ((i + 1) % full_attn_interval != 0)"]]
    body = "{ if (ml.get_key(LLM_KV_W, hparams.n_swa, false) && hparams.n_swa > 0) { hparams.swa_type = 1; } }"
    assert table.hparams_program(_Srcs(body), "d", kv, {"swa_type"}) == [
        ["True", "key", "n_swa", "attention.sliding_window", "found_n_swa", False],
        ["(found_n_swa and n_swa > 0)", "set", "swa_type", "1"]]


def test_the_base_program_reads_the_rope_fields_and_what_they_read(monkeypatch):
    """load_hparams' statements that set the RoPE fields, those setting what they read (the scale's local, its
    fallback read), its assert over them, in order, with their conditions; the rest (an expert count, the
    rope_type, the n_rot throw) left out; a shape it cannot read stops the script, never a guess."""
    cpp = ("void llama_model_base::load_hparams(llama_model_loader & ml) { "
           "ml.get_key(LLM_KV_EXPERT_COUNT, hparams.n_expert, false); "
           "ml.get_key(LLM_KV_CONTEXT_LENGTH, hparams.n_ctx_train); "
           "hparams.n_ctx_orig_yarn = hparams.n_ctx_train; "
           "std::string rope_scaling(\"linear\"); ml.get_key(LLM_KV_ROPE_SCALING_TYPE, rope_scaling, false); "
           "hparams.rope_scaling_type_train = llama_rope_scaling_type_from_string(rope_scaling); "
           "GGML_ASSERT(hparams.rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED); "
           "GGML_ASSERT(hparams.n_expert <= 8); "
           "float ropescale = 0.0f; if (!ml.get_key(LLM_KV_ROPE_SCALING_FACTOR, ropescale, false)) { "
           "ml.get_key(LLM_KV_ROPE_SCALE_LINEAR, ropescale, false); } "
           "hparams.rope_freq_scale_train = ropescale == 0.0f ? 1.0f : 1.0f/ropescale; "
           "if (hparams.n_head() > 0) { hparams.n_rot_full = hparams.n_embd / hparams.n_head(); "
           "if (arch == LLM_ARCH_LLAMA) { throw std::runtime_error(format(\"invalid n_rot: %u\", 1)); } } "
           "else { hparams.n_rot_full = 0; } hparams.rope_type = llama_model_rope_type(this); }")
    kv = {"LLM_KV_EXPERT_COUNT": "expert_count", "LLM_KV_CONTEXT_LENGTH": "context_length",
          "LLM_KV_ROPE_SCALING_TYPE": "rope.scaling.type", "LLM_KV_ROPE_SCALING_FACTOR": "rope.scaling.factor",
          "LLM_KV_ROPE_SCALE_LINEAR": "rope.scale_linear"}
    monkeypatch.setattr(table, "DEFAULT_IL", {"n_head"})  # (`n_head()`: layer 0's, as the header's default)
    assert table.base_program(cpp, kv) == [
        ["True", "key", "n_ctx_train", "context_length", None, True],
        ["True", "set", "n_ctx_orig_yarn", "n_ctx_train"],
        ["True", "local", "rope_scaling", "'linear'"],
        ["True", "key", "rope_scaling", "rope.scaling.type", None, False],
        ["True", "set", "rope_scaling_type_train", "llama_rope_scaling_type_from_string(rope_scaling)"],
        ["True", "assert", "rope_scaling_type_train != LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED"],
        ["True", "local", "ropescale", "0.0"],
        ["True", "key", "ropescale", "rope.scaling.factor", "found_ropescale", False],
        ["(not found_ropescale)", "key", "ropescale", "rope.scale_linear", None, False],
        ["True", "set", "rope_freq_scale_train", "(1.0) if (ropescale == 0.0) else (1.0/ropescale)"],
        ["(n_head(0) > 0)", "set", "n_rot_full", "n_embd / n_head(0)"],
        ["not ((n_head(0) > 0))", "set", "n_rot_full", "0"]]
    with pytest.raises(SystemExit, match="not all read"):
        table.base_program(cpp.replace("hparams.n_ctx_orig_yarn = hparams.n_ctx_train;",  # (a key not in llama-arch)
                                       "ml.get_key(LLM_KV_NOT_NAMED, hparams.n_ctx_orig_yarn, false);"), kv)
    lookup = ("static const std::map<llama_rope_scaling_type, const char *> LLAMA_ROPE_SCALING_TYPES = { "
              "{ LLAMA_ROPE_SCALING_TYPE_NONE, \"none\" }, { LLAMA_ROPE_SCALING_TYPE_YARN, \"yarn\" }, }; "
              "static llama_rope_scaling_type llama_rope_scaling_type_from_string(const std::string & name) { "
              "for (const auto & kv : LLAMA_ROPE_SCALING_TYPES) { if (kv.second == name) { "
              "return (llama_rope_scaling_type) kv.first; } } return LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED; }")
    assert table.lookups(lookup) == {"llama_rope_scaling_type_from_string": {
        "table": {"none": "LLAMA_ROPE_SCALING_TYPE_NONE", "yarn": "LLAMA_ROPE_SCALING_TYPE_YARN"},
        "otherwise": "LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED"}}
    assert table.lookups(lookup.replace("return LLAMA_ROPE_SCALING_TYPE_UNSPECIFIED;", "abort();")) == {}


def test_head_width_asserts_are_read_with_their_locals(monkeypatch):
    """A graph's GGML_ASSERT(n_embd_head == hparams.n_embd_head_k()), its n_embd_head a local of the value
    width, as [left, right] at layer 0; an assert of another shape is not taken for one."""
    monkeypatch.setattr(table, "DEFAULT_IL", {"n_embd_head_k", "n_embd_head_v"})
    body = ("{ const int64_t n_embd_head = hparams.n_embd_head_v(); GGML_ASSERT(n_embd_head == hparams.n_embd_head_k());"
            " GGML_ASSERT(n_embd_head == n_rot); GGML_ASSERT(x->ne[0] == n_embd); }")
    assert table.heads_asserted(body) == [["True", "(n_embd_head_v(0))", "n_embd_head_k(0)"]]
    # (Gemma 4's: per layer, its local defined again in the loop; Qwen4's: two calls; DeepSeek-V2's: in a branch)
    loop = ("{ const int64_t n_embd_head = hparams.n_embd_head_v(); for (int il = 0; il < n_layer; ++il) { "
            "const int64_t n_embd_head = hparams.n_embd_head_k(il); GGML_ASSERT(n_embd_head == hparams.n_embd_head_v(il));"
            " } if (ocr) { GGML_ASSERT(hparams.n_embd_head_v() == hparams.n_embd_head_k()); } }")
    assert table.heads_asserted(loop) == [["True", "(n_embd_head_k(il))", "n_embd_head_v(il)"],
                                          ["(ocr)", "n_embd_head_v(0)", "n_embd_head_k(0)"]]
    with pytest.raises(SystemExit, match="not read"):
        table.heads_asserted("{ GGML_ASSERT(hparams.n_embd_head_v() + 1 == hparams.n_embd_head_k()); }")

"""Write vkrope/data/gguf_archs.json: how llama.cpp applies RoPE to each GGUF
architecture, read from llama.cpp's own source (never a hand list).

    python scripts/gguf_arch_table.py --llama-cpp PATH   # a llama.cpp tree
    python scripts/gguf_arch_table.py --pypi             # llama-cpp-python's sdist

`--pypi` downloads the newest llama-cpp-python source distribution from PyPI
(it vendors llama.cpp whole, and PyPI is what this project's machines reach)
into a temporary folder. From the tree it reads:

- src/llama-arch.cpp: each architecture's GGUF name and each metadata key's;
- src/llama-model.cpp: `llama_model_rope_type` (the pairs: "norm" adjacent,
  "neox" rotate-half, "mrope" / "imrope" M-RoPE, "none"), the class of each
  architecture, `llama_model_base::load_hparams`' statements setting the
  RoPE fields (the `base` program every architecture runs first) and
  `load_swa_pattern`;
- src/llama-hparams.{h,cpp}: the defaults and `set_swa_pattern`'s rule;
- src/models/*.cpp, models.h: each class's `load_arch_hparams` (the
  statements that decide the sliding layers, their base and scale, and the
  NoPE step) and its graph (the conditions under which it calls ggml_rope,
  and each call's n_dims and mode and whether it rotates channels apart
  from the head's: MLA's q_pe / k_pe).

C++ conditions are written as Python expressions over hparams names (`il`,
`is_swa(il)`, `n_swa`, `n_layer`, ...) that vkrope/models/gguf_program.py
evaluates with a whitelist; a statement or condition this script cannot
read is kept as "unknown", and vkrope refuses what depends on it.
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re
import subprocess
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "vkrope" / "data" / "gguf_archs.json"
ROPE_CALL = re.compile(r"\b(ggml_rope_ext|ggml_rope_multi|ggml_rope|build_rope)\s*\(")


def strip_comments(text: str) -> str:
    """C++ text without comments (string literals kept, so "https://" stays)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
        elif text.startswith("/*", i):
            i = text.find("*/", i + 2) + 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching(text: str, start: int, open_: str = "{", close: str = "}") -> int:
    """Index of the bracket closing the one at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced brackets")


def body_of(text: str, signature: str) -> str | None:
    """The braces-delimited body of the first function whose header matches `signature` (a regex)."""
    m = re.search(signature + r"[^{;]*\{", text)
    if m is None:
        return None
    return text[m.end() - 1:matching(text, m.end() - 1) + 1]


def py_expr(cxx: str) -> str:
    """A C++ condition as a Python expression over hparams names."""
    s = " ".join(cxx.split())
    s = re.sub(r"\b(model\.)?hparams\.", "", s)
    s = re.sub(r"\(\s*float\s*\)\s*(\w+|\([^()]*\))", r"float(\1)", s)  # (a float cast keeps `/` a true division)
    s = re.sub(r"\(\s*(uint32_t|int32_t|int64_t|int|float)\s*\)", "", s)  # casts
    s = re.sub(r"\bstatic_cast<\w+>", "", s)
    s = ternary(s)
    s = re.sub(r"\b(\d+(?:\.\d*)?)f\b", r"\1", s)
    s = s.replace("&&", " and ").replace("||", " or ")
    s = re.sub(r"!(?!=)", " not ", s)
    s = re.sub(r"\btrue\b", "True", s)
    s = re.sub(r"\bfalse\b", "False", s)
    s = re.sub(r"\bn_layer\(\)", "n_layer", s)
    return " ".join(s.split())


def ternary(s: str) -> str:
    """C++'s top-level `a ? b : c` as Python's `(b) if (a) else (c)`."""
    depth, q = 0, -1
    for i, ch in enumerate(s):
        depth += {"(": 1, ")": -1, "[": 1, "]": -1}.get(ch, 0)
        if depth == 0 and ch == "?" and q < 0:
            q = i
        elif depth == 0 and ch == ":" and q >= 0 and s[i - 1] != ":" and s[i + 1:i + 2] != ":":
            return f"({ternary(s[q + 1:i].strip())}) if ({s[:q].strip()}) else ({ternary(s[i + 1:].strip())})"
    return s


def open_braces(body: str, pos: int) -> list[int]:
    """The positions of the `{` still open at `pos` in `body`, outermost first."""
    stack: list[int] = []
    for i, ch in enumerate(body[:pos]):
        if ch == "{":
            stack.append(i)
        elif ch == "}":
            stack.pop()
    return stack


def enclosing_conditions(body: str, pos: int) -> list[str] | None:
    """The Python conditions of the if / else blocks around `pos` in `body`; None where one is not an
    if / else / loop / plain block the script can read."""
    conds: list[str] = []
    for brace in open_braces(body, pos)[1:]:
        cond = block_condition(body, brace)
        if cond is None:
            return None
        if cond:
            conds.append(cond)
    return conds


def opening(text: str, end: int, open_: str = "{", close: str = "}") -> int:
    """Index of the bracket opening the one closing at `end` (-1 when unbalanced)."""
    depth = 0
    for i in range(end, -1, -1):
        depth += 1 if text[i] == close else -1 if text[i] == open_ else 0
        if depth == 0:
            return i
    return -1


def block_condition(body: str, brace: int) -> str | None:
    """The condition under which the block opening at `brace` runs ("" for loops and plain blocks)."""
    before = body[:brace].rstrip()
    if before.endswith("else"):
        return chain_negation(body, before[:-4].rstrip())
    if re.search(r"\]\s*\([^()]*\)\s*(->[^{;]*)?$", before):  # a lambda's body: where it is called
        return ""
    if not before.endswith(")"):
        return "" if before.endswith((";", "{", "}")) else None
    i = opening(before, len(before) - 1, "(", ")")
    head = re.sub(r"\s+constexpr$", "", before[:i].rstrip())
    inner = before[i + 1:-1]
    if re.search(r"\bfor$|\bwhile$", head):
        return ""
    if not re.search(r"\bif$", head) or ";" in inner:
        return None
    cond = f"({py_expr(inner)})"
    if re.search(r"\belse\s+if$", head):  # (and not the if before it)
        earlier = previous_condition(body, head[:-2].rstrip()[:-4].rstrip())
        return None if not earlier else f"{cond} and not ({earlier})"
    return cond


def chain_negation(body: str, prev: str) -> str | None:
    """The condition of an `else` whose if / else-if chain ends with `prev`: every branch's own condition
    negated (`not (B) and not (A)` after `if (A) {} else if (B) {}`); None where the chain cannot be read."""
    if not prev.endswith("}"):
        return None
    head = prev[:opening(prev, len(prev) - 1)].rstrip()
    if not head.endswith(")"):
        return None
    i = opening(head, len(head) - 1, "(", ")")
    words, inner = head[:i].rstrip(), head[i + 1:-1]
    if ";" in inner or not re.search(r"\bif$", words):
        return None
    own = f"not (({py_expr(inner)}))"
    if re.search(r"\belse\s+if$", words):
        rest = chain_negation(body, words[:-2].rstrip()[:-4].rstrip())
        return None if rest is None else f"{own} and ({rest})"
    return own


def previous_condition(body: str, prev: str) -> str | None:
    """The condition of the if block that `prev` (the text before an else) ends with; None if it ends with none."""
    if not prev.endswith("}"):
        return None
    return block_condition(body, opening(prev, len(prev) - 1))


def locals_of(body: str, last: bool = False) -> dict[str, str]:
    """Local definitions `const T name = expr;` in a function body; a name defined twice differently is
    unknown, or with `last` (the text before a use) its last definition."""
    out: dict[str, str] = {}
    for m in re.finditer(r"\b(?:const\s+)?(?:bool|auto|int64_t|int32_t|uint32_t|int|float)\s+(\w+)\s*=\s*([^;{}]+);",
                         body):
        if not re.search(r"\bfor\s*\(\s*$", body[:m.start()]):  # (a loop's counter is no constant)
            # (declared twice, in two blocks: which one a use reads is not read here, so unknown)
            out[m.group(1)] = "unknown_local()" if not last and m.group(1) in out and out[m.group(1)] != m.group(2) \
                else m.group(2)
    return out


def substitute(expr: str, local: dict[str, str]) -> str:
    """`expr` with local names replaced by their definitions (three rounds)."""
    for _ in range(3):
        for name, value in local.items():
            expr = re.sub(rf"(?<![\w.]){name}\b(?!\s*\()", f"({py_expr(value)})", expr)
    return expr


def arch_names(src: pathlib.Path) -> dict[str, str]:
    """LLM_ARCH_X -> its GGUF name (not LLM_ARCH_UNKNOWN's "(unknown)": llama_model_create refuses it as an
    unknown architecture, so a file naming it is one vkrope's table does not hold)."""
    text = strip_comments((src / "llama-arch.cpp").read_text())
    block = body_of(text, r"LLM_ARCH_NAMES\s*=") or ""
    return {a: n for a, n in re.findall(r"\{\s*(LLM_ARCH_\w+)\s*,\s*\"([^\"]+)\"\s*\}", block)
            if a != "LLM_ARCH_UNKNOWN"}


def kv_names(src: pathlib.Path) -> dict[str, str]:
    """LLM_KV_X -> its key after the architecture's name ("rope.freq_base_swa")."""
    text = strip_comments((src / "llama-arch.cpp").read_text())
    return dict(re.findall(r"\{\s*(LLM_KV_\w+)\s*,\s*\"%s\.([^\"]+)\"\s*\}", text))


def rope_types(model_cpp: str) -> dict[str, object]:
    """LLM_ARCH_X -> its pairs from llama_model_rope_type: a name, or {"sections": ..., "else": ...} for the
    archs that take M-RoPE when the file has sections, or "unknown"."""
    body = body_of(model_cpp, r"llama_rope_type\s+llama_model_rope_type\s*\(") or ""
    out: dict[str, object] = {}
    pending: list[str] = []
    for chunk in re.split(r"(?=\bcase\s+LLM_ARCH_\w+\s*:)", body):
        m = re.match(r"case\s+(LLM_ARCH_\w+)\s*:", chunk)
        if m is None:
            continue
        pending.append(m.group(1))
        rest = chunk[m.end():]
        returns = re.findall(r"\breturn\s+([^;]+);", rest)
        if not returns:
            continue
        if len(returns) == 1 and re.fullmatch(r"LLAMA_ROPE_TYPE_(\w+)", returns[0].strip()):
            value: object = returns[0].strip()[len("LLAMA_ROPE_TYPE_"):].lower()
        else:
            t = re.fullmatch(r"model->hparams\.use_mrope\(\)\s*\?\s*LLAMA_ROPE_TYPE_(\w+)\s*:\s*LLAMA_ROPE_TYPE_(\w+)",
                             returns[0].strip())
            value = {"sections": t.group(1).lower(), "else": t.group(2).lower()} \
                if t and len(returns) == 1 else "unknown"
        for arch in pending:
            out[arch] = value
        pending = []
    return out


def classes(model_cpp: str) -> dict[str, str]:
    """LLM_ARCH_X -> its llama_model_* class."""
    body = body_of(model_cpp, r"llama_model\s*\*\s*llama_model_mapping\s*\(") or ""
    return dict(re.findall(r"case\s+(LLM_ARCH_\w+)\s*:\s*return\s+new\s+(llama_model_\w+)\s*\(", body))


class Sources:
    """The class declarations (models.h) and every models/*.cpp, stripped of comments."""

    def __init__(self, src: pathlib.Path) -> None:
        self.header = strip_comments((src / "models" / "models.h").read_text())
        self.files = {p.name: strip_comments(p.read_text()) for p in sorted((src / "models").glob("*.cpp"))}
        self.files["llama-model.cpp"] = strip_comments((src / "llama-model.cpp").read_text())

    def decl(self, cls: str) -> tuple[str, str]:
        """(its base class, its struct body)."""
        m = re.search(rf"struct\s+{cls}\s*:\s*public\s+(\w+)\s*\{{", self.header)
        if m is None:
            return "llama_model_base", ""
        return m.group(1), self.header[m.end() - 1:matching(self.header, m.end() - 1)]

    def owner(self, cls: str, method: str) -> str | None:
        """The class whose `method` (load_arch_hparams, load_arch_tensors) `cls` runs."""
        while cls != "llama_model_base":
            base, body = self.decl(cls)
            if method in body:
                return cls
            cls = base
        return None

    def graph_owner(self, cls: str) -> str:
        """The class whose graph `cls` builds."""
        while True:
            base, body = self.decl(cls)
            m = re.search(r"using\s+graph\s*=\s*(\w+)::graph", body)
            if m:
                cls = m.group(1)
            elif "struct graph" in body or base == "llama_model_base":
                return cls
            else:
                cls = base

    def functions(self, prefix: str) -> list[str]:
        """The bodies of every function defined as `prefix...(...) {` in any source file."""
        return [body for _, body in self.named_functions(prefix)]

    def named_functions(self, prefix: str) -> list[tuple[str, str]]:
        """(name after `prefix`, body) of every function defined as `prefix...(...) {` in any source file."""
        out = []
        for text in self.files.values():
            for m in re.finditer(rf"\b{prefix}(\w*)\s*\([^;{{]*\)\s*(?:const\s*)?(?::[^{{;]*)?\{{", text):
                out.append((m.group(1), text[m.end() - 1:matching(text, m.end() - 1) + 1]))
        return out


def graph_facts(srcs: Sources, owner: str, arch: str) -> dict:
    """Whether `owner`'s graph rotates for `arch`, under which Python condition, whether it takes the
    base and scale per layer (llama_model::get_rope_freq_base / _scale), and `rope_forms`: how each rope call
    it makes for `arch` rotates (call_form) and under which condition (`guard`)."""
    guards, forms, per_layer_base, per_layer_scale = [], [], False, False
    funcs = srcs.named_functions(rf"{owner}::graph(?:<\w+>)?::")
    for name, body in funcs:
        local = locals_of(body)
        per_layer_base |= "get_rope_freq_base" in body
        per_layer_scale |= "get_rope_freq_scale" in body
        site = call_sites(funcs, name, arch)
        for call in ROPE_CALL.finditer(body):
            forms.append(call_form(body, call, local))
            conds = enclosing_conditions(body, call.start())
            if conds is None or site == "unknown":
                guards.append("unknown")
                continue
            conds = [arch_condition(substitute(c, local), arch) for c in conds]
            lam = lambda_sites(body, call.start(), local, arch)
            if lam == "unknown":
                guards.append("unknown")
                continue
            inner = " and ".join(conds + ([lam] if lam != "True" else [])) or "True"
            guards.append(inner if site == "True" else f"({site}) and ({inner})")
    if not guards:
        return {"rotates": "False"}
    guards = [constant(g) for g in guards]
    if "unknown" in guards:
        return {"rotates": "unknown"}
    alternatives = sorted(set(guards))
    either = any(f"not ({g})" in alternatives for g in alternatives)  # (if / else: both branches rotate)
    rotates = "True" if "True" in alternatives or either else constant(" or ".join(f"({g})" for g in alternatives))
    live = sorted({json.dumps({**f, "guard": g}, sort_keys=True) for f, g in zip(forms, guards)
                   if f is not None and g != "False"})
    asserted = sorted({width for _, body in funcs for width in rot_asserted(body)})
    heads = sorted({tuple(a) for _, body in funcs for a in heads_asserted(body) if a[1] != a[2]})
    return {"rotates": rotates, "per_layer_base": per_layer_base, "per_layer_scale": per_layer_scale,
            "rope_forms": [json.loads(f) for f in live], "rot_asserted": asserted,
            "heads_asserted": [list(p) for p in heads]}


Q_SCALE = re.compile(r"\bggml_mul\s*\(\s*ctx0\s*,\s*(\w+)\s*,\s*inp_attn_scale\s*\)")
Q_SCALE_BUILT = re.compile(r"\binp_attn_scale\s*=\s*build_inp_attn_scale\s*\(\s*\)")
# llm_graph_input_attn_temp::set_input's factor per token (llama-graph.cpp), as vkrope computes it
# (ModelRope.q_scale: the float32 quotient's floor, the rest in double, rounded to float32 once): vkrope's
# statement of it, which this script checks llama.cpp's code against.
sys.path.insert(0, str(ROOT))
from vkrope.models.gguf_layers import Q_SCALE_FORMULA  # noqa: E402
Q_SCALE_FIELDS = ("f_attn_temp_scale", "n_attn_temp_floor_scale", "f_attn_temp_offset")


def q_scale_guard(srcs: Sources, owner: str, arch: str) -> str:
    """The condition (Python, per layer `il`) under which `owner`'s graph multiplies Q by llama.cpp's attention
    temperature (llm_graph_input_attn_temp: Mistral 3's and DeepSeek-V2's / Mistral 4's, after their RoPE;
    Llama 4's on its NoPE layers): "False" where it never does, "unknown" where a site cannot be read. The
    tensor's own name stands for the condition under which the graph builds it."""
    funcs = srcs.named_functions(rf"{owner}::graph(?:<\w+>)?::")
    guards: list = []  # per site its conditions, all of which hold there ("unknown": a site not read)
    for name, body in funcs:
        sites = list(Q_SCALE.finditer(body))
        uses = re.findall(r"\bggml_\w+\s*\([^;]*\binp_attn_scale\b", body)
        if len(uses) != len(sites) or (not sites and Q_SCALE_BUILT.search(body)):
            guards.append("unknown")  # (built, or used, in a form the script does not read)
            continue
        if not sites:
            continue
        if any(m.group(1) != "Qcur" for m in sites):
            sys.exit(f"{owner}: the attention temperature multiplies {sites[0].group(1)}, not Qcur: unread")
        built = [enclosing_conditions(body, m.start()) for m in Q_SCALE_BUILT.finditer(body)]
        local = locals_of(body)
        site = call_sites(funcs, name, arch)
        if not built or any(c is None for c in built) or site == "unknown":
            guards.append("unknown")
            continue
        made = " or ".join(f"({' and '.join(arch_condition(substitute(c, local), arch) for c in conds) or 'True'})"
                           for conds in built)
        for m in sites:
            conds = enclosing_conditions(body, m.start())
            lam = lambda_sites(body, m.start(), local, arch)
            if conds is None or lam == "unknown":
                guards.append("unknown")
                continue
            conds = [arch_condition(substitute(c, local), arch) for c in conds] + ([lam] if lam != "True" else [])
            conds = [constant(re.sub(r"\binp_attn_scale\b", f"({made})", c)) for c in conds]
            conds += [site] if site != "True" else []
            guards.append(frozenset(c for c in conds if c != "True"))
    if not guards:
        return "False"
    if "unknown" in guards:
        return "unknown"
    alternatives = merged(set(guards))
    if not alternatives:
        return "False"
    return constant(" or ".join(f"({' and '.join(sorted(g)) or 'True'})" for g in sorted(alternatives, key=sorted)))


def merged(alternatives: set[frozenset]) -> set[frozenset]:
    """Alternatives (each the set of conditions that hold together) with every pair that differs in one
    condition and its negation made one (`a and c` or `a and not (c)`: a), so that a condition the
    evaluator cannot decide (DeepSeek's is_mla(), where both branches scale Q) drops out."""
    alternatives = {g for g in alternatives if "False" not in g}
    while True:
        pair = next(((a, b) for a in alternatives for b in alternatives
                     if len(a ^ b) == 2 and any(f"not ({x})" in a ^ b for x in a ^ b)), None)
        if pair is None:
            return alternatives
        a, b = pair
        alternatives = (alternatives - {a, b}) | {a & b}


def q_scale_rule(src: pathlib.Path) -> dict:
    """llama-graph.cpp's attention temperature per token, checked to be the formula vkrope computes, and the
    asserts before it (a scale without a floor length aborts llama.cpp at its first batch)."""
    text = strip_comments((src / "llama-graph.cpp").read_text())
    body = body_of(text, r"void\s+llm_graph_input_attn_temp::set_input\s*\(") or ""
    flat = " ".join(body.replace("(", "( ").replace(")", " )").split()).replace("( ", "(").replace(" )", ")")
    want = " ".join(Q_SCALE_FORMULA.replace("(", "( ").replace(")", " )").split()).replace("( ", "(").replace(" )", ")")
    if want not in flat:
        sys.exit("llm_graph_input_attn_temp::set_input's formula is not the one vkrope computes: read it again")
    asserts = [py_expr(a) for a in re.findall(r"GGML_ASSERT\s*\(([^;]*)\)\s*;", body)]
    return {"formula": Q_SCALE_FORMULA, "fields": list(Q_SCALE_FIELDS), "asserts": asserts}


def rot_asserted(body: str) -> list[str]:
    """The widths a graph asserts n_rot equals (`GGML_ASSERT(n_embd_head == n_rot)` in about 60 graphs: a
    partial rotary there aborts llama.cpp), as Python over hparams names."""
    local = locals_of(body)
    out = []
    for m in re.finditer(r"GGML_ASSERT\s*\(\s*(\w+)\s*==\s*n_rot\s*\)", body):
        expr = py_expr(substitute(m.group(1), local))
        out.append(layer_zero(expr))
    return out


HEAD_SIDE = r"(?:hparams\.)?\w+(?:\s*\(\s*\w*\s*\))?"  # (a name, or a method call with no or one argument)


def heads_asserted(body: str) -> list[list[str]]:
    """The key and value head widths a graph asserts equal (`GGML_ASSERT(n_embd_head ==
    hparams.n_embd_head_k())`, its n_embd_head the value width, in about 110 graphs: widths that differ abort
    llama.cpp), each [condition, left, right] as Python over hparams names (a per-layer one with `il`; the
    condition of the block around it: DeepSeek-V2's OCR branch). An assert naming both widths in a shape the
    script cannot read stops it, never a guess."""
    out = []
    for m in re.finditer(r"GGML_ASSERT\s*\(([^;]*)\)\s*;", body):
        # (each local as last defined before the assert: Gemma 4's graph defines n_embd_head in two blocks)
        local = locals_of(body[:m.start()], last=True)
        for part in m.group(1).split("&&"):
            side = re.fullmatch(rf"\s*({HEAD_SIDE})\s*==\s*({HEAD_SIDE})\s*", part)
            pair = [layer_zero(py_expr(substitute(s, local))) for s in side.groups()] if side else None
            text = " ".join(pair) if pair else py_expr(substitute(part, local))
            if "n_embd_head_k" not in text or "n_embd_head_v" not in text:
                continue  # (another assert: n_rot's is rot_asserted's)
            if pair is None:
                sys.exit(f"a graph's assert on the head widths not read: GGML_ASSERT({m.group(1)})")
            conds = enclosing_conditions(body, m.start())
            out.append(["unknown" if conds is None else " and ".join(conds) or "True", *pair])
    return out


def lambda_sites(body: str, pos: int, local: dict[str, str], arch: str) -> str:
    """The condition under which the lambdas around `pos` run: the conditions at their calls (LFM2's
    `cur = is_recr(il) ? build_shortconv_block(...) : build_attn_block(...)`, the else side: not is_recr(il));
    "True" outside any lambda, "unknown" where a call cannot be read."""
    out = []
    for brace in open_braces(body, pos):
        m = re.search(r"\bauto\s+(\w+)\s*=\s*\[[^\]]*\]\s*\([^()]*\)\s*(?:->[^{;]*)?$", body[:brace])
        if not re.search(r"\]\s*\([^()]*\)\s*(->[^{;]*)?$", body[:brace].rstrip()):
            continue
        if m is None:
            return "unknown"
        end = matching(body, brace)
        sites = []
        for call in re.finditer(rf"(?<![\w.]){m.group(1)}\s*\(", body[end:]):
            at = end + call.start()
            conds = enclosing_conditions(body, at)
            ternary = ternary_side(body, at)
            if conds is None or ternary is None:
                return "unknown"
            conds = [arch_condition(substitute(c, local), arch) for c in conds + ([ternary] if ternary else [])]
            sites.append(" and ".join(conds) or "True")
        if not sites:
            return "unknown"
        out.append("True" if "True" in sites else " or ".join(f"({x})" for x in sorted(set(sites))))
    out = [x for x in out if x != "True"]
    return " and ".join(f"({x})" for x in out) or "True"


def ternary_side(body: str, at: int) -> str | None:
    """"" where the call at `at` is in no `c ? a : b` of its statement, the Python condition under which its
    side runs where the statement is `x = c ? a : b;` or `return c ? a : b;` with the call in a or b, and None
    (unknown) for any other statement with a `?`."""
    start = max(body.rfind(ch, 0, at) for ch in ";{}") + 1
    stmt = body[start:body.find(";", at)]
    if "?" not in stmt:
        return ""
    m = re.match(r"\s*(?:return\s+|(?:[\w:<>*&]+\s+)*\**\s*\w+\s*=(?!=)\s*)", stmt)
    if m is None:
        return None
    expr, offset, depth, q, colon = stmt[m.end():], start + m.end(), 0, -1, -1
    for i, ch in enumerate(expr):
        depth += (ch in "([") - (ch in ")]")
        if depth == 0 and ch == "?" and q < 0:
            q = i
        elif depth == 0 and ch == ":" and q >= 0 and colon < 0 and expr[i - 1] != ":" and expr[i + 1:i + 2] != ":":
            colon = i
    if q < 0 or colon < 0 or "?" in expr[q + 1:] or at - offset <= q:
        return None  # (nested, or the call in the condition itself)
    cond = py_expr(expr[:q])
    return f"({cond})" if at - offset < colon else f"not ({cond})"


def call_sites(funcs: list[tuple[str, str]], name: str, arch: str, depth: int = 0) -> str:
    """The condition under which the graph calls its method `name` (Qwen3-Next's build_layer_attn only where
    `not is_recr(il)`): the conditions around its calls in the graph's other methods, "True" for the
    constructor or a method the graph's own code never calls, "unknown" where one cannot be read."""
    if name == "graph" or depth > 3:
        return "True" if name == "graph" else "unknown"
    alternatives = []
    for caller, body in funcs:
        if caller == name:
            continue
        local = locals_of(body)
        for m in re.finditer(rf"(?<![\w.>]){name}\s*\(", body):
            conds = enclosing_conditions(body, m.start())
            outer = call_sites(funcs, caller, arch, depth + 1)
            side = ternary_side(body, m.start())  # (qwen4exp's `qsa ? build_qsa_top_k(...) : nullptr`)
            if conds is None or outer == "unknown" or side is None:
                return "unknown"
            conds += [side] if side else []
            inner = " and ".join(arch_condition(substitute(c, local), arch) for c in conds) or "True"
            alternatives.append(inner if outer == "True" else f"({outer}) and ({inner})")
    if not alternatives or "True" in alternatives:
        return "True"
    return " or ".join(f"({a})" for a in sorted(set(alternatives)))


def call_arguments(body: str, start: int) -> list[str]:
    """The top-level arguments of the call whose "(" ends just before `start`."""
    args, depth, cur = [], 0, ""
    for ch in body[start:]:
        if ch == ")" and depth == 0:
            break
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return args + [cur.strip()]


GETTERS: dict[str, tuple[str, str]] = {}  # llama_model's per-layer base and scale: call -> (its value, the global)


DEFAULT_IL: set[str] = set()  # llama_hparams' methods whose layer defaults to 0 (`n_rot()`: layer 0's)


def layer_zero(expr: str) -> str:
    """`expr` with DEFAULT_IL's methods called without a layer given layer 0, as C++'s default does."""
    return re.sub(rf"\b({'|'.join(DEFAULT_IL) or '(?!)'})\(\s*\)", r"\1(0)", expr)


def read_getters(model_cpp: str) -> None:
    """GETTERS from llama_model::get_rope_freq_base / _scale's bodies (`is_swa(il) ? swa : cparams'`), as the
    graph's names: cparams.rope_freq_base is the graph's freq_base, .rope_freq_scale its freq_scale."""
    for what in ("base", "scale"):
        m = re.search(rf"llama_model::get_rope_freq_{what}\s*\([^)]*\)\s*const\s*\{{\s*return\s+([^;]+);\s*}}",
                      model_cpp)
        if m is None:
            sys.exit(f"llama_model::get_rope_freq_{what} not found in llama-model.cpp")
        value = m.group(1).replace(f"cparams.rope_freq_{what}", f"freq_{what}")
        GETTERS[f"model.get_rope_freq_{what}(cparams,il)"] = (py_expr(value), f"freq_{what}")


ROPE_ARGS = {"ggml_rope_ext": (1, 4, 5), "ggml_rope_multi": (1, 4, 6), "ggml_rope": (1, 3, 4)}  # tensor, dims, mode
SCALING_ARGS = ("n_ctx_orig", "freq_base", "freq_scale", "ext_factor", "attn_factor", "beta_fast", "beta_slow")


def call_form(body: str, call: re.Match, local: dict[str, str]) -> dict | None:
    """How one rope call rotates: `dims` and `mode` (its n_dims and mode arguments as Python over hparams
    names: "n_rot" and "rope_type" where it follows the model's rope.dimension_count and llama_model_rope_type)
    and `slice`: whether the rotated channels stand apart from the head's (MLA's q_pe / k_pe): the tensor is a
    view exactly n_rot wide (its last assignment before the call, rotations aside, is `ggml_view_Nd(ctx, src,
    n_rot, ...)`), or the call's result gets ggml_rope_set_offset (the trailing n_rot channels). None for a
    helper of the graph's own (dflash's build_rope lambda: its body's calls are read)."""
    if call.group(1) not in ROPE_ARGS:
        return None
    args = call_arguments(body, call.end())
    t, d, m = ROPE_ARGS[call.group(1)]
    def plain(expr: str) -> str:
        if re.search(rf"GGML_ASSERT\s*\(\s*{re.escape(expr)}\s*==\s*n_rot\s*\)", body):
            return "n_rot"  # (CogVLM's and PLaMo's head width, asserted to be n_rot)
        if re.fullmatch(r"\w+", expr):
            found = re.findall(rf"(\b(?:const\s+)?(?:float|int|int64_t|uint32_t|auto)\s+)?(?<![\w.]){expr}\s*=(?!=)"
                               r"\s*([^;]+);", body)  # (a declaration's value where later branches set it: dropped)
            sets = {" ".join(v.split()) for typed, v in found if not typed or len(found) == 1}
            if len(sets) > 1:  # (a local set per branch: Gemma 3's freq_base_l, the getter or its global value)
                getter = [v for v in sets if v.replace(" ", "") in GETTERS]
                expr = getter[0] if len(getter) == 1 and len(sets) == 2 and sets - set(getter) <= \
                    {GETTERS[getter[0].replace(" ", "")][1]} else "unknown"
        try:
            expr = substitute(expr, local)
            for call, (value, _) in GETTERS.items():
                expr = expr.replace(" ", "").replace(call, f"({value})") if call in expr.replace(" ", "") else expr
            expr = layer_zero(py_expr(expr))
            return ast.unparse(ast.parse(expr, mode="eval"))
        except SyntaxError:
            return "unknown"
    tensor = args[t] if len(args) > m else ""
    sources = [a for a in re.finditer(rf"\b{re.escape(tensor)}\s*=\s*(\w+)\s*\(\s*\w+\s*,\s*\w+\s*,"
                                      r"\s*([^,]+),", body[:call.start()]) if not ROPE_CALL.match(a.group(1) + "(")]
    view = bool(sources) and bool(re.fullmatch(r"ggml_view_[1-4]d", sources[-1].group(1))) \
        and plain(sources[-1].group(2)) in ("n_rot", "n_rot(0)")
    result = re.search(r"(\w+)\s*=\s*$", body[:call.start()])
    # (set_offset on the value this call made: the next assignment to its name, nothing later in the function)
    after = re.search(rf"(?<![\w.]){result.group(1)}\s*=(?!=)\s*([^;]*)", body[call.end():]) if result else None
    offset = after is not None and re.match(rf"ggml_rope_set_offset\s*\(\s*{result.group(1)}\s*,", after.group(1)) \
        is not None
    rest = args[m + 1:] if call.group(1) != "ggml_rope" else []
    part = {}
    if tensor.startswith("indexer_"):  # (DeepSeek-V3.2's lightning indexer: heads of its own, [rope | nope],
        # their width that of the reshape that last made the tensor; vkrope reads it as the model's part "indexer")
        shaped = bool(sources) and re.fullmatch(r"ggml_reshape_[2-4]d", sources[-1].group(1)) is not None
        part = {"part": "indexer", "head": plain(sources[-1].group(2).strip()) if shaped else "unknown"}
    return {**part, "dims": plain(args[d]) if len(args) > m else "unknown",
            "mode": plain(args[m]) if len(args) > m else "unknown", "slice": view or offset,
            "factors": factors_taken(body, args[3], local, call.start()) if call.group(1) != "ggml_rope"
            and len(args) > 3 else "False",
            "scaling": dict(zip(SCALING_ARGS, map(plain, rest))) if len(rest) == len(SCALING_ARGS)
            else "plain" if call.group(1) == "ggml_rope" else "unknown"}


def constant(expr: str) -> str:
    """`expr` decided ("True" / "False") when it names nothing, as `model.arch == ...` leaves bert's."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return "unknown"  # (C++ the translation leaves: DeepSeek-V4's inp_dsv4->get_hca())
    if all(isinstance(n, (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.Constant))
           for n in ast.walk(tree)):
        return str(bool(eval(compile(tree, "<guard>", "eval"), {"__builtins__": {}})))  # noqa: S307  (constants)
    return expr


def arch_condition(expr: str, arch: str) -> str:
    """`expr` with `model.arch == LLM_ARCH_X` (and !=) decided for `arch`."""
    expr = re.sub(r"\bmodel\.arch\s*==\s*(LLM_ARCH_\w+)", lambda m: str(m.group(1) == arch), expr)
    return re.sub(r"\bmodel\.arch\s*!=\s*(LLM_ARCH_\w+)", lambda m: str(m.group(1) != arch), expr)


def hparams_program(srcs: Sources, owner: str | None, kv: dict[str, str], read: set[str] = frozenset()) -> list:
    """The statements of `owner`'s load_arch_hparams that decide the sliding layers, their base and scale,
    the NoPE step and the RoPE fields it sets its own way (Grok's and Mistral 3's YaRN betas, DeepSeek's log
    multiplier, HunyuanVL's alpha), each [condition, kind, ...] in order; kind "unknown" for one the script
    cannot read."""
    if owner is None:
        return []
    bodies = srcs.functions(f"{owner}::load_arch_hparams")
    if not bodies:
        return [["True", "unknown", f"{owner}::load_arch_hparams not found"]]
    # (`if (ml.get_key(K, hparams.f, false)) {...}`, DeepSeek's log multiplier, and `if (ml.get_key(K, hparams.f,
    # false) && c)`, DFlash's window: the read as a statement of its own)
    body = re.sub(r"\bif\s*\(\s*ml\.get_key\((LLM_KV_\w+),\s*hparams\.(\w+),\s*(?:false|0\.0f|0)\s*\)\s*"
                  r"(&&[^(){};]*)?\)",
                  r"const bool found_\2 = ml.get_key(\1, hparams.\2, false); if (found_\2 \3)", bodies[0])
    body = per_layer_loops(body)
    relevant = re.compile(r"swa_type|swa_pattern|is_swa_impl|n_no_rope_layer_step|n_swa\b|rope_pattern|"
                          r"rope_freq_(base|scale)_train(_swa)?\b|SLIDING_WINDOW|ROPE_FREQ_BASE_SWA|router_layer|"
                          r"n_layer_kv_from_start|rope_finetuned|ROPE_SCALING_FINETUNED|yarn_|rope_yarn_log_mul|"
                          r"rope_attn_factor|rope_scaling_alpha|ROPE_SCALING_YARN|ROPE_SCALING_ATTN|ROPE_SCALING_ALPHA"
                          + "".join(rf"|\bhparams\.{n}\s*[-+*/]?=(?!=)|(?:get_key|get_arr|get_key_or_arr)\(\s*\w+\s*,"
                                    rf"\s*hparams\.{n}\b|std::fill\(\s*hparams\.{n}\.|\bPER_LAYER\({n}\)"
                                    for n in sorted(read)))
    stmts = [(m.start() + len(m.group()) - len(m.group().lstrip()), " ".join(m.group().split()))
             for m in re.finditer(r"[^;{}]*;", body)]
    stmts = [(at, st) for at, st in stmts if not st.startswith(("LLAMA_LOG", "GGML_ASSERT", "return"))]
    chosen = {at for at, st in stmts if relevant.search(st)}
    while True:  # (and what sets a name those statements or their conditions read, to a fixpoint)
        text = [st.split("=", 1)[-1] + " " + " ".join(enclosing_conditions(body, at) or []) for at, st in stmts
                if at in chosen]
        used = set(re.findall(r"\b[a-z_]\w*\b", " ".join(text)))
        more = {at for at, st in stmts if at not in chosen and set_name(st) in used}
        if not more:
            break
        chosen |= more
    chosen |= refusals(body, stmts, chosen, read)
    program = []
    for at, stmt in stmts:
        if at not in chosen:
            continue
        conds = enclosing_conditions(body, at)
        cond = "unknown" if conds is None else (" and ".join(conds) or "True")
        program.append([cond, *statement(stmt, kv)])
    return program


# (the RoPE fields llama_model_base::load_hparams sets for every architecture, before its load_arch_hparams)
# (not rope_type, llama_model_rope_type's pairs: the table's "pairs")
BASE_ROPE = re.compile(r"\bhparams\.(rope_(?!type\b)\w+|n_rot_\w+|n_embd_head_\w+|n_ctx_orig_yarn)\s*=(?!=)|"
                       r"\bget_key\(\s*\w+\s*,\s*hparams\.(rope_\w+|n_rot_\w+|n_embd_head_\w+|n_ctx_orig_yarn)\b")
# (the fields gguf_layers._start sets before the base program, each with its own checks: not the program's)
BASE_GIVEN = {"n_layer_all", "n_head_arr", "n_head_kv_arr", "n_layer_nextn"}


def base_program(model_cpp: str, kv: dict[str, str]) -> list:
    """llama_model_base::load_hparams' statements that set the RoPE fields (BASE_ROPE), and those setting what
    they read, to a fixpoint (the context length, the embedding width, the scale's local), with the asserts over
    them, each [condition, kind, ...] as hparams_program's; its n_rot check is `rot_is_head`'s."""
    body = body_of(model_cpp, r"void\s+llama_model_base::load_hparams\s*\(")
    if body is None:
        sys.exit("llama_model_base::load_hparams not found in llama-model.cpp: its RoPE fields would be a guess")
    # (`if (!ml.get_key(K, x, false)) {...}`, the old key's fallback: the read as a statement of its own)
    body = re.sub(r"\bif\s*\(\s*!\s*ml\.get_key\((LLM_KV_\w+),\s*(?:hparams\.)?(\w+),\s*false\s*\)\s*\)",
                  r"const bool found_\2 = ml.get_key(\1, \2, false); if (!found_\2)", body)
    stmts = [(m.start() + len(m.group()) - len(m.group().lstrip()), " ".join(m.group().split()))
             for m in re.finditer(r"[^;{}]*;", body)]
    chosen = {at for at, st in stmts if BASE_ROPE.search(st) and not st.startswith("throw")}
    while True:
        text = [st.split("=", 1)[-1] + " " + " ".join(enclosing_conditions(body, at) or []) for at, st in stmts
                if at in chosen]
        used = set(re.findall(r"\b[a-z_]\w*\b", " ".join(text))) - BASE_GIVEN
        more = {at for at, st in stmts if at not in chosen and set_name(st) in used
                and not st.startswith(("GGML_ASSERT", "throw"))}
        if not more:
            break
        chosen |= more
    known = {set_name(st) for at, st in stmts if at in chosen}
    for at, st in stmts:  # (an assert over those fields alone: llama.cpp aborts on a file failing it)
        m = re.fullmatch(r"GGML_ASSERT\((.*)\);", st)
        if m and set(re.findall(r"\b[a-z_]\w*\b", py_expr(m.group(1)))) - {"and", "or", "not"} <= known:
            chosen.add(at)
    program = []
    for at, stmt in stmts:
        if at in chosen:
            conds = enclosing_conditions(body, at)
            cond = "unknown" if conds is None else layer_zero(" and ".join(conds) or "True")
            program.append([cond, *statement(stmt, kv)])
    if any(s[0] == "unknown" or s[1] == "unknown" for s in program):
        sys.exit(f"load_hparams' RoPE statements not all read: {[s for s in program if 'unknown' in s[:2]]}")
    return program


def lookups(model_cpp: str) -> dict[str, dict]:
    """llama.cpp's string-to-enum functions of the shape `for (kv : TABLE) if (kv.second == name) return kv.first;
    return OTHERWISE;` that load_hparams calls: {function: {"table": {name: enum}, "otherwise": enum}}."""
    out = {}
    for m in re.finditer(r"static\s+(\w+)\s+(\w+)\s*\(\s*const\s+std::string\s*&\s*\w+\s*\)\s*\{", model_cpp):
        body = model_cpp[m.end():matching(model_cpp, m.end() - 1)]
        shape = re.fullmatch(r"\s*for\s*\(\s*const\s+auto\s*&\s*kv\s*:\s*(\w+)\s*\)\s*\{\s*if\s*\(\s*kv\.second\s*==\s*"
                             r"\w+\s*\)\s*\{\s*return\s*\(\w+\)\s*kv\.first;\s*\}\s*\}\s*return\s+(\w+);\s*", body)
        if shape is None:
            continue
        table = body_of(model_cpp, rf"\b{shape.group(1)}\s*=") or ""
        names = {n: e for e, n in re.findall(r"\{\s*(\w+)\s*,\s*\"([^\"]*)\"", table)}
        if names:
            out[m.group(2)] = {"table": names, "otherwise": shape.group(2)}
    return out


def set_name(stmt: str) -> str | None:
    """The name a load_arch_hparams statement sets (a local, a field, a key's target, a per-layer loop's
    field), None for another statement."""
    m = re.match(r"(?:const\s+)?(?:bool|uint32_t|int32_t|int|float)\s+(\w+)\s*=|std::string (\w+)\(|ml\.get_key\(\w+, (?:hparams\.)?(\w+)[,)]"
                 r"|hparams\.(\w+)\s*[-+*/]?=(?!=)|PER_LAYER\((\w+)\)|(\w+)\s*=(?!=)", stmt)
    return next((g for g in m.groups() if g), None) if m else None


def per_layer_loops(body: str) -> str:
    """A load_arch_hparams body with its per-layer loops made statements the program reads: `for (uint32_t i =
    0; i < N; ++i) { hparams.f[i] = e; }` (the hybrids' recurrent layers: Qwen3-Next's and Qwen3.5's every
    interval-th layer, Granite hybrid's and LFM2's where n_head_kv(i) is 0; `for (i = A; i < N; ...)`) as
    `PER_LAYER(f) = [i | A | N | e];`
    (the bound and the expression read like an assignment's right side); `if (!ml.get_key_or_arr(K, hparams.f,
    ...))`, the loop's fallback, as the read into `found_f` and `if (!found_f)`; and C++17's `if (const auto x =
    ml.get_key(...); c)` (LFM2's sliding window) as the read, then `if (c)`."""
    body = re.sub(r"\bif\s*\(\s*!\s*ml\.get_key_or_arr\((LLM_KV_\w+),\s*hparams\.(\w+),\s*([^,()]+(?:\(\))?),\s*false\s*\)\s*\)",
                  r"const bool found_\2 = ml.get_key_or_arr(\1, hparams.\2, \3, false); if (!found_\2)", body)
    body = re.sub(r"\bif\s*\(\s*const\s+(?:auto|bool)\s+(\w+)\s*=\s*(ml\.get_key\([^;{}]*\))\s*;\s*([^;{}]*)\)\s*\{",
                  r"const bool \1 = \2; if (\3) {", body)
    return re.sub(r"\bfor\s*\(\s*(?:uint32_t|int32_t|int|size_t)\s+(\w+)\s*=\s*([^;{}]+?)\s*;\s*\1\s*<(?!=)\s*([^;{}]+?)\s*;"
                  r"\s*(?:\+\+\1|\1\+\+)\s*\)\s*\{\s*hparams\.(\w+)\s*\[\s*\1\s*\]\s*=\s*([^;{}]+);\s*\}",
                  r"PER_LAYER(\4) = [\1 | \2 | \3 | \5];", body)


def refusals(body: str, stmts: list[tuple[int, str]], chosen: set[int], read: set[str]) -> set[int]:
    """The `throw`s of a load_arch_hparams whose conditions read only what the program knows (the fields the
    graph reads, and what the chosen statements set) and at least one field the graph reads: llama.cpp's
    refusals of a file over those fields (Mistral 3's attention temperature without n_ctx_orig_yarn)."""
    known = set(read)
    for at, st in stmts:
        if at in chosen and set_name(st):
            known.add(set_name(st))
    out = set()
    for at, st in stmts:
        conds = enclosing_conditions(body, at) if st.startswith("throw ") else None
        names = set(re.findall(r"\b[a-z_]\w*\b", re.sub(r'"[^"]*"', "", " ".join(conds or ())))) - \
            {"and", "or", "not", "True", "False"}
        if conds and names <= known and names & set(read):
            out.add(at)
    return out


def statement(stmt: str, kv: dict[str, str]) -> list:
    """One load_arch_hparams statement as [kind, ...]: key (a metadata key read into a field or a local
    name, and the local that says whether it was there), array (an array key read into a per-layer field),
    key_or_arr (an array of exactly n entries, or one value for all n; and the local that says whether it was
    there), per_layer (a loop setting a run of a per-layer field's entries, one expression of the layer each),
    set, fill (a per-layer field set for every layer), local (a string one too), pattern (load_swa_pattern /
    set_swa_pattern), assert (llama.cpp aborts where it fails), throw (llama.cpp refuses the file, with its
    message), unknown."""
    m = re.fullmatch(r"(?:const bool (\w+) = )?ml\.get_key\((LLM_KV_\w+), (?:hparams\.)?(\w+)(, (?:false|true))?\);",
                     stmt)
    if m and m.group(2) in kv:  # (get_key's `required` defaults to true)
        return ["key", m.group(3), kv[m.group(2)], m.group(1), m.group(4) != ", false"]
    m = re.fullmatch(r"ml\.get_arr\((LLM_KV_\w+), hparams\.(\w+)(, (?:false|true))?\);", stmt)
    if m and m.group(1) in kv:
        return ["array", m.group(2), kv[m.group(1)], m.group(3) != ", false"]
    m = re.fullmatch(r"(?:const bool (\w+) = )?ml\.get_key_or_arr\((LLM_KV_\w+), hparams\.(\w+), ([^,]+)"
                     r"(, (?:false|true))?\);", stmt)
    if m and m.group(2) in kv:  # (an array of exactly n, or one value n times; `found`: whether the key was there)
        return ["key_or_arr", m.group(3), kv[m.group(2)], py_expr(m.group(4)), m.group(5) != ", false", m.group(1)]
    m = re.fullmatch(r"PER_LAYER\((\w+)\) = \[(\w+) \| ([^|]+) \| ([^|]+) \| ([^;]+)\];", stmt)
    if m:  # (per_layer_loops' form: entries start .. bound - 1 of a per-layer field, each its expression)
        return ["per_layer", m.group(1), m.group(2), py_expr(m.group(3)), py_expr(m.group(4)), py_expr(m.group(5))]
    m = re.fullmatch(r"hparams\.(\w+) = ([^;]+);", stmt)
    if m and "[" not in m.group(1):
        return ["set", m.group(1), layer_zero(py_expr(m.group(2)))]
    m = re.fullmatch(r"hparams\.(\w+) ([-+*/])= ([^;]+);", stmt)
    if m:
        return ["set", m.group(1), f"{m.group(1)} {m.group(2)} ({py_expr(m.group(3))})"]
    m = re.fullmatch(r"std::fill\(hparams\.(\w+)\.begin\(\), hparams\.\1\.end\(\), ([^;]+)\);", stmt)
    if m:
        return ["fill", m.group(1), py_expr(m.group(2))]
    m = re.fullmatch(r"(?:const )?(?:bool|uint32_t|int32_t|int|float) (\w+) = ([^;{}]+);", stmt)
    if m:
        return ["local", m.group(1), layer_zero(py_expr(m.group(2)))]
    m = re.fullmatch(r"([a-z_]\w*) = ([^;{}]+);", stmt)
    if m:  # (a member of the model's class the loader sets, NanBeige's n_loops: read as a local)
        return ["local", m.group(1), layer_zero(py_expr(m.group(2)))]
    m = re.fullmatch(r"(load_swa_pattern\(ml, |hparams\.set_swa_pattern\()(\d+)(, (?:/\*[^*]*\*/)?(true|false))?\);",
                     stmt)
    if m:
        return ["pattern", int(m.group(2)), m.group(4) == "true", m.group(1).startswith("load")]
    m = re.fullmatch(r'std::string (\w+)\("([^"\\]*)"\);', stmt)
    if m:  # (a string local: rope_scaling's "linear")
        return ["local", m.group(1), repr(m.group(2))]
    m = re.fullmatch(r"GGML_ASSERT\((.*)\);", stmt)
    if m:
        return ["assert", layer_zero(py_expr(m.group(1)))]
    m = re.fullmatch(r'throw std::runtime_error\("([^"\\]*)"\);', stmt)
    if m:
        return ["throw", m.group(1)]
    return ["unknown", stmt]


def hparams_methods(cpp: str) -> dict[str, list]:
    """llama_hparams' methods of the shape `if (c) { return x; } ... return y;` (or a final abort) as
    [parameters, Python expression]; the evaluator calls them."""
    out: dict[str, list] = {}
    for m in re.finditer(r"\n(?:bool|uint32_t|int32_t|float)\s+llama_hparams::(\w+)\s*\(([^)]*)\)\s*const\s*\{", cpp):
        body = cpp[m.end():matching(cpp, m.end() - 1)]
        params = [p.split()[-1] for p in m.group(2).split(",") if p.strip()]
        expr = method_expr(body)
        if expr is not None:
            out[m.group(1)] = [params, expr]
    return out


def method_expr(body: str) -> str | None:
    """A method body of if-returns as one nested conditional expression; None for any other shape."""
    body = body.strip()
    m = re.match(r"if\s*\(", body)
    if m:
        close = matching(body, m.end() - 1, "(", ")")
        cond = py_expr(body[m.end():close])
        rest = body[close + 1:].lstrip()
        if not rest.startswith("{"):
            return None
        end = matching(rest, 0)
        then = method_expr(rest[1:end])
        other = method_expr(rest[end + 1:])
        if then is None or other is None:
            return None
        return f"(({then}) if ({cond}) else ({other}))"
    m = re.fullmatch(r"return\s+([^;]+);(.*)", body, flags=re.S)
    if m:
        return f"({py_expr(m.group(1))})"
    if body.startswith("GGML_ABORT"):
        return "aborts()"
    return None


def hparams_defaults(src: pathlib.Path, model_cpp: str) -> dict:
    """llama_hparams' plain defaults (llama-hparams.h), the per-layer arrays' (llama_model_base::
    load_hparams fills them), set_swa_pattern's two rules and the methods the conditions call."""
    h = strip_comments((src / "llama-hparams.h").read_text())
    out: dict = {}
    for m in re.finditer(r"\n\s*(?:bool|uint32_t|int32_t|float|llama_swa_type)\s+(\w+)\s*=\s*([\w.+-]+)\s*;", h):
        out[m.group(1)] = py_expr(m.group(2))
    base = body_of(model_cpp, r"void\s+llama_model_base::load_hparams\s*\(") or ""
    for m in re.finditer(r"std::fill\(hparams\.(\w+)\.begin\(\),\s*hparams\.\1\.end\(\),\s*([^;]+)\);", base):
        out[m.group(1)] = {"fill": py_expr(m.group(2))}
    cpp = strip_comments((src / "llama-hparams.cpp").read_text())
    body = body_of(cpp, r"void\s+llama_hparams::set_swa_pattern\s*\(") or ""
    rules = re.findall(r"is_swa_impl\[il\]\s*=\s*([^;]+);", body)
    limit = re.search(r"#define\s+LLAMA_MAX_LAYERS\s+(\d+)", h)
    if limit is None:
        sys.exit("LLAMA_MAX_LAYERS not found in llama-hparams.h: the layer bound would be a guess")
    return {"fields": out, "max_layers": int(limit.group(1)),
            "swa_pattern_dense_first": py_expr(rules[0]) if len(rules) > 1 else "unknown",
            "swa_pattern": py_expr(rules[1]) if len(rules) > 1 else "unknown", "methods": hparams_methods(cpp)}


GGUF_SCALAR = {"bool": "BOOL", "uint8_t": "UINT8", "uint16_t": "UINT16", "uint32_t": "UINT32", "uint64_t": "UINT64",
               "int8_t": "INT8", "int16_t": "INT16", "int32_t": "INT32", "int": "INT32", "int64_t": "INT64",
               "float": "FLOAT32", "double": "FLOAT64", "std::string": "STRING",
               "llama_pooling_type": "UINT32"}  # (llama_model_loader's GKV<T>::gt; the pooling enum reads a uint32)
# (get_arr's element types for a std::array of T; a std::vector takes no BOOL)
GGUF_ELEMENTS = {"int32_t": ("BOOL", "UINT32", "INT32"), "uint32_t": ("BOOL", "UINT32", "INT32"),
                 "int": ("BOOL", "UINT32", "INT32"), "uint64_t": ("UINT64",), "float": ("FLOAT32",),
                 "std::string": ("STRING",)}
C_TYPE = r"(?:enum\s+)?(?:std::array<\s*\w+\s*,\s*\w+\s*>|std::vector<\s*[\w:]+\s*>|std::string|\w+)"


def field_types(h: str) -> dict[str, str | None]:
    """The field names declared in header text `h` -> C type (None for a name two fields share with two
    types), the array fields as `std::array<T, N>`, llama_token as int32_t."""
    out: dict[str, str | None] = {}
    for m in re.finditer(rf"\n\s*({C_TYPE})\s+(\w+)\s*(?:=[^;]*)?;", h):
        ctype = re.sub(r"\bllama_token\b", "int32_t", " ".join(m.group(1).split()).removeprefix("enum "))
        out[m.group(2)] = ctype if out.get(m.group(2), ctype) == ctype else None
    return out


SCALARS = ("UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "UINT64", "INT64",
           "FLOAT64")  # (GGUF's scalar value types)


def accepted_types(call: str, ctype: str | None, optional: bool = False) -> list[str] | None:
    """The GGUF value types llama_model_loader's `call` (get_key, get_key_or_arr, get_arr) takes into a
    target of C type `ctype` ("key %s has wrong type" otherwise; an optional get_arr passes over a value
    that is no array); None where the script cannot say."""
    if ctype is None:
        return None
    m = re.fullmatch(r"std::(array|vector)<\s*([\w:]+)\s*(?:,\s*\w+\s*)?>", ctype)
    if m:
        elems = [e for e in GGUF_ELEMENTS.get(m.group(2), ()) if m.group(1) == "array" or e != "BOOL"]
        arrays = [f"ARRAY[{e}]" for e in elems]
        if call == "get_arr":
            return (arrays + list(SCALARS) * optional) or None
        scalar = GGUF_SCALAR.get(m.group(2))  # (get_key_or_arr: one value for all, read by get_key<T>)
        return ([scalar] + arrays) if call == "get_key_or_arr" and scalar and arrays else None
    if call == "get_arr":
        return None
    scalar = GGUF_SCALAR.get(ctype)
    return [scalar] if scalar else None  # (get_key_or_arr into a scalar refuses an array)


def key_types(body: str, kv: dict[str, str], fields: dict[str, str | None], members: dict[str, str | None],
              arch: str | None = None, params: str = "") -> dict[str, dict]:
    """Each architecture key a load_hparams body reads with get_key / get_key_or_arr / get_arr: the GGUF
    types llama.cpp takes for it ("accept", a list; "unknown" where the target's C type is not read),
    whether every file reaches the read ("always": no if / switch around it), the condition it is read
    under ("cond": a Python expression over hparams names and the body's locals, None where the script
    cannot read it) and, for get_key_or_arr, the entries an array must hold ("count"). `fields`:
    llama_hparams' types; `members`: the model classes' (a target that is neither `hparams.x` nor a
    local); `arch`: the architecture whose body it is (its `arch == X` tests decided); `params`: the
    function's parameter list (declarations a read may target)."""
    decls = f"({params}) {body}"
    local_types = {m.group(2): re.sub(r"\bllama_token\b", "int32_t", " ".join(m.group(1).split()))
                   for m in re.finditer(rf"(?:^|(?<=[;{{}}(,]))\s*(?:const\s+)?({C_TYPE})\s+(\w+)\s*(?=[=(;,)])",
                                        decls)}
    # (a local a loader call fills, DeepSeek-V2's n_vocab, is not its initializer: left as a name, unknown)
    local = {k: v for k, v in locals_of(body).items() if not re.search(rf"\bml\.\w+\([^;]*\b{k}\b", body)}
    reads: dict[str, list[dict]] = {}
    for m in re.finditer(r"\bml\.(get_key_or_arr|get_key|get_arr)\(\s*(LLM_KV_\w+)\s*,\s*([\w.]+)", body):
        if m.group(2) not in kv:
            continue  # (general.* and the tokenizer's keys: not an architecture's)
        target = m.group(3)
        ctype = fields.get(target.split(".")[-1]) if target.startswith("hparams.") \
            else local_types.get(target, members.get(target))
        args = call_arguments(body, m.start() + len(m.group(0).split("(")[0]) + 1)
        flag = required_flag(m.group(1), args)
        optional = flag is False
        accept = accepted_types(m.group(1), ctype, optional)
        conds = enclosing_conditions(body, m.start())
        cond = None if conds is None else substitute(" and ".join(conds) or "True", local)
        if cond is not None and arch is not None:
            cond = re.sub(r"\barch\s*(==|!=)\s*(LLM_ARCH_\w+)",
                          lambda c: str((c.group(2) == arch) == (c.group(1) == "==")), cond)
        read = {"accept": accept if accept is not None else "unknown", "always": conds == [], "cond": cond,
                "required": "False" if optional else None if flag is None else "True" if conds == [] else cond}
        if m.group(1) == "get_key_or_arr" and len(args) > 3:
            read["count"] = py_expr(substitute(args[2], local))
        reads.setdefault(kv[m.group(2)], []).append((m.group(1), optional, read))
    return {key: combined(rs) for key, rs in reads.items()}


def required_flag(call: str, args: list[str]) -> bool | None:
    """A loader read's `required` argument (get_key(kid, result, required = true), get_arr alike,
    get_key_or_arr(kid, result, n, required = true)): a C literal's truth (DeepSeek-V3.2's `0.0f` is false),
    None where it is no literal."""
    at = {"get_key_or_arr": 3}.get(call, 2)
    if len(args) <= at:
        return True
    arg = args[at].strip()
    if arg in ("true", "false"):
        return arg == "true"
    if re.fullmatch(r"\d+(?:\.\d*)?f?|\.\d+f?", arg):
        return float(arg.rstrip("f")) != 0
    return None


def required_either(a: str | None, b: str | None) -> str | None:
    """The condition under which one of two reads requires its key (None: cannot be read)."""
    if "True" in (a, b):
        return "True"
    if a == "False" or b == "False":
        return b if a == "False" else a
    return None if None in (a, b) else f"({a}) or ({b})"


def combined(reads: list[tuple[str, bool, dict]]) -> dict:
    """One key's reads as one: an optional get_arr takes the arrays and leaves any other value to the
    reads after it (load_swa_pattern: an array, else a uint32 period); other reads a file must pass all."""
    out = dict(reads[0][2])
    for call, optional, read in reads[1:]:
        old, new = out["accept"], read["accept"]
        if "unknown" in (old, new):
            out["accept"] = "unknown"
        elif reads[0][0] == "get_arr" and reads[0][1]:
            out["accept"] = [a for a in old if a.startswith("ARRAY")] + [a for a in new if not a.startswith("ARRAY")]
        else:
            out["accept"] = [a for a in old if a in new]
        out["always"] = out["always"] or read["always"]
        out["required"] = required_either(out["required"], read["required"])
        out["cond"] = "True" if out["always"] else None if None in (out["cond"], read["cond"]) else \
            f"({out['cond']}) or ({read['cond']})"
    return out


FACTOR_TENSORS = {"rope_freqs": "rope_freqs.weight", "rope_long": "rope_factors_long.weight",
                  "rope_short": "rope_factors_short.weight"}  # (llama_layer's fields and their GGUF names)


def factor_tensors(srcs: "Sources", owner: str | None) -> dict[str, str]:
    """The per-pair factor tensors `owner`'s load_arch_tensors creates, each with the condition under which
    it does (Llama: the longrope pair only where rope.scaling.type is longrope, rope_freqs otherwise;
    "unknown" where a condition cannot be read): a file holding another is one llama.cpp refuses ("wrong
    number of tensors")."""
    found: dict[str, list[str]] = {}
    for body in srcs.functions(f"{owner}::load_arch_tensors") if owner else []:
        local = locals_of(body)
        for m in re.finditer(r"\b(rope_freqs|rope_long|rope_short)\s*=\s*create_tensor", body):
            conds = enclosing_conditions(body, m.start())
            cond = "unknown" if conds is None else " and ".join(substitute(c, local) for c in conds) or "True"
            found.setdefault(FACTOR_TENSORS[m.group(1)], []).append(constant(cond) if cond != "unknown" else cond)
    return {name: "unknown" if "unknown" in conds else "True" if "True" in conds
            else " or ".join(f"({c})" for c in sorted(set(conds))) for name, conds in sorted(found.items())}


LOAD_LOCALS: dict[str, str] = {}  # LLAMA_LOAD_LOCALS' names (llama-model.h), which load_arch_tensors bodies declare


def read_load_locals(header: str) -> None:
    """LOAD_LOCALS from llama-model.h's LLAMA_LOAD_LOCALS macro (`const int64_t n_rot = hparams.n_rot();`)."""
    m = re.search(r"#define\s+LLAMA_LOAD_LOCALS((?:[^\n]*\\\n)*[^\n]*)", header)
    if m is None:
        sys.exit("LLAMA_LOAD_LOCALS not found in llama-model.h: the factor tensors' sizes would be a guess")
    LOAD_LOCALS.update(locals_of(m.group(1).replace("\\\n", " ")))


def factor_sizes(srcs: "Sources", owner: str | None) -> dict[str, str]:
    """Each factor tensor's length as `owner`'s load_arch_tensors creates it (`{n_rot/2}`), an expression over
    the hparams and the layer `i`: llama.cpp's loader refuses a file whose tensor has another shape ("tensor
    has wrong shape"). "unknown" where it cannot be read (a local set again after its declaration, but for
    Step 3.5's maximum over the layers, `layers_max_local`; a shape of more than one dimension, or two sites
    that differ)."""
    found: dict[str, set[str]] = {}
    for body in srcs.functions(f"{owner}::load_arch_tensors") if owner else []:
        local = {**(LOAD_LOCALS if "LLAMA_LOAD_LOCALS" in body else {}), **locals_of(body)}
        for name in list(local):  # (assigned again after its declaration: its value at a use is not read here,
            if len(re.findall(rf"(?<![\w.]){name}\s*=(?!=)", body)) > 1:  # but for a maximum over the layers)
                local[name] = layers_max_local(body, name, local[name]) or "unknown_local()"
        for m in re.finditer(r"\b(rope_freqs|rope_long|rope_short)\s*=\s*create_tensor\s*\(\s*tn\s*\([^()]*\)"
                             r"\s*,\s*\{([^{}]*)\}", body):
            dims = m.group(2).split(",")
            size = "unknown" if len(dims) != 1 or "unknown_local" in substitute(dims[0], local) \
                else layer_zero(py_expr(substitute(dims[0], local)))
            found.setdefault(FACTOR_TENSORS[m.group(1)], set()).add(size)
    return {name: sizes.pop() if len(sizes) == 1 else "unknown" for name, sizes in sorted(found.items())}


def layers_max_local(body: str, name: str, declared: str) -> str | None:
    """A local declared 0, then set only by a maximum over the layers and, after it, a fallback where that is
    0, and otherwise only read in a factor tensor's shape after both, as C++ (Step 3.5's n_rot_max: `for (int
    i = 0; i < n_layer; ++i) n_rot_max = std::max(n_rot_max, hparams.n_rot(i)); if (n_rot_max == 0) n_rot_max =
    n_rot;`), as `layers_max(expr over i, count)`, which gguf_program evaluates; None for any other shape (a
    compound assignment, ++, a call taking it, a fallback before the loop: read as unknown, never guessed)."""
    decl = re.search(rf"\b(?:const\s+)?(?:uint32_t|int64_t|int32_t|int|auto)\s+{name}\s*=\s*0\s*;", body)
    loop = re.search(rf"\bfor\s*\(\s*(?:int|uint32_t|int64_t|size_t)\s+i\s*=\s*0\s*;\s*i\s*<\s*(\w+)\s*;\s*"
                     rf"(?:\+\+i|i\+\+)\s*\)\s*\{{\s*{name}\s*=\s*std::max\(\s*{name}\s*,\s*([^;{{}}]+)\)\s*;\s*\}}",
                     body)
    if declared.strip() != "0" or decl is None or loop is None or loop.start() < decl.end():
        return None
    fallback = re.search(rf"\bif\s*\(\s*{name}\s*==\s*0\s*\)\s*\{{?\s*{name}\s*=\s*([^;{{}}]+);\s*\}}?",
                         body[loop.end():])
    spans = [decl.span(), loop.span()] + ([(loop.end() + fallback.start(), loop.end() + fallback.end())]
                                          if fallback else [])
    for m in re.finditer(rf"(?<![\w.]){name}\b", body):  # (any other mention: a read in a factor's shape)
        if not any(a <= m.start() < b for a, b in spans) and (m.start() < spans[-1][1] or not re.search(
                r"create_tensor\s*\(\s*tn\s*\([^()]*\)\s*,\s*\{[^{};=]*$", body[:m.start()])):
            return None
    most = f"layers_max({loop.group(2).strip()}, {loop.group(1)})"
    return most if fallback is None else f"{most} == 0 ? {fallback.group(1).strip()} : {most}"


def factor_required(srcs: "Sources", owner: str | None) -> dict[str, str]:
    """Whether `owner`'s load_arch_tensors requires each factor tensor it creates ("True": a create_tensor
    whose flags never hold TENSOR_NOT_REQUIRED, as Gemma 4's rope_freqs: llama.cpp refuses a file without it,
    "tensor not found"; "False"; "unknown" where the flags are a variable set otherwise)."""
    found: dict[str, set[str]] = {}
    for body in srcs.functions(f"{owner}::load_arch_tensors") if owner else []:
        for m in re.finditer(r"\b(rope_freqs|rope_long|rope_short)\s*=\s*create_tensor\s*\(", body):
            args = call_arguments(body, m.end())
            flags = args[2] if len(args) > 2 else "0"
            values = [flags]
            if re.fullmatch(r"\s*[a-z_]\w*\s*", flags):  # (a local: Gemma 4's rope_freqs_flag, 0 then DUPLICATED)
                values = re.findall(rf"\b{flags.strip()}\s*=(?!=)\s*([^;]+);", body) or ["?"]
            kinds = {"False" if "TENSOR_NOT_REQUIRED" in v
                     else "True" if re.fullmatch(r"(?:[\s|()]|0|TENSOR_DUPLICATED)*", v) else "unknown" for v in values}
            found.setdefault(FACTOR_TENSORS[m.group(1)], set()).add(kinds.pop() if len(kinds) == 1 else "unknown")
    return {name: kinds.pop() if len(kinds) == 1 else "unknown" for name, kinds in sorted(found.items())}


def factors_taken(body: str, arg: str, local: dict[str, str], at: int) -> str:
    """A rope call's freq_factors argument as a Python condition over the layer: whether the call takes the
    per-pair factor tensors ("False" for nullptr; Step 3.5's `is_swa ? nullptr : get_rope_factors(...)`,
    Gemma 4's `nullptr` set to `rope_freqs` under `if (!is_swa)`), "unknown" where it cannot be read."""
    def mark(expr: str) -> str:  # (before locals are substituted: a tensor source is True, a null False)
        expr = re.sub(r"\b(?:nullptr|NULL)\b", "False", " ".join(expr.split()))
        return re.sub(r"(?:model\.)?(?:layers\[\w+\]|layer)\.rope_freqs|model\.get_rope_factors\s*\([^()]*\)",
                      "True", expr)

    def taken(expr: str) -> str:
        try:
            return ast.unparse(ast.parse(py_expr(expr), mode="eval"))
        except SyntaxError:
            return "unknown"
    if not re.fullmatch(r"\w+", arg) or arg in ("nullptr", "NULL"):
        return taken(mark(arg))
    sets = list(re.finditer(rf"(\b(?:ggml_tensor\s*\*\s*))?(?<![\w.]){arg}\s*=(?!=)\s*([^;]+);", body[:at]))
    if not sets:
        return taken(substitute(mark(arg), local))
    if len(sets) == 1:
        return taken(substitute(mark(sets[0].group(2)), local))
    if len(sets) == 2 and sets[0].group(1) and not sets[1].group(1):  # (declared, then set under a condition)
        conds = enclosing_conditions(body, sets[1].start())
        if conds is None:
            return "unknown"
        cond = " and ".join(substitute(c, local) for c in conds) or "True"
        return f"({taken(substitute(mark(sets[1].group(2)), local))}) if ({cond}) else " \
               f"({taken(substitute(mark(sets[0].group(2)), local))})"
    return "unknown"


def rot_is_head(model_cpp: str) -> set[str]:
    """The architectures whose load_hparams throws "invalid n_rot" where rope.dimension_count is not the head
    width (llama, deci, falcon, llama-embed)."""
    base = body_of(model_cpp, r"void\s+llama_model_base::load_hparams\s*\(") or ""
    m = re.search(r"if\s*\(([^{}]*)\)\s*\{\s*if\s*\(\s*hparams\.n_rot_full\s*!=\s*hparams\.n_embd_head_k_full\s*\)", base)
    if m is None:
        sys.exit("llama_model_base::load_hparams' n_rot check not found: which architectures it binds is unknown")
    return set(re.findall(r"arch\s*==\s*(LLM_ARCH_\w+)", m.group(1)))


def build(src: pathlib.Path, origin: str) -> dict:
    """The whole table."""
    model_cpp = strip_comments((src / "llama-model.cpp").read_text())
    names, kv, types, cls_of = arch_names(src), kv_names(src), rope_types(model_cpp), classes(model_cpp)
    srcs = Sources(src)
    read_getters(model_cpp)
    DEFAULT_IL.update(re.findall(r"\b(\w+)\s*\(\s*uint32_t\s+il\s*=\s*0\s*\)\s*const",
                                 strip_comments((src / "llama-hparams.h").read_text())))
    read_load_locals(strip_comments((src / "llama-model.h").read_text()))
    defaults = hparams_defaults(src, model_cpp)
    defaults["base"] = base_program(model_cpp, kv)
    defaults["lookups"] = {name: f for name, f in lookups(model_cpp).items()
                           if re.search(rf"\b{name}\(", json.dumps(defaults["base"]))}
    if "llama_rope_scaling_type_from_string" not in defaults["lookups"]:
        sys.exit("llama_rope_scaling_type_from_string not read from llama-model.cpp: the scaling types would be a guess")
    fields = field_types(strip_comments((src / "llama-hparams.h").read_text()))
    members = field_types(strip_comments((src / "llama-model.h").read_text()))  # (llama_model's)
    defaults["key_types"] = key_types(body_of(model_cpp, r"void\s+llama_model_base::load_hparams\s*\(") or "",
                                      kv, fields, members)
    # (load_swa_pattern, which the architectures' loaders call: its reads, checked where a loader calls it)
    swa = re.search(r"void\s+llama_model_base::load_swa_pattern\s*\(([^)]*)\)", model_cpp)
    if swa is None:
        sys.exit("llama_model_base::load_swa_pattern not found in llama-model.cpp: its key types would be a guess")
    defaults["swa_pattern_key_types"] = key_types(body_of(model_cpp, r"void\s+llama_model_base::load_swa_pattern"
                                                                     r"\s*\(") or "", kv, fields, members,
                                                  params=swa.group(1))
    head_bound = rot_is_head(model_cpp)
    archs = {}
    for enum, name in sorted(names.items(), key=lambda x: x[1]):
        if enum not in types and enum not in cls_of:
            continue
        entry: dict = {"enum": enum, "pairs": types.get(enum, "unknown")}  # (enum: the base program's `arch`)
        cls = cls_of.get(enum)
        if cls is None:
            entry["rotates"] = "unknown"
        else:
            entry.update(graph_facts(srcs, srcs.graph_owner(cls), enum))
            entry["q_scale"] = q_scale_guard(srcs, srcs.graph_owner(cls), enum)
            entry["hparams"] = hparams_program(srcs, srcs.owner(cls, "load_arch_hparams"), kv,
                                               fields_read(entry, defaults["methods"]))
            entry["factor_tensors"] = factor_tensors(srcs, srcs.owner(cls, "load_arch_tensors"))
            entry["factor_sizes"] = factor_sizes(srcs, srcs.owner(cls, "load_arch_tensors"))
            entry["factor_required"] = factor_required(srcs, srcs.owner(cls, "load_arch_tensors"))
            owner = srcs.owner(cls, "load_arch_hparams")
            entry["key_types"] = key_types((srcs.functions(f"{owner}::load_arch_hparams") or [""])[0]
                                           if owner else "", kv, fields,
                                           {**members, **field_types(srcs.decl(owner)[1])} if owner else members,
                                           enum)
            entry["rot_is_head"] = enum in head_bound
        archs[name] = entry
    for name, message in refused_as_main(src, names).items():
        archs[name]["refused_as_main"] = message
    defaults["own_mscale"] = own_mscale(src, names)
    defaults["q_scale"] = q_scale_rule(src)
    return {"source": origin, "hparams": defaults, "archs": archs}


def refused_as_main(src: pathlib.Path, names: dict[str, str]) -> dict[str, str]:
    """{architecture: llama.cpp's message} for those llama_model_load refuses as a main model (CLIP's
    `if (model->arch == LLM_ARCH_CLIP) { throw std::runtime_error("... use it with --mmproj ...") }`, llama.cpp:
    a vision projector file, whose encoder's RoPE lives in tools/mtmd, not in the graph this table reads)."""
    text = strip_comments((src / "llama.cpp").read_text())
    found = re.findall(r"model->arch\s*==\s*(LLM_ARCH_\w+)\s*\)\s*\{\s*throw\s+std::runtime_error\(\s*\"([^\"]*)\"",
                       text)
    if not found:
        sys.exit("llama.cpp's refusal of CLIP as a main model not found: which files are projectors is unknown")
    return {names[e]: message for e, message in found}


def own_mscale(src: pathlib.Path, names: dict[str, str]) -> list[str]:
    """The architectures llama_context gives YaRN's log multiplier as their own mscale too (DeepSeek-V2's
    `model.arch == LLM_ARCH_DEEPSEEK2 && mscale_all_dims != 1.0f`, llama-context.cpp)."""
    text = strip_comments((src / "llama-context.cpp").read_text())
    found = re.findall(r"model\.arch\s*==\s*(LLM_ARCH_\w+)\s*&&\s*mscale_all_dims\s*!=\s*1\.0f", text)
    if not found:
        sys.exit("llama-context.cpp's DeepSeek-V2 mscale case not found: which architectures it covers is unknown")
    return sorted(names[e] for e in found)


def fields_read(entry: dict, methods: dict[str, list]) -> set[str]:
    """The hparams names the graph's conditions and rope arguments read (through the methods they call):
    the statements setting them belong in the program (GLM-DSA's indexer layers, the hybrids' recurrent
    ones)."""
    scaled = entry.get("q_scale", "False") not in ("False", "unknown")  # (its guard, and the factor's fields)
    exprs = [entry.get("rotates", ""), entry.get("q_scale", ""), " ".join(Q_SCALE_FIELDS) if scaled else ""]
    exprs += [v for f in entry.get("rope_forms") or ()
              for v in (f["guard"], f["dims"], f.get("head", ""),
                        *(f["scaling"].values() if isinstance(f["scaling"], dict) else ()))]
    names: set[str] = set()
    todo = set(re.findall(r"\b[a-z_]\w*\b", " ".join(exprs)))
    while todo:
        n = todo.pop()
        if n not in names:
            names.add(n)
            todo |= set(re.findall(r"\b[a-z_]\w*\b", methods.get(n, [None, ""])[1])) - names
    return names - {"il", "if", "else", "and", "or", "not", "True", "False", "n_layer_all"}  # (a bound, not a rule)


def from_pypi(tmp: pathlib.Path) -> tuple[pathlib.Path, str]:
    """llama.cpp's src folder from the newest llama-cpp-python sdist on PyPI."""
    index = "https://pypi.org/pypi/llama-cpp-python/json"
    with urllib.request.urlopen(index) as r:  # noqa: S310
        info = json.load(r)
    sdist = next(u for u in info["urls"] if u["packagetype"] == "sdist")
    path = tmp / sdist["filename"]
    urllib.request.urlretrieve(urllib.parse.urljoin(index, sdist["url"]), path)  # noqa: S310  (a mirror's are relative)
    with tarfile.open(path) as tar:
        tar.extractall(tmp, filter="data")
    root = tmp / sdist["filename"][:-len(".tar.gz")]
    return root / "vendor" / "llama.cpp" / "src", f"llama-cpp-python {info['info']['version']} sdist (vendor/llama.cpp)"


def tree_arguments(doc: str, out: pathlib.Path) -> argparse.Namespace:
    """The command line of a script that reads llama.cpp: --llama-cpp TREE or --pypi, and --out."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--llama-cpp", help="a llama.cpp source tree")
    g.add_argument("--pypi", action="store_true", help="llama-cpp-python's newest sdist from PyPI")
    ap.add_argument("--out", default=str(out))
    ap.add_argument("--source", help="where the tree came from, for the table's `source` (default: its path or "
                                     "git revision)")
    return ap.parse_args()


def llama_cpp_root(args: argparse.Namespace, tmp: pathlib.Path) -> tuple[pathlib.Path, str]:
    """(the llama.cpp tree's root, where it came from) for tree_arguments' --llama-cpp or --pypi."""
    if args.pypi:
        src, origin = from_pypi(tmp)
        return src.parent, origin
    tree = pathlib.Path(args.llama_cpp)
    if getattr(args, "source", None):
        return tree, args.source
    rev = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
    origin = f"llama.cpp {rev.stdout.strip()}" if rev.returncode == 0 and (tree / ".git").exists() \
        else f"llama.cpp tree {tree.resolve()}"
    return tree, origin


def main() -> int:
    args = tree_arguments(__doc__, OUT)
    with tempfile.TemporaryDirectory() as tmp:
        root, origin = llama_cpp_root(args, pathlib.Path(tmp))
        table = build(root / "src", origin)
    pathlib.Path(args.out).write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    archs = table["archs"]
    print(f"wrote {args.out}: {len(archs)} architectures, "
          f"{sum(1 for a in archs.values() if a.get('rotates') not in ('False', 'unknown'))} rotate, "
          f"{sum(1 for a in archs.values() if a.get('rotates') == 'unknown')} unknown")
    return 0


if __name__ == "__main__":
    sys.exit(main())

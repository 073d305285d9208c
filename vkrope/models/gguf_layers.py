"""Which layers of a GGUF model rotate, which are sliding, and the sliding
layers' base and scale, as llama.cpp decides them: the statements and
conditions scripts/gguf_arch_table.py read from llama.cpp's source
(vkrope/data/gguf_archs.json), evaluated over the file's metadata.

The table's conditions are Python expressions over llama_hparams' names;
`evaluate` runs them with a whitelist of syntax (no attribute access, no
builtins), and a name the file and the table do not give raises `Unknown`:
what depends on it is then refused, never guessed.
"""

from __future__ import annotations

import ast
import functools
import math
import json
import operator
from dataclasses import dataclass, replace
from importlib import resources
from collections.abc import Iterator, Mapping
from typing import Any, Callable

import numpy as np

from .gguf_context import Rotation, Unknown, context_fields, rotation


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """vkrope/data/gguf_archs.json."""
    return json.loads(resources.files("vkrope").joinpath("data/gguf_archs.json").read_text())


@functools.lru_cache(maxsize=1)
def factor_tensors() -> tuple[str, ...]:
    """llama.cpp's RoPE factor tensors' names: those any architecture's `factor_tensors` in the table names
    (rope_freqs.weight, longrope's rope_factors_short / _long.weight)."""
    return tuple(sorted({name for arch in table()["archs"].values() for name in arch.get("factor_tensors", {})}))


def _c_div(a: Any, b: Any) -> Any:
    """C's `/`: integers truncate toward zero, anything else divides."""
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


def _powf(a: Any, b: Any) -> np.float32:
    """C's powf: float32 operands, the power rounded to float32 (libm's float64 power, rounded once)."""
    return np.float32(math.pow(float(np.float32(a)), float(np.float32(b))))


# C's float cast and powf (HunyuanVL's alpha): float32 values, so that the expression they start (`base * powf(alpha,
# float(d) / float(d - 2))`) is float32 arithmetic too, as C's is (numpy keeps a float32 times a Python float float32)
_FUNCTIONS: dict[str, Callable[..., Any]] = {"float": np.float32, "powf": _powf}
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
           ast.FloorDiv: operator.floordiv, ast.Div: _c_div}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge}


@functools.lru_cache(maxsize=1024)
def _parse(expr: str) -> ast.AST:
    """A table expression's syntax tree (parsed once: the conditions run per layer)."""
    try:
        return ast.parse(expr, mode="eval").body
    except SyntaxError:
        raise Unknown(f"unreadable expression {expr!r}") from None


class Hparams:
    """llama_hparams' values for one file: fields by name, and the table's methods."""

    def __init__(self, fields: dict[str, Any], methods: dict[str, list], types: dict[str, str] | None = None,
                 key_types: dict[str, dict] | None = None) -> None:
        self.fields = fields
        self.methods = methods
        self.unknown: dict[str, str] = {}  # fields a statement set from what is not known: why
        self.types = types  # the file's GGUF type of each key (None: not a file's, a converted config's)
        self.key_types = key_types or {}  # the architecture's load_arch_hparams reads: the types it takes

    def evaluate(self, expr: str, **local: Any) -> Any:
        """The value of a table expression; Unknown where it depends on what is not known."""
        return self._node(_parse(expr), local)

    def _node(self, n: ast.AST, local: dict) -> Any:  # noqa: PLR0911  (one case per node kind)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float, bool, str)):
            return n.value
        if isinstance(n, ast.Name):
            return self._name(n.id, local)
        if isinstance(n, ast.BoolOp):
            return self._bool(n, local)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.Not, ast.USub)):
            v = self._node(n.operand, local)
            return (not v) if isinstance(n.op, ast.Not) else -v
        if isinstance(n, ast.BinOp) and type(n.op) in _BINARY:
            left, right = self._node(n.left, local), self._node(n.right, local)
            try:
                return _BINARY[type(n.op)](left, right)
            except ZeroDivisionError:
                if isinstance(left, int) and isinstance(right, int):  # (C's integer division by zero: SIGFPE)
                    raise Refused(f"llama.cpp divides an integer by zero in {ast.unparse(n)} on this file (it "
                                  "crashes there)") from None
                raise Unknown(f"{ast.unparse(n)} has no value here") from None
            except TypeError:
                raise Unknown(f"{ast.unparse(n)} has no value here") from None
        if isinstance(n, ast.Compare) and all(type(op) in _COMPARE for op in n.ops):
            left = self._node(n.left, local)
            for op, right_node in zip(n.ops, n.comparators):
                right = self._node(right_node, local)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(n, ast.IfExp):
            return self._if(n, local)
        if isinstance(n, ast.Subscript):
            seq, index = self._node(n.value, local), self._node(n.slice, local)
            if not isinstance(seq, (list, tuple)) or not isinstance(index, int) or not 0 <= index < len(seq) \
                    or seq[index] is None:  # (None: an entry a loader's loop left at an unknown default)
                raise Unknown(f"{ast.unparse(n)} has no value here")
            return seq[index]
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "layers_max" and len(n.args) == 2:
            return self._layers_max(n.args[0], n.args[1], local)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
            return self._call(n.func.id, [self._node(a, local) for a in n.args])
        raise Unknown(f"{ast.unparse(n)} is outside what vkrope evaluates")

    def _layers_max(self, expr: ast.AST, count: ast.AST, local: dict) -> Any:
        """`layers_max(expr, count)`: the largest value of expr over the layers i < count, as a loader's loop
        takes it (Step 3.5's n_rot_max, the length of its one factor tensor)."""
        n = self._node(count, local)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise Unknown(f"layers_max over {n!r} layers has no value here")
        return max(self._node(expr, {**local, "i": i, "il": i}) for i in range(n))

    def _name(self, name: str, local: dict) -> Any:
        if name in local:
            return local[name]
        if name in self.fields:
            return self.fields[name]
        if name in self.unknown:
            raise Unknown(f"{name}: {self.unknown[name]}")
        if name.startswith(("LLAMA_", "LLM_")) and name.isupper():  # an enum constant: its name is its value
            return name
        raise Unknown(f"{name} is not known for this file")

    def _bool(self, n: ast.BoolOp, local: dict) -> bool:
        """and / or over three values: a decided operand decides, else Unknown (a crash of an operand after an
        unknown one, which C may never evaluate, too)."""
        decisive = isinstance(n.op, ast.Or)
        why: Unknown | None = None
        for v in n.values:
            try:
                if bool(self._node(v, local)) == decisive:
                    return decisive
            except Unknown as exc:
                why = exc
            except Refused as exc:
                if why is None:  # (every operand before it decided: C evaluates this one)
                    raise
                why = Unknown(f"{exc}, where llama.cpp reaches it")
        if why is not None:
            raise why
        return not decisive

    def _if(self, n: ast.IfExp, local: dict) -> Any:
        try:
            test = self._node(n.test, local)
        except Unknown:
            try:  # (both sides, each where C may take it: a crash on one is unknown, as the side taken is)
                a, b = self._node(n.body, local), self._node(n.orelse, local)
            except Refused as exc:
                raise Unknown(f"{exc}, where llama.cpp takes that side") from None
            if a == b:
                return a
            raise
        return self._node(n.body if test else n.orelse, local)

    def _call(self, name: str, args: list) -> Any:
        if name in _FUNCTIONS and not isinstance(self.fields.get(name), list):
            try:
                return _FUNCTIONS[name](*args)
            except (TypeError, ValueError, OverflowError):
                raise Unknown(f"{name}{tuple(args)} has no value here") from None
        lookup = table()["hparams"]["lookups"].get(name)
        if lookup is not None and len(args) == 1:  # (a string's enum, else the function's own fallback)
            return lookup["table"].get(args[0], lookup["otherwise"]) if isinstance(args[0], str) \
                else lookup["otherwise"]
        if name not in self.methods:
            raise Unknown(f"{name}() is not known for this file")
        params, expr = self.methods[name]
        if len(params) != len(args):
            raise Unknown(f"{name}() takes {len(params)} arguments")
        return self.evaluate(expr, **dict(zip(params, args)))


@dataclass(frozen=True)
class LayerPlan:
    """llama.cpp's per-layer decisions for one file."""

    n_layer: int
    rotates: tuple[bool, ...] | None  # per layer whether its graph applies RoPE; None when unknown
    sliding: tuple[bool, ...] | None  # per layer llama.cpp's is_swa; None when unknown
    use_mrope: bool
    unknown: str = ""  # why rotates or sliding is unknown
    rotations: tuple[Rotation | None, ...] | None = None  # per layer its rope call's arguments (None: no rope call)
    rotations_unknown: str = ""  # why rotations is None
    tensors: tuple[str, ...] = ()  # the factor tensors the loader creates for this file (on some layer, or unknown)
    sizes: tuple[tuple[str, tuple[int, ...]], ...] = ()  # each created tensor's lengths as created, where known
    required: tuple[str, ...] = ()  # the created tensors the loader requires (Gemma 4's rope_freqs), where known
    split: tuple[tuple[int, str], ...] = ()  # (layer, how) where its parts' calls differ and no part was named


def parts_of(entry: dict) -> tuple[str, ...]:
    """The parts an architecture's graph rotates, each with calls of its own (DeepSeek-V3.2's "attention" and
    "indexer", the table's part of each rope form); () where it rotates its attention alone."""
    named = {f.get("part", "attention") for f in entry.get("rope_forms") or ()}
    return tuple(sorted(named)) if len(named) > 1 else ()


_MODE_PAIRS = {"LLAMA_ROPE_TYPE_NEOX": "neox", "GGML_ROPE_TYPE_NEOX": "neox", "LLAMA_ROPE_TYPE_NORM": "norm",
               "GGML_ROPE_TYPE_NORM": "norm"}  # (a call's mode given as a constant, not the model's rope type)


def pairs_of(call: Rotation, entry: dict) -> Any:
    """The pairs a rope call turns: the model's rope type (the table's `pairs`) or the constant the call names."""
    return entry["pairs"] if call.mode == "rope_type" else _MODE_PAIRS.get(call.mode, call.mode)


def plan(arch: str, entry: dict, kv: Mapping[str, Any], types: dict[str, str] | None = None,
         complete: bool = True, part: str | None = None) -> LayerPlan:
    """Run the table's statements for `arch` over the file's metadata `kv` (keys without the arch
    prefix; `types`: each one's GGUF type, where a file gave them) and evaluate its rotation condition per
    layer; the rope calls of `part` (parts_of; None: every part's, one way, or refused)."""
    check_types(types, entry, complete)
    hp = _start(kv, _layer_count(kv), types, entry)  # (llama.cpp requires block_count: a file without is refused)
    why = ""
    try:
        for _ in _program(hp, entry, kv):
            pass
        sliding: tuple[bool, ...] | None = tuple(bool(hp.evaluate("is_swa(il)", il=i))
                                                 for i in range(hp.fields["n_layer"]))
        check_reads(hp, kv, entry, complete)
    except Unknown as exc:
        sliding, why = None, f"llama.cpp's load_arch_hparams for {arch!r}: {exc}"
    rotates = None
    if sliding is not None or "is_swa" not in entry["rotates"]:
        try:
            rotates = tuple(bool(hp.evaluate(entry["rotates"], il=i)) for i in range(hp.fields["n_layer"]))
        except Unknown as exc:
            why = why or f"llama.cpp's graph for {arch!r} rotates where {entry['rotates']} ({exc})"
    rotations, rot_why, split = _rotations(arch, entry, kv, hp.fields["n_layer"],
                                           hp if sliding is not None else None, part)
    if part is not None and parts_of(entry) and rotates is not None:  # (a part may run on some layers only:
        # dots.ocr's indexer on its full ones)
        try:
            rotates = tuple(r and any(hp.evaluate(f["guard"], il=i) for f in entry.get("rope_forms") or ()
                                      if f.get("part", "attention") == part) for i, r in enumerate(rotates))
        except Unknown as exc:
            rotates, why = None, why or f"which layers run its {part} is unknown for {arch!r}: {exc}"
    return LayerPlan(hp.fields["n_layer"], rotates, sliding, _use_mrope(kv, entry), why, rotations, rot_why,
                     *_created(entry, hp), split=split)


def _created(entry: dict, hp: Hparams) -> tuple[tuple[str, ...], tuple[tuple[str, tuple[int, ...]], ...],
                                                tuple[str, ...]]:
    """The factor tensors the architecture's loader creates for this file: where the table's condition holds
    on some layer, or cannot be decided (Llama: the longrope pair only for rope.scaling.type longrope); the
    lengths each is created with on those layers, where the table's size and the condition are known; and
    those it creates as required (the table's factor_required), on a layer the condition decides."""
    out, sizes, required = [], [], []
    for name, cond in (entry.get("factor_tensors") or {}).items():
        try:
            layers = [i for i in range(hp.fields["n_layer_all"]) if hp.evaluate(cond, i=i, il=i)]
        except Unknown:
            out.append(name)
            continue
        if layers:
            out.append(name)
            if (entry.get("factor_required") or {}).get(name) == "True":
                required.append(name)
            try:
                size = (entry.get("factor_sizes") or {}).get(name, "unknown")
                sizes.append((name, tuple(sorted({int(hp.evaluate(size, i=i, il=i)) for i in layers}))))
            except (Unknown, TypeError, ValueError):
                pass  # (a size the table cannot say, or an expression without a value here: left unchecked)
    return tuple(out), tuple(sizes), tuple(required)


_TARGETED = ("key", "array", "key_or_arr", "set", "local", "fill")  # (statement kinds whose first argument is set)


def _rotations(arch: str, entry: dict, kv: Mapping[str, Any], n_layer: int, hp: Hparams | None = None,
               part: str | None = None) -> tuple[tuple[Rotation | None, ...] | None, str, tuple[tuple[int, str], ...]]:
    """Per layer the arguments of its rope call (gguf_context.Rotation; None where the graph makes none),
    from the table's rope_forms (of `part`, where named) over the file's fields; (None, why) where a layer's
    cannot be known or its calls differ (DeepSeek-V3.2's indexer beside its attention, no part named: parts
    that turn the same pairs by the same angles, GLM-DSA's, read as the attention); and (layer, how) where its
    parts' calls differ, no part named (that layer's rotation None). `hp`: the plan's, its program run."""
    try:
        if hp is None:  # (the plan's program stopped at what it cannot run: what it would set is unknown)
            hp = _start(kv, _layer_count(kv), None, entry)  # (the plan checked the types)
            for cond, kind, *args in entry.get("hparams", ()):
                try:
                    if hp.evaluate(cond):
                        _run(hp, kind, args, kv)
                except (ValueError, Unknown) as exc:  # (what it would set is unknown, where read)
                    if kind in _TARGETED:
                        hp.fields.pop(args[0], None)
                        hp.unknown[args[0]] = str(exc)
        hp.fields.update(context_fields(hp.fields, arch in table()["hparams"]["own_mscale"]))
        hp.fields["n_rot"] = hp.evaluate("n_rot(0)")  # (the graph's n_rot: llama_hparams::n_rot()'s, layer 0's)
        f = hp.fields
        if entry.get("rot_is_head") and f["n_rot_full"] != f["n_embd_head_k_full"]:  # (load_hparams throws)
            raise ValueError(f"rope.dimension_count {f['n_rot_full']} is not the head width "
                             f"{f['n_embd_head_k_full']}: llama.cpp refuses it for {arch} ('invalid n_rot')")
        for width in entry.get("rot_asserted") or ():  # (GGML_ASSERT(n_embd_head == n_rot): llama.cpp aborts)
            if hp.evaluate(width) != hp.fields["n_rot"]:
                named = width[1:-1] if width[:1] == "(" else width  # (the table's expression, unwrapped)
                raise Refused(f"the rotated width {hp.fields['n_rot']} (llama.cpp's n_rot: layer 0's "
                              "rope.dimension_count, or rope.dimension_count_swa on a sliding layer, else its "
                              "attention.key_length, else embedding_length / head_count) is not the head width "
                              f"{hp.evaluate(width)} (llama.cpp's {named}): its {arch} graph asserts they are equal")
        _check_heads_asserted(arch, entry, hp, n_layer)
        _check_part_heads(arch, entry, hp)
        out: list[Rotation | None] = []
        split: list[tuple[int, str]] = []
        for i in range(n_layer):
            calls = _layer_calls(entry, hp, i, part)
            if len(calls) > 1 and len({c.part for c in calls}) == len(calls):  # (each part its own way)
                split.append((i, _parts_ways(arch, entry, i, calls)))
                out.append(None)
                continue
            if len(calls) > 1:
                return None, (f"llama.cpp's graph for {arch!r} rotates layer {i} in {len(calls)} ways (another "
                              "head's RoPE beside the attention's, or another mode): vkrope reads one"), ()
            call = calls.pop() if calls else None
            out.append(call if call is None else replace(call, q_scale=_q_scale(entry, hp, i)))
        _q_scale_asserts(entry, hp, n_layer)
        return tuple(out), "", tuple(split)
    except Unknown as exc:
        return None, f"llama.cpp's rope arguments for {arch!r}: {exc}", ()
    except KeyError as exc:  # (a field the program left unknown: HunyuanVL's alpha-scaled base)
        reason = hp.unknown.get(str(exc.args[0]), "not known") if hp is not None else "not known"
        return None, f"llama.cpp's {exc.args[0]} for {arch!r}: {reason}", ()


def _check_heads_asserted(arch: str, entry: dict, hp: Hparams, n_layer: int) -> None:
    """Refused where the graph asserts a layer's key and value head widths equal (the table's heads_asserted:
    GGML_ASSERT(n_embd_head == hparams.n_embd_head_k()), per layer where it names `il`) and they differ; one the
    table cannot evaluate (a condition of its own: DeepSeek-V2's OCR branch) is not checked."""
    for cond, left, right in entry.get("heads_asserted") or ():
        for i in range(n_layer) if "il" in cond + left + right else (0,):
            try:
                holds = not hp.evaluate(cond, il=i) or hp.evaluate(left, il=i) == hp.evaluate(right, il=i)
            except Unknown:
                continue
            if not holds:
                raise Refused(f"layer {i}'s key width {hp.evaluate('n_embd_head_k(il)', il=i)} and value width "
                              f"{hp.evaluate('n_embd_head_v(il)', il=i)} differ (attention.key_length and "
                              "value_length, their _swa forms on a sliding layer, else embedding_length / "
                              f"head_count): llama.cpp's {arch} graph asserts {left} == {right} and aborts")


def _layer_calls(entry: dict, hp: Hparams, i: int, part: str | None) -> set[Rotation]:
    """Layer `i`'s rope calls (of `part`, where named; one, where the parts turn alike: _one_way; one per part
    where they differ, no part named); Unknown where a guard cannot be decided and the calls differ."""
    calls: set[Rotation] = set()
    unsure = None
    for form in entry.get("rope_forms") or ():
        mine = part is None or form.get("part", "attention") == part
        try:
            if not hp.evaluate(form["guard"], il=i):
                continue
        except Unknown as exc:  # (a guard vkrope cannot decide: DeepSeek's is_mla(); fine if calls agree)
            if not mine:
                continue
            unsure = exc
        if mine:
            calls.add(rotation(form, lambda e: hp.evaluate(e, il=i), hp.evaluate("n_embd_head_k(il)", il=i)))
    calls = _one_way(calls, entry)  # (first: parts turning alike are one way, whether a guard is known or not)
    if unsure is not None and len(calls) > 1:
        raise unsure
    return calls


def _parts_ways(arch: str, entry: dict, i: int, calls: set[Rotation]) -> str:
    """Why layer `i`, whose parts rotate each its own way, needs part=: the ways, said."""
    words = {"norm": "adjacent pairs (2i, 2i + 1)", "neox": "rotate-half pairs (i, i + n / 2)"}
    ways = "; ".join(f"part={c.part!r}: {words.get(pairs_of(c, entry), pairs_of(c, entry))} on "
                     + (f"heads of their own, {c.dims} channels" if c.apart else
                        f"the first {c.dims} of {c.head}-channel heads")
                     for c in sorted(calls, key=lambda c: c.part))
    return (f"llama.cpp's graph for {arch!r} rotates layer {i} in {len(calls)} ways, one per part ({ways}): pass "
            "part= to say which the RoPE is for")


def _check_part_heads(arch: str, entry: dict, hp: Hparams) -> None:
    """Refused where a part with heads of its own (the table's `head`: DeepSeek-V3.2's indexer) has fewer channels
    than it rotates: its graph asserts n_rot <= their width before any layer, whichever part is read and
    whether or not a layer runs that part."""
    for form in entry.get("rope_forms") or ():
        if "head" in form and hp.evaluate(form["head"], il=0) < hp.evaluate(form["dims"], il=0):
            key = next((f"{arch}.{st[3]}" for st in entry.get("hparams") or () if st[1:3] == ["key", form["head"]]),
                       f"llama.cpp's {form['head']}")
            raise Refused(f"the {form['part']}'s heads are {hp.evaluate(form['head'], il=0)} channels wide ({key}), "
                          f"fewer than the {hp.evaluate(form['dims'], il=0)} it rotates (n_rot): its {arch} graph "
                          "asserts n_rot <= their width")


def _one_way(calls: set[Rotation], entry: dict) -> set[Rotation]:
    """A layer's calls, the attention's alone where every part's turns the same pairs by the same angles (GLM-DSA's
    indexer: its own heads, the attention's pairs and frequencies)."""
    if len(calls) < 2 or len({c.part for c in calls}) != len(calls):
        return calls
    ways = {(pairs_of(c, entry), replace(c, head=0, mode="", apart=False, part="")) for c in calls}
    attention = {c for c in calls if c.part == "attention"}
    return attention if len(ways) == 1 and attention else calls


class Refused(ValueError):
    """llama.cpp refuses the file, or aborts on it, for a reason its message says whole (not one key's)."""


# llm_graph_input_attn_temp::set_input's factor, as ModelRope.q_scale computes it (the table's script checks that
# llama.cpp's code is this formula; a table of another says so, and vkrope refuses what it would scale).
Q_SCALE_FORMULA = ("attn_scale_data[i] = std::log( std::floor((pos + f_attn_temp_offset) / n_attn_temp_floor_scale) "
                   "+ 1.0 ) * f_attn_temp_scale + 1.0;")


def _q_scale(entry: dict, hp: Hparams, il: int) -> tuple[float, int] | None:
    """The (scale, positions per step) of the attention temperature by which layer `il`'s graph multiplies Q
    after RoPE (Mistral 3, DeepSeek-V2, Mistral 4), None where it does not; a ValueError where llama.cpp
    refuses or aborts on it, or the factor is not one vkrope computes; Unknown where the table cannot say."""
    guard = entry.get("q_scale", "False")
    if guard == "unknown":
        raise Unknown("whether its graph scales Q by the attention temperature")
    if not hp.evaluate(guard, il=il):
        return None
    rule = table()["hparams"]["q_scale"]
    if rule["formula"] != Q_SCALE_FORMULA:
        raise Refused("llama.cpp's attention temperature in this table is not the formula vkrope computes "
                      f"({rule['formula']!r}); regenerate vkrope's table or read the config with from_hf")
    _check_asserts(rule, hp)
    scale, length, offset = (hp.fields[n] for n in rule["fields"])
    if offset != 0 or scale < 0:  # (Llama 4's NoPE layers take an offset; a negative temperature: no model's)
        raise Refused(f"attention temperature: vkrope reads a scale > 0 with no offset; got scale {scale}, "
                      f"offset {offset}")
    return float(np.float32(scale)), int(length)


def _check_asserts(rule: dict, hp: Hparams, why: str = "") -> None:
    """Refused where the attention temperature's input fails llama.cpp's GGML_ASSERTs in its set_input (`why`:
    what the message says besides; by default what the scale needs)."""
    why = why or ("the scale needs its positions per step, attention.temperature_length or the original context "
                  "length, as the architecture reads it")
    for expr in rule["asserts"]:  # (GGML_ASSERT in set_input: llama.cpp aborts at the first batch)
        if not hp.evaluate(expr):
            raise Refused(f"the attention temperature fails llama.cpp's assert {expr} (it aborts at the first "
                          f"batch; {why})")


def _q_scale_asserts(entry: dict, hp: Hparams, n_layer: int) -> None:
    """Refused where some layer, rotating or not, multiplies Q by the attention temperature and its input fails
    llama.cpp's asserts: the file aborts at the first batch whichever layer is asked for (a Llama 4 file whose
    sliding window is 0 leaves the temperature 0, and its last layer, without RoPE, scales Q by it)."""
    guard = entry.get("q_scale", "False")
    scaled = [] if guard in ("False", "unknown") else [i for i in range(n_layer) if hp.evaluate(guard, il=i)]
    if scaled:
        _check_asserts(table()["hparams"]["q_scale"], hp, f"its graph scales Q by it on layer {scaled[0]}, which "
                                                         "this file's keys leave it unset for")


def sections_of(kv: Mapping[str, Any], entry: dict) -> list[int]:
    """rope.dimension_sections as llama.cpp's get_key_or_arr reads it into 4 entries: an array of exactly 4
    integers, or one integer for all 4 ([0] * 4 without the key, or where the architecture's loader reads
    none); a ValueError naming the key otherwise."""
    if "rope.dimension_sections" not in (entry.get("key_types") or {}):
        return [0] * 4  # (not read: not decoded either, whatever it holds)
    given = kv.get("rope.dimension_sections")
    if given is None:
        return [0] * 4
    values = list(given) if isinstance(given, (list, tuple)) else [given] * 4
    if len(values) != 4 or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values):
        raise ValueError(f"rope.dimension_sections must be 4 non-negative integers, or one for all 4 (llama.cpp's "
                         f"get_key_or_arr); got {repr(given)[:80]}")
    return values


def _use_mrope(kv: Mapping[str, Any], entry: dict) -> bool:
    """llama_hparams::use_mrope() on the file's rope.dimension_sections."""
    hp = Hparams({"rope_sections": sections_of(kv, entry)}, table()["hparams"]["methods"])
    try:
        return bool(hp.evaluate("use_mrope()"))
    except Unknown:
        return False


def _layer_count(kv: Mapping[str, Any]) -> int:
    """block_count, checked as llama.cpp's loader does."""
    limit = table()["hparams"]["max_layers"]
    n_layer_all = kv.get("block_count")
    if n_layer_all is None:
        raise ValueError("block_count is missing (llama.cpp requires it)")
    if isinstance(n_layer_all, bool) or not isinstance(n_layer_all, int) or not 1 <= n_layer_all <= limit:
        raise ValueError(f"block_count must be an integer in [1, {limit}] (llama.cpp's LLAMA_MAX_LAYERS); got "
                         f"{n_layer_all!r}")
    return n_layer_all


def check_types(types: dict[str, str] | None, entry: dict, complete: bool = True) -> None:
    """The keys every load of the architecture reads (llama_model_base::load_hparams' and its
    load_arch_hparams' reads outside any condition), each of a GGUF type llama.cpp's loader takes for it:
    it refuses the file otherwise ("key ... has wrong type"); and, in a `complete` file (not a converted
    config, which holds only the keys vkrope's converter table writes), each key such a read requires."""
    for reads in (table()["hparams"]["key_types"], entry.get("key_types") or {}):
        for key, read in reads.items():
            if complete and types is not None and read.get("required") == "True" and key not in types:
                raise ValueError(f"{key} is missing: llama.cpp's loader requires it and refuses the file without it "
                                 "('key not found in model')")
            if read["always"] and read["accept"] != "unknown":
                check_type(key, types, reads)


def check_reads(hp: Hparams, kv: Mapping[str, Any], entry: dict, complete: bool = True) -> None:
    """After the program ran: each read under a condition that holds for this file (DeepSeek-V2's
    q_lora_rank where it is no lite model; one vkrope cannot decide is left unchecked), of a GGUF type
    llama.cpp takes, each get_key_or_arr array of the entries it takes ("wrong array length"), and, in a
    `complete` file, present where the read requires it."""
    for reads in (table()["hparams"]["key_types"], entry.get("key_types") or {}):
        for key, read in reads.items():
            if key not in kv:
                if complete:
                    _check_present(hp, key, read)
                continue
            try:
                if not read["always"] and (read["cond"] is None or not hp.evaluate(read["cond"])):
                    continue
                n = hp.evaluate(read["count"]) if "count" in read else None
            except Unknown:
                continue
            if not read["always"]:  # (check_types took the others before the program)
                check_type(key, hp.types, reads)
            if n is not None and isinstance(kv[key], (list, tuple)) and len(kv[key]) != n:
                raise ValueError(f"{key} holds {len(kv[key])} entries; llama.cpp's get_key_or_arr takes exactly {n} "
                                 "and refuses the file otherwise ('wrong array length')")


def _check_present(hp: Hparams, key: str, read: dict) -> None:
    """ValueError where a file lacks `key` and llama.cpp's loader reads it as required under a condition that
    holds for the file (one vkrope cannot decide is left unchecked)."""
    try:
        if hp.types is None or read.get("required") in (None, "False") or not hp.evaluate(read["required"]):
            return
    except Unknown:
        return
    raise ValueError(f"{key} is missing: llama.cpp's loader requires it for this file and refuses the file "
                     "without it ('key not found in model')")


def check_type(key: str, types: dict[str, str] | None, reads: dict[str, dict]) -> None:
    """ValueError where the file holds `key` with a GGUF type the read of it in `reads` (the table's
    key_types of a load_hparams function) does not take."""
    given = None if types is None else types.get(key)
    read = reads.get(key)
    if given is None or read is None:
        return  # (not in the file; or a read the program does not name, which it then runs as a statement)
    if read["accept"] == "unknown":
        raise ValueError(f"{key}: which GGUF types llama.cpp reads it as is not in vkrope's table, so its value "
                         "would be a guess")
    if given not in read["accept"]:
        raise ValueError(f"{key} is a GGUF {given}; llama.cpp reads it as {' or '.join(read['accept'])} and "
                         "refuses the file otherwise (its loader's 'wrong type')")


def _program(hp: Hparams, entry: dict, kv: Mapping[str, Any]) -> Iterator[tuple[str, list]]:
    """Run the table's load_arch_hparams statements of `entry` whose condition holds (an unknown name in one:
    Unknown), yielding each (kind, arguments) before it runs."""
    for cond, kind, *args in entry.get("hparams", ()):
        if hp.evaluate(cond):
            yield kind, args
            _run(hp, kind, args, kv)


def keys_read(arch: str, kv: Mapping[str, Any]) -> list[str]:
    """The file's keys llama.cpp's loader reads for `arch`: those of the statements whose condition holds on
    this file (not a branch it does not take; load_swa_pattern's array or period where it reads the file's),
    attention.head_count_kv (else attention.head_count, n_head_kv's default) where a statement that runs or
    the rotation condition reads n_head_kv (the hybrids' recurrent layers: those without kv heads), and
    attention.head_count where they read n_head. For a file whose plan ran (the program is run again, as plan
    ran it, stopping where it stopped)."""
    entry = table()["archs"][arch]
    hp = _start(kv, _layer_count(kv), None, entry)
    keys, ran = [], [entry["rotates"]]
    try:
        for kind, args in _program(hp, entry, kv):
            ran.append(f"{kind} {args}")
            if kind in ("key", "key_or_arr", "array") and args[1] in kv:
                keys.append(args[1])
            if kind == "pattern" and args[2] and "attention.sliding_window_pattern" in kv:
                keys.append("attention.sliding_window_pattern")  # (load_swa_pattern's)
    except Unknown:
        pass  # (plan stopped there too: the keys read before it are what can be named)
    said = " ".join(ran)
    kv_heads = "attention.head_count_kv" if "attention.head_count_kv" in kv else "attention.head_count"
    for field, key in (("n_head_kv", kv_heads), ("n_head(", "attention.head_count")):  # (n_head_kv defaults
        if field in said and key in kv:  # to n_head; load_hparams reads both: no statement of the table does)
            keys.append(key)
    return list(dict.fromkeys(keys))


def _start(kv: Mapping[str, Any], n_layer_all: int, types: dict[str, str] | None, entry: dict) -> Hparams:
    """llama_hparams after llama_model_base::load_hparams read what the plans use."""
    t = table()["hparams"]
    hp = Hparams({"n_layer_all": n_layer_all}, t["methods"], types, entry.get("key_types"))
    for name, value in t["fields"].items():
        try:
            hp.fields[name] = [hp.evaluate(value["fill"])] * n_layer_all if isinstance(value, dict) \
                else hp.evaluate(value)
        except Unknown:
            pass  # (a default that is an expression of what is not read: unknown when used)
    f = hp.fields
    nextn = kv.get("nextn_predict_layers", 0)
    if isinstance(nextn, bool) or not isinstance(nextn, int) or not 0 <= nextn <= n_layer_all:  # (its assert)
        raise ValueError(f"nextn_predict_layers must be an integer in [0, block_count {n_layer_all}]; got {nextn!r}")
    f["n_layer_nextn"] = nextn
    f["n_layer"] = n_layer_all - f["n_layer_nextn"]
    for name, key in (("n_head_arr", "attention.head_count"), ("n_head_kv_arr", "attention.head_count_kv")):
        v = kv.get(key, kv.get("attention.head_count"))
        if v is not None:  # (get_key_or_arr: one count for every layer, or exactly one per layer)
            v = list(v) if isinstance(v, (list, tuple)) else [v] * n_layer_all
            # (a bool is an int: get_arr reads a bool array's entries as 0 / 1)
            if len(v) != n_layer_all or any(not isinstance(h, int) or h < 0 for h in v):
                raise ValueError(f"{key} must be a count, or {n_layer_all} counts (block_count); got {repr(v)[:80]}")
            f[name] = v
    f["rope_sections"] = sections_of(kv, entry)
    f["arch"] = entry.get("enum")  # (the base program's conditions name it; a test's own entry has none)
    for cond, kind, *args in t["base"]:  # (llama_model_base::load_hparams' RoPE fields, each read type-checked)
        if hp.evaluate(cond):
            _run(hp, kind, args, kv, t["key_types"])
    return hp


def _per_layer(hp: Hparams, target: str, var: str, start: str, bound: str, expr: str) -> None:
    """A loader's loop setting entries start .. bound - 1 of a per-layer field, each `expr` at its layer `var`
    (Qwen3.5's recurrent layers, every interval-th one attention; Granite hybrid's where n_head_kv is 0). Outside
    them an entry keeps its default, None where that is unknown (the evaluator refuses to read it); the whole
    field is unknown where an entry the loop sets is."""
    f, n = hp.fields, hp.fields["n_layer_all"]
    try:
        first, upto = hp.evaluate(start), hp.evaluate(bound)
        if not isinstance(first, int) or not isinstance(upto, int) or not 0 <= first <= n or upto > n:
            raise Unknown(f"{target}'s loop runs over [{first!r}, {upto!r}), outside its {n} layers")
        old = f.get(target)
        values = list(old) if isinstance(old, list) and len(old) == n else [None] * n
        for i in range(first, upto):
            values[i] = hp.evaluate(expr, **{var: i})
        f[target] = values
        hp.unknown.pop(target, None)
    except Unknown as exc:
        f.pop(target, None)
        hp.unknown[target] = str(exc)


def _number(kv: Mapping[str, Any], key: str, default: Any) -> Any:
    """A scalar key as llama.cpp's get_key takes it (a number or a bool); ValueError for another type."""
    v = kv.get(key, default)
    if v is not None and not isinstance(v, (int, float)):
        raise ValueError(f"{key} must be a number; got {repr(v)[:80]}")
    if v is not None and not (math.isfinite(v) if isinstance(v, float) else abs(v) < 2 ** 63):  # (inf, nan, an int
        # past any field's range; a float key is FLOAT32, as its type was checked: a base of 1e30 runs in llama.cpp)
        raise ValueError(f"{key} must be a finite number{'' if isinstance(v, float) else ' below 2**63'}; got "
                         f"{repr(v)[:80]}")
    return v


def _text(kv: Mapping[str, Any], key: str) -> str:
    """A string key (llama.cpp's get_key into a std::string); ValueError for another type."""
    v = kv[key]
    if not isinstance(v, str):
        raise ValueError(f"{key} must be a string; got {repr(v)[:80]}")
    return v


def _why_not(hp: Hparams, cond: str, kv: Mapping[str, Any]) -> list[str]:
    """For a failed assert: each string-to-enum function of the table whose fallback the asserted field holds,
    with the names it takes and the file's key it was given (rope.scaling.type's: 'linear', 'yarn', ...)."""
    notes = []
    base = table()["hparams"]["base"]
    for name, lookup in table()["hparams"]["lookups"].items():
        if lookup["otherwise"] not in cond:
            continue
        calls = [s[3] for s in base if s[1] == "set" and s[3].startswith(f"{name}(")]  # (its argument: a local)
        keys = [s[3] for s in base if s[1] == "key" and any(c == f"{name}({s[2]})" for c in calls)]
        given = ", ".join(f"{k} = {kv[k]!r}" for k in keys if k in kv)
        notes.append(f"{given or 'the file'} is none of {', '.join(map(repr, lookup['table']))} ({name})")
    return notes


def _flags(given: Any, key: str, n: int) -> list:
    """A per-layer array of integers or bools (llama.cpp's get_arr into LLAMA_MAX_LAYERS entries: a longer
    array or a float one is refused), cut to the file's `n` layers."""
    limit = table()["hparams"]["max_layers"]
    if len(given) > limit or not all(isinstance(v, int) for v in given):
        raise ValueError(f"{key} must be an array of at most {limit} integers or bools (LLAMA_MAX_LAYERS); got "
                         f"{repr(given)[:80]}")
    return list(given)[:n]


def _run(hp: Hparams, kind: str, args: list, kv: Mapping[str, Any], reads: dict[str, dict] | None = None) -> None:
    """One statement of load_hparams (`reads`: the table's key_types of the base program) or of a
    load_arch_hparams (see scripts/gguf_arch_table.py's `statement`)."""
    f, n = hp.fields, hp.fields["n_layer_all"]
    reads = hp.key_types if reads is None else reads
    if kind in ("key", "array", "key_or_arr"):
        check_type(args[1], hp.types, reads)
    if kind == "key":
        target, key, found, required = args
        if key in kv:
            f[target] = _text(kv, key) if reads.get(key, {}).get("accept") == ["STRING"] else _number(kv, key, None)
        elif required:
            raise ValueError(f"{key} is missing (llama.cpp requires it; read from a config, its converter found "
                             "no value for it there)")
        if found:
            f[found] = key in kv
    elif kind == "array":  # (llama.cpp's get_arr: an array fills the first entries; anything else is none)
        target, key, required = args
        given = kv.get(key)
        if isinstance(given, (list, tuple)):
            f[target] = _flags(given, key, n) + list(f.get(target, [0] * n))[len(given):]
        elif required:
            raise ValueError(f"{key} must be an array (llama.cpp requires it); got {given!r}")
    elif kind == "key_or_arr":  # (llama.cpp's get_key_or_arr: exactly n entries, or one value n times)
        target, key, count, required, *found = args
        given, n_want = kv.get(key), hp.evaluate(count)
        if found and found[0]:  # (its bool result: whether the key was there, when the loader keeps it)
            f[found[0]] = given is not None
        if isinstance(given, (list, tuple)):
            if len(given) != n_want:
                raise ValueError(f"{key} must hold {n_want} entries (llama.cpp's get_key_or_arr); got {len(given)}")
            f[target] = [_number({key: v}, key, None) for v in given]
        elif given is not None:
            f[target] = [_number(kv, key, None)] * n_want
        elif required:
            raise ValueError(f"{key} is missing (llama.cpp requires it)")
    elif kind == "per_layer":
        _per_layer(hp, *args)
    elif kind in ("set", "local", "fill"):
        try:  # (a field set from what is not known is unknown only where a later condition reads it)
            value = hp.evaluate(args[1])
            f[args[0]] = [value] * n if kind == "fill" else value
            hp.unknown.pop(args[0], None)
        except Unknown as exc:
            f.pop(args[0], None)
            hp.unknown[args[0]] = str(exc)
    elif kind == "pattern":
        n_pattern, dense_first, from_key = args
        if from_key:  # load_swa_pattern: the file's array, or its period, before the code's
            key = "attention.sliding_window_pattern"
            check_type(key, hp.types, table()["hparams"]["swa_pattern_key_types"])
            given = kv.get(key)
            if isinstance(given, (list, tuple)):
                f["is_swa_impl"] = _flags(given, key, n) + [False] * max(0, n - len(given))
                return
            if given is not None:
                if isinstance(given, bool) or not isinstance(given, int) or given < 0:
                    raise ValueError(f"{key} must be an array of bools or a non-negative integer; got {given!r}")
                n_pattern = given
        rule = table()["hparams"]["swa_pattern_dense_first" if dense_first else "swa_pattern"]
        f["is_swa_impl"] = [bool(hp.evaluate(rule, n_pattern=n_pattern, il=i)) for i in range(n)]
    elif kind == "assert":  # (llama.cpp aborts on a file failing it)
        if not hp.evaluate(args[0]):
            raise Refused(f"llama.cpp aborts on this file: its GGML_ASSERT({args[0]}) fails"
                          + "".join(f"; {note}" for note in _why_not(hp, args[0], kv)))
    elif kind == "throw":  # (load_arch_hparams refuses the file)
        raise Refused(f"llama.cpp refuses this file: {args[0]!r} (its load_arch_hparams)")
    else:
        raise Unknown(f"a statement vkrope does not run: {args[0] if args else kind}")

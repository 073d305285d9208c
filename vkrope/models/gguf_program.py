"""llama.cpp's hparams loader as vkrope/data/gguf_archs.json states it
(scripts/gguf_arch_table.py reads it from llama.cpp's source): `Hparams`,
llama_hparams' fields for one file with the table's expressions evaluated
over them (a whitelist of syntax: no attribute access, no builtins; a name
neither the file nor the table gives raises `Unknown`), and `run`, one
statement of load_hparams or of an architecture's load_arch_hparams run
on the file's metadata, each key type-checked as llama.cpp's get_key does.
gguf_layers.py runs the programs and plans each layer from the result.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from . import data
from .gguf_context import Unknown


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """vkrope/data/gguf_archs.json."""
    return data.load("gguf_archs.json")  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=1)
def factor_tensors() -> tuple[str, ...]:
    """llama.cpp's RoPE factor tensors' names: those any architecture's `factor_tensors` in the table names
    (rope_freqs.weight, longrope's rope_factors_short / _long.weight)."""
    return tuple(sorted({name for arch in table()["archs"].values() for name in arch.get("factor_tensors", {})}))


def _c_div(a: Any, b: Any) -> Any:
    """C's `/`: integers truncate toward zero (by zero: Python's ZeroDivisionError, which the evaluator names with
    its expression: C's crash), anything else divides as IEEE floats do (by zero: inf or NaN, no warning)."""
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) and not isinstance(b, bool):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if b == 0 and not isinstance(a, np.generic) and not isinstance(b, np.generic):  # (Python's floats raise)
            return float(np.float64(a) / np.float64(b))
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


class Refused(ValueError):
    """llama.cpp refuses the file, or aborts on it, for a reason its message says whole (not one key's)."""


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


def run(hp: Hparams, kind: str, args: list, kv: Mapping[str, Any], reads: dict[str, dict] | None = None) -> None:
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

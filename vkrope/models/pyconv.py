"""A small interpreter for the part of llama.cpp's converter that turns a
config into GGUF metadata (the methods scripts/gguf_convert_table.py copied
into vkrope/data/gguf_convert.json), run on concrete values.

It runs a whitelist of Python: statements (assignments, if / for / while,
try over the converter's own errors, return, yield, assert, raise), the
expressions those methods use, a few builtins, and the methods of dicts,
lists and strings that only read or build values. Anything else (imports,
files, torch beyond building a tensor from a list, an attribute the
interpreter was not given) raises `Unknown`, and what depends on it is
refused. An error the converter itself would raise (a missing key, an
assert) raises `Raised`.
"""

from __future__ import annotations

import ast
import builtins
import functools
import math
import operator
from typing import Any, Callable


class Unknown(Exception):
    """The converter's code does something the interpreter does not run."""


class Raised(Exception):
    """The converter's code raised (it refuses this config): the exception's type name and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class _Return(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


class Opaque:
    """A value the interpreter does not hold (a path, a tensor map): any use of it is Unknown."""

    def __init__(self, what: str) -> None:
        self.what = what


class EnumValue:
    """A member of one of gguf's enums."""

    def __init__(self, enum: str, name: str, value: Any) -> None:
        self.enum, self.name, self.value = enum, name, value

    def __repr__(self) -> str:
        return f"{self.enum}.{self.name}"


class Namespace:
    """A module or an enum: attributes by name."""

    def __init__(self, name: str, attrs: dict[str, Any]) -> None:
        self.name, self.attrs = name, attrs


class Builtin:
    """A Python callable the interpreter may call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn


class Function:
    """A function or method of the converter: its syntax tree and the class that defines it."""

    def __init__(self, node: ast.FunctionDef, owner: str | None) -> None:
        self.node, self.owner = node, owner


class Bound:
    """A Function with its first argument (self, or for super(), the instance)."""

    def __init__(self, fn: Function, obj: Any) -> None:
        self.fn, self.obj = fn, obj


def _safe_next(it: Any, *default: Any) -> Any:
    for v in it:
        return v
    if default:
        return default[0]
    raise Raised("StopIteration", "next() of an empty sequence")


_CALLABLES: dict[str, Callable[..., Any]] = {
    "int": int, "float": float, "str": str, "bool": bool, "len": len, "min": min, "max": max, "abs": abs,
    "round": round, "sum": sum, "any": any, "all": all, "sorted": sorted, "list": list, "dict": dict,
    "tuple": tuple, "set": set, "range": range, "enumerate": enumerate, "zip": zip, "next": _safe_next,
    "iter": iter, "isinstance": isinstance, "reversed": reversed}
BUILTINS: dict[str, Any] = {name: Builtin(fn) for name, fn in _CALLABLES.items()}
BUILTINS.update({"None": None, "True": True, "False": False,
                 "math": Namespace("math", {k: (Builtin(getattr(math, k)) if callable(getattr(math, k))
                                                else getattr(math, k))
                                            for k in ("log", "log2", "sqrt", "ceil", "floor", "pi", "isclose",
                                                      "exp", "inf")})})
for _t in (int, float, str, bool, list, dict, tuple, set):
    BUILTINS[_t.__name__].type = _t  # (isinstance's second argument)

# methods of values that only read them or build new ones (and list / dict updates on the converter's own copies)
METHODS = {dict: {"get", "keys", "values", "items", "copy", "pop", "setdefault", "update"},
           list: {"append", "extend", "index", "count", "copy", "pop", "insert"},
           tuple: {"index", "count"},
           str: {"lower", "upper", "startswith", "endswith", "split", "strip", "replace", "join",
                 "removeprefix", "removesuffix"}}
BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
          ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
PY_ERRORS = (KeyError, IndexError, ValueError, TypeError, ZeroDivisionError, AttributeError, OverflowError)


@functools.lru_cache(maxsize=4096)
def parse_function(source: str) -> ast.FunctionDef:
    """A method's source (indented as in its class) parsed once."""
    import textwrap  # noqa: PLC0415  (only here)
    node = ast.parse(textwrap.dedent(source)).body[0]
    if not isinstance(node, ast.FunctionDef):
        raise Unknown("not a function")
    return node


def pure(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a whitelisted Python function: Opaque arguments are Unknown, Python errors the converter's."""
    if any(isinstance(a, Opaque) for a in (*args, *kwargs.values())):
        raise Unknown(f"{getattr(fn, '__name__', fn)} of a value vkrope does not hold")
    if _too_large(fn, args):
        raise Unknown(f"{getattr(fn, '__name__', fn)} of values too large for a config's arithmetic")
    try:
        return fn(*args, **kwargs)
    except PY_ERRORS as exc:
        raise Raised(type(exc).__name__, str(exc)[:200]) from None


def _too_large(fn: Callable[..., Any], args: tuple) -> bool:
    """An integer power, repeated sequence or range a config could make exhaust memory or time."""
    ints = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    if any(i.bit_length() > 4096 for i in ints):  # (repeated squaring)
        return True
    if fn is operator.pow:
        return len(ints) == 2 and abs(ints[1]) > 4096
    if fn in (operator.mul, operator.imul):
        seqs = [len(a) for a in args if isinstance(a, (str, list, tuple))]
        return bool(seqs) and any(abs(i) * max(seqs[0], 1) > LIMIT for i in ints)
    if fn in (operator.add, operator.iadd):
        return sum(len(a) for a in args if isinstance(a, (str, list, tuple))) > LIMIT
    if fn is range and len(ints) == len(args) and args:
        return len(range(*args)) > LIMIT
    return False


LIMIT = 1_000_000  # elements of a sequence a config's arithmetic may build
MAX_DEPTH = 64  # nesting of a config's dicts and lists


def plain(value: Any, depth: int = 0) -> Any:
    """A config as plain JSON-like values, copied (the converter mutates its hparams): mappings as dicts,
    tuples and lists as lists, numpy scalars as Python numbers. ValueError past MAX_DEPTH levels."""
    if depth > MAX_DEPTH:
        raise ValueError(f"config: nests deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {k: plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "shape", None) == ():
        return value.item()  # (a numpy scalar)
    return value


def _caught(kind: str, handler: str) -> bool:
    """Whether `except handler` catches an exception of builtin type `kind` (LookupError catches KeyError)."""
    k, h = getattr(builtins, kind, None), getattr(builtins, handler, None)
    if isinstance(k, type) and isinstance(h, type) and issubclass(k, BaseException):
        return issubclass(k, h)
    return kind == handler


class Expressions:
    """The expressions of the converter's methods, over values the interpreter holds."""

    world: Any
    globals: dict[str, Any]
    keys_read: set  # every str key the code looked up in a dict
    steps: int
    MAX_STEPS = 200_000  # statements, loop turns and element comparisons: past it, Unknown (never a hang)
    run: Callable[[Function, list, dict], Any]  # (Interpreter's: the statements)

    def charge(self, n: int = 1) -> None:
        """Count work against MAX_STEPS."""
        self.steps += n
        if self.steps > self.MAX_STEPS:
            raise Unknown("the converter's code runs too long on this config")

    def read(self, key: Any) -> Any:
        """Note a dict key the code looks up."""
        if isinstance(key, str):
            self.keys_read.add(key)
        return key

    def expr(self, n: ast.expr, local: dict) -> Any:  # noqa: PLR0911, PLR0912  (one case per node kind)
        """The value of an expression."""
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return self.name(n.id, local)
        if isinstance(n, ast.Attribute):
            return self.attr(self.expr(n.value, local), n.attr)
        if isinstance(n, ast.Call):
            return self.call_node(n, local)
        if isinstance(n, ast.BinOp) and type(n.op) in BINARY:
            return pure(BINARY[type(n.op)], self.expr(n.left, local), self.expr(n.right, local))
        if isinstance(n, ast.UnaryOp) and not isinstance(n.op, ast.Invert):
            v = self.expr(n.operand, local)
            if isinstance(n.op, ast.Not):
                return not self.truth(v)
            return pure(operator.neg if isinstance(n.op, ast.USub) else operator.pos, v)
        if isinstance(n, ast.BoolOp):
            v = None
            for part in n.values:
                v = self.expr(part, local)
                if self.truth(v) == isinstance(n.op, ast.Or):
                    return v
            return v
        if isinstance(n, ast.Compare):
            return self.compare(n, local)
        if isinstance(n, ast.IfExp):
            return self.expr(n.body if self.truth(self.expr(n.test, local)) else n.orelse, local)
        if isinstance(n, ast.Subscript):
            return pure(operator.getitem, self.expr(n.value, local), self.read(self.expr(n.slice, local)))
        if isinstance(n, ast.Slice):
            return slice(*(None if p is None else self.expr(p, local) for p in (n.lower, n.upper, n.step)))
        if isinstance(n, (ast.List, ast.Tuple, ast.Set)):
            items: list[Any] = []
            for e in n.elts:
                if isinstance(e, ast.Starred):
                    pure(items.extend, self.expr(e.value, local))
                else:
                    items.append(self.expr(e, local))
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(n)](items)
        if isinstance(n, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(n.keys, n.values):
                if k is None:
                    pure(out.update, self.expr(v, local))
                else:
                    out[self.expr(k, local)] = self.expr(v, local)
            return out
        if isinstance(n, ast.NamedExpr) and "__comprehension__" not in local:
            local[n.target.id] = self.expr(n.value, local)
            return local[n.target.id]
        if isinstance(n, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return self.comprehension(n, local)
        if isinstance(n, ast.JoinedStr):
            return self.fstring(n, local)
        raise Unknown(f"line {getattr(n, 'lineno', '?')}: {type(n).__name__} {ast.unparse(n)[:60]!r}")

    def compare(self, n: ast.Compare, local: dict) -> bool:
        """A chain of comparisons; `in` on a sequence costs its length in steps."""
        left = self.expr(n.left, local)
        for op, right_node in zip(n.ops, n.comparators):
            right = self.expr(right_node, local)
            if isinstance(op, (ast.In, ast.NotIn)):
                if isinstance(right, dict):
                    self.read(left)
                elif isinstance(right, (list, tuple, str)):
                    self.charge(len(right) // 16)
            if not self.truth(pure(COMPARE[type(op)], left, right)):
                return False
            left = right
        return True

    def fstring(self, n: ast.JoinedStr, local: dict) -> str:
        """An f-string of plain values (a conversion or format spec is Unknown: it is only in messages)."""
        out = []
        for v in n.values:
            if isinstance(v, ast.FormattedValue):
                if v.conversion != -1 or v.format_spec is not None:
                    raise Unknown("an f-string conversion or format spec")
                value = self.expr(v.value, local)
                if not isinstance(value, (str, int, float, bool, type(None))):
                    raise Unknown(f"formatting {type(value).__name__}")
                out.append(str(value))
            else:
                out.append(str(getattr(v, "value", "")))
        return "".join(out)

    def name(self, name: str, local: dict) -> Any:
        """A local, a global of the converter, or a whitelisted builtin."""
        for scope in (local, self.globals, BUILTINS):
            if name in scope:
                return scope[name]
        raise Unknown(f"the name {name!r}")

    def attr(self, obj: Any, name: str) -> Any:
        """obj.name, for the values the interpreter holds; the world's objects ask the world."""
        if isinstance(obj, Namespace):
            if name not in obj.attrs:
                raise Unknown(f"{obj.name}.{name}")
            return obj.attrs[name]
        if isinstance(obj, EnumValue) and name in ("name", "value"):
            return getattr(obj, name)
        for kind, names in METHODS.items():
            if type(obj) is kind:
                if name not in names:
                    raise Unknown(f"{kind.__name__}.{name}")
                return Builtin(getattr(obj, name))
        if isinstance(obj, (Opaque, EnumValue, int, float, bool, type(None))):
            raise Unknown(f"attribute {name!r} of {getattr(obj, 'what', type(obj).__name__)}")
        return self.world.attr(obj, name)

    def call_node(self, n: ast.Call, local: dict) -> Any:
        """A call: the logger's arguments are evaluated (an error in them is the converter's) and what
        vkrope cannot evaluate there ignored; the call itself does nothing."""
        if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) and n.func.value.id == "logger":
            for a in n.args:
                try:
                    self.expr(a.value if isinstance(a, ast.Starred) else a, local)
                except Unknown:
                    pass
            return None
        if isinstance(n.func, ast.Name) and n.func.id == "super" and not n.args:
            return self.world.super_of(local.get("__class__"), local.get("self"))
        fn = self.expr(n.func, local)
        args: list = []
        for a in n.args:
            if isinstance(a, ast.Starred):
                pure(args.extend, self.expr(a.value, local))
            else:
                args.append(self.expr(a, local))
        kwargs: dict = {}
        for k in n.keywords:
            if k.arg is None:
                pure(kwargs.update, self.expr(k.value, local))
            else:
                kwargs[k.arg] = self.expr(k.value, local)
        return self.call(fn, args, kwargs)

    def call(self, fn: Any, args: list, kwargs: dict) -> Any:
        """Call a builtin, a converter function, or one of the world's callables."""
        if isinstance(fn, Builtin):
            if fn.fn is isinstance:
                types = args[1] if isinstance(args[1], tuple) else (args[1],)
                if not all(isinstance(t, Builtin) and hasattr(t, "type") for t in types):
                    raise Unknown("isinstance of a type vkrope does not hold")
                return isinstance(args[0], tuple(t.type for t in types))
            if isinstance(getattr(fn.fn, "__self__", None), dict) and args:
                self.read(args[0])  # (get, pop, setdefault)
            sized = [a for a in (*args, getattr(fn.fn, "__self__", None)) if isinstance(a, (list, tuple, str, dict))]
            self.charge(sum(len(a) for a in sized) // 16)  # (max, sorted, join, index: work over a whole list)
            return pure(fn.fn, *args, **kwargs)
        if isinstance(fn, Function):
            return self.run(fn, args, kwargs)
        if isinstance(fn, Bound):
            return self.run(fn.fn, [fn.obj, *args], kwargs)
        return self.world.call(fn, args, kwargs)

    def comprehension(self, n: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, local: dict) -> Any:
        """A list, set, dict or generator comprehension, evaluated eagerly in its own scope (each turn
        counted; a walrus inside, which binds outside in Python, is Unknown)."""
        out: list = []
        scope = dict(local)
        scope["__comprehension__"] = True

        def loop(i: int) -> None:
            if i == len(n.generators):
                out.append((self.expr(n.key, scope), self.expr(n.value, scope)) if isinstance(n, ast.DictComp)
                           else self.expr(n.elt, scope))
                return
            g = n.generators[i]
            for item in pure(list, self.expr(g.iter, scope)):
                self.charge()
                self.assign(g.target, item, scope)
                if all(self.truth(self.expr(c, scope)) for c in g.ifs):
                    loop(i + 1)
        loop(0)
        if isinstance(n, ast.DictComp):
            return dict(out)
        return set(out) if isinstance(n, ast.SetComp) else out

    def assign(self, t: ast.expr, value: Any, local: dict) -> None:
        """Bind a target (a name, self.x, d[k], or a tuple of them)."""
        if isinstance(t, ast.Name):
            local[t.id] = value
        elif isinstance(t, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in t.elts):
            values = pure(list, value)
            if len(values) != len(t.elts):
                raise Raised("ValueError", f"cannot unpack {len(values)} values into {len(t.elts)}")
            for sub, v in zip(t.elts, values):
                self.assign(sub, v, local)
        elif isinstance(t, ast.Attribute):
            self.world.set_attr(self.expr(t.value, local), t.attr, value)
        elif isinstance(t, ast.Subscript):
            target = self.expr(t.value, local)
            if not isinstance(target, (dict, list)):
                raise Unknown(f"item assignment to {type(target).__name__}")
            pure(operator.setitem, target, self.expr(t.slice, local), value)
        else:
            raise Unknown(f"assignment to {ast.unparse(t)}")

    @staticmethod
    def truth(v: Any) -> bool:
        """bool(v) for values the interpreter holds."""
        if isinstance(v, (Opaque, EnumValue)):
            raise Unknown(f"the truth of {getattr(v, 'what', v)}")
        return bool(v)


class Interpreter(Expressions):
    """Runs converter functions; `world` gives the attributes and calls of its objects (instances, classes,
    the writer): world.attr(obj, name), world.set_attr(obj, name, value), world.call(fn, args, kwargs)."""

    def __init__(self, world: Any, globals_: dict[str, Any]) -> None:
        self.world, self.globals, self.steps = world, globals_, 0
        self.keys_read = set()

    def run(self, fn: Function, args: list, kwargs: dict) -> Any:  # type: ignore[override]
        """Call `fn`; a generator function's yields come back as a list."""
        node = fn.node
        local = self._bind(node, args, kwargs)
        local["__class__"] = fn.owner
        gen = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node))
        if gen:
            local["__yields__"] = []
        try:
            self.block(node.body, local)
        except _Return as r:
            return local["__yields__"] if gen else r.value
        return local["__yields__"] if gen else None

    def _bind(self, node: ast.FunctionDef, args: list, kwargs: dict) -> dict:
        a = node.args
        params = [p.arg for p in a.posonlyargs + a.args]
        local: dict[str, Any] = dict(zip(params, args))
        extra = args[len(params):]
        if extra and a.vararg is None:
            raise Raised("TypeError", f"{node.name}() given {len(args)} positional arguments")
        if a.vararg is not None:
            local[a.vararg.arg] = tuple(extra)
        kw_names = params + [k.arg for k in a.kwonlyargs]
        rest = {}
        for k, v in kwargs.items():
            if k in local:
                raise Raised("TypeError", f"{node.name}() got multiple values for argument {k!r}")
            if k in kw_names:
                local[k] = v
            else:
                rest[k] = v
        if rest and a.kwarg is None:
            raise Raised("TypeError", f"{node.name}() given keywords {sorted(rest)}")
        if a.kwarg is not None:
            local[a.kwarg.arg] = rest
        defaults = dict(zip(params[len(params) - len(a.defaults):], a.defaults))
        defaults.update({k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        for name in kw_names:
            if name not in local:
                if name not in defaults:
                    raise Raised("TypeError", f"{node.name}() missing argument {name!r}")
                local[name] = self.expr(defaults[name], {})
        return local

    def block(self, body: list[ast.stmt], local: dict) -> None:
        """Run statements."""
        for s in body:
            self.charge()
            self.stmt(s, local)

    def stmt(self, s: ast.stmt, local: dict) -> None:  # noqa: PLR0912  (one case per statement kind)
        """Run one statement of the whitelist; any other is Unknown."""
        if isinstance(s, ast.Expr):
            if isinstance(s.value, ast.Constant):
                return  # (a docstring)
            if isinstance(s.value, (ast.Yield, ast.YieldFrom)):
                self._yield(s.value, local)
                return
            self.expr(s.value, local)
        elif isinstance(s, ast.Assign):
            value = self.expr(s.value, local)
            for t in s.targets:
                self.assign(t, value, local)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.assign(s.target, self.expr(s.value, local), local)
        elif isinstance(s, ast.AugAssign):
            self._augmented(s, local)
        elif isinstance(s, ast.If):
            self.block(s.body if self.truth(self.expr(s.test, local)) else s.orelse, local)
        elif isinstance(s, (ast.For, ast.While)):
            self._loop(s, local)
        elif isinstance(s, ast.Return):
            raise _Return(None if s.value is None else self.expr(s.value, local))
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.Break):
            raise _Break
        elif isinstance(s, ast.Continue):
            raise _Continue
        elif isinstance(s, ast.Assert):
            if not self.truth(self.expr(s.test, local)):
                raise Raised("AssertionError", ast.unparse(s.test))
        elif isinstance(s, ast.Raise):
            self._raise(s, local)
        elif isinstance(s, ast.Try):
            self._try(s, local)
        elif isinstance(s, ast.Delete) and all(isinstance(t, ast.Subscript) for t in s.targets):
            for t in s.targets:
                assert isinstance(t, ast.Subscript)  # (checked above; for the type checker)
                pure(operator.delitem, self.expr(t.value, local), self.expr(t.slice, local))
        else:
            raise Unknown(f"line {getattr(s, 'lineno', '?')}: {type(s).__name__} {ast.unparse(s)[:60]!r}")

    def _augmented(self, s: ast.AugAssign, local: dict) -> None:
        """x op= v with the target evaluated once, lists extended in place (as Python does)."""
        ops = {ast.Add: operator.iadd, ast.Sub: operator.isub, ast.Mult: operator.imul,
               ast.Div: operator.itruediv, ast.FloorDiv: operator.ifloordiv, ast.Mod: operator.imod}
        if type(s.op) not in ops:
            raise Unknown(ast.unparse(s))
        t = s.target
        if isinstance(t, ast.Name):
            local[t.id] = pure(ops[type(s.op)], self.name(t.id, local), self.expr(s.value, local))
        elif isinstance(t, ast.Attribute):
            obj = self.expr(t.value, local)
            self.world.set_attr(obj, t.attr, pure(ops[type(s.op)], self.attr(obj, t.attr), self.expr(s.value, local)))
        elif isinstance(t, ast.Subscript):
            container, key = self.expr(t.value, local), self.read(self.expr(t.slice, local))
            if not isinstance(container, (dict, list)):
                raise Unknown(f"item assignment to {type(container).__name__}")
            old = pure(operator.getitem, container, key)
            pure(operator.setitem, container, key, pure(ops[type(s.op)], old, self.expr(s.value, local)))
        else:
            raise Unknown(ast.unparse(s))

    def _loop(self, s: ast.For | ast.While, local: dict) -> None:
        """for / while, with else (run when no break ends the loop); each turn counted."""
        items = iter(pure(list, self.expr(s.iter, local)) if isinstance(s, ast.For) else ())
        while True:
            if isinstance(s, ast.For):
                item = next(items, _END)
                if item is _END:
                    break
                self.assign(s.target, item, local)
            elif not self.truth(self.expr(s.test, local)):
                break
            self.charge()
            try:
                self.block(s.body, local)
            except _Break:
                return
            except _Continue:
                continue
        self.block(s.orelse, local)

    def _raise(self, s: ast.Raise, local: dict) -> None:
        if s.exc is None:
            raise local.get("__exc__") or Raised("RuntimeError", "no active exception to re-raise")
        kind = ast.unparse(s.exc.func if isinstance(s.exc, ast.Call) else s.exc)
        raise Raised(kind.rsplit(".", 1)[-1], ast.unparse(s.exc)[:200])

    def _try(self, s: ast.Try, local: dict) -> None:
        try:
            self.block(s.body, local)
        except Raised as exc:
            for h in s.handlers:
                names = [] if h.type is None else [ast.unparse(e).rsplit(".", 1)[-1] for e in
                                                   (h.type.elts if isinstance(h.type, ast.Tuple) else [h.type])]
                if not names or any(_caught(exc.kind, name) for name in names):
                    if h.name:
                        raise Unknown("an exception bound by `except ... as`")
                    local["__exc__"] = exc
                    self.block(h.body, local)
                    break
            else:
                raise
        else:
            self.block(s.orelse, local)
        finally:
            self.block(s.finalbody, local)

    def _yield(self, y: ast.Yield | ast.YieldFrom, local: dict) -> None:
        if "__yields__" not in local:
            raise Unknown("yield outside a generator")
        value = self.expr(y.value, local) if y.value is not None else None
        if isinstance(y, ast.YieldFrom):
            pure(local["__yields__"].extend, value)
        else:
            local["__yields__"].append(value)


_END = object()

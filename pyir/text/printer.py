"""The Relay-like text printer.

::

    def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {
      %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);
      nn.relu(%0)
    }

Every non-atomic node is bound once (``%N = ...``) in the innermost scope that
needs it; names are deterministic (numbered in print order, variables by their
name hint, uniquified).  Scalars and small tensors print inline; larger
constants print as ``meta[Constant][i]`` and (by default) in a trailing
``#[metadata]`` section that :func:`pyir.parse` reads back; ``str()`` elides it.

The printer is iterative: scopes (function bodies, if-branches) are generators
driven by an explicit stack, so a 10^6-deep chain prints fine.

Type aliases (pyir's own extension; Relay has none).  Types are hash-consed DAGs
but text is a tree: after type inference, ``d`` nested functions carry return
types nested ``d``, ``d - 1``, ... deep, O(d^2) characters.  So a type whose text
is longer than :data:`ALIAS_MIN_CHARS` and that is printed more than once (counting
its occurrences inside other printed types) is declared once, before the text::

    type $t0 = fn () -> fn () -> ... -> Tensor[(2), float32];
    type $t1 = fn () -> $t0;

    def @main(%x: Tensor[(2), float32]) -> fn () -> $t1 { ... }

``$`` is used by nothing else (``%`` locals, ``@`` globals), and a sigil after
``type`` cannot be mistaken for a Relay ADT definition (``type List[A] {...}``).
Aliases are purely textual: the parser builds the same interned types.  Programs
without large repeated types print exactly as without aliases.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from collections.abc import Generator
from typing import Any

import numpy as np

from ..errors import InternalError, TypeCheckError
from ..ir import hooks
from ..ir.adt import (
    Clause,
    Constructor,
    GlobalTypeVar,
    Match,
    Pattern,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    TypeCall,
    TypeData,
    TypeVar,
    type_vars_of,
)
from ..ir.dims import dim_str
from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.kinds import info
from ..ir.node import Attrs, Node, _typed_equal, cached_type
from ..ir.traverse import ScopeTree
from ..ir.types import FuncType, TensorType, TupleType, Type, dtype_kind
from ..op.registry import REQUIRED

__all__ = ["astext", "type_str", "type_repr", "short_repr", "format_attr_value", "is_plain_name",
           "quote_name", "INLINE_LIMIT", "MAX_INDENT"]

INLINE_LIMIT = 4  # constants with at most this many elements print inline
MAX_INDENT = 32  # nesting levels indented; deeper blocks stay at this indentation (linear text)
ALIAS_MIN_CHARS = 80  # a type gets an alias only if its text is longer and it is printed twice or more
ALIAS_PREFIX = "t"  # aliases print as ``$t0``, ``$t1``, ...

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CANONICAL_NAN = 0x7FF8000000000000
_PLACEHOLDER = re.compile("\x00([0-9]+)\x00")


def is_plain_name(name: str) -> bool:
    """Whether a ``%``/``@`` name prints unquoted: an identifier (dots allowed) whose last
    dotted part is not a number (``%a.0`` is element 0 of ``%a``)."""
    if _IDENT.match(name) is None:
        return False
    i = name.rfind(".")
    return i < 0 or not name[i + 1:].isdigit()


def quote_name(sigil: str, name: str) -> str:
    """``sigil`` and ``name``, the name quoted (JSON escapes) unless :func:`is_plain_name`."""
    return sigil + name if is_plain_name(name) else sigil + json.dumps(name)


def _key_text(key: str) -> str:
    """An attribute key: bare if an identifier, else quoted (``"a b"=1``)."""
    return key if _KEY.match(key) else json.dumps(key)


def _float_text(v: float) -> str:
    """Text of a float that reads back to the same bits (NaN payloads as ``0x<16 hex digits>``)."""
    if v == v:
        return repr(v)  # exact for every non-NaN float, -0.0 and +-inf included
    bits = struct.unpack("<Q", struct.pack("<d", v))[0]
    if bits == _CANONICAL_NAN:
        return "nan"
    if bits == _CANONICAL_NAN | 1 << 63:
        return "-nan"
    return f"0x{bits:016x}"
_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16", "int32": "", "int64": "i64",
           "int16": "i16", "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32",
           "uint64": "u64"}


def type_str(t: Type | None) -> str:
    """Text of a type: ``Tensor[(1, 3), float32]``, ``(T1, T2)``, ``fn (T1) -> T2``.

    Iterative (pieces in order, joined once): linear in the size of the type at any depth.
    """
    if t is None:
        return "?"
    return _type_text(t, None)


def _type_text(t: Type, names: dict[Type, str] | None, scalar: bool = False) -> str:
    """Text of ``t``; its proper subtypes found in ``names`` print as their alias; ``scalar``:
    a 0-d tensor type prints as its dtype (TVM's form: ``float32``)."""
    out: list[str] = []
    emit = out.append
    stack: list[Any] = [t]
    pop, push = stack.pop, stack.append
    while stack:
        x = pop()
        if type(x) is str:
            emit(x)
            continue
        if names is not None and x is not t:
            alias = names.get(x)
            if alias is not None:
                emit(alias)
                continue
        k = type(x)
        if k is TensorType:
            shape = x.shape
            if scalar and not shape:
                emit(x.dtype)
                continue
            emit("Tensor[(%s), %s]" % (", ".join([str(d) if type(d) is int else dim_str(d, text=True)
                                                  for d in shape]), x.dtype))
        elif k is TupleType:
            fs = x.fields
            push(",)" if len(fs) == 1 else ")")
            for i in range(len(fs) - 1, -1, -1):
                push(fs[i])
                if i:
                    push(", ")
            emit("(")
        elif k is FuncType:
            push(x.ret_type)
            push(") -> ")
            args = x.arg_types
            for i in range(len(args) - 1, -1, -1):
                push(args[i])
                if i:
                    push(", ")
            emit("fn (")
        elif k is TypeVar:
            emit("_" if x.name_hint.startswith("?") else x.name_hint)
        elif k is TypeCall:
            push("]")
            args = x.args
            for i in range(len(args) - 1, -1, -1):
                push(args[i])
                if i:
                    push(", ")
            emit(x.func.name_hint + "[")
        elif k is RefType:
            push(")")
            push(x.value)
            emit("ref(")
        elif k is GlobalTypeVar:
            emit(x.name_hint)
        else:
            emit(repr(x))
    return "".join(out)


def type_data_text(td: TypeData, type_text: Any = type_str, tvm: bool = False) -> str:
    """``type List[A] {\n  Cons(A, List[A]),\n  Nil,\n}`` (TVM's layout); a definition without
    constructors is ``extern type Storage`` (an opaque type; TVM's parser reads both forms), in
    TVM's form ``type Storage {\n}`` (TVM's printer has no ``extern``)."""
    head = f"type {td.header.name_hint}" + (f"[{', '.join(td.type_vars)}]" if td.type_vars else "")
    if not td.constructors:
        return head + " {\n}" if tvm else "extern " + head
    lines = [head + " {"]
    for c in td.constructors:
        fields = f"({', '.join(type_text(t) for t in c.inputs)})" if c.inputs else ""
        lines.append(f"  {c.name_hint}{fields},")
    lines.append("}")
    return "\n".join(lines)


def pattern_text(p: Pattern, var_names: list[str]) -> str:
    """Text of a pattern, its variables named (in order) from ``var_names``; iterative."""
    out: list[str] = []
    names = iter(var_names)
    stack: list[Any] = [p]
    while stack:
        x = stack.pop()
        if type(x) is str:
            out.append(x)
            continue
        k = type(x)
        if k is PatternVar:
            out.append(next(names))
        elif k is PatternConstructor:
            out.append(x.constructor.name_hint)
            if x.patterns:
                out.append("(")
                stack.append(")")
                for i in range(len(x.patterns) - 1, -1, -1):
                    stack.append(x.patterns[i])
                    if i:
                        stack.append(", ")
        elif k is PatternTuple:
            out.append("(")
            stack.append(")")
            for i in range(len(x.patterns) - 1, -1, -1):
                stack.append(x.patterns[i])
                if i:
                    stack.append(", ")
        else:
            out.append("_")
    return "".join(out)


def _has_tvars(t: Type, memo: dict[Type, bool]) -> bool:
    """Whether ``t`` holds a type variable: bottom-up over the types not in ``memo`` (iterative,
    each type node once per printer, so deeply nested function types cost their size)."""
    if type(t) is TensorType:
        return False
    r = memo.get(t)
    if r is not None:
        return r
    stack: list[Any] = [t]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        if type(x) is TypeVar:
            memo[x] = True
            stack.pop()
            continue
        kids = [c for c in x.children() if type(c) is not TensorType]
        todo = [c for c in kids if c not in memo]
        if todo:
            stack.extend(todo)
            continue
        memo[x] = any(memo[c] for c in kids)
        stack.pop()
    return memo[t]


def function_type_params(f: Function, outer: set[str] | frozenset[str] = frozenset(),
                         memo: dict[Type, bool] | None = None) -> list[str]:
    """The type parameters of ``f``: the type variables of its annotations (parameters, then the
    return type) in order of first appearance, but those of ``outer`` (an enclosing function's)
    and the unknowns of inference."""
    out: list[str] = []
    if memo is None:
        memo = {}
    for t in [p.type_annotation for p in f.params] + [f.ret_type]:
        if t is None or not _has_tvars(t, memo):
            continue
        for v in type_vars_of(t):
            n = v.name_hint
            if n not in out and n not in outer and not n.startswith("?"):
                out.append(n)
    return out


def _subtypes(t: Type) -> tuple[Type, ...]:
    """The types directly inside ``t``: its children (from its kind's declaration)."""
    return t.children()  # type: ignore[return-value]


def _type_size(t: Type, memo: dict[Type, int]) -> int:
    """Length of ``type_str(t)``, capped at ``ALIAS_MIN_CHARS + 1``; iterative, memoized by node."""
    cap = ALIAS_MIN_CHARS + 1
    n = memo.get(t)
    if n is not None:
        return n
    stack: list[Any] = [t]
    while stack:
        x = stack[-1]
        if x in memo:
            stack.pop()
            continue
        subs = _subtypes(x)
        missing = [c for c in subs if c not in memo]
        if missing:
            stack.extend(missing)
            continue
        stack.pop()
        k = type(x)
        if k is TupleType:
            n = 2 if not subs else sum(memo[c] for c in subs) + 2 * len(subs) + (1 if len(subs) == 1 else 0)
        elif k is FuncType:
            n = 9 + sum(memo[c] for c in subs) + 2 * max(len(subs) - 2, 0)
        else:
            n = len(_type_text(x, None))
        memo[x] = min(n, cap)
    return memo[t]


class _TypeAliases:
    """Aliases for the large types a text prints more than once (see :func:`astext`).

    Types are hash-consed DAGs, but their text is a tree: a type nested d deep in
    the annotations of d nested functions would print in O(d^2).  Each type whose
    text is longer than :data:`ALIAS_MIN_CHARS` is printed as a placeholder first;
    at the end, the large types used more than once (as a root occurrence or inside
    another large type, which itself prints once) get an alias ``$t<N>``, declared
    ``type $t<N> = <type>;`` before the text, children first.  Small programs get no
    alias and print exactly as without this mechanism.
    """

    def __init__(self) -> None:
        self.sizes: dict[Type, int] = {}
        self.small: dict[Type, str] = {}
        self.index: dict[Type, int] = {}
        self.roots: list[Type] = []
        self.count: dict[Type, int] = {}

    def text(self, t: Type) -> str:
        """The text of ``t`` at one of its occurrences (a placeholder when it is large)."""
        s = self.small.get(t)
        if s is not None:
            return s
        if _type_size(t, self.sizes) <= ALIAS_MIN_CHARS:
            s = self.small[t] = _type_text(t, None)
            return s
        i = self.index.get(t)
        if i is None:
            i = self.index[t] = len(self.roots)
            self.roots.append(t)
            self.count[t] = 0
        self.count[t] += 1
        return f"\x00{i}\x00"

    def resolve(self, text: str) -> str:
        """``text`` with its placeholders replaced, the alias declarations before it."""
        if not self.roots:
            return text
        sizes, uses = self.sizes, dict(self.count)
        seen = set(self.roots)
        stack = list(self.roots)
        while stack:  # uses of each large type: root occurrences + occurrences in large types
            for c in _subtypes(stack.pop()):
                if sizes[c] > ALIAS_MIN_CHARS:
                    uses[c] = uses.get(c, 0) + 1
                    if c not in seen:
                        seen.add(c)
                        stack.append(c)
        names: dict[Type, str] = {}
        order: list[Type] = []
        done: set[Type] = set()
        for r in self.roots:  # post-order: an alias is declared after the ones it uses
            work: list[Any] = [r]
            while work:
                x = work.pop()
                if type(x) is tuple:
                    x = x[0]
                    if uses[x] > 1:
                        names[x] = f"${ALIAS_PREFIX}{len(order)}"
                        order.append(x)
                    continue
                if x in done:
                    continue
                done.add(x)
                work.append((x,))
                for c in reversed(_subtypes(x)):
                    if sizes[c] > ALIAS_MIN_CHARS and c not in done:
                        work.append(c)
        texts = [names.get(r) or _type_text(r, names) for r in self.roots]
        body = _PLACEHOLDER.sub(lambda m: texts[int(m.group(1))], text)
        if not order:
            return body
        decls = [f"type {names[x]} = {_type_text(x, names)};\n" for x in order]
        decls.append("\n" if body else "")
        return "".join(decls) + body


_REPR_PLANS: dict[type, tuple[str, tuple[tuple[str, int], ...]]] = {}  # kind -> (head, fields)
_MANY, _NODE, _SCALAR = 0, 1, 2


def _repr_plan(k: type) -> tuple[str, tuple[tuple[str, int], ...]]:
    ki = info(k)
    plan = (ki.name + "(", tuple((f.name, _MANY if f.many else _NODE if f.node else _SCALAR)
                                 for f in ki.fields))
    _REPR_PLANS[k] = plan
    return plan


def type_repr(t: Type) -> str:
    """``repr`` of a type (``TupleType([TensorType((2,), 'float32')])``); iterative.

    Derived from the kinds' declarations: ``Kind(field, ...)`` with the fields in constructor
    order, a tuple of types as a list, a scalar by its ``repr``.
    """
    out: list[str] = []
    emit = out.append
    stack: list[Any] = [t]
    pop, push = stack.pop, stack.append
    plans = _REPR_PLANS
    while stack:
        x = pop()
        if type(x) is str:
            emit(x)
            continue
        k = type(x)
        if k is TensorType:  # the common leaf, without the generic loop
            emit(f"TensorType({x.shape!r}, {x.dtype!r})")
            continue
        head, fields = plans.get(k) or _repr_plan(k)
        emit(head)
        push(")")
        for j in range(len(fields) - 1, -1, -1):  # pushed last field first
            name, how = fields[j]
            v = getattr(x, name)
            if how == _MANY:
                push("]")
                for i in range(len(v) - 1, -1, -1):
                    push(v[i])
                    if i:
                        push(", ")
                push("[")
            elif how == _NODE and v is not None:
                push(v)
            else:
                push(repr(v))
            if j:
                push(", ")
    return "".join(out)


def format_scalar(v: Any, dtype: str) -> str:
    """Exact text of one element of a ``dtype`` tensor."""
    if dtype == "bool":
        return "True" if v else "False"
    if dtype_kind(dtype) == "f":
        s = str(np.dtype(dtype).type(v))
        if "." not in s and "e" not in s and "n" not in s:
            s += ".0"
        return s
    return str(int(v))


def format_attr_value(v: Any, type_text: Any = type_str, tvm: bool = False) -> str:
    """Text of an attribute value (typed: ``1``, ``1.0``, ``True`` differ; floats bit-exact).

    Types in the value print with ``type_text`` (the printer passes its alias-aware one).
    ``tvm``: TVM's spelling of floats, ``%g`` and ``f`` (``alpha=0.1f``; not bit-exact).
    """
    out: list[str] = []
    emit = out.append
    stack: list[Any] = [v]
    while stack:
        x = stack.pop()
        t = type(x)
        if t is _Raw:
            emit(x.text)
        elif x is None:
            emit("None")
        elif t is bool:
            emit("True" if x else "False")
        elif t is int:
            emit(str(x))
        elif t is float:
            emit(_tvm_float(x) + "f" if tvm and x - x == 0 else _float_text(x))  # (inf, nan: exact)
        elif t is str:
            emit(json.dumps(x))
        elif t is tuple:
            emit("[")
            stack.append(_CLOSE)
            for i in range(len(x) - 1, -1, -1):
                stack.append(x[i])
                if i:
                    stack.append(_SEP)
        elif isinstance(x, Type):
            emit(type_text(x))
        else:
            emit(repr(x))
    return "".join(out)


class _Raw:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_CLOSE, _SEP = _Raw("]"), _Raw(", ")
_META_REF = re.compile(r"meta\[VirtualDevice\]\[\d+\]")  # TVM's reference to a device of its metadata


def _attr_items_text(items: Any, type_text: Any = type_str, tvm: bool = False) -> list[str]:
    return [f"{_key_text(k)}={format_attr_value(v, type_text, tvm)}" for k, v in items]


def _tvm_float(v: float) -> str:
    """A float as TVM's printer writes it (C++ ``ostream <<``: ``%g``, 6 significant digits)."""
    return "%g" % v


_TVM_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16", "int32": "", "int64": "i64",
               "int16": "i16"}


def _tvm_inline_const(c: Constant) -> str | None:
    """TVM's inline form of a constant: the 0-d ones of simple dtypes (``1f``, ``2i64``,
    ``True``); None: it goes to the metadata section."""
    data = c.data
    if data.ndim:
        return None
    dt = data.dtype.name
    if dt == "bool":
        return "True" if data.item() else "False"
    suffix = _TVM_SUFFIX.get(dt)
    if suffix is None:
        return None
    v = data.item()
    if dt[0] == "f":
        if not np.isfinite(v):
            return None
        return _tvm_float(float(v)) + suffix
    return f"{int(v)}{suffix}"


def _inline_const(c: Constant, limit: int) -> str | None:
    data = c.data
    dt = data.dtype.name
    if dt not in _SUFFIX and dt != "bool":
        return None
    if data.size > limit or (data.ndim and 0 in data.shape):
        return None
    if dtype_kind(dt) == "f" and not np.all(np.isfinite(data)):
        return None  # keep NaN payloads and infinities exact through metadata
    if data.ndim == 0:
        if dt == "bool":
            return "True" if data.item() else "False"
        return format_scalar(data.item(), dt) + _SUFFIX[dt]

    def nest(a: np.ndarray) -> str:
        if a.ndim == 0:
            return format_scalar(a.item(), dt)
        return "[" + ", ".join(nest(x) for x in a) + "]"

    return f"tensor({nest(data)}, {dt})"


def _op_attr_text(call: Call, type_text: Any = type_str, tvm: bool = False) -> list[str]:
    attrs = call.attrs
    if not attrs:
        return []
    if type(call.op) is not Op:
        return _attr_items_text(attrs.items(), type_text, tvm)
    specs = call.op.op_def._specs
    out = []
    items: Any = attrs.items()
    if tvm:  # TVM prints the fields in their declaration order (the operator's schema order)
        order = {k: i for i, k in enumerate(specs)}
        items = sorted(items, key=lambda kv: order.get(kv[0], len(order)))
    # split: in both forms an int is a number of sections and a list is indices, as Relay's
    # SplitAttrs (the parser reads ``[2]`` as index 2); TVM's form has no ``by_sections``
    split = call.op.name == "split"
    for k, v in items:
        spec = specs.get(k)
        if split:
            if k == "indices_or_sections" and attrs["by_sections"] and len(v) == 1:
                v = v[0]
            elif tvm and k == "by_sections":  # the int / list says it (more indices: moot)
                continue
        if spec is not None and spec.default is not REQUIRED and _typed_equal(spec.default, v):
            continue
        if tvm and type(v) is str and _META_REF.fullmatch(v):  # a device the parser kept as text
            v = _Raw(v)
        out.append(f"{_key_text(k)}={format_attr_value(v, type_text, tvm)}")
    return out


_ATOMS = (Var, GlobalVar, Op, Constant, Constructor)
_ATOMS_SET = frozenset(_ATOMS)
_USE, _ROOT, _CONT = 0, 1, 2


def _relations(n: Node) -> tuple[tuple[Node, int], ...]:
    """(child, how it is used): as a value, as the root of a nested scope, or as the
    continuation of a let chain."""
    if type(n) is If:
        return ((n.cond, _USE), (n.true_branch, _ROOT), (n.false_branch, _ROOT))
    if type(n) is Function:
        return ((n.body, _ROOT),)
    if type(n) is Let:
        return ((n.value, _USE), (n.body, _CONT))
    if type(n) is Match:  # like an If: each clause body is a nested scope
        return ((n.data, _USE), *[(c.rhs.body, _ROOT) for c in n.clauses])
    return tuple((c, _USE) for c in n.children())


class _Plan:
    """Where each node of a body is printed: the innermost scope containing all its uses.

    Scopes are the body, if-branches, function bodies and let blocks.  Each
    non-atomic node is printed once, in its scope, before its first use there
    and after the let lines it depends on; so sharing across branches and nested
    functions survives the text.  Iterative, linear in the body's size.
    """

    def __init__(self, root: Node, top_down: bool = False) -> None:
        # 1. The order: post-order, with a marker where each let's value is complete (with
        # ``top_down``, a call's callee expression after its arguments: a fused function is
        # printed just before its first call, not above the arguments' whole upstream program).  A node
        # popped again after its expansion is its own post-order marker: a copy of it pushed
        # by another parent cannot sit above that marker (it would be its own descendant).
        pos: dict[Node, int] = {}
        self.pos = pos
        self.letpos: dict[Node, int] = {}
        stream: list[Node] = []
        seen: set[Node] = set()
        stack: list[Any] = [root]
        pop, push, extend, add = stack.pop, stack.append, stack.extend, seen.add
        atoms = _ATOMS_SET
        has_let = False
        while stack:
            it = pop()
            k = type(it)
            if k in atoms:
                continue
            if it in seen:
                if it not in pos:
                    pos[it] = len(stream)
                    stream.append(it)
                continue
            if k is tuple:  # (let,): its value is complete
                self.letpos[it[0]] = len(stream)
                continue
            add(it)
            push(it)
            if k is Call:
                if top_down and type(it.op) is not Op:
                    push(it.op)
                extend(reversed(it.args))
                if not top_down and type(it.op) is not Op:
                    push(it.op)
            elif k is Let:
                has_let = True
                push(it.body)
                push((it,))
                push(it.value)
            elif k is Match:  # its clauses and their functions print as part of it
                extend(reversed([it.data, *[c.rhs.body for c in it.clauses]]))
            else:
                extend(reversed(it.children()))
        # 2. Lets printed as a line of a scope's let chain, unless claimed twice or used as values.
        claims: dict[Node, int] = {root: 1} if type(root) is Let else {}
        values: set[Node] = set()
        if has_let:  # only lets are claimed or used as let values
            for n in reversed(stream):
                for c, how in _relations(n):
                    if type(c) is Let:
                        if how == _USE:
                            values.add(c)
                        else:
                            claims[c] = claims.get(c, 0) + 1

        def chained(c: Node) -> bool:
            return type(c) is Let and claims.get(c) == 1 and c not in values

        # 3. Homes: the lowest common ancestor of the scopes that use each node.
        tree = ScopeTree()
        lca, new = tree.lca, tree.new
        home: dict[Node, int] = {}
        uses: dict[Node, int] = {}
        self.spine: dict[int, list[Any]] = {}
        self.tail: dict[int, Node] = {}
        self.inner: dict[Node, tuple[int, ...]] = {}
        link: dict[Node, int] = {}  # let -> the scope whose chain it continues
        home_get = home.get

        def use(c: Node, s: int) -> None:
            if type(c) in atoms:
                return
            h = home_get(c)
            if h is None:
                home[c] = s
                uses[c] = 1
            else:
                if h != s:
                    home[c] = lca(h, s)
                uses[c] += 1

        def continue_chain(s: int, c: Node) -> None:
            if chained(c):
                link[c] = s
                self.spine[s].append(c)
            else:
                self.tail[s] = c
                use(c, s)

        def open_scope(s: int, r: Node) -> None:
            self.spine[s] = []
            continue_chain(s, r)

        open_scope(0, root)
        for n in reversed(stream):
            k = type(n)
            if k is Call or k is Tuple or k is TupleGetItem:
                h = home_get(n)
                if h is None:
                    continue
                if k is Call:
                    cs = n.args if type(n.op) is Op else n.children()  # type: ignore[attr-defined]
                else:
                    cs = n.children()
                for c in cs:  # ``use(c, h)``, inlined
                    if type(c) in atoms:
                        continue
                    g = home_get(c)
                    if g is None:
                        home[c] = h
                        uses[c] = 1
                    else:
                        if g != h:
                            home[c] = lca(g, h)
                        uses[c] += 1
                continue
            s = link.get(n) if has_let else None
            if s is not None:  # a line of a let chain (only lets are linked)
                use(n.value, s)  # type: ignore[attr-defined]
                continue_chain(s, n.body)  # type: ignore[attr-defined]
                continue
            h = home_get(n)
            if h is None:
                continue
            if k is If:
                t, f = new(h), new(h)
                self.inner[n] = (t, f)
                use(n.cond, h)  # type: ignore[attr-defined]
                open_scope(t, n.true_branch)  # type: ignore[attr-defined]
                open_scope(f, n.false_branch)  # type: ignore[attr-defined]
            elif k is Function:
                b = new(h)
                self.inner[n] = (b,)
                open_scope(b, n.body)  # type: ignore[attr-defined]
            elif k is Let:  # a let block: the head of its own chain
                b = new(h)
                self.inner[n] = (b,)
                self.spine[b] = [n]
                use(n.value, b)  # type: ignore[attr-defined]
                continue_chain(b, n.body)  # type: ignore[attr-defined]
            elif k is Match:
                scopes = tuple([new(h) for _ in n.clauses])  # type: ignore[attr-defined]
                self.inner[n] = scopes
                use(n.data, h)  # type: ignore[attr-defined]
                for sc, c in zip(scopes, n.clauses):  # type: ignore[attr-defined]
                    open_scope(sc, c.rhs.body)
            else:
                for c in n.children():
                    use(c, h)
        # 4. What each scope binds, in order; single-use let values and tails print inline.
        homed: dict[int, list[Node]] = {}
        self.homed = homed
        if len(self.spine) == 1:  # one scope: everything homed is homed there
            homed[0] = [n for n in stream if n in home]
        else:
            for n in stream:
                h = home_get(n)
                if h is not None:
                    lst = homed.get(h)
                    if lst is None:
                        homed[h] = [n]
                    else:
                        lst.append(n)
        self.inline: set[Node] = set()
        for s, lets in self.spine.items():
            for let in lets:
                v = let.value
                if home.get(v) == s and uses[v] == 1:
                    self.inline.add(v)
            last = self.tail[s]
            if home.get(last) == s and uses[last] == 1:
                self.inline.add(last)


class _Printer:
    def __init__(self, inline_limit: int, top_down: bool = False, show_types: bool = False,
                 names_out: list[Any] | None = None, *, tvm: bool = False) -> None:
        self.inline_limit = inline_limit
        self.top_down = top_down
        self.show_types = show_types
        self.names_out = names_out  # receives (node, function, label, line) for each printed binding
        self.function = ""  # the definition being printed
        self.owner: list[str] = []  # labels of the enclosing scopes (a tail is "<owner>.return")
        self.tvm = tvm
        self.lines: list[str] = []
        self.names: dict[Node, str] = {}
        self.used: set[str] = set()
        self.meta: list[Constant] = []
        self.meta_index: dict[Constant, int] = {}
        self.counter = 0
        self.const_text: dict[Node, str] = {}
        self.next_suffix: dict[str, int] = {}
        self.types = _TypeAliases()
        self.type_text = self.types.text
        if tvm:  # TVM's form: scalar types as their dtype, no type aliases (TVM has none)
            memo: dict[Type, str] = {}

            def tvm_type(t: Type) -> str:
                r = memo.get(t)
                if r is None:
                    r = memo[t] = _type_text(t, None, True)
                return r
            self.type_text = tvm_type
        self.attr_text: dict[tuple[Node, Attrs], list[str]] = {}  # (callee, attrs) -> printed attributes
        self.tv_memo: dict[Type, bool] = {}  # type -> whether it holds a type variable
        self.outer_tvars: set[str] = set()  # the type parameters of the definition being printed

    # -- names ----------------------------------------------------------------------
    def var_name(self, v: Var) -> str:
        s = self.names.get(v)
        if s is not None:
            return s
        base = v.name_hint
        name, i = base, self.next_suffix.get(base, 0)
        if i:
            name = f"{base}_{i}"
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.next_suffix[base] = i + 1
        self.used.add(name)
        s = self.names[v] = quote_name("%", name)
        return s

    def atom(self, n: Node) -> str | None:
        k = type(n)
        if k is Var:
            return self.var_name(n)  # type: ignore[arg-type]
        if k is GlobalVar:
            return quote_name("@", n.name_hint)  # type: ignore[attr-defined]
        if k is Op:
            return n.name  # type: ignore[attr-defined]
        if k is Constructor:
            return n.name_hint  # type: ignore[attr-defined]
        if k is Constant:
            s = self.const_text.get(n)
            if s is not None:
                return s
            s = (_tvm_inline_const(n) if self.tvm  # type: ignore[arg-type]
                 else _inline_const(n, self.inline_limit))  # type: ignore[arg-type]
            if s is not None:
                self.const_text[n] = s
                return s
            i = self.meta_index.get(n)  # type: ignore[call-overload]
            if i is None:
                i = self.meta_index[n] = len(self.meta)  # type: ignore[index]
                self.meta.append(n)  # type: ignore[arg-type]
            return f"meta[relay.Constant][{i}]" if self.tvm else f"meta[Constant][{i}]"
        return None

    def ref(self, n: Node) -> str:
        s = self.names.get(n)
        if s is not None:
            return s
        s = self.atom(n)
        if s is None:  # pragma: no cover - scopes bind every non-atom first
            raise InternalError(f"the printer met the unbound node {short_repr(n)}")
        return s

    def param(self, v: Var) -> str:
        s = self.var_name(v)
        if v.type_annotation is not None:
            s += ": " + self.type_text(v.type_annotation)
        return s

    # -- expressions whose children are bound -------------------------------------------
    def flat(self, n: Node) -> str:
        k = type(n)
        if k is Call:
            op = n.op  # type: ignore[attr-defined]
            callee = op.name if type(op) is Op else self.ref(op)
            names_get = self.names.get
            parts = []
            for a in n.args:  # type: ignore[attr-defined]
                s = names_get(a)
                parts.append(s if s is not None else self.ref(a))
            attrs = n.attrs  # type: ignore[attr-defined]
            if attrs:
                key = (op, attrs)
                at = self.attr_text.get(key)
                if at is None:
                    at = _op_attr_text(n, self.type_text, self.tvm)  # type: ignore[arg-type]
                    if not any("\x00" in x for x in at):  # no alias placeholder (those are counted)
                        self.attr_text[key] = at
                parts += at
            if not parts and type(op) is Constructor and not op.inputs:
                return callee  # a nullary constructor: ``Nil`` (TVM's text)
            return f"{callee}({', '.join(parts)})"
        if k is Tuple:
            fs = [self.ref(f) for f in n.fields]  # type: ignore[attr-defined]
            return "(" + ", ".join(fs) + ("," if len(fs) == 1 else "") + ")"
        if k is TupleGetItem:
            return f"{self.ref(n.tuple_value)}.{n.index}"  # type: ignore[attr-defined]
        if k in _ATOMS_SET:
            return self.ref(n)
        if k is RefCreate:
            return f"ref({self.ref(n.value)})"  # type: ignore[attr-defined]
        if k is RefRead:
            return f"ref_read({self.ref(n.ref)})"  # type: ignore[attr-defined]
        if k is RefWrite:
            return f"ref_write({self.ref(n.ref)}, {self.ref(n.value)})"  # type: ignore[attr-defined]
        return self.generic(n)

    def generic(self, n: Node) -> str:
        """A kind without syntax of its own, from its declaration: ``Kind(%0, [%1, %2], index=3)``
        (children positionally, other fields by name).  Printing only: the parser does not
        read it (a kind's syntax is written in the printer and the parser)."""
        ki = info(type(n))
        parts = []
        for f in ki.fields:
            v = getattr(n, f.name)
            if f in ki.children:
                parts.append("[" + ", ".join(map(self.ref, v)) + "]" if f.many
                             else "None" if v is None else self.ref(v))
            elif isinstance(v, Type):
                parts.append(f"{f.name}={self.type_text(v)}")
            elif type(v) is Attrs:
                parts.append(f"{f.name}={{{', '.join(_attr_items_text(v.items(), self.type_text))}}}")
            else:
                parts.append(f"{f.name}={format_attr_value(v, self.type_text)}")
        return f"{ki.name}({', '.join(parts)})"

    # -- scopes -------------------------------------------------------------------------------
    def scope(self, plan: _Plan, s: int, indent: str) -> Generator[Any, None, None]:
        """Print scope ``s`` of ``plan``: its bindings, its let lines, its tail."""
        items = plan.homed.get(s, ())
        pos, inline, inner = plan.pos, plan.inline, plan.inner
        lines_append, names, flat = self.lines.append, self.names, self.flat
        n_items = len(items)
        i = 0
        for let in plan.spine.get(s, ()):
            lp = plan.letpos[let]
            while i < n_items and pos[items[i]] < lp:
                if items[i] not in inline:
                    yield from self.emit(plan, items[i], indent)
                i += 1
            value = let.value
            head = f"let {self.param(let.var)} = "
            if self.names_out is not None:
                vn = self.names[let.var]
                self.names_out.append((let.var, self.function, vn, len(self.lines)))
                if value in inline:
                    self.names_out.append((value, self.function, vn, len(self.lines)))
            if value in inline:
                yield from self.line(plan, value, indent, head, ";")
            else:
                lines_append(f"{indent}{head}{self.ref(value)};")
        for j in range(i, n_items):
            n = items[j]
            if n in inline:
                continue
            if n in inner:  # a block: it opens nested scopes
                yield from self.emit(plan, n, indent)
            else:  # ``self.emit``, inlined for the common case
                name = f"%{self.counter}"
                self.counter += 1
                if self.names_out is not None:
                    self.names_out.append((n, self.function, name, len(self.lines)))
                if self.show_types:
                    lines_append(f"{indent}{name} = {flat(n)}{self.type_comment(n)};")
                else:
                    lines_append(f"{indent}{name} = {flat(n)};")
                names[n] = name
        tail = plan.tail[s]
        if tail in inline:
            if self.names_out is not None:
                label = (self.owner[-1] if self.owner else "") + ".return"
                self.names_out.append((tail, self.function, label, len(self.lines)))
            yield from self.line(plan, tail, indent, "", "")
        else:
            lines_append(indent + self.ref(tail))

    def emit(self, plan: _Plan, n: Node, indent: str) -> Generator[Any, None, None]:
        """Bind ``n`` to the next ``%N``.

        TVM's form numbers a block (``fn``, ``if``, ``match``, a let block) after the bindings of
        its nested scopes, as TVM's printer does (it allocates the temporary once the value is
        printed): ``%2 = fn (...) { %0 = ...; %1 = ...; ... }``."""
        k = type(n)
        if self.tvm and (k is Function or k is If or k is Match or k is Let):
            at = len(self.lines)
            yield from self.line(plan, n, indent, "%? = ", ";")
            name = f"%{self.counter}"
            self.counter += 1
            head = self.lines[at]
            cut = len(indent)
            self.lines[at] = f"{head[:cut]}{name} = {head[cut + 5:]}"
            if self.names_out is not None:
                self.names_out.append((n, self.function, name, at))
            self.names[n] = name
            return
        name = f"%{self.counter}"
        self.counter += 1
        if self.names_out is not None:
            self.names_out.append((n, self.function, name, len(self.lines)))
        yield from self.line(plan, n, indent, f"{name} = ", ";")
        self.names[n] = name

    def line(self, plan: _Plan, n: Node, indent: str, prefix: str, suffix: str) -> Generator[Any, None, None]:
        """Print ``n`` (its children already named) after ``prefix``; blocks open nested scopes."""
        inner = indent + "  " if len(indent) < 2 * MAX_INDENT else indent
        k = type(n)
        if k is not If and k is not Function and k is not Let and k is not Match:
            ty = self.type_comment(n) if self.show_types else ""
            self.lines.append(f"{indent}{prefix}{self.flat(n)}{ty}{suffix}")
            return
        owner = self.owner
        if self.names_out is not None:  # the label of the nested scopes: "%3", "%x" or "<owner>.return"
            owner.append(prefix[:-3].removeprefix("let ") if prefix else
                         (owner[-1] if owner else "") + ".return")
        if k is If:
            t, f = plan.inner[n]
            self.lines.append(f"{indent}{prefix}if ({self.ref(n.cond)}) {{")  # type: ignore[attr-defined]
            if self.names_out is not None:
                owner[-1] += ".then"
            yield self.scope(plan, t, inner)
            self.lines.append(f"{indent}}} else {{")
            if self.names_out is not None:
                owner[-1] = owner[-1][:-5] + ".else"
            yield self.scope(plan, f, inner)
            self.lines.append(f"{indent}}}{suffix}")
        elif k is Function:
            self.lines.append(indent + self.fn_header(n, prefix + "fn "))  # type: ignore[arg-type]
            yield self.scope(plan, plan.inner[n][0], inner)
            self.lines.append(f"{indent}}}{suffix}")
        elif k is Match:  # TVM's layout: ``match (%x) {`` then ``pattern => {...},`` lines
            q = "?" if not n.complete else ""  # type: ignore[attr-defined]
            self.lines.append(f"{indent}{prefix}match{q} ({self.ref(n.data)}) {{")  # type: ignore[attr-defined]
            arm = inner + "  " if len(inner) < 2 * MAX_INDENT else inner
            for sc, c in zip(plan.inner[n], n.clauses):  # type: ignore[attr-defined]
                pat = pattern_text(c.lhs, [self.param(v) for v in c.rhs.params])
                self.lines.append(f"{inner}{pat} => {{")
                yield self.scope(plan, sc, arm)
                self.lines.append(f"{inner}}},")
            self.lines.append(f"{indent}}}{suffix}")
        else:  # a let block used as a value (TVM's form: in parentheses, as TVM's printer writes it)
            self.lines.append(f"{indent}{prefix}{'(' if self.tvm else '{'}")
            yield self.scope(plan, plan.inner[n][0], inner)
            self.lines.append(f"{indent}{')' if self.tvm else '}'}{suffix}")
        if self.names_out is not None:
            owner.pop()

    def type_comment(self, n: Node) -> str:
        """`` /* ty=T */`` for a node whose type is known (``show_types``), else ""."""
        t = cached_type(n)
        return "" if t is None else f" /* ty={self.type_text(t)} */"

    def fn_header(self, f: Function, head: str) -> str:
        parts = [self.param(p) for p in f.params]
        if self.names_out is not None:
            line = len(self.lines)
            self.names_out.extend((p, self.function, self.names[p], line) for p in f.params)
        parts += _attr_items_text(f.attrs.items(), self.type_text, self.tvm)
        ret = f" -> {self.type_text(f.ret_type)}" if f.ret_type is not None else ""
        tps = function_type_params(f, self.outer_tvars, self.tv_memo)
        if tps:  # ``def @id[A](%x: A)``, ``fn [A](...)``: TVM's type parameters
            head = (head if head.endswith("fn ") else head.rstrip()) + f"[{', '.join(tps)}]"
        return f"{head}({', '.join(parts)}){ret} {{"

    def definition(self, name: str, f: Function) -> Generator[Any, None, None]:
        if not self.tvm:  # TVM's printer numbers on across the definitions of a module
            self.counter = 0
        self.function = name
        if self.names_out is not None:
            self.names_out.append((f, name, quote_name("@", name), len(self.lines)))
            self.owner = [quote_name("@", name)]
        self.outer_tvars = set()
        header = self.fn_header(f, "def " + quote_name("@", name))
        self.outer_tvars = set(function_type_params(f, memo=self.tv_memo))
        self.lines.append(header)
        yield self.scope(_Plan(f.body, self.top_down), 0, "  ")
        self.lines.append("}")

    def run(self, gen: Generator[Any, None, None]) -> None:
        stack = [gen]
        while stack:
            try:
                item = next(stack[-1])
            except StopIteration:
                stack.pop()
                continue
            stack.append(item)

    def metadata(self) -> list[str]:
        if self.tvm:
            from .tvm_meta import dump
            return ["#[metadata]", dump(self.meta)]
        out = ["#[metadata]"]
        for i, c in enumerate(self.meta):
            shape = "(%s)" % ", ".join(str(d) for d in c.data.shape)
            blob = base64.b64encode(c.data.tobytes()).decode()
            out.append(f'meta[Constant][{i}] = {c.data.dtype.name} {shape} "{blob}"')
        return out


def astext(obj: Any, *, show_meta_data: bool = True, inline_limit: int = INLINE_LIMIT, order: str = "post",
           show_types: bool = False, names_out: list[Any] | None = None, tvm: bool = False) -> str:
    """Relay-like text of a module, function, expression, type or ``Attrs``.

    An ``Attrs`` prints as ``{axis=1, keepdims=True}``; anything else that is not a
    pyir module, expression or type raises :class:`~pyir.errors.TypeCheckError`.
    Large types printed more than once are declared first as ``type $tN = <type>;``
    (see the module docstring), so the text is linear in the size of the type DAG.
    By default the large constants are appended (base64) in a ``#[metadata]``
    section, so that :func:`pyir.parse` rebuilds the module exactly;
    ``show_meta_data=False`` replaces the section by a one-line note (that is
    what ``str()`` and notebooks show).

    An expression's free variables are declared first, ``free_var %x: T;`` (as TVM prints
    them; :func:`pyir.parse_expr` requires the declaration), except in the display form
    (``show_meta_data=False``: ``str()``, notebooks, diffs), which is not meant to be parsed.

    ``tvm=True`` writes the text TVM's Relay printer writes (``mod.astext()`` of TVM 0.18, which
    ``tvm.relay.parse`` reads): the ``#[version = "0.0.5"]`` header, the functions in name
    order, scalar types as their dtype (``float32``), only 0-d constants inline (``1f``,
    ``2i64``, floats with TVM's 6 significant digits), the others as ``meta[relay.Constant][i]``
    with TVM's JSON metadata section (:mod:`pyir.text.tvm_meta`), float attributes as
    ``alpha=0.1f``, no type aliases; TVM's ``/* ty=... */`` comments only with ``show_types=True``.

    Options for reading (:func:`pyir.parse` reads every variant back to the same module):

    * ``order="top-down"`` prints a call's callee expression after its arguments, so a fused
      module reads top-down with its calls (each primitive function just before its first
      call); ``"post"`` (the default) prints callees first.
    * ``show_types=True`` prints each binding's type, when known (after type inference), as a
      comment: ``%0 = nn.conv2d(%x, %w) /* ty=Tensor[(1, 4, 6, 6), float32] */;``.
    * ``names_out``, a list, receives ``(node, function name, label, line index)`` for every
      printed binding, parameter and function (the line index counts from the text's first
      line): ``label`` is the printed name (``%3``, ``%x``, ``@main``), or
      ``<scope>.return`` for the result of a scope printed without a name (``@main.return``,
      ``%1.return`` for the body of the function bound to ``%1``, ``%4.then.return``).
      :meth:`pyir.Module.name_of` / :meth:`~pyir.Module.node_at` are built on it.
    """
    from ..ir.module import Module

    if order not in ("post", "top-down"):
        raise TypeCheckError(f"astext: order is 'post' or 'top-down', got {order!r}")
    if isinstance(obj, Type):
        if tvm:
            return _type_text(obj, None, True)
        types = _TypeAliases()
        return types.resolve(types.text(obj))
    if type(obj) is Attrs:
        return "{" + ", ".join(_attr_items_text(obj.items(), type_str, tvm)) + "}"
    if isinstance(obj, Pattern):
        return pattern_text(obj, [f"%{i}" for i in range(64 + len(obj.children()) * 0 + _npat(obj))])
    if type(obj) is Clause:
        obj = Match(obj.rhs.params[0] if obj.rhs.params else Tuple([]), [obj])  # shown in a match
    start = 0 if names_out is None else len(names_out)
    p = _Printer(inline_limit, order == "top-down", bool(show_types), names_out, tvm=tvm)
    if tvm:  # first, so that the line indices given to names_out count it
        p.lines.append('#[version = "0.0.5"]')
    if isinstance(obj, Module):
        tds = obj.type_definitions()
        for i, tn in enumerate(sorted(tds)):
            if i:
                p.lines.append("")
            p.lines.extend(type_data_text(tds[tn], p.type_text, tvm).split("\n"))
        for i, (name, f) in enumerate(sorted(obj.items()) if tvm else obj.items()):
            if i or tds:
                p.lines.append("")
            p.run(p.definition(name, f))
    elif isinstance(obj, Expr):
        if show_meta_data or tvm:
            from ..ir.traverse import free_vars
            for v in free_vars(obj):
                decl = p.param(v)
                if names_out is not None:
                    names_out.append((v, "", p.names[v], len(p.lines)))
                p.lines.append(f"free_var {decl};")
        p.run(p.scope(_Plan(obj, order == "top-down"), 0, ""))
    else:
        raise TypeCheckError(f"astext: cannot print a {type(obj).__name__} (expected a Module, an "
                             "expression, a type or Attrs)")
    if p.meta:
        if show_meta_data:
            p.lines.extend(p.metadata())
        else:
            p.lines.append(f"/* {len(p.meta)} large constant(s) elided: astext() "
                           "includes them */")
    text = p.types.resolve("\n".join(p.lines) + "\n")
    if names_out is not None and p.types.roots:
        off = text.count("\n") - len(p.lines)  # the type alias declarations come first
        if off:
            names_out[start:] = [(n, f, label, line + off) for n, f, label, line in names_out[start:]]
    return text


def _npat(p: Pattern) -> int:
    from ..ir.adt import pattern_var_count

    return pattern_var_count(p)


def _arg_summary(a: Node) -> str:
    k = type(a)
    if k is Var:
        return "%" + a.name_hint  # type: ignore[attr-defined]
    if k is GlobalVar:
        return "@" + a.name_hint  # type: ignore[attr-defined]
    if k is Constant:
        s = _inline_const(a, 4)  # type: ignore[arg-type]
        return s if s is not None else f"const({type_str(TensorType(a.data.shape, a.data.dtype))})"  # type: ignore[attr-defined]
    if k is Call:
        op = a.op  # type: ignore[attr-defined]
        return f"{op.name if type(op) is Op else type(op).__name__}(...)"
    return type(a).__name__ + "(...)"


def short_repr(n: Node) -> str:
    """A one-line summary of a node (one level deep), with its id prefix."""
    k = type(n)
    tag = n.id.hex()[:8]
    if k is Call:
        op = n.op  # type: ignore[attr-defined]
        callee = op.name if type(op) is Op else _arg_summary(op)
        parts = [_arg_summary(a) for a in n.args]  # type: ignore[attr-defined]
        parts += _op_attr_text(n)  # type: ignore[arg-type]
        return f"<Call {callee}({', '.join(parts)}) #{tag}>"
    if k is Var:
        ann = f": {type_str(n.type_annotation)}" if n.type_annotation is not None else ""  # type: ignore[attr-defined]
        return f"<Var %{n.name_hint}{ann} #{tag}>"  # type: ignore[attr-defined]
    if k is Function:
        ps = ", ".join("%" + p.name_hint for p in n.params)  # type: ignore[attr-defined]
        return f"<Function fn ({ps}) {{ {_arg_summary(n.body)} }} #{tag}>"  # type: ignore[attr-defined]
    if k is Constant or k is GlobalVar or k is Op:
        return f"<{k.__name__} {_arg_summary(n) if k is not Op else n.name} #{tag}>"  # type: ignore[attr-defined]
    if k is Attrs:
        return repr(n)
    return f"<{k.__name__} #{tag}>"


hooks.register(astext=astext, short_repr=short_repr, type_str=type_str, type_repr=type_repr)

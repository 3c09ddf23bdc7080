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
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Generator
from typing import Any

import numpy as np

from .expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from .node import Attrs, Node, _typed_equal
from .op.registry import REQUIRED
from .types import FuncType, TensorType, TupleType, Type

__all__ = ["astext", "type_str", "short_repr", "format_attr_value", "INLINE_LIMIT"]

INLINE_LIMIT = 4  # constants with at most this many elements print inline

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_SUFFIX = {"float32": "f", "float64": "f64", "float16": "f16", "int32": "", "int64": "i64",
           "int16": "i16", "int8": "i8", "uint8": "u8", "uint16": "u16", "uint32": "u32",
           "uint64": "u64"}


def type_str(t: Type | None) -> str:
    """Text of a type: ``Tensor[(1, 3), float32]``, ``(T1, T2)``, ``fn (T1) -> T2``."""
    if t is None:
        return "?"
    k = type(t)
    if k is TensorType:
        shape = t.shape  # type: ignore[attr-defined]
        dims = "(%s)" % ", ".join(str(d) for d in shape)
        return f"Tensor[{dims}, {t.dtype}]"  # type: ignore[attr-defined]
    if k is TupleType:
        fs = [type_str(f) for f in t.fields]  # type: ignore[attr-defined]
        return "(" + ", ".join(fs) + ("," if len(fs) == 1 else "") + ")"
    if k is FuncType:
        args = ", ".join(type_str(a) for a in t.arg_types)  # type: ignore[attr-defined]
        return f"fn ({args}) -> {type_str(t.ret_type)}"  # type: ignore[attr-defined]
    return repr(t)


def format_scalar(v: Any, dtype: str) -> str:
    """Exact text of one element of a ``dtype`` tensor."""
    if dtype == "bool":
        return "True" if v else "False"
    if np.dtype(dtype).kind == "f":
        s = str(np.dtype(dtype).type(v))
        if "." not in s and "e" not in s and "n" not in s:
            s += ".0"
        return s
    return str(int(v))


def format_attr_value(v: Any) -> str:
    """Text of an attribute value (typed: ``1``, ``1.0``, ``True`` differ)."""
    t = type(v)
    if v is None:
        return "None"
    if t is bool:
        return "True" if v else "False"
    if t is int:
        return str(v)
    if t is float:
        return repr(v)
    if t is str:
        return json.dumps(v)
    if t is tuple:
        return "[" + ", ".join(format_attr_value(x) for x in v) + "]"
    if isinstance(v, Type):
        return type_str(v)
    return repr(v)


def _inline_const(c: Constant, limit: int) -> str | None:
    data = c.data
    dt = data.dtype.name
    if dt not in _SUFFIX and dt != "bool":
        return None
    if data.size > limit or (data.ndim and 0 in data.shape):
        return None
    if data.dtype.kind == "f" and not np.all(np.isfinite(data)):
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


def _op_attr_text(call: Call) -> list[str]:
    attrs = call.attrs
    if not attrs:
        return []
    if type(call.op) is not Op:
        return [f"{k}={format_attr_value(v)}" for k, v in attrs.items()]
    specs = call.op.op_def._specs
    out = []
    for k, v in attrs.items():
        spec = specs.get(k)
        if spec is not None and spec.default is not REQUIRED and _typed_equal(spec.default, v):
            continue
        out.append(f"{k}={format_attr_value(v)}")
    return out


class _Printer:
    def __init__(self, inline_limit: int) -> None:
        self.inline_limit = inline_limit
        self.lines: list[str] = []
        self.names: dict[Node, str] = {}
        self.used: set[str] = set()
        self.meta: list[Constant] = []
        self.meta_index: dict[Constant, int] = {}
        self.counter = 0
        self.const_text: dict[Node, str] = {}
        self.next_suffix: dict[str, int] = {}

    # -- names ----------------------------------------------------------------------
    def var_name(self, v: Var) -> str:
        s = self.names.get(v)
        if s is not None:
            return s
        base = v.name_hint if _IDENT.match(v.name_hint) and not v.name_hint[0].isdigit() else \
            "v_" + re.sub(r"[^A-Za-z0-9_.]", "_", v.name_hint)
        name, i = base, self.next_suffix.get(base, 0)
        if i:
            name = f"{base}_{i}"
        while name in self.used:
            i += 1
            name = f"{base}_{i}"
        self.next_suffix[base] = i + 1
        self.used.add(name)
        s = self.names[v] = "%" + name
        return s

    def atom(self, n: Node) -> str | None:
        k = type(n)
        if k is Var:
            return self.var_name(n)  # type: ignore[arg-type]
        if k is GlobalVar:
            nm = n.name_hint  # type: ignore[attr-defined]
            return "@" + nm if _IDENT.match(nm) else "@" + json.dumps(nm)
        if k is Op:
            return n.name  # type: ignore[attr-defined,no-any-return]
        if k is Constant:
            s = self.const_text.get(n)
            if s is not None:
                return s
            s = _inline_const(n, self.inline_limit)  # type: ignore[arg-type]
            if s is not None:
                self.const_text[n] = s
                return s
            i = self.meta_index.get(n)  # type: ignore[call-overload]
            if i is None:
                i = self.meta_index[n] = len(self.meta)  # type: ignore[index]
                self.meta.append(n)  # type: ignore[arg-type]
            return f"meta[Constant][{i}]"
        return None

    def ref(self, n: Node) -> str:
        s = self.names.get(n)
        if s is not None:
            return s
        s = self.atom(n)
        if s is None:  # pragma: no cover - scopes bind every non-atom first
            raise AssertionError(f"unbound node {short_repr(n)}")
        return s

    def param(self, v: Var) -> str:
        s = self.var_name(v)
        if v.type_annotation is not None:
            s += ": " + type_str(v.type_annotation)
        return s

    # -- expressions whose children are bound -------------------------------------------
    def flat(self, n: Node) -> str:
        k = type(n)
        if k is Call:
            op = n.op  # type: ignore[attr-defined]
            callee = op.name if type(op) is Op else self.ref(op)
            parts = [self.ref(a) for a in n.args]  # type: ignore[attr-defined]
            parts += _op_attr_text(n)  # type: ignore[arg-type]
            return f"{callee}({', '.join(parts)})"
        if k is Tuple:
            fs = [self.ref(f) for f in n.fields]  # type: ignore[attr-defined]
            return "(" + ", ".join(fs) + ("," if len(fs) == 1 else "") + ")"
        if k is TupleGetItem:
            return f"{self.ref(n.tuple_value)}.{n.index}"  # type: ignore[attr-defined]
        return self.ref(n)

    # -- scopes -------------------------------------------------------------------------------
    def local_children(self, n: Node) -> tuple[Node, ...]:
        k = type(n)
        if k is If:
            return (n.cond,)  # type: ignore[attr-defined]
        if k is Function or k is Let:
            return ()
        return n.children()

    def bind_below(self, root: Node, indent: str, bound_here: list[Node],
                   include_root: bool) -> Generator[Any, None, None]:
        from .traverse import post_order

        names = self.names
        order = post_order(root, self.local_children,  # type: ignore[arg-type]
                           stop=lambda n: n in names or type(n) in (Var, GlobalVar, Op, Constant))
        if not include_root:
            order.pop()
        for n in order:
            if n in names or type(n) in (Var, GlobalVar, Op, Constant):
                continue
            name = f"%{self.counter}"
            self.counter += 1
            k = type(n)
            if k is Function:
                yield from self.function(n, indent, f"{name} = ", ";")  # type: ignore[arg-type]
            elif k is If:
                yield from self.if_(n, indent, f"{name} = ", ";")  # type: ignore[arg-type]
            elif k is Let:
                self.lines.append(f"{indent}{name} = {{")
                yield self.scope(n, indent + "  ")  # type: ignore[arg-type]
                self.lines.append(f"{indent}}};")
            else:
                self.lines.append(f"{indent}{name} = {self.flat(n)};")
            names[n] = name
            bound_here.append(n)

    def scope(self, body: Expr, indent: str) -> Generator[Any, None, None]:
        bound_here: list[Node] = []
        e: Expr = body
        while type(e) is Let:
            yield from self.bind_below(e.value, indent, bound_here, include_root=False)  # type: ignore[attr-defined]
            v = e.var  # type: ignore[attr-defined]
            value = e.value  # type: ignore[attr-defined]
            head = f"{indent}let {self.param(v)} = "
            if type(value) is Function:
                yield from self.function(value, indent, head[len(indent):], ";")
            elif type(value) is If:
                yield from self.if_(value, indent, head[len(indent):], ";")
            elif type(value) is Let:
                self.lines.append(head + "{")
                yield self.scope(value, indent + "  ")
                self.lines.append(f"{indent}}};")
            else:
                self.lines.append(f"{head}{self.flat(value)};")
            e = e.body  # type: ignore[attr-defined]
        yield from self.bind_below(e, indent, bound_here, include_root=False)
        if type(e) is Function:
            yield from self.function(e, indent, "", "")  # type: ignore[arg-type]
        elif type(e) is If:
            yield from self.if_(e, indent, "", "")  # type: ignore[arg-type]
        else:
            self.lines.append(indent + self.flat(e))
        for n in bound_here:
            del self.names[n]

    def fn_header(self, f: Function, head: str) -> str:
        parts = [self.param(p) for p in f.params]
        parts += [f"{k}={format_attr_value(v)}" for k, v in f.attrs.items()]
        ret = f" -> {type_str(f.ret_type)}" if f.ret_type is not None else ""
        return f"{head}({', '.join(parts)}){ret} {{"

    def function(self, f: Function, indent: str, prefix: str, suffix: str) -> Generator[Any, None, None]:
        self.lines.append(indent + self.fn_header(f, prefix + "fn "))
        yield self.scope(f.body, indent + "  ")
        self.lines.append(f"{indent}}}{suffix}")

    def if_(self, n: If, indent: str, prefix: str, suffix: str) -> Generator[Any, None, None]:
        self.lines.append(f"{indent}{prefix}if ({self.ref(n.cond)}) {{")
        yield self.scope(n.true_branch, indent + "  ")
        self.lines.append(f"{indent}}} else {{")
        yield self.scope(n.false_branch, indent + "  ")
        self.lines.append(f"{indent}}}{suffix}")

    def definition(self, name: str, f: Function) -> Generator[Any, None, None]:
        self.counter = 0
        gname = "@" + name if _IDENT.match(name) else "@" + json.dumps(name)
        self.lines.append(self.fn_header(f, f"def {gname}"))
        yield self.scope(f.body, "  ")
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
        out = ["#[metadata]"]
        for i, c in enumerate(self.meta):
            shape = "(%s)" % ", ".join(str(d) for d in c.data.shape)
            blob = base64.b64encode(c.data.tobytes()).decode()
            out.append(f'meta[Constant][{i}] = {c.data.dtype.name} {shape} "{blob}"')
        return out


def astext(obj: Any, *, show_meta_data: bool = True, inline_limit: int = INLINE_LIMIT) -> str:
    """Relay-like text of a module, function, expression or type.

    By default the large constants are appended (base64) in a ``#[metadata]``
    section, so that :func:`pyir.parse` rebuilds the module exactly;
    ``show_meta_data=False`` replaces the section by a one-line note (that is
    what ``str()`` and notebooks show).
    """
    from .module import Module

    if isinstance(obj, Type):
        return type_str(obj)
    p = _Printer(inline_limit)
    if isinstance(obj, Module):
        for i, (name, f) in enumerate(obj.items()):
            if i:
                p.lines.append("")
            p.run(p.definition(name, f))
    elif isinstance(obj, Expr):
        p.run(p.scope(obj, ""))
    else:
        raise TypeError(f"cannot print {type(obj).__name__}")
    if p.meta:
        if show_meta_data:
            p.lines.extend(p.metadata())
        else:
            p.lines.append(f"/* {len(p.meta)} large constant(s) elided: astext() "
                           "includes them */")
    return "\n".join(p.lines) + "\n"


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

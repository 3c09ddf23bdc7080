"""The op layer's registry: :func:`register_op` declares an operator (its definition lives in
:mod:`pyir.ir.opdef`) and returns its builder (``pyir.op.nn.conv2d(x, w, strides=(2, 2))``).

Builders and ``pyir.Call`` normalize attributes through the schema: defaults are
filled in and values converted to their canonical kind, so ``conv2d(x, w)`` and
``conv2d(x, w, strides=[1, 1])`` are the very same node.  A type-exact, bounded, weak
cache per operator makes attributes seen before cost a dict lookup (see ``attrs_key``).
"""

from __future__ import annotations

from collections.abc import Callable
from marshal import dumps as _marshal
from typing import Any

from ..ir.node import _get, digest
from ..ir.opdef import (
    ATTR_CACHE_MAX,
    REQUIRED,
    AttrSpec,
    Compute,
    OpDef,
    OpPattern,
    TypeRel,
    attrs_key,
    cacheable,
    declare_op,
    get_op_def,
    list_ops,
)

__all__ = [
    "register_op",
    "ATTR_CACHE_MAX",
    "AttrSpec",
    "OpDef",
    "OpPattern",
    "REQUIRED",
    "attrs_key",
    "cacheable",
    "declare_op",
    "get_op_def",
    "list_ops",
]


def register_op(
    name: str,
    *,
    num_inputs: int | None,
    type_rel: TypeRel,
    compute: Compute,
    pattern: OpPattern,
    attrs: tuple[AttrSpec, ...] = (),
    doc: str = "",
    canonicalize: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> Callable[..., Any]:
    """Declare operator ``name`` and return its builder function.

    The builder takes the inputs positionally and the attributes as keywords and
    returns the interned ``Call``.
    """
    odef = declare_op(name, num_inputs, attrs, type_rel, compute, pattern, doc, canonicalize)
    from ..ir.expr import Call, Expr, Op, _CallB, as_expr, new_call
    from ..ir.node import (
        EMPTY_ATTRS,
        _collided,
        _drop,
        _new,
        _Ref,
        _setdefault,
        intern_mask,
        mask_get,
    )

    op_node = Op(name)
    n_in = num_inputs
    cache = odef._cache
    get = cache.get
    normalize = odef.normalize_attrs
    opmask = op_node._mask
    prefix = b"C" + op_node.id  # the start of this operator's Call keys
    if not attrs:
        builder = _builder_no_attrs(odef, op_node, prefix + EMPTY_ATTRS.id)
    else:
        def builder(*args: Any, **kw: Any) -> Any:
            if len(args) != n_in:
                odef.check_arity(len(args))
            for x in args:
                if not isinstance(x, Expr):
                    args = tuple(as_expr(x) for x in args)
                    break
            if kw:
                k: Any = None
                try:
                    k = _marshal(kw, 2 if len(kw) == 1 else 4)  # the key of attrs_key, inlined
                    a = get(k)()  # type: ignore[misc]  # no entry: None() is a TypeError
                except Exception:  # no key (see attrs_key), no entry: the uncached path
                    a = None
                if a is None:
                    a = normalize(kw, k)
            else:
                e = get(())
                a = e() if e is not None else None
                if a is None:
                    a = normalize(None)
            node: Any
            if n_in == 1:  # make_call and new_call, inlined
                a0 = args[0]
                key = digest(prefix + a.id + a0.id)
                r = _get(key)
                if r is not None:
                    node = r()
                    if type(node) is Call and node.attrs is a and node.args == args and node.op is op_node:
                        return node
                elif not _collided or key not in _collided:  # an empty slot: the node goes here
                    node = _new(_CallB)
                    node.op = op_node
                    node.args = args
                    node.attrs = a
                    m = a0._mask
                    mask = m | opmask
                    node._mask = m if mask == m else mask_get(mask) or intern_mask(mask)
                    node.id = key
                    node.__class__ = Call
                    ref = _Ref(node, _drop)
                    ref.key = key  # type: ignore[attr-defined]
                    if _setdefault(key, ref) is ref:
                        return node
                return new_call(op_node, args, a, key, opmask | a0._mask)
            if n_in == 2:
                a0, a1 = args
                key = digest(b"".join((prefix, a.id, a0.id, a1.id)))
                r = _get(key)
                if r is not None:
                    node = r()
                    if type(node) is Call and node.attrs is a and node.args == args and node.op is op_node:
                        return node
                elif not _collided or key not in _collided:
                    node = _new(_CallB)
                    node.op = op_node
                    node.args = args
                    node.attrs = a
                    m = a0._mask
                    mask = m | a1._mask | opmask
                    node._mask = m if mask == m else mask_get(mask) or intern_mask(mask)
                    node.id = key
                    node.__class__ = Call
                    ref = _Ref(node, _drop)
                    ref.key = key  # type: ignore[attr-defined]
                    if _setdefault(key, ref) is ref:
                        return node
                return new_call(op_node, args, a, key, opmask | a0._mask | a1._mask)
            if n_in == 3:
                a0, a1, a2 = args
                key = digest(b"".join((prefix, a.id, a0.id, a1.id, a2.id)))
            else:
                parts = [prefix, a.id]
                for x in args:
                    parts.append(x.id)
                key = digest(b"".join(parts))
            r = _get(key)
            if r is not None:
                node = r()
                if type(node) is Call and node.attrs is a and node.args == args and node.op is op_node:
                    return node
            mask = opmask
            for x in args:
                mask |= x._mask
            return new_call(op_node, args, a, key, mask)

    builder.__name__ = name.rsplit(".", 1)[-1]
    builder.__qualname__ = builder.__name__
    schema = ", ".join(f"{a.name}={a.default!r}" if a.default is not REQUIRED else a.name for a in attrs)
    kind = pattern.name.lower()
    builder.__doc__ = f"{doc}\n\nOperator ``{name}`` ({kind}); attributes: {schema or 'none'}."
    builder.op = op_node  # type: ignore[attr-defined]
    return builder


def _builder_no_attrs(odef: OpDef, op_node: Any, prefix: bytes) -> Callable[..., Any]:
    """The builder of an operator without attributes: ``prefix`` is its Calls' key start
    (b"C", the operator's id, the empty Attrs' id).  The one- and two-input paths are
    :func:`pyir.ir.expr.make_call` and :func:`pyir.ir.expr.new_call` inlined."""
    from ..ir.expr import Call, Expr, _CallB, as_expr, make_call, new_call
    from ..ir.node import (
        EMPTY_ATTRS,
        _collided,
        _drop,
        _new,
        _Ref,
        _setdefault,
        intern_mask,
        mask_get,
    )

    n_in = odef.num_inputs
    opmask = op_node._mask
    empty = EMPTY_ATTRS

    def builder(*args: Any, **kw: Any) -> Any:
        if kw:  # no attributes: an AttrError naming them
            odef.normalize_attrs(kw)
        for x in args:
            if not isinstance(x, Expr):
                args = tuple(as_expr(x) for x in args)
                break
        node: Any
        if len(args) == 1 and n_in == 1:
            a0 = args[0]
            key = digest(prefix + a0.id)
            r = _get(key)
            if r is not None:
                node = r()
                if type(node) is Call and node.args == args and node.attrs is empty and node.op is op_node:
                    return node
            elif not _collided or key not in _collided:  # an empty slot: the node goes here
                node = _new(_CallB)
                node.op = op_node
                node.args = args
                node.attrs = empty
                m = a0._mask
                mask = m | opmask
                node._mask = m if mask == m else mask_get(mask) or intern_mask(mask)
                node.id = key
                node.__class__ = Call
                ref = _Ref(node, _drop)
                ref.key = key  # type: ignore[attr-defined]
                if _setdefault(key, ref) is ref:
                    return node
            return new_call(op_node, args, empty, key, opmask | a0._mask)
        if len(args) == 2 and n_in == 2:
            a0, a1 = args
            key = digest(prefix + a0.id + a1.id)
            r = _get(key)
            if r is not None:
                node = r()
                if type(node) is Call and node.args == args and node.attrs is empty and node.op is op_node:
                    return node
            elif not _collided or key not in _collided:
                node = _new(_CallB)
                node.op = op_node
                node.args = args
                node.attrs = empty
                m = a0._mask
                mask = m | a1._mask | opmask
                node._mask = m if mask == m else mask_get(mask) or intern_mask(mask)
                node.id = key
                node.__class__ = Call
                ref = _Ref(node, _drop)
                ref.key = key  # type: ignore[attr-defined]
                if _setdefault(key, ref) is ref:
                    return node
            return new_call(op_node, args, empty, key, opmask | a0._mask | a1._mask)
        if len(args) != n_in:
            odef.check_arity(len(args))
        return make_call(op_node, args, empty)

    return builder

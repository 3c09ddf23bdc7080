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
from operator import is_
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
    from ..ir.expr import Op
    from ..ir.node import EMPTY_ATTRS

    op_node = Op(name)
    prefix = b"C" + op_node.id  # the start of this operator's Call keys
    if not attrs:
        if not num_inputs:  # variadic, or no inputs: the former builder
            builder = _builder_no_attrs(odef, op_node, prefix + EMPTY_ATTRS.id)
        else:
            builder = _builder_generated(odef, op_node, prefix, None)
    else:
        generic = _builder_generic(odef, op_node, prefix)
        fast = _keywords_ok(odef) and num_inputs != 0  # (an operator without inputs: generic)
        builder = _builder_generated(odef, op_node, prefix, generic) if fast else generic
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


def _builder_generic(odef: OpDef, op_node: Any, prefix: bytes) -> Callable[..., Any]:
    """The builder of an operator with attributes, taking them as ``**kw``: the path of the
    operators whose attribute names cannot be keyword parameters (see :func:`_keywords_ok`),
    and of the keyword builders' calls with unknown keywords."""
    from ..ir.expr import Call, Expr, _CallB, as_expr, new_call
    from ..ir.node import _collided, _drop, _new, _Ref, _setdefault, intern_mask, mask_get

    n_in = odef.num_inputs
    get = odef._cache.get
    normalize = odef.normalize_attrs
    opmask = op_node._mask

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
        if r is None and (not _collided or key not in _collided):  # an empty slot: the node goes here
            node = _new(_CallB)
            node.op = op_node
            node.args = args
            node.attrs = a
            node._mask = mask_get(mask) or intern_mask(mask)
            node.id = key
            node.__class__ = Call
            ref = _Ref(node, _drop)
            ref.key = key  # type: ignore[attr-defined]
            if _setdefault(key, ref) is ref:
                return node
        return new_call(op_node, args, a, key, mask)

    return builder


# -- the keyword builders ----------------------------------------------------------------------
# An operator whose attribute names can be keyword parameters gets a builder generated for its
# schema: ``def conv2d(*args, strides=_UNSET, padding=_UNSET, ..., **_kw)``.  Python binds the
# keywords to parameters in C (no dict is built), and a small most-recently-inserted list of
# *identity entries* per operator (``OpDef._hot``: the raw values of one call, then a weak
# reference to the Attrs the schema made of them) answers a call whose every value is the very
# object of an entry -- the literal ``padding=(1, 1)`` of a loop's code, a small int, a float
# constant -- with one ``is`` per attribute: no key, no hash (hashing a user's tuple could
# recurse without limit), no normalization.  Any other call takes the former path: the
# type-exact ``marshal`` cache of ``normalize_attrs``, then the schema.  An entry is stored
# only when the schema itself made the Attrs (a marshal miss: values rebuilt at every call
# never push out the literals' entries), after it accepted the values, and only when each is
# an exact None, bool, int, float or str or a tuple of them (immutable: the same object always
# means the same value), so a hit returns exactly what the uncached path returns for those
# values.  Other attributes and unknown keywords go to the generic builder, so every error is
# the one it raises, in the same order (arity first).
# Thread-safe: an entry is a tuple built before it is inserted (``list.insert`` and ``del`` are
# atomic); a reader that sees the list change at worst misses an entry.

ATTR_HOT_MAX = 4
"""Identity entries per operator (the most recently inserted are kept; a call whose values match
none pays one failed ``is`` per entry before the marshal cache)."""
ATTR_KEYWORDS_MAX = 4
"""Attributes (the first of the schema) that a keyword builder takes as keyword parameters: each
costs a lookup of its default in C on every call, given or not, so a builder takes the common
ones (schemas list them first) and passes a call giving any other to its generic builder."""

_UNSET: Any = type("_Unset", (), {"__repr__": lambda self: "<unset>", "__slots__": ()})()
_RESERVED = frozenset({"args"})
_FROZEN_SCALARS = (int, float, str, bool, type(None))
_FROZEN_DEPTH = 8


def _frozen(v: Any, depth: int = 0) -> bool:
    """``v`` is an exact None, bool, int, float or str, or a tuple of them (nested at most
    ``_FROZEN_DEPTH`` deep): a value the same object of which always means the same value."""
    t = type(v)
    if t in _FROZEN_SCALARS:
        return True
    if t is tuple and depth < _FROZEN_DEPTH:
        return all(_frozen(x, depth + 1) for x in v)
    return False


def _keywords_ok(odef: OpDef) -> bool:
    """Whether every attribute name of ``odef`` can be a keyword parameter of a generated
    builder (an identifier, no keyword, no leading underscore, not ``args``)."""
    import keyword

    return all(a.name.isidentifier() and not keyword.iskeyword(a.name) and not a.name.startswith("_")
               and a.name not in _RESERVED for a in odef.attrs)


# The generated source: a keyword builder's head (the checks, then the Attrs from the identity
# entries or the uncached path) and its Call construction, unrolled for a fixed number of inputs
# (make_call and new_call inlined, as in the other builders).  ``_EK`` is the set of expression
# kinds (a set lookup instead of an isinstance call; anything else goes through ``_exprs``).
_HEAD = '''
def builder(*args, {params}, **_kw):
    if _kw:  # another attribute, or an unknown keyword: the generic builder
        return _unknown(args, ({values}), _kw)
{inputs}
    for _e in _hot:
        {unpack} = _e
        if {same}:
            _a = _r()
            if _a is not None:
                break
    else:  # the given attributes as a dict (no comprehension: it is a function call)
        _kwd = {{{{}}}}
{fill}
        _a = _attrs(_kwd, ({values}))
'''
_INPUTS_FIXED = '''
    if len(args) != {n}:
        _check_arity(len(args))
    {inputs} = args
    if {not_exprs}:
        args = _exprs(args)
        {inputs} = args
'''
_INPUTS_VARIADIC = '''
    if not args:
        _check_arity(0)
    for _x in args:
        if type(_x) not in _EK:
            args = _exprs(args)
            break
'''
_CALL_FIXED = '''
    _key = digest({key})
    _r = _get(_key)
    if _r is not None:
        _n = _r()
        if type(_n) is _Call and _n.attrs is _a and _n.args == args and _n.op is _op:
            return _n
    elif not _collided or _key not in _collided:  # an empty slot: the node goes here
        _n = _new(_CallB)
        _n.op = _op
        _n.args = args
        _n.attrs = _a
        _m = _a0._mask
        _mask = {mask}
        _n._mask = _m if _mask == _m else _mask_get(_mask) or _intern_mask(_mask)
        _n.id = _key
        _n.__class__ = _Call
        _ref = _Ref(_n, _drop)
        _ref.key = _key
        if _setdefault(_key, _ref) is _ref:
            return _n
    return _new_call(_op, args, _a, _key, _mask_of(args))
'''
_CALL_VARIADIC = '''
    _parts = [_prefix, _a.id]
    for _x in args:
        _parts.append(_x.id)
    _key = digest(b"".join(_parts))
    _r = _get(_key)
    if _r is not None:
        _n = _r()
        if type(_n) is _Call and _n.attrs is _a and _n.args == args and _n.op is _op:
            return _n
    return _new_call(_op, args, _a, _key, _mask_of(args))
'''


_NO_ATTRS = '''
def builder(*args, **_kw):
    if _kw:  # no attributes: an AttrError naming them
        _check_attrs(_kw)
    if len(args) == {n}:
        {inputs} = args
        if {not_exprs}:
            args = _exprs(args)
            {inputs} = args
    else:  # the inputs' errors first, then the arity's
        _exprs(args)
        _check_arity(len(args))
'''


def _builder_source(names: tuple[str, ...], n_in: int | None) -> str:
    """The source of the keyword builder of attributes ``names`` and ``n_in`` inputs."""
    values = ", ".join(names) + ("," if len(names) == 1 else "")
    head = _HEAD.format(
        params=", ".join(f"{n}=_U" for n in names), values=values,
        unpack=", ".join(f"_v{i}" for i in range(len(names))) + ", _r",
        same=" and ".join(f"_v{i} is {n}" for i, n in enumerate(names)),
        fill="\n".join(f"        if {n} is not _U:\n            _kwd[{n!r}] = {n}" for n in names),
        inputs="{inputs}")
    if n_in is None:
        return head.format(inputs=_INPUTS_VARIADIC.strip("\n")) + _CALL_VARIADIC
    ins = [f"_a{i}" for i in range(n_in)]
    fill = {"n": n_in, "inputs": ", ".join(ins) + ("," if n_in == 1 else ""),
            "not_exprs": " or ".join(f"type({a}) not in _EK" for a in ins)}
    mask = " | ".join(["_m"] + [f"{a}._mask" for a in ins[1:]] + ["_opmask"])
    if not names:  # ``_prefix`` includes the empty Attrs' id, ``_a`` is the empty Attrs
        key = " + ".join(["_prefix"] + [f"{a}.id" for a in ins]) if n_in <= 2 else \
            "b\"\".join((_prefix, " + ", ".join(f"{a}.id" for a in ins) + "))"
        return _NO_ATTRS.format(**fill) + _CALL_FIXED.format(key=key, mask=mask)
    key = ("_prefix + _a.id + _a0.id" if n_in == 1 else
           "b\"\".join((_prefix, _a.id, " + ", ".join(f"{a}.id" for a in ins) + "))")
    inputs = _INPUTS_FIXED.format(**fill)
    return head.format(inputs=inputs.strip("\n")) + _CALL_FIXED.format(key=key, mask=mask)


def _expr_kinds() -> frozenset[type]:
    """The expression kinds known now (node kinds are final: a kind declared later is still
    accepted, through the isinstance check of ``_exprs``)."""
    from ..ir.expr import Expr

    out: set[type] = set()
    todo = [Expr]
    while todo:
        k = todo.pop()
        out.add(k)
        todo.extend(k.__subclasses__())
    return frozenset(out)


def _exprs(args: tuple[Any, ...]) -> tuple[Any, ...]:
    """The builders' inputs as expressions (``as_expr``: constants, tuples; else an error)."""
    from ..ir.expr import Expr, as_expr

    if all(isinstance(x, Expr) for x in args):
        return args
    return tuple([as_expr(x) for x in args])


def _mask_of_call(opmask: int) -> Callable[[tuple[Any, ...]], int]:
    def mask_of(args: tuple[Any, ...]) -> int:
        m = opmask
        for x in args:
            m |= x._mask
        return m
    return mask_of


def _builder_generated(odef: OpDef, op_node: Any, prefix: bytes, generic: Callable[..., Any] | None
                       ) -> Callable[..., Any]:
    """The generated builder of ``odef``: for an operator with attributes, its keyword builder
    (see ATTR_HOT_MAX; ``generic`` is its ``**kw`` builder, which calls with other keywords are
    handed to); for one without (``generic`` None), a fixed number of inputs unrolled."""
    import weakref

    from ..ir.expr import Call, _CallB, new_call
    from ..ir.node import EMPTY_ATTRS, _collided, _drop, _new, _Ref, _setdefault, intern_mask, mask_get

    names = tuple(a.name for a in odef.attrs[:ATTR_KEYWORDS_MAX])
    normalize = odef.normalize_attrs
    cache_get = odef._cache.get
    hot = odef._hot
    unset = _UNSET
    last: list[Any] = [None]  # the values of the last marshal hit (kept alive: frozen or small)

    def attrs(kw: dict[str, Any], values: tuple[Any, ...]) -> Any:
        """The uncached path of a keyword builder: the Attrs of the given attributes ``kw``
        (``values``: all of them, ``_UNSET`` for one not given) from the ``marshal`` cache, else
        through the schema -- and only then entered in the identity entries: values built anew
        at each call (a shape computed in a loop) are found in the marshal cache and never push
        out the entries of literals.  A marshal hit whose values are the very
        objects of the previous marshal hit (a literal of a second call site) is entered too.
        """
        k: Any = ()
        if kw:
            try:
                k = _marshal(kw, 2 if len(kw) == 1 else 4)  # the key of attrs_key, inlined
            except Exception:  # no key (see attrs_key): the uncached path
                k = None
        if k is not None:
            e = cache_get(k)
            if e is not None:
                a = e()
                if a is not None:
                    # the very objects of the previous marshal hit again: a literal of another call
                    # site than the one whose entry the schema made (values rebuilt at every call
                    # are new objects each time: they never pass this test)
                    prev = last[0]
                    if prev is not None and len(prev) == len(values) and all(map(is_, prev, values)):
                        last[0] = None
                        if all(v is unset or _frozen(v) for v in values):
                            hot.insert(0, (*values, weakref.ref(a)))
                            del hot[ATTR_HOT_MAX:]
                    else:
                        last[0] = values
                    return a
        a = normalize(kw if kw else None, k)
        if all(v is unset or _frozen(v) for v in values):
            hot.insert(0, (*values, weakref.ref(a)))
            del hot[ATTR_HOT_MAX:]
        return a

    def unknown(args: tuple[Any, ...], values: tuple[Any, ...], extra: dict[str, Any]) -> Any:
        kw = {n: v for n, v in zip(names, values) if v is not unset}
        kw.update(extra)
        return generic(*args, **kw)  # type: ignore[misc]

    src = _builder_source(names, odef.num_inputs)
    cells: dict[str, Any] = {
        "_U": unset, "_unknown": unknown, "_attrs": attrs, "_hot": hot, "_EK": _expr_kinds(),
        "_check_arity": odef.check_arity, "_exprs": _exprs, "_prefix": prefix, "_Call": Call,
        "_op": op_node, "_collided": _collided, "_new": _new, "_CallB": _CallB,
        "_opmask": op_node._mask, "_mask_get": mask_get, "_intern_mask": intern_mask, "_Ref": _Ref,
        "_drop": _drop, "_setdefault": _setdefault, "_new_call": new_call,
        "_mask_of": _mask_of_call(op_node._mask), "_check_attrs": odef.normalize_attrs,
    }
    if generic is None:
        cells["_prefix"], cells["_a"] = prefix + EMPTY_ATTRS.id, EMPTY_ATTRS
    # the builder is made by a factory taking these as parameters (closure cells); ``digest`` and
    # ``_get`` stay globals of this module, read at each call (as the other builders read them)
    factory = "def _make(" + ", ".join(cells) + "):\n" + "\n".join(
        "    " + line if line else "" for line in src.split("\n")) + "\n    return builder\n"
    ns: dict[str, Any] = {}
    exec(compile(factory, f"<pyir builder of {odef.name}>", "exec"), globals(), ns)
    builder: Callable[..., Any] = ns["_make"](**cells)
    return builder

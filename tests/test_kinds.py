"""Node kinds declared once (pyir.ir.kinds): the declarations, and everything derived from them."""

from __future__ import annotations

import functools
import operator

import numpy as np
import pytest
from hypothesis import given, settings

import pyir
from pyir import op
from pyir.ir import dims, kinds
from pyir.ir.expr import Call, Constant, Expr, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from pyir.ir.kinds import KINDS, Child, Children, Scalar, field_values, key_bytes
from pyir.ir.node import F_UNTYPED, Attrs, Node, build, cached_type, digest
from pyir.ir.types import FuncType, TensorType, TupleType, Type

# -- oracles: what the hand-written code said before the kinds were declared ------------------------

#: The format's kind numbers (binary format version 1): stable, never reused.
V1_CODES = {"Var": 0, "GlobalVar": 1, "Constant": 2, "Op": 3, "Call": 4, "Tuple": 5, "TupleGetItem": 6,
            "Function": 7, "Let": 8, "If": 9, "TensorType": 10, "TupleType": 11, "FuncType": 12,
            "Attrs": 13}
#: The kinds of pyir.ir.adt (issue 14: ADTs, match, references, type variables) and their codes.
ADT_CODES = {"TypeVar": 20, "GlobalTypeVar": 21, "TypeCall": 22, "RefType": 23, "Constructor": 24,
             "PatternWildcard": 25, "PatternVar": 26, "PatternConstructor": 27, "PatternTuple": 28,
             "Clause": 29, "Match": 30, "RefCreate": 31, "RefRead": 32, "RefWrite": 33, "TypeData": 34}

#: The hand-written ``children()`` of every kind (Call's is still hand-written in expr.py).
HAND_CHILDREN = {
    "Var": lambda n: (), "GlobalVar": lambda n: (), "Constant": lambda n: (), "Op": lambda n: (),
    "TensorType": lambda n: (), "Attrs": lambda n: (),
    "Call": lambda n: n.args if type(n.op) is Op else (n.op, *n.args),
    "Tuple": lambda n: n.fields,
    "TupleGetItem": lambda n: (n.tuple_value,),
    "Function": lambda n: (*n.params, n.body),
    "Let": lambda n: (n.var, n.value, n.body),
    "If": lambda n: (n.cond, n.true_branch, n.false_branch),
    "TupleType": lambda n: n.fields,
    "FuncType": lambda n: (*n.arg_types, n.ret_type),
    "Sym": lambda n: (), "AnyDim": lambda n: (),
    "DimFloorDiv": lambda n: (n.arg,), "DimMod": lambda n: (n.arg,),
    "DimPoly": lambda n: tuple({id(a): a for m, _ in n.terms for a in m}.values()),
}

#: What the constructor builds for a node with new children (the functor's old ladder).
HAND_REBUILD = {
    "Call": lambda n, new: Call(n.op, new, n.attrs) if type(n.op) is Op else Call(new[0], new[1:], n.attrs),
    "Tuple": lambda n, new: Tuple(new),
    "TupleGetItem": lambda n, new: TupleGetItem(new[0], n.index),
    "Function": lambda n, new: Function(new[:-1], new[-1], n.ret_type, n.attrs),
    "Let": lambda n, new: Let(*new),
    "If": lambda n, new: If(*new),
    "TupleType": lambda n, new: TupleType(new),
    "FuncType": lambda n, new: FuncType(new[:-1], new[-1]),
    "DimFloorDiv": lambda n, new: dims.dim_floordiv(new[0], n.divisor),
    "DimMod": lambda n, new: dims.dim_mod(new[0], n.divisor),
    "DimPoly": lambda n, new: dims.DimPoly(n.const, [(tuple(dict(zip(map(id, n.children()), new))[id(a)]
                                                          for a in m), c) for m, c in n.terms]),
}


def _reachable(roots: list[Node]) -> list[Node]:
    """Every node reachable from ``roots`` through any node-valued field (types, attrs, ops too)."""
    seen: dict[Node, None] = {}
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen[n] = None
        for f, v in zip(kinds.info(type(n)).fields, field_values(n)):
            if f.node:
                stack.extend(v if f.many else () if v is None else (v,))
        stack.extend(n.children())  # a DimPoly's atoms sit inside its terms
        t = cached_type(n)
        if t is not None:
            stack.append(t)
        if type(n) is Attrs:
            stack.extend(v for _, v in n.items() if isinstance(v, Node))
    return list(seen)


def _fixed_nodes() -> list[Node]:
    """Hand-made nodes of every kind, including shapes the random programs do not draw."""
    x = pyir.var("x", shape=(2, 2))
    u = pyir.Var("u")  # no annotation
    t = TensorType((2, 2), "float32")
    g = GlobalVar("helper")
    f = Function([x], op.nn.relu(x), t, {"Primitive": 1})
    calls = [Call(g, [x]), Call(f, [x]), op.add(x, x), op.nn.conv2d(pyir.var("d", shape=(1, 2, 4, 4)),
                                                                    pyir.var("w", shape=(2, 2, 3, 3)))]
    tup = Tuple([x, u, x])
    return [
        x, u, g, Constant(np.zeros((0, 3), "int8")), pyir.const(True), pyir.const(-0.0),
        Op("nn.relu"), *calls, tup, Tuple([]), TupleGetItem(tup, 2), f, Function([], pyir.const(1.0)),
        Let(pyir.Var("v"), x, op.exp(x)), If(pyir.const(True), x, u),
        t, TensorType(()), TupleType([]), TupleType([t, TupleType([t])]), FuncType([t, t], t),
        FuncType([], TupleType([])), Attrs(), Attrs({"a": (1, 2.0, "s", None, True), "b": t}),
        *_dim_nodes(),
    ]


def _dim_nodes() -> list[Node]:
    n, m = dims.sym("n"), dims.sym("m")
    return [n, dims.Any, n // 2, (n + 1) % 4, n * 3 + 1, n * m + 2 * n + 5, (n + 1) // 2 * m]


def _all_nodes(mod: pyir.Module) -> list[Node]:
    typed = pyir.transform.InferType()(mod)
    return _reachable([*typed.functions().values(), *_fixed_nodes()])


def _new_child(parent: Node, pos: int, c: Node) -> Node:
    """A replacement for the child ``c`` at ``pos`` that the parent's constructor accepts."""
    if isinstance(c, Type):
        return TupleType([c])
    if isinstance(c, dims.Dim):
        return dims.sym(f"z{pos}")
    if (type(parent) is Function and pos < len(parent.params)) or (type(parent) is Let and pos == 0):
        return pyir.Var(c.name_hint + "_new", c.type_annotation)  # a binder: a fresh variable
    return Tuple([c])


# -- the declarations ------------------------------------------------------------------------------


def _final_kinds() -> set[type]:
    out, todo = set(), [Node]
    while todo:
        k = todo.pop()
        todo.extend(k.__subclasses__())
        if k.__dict__.get("_final"):
            out.add(k)
    return out


def test_registry_lists_every_final_kind_in_declaration_order():
    """KINDS holds every final node class, by name, in declaration order, with its v1 number."""
    assert set(KINDS.values()) == _final_kinds()
    assert all(name == cls.__name__ for name, cls in KINDS.items())
    assert list(KINDS) == ["Attrs", "Sym", "AnyDim", "DimFloorDiv", "DimMod", "DimPoly",  # pyir.ir.dims
                           "TensorType", "TupleType", "FuncType", "Var", "GlobalVar", "Constant",
                           "Op", "Call", "Tuple", "TupleGetItem", "Function", "Let", "If",
                           "TypeVar", "GlobalTypeVar", "TypeCall", "RefType", "Constructor",  # pyir.ir.adt
                           "TypeData", "PatternWildcard", "PatternVar", "PatternConstructor", "PatternTuple",
                           "Clause", "Match", "RefCreate", "RefRead", "RefWrite"]
    assert {name: cls._code for name, cls in KINDS.items() if cls._code is not None} == V1_CODES | ADT_CODES
    assert len({cls._kind for cls in KINDS.values()}) == len(KINDS)


@pytest.mark.parametrize("name", list(KINDS))
def test_declaration_matches_slots(name):
    """Each kind's declared fields, with its derived slots, are exactly its own slots; node fields
    of the kind's own sort are its children, the others annotations."""
    cls = KINDS[name]
    ki = kinds.info(cls)
    slots = {s for k in cls.__mro__ for s in k.__dict__.get("__slots__", ())} - set(Node.__slots__)
    names = [f.name for f in ki.fields]
    assert len(names) == len(set(names))
    stored = set(names) - ({ki.id_field} if ki.id_field not in slots else set())  # a Var's uid is its id
    assert stored | set(cls.__dict__.get("_derived", ())) == slots
    assert ki.id_field == ("uid" if name == "Var" else None)
    for f in ki.fields:
        assert (f in ki.children) == (f.node and issubclass(f.sort, ki.sort))
        assert (f in ki.annotations) == (f.node and f not in ki.children)
    assert [f.name for f in ki.binders] == {"Function": ["params"], "Let": ["var"]}.get(name, [])
    assert ki.custom_children == (name in ("Call", "DimPoly"))
    assert cls.__match_args__ == tuple(n for n in names if not n.startswith("_"))


def test_match_args_follow_the_declaration():
    """Structural pattern matching binds the declared fields positionally."""
    v = pyir.var("v")
    let = Let(v, pyir.const(1.0), v)
    match let:
        case Let(var, value, body):
            assert (var, value, body) == (v, let.value, v)
        case _:  # pragma: no cover
            pytest.fail("Let did not match")
    match TupleGetItem(Tuple([v]), 0):
        case TupleGetItem(Tuple(fields), index):
            assert fields == (v,) and index == 0
        case _:  # pragma: no cover
            pytest.fail("TupleGetItem did not match")


@settings(max_examples=25, deadline=None)
@given(pyir.testing.programs())
def test_derived_methods_agree_with_the_hand_written_ones(mod):
    """For random nodes of every kind: derived children() equals the hand-written one; the
    derived key digests to the id the hand-tuned constructor computed; the fields rebuild the
    node; replace_children / the functor's rebuild with the same children return the node
    itself, and with new children what the constructor builds."""
    nodes = _all_nodes(mod)
    assert {type(n).__name__ for n in nodes} == set(KINDS) - set(ADT_CODES)  # ADT kinds: tests/test_adt.py
    for n in nodes:
        name = type(n).__name__
        ki = kinds.info(type(n))
        kids = n.children()
        assert kids == HAND_CHILDREN[name](n) and type(kids) is tuple, name
        assert kinds.content_id(n) == n.id, name
        if ki.id_field is None:
            assert digest(key_bytes(n)) == n.id, name
        assert kinds.key_of(type(n), field_values(n)) == key_bytes(n)
        assert ki.make(*field_values(n)) is n, name
        if name != "Op":  # the summary: the declared bit, OR-ed with the children's (an Op's is its own)
            below = [x for f, v in zip(ki.fields, field_values(n)) if f in ki.children
                     for x in (v if f.many else () if v is None else (v,))]
            untyped = F_UNTYPED if name == "Var" and n.type_annotation is None else 0
            assert n._mask == functools.reduce(operator.or_, [c._mask for c in below], ki.bit | untyped)
        assert n.replace_children(kids) is n
        assert ki.rebuild(n, {c: c for c in kids}) is n
        if not kids:
            continue
        new = tuple(_new_child(n, i, c) for i, c in enumerate(kids))
        assert n.replace_children(new) is HAND_REBUILD[name](n, new), name
        repl = {c: _new_child(n, kids.index(c), c) for c in kids}  # one replacement per distinct child
        new = tuple(repl[c] for c in kids)
        assert ki.rebuild(n, repl) is HAND_REBUILD[name](n, new) is n.replace_children(new), name


@pytest.mark.parametrize("name", [k for k, c in KINDS.items()
                                  if "_derived" not in c.__dict__ and "_from_fields" not in c.__dict__])
def test_generic_build_finds_the_constructed_node(name):
    """``build(kind, fields)`` keys and compares like the hand-tuned constructor: it returns
    the node the constructor built, for every kind built from its fields."""
    for n in _reachable(_fixed_nodes()):
        if type(n).__name__ == name:
            assert build(type(n), field_values(n)) is n


def test_generic_build_of_a_new_node_is_canonical():
    """A node made by build() is the one the constructor then returns, with the same summary."""
    a, b = pyir.var("a", shape=(3,)), pyir.var("b", shape=(3,))
    t = build(Tuple, [(a, op.exp(b))])
    assert Tuple([a, op.exp(b)]) is t and t._mask == Tuple([a, b])._mask | op.exp(b)._mask
    g = build(TupleGetItem, [t, 1])
    assert TupleGetItem(t, 1) is g and g.id == digest(b"I1:" + t.id)
    with pytest.raises(pyir.WellFormedError, match=r"TupleGetItem\.index: expected a int value"):
        build(TupleGetItem, [t, True])  # 1 and True are different values
    with pytest.raises(pyir.WellFormedError, match=r"Tuple\.fields must be a tuple of Expr"):
        build(Tuple, [(a, TensorType(()))])
    with pytest.raises(pyir.InternalError, match="build it through Constant"):
        build(Constant, field_values(pyir.const(1.0)))


def test_replace_children_checks_arity_and_binder_sorts():
    """replace_children takes exactly the children; a bound variable can only become a Var."""
    x = pyir.var("x", shape=(2,))
    f = Function([x], op.exp(x))
    with pytest.raises(pyir.WellFormedError, match="2 children given, the node has 1"):
        op.exp(x).replace_children([x, x])
    with pytest.raises(pyir.WellFormedError):
        f.replace_children([pyir.const(1.0), f.body])
    with pytest.raises(pyir.WellFormedError, match="parameter"):
        kinds.info(Function).rebuild(f, {x: pyir.const(1.0), f.body: f.body})
    g = GlobalVar("g")
    assert Call(g, [x]).replace_children([GlobalVar("h"), x]) is Call(GlobalVar("h"), [x])


def test_derived_children_survive_depth():
    """The derived methods are flat (no recursion): a 10^5-deep let chain rebuilds fine."""
    x = pyir.var("x", shape=(1,))
    e: Expr = x
    for _ in range(100_000):
        v = pyir.Var("v")
        e = Let(v, op.exp(x), e if type(e) is not Var else v)
    same = pyir.rewrite(e, lambda n: None)
    assert same is e


def test_functor_tables_come_from_the_registry():
    """The visitors' hook tables and the mutators' rebuilds are derived from KINDS."""
    from pyir.rewrite import functor

    expr_kinds = [k for k in KINDS.values() if issubclass(k, Expr)]
    assert list(functor._KINDS) == expr_kinds and len(expr_kinds) == 16
    assert set(functor._FnMutator._hooks) == set(expr_kinds)
    assert all(functor._REBUILD[k] is kinds.info(k).rebuild for k in KINDS.values() if k._code is not None)
    n = dims.sym("n")
    assert functor.rebuild(n // 2, {n: dims.sym("k")}) is dims.sym("k") // 2  # pyir.ir.dims, imported later
    assert functor._REBUILD[Call] is Call._rebuild  # the hand-tuned one

    class Every(pyir.ExprMutator):
        pass

    for k in expr_kinds:
        setattr(Every, "visit_" + k.__name__, lambda self, n: n)
    assert set(type("Sub", (Every,), {})._hooks) == set(expr_kinds)


def test_serializer_tables_come_from_the_registry():
    """Kind codes, names and JSON record sizes derive from the declarations; the binary codes
    are the stable version-1 numbers."""
    from pyir.serialize import binary as serialize
    from pyir.serialize import json_format as serialize_json

    assert serialize._KIND_OF_TYPE == {c: (V1_CODES | ADT_CODES)[n] for n, c in KINDS.items()
                                       if n in V1_CODES or n in ADT_CODES}
    codes = V1_CODES | ADT_CODES
    assert {n: k for k, n in enumerate(serialize.KIND_NAMES) if n is not None} == codes
    assert serialize_json._KIND_OF_NAME == codes
    assert serialize_json._ARITY == {codes[n]: len(kinds.info(KINDS[n]).fields) for n in codes}
    # every core kind has a hand-tuned record; the ADT kinds are stored generically
    assert set(serialize._GENERIC) == set(ADT_CODES.values())


#: the kinds whose fields are all nodes: their hand-tuned records are the generic ones
_NODE_ONLY = ("Tuple", "Function", "Let", "If", "TupleType", "FuncType")


def test_hand_tuned_records_are_the_generic_ones():
    """For the kinds whose fields are all nodes, the hand-tuned binary and JSON records are
    exactly what the generic encoders derive from the declaration."""
    from pyir.serialize import binary as serialize
    from pyir.serialize import json_format as serialize_json

    t = TensorType((2,), "float32")
    x, y, v = pyir.var("x", t), pyir.var("y", t), pyir.Var("v", t)
    f = Function([x, y], If(x, Let(v, Tuple([x, y]), Tuple([v])), Tuple([y, x])), TupleType([t]))
    g = Function([], f, FuncType([t, t], TupleType([t])))  # no type annotations: records only
    cols = serialize._encode(g)
    blob = b"".join(bytes(b) for b in cols.blob) if type(cols.blob) is list else cols.blob
    table, end = serialize._build_nodes(cols.kinds, cols.ints, cols.strs, cols.ids, blob)  # emission order
    assert table[-1] is g and {type(n).__name__ for n in table} == {*_NODE_ONLY, "Var", "TensorType", "Attrs"}
    ix = {n: i for i, n in enumerate(table)}
    assert cols.ints[0] == 0  # no call signatures: the records start at 1
    p = 1
    for n in table:
        name = type(n).__name__
        if name == "Var":
            p += 3  # name, uid, type
        elif name == "TensorType":
            p += 2 + len(n.shape)
        elif name == "Attrs":
            p += 1  # empty
        else:
            gen: list[int] = []
            serialize._generic_record(n, kinds.info(type(n)), ix, serialize._Strings(), gen)
            assert cols.ints[p:p + len(gen)] == gen, name
            p += len(gen)
            assert serialize_json._node_record(n, ix) == serialize_json._generic_json(n, name, ix), name
    assert p == end


# -- malformed declarations are refused at class creation -------------------------------------------


def _declare(body: dict):
    ns = {"__module__": "pyir._test_kinds", "__slots__": ("a",), "_kind": b"\xfe", "_code": 250, **body}
    return type("Bad", (Expr,), ns, final=True)


@pytest.mark.parametrize("body, message", [
    ({}, "must declare _fields"),
    ({"_fields": (Child("b"),)}, "must be its slots"),
    ({"_fields": (Child("a"),), "_kind": b"L"}, "clashes with Let"),
    ({"_fields": (Child("a"),), "_code": 8}, "clashes with Let"),
    ({"_fields": (Child("a"),), "_kind": None}, "must declare _kind"),
    ({"__slots__": ("a", "b"), "_fields": (Children("a"), Child("b"))}, "key field 'a' is not delimited"),
    ({"_fields": (Scalar("a", str),), "_key_order": ("z",)}, "names no field"),
    ({"_fields": (Child("a"),), "children": lambda self: ()}, "must define replace_children"),
])
def test_malformed_declarations_raise_internal_error(body, message):
    """A declaration that does not match the class, or clashes with a kind, is an InternalError,
    and no kind is registered."""
    before = dict(KINDS)
    with pytest.raises(pyir.InternalError, match=message):
        _declare(body)
    assert KINDS == before


# -- a new kind: only its definition is written, everything generic derives ------------------------

_NEW_KIND = r'''
import importlib.util, os, sys
import numpy as np

# Load pyir's core modules first, declare the new kind, then the rest of the package: exactly
# the situation of a kind written in pyir/expr.py (every other layer imports after it exists).
root = os.path.dirname(os.path.abspath(sys.argv[1]))
spec = importlib.util.spec_from_file_location("pyir", os.path.join(root, "__init__.py"),
                                              submodule_search_locations=[root])
pkg = importlib.util.module_from_spec(spec)
sys.modules["pyir"] = pkg
from pyir.ir.expr import Expr
from pyir.ir.kinds import Child, Scalar
from pyir.ir.node import build


class Select(Expr, final=True):
    """``select(value, default, index)``: a made-up kind with two children and a scalar."""

    __module__ = "pyir.expr_extra"
    __slots__ = ("default", "index", "value")
    _kind = b"s"
    _code = 14
    _fields = (Child("value"), Child("default"), Scalar("index", int))

    def __new__(cls, value, default, index):
        return build(cls, (value, default, index))


spec.loader.exec_module(pkg)
import pyir
from pyir import op

x = pyir.var("x", shape=(2,))
s = Select(op.exp(x), x, 3)
assert Select(op.exp(x), x, 3) is s and s.children() == (op.exp(x), x)
assert pyir.ir.node.KINDS["Select"] is Select and Select.__match_args__ == ("value", "default", "index")
assert s.replace_children([x, x]) is Select(x, x, 3)
f = pyir.Function([x], s)
mod = pyir.Module({"main": f})                       # binders, free variables: derived walks
assert pyir.free_vars(s) == [x] and pyir.free_vars(f) == []
assert [type(n).__name__ for n in pyir.post_order(f)] == ["Var", "Call", "Select", "Function"]
y = pyir.var("y", shape=(2,))
g = pyir.Function([y], Select(op.exp(y), y, 3))
assert pyir.alpha_equal(f, g) and pyir.alpha_hash(f) == pyir.alpha_hash(g)
assert not pyir.alpha_equal(f, pyir.Function([y], Select(op.exp(y), y, 4)))
h = pyir.rewrite(f, lambda n: op.tanh(n.args[0]) if isinstance(n, pyir.Call) else None)
assert h.body is Select(op.tanh(x), x, 3)            # the functor rebuilds it from the declaration


class Count(pyir.ExprVisitor):
    seen = 0

    def visit_Select(self, n):                       # hooks are derived from the registry
        Count.seen += 1


Count().visit(f)
assert Count.seen == 1
assert "Select(%0, %x, index=3)" in pyir.astext(mod)  # generic text (the parser needs its syntax)
assert pyir.loads(pyir.dumps(mod))["main"] is f         # binary and JSON: generic records
assert pyir.from_json(pyir.to_json(mod))["main"] is f
assert '["Select", 4, 3, ["int", 3]]' in pyir.to_json(s)  # value, default, index
assert "Select index=3" in pyir.viz.to_dot(mod)
print("ok")
'''


def test_a_new_kind_needs_only_its_definition(tmp_path):
    """A kind declared like the built-in ones (here before the rest of pyir is imported, as if it
    were written in pyir/expr.py) gets children, rebuild, key, registry entry, the walks, the
    visitors and mutators, alpha equality and hashing, binary and JSON records, generic text and
    pictures without touching any other module."""
    import os
    import subprocess
    import sys

    script = tmp_path / "new_kind.py"
    script.write_text(_NEW_KIND)
    init = os.path.join(os.path.dirname(pyir.__file__), "__init__.py")
    r = subprocess.run([sys.executable, str(script), init], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-3000:]

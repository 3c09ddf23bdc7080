"""Hash-consing, identity, immutability, ids and the weak intern table."""

from __future__ import annotations

import copy
import gc
import math
import subprocess
import sys
import threading

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.ir.node import live_node_count


def _all_kinds():
    x = pyir.var("x", shape=(2, 2))
    t = pyir.TensorType((2, 2), "float32")
    c = pyir.const(np.arange(4, dtype="float32").reshape(2, 2))
    call = op.add(x, c)
    tup = pyir.Tuple([x, call])
    f = pyir.Function([x], call, t, {"Primitive": 1})
    v = pyir.Var("v")
    return {
        "Var": (x, lambda: x),
        "GlobalVar": (pyir.GlobalVar("g"), lambda: pyir.GlobalVar("g")),
        "Constant": (c, lambda: pyir.const(np.arange(4, dtype="float32").reshape(2, 2))),
        "Op": (pyir.Op("nn.relu"), lambda: pyir.Op("nn.relu")),
        "Call": (call, lambda: op.add(x, pyir.const(np.arange(4, dtype="float32").reshape(2, 2)))),
        "Tuple": (tup, lambda: pyir.Tuple([x, call])),
        "TupleGetItem": (pyir.TupleGetItem(tup, 1), lambda: pyir.TupleGetItem(pyir.Tuple([x, call]), 1)),
        "Function": (f, lambda: pyir.Function([x], call, pyir.TensorType([2, 2]), {"Primitive": 1})),
        "Let": (pyir.Let(v, call, v), lambda: pyir.Let(v, call, v)),
        "If": (pyir.If(pyir.const(True), x, call), lambda: pyir.If(pyir.const(True), x, call)),
        "TensorType": (t, lambda: pyir.TensorType((2, 2))),
        "TupleType": (pyir.TupleType([t, t]), lambda: pyir.TupleType([t, pyir.TensorType((2, 2))])),
        "FuncType": (pyir.FuncType([t], t), lambda: pyir.FuncType([t], t)),
        "Attrs": (pyir.Attrs({"a": (1, 2)}), lambda: pyir.Attrs(a=[1, 2])),
    }


KINDS = _all_kinds()


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rebuilding_returns_the_same_object(kind):
    """Building a node structurally equal to a live node returns that very object."""
    node, build = KINDS[kind]
    assert build() is node
    assert build() == node and hash(build()) == hash(node)
    assert len(node.id) == 16


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_nodes_are_immutable(kind):
    """Setting or deleting any attribute raises ImmutableError (also an AttributeError)."""
    node, _ = KINDS[kind]
    for name in [*type(node)._setters, "id", "new_attr"]:
        with pytest.raises(pyir.ImmutableError):
            setattr(node, name, None)
        with pytest.raises(AttributeError):
            delattr(node, name)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_copy_and_deepcopy_return_the_node(kind):
    """copy.copy and copy.deepcopy of a node are the node itself."""
    node, _ = KINDS[kind]
    assert copy.copy(node) is node
    assert copy.deepcopy(node) is node


def test_module_copy_is_identity_and_module_is_immutable():
    """Modules copy in O(1) (they are their own copies) and refuse mutation."""
    m = pyir.testing.resnet(1)
    assert copy.copy(m) is m and copy.deepcopy(m) is m
    with pytest.raises(pyir.ImmutableError):
        m._funcs = None
    m2 = m.with_function("aux", m["main"])
    assert "aux" not in m and "aux" in m2 and m2["aux"] is m["main"]


def test_vars_are_unique_by_construction():
    """pyir.var("x") twice gives two different variables; the uid re-creates the same one."""
    a, b = pyir.var("x"), pyir.var("x")
    assert a is not b and a.uid != b.uid and a.id != b.id
    assert pyir.Var("x", None, uid=a.uid) is a
    with pytest.raises(pyir.WellFormedError):
        pyir.Var("y", None, uid=a.uid)


def test_constant_scalars_are_keyed_with_type_and_sign():
    """1, 1.0 and True are distinct constants; so are 0.0 and -0.0; NaN interns consistently."""
    assert pyir.const(0.0) is pyir.const(0.0)
    assert len({pyir.const(1), pyir.const(1.0), pyir.const(True)}) == 3
    assert pyir.const(0.0) is not pyir.const(-0.0)
    assert pyir.const(math.nan) is pyir.const(float("nan"))
    assert pyir.const(np.float32(1.0)) is pyir.const(1.0)
    assert pyir.const(1.0).dtype == "float32" and pyir.const(1).dtype == "int32"
    assert pyir.const(1.0, "float64") is not pyir.const(1.0)


def test_attrs_are_keyed_with_type():
    """Attribute values 1, 1.0 and True differ, so do 0.0 and -0.0; lists become tuples."""
    vals = [pyir.Attrs(a=1), pyir.Attrs(a=1.0), pyir.Attrs(a=True), pyir.Attrs(a=0.0),
            pyir.Attrs(a=-0.0), pyir.Attrs(a=(1,)), pyir.Attrs(a="1")]
    assert len(set(vals)) == len(vals)
    assert pyir.Attrs(a=[1, [2]])["a"] == (1, (2,))
    with pytest.raises(pyir.AttrError):
        pyir.Attrs(a={1: 2})
    with pytest.raises(pyir.AttrError):
        pyir.Attrs(a=np.zeros(3))


def test_constant_data_is_read_only_and_copied():
    """A Constant stores a read-only copy: mutating the source array changes nothing."""
    src = np.zeros(3, "float32")
    c = pyir.const(src)
    src[0] = 5
    assert c.data[0] == 0
    with pytest.raises(ValueError):
        c.data[0] = 1


@pytest.mark.parametrize("value", [np.float32(2.5), np.zeros((0, 3), "float32"), np.arange(6).reshape(2, 3),
                                   np.array([True, False])])
def test_constant_data_cannot_be_made_writable(value):
    """An interned Constant's array does not own its memory, so setflags(write=True) fails."""
    c = pyir.const(value)
    assert c.shape == np.shape(value) and c.data.dtype == np.asarray(value).dtype
    with pytest.raises(ValueError):
        c.data.setflags(write=True)
    assert not c.data.flags.writeable


@pytest.mark.parametrize("dtype", ["f4", "f8", "i2", "i8", "u4", "c8"])
def test_constants_are_canonical_across_byte_order(dtype):
    """Big- and little-endian arrays of equal values are one Constant, stored in native order."""
    big = np.array([1, 2, 300], ">" + dtype)
    little = np.array([1, 2, 300], "<" + dtype)
    c = pyir.const(big)
    assert c is pyir.const(little) and c.data.dtype.isnative
    np.testing.assert_array_equal(c.data, little)
    x = pyir.var("x", shape=(3,), dtype=c.dtype)
    mod = pyir.Module.from_expr(op.add(x, c))
    back = pyir.parse(mod.astext())
    assert back["main"].body.args[1] is c


def test_op_calls_with_equal_attrs_are_one_node():
    """Two calls of one op on the same args with the same (normalized) attrs are one object."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    a = op.nn.conv2d(x, w, strides=(1, 1), padding=1)
    b = op.nn.conv2d(x, w, padding=[1, 1, 1, 1])
    c = pyir.Call("nn.conv2d", [x, w], {"padding": (1, 1)})
    assert a is b is c
    assert op.nn.conv2d(x, w, padding=2) is not a


def test_unknown_ops_and_bad_attrs_fail_clearly():
    """Unknown ops and wrong/missing/unknown attrs raise pyir errors naming op and attribute."""
    x = pyir.var("x", shape=(2,))
    with pytest.raises(pyir.UnknownOpError, match="no_such_op"):
        pyir.Op("no_such_op")
    with pytest.raises(pyir.AttrError, match=r"clip.*a_min"):
        op.clip(x, a_max=1.0)
    with pytest.raises(pyir.AttrError, match=r"'cast'.*'dtype'"):
        op.cast(x, dtype="not-a-dtype")
    with pytest.raises(pyir.AttrError, match=r"unknown attribute.*bogus"):
        op.nn.relu(x, bogus=1)
    with pytest.raises(pyir.AttrError, match="'axis'"):
        op.sum(x, axis="0")


def test_attrs_index_is_read_only():
    """The lookup index of an Attrs cannot be mutated."""
    a = pyir.Attrs(axis=1)
    with pytest.raises(TypeError):
        a._index["axis"] = 2  # type: ignore[index]
    assert a["axis"] == 1 and a.get("axis") == 1 and "axis" in a and pyir.Attrs(axis=1) is a


def test_content_ids_are_deterministic_and_structural():
    """A variable-free expression has the same id however and whenever it is built."""
    e1 = op.add(pyir.const(1.0), op.multiply(pyir.const(2.0), pyir.const(3.0)))
    id1 = e1.id
    del e1
    gc.collect()
    e2 = op.add(pyir.const(1.0), op.multiply(pyir.const(2.0), pyir.const(3.0)))
    assert e2.id == id1
    assert op.add(pyir.const(1.0), pyir.const(2.0)).id != op.add(pyir.const(2.0), pyir.const(1.0)).id


_ID_SCRIPT = """
import numpy as np, pyir
from pyir import op
e = op.nn.relu(op.add(pyir.const(np.arange(6, dtype="float32").reshape(2, 3)), pyir.const(1.0)))
e = pyir.Tuple([e, op.sum(e, axis=[1])])
print(e.id.hex(), pyir.var("x").uid.hex())
"""


def test_ids_are_equal_across_processes_and_var_uids_are_not():
    """Variable-free expressions get the same id in two processes; fresh Var uids differ."""
    outs = [subprocess.run([sys.executable, "-c", _ID_SCRIPT], check=True, capture_output=True,
                           text=True).stdout.split() for _ in range(2)]
    assert outs[0][0] == outs[1][0]
    assert outs[0][1] != outs[1][1]
    ns: dict = {}
    exec(_ID_SCRIPT.replace("print(", "result = ("), ns)
    assert ns["result"][0] == outs[0][0]


def test_intern_table_is_weak():
    """Building 10^5 nodes and dropping them shrinks the intern table back."""
    gc.collect()
    before = live_node_count()
    x = pyir.var("x", shape=(4,))
    h = x
    for i in range(100_000):
        h = op.add(h, pyir.const(float(i)))
    assert live_node_count() > before + 100_000
    del h
    gc.collect()
    assert live_node_count() <= before + 3


def test_forced_digest_collisions_keep_interning_exact(monkeypatch):
    """If two different nodes share a digest, both live, with distinct ids; rebuilding finds each."""
    import pyir.ir.node as node_mod

    real = node_mod.digest
    monkeypatch.setattr(node_mod, "digest", lambda b: real(b[:1]))  # collide every node of one kind
    monkeypatch.setattr(pyir.ir.types, "digest", node_mod.digest)
    # shapes no other test builds: a node made before the digest was forced keeps its real key
    a = pyir.TensorType((3, 1, 7907), "float32")
    b = pyir.TensorType((3, 1, 7919), "float32")
    assert a is not b and a.id != b.id
    assert pyir.TensorType((3, 1, 7907)) is a and pyir.TensorType((3, 1, 7919)) is b
    assert pyir.TensorType([3, 1, 7907]) is a and pyir.TensorType([3, 1, 7919]) is b  # uncached path


def test_forced_collisions_stay_exact_after_the_chain_head_dies(monkeypatch):
    """A node re-keyed past a collision is still found after the node that held its key is freed."""
    import pyir.ir.node as node_mod

    real = node_mod.digest
    collided_before = set(node_mod._collided)
    monkeypatch.setattr(node_mod, "digest", lambda b: real(b[:1]))  # collide every node of one kind
    monkeypatch.setattr(pyir.ir.types, "digest", node_mod.digest)
    monkeypatch.setattr(pyir.ir.expr, "digest", node_mod.digest)
    monkeypatch.setattr(pyir.op.registry, "digest", node_mod.digest)  # the builders' inlined path
    try:
        a = pyir.TensorType((3, 1, 17), "float32")
        b = pyir.TensorType((3, 1, 18), "float32")
        b_id = b.id
        assert a.id != b_id
        del a
        gc.collect()
        assert pyir.TensorType((3, 1, 18)) is b and b.id == b_id
        assert pyir.TensorType([3, 1, 18]) is b  # the uncached path probes past the dead head
        x = pyir.var("x")
        ca = op.exp(x)
        cb = op.log(x)  # re-keyed: its digest collides with ca's
        del ca
        gc.collect()
        assert op.log(x) is cb  # the Call hit path
        assert pyir.Call(cb.op, [x]) is cb
        assert pyir.TensorType((3, 1, 17)) is not b and op.exp(x) is not cb
    finally:
        del_keys = node_mod._collided - collided_before
        node_mod._collided.difference_update(del_keys)


# ids of variable-free calls of 1, 4, 5 and 9 arguments and of qnn.qlinear_conv (9 inputs), as
# built before make_call unrolled four arguments and inlined its miss path: the key bytes are
# unchanged, so every saved program keeps its ids
_CALL_IDS = {1: "ee850cc15e06842af487f8238b53e3df", 4: "7da44cd0e0eff6e30faeef4ac55fc1c9",
             5: "c46ff8516ab8cd02b51a75f0bee02709", 9: "20db453289764864a70577ef7845b35a"}
_QLINEAR_CONV_ID = "f58a9bf260ab22d827b56452c6d663ec"


def _int8_consts(n: int) -> list:
    return [pyir.const(np.full((1, 2, 3, 3), i, dtype="int8")) for i in range(n)]


def test_call_ids_of_many_arguments_are_pinned():
    """The content id of a Call is the digest of ``C``, op, attrs and argument ids, at every arity."""
    from pyir.ir.expr import make_call
    from pyir.ir.node import EMPTY_ATTRS, digest

    cs = _int8_consts(9)
    f = pyir.GlobalVar("f")
    for n, hexid in _CALL_IDS.items():
        c = pyir.Call(f, cs[:n])
        assert c.id.hex() == hexid
        assert make_call(f, tuple(cs[:n]), EMPTY_ATTRS) is c
    q = op.qnn.qlinear_conv(*cs, strides=(1, 1), padding=(1, 1))
    assert q.id.hex() == _QLINEAR_CONV_ID
    assert pyir.Call(q.op, cs, q.attrs) is q and make_call(q.op, tuple(cs), q.attrs) is q
    for n in range(10):  # every unrolled arity and the loop: the documented key, the union mask
        args = tuple(pyir.var(f"a{i}", shape=(2,)) for i in range(n))
        c = make_call(f, args, EMPTY_ATTRS)
        assert type(c) is pyir.Call and c.op is f and c.args is args and c.attrs is EMPTY_ATTRS
        assert c.id == digest(b"C" + f.id + EMPTY_ATTRS.id + b"".join(a.id for a in args))
        mask = f._mask
        for a in args:
            mask |= a._mask
        assert c._mask == mask
        assert make_call(f, tuple(args), EMPTY_ATTRS) is c and pyir.Call(f, list(args)) is c
        if n >= 2:  # the arguments' order is part of the key
            assert make_call(f, args[::-1], EMPTY_ATTRS) is not c


def test_many_argument_calls_stay_exact_under_forced_collisions(monkeypatch):
    """Calls of 4 and 9 arguments whose digests collide are distinct nodes, each found again
    (make_call's inlined miss path and the builders' leave a collided key to new_call)."""
    import pyir.ir.expr as expr_mod
    import pyir.ir.node as node_mod
    from pyir.ir.node import EMPTY_ATTRS

    real = node_mod.digest
    collided_before = set(node_mod._collided)
    forced = lambda b: real(b[:1])  # noqa: E731  # every Call collides
    monkeypatch.setattr(expr_mod, "digest", forced)
    monkeypatch.setattr(pyir.op.registry, "digest", forced)
    try:
        f = pyir.GlobalVar("f")
        xs = [pyir.var(f"x{i}", shape=(1, 2, 3, 3), dtype="int8") for i in range(10)]
        made = []
        for n in (4, 9):
            a = expr_mod.make_call(f, tuple(xs[:n]), EMPTY_ATTRS)
            b = expr_mod.make_call(f, tuple(xs[1:n + 1]), EMPTY_ATTRS)
            assert a is not b and a.id != b.id and a.args == tuple(xs[:n])
            made += [a, b]
        q1 = op.qnn.qlinear_conv(*xs[:9])
        q2 = op.qnn.qlinear_conv(*xs[1:])
        assert q1 is not q2 and q1.id != q2.id
        del made[0]
        gc.collect()  # the head of the chain dies: the others are still found
        assert expr_mod.make_call(f, tuple(xs[1:5]), EMPTY_ATTRS) is made[0]
        assert pyir.Call(f, xs[1:10]) is made[2] and op.qnn.qlinear_conv(*xs[1:]) is q2
        assert op.qnn.qlinear_conv(*xs[:9]) is q1
    finally:
        node_mod._collided.difference_update(node_mod._collided - collided_before)


def test_many_argument_interning_is_thread_safe():
    """Threads building the same 4- and 9-argument calls at once get one object per call."""
    from pyir.ir.expr import make_call
    from pyir.ir.node import EMPTY_ATTRS

    f = pyir.GlobalVar("f")
    xs = [pyir.var(f"x{i}", shape=(3,)) for i in range(12)]
    results: list[list] = [[] for _ in range(4)]
    barrier = threading.Barrier(4)

    def work(slot):
        barrier.wait()
        out = []
        for i in range(500):
            h = make_call(f, (xs[i % 3], xs[3], xs[4], pyir.const(float(i))), EMPTY_ATTRS)
            out.append(h)
            out.append(make_call(f, (h, *xs[:8]), EMPTY_ATTRS))
        results[slot] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results[1:]:
        assert len(r) == len(results[0]) == 1000
        assert all(a is b for a, b in zip(r, results[0]))


def test_interning_is_thread_safe():
    """Threads building the same structures at once get one canonical object per structure."""
    results: list[list] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)
    x = pyir.var("x", shape=(3,))

    def work(slot):
        barrier.wait()
        h = x
        out = []
        for i in range(3000):
            h = op.add(h, pyir.const(float(i % 17)))
            out.append(h)
        results[slot] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results[1:]:
        assert len(r) == len(results[0])
        assert all(a is b for a, b in zip(r, results[0]))


def test_equality_is_identity_even_with_arithmetic_sugar():
    """Expr defines + - * / for building, but == stays identity."""
    x = pyir.var("x", shape=(2,))
    assert (x + 1.0) is op.add(x, pyir.const(1.0))
    assert (x * x) == (x * x)
    assert (x * x) != (x + x)
    assert -x is op.negative(x)


def test_deep_chain_is_freed_without_recursion():
    """Dropping the last reference to a 10^6-deep chain frees it (no RecursionError, no crash)."""
    gc.collect()
    before = live_node_count()
    with pyir.ir.node.gc_paused():
        x = pyir.var("x", shape=(2,))
        h = x
        for _ in range(10**6):
            h = op.negative(h)
    assert live_node_count() >= before + 10**6
    del h, x
    gc.collect()
    assert live_node_count() <= before + 2


_X = pyir.var("x")
_BAD_INPUTS = {
    "TensorType shape str": (lambda: pyir.TensorType("ab"), pyir.WellFormedError),
    "var shape str": (lambda: pyir.var("x", shape="ab"), pyir.WellFormedError),
    "TensorType str dtype": (lambda: pyir.TensorType((2,), "U5"), pyir.WellFormedError),
    "TensorType datetime dtype": (lambda: pyir.TensorType((2,), "datetime64[s]"), pyir.WellFormedError),
    "Tuple of int": (lambda: pyir.Tuple(3), pyir.WellFormedError),
    "TupleType of int": (lambda: pyir.TupleType(3), pyir.WellFormedError),
    "Function params int": (lambda: pyir.Function(3, _X), pyir.WellFormedError),
    "Call args int": (lambda: pyir.Call("exp", 3), pyir.WellFormedError),
    "ragged const": (lambda: pyir.const([[1], [1, 2]]), pyir.WellFormedError),
    "find bad hex id": (lambda: pyir.Module.from_expr(op.exp(_X)).find("zz" * 16), pyir.LineageError),
    "origins since str": (lambda: pyir.Module.from_expr(op.exp(_X)).origins(_X, since="a"),
                          pyir.LineageError),
}


@pytest.mark.parametrize("case", sorted(_BAD_INPUTS))
def test_bad_user_input_raises_pyir_errors(case):
    """Malformed constructor/query arguments raise the matching pyir error, not a bare built-in."""
    build, err = _BAD_INPUTS[case]
    with pytest.raises(err):
        build()


# -- issue 11 item 5: construction caches -----------------------------------------------------------


def _uncached_attrs(name, kw):
    """What the schema makes of ``kw`` without any cache."""
    return pyir.op.get_op_def(name)._normalize(dict(kw))


@pytest.mark.parametrize("name, variants", [
    # each group: values that Python's == / hash merge, but that pyir keys apart (or rejects)
    ("nn.leaky_relu", [{"alpha": 0.0}, {"alpha": -0.0}, {"alpha": 0}, {"alpha": False}, {"alpha": 1},
                       {"alpha": 1.0}, {"alpha": True}, {"alpha": math.nan}, {"alpha": -math.nan},
                       {"alpha": np.float32(1.0)}, {"alpha": np.int32(1065353216)}, {"alpha": "1"},
                       {"alpha": "\ud800"}, {"alpha": [1.0]}, {"alpha": None}]),
    ("argmax", [{"axis": 1}, {"axis": True}, {"axis": 1.0}, {"keepdims": 1}, {"keepdims": True},
                {"keepdims": 1.0}, {"keepdims": 0}, {"keepdims": False},
                # marshal spells buffers alike: a numpy int and its bytes must not share an entry
                {"axis": np.int64(1)}, {"axis": b"\x01\x00\x00\x00\x00\x00\x00\x00"},
                {"axis": np.int32(1)}, {"axis": np.float32(1.0)}, {"axis": np.int32(1065353216)},
                {"axis": np.arange(4)[::2]}, {"keepdims": np.arange(4)[::2]}]),  # no buffer export
    ("nn.conv2d", [{"padding": (1, 1)}, {"padding": (True, True)}, {"padding": (1.0, 1.0)},
                   {"padding": (1, (1,))}, {"padding": [1, 1]}, {"padding": 1}, {"padding": True},
                   {"padding": ((1,),)}, {"strides": (2, 2), "padding": (1, 1)},
                   {"padding": (1, 1), "strides": (2, 2)}, {"out_dtype": "float16"}]),
    ("clip", [{"a_min": 0.0, "a_max": 6.0}, {"a_min": -0.0, "a_max": 6.0}, {"a_min": 0, "a_max": 6},
              {"a_min": False, "a_max": 6.0}]),
    ("transpose", [{"axes": (1, 0)}, {"axes": (True, False)}, {"axes": None}, {}]),
])
def test_attribute_cache_returns_exactly_the_uncached_result(name, variants):
    """issue 11 item 5: the builders' attribute cache is type-exact -- 1, 1.0 and True, 0.0 and
    -0.0, (1,) and (True,), nested tuples -- and its hit returns the very Attrs the uncached
    normalization builds (or raises the same error), in any order of first use."""
    odef = pyir.op.get_op_def(name)
    inputs = {"nn.conv2d": 2}.get(name, 1)
    x = pyir.var("x", shape=(1, 4, 8, 8))
    builder = getattr(op.nn, name[3:]) if name.startswith("nn.") else getattr(op, name)
    for order in (variants, variants[::-1], variants + variants):
        odef._cache.clear()
        keep = []
        for kw in order:
            try:
                expected = _uncached_attrs(name, kw)
            except pyir.AttrError as e:
                with pytest.raises(pyir.AttrError) as got:
                    builder(*[x] * inputs, **kw)
                assert str(got.value) == str(e)
                with pytest.raises(pyir.AttrError):
                    pyir.Call(pyir.Op(name), [x] * inputs, kw)
                continue
            c = builder(*[x] * inputs, **kw)
            keep.append(c)
            assert c.attrs is expected
            assert pyir.Call(pyir.Op(name), [x] * inputs, kw).attrs is expected  # the dict path
            assert pyir.Call(pyir.Op(name), [x] * inputs, expected) is c  # the Attrs path
            assert builder(*[x] * inputs, **kw) is c  # now a hit


def test_attribute_cache_keeps_typed_scalars_apart():
    """issue 11 item 5: leaky_relu(alpha=0.0) / (alpha=-0.0) and 1 / 1.0 / True stay different
    calls through the cache (and through Attrs itself: nested tuples compare typed)."""
    x = pyir.var("x", shape=(3,))
    a, b = op.nn.leaky_relu(x, alpha=0.0), op.nn.leaky_relu(x, alpha=-0.0)
    assert a is not b and math.copysign(1, b.attrs["alpha"]) == -1
    assert op.nn.leaky_relu(x, alpha=-0.0) is b and op.nn.leaky_relu(x, alpha=0.0) is a
    assert op.nn.leaky_relu(x, alpha=0) is a  # the float kind converts 0 to 0.0
    for v, w in [(1, 1.0), (1, True), (0.0, -0.0), ("a", "a\x00"), ((1, (2,)), (1, (2.0,))),
                 ((1, (0.0,)), (1, (-0.0,))), ((1, (True,)), (1, (1,))), (math.nan, -math.nan)]:
        assert pyir.Attrs(v=v) is not pyir.Attrs(v=w)
        assert pyir.Attrs(v=v) is pyir.Attrs(v=v) and pyir.Attrs(v=w) is pyir.Attrs(v=w)


def test_attribute_cache_is_bounded_and_weak():
    """issue 11 item 5: the attribute cache holds at most ATTR_CACHE_MAX entries per operator and
    keeps no node alive."""
    import weakref

    from pyir.op.registry import ATTR_CACHE_MAX

    odef = pyir.op.get_op_def("nn.leaky_relu")
    x = pyir.var("x", shape=(3,))
    calls = [op.nn.leaky_relu(x, alpha=i / 7) for i in range(3 * ATTR_CACHE_MAX)]
    assert 0 < len(odef._cache) <= ATTR_CACHE_MAX
    assert op.nn.leaky_relu(x, alpha=1 / 7) is calls[1]
    ref = weakref.ref(calls[-1].attrs)
    del calls
    gc.collect()
    assert ref() is None


def test_tensor_type_cache_is_exact_bounded_and_weak():
    """issue 11 item 5: the TensorType cache returns the type the uncached path builds, only
    for exact ints (True, 1.0 and deep tuples as dimensions are still errors), is bounded and
    keeps no type alive."""
    import weakref

    from pyir.ir.types import TENSOR_TYPE_CACHE_MAX, _tt_cache

    t = pyir.TensorType((1, 3), "float32")
    assert pyir.TensorType((1, 3), "float32") is t is pyir.TensorType([1, 3])
    assert pyir.TensorType((np.int64(1), 3)) is t and pyir.TensorType((1, 3), np.float32) is t
    assert pyir.TensorType((1, 3), "f4") is t
    deep: tuple = ()
    for _ in range(200_000):
        deep = (deep,)
    for bad in [(True, 3), (1.0, 3), (1, 3.0), (deep, 3), ([1], 3), (1, -3)]:
        with pytest.raises(pyir.WellFormedError):
            pyir.TensorType(bad, "float32")
    assert pyir.TensorType((1, 3), "float32") is t
    ts = [pyir.TensorType((i, 5)) for i in range(2 * TENSOR_TYPE_CACHE_MAX)]
    assert 0 < len(_tt_cache) <= TENSOR_TYPE_CACHE_MAX
    ref = weakref.ref(ts[-1])
    del ts
    gc.collect()
    assert ref() is None


def test_deep_tuple_attribute_is_an_attr_error():
    """issue 11 item 5 (found while adding the attribute cache): a deep tuple given to a builder
    is an AttrError, neither a RecursionError from its repr nor a crash from hashing it."""
    deep: tuple = ()
    for _ in range(200_000):
        deep = (deep,)
    x, w = pyir.var("x", shape=(1, 4, 8, 8)), pyir.var("w", shape=(4, 4, 3, 3))
    for kw in [{"padding": deep}, {"padding": (1, deep)}, {"out_dtype": deep}]:
        with pytest.raises(pyir.AttrError):
            op.nn.conv2d(x, w, **kw)
    with pytest.raises(pyir.AttrError):
        op.sum(x, axis=deep)


def test_construction_caches_are_thread_safe():
    """issue 11 item 5: threads building the same calls with the same attributes and types at
    once (caches cold and being cleared) get one canonical object each."""
    from pyir.op.registry import ATTR_CACHE_MAX

    n_threads = 6
    results: list[list] = [[] for _ in range(n_threads)]
    barrier = threading.Barrier(n_threads)
    x = pyir.var("x", shape=(1, 4, 8, 8))
    w = pyir.var("w", shape=(4, 4, 3, 3))

    def work(slot):
        barrier.wait()
        out = []
        for i in range(2 * ATTR_CACHE_MAX):
            out.append(op.nn.conv2d(x, w, padding=(i % 3, i), strides=(1, 1 + i % 2)))
            out.append(op.nn.leaky_relu(x, alpha=float(i)))
            out.append(pyir.TensorType((i, 4, 3)))
        results[slot] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results[1:]:
        assert len(r) == len(results[0])
        assert all(a is b for a, b in zip(r, results[0]))


def test_fresh_vars_are_interned_and_found_by_uid():
    """issue 11 item 5: the direct insertion of fresh variables keeps them in the intern table:
    Var with an existing uid returns the variable, and another name or type is an error."""
    t = pyir.TensorType((2,))
    v = pyir.Var("v", t)
    assert pyir.Var("v", t, v.uid) is v
    with pytest.raises(pyir.WellFormedError):
        pyir.Var("other", t, v.uid)
    with pytest.raises(pyir.WellFormedError):
        pyir.Var("v", None, v.uid)
    before = live_node_count()
    vs = [pyir.Var("v", t) for _ in range(1000)]
    assert live_node_count() >= before + 1000 and len({u.uid for u in vs}) == 1000


# -- issue 11 item 5 / issue 10 (lighter nodes): var ids, uids, masks, builder twins, caches --


def test_a_vars_id_is_its_uid_and_survives_a_round_trip():
    """A Var's id is its uid (the same bytes object): a fresh var, a var rebuilt from its uid, a
    var loaded from both formats."""
    t = pyir.TensorType((3,))
    v = pyir.Var("v", t)
    assert v.id is v.uid and len(v.uid) == 16
    u = bytes(range(16))
    w = pyir.Var("w", None, uid=u)
    assert w.id == u == w.uid and pyir.Var("w", None, uid=bytes(range(16))) is w
    m = pyir.Module({"main": pyir.Function([v], op.exp(v))})
    for loaded in (pyir.loads(pyir.dumps(m)), pyir.from_json(pyir.to_json(m))):
        assert loaded["main"] is m["main"] and loaded["main"].params[0].id == v.uid


def test_a_given_uid_that_is_a_live_nodes_id_is_an_error():
    """A var's key is its uid: a given uid equal to the id of a live node of another kind (only
    a forged one can be) is a WellFormedError, also through the loaders (SerializationError);
    such a node is never shadowed or re-keyed."""
    x = pyir.var("x", shape=(2,))
    c = op.nn.relu(x)
    with pytest.raises(pyir.WellFormedError, match="live Call"):
        pyir.Var("v", None, uid=c.id)
    assert op.nn.relu(x) is c
    m = pyir.Module({"main": pyir.Function([x], c)})
    forged = pyir.to_json(m).replace(x.uid.hex(), c.id.hex())
    with pytest.raises(pyir.SerializationError):
        pyir.from_json(forged)


def test_a_var_built_where_a_node_lives_is_found_past_it(monkeypatch):
    """The (impossible) clash of a fresh uid with a live node's id draws another uid, and a Call
    whose digest is a live var's uid is re-keyed and still found (the collision probe)."""
    import pyir.ir.expr as expr_mod
    import pyir.ir.node as node_mod

    x = pyir.var("x", shape=(2,))
    c = op.exp(x)
    uids = iter([c.id, bytes(range(1, 17))])
    monkeypatch.setattr(expr_mod, "_next_uid", lambda: next(uids))
    v = pyir.Var("v")
    assert v.uid == bytes(range(1, 17)) and op.exp(x) is c
    monkeypatch.undo()
    collided_before = set(node_mod._collided)
    try:
        real = node_mod.digest
        target = pyir.var("t")  # a live var: the forced digest of the next call is its uid
        monkeypatch.setattr(pyir.op.registry, "digest", lambda b: target.uid if b[:1] == b"C" else real(b))
        monkeypatch.setattr(expr_mod, "digest", pyir.op.registry.digest)
        y = pyir.var("y", shape=(2,))
        ty = op.tanh(y)
        assert ty.id != target.uid and type(ty) is pyir.Call
        assert op.tanh(y) is ty and pyir.Call(ty.op, [y]) is ty
        assert pyir.Var("t", None, uid=target.uid) is target
    finally:
        node_mod._collided.difference_update(node_mod._collided - collided_before)


def test_fresh_uids_are_unique_across_threads():
    """Uids come from one C-level counter: threads drawing at once never get the same uid."""
    n_threads, per = 8, 5000
    out: list[list] = [[] for _ in range(n_threads)]
    barrier = threading.Barrier(n_threads)

    def work(slot):
        barrier.wait()
        out[slot] = [pyir.Var("v") for _ in range(per)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    uids = {v.uid for vs in out for v in vs}
    assert len(uids) == n_threads * per
    assert all(pyir.Var("v", None, uid=v.uid) is v for vs in out for v in vs[:50])


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_forked_child_draws_other_uids():
    """After os.fork the child gets a new random uid prefix (else parent and child would make
    variables with the same uids, and merging their results would clash)."""
    import os

    r, w = os.pipe()
    parent = pyir.Var("p").uid
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.write(w, pyir.Var("c").uid)
        finally:
            os._exit(0)
    os.close(w)
    child = os.read(r, 16)
    os.close(r)
    os.waitpid(pid, 0)
    assert len(child) == 16 and child[:8] != parent[:8]
    assert child != pyir.Var("p2").uid


def test_masks_are_shared_ints_equal_to_the_or_of_the_children():
    """Masks are interned (nodes with equal masks share one int object) and still the OR of
    the children's masks and the node's own bit; the mask table is bounded."""
    import pyir.ir.node as node_mod
    from pyir.ir.node import F_CONST, F_FUNC, F_LET, F_TUPLE, F_VAR, MASK_TABLE_MAX

    x, y = pyir.var("x", shape=(4,)), pyir.var("y", shape=(4,))
    relu_bit, exp_bit = pyir.Op("nn.relu")._mask, pyir.Op("exp")._mask
    a, b = op.nn.relu(op.exp(x)), op.nn.relu(op.exp(y))
    assert a._mask == b._mask == relu_bit | exp_bit | F_VAR and a._mask is b._mask
    t = pyir.Tuple([a, pyir.const(1.0)])
    assert t._mask == a._mask | F_TUPLE | F_CONST
    v = pyir.var("v")
    let = pyir.Let(v, a, v)
    f = pyir.Function([x], a)
    assert let._mask == F_LET | v._mask | a._mask and f._mask == F_FUNC | a._mask
    assert pyir.TensorType((4,))._mask == 0 and pyir.Attrs(a=1)._mask == 0
    for i in range(MASK_TABLE_MAX + 10):  # distinct values: the table is cleared when full
        node_mod.intern_mask((1 << 200) + i)
    assert 0 < len(node_mod._masks) <= MASK_TABLE_MAX
    assert node_mod.intern_mask(relu_bit | exp_bit | F_VAR) == a._mask


def test_builder_twins_never_escape():
    """The fast paths fill nodes in as private twins and turn them into their kind before
    publishing: every node has its kind's exact type and is immutable."""
    from pyir.ir.node import builder_twin

    x = pyir.var("x", shape=(2, 2))
    nodes = [x, pyir.TensorType((7, 7)), op.nn.relu(x), op.add(x, x), op.nn.softmax(x, axis=0),
             op.concatenate(pyir.Tuple([x, x]), axis=0), op.concatenate([x, x], axis=0), pyir.Tuple([x]),
             pyir.TupleGetItem(pyir.Tuple([x]), 0),
             pyir.Function([x], x), pyir.Let(pyir.var("v"), x, x), pyir.If(pyir.const(True), x, x),
             pyir.const(3.5), pyir.const(np.arange(3))]
    kinds = {pyir.Var, pyir.TensorType, pyir.Call, pyir.Tuple, pyir.TupleGetItem, pyir.Function, pyir.Let,
             pyir.If, pyir.Constant}
    for n in nodes:
        assert type(n) in kinds and not type(n).__name__.endswith("Builder")
        with pytest.raises(pyir.ImmutableError):
            n.id = b"x" * 16
    twin = builder_twin(pyir.Tuple)
    assert twin.__mro__[1] is pyir.Expr and twin.__slots__ == pyir.Tuple.__slots__


def test_op_nodes_and_builder_errors():
    """Op(name) is one node per operator (cached); an unknown name is still UnknownOpError; a
    builder given attributes its operator does not have, or the wrong number of inputs, raises
    pyir errors (AttrError, TypeCheckError), never a bare TypeError."""
    assert pyir.Op("nn.relu") is pyir.Op("nn.relu") is op.nn.relu.op
    with pytest.raises(pyir.UnknownOpError):
        pyir.Op("no.such.op")
    x = pyir.var("x", shape=(2,))
    with pytest.raises(pyir.AttrError):
        op.nn.relu(x, alpha=1)
    with pytest.raises(pyir.AttrError):
        op.add(x, x, axis=0)
    for bad in [(), (x, x)]:
        with pytest.raises(pyir.TypeCheckError):
            op.nn.relu(*bad)
    with pytest.raises(pyir.TypeCheckError):
        op.nn.softmax(x, x, axis=0)
    with pytest.raises(pyir.TypeCheckError):
        op.add(x)


def test_scalar_constant_cache_is_exact_bounded_and_weak():
    """The Python-scalar constant cache returns what the uncached path builds: type, sign, NaN
    payload and dtype kept apart; bounded; holds no constant alive."""
    import struct
    import weakref

    from pyir.ir.expr import CONST_CACHE_MAX, _const_cache

    nan2 = struct.unpack("<d", struct.pack("<Q", 0x7FF8000000000001))[0]
    values = [0.0, -0.0, 1.0, 1, True, False, 0, float("nan"), float("inf")]
    built = [pyir.const(v) for v in values]
    assert len({id(c) for c in built}) == len(values)
    for v, c in zip(values, built):
        assert pyir.const(v) is c is pyir.Constant(np.asarray(v, dtype=c.dtype))
    n1, n2 = pyir.const(float("nan"), "float64"), pyir.const(nan2, "float64")  # payloads differ
    assert n1 is not n2 and pyir.const(nan2, "float64") is n2 and pyir.const(float("nan"), "float64") is n1
    assert pyir.const(nan2) is pyir.Constant(np.float32(nan2))  # whatever float32 makes of it
    assert pyir.const(1.0, "float64") is not pyir.const(1.0) and pyir.const(1.0, "float64").dtype == "float64"
    assert pyir.const(2, "float32") is pyir.const(2.0)
    with pytest.raises(pyir.WellFormedError):
        pyir.const(1 << 40)  # int32 overflow: an error, not cached
    with pytest.raises(pyir.WellFormedError):
        pyir.const(1 << 40)
    cs = [pyir.const(float(i) + 0.5) for i in range(2 * CONST_CACHE_MAX)]
    assert 0 < len(_const_cache) <= CONST_CACHE_MAX
    ref = weakref.ref(cs[-1])
    del cs
    gc.collect()
    assert ref() is None


def test_tensor_type_and_constant_keys_are_injective():
    """Shapes that print alike or pack alike stay different types and constants: the rank is
    part of the key (dims packed as int64)."""
    t = [pyir.TensorType(s) for s in [(), (0,), (0, 0), (1, 0), (0, 1), (256,), (1, 256)]]
    assert len({id(x) for x in t}) == len(t) and len({x.id for x in t}) == len(t)
    c = [pyir.const(np.zeros(s, "float32")) for s in [(0,), (0, 0), (0, 0, 0), (1, 0), (0, 1)]]
    assert len({x.id for x in c}) == len(c)
    assert pyir.TensorType((2**63 - 1,)).shape == (2**63 - 1,)
    with pytest.raises(pyir.WellFormedError):
        pyir.TensorType((2**63,))
    big = tuple(range(1, 41))  # beyond the precompiled ranks
    assert pyir.TensorType(big) is pyir.TensorType(list(big)) and pyir.TensorType(big).shape == big


def test_attrs_cache_is_exact_bounded_and_weak():
    """The cache of plain dicts given to Attrs returns what the uncached path builds (1, 1.0,
    True, 0.0 and -0.0, lists and tuples, numpy scalars, nodes as values), is bounded and keeps
    no Attrs alive."""
    import weakref

    from pyir.ir.node import ATTRS_CACHE_MAX, _attrs_cache

    variants = [{"a": 1}, {"a": 1.0}, {"a": True}, {"a": 0.0}, {"a": -0.0}, {"a": (1, 2)}, {"a": "1"},
                {"a": None}, {"a": 1, "b": (2, 3)}, {"b": (2, 3), "a": 1}]
    built = [pyir.Attrs(d) for d in variants]
    assert len({id(a) for a in built[:-1]}) == len(variants) - 1 and built[-1] is built[-2]
    for d, a in zip(variants, built):
        assert pyir.Attrs(d) is a and pyir.Attrs(**d) is a and pyir.Attrs(dict(d)) is a
        assert pyir.Attrs(dict(d), z=0) is a.with_(z=0)
    assert pyir.Attrs({"a": np.int64(1)}) is built[0] and pyir.Attrs({"a": [1, 2]}) is built[5]
    assert pyir.Attrs({"a": np.float32(1.5)})["a"] == 1.5
    t = pyir.TensorType((3,))
    assert pyir.Attrs({"t": t}) is pyir.Attrs({"t": t}) and pyir.Attrs({"t": t})["t"] is t
    for bad in [{"a": [1, [2, {}]]}, {1: 2}, {"a": "\ud800"}]:
        with pytest.raises(pyir.AttrError):
            pyir.Attrs(bad)
    many = [pyir.Attrs({"k": i}) for i in range(2 * ATTRS_CACHE_MAX)]
    assert 0 < len(_attrs_cache) <= ATTRS_CACHE_MAX
    assert pyir.Attrs({"k": 5}) is many[5]
    ref = weakref.ref(many[-1])
    del many
    gc.collect()
    assert ref() is None


def test_var_builder_fast_path_checks_like_var():
    """pyir.var's inlined fresh-variable path (an ASCII str name, a TensorType) builds what Var
    builds; other names and annotations take Var itself, with its checks."""

    class Name(str):
        pass

    x = pyir.var("x", shape=(2, 3))
    assert type(x) is pyir.Var and x.id is x.uid and x.type_annotation is pyir.TensorType((2, 3))
    assert pyir.Var("x", x.type_annotation, uid=x.uid) is x
    assert x._mask == pyir.Var("y", x.type_annotation)._mask
    y = pyir.var(Name("y"), shape=(2,))
    assert type(y.name_hint) is str and y.name_hint == "y"
    assert pyir.var("é", shape=(1,)).name_hint == "é"
    tt = pyir.TupleType([pyir.TensorType((1,))])
    assert pyir.var("t", tt).type_annotation is tt
    for name, shape, dtype in [("\ud800", (1,), "float32"), (3, (1,), "float32"), ("b", (True,), "float32"),
                               ("b", (-1,), "float32"), ("b", (1,), "object")]:
        with pytest.raises(pyir.WellFormedError):
            pyir.var(name, shape=shape, dtype=dtype)  # type: ignore[arg-type]

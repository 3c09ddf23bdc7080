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
from pyir.node import live_node_count


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
    import pyir.node as node_mod

    real = node_mod.digest
    monkeypatch.setattr(node_mod, "digest", lambda b: real(b[:1]))  # collide every node of one kind
    monkeypatch.setattr(pyir.types, "digest", node_mod.digest)
    a = pyir.TensorType((3, 1, 7), "float32")
    b = pyir.TensorType((3, 1, 8), "float32")
    assert a is not b and a.id != b.id
    assert pyir.TensorType((3, 1, 7)) is a and pyir.TensorType((3, 1, 8)) is b


def test_forced_collisions_stay_exact_after_the_chain_head_dies(monkeypatch):
    """A node re-keyed past a collision is still found after the node that held its key is freed."""
    import pyir.node as node_mod

    real = node_mod.digest
    collided_before = set(node_mod._collided)
    monkeypatch.setattr(node_mod, "digest", lambda b: real(b[:1]))  # collide every node of one kind
    monkeypatch.setattr(pyir.types, "digest", node_mod.digest)
    monkeypatch.setattr(pyir.expr, "digest", node_mod.digest)
    try:
        a = pyir.TensorType((3, 1, 17), "float32")
        b = pyir.TensorType((3, 1, 18), "float32")
        b_id = b.id
        assert a.id != b_id
        del a
        gc.collect()
        assert pyir.TensorType((3, 1, 18)) is b and b.id == b_id
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
    with pyir.node.gc_paused():
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

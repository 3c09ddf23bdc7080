"""Type relations over symbolic and unknown dimensions (issue 12, item 2), and the typing of
calls of functions with symbolic parameters and of If over symbolic branches."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import Any, op, sym
from pyir.errors import TypeCheckError

n, m, h, w = sym("n"), sym("m"), sym("h"), sym("w")


def v(shape, dtype="float32", name="x"):
    return pyir.var(name, shape=shape, dtype=dtype)


def shape_of(e):
    return e.checked_type.shape


def fails(e, *parts):
    with pytest.raises(TypeCheckError) as info:
        e.checked_type
    msg = str(info.value)
    for p in parts:
        assert p in msg, (p, msg)
    return msg


# -- elementwise and broadcasting ------------------------------------------------------------------


def test_unary_and_cast_keep_symbolic_shapes():
    x = v((n, Any, 3))
    assert shape_of(op.exp(x)) == (n, Any, 3)
    assert shape_of(op.nn.relu(x)) == (n, Any, 3)
    t = op.cast(x, dtype="int32").checked_type
    assert t.shape == (n, Any, 3) and t.dtype == "int32"
    assert shape_of(op.clip(x, a_min=0.0, a_max=1.0)) == (n, Any, 3)


@pytest.mark.parametrize("a, b, out", [
    ((n, 3), (1, 3), (n, 3)),
    ((n, 3), (n, 3), (n, 3)),
    ((n, 3), (3,), (n, 3)),
    ((n,), (m,), (Any,)),
    ((n,), (5,), (5,)),
    ((Any, 3), (4, 3), (4, 3)),
    ((Any,), (1,), (Any,)),
    ((n * 2,), (1,), (n * 2,)),
    ((n + 1,), (m + 1,), (Any,)),  # each is 1 when its symbol is 0: either can be the answer
    ((n + 2,), (n + 2,), (n + 2,)),
    ((n * 0 + 3, n), (3, 1), (3, n)),
])
def test_broadcast(a, b, out):
    got = shape_of(op.add(v(a), v(b, name="y")))
    assert got == out
    assert shape_of(op.greater(v(a), v(b, name="y"))) == got
    assert op.greater(v(a), v(b, name="y")).checked_type.dtype == "bool"


def test_broadcast_errors_only_where_they_must():
    fails(op.add(v((2 * n,)), v((2 * n + 2,), name="y")), "add", "do not broadcast", "n * 2", "n * 2 + 2",
          "%x", "%y")
    fails(op.multiply(v((n, 3)), v((n, 4), name="y")), "multiply", "(n, 3)", "(n, 4)")
    c = v((n, 1), "bool", "c")
    assert shape_of(op.where(c, v((1, m)), v((n, m), name="y"))) == (n, m)


# -- reductions ------------------------------------------------------------------------------------


@pytest.mark.parametrize("attrs, out", [
    ({"axis": (1,)}, (n, 4)),
    ({"axis": (1,), "keepdims": True}, (n, 1, 4)),
    ({"axis": (0,), "exclude": True}, (n,)),
    ({"axis": (0, 2), "exclude": True, "keepdims": True}, (n, 1, 4)),
    ({}, ()),
])
def test_reductions(attrs, out):
    x = v((n, Any, 4))
    assert shape_of(op.sum(x, **attrs)) == out
    assert shape_of(op.mean(x, **attrs)) == out


def test_argmax():
    x = v((n, m, 4))
    t = op.argmax(x, axis=1).checked_type
    assert t.shape == (n, 4) and t.dtype == "int64"
    assert shape_of(op.argmax(x, axis=-1, keepdims=True)) == (n, m, 1)


# -- reshape ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("src, newshape, out", [
    ((n, 3, 4), (-1, 12), (n, 12)),
    ((n, 3, 4), (0, -1), (n, 12)),
    ((n, 3, 4), (0, 12), (n, 12)),
    ((n * 3,), (-1, 3), (n, 3)),
    ((n * 3,), (-1, 12), (Any,) + (12,)),  # divisible only when 4 | n: unknown
    ((n, m), (-1,), (n * m,)),
    ((n, m * 4), (0, -1, 2), (n, m * 2, 2)),
    ((n, m, 6), (0, 0, 2, 3), (n, m, 2, 3)),
    ((Any, 6), (-1, 3), (Any, 3)),
    ((Any, 6), (0, 2, 3), (Any, 2, 3)),
    ((n, 12), (3, 4), (3, 4)),  # only n == 1 runs: accepted, checked when it runs
])
def test_reshape(src, newshape, out):
    assert shape_of(op.reshape(v(src), newshape=newshape)) == out


def test_reshape_errors():
    fails(op.reshape(v((n * 4, 3)), newshape=(5, 7)), "reshape", "cannot reshape", "(n * 4, 3)", "n * 12")
    # 3n + 1 elements are never a multiple of 3
    fails(op.reshape(v((n * 3 + 1,)), newshape=(-1, 3)), "reshape", "not a multiple of 3")
    fails(op.reshape(v((n, 0)), newshape=(-1, 0)), "reshape", "0 elements")
    fails(op.reshape(v((n, 3)), newshape=(-1, -1)), "more than one -1")


def test_static_reshape_unchanged():
    assert shape_of(op.reshape(v((2, 3, 4)), newshape=(-1, 12))) == (2, 12)
    fails(op.reshape(v((2, 3, 4)), newshape=(5, -1)), "cannot reshape (2, 3, 4) to (5, -1)")


# -- layout ops ------------------------------------------------------------------------------------


def test_transpose_expand_dims_take():
    x = v((n, Any, 4))
    assert shape_of(op.transpose(x, axes=(2, 0, 1))) == (4, n, Any)
    assert shape_of(op.transpose(x)) == (4, Any, n)
    assert shape_of(op.expand_dims(x, axis=1, num_newaxis=2)) == (n, 1, 1, Any, 4)
    idx = v((m, 2), "int64", "i")
    assert shape_of(op.take(x, idx, axis=1)) == (n, m, 2, 4)


def test_concatenate():
    a, b = v((n, 3)), v((m, 3), name="y")
    assert shape_of(op.concatenate([a, b], axis=0)) == (m + n, 3)
    assert shape_of(op.concatenate([a, v((n, 5), name="y")], axis=1)) == (n, 8)
    assert shape_of(op.concatenate([a, v((Any, 5), name="y")], axis=1)) == (n, 8)
    assert shape_of(op.concatenate([v((Any, 2)), v((4, 5), name="y")], axis=1)) == (4, 7)  # ? refined
    assert shape_of(op.concatenate([a, a, a], axis=0)) == (3 * n, 3)
    assert shape_of(op.concatenate([v((Any, 3)), a], axis=0)) == (Any, 3)
    fails(op.concatenate([a, v((n + 1, 5), name="y")], axis=1), "concatenate", "dimension 0", "n != n + 1")
    fails(op.concatenate([a, v((n, 3, 1), name="y")], axis=0), "cannot concatenate")


def test_squeeze():
    x = v((n, 1, Any, 3))
    assert shape_of(op.squeeze(x, axis=(1,))) == (n, Any, 3)
    assert shape_of(op.squeeze(x, axis=(1, 2))) == (n, 3)  # ? is accepted: checked when it runs
    assert shape_of(op.squeeze(v((n + 2, 1, 3)))) == (n + 2, 3)  # n + 2 is provably not 1
    fails(op.squeeze(x, axis=(0,)), "squeeze", "axis 0 of size n", "provably 1")
    fails(op.squeeze(x), "squeeze", "axis=None", "dimension 0 (n)")
    fails(op.squeeze(v((n, 3)), axis=(1,)), "axis 1 of size 3")


def test_split():
    x = v((n * 4, m))
    def pieces(e):
        return [f.shape for f in e.checked_type.fields]

    assert pieces(op.split(x, indices_or_sections=(2,))) == [(n * 2, m)] * 2
    assert pieces(op.split(x, indices_or_sections=(2,), axis=1)) == [(n * 4, Any)] * 2
    assert pieces(op.split(v((Any, 3)), indices_or_sections=(3,))) == [(Any, 3)] * 3
    parts = op.split(v((n, 3)), indices_or_sections=(1, 3), by_sections=False).checked_type.fields
    assert [f.shape for f in parts] == [(1, 3), (2, 3), (n - 3, 3)]
    fails(op.split(v((n * 2 + 1, 3)), indices_or_sections=(2,)), "split", "2 equal sections")
    fails(op.split(v((n, 3)), indices_or_sections=(3, 1), by_sections=False), "not increasing")


def test_strided_slice():
    x = v((n, 5, Any))
    big = 2 ** 63 - 1
    assert shape_of(op.strided_slice(x, begin=(1,), end=(4,), axes=(1,))) == (n, 3, Any)
    assert shape_of(op.strided_slice(x, begin=(0, 0), end=(big, 5), strides=(1, 2))) == (n, 3, Any)
    assert shape_of(op.strided_slice(x, begin=(0,), end=(big,), strides=(2,))) == ((n + 1) // 2, 5, Any)
    # the clamping of 1 and 3 into [0, n] depends on n: unknown, never a wrong int
    assert shape_of(op.strided_slice(x, begin=(1,), end=(3,))) == (Any, 5, Any)
    assert shape_of(op.strided_slice(x, begin=(0,), end=(2,), axes=(2,))) == (n, 5, Any)
    y = v((n + 4, 2))
    assert shape_of(op.strided_slice(y, begin=(2,), end=(big,))) == (n + 2, 2)
    assert shape_of(op.strided_slice(y, begin=(-2,), end=(big,))) == (2, 2)
    assert shape_of(op.strided_slice(y, begin=(1,), end=(-1,))) == (n + 2, 2)
    assert shape_of(op.strided_slice(y, begin=(1,), end=(3,))) == (2, 2)
    assert shape_of(op.strided_slice(y, begin=(big,), end=(0,), strides=(-1,))) == (Any, 2)
    assert shape_of(op.strided_slice(y, begin=(-1,), end=(-big,), strides=(-1,))) == (n + 4, 2)
    assert shape_of(op.strided_slice(x, begin=(big,), end=(-big,), strides=(-2,))) == ((n + 1) // 2, 5, Any)


def test_strided_slice_lengths_agree_with_numpy():
    big = 2 ** 63 - 1
    cases = [(0, big, 1), (2, big, 3), (-2, big, 1), (1, -1, 1), (-1, -big, -1), (big, -big, -2), (1, 3, 1),
             (0, 2 ** 31 - 1, 1), (-3, -1, 2), (3, 1, 1)]
    for base in (n, n + 4, n * 2 + 1):
        for start, stop, step in cases:
            got = shape_of(op.strided_slice(v((base,)), begin=(start,), end=(stop,), strides=(step,)))[0]
            for nv in range(0, 9):
                size = pyir.dims.substitute(base, {"n": nv})
                want = len(range(size)[slice(start, stop, step)])
                where = (base, start, stop, step, nv)
                assert got is Any or pyir.dims.substitute(got, {"n": nv}) == want, where


# -- matmul, dense ---------------------------------------------------------------------------------


def test_matmul_and_dense():
    assert shape_of(op.matmul(v((n, 4, 5)), v((5, m), name="y"))) == (n, 4, m)
    assert shape_of(op.matmul(v((n, 4, Any)), v((m, 7), name="y"))) == (n, 4, 7)  # unknown inner: accepted
    assert shape_of(op.matmul(v((n, 4, h)), v((w, 7), name="y"))) == (n, 4, 7)  # h vs w: unknown
    assert shape_of(op.matmul(v((n, 1, 4, 5)), v((m, 5, 2), name="y"))) == (n, m, 4, 2)
    fails(op.matmul(v((n, 4, 5)), v((6, m), name="y")), "matmul", "inner dimensions differ", "5 != 6")
    fails(op.matmul(v((4, n)), v((n + 1, 2), name="y")), "n != n + 1")
    assert shape_of(op.nn.dense(v((n, m, 16)), v((8, 16), name="y"))) == (n, m, 8)
    assert shape_of(op.nn.dense(v((n, Any)), v((8, 16), name="y"))) == (n, 8)
    assert shape_of(op.nn.dense(v((n, 16)), v((Any, 16), name="y"), units=8)) == (n, 8)  # units refine ?
    fails(op.nn.dense(v((n, n + 1)), v((5, n), name="y")), "nn.dense",
          "data features n + 1 != weight in-features n")
    fails(op.nn.dense(v((n, 16)), v((m * 2, 16), name="y"), units=7), "units=7")


# -- conv2d and pools ------------------------------------------------------------------------------


def conv_ref(size, k, s, d, p0, p1):
    return (size + p0 + p1 - d * (k - 1) - 1) // s + 1


@pytest.mark.parametrize("k, s, d, pad", [(3, 1, 1, (1, 1, 1, 1)), (3, 2, 1, (0, 0, 0, 0)),
                                          (5, 2, 2, (2, 1, 0, 3)), (1, 3, 1, (0, 0, 0, 0)),
                                          (4, 4, 1, (1, 2, 1, 2))])
def test_conv2d_output_arithmetic(k, s, d, pad):
    x, wt = v((n, 4, h, w)), pyir.var("wt", shape=(8, 4, k, k))
    e = op.nn.conv2d(x, wt, strides=(s, s), dilation=(d, d), padding=pad)
    oshape = shape_of(e)
    assert oshape[:2] == (n, 8)
    pt, pl, pb, pr = pad
    for hv in range(d * (k - 1) + 1, 20):  # every binding where the kernel fits equals the static formula
        assert pyir.dims.substitute(oshape[2], {"h": hv}) == conv_ref(hv, k, s, d, pt, pb)
        assert pyir.dims.substitute(oshape[3], {"w": hv}) == conv_ref(hv, k, s, d, pl, pr)


def test_conv2d_symbolic_checks():
    x = v((n, 4, h, w))
    assert shape_of(op.nn.conv2d(x, pyir.var("wt", shape=(Any, 4, 3, 3)), channels=8)) == (n, 8, h - 2, w - 2)
    assert shape_of(op.nn.conv2d(x, pyir.var("wt", shape=(8, 4, Any, Any)), kernel_size=(3, 3))) == \
        (n, 8, h - 2, w - 2)
    assert shape_of(op.nn.conv2d(x, pyir.var("wt", shape=(8, 4, Any, 3)))) == (n, 8, Any, w - 2)
    grouped = op.nn.conv2d(v((n, Any, 8, 8)), pyir.var("wt", shape=(8, 2, 3, 3)), groups=2)
    assert shape_of(grouped) == (n, 8, 6, 6)
    # a symbolic kernel: exact arithmetic
    assert shape_of(op.nn.conv2d(v((n, 4, h, 8)), pyir.var("wt", shape=(8, 4, m, 3)))) == (n, 8, h - m + 1, 6)
    fails(op.nn.conv2d(v((n, 3, h, w)), pyir.var("wt", shape=(8, 4, 3, 3))), "nn.conv2d",
          "input channels 3 != weight in-channels 4", "%x", "%wt")
    fails(op.nn.conv2d(v((n, m * 2 + 1, h, w)), pyir.var("wt", shape=(8, m, 3, 3)), groups=2),
          "input channels m * 2 + 1")
    fails(op.nn.conv2d(x, pyir.var("wt", shape=(m * 2 + 1, 2, 3, 3)), groups=2), "not divisible by groups 2")
    fails(op.nn.conv2d(x, pyir.var("wt", shape=(8, 4, 3, 3)), channels=6), "channels=6")
    fails(op.nn.conv2d(v((n, 4, 2, w)), pyir.var("wt", shape=(8, 4, 3, 3))), "larger than")


@pytest.mark.parametrize("ceil", [False, True])
@pytest.mark.parametrize("k, s, pad", [(2, 2, (0, 0, 0, 0)), (3, 2, (1, 1, 1, 1)), (3, 1, (0, 0, 1, 1)),
                                       (3, 3, (0, 0, 2, 2)), (2, 1, (0, 0, 0, 0))])
def test_pool_output_arithmetic(k, s, pad, ceil):
    x = v((n, 3, h, w))
    e = op.nn.max_pool2d(x, pool_size=(k, k), strides=(s, s), padding=pad, ceil_mode=ceil)
    oshape = shape_of(e)
    assert oshape[:2] == (n, 3)
    for hv in range(k, 20):  # exact or ?: never a wrong value
        sx = v((1, 3, hv, hv), name="s")
        want = shape_of(op.nn.max_pool2d(sx, pool_size=(k, k), strides=(s, s), padding=pad, ceil_mode=ceil))
        for i in (2, 3):
            if oshape[i] is not Any:
                assert pyir.dims.substitute(oshape[i], {"h": hv, "w": hv}) == want[i]
    if not ceil or s == 1:
        assert Any not in oshape
    got = shape_of(op.nn.avg_pool2d(x, pool_size=(k, k), strides=(s, s), padding=pad, ceil_mode=ceil))
    assert got == oshape


def test_pools_global_and_errors():
    x = v((n, Any, h, w))
    assert shape_of(op.nn.global_avg_pool2d(x)) == (n, Any, 1, 1)
    assert shape_of(op.nn.global_max_pool2d(x)) == (n, Any, 1, 1)
    assert shape_of(op.nn.avg_pool2d(v((n, 3, Any, 8)), pool_size=(2, 2), strides=(2, 2))) == (n, 3, Any, 4)
    fails(op.nn.max_pool2d(v((n, 3, 2, w)), pool_size=(3, 3)), "nn.max_pool2d", "does not fit")


# -- normalization, softmax, bias_add, pad, ... ----------------------------------------------------


def test_vector_argument_ops():
    vec = lambda size, name: pyir.var(name, shape=(size,))  # noqa: E731
    x = v((n, Any, 4, 4))
    bn = op.nn.batch_norm(x, vec(8, "g"), vec(8, "b"), vec(Any, "mm"), vec(8, "mv")).checked_type
    assert bn.fields[0].shape == (n, 8, 4, 4) and bn.fields[1].shape == (8,)  # ? refined by the vectors
    bn = op.nn.batch_norm(v((n, m, 4)), vec(m, "g"), vec(m, "b"), vec(m, "mm"), vec(m, "mv")).checked_type
    assert bn.fields[0].shape == (n, m, 4) and bn.fields[2].shape == (m,)
    assert shape_of(op.nn.bias_add(v((n, m)), vec(m, "b"), axis=1)) == (n, m)
    assert shape_of(op.nn.bias_add(v((n, Any)), vec(5, "b"), axis=-1)) == (n, 5)
    assert shape_of(op.nn.layer_norm(v((n, m)), vec(m, "g"), vec(Any, "b"))) == (n, m)
    assert shape_of(op.nn.prelu(v((n, Any, 3)), vec(6, "a"))) == (n, 6, 3)
    fails(op.nn.bias_add(v((n, m)), vec(m + 1, "b")), "nn.bias_add", "bias must have shape (m,)", "(m + 1,)")
    fails(op.nn.batch_norm(v((n, 8)), vec(8, "g"), vec(7, "b"), vec(8, "mm"), vec(8, "mv")), "beta")
    fails(op.nn.layer_norm(v((n, m)), pyir.var("g", shape=(m, 1)), vec(m, "b")), "gamma")


def test_softmax_lrn_dropout_batch_flatten_pad():
    x = v((n, m, 4))
    assert shape_of(op.nn.softmax(x)) == (n, m, 4)
    assert shape_of(op.nn.log_softmax(x, axis=1)) == (n, m, 4)
    assert shape_of(op.nn.lrn(x)) == (n, m, 4)
    assert shape_of(op.nn.dropout(x)) == (n, m, 4)
    assert shape_of(op.nn.leaky_relu(x)) == (n, m, 4)
    assert shape_of(op.nn.batch_flatten(x)) == (n, m * 4)
    assert shape_of(op.nn.pad(x, pad_width=(0, 0, 1, 2, 0, 3))) == (n, m + 3, 7)
    assert shape_of(op.nn.pad(v((n, Any)), pad_width=(1, 1, 1, 1), pad_mode="reflect")) == (n + 2, Any)
    fails(op.nn.pad(v((n % 3, 4)), pad_width=(3, 0, 0, 0), pad_mode="reflect"), "nn.pad", "reflect")


# -- calls of functions, If, Let, Tuple ------------------------------------------------------------


def _call_mod(param_shapes, arg_shapes, body=None):
    ps = [pyir.var(f"x{i}", shape=s) for i, s in enumerate(param_shapes)]
    f = pyir.Function(ps, body(*ps) if body else op.concatenate(ps, axis=1))
    args = [pyir.var(f"a{i}", shape=s) for i, s in enumerate(arg_shapes)]
    return pyir.Module({"f": f, "main": pyir.Function(args, pyir.Call(pyir.GlobalVar("f"), args))})


def test_call_binds_symbols_per_call():
    mod = _call_mod([("batch", 3), ("batch", 8)], [(2, 3), (2, 8)])
    assert mod.global_type("main").ret_type.shape == (2, 11)
    mod = _call_mod([("batch", 3), ("batch", 8)], [(n, 3), (n, 8)])
    assert mod.global_type("main").ret_type.shape == (n, 11)
    mod = _call_mod([("batch", 3), ("batch", 8)], [(Any, 3), (5, 8)])  # ? binds nothing, 5 does
    assert mod.global_type("main").ret_type.shape == (5, 11)
    mod = _call_mod([("batch", 3)], [(Any, 3)])
    assert mod.global_type("main").ret_type.shape == (Any, 3)
    # an expression parameter, solved from an int: batch * 2 + 1 == 7
    mod = _call_mod([(sym("batch") * 2 + 1,)], [(7,)], body=lambda x: op.reshape(x, newshape=(-1, 1)))
    assert mod.global_type("main").ret_type.shape == (7, 1)
    # two calls of one function, two bindings
    b = sym("batch")
    x = pyir.var("x", shape=(b, 3))
    f = pyir.Function([x], op.reshape(x, newshape=(-1,)))
    p, q = pyir.var("p", shape=(2, 3)), pyir.var("q", shape=(m, 3))
    g = pyir.GlobalVar("f")
    main = pyir.Function([p, q], pyir.Tuple([pyir.Call(g, [p]), pyir.Call(g, [q])]))
    mod = pyir.Module({"f": f, "main": main})
    assert [t.shape for t in mod.global_type("main").ret_type.fields] == [(6,), (m * 3,)]


def test_call_binding_is_simultaneous_and_checks_identical_arguments():
    bt = sym("batch")
    # the caller's own symbol named like the callee's: substitution is simultaneous
    mod = _call_mod([("batch", 3)], [(bt + 1, 3)], body=lambda x: op.concatenate([x, x], axis=0))
    assert mod.global_type("main").ret_type.shape == (bt * 2 + 2, 3)
    # an argument identical to its parameter binds batch to the caller's batch, which 2 may equal
    mod = _call_mod([("batch", 3), ("batch", 8)], [(bt, 3), (2, 8)])
    assert mod.global_type("main").ret_type.shape == (2, 11)
    with pytest.raises(TypeCheckError,
                       match=r"symbol batch is batch \(argument 0, dimension 0\) and batch \+ 1"):
        _call_mod([("batch", 3), ("batch", 8)], [(bt, 3), (bt + 1, 8)]).global_type("main")


def test_call_conflicts_and_mismatches():
    with pytest.raises(TypeCheckError) as info:
        _call_mod([("batch", 3), ("batch", 8)], [(2, 3), (3, 8)]).global_type("main")
    msg = str(info.value)
    assert "symbol batch is 2 (argument 0, dimension 0) and 3 (argument 1, dimension 0)" in msg, msg
    assert "@f" in msg
    with pytest.raises(TypeCheckError, match="argument 0, dimension 1 is 4, expected 3"):
        _call_mod([("batch", 3)], [(2, 4)]).global_type("main")
    with pytest.raises(TypeCheckError, match="symbol batch is n"):
        _call_mod([("batch", 3), ("batch", 8)], [(n, 3), (n + 1, 8)]).global_type("main")
    with pytest.raises(TypeCheckError, match="cannot be for any value of batch"):
        _call_mod([(sym("batch") * 2 + 1,)], [(8,)], body=op.nn.relu).global_type("main")
    with pytest.raises(TypeCheckError, match="argument 0 has type"):
        _call_mod([("batch", 3)], [(2, 3, 1)]).global_type("main")
    # a static mismatch still fails, with the function's and the call's types
    with pytest.raises(TypeCheckError, match=r"the function takes \(Tensor\[\(2, 3\), float32\]\)"):
        _call_mod([(2, 3)], [(2, 4)]).global_type("main")


def test_if_branches():
    cond = pyir.var("c", shape=(), dtype="bool")
    a, b = v((n, 3)), v((Any, 3), name="y")
    assert pyir.If(cond, a, a).checked_type.shape == (n, 3)
    assert pyir.If(cond, a, b).checked_type.shape == (Any, 3)
    t = pyir.If(cond, pyir.Tuple([a, a]), pyir.Tuple([a, b])).checked_type
    assert [f.shape for f in t.fields] == [(n, 3), (Any, 3)]
    for other in [v((m, 3), name="z"), v((n, 4), name="z"), v((n, 3), "int32", "z"), v((n,), name="z")]:
        with pytest.raises(TypeCheckError, match="branches have different types"):
            pyir.If(cond, a, other).checked_type
    with pytest.raises(TypeCheckError, match="dimension 0: n in the true branch, m in the false branch"):
        pyir.If(cond, a, v((m, 3), name="z")).checked_type


def test_let_and_tuple_carry_symbolic_types():
    x = v((n, 3))
    t = pyir.var("t")
    e = pyir.Let(t, op.nn.relu(x), pyir.Tuple([t, op.reshape(t, newshape=(-1,))]))
    assert [f.shape for f in e.checked_type.fields] == [(n, 3), (n * 3,)]
    ta = pyir.var("ta", shape=(n, 3))
    assert pyir.Let(ta, op.exp(x), op.nn.relu(ta)).checked_type.shape == (n, 3)
    tb = pyir.var("tb", shape=(m, 3))
    with pytest.raises(TypeCheckError, match="annotated"):
        pyir.Let(tb, op.exp(x), tb).checked_type
    assert pyir.TupleGetItem(pyir.Tuple([x, v((m,), name="y")]), 1).checked_type.shape == (m,)


def test_module_text_round_trip_keeps_symbolic_types():
    x = v(("batch", 3, 8, 8))
    wt = pyir.const(np.ones((4, 3, 3, 3), "float32"))
    body = op.nn.max_pool2d(op.nn.conv2d(x, wt, padding=(1, 1)), pool_size=(2, 2), strides=(2, 2))
    mod = pyir.Module.from_expr(pyir.Function([x], op.reshape(body, newshape=(0, -1))))
    assert mod.global_type("main").ret_type.shape == (sym("batch"), 64)
    again = pyir.parse(mod.astext())
    assert again.global_type("main") is mod.global_type("main")


def test_broadcast_compares_large_ints_by_value():
    """Dimensions above 256 are distinct int objects: broadcasting compares ints by value (a
    regression: (1, 512, 28, 28) with (512, 1, 1) was refused by an identity test)."""
    x = pyir.var("x", shape=(1, 512, 28, 28))
    y = pyir.var("y", shape=(int("512"), 1, 1))
    assert pyir.infer_type(op.multiply(x, y)) is pyir.TensorType((1, 512, 28, 28))


def test_annotations_with_unknown_dimensions_accept_more_specific_values():
    """A let's or a function's declared type with ? accepts a value whose dimension is known
    or symbolic there (the variable, the function get the declared type); other mismatches are
    still errors naming both types."""
    x = pyir.var("x", shape=("n", 3))
    y = pyir.var("y", pyir.TensorType((Any, 3)))
    f = pyir.Function([x], pyir.Let(y, op.nn.relu(x), op.add(y, y)), pyir.TensorType((Any, 3)))
    typed = pyir.transform.InferType()(pyir.Module({"main": f}))
    assert typed["main"].checked_type.ret_type is pyir.TensorType((Any, 3))
    tup = pyir.TupleType([pyir.TensorType((Any, 3)), pyir.TensorType((2,))])
    t = pyir.var("t", tup)
    g = pyir.Function([x], pyir.Let(t, pyir.Tuple([x, pyir.const(np.zeros(2, "float32"))]), t), tup)
    assert pyir.transform.InferType()(pyir.Module({"main": g}))["main"].checked_type.ret_type is tup
    for ann in [pyir.TensorType((Any, 4)), pyir.TensorType((Any, 3), "int8"), pyir.TensorType((Any,)),
                pyir.TensorType((sym("m"), 3))]:
        bad = pyir.Function([x], pyir.Let(pyir.var("z", ann), op.nn.relu(x), x))
        with pytest.raises(pyir.PassError, match="annotated"):
            pyir.transform.InferType()(pyir.Module({"main": bad}))
    with pytest.raises(pyir.PassError, match="declared return type"):
        pyir.transform.InferType()(pyir.Module({"main": pyir.Function([x], x, pyir.TensorType((Any, 2)))}))

"""Relay's operators, signatures and meanings (issue 14, item 3): each checked against a numpy
reference written here, through the type relation, the interpreter and the passes that must
treat the annotations as annotations."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.op import annotation, memory, vm
from pyir.transform import DeadCodeElimination, DefuseOps, FoldConstant, FuseOps, InferType

C = pyir.const


def run(expr: pyir.Expr, *args: np.ndarray) -> object:
    return pyir.evaluate(pyir.Module.from_expr(expr), *args)


def ty(expr: pyir.Expr) -> pyir.Type:
    return expr.checked_type


def rand(*shape: int, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# -- annotations ------------------------------------------------------------------------------


def test_on_device_device_copy_are_identities_kept_by_the_passes() -> None:
    x = pyir.var("x", shape=(2, 3))
    a = op.on_device(op.add(x, x), virtual_device="cuda:0", constrain_result=True)
    b = op.device_copy(op.nn.relu(a), src_virtual_device="cuda:0", dst_virtual_device="cpu")
    out = op.exp(b)
    assert ty(a) is ty(x) and ty(b) is ty(x)
    v = rand(2, 3)
    np.testing.assert_allclose(run(out, v), np.exp(np.maximum(v + v, 0)), rtol=1e-6)
    assert op.on_device(x).attrs["constrain_body"] is True  # TVM's C++ defaults
    assert op.on_device(x).attrs["constrain_result"] is False
    # a tuple goes through unchanged (the relation is the identity on any type)
    t = pyir.Tuple([x, x])
    assert ty(op.on_device(t)) is ty(t)
    # FoldConstant keeps an on_device around a constant computation (it folds inside it)
    c = C(np.ones((2, 3), "float32"))
    m = pyir.Module.from_expr(op.add(op.on_device(op.multiply(c, c), virtual_device="cpu"), x))
    folded = FoldConstant()(m)["main"].body
    assert folded.args[0].op is pyir.Op("on_device") and isinstance(folded.args[0].args[0], pyir.Constant)
    # FuseOps never fuses across them (OPAQUE); DefuseOps gives the program back
    mod = pyir.Module.from_expr(out)
    fused = FuseOps()(mod)
    main = fused["main"]
    fns = [n for n in pyir.post_order(main) if isinstance(n, pyir.Function) and n is not main]
    for fn in fns:
        ops = {c.op.name for c in pyir.post_order(fn.body) if isinstance(c, pyir.Call)
               and isinstance(c.op, pyir.Op)}
        assert not (ops & annotation.ANNOTATION_OPS) or len(ops) == 1, ops
    assert DefuseOps()(fused)["main"] is mod["main"]
    # DCE keeps them where their value is used, drops them (like any pure call) where it is not
    y = pyir.var("y")
    dead = pyir.Module.from_expr(pyir.Function([x], pyir.Let(y, op.on_device(x), x)))
    assert DeadCodeElimination()(dead)["main"].body is x
    live = pyir.Module.from_expr(pyir.Function([x], pyir.Let(y, op.on_device(x), y)))
    assert DeadCodeElimination()(live)["main"] is live["main"]
    assert "on_device(%x, constrain_result=True, virtual_device=\"cuda:0\")" in pyir.Module.from_expr(
        op.on_device(x, virtual_device="cuda:0", constrain_result=True)).astext()


# -- batch_matmul, conv2d with out_dtype -----------------------------------------------------------


@pytest.mark.parametrize(("ta", "tb"), [(False, False), (False, True), (True, False), (True, True)])
def test_batch_matmul_transposes_and_broadcast(ta: bool, tb: bool) -> None:
    a_np = rand(2, 4, 3) if ta else rand(2, 3, 4)
    b_np = rand(1, 5, 4, seed=1) if tb else rand(1, 4, 5, seed=1)
    a, b = pyir.var("a", shape=a_np.shape), pyir.var("b", shape=b_np.shape)
    call = op.nn.batch_matmul(a, b, transpose_a=ta, transpose_b=tb)
    assert ty(call) is pyir.TensorType((2, 3, 5), "float32")
    want = np.matmul(np.swapaxes(a_np, 1, 2) if ta else a_np, np.swapaxes(b_np, 1, 2) if tb else b_np)
    np.testing.assert_allclose(run(call, a_np, b_np), want, rtol=1e-5)


def test_batch_matmul_defaults_and_mixed_dtypes() -> None:
    a, b = pyir.var("a", shape=(2, 3, 4)), pyir.var("b", shape=(2, 5, 4))
    nt = op.nn.batch_matmul(a, b)  # Relay's Python default: transpose_b=True (NT)
    assert nt.attrs["transpose_b"] is True and ty(nt).shape == (2, 3, 5)
    # the attribute's default is Relay's C++ one (the text's): no transpose
    assert pyir.Call(pyir.Op("nn.batch_matmul"), [a, b], {}).attrs["transpose_b"] is False
    with pytest.raises(pyir.TypeCheckError, match="reduction dimensions"):
        ty(op.nn.batch_matmul(a, b, transpose_b=False))
    with pytest.raises(pyir.TypeCheckError, match="batch dimensions"):
        ty(op.nn.batch_matmul(a, pyir.var("c", shape=(3, 5, 4))))
    n = pyir.sym("n")
    s = pyir.var("s", shape=(n, 3, 4))
    assert ty(op.nn.batch_matmul(s, b)).shape == (2, 3, 5)  # unified with the known batch
    i8, u8 = pyir.var("i", shape=(1, 2, 3), dtype="int8"), pyir.var("u", shape=(1, 4, 3), dtype="uint8")
    mixed = op.nn.batch_matmul(i8, u8, out_dtype="int32")
    assert ty(mixed) is pyir.TensorType((1, 2, 4), "int32")
    with pytest.raises(pyir.TypeCheckError, match="out_dtype"):
        ty(op.nn.batch_matmul(i8, u8))
    xi = np.array([[[-128, 127, 3], [1, 2, 3]]], "int8")
    yu = np.array([[[255, 255, 1], [0, 1, 2], [3, 4, 5], [9, 9, 9]]], "uint8")
    got = run(mixed, xi, yu)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.matmul(xi.astype(np.int32), yu.astype(np.int32).transpose(0, 2, 1)))


def test_conv2d_int8_with_int32_out_dtype() -> None:
    x = pyir.var("x", shape=(1, 2, 4, 4), dtype="int8")
    w = pyir.var("w", shape=(3, 2, 3, 3), dtype="int8")
    call = op.nn.conv2d(x, w, padding=(1, 1), out_dtype="int32")
    assert ty(call) is pyir.TensorType((1, 3, 4, 4), "int32")
    rng = np.random.default_rng(0)
    xv = rng.integers(-128, 128, (1, 2, 4, 4)).astype("int8")
    wv = rng.integers(-128, 128, (3, 2, 3, 3)).astype("int8")
    got = run(call, xv, wv)
    xp = np.pad(xv.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 3, 4, 4), np.int64)
    for o in range(3):
        for i in range(4):
            for j in range(4):
                want[0, o, i, j] = np.sum(xp[0, :, i:i + 3, j:j + 3] * wv[o].astype(np.int64))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, want)  # no int8 overflow: accumulated in int32
    u = pyir.var("u", shape=(1, 2, 4, 4), dtype="uint8")  # mixed input dtypes need out_dtype
    assert ty(op.nn.conv2d(u, w, out_dtype="int32")).dtype == "int32"
    with pytest.raises(pyir.TypeCheckError, match="out_dtype"):
        ty(op.nn.conv2d(u, w))


# -- layout_transform ---------------------------------------------------------------------------


def test_layout_transform_plain_and_sub_axes() -> None:
    v = rand(2, 8, 3, 5)
    x = pyir.var("x", shape=v.shape)
    nhwc = op.layout_transform(x, src_layout="NCHW", dst_layout="NHWC")
    assert ty(nhwc).shape == (2, 3, 5, 8)
    np.testing.assert_array_equal(run(nhwc, v), v.transpose(0, 2, 3, 1))
    c4 = op.layout_transform(x, src_layout="NCHW", dst_layout="NCHW4c")
    assert ty(c4).shape == (2, 2, 3, 5, 4)
    want = v.reshape(2, 2, 4, 3, 5).transpose(0, 1, 3, 4, 2)  # [n, c // 4, h, w, c % 4]
    np.testing.assert_array_equal(run(c4, v), want)
    back = op.layout_transform(c4, src_layout="NCHW4c", dst_layout="NCHW")
    np.testing.assert_array_equal(run(back, v), v)
    w = rand(8, 4, 3, 3)
    wx = pyir.var("w", shape=w.shape)
    o4i4 = op.layout_transform(wx, src_layout="OIHW", dst_layout="OIHW4i4o")
    assert ty(o4i4).shape == (2, 1, 3, 3, 4, 4)
    got = run(o4i4, w)
    for o, i, h, k in np.ndindex(8, 4, 3, 3):
        assert got[o // 4, i // 4, h, k, i % 4, o % 4] == w[o, i, h, k]
    hwio = op.layout_transform(wx, src_layout="OIHW", dst_layout="HWIO")
    np.testing.assert_array_equal(run(hwio, w), w.transpose(2, 3, 1, 0))
    n = pyir.sym("n")
    assert ty(op.layout_transform(pyir.var("s", shape=(1, n * 4, 2, 2)), src_layout="NCHW",
                                  dst_layout="NCHW4c")).shape == (1, n, 2, 2, 4)
    with pytest.raises(pyir.TypeCheckError, match="cannot split"):
        ty(op.layout_transform(pyir.var("y", shape=(1, 6, 2, 2)), src_layout="NCHW", dst_layout="NCHW4c"))
    with pytest.raises(pyir.AttrError, match="primal axes"):
        op.layout_transform(x, src_layout="NCHW", dst_layout="NCDHW")
    with pytest.raises(pyir.AttrError, match="without its primal"):
        op.layout_transform(x, src_layout="NCHW", dst_layout="NHW4c")


# -- collapse_sum, full_like, the divisions ---------------------------------------------------------


def test_collapse_sum_like_and_to() -> None:
    v = rand(2, 3, 4)
    x = pyir.var("x", shape=v.shape)
    like = pyir.var("l", shape=(3, 1))
    c = op.collapse_sum_like(x, like)
    assert ty(c) is pyir.TensorType((3, 1), "float32")
    np.testing.assert_allclose(run(c, v, np.zeros((3, 1), "float32")), v.sum(axis=(0, 2)).reshape(3, 1),
                               rtol=1e-5)
    t = op.collapse_sum_to(x, shape=(4,))
    np.testing.assert_allclose(run(t, v), v.sum(axis=(0, 1)), rtol=1e-5)
    with pytest.raises(pyir.TypeCheckError, match="cannot collapse"):
        ty(op.collapse_sum_to(x, shape=(5,)))
    with pytest.raises(pyir.TypeCheckError, match="higher rank"):
        ty(op.collapse_sum_to(x, shape=(1, 2, 3, 4)))


def test_full_like_zeros_ones() -> None:
    x = pyir.var("x", shape=(2, 3), dtype="int32")
    f = op.full_like(x, C(7))
    assert ty(f) is ty(x)
    np.testing.assert_array_equal(run(f, np.zeros((2, 3), "int32")), np.full((2, 3), 7, "int32"))
    with pytest.raises(pyir.TypeCheckError, match="scalar"):
        ty(op.full_like(x, x))
    assert run(op.zeros(shape=(2,), dtype="int8")).tolist() == [0, 0]
    assert ty(op.ones_like(x)) is ty(x) and ty(op.zeros_like(x)) is ty(x)


def test_division_and_remainder_names_have_relays_meanings() -> None:
    a = np.array([-7, 7, -7, 7, 5], "int32")
    b = np.array([2, -2, -2, 2, 0], "int32")
    A, B = C(a), C(b)
    assert run(op.floor_divide(A, B)).tolist() == [-4, -4, 3, 3, 0]
    assert run(op.trunc_divide(A, B)).tolist() == [-3, -3, 3, 3, 0]
    assert run(op.divide(C(a[:4]), C(b[:4]))).tolist() == [-3, -3, 3, 3]  # integer divide truncates (Relay's)
    assert run(op.floor_mod(A, B)).tolist() == [1, -1, -1, 1, 0]
    assert run(op.trunc_mod(A, B)).tolist() == [-1, 1, -1, 1, 0]
    assert run(op.mod(A, B)).tolist() == [-1, 1, -1, 1, 0]  # Relay's mod truncates
    f, g = np.array([-7.5, 7.5], "float32"), np.array([2.0, -2.0], "float32")
    assert run(op.floor_divide(C(f), C(g))).tolist() == [-4.0, -4.0]
    assert run(op.trunc_divide(C(f), C(g))).tolist() == [-3.0, -3.0]
    assert run(op.floor_mod(C(f), C(g))).tolist() == [0.5, -0.5]
    assert run(op.trunc_mod(C(f), C(g))).tolist() == [-1.5, 1.5]


def test_shifts() -> None:
    a = np.array([1, -8, 3], "int32")
    s = np.array([2, 1, 0], "int32")
    assert run(op.left_shift(C(a), C(s))).tolist() == [4, -16, 3]
    assert run(op.right_shift(C(a), C(s))).tolist() == [0, -4, 3]


# -- upsampling ----------------------------------------------------------------------------------


def test_upsampling_nearest_bilinear_and_3d() -> None:
    v = rand(1, 2, 3, 4)
    x = pyir.var("x", shape=v.shape)
    up = op.nn.upsampling(x, scale_h=2.0, scale_w=3.0)
    assert ty(up).shape == (1, 2, 6, 12)
    np.testing.assert_array_equal(run(up, v), v.repeat(2, axis=2).repeat(3, axis=3))
    nhwc = op.nn.upsampling(pyir.var("y", shape=(1, 3, 4, 2)), scale_h=2.0, scale_w=2.0, layout="NHWC")
    assert ty(nhwc).shape == (1, 6, 8, 2)
    lin = op.nn.upsampling(x, scale_h=2.0, scale_w=2.0, method="bilinear", align_corners=True)
    got = run(lin, v)
    assert got.shape == (1, 2, 6, 8)
    np.testing.assert_allclose(got[..., 0, 0], v[..., 0, 0], rtol=1e-6)  # corners kept
    np.testing.assert_allclose(got[..., -1, -1], v[..., -1, -1], rtol=1e-6)
    np.testing.assert_allclose(got[0, 0, 0, 1], v[0, 0, 0, 0] + (v[0, 0, 0, 1] - v[0, 0, 0, 0]) * 3 / 7,
                               rtol=1e-5)  # x = 1 * (4 - 1) / (8 - 1)
    n = pyir.sym("n")
    assert ty(op.nn.upsampling(pyir.var("s", shape=(1, 2, n, 4)), scale_h=2.0)).shape == (1, 2, n * 2, 4)
    assert ty(op.nn.upsampling(x, scale_h=1.5, scale_w=0.5)).shape == (1, 2, 5, 2)  # rounded (4.5 -> 5)
    v3 = rand(1, 1, 2, 2, 2)
    up3 = op.nn.upsampling3d(pyir.var("z", shape=v3.shape), scale_d=2.0, scale_h=2.0, scale_w=2.0,
                             coordinate_transformation_mode="asymmetric")
    np.testing.assert_array_equal(run(up3, v3), v3.repeat(2, 2).repeat(2, 3).repeat(2, 4))
    with pytest.raises(pyir.AttrError, match="method"):
        op.nn.upsampling(x, method="area")


# -- the Relay signatures ---------------------------------------------------------------------------


def test_concatenate_takes_one_tuple() -> None:
    a, b = pyir.var("a", shape=(2, 3)), pyir.var("b", shape=(2, 5))
    c = op.concatenate([a, b], 1)
    assert c.args == (pyir.Tuple([a, b]),) and c is op.concatenate((a, b), axis=1)
    assert c is op.concatenate(pyir.Tuple([a, b]), axis=1)
    t = pyir.var("t", pyir.TupleType([a.type_annotation, b.type_annotation]))  # a tuple-typed value
    ct = op.concatenate(t, axis=1)
    assert ty(ct).shape == (2, 8)
    va, vb = rand(2, 3), rand(2, 5)
    np.testing.assert_array_equal(run(c, va, vb), np.concatenate([va, vb], axis=1))
    np.testing.assert_array_equal(pyir.evaluate(pyir.Module.from_expr(pyir.Function([t], ct)), (va, vb)),
                                  np.concatenate([va, vb], axis=1))
    with pytest.raises(pyir.WellFormedError, match="one list or tuple"):
        op.concatenate(a, b)  # the former variadic spelling
    with pytest.raises(pyir.WellFormedError, match="at least one"):
        op.concatenate([])
    with pytest.raises(pyir.TypeCheckError, match="tuple"):
        ty(op.concatenate(a))
    f = FuseOps()(pyir.Module.from_expr(op.nn.relu(op.concatenate([op.exp(a), op.exp(b)], axis=1))))
    assert DefuseOps()(f)["main"] is pyir.Module.from_expr(op.nn.relu(op.concatenate(
        [op.exp(a), op.exp(b)], axis=1)))["main"]


def test_nn_pad_relay_signature() -> None:
    v = rand(2, 3)
    x = pyir.var("x", shape=v.shape)
    p = op.nn.pad(x, ((1, 0), (0, 2)), 5.0)
    assert p.args == (x, C(5.0)) and p.attrs["pad_width"] == ((1, 0), (0, 2))
    np.testing.assert_array_equal(run(p, v), np.pad(v, ((1, 0), (0, 2)), constant_values=5.0))
    assert op.nn.pad(x, ((1, 1), (1, 1)), pad_mode="reflect").attrs["pad_mode"] == "reflect"
    z = op.nn.pad(x, ((0, 0), (1, 1)))  # pad_value=0: relay.const(0), an int32 cast to the data's dtype
    assert run(z, v).dtype == np.float32 and run(z, v)[0, 0] == 0.0
    pv = pyir.var("pv", shape=())  # a run-time pad value
    np.testing.assert_array_equal(pyir.evaluate(pyir.Module.from_expr(pyir.Function(
        [x, pv], op.nn.pad(x, ((0, 0), (1, 0)), pv))), v, np.float32(-1))[:, 0], [-1, -1])
    pw = pyir.var("pw", shape=(2, 2), dtype="int64")  # a run-time pad_width: dyn.nn.pad, as Relay
    d = op.nn.pad(x, pw, C(np.float32(0)))
    assert d.op is pyir.Op("dyn.nn.pad")
    text = pyir.Module.from_expr(p).astext()
    assert "nn.pad(%x, 5" in text and "pad_width=[[1, 0], [0, 2]])" in text


def test_take_relay_signature_and_modes() -> None:
    v = np.arange(12, dtype="float32").reshape(3, 4)
    x = pyir.var("x", shape=v.shape)
    i = C(np.array([[0, 5], [13, -1]], "int32"))
    flat = op.take(x, i)  # axis=None: the flattened data
    assert ty(flat).shape == (2, 2)
    assert run(flat, v).tolist() == [[0.0, 5.0], [11.0, 0.0]]  # clip (Relay's default mode)
    assert run(op.take(x, i, mode="wrap"), v).tolist() == [[0.0, 5.0], [1.0, 11.0]]
    assert run(op.take(x, C(np.array([2, 0])), 1), v).tolist() == [[2, 0], [6, 4], [10, 8]]
    with pytest.raises(pyir.EvaluationError):
        run(op.take(x, C(np.array([4])), axis=1, mode="fast"), v)
    bi = np.array([[1, 0], [3, 3], [0, 2]], "int64")  # batch_dims=1: row k takes from data[k]
    bt = op.take(x, C(bi), axis=1, batch_dims=1)
    assert ty(bt).shape == (3, 2)
    np.testing.assert_array_equal(run(bt, v), np.take_along_axis(v, bi, axis=1))
    with pytest.raises(pyir.AttrError, match="mode"):
        op.take(x, i, mode="raise")


# -- the lowering internals -----------------------------------------------------------------------


def test_lowering_internals_type_check_and_run() -> None:
    size = pyir.var("size", shape=(), dtype="int64")
    align = pyir.var("align", shape=(), dtype="int64")
    shape = C(np.array([2, 3], "int64"))
    sto = memory.alloc_storage(size, shape, align, virtual_device="cpu")
    assert ty(sto) is memory.STORAGE_TYPE
    t = memory.alloc_tensor(sto, C(np.int64(0)), shape, const_shape=(2, 3))
    assert ty(t) is pyir.TensorType((2, 3), "float32")
    assert ty(memory.alloc_tensor(sto, C(np.int64(0)), shape)).shape == (pyir.Any, pyir.Any)
    assert ty(memory.kill(t)) is pyir.TupleType([])
    out = pyir.evaluate(pyir.Module.from_expr(pyir.Function([size, align], t)), np.int64(24), np.int64(64))
    assert out.shape == (2, 3)
    x = pyir.var("x", shape=(2, 4))
    assert ty(vm.shape_of(x)) is pyir.TensorType((2,), "int64")
    r = vm.reshape_tensor(x, vm.shape_of(x), newshape=(4, 2))
    assert ty(r).shape == (4, 2)
    with pytest.raises(pyir.EvaluationError, match="the result, dimension 0 is 2, expected 4"):
        run(r, rand(2, 4))  # the run-time shape (2, 4) rules, and contradicts the type: refused
    f = pyir.Function([p := pyir.var("p", shape=(2, 4))], op.exp(p))
    g = pyir.GlobalVar("f")
    mod = pyir.Module({"f": f, "main": pyir.Function([x], vm.call_lowered(g, pyir.Tuple([x])))})
    assert mod.type_of(mod["main"].body) is pyir.TensorType((2, 4), "float32")
    assert InferType()(mod)["main"] is not None  # type-checks as a module
    with pytest.raises(pyir.EvaluationError, match="lowering"):
        pyir.evaluate(mod, rand(2, 4))
    assert pyir.parse(mod.astext()).astext() == mod.astext()
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]


def test_new_operators_print_parse_and_serialize() -> None:
    """Every new operator's calls go through the text, binary and JSON formats unchanged
    (loaded is constructed: the very same nodes)."""
    x = pyir.var("x", shape=(2, 8, 4, 4))
    a, b = pyir.var("a", shape=(2, 3, 4)), pyir.var("b", shape=(2, 5, 4))
    i8 = pyir.var("i", shape=(1, 2, 4, 4), dtype="int8")
    w8 = pyir.var("w", shape=(3, 2, 3, 3), dtype="int8")
    outs = [
        op.on_device(x, virtual_device="cuda:0", constrain_result=True),
        op.device_copy(x, src_virtual_device="cpu", dst_virtual_device="cuda:0"),
        op.nn.batch_matmul(a, b, out_dtype="float32"),
        op.layout_transform(x, src_layout="NCHW", dst_layout="NCHW4c"),
        op.collapse_sum_to(x, shape=(4, 1)), op.collapse_sum_like(x, pyir.var("l", shape=(8, 1, 1))),
        op.full_like(x, C(np.float32(2))), op.floor_mod(x, x), op.trunc_divide(x, x),
        op.nn.upsampling(x, scale_h=2.0, scale_w=2.0, method="bilinear"),
        op.nn.conv2d(i8, w8, out_dtype="int32"),
        op.concatenate([x, x], axis=1), op.nn.pad(x, ((0, 0), (0, 0), (1, 1), (2, 2)), 1.5),
        op.take(x, C(np.array([1, 0])), axis=3, mode="wrap"),
        memory.kill(x), vm.shape_of(x), vm.reshape_tensor(x, vm.shape_of(x), newshape=(16, 16)),
    ]
    mod = pyir.Module.from_expr(pyir.Tuple(outs))
    text = mod.astext()
    parsed = pyir.parse(text)  # (new variables: alpha-equal, and the same text)
    assert parsed.astext() == text and pyir.alpha_equal(parsed["main"], mod["main"])
    assert pyir.loads(pyir.dumps(mod))["main"] is mod["main"]
    assert pyir.from_json(pyir.to_json(mod))["main"] is mod["main"]
    assert len(mod.type_of(mod["main"].body).fields) == len(outs)

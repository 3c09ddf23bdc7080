"""The ml_dtypes tensor dtypes (bfloat16, float8, float6, float4, int4/uint4, int2/uint2): types,
constants, the text, binary and JSON formats, float relations, casts; and pyir without ml_dtypes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.ir.types import (
    CORE_DTYPES,
    EXTENDED_DTYPES,
    TENSOR_DTYPES,
    dtype_kind,
    dtype_range,
    is_float_dtype,
    normalize_dtype,
)

ml_dtypes = pytest.importorskip("ml_dtypes")  # comes with onnx (a test dependency)

FLOATS = ["bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
          "float4_e2m1fn"]
INTS = ["int4", "uint4", "int2", "uint2"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_extended_dtypes_are_tensor_dtypes() -> None:
    """With ml_dtypes, the core set is unchanged and the extended set follows it."""
    assert TENSOR_DTYPES == CORE_DTYPES + EXTENDED_DTYPES
    assert CORE_DTYPES[0] == "bool" and "complex128" in CORE_DTYPES and "bfloat16" not in CORE_DTYPES
    for d in FLOATS + INTS + ["float8_e8m0fnu"]:
        assert d in EXTENDED_DTYPES
        assert normalize_dtype(d) == d
        assert normalize_dtype(getattr(ml_dtypes, d)) == d
        assert normalize_dtype(np.dtype(getattr(ml_dtypes, d))) == d


def test_kinds_and_ranges() -> None:
    """bfloat16 and float8 are floats, int4 an integer (numpy itself calls most of them 'V')."""
    assert np.dtype(ml_dtypes.bfloat16).kind == "V"
    assert [dtype_kind(d) for d in ("bfloat16", "float8_e5m2", "int4", "uint4", "bool", "int8", "float32")] \
        == ["f", "f", "i", "u", "b", "i", "f"]
    assert is_float_dtype("float8_e4m3fn") and not is_float_dtype("int4") and not is_float_dtype("complex64")
    assert dtype_range("float8_e5m2") == (-57344.0, 57344.0)
    assert dtype_range("float8_e4m3fn") == (-448.0, 448.0)
    assert dtype_range("float8_e4m3fnuz") == (-240.0, 240.0)
    assert dtype_range("int4") == (-8, 7) and dtype_range("uint4") == (0, 15)
    assert dtype_range("int2") == (-2, 1)
    assert dtype_range("int8") == (-128, 127) and dtype_range("bool") == (False, True)
    with pytest.raises(pyir.WellFormedError):
        dtype_kind("float128")
    with pytest.raises(pyir.WellFormedError):
        dtype_range("complex64")


@pytest.mark.parametrize("dtype", EXTENDED_DTYPES)
def test_types_constants_and_formats(dtype: str) -> None:
    """Types and constants of each dtype print, parse, dump and load to the same nodes."""
    t = pyir.TensorType((2, "n"), dtype)
    assert t.dtype == dtype and pyir.TensorType((2, "n"), getattr(ml_dtypes, dtype)) is t
    x = pyir.var("x", shape=(3,), dtype=dtype)
    vals = np.array([1.0, 0.0, 1.0]).astype(dtype)
    k = pyir.const(vals)
    assert k.dtype == dtype and k.checked_type is x.type_annotation
    assert pyir.const(vals.copy()) is k
    m = pyir.Module({"main": pyir.Function([x], pyir.Tuple([x, k]))})
    text = m.astext()
    assert f"Tensor[(3), {dtype}]" in text and f"= {dtype} (3)" in text
    m2 = pyir.parse(text)
    assert m2.astext() == text and m2["main"].body.fields[1] is k
    assert pyir.loads(pyir.dumps(m))["main"] is m["main"]
    assert pyir.from_json(pyir.to_json(m))["main"] is m["main"]
    lit = pyir.parse(f"def @main() {{ tensor([1, 0], {dtype}) }}")["main"].body
    assert lit.dtype == dtype and lit.data.astype(np.float32).tolist()[0] == 1.0


def test_nan_and_inf_constants_round_trip_bit_exactly() -> None:
    """Non-finite float8/bfloat16 data goes through the text's metadata bit for bit."""
    for dtype in ("bfloat16", "float8_e5m2", "float8_e4m3fn"):
        k = pyir.const(np.array([np.nan, np.inf, -0.0, 1.5], np.float32).astype(dtype))
        m = pyir.Module({"main": pyir.Function([], k)})
        assert pyir.parse(m.astext())["main"].body is k
        assert pyir.loads(pyir.dumps(m))["main"].body is k


def test_core_payloads_are_unchanged() -> None:
    """A module of core dtypes dumps to the bytes it did before the extended dtypes (the dtype is
    stored by name: no code moved)."""
    x = pyir.var("x", shape=(2,), dtype="float16")
    m = pyir.Module({"main": pyir.Function([x], op.add(x, pyir.const(np.array([1, 2], np.float16))))})
    blob = pyir.dumps(m)
    assert b"float16" in blob and b"bfloat16" not in blob
    assert pyir.dumps(pyir.loads(blob)) == blob


def test_float_relations_take_bfloat16_and_float8() -> None:
    """Relations that need floats (exp, sqrt, softmax) take bfloat16 and float8 and compute in them."""
    x = pyir.var("x", shape=(4,), dtype="bfloat16")
    f = pyir.Function([x], op.exp(x))
    assert f.body.checked_type == pyir.TensorType((4,), "bfloat16")
    v = np.array([0.0, 1.0, -1.0, 2.0], np.float32).astype(ml_dtypes.bfloat16)
    y = pyir.evaluate(f, v)
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(y.astype(np.float32), np.exp(v.astype(np.float32)), rtol=1e-2)
    s = pyir.var("s", shape=(2, 3), dtype="float8_e5m2")
    assert op.nn.softmax(s).checked_type.dtype == "float8_e5m2"
    i = pyir.var("i", shape=(4,), dtype="int4")  # typed like TVM (identity), but no integer kernel
    assert pyir.Function([i], op.exp(i)).body.checked_type == pyir.TensorType((4,), "int4")
    with pytest.raises(pyir.TypeCheckError, match="floating-point"):
        pyir.Function([i], op.isnan(i)).body.checked_type


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_cast_to_and_from(dtype: str) -> None:
    """op.cast converts float32 to each dtype and back as ml_dtypes does (round to nearest even)."""
    x = pyir.var("x", shape=(5,))
    f = pyir.Function([x], op.cast(op.cast(x, dtype=dtype), dtype="float32"))
    v = np.array([0.0, 1.0, -1.0, 0.3, 3.0], np.float32)
    want = v.astype(dtype).astype(np.float32)
    np.testing.assert_array_equal(pyir.evaluate(f, v), want)


def test_interpreter_checks_extended_input_dtypes() -> None:
    """evaluate converts inputs to the parameter's dtype and rejects a wrong one."""
    x = pyir.var("x", shape=(2,), dtype="bfloat16")
    f = pyir.Function([x], op.add(x, x))
    y = pyir.evaluate(f, np.array([1.5, 2.0], np.float32).astype(ml_dtypes.bfloat16))
    assert y.dtype == ml_dtypes.bfloat16 and y.astype(np.float32).tolist() == [3.0, 4.0]
    with pytest.raises(pyir.EvaluationError, match="bfloat16"):
        pyir.evaluate(f, np.array([1.5, 2.0], np.float16))


def test_unknown_dtype_names_still_fail() -> None:
    """Names near the new ones are not dtypes; the text parser says so."""
    for bad in ("float8", "bfloat", "int3"):
        with pytest.raises(pyir.WellFormedError):
            pyir.TensorType((1,), bad)
    with pytest.raises(pyir.ParseError, match="unknown dtype"):
        pyir.parse("def @main(%x: Tensor[(1), float8]) { %x }")


def test_pyir_works_without_ml_dtypes(tmp_path) -> None:
    """Without ml_dtypes, pyir imports with numpy's dtypes only; a payload holding bfloat16 is a
    clean SerializeError, a bfloat16 type a WellFormedError."""
    x = pyir.var("x", shape=(2,), dtype="bfloat16")
    payload = tmp_path / "bf16.pyir"
    payload.write_bytes(pyir.dumps(pyir.Module({"main": pyir.Function([x], x)})))
    code = textwrap.dedent(f"""
        import sys
        sys.modules["ml_dtypes"] = None  # import ml_dtypes raises ImportError
        import numpy as np
        import pyir
        from pyir.ir.types import CORE_DTYPES, EXTENDED_DTYPES, TENSOR_DTYPES
        assert EXTENDED_DTYPES == () and TENSOR_DTYPES == CORE_DTYPES
        x = pyir.var("x", shape=(2,), dtype="float32")
        f = pyir.Function([x], pyir.op.exp(x))
        assert pyir.evaluate(f, np.zeros(2, np.float32)).tolist() == [1.0, 1.0]
        assert pyir.loads(pyir.dumps(pyir.Module({{"main": f}})))["main"] is f
        try:
            pyir.TensorType((1,), "bfloat16")
        except pyir.WellFormedError:
            pass
        else:
            raise SystemExit("bfloat16 accepted without ml_dtypes")
        try:
            pyir.loads(open({str(payload)!r}, "rb").read())
        except pyir.SerializationError as e:
            assert "bfloat16" in str(e), e
        else:
            raise SystemExit("bfloat16 payload loaded without ml_dtypes")
        print("ok")
    """)
    env = {**os.environ, "PYTHONPATH": ROOT}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_results_keep_their_declared_dtype(dtype: str) -> None:
    """ml_dtypes' matmul returns float32 for bfloat16/float8 inputs: the interpreter (and so
    FoldConstant) gives the declared dtype."""
    a = pyir.var("a", shape=(2, 3), dtype=dtype)
    b = pyir.var("b", shape=(3, 2), dtype=dtype)
    f = pyir.Function([a, b], op.nn.softmax(op.matmul(a, b)))
    x = np.ones((2, 3), np.float32).astype(dtype)
    y = np.ones((3, 2), np.float32).astype(dtype)
    assert np.matmul(x, y).dtype == np.float32  # what numpy does
    r = pyir.evaluate(f, x, y)
    assert r.dtype == np.dtype(dtype) and r.astype(np.float32).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    prod = pyir.Function([], op.matmul(pyir.const(x), pyir.const(y)))
    c = pyir.transform.FoldConstant()(pyir.Module({"main": prod}))["main"].body
    assert isinstance(c, pyir.Constant) and c.dtype == dtype
    assert c.data.astype(np.float32).tolist() == [[3, 3]] * 2

"""Issue 10, node constructors and interning: text, integer ranges, frozen constants,
final node kinds, attribute keys, and junk thrown at every public constructor."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _fuzz import fuzz_settings
from hypothesis import given
from hypothesis import strategies as st

import pyir
from pyir import op
from pyir.errors import FinalKindError
from pyir.ir import adt, dims
from pyir.ir.node import MAX_ATTR_DEPTH, MAX_INDEX, Node
from pyir.ir.types import TENSOR_DTYPES, Type

BAD = "a\ud800b"  # a lone surrogate: not valid Unicode, cannot be UTF-8 encoded


def _roundtrips(m: pyir.Module) -> None:
    """The binary and JSON formats give the module back."""
    assert pyir.loads(pyir.dumps(m))["main"] is m["main"]
    assert pyir.from_json(pyir.to_json(m))["main"] is m["main"]


# -- item 4: strings that are not valid Unicode ----------------------------------------------


@pytest.mark.parametrize("build, error", [
    (lambda: pyir.Attrs(a=BAD), pyir.AttrError),
    (lambda: pyir.Attrs({BAD: 1}), pyir.AttrError),
    (lambda: pyir.Attrs(a=("x", (1, [BAD]))), pyir.AttrError),
    (lambda: pyir.GlobalVar(BAD), pyir.WellFormedError),
    (lambda: pyir.Var(BAD), pyir.WellFormedError),
    (lambda: pyir.var(BAD, shape=(2,)), pyir.WellFormedError),
    (lambda: pyir.Op(BAD), pyir.UnknownOpError),
    (lambda: pyir.TensorType((2,), BAD), pyir.WellFormedError),
    (lambda: pyir.Function([], pyir.const(1.0), None, {"a": BAD}), pyir.AttrError),
    (lambda: pyir.Function([], pyir.const(1.0), None, {BAD: 1}), pyir.AttrError),
    (lambda: pyir.Call(pyir.GlobalVar("f"), (), {"s": (BAD,)}), pyir.AttrError),
], ids=["attr value", "attr key", "nested attr value", "GlobalVar", "Var", "var()", "Op", "dtype",
        "function attr value", "function attr key", "call attr"])
def test_lone_surrogates_are_rejected_with_pyir_errors(build, error):
    """issue 10 item 4: lone surrogates raise a pyir error naming the field, not UnicodeEncodeError."""
    with pytest.raises(error) as e:
        build()
    assert not isinstance(e.value, UnicodeError)


def test_lone_surrogate_error_names_the_field():
    """issue 10 item 4: the message says which field and where the surrogate is."""
    with pytest.raises(pyir.WellFormedError, match=r"GlobalVar name.*not valid Unicode.*position 1"):
        pyir.GlobalVar(BAD)
    with pytest.raises(pyir.AttrError, match=r"attribute 'pad'.*not valid Unicode"):
        pyir.Attrs(pad=BAD)


def test_non_ascii_text_is_accepted_and_round_trips():
    """issue 10 item 4: valid non-ASCII text (accents, CJK, astral emoji) works in every format."""
    x = pyir.var("é日本\U0001f600", shape=(2,))
    f = pyir.Function([x], op.nn.relu(x), None, {"note": ("ünï", "\U0001f600"), "ключ": 1})
    m = pyir.Module({"main": f})
    _roundtrips(m)
    assert pyir.GlobalVar("fé") is pyir.GlobalVar("fé")


def test_str_subclasses_become_plain_str():
    """issue 10 item 4: a str subclass as a name is stored as a plain str."""
    class S(str):
        pass

    v = pyir.Var(S("x"))
    assert type(v.name_hint) is str
    assert type(pyir.GlobalVar(S("g")).name_hint) is str
    assert pyir.Op(S("nn.relu")) is pyir.Op("nn.relu")


# -- item 7: integer fields the formats store in 64 bits -----------------------------------------


@pytest.mark.parametrize("dim", [2**63, 2**64, pytest.param(10**5000, id="10**5000"), -1, -(2**63)])
def test_tensor_dims_out_of_int64_range_are_rejected(dim):
    """issue 10 item 7: dimensions must be in [0, 2**63) (the formats store int64)."""
    with pytest.raises(pyir.WellFormedError, match=r"\[0, 2\*\*63\)"):
        pyir.TensorType((1, dim))


def test_largest_dimension_round_trips():
    """issue 10 item 7: the largest accepted dimension survives the binary and JSON formats."""
    t = pyir.TensorType((MAX_INDEX, 0), "int8")
    x = pyir.var("x", t)
    _roundtrips(pyir.Module({"main": pyir.Function([x], x)}))


@pytest.mark.parametrize("dim", [True, False, np.bool_(True), 2.0, "3", None, b"1", np.float32(2),
                                 (2,)])
def test_tensor_dims_must_be_ints(dim):
    """issue 10 item 7 (audit): bools, floats, strings and None are not dimensions."""
    with pytest.raises(pyir.WellFormedError):
        pyir.TensorType((2, dim))


def test_numpy_int_dims_are_normalized():
    """issue 10 item 7 (audit): numpy ints are accepted as dimensions and stored as ints."""
    t = pyir.TensorType((np.int64(2), np.uint8(3)))
    assert t is pyir.TensorType((2, 3)) and all(type(d) is int for d in t.shape)
    assert pyir.TensorType(np.array([2, 3])) is t
    with pytest.raises(pyir.WellFormedError):
        pyir.TensorType((np.uint64(2**63),))


@pytest.mark.parametrize("index", [-1, 2**63, pytest.param(10**5000, id="10**5000"), True, 1.0,
                                   np.bool_(False), "0", None])
def test_tuple_get_item_index_range(index):
    """issue 10 item 7: a TupleGetItem index is an int in [0, 2**63); others are WellFormedError."""
    t = pyir.Tuple([pyir.var("a", shape=(1,))])
    with pytest.raises(pyir.WellFormedError):
        pyir.TupleGetItem(t, index)


def test_tuple_get_item_numpy_index():
    """issue 10 item 7 (audit): a numpy int index is stored as an int."""
    t = pyir.Tuple([pyir.var("a", shape=(1,))])
    g = pyir.TupleGetItem(t, np.int32(0))
    assert g is pyir.TupleGetItem(t, 0) and type(g.index) is int


def test_attribute_ints_are_bounded_and_big_ones_round_trip():
    """issue 10 item 7: attribute ints must be below 2**1024 in magnitude (stored as text
    beyond int64); ints just past int64 and near the bound round-trip."""
    for bad in (2**1024, -(2**1024), 10**5000):
        with pytest.raises(pyir.AttrError, match="out of range"):
            pyir.Attrs(a=bad)
    with pytest.raises(pyir.AttrError, match="out of range"):
        pyir.Attrs(a=(1, (2, 10**400)))
    x = pyir.var("x", shape=(2,))
    big = {"a": 2**63, "b": -(2**63) - 1, "c": 2**1024 - 1, "d": -(2**1024) + 1, "e": (2**64, 1)}
    _roundtrips(pyir.Module({"main": pyir.Function([x], x, None, big)}))


# -- item 9: constants cannot be changed in place ------------------------------------------------


def test_constant_data_cannot_change_the_constant():
    """issue 10 item 9: reshaping, retyping or restriding ``k.data`` never changes ``k``."""
    k = pyir.const(np.arange(4, dtype="float32"))
    ty = k.checked_type
    d = k.data
    d.shape = (2, 2)
    assert k.data.shape == (4,) and k.shape == (4,) and k.checked_type is ty
    d = k.data
    d.dtype = np.dtype("int32")
    assert k.data.dtype == np.float32 and k.dtype == "float32"
    d = k.data
    with warnings.catch_warnings():  # numpy >= 2.4 deprecates setting strides; the attack stays possible
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            d.strides = (0,)
        except AttributeError:  # a numpy that removed the setter
            pass
    assert k.data.strides == (4,)
    np.testing.assert_array_equal(k.data, np.arange(4, dtype="float32"))
    assert pyir.const(np.arange(4, dtype="float32")) is k
    assert pyir.infer_type(pyir.Tuple([k])).fields[0] is pyir.TensorType((4,))


def test_constant_data_is_read_only_for_good():
    """issue 10 item 9: the data cannot be written nor made writable again."""
    k = pyir.const(np.arange(6, dtype="int64").reshape(2, 3))
    with pytest.raises(ValueError):
        k.data[0, 0] = 7
    with pytest.raises(ValueError):
        k.data.setflags(write=True)
    assert k.data.base is not None and not k.data.flags.writeable
    assert k.data[0, 0] == 0 and k.data is not k.data  # a fresh view every time


def test_constant_source_array_changes_do_not_leak():
    """issue 10 item 9: the constant copies its input; later writes to the input are not seen."""
    a = np.arange(4, dtype="float32")
    k = pyir.const(a)
    a[0] = 99
    a.shape = (2, 2)
    assert k.data[0] == 0 and k.shape == (4,)


def test_bool_constants_are_canonical_bytes():
    """issue 10 item 9 (audit): a bool view of non-0/1 bytes is the same constant as True."""
    odd = np.array([2, 0, 255], "uint8").view(bool)
    assert pyir.const(odd) is pyir.const(np.array([True, False, True]))
    assert pyir.const(odd).data.view("uint8").tolist() == [1, 0, 1]


@pytest.mark.parametrize("dtype", ["longdouble", "clongdouble", "datetime64[s]", "U3", "V4", "O",
                                   [("a", "f4")]])
def test_unsupported_dtypes_are_rejected(dtype):
    """issue 10 item 9 (audit): only TENSOR_DTYPES; long double (platform padding bytes) and
    non-numeric dtypes raise WellFormedError in both constants and types."""
    with pytest.raises(pyir.WellFormedError):
        pyir.TensorType((1,), dtype)
    with pytest.raises(pyir.WellFormedError):
        pyir.const(np.zeros(1, dtype))


@pytest.mark.parametrize("dtype", TENSOR_DTYPES)
def test_every_tensor_dtype_round_trips(dtype):
    """issue 10 item 9 (audit): every supported dtype round-trips in constants and types."""
    k = pyir.const(np.ones(3, dtype))
    x = pyir.var("x", shape=(3,), dtype=dtype)
    assert k.dtype == dtype and k.checked_type is x.type_annotation
    _roundtrips(pyir.Module({"main": pyir.Function([x], pyir.Tuple([x, k]))}))


# -- items 10, 11: node kinds are final ------------------------------------------------------------

CONCRETE = [pyir.Var, pyir.GlobalVar, pyir.Constant, pyir.Op, pyir.Call, pyir.Tuple,
            pyir.TupleGetItem, pyir.Function, pyir.Let, pyir.If, pyir.TensorType, pyir.TupleType,
            pyir.FuncType, pyir.Attrs,
            dims.Sym, dims.AnyDim, dims.DimPoly, dims.DimFloorDiv, dims.DimMod,
            # pyir.ir.adt (issue 14: ADTs, match, references, type variables)
            adt.TypeVar, adt.GlobalTypeVar, adt.TypeCall, adt.RefType, adt.TypeData, adt.Constructor,
            adt.PatternWildcard, adt.PatternVar, adt.PatternConstructor, adt.PatternTuple, adt.Clause,
            adt.Match, adt.RefCreate, adt.RefRead, adt.RefWrite]


def _concrete_kinds() -> set[type]:
    seen, stack = set(), [Node]
    while stack:
        for sub in stack.pop().__subclasses__():
            if sub not in seen:
                seen.add(sub)
                stack.append(sub)
    return {k for k in seen if k._final}


def test_every_concrete_kind_is_listed():
    """issue 10 item 11: the test below covers every concrete node kind."""
    assert _concrete_kinds() == set(CONCRETE)


@pytest.mark.parametrize("kind", CONCRETE, ids=lambda k: k.__name__)
def test_concrete_kinds_cannot_be_subclassed(kind):
    """issue 10 items 10, 11: subclassing a node kind raises FinalKindError (a TypeError), with
    or without ``__slots__``, so no subclass instance can become or re-key a canonical node."""
    with pytest.raises(FinalKindError, match=kind.__name__):
        type("Sub", (kind,), {"__slots__": ()})
    with pytest.raises(TypeError):
        class D(kind):  # type: ignore[misc, valid-type]
            pass


@pytest.mark.parametrize("base", [Node, pyir.Expr, Type], ids=lambda k: k.__name__)
def test_abstract_bases_are_closed_outside_pyir(base):
    """issue 10 items 10, 11: the set of kinds is closed; Node/Expr/Type are not extended outside pyir."""
    with pytest.raises(FinalKindError):
        type("Mine", (base,), {"__slots__": ()})


def test_call_and_tuple_stay_canonical():
    """issue 10 items 10, 11: after failed subclass attempts the builders return exact kinds whose
    ids are their content digests (the ids a fresh process computes)."""
    y = pyir.var("y", shape=(2,))
    a, b = pyir.const(1.0), pyir.const(2.0)
    tid = pyir.Tuple([a, b]).id
    for kind in (pyir.Call, pyir.Tuple):
        with pytest.raises(FinalKindError):
            type("E", (kind,), {"__slots__": ()})
    assert type(op.nn.relu(y)) is pyir.Call and type(pyir.Tuple([a, b])) is pyir.Tuple
    assert pyir.Tuple([a, b]).id == tid
    assert not hasattr(pyir.Tuple([a, b]), "__dict__")


def test_constructors_ignore_a_foreign_cls():
    """issue 10 item 10 (audit): ``Kind.__new__(OtherKind, ...)`` still builds the exact kind."""
    a = pyir.const(1.0)
    assert type(pyir.Tuple.__new__(pyir.Var, [a])) is pyir.Tuple  # type: ignore[arg-type]
    assert type(pyir.Call.__new__(pyir.Tuple, "nn.relu", (a,))) is pyir.Call  # type: ignore[arg-type]


# -- item 14: attribute keys and mappings ---------------------------------------------------------


def test_mixed_attribute_keys_raise_attr_error_naming_the_key():
    """issue 10 item 14: a non-str key among str keys is an AttrError naming it (not TypeError)."""
    with pytest.raises(pyir.AttrError, match="must be str, got 1"):
        pyir.Attrs({1: 1, "a": 2})
    with pytest.raises(pyir.AttrError, match=r"got \(1, 2\)"):
        pyir.Function([], pyir.const(1.0), None, {"a": 1, (1, 2): 2})


@pytest.mark.parametrize("junk", [5, [("a", 1)], "ab", np.zeros(2), object()])
def test_attrs_of_a_non_mapping_is_attr_error(junk):
    """issue 10 item 14 (audit): Attrs, Function and Call reject non-mappings with AttrError."""
    with pytest.raises(pyir.AttrError):
        pyir.Attrs(junk)
    with pytest.raises(pyir.AttrError):
        pyir.Function([], pyir.const(1.0), None, junk)
    with pytest.raises(pyir.AttrError):
        pyir.Call(pyir.Op("nn.relu"), (pyir.const(1.0),), junk)
    with pytest.raises(pyir.AttrError):
        pyir.Call(pyir.GlobalVar("f"), (), junk)


def test_attribute_nesting_is_bounded():
    """issue 10 item 14 (audit): tuples nest at most MAX_ATTR_DEPTH deep (what loaders accept);
    deeper values and self-referencing lists are AttrError, not RecursionError."""
    v: object = 1
    for _ in range(MAX_ATTR_DEPTH):
        v = (v,)
    x = pyir.var("x", shape=(2,))
    _roundtrips(pyir.Module({"main": pyir.Function([x], x, None, {"deep": v})}))
    with pytest.raises(pyir.AttrError, match="nested deeper"):
        pyir.Attrs(deep=(v,))
    loop: list = []
    loop.append(loop)
    with pytest.raises(pyir.AttrError):
        pyir.Attrs(a=loop)


# -- audit: junk at every public constructor -------------------------------------------------------

_X = pyir.var("x", shape=(2,))
_T = pyir.TensorType((2,))

_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.sampled_from([2**63, -(2**63) - 1, 10**400, 2**1024]),
    st.floats(allow_nan=True), st.text(max_size=4), st.sampled_from([BAD, "", "nn.relu", "float32", "add"]),
    st.binary(max_size=17), st.sampled_from([_X, _T, pyir.const(1.0), pyir.Op("add"), pyir.GlobalVar("g"),
                                             pyir.Attrs(a=1), np.int64(3), np.float32(math.nan),
                                             np.bool_(True), np.zeros((2, 0)), np.zeros(2, "U1"),
                                             np.dtype("f4"), object(), 1j, int, np.float32]),
)
_junk = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.tuples(inner, inner), st.dictionaries(st.text(max_size=2), inner,
                                                                          max_size=2),
    st.dictionaries(st.integers(), inner, max_size=2), st.frozensets(st.integers(), max_size=2)),
    max_leaves=6)

_CONSTRUCTORS = {  # name: (constructor, fewest arguments, most positional arguments)
    "Var": (pyir.Var, 1, 3), "GlobalVar": (pyir.GlobalVar, 1, 1), "Constant": (pyir.Constant, 1, 2),
    "Op": (pyir.Op, 1, 1), "Call": (pyir.Call, 1, 3), "Tuple": (pyir.Tuple, 1, 1),
    "TupleGetItem": (pyir.TupleGetItem, 2, 2), "Function": (pyir.Function, 2, 4),
    "Let": (pyir.Let, 3, 3), "If": (pyir.If, 3, 3), "TensorType": (pyir.TensorType, 0, 2),
    "TupleType": (pyir.TupleType, 1, 1), "FuncType": (pyir.FuncType, 2, 2),
    "Attrs": (pyir.Attrs, 0, 1), "var": (pyir.var, 1, 2), "const": (pyir.const, 1, 2),
    "as_expr": (pyir.as_expr, 1, 1),
}


@fuzz_settings
@given(name=st.sampled_from(sorted(_CONSTRUCTORS)), args=st.lists(_junk, min_size=4, max_size=4),
       kw=st.dictionaries(st.sampled_from(["shape", "dtype", "a", "padding"]), _junk, max_size=2))
def test_fuzz_constructors_raise_only_pyir_errors(name, args, kw):
    """issue 10 audit: junk given to any public constructor builds a node or raises a PyIRError."""
    build, lo, hi = _CONSTRUCTORS[name]
    calls = [args[:n] for n in range(lo, hi + 1)]
    for a in calls:
        try:
            node = build(*a)
        except pyir.PyIRError:
            continue
        assert isinstance(node, Node) and type(node)._final
    if name in ("Attrs", "var"):  # keyword arguments
        try:
            if name == "var":
                build(*args[:1], **{k: v for k, v in kw.items() if k in ("shape", "dtype")})
            else:
                build(**kw)
        except pyir.PyIRError:
            pass


@pytest.mark.parametrize("value", [10**400, pytest.param(10**5000, id="10**5000")])
def test_float_attribute_overflow_is_attr_error(value):
    """issue 10 audit: a float attribute given an int too large for a float is an AttrError."""
    x = pyir.var("x", shape=(2,))
    with pytest.raises(pyir.AttrError, match="expected float"):
        pyir.Call("nn.leaky_relu", (x,), {"alpha": value})


def test_attrs_lookup_with_unhashable_names():
    """issue 10 item 14 (audit): looking up a non-str (even unhashable) name is AttrError / absent."""
    a = pyir.Attrs(a=1)
    with pytest.raises(pyir.AttrError):
        a[[1]]  # type: ignore[index]
    assert [1] not in a and a.get([1], 5) == 5  # type: ignore[arg-type]
    assert a["a"] == 1 and "a" in a and a.get("b") is None


def test_module_check_of_functions_without_inner_binders():
    """issue 11 item 5: the plain-walk check of functions without lets or inner functions
    accepts exactly the closed ones (a free var, even under a call of a function var, is still
    rejected with the general check's message), and is iterative (10^5-deep chain)."""
    x, y = pyir.var("x", shape=(2,)), pyir.var("y", shape=(2,))
    f = pyir.var("f", pyir.FuncType([pyir.TensorType((2,))], pyir.TensorType((2,))))
    pyir.Module({"main": pyir.Function([x, y], op.add(x, pyir.Tuple([x, y])[1]))})
    pyir.Module({"main": pyir.Function([x, f], pyir.Call(f, [x]))})
    for body in (op.add(x, y), pyir.Call(f, [x]), y, pyir.If(pyir.const(True), x, op.exp(y))):
        with pytest.raises(pyir.WellFormedError, match="free variable"):
            pyir.Module({"main": pyir.Function([x], body)})
    h = x
    for _ in range(100_000):
        h = op.nn.relu(h)
    pyir.Module({"main": pyir.Function([x], h)})
    with pytest.raises(pyir.WellFormedError, match="free variable"):
        pyir.Module({"main": pyir.Function([x], op.add(h, y))})

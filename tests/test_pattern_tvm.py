"""The cases of TVM's dataflow-pattern tests (tests/python/relay/test_dataflow_pattern.py at
v0.18.0), one test per case or group of cases, named after it, on programs of our own built with
pyir's builders.  Every case agrees with TVM's answer, or says why pyir's differs (hash-consing:
two structurally identical subexpressions are one node).

Relay spells some things differently: ``relay.var("x")`` is ``pyir.var("x")``, ``x + y`` builds
``add`` in both; ``node_map[p][0]`` works as in Relay (the callback's third argument maps each
pattern to the list of nodes it matched).
"""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.rewrite.partition import DFPatternCallback, partition, rewrite
from pyir.rewrite.pattern import (
    COMMUTATIVE,
    AltPattern,
    AttrPattern,
    CallPattern,
    ConstantPattern,
    DominatorPattern,
    ExprPattern,
    FunctionPattern,
    IfPattern,
    LetPattern,
    TupleGetItemPattern,
    TuplePattern,
    TypePattern,
    VarPattern,
    WildcardPattern,
    dominates,
    has_dtype,
    has_shape,
    has_type,
    is_constant,
    is_expr,
    is_if,
    is_let,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from pyir.testing import assert_structural_equal

ELEMWISE, BROADCAST, INJECTIVE = 0, 1, 2  # TVM's OpPatternKind numbers (pyir.ir.opdef.OpPattern)
PFP = "PartitionedFromPattern"


def v(name, shape=None):
    """A variable: untyped, of a static shape (float32), or of a given type."""
    if shape is None:
        return pyir.var(name)
    if isinstance(shape, pyir.Type):
        return pyir.var(name, shape)
    return pyir.var(name, shape=shape)


def fn(params, body, label=None, **attrs):
    f = pyir.Function(params, body)
    if label is not None:
        attrs[PFP] = label
    return f.with_attrs(**attrs) if attrs else f


def call(f, *args):
    return pyir.Call(f, list(args))


def concat(*xs):
    """``concatenate`` of ``xs`` along axis 0, in whichever form pyir's operator takes (one tuple
    argument, as Relay, or the tensors as arguments)."""
    if pyir.Op("concatenate").op_def.num_inputs == 1:
        return op.concatenate(pyir.Tuple(list(xs)), axis=0)
    return op.concatenate(*xs, axis=0)


def concat_pattern():
    """Any concatenate, whatever its number of inputs."""
    if pyir.Op("concatenate").op_def.num_inputs == 1:
        return is_op("concatenate")(is_tuple(None))
    return is_op("concatenate")(None)


# -- node tests: the pattern objects and their fields ----------------------------------------


def test_expr_pattern():
    """is_expr keeps the expression it matches."""
    p = is_expr(v("a", (3, 2)))
    assert isinstance(p, ExprPattern) and isinstance(p.expr, pyir.Var)


def test_var_pattern():
    """is_var(name) keeps the name it requires."""
    p = is_var("a")
    assert isinstance(p, VarPattern) and p.name == "a"
    assert is_var().name == ""


def test_constant_pattern():
    assert isinstance(is_constant(), ConstantPattern)


def test_wildcard_pattern():
    assert isinstance(wildcard(), WildcardPattern)


def test_CallPattern():
    """A call pattern keeps its argument patterns."""
    a, b = wildcard(), wildcard()
    p = is_op("multiply")(a, b)
    assert isinstance(p, CallPattern) and p.args == (a, b)


def test_FunctionPattern():
    """A function pattern keeps its parameter and body patterns."""
    a, b = wildcard(), wildcard()
    body = is_op("subtract")(a, b)
    p = FunctionPattern([a, b], body)
    assert isinstance(p, FunctionPattern) and p.params == (a, b) and p.body is body
    assert isinstance(p.body, CallPattern) and p.body.args == (a, b)


def test_TuplePattern():
    a, b = wildcard(), wildcard()
    p = is_tuple([a, b])
    assert isinstance(p, TuplePattern) and p.fields == (a, b)
    assert is_tuple(None).fields is None


def test_TupleGetItemPattern():
    a, b = wildcard(), wildcard()
    t = is_tuple([a, b])
    p = is_tuple_get_item(t, 0)
    assert isinstance(p, TupleGetItemPattern) and p.tuple_value is t and p.index == 0
    assert isinstance(p.tuple_value.fields[1], WildcardPattern)
    assert is_tuple_get_item(t, -1).index is None  # Relay's "any index"


def test_AltPattern():
    assert isinstance(is_op("maximum") | is_op("minimum"), AltPattern)


def test_TypePattern():
    t = pyir.TensorType((4, 4), "float32")
    p = has_type(t)
    assert isinstance(p, TypePattern) and p.ty is t


def test_DataTypePattern():
    """pyir has one TypePattern class for type, dtype and shape constraints."""
    p = has_dtype("float16")
    assert isinstance(p, TypePattern) and p.dtype == "float16"


def test_ShapePattern():
    p = has_shape([8, 8])
    assert isinstance(p, TypePattern) and p.shape == (8, 8)


def test_AttrPattern():
    p = is_op("subtract").has_attr({"TOpPattern": BROADCAST})
    assert isinstance(p, AttrPattern) and p.attrs["TOpPattern"] == BROADCAST


def test_IfPattern():
    a, b = is_var("a"), is_var("b")
    p = is_if(is_op("greater")(a, b), a, b)
    assert isinstance(p, IfPattern) and isinstance(p.cond, CallPattern)
    assert isinstance(p.true_branch, VarPattern) and isinstance(p.false_branch, VarPattern)


def test_LetPattern():
    a, b, t = is_var("a"), is_var("b"), is_var("t")
    p = is_let(t, is_op("greater")(a, b), t)
    assert isinstance(p, LetPattern) and isinstance(p.var, VarPattern)
    assert isinstance(p.value, CallPattern) and p.body is t


# -- matcher tests ------------------------------------------------------------------------------------------


def test_match_op():
    assert is_op("subtract").match(pyir.Op("subtract"))


def test_no_match_op():
    assert not is_op("subtract").match(pyir.Op("add"))


def test_match_op_or():
    p = is_op("maximum") | is_op("minimum")
    assert p.match(pyir.Op("maximum")) and p.match(pyir.Op("minimum"))
    assert not p.match(pyir.Op("add"))


def test_match_call_commutive():
    """add and multiply match with their arguments swapped (and so do pyir's other commutative
    operators: maximum, minimum, logical and bitwise and/or/xor, equal, not_equal)."""
    a, b = v("a"), v("b")
    for name in ("add", "multiply", "maximum", "minimum", "equal", "not_equal"):
        p = is_op(name)(is_var("a"), is_var("b"))
        assert p.match(pyir.Call(name, [a, b])) and p.match(pyir.Call(name, [b, a])), name
    ia, ib = v("ia", pyir.TensorType((2,), "int32")), v("ib", pyir.TensorType((2,), "int32"))
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        p = is_op(name)(is_var("ia"), is_var("ib"))
        assert p.match(pyir.Call(name, [ib, ia])), name
    assert {"add", "multiply", "logical_and", "logical_or"} <= COMMUTATIVE


def test_no_match_call_commutive():
    """Operators that are not commutative match only in order."""
    a, b = v("a"), v("b")
    for name in ("subtract", "divide", "power", "less"):
        p = is_op(name)(is_var("a"), is_var("b"))
        assert p.match(pyir.Call(name, [a, b])) and not p.match(pyir.Call(name, [b, a])), name


def test_commutative_match_backtracks():
    """pyir goes further than Relay here: when a capture is shared, a commutative call's second
    order is tried again after a later part fails (Relay's matcher keeps the first order that
    matched the call itself)."""
    a, b = v("a"), v("b")
    x, y = wildcard(), wildcard()
    p = is_op("multiply")(is_op("add")(x, y), x)
    m = p.match(op.multiply(op.add(a, b), b))
    assert m is not None and m[x] is b and m[y] is a
    assert not p._det and is_op("add")(x, y)._det  # only the shared capture makes it non-deterministic


def test_match_call():
    a, b = v("a"), v("b")
    assert is_op("subtract")(wildcard(), wildcard()).match(a - b)
    anycall = wildcard()(None)  # a call with any number of arguments
    assert anycall.match(op.tanh(a)) and anycall.match(op.subtract(a, b)) and anycall.match(concat(a, b, a))
    assert not anycall.match(a)


def test_no_match_call():
    a, b = v("a"), v("b")
    assert not is_op("subtract")(wildcard(), wildcard()).match(a * b)


def test_match_func():
    a, b = v("a"), v("b")
    p, q = wildcard(), wildcard()
    assert FunctionPattern([p, q], p * q).match(fn([a, b], a * b))
    anyfn = FunctionPattern(None, wildcard())
    assert anyfn.match(fn([a], a)) and anyfn.match(fn([a, b], a - b))


def test_no_match_func():
    a, b = v("a"), v("b")
    p, q = wildcard(), wildcard()
    assert not FunctionPattern([p, q], p * q).match(fn([a, b], a / b))


def test_match_if():
    pa, pb = is_var("a"), is_var("b")
    p = is_if(is_op("greater")(pa, pb), pa, pb)
    a, b = v("a"), v("b")
    assert p.match(pyir.If(op.greater(a, b), a, b))


def test_no_match_if():
    pa, pb = is_var("a"), is_var("b")
    p = is_if(is_op("greater")(pa, pb), pa, pb)
    a, b = v("a"), v("b")
    assert not p.match(pyir.If(op.less(a, b), a, b))
    assert not p.match(pyir.If(op.greater(a, b), b, a))


def test_match_let():
    pa, pb, pt = is_var("a"), is_var("b"), is_var("t")
    p = is_let(pt, is_op("greater")(pa, pb), pt)
    a, b, t = v("a"), v("b"), v("t")
    assert p.match(pyir.Let(t, op.greater(a, b), t))


def test_no_match_let():
    pa, pb, pt = is_var("a"), is_var("b"), is_var("t")
    p = is_let(pt, is_op("greater")(pa, pb), pt)
    a, b, t = v("a"), v("b"), v("t")
    assert not p.match(pyir.Let(t, op.less(a, b), t))
    assert not p.match(pyir.Let(t, op.greater(a, b), op.multiply(t, a)))


def test_match_option():
    """optional(f) is ``p | f(p)``; a pattern given as the option is used as a callee."""
    d, k, c = v("d"), v("k"), v("c")
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    p = is_op("nn.relu")(conv.optional(lambda q: is_op("nn.bias_add")(q, wildcard())))
    assert p.match(op.nn.relu(op.nn.conv2d(d, k)))
    assert p.match(op.nn.relu(op.nn.bias_add(op.nn.conv2d(d, k), c)))
    chain = is_op("nn.conv2d")(wildcard(), wildcard()).optional(is_op("nn.relu")).optional(is_op("tanh"))
    cv = op.nn.conv2d(d, k)
    assert chain.match(cv) and chain.match(op.nn.relu(cv)) and chain.match(op.tanh(cv))
    assert chain.match(op.tanh(op.nn.relu(cv)))
    assert not chain.match(op.nn.relu(op.tanh(cv)))


def test_no_match_option():
    d, k, c = v("d"), v("k"), v("c")
    p = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()).optional(
        lambda q: is_op("nn.bias_add")(q, wildcard())))
    assert not p.match(op.tanh(op.nn.conv2d(d, k)))
    assert not p.match(op.tanh(op.nn.dense(d, k)))
    assert not p.match(op.nn.relu(op.nn.bias_add(op.nn.dense(d, k), c)))
    assert not p.match(op.nn.relu(op.add(op.nn.conv2d(d, k), k)))


def test_match_const():
    """A constant pattern matches once the weight is bound to a constant."""
    p = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), is_constant()), wildcard())
    d, k, c = v("d", (1, 2, 6, 6)), v("k", (2, 2, 3, 3)), v("c", (2,))
    f = pyir.Function([d, k, c], op.nn.bias_add(op.nn.conv2d(d, k), c))
    assert not p.match(f.body)
    bound = pyir.substitute(f.body, {k: pyir.const(np.full((2, 2, 3, 3), 0.5, "float32"))})
    assert p.match(bound)


def test_match_tuple():
    a, b, sub = v("a"), v("b"), pyir.Op("subtract")
    tp = is_tuple((is_var("a"), wildcard(), is_op("subtract")))
    t = pyir.Tuple([a, b, sub])
    assert tp.match(t)
    assert is_tuple_get_item(tp, 1).match(pyir.TupleGetItem(t, 1))
    anyidx = is_tuple_get_item(tp)
    assert all(anyidx.match(pyir.TupleGetItem(t, i)) for i in range(3))
    anytuple = is_tuple(None)
    assert all(anytuple.match(pyir.Tuple(fs)) for fs in ([a], [a, b], [a, b, sub]))
    c = concat_pattern()
    assert c.match(concat(a)) and c.match(concat(a, b)) and c.match(concat(a, b, a))


def test_no_match_tuple():
    a, b, sub = v("a"), v("b"), pyir.Op("subtract")
    t = pyir.Tuple([a, b, sub])
    assert not is_tuple((is_var("a"), wildcard(), is_op("subtract"), wildcard())).match(t)
    assert not is_tuple_get_item(is_tuple((is_var("a"), wildcard(), is_op("subtract"))), 1).match(
        pyir.TupleGetItem(t, 2))
    assert not is_tuple(None).match(a)


def test_match_type():
    assert has_type(pyir.TensorType((6, 6), "float32")).match(v("a", pyir.TensorType((6, 6), "float32")))


def test_no_match_type():
    assert not has_type(pyir.TensorType((6, 6), "float32")).match(v("a", pyir.TensorType((6, 6), "int32")))


def test_match_dtype():
    assert has_dtype("float32").match(v("a", pyir.TensorType((6, 6), "float32")))


def test_no_match_dtype():
    assert not has_dtype("float32").match(v("a", pyir.TensorType((6, 6), "int32")))


def test_match_shape():
    assert has_shape((6, 6)).match(v("a", pyir.TensorType((6, 6), "float32")))


def test_no_match_shape():
    assert not has_shape((6, 3)).match(v("a", pyir.TensorType((6, 6), "int32")))


def test_match_op_attr():
    """has_attr on an operator queries the operator's own attributes (pyir.rewrite.pattern.OP_ATTRS)."""
    a, b = v("a"), v("b")
    assert is_op("subtract").has_attr({"TOpPattern": BROADCAST})(wildcard(), wildcard()).match(a - b)
    assert is_op("nn.conv2d").has_attr({"TOpPattern": 4}).match(pyir.Op("nn.conv2d"))
    assert wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard()).match(op.sigmoid(a))
    assert is_op("nn.relu").has_attr({"num_inputs": 1, "name": "nn.relu"}).match(pyir.Op("nn.relu"))


def test_no_match_op_attr():
    a, b, t = v("a"), v("b"), v("t")
    assert not is_op("nn.dense").has_attr({"TOpPattern": ELEMWISE})(wildcard(), wildcard()).match(
        op.nn.dense(a, b))
    sub = is_op("subtract").has_attr({"TOpPattern": BROADCAST})(wildcard(), wildcard())
    assert not sub.match(a * b)
    assert not sub.match(pyir.Let(t, a - b, t))
    assert not is_op("nn.relu").has_attr({"NoSuchOpAttr": 1}).match(pyir.Op("nn.relu"))


def test_match_func_attr():
    a, b = v("a"), v("b")
    assert wildcard().has_attr({"Composite": "sub"}).match(fn([a, b], a - b, Composite="sub"))


def test_no_match_func_attr():
    a, b = v("a"), v("b")
    p = wildcard().has_attr({"Composite": "sub"})
    assert not p.match(fn([a, b], a - b, Other="sub"))
    assert not p.match(fn([a, b], a - b, Composite="mul"))


def test_match_call_attr():
    """Call attributes: strings, arrays (a list matches the tuple pyir stores), calls of
    functions with attributes, and the empty requirement."""
    a, b = v("a"), v("b")
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    assert conv.has_attr({"data_layout": "NCHW"}).match(op.nn.conv2d(a, b))
    assert conv.has_attr({"kernel_size": [5, 5]}).match(op.nn.conv2d(a, b, kernel_size=(5, 5)))
    g, h = v("g"), v("h")
    attrs_call = pyir.Call(g, [h], {"call_attr": "yes"})
    assert wildcard()(wildcard()).has_attr({"call_attr": "yes"}).match(attrs_call)
    empty = wildcard()(wildcard()).has_attr({})
    assert empty.match(pyir.Call(g, [h])) and empty.match(attrs_call)


def test_no_match_call_attr():
    a, b = v("a"), v("b")
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    assert not conv.has_attr({"data_layout": "NHWC"}).match(op.nn.conv2d(a, b))
    assert not conv.has_attr({"NoSuchAttr": "NCHW"}).match(op.nn.conv2d(a, b))
    assert not conv.has_attr({"kernel_size": [5, 5]}).match(op.nn.conv2d(a, b, kernel_size=(1, 3)))
    g, h = v("g"), v("h")
    p = wildcard()(wildcard()).has_attr({"call_attr": "yes"})
    assert not p.match(pyir.Call(g, [h]))
    assert not p.match(pyir.Call(g, [h], {"other": "yes"}))
    assert not p.match(pyir.Call(g, [h], {"call_attr": "no"}))


def test_match_call_attr_dtype():
    assert is_op("cast")(wildcard()).has_attr({"dtype": "float16"}).match(op.cast(v("a"), dtype="float16"))


def _diamond_pattern():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    return is_op("add")(is_op("nn.relu")(conv), is_op("nn.leaky_relu")(conv))


def test_match_diamond():
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    assert _diamond_pattern().match(op.nn.relu(cv) + op.nn.leaky_relu(cv, alpha=0.0))


def test_no_match_diamond():
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    assert not _diamond_pattern().match(op.nn.leaky_relu(cv, alpha=0.0))
    assert not _diamond_pattern().match(op.nn.relu(cv))


def test_match_fake_diamond():
    """Two different convolutions do not make a diamond (the conv capture is one node)."""
    d1, k1, d2, k2 = v("d1"), v("k1"), v("d2"), v("k2")
    out = op.nn.relu(op.nn.conv2d(d1, k1)) + op.nn.leaky_relu(op.nn.conv2d(d2, k2), alpha=0.0)
    assert not _diamond_pattern().match(out)


def _pic():
    return (is_op("nn.conv2d")(wildcard(), wildcard()), is_op("nn.relu")(wildcard()),
            is_op("add")(wildcard(), wildcard()))


def test_at_most_one_parent():
    """The parent pattern is one capture: paths reaching two different convolutions fail."""
    x, w = v("x"), v("w")
    top = op.nn.conv2d(x, w)  # parent
    low = op.nn.conv2d(op.tanh(top), w)  # parent again, under a node that is not on a path
    out = op.add(op.nn.relu(low), op.nn.relu(top))
    assert not dominates(*_pic()).match(out)


def _elemwise_diamond(path=None):
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    unary = wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard())
    return dominates(conv, unary if path is None else path, is_op("add")(wildcard(), wildcard()))


def test_match_dominator():
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    classic = op.nn.relu(op.nn.relu(cv)) + op.nn.leaky_relu(cv, alpha=0.0)
    deeper = op.tanh(op.nn.relu(op.nn.relu(cv))) + op.nn.leaky_relu(cv, alpha=0.0)
    r = op.nn.relu(op.nn.relu(cv))
    single = r + op.tanh(r)
    for out in (classic, deeper, single):
        assert _elemwise_diamond().match(out)
    fuzzy = _elemwise_diamond(wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard())
                              | is_op("add")(wildcard(), wildcard()))
    r = op.nn.relu(cv)
    nested = op.tanh(r + r) + op.nn.leaky_relu(cv, alpha=0.0)
    assert fuzzy.match(nested)


def test_match_dominator2():
    """``child.dominates(parent, path)``: an injective reshape dominating a conv through
    elementwise and broadcast operators of any arity."""
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    path = (wildcard().has_attr({"TOpPattern": ELEMWISE})(None)
            | wildcard().has_attr({"TOpPattern": BROADCAST})(None))
    p = wildcard().has_attr({"TOpPattern": INJECTIVE})(wildcard()).dominates(conv, path)
    d, k, c = v("d"), v("k"), v("c")
    out = op.reshape(op.nn.relu(op.nn.bias_add(op.nn.conv2d(d, k), c)), newshape=(-1, 4, 4))
    assert p.match(out)


def test_not_match_dominator():
    d1, k1, d2, k2 = v("d1"), v("k1"), v("d2"), v("k2")
    fake = op.nn.relu(op.nn.conv2d(d1, k1)) + op.nn.leaky_relu(op.nn.conv2d(d2, k2), alpha=0.0)
    assert not _elemwise_diamond().match(fake)
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    r = op.nn.relu(cv)
    broadcast_on_path = (r + r) + op.nn.leaky_relu(cv, alpha=0.0)  # add is not elementwise
    assert not _elemwise_diamond().match(broadcast_on_path)
    on_input = op.nn.relu(d) + op.nn.leaky_relu(cv, alpha=0.0)
    assert not _elemwise_diamond().match(on_input)
    r2 = op.nn.relu(op.nn.relu(d))
    assert not _elemwise_diamond().match(r2 + op.tanh(r2))  # no conv at all


def test_not_match_dominator2():
    """A path reaching a second parent directly is refused like the one through a non-path node."""
    x, w = v("x"), v("w")
    top = op.nn.conv2d(x, w)
    low = op.nn.conv2d(op.tanh(top), w)
    assert not dominates(*_pic()).match(op.add(low, op.nn.relu(top)))


def test_dominator_needs_post_dominance():
    """pyir checks the domination itself (TVM's DominatesParent): a parent also used outside the
    child's dataflow (here by the tuple) is not dominated, so no match."""
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    child = op.nn.relu(cv) + op.nn.leaky_relu(cv, alpha=0.0)
    pat = _elemwise_diamond()
    assert pat.match(child)
    whole = pyir.Tuple([child, cv])
    m = is_tuple([pat, wildcard()]).match(whole)
    assert m is None


def _typed_diamond():
    d = v("d", pyir.TensorType((1, 2, 8, 8), "float32"))
    k = v("k", pyir.TensorType((2, 2, 3, 3), "float32"))
    cv = op.nn.conv2d(d, k)
    return op.nn.relu(op.nn.relu(cv)) + op.nn.leaky_relu(cv, alpha=0.0)


def test_match_typed_dominator():
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    unary = wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard()).has_dtype("float32")
    red = is_op("add")(wildcard(), wildcard()).has_shape([1, 2, 6, 6])
    assert dominates(conv, unary, red).match(_typed_diamond())


def test_no_match_typed_dominator():
    out = _typed_diamond()
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    unary = wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard())
    assert not dominates(conv, unary.has_dtype("float32"),
                         is_op("add")(wildcard(), wildcard()).has_shape([1, 1, 6, 6])).match(out)
    assert not dominates(conv, unary.has_dtype("float16"),
                         is_op("add")(wildcard(), wildcard()).has_shape([1, 2, 6, 6])).match(out)


# -- rewriting with callbacks -------------------------------------------------------------------------------


class _ToSubtract(DFPatternCallback):
    def __init__(self, pattern):
        super().__init__()
        self.pattern = pattern

    def callback(self, pre, post, node_map):
        return post.args[0] - post.args[1]


def test_rewrite():
    a, b = v("a"), v("b")
    out = rewrite(_ToSubtract(is_op("add")(wildcard(), wildcard())), a + b)
    assert out is a - b


def test_rewrite_func():
    """The callee of a local-function call is rewritten like any other node (nothing matches in it)."""
    a, k, b = v("a"), v("k"), v("b")
    d2, k2 = v("d2"), v("k2")
    f = fn([d2, k2], op.nn.relu(op.nn.conv2d(d2, k2)))
    out = rewrite(_ToSubtract(is_op("add")(wildcard(), wildcard())), call(f, a, k) + b)
    assert out is call(f, a, k) - b


def test_rewrite_func_with_attr():
    """A call of a function with the Composite attribute is inlined back into its operator."""
    p, q = v("p"), v("q")
    f = fn([p, q], p * q, Composite="mul")
    a, b = v("a"), v("b")

    class Inline(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.pattern = wildcard().has_attr({"Composite": "mul"})(wildcard(), wildcard())

        def callback(self, pre, post, node_map):
            return post.args[0] * post.args[1]

    out = rewrite(Inline(), op.negative(call(f, a, b)))
    assert out is op.negative(a * b)
    assert is_op("negative")(is_op("multiply")(wildcard(), wildcard())).match(out)


def test_nested_rewrite():
    """A callback returning its input changes nothing: rewrite reaches its fixpoint at once."""
    a, b = v("a"), v("b")
    inner = a + (b + b)
    outer = (a + inner) + inner
    p, q = wildcard(), wildcard()
    n0 = is_op("add")(p, q)
    pat = is_op("add")(n0, is_op("add")(n0, p))
    out = rewrite(DFPatternCallback(pattern=pat, callback=lambda pre, post, nm: post), outer)
    assert out is outer
    assert pat.match(outer)  # commutative: the pattern's n0 and n1 are found in swapped order


def test_not_fuse_multi_diamond():
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    out = (op.nn.relu(cv) + op.nn.leaky_relu(cv, alpha=0.0)) + cv
    assert not _diamond_pattern().match(out)


class BatchnormCallback(DFPatternCallback):
    """(x - mean) * gamma / sqrt(var + eps) + beta -> batch_norm."""

    def __init__(self):
        super().__init__()
        self.x, self.var, self.mean = wildcard(), wildcard(), wildcard()
        self.beta, self.gamma, self.eps = wildcard(), wildcard(), is_constant()
        self.pattern = self.gamma * (self.x - self.mean) / is_op("sqrt")(self.var + self.eps) + self.beta

    def callback(self, pre, post, node_map):
        nm = {k: vs[0] for k, vs in node_map.items()}
        eps = float(nm[self.eps].data)
        return pyir.TupleGetItem(op.nn.batch_norm(nm[self.x], nm[self.gamma], nm[self.beta], nm[self.mean],
                                                  nm[self.var], epsilon=eps), 0)


def _bn_vars():
    return v("x"), v("var"), v("mean"), v("beta"), v("gamma")


EPS = pyir.const(np.float32(1e-5))


def _bn(x, var, mean, beta, gamma):
    return pyir.TupleGetItem(op.nn.batch_norm(x, gamma, beta, mean, var, epsilon=float(np.float32(1e-5))), 0)


def test_fuse_batchnorm():
    x, var, mean, beta, gamma = _bn_vars()
    e = gamma * (x - mean) / op.sqrt(var + EPS) + beta
    assert_structural_equal(rewrite(BatchnormCallback(), e), _bn(x, var, mean, beta, gamma))


def test_no_fuse_batchnorm():
    x, var, mean, beta, gamma = _bn_vars()
    fake = gamma * (x - mean) / op.sqrt(var + EPS) - beta
    assert rewrite(BatchnormCallback(), fake) is fake


def test_fuse_double_batchnorm():
    x, var, mean, beta, gamma = _bn_vars()
    bn1 = gamma * (x - mean) / op.sqrt(var + EPS) + beta
    bn2 = gamma * (bn1 - mean) / op.sqrt(var + EPS) + beta
    want = _bn(_bn(x, var, mean, beta, gamma), var, mean, beta, gamma)
    assert_structural_equal(rewrite(BatchnormCallback(), bn2), want)


def test_partial_fuse_double_batchnorm():
    x, var, mean, beta, gamma = _bn_vars()
    fake = gamma * (x - mean) / op.sqrt(var + EPS) - beta
    bn2 = gamma * (fake - mean) / op.sqrt(var + EPS) + beta
    assert_structural_equal(rewrite(BatchnormCallback(), bn2), _bn(fake, var, mean, beta, gamma))


def test_fuse_batchnorm_commutation():
    """The add commuted, and the multiply/divide associated either way, still fuse."""
    x, var, mean, beta, gamma = _bn_vars()
    want = _bn(x, var, mean, beta, gamma)
    for e in (beta + gamma * (x - mean) / op.sqrt(var + EPS),
              (gamma * (x - mean)) / op.sqrt(var + EPS) + beta,
              gamma * ((x - mean) / op.sqrt(var + EPS)) + beta,
              ((x - mean) / op.sqrt(var + EPS)) * gamma + beta,  # and commuted too (pyir's extra case)
              beta + ((x - mean) * gamma) / op.sqrt(EPS + var)):
        assert_structural_equal(rewrite(BatchnormCallback(), e), want)


def _conv_diamonds(inp, k):
    """Four diamonds of TVM's dominator tests stacked: classic, deeper, single branch, nested."""
    cv = op.nn.conv2d(inp, k)
    out = op.nn.relu(op.nn.relu(cv)) + op.nn.leaky_relu(cv, alpha=0.0)
    cv = op.nn.conv2d(out, k)
    out = op.tanh(op.nn.relu(op.nn.relu(cv))) + op.nn.leaky_relu(cv, alpha=0.0)
    cv = op.nn.conv2d(out, k)
    r = op.nn.relu(op.nn.relu(cv))
    out = r + op.tanh(r)
    cv = op.nn.conv2d(out, k)
    r = op.nn.relu(cv)
    return op.tanh(r + r) + op.nn.leaky_relu(cv, alpha=0.0)


def test_quadruple_rewrite_dominator():
    """Each diamond collapses into its convolution, from the output down."""
    inp, k = v("inp"), v("k")

    class Collapse(DFPatternCallback):
        def __init__(self):
            super().__init__()
            self.inp, self.k = wildcard(), wildcard()
            path = (wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard())
                    | is_op("add")(wildcard(), wildcard()))
            self.pattern = dominates(is_op("nn.conv2d")(self.inp, self.k), path,
                                     is_op("add")(wildcard(), wildcard()))

        def callback(self, pre, post, node_map):
            return op.nn.conv2d(node_map[self.inp][0], node_map[self.k][0])

    want = op.nn.conv2d(op.nn.conv2d(op.nn.conv2d(op.nn.conv2d(inp, k), k), k), k)
    assert Collapse().rewrite(_conv_diamonds(inp, k)) is want


def _algebraic_simplify(e):
    zero = is_expr(pyir.const(0)) | is_expr(pyir.const(0.0))
    one = is_expr(pyir.const(1)) | is_expr(pyir.const(1.0))

    def keep(pat_of):
        x = wildcard()
        pat, kept = pat_of(x)
        return DFPatternCallback(pattern=pat, callback=lambda pre, post, nm: nm[kept][0])

    cbs = [keep(lambda x: (x + zero, x)), keep(lambda x: (x - zero, x)), keep(lambda x: (x * one, x)),
           keep(lambda x: (x / one, x)), keep(lambda x: (zero * x, zero)), keep(lambda x: (zero / x, zero))]
    return rewrite(cbs, e)


def test_algebraic_simplify():
    """x + 0, 0 + x, x - 0, x * 1, 1 * x, x / 1 -> x; x * 0, 0 / x -> 0 (commutative matching
    covers the swapped forms with one callback each)."""
    x, y = v("x"), v("y")
    for z in (pyir.const(0), pyir.const(0.0)):
        assert _algebraic_simplify(x + z) is x
        assert _algebraic_simplify(z + x) is x
        assert _algebraic_simplify(x - z) is x
        assert _algebraic_simplify(x * z) is z
        assert _algebraic_simplify(z / x) is z
    for o in (pyir.const(1), pyir.const(1.0)):
        assert _algebraic_simplify(x * o) is x
        assert _algebraic_simplify(o * x) is x
        assert _algebraic_simplify(x / o) is x
    zero, one = pyir.const(0), pyir.const(1)
    assert _algebraic_simplify((x + zero * y) / one + (y * one) - zero / x) is x + y


# -- partition ------------------------------------------------------------------------------------------


def test_double_partition():
    """Two patterns partitioned one after the other; the second does not look inside the
    functions the first made."""
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    bias = is_op("nn.bias_add")(conv, wildcard())
    relu = is_op("nn.relu")(bias)
    d, k, c, k2, c2 = v("d"), v("k"), v("c"), v("k"), v("c")
    e = op.nn.bias_add(op.nn.conv2d(op.nn.relu(op.nn.bias_add(op.nn.conv2d(d, k), c)), k2), c2)
    out = e
    for pat, label in ((relu, "conv_bias_relu"), (bias, "conv_bias")):
        out = pat.partition(out, {"Composite": label})
    p = [v("p0"), v("p1"), v("p2")]
    f0 = fn(p, op.nn.relu(op.nn.bias_add(op.nn.conv2d(p[0], p[1]), p[2])), "nn.conv2d_nn.bias_add_nn.relu_",
            Composite="conv_bias_relu")
    q = [v("q0"), v("q1"), v("q2")]
    f1 = fn(q, op.nn.bias_add(op.nn.conv2d(q[0], q[1]), q[2]), "nn.conv2d_nn.bias_add_",
            Composite="conv_bias")
    assert_structural_equal(out, call(f1, call(f0, d, k, c), k2, c2))


def _classic(i, k):
    cv = op.nn.conv2d(i, k)
    return op.nn.relu(op.nn.relu(cv)) + op.nn.leaky_relu(cv, alpha=0.0)


def test_partition_dominator():
    """The whole diamond goes into the function; its inputs are the conv's."""
    inp, k = v("inp"), v("k")
    out = _classic(inp * inp, k * k)
    i, w = v("i"), v("w")
    f = fn([i, w], _classic(i, w), "nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_")
    assert_structural_equal(_elemwise_diamond().partition(out), call(f, inp * inp, k * k))


def test_quadruple_partition_dominator():
    inp, k = v("inp"), v("k")
    path = wildcard().has_attr({"TOpPattern": ELEMWISE})(wildcard()) | is_op("add")(wildcard(), wildcard())
    out = _elemwise_diamond(path).partition(_conv_diamonds(inp, k))
    labels = ["nn.conv2d_nn.relu_nn.relu_nn.leaky_relu_add_",
              "nn.conv2d_nn.relu_nn.relu_tanh_nn.leaky_relu_add_",
              "nn.conv2d_nn.relu_nn.relu_tanh_add_", "nn.conv2d_nn.relu_add_tanh_nn.leaky_relu_add_"]

    def classic(i, w):
        return _classic(i, w)

    def deeper(i, w):
        cv = op.nn.conv2d(i, w)
        return op.tanh(op.nn.relu(op.nn.relu(cv))) + op.nn.leaky_relu(cv, alpha=0.0)

    def single(i, w):
        r = op.nn.relu(op.nn.relu(op.nn.conv2d(i, w)))
        return r + op.tanh(r)

    def nested(i, w):
        cv = op.nn.conv2d(i, w)
        r = op.nn.relu(cv)
        return op.tanh(r + r) + op.nn.leaky_relu(cv, alpha=0.0)

    want = inp
    for body, label in zip((classic, deeper, single, nested), labels):
        i, w = v("i"), v("w")
        want = call(fn([i, w], body(i, w), label), want, k)
    assert_structural_equal(out, want)


def _bn_expr(x, var, mean, beta, gamma, eps):
    return gamma * (x - mean) / op.sqrt(var + eps) + beta


def test_partition_batchnorm():
    """Parameters follow the pattern's order (gamma, x, mean, var, beta); the constant
    matched by is_constant() stays inside."""
    x, var, mean, beta, gamma = _bn_vars()
    e = _bn_expr(x, var, mean, beta, gamma, EPS)
    g, xx, m, vv, b = v("g"), v("xx"), v("m"), v("vv"), v("b")
    f = fn([g, xx, m, vv, b], _bn_expr(xx, vv, m, b, g, EPS), "subtract_multiply_add_sqrt_divide_add_")
    assert_structural_equal(BatchnormCallback().pattern.partition(e), call(f, gamma, x, mean, var, beta))


def test_partition_double_batchnorm():
    """pyir differs where hash-consing merges what TVM builds twice: both batch norms use
    ``sqrt(var + eps)``, which in pyir is one node.  The outer match (found first, from the root
    down) takes it, so the inner match would overlap and is not partitioned; the outer function
    recomputes the shared sqrt (the node stays for the inner one).  With a variance of its own
    for each batch norm nothing is shared, and both are partitioned as in TVM."""
    x, var, mean, beta, gamma = _bn_vars()
    label = "subtract_multiply_add_sqrt_divide_add_"

    def bn_fn():
        g, xx, m, vv, b = v("g"), v("xx"), v("m"), v("vv"), v("b")
        return fn([g, xx, m, vv, b], _bn_expr(xx, vv, m, b, g, EPS), label)

    bn1 = _bn_expr(x, var, mean, beta, gamma, EPS)
    bn2 = _bn_expr(bn1, var, mean, beta, gamma, EPS)
    pat = BatchnormCallback().pattern
    assert_structural_equal(pat.partition(bn2), call(bn_fn(), gamma, bn1, mean, var, beta))
    var2 = v("var2")
    bn2 = _bn_expr(bn1, var2, mean, beta, gamma, EPS)
    want = call(bn_fn(), gamma, call(bn_fn(), gamma, x, mean, var, beta), mean, var2, beta)
    assert_structural_equal(pat.partition(bn2), want)


def test_overlappting_partitions():
    """pyir differs, for the better: TVM builds ``bn[0]`` twice (two nodes sharing the batch_norm),
    so the two matches overlap and TVM partitions nothing.  In pyir the two ``bn[0]`` are one node
    (hash-consing), so there is one match: it is partitioned once and the add uses that one call
    twice, computing the batch_norm once."""
    bn_pat = is_op("nn.batch_norm")(wildcard(), wildcard(), wildcard(), wildcard(), wildcard())
    tgi = TupleGetItemPattern(bn_pat, 0)
    x, var, mean, beta, gamma = _bn_vars()
    bn = op.nn.batch_norm(x, gamma, beta, mean, var, epsilon=1e-5)
    t1, t2 = pyir.TupleGetItem(bn, 0), pyir.TupleGetItem(bn, 0)
    assert t1 is t2
    out = tgi.partition(t1 + t2)
    assert out.op is pyir.Op("add") and out.args[0] is out.args[1]
    f = out.args[0].op
    assert f.attrs[PFP] == "nn.batch_norm_TupleGetItem0_" and out.args[0].args == (x, gamma, beta, mean, var)
    # two different uses of one batch_norm do overlap, as in TVM
    t0, t2b = pyir.TupleGetItem(bn, 0), pyir.TupleGetItem(bn, 2)
    anyidx = TupleGetItemPattern(bn_pat, None)
    e = pyir.Tuple([t0, t2b])
    assert anyidx.partition(e) is e


def test_partition_overused():
    """A conv used outside the match (by the add) keeps the match from being partitioned."""
    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))
    d, k = v("d"), v("k")
    cv = op.nn.conv2d(d, k)
    out = op.nn.relu(cv) + cv
    assert pat.partition(out) is out


def test_partition_fuzzy_tuple():
    """A pattern with any number of arguments partitions each call with as many parameters."""
    a, b = v("a"), v("b")
    c = a + b
    pat = concat_pattern()
    tuple_form = pyir.Op("concatenate").op_def.num_inputs == 1
    label = "Tuple_concatenate_" if tuple_form else "concatenate_"
    for args in ((a,), (a, b), (a, b, c)):
        ps = [v(f"p{i}") for i in range(len(args))]
        want = call(fn(ps, concat(*ps), label), *args)
        assert_structural_equal(pat.partition(concat(*args)), want)


def test_partition_fuzzy_function_args():
    """A call of any function whose body is an add, plus something."""
    pat = FunctionPattern(None, wildcard() + wildcard())(None) + wildcard()
    x, y, z, b = v("x"), v("y"), v("z"), v("b")
    for n in (1, 2, 3):
        ps = [v(f"p{i}") for i in range(n)]
        body = ps[0] + ps[0] if n == 1 else ps[0] + ps[1] if n == 2 else ps[0] + ps[1] + ps[2]
        f = fn(ps, body)
        args = [x, y, z][:n]
        out = pat.partition(call(f, *args) + b)
        qs = [v(f"q{i}") for i in range(n + 1)]
        label = ("add_" if n == 3 else "") + "add_FunctionCall_add_"
        want = call(fn(qs, call(f, *qs[:-1]) + qs[-1], label), *args, b)
        assert_structural_equal(out, want)


def test_partition_check():
    """``check(pre)`` vetoes a match: here only unit-stride convolutions are partitioned (TVM's
    case tests the data layout; pyir's conv2d supports only NCHW, so the strides stand in)."""
    pat = is_op("nn.relu")(is_op("nn.conv2d")(is_var("d"), wildcard()))

    def check(pre):
        return pre.args[0].attrs["strides"] == (1, 1)

    d, k = v("d"), v("k")
    e = op.nn.relu(op.nn.conv2d(d, k))
    dd, kk = v("dd"), v("kk")
    want = call(fn([dd, kk], op.nn.relu(op.nn.conv2d(dd, kk)), "nn.conv2d_nn.relu_"), d, k)
    assert_structural_equal(pat.partition(e, check=check), want)
    strided = op.nn.relu(op.nn.conv2d(d, k, strides=(2, 2)))
    assert pat.partition(strided, check=check) is strided


def test_partition_check_types():
    """check may look at inferred types (pyir types every node on demand); the parameters take
    the types of the inputs they stand for."""
    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    def check(pre):
        conv = pre.args[0]
        return conv.attrs["strides"] == (1, 1) and conv.checked_type.shape[0] == 1

    d, k = v("d", (1, 4, 6, 6)), v("k", (4, 4, 3, 3))
    out = partition(pat, op.nn.relu(op.nn.conv2d(d, k)), check=check)
    assert out.op.attrs[PFP] == "nn.conv2d_nn.relu_"
    assert [p.type_annotation for p in out.op.params] == [d.type_annotation, k.type_annotation]
    strided = op.nn.relu(op.nn.conv2d(d, k, strides=(2, 2)))
    assert partition(pat, strided, check=check) is strided
    batch2 = op.nn.relu(op.nn.conv2d(v("d", (2, 4, 6, 6)), k))
    assert partition(pat, batch2, check=check) is batch2


def _cbr(x, w, b):
    return op.nn.relu(op.nn.bias_add(op.nn.conv2d(x, w), b))


def test_partition_option():
    x, w, b = v("x"), v("w"), v("b")
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    p1 = is_op("nn.relu")(conv.optional(lambda q: is_op("nn.bias_add")(q, wildcard())))
    p2 = is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard()).optional(
        lambda q: is_op("nn.relu")(q))
    e = _cbr(x, w, b)
    xf, wf, bf = v("xf"), v("wf"), v("bf")
    want = call(fn([xf, wf, bf], _cbr(xf, wf, bf), "nn.conv2d_nn.bias_add_nn.relu_"), x, w, b)
    for p in (p1, p2):
        assert p.match(e)
        assert_structural_equal(p.partition(e), want)


def test_partition_function():
    """A function pattern's body is not made of inputs: the called function goes in whole."""
    x, w, b = v("x"), v("w"), v("b")
    x1, w1 = v("x1"), v("w1")
    wx, ww, wb, wx1, ww1 = (wildcard() for _ in range(5))
    pat = FunctionPattern([wx1, ww1], is_op("nn.conv2d")(wx1, ww1))(wx, ww) + wb
    f = fn([x1, w1], op.nn.conv2d(x1, w1))
    e = call(f, x, w) + b + b
    x2, w2, b2 = v("x2"), v("w2"), v("b2")
    want = call(fn([x2, w2, b2], call(f, x2, w2) + b2, "nn.conv2d_FunctionCall_add_"), x, w, b) + b
    assert_structural_equal(pat.partition(e), want)


def test_partition_optional_function():
    x, w, b = v("x"), v("w"), v("b")
    x1, w1 = v("x1"), v("w1")
    wx, ww, wx1, ww1 = (wildcard() for _ in range(4))
    f0 = FunctionPattern([wx1, ww1], is_op("sigmoid")(is_op("nn.conv2d")(wx1, ww1)))
    f1 = FunctionPattern([wx1, ww1], is_op("nn.relu")(is_op("nn.conv2d")(wx1, ww1)))
    pat = f0(wx, ww) | f1(wx, ww)
    f = fn([x1, w1], op.nn.relu(op.nn.conv2d(x1, w1)))
    x2, w2 = v("x2"), v("w2")
    want = call(fn([x2, w2], call(f, x2, w2), "nn.conv2d_nn.relu_FunctionCall_"), x, w) + b
    assert_structural_equal(pat.partition(call(f, x, w) + b), want)


def _fuzzy_body_case():
    x, w, b = v("x"), v("w"), v("b")
    x1, w1 = v("x1"), v("w1")
    wx, ww, wb, wx1, ww1 = (wildcard() for _ in range(5))
    pat = FunctionPattern([wx1, ww1], wildcard())(wx, ww) + wb
    f = fn([x1, w1], op.nn.conv2d(x1, w1))
    return pat, f, (x, w, b), call(f, x, w) + b + b


def test_rewrite_function_with_fuzzy_body():
    pat, _f, (x, w, b), e = _fuzzy_body_case()
    out = rewrite(DFPatternCallback(pattern=pat, callback=lambda pre, post, nm: x + w), e)
    assert out is x + w + b


def test_partition_function_with_fuzzy_body():
    pat, f, (x, w, b), e = _fuzzy_body_case()
    x2, w2, b2 = v("x2"), v("w2"), v("b2")
    want = call(fn([x2, w2, b2], call(f, x2, w2) + b2, "nn.conv2d_FunctionCall_add_"), x, w, b) + b
    assert_structural_equal(pat.partition(e), want)


def test_match_match():
    """TVM rewrites a prelude function full of ADT ``match`` expressions and expects no change.
    pyir's version: a function of ifs, lets and tuples (every kind pyir's matcher walks) and no
    add is left as it is."""
    a, b, t = v("a", ()), v("b", ()), v("t")
    body = pyir.Let(t, pyir.Tuple([a, b]), pyir.If(op.greater(a, b), pyir.TupleGetItem(t, 0),
                                                   op.multiply(pyir.TupleGetItem(t, 1), b)))
    f = pyir.Function([a, b], body)
    assert rewrite(_ToSubtract(is_op("add")(wildcard(), wildcard())), f) is f


def test_partition_constant_embedding():
    """Constants matched by is_constant() or is_expr(const) stay inside the function; matched by
    a wildcard (or is_var() | ... on a variable) they become parameters (typed: a parameter takes
    the type of what it stands for when that is known, here the constant's)."""
    x, w, b = v("x"), v("w"), v("b")
    wc = pyir.const(np.ones((2, 2, 3, 3), "float32"))
    xf, bf = v("xf"), v("bf")
    embedded = fn([xf, bf], _cbr(xf, wc, bf), "nn.conv2d_nn.bias_add_nn.relu_")
    xl, wl, bl = v("xl"), v("wl"), v("bl")
    lifted = fn([xl, wl, bl], _cbr(xl, wl, bl), "nn.conv2d_nn.bias_add_nn.relu_")
    wt = v("wt", wc.checked_type)
    lifted_const = fn([xl, wt, bl], _cbr(xl, wt, bl), "nn.conv2d_nn.bias_add_nn.relu_")
    relu, reluc = _cbr(x, w, b), _cbr(x, wc, b)

    def pat(weight):
        return is_op("nn.relu")(is_op("nn.bias_add")(is_op("nn.conv2d")(wildcard(), weight), wildcard()))

    assert_structural_equal(pat(wildcard()).partition(relu), call(lifted, x, w, b))
    assert_structural_equal(pat(wildcard()).partition(reluc), call(lifted_const, x, wc, b))
    assert_structural_equal(pat(is_var()).partition(relu), call(lifted, x, w, b))
    assert pat(is_var()).partition(reluc) is reluc  # a constant is not a variable
    assert pat(is_constant()).partition(relu) is relu
    assert_structural_equal(pat(is_constant()).partition(reluc), call(embedded, x, b))
    assert pat(is_expr(wc)).partition(relu) is relu
    assert_structural_equal(pat(is_expr(wc)).partition(reluc), call(embedded, x, b))
    for alt in (is_var() | is_constant(), is_constant() | is_var()):
        assert_structural_equal(pat(alt).partition(relu), call(lifted, x, w, b))
        assert_structural_equal(pat(alt).partition(reluc), call(embedded, x, b))


class _DropLast(DFPatternCallback):
    """Removes the last input of a concatenate (the single input itself when one is left)."""

    def __init__(self, rewrite_once):
        super().__init__(rewrite_once=rewrite_once)
        self.pattern = concat_pattern()

    def callback(self, pre, post, node_map):
        xs = post.args[0].fields if pyir.Op("concatenate").op_def.num_inputs == 1 else post.args
        return concat(*xs[:-1]) if len(xs) > 1 else xs[0]


def test_rewrite_once():
    """rewrite_once stops a callback after the first round in which it changed something."""
    x, y, z = v("x", (2,)), v("y", (2,)), v("z", (2,))
    c = concat(x, y, z)
    assert rewrite(_DropLast(False), c) is x
    assert rewrite(_DropLast(True), c) is concat(x, y)

    class ReluAfterSoftmax(DFPatternCallback):
        def __init__(self, rewrite_once):
            super().__init__(rewrite_once=rewrite_once)
            self.pattern = is_op("nn.softmax")(None)

        def callback(self, pre, post, node_map):
            return op.nn.relu(post)

    before = op.nn.softmax(c)
    once = rewrite([ReluAfterSoftmax(True), _DropLast(True)], before)
    assert once is op.nn.relu(op.nn.softmax(concat(x, y)))
    recursive = rewrite([ReluAfterSoftmax(True), _DropLast(False)], before)
    assert recursive is op.nn.relu(op.nn.softmax(x))


def test_matched_outside_but_dominated():
    """The add feeds the sigmoid outside the match, but the sigmoid flows back into the match's
    root (the multiply post-dominates it), so the match is partitioned, duplicating the add."""
    data = v("data", pyir.TensorType((2, 4, 6, 6), "float32"))
    weight = v("weight", pyir.TensorType((4, 4, 3, 3), "float32"))
    bias = v("bias", pyir.TensorType((4,), "float32"))
    b = op.expand_dims(op.expand_dims(bias, axis=1, num_newaxis=2), axis=0)
    conv = op.nn.conv2d(data, weight, padding=(1, 1))
    s = conv + b
    sig = op.sigmoid(s)
    e = op.exp(s * sig)
    pat = is_op("multiply")(is_op("add")(is_op("nn.conv2d")(wildcard(), wildcard()), wildcard()), wildcard())
    out = pat.partition(e)
    p = [v(f"p{i}", t) for i, t in enumerate([data.type_annotation, weight.type_annotation,
                                              b.checked_type, sig.checked_type])]
    f = fn(p, (op.nn.conv2d(p[0], p[1], padding=(1, 1)) + p[2]) * p[3], "nn.conv2d_add_multiply_")
    assert_structural_equal(out, op.exp(call(f, data, weight, b, sig)))
    assert out.args[0].args[3] is sig  # the original add stays, for the sigmoid


def test_partition_parallel_branch_with_same_input():
    """The conv feeding both branches becomes one parameter, not two."""
    pat = is_op("add")(is_op("multiply")(wildcard(), wildcard()), is_op("add")(wildcard(), wildcard()))
    i, w, left, right = v("i"), v("w"), v("left"), v("right")
    cv = op.nn.conv2d(i, w)
    e = op.add(op.multiply(left, cv), op.add(cv, right))
    lf, mf, rf = v("lf"), v("mf"), v("rf")
    body = op.add(op.multiply(lf, mf), op.add(mf, rf))
    want = call(fn([lf, mf, rf], body, "multiply_add_add_"), left, cv, right)
    assert_structural_equal(pat.partition(e), want)


def test_rewrite_with_pattern_recursion():
    """TVM ties a recursive pattern (``wildcard().redirect_to(...)``: casts all the way down to a
    dense, matched as one group) by mutating a pattern.  pyir's patterns are immutable and matching
    never recurses over the graph, so there is no redirect_to: a chain of known length is a
    pattern built by a loop, and it gives TVM's result (one relu on top of the whole chain)."""
    data = v("data", pyir.TensorType((2, 8), "float32"))
    feat = op.nn.dense(data, pyir.const(np.zeros((4, 8), "float32")))
    for _ in range(6):
        feat = op.cast(feat, dtype="float32")
    pat = is_op("nn.dense")(wildcard(), wildcard())
    for _ in range(6):
        pat = is_op("cast")(pat)
    out = rewrite(DFPatternCallback(rewrite_once=True, pattern=pat,
                                    callback=lambda pre, post, nm: op.nn.relu(post)), feat)
    assert out is op.nn.relu(feat)
    assert not hasattr(wildcard(), "redirect_to")


# -- what pyir adds around them -----------------------------------------------------------------------------


def test_partition_records_lineage():
    """Inside a pass, the partitioned call derives from the nodes the match covered."""
    from pyir.transform.base import FunctionPass

    pat = is_op("nn.relu")(is_op("nn.conv2d")(wildcard(), wildcard()))

    class Part(FunctionPass):
        def transform_function(self, func, mod, name):
            return func.with_body(partition(pat, func.body, mod=mod))

    d, k = v("d", (1, 2, 6, 6)), v("k", (2, 2, 3, 3))
    cv = op.nn.conv2d(d, k)
    mod = pyir.Module.from_expr(op.exp(op.nn.relu(cv)))
    out = Part()(mod)
    new_call = out["main"].body.args[0]
    assert new_call.op.attrs[PFP] == "nn.conv2d_nn.relu_"
    assert new_call in out.find(cv) and new_call in out.find(op.nn.relu(cv))


def test_rewrite_errors_are_pyir_errors():
    with pytest.raises(pyir.PatternError):
        rewrite([object()], v("a"))
    with pytest.raises(pyir.PatternError):
        partition("not a pattern", v("a"))
    with pytest.raises(pyir.PatternError):
        DFPatternCallback(pattern=wildcard()).callback(v("a"), v("a"), {})
    flip = DFPatternCallback(pattern=is_op("nn.relu")(wildcard()) | is_op("tanh")(wildcard()),
                             callback=lambda pre, post, nm: (op.tanh if post.op is pyir.Op("nn.relu")
                                                             else op.nn.relu)(post.args[0]))
    with pytest.raises(pyir.RewriteLoopError):
        rewrite(flip, op.nn.relu(v("a")))
    assert isinstance(DominatorPattern(wildcard(), wildcard(), wildcard()), DominatorPattern)


def test_pattern_rewrite_pass_takes_callbacks():
    """PatternRewrite runs DFPatternCallback objects too (after its rules), with lineage."""
    x, var, mean = v("x", (1, 3)), v("var", (1, 3)), v("mean", (1, 3))
    beta, gamma = v("beta", (1, 3)), v("gamma", (1, 3))
    e = _bn_expr(x, var, mean, beta, gamma, EPS)
    mod = pyir.Module.from_expr(op.exp(e))
    out = pyir.PatternRewrite([BatchnormCallback()])(mod)
    bn = out["main"].body.args[0]
    assert type(bn) is pyir.TupleGetItem and bn.tuple_value.op is pyir.Op("nn.batch_norm")
    assert bn in out.find(e)
    assert "BatchnormCallback" in out.pass_records[-1].options


def test_rewrite_partition_and_dominators_do_not_recurse():
    """A 6,000-deep chain (six times Python's recursion limit) goes through rewrite, partition
    and a dominator pattern; the 10**6-deep run is test_dfpattern_rewrite_deep_chain."""
    mod = pyir.testing.elementwise_chain(6000)
    body = mod["main"].body
    pat = is_op("nn.relu")(is_op("multiply")(wildcard(), is_constant()))
    drop = DFPatternCallback(pattern=pat, callback=lambda pre, post, nm: op.tanh(post.args[0].args[0]))
    out = rewrite(drop, body)  # relu(h * 1) -> tanh(h): one node fewer for each of the 1,500 relus
    assert pyir.count_nodes(out) == pyir.count_nodes(body) - 1500 and out.args[0].op is pyir.Op("tanh")
    parts = pat.partition(body)
    assert parts.args[0].op.attrs[PFP] == "multiply_nn.relu_"
    sub = is_op("subtract")(wildcard(), wildcard())
    dom = dominates(is_op("add")(wildcard(), wildcard()), wildcard(), sub)
    m = dom.match(body)
    assert m is not None and m[dom.parent] is body.args[0].args[0].args[0]
    no_parent = dominates(is_op("nn.softmax")(wildcard()), wildcard(), sub)
    assert not no_parent.match(body)


def test_dfpattern_rewrite_deep_chain(deep_chain):
    """rewrite over the 10**6-deep chain, without recursion: each relu(h * 1) becomes tanh(h)
    (the dominator walk is checked at 6,000 deep above, where recursion would already fail)."""
    body = deep_chain["main"].body
    pat = is_op("nn.relu")(is_op("multiply")(wildcard(), is_constant()))
    drop = DFPatternCallback(pattern=pat, callback=lambda pre, post, nm: op.tanh(post.args[0].args[0]))
    out = rewrite(drop, body)
    assert out.op is pyir.Op("subtract") and out.args[0].op is pyir.Op("tanh")
    # the chain's 10**6 calls, x and the constant (test_functor counts them); a relu and a multiply
    # of each four calls become one tanh
    assert pyir.count_nodes(out) == 10**6 + 2 - 250000

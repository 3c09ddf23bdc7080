"""The pattern language and the rewrite-rule driver."""

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.rewrite.pattern import (
    PatternError,
    is_constant,
    is_expr,
    is_op,
    is_tuple,
    is_tuple_get_item,
    is_var,
    wildcard,
)
from pyir.rewrite.pattern_rewrite import Rule, rewrite_rules
from pyir.transform.pattern_rewrite import PatternRewrite

X = pyir.var("x", shape=(1, 4, 8, 8))
Y = pyir.var("y", shape=(1, 4, 8, 8))
W = pyir.const(np.ones((4, 4, 3, 3), "float32"))


def test_wildcard_matches_anything():
    """A wildcard matches every kind of expression and captures it."""
    w = wildcard()
    for e in (X, pyir.const(1.0), op.nn.relu(X), pyir.Tuple([X, Y])):
        m = w.match(e)
        assert m is not None and m[w] is e and m.expr is e


def test_call_pattern_positive_and_negative():
    """is_op(...)(...) matches calls of that operator with matching arguments only."""
    x = wildcard()
    pat = is_op("nn.relu")(x)
    m = pat.match(op.nn.relu(X))
    assert m is not None and m[x] is X
    assert pat.match(op.tanh(X)) is None
    assert pat.match(X) is None
    assert is_op("add")(wildcard()).match(op.add(X, Y)) is None  # arity differs
    nested = is_op("add")(is_op("nn.relu")(x), is_var())
    assert nested.match(op.add(op.nn.relu(X), Y))[x] is X
    assert nested.match(op.add(op.nn.relu(X), pyir.const(1.0))) is None


def test_constant_var_and_expr_patterns():
    """is_constant, is_var and is_expr match only their own kind / node."""
    c = pyir.const(2.0)
    assert is_constant().match(c) is not None
    assert is_constant().match(X) is None
    assert is_var().match(X) is not None
    assert is_var().match(c) is None
    assert is_expr(X).match(X) is not None
    assert is_expr(X).match(Y) is None


def test_tuple_patterns():
    """is_tuple and is_tuple_get_item match fields and (optional) index."""
    t = pyir.Tuple([X, Y])
    a, b = wildcard(), wildcard()
    m = is_tuple([a, b]).match(t)
    assert m[a] is X and m[b] is Y
    assert is_tuple([a]).match(t) is None
    g = pyir.TupleGetItem(t, 1)
    assert is_tuple_get_item(is_tuple([a, b]), 1).match(g) is not None
    assert is_tuple_get_item(wildcard()).match(g) is not None
    assert is_tuple_get_item(wildcard(), 0).match(g) is None


def test_captures_must_agree():
    """A pattern object used twice must bind the same node both times."""
    x = wildcard()
    pat = is_op("add")(x, x)
    assert pat.match(op.add(X, X))[x] is X
    assert pat.match(op.add(X, Y)) is None


def test_alternatives_and_backtracking():
    """p1 | p2 matches either; a later failure makes the matcher try the other branch."""
    x = wildcard()
    act = is_op("nn.relu")(x) | is_op("tanh")(x)
    assert act.match(op.nn.relu(X))[x] is X
    assert act.match(op.tanh(X))[x] is X
    assert act.match(op.sigmoid(X)) is None
    # The first alternative binds x to X, which makes the second argument fail; the
    # matcher must backtrack into the second alternative, binding x to Y.
    y = wildcard()
    first = is_op("add")(x, y) | is_op("add")(y, x)
    both = is_op("multiply")(first, x)
    m = both.match(op.multiply(op.add(X, Y), Y))
    assert m is not None and m[x] is Y and m[y] is X
    # Alternatives of operators as a callee.
    pat = (is_op("add") | is_op("subtract"))(wildcard(), wildcard())
    assert pat.match(op.subtract(X, Y)) is not None
    assert pat.match(op.multiply(X, Y)) is None


def test_attribute_constraints():
    """has_attr matches only calls whose attributes include the given values."""
    conv = is_op("nn.conv2d")(wildcard(), wildcard())
    unit = conv.has_attr({"strides": (1, 1)})
    e1 = op.nn.conv2d(X, W, padding=(1, 1))
    e2 = op.nn.conv2d(X, W, strides=(2, 2), padding=(1, 1))
    assert unit.match(e1) is not None
    assert unit.match(e2) is None
    assert conv.has_attr({"strides": [2, 2]}).match(e2) is not None
    assert conv.has_attr({"no_such_attr": 1}).match(e1) is None
    clip = is_op("clip")(wildcard()).has_attr({"a_min": 0})
    assert clip.match(op.clip(X, a_min=0.0, a_max=6.0)) is not None


def test_type_constraints():
    """has_dtype / has_shape / has_type check the inferred type of the matched node."""
    x = wildcard()
    assert x.has_dtype("float32").match(X) is not None
    assert x.has_dtype("int32").match(X) is None
    assert x.has_shape((1, 4, 8, 8)).match(op.nn.relu(X)) is not None
    assert x.has_shape((4,)).match(op.nn.relu(X)) is None
    assert x.has_type(X.type_annotation).match(X) is not None


def test_patterns_are_immutable_and_errors_are_pyir_errors():
    """Patterns and matches cannot be mutated; bad uses raise pyir errors."""
    p = wildcard()
    with pytest.raises(pyir.ImmutableError):
        p.x = 1
    m = p.match(X)
    with pytest.raises(pyir.ImmutableError):
        m.expr = Y
    with pytest.raises(KeyError):
        m[wildcard()]
    with pytest.raises(PatternError):
        is_op("add")(3)
    with pytest.raises(pyir.UnknownOpError):
        is_op("no.such.op")
    with pytest.raises(pyir.PyIRError):
        Rule(p, "not callable")


def test_op_mask():
    """op_mask is the OR of the operator bits every match needs."""
    relu, add = pyir.Op("nn.relu")._mask, pyir.Op("add")._mask
    assert is_op("add")(is_op("nn.relu")(wildcard()), wildcard()).op_mask == relu | add
    assert wildcard().op_mask == 0
    alt = is_op("add")(wildcard(), wildcard()) | is_op("nn.relu")(wildcard())
    assert alt.op_mask == 0
    assert alt.may_match_in(relu) and alt.may_match_in(add)
    assert not alt.may_match_in(pyir.Op("tanh")._mask)


def test_rewrite_to_fixpoint():
    """Rules are applied bottom-up until none fires, including across rounds."""
    x = wildcard()
    # exp(x) -> tanh(relu(x)) creates a new relu that the second rule rewrites.
    rules = [(is_op("exp")(x), lambda m: op.tanh(op.nn.relu(m[x]))),
             (is_op("nn.relu")(x), lambda m: op.sigmoid(m[x]))]
    e = op.exp(op.exp(X))
    stats = {}
    out = rewrite_rules(e, rules, stats=stats)
    assert out is op.tanh(op.sigmoid(op.tanh(op.sigmoid(X))))
    assert rewrite_rules(out, rules) is out
    assert stats["fired"]


def test_rewrite_loop_error_names_rules():
    """A pair of rules undoing each other raises RewriteLoopError naming them and their location."""
    x = wildcard()

    def to_tanh(m):
        return op.tanh(m[x])

    def to_relu(m):
        return op.nn.relu(m[x])

    rules = [Rule(is_op("nn.relu")(x), to_tanh), Rule(is_op("tanh")(x), to_relu)]
    with pytest.raises(pyir.RewriteLoopError) as ei:
        rewrite_rules(op.nn.relu(X), rules, max_steps=50)
    msg = str(ei.value)
    assert "to_tanh" in msg and "to_relu" in msg and "test_pattern.py:" in msg
    # A rule that keeps growing the graph from below is caught by the round limit.
    grow = [(is_var(), lambda m: op.nn.relu(m.expr))]
    with pytest.raises(pyir.RewriteLoopError):
        rewrite_rules(op.exp(X), grow, max_steps=20)


def test_mask_skipping_on_resnet50():
    """Rewriting the single softmax of resnet(50) walks far fewer nodes than the graph has."""
    mod = pyir.testing.resnet(50, batch_norm=False)
    body = mod["main"].body
    x = wildcard()
    stats = {}
    out = rewrite_rules(body, [(is_op("nn.softmax")(x), lambda m: op.nn.log_softmax(m[x]))], stats=stats)
    assert out is not body and out.op is pyir.Op("nn.log_softmax")
    total = pyir.count_nodes(body)
    assert stats["visited"] * 20 < total


def test_pattern_rewrite_pass_records_lineage():
    """PatternRewrite is a pass: unchanged module returned as is, rewrites recorded in lineage."""
    x = wildcard()
    relu = op.nn.relu(X)
    mod = pyir.Module.from_expr(op.exp(relu))
    p = PatternRewrite([(is_op("nn.relu")(x), lambda m: op.tanh(m[x]))])
    text = mod.astext()
    out = p(mod)
    assert mod.astext() == text
    assert out["main"].body is op.exp(op.tanh(X))
    assert out.find(relu) == [op.tanh(X)]
    assert p(out) is out


def test_pattern_rewrite_pass_lives_in_transform_and_types_come_from_the_module():
    """PatternRewrite is the same class from pyir, pyir.transform and its module; rule callbacks
    type new expressions over let variables through the module's typing context."""
    from pyir.transform import PatternRewrite as P1

    assert pyir.PatternRewrite is P1 is PatternRewrite
    x = wildcard()
    a, v = pyir.var("a", shape=(2, 3)), pyir.var("v")
    mod = pyir.Module({"main": pyir.Function([a], pyir.Let(v, op.exp(a), op.nn.relu(v)))})
    shapes = []

    def cb(m):
        shapes.append(m.type_of(op.transpose(m[x])))
        return None

    assert PatternRewrite([(is_op("nn.relu")(x), cb)])(mod) is mod
    assert shapes == [pyir.TensorType((3, 2))]

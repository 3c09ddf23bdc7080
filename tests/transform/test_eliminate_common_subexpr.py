"""Tests of the EliminateCommonSubexpr pass."""

from __future__ import annotations

from hypothesis import given, settings

import pyir
from pyir import op
from pyir.testing import check_pass
from pyir.transform.eliminate_common_subexpr import EliminateCommonSubexpr

CSE = EliminateCommonSubexpr


def _check_pass(mod: pyir.Module) -> pyir.Module:
    """Run CSE and check the invariant bundle (input unchanged, same values, lineage, idempotent)."""
    return check_pass(CSE(), mod, rtol=1e-5, atol=1e-6)


def test_models():
    """resnet(3) and transformer_block (graph form) are returned unchanged."""
    for mod in (pyir.testing.resnet(3), pyir.testing.transformer_block()):
        assert _check_pass(mod) is mod


@settings(max_examples=30, deadline=None)
@given(pyir.testing.programs())
def test_random_programs(mod):
    """Random programs (with lets) keep their meaning; the pass is idempotent."""
    _check_pass(mod)


def _dup_module():
    x, y = pyir.var("x", shape=(2, 3)), pyir.var("y", shape=(2, 3))
    a, b, c, d = (pyir.var(n) for n in "abcd")
    body = pyir.Let(a, op.add(x, y),
                    pyir.Let(b, op.add(x, y),
                             pyir.Let(c, op.nn.relu(a),
                                      pyir.Let(d, op.nn.relu(b), op.multiply(c, d)))))
    return pyir.Module({"main": pyir.Function([x, y], body)}), (x, y, a, b, c, d)


def test_duplicate_bindings():
    """Duplicate bindings are replaced by the first var, transitively, and removed."""
    mod, (x, y, a, b, c, d) = _dup_module()
    new = _check_pass(mod)
    want = pyir.Let(a, op.add(x, y), pyir.Let(c, op.nn.relu(a), op.multiply(c, c)))
    assert new["main"].body is want
    assert new.find(b) == [a]
    assert new.find(d) == [c]


def test_scopes_are_lexical():
    """A binding in one if-branch is not reused in the other; an outer binding is reused inside."""
    x = pyir.var("x", shape=(2,))
    t1, t2, t3 = pyir.var("t1"), pyir.var("t2"), pyir.var("t3")
    cond = op.greater(op.sum(x), pyir.const(0.0))
    e = op.exp(x)
    branch_a = pyir.Let(t1, e, op.nn.relu(t1))
    branch_b = pyir.Let(t2, e, op.tanh(t2))
    mod = pyir.Module({"main": pyir.Function([x], pyir.If(cond, branch_a, branch_b))})
    assert _check_pass(mod) is mod
    outer = pyir.Let(t3, e, pyir.If(cond, branch_a, op.add(t3, t3)))
    new = _check_pass(pyir.Module({"main": pyir.Function([x], outer)}))
    assert new["main"].body is pyir.Let(t3, e, pyir.If(cond, op.nn.relu(t3), op.add(t3, t3)))


def test_deep_let_chain(deep_anf):
    """A 10**6-deep let chain with a duplicate at the top goes through without recursion."""
    main = deep_anf["main"]
    (x,) = main.params
    a, b = pyir.Var("a"), pyir.Var("b")
    body = pyir.Let(a, op.exp(x), pyir.Let(b, op.exp(x), op.add(main.body, op.subtract(a, b))))
    mod = pyir.Module({"main": pyir.Function([x], body)})
    new = CSE()(mod)
    top = new["main"].body
    assert top.var is a and top.body is op.add(main.body, op.subtract(a, a))
    assert CSE()(deep_anf) is deep_anf


def test_a_let_shared_by_two_scopes_is_decided_in_each():
    """One let node (hash-consing shares it) kept in one scope and dropped in another: each use
    gets its own result and no variable is left free (the earlier driver substituted %b once for
    the whole function, leaving %b free where its binding was kept)."""
    x = pyir.var("x", shape=(2,))
    a, b = pyir.var("a"), pyir.var("b")
    v = op.exp(x)
    shared = pyir.Let(b, v, op.nn.relu(b))
    kept_first = pyir.Tuple([shared, pyir.Let(a, v, op.add(shared, a))])
    out = _check_pass(pyir.Module({"main": pyir.Function([x], kept_first)}))["main"].body
    assert out.fields[0] is shared
    assert out.fields[1] is pyir.Let(a, v, op.add(op.nn.relu(a), a))
    dropped_first = pyir.Tuple([pyir.Let(a, v, pyir.Tuple([shared, a])), shared])
    out = _check_pass(pyir.Module({"main": pyir.Function([x], dropped_first)}))["main"].body
    assert out.fields[0] is pyir.Let(a, v, pyir.Tuple([op.nn.relu(a), a]))
    assert out.fields[1] is shared

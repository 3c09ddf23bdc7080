"""Shared by the normal-form tests: the models, A-normal-form checker, an ``if`` module."""

import numpy as np

import pyir
from pyir import op
from pyir.ir.expr import Call, Constant, Function, GlobalVar, If, Let, Op, Tuple, TupleGetItem, Var
from pyir.testing import resnet, shared_dag, transformer_block

MODELS = {
    "resnet": lambda: resnet(3),
    "transformer": transformer_block,
    "shared_dag": lambda: shared_dag(200),
}
ATOMS = (Var, GlobalVar, Constant, Op)


def check_pass(p, mod):
    """Run ``p``: the invariant bundle (input unchanged, same meaning, lineage, idempotent)."""
    return pyir.testing.check_pass(p, mod)


def assert_anf(f):
    """Every non-atomic subexpression of ``f`` is the value of a let."""
    def ok_tail(e):
        return isinstance(e, (Let, *ATOMS))

    for n in pyir.post_order(f, stop=lambda n: type(n) is Function and bool(n.attrs.get("Primitive"))):
        k = type(n)
        if k is Call:
            assert all(isinstance(a, ATOMS) for a in (n.op, *n.args)), n
        elif k is Tuple:
            assert all(isinstance(a, ATOMS) for a in n.fields), n
        elif k is TupleGetItem:
            assert isinstance(n.tuple_value, ATOMS), n
        elif k is If:
            assert isinstance(n.cond, ATOMS) and ok_tail(n.true_branch) and ok_tail(n.false_branch), n
        elif k is Function and not n.attrs.get("Primitive"):
            assert ok_tail(n.body), n
        elif k is Let:
            assert ok_tail(n.body), n


def if_module():
    """A conv shared by both branches of an if; tanh(conv) used in one branch only."""
    p = pyir.var("p", shape=(1, 2, 4, 4))
    c = pyir.var("c", shape=(), dtype="bool")
    w = pyir.const(np.ones((2, 2, 3, 3), "float32") * 0.1)
    conv = op.nn.conv2d(p, w, padding=(1, 1))
    only_then = op.tanh(conv)
    body = If(c, op.add(only_then, op.sigmoid(only_then)), op.negative(conv))
    return pyir.Module({"main": Function([p, c], body)}), conv

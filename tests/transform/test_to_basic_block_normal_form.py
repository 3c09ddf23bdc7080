"""Tests of ToBasicBlockNormalForm (its interplay with the other normal forms: test_normal_forms.py)."""

from _normal_forms import MODELS, check_pass, if_module

import pyir
from pyir.ir.expr import Call, If, Let
from pyir.testing import resnet
from pyir.transform.to_basic_block_normal_form import ToBasicBlockNormalForm
from pyir.transform.to_graph_normal_form import ToGraphNormalForm


def test_bbnf_leaves_conv2d_module_untouched():
    """BBNF on a conv2d module leaves its text and ids untouched (and changes nothing without if)."""
    mod = resnet(1)
    text = mod.astext()
    ids = [n.id for n in pyir.post_order(mod["main"])]
    out = ToBasicBlockNormalForm()(mod)
    assert out is mod
    assert mod.astext() == text
    assert [n.id for n in pyir.post_order(mod["main"])] == ids

    mod2, _ = if_module()
    text2 = mod2.astext()
    ids2 = [n.id for n in pyir.post_order(mod2["main"])]
    out2 = ToBasicBlockNormalForm()(mod2)
    assert out2 is not mod2
    assert mod2.astext() == text2
    assert [n.id for n in pyir.post_order(mod2["main"])] == ids2


def test_bbnf_binds_only_shared_across_branches():
    """BBNF let-binds the conv shared by both branches, at the dominating scope, and nothing else."""
    mod, conv = if_module()
    out = check_pass(ToBasicBlockNormalForm(), mod)
    body = out["main"].body
    assert type(body) is Let and body.value is conv
    assert type(body.body) is If
    lets = [n for n in pyir.post_order(out["main"]) if type(n) is Let]
    assert lets == [body]
    assert body.var.type_annotation is conv.checked_type
    then = body.body.true_branch
    assert type(then) is Call and then.op.name == "add"
    assert ToGraphNormalForm()(out)["main"] is mod["main"]


def test_bbnf_no_if_returns_same_module():
    """BBNF returns the very same module object when no function has an if."""
    for model in MODELS.values():
        mod = model()
        assert ToBasicBlockNormalForm()(mod) is mod

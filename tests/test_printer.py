"""The Relay-like text printer."""

from __future__ import annotations

import numpy as np
import pytest

import pyir
from pyir import op


def test_module_text_is_relay_like():
    """A conv2d + relu module prints as the Relay-style text users know."""
    x = pyir.var("x", shape=(1, 3, 8, 8))
    w = pyir.var("w", shape=(4, 3, 3, 3))
    mod = pyir.Module.from_expr(op.nn.relu(op.nn.conv2d(x, w, padding=(1, 1))))
    assert mod.astext() == (
        "def @main(%x: Tensor[(1, 3, 8, 8), float32], %w: Tensor[(4, 3, 3, 3), float32]) {\n"
        "  %0 = nn.conv2d(%x, %w, padding=[1, 1, 1, 1]);\n"
        "  nn.relu(%0)\n"
        "}\n")
    assert str(mod) == mod.astext()  # no large constants: no metadata section


def test_shared_subexpressions_are_bound_once_and_names_are_deterministic():
    """A node used twice is printed once; equal programs print identical text."""
    def build():
        x = pyir.var("x", shape=(2,))
        a = op.exp(x)
        return pyir.Function([x], op.add(a, a))

    t1, t2 = pyir.astext(build()), pyir.astext(build())
    assert t1 == t2
    assert t1.count("exp(") == 1 and "add(%0, %0)" in t1


def test_clashing_names_are_uniquified():
    """Two distinct variables with the same name hint print with distinct names."""
    a, b = pyir.var("x", shape=(2,)), pyir.var("x", shape=(2,))
    text = pyir.astext(pyir.Function([a, b], op.add(a, b)))
    assert "%x: " in text and "%x_1: " in text and "add(%x, %x_1)" in text


def test_constants_small_inline_large_summarized():
    """Scalars and small tensors print inline exactly; large ones as metadata references."""
    x = pyir.var("x", shape=(3,))
    e = op.add(op.multiply(x, pyir.const(0.1)), pyir.const(np.array([1, 2, 3], "float32")))
    e = op.add(e, pyir.const(np.zeros(3, "float32") + np.float32(1e-30)))
    big = op.add(x, pyir.const(np.ones((64, 3), "float32")))
    text = str(pyir.Tuple([e, big]))
    assert "0.1f" in text and "tensor([1.0, 2.0, 3.0], float32)" in text and "1e-30" in text
    assert "meta[Constant][0]" in text and "elided" in text
    full = pyir.astext(pyir.Tuple([e, big]))
    assert "#[metadata]" in full and "meta[Constant][0] = float32 (64, 3)" in full


def test_default_attrs_are_omitted_and_typed_values_kept():
    """Attributes equal to the schema default are not printed; function attrs are, typed."""
    x = pyir.var("x", shape=(1, 2, 4, 4))
    text = pyir.astext(op.nn.max_pool2d(x, pool_size=(3, 3), strides=(1, 1), ceil_mode=False))
    assert "pool_size=[3, 3]" in text and "strides" not in text and "ceil_mode" not in text
    f = pyir.Function([x], op.nn.relu(x), attrs={"Primitive": 1, "Scale": 1.0, "Name": "a\"b"})
    head = pyir.astext(f).splitlines()[0]
    assert 'Name="a\\"b", Primitive=1, Scale=1.0' in head


def test_let_if_tuple_and_nested_function_print():
    """Lets print as sequential bindings, ifs with braces, nested functions as bound fn blocks."""
    x = pyir.var("x", shape=(2,))
    v = pyir.var("v")
    inner_p = pyir.var("p", shape=(2,))
    inner = pyir.Function([inner_p], op.tanh(inner_p), attrs={"Primitive": 1})
    body = pyir.Let(v, pyir.Call(inner, [x]), pyir.If(op.greater(op.sum(v), pyir.const(0.0)),
                                                       pyir.TupleGetItem(pyir.Tuple([v, x]), 0), x))
    text = pyir.astext(pyir.Function([x], body))
    assert "fn (%p: Tensor[(2), float32], Primitive=1) {" in text
    assert "let %v = %0(%x);" in text
    assert "if (%" in text and "} else {" in text and ".0" in text


def test_deep_chain_prints(deep_chain):
    """A 10^6-deep chain prints without recursion, one binding per call."""
    text = deep_chain.astext()
    assert text.count("\n") == 10**6 + 2
    assert text.splitlines()[-2].startswith("  subtract(%999998, %x)")


def test_repr_is_short():
    """repr of nodes and modules is one short line."""
    m = pyir.testing.resnet(2)
    assert repr(m).startswith("<Module [@main]") and "\n" not in repr(m)
    r = repr(m["main"].body)
    assert r.startswith("<Call nn.softmax(") and len(r) < 200


def test_nodes_shared_across_branches_print_once():
    """A node used in both branches of nested ifs and outside is bound once (no blow-up)."""
    x = pyir.var("x", shape=(3,))
    c = pyir.var("c", shape=(), dtype="bool")
    h = x
    for _ in range(12):
        s = op.exp(h)
        h = op.add(pyir.If(c, op.nn.relu(s), op.negative(s)), s)
    text = pyir.astext(pyir.Function([c, x], h))
    assert text.count("exp(") == 12
    assert len(text.splitlines()) < 100


def test_shared_fused_function_prints_once_and_round_trips():
    """A function node used in two scopes is printed once, so parsing keeps the sharing."""
    x = pyir.var("x", shape=(3,))
    c = pyir.var("c", shape=(), dtype="bool")
    s = op.exp(x)
    body = op.add(pyir.If(c, op.nn.relu(s), op.negative(s)), s)
    mod = pyir.transform.FuseOps()(pyir.Module.from_expr(body))
    text = mod.astext()
    assert text.count("exp(") == 1
    back = pyir.parse(text)
    assert back.astext() == text
    assert pyir.alpha_equal(back["main"], mod["main"])
    assert pyir.count_nodes(back["main"]) == pyir.count_nodes(mod["main"])


# -- issue 10 ---------------------------------------------------------------------------------------

N_DEEP = 100_000


def test_astext_of_attrs_and_other_objects():
    """issue 10 item 14: astext of Attrs prints its items; of a non-pyir object raises a pyir error."""
    from pyir.errors import PyIRError

    assert pyir.astext(pyir.Attrs(a=1)) == "{a=1}"
    assert pyir.astext(pyir.Attrs({"a b": (1, 2.5), "c": "s"})) == '{"a b"=[1, 2.5], c="s"}'
    assert pyir.astext(pyir.Attrs()) == "{}"
    for bad in (42, None, object()):
        with pytest.raises(PyIRError):
            pyir.astext(bad)


def _deep_type(n):
    t = pyir.TensorType((2,), "float32")
    for i in range(n):
        t = pyir.TupleType([t]) if i % 2 else pyir.FuncType([pyir.TensorType((), "int8")], t)
    return t


def test_deep_types_print_iteratively():
    """issue 10 item 16: str, astext and type_str of a type nested 10^5 deep (was RecursionError)."""
    from pyir.text.printer import type_repr

    t = _deep_type(N_DEEP)
    s = str(t)
    assert s == pyir.astext(t)
    assert s.count("fn (") == N_DEEP // 2 and s.endswith("Tensor[(2), float32]" + ",)" * (N_DEEP // 2))
    r = type_repr(t)
    assert r.startswith("TupleType([FuncType([TensorType((), 'int8')], TupleType([") and len(r) > 20 * N_DEEP
    small = _deep_type(5)
    assert type_repr(small) == repr(small) and pyir.parse_type(str(small)) is small


def test_deep_tuples_and_functions_print():
    """issue 10 item 16: astext of 10^5 nested functions; after InferType too.  (10^5 nested
    tuples after InferType print in test_parser.py::test_deep_types_parse, which parses that
    text back: one build, InferType and astext of that module for both checks.)"""
    T = pyir.TensorType((2,), "float32")
    x = pyir.var("x", T)
    f = x
    for i in range(N_DEEP):
        f = pyir.Function([pyir.var(f"v{i}", T)], f)
    text = pyir.astext(pyir.Function([x], f))
    assert text.count("fn (%v") == N_DEEP and len(text) < 200 * N_DEEP
    # typed nested functions: each level's return type grows with the depth, so the text is
    # quadratic by nature; 1200 levels used to hit the recursion limit
    f = x
    for i in range(1200):
        f = pyir.Function([pyir.var(f"w{i}", T)], f)
    mod = pyir.transform.InferType()(pyir.Module({"main": pyir.Function([x], f)}))
    assert mod.astext().count("fn (%w") == 1200


def _nested(kind, n):
    """``main`` with ``n`` nested ifs, functions or let blocks, each using one shared node."""
    T = pyir.TensorType((2,), "float32")
    x = pyir.var("x", T)
    c = pyir.var("c", pyir.TensorType((), "bool"))
    s = op.nn.relu(x)
    e = op.negative(x)
    for i in range(n):
        if kind == "if":
            e = pyir.If(c, op.add(e, s), op.negative(s))
        elif kind == "fn":
            e = pyir.Function([pyir.var(f"v{i}", T)], pyir.Tuple([e, s]))
        else:
            v = pyir.var(f"v{i}", T)
            e = pyir.Let(v, e, op.add(v, s))
    return pyir.Module({"main": pyir.Function([x, c], e)})


@pytest.mark.parametrize("kind,n", [("if", N_DEEP), ("fn", N_DEEP // 2), ("let", N_DEEP // 2)])
def test_nested_scopes_print_and_parse_linearly(kind, n):
    """issue 10 item 17: 10^5 nested ifs (5x10^4 functions, lets) print with capped indentation, parse back.

    Before, text and memory grew quadratically with the nesting (2x10^4 ifs: 26 s, 5 GB).
    """
    from pyir.ir.traverse import count_nodes
    from pyir.text.printer import MAX_INDENT

    small = _nested(kind, 300)
    small_text = small.astext()
    back = pyir.parse(small_text)
    assert pyir.alpha_equal(back["main"], small["main"]) and back.astext() == small_text
    mod = _nested(kind, n)
    text = mod.astext()
    assert len(text) < 400 * n
    assert max(len(line) - len(line.lstrip(" ")) for line in text.splitlines()) == 2 * MAX_INDENT
    assert count_nodes(pyir.parse(text)["main"]) == count_nodes(mod["main"])


def test_scope_tree_lca():
    """issue 10 item 17: ScopeTree's LCA (jump pointers) matches a naive walk, and takes few steps."""
    import random

    from pyir.ir.traverse import ScopeTree

    rng = random.Random(0)
    tree, parent = ScopeTree(), [0]
    for i in range(1, 3000):
        p = rng.randrange(i) if rng.random() < 0.2 else i - 1
        assert tree.new(p) == i
        parent.append(p)

    def ancestors(a):
        out = [a]
        while a:
            a = parent[a]
            out.append(a)
        return out

    for _ in range(3000):
        a, b = rng.randrange(3000), rng.randrange(3000)
        up = set(ancestors(a))
        assert tree.lca(a, b) == next(s for s in ancestors(b) if s in up)
    # a 10^6-deep path: the LCA of its ends with the root is found in O(log) jumps
    chain = ScopeTree()
    s = 0
    for _ in range(10**6):
        s = chain.new(s)
    steps = 0
    a = s
    while chain.depth[a] > 0:  # the climb lca() makes
        j = chain.jump[a]
        a = j if chain.depth[j] >= 0 else chain.parent[a]
        steps += 1
    assert steps < 100 and chain.lca(s, 0) == 0 and chain.lca(s, s - 1) == s - 1


def test_repr_of_deep_types():
    """issue 10 item 16: repr of a type nested 10^5 deep is iterative (was RecursionError)."""
    t = _deep_type(N_DEEP)
    r = repr(t)
    assert r.startswith("TupleType([FuncType([TensorType((), 'int8')], TupleType([")
    assert r.endswith("TensorType((2,), 'float32')" + ")])" * (N_DEEP // 2))
    assert repr(pyir.Attrs(t=_deep_type(3))) == "Attrs({'t': %r})" % (_deep_type(3),)


# -- type aliases (issue 10 item 16: linear text for deeply nested function types) -------------------


def _nested_functions(d):
    """main(x) = fn () { fn () { ... relu(x) } }, d functions deep, after InferType."""
    x = pyir.var("x", shape=(2,))
    e = op.nn.relu(x)
    for _ in range(d):
        e = pyir.Function([], e)
    return pyir.transform.InferType()(pyir.Module({"main": pyir.Function([x], e)}))


def test_nested_function_types_print_with_aliases():
    """issue 10 item 16: each large type printed twice gets one `type $tN = ...;` declaration."""
    f7 = "fn () -> " * 7 + "Tensor[(2), float32]"
    assert len(f7) > 80 and len(f7) - 9 <= 80
    lines = _nested_functions(10).astext().splitlines()
    assert lines[:9] == [
        f"type $t0 = {f7};",
        "type $t1 = fn () -> $t0;",
        "type $t2 = fn () -> $t1;",
        "",
        "def @main(%x: Tensor[(2), float32]) -> fn () -> $t2 {",
        "  fn () -> $t2 {",
        "    fn () -> $t1 {",
        "      fn () -> $t0 {",
        f"        fn () -> {f7[9:]} {{"]
    assert lines[9:15] == ["  " * (5 + i) + "fn () -> " * (6 - i) + "Tensor[(2), float32] {"
                           for i in range(6)]
    assert lines[15] == "  " * 11 + "nn.relu(%x)"


# The text of 10^5 nested typed functions grows linearly (was O(d^2): 46 GB at 10^5): asserted in
# test_parser.py::test_nested_function_types_round_trip_at_depth, which parses that very text back
# (one build, InferType and astext of the 10^5-deep module for both checks).


def test_nested_tuples_of_functions_print_linearly():
    """issue 10 item 16: tuples of functions nested 2*10^4 deep print linearly and round-trip."""
    def build(d):
        x = pyir.var("x", shape=(2,))
        e = op.nn.relu(x)
        for _ in range(d):
            e = pyir.Tuple([pyir.Function([], e), x])
        return pyir.transform.InferType()(pyir.Module({"main": pyir.Function([x], e)}))

    small, large = build(2000).astext(), build(20000)
    text = large.astext()
    assert 9 < len(text) / len(small) < 11.5
    assert "type $t1 = (fn () -> $t0, Tensor[(2), float32]);\n" in text
    back = pyir.parse(text)
    assert back.astext() == text
    assert back["main"].ret_type is large["main"].ret_type
    assert pyir.alpha_equal(back["main"], large["main"])


def test_shared_types_print_once():
    """issue 10 item 16: a type DAG with 2^200 leaves (each level a pair of the one below) prints in
    linear text, in annotations, let annotations, function attributes and alone."""
    t = pyir.ir.types.TensorType((2, 3))
    for _ in range(200):
        t = pyir.ir.types.TupleType([t, t])
    x, v = pyir.Var("x", t), pyir.Var("v", t)
    f = pyir.Function([x], pyir.Let(v, x, v), t, {"ty": t})
    text = pyir.astext(pyir.Module({"main": f}))
    assert len(text) < 100 * 200 and text.count("type $t") == 199
    assert "def @main(%x: $t198, ty=$t198) -> $t198 {\n  let %v: $t198 = %x;\n" in text
    back = pyir.parse(text)["main"]
    assert back.params[0].type_annotation is t and back.attrs["ty"] is t and back.ret_type is t
    alone = pyir.astext(t)
    assert alone.endswith(";\n\n($t197, $t197)") and pyir.parse_type(alone) is t
    expr_text = pyir.astext(pyir.Let(v, x, v))
    assert expr_text.startswith("type $t0 = ") and pyir.parse_expr(expr_text, {"x": x}).value is x


def test_types_without_aliases_print_as_before():
    """issue 10 item 16: a large type printed once, or a small type printed often, gets no alias."""
    big = pyir.ir.types.TupleType([pyir.ir.types.TensorType((1, 3, 224, 224))] * 3)
    assert len(str(big)) > 80
    x = pyir.Var("x", big)
    once = pyir.astext(pyir.Function([x], x))
    assert once == f"fn (%x: {big}) {{\n  %x\n}}\n"
    small = pyir.ir.types.TensorType((1, 3, 224, 224))
    ys = [pyir.Var(f"y{i}", small) for i in range(5)]
    many = pyir.astext(pyir.Function(ys, pyir.Tuple(ys), pyir.ir.types.TupleType([small] * 5)))
    assert "$" not in many and many.count(str(small)) == 5 + 5
    assert pyir.astext(big) == str(big)


def test_notebook_view_keeps_type_aliases():
    """issue 10 item 16: the HTML view of a module with type aliases shows every declaration (it
    dropped the first text line, assuming it was the `def` header)."""
    html = _nested_functions(12)._repr_html_()
    assert "type $t0 = " in html and "type $t4 = " in html
    assert html.count('<span class="gv">@main</span>') == 1  # the header, only in the summary


# -- issue 11 item 8: printer speed (same text) ----------------------------------------------------


def test_attribute_text_cache_is_keyed_by_callee_and_skips_alias_placeholders():
    """issue 11 item 8: the per-astext cache of attribute text keys on (callee, attrs), since
    default elision depends on the operator, and never caches text holding a type-alias
    placeholder, since each occurrence counts towards the alias."""
    x = pyir.var("x", shape=(2, 3))
    s = op.nn.softmax(x, axis=-1)  # axis=-1 is softmax's default: elided
    g = pyir.GlobalVar("f")
    c = pyir.Call(g, [x], attrs=s.attrs)  # the same Attrs node, no operator: printed
    assert c.attrs is s.attrs
    f = pyir.Function([x], pyir.Tuple([s, op.expand_dims(x, axis=-1), c, s]))
    assert pyir.astext(f) == (
        "fn (%x: Tensor[(2, 3), float32]) {\n"
        "  %0 = nn.softmax(%x);\n"
        "  %1 = expand_dims(%x, axis=-1);\n"
        "  %2 = @f(%x, axis=-1);\n"
        "  (%0, %1, %2, %0)\n"
        "}\n")
    t = pyir.TensorType((2,), "float32")
    for _ in range(5):
        t = pyir.FuncType([t], t)
    d = pyir.Call(g, [x], attrs={"ty": t})
    e = pyir.Call(g, [op.exp(x)], attrs={"ty": t})
    text = pyir.astext(pyir.Function([x], pyir.Tuple([d, e])))
    assert text.endswith(
        "type $t3 = fn ($t2) -> $t2;\n\n"
        "fn (%x: Tensor[(2, 3), float32]) {\n"
        "  %0 = @f(%x, ty=$t3);\n"
        "  %1 = exp(%x);\n"
        "  %2 = @f(%1, ty=$t3);\n"
        "  (%0, %2)\n"
        "}\n")


def test_shared_nodes_bind_once_in_post_order():
    """issue 11 item 8: the scope plan's post-order (a node popped again after its expansion is
    its own marker) binds a node pushed by several parents once, children first."""
    x = pyir.var("x", shape=(2,))
    a = op.exp(x)
    b = op.add(a, a)
    c = op.multiply(b, a)
    d = op.add(c, b)
    f = pyir.Function([x], pyir.Tuple([d, c, a, pyir.TupleGetItem(pyir.Tuple([b, d]), 1)]))
    assert pyir.astext(f) == (
        "fn (%x: Tensor[(2), float32]) {\n"
        "  %0 = exp(%x);\n"
        "  %1 = add(%0, %0);\n"
        "  %2 = multiply(%1, %0);\n"
        "  %3 = add(%2, %1);\n"
        "  %4 = (%1, %3);\n"
        "  %5 = %4.1;\n"
        "  (%3, %2, %0, %5)\n"
        "}\n")


def test_resnet_style_module_prints_bindings_in_order():
    """issue 11 item 8: a resnet-style module of 10^4 ops (the print benchmark's workload) prints
    one numbered binding per op, attributes of every conv2d alike, and parses back."""
    T, F32 = pyir.TensorType, "float32"
    c, hw, blocks = 4, 4, 1400
    x = pyir.Var("x", T((1, c, hw, hw), F32))
    params, h = [x], x
    for b in range(blocks):
        w1, b1 = pyir.Var(f"w{b}_1", T((c, c, 3, 3), F32)), pyir.Var(f"b{b}_1", T((1, c, 1, 1), F32))
        params += [w1, b1]
        t = op.nn.relu(op.add(op.nn.conv2d(h, w1, padding=(1, 1)), b1))
        h = op.add(op.add(op.nn.conv2d(t, w1, padding=(1, 1)), b1), h)
    mod = pyir.Module({"main": pyir.Function(params, op.nn.relu(h))})
    text = mod.astext()
    lines = text.splitlines()
    n = 6 * blocks
    assert len(lines) == n + 3  # header, n bindings, the tail, "}"
    assert lines[1] == "  %0 = nn.conv2d(%x, %w0_1, padding=[1, 1, 1, 1]);"
    assert lines[-3] == f"  %{n - 1} = add(%{n - 2}, %{n - 7});"
    assert lines[-2] == f"  nn.relu(%{n - 1})"
    assert text.count("padding=[1, 1, 1, 1]") == 2 * blocks
    assert pyir.parse(text).astext() == text

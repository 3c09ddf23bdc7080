"""The generated operator builders (issue 11 item 5): keyword parameters, identity entries, and
the same nodes and errors as the generic path (``pyir.Call`` and the schema)."""

from __future__ import annotations

import gc
import math
import threading
import weakref

import numpy as np
import pytest

import pyir
from pyir import op
from pyir.op.registry import ATTR_HOT_MAX, ATTR_KEYWORDS_MAX, OpPattern, get_op_def, register_op


def _x(shape=(1, 4, 8, 8)):
    return pyir.var("x", shape=shape)


def test_every_builder_returns_what_call_builds():
    """Every registered operator's builder, with and without attributes, returns the node that
    ``pyir.Call`` builds from the same inputs and attributes (the normalization of both paths)."""
    x, w = _x(), pyir.var("w", shape=(4, 4, 3, 3))
    cases = {"nn.conv2d": ((x, w), {"padding": (1, 1), "data_layout": "NCHW"}),
             "nn.max_pool2d": ((x,), {"pool_size": (2, 2), "layout": "NCHW", "ceil_mode": True}),
             "nn.avg_pool2d": ((x,), {"pool_size": 2, "count_include_pad": True}),
             "nn.batch_norm": ((x, *[pyir.var("c", shape=(4,))] * 4), {"epsilon": 1e-3}),
             "nn.lrn": ((x,), {"size": 3, "beta": 0.5}),
             "concatenate": ((pyir.Tuple([x, x, x]),), {"axis": 1}),
             "reshape": ((x,), {"newshape": [4, 64]}),
             "cast": ((x,), {"dtype": np.float16})}
    import sys

    builders = {}  # operator name -> its builder, from every module of pyir.op
    for mod_name, mod in list(sys.modules.items()):
        if mod_name.startswith("pyir.op.") and mod is not None:
            for b in vars(mod).values():
                if (callable(b) and isinstance(getattr(b, "op", None), pyir.Op)
                        and not getattr(b, "relay_signature", False)):  # the registered builders
                    builders[b.op.name] = b
    seen = 0
    for name in pyir.op.list_ops():
        odef = get_op_def(name)
        if name not in builders or odef.num_inputs == 0:
            continue
        args, kw = cases.get(name, ((x,) * (odef.num_inputs or 2), {}))
        if any(a.default is pyir.op.registry.REQUIRED for a in odef.attrs) and name not in cases:
            continue
        builder = builders[name]
        c = builder(*args, **kw)
        assert c is pyir.Call(pyir.Op(name), list(args), kw), name
        assert builder(*args, **kw) is c  # the identity entry's hit
        assert c.attrs is get_op_def(name).normalize_attrs(dict(kw))
        seen += 1
    assert seen >= 40


def test_identity_entries_never_serve_a_changed_value():
    """A list given as an attribute may change between calls: it is never an identity entry
    (only exact immutable values are), so each call sees the list's current content."""
    x, w = _x(), pyir.var("w", shape=(4, 4, 3, 3))
    p = [1, 1]
    a = op.nn.conv2d(x, w, padding=p)
    p[0] = 2
    b = op.nn.conv2d(x, w, padding=p)
    assert a.attrs["padding"] == (1, 1, 1, 1) and b.attrs["padding"] == (2, 1, 2, 1)
    # equal but not identical values (1, 1.0, True, -0.0): each normalized on its own
    alpha = [0.0, -0.0, 0, 1, 1.0, np.float32(1.0), math.inf, math.nan]
    calls = [op.nn.leaky_relu(x, alpha=v) for v in alpha]
    for v, c in zip(alpha, calls):
        assert c.attrs is get_op_def("nn.leaky_relu")._normalize({"alpha": v})
        assert op.nn.leaky_relu(x, alpha=v) is c
    assert calls[0] is not calls[1] and math.copysign(1, calls[1].attrs["alpha"]) == -1
    with pytest.raises(pyir.AttrError):
        op.nn.leaky_relu(x, alpha=True)  # after 1 and 1.0 were seen: still the schema's error


def test_attributes_beyond_the_keyword_parameters_and_unknown_keywords():
    """Attributes past the first ATTR_KEYWORDS_MAX, and unknown keywords, take the generic
    builder: the same node, the same error message as before, arity checked first."""
    x, w = _x(), pyir.var("w", shape=(4, 4, 3, 3))
    odef = get_op_def("nn.conv2d")
    assert len(odef.attrs) > ATTR_KEYWORDS_MAX
    late = odef.attrs[ATTR_KEYWORDS_MAX].name
    c = op.nn.conv2d(x, w, padding=(1, 1), **{late: None})
    assert c is op.nn.conv2d(x, w, padding=(1, 1))  # the default, given explicitly
    c2 = op.nn.conv2d(x, w, kernel_layout="OIHW", padding=(1, 1))
    assert c2 is c
    with pytest.raises(pyir.AttrError) as e:
        op.nn.conv2d(x, w, padding=(1, 1), paddding=(1, 1))
    assert str(e.value) == ("operator 'nn.conv2d': unknown attribute(s) ['paddding']; accepted: "
                            f"{[a.name for a in odef.attrs]}; did you mean 'padding'?")
    with pytest.raises(pyir.TypeCheckError, match="takes 2 input"):
        op.nn.conv2d(x, padding="bad")  # arity before attributes, as the generic builder
    with pytest.raises(pyir.TypeCheckError, match="takes 2 input"):
        op.nn.conv2d(x, w, x, nope=1)
    with pytest.raises(pyir.AttrError, match="expected ints"):
        op.nn.conv2d(x, w, padding="bad")
    with pytest.raises(pyir.AttrError, match="unknown attribute"):
        op.nn.relu(x, axis=1)
    with pytest.raises(pyir.WellFormedError, match="cannot use"):
        op.nn.relu("x", x)  # inputs before arity, as the former builder
    with pytest.raises(pyir.TypeCheckError, match="takes 1 input"):
        op.nn.relu()
    assert op.add(x, 1.0).args[1] is pyir.const(1.0)  # inputs still converted
    assert op.concatenate([x, [x, x][0]], axis=1).args == (pyir.Tuple([x, x]),)


def test_generic_builder_of_many_inputs_builds_what_call_builds():
    """The generic builder of six inputs (an attribute name no keyword parameter can take; its
    miss builds the node inline): the node Call() builds, its key the documented bytes, one
    node on a rebuild, distinct nodes for distinct inputs, the arity error unchanged."""
    from pyir.ir.node import digest
    from pyir.op.registry import AttrSpec

    b = register_op("test.builders_six_inputs", num_inputs=6, type_rel=lambda types, attrs: types[0],
                    compute=lambda *xs, **kw: xs[0], pattern=OpPattern.ELEMWISE,
                    attrs=(AttrSpec("args", "int", 1),))
    xs = [pyir.var(f"q{i}", shape=(2,)) for i in range(7)]
    c = b(*xs[:6], args=3)
    assert c.op is pyir.Op("test.builders_six_inputs") and c.args == tuple(xs[:6])
    assert c.id == digest(b"C" + c.op.id + c.attrs.id + b"".join(x.id for x in xs[:6]))
    assert b(*xs[:6], args=3) is c and pyir.Call(c.op, xs[:6], {"args": 3}) is c
    assert b(*xs[:6]) is pyir.Call(c.op, xs[:6], {"args": 1}) is not c
    d = b(*xs[1:], args=3)
    assert d is not c and d.id != c.id and d.args == tuple(xs[1:])
    with pytest.raises(pyir.TypeCheckError, match="takes 6 input"):
        b(*xs[:5], args=3)


def test_identity_entries_are_bounded_and_weak():
    """At most ATTR_HOT_MAX entries per operator; they keep no Attrs (or call) alive."""
    x = _x()
    odef = get_op_def("nn.softmax")
    calls = [op.nn.softmax(x, axis=i % 4) for i in range(4 * ATTR_HOT_MAX)]
    assert 0 < len(odef._hot) <= ATTR_HOT_MAX
    assert op.nn.softmax(x, axis=3) is calls[3]
    ref = weakref.ref(op.nn.softmax(x, axis=123).attrs)  # the call dies at once, its Attrs too
    gc.collect()
    assert ref() is None
    assert op.nn.softmax(x, axis=123).attrs["axis"] == 123


def test_a_literal_of_a_second_call_site_becomes_an_identity_entry():
    """Attributes equal to an entry's but other objects (a second call site's literal) are found
    in the marshal cache; met again as the very same objects, they get an identity entry of their
    own (the same Attrs); values rebuilt at each call never do."""
    x = _x()
    odef = get_op_def("nn.softmax")
    first = op.nn.softmax(x, axis=10**6)  # an int past the small-int cache: a new object per site
    site2 = int("1000000")  # equal, another object (as a literal of another call site is)
    assert site2 is not first.attrs["axis"]
    assert op.nn.softmax(x, axis=site2) is first  # a marshal hit: no entry yet
    assert not any(e[0] is site2 for e in odef._hot)
    assert op.nn.softmax(x, axis=site2) is first  # the same object again: entered
    assert any(e[0] is site2 for e in odef._hot)
    assert op.nn.softmax(x, axis=site2) is first  # ... and found by identity
    odef = get_op_def("reshape")
    c = op.reshape(x, newshape=(4, 64))
    dims = [4, 64]
    for _ in range(3):  # a shape rebuilt at each call: equal values, new objects
        assert op.reshape(x, newshape=tuple(dims)) is c
    assert sum(1 for e in odef._hot if e[0] == (4, 64)) == 1


def test_identity_entry_of_a_dead_attrs_is_rebuilt():
    """An entry whose Attrs died is skipped: the next call normalizes again (a new, equal node)."""
    x = _x()
    odef = get_op_def("nn.log_softmax")
    c = op.nn.log_softmax(x, axis=2)
    aid = c.attrs.id
    del c
    gc.collect()
    c = op.nn.log_softmax(x, axis=2)
    assert c.attrs.id == aid and c.attrs is odef._normalize({"axis": 2})


def test_builders_of_unusual_attribute_names_use_the_generic_path():
    """An operator whose attribute names cannot be keyword parameters (``args``, a leading
    underscore) gets the generic builder, which works as before."""
    from pyir.op.registry import AttrSpec

    b = register_op("test.builders_odd_names", num_inputs=1, type_rel=lambda types, attrs: types[0],
                    compute=lambda x, **kw: x, pattern=OpPattern.ELEMWISE,
                    attrs=(AttrSpec("args", "int", 1), AttrSpec("_k", "int", 2)))
    x = _x()
    c = b(x, args=3, _k=4)
    assert dict(c.attrs.items()) == {"args": 3, "_k": 4} and b(x, args=3, _k=4) is c
    assert b(x) is pyir.Call(pyir.Op("test.builders_odd_names"), [x], {"args": 1})


def test_keyword_builders_are_thread_safe():
    """Threads building calls with the same literal attributes (entries inserted and pushed out
    at once) get one canonical node per structure."""
    n_threads = 6
    x = _x()
    results: list[list] = [[] for _ in range(n_threads)]
    barrier = threading.Barrier(n_threads)
    axes = [(0, 1, 2, 3), (1, 0, 2, 3), (3, 2, 1, 0), (0, 2, 1, 3)] * 3

    def work(slot):
        barrier.wait()
        out = []
        for i in range(300):
            out.append(op.transpose(x, axes=axes[i % len(axes)]))
            out.append(op.nn.leaky_relu(x, alpha=float(i % (2 * ATTR_HOT_MAX))))
        results[slot] = out

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results[1:]:
        assert len(r) == len(results[0]) and all(a is b for a, b in zip(r, results[0]))


def test_operators_without_inputs_keep_the_generic_builder():
    """An operator with no inputs (``zeros``) is built by the generic builder: the node
    ``pyir.Call`` builds, and the arity error for an input given."""
    c = op.zeros(shape=(2, 3))
    assert c is pyir.Call(pyir.Op("zeros"), [], {"shape": (2, 3)}) and op.zeros(shape=(2, 3)) is c
    with pytest.raises(pyir.TypeCheckError, match="takes 0 input"):
        op.zeros(_x(), shape=(2, 3))

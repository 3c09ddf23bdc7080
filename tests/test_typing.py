"""The typed contract of the operator builders (issue 11 item 4).

One mypy run (a subprocess, ~5 s cold) checks a snippet whose lines carry their
expectations: ``# E: <code>`` an error with that code, ``# R: <type>`` a revealed
type, no marker: clean.  The other tests check the generated signatures file and the
runtime signatures without mypy.
"""

from __future__ import annotations

import inspect
import pathlib
import re
import subprocess
import sys

import pytest

import pyir
from pyir import op
from pyir.op import _gen_signatures, _signature, nn, tensor
from pyir.op.registry import REQUIRED, get_op_def, list_ops

ROOT = pathlib.Path(pyir.__file__).resolve().parent.parent

SNIPPET = '''\
import numpy as np
import pyir
from pyir import op

x = pyir.var("x", shape=(1, 3, 8, 8))
w = pyir.var("w", shape=(4, 3, 3, 3))
v = pyir.var("v", shape=(3,))
ok1 = op.nn.conv2d(x, w, padding=(1, 1))
ok2 = op.nn.conv2d(x, w, strides=2, groups=np.int64(1), out_dtype="float16", kernel_size=[3, 3])
ok3 = op.add(x, 1.0)
ok4 = op.multiply(x, np.float32(2)) + op.subtract(np.ones((1, 3, 8, 8), "float32"), x)
ok5 = op.concatenate([x, x], axis=1)
ok6 = op.nn.max_pool2d(x, pool_size=2, ceil_mode=True)
ok7 = op.transpose(x, axes=None)
ok8 = op.cast(x, dtype=np.float16)
ok9 = op.nn.batch_norm(x, v, v, v, v, epsilon=1e-3)
ok10 = op.reshape(x, newshape=[1, -1])
ok11 = op.clip(x, a_min=0, a_max=6)
ok12 = op.nn.dense(x, w, units=None, out_dtype=np.dtype("float32"))
ok13: pyir.Call = op.sum(op.nn.relu(x), axis=(1, 2), keepdims=True)
e1 = op.nn.conv2d(x, w, padding="same")  # E: arg-type
e2 = op.nn.conv2d(x, w, bogus=True)  # E: call-arg
e3 = op.nn.conv2d(1, 2, 3, padding="same", bogus=True)  # E: call-arg arg-type
e4 = op.nn.max_pool2d(x)  # E: call-arg
e5 = op.nn.relu(x, x)  # E: call-arg
e6 = op.add(x)  # E: call-arg
e7 = op.nn.conv2d(x, w, groups=1.5)  # E: arg-type
e8 = op.nn.relu("x")  # E: arg-type
e9 = op.cast(x)  # E: call-arg
e10 = op.nn.conv2d(data=x, weight=w)  # E: call-arg
e11 = op.nn.leaky_relu(x, alpha="0.1")  # E: arg-type
e12 = op.nn.softmax(x, axis=None)  # E: arg-type
reveal_type(op.nn.relu(x))  # R: pyir.ir.expr.Call
reveal_type(op.add(x, x))  # R: pyir.ir.expr.Call
ok14 = op.take(x, pyir.const(1), 0, mode="wrap")
ok16 = op.nn.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), 0.0)
ok15 = op.nn.batch_matmul(v, v, "int32", True, False)
e13 = op.concatenate(x, x)  # E: arg-type
reveal_type(op.concatenate([x, x], 1))  # R: pyir.ir.expr.Call
reveal_type(ok1.args)  # R: tuple[pyir.ir.expr.Expr, ...]
'''

# Node has no catch-all ``__getattr__``: a misspelled field is an error.
SNIPPET_ATTR = '''\
print(ok1.argz)  # E: attr-defined
'''

_LINE = re.compile(r"^snippet\.py:(\d+): (error|note): (.*?)(?:  \[([a-z-]+)\])?$")


@pytest.fixture(scope="module")
def mypy_report(tmp_path_factory: pytest.TempPathFactory) -> dict[int, list[tuple[str, str, str]]]:
    """One strict mypy run over the snippet: {line: [(severity, message, code)]}."""
    d = tmp_path_factory.mktemp("typing")
    (d / "snippet.py").write_text(SNIPPET + SNIPPET_ATTR, encoding="utf-8")
    (d / "mypy.ini").write_text(f"[mypy]\nmypy_path = {ROOT}\nstrict = True\n"
                                "[mypy-pyir.*]\nfollow_imports = silent\n", encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "mypy.ini",
                           "--cache-dir", "/dev/null", "--no-error-summary", "snippet.py"],
                          cwd=d, capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    report: dict[int, list[tuple[str, str, str]]] = {}
    for ln in proc.stdout.splitlines():
        m = _LINE.match(ln)
        assert m, f"unexpected mypy output: {ln!r}\n{proc.stdout}"
        report.setdefault(int(m[1]), []).append((m[2], m[3], m[4] or ""))
    return report


def _expectations(text: str, first_line: int) -> dict[int, tuple[str, str]]:
    out = {}
    for i, ln in enumerate(text.splitlines(), first_line):
        m = re.search(r"# ([ER]): (.*)$", ln)
        if m:
            out[i] = (m[1], m[2].strip())
    return out


def _check(report: dict[int, list[tuple[str, str, str]]], text: str, first_line: int) -> None:
    expected = _expectations(text, first_line)
    lines = text.splitlines()
    for i, ln in enumerate(lines, first_line):
        got = report.get(i, [])
        errors = {code for sev, _, code in got if sev == "error"}
        kind, what = expected.get(i, ("", ""))
        if kind == "E":
            assert errors >= set(what.split()), f"line {i} {ln!r}: expected {what}, got {got}"
        elif kind == "R":
            revealed = [msg.replace("builtins.", "") for _, msg, _ in got if msg.startswith("Revealed type")]
            assert revealed == [f'Revealed type is "{what}"'], f"line {i} {ln!r}: {got}"
        else:
            assert not errors, f"line {i} {ln!r} should be clean, got {got}"


def test_builders_typed_for_mypy(mypy_report: dict[int, list[tuple[str, str, str]]]) -> None:
    """issue 11 item 4: mypy rejects ``padding="same"``, ``bogus=True``, wrong arity and
    missing required attributes; correct calls are clean under --strict; builders return Call."""
    _check(mypy_report, SNIPPET, 1)


def test_unknown_field_is_a_mypy_error(mypy_report: dict[int, list[tuple[str, str, str]]]) -> None:
    """issue 11 item 4: ``call.argz`` is a mypy error (Node has no catch-all __getattr__)."""
    _check(mypy_report, SNIPPET_ATTR, len(SNIPPET.splitlines()) + 1)


def test_generated_signatures_up_to_date() -> None:
    """issue 11 item 4: pyir/op/_signatures.py is what ``python -m pyir.op._gen_signatures``
    renders from the registry (regenerate it after adding or changing an operator)."""
    committed = _gen_signatures.GENERATED.read_text(encoding="utf-8")
    assert committed == _gen_signatures.render(), "stale: run python -m pyir.op._gen_signatures"


_BUILDER_MODULES = op.BUILDER_MODULES


def test_every_builder_annotated_with_its_protocol() -> None:
    """issue 11 item 4: each public builder in nn.py / tensor.py / shape.py / image.py / dyn.py is
    declared with the generated protocol of its own operator, and every registered operator has a
    builder."""
    seen = set()
    for mod in _BUILDER_MODULES:
        for name in mod.__all__:
            b = getattr(mod, name)
            opname = b.op.name
            if getattr(b, "relay_signature", False):  # written by hand with Relay's signature: the
                # registered builder it calls is annotated with the protocol
                assert f"_sig.{_signature.protocol_name(opname)}" in mod.__annotations__.values(), name
                assert inspect.signature(b).return_annotation == "Call", name
                seen.add(opname)
                continue
            assert mod.__annotations__.get(name) == f"_sig.{_signature.protocol_name(opname)}", name
            seen.add(opname)
    assert seen == set(_gen_signatures.builtin_ops()) and len(seen) >= 88
    assert seen <= set(list_ops())
    assert op.add is tensor.add and op.nn.conv2d is nn.conv2d


def test_runtime_signatures() -> None:
    """issue 11 item 4: ``inspect.signature`` and ``help()`` show the real signature:
    inputs positional-only, attributes keyword-only with their defaults."""
    sig = inspect.signature(op.nn.conv2d)
    assert str(sig).startswith("(data: ExprLike, weight: ExprLike, /, *, strides: Ints = (1, 1), "
                               "padding: Ints = (0, 0, 0, 0),")
    assert str(sig).endswith("out_dtype: DType | None = None) -> Call")
    assert str(inspect.signature(op.concatenate)) == \
        "(data: 'Expr | Sequence[ExprLike]', axis: 'int' = 0) -> 'Call'"  # Relay's, written by hand
    assert str(inspect.signature(op.nn.relu)) == "(data: ExprLike, /) -> Call"
    assert "pool_size: Ints," in str(inspect.signature(op.nn.max_pool2d))  # required: no default
    builders = {getattr(m, n).op.name: getattr(m, n) for m in _BUILDER_MODULES for n in m.__all__}
    for name in _gen_signatures.builtin_ops():
        odef = get_op_def(name)
        params = inspect.signature(builders[name]).parameters
        if getattr(builders[name], "relay_signature", False):  # Relay's signature: every attribute a
            assert {s.name for s in odef.attrs} <= set(params), name  # parameter (Relay's defaults)
            continue
        kw = {p.name: p.default for p in params.values() if p.kind is inspect.Parameter.KEYWORD_ONLY}
        assert kw == {s.name: (inspect.Parameter.empty if s.default is REQUIRED else s.default)
                      for s in odef.attrs}
    assert op.nn.conv2d.__module__ == "pyir.op.nn" and "2-D convolution" in (op.nn.conv2d.__doc__ or "")
    assert "conv2d(data: ExprLike, weight: ExprLike, /, *" in pydoc_text(op.nn.conv2d)


def pydoc_text(obj: object) -> str:
    import pydoc

    return pydoc.render_doc(obj, renderer=pydoc.plaintext)


def test_editable_install_visible_to_mypy() -> None:
    """issue 11 item 4: the README's ``pip install -e .`` is a static path entry, not an
    import-hook finder that mypy (run from another directory) cannot see."""
    tomllib = pytest.importorskip("tomllib")
    with open(ROOT / "pyproject.toml", "rb") as f:
        conf = tomllib.load(f)
    package_dir = conf["tool"]["setuptools"]["package-dir"]
    assert package_dir == {"": "."}
    try:  # setuptools' own test for "a simple .pth is enough" (private: skipped if it moves)
        from setuptools.command.editable_wheel import _simple_layout
    except ImportError:
        return
    subpackages = [p.name for p in (ROOT / "pyir").iterdir() if (p / "__init__.py").exists()]
    packages = ["pyir", *(f"pyir.{name}" for name in subpackages)]
    assert _simple_layout(packages, package_dir, ROOT)

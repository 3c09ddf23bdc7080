"""Run the ONNX operator conformance suite (the node tests that the ``onnx`` wheel ships as
generators) through :func:`pyir.frontend.from_onnx` and :func:`pyir.evaluate`.

Each case is imported, evaluated on every data set, and compared with the expected
outputs (rtol 1e-3 / atol 1e-5 unless the case sets looser ones, exact dtype and shape).
A case's outcome is ``"pass"``, ``"import"`` (the importer refused it), ``"evaluate"``
(the interpreter raised), ``"wrong"`` (a result differs) or ``"skip"`` (not in scope:
outside the default ``ai.onnx`` domain, or with non-tensor inputs/outputs).

Command line: ``python -m pyir.frontend.onnx_conformance [--op TYPE] [--failures]``
prints the pass count over the in-scope cases and, with ``--failures``, the reason of
each failing case grouped by the first words of its message.
"""

from __future__ import annotations

import argparse
import collections
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PyIRError

__all__ = ["Outcome", "cases", "run_case", "run_all"]

RTOL = 1e-3
ATOL = 1e-5


@dataclass(frozen=True)
class Outcome:
    """What happened to one conformance case."""

    name: str
    op_type: str
    status: str  # "pass" | "import" | "evaluate" | "wrong" | "skip"
    reason: str = ""


def _in_scope(model: Any) -> str:
    """Empty when the case is a plain-tensor ai.onnx case, else why it is out of scope."""
    for imp in model.opset_import:
        if imp.domain not in ("", "ai.onnx"):
            return f"domain {imp.domain}"
    for vi in list(model.graph.input) + list(model.graph.output):
        if vi.type.WhichOneof("value") != "tensor_type":
            return f"{vi.type.WhichOneof('value')} value"
    return ""


_ALL: list[Any] = []


def cases(op_type: str | None = None) -> list[Any]:
    """The node test cases of the installed onnx wheel (optionally those with a node of one
    operator type).  onnx collects its cases once per process, with the filter of the first
    call, so this always collects all of them and filters itself."""
    from onnx.backend.test.case.node import collect_testcases

    if not _ALL:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with np.errstate(all="ignore"):
                _ALL.extend(collect_testcases(None))
    if op_type is None:
        return list(_ALL)
    return [c for c in _ALL if any(n.op_type == op_type for n in c.model.graph.node)]


def _op_type(case: Any) -> str:
    """The operator a case tests: its one node's type, or for a function-expanded case
    (``*_expanded*``) the name it tests, marked ``(expanded)``."""
    nodes = case.model.graph.node
    if "_expanded" in case.name:
        return case.name.removeprefix("test_").split("_expanded")[0] + " (expanded)"
    kinds = [n.op_type for n in nodes if n.op_type != "Constant"]
    return kinds[-1] if kinds else (nodes[0].op_type if nodes else "?")


def _compare(got: Any, want: np.ndarray, rtol: float, atol: float) -> str:
    got = np.asarray(got)
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "fc" or want.dtype.name.startswith(("float8", "bfloat")):
        g = got.astype(np.float64) if want.dtype.kind != "c" else got
        w = want.astype(np.float64) if want.dtype.kind != "c" else want
        if not np.allclose(g, w, rtol=rtol, atol=atol, equal_nan=True):
            return f"values differ (max abs error {np.nanmax(np.abs(g - w))})"
        return ""
    if want.dtype == object:
        return "" if got.tolist() == want.tolist() else "values differ"
    if not np.array_equal(got, want):
        return "values differ"
    return ""


def _array(v: Any) -> Any:
    """A data set value as numpy (the generators store some as ``TensorProto``)."""
    from onnx import TensorProto, numpy_helper

    return numpy_helper.to_array(v) if isinstance(v, TensorProto) else v


def run_case(case: Any) -> Outcome:
    """Import and evaluate one case; never raises for a pyir failure (it is the outcome)."""
    from ..analysis.interp import evaluate
    from .onnx import from_onnx

    op_type = _op_type(case)
    why = _in_scope(case.model)
    if why:
        return Outcome(case.name, op_type, "skip", why)
    try:
        mod = from_onnx(case.model)
    except PyIRError as e:
        return Outcome(case.name, op_type, "import", f"{type(e).__name__}: {e}")
    except Exception as e:
        return Outcome(case.name, op_type, "import", f"BUG {type(e).__name__}: {e}")
    rtol = max(RTOL, float(case.rtol))
    atol = max(ATOL, float(case.atol))
    for inputs, outputs in case.data_sets:
        inputs = [_array(v) for v in inputs]
        outputs = [_array(v) for v in outputs]
        try:
            with np.errstate(all="ignore"):
                got = evaluate(mod, *inputs)
        except PyIRError as e:
            return Outcome(case.name, op_type, "evaluate", f"{type(e).__name__}: {e}")
        except Exception as e:
            return Outcome(case.name, op_type, "evaluate", f"BUG {type(e).__name__}: {e}")
        results = list(got) if isinstance(got, tuple) else [got]
        if len(results) != len(outputs):
            return Outcome(case.name, op_type, "wrong",
                           f"{len(results)} output(s), expected {len(outputs)}")
        for i, (g, w) in enumerate(zip(results, outputs)):
            msg = _compare(g, np.asarray(w), rtol, atol)
            if msg:
                return Outcome(case.name, op_type, "wrong", f"output {i}: {msg}")
    return Outcome(case.name, op_type, "pass")


def run_all(op_type: str | None = None) -> Iterator[Outcome]:
    """:func:`run_case` over every case (of ``op_type``, if given)."""
    for case in cases(op_type):
        yield run_case(case)


def main(argv: list[str] | None = None) -> int:
    """The command line: pass count and, with ``--failures``, failures by reason."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--op", help="only this ONNX operator type")
    ap.add_argument("--failures", action="store_true", help="list failing cases by reason")
    ap.add_argument("--by-op", action="store_true", help="failing cases counted per op type")
    args = ap.parse_args(argv)
    outs = list(run_all(args.op))
    scope = [o for o in outs if o.status != "skip"]
    passed = sum(o.status == "pass" for o in scope)
    print(f"{passed} of {len(scope)} in-scope cases pass "
          f"({100 * passed / max(1, len(scope)):.1f}%); {len(outs) - len(scope)} out of scope")
    print(dict(collections.Counter(o.status for o in outs)))
    if args.by_op:
        per = collections.Counter(o.op_type for o in scope if o.status != "pass")
        for op, n in per.most_common():
            print(f"{n:5d}  {op}")
    if args.failures:
        groups: dict[str, list[Outcome]] = collections.defaultdict(list)
        for o in scope:
            if o.status != "pass":
                groups[f"{o.status}: {' '.join(o.reason.split()[:6])}"].append(o)
        for key, os_ in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            print(f"{len(os_):5d}  {key}  [{', '.join(o.name for o in os_[:4])}]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

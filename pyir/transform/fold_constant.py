"""``FoldConstant``: evaluate closed subgraphs at compile time.

A node is *closed* when no variable, global function, function, let or if
occurs beneath it; the per-node summary mask (``Node._mask``) answers this in
O(1).  The pass finds every maximal closed subgraph (a closed node with a
non-closed user, or a closed function body) that is more than a constant (or a
tuple of constants), evaluates them all at once with the reference interpreter
and replaces each by a ``Constant`` (a ``Tuple`` of constants for tuple
values).  A subgraph whose evaluation raises is left as it is.

Around that, the constructs a closed subgraph cannot contain are simplified as TVM's
FoldConstant does: an ``if`` whose condition is a constant becomes the branch it takes,
``(a, b, ...).i`` becomes the ``i``-th field (whatever the fields are: values are pure),
and a ``let`` whose value is (or folds to) a constant or a tuple of constants is dropped,
its variable replaced by that value.  ``on_device`` annotations do not get in the way (as in
TVM): a let of ``on_device(constant)`` is inlined with its annotation, and an operator call
on such annotated constants is folded (an annotation around the call stays).  Each of these
can make new closed subgraphs (``let %t = 1f; add(%t, %t)``), so the steps repeat until
nothing changes; each step is linear and a let chain is folded in one step (a let's value
is folded when it is bound), so the rounds do not grow with the depth of the program.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..analysis.interp import evaluate
from ..errors import EvaluationError, PyIRError
from ..ir.adt import ADT_BITS
from ..ir.expr import Call, Constant, Expr, Function, If, Let, Op, Tuple, TupleGetItem, const
from ..ir.lineage import derive, eliminate
from ..ir.module import Module
from ..ir.node import F_CONST, F_FUNC, F_GETITEM, F_GLOBAL, F_IF, F_LET, F_TUPLE, F_UNTYPED, F_VAR, Node
from ..ir.opdef import get_op_def, list_ops
from ..ir.traverse import post_order
from ..ir.types import TensorType, TupleType, Type
from ..op.annotation import ANNOTATION_OPS
from ..rewrite.functor import BindingRewriter, Rewriter, RoundLineage
from .base import FunctionPass

__all__ = ["FoldConstant"]

#: A node whose mask has none of these bits can be evaluated on its own (the annotation
#: operators ``on_device`` / ``device_copy`` count as open: they are kept, as TVM keeps them;
#: so do ADT values, matches and references: left as they are).
_OPEN = F_VAR | F_GLOBAL | F_FUNC | F_LET | F_IF | ADT_BITS
for _name in ANNOTATION_OPS:
    _OPEN |= get_op_def(_name).mask
#: A closed node whose mask has only these bits is already a constant (tuple).
_LITERAL = F_CONST | F_TUPLE


def _op_bits(names: Any) -> int:
    bits = 0
    for name in names:
        if name in _ALL_OPS:
            bits |= get_op_def(name).mask
    return bits


_ALL_OPS = frozenset(list_ops())
#: Operators never folded: their value is not a function of their inputs (as in TVM, which
#: leaves ``nn.dropout`` alone).
_RANDOM = _op_bits(("nn.dropout", "bernoulli"))
#: The quantized operators (``fold_qnn=False`` leaves them, as TVM's default does).
_QNN = _op_bits(n for n in _ALL_OPS if n.startswith("qnn."))
_SHAPE_OF = Op("shape_of")
_NDARRAY_SIZE = Op("ndarray_size")


def _num_elements(t: Type) -> int:
    """Number of scalar elements of a (possibly tuple) type, iteratively (2**62 for a symbolic shape)."""
    total = 0
    stack = [t]
    while stack:
        s = stack.pop()
        if isinstance(s, TensorType):
            size = s.size
            total += size if type(size) is int else 1 << 62  # symbolic: never small enough to fold
        elif isinstance(s, TupleType):
            stack.extend(s.fields)
    return total


def _fits(shape: tuple[int, ...], t: TensorType) -> bool:
    """Whether an evaluated ``shape`` is one of the shapes of the symbolic type ``t`` (its int
    dimensions equal; a symbol or ``?`` takes any value -- the folded constant is static)."""
    return len(shape) == t.ndim and all(type(d) is not int or d == s for s, d in zip(shape, t.shape))


def _to_expr(value: Any, ty: Type) -> Expr:
    """The constant expression of an evaluated ``value`` of type ``ty`` (iterative for nested tuples)."""
    # Build bottom-up: a post-order over (value, type) pairs.
    out: list[Expr] = []
    stack: list[tuple[Any, Type, bool]] = [(value, ty, False)]
    while stack:
        v, t, done = stack.pop()
        if isinstance(t, TupleType):
            if not isinstance(v, tuple) or len(v) != len(t.fields):
                raise EvaluationError(f"FoldConstant: expected a tuple of {len(t.fields)} values, got {v!r}")
            if done:
                n = len(t.fields)
                fields = out[len(out) - n:]
                del out[len(out) - n:]
                out.append(Tuple(fields))
            else:
                stack.append((v, t, True))
                for fv, ft in reversed(list(zip(v, t.fields))):
                    stack.append((fv, ft, False))
        elif isinstance(t, TensorType):
            arr = np.asarray(v)
            if arr.shape != t.shape and not _fits(arr.shape, t):
                raise EvaluationError(f"FoldConstant: evaluation gave shape {arr.shape}, "
                                      f"but the type says {t.shape}")
            if arr.dtype.name != t.dtype:
                arr = arr.astype(t.dtype)
            out.append(const(arr))
        else:
            raise EvaluationError(f"FoldConstant: cannot make a constant of type {t!r}")
    return out[0]


_FAILED = object()


def _evaluate_all(roots: list[Expr]) -> list[Any]:
    """Values of ``roots``, evaluated together (shared subgraphs once).

    Should evaluation fail (say, an out-of-range ``take`` in a branch that never
    runs), the roots are evaluated one by one and the failing ones are left
    unfolded (``_FAILED``): an error there is the program's, at run time.
    Floating-point warnings are silenced likewise.
    """
    with np.errstate(all="ignore"):
        try:
            if len(roots) == 1:
                return [evaluate(roots[0])]
            return list(evaluate(Tuple(roots)))
        except EvaluationError:
            pass
        out: list[Any] = []
        for r in roots:
            try:
                out.append(evaluate(r))
            except EvaluationError:
                out.append(_FAILED)
        return out


class _Replace(Rewriter):
    """Substitutes folded roots (pre-seeded in ``memo``), walking only non-closed nodes."""

    def __init__(self, replacements: dict[Node, Expr], expanded: set[Node], open_mask: int) -> None:
        super().__init__()
        self.open_mask = open_mask
        memo = self.memo
        for old, new in replacements.items():
            memo[old] = new
            # The new constants are leaves of the result: mark them as such so that
            # the automatic lineage of rebuilt parents does not claim them.
            memo.setdefault(new, new)
        self.expanded = expanded

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & self.open_mask) or node in self.expanded


def _is_literal(n: Node) -> bool:
    """A constant, or a tuple of constants (nested)."""
    return not (n._mask & ~_LITERAL) and type(n) in (Constant, Tuple)


_ON_DEVICE = Op("on_device")
_ON_DEVICE_BIT = get_op_def("on_device").mask


def _on_device_literal(n: Node) -> bool:
    """``on_device(literal)``: a constant placed on a device (TVM's ``IsSimpleConstant``)."""
    return type(n) is Call and n.op is _ON_DEVICE and _is_literal(n.args[0])


class _StripOnDevice(Rewriter):
    """An operator call whose arguments are all literals, some on a device
    (``add(on_device(c1), c2)``), calls the literals themselves (``add(c1, c2)``: closed, the
    next fold evaluates it); an ``on_device`` around the call stays, as TVM keeps it.  The
    annotations it drops are in ``dropped``."""

    def __init__(self, open_mask: int) -> None:
        super().__init__()
        self.dropped: list[Node] = []
        self.open_mask = open_mask

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & _ON_DEVICE_BIT)

    def visit_Call(self, node: Call) -> Expr:
        o = node.op
        if type(o) is not Op or o.name in ANNOTATION_OPS or not node.args:
            return node
        if not any(_on_device_literal(a) for a in node.args):
            return node
        if not all(_is_literal(a) or _on_device_literal(a) for a in node.args):
            return node
        new = Call(o, [a.args[0] if _on_device_literal(a) else a for a in node.args], node.attrs)  # type: ignore[attr-defined]
        if new._mask & self.open_mask:  # an operator never folded (random, qnn when asked)
            return node
        annotations = [a for a in node.args if _on_device_literal(a)]
        self.dropped.extend(annotations)
        return derive(new, node, *annotations)  # type: ignore[return-value]


_SELECT = F_IF | F_GETITEM | _SHAPE_OF._mask | _NDARRAY_SIZE._mask


class _Select(Rewriter):
    """``if`` with a constant condition -> the branch taken; ``(a, b).i`` -> the field;
    ``shape_of(x)`` and ``ndarray_size(x)`` of a static shape -> the constant.

    The parts a selection drops (the condition, the other branch, the other fields) are
    collected in ``dropped``: the pass eliminates those the result no longer has."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: list[Node] = []

    def should_visit(self, node: Node) -> bool:
        return bool(node._mask & _SELECT)

    def visit_Call(self, node: Call) -> Expr:
        if (node.op is not _SHAPE_OF and node.op is not _NDARRAY_SIZE) or node.args[0]._mask & F_UNTYPED:
            return node
        try:
            t = node.args[0].checked_type
        except PyIRError:
            return node
        if type(t) is not TensorType or not t.static:
            return node
        self.dropped.append(node.args[0])
        if node.op is _NDARRAY_SIZE:
            return const(np.asarray(math.prod(t.shape), dtype=node.attrs["dtype"]))
        return const(np.asarray(t.shape, dtype=node.attrs["dtype"]))

    def visit_If(self, node: If) -> Expr:
        c = node.cond
        if type(c) is not Constant or c.data.size != 1 or c.data.dtype.kind not in "biuf":
            return node
        taken, other = ((node.true_branch, node.false_branch) if bool(c.data.item())
                        else (node.false_branch, node.true_branch))
        self.dropped.extend((c, other))
        return taken

    def visit_TupleGetItem(self, node: TupleGetItem) -> Expr:
        tv = node.tuple_value
        if type(tv) is not Tuple or node.index >= len(tv.fields):
            return node
        self.dropped.append(tv)
        return tv.fields[node.index]


class _BindConstants(BindingRewriter):
    """Drops each ``let`` whose value is (or folds to) a literal; its variable becomes that literal."""

    def __init__(self, fold: FoldConstant) -> None:
        self.fold = fold
        self.dropped: list[Node] = []

    def bind(self, let: Let, value: Expr) -> Expr | None:
        if not (value._mask & self.fold._open_mask) and not _is_literal(value):
            value = self.fold._fold_closed(value)
        if _on_device_literal(value):  # the constant keeps its device where it goes (TVM's rule)
            return value
        if not _is_literal(value):
            return None
        self.dropped.append(let.value)
        return value


@dataclasses.dataclass(frozen=True)
class FoldConstant(FunctionPass):
    """Replace every maximal closed subgraph (op calls, tuples, tuple-get-items over
    constants) by the constant it evaluates to.

    ``fold_qnn`` (default True) folds the quantized operators (``qnn.*``) too; False leaves
    them, as TVM's FoldConstant does by default (it keeps them for its QNN lowering; pyir's
    interpreter computes them directly, so folding them is exact).  ``nn.dropout`` and
    ``bernoulli`` are never folded (random).

    ``max_elements`` (default None: no limit) skips folding a node whose result
    would hold more than that many elements (e.g. a broadcast of a scalar to a
    huge shape); its closed inputs are still folded.  Each new constant derives
    (lineage) from every node of the subgraph it replaces, so
    ``new_mod.find(old_node)`` returns it.

    Example (``tests/golden/FoldConstant/docstring.txt``, run by
    ``tests/test_golden.py``).

    Before::

        def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
          %0 = multiply(2.0f, 3.0f);
          add(%x, %0)
        }

    After::

        def @main(%x: Tensor[(1, 2, 3, 3), float32]) {
          add(%x, 6.0f)
        }
    """

    cache_scope = "function"  # PassCache: per function (see pyir.transform.cache)

    max_elements: int | None = None
    fold_qnn: bool = True

    @property
    def _open_mask(self) -> int:
        """The summary bits of a node that cannot be evaluated on its own."""
        return _OPEN | _RANDOM | (0 if self.fold_qnn else _QNN)

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """Fold ``func`` to a fixpoint (returns ``func`` itself if nothing folds)."""
        dropped: list[Node] = []
        rounds = RoundLineage()  # each step rewrites the previous one's output
        cur = func
        while True:
            folded = rounds.run(self._fold, cur)
            nxt = folded
            if nxt._mask & _SELECT:
                sel = _Select()
                nxt = rounds.run(sel.visit, nxt)
                dropped.extend(sel.dropped)
            if nxt._mask & _ON_DEVICE_BIT:
                strip = _StripOnDevice(self._open_mask)
                nxt = rounds.run(strip.visit, nxt)
                dropped.extend(strip.dropped)
            if nxt._mask & F_LET and self._binds_constant(nxt):
                lets = _BindConstants(self)
                nxt = rounds.run(lets.visit, nxt)
                dropped.extend(lets.dropped)
            if nxt is folded:
                break
            cur = nxt
        rounds.finish()
        if dropped:
            # what a selection or a dropped let left behind, and no other part of the result uses
            alive = set(post_order(folded))
            gone = [n for n in post_order(dropped, stop=alive.__contains__)  # type: ignore[arg-type]
                    if n not in alive]
            if gone:
                eliminate(*gone)
        return folded

    def _binds_constant(self, func: Function) -> bool:
        """Whether some ``let`` of ``func`` binds a closed value (a literal, once folded): a
        walk over the let-containing nodes only, much cheaper than the binding rewrite."""
        open_mask = self._open_mask
        stack: list[Node] = [func.body]
        seen: set[Node] = set()
        while stack:
            n = stack.pop()
            while type(n) is Let:  # down a let chain
                if n in seen:
                    break
                seen.add(n)
                value = n.value
                if not value._mask & open_mask or _on_device_literal(value):
                    return True
                if value._mask & F_LET:
                    stack.append(value)
                n = n.body
            if not n._mask & F_LET or n in seen:
                continue
            seen.add(n)
            stack.extend(c for c in n.children() if c._mask & F_LET)
        return False

    def _fold_closed(self, value: Expr) -> Expr:
        """The literal a closed ``value`` evaluates to (``value`` itself if it cannot be folded)."""
        if self.max_elements is not None and _num_elements(value.checked_type) > self.max_elements:
            return value
        v = _evaluate_all([value])[0]
        if v is _FAILED:
            return value
        new = _to_expr(v, value.checked_type)
        if new is not value:
            folded = post_order(value)
            for part in post_order(new):
                derive(part, *folded)
        return new

    def _fold(self, func: Function) -> Function:
        """Fold the closed subgraphs of ``func`` (returns ``func`` itself if there are none)."""
        expanded: set[Node] = set()
        seen: set[Node] = set()
        replacements: dict[Node, Expr] = {}
        open_mask = self._open_mask

        def closed(n: Node) -> bool:
            return not (n._mask & open_mask)

        candidates: list[Node] = [n for n in post_order(func, stop=closed) if closed(n)]
        while candidates:
            roots = self._roots(candidates, seen, expanded)
            candidates = []
            for r, v in zip(roots, _evaluate_all(roots)):
                if v is _FAILED:  # keep it, but fold its inputs
                    expanded.add(r)
                    candidates.extend(r.children())
                    continue
                new = _to_expr(v, r.checked_type)
                if new is not r:
                    replacements[r] = new
                    folded = post_order(r)
                    for part in post_order(new):  # a tuple result: its constants too
                        derive(part, *folded)
        if not replacements:
            return func
        return _Replace(replacements, expanded, open_mask).visit(func)

    def _roots(self, candidates: list[Node], seen: set[Node], expanded: set[Node]) -> list[Expr]:
        """The closed subgraphs worth folding among ``candidates``; nodes too large to fold
        (``max_elements``) go to ``expanded`` and their inputs are considered instead."""
        limit = self.max_elements
        roots: list[Expr] = []
        while candidates:
            n = candidates.pop()
            if n in seen:
                continue
            seen.add(n)
            if not (n._mask & ~_LITERAL):  # a constant or a tuple of constants
                continue
            if limit is not None and _num_elements(n.checked_type) > limit:  # type: ignore[attr-defined]
                expanded.add(n)
                candidates.extend(n.children())
                continue
            roots.append(n)  # type: ignore[arg-type]
        return roots

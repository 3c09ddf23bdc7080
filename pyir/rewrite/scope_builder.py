"""``ScopeBuilder``: Relay's builder of nested ``let`` / ``if`` expressions with ``with`` blocks.

>>> import pyir
>>> sb = ScopeBuilder()
>>> c = pyir.var("c", shape=(), dtype="bool")
>>> x = pyir.var("x", shape=(2,))
>>> t = sb.let("t", pyir.op.exp(x))
>>> with sb.if_scope(c):
...     sb.ret(pyir.op.add(t, t))
>>> with sb.else_scope():
...     sb.ret(t)
>>> print(pyir.Function([c, x], sb.get()).body)
let %t = exp(%x);
if (%c) {
  add(%t, %t)
} else {
  %t
}
<BLANKLINE>

As Relay's: ``let(var, value)`` takes a Var, a name, or ``(name, type)`` and returns the
variable; ``ret(value)`` sets the scope's result (once); ``if_scope(cond)`` must be followed
by ``else_scope()``; ``get()`` gives the expression (bindings nested around the result,
built by a loop: no recursion by the number of bindings).  Misuse raises a ``WellFormedError``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import WellFormedError
from ..ir.expr import Expr, If, Let, Var, as_expr, var
from ..ir.types import Type

__all__ = ["ScopeBuilder"]


class _PartialIf:
    __slots__ = ("cond", "true_branch")

    def __init__(self, cond: Expr, true_branch: Expr) -> None:
        self.cond = cond
        self.true_branch = true_branch


def _make_lets(bindings: list[tuple[Var, Expr]], ret: Any) -> Expr:
    if ret is None:
        raise WellFormedError("ScopeBuilder: ret() was not called in this scope")
    if isinstance(ret, _PartialIf):
        raise WellFormedError("ScopeBuilder: an if_scope without its else_scope")
    out: Expr = ret
    for v, value in reversed(bindings):
        out = Let(v, value, out)
    return out


class ScopeBuilder:
    """Build nested lets and ifs: ``let``, ``if_scope`` / ``else_scope``, ``ret``, ``get``."""

    def __init__(self) -> None:
        self._bindings: list[list[tuple[Var, Expr]]] = [[]]
        self._rets: list[Any] = [None]

    def let(self, v: Var | str | tuple[str, Type], value: Any) -> Var:
        """Bind ``value`` to a variable (a Var, a name, or ``(name, type)``) and return it."""
        if isinstance(v, (tuple, list)):
            if len(v) != 2:
                raise WellFormedError(f"ScopeBuilder.let: expected (name, type), got {v!r:.80}")
            v = var(v[0], v[1])
        elif isinstance(v, str):
            v = var(v)
        elif not isinstance(v, Var):
            raise WellFormedError(f"ScopeBuilder.let: expected a Var, a name or (name, type), got {v!r:.80}")
        self._bindings[-1].append((v, as_expr(value)))
        return v

    def ret(self, value: Any) -> None:
        """Set the result of the current scope (once)."""
        if self._rets[-1] is not None:
            raise WellFormedError("ScopeBuilder: ret() called twice in one scope")
        self._rets[-1] = as_expr(value)

    @contextmanager
    def if_scope(self, cond: Any) -> Iterator[None]:
        """The true branch; an ``else_scope`` must follow."""
        cond = as_expr(cond)
        if self._rets[-1] is not None:
            raise WellFormedError("ScopeBuilder: a result was returned before this if_scope")
        self._bindings.append([])
        self._rets.append(None)
        yield
        branch = _make_lets(self._bindings.pop(), self._rets.pop())
        self._rets[-1] = _PartialIf(cond, branch)

    @contextmanager
    def else_scope(self) -> Iterator[None]:
        """The false branch of the ``if_scope`` just closed."""
        partial = self._rets[-1]
        if not isinstance(partial, _PartialIf):
            raise WellFormedError("ScopeBuilder: else_scope must follow an if_scope")
        self._bindings.append([])
        self._rets.append(None)
        yield
        branch = _make_lets(self._bindings.pop(), self._rets.pop())
        self._rets[-1] = If(partial.cond, partial.true_branch, branch)

    def get(self) -> Expr:
        """The expression built: the bindings of the outer scope around its result."""
        if len(self._bindings) != 1:
            raise WellFormedError("ScopeBuilder.get() inside an open scope")
        return _make_lets(self._bindings[0], self._rets[0])

"""Lineage: which node came from which, across passes, keyed by origin IDs.

Semantics
---------
* Every pass run that changes a module appends one frozen :class:`PassRecord`
  to the module's persistent history.  A record holds *derivation edges*
  ``new id <- old ids`` and the ids the pass *eliminated*.  Records are never
  stored on nodes, and earlier modules keep their own history unchanged.
* The rewriting machinery (mutators, ``rewrite``, pattern rules, every standard
  pass) records edges automatically: when a visit returns a node different from
  the one visited, the new node derives from the old one, and so does every node
  freshly created under it.  Passes add edges by hand for merges (fusion: the
  fused call derives from every node of its group), splits (inlining a function
  called twice: both copies derive from the callee's nodes) and eliminations,
  with :func:`derive` and :func:`eliminate`.
* Queries on a module (``mod.find``, ``mod.origins``, ``mod.history``) walk the
  records; they cost O(answer + number of passes) after a one-time id index of
  the module.
* Hash-consing means structurally equal expressions are one expression: two
  ``const(0.0)`` are the same node, have the same id and share their lineage.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .errors import LineageError
from .node import Node, gc_paused

__all__ = ["PassRecord", "Recorder", "derive", "eliminate", "current_recorder", "recording",
           "Step", "set_recording_enabled"]

_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("pyir_recorder", default=None)
_enabled = [True]


def set_recording_enabled(flag: bool) -> bool:
    """Switch automatic lineage recording on or off (for measuring its cost); returns the old value."""
    old = _enabled[0]
    _enabled[0] = bool(flag)
    return old


class Recorder:
    """Collects the derivation edges of one pass run."""

    __slots__ = ("edges", "removed", "sources")

    def __init__(self) -> None:
        self.edges: list[tuple[bytes, tuple[bytes, ...]]] = []
        self.removed: list[bytes] = []
        self.sources: dict[bytes, Any] = {}

    def derive(self, new: Node, olds: Iterable[Node]) -> None:
        """Record that ``new`` derives from each of ``olds``."""
        ids = tuple(o.id for o in olds if o is not new)
        if ids:
            self.edges.append((new.id, ids))

    def eliminate(self, olds: Iterable[Node]) -> None:
        """Record that ``olds`` were removed by this pass."""
        self.removed.extend(o.id for o in olds)

    def __bool__(self) -> bool:
        return bool(self.edges or self.removed or self.sources)


def current_recorder() -> Recorder | None:
    """The recorder of the running pass, or None outside passes (or when disabled)."""
    return _current.get() if _enabled[0] else None


class recording:
    """Context manager that installs a fresh :class:`Recorder` (used by passes)."""

    def __init__(self) -> None:
        self.recorder = Recorder()
        self._token: Any = None

    def __enter__(self) -> Recorder:
        self._token = _current.set(self.recorder)
        return self.recorder

    def __exit__(self, *exc: Any) -> None:
        _current.reset(self._token)


def derive(new: Node, *olds: Node) -> Node:
    """Inside a pass: record that ``new`` derives from ``olds``; returns ``new``.

    Use it for many-to-one merges (``derive(fused_call, *group)``) and
    one-to-many splits (call it once per copy).  Outside a pass it does nothing.
    """
    rec = current_recorder()
    if rec is not None:
        rec.derive(new, olds)
    return new


def eliminate(*olds: Node) -> None:
    """Inside a pass: record that ``olds`` were eliminated (e.g. dead code)."""
    rec = current_recorder()
    if rec is not None:
        rec.eliminate(olds)


@dataclass(frozen=True, eq=False)
class PassRecord:
    """One pass run: its name, options, derivation edges and eliminated ids.

    ``sources`` maps ids to external origins (e.g. ONNX node names) for
    records made by frontends.
    """

    name: str
    options: str
    edges: tuple[tuple[bytes, tuple[bytes, ...]], ...]
    removed: frozenset[bytes]
    sources: Any = None
    seconds: float = 0.0
    _index: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def back(self) -> dict[bytes, tuple[bytes, ...]]:
        """new id -> old ids (built on first use)."""
        b = self._index.get("back")
        if b is None:
            b = self._index["back"] = self._build_back()
        return b  # type: ignore[no-any-return]

    def _build_back(self) -> dict[bytes, tuple[bytes, ...]]:
        with gc_paused():
            acc: dict[bytes, list[bytes]] = {}
            for new, olds in self.edges:
                lst = acc.get(new)
                if lst is None:
                    acc[new] = list(olds)
                else:
                    lst.extend(olds)
            return {k: tuple(dict.fromkeys(v)) if len(v) > 1 else tuple(v) for k, v in acc.items()}

    @property
    def fwd(self) -> dict[bytes, list[bytes]]:
        """old id -> new ids (built on first use)."""
        f = self._index.get("fwd")
        if f is None:
            f = self._index["fwd"] = self._build_fwd()
        return f  # type: ignore[no-any-return]

    def _build_fwd(self) -> dict[bytes, list[bytes]]:
        with gc_paused():
            acc: dict[bytes, list[bytes]] = {}
            for new, olds in self.edges:
                for o in olds:
                    lst = acc.get(o)
                    if lst is None:
                        acc[o] = [new]
                    else:
                        lst.append(new)
            return {k: list(dict.fromkeys(v)) if len(v) > 1 else v for k, v in acc.items()}

    def __len__(self) -> int:
        return len(self.edges)

    def __repr__(self) -> str:
        return (f"PassRecord({self.name!r}, {len(self.edges)} edges, {len(self.removed)} removed, "
                f"{self.seconds * 1e3:.1f} ms)")


@dataclass(frozen=True)
class Step:
    """One step of ``history``: ``pass_name`` turned ``before`` into ``after``
    (ids; ``after`` is None when the pass eliminated ``before``)."""

    pass_name: str
    before: bytes
    after: bytes | None

    def __repr__(self) -> str:
        after = self.after.hex()[:8] if self.after is not None else "eliminated"
        return f"Step({self.pass_name}: {self.before.hex()[:8]} -> {after})"


# -- queries (used by Module) ------------------------------------------------------------


def _id_of(x: Any) -> bytes:
    if isinstance(x, Node):
        return x.id
    if isinstance(x, bytes) and len(x) == 16:
        return x
    if isinstance(x, str) and len(x) == 32:
        try:
            return bytes.fromhex(x)
        except ValueError:
            raise LineageError(f"{x!r} is not a 32-digit hex id") from None
    raise LineageError(f"expected a node or a 16-byte id, got {x!r}")


def module_index(mod: Any) -> dict[bytes, Node]:
    """id -> node for every expression node of ``mod`` (built once per module)."""
    idx = mod._cache.get("id_index")
    if idx is None:
        from .traverse import post_order

        with gc_paused():
            idx = {n.id: n for n in post_order(list(mod.functions().values()))}
        mod._cache["id_index"] = idx
    return idx  # type: ignore[no-any-return]


def find(mod: Any, x: Any) -> list[Node]:
    """Nodes of ``mod`` that are, or were derived from, ``x`` (expression or id)."""
    start = _id_of(x)
    cur = {start}
    for rec in mod.pass_records:
        fwd = rec.fwd
        removed = rec.removed
        # forward closure within the record (a pass may rewrite a node it created)
        new: set[bytes] = set()
        stack = [i for i in cur if i in fwd]
        while stack:
            for j in fwd[stack.pop()]:
                if j not in new:
                    new.add(j)
                    if j in fwd:
                        stack.append(j)
        if removed:
            cur = {i for i in cur if i not in removed}
        cur |= new
    idx = module_index(mod)
    out = [idx[i] for i in cur if i in idx]
    out.sort(key=lambda n: n.id)
    return out


def _roots_within(back: dict[bytes, tuple[bytes, ...]], ids: set[bytes],
                  steps: list[Step] | None = None, name: str = "") -> set[bytes]:
    """The ids that ``ids`` derive from within one record, following chains of edges
    (a pass may rewrite a node it created); each edge crossed is appended to ``steps``.

    A chain that comes back to a node on it (hash-consing rebuilt a node the chain
    started from) ends at that node.
    """
    roots: set[bytes] = set()
    done: set[bytes] = set()
    on_path: set[bytes] = set()
    stack: list[tuple[bytes, bool]] = [(i, False) for i in sorted(ids, reverse=True)]
    while stack:
        i, leaving = stack.pop()
        if leaving:
            on_path.discard(i)
            done.add(i)
            continue
        if i in done or i in on_path:
            continue
        olds = back.get(i)
        if olds is None:
            roots.add(i)
            done.add(i)
            continue
        on_path.add(i)
        stack.append((i, True))
        for o in olds:
            if steps is not None:
                steps.append(Step(name, o, i))
            if o in on_path:
                roots.add(o)
            elif o not in done:
                stack.append((o, False))
    return roots


def origins(mod: Any, x: Any, since: int = 0) -> set[bytes]:
    """Root origin ids of ``x``: the ids, before the first pass (or before record
    number ``since``), it derives from."""
    records = mod.pass_records
    if isinstance(since, bool) or not isinstance(since, int) or not 0 <= since <= len(records):
        raise LineageError(f"since must be a pass record number in [0, {len(records)}], got {since!r}")
    cur = {_id_of(x)}
    for rec in reversed(records[since:] if since else records):
        back = rec.back
        if not back:
            continue
        cur = _roots_within(back, cur)
    return cur


def history(mod: Any, x: Any) -> list[Step]:
    """Steps (pass, before, after) that led to ``x``; for an expression of an
    earlier module, the steps that carried it forward (or eliminated it).

    Within one pass, chains of edges are followed (a pass may rewrite a node it
    created), as ``find`` and ``origins`` do.
    """
    target = _id_of(x)
    recs = list(mod.pass_records)
    # Backward: how was target produced?
    back_steps: list[Step] = []
    cur = {target}
    for rec in reversed(recs):
        back = rec.back
        if not back:
            continue
        rec_steps: list[Step] = []
        roots = _roots_within(back, cur, rec_steps, rec.name)
        back_steps.extend(reversed(rec_steps))
        cur = roots
    back_steps.reverse()
    if back_steps:
        return back_steps
    # Forward: target is an old expression; follow it.
    steps: list[Step] = []
    cur = {target}
    for rec in recs:
        fwd = rec.fwd
        removed = rec.removed
        reached: set[bytes] = set(cur)
        stack = sorted(cur, reverse=True)
        while stack:
            i = stack.pop()
            for n in fwd.get(i, ()):
                steps.append(Step(rec.name, i, n))
                if n not in reached:
                    reached.add(n)
                    stack.append(n)
        for i in sorted(cur):
            if i in removed:
                steps.append(Step(rec.name, i, None))
                reached.discard(i)
        cur = reached
    return steps

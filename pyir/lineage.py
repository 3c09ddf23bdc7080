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
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from .errors import ImmutableError, LineageError
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


_ID_LEN = 16
#: How deep lineage source values (lists / dicts) may nest.
MAX_SOURCE_DEPTH = 64


def _check_id(x: Any, what: str) -> bytes:
    if type(x) is not bytes or len(x) != _ID_LEN:
        raise LineageError(f"pass record {what}: expected a 16-byte node id, got {x!r:.80}")
    return x


def _check_text(x: Any, what: str) -> str:
    if type(x) is not str:
        raise LineageError(f"pass record {what} must be a str, got {x!r:.80}")
    try:
        x.encode("utf-8")
    except UnicodeEncodeError:
        raise LineageError(f"pass record {what} holds a lone surrogate: {x!r:.80}") from None
    return x


def freeze_source_value(v: Any, where: str = "lineage source") -> Any:
    """The immutable form of a JSON-able lineage source value (iterative, any depth).

    ``None``, bools, ints, finite floats and (UTF-8 encodable) strings are kept;
    lists and tuples become tuples, dicts with str keys read-only mappings, nested
    at most ``MAX_SOURCE_DEPTH`` deep.  Anything else (NaN, infinities, sets,
    objects ...) raises LineageError.
    """
    out: list[Any] = []
    # (value, container to fill, key in it, depth); containers are frozen in a second phase
    stack: list[tuple[Any, Any, Any, int]] = [(v, out, None, 0)]
    finish: list[tuple[Any, Any, Any]] = []
    while stack:
        x, dest, key, depth = stack.pop()
        t = type(x)
        if x is None or t is bool or t is int:
            y: Any = x
        elif t is float:
            if x != x or x in (_INF, -_INF):
                raise LineageError(f"{where}: non-finite number {x!r} (not JSON)")
            y = x
        elif t is str:
            y = _check_text(x, where)
        elif depth >= MAX_SOURCE_DEPTH and (t is tuple or t is list or t is dict or t is MappingProxyType):
            raise LineageError(f"{where}: nested more than {MAX_SOURCE_DEPTH} deep")
        elif t is tuple or t is list:
            y = [None] * len(x)
            finish.append((dest, y, key))
            for i in range(len(x) - 1, -1, -1):
                stack.append((x[i], y, i, depth + 1))
            continue
        elif t is dict or t is MappingProxyType:
            keys = list(x)
            for k in keys:
                if type(k) is not str:
                    raise LineageError(f"{where}: object keys must be str, got {k!r:.80}")
                _check_text(k, where)
            y = dict.fromkeys(keys)
            finish.append((dest, y, key))
            for k in reversed(keys):
                stack.append((x[k], y, k, depth + 1))
            continue
        else:
            raise LineageError(f"{where}: {t.__name__} values are not JSON-able ({x!r:.80})")
        if key is None:
            dest.append(y)
        else:
            dest[key] = y
    # containers: innermost were registered last, so finish in reverse order
    for dest, y, key in reversed(finish):
        frozen: Any = tuple(y) if type(y) is list else MappingProxyType(y)
        if key is None:
            dest.append(frozen)
        else:
            dest[key] = frozen
    return out[0]


def thaw_source_value(v: Any) -> Any:
    """The plain JSON form (lists, dicts) of a frozen source value, for ``json.dumps`` (iterative)."""
    t = type(v)
    if t is not tuple and t is not MappingProxyType:
        return v
    root: list[Any] = []
    stack: list[tuple[Any, Any, Any]] = [(v, root, None)]
    while stack:
        x, dest, key = stack.pop()
        t = type(x)
        if t is tuple:
            y: Any = [None] * len(x)
            for i, e in enumerate(x):
                stack.append((e, y, i))
        elif t is MappingProxyType:
            y = dict.fromkeys(x)
            for k, e in x.items():
                stack.append((e, y, k))
        else:
            y = x
        if key is None:
            dest.append(y)
        else:
            dest[key] = y
    return root[0]


_INF = float("inf")


class PassRecord:
    """One pass run: its name, options, derivation edges and eliminated ids.

    ``sources`` maps ids to external origins (e.g. ONNX node names) for
    records made by frontends: a read-only mapping of JSON-able values, frozen
    (lists become tuples, dicts read-only mappings).  ``seconds`` is a finite,
    non-negative float.  Records are immutable: fields are read-only, every
    container is immutable, and invalid fields raise :class:`LineageError`.
    Equality is identity.
    """

    __slots__ = ("name", "options", "edges", "removed", "sources", "seconds", "_back", "_fwd")
    name: str
    options: str
    edges: tuple[tuple[bytes, tuple[bytes, ...]], ...]
    removed: frozenset[bytes]
    sources: Mapping[bytes, Any] | None
    seconds: float
    _back: Mapping[bytes, tuple[bytes, ...]]
    _fwd: Mapping[bytes, tuple[bytes, ...]]

    def __init__(self, name: str, options: str, edges: Iterable[tuple[bytes, Iterable[bytes]]],
                 removed: Iterable[bytes], sources: Mapping[bytes, Any] | None = None,
                 seconds: float = 0.0) -> None:
        _check_text(name, "name")
        _check_text(options, "options")
        try:
            es: tuple[Any, ...] = edges if type(edges) is tuple else tuple(edges)
            rs = removed if type(removed) is frozenset else frozenset(removed)
        except TypeError as err:
            raise LineageError(f"pass record {name!r}: edges and removed must be iterables: {err}") from None
        fixed: list[Any] | None = None
        for i, edge in enumerate(es):
            if type(edge) is not tuple or len(edge) != 2 or type(edge[1]) is not tuple:
                if fixed is None:
                    fixed = list(es)
                try:
                    new, olds = edge
                    edge = fixed[i] = (new, tuple(olds))
                except (TypeError, ValueError):
                    raise LineageError(f"pass record {name!r}: edges are (new id, old ids) pairs, "
                                       f"got {edge!r:.80}") from None
            new, olds = edge
            if type(new) is not bytes or len(new) != _ID_LEN:
                _check_id(new, "edge")
            for o in olds:
                if type(o) is not bytes or len(o) != _ID_LEN:
                    _check_id(o, "edge")
        if fixed is not None:
            es = tuple(fixed)
        for r in rs:
            if type(r) is not bytes or len(r) != _ID_LEN:
                _check_id(r, "removed id")
        src: Mapping[bytes, Any] | None = None
        if sources is not None:
            try:
                items = list(sources.items())
            except (AttributeError, TypeError):
                raise LineageError(f"pass record {name!r}: sources must be a mapping, got "
                                   f"{type(sources).__name__}") from None
            table: dict[bytes, Any] = {}
            for k, v in items:
                table[_check_id(k, "sources key")] = freeze_source_value(v, f"pass {name!r}: lineage source")
            src = MappingProxyType(table)
        if isinstance(seconds, bool) or not isinstance(seconds, numbers.Real):
            raise LineageError(f"pass record {name!r}: seconds must be a number, got {seconds!r:.80}")
        secs = float(seconds)
        if not 0.0 <= secs < _INF:
            raise LineageError(f"pass record {name!r}: seconds must be finite and non-negative, got {secs!r}")
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "options", options)
        _set(self, "edges", es)
        _set(self, "removed", rs)
        _set(self, "sources", src)
        _set(self, "seconds", secs)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"pass records are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"pass records are immutable (cannot delete {name!r})")

    def __reduce__(self) -> Any:
        src = None if self.sources is None else {k: thaw_source_value(v) for k, v in self.sources.items()}
        return (PassRecord, (self.name, self.options, self.edges, self.removed, src, self.seconds))

    def __copy__(self) -> PassRecord:
        return self

    def __deepcopy__(self, memo: Any) -> PassRecord:
        return self

    @property
    def back(self) -> Mapping[bytes, tuple[bytes, ...]]:
        """new id -> old ids (a read-only mapping, built on first use)."""
        try:
            return self._back
        except AttributeError:
            b = MappingProxyType(self._build_back())
            object.__setattr__(self, "_back", b)
            return b

    def _build_back(self) -> dict[bytes, tuple[bytes, ...]]:
        # An id with one edge maps to that edge's own tuple (no copy); ids with several
        # edges collect them in a list, deduplicated into a tuple at the end.
        with gc_paused():
            acc: dict[bytes, Any] = {}
            multi: list[bytes] = []
            for new, olds in self.edges:
                cur = acc.get(new)
                if cur is None:
                    acc[new] = olds
                    if len(olds) > 1:  # may repeat an id
                        multi.append(new)
                elif type(cur) is list:
                    cur.extend(olds)
                else:
                    acc[new] = [*cur, *olds]
                    multi.append(new)
            for k in multi:
                acc[k] = tuple(dict.fromkeys(acc[k]))
            return acc

    @property
    def fwd(self) -> Mapping[bytes, tuple[bytes, ...]]:
        """old id -> new ids (a read-only mapping, built on first use)."""
        try:
            return self._fwd
        except AttributeError:
            f = MappingProxyType(self._build_fwd())
            object.__setattr__(self, "_fwd", f)
            return f

    def _build_fwd(self) -> dict[bytes, tuple[bytes, ...]]:
        # As _build_back: a 1-tuple per id with one edge, a list only for ids with several.
        with gc_paused():
            acc: dict[bytes, Any] = {}
            multi: list[bytes] = []
            for new, olds in self.edges:
                for o in olds:
                    cur = acc.get(o)
                    if cur is None:
                        acc[o] = (new,)
                    elif type(cur) is list:
                        cur.append(new)
                    else:
                        acc[o] = [*cur, new]
                        multi.append(o)
            for k in multi:
                acc[k] = tuple(dict.fromkeys(acc[k]))
            return acc

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

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
* Three kinds of edges.  An ordinary edge ``new <- olds`` is a union (OR):
  ``origins(new)`` includes the origins of every old.  A *shared* edge
  (:func:`derive_shared`) says that ``new`` stands for several sites and is each
  old at one of them (the body of a primitive function FuseOps shares between
  structurally identical groups derives from the members it copies at every
  site).  An *instance* edge (:func:`derive_at`, an AND edge) says that ``new``
  is the node ``body`` instantiated at the call ``site`` (DefuseOps and Inline
  expanding a function): ``origins(new) = origins(body) & origins(site)``
  for the part of ``body``'s origins that came through shared edges (it stood
  for several sites, the site picks its own), plus the rest of ``body``'s
  origins (an ordinary function's body node stands for itself at every site).
  ``find(old)`` reaches ``new`` when it reaches ``body`` through no shared edge,
  or reaches both ``body`` and ``site``.  So after FuseOps + DefuseOps,
  ``find`` gives back exactly one node per old node and ``origins`` of a
  defused node is exactly its old node, although every group of the same
  structure shares one function.
* Typed edges are stored as ordinary edges whose first old id is a reserved
  mark (:data:`INSTANCE_EDGE`: ``(new, (INSTANCE_EDGE, body, site))``;
  :data:`SHARED_EDGE`: ``(new, (SHARED_EDGE, old, ...))``), so the binary and
  JSON formats carry them unchanged.  The marks are XXH3-128 digests of strings
  no node hashes, so they never collide with a node id; a mark anywhere else
  (a new id, a later old id, a removed id, an instance edge without exactly a
  body and a site) is a :class:`~pyir.errors.LineageError`.  ``PassRecord.back``
  and ``fwd`` show the union view (marks left out).
* Hash-consing means structurally equal expressions are one expression: two
  ``const(0.0)`` are the same node, have the same id and share their lineage.
"""

from __future__ import annotations

import contextvars
import numbers
import operator
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from types import MappingProxyType
from typing import Any, cast, overload

import numpy as np

from ..errors import ImmutableError, LineageError
from .node import Node, gc_paused

__all__ = ["PassRecord", "Recorder", "EdgeBuffer", "Edges", "RuleLog", "derive", "derive_at", "derive_shared",
           "eliminate", "current_recorder", "recording", "Step", "set_recording_enabled", "INSTANCE_EDGE",
           "SHARED_EDGE", "rule_log"]

_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("pyir_recorder", default=None)
_enabled = [True]


def set_recording_enabled(flag: bool) -> bool:
    """Switch automatic lineage recording on or off (for measuring its cost); returns the old value."""
    old = _enabled[0]
    _enabled[0] = bool(flag)
    return old


#: First old id of an instance (AND) edge ``(new, (INSTANCE_EDGE, body, site))``: ``new`` is
#: ``body`` instantiated at the call ``site`` (see the module docstring).  A reserved id: the
#: XXH3-128 digest of b"pyir.lineage: instance (AND) edge", never a node's id.
INSTANCE_EDGE = bytes.fromhex("88cbaff1cc74bb4ce5511d8f9a9274d5")
#: First old id of a shared edge ``(new, (SHARED_EDGE, old, ...))``: ``new`` stands for several
#: sites and is each ``old`` at one of them.  The digest of b"pyir.lineage: shared edge".
SHARED_EDGE = bytes.fromhex("5c97d61ad90ffa89717d6102dab27e59")
_MARKS = frozenset((INSTANCE_EDGE, SHARED_EDGE))


def _check_marks(new: bytes, olds: tuple[bytes, ...]) -> bool:
    """Check where the reserved marks of ``new <- olds`` are (ids already checked); True for a typed edge."""
    if new in _MARKS:
        raise LineageError("a reserved edge mark cannot be an edge's new id")
    typed = bool(olds) and olds[0] in _MARKS
    for o in olds[1:] if typed else olds:
        if o in _MARKS:
            raise LineageError("a reserved edge mark can only be an edge's first old id")
    if typed:
        if olds[0] == INSTANCE_EDGE and len(olds) != 3:
            raise LineageError(f"an instance edge has a body and a site, got {len(olds) - 1} id(s)")
        if len(olds) < 2:
            raise LineageError("a shared edge needs at least one old id")
    return typed


class EdgeBuffer:
    """The edges a :class:`Recorder` accumulates, stored compactly.

    ``append((new_id, old_ids))`` and ``extend(pairs)`` take what a list of pairs
    would; the ids go into two byte arrays (16 bytes per id) and a count per edge
    (kept only once some edge has other than one old id), about 32 bytes per edge
    instead of a tuple per edge.  Iterating yields ``(new, olds)`` pairs.
    :meth:`add_at` and :meth:`add_shared` add the typed edges (their olds start
    with :data:`INSTANCE_EDGE` / :data:`SHARED_EDGE`).
    """

    __slots__ = ("news", "olds", "counts", "n", "typed", "_done")

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.news = bytearray()
        self.olds = bytearray()
        self.counts: array[int] | None = None  # None while every edge has exactly one old id
        self.n = 0
        self.typed = False  # some edge is an instance or shared edge
        self._done = False  # a finished pass's buffer: the PassRecord made from it takes its storage

    def append(self, edge: tuple[bytes, Iterable[bytes]]) -> None:
        """Add one ``(new id, old ids)`` edge (a typed one when the first old id is a mark)."""
        try:
            new, olds = edge
        except (TypeError, ValueError):
            raise LineageError(f"edges are (new id, old ids) pairs, got {edge!r:.80}") from None
        if type(new) is not bytes or len(new) != _ID_LEN:
            _check_id(new, "edge")
        if type(olds) is not tuple:
            try:
                olds = tuple(olds)
            except TypeError:
                raise LineageError(f"edges are (new id, old ids) pairs, got {edge!r:.80}") from None
        for o in olds:
            if type(o) is not bytes or len(o) != _ID_LEN:
                _check_id(o, "edge")
        if (new in _MARKS or not _MARKS.isdisjoint(olds)) and _check_marks(new, olds):
            self.typed = True
        self.news += new
        k = len(olds)
        self.olds += olds[0] if k == 1 else b"".join(olds)
        counts = self.counts
        if counts is None:
            if k == 1:
                self.n += 1
                return
            counts = self.counts = array("I", [1]) * self.n
        counts.append(k)
        self.n += 1

    def add(self, new: bytes, old: bytes) -> None:
        """Add one edge ``new <- old`` (ids of live nodes, unchecked): the fast path for passes."""
        self.news += new
        self.olds += old
        if self.counts is not None:
            self.counts.append(1)
        self.n += 1

    def add_at(self, new: bytes, body: bytes, site: bytes) -> None:
        """Add an instance (AND) edge: ``new`` is ``body`` instantiated at the call ``site``
        (ids of live nodes, unchecked)."""
        self.news += new
        self.olds += INSTANCE_EDGE
        self.olds += body
        self.olds += site
        counts = self.counts
        if counts is None:
            counts = self.counts = array("I", [1]) * self.n
        counts.append(3)
        self.n += 1
        self.typed = True

    def add_shared(self, new: bytes, olds: Sequence[bytes]) -> None:
        """Add a shared edge: ``new`` stands for several sites and is each of ``olds`` at one of
        them (ids of live nodes, unchecked; at least one)."""
        self.add_joined(new, olds[0] if len(olds) == 1 else b"".join(olds), shared=True)

    def add_joined(self, new: bytes, olds: bytes | bytearray, shared: bool = False) -> None:
        """Add one edge ``new <- olds`` given as the concatenation of the old ids (at least one;
        a shared edge if ``shared``; ids of live nodes, unchecked)."""
        k = len(olds) // _ID_LEN
        self.news += new
        if shared:
            self.olds += SHARED_EDGE
            k += 1
            self.typed = True
        self.olds += olds
        counts = self.counts
        if counts is None:
            if k == 1:
                self.n += 1
                return
            counts = self.counts = array("I", [1]) * self.n
        counts.append(k)
        self.n += 1

    def mark(self) -> tuple[int, int, int]:
        """A position to :meth:`rollback` to (drop the edges added since)."""
        return len(self.news), len(self.olds), self.n

    def rollback(self, mark: tuple[int, int, int]) -> None:
        """Drop every edge added since ``mark`` (from :meth:`mark`)."""
        news, olds, n = mark
        del self.news[news:]
        del self.olds[olds:]
        if self.counts is not None:
            del self.counts[n:]
        self.n = n

    def add_one_old(self, news: list[bytes], old: bytes) -> None:
        """Add an edge ``new <- old`` for each id of ``news`` (ids of live nodes, unchecked)."""
        k = len(news)
        self.news += b"".join(news)
        self.olds += old * k
        if self.counts is not None:
            self.counts.extend(array("I", [1]) * k)
        self.n += k

    def extend(self, edges: Iterable[tuple[bytes, Iterable[bytes]]]) -> None:
        """Add every edge of ``edges`` (pairs, or another EdgeBuffer / a record's ``edges``)."""
        if type(edges) is EdgeBuffer or type(edges) is Edges:
            self._extend_compact(edges._parts())
            if edges._is_typed():
                self.typed = True
            return
        try:
            it = iter(edges)
        except TypeError:
            raise LineageError(f"edges must be an iterable of pairs, got {edges!r:.80}") from None
        append = self.append
        for e in it:
            append(e)

    def _is_typed(self) -> bool:
        return self.typed

    def _extend_compact(self, parts: tuple[bytes | bytearray, bytes | bytearray, Any, int]) -> None:
        news, olds, counts, n = parts
        if not n:
            return
        if counts is not None and self.counts is None:
            self.counts = array("I", [1]) * self.n
        if self.counts is not None:
            self.counts.extend(array("I", [1]) * n if counts is None else _as_counts(counts))
        self.news += news
        self.olds += olds
        self.n += n

    def _parts(self) -> tuple[bytearray, bytearray, Any, int]:
        return self.news, self.olds, self.counts, self.n

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[bytes, tuple[bytes, ...]]]:
        return _iter_edges(bytes(self.news), bytes(self.olds), self.counts)

    def __repr__(self) -> str:
        return f"<EdgeBuffer of {self.n} edges>"


def _as_counts(c: Any) -> array[int]:
    if type(c) is array:
        return c
    a = array("I")
    a.frombytes(c)
    return a


def _iter_edges(news: bytes, olds: bytes, counts: Any) -> Iterator[tuple[bytes, tuple[bytes, ...]]]:
    L = _ID_LEN
    if counts is None:
        for i in range(0, len(news), L):
            yield news[i:i + L], (olds[i:i + L],)
        return
    p = 0
    for i, k in enumerate(_as_counts(counts) if type(counts) is not array else counts):
        q = p + k * L
        yield news[i * L:i * L + L], tuple([olds[j:j + L] for j in range(p, q, L)])
        p = q


def _aligned_hits(data: bytes, mark: bytes) -> list[int]:
    """Indices (in ids) of the 16-byte-aligned occurrences of ``mark`` in ``data``."""
    out = []
    q = data.find(mark)
    while q >= 0:
        if not q % _ID_LEN:
            out.append(q // _ID_LEN)
        q = data.find(mark, q + 1)
    return out


def _check_compact_marks(news: bytes, olds: bytes, counts: bytes | None) -> bool:
    """Check the reserved marks of compact edges (see :func:`_check_marks`); True if any edge is typed."""
    if _aligned_hits(news, INSTANCE_EDGE) or _aligned_hits(news, SHARED_EDGE):
        raise LineageError("a reserved edge mark cannot be an edge's new id")
    hits = sorted(_aligned_hits(olds, INSTANCE_EDGE) + _aligned_hits(olds, SHARED_EDGE))
    if not hits:
        return False
    if counts is None:
        raise LineageError("a typed edge has several old ids (compact edges without counts)")
    ends = array("Q", accumulate(_as_counts(counts)))  # id index one past each edge's last old id
    L = _ID_LEN
    for h in hits:
        i = bisect_right(ends, h)  # the edge holding old id number h
        start = ends[i - 1] if i else 0
        if h != start:
            raise LineageError("a reserved edge mark can only be an edge's first old id")
        k = ends[i] - start
        if olds[h * L:h * L + L] == INSTANCE_EDGE and k != 3:
            raise LineageError(f"an instance edge has a body and a site, got {k - 1} id(s)")
        if k < 2:
            raise LineageError("a shared edge needs at least one old id")
    return True


class Edges(Sequence[tuple[bytes, tuple[bytes, ...]]]):
    """A pass record's edges: an immutable sequence of ``(new id, old ids)`` pairs
    decoded on access from the record's compact storage.  Equal to any sequence
    holding the same pairs (e.g. a tuple of tuples).  Typed edges show their mark
    as the first old id."""

    __slots__ = ("_news", "_olds", "_counts", "_offsets", "_typed")

    _news: bytes
    _olds: bytes
    _counts: bytes | None  # native uint32 counts; None when every edge has one old id
    _offsets: Any  # memoryview of uint64 edge offsets (built on first use), or None
    _typed: bool  # some edge is an instance or shared edge

    def __init__(self, news: bytes, olds: bytes, counts: bytes | None) -> None:
        if type(news) is not bytes or type(olds) is not bytes or len(news) % _ID_LEN or (
                counts is None and len(olds) != len(news)) or (counts is not None and (
                type(counts) is not bytes or len(counts) != 4 * (len(news) // _ID_LEN)
                or len(olds) != _ID_LEN * sum(memoryview(counts).cast("I")))):
            raise LineageError("inconsistent compact edges")
        self._init(news, olds, counts, _check_compact_marks(news, olds, counts))

    @classmethod
    def _trusted(cls, news: bytes | bytearray, olds: bytes | bytearray, counts: bytes | None,
                 typed: bool) -> Edges:
        """Edges from a buffer whose methods kept them well formed (no second validation)."""
        e = cls.__new__(cls)
        e._init(news, olds, counts, typed)
        return e

    def _init(self, news: bytes | bytearray, olds: bytes | bytearray, counts: bytes | None,
              typed: bool) -> None:
        _set = object.__setattr__
        _set(self, "_news", news)
        _set(self, "_olds", olds)
        _set(self, "_counts", counts)
        _set(self, "_offsets", None)
        _set(self, "_typed", typed)

    def _is_typed(self) -> bool:
        return self._typed

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"pass record edges are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"pass record edges are immutable (cannot delete {name!r})")

    def _bytes(self) -> None:
        """Make the storage bytes: a record built from a finished pass's buffer takes the
        buffer's byte arrays as they are (no copy while the pass's memory is at its peak) and
        turns them into bytes on first use."""
        if type(self._news) is not bytes or type(self._olds) is not bytes:
            _set = object.__setattr__
            _set(self, "_news", bytes(self._news))
            _set(self, "_olds", bytes(self._olds))

    def __reduce__(self) -> Any:
        self._bytes()
        return (Edges, (self._news, self._olds, self._counts))

    def __len__(self) -> int:
        return len(self._news) // _ID_LEN

    def __iter__(self) -> Iterator[tuple[bytes, tuple[bytes, ...]]]:
        self._bytes()
        return _iter_edges(self._news, self._olds, self._counts)

    def _parts(self) -> tuple[bytes, bytes, Any, int]:
        self._bytes()
        return self._news, self._olds, self._counts, len(self)

    def _one(self, i: int) -> tuple[bytes, tuple[bytes, ...]]:
        self._bytes()
        L = _ID_LEN
        new = self._news[i * L:i * L + L]
        if self._counts is None:
            return new, (self._olds[i * L:i * L + L],)
        offs = self._offs()
        return new, tuple([self._olds[j * L:j * L + L] for j in range(offs[i], offs[i + 1])])

    def _offs(self) -> Any:
        """Where each edge's old ids start (in ids), one past the last at the end; built once
        (only for edges with counts)."""
        offs = self._offsets
        if offs is None:
            c = np.frombuffer(self._counts if self._counts is not None else b"", dtype=np.uint32)
            o = np.zeros(len(c) + 1, dtype=np.uint64)
            np.cumsum(c, out=o[1:])
            offs = memoryview(o.tobytes()).cast("Q")
            object.__setattr__(self, "_offsets", offs)
        return offs

    @overload
    def __getitem__(self, i: int) -> tuple[bytes, tuple[bytes, ...]]: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[tuple[bytes, tuple[bytes, ...]], ...]: ...

    def __getitem__(self, i: Any) -> Any:
        n = len(self)
        if isinstance(i, slice):
            return tuple([self._one(j) for j in range(*i.indices(n))])
        try:
            j = operator.index(i)
        except TypeError:
            raise TypeError(f"edge indices must be integers or slices, not {type(i).__name__}") from None
        if j < 0:
            j += n
        if not 0 <= j < n:
            raise IndexError("edge index out of range")
        return self._one(j)

    def __eq__(self, other: object) -> bool:
        if type(other) is Edges:
            return self._parts()[:2] == other._parts()[:2] and (
                self._counts == other._counts or list(_as_c(self)) == list(_as_c(other)))
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes, bytearray)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"<Edges of {len(self)} edges>"


def _as_c(e: Edges) -> Any:
    return array("I", [1]) * len(e) if e._counts is None else _as_counts(e._counts)


class RuleLog:
    """Which rewrite rule made which node, for one pass run: a name table (a rule's name is
    stored once) and, per firing, the result's 16-byte id and a small index into the table
    (17 bytes per firing, nothing per edge).  ``add(name, new_id)``; the last firing that
    made an id wins.  A :class:`PassRecord` keeps it frozen and answers
    :meth:`PassRecord.rule_of`."""

    __slots__ = ("names", "index", "ids", "idx")

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.ids = bytearray()
        self.idx = array("H")

    def add(self, name: str, new_id: bytes) -> None:
        """Rule ``name`` made the node of id ``new_id`` (a live node's id, unchecked)."""
        k = self.index.get(name)
        if k is None:
            if len(self.names) >= 0xFFFF:
                return  # the table is full (65,535 rules in one pass): later rules go unnamed
            k = self.index[name] = len(self.names)
            self.names.append(name)
        self.ids += new_id
        self.idx.append(k)

    def __len__(self) -> int:
        return len(self.idx)

    def __repr__(self) -> str:
        return f"<RuleLog of {len(self.idx)} firing(s) of {len(self.names)} rule(s)>"

    @classmethod
    def from_table(cls, names: Sequence[str], ids: bytes, idx: Sequence[int]) -> RuleLog:
        """The log a pass built, from its stored form (:meth:`PassRecord.rule_table`, the
        serializers'): the rule names in the order they first fired, and per firing a 16-byte id
        (in ``ids``) and an index into ``names``.  LineageError unless it is exactly what
        :meth:`add` builds (names distinct and each first used in table order, at least one
        firing), so that a stored log saves again identically."""
        n = len(idx)
        if not n or len(ids) != _ID_LEN * n or not 0 < len(names) <= 0xFFFF:
            raise LineageError(f"rule table: {len(names)} name(s), {len(ids)} id bytes and {n} firing(s) "
                               "do not match")
        log = cls()
        for name in names:
            if _check_text(name, "rule name") in log.index:
                raise LineageError(f"rule table: rule name {name!r:.80} appears twice")
            log.index[name] = len(log.names)
            log.names.append(name)
        top = -1
        for k in idx:
            if type(k) is not int or not 0 <= k <= top + 1 or k >= len(names):
                raise LineageError(f"rule table: firing of rule {k!r:.40} out of order or out of range "
                                   f"({len(names)} name(s))")
            if k > top:
                top = k
        if top != len(names) - 1:
            raise LineageError(f"rule table: {len(names) - 1 - top} rule name(s) never fired")
        log.ids = bytearray(ids)
        log.idx = array("H", idx)
        return log


class Recorder:
    """Collects the derivation edges of one pass run (``edges`` is an :class:`EdgeBuffer`;
    ``rules`` the :class:`RuleLog` of the rewrite rules that fired, None until one fires)."""

    __slots__ = ("edges", "removed", "sources", "rules")

    def __init__(self) -> None:
        self.edges = EdgeBuffer()
        self.removed: list[bytes] = []
        self.sources: dict[bytes, Any] = {}
        self.rules: RuleLog | None = None

    def rule_fired(self, name: str, new: Node) -> None:
        """Record that the rewrite rule ``name`` made ``new`` (shown by ``history``)."""
        log = self.rules
        if log is None:
            log = self.rules = RuleLog()
        log.add(name, new.id)

    def derive(self, new: Node, olds: Iterable[Node]) -> None:
        """Record that ``new`` derives from each of ``olds``."""
        ids = tuple(o.id for o in olds if o is not new)
        if ids:
            self.edges.append((new.id, ids))

    def derive_at(self, new: Node, body: Node, site: Node) -> None:
        """Record that ``new`` is ``body`` instantiated at the call ``site`` (an instance edge)."""
        if new is not body:
            self.edges.add_at(new.id, body.id, site.id)

    def derive_shared(self, new: Node, olds: Iterable[Node]) -> None:
        """Record that ``new`` stands for several sites and is each of ``olds`` at one of them
        (a shared edge)."""
        ids = [o.id for o in olds if o is not new]
        if ids:
            self.edges.add_shared(new.id, ids)

    def eliminate(self, olds: Iterable[Node]) -> None:
        """Record that ``olds`` were removed by this pass."""
        self.removed.extend(o.id for o in olds)

    def __bool__(self) -> bool:
        return bool(self.edges or self.removed or self.sources)


def rule_log() -> Callable[[str, Node], None] | None:
    """Inside a pass: a function ``fired(rule_name, new_node)`` recording which rewrite rule made
    ``new_node`` (rule drivers call it; ``history`` shows the rule); None outside passes."""
    rec = current_recorder()
    return rec.rule_fired if rec is not None else None


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
        self.recorder.edges._done = True  # the record made from it may take its storage


def derive(new: Node, *olds: Node) -> Node:
    """Inside a pass: record that ``new`` derives from ``olds``; returns ``new``.

    Use it for many-to-one merges (``derive(fused_call, *group)``) and
    one-to-many splits (call it once per copy).  Outside a pass it does nothing.
    """
    rec = current_recorder()
    if rec is not None:
        rec.derive(new, olds)
    return new


def derive_at(new: Node, body: Node, site: Node) -> Node:
    """Inside a pass: record that ``new`` is ``body`` (a node of a function's body)
    instantiated at the call ``site`` (an instance, AND, edge); returns ``new``.

    Use it when expanding a function at a call (DefuseOps, Inline): ``new`` keeps
    ``body``'s own origins and, of the origins ``body`` has for several sites (a
    function FuseOps shares between groups, see :func:`derive_shared`), those of
    ``site``.  Outside a pass it does nothing.
    """
    rec = current_recorder()
    if rec is not None:
        rec.derive_at(new, body, site)
    return new


def derive_shared(new: Node, *olds: Node) -> Node:
    """Inside a pass: record that ``new`` stands for several sites and is each of ``olds``
    at one of them (a shared edge); returns ``new``.

    FuseOps uses it for the body of a function shared by structurally identical groups:
    the body node derives from the member it copies in every group, and an expansion at
    one call (:func:`derive_at`) picks that group's.  Otherwise it counts as :func:`derive`.
    Outside a pass it does nothing.
    """
    rec = current_recorder()
    if rec is not None:
        rec.derive_shared(new, olds)
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


def _compact_edges(edges: Any, name: str) -> Edges:
    """The :class:`Edges` of ``edges`` (pairs, an EdgeBuffer or another record's edges), validated."""
    if type(edges) is Edges:
        return edges  # immutable: share it
    if type(edges) is EdgeBuffer:
        buf = edges
    else:
        buf = EdgeBuffer()
        try:
            buf.extend(edges)
        except LineageError as e:
            raise LineageError(f"pass record {name!r}: {e}") from None
    news, olds, counts, _ = buf._parts()
    if buf._done:  # the pass is over: take the byte arrays (turned into bytes on first use)
        edges = Edges._trusted(news, olds, None if counts is None else counts.tobytes(), buf.typed)
        buf._reset()
        return edges
    return Edges._trusted(bytes(news), bytes(olds), None if counts is None else counts.tobytes(), buf.typed)


def _frozen_rules(rules: Any, name: str) -> tuple[tuple[str, ...], bytes, bytes] | None:
    """The compact form of a record's rule names: from a pass's :class:`RuleLog`, or from a
    mapping id -> rule name (validated)."""
    if rules is None:
        return None
    if type(rules) is RuleLog:
        if not rules.idx:
            return None
        return tuple(rules.names), bytes(rules.ids), rules.idx.tobytes()
    try:
        items = list(rules.items())
    except (AttributeError, TypeError):
        raise LineageError(f"pass record {name!r}: rules must be a mapping of ids to rule names, got "
                           f"{type(rules).__name__}") from None
    if not items:
        return None
    log = RuleLog()
    for k, v in items:
        _check_id(k, "rules key")
        if len(log.names) >= 0xFFFF and v not in log.index:
            raise LineageError(f"pass record {name!r}: more than 65,535 rule names")
        log.add(_check_text(v, "rule name"), k)
    return tuple(log.names), bytes(log.ids), log.idx.tobytes()


# -- compact indexes over a record's edges ------------------------------------------------------


class _IdIndex:
    """The positions of a blob of 16-byte ids, found by id: the positions sorted by the ids'
    first 8 bytes, with a directory of buckets (the top bits of those bytes; ids are digests,
    so buckets hold one or two positions).  About 8 bytes per id, built by numpy in one sort,
    where a dict of ids costs ~150 (issue 10: the 10^6-deep memory target)."""

    __slots__ = ("blob", "perm", "dir", "shift")

    def __init__(self, blob: bytes) -> None:
        n = len(blob) // _ID_LEN
        k = max(1, n.bit_length() - 1)  # 2^k buckets, n / 2^k in [1, 2)
        hi = np.frombuffer(blob, dtype=">u8")[0::2] if n else np.zeros(0, dtype=">u8")
        perm = np.argsort(hi, kind="stable").astype(np.uint32)
        buckets = (hi[perm] >> np.uint64(64 - k)).astype(np.int64)
        dirs = np.searchsorted(buckets, np.arange((1 << k) + 1, dtype=np.int64)).astype(np.uint32)
        self.blob = blob
        self.perm = memoryview(perm.tobytes()).cast("I")
        self.dir = memoryview(dirs.tobytes()).cast("I")
        self.shift = 64 - k

    def positions(self, key: Any) -> list[int]:
        """The positions holding ``key``, ascending (empty for anything but a 16-byte id)."""
        if type(key) is not bytes or len(key) != _ID_LEN:
            return []
        b = int.from_bytes(key[:8], "big") >> self.shift
        lo, hi = self.dir[b], self.dir[b + 1]
        blob, perm = self.blob, self.perm
        out = []
        for q in range(lo, hi):
            p = perm[q]
            if blob[p * _ID_LEN:p * _ID_LEN + _ID_LEN] == key:
                out.append(p)
        return out

    def first(self, key: Any) -> bool:
        """Whether ``key`` is held at some position."""
        if type(key) is not bytes or len(key) != _ID_LEN:
            return False
        b = int.from_bytes(key[:8], "big") >> self.shift
        blob, perm = self.blob, self.perm
        for q in range(self.dir[b], self.dir[b + 1]):
            p = perm[q]
            if blob[p * _ID_LEN:p * _ID_LEN + _ID_LEN] == key:
                return True
        return False

    def unique(self) -> Iterator[bytes]:
        """Each id held, once, in the order of its first position."""
        blob = self.blob
        seen: set[bytes] = set()
        for p in range(0, len(blob), _ID_LEN):
            i = blob[p:p + _ID_LEN]
            if i not in seen:
                seen.add(i)
                yield i


class _EdgeTable:
    """A record's edges as flat arrays, decoded on demand: the new id of edge ``e``, and the
    old ids of edge ``e`` (marks included) from the edge offsets."""

    __slots__ = ("news", "olds", "offs", "n")
    offs: Any  # memoryview of uint64 (Edges._offs), or None when every edge has one old id

    def __init__(self, edges: Edges) -> None:
        news, olds, counts, n = edges._parts()
        self.news = news
        self.olds = olds
        self.offs = None if counts is None else edges._offs()
        self.n = n

    def new(self, e: int) -> bytes:
        return self.news[e * _ID_LEN:e * _ID_LEN + _ID_LEN]

    def span(self, e: int) -> tuple[int, int]:
        """The old-id positions of edge ``e``: [start, stop)."""
        offs = self.offs
        return (e, e + 1) if offs is None else (offs[e], offs[e + 1])

    def old(self, j: int) -> bytes:
        return self.olds[j * _ID_LEN:j * _ID_LEN + _ID_LEN]

    def olds_of(self, e: int) -> tuple[bytes, ...]:
        a, b = self.span(e)
        olds = self.olds
        return tuple([olds[j * _ID_LEN:j * _ID_LEN + _ID_LEN] for j in range(a, b)])


_MISSING = object()


class _IdMapping(Mapping[bytes, Any]):
    """The read-only mapping of the compact indexes: ``get`` (and ``__contains__``, ``__iter__``)
    by subclass, the rest from them (the size counted once)."""

    __slots__ = ("_len",)

    def get(self, key: Any, default: Any = None) -> Any:
        raise NotImplementedError

    def __getitem__(self, key: bytes) -> Any:
        v = self.get(key, _MISSING)
        if v is _MISSING:
            raise KeyError(key)
        return v

    def __len__(self) -> int:
        n = getattr(self, "_len", None)
        if n is None:
            n = sum(1 for _ in self)
            self._len = n
        return n


class _BackIndex(_IdMapping):
    """new id -> old ids, over a record's compact edges (see :class:`_IdIndex`).

    ``union`` (the :attr:`PassRecord.back` view): an id maps to the deduplicated old ids of
    all its edges, typed edges' marks left out.  Otherwise (the query view of a record with
    typed edges): an id maps to its one edge's olds tuple (a typed one starts with its mark),
    or to a list of such tuples when it has several edges."""

    __slots__ = ("_t", "_ix", "_union")

    def __init__(self, edges: Edges, union: bool) -> None:
        self._t = _EdgeTable(edges)
        self._ix = _IdIndex(self._t.news)
        self._union = union

    def get(self, key: Any, default: Any = None) -> Any:
        es = self._ix.positions(key)
        if not es:
            return default
        t = self._t
        if self._union:
            if len(es) == 1:
                olds = t.olds_of(es[0])
                if olds and olds[0] in _MARKS:
                    olds = olds[1:]
                return olds if len(olds) < 2 else tuple(dict.fromkeys(olds))
            acc: list[bytes] = []
            for e in es:
                olds = t.olds_of(e)
                acc.extend(olds[1:] if olds and olds[0] in _MARKS else olds)
            return tuple(dict.fromkeys(acc))
        if len(es) == 1:
            return t.olds_of(es[0])
        return [t.olds_of(e) for e in es]

    def __contains__(self, key: object) -> bool:
        return self._ix.first(key)

    def __iter__(self) -> Iterator[bytes]:
        return self._ix.unique()

    def __repr__(self) -> str:
        return f"<back index of {self._t.n} edges>"


class _FwdIndex(_IdMapping):
    """old id -> new ids over a record's compact edges (the old ids' positions indexed).

    ``kind`` selects the edges: ``"union"`` every edge (the :attr:`PassRecord.fwd` view, marks
    left out), ``"plain"`` ordinary edges only, ``"shared"`` shared edges only; ``"body"`` /
    ``"site"`` give instance edges by body (``[site, new, site, new, ...]``) or by site
    (``[body, new, ...]``)."""

    __slots__ = ("_t", "_ix", "_edge_of", "_kind")
    _t: _EdgeTable
    _ix: _IdIndex
    _edge_of: Any  # memoryview of uint32: the edge of each old-id position (None: position = edge)

    def __init__(self, base: _FwdIndex | Edges, kind: str) -> None:
        if isinstance(base, _FwdIndex):  # another view over the same arrays
            self._t, self._ix, self._edge_of = base._t, base._ix, base._edge_of
        else:
            t = self._t = _EdgeTable(base)
            self._ix = _IdIndex(t.olds)
            if t.offs is None:
                self._edge_of = None
            else:
                c = np.frombuffer(base._counts or b"", dtype=np.uint32)
                eo = np.repeat(np.arange(t.n, dtype=np.uint32), c)
                self._edge_of = memoryview(eo.tobytes()).cast("I")
        self._kind = kind

    def get(self, key: Any, default: Any = None) -> Any:
        if key in _MARKS:
            return default
        js = self._ix.positions(key)
        if not js:
            return default
        t, eo, kind = self._t, self._edge_of, self._kind
        out: list[bytes] = []
        for j in js:
            e = j if eo is None else eo[j]
            a = j if eo is None else t.offs[e]
            first = t.old(a)
            if first in _MARKS:
                if first == INSTANCE_EDGE:
                    if kind == "body" and j == a + 1:
                        out += (t.old(a + 2), t.new(e))
                    elif kind == "site" and j == a + 2:
                        out += (t.old(a + 1), t.new(e))
                    elif kind == "union":
                        out.append(t.new(e))
                    continue
                if kind != "shared" and kind != "union":
                    continue
            elif kind != "plain" and kind != "union":
                continue
            new = t.new(e)
            if not out or out[-1] != new:
                out.append(new)
        if not out:
            return default
        if kind == "body" or kind == "site":
            return out
        return tuple(dict.fromkeys(out)) if len(out) > 1 else tuple(out)

    def __contains__(self, key: object) -> bool:
        if self._t.offs is None:  # no counts: every edge has one old id, none is typed
            return self._kind in ("union", "plain") and key not in _MARKS and self._ix.first(key)
        if self._kind == "union":
            return key not in _MARKS and self._ix.first(key)
        return self.get(key) is not None

    def __iter__(self) -> Iterator[bytes]:
        return (i for i in self._ix.unique() if i not in _MARKS and i in self)

    def __repr__(self) -> str:
        return f"<forward index ({self._kind}) of {self._t.n} edges>"


class PassRecord:
    """One pass run: its name, options, derivation edges and eliminated ids.

    ``sources`` maps ids to external origins (e.g. ONNX node names) for
    records made by frontends: a read-only mapping of JSON-able values, frozen
    (lists become tuples, dicts read-only mappings).  ``seconds`` is a finite,
    non-negative float.  Records are immutable: fields are read-only, every
    container is immutable, and invalid fields raise :class:`LineageError`.
    Equality is identity.
    """

    __slots__ = ("name", "options", "edges", "removed", "sources", "seconds", "_rules", "_rix", "_back",
                 "_fwd", "_qb", "_qf")
    name: str
    options: str
    edges: Edges
    removed: frozenset[bytes]
    sources: Mapping[bytes, Any] | None
    seconds: float
    _back: _BackIndex
    _fwd: _FwdIndex
    _qb: _BackIndex
    _qf: tuple[Mapping[bytes, Any], Any, Any, Any]
    _rules: tuple[tuple[str, ...], bytes, bytes] | None  # (rule names, result ids, uint16 name indices)
    _rix: _IdIndex

    def __init__(self, name: str, options: str, edges: Iterable[tuple[bytes, Iterable[bytes]]],
                 removed: Iterable[bytes], sources: Mapping[bytes, Any] | None = None,
                 seconds: float = 0.0, rules: RuleLog | Mapping[bytes, str] | None = None) -> None:
        _check_text(name, "name")
        _check_text(options, "options")
        try:
            rs = removed if type(removed) is frozenset else frozenset(removed)
        except TypeError as err:
            raise LineageError(f"pass record {name!r}: edges and removed must be iterables: {err}") from None
        es = _compact_edges(edges, name)
        for r in rs:
            if type(r) is not bytes or len(r) != _ID_LEN:
                _check_id(r, "removed id")
        if INSTANCE_EDGE in rs or SHARED_EDGE in rs:
            raise LineageError(f"pass record {name!r}: a reserved edge mark cannot be a removed id")
        src: Mapping[bytes, Any] | None = None
        if sources is not None:
            try:
                items = list(sources.items())
            except (AttributeError, TypeError):
                raise LineageError(f"pass record {name!r}: sources must be a mapping, got "
                                   f"{type(sources).__name__}") from None
            table: dict[bytes, Any] = {}
            for k, v in items:
                if _check_id(k, "sources key") in _MARKS:
                    raise LineageError(f"pass record {name!r}: a reserved edge mark cannot be a sources key")
                table[k] = freeze_source_value(v, f"pass {name!r}: lineage source")
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
        _set(self, "_rules", _frozen_rules(rules, name))

    @property
    def rule_names(self) -> tuple[str, ...]:
        """The names of the rewrite rules that fired in this pass (its name table), in the order
        they first fired; empty for a pass that fired none."""
        return () if self._rules is None else self._rules[0]

    def rule_of(self, node_id: bytes) -> str | None:
        """The name of the rewrite rule that made the node of id ``node_id`` in this pass (the
        last one, if several did), or None (no rule made it)."""
        r = self._rules
        if r is None:
            return None
        try:
            ix = self._rix
        except AttributeError:
            ix = _IdIndex(r[1])
            object.__setattr__(self, "_rix", ix)
        ps = ix.positions(node_id)
        if not ps:
            return None
        return r[0][memoryview(r[2]).cast("H")[ps[-1]]]

    def rule_table(self) -> tuple[tuple[str, ...], bytes, array[int]] | None:
        """The stored form of the rule names (None when no rule fired): the names in the order
        they first fired, the ids of the firings' results (16 bytes each) and each firing's
        index into the names (see :meth:`RuleLog.from_table`)."""
        r = self._rules
        if r is None:
            return None
        idx = array("H")
        idx.frombytes(r[2])
        return r[0], r[1], idx

    def rules(self) -> dict[bytes, str]:
        """id -> the name of the rule that made it (a new dict; :meth:`rule_of` answers one id)."""
        r = self._rules
        if r is None:
            return {}
        names, ids, idx = r[0], r[1], memoryview(r[2]).cast("H")
        return {ids[p * _ID_LEN:p * _ID_LEN + _ID_LEN]: names[idx[p]] for p in range(len(idx))}

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"pass records are immutable (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise ImmutableError(f"pass records are immutable (cannot delete {name!r})")

    def __reduce__(self) -> Any:
        src = None if self.sources is None else {k: thaw_source_value(v) for k, v in self.sources.items()}
        return (PassRecord, (self.name, self.options, self.edges, self.removed, src, self.seconds,
                             self.rules() or None))

    def __copy__(self) -> PassRecord:
        return self

    def __deepcopy__(self, memo: Any) -> PassRecord:
        return self

    @property
    def back(self) -> Mapping[bytes, tuple[bytes, ...]]:
        """new id -> old ids (a read-only mapping, built on first use; the union view: the
        marks of typed edges are left out).  Compact: sorted arrays over the record's edges,
        about 16 bytes per edge."""
        try:
            return self._back
        except AttributeError:
            b = _BackIndex(self.edges, union=True)
            object.__setattr__(self, "_back", b)
            return b

    def _edges_untyped(self) -> Iterator[tuple[bytes, tuple[bytes, ...]]]:
        """The edges with the marks of typed edges left out."""
        if not self.edges._typed:
            yield from self.edges
            return
        for new, olds in self.edges:
            yield new, (olds[1:] if olds and olds[0] in _MARKS else olds)

    @property
    def fwd(self) -> Mapping[bytes, tuple[bytes, ...]]:
        """old id -> new ids (a read-only mapping, built on first use; the union view)."""
        try:
            return self._fwd
        except AttributeError:
            f = _FwdIndex(self.edges, "union")
            object.__setattr__(self, "_fwd", f)
            return f

    # -- the query indexes (typed edges kept apart) -----------------------------------------

    def _qback(self) -> Mapping[bytes, Any]:
        """new id -> its edges' old ids, for the queries: for a record without typed edges,
        :attr:`back`; otherwise an id maps to one edge's olds tuple (a typed one starts with
        its mark) or to a list of such tuples (several edges)."""
        if not self.edges._typed:
            return self.back
        try:
            return self._qb
        except AttributeError:
            q = _BackIndex(self.edges, union=False)
            object.__setattr__(self, "_qb", q)
            return q

    def _qfwd(self) -> tuple[Mapping[bytes, Any], Any, Any, Any]:
        """For the queries: (ordinary edges: old -> news, shared edges: old -> news, instance
        edges by body: body -> [site, new, site, new, ...], by site: site -> [body, new, ...]);
        the last three are None for a record without typed edges.  Views over one forward
        index."""
        if not self.edges._typed:
            return self.fwd, None, None, None
        try:
            return self._qf
        except AttributeError:
            base = cast(_FwdIndex, self.fwd)
            q = (_FwdIndex(base, "plain"), _FwdIndex(base, "shared"), _FwdIndex(base, "body"),
                 _FwdIndex(base, "site"))
            object.__setattr__(self, "_qf", q)
            return q

    def __len__(self) -> int:
        return len(self.edges)

    def __repr__(self) -> str:
        return (f"PassRecord({self.name!r}, {len(self.edges)} edges, {len(self.removed)} removed, "
                f"{self.seconds * 1e3:.1f} ms)")


@dataclass(frozen=True)
class Step:
    """One step of ``history``: ``pass_name`` turned ``before`` into ``after``
    (ids; ``after`` is None when the pass eliminated ``before``); ``rule`` is the name of
    the rewrite rule that made ``after`` when a rule did (not part of equality)."""

    pass_name: str
    before: bytes
    after: bytes | None
    rule: str | None = field(default=None, compare=False)

    def __repr__(self) -> str:
        after = self.after.hex()[:8] if self.after is not None else "eliminated"
        rule = f" [{self.rule}]" if self.rule is not None else ""
        return f"Step({self.pass_name}{rule}: {self.before.hex()[:8]} -> {after})"


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
    return idx


def _forward(rec: PassRecord, cur: dict[bytes, bool],
             steps: list[tuple[bytes, bytes]] | None = None) -> tuple[dict[bytes, bool], dict[bytes, bool]]:
    """One record, forward: ``cur`` updated in place to the state after it, and the ids
    reached through its edges.

    ``cur`` maps the ids reached so far to True when reached through no shared edge
    ("fully"), False when only through shared edges (for some of a shared node's
    sites).  Ordinary edges carry the flag over, shared edges give False, an
    instance edge fires (fully) when its body is reached fully or both its body and
    its site are reached.  Chains within the record are followed (a pass may rewrite a
    node it created), and each node is processed once per flag.  The state after the
    record is ``cur`` less the ids the record eliminated (unless reached again through
    its edges), plus the ids reached.  ``steps`` receives the ``(before, after)`` edges
    crossed (for an instance edge, its body).
    """
    fwd, shr, by_body, by_site = rec._qfwd()
    reached: dict[bytes, bool] = {}
    if shr is None:
        stack = [i for i in cur if i in fwd]
    else:
        stack = [i for i in cur if i in fwd or i in shr or i in by_body or i in by_site]
    if stack and shr is None:  # ordinary edges only: flags carried over
        work = [(i, cur[i]) for i in stack]
        while work:
            y, full = work.pop()
            for x in fwd[y]:
                if steps is not None:
                    steps.append((y, x))
                r = reached.get(x)
                if r is None or (full and not r):
                    reached[x] = full
                    if x in fwd:
                        work.append((x, full))
        _drop_removed(rec.removed, cur, reached)
        for x, f in reached.items():
            if f or x not in cur:
                cur[x] = f
        return cur, reached
    if stack:
        _closure_typed(rec._qfwd(), cur, reached, stack, steps)
    _drop_removed(rec.removed, cur, reached)
    return cur, reached


def _drop_removed(removed: frozenset[bytes], cur: dict[bytes, bool], reached: dict[bytes, bool]) -> None:
    if not removed:
        return
    if len(removed) < len(cur):
        for i in removed:
            if i in cur and i not in reached:
                del cur[i]
    else:
        for i in [i for i in cur if i in removed and i not in reached]:
            del cur[i]


def _closure_typed(q: tuple[Any, Any, Any, Any], state: dict[bytes, bool], reached: dict[bytes, bool],
                   stack: list[bytes], steps: list[tuple[bytes, bytes]] | None) -> None:
    """The closure of :func:`_forward` within a record with typed edges (``state`` is updated
    as ids are reached)."""
    fwd, shr, by_body, by_site = q
    done: dict[bytes, bool] = {}
    sites: list[bytes] = []  # reached ids that are instance sites (processed)

    def mark(x: bytes, full: bool, before: bytes) -> None:
        if steps is not None:
            steps.append((before, x))
        reached[x] = full or reached.get(x, False)
        old = state.get(x)
        if old is None or (full and not old):
            state[x] = full
            stack.append(x)

    while stack:
        y = stack.pop()
        full = state[y]
        d = done.get(y)
        if d is not None and (d or not full):
            continue
        done[y] = full
        nxt = fwd.get(y)
        if nxt is not None:
            for x in nxt:
                mark(x, full, y)
        nxt = shr.get(y)
        if nxt is not None:
            for x in nxt:
                mark(x, False, y)
        pairs = by_site.get(y)
        if pairs is not None and d is None:  # a site: its instances whose body is reached
            sites.append(y)
            for k in range(0, len(pairs), 2):
                if pairs[k] in state:
                    mark(pairs[k + 1], True, pairs[k])
        pairs = by_body.get(y)
        if pairs is not None:
            if full:  # every instance of a fully reached body
                for k in range(1, len(pairs), 2):
                    mark(pairs[k], True, y)
            elif len(pairs) // 2 <= len(sites):
                for k in range(0, len(pairs), 2):
                    if pairs[k] in state:
                        mark(pairs[k + 1], True, y)
            else:  # fewer sites reached than instances of this body: look from the sites
                for site in sites:
                    sp = by_site[site]
                    for k in range(0, len(sp), 2):
                        if sp[k] == y:
                            mark(sp[k + 1], True, y)


def find(mod: Any, x: Any) -> list[Node]:
    """Nodes of ``mod`` that are, or were derived from, ``x`` (expression or id)."""
    cur = {_id_of(x): True}
    for rec in mod.pass_records:
        cur = _forward(rec, cur)[0]
    idx = module_index(mod)
    out = [idx[i] for i in cur if i in idx]
    out.sort(key=lambda n: n.id)
    return out


def _edges_of(v: Any) -> Any:
    return v if type(v) is list else (v,)


class _Back:
    """Backward evaluation of origins over typed records, for one query (memoized)."""

    def __init__(self, recs: Sequence[PassRecord]) -> None:
        self.recs = recs
        self.backs = [r._qback() for r in recs]
        self.memo: dict[tuple[bytes, int], frozenset[bytes]] = {}

    def producer(self, i: bytes, k: int) -> int:
        """The last record, at most ``k``, with edges into ``i`` (-1: none)."""
        backs = self.backs
        while k >= 0 and i not in backs[k]:
            k -= 1
        return k

    def origins(self, target: bytes, k: int) -> frozenset[bytes]:
        """The origins of ``target`` as an id after record ``k``.

        Ordinary edges are unions; a shared edge is followed for the full origins and left
        out of the origins "through no shared edge"; an instance edge ``(new, body, site)``
        gives the latter origins of ``body`` and, of the origins of ``site`` (computed apart),
        those from which ``body`` is reached.  Chains within a record are followed; a chain
        that comes back to a node on it ends at that node as it was before the record (and goes
        on through the earlier records), as with ordinary edges.
        """
        top = self.producer(target, k)
        if top < 0:
            return frozenset((target,))
        got = self.memo.get((target, top))
        if got is not None:
            return got
        backs = self.backs
        out: set[bytes] = set()
        # items: (id, record to look from, full origins?); a None marks leaving the key below it
        stack: list[Any] = [(target, top, True)]
        on_path: set[Any] = set()
        done: set[Any] = set()
        while stack:
            item = stack.pop()
            if item is None:
                key = stack.pop()
                on_path.discard(key)
                done.add(key)
                continue
            i, j, full = item
            j = self.producer(i, j)
            if j < 0:
                out.add(i)
                continue
            key = (i, j, full)
            if key in done:
                continue
            if key in on_path:  # a cycle within the record: ends at this node as it was before it
                stack.append((i, j - 1, full))
                continue
            on_path.add(key)
            stack.append(key)
            stack.append(None)
            for e in _edges_of(backs[j][i]):
                if e and e[0] in _MARKS:
                    if e[0] == INSTANCE_EDGE:
                        body, site = e[1], e[2]
                        stack.append((body, j, False))
                        cs = self.origins(site, j)
                        if self._small(body, j):  # intersect with the body's origins
                            out.update(cs & self.origins(body, j))
                        else:  # a body shared by many sites: check the site's few origins
                            for c in cs:
                                if c not in out and self.reaches(c, body, j):
                                    out.add(c)
                    elif full:
                        for o in e[1:]:
                            stack.append((o, j, True))
                else:
                    for o in e:
                        stack.append((o, j, full))
        got = frozenset(out)
        self.memo[(target, top)] = got
        return got

    def _small(self, i: bytes, k: int) -> bool:
        """Whether ``i`` (after record ``k``) has few old ids in its producing record (its
        origins are then cheaper to compute than to check candidates forward)."""
        j = self.producer(i, k)
        return j < 0 or sum(len(e) for e in _edges_of(self.backs[j][i])) <= 16

    def reaches(self, start: bytes, target: bytes, k: int) -> bool:
        """Whether ``target``, as an id after record ``k``, derives from ``start``."""
        last = self.producer(target, k)
        if last < 0:
            return start == target
        cur = {start: True}
        for rec in self.recs[:last]:
            cur = _forward(rec, cur)[0]
            if not cur:
                return False
        return target in _forward(self.recs[last], cur)[1]


def origins(mod: Any, x: Any, since: int = 0, into: Callable[[Any], Any] = set) -> Any:
    """Root origin ids of ``x``: the ids, before the first pass (or before record
    number ``since``), it derives from (a set, or ``into(ids)``: one copy of the answer)."""
    records = mod.pass_records
    if isinstance(since, bool) or not isinstance(since, int) or not 0 <= since <= len(records):
        raise LineageError(f"since must be a pass record number in [0, {len(records)}], got {since!r}")
    recs = list(records[since:] if since else records)
    return _origins(recs, _id_of(x), into)


def _origins(recs: list[PassRecord], target: bytes, into: Callable[[Any], Any] = set) -> Any:
    if not any(r.edges._typed for r in recs):  # unions only: one walk per record
        cur = {target}
        for rec in reversed(recs):
            back = rec.back
            if back:
                cur = _roots_within(back, cur)
        return cur if into is set else into(cur)
    return into(_Back(recs).origins(target, len(recs) - 1))


def _roots_within(back: Mapping[bytes, tuple[bytes, ...]], ids: set[bytes]) -> set[bytes]:
    """The ids that ``ids`` derive from within one record of ordinary edges, following
    chains of edges (a pass may rewrite a node it created).

    A chain that comes back to a node on it (hash-consing rebuilt a node the chain
    started from) ends at that node.
    """
    roots: set[bytes] = set()
    done: set[bytes] = set()
    on_path: set[bytes] = set()
    stack: list[tuple[bytes, bool]] = [(i, False) for i in ids]
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
            if o in on_path:
                roots.add(o)
            elif o not in done:
                stack.append((o, False))
    return roots


def history(mod: Any, x: Any) -> list[Step]:
    """Steps (pass, before, after) that led to ``x``; for an expression of an
    earlier module, the steps that carried it forward (or eliminated it).

    For a node some pass produced: the edges crossed on the way from its origins to
    it, oldest pass first (for an instance edge, the step from its body node).  Within
    one pass, chains of edges are followed (a pass may rewrite a node it created), as
    ``find`` and ``origins`` do.
    """
    target = _id_of(x)
    recs = list(mod.pass_records)
    if any(target in r._qback() for r in recs):
        # Backward: the steps on the paths from the origins of target to target.
        cur = dict.fromkeys(_origins(recs, target), True)
        per_rec: list[list[tuple[bytes, bytes]]] = []
        for rec in recs:
            crossed: list[tuple[bytes, bytes]] = []
            cur = _forward(rec, cur, crossed)[0]
            per_rec.append(crossed)
        live = {target}
        out: list[list[Step]] = []
        for rec, crossed in zip(reversed(recs), reversed(per_rec)):
            into: dict[bytes, list[tuple[bytes, bytes]]] = {}
            for st in crossed:
                into.setdefault(st[1], []).append(st)
            keep: set[tuple[bytes, bytes]] = set()
            stack = [i for i in live if i in into]
            seen = set(stack)
            while stack:
                for st in into[stack.pop()]:
                    keep.add(st)
                    if st[0] not in seen:
                        seen.add(st[0])
                        live.add(st[0])
                        if st[0] in into:
                            stack.append(st[0])
            emitted: set[tuple[bytes, bytes]] = set()
            mine = []
            for st in crossed:
                if st in keep and st not in emitted and st[0] != st[1]:  # (a node kept: no step)
                    emitted.add(st)
                    mine.append(Step(rec.name, st[0], st[1], rec.rule_of(st[1])))
            out.append(mine)
        return [st for mine in reversed(out) for st in mine]
    # Forward: target is an old expression; follow it.
    steps: list[Step] = []
    cur = {target: True}
    for rec in recs:
        crossed = []
        gone = sorted(i for i in cur if i in rec.removed) if rec.removed else []
        _forward(rec, cur, crossed)
        emitted = set()
        for st in crossed:
            if st not in emitted and st[0] != st[1]:
                emitted.add(st)
                steps.append(Step(rec.name, st[0], st[1], rec.rule_of(st[1])))
        steps.extend(Step(rec.name, i, None) for i in gone)
    return steps

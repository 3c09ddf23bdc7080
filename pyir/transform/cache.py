"""Incremental pass runs: :class:`PassCache` memoizes each pass's result per function.

``Sequential([...])(mod, cache=PassCache())`` (or ``cache=store``, any object with
``cache_load(key) -> bytes | None`` and ``cache_save(key, value)``, such as a
:class:`pyir.store.Store`) runs a pipeline remembering, for each pass and each function, the
function it produced and the lineage rows that run recorded.  Re-running the pipeline on a
module where one function changed re-runs that function only; every other function is read
back, and its lineage rows are replayed into the pass's record, so the result -- functions,
ids, printed text and pass records (edges, removed ids, sources, rule names; not the
``seconds``) -- is the one an uncached run gives.

>>> import pyir
>>> from pyir.transform import PassCache, standard_pipeline
>>> mod, cache = pyir.testing.resnet(2), PassCache()
>>> out = standard_pipeline()(mod, cache=cache)
>>> again = standard_pipeline()(mod, cache=cache)       # every pass a hit, nothing runs
>>> again["main"] is out["main"], cache.stats()
(True, {'hits': 7, 'misses': 7, 'bad': 0})
>>> [len(r.edges) for r in again.pass_records] == [len(r.edges) for r in out.pass_records]
True

**What a result is keyed by.**  Every key holds the pyir version, the pass's class (module and
qualified name), its ``name``, every option (dataclass field; a value that is not plain data --
None, bool, int, float, str, bytes, a pyir node by its content id, tuples / lists / sets / maps
of these -- makes the pass uncacheable: it just runs), the :class:`PassContext`'s ``opt_level``
and ``config``, and whether lineage is being recorded.  Then, by the pass's ``cache_scope``:

* ``"function"`` (every standard :class:`FunctionPass`, and the module passes ``FuseOps``,
  ``DefuseOps`` and ``InferType``, whose ``run`` is a loop over the functions doing one
  function's work each): one entry per function, keyed by its name and content id.  These
  passes read the module only through its typing context (``TypeContext`` / ``infer_type``);
  so a function that calls globals (``@f``) also keys on the types of the globals it calls
  (``mod.global_type``: the annotated signature, else the inferred one), and a function whose
  types come from the whole module -- an untyped variable, a constructor or a ``match`` (mask
  bits ``F_UNTYPED | F_ADT | F_MATCH``), or a global that does not type -- keys on the whole
  module's content (see below).  So ``main`` calling an edited function re-runs only if the
  edit changed that function's type; a self-contained function re-runs only when it changes.
  FuseOps's primitive functions are inline function literals, shared per function (one
  sharing table per ``fuse_function`` call), named by nothing of the module, so a function's
  fused form is a function of that function alone.
* ``"module"`` (``DeadCodeElimination``, ``Inline``: they read the call graph): one entry per
  run, keyed by the whole module's content -- every function's name and content id and every
  type definition's id.
* ``None`` (the default of :class:`Pass`; :class:`Sequential` itself, user passes): not
  cached.  A user :class:`FunctionPass` opts in with ``cache_scope = "function"`` when its
  ``transform_function`` reads of ``mod`` only what the rule above covers (its types).

A pass subclass that overrides ``run`` is not cached per function (only the classes above,
exactly, have their loop here).  Nested passes (a pass a pass runs) are never cached.

**What is stored.**  Values are bytes in pyir's binary format (:func:`pyir.serialize.binary.dumps`,
never pickle): a small module holding the result function (none if the pass left the function
as it was; the whole result module for ``"module"`` scope), whose history is one
:class:`~pyir.ir.lineage.PassRecord` with the lineage rows of that function's run (edges,
removed ids, sources) and the key as its options, then, if rewrite rules fired, a record
``"rules"`` whose options are the firings as JSON (names, name indices, node ids: the binary
format does not carry a record's rule names).  An entry that does not decode, or decodes to
something else than such a module for this key, is a miss: the pass runs, a
``RuntimeWarning`` ("pass cache entry ... unusable") says so, and the entry is written again.
"""

from __future__ import annotations

import dataclasses
import json
import math
import struct
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from ..errors import PassError, PyIRError
from ..ir.adt import F_ADT, F_MATCH
from ..ir.expr import Function
from ..ir.lineage import Edges, PassRecord, Recorder, RuleLog, current_recorder, thaw_source_value
from ..ir.module import Module
from ..ir.node import F_FUNC, F_GLOBAL, F_UNTYPED, Node, digest, gc_paused
from .base import _CACHE_HOOK, FunctionPass, PassContext
from .base import _cache_var as _active

__all__ = ["PassCache", "CacheBackend", "DictBackend", "as_pass_cache"]

_VERSION = b"pyir-pass-cache/1"
_CONTEXT_MASK = F_GLOBAL | F_UNTYPED | F_ADT | F_MATCH
_WHOLE_MASK = F_UNTYPED | F_ADT | F_MATCH  # typed through the whole module's functions and types


@runtime_checkable
class CacheBackend(Protocol):
    """Where a :class:`PassCache` keeps its entries: bytes keys to bytes values
    (:class:`pyir.store.Store` is one; :class:`DictBackend` the in-memory default)."""

    def cache_load(self, key: bytes) -> bytes | None:
        """The value saved under ``key``, or None."""

    def cache_save(self, key: bytes, value: bytes) -> None:
        """Save ``value`` under ``key`` (replacing any)."""


class DictBackend:
    """An in-memory :class:`CacheBackend` (a dict; ``entries`` is it)."""

    def __init__(self) -> None:
        self.entries: dict[bytes, bytes] = {}

    def cache_load(self, key: bytes) -> bytes | None:
        return self.entries.get(key)

    def cache_save(self, key: bytes, value: bytes) -> None:
        if type(key) is not bytes or type(value) is not bytes:
            raise PassError("DictBackend: keys and values are bytes")
        self.entries[key] = value

    def __len__(self) -> int:
        return len(self.entries)


class PassCache:
    """Memoized pass results (see the module docstring): ``pipeline(mod, cache=PassCache())``.

    ``backend`` (default: a new :class:`DictBackend`) is any object with ``cache_load`` and
    ``cache_save``.  ``hits``, ``misses`` and ``bad`` (undecodable entries) count lookups.

    ``live``: how many entries this object also keeps decoded, in memory (the most recently
    used; 0: none).  A hit on one of them skips decoding the bytes -- what makes a re-run in the
    same process cheap -- at the price of keeping those result functions alive."""

    def __init__(self, backend: Any = None, *, live: int = 4096) -> None:
        if backend is None:
            backend = DictBackend()
        if not (callable(getattr(backend, "cache_load", None))
                and callable(getattr(backend, "cache_save", None))):
            raise PassError(f"PassCache: the backend needs cache_load and cache_save methods, got "
                            f"{type(backend).__name__}")
        if type(live) is not int or live < 0:
            raise PassError(f"PassCache: live must be an int >= 0, got {live!r}")
        self.backend = backend
        self.live = live
        self._live: OrderedDict[bytes, tuple[Module, _Segment, bool]] = OrderedDict()
        self._globals: dict[bytes, tuple[str, ...]] = {}  # function id -> the globals it names
        self.hits = 0
        self.misses = 0
        self.bad = 0

    def stats(self) -> dict[str, int]:
        """``{"hits": ..., "misses": ..., "bad": ...}``."""
        return {"hits": self.hits, "misses": self.misses, "bad": self.bad}

    def __repr__(self) -> str:
        return f"<PassCache {self.hits} hit(s), {self.misses} miss(es) on {type(self.backend).__name__}>"

    # -- entries -------------------------------------------------------------------------------
    def _load(self, key: bytes, names: tuple[str, ...] | None) -> tuple[Module, _Segment, bool] | None:
        """The entry under ``key`` as (its module, its lineage rows, whether the pass returned its
        input), or None (a miss).  ``names``: the function names the module may hold (None: any,
        the module scope)."""
        got = self._live.get(key)
        if got is not None:
            self._live.move_to_end(key)
            self.hits += 1
            return got
        data = self.backend.cache_load(key)
        if data is None:
            self.misses += 1
            return None
        try:
            entry = _decode(data, key, names)
        except PyIRError as e:
            entry = f"{type(e).__name__}: {e}"
        if isinstance(entry, str):
            self.bad += 1
            self.misses += 1
            warnings.warn(f"pass cache entry {key.hex()[:16]} unusable ({entry:.200}); running the pass",
                          RuntimeWarning, stacklevel=3)
            return None
        self.hits += 1
        self._keep(key, entry)
        return entry

    def _run_pass(self, pass_: Any, mod: Module) -> Module:
        """``pass_.run(mod)`` through this cache (``Pass._run_recorded`` calls it)."""
        return run_cached(pass_, mod, self)

    def _keep(self, key: bytes, entry: tuple[Module, _Segment, bool]) -> None:
        if self.live:
            self._live[key] = entry
            self._live.move_to_end(key)
            if len(self._live) > self.live:
                self._live.popitem(last=False)

    def _save(self, key: bytes, name: str, funcs: Mapping[Any, Function], seg: _Segment,
              same: bool = False) -> None:
        from ..serialize.binary import dumps
        r = seg.record
        head = key.hex() + ("=" if same else "")
        recs = [PassRecord(name, head, (), ()) if r is None else
                PassRecord(name, head, r.edges, r.removed, _thawed(r.sources))]
        if seg.rules:
            names: list[str] = []
            index: dict[str, int] = {}
            idx = []
            for rname, _ in seg.rules:
                k = index.get(rname)
                if k is None:
                    k = index[rname] = len(names)
                    names.append(rname)
                idx.append(k)
            text = json.dumps({"names": names, "idx": idx, "ids": b"".join(i for _, i in seg.rules).hex()})
            recs.append(PassRecord("rules", text, (), ()))
        m = Module(funcs)
        m = m._derive(m.functions(), history=m.pass_records.extend(recs))
        self.backend.cache_save(key, dumps(m))
        self._keep(key, (m, seg, same))


def _thawed(src: Mapping[bytes, Any] | None) -> dict[bytes, Any] | None:
    return None if src is None else {k: thaw_source_value(v) for k, v in src.items()}


def _decode(data: Any, key: bytes, names: tuple[str, ...] | None) -> tuple[Module, _Segment, bool] | str:
    """An entry's (module, lineage rows, same), or a str saying why it is unusable."""
    from ..serialize.binary import loads
    if not isinstance(data, (bytes, bytearray, memoryview)):
        return f"the backend returned a {type(data).__name__}, not bytes"
    m = loads(data)
    if not isinstance(m, Module) or not 1 <= len(m.pass_records) <= 2:
        return "not a cache entry"
    head = m.pass_records[0]
    if head.options not in (key.hex(), key.hex() + "="):
        return "an entry for another key"
    if names is not None and not all(n in names for n in m.names()):
        return "an entry for another function"
    rules: list[tuple[str, bytes]] = []
    if len(m.pass_records) == 2:
        r = m.pass_records[1]
        try:
            d = json.loads(r.options)
            rnames, idx, ids = d["names"], d["idx"], bytes.fromhex(d["ids"])
            if (r.name != "rules" or type(rnames) is not list or type(idx) is not list
                    or len(ids) != 16 * len(idx) or not all(type(n) is str for n in rnames)
                    or not all(type(k) is int and 0 <= k < len(rnames) for k in idx)):
                return "bad rule rows"
            rules = [(rnames[k], ids[16 * p:16 * p + 16]) for p, k in enumerate(idx)]
        except (ValueError, KeyError, TypeError, IndexError, AttributeError):
            return "bad rule rows"
    empty = not len(head.edges) and not head.removed and not head.sources
    return m, _Segment(None if empty else head, rules), head.options.endswith("=")


def as_pass_cache(cache: Any) -> PassCache:
    """``cache`` as a :class:`PassCache` (a backend is wrapped in a new one)."""
    if isinstance(cache, PassCache):
        return cache
    return PassCache(cache)


_CACHE_HOOK[0] = as_pass_cache  # Pass.__call__(mod, cache=...) wraps a backend with it


# -- keys ------------------------------------------------------------------------------------------
class _Uncacheable(Exception):
    pass


def _enc(v: Any, out: list[bytes], depth: int = 0) -> None:
    if depth > 32:
        raise _Uncacheable
    t = type(v)
    if v is None:
        out.append(b"N")
    elif t is bool:
        out.append(b"T" if v else b"F")
    elif t is int:
        s = str(v).encode()
        out.append(b"i%d:" % len(s) + s)
    elif t is float:
        if math.isnan(v):
            raise _Uncacheable
        out.append(b"f" + struct.pack("<d", v))
    elif t is str:
        s = v.encode("utf-8", "surrogatepass")
        out.append(b"s%d:" % len(s) + s)
    elif t is bytes:
        out.append(b"b%d:" % len(v) + v)
    elif isinstance(v, Node):
        out.append(b"n" + v.id)
    elif t is tuple or t is list:
        out.append(b"(%d:" % len(v))
        for x in v:
            _enc(x, out, depth + 1)
    elif t is frozenset or t is set:
        parts = []
        for x in v:
            sub: list[bytes] = []
            _enc(x, sub, depth + 1)
            parts.append(b"".join(sub))
        out.append(b"{%d:" % len(parts) + b"".join(sorted(parts)))
    elif isinstance(v, Mapping):
        items = []
        for k, x in v.items():
            sub = []
            _enc(k, sub, depth + 1)
            _enc(x, sub, depth + 1)
            items.append(b"".join(sub))
        out.append(b"m%d:" % len(items) + b"".join(sorted(items)))
    else:
        raise _Uncacheable


def _pass_key(pass_: Any, recording: bool) -> bytes | None:
    """The part of every key this pass run shares, or None if the pass is uncacheable."""
    from .. import __version__
    ctx = PassContext.current()
    cls = type(pass_)
    out = [_VERSION, __version__.encode(), f"{cls.__module__}.{cls.__qualname__}".encode(),
           pass_.name.encode()]
    try:
        for f in dataclasses.fields(pass_):
            _enc(f.name, out)
            _enc(getattr(pass_, f.name), out)
        _enc(ctx.opt_level, out)
        _enc(ctx.config, out)
    except _Uncacheable:
        return None
    out.append(b"R" if recording else b"-")
    return _joined(out)


def _module_key(mod: Module) -> bytes:
    """The content of ``mod`` (functions by name and id, type definitions by id)."""
    parts = [b"M"]
    for name, f in sorted(mod.items()):
        s = name.encode()
        parts.append(b"%d:" % len(s) + s + f.id)
    for name, td in sorted(mod.type_definitions().items()):
        s = name.encode()
        parts.append(b"%d:" % len(s) + s + td.id)
    return b"".join(parts)


def _joined(parts: list[bytes]) -> bytes:
    return b"".join([b"%d:" % len(p) + p for p in parts])  # length-prefixed: unambiguous


def _key(*parts: bytes) -> bytes:
    """32 bytes: two XXH3-128 digests of the parts (so that a collision needs two at once)."""
    payload = _joined(list(parts))
    return digest(payload) + digest(b"pyir-pass-cache-key2\0" + payload)


# -- recording segments ------------------------------------------------------------------------
class _Segment:
    """The lineage rows one step added to the recorder: ``record`` (its edges, removed ids and
    sources, or None) and ``rules`` (``(rule name, node id)`` firings, in order)."""

    __slots__ = ("record", "rules")

    def __init__(self, record: PassRecord | None, rules: list[tuple[str, bytes]]) -> None:
        self.record = record
        self.rules = rules


def _mark(rec: Recorder | None) -> Any:
    if rec is None:
        return None
    e = rec.edges
    rules = rec.rules
    return (len(e.news), len(e.olds), e.n, len(rec.removed),
            dict(rec.sources) if rec.sources else None, 0 if rules is None else len(rules.idx))


def _segment(rec: Recorder | None, mark: Any, name: str) -> _Segment:
    """The lineage rows ``rec`` took since ``mark``; raises _Uncacheable if the step overwrote
    sources it did not add."""
    if rec is None:
        return _Segment(None, [])
    nb, ob, n0, r0, src0, k0 = mark
    e = rec.edges
    sources: dict[bytes, Any] | None = None
    if rec.sources:
        if src0 is None:
            sources = dict(rec.sources)
        else:
            if any(rec.sources.get(k, _GONE) is not v for k, v in src0.items()):
                raise _Uncacheable
            sources = {k: v for k, v in rec.sources.items() if k not in src0}
    log = rec.rules
    rules: list[tuple[str, bytes]] = []
    if log is not None and len(log.idx) > k0:
        ids = bytes(log.ids[k0 * 16:])
        rules = [(log.names[k], ids[16 * j:16 * j + 16]) for j, k in enumerate(log.idx[k0:])]
    if e.n == n0 and len(rec.removed) == r0 and not sources:
        return _Segment(None, rules)
    counts = None if e.counts is None else e.counts[n0:].tobytes()
    edges = Edges(bytes(e.news[nb:]), bytes(e.olds[ob:]), counts)
    return _Segment(PassRecord(name, "", edges, rec.removed[r0:], sources or None), rules)


_GONE = object()


def _replay(rec: Recorder | None, seg: _Segment) -> None:
    if rec is None:
        return
    r = seg.record
    if r is not None:
        if len(r.edges):
            rec.edges.extend(r.edges)
        if r.removed:
            rec.removed.extend(sorted(r.removed))
        if r.sources:
            for k, v in r.sources.items():
                rec.sources[k] = thaw_source_value(v)
    if seg.rules:
        log = rec.rules
        if log is None:
            log = rec.rules = RuleLog()
        for rname, rid in seg.rules:
            log.add(rname, rid)


# -- the cached runs -----------------------------------------------------------------------------
def _function_steps(pass_: Any, mod: Module) -> tuple[Callable[[Function, str], Function],
                                                       Callable[[Function], bool], Any] | None:
    """(step(func, name) -> new func, skip(func), context manager) for a pass whose run is a
    loop over functions, or None."""
    from .defuse_ops import DefuseOps, defuse
    from .fuse_ops import FuseOps
    from .infer_type import InferType
    cls = type(pass_)
    if isinstance(pass_, FunctionPass) and cls.run is FunctionPass.run:
        prim = not cls.include_primitive
        return ((lambda f, name: pass_.transform_function(f, mod, name)),
                (lambda f: prim and bool(f.attrs.get("Primitive"))), None)
    if cls is FuseOps:
        level, depth, link = pass_.settings()
        return ((lambda f, name: pass_.fuse_function(f, mod, level, depth, link)),
                (lambda f: bool(f.attrs.get("Primitive"))), gc_paused)
    if cls is DefuseOps:
        from .common import replace_body
        return ((lambda f, name: replace_body(f, defuse(f.body))),
                (lambda f: not f.body._mask & F_FUNC), gc_paused)
    if cls is InferType:
        from ..analysis.typecheck import TypeContext
        from .infer_type import _FillRetTypes, _missing_ret_type
        types = TypeContext.of(mod)

        def step(f: Function, name: str) -> Function:
            types.check(f)
            return _FillRetTypes(types).visit(f) if _missing_ret_type(f) else f

        return step, (lambda f: False), None
    return None


def run_cached(pass_: Any, mod: Module, cache: PassCache) -> Module:
    """``pass_.run(mod)`` through ``cache`` (called by ``Pass._run_recorded`` inside the pass's
    recorder; the pass's record is then made from what the recorder holds, as for a real run)."""
    scope = getattr(pass_, "cache_scope", None)
    rec = current_recorder()
    base = _pass_key(pass_, rec is not None) if scope in ("function", "module") else None
    steps = _function_steps(pass_, mod) if scope == "function" and base is not None else None
    token = _active.set(None)  # passes this pass runs are not cached
    try:
        if base is not None and scope == "module":
            return _run_module(pass_, mod, cache, rec, _key(base, b"module", _module_key(mod)))
        if steps is None or base is None:  # not cacheable: a real run
            return pass_._result(pass_.run(mod))
        step, skip, cm = steps
        if cm is None:
            return _run_functions(pass_, mod, cache, rec, base, step, skip)
        with cm():
            return _run_functions(pass_, mod, cache, rec, base, step, skip)
    finally:
        _active.reset(token)


def _run_functions(pass_: Any, mod: Module, cache: PassCache, rec: Recorder | None, base: bytes,
                   step: Callable[[Function, str], Function], skip: Callable[[Function], bool]) -> Module:
    updates: dict[str, Function] = {}
    whole: bytes | None = None
    for name, f in mod.items():
        if skip(f):
            continue
        ctx = b""
        mask = f._mask | f.body._mask
        if mask & _CONTEXT_MASK:
            sig = _signatures(cache, mod, f) if not mask & _WHOLE_MASK else None
            if sig is not None:
                ctx = sig
            else:
                if whole is None:
                    whole = _module_key(mod)
                ctx = whole
        key = _key(base, b"function", name.encode(), f.id, ctx)
        got = cache._load(key, (name,))
        if got is not None:
            m, seg, _ = got
            nf = m.functions().get(name, f)
            _replay(rec, seg)
        else:
            mark = _mark(rec)
            nf = step(f, name)
            try:
                s = _segment(rec, mark, pass_.name)
            except _Uncacheable:
                pass
            else:
                cache._save(key, pass_.name, {} if nf is f else {name: nf}, s)
        if nf is not f:
            updates[name] = nf
    return mod.with_functions(updates) if updates else mod


def _run_module(pass_: Any, mod: Module, cache: PassCache, rec: Recorder | None, key: bytes) -> Module:
    got = cache._load(key, None)
    if got is not None:
        m, seg, same = got
        _replay(rec, seg)
        if same:
            return mod
        funcs: dict[str, Function | None] = {n: None for n in mod.names() if n not in m}
        funcs.update(m.functions())
        out = mod.with_functions(funcs)
        return mod._derive(mod.functions()) if out is mod else out  # (the pass built a new module)
    mark = _mark(rec)
    out = pass_._result(pass_.run(mod))
    if out.pass_records is not mod.pass_records or out.type_definitions() is not mod.type_definitions():
        return out  # the pass made records of its own or changed type definitions: not cached
    try:
        s = _segment(rec, mark, pass_.name)
    except _Uncacheable:
        return out
    cache._save(key, pass_.name, {} if out is mod else out.functions(), s, same=out is mod)
    return out


def _signatures(cache: PassCache, mod: Module, f: Function) -> bytes | None:
    """The types of the globals ``f`` calls, as key bytes (None if one cannot be typed)."""
    names = cache._globals.get(f.id)
    if names is None:
        from ..ir.traverse import global_vars
        names = cache._globals[f.id] = tuple(sorted({g.name_hint for g in global_vars(f)}))
    parts = [b"G"]
    for n in names:
        try:
            t = mod.global_type(n)
        except PyIRError:
            return None
        s = n.encode()
        parts.append(b"%d:" % len(s) + s + t.id)
    return b"".join(parts)

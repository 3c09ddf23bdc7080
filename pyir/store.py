"""A content-addressed snapshot store for modules, on SQLite (one file, nothing to start).

>>> import pyir, tempfile, os
>>> from pyir.transform import FoldConstant, SimplifyInference
>>> m = pyir.testing.resnet(1)
>>> out = FoldConstant()(SimplifyInference()(m))
>>> path = os.path.join(tempfile.mkdtemp(), "store.db")
>>> with pyir.Store(path) as st:
...     a = st.put(m, name="main")
...     b = st.put(out, name="main")        # writes only the nodes the file lacks
...     back = st.get("main")
...     [e.passes for e in st.log("main")], back["main"] is out["main"]
([('SimplifyInference', 'FoldConstant'), ()], True)

Layout (every table one of SQLite's, so SQL can answer questions over them):

``nodes(nid, id, kind, rec, data, blob, chk)``
    One row per distinct node, keyed by its content id (a variable: its uid): the record of
    :mod:`pyir.serialize.records` (the binary format's fields, references as indices into the
    node's ``kids``); a small constant's bytes inline in ``data``, a large one's in ``blobs``
    (content-addressed, so equal data is stored once); ``chk`` an XXH3-64 of a variable's
    record (a variable's id is its uid, not a digest of its fields).  ``nid`` (the row id)
    grows children first: every node's references have smaller ``nid`` s, so rebuilding is
    one ordered scan.
``kids(parent, pos, child)``
    The references of each record, as row ids: what the recursive queries follow.
``records``, ``links(old, rid, e, new)``, ``removed(rid, id)``
    Each pass record once (keyed by a digest of its content), with its edges as the binary
    format stores them (new ids, old ids, counts: one read rebuilds them); each edge's
    ``old -> new`` links one row each, indexed by old and by new id, and its eliminated ids:
    lineage queries (:meth:`Store.find`, :meth:`Store.history`) follow the links with SQL.
``snapshots``, ``snap_funcs``, ``snap_types``, ``snap_records``, ``refs``
    A snapshot is a module: its functions, type definitions and pass history (as
    references), its parent snapshot and time; its id is a digest of those (so putting the
    same module again with the same parent is the same snapshot).  ``refs`` are names.
``cache(key, value)``
    Opaque bytes for :class:`pyir.transform.cache.PassCache`.

Every write is one transaction (``BEGIN IMMEDIATE``), the journal is SQLite's write-ahead
log, so a writer killed at any point loses nothing committed and leaves the file
consistent; several processes may read and write one file at once (WAL readers never block;
writers queue on the lock with a busy timeout, and retry).  ``synchronous=NORMAL`` by default:
in WAL mode a killed process never loses a committed transaction (the WAL is in the OS's
buffers), only a power loss or OS crash may roll back the last ones (never corrupting the
file); pass ``synchronous="FULL"`` to survive those too, at an fsync per commit.

Lineage queries: a recursive SQL query over ``links`` by old id (forward, for ``find`` and
for ``history`` of an old expression) or by new id (backward, for ``history`` of a node a
pass made) collects the ids the query can reach across the snapshot's pass records;
only the edges touching them are read, into records holding just those edges, on which
:mod:`pyir.ir.lineage`'s own walks run (so the rules for shared and instance edges are the
module's, and the answers are the module's, in the same order); ``find``'s hits are then
filtered, in SQL, to the expressions the snapshot's functions reach.  No snapshot is rebuilt.

One file, one writer at a time: SQLite serializes writers (each put holds the write lock for
its transaction) and wants a local file system (its locks are unreliable over NFS).  For many
machines writing at once, or stores much larger than one disk, a client-server database (the
same tables on PostgreSQL) or a content-addressed object store (node records as objects keyed
by id, refs in a small database) is the right tool.

Loaded is constructed: :meth:`Store.get` builds every node through the constructors (the
binary decoder's checks), checks each node's id against its row and each snapshot's id
against its rows; any defect raises :class:`~pyir.errors.StoreError`.  Nothing is pickled.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyrsistent import pvector
from xxhash import xxh3_64_digest, xxh3_128_digest

from .analysis.diff import Diff, diff
from .errors import LineageError, PyIRError, SerializationError, StoreError
from .ir.expr import Call, Expr, Op
from .ir.lineage import _MARKS, Edges, PassRecord, Step, _forward, _id_of, thaw_source_value
from .ir.lineage import history as _lineage_history
from .ir.module import Module
from .ir.node import Node, gc_paused
from .serialize.binary import K_VAR, KIND_NAMES, _edge_parts, _format_table
from .serialize.records import decode_record, encode_record, record_refs

__all__ = ["Store", "LogEntry", "StoreDiff", "CheckReport", "SCHEMA_VERSION"]

SCHEMA_VERSION = 1
_BIG = 64  # constants with at least this many bytes keep them in the blobs table

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS nodes(nid INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, kind INTEGER NOT NULL,
    rec BLOB NOT NULL, data BLOB, blob INTEGER, chk BLOB);
CREATE TABLE IF NOT EXISTS kids(parent INTEGER NOT NULL, pos INTEGER NOT NULL, child INTEGER NOT NULL,
    PRIMARY KEY(parent, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs(bid INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS records(rid INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, name TEXT NOT NULL,
    options TEXT NOT NULL, seconds REAL NOT NULL, nedges INTEGER NOT NULL, sources TEXT,
    rule_names TEXT, rule_ids BLOB, rule_idx BLOB, typed_edge INTEGER, news BLOB NOT NULL,
    olds BLOB NOT NULL, counts BLOB);
CREATE TABLE IF NOT EXISTS links(old BLOB NOT NULL, rid INTEGER NOT NULL, e INTEGER NOT NULL,
    new BLOB NOT NULL, PRIMARY KEY(old, rid, e)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_new ON links(new);
CREATE TABLE IF NOT EXISTS removed(rid INTEGER NOT NULL, id BLOB NOT NULL,
    PRIMARY KEY(rid, id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots(sid INTEGER PRIMARY KEY, hash BLOB NOT NULL UNIQUE, parent INTEGER,
    time REAL NOT NULL, nnodes INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS snap_funcs(sid INTEGER NOT NULL, pos INTEGER NOT NULL, name TEXT NOT NULL,
    nid INTEGER NOT NULL, PRIMARY KEY(sid, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snap_types(sid INTEGER NOT NULL, pos INTEGER NOT NULL, nid INTEGER NOT NULL,
    PRIMARY KEY(sid, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snap_records(sid INTEGER NOT NULL, pos INTEGER NOT NULL, rid INTEGER NOT NULL,
    PRIMARY KEY(sid, pos)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS refs(name TEXT PRIMARY KEY, sid INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS cache(key BLOB PRIMARY KEY, value BLOB NOT NULL);
"""

def _expr_kinds() -> tuple[int, ...]:
    from .ir.kinds import KINDS

    out = []
    for code, name in enumerate(KIND_NAMES):
        cls = None if name is None else KINDS.get(name)
        if cls is not None and issubclass(cls, Expr):
            out.append(code)
    return tuple(out)


#: the kind codes of the expression nodes (what a module's lineage queries can name)
_EXPR_KINDS = _expr_kinds()
_EXPRS = ",".join(map(str, _EXPR_KINDS))
#: the expressions a module's functions reach through children (``children()``, as ``mod.find``
#: sees them): not through a call's operator or attributes, an Attrs' values or a type
_CHILD_REACH = (
    "WITH RECURSIVE reach(n) AS (SELECT nid FROM snap_funcs WHERE sid = :sid UNION "
    "SELECT kids.child FROM reach JOIN kids ON kids.parent = reach.n "
    "JOIN nodes AS p ON p.nid = kids.parent JOIN nodes AS c ON c.nid = kids.child "
    f"WHERE c.kind IN ({_EXPRS}) AND p.kind IN ({_EXPRS}) "
    f"AND NOT (p.kind = {Call._code} AND kids.pos = 0 AND c.kind = {Op._code})) ")


def _reach(roots_sql: str) -> str:
    """A recursive CTE ``reach(n)``: the row ids of every node reachable from ``roots_sql``."""
    return (f"WITH RECURSIVE reach(n) AS ({roots_sql} UNION "
            "SELECT kids.child FROM kids JOIN reach ON kids.parent = reach.n) ")


_ROOTS = ("SELECT nid FROM snap_funcs WHERE sid = :sid UNION SELECT nid FROM snap_types WHERE sid = :sid")


@dataclass(frozen=True)
class LogEntry:
    """One snapshot in :meth:`Store.log`: its id (hex), the names (refs) pointing to it, the
    time it was first put (seconds since the epoch), its parent's id, its number of distinct
    nodes (the node rows it uses: expressions, operators, types, attributes) and the names of
    the passes of its history."""

    id: str
    names: tuple[str, ...]
    time: float
    parent: str | None
    nodes: int
    passes: tuple[str, ...]

    def __str__(self) -> str:
        names = f" ({', '.join(self.names)})" if self.names else ""
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.time))
        return f"{self.id[:12]}{names} {when} {self.nodes} nodes: {' -> '.join(self.passes) or '(no passes)'}"


@dataclass(frozen=True)
class StoreDiff:
    """:meth:`Store.diff`: the module diff (:func:`pyir.diff`) of the two rebuilt snapshots,
    and the node ids (sorted) the second holds and the first does not (``new``), and the
    other way round (``dropped``), from a set difference in SQL."""

    diff: Diff
    new: list[bytes]
    dropped: list[bytes]

    def __str__(self) -> str:
        return f"{len(self.new)} new nodes, {len(self.dropped)} dropped\n{self.diff}"


@dataclass
class CheckReport:
    """:meth:`Store.check`: what was checked and every problem found (each names its table
    and row); ``ok`` when there is none."""

    nodes: int = 0
    blobs: int = 0
    records: int = 0
    snapshots: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_bad(self) -> CheckReport:
        """Raise :class:`~pyir.errors.StoreError` listing the problems, if any; else return self."""
        if self.problems:
            raise StoreError(f"store check failed ({len(self.problems)} problems): "
                             + "; ".join(self.problems[:20]))
        return self

    def __str__(self) -> str:
        head = (f"checked {self.nodes} nodes, {self.blobs} blobs, {self.records} pass records, "
                f"{self.snapshots} snapshots: ")
        return head + ("ok" if self.ok else f"{len(self.problems)} problems\n" + "\n".join(self.problems))


class _Lineage:
    """The part of a module the lineage functions read: its pass records."""

    def __init__(self, records: list[PassRecord]) -> None:
        self.pass_records = records


def _record_hash(rec: PassRecord) -> bytes:
    """A digest of a pass record's content (the rules as the id -> name mapping they define)."""
    news, olds, counts = _edge_parts(rec.edges)
    counts = _norm_counts(counts)
    src = None if rec.sources is None else sorted(
        (k.hex(), thaw_source_value(v)) for k, v in rec.sources.items())
    rules = sorted(rec.rules().items())
    head = json.dumps([rec.name, rec.options, rec.seconds.hex(), len(news), len(olds), src,
                       [n for _, n in rules]], separators=(",", ":"))
    parts = [b"pyir-record\0", head.encode("utf-8", "surrogatepass"), b"\0", news, olds, counts or b"",
             b"".join(sorted(rec.removed)), b"".join([i for i, _ in rules])]
    return xxh3_128_digest(b"".join(parts))


def _norm_counts(counts: bytes | None) -> bytes | None:
    if counts is None:
        return None
    c = array("I")
    c.frombytes(counts)
    return None if c.count(1) == len(c) else counts


def _links(rid: int, news: bytes, per: list[bytes]) -> list[tuple[bytes, int, int, bytes]]:
    """The ``links`` rows of a record: (old id, rid, edge, new id) per old id of each edge (an
    edge mark is not an id: left out; an edge without old ids: one row with an empty old id),
    sorted (B-tree locality)."""
    out = []
    for e, o in enumerate(per):
        new = news[16 * e:16 * e + 16]
        olds = [o[p:p + 16] for p in range(0, len(o), 16) if o[p:p + 16] not in _MARKS]
        out += [(x, rid, e, new) for x in olds] if olds else [(b"", rid, e, new)]
    out.sort()
    return out


def _olds_per_edge(news: bytes, olds: bytes, counts: bytes | None) -> list[bytes]:
    ne = len(news) // 16
    if counts is None:
        return [olds[16 * e:16 * e + 16] for e in range(ne)]
    c = array("I")
    c.frombytes(counts)
    out = []
    p = 0
    for n in c:
        out.append(olds[p:p + 16 * n])
        p += 16 * n
    return out


class Store:
    """A content-addressed snapshot store in one SQLite file (created if missing).

    ``put(mod, name=None, parent=None)`` stores a module (only the nodes the file lacks) and
    returns its snapshot id; ``get(ref)`` rebuilds it; ``refs()``, ``log()``, ``diff()``;
    ``find()`` / ``history()`` answer lineage queries over the stored edges; ``check()``
    verifies every row.  Usable as a context manager; ``close()`` closes the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 120.0,
                 synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise StoreError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.timeout = float(timeout)
        self._sync = synchronous
        self._lock = threading.RLock()
        self._known: dict[bytes, int] = {}  # content id -> nid of committed node rows
        self._rec_hash: dict[int, tuple[PassRecord, bytes]] = {}
        self._rec_rid: dict[bytes, int] = {}
        self._rec_obj: dict[int, PassRecord] = {}  # rid -> the record rebuilt from it
        try:
            self._db: sqlite3.Connection | None = sqlite3.connect(
                self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as e:
            raise StoreError(f"cannot open store {self.path!r}: {e}") from None
        try:
            self._retry(self._open)
        except BaseException:
            self._db.close()
            self._db = None
            raise

    # -- plumbing ------------------------------------------------------------------------------
    def _open(self) -> None:
        db = self._conn()
        db.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreError(f"store {self.path!r}: cannot use the write-ahead log (journal mode {mode})")
        db.execute(f"PRAGMA synchronous = {self._sync}")
        db.execute("PRAGMA cache_size = -65536")  # 64 MiB of page cache: random-key inserts stay in memory
        db.execute("PRAGMA temp_store = MEMORY")
        ver = None
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            ver = row and row[0]
        except sqlite3.OperationalError:
            pass
        if ver is None:
            db.execute("BEGIN IMMEDIATE")
            try:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        db.execute(stmt)
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        elif ver != str(SCHEMA_VERSION):
            raise StoreError(f"store {self.path!r} has schema version {ver}; this pyir reads "
                             f"{SCHEMA_VERSION}")

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreError(f"store {self.path!r} is closed")
        return self._db

    def _retry(self, fn: Callable[[], Any]) -> Any:
        """Run ``fn`` (a whole transaction), retrying while another process holds the lock."""
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                with self._lock:
                    return fn()
            except sqlite3.OperationalError as e:
                msg = str(e).lower()
                if ("locked" not in msg and "busy" not in msg) or time.monotonic() > deadline:
                    raise StoreError(f"store {self.path!r}: {e}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.2)
            except sqlite3.DatabaseError as e:
                raise StoreError(f"store {self.path!r}: {type(e).__name__}: {e}") from None

    def _txn(self, fn: Callable[[sqlite3.Connection], Any], write: bool) -> Any:
        def run() -> Any:
            db = self._conn()
            db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                out = fn(db)
                db.execute("COMMIT")
                return out
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
        return self._retry(run)

    def close(self) -> None:
        """Close the file (a closed store raises StoreError on use)."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> Any:  # a store pickles as its path (each process opens the file)
        return (_reopen, (self.path, self.timeout, self._sync))

    def __repr__(self) -> str:
        return f"<pyir.Store {self.path!r}{' closed' if self._db is None else ''}>"

    # -- put -----------------------------------------------------------------------------------
    def put(self, mod: Module, name: str | None = None, parent: str | None = None) -> str:
        """Store ``mod`` (writing only the nodes and pass records the file lacks) and return
        its snapshot id (32 hex digits).  ``name`` sets (or moves) a named ref to it;
        ``parent`` (a ref) is its parent snapshot, by default the snapshot ``name`` named."""
        if not isinstance(mod, Module):
            raise StoreError(f"Store.put takes a Module, got {type(mod).__name__}")
        if name is not None and (type(name) is not str or not name):
            raise StoreError(f"a ref name must be a non-empty str, got {name!r}")
        names = mod.names()
        funcs = [(n, mod[n]) for n in names]
        tdefs = mod.type_definitions()
        types = [tdefs[k] for k in sorted(tdefs)]
        records = list(mod.pass_records)
        rhashes = [self._hash_of(r) for r in records]
        roots: list[Node] = [f for _, f in funcs] + types
        with gc_paused():
            table = _format_table(roots)
        nnodes = len(table)
        written: dict[bytes, int] = {}
        seen_records: list[tuple[bytes, int]] = []

        def txn(db: sqlite3.Connection) -> str:
            written.clear()
            if parent is not None:
                psid: int | None = self._sid(db, parent)
            elif name is not None:
                row = db.execute("SELECT sid FROM refs WHERE name = ?", (name,)).fetchone()
                psid = row[0] if row else None
            else:
                psid = None
            phash = b"" if psid is None else db.execute(
                "SELECT hash FROM snapshots WHERE sid = ?", (psid,)).fetchone()[0]
            have = self._write_nodes(db, table, written)
            rids = [self._write_record(db, r, h) for r, h in zip(records, rhashes)]
            seen_records[:] = list(zip(rhashes, rids))
            h = _snapshot_hash([(n, f.id) for n, f in funcs], [t.id for t in types], rhashes, phash)
            row = db.execute("SELECT sid FROM snapshots WHERE hash = ?", (h,)).fetchone()
            if row is None:
                cur = db.execute("INSERT INTO snapshots(hash, parent, time, nnodes) VALUES (?, ?, ?, ?)",
                                 (h, psid, time.time(), nnodes))
                sid = cur.lastrowid
                db.executemany("INSERT INTO snap_funcs VALUES (?, ?, ?, ?)",
                               [(sid, i, n, have[f.id]) for i, (n, f) in enumerate(funcs)])
                db.executemany("INSERT INTO snap_types VALUES (?, ?, ?)",
                               [(sid, i, have[t.id]) for i, t in enumerate(types)])
                db.executemany("INSERT INTO snap_records VALUES (?, ?, ?)",
                               [(sid, i, r) for i, r in enumerate(rids)])
            else:
                sid = row[0]
            if name is not None:
                db.execute("INSERT OR REPLACE INTO refs VALUES (?, ?)", (name, sid))
            return h.hex()

        try:
            with gc_paused():
                out: str = self._txn(txn, write=True)
        except (SerializationError, LineageError) as e:
            raise StoreError(f"cannot store the module: {e}") from None
        self._known.update(written)  # only once committed: a rolled-back put leaves no trace
        self._rec_rid.update(seen_records)
        return out

    def _hash_of(self, rec: PassRecord) -> bytes:
        got = self._rec_hash.get(id(rec))
        if got is not None and got[0] is rec:
            return got[1]
        h = _record_hash(rec)
        self._rec_hash[id(rec)] = (rec, h)
        return h

    def _write_nodes(self, db: sqlite3.Connection, table: list[Node],
                     written: dict[bytes, int]) -> dict[bytes, int]:
        """Insert the rows of the nodes of ``table`` (children first) the file lacks, in that
        order (so every row's references are earlier rows); returns id -> nid for all of them.

        Which nodes the file has is asked in batches (``id IN (...)``), inside the write
        transaction, so a concurrent writer's rows are seen and never duplicated."""
        known = self._known
        have: dict[bytes, int] = {}
        q = db.execute
        ask = [n.id for n in table if n.id not in known]
        for at in range(0, len(ask), 500):
            part = ask[at:at + 500]
            have.update(q(f"SELECT id, nid FROM nodes WHERE id IN ({','.join('?' * len(part))})", part))
        nid = q("SELECT coalesce(max(nid), 0) FROM nodes").fetchone()[0]
        node_rows: list[tuple[Any, ...]] = []
        kid_rows: list[tuple[int, int, int]] = []
        blob_of: dict[bytes, int | None] = {}
        for n in table:
            i = n.id
            j = known.get(i)
            if j is not None:
                have[i] = j
                continue
            if i in have:
                continue
            kids = record_refs(n)
            k, rec, data = encode_record(n, kids)
            nid += 1
            have[i] = nid
            written[i] = nid
            blob = None
            chk = xxh3_64_digest(i + rec) if k == K_VAR else None
            if data is not None and len(data) >= _BIG:
                bh = xxh3_128_digest(data)
                blob = blob_of.get(bh)
                if blob is None:
                    row = q("SELECT bid FROM blobs WHERE hash = ?", (bh,)).fetchone()
                    blob = row[0] if row else q("INSERT INTO blobs(hash, data) VALUES (?, ?)",
                                                (bh, data)).lastrowid
                    blob_of[bh] = blob
                data = None
            node_rows.append((nid, i, k, rec, data, blob, chk))
            kid_rows += [(nid, p, have[c.id]) for p, c in enumerate(kids)]
            if len(node_rows) >= 20000:
                db.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?)", node_rows)
                db.executemany("INSERT INTO kids VALUES (?, ?, ?)", kid_rows)
                node_rows.clear()
                kid_rows.clear()
        db.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?)", node_rows)
        db.executemany("INSERT INTO kids VALUES (?, ?, ?)", kid_rows)
        return have

    def _write_record(self, db: sqlite3.Connection, rec: PassRecord, h: bytes) -> int:
        rid = self._rec_rid.get(h)
        if rid is not None:
            return rid
        row = db.execute("SELECT rid FROM records WHERE hash = ?", (h,)).fetchone()
        if row is not None:
            return int(row[0])
        news, olds, counts = _edge_parts(rec.edges)
        per = _olds_per_edge(news, olds, _norm_counts(counts))
        src = None
        if rec.sources is not None:
            try:
                src = json.dumps([[k.hex(), thaw_source_value(v)] for k, v in rec.sources.items()],
                                 allow_nan=False, separators=(",", ":"))
            except (TypeError, ValueError) as e:
                raise StoreError(f"pass {rec.name!r}: lineage sources must be JSON-able: {e}") from None
        rules = rec._rules
        cur = db.execute(
            "INSERT INTO records(hash, name, options, seconds, nedges, sources, rule_names, rule_ids, "
            "rule_idx, typed_edge, news, olds, counts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (h, rec.name, rec.options, rec.seconds, len(per), src,
             None if rules is None else json.dumps(list(rules[0])),
             None if rules is None else rules[1], None if rules is None else rules[2],
             next((e for e, o in enumerate(per) if o[:16] in _MARKS), None),
             news, olds, _norm_counts(counts)))
        rid = int(cur.lastrowid)  # type: ignore[arg-type]
        db.executemany("INSERT OR IGNORE INTO links VALUES (?, ?, ?, ?)", _links(rid, news, per))
        db.executemany("INSERT INTO removed VALUES (?, ?)", [(rid, r) for r in rec.removed])
        return rid

    # -- refs and get --------------------------------------------------------------------------
    def _sid(self, db: sqlite3.Connection, ref: Any) -> int:
        """The row id of the snapshot ``ref`` names: a ref name, a snapshot id or a unique prefix."""
        if type(ref) is not str or not ref:
            raise StoreError(f"a snapshot ref is a ref name or a hex snapshot id (prefix), got {ref!r:.80}")
        row = db.execute("SELECT sid FROM refs WHERE name = ?", (ref,)).fetchone()
        if row is not None:
            return int(row[0])
        low = ref.lower()
        if all(c in "0123456789abcdef" for c in low):
            if len(low) == 32:
                row = db.execute("SELECT sid FROM snapshots WHERE hash = ?", (bytes.fromhex(low),)).fetchone()
                if row is not None:
                    return int(row[0])
            elif len(low) >= 4:
                rows = db.execute("SELECT sid FROM snapshots WHERE lower(hex(hash)) LIKE ? LIMIT 2",
                                  (low + "%",)).fetchall()
                if len(rows) == 1:
                    return int(rows[0][0])
                if rows:
                    raise StoreError(f"snapshot id prefix {ref!r} is ambiguous")
        raise StoreError(f"no snapshot or ref {ref!r} in store {self.path!r}")

    def refs(self) -> dict[str, str]:
        """Ref name -> snapshot id (hex), sorted by name."""
        def txn(db: sqlite3.Connection) -> dict[str, str]:
            rows = db.execute("SELECT refs.name, snapshots.hash FROM refs JOIN snapshots USING (sid) "
                              "ORDER BY refs.name").fetchall()
            return {n: h.hex() for n, h in rows}
        out: dict[str, str] = self._txn(txn, write=False)
        return out

    def get(self, ref: str) -> Module:
        """Rebuild the snapshot ``ref`` names (ref name, snapshot id or unique id prefix): the
        same functions (nodes alive in this process come back as those very objects), the
        same ids, the same pass history.  StoreError if any of its rows is corrupted."""
        with gc_paused():
            out: Module = self._txn(lambda db: self._get(db, self._sid(db, ref)), write=False)
        return out

    def _get(self, db: sqlite3.Connection, sid: int) -> Module:
        h, = db.execute("SELECT hash FROM snapshots WHERE sid = ?", (sid,)).fetchone()
        funcs, types, rids = _snap_rows(db, sid)
        prow = db.execute("SELECT s.hash FROM snapshots AS t JOIN snapshots AS s ON s.sid = t.parent "
                          "WHERE t.sid = ?", (sid,)).fetchone()
        built = self._build(db, sid)
        try:
            fnodes = {n: built[j] for n, j in funcs}
            tnodes = [built[j] for j in types]
        except KeyError as e:
            raise StoreError(f"snapshot {h.hex()}: its root node row {e} is missing") from None
        records = [self._record(db, r) for r in rids]
        hashes = [db.execute("SELECT hash FROM records WHERE rid = ?", (r,)).fetchone()[0] for r in rids]
        want = _snapshot_hash([(n, f.id) for n, f in fnodes.items()], [t.id for t in tnodes], hashes,
                              b"" if prow is None else prow[0])
        if want != h:
            raise StoreError(f"snapshot {h.hex()}: its rows do not match its id (corrupted snapshot rows)")
        try:
            mod = Module(fnodes, tnodes or None)  # type: ignore[arg-type]
        except PyIRError as e:
            raise StoreError(f"snapshot {h.hex()}: invalid module: {e}") from None
        return mod._derive(mod.functions(), history=pvector(records))

    def _build(self, db: sqlite3.Connection, sid: int) -> dict[int, Node]:
        """nid -> node for every node of snapshot ``sid``, built in nid order (children first)."""
        db.execute("CREATE TEMP TABLE IF NOT EXISTS _reach(n INTEGER PRIMARY KEY)")
        db.execute("DELETE FROM _reach")
        db.execute("INSERT INTO _reach " + _reach(_ROOTS) + "SELECT n FROM reach", {"sid": sid})
        rows = db.execute("SELECT nodes.nid, nodes.id, nodes.kind, nodes.rec, nodes.data, blobs.data, "
                          "nodes.blob, nodes.chk FROM _reach JOIN nodes ON nodes.nid = _reach.n "
                          "LEFT JOIN blobs ON blobs.bid = nodes.blob ORDER BY nodes.nid")
        kids = db.execute("SELECT kids.parent, kids.child FROM _reach JOIN kids ON kids.parent = _reach.n "
                          "ORDER BY kids.parent, kids.pos").fetchall()
        built: dict[int, Node] = {}
        p = 0
        nk = len(kids)
        for nid, i, k, rec, data, bdata, bid, chk in rows:
            while p < nk and kids[p][0] < nid:
                p += 1
            ks = []
            while p < nk and kids[p][0] == nid:
                c = built.get(kids[p][1])
                if c is None:
                    raise StoreError(f"node row {nid} (id {i.hex()}) references node row {kids[p][1]}, "
                                     "which is missing or not an earlier row")
                ks.append(c)
                p += 1
            if bid is not None:
                if bdata is None:
                    raise StoreError(f"node row {nid} (id {i.hex()}): its data (blob row {bid}) is missing")
                data = bdata
            n = _node_of(nid, i, k, rec, data, ks, chk)
            built[nid] = n
        return built

    def _record(self, db: sqlite3.Connection, rid: int, edges: list[int] | None = None,
                ids: set[bytes] | None = None) -> PassRecord:
        """The pass record of row ``rid`` (with only edge rows ``edges`` and the removed and rule
        ids in ``ids``, for a lineage query)."""
        if edges is None:
            got = self._rec_obj.get(rid)
            if got is not None:
                return got
        row = db.execute("SELECT name, options, seconds, nedges, sources, rule_names, rule_ids, rule_idx, "
                         "news, olds, counts FROM records WHERE rid = ?", (rid,)).fetchone()
        if row is None:
            raise StoreError(f"pass record row {rid} is missing")
        name, options, seconds, nedges, src, rnames, rids, ridx, news, olds, counts = row
        try:
            if edges is None:
                es = Edges(bytes(news), bytes(olds), None if counts is None else bytes(counts))
                if len(es) != nedges:
                    raise StoreError(f"pass record row {rid} ({name}): {len(es)} edges, its row says "
                                     f"{nedges}")
                removed = [r[0] for r in db.execute("SELECT id FROM removed WHERE rid = ?", (rid,))]
            else:
                per = _olds_per_edge(news, olds, counts)
                if len(per) != nedges or len(news) != 16 * nedges:
                    raise StoreError(f"pass record row {rid} ({name}): its edges do not match its row")
                cnt = [len(per[e]) // 16 for e in edges]
                es = Edges(b"".join([news[16 * e:16 * e + 16] for e in edges]),
                           b"".join([per[e] for e in edges]),
                           None if all(c == 1 for c in cnt) else array("I", cnt).tobytes())
                removed = [r[0] for r in db.execute("SELECT id FROM removed WHERE rid = ?", (rid,))
                           if ids is not None and r[0] in ids] if ids else []
            sources = None
            if src is not None:
                sources = {bytes.fromhex(k): v for k, v in json.loads(src)}
            rules = None
            if rnames is not None:
                names = json.loads(rnames)
                idx = memoryview(ridx).cast("H")
                rules = {}
                for q in range(len(idx)):
                    key = rids[16 * q:16 * q + 16]
                    if ids is None or key in ids:
                        rules[key] = names[idx[q]]
            rec = PassRecord(name, options, es, removed, sources, seconds, rules or None)
        except StoreError:
            raise
        except (PyIRError, ValueError, TypeError, IndexError, KeyError) as e:
            raise StoreError(f"pass record row {rid}: {type(e).__name__}: {e}") from None
        if edges is None:
            h = db.execute("SELECT hash FROM records WHERE rid = ?", (rid,)).fetchone()[0]
            if _record_hash(rec) != h:
                raise StoreError(f"pass record row {rid} ({name}): its rows do not hash to its key "
                                 "(corrupted rows)")
            self._rec_obj[rid] = rec
        return rec

    # -- log, diff -----------------------------------------------------------------------------
    def log(self, ref: str | None = None) -> list[LogEntry]:
        """Snapshots newest first: from ``ref`` following parents, or (no ref) every snapshot."""
        def txn(db: sqlite3.Connection) -> list[LogEntry]:
            names: dict[int, list[str]] = {}
            for n, s in db.execute("SELECT name, sid FROM refs ORDER BY name"):
                names.setdefault(s, []).append(n)
            if ref is None:
                sids = [r[0] for r in db.execute("SELECT sid FROM snapshots ORDER BY time DESC, sid DESC")]
            else:
                sids = []
                at: int | None = self._sid(db, ref)
                seen = set()
                while at is not None and at not in seen:
                    seen.add(at)
                    sids.append(at)
                    row = db.execute("SELECT parent FROM snapshots WHERE sid = ?", (at,)).fetchone()
                    at = row[0] if row else None
            out = []
            for s in sids:
                h, par, t, nn = db.execute("SELECT hash, parent, time, nnodes FROM snapshots WHERE sid = ?",
                                           (s,)).fetchone()
                ph = None if par is None else db.execute("SELECT hash FROM snapshots WHERE sid = ?",
                                                         (par,)).fetchone()
                passes = tuple(r[0] for r in db.execute(
                    "SELECT records.name FROM snap_records JOIN records USING (rid) WHERE sid = ? "
                    "ORDER BY pos",
                    (s,)))
                out.append(LogEntry(h.hex(), tuple(names.get(s, ())), t, None if ph is None else ph[0].hex(),
                                    nn, passes))
            return out
        got: list[LogEntry] = self._txn(txn, write=False)
        return got

    def diff(self, a: str, b: str) -> StoreDiff:
        """Compare snapshots ``a`` and ``b``: :func:`pyir.diff` of the rebuilt modules, and the
        node ids new in ``b`` / dropped from ``a`` (an SQL set difference of their nodes)."""
        def txn(db: sqlite3.Connection) -> StoreDiff:
            sa, sb = self._sid(db, a), self._sid(db, b)
            ma, mb = self._get(db, sa), self._get(db, sb)

            def minus(x: int, y: int) -> list[bytes]:
                sql = ("WITH RECURSIVE ra(n) AS (SELECT nid FROM snap_funcs WHERE sid = :x UNION SELECT nid "
                       "FROM snap_types WHERE sid = :x UNION SELECT kids.child FROM kids JOIN ra ON "
                       "kids.parent = ra.n), rb(n) AS (SELECT nid FROM snap_funcs WHERE sid = :y UNION "
                       "SELECT nid FROM snap_types WHERE sid = :y UNION SELECT kids.child FROM kids "
                       "JOIN rb ON kids.parent = rb.n) SELECT nodes.id FROM nodes WHERE nodes.nid IN "
                       "(SELECT n FROM ra EXCEPT SELECT n FROM rb) ORDER BY nodes.id")
                return [r[0] for r in db.execute(sql, {"x": x, "y": y})]
            return StoreDiff(diff(ma, mb), minus(sb, sa), minus(sa, sb))
        with gc_paused():
            got: StoreDiff = self._txn(txn, write=False)
        return got

    # -- lineage over stored edges -------------------------------------------------------------
    def _cone(self, db: sqlite3.Connection, sid: int, start: bytes, backward: bool) -> set[bytes]:
        """The ids reachable from ``start`` through the edges of snapshot ``sid``'s records,
        forward (new ids from old) or backward (old ids from new), in SQL."""
        if backward:
            sql = ("WITH RECURSIVE c(id) AS (SELECT :q UNION SELECT links.old FROM c "
                   "JOIN links ON links.new = c.id "
                   "WHERE links.rid IN (SELECT rid FROM snap_records WHERE sid = :sid)) SELECT id FROM c")
        else:
            sql = ("WITH RECURSIVE c(id) AS (SELECT :q UNION SELECT links.new FROM c "
                   "JOIN links ON links.old = c.id "
                   "WHERE links.rid IN (SELECT rid FROM snap_records WHERE sid = :sid)) SELECT id FROM c")
        return {r[0] for r in db.execute(sql, {"q": start, "sid": sid})}

    def _partial(self, db: sqlite3.Connection, sid: int, cone: set[bytes], by_new: bool) -> list[PassRecord]:
        """Snapshot ``sid``'s pass records with only the edges touching ``cone`` (their new id in
        it, or one of their old ids), the removed ids and rule names of ``cone``."""
        db.execute("CREATE TEMP TABLE IF NOT EXISTS _cone(id BLOB PRIMARY KEY)")
        db.execute("DELETE FROM _cone")
        db.executemany("INSERT INTO _cone VALUES (?)", [(i,) for i in cone])
        rids = [r[0] for r in db.execute("SELECT rid FROM snap_records WHERE sid = ? ORDER BY pos", (sid,))]
        if by_new:
            sql = ("SELECT DISTINCT links.rid, links.e FROM _cone JOIN links ON links.new = _cone.id "
                   "WHERE links.rid IN (SELECT rid FROM snap_records WHERE sid = ?)")
        else:
            sql = ("SELECT DISTINCT links.rid, links.e FROM _cone JOIN links ON links.old = _cone.id "
                   "WHERE links.rid IN (SELECT rid FROM snap_records WHERE sid = ?)")
        per: dict[int, set[int]] = {}
        for rid, e in db.execute(sql, (sid,)):
            per.setdefault(rid, set()).add(e)
        # Each partial record keeps its first edge and its first typed edge (an instance or shared
        # edge) too: lineage's set walks then take the same branches as on the whole record (a
        # record with edges, typed or not), so the answers come out in the same order.
        for rid, ne, te in db.execute("SELECT rid, nedges, typed_edge FROM records WHERE rid IN "
                                      "(SELECT rid FROM snap_records WHERE sid = ?)", (sid,)):
            got = per.setdefault(rid, set())
            if ne:
                got.add(0)
            if te is not None:
                got.add(te)
        return [self._record(db, r, sorted(per.get(r, ())), cone) for r in rids]

    def find(self, ref: str, expr_or_id: Any) -> list[bytes]:
        """The ids (sorted) of the expressions of snapshot ``ref`` that are, or were derived
        from, ``expr_or_id`` (a node or its id) -- what ``get(ref).find(expr_or_id)`` finds,
        answered from the stored edges the query reaches (selected in SQL) and the snapshot's
        node rows, without rebuilding the snapshot."""
        try:
            q = _id_of(expr_or_id)
        except LineageError as e:
            raise StoreError(str(e)) from None

        def txn(db: sqlite3.Connection) -> list[bytes]:
            sid = self._sid(db, ref)
            cone = self._cone(db, sid, q, backward=False)
            cur: dict[bytes, bool] = {q: True}
            for rec in self._partial(db, sid, cone, by_new=False):
                cur = _forward(rec, cur)[0]
            db.execute("DELETE FROM _cone")
            db.executemany("INSERT INTO _cone VALUES (?)", [(i,) for i in cur])
            sql = (_CHILD_REACH + "SELECT nodes.id FROM _cone JOIN nodes ON nodes.id = _cone.id "
                   "WHERE nodes.nid IN (SELECT n FROM reach) ORDER BY nodes.id")
            return [r[0] for r in db.execute(sql, {"sid": sid})]
        got: list[bytes] = self._txn(txn, write=False)
        return got

    def history(self, ref: str, expr_or_id: Any) -> list[Step]:
        """The steps that led to ``expr_or_id`` in snapshot ``ref`` (or carried it forward):
        what ``get(ref).history(expr_or_id)`` answers, from the stored edges the query
        reaches (selected in SQL), without rebuilding the snapshot."""
        try:
            q = _id_of(expr_or_id)
        except LineageError as e:
            raise StoreError(str(e)) from None

        def txn(db: sqlite3.Connection) -> list[Step]:
            sid = self._sid(db, ref)
            produced = db.execute("SELECT 1 FROM links WHERE new = ? AND rid IN "
                                  "(SELECT rid FROM snap_records WHERE sid = ?) LIMIT 1",
                                  (q, sid)).fetchone() is not None
            cone = self._cone(db, sid, q, backward=produced)
            recs = self._partial(db, sid, cone, by_new=produced)
            return list(_lineage_history(_Lineage(recs), q))
        got: list[Step] = self._txn(txn, write=False)
        return got

    # -- cache (for pyir.transform.cache.PassCache) ---------------------------------------------
    def cache_load(self, key: bytes) -> bytes | None:
        """The bytes saved under ``key``, or None."""
        if not isinstance(key, bytes):
            raise StoreError(f"a cache key is bytes, got {type(key).__name__}")
        row = self._txn(lambda db: db.execute("SELECT value FROM cache WHERE key = ?", (key,)).fetchone(),
                        write=False)
        return None if row is None else bytes(row[0])

    def cache_save(self, key: bytes, value: bytes) -> None:
        """Save ``value`` under ``key`` (its own transaction; replaces an earlier value)."""
        if not isinstance(key, bytes) or not isinstance(value, (bytes, bytearray, memoryview)):
            raise StoreError("cache_save takes bytes for the key and the value")
        self._txn(lambda db: db.execute("INSERT OR REPLACE INTO cache VALUES (?, ?)", (key, bytes(value))),
                  write=True)

    # -- check ---------------------------------------------------------------------------------
    def check(self) -> CheckReport:
        """Verify every row: SQLite's own integrity check; each node rebuilt from its record
        (children first) must have its row's id (a variable: its record checksum), each
        reference must name an earlier row; each blob must hash to its key; each pass record
        must parse and hash to its key; each snapshot's rows must exist, reach only good nodes
        and hash to its id.  Returns a :class:`CheckReport` naming every bad row (see
        :meth:`CheckReport.raise_if_bad`)."""
        with gc_paused():
            got: CheckReport = self._txn(self._check, write=False)
        return got

    def _check(self, db: sqlite3.Connection) -> CheckReport:
        rep = CheckReport()
        bad = rep.problems
        for (msg,) in db.execute("PRAGMA quick_check"):
            if msg != "ok":
                bad.append(f"sqlite: {msg}")
        blob_ok: dict[int, bytes] = {}
        for bid, h, data in db.execute("SELECT bid, hash, data FROM blobs"):
            rep.blobs += 1
            if xxh3_128_digest(bytes(data)) != h:
                bad.append(f"blobs row {bid} (hash {bytes(h).hex()}): its data does not hash to its key")
            else:
                blob_ok[bid] = bytes(data)
        kids = db.execute("SELECT parent, child FROM kids ORDER BY parent, pos").fetchall()
        built: dict[int, Node] = {}
        failed: set[int] = set()
        p, nk = 0, len(kids)
        for nid, i, k, rec, data, bid, chk in db.execute(
                "SELECT nid, id, kind, rec, data, blob, chk FROM nodes ORDER BY nid"):
            rep.nodes += 1
            while p < nk and kids[p][0] < nid:
                bad.append(f"kids row ({kids[p][0]}, {kids[p][1]}): its parent node row is missing")
                p += 1
            ks: list[Node] = []
            why = None
            while p < nk and kids[p][0] == nid:
                c = kids[p][1]
                if c in failed:
                    why = why or f"references bad node row {c}"
                elif c not in built:
                    why = why or f"references node row {c}, which is missing or not an earlier row"
                else:
                    ks.append(built[c])
                p += 1
            if why is None and bid is not None:
                data = blob_ok.get(bid)
                if data is None:
                    why = f"its data (blobs row {bid}) is missing or bad"
            if why is None:
                try:
                    built[nid] = _node_of(nid, i, k, rec, data, ks, chk, strict=True)
                    continue
                except StoreError as e:
                    why = str(e)
            failed.add(nid)
            bad.append(f"nodes row {nid} (id {bytes(i).hex() if isinstance(i, bytes) else i!r}): {why}")
        for row in kids[p:]:
            bad.append(f"kids row ({row[0]}, {row[1]}): its parent node row is missing")
        hashes: dict[int, bytes] = {}
        for rid, h in db.execute("SELECT rid, hash FROM records").fetchall():
            rep.records += 1
            self._rec_obj.pop(rid, None)  # re-read from the rows (the hash is checked there)
            try:
                rec = self._record(db, rid)
                news, olds, counts = _edge_parts(rec.edges)
                links = _links(rid, news, _olds_per_edge(news, olds, _norm_counts(counts)))
                got = sorted(db.execute("SELECT old, rid, e, new FROM links WHERE rid = ?", (rid,)))
                if [tuple(r) for r in got] != sorted(set(links)):
                    raise StoreError(f"its links rows do not match its edges ({len(got)} rows, "
                                     f"{len(set(links))} expected)")
                hashes[rid] = h
            except StoreError as e:
                bad.append(f"records row {rid}: {e}")
        for sid, h, par in db.execute("SELECT sid, hash, parent FROM snapshots").fetchall():
            rep.snapshots += 1
            funcs, types, rids = _snap_rows(db, sid)
            where = f"snapshots row {sid} (id {bytes(h).hex()})"
            missing = [j for _, j in funcs if j not in built] + [j for j in types if j not in built]
            if missing:
                bad.append(f"{where}: root node rows {missing[:5]} missing or bad")
                continue
            if any(r not in hashes for r in rids):
                gone = [r for r in rids if r not in hashes]
                bad.append(f"{where}: pass record rows {gone[:5]} missing or bad")
                continue
            if failed:
                hit = db.execute(_reach(_ROOTS) + "SELECT n FROM reach WHERE n NOT IN "
                                 "(SELECT nid FROM nodes) LIMIT 1", {"sid": sid}).fetchone()
                if hit is None:
                    rows = db.execute(_reach(_ROOTS) + "SELECT n FROM reach", {"sid": sid}).fetchall()
                    hits = [r[0] for r in rows if r[0] in failed]
                    if hits:
                        bad.append(f"{where}: reaches bad node rows {hits[:5]}")
                        continue
                else:
                    bad.append(f"{where}: reaches missing node row {hit[0]}")
                    continue
            ph = b""
            if par is not None:
                prow = db.execute("SELECT hash FROM snapshots WHERE sid = ?", (par,)).fetchone()
                if prow is None:
                    bad.append(f"{where}: its parent snapshot row {par} is missing")
                    continue
                ph = prow[0]
            want = _snapshot_hash([(n, built[j].id) for n, j in funcs], [built[j].id for j in types],
                                  [hashes[r] for r in rids], ph)
            if want != h:
                bad.append(f"{where}: its rows do not hash to its id")
        for name, sid in db.execute("SELECT name, sid FROM refs WHERE sid NOT IN "
                                    "(SELECT sid FROM snapshots)"):
            bad.append(f"refs row {name!r}: snapshot row {sid} is missing")
        return rep


def _reopen(path: str, timeout: float, sync: str) -> Store:
    return Store(path, timeout=timeout, synchronous=sync)


def _snap_rows(db: sqlite3.Connection, sid: int) -> tuple[list[tuple[str, int]], list[int], list[int]]:
    """Snapshot ``sid``'s functions (name, nid), type definitions (nids) and pass records (rids)."""
    funcs = db.execute("SELECT name, nid FROM snap_funcs WHERE sid = ? ORDER BY pos", (sid,)).fetchall()
    types = [r[0] for r in db.execute("SELECT nid FROM snap_types WHERE sid = ? ORDER BY pos", (sid,))]
    rids = [r[0] for r in db.execute("SELECT rid FROM snap_records WHERE sid = ? ORDER BY pos", (sid,))]
    return funcs, types, rids


def _snapshot_hash(funcs: list[tuple[str, bytes]], types: list[bytes], records: list[bytes],
                   parent: bytes) -> bytes:
    parts = [b"pyir-snapshot\0", b"%d:" % len(funcs)]
    for n, i in funcs:
        b = n.encode("utf-8", "surrogatepass")
        parts += (b"%d:" % len(b), b, i)
    parts.append(b"%d:" % len(types))
    parts += types
    parts.append(b"%d:" % len(records))
    parts += records
    parts += (b"%d:" % len(parent), parent)
    return xxh3_128_digest(b"".join(parts))


def _node_of(nid: int, i: bytes, k: int, rec: bytes, data: bytes | None, kids: list[Node],
             chk: bytes | None, strict: bool = False) -> Node:
    """Build the node of a row and check it against the row's id; StoreError naming the row."""
    try:
        n = decode_record(k, bytes(rec), kids, None if data is None else bytes(data), bytes(i))
    except SerializationError as e:
        raise StoreError(f"node row {nid} (id {bytes(i).hex()}): {e}") from None
    except PyIRError as e:
        raise StoreError(f"node row {nid} (id {bytes(i).hex()}): {type(e).__name__}: {e}") from None
    if n.id != i:
        raise StoreError(f"node row {nid} (id {bytes(i).hex()}): its record builds a node of id {n.id.hex()} "
                         "(corrupted row)")
    if (chk is not None or k == K_VAR) and (chk is None or xxh3_64_digest(i + bytes(rec)) != chk):
        raise StoreError(f"node row {nid} (id {bytes(i).hex()}): the variable's record checksum "
                         "does not match")
    if strict and record_refs(n) != kids:  # (a kids row the record does not use: check() only)
        raise StoreError(f"node row {nid} (id {bytes(i).hex()}): its references do not match its record")
    return n


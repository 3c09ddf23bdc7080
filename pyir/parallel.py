"""Run a pass pipeline over many models, in-process or on a Dask distributed cluster.

>>> import pyir
>>> from pyir.transform import FuseOps
>>> mods = [pyir.testing.resnet(1), pyir.testing.resnet(2)]
>>> out = map_pipeline(FuseOps(), mods)            # client=None: sequentially, in this process
>>> [m.pass_records[-1].name for m in out]
['FuseOps', 'FuseOps']

With ``client=distributed.Client(...)`` (the optional extra ``pyir[dask]``) each item runs on a
worker.  What travels is bytes only: a module goes to the worker and comes back as pyir's binary
format (:func:`pyir.serialize.binary.dumps`, with its pass history and lineage), a path travels as
its text and is read on the worker, and the pipeline travels pickled once (a pass is a frozen
dataclass of options; a node among the options pickles through the binary format too).  The client
rebuilds each result with :func:`~pyir.serialize.binary.loads`: hash-consing gives back the very
objects the client already holds for every node the pass left alone, and since a content id is the
same in every process, ``result.find(old_expr)`` works against the input module's nodes exactly as
after an in-process run.  Dask itself is imported only when a client is given: pyir imports and
``map_pipeline(..., client=None)`` works without it.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Iterable, Sequence
from typing import Any

from . import errors
from .errors import PassError, PyIRError
from .ir.module import Module
from .progress import Progress
from .serialize.binary import dumps, load, loads
from .transform.base import Pass, PassContext

__all__ = ["map_pipeline"]

_MAGIC = b"PYIR"  # the first bytes of a binary payload (anything else given as bytes is ONNX)


def _item(i: int, x: Any, name: str | None) -> tuple[str, Any, str, str | None]:
    """(kind, data, label, default store name) of item ``i``: kind "module" (data: binary bytes,
    made by the caller), "bytes" (a binary or ONNX payload), "onnx" or "pyir" (a path)."""
    if isinstance(x, Module):
        return "module", x, f"item {i} ({name or 'module'})", name
    if isinstance(x, (bytes, bytearray, memoryview)):
        return "bytes", bytes(x), f"item {i} ({name or 'bytes'})", name
    if isinstance(x, (str, os.PathLike)):
        path = os.fspath(x)
        if not isinstance(path, str):
            raise PassError(f"map_pipeline: item {i}: a path must be text, got {path!r}")
        stem, ext = os.path.splitext(os.path.basename(path))
        return ("onnx" if ext.lower() == ".onnx" else "pyir"), path, f"item {i} ({path})", name or stem
    raise PassError(f"map_pipeline: item {i}: expected a Module, a path or bytes, got {type(x).__name__}")


def _source(kind: str, data: Any) -> Module:
    """The input module of an item, built where the item runs."""
    if kind == "module":
        mod = data if isinstance(data, Module) else loads(data)
    elif kind == "onnx" or (kind == "bytes" and data[:4] != _MAGIC):
        from .frontend.onnx import from_onnx

        mod = from_onnx(data)
    elif kind == "bytes":
        mod = loads(data)
    else:
        mod = load(data)
    if not isinstance(mod, Module):
        raise errors.SerializationError(f"the payload holds a {type(mod).__name__}, not a Module")
    return mod


def _context_options() -> dict[str, Any]:
    """The current PassContext's options (its instruments stay with the client)."""
    c = PassContext.current()
    return {"opt_level": c.opt_level, "required_pass": sorted(c.required_pass),
            "disabled_pass": sorted(c.disabled_pass), "config": dict(c.config),
            "record_lineage": c.record_lineage}


def _run(pipeline: Pass, ctx: dict[str, Any], kind: str, data: Any) -> Module:
    mod = _source(kind, data)
    with PassContext(**ctx):
        out = pipeline(mod)
    if not isinstance(out, Module):  # pragma: no cover - Pass.__call__ already refuses this
        raise PassError(f"{pipeline.name} returned a {type(out).__name__}, not a Module")
    return out


def _work(job: bytes, kind: str, data: bytes | str) -> tuple[str, bytes | str, str]:
    """The task a worker runs: ``("ok", binary result, "")`` or ``("error", type name, message)``.

    Everything in and out is bytes or text (never a pickled node graph); any failure comes back
    as data, so the client can name the item when it re-raises."""
    try:
        pipeline, ctx = pickle.loads(job)
        return "ok", dumps(_run(pipeline, ctx, kind, data)), ""
    except Exception as e:
        return "error", type(e).__name__, str(e)


_ERRORS = {k: v for k, v in vars(errors).items()
           if isinstance(v, type) and issubclass(v, PyIRError)}


def _error(label: str, etype: str, message: str) -> PyIRError:
    """The pyir error to raise for item ``label``: the worker's own pyir error class when it had
    one, else a PassError; the message names the item and the original error type."""
    text = f"map_pipeline: {label}: {etype}: {message}"
    cls = _ERRORS.get(etype, PassError)
    try:
        return cls(text)
    except TypeError:  # pragma: no cover - every pyir error takes a message first
        return PassError(text)


def _pack(pipeline: Pass, ctx: dict[str, Any]) -> bytes:
    """The pipeline and context options as one pickle: cloudpickle (which distributed requires)
    when installed, so that a pass class defined in ``__main__`` or a notebook travels by value."""
    try:
        import cloudpickle
    except ImportError:  # pragma: no cover - distributed requires cloudpickle
        dump: Any = pickle.dumps
    else:
        dump = cloudpickle.dumps
    try:
        job = bytes(dump((pipeline, ctx)))
        pickle.loads(job)  # what a worker will do first: fail here, once, rather than on every item
    except Exception as e:
        raise PassError(f"map_pipeline: the pipeline cannot be sent to workers: "
                        f"{type(e).__name__}: {e}") from e
    return job


def map_pipeline(pipeline: Pass, modules_or_paths: Iterable[Any], client: Any = None, *,
                 store: Any = None, names: Sequence[str | None] | None = None) -> list[Module]:
    """Run ``pipeline`` on every item; the results in input order.

    Args:
        pipeline: a pass (a :class:`~pyir.transform.Sequential` for a pipeline).
        modules_or_paths: Modules, paths (``.onnx`` files are imported with
            :func:`pyir.frontend.from_onnx`, any other file is loaded as pyir's binary format), or
            bytes (a pyir binary payload, else a serialized ONNX model).  Paths are opened where
            the item runs: on a cluster, give paths the workers can read (shared storage) or bytes.
        client: ``None`` runs the items one after the other in this process (the reference);
            a ``distributed.Client`` runs each item as a task on the cluster's workers.
        store: an object with ``put(mod, name=...)`` (a :class:`pyir.store.Store`): each result is
            written to it, in input order, once every item has succeeded.
        names: the store name of each item (default: a path's file stem, else ``None``).

    The current :class:`~pyir.transform.PassContext`'s options (``opt_level``, required and
    disabled passes, ``config``, ``record_lineage``) apply on the workers too; its instruments
    run only in this process, so they see nothing of a distributed run.

    Raises:
        PassError: a bad argument, a pipeline that cannot be pickled, or an item that failed
            (an item that raised a pyir error re-raises that error class): the message names the
            first failing item in input order and the original error.
    """
    if not isinstance(pipeline, Pass):
        raise PassError(f"map_pipeline: expected a pass, got {type(pipeline).__name__}")
    if isinstance(modules_or_paths, (Module, str, bytes, os.PathLike)):
        modules_or_paths = [modules_or_paths]
    try:
        given = list(modules_or_paths)
    except TypeError:
        raise PassError(f"map_pipeline: expected modules or paths, got {modules_or_paths!r}") from None
    if names is not None:
        names = list(names)
        if len(names) != len(given) or not all(n is None or isinstance(n, str) for n in names):
            raise PassError(f"map_pipeline: names must be {len(given)} strings (or None), got {names!r}")
    if store is not None and not callable(getattr(store, "put", None)):
        raise PassError(f"map_pipeline: store must have a put(mod, name=...) method, got {store!r}")
    items = [_item(i, x, names[i] if names is not None else None) for i, x in enumerate(given)]
    ctx = _context_options()
    results: list[Module | None] = [None] * len(items)
    failed: dict[int, tuple[str, str]] = {}
    with Progress("map_pipeline", total=len(items), unit="models") as shown:
        if client is None:
            for i, (kind, data, label, _) in enumerate(items):
                shown.note(label)
                try:
                    results[i] = _run(pipeline, ctx, kind, data)
                except Exception as e:
                    raise _error(label, type(e).__name__, str(e)) from e
                shown.update()
        else:
            _distributed(client, _pack(pipeline, ctx), items, results, failed, shown)
    if failed:
        i = min(failed)
        err = _error(items[i][2], *failed[i])
        if len(failed) > 1:
            err.args = (f"{err.args[0]} (and {len(failed) - 1} more failed item(s): "
                        f"{', '.join(items[j][2] for j in sorted(failed)[1:])})",)
        raise err
    out = [r for r in results if r is not None]
    if store is not None:
        for mod, (_, _, _, name) in zip(out, items):
            store.put(mod, name=name)
    return out


def _distributed(client: Any, job: bytes, items: list[tuple[str, Any, str, str | None]],
                 results: list[Module | None], failed: dict[int, tuple[str, str]], shown: Progress) -> None:
    """Run every item as a task of ``client``; fill ``results`` (or ``failed``) as tasks finish."""
    try:
        from distributed import as_completed
    except ImportError as e:  # pragma: no cover - a client implies distributed
        raise PassError("map_pipeline with a client needs dask[distributed]: pip install 'pyir[dask]'") from e
    # large payloads go to the workers by scatter (not inside the task graph); all are bytes
    payloads = [dumps(d) if k == "module" else d for k, d, _, _ in items]
    big = [j for j, (k, _, _, _) in enumerate(items) if k in ("module", "bytes")]
    job_f = client.scatter(job, hash=False)
    scattered = dict(zip(big, client.scatter([payloads[j] for j in big], hash=False))) if big else {}
    futures = [client.submit(_work, job_f, kind, scattered.get(i, payloads[i]), pure=False,
                             key=f"pyir-map_pipeline-{i}-{os.urandom(8).hex()}")
               for i, (kind, _, _, _) in enumerate(items)]
    del payloads, scattered  # the cluster holds them now
    index = {f.key: i for i, f in enumerate(futures)}
    for fut in as_completed(futures):
        i = index[fut.key]
        try:
            status, a, b = fut.result()
        except Exception as e:  # the task itself never raises: a lost worker, a cancelled task
            failed[i] = (type(e).__name__, f"the task failed on the cluster: {e}")
        else:
            if status == "ok":
                mod = loads(a)
                if isinstance(mod, Module):
                    results[i] = mod
                else:  # pragma: no cover - _work only returns dumps of a Module
                    failed[i] = ("SerializationError", "the worker returned no module")
            else:
                failed[i] = (str(a), str(b))
        shown.note(items[i][2])
        shown.update()

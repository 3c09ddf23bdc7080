"""Pass infrastructure: immutable passes, ``Sequential``, ``PassContext`` and instruments.

A pass is a frozen object with a ``name`` and its options as fields, called as
``new_mod = pass_(mod)``.  It never modifies its input; a pass that changes
nothing returns the input module object itself.  Each run that changes the
module appends one :class:`~pyir.ir.lineage.PassRecord` to the new module's history.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from ..errors import PassError, PyIRError
from ..ir.expr import Function
from ..ir.lineage import PassRecord, Recorder, current_recorder, recording
from ..ir.module import Module
from ..ir.node import gc_paused
from ..progress import Progress

__all__ = ["Pass", "ModulePass", "FunctionPass", "Sequential", "PassContext", "PassInstrument",
           "PASS_CONFIG_OPTIONS", "OPT_LEVELS", "register_pass_config",
           "TimingInstrument", "PrintIRInstrument", "module_pass", "function_pass"]


class PassInstrument:
    """Observes pass runs without changing them; override the hooks you need."""

    def enter_pass(self, pass_: Pass, mod: Module) -> None:
        """Called before a pass runs."""

    def exit_pass(self, pass_: Pass, before: Module, after: Module, seconds: float) -> None:
        """Called after a pass ran (``after is before`` when it changed nothing)."""


class TimingInstrument(PassInstrument):
    """Collects ``(pass name, seconds)`` for every pass run; ``report()`` formats them."""

    def __init__(self) -> None:
        self.timings: list[tuple[str, float]] = []

    def exit_pass(self, pass_: Pass, before: Module, after: Module, seconds: float) -> None:
        if not isinstance(pass_, Sequential):
            self.timings.append((pass_.name, seconds))

    def report(self) -> str:
        """A text table of the timings."""
        lines = [f"{'pass':<32} {'ms':>10}"]
        lines += [f"{n:<32} {s * 1e3:>10.2f}" for n, s in self.timings]
        return "\n".join(lines)


class PrintIRInstrument(PassInstrument):
    """Prints the module after each pass that changed something."""

    def __init__(self, file: Any = None) -> None:
        self.file = file

    def exit_pass(self, pass_: Pass, before: Module, after: Module, seconds: float) -> None:
        if after is not before and not isinstance(pass_, Sequential):
            print(f"# IR after {pass_.name}", file=self.file or sys.stdout)
            print(after.astext(show_meta_data=False), file=self.file or sys.stdout)


_ctx: contextvars.ContextVar[PassContext | None] = contextvars.ContextVar("pyir_pass_ctx", default=None)
_cache_var: contextvars.ContextVar[Any] = contextvars.ContextVar("pyir_pass_cache", default=None)
"""The :class:`~pyir.transform.cache.PassCache` of the running pipeline (None outside one, and
inside a pass's own run)."""
_CACHE_HOOK: list[Any] = [None]
"""``[as_pass_cache]``, set by :mod:`pyir.transform.cache` (imported by ``pyir.transform``)."""


PASS_CONFIG_OPTIONS: dict[str, type] = {
    "relay.FuseOps.max_depth": int,
    "relay.FuseOps.link_params": bool,
}
"""The configuration keys a :class:`PassContext` accepts, with their value types (TVM's
``TVM_REGISTER_PASS_CONFIG_OPTION``); :func:`register_pass_config` adds one."""


def register_pass_config(key: str, value_type: type) -> None:
    """Declare the configuration key ``key`` of type ``value_type`` (for a pass of your own)."""
    if not isinstance(key, str) or not isinstance(value_type, type):
        raise PassError(f"register_pass_config takes a str key and a type, got {key!r}, {value_type!r}")
    PASS_CONFIG_OPTIONS[key] = value_type


OPT_LEVELS: dict[str, int] = {
    "InferType": 0, "SimplifyInference": 0, "SimplifyExpr": 0, "FuseOps": 0, "BindShapes": 0,
    "DeadCodeElimination": 1, "ToANormalForm": 1, "ToBasicBlockNormalForm": 1, "ToGraphNormalForm": 1,
    "Inline": 1, "FoldConstant": 2, "DynamicToStatic": 2, "EliminateCommonSubexpr": 3, "DefuseOps": 3,
}
"""The optimization level of each standard pass, TVM's (a pass class may set ``opt_level``)."""


class PassContext:
    """Configuration of pass runs: ``with PassContext(opt_level=3, config={...}, instruments=[...]):``.

    As TVM's: a :class:`Sequential` run inside the context skips a pass whose ``opt_level`` is
    above the context's ``opt_level`` or whose name is in ``disabled_pass`` (a pass in
    ``required_pass`` always runs); ``config`` holds options that passes read with
    :meth:`get_config` (``"relay.FuseOps.max_depth"``, ...; keys are checked against
    :data:`PASS_CONFIG_OPTIONS`).  pyir's one difference: ``opt_level=None`` (the default, and
    outside any context) gates nothing -- every pass of a Sequential runs, as pyir always did.
    A pass called directly always runs (as in TVM)."""

    def __init__(self, opt_level: int | None = None, required_pass: Iterable[str] = (),
                 disabled_pass: Iterable[str] = (), instruments: Iterable[PassInstrument] = (),
                 config: Mapping[str, Any] | None = None, *, record_lineage: bool = True) -> None:
        if opt_level is not None and (type(opt_level) is not int or opt_level < 0):
            raise PassError(f"PassContext: opt_level must be an int >= 0 or None, got {opt_level!r}")
        self.opt_level = opt_level
        self.required_pass = frozenset(_pass_names(required_pass, "required_pass"))
        self.disabled_pass = frozenset(_pass_names(disabled_pass, "disabled_pass"))
        self.instruments = list(instruments)
        self.config = _check_config(config or {})
        self.record_lineage = record_lineage
        self._token: Any = None

    @staticmethod
    def current() -> PassContext:
        """The innermost active context (a default one outside any ``with``)."""
        c = _ctx.get()
        return c if c is not None else _DEFAULT

    def get_config(self, key: str, default: Any = None) -> Any:
        """The value of configuration ``key`` in this context, else ``default``."""
        if key not in PASS_CONFIG_OPTIONS:
            raise PassError(f"unknown pass configuration key {key!r}; known: {sorted(PASS_CONFIG_OPTIONS)}")
        return self.config.get(key, default)

    def pass_enabled(self, pass_: Pass) -> bool:
        """Whether a Sequential runs ``pass_`` in this context (TVM's ``PassEnabled``)."""
        name = pass_.name
        if name in self.disabled_pass:
            return False
        if name in self.required_pass or self.opt_level is None:
            return True
        return pass_.opt_level <= self.opt_level

    def __enter__(self) -> PassContext:
        self._token = _ctx.set(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _ctx.reset(self._token)


def _pass_names(names: Iterable[str], what: str) -> list[str]:
    if isinstance(names, str):
        names = [names]
    out = list(names)
    if not all(isinstance(n, str) for n in out):
        raise PassError(f"PassContext: {what} takes pass names, got {out!r}")
    return out


def _check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in dict(config).items():
        t = PASS_CONFIG_OPTIONS.get(k)
        if t is None:
            raise PassError(f"PassContext: unknown config key {k!r}; known: {sorted(PASS_CONFIG_OPTIONS)} "
                            "(register_pass_config declares one)")
        if not isinstance(v, t) or (t is int and isinstance(v, bool)):
            raise PassError(f"PassContext: config {k!r} takes a {t.__name__}, got {v!r}")
        out[k] = v
    return out


_DEFAULT = PassContext()


@dataclasses.dataclass(frozen=True)
class Pass:
    """Base of all passes.  Subclasses are frozen dataclasses; fields are options."""

    name: ClassVar[str] = "Pass"
    opt_level: ClassVar[int] = 0
    """The pass's optimization level: a :class:`Sequential` in a ``PassContext(opt_level=n)``
    runs it only if it is at most ``n`` (the standard passes take TVM's, :data:`OPT_LEVELS`)."""

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__
        if "opt_level" not in cls.__dict__:
            cls.opt_level = OPT_LEVELS.get(cls.name, 0)

    def run(self, mod: Module) -> Module:
        """Transform ``mod`` (subclasses implement this)."""
        raise NotImplementedError

    def options(self) -> str:
        """The options as ``k=v`` text."""
        return ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self))

    cache_scope: ClassVar[str | None] = None
    """How a :class:`~pyir.transform.cache.PassCache` memoizes this pass: ``"function"`` (per
    function), ``"module"`` (per whole-module content) or None (never); see that module."""

    def __call__(self, mod: Module, cache: Any = None) -> Module:
        if cache is not None:
            return self._call_cached(mod, cache)
        if not isinstance(mod, Module):
            raise PassError(f"{self.name}: expected a Module, got {type(mod).__name__}")
        ctx = PassContext.current()
        for ins in ctx.instruments:
            ins.enter_pass(self, mod)
        t0 = time.perf_counter()
        try:
            with gc_paused():
                out = self._run_recorded(mod, ctx, t0)
        except PassError:
            raise
        except PyIRError as e:
            raise PassError(f"pass {self.name} failed: {type(e).__name__}: {e}") from e
        except RecursionError as e:  # pragma: no cover - would be a pyir bug
            raise PassError(f"pass {self.name} failed: recursion too deep") from e
        except Exception as e:
            raise PassError(f"pass {self.name} failed: {type(e).__name__}: {e}") from e
        seconds = time.perf_counter() - t0
        for ins in ctx.instruments:
            ins.exit_pass(self, mod, out, seconds)
        return out

    def _call_cached(self, mod: Module, cache: Any) -> Module:
        """``self(mod)`` with ``cache`` (a PassCache, or a backend to wrap) active for the run."""
        wrap = _CACHE_HOOK[0]
        if wrap is None:  # pragma: no cover - pyir.transform imports pyir.transform.cache
            raise PassError("pass caching needs pyir.transform.cache to be imported")
        token = _cache_var.set(wrap(cache))
        try:
            return self(mod)
        finally:
            _cache_var.reset(token)

    def _run_recorded(self, mod: Module, ctx: PassContext, t0: float) -> Module:
        """Run the pass with a lineage recorder and append its record to the result."""
        if isinstance(self, Sequential):
            return self._result(self.run(mod))
        if current_recorder() is not None:  # run by another pass: its record takes our edges
            return self._result(self.run(mod))
        cache = _cache_var.get()
        run = self.run if cache is None else functools.partial(cache._run_pass, self)
        if ctx.record_lineage:
            with recording() as rec:
                out = self._result(run(mod))
        else:
            rec = Recorder()
            out = self._result(run(mod))
        if out is not mod or rec:
            _derive_functions(rec, mod, out)
            record = PassRecord(self.name, self.options(), rec.edges,
                                frozenset(rec.removed), rec.sources or None,
                                time.perf_counter() - t0, rec.rules)
            out = out._derive(out.functions(), history=_history_base(mod, out).append(record))
        return out


    def _result(self, out: Any) -> Module:
        """``out`` if it is a Module, else a PassError naming the pass (``run`` returned
        something else, e.g. None from a forgotten ``return``)."""
        if not isinstance(out, Module):
            raise PassError(f"pass {self.name} returned {type(out).__name__}, not a Module: run() must "
                            "return the new module (or the input module when nothing changes)")
        return out


def _history_base(before: Module, after: Module) -> Any:
    """The history to extend: the output's if it extends the input's (nested passes
    appended records), else the input's (a pass that built a fresh Module)."""
    old, new = before.pass_records, after.pass_records
    if len(new) >= len(old) and all(a is b for a, b in zip(old, new)):
        return new
    return old


def _derive_functions(rec: Recorder, before: Module, after: Module) -> None:
    """A function replaced under the same name derives from the old one."""
    if after is before:
        return
    old_funcs = before.functions()
    for name, f in after.functions().items():
        old = old_funcs.get(name)
        if old is not None and old is not f:  # a duplicate of a pass's own edge is harmless
            rec.derive(f, (old,))


@dataclasses.dataclass(frozen=True)
class ModulePass(Pass):
    """A pass over the whole module: implement ``run(mod)``."""


@dataclasses.dataclass(frozen=True)
class FunctionPass(Pass):
    """A pass applied to each function: implement ``transform_function(func, mod, name)``.

    Primitive (fused) functions are left alone unless ``include_primitive``.
    """

    include_primitive: ClassVar[bool] = False

    def transform_function(self, func: Function, mod: Module, name: str) -> Function:
        """Return the transformed function (the same object if unchanged)."""
        raise NotImplementedError

    def run(self, mod: Module) -> Module:
        updates = {}
        for name, f in mod.items():
            if not self.include_primitive and f.attrs.get("Primitive"):
                continue
            nf = self.transform_function(f, mod, name)
            if nf is not f:
                updates[name] = nf
        return mod.with_functions(updates) if updates else mod


@dataclasses.dataclass(frozen=True)
class Sequential(Pass):
    """Run passes in order: ``Sequential([InferType(), FuseOps()])(mod)``."""

    passes: tuple[Pass, ...] = ()
    name: ClassVar[str] = "Sequential"

    def __init__(self, passes: Sequence[Pass] = ()) -> None:
        try:
            object.__setattr__(self, "passes", tuple(passes))
        except TypeError:
            raise PassError(f"Sequential takes a sequence of passes, got {passes!r}") from None
        for p in self.passes:
            if not isinstance(p, Pass):
                raise PassError(f"Sequential takes passes, got {p!r}")

    def run(self, mod: Module) -> Module:
        ctx = PassContext.current()
        with Progress("pipeline", total=len(self.passes), unit="passes") as shown:
            for p in self.passes:
                if ctx.pass_enabled(p):
                    shown.note(p.name)
                    mod = p(mod)
                shown.update()
        return mod

    def options(self) -> str:
        return "[" + ", ".join(p.name for p in self.passes) + "]"


def module_pass(fn: Any = None, *, name: str | None = None) -> Any:
    """Make a pass from a function ``Module -> Module``: ``@module_pass``."""

    def wrap(f: Any) -> Pass:
        cls = type(name or f.__name__, (ModulePass,), {"run": lambda self, mod: f(mod),
                                                        "name": name or f.__name__})
        return dataclasses.dataclass(frozen=True)(cls)()  # type: ignore[misc]

    return wrap(fn) if fn is not None else wrap


def function_pass(fn: Any = None, *, name: str | None = None) -> Any:
    """Make a pass from a function ``(Function, Module, name) -> Function``."""

    def wrap(f: Any) -> Pass:
        cls = type(name or f.__name__, (FunctionPass,),
                   {"transform_function": lambda self, func, mod, nm: f(func, mod, nm),
                    "name": name or f.__name__})
        return dataclasses.dataclass(frozen=True)(cls)()  # type: ignore[misc]

    return wrap(fn) if fn is not None else wrap

"""The numpy reference interpreter: ``pyir.evaluate(mod_or_function, *inputs)``.

It type-checks the program first (an ill-typed one raises IllTypedProgramError naming the
node, the operator and the shapes, before anything runs), then runs it with the operators'
numpy reference implementations.  Evaluation is an explicit task/value-stack machine: no
Python recursion, so a 10^6-deep chain (or let chain) evaluates; ``if`` is
lazy, so recursive global functions work; each distinct node is evaluated
once per call frame.

Symbolic shapes: ``main``'s parameter types may hold symbols (``Tensor[(batch, 3),
float32]``) and ``?``.  Each symbol is bound from the actual arrays (an expression such as
``batch * 2 + 1`` is solved from an int when its symbol is bound nowhere else); an input
whose dimension contradicts its type or another input's binding raises EvaluationError
naming the input, the dimension and both values; ``?`` accepts anything.  (The type check
before the run takes the symbols as they are; the inputs are bound after it.)  The result is
checked against the declared (or inferred) return type with the bindings substituted.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EvaluationError, IllTypedProgramError, InternalError, PyIRError, TypeCheckError
from ..ir.adt import (
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    RefCreate,
    RefRead,
    RefWrite,
)
from ..ir.expr import (
    Call,
    Constant,
    Expr,
    Function,
    GlobalVar,
    If,
    Let,
    Op,
    Tuple,
    TupleGetItem,
    Var,
)
from ..ir.module import Module
from ..ir.node import F_GLOBAL, Node, cached_type
from ..ir.traverse import global_vars
from ..ir.types import EXTENDED_DTYPES, FuncType, TensorType, TupleType, Type
from ..progress import Progress
from .typecheck import accepts, bind_dims, infer_type, subst_type

__all__ = ["evaluate", "Closure", "ConstructorValue", "RefValue"]


class _Env:
    __slots__ = ("parent", "vars")

    def __init__(self, parent: _Env | None = None) -> None:
        self.vars: dict[Var, Any] = {}
        self.parent = parent

    def lookup(self, v: Var) -> Any:
        e: _Env | None = self
        while e is not None:
            val = e.vars.get(v, _MISSING)
            if val is not _MISSING:
                return val
            e = e.parent
        raise EvaluationError(f"unbound variable %{v.name_hint} during evaluation")


_MISSING = object()


class Closure:
    """A function value: a Function with the environment it was created in."""

    __slots__ = ("env", "func")

    def __init__(self, func: Function, env: _Env | None) -> None:
        self.func = func
        self.env = env

    def __repr__(self) -> str:
        return f"<Closure fn ({', '.join('%' + p.name_hint for p in self.func.params)})>"


class ConstructorValue:
    """A value of a type definition at run time: its constructor and its field values
    (``Cons(1, Nil)`` is ``ConstructorValue(Cons, (array(1), ConstructorValue(Nil, ())))``).
    ``tag`` is the constructor's index in its definition when the module is known (else -1)."""

    __slots__ = ("constructor", "fields", "tag")

    def __init__(self, constructor: Constructor, fields: Sequence[Any] = (), tag: int = -1) -> None:
        self.constructor = constructor
        self.fields = tuple(fields)
        self.tag = tag

    @property
    def name(self) -> str:
        """The constructor's name."""
        return self.constructor.name_hint

    def __repr__(self) -> str:  # one level deep: a 10^6-long list prints in constant time
        inner = ", ".join(type(f).__name__ if not isinstance(f, np.ndarray) else repr(f.tolist())
                          for f in self.fields)
        return f"{self.name}({inner})" if self.fields else self.name


class RefValue:
    """A mutable cell at run time (what ``ref(e)`` evaluates to); IR nodes stay immutable."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"<RefValue {type(self.value).__name__}>"


def adt_to_list(v: Any) -> list[Any]:
    """The elements of a list-like ADT value (``Cons(x, rest)`` ... ``Nil``), iteratively: the
    first field of each cell whose constructor has two fields, until a nullary one."""
    out: list[Any] = []
    while isinstance(v, ConstructorValue) and len(v.fields) == 2:
        out.append(v.fields[0])
        v = v.fields[1]
    return out


def _match(pattern: Any, value: Any, out: list[Any]) -> bool:
    """Whether ``value`` matches ``pattern``; the PatternVars' values appended to ``out`` in
    order (iterative)."""
    stack: list[tuple[Any, Any]] = [(pattern, value)]
    while stack:
        p, v = stack.pop()
        k = type(p)
        if k is PatternVar:
            out.append(v)
        elif k is PatternConstructor:
            if type(v) is not ConstructorValue or v.constructor is not p.constructor:
                return False
            stack.extend(reversed(list(zip(p.patterns, v.fields))))
        elif k is PatternTuple:
            if not isinstance(v, tuple) or len(v) != len(p.patterns):
                return False
            stack.extend(reversed(list(zip(p.patterns, v))))
    return True


class _Frame:
    __slots__ = ("env", "memo")

    def __init__(self, env: _Env) -> None:
        self.env = env
        self.memo: dict[Node, Any] = {}


# task codes
_EVAL, _OP, _TUPLE, _GETITEM, _BIND, _BRANCH, _CALLFN, _MEMO, _MATCH, _REF = range(10)


def _check_input(i: int, p: Var, value: Any) -> Any:
    t = p.type_annotation
    if isinstance(t, TensorType):
        if isinstance(value, np.ndarray):
            arr = value
        else:
            try:
                arr = np.asarray(value, dtype=t.dtype)
            except (TypeError, ValueError, OverflowError) as e:
                raise EvaluationError(f"input {i} (%{p.name_hint}): expected Tensor[{t.shape}, "
                                      f"{t.dtype}], got {type(value).__name__} ({e})") from None
        if not t.static and arr.ndim == t.ndim and arr.dtype.name == t.dtype:
            return arr  # symbolic or unknown dimensions: checked by _bind_inputs
        if arr.shape != t.shape or arr.dtype.name != t.dtype:
            raise EvaluationError(
                f"input {i} (%{p.name_hint}): expected Tensor[{t.shape}, {t.dtype}], "
                f"got an array of shape {arr.shape} and dtype {arr.dtype.name}")
        return arr
    if isinstance(t, TupleType):
        if not isinstance(value, (tuple, list)) or len(value) != len(t.fields):
            raise EvaluationError(f"input {i} (%{p.name_hint}): expected a tuple of {len(t.fields)}")
        return tuple(value)
    return value


def _value_pairs(t: Type, value: Any, where: str) -> list[tuple[Any, Any, str]]:
    """The (declared, actual, where) dimension pairs of a value against its type (tensors and
    tuples of them, iteratively); a value of another structure, dtype or rank raises."""
    out: list[tuple[Any, Any, str]] = []
    stack: list[tuple[Type, Any, str]] = [(t, value, where)]
    while stack:
        ty, v, at = stack.pop()
        if type(ty) is TensorType:
            arr = np.asarray(v) if not isinstance(v, np.ndarray) else v
            if arr.dtype.name != ty.dtype or arr.ndim != ty.ndim:
                raise EvaluationError(f"{at}: expected Tensor[{_shape_str(ty.shape)}, {ty.dtype}], got an "
                                      f"array of shape {arr.shape} and dtype {arr.dtype.name}")
            out.extend((d, a, f"{at}, dimension {k}") for k, (d, a) in enumerate(zip(ty.shape, arr.shape)))
        elif type(ty) is TupleType:
            if not isinstance(v, (tuple, list)) or len(v) != len(ty.fields):
                raise EvaluationError(f"{at}: expected a tuple of {len(ty.fields)}, got {type(v).__name__}")
            stack.extend((f, x, f"{at}, field {k}") for k, (f, x) in enumerate(zip(ty.fields, v)))
    return out


def _bind_inputs(params: Sequence[Var], values: Sequence[Any], what: str = "input",
                 where: str = "") -> dict[str, Any]:
    """The value of each symbol of the parameter types, from the actual inputs; an input whose
    dimension contradicts its type or another input (``batch`` 2 in one, 3 in another) raises
    EvaluationError naming the input, the dimension and both values (then ``where``)."""
    def err(msg: str) -> EvaluationError:
        return EvaluationError(msg + where)

    pairs: list[tuple[Any, Any, str]] = []
    for i, (p, v) in enumerate(zip(params, values)):
        t = p.type_annotation
        if t is not None and not _static(t):
            pairs += _value_pairs(t, v, f"{what} {i} (%{p.name_hint})")
    return bind_dims(pairs, err)


def _static(t: Type) -> bool:
    if type(t) is TensorType:
        return t.static
    stack = [t]
    while stack:
        x = stack.pop()
        if type(x) is TensorType:
            if not x.static:
                return False
        elif type(x) is TupleType:
            stack.extend(x.fields)
    return True


_NP_DTYPES: dict[str, np.dtype] = {}


def _same_static(t: Type, value: Any) -> bool:
    """Whether ``value`` is exactly of static type ``t`` (the quick check of a result)."""
    stack = [(t, value)]
    while stack:
        ty, v = stack.pop()
        if type(ty) is TensorType:
            dt = _NP_DTYPES.get(ty.dtype)
            if dt is None:
                dt = _NP_DTYPES[ty.dtype] = np.dtype(ty.dtype)
            if type(v) is not np.ndarray or v.shape != ty.shape or v.dtype != dt:
                return False
        elif type(ty) is TupleType and type(v) is tuple and len(v) == len(ty.fields):
            stack.extend(zip(ty.fields, v))
        else:
            return False
    return True


def _check_result(t: Type, value: Any, binds: dict[str, Any]) -> None:
    """The result against the declared (or inferred) type with the inputs' bindings substituted."""
    if _same_static(t, value):
        return

    def err(msg: str) -> EvaluationError:
        return EvaluationError(f"{msg} (the result type is {_type_str(subst_type(t, binds))})")

    try:
        pairs = _value_pairs(t, value, "the result")
    except EvaluationError as e:
        raise err(str(e)) from None
    bind_dims(pairs, err, dict(binds))


def _apply_op(call: Call, args: list[Any]) -> Any:
    odef = call.op.op_def  # type: ignore[attr-defined]
    try:
        out = odef.compute(call.attrs, *args)
    except PyIRError:
        raise
    except Exception as e:
        shapes = ", ".join(str(getattr(a, "shape", type(a).__name__)) for a in args)
        from ..text.printer import short_repr

        raise EvaluationError(f"{odef.name} failed on inputs of shapes ({shapes}): "
                              f"{type(e).__name__}: {e}\n  in {short_repr(call)}") from e
    if isinstance(out, tuple):
        return tuple(np.asarray(o) for o in out)
    r = np.asarray(out)
    if _ML_DTYPES and args:
        a0 = args[0]  # numpy numbers user-defined dtypes (ml_dtypes') from 256
        if type(a0) is np.ndarray and a0.dtype.num >= 256 and r.dtype.num < 256:
            r = _ml_result(call, r)
    return r


# ml_dtypes' numpy loops promote some results (matmul of bfloat16 gives float32): a result of
# an operator on such inputs takes the operator's declared dtype
_ML_DTYPES = bool(EXTENDED_DTYPES)


def _ml_result(call: Call, r: np.ndarray) -> np.ndarray:
    t = cached_type(call)
    if t is None:
        try:
            t = call.checked_type
        except PyIRError:
            return r
    if type(t) is TensorType and t.dtype in EXTENDED_DTYPES and r.dtype.name != t.dtype:
        return r.astype(t.dtype)
    return r


def _run(expr: Expr, frame: _Frame, mod: Module | None) -> Any:
    tasks: list[tuple[int, Any, _Frame]] = [(_EVAL, expr, frame)]
    symbolic_fns: dict[Function, bool] = {}
    vals: list[Any] = []
    push = tasks.append
    pushv = vals.append
    while tasks:
        code, n, fr = tasks.pop()
        if code == _EVAL:
            v = fr.memo.get(n, _MISSING)
            if v is not _MISSING:
                pushv(v)
                continue
            k = type(n)
            if k is Var:
                pushv(fr.env.lookup(n))
            elif k is Constant:
                pushv(n.data)
            elif k is Call:
                callee = n.op
                if type(callee) is Op:
                    push((_OP, n, fr))
                    for a in reversed(n.args):
                        push((_EVAL, a, fr))
                else:
                    push((_CALLFN, n, fr))
                    for a in reversed(n.args):
                        push((_EVAL, a, fr))
                    push((_EVAL, callee, fr))
            elif k is Tuple:
                push((_TUPLE, n, fr))
                for f in reversed(n.fields):
                    push((_EVAL, f, fr))
            elif k is TupleGetItem:
                push((_GETITEM, n, fr))
                push((_EVAL, n.tuple_value, fr))
            elif k is Let:
                push((_MEMO, n, fr))
                push((_EVAL, n.body, fr))
                push((_BIND, n.var, fr))
                push((_EVAL, n.value, fr))
            elif k is If:
                push((_BRANCH, n, fr))
                push((_EVAL, n.cond, fr))
            elif k is Function:
                c = Closure(n, fr.env)
                fr.memo[n] = c
                pushv(c)
            elif k is GlobalVar:
                if mod is None:
                    raise EvaluationError(f"@{n.name_hint} needs a module: evaluate the module, "
                                          "not a bare function")
                pushv(Closure(mod[n.name_hint], None))
            elif k is Op:
                raise EvaluationError(f"operator {n.name} used as a value")
            elif k is Constructor:  # a constructor is a value: it builds when called
                pushv(n)
            elif k is Match:
                push((_MATCH, n, fr))
                push((_EVAL, n.data, fr))
            elif k is RefCreate or k is RefRead:
                push((_REF, n, fr))
                push((_EVAL, n.value if k is RefCreate else n.ref, fr))
            elif k is RefWrite:
                push((_REF, n, fr))
                push((_EVAL, n.value, fr))
                push((_EVAL, n.ref, fr))
            else:  # pragma: no cover
                raise EvaluationError(f"cannot evaluate {k.__name__}")
        elif code == _OP:
            na = len(n.args)
            args = vals[len(vals) - na:]
            del vals[len(vals) - na:]
            v = _apply_op(n, args)
            fr.memo[n] = v
            pushv(v)
        elif code == _TUPLE:
            nf = len(n.fields)
            v = tuple(vals[len(vals) - nf:])
            del vals[len(vals) - nf:]
            fr.memo[n] = v
            pushv(v)
        elif code == _GETITEM:
            t = vals.pop()
            v = t[n.index]
            fr.memo[n] = v
            pushv(v)
        elif code == _BIND:
            fr.env.vars[n] = vals.pop()
        elif code == _BRANCH:
            c = vals.pop()
            push((_MEMO, n, fr))
            push((_EVAL, n.true_branch if bool(np.asarray(c).reshape(-1)[0]) else n.false_branch, fr))
        elif code == _CALLFN:
            na = len(n.args)
            args = vals[len(vals) - na:]
            del vals[len(vals) - na:]
            clo = vals.pop()
            if type(clo) is Constructor:  # building a value of a type definition
                if len(clo.inputs) != na:
                    raise EvaluationError(f"constructor {clo.name_hint} takes {len(clo.inputs)} field(s), "
                                          f"got {na}")
                v = ConstructorValue(clo, args, _tag(clo, mod))
                fr.memo[n] = v
                pushv(v)
                continue
            if not isinstance(clo, Closure):
                raise EvaluationError(f"calling a non-function value {type(clo).__name__}")
            f = clo.func
            if len(f.params) != na:
                raise EvaluationError(f"function takes {len(f.params)} argument(s), got {na}")
            sy = symbolic_fns.get(f)
            if sy is None:
                sy = symbolic_fns[f] = not all(p.type_annotation is None or _static(p.type_annotation)
                                               for p in f.params)
            if sy:  # a function with symbolic parameters: its symbols bound for this call
                from ..text.printer import short_repr

                _bind_inputs(f.params, args, "argument", f" in {short_repr(n)}")
            env = _Env(clo.env)
            env.vars.update(zip(f.params, args))
            push((_MEMO, n, fr))
            push((_EVAL, f.body, _Frame(env)))
        elif code == _MATCH:
            data = vals.pop()
            for c in n.clauses:
                bound: list[Any] = []
                if _match(c.lhs, data, bound):
                    push((_MEMO, n, fr))
                    if bound:  # the pattern variables in a scope of their own
                        env = _Env(fr.env)
                        env.vars.update(zip(c.rhs.params, bound))
                        push((_EVAL, c.rhs.body, _Frame(env)))
                    else:  # nothing bound: the clause runs in this frame (its memo stays valid)
                        push((_EVAL, c.rhs.body, fr))
                    break
            else:
                from ..text.printer import short_repr

                raise EvaluationError(f"no clause of {short_repr(n)} matches the value {data!r:.80}")
        elif code == _REF:
            k = type(n)
            if k is RefCreate:
                v = RefValue(vals.pop())
            else:
                r = vals.pop() if k is RefRead else vals[-2]
                if type(r) is not RefValue:
                    raise EvaluationError(f"{'ref_read of' if k is RefRead else 'ref_write to'} a "
                                          f"non-reference value {type(r).__name__}")
                if k is RefRead:
                    v = r.value
                else:
                    r.value = vals.pop()
                    vals.pop()
                    v = ()
            fr.memo[n] = v
            pushv(v)
        else:  # _MEMO: the value on top is n's
            fr.memo[n] = vals[-1]
    if len(vals) != 1:
        raise InternalError(f"interpreter finished with {len(vals)} values on its stack, not 1")
    return vals[0]


def _tag(c: Constructor, mod: Module | None) -> int:
    if mod is None:
        return -1
    td = mod.type_definitions().get(c.belong_to.name_hint)
    if td is None:
        return -1
    for i, d in enumerate(td.constructors):
        if d is c:
            return i
    return -1


def _shape_str(shape: Sequence[Any]) -> str:
    from ..op._rel import shape_str as s

    return s(shape)


def _type_str(t: Type) -> str:
    from ..text.printer import type_str as s

    return s(t)


def evaluate(program: Module | Expr, *inputs: Any) -> Any:
    """Run ``program`` on numpy inputs and return numpy arrays (tuples for tuple results).

    ``program`` is a module (its ``main`` runs), a function (called with
    ``inputs``) or a closed expression (no inputs).

    The program is type-checked first (see :func:`_type_check`): an ill-typed one raises
    :class:`~pyir.errors.IllTypedProgramError` (both a TypeCheckError and an EvaluationError)
    with the type checker's message, naming the node, the operator and the shapes, before
    anything runs.  Then the inputs are checked against the parameter types (symbols bound from
    the arrays) and the result against the return type with those bindings substituted (what
    only the run can check: a ``?`` or a symbol in the types).

    >>> import pyir, numpy as np
    >>> x = pyir.var("x", shape=(2,))
    >>> f = pyir.Function([x], pyir.op.multiply(x, pyir.const(2.0)))
    >>> evaluate(f, np.array([1, 2], "float32"))
    array([2., 4.], dtype=float32)
    """
    from ..ir.traverse import check_binders

    mod: Module | None = None
    if isinstance(program, Module):
        mod = program
        program = program["main"]
    if isinstance(program, Expr):
        check_binders(program)  # the interpreter memoizes per node: binders must be unique
    if isinstance(program, Function):
        params = program.params
        if len(inputs) != len(params):
            raise EvaluationError(f"the function takes {len(params)} input(s) "
                                  f"({', '.join('%' + p.name_hint for p in params)}), got {len(inputs)}")
        rt = _type_check(program, mod, inputs)
        env = _Env()
        for i, (p, v) in enumerate(zip(params, inputs)):
            env.vars[p] = _check_input(i, p, v)
        symbolic = not all(p.type_annotation is None or _static(p.type_annotation) for p in params)
        binds = _bind_inputs(params, [env.vars[p] for p in params]) if symbolic else {}
        with Progress("evaluate"):
            out = _run(program.body, _Frame(env), mod)
        if program.ret_type is not None:
            rt = program.ret_type
        if rt is not None:
            _check_result(rt, out, binds)
        return out
    if isinstance(program, Expr):
        if inputs:
            raise EvaluationError("a bare expression takes no inputs; wrap it in a Function")
        _type_check(program, None, ())
        with Progress("evaluate"):
            return _run(program, _Frame(_Env()), mod)
    raise EvaluationError(f"cannot evaluate {type(program).__name__}")


# Programs type-checked by an earlier evaluate whose type is not cached on the node (it lives in
# a context cache: a let variable without annotation below); a module remembers in its cache.
_CHECKED: weakref.WeakKeyDictionary[Expr, Type] = weakref.WeakKeyDictionary()
_MODULE_CHECKED = "evaluate_checked"  # main's type, once main and what it reaches are checked
_CALLEES_CHECKED = "evaluate_callees_checked"  # what main reaches (main has unannotated parameters)


def _type_check(program: Expr, mod: Module | None, inputs: Sequence[Any]) -> Type | None:
    """Type-check ``program`` before it runs; an ill-typed one raises IllTypedProgramError.
    The result type of a function (None for a closed expression, or when not checked).

    * a module's ``main`` (annotated parameters): typed through the module (its type cache, so a
      second evaluate of the module costs nothing), and so is every function ``main`` reaches
      (an annotated function's body too, not only its signature);
    * a function with annotated parameters, or a closed expression: ``infer_type`` (structural
      types are cached on the nodes: a second evaluate costs nothing);
    * a function (or ``main``) with unannotated parameters: typed with its parameters given the
      types of the input values (``Tensor[shape, dtype]`` of an array, tuples of them); an input
      the type checker cannot describe (a Python number, a closure, a value of a type
      definition) leaves the program to the run's own checks.

    Symbols and ``?`` in the types are fine here: the inputs are bound to them afterwards
    (:func:`_bind_inputs`)."""
    try:
        if isinstance(program, Function) and any(p.type_annotation is None for p in program.params):
            rt = _check_with_inputs(program, mod, inputs)
            if mod is not None:
                _check_module(mod, main_too=False)
            return rt
        if mod is not None:
            t = _check_module(mod, main_too=True)
        else:
            t = cached_type(program) or _CHECKED.get(program)
            if t is None:
                if program._mask & F_GLOBAL:
                    raise _needs_module(program)
                t = infer_type(program)
                if cached_type(program) is None:
                    _CHECKED[program] = t
        return t.ret_type if type(t) is FuncType else None
    except TypeCheckError as e:
        if isinstance(e, IllTypedProgramError):
            raise
        raise IllTypedProgramError(f"the program is ill-typed: {e}") from None


def _needs_module(program: Expr) -> EvaluationError:
    g = global_vars(program)[0]
    return EvaluationError(f"@{g.name_hint} needs a module: evaluate the module, not a bare function")


def _check_module(mod: Module, main_too: bool) -> Type | None:
    """Type-check ``main`` (if ``main_too``) and every function it reaches, once per module
    (remembered in the module's cache); ``main``'s type if checked."""
    cache = mod._cache
    main_t = cache.get(_MODULE_CHECKED)
    if main_t is not None:  # main and what it reaches
        return main_t
    if not main_too and cache.get(_CALLEES_CHECKED):
        return None
    names = ["main"]
    seen = {"main"}
    while names:
        f = mod[names.pop()]
        if f._mask & F_GLOBAL:
            for g in global_vars(f):
                n = g.name_hint
                if n not in seen and n in mod:
                    seen.add(n)
                    names.append(n)
    for n in sorted(seen):
        if n != "main":
            infer_type(mod[n], mod)  # cached in the module: free the second time
    cache[_CALLEES_CHECKED] = True
    if not main_too:
        return None
    main_t = cache[_MODULE_CHECKED] = infer_type(mod["main"], mod)
    return main_t


def _check_with_inputs(f: Function, mod: Module | None, inputs: Sequence[Any]) -> Type | None:
    """Type-check ``f``, its unannotated parameters typed by the input values (module ``mod``
    for global calls): its result type; nothing is checked (None) if an input has no type the
    checker knows."""
    from ..text.printer import short_repr

    env: dict[Var, Type] = {}
    for p, v in zip(f.params, inputs):
        if p.type_annotation is None:
            t = _value_type(v)
            if t is None:
                return None
            env[p] = t
    if mod is None and f._mask & F_GLOBAL:
        raise _needs_module(f)
    # a cache of its own: the types below the parameters hold for these inputs only
    body_t = infer_type(f.body, mod, cache={}, env=env)
    rt = f.ret_type
    if rt is None or rt is body_t:
        return body_t
    if not accepts(rt, body_t):
        raise TypeCheckError(f"{short_repr(f)}: declared return type {_type_str(rt)} but the body has "
                             f"type {_type_str(body_t)} (the parameters typed by the inputs: "
                             f"{', '.join('%' + p.name_hint + ': ' + _type_str(t) for p, t in env.items())})")
    return rt


def _value_type(value: Any) -> Type | None:
    """The type of an input value: ``Tensor[shape, dtype]`` of an array or numpy scalar, a tuple
    type of a tuple of such values (iteratively); None for anything else."""
    # post-order over nested tuples: (value, done)
    stack: list[tuple[Any, bool]] = [(value, False)]
    out: list[Type] = []
    while stack:
        v, done = stack.pop()
        if done:
            n = len(v)
            fields = out[len(out) - n:] if n else []
            del out[len(out) - n:]
            out.append(TupleType(fields))
        elif isinstance(v, (np.ndarray, np.generic)):
            try:
                out.append(TensorType(v.shape, v.dtype.name))
            except PyIRError:
                return None
        elif type(v) is tuple:
            stack.append((v, True))
            stack.extend((x, False) for x in reversed(v))
        else:
            return None
    return out[0]


def output_types(values: Any) -> Sequence[Type]:  # pragma: no cover - debugging aid
    """TensorTypes of evaluated outputs."""
    vs = values if isinstance(values, tuple) else (values,)
    return [TensorType(v.shape, v.dtype) for v in vs]

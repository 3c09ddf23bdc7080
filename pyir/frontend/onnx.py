"""The ONNX importer: ``from_onnx(model_or_path) -> Module``.

Every ONNX node becomes one or a few pyir operator calls (see
:mod:`pyir.frontend._onnx_ops` for the operator table).  ``Shape`` and everything
computed only from constants is folded at import time, so ``Reshape`` and friends
get constant attributes.  A shape argument computed at run time (a graph input, or
computed from one) builds the ``dyn.*`` operator (:mod:`pyir.op.dyn`: the rank is the
static length of the shape tensor, the dimensions ``?``);
:class:`pyir.transform.DynamicToStatic` makes it static once the argument is known.
Named dynamic dimensions of graph inputs (``dim_param``) become symbolic dimensions
(``pyir.sym(name)``) unless ``dims=`` binds them; unnamed ones become ``?``.

Lineage back to the model: the returned module's first pass record is named
``"from_onnx"`` and its ``sources`` table maps the id of every expression the
importer created to the ONNX node it came from, as ``(node name, op type)``
(unnamed nodes are named by their first output).  When several ONNX nodes
produce the very same (hash-consed) expression, the value is a tuple of such
pairs.  :func:`onnx_sources` answers "which ONNX nodes does this expression,
of this or any later module of the pipeline, come from?".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from xxhash import xxh3_128, xxh3_128_digest

from ..errors import FrontendError, PyIRError
from ..ir.dims import Any as AnyDim
from ..ir.dims import Dim, sym
from ..ir.expr import Constant, Expr, Function, Tuple, Var
from ..ir.lineage import PassRecord
from ..ir.module import Module
from ..ir.traverse import expr_children
from ..ir.types import TensorType, dtype_kind
from ..progress import Progress

__all__ = ["FrontendError", "from_onnx", "onnx_sources", "source_table"]


def _load_onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise FrontendError('from_onnx needs the onnx package: pip install "pyir[onnx]"') from None
    return onnx


# op_type -> converter; filled by pyir.frontend._onnx_ops when the frontend package is imported
CONVERTERS: dict[str, Any] = {}
# op_type -> rule computing the known value of the node's integer output from its inputs' known
# values (Ctx.shape_value): symbolic shape arithmetic; filled by pyir.frontend._onnx_ops
SHAPE_RULES: dict[str, Any] = {}


class _Attrs:
    """The attributes of one ONNX node; remembers which ones the converter read."""

    def __init__(self, node: Any, onnx: Any) -> None:
        self.node = node
        self.values: dict[str, Any] = {}
        self.graphs: dict[str, Any] = {}
        for a in node.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                self.graphs[a.name] = a.g
            if a.type == onnx.AttributeProto.GRAPH or a.type == onnx.AttributeProto.GRAPHS:
                self.values[a.name] = _UNSUPPORTED
                continue
            v = onnx.helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, onnx.TensorProto):
                v = onnx.numpy_helper.to_array(v)
            elif isinstance(v, list):
                v = [x.decode() if isinstance(x, bytes) else x for x in v]
            self.values[a.name] = v
        self.used: set[str] = set()

    def get(self, name: str, default: Any = None) -> Any:
        """The value of attribute ``name`` (``default`` if absent)."""
        self.used.add(name)
        v = self.values.get(name, default)
        if v is _UNSUPPORTED:
            raise FrontendError(f"attribute {name!r} holds a subgraph, which is not supported")
        return v

    def graph(self, name: str) -> Any:
        """The subgraph (a ``GraphProto``) of attribute ``name``, None if absent."""
        self.used.add(name)
        return self.graphs.get(name)

    def ints(self, name: str, default: Any = None) -> Any:
        """An ints attribute as a tuple (``default`` if absent)."""
        v = self.get(name, None)
        return default if v is None else tuple(int(x) for x in v)

    def ignore(self, *names: str) -> None:
        """Mark attributes as handled without reading them (they do not matter at inference)."""
        self.used.update(names)

    def unused(self) -> list[str]:
        """Attributes present on the node that the converter did not read."""
        return sorted(set(self.values) - self.used)


_UNSUPPORTED = object()


class Ctx:
    """What a converter sees of the node being converted: its inputs, attributes and opset."""

    def __init__(self, imp: _Importer, node: Any, attrs: _Attrs) -> None:
        self._imp = imp
        self.node = node
        self.attrs = attrs
        self.opset = imp.opset
        self.dynamic = False

    @property
    def n_inputs(self) -> int:
        """Number of inputs (trailing absent ones included)."""
        return len(self.node.input)

    def has(self, i: int) -> bool:
        """Whether optional input ``i`` is given."""
        return i < len(self.node.input) and self.node.input[i] != ""

    def x(self, i: int) -> Expr:
        """Input ``i`` as an expression."""
        if not self.has(i):
            raise FrontendError(f"input {i} is required")
        e = self._imp.expr(self.node.input[i])
        if type(e) is not Constant:
            self.dynamic = True
        return e

    def const(self, i: int) -> np.ndarray:
        """Input ``i`` as a numpy array known at import time (FrontendError if it is not)."""
        if not self.has(i):
            raise FrontendError(f"input {i} is required")
        name = self.node.input[i]
        arr = self._imp.static(name)
        if arr is None:
            raise FrontendError(f"input {i} ({name!r}) must be a constant (static shapes only)")
        return arr

    def subgraph(self, graph: Any, inputs: Sequence[Expr]) -> list[Expr]:
        """The outputs of ``graph`` (a control-flow body) with its inputs bound to ``inputs``; its
        nodes see the values of the enclosing graphs by name (see :meth:`_Importer.subgraph`)."""
        outs = self._imp.subgraph(graph, inputs)
        if any(type(o) is not Constant for o in outs):
            self.dynamic = True
        return outs

    def maybe_const(self, i: int) -> np.ndarray | None:
        """Input ``i`` as a numpy array when it is known at import time; None when it is computed
        at run time or absent."""
        if not self.has(i):
            return None
        return self._imp.static(self.node.input[i])

    def shape_value(self, i: int) -> tuple[bool, tuple[Any, ...]] | None:
        """Input ``i`` as a known 0-D or 1-D integer value whose entries may be symbolic
        dimensions (``Shape`` of a symbolic tensor, and the arithmetic, gathers, slices and
        concatenations of such values): ``(is 0-D, entries)``, or None when unknown."""
        arr = self.maybe_const(i)
        if arr is not None:
            if arr.dtype.kind in "iu" and arr.ndim <= 1:
                return arr.ndim == 0, tuple(int(v) for v in arr.reshape(-1))
            return None
        if not self.has(i):
            return None
        return self._imp.shape_values.get(self._imp.expr(self.node.input[i]).id)

    def set_shape_value(self, e: Expr, scalar: bool, values: Sequence[Any]) -> Expr:
        """Record the known value of the integer expression ``e`` (see :meth:`shape_value`)."""
        self._imp.shape_values[e.id] = (scalar, tuple(values))
        return e

    def const_or(self, i: int, default: Any) -> Any:
        """Input ``i`` as a constant numpy array, or ``default`` when absent."""
        return self.const(i) if self.has(i) else default


def _tensor_type(vi: Any, onnx: Any, shapes: Mapping[str, Sequence[Any]], dims: Mapping[str, Any]
                 ) -> TensorType:
    """The type of graph input ``vi``: ``shapes[name]`` if given; else its declared shape, a named
    dynamic dimension (``dim_param``) becoming ``dims[name]`` if bound, else the symbol
    ``pyir.sym(name)``, and an unnamed one ``?``."""
    tt = vi.type.tensor_type
    if not vi.type.HasField("tensor_type"):
        raise FrontendError(f"graph input {vi.name!r}: only tensor inputs are supported")
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
    if vi.name in shapes:
        try:
            return TensorType(tuple(shapes[vi.name]), dtype)
        except PyIRError as e:
            raise FrontendError(f"shapes[{vi.name!r}]: {e}") from None
    if not tt.HasField("shape"):
        raise FrontendError(f"graph input {vi.name!r} has no declared rank; "
                            f"pass shapes={{{vi.name!r}: (...)}}")
    out: list[Any] = []
    for d in tt.shape.dim:
        if d.HasField("dim_value"):
            out.append(d.dim_value)
        elif d.dim_param:
            out.append(dims[d.dim_param] if d.dim_param in dims else sym(_dim_name(d.dim_param)))
        else:
            out.append(AnyDim)
    try:
        return TensorType(tuple(out), dtype)
    except PyIRError as e:
        raise FrontendError(f"graph input {vi.name!r}: {e}") from None


def _dim_name(name: str) -> str:
    """A ``dim_param`` as a symbol name (exporters write names such as ``batch_size`` or
    ``s77``, and also expressions such as ``2*s0``: anything else than letters, digits and
    ``_`` becomes ``_``)."""
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else "d_" + out


# element types whose raw_data is the little-endian numpy array itself (one element per item)
_RAW_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64",
               10: "float16", 11: "float64", 12: "uint32", 13: "uint64"}


def _initializer_array(t: Any, onnx: Any, base_dir: str = "") -> np.ndarray:
    """An initializer as a read-only array over its ``raw_data`` bytes, or over the bytes read from
    its external data file (no copy of the weights either way: the Constant made of it keeps those
    very bytes), else ``numpy_helper.to_array`` for the other encodings (typed fields, packed and
    non-native element types)."""
    dt = _RAW_DTYPES.get(t.data_type)
    if dt is None or sys.byteorder != "little" or not t.HasField("raw_data") \
            or t.data_location == onnx.TensorProto.EXTERNAL or t.HasField("segment"):
        try:
            return np.asarray(onnx.numpy_helper.to_array(t, base_dir))
        except (TypeError, ValueError, OSError, onnx.checker.ValidationError) as e:
            raise FrontendError(f"initializer {t.name!r}: {e}") from None
    shape = tuple(int(d) for d in t.dims)
    raw = t.raw_data
    size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dt).itemsize
    if any(d < 0 for d in shape) or len(raw) != size:
        raise FrontendError(f"initializer {t.name!r}: {len(raw)} bytes of raw data for shape {shape} "
                            f"of {dt}")
    return np.frombuffer(raw, dtype=dt).reshape(shape)


class _Importer:
    def __init__(self, model: Any, onnx: Any, weights: str, shapes: Mapping[str, Sequence[Any]],
                 dims: Mapping[str, Any], base_dir: str = "") -> None:
        self.onnx = onnx
        self.model = model
        self.graph = model.graph
        self.weights = weights
        self.opset = 1
        for imp in model.opset_import:
            if imp.domain in ("", "ai.onnx"):
                self.opset = imp.version
        self.env: dict[str, Expr] = {}
        self.inits: dict[str, np.ndarray] = {}
        self.params: list[Var] = []
        self.weight_params: list[Var] = []
        self.param_values: dict[str, np.ndarray] = {}
        self.sources: dict[bytes, Any] = {}
        self.seen: set[bytes] = set()
        # the known values of integer shape computations over symbolic dimensions, by
        # expression id: (is a 0-D scalar, the values as ints or dimensions); see Ctx.shape_value
        self.shape_values: dict[bytes, tuple[bool, tuple[Any, ...]]] = {}
        self._uid_salt = b""
        for t in self.graph.initializer:
            self.inits[t.name] = _initializer_array(t, onnx, base_dir)
        for vi in self.graph.input:
            if vi.name in self.inits:
                continue  # an input with a default: the initializer
            v = self._param(vi.name, _tensor_type(vi, onnx, shapes, dims))
            self.env[vi.name] = v
            self.params.append(v)
            self._attribute([v], (vi.name, "Input"), descend=False)

    def _param(self, name: str, ty: TensorType) -> Var:
        """A parameter of ``main``: its uid is derived from the graph (inputs, outputs and nodes,
        not the initializers' data), its name and its type, so importing a model gives the same
        variables, hence the same content ids, every time and in every process."""
        if not self._uid_salt:
            h = xxh3_128(b"pyir.from_onnx")
            for part in (self.graph.input, self.graph.output, self.graph.node):
                for x in part:
                    h.update(x.SerializeToString())
            self._uid_salt = h.digest()
        return Var(name, ty, uid=xxh3_128_digest(self._uid_salt + name.encode() + b"\0" + ty.id))

    # -- values -------------------------------------------------------------------------------
    def expr(self, name: str) -> Expr:
        e = self.env.get(name)
        if e is not None:
            return e
        arr = self.inits.get(name)
        if arr is None:
            raise FrontendError(f"value {name!r} is used before it is defined "
                                "(the graph must be topologically sorted)")
        if self.weights == "params":
            e = self._param(name, TensorType(arr.shape, arr.dtype))
            self.weight_params.append(e)
            self.param_values[name] = arr
        else:
            e = Constant(arr)
        self.env[name] = e
        self._attribute([e], (name, "Initializer"), descend=False)
        return e

    def static(self, name: str) -> np.ndarray | None:
        if name in self.inits:
            return self.inits[name]
        e = self.expr(name)
        return e.data if type(e) is Constant else None

    # -- lineage --------------------------------------------------------------------------------
    def _attribute(self, outs: Sequence[Expr], src: tuple[str, str], descend: bool = True) -> None:
        """Attribute every expression first reached from ``outs`` to ``src``."""
        stack: list[Any] = []
        for o in outs:
            if o.id in self.seen:
                old = self.sources.get(o.id)
                if old is not None and src not in _pairs(old):
                    self.sources[o.id] = (*_pairs(old), src)
            else:
                stack.append(o)
        while stack:
            n = stack.pop()
            if n.id in self.seen:
                continue
            self.seen.add(n.id)
            self.sources[n.id] = src
            if descend:
                stack.extend(c for c in expr_children(n) if c.id not in self.seen)

    # -- nodes -----------------------------------------------------------------------------------
    def convert_node(self, node: Any) -> None:
        label = node.name or (node.output[0] if node.output else node.op_type)
        where = f"ONNX node {label!r} ({node.op_type})"
        if node.domain not in ("", "ai.onnx"):
            raise FrontendError(f"{where}: operator domain {node.domain!r} is not supported")
        conv = CONVERTERS.get(node.op_type)
        if conv is None:
            raise FrontendError(f"{where}: unsupported operator {node.op_type!r} (opset {self.opset})")
        attrs = _Attrs(node, self.onnx)
        cx = Ctx(self, node, attrs)
        try:
            out = conv(cx, attrs)
            outs = list(out) if isinstance(out, (list, tuple)) else [out]
            extra = attrs.unused()
            if extra:
                raise FrontendError(f"unsupported attribute(s) {extra}")
            if not cx.dynamic:
                outs = [_fold(o) for o in outs]
            elif node.op_type in SHAPE_RULES and len(outs) == 1:
                outs = [self._shape_rule(cx, attrs, outs[0])]
            for o in outs:
                o.checked_type  # noqa: B018 - type each new node now (errors name this ONNX node)
        except FrontendError as e:
            raise FrontendError(f"{where}: {e}") from None
        except PyIRError as e:
            raise FrontendError(f"{where}: {type(e).__name__}: {e}") from e
        names = list(node.output)
        while names and names[-1] == "":
            names.pop()
        if len(outs) < len(names):
            raise FrontendError(f"{where}: only {len(outs)} of its {len(names)} outputs are supported")
        for name, value in zip(names, outs):
            if name:
                self.env[name] = value
        self._attribute(outs[:len(names)], (label, node.op_type))

    def subgraph(self, graph: Any, inputs: Sequence[Expr]) -> list[Expr]:
        """Import a subgraph (the body of If, Loop, Scan): its formal inputs bound to ``inputs``, its
        initializers and node outputs local to it, every other name resolved in the enclosing
        scope.  Returns the expressions of its outputs; the enclosing scope is left unchanged."""
        if len(graph.input) != len(inputs):
            raise FrontendError(f"subgraph {graph.name!r} takes {len(graph.input)} inputs, got {len(inputs)}")
        saved_env, saved_inits = self.env, self.inits
        self.env = dict(saved_env)
        self.inits = dict(saved_inits)
        try:
            for t in graph.initializer:
                arr = self.onnx.numpy_helper.to_array(t)
                self.inits[t.name] = arr
                self.env.pop(t.name, None)
            for vi, e in zip(graph.input, inputs):
                self.env[vi.name] = e
            for node in graph.node:
                self.convert_node(node)
            return [self.expr(vi.name) for vi in graph.output]
        finally:
            self.env, self.inits = saved_env, saved_inits

    def _shape_rule(self, cx: Ctx, attrs: _Attrs, out: Expr) -> Expr:
        """``out`` with its known value recorded, or as a constant when every entry is an int."""
        t = out.checked_type
        if not isinstance(t, TensorType) or dtype_kind(t.dtype) not in "iu" or t.ndim > 1:
            return out
        try:
            val = SHAPE_RULES[cx.node.op_type](cx, attrs)
        except PyIRError:  # e.g. dimension arithmetic that is provably negative: leave it unknown
            return out
        if val is None:
            return out
        scalar, values = val
        if scalar is None:  # the rule keeps the entries, the result's type says 0-D or 1-D
            scalar = t.ndim == 0
        n = 1 if t.ndim == 0 else t.shape[0]
        if scalar != (t.ndim == 0) or (type(n) is int and len(values) != n):
            return out  # a rule that does not match the converted node's type: not recorded
        if all(type(v) is int for v in values):
            arr = np.asarray(values[0] if scalar else values, dtype=t.dtype)
            return Constant(arr)
        return cx.set_shape_value(out, scalar, values)

    def run(self) -> Module:
        with Progress("ONNX import", total=len(self.graph.node), unit="nodes") as shown:
            for node in self.graph.node:
                self.convert_node(node)
                shown.update()
        outs = []
        for vi in self.graph.output:
            if vi.name not in self.env and vi.name not in self.inits:
                raise FrontendError(f"graph output {vi.name!r} is not computed by any node")
            e = self.expr(vi.name)
            self._check_output(vi, e)
            outs.append(e)
        body = outs[0] if len(outs) == 1 else Tuple(outs)
        func = Function([*self.params, *self.weight_params], body)
        mod = Module({"main": func})
        mod.type_of(func)
        record = PassRecord("from_onnx", options="", edges=(), removed=frozenset(), sources=self.sources)
        return mod._derive(mod.functions(), history=mod.pass_records.append(record))

    def _check_output(self, vi: Any, e: Expr) -> None:
        t = e.checked_type
        if not vi.type.HasField("tensor_type") or not vi.type.tensor_type.HasField("shape"):
            return
        dims = vi.type.tensor_type.shape.dim
        if not isinstance(t, TensorType) or len(dims) != len(t.shape) or any(
                d.HasField("dim_value") and type(s) is int and d.dim_value != s  # ``?``: checked at run time
                for d, s in zip(dims, t.shape)):
            declared = tuple(d.dim_value if d.HasField("dim_value") else d.dim_param for d in dims)
            raise FrontendError(f"graph output {vi.name!r}: the model declares shape {declared}, "
                                f"the imported program computes {t}")


def _pairs(v: Any) -> tuple[tuple[str, str], ...]:
    return (v,) if isinstance(v[0], str) else v


def _fold(e: Expr) -> Expr:
    """Evaluate an expression built only from constants (static shape computations)."""
    if type(e) is Constant:
        return e
    from ..analysis.interp import evaluate

    t = e.checked_type
    if not isinstance(t, TensorType):
        return e
    return Constant(np.asarray(evaluate(Function([], e))))


def from_onnx(model_or_path: Any, *, weights: str = "constants",
              shapes: Mapping[str, Sequence[Any]] | None = None,
              dims: Mapping[str, Any] | None = None) -> Any:
    """Import an ONNX model (a ``ModelProto``, a path, or the serialized bytes).

    Args:
        model_or_path: the model.
        weights: ``"constants"`` embeds the initializers as constants; ``"params"``
            makes each initializer used as data an extra parameter of ``main`` (after
            the graph inputs) and returns ``(mod, {name: array})``.
        shapes: shapes for graph inputs, by input name (overriding the declared shape; ints,
            ``pyir.sym`` symbols or ``pyir.Any``).
        dims: values for named dynamic dimensions (``dim_param``), by dimension name, e.g.
            ``dims={"batch": 1}``.  A named dimension left unbound becomes the symbolic dimension
            ``pyir.sym(name)`` (the same symbol wherever the name appears); an unnamed dynamic
            dimension becomes ``?`` (``pyir.Any``).

    Returns:
        The module (``main`` takes the graph inputs in order), or ``(module, params)``.

    Raises:
        FrontendError: onnx missing, unsupported operator/attribute, bad ``shapes``/``dims``.
    """
    if weights not in ("constants", "params"):
        raise FrontendError(f"weights must be 'constants' or 'params', got {weights!r}")
    onnx = _load_onnx()
    base_dir = ""
    if isinstance(model_or_path, (str, os.PathLike)):
        try:
            # external data is read per initializer by the importer, straight into the constants'
            # bytes: the loaded proto never holds a second copy of the weights
            model = onnx.load(os.fspath(model_or_path), load_external_data=False)
            base_dir = os.path.dirname(os.path.abspath(os.fspath(model_or_path)))
        except (OSError, onnx.onnx_cpp2py_export.checker.ValidationError, ValueError) as e:
            raise FrontendError(f"cannot load ONNX model {model_or_path!r}: {e}") from e
    elif isinstance(model_or_path, bytes):
        model = onnx.load_model_from_string(model_or_path)
    elif isinstance(model_or_path, onnx.ModelProto):
        model = model_or_path
    else:
        raise FrontendError("expected an onnx.ModelProto, a path or bytes, "
                            f"got {type(model_or_path).__name__}")
    for k, v in (dims or {}).items():
        if not isinstance(k, str):
            raise FrontendError(f"dims keys are dimension names (str), got {k!r}")
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, Dim)):
            raise FrontendError(f"dims[{k!r}] must be an int or a dimension, got {v!r}")
    imp = _Importer(model, onnx, weights, shapes or {}, {k: int(v) if isinstance(v, (int, np.integer))
                                                          else v for k, v in (dims or {}).items()},
                    base_dir)
    mod = imp.run()
    if weights == "params":
        return mod, dict(imp.param_values)
    return mod


# -- lineage queries ---------------------------------------------------------------------------------


def source_table(mod: Module) -> Mapping[bytes, Any]:
    """The ``sources`` table of the ``from_onnx`` record of ``mod``'s history (empty if none).

    A read-only mapping: id -> ``(node name, op type)`` or a tuple of such pairs.
    """
    for rec in mod.pass_records:
        if rec.name == "from_onnx" and rec.sources:
            return rec.sources
    return {}


def onnx_sources(mod: Module, expr: Any) -> set[tuple[str, str]]:
    """The ONNX nodes, as ``(name, op_type)``, that ``expr`` of ``mod`` comes from.

    ``expr`` may be an expression (or id) of any module of a pipeline that
    started with :func:`from_onnx`: it is traced back through every pass record.
    """
    table = source_table(mod)
    out: set[tuple[str, str]] = set()
    for i in mod.origins(expr):
        v = table.get(i)
        if v is not None:
            out.update(_pairs(v))
    return out


"""Measure pyir's Relay text parser against the Relay programs of TVM's own test suite.

::

    python tools/relay_corpus.py [--repo /work/.mirror/apache+tvm/repo] [--commit 22a9d388d4]
                                 [--list] [--failures] [--dump DIR]

Reads TVM's sources from a git checkout (a bare git dir is fine: files are read with
``git show``) at the last release that still had Relay (v0.18.0), extracts every Relay program
text of ``tests/python/relay/`` and the ``.rly`` files of ``python/tvm/relay/std/``, and reports
how many pyir parses, type-checks and round-trips through its printer, with the blockers counted.

Extraction (heuristic, on the Python syntax tree of each test file):

* a *program* is the first argument of a call of one of the parsing functions
  (``tvm.relay.parse``/``fromtext``/``parse_expr``/``tvm.parser.parse*``/``relay.parse_module``, and
  test_ir_parser.py's helpers ``parse_text``/``parse_module``/``assert_parses_as``/``parses_as``/
  ``assert_parse_module_as``), when that argument is a string literal, a concatenation of string
  literals and module-level string constants (``SEMVER + "..."``), or a local / module-level
  name assigned such a string in the same function or module;
* any other string literal that contains ``#[version = "0.0.5"]`` is a module program too
  (programs built as strings and parsed by a helper); strings with ``{}`` format fields that are
  filled in at run time (``.format``, f-strings) cannot be extracted and are skipped (counted);
* mode: module text (``pyir.parse``) for ``parse``/``fromtext``/``parse_module`` and the version-
  prefixed strings; expression text (``pyir.parse_expr`` with ``free_vars=False``: an undefined
  ``%x`` is an error, as in TVM) for ``parse_expr``/``parse_text``/``assert_parses_as``/``parses_as``;
* TVM *rejects* a program if its parse call is inside ``with pytest.raises(...)`` or is an
  argument of ``assert_parse_error``/``pytest.raises(..., f, text)``; otherwise TVM accepts it.
* test_ir_parser.py's ``parse_module`` helper prefixes ``SEMVER``; the prefix is added here too.
* ``nat.rly`` is parsed with TVM's ``prelude.rly`` as its init module (TVM's tests import it
  into a ``Prelude``'s module, whose ``List``, ``@hd`` and ``@tl`` it uses);
* Python-side tables and modules (:func:`python_side`): when the parse call passes an
  ``init_module``, or its text uses ``meta[relay.Constant][i]`` without a metadata section, the
  call's ``init_module``/``init_meta_table`` arguments (positional or keyword) are evaluated the way
  the test builds them: a name is looked up in the enclosing functions (its last binding before the
  call, then the statements that mutate it: ``mod[gv] = f``, ``core.import_from_std(...)``), then in
  the module, and the helpers the file defines (``make_consts``, ``rand``, ``mnist_consts``...) run
  in a namespace of shims building pyir objects: ``relay.const`` (TVM's dtype rules) ->
  ``pyir.Constant``, ``tvm.nd.array`` -> numpy, ``np`` (its random draws are zeros of the same shape
  and dtype), VirtualDevice/Target/device as opaque placeholders (the parser keeps
  ``meta[VirtualDevice][i]`` as text), ``tvm.IRModule()``/``relay.parse`` -> pyir modules,
  ``import_from_std`` -> pyir's parse of the std ``.rly`` file, and a ``@T.prim_func`` stored under
  a ``relay.GlobalVar(name, type_annot=FuncType)`` -> a pyir function of that type (``Extern=1``,
  returning its output parameter).  The table goes to ``pyir.parse(meta_table=)``, the module to
  ``init_module=``; whatever the shims do not model leaves the program failing with the reason
  ``... from Python (not evaluable: ...)``.  (If only the init module is not evaluable, the text is
  parsed without it: it passes only if it needs nothing from it.)  A text the test builds in Python
  (a name it extends with ``+=``, in a loop) is evaluated the same way.

Blockers: a program that does not parse or type-check is classified by the first failure's
message (pyir's ParseError/TypeCheckError text, reduced to a category by :func:`blocker`), so that
the constructs other branches add (ADTs, refs, type parameters, annotation operators) are counted
separately.
"""

from __future__ import annotations

import argparse
import ast
import collections
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any

DEFAULT_REPO = "/work/.mirror/apache+tvm/repo"
DEFAULT_COMMIT = "22a9d388d4"
SEMVER = '#[version = "0.0.5"]\n'

MODULE_FUNCS = {"parse", "fromtext", "parse_module", "assert_parse_module_as", "FromText"}
EXPR_FUNCS = {"parse_expr", "parse_text", "assert_parses_as", "parses_as"}
PARSER_PREFIXED = {"parse_module", "assert_parse_module_as"}  # test_ir_parser.py helpers add SEMVER
_VERSION = '#[version = "0.0.5"]'


@dataclass
class Program:
    file: str
    line: int
    text: str
    mode: str  # "module" | "expr"
    accepted: bool
    how: str = ""
    result: str = ""  # "ok" | "parse" | "type" | "roundtrip"
    error: str = ""
    extra: dict[str, str] = field(default_factory=dict)
    ctx: Any = None  # (file syntax tree, enclosing FunctionDefs outer to inner, the parse Call)
    meta_table: dict[str, list[Any]] | None = None  # the test's init_meta_table, built by the shims
    init_module: Any = None  # the test's init_module (a pyir Module), built by the shims
    py_error: str = ""  # why the test's Python could not be evaluated


def git_files(repo: str, commit: str) -> list[str]:
    out = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", commit],
                         check=True, capture_output=True, text=True).stdout.split("\n")
    return [f for f in out if (f.startswith("tests/python/relay/") and f.endswith(".py"))
            or (f.startswith("python/tvm/relay/std/") and f.endswith(".rly"))]


def git_show(repo: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "-C", repo, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def _callee_name(call: ast.Call) -> str:
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return ""


class _Extractor(ast.NodeVisitor):
    def __init__(self, path: str, source: str) -> None:
        self.path = path
        self.progs: list[Program] = []
        self.skipped = 0
        self.module_consts: dict[str, str] = {}
        self.scopes: list[dict[str, str]] = []
        self.funcs: list[ast.FunctionDef] = []  # the enclosing function definitions
        self.raises_depth = 0
        self.used: set[int] = set()  # ids of string nodes consumed by a parse call
        tree = ast.parse(source)
        for node in tree.body:  # module-level string constants
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                    isinstance(node.targets[0], ast.Name):
                s = self.const_str(node.value, {})
                if s is not None:
                    self.module_consts[node.targets[0].id] = s
        self.tree = tree

    def const_str(self, node: ast.AST, local: dict[str, str]) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            a, b = self.const_str(node.left, local), self.const_str(node.right, local)
            return None if a is None or b is None else a + b
        if isinstance(node, ast.Name):
            if node.id in local:
                return local[node.id]
            return self.module_consts.get(node.id)
        return None

    def run(self) -> list[Program]:
        self.visit(self.tree)
        # stray version-prefixed strings (parsed by helpers)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.used \
                    and _VERSION in node.value and node.value.strip() != _VERSION.strip():
                if re.search(r"\{[A-Za-z0-9_]*\}", node.value) and ".format" in self._line_text(node):
                    self.skipped += 1
                    continue
                self.progs.append(Program(self.path, node.lineno, node.value, "module", True, "string"))
            elif isinstance(node, ast.JoinedStr) and any(
                    isinstance(v, ast.Constant) and isinstance(v.value, str) and _VERSION in v.value
                    for v in node.values):
                self.skipped += 1
        return self.progs

    def _line_text(self, node: ast.AST) -> str:
        return ""

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        local: dict[str, str] = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(sub.targets[0], ast.Name):
                s = self.const_str(sub.value, {})
                if s is not None:
                    local[sub.targets[0].id] = s
        self.scopes.append(local)
        self.funcs.append(node)
        self.generic_visit(node)
        self.funcs.pop()
        self.scopes.pop()

    def visit_With(self, node: ast.With) -> None:
        raises = any(isinstance(it.context_expr, ast.Call) and _callee_name(it.context_expr) == "raises"
                     for it in node.items)
        self.raises_depth += raises
        self.generic_visit(node)
        self.raises_depth -= raises

    def _mark_used(self, node: ast.AST) -> None:
        for sub in ast.walk(node):
            self.used.add(id(sub))

    def visit_Call(self, node: ast.Call) -> None:
        name = _callee_name(node)
        local = self.scopes[-1] if self.scopes else {}
        rejected_call = name in ("assert_parse_error",) or (name == "raises" and len(node.args) > 1)
        if name in MODULE_FUNCS or name in EXPR_FUNCS or rejected_call:
            args = node.args[2:3] if name == "raises" else node.args[:1]
            for a in args:
                s = self.const_str(a, local)
                if s is None:
                    if isinstance(a, ast.Name) and a.id in local:
                        continue
                    continue
                if isinstance(a, ast.Name):  # the assigned string literal is consumed
                    for sub in ast.walk(self.tree):
                        if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and \
                                isinstance(sub.targets[0], ast.Name) and sub.targets[0].id == a.id:
                            self._mark_used(sub.value)
                self._mark_used(a)
                mode = "expr" if name in EXPR_FUNCS else "module"
                if name == "assert_parse_error" or name == "raises":
                    mode = "expr" if _VERSION not in s and "def @" not in s else "module"
                if name in PARSER_PREFIXED and self.path.endswith("test_ir_parser.py"):
                    s = SEMVER + s
                accepted = not (self.raises_depth or rejected_call)
                self.progs.append(Program(self.path, node.lineno, s, mode, accepted, name,
                                          ctx=(self.tree, list(self.funcs), node)))
        self.generic_visit(node)


def extract(repo: str, commit: str) -> tuple[list[Program], int]:
    progs: list[Program] = []
    skipped = 0
    for path in git_files(repo, commit):
        src = git_show(repo, commit, path)
        if path.endswith(".rly"):
            progs.append(Program(path, 1, src, "module", True, "rly"))
            continue
        if not re.search(r"parse|fromtext|0\.0\.5", src):
            continue
        ex = _Extractor(path, src)
        progs.extend(ex.run())
        skipped += ex.skipped
    return progs, skipped


_CATEGORIES = [  # (category, regex over the error message or the text)
    ("constants from Python (init_meta_table, not in the text)",
     r"refers to the metadata section, which is missing"),
    ("globals from Python (init_module: PrimFuncs, externals)", r"undefined global function"),
    ("ADT/match (relaylang)", r"\btype [A-Z]|\bmatch\b|\bCons\b|\bNil\b|undefined .*constructor|List\["),
    ("refs (relaylang)", r"\bref\b|ref_read|ref_write|RefCreate"),
    ("type params (relaylang)", r"def @[A-Za-z_0-9]+\["),
    ("on_device/device_copy (relayops)", r"on_device|device_copy"),
    ("memory/vm ops (relayops)", r"memory\.|vm\.|call_lowered"),
    ("other relayops operator", r"nn\.batch_matmul|layout_transform|collapse_sum_like|right_shift"),
    ("Relay signatures (relayops: nn.pad, concatenate, mixed-dtype conv2d)",
     r"'nn\.pad' takes|concatenate: input|data dtype .* != weight dtype"),
    ("unannotated parameters (pyir infers no parameter types)", r"has no type annotation"),
]


def blocker(p: Program) -> str:
    msg = p.error
    if p.py_error and re.search(r"refers to the metadata section, which is missing|undefined global "
                                r"function|not a type definition read so far", msg):
        what = "constants" if "metadata section" in msg else "globals/types"
        return f"{what} from Python (not evaluable: {p.py_error[:110]})"
    m = re.search(r"unknown operator '?([A-Za-z_][A-Za-z0-9_.]*)", msg)
    text = p.text
    for cat, rx in _CATEGORIES:
        if re.search(rx, msg):
            return cat
    if m:
        return f"operator {m.group(1)}"
    for cat, rx in _CATEGORIES:
        if re.search(rx, text):
            return cat + " (in text)"
    first = msg.split("\n")[0]
    first = re.sub(r"^\d+:\d+: ", "", first)
    first = re.sub(r"'[^']*'|\"[^\"]*\"|%[A-Za-z0-9_]+|\d+", "_", first)
    return first[:90]


def _normalize(text: str) -> str:
    """Text without comments and whitespace (for comparing TVM's text with pyir's TVM form)."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"\s+", "", text)


# -- pyir's TVM form against the original text -------------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[%@]?[A-Za-z_][A-Za-z0-9_.]*|%?\d[\d.]*(?:[eE][+-]?\d+)?\w*|\S')
_NUMBER = re.compile(r"\d[\d.]*(?:[eE][+-]?\d+)?\w*")
_HEADER_RE = re.compile(r'#\[version\s*=\s*"0\.0\.5"\]')
_NUMBERED = re.compile(r"^\s*%\d+\s*=", re.M)
_SUGAR = set("+-*/<>=!")
# kind of each category: "hand" (the original is not what TVM's printer writes: pyir's text is),
# "printer" (pyir's TVM form deviates from TVM's printer), "model" (pyir's program differs from
# TVM's in a way no printer can undo: sorted attributes, shared equal nodes, dropped annotations)
TVM_FORM_KINDS = {
    "let form or own binding names": "hand",
    "own variable names": "hand",
    "operator sugar (1 + 2)": "hand",
    "type alias (int)": "hand",
    "parenthesized expression": "hand",
    "definition order": "hand",
    "ADT constructors without trailing comma": "hand",
    "bound where TVM's printer inlines": "hand",
    "inlined where the original binds": "hand",
    "numbering (excerpt, or not TVM's counter)": "hand",
    "default attribute written": "hand",
    "literal not as TVM prints it (%g floats, int suffixes)": "hand",
    "extern type (TVM's printer writes type T {})": "hand",
    "metadata section absent (the test passes the table from Python)": "hand",
    "0-d tensor type written Tensor[(), dtype]": "hand",
    "binding order (TVM's post-order: hand-ordered originals, pyir's hoisted fns)": "unresolved",
    "nested fn type parameters (pyir infers them)": "model",
    "call attribute order": "printer",
    "match clause without braces": "hand",
    "other (unclassified)": "printer",
    "function attribute order (pyir's Attrs are sorted)": "model",
    "metadata index (equal constants are one pyir node)": "model",
    "parameter virtual_device dropped": "model",
    "type definition TVM's text does not declare": "model",
    "shared equal subexpression (hash-consing)": "model",
}


def _tokens(text: str) -> Any:
    return (m.group() for m in _TOKEN.finditer(re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)))


def looks_tvm_printed(text: str, mode: str) -> bool:
    """The rule for "TVM-printer-style originals": a module text with TVM's version header and
    at least one ``%N = `` numbered binding or ``/* ty=... */`` comment (what TVM's printer
    writes and hand-written Relay rarely does)."""
    return mode == "module" and bool(_HEADER_RE.search(text)) and (
        "/* ty=" in text or bool(_NUMBERED.search(text)))


def tvm_form_diff(original: str, printed: str, mode: str) -> tuple[str, str]:
    """("", "") if ``printed`` (pyir's TVM form) equals ``original`` up to whitespace and
    comments (an expression's text compared without the version header TVM's ``astext`` writes
    and ``parse_expr`` does not read); else (category, the first differing tokens)."""
    if mode == "expr" and not _HEADER_RE.search(original):
        printed = _HEADER_RE.sub("", printed, count=1)
    a_it, b_it = _tokens(original), _tokens(printed)
    prev: list[str] = []
    while True:
        a, b = next(a_it, None), next(b_it, None)
        if a != b:
            break
        if a is None:
            return "", ""
        prev = (prev + [a])[-8:]
    a_next = [t for _, t in zip(range(40), a_it)]
    b_next = [t for _, t in zip(range(40), b_it)]
    shown = (f"... {' '.join(prev[-4:])} >> original {a} {' '.join(a_next[:6])} "
             f"| pyir {b} {' '.join(b_next[:6])}")
    return _tvm_form_category(a or "", b or "", prev, a_next, b_next, original), shown


def _is_temp(t: str) -> bool:
    return len(t) > 1 and t[0] == "%" and t[1:].isdigit()


def _tvm_form_category(a: str, b: str, prev: list[str], a_next: list[str], b_next: list[str],
                       original: str) -> str:
    last = prev[-1] if prev else ""
    if a == "" and b == "#":
        return "metadata section absent (the test passes the table from Python)"
    if a == "extern" and b == "type":
        return "extern type (TVM's printer writes type T {})"
    if a == "Tensor" and a_next[:3] == ["[", "(", ")"]:
        return "0-d tensor type written Tensor[(), dtype]"
    if a == "[" and last == "fn" and b == "(":
        return "nested fn type parameters (pyir infers them)"
    if (_NUMBER.fullmatch(a) or a in ("-", "+")) and _NUMBER.fullmatch(b):
        return "literal not as TVM prints it (%g floats, int suffixes)"
    if a_next[:1] and a_next[0] in _SUGAR and a_next[0] != "=" and b_next[:1] == ["("]:
        return "operator sugar (1 + 2)"
    if "let" in (a, b) or (a[:1] == "%" and b[:1] == "%" and _is_temp(a) != _is_temp(b)):
        return "let form or own binding names"
    if _is_temp(a) and _is_temp(b):
        return "numbering (excerpt, or not TVM's counter)"
    if a[:1] == "%" and b[:1] == "%":
        return "own variable names"
    if a == "int" and b.startswith("int"):
        return "type alias (int)"
    if a in _SUGAR and b not in _SUGAR:
        return "operator sugar (1 + 2)"
    if a == "def" and b == "type" and b_next[:1] and not re.search(
            rf"\btype\s+{re.escape(b_next[0])}\b", original):
        return "type definition TVM's text does not declare"
    if last in ("def", "type") or {a, b} == {"def", "type"}:
        return "definition order"
    if a == "}" and b == ",":
        return "ADT constructors without trailing comma"
    if a == "{" and ((b == ":" and last[:1] == "%") or a_next[:1] == ["virtual_device"]):
        return "parameter virtual_device dropped"
    if len(prev) >= 3 and prev[-3:] == ["relay.Constant", "]", "["] and a.isdigit() and b.isdigit():
        return "metadata index (equal constants are one pyir node)"
    if a == "(" and b != "(":
        return "parenthesized expression"
    reused = _is_temp(b) and b_next[:1] in ([";"], [","], [")"])  # a value where pyir names a shared one
    twice = len(b_next) > 3 and b_next[0] == "(" and _is_temp(b_next[1]) and b_next[2:4] == [",", b_next[1]]
    if a_next[:1] == ["("] and (reused or twice):
        return "shared equal subexpression (hash-consing)"
    if last == ">" and b == "{" and a != "{":
        return "match clause without braces"
    if _is_temp(a) and a_next[:1] == ["="] and not (_is_temp(b) and b_next[:1] == ["="]):
        return "bound where TVM's printer inlines"
    if _is_temp(b) and b_next[:1] == ["="]:
        return "inlined where the original binds"
    if a_next[:1] == ["="] and b_next[:1] == ["="] and (a[:1].isupper() or b[:1].isupper()
                                                        or "global_symbol" in (a, b)):
        return "function attribute order (pyir's Attrs are sorted)"
    key = a if a_next[:1] == ["="] else a_next[0] if a == "," and a_next[1:2] == ["="] else ""
    b_call = [b, *b_next][:[b, *b_next].index(")") if ")" in [b, *b_next] else None]
    if key[:1].isalpha() and (b in (")", ",") or b_next[:1] == ["="]) and key not in b_call:
        return "default attribute written"  # pyir's call has no such attribute: TVM omits defaults
    if a_next[:1] == ["="] and b_next[:1] == ["="] and a[:1].isalpha() and b[:1].isalpha():
        return "call attribute order"
    if re.fullmatch(r"-?[\d.]+(e[+-]?\d+)?f\d*", a) and re.fullmatch(r"-?[\d.]+(e[+-]?\d+)?f\d*", b):
        return "float literal not as TVM prints it"
    if last == "=" and len(prev) > 1 and _is_temp(prev[-2]) and a[:1].isalpha() and b[:1].isalpha():
        return "binding order (TVM's post-order: hand-ordered originals, pyir's hoisted fns)"
    return "other (unclassified)"


# -- Python-side tables: the test's init_meta_table and init_module, rebuilt with shims ---------------

class NotEvaluable(Exception):
    """The test's Python uses something the shims below do not model."""


class _Opaque:
    """A TVM object pyir keeps no data of (VirtualDevice, Target, device, PassContext): any attribute
    or call is another placeholder.  The parser keeps ``meta[VirtualDevice][i]`` references as text,
    so these never reach pyir."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Opaque(f"{self.what}.{name}")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _Opaque(f"{self.what}(...)")

    def __repr__(self) -> str:
        return f"<{self.what}>"


class _Shim:
    """A namespace (``tvm``, ``tvm.relay``, ``np.random``...): a missing attribute is NotEvaluable."""

    def __init__(self, path: str, **members: Any) -> None:
        self._path = path
        self.__dict__.update(members)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotEvaluable(f"{self._path}.{name}")


class _PrimFunc:
    """A ``@T.prim_func`` of the test (its TIR body is not read)."""

    def __init__(self, name: str) -> None:
        self.name = name


class _GlobalVar:
    def __init__(self, name: str, type_annot: Any = None) -> None:
        self.name_hint, self.type_annot = name, type_annot


class _IRModule:
    """``tvm.IRModule()``: a pyir module built up by ``mod[gv] = f`` and ``import_from_std``."""

    def __init__(self, pyir: Any, std: Any, functions: Any = None) -> None:
        if functions:
            raise NotEvaluable("tvm.IRModule(functions)")
        self.pyir, self.std, self.mod = pyir, std, pyir.Module()

    def __setitem__(self, key: Any, f: Any) -> None:
        name = key.name_hint if isinstance(key, _GlobalVar) else key
        if not isinstance(name, str):
            raise NotEvaluable(f"IRModule key {type(key).__name__}")
        if isinstance(f, _PrimFunc):
            ty = key.type_annot if isinstance(key, _GlobalVar) else None
            if ty is None:
                raise NotEvaluable(f"PrimFunc @{name} without a type_annot (its type is in TIR only)")
            f = _declared(self.pyir, ty)
        if not isinstance(f, self.pyir.Function):
            raise NotEvaluable(f"IRModule entry {type(f).__name__}")
        self.mod = self.mod.with_function(name, f)

    def import_from_std(self, name: str) -> None:
        self.mod = self.pyir.parse(self.std(name), init_module=self.mod)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotEvaluable(f"IRModule.{name}")


def _declared(pyir: Any, ty: Any) -> Any:
    """A pyir function of the FuncType ``ty`` a test gives its PrimFunc's GlobalVar (``type_annot``):
    ``fn (%a0: T0, ...) -> R { %ai }`` returning its last parameter of type R (a PrimFunc writes its
    result into that buffer), marked ``Extern=1``; NotEvaluable if no parameter has type R."""
    from pyir.ir.types import FuncType
    if type(ty) is not FuncType:
        raise NotEvaluable(f"type_annot {ty}")
    params = [pyir.var(f"a{i}", t) for i, t in enumerate(ty.arg_types)]
    outs = [v for v in params if v.type_annotation == ty.ret_type]
    if not outs:
        raise NotEvaluable(f"PrimFunc type {ty}: no parameter of the result type")
    return pyir.Function(params, outs[-1], ty.ret_type, {"Extern": 1})


def _np_shim() -> Any:
    """numpy, with np.random's draws replaced by zeros of the same shape and dtype (only they matter
    to parsing and type checking; gpt2's tables would draw 124M floats)."""
    import numpy as np

    def shape(size: Any) -> tuple[int, ...]:
        return () if size is None else (size,) if isinstance(size, int) else tuple(size)

    rnd = _Shim("np.random",
                rand=lambda *dims: np.zeros(dims),
                randn=lambda *dims: np.zeros(dims),
                random=lambda size=None: np.zeros(shape(size)),
                random_sample=lambda size=None: np.zeros(shape(size)),
                uniform=lambda low=0.0, high=1.0, size=None: np.zeros(shape(size)),
                normal=lambda loc=0.0, scale=1.0, size=None: np.zeros(shape(size)),
                randint=lambda low, high=None, size=None, dtype="int64": np.zeros(shape(size), dtype),
                seed=lambda *a: None)
    members = {k: getattr(np, k) for k in dir(np) if not k.startswith("_") and k != "random"}
    return _Shim("np", random=rnd, **members)


def _tvm_shims(pyir: Any, std: Any) -> dict[str, Any]:
    """``tvm`` and ``relay`` objects that build pyir objects (what the tests' tables use)."""
    import numpy as np

    from pyir.ir.types import FuncType, TensorType, TupleType

    def const(value: Any, dtype: Any = None, span: Any = None) -> Any:  # TVM's relay.const rules
        if isinstance(value, (bool, int, float, list)):
            value = np.array(value, dtype=dtype)
        if not isinstance(value, (np.ndarray, np.generic)):
            raise NotEvaluable(f"relay.const of {type(value).__name__}")
        if not dtype:
            dtype = {np.dtype("int64"): np.int32, np.dtype("float64"): np.float32}.get(value.dtype)
        if dtype is not None:
            value = value.astype(dtype)
        return pyir.Constant(np.asarray(value))

    def parse(source: str, source_name: str = "from_string", init_module: Any = None,
              init_meta_table: Any = None) -> Any:
        table = {k: v for k, v in (init_meta_table or {}).items() if k == "relay.Constant"}
        init = init_module.mod if isinstance(init_module, _IRModule) else init_module
        mod = pyir.parse(source, table or None, init_module=init)
        out = _IRModule(pyir, std)
        out.mod = mod
        return out

    def fromtext(source: str, source_name: str = "from_string") -> Any:
        return parse(source, source_name)

    def tensor_type(shape: Any, dtype: str = "float32") -> Any:
        return TensorType(tuple(int(d) for d in shape), dtype)

    def ir_module(functions: Any = None, type_definitions: Any = None) -> Any:
        return _IRModule(pyir, std, functions or type_definitions)

    relay = _Shim("relay", const=const, parse=parse, fromtext=fromtext, TensorType=tensor_type,
                  FuncType=lambda args, ret, *rest: FuncType(tuple(args), ret),
                  TupleType=lambda fields: TupleType(tuple(fields)),
                  GlobalVar=_GlobalVar, IRModule=ir_module)
    opaque = {k: _Opaque(f"tvm.{k}") for k in ("cpu", "cuda", "device", "gpu", "ext_dev")}
    tvm = _Shim("tvm", relay=relay, IRModule=ir_module, parser=_Shim("tvm.parser", parse=parse,
                                                                      fromtext=fromtext),
                ir=_Shim("tvm.ir", IRModule=ir_module, GlobalVar=_GlobalVar),
                nd=_Shim("tvm.nd", array=lambda a, device=None: np.asarray(a)),
                target=_Shim("tvm.target", VirtualDevice=_Opaque("VirtualDevice"),
                             Target=_Opaque("Target")),
                transform=_Shim("tvm.transform", PassContext=_Opaque("PassContext")),
                testing=_Opaque("tvm.testing"), **opaque)
    return {"tvm": tvm, "relay": relay}


_BUILTINS = {k: __builtins__[k] if isinstance(__builtins__, dict) else getattr(__builtins__, k)
             for k in ("range", "len", "list", "tuple", "dict", "set", "zip", "enumerate", "int",
                       "float", "str", "bool", "min", "max", "sum", "abs", "isinstance", "reversed",
                       "sorted", "map", "filter", "any", "all", "None", "True", "False", "NameError",
                       "ValueError", "TypeError", "object")}
_BUILTINS["print"] = lambda *a, **k: None


def _flat(body: list[ast.stmt], loop: ast.stmt | None = None) -> list[tuple[ast.stmt, ast.stmt | None]]:
    """The statements of a body, compound statements' bodies spliced in (not nested defs'), each
    with the outermost ``for``/``while`` loop it is in (None if none)."""
    out: list[tuple[ast.stmt, ast.stmt | None]] = []
    stack: list[tuple[ast.stmt, ast.stmt | None]] = [(st, loop) for st in reversed(body)]
    while stack:
        st, lp = stack.pop()
        out.append((st, lp))
        if isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            inner = list(st.body) + list(getattr(st, "orelse", [])) + list(getattr(st, "finalbody", []))
            for h in getattr(st, "handlers", []):
                inner += h.body
            inner_loop = lp or (st if isinstance(st, (ast.For, ast.While)) else None)
            stack.extend((x, inner_loop) for x in reversed(inner))
    return out


def _stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _binds(st: ast.stmt, name: str) -> bool:
    if isinstance(st, ast.Assign):
        return any(isinstance(t, ast.Name) and t.id == name for t in st.targets)
    if isinstance(st, ast.AnnAssign):
        return isinstance(st.target, ast.Name) and st.target.id == name and st.value is not None
    if isinstance(st, (ast.FunctionDef, ast.ClassDef)):
        return st.name == name
    if isinstance(st, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in st.names)
    return False


def _mutates(st: ast.stmt, name: str) -> bool:
    """``name[k] = v``, ``name.attr = v``, ``name.method(...)``, ``name += v``."""
    if isinstance(st, ast.Assign):
        return any(not isinstance(t, ast.Name) and _root(t) == name for t in st.targets)
    if isinstance(st, ast.AugAssign):
        return _root(st.target) == name
    return isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
        isinstance(st.value.func, ast.Attribute) and _root(st.value.func) == name


_IMPORTS = {"numpy": "np", "tvm": "tvm", "tvm.relay": "relay"}


class _PyEval:
    """Evaluates expressions of one test file as they are at one parse call: a free name is looked
    up (innermost first) in the enclosing functions' statements before the call, then in the
    module's statements (its last binding, then the statements that mutate it), and evaluated the
    same way; the tvm/relay/numpy names are the shims."""

    def __init__(self, pyir: Any, tree: ast.Module, funcs: list[ast.FunctionDef], call: ast.Call,
                 std: Any) -> None:
        self.pyir, self.tree, self.funcs, self.call = pyir, tree, funcs, call
        self.shims = {**_tvm_shims(pyir, std), "np": _np_shim()}
        self.ns: dict[str, Any] = {"__builtins__": _BUILTINS}
        self.looked: set[str] = set()

    def value(self, node: ast.expr) -> Any:
        code = compile(ast.fix_missing_locations(ast.Expression(node)), "<test>", "eval")
        return self._retry(lambda: eval(code, self.ns))

    def _exec(self, st: ast.stmt) -> None:
        if isinstance(st, ast.FunctionDef) and st.decorator_list:
            names = {getattr(d.func if isinstance(d, ast.Call) else d, "attr", "") for d in st.decorator_list}
            if names == {"prim_func"}:
                self.ns[st.name] = _PrimFunc(st.name)
                return
            raise NotEvaluable(f"decorated function {st.name}")
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            for a in st.names:
                if isinstance(st, ast.ImportFrom):  # from tvm import relay: binds relay to tvm.relay
                    full = bound = f"{st.module}.{a.name}"
                else:  # import tvm.testing binds tvm; import numpy as np binds np to numpy
                    full, bound = a.name, a.name if a.asname else a.name.split(".")[0]
                key = _IMPORTS.get(bound)
                if key is None:
                    raise NotEvaluable(f"import {full}")
                self.ns[a.asname or bound.split(".")[-1] if isinstance(st, ast.ImportFrom)
                        else a.asname or bound] = self.shims[key]
            return
        if isinstance(st, ast.ClassDef):
            raise NotEvaluable(f"class {st.name}")
        if isinstance(st, (ast.For, ast.While)):  # its free names first: a NameError must not re-run it
            loads = {n.id for n in ast.walk(st) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
            for n in sorted(loads - _stored(st)):
                if n not in self.ns and n not in _BUILTINS and n not in self.looked:
                    self.looked.add(n)
                    self._define(n)
        code = compile(ast.fix_missing_locations(ast.Module([st], [])), "<test>", "exec")
        self._retry(lambda: exec(code, self.ns))

    def _retry(self, f: Any) -> Any:
        while True:
            try:
                return f()
            except NameError as e:
                name = getattr(e, "name", None)
                if not name or name in self.looked:
                    raise NotEvaluable(f"name {name!r}") from None
                self.looked.add(name)
                self._define(name)
            except (NotEvaluable, RecursionError, self.pyir.errors.PyIRError):
                raise
            except Exception as e:
                raise NotEvaluable(f"{type(e).__name__}: {str(e)[:80]}") from None

    def _define(self, name: str) -> None:
        for fn in reversed(self.funcs):
            a = fn.args
            if name in {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs} | \
                    {x.arg for x in (a.vararg, a.kwarg) if x is not None}:
                raise NotEvaluable(f"{name!r} is a parameter of {fn.name}()")
            if self._run_binding(self.before_call(fn), name):
                return
        if not self._run_binding(_flat(self.tree.body), name):
            raise NotEvaluable(f"name {name!r} not found")

    def before_call(self, fn: ast.FunctionDef) -> list[tuple[ast.stmt, ast.stmt | None]]:
        """The statements of ``fn`` that end before the parse call (with their loops)."""
        line = self.call.lineno
        return [(st, lp) for st, lp in _flat(fn.body) if (st.end_lineno or st.lineno) < line]

    def _run_binding(self, body: list[tuple[ast.stmt, ast.stmt | None]], name: str) -> bool:
        """Run the last statement of ``body`` binding ``name``, then the later ones mutating it
        (the whole loop, once, for a mutation in a loop); False if nothing binds it."""
        idx = [i for i, (st, _) in enumerate(body) if _binds(st, name)]
        if not idx:
            for st, _ in body:
                targets = [st.target] if isinstance(st, ast.For) else [
                    it.optional_vars for it in st.items if it.optional_vars is not None
                ] if isinstance(st, ast.With) else []
                if any(name in _stored(t) for t in targets):
                    raise NotEvaluable(f"{name!r} is bound by a for/with statement")
            return False
        st, loop = body[idx[-1]]
        if loop is not None:
            raise NotEvaluable(f"{name!r} is bound in a loop")
        self._exec(st)
        done: set[int] = set()
        for st, loop in body[idx[-1] + 1:]:
            if _mutates(st, name):
                unit = st if loop is None else loop
                if id(unit) not in done:
                    done.add(id(unit))
                    self._exec(unit)
        return True


_META_REF = re.compile(r"meta\[(?:relay\.)?Constant\]\[")


def python_side(progs: list[Program], pyir: Any, std: Any) -> None:
    """For each program whose parse call passes an init_module or whose text uses
    ``meta[relay.Constant]`` without a metadata section: evaluate the call's ``init_module`` and
    ``init_meta_table`` arguments (TVM's ``parse(text, source_name, init_module, init_meta_table)``)
    with :class:`_PyEval`; set ``p.meta_table``/``p.init_module``, or ``p.py_error``."""
    for p in progs:
        if p.ctx is None or p.how not in ("parse", "fromtext"):
            continue
        tree, funcs, call = p.ctx
        args: dict[str, ast.expr] = {}
        for i, k in ((2, "init_module"), (3, "init_meta_table")):
            if len(call.args) > i:
                args[k] = call.args[i]
        for kw in call.keywords:
            if kw.arg in ("init_module", "init_meta_table"):
                args[kw.arg] = kw.value
        args = {k: v for k, v in args.items() if not (isinstance(v, ast.Constant) and v.value is None)}
        src = call.args[0] if call.args else None
        before = _PyEval(pyir, tree, funcs, call, std).before_call(funcs[-1]) if funcs else []
        if isinstance(src, ast.Name) and any(_mutates(st, src.id) for st, _ in before):
            try:  # a text built by Python (``mod += ...`` in a loop): the text the test parses
                text = _PyEval(pyir, tree, funcs, call, std).value(src)
                if not isinstance(text, str):
                    raise NotEvaluable(f"the text is a {type(text).__name__}")
                p.text = text
                p.extra["py_text"] = "yes"
            except NotEvaluable as e:
                p.py_error = f"text: {e}"
        needs_consts = "#[metadata]" not in p.text and _META_REF.search(p.text) is not None
        if not needs_consts:
            args.pop("init_meta_table", None)
        if not args:
            if needs_consts:
                p.py_error = "the parse call passes no init_meta_table"
            continue
        errors = []
        for k, node in args.items():  # each in a fresh namespace (one failing leaves the other)
            ev = _PyEval(pyir, tree, funcs, call, std)
            try:
                v = ev.value(node)
                if k == "init_module":
                    if not isinstance(v, _IRModule):
                        raise NotEvaluable(f"init_module is a {type(v).__name__}")
                    p.init_module = v.mod
                    continue
                if not isinstance(v, dict):
                    raise NotEvaluable(f"init_meta_table is a {type(v).__name__}")
                consts = v.get("relay.Constant", [])
                if not all(isinstance(c, pyir.Constant) for c in consts):
                    raise NotEvaluable("a relay.Constant entry is not a constant")
                p.meta_table = {"relay.Constant": list(consts)}
            except NotEvaluable as e:
                errors.append(f"{k}: {e}")
            except pyir.errors.PyIRError as e:
                errors.append(f"{k}: {type(e).__name__}: {str(e).splitlines()[0][:100]}")
        p.py_error = "; ".join(([p.py_error] if p.py_error else []) + errors)
        if p.meta_table is not None:
            p.extra["py_table"] = str(len(p.meta_table["relay.Constant"]))
        if p.init_module is not None:
            p.extra["py_init"] = ", ".join("@" + n for n in p.init_module) or "types only"


def measure(progs: list[Program], prepare: Any = None) -> None:
    """Parse each program; modules are type-checked (TVM's parser runs InferType on modules),
    expressions are type-checked when they can be (TVM's ``parse_expr`` does not type-check:
    ``fn (%x) { %x }`` and ``1 < 1 == 1`` are accepted); every parsed program is printed (pyir's
    form and TVM's form) and parsed back.  ``prepare(p)`` (if given) runs before each program
    (:func:`python_side`); the program's Python-side table and module are dropped after it (the
    collage models' constants are up to 500 MB)."""
    for p in progs:
        if prepare is not None:
            prepare(p)
        try:
            _measure_one(p)
        finally:
            p.meta_table = p.init_module = None


def _measure_one(p: Program) -> None:
    import pyir
    from pyir.errors import PyIRError
    from pyir.transform import InferType

    try:
        obj = pyir.parse(p.text, meta_table=p.meta_table, init_module=p.init_module) \
            if p.mode == "module" else pyir.parse_expr(p.text, meta_table=p.meta_table)
    except PyIRError as e:
        p.result, p.error = "parse", f"{type(e).__name__}: {e}"
        return
    except Exception as e:
        p.result, p.error = "crash", f"{type(e).__name__}: {e}"
        return
    try:
        if p.mode == "module":
            InferType()(obj)
        else:
            _ = obj.checked_type
        p.extra["typed"] = "yes"
    except PyIRError as e:
        p.extra["typed"] = f"{type(e).__name__}: {e}"
        if p.mode == "module" or not p.accepted:
            p.result, p.error = "type", p.extra["typed"]
            return
    except Exception as e:
        p.result, p.error = "crash", f"{type(e).__name__}: {e}"
        return
    if not p.accepted:
        p.result = "ok"
        return
    fail = _roundtrip(pyir, obj, p.mode)
    if fail:
        p.result, p.error = "roundtrip", fail
        return
    tvm_text = obj.astext(tvm=True) if p.mode == "module" else pyir.astext(obj, tvm=True)
    p.extra["same_text"] = "yes" if _normalize(tvm_text) == _normalize(p.text) else "no"
    p.extra["tvm_diff"], p.extra["tvm_diff_at"] = tvm_form_diff(p.text, tvm_text, p.mode)
    p.extra["tvm_printed_style"] = "yes" if looks_tvm_printed(p.text, p.mode) else "no"
    p.result = "ok"


def _roundtrip(pyir: Any, obj: Any, mode: str) -> str:
    """'' if ``obj`` prints (pyir's form and TVM's form) and parses back alpha-equal, printing
    the same text again; else what failed."""
    for tvm in (False, True):
        try:
            text = obj.astext(tvm=tvm) if mode == "module" else pyir.astext(obj, tvm=tvm)
            back = pyir.parse(text) if mode == "module" else pyir.parse_expr(text)
            again = back.astext(tvm=tvm) if mode == "module" else pyir.astext(back, tvm=tvm)
        except Exception as e:
            return f"{'TVM form' if tvm else 'pyir form'}: {type(e).__name__}: {e}"
        if not pyir.alpha_equal(back, obj, map_free_vars=True):
            return f"{'TVM form' if tvm else 'pyir form'}: printed text parses to a different program"
        if again != text:
            return f"{'TVM form' if tvm else 'pyir form'}: text printed again differs"
    return ""


def report(progs: list[Program], skipped: int, failures: bool) -> dict[str, int]:
    acc = [p for p in progs if p.accepted]
    rej = [p for p in progs if not p.accepted]
    mods = [p for p in acc if p.mode == "module"]
    exprs = [p for p in acc if p.mode == "expr"]
    good = ("ok", "roundtrip")
    n_ok = sum(p.result in good for p in acc)
    n_rt = sum(p.result == "ok" for p in acc)
    n_rej = sum(p.result in ("parse", "type") for p in rej)
    n_typed_expr = sum(p.result in good and p.extra.get("typed") == "yes" for p in exprs)
    print(f"extracted {len(progs)} programs ({len(acc)} TVM accepts: {len(mods)} modules, "
          f"{len(exprs)} expressions; {len(rej)} TVM rejects); {skipped} format-built strings skipped")
    print(f"accepted: {n_ok}/{len(acc)} ({100.0 * n_ok / max(len(acc), 1):.1f}%) parse "
          f"(modules: and type-check), of which {n_rt} round-trip through the printer (both forms)")
    print(f"  modules parse + type-check {sum(p.result in good for p in mods)}/{len(mods)}; "
          f"expressions parse {sum(p.result in good for p in exprs)}/{len(exprs)} "
          f"(and type-check {n_typed_expr}: TVM's parse_expr does not type-check)")
    print(f"  modules that parse but do not type-check: {sum(p.result == 'type' for p in mods)}; "
          f"no parse: {sum(p.result == 'parse' for p in acc)}; "
          f"crash: {sum(p.result == 'crash' for p in acc)}")
    tabled = [p for p in progs if "py_table" in p.extra]
    inited = [p for p in progs if "py_init" in p.extra]
    print(f"  Python-side tables (the test's init_meta_table, built by the shims): {len(tabled)} programs "
          f"({sum(p.result in good for p in tabled)} pass, "
          f"{sum(int(p.extra['py_table']) for p in tabled)} constants); init modules: {len(inited)} "
          f"({sum(p.result in good for p in inited)} pass); texts built by Python: "
          f"{sum('py_text' in p.extra for p in progs)}; not evaluable: "
          f"{sum(bool(p.py_error) for p in progs)}")
    same = sum(p.extra.get("same_text") == "yes" for p in acc)
    print(f"  printed in TVM's form, equal to the original text up to whitespace and comments: {same}")
    tvm_form_report([p for p in acc if p.result == "ok"], failures)
    print(f"rejected: pyir rejects {n_rej}/{len(rej)}")
    blockers: collections.Counter[str] = collections.Counter()
    for p in acc:
        if p.result in ("parse", "type", "crash"):
            blockers[blocker(p)] += 1
    if blockers:
        print("blockers of the accepted programs (programs affected):")
        others = 0
        for b, n in blockers.most_common():
            if "relaylang" in b or "relayops" in b:
                others += n
            print(f"  {n:4d}  {b}")
        print(f"  ({others} of them on constructs or operators the relaylang/relayops branches add: "
              f"{n_ok + others}/{len(acc)} = {100.0 * (n_ok + others) / max(len(acc), 1):.1f}% "
              "if they all pass)")
    rt = [p for p in acc if p.result == "roundtrip"]
    if rt:
        print(f"round-trip failures: {len(rt)}")
    if failures:
        for p in acc:
            if p.result != "ok":
                first = p.error.splitlines()[0] if p.error else ""
                print(f"--- {p.file}:{p.line} [{p.mode}, {p.result}] {first}")
                if p.py_error:
                    print(f"    (Python side not evaluable: {p.py_error.splitlines()[0]})")
        for p in rej:
            if p.result not in ("parse", "type"):
                print(f"--- REJECTED BY TVM, accepted by pyir: {p.file}:{p.line}\n{p.text.strip()[:300]}")
    return {"accepted": len(acc), "ok": n_ok, "roundtrip": n_rt, "rejected": len(rej), "rejects": n_rej}


def tvm_form_report(done: list[Program], details: bool) -> None:
    """Classify each program's first difference between its original text and pyir's TVM form
    (:func:`tvm_form_diff`); print the counts per category and kind, and the measure on the
    originals that look like TVM's printer output (:func:`looks_tvm_printed`)."""
    cats: collections.Counter[str] = collections.Counter(p.extra.get("tvm_diff", "") for p in done)
    equal = cats.pop("", 0)
    print(f"  TVM form vs original, first difference after whitespace/comments ({len(done)} programs; "
          f"{equal} equal, an expression compared without the version header):")
    kinds: collections.Counter[str] = collections.Counter()
    for c, n in cats.most_common():
        kind = TVM_FORM_KINDS[c]
        kinds[kind] += n
        print(f"    {n:4d}  [{kind}] {c}")
    print(f"    by kind: hand-written form {kinds['hand']}, printer deviation {kinds['printer']}, "
          f"pyir's program (no printer can undo) {kinds['model']}, unresolved {kinds['unresolved']}")
    styled = [p for p in done if p.extra.get("tvm_printed_style") == "yes"]
    same = sum(p.extra.get("tvm_diff") == "" for p in styled)
    print(f"  TVM-printer-style originals equal up to whitespace and comments: {same} of {len(styled)} "
          "(style: a module text with the version header and a %N = binding or a /* ty= */ comment)")
    if details:
        for p in done:
            if p.extra.get("tvm_diff"):
                print(f"    ~ {p.file}:{p.line} [{p.extra['tvm_diff']}] {p.extra['tvm_diff_at'][:240]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repo", default=DEFAULT_REPO)
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    ap.add_argument("--list", action="store_true", help="list the extracted programs")
    ap.add_argument("--failures", action="store_true", help="list the programs that fail")
    ap.add_argument("--dump", metavar="DIR", help="write each program to DIR (for reading)")
    ap.add_argument("--show", metavar="FILE:LINE", help="print one program and pyir's error")
    args = ap.parse_args(argv)
    if not os.path.exists(args.repo):
        print(f"no TVM checkout at {args.repo}", file=sys.stderr)
        return 2
    progs, skipped = extract(args.repo, args.commit)
    if args.list:
        for p in progs:
            print(f"{p.file}:{p.line} {p.mode} {'accepted' if p.accepted else 'rejected'} {p.how}")
    import pyir

    def std(name: str) -> str:
        return git_show(args.repo, args.commit, f"python/tvm/relay/std/{name}")

    def prepare(p: Program) -> None:
        if p.file.endswith("std/nat.rly"):  # TVM imports it into a Prelude's module
            p.init_module = pyir.parse(std("prelude.rly"))
        python_side([p], pyir, std)
    measure(progs, prepare)
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
        for i, p in enumerate(progs):
            with open(os.path.join(args.dump, f"{i:03d}_{os.path.basename(p.file)}_{p.line}.txt"), "w") as f:
                f.write(f"// {p.file}:{p.line} {p.mode} accepted={p.accepted} result={p.result}\n"
                        f"// {p.error[:500]}\n{p.text}")
    if args.show:
        for p in progs:
            if f"{p.file}:{p.line}".endswith(args.show):
                print(p.text)
                print(p.result, p.error)
    report(progs, skipped, args.failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())

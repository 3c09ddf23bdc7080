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
* a text with ``meta[relay.Constant][i]`` references but no metadata section gets its constants
  from Python (``init_meta_table``); they are rebuilt here as zeros of the type TVM printed after
  each reference (``/* ty=Tensor[(3), float32] */``) and passed as ``meta_table``.

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
        self.generic_visit(node)
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
                self.progs.append(Program(self.path, node.lineno, s, mode, accepted, name))
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


def measure(progs: list[Program]) -> None:
    """Parse each program; modules are type-checked (TVM's parser runs InferType on modules),
    expressions are type-checked when they can be (TVM's ``parse_expr`` does not type-check:
    ``fn (%x) { %x }`` and ``1 < 1 == 1`` are accepted); every parsed program is printed (pyir's
    form and TVM's form) and parsed back."""
    import pyir
    from pyir.errors import PyIRError
    from pyir.transform import InferType

    std = {os.path.basename(p.file): p.text for p in progs if p.file.startswith("python/tvm/relay/std/")}
    for p in progs:
        try:
            table = _meta_table(pyir, p.text)
            init = None
            if p.file.endswith("std/nat.rly") and "prelude.rly" in std:  # TVM imports it into a
                init = pyir.parse(std["prelude.rly"])                      # Prelude's module
            obj = pyir.parse(p.text, meta_table=table, init_module=init) if p.mode == "module" else \
                pyir.parse_expr(p.text, meta_table=table)
        except PyIRError as e:
            p.result, p.error = "parse", f"{type(e).__name__}: {e}"
            continue
        except Exception as e:
            p.result, p.error = "crash", f"{type(e).__name__}: {e}"
            continue
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
                continue
        except Exception as e:
            p.result, p.error = "crash", f"{type(e).__name__}: {e}"
            continue
        if not p.accepted:
            p.result = "ok"
            continue
        fail = _roundtrip(pyir, obj, p.mode)
        if fail:
            p.result, p.error = "roundtrip", fail
            continue
        tvm_text = obj.astext(tvm=True) if p.mode == "module" else pyir.astext(obj, tvm=True)
        p.extra["same_text"] = "yes" if _normalize(tvm_text) == _normalize(p.text) else "no"
        p.result = "ok"


_META_TY = re.compile(r"meta\[relay\.Constant\]\[([0-9]+)\]\s*/\*\s*ty="
                      r"(Tensor\[\([^)]*\),\s*[a-z0-9]+\]|[a-z0-9]+)")


def _meta_table(pyir: Any, text: str) -> dict[str, list[Any]] | None:
    """The test's ``init_meta_table`` (built in Python, not in the text), rebuilt as zeros from
    the ``/* ty=... */`` comment TVM printed after each ``meta[relay.Constant][i]``; None if the
    text has its own metadata section or no such reference."""
    if "#[metadata]" in text or "meta[relay.Constant]" not in text:
        return None
    import numpy as np
    found: dict[int, Any] = {}
    for m in _META_TY.finditer(text):
        t = pyir.parse_type(m.group(2))
        found.setdefault(int(m.group(1)), np.zeros(tuple(t.shape), t.dtype))
    if not found or sorted(found) != list(range(len(found))):
        return None
    return {"relay.Constant": [found[i] for i in range(len(found))]}


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
    same = sum(p.extra.get("same_text") == "yes" for p in acc)
    print(f"  printed in TVM's form, equal to the original text up to whitespace and comments: {same}")
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
        for p in rej:
            if p.result not in ("parse", "type"):
                print(f"--- REJECTED BY TVM, accepted by pyir: {p.file}:{p.line}\n{p.text.strip()[:300]}")
    return {"accepted": len(acc), "ok": n_ok, "roundtrip": n_rt, "rejected": len(rej), "rejects": n_rej}


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
    measure(progs)
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

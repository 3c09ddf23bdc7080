"""Golden files: the examples of every pass, executed (issue 11 item 6).

Each pass ``P`` of :mod:`pyir.transform` has a folder ``tests/golden/P/`` of cases, one text file
each.  ``docstring.txt`` is the example shown in the pass's docstring; the others show sharing,
lets, ifs, options.  A case file reads::

    # Comment lines (what the case shows).
    options: max_fuse_depth=2
    --- input
    def @main(...) {
      ...
    }
    --- output
    def @main(...) {
      ...
    }

* ``options:`` holds the pass's keyword arguments as Python literals (empty: the defaults).
* ``--- input`` is a module exactly as ``mod.astext()`` prints it (metadata section included).
* ``--- output`` is ``P(**options)(pyir.parse(input)).astext()``; a case whose pass must fail
  has ``--- error`` instead, followed by ``ExceptionClass: message`` (the message's first line:
  later lines may name nodes by their ids, which differ between runs).

For each case the test parses the input, checks that it prints back as written, runs the pass
(through :func:`pyir.testing.check_pass`: the input is untouched, the output means the same
under the interpreter, lineage is complete) and compares the printed output with the file.
The Before/After blocks of each pass's docstring must be the input and output of its
``docstring.txt``, so what a docstring shows is what runs.

Regenerate (rewrites the input in printed form and the output from running the pass; review
the diff before committing)::

    python tests/test_golden.py --regen              # every case
    python tests/test_golden.py --regen FuseOps      # one pass's cases
"""

from __future__ import annotations

import ast
import inspect
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import pyir
import pyir.transform
from pyir.testing import check_pass
from pyir.transform.base import FunctionPass, ModulePass, Pass, Sequential

GOLDEN = Path(__file__).resolve().parent / "golden"
MIN_CASES = 3  # the docstring's example plus at least two more


@dataclass(frozen=True)
class Case:
    """One golden file: comments, pass options, input text and expected output or error."""

    path: Path
    comments: tuple[str, ...]
    options: dict
    options_text: str
    input: str
    output: str | None  # None: the pass must raise ``error``
    error: str | None

    @property
    def pass_name(self) -> str:
        return self.path.parent.name

    def make_pass(self) -> Pass:
        return getattr(pyir.transform, self.pass_name)(**self.options)

    def text(self) -> str:
        lines = [*self.comments, f"options: {self.options_text}".rstrip(), "--- input"]
        body = "\n".join(lines) + "\n" + self.input
        if self.error is not None:
            return body + "--- error\n" + self.error + "\n"
        return body + "--- output\n" + (self.output or "")


def _parse_options(text: str, where: Path) -> dict:
    """``a=1, b=(2, 3)`` -> ``{"a": 1, "b": (2, 3)}`` (values are Python literals)."""
    if not text.strip():
        return {}
    call = ast.parse(f"f({text})", mode="eval").body
    if not isinstance(call, ast.Call) or call.args:
        raise ValueError(f"{where}: options must be keyword arguments, got {text!r}")
    return {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords if kw.arg is not None}


def read_case(path: Path) -> Case:
    """Parse a golden file (see the module docstring for the format)."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    comments: list[str] = []
    options_text = ""
    i = 0
    while i < len(lines) and lines[i].rstrip("\n") != "--- input":
        line = lines[i].rstrip("\n")
        if line.startswith("options:"):
            options_text = line[len("options:"):].strip()
        elif line.startswith("#") or not line.strip():
            comments.append(line)
        else:
            raise ValueError(f"{path}:{i + 1}: expected a comment, 'options:' or '--- input'")
        i += 1
    if i == len(lines):
        raise ValueError(f"{path}: no '--- input' section")
    i += 1
    start = i
    while i < len(lines) and lines[i].rstrip("\n") not in ("--- output", "--- error"):
        i += 1
    text_in = "".join(lines[start:i])
    marker = lines[i].rstrip("\n") if i < len(lines) else None
    rest = "".join(lines[i + 1:])
    output = rest if marker == "--- output" else None
    error = rest.strip() if marker == "--- error" else None
    return Case(path, tuple(comments), _parse_options(options_text, path), options_text, text_in,
                output, error)


def _error_text(e: BaseException) -> str:
    """``Class: first line of the message``."""
    return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0]}"


def run_case(case: Case) -> tuple[str, str | None, str | None]:
    """Run a case: (input as printed, printed output or None, ``Class: message`` or None)."""
    mod = pyir.parse(case.input)
    printed = mod.astext()
    try:
        out = case.make_pass()(mod)
    except pyir.PyIRError as e:
        return printed, None, _error_text(e)
    return printed, out.astext(), None


def all_cases() -> list[Path]:
    return sorted(GOLDEN.glob("*/*.txt"))


def standard_passes() -> dict[str, type]:
    """Every pass class exported by :mod:`pyir.transform` (not the framework's own classes, nor
    PatternRewrite: its rules are Python callables, shown by its doctest and tests/test_pattern.py)."""
    framework = {Pass, ModulePass, FunctionPass, Sequential, pyir.transform.PatternRewrite}
    return {name: obj for name, obj in vars(pyir.transform).items()
            if inspect.isclass(obj) and issubclass(obj, Pass) and obj not in framework}


@pytest.mark.parametrize("path", all_cases(), ids=lambda p: f"{p.parent.name}/{p.stem}")
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # sqrt of random inputs
def test_golden_case(path: Path) -> None:
    """issue 11 item 6: each golden case runs and prints exactly what its file shows."""
    case = read_case(path)
    mod = pyir.parse(case.input)
    assert mod.astext() == case.input, f"{path}: the input is not in printed form (--regen)"
    if case.error is not None:
        with pytest.raises(pyir.PyIRError) as info:
            case.make_pass()(mod)
        assert _error_text(info.value) == case.error
        return
    assert case.output is not None, f"{path}: no '--- output' section (--regen)"
    out = check_pass(case.make_pass(), mod, idempotent=False)
    assert out.astext() == case.output
    assert pyir.parse(case.output).astext() == case.output  # the golden output is valid text


def test_every_pass_has_golden_cases() -> None:
    """issue 11 item 6: every pass has its docstring example and two more cases; no stray folder."""
    passes = standard_passes()
    folders = {p.name for p in GOLDEN.iterdir() if p.is_dir()}
    assert folders == set(passes)
    for name in passes:
        cases = sorted(p.stem for p in (GOLDEN / name).glob("*.txt"))
        assert "docstring" in cases, name
        assert len(cases) >= MIN_CASES, (name, cases)


def _shows(doc: str, text: str) -> bool:
    """Whether ``text`` appears in ``doc`` as an indented block (every line, same indent)."""
    want = text.rstrip("\n").split("\n")
    lines = doc.split("\n")
    for i, line in enumerate(lines):
        if not line.strip() or not line.endswith(want[0]) or i + len(want) > len(lines):
            continue
        indent = line[: len(line) - len(want[0])]
        if indent.strip():
            continue
        if all(lines[i + k].rstrip() == (indent + w if w else "")
               for k, w in enumerate(want)):
            return True
    return False


@pytest.mark.parametrize("name", sorted(standard_passes()))
def test_docstring_shows_its_golden_example(name: str) -> None:
    """issue 11 item 6: the Before/After a pass's docstring shows is its executed docstring.txt."""
    cls = standard_passes()[name]
    doc = inspect.cleandoc(sys.modules[cls.__module__].__doc__ or "") + "\n" + (inspect.getdoc(cls) or "")
    case = read_case(GOLDEN / name / "docstring.txt")
    assert _shows(doc, case.input), f"{name}'s docstring does not show {case.path}'s input"
    assert case.output is not None
    assert _shows(doc, case.output), f"{name}'s docstring does not show {case.path}'s output"


def regenerate(names: list[str]) -> int:
    """Rewrite the cases of the named passes (all when empty); returns how many files changed."""
    changed = 0
    for path in all_cases():
        if names and path.parent.name not in names:
            continue
        case = read_case(path)
        try:
            printed, output, error = run_case(case)
        except pyir.ParseError as e:
            print(f"skipped {path.relative_to(GOLDEN.parent.parent)}: input does not parse: {e}")
            continue
        new = Case(path, case.comments, case.options, case.options_text, printed, output, error)
        if new.text() != path.read_text(encoding="utf-8"):
            path.write_text(new.text(), encoding="utf-8")
            changed += 1
            print(f"updated {path.relative_to(GOLDEN.parent.parent)}")
    return changed


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or args[0] != "--regen":
        sys.exit(__doc__)
    print(f"{regenerate(args[1:])} file(s) updated")

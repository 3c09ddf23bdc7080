"""The exception hierarchy: one root, each class also a matching built-in.

Every error pyir raises derives from :class:`PyIRError` and from the built-in
exception a caller would naturally catch (``TypeError`` for type errors,
``ValueError`` for bad values, ...), so both ``except pyir.PyIRError`` and
``except TypeError`` work.
"""

from __future__ import annotations

from collections.abc import Iterable


class PyIRError(Exception):
    """Root of every error raised by pyir."""


class ImmutableError(PyIRError, AttributeError):
    """Raised on any attempt to set or delete an attribute of a node or module."""


class AttrError(PyIRError, ValueError):
    """An operator attribute is missing, unknown or of the wrong kind."""


class UnknownOpError(PyIRError, LookupError):
    """An operator name is not in the registry."""

    def __str__(self) -> str:  # LookupError would quote the message
        return str(self.args[0]) if self.args else ""


class TypeCheckError(PyIRError, TypeError):
    """A program is ill-typed: wrong shapes, dtypes, arity or unbound names."""


class WellFormedError(PyIRError, ValueError):
    """A node is malformed (e.g. a non-Var parameter, a Function without a body)."""


class EvaluationError(PyIRError, ValueError):
    """The reference interpreter cannot run a program on the given inputs."""


class IllTypedProgramError(TypeCheckError, EvaluationError):
    """``evaluate`` met a program that does not type-check (it type-checks before running): the
    type checker's message, naming the node, the operator and the shapes.  Both a TypeCheckError
    and an EvaluationError."""


class PassError(PyIRError, RuntimeError):
    """A pass failed; the message names the pass."""


class RewriteLoopError(PyIRError, RuntimeError):
    """A rewrite-rule driver did not reach a fixpoint within its step limit."""


class LineageError(PyIRError, ValueError):
    """A lineage query or record is invalid."""


class ParseError(PyIRError, ValueError):
    """Malformed IR text; carries ``line`` and ``column`` (1-based)."""

    def __init__(self, message: str, text: str = "", line: int = 1, column: int = 1) -> None:
        self.message = message
        self.line = line
        self.column = column
        lines = text.splitlines() or [""]
        src = lines[line - 1] if 0 < line <= len(lines) else ""
        caret = " " * (column - 1) + "^"
        super().__init__(f"{line}:{column}: {message}\n  {src}\n  {caret}")


class SerializationError(PyIRError, ValueError):
    """A serialized module is truncated, corrupted, of another version, or invalid."""


class PatternError(PyIRError, ValueError):
    """A pattern is malformed, or a match has no capture for a pattern."""


class FrontendError(PyIRError, ValueError):
    """A model cannot be imported: unsupported operator or attribute, dynamic shape, bad file."""


class GraphvizNotFoundError(PyIRError, ImportError):
    """The ``graphviz`` Python package or the Graphviz ``dot`` binary is missing."""


class InternalError(PyIRError, RuntimeError):
    """An internal invariant of pyir is broken: a bug in pyir, never the caller's input.

    Please report it with the program that triggered it.
    """


class AlphaEqualityError(PyIRError, AssertionError):
    """``pyir.testing.assert_alpha_equal``: two programs differ; the message names where first."""


class FinalKindError(PyIRError, TypeError):
    """A node kind was subclassed: node kinds are final (their instances are interned)."""


class StoreError(PyIRError, ValueError):
    """A snapshot store (:mod:`pyir.store`) cannot do what was asked: an unknown or ambiguous
    ref, a corrupted or missing row (the message names it), a file that is not a store."""


def did_you_mean(word: str, choices: Iterable[str], n: int = 3) -> str:
    """``"; did you mean 'a' or 'b'?"`` for the ``choices`` close to ``word`` (difflib), or ""."""
    import difflib

    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=0.6)
    if not close:
        return ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


__all__ = [
    "did_you_mean",
    "PyIRError",
    "ImmutableError",
    "AttrError",
    "UnknownOpError",
    "TypeCheckError",
    "WellFormedError",
    "EvaluationError",
    "IllTypedProgramError",
    "PassError",
    "RewriteLoopError",
    "LineageError",
    "ParseError",
    "SerializationError",
    "FinalKindError",
    "PatternError",
    "FrontendError",
    "GraphvizNotFoundError",
    "InternalError",
    "AlphaEqualityError",
    "StoreError",
]

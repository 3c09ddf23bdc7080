"""The text parser: reads back exactly what :mod:`pyir.text.printer` writes.

::

    mod = pyir.parse(text)          # ``def @name(...) { ... }`` definitions (+ ``#[metadata]``)
    e = pyir.parse_expr(text)       # the expression form printed by ``pyir.astext(expr)``

``parse(mod.astext())`` is alpha-equivalent to ``mod`` (same
structure, variables renamed consistently) and prints back to the same text.

Design
------
* The lexer is one regular expression with a named group per token kind; each
  match also swallows the whitespace and comments (``/* ... */``, ``// ...``)
  before its token.  Tokens are plain ``(kind, text, offset)`` tuples produced
  lazily in batches; line and column are computed from the offset only when
  needed (errors, :func:`tokenize`), which keeps lexing cheap.
* Parser methods come in pairs: ``parse_optional_x`` returns None and consumes
  nothing when ``x`` is absent, ``parse_x`` raises :class:`~pyir.errors.ParseError`.
* Depth: a deep graph prints as a long sequence of bindings, parsed by a loop.
  Block nesting (``def``/``fn``/``if``/``{ ... }`` bodies) uses an **explicit
  stack** of generators (like the printer), so arbitrarily deep nested blocks
  parse fine, and so do types (an explicit stack too).  Inline nesting
  (parenthesized or nested call arguments, attribute lists, tensor literals)
  uses **bounded recursion**: past :data:`MAX_NESTING` levels it raises
  ``ParseError("nesting too deep ...")``.  The printer never nests those.
* Names: ``%name``/``@name`` are identifiers (dots allowed); any other name is
  quoted with JSON escapes (``%"a b"``, ``@"g.0"``, attribute keys ``"a b"=1``).
  Trailing ``.<number>`` parts of an unquoted name are tuple indices
  (``%a.0.1``), unless the whole name is bound; ``%"0"`` and ``%"a.0"`` are
  variables of their own, never ``%0`` or element 0 of ``%a``.  Strings must
  be valid Unicode (no lone surrogates).
* Type aliases: ``type $name = <type>;`` declarations (at the top level of module
  text, before an expression's body, before a type) name a type for the rest of
  the text; ``$name`` stands for it in every type position.  An undefined alias,
  a second declaration, or a use before (or inside) its declaration is a
  ParseError.  The printer writes them for large types it prints more than once.
* Float attributes whose text would lose bits (NaNs other than ``nan`` and
  ``-nan``) are written as their IEEE-754 bits, ``0x`` and 16 hex digits.
* The cyclic garbage collector is paused while parsing (no cycles are created;
  its passes over the many new objects would cost about a third of the time).
* Nodes are built with the normal constructors; operator attributes are
  normalized through the operator schema (memoized per operator and attribute
  text).  Errors of the constructors (``AttrError``, ``UnknownOpError``,
  ``WellFormedError``, arity ``TypeCheckError``) are re-raised as ParseError at
  the position of the offending token, with the original message.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Generator, Iterator, Mapping
from itertools import islice
from typing import Any, NamedTuple

import numpy as np

from ..errors import ParseError, PyIRError
from ..ir.adt import (
    Clause,
    Constructor,
    Match,
    PatternConstructor,
    PatternTuple,
    PatternVar,
    PatternWildcard,
    RefCreate,
    RefRead,
    RefType,
    RefWrite,
    TypeCall,
    TypeData,
    TypeVar,
    fresh_unknown,
)
from ..ir.dims import Any as AnyDim
from ..ir.dims import DimLike, Sym, dim_add, dim_floordiv, dim_mod, dim_mul, dim_sub, dim_sum
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
from ..ir.node import gc_paused as _gc_paused
from ..ir.types import FuncType, TensorType, TupleType, Type, dtype_kind, normalize_dtype
from .printer import is_plain_name

__all__ = ["parse", "parse_expr", "parse_type", "tokenize", "Token", "Parser", "MAX_NESTING"]

MAX_NESTING = 200
"""Maximum depth of inline nesting (parentheses, brackets, types); blocks are unbounded."""

_STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
# ``/* ... */`` comments nest (as in TVM's Relay parser), up to _COMMENT_DEPTH levels
_COMMENT_DEPTH = 4
_COMMENT = r"/\*(?:[^/*]++|/(?!\*)|\*(?!/))*+\*/"
for _ in range(_COMMENT_DEPTH - 1):
    _COMMENT = r"/\*(?:[^/*]++|/(?!\*)|\*(?!/)|" + _COMMENT + r")*+\*/"
_PLAIN_NUM = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
# One alternative per token kind, tried in order (frequent and compound kinds first).  Compound
# tokens (BIND ``%0 =``, CALLEE ``nn.relu(``, KEY ``axis=``, NUMLIST ``[1, 1]``, TENSOR
# ``tensor([...], float32)``) cut the token count of printed text about in half; when they do
# not match (e.g. a comment inside), the text lexes into the basic tokens, which the parser
# accepts as well.
_TOKEN_RE = re.compile(
    r"(?:\s+|//[^\n]*|" + _COMMENT + r")*+"  # whitespace and comments before the token (possessive)
    r"(?:(?P<COMMA>,)|(?P<RP>\))|(?P<SEMI>;)"
    r"|(?P<BIND>%(?:[A-Za-z0-9_.]+|" + _STRING + r")[ \t]*=(?![=>]))"
    r"|(?P<LOCAL>%(?:[A-Za-z0-9_.]+|" + _STRING + r"))"
    r"|(?P<TENSOR>tensor\(\s*\[[-+0-9.,\s\[\]A-Za-z]*\]\s*,\s*[a-z][a-z0-9]*\s*\))"
    r"|(?P<CALLEE>(?!(?:fn|if|else|let|def|meta|tensor|Tensor|True|False|None)\()"
    r"[A-Za-z_][A-Za-z0-9_.]*\()"
    r"|(?P<KEY>(?:[A-Za-z_][A-Za-z0-9_]*|" + _STRING + r")[ \t]*=(?![=>]))"
    r"|(?P<META>meta\[[A-Za-z_][A-Za-z0-9_.]*\]\[[0-9]+\])"
    r"|(?P<NUMLIST>\[\s*(?:" + _PLAIN_NUM + r"(?:\s*,\s*" + _PLAIN_NUM + r")*\s*)?\])"
    r"|(?P<NUM>-?(?:0[xX][0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|inf(?![A-Za-z0-9_.])|nan(?![A-Za-z0-9_.]))"
    r"(?:[A-Za-z_][A-Za-z0-9_]*)?)"
    r"|(?P<IDENT>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<GLOBAL>@(?:[A-Za-z_][A-Za-z0-9_.]*|" + _STRING + r"))"
    r"|(?P<ALIAS>\$[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<CMP>==|!=|<=|>=|<|>)|(?P<SLASH>/(?!\*))"
    r"|(?P<LP>\()|(?P<EQ>=)|(?P<LB>\[)|(?P<RB>\])"
    r"|(?P<LC>\{)|(?P<RC>\})|(?P<COLON>:)|(?P<ARROW>->)|(?P<DOT>\.)"
    r"|(?P<STR>" + _STRING + r")"
    r"|(?P<METASEC>\#\[metadata\])"
    r"|(?P<VERSION>\#\[version[ \t]*=[ \t]*" + _STRING + r"[ \t]*\])"
    r"|(?P<QMARK>\?)|(?P<STAR>\*)|(?P<PLUS>\+)|(?P<MINUS>-)"
    r"|(?P<EOF>\Z)"
    r"|(?P<BADCOMMENT>/\*)"
    r"|(?P<BADSTR>\")"
    r"|(?P<ERR>.))",
    re.DOTALL,
)
_BATCH = 4096
class _DimSum:
    """A sum being parsed: the terms added and subtracted so far (``at``: the last ``-``)."""

    __slots__ = ("at", "neg", "pos")

    def __init__(self, first: DimLike) -> None:
        self.pos: list[DimLike] = [first]
        self.neg: list[DimLike] = []
        self.at = 0


_DIM_OPS = {"+": dim_add, "-": dim_sub, "*": dim_mul, "floordiv": dim_floordiv, "floormod": dim_mod}
_LOOKAHEAD = 2

_DESCR = {"LP": "'('", "RP": "')'", "COMMA": "','", "SEMI": "';'", "EQ": "'='", "LB": "'['",
          "RB": "']'", "LC": "'{'", "RC": "'}'", "COLON": "':'", "ARROW": "'->'", "DOT": "'.'",
          "LOCAL": "a %name", "GLOBAL": "a @name", "NUM": "a number", "IDENT": "an identifier",
          "STR": "a string", "META": "a meta[...] reference", "EOF": "end of input",
          "METASEC": "'#[metadata]'", "ALIAS": "a type alias $name", "BIND": "a binding '%name ='",
          "CALLEE": "a call", "QMARK": "'?'", "STAR": "'*'", "PLUS": "'+'", "MINUS": "'-'",
          "KEY": "an attribute 'name='", "NUMLIST": "a list of numbers", "TENSOR": "a tensor literal",
          "CMP": "a comparison operator", "SLASH": "'/'", "VERSION": "a version header '#[version = ...]'"}

_NUM_RE = re.compile(r"(-?(?:0[xX][0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|inf|nan))"
                     r"([A-Za-z_][A-Za-z0-9_]*)?\Z")
_SUFFIX_DTYPE = {"f": "float32", "i": "int32", "f16": "float16", "f32": "float32", "f64": "float64",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
                 "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64"}
_BLOCK_WORDS = frozenset(("fn", "if", "let", "def", "else", "match"))
_REF_CALLS = frozenset(("ref", "ref_read", "ref_write"))
# TVM's infix operators: symbol -> (operator, precedence); all left-associative
_BINOPS = {"*": ("multiply", 10), "/": ("divide", 10), "+": ("add", 9), "-": ("subtract", 9),
           "<": ("less", 8), ">": ("greater", 8), "<=": ("less_equal", 8), ">=": ("greater_equal", 8),
           "==": ("equal", 7), "!=": ("not_equal", 7)}
_INFIX = frozenset(("PLUS", "MINUS", "STAR", "SLASH", "CMP"))
_MISSING: Any = object()

Tok = tuple[str, str, int]  # (kind, text, offset)


class Token(NamedTuple):
    """A token with its 1-based position (see :func:`tokenize`)."""

    kind: str
    text: str
    line: int
    column: int


def line_col(text: str, pos: int) -> tuple[int, int]:
    """1-based (line, column) of character offset ``pos`` in ``text``."""
    line = text.count("\n", 0, pos) + 1
    col = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return line, col


def tokenize(text: str) -> Iterator[Token]:
    """The tokens of ``text`` with line and column (comments and whitespace skipped).

    Kinds are the named groups of the lexer regex: punctuation (``LP``, ``COMMA``, ...),
    ``LOCAL``/``GLOBAL`` names, ``ALIAS`` (``$t0``), ``NUM``, ``IDENT``, ``STR``, ``META``, and the compound
    ``BIND`` (``%0 =``), ``CALLEE`` (``nn.relu(``), ``KEY`` (``axis=``), ``NUMLIST``
    (``[1, 1]``) and ``TENSOR`` (``tensor([1.0], float32)``).  Ends with an ``EOF`` token;
    malformed input gives ``ERR``/``BADSTR``/``BADCOMMENT`` tokens.

    >>> [(t.kind, t.text, t.line, t.column) for t in tokenize("%0 = f(%x);")][:3]
    [('BIND', '%0 =', 1, 1), ('CALLEE', 'f(', 1, 6), ('LOCAL', '%x', 1, 8)]
    """
    line, line_start, scanned = 1, 0, 0
    for m in _TOKEN_RE.finditer(text):
        kind = m.lastgroup or "EOF"
        pos = m.start(kind)
        nl = text.count("\n", scanned, pos)
        if nl:
            line += nl
            line_start = text.rfind("\n", scanned, pos) + 1
        scanned = pos
        yield Token(kind, m.group(kind), line, pos - line_start + 1)


# -- the parser --------------------------------------------------------------------------------------


class Parser:
    """A recursive-descent parser over one token stream (a slice of ``text``).

    ``meta`` maps metadata indices to constants (None: the text has no
    ``#[metadata]`` section).  ``free_vars``: undefined ``%names`` become fresh
    free variables instead of errors (used by :func:`parse_expr`).
    """

    def __init__(self, text: str, start: int = 0, end: int | None = None, *,
                 meta: dict[int, Constant] | None = None, free_vars: bool = False,
                 env: Mapping[str, Expr] | None = None) -> None:
        self.text = text
        self._it = _TOKEN_RE.finditer(text, start, len(text) if end is None else end)
        self.toks: list[Tok] = []
        self.i = 0
        self.limit = 0
        self._done = False
        self._refill(0)
        self.tok: Tok = self.toks[0]
        self.meta = meta
        self.free_vars = free_vars
        self.free: dict[str, Var] = {}
        self.env: dict[str, Expr] = {}
        for name, value in (env or {}).items():  # reachable as %name and as %"name"
            self.env[name] = value
            self.env[_quoted_key(name)] = value
        self.globals_used: dict[str, int] = {}
        self.type_aliases: dict[str, tuple[Type, int]] = {}  # $name -> (type, offset of its declaration)
        self._declaring: str | None = None
        self.depth = 0
        self._attr_cache: dict[tuple[str, str], Any] = {}
        self._const_cache: dict[str, Constant] = {}
        self._ops: dict[str, tuple[Any, ...]] = {}
        self.ctors: dict[str, Constructor] = {}  # the constructors of the type definitions read so far
        self.type_defs: dict[str, TypeData] = {}
        self.type_params: list[str] = []  # the type parameters in scope (``def @f[A]``, ``fn [A]``)
        self.types_used: dict[str, int] = {}  # type definition name -> offset of a first use
        self._defining_types = False
        self._patterns: dict[tuple[Any, ...], Any] = {}  # (constructor or None, sub-patterns) -> pattern
        self.init: Module | None = None  # TVM's ``init_module``: its globals and types are in scope

    # -- token stream ------------------------------------------------------------------------------
    def _refill(self, i: int) -> int:
        rest = self.toks[i:]
        if self._done:  # stay on the EOF token
            self.toks = rest
            return 0
        batch = [(m.lastgroup, m.group(m.lastgroup), m.start(m.lastgroup))  # type: ignore[arg-type]
                 for m in islice(self._it, _BATCH)]
        toks = rest + batch
        if len(batch) < _BATCH:
            self._done = True
            eof = toks[-1] if toks and toks[-1][0] == "EOF" else ("EOF", "", len(self.text))
            toks.extend([eof] * (_LOOKAHEAD + 2))
            self.limit = len(toks) - 1
        else:
            self.limit = len(toks) - _LOOKAHEAD
        self.toks = toks  # type: ignore[assignment]
        return 0

    def advance(self) -> Tok:
        """Consume the current token and return it."""
        t = self.tok
        i = self.i + 1
        if i >= self.limit:
            if self._done:
                i = min(i, len(self.toks) - 1)
            else:
                i = self._refill(i)
        self.i = i
        self.tok = self.toks[i]
        return t

    def peek(self, k: int = 1) -> Tok:
        """The token ``k`` (at most 2) places after the current one."""
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    # -- errors ------------------------------------------------------------------------------------
    def error(self, message: str, pos: int | None = None) -> ParseError:
        """A ParseError at character offset ``pos`` (default: the current token)."""
        if pos is None:
            pos = self.tok[2]
        line, col = line_col(self.text, pos)
        return ParseError(message, self.text, line, col)

    def _found(self) -> str:
        k, s, _ = self.tok
        if k == "EOF":
            return "end of input"
        if k == "BADSTR":
            return "an unterminated string"
        if k == "BADCOMMENT":
            return "an unterminated comment"
        if k == "METASEC":
            return "'#[metadata]'"
        return repr(s if len(s) <= 40 else s[:37] + "...")

    def expected(self, what: str) -> ParseError:
        """A ParseError ``expected <what>, found <current token>``."""
        return self.error(f"expected {what}, found {self._found()}")

    def _nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.error(f"nesting too deep (more than {MAX_NESTING} levels of parentheses, "
                             "brackets or nested types)")

    def build(self, ctor: Any, pos: int, *args: Any) -> Any:
        """``ctor(*args)``, re-raising construction errors as ParseError at ``pos``."""
        try:
            return ctor(*args)
        except PyIRError as e:
            raise self.error(str(e), pos) from e

    # -- tokens ------------------------------------------------------------------------------------
    def parse_optional_token(self, kind: str) -> Tok | None:
        """Consume and return a token of ``kind``, or None."""
        if self.tok[0] == kind:
            return self.advance()
        return None

    def parse_token(self, kind: str, context: str = "") -> Tok:
        """Consume a token of ``kind`` or raise."""
        if self.tok[0] == kind:
            return self.advance()
        raise self.expected(_DESCR.get(kind, kind) + (f" {context}" if context else ""))

    def parse_optional_keyword(self, word: str) -> Tok | None:
        """Consume the identifier ``word``, or return None."""
        t = self.tok
        if t[0] == "IDENT" and t[1] == word:
            return self.advance()
        return None

    def parse_keyword(self, word: str, context: str = "") -> Tok:
        """Consume the identifier ``word`` or raise."""
        t = self.parse_optional_keyword(word)
        if t is None:
            raise self.expected(f"'{word}'" + (f" {context}" if context else ""))
        return t

    def parse_int(self, what: str = "an integer") -> int:
        """A plain (unsuffixed) integer literal."""
        k, s, p = self.tok
        if k != "NUM" or not s.lstrip("-").isdigit():
            raise self.expected(what)
        self.advance()
        return self._int(s, p)

    def _int(self, s: str, pos: int) -> int:
        try:
            return int(s)
        except ValueError:
            raise self.error(f"integer literal too long: {s[:20]}...", pos) from None

    # -- types -------------------------------------------------------------------------------------
    def parse_optional_type(self) -> Type | None:
        """``Tensor[(d0, d1), dtype]``, ``(T1, T2)``, ``(T,)``, ``()`` or ``fn (T1) -> T2``.

        Iterative (an explicit stack of open tuple and function types), so types of any
        depth parse, like the deep types the printer writes after type inference.
        """
        k, s, _ = self.tok
        if k == "KEY" and self._key_is_type(s):  # ``let %x: int32 = ...``, ``let %x: Nat = ...``
            self._split_key()
            k, s, _ = self.tok
        if k != "LP" and k != "ALIAS" and k != "IDENT" and not (k == "CALLEE" and s == "ref("):
            return None
        # frames: [kind, offset, items]; kind "tuple", "args" (of fn) or "ret" (of fn)
        stack: list[list[Any]] = []
        while True:
            k, s, p = self.tok
            t: Type | None = None
            if k == "IDENT" and s == "Tensor":
                self.advance()
                self.parse_token("LB", "after 'Tensor'")
                shape = self.parse_shape()
                self.parse_token("COMMA", "after the shape of a tensor type")
                dtype = self.parse_dtype()
                self.parse_token("RB", "closing the tensor type")
                t = self.build(TensorType, p, shape, dtype)
            elif k == "IDENT" and s == "fn":
                self.advance()
                self.parse_token("LP", "after 'fn' in a function type")
                if self.tok[0] != "RP":
                    stack.append(["args", p, []])
                    continue
                self.advance()
                self.parse_token("ARROW", "in a function type")
                stack.append(["ret", p, []])
                continue
            elif k == "ALIAS":
                self.advance()
                t = self._alias(s, p)
            elif k == "KEY" and self._key_is_type(s):
                self._split_key()
                continue
            elif k == "IDENT" and _dtype_kind(s) is not None:  # TVM's scalar type: ``float32``
                self.advance()
                t = self.build(TensorType, p, (), _TVM_DTYPES.get(s, s))
            elif k == "LP":
                self.advance()
                if self.tok[0] != "RP":
                    stack.append(["tuple", p, []])
                    continue
                self.advance()
                t = self.build(TupleType, p, [])
            elif k == "CALLEE" and s == "ref(":  # ``ref(T)``
                self.advance()
                stack.append(["ref", p, []])
                continue
            elif k == "IDENT":
                t = self._named_type(s, p, stack)
                if t is None:
                    continue  # ``List[`` opened a frame: its arguments follow
            else:
                raise self.expected("a type")
            # ``t`` is complete: close the frames it completes
            while True:
                if not stack:
                    return t
                kind, fp, items = stack[-1]
                if kind == "ret":
                    stack.pop()
                    t = self.build(FuncType, fp, items, t)
                    continue
                if kind == "ref":
                    stack.pop()
                    self.parse_token("RP", "closing a reference type")
                    t = self.build(RefType, fp, t)
                    continue
                if kind[0] == "@":  # the arguments of a type definition: ``List[A, B]``
                    items.append(t)
                    if self.parse_optional_token("COMMA") is not None and self.tok[0] != "RB":
                        break
                    self.parse_token("RB", "closing the arguments of a type")
                    stack.pop()
                    t = self.build(TypeCall, fp, kind[1:], items)
                    continue
                items.append(t)
                comma = self.parse_optional_token("COMMA") is not None
                if comma and self.tok[0] != "RP":
                    break  # the next element
                if kind == "args":
                    self.parse_token("RP", "closing a type list")
                    self.parse_token("ARROW", "in a function type")
                    stack[-1][0] = "ret"
                    break  # the return type
                self.parse_token("RP", "closing a tuple type")
                stack.pop()
                t = items[0] if len(items) == 1 and not comma else self.build(TupleType, fp, items)

    def parse_annotation(self) -> Type | None:
        """A type annotation after ``:``: a type, or TVM's incomplete type ``_`` (None)."""
        k, s, _ = self.tok
        if k == "IDENT" and s == "_":
            self.advance()
            return None
        if k == "KEY" and s[:-1].rstrip() == "_":  # ``let %x: _ = v``
            self._split_key()
            self.advance()
            return None
        return self.parse_type()

    def _split_key(self) -> None:
        """Split the current KEY token ``name =`` into an IDENT and an EQ token (a type before
        ``=`` in ``let %x: int32 = v`` lexes as an attribute key)."""
        _, s, p = self.tok
        name = s[:-1].rstrip()
        self.toks[self.i:self.i + 1] = [("IDENT", name, p), ("EQ", "=", p + len(s) - 1)]
        self.limit += 1
        self.tok = self.toks[self.i]

    def _key_is_type(self, s: str) -> bool:
        """Whether a KEY token ``name =`` after ``:`` is a type before ``=``: a dtype, a type
        parameter in scope or a type definition (``let %x: Nat = v``)."""
        name = s[:-1].rstrip()
        return _dtype_kind(name) is not None or name in self.type_params or name in self.type_defs

    def _named_type(self, s: str, p: int, stack: list[list[Any]]) -> Type | None:
        """A type named by an identifier: a type parameter in scope (``A``), the incomplete type
        ``_`` (a fresh unknown), or a type definition, applied (``List[A]``: a frame is opened and
        None returned) or not (``Nat``, ``Nat[]``)."""
        self.advance()
        if s in self.type_params:
            return self.build(TypeVar, p, s)
        if s == "_":
            return fresh_unknown()
        if not s.isidentifier() or (s not in self.type_defs and not self._defining_types):
            raise self.error(f"expected a type, found {s!r} (not a type definition read so far, nor a type "
                             "parameter in scope)", p)
        self.types_used.setdefault(s, p)
        k, t, _ = self.tok
        if k == "NUMLIST" and t[1:-1].strip() == "":  # ``Nat[]``
            self.advance()
        elif k == "LB":
            self.advance()
            stack.append(["@" + s, p, []])
            return None
        return self.build(TypeCall, p, s, [])

    def parse_type_params(self) -> list[str]:
        """``[A, B]`` after ``def @f`` / ``fn`` / ``type T``: type parameter names (brought into scope
        by the caller)."""
        names: list[str] = []
        if self.tok[0] == "NUMLIST" and self.tok[1][1:-1].strip() == "":
            self.advance()
            return names
        if self.parse_optional_token("LB") is None:
            return names
        while self.tok[0] != "RB":
            k, s, p = self.tok
            if k != "IDENT" or not s.isidentifier():
                raise self.expected("a type parameter name")
            if s in names:
                raise self.error(f"duplicate type parameter {s}", p)
            self.advance()
            names.append(s)
            if self.parse_optional_token("COMMA") is None:
                break
        self.parse_token("RB", "closing the type parameters")
        return names

    def parse_type_definition(self, extern: bool = False) -> TypeData:
        """``type List[A] { Cons(A, List[A]), Nil, }`` (TVM's ADT definition); after ``extern``,
        ``type Storage`` (an opaque type: a definition without constructors, braces optional)."""
        ep = self.tok[2]
        self.parse_keyword("type", "after 'extern'" if extern else "")
        k, name, p = self.tok
        if k != "IDENT" or not name.isidentifier():
            raise self.expected("a type name after 'type'")
        self.advance()
        if name in self.type_defs:
            raise self.error(f"type {name} is defined twice" + (
                ": in init_module and here" if self.init is not None and name in
                self.init.type_definitions() else ""), p)
        tvs = self.parse_type_params()
        saved = self.type_params
        self.type_params = saved + tvs
        self._defining_types = True  # field types may name definitions that follow
        ctors: list[tuple[str, list[Type], int]] = []
        braces = not extern or self.tok[0] == "LC"
        if braces:
            self.parse_token("LC", "opening the constructors of a type definition")
        while braces and self.tok[0] != "RC":
            k, s, cp = self.tok
            fields: list[Type] = []
            if k == "CALLEE":
                self.advance()
                cname = s[:-1]
                while self.tok[0] != "RP":
                    fields.append(self.parse_type())
                    if self.parse_optional_token("COMMA") is None:
                        break
                self.parse_token("RP", "closing the fields of a constructor")
            elif k == "IDENT":
                self.advance()
                cname = s
                if self.tok[0] == "LP":
                    self.advance()
                    while self.tok[0] != "RP":
                        fields.append(self.parse_type())
                        if self.parse_optional_token("COMMA") is None:
                            break
                    self.parse_token("RP", "closing the fields of a constructor")
            else:
                raise self.expected("a constructor name")
            if not cname.isidentifier():
                raise self.error(f"bad constructor name {cname!r}", cp)
            if cname in self.ctors or any(c[0] == cname for c in ctors):
                raise self.error(f"constructor {cname} is defined twice", cp)
            ctors.append((cname, fields, cp))
            if self.parse_optional_token("COMMA") is None:
                break
        if braces:
            self.parse_token("RC", "closing a type definition")
        if extern and ctors:
            raise self.error(f"extern type {name} has constructors (an extern type has none)", ep)
        self.type_params = saved
        self._defining_types = False
        cs = [self.build(Constructor, cp, cname, fields, name, tvs) for cname, fields, cp in ctors]
        td: TypeData = self.build(TypeData, p, name, tvs, cs)
        self.type_defs[name] = td
        for c in cs:
            self.ctors[c.name_hint] = c
        return td

    def parse_type(self) -> Type:
        """A type, or raise."""
        t = self.parse_optional_type()
        if t is None:
            raise self.expected("a type")
        return t

    def _alias(self, name: str, pos: int) -> Type:
        """The type a ``$name`` reference at ``pos`` stands for (declared earlier), or raise."""
        entry = self.type_aliases.get(name)
        if entry is not None:
            return entry[0]
        if name == self._declaring:
            raise self.error(f"type alias {name} is used in its own declaration", pos)
        later = re.compile(r"\btype\s+" + re.escape(name) + r"\s*=").search(self.text, pos)
        if later is not None:
            line, col = line_col(self.text, later.start())
            raise self.error(f"type alias {name} is used before its declaration (at {line}:{col})", pos)
        raise self.error(f"undefined type alias {name}", pos)

    def at_alias_declaration(self) -> bool:
        """Whether the current tokens start ``type $name = ...;``."""
        t = self.tok
        return t[0] == "IDENT" and t[1] == "type" and self.peek()[0] == "ALIAS"

    def parse_alias_declarations(self) -> None:
        """``type $name = <type>;`` declarations (none or more): the aliases the printer writes
        for large types it prints more than once.  Each alias is declared once, before use."""
        while self.at_alias_declaration():
            self.advance()
            _, name, p = self.advance()
            prev = self.type_aliases.get(name)
            if prev is not None:
                line, col = line_col(self.text, prev[1])
                raise self.error(f"type alias {name} is declared twice (first at {line}:{col})", p)
            self.parse_token("EQ", "in a type alias declaration")
            self._declaring = name
            t = self.parse_type()
            self._declaring = None
            self.parse_token("SEMI", "after a type alias declaration")
            self.type_aliases[name] = (t, p)

    def parse_shape(self) -> tuple[DimLike, ...]:
        """``(d0, d1, ...)``: ``()``, ``(5)``, ``(5,)``, ``(1, 3)``, ``(?, n * 3)``."""
        self.parse_token("LP", "opening a shape")
        dims: list[DimLike] = []
        while self.tok[0] != "RP":
            dims.append(self.parse_dim())
            if self.parse_optional_token("COMMA") is None:
                break
        self.parse_token("RP", "closing a shape")
        return tuple(dims)

    def parse_dim(self) -> DimLike:
        """One dimension: an integer, a symbol (``n``, ``"批"``), ``?``, or an expression over
        them with ``+ - *``, parentheses, ``floordiv(a, b)`` and ``floormod(a, b)`` (built and
        simplified by :mod:`pyir.ir.dims`).  Operator precedence parsing with explicit stacks
        (no recursion with the nesting)."""
        vals: list[Any] = []  # operands: dimensions and pending sums
        # operators: ("+" | "-" | "*", pos), ("(", pos), or ("floordiv" | "floormod", pos, args so far)
        ops: list[list[Any]] = []
        operand = True
        while True:
            k, s, p = self.tok
            if operand:
                if k == "NUM":
                    if not s.lstrip("-").isdigit():
                        raise self.expected("a dimension (an integer, a symbol, ? or an expression)")
                    if s.startswith("-"):
                        raise self.error(f"negative dimension {s}", p)
                    vals.append(self._int(s, p))
                elif k == "IDENT" and "." not in s:
                    vals.append(self.build(Sym, p, s))
                elif k == "STR":
                    vals.append(self.build(Sym, p, json.loads(s)))
                elif k == "QMARK":
                    vals.append(AnyDim)
                elif k == "LP":
                    self._nest()
                    ops.append(["(", p])
                    self.advance()
                    continue
                elif k == "CALLEE" and s[:-1] in ("floordiv", "floormod"):
                    self._nest()
                    ops.append([s[:-1], p, 0])
                    self.advance()
                    continue
                else:
                    raise self.expected("a dimension (an integer, a symbol, ? or an expression)")
                self.advance()
                operand = False
                continue
            if k == "PLUS" or k == "MINUS" or k == "STAR" or (k == "NUM" and s.startswith("-")
                                                              and s[1:].isdigit()):
                op = "+" if k == "PLUS" else "*" if k == "STAR" else "-"
                prec = 2 if op == "*" else 1
                while ops and ops[-1][0] in ("+", "-", "*") and (2 if ops[-1][0] == "*" else 1) >= prec:
                    self._dim_apply(vals, ops.pop())
                ops.append([op, p])
                if k == "NUM":  # ``n -5`` lexes as a name and a negative number
                    vals.append(self._int(s[1:], p))
                    self.advance()
                    continue
                self.advance()
                operand = True
                continue
            if k == "RP" or k == "COMMA":
                while ops and ops[-1][0] in ("+", "-", "*"):
                    self._dim_apply(vals, ops.pop())
                if not ops:
                    break  # the shape's own ',' or ')'
                top = ops[-1]
                if k == "COMMA":
                    if top[0] == "(" or top[2] >= 1:
                        raise self.expected("')'")
                    top[2] += 1
                    self.advance()
                    operand = True
                    continue
                ops.pop()
                self.depth -= 1
                if top[0] != "(":
                    if top[2] != 1:
                        raise self.error(f"{top[0]} takes 2 arguments", top[1])
                    self._dim_apply(vals, top)
                else:
                    vals[-1] = self._dim_value(vals[-1])
                self.advance()
                continue
            if any(o[0] not in ("+", "-", "*") for o in ops):
                raise self.expected("')'")
            break
        while ops:
            self._dim_apply(vals, ops.pop())
        return self._dim_value(vals[0])

    def _dim_apply(self, vals: list[Any], op: list[Any]) -> None:
        """Reduce ``op`` on the top of ``vals``.  Sums stay pending (:class:`_DimSum`) until their
        value is needed, so a sum of k terms costs two passes, not k copies."""
        b = self._dim_value(vals.pop())
        if op[0] == "+" or op[0] == "-":
            a = vals[-1]
            if type(a) is not _DimSum:
                a = vals[-1] = _DimSum(a)
            (a.pos if op[0] == "+" else a.neg).append(b)
            if op[0] == "-":
                a.at = op[1]
            return
        a = self._dim_value(vals.pop())
        try:
            vals.append(_DIM_OPS[op[0]](a, b))
        except PyIRError as e:
            raise self.error(str(e), op[1]) from e

    def _dim_value(self, v: Any) -> DimLike:
        """A pending sum's value: (sum of the added terms) - (sum of the subtracted ones)."""
        if type(v) is not _DimSum:
            return v
        try:
            return dim_sub(dim_sum(v.pos), dim_sum(v.neg)) if v.neg else dim_sum(v.pos)
        except PyIRError as e:
            raise self.error(str(e), v.at) from e

    def parse_dtype(self) -> str:
        """A dtype name (``float32``, ``bool``, ...)."""
        k, s, p = self.tok
        if k != "IDENT":
            raise self.expected("a dtype")
        self.advance()
        if _dtype_kind(s) is None:
            raise self.error(f"unknown dtype {s!r}", p)
        return _TVM_DTYPES.get(s, s)

    # -- attribute values --------------------------------------------------------------------------
    def parse_optional_attr_value(self) -> Any:
        """``1``, ``1.0``, ``inf``, ``True``, ``None``, ``"s"``, ``[...]`` or a type; _MISSING if absent."""
        k, s, p = self.tok
        if k == "NUM":
            self.advance()
            m = _NUM_RE.match(s)
            if m is None:  # pragma: no cover - the lexer only makes matching NUM tokens
                raise self.error(f"bad number {s!r}", p)
            if m.group(2):  # TVM's typed literals ``alpha=0.1f``, ``1i64``: the decimal value
                c = self._scalar(s, p)  # (range-checked for its dtype), a float for a float suffix
                return float(m.group(1)) if c.data.dtype.kind == "f" else int(m.group(1))
            if s[1:2] in ("x", "X") or s[2:3] in ("x", "X"):
                return self._float_bits(s, p)
            if s.lstrip("-").isdigit():
                return self._int(s, p)
            return float(s)
        if k == "STR":
            self.advance()
            return self._string(s, p)
        if k == "IDENT":
            if s == "True" or s == "False":
                self.advance()
                return s == "True"
            if s == "None":
                self.advance()
                return None
            if s == "Tensor" or s == "fn":
                return self.parse_type()
            return _MISSING
        if k == "NUMLIST":
            self.advance()
            return tuple(self._numlist(s, p, False))
        if k == "LB":
            self.advance()
            self._nest()
            items = []
            while self.tok[0] != "RB":
                items.append(self.parse_attr_value())
                if self.parse_optional_token("COMMA") is None:
                    break
            self.parse_token("RB", "closing an attribute list")
            self.depth -= 1
            return tuple(items)
        if k == "LP" or k == "ALIAS":
            return self.parse_type()
        if k == "META":  # TVM's ``virtual_device=meta[VirtualDevice][0]``: the reference's text
            kind = s[5:s.index("]")]
            if kind in ("Constant", "relay.Constant"):
                # TVM's ``memory.alloc_tensor(..., const_shape=meta[relay.Constant][0])``: a 1-D
                # integer constant, kept as its ints (pyir's attributes hold no tensors)
                c = self._meta_ref(s, p)
                if c.data.ndim != 1 or c.data.dtype.kind not in "iu":
                    raise self.error("an attribute value cannot be a constant, except a 1-D integer one "
                                     f"(its ints), got {c.data.dtype} of shape {c.data.shape}", p)
                self.advance()
                return tuple(int(v) for v in c.data)
            self.advance()
            return s
        return _MISSING

    def parse_attr_value(self) -> Any:
        """An attribute value, or raise."""
        v = self.parse_optional_attr_value()
        if v is _MISSING:
            raise self.expected("an attribute value")
        return v

    def _numlist(self, s: str, pos: int, as_text: bool) -> list[Any]:
        """The numbers of a NUMLIST token ``[1, 2.5]`` (their texts if ``as_text``)."""
        inner = s[1:-1].strip()
        if not inner:
            return []
        items = [x.strip() for x in inner.split(",")]
        if as_text:
            return items
        return [self._int(x, pos) if x.lstrip("-").isdigit() else float(x) for x in items]

    def _float_bits(self, s: str, pos: int) -> float:
        """A float attribute written as its IEEE-754 bits, ``0x`` and 16 hex digits (NaN payloads)."""
        if s[0] == "-" or len(s) != 18:
            raise self.error(f"bad float bit pattern {s[:24]!r}: write 0x and 16 hex digits "
                             "(the sign is in the bits)", pos)
        return struct.unpack("<d", struct.pack("<Q", int(s[2:], 16)))[0]

    def _key(self) -> str | None:
        """Consume an attribute key (``name=`` or ``"any name"=``) and return the name, or None."""
        k, s, p = self.tok
        if k == "KEY":
            self.advance()
            key = s[:-1].rstrip()
            return self._string(key, p) if key[0] == '"' else key
        if ((k == "IDENT" and "." not in s) or k == "STR") and self.peek()[0] == "EQ":
            self.advance()
            self.advance()
            return self._string(s, p) if k == "STR" else s
        return None

    def _string(self, s: str, pos: int) -> str:
        """The value of a string literal (JSON escapes); it must be valid Unicode."""
        try:
            v = json.loads(s)
        except (ValueError, RecursionError) as e:
            raise self.error(f"bad string literal: {e}", pos) from None
        if type(v) is not str:  # pragma: no cover - the lexer only makes "..." tokens
            raise self.error("bad string literal", pos)
        try:
            v.encode("utf-8")
        except UnicodeEncodeError as e:
            raise self.error(f"bad string literal: not valid Unicode (lone surrogate {v[e.start]!r} at "
                             f"position {e.start})", pos) from None
        return v

    def _local(self, s: str, pos: int) -> tuple[str, str]:
        """(name, scope key) of a ``%name`` / ``%"name"`` token text.

        A quoted name that would not print unquoted gets its own key, so ``%"0"`` (a
        variable named 0) and ``%0`` (binding 0), or ``%"a.0"`` and ``%a.0`` (element 0
        of ``%a``), never meet.
        """
        if s[1] != '"':
            return s[1:], s[1:]
        name = self._string(s[1:], pos + 1)
        return name, _quoted_key(name)

    # -- constants ---------------------------------------------------------------------------------
    def parse_optional_constant(self) -> Constant | None:
        """``1.5f``, ``7``, ``7i64``, ``True``, ``tensor([...], dtype)`` or ``meta[Constant][i]``."""
        k, s, p = self.tok
        if k == "NUM":
            self.advance()
            c = self._const_cache.get(s)
            if c is None:
                c = self._const_cache[s] = self._scalar(s, p)
            return c
        if k == "META":
            self.advance()
            return self._meta_ref(s, p)
        if k == "TENSOR":
            self.advance()
            c = self._const_cache.get(s)
            if c is None:
                c = self._const_cache[s] = self._tensor_token(s, p)
            return c
        if k == "IDENT":
            if s == "True" or s == "False":
                self.advance()
                return Constant(np.array(s == "True"))
            if s == "tensor" and self.peek()[0] == "LP":
                return self._tensor_literal()
        return None

    def parse_constant(self) -> Constant:
        """A constant, or raise."""
        c = self.parse_optional_constant()
        if c is None:
            raise self.expected("a constant")
        return c

    def _scalar(self, s: str, pos: int) -> Constant:
        m = _NUM_RE.match(s)
        if m is None:  # pragma: no cover - the lexer only makes matching NUM tokens
            raise self.error(f"bad number {s!r}", pos)
        num, suffix = m.group(1), m.group(2) or ""
        if "x" in num or "X" in num:
            raise self.error(f"hex bit patterns ({num[:24]}) are only read in attribute values", pos)
        is_int = num.lstrip("-").isdigit()
        if suffix:
            dtype = _SUFFIX_DTYPE.get(suffix)
            if dtype is None:
                raise self.error(f"unknown numeric suffix {suffix!r} (use f, f16, f64, i8-i64, u8-u64)", pos)
        elif not is_int:
            dtype = "float32"
        else:  # TVM's rule: an integer without suffix is an int32, or an int64 if it does not fit
            dtype = "int32" if -2**31 <= self._int(num, pos) < 2**31 else "int64"
        if dtype[0] != "f" and not is_int:
            raise self.error(f"{num!r} is not an integer, but suffix {suffix!r} makes an {dtype}", pos)
        return Constant(self._typed_value(num, is_int, dtype, pos))

    def _typed_value(self, num: str, is_int: bool, dtype: str, pos: int) -> np.ndarray:
        """``num`` as a 0-d ``dtype`` array; out of range (a float that overflows to inf, an
        integer that does not fit) is a ParseError, never a silent inf or wrap-around."""
        try:
            if dtype[0] in "iu":
                v = self._int(num, pos)
                info = np.iinfo(dtype)
                if not info.min <= v <= info.max:
                    raise OverflowError
                return np.array(v, dtype=dtype)
            f = float(self._int(num, pos)) if is_int else float(num)
            if abs(f) > float(np.finfo(dtype).max) and not np.isinf(f):
                raise OverflowError  # (TVM's rule: beyond the largest finite value)
            return np.array(f, dtype=dtype)
        except (OverflowError, ValueError):
            raise self.error(f"{num} is out of range for {dtype}", pos) from None

    def _tensor_token(self, s: str, pos: int) -> Constant:
        """A whole ``tensor([...], dtype)`` token: elements read as JSON (bracket depth bounded)."""
        head, _, dtype = s[7:-1].rpartition(",")
        dtype = dtype.strip()
        head = head.strip()
        if _FLAT_LIST.match(head) is not None:  # fast path: a flat list of plain numbers
            kind = _dtype_kind(dtype)
            if kind == "f" or kind == "c":
                return self._make_tensor([float(x) for x in head[1:-1].split(",")], dtype, pos)
        if head.count("[") > MAX_NESTING and _bracket_depth(head) > MAX_NESTING:
            raise self.error(f"nesting too deep (more than {MAX_NESTING} levels of brackets)", pos)
        if _JSON_WORDS.search(head) is not None:
            head = _JSON_WORDS.sub(lambda m: _JSON_WORD[m.group()], head)
        try:
            elems = json.loads(head)
        except ValueError:
            raise self.error("bad tensor literal: elements must be [...] lists of numbers, True or False",
                             pos) from None
        return self._make_tensor(elems, dtype, pos)

    def _make_tensor(self, elems: Any, dtype: str, pos: int) -> Constant:
        kind = _dtype_kind(dtype)
        if kind is None:
            raise self.error(f"unknown dtype {dtype!r} in a tensor literal", pos)
        if kind == "b":
            good = _all_leaves(elems, lambda x: type(x) is bool)
        elif kind in "iu":
            good = _all_leaves(elems, lambda x: type(x) is int)
        else:
            good = _all_leaves(elems, lambda x: type(x) is float or type(x) is int)
        if not good:
            raise self.error(f"bad tensor literal: elements do not fit dtype {dtype}", pos)
        try:
            arr = np.array(elems, dtype=dtype)
        except (ValueError, OverflowError, TypeError) as e:
            raise self.error(f"bad tensor literal: {e}", pos) from None
        if arr.ndim == 0:
            raise self.error("bad tensor literal: elements must be a [...] list", pos)
        return Constant(arr)

    def _tensor_literal(self) -> Constant:
        p = self.advance()[2]  # 'tensor'
        self.parse_token("LP", "after 'tensor'")
        if self.tok[0] != "LB" and self.tok[0] != "NUMLIST":
            raise self.expected("'[' starting the elements of a tensor literal")
        start = self.tok[2]
        elems = self._elements()
        self.parse_token("COMMA", "before the dtype of a tensor literal")
        if self.tok[0] != "IDENT":
            raise self.expected("a dtype")
        dtype = self.advance()[1]
        self.parse_token("RP", "closing a tensor literal")
        key = self.text[start:self.tok[2]]
        c = self._const_cache.get(key)
        if c is None:
            try:
                conv = _map_leaves(elems, _leaf_value)
            except ValueError:
                raise self.error("bad tensor literal: elements must be numbers, True or False "
                                 "(no suffix)", p) from None
            c = self._const_cache[key] = self._make_tensor(conv, dtype, p)
        return c

    def _elements(self) -> Any:
        """A nested ``[...]`` list of scalar token texts (bounded recursion)."""
        k, s, p = self.tok
        if k == "LB":
            self.advance()
            self._nest()
            out = []
            while self.tok[0] != "RB":
                out.append(self._elements())
                if self.parse_optional_token("COMMA") is None:
                    break
            self.parse_token("RB", "closing a list of tensor elements")
            self.depth -= 1
            return out
        if k == "NUMLIST":
            self.advance()
            return self._numlist(s, p, True)
        if k == "NUM" or (k == "IDENT" and s in ("True", "False")):
            self.advance()
            return s
        raise self.expected("a tensor element")

    def _meta_ref(self, s: str, pos: int) -> Constant:
        kind = s[5:s.index("]")]
        idx = int(s[s.rindex("[") + 1:-1]) if len(s) < 60 else -1
        if kind != "Constant" and kind != "relay.Constant":
            raise self.error(f"unsupported metadata kind {kind!r} (only Constant)", pos)
        if self.meta is None:
            raise self.error(f"{s} refers to the metadata section, which is missing: print with "
                             "astext() (not str()) to include the large constants", pos)
        c = self.meta.get(idx)
        if c is None:
            raise self.error(f"{s} is not in the metadata section ({len(self.meta)} constant(s))", pos)
        return c

    # -- expressions -------------------------------------------------------------------------------
    def parse_optional_expr(self) -> Expr | None:
        """An expression: operands (:meth:`parse_operand`) and TVM's infix operators
        (``* /`` before ``+ -`` before ``< > <= >=`` before ``== !=``, left-associative, built as
        calls of multiply, divide, add, ...); None if absent."""
        e = self.parse_primary() if self.tok[0] != "MINUS" else self.parse_operand()
        if e is None:
            return None
        k, s, _ = self.tok
        if k in _INFIX or (k == "NUM" and s[0] == "-"):
            return self._binary(e)
        return e

    def _binary(self, first: Expr) -> Expr:
        """``first`` followed by infix operators and operands (operator precedence, explicit stacks)."""
        vals: list[Expr] = [first]
        ops: list[tuple[str, int, int]] = []  # (operator, precedence, offset)
        while True:
            k, s, p = self.tok
            if k in _INFIX:
                sym = "+" if k == "PLUS" else "-" if k == "MINUS" else "*" if k == "STAR" else \
                    "/" if k == "SLASH" else s
            elif k == "NUM" and s[0] == "-":  # ``%x -1`` lexes as an operand and a negative number
                sym = "-"
            else:
                break
            name, prec = _BINOPS[sym]
            while ops and ops[-1][1] >= prec:
                self._reduce(vals, ops.pop())
            ops.append((name, prec, p))
            rhs: Expr | None
            if k == "NUM":
                self.advance()
                rhs = self._literal(s[1:], p + 1)
                nk = self.tok[0]
                if nk == "LP" or nk == "DOT":
                    rhs = self._postfix(rhs)
            else:
                self.advance()
                rhs = self.parse_operand()
            if rhs is None:
                raise self.expected(f"an expression after '{sym}'")
            vals.append(rhs)
        while ops:
            self._reduce(vals, ops.pop())
        return vals[0]

    def _reduce(self, vals: list[Expr], op: tuple[str, int, int]) -> None:
        b = vals.pop()
        a = vals.pop()
        vals.append(self.build(Call, op[2], self._op(op[0], op[2]), (a, b), None))

    def _literal(self, s: str, pos: int) -> Constant:
        c = self._const_cache.get(s)
        if c is None:
            c = self._const_cache[s] = self._scalar(s, pos)
        return c

    def parse_operand(self) -> Expr | None:
        """An operand of the infix operators: ``-`` signs before a number literal (TVM folds
        them into the literal: ``--10`` is 10), or a primary expression; None if absent."""
        if self.tok[0] != "MINUS":
            return self.parse_primary()
        p = self.tok[2]
        neg = False
        while self.tok[0] == "MINUS":
            self.advance()
            neg = not neg
        k, s, q = self.tok
        if k != "NUM":
            raise self.expected("a number after '-' (negation applies to literals only)")
        self.advance()
        if neg:
            s = s[1:] if s[0] == "-" else "-" + s
        return self._literal(s, p if q - p < 20 else q)

    def parse_primary(self) -> Expr | None:
        """A name, constant, call, tuple, ``e.i``, or a ``fn``/``if`` block used inline
        (``(fn (%x) { %x })(1)``, bounded nesting); None if absent.

        Blocks at the statement level are read by :meth:`value` (an explicit stack, any depth).
        """
        k, s, p = self.tok
        e: Expr
        if k == "LOCAL":
            self.advance()
            e = self._resolve_local(s, p)
        elif k == "CALLEE":
            self.advance()
            e = self._op_call(s[:-1], p)
        elif k == "IDENT":
            if self.peek()[0] == "LP" and s not in _BLOCK_WORDS and s != "tensor":
                self.advance()
                self.advance()
                e = self._op_call(s, p)
            elif s == "True" or s == "False" or s == "tensor":
                e = self.parse_constant()
            elif s == "fn" or s == "if" or s == "let":  # inline blocks: ``(let %a = 1; %a) + 2``
                self._nest()
                e = self.run(self.function() if s == "fn" else self.if_() if s == "if" else self.body())
                self.depth -= 1
            elif s in _BLOCK_WORDS:
                return None
            elif s == "meta":
                raise self.error("malformed metadata reference (expected meta[Constant][<index>])", p)
            elif s in self.ctors:  # a constructor: a value, or the call of a nullary one (``Nil``)
                self.advance()
                c = self.ctors[s]
                e = c if c.inputs or self.tok[0] == "LP" else self.build(Call, p, c, ())
            else:
                self.advance()
                e = self._op(s, p)
        elif k == "NUM" or k == "META" or k == "TENSOR":
            e = self.parse_constant()
        elif k == "GLOBAL":
            self.advance()
            idx: list[str] = []
            if s[1] == '"':
                name = self._string(s[1:], p + 1)
            else:  # ``@f.0``: element 0 of ``@f`` (names ending in a number print quoted)
                name, idx = _split_index(s[1:])
            if name not in self.globals_used:
                self.globals_used[name] = p
            e = self.build(GlobalVar, p, name)
            for i in idx:
                e = self.build(TupleGetItem, p, e, self._int(i, p))
        elif k == "LP":
            e = self._paren()
        else:
            return None
        k = self.tok[0]
        if k == "LP" or k == "DOT":
            return self._postfix(e)
        return e

    def _postfix(self, e: Expr) -> Expr:
        """Calls of non-operator callees ``e(...)`` and tuple indexing ``e.i``."""
        while True:
            k, _, p = self.tok
            if k == "LP":
                self.advance()
                args, attrs, _ = self._call_args()
                e = self.build(Call, p, e, args, attrs)
            elif k == "DOT":
                self.advance()
                k2, s2, p2 = self.tok
                if k2 != "NUM" or not s2.replace(".", "").isdigit() or s2.endswith("."):
                    raise self.expected("a tuple index after '.'")
                self.advance()
                for part in s2.split("."):
                    e = self.build(TupleGetItem, p2, e, self._int(part, p2))
            else:
                return e

    def parse_expr(self) -> Expr:
        """A flat expression, or raise."""
        e = self.parse_optional_expr()
        if e is None:
            raise self.expected("an expression")
        return e

    def _resolve_local(self, s: str, pos: int) -> Expr:
        name, key = self._local(s, pos)
        e = self.env.get(key)
        if e is not None:
            return e
        if s[1] == '"':
            return self._undefined(name, key, pos)
        # ``%a.0.1``: elements of ``%a`` (a bound name that itself ends in ``.<number>``,
        # from older text, wins; the printer quotes such names).  Linear in the name length.
        base, idx = _split_index(name)
        if not idx:
            return self._undefined(name, key, pos)
        e = self.env.get(base)
        if e is None:
            if not self.free_vars:
                return self._undefined(name, key, pos)
            e = self._undefined(base, base, pos)
        for i in idx:
            e = self.build(TupleGetItem, pos, e, self._int(i, pos))
        return e

    def _undefined(self, name: str, key: str, pos: int) -> Expr:
        if self.free_vars:
            v = self.free.get(key)
            if v is None:
                v = self.free[key] = self.build(Var, pos, name)
            return v
        raise self.error(f"undefined variable {_shown_local(name)}", pos)

    def _op(self, name: str, pos: int) -> Op:
        return self._op_entry(name, pos)[0]

    def _op_entry(self, name: str, pos: int) -> tuple[Any, ...]:
        ent = self._ops.get(name)
        if ent is None:
            op = self.build(Op, pos, name)
            odef = op.op_def
            ent = self._ops[name] = (op, odef, odef.num_inputs, bool(odef.attrs))
        return ent

    def _special_call(self, name: str, pos: int) -> Expr:
        """After ``name(``: a constructor call ``Cons(a, b)`` or a reference operation ``ref(e)``,
        ``ref_read(r)``, ``ref_write(r, v)``."""
        args, attrs, _ = self._call_args()
        if attrs:
            raise self.error(f"{name}(...) takes no attributes", pos)
        c = self.ctors.get(name)
        if c is not None:
            return self.build(Call, pos, c, args)
        want = {"ref": 1, "ref_read": 1, "ref_write": 2}[name]
        if len(args) != want:
            raise self.error(f"{name} takes {want} argument(s), got {len(args)}", pos)
        ctor: Any = RefCreate if name == "ref" else RefRead if name == "ref_read" else RefWrite
        return self.build(ctor, pos, *args)

    def _op_call(self, name: str, pos: int) -> Any:
        """The rest of ``name(args, attrs)`` after ``name(``: a call of an operator."""
        if name in self.ctors or name in _REF_CALLS:
            return self._special_call(name, pos)
        op, odef, n_in, has_attrs = self._ops.get(name) or self._op_entry(name, pos)
        args, attrs, span = self._call_args()
        try:
            if n_in != len(args):
                odef.check_arity(len(args))
            a = None
            if attrs or has_attrs:
                key = (name, span)
                a = self._attr_cache.get(key)
                if a is None:
                    if name == "split" and attrs and "by_sections" not in attrs \
                            and isinstance(attrs.get("indices_or_sections"), (list, tuple)) \
                            and len(attrs["indices_or_sections"]) == 1:
                        # Relay's SplitAttrs: an int is a number of sections, a list is indices
                        # (``[2]`` splits at index 2, as TVM reads it)
                        attrs = {**attrs, "by_sections": False}
                    a = self._attr_cache[key] = odef.normalize_attrs(attrs)
            return Call(op, args, a, _checked=True)
        except PyIRError as e:
            raise self.error(str(e), pos) from e

    def _call_args(self) -> tuple[tuple[Expr, ...], dict[str, Any] | None, str]:
        """After ``(``: positional arguments, then ``key=value`` attributes, then ``)``."""
        args: list[Expr] = []
        attrs: dict[str, Any] | None = None
        attr_start = 0
        self._nest()
        env = self.env
        consts = self._const_cache
        while True:
            k, s, p = self.tok
            if attrs is None and (k == "LOCAL" or k == "TENSOR" or k == "NUM"):
                # fast path for the atoms of printed text
                e: Any = None
                if k == "LOCAL":
                    if s[1] != '"':
                        e = env.get(s[1:])
                else:
                    e = consts.get(s)
                if e is None:
                    e = self.parse_expr()
                else:
                    self.advance()
                    nk, ns, _ = self.tok
                    if nk == "LP" or nk == "DOT":
                        e = self._postfix(e)
                        nk, ns, _ = self.tok
                    if nk in _INFIX or (nk == "NUM" and ns[0] == "-"):
                        e = self._binary(e)
                args.append(e)
            elif k == "RP":
                break
            else:
                key = self._key() if k in ("KEY", "IDENT", "STR") else None
                if key is not None:
                    if attrs is None:
                        attrs = {}
                        attr_start = p
                    elif key in attrs:
                        raise self.error(f"duplicate attribute {key!r}", p)
                    attrs[key] = self.parse_attr_value()
                elif attrs is not None:
                    raise self.expected("an attribute 'name=value' (arguments come before attributes)")
                else:  # a block argument (``@f(fn (%x) { ... })``, TVM's text) or a flat one
                    e = self.run(self.value()) if self._is_block() else self.parse_optional_expr()
                    if e is None:
                        raise self.expected("an argument or ')'")
                    args.append(e)
            if self.tok[0] != "COMMA":
                break
            self.advance()
        if self.tok[0] != "RP":
            raise self.expected("',' or ')' in an argument list")
        span = self.text[attr_start:self.tok[2]] if attrs is not None else ""
        self.advance()
        self.depth -= 1
        return tuple(args), attrs, span

    def _paren(self) -> Expr:
        return self._paren_rest(self.advance()[2])

    def _paren_rest(self, p: int) -> Expr:
        """A parenthesized expression or tuple after its ``(`` (at offset ``p``)."""
        self._nest()
        fields: list[Expr] = []
        trailing = False
        while self.tok[0] != "RP":
            e = self.run(self.value()) if self._is_block() else self.parse_optional_expr()  # ``(fn ...)(1)``
            if e is None:
                raise self.expected("an expression or ')'")
            fields.append(e)
            trailing = self.parse_optional_token("COMMA") is not None
            if not trailing:
                break
        self.parse_token("RP", "closing a tuple")
        self.depth -= 1
        if len(fields) == 1 and not trailing:
            return fields[0]
        return self.build(Tuple, p, fields)

    # -- scopes ------------------------------------------------------------------------------------
    def bind(self, name: str, value: Expr, undo: list[tuple[str, Any]]) -> None:
        """Bind ``%name`` in the current scope (shadowing), recording how to undo it."""
        env = self.env
        undo.append((name, env.get(name, _MISSING)))
        env[name] = value

    def unbind(self, undo: list[tuple[str, Any]]) -> None:
        """Undo the bindings of a scope."""
        env = self.env
        for name, old in reversed(undo):
            if old is _MISSING:
                del env[name]
            else:
                env[name] = old

    def _binder_name(self, context: str) -> tuple[str, str, int]:
        """(name, scope key, offset) of the ``%name`` a parameter or let binds."""
        k, s, p = self.tok
        if k != "LOCAL":
            raise self.expected(f"a %name {context}")
        self.advance()
        return (*self._local(s, p), p)

    def _bind_target(self) -> tuple[str, str]:
        """Consume ``%name =`` (one BIND token, or LOCAL and EQ); (name, scope key)."""
        k, s, p = self.advance()
        if k == "BIND":
            s = s[:-1].rstrip()
        else:
            self.advance()
        return self._local(s, p)

    def parse_params(self, undo: list[tuple[str, Any]]) -> tuple[list[Var], dict[str, Any]]:
        """``(%x: T, %y, Attr=value, ...)``; binds the parameters."""
        self.parse_token("LP", "opening a parameter list")
        params: list[Var] = []
        attrs: dict[str, Any] = {}
        seen: set[str] = set()
        keys: list[str] = []
        while self.tok[0] != "RP":
            k, _, p = self.tok
            key = self._key() if k in ("KEY", "IDENT", "STR") else None
            if key is not None:
                if key in attrs:
                    raise self.error(f"duplicate attribute {key!r}", p)
                attrs[key] = self.parse_attr_value()
                if key == "virtual_device":  # TVM's function device: dropped (see _param_attrs)
                    attrs[key] = _MISSING
            elif attrs:
                raise self.expected("an attribute 'name=value' (parameters come before attributes)")
            else:
                name, key, p = self._binder_name("(a parameter)")
                if key in seen:
                    raise self.error(f"duplicate parameter {_shown_local(name)}", p)
                seen.add(key)
                if self.tok[0] == "LC":
                    self._param_attrs()
                ty = self.parse_annotation() if self.parse_optional_token("COLON") else None
                params.append(self.build(Var, p, name, ty))
                keys.append(key)
            if self.parse_optional_token("COMMA") is None:
                break
        self.parse_token("RP", "closing a parameter list")
        attrs = {k: v for k, v in attrs.items() if v is not _MISSING}
        for key, v in zip(keys, params):
            self.bind(key, v, undo)
        return params, attrs

    def _param_attrs(self) -> None:
        """TVM's ``%x {virtual_device=...}`` on a parameter: read and dropped (pyir has no
        devices: a program means the same on every device); any other key is a ParseError."""
        self.advance()
        while self.tok[0] != "RC":
            k, _, p = self.tok
            key = self._key() if k in ("KEY", "IDENT", "STR") else None
            if key is None:
                raise self.expected("an attribute 'name=value' of a parameter")
            if key != "virtual_device":
                raise self.error(f"unsupported parameter attribute {key!r} (only virtual_device, "
                                 "which is dropped)", p)
            self.parse_attr_value()
            if self.parse_optional_token("COMMA") is None:
                break
        self.parse_token("RC", "closing the attributes of a parameter")

    def _is_block(self) -> bool:
        k, s, _ = self.tok
        return k == "LC" or (k == "IDENT" and (s == "fn" or s == "if" or s == "match")) or \
            (k == "CALLEE" and s == "match(")

    def value(self) -> Generator[Any, Any, Expr]:
        """A statement's value: ``fn``/``if``/``{ ... }`` block or flat expression (a generator)."""
        k, s, _ = self.tok
        e: Expr
        if k == "LC":
            self.advance()
            e = yield self.body()
            self.parse_token("RC", "closing a block")
        elif s == "fn":
            e = yield from self.function()
        elif s == "if":
            e = yield from self.if_()
        elif s == "match" or s == "match(":
            e = yield from self.match_()
        else:
            return self.parse_expr()
        k, s, _ = self.tok
        if k == "LP" or k == "DOT":
            e = self._postfix(e)
            k, s, _ = self.tok
        if k in _INFIX or (k == "NUM" and s[0] == "-"):
            e = self._binary(e)
        return e

    def match_(self) -> Generator[Any, Any, Match]:
        """``match (data) { pattern => { body }, ... }`` or ``match?`` (a generator)."""
        k, s, p = self.advance()
        if k == "CALLEE":  # ``match(%x)``: the '(' was lexed with the keyword
            complete = True
            data = self._paren_rest(p)
        else:
            complete = self.parse_optional_token("QMARK") is None
            data = self._paren() if self.tok[0] == "LP" else self.parse_expr()  # TVM: an atomic expression
        self.parse_token("LC", "opening the clauses of a match")
        clauses: list[Clause] = []
        while self.tok[0] != "RC":
            cp = self.tok[2]
            undo: list[tuple[str, Any]] = []
            pat, pvars = self.parse_pattern()
            for key, v in pvars:
                self.bind(key, v, undo)
            k, s, _ = self.tok
            if s == "=>":
                self.advance()
            elif k == "EQ" and self.peek()[1].startswith(">"):
                self.advance()
                self.advance()
            else:
                raise self.expected("'=>' after a pattern")
            k, s, _ = self.tok
            if k == "BIND" or (k == "IDENT" and (s == "let" or s == "free_var")):
                body = yield self.body()  # TVM: ``P => %0 = e; f(%0),`` (statements up to the ',')
            else:
                body = yield from self.value()
            self.unbind(undo)
            clauses.append(self.build(Clause, cp, pat, body, [v for _, v in pvars]))
            if self.parse_optional_token("COMMA") is None:
                break
        self.parse_token("RC", "closing the clauses of a match")
        return self.build(Match, p, data, clauses, complete)

    def parse_pattern(self) -> tuple[Any, list[tuple[str, Var]]]:
        """A pattern (``_``, ``%x``, ``%x: T``, ``C``, ``C(p, ...)``, ``(p, ...)``) and its variables
        as (scope key, Var) pairs in order (bounded nesting, like the other inline forms)."""
        pvars: list[tuple[str, Var]] = []
        seen: set[str] = set()

        def one() -> Any:
            k, s, p = self.tok
            if k == "IDENT" and s == "_":
                self.advance()
                return PatternWildcard()
            if k == "LOCAL":
                name, key, vp = self._binder_name("in a pattern")
                if key in seen:
                    raise self.error(f"{_shown_local(name)} is bound twice in a pattern", vp)
                seen.add(key)
                ty = self.parse_type() if self.parse_optional_token("COLON") else None
                pvars.append((key, self.build(Var, vp, name, ty)))
                return PatternVar()
            subs: list[Any] = []
            if k == "CALLEE" or (k == "IDENT" and self.peek()[0] == "LP"):
                name = s[:-1] if k == "CALLEE" else s
                self.advance()
                if k == "IDENT":
                    self.advance()
            elif k == "IDENT":
                name = s
                self.advance()
            elif k == "LP":
                self.advance()
                name = ""
            else:
                raise self.expected("a pattern")
            c = self.ctors.get(name) if name else None
            if name and c is None:
                raise self.error(f"undefined constructor {name} in a pattern (a pattern variable is "
                                 f"written %{name})", p)
            if k != "IDENT" or self.toks[self.i - 1][0] == "LP":  # a list of sub-patterns follows
                self._nest()
                while self.tok[0] != "RP":
                    subs.append(one())
                    if self.parse_optional_token("COMMA") is None:
                        break
                self.parse_token("RP", "closing a pattern")
                self.depth -= 1
            pkey = (c, tuple(subs))
            pat = self._patterns.get(pkey)
            if pat is None:
                pat = self._patterns[pkey] = (self.build(PatternTuple, p, subs) if c is None
                                              else self.build(PatternConstructor, p, c, subs))
            return pat

        return one(), pvars

    def _bound_value(self) -> Generator[Any, Any, Expr]:
        """The value of a ``%x = ...`` or ``let %x = ...`` binding (a generator: a block value
        opens nested scopes); an operator call, the common case, is parsed inline."""
        k, s, p = self.tok
        if k != "CALLEE":
            return (yield from self.value()) if self._is_block() else self.parse_expr()
        self.advance()
        val: Expr = self._op_call(s[:-1], p)
        k, s, _ = self.tok
        if k == "LP" or k == "DOT":
            val = self._postfix(val)
            k, s, _ = self.tok
        if k in _INFIX or (k == "NUM" and s[0] == "-"):
            val = self._binary(val)
        return val

    def body(self) -> Generator[Any, Any, Expr]:
        """Bindings ``%N = v;`` / ``let %x: T = v;`` then a tail expression (a generator).

        Nested blocks are requested by yielding their generators to :meth:`run`.
        """
        undo: list[tuple[str, Any]] = []
        lets: list[tuple[Var, Expr, int]] = []
        env = self.env
        while True:
            k, s, p = self.tok
            if k == "BIND" or (k == "LOCAL" and self.peek()[0] == "EQ"):
                _, name = self._bind_target()
                val = yield from self._bound_value()
                if self.tok[0] != "SEMI":
                    raise self.expected("';' after a binding")
                self.advance()
                undo.append((name, env.get(name, _MISSING)))
                env[name] = val
            elif k == "IDENT" and s == "let":
                self.advance()
                vp = self.tok[2]
                if self.tok[0] == "BIND":
                    (name, key), ty = self._bind_target(), None
                else:
                    name, key, vp = self._binder_name("after 'let'")
                    ty = self.parse_annotation() if self.parse_optional_token("COLON") else None
                    self.parse_token("EQ", "in a let binding")
                v = self.build(Var, vp, name, ty)
                recursive = self.tok[1] == "fn" and self.tok[0] == "IDENT"
                if recursive:  # a let-bound function may call itself
                    self.bind(key, v, undo)
                val = yield from self._bound_value()
                self.parse_token("SEMI", "after a let binding")
                lets.append((v, val, p))
                if not recursive:
                    self.bind(key, v, undo)
            elif k == "IDENT" and s == "free_var" and self.peek()[0] == "LOCAL":
                self.advance()  # TVM's ``free_var %x: T;``: a free variable of the text
                name, key, vp = self._binder_name("after 'free_var'")
                if key in self.free:
                    raise self.error(f"free variable {_shown_local(name)} is declared twice", vp)
                ty = self.parse_annotation() if self.parse_optional_token("COLON") else None
                self.parse_token("SEMI", "after a free_var declaration")  # as TVM (parser.cc)
                if key in self.env:  # a name given in ``env`` stands for what env maps it to
                    continue
                v = self.free[key] = self.build(Var, vp, name, ty)
                self.bind(key, v, undo)
            else:
                if self._is_block():
                    tail = yield from self.value()
                else:
                    e = self.parse_optional_expr()
                    if e is None:
                        raise self.expected("an expression or a binding")
                    tail = e
                if self.tok[0] == "SEMI" and self.peek()[0] not in ("RC", "EOF"):
                    # TVM's sequencing ``e1; e2``: ``let %_ = e1; e2``
                    lets.append((self.build(Var, p, "_", None), tail, p))
                    self.advance()
                    continue
                break
        for v, val, p in reversed(lets):
            tail = self.build(Let, p, v, val, tail)
        self.unbind(undo)
        return tail

    def function(self) -> Generator[Any, Any, Function]:
        """``fn (params) -> T { body }`` (a generator)."""
        p = self.advance()[2]
        undo: list[tuple[str, Any]] = []
        saved = self.type_params
        self.type_params = saved + self.parse_type_params()  # ``fn [A](%x: A)``
        params, attrs = self.parse_params(undo)
        ret = self.parse_type() if self.parse_optional_token("ARROW") else None
        self.parse_token("LC", "opening a function body")
        b = yield self.body()
        self.parse_token("RC", "closing a function body")
        self.unbind(undo)
        self.type_params = saved
        return self.build(Function, p, params, b, ret, attrs)

    def if_(self) -> Generator[Any, Any, If]:
        """``if (cond) { ... } else { ... }`` (a generator)."""
        p = self.advance()[2]
        self.parse_token("LP", "after 'if'")
        cond = self.parse_expr()
        self.parse_token("RP", "closing the condition")
        self.parse_token("LC", "opening the true branch")
        t = yield self.body()
        self.parse_token("RC", "closing the true branch")
        self.parse_keyword("else")
        self.parse_token("LC", "opening the false branch")
        f = yield self.body()
        self.parse_token("RC", "closing the false branch")
        return self.build(If, p, cond, t, f)

    def definition(self) -> Generator[Any, Any, tuple[str, Function, int]]:
        """``def @name(params) -> T { body }`` (a generator)."""
        self.parse_keyword("def")
        k, s, p = self.tok
        if k != "GLOBAL":
            raise self.expected("a @name after 'def'")
        self.advance()
        name = self._string(s[1:], p + 1) if s[1] == '"' else s[1:]
        undo: list[tuple[str, Any]] = []
        self.type_params = self.parse_type_params()  # ``def @id[A](%x: A) -> A``
        params, attrs = self.parse_params(undo)
        ret = self.parse_type() if self.parse_optional_token("ARROW") else None
        self.parse_token("LC", "opening a function body")
        b = yield self.body()
        self.parse_token("RC", "closing a function body")
        self.unbind(undo)
        self.type_params = []
        return name, self.build(Function, p, params, b, ret, attrs), p

    @staticmethod
    def run(gen: Generator[Any, Any, Any]) -> Any:
        """Drive a block generator and the nested ones it requests with an explicit stack."""
        stack = [gen]
        val: Any = None
        while True:
            try:
                req = stack[-1].send(val)
            except StopIteration as stop:
                stack.pop()
                if not stack:
                    return stop.value
                val = stop.value
                continue
            stack.append(req)
            val = None

    # -- top level ---------------------------------------------------------------------------------
    def parse_version(self) -> None:
        """TVM's optional version header ``#[version = "0.0.5"]`` (any 0.0.x is read)."""
        k, s, p = self.tok
        if k != "VERSION":
            return
        v = self._string(s[s.index('"'):s.rindex('"') + 1], p)
        if not re.fullmatch(r"0\.0\.[0-9]+", v):
            raise self.error(f"unsupported Relay text version {v!r} (pyir reads 0.0.5)", p)
        self.advance()

    def parse_module(self, init: Module | None = None) -> Module:
        """Definitions until the end of input (added to those of ``init``, if given)."""
        funcs: dict[str, Function] = {}
        self.init = init
        if init is not None:  # TVM's init_module: its types, constructors and functions in scope
            for td in init.type_definitions().values():
                self.type_defs[td.header.name_hint] = td
                for c in td.constructors:
                    self.ctors[c.name_hint] = c
        self.parse_version()
        while self.tok[0] != "EOF":
            if self.at_alias_declaration():
                self.parse_alias_declarations()
                continue
            if self.tok[0] == "IDENT" and self.tok[1] == "type":
                self.parse_type_definition()
                continue
            if self.tok[0] == "IDENT" and self.tok[1] == "extern":  # extern type Storage
                self.advance()
                self.parse_type_definition(extern=True)
                continue
            if self.tok[0] != "IDENT" or self.tok[1] != "def":
                raise self.expected("'def' or end of input")
            name, f, p = self.run(self.definition())
            if name in funcs:
                raise self.error(f"@{name} is defined twice", p)
            if init is not None and name in init:
                raise self.error(f"@{name} is defined twice: already a function of the init module "
                                 f"({_signature(name, init[name])}), and here", p)
            funcs[name] = f
        for name, p in self.globals_used.items():
            if name not in funcs and (init is None or name not in init):
                raise self.error(f"undefined global function @{name}" + (
                    "" if init is None else " (neither defined here nor in init_module, which defines "
                    + (", ".join("@" + n for n in init.names()[:8]) + (", ..." if len(init) > 8 else "")
                       if len(init) else "no function") + ")"), p)
        for name, p in self.types_used.items():
            if name not in self.type_defs:
                raise self.error(f"undefined type {name} (not a type definition of the module, nor a type "
                                 "parameter in scope)", p)
        if init is None:
            return self.build(Module, self.tok[2], funcs, list(self.type_defs.values()))
        new_types = [td for n, td in self.type_defs.items() if n not in init.type_definitions()]
        return self.build(_extended, self.tok[2], init, funcs, new_types)

    def parse_toplevel_expr(self) -> Expr:
        """Type alias declarations, then a body (bindings and a tail expression) until the end."""
        self.parse_version()
        self.parse_alias_declarations()
        e = self.run(self.body())
        if self.tok[0] != "EOF":
            raise self.expected("';' or end of input")
        return e

    def parse_metadata(self, out: dict[int, Constant] | None = None, header: bool = True
                       ) -> dict[int, Constant]:
        """``#[metadata]`` (if ``header``) then ``meta[Constant][i] = dtype (shape) "base64"`` lines.

        Entries go into ``out`` (which may hold the entries read before this parser's start).
        """
        if header:
            self.parse_token("METASEC")
        if out is None:
            out = {}
        while self.tok[0] != "EOF":
            k, s, p = self.tok
            if k != "META":
                raise self.expected("'meta[Constant][<index>] = ...' in the metadata section")
            self.advance()
            kind = s[5:s.index("]")]
            if kind != "Constant":
                raise self.error(f"unsupported metadata kind {kind!r} (only Constant)", p)
            idx = self._int(s[s.rindex("[") + 1:-1], p)
            if idx in out:
                raise self.error(f"{s} is defined twice", p)
            self.parse_token("EQ", "in a metadata entry")
            dp = self.tok[2]
            dtype = self.parse_dtype()
            sp = self.tok[2]
            shape = self.parse_shape()
            if not all(type(d) is int for d in shape):
                raise self.error("a constant's shape must be static (integers)", sp)
            k2, blob, bp = self.tok
            if k2 != "STR":
                raise self.expected("a base64 string")
            self.advance()
            try:
                raw = base64.b64decode(blob[1:-1], validate=True)
                arr = np.frombuffer(raw, dtype=dtype).reshape(shape)
            except (ValueError, binascii.Error) as e:
                raise self.error(f"bad data for {s} ({dtype} {shape}): {e}", bp) from None
            out[idx] = self.build(Constant, dp, arr)
        return out


_FLAT_LIST = re.compile(r"\[\s*" + _PLAIN_NUM + r"(?:\s*,\s*" + _PLAIN_NUM + r")*\s*\]\Z")
_META_LINE = re.compile(r'\s*meta\[Constant\]\[([0-9]+)\] = ([a-z][a-z0-9]*) \(((?:[0-9]+(?:, [0-9]+)*)?)\) '
                        r'"([A-Za-z0-9+/=]*)"[ \t]*(?=\n|\Z)')
_JSON_WORD = {"True": "true", "False": "false", "inf": "Infinity", "nan": "NaN"}
_JSON_WORDS = re.compile(r"\b(?:True|False|inf|nan)\b")
_LEAF_RE = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|inf|nan)\Z")


def _signature(name: str, f: Function) -> str:
    """``def @name(%x: T, ...) -> R`` of a function's annotations (for error messages)."""
    from .printer import astext
    params = ", ".join(_shown_local(v.name_hint) + ("" if v.type_annotation is None else
                                                    ": " + astext(v.type_annotation)) for v in f.params)
    ret = "" if f.ret_type is None else " -> " + astext(f.ret_type)
    return f"def @{name}({params}){ret}"


def _extended(init: Module, funcs: dict[str, Function], types: list[TypeData]) -> Module:
    """``init`` with the parsed definitions added (a module derived from it: its history is kept)."""
    m = init
    for td in types:
        m = m.with_type_definition(td)
    return m.with_functions(funcs)


def _quoted_key(name: str) -> str:
    """Scope key of ``%"name"``: the name itself when it also prints unquoted."""
    return name if is_plain_name(name) else "\x00" + name


def _shown_local(name: str) -> str:
    return "%" + name if is_plain_name(name) or name.isdigit() else "%" + json.dumps(name)


def _split_index(name: str) -> tuple[str, list[str]]:
    """``a.b.0.1`` -> (``a.b``, [``0``, ``1``]): trailing numeric parts are tuple indices."""
    j = len(name)
    idx: list[str] = []
    while True:
        i = name.rfind(".", 0, j)
        if i <= 0 or not name[i + 1:j].isdigit():
            break
        idx.append(name[i + 1:j])
        j = i
    idx.reverse()
    return (name[:j] if idx else name), idx


_DTYPE_KINDS: dict[str, str | None] = {}


_TVM_DTYPES = {"int": "int32", "uint": "uint32", "float": "float32"}  # TVM's bare names: 32 bits


def _dtype_kind(name: str) -> str | None:
    """The numpy kind of a canonical numeric or bool dtype name, else None (memoized)."""
    name = _TVM_DTYPES.get(name, name)
    kind = _DTYPE_KINDS.get(name, "?")
    if kind == "?":
        try:
            dt = normalize_dtype(name)
            kind = dtype_kind(dt) if dt == name else None  # ml_dtypes' floats are "f", int4 "i"...
        except (PyIRError, TypeError, ValueError):
            kind = None
        if len(_DTYPE_KINDS) < 1000:
            _DTYPE_KINDS[name] = kind
    return kind


def _leaf_value(s: str) -> Any:
    """The value of a tensor element text (ValueError if it is not a plain number or bool)."""
    if s == "True" or s == "False":
        return s == "True"
    if _LEAF_RE.match(s) is None:
        raise ValueError(s)
    if s.lstrip("-").isdigit():
        return int(s)
    return float(s)


def _bracket_depth(s: str) -> int:
    depth = best = 0
    for c in s:
        if c == "[":
            depth += 1
            best = max(best, depth)
        elif c == "]":
            depth -= 1
    return best


def _all_leaves(x: Any, pred: Any) -> bool:
    stack = [x]
    while stack:
        y = stack.pop()
        if type(y) is list:
            stack.extend(y)
        elif not pred(y):
            return False
    return True


def _map_leaves(x: Any, f: Any) -> Any:
    if type(x) is list:
        return [_map_leaves(y, f) for y in x]  # depth is bounded by MAX_NESTING
    return f(x)


def _metadata_start(text: str) -> int:
    """Offset of the last ``#[metadata]`` line, or -1."""
    i = len(text)
    while True:
        i = text.rfind("#[metadata]", 0, i)
        if i <= 0 or text[i - 1] == "\n":
            return i
        i -= 1



def _split(text: str) -> tuple[int, dict[int, Constant] | None]:
    if not isinstance(text, str):
        raise ParseError(f"expected text (str), got {type(text).__name__}")
    md = _metadata_start(text)
    if md < 0:
        return len(text), None
    js = md + len("#[metadata]")
    while js < len(text) and text[js] in " \t\r\n":
        js += 1
    if text.startswith("{", js):  # TVM's form: the JSON node graph (see pyir.text.tvm_meta)
        from .tvm_meta import load
        entries = load(text, js)
        return md, dict(enumerate(entries.get("relay.Constant", [])))
    # Fast path: one regex per well-formed entry; from the first other line on, the token parser
    # takes over (and reports errors with their position).
    out: dict[int, Constant] = {}
    pos = md + len("#[metadata]")
    n = len(text)
    match = _META_LINE.match
    while pos < n:
        m = match(text, pos)
        if m is None:
            break
        idx, dtype, dims, blob = m.groups()
        if len(idx) > 18 or int(idx) in out or _dtype_kind(dtype) is None:
            break
        try:
            shape = tuple(int(d) for d in dims.split(",")) if dims else ()
            arr = np.frombuffer(base64.b64decode(blob, validate=True), dtype=dtype).reshape(shape)
            c = Constant(arr)
        except (ValueError, binascii.Error, PyIRError):
            break
        out[int(idx)] = c
        pos = m.end()
    if pos < n and text[pos:].strip():
        Parser(text, pos).parse_metadata(out, header=False)
    return md, out


def _with_table(meta: dict[int, Constant] | None, table: Mapping[str, Any] | None,
                pos: int) -> dict[int, Constant] | None:
    """The metadata of the text, or the constants of TVM's ``init_meta_table`` argument."""
    if table is None:
        return meta
    if meta is not None:
        raise ParseError("the text has a metadata section and a meta_table is given: give one")
    items = table.get("relay.Constant", table.get("Constant", ()))
    out: dict[int, Constant] = {}
    for i, c in enumerate(items):
        if not isinstance(c, Constant):
            try:
                c = Constant(np.asarray(c))
            except (PyIRError, TypeError, ValueError) as e:
                raise ParseError(f"meta_table['relay.Constant'][{i}]: {e}") from None
        out[i] = c
    return out


def parse(text: str, meta_table: Mapping[str, Any] | None = None, *,
          init_module: Module | None = None) -> Module:
    """Parse module text (as printed by ``mod.astext()``, metadata section included).

    Raises :class:`~pyir.errors.ParseError` (with line and column) on malformed text.
    Reads pyir's text and TVM's Relay text (version header, TVM's JSON metadata section,
    infix operators, ``free_var``, scalar types, ...: see the module docstring).
    ``meta_table`` (TVM's ``init_meta_table``): ``{"relay.Constant": [arrays or constants]}``
    for the ``meta[relay.Constant][i]`` of a text without metadata section.  ``init_module``
    (TVM's ``init_module``, as ``import_from_std`` uses it): a module whose type definitions,
    constructors and functions the text may use; the result is that module with the text's
    definitions added (a module derived from it; ``init_module`` itself is unchanged; a function
    defined in both is a ParseError), e.g. ``parse(text, init_module=pyir.prelude())``.

    >>> import pyir
    >>> mod = parse("def @main(%x: Tensor[(2), float32]) { nn.relu(%x) }")
    >>> print(mod.astext(), end="")
    def @main(%x: Tensor[(2), float32]) {
      nn.relu(%x)
    }
    """
    with _gc_paused():
        end, meta = _split(text)
        if init_module is not None and not isinstance(init_module, Module):
            raise ParseError(f"init_module must be a Module, got {type(init_module).__name__}")
        return Parser(text, 0, end, meta=_with_table(meta, meta_table, end)).parse_module(init_module)


def parse_expr(text: str, env: Mapping[str, Expr] | None = None, *, free_vars: bool = False,
               meta_table: Mapping[str, Any] | None = None) -> Expr:
    """Parse the expression form printed by ``pyir.astext(expr)`` (and TVM's ``parse_expr`` text).

    ``env`` maps names (without ``%``) to expressions.  Free variables are declared with
    ``free_var %x: T;`` (as the printer writes them, and as in TVM); another undefined ``%name``
    is a ParseError, unless ``free_vars=True`` (then each becomes a fresh untyped free variable).
    ``@names`` are not checked (there is no module).

    >>> import pyir
    >>> e = parse_expr("free_var %a: float32;\\n%0 = add(%a, 1.5f);\\nnegative(%0)")
    >>> print(pyir.astext(e), end="")
    free_var %a: Tensor[(), float32];
    %0 = add(%a, 1.5f);
    negative(%0)
    >>> print(pyir.astext(parse_expr("%a * 2f + 1f < 5f", free_vars=True), tvm=True), end="")
    #[version = "0.0.5"]
    free_var %a;
    %0 = multiply(%a, 2f);
    %1 = add(%0, 1f);
    less(%1, 5f)
    """
    with _gc_paused():
        end, meta = _split(text)
        return Parser(text, 0, end, meta=_with_table(meta, meta_table, end), free_vars=free_vars,
                      env=env).parse_toplevel_expr()


def parse_type(text: str) -> Type:
    """Parse a type printed by ``pyir.astext(type)`` (after its alias declarations, if any)."""
    if not isinstance(text, str):
        raise ParseError(f"expected text (str), got {type(text).__name__}")
    p = Parser(text)
    p.parse_alias_declarations()
    t = p.parse_type()
    if p.tok[0] != "EOF":
        raise p.expected("end of input")
    return t

"""Progress on long work: a line in a terminal, a bar in a notebook, nothing for short work.

pyir's long operations (a pass pipeline, an ONNX import, save and load, diff,
evaluate) report progress through :class:`Progress`.  Nothing shows until the work
has taken ``delay`` seconds (1.5 by default); then a line on stderr redrawn in place
(``pipeline: 4/10 passes 40% [FuseOps] 2.1 s``) or, in a Jupyter notebook, an HTML
progress bar updated in place (one display output, so the notebook file stays
small).  A shown progress leaves its final state when the work ends.

How it stays cheap: the work only counts (``update`` is an increment) and names its
step (``note``); a single daemon thread, started the first time progress may be
shown, wakes five times a second and draws the outermost open progress of each
thread once it is older than its delay.  Only the outermost progress of a thread is
drawn: a pipeline's passes do not start bars of their own.  When progress is off
(the default outside terminals and notebooks) no thread is started and opening a
progress costs well under a microsecond.

Turn it off or on with ``pyir.progress.set_enabled(False)`` (``True`` forces it,
``None`` restores the default) or the environment variable ``PYIR_PROGRESS=0``
/ ``1``.  By default it is on in a notebook and when stderr is a terminal, and off
otherwise (a log file, a test run): tqdm's "auto" convention.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, TextIO

__all__ = ["Progress", "set_enabled", "enabled", "TICK", "DELAY"]

TICK = 0.2  # seconds between the drawing thread's looks
DELAY = 1.5  # seconds of work before a progress shows (the default of ``delay``)

_forced: bool | None = None
_local = threading.local()          # .stack: this thread's open progress objects, outermost first
_roots: list[Progress] = []         # the outermost open progress of each thread, if it may show
_lock = threading.Lock()
_ticker: threading.Thread | None = None


def set_enabled(flag: bool | None) -> None:
    """``True``: always show progress; ``False``: never; ``None``: the default (see the module)."""
    global _forced
    if flag is not None and not isinstance(flag, bool):
        from .errors import WellFormedError

        raise WellFormedError(f"set_enabled takes True, False or None, got {flag!r}")
    _forced = flag


def _in_notebook() -> bool:
    if "ipykernel" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    ip = get_ipython()
    return ip is not None and hasattr(ip, "kernel")


def enabled(file: TextIO | None = None) -> bool:
    """Whether progress would be shown now (on ``file``, stderr by default)."""
    env = os.environ.get("PYIR_PROGRESS", "").strip().lower()
    if env in ("0", "off", "false", "no"):
        return False
    if _forced is not None:
        return _forced
    if env in ("1", "on", "true", "yes"):
        return True
    if _in_notebook():
        return True
    f = file if file is not None else sys.stderr
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False


def _seconds(s: float) -> str:
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {int(s % 60)} s"


def _tick_loop() -> None:
    while True:
        time.sleep(TICK)
        now = time.monotonic()
        with _lock:
            due = [p for p in _roots if now - p._t0 >= p._delay]
        for p in due:
            p._draw(now)


def _ensure_ticker() -> None:
    global _ticker
    if _ticker is None or not _ticker.is_alive():
        _ticker = threading.Thread(target=_tick_loop, name="pyir-progress", daemon=True)
        _ticker.start()


class Progress:
    """``with Progress("import", total=n, unit="nodes") as p: ... p.update()``.

    ``update(k)`` adds ``k`` units done; ``note(text)`` names the current step (a pass's
    name).  ``file`` is where the terminal line goes (stderr); ``delay`` the seconds before
    anything shows (:data:`DELAY`); ``show`` forces it on or off for this one (default: :func:`enabled`)."""

    __slots__ = ("desc", "total", "unit", "n", "text", "_delay", "_file", "_show", "_t0", "_shown",
                 "_handle", "_notebook", "_root", "_draw_lock")

    def __init__(self, desc: str, total: int | None = None, *, unit: str = "", delay: float | None = None,
                 file: TextIO | None = None, show: bool | None = None) -> None:
        self.desc = desc
        self.total = total
        self.unit = unit
        self.n = 0
        self.text = ""
        self._delay = DELAY if delay is None else delay
        self._file = file
        self._show = show
        self._t0 = 0.0
        self._shown = False
        self._handle: Any = None
        self._notebook = False
        self._root = False
        self._draw_lock: threading.Lock | None = None

    def update(self, k: int = 1) -> None:
        """``k`` more units done."""
        self.n += k

    def note(self, text: str) -> None:
        """Name the current step (shown beside the count)."""
        self.text = text

    def __enter__(self) -> Progress:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self)
        if len(stack) == 1 and (self._show if self._show is not None else enabled(self._file)):
            self._t0 = time.monotonic()
            self._root = True
            self._draw_lock = threading.Lock()
            with _lock:
                _roots.append(self)
            _ensure_ticker()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Finish: a shown progress draws its final state and ends its line."""
        stack = getattr(_local, "stack", None)
        if stack and self in stack:
            stack.remove(self)
        if self._root:
            self._root = False
            with _lock:
                if self in _roots:
                    _roots.remove(self)
            if self._shown:
                self._draw(time.monotonic(), final=True)

    def line(self, now: float | None = None) -> str:
        """The progress as one line of text."""
        el = (now if now is not None else time.monotonic()) - self._t0
        unit = f" {self.unit}" if self.unit else ""
        if self.total:
            head = f"{self.desc}: {self.n}/{self.total}{unit} {100 * self.n // max(self.total, 1)}%"
        else:
            head = f"{self.desc}: {self.n}{unit}" if self.n else self.desc
        note = f" [{self.text}]" if self.text else ""
        return f"{head}{note} {_seconds(el)}"

    def _draw(self, now: float, final: bool = False) -> None:
        lock = self._draw_lock
        if lock is None:
            return
        with lock:
            if not final and not self._root:
                return  # closed meanwhile
            first = not self._shown
            self._shown = True
            if first:
                self._notebook = self._file is None and _in_notebook()
            text = self.line(now)
            try:
                if self._notebook:
                    self._draw_notebook(text, first)
                else:
                    f = self._file if self._file is not None else sys.stderr
                    f.write("\r" + text.ljust(79) + ("\n" if final else ""))
                    f.flush()
            except Exception:  # a closed stream, a notebook gone: stop showing, never fail the work
                self._root = False

    def _draw_notebook(self, text: str, first: bool) -> None:
        import html

        from IPython.display import HTML, display

        bar = (f'<progress value="{self.n}" max="{self.total}" style="width:16em"></progress> '
               if self.total else "")
        out = HTML(f'<div class="pyir-progress">{bar}<code>{html.escape(text)}</code></div>')
        if first:
            self._handle = display(out, display_id=True)
        elif self._handle is not None:
            self._handle.update(out)

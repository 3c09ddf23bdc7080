"""Keep ``examples/tour.ipynb`` in sync with its source, ``examples/tour.py`` (``# %%`` cells).

    python tools/sync_tour.py            # rewrite the notebook's cells from the source (no outputs)
    python tools/sync_tour.py --execute  # ... and execute it (nbclient), storing the outputs
    python tools/sync_tour.py --check    # exit 1 if the notebook's cells differ from the source

The first cell of the notebook is the source's docstring as Markdown; every ``# %% Title``
cell becomes a Markdown title cell and a code cell.  ``tests/test_notebook.py`` checks the
sync and executes the notebook.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "tour.py"
NOTEBOOK = ROOT / "examples" / "tour.ipynb"


def cells(source: str) -> list[tuple[str, str]]:
    """``(kind, text)`` cells of a ``# %%`` script: its docstring as Markdown, then per cell a
    Markdown title (the text after ``# %%``) and the code."""
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    out: list[tuple[str, str]] = [("markdown", doc)] if doc else []
    lines = source.splitlines()
    start = tree.body[0].end_lineno if doc else 0  # type: ignore[union-attr]
    title, code = None, []
    for line in [*lines[start or 0:], "# %% <end>"]:
        if line.startswith("# %%"):
            if title is not None or any(c.strip() for c in code):
                if title:
                    out.append(("markdown", "## " + title))
                text = "\n".join(code).strip("\n")
                if text:
                    out.append(("code", text))
            title, code = line[4:].strip(), []
        else:
            code.append(line)
    return out


def build(source: str):  # -> nbformat.NotebookNode
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    for kind, text in cells(source):
        nb.cells.append(nbformat.v4.new_markdown_cell(text) if kind == "markdown"
                        else nbformat.v4.new_code_cell(text))
    for i, c in enumerate(nb.cells):
        c["id"] = f"cell-{i}"
    return nb


def execute(nb, cwd: Path, timeout: int = 600):
    from nbclient import NotebookClient

    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(cwd)}}
                   ).execute()
    return nb


def same_cells(a, b) -> bool:
    return [(c.cell_type, c.source) for c in a.cells] == [(c.cell_type, c.source) for c in b.cells]


def main(argv: list[str]) -> int:
    import nbformat

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--execute", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    nb = build(SOURCE.read_text(encoding="utf-8"))
    if a.check:
        ok = NOTEBOOK.exists() and same_cells(nbformat.read(NOTEBOOK, as_version=4), nb)
        print("in sync" if ok else f"{NOTEBOOK} differs from {SOURCE}: run python tools/sync_tour.py")
        return 0 if ok else 1
    if a.execute:
        execute(nb, SOURCE.parent)
    nbformat.write(nb, NOTEBOOK)
    print(f"wrote {NOTEBOOK} ({NOTEBOOK.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

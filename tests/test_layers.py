"""The package's folders are its layers: every import (at module level and inside functions)
goes to the same layer or a lower one, and the import graph has no cycle (issue 11 item 1).

Layers, lowest first (README, "Design notes: layers"):

    errors, progress -> ir -> op -> text -> analysis -> rewrite -> serialize -> transform
           -> frontend, display, viz, report, summaries, testing, store, parallel
           -> pyir (the package's front door)

The few conveniences of core objects that need a higher layer (``str(expr)``,
``expr.checked_type``, ``mod.astext()``, pickling, ...) are filled in by that layer
through ``pyir.ir.hooks`` and ``copyreg``, so they are not imports.
"""

from __future__ import annotations

import ast
import pathlib

import pyir

ROOT = pathlib.Path(pyir.__file__).parent
LAYERS = ["errors|progress", "ir", "op", "text", "analysis", "rewrite", "serialize", "transform",
          "frontend|display|viz|report|summaries|testing|store|parallel"]
LAYER_OF = {name: i for i, group in enumerate(LAYERS) for name in group.split("|")}
TOP = len(LAYERS)  # pyir/__init__.py


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = ("pyir", *p.relative_to(ROOT).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_pkg else parts)
        out[name] = p
    return out


MODULES = _modules()


def _layer(mod: str) -> int:
    parts = mod.split(".")
    if len(parts) == 1:
        return TOP
    return LAYER_OF[parts[1]]


def _imports(mod: str, path: pathlib.Path) -> list[tuple[str, int]]:
    """(imported pyir module, line) for every import statement of ``mod``, wherever it is."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not (target == "pyir" or target.startswith("pyir.")):
                continue
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            if subs:  # `from . import x`: an import of module x (and of its package's __init__
                out.extend((s, node.lineno) for s in subs)  # only if the package is not an ancestor)
                if len(subs) == len(node.names) or mod.startswith(target + "."):
                    continue
            out.append((target, node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "pyir" or a.name.startswith("pyir."):
                    out.append((a.name, node.lineno))
    # importing a subpackage's own ancestors' __init__ happens implicitly; it is not an edge
    return [(t, ln) for t, ln in out if t != mod and not mod.startswith(t + ".")]


GRAPH = {m: _imports(m, p) for m, p in MODULES.items()}


def test_every_module_is_in_a_layer() -> None:
    unknown = [m for m in MODULES if len(m.split(".")) > 1 and m.split(".")[1] not in LAYER_OF]
    assert not unknown, f"modules outside every layer (add them to LAYERS and the README): {unknown}"


def test_no_upward_import() -> None:
    def name(i: int) -> str:
        return LAYERS[i] if i < TOP else "pyir"

    bad = [f"{MODULES[m].relative_to(ROOT.parent)}:{ln} imports {t} (layer {name(_layer(t))} above "
           f"{name(_layer(m))})" for m, edges in GRAPH.items() for t, ln in edges if _layer(t) > _layer(m)]
    assert not bad, "upward imports:\n" + "\n".join(sorted(bad))


def test_no_import_cycle() -> None:
    edges = {m: sorted({t for t, _ in GRAPH[m] if t in MODULES}) for m in MODULES}
    state: dict[str, int] = {}
    for start in sorted(MODULES):
        if start in state:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            m, i = stack.pop()
            if i == 0:
                state[m] = 1
                path.append(m)
            if i < len(edges[m]):
                stack.append((m, i + 1))
                t = edges[m][i]
                if state.get(t) == 1:
                    cyc = path[path.index(t):] + [t]
                    raise AssertionError("import cycle: " + " -> ".join(cyc))
                if t not in state:
                    stack.append((t, 0))
            else:
                state[m] = 2
                path.pop()


def test_hooks_are_filled() -> None:
    """Every upward convenience is registered once pyir is imported."""
    from pyir.ir import hooks

    for name in hooks.PROVIDERS:
        assert getattr(hooks, name).__name__ != "missing" or False, name
        assert getattr(hooks, name).__module__ == hooks.PROVIDERS[name], name

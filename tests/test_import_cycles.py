"""No import cycle anywhere in `workbench/`, counting imports inside functions.

The graph is read from the source (the AST of every module under `workbench/`), never by importing
it, so an import placed inside a function to dodge a cycle at import time is still an edge:

- `import a.b.c` and `from a.b import c` are edges to the module they name: `from pkg import name`
  goes to the submodule `pkg.name` when there is one, else to `pkg` (the name is defined there);
  relative imports are resolved against the importing module's package.
- Module-level imports, imports inside functions and classes, and imports under `if TYPE_CHECKING:`
  all count: each is a dependency of one module on another, and a cycle among them means two rooms
  that each need the other.
- A package's `__init__` is a module like any other: its own imports are its edges (a re-export
  `from pkg.sub import X` in `pkg/__init__.py` is an edge pkg → pkg.sub). Importing a submodule
  `pkg.sub` runs `pkg/__init__` first, but that is Python's loading order, not a dependency of
  `pkg.sub` on `pkg`, so no implicit edge sub → package is added; `from pkg import X` where X is
  defined (or re-exported) in `pkg/__init__` is an edge to `pkg`, and so counts the re-export.

Strongly connected components (Tarjan) of more than one module, or a module importing itself, are
cycles; the failure names each with one import line per edge, so the place to cut is in view.
"""

from __future__ import annotations

import ast
from pathlib import Path

import workbench

ROOT = Path(workbench.__file__).resolve().parent
PACKAGE = "workbench"


def module_names(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module under `root`: dotted name → file (a package is named by its `__init__`)."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join([package, *parts])] = path
    return modules


def _resolve_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def edges_of(module: str, path: Path, modules: dict[str, Path]) -> list[tuple[str, int, str]]:
    """(target module, line, import text) for every import of a workbench module in `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(tree):  # every import, at module level or inside a function or class
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _known(alias.name, modules)
                if target:
                    found.append((target, node.lineno, f"import {alias.name}"))
        elif isinstance(node, ast.ImportFrom):
            base = (
                _resolve_relative(module, is_package, node.level, node.module)
                if node.level
                else node.module or ""
            )
            for alias in node.names:
                target = (
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _known(base, modules)
                )
                if target:
                    found.append((target, node.lineno, f"from {base} import {alias.name}"))
    return found


def _known(name: str, modules: dict[str, Path]) -> str | None:
    """The workbench module `name` refers to (its longest known prefix: `import a.b.c` loads a.b.c)."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, dict[str, tuple[int, str]]]:
    """module → {imported module: (line, text) of its first import of it}."""
    modules = module_names(root, package)
    graph: dict[str, dict[str, tuple[int, str]]] = {name: {} for name in modules}
    for name, path in modules.items():
        for target, line, text in edges_of(name, path, modules):
            graph[name].setdefault(target, (line, text))
    return graph


def cycles(graph: dict[str, dict[str, tuple[int, str]]]) -> list[list[str]]:
    """The strongly connected components that are cycles (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))
    return sorted(found)


def describe(component: list[str], graph: dict[str, dict[str, tuple[int, str]]]) -> str:
    members = set(component)
    lines = [f"cycle among {', '.join(component)}:"]
    for module in component:
        for target, (line, text) in sorted(graph[module].items()):
            if target in members:
                lines.append(f"  {module} line {line}: {text}")
    return "\n".join(lines)


def test_no_import_cycle_in_workbench():
    graph = import_graph()
    assert len(graph) > 100  # the whole tree was read, not an empty folder
    found = cycles(graph)
    assert not found, "\n".join(describe(c, graph) for c in found)


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    """The finder itself: a cycle closed only by an import inside a function, a relative import
    and a `from pkg import submodule` are all edges; a re-export from `__init__` is an edge to it."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg.sub.c import C\n")
    (pkg / "a.py").write_text("import pkg.b\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("C = 1\n")
    (pkg / "sub" / "d.py").write_text("from pkg import C\n")
    (pkg / "e.py").write_text("from pkg.sub import d\n")
    graph = import_graph(pkg, "pkg")
    assert graph["pkg.b"] == {"pkg.a": (2, "from pkg import a")}
    assert graph["pkg.sub.d"] == {"pkg": (1, "from pkg import C")}
    assert graph["pkg.e"] == {"pkg.sub.d": (1, "from pkg.sub import d")}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]
    assert "pkg.b line 2: from pkg import a" in describe(["pkg.a", "pkg.b"], graph)
    (pkg / "sub" / "c.py").write_text("C = 1\n\n\ndef g():\n    import pkg.sub.d\n")
    # pkg.sub.c → pkg.sub.d → pkg (its re-export of C) → pkg.sub.c: the re-export closes a cycle.
    assert cycles(import_graph(pkg, "pkg")) == [["pkg", "pkg.sub.c", "pkg.sub.d"], ["pkg.a", "pkg.b"]]

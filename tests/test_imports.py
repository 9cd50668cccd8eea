"""No import circle between gridlab's modules: two modules that import each other (even under TYPE_CHECKING, or
inside a function) share a piece that belongs to one of them, or to a third. The graph is read from the source
with `ast`, so nothing is imported to check it."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gridlab"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The gridlab modules one module names in its imports, at any depth: `from gridlab.a import b` names the
    module `gridlab.a.b` where there is one, else `gridlab.a`."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            named |= {alias.name for alias in node.names if alias.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module in known:
            for alias in node.names:
                named.add(f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module)
    return named


def import_graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imports_of(path, set(found)) - {name} for name, path in found.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of two or more modules (Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(groups)


def test_the_circle_finder_finds_a_circle_of_three():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_type_checking_and_function_level_imports(tmp_path: Path):
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gridlab.data.spec import DatasetSpec\n"
        "def f():\n    import gridlab.store.layout\n    from gridlab.data import spec\n"
    )
    known = set(modules())
    assert imports_of(module, known) == {"gridlab.data.spec", "gridlab.store.layout"}


def test_no_import_circle_between_gridlab_modules():
    assert circles(import_graph()) == []

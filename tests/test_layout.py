"""The core's layout: few entries at the top, sub-packages that do not import each other in a
circle (``TYPE_CHECKING`` imports included), and the old import paths still working."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import tickwork

CORE = Path(tickwork.__file__).resolve().parent
#: The public face at the top; everything else lives in a sub-package with one concern.
TOP_LEVEL = {
    "__init__.py",
    "__main__.py",
    "py.typed",
    "abc",
    "errors.py",
    "structures.py",
    "admin",
    "cli",
    "config",
    "engine",
    "node",
    "plugin",
    "scheduling",
    "sql",
    "testing",
}


def module_name(path: Path) -> str:
    parts = ["tickwork", *path.relative_to(CORE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The core modules ``path`` imports, at run time or for types only."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            # `from pkg import module` imports the module; `from module import name` the module.
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def subpackage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or ((CORE / parts[-1]).is_dir() and len(parts) == 2) else module


def import_graph() -> dict[str, set[str]]:
    files = [p for p in CORE.rglob("*.py") if "__pycache__" not in p.parts]
    modules = {module_name(p) for p in files}
    return {module_name(p): imports_of(p, modules) for p in files}


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    result: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            result.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return result


def test_top_level_holds_the_public_face_and_the_sub_packages() -> None:
    entries = {p.name for p in CORE.iterdir() if p.name != "__pycache__"}
    assert entries == TOP_LEVEL
    assert len(entries) <= 15


def test_no_import_cycle_spans_two_sub_packages() -> None:
    graph = import_graph()
    # The root package re-exports the public API from every sub-package; nothing imports it back
    # but for its version, so it is left out of the graph.
    graph.pop("tickwork", None)
    for deps in graph.values():
        deps.discard("tickwork")
    spanning = [sorted(c) for c in strongly_connected(graph) if len(c) > 1 and len({subpackage(m) for m in c}) > 1]
    assert spanning == []


def test_the_graph_sees_type_checking_imports() -> None:
    """The walk above reads imports under ``if TYPE_CHECKING:`` too (a cycle through type hints
    is still a cycle for a reader)."""
    graph = import_graph()
    assert "tickwork.abc" in graph["tickwork.plugin.specs"]


@pytest.mark.parametrize("old", sorted(tickwork.MOVED_MODULES))
def test_old_import_paths_still_work(old: str) -> None:
    module = importlib.import_module(old)
    assert module is importlib.import_module(tickwork.MOVED_MODULES[old])
    assert module.__spec__ is not None and module.__spec__.name == tickwork.MOVED_MODULES[old]


def subpackage_graph() -> dict[str, set[str]]:
    """Which sub-packages (and top-level modules) import which, from every module's imports
    (function-level and ``TYPE_CHECKING`` ones included); the root package left out as above."""
    graph: dict[str, set[str]] = {}
    for module, deps in import_graph().items():
        if module == "tickwork":
            continue
        source = subpackage(module)
        targets = graph.setdefault(source, set())
        targets.update(subpackage(d) for d in deps if d != "tickwork" and subpackage(d) != source)
    return graph


def test_no_import_cycle_among_sub_packages() -> None:
    """Sub-packages form layers (docs/architecture.md, "Layers"): no sub-package reaches itself again
    through others, even when no single chain of modules closes the circle."""
    cycles = [sorted(c) for c in strongly_connected(subpackage_graph()) if len(c) > 1]
    assert cycles == []


def test_the_plugin_kit_does_not_import_the_engine_or_the_node() -> None:
    """What a plugin imports (``tickwork.plugin``) sits below the core that uses it."""
    assert subpackage_graph()["plugin"] & {"engine", "node", "scheduling", "sql", "admin", "cli"} == set()


def test_the_sub_package_graph_sees_function_level_imports() -> None:
    """An import inside a function counts (``scheduling.declare`` imports its triggers late)."""
    assert "tickwork.scheduling.triggers" in import_graph()["tickwork.scheduling.declare"]

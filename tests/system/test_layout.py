"""The layout: the core's few entries at the top, sub-packages that do not import each other in a
circle (``TYPE_CHECKING`` imports included), the old import paths still working; and the tests'
folders mirroring the code (docs/testing.md#where-the-suites-tests-are)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import tickwork
from tests.support.paths import REPO

CORE = Path(tickwork.__file__).resolve().parent
TESTS = REPO / "tests"
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


# -- the tests' folders ---------------------------------------------------------------------------

#: Folders that name no package of the code: shared support (no tests), many packages at once,
#: and the root package's own modules.
NOT_A_SUB_PACKAGE = {"support", "system", "tickwork"}
#: Files a test folder may hold besides its tests and support modules: golden data beside the test
#: that reads it.
DATA_DIRS = {"data"}


def folders(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_dir() and p.name != "__pycache__" and p.name not in DATA_DIRS)


def misplaced(tests: Path, core: Path, plugins: Path) -> list[str]:
    """What breaks the rule of docs/testing.md in the tests tree ``tests``: a test file at its top,
    a folder that names no sub-package of ``core`` (nor a plugin of ``plugins`` under ``plugins/``),
    a folder that is not a package, or a test in ``support/``."""
    sub_packages = {p.name for p in core.iterdir() if (p / "__init__.py").is_file()}
    plugin_names = {p.name.removeprefix("tickwork_") for p in plugins.iterdir() if (p / "__init__.py").is_file()}
    found = [f"{p.name}: a test file at the top of tests/" for p in sorted(tests.glob("test_*.py"))]
    for folder in folders(tests):
        parts = folder.relative_to(tests).parts
        where = "/".join(parts)
        if not (folder / "__init__.py").is_file():
            found.append(f"{where}: not a package (no __init__.py)")
        if parts[0] == "plugins":
            if len(parts) > 1 and parts[1] not in plugin_names:
                found.append(f"{where}: names no plugin (plugins/tickwork_{parts[1]})")
        elif parts[0] == "support":
            found.extend(f"{where}/{p.name}: a test in support/" for p in sorted(folder.glob("test_*.py")))
        elif parts[0] not in sub_packages | NOT_A_SUB_PACKAGE:
            found.append(f"{where}: names no sub-package (src/tickwork/{parts[0]})")
    return found


def test_the_tests_mirror_the_packages() -> None:
    assert misplaced(TESTS, CORE, REPO / "plugins") == []


def test_the_rule_catches_each_kind_of_misplaced_file(tmp_path: Path) -> None:
    """The check above is only as good as its failures: each of them, on a tree made to break it."""
    core, plugins, tests = tmp_path / "core", tmp_path / "plugins", tmp_path / "tests"
    for package in (core / "engine", plugins / "tickwork_web"):
        package.mkdir(parents=True)
        (package / "__init__.py").touch()
    for folder in ("engine", "plugins", "plugins/web", "support", "system", "misc", "plugins/nosuch", "engine/data"):
        (tests / folder).mkdir(parents=True, exist_ok=True)
        if folder != "engine/data":
            (tests / folder / "__init__.py").touch()
    (tests / "cli").mkdir()  # no __init__.py, and no sub-package either
    for test in ("test_loose.py", "engine/test_engine.py", "support/test_helper.py", "plugins/web/test_web.py"):
        (tests / test).touch()
    assert misplaced(tests, core, plugins) == [
        "test_loose.py: a test file at the top of tests/",
        "cli: not a package (no __init__.py)",
        "cli: names no sub-package (src/tickwork/cli)",
        "misc: names no sub-package (src/tickwork/misc)",
        "plugins/nosuch: names no plugin (plugins/tickwork_nosuch)",
        "support/test_helper.py: a test in support/",
    ]


def test_no_test_module_imports_another() -> None:
    """What two test modules share is in tests/support/ (importing a test module runs its
    module-level code and hides where a helper lives)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            else:
                continue
            found += [
                f"{path.relative_to(TESTS)}: {m}"
                for m in modules
                if m.startswith("tests.") and m.rpartition(".")[2].startswith("test_")
            ]
    assert found == []

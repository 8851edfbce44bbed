"""Every hook in tickwork/plugin/specs.py is documented the way pytest's hookspec.py documents
its hooks: a ``:param name:`` line for each parameter (and none for a parameter that is gone),
from which thread it is called and what its return value means; docs/plugins.md lists each hook
with its parameters. A new hook is held to the same."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tickwork.plugin import specs

SPECS = Path(specs.__file__)
PLUGINS_DOC = REPO / "docs" / "plugins.md"


def hookspecs() -> list[ast.FunctionDef]:
    tree = ast.parse(SPECS.read_text(encoding="utf-8"))
    return [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any(isinstance(d, ast.Name) and d.id == "hookspec" for d in node.decorator_list)
    ]


def parameters(hook: ast.FunctionDef) -> list[str]:
    return [a.arg for a in [*hook.args.posonlyargs, *hook.args.args, *hook.args.kwonlyargs]]


def test_specs_py_declares_the_hooks() -> None:
    names = [hook.name for hook in hookspecs()]
    assert "tickwork_register_stores" in names and "tickwork_runs_finished" in names
    assert all(name.startswith("tickwork_") for name in names)


@pytest.mark.parametrize("hook", hookspecs(), ids=lambda hook: hook.name)
def test_every_hook_parameter_has_its_param_line(hook: ast.FunctionDef) -> None:
    doc = ast.get_docstring(hook) or ""
    documented = re.findall(r"^\s*:param (\w+):", doc, flags=re.MULTILINE)
    assert sorted(documented) == sorted(parameters(hook)), f"{hook.name}: :param lines {documented}"


@pytest.mark.parametrize("hook", hookspecs(), ids=lambda hook: hook.name)
def test_every_hook_says_its_thread_and_its_return_value(hook: ast.FunctionDef) -> None:
    doc = " ".join((ast.get_docstring(hook) or "").split())
    assert "thread" in doc, f"{hook.name}: from which thread is it called?"
    assert "return value" in doc, f"{hook.name}: what does its return value mean?"


@pytest.mark.parametrize("hook", hookspecs(), ids=lambda hook: hook.name)
def test_docs_plugins_md_lists_every_hook_with_its_parameters(hook: ast.FunctionDef) -> None:
    signature = f"`{hook.name}({', '.join(parameters(hook))})`"
    assert signature in PLUGINS_DOC.read_text(encoding="utf-8"), f"docs/plugins.md lacks {signature}"

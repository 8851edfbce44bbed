"""The built wheel and sdist install and run outside the checkout.

An editable install finds sub-packages by directory, so it hides packaging mistakes: a wheel once
shipped without ``tickwork.engine`` and could not be imported. Here the wheel and the sdist are
built (``python -m build``), checked (``twine check``), and each is installed into a fresh virtual
environment in a temporary directory, where every module of the core and of every built-in plugin
is imported, ``tickwork --version`` runs, and the example node runs with its jobs firing. Nothing
from the checkout is on ``sys.path`` there: the commands run from the temporary directory with a
clean environment, and the test asserts where ``tickwork`` was imported from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import tickwork
from tests.support.paths import REPO as ROOT

#: The extras whose packages the plugins' modules import (the ``bench`` extra's matplotlib and
#: py-spy are imported only when a chart or a profile is asked for).
EXTRAS = "postgres,mysql,http,metrics,web,testing,celery,rq,dramatiq,otel"
#: Modules that run something when imported: ``python -m`` entry points and Alembic's env script.
NOT_IMPORTABLE = ("__main__", "tickwork._migrations.env")

IMPORT_ALL = r"""
import importlib, pkgutil, sys
from importlib.metadata import distribution

import tickwork

skip = sys.argv[1:]
dist = distribution("tickwork")
tops = {n.strip() for n in (dist.read_text("top_level.txt") or "").split()}
if not tops:
    tops = {str(f).split("/")[0] for f in dist.files if str(f).endswith("/__init__.py")}
imported = []
for top in sorted(tops):
    package = importlib.import_module(top)
    imported.append(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        if any(info.name == s or info.name.endswith("." + s) for s in skip):
            continue
        importlib.import_module(info.name)
        imported.append(info.name)
print(tickwork.__file__)
print(len(imported))
print(" ".join(imported))
"""


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, and the wheel built from it (``python -m build``: a file missing from the sdist
    fails the wheel too, and nothing is built inside the checkout)."""
    out = tmp_path_factory.mktemp("dist")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    twine = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, out.iterdir())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert twine.returncode == 0, twine.stdout + twine.stderr
    return out


def _clean_env() -> dict[str, str]:
    """The environment without anything that could point Python back at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "TICKWORK"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _venv_with(artifact: Path, where: Path) -> Path:
    """A fresh virtual environment under ``where`` with ``artifact`` and the extras installed."""
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", f"tickwork[{EXTRAS}] @ {artifact.as_uri()}"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=where,
        env=_clean_env(),
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    return venv


def test_wheel_carries_types_templates_and_migrations(dist_dir: Path) -> None:
    (wheel,) = dist_dir.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = [
        "tickwork/py.typed",
        "tickwork/engine/__init__.py",
        "tickwork/_migrations/env.py",
        "tickwork/_migrations/script.py.mako",
        "tickwork/_migrations/versions/0001_initial.py",
        "tickwork_web/templates/base.html",
        "tickwork_web/static/tickwork.css",
        "tickwork_bench/plugin.py",
    ]
    assert [n for n in expected if n not in names] == []
    # Every package of the checkout is in the wheel: none is left out of discovery.
    packages = {
        str(p.parent.relative_to(base)).replace(os.sep, "/")
        for base in (ROOT / "src", ROOT / "plugins")
        for p in base.rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert sorted(p for p in packages if f"{p}/__init__.py" not in names) == []
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["whl", "tar.gz"])
def test_installed_package_imports_and_runs_outside_the_checkout(dist_dir: Path, tmp_path: Path, kind: str) -> None:
    (artifact,) = dist_dir.glob(f"*.{kind}")
    venv = _venv_with(artifact, tmp_path)
    python = str(venv / "bin" / "python")
    env = _clean_env()

    imported = subprocess.run(
        [python, "-c", IMPORT_ALL, *NOT_IMPORTABLE], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
    location, count, names = imported.stdout.splitlines()[:3]
    assert Path(location).is_relative_to(venv), f"tickwork was imported from {location}, not the new environment"
    modules = names.split()
    for name in ("tickwork.engine.loop", "tickwork.plugin.specs", "tickwork_sqlite.plugin", "tickwork_web.application"):
        assert name in modules
    assert int(count) > 150

    version = subprocess.run(
        [str(venv / "bin" / "tickwork"), "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env
    )
    assert version.returncode == 0, version.stderr
    assert tickwork.__version__ in version.stdout

    # The README's first command, with the installed package: the example node on SQLite.
    shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns("*.db*", "__pycache__"))
    run = subprocess.run(
        [str(venv / "bin" / "tickwork"), "run", "--config", "examples/tickwork.toml", "--for", "6"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    assert "demo.heartbeat: every 5 seconds" in run.stdout, run.stdout + run.stderr
    assert "ModuleNotFoundError" not in run.stderr

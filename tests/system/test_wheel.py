"""The built wheel and sdist install and run outside the checkout.

An editable install finds sub-packages by directory, so it hides packaging mistakes: a wheel once
shipped without ``tickwork.engine`` and could not be imported. Here the wheel and the sdist are
built once per session (``python -m build``), checked (``twine check``), and installed into a
fresh virtual environment in a temporary directory, the wheel first and then the sdist over it;
after each, every module of the core and of every built-in plugin is imported, ``tickwork
--version`` runs, and the example node runs with its jobs firing. Nothing
from the checkout is on ``sys.path`` there: the commands run from the temporary directory with a
clean environment, and the test asserts where ``tickwork`` was imported from.
"""

from __future__ import annotations

import fcntl
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


def _build(out: Path) -> None:
    """The sdist, and the wheel built from it (``python -m build``: a file missing from the sdist
    fails the wheel too, and nothing is built inside the checkout), checked by twine."""
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


@pytest.fixture(scope="session")
def dist_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built artifacts, built once per test session: xdist's workers share the session's base
    directory, and the first to take the lock builds (a build costs ~15 s)."""
    shared = tmp_path_factory.getbasetemp().parent
    out = shared / "dist"
    with open(shared / "dist.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / "built").exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            _build(out)
            (out / "built").touch()
    return out


def _clean_env() -> dict[str, str]:
    """The environment without anything that could point Python back at the checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "TICKWORK"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _pip_install(venv: Path, where: Path, *args: str) -> None:
    """``pip install`` into ``venv``, run by the suite's own pip (``--python``): the new
    environment needs no pip of its own. ``--no-compile``: the imports below compile what they use."""
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q", "--no-compile", *args],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=where,
        env=_clean_env(),
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]


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


def _check_installed(venv: Path, where: Path, kind: str) -> None:
    """Every module imports from ``venv``, ``tickwork --version`` runs, and the README's first
    command runs the example node with its jobs firing."""
    python = str(venv / "bin" / "python")
    env = _clean_env()

    imported = subprocess.run(
        [python, "-c", IMPORT_ALL, *NOT_IMPORTABLE], capture_output=True, text=True, timeout=300, cwd=where, env=env
    )
    assert imported.returncode == 0, f"{kind}: " + imported.stderr[-3000:]
    location, count, names = imported.stdout.splitlines()[:3]
    assert Path(location).is_relative_to(venv), f"{kind}: tickwork was imported from {location}, not the new venv"
    modules = names.split()
    for name in ("tickwork.engine.loop", "tickwork.plugin.specs", "tickwork_sqlite.plugin", "tickwork_web.application"):
        assert name in modules, kind
    assert int(count) > 150, kind

    version = subprocess.run(
        [str(venv / "bin" / "tickwork"), "--version"], capture_output=True, text=True, timeout=60, cwd=where, env=env
    )
    assert version.returncode == 0, f"{kind}: " + version.stderr
    assert tickwork.__version__ in version.stdout, kind

    # The README's first command, with the installed package: the example node on SQLite.
    work = where / kind
    shutil.copytree(ROOT / "examples", work / "examples", ignore=shutil.ignore_patterns("*.db*", "__pycache__"))
    run = subprocess.run(
        [str(venv / "bin" / "tickwork"), "run", "--config", "examples/tickwork.toml", "--for", "6"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=work,
        env=env,
    )
    assert run.returncode == 0, f"{kind}: " + run.stdout[-2000:] + run.stderr[-3000:]
    assert "demo.heartbeat: every 5 seconds" in run.stdout, f"{kind}: " + run.stdout + run.stderr
    assert "ModuleNotFoundError" not in run.stderr, kind


@pytest.mark.slow
def test_installed_wheel_and_sdist_import_and_run_outside_the_checkout(dist_dir: Path, tmp_path: Path) -> None:
    """The wheel, installed with every extra the plugins import into a fresh environment, then the
    sdist installed over it (``--no-deps --force-reinstall``: pip builds it again from source, and
    the dependencies the wheel brought are already there, so they are installed once)."""
    (wheel,) = dist_dir.glob("*.whl")
    (sdist,) = dist_dir.glob("*.tar.gz")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)

    _pip_install(venv, tmp_path, f"tickwork[{EXTRAS}] @ {wheel.as_uri()}")
    _check_installed(venv, tmp_path, "whl")

    _pip_install(venv, tmp_path, "--no-deps", "--force-reinstall", f"tickwork @ {sdist.as_uri()}")
    _check_installed(venv, tmp_path, "tar.gz")

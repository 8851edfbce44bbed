"""docs/celery.md's "Step by step", run word for word from an empty directory: its files are
written as the guide shows them (a code block whose first line is ``# PATH``), its shell lines
run as subprocesses in order — ``python3 -m venv``, ``pip install`` from a copy of this checkout,
``tickwork db upgrade``, the Celery worker WITH ``install(app)``, the import, ``tickwork run`` —
and the guide ends with fires running on the worker, reported to tickwork's history.

Three things are substituted, each named here: the checkout's place (``/path/to/tickwork``) is a
copy of this checkout (so that the build leaves the checkout alone), the broker's URL is the
suite's RabbitMQ, and ``. .venv/bin/activate`` is applied to the environment of the lines after
it (each line is a process of its own). The long-running lines (``celery ... worker``,
``tickwork run``) start in the background; the lines after ``tickwork run`` wait until the
worker's first fires are recorded ``succeeded``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tickwork.structures import RunStatus

pytestmark = pytest.mark.slow

GUIDE = REPO / "docs" / "celery.md"
CHECKOUT = "/path/to/tickwork"
BROKER = "amqp://guest:guest@localhost:5672//"
BACKGROUND = (("celery", "-A"), ("tickwork", "run"))
WAIT_S = 120  # guard against a hung process; not a timing assertion
BLOCK = re.compile(r"^[ \t]*```(\w+)\n(.*?)^[ \t]*```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Step:
    """A file to write (``path`` and its text) or a shell line to run (``line``)."""

    path: str | None = None
    text: str = ""
    line: str | None = None


def steps() -> list[Step]:
    """The guide's "Step by step" section as files and shell lines, in order."""
    document = GUIDE.read_text(encoding="utf-8")
    start = document.index("## Step by step")
    section = document[start : document.index("\n## ", start + 1)]
    found: list[Step] = []
    for block in BLOCK.finditer(section):
        language, body = block.group(1), textwrap.dedent(block.group(2))
        if language == "bash":
            lines = [line.strip() for line in body.splitlines()]
            found += [Step(line=line) for line in lines if line and not line.startswith("#")]
        elif language in ("python", "toml"):
            first = body.splitlines()[0]
            assert first.startswith("# "), f"a {language} block of the guide names no file: {first!r}"
            found.append(Step(path=first[2:].strip(), text=body))
    return found


def test_the_guide_names_every_step() -> None:
    lines = [s.line for s in steps() if s.line]
    files = [s.path for s in steps() if s.path]
    assert f"pip install '{CHECKOUT}[celery]'" in lines
    assert "tickwork db upgrade" in lines and "tickwork run" in lines
    assert "tickwork import celery-beat proj.celery:app" in lines
    assert any(line.startswith("celery -A proj worker") for line in lines)
    assert files == ["proj/__init__.py", "proj/celery.py", "proj/tasks.py", "tickwork.toml"]
    celery_py = next(s.text for s in steps() if s.path == "proj/celery.py")
    assert "install(app)" in celery_py and BROKER in celery_py


def copy_of_checkout(where: Path) -> Path:
    """The checkout's files (tracked, and new ones not ignored), without its build leftovers."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (where / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, where / name)
    return where


def clean_env() -> dict[str, str]:
    """The environment without anything pointing Python back at this checkout or its venv."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "TICKWORK"))}
    env["PYTHONNOUSERSITE"] = "1"
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if "/.venv/" not in p + "/")
    return env


@pytest.fixture
def background() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in reversed(started):
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def succeeded(directory: Path, env: dict[str, str]) -> int:
    """Runs of ``report`` the worker reported ``succeeded``, as ``tickwork history --json`` says."""
    done = subprocess.run(
        ["tickwork", "history", "--json", "--schedule", "report", "--status", RunStatus.SUCCEEDED.value],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return sum(1 for line in done.stdout.splitlines() if line.strip().startswith("{"))


def test_the_guide_runs_word_for_word_to_fires_on_a_celery_worker(
    amqp_url: str, tmp_path: Path, background: list[subprocess.Popen[bytes]]
) -> None:
    checkout = copy_of_checkout(tmp_path / "tickwork-checkout")
    directory = tmp_path / "project"
    directory.mkdir()
    env = clean_env()
    logs = tmp_path / "logs"
    logs.mkdir()
    node_started = False
    for number, step in enumerate(steps()):
        if step.path is not None:
            target = directory / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text.replace(BROKER, amqp_url), encoding="utf-8")
            continue
        assert step.line is not None
        if step.line == ". .venv/bin/activate":
            env["VIRTUAL_ENV"] = str(directory / ".venv")
            env["PATH"] = f"{directory / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
            continue
        if node_started:  # the lines after `tickwork run` look at what the node and worker did
            deadline = time.monotonic() + WAIT_S
            while succeeded(directory, env) < 2:
                assert time.monotonic() < deadline, "no fire ran on the worker:\n" + tails(logs)
                time.sleep(1)
        line = step.line.replace(CHECKOUT, str(checkout))
        words = tuple(shlex.split(line)[:2])
        if words in BACKGROUND:
            with (logs / f"{number:02d}-{words[0]}.log").open("wb") as out:
                background.append(
                    subprocess.Popen(
                        ["bash", "-c", line], cwd=directory, env=env, stdout=out, stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )  # fmt: skip
            node_started = node_started or words == ("tickwork", "run")
            continue
        done = subprocess.run(["bash", "-c", line], cwd=directory, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{line}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}\n{tails(logs)}"
        if line == "tickwork import celery-beat proj.celery:app":
            assert "imported 2 schedules from proj.celery:app" in done.stdout + done.stderr
    assert node_started
    # Ended with fires running on the worker: it printed them, tickwork recorded them succeeded.
    assert succeeded(directory, env) >= 2
    worker_log = next(logs.glob("*-celery.log")).read_text(errors="replace")
    assert "report 16" in worker_log, worker_log[-3000:]
    installed = subprocess.run(
        ["python", "-c", "import tickwork; print(tickwork.__file__)"], cwd=tmp_path, env=env,
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert Path(installed).is_relative_to(directory / ".venv"), installed


def tails(logs: Path) -> str:
    return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(logs.glob("*.log")))

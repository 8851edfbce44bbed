"""Every ``tickwork ...`` line of README.md and of the shell code blocks in docs/*.md (and each
``run: tickwork ...`` step of their YAML blocks: a CI job's) runs, in
document order, in one temporary directory holding a copy of ``examples/`` with
``TICKWORK_CONFIG=examples/tickwork.toml``; none may exit 2 (invalid usage) or print a traceback.
Each command runs once: one named by several documents, or shown with its output in a transcript
(checked line by line below), is not run again.

A ``console`` block is a transcript: each ``$ tickwork ...`` line followed by the lines it prints
(stdout, then stderr). Those lines are checked exactly, so a documented output cannot go stale;
such commands must not depend on the clock or the database (``next --after``, a refused add).

Two adjustments keep the run short, and both leave the documented arguments to be parsed:
``tickwork run`` gets ``--for 1`` (a node runs until stopped), and ``tickwork bench`` gets
``--help`` after its arguments (benchmarks are measured alone, not in the test suite).
The examples name ``myapp.tasks:backup`` and ``myapp.jobs:payroll``; the directory holds them.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO
from tickwork.cli.main import EXIT_USAGE, builtin_commands

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
#: The checkout's src/ and plugins/ first: a second worktree's commands run its own code.
PYTHONPATH = os.pathsep.join(str(p) for p in (REPO, REPO / "src", REPO / "plugins"))
SHELL_BLOCK = re.compile(r"^```(bash|sh|shell|console)\n(.*?)^```", re.MULTILINE | re.DOTALL)


#: A CI job's steps (docs/schedules-in-git.md): each ``run: tickwork ...`` line is a command too.
YAML_BLOCK = re.compile(r"^```ya?ml\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands_in(document: Path) -> list[list[str]]:
    """The ``tickwork`` commands of a document's shell blocks, continuation lines joined, comments
    and a ``$ `` prompt removed, then those of its YAML blocks' ``run:`` steps."""
    found = []
    text = document.read_text(encoding="utf-8")
    for block in SHELL_BLOCK.finditer(text):
        lines = block.group(2).replace("\\\n", " ")
        for line in lines.splitlines():
            line = line.strip().removeprefix("$ ")
            if not line.startswith("tickwork "):
                continue
            found.append(shlex.split(line, comments=True))
    for block in YAML_BLOCK.finditer(text):
        for line in block.group(1).splitlines():
            step = line.strip().removeprefix("- ").strip()
            if step.startswith("run: tickwork "):
                found.append(shlex.split(step.removeprefix("run: "), comments=True))
    return found


CONSOLE_BLOCK = re.compile(r"^```console\n(.*?)^```", re.MULTILINE | re.DOTALL)


def transcripts_in(document: Path) -> list[tuple[list[str], list[str]]]:
    """(command, the lines it prints) of each ``$ tickwork ...`` line of a document's console
    blocks that is followed by output."""
    found: list[tuple[list[str], list[str]]] = []
    for block in CONSOLE_BLOCK.finditer(document.read_text(encoding="utf-8")):
        current: tuple[list[str], list[str]] | None = None
        for line in block.group(1).splitlines():
            if line.startswith("$ "):
                current = None
                if line.startswith("$ tickwork "):
                    current = (shlex.split(line[2:], comments=True), [])
                    found.append(current)
            elif current is not None:
                current[1].append(line)
    return [(words, lines) for words, lines in found if lines]


TRANSCRIPTS = [
    pytest.param(words, lines, id=f"{document.name}:{shlex.join(words)}")
    for document in DOCUMENTS
    for words, lines in transcripts_in(document)
]


def _cases() -> list[object]:
    """Each documented command once (the first document naming it gives the id), except those a
    transcript shows: :func:`test_documented_output_is_what_the_command_prints` runs them and
    checks every line they print, which says more than "did not exit 2"."""
    shown = {tuple(words) for words, _ in (t.values for t in TRANSCRIPTS)}  # type: ignore[misc]
    seen: set[tuple[str, ...]] = set()
    cases = []
    for document in DOCUMENTS:
        for words in commands_in(document):
            key = tuple(words)
            if key in seen or key in shown:
                continue
            seen.add(key)
            cases.append(pytest.param(words, id=f"{document.name}:{shlex.join(words)}"))
    return cases


CASES = _cases()


def test_the_documents_have_commands() -> None:
    readme = commands_in(REPO / "README.md")
    assert ["tickwork", "next", "*-*~01 18:00", "-n", "3"] in readme
    assert len(CASES) >= 25


def test_the_readme_starts_with_the_two_set_up_commands() -> None:
    blocks = [m.group(2).strip() for m in SHELL_BLOCK.finditer((REPO / "README.md").read_text(encoding="utf-8"))]
    assert blocks[0] == (
        "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/tickwork run --config examples/tickwork.toml"
    )
    assert blocks[1] == (
        "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' "
        "&& .venv/bin/python -m pytest -q -n 4 --dist worksteal"
    )


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("docs")
    shutil.copytree(REPO / "examples", root / "examples")
    (root / "myapp").mkdir()
    (root / "myapp" / "__init__.py").write_text("", encoding="utf-8")
    (root / "myapp" / "tasks.py").write_text("def backup() -> None:\n    pass\n", encoding="utf-8")
    (root / "myapp" / "jobs.py").write_text("def payroll() -> None:\n    pass\n", encoding="utf-8")
    return root


#: The start of a log record (logformat.py): a timestamp, then the level and the logger.
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} +\w+ +(\S+?):", re.MULTILINE)


def outside_job_failures(stderr: str) -> str:
    """``stderr`` without the records of ``tickwork.runs`` (a run that ended): a job's own
    traceback is logged with its failure, as it should be. The demo's ``flaky`` job fails 30 % of
    its runs, which a ``tickwork run --for 1`` may catch (it made this test fail now and then)."""
    starts = [(m.start(), m.group(1)) for m in RECORD.finditer(stderr)]
    if not starts:
        return stderr
    kept = [stderr[: starts[0][0]]]
    for (start, logger), (end, _) in zip(starts, [*starts[1:], (len(stderr), "")], strict=True):
        if logger != "tickwork.runs":
            kept.append(stderr[start:end])
    return "".join(kept)


def run_documented(args: list[str], sandbox: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TICKWORK_CONFIG": "examples/tickwork.toml", "PYTHONPATH": PYTHONPATH}
    env.pop("TICKWORK_LOG_LEVEL", None)
    env.pop("COLUMNS", None)
    return run_tickwork(args, cwd=sandbox, env=env)


def test_the_guides_have_transcripts() -> None:
    documented = {param.id.split(":")[0] for param in TRANSCRIPTS}
    assert {"from-celery-beat.md", "from-apscheduler.md", "cli.md"} <= documented


@pytest.mark.parametrize(("words", "lines"), TRANSCRIPTS)
def test_documented_output_is_what_the_command_prints(words: list[str], lines: list[str], sandbox: Path) -> None:
    done = run_documented(words[1:], sandbox)
    assert (done.stdout + done.stderr).splitlines() == lines
    # A transcript ending in "tickwork: error: ..." documents a refusal: exit 2 is what it shows.
    refused = lines[-1].startswith("tickwork: error:")
    assert (done.returncode == 2) == refused, f"{shlex.join(words)} exited {done.returncode}"


@pytest.mark.parametrize("words", CASES)
def test_documented_command_is_valid(words: list[str], sandbox: Path) -> None:
    args = words[1:]
    if args[:1] == ["run"]:
        args = [*args, "--for", "1"]
    if args[:1] == ["bench"]:
        args = [*args, "--help"]
    env = {**os.environ, "TICKWORK_CONFIG": "examples/tickwork.toml", "PYTHONPATH": PYTHONPATH}
    env.pop("TICKWORK_LOG_LEVEL", None)
    done = run_tickwork(args, cwd=sandbox, env=env)
    assert "Traceback" not in outside_job_failures(done.stderr), done.stderr
    # A command whose statuses say something else exits its own status on every error
    # (`apply --plan`: 2 is "changes", 1 an error); the others exit 2 for invalid usage.
    command = builtin_commands().get(args[0]) if args[0] in builtin_commands() else None
    invalid = EXIT_USAGE if command is None or command.error_status is None else command.error_status
    assert done.returncode != invalid, f"{shlex.join(words)} exited {invalid}: {done.stderr.strip()}"

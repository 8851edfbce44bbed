"""The CLI's tables on a real terminal (a pseudo-terminal with ``$COLUMNS`` set) fit 80 and 120
columns without a wrapped row, ``--wide`` shows everything, and a failed run's traceback can be
read without ``--json | jq``: ``history --show RUN_ID`` and ``jobs show NAME --traceback`` print
it without tickwork's own frames, which the recorded error (and its JSON) keeps."""

from __future__ import annotations

import fcntl
import json
import os
import re
import struct
import subprocess
import sys
import termios
import textwrap
from pathlib import Path

import pytest

JOBS = """
import tickwork


@tickwork.every("1s", name="reports.nightly-export-of-the-customer-ledger-to-the-warehouse")
def export_ledger() -> None:
    raise ConnectionError("warehouse.internal:5439 refused the connection while exporting the ledger")


@tickwork.every("1s", name="ok")
def fine() -> None:
    pass
"""


def run_cli(workdir: Path, *args: str, columns: int | None = None) -> str:
    """``tickwork ARGS`` with stdout on a pseudo-terminal ``columns`` wide (``None``: a pipe)."""
    env = dict(os.environ, PYTHONPATH=str(workdir), PYTHONIOENCODING="utf-8")
    command = [sys.executable, "-m", "tickwork.cli", *args]
    if columns is None:
        done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=60, check=True)
        return done.stdout
    env["COLUMNS"] = str(columns)
    main, child = os.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(command, cwd=workdir, env=env, stdin=child, stdout=child, stderr=subprocess.PIPE)
    os.close(child)
    chunks: list[bytes] = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=60)
    os.close(main)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose node ran for a few seconds: a failing job with a long name, a zoned
    run-time schedule with a long target, and their history."""
    folder = tmp_path_factory.mktemp("terminal")
    (folder / "terminal_jobs.py").write_text(JOBS)
    (folder / "tickwork.toml").write_text(
        textwrap.dedent(
            """
            [scheduler]
            jobs = ["terminal_jobs"]
            node_id = "node-with-a-rather-long-name-01"
            [store]
            plugin = "sqlite"
            path = "t.db"
            """
        )
    )
    run_cli(folder, "run", "--for", "2.5")
    run_cli(
        folder,
        "jobs",
        "add",
        "backup",
        "0 2 * * *",
        "terminal_jobs:fine",
        "--tz",
        "America/Argentina/ComodRivadavia",
    )
    return folder


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("command", [["jobs", "list"], ["history", "--limit", "8"]])
def test_tables_fit_the_terminal_without_a_wrapped_row(workdir: Path, columns: int, command: list[str]) -> None:
    rows = run_cli(workdir, *command, "--json").splitlines()
    shown = run_cli(workdir, *command, columns=columns).splitlines()
    assert len(shown) == len(rows) + 1  # a header, then one line per row
    assert all(len(line) <= columns for line in shown), "\n".join(shown)
    wide = run_cli(workdir, *command, "--wide", columns=columns).splitlines()
    assert len(wide) == len(rows) + 1


def test_a_narrow_terminal_keeps_the_names_and_drops_low_value_columns(workdir: Path) -> None:
    header, *_ = run_cli(workdir, "history", "--limit", "8", columns=80).splitlines()
    assert header.split()[:4] == ["RUN", "SCHEDULED", "FOR", "SCHEDULE"]
    assert "STATUS" in header and "NODE" not in header
    wide = run_cli(workdir, "history", "--limit", "8", "--wide", columns=80).splitlines()
    assert "NODE" in wide[0] and "DURATION" in wide[0]
    assert max(len(line) for line in wide) > 80
    listed = run_cli(workdir, "jobs", "list", columns=120)
    assert "…" in listed  # the long schedule name is cut, not wrapped
    assert "2026" in listed or "20" in listed


def test_jobs_list_at_80_columns_keeps_health_and_last_run_and_cuts_the_expression(workdir: Path) -> None:
    expression = "Fri *-*-01..07 09:00:00"  # what the import writes for Celery's "first Friday"
    run_cli(workdir, "jobs", "add", "first-friday", expression, "terminal_jobs:fine", "--kind", "calendar")
    try:
        header, *rows = run_cli(workdir, "jobs", "list", columns=80).splitlines()
        assert all(len(line) <= 80 for line in [header, *rows]), "\n".join([header, *rows])
        for column in ("NAME", "NEXT FIRE", "STATE", "HEALTH", "LAST RUN"):
            assert column in header, header
        assert not header.endswith("…")  # no column was cut off by cutting the whole line
        [friday] = [r for r in rows if r.startswith("first-friday")]
        assert expression not in friday and "…" in friday  # the expression gave way first
        [failing] = [r for r in rows if r.startswith("reports.")]
        # Not healthy (failing; overdue too once its node has been stopped a while), and why.
        assert re.search(r" (failing|overdue) +failed \d+[smhd] ago$", failing), failing
        wide = run_cli(workdir, "jobs", "list", "--wide", columns=80)
        assert expression in wide  # --wide cuts nothing
    finally:
        run_cli(workdir, "jobs", "remove", "first-friday")


def test_history_show_prints_the_traceback_without_tickworks_frames(workdir: Path) -> None:
    failed = json.loads(run_cli(workdir, "history", "--json", "--status", "failed", "--limit", "1").splitlines()[0])
    assert failed["error"] == (
        "ConnectionError: warehouse.internal:5439 refused the connection while exporting the ledger"
    )
    assert "tickwork_local" in failed["traceback"]  # the record keeps every frame
    shown = run_cli(workdir, "history", "--show", str(failed["id"]), columns=80)
    lines = shown.splitlines()
    assert lines[0] == f"run:           {failed['id']}"
    assert "status:        failed" in lines
    body = shown.split("\n\n", 1)[1]
    assert body.splitlines()[0] == failed["error"]
    assert body.splitlines()[1] == "Traceback (most recent call last):"
    assert 'terminal_jobs.py", line 7, in export_ledger' in body
    assert "tickwork_local" not in body and "pool.py" not in body and "threadrun.py" not in body


def test_jobs_show_traceback_prints_the_last_error_in_full(workdir: Path) -> None:
    name = "reports.nightly-export-of-the-customer-ledger-to-the-warehouse"
    shown = run_cli(workdir, "jobs", "show", name, "--traceback")
    assert shown.splitlines()[0].startswith("run ")
    assert "Traceback (most recent call last):" in shown
    assert "in export_ledger" in shown and "threadrun.py" not in shown
    summary = run_cli(workdir, "jobs", "show", name)
    assert f"traceback:   tickwork jobs show {name} --traceback" in summary


def test_a_zoned_schedule_is_shown_in_its_zone(workdir: Path) -> None:
    shown = run_cli(workdir, "jobs", "show", "backup")
    [line] = [line for line in shown.splitlines() if line.startswith("next fire:")]
    assert line.endswith(" 02:00 America/Argentina/ComodRivadavia (05:00Z)")


def test_the_node_log_shows_a_failed_jobs_traceback_from_the_jobs_own_frame(workdir: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tickwork.cli", "run", "--for", "1.5"],
        cwd=workdir,
        env=dict(os.environ, PYTHONPATH=str(workdir)),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    failure = done.stderr.split("ERROR   tickwork.runs: ", 1)[1]
    lines = failure.splitlines()
    assert lines[1:3] == [
        "Traceback (most recent call last):",
        f'  File "{workdir / "terminal_jobs.py"}", line 7, in export_ledger',
    ]
    assert "pool.py" not in failure and "threadrun.py" not in failure

"""Two real node processes sharing one SQLite file never fire a run twice."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

JOBS = textwrap.dedent(
    """
    import os
    import tickwork

    def _write(name):
        # O_APPEND writes of one short line are atomic: the file is the ground truth of executions.
        fd = os.open(os.environ["FIRES_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{name} {os.getpid()}\\n".encode())
        os.close(fd)

    @tickwork.cron("* * * * * *", name="a")
    def a():
        _write("a")

    @tickwork.cron("* * * * * *", name="b")
    def b():
        _write("b")

    @tickwork.cron("*/2 * * * * *", name="c")
    def c():
        _write("c")
    """
)

CONFIG = textwrap.dedent(
    """
    [scheduler]
    jobs = ["twojobs"]
    [store]
    plugin = "sqlite"
    path = "shared.db"
    """
)


def tickwork_bin() -> str:
    return str(Path(sys.executable).parent / "tickwork")


def test_two_processes_sharing_a_file_never_fire_twice(tmp_path: Path) -> None:
    (tmp_path / "twojobs.py").write_text(JOBS)
    (tmp_path / "tickwork.toml").write_text(CONFIG)
    fires = tmp_path / "fires.txt"
    env = dict(os.environ, FIRES_FILE=str(fires), TICKWORK_CONFIG="")
    # Create the schema first so the two nodes do not race to create it.
    subprocess.run([tickwork_bin(), "db", "upgrade"], cwd=tmp_path, env=env, check=True, capture_output=True)
    nodes = [
        subprocess.Popen(
            [tickwork_bin(), "run", "--for", "6"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=60)[0] for p in nodes]
    assert [p.returncode for p in nodes] == [0, 0], outputs
    assert "database is locked" not in "".join(outputs)

    history = subprocess.run(
        [tickwork_bin(), "history", "--json", "--limit", "1000"],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    runs = [json.loads(line) for line in history]
    keys = collections.Counter((r["schedule"], r["scheduled_for"]) for r in runs)
    assert max(keys.values()) == 1
    succeeded = collections.Counter(r["schedule"] for r in runs if r["status"] == "succeeded")
    executed = collections.Counter(line.split()[0] for line in fires.read_text().splitlines())
    assert executed == succeeded, "an execution happened that the history does not account for"
    assert executed["a"] >= 4 and executed["b"] >= 4 and executed["c"] >= 2
    assert all(r["status"] in {"succeeded", "skipped"} for r in runs)

"""Real node processes of the cluster tests: the one node configuration they write, a node
started as a user starts it (``python -m tickwork.cli run``), and the every-second schedules of
the crash scenarios (their job, ``tests.support.cluster_jobs:work``, appends to ``CLUSTER_FIRES``).

Every scenario runs hashring members with a 1 s heartbeat and a 4 s node_ttl unless it says
otherwise; what a scenario changes it passes as the options of one section."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from tests.support.paths import REPO
from tickwork import schedules as admin
from tickwork.abc import Store
from tickwork.structures import ScheduleSpec
from tickwork_postgres.store import PostgresStore

Options = Mapping[str, str | int | float | bool]

#: The crash scenarios': a killed node's claims are reaped, and live ones renewed, within seconds.
QUICK_REAP: Options = {"hard_timeout_grace": 3, "reap_interval": 1, "renew_interval": 1}
#: The MySQL / MariaDB scenarios' store: rows passed over as locked, changes seen by polling every 0.2 s.
MYSQL_STORE: Options = {"claim": "skip-locked", "poll_interval": 0.2}


def toml_value(value: str | int | float | bool) -> str:
    # json.dumps writes a string as a valid TOML basic string; bool before int (bool is an int).
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def node_config(
    tmp_path: Path,
    url: str,
    node_id: str,
    *,
    plugin: str = "postgres",
    scheduler: Options | None = None,
    store: Options | None = None,
    membership: Options | None = None,
    local_executor: Options | None = None,
) -> Path:
    """``<tmp_path>/<node_id>.toml``: node ``node_id`` on the ``plugin`` store at ``url``, a hashring
    member; each mapping adds to (or overrides) the options of its section."""
    sections: dict[str, Options] = {
        "scheduler": {"node_id": node_id, **(scheduler or {})},
        "store": {"plugin": plugin, "url": url, **(store or {})},
        "membership": {"plugin": "hashring", "heartbeat_interval": 1.0, "node_ttl": 4.0, **(membership or {})},
    }
    if local_executor is not None:
        sections["executor.local"] = local_executor
    path = tmp_path / f"{node_id}.toml"
    path.write_text(
        "".join(
            f"[{name}]\n" + "".join(f"{key} = {toml_value(value)}\n" for key, value in options.items())
            for name, options in sections.items()
        ),
        encoding="utf-8",
    )
    return path


def start_node(config: Path, fires: Path, seconds: float, log: Path) -> subprocess.Popen[bytes]:
    """``tickwork run --config CONFIG --for SECONDS`` from the checkout, its jobs appending to ``fires``."""
    env = dict(os.environ, CLUSTER_FIRES=str(fires))
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config), "--for", f"{seconds:.1f}"],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def seed(url: str, count: int) -> PostgresStore:
    """A migrated, open PostgreSQL store holding :func:`every_second` schedules."""
    store = PostgresStore(url)
    store.upgrade()
    store.open()
    every_second(store, count)
    return store


def every_second(store: Store, count: int, **fields: Any) -> None:
    """Add ``count`` every-second schedules ``c00``, ``c01``, ... of ``tests.support.cluster_jobs:work``
    (argument ``n``, a 5 s timeout), with ``fields`` of :class:`ScheduleSpec` on top."""
    for i in range(count):
        admin.add(
            store,
            ScheduleSpec(
                name=f"c{i:02d}",
                trigger_kind="cron",
                expression="* * * * * *",
                target="tests.support.cluster_jobs:work",
                arguments={"n": i},
                timeout=timedelta(seconds=5),
                **fields,
            ),
        )

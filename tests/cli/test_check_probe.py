"""``tickwork check`` as a probe, on SQLite and PostgreSQL, in a process of its own: a schedule
paused or disabled on purpose does not fail it (``--strict`` makes it), a pause shows as paused
with its note and its author, the counts tell healthy, unhealthy, paused and disabled apart, and
a schedule tickwork paused itself after failures is unhealthy."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.support.probe import check, counts_of, lines_of
from tests.support.servers.configs import ConfigFor
from tickwork.admin.api import Admin, connect
from tickwork.config import parse
from tickwork.node import Node

WAIT_S = 60  # guard against a hung node; not a timing assertion


@pytest.fixture(params=["sqlite", "postgres"])
def setup(request: pytest.FixtureRequest, config_for: ConfigFor, tmp_path: Path) -> Iterator[tuple[Path, Admin]]:
    store = config_for(request.param, migrated=True)
    toml = tmp_path / "tickwork.toml"
    toml.write_text(store.toml() + '[scheduler]\nnode_id = "only"\nlookahead = 0\n')
    admin = connect(parse(store.as_dict(scheduler={"node_id": "only", "lookahead": 0})))
    try:
        yield toml, admin
    finally:
        admin.close()


def test_schedules_paused_or_disabled_on_purpose_do_not_fail_the_check(setup: tuple[Path, Admin]) -> None:
    toml, admin = setup
    admin.add("steady", "1h", "tests.support.health_jobs:fine")
    admin.add("resting", "1h", "tests.support.health_jobs:fine")
    admin.pause("resting", "waiting for the new bucket", by="ana", until=timedelta(hours=2))
    admin.add("retired", "1h", "tests.support.health_jobs:fine", enabled=False)

    result = check(toml)
    assert result.returncode == 0, result.stderr
    assert lines_of(result) == {"resting": "paused", "retired": "disabled"}
    assert counts_of(result) == (
        "3 schedules: 1 healthy, 0 unhealthy, 1 paused, 1 disabled "
        "(paused and disabled ones do not fail the check; --strict makes them)"
    )
    [resting] = [line for line in result.stdout.splitlines() if line.startswith("paused resting: ")]
    assert resting.startswith("paused resting: paused by ana at ")
    assert ": waiting for the new bucket; no runs yet" in resting
    assert " until " in resting and "disabled" not in resting
    assert "." not in resting.split(" at ", 1)[1].split(" ", 1)[0]  # no microseconds

    strict = check(toml, "--strict")
    assert strict.returncode == 1
    assert lines_of(strict) == {"resting": "paused", "retired": "disabled"}
    assert counts_of(strict) == "3 schedules: 1 healthy, 0 unhealthy, 1 paused, 1 disabled"

    *listed, summary = [json.loads(line) for line in check(toml, "--json").stdout.splitlines()]
    by_name = {o["name"]: o for o in listed}
    assert by_name["resting"]["pause"]["note"] == "waiting for the new bucket"
    assert by_name["resting"]["pause"]["by"] == "ana"
    assert (by_name["resting"]["group"], by_name["retired"]["group"]) == ("paused", "disabled")
    assert summary["summary"]["ok"] is True


def test_a_schedule_tickwork_paused_after_failures_fails_the_check(
    setup: tuple[Path, Admin], config_for: ConfigFor
) -> None:
    toml, admin = setup
    flag = toml.parent / "broken"
    flag.write_text("")
    admin.add(
        "flaky",
        "1s",
        "tests.support.health_jobs:fails_while",
        args={"flag": str(flag)},
        pause_after_failures=2,
    )
    admin.add("resting", "1h", "tests.support.health_jobs:fine")
    admin.pause("resting", "holiday", by="ana")
    node = Node(admin.config)
    node.start()
    try:
        deadline = time.monotonic() + WAIT_S
        while admin.get("flaky").enabled:
            assert time.monotonic() < deadline, "gave up waiting for the pause after failures"
            time.sleep(0.1)
    finally:
        node.stop()

    result = check(toml)
    assert result.returncode == 1
    assert lines_of(result) == {"flaky": "paused", "resting": "paused"}
    [flaky] = [line for line in result.stdout.splitlines() if line.startswith("paused flaky: ")]
    assert "paused by tickwork at " in flaky
    assert "paused after 2 consecutive failed fires" in flaky
    assert counts_of(result).startswith("2 schedules: 0 healthy, 1 unhealthy, 1 paused, 0 disabled")
    *listed, _ = [json.loads(line) for line in check(toml, "--json").stdout.splitlines()]
    assert {o["name"]: (o["group"], o["alerting"]) for o in listed} == {
        "flaky": ("unhealthy", True),
        "resting": ("paused", False),
    }

"""``tickwork config check`` and ``tickwork config show``, through a real subprocess: exit codes,
every problem listed, sources and masking; and every command refusing a mistyped key in any
table, the plugins' included."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.forkedcli import run_tickwork
from tests.support.paths import REPO


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    @property
    def errors(self) -> list[str]:
        return [line.removeprefix("tickwork: error: ") for line in self.err.splitlines()]


def tickwork(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Result:
    path = os.pathsep.join(str(REPO / part) for part in ("src", "plugins", ""))
    environment = {**os.environ, "PYTHONPATH": path, **(env or {})}
    environment.pop("TICKWORK_CONFIG", None)
    done = run_tickwork(args, cwd=cwd, env=environment)
    assert "Traceback" not in done.stderr, done.stderr
    return Result(done.returncode, done.stdout, done.stderr)


BROKEN = """\
[scheduler]
max_slep = 3

[store]
plugin = "postgres"
url = "postgresql://u@db/app"
pool_size = 0

[membership]
plugin = "hashring"
vnode = 8

[executor.celery]
app = "proj.celery:app"
report_timout = 5

[executor.grpc]

[web]
prot = 1
"""


def test_config_check_lists_every_problem_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text(BROKEN)
    result = tickwork("config", "check", "--config", "bad.toml", cwd=tmp_path)
    assert result.code == 2 and result.out == ""
    assert result.errors == [
        "bad.toml: scheduler.max_slep: unknown key (did you mean `max_sleep`?); known keys: "
        "default_executor, end_batch_window, hard_timeout_grace, history_retention_days, jobs, lookahead, "
        "max_in_flight, max_sleep, misfire, misfire_grace, namespace, namespaces, node_id, reap_interval, "
        "renew_interval, shutdown_grace, start_batch_window, start_grace, start_lead, steal_after, takeover_interval",
        "bad.toml: web.prot: unknown option (did you mean `port`?); known options: host, port, public_reads, token_env",
        "bad.toml: store.pool_size: must be an integer from 1 to 1000, got 0",
        "bad.toml: membership.vnode: unknown option (did you mean `vnodes`?); known options: heartbeat_interval, "
        "node_ttl, owners, presence, vnodes",
        "bad.toml: executor.celery.report_timout: unknown option (did you mean `report_timeout`?); known options: "
        "app, exchange, expires, no_overlap, pickup_timeout, priority, publish_timeout, queue, report_timeout, "
        "routing_key, threads",
        "bad.toml: executor.grpc: unknown executor plugin 'grpc'; registered executor plugins: celery, dramatiq, "
        "http, jobqueue, local, rq",
        "bad.toml: 6 problems",
    ]
    as_json = tickwork("config", "check", "--config", "bad.toml", "--json", cwd=tmp_path)
    assert as_json.code == 2
    report = json.loads(as_json.out)
    assert report["valid"] is False and report["file"] == "bad.toml" and len(report["problems"]) == 6


def test_config_check_says_a_valid_file_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PW", raising=False)
    (tmp_path / "tickwork.toml").write_text('[store]\nplugin = "mysql"\nurl = "mysql://u:${PW}@db/tw"\n')
    result = tickwork("config", "check", cwd=tmp_path, env={"PW": "x"})
    assert (result.code, result.out, result.err) == (0, "tickwork.toml is valid\n", "")
    # No database was opened or created: checking starts nothing.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tickwork.toml"]
    unset = tickwork("config", "check", cwd=tmp_path)
    assert (unset.code, unset.errors) == (2, ["tickwork.toml: store.url: environment variable PW is not set"])
    empty = tmp_path / "empty"
    empty.mkdir()
    no_file = tickwork("config", "check", cwd=empty)
    assert (no_file.code, no_file.out) == (0, "no configuration file: the defaults are valid\n")


def test_a_mistyped_executor_key_is_refused_by_every_command(tmp_path: Path) -> None:
    """It used to pass `jobs list` and `check` silently: executor tables were checked only when the
    executor was built."""
    (tmp_path / "tickwork.toml").write_text('[executor.celery]\napp = "proj.celery:app"\nreport_timout = 5\n')
    expected = (
        "tickwork.toml: executor.celery.report_timout: unknown option (did you mean `report_timeout`?); "
        "known options: app, exchange, expires, no_overlap, pickup_timeout, priority, publish_timeout, queue, "
        "report_timeout, routing_key, threads"
    )
    for command in (["jobs", "list"], ["check"], ["config", "check"], ["config", "show"]):
        result = tickwork(*command, cwd=tmp_path)
        assert (result.code, result.errors) == (2, [expected]), command


def test_config_show_gives_each_key_its_value_default_and_source_with_secrets_masked(tmp_path: Path) -> None:
    (tmp_path / "tw.toml").write_text(
        "[scheduler]\nmax_sleep = 3\n\n"
        '[store]\nplugin = "postgres"\nurl = "postgresql://app:${TW_PW}@db/app?sslpassword=k2"\n\n'
        '[membership]\nplugin = "hashring"\n\n'
        '[executor.http]\nheaders = { "X-Api-Key" = "${TW_KEY}" }\n'
    )
    env = {"TW_PW": "hunter2", "TW_KEY": "k1"}
    result = tickwork("config", "show", "-c", "tw.toml", "--json", cwd=tmp_path, env=env)
    assert result.code == 0, result.err
    assert "hunter2" not in result.out and "k1" not in result.out and "k2" not in result.out
    shown = json.loads(result.out)
    assert shown["file"] == "tw.toml"
    tables = shown["tables"]
    assert {"scheduler", "store", "membership", "executor.http", "executor.local", "web", "health"} <= set(tables)
    assert tables["scheduler"]["max_sleep"] == {"value": 3.0, "default": 60.0, "source": "file", "file": "tw.toml"}
    assert tables["scheduler"]["lookahead"] == {"value": 1.0, "default": 1.0, "source": "default"}
    assert tables["store"]["url"] == {
        "value": "postgresql://app:***@db/app?sslpassword=***",
        "default": None,
        "source": "environment",
        "file": "tw.toml",
        "env": ["TW_PW"],
    }
    assert tables["store"]["plugin"]["value"] == "postgres" and tables["store"]["plugin"]["default"] == "sqlite"
    assert tables["store"]["claim"] == {"value": "skip-locked", "default": "skip-locked", "source": "default"}
    assert tables["membership"]["owners"]["value"] == 2
    assert tables["executor.http"]["headers"]["value"] == {"X-Api-Key": "***"}
    assert tables["executor.http"]["headers"]["source"] == "environment"
    assert tables["executor.local"]["mode"]["source"] == "default"

    text = tickwork("config", "show", "-c", "tw.toml", cwd=tmp_path, env=env)
    assert text.code == 0 and "hunter2" not in text.out
    lines = text.out.splitlines()
    assert lines[0] == "# tw.toml (--config)"
    assert "max_sleep = 3.0  # file tw.toml; default 60.0" in lines
    assert 'url = "postgresql://app:***@db/app?sslpassword=***"  # environment ($TW_PW); default required' in lines
    assert "[executor.http]" in lines and "# secret_env: not set  # default" in lines


def test_config_show_refuses_a_file_with_problems(tmp_path: Path) -> None:
    (tmp_path / "tickwork.toml").write_text("[store]\nbusy_timeout = -1\n[logging]\nformat = 'xml'\n")
    result = tickwork("config", "show", cwd=tmp_path)
    assert result.code == 2 and result.out == ""
    assert result.errors == [
        "tickwork.toml: logging.format: 'xml' is not one of text, json",
        "tickwork.toml: store.busy_timeout: must be a finite number >= 0 and <= 3600, got -1",
        "tickwork.toml: 2 problems",
    ]

"""The otel plugin in real processes: a ``tickwork run`` node with the SDK's console exporter
prints one span per run, and a node without ``[otel]`` never imports OpenTelemetry."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tickwork
from tests.support.otel import console_spans
from tests.support.paths import REPO
from tests.support.processes import PROCESS_TIMEOUT_S, tickwork_command
from tickwork.structures import RunStatus

pytestmark = pytest.mark.slow

JOBS = """
import tickwork


@tickwork.cron("* * * * * *", name="tick")
def tick() -> None:
    pass
"""


def _project(tmp_path: Path, otel: bool) -> Path:
    (tmp_path / "otel_jobs.py").write_text(textwrap.dedent(JOBS), encoding="utf-8")
    config = tmp_path / "tickwork.toml"
    config.write_text(
        textwrap.dedent(f"""
        [scheduler]
        jobs = ["otel_jobs"]
        node_id = "console-node"

        [store]
        path = "{tmp_path / "otel.db"}"
        """)
        + ('\n[otel]\nservice_name = "nightly"\n' if otel else ""),
        encoding="utf-8",
    )
    return config


def _environment(**otel: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TICKWORK_CONFIG" and not k.startswith("OTEL_")}
    return {**env, **otel}


def test_a_node_with_the_console_exporter_prints_a_span_per_run(tmp_path: Path) -> None:
    config = _project(tmp_path, otel=True)
    env = _environment(OTEL_TRACES_EXPORTER="console", OTEL_METRICS_EXPORTER="none", OTEL_BSP_SCHEDULE_DELAY="100")
    subprocess.run([*tickwork_command(), "db", "upgrade"], cwd=tmp_path, env=env, check=True, capture_output=True)
    done = subprocess.run(
        [*tickwork_command(), "run", "--for", "4"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with tickwork.connect(config) as admin:
        runs = admin.history(schedule="tick")
    ended = sorted(r.id for r in runs if r.status is RunStatus.SUCCEEDED)
    assert len(ended) >= 2, done.stderr[-3000:]
    spans = console_spans(done.stdout)
    assert {s["name"] for s in spans} == {"tickwork.run tick"}
    # A fire the loaded machine made late past its grace is skipped: its span names no run.
    ran = [s for s in spans if "tickwork.run_id" in s["attributes"]]
    assert sorted(s["attributes"]["tickwork.run_id"] for s in ran) == sorted(
        r.id for r in runs if r.status is not RunStatus.SKIPPED
    )
    skips = [s for s in spans if s not in ran]
    assert len(skips) == len([r for r in runs if r.status is RunStatus.SKIPPED])
    assert all([e["name"] for e in s["events"]] == ["tickwork.skip"] for s in skips)
    for span in ran:
        assert span["resource"]["attributes"]["service.name"] == "nightly"
        assert span["attributes"]["tickwork.node"] == "console-node"
        assert span["attributes"]["tickwork.executor"] == "local"
        assert span["parent_id"] is None
    # One trace per fire.
    assert len({s["context"]["trace_id"] for s in spans}) == len(spans)


PROBE = """
import json, sys, time

import tickwork
from tickwork.config import load
from tickwork.node import Node

node = Node(load(sys.argv[1]))
node.open()
try:
    with tickwork.connect(sys.argv[1]) as admin:
        admin.trigger("tick")
        for _ in range(50):
            node.engine.tick()
            if admin.history(schedule="tick"):
                break
            time.sleep(0.1)
        runs = len(admin.history(schedule="tick"))
finally:
    node.shutdown()
print(json.dumps({"runs": runs, "otel": sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")}))
"""


@pytest.mark.parametrize("otel", [False, True])
def test_opentelemetry_is_imported_only_by_a_node_with_an_otel_table(tmp_path: Path, otel: bool) -> None:
    config = _project(tmp_path, otel=otel)
    env = _environment(OTEL_TRACES_EXPORTER="none", OTEL_METRICS_EXPORTER="none", PYTHONPATH=f"{REPO}:{tmp_path}")
    subprocess.run([*tickwork_command(), "db", "upgrade"], cwd=tmp_path, env=env, check=True, capture_output=True)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(config)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["runs"] >= 1
    if otel:
        assert "opentelemetry.sdk.trace" in found["otel"]
    else:
        assert found["otel"] == []

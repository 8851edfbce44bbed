"""A Celery hand-off over RabbitMQ is one trace: the node's run span, its publish span, and the
span the real ``celery worker`` process records for the task, each printed by the SDK's console
exporter of its own process."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.handoff import harness
from tests.support.otel import console_spans
from tests.support.servers.configs import ConfigFor
from tickwork.structures import RunStatus

pytestmark = pytest.mark.slow

APP = "tests.support.handoff.celery_app:app"


def test_one_trace_from_the_node_s_publish_to_the_worker_s_task(
    amqp_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    store_config = config_for("postgres", migrated=True)
    queue = harness.queue_name()
    config = harness.write_config(
        tmp_path / "n1.toml", store_config.store, "n1", "celery", {"app": APP, "queue": queue}
    )
    # The node's and the worker's configuration (the worker reads it from $TICKWORK_CONFIG).
    config.write_text(config.read_text() + '\n[otel]\nservice_name = "traced"\n')
    env = harness.env_for(
        config,
        tmp_path / "executions.jsonl",
        HANDOFF_BROKER=amqp_url,
        OTEL_TRACES_EXPORTER="console",
        OTEL_METRICS_EXPORTER="none",
        OTEL_BSP_SCHEDULE_DELAY="100",
    )
    with harness.admin(config) as admin:
        admin.add("traced", "0 0 1 1 *", "handoff.work", executor="celery")  # fires when triggered
    store = store_config.build_store()
    store.open()
    worker: subprocess.Popen[bytes] | None = None
    node = harness.start_node(config, 60, env, tmp_path / "n1.log")
    try:
        worker = harness.celery_worker(queue, env, tmp_path / "worker.log")
        harness.wait_until(lambda: "node n1 starting" in (tmp_path / "n1.log").read_text(), 30, "the node to start")
        with harness.admin(config) as admin:
            admin.trigger("traced")
        harness.wait_until(
            lambda: [r.status for r in harness.history(store)] == [RunStatus.SUCCEEDED], 60, "the worker's report"
        )
        (run,) = harness.history(store)
    finally:
        # A warm shutdown exports what each process still holds.
        harness.stop(node)
        if worker is not None:
            harness.stop(worker)
        store.close()
    logs = harness.tails([tmp_path / "n1.log", tmp_path / "worker.log"])
    on_node = {s["name"]: s for s in console_spans((tmp_path / "n1.log").read_text())}
    on_worker = {s["name"]: s for s in console_spans((tmp_path / "worker.log").read_text())}
    assert set(on_node) == {"tickwork.run traced", "tickwork.publish traced"}, logs
    assert set(on_worker) == {"tickwork.task traced"}, logs
    run_span, publish, task = (
        on_node["tickwork.run traced"],
        on_node["tickwork.publish traced"],
        on_worker["tickwork.task traced"],
    )
    trace_id = run_span["context"]["trace_id"]
    assert publish["context"]["trace_id"] == trace_id == task["context"]["trace_id"]
    assert publish["parent_id"] == run_span["context"]["span_id"]
    assert task["parent_id"] == publish["context"]["span_id"]
    assert publish["kind"] == "SpanKind.PRODUCER" and task["kind"] == "SpanKind.CONSUMER"
    for span in (run_span, publish, task):
        assert span["attributes"]["tickwork.run_id"] == run.id
        assert span["resource"]["attributes"]["service.name"] == "traced"
    assert run_span["attributes"]["tickwork.status"] == "submitted"
    assert task["status"]["status_code"] == "UNSET"

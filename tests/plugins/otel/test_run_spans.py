"""The otel plugin on a node of this process, recorded by the SDK's in-memory exporter and reader
(the process's providers, as an application embedding a node sets them): a span per run with its
attributes, errors, retries and skips; the metrics; the trace context the http executor sends and
a hand-off carries to its worker (RQ, on a real Redis, its worker run here)."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.trace import SpanKind, StatusCode

import tickwork
from tests.support import jobs_for_tests
from tests.support.otel import InMemory, in_memory
from tickwork.config import load
from tickwork.node import Node
from tickwork.plugin import tracing
from tickwork.structures import RunStatus


@pytest.fixture
def otel() -> InMemory:
    return in_memory()


def _config(tmp_path: Path, extra: str = "") -> Path:
    config = tmp_path / "tickwork.toml"
    config.write_text(
        f'[store]\npath = "{tmp_path / "s.db"}"\n\n[scheduler]\nnode_id = "otel-node"\n\n[otel]\n{extra}',
        encoding="utf-8",
    )
    return config


def _node(config: Path, *, grace: float | None = None) -> Node:
    loaded = load(config)
    if grace is not None:
        loaded = replace(loaded, scheduler=loaded.scheduler.replace(misfire_grace=grace))
    node = Node(loaded)
    node.open()
    return node


def _count(otel: InMemory, name: str, **labels: str) -> float:
    return sum(p.value for p in otel.points(name) if all(p.attributes.get(k) == v for k, v in labels.items()))


def _histogram_count(otel: InMemory, name: str) -> int:
    return sum(p.count for p in otel.points(name))


def test_a_span_per_run_with_its_attributes_errors_and_skips(tmp_path: Path, otel: InMemory) -> None:
    config = _config(tmp_path)
    with tickwork.connect(config) as admin:
        admin.store(write=True)
        admin.add("fine", "0 3 * * *", "tests.support.health_jobs:fine", misfire="once")
        # The config file exists: the job raises.
        admin.add("broken", "0 3 * * *", "tests.support.health_jobs:fails_while", args={"flag": str(config)},
                  misfire="once")  # fmt: skip
        admin.add("late", "1h", "tests.support.health_jobs:fine")  # misfire skip: a late claim is skipped
        for name in ("fine", "broken", "late"):
            admin.trigger(name)
    before = {s: _count(otel, "tickwork_runs", status=s) for s in ("succeeded", "failed", "skipped")}
    lag_before = _histogram_count(otel, "tickwork_fire_lag_seconds")
    # Every fire is claimed some milliseconds after it was due: a 1 ms grace skips "late".
    node = _node(config, grace=0.001)
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    with tickwork.connect(config) as admin:
        runs = {r.schedule: r for r in admin.history()}

    spans = {s.attributes["tickwork.schedule"]: s for s in otel.finished() if s.attributes}
    assert {s.name for s in spans.values()} == {"tickwork.run fine", "tickwork.run broken", "tickwork.run late"}
    for name in ("fine", "broken"):
        span, run = spans[name], runs[name]
        assert span.kind is SpanKind.INTERNAL and span.parent is None
        attributes = dict(span.attributes or {})
        assert attributes["tickwork.run_id"] == run.id
        assert attributes["tickwork.attempt"] == 1
        assert attributes["tickwork.node"] == "otel-node"
        assert attributes["tickwork.executor"] == "local"
        assert attributes["tickwork.scheduled_for"] == run.scheduled_for.isoformat().replace("+00:00", "Z")
        assert isinstance(attributes["tickwork.lag_ms"], float) and attributes["tickwork.lag_ms"] >= 0
        assert span.end_time is not None and span.start_time is not None and span.end_time >= span.start_time
    assert spans["fine"].status.status_code is StatusCode.UNSET
    assert spans["fine"].attributes["tickwork.status"] == "succeeded"

    broken = spans["broken"]
    assert broken.status.status_code is StatusCode.ERROR
    assert "failing while tickwork.toml exists" in (broken.status.description or "")
    (exception,) = [e for e in broken.events if e.name == "exception"]
    assert exception.attributes["exception.type"] == "RuntimeError"
    assert "health_jobs.py" in exception.attributes["exception.stacktrace"]

    late = spans["late"]
    assert runs["late"].status is RunStatus.SKIPPED
    (skip,) = late.events
    assert skip.name == "tickwork.skip" and "misfire policy skip" in skip.attributes["tickwork.reason"]
    assert late.attributes["tickwork.status"] == "skipped"

    # The Prometheus plugin's names and labels.
    after = {s: _count(otel, "tickwork_runs", status=s) - before[s] for s in before}
    assert after == {"succeeded": 1, "failed": 1, "skipped": 1}
    assert _histogram_count(otel, "tickwork_fire_lag_seconds") - lag_before == 2


def test_the_attempts_of_a_retried_fire_are_one_trace(tmp_path: Path, otel: InMemory) -> None:
    config = _config(tmp_path)
    jobs_for_tests.attempts.clear()
    with tickwork.connect(config) as admin:
        admin.store(write=True)
        admin.add("flaky", "0 3 * * *", "tests.support.jobs_for_tests:fails_twice", misfire="once", retries=3,
                  retry_backoff=0.05)  # fmt: skip
        admin.trigger("flaky")
    node = _node(config)
    try:
        deadline = time.monotonic() + 30
        while len(otel.finished("tickwork.run")) < 3 and time.monotonic() < deadline:
            node.engine.tick()
            time.sleep(0.05)
    finally:
        node.shutdown()
    with tickwork.connect(config) as admin:
        runs = sorted(admin.history(), key=lambda r: r.attempt)
    assert [(r.attempt, r.status) for r in runs] == [
        (1, RunStatus.FAILED),
        (2, RunStatus.FAILED),
        (3, RunStatus.SUCCEEDED),
    ]
    spans = sorted(otel.finished("tickwork.run"), key=lambda s: s.attributes["tickwork.attempt"])
    assert [s.attributes["tickwork.run_id"] for s in spans] == [r.id for r in runs]
    assert len({s.context.trace_id for s in spans}) == 1
    assert spans[0].parent is None
    for previous, retry in itertools.pairwise(spans):
        assert retry.parent is not None and retry.parent.span_id == previous.context.span_id
        assert previous.status.status_code is StatusCode.ERROR
        (event,) = [e for e in previous.events if e.name == "tickwork.retry"]
        assert event.attributes["tickwork.attempt"] == retry.attributes["tickwork.attempt"]
    assert spans[2].status.status_code is StatusCode.UNSET


class _Receiver:
    """An HTTP endpoint keeping the headers of every POST."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                outer.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(204)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    found = _Receiver()
    yield found
    found.server.shutdown()
    found.server.server_close()


def test_the_http_executor_sends_the_run_s_traceparent(tmp_path: Path, otel: InMemory, receiver: _Receiver) -> None:
    config = _config(tmp_path, "\n[executor.http]\n")
    with tickwork.connect(config) as admin:
        admin.store(write=True)
        admin.add("hook", "0 3 * * *", receiver.url, executor="http", misfire="once")
        admin.trigger("hook")
    node = _node(config)
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    (span,) = otel.finished("tickwork.run")
    (sent,) = receiver.headers
    version, trace_id, parent_id, flags = sent["traceparent"].split("-")
    assert version == "00" and int(flags, 16) & 1  # sampled
    assert int(trace_id, 16) == span.context.trace_id
    assert int(parent_id, 16) == span.context.span_id
    assert span.attributes["tickwork.executor"] == "http"


def test_an_rq_hand_off_is_one_trace_from_the_run_to_the_worker_s_task(
    tmp_path: Path, otel: InMemory, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redis
    import rq

    from tests.support.handoff import harness
    from tickwork_handoff.reporter import ProcessReporter
    from tickwork_rq import worker

    queue = harness.queue_name()
    config = _config(tmp_path, f'\n[executor.rq]\nurl = "{redis_url}"\nqueue = "{queue}"\n')
    monkeypatch.setenv("HANDOFF_LOG", str(tmp_path / "executions.jsonl"))
    with tickwork.connect(config) as admin:
        admin.store(write=True)
        admin.add("queued", "0 3 * * *", "tests.support.handoff.rq_jobs:work", executor="rq", misfire="once")
        admin.trigger("queued")
    handoffs_before = _count(otel, "tickwork_handoffs", executor="rq", status="submitted")
    node = _node(config)
    try:
        node.engine.tick()

        def handed_off() -> bool:
            node.engine.tick()
            return len(otel.finished("tickwork.run")) == 1

        harness.wait_until(handed_off, 30, "the hand-off to end")
    finally:
        node.shutdown()
    # The worker side, as `rq worker -w tickwork_rq.worker.SimpleWorker` runs it, reporting to
    # this test's configuration (whose [otel] table turns its spans on).
    monkeypatch.setattr(worker, "reporter", ProcessReporter(str(config)))
    connection = redis.Redis.from_url(redis_url)
    try:
        rq_worker = worker.SimpleWorker([rq.Queue(queue, connection=connection)], connection=connection)
        rq_worker.work(burst=True)
    finally:
        connection.close()
        tracing.install_task_tracer(None)  # this process is no worker for the tests after this one
    with tickwork.connect(config) as admin:
        (run,) = admin.history()
    assert run.status is RunStatus.SUCCEEDED

    (run_span,) = otel.finished("tickwork.run")
    (publish,) = otel.finished("tickwork.publish")
    (task,) = otel.finished("tickwork.task")
    assert publish.kind is SpanKind.PRODUCER and task.kind is SpanKind.CONSUMER
    assert run_span.context.trace_id == publish.context.trace_id == task.context.trace_id
    assert publish.parent is not None and publish.parent.span_id == run_span.context.span_id
    assert task.parent is not None and task.parent.span_id == publish.context.span_id
    assert task.attributes["tickwork.run_id"] == run.id == run_span.attributes["tickwork.run_id"]
    assert task.attributes["messaging.system"] == "rq"
    assert run_span.attributes["tickwork.status"] == "submitted"
    assert _count(otel, "tickwork_handoffs", executor="rq", status="submitted") - handoffs_before == 1

"""The otel plugin's own work per fire, without a store or an engine (one thread, so that the
numbers hold on a loaded machine better than a whole node's)::

    python benchmarks/otel_path.py

* without ``[otel]``: what every node pays: the plugin's hook (one dict lookup per batch of runs)
  and the executors' questions to ``tickwork.plugin.tracing`` (one dict lookup per run);
* with ``[otel]``: a run span started and ended (attributes, end time) and the metrics of its end,
  through the SDK with no exporter (an exporter's share is paid on the SDK's export thread).

Prints CPU nanoseconds of this thread (the best of five repetitions).
"""

from __future__ import annotations

import time
import timeit
from datetime import UTC, datetime, timedelta

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider

from tickwork.plugin import tracing
from tickwork.plugin.runcontext import RunContext
from tickwork.structures import Claim, Finish, JobCall, Outcome, RunStatus, ScheduleSpec
from tickwork_otel import plugin
from tickwork_otel.instruments import OtelMetrics
from tickwork_otel.spans import RunSpans

BATCH = 100
T0 = datetime(2026, 5, 4, 9, tzinfo=UTC)


def best(stmt: object, number: int) -> float:
    # The thread's CPU time, not the wall clock: other processes of a loaded machine do not count.
    times = timeit.repeat(stmt, number=number, repeat=5, timer=time.thread_time)  # type: ignore[arg-type]
    return min(times) / number * 1e9


def main() -> None:
    spec = ScheduleSpec(name="report", trigger_kind="cron", expression="0 9 * * *", target="jobs:report")
    calls = [
        JobCall(run_id=i, schedule="report", scheduled_for=T0, target="jobs:report", arguments={}, timeout=60.0,
                node_id="n1")
        for i in range(BATCH)
    ]  # fmt: skip
    finishes = [
        Finish(
            Claim(schedule_id=1, spec=spec, scheduled_for=T0, claim_seq=1, claimed_at=T0, run_id=i),
            Outcome(RunStatus.SUCCEEDED),
            None,
            finished_at=T0 + timedelta(seconds=1),
            started_at=T0,
        )
        for i in range(BATCH)
    ]
    context = RunContext.of(calls[0])

    headers = {"tickwork_run_id": "1"}

    def executor_questions() -> None:
        with tracing.publishing(calls[0], "celery") as trace:
            headers.update(trace)  # what a hand-off executor does with them
        tracing.handed_off(calls[0], "celery", "submitted")
        tracing.trace_headers(calls[0])
        with tracing.task_span(context, {}.get, "celery"):
            pass

    hooks = best(lambda: plugin.tickwork_runs_finished("n1", finishes), 200_000)
    print(f"without [otel], per batch of {BATCH}: the plugin's hook {hooks:.0f} ns")
    print(f"without [otel], per run: the executors' questions {best(executor_questions, 200_000):.0f} ns")

    spans = RunSpans(TracerProvider(), "n1")
    metrics = OtelMetrics(MeterProvider())

    def recorded() -> None:
        spans.started(calls)
        spans.finished(finishes)

    def counted() -> None:
        metrics.runs_finished(finishes)

    span_ns, metric_ns = best(recorded, 200) / BATCH, best(counted, 200) / BATCH
    print(f"with [otel], per run: its span {span_ns:.0f} ns, its metrics {metric_ns:.0f} ns")


if __name__ == "__main__":
    main()

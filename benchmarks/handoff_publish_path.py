"""The ``celery`` executor's publish path alone, against kombu's plainest confirmed publish, in one
process (docs/benchmarks.md, "Hand-off in batches"): no node, no store, no worker.

    python benchmarks/handoff_publish_path.py --messages 2500 --rounds 3

Each round: the broker's raw rate (tickwork_bench.handoffraw: kombu ``Producer.publish`` in a loop
on a confirm-mode channel, the confirmations read at the end), then ``CeleryExecutor.publish`` of
the same number of messages as one batch (each message built as the executor builds it, the
batch's confirmations collected once), both to queues of their own on the local RabbitMQ, deleted
after; the connection is made and the queue declared by a first batch of 100 that is not timed.
Prints both rates, their ratio and the executor's CPU time per message (the publishing thread's
own work, which the machine's load does not stretch as it stretches wall time), with the load
average. Run it with another tree first on ``PYTHONPATH`` to measure that tree's executor.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from datetime import UTC, datetime

from tickwork.structures import JobCall
from tickwork_bench.handoffraw import raw_publish
from tickwork_celery.executor import CeleryExecutor
from tickwork_handoff.executor import Message
from tickwork_handoff.identity import headers, message_id_of

BROKER = "amqp://guest:guest@127.0.0.1:5672//"


def executor_rate(messages: int) -> tuple[float, float]:
    """Messages per second of one timed batch, and CPU microseconds per message."""
    os.environ["TICKWORK_BENCH_BROKER"] = BROKER
    queue = f"tickwork-bench-path-{uuid.uuid4().hex[:10]}"
    executor = CeleryExecutor(app="tickwork_bench.handoffapp:app", queue=queue)
    executor.connect()
    due = datetime.now(UTC)

    def batch(count: int, attempt: int) -> list[Message]:
        calls = [
            JobCall(
                run_id=k,
                schedule=f"s{k}",
                scheduled_for=due,
                target="tickwork_bench.fire",
                arguments={},
                timeout=60,
                attempt=attempt,
                node_id="bench",
            )
            for k in range(count)
        ]
        return [Message(call, message_id_of(call), headers(call)) for call in calls]

    try:
        executor.publish(batch(100, 1))
        timed = batch(messages, 2)
        started, cpu = time.perf_counter(), time.thread_time()
        results = executor.publish(timed)
        cpu, seconds = time.thread_time() - cpu, time.perf_counter() - started
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            raise SystemExit(f"{len(failed)} messages failed: {failed[0]}")
        return messages / seconds, 1e6 * cpu / messages
    finally:
        from kombu.connection import Connection

        with Connection(BROKER) as connection:  # type: ignore[no-untyped-call]
            connection.channel().queue_delete(queue)
        executor.disconnect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2500)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import tickwork_celery

    print(f"executor from {tickwork_celery.__file__}")
    print("| round | load | raw kombu publish | celery executor batch | executor / raw | executor CPU per message |")
    print("|---|---|---|---|---|---|")
    for k in range(1, args.rounds + 1):
        load = os.getloadavg()[0]
        raw = raw_publish(BROKER, args.messages)["per_s"]
        ours, cpu = executor_rate(args.messages)
        print(f"| {k} | {load:.1f} | {raw:,.0f}/s | {ours:,.0f}/s | {ours / raw:.2f} | {cpu:.0f} µs |", flush=True)


if __name__ == "__main__":
    main()

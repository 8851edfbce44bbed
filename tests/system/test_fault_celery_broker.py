"""A RabbitMQ outage under the ``celery`` executor (issue #40, "not yet tried from outside"): a
tickwork node hands three every-second schedules to a real ``celery worker``, and the broker is
cut off from both for 5 s, while the worker is in the middle of a task it acknowledges late (so
RabbitMQ requeues it and delivers it again once the worker is back).

The existing outage scenario (tests/support/handoff/scenarios.py ``broker_outage``) stops a throwaway
*Redis* for the Celery, RQ and Dramatiq executors and checks the node stays up, the refused
publishes are failed attempts and every schedule runs again after; it does not look for a fire
run twice or for a fire time left without a row. This test is the RabbitMQ case, with those checks.

The outage is a cut of a TCP proxy between the clients (node and worker) and the session's
RabbitMQ (tests/support/tcp_proxy.py), not a throwaway ``rabbitmq-server`` stopped and started: a
throwaway one takes about 10 s to boot and 6 s to boot again here (and more on a loaded CI
machine), which would more than double the test. A cut does to the clients what a broker crash
does: their connections close, new ones are refused, and RabbitMQ requeues what the worker held
unacknowledged. The broker's own state survives it (the durable queue and the messages it
confirmed), as it survives a RabbitMQ restart; a broker that loses confirmed messages is not
tried here.

The worker runs the prefork pool (Celery's default). With the threads pool, which the other
Celery tests use, this outage sometimes left the worker stuck after it reconnected (2 runs in about
15, Celery 5.7.0 / kombu 5.7.0 / py-amqp 5.4.2, RabbitMQ 3.10): it ran the messages it got, but
their acknowledgements never reached RabbitMQ (``rabbitmqctl list_queues``: 6 unacknowledged,
i.e. the worker's whole prefetch window, 7 ready, 1 consumer), so nothing more was delivered. The
node went on handing off and recording (``submitted``, then ``timed_out`` after report_timeout,
``skipped`` meanwhile); the stuck worker is Celery's matter and not this test's subject.

Judged from the worker's own record of each execution (tests/support/handoff/jobs.py) and the history:

* nothing lost: every fire time of each schedule, from before the outage to after it, has a row,
  and every row ended (``succeeded``, or ``failed``/``skipped``/``timed_out`` with its reason);
* nothing twice: message ids and (schedule, fire time) are unique among the executions, each
  execution is its row's fire (the id is uuid5 of the fire), and a ``succeeded`` row ran once;
  the task cut off mid-way ran once, its redelivery refused;
* the outage failed publishes (``not handed off: ...``) and the node kept running; after it every
  schedule is handed off and run again.
"""

from __future__ import annotations

import collections
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support.handoff import harness, scenarios
from tests.support.handoff.cluster import Queue
from tests.support.servers.configs import ConfigFor
from tests.support.tcp_proxy import TcpProxy
from tickwork.structures import RunStatus
from tickwork_handoff.identity import message_id

pytestmark = pytest.mark.slow

APP = "tests.support.handoff.celery_app:app"
SCHEDULES = ("w0", "w1", "s0")
#: ``s0`` runs tests/support/handoff/jobs.py ``slow`` (``acks_late``) this long: most of each second, so
#: the cut can be made while one runs.
SLOW_S = 0.6
#: A slow task cut off must have started this recently: it is still running, unacknowledged,
#: when its connection is closed a moment later.
FRESH_S = 0.3
OUTAGE_S = 5.0
#: Seconds of steady hand-offs before the cut.
BEFORE_S = 2.0
#: Fires of each schedule that must have run after the outage before the node is stopped.
RUNS_AFTER = 2
#: Guards against a hang (a worker that never comes back); not timing assertions.
WAIT_S = 60.0


def through(proxy: TcpProxy, url: str) -> str:
    """``url`` with its host and port replaced by the proxy's."""
    parts = urlsplit(url)
    credentials = parts.netloc.rpartition("@")[0]
    netloc = f"{credentials}@127.0.0.1:{proxy.port}" if credentials else f"127.0.0.1:{proxy.port}"
    return urlunsplit(parts._replace(netloc=netloc))


def celery_queue(broker_url: str) -> Queue:
    """A fresh queue of the test app on ``broker_url``, one worker (prefork pool, see the module's doc)."""
    queue = harness.queue_name()

    def workers(env: dict[str, str], logs: Path) -> list[subprocess.Popen[bytes]]:
        return [harness.celery_worker(queue, env, logs / "worker.log", pool="prefork", concurrency=3)]

    return Queue("celery", {"app": APP, "queue": queue}, "handoff.work", "handoff.boom", workers,
                 {"HANDOFF_BROKER": broker_url}, "handoff.slow")  # fmt: skip


def just_started(log: Path) -> dict[str, Any] | None:
    """The start of a slow execution begun within the last :data:`FRESH_S` and not ended, if any."""
    lines = harness.executions(log)
    ended = {e["message_id"] for e in lines if e.get("phase") == "end"}
    since = time.time() - FRESH_S
    return next(
        (e for e in lines if e.get("phase") == "start" and e["message_id"] not in ended and e["at"] >= since), None
    )


def whole_second(moment: datetime) -> datetime:
    return moment.replace(microsecond=0)


def test_a_rabbitmq_outage_loses_no_fire_and_hands_none_off_twice(
    amqp_url: str, tmp_path: Path, config_for: ConfigFor
) -> None:
    parts = urlsplit(amqp_url)
    proxy = TcpProxy(parts.hostname or "127.0.0.1", parts.port or 5672).start()
    store = None
    try:
        queue = celery_queue(through(proxy, amqp_url))
        store_config = config_for("postgres", migrated=True)
        # A lost message would block its schedule for report_timeout: short enough to show up
        # as timed_out within the test rather than as a hang.
        config, log, env = scenarios.single_node(
            tmp_path, store_config.store, queue, report_timeout=8, publish_timeout=2
        )
        with harness.admin(config) as admin:
            admin.add("w0", "* * * * * *", queue.work, executor=queue.executor, args={"n": 0})
            admin.add("w1", "* * * * * *", queue.work, executor=queue.executor, args={"n": 1})
            admin.add("s0", "* * * * * *", queue.slow, executor=queue.executor, args={"seconds": SLOW_S})
        store = store_config.build_store()
        store.open()
        # The node first: it starts while the worker does (a publish before the worker is ready
        # waits in the queue).
        node = harness.start_node(config, 600, env, tmp_path / "n1.log")
        workers: list[subprocess.Popen[bytes]] = []
        try:
            workers = queue.start_workers(env, tmp_path)

            def ran_since(moment: datetime | None) -> set[str]:
                return {
                    r.schedule
                    for r in harness.history(store)
                    if r.status is RunStatus.SUCCEEDED and (moment is None or r.scheduled_for > moment)
                }

            harness.wait_until(lambda: ran_since(None) == set(SCHEDULES), WAIT_S, "every schedule to run once")
            up = store.now()
            time.sleep(BEFORE_S)
            # While the worker runs s0's task: its message is unacknowledged (acks_late), so the
            # broker requeues it when the worker's connection goes.
            cut_off: dict[str, Any] | None = None

            def started() -> bool:
                nonlocal cut_off
                cut_off = just_started(log)
                return cut_off is not None

            harness.wait_until(started, WAIT_S, "a slow task to start")
            proxy.cut()
            down = store.now()
            time.sleep(OUTAGE_S)
            assert node.poll() is None, "the node stopped during the broker outage"
            proxy.restore()
            restored = store.now()
            # The worker's reconnection backs off while the broker is away: wait for it, not a guess.
            after = restored + timedelta(seconds=RUNS_AFTER)
            harness.wait_until(
                lambda: node.poll() is not None or ran_since(after) == set(SCHEDULES),
                WAIT_S,
                "every schedule to be handed off and run after the outage",
            )
            assert node.poll() is None, "the node stopped after the broker outage"
            stopped = store.now()
            harness.stop(node)
            assert node.returncode == 0
            rows = harness.settled(store)
            # RabbitMQ requeued the message cut off mid-task; the worker, back, got it again.
            assert cut_off is not None
            refusal = f"not running s0 scheduled for {cut_off['scheduled_for']}"
            worker_log = tmp_path / "worker.log"
            harness.wait_until(lambda: refusal in worker_log.read_text(), WAIT_S, "the redelivery to be refused")
        finally:
            harness.kill(node)
            for worker in workers:
                harness.stop(worker)
    finally:
        proxy.close()
        if store is not None:
            store.close()
    # One line per execution (a slow task also logs its end).
    done = [e for e in harness.executions(log) if e.get("phase") in (None, "start")]
    logs = harness.tails(sorted(tmp_path.glob("*.log")))

    # Nothing twice: by the message id the worker saw, and by the fire it logged.
    ids = collections.Counter(e["message_id"] for e in done)
    assert [i for i, n in ids.items() if n > 1] == [], logs
    fires = collections.Counter((e["schedule"], e["scheduled_for"]) for e in done)
    assert [f for f, n in fires.items() if n > 1] == [], logs
    by_id = {r.id: r for r in rows}
    for e in done:
        run = by_id[e["run_id"]]
        assert e["message_id"] == message_id(run.schedule, run.scheduled_for, run.attempt), (e, run)
        assert (e["schedule"], e["scheduled_for"]) == (run.schedule, run.scheduled_for.isoformat())
    per_fire = collections.Counter((r.schedule, r.scheduled_for, r.attempt) for r in rows)
    assert [f for f, n in per_fire.items() if n > 1] == []

    # Every row ended, and one that did not succeed says why; a succeeded one ran (once, above),
    # one whose publish failed or was skipped never reached a worker.
    executed = set(fires)
    for r in rows:
        key = (r.schedule, r.scheduled_for.isoformat())
        if r.status is RunStatus.SUCCEEDED:
            assert key in executed, (r, logs)
        else:
            assert r.status in (RunStatus.FAILED, RunStatus.SKIPPED, RunStatus.TIMED_OUT), r
            assert r.error, r
            if r.status is RunStatus.SKIPPED or (r.error or "").startswith("not handed off: "):
                assert key not in executed, (r, logs)

    # Nothing lost: each fire time from before the cut to after the outage has a row.
    lo, hi = whole_second(up), whole_second(stopped) - timedelta(seconds=1)
    recorded = {(r.schedule, r.scheduled_for) for r in rows}
    span = int((hi - lo).total_seconds())
    missing = [
        (name, at)
        for name in SCHEDULES
        for s in range(span + 1)
        if (name, at := lo + timedelta(seconds=s)) not in recorded
    ]
    assert missing == [], (missing, logs)

    # The task cut off mid-way ran once (above), its redelivery refused; its row ended with its
    # outcome, or as lost if the redelivery came before the outcome was written.
    (cut_run,) = [r for r in rows if r.id == cut_off["run_id"]]
    assert cut_run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED), cut_run

    # The outage was real: publishes failed meanwhile, with the broker's error as the reason.
    refused = [r for r in rows if (r.error or "").startswith("not handed off: ")]
    assert refused, logs
    for r in refused:
        assert down - timedelta(seconds=2) <= r.scheduled_for <= restored + timedelta(seconds=2), (r, down, restored)
    statuses = collections.Counter(r.status.value for r in rows)
    reasons = collections.Counter((r.error or "").split("\n")[0][:80] for r in rows if r.error)
    print(
        f"outage {down.time()}-{restored.time()}: {dict(statuses)}; {len(done)} executions; "
        f"cut off mid-task: {cut_run.status.value} {cut_run.error or ''}; reasons {dict(reasons)}"
    )

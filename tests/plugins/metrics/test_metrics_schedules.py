"""Per-schedule series of the metrics plugin (``[metrics] schedule_series``) on an embedded node,
parsed by prometheus_client's own parser: bounded, and the alert rules of docs/observability.md
fire for the schedules they are meant for.

A second node record ("ghost", kept fresh by the test through the store's public heartbeat) owns
half the buckets of a ``hashring`` with one owner per bucket, and never claims anything: a
schedule in its buckets is left unclaimed, as under a stalled or unreachable owner."""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

import tickwork
from tickwork.abc import Store
from tickwork.structures import Health, bucket_of
from tickwork_membership.hashring import HashRingMembership

WAIT_S = 60  # guard against a hung node; not a timing assertion
BOUND = 3


def wait_for(what: str, condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


Samples = dict[str, list[tuple[dict[str, str], float]]]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        text = response.read().decode()
    found: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def by_schedule(samples: Samples, name: str) -> dict[str, float]:
    return {labels["schedule"]: value for labels, value in samples.get(name, [])}


def health_states(samples: Samples) -> dict[str, str]:
    return {labels["schedule"]: labels["state"] for labels, v in samples["tickwork_schedule_health"] if v == 1}


def owned_by(node: str, prefix: str) -> str:
    """A schedule name (starting with ``prefix``) whose bucket ``node`` owns alone."""
    owned = set(HashRingMembership(owners=1).buckets_for(node, ["ghost", "watcher"]) or [])
    return next(f"{prefix}{i}" for i in range(10_000) if bucket_of(f"{prefix}{i}") in owned)


@contextlib.contextmanager
def ghost_beating(store: Store) -> Iterator[None]:
    """Heartbeats of a node record "ghost" that claims nothing, while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.is_set():
            store.heartbeat("ghost")
            stop.wait(0.3)

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(5)


def test_series_are_bounded_and_the_alerts_fire_for_the_right_schedules(tmp_path: Path) -> None:
    from tickwork_metrics.plugin import port_of

    flag = tmp_path / "broken"
    flag.write_text("")
    ok, stranded = owned_by("watcher", "a-ok-"), owned_by("ghost", "c-stranded-")
    config = {
        "store": {"path": str(tmp_path / "m.db")},
        "scheduler": {"node_id": "watcher", "lookahead": 0, "steal_after": 86_400},
        "membership": {"plugin": "hashring", "owners": 1, "heartbeat_interval": 0.2, "node_ttl": 30},
        "metrics": {
            "port": 0,
            "schedule_series": BOUND,
            "schedule_refresh": 1,
        },
        "health": {"overdue_margin": 1, "max_failures": 3},
    }
    with tickwork.connect(config) as admin:
        admin.store(write=True)
        admin.add(ok, "1s", "tests.support.health_jobs:fine")
        admin.add(
            owned_by("watcher", "b-failing-"), "1s", "tests.support.health_jobs:fails_while", args={"flag": str(flag)}
        )
        admin.add(stranded, "1s", "tests.support.health_jobs:fine")
        admin.add("z-beyond-the-bound", "1h", "tests.support.health_jobs:fine")
        failing = next(i.name for i in admin.list() if i.name.startswith("b-failing-"))
        node = tickwork.Node.from_config(config)
        with node:
            port = port_of("watcher")
            assert port is not None
            # Alone, the watcher owns every bucket: the stranded schedule runs too.
            wait_for(
                "a success of every schedule that can succeed",
                lambda: (
                    set(by_schedule(scrape(port), "tickwork_schedule_last_success_timestamp_seconds")) == {ok, stranded}
                ),
            )
            # Now its bucket belongs to a node that never claims.
            with ghost_beating(admin.store(write=True)):
                wait_for(
                    "the stranded schedule to be overdue", lambda: health_states(scrape(port))[stranded] == "overdue"
                )
                wait_for("three failures in a row", lambda: health_states(scrape(port))[failing] == "failing")
                # Past the dead-man threshold of the example rule (5s here) for the stranded one only.
                wait_for(
                    "the stranded schedule's last success to age",
                    lambda: (
                        time.time()
                        - by_schedule(scrape(port), "tickwork_schedule_last_success_timestamp_seconds")[stranded]
                        > 5
                    ),
                )
                samples = scrape(port)
                scraped_at = time.time()

    # The bound: three schedules (the first by name) have series, the fourth none.
    for name in (
        "tickwork_schedule_consecutive_failures",
        "tickwork_schedule_health",
    ):
        assert {labels["schedule"] for labels, _ in samples[name]} == {ok, failing, stranded}
    assert samples["tickwork_schedule_series_left_out"] == [({}, 1.0)]
    assert len(samples["tickwork_schedule_health"]) == BOUND * len(Health)  # one series per state

    # The example rules of docs/observability.md, evaluated on the scraped values.
    last_success = by_schedule(samples, "tickwork_schedule_last_success_timestamp_seconds")
    dead_mans_switch = {name for name, at in last_success.items() if scraped_at - at > 5}
    assert dead_mans_switch == {stranded}
    overdue = {
        labels["schedule"]
        for labels, value in samples["tickwork_schedule_health"]
        if labels["state"] == "overdue" and value == 1
    }
    assert overdue == {stranded}
    failures = by_schedule(samples, "tickwork_schedule_consecutive_failures")
    assert {name for name, n in failures.items() if n >= 3} == {failing}
    assert failing not in last_success  # it never succeeded: absent, not zero


def test_without_schedule_series_there_is_no_schedule_label(tmp_path: Path) -> None:
    from tickwork_metrics.plugin import port_of

    config = {"store": {"path": str(tmp_path / "m.db")}, "metrics": {"port": 0}}
    node = tickwork.Node.from_config(config, node_id="plain")
    with node:
        with tickwork.connect(config) as admin:
            admin.add("one", "1h", "tests.support.health_jobs:fine")
        port = port_of("plain")
        assert port is not None
        samples = scrape(port)
    assert not any(name.startswith("tickwork_schedule_") for name in samples)
    assert not any("schedule" in labels for values in samples.values() for labels, _ in values)

"""``tickwork bench`` options: the suites' defaults and the argument parser, importable without
the harness (``tickwork --help`` builds every command's parser)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from tickwork.config import SchedulerConfig
from tickwork.errors import TickworkError
from tickwork_handoff.settings import DEFAULT_THREADS

DEFAULT_PG_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
DEFAULT_MYSQL_URL = "mysql://root@127.0.0.1:3306/mysql"
DEFAULT_BROKER = "amqp://guest:guest@127.0.0.1:5672//"
EXIT_FAILED = 1
EXIT_USAGE = 2


@dataclass(frozen=True)
class Profile:
    """Defaults of a suite; every one can be overridden on the command line."""

    stores: str
    claims: str
    memberships: str
    nodes: str
    workloads: str
    schedules: int
    steady_schedules: int
    steady_seconds: float


#: The default suite (about 5 minutes on 2 cores) and ``--quick`` (under a minute).
FULL = Profile(
    stores="sqlite,postgres",
    claims="skip-locked,optimistic",
    memberships="hashring,all",
    nodes="1,4",
    workloads="burst,steady",
    schedules=10_000,
    steady_schedules=1_000,
    steady_seconds=3.0,
)
QUICK = Profile(
    stores="sqlite,postgres",
    claims="default",
    memberships="all",
    nodes="1,2",
    workloads="burst,steady",
    schedules=2_000,
    steady_schedules=200,
    steady_seconds=2.0,
)


class UsageError(TickworkError):
    """An invalid option; the message names it."""


def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``bench`` options to ``parser``."""
    sel = parser.add_argument_group("what to measure (comma-separated lists)")
    sel.add_argument("--store", help=f"sqlite, postgres, mysql (default {FULL.stores})")
    sel.add_argument(
        "--claim",
        help=f"claim strategies, 'all', or 'default' (each store's default); each store runs those it supports "
        f"(default {FULL.claims})",
    )
    sel.add_argument(
        "--membership",
        help=f"registered memberships for K > 1; K = 1 always uses single (default {FULL.memberships})",
    )
    sel.add_argument("--nodes", help=f"node counts K (default {FULL.nodes})")
    sel.add_argument(
        "--workload",
        help=f"burst (all due at once), steady (all due every second), spread (the steady rate spread evenly "
        f"over each second), sync (node start with --schedules declared jobs, against their import time), "
        f"handoff (--schedules fires due at one minute handed to a task queue's workers, alone; see the "
        f"hand-off options), tenants (--schedules due at once in namespace a beside --steady-schedules every-second "
        f"schedules of namespace b for at least --steady-seconds: b's lag while a drains) (default {FULL.workloads})",
    )
    sel.add_argument(
        "--schedules",
        type=_positive_int,
        help=f"burst: schedules due at once; sync: jobs declared (default {FULL.schedules})",
    )
    sel.add_argument(
        "--stored",
        type=_positive_int,
        default=0,
        help="schedules stored in all; the ones beyond those due are not due for hours (default: only the due ones; "
        "not for sync)",
    )
    sel.add_argument(
        "--steady-schedules",
        type=_positive_int,
        help=f"steady/spread: schedules each firing every second (default {FULL.steady_schedules})",
    )
    sel.add_argument(
        "--steady-seconds",
        type=_positive_float,
        help=f"steady/spread: seconds of firing (default {FULL.steady_seconds:g})",
    )
    sel.add_argument("--no-raw", action="store_true", help="skip the bare-driver ceiling cells")
    sel.add_argument(
        "--rounds",
        type=_positive_int,
        default=1,
        help="run every cell this many times, each round in the opposite order of the one before; ratios compare "
        "cells of the same round, and a second table gives each number's median and range (default 1)",
    )
    sel.add_argument("--quick", action="store_true", help="a small suite that takes under a minute")

    how = parser.add_argument_group("how")
    how.add_argument(
        "--pg-url",
        default=DEFAULT_PG_URL,
        help=f"admin URL; a scratch database is created there and dropped afterwards (default {DEFAULT_PG_URL})",
    )
    how.add_argument(
        "--mysql-url",
        default=DEFAULT_MYSQL_URL,
        help=f"MySQL / MariaDB admin URL for mysql cells; a scratch database is created there and dropped "
        f"afterwards (default {DEFAULT_MYSQL_URL})",
    )
    how.add_argument("--batch-size", type=_positive_int, default=100, help="claim batch size (default 100)")
    # The nodes' [scheduler] keys: default, range and meaning from their declarations.
    for key, note in (
        ("lookahead", "Steady and spread cells only: burst cells claim when due (they measure draining a backlog)."),
        ("end_batch_window", ""),
        ("start_batch_window", ""),
        ("steal_after", "Only hashring cells."),
    ):
        setting = SchedulerConfig.settings()[key]
        meaning = f"{setting.help} {note}".strip().replace("`", "").replace("%", "%%")
        how.add_argument(
            f"--{key.replace('_', '-')}",
            type=float,
            default=setting.default,
            help=f"the nodes' [scheduler] {key} ({setting.type_text()}; default {setting.default:g}, the node "
            f"default): {meaning}",
        )
    in_flight = SchedulerConfig.settings()["max_in_flight"]
    how.add_argument(
        "--max-in-flight",
        type=_positive_int,
        default=in_flight.default,
        help=f"the nodes' [scheduler] max_in_flight (default {in_flight.default}, the node default): "
        f"{in_flight.help} It bounds the fires a node claims ahead too.",
    )
    how.add_argument("--workers", type=_positive_int, default=8, help="local executor threads per node (default 8)")
    how.add_argument(
        "--settle",
        type=_positive_float,
        default=1.5,
        help="seconds between all nodes ready and arming when K > 1, whatever the membership (default 1.5: every "
        "node has heartbeated once more, so hash rings agree; cells compared with each other start alike)",
    )
    how.add_argument(
        "--stale-stats",
        action="store_true",
        help="do not ANALYZE after making the schedules due (claims plan on statistics from before)",
    )
    how.add_argument("--profile", metavar="DIR", type=Path, help="py-spy record node 1 of every cell into DIR")
    how.add_argument(
        "--node-import",
        action="append",
        default=[],
        metavar="MODULE",
        help="import MODULE in every node before it starts (try an engine/store change; needs PYTHONPATH)",
    )
    how.add_argument("--keep-logs", action="store_true", help="keep the node logs (kept anyway when a cell fails)")
    how.add_argument(
        "--metrics",
        action="store_true",
        help="run every node with the metrics plugin on ([metrics] port = 0: a free port each), to measure "
        "its cost against a run without (needs tickwork[metrics])",
    )

    hand = parser.add_argument_group("hand-off (--workload handoff)")
    hand.add_argument(
        "--executor",
        choices=("celery", "rq", "dramatiq"),
        default="celery",
        help="the hand-off executor the nodes use; real workers of that queue run the tasks (default celery)",
    )
    hand.add_argument(
        "--broker",
        default=DEFAULT_BROKER,
        help=f"amqp://... or redis://.../N (rq: redis only); a queue of the run's own is used and deleted at the "
        f"end (default {DEFAULT_BROKER})",
    )
    hand.add_argument(
        "--beats",
        type=int,
        choices=(0, 1, 2),
        default=0,
        help="Celery beat processes firing the same schedules as crontab() entries in the same run, on a queue "
        "and worker of their own (celery only; 2 shows beat's duplicates) (default 0)",
    )
    hand.add_argument(
        "--worker-concurrency",
        type=_positive_int,
        help="celery worker threads (default 16), rq worker processes (4), dramatiq worker threads (8); each "
        "queue (tickwork's, beat's) gets its own worker",
    )
    hand.add_argument(
        "--publish-threads",
        type=_positive_int,
        default=DEFAULT_THREADS,
        help="the hand-off executor's publishing threads per node ([executor.NAME] threads; "
        f"default {DEFAULT_THREADS}, its default)",
    )
    hand.add_argument(
        "--handoff-timeout",
        type=_positive_float,
        help="seconds after the due time by which every task must have run (default max(120, schedules / 20))",
    )

    out = parser.add_argument_group("output")
    out.add_argument("--out", type=Path, metavar="FILE", help="write the results as JSON")
    out.add_argument("--chart", type=Path, metavar="FILE", help="write a PNG chart (needs matplotlib)")
    out.add_argument("--no-progress", action="store_true", help="no progress line on stderr")

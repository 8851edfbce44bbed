"""Runs, failures and duration over time as a server-rendered SVG (templates/_chart.html): the
geometry is computed here, the template only draws it. No JavaScript, nothing from a CDN.

Runs are counted by their scheduled time in equal buckets; each bar is the runs of its bucket,
its red top part the failed or timed-out ones; the line is the longest duration of the bucket's
finished runs, on its own scale (right axis). Skipped fire times are not runs and are not drawn.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from tickwork.structures import FAILING, RunRecord, RunStatus

from .timefmt import span, utc_text

# The SVG is stretched to its box (preserveAspectRatio="none"), so it holds no text: the scale
# and the times are HTML around it, and lines keep their width (vector-effect: non-scaling-stroke).
WIDTH = 600
HEIGHT = 120
LEFT, RIGHT, TOP, BOTTOM = 0, 0, 6, 1
BUCKETS = 24
#: The shortest window a chart covers, so a few runs a minute apart are not drawn as wide bars.
MIN_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    y_ok: float
    ok: float  # height of the succeeded (and other non-failed) part
    y_failed: float
    failed: float  # height of the failed part, on top
    title: str


@dataclass(frozen=True)
class Chart:
    """What the template draws; ``runs``/``failures`` are the totals over the window."""

    start: datetime
    end: datetime
    bars: list[Bar]
    line: str  # SVG polyline points of the longest durations, "" when nothing finished
    marks: list[tuple[float, float, float, str]]  # (x1, x2, y, title): the longest run of each bucket
    most_runs: int
    longest: float
    runs: int
    failures: int
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = RIGHT
    top: int = TOP
    bottom: int = BOTTOM

    @property
    def base(self) -> float:
        return self.height - self.bottom

    @property
    def plot_right(self) -> float:
        return self.width - self.right

    @property
    def longest_text(self) -> str:
        return _seconds_text(self.longest)

    @property
    def start_text(self) -> str:
        return utc_text(self.start)

    @property
    def end_text(self) -> str:
        return utc_text(self.end)

    @property
    def summary(self) -> str:
        return (
            f"{self.runs} runs, {self.failures} failed, from {self.start_text} to {self.end_text}; "
            f"longest run {self.longest_text}"
        )


def _seconds_text(seconds: float) -> str:
    return f"{seconds:.2f} s" if seconds < 10 else span(seconds)


def window_of(records: list[RunRecord], now: datetime) -> tuple[datetime, datetime]:
    """From the earliest of ``records`` (at least :data:`MIN_WINDOW` back) to ``now``."""
    earliest = min((r.scheduled_for for r in records), default=now)
    return min(earliest, now - MIN_WINDOW), now


def chart(records: Iterable[RunRecord], start: datetime, end: datetime, buckets: int = BUCKETS) -> Chart:
    """The chart of the runs scheduled in ``[start, end]``, in ``buckets`` equal buckets."""
    size = (end - start) / buckets
    counts = [[0, 0] for _ in range(buckets)]  # [not failed, failed]
    longest: list[float | None] = [None] * buckets
    for record in records:
        if record.status is RunStatus.SKIPPED or not start <= record.scheduled_for <= end:
            continue
        index = min(int((record.scheduled_for - start) / size), buckets - 1)
        counts[index][record.status in FAILING] += 1
        if record.started_at is not None and record.finished_at is not None:
            took = max(0.0, (record.finished_at - record.started_at).total_seconds())
            current = longest[index]
            longest[index] = took if current is None else max(current, took)
    most = max((ok + failed for ok, failed in counts), default=0)
    slowest = max((t for t in longest if t is not None), default=0.0)
    plot_width = WIDTH - LEFT - RIGHT
    plot_height = HEIGHT - TOP - BOTTOM
    step = plot_width / buckets
    base = HEIGHT - BOTTOM
    bars: list[Bar] = []
    marks: list[tuple[float, float, float, str]] = []
    for i, (ok, failed) in enumerate(counts):
        x = LEFT + i * step
        begins = start + size * i
        ok_h = plot_height * ok / most if most else 0.0
        failed_h = plot_height * failed / most if most else 0.0
        title = f"{utc_text(begins)}: {ok + failed} runs, {failed} failed"
        if longest[i] is not None:
            took = longest[i] or 0.0
            y = base - (plot_height * took / slowest if slowest else 0.0)
            marks.append(
                (
                    round(x + 1, 1),
                    round(x + step - 1, 1),
                    round(y, 1),
                    f"{utc_text(begins)}: longest {_seconds_text(took)}",
                )
            )
            title += f", longest {_seconds_text(took)}"
        if ok or failed:
            bars.append(
                Bar(
                    round(x + 1, 1),
                    round(step - 2, 1),
                    round(base - ok_h, 1),
                    round(ok_h, 1),
                    round(base - ok_h - failed_h, 1),
                    round(failed_h, 1),
                    title,
                )
            )
    return Chart(
        start=start,
        end=end,
        bars=bars,
        line=" ".join(f"{(x1 + x2) / 2:g},{y}" for x1, x2, y, _ in marks),
        marks=marks,
        most_runs=most,
        longest=slowest,
        runs=sum(ok + failed for ok, failed in counts),
        failures=sum(failed for _, failed in counts),
    )

"""Regenerate ``tests/plugins/cron/data/cron_dst_golden.json`` from cronsim, the reference for Vixie
(Debian) cron's DST rule: an hour field starting with ``*`` follows the clock, any other is a fixed
time of day.

Usage (cronsim is not a tickwork dependency; install it only to regenerate)::

    .venv/bin/pip install cronsim
    .venv/bin/python tests/plugins/cron/gen_cron_dst_golden.py

For every expression, zone and DST change it records the fire times cronsim gives in the 48 hours
from local midnight the day before the change. Only expressions whose minute field does not start
with ``*`` are recorded: cronsim (like Debian cron) also counts such a minute field as a wildcard,
while tickwork decides by the hour field alone (docs/triggers.md). The tests compare the cron
trigger with the committed JSON, so CI needs no cronsim.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from zoneinfo import ZoneInfo

from cronsim import CronSim

OUT = Path(__file__).with_name("data") / "cron_dst_golden.json"
WINDOW = timedelta(hours=48)

EXPRESSIONS = [
    "0 */2 * * *",
    "30 */2 * * *",
    "0 */3 * * *",
    "15 */3 * * *",
    "0 1-23/2 * * *",
    "30 1-23/2 * * *",
    "0 0-22/2 * * *",
    "0 0-23 * * *",
    "0 * * * *",
    "45 */1 * * *",
    "30 2 * * *",
    "30 1 * * *",
    "0 1,2,3 * * *",
]

# The day before each change (local dates), spring-forward and fall-back, in two hemispheres' zones.
CHANGES = {
    "Europe/Berlin": ["2026-03-28", "2026-10-24", "2027-03-27", "2027-10-30"],
    "America/New_York": ["2026-03-07", "2026-10-31", "2027-03-13", "2027-11-06"],
}


def iso(value: datetime) -> str:
    return value.astimezone(UTC).isoformat().replace("+00:00", "Z")


def fires(expression: str, zone: str, day: str) -> tuple[datetime, list[datetime]]:
    start = datetime.fromisoformat(day).replace(tzinfo=ZoneInfo(zone))
    end = start.astimezone(UTC) + WINDOW
    found = []
    for value in CronSim(expression, start):
        if value.astimezone(UTC) > end:
            break
        found.append(value.astimezone(UTC))
    return start, found


def main() -> None:
    cases = []
    for zone, days in CHANGES.items():
        for day in days:
            for expression in EXPRESSIONS:
                start, found = fires(expression, zone, day)
                cases.append(
                    {
                        "expression": expression,
                        "tz": zone,
                        "after": iso(start),
                        "until": iso(start.astimezone(UTC) + WINDOW),
                        "fires": [iso(v) for v in found],
                    }
                )
    OUT.parent.mkdir(exist_ok=True)
    document = {"reference": f"cronsim {version('cronsim')}", "cases": cases}
    OUT.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()

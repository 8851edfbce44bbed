"""``tickwork notify test``: send a test notification to every configured destination."""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar

from tickwork.plugin import Command, CommandGroup
from tickwork.structures import Health, HealthChange, ScheduleHealth

if TYPE_CHECKING:
    from tickwork.config import Config


class NotifyTest(Command):
    help = "send a test notification to the webhook and e-mail recipients of [notify]"

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--schedule", default="tickwork-notify-test", help="schedule name the test message uses")

    def run(self, args: argparse.Namespace, config: Config) -> int:
        from .senders import Notifier, destinations
        from .settings import NotifyConfig

        settings = config.find_table(NotifyConfig)
        if settings is None:
            print(f"tickwork: error: {config.source or 'the configuration'} has no [notify] table", file=sys.stderr)
            return 1
        targets = destinations(settings)
        if not targets:
            print("tickwork: error: [notify] has neither webhook_url nor smtp_host", file=sys.stderr)
            return 1
        change = HealthChange(
            args.schedule,
            Health.HEALTHY,
            ScheduleHealth(Health.FAILING, "a test notification from `tickwork notify test`; nothing is wrong"),
            datetime.now(UTC),
        )
        failed = 0
        for name, error in Notifier(targets).deliver([change]):
            if error is None:
                print(f"sent to the {name}")
            else:
                failed += 1
                print(f"tickwork: error: sending to the {name} failed: {error}", file=sys.stderr)
        return 1 if failed else 0


class NotifyCommand(CommandGroup):
    help = "test the health notifications of [notify]"
    description = "Health-change notifications (the notify plugin)."
    actions: ClassVar[dict[str, type[Command]]] = {"test": NotifyTest}

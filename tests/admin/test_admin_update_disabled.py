"""A change to a disabled schedule is checked as a change to an enabled one (found by the stateful
test, tests/system/test_stateful_promises.py): an exclusion matching every fire was accepted while the
schedule was disabled, then `enable` refused it, and a pause of it with `until` made the node's
resume of expired pauses fail for every schedule, so none of them resumed."""

from __future__ import annotations

from pathlib import Path

import pytest

import tickwork
from tickwork.errors import TriggerError


def test_an_update_of_a_disabled_schedule_is_refused_as_it_would_be_enabled(sqlite_project: Path) -> None:
    with tickwork.connect() as admin:
        admin.add("a", "* * * * * *", "tests.support.jobs_for_tests:record")
        with pytest.raises(TriggerError, match="exclusions match"):
            admin.update("a", exclude=("*/4 * * * * *",))
        admin.disable("a")
        with pytest.raises(TriggerError, match="exclusions match"):
            admin.update("a", exclude=("*/4 * * * * *",))
        assert admin.store().get("a").spec.exclude == ()
        assert admin.enable("a").enabled

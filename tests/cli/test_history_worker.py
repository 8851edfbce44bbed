"""``tickwork history`` names the queue worker that ran a hand-off: a WORKER column after NODE
when a run listed has one (and none otherwise), ``"worker"`` in ``--json``, a ``worker:`` line in
``--show``. The rows are written through the store's public methods, as a node and a worker
write them."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest

import tickwork
from tickwork.cli import main
from tickwork.structures import Finish, Outcome, RunStatus, ScheduleSpec


def _handed_off(name: str, worker: str | None) -> int:
    """A fire of ``name`` handed off (``submitted``) and, with ``worker``, started by that worker."""
    with tickwork.connect() as admin:
        store = admin.store(write=True)
        spec = ScheduleSpec(name=name, trigger_kind="cron", expression="* * * * *", target="m:f", executor="celery")
        store.add(spec, store.now())
        (claim,) = store.claim_due("n1", limit=1, buckets=None)
        assert claim.run_id is not None
        later = store.now() + timedelta(minutes=1)
        assert store.finish("n1", [Finish(claim, Outcome(RunStatus.SUBMITTED), later)]) == [True]
        if worker is not None:
            landed = store.report_handoff(claim.run_id, RunStatus.STARTED, expect={RunStatus.SUBMITTED}, worker=worker)
            assert landed == (True, RunStatus.STARTED)
        return claim.run_id


def _history(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    capsys.readouterr()
    assert main(["history", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_history_has_no_worker_column_when_no_run_has_a_worker(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _handed_off("waiting", None)
    (row,) = _history(capsys)
    assert len(row.split("\t")) == 9  # RUN .. ERROR, as before hand-offs named their worker
    (obj,) = (json.loads(line) for line in _history(capsys, "--json"))
    assert obj["worker"] is None


def test_history_names_the_worker_of_a_handoff_in_its_column_json_and_show(
    sqlite_project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    waiting = _handed_off("waiting", None)
    ran = _handed_off("ran", "celery@alpha")
    rows = {int(line.split("\t")[0]): line.split("\t") for line in _history(capsys)}
    # WORKER comes right after NODE; a run no worker started says "-".
    assert rows[ran][5:7] == ["n1", "celery@alpha"] and rows[ran][4] == "started"
    assert rows[waiting][5:7] == ["n1", "-"] and rows[waiting][4] == "submitted"
    by_id = {o["id"]: o for o in (json.loads(line) for line in _history(capsys, "--json"))}
    assert by_id[ran]["worker"] == "celery@alpha" and by_id[waiting]["worker"] is None
    shown = _history(capsys, "--show", str(ran))
    assert [line.split() for line in shown if line.startswith("worker:")] == [["worker:", "celery@alpha"]]
    assert not any(line.startswith("worker:") for line in _history(capsys, "--show", str(waiting)))

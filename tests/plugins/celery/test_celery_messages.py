"""The ``celery`` executor builds each message from a per-batch template (tickwork_celery.messages)
instead of calling ``send_task`` per message: what reaches kombu must be what ``send_task`` gives
it for the same call (body, headers, routing, properties), and calls a template cannot stand for
(a router deciding on the arguments, a delayed call) still go through ``send_task``.

The real RabbitMQ and a real worker run these messages in test_handoff_celery.py and
test_handoff_batches.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from celery import Celery, signals
from kombu import Connection

from tickwork.structures import JobCall
from tickwork_celery.executor import CeleryExecutor
from tickwork_celery.messages import Builder, Templates
from tickwork_handoff import identity
from tickwork_handoff.executor import Message

app = Celery("handoff_messages", broker="memory://")
app.conf.task_routes = {"proj.routed": {"queue": "routed-q", "routing_key": "routed-key"}, "glob.*": "globbed"}


@app.task(name="proj.optioned", priority=5, expires=30, time_limit=10, soft_time_limit=5, ignore_result=True)
def optioned(n: int = 0) -> int:
    return n


@app.task(name="proj.routed")
def routed() -> None:
    """Routed by task_routes."""


routed_by_arguments = Celery("handoff_messages_function_route", broker="memory://")
routed_by_arguments.conf.task_routes = (
    lambda name, args, kwargs, options, task=None, **kw: {"queue": f"by-n-{kwargs.get('n', 0)}"},
)


class Recorder:
    """A producer on the memory transport whose publishes are recorded as kombu receives them."""

    def __init__(self, connection: Connection) -> None:
        self.producer: Any = app.amqp.Producer(connection.default_channel, auto_declare=False)
        self.published: list[tuple[Any, dict[str, Any]]] = []
        self.producer.publish = lambda body, **kwargs: self.published.append((body, kwargs))


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    with Connection("memory://") as connection:  # type: ignore[no-untyped-call]
        yield Recorder(connection)


def _comparable(published: tuple[Any, dict[str, Any]]) -> tuple[Any, dict[str, Any], float | None, float | None]:
    """The publish without its times of expiry (a clock reading each: compared apart), and those."""
    body, kwargs = published
    kwargs = dict(kwargs, headers=dict(kwargs["headers"]))
    expires = kwargs["headers"].pop("expires")
    expiration = kwargs.pop("expiration", None)
    at = None if expires is None else datetime.fromisoformat(expires).timestamp()
    return body, kwargs, at, expiration


CALLS = [
    ("proj.optioned", [], {}, {"priority": None, "expires": None, "queue": "q1"}),
    ("proj.optioned", [], {"n": 3}, {"queue": "q1"}),
    ("proj.routed", [], {}, {"priority": 7, "expires": 45.5}),
    ("glob.anything", [1, "x"], {"a": [1, 2]}, {}),
    ("not.registered", [], {}, {"queue": "q2", "exchange": "ex", "routing_key": "rk", "priority": 3, "expires": 60}),
    ("not.registered", [], {}, {}),
]


@pytest.mark.parametrize(("name", "args", "kwargs", "options"), CALLS)
def test_a_built_message_is_the_one_send_task_sends(
    recorder: Recorder, name: str, args: list[Any], kwargs: dict[str, Any], options: dict[str, Any]
) -> None:
    builder = Builder(app)
    assert builder.usable()
    templates = Templates(builder)
    headers = {"periodic_task_name": "s", "tickwork_run_id": "1", "from": "beat"}
    for task_id in ("id-1", "id-2"):  # the second from the batch's template made for the first
        sent_at = datetime.now(UTC).timestamp()
        app.send_task(name, args=args, kwargs=kwargs, task_id=task_id, headers=dict(headers),
                      producer=recorder.producer, retry=False, add_to_parent=False, **options)  # fmt: skip
        builder.send(recorder.producer, templates.get(name, options), task_id, args, kwargs, dict(headers), None)
        theirs, ours = (_comparable(p) for p in recorder.published[-2:])
        assert ours[:2] == theirs[:2]
        assert ours[1]["headers"]["id"] == ours[1]["headers"]["root_id"] == task_id
        assert ours[1]["headers"]["from"] == "beat"
        # Expiry: send_task reads the clock per message, a template per message too.
        if theirs[2] is None:
            assert ours[2] is None and ours[3] is None and theirs[3] is None
        else:
            assert ours[2] is not None and ours[3] is not None and theirs[3] is not None
            assert abs(ours[2] - theirs[2]) < 2.0 and ours[2] > sent_at
            assert abs(ours[3] - theirs[3]) < 2.0


def test_task_options_and_routes_reach_the_message(recorder: Recorder) -> None:
    # Not only equal to send_task's: the task's own options and the app's routes are applied.
    builder = Builder(app)
    templates = Templates(builder)
    builder.send(recorder.producer, templates.get("proj.optioned", {}), "a", [], {}, {}, None)
    builder.send(recorder.producer, templates.get("proj.routed", {}), "b", [], {}, {}, None)
    (_, optioned_kwargs), (_, routed_kwargs) = recorder.published
    assert optioned_kwargs["priority"] == 5
    assert optioned_kwargs["headers"]["timelimit"] == [10, 5]
    assert 25 < optioned_kwargs["expiration"] <= 30
    assert routed_kwargs["routing_key"] == "routed-q"  # its queue, on the default exchange


def _message(schedule: str, arguments: dict[str, Any]) -> Message:
    call = JobCall(run_id=1, schedule=schedule, scheduled_for=datetime(2026, 11, 29, tzinfo=UTC),
                   target="proj.any", arguments=arguments, timeout=5, attempt=1, node_id="n1")  # fmt: skip
    return Message(call, identity.message_id_of(call), identity.headers(call))


def test_a_router_deciding_on_the_arguments_routes_every_message_by_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tests.support.handoff.local_app.configurable", routed_by_arguments)
    assert not Builder(routed_by_arguments).usable()
    seen: dict[str, str] = {}

    def record(sender: str, headers: dict[str, Any], routing_key: str, **_: Any) -> None:
        seen[headers["tickwork_schedule"]] = routing_key

    signals.before_task_publish.connect(record, weak=False)
    executor = CeleryExecutor(app="tests.support.handoff.local_app:configurable", publish_timeout=5)
    executor.connect()
    try:
        results = executor.publish([_message("one", {"n": 1}), _message("two", {"n": 2})])
    finally:
        executor.disconnect()
        signals.before_task_publish.disconnect(record)
    assert all(isinstance(r, str) for r in results), results
    assert seen == {"one": "by-n-1", "two": "by-n-2"}


def test_a_delayed_call_is_sent_by_send_task(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[str] = []
    original = app.send_task

    def send_task(name: str, **kwargs: Any) -> Any:
        sent.append(kwargs["task_id"])
        return original(name, **kwargs)

    monkeypatch.setattr("tests.support.handoff.local_app.configurable", app)
    monkeypatch.setattr(app, "send_task", send_task)
    executor = CeleryExecutor(app="tests.support.handoff.local_app:configurable", publish_timeout=5)
    executor.connect()
    delayed = _message("later", {"args": [], "kwargs": {}, "options": {"countdown": 30}})
    plain = _message("now", {})
    try:
        results = executor.publish([delayed, plain])
    finally:
        executor.disconnect()
    assert all(isinstance(r, str) for r in results), results
    assert sent == [delayed.id]

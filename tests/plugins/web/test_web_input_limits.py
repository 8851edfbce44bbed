"""What a client sends, at its limits (issue 40, item 5): JSON nested deeper than the limit is a
400 naming the limit (not a RecursionError and a 500), on the API and in the form's arguments; a
value of the action log is capped however long the input was; a body over the limit is refused
with 413 as soon as its ``Content-Length`` says so, and a chunked one once the limit is read.

The body limits are tested against ``tickwork web`` as a real process with a raw socket (the
TestClient always sends the whole body), with a socket timeout so that a server waiting for the
rest of the body fails the test instead of hanging it."""

from __future__ import annotations

import contextlib
import html as htmllib
import json
import logging
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork_web
from tests.support.webhelpers import RECORD, TOKEN, populate, web_server, write_config
from tickwork_web.auth import Throttle
from tickwork_web.limits import MAX_DEPTH, MAX_LOGGED_NAME, MAX_LOGGED_TEXT, too_deep

AUTH = {"Authorization": f"Bearer {TOKEN}"}
WITH_ARGS = "tests.support.jobs_for_tests:with_args"
LOGGER = "tickwork.web.actions"


@pytest.fixture
def c(fresh: Path) -> Iterator[TestClient]:
    # A 500 is an answer here, not an exception in the test: the point is that none happens.
    app = tickwork_web.app(fresh, token=TOKEN)
    with TestClient(app, follow_redirects=False, raise_server_exceptions=False) as client:
        yield client


def nested(depth: int, leaf: str = '"Oslo"') -> str:
    """A JSON value of ``depth`` objects, one inside the other (``{"a":{"a":...}}``)."""
    return '{"a":' * depth + leaf + "}" * depth


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER]


# -- nesting --------------------------------------------------------------------------------------


def test_the_depth_scan_counts_containers_not_brackets_in_strings() -> None:
    assert not too_deep("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    assert too_deep("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert not too_deep('{"a": "' + "[" * 1000 + '"}')  # brackets in a string are text
    assert not too_deep('["\\"' + "{" * 1000 + '"]')  # an escaped quote does not end the string
    assert too_deep('["\\\\"' + ", [" * 100)  # an escaped backslash does
    assert not too_deep('"\\"\\"\\"' * 20_000)  # unterminated: linear, and for json.loads to refuse


def with_city(city: str, **fields: str) -> str:
    """A JSON body of ``fields`` whose ``args`` are ``{"city": CITY}`` (``city``: JSON text)."""
    return json.dumps(fields)[:-1] + ', "args": {"city": ' + city + "}}"


def deep_schedule(depth: int) -> str:
    return with_city(nested(depth), name="deep", expression="* * * * *", target=WITH_ARGS)


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("[" * 30_000 + "]" * 30_000, "a list 30,000 deep"),
        (deep_schedule(10_000), "args 10,000 deep"),
        (deep_schedule(995), "args 995 deep"),  # json.loads fails from about 990 in a worker thread
        (deep_schedule(100), "args 100 deep"),  # stored before the limit
    ],
)
def test_api_create_refuses_deep_json_with_a_400(c: TestClient, body: str, what: str) -> None:
    answer = c.post("/api/schedules", content=body, headers=AUTH)
    assert answer.status_code == 400, (what, answer.status_code, answer.text[:300])
    assert answer.json()["error"] == f"the body is JSON nested deeper than {MAX_DEPTH} levels"
    assert c.get("/api/schedules/deep").status_code == 404


def test_api_edit_refuses_deep_json_with_a_400(c: TestClient) -> None:
    for depth in (100, 995, 10_000):
        answer = c.patch("/api/schedules/late", content=with_city(nested(depth), target=WITH_ARGS), headers=AUTH)
        assert answer.status_code == 400, (depth, answer.status_code, answer.text[:300])
        assert f"deeper than {MAX_DEPTH} levels" in answer.json()["error"]
    assert c.get("/api/schedules/late").json()["target"] == RECORD  # unchanged


def test_json_at_the_depth_limit_is_stored_and_read_back(c: TestClient) -> None:
    # The body object and "args" are two levels: the city may be nested MAX_DEPTH - 2 more.
    answer = c.post("/api/schedules", content=deep_schedule(MAX_DEPTH - 2), headers=AUTH)
    assert answer.status_code == 201, answer.text
    assert c.get("/api/schedules/deep").status_code == 200
    assert c.get("/schedules/deep").status_code == 200


def test_a_number_too_long_to_convert_is_a_400(c: TestClient) -> None:
    # int() refuses over 4,300 digits with a ValueError, which json.loads lets through.
    body = json.dumps({"name": "x", "expression": "* * * * *", "target": RECORD})[:-1] + ', "retries": 9' + "9" * 5000
    answer = c.post("/api/schedules", content=body + "}", headers=AUTH)
    assert answer.status_code == 400, answer.text[:300]
    assert "not JSON" in answer.json()["error"]


def login(c: TestClient) -> str:
    assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/").text)
    assert found
    return found.group(1)


@pytest.mark.parametrize("depth", [100, 995, 10_000])
def test_the_form_refuses_deep_arguments_next_to_the_field(c: TestClient, depth: int) -> None:
    csrf = login(c)
    for do in ("preview", "save"):
        fields = {
            "name": "deep",
            "expression": "0 3 * * *",
            "target": WITH_ARGS,
            "args": '{"city": ' + nested(depth) + "}",
        }
        page = c.post("/new", data={"csrf": csrf, "enabled": "1", "do": do, **fields})
        assert page.status_code == 400, (do, page.status_code, page.text[:300])
        found = re.search(r'data-error="args">([^<]*)<', page.text)
        assert found and htmllib.unescape(found.group(1)) == f"JSON nested deeper than {MAX_DEPTH} levels"
    assert c.get("/api/schedules/deep").status_code == 404


# -- the action log -------------------------------------------------------------------------------


def assert_capped(logged: list[str], length: int) -> None:
    """Every line is short, and the one about the long input says how long it was."""
    assert logged
    longest = MAX_LOGGED_NAME + 2 * MAX_LOGGED_TEXT + 400  # the name, the caller and the reason, capped
    assert all(len(m) < longest for m in logged), [len(m) for m in logged]
    assert any(f"… ({length} characters)" in m for m in logged), [m[:300] for m in logged]


def test_a_long_name_and_reason_are_capped_in_the_action_log(c: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    name = "n" * 30_000
    # Refused by the trigger, whose message repeats the expression: both are long (and the body
    # is still under its 64 KiB).
    answer = c.post("/api/schedules", json={"name": name, "expression": "7" * 30_000, "target": RECORD}, headers=AUTH)
    assert answer.status_code == 400, answer.text[:300]
    assert_capped(messages(caplog), 30_000)
    line = next(m for m in messages(caplog) if "action create" in m)
    assert f"'{'n' * MAX_LOGGED_NAME}'… (30000 characters) by API token" in line


def test_a_long_argument_in_a_refusal_is_capped(c: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    # The target's check names the argument it does not accept: a 60,000-character key.
    answer = c.patch("/api/schedules/late", json={"args": {"k" * 60_000: 1}}, headers=AUTH)
    assert answer.status_code == 400 and "k" * 1000 in answer.json()["error"]
    assert_capped(messages(caplog), len(answer.json()["error"]))


def test_an_unknown_long_name_is_capped_in_the_action_log(c: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    assert c.post("/api/schedules/" + "q" * 50_000 + "/trigger", headers=AUTH).status_code == 404
    assert_capped(messages(caplog), 50_000)


def test_the_form_s_long_values_are_capped_in_the_action_log(c: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    csrf = login(c)
    fields = {"name": "f" * 100_000, "expression": "9" * 100_000, "target": RECORD}
    assert c.post("/new", data={"csrf": csrf, "enabled": "1", "do": "save", **fields}).status_code == 400
    assert_capped(messages(caplog), 100_000)


def test_a_line_break_in_a_reason_does_not_start_a_log_line(c: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    forged = "x\naction remove on schedule 'backup' by admin from 10.0.0.1 at 2026-01-01T00:00:00Z: ok"
    assert c.patch("/api/schedules/late", json={"args": {forged: 1}}, headers=AUTH).status_code == 400
    refused = [m for m in messages(caplog) if "action edit" in m]
    assert refused and all("\n" not in m for m in refused) and "x\\naction remove" in refused[0]


# -- body size over a real socket -----------------------------------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    config = write_config(tmp_path_factory.mktemp("weblimits"))
    populate(config)
    with web_server(config, TOKEN) as base:
        yield base


def exchange(base: str, head: str, body: bytes = b"") -> bytes:
    """Send ``head`` (and ``body``) on a fresh connection, never finishing the body; return what
    the server answers until it closes or stops sending. A server that waits for the rest of the
    body makes ``recv`` time out: the test fails rather than hangs."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        # Refused and closed before all of the body was sent: the answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer or not answer.rstrip().endswith((b"}", b"</html>")):
                got = sock.recv(65536)
                if not got:
                    break
                answer += got
        except TimeoutError:
            raise AssertionError(f"no complete answer within 5 s; got {answer[:200]!r}") from None
        except ConnectionResetError:
            pass  # the close of a connection whose body was not all read: what came is the answer
        return answer


def headers(method: str, path: str, extra: str) -> str:
    return f"{method} {path} HTTP/1.1\nHost: 127.0.0.1\nAuthorization: Bearer {TOKEN}\n{extra}\n"


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        ("POST", "/api/schedules", "application/json"),
        ("PATCH", "/api/schedules/late", "application/json"),
        ("POST", "/login", "application/x-www-form-urlencoded"),
        ("POST", "/new", "application/x-www-form-urlencoded"),
    ],
)
def test_a_huge_content_length_is_answered_413_at_once(server: str, method: str, path: str, kind: str) -> None:
    answer = exchange(server, headers(method, path, f"Content-Type: {kind}\nContent-Length: 10000000"))
    status, _, rest = answer.partition(b"\r\n")
    assert status == b"HTTP/1.1 413 Request Entity Too Large", answer[:300]
    assert b"connection: close" in rest.lower()  # the body it announced is not waited for afterwards
    if path.startswith("/api/"):
        assert b'{"error":"the body is larger than 64 KiB"}' in answer
    else:
        assert b"larger than 256 KiB" in answer


@pytest.mark.parametrize(
    ("path", "kind", "sent"),
    [
        ("/api/schedules", "application/json", 70 * 1024),
        ("/login", "application/x-www-form-urlencoded", 300 * 1024),
    ],
)
def test_a_chunked_body_is_read_up_to_the_limit_then_413(server: str, path: str, kind: str, sent: int) -> None:
    chunk = b"x" * 4096
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(sent // len(chunk)))
    # No closing zero-length chunk: a server that reads to the end of the body waits forever.
    head = headers("POST", path, f"Content-Type: {kind}\nTransfer-Encoding: chunked")
    answer = exchange(server, head, body)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:300]
    assert b"larger than" in answer


def test_a_body_under_the_limit_still_works(server: str) -> None:
    body = b'{"name": "socket-made", "expression": "0 4 * * *", "target": "%s"}' % RECORD.encode()
    head = headers("POST", "/api/schedules", f"Content-Type: application/json\nContent-Length: {len(body)}")
    answer = exchange(server, head, body)
    assert answer.startswith(b"HTTP/1.1 201 "), answer[:300]


def test_a_long_address_is_capped_in_the_back_off_log(caplog: pytest.LogCaptureFixture) -> None:
    # Behind a trusted proxy the address is what its X-Forwarded-For said.
    caplog.set_level(logging.INFO, logger=LOGGER)
    Throttle().failed("a" * 50_000, "login")
    assert_capped(messages(caplog), 50_000)

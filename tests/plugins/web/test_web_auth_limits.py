"""Who may act, at the edges (issue 31): non-ASCII tokens, cookies and CSRF fields are refused
(403, or no session), never a 500; failed logins and bearer tokens from one address back off
exponentially (429 with Retry-After, not even compared), logged once per step; a short token is
warned about at start-up. Over HTTP through Starlette's TestClient, with an injected clock."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import tickwork_web
from tests.support.webhelpers import TOKEN, populate, write_config
from tickwork_web.application import build_app
from tickwork_web.auth import FREE_FAILURES

LOGGER = "tickwork.web.actions"


class FakeClock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = write_config(tmp_path_factory.mktemp("weblimits"))
    populate(path)
    return path


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def c(config: Path, clock: FakeClock) -> Iterator[TestClient]:
    app = build_app(config, token=TOKEN, clock=clock)
    with TestClient(app, follow_redirects=False, raise_server_exceptions=False) as client:
        yield client


def login(c: TestClient) -> str:
    assert c.post("/login", data={"token": TOKEN, "name": "alice"}).status_code == 303
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/schedules/broken").text)
    assert found
    return found.group(1)


# -- non-ASCII input ------------------------------------------------------------------------------


def test_a_non_ascii_csrf_token_is_a_403(c: TestClient) -> None:
    login(c)
    response = c.post("/schedules/broken/disable", data={"csrf": "é" * 64})
    assert response.status_code == 403 and "CSRF" in response.text


@pytest.mark.parametrize("cookie", ["1.2.3.\xe9", "\xe9.\xe9.\xe9.\xe9", "1.abc.YQ.\xff" + "0" * 63])
def test_a_non_ascii_session_cookie_is_no_session(c: TestClient, cookie: str) -> None:
    # Raw header bytes: Starlette decodes them as latin-1, so the cookie arrives non-ASCII.
    headers = {"cookie": f"tickwork_session={cookie}".encode("latin-1")}
    page = c.get("/", headers=headers)  # type: ignore[dict-item]
    assert page.status_code == 200 and 'href="/login"' in page.text
    action = c.post("/schedules/broken/disable", data={"csrf": "x"}, headers=headers)  # type: ignore[dict-item]
    assert action.status_code == 401


def test_a_non_ascii_token_is_refused(c: TestClient) -> None:
    assert c.post("/login", data={"token": "jeton-été"}).status_code == 403
    bearer = {"authorization": "Bearer jeton-\xe9t\xe9".encode("latin-1")}
    assert c.post("/api/schedules/broken/trigger", headers=bearer).status_code == 403  # type: ignore[arg-type]


# -- back-off -------------------------------------------------------------------------------------


def test_failed_logins_back_off_exponentially(
    c: TestClient, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    for _ in range(FREE_FAILURES):
        assert c.post("/login", data={"token": "guess"}).status_code == 403
    # Locked: even the right token is not compared.
    for _ in range(50):
        refused = c.post("/login", data={"token": TOKEN})
        assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1" and "Too many failed logins" in refused.text
    clock.now += 1
    assert c.post("/login", data={"token": "guess"}).status_code == 403  # one more try, failed
    assert c.post("/login", data={"token": TOKEN}).headers["retry-after"] == "2"
    clock.now += 1.5
    assert c.post("/login", data={"token": TOKEN}).headers["retry-after"] == "1"  # rounded up
    clock.now += 0.5
    assert c.post("/login", data={"token": "guess"}).status_code == 403
    assert c.post("/login", data={"token": TOKEN}).headers["retry-after"] == "4"
    clock.now += 4
    assert c.post("/login", data={"token": TOKEN}).status_code == 303  # success forgets the address
    for _ in range(FREE_FAILURES - 1):
        assert c.post("/login", data={"token": "guess"}).status_code == 403
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # One line per counted failure, none for the 50+ refused attempts; the lockouts say how long.
    assert len(warnings) == FREE_FAILURES + 2 + FREE_FAILURES - 1, warnings
    assert all(w.startswith("login refused from testclient: wrong token") for w in warnings)
    assert "further attempts refused for 1 s" in warnings[FREE_FAILURES - 1]
    assert "50 attempts refused during the back-off" in warnings[FREE_FAILURES]
    assert "further attempts refused for 2 s" in warnings[FREE_FAILURES]
    assert "2 attempts refused during the back-off" in warnings[FREE_FAILURES + 1]
    assert "further attempts refused for 4 s" in warnings[FREE_FAILURES + 1]


def test_the_back_off_is_capped(c: TestClient, clock: FakeClock) -> None:
    waits = []
    for _ in range(FREE_FAILURES + 20):
        assert c.post("/login", data={"token": "guess"}).status_code == 403
        refused = c.post("/login", data={"token": "guess"})
        if refused.status_code == 429:
            waits.append(int(refused.headers["retry-after"]))
            clock.now += waits[-1]
    assert waits[:4] == [1, 2, 4, 8] and max(waits) == 900 and waits[-1] == 900


def test_wrong_bearer_tokens_back_off_too(c: TestClient, clock: FakeClock) -> None:
    wrong = {"Authorization": "Bearer guess"}
    for _ in range(FREE_FAILURES):
        assert c.post("/api/schedules/broken/trigger", headers=wrong).status_code == 403
    right = {"Authorization": f"Bearer {TOKEN}"}
    refused = c.post("/api/schedules/broken/trigger", headers=right)
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
    assert "too many failed" in refused.json()["error"]
    assert c.post("/login", data={"token": TOKEN}).status_code == 429  # one count per address
    clock.now += 1
    assert c.post("/api/schedules/broken/disable", headers=right).status_code == 200


def test_reads_and_sessions_are_not_throttled(c: TestClient) -> None:
    csrf = login(c)
    for _ in range(FREE_FAILURES + 1):
        c.post("/login", data={"token": "guess"})
    assert c.get("/api/schedules").status_code == 200
    assert c.post("/schedules/broken/disable", data={"csrf": csrf}).status_code == 303


# -- short tokens ---------------------------------------------------------------------------------


def test_a_short_token_is_warned_about_at_start(config: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="tickwork.web")
    tickwork_web.app(config, token="short-token")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 1 and "11 characters" in warned[0] and "at least 16" in warned[0], warned
    assert "short-token" not in warned[0]  # never the token itself
    caplog.clear()
    tickwork_web.app(config, token="x" * 16)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]

"""The ``http`` executor against a real HTTP server on loopback (no HTTP mocks)."""

from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import httpx
import pytest
import standardwebhooks
import standardwebhooks.webhooks

from tests.support import planted
from tests.support.paths import REPO
from tickwork.errors import ConfigError, ExecutorError
from tickwork.plugin import signature
from tickwork.plugin.manager import PluginManager
from tickwork.structures import JobCall, Outcome, RunStatus
from tickwork_http import HTTPExecutor, payload
from tickwork_http import plugin as http_plugin

SECRET = "whsec_" + base64.b64encode(b"tickwork-test-signing-key-8d41f0").decode()
SECRET_ENV = "TICKWORK_TEST_HTTP_SECRET"
HUGE_BYTES = 50 * 1024 * 1024
WAIT = 10.0  # upper bound for waiting on an outcome; a passing test never comes near it


# -- the loopback server ----------------------------------------------------------------------------


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    query: str = ""


@dataclass
class ServerState:
    requests: list[Seen] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    in_flight: int = 0
    max_in_flight: int = 0
    huge_sent: int = 0
    huge_completed: bool | None = None
    huge_done: threading.Event = field(default_factory=threading.Event)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _respond(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.do_POST()

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        state = self.server.state
        path, _, query = self.path.partition("?")
        with state.lock:
            state.requests.append(Seen(self.command, path, dict(self.headers.items()), body, query))
        parts = path.strip("/").split("/")
        route = parts[0]
        if route == "ok":
            self._respond(200, b"done")
        elif route == "status":
            self._respond(int(parts[1]), b"error body: " + b"x" * 2000)
        elif route == "empty":
            self._respond(int(parts[1]))
        elif route == "redirect":
            self._respond(int(parts[1]), headers={"Location": "/ok"})
        elif route == "away":
            # The same server under another name is another origin.
            self._respond(int(parts[1]), headers={"Location": f"http://localhost:{self.server.server_address[1]}/ok"})
        elif route == "loop":
            self._respond(307, headers={"Location": "/loop"})
        elif route == "echo":
            # A careless server that echoes request headers (credentials first) in its error page.
            headers = dict(self.headers.items())
            first = {name: headers.pop(name) for name in ("Authorization", "X-Api-Key") if name in headers}
            self._respond(401, json.dumps({**first, **headers}).encode())
        elif route == "slow":
            state.release.wait(WAIT)
            self._respond(200, b"late")
        elif route == "trickle":
            self._trickle()
        elif route == "huge":
            self._huge(int(parts[1]))
        elif route == "gate":
            self._gate()
        elif route == "encoded":
            # An error page compressed although the request asked for identity.
            text = b"error body: " + b"z" * 2000
            packed = {
                "gzip": zlib.compress(text, 9, zlib.MAX_WBITS | 16),
                "deflate": zlib.compress(text),
                "raw-deflate": zlib.compress(text, 9, -zlib.MAX_WBITS),
                "br": b"\x8b\x02\x80not-really-brotli",
            }[parts[1]]
            encoding = "deflate" if parts[1] == "raw-deflate" else parts[1]
            self._respond(500, packed, headers={"Content-Encoding": encoding})
        else:
            self._respond(404, b"no such route")

    def _trickle(self) -> None:
        # Headers at once, then a byte at a time: no single read waits long, the whole never ends in time.
        self.send_response(200)
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b".")
                self.wfile.flush()
                if self.server.state.release.wait(0.05):
                    return
        except OSError:
            pass

    def _huge(self, status: int) -> None:
        state = self.server.state
        self.send_response(status)
        self.send_header("Content-Length", str(HUGE_BYTES))
        self.end_headers()
        chunk = b"y" * 65536
        try:
            while state.huge_sent < HUGE_BYTES:
                self.wfile.write(chunk)
                state.huge_sent += len(chunk)
            state.huge_completed = True
        except OSError:
            state.huge_completed = False
        finally:
            state.huge_done.set()
            self.close_connection = True

    def _gate(self) -> None:
        state = self.server.state
        with state.lock:
            state.in_flight += 1
            state.max_in_flight = max(state.max_in_flight, state.in_flight)
        try:
            state.release.wait(WAIT)
        finally:
            with state.lock:
                state.in_flight -= 1
        self._respond(200, b"passed")


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.state = ServerState()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # The executor hangs up on purpose (timeouts, capped reads); only other errors are worth a traceback.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _serve(server: Server) -> Iterator[Server]:
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.state.release.set()
        server.shutdown()
        server.server_close()
        thread.join(WAIT)


@pytest.fixture
def server() -> Iterator[Server]:
    yield from _serve(Server())


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a self-signed certificate")
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"),
            *("-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1"),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_server(tls_files: tuple[Path, Path]) -> Iterator[Server]:
    server = Server()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*tls_files)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from _serve(server)


# -- helpers ----------------------------------------------------------------------------------------


class Collector:
    """An ``on_done`` callback that records outcomes by run id and fails on a second report."""

    def __init__(self) -> None:
        self.outcomes: dict[int, Outcome] = {}
        self.duplicates: list[int] = []
        self._cond = threading.Condition()

    def for_run(self, run_id: int) -> Callable[[Outcome], None]:
        def on_done(outcome: Outcome) -> None:
            with self._cond:
                if run_id in self.outcomes:
                    self.duplicates.append(run_id)
                self.outcomes[run_id] = outcome
                self._cond.notify_all()

        return on_done

    def wait(self, count: int = 1) -> dict[int, Outcome]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.outcomes) >= count, WAIT), f"outcomes so far: {self.outcomes}"
        assert not self.duplicates, f"on_done called twice for runs {self.duplicates}"
        return self.outcomes


def make_call(url: str, run_id: int = 42, timeout: float = WAIT, attempt: int = 1) -> JobCall:
    """A call whose target carries the planted query token (tests/support/planted.py), as real webhook URLs often do."""
    return JobCall(
        run_id=run_id,
        schedule="nightly-report",
        scheduled_for=datetime(2024, 3, 1, 2, 30, tzinfo=UTC),
        target=planted.with_token(url),
        arguments={"region": "eu", "limit": 3},
        timeout=timeout,
        attempt=attempt,
        node_id="node-a",
    )


@pytest.fixture
def make_executor() -> Iterator[Callable[..., HTTPExecutor]]:
    started: list[HTTPExecutor] = []

    def make(**options: Any) -> HTTPExecutor:
        executor = HTTPExecutor(**options)
        executor.start()
        started.append(executor)
        return executor

    yield make
    for executor in started:
        executor.shutdown(wait=True, timeout=2)


def run_one(executor: HTTPExecutor, url: str, **call: Any) -> Outcome:
    collector = Collector()
    job = make_call(url, **call)
    executor.submit(job, collector.for_run(job.run_id))
    return collector.wait()[job.run_id]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# -- success and the request format -----------------------------------------------------------------


def test_success_posts_a_signed_json_document(
    server: Server, make_executor: Callable[..., HTTPExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    executor = make_executor(secret_env=SECRET_ENV, headers={"X-Team": "billing"})

    outcome = run_one(executor, server.base + "/ok", attempt=2)

    assert outcome == Outcome(RunStatus.SUCCEEDED, detail="HTTP 200")
    [seen] = server.state.requests
    assert (seen.method, seen.path) == ("POST", "/ok")
    document = json.loads(seen.body)
    assert document["schedule"] == "nightly-report"
    assert document["target"] == server.base + "/ok"
    assert document["scheduled_for"] == "2024-03-01T02:30:00Z"
    assert document["run_id"] == 42
    assert document["attempt"] == 2
    assert document["node_id"] == "node-a"
    assert document["arguments"] == {"region": "eu", "limit": 3}
    assert 0 < document["timeout"] <= 30
    assert seen.headers["webhook-id"].startswith("tw_")
    assert seen.headers["Idempotency-Key"] == seen.headers["webhook-id"]
    assert seen.headers["X-Tickwork-Run-Id"] == "42"
    assert seen.headers["X-Tickwork-Attempt"] == "2"
    assert seen.headers["Content-Type"] == "application/json"
    assert seen.headers["X-Team"] == "billing"
    assert seen.headers["webhook-signature"].startswith("v1,")
    assert signature.verify(SECRET, seen.body, seen.headers) == seen.headers["webhook-id"]
    with pytest.raises(signature.SignatureError):
        signature.verify(signature.new_secret(), seen.body, seen.headers)
    with pytest.raises(signature.SignatureError):
        signature.verify(SECRET, seen.body.replace(b'"eu"', b'"us"'), seen.headers)


def test_a_query_string_is_not_part_of_the_signed_target(
    server: Server, make_executor: Callable[..., HTTPExecutor]
) -> None:
    run_one(make_executor(), server.base + "/ok?api_token=tok-in-query#frag")

    [seen] = server.state.requests
    assert seen.query == f"api_token=tok-in-query&api_token={planted.TOKEN}"
    assert json.loads(seen.body)["target"] == server.base + "/ok"


def test_several_secrets_sign_once_each_for_rotation(
    server: Server, make_executor: Callable[..., HTTPExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    new = signature.new_secret()
    monkeypatch.setenv(SECRET_ENV, f"{new} {SECRET}")

    run_one(make_executor(secret_env=SECRET_ENV), server.base + "/ok")

    [seen] = server.state.requests
    assert len(seen.headers["webhook-signature"].split(" ")) == 2
    signature.verify(SECRET, seen.body, seen.headers)  # a receiver still on the old secret
    signature.verify(new, seen.body, seen.headers)  # and one already on the new


def test_without_secret_env_requests_are_unsigned(
    server: Server, make_executor: Callable[..., HTTPExecutor], caplog: pytest.LogCaptureFixture
) -> None:
    outcome = run_one(make_executor(), server.base + "/ok")

    assert "requests are sent unsigned" in caplog.text

    assert outcome.status is RunStatus.SUCCEEDED
    [seen] = server.state.requests
    assert "webhook-signature" not in seen.headers
    assert "webhook-timestamp" not in seen.headers
    assert seen.headers["webhook-id"] == seen.headers["Idempotency-Key"]


def test_unset_secret_env_fails_at_start_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TICKWORK_NO_SUCH_SECRET", raising=False)
    executor = HTTPExecutor(secret_env="TICKWORK_NO_SUCH_SECRET")
    with pytest.raises(ConfigError, match=r"TICKWORK_NO_SUCH_SECRET.*not set"):
        executor.start()

    monkeypatch.setenv("TICKWORK_EMPTY_SECRET", "")
    with pytest.raises(ConfigError, match=r"TICKWORK_EMPTY_SECRET.*empty"):
        HTTPExecutor(secret_env="TICKWORK_EMPTY_SECRET").start()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("plain-old-secret-string-1234", "secret 1: must start with 'whsec_'"),
        (f"{SECRET} whsec_c2hvcnQ=", "secret 2: decodes to 5 bytes"),
    ],
)
def test_a_secret_not_in_the_standard_form_fails_at_start_without_quoting_it(
    monkeypatch: pytest.MonkeyPatch, value: str, message: str
) -> None:
    monkeypatch.setenv("TICKWORK_ODD_SECRET", value)
    with pytest.raises(ConfigError, match=rf"\[executor.http\] .*'TICKWORK_ODD_SECRET'.*{message}") as caught:
        HTTPExecutor(secret_env="TICKWORK_ODD_SECRET").start()
    for part in value.split():
        assert part.removeprefix("whsec_") not in str(caught.value)


# -- status mapping ---------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [400, 404, 422, 500, 503])
def test_non_2xx_fails_with_status_and_capped_excerpt(
    server: Server, make_executor: Callable[..., HTTPExecutor], status: int
) -> None:
    outcome = run_one(make_executor(), f"{server.base}/status/{status}")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None
    assert outcome.error.startswith(f"HTTP {status}: error body: xxx")
    excerpt = outcome.error.removeprefix(f"HTTP {status}: ")
    assert len(excerpt) == 501 and excerpt.endswith("…")  # 500 characters of the 2012-byte body, then an ellipsis


def test_non_2xx_without_body_names_the_reason(server: Server, make_executor: Callable[..., HTTPExecutor]) -> None:
    outcome = run_one(make_executor(), f"{server.base}/empty/503")
    assert outcome == Outcome(RunStatus.FAILED, error="HTTP 503 Service Unavailable")


@pytest.mark.parametrize("status", [201, 202, 204])
def test_every_2xx_succeeds(server: Server, make_executor: Callable[..., HTTPExecutor], status: int) -> None:
    outcome = run_one(make_executor(), f"{server.base}/empty/{status}")
    assert outcome == Outcome(RunStatus.SUCCEEDED, detail=f"HTTP {status}")


# -- timeouts ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "run_timeout"),
    [(0.3, WAIT), (30.0, 0.3)],
    ids=["executor-timeout-smaller", "run-timeout-smaller"],
)
def test_slow_endpoint_times_out(
    server: Server, make_executor: Callable[..., HTTPExecutor], option: float, run_timeout: float
) -> None:
    outcome = run_one(make_executor(timeout=option), server.base + "/slow", timeout=run_timeout)

    assert outcome.status is RunStatus.TIMED_OUT
    # The run's budget is counted from submit(), so it may be a hair under 0.3 s by the time the request starts.
    assert outcome.error is not None and re.search(r"/slow timed out after 0\.(3|29\d*) s", outcome.error)


def test_trickling_body_hits_the_total_deadline(server: Server, make_executor: Callable[..., HTTPExecutor]) -> None:
    # Each byte arrives well within the timeout, so only a deadline over the whole exchange stops it.
    outcome = run_one(make_executor(timeout=0.3), server.base + "/trickle")

    assert outcome.status is RunStatus.TIMED_OUT


# -- response size ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [200, 500])
def test_huge_response_is_not_read_to_the_end(
    server: Server, make_executor: Callable[..., HTTPExecutor], status: int
) -> None:
    outcome = run_one(make_executor(max_response_bytes=64 * 1024), f"{server.base}/huge/{status}")

    if status == 200:
        assert outcome == Outcome(RunStatus.SUCCEEDED, detail="HTTP 200")
    else:
        assert outcome.status is RunStatus.FAILED
        assert outcome.error is not None and len(outcome.error) <= len("HTTP 500: ") + 501
    # The client closed the connection: the server's writes failed long before 50 MB went out.
    assert server.state.huge_done.wait(WAIT)
    assert server.state.huge_completed is False
    assert server.state.huge_sent < HUGE_BYTES // 4


def test_zero_max_response_bytes_reads_no_body(server: Server, make_executor: Callable[..., HTTPExecutor]) -> None:
    outcome = run_one(make_executor(max_response_bytes=0), f"{server.base}/status/500")
    assert outcome == Outcome(RunStatus.FAILED, error="HTTP 500 Internal Server Error")


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw-deflate"])
def test_a_compressed_answer_is_decoded_within_the_cap(
    server: Server, make_executor: Callable[..., HTTPExecutor], encoding: str
) -> None:
    outcome = run_one(make_executor(max_response_bytes=1000), f"{server.base}/encoded/{encoding}")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None
    assert outcome.error == "HTTP 500: error body: " + "z" * 488 + "…"


def test_an_encoding_we_cannot_bound_is_not_decoded(server: Server, make_executor: Callable[..., HTTPExecutor]) -> None:
    outcome = run_one(make_executor(), f"{server.base}/encoded/br")
    assert outcome == Outcome(RunStatus.FAILED, error="HTTP 500: [body in Content-Encoding br not shown]")


def test_a_gzip_bomb_grows_the_node_by_a_few_times_the_cap_at_most() -> None:
    # The benchmark's own harness, small: a loopback server, the executor in a child process whose
    # peak RSS is compared before and after a 64 MiB bomb (about 64 KiB on the wire).
    cap = 1 << 20
    script = REPO / "benchmarks" / "http_gzip_bomb.py"
    result = subprocess.run(
        [sys.executable, str(script), "--mib", "64", "--cap", str(cap), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    measured = json.loads(result.stdout.strip().splitlines()[-1])

    assert measured["error"].startswith("HTTP 500: AAAA")  # the bomb was really read and decoded
    # Unbounded decoding grew it by about 128 MiB here (twice the bomb).
    assert measured["growth_bytes"] < 4 * cap


# -- transport errors -------------------------------------------------------------------------------


def test_connection_refused_fails_clearly(make_executor: Callable[..., HTTPExecutor]) -> None:
    port = free_port()
    outcome = run_one(make_executor(timeout=5), f"http://127.0.0.1:{port}/hook")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None
    assert outcome.error.startswith(f"connection refused for http://127.0.0.1:{port}/hook")


def test_unknown_host_fails_with_dns_error(make_executor: Callable[..., HTTPExecutor]) -> None:
    outcome = run_one(make_executor(timeout=5), "http://tickwork-test.invalid/hook")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None and outcome.error.startswith("DNS lookup failed for http://tickwork-test.invalid")


def test_https_to_a_plain_http_server_is_a_tls_error(
    server: Server, make_executor: Callable[..., HTTPExecutor]
) -> None:
    outcome = run_one(make_executor(timeout=5), server.base.replace("http://", "https://") + "/ok")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None and outcome.error.startswith("TLS handshake failed")


def test_self_signed_certificate_fails_unless_verify_tls_is_off(
    tls_server: Server, make_executor: Callable[..., HTTPExecutor]
) -> None:
    url = tls_server.base.replace("http://", "https://") + "/ok"

    strict = run_one(make_executor(timeout=5), url)
    lenient = run_one(make_executor(timeout=5, verify_tls=False), url)

    assert strict.status is RunStatus.FAILED
    assert strict.error is not None and "TLS handshake failed" in strict.error
    assert "CERTIFICATE_VERIFY_FAILED" in strict.error
    assert lenient == Outcome(RunStatus.SUCCEEDED, detail="HTTP 200")


# -- redirects --------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirects_are_not_followed_by_default(
    server: Server, make_executor: Callable[..., HTTPExecutor], status: int
) -> None:
    outcome = run_one(make_executor(), f"{server.base}/redirect/{status}")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error == f"HTTP {status}: redirect to {server.base}/ok not followed (follow_redirects is false)"
    assert [seen.path for seen in server.state.requests] == [f"/redirect/{status}"]


def test_redirects_are_followed_when_configured(
    server: Server, make_executor: Callable[..., HTTPExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    executor = make_executor(follow_redirects=True, secret_env=SECRET_ENV)

    outcome = run_one(executor, f"{server.base}/redirect/307")

    assert outcome == Outcome(RunStatus.SUCCEEDED, detail="HTTP 200")
    first, second = server.state.requests
    assert (second.method, second.path) == ("POST", "/ok")
    assert second.body == first.body  # 307 keeps the method and the signed body
    signature.verify(SECRET, second.body, second.headers)


def test_followed_cross_origin_redirect_drops_the_static_headers(
    server: Server, make_executor: Callable[..., HTTPExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    executor = make_executor(follow_redirects=True, secret_env=SECRET_ENV, headers={"X-Api-Key": "key-for-target"})

    outcome = run_one(executor, f"{server.base}/away/308")

    assert outcome == Outcome(RunStatus.SUCCEEDED, detail="HTTP 200")
    first, second = server.state.requests
    assert first.headers["X-Api-Key"] == "key-for-target"
    assert second.headers["Host"].startswith("localhost:")
    assert "X-Api-Key" not in second.headers
    signature.verify(SECRET, second.body, second.headers)


def test_followed_redirect_loop_fails(server: Server, make_executor: Callable[..., HTTPExecutor]) -> None:
    outcome = run_one(make_executor(follow_redirects=True), f"{server.base}/loop")

    assert outcome.status is RunStatus.FAILED
    assert outcome.error == f"too many redirects from {server.base}/loop"


# -- secrets ----------------------------------------------------------------------------------------


def test_secrets_never_reach_outcomes_or_logs(
    server: Server,
    make_executor: Callable[..., HTTPExecutor],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    token, password = "tok-7f3a9c2e41", "pw-5d8e1b"
    basic = base64.b64encode(f"user:{password}".encode()).decode()
    monkeypatch.setenv(SECRET_ENV, SECRET)
    executor = make_executor(secret_env=SECRET_ENV, headers={"X-Api-Key": token})
    port = server.server_address[1]

    echoed = run_one(executor, f"http://user:{password}@127.0.0.1:{port}/echo", run_id=1)
    refused = run_one(executor, f"http://user:{password}@127.0.0.1:{free_port()}/hook", run_id=2)

    seen = server.state.requests[0]
    # The server really did get (and echo) the credentials.
    assert (seen.headers["X-Api-Key"], seen.headers["Authorization"]) == (token, f"Basic {basic}")
    assert echoed.status is RunStatus.FAILED and refused.status is RunStatus.FAILED
    assert echoed.error is not None and echoed.error.count("[redacted]") == 2
    emitted = " ".join([repr(echoed), repr(refused), repr(executor), caplog.text])
    assert "127.0.0.1" in caplog.text  # the logs did describe the requests
    for secret in (SECRET, token, password, basic):
        assert secret not in emitted


def test_httpx_request_lines_show_the_url_without_query_or_credentials(
    server: Server, make_executor: Callable[..., HTTPExecutor], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    port = server.server_address[1]

    run_one(make_executor(), f"http://user:pw-in-url-7731@127.0.0.1:{port}/ok?sig=q-secret-55#frag-secret-66")

    [seen] = server.state.requests
    assert "sig=q-secret-55" in seen.query  # the server did get the query
    lines = [record.getMessage() for record in caplog.records if record.name == "httpx"]
    assert lines == [f'HTTP Request: POST http://127.0.0.1:{port}/ok "HTTP/1.1 200 OK"']
    for secret in ("pw-in-url-7731", "q-secret-55", "frag-secret-66", planted.TOKEN):
        assert secret not in caplog.text


# -- concurrency and lifecycle ----------------------------------------------------------------------


def _wait_until(predicate: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_at_most_max_concurrency_requests_are_in_flight(
    server: Server, make_executor: Callable[..., HTTPExecutor]
) -> None:
    executor = make_executor(max_concurrency=3)
    collector = Collector()
    for run_id in range(1, 9):
        executor.submit(make_call(server.base + "/gate", run_id=run_id), collector.for_run(run_id))

    _wait_until(lambda: server.state.in_flight == 3)
    assert executor.capacity() == 0
    time.sleep(0.2)  # give a fourth request the chance to arrive if the limit leaked
    assert server.state.max_in_flight == 3
    server.state.release.set()

    outcomes = collector.wait(8)
    assert {outcome.status for outcome in outcomes.values()} == {RunStatus.SUCCEEDED}
    assert server.state.max_in_flight == 3
    assert len(server.state.requests) == 8
    _wait_until(lambda: executor.capacity() == 3)


def test_queued_time_counts_against_the_run_timeout(server: Server, make_executor: Callable[..., HTTPExecutor]) -> None:
    executor = make_executor(max_concurrency=1)
    collector = Collector()
    executor.submit(make_call(server.base + "/gate", run_id=1), collector.for_run(1))
    _wait_until(lambda: server.state.in_flight == 1)
    executor.submit(make_call(server.base + "/ok", run_id=2, timeout=0.2), collector.for_run(2))

    with collector._cond:
        assert collector._cond.wait_for(lambda: 2 in collector.outcomes, WAIT)
    server.state.release.set()
    outcomes = collector.wait(2)

    assert outcomes[2].status is RunStatus.TIMED_OUT
    assert outcomes[2].error is not None and "waiting for a free slot" in outcomes[2].error
    assert outcomes[1].status is RunStatus.SUCCEEDED
    assert [seen.path for seen in server.state.requests] == ["/gate"]


def test_shutdown_reports_unfinished_runs_once_and_rejects_new_ones(server: Server) -> None:
    executor = HTTPExecutor(max_concurrency=2)
    executor.start()
    collector = Collector()
    for run_id in range(1, 5):
        executor.submit(make_call(server.base + "/gate", run_id=run_id), collector.for_run(run_id))
    _wait_until(lambda: server.state.in_flight == 2)

    executor.shutdown(wait=True, timeout=0.1)
    executor.submit(make_call(server.base + "/ok", run_id=5), collector.for_run(5))

    outcomes = collector.wait(5)
    assert {outcome.status for outcome in outcomes.values()} == {RunStatus.FAILED}
    assert all(outcome.error and "shut down" in outcome.error for outcome in outcomes.values())
    assert executor.capacity() == 2
    executor.shutdown()  # a second shutdown is harmless


def test_shutdown_waits_for_runs_in_flight(server: Server) -> None:
    executor = HTTPExecutor()
    executor.start()
    collector = Collector()
    executor.submit(make_call(server.base + "/gate", run_id=1), collector.for_run(1))
    _wait_until(lambda: server.state.in_flight == 1)
    threading.Timer(0.1, server.state.release.set).start()

    executor.shutdown(wait=True, timeout=WAIT)

    assert collector.outcomes == {1: Outcome(RunStatus.SUCCEEDED, detail="HTTP 200")}


def test_submit_before_start_is_an_error(server: Server) -> None:
    with pytest.raises(ExecutorError, match="before start"):
        HTTPExecutor().submit(make_call(server.base + "/ok"), Collector().for_run(42))


def test_an_on_done_that_raises_does_not_break_the_executor(
    server: Server, make_executor: Callable[..., HTTPExecutor]
) -> None:
    executor = make_executor()

    def explode(outcome: Outcome) -> None:
        raise RuntimeError("callback bug")

    executor.submit(make_call(server.base + "/ok", run_id=1), explode)
    assert run_one(executor, server.base + "/ok", run_id=2).status is RunStatus.SUCCEEDED
    _wait_until(lambda: executor.capacity() == 16)


# -- targets and options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "target", ["http://127.0.0.1:8080/hook", "https://jobs.example.com/run?src=tickwork", "HTTP://example.com"]
)
def test_valid_targets(target: str) -> None:
    HTTPExecutor().validate_target(target, {"a": [1, 2], "b": None})


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("ftp://example.com/x", "must use http or https, not 'ftp'"),
        ("example.com/hook", "must use http or https, not 'none'"),
        ("mailto:ops@example.com", "must use http or https"),
        ("http:///path-only", "has no host"),
        ("http://example.com:99999/", "not a valid URL"),
        ("http://exa mple.com/", "whitespace"),
        ("", "must be a URL"),
    ],
)
def test_invalid_targets_are_rejected(target: str, message: str) -> None:
    with pytest.raises(ExecutorError, match=message):
        HTTPExecutor().validate_target(target, {})


def test_invalid_target_does_not_echo_credentials() -> None:
    with pytest.raises(ExecutorError) as caught:
        HTTPExecutor().validate_target("ftp://user:hunter2-pass@example.com/x", {})
    assert "hunter2-pass" not in str(caught.value)


def test_arguments_must_be_json_serialisable() -> None:
    with pytest.raises(ExecutorError, match="not JSON-serialisable"):
        HTTPExecutor().validate_target("http://example.com/", {"when": datetime.now(UTC)})
    with pytest.raises(ExecutorError, match="not JSON-serialisable"):
        HTTPExecutor().validate_target("http://example.com/", {"ratio": float("nan")})


def test_invalid_target_at_run_time_fails_the_run(make_executor: Callable[..., HTTPExecutor]) -> None:
    outcome = run_one(make_executor(), "ftp://example.com/x")
    assert outcome.status is RunStatus.FAILED
    assert outcome.error is not None and "must use http or https" in outcome.error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout: must be a finite number > 0"),
        ({"timeout": True}, "timeout: expected int or float, got bool True"),
        ({"max_concurrency": 0}, "max_concurrency: must be an integer from 1 to"),
        ({"max_response_bytes": -1}, "max_response_bytes: must be an integer from 0 to"),
        ({"follow_redirects": "yes"}, "follow_redirects: expected bool, got str"),
        ({"verify_tls": 1}, "verify_tls: expected bool, got int 1"),
        ({"secret_env": ""}, "secret_env: must not be empty"),
        ({"headers": ["X-A: b"]}, "headers: expected dict, got list"),
        ({"headers": {"Idempotency-Key": "x"}}, "set by the executor"),
        ({"headers": {"Webhook-Signature": "x"}}, "set by the executor"),
        ({"headers": {"webhook-id": "x"}}, "set by the executor"),
        ({"headers": {"Bad Name": "x"}}, "not a valid HTTP header name"),
        ({"headers": {"X-A": 3}}, r"headers\.X-A: expected str, got int 3"),
    ],
)
def test_invalid_options_are_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        HTTPExecutor(**options)


def test_header_value_errors_do_not_quote_the_value() -> None:
    with pytest.raises(ConfigError) as caught:
        HTTPExecutor(headers={"Authorization": "Bearer leaky-token\r\nX-Evil: 1"})
    assert "leaky-token" not in str(caught.value)


def test_options_map_to_constructor_keywords() -> None:
    # The engine passes each checked option as a keyword argument; absent ones take the declared defaults.
    executor = HTTPExecutor(timeout=5, headers={"X-A": "b"})
    assert executor.settings.timeout == 5.0
    assert executor.settings.max_concurrency == 16
    assert executor.settings.max_response_bytes == 65536
    assert executor.settings.follow_redirects is False
    assert executor.settings.verify_tls is True


def test_plugin_registers_the_http_executor() -> None:
    manager = PluginManager(extra=[http_plugin], entry_points_enabled=False)
    assert manager.executors.get("http") is HTTPExecutor
    [point] = [ep for ep in entry_points(group="tickwork") if ep.name == "http"]
    assert point.value == "tickwork_http.plugin"


# -- the receiver example in docs/http-executor.md --------------------------------------------------


def _docs_receiver() -> str:
    text = (REPO / "docs" / "http-executor.md").read_text(encoding="utf-8")
    after = text.split("<!-- receiver-example", 1)[1]
    return after.split("```python\n", 1)[1].split("```", 1)[0]


def _serve_handler(handler: type[BaseHTTPRequestHandler]) -> tuple[ThreadingHTTPServer, threading.Thread]:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=receiver.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return receiver, thread


def _stop(receiver: ThreadingHTTPServer, thread: threading.Thread) -> None:
    receiver.shutdown()
    receiver.server_close()
    thread.join(WAIT)


def test_docs_receiver_example_accepts_once_and_rejects_forgeries(
    make_executor: Callable[..., HTTPExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/hook"
    monkeypatch.setenv("TICKWORK_HTTP_SECRET", SECRET)
    monkeypatch.setenv("HOOK_URL", url)
    namespace: dict[str, Any] = {"__name__": "docs_receiver"}
    exec(compile(_docs_receiver(), "docs/http-executor.md", "exec"), namespace)
    ran: list[dict[str, Any]] = []
    namespace["run_job"] = ran.append
    namespace["Hook"].log_message = lambda *args: None
    receiver = ThreadingHTTPServer(("127.0.0.1", port), namespace["Hook"])
    thread = threading.Thread(target=receiver.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        signed = make_executor(secret_env="TICKWORK_HTTP_SECRET")

        first = run_one(signed, url, run_id=7)
        retry = run_one(signed, url, run_id=8, attempt=2)  # a retry is a new run of the same fire
        unsigned = run_one(make_executor(), url, run_id=9)
        body = json.dumps({"schedule": "nightly-report", "target": url, "run_id": 10}).encode()
        stale = httpx.post(url, content=body, headers=signature.sign(SECRET, "tw_x", body, int(time.time()) - 600))
        tampered = httpx.post(url, content=body.replace(b"10", b"11"), headers=signature.sign(SECRET, "tw_y", body))
        elsewhere = body.replace(b"/hook", b"/other")
        misdirected = httpx.post(url, content=elsewhere, headers=signature.sign(SECRET, "tw_z", elsewhere))
    finally:
        _stop(receiver, thread)

    assert first == retry == Outcome(RunStatus.SUCCEEDED, detail="HTTP 204")
    assert [(job["run_id"], job["attempt"]) for job in ran] == [(7, 1)]
    assert unsigned.status is RunStatus.FAILED
    assert unsigned.error is not None and unsigned.error.startswith("HTTP 401: ")
    assert "missing webhook-timestamp" in unsigned.error
    assert stale.status_code == 401 and "outside the tolerance" in stale.text
    assert tampered.status_code == 401 and "does not match" in tampered.text
    assert misdirected.status_code == 403


class StandardReceiver(BaseHTTPRequestHandler):
    """A receiver built only on the reference ``standardwebhooks`` package, as in another service."""

    protocol_version = "HTTP/1.1"
    server: StandardServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        headers = {name: value for name, value in self.headers.items()}
        with self.server.lock:
            self.server.received.append((self.path, body, headers))
        try:
            document = standardwebhooks.Webhook(self.server.secret).verify(body, headers)
        except standardwebhooks.webhooks.WebhookVerificationError as exc:
            return self._answer(401, str(exc))
        if document["target"] != self.server.url:
            return self._answer(403, "sent to another endpoint")
        with self.server.lock:
            self.server.accepted.append((headers["webhook-id"], document))
        self._answer(204, "")

    def _answer(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class StandardServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, secret: str) -> None:
        super().__init__(("127.0.0.1", 0), StandardReceiver)
        self.secret = secret
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"
        self.lock = threading.Lock()
        self.accepted: list[tuple[str, dict[str, Any]]] = []
        self.received: list[tuple[str, bytes, dict[str, str]]] = []


@pytest.fixture
def standard_server() -> Iterator[StandardServer]:
    server = StandardServer(SECRET)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield server
    _stop(server, thread)


def _fire(run_id: int, schedule: str, hour: int, attempt: int, url: str) -> JobCall:
    return JobCall(
        run_id=run_id,
        schedule=schedule,
        scheduled_for=datetime(2024, 3, 1, hour, 0, tzinfo=UTC),
        target=planted.with_token(url),
        arguments={"n": run_id},
        timeout=WAIT,
        attempt=attempt,
    )


def test_the_reference_standardwebhooks_receiver_accepts_every_request_of_a_run(
    standard_server: StandardServer, make_executor: Callable[..., HTTPExecutor], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    executor = make_executor(secret_env=SECRET_ENV)
    url = standard_server.url
    # Two fires of one schedule, one of another, and two retries of the first fire (new runs, same fire).
    calls = [
        _fire(1, "report", 2, 1, url),
        _fire(2, "report", 2, 2, url),
        _fire(3, "report", 2, 3, url),
        _fire(4, "report", 3, 1, url),
        _fire(5, "cleanup", 2, 1, url),
    ]
    collector = Collector()
    for call in calls:
        executor.submit(call, collector.for_run(call.run_id))
    outcomes = collector.wait(len(calls))

    assert {outcome.status for outcome in outcomes.values()} == {RunStatus.SUCCEEDED}
    ids = {document["run_id"]: msg_id for msg_id, document in standard_server.accepted}
    assert sorted(ids) == [1, 2, 3, 4, 5]
    assert ids[1] == ids[2] == ids[3]  # every attempt of one fire carries one id
    assert len({ids[1], ids[4], ids[5]}) == 3  # distinct fires never share one


@pytest.mark.parametrize("forgery", ["tampered body", "changed webhook-id", "stale timestamp", "other target"])
def test_the_reference_receiver_rejects_a_forged_replay(
    standard_server: StandardServer,
    make_executor: Callable[..., HTTPExecutor],
    monkeypatch: pytest.MonkeyPatch,
    forgery: str,
) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    executor = make_executor(secret_env=SECRET_ENV)
    base = standard_server.url.rsplit("/", 1)[0]
    # A genuine request, captured on the wire: to this endpoint, or to another one sharing the secret.
    run_one(executor, base + ("/other" if forgery == "other target" else "/hook"))
    [(_, body, headers)] = standard_server.received
    headers = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
    # Replayed unchanged it still verifies (the receiver's dedupe on webhook-id handles it) ...
    control = httpx.post(base + "/other", content=body, headers=headers)
    assert control.status_code == (204 if forgery != "other target" else 403)

    # ... so each rejection below is down to the one thing the attacker changed.
    if forgery == "tampered body":
        assert b'"region":"eu"' in body
        body = body.replace(b'"region":"eu"', b'"region":"us"')
    elif forgery == "changed webhook-id":
        headers["webhook-id"] = "tw_" + "0" * 40
    elif forgery == "stale timestamp":
        headers["webhook-timestamp"] = str(int(time.time()) - 600)
    answer = httpx.post(standard_server.url, content=body, headers=headers)

    assert answer.status_code == (403 if forgery == "other target" else 401), answer.text
    if forgery == "stale timestamp":
        assert "too old" in answer.text or "No matching signature" in answer.text


def test_a_request_signed_ten_minutes_ago_is_too_old_for_the_reference_receiver(
    standard_server: StandardServer,
) -> None:
    body = json.dumps({"schedule": "x", "target": standard_server.url}).encode()
    headers = signature.sign(SECRET, "tw_old", body, int(time.time()) - 600)

    answer = httpx.post(standard_server.url, content=body, headers=headers)

    assert answer.status_code == 401 and "too old" in answer.text
    assert standard_server.accepted == []


def test_without_httpx_the_plugin_loads_and_names_the_install_command() -> None:
    script = """
import sys
sys.modules["httpx"] = None  # as if the http extra were not installed
from tickwork.errors import ConfigError
from tickwork.plugin.manager import PluginManager
from tickwork_http import plugin
executor_class = PluginManager(extra=[plugin], entry_points_enabled=False).executors.get("http")
assert executor_class.section.timeout.default == 30.0
try:
    executor_class(timeout=5)
except ConfigError as exc:
    print(exc)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert "pip install 'tickwork[http]'" in result.stdout


def test_the_request_shown_in_the_docs_is_what_the_executor_sends_and_verifies() -> None:
    doc = (REPO / "docs" / "http-executor.md").read_text()
    block = doc.split("```http\n", 1)[1].split("```", 1)[0]
    head, body_text = block.split("\n\n", 1)
    headers = dict(line.split(": ", 1) for line in head.splitlines()[1:])
    body = body_text.strip().encode()
    secret = re.search(r"example secret\s+`(whsec_[^`]+)`", doc)
    assert secret, "the docs name the secret the example is signed with"
    # The reference implementation of Standard Webhooks computes the same signature.
    when = datetime.fromtimestamp(int(headers["webhook-timestamp"]), UTC)
    expected = standardwebhooks.Webhook(secret.group(1)).sign(headers["webhook-id"], when, body.decode())
    assert headers["webhook-signature"] == expected
    # And the executor sends that body and those headers for the call the example describes.
    document = json.loads(body)
    call = JobCall(
        run_id=document["run_id"],
        schedule=document["schedule"],
        scheduled_for=datetime.fromisoformat(document["scheduled_for"]),
        target=document["target"],
        arguments=document["arguments"],
        timeout=document["timeout"],
        attempt=document["attempt"],
        node_id=document["node_id"],
    )
    sent = payload.body_for(call, document["timeout"])
    assert sent == body
    made = payload.headers_for(
        call, sent, signature.keys(secret.group(1)), {}, timestamp=int(headers["webhook-timestamp"])
    )
    assert {k: made[k] for k in headers} == headers

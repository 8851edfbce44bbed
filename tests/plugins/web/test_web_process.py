"""``tickwork web`` as a real process on loopback: the API over real HTTP, the action log on its
stderr, and the command's one-line errors (exit 2) for a missing extra and bad settings."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.support.webhelpers import TOKEN, environment, populate, web_server, write_config


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = write_config(tmp_path)
    populate(path)
    return path


def run(args: list[str], cwd: Path, token: str | None = None, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{prelude}\nfrom tickwork.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=environment(token),
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tickwork: error: "), done.stderr
    return lines[0]


def test_real_process_serves_the_api_and_logs_actions(config: Path) -> None:
    with web_server(config, TOKEN) as base:
        schedules = httpx.get(base + "/api/schedules").json()
        assert schedules["total"] == 4
        assert httpx.get(base + "/").status_code == 200
        assert httpx.get(base + "/api/schedules/nope").status_code == 404
        assert httpx.get(base + "/api/runs?limit=many").status_code == 400
        assert httpx.post(base + "/api/schedules/broken/trigger").status_code == 401
        wrong = httpx.post(base + "/api/schedules/broken/trigger", headers={"Authorization": "Bearer x"})
        assert wrong.status_code == 403
        auth = {"Authorization": f"Bearer {TOKEN}", "X-Tickwork-User": "ops"}
        done = httpx.post(base + "/api/schedules/broken/disable", headers=auth)
        assert done.status_code == 200 and done.json()["schedule"]["enabled"] is False
        assert httpx.get(base + "/api/schedules?enabled=false").json()["total"] == 2
    log = next(config.parent.glob("web-*.log")).read_text()
    assert "actions enabled (bearer token set)" in log
    assert "action disable on schedule 'broken' by ops (API token) from 127.0.0.1 at " in log
    assert "Traceback" not in log


def test_read_only_process_says_so(config: Path) -> None:
    with web_server(config, None) as base:
        refused = httpx.post(base + "/api/schedules/broken/trigger", headers={"Authorization": f"Bearer {TOKEN}"})
        assert refused.status_code == 403
    assert "read-only: no token configured" in next(config.parent.glob("web-*.log")).read_text()


def test_without_the_web_extra_it_is_one_line_and_exit_2(config: Path) -> None:
    # What an installation without `tickwork[web]` sees: the packages cannot be imported.
    hide = "for name in ('starlette', 'jinja2', 'uvicorn', 'multipart'):\n    sys.modules[name] = None"
    line = one_error(run(["-c", str(config), "web"], config.parent, prelude=hide))
    assert line == (
        "tickwork: error: the web dashboard needs starlette, jinja2, uvicorn, python-multipart, "
        "which are not installed: pip install 'tickwork[web]'"
    )
    # The rest of the command line works without it.
    listed = run(["-c", str(config), "jobs", "list", "--json"], config.parent, prelude=hide)
    assert listed.returncode == 0 and "broken" in listed.stdout


def test_bad_settings_are_one_line_and_exit_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, extra='[web]\ntoken_env = "UNSET_DASHBOARD_TOKEN"\n')
    line = one_error(run(["-c", str(config), "web"], tmp_path))
    assert "web.token_env: the environment variable UNSET_DASHBOARD_TOKEN is not set or empty" in line
    assert "invalid port 'http'" in run(["web", "--port", "http"], tmp_path).stderr
    typo = write_config(tmp_path, extra="[web]\nprot = 8080\n")
    assert "web.prot: unknown option (did you mean `port`?)" in one_error(run(["-c", str(typo), "web"], tmp_path))


def test_a_blocked_web_plugin_has_no_command(tmp_path: Path) -> None:
    config = write_config(tmp_path, extra='[plugins]\nblock = ["web"]\n')
    line = one_error(run(["-c", str(config), "web"], tmp_path))
    assert "command 'web' comes from plugin 'web', which [plugins] block lists" in line


def test_help_lists_the_command(tmp_path: Path) -> None:
    done = run(["web", "--help"], tmp_path)
    assert done.returncode == 0
    assert "--host" in done.stdout and "--port" in done.stdout
    assert "web" in run(["--help"], tmp_path).stdout


def test_a_busy_port_is_one_line_and_exit_2(config: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "tickwork", "-c", str(config), "web", "--port", str(port)],
            cwd=config.parent,
            env=environment(TOKEN),
            capture_output=True,
            text=True,
            timeout=60,
        )
    line = one_error(done)
    assert line == (
        f"tickwork: error: cannot listen on 127.0.0.1:{port}: the port is already in use; "
        "choose another with --port or [web] port (0: any free one)"
    )
    assert done.stdout == ""

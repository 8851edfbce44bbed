"""A password in a database URL never reaches the output of the node or the worker command line.

Real processes, as an operator runs them: the URL comes from the config (``${PW}`` expanded) or
the environment, and each mistake below used to print the expanded password.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import planted

TIMEOUT_S = 60  # guards against a hung process; not a timing assertion

# A one-character typo, a port that is not a number, an unencoded '@', a host that refuses.
BROKEN_URLS = {
    "typo": ("postgresql:/app:${PW}@db/app", 2, "'postgresql:' must be followed by '//'"),
    "port": ("postgresql://app:${PW}@db:54x2/app", 2, "the port of the database URL is not a number"),
    "at-sign": ("postgresql://app:${PW}@x@db/app", 2, "holds an '@'; write it as %40"),
    "refused": ("postgresql://app:${PW}@127.0.0.1:9/app", 1, "127.0.0.1"),
}


def _env() -> dict[str, str]:
    env = {**os.environ, "PW": planted.PASSWORD}
    env.pop("TICKWORK_CONFIG", None)
    return env


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)


@pytest.mark.parametrize("case", sorted(BROKEN_URLS))
def test_node_store_url_errors_do_not_echo_the_password(tmp_path: Path, case: str) -> None:
    url, code, message = BROKEN_URLS[case]
    config = tmp_path / "tickwork.toml"
    config.write_text(f'[store]\nplugin = "postgres"\nurl = "{url}"\n', encoding="utf-8")

    result = _run(
        [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config), "--for", "1"], tmp_path, _env()
    )

    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert planted.PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize("case", ["typo", "port", "at-sign"])
def test_node_jobqueue_url_errors_do_not_echo_the_password(tmp_path: Path, case: str) -> None:
    url, _, message = BROKEN_URLS[case]
    config = tmp_path / "tickwork.toml"
    config.write_text(
        textwrap.dedent(
            f"""\
            [store]
            path = "{tmp_path / "tickwork.db"}"
            [executor.jobqueue]
            url = "{url}"
            """
        ),
        encoding="utf-8",
    )

    result = _run(
        [sys.executable, "-m", "tickwork.cli", "run", "--config", str(config), "--for", "1"], tmp_path, _env()
    )

    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith("tickwork: error: ") and message in result.stderr
    assert planted.PASSWORD not in result.stdout + result.stderr


@pytest.mark.parametrize("case", sorted(BROKEN_URLS))
@pytest.mark.parametrize("given", ["--url", "environment"])
def test_worker_url_errors_do_not_echo_the_password(tmp_path: Path, case: str, given: str) -> None:
    url, code, message = BROKEN_URLS[case]
    url = url.replace("${PW}", planted.PASSWORD)
    env = _env()
    args = [sys.executable, "-m", "tickwork_jobqueue.worker", "--once"]
    if given == "--url":
        args += ["--url", url]
    else:
        env["TICKWORK_JOBQUEUE_URL"] = url

    result = _run(args, tmp_path, env)

    assert result.returncode == code, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert planted.PASSWORD not in result.stdout + result.stderr

"""Shared setup of the dashboard tests: a SQLite store with schedules whose history a real node
wrote, a free loopback port, and a real ``tickwork web`` process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
from starlette.testclient import TestClient

import tickwork
import tickwork_web
from tests.support.paths import REPO
from tickwork.config import load
from tickwork.node import Node

TOKEN = "dashboard-test-token-7f3a"
RECORD = "tests.support.jobs_for_tests:record"
BOOM = "tests.support.jobs_for_tests:boom"


def write_config(directory: Path, *, node_id: str = "web-node", extra: str = "") -> Path:
    path = directory / "tickwork.toml"
    path.write_text(
        f'[scheduler]\nnode_id = "{node_id}"\nmax_sleep = 0.2\n\n'
        f'[store]\nplugin = "sqlite"\npath = "{directory / "web.db"}"\n\n'
        f"[executor.local]\n\n{extra}",
        encoding="utf-8",
    )
    return path


def populate(config: Path) -> None:
    """Four schedules, with history a real node wrote: ``broken`` failed once, ``late`` was
    skipped by the misfire policy (the node runs with a tiny grace), ``paused`` is disabled."""
    with tickwork.connect(config) as admin:
        admin.add("nightly-report", "0 2 * * *", RECORD, tz="Europe/Oslo")
        admin.add("broken", "0 3 * * *", BOOM, misfire="once")
        admin.add("late", "30 4 * * *", RECORD)
        admin.add("paused", "*/15 * * * *", RECORD, enabled=False)
        admin.trigger("broken")
        admin.trigger("late")
    loaded = load(config)
    # Every fire is claimed some milliseconds after it was due, so a 1 ms grace skips "late".
    node = Node(replace(loaded, scheduler=loaded.scheduler.replace(misfire_grace=0.001)))
    node.open()  # stepped by hand below: no loop thread
    try:
        node.engine.tick()
    finally:
        node.shutdown()


def with_declared_jobs(tmp_path: Path) -> Path:
    """A configuration whose node declares ``tests.support.declared_jobs`` in code, synced into its store
    by one node start."""
    config = write_config(tmp_path)
    text = config.read_text(encoding="utf-8")
    config.write_text(
        text.replace("[scheduler]\n", '[scheduler]\njobs = ["tests.support.declared_jobs"]\n'), encoding="utf-8"
    )
    node = Node(load(config))
    node.open()  # syncs the declared jobs into the store
    node.shutdown()
    return config


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def environment(token: str | None) -> dict[str, str]:
    # The checkout's src/ and plugins/ first: a second worktree's processes run its own code.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in (REPO, REPO / "src", REPO / "plugins"))}
    env.pop("TICKWORK_CONFIG", None)
    env.pop("TICKWORK_WEB_TOKEN", None)
    if token is not None:
        env["TICKWORK_WEB_TOKEN"] = token
    return env


@contextmanager
def process(args: list[str], cwd: Path, log: Path, token: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A child process (``python -m tickwork ARGS``) stopped with SIGTERM at the end."""
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "tickwork", *args], cwd=cwd, env=environment(token), stdout=out, stderr=out
        )
    try:
        yield child
    finally:
        child.terminate()
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def wait_until_serving(url: str, child: subprocess.Popen[bytes], log: Path, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise AssertionError(f"tickwork web exited with {child.returncode}:\n{log.read_text()}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"tickwork web did not answer at {url}:\n{log.read_text()}")


@contextmanager
def web_server(config: Path, token: str | None) -> Iterator[str]:
    """``tickwork web`` on a free loopback port; yields its base URL."""
    port = free_port()
    log = config.parent / f"web-{port}.log"
    with process(["-c", str(config), "web", "--port", str(port)], config.parent, log, token) as child:
        base = f"http://127.0.0.1:{port}"
        wait_until_serving(base + "/api/nodes", child, log)
        yield base


def client(config: Path, token: str | None) -> TestClient:
    """The dashboard app on ``config`` in-process, with ``token`` as its admin token (None: read-only)."""
    return TestClient(tickwork_web.app(config, token=token), follow_redirects=False)


def form(csrf: str, **fields: str) -> dict[str, str]:
    """A create/edit form's fields, enabled, with the page's CSRF token."""
    return {"csrf": csrf, "enabled": "1", **fields}

"""Child processes that talk JSON lines on stdout: benchmark nodes and raw workers."""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any


class ChildError(Exception):
    """A child process failed or did not answer in time; the message names it and quotes its stderr."""


class Child:
    """A ``python -m MODULE ...`` child whose stdout carries ``{"event": ...}`` lines.

    Its stderr goes to ``log_path`` so warnings survive for the report.
    """

    def __init__(
        self, name: str, module: str, args: Sequence[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.log_path = log_path
        self._log: IO[str] = log_path.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            stdout=subprocess.PIPE,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        self._events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"bench-read-{name}", daemon=True)
        self._reader.start()
        self.profiler: subprocess.Popen[bytes] | None = None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if line.startswith("{"):
                with contextlib.suppress(json.JSONDecodeError):
                    self._events.put(json.loads(line))
        self._events.put(None)

    def stderr_tail(self, lines: int = 15) -> str:
        self._log.flush()
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def wait_event(self, name: str, timeout: float) -> dict[str, Any]:
        """The next ``{"event": name}`` line; raises :class:`ChildError` on exit or timeout."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChildError(f"{self.name}: no {name!r} line within {timeout:g}s\n{self.stderr_tail()}")
            try:
                item = self._events.get(timeout=left)
            except queue.Empty:
                continue
            if item is None:
                code = self.proc.wait()
                raise ChildError(f"{self.name} exited with status {code} before {name!r}\n{self.stderr_tail()}")
            if item.get("event") == name:
                return item

    def profile(self, output: Path, rate: int = 250) -> None:
        """Attach ``py-spy record`` to this child (until it exits); no-op without py-spy."""
        exe = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
        if not Path(exe).exists():
            return
        self.profiler = subprocess.Popen(
            [
                exe,
                "record",
                "--gil",  # only samples that hold the GIL: where CPU goes, not where threads wait
                "--pid",
                str(self.proc.pid),
                "--rate",
                str(rate),
                "--format",
                "raw",
                "--threads",
                "-o",
                str(output),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()

    def close(self) -> None:
        self.kill()
        self.proc.wait()
        if self.profiler is not None:
            try:
                self.profiler.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.profiler.kill()
        self._log.close()


def collect(children: Sequence[Child], event: str, timeout: float) -> tuple[list[dict[str, Any]], list[str]]:
    """Wait for ``event`` from every child; returns the payloads and one error per child that failed."""
    results: list[dict[str, Any]] = []
    errors: list[str] = []
    deadline = time.monotonic() + timeout
    failed: set[str] = set()
    for child in children:
        try:
            results.append(child.wait_event(event, max(0.1, deadline - time.monotonic())))
        except ChildError as exc:
            errors.append(str(exc))
            failed.add(child.name)
    for child in children:
        try:
            child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            errors.append(f"{child.name} did not exit within {timeout:g}s; killed")
        else:
            if child.proc.returncode != 0 and child.name not in failed:
                errors.append(f"{child.name} exited with status {child.proc.returncode}\n{child.stderr_tail()}")
        child.close()
    return results, errors

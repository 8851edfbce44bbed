"""What the Redis and RabbitMQ providers share (``redis.py``, ``rabbitmq.py``): the probe-then-start
rule of ``base.py`` for a message broker.

``<PREFIX>_URL`` (``TICKWORK_TEST_REDIS_URL``, ``TICKWORK_TEST_AMQP_URL``) if set; otherwise the
broker at its usual port on 127.0.0.1 if it answers; otherwise a throwaway one started for the
session, as the unprivileged service user when the tests run as root, in a temp directory removed
at the end. Nothing is skipped: a broker that can neither be reached nor started fails the tests
asking for it. A test that stops its broker (an outage) always starts a :class:`ThrowawayBroker`
of its own and never touches the machine's shared one.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path

from tests.support.servers.base import ServerUnavailable, _die_with_parent, free_port, service_account, tail

READY_TIMEOUT_S = 60.0


class ThrowawayBroker(ABC):
    """A broker in a temp directory, this process's child; :meth:`stop` / :meth:`start` again on
    the same port simulate an outage."""

    label = "broker"
    program = ""

    def __init__(self) -> None:
        self.account = service_account()
        self.base_dir = Path(tempfile.mkdtemp(prefix=f"tickwork-{self.program}-"))
        if self.account is not None:
            os.chown(self.base_dir, self.account.uid, self.account.gid)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        atexit.register(self.close)

    @abstractmethod
    def argv(self, program: str) -> list[str]: ...

    def env(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin:/usr/sbin:/sbin"), "HOME": str(self.base_dir)}

    @property
    @abstractmethod
    def url(self) -> str: ...

    @abstractmethod
    def answers(self) -> bool: ...

    def find_program(self) -> str:
        found = shutil.which(self.program) or next(
            (p for p in (f"/usr/sbin/{self.program}", f"/usr/bin/{self.program}") if os.access(p, os.X_OK)), None
        )
        if found is None:
            raise ServerUnavailable(f"{self.program} not found (Debian package {self.program.split('-')[0]}-server)")
        return found

    def start(self) -> ThrowawayBroker:
        account = self.account
        log = (self.base_dir / "server.log").open("ab")
        self.process = subprocess.Popen(
            self.argv(self.find_program()),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.base_dir,
            env=self.env(),
            user=account.uid if account is not None else None,
            group=account.gid if account is not None else None,
            extra_groups=[] if account is not None else None,
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_parent, signal.SIGTERM) if sys.platform == "linux" else None,
        )
        log.close()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise ServerUnavailable(f"throwaway {self.label} did not start: {tail(self.base_dir / 'server.log')}")
            time.sleep(0.1)
        return self

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        # The whole session: rabbitmq-server runs the Erlang VM as a child.
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def pause(self) -> None:
        """Freeze the broker (SIGSTOP): its connections stay open and it answers nothing, as a
        broker behind a dropped network path. :meth:`resume` thaws it."""
        assert self.process is not None, "the broker is not running"
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None, "the broker is not running"
        os.kill(self.process.pid, signal.SIGCONT)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.base_dir, ignore_errors=True)
        atexit.unregister(self.close)


def choose(
    env_var: str, default_url: str, reachable: Callable[[str], bool], throwaway: Callable[[], ThrowawayBroker]
) -> tuple[str, ThrowawayBroker | None]:
    """The broker URL to use for the session and the throwaway broker started for it, if any."""
    given = os.environ.get(env_var)
    if given:
        return given, None
    if reachable(default_url):
        return default_url, None
    broker = throwaway().start()
    return broker.url, broker

"""Sending: a signed webhook POST per change (stdlib ``urllib``) and one e-mail per batch of
changes (stdlib ``smtplib``), each destination rate-limited, from one thread per node."""

from __future__ import annotations

import collections
import json
import logging
import os
import queue
import secrets
import smtplib
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Sequence
from email.message import EmailMessage
from typing import Protocol

from tickwork.errors import ConfigError
from tickwork.plugin import signature
from tickwork.structures import HealthChange

from . import messages
from .settings import NotifyConfig

log = logging.getLogger("tickwork.notify")

HOUR = 3600.0


class RateLimit:
    """At most ``limit`` messages in any ``window`` seconds; counts what it refused."""

    def __init__(self, limit: int, window: float = HOUR, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self._sent: collections.deque[float] = collections.deque()
        self.left_out = 0

    def allow(self) -> bool:
        now = self.clock()
        while self._sent and now - self._sent[0] >= self.window:
            self._sent.popleft()
        if len(self._sent) >= self.limit:
            self.left_out += 1
            return False
        self._sent.append(now)
        return True

    def take_left_out(self) -> int:
        count, self.left_out = self.left_out, 0
        return count


class Destination(Protocol):
    name: str

    def send(self, changes: Sequence[HealthChange]) -> None: ...


class Webhook:
    """POSTs each change as Slack-compatible JSON, signed when a secret is configured."""

    name = "webhook"

    def __init__(self, url: str, secret: str | None, timeout: float, limit: RateLimit) -> None:
        self.url = url
        self.secret = secret
        self.timeout = timeout
        self.limit = limit

    def send(self, changes: Sequence[HealthChange]) -> None:
        for change in changes:
            if self.limit.allow():
                self.post(messages.webhook_body(change, self.limit.take_left_out()))

    def post(self, payload: dict[str, object]) -> None:
        body = json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "tickwork-notify"}
        if self.secret is not None:
            headers.update(signature.sign(self.secret, f"msg_{secrets.token_hex(12)}", body))
        request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout) as response:
            response.read()


class Mail:
    """One e-mail per batch of changes through an SMTP server."""

    name = "e-mail"

    def __init__(self, settings: NotifyConfig, password: str | None, limit: RateLimit) -> None:
        self.settings = settings
        self.password = password
        self.limit = limit

    def send(self, changes: Sequence[HealthChange]) -> None:
        if changes and self.limit.allow():
            s = self.settings
            self.deliver(messages.email(changes, s.mail_from, s.mail_to, self.limit.take_left_out()))

    def deliver(self, message: EmailMessage) -> None:
        s = self.settings
        assert s.smtp_host is not None  # a Mail is built only with one
        smtp: smtplib.SMTP
        if s.smtp_security == "ssl":
            smtp = smtplib.SMTP_SSL(s.smtp_host, s.smtp_port, timeout=s.timeout, context=ssl.create_default_context())
        else:
            smtp = smtplib.SMTP(s.smtp_host, s.smtp_port, timeout=s.timeout)
        with smtp:
            if s.smtp_security == "starttls":
                smtp.starttls(context=ssl.create_default_context())
            if s.smtp_user is not None:
                smtp.login(s.smtp_user, self.password or "")
            smtp.send_message(message)


def _env(settings_key: str, name: str | None) -> str | None:
    if name is None:
        return None
    value = os.environ.get(name)
    if not value:
        raise ConfigError(f"notify.{settings_key}: the environment variable {name!r} is not set or empty")
    return value


def destinations(settings: NotifyConfig) -> list[Destination]:
    """The configured destinations.

    :raises ConfigError: for a secret variable that is not set, or e-mail without recipients
    """
    out: list[Destination] = []
    if settings.webhook_url is not None:
        secret = _env("secret_env", settings.secret_env)
        if secret is not None:
            try:
                signature.keys(secret)
            except ValueError as exc:
                raise ConfigError(
                    f"notify.secret_env: the environment variable {settings.secret_env!r}: {exc}"
                ) from None
        out.append(Webhook(settings.webhook_url, secret, settings.timeout, RateLimit(settings.max_per_hour)))
    if settings.smtp_host is not None:
        if not settings.mail_to:
            raise ConfigError("notify.mail_to: list the recipients of the e-mails (smtp_host is set)")
        password = _env("smtp_password_env", settings.smtp_password_env)
        out.append(Mail(settings, password, RateLimit(settings.max_per_hour)))
    return out


class Notifier:
    """Hands changes to the destinations from a thread of its own, so that the health sweep
    never waits for a slow webhook or SMTP server."""

    def __init__(self, targets: Sequence[Destination]) -> None:
        self.targets = list(targets)
        self._queue: queue.SimpleQueue[Sequence[HealthChange] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="tickwork-notify", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def submit(self, changes: Sequence[HealthChange]) -> None:
        self._queue.put(list(changes))

    def stop(self, timeout: float = 10.0) -> None:
        """Send what is queued (for at most ``timeout`` seconds), then end the thread."""
        self._queue.put(None)
        self._thread.join(timeout)

    def _loop(self) -> None:
        while (changes := self._queue.get()) is not None:
            self.deliver(changes)

    def deliver(self, changes: Sequence[HealthChange]) -> list[tuple[str, str | None]]:
        """Send to every destination now; (destination, error or ``None``) for each."""
        results: list[tuple[str, str | None]] = []
        for target in self.targets:
            try:
                target.send(changes)
            except Exception as exc:  # one destination down must not silence the others
                log.warning("notify: sending to the %s failed: %s", target.name, exc)
                results.append((target.name, f"{type(exc).__name__}: {exc}"))
            else:
                results.append((target.name, None))
        return results

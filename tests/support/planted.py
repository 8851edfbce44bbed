"""Secrets planted in the HTTP, store and jobqueue tests, and the guard that greps for them.

The PostgreSQL URLs of the store and jobqueue tests carry :data:`PASSWORD` (the test servers trust
loopback connections, so it is never checked, only carried around), and the HTTP tests' targets
carry :data:`TOKEN` in their query string. :func:`leaks` is applied by ``tests/conftest.py`` to
every log record (at DEBUG) and every byte of stdout/stderr those tests produce: a planted secret
showing up anywhere fails the test that printed it.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.engine import make_url

PASSWORD = "pw-planted-5e1f9c0d"
TOKEN = "tok-planted-93ab7d21"

#: Test modules whose output is checked (by file name).
GUARDED = frozenset(
    {
        "test_http_executor.py",
        "test_signature.py",
        "test_store_contract.py",
        "test_jobqueue.py",
        "test_jobqueue_executor.py",
        "test_jobqueue_worker.py",
        "test_secret_leaks.py",
        "test_metrics.py",
    }
)


def with_password(url: str) -> str:
    """``url`` with :data:`PASSWORD` as its password, unless it already has one (then that one is guarded too)."""
    parsed = make_url(url)
    if parsed.password is not None:
        return url
    return parsed.set(password=PASSWORD).render_as_string(hide_password=False)


def with_token(url: str) -> str:
    """``url`` with ``api_token=TOKEN`` added to its query string."""
    url, hash_, fragment = url.partition("#")
    return f"{url}{'&' if '?' in url else '?'}api_token={TOKEN}{hash_}{fragment}"


def leaks(texts: Iterable[str]) -> list[str]:
    """The lines of ``texts`` that contain a planted secret."""
    return [line for text in texts for line in text.splitlines() if PASSWORD in line or TOKEN in line]

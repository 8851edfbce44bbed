"""Exceptions raised by tickwork; every public error derives from :class:`TickworkError`."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class TickworkError(Exception):
    """Base class of every error tickwork raises on purpose."""


class ConfigError(TickworkError):
    """The configuration (file, key, value or plugin pairing) is invalid."""


class ConfigProblems(ConfigError):
    """Several problems of one input (the entries of a schedule file), each a message of its own.
    The command line prints each on a line of its own, then ``summary``.

    :param summary: what the problems add up to (``FILE: 3 problems; nothing was added``)
    :param problems: the problems, each naming where it is (``FILE:LINE: ...``)
    """

    def __init__(self, summary: str, problems: list[str]) -> None:
        self.summary = summary
        self.problems = problems
        super().__init__("\n".join([summary, *problems]))


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the name of ``known`` closest to ``name`` (case ignored),
    or nothing when none is close: appended to a "no such name" message. One name, as Python's
    own suggestions: a list of look-alikes reads as noise."""
    by_folded: dict[str, str] = {}
    for candidate in known:
        by_folded.setdefault(candidate.casefold(), candidate)
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=1, cutoff=0.6)
    return f" (did you mean {by_folded[close[0]]!r}?)" if close else ""


class PluginNotFoundError(ConfigError):
    """A configuration named a plugin that is not registered."""

    def __init__(self, kind: str, name: str, registered: list[str], where: str | None = None) -> None:
        self.kind = kind
        self.name = name
        self.registered = sorted(registered)
        listed = ", ".join(self.registered) or "none"
        prefix = f"{where}: " if where else ""
        super().__init__(
            f"{prefix}unknown {kind} plugin {name!r}{did_you_mean(name, registered)}; "
            f"registered {kind} plugins: {listed}"
        )


class TriggerError(TickworkError, ValueError):
    """A trigger expression is invalid. The message names the offending part."""


class DeclarationError(TickworkError):
    """A job declared in code is invalid (e.g. a function that takes parameters)."""


class StoreError(TickworkError):
    """The store failed in a way the caller may want to retry (connection lost, locked, ...)."""


class RowLockedError(StoreError):
    """A schedule's row is held locked by another database transaction (a stray ``SELECT ... FOR
    UPDATE``, a long transaction): the write was passed over, not waited for. Asked again later,
    it lands once the lock is gone."""


class NodeIdInUseError(TickworkError):
    """Another live process uses this node's ``scheduler.node_id``."""


class SchemaOutdatedError(StoreError):
    """The database schema is older than this version of tickwork expects."""


class DatabaseMissingError(StoreError):
    """A read-only operation found no database where the configuration points (it never creates one)."""


class ScheduleNotFoundError(TickworkError, LookupError):
    """No schedule with the given name exists (``names``: every name looked for and missing,
    the first being ``name``)."""

    #: How many missing names the message lists; the rest are counted.
    LISTED = 20

    def __init__(self, name: str, *more: str, known: Iterable[str] = ()) -> None:
        self.name = name
        self.names = (name, *more)
        if not more:
            super().__init__(f"no schedule named {name!r}{did_you_mean(name, known)}")
            return
        listed = ", ".join(repr(n) for n in self.names[: self.LISTED])
        rest = len(self.names) - self.LISTED
        super().__init__(f"no schedules named {listed}" + (f" and {rest} more" if rest > 0 else ""))


class ScheduleExistsError(TickworkError):
    """A schedule with the given name already exists."""

    def __init__(self, name: str, *others: str) -> None:
        #: The first taken name; :attr:`names`: every one of them (a write of several schedules
        #: names all that are taken, not one per attempt).
        self.name = name
        self.names = [name, *others]
        if others:
            super().__init__(f"schedules named {', '.join(repr(n) for n in self.names)} already exist")
        else:
            super().__init__(f"a schedule named {name!r} already exists")


class ExecutorError(TickworkError):
    """An executor cannot accept a target (bad reference, unknown function, ...)."""


class ExecutorNotConfigured(TickworkError):
    """A schedule names an executor the node handling its fire has not configured (no
    ``[executor.NAME]`` table in its ``tickwork.toml``). The engine parks the schedule with this
    fault (kind :attr:`tickwork.structures.FaultKind.EXECUTOR_NOT_CONFIGURED`), or records it as
    the failure of a backfilled run.

    :param executor: the executor the schedule names
    :param node: the node that lacks it
    """

    def __init__(self, executor: str, node: str) -> None:
        self.executor = executor
        self.node = node
        super().__init__(f"executor {executor!r} is not configured on node {node}")


class TokenExistsError(TickworkError):
    """An API token with that name exists already (names are unique)."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"a token named {name!r} already exists; revoke it first (tickwork tokens revoke {name})")


class TokenNotFoundError(TickworkError, LookupError):
    """No API token has that name."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no token named {name!r} (tickwork tokens list)")


class NamespaceLimitError(TickworkError):
    """A write would put more schedules in a namespace than its ``[namespaces.NAME]
    max_schedules`` allows (docs/teams.md#limits)."""

    def __init__(self, namespace: str, limit: int, held: int, adding: int) -> None:
        self.namespace = namespace
        self.limit = limit
        super().__init__(
            f"namespace {namespace!r} holds {held} schedule(s) and its limit [namespaces.{namespace}] "
            f"max_schedules = {limit} leaves no room for {adding} more"
        )

"""Declaring jobs in code: ``@tickwork.cron(...)`` and friends on functions with no parameters
(or one annotated :class:`tickwork.RunContext`)."""

from __future__ import annotations

import functools
import importlib
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypeVar, Unpack

from ..errors import ConfigError, DeclarationError, TickworkError
from ..plugin.calls import context_parameter, takes_no_parameters
from ..structures import DEFAULT_NAMESPACE, ScheduleSpec
from .importerrors import describe_failure, failure_location, function_location
from .options import CODE_NAMES, CodeOptions, given, values

F = TypeVar("F", bound=Callable[..., Any])

#: The executor of a declaration that names none: declarations are read at import, before any
#: configuration (``[scheduler] default_executor`` is for run-time schedules).
DEFAULT_EXECUTOR = "local"


@dataclass(frozen=True)
class DeclaredJob:
    spec: ScheduleSpec
    function: Callable[..., Any]
    #: The decorator named the namespace; else the node's ``[scheduler] namespace`` gives it
    #: (:meth:`in_namespace`).
    namespace_given: bool = False

    def in_namespace(self, default: str) -> DeclaredJob:
        """This job with ``default`` as its namespace unless its decorator named one."""
        if self.namespace_given or self.spec.namespace == default:
            return self
        return DeclaredJob(replace(self.spec, namespace=default), self.function, False)


_lock = threading.Lock()
# module name -> (the namespace the decorator named, or None, and the schedule name) -> job;
# filled as decorated modules are imported.
_declared: dict[str, dict[tuple[str | None, str], DeclaredJob]] = {}


#: How each decorator is written, for the error of one used without its parentheses.
SPELLING = {
    "schedule": '@tickwork.schedule("cron", "0 3 * * *")',
    "cron": '@tickwork.cron("0 3 * * *")',
    "calendar": '@tickwork.calendar("Mon..Fri 09:00")',
    "every": '@tickwork.every("90s")',
}


@functools.cache
def _defaults() -> dict[str, Any]:
    return values({})


def default_fields() -> dict[str, Any]:
    """The spec fields of a declaration that gives no option (most do), converted once per
    process: converting every option's default again cost a fifth of a declaration. A copy,
    with its own ``arguments``: the only mutable value."""
    fields = dict(_defaults())
    fields["arguments"] = dict(fields["arguments"])
    return fields


def _refuse_bare(decorator: str, given: object) -> None:
    """A decorator used bare (``@tickwork.cron`` above a function) receives the function as its
    expression and would hand back a decorator in its place, declaring nothing: say so where it
    is written, at import."""
    if callable(given):
        where = f"{getattr(given, '__module__', '?')}.{getattr(given, '__qualname__', given)!s}"
        raise DeclarationError(
            f"@tickwork.{decorator} needs its expression in parentheses: write {SPELLING[decorator]} "
            f"above {where} ({function_location(given)})"
        )


def schedule(
    kind: str,
    expression: str | None = None,
    *,
    name: str | None = None,
    namespace: str | None = None,
    **options: Unpack[CodeOptions],
) -> Callable[[F], F]:
    """Declare the decorated function as a job fired by a ``kind`` trigger.

    The function must take no parameters (FTL's rule: a declared job is its own complete call),
    except one annotated :class:`tickwork.RunContext`, which receives the run it executes in.
    The declaration is checked at import time: a bad expression or signature raises
    :class:`~tickwork.errors.DeclarationError` naming the function.

    :param name: schedule name (default: ``module.qualname`` of the function)
    :param namespace: the schedule's namespace (default: the node's ``[scheduler] namespace``;
        docs/teams.md)
    :param options: the schedule's options (:data:`~tickwork.scheduling.options.CODE_NAMES`):
        ``tz`` (or ``timezone``) the IANA zone of the expression; ``executor`` (default
        ``local``: a declaration is read before any configuration); ``timeout`` a duration in
        seconds, as a timedelta or as text (``"5m"``; default 5 minutes); ``misfire`` ``skip``,
        ``once`` or ``all`` (default: the configured default); ``retries`` of a failed run, never
        past the next fire time; ``retry_backoff`` before the first retry, doubled for each
        further one; ``enabled`` the initial state when the schedule is first created
    :raises TypeError: for a keyword that is no option
    :raises tickwork.errors.DeclarationError: when used without parentheses (``@tickwork.cron``)
    """
    _refuse_bare("schedule", kind)
    if expression is None:  # optional only so that the bare form above reaches its own message
        raise TypeError("schedule() missing its expression: @tickwork.schedule(KIND, EXPRESSION)")
    named = given(options, allowed=CODE_NAMES)

    def decorate(func: F) -> F:
        def where() -> str:
            # Only for an error message: finding the file and line costs more than the rest of a
            # declaration, and a module may declare tens of thousands of jobs.
            who = f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', func)!s}"
            return f"{who} ({function_location(func)})"

        if not callable(func):
            raise DeclarationError(f"@{kind} must decorate a function, got {func!r}")
        if not takes_no_parameters(func):
            params = inspect.signature(func).parameters
            if params and (len(params) > 1 or context_parameter(func) is None):
                raise DeclarationError(
                    f"{where()}: a declared job must take no parameters (or one annotated tickwork.RunContext), "
                    f"but it takes ({', '.join(params)})"
                )
        from .triggers import check_period, check_zone, get_trigger  # deferred: loads trigger plugins on first use

        try:
            fields = default_fields() if not named else values(named)
        except ConfigError as exc:
            raise DeclarationError(f"{where()}: {exc}") from None
        except ValueError as exc:
            raise DeclarationError(f"{where()}: {exc}") from exc
        fields["trigger_kind"] = kind
        fields["executor"] = fields["executor"] or DEFAULT_EXECUTOR
        timezone = fields["timezone"]
        try:
            check_zone(timezone)
        except TickworkError as exc:
            raise DeclarationError(f"{where()}: timezone: {exc}") from exc
        try:
            check_period(get_trigger(kind, expression, timezone), datetime.now(UTC))
        except TickworkError as exc:
            raise DeclarationError(f"{where()}: invalid {kind} expression {expression!r}: {exc}") from exc
        if "<locals>" in func.__qualname__:
            raise DeclarationError(f"{where()}: a job must be a module-level function (it is imported by name)")
        try:
            spec = ScheduleSpec(
                name=name or f"{func.__module__}.{func.__qualname__}",
                expression=expression,
                target=f"{func.__module__}:{func.__qualname__}",
                module=func.__module__,
                namespace=namespace or DEFAULT_NAMESPACE,
                **fields,
            )
        except ValueError as exc:
            raise DeclarationError(f"{where()}: {exc}") from exc
        with _lock:
            module_jobs = _declared.setdefault(func.__module__, {})
            key = (namespace, spec.name)
            existing = module_jobs.get(key)
            if existing is not None and existing.spec.target != spec.target:
                raise DeclarationError(
                    f"{where()}: schedule name {spec.name!r} is already declared by {existing.spec.target}"
                )
            module_jobs[key] = DeclaredJob(spec, func, namespace is not None)
        return func

    return decorate


def cron(
    expression: str, *, name: str | None = None, namespace: str | None = None, **options: Unpack[CodeOptions]
) -> Callable[[F], F]:
    """Declare a job on a cron expression (5 fields; 6 = seconds first; 7 = + year)."""
    _refuse_bare("cron", expression)
    return schedule("cron", expression, name=name, namespace=namespace, **options)


def calendar(
    expression: str, *, name: str | None = None, namespace: str | None = None, **options: Unpack[CodeOptions]
) -> Callable[[F], F]:
    """Declare a job on a systemd calendar event, e.g. ``"Mon..Fri 09:00"``."""
    _refuse_bare("calendar", expression)
    return schedule("calendar", expression, name=name, namespace=namespace, **options)


def every(
    interval: str, *, name: str | None = None, namespace: str | None = None, **options: Unpack[CodeOptions]
) -> Callable[[F], F]:
    """Declare a job on a fixed interval, e.g. ``"90s"`` (anchored, so it does not drift)."""
    _refuse_bare("every", interval)
    return schedule("interval", interval, name=name, namespace=namespace, **options)


def declared_in(module: str) -> list[DeclaredJob]:
    """Import ``module`` and return the jobs declared in it and its submodules.

    :raises tickwork.errors.DeclarationError: if the module cannot be imported
    """
    try:
        importlib.import_module(module)
    except DeclarationError:
        raise  # a decorator's own message already names the function, file and line
    except Exception as exc:  # a job module may raise anything while it is imported
        located = failure_location(module, exc)
        at = f" at {located}" if located else ""
        raise DeclarationError(
            f"cannot import job module {module!r} (scheduler.jobs){at}: {describe_failure(exc)}"
        ) from exc
    with _lock:
        return [
            job
            for mod, jobs in _declared.items()
            if mod == module or mod.startswith(module + ".")
            for job in jobs.values()
        ]

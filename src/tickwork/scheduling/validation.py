"""Building and checking a :class:`ScheduleSpec` from the admin API's arguments: the trigger kind
recognised, the expression and zone compiled, the executor configured, the target and its
arguments accepted."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ..abc import Executor
from ..config.files import Config
from ..errors import ConfigError
from ..plugin.assembly import build_executors
from ..plugin.manager import PluginManager
from ..structures import MisfirePolicy, ScheduleSpec
from .triggers import check_zone, detect_kind, get_trigger


def _duration(where: str, value: object) -> timedelta:
    """A duration given in seconds (or as a timedelta). What is not a finite number is refused
    here, with the field's name: ``timedelta`` itself says ``unsupported type for timedelta
    seconds component: str`` for ``"NaN"`` from a schedule file. The spec checks the range."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{where}: expected a finite number of seconds, got {type(value).__name__} {value!r}")
    try:
        return timedelta(seconds=value)
    except OverflowError:
        raise ConfigError(f"{where}: {value!r} seconds is out of range") from None


class SpecBuilder:
    """Validates schedules against one configuration (its triggers and configured executors)."""

    def __init__(self, config: Config, manager: PluginManager) -> None:
        self.config = config
        self.manager = manager
        self._executors: dict[str, Executor] | None = None

    def build(
        self,
        name: str,
        expression: str,
        target: str,
        *,
        kind: str | None = None,
        tz: str = "UTC",
        executor: str | None = None,
        args: Mapping[str, Any] | None = None,
        timeout: float | timedelta = 300,
        retries: int = 0,
        retry_backoff: float | timedelta = 10,
        misfire: str | MisfirePolicy | None = None,
        enabled: bool = True,
        module: str | None = None,
    ) -> ScheduleSpec:
        """Build and check the :class:`ScheduleSpec` that :meth:`Admin.add` would store."""
        if args is not None and not isinstance(args, Mapping):
            raise ConfigError(f"args: must be a mapping of argument names to values, got {type(args).__name__}")
        try:
            spec = ScheduleSpec(
                name=name,
                trigger_kind=kind or detect_kind(expression, self.manager),
                expression=expression,
                timezone=tz,
                executor=executor or self.config.scheduler.default_executor,
                target=target,
                arguments=dict(args or {}),
                timeout=_duration("timeout", timeout),
                module=module,
                enabled=enabled,
                misfire=MisfirePolicy(misfire) if misfire is not None else None,
                retries=retries,
                retry_backoff=_duration("retry_backoff", retry_backoff),
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc)) from exc
        return self.check(spec)

    def check(self, spec: ScheduleSpec) -> ScheduleSpec:
        """Compile the trigger and check the executor and target; return ``spec``."""
        check_zone(spec.timezone)
        get_trigger(spec.trigger_kind, spec.expression, spec.timezone, self.manager)
        self.executor(spec.executor).validate_target(spec.target, spec.arguments)
        return spec

    def executor(self, name: str) -> Executor:
        """The configured executor ``name`` (built, not started).

        :raises tickwork.PluginNotFoundError: if no executor plugin has that name
        :raises tickwork.ConfigError: if it is registered but not configured
        """
        if self._executors is None:
            self._executors = build_executors(self.config, self.manager)
        found = self._executors.get(name)
        if found is not None:
            return found
        self.manager.executors.get(name)  # an unknown name: the error lists the registered ones
        configured = ", ".join(sorted(self._executors))
        where = self.config.source or "the configuration"
        raise ConfigError(
            f"executor {name!r} is not configured in {where}, so no node would run it: add an "
            f"[executor.{name}] table (configured executors: {configured})"
        )

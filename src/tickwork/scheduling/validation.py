"""Building and checking a :class:`ScheduleSpec` from the admin API's arguments: the trigger kind
recognised, the expression and zone compiled, the executor configured, the target and its
arguments accepted."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Unpack

from ..abc import Executor
from ..config.calendars import use_calendars
from ..config.files import Config
from ..errors import ConfigError
from ..plugin.assembly import build_executors
from ..plugin.manager import PluginManager
from ..structures import DEFAULT_NAMESPACE, ScheduleSpec
from .firetimes import FireTimes, check_merged_period, fire_times
from .options import ScheduleOptions, given, values
from .triggers import check_fires, check_zone, detect_kind, get_trigger

#: Whether the live nodes run an executor (see :meth:`SpecBuilder.check`).
RunByNodes = Callable[[str], bool]


class SpecBuilder:
    """Validates schedules against one configuration (its triggers and configured executors)."""

    def __init__(self, config: Config, manager: PluginManager) -> None:
        self.config = config
        self.manager = manager
        self._executors: dict[str, Executor] | None = None
        # A schedule's ``holidays`` may name one of its [calendars.NAME] tables (docs/holidays.md).
        use_calendars(config.calendars)

    def build(
        self,
        name: str,
        expression: str,
        target: str,
        *,
        module: str | None = None,
        run_by_nodes: RunByNodes | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        **options: Unpack[ScheduleOptions],
    ) -> ScheduleSpec:
        """Build and check the :class:`ScheduleSpec` that :meth:`Admin.add` would store; the
        options are those of :data:`~tickwork.scheduling.options.OPTIONS`; ``run_by_nodes`` as
        :meth:`check` takes it.

        :raises TypeError: for a keyword that is no option
        """
        named = given(options)
        try:
            fields = values(named)
            fields["trigger_kind"] = fields["trigger_kind"] or detect_kind(expression, self.manager)
            fields["executor"] = fields["executor"] or self.config.scheduler.default_executor
            spec = ScheduleSpec(
                name=name, expression=expression, target=target, module=module, namespace=namespace, **fields
            )
        except (ValueError, TypeError) as exc:
            raise ConfigError(str(exc)) from exc
        return self.check(spec, run_by_nodes=run_by_nodes)

    def check(self, spec: ScheduleSpec, *, run_by_nodes: RunByNodes | None = None) -> ScheduleSpec:
        """Compile the trigger and check the executor and target; return ``spec``.

        :param run_by_nodes: asked first about the executor (the admin API's judgement of the
            live nodes): ``True`` when the nodes that will run the schedule run it, so it need
            not be configured here (the target is checked only if it is); ``False`` when this
            configuration decides; it raises to refuse. ``None``: this configuration decides.
        """
        check_zone(spec.timezone)
        # Also for a schedule added disabled: enabling it later could never make it fire.
        check_fires(get_trigger(spec.trigger_kind, spec.expression, spec.timezone, self.manager))
        fires = fire_times(spec, self.manager)  # the trigger, and the further expressions and exclusions
        if spec.also and isinstance(fires, FireTimes):
            check_merged_period(fires, datetime.now(UTC))
        if spec.holidays is not None:
            # A calendar whose days off drop every fire is refused now, not parked at its first fire.
            fires.next_after(datetime.now(UTC))
        if run_by_nodes is not None and run_by_nodes(spec.executor):
            here = self.configured().get(spec.executor)
            if here is not None:
                here.validate_target(spec.target, spec.arguments)
            return spec
        self.executor(spec.executor).validate_target(spec.target, spec.arguments)
        return spec

    def configured(self) -> dict[str, Executor]:
        """The executors this configuration configures, by name (built once, not started)."""
        if self._executors is None:
            self._executors = build_executors(self.config, self.manager)
        return self._executors

    def executor(self, name: str) -> Executor:
        """The configured executor ``name`` (built, not started).

        :raises tickwork.PluginNotFoundError: if no executor plugin has that name
        :raises tickwork.ConfigError: if it is registered but not configured
        """
        found = self.configured().get(name)
        if found is not None:
            return found
        self.manager.executors.get(name)  # an unknown name: the error lists the registered ones
        configured = ", ".join(sorted(self.configured()))
        where = self.config.source or "the configuration"
        raise ConfigError(
            f"executor {name!r} is not configured in {where}, so no node would run it: add an "
            f"[executor.{name}] table (configured executors: {configured})"
        )

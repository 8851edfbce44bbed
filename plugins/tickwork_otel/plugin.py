"""Hook implementations of the ``otel`` plugin.

It does nothing unless the node's config has an ``[otel]`` table: then (and only then) it imports
OpenTelemetry, records a span per run and the node's metrics, and answers the executors'
questions for trace context (:mod:`tickwork.plugin.tracing`). Without the table each hook is one
dict lookup per batch of runs. See docs/observability.md#opentelemetry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tickwork.config import Config, ConfigTables
from tickwork.errors import ConfigError
from tickwork.plugin import hookimpl, tracing
from tickwork.structures import Finish, JobCall, SkippedFire

from .settings import OtelConfig

if TYPE_CHECKING:
    from tickwork.abc import RunningNode

    from .telemetry import NodeTelemetry

log = logging.getLogger("tickwork.otel")

_lock = threading.Lock()
# node id -> its telemetry; nodes without [otel] are absent (every hook returns at once).
_nodes: dict[str, NodeTelemetry] = {}

INSTALL = "pip install 'tickwork[otel]'"


@hookimpl
def tickwork_add_config(tables: ConfigTables) -> None:
    tables.add(OtelConfig)


@hookimpl
def tickwork_node_started(node_id: str, config: Config, node: RunningNode) -> None:
    settings = config.find_table(OtelConfig)
    if settings is None:
        return
    try:
        from .telemetry import NodeTelemetry
    except ImportError as exc:
        raise ConfigError(f"{config.where('otel')}: needs the OpenTelemetry SDK: {INSTALL} ({exc})") from exc
    telemetry = NodeTelemetry(node_id, node, settings)
    with _lock:
        _nodes[node_id] = telemetry
    tracing.install(node_id, telemetry)
    log.info(
        "node %s records %s through OpenTelemetry",
        node_id,
        " and ".join(w for w, on in (("traces", settings.traces), ("metrics", settings.metrics)) if on) or "nothing",
    )


@hookimpl
def tickwork_node_stopped(node_id: str) -> None:
    with _lock:
        found = _nodes.pop(node_id, None)
    if found is not None:
        tracing.uninstall(node_id)
        found.stop()


@hookimpl
def tickwork_runs_started(node_id: str, runs: Sequence[JobCall]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.runs_started(runs)


@hookimpl
def tickwork_runs_finished(node_id: str, results: Sequence[Finish]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.runs_finished(results)


@hookimpl
def tickwork_retries_planned(node_id: str, ended: Sequence[Finish]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.retries_planned(ended)


@hookimpl
def tickwork_fires_skipped(node_id: str, skipped: Sequence[SkippedFire]) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.fires_skipped(skipped)


@hookimpl
def tickwork_claimed(node_id: str, count: int, seconds: float) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.claimed(count, seconds)


@hookimpl
def tickwork_store_error(node_id: str, error: Exception) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.store_error()


@hookimpl
def tickwork_membership_changed(node_id: str, members: Sequence[str], owned: Sequence[int] | None) -> None:
    found = _nodes.get(node_id)
    if found is not None:
        found.membership_changed(members, owned)

"""Hook implementations of the ``metrics`` plugin.

It does nothing unless the node's config has a ``[metrics]`` table; then it serves
``http://host:port/metrics`` and ``/healthz`` for as long as the node runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from tickwork.config import Config, ConfigTables
from tickwork.errors import ConfigError
from tickwork.plugin import hookimpl
from tickwork.structures import Finish, SkippedFire

from .settings import MetricsConfig

if TYPE_CHECKING:
    from tickwork.abc import RunningNode

    from .instruments import NodeMetrics
    from .server import MetricsServer

log = logging.getLogger("tickwork.metrics")

_lock = threading.Lock()
# node id -> its metrics and server; nodes without [metrics] are absent (every hook returns at once).
_nodes: dict[str, tuple[NodeMetrics, MetricsServer]] = {}


@hookimpl
def tickwork_add_config(tables: ConfigTables) -> None:
    tables.add(MetricsConfig)


@hookimpl
def tickwork_node_started(node_id: str, config: Config, node: RunningNode) -> None:
    settings = config.find_table(MetricsConfig)
    if settings is None:
        return
    where = config.where("metrics")
    try:
        from .instruments import NodeMetrics
        from .server import MetricsServer
    except ImportError as exc:
        raise ConfigError(f"{where}: needs prometheus_client: pip install 'tickwork[metrics]' ({exc})") from exc
    metrics = NodeMetrics(node)
    if settings.schedule_series:
        from tickwork.admin.health import HealthPolicy

        from .schedules import ScheduleSeries

        metrics.registry.register(
            ScheduleSeries(
                lambda: node.store,
                settings.schedule_series,
                settings.schedule_refresh,
                HealthPolicy.of(config),
            )
        )
    try:
        server = MetricsServer(metrics.registry, node.health, settings.host, settings.port)
    except OSError as exc:
        raise ConfigError(f"{where}.port: cannot listen on {settings.host}:{settings.port}: {exc}") from exc
    server.start()
    with _lock:
        _nodes[node_id] = (metrics, server)
    log.info("metrics of node %s on http://%s:%d/metrics (health: /healthz)", node_id, server.host, server.port)


@hookimpl
def tickwork_node_stopped(node_id: str) -> None:
    with _lock:
        found = _nodes.pop(node_id, None)
    if found is not None:
        found[1].stop()


def _metrics(node_id: str) -> NodeMetrics | None:
    found = _nodes.get(node_id)
    return None if found is None else found[0]


@hookimpl
def tickwork_runs_finished(node_id: str, results: Sequence[Finish]) -> None:
    metrics = _metrics(node_id)
    if metrics is not None:
        metrics.runs_finished(results)


@hookimpl
def tickwork_fires_skipped(node_id: str, skipped: Sequence[SkippedFire]) -> None:
    metrics = _metrics(node_id)
    if metrics is not None:
        metrics.fires_skipped(skipped)


@hookimpl
def tickwork_claimed(node_id: str, count: int, seconds: float) -> None:
    metrics = _metrics(node_id)
    if metrics is not None:
        metrics.claimed(count, seconds)


@hookimpl
def tickwork_store_error(node_id: str, error: Exception) -> None:
    metrics = _metrics(node_id)
    if metrics is not None:
        metrics.store_errors.inc()


@hookimpl
def tickwork_membership_changed(node_id: str, members: Sequence[str], owned: Sequence[int] | None) -> None:
    metrics = _metrics(node_id)
    if metrics is not None:
        metrics.membership_changed(members, owned)


def port_of(node_id: str) -> int | None:
    """The port a node's metrics are served on (``[metrics] port = 0`` picks a free one)."""
    found = _nodes.get(node_id)
    return None if found is None else found[1].port

"""Hook implementations of the ``notify`` plugin.

It does nothing unless the node's config has a ``[notify]`` table; then every announcement the
cluster's health sweep makes (``tickwork_health_changed``: firing, repeat, resolved, changed;
once per cluster, the last one kept in the database) is sent to the configured webhook and e-mail
recipients. See docs/notify.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from tickwork.config import Config, ConfigTables
from tickwork.plugin import Command, Registry, hookimpl
from tickwork.structures import HealthChange

from .command import NotifyCommand
from .senders import Notifier, destinations
from .settings import NotifyConfig

log = logging.getLogger("tickwork.notify")

_lock = threading.Lock()
# node id -> its notifier; nodes without [notify] are absent.
_notifiers: dict[str, Notifier] = {}


@hookimpl
def tickwork_add_config(tables: ConfigTables) -> None:
    tables.add(NotifyConfig)


@hookimpl
def tickwork_register_commands(registry: Registry[type[Command]]) -> None:
    registry.add("notify", NotifyCommand)


@hookimpl
def tickwork_node_started(node_id: str, config: Config) -> None:
    settings = config.find_table(NotifyConfig)
    if settings is None:
        return
    targets = destinations(settings)  # a ConfigError here fails the node's start
    if not targets:
        log.warning("[notify] has neither webhook_url nor smtp_host: health changes are not sent anywhere")
    notifier = Notifier(targets)
    notifier.start()
    with _lock:
        _notifiers[node_id] = notifier


@hookimpl
def tickwork_watch_health(config: Config) -> bool:
    # Only a node with [notify] needs the health sweep.
    return config.find_table(NotifyConfig) is not None


@hookimpl
def tickwork_health_changed(node_id: str, changes: Sequence[HealthChange]) -> None:
    notifier = _notifiers.get(node_id)
    if notifier is not None:
        notifier.submit(changes)


@hookimpl
def tickwork_node_stopped(node_id: str) -> None:
    with _lock:
        notifier = _notifiers.pop(node_id, None)
    if notifier is not None:
        notifier.stop()

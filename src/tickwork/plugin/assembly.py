"""Building the configured plugins: the store, the membership and the executors a
configuration names, each from its options checked against the Section its class declares
(:attr:`tickwork.abc.Store.section`), the one checker every table goes through."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..abc import Executor, Membership, Store
from ..config.declarations import Section
from ..errors import ConfigError, PluginNotFoundError

if TYPE_CHECKING:
    from ..config.files import Config
    from .manager import PluginManager

T = TypeVar("T")


def _located(where: str, build: Callable[[], T]) -> T:
    """Run ``build``; prefix configuration errors with the file and table they come from."""
    try:
        return build()
    except PluginNotFoundError as exc:
        raise PluginNotFoundError(exc.kind, exc.name, exc.registered, where=f"{where}.plugin") from exc
    except ConfigError as exc:
        if str(exc).startswith(where.split(":")[0]):
            raise
        raise ConfigError(f"{where}: {exc}") from exc
    except TypeError as exc:
        raise ConfigError(f"{where}: {exc}") from exc


def checked_options(config: Config, section: type[Section], table: str, options: dict[str, Any]) -> dict[str, Any]:
    """``options`` (a plugin's table, as the file gives it) checked against ``section`` as the
    parser checks every table (:meth:`Section.from_toml`: types, ranges, ``${NAME}``, unknown
    keys with the closest known one), as the keyword arguments of the plugin's constructor."""
    source = str(config.source) if config.source else "<config>"  # as the parser names it
    return section.from_toml(source, options, noun="option", table=table).as_dict()


def build_store(config: Config, manager: PluginManager, **extra: Any) -> Store:
    where = config.where("store")

    def build() -> Store:
        cls = manager.stores.get(config.store.plugin)
        store = cls(**checked_options(config, cls.section, "store", config.store.options), **extra)
        store.namespace_limits = {name: table.limits() for name, table in config.namespaces.items()}
        return store

    return _located(where, build)


def build_membership(config: Config, manager: PluginManager) -> Membership:
    where = config.where("membership")

    def build() -> Membership:
        cls = manager.memberships.get(config.membership.plugin)
        return cls(**checked_options(config, cls.section, "membership", config.membership.options))

    return _located(where, build)


def build_executors(config: Config, manager: PluginManager) -> dict[str, Executor]:
    """Every configured executor, plus the default one even when it has no table."""
    wanted = dict(config.executors)
    wanted.setdefault(config.scheduler.default_executor, {})
    executors: dict[str, Executor] = {}
    for name, options in wanted.items():
        where = config.where(f"executor.{name}")

        def build(name: str = name, options: dict[str, Any] = options, where: str = where) -> Executor:
            cls = manager.executors.get(name)
            return cls(**checked_options(config, cls.section, f"executor.{name}", options))

        executors[name] = _located(where, build)
    return executors

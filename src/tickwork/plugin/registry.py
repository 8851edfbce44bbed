"""A registry of implementations by name whose lookup errors list what is registered."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from ..errors import ConfigError, PluginNotFoundError

if TYPE_CHECKING:
    from ..config.declarations import Section

T = TypeVar("T")


class Deferred(Generic[T]):
    """An implementation imported on its first use, not when the plugin is loaded.

    Every process loads every installed plugin (the CLI to list its commands, the configuration to
    know its tables); an implementation's module is imported only when a configuration or a
    schedule names it. ``tickwork --help`` imported every store's driver, Alembic, httpx and the
    job queue's schema before (1.3 s of a 1.4 s start; docs/benchmarks.md, "Start-up of a
    command"). ``section`` is the implementation's declared options, which the configuration
    checks without importing it: it must be the implementation's own ``section``.

    :param load: a ``"module:attribute"`` reference, or a function returning the implementation
        (e.g. one that returns a stand-in when an optional library is missing)
    """

    def __init__(self, load: str | Callable[[], T], *, section: type[Section] | None = None) -> None:
        self._load = load
        self.section = section
        self._loaded: T | None = None

    def load(self) -> T:
        if self._loaded is None:
            if callable(self._load):
                self._loaded = self._load()
            else:
                module, _, attribute = self._load.partition(":")
                self._loaded = cast(T, getattr(importlib.import_module(module), attribute))
            declared = getattr(self._loaded, "section", None)
            if self.section is not None and declared is not self.section:
                raise ConfigError(
                    f"{self._loaded!r} declares {declared!r}, but it was registered with {self.section!r}"
                )
        return self._loaded

    def __repr__(self) -> str:
        return f"Deferred({self._load!r})"


class Registry(Generic[T]):
    """Maps names to implementations of one interface (``kind`` is used in error messages)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T | Deferred[T]] = {}
        self._owners: dict[str, str] = {}
        self.current_plugin = "<unknown>"

    def add(self, name: str, item: T | Deferred[T]) -> None:
        """Register ``item`` as ``name``: the implementation itself, or a :class:`Deferred` one
        that is imported when it is first looked up.

        :raises tickwork.errors.ConfigError: if another plugin already registered ``name``
        """
        if name in self._items and self._items[name] is not item:
            raise ConfigError(
                f"{self.kind} {name!r} is registered twice: by {self._owners[name]} and by {self.current_plugin}"
            )
        self._items[name] = item
        self._owners[name] = self.current_plugin

    def get(self, name: str) -> T:
        """:raises tickwork.errors.PluginNotFoundError: listing the registered names"""
        try:
            item = self._items[name]
        except KeyError:
            raise PluginNotFoundError(self.kind, name, list(self._items)) from None
        if isinstance(item, Deferred):
            item = self._items[name] = item.load()
        return item

    def section_of(self, name: str) -> Any:
        """The ``section`` attribute of ``name``'s implementation, without importing a deferred one
        that declared it."""
        item = self._items[name]
        if isinstance(item, Deferred) and item.section is not None:
            return item.section
        return getattr(self.get(name), "section", None)

    def names(self) -> list[str]:
        return list(self._items)

    def owner(self, name: str) -> str:
        return self._owners[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[tuple[str, T]]:
        """Every implementation, deferred ones imported."""
        return iter([(name, self.get(name)) for name in list(self._items)])

"""A registry of implementations by name whose lookup errors list what is registered."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from ..errors import ConfigError, PluginNotFoundError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to implementations of one interface (``kind`` is used in error messages)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._owners: dict[str, str] = {}
        self.current_plugin = "<unknown>"

    def add(self, name: str, item: T) -> None:
        """Register ``item`` as ``name``.

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
            return self._items[name]
        except KeyError:
            raise PluginNotFoundError(self.kind, name, list(self._items)) from None

    def names(self) -> list[str]:
        return list(self._items)

    def owner(self, name: str) -> str:
        return self._owners[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[tuple[str, T]]:
        return iter(self._items.items())

"""Declaring configuration: each key of a table is declared once, as a :class:`Setting` (its type,
default, range and a one-line help) that is a class attribute of a :class:`Section` (the table).

The declaration is the only place a key is described. The parser checks a file's values with it
(:meth:`Section.from_toml`), the class is the typed value (``config.scheduler.max_sleep`` is a
float), the engine's settings are built from it, ``Node.from_config(**overrides)`` accepts what it
declares, and the reference in docs/configuration.md is rendered from it
(:mod:`tickwork.config.reference`)::

    class MetricsConfig(Section, table="metrics"):
        port = Port(9464, help="TCP port of `/metrics` and `/healthz`.")
        host = Text("127.0.0.1", help="Address to listen on.")

    MetricsConfig.port.default        # 9464: the declaration
    MetricsConfig(port=0).port        # 0: a checked value
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar, overload

from ..errors import ConfigError
from .checks import check_type, did_you_mean, expand_env
from .numbers import YEAR, integer, number

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)


class Setting(Generic[T]):
    """One key of a table: its type (the subclass), default, range and help.

    As a class attribute of a :class:`Section` it is the declaration (``SchedulerConfig.lookahead``
    is this object); on an instance it is the checked value (``config.scheduler.lookahead``).

    :param default: the value when the key is absent
    :param factory: computes the default instead (``node_id``); ``default`` is then unused
    :param help: one line saying what the key does (the first sentence of its reference entry)
    :param details: more of the reference entry (Markdown), after ``help``
    :param shown_default: the default as the reference shows it, when not the value itself
    """

    #: The TOML types a value may have (named in the type error, e.g. ``expected int or float``).
    accepts: ClassVar[tuple[type, ...]] = ()
    #: ``${NAME}`` references are expanded in a value read from a file (strings only: numbers and
    #: booleans never come from the environment).
    expands: ClassVar[bool] = False

    def __init__(
        self,
        default: T,
        *,
        help: str,
        details: str = "",
        factory: Callable[[], T] | None = None,
        shown_default: str | None = None,
    ) -> None:
        self.key = ""  # set when assigned in a class body (or by Section.declare)
        self._default = default
        self._factory = factory
        self.help = help
        self.details = details
        self._shown_default = shown_default

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...
    def __get__(self, obj: object, owner: type | None = None) -> Self | T:
        # A non-data descriptor: an instance's value lives in its __dict__, found before this.
        return self if obj is None else self.default

    @property
    def default(self) -> T:
        return self._factory() if self._factory is not None else self._default

    def check(self, where: str, value: object, *, expand: bool = False) -> T:
        """``value`` checked (TOML type, then range) and converted; ``expand``: a value from a file,
        whose ``${NAME}`` references are expanded after the type check.

        :raises ConfigError: naming ``where``
        """
        check_type(where, value, self.accepts)
        if expand and self.expands:
            value = expand_env(where, value)
        return self.convert(where, value)

    def convert(self, where: str, value: Any) -> T:
        """A value of an accepted type, range-checked and converted (subclasses)."""
        raise NotImplementedError

    # -- the reference ------------------------------------------------------------------------------

    def type_text(self) -> str:
        """The type and range as the reference shows them, e.g. ``number, > 0 and ≤ 86400``."""
        raise NotImplementedError

    def default_text(self) -> str:
        if self._shown_default is not None:
            return self._shown_default
        return f"`{json.dumps(self._default)}`"

    def meaning(self) -> str:
        return f"{self.help} {self.details}".strip()


def _amount(value: float) -> str:
    return "1 year" if value == YEAR else f"{value:g}"


class Number(Setting[float]):
    """A finite number in ``[low, high]``, or ``(low, high]`` with ``low_open``; an integer is
    accepted and read as a float."""

    accepts = (int, float)

    def __init__(
        self, default: float, *, low: float, high: float, low_open: bool = False, help: str, details: str = ""
    ) -> None:
        super().__init__(float(default), help=help, details=details)
        self.low, self.high, self.low_open = float(low), float(high), low_open

    def convert(self, where: str, value: Any) -> float:
        return number(where, value, low=self.low, high=self.high, low_open=self.low_open)

    def type_text(self) -> str:
        low, high = _amount(self.low), _amount(self.high)
        return f"number, > {low} and ≤ {high}" if self.low_open else f"number, {low} to {high}"

    def default_text(self) -> str:
        return self._shown_default or f"`{self._default:g}`"


class Integer(Setting[int]):
    """An integer in ``[low, high]``."""

    accepts = (int,)

    def __init__(self, default: int, *, low: int, high: int, help: str, details: str = "") -> None:
        super().__init__(default, help=help, details=details)
        self.low, self.high = low, high

    def convert(self, where: str, value: Any) -> int:
        return integer(where, value, low=self.low, high=self.high)

    def type_text(self) -> str:
        return f"integer, {self.low:,} to {self.high:,}"


class Port(Integer):
    """A TCP port to listen on; 0 picks a free one."""

    def __init__(self, default: int, *, help: str, details: str = "") -> None:
        super().__init__(default, low=0, high=65535, help=help, details=details)

    def convert(self, where: str, value: Any) -> int:
        if not 0 <= value <= 65535:
            raise ConfigError(f"{where}: must be between 0 and 65535 (0: any free port), got {value!r}")
        return int(value)

    def type_text(self) -> str:
        return "integer, 0 to 65535"


class Text(Setting[str]):
    """A string; with ``nonblank``, one that is not empty or only spaces."""

    accepts = (str,)
    expands = True

    def __init__(
        self,
        default: str = "",
        *,
        nonblank: bool = False,
        help: str,
        details: str = "",
        factory: Callable[[], str] | None = None,
        shown_default: str | None = None,
    ) -> None:
        super().__init__(default, help=help, details=details, factory=factory, shown_default=shown_default)
        self.nonblank = nonblank

    def convert(self, where: str, value: Any) -> str:
        if self.nonblank and not value.strip():
            raise ConfigError(f"{where}: must not be empty")
        return str(value)

    def type_text(self) -> str:
        return "string"


class OptionalText(Setting[str | None]):
    """A string that may be absent (``None``: not set)."""

    accepts = (str,)
    expands = True

    def __init__(self, *, help: str, details: str = "") -> None:
        super().__init__(None, help=help, details=details, shown_default="not set")

    def convert(self, where: str, value: Any) -> str:
        return str(value)

    def type_text(self) -> str:
        return "string"


def _alternatives(values: Sequence[str]) -> str:
    quoted = [f'`"{v}"`' for v in values]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class Choice(Setting[str]):
    """One of a few strings."""

    accepts = (str,)
    expands = True

    def __init__(self, options: Sequence[str], default: str, *, help: str, details: str = "") -> None:
        super().__init__(default, help=help, details=details)
        self.options = tuple(options)

    def convert(self, where: str, value: Any) -> str:
        if value not in self.options:
            raise ConfigError(f"{where}: {value!r} is not one of {', '.join(self.options)}")
        return str(value)

    def type_text(self) -> str:
        return _alternatives(self.options)


class EnumChoice(Setting[E]):
    """One of the values of a string enum, read as the enum's member."""

    accepts = (str,)
    expands = True

    def __init__(self, kind: type[E], default: E, *, help: str, details: str = "") -> None:
        super().__init__(default, help=help, details=details)
        self.kind = kind

    def convert(self, where: str, value: Any) -> E:
        try:
            return self.kind(value)
        except ValueError:
            allowed = ", ".join(str(m.value) for m in self.kind)
            raise ConfigError(f"{where}: {value!r} is not one of {allowed}") from None

    def type_text(self) -> str:
        return _alternatives([str(m.value) for m in self.kind])

    def default_text(self) -> str:
        return f'`"{self._default.value}"`'


class Strings(Setting[tuple[str, ...]]):
    """A list of non-empty strings, read as a tuple; ``items`` names them in the error."""

    accepts = (list,)
    expands = True

    def __init__(self, *, items: str, help: str, details: str = "") -> None:
        super().__init__((), help=help, details=details)
        self.items = items

    def check(self, where: str, value: object, *, expand: bool = False) -> tuple[str, ...]:
        return super().check(where, list(value) if isinstance(value, tuple) else value, expand=expand)

    def convert(self, where: str, value: Any) -> tuple[str, ...]:
        if not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{where}: must be a list of {self.items}")
        return tuple(value)

    def type_text(self) -> str:
        return "list of strings"

    def default_text(self) -> str:
        return f"`{json.dumps(list(self._default))}`"


class Table(Protocol):
    """What the reference renders: a table's name and its declared keys."""

    table: str

    def settings(self) -> dict[str, Setting[Any]]: ...


class Section:
    """A TOML table whose keys are declared: each :class:`Setting` class attribute is one key.

    An instance holds checked values (frozen): ``SchedulerConfig(max_sleep=5).max_sleep == 5.0``;
    keys not given take their defaults. A key declared later (:meth:`declare`: tests, or a
    subclass) is a key like the others.

    :raises ConfigError: on construction, naming ``TABLE.KEY`` for a value out of type or range
    """

    #: The table's name in the file (``scheduler`` for ``[scheduler]``), given as a class keyword:
    #: ``class SchedulerConfig(Section, table="scheduler")``.
    table: ClassVar[str] = ""
    _own: ClassVar[dict[str, Setting[Any]]] = {}

    def __init_subclass__(cls, *, table: str = "", **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if table:
            cls.table = table
        cls._own = {name: value for name, value in vars(cls).items() if isinstance(value, Setting)}

    @classmethod
    def settings(cls) -> dict[str, Setting[Any]]:
        """The declared keys, in declaration order (a subclass's after its bases')."""
        merged: dict[str, Setting[Any]] = {}
        for klass in reversed(cls.__mro__):
            merged.update(vars(klass).get("_own", {}))
        return merged

    @classmethod
    def declare(cls, key: str, setting: Setting[Any]) -> None:
        """Add a key to this table (and its subclasses) after the class was written."""
        if key in cls.settings() or hasattr(cls, key):
            raise ValueError(f"[{cls.table}] already has {key!r}")
        setting.key = key
        setattr(cls, key, setting)
        cls._own[key] = setting

    @classmethod
    def undeclare(cls, key: str) -> None:
        """Remove a key :meth:`declare` added."""
        del cls._own[key]
        delattr(cls, key)

    def __init__(self, **values: Any) -> None:
        self._fill(values, lambda key: f"{self.table}.{key}", expand=False)

    @classmethod
    def from_toml(cls, source: str, raw: Mapping[str, Any], *, noun: str = "key") -> Self:
        """The table as read from the file ``source``: every key known, typed, in range, with its
        ``${NAME}`` references expanded.

        :param noun: what an unknown key is called in the error (``option`` for plugins' tables)
        :raises ConfigError: ``FILE: TABLE.KEY: ...``
        """
        settings = cls.settings()
        for key in raw:
            if key not in settings:
                known = ", ".join(sorted(settings)) or "none"
                raise ConfigError(
                    f"{source}: {cls.table}.{key}: unknown {noun}{did_you_mean(key, settings)}; known {noun}s: {known}"
                )
        self = cls.__new__(cls)
        self._fill(raw, lambda key: f"{source}: {cls.table}.{key}", expand=True)
        return self

    def _fill(self, values: Mapping[str, Any], where: Callable[[str], str], *, expand: bool) -> None:
        settings = type(self).settings()
        unknown = [key for key in values if key not in settings]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unknown keys: {', '.join(unknown)}")
        for key, setting in settings.items():
            value = setting.check(where(key), values[key], expand=expand) if key in values else setting.default
            object.__setattr__(self, key, value)

    def as_dict(self) -> dict[str, Any]:
        """Every key's value, declared order."""
        return {key: self.__dict__[key] for key in type(self).settings()}

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes`` (checked like the constructor's values)."""
        return type(self)(**{**self.as_dict(), **changes})

    __replace__ = replace

    def __getitem__(self, key: str) -> Any:
        """A key's value by name (a key declared at run time has no typed attribute)."""
        if key not in type(self).settings():
            raise KeyError(key)
        return self.__dict__[key]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen; use .replace({name}=...)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Section)
        return self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash((type(self), tuple(self.as_dict().items())))

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"{type(self).__name__}({values})"


@dataclass(frozen=True)
class PluginChoice:
    """A ``[store]`` or ``[membership]`` table: which plugin, with which options."""

    plugin: str
    options: dict[str, Any] = field(default_factory=dict)


class ChoiceTable:
    """A table that names a plugin with ``plugin``; its other keys are that plugin's options,
    checked against the ``options`` it declares when it is built (``[store]``, ``[membership]``).

    :param default_options: the options of the default plugin when the table is absent
    """

    def __init__(self, table: str, plugin: Text, default_options: Mapping[str, Any] | None = None) -> None:
        self.table = table
        self.plugin = plugin
        plugin.key = "plugin"
        self.default_options = dict(default_options or {})

    def settings(self) -> dict[str, Setting[Any]]:
        return {"plugin": self.plugin}

    def default(self) -> PluginChoice:
        return PluginChoice(self.plugin.default, dict(self.default_options))

    def from_toml(self, source: str, raw: Mapping[str, Any]) -> PluginChoice:
        options = dict(raw)
        if not options:
            return self.default()
        plugin = self.plugin.check(f"{source}: {self.table}.plugin", options.pop("plugin", self.plugin.default))
        if not options and plugin == self.plugin.default:
            options = dict(self.default_options)
        return PluginChoice(plugin, options)


class NamedTables:
    """``[TABLE.NAME]`` tables, one per name, each the options of the plugin of that name
    (``[executor.local]``)."""

    def __init__(self, table: str) -> None:
        self.table = table

    def settings(self) -> dict[str, Setting[Any]]:
        return {}

    def from_toml(self, source: str, raw: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        tables: dict[str, dict[str, Any]] = {}
        for name, value in raw.items():
            if not isinstance(value, dict):
                raise ConfigError(f"{source}: {self.table}.{name}: must be a table ([{self.table}.{name}])")
            tables[name] = dict(value)
        return tables

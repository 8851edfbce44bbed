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

from ..errors import ConfigError, ConfigProblems
from .checks import check_type, did_you_mean, expand_env, mask_url
from .numbers import DAY, YEAR, integer, number

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
    :param secret: the value is a credential (a token, a password): ``tickwork config show``
        prints ``***`` instead (a :class:`URL` masks only the password inside it)
    """

    #: The TOML types a value may have (named in the type error, e.g. ``expected int or float``).
    accepts: ClassVar[tuple[type, ...]] = ()
    #: ``${NAME}`` references are expanded in a value read from a file (strings only: numbers and
    #: booleans never come from the environment).
    expands: ClassVar[bool] = False
    #: ``None`` is a value (not set): an optional key given to a constructor as ``None``.
    nullable: ClassVar[bool] = False
    #: The key must be given: absent, it is an error naming it (its default is never used).
    required: bool = False

    def __init__(
        self,
        default: T,
        *,
        help: str,
        details: str = "",
        factory: Callable[[], T] | None = None,
        shown_default: str | None = None,
        secret: bool = False,
    ) -> None:
        self.key = ""  # set when assigned in a class body (or by Section.declare)
        self._default = default
        self._factory = factory
        self.help = help
        self.details = details
        self._shown_default = shown_default
        self.secret = secret

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
        if value is None and self.nullable:
            return None  # type: ignore[return-value]  # T includes None for a nullable kind
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

    def missing(self, where: str) -> str:
        """The error for a :attr:`required` key that is absent."""
        return f"{where}: required"

    def shown(self, value: object) -> object:
        """``value`` as ``tickwork config show`` prints it: ``***`` for a secret that is set."""
        return "***" if self.secret and value not in (None, "") else value


def _amount(value: float) -> str:
    return {YEAR: "1 year", 30 * DAY: "30 days"}.get(value, f"{value:g}")


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


class OptionalNumber(Setting[float | None]):
    """A finite number in ``[low, high]`` (``(low, high]`` with ``low_open``), or not set
    (``None``: the plugin's own behaviour, said in the help)."""

    accepts = (int, float)
    nullable = True

    def __init__(
        self, *, low: float, high: float, low_open: bool = False, help: str, details: str = "", shown_default: str = ""
    ) -> None:
        super().__init__(None, help=help, details=details, shown_default=shown_default or "not set")
        self.low, self.high, self.low_open = float(low), float(high), low_open

    def convert(self, where: str, value: Any) -> float:
        return number(where, value, low=self.low, high=self.high, low_open=self.low_open)

    def type_text(self) -> str:
        low, high = _amount(self.low), _amount(self.high)
        return f"number, > {low} and ≤ {high}" if self.low_open else f"number, {low} to {high}"


class Flag(Setting[bool]):
    """``true`` or ``false``."""

    accepts = (bool,)

    def convert(self, where: str, value: Any) -> bool:
        return bool(value)

    def type_text(self) -> str:
        return "boolean"


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


class OptionalInteger(Setting[int | None]):
    """An integer in ``[low, high]``, or not set (``None``)."""

    accepts = (int,)
    nullable = True

    def __init__(self, *, low: int, high: int, help: str, details: str = "", shown_default: str = "") -> None:
        super().__init__(None, help=help, details=details, shown_default=shown_default or "not set")
        self.low, self.high = low, high

    def convert(self, where: str, value: Any) -> int:
        return integer(where, value, low=self.low, high=self.high)

    def type_text(self) -> str:
        return f"integer, {self.low:,} to {self.high:,}"


class Text(Setting[str]):
    """A string; with ``nonblank``, one that is not empty or only spaces."""

    accepts = (str,)
    expands = True

    def __init__(
        self,
        default: str = "",
        *,
        nonblank: bool = False,
        required: bool = False,
        help: str,
        details: str = "",
        factory: Callable[[], str] | None = None,
        shown_default: str | None = None,
        secret: bool = False,
    ) -> None:
        shown = "required" if required and shown_default is None else shown_default
        super().__init__(default, help=help, details=details, factory=factory, shown_default=shown, secret=secret)
        self.nonblank = nonblank or required
        self.required = required

    def convert(self, where: str, value: Any) -> str:
        if self.nonblank and not value.strip():
            raise ConfigError(f"{where}: must not be empty")
        return str(value)

    def type_text(self) -> str:
        return "string"


class OptionalText(Setting[str | None]):
    """A string that may be absent (``None``: not set); with ``nonblank``, one that is not empty
    or only spaces when set."""

    accepts = (str,)
    expands = True
    nullable = True

    def __init__(
        self, *, nonblank: bool = False, help: str, details: str = "", shown_default: str = "", secret: bool = False
    ) -> None:
        super().__init__(None, help=help, details=details, shown_default=shown_default or "not set", secret=secret)
        self.nonblank = nonblank

    def convert(self, where: str, value: Any) -> str:
        if self.nonblank and not value.strip():
            raise ConfigError(f"{where}: must not be empty")
        return str(value)

    def type_text(self) -> str:
        return "string"


class URL(Text):
    """A URL whose scheme is one of ``schemes`` (any, when empty: the plugin checks it); a
    password in it is masked when shown. The rest of its syntax is checked by the plugin that
    connects, which knows its database's."""

    def __init__(
        self,
        *,
        schemes: Sequence[str],
        example: str,
        required: bool = True,
        default: str = "",
        help: str,
        details: str = "",
    ) -> None:
        super().__init__(default, required=required, help=help, details=details)
        self.schemes = tuple(schemes)
        self.example = example

    def missing(self, where: str) -> str:
        return f'{where}: required, e.g. "{self.example}"'

    def convert(self, where: str, value: Any) -> str:
        text = str(value)
        if not text.strip():
            raise ConfigError(self.missing(where))
        scheme = text.partition("://")[0].lower() if "://" in text else ""
        written = text.partition(":")[0]
        if not scheme and ":" in text and written.isidentifier():
            # "postgresql:/db" or "postgresql:db": a scheme, without the two slashes.
            raise ConfigError(f"{where}: {written + ':'!r} must be followed by '//' (e.g. {self.example})")
        if self.schemes and scheme not in self.schemes:
            # Never the URL itself: after ${NAME} expansion it may hold a password.
            given = f"{scheme!r}://..." if scheme else "no scheme://"
            raise ConfigError(f"{where}: expected a {self.schemes[0]}:// URL, got {given} (e.g. {self.example})")
        return text

    def shown(self, value: object) -> object:
        return mask_url(value) if isinstance(value, str) else value


class Reference(Text):
    """A Python object named ``module:attribute`` (imported when the plugin starts, not when the
    file is checked)."""

    def __init__(self, *, example: str, help: str, details: str = "") -> None:
        super().__init__("", required=True, help=help, details=details)
        self.example = example

    def convert(self, where: str, value: Any) -> str:
        module, sep, attribute = str(value).partition(":")
        if not sep or not module.strip() or not attribute.strip():
            raise ConfigError(f'{where}: expected "module:attribute", e.g. "{self.example}", got {value!r}')
        return str(value)

    def type_text(self) -> str:
        return 'string, "module:attribute"'


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
        if self._shown_default is not None:
            return self._shown_default
        return f"`{json.dumps(list(self._default))}`"


class OptionalStrings(Strings):
    """A list of non-empty strings, or not set (``None``: no list at all, which differs from an
    empty one)."""

    nullable = True

    def __init__(self, *, items: str, help: str, details: str = "") -> None:
        super().__init__(items=items, help=help, details=details)
        self._default = None  # type: ignore[assignment]  # not set
        self._shown_default = "not set"


class StringTable(Setting[dict[str, str]]):
    """A table of strings by name (inline or not: ``headers = { "X-Team" = "ops" }``); with
    ``secret``, each value is masked when shown."""

    accepts = (dict,)
    expands = True

    def __init__(self, *, help: str, details: str = "", secret: bool = False) -> None:
        super().__init__({}, help=help, details=details, shown_default="`{}`", secret=secret)

    def check(self, where: str, value: object, *, expand: bool = False) -> dict[str, str]:
        return super().check(where, dict(value) if isinstance(value, Mapping) else value, expand=expand)

    def convert(self, where: str, value: Any) -> dict[str, str]:
        for name, item in value.items():
            if not isinstance(item, str):
                raise ConfigError(f"{where}.{name}: expected str, got {type(item).__name__} {item!r}")
        return dict(value)

    def type_text(self) -> str:
        return "table of strings"

    def shown(self, value: object) -> object:
        if self.secret and isinstance(value, Mapping):
            return {name: "***" for name in value}
        return value


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
        unknown = [key for key in values if key not in type(self).settings()]
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unknown keys: {', '.join(unknown)}")
        problems = self._fill(values, lambda key: f"{self.table}.{key}", expand=False)
        if problems:
            raise ConfigError(problems[0])

    @classmethod
    def from_toml(cls, source: str, raw: Mapping[str, Any], *, noun: str = "key", table: str | None = None) -> Self:
        """The table as read from the file ``source``: every key known, typed, in range, with its
        ``${NAME}`` references expanded.

        :param noun: what an unknown key is called in the error (``option`` for plugins' tables)
        :param table: the table's name in the file when it is not :attr:`table` (a plugin's
            options are the table that names it: ``executor.celery``)
        :raises ConfigError: ``FILE: TABLE.KEY: ...``; :class:`~tickwork.errors.ConfigProblems`
            listing each when there is more than one
        """
        name = table or cls.table
        settings = cls.settings()
        problems: list[str] = []
        for key in raw:
            if key not in settings:
                known = ", ".join(sorted(settings)) or "none"
                problems.append(
                    f"{source}: {name}.{key}: unknown {noun}{did_you_mean(key, settings)}; known {noun}s: {known}"
                )
        self = cls.__new__(cls)
        problems += self._fill(
            {k: v for k, v in raw.items() if k in settings}, lambda key: f"{source}: {name}.{key}", expand=True
        )
        if len(problems) == 1:
            raise ConfigError(problems[0])
        if problems:
            raise ConfigProblems(f"{source}: [{name}] has {len(problems)} problems", problems)
        return self

    def _fill(self, values: Mapping[str, Any], where: Callable[[str], str], *, expand: bool) -> list[str]:
        """Set every key from ``values`` (checked) or its default; returns the problems, each
        naming its key, and then the table's own check (:meth:`validate`) when there were none."""
        problems: list[str] = []
        for key, setting in type(self).settings().items():
            if key in values:
                try:
                    value = setting.check(where(key), values[key], expand=expand)
                except ConfigError as exc:
                    problems.append(str(exc))
                    value = setting.default
            elif setting.required:
                problems.append(setting.missing(where(key)))
                value = setting.default
            else:
                value = setting.default
            object.__setattr__(self, key, value)
        if not problems:
            try:
                self.validate(where)
            except ConfigError as exc:
                problems.append(str(exc))
        return problems

    def validate(self, where: Callable[[str], str]) -> None:
        r"""Check what involves several keys, once each is valid on its own (``node_ttl`` above two
        ``heartbeat_interval``\ s); ``where(key)`` names a key in the error. Default: nothing.

        :raises ConfigError: naming the key at fault
        """

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
        # Secrets masked as ``tickwork config show`` masks them: a repr ends up in logs.
        settings = type(self).settings()
        values = ", ".join(f"{k}={settings[k].shown(v)!r}" for k, v in self.as_dict().items())
        return f"{type(self).__name__}({values})"


@dataclass(frozen=True)
class PluginChoice:
    """A ``[store]`` or ``[membership]`` table: which plugin, with which options."""

    plugin: str
    options: dict[str, Any] = field(default_factory=dict)


class ChoiceTable:
    """A table that names a plugin with ``plugin``; its other keys are that plugin's options,
    declared by the :attr:`~tickwork.abc.Store.section` of the plugin's class (``[store]``,
    ``[membership]``) and checked against it as the file is read."""

    def __init__(self, table: str, plugin: Text) -> None:
        self.table = table
        self.plugin = plugin
        plugin.key = "plugin"

    def settings(self) -> dict[str, Setting[Any]]:
        return {"plugin": self.plugin}

    def default(self) -> PluginChoice:
        return PluginChoice(self.plugin.default)

    def from_toml(self, source: str, raw: Mapping[str, Any]) -> PluginChoice:
        options = dict(raw)
        plugin = self.plugin.check(f"{source}: {self.table}.plugin", options.pop("plugin", self.plugin.default))
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

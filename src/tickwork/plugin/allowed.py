"""``allowed_modules``: which Python modules an executor (or a jobqueue worker) may import and run.

Whoever can write the schedules table (or the queue table) chooses the ``module:function`` that
nodes and workers import and call, ``os:system`` included. An allow-list turns that into "any
function of *my* packages": a target outside it is refused when the schedule is added or declared
(:meth:`~tickwork.abc.Executor.validate_target`) and again, before anything is imported, when it
is about to run, since a row can be written without going through tickwork.

The module named before the ``:`` is not enough: ``myapp.tasks:os.system`` names a module of the
list, yet runs :func:`os.system` when ``myapp.tasks`` did ``import os``. So once the module is
imported, :meth:`AllowedModules.walk` follows the attribute path itself, refusing any step that
reaches a module, and refuses what it ends on unless that is *defined* in the list: a function or
class by its ``__module__``, a bound method by its function's, any other callable (a
``functools.partial``, an instance) by its type's. Builtins (``posix.system``) are defined in no
listed module, and a function re-exported by ``from os import system`` keeps its home.
"""

from __future__ import annotations

import re
import types
from collections.abc import Sequence

from ..errors import ConfigError, ExecutorError

# A dotted module name; a trailing "." is accepted (``myapp.``) and means the same as ``myapp``.
_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\.?")


class AllowedModules:
    """An allow-list of packages; each entry admits that module and every module below it.

    :param entries: e.g. ``["myapp.", "reports.jobs"]``: ``myapp``, ``myapp.tasks``,
        ``reports.jobs.daily`` are inside; ``myapplication``, ``reports`` and ``os`` are not
    :param where: the option's location, named in errors (``[executor.local] allowed_modules``)
    :raises tickwork.errors.ConfigError: if ``entries`` is not a non-empty list of module names
    """

    def __init__(self, entries: Sequence[str], where: str) -> None:
        if isinstance(entries, str) or not isinstance(entries, Sequence) or not entries:
            raise ConfigError(f'{where}: must be a non-empty list of module names, e.g. ["myapp."]')
        # Surrounding spaces are forgiven ("myapp., reports" on a command line); inner ones are not.
        entries = [entry.strip() if isinstance(entry, str) else entry for entry in entries]
        for entry in entries:
            if not isinstance(entry, str) or not _ENTRY.fullmatch(entry):
                raise ConfigError(f"{where}: {entry!r} is not a module name (like 'myapp' or 'myapp.')")
        self.where = where
        self.prefixes = tuple(dict.fromkeys(entry.rstrip(".") for entry in entries))

    def allows(self, module: str) -> bool:
        """Whether ``module`` is one of the entries or below one of them."""
        return any(module == prefix or module.startswith(prefix + ".") for prefix in self.prefixes)

    def check(self, target: object) -> None:
        """Refuse a ``module:function`` target whose module is outside the list (without importing it).

        :raises tickwork.errors.ExecutorError: naming the target and the allowed modules
        """
        module = target.partition(":")[0] if isinstance(target, str) else ""
        if not self.allows(module):
            raise ExecutorError(
                f"target {target!r} is outside {self.where} ({self._listed()}); it is not imported or run"
            )

    def walk(self, target: str, module: object) -> object:
        """Follow the attribute path of ``target`` from its imported ``module``; return what it
        reaches, refusing a path through a module and an object defined outside the list.

        :raises AttributeError: if a step of the path does not exist
        :raises tickwork.errors.ExecutorError: naming the target and why it is refused
        """
        obj = module
        for part in target.partition(":")[2].split("."):
            obj = getattr(obj, part)
            if isinstance(obj, types.ModuleType):
                raise ExecutorError(
                    f"target {target!r} is refused: {part} is a module ({obj.__name__!r}), and attribute paths "
                    f"through modules are refused under {self.where} ({self._listed()}); name the module before "
                    "the ':'; it is not run"
                )
        kind, home = defined_in(obj)
        if home is None or not self.allows(home):
            where = "no module" if home is None else f"module {home!r}"
            raise ExecutorError(
                f"target {target!r} resolves to {target.partition(':')[2]}, {kind} defined in {where}, which is "
                f"not in {self.where} ({self._listed()}); it is not run"
            )
        return obj

    def _listed(self) -> str:
        return ", ".join(self.prefixes)


def defined_in(obj: object) -> tuple[str, str | None]:
    """What ``obj`` is (``a function``) and the module that defines it, if any.

    A method is judged by its function (a classmethod of a listed class is fine, the method of
    an object from elsewhere is not), and an object that is neither function, class nor method
    by its type: a ``functools.partial`` of anything is defined in ``functools``. ``__module__``
    is read only where the language sets it, never from an instance, which could inherit it from
    anywhere or compute it.
    """
    if isinstance(obj, types.MethodType):
        _, home = defined_in(obj.__func__)
        return "a method", home
    if isinstance(obj, types.BuiltinFunctionType):  # also builtin methods, whose __module__ is None
        return "a builtin function", _module_name(obj)
    if isinstance(obj, types.FunctionType):
        return "a function", _module_name(obj)
    if isinstance(obj, type):
        return "a class", _module_name(obj)
    kind = type(obj)
    return f"a {kind.__module__}.{kind.__qualname__} object", _module_name(kind)


def _module_name(obj: object) -> str | None:
    name = getattr(obj, "__module__", None)
    return name if isinstance(name, str) else None


def allowed_modules(entries: Sequence[str] | None, where: str) -> AllowedModules | None:
    """:class:`AllowedModules` for a configured list, or ``None`` when the option is not set (no limit)."""
    return None if entries is None else AllowedModules(entries, where)

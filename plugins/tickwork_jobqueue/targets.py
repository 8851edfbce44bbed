"""``package.module:function`` targets: their syntax, importing them, and the arguments they get."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from typing import Any

from tickwork.errors import ExecutorError
from tickwork.plugin.allowed import AllowedModules

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def split_target(target: str) -> tuple[str, str]:
    """Return ``(module, attribute path)`` of ``package.module:function``.

    :raises tickwork.errors.ExecutorError: if ``target`` does not have that shape
    """
    module, sep, attribute = target.partition(":") if isinstance(target, str) else ("", "", "")
    if not sep or not _DOTTED.fullmatch(module) or not _DOTTED.fullmatch(attribute):
        raise ExecutorError(f"jobqueue target must look like 'package.module:function', got {target!r}")
    return module, attribute


def resolve(target: str, allowed: AllowedModules | None = None) -> Callable[..., Any]:
    """Import the target's module and return the callable it names.

    :param allowed: when given, the module is checked against it before it is imported, and the
        attribute path and what it reaches after (:meth:`AllowedModules.walk`)
    :raises ImportError: if the module (or something it imports) cannot be imported here
    :raises tickwork.errors.ExecutorError: if the module imports but has no such callable, or
        raises something other than ImportError while being imported
    """
    module_name, attribute = split_target(target)
    if allowed is not None:
        allowed.check(target)  # before importing: importing a module runs its code
    try:
        obj: object = importlib.import_module(module_name)
    except ImportError:
        raise
    except Exception as exc:
        raise ExecutorError(f"target {target!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}") from exc
    try:
        if allowed is not None:
            obj = allowed.walk(target, obj)
        else:
            for part in attribute.split("."):
                obj = getattr(obj, part)
    except AttributeError:
        raise ExecutorError(f"target {target!r}: {module_name!r} has no attribute {attribute!r}") from None
    if not callable(obj):
        raise ExecutorError(f"target {target!r} is not callable (it is a {type(obj).__name__})")
    return obj

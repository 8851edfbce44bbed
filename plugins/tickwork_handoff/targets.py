"""Loading ``module:attribute`` references (a Celery app, a Dramatiq broker, a target function)."""

from __future__ import annotations

import importlib
import json
from typing import Any

from tickwork.errors import ConfigError, ExecutorError


def load(reference: str, where: str) -> Any:
    """The object ``module:attribute`` names (the attribute may be dotted).

    :raises tickwork.errors.ConfigError: naming ``where`` and what is wrong
    """
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ConfigError(f'{where}: expected "module:attribute", got {reference!r}')
    try:
        value: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{where}: cannot import {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ConfigError(f"{where}: {module_name!r} has no attribute {attribute!r}") from None
    return value


def check_arguments(executor: str, target: str, arguments: dict[str, Any]) -> None:
    """Every queue here serialises arguments as JSON: refuse what would not survive it.

    :raises tickwork.errors.ExecutorError: naming the target
    """
    try:
        json.dumps(arguments, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ExecutorError(f"{executor} target {target!r}: arguments are not JSON-serialisable: {exc}") from None

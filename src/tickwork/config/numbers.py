"""Checking numbers where they enter (config, decorators, schedule specs, the CLI).

Every number a user gives is finite and within a sensible range, or refused with one line that
names the key. Waits computed from such numbers stay within what ``threading`` accepts.
"""

from __future__ import annotations

import math

from ..errors import ConfigError

DAY = 86400.0
YEAR = 365 * DAY


def number(where: str, value: object, *, low: float, high: float, low_open: bool = False, unit: str = "") -> float:
    """``value`` as a float if it is a finite number in ``[low, high]`` (``(low, high]`` with
    ``low_open``).

    :raises tickwork.errors.ConfigError: naming ``where`` otherwise
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: expected a number, got {type(value).__name__} {value!r}")
    ok = math.isfinite(value) and (low < value if low_open else low <= value) and value <= high
    if not ok:
        raise ConfigError(f"{where}: must be {_range(low, high, low_open, unit)}, got {value!r}")
    return float(value)


def integer(where: str, value: object, *, low: int, high: int) -> int:
    """``value`` if it is an integer in ``[low, high]``.

    :raises tickwork.errors.ConfigError: naming ``where`` otherwise
    """
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ConfigError(f"{where}: must be an integer from {low} to {high}, got {value!r}")
    return value


def _range(low: float, high: float, low_open: bool, unit: str) -> str:
    unit = f" {unit}" if unit else ""
    return f"a finite number{unit} {'>' if low_open else '>='} {low:g} and <= {high:g}"

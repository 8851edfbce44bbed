"""Whole seconds as an ``interval`` expression (``90`` -> ``1m30s``)."""

from __future__ import annotations

UNITS = (("w", 7 * 86400), ("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def interval_expression(seconds: float, anchor: str | None = None) -> str:
    """The ``interval`` expression of a period of ``seconds``, optionally ``@anchor``.

    :raises ValueError: for a period that is not a positive whole number of seconds (an
        ``interval`` trigger counts whole seconds)
    """
    if not seconds > 0 or seconds != int(seconds):
        raise ValueError(f"the period must be a positive whole number of seconds, got {seconds:g}")
    left = int(seconds)
    parts: list[str] = []
    for unit, size in UNITS:
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) + (f"@{anchor}" if anchor else "")

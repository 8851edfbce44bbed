"""What a schedule's *definition* is, for its versions (:class:`~tickwork.structures.ScheduleVersion`):
the expression, the target and every option of :data:`~tickwork.scheduling.options.OPTIONS` but
``enabled``, as JSON. Its name is its identity, ``enabled`` (and a pause) its state, and its
``module`` (who declared it) cannot change; none of them makes a version.

The stores call :func:`definition` and :func:`changes` in the transaction of the write, so every
path that writes a definition (``jobs add/update``, the admin API, the dashboard, an import, a
declaration's sync, a revert) writes its version with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..structures import ScheduleSpec
from .options import OPTIONS

#: Who wrote the versions a node's declaration sync writes.
CODE = "code"
#: The options that are state, not definition.
_STATE = frozenset({"enabled"})
#: Each option's default as JSON (a new schedule's changes leave out the fields at them).
_DEFAULTS: dict[str, Any] = {o.name: o.dump(o.default) for o in OPTIONS}


#: The options a definition holds.
_DEFINED = tuple(o for o in OPTIONS if o.name not in _STATE)


def definition(spec: ScheduleSpec) -> dict[str, Any]:
    """``spec``'s definition as JSON, under the names ``Admin.update`` takes: what a version
    stores and what a revert passes back to ``Admin.update``."""
    out: dict[str, Any] = {"expression": spec.expression, "target": spec.target}
    for option in _DEFINED:
        out[option.name] = option.dump(getattr(spec, option.field))
    return out


def changes(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The fields of definition ``new`` that differ from ``old``, each as ``{"old": ...,
    "new": ...}``, in the definition's order. ``old`` ``None``: a new schedule, whose changes are
    the fields it sets away from their defaults (``old`` ``null``); its version's definition
    holds every field."""
    if old is None:
        return {
            key: {"old": None, "new": value}
            for key, value in new.items()
            if value not in (None, [], {}) and value != _DEFAULTS.get(key)
        }
    # Both sides as definition() writes them (lists, not tuples): compared as they are.
    return {key: {"old": old.get(key), "new": value} for key, value in new.items() if old.get(key) != value}

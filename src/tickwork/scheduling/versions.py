"""What a schedule's *definition* is, for its versions (:class:`~tickwork.structures.ScheduleVersion`):
the expression, the target and every option of :data:`~tickwork.scheduling.options.OPTIONS` but
``enabled``, as JSON. Its name is its identity, ``enabled`` (and a pause) its state, and its
``module`` (who declared it) cannot change; none of them makes a version.

The stores call :func:`definition` and :func:`changes` in the transaction of the write, so every
path that writes a definition (``jobs add/update``, the admin API, the dashboard, an import, a
declaration's sync, a revert) writes its version with it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from operator import attrgetter
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


#: What a first version's JSON depends on besides the target: the expression and every defined
#: option but ``args`` (a dict, unhashable: a spec with arguments is not shared, and one without
#: any dumps ``{}`` like every other).
_SHAPE_FIELDS = ("expression", *(o.field for o in _DEFINED if o.name != "args"))
_shape = attrgetter(*_SHAPE_FIELDS)


#: A target whose JSON is itself in quotes (what a declared job's ``module:qualname`` is): its
#: first version can be joined around it by the database (:meth:`FirstVersions.template`).
_PLAIN_TARGET = re.compile(r"[A-Za-z0-9_.:]+")


@dataclass(frozen=True)
class Template:
    """A first version's JSON text around its target, the quotes included: the changes are
    ``changes_head + target + changes_tail``, the definition ``definition_head + target +
    definition_tail``. One per shape; the store may join it to each target itself."""

    changes_head: str
    changes_tail: str
    definition_head: str
    definition_tail: str

    def texts(self, target: str) -> tuple[str, str]:
        return (
            self.changes_head + target + self.changes_tail,
            self.definition_head + target + self.definition_tail,
        )


class FirstVersions:
    """The first version of new schedules, ``(changes, definition)`` as the JSON text
    ``json.dumps`` writes for :func:`changes` ``(None, definition(spec))`` and
    :func:`definition`, each worked out once per *shape* (everything but the target) and then
    joined around each spec's target: the declared jobs of a module mostly share a few shapes,
    and a first sync of 20,000 of them spent most of its Python on 20,000 definitions and their
    JSON. One per write (the shapes are kept for as long as it lives)."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[object, ...], tuple[str, str, str, str]] = {}
        self._templates: dict[tuple[str, str, str, str], Template] = {}

    def texts(self, spec: ScheduleSpec) -> tuple[str, str]:
        """``spec``'s first version: its changes and its definition, as JSON text."""
        parts = self._parts_of(spec)
        if parts is None:
            return _texts(spec)
        target = json.dumps(spec.target)
        return parts[0] + target + parts[1], parts[2] + target + parts[3]

    def template(self, spec: ScheduleSpec) -> Template | None:
        """``spec``'s shape as a :class:`Template` (one object per shape), or ``None`` when its
        first version is not shared (arguments, an unhashable option) or its target's JSON is
        not the target in quotes (it must escape a character or may not be written as is)."""
        if _PLAIN_TARGET.fullmatch(spec.target) is None:
            return None
        parts = self._parts_of(spec)
        if parts is None:
            return None
        found = self._templates.get(parts)
        if found is None:
            found = self._templates[parts] = Template(parts[0] + '"', '"' + parts[1], parts[2] + '"', '"' + parts[3])
        return found

    def _parts_of(self, spec: ScheduleSpec) -> tuple[str, str, str, str] | None:
        if spec.arguments:
            return None
        values = _shape(spec)
        # The types too: equal values of two types (1 and True) are written differently.
        key = (values, tuple(map(type, values)))
        try:
            parts = self._shapes.get(key)
        except TypeError:  # an unhashable value (a list where a tuple belongs): not shared
            return None
        if parts is None:
            parts = self._shapes[key] = _parts(spec)
        return parts


def _texts(spec: ScheduleSpec) -> tuple[str, str]:
    new = definition(spec)
    return json.dumps(changes(None, new)), json.dumps(new)


def _parts(spec: ScheduleSpec) -> tuple[str, str, str, str]:
    """The JSON of ``spec``'s first version before and after its target: changes, definition."""
    new = definition(spec)
    changes_head, changes_tail = _around(changes(None, new), "target")
    definition_head, definition_tail = _around(new, "target")
    # A new schedule's change of the target is {"old": null, "new": TARGET}.
    return changes_head + '{"old": null, "new": ', "}" + changes_tail, definition_head, definition_tail


def _around(obj: Mapping[str, Any], key: str) -> tuple[str, str]:
    """``json.dumps(obj)`` cut where ``obj[key]``'s JSON goes (``key`` must be in ``obj``)."""
    items = [json.dumps(k) + ": " + json.dumps(v) for k, v in obj.items()]
    at = list(obj).index(key)
    head = "{" + "".join(item + ", " for item in items[:at]) + json.dumps(key) + ": "
    tail = "".join(", " + item for item in items[at + 1 :]) + "}"
    return head, tail

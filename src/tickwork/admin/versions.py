"""The admin API's schedule versions (:class:`Versions`, a part of :class:`tickwork.Admin`):
reading the versions of a schedule's definition and reverting to one (docs/admin-api.md#versions).
The versions themselves are written by the store with each write (:mod:`tickwork.scheduling.versions`)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any

from ..abc import Store
from ..errors import ConfigError, ScheduleNotFoundError, TickworkError
from ..structures import ScheduleVersion
from .info import ScheduleInfo
from .writes import UPDATABLE


class Versions:
    """The versions part of :class:`tickwork.Admin` (which provides the store and :meth:`update`)."""

    if TYPE_CHECKING:

        def store(self, *, write: bool = False) -> Store: ...

        def named_in(self) -> str: ...

        def read_in(self) -> str | None: ...

        def names(self) -> builtins.list[str]: ...

        def update(
            self, name: str, *, check_nodes: bool = True, by: str | None = None, **fields: Any
        ) -> ScheduleInfo: ...

    def versions(self, name: str) -> builtins.list[ScheduleVersion]:
        """The versions of a schedule's definition, oldest first: each with its number, when it
        was written (database clock), by whom and the fields it changed (old and new). What
        counts as the definition: :mod:`tickwork.scheduling.versions`.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        """
        try:
            return self.store().versions(name, namespace=self.named_in())
        except ScheduleNotFoundError:
            raise ScheduleNotFoundError(name, known=self.names()) from None

    def revert(self, name: str, to: int, *, by: str | None = None, check_nodes: bool = True) -> ScheduleInfo:
        """Give a schedule the definition of its version ``to`` again, as a new version (written
        ``by`` whom), through :meth:`update`: checked as any change is, the next fire recomputed
        only when the trigger changes, and a run in flight ends under the definition it was
        claimed with (docs/claim-protocol.md, "Writes while a run is in flight"). Its state
        (enabled, paused) stays as it is. Reverting to the current definition changes nothing.

        :raises tickwork.ScheduleNotFoundError: if there is no such schedule
        :raises tickwork.ConfigError: if it has no version ``to``
        :raises tickwork.TickworkError: for a schedule declared in code (change the declaration)
        """
        store = self.store(write=True)
        current = store.get(name, namespace=self.named_in())
        if current.spec.module is not None:
            raise TickworkError(
                f"schedule {name!r} is declared in {current.spec.module}; change the declaration, "
                "not the stored copy (the node's next sync would write it back)"
            )
        chosen = next((v for v in self.versions(name) if v.version == to), None)
        if chosen is None:
            known = [v.version for v in self.versions(name)]
            have = f"its versions are 1 to {max(known)}" if known else "it has no recorded versions"
            raise ConfigError(f"revert: schedule {name!r} has no version {to}; {have}")
        # Fields a newer tickwork may have written and this one does not know are passed over.
        fields = {key: value for key, value in chosen.definition.items() if key in UPDATABLE}
        return self.update(name, check_nodes=check_nodes, by=by, **fields)

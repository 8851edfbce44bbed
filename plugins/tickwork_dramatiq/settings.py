"""The options of ``[executor.dramatiq]``, declared once (importable without Dramatiq)."""

from __future__ import annotations

from tickwork.config import OptionalText, Reference
from tickwork_handoff.settings import HandoffSettings


class DramatiqSettings(HandoffSettings, table="executor.dramatiq"):
    """``[executor.dramatiq]`` (docs/handoff.md#options)."""

    broker = Reference(example="proj.broker:broker", help="The Dramatiq broker, imported at node start.")
    queue = OptionalText(nonblank=True, help="Queue to enqueue on.", shown_default="the actor's queue, else `default`")

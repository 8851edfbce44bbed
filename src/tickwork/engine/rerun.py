"""Reruns of fires abandoned with their node (``on_abandon = "rerun"``, docs/cluster.md#reruns).

A dead node's running runs are recorded ``abandoned`` and its schedules released with their next
fire unchanged, so an owner claims the abandoned fire again; the claim comes back without a run
id (the history has the fire). For a schedule that asks for it, :class:`Reruns` asks the store to
open the fire's next attempt (:meth:`tickwork.abc.Store.start_rerun`: fenced on the claim, by the
database clock, within the schedule's misfire grace and its retry budget), and the engine runs
that attempt like a retry: same fire time, ``attempt`` one more.
"""

from __future__ import annotations

import logging

from ..abc import Store
from ..structures import Claim, rerun_attempts
from .planning import grace_of

log = logging.getLogger("tickwork.engine")


class Reruns:
    """Opens the rerun of an abandoned fire for the claims that come back without a run id.

    :param default_grace: the node's ``scheduler.misfire_grace``, for schedules without their own
    """

    def __init__(self, store: Store, node_id: str, default_grace: float) -> None:
        self.store = store
        self.node_id = node_id
        self.default_grace = default_grace

    @staticmethod
    def wanted(claim: Claim) -> bool:
        """Whether ``claim`` (of a fire the history has already) may be a rerun."""
        return claim.run_id is None and claim.spec.on_abandon.reruns

    def start(self, claim: Claim) -> Claim | None:
        """``claim`` as the fire's next attempt with its run id, or ``None``: not rerun (the fire
        was not abandoned, the refusal is noted on its abandoned row, or the claim is gone).

        :raises tickwork.errors.StoreError: the store could not answer (the claim is then left
            untracked: the reconcile gives it back and it is claimed, and judged, again)
        """
        spec = claim.spec
        rerun = self.store.start_rerun(
            self.node_id,
            claim,
            grace=grace_of(spec, self.default_grace),
            max_attempt=rerun_attempts(spec.retries),
        )
        if rerun is not None:
            log.warning(
                "%s: the fire at %s was abandoned with its node; running it again as attempt %d",
                spec.name,
                claim.scheduled_for.isoformat(),
                rerun.attempt,
            )
        return rerun

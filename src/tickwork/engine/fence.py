"""The start fence: a run handed to an executor starts its job body only while this node still
holds its fire (docs/claim-protocol.md, "A node declared dead").

A run is recorded started when the engine hands it to its executor, but an executor with a queue
(the local executor's worker threads, all busy) may start its body much later. If the node froze
meanwhile (``SIGSTOP``, a VM pause) past ``node_ttl``, the others declared it dead and recorded
the run ``abandoned``; a worker that resumes before the heartbeat thread finds out must not start
that body (measured before this fence: 35 queued fires started 6 s late after a 6 s freeze).

The check is the node's own knowledge, no database round trip (one per job start would cost a
statement per fire at 1,000 fires/s): the membership's count of declarations of death
(:meth:`~tickwork.abc.Membership.rejoins`) must be the one the run was handed over under, and the
node must be healthy (its heartbeat renewed within ``node_ttl / 2``, by the monotonic clock): an
unhealthy node may have been declared dead without knowing it yet, so its bodies wait until a
heartbeat tells either way.
"""

from __future__ import annotations

from ..abc import Membership
from ..structures import NOT_STARTED, StartVerdict

__all__ = ["NOT_STARTED", "StartFence", "StartVerdict"]


class StartFence:
    """The :class:`~tickwork.abc.BodyFence` of the runs an engine handed to its executors under
    one count of declarations of death (``epoch``). One per count, shared by every run handed over meanwhile: nothing is
    built per run, and :meth:`verdict` reads two numbers (safe from any thread).

    :param epoch: :meth:`Membership.rejoins` as the engine last acted on it: a run handed over
        after the count moved but before the engine dropped what it held is under the old count,
        so it is dropped too (it may have been claimed before the declaration)
    """

    __slots__ = ("epoch", "membership")

    def __init__(self, membership: Membership, epoch: int) -> None:
        self.membership = membership
        self.epoch = epoch

    def verdict(self) -> StartVerdict:
        """Whether a run handed over under this fence may start its body now."""
        # Health first, then the count: a declaration found in between is still seen (the
        # heartbeat membership moves the count before the node is healthy again).
        healthy = self.membership.healthy()
        if self.membership.rejoins() != self.epoch:
            return StartVerdict.DROP
        return StartVerdict.START if healthy else StartVerdict.WAIT

    def __repr__(self) -> str:
        return f"StartFence(epoch={self.epoch})"

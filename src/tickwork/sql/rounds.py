"""A start window's round in one transaction (docs/claim-protocol.md#start-windows), for a
server store that does the start, the takeover riding on it and the gathered ends together
(:meth:`OneTransactionRound._round_once`): what follows the transaction is the same on every
such store."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

from ..errors import StoreError
from ..structures import Claim, Finish, StartRound
from .serverstore import ServerStore
from .starting import say_taken_over


class OneTransactionRound(ServerStore):
    """:meth:`start_round` by one transaction (:meth:`_round_once`), then the takeover said, and
    the starts refused and the ends passed over as locked asked again."""

    def start_round(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float = 0.0,
        *,
        take_over: bool = False,
        finishes: Sequence[Finish] = (),
    ) -> StartRound:
        granted, taken, ended = self._round_once(node_id, claims, grace, lead, take_over, finishes)
        if taken:
            say_taken_over(taken)
        refused = [claim for claim, ok in zip(claims, granted, strict=True) if not ok]
        if refused:
            # Asked again at once, in a transaction of its own (which says which were refused
            # only for a locked row, and by whom). The round's locking read passes over a row
            # another session holds even for an instant: on MySQL/MariaDB another node's claim
            # locks each row its scan of the due index examines, running rows included, until
            # it has evaluated them. Refused, a start waits for its takeover (start_grace).
            try:
                again = iter(self.start_held(node_id, refused, grace, lead))
            except StoreError:
                pass  # the round committed: its starts stand, the refused wait for their takeover
            else:
                granted = tuple(ok or next(again) for ok in granted)
        error: StoreError | None = None
        if finishes:
            # Ends passed over as locked: asked again at once, as Store.finish does. The round
            # committed: an error here must not undo it in the caller's eyes (the starts stand),
            # so those ends stay unanswered, kept by the caller and written again later.
            try:
                ended = self._ask_busy_again(node_id, finishes, ended)
            except StoreError as exc:
                error = exc
        return StartRound(granted, len(taken) if take_over else None, tuple(ended), error)

    @abstractmethod
    def _round_once(
        self,
        node_id: str,
        claims: Sequence[Claim],
        grace: float,
        lead: float,
        take_over: bool,
        finishes: Sequence[Finish],
    ) -> tuple[tuple[bool, ...], list[str], list[bool | None]]:
        """The round's transaction: per claim whether it started, the names of the schedules
        taken over, and per finish whether its end landed (``None``: its row was locked)."""

"""The store contract's tests of claims that expire (docs/claim-protocol.md, invariant 4): a
node's release, the hard timeout's reap, renewals, and the node records."""

from __future__ import annotations

from datetime import timedelta

from ..abc import Store
from ..structures import (
    RunStatus,
    ScheduleState,
)
from .contract_helpers import MINUTE, claim_all, finish, spec


class ClaimExpiryContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    # -- invariant 4, claims expire ----------------------------------------------------------------

    def test_release_node_abandons_its_runs_only(self, store: Store) -> None:
        t = store.now()
        store.add(spec("a"), t)
        store.add(spec("b"), t)
        (ca,) = store.claim_due("n1", limit=1, buckets=None)
        (cb,) = store.claim_due("n2", limit=1, buckets=None)
        assert store.release_node("n1", "restarted") == 1
        by_name = {r.schedule: r for r in store.history()}
        assert by_name[ca.spec.name].status is RunStatus.ABANDONED and by_name[ca.spec.name].error == "restarted"
        assert by_name[cb.spec.name].status is RunStatus.RUNNING
        assert store.get(cb.spec.name).state is ScheduleState.RUNNING

    def test_hard_timeout_reaps_and_renew_keeps_alive(self, store: Store) -> None:
        t = store.now()
        store.add(spec("slow", timeout=timedelta(seconds=1)), t)
        store.add(spec("kept", timeout=timedelta(hours=1)), t)
        claims = {c.spec.name: c for c in claim_all(store)}
        store.renew("n1", [claims["kept"]])
        renewed = store.get("kept").claimed_at
        assert renewed is not None and renewed >= claims["kept"].claimed_at
        assert store.reap_expired(60) == 0  # no claim is older than its timeout + a minute
        # A negative grace moves the deadline before the claim: "slow" (1 s) is past it at once,
        # "kept" (1 h) is not; the times compared are all the store's own.
        assert store.reap_expired(-2) == 1
        assert store.get("slow").state is ScheduleState.IDLE
        assert store.get("kept").state is ScheduleState.RUNNING
        by_name = {r.schedule: r for r in store.history()}
        assert by_name["slow"].status is RunStatus.TIMED_OUT and "hard timeout" in (by_name["slow"].error or "")
        assert by_name["kept"].status is RunStatus.RUNNING
        assert not finish(store, claims["slow"], t + MINUTE)  # the reaped claim's end is fenced out

    def test_renew_only_touches_the_holders_claims(self, store: Store) -> None:
        store.add(spec("a"), store.now())
        (c,) = claim_all(store, "n1")
        store.renew("n2", [c])
        assert store.get("a").claimed_at == c.claimed_at

    # -- nodes -------------------------------------------------------------------------------------

    def test_nodes_and_heartbeats(self, store: Store) -> None:
        first = store.heartbeat("n1")
        second = store.heartbeat("n1")
        assert second >= first
        store.heartbeat("n2")
        infos = {n.id: n for n in store.nodes()}
        assert infos["n1"].started_at == first and infos["n1"].heartbeat_at == second
        store.remove_node("n1")
        assert [n.id for n in store.nodes()] == ["n2"]

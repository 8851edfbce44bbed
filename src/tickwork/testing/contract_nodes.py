"""The store contract's tests of node records: the executor names a node publishes
(:meth:`~tickwork.abc.Store.announce_executors`), which the admin API checks a new schedule's
executor against, kept through heartbeats and through the record made again after a rejoin."""

from __future__ import annotations

from ..abc import Store


def _executors(store: Store, node_id: str) -> tuple[str, ...] | None:
    (record,) = [n for n in store.nodes() if n.id == node_id]
    return record.executors


class NodeRecordContract:
    """Mixed into :class:`~tickwork.testing.StoreContract`; uses its ``store`` fixture."""

    def test_a_node_publishes_its_executors(self, store: Store) -> None:
        assert store.register_node("n1", "instance-1", 30.0) is None
        assert store.register_node("n2", "instance-2", 30.0) is None
        assert _executors(store, "n1") is None  # nothing announced yet: as a node of an older tickwork
        store.announce_executors("n1", ["local", "http", "local"])
        if type(store).announce_executors is Store.announce_executors:
            # A store that keeps no names (the default) reads None: the admin API then checks
            # against its local configuration, never refusing on a guess.
            assert _executors(store, "n1") is None
            return
        assert _executors(store, "n1") == ("http", "local")  # sorted, each once
        assert _executors(store, "n2") is None  # another node's record is not touched
        store.heartbeat("n1")
        assert store.refresh_heartbeat("n1") is not None
        assert _executors(store, "n1") == ("http", "local")
        store.announce_executors("n1", ["local"])  # announced again: replaced, not merged
        assert _executors(store, "n1") == ("local",)

    def test_the_record_made_again_after_a_rejoin_keeps_the_executors(self, store: Store) -> None:
        if type(store).announce_executors is Store.announce_executors:
            return  # nothing kept: the test above checked that it reads None
        assert store.register_node("n1", "instance-1", 30.0) is None
        store.announce_executors("n1", ["local"])
        # The others declared n1 dead and removed its record; its next beat writes it again.
        store.remove_node("n1")
        assert store.refresh_heartbeat("n1") is None
        store.heartbeat("n1")
        assert _executors(store, "n1") == ("local",)

"""``--node-import tickwork_bench.earliestfirst``: the nodes claim as before namespaces, earliest
first across every namespace in one statement, so that the ``tenants`` workload can compare the
fair claim with it in one run (docs/benchmarks.md#namespaces-a-herd-beside-every-second-fires)."""

from __future__ import annotations

from tickwork.sql.claimturns import NamespaceTurns


def _none(self: NamespaceTurns) -> tuple[str, ...]:
    return ()  # no namespace known: claim_due takes its one-statement path


NamespaceTurns.known_namespaces = _none  # type: ignore[method-assign]

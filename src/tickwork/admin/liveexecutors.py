"""Whether the live nodes run a schedule's executor (:class:`LiveExecutors`), read from what each
node publishes in its record (:meth:`tickwork.abc.Store.announce_executors`).

The rule, and why it asks *every* live node: each membership lets any live node claim any
schedule sooner or later (``single`` and ``all`` attempt every schedule; under ``hashring`` a
schedule's owners change as nodes come and go, and any node takes a fire overdue by
``steal_after``), and a node that claims a schedule whose executor it lacks parks it. So a
schedule is refused when a live node that publishes its executors lacks the schedule's one.
Nodes that publish nothing (an older tickwork) are never held against it: the local
configuration decides then, as when no node is live.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from .info import NodeInfo

#: How :meth:`tickwork.Admin.add` and the others are told to skip the check, as each surface
#: spells it (the error names them all: the one seen depends on where it was raised).
ESCAPE = "--no-node-check, or check_nodes=False in Python"
#: Nodes named in a message, at most; the rest are counted.
LISTED = 5


def _names(nodes: Sequence[NodeInfo]) -> str:
    return ", ".join(n.id for n in nodes)


def _runs(node: NodeInfo) -> str:
    return ", ".join(node.executors or ()) or "no executor"


@dataclass(frozen=True)
class ExecutorCheck:
    """What the live nodes say about one executor.

    :param executor: its name
    :param live: the live nodes when they were read (database clock)
    :param where: the local configuration, as messages name it
    """

    executor: str
    live: tuple[NodeInfo, ...]
    where: str

    @property
    def lacking(self) -> tuple[NodeInfo, ...]:
        """Live nodes that publish their executors, without this one: each would park it."""
        return tuple(n for n in self.live if n.executors is not None and self.executor not in n.executors)

    @property
    def unpublished(self) -> tuple[NodeInfo, ...]:
        """Live nodes that publish nothing (an older tickwork)."""
        return tuple(n for n in self.live if n.executors is None)

    @property
    def refused(self) -> bool:
        return bool(self.lacking)

    @property
    def run_by_live_nodes(self) -> bool:
        """Every live node publishes that it runs it: the local configuration need not."""
        return bool(self.live) and not self.lacking and not self.unpublished

    def error(self) -> str:
        """The one-line refusal: who lacks it, what they run, and the fix."""
        lacking = self.lacking
        which = ", ".join(f"{n.id} (runs: {_runs(n)})" for n in lacking[:LISTED])
        if len(lacking) > LISTED:  # one line, however large the cluster
            which += f" and {len(lacking) - LISTED} more"
        others = [n for n in self.live if n not in lacking and n.executors is not None]
        if others:
            runs = "runs" if len(others) == 1 else "run"
            shown = _names(others[:LISTED]) + (f" and {len(others) - LISTED} more" if len(others) > LISTED else "")
            but = f"; {shown} {runs} it, but"
        else:
            but = ", and"
        return (
            f"executor {self.executor!r} is not configured on live node{'' if len(lacking) == 1 else 's'} "
            f"{which}{but} any live node may claim the schedule and park it: configure "
            f"[executor.{self.executor}] on the nodes and restart them, or add it before they run it ({ESCAPE})"
        )

    def note(self) -> str | None:
        """What the check could not tell (``None``: the live nodes answered in full)."""
        if not self.live:
            return (
                f"no live node could be checked for executor {self.executor!r} (none is heartbeating); "
                f"it was checked against {self.where} only"
            )
        if self.unpublished:
            nodes = self.unpublished
            return (
                f"live node{'' if len(nodes) == 1 else 's'} {_names(nodes)} "
                f"{'does' if len(nodes) == 1 else 'do'} not publish which executors "
                f"{'it runs' if len(nodes) == 1 else 'they run'} (an older tickwork); executor {self.executor!r} "
                f"was checked against {self.where} only"
            )
        return None


class LiveExecutors:
    """The live nodes, read once, judging each executor asked about (:class:`ExecutorCheck`).

    :param nodes: the node records (:meth:`tickwork.Admin.nodes`); the dead ones are left out
    :param where: the local configuration, as messages name it
    """

    def __init__(self, nodes: Sequence[NodeInfo], where: str) -> None:
        self.live = tuple(n for n in nodes if n.live)
        self.where = where

    def check(self, executor: str) -> ExecutorCheck:
        return ExecutorCheck(executor, self.live, self.where)

    def judge(self, executor: str) -> bool:
        """For :meth:`~tickwork.scheduling.validation.SpecBuilder.check`: ``True`` when every
        live node runs ``executor`` (the local configuration need not), ``False`` when the
        local configuration must decide.

        :raises tickwork.ConfigError: when a live node would park a schedule on it
        """
        check = self.check(executor)
        if check.refused:
            raise ConfigError(check.error())
        return check.run_by_live_nodes

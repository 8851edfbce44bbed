"""An embedded node stepped by hand: a real node claims and runs what is due now, then stops."""

from __future__ import annotations

from typing import Any

from tickwork.config import parse
from tickwork.node import Node


def run_due(config: dict[str, Any]) -> Node:
    """A real node: claim and run what is due now, wait for the runs, stop."""
    node = Node(parse(config))
    node.open()  # stepped by hand below: no loop thread
    try:
        node.engine.tick()
    finally:
        node.shutdown()
    return node

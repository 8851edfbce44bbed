"""Plain asyncio: a tickwork node for the lifetime of an ``async with`` block.

Run with ``TICKWORK_CONFIG=tickwork.toml python -m examples.embedding.asyncio_app``.
"""

from __future__ import annotations

import asyncio
import logging

import tickwork


async def main() -> None:
    # Found like the CLI finds it: $TICKWORK_CONFIG, then ./tickwork.toml.
    async with tickwork.Node.from_config(jobs=["examples.embedding.jobs"]) as node:
        # node.admin is tickwork.connect() on the node's configuration.
        node.admin.add("daily-report", "1s", "examples.embedding.jobs:report", kind="interval",
                       args={"recipient": "ops@example.com"})  # fmt: skip
        while not [r for r in node.admin.history(schedule="daily-report") if r.status.final]:
            await asyncio.sleep(0.1)  # the application does its own work meanwhile
        print("daily-report fired", flush=True)
    # Leaving the block stopped the node: runs recorded, claims released, node record removed.
    print("node stopped", flush=True)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    asyncio.run(main())

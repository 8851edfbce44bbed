"""The local executor: threads, asyncio and child processes in this node."""

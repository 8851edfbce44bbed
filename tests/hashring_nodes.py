"""The node configuration the two-node PostgreSQL scenarios share (overlap, concurrency,
backfill): a hashring member with a 1 s heartbeat and a 4 s node_ttl."""

from __future__ import annotations

from pathlib import Path


def node_config(tmp_path: Path, url: str, node_id: str) -> Path:
    path = tmp_path / f"{node_id}.toml"
    path.write_text(
        f'[scheduler]\nnode_id = "{node_id}"\n'
        f'[store]\nplugin = "postgres"\nurl = "{url}"\n'
        '[membership]\nplugin = "hashring"\nheartbeat_interval = 1.0\nnode_ttl = 4.0\n'
    )
    return path

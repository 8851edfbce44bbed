"""SQLite store plugin for tickwork (the embedded default)."""

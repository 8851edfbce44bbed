"""PostgreSQL store plugin for tickwork (pip install tickwork[postgres])."""

"""Shared test support: job modules node processes import by dotted path, fixtures, fakes, servers."""

"""The exit statuses of ``tickwork`` (listed in ``tickwork --help``)."""

from __future__ import annotations

#: Invalid input: a bad option, expression, config key, job module, ...
EXIT_USAGE = 2
#: A state the command cannot act on: an unknown name, an old schema, a missing store, ...
EXIT_STATE = 1

"""``allowed_modules``: which Python modules an executor (or a jobqueue worker) may import and run.

Whoever can write the schedules table (or the queue table) chooses the ``module:function`` that
nodes and workers import and call, ``os:system`` included. An allow-list turns that into "any
function of *my* packages": a target outside it is refused when the schedule is added or declared
(:meth:`~tickwork.abc.Executor.validate_target`) and again, before anything is imported, when it
is about to run, since a row can be written without going through tickwork.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..errors import ConfigError, ExecutorError

# A dotted module name; a trailing "." is accepted (``myapp.``) and means the same as ``myapp``.
_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*\.?")


class AllowedModules:
    """An allow-list of packages; each entry admits that module and every module below it.

    :param entries: e.g. ``["myapp.", "reports.jobs"]``: ``myapp``, ``myapp.tasks``,
        ``reports.jobs.daily`` are inside; ``myapplication``, ``reports`` and ``os`` are not
    :param where: the option's location, named in errors (``[executor.local] allowed_modules``)
    :raises tickwork.errors.ConfigError: if ``entries`` is not a non-empty list of module names
    """

    def __init__(self, entries: Sequence[str], where: str) -> None:
        if isinstance(entries, str) or not isinstance(entries, Sequence) or not entries:
            raise ConfigError(f'{where}: must be a non-empty list of module names, e.g. ["myapp."]')
        # Surrounding spaces are forgiven ("myapp., reports" on a command line); inner ones are not.
        entries = [entry.strip() if isinstance(entry, str) else entry for entry in entries]
        for entry in entries:
            if not isinstance(entry, str) or not _ENTRY.fullmatch(entry):
                raise ConfigError(f"{where}: {entry!r} is not a module name (like 'myapp' or 'myapp.')")
        self.where = where
        self.prefixes = tuple(dict.fromkeys(entry.rstrip(".") for entry in entries))

    def allows(self, module: str) -> bool:
        """Whether ``module`` is one of the entries or below one of them."""
        return any(module == prefix or module.startswith(prefix + ".") for prefix in self.prefixes)

    def check(self, target: object) -> None:
        """Refuse a ``module:function`` target whose module is outside the list (without importing it).

        :raises tickwork.errors.ExecutorError: naming the target and the allowed modules
        """
        module = target.partition(":")[0] if isinstance(target, str) else ""
        if not self.allows(module):
            listed = ", ".join(self.prefixes)
            raise ExecutorError(f"target {target!r} is outside {self.where} ({listed}); it is not imported or run")


def allowed_modules(entries: Sequence[str] | None, where: str) -> AllowedModules | None:
    """:class:`AllowedModules` for a configured list, or ``None`` when the option is not set (no limit)."""
    return None if entries is None else AllowedModules(entries, where)

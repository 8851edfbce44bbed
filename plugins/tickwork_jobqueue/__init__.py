"""The ``jobqueue`` executor: a fire enqueues a job into a SQL table that separate workers consume.

Modules: :mod:`.schema` (the queue table), :mod:`.database` (URLs, engines, the database clock),
:mod:`.queries` (every statement on the table), :mod:`.targets` (``module:function`` references),
:mod:`.executor` (the executor), :mod:`.worker` (the worker and its command line),
:mod:`.plugin` (registration). See docs/plugins.md for the walk-through.
"""

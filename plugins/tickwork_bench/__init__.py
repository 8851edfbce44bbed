"""``tickwork bench``: real node processes against a scratch store, measured from the run history.

The harness seeds schedules with a no-op job, starts K ``tickwork_bench.nodeproc`` processes, makes
the schedules due by the database clock and reads fires, lag and duplicates back from the history
table. The ``sync`` workload (:mod:`tickwork_bench.sync`) instead times ``tickwork run`` starting
with many declared jobs. See docs/benchmarks.md.
"""

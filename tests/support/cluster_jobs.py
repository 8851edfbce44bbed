"""The job the cluster tests' node processes run: it leaves a line per execution in a file."""

from __future__ import annotations

import os
import time


def work(n: int) -> None:
    # O_APPEND writes of one short line are atomic: the file is the ground truth of executions.
    fd = os.open(os.environ["CLUSTER_FIRES"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n} {os.getpid()}\n".encode())
    os.close(fd)
    time.sleep(0.05)  # long enough for runs to be in flight when a node is killed
    done = os.environ.get("CLUSTER_DONE")
    if done:
        # benchmarks/failover_chaos.py: which runs completed (their ends may still be lost to a kill).
        import tickwork

        fd = os.open(done, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, f"{n} {tickwork.current_run().scheduled_for.isoformat()}\n".encode())
        os.close(fd)


def odd_fails(n: int) -> None:
    """Fails on fires at odd seconds (each attempt is recorded before it fails)."""
    import tickwork

    run = tickwork.current_run()
    fd = os.open(os.environ["CLUSTER_FIRES"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n} {os.getpid()} {run.scheduled_for.isoformat()} {run.attempt}\n".encode())
    os.close(fd)
    if run.scheduled_for.second % 2 and run.attempt < 3:
        raise RuntimeError(f"odd second, attempt {run.attempt}")


def slow(n: int) -> None:
    """Like :func:`work`, but a node running one at a time falls behind a fire per second."""
    work(n)
    time.sleep(0.25)


def fails(n: int) -> None:
    """Always fails (after leaving its line): pause_after_failures' schedule."""
    work(n)
    raise RuntimeError(f"job {n} always fails")


def long_first_attempt(n: int) -> None:
    """Leaves a line with its fire time and attempt, then takes 30 s on a first attempt (long
    enough to be killed mid-run) and 1 s on any later one (a rerun)."""
    import tickwork

    run = tickwork.current_run()
    fd = os.open(os.environ["CLUSTER_FIRES"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n} {os.getpid()} {run.scheduled_for.isoformat()} {run.attempt}\n".encode())
    os.close(fd)
    time.sleep(30.0 if run.attempt == 1 else 1.0)


def lasting(n: int, seconds: float) -> None:
    """Runs ``seconds`` (concurrency tests): leaves a line with its fire time and run id first."""
    import tickwork

    run = tickwork.current_run()
    fd = os.open(os.environ["CLUSTER_FIRES"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n} {run.schedule} {run.scheduled_for.isoformat()} {run.run_id}\n".encode())
    os.close(fd)
    time.sleep(seconds)


def mark(n: int) -> None:
    """Leaves a line with its schedule's namespace, name and run id (namespaces tests), at once."""
    import tickwork

    run = tickwork.current_run()
    fd = os.open(os.environ["CLUSTER_FIRES"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, f"{n} {run.schedule} {run.scheduled_for.isoformat()} {run.run_id}\n".encode())
    os.close(fd)

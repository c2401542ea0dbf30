"""A worker that runs handlers by kind: reap, claim a batch with a lease, run
each job, then send the batch's outcomes together: one fenced statement for
the done jobs and one for the failed ones, each fenced row by row. When
nothing is due it waits on LISTEN, with a fallback poll, because a
notification is a hint and can be lost.

It never prints. What happened is counted in `Worker.report`, and optional
`on_event(name, job)` calls let experiments and widgets watch.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import psycopg

from . import checks, queue
from .errors import BadInput
from .statements import run

Handler = Callable[[queue.Job], Any]
# A lost server or session: start over on fresh connections. The server ends
# an idle-in-transaction session with 25P03, which psycopg raises as an
# InternalError rather than an OperationalError.
_LOST = (psycopg.OperationalError, psycopg.errors.IdleInTransactionSessionTimeout)


@dataclass
class WorkerReport:
    """What one Worker did: jobs claimed, done, retried (failed, ready again
    after a backoff), dead and fenced; jobs reaped and reaper passes (a pass
    may reap nothing), wake-ups and reconnects."""

    claimed: int = 0
    done: int = 0
    retried: int = 0
    dead: int = 0
    fenced: int = 0
    reaped: int = 0
    reaper_passes: int = 0
    wakeups: int = 0
    polls: int = 0
    reconnects: int = 0
    last_error: str | None = None
    done_ids: list[int] = field(default_factory=list)


class Worker:
    """Runs handlers by kind until stopped: reap, claim a batch with a lease,
    run each handler, then send the outcomes (complete or fail, fenced row by
    row). Events: claimed, done, retried, dead, fenced and reconnect, each
    passed to `on_event(name, job)`."""

    def __init__(
        self,
        dsn: str,
        handlers: dict[str, Handler],
        *,
        lease: timedelta | float = queue.DEFAULT_LEASE,
        batch: int = 1,
        poll: float = 5.0,
        heartbeat: bool = False,
        flush_after: float | None = None,
        durable_completions: bool = False,
        on_event: Callable[[str, queue.Job | None], None] | None = None,
    ):
        """`flush_after`: about the longest a finished job's outcome waits (in
        seconds) before the worker sends the outcomes it holds: before each
        job it sends them if running one more job as long as the last would
        pass that. They are also sent at the end of every batch. Default: a
        tenth of the lease, at most one second, and 0 (each job on its own)
        with `heartbeat`, whose jobs are long. `durable_completions`: wait for
        the disk on every completion (sql/relax_commit.sql says why the
        default need not)."""
        if not isinstance(handlers, Mapping) or not handlers or not all(map(callable, handlers.values())):
            raise BadInput("handlers must map each kind to a callable")
        poll = checks.seconds("poll", poll, 0.001, 86_400)
        self.dsn = dsn
        self.handlers = dict(handlers)
        self.lease = checks.lease(lease)
        self.batch = checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
        self.poll = float(poll)
        self.heartbeat = heartbeat
        if flush_after is None:
            flush_after = 0.0 if heartbeat else min(1.0, self.lease.total_seconds() / 10)
        if not (isinstance(flush_after, (int, float)) and 0 <= flush_after < self.lease.total_seconds()):
            raise BadInput(
                f"flush_after must be 0 or more seconds and shorter than the lease, got {flush_after!r}"
            )
        self.flush_after = float(flush_after)
        self.durable_completions = durable_completions
        # The reaper need not run before every claim: a lease cannot expire
        # sooner than its length after the claim that wrote it.
        self.reap_every = min(1.0, self.lease.total_seconds() / 4)
        self._next_reap = 0.0
        self.on_event = on_event or (lambda name, job: None)
        self.stop_event = threading.Event()
        self.report = WorkerReport()
        self._work: psycopg.Connection | None = None
        self._listen: psycopg.Connection | None = None

    # --- lifecycle ------------------------------------------------------------

    def stop(self) -> None:
        self.stop_event.set()

    def stop_on_sigterm(self) -> None:
        """Finish the current job, then exit, on SIGTERM (main thread only)."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())

    def run(self, *, until_idle: bool = False) -> WorkerReport:
        """Work until stopped (or, with until_idle, until nothing is due)."""
        backoff = 0.2
        try:
            while not self.stop_event.is_set():
                try:
                    _, listen = self._connect()
                    if self.run_once():
                        backoff = 0.2
                        continue
                    if until_idle:
                        break
                    self._wait(listen)
                    backoff = 0.2
                except _LOST as exc:
                    # Lost the server or our session: start over on fresh connections.
                    self.report.last_error = f"{type(exc).__name__}: {exc}".strip()
                    self._close()
                    self.report.reconnects += 1
                    self.on_event("reconnect", None)
                    self.stop_event.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
        finally:
            self._close()
        return self.report

    # --- one round ------------------------------------------------------------

    def run_once(self) -> int:
        """Reap (at most every `reap_every` s), claim one batch, run it and
        send its outcomes; the number of jobs claimed."""
        work, _ = self._connect()
        reaped_now = self._reap(work, force=False)
        jobs = queue.claim(work, batch=self.batch, lease=self.lease)
        if not jobs and not reaped_now:
            # Before calling the queue idle, return any expired lease and look again.
            self._reap(work, force=True)
            jobs = queue.claim(work, batch=self.batch, lease=self.lease)
        self.report.claimed += len(jobs)
        done: list[queue.Job] = []
        failed: list[tuple[queue.Job, Exception]] = []
        waiting_since = took = 0.0
        for job in jobs:
            # Send what is held if running one more job like the last would
            # keep the oldest outcome waiting longer than flush_after.
            if (done or failed) and time.monotonic() - waiting_since + took >= self.flush_after:
                self._flush(work, done, failed)
            self.on_event("claimed", job)
            began = time.monotonic()
            error = self._run_job(job)
            took = time.monotonic() - began
            if not (done or failed):
                waiting_since = time.monotonic()
            if error is None:
                done.append(job)
            else:
                failed.append((job, error))
        self._flush(work, done, failed)
        return len(jobs)

    def _reap(self, work: psycopg.Connection, *, force: bool) -> bool:
        now = time.monotonic()
        if not force and now < self._next_reap:
            return False
        self._next_reap = now + self.reap_every
        self.report.reaper_passes += 1
        self.report.reaped += queue.reap(work)
        return True

    def _run_job(self, job: queue.Job) -> Exception | None:
        """Run the handler; the exception it raised, or None."""
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for kind {job.kind!r}")
            with self._heartbeat(job):
                handler(job)
        except Exception as exc:  # a handler's failure is data: record it on the job
            return exc
        return None

    def _flush(
        self, work: psycopg.Connection, done: list[queue.Job], failed: list[tuple[queue.Job, Exception]]
    ) -> None:
        """Send the held outcomes, then count and announce each job's result.
        Each list is one statement; they run one after the other, each in its
        own transaction, so no transaction holds row locks from both."""
        durable = self.durable_completions
        completed = queue.complete_many(work, done, durable=durable) if done else []
        outcomes = queue.fail_many(work, failed, durable=durable) if failed else []
        for job, ok in zip(done, completed, strict=True):
            if ok:
                self.report.done += 1
                self.report.done_ids.append(job.id)
                self.on_event("done", job)
            else:
                self.report.fenced += 1
                self.on_event("fenced", job)
        for (job, _), outcome in zip(failed, outcomes, strict=True):
            event = "retried" if outcome == "ready" else outcome  # ready again, after a backoff: a retry
            setattr(self.report, event, getattr(self.report, event) + 1)
            self.on_event(event, job)
        done.clear()
        failed.clear()

    def _heartbeat(self, job: queue.Job):
        return _Heartbeat(self.dsn, job, self.lease) if self.heartbeat else nullcontext()

    # --- connections and waiting -------------------------------------------

    def _connect(self) -> tuple[psycopg.Connection, psycopg.Connection]:
        """Open whichever of the two connections is missing or closed; both, open.
        Callers use the pair returned, so neither can be None where it is used."""
        if self._work is None or self._work.closed:
            self._work = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
        if self._listen is None or self._listen.closed:
            # Its own autocommit connection, never inside a transaction, or
            # notifications would wait until that transaction ended.
            self._listen = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
            run(self._listen, "listen")
        return self._work, self._listen

    def _wait(self, listen: psycopg.Connection) -> None:
        """Until a notification, the poll interval, or stop; whichever is first."""
        deadline = time.monotonic() + self.poll
        while not self.stop_event.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                self.report.polls += 1
                return
            # Short slices keep stop() responsive; a notification ends the wait at once.
            for _ in listen.notifies(timeout=min(left, 0.25), stop_after=1):
                self.report.wakeups += 1
                return

    def _close(self) -> None:
        for conn in (self._work, self._listen):
            if conn is not None:
                try:
                    conn.close()
                except Exception:
                    pass
        self._work = self._listen = None


class _Heartbeat:
    """Extends the lease every third of its length while a long job runs."""

    def __init__(self, dsn: str, job: queue.Job, lease: timedelta):
        self.dsn, self.job, self.lease = dsn, job, lease
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        every = self.lease.total_seconds() / 3
        try:
            with psycopg.connect(self.dsn, autocommit=True, connect_timeout=5) as conn:
                while not self._stop.wait(every):
                    if not queue.extend_lease(conn, self.job, self.lease):
                        return  # fenced out: the completion will say so
        except psycopg.Error:
            return  # the lease simply runs out; the reaper covers us

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False

"""A worker that runs handlers by kind: reap, claim with a lease, run, then
complete or fail. When nothing is due it waits on LISTEN, with a fallback
poll, because a notification is a hint and can be lost.

It never prints. What happened is counted in `Worker.report`, and optional
`on_event(name, job)` calls let experiments and widgets watch.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Mapping
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
    after a backoff), dead and fenced; reaper passes, wake-ups and reconnects."""

    claimed: int = 0
    done: int = 0
    retried: int = 0
    dead: int = 0
    fenced: int = 0
    reaped: int = 0
    wakeups: int = 0
    polls: int = 0
    reconnects: int = 0
    last_error: str | None = None
    done_ids: list[int] = field(default_factory=list)


class Worker:
    """Runs handlers by kind until stopped: reap, claim with a lease, run the
    handler, then complete or fail. Events: claimed, done, retried, dead,
    fenced and reconnect, each passed to `on_event(name, job)`."""

    def __init__(
        self,
        dsn: str,
        handlers: dict[str, Handler],
        *,
        lease: timedelta | float = queue.DEFAULT_LEASE,
        batch: int = 1,
        poll: float = 5.0,
        heartbeat: bool = False,
        on_event: Callable[[str, queue.Job | None], None] | None = None,
    ):
        if not isinstance(handlers, Mapping) or not handlers or not all(map(callable, handlers.values())):
            raise BadInput("handlers must map each kind to a callable")
        poll = checks.seconds("poll", poll, 0.001, 86_400)
        self.dsn = dsn
        self.handlers = dict(handlers)
        self.lease = checks.lease(lease)
        self.batch = checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
        self.poll = float(poll)
        self.heartbeat = heartbeat
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
                    self._connect()
                    if self.run_once():
                        backoff = 0.2
                        continue
                    if until_idle:
                        break
                    self._wait()
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
        """Reap, claim one batch and run it; the number of jobs claimed."""
        self._connect()
        reaped = queue.reap(self._work)
        self.report.reaped += reaped
        jobs = queue.claim(self._work, batch=self.batch, lease=self.lease)
        self.report.claimed += len(jobs)
        for job in jobs:
            self.on_event("claimed", job)
            self._run_job(job)
        return len(jobs)

    def _run_job(self, job: queue.Job) -> None:
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for kind {job.kind!r}")
            with self._heartbeat(job):
                handler(job)
        except Exception as exc:  # a handler's failure is data: record it on the job
            outcome = queue.fail(self._work, job, exc)
            event = "retried" if outcome == "ready" else outcome  # ready again, after a backoff: a retry
            setattr(self.report, event, getattr(self.report, event) + 1)
            self.on_event(event, job)
            return
        if queue.complete(self._work, job):
            self.report.done += 1
            self.report.done_ids.append(job.id)
            self.on_event("done", job)
        else:
            self.report.fenced += 1
            self.on_event("fenced", job)

    def _heartbeat(self, job: queue.Job):
        return _Heartbeat(self.dsn, job, self.lease) if self.heartbeat else _Nothing()

    # --- connections and waiting -------------------------------------------

    def _connect(self) -> None:
        if self._work is None or self._work.closed:
            self._work = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
        if self._listen is None or self._listen.closed:
            # Its own autocommit connection, never inside a transaction, or
            # notifications would wait until that transaction ended.
            self._listen = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
            run(self._listen, "listen")

    def _wait(self) -> None:
        """Until a notification, the poll interval, or stop; whichever is first."""
        deadline = time.monotonic() + self.poll
        while not self.stop_event.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                self.report.polls += 1
                return
            # Short slices keep stop() responsive; a notification ends the wait at once.
            for _ in self._listen.notifies(timeout=min(left, 0.25), stop_after=1):
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


class _Nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


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

"""A worker process: one producer and N executors, as River, Oban, Graphile
Worker and PgQueuer build theirs.

`Worker` (here) is the façade; each part is a module of its own:

- `producer`: the thread that calls `run()`. It owns the claims: it reaps,
  claims when an executor is free and hands each free executor one batch.
  It waits on one inbox (`inbox`) for what the other threads tell it.
- `executor`: N threads that run the handlers, after a check that the
  process still holds each job.
- `completer`: the outcomes, held and sent in batches (one fenced statement
  for the done jobs, one for the failed ones), and settled when a send may
  have committed unseen.
- `leases`: every job the process holds; the heartbeat thread, which
  extends them all in one fenced statement that never waits on a row
  (sql/renew_leases.sql) on a connection of its own, whose lock and
  statement timeouts bound every beat; and the lease clock, which gives a
  job up before its lease ends.
- `listener`: one thread on the LISTEN connection, so one notification wakes
  one claim in the process, not one per executor.
- `limits`: per kind, the job timeout (enforced by the timeout clock, a
  thread with no I/O), the shared rate limit and the pause after failures in
  a row (the gate between the claim and the executors).
- `settings`, `report` and `connections`: what the Worker is told, what it
  did, and how it connects (three sessions: work, LISTEN and heartbeat).

Locks, and their order. Each part owns its lock, and a thread that holds one
takes at most one more, in this order:

1. `WorkConnection.lock` (connections): one user of the work connection at a
   time, held for a whole claim or send;
2. then one of the leaves: `Completer._lock` (held outcomes), `Leases._lock`
   (held leases, and under it a job's `lost` event), `Executors._lock` (busy
   executors), `Reporter._lock` (the report), `FirstError._lock`,
   `Deadlines._lock` (job timeouts) or `Gate._lock` (failures in a row, pauses).
   No leaf is held while another lock is taken.

`Leases._conn_lock` (the heartbeat connection) is held alone. No lock is held
while an `on_event` or an `on_lease_lost` callback runs: a callback may block.

It never prints. What happened is counted in `Worker.report`, and optional
`on_event(name, job)` calls, from the producer's and the executors' threads
(and `lost` from the heartbeat's and the lease clock's), let experiments and
widgets watch. Keep them quick: a callback that blocks holds up its thread.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import psycopg

from .. import kinds, queue
from .completer import Completer
from .connections import WorkConnection
from .executor import Executors
from .inbox import Inbox, Message
from .leases import ON_ITS_WAY, Heartbeat, Leases
from .limits import Deadlines, Gate, JobTimeout
from .listener import LISTEN_TIMEOUT, Listener
from .producer import Producer
from .report import FirstError, Reporter, WorkerReport, no_event
from .settings import MAX_CONCURRENCY, Handler, WorkerSettings

__all__ = [
    "LISTEN_TIMEOUT",
    "MAX_CONCURRENCY",
    "ON_ITS_WAY",
    "Handler",
    "JobTimeout",
    "Leases",
    "Worker",
    "WorkerReport",
    "WorkerSettings",
    "running_idle",
]


class Worker:
    """Runs handlers by kind until stopped, as one producer with
    `concurrency` executors (see the package's docstring): reap, claim, run,
    send the outcomes (complete or fail, fenced row by row), with one
    heartbeat for every job held. Events: claimed, done, retried, dead,
    fenced, lost, renewals_skipped, reconnect, timed_out and paused, each
    passed to `on_event(name, job)` (paused with no job)."""

    def __init__(
        self,
        dsn_or_db: Any,
        handlers: dict[str, Handler],
        *,
        concurrency: int = 1,
        lease: timedelta | float = queue.DEFAULT_LEASE,
        batch: int = 1,
        poll: float = 5.0,
        heartbeat: bool = True,
        flush_after: float | None = None,
        durable_completions: bool = False,
        on_event: Callable[[str, queue.Job | None], None] | None = None,
        priorities: bool = False,
        fair: bool = False,
        per_tenant: int | None = None,
        timeout: float | Mapping[str, float] | None = None,
        rate_limits: Mapping[str, float] | None = None,
        pause_after: int = 5,
        pause_for: float = 30.0,
    ):
        """`dsn_or_db`: a connection string, or a Database. `concurrency`:
        executor threads. `heartbeat` (the default): extend every held lease
        each quarter of the lease; without it a job longer than its lease can
        run twice. `flush_after`: about the longest a finished job's outcome
        waits (in seconds) before it is sent: before each job an executor
        sends the outcomes held if running one more job as long as the last
        would pass that; they are also sent at the end of every batch.
        Default: a tenth of the lease, at most one second.
        `durable_completions`: wait for the disk on every completion
        (sql/complete_many_relaxed.sql says why the default need not).
        `priorities`: claim the smallest priority with due work first
        (queue.claim_priority). `fair`: claim fairly per tenant (queue.claim_fair),
        at most `per_tenant` running jobs of one tenant across every fair
        Worker (no cap when None); a fair Worker never claims a job with no tenant.
        Per kind (limits.py says how each works): `timeout`, the job timeout in
        seconds, for every kind or as {kind: seconds}, over the kind's in job_kinds
        (a thread cannot be killed: a handler past it is told through `job.lost`,
        and its job failed and retried); `rate_limits`, {kind: jobs per second},
        shared by every process; and after `pause_after` failures of a kind in a
        row, no job of it runs here for `pause_for` seconds. A kind with a row in
        job_kinds backs off by its own policy (sql/fail_many_by_kind.sql)."""
        # Checked by WorkerSettings, which also takes a Database for the dsn and seconds for the lease.
        given: dict[str, Any] = dict(concurrency=concurrency, lease=lease, batch=batch, poll=poll)
        given |= dict(heartbeat=heartbeat, flush_after=flush_after, durable_completions=durable_completions)
        given |= dict(priorities=priorities, fair=fair, per_tenant=per_tenant)
        given |= dict(timeout=timeout, rate_limits=rate_limits, pause_after=pause_after, pause_for=pause_for)
        self.settings = s = WorkerSettings(dsn=dsn_or_db, handlers=handlers, **given)
        self.dsn, self.handlers, self.concurrency, self.lease = s.dsn, s.handlers, s.concurrency, s.lease
        self.batch, self.poll, self.heartbeat = s.batch, s.poll, s.heartbeat
        self.flush_after, self.durable_completions = s.flush_after_s, s.durable_completions
        self.reap_every, self.beat_every = s.reap_every, s.beat_every
        self.on_event = on_event or no_event
        self.stop_event = threading.Event()  # set by stop(), from any thread
        self.report = WorkerReport()
        self._reporter = Reporter(self.report, self.on_event)
        self._first_error = FirstError()  # an unexpected error on any thread: run() raises it
        self._inbox = Inbox()  # the producer's: every other thread posts to it
        self._closing = threading.Event()  # set by run()'s thread: the listener and the heartbeat stop
        self.leases = Leases(
            s.dsn,
            s.lease,
            self._report_lost_lease,
            self._reporter.beat,
            on_skipped=self._reporter.renewal_skipped,
        )
        self._heartbeat = Heartbeat(self.leases, s.beat_every, self._closing, self._stop_on_error)
        self._listener = Listener(s.dsn, self._inbox, self._reporter, self._closing, LISTEN_TIMEOUT)
        self._work = WorkConnection(s.dsn)
        self._completer = Completer(
            self._work, self.leases, self._reporter, self._inbox, durable=s.durable_completions
        )
        self._gate = Gate(
            s.rate_limits or {},
            pause_after=s.pause_after,
            pause_for=s.pause_for,
            leases=self.leases,
            reporter=self._reporter,
        )
        self._deadlines = Deadlines(
            {},
            leases=self.leases,
            completer=self._completer,
            reporter=self._reporter,
            on_failure=lambda job: self._gate.record(job, ok=False),
        )
        self._kinds_loaded = False  # written and read by the claiming thread, under the work lock
        self._executors = Executors(
            s.handlers,
            count=s.concurrency,
            flush_after=s.flush_after_s,
            leases=self.leases,
            completer=self._completer,
            reporter=self._reporter,
            inbox=self._inbox,
            on_error=self._stop_on_error,
            deadlines=self._deadlines,
            gate=self._gate,
        )
        self._producer = Producer(
            s,
            work=self._work,
            leases=self.leases,
            completer=self._completer,
            executors=self._executors,
            reporter=self._reporter,
            inbox=self._inbox,
            stop_event=self.stop_event,
            gate=self._gate,
            before_claim=self._load_kinds,
        )
        self._timeout_clock: threading.Thread | None = None  # run()'s thread only

    def stop(self) -> None:
        """Claim no more; finish the batches in hand, send their outcomes, then return from run()."""
        self.stop_event.set()
        self._inbox.post(Message.STOP)

    def stop_on_sigterm(self) -> None:
        """Finish the jobs in hand, then exit, on SIGTERM (main thread only)."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())

    def run(self, *, until_idle: bool = False) -> WorkerReport:
        """Work until stopped (or, with until_idle, until nothing is due and
        every executor is idle; jobs this Worker handed back, for want of a
        token or while their kind is paused, count as due: it waits for them)."""
        self._start()
        self._work.open()  # while the listener opens its own
        self._listener.listening.wait(5)  # claim after LISTEN, so no notification falls between
        try:
            self._producer.loop(until_idle=until_idle)
        finally:
            self._shut_down()
        error = self._first_error.first()
        if error is not None:
            raise error
        return self.report

    def run_once(self) -> int:
        """Reap (at most every `reap_every` s), claim one batch, run it on
        this thread and send its outcomes; the number of jobs claimed. No
        heartbeat beats here, but the check before each job still renews a
        lease that is half gone. No timeout clock runs either: a job timeout
        is not enforced here (the rate limits and pauses are)."""
        jobs = self._producer.claim(self.batch)
        self._executors.run_batch(jobs)
        while not self._producer.idle():  # two claims of one job go in two sends
            self._completer.send()
        self._inbox.take(*Message)  # this thread is the producer here: no news is for a later loop
        return len(jobs)

    def _start(self) -> None:
        self._closing.clear()  # run() may be called again after it returned
        self._kinds_loaded = False  # a policy changed since the last run() is read again
        self._listener.start()
        self._timeout_clock = threading.Thread(
            target=self._deadlines.clock_loop, args=(self._closing,), daemon=True, name="pgq-timeout-clock"
        )
        self._timeout_clock.start()
        if self.heartbeat:
            self._heartbeat.start()
        self._executors.start()

    def _shut_down(self) -> None:
        """Let the executors finish their batches (the heartbeat still beats
        for them), send what is left, then stop the listener and heartbeat."""
        self._executors.finish()
        try:
            self._completer.send_what_is_left()
        finally:  # even if an on_event callback raised: no heartbeat may hold leases on
            self._closing.set()
            self._deadlines.wake()
            self._listener.stop()
            self._heartbeat.join()
            if self._timeout_clock is not None:
                self._timeout_clock.join()
            try:
                self.leases.give_up_all()  # outcomes left unsent: their jobs will run again
            finally:
                self._work.close()
                self.leases.close()

    def _load_kinds(self, work: psycopg.Connection) -> None:
        """Once a run, at its first claim (the producer's before_claim, under the work lock):
        the handled kinds' rows in job_kinds, for the job timeouts and the per-kind backoff."""
        if self._kinds_loaded:
            return
        policies = kinds.policies(work, list(self.handlers))
        self._deadlines.timeouts = self.settings.timeouts(policies)
        self._completer.by_kind = frozenset(policies)
        self._kinds_loaded = True

    def _lease_clock_loop(self) -> None:
        """The lease clock's loop on this thread, until the Worker closes (a test runs it alone)."""
        self._heartbeat.lease_clock_loop()

    def _stop_on_error(self, exc: BaseException) -> None:
        """A thread hit an unexpected error: stop, and run() raises the first such error."""
        self._first_error.keep(exc)
        self.stop()

    def _report_lost_lease(self, job: queue.Job, why: str) -> None:
        """Leases' on_lease_lost. Not counted if its outcome is on its way or may have committed: it
        is counted as what it did, or fenced. It is announced all the same: this process no
        longer holds the claim."""
        counted = why != ON_ITS_WAY and not self._completer.is_unsure(job)
        self._reporter.lease_lost(job, counted=counted)


@contextmanager
def running_idle(fleet: list[Worker], timeout: float = 10.0) -> Iterator[list[Worker]]:
    """Run each Worker on a thread and wait (up to `timeout` s) until every
    one has found the queue empty once, so all wait on LISTEN; stop and join
    them when the block ends. For labs and benchmarks that wake idle workers."""
    threads = [threading.Thread(target=w.run, daemon=True) for w in fleet]
    for thread in threads:
        thread.start()
    try:
        deadline = time.monotonic() + timeout
        while not all(w.report.empty_claims for w in fleet) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.05)  # each is back in its wait
        yield fleet
    finally:
        for w in fleet:
            w.stop()
        for thread in threads:
            thread.join(10)

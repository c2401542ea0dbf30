"""A worker process: one producer and N executors, as River, Oban, Graphile
Worker and PgQueuer build theirs.

The producer (the thread that calls `run()`) owns the work connection: it
reaps, claims when an executor is free (up to free executors x batch jobs)
and hands each free executor one batch. Beside it, one listener thread owns
the LISTEN connection (autocommit, outside any transaction), so one
notification wakes one claim in the process, not one per executor; and one
heartbeat thread owns the heartbeat connection and extends every lease the
process holds in one fenced statement (sql/extend_leases.sql). Executors run
the handlers. The outcomes go in batches over the work connection (one fenced
statement for the done jobs, one for the failed ones): the producer sends
those of every executor that finished its batch in one go before it claims
again, and an executor sends its own mid-batch when `flush_after` says so.
Outcomes a broken connection did not confirm are held and sent again; a
completion or a failure that had committed all the same counts as what it
did (done, retried or dead), not fenced.
A notification is a hint and can be lost, so an idle producer also
claims every `poll` seconds.

The heartbeat rule: beat every quarter of the lease, counted from the claim,
so every job the process holds is covered, the ones waiting in a batch too.
A failed beat is retried at once on a fresh connection, with backoff. Even if
a whole beat is missed, the next one is due half a lease after the last good
one, with half the lease still to spare: one missed beat can never lose a
lease. A job is given up a tenth of its lease before the end the last good
beat (or the claim) wrote, by a lease-clock thread that does no I/O, so that
a beat stuck on the network cannot delay it, and (unless that thread wakes
later than the margin) the process stops counting a job as its own before a
reaper can take it: after failed beats, beats that succeed too slowly, or an
outcome's send that outlasts the lease.

Before it starts a job an executor checks that the process still holds it:
the lease the last beat (or the claim) wrote has at least half its length
left, or a fenced renewal of that one job matches. A job no longer held is
counted `fenced` and not started. A handler learns that it lost its job
through `job.lost` (a threading.Event) or `job.still_mine()`, set when a beat
finds the job fenced or the lease clock gives it up (`job.lost_at` says when).
With `heartbeat=False` there is neither heartbeat nor lease clock: only the
check before each job.

Threads suit handlers that wait (on the network, on the database). Handlers
that keep a CPU busy hold Python's GIL, so run several processes instead
(`pgq-teach worker --processes M`), each a producer with its executors.

It never prints. What happened is counted in `Worker.report`, and optional
`on_event(name, job)` calls, from the producer's and the executors' threads
(and `lost` from the heartbeat's and the lease clock's), let experiments and
widgets watch. Keep them quick: a callback that blocks holds up its thread.
"""

from __future__ import annotations

import queue as threads_queue
import select
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import checks, queue
from ..errors import BadInput
from ..statements import run

Handler = Callable[[queue.Job], Any]
# A lost server or session: start over on fresh connections. The server ends
# an idle-in-transaction session with 25P03, which psycopg raises as an
# InternalError rather than an OperationalError.
_LOST = (psycopg.OperationalError, psycopg.errors.IdleInTransactionSessionTimeout)
MAX_CONCURRENCY = 1_000
# The longest the listener waits before it looks at _closing again when no
# doorbell could ring (the doorbell wakes it at once on stop).
LISTEN_TIMEOUT = 1.0


@dataclass
class WorkerReport:
    """What one Worker did: jobs claimed, done, retried (failed, ready again
    after a backoff), dead and fenced (an outcome the fence refused, or a
    job not started because the process no longer held it; an outcome that
    committed as the connection broke counts as what it did, unless a newer
    claim or a requeue changed the job before it was sent again); jobs reaped and
    reaper passes (a pass may reap nothing); claim statements and the empty
    ones (counted when the claim, and any reap and second claim after it, are
    over); wake-ups (notifications that ended a wait), polls and reconnects;
    heartbeat statements, failed beats, and leases lost (held jobs a beat or
    check found fenced, or given up at their lease's end; not counted for an
    outcome on its way then, or one that may have committed, which is counted
    as above)."""

    claimed: int = 0
    done: int = 0
    retried: int = 0
    dead: int = 0
    fenced: int = 0
    reaped: int = 0
    reaper_passes: int = 0
    claims: int = 0
    empty_claims: int = 0
    wakeups: int = 0
    polls: int = 0
    reconnects: int = 0
    beats: int = 0
    beat_failures: int = 0
    leases_lost: int = 0
    last_error: str | None = None
    done_ids: list[int] = field(default_factory=list)


def _claim_key(job: queue.Job) -> tuple[int, int]:
    """One claim of one job: its id and the fencing token that claim took."""
    return job.id, job.fence_token


# The `why` of a job given up while its outcome is being sent: not counted as a lost
# lease, since the outcome may commit all the same; it is counted as what it did.
ON_ITS_WAY = "given up on its way"


def _marked(jobs: Sequence[queue.Job]) -> list[queue.Job]:
    """Mark these claims lost (job.mark_lost); those not marked before, whose handlers are to be told."""
    return [job for job in jobs if job.mark_lost()]


def _error_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


class Leases:
    """Every job one process holds, with the moment (on this process's
    monotonic clock) until which its lease surely runs: the time just before
    the statement that wrote the lease was sent, plus the lease. It renews
    leases on its own connection, one statement at a time, and gives a job up
    a margin before that moment (see `margin`)."""

    def __init__(
        self,
        dsn: str,
        lease: timedelta,
        on_lost: Callable[[queue.Job, str], None],
        on_beat: Callable[[str, str | None], None],
    ):
        self.dsn, self.lease = dsn, lease
        self.seconds = lease.total_seconds()
        self.on_lost, self.on_beat = on_lost, on_beat
        # Keyed by claim, (id, fence_token): a process can hold a stale claim
        # of a job and a newer one of the same job at once.
        self._until: dict[tuple[int, int], tuple[queue.Job, float]] = {}
        # Taken out for their outcome's send: not renewed (the send finishes them), but still
        # given up at their end, since a send that outlasts the lease may be fenced.
        self._sending: dict[tuple[int, int], tuple[queue.Job, float]] = {}
        self._lock = threading.Lock()  # guards _until and _sending
        # A reaper may take a job as soon as the server's lease ends, only a claim's round
        # trip after our `until`, while the thread that gives it up can wake late by a busy
        # scheduler's delay. Giving up a tenth of the lease early keeps our end before any reap.
        self.margin = self.seconds / 10
        self._conn_lock = threading.Lock()  # one statement at a time on the connection
        self._conn: psycopg.Connection | None = None
        # Its own name in pg_stat_activity, so an operator (or a fault run)
        # can tell the heartbeat session from the work and LISTEN sessions.
        base = conninfo_to_dict(dsn).get("application_name")
        self.application_name = f"{base} heartbeat" if base else "pgq heartbeat"

    def hold(self, jobs: Sequence[queue.Job], since: float) -> None:
        """Jobs just claimed by a statement sent at `since` (monotonic)."""
        until = since + self.seconds
        held = {_claim_key(job): (job, until) for job in jobs}
        with self._lock:
            self._until.update(held)

    def take(self, jobs: Sequence[queue.Job]) -> dict[tuple[int, int], tuple[queue.Job, float]]:
        """Renew these jobs no more while their outcomes are sent (give_up_passed still
        watches their end); what was held, for put_back or sent."""
        keys = [_claim_key(job) for job in jobs]
        with self._lock:
            taken = {key: entry for key in keys if (entry := self._until.pop(key, None)) is not None}
            self._sending.update(taken)
        return taken

    def put_back(self, taken: dict[tuple[int, int], tuple[queue.Job, float]]) -> None:
        """Hold again what take() returned (a send that failed), but for a job given up meanwhile."""
        with self._lock:
            for key, entry in taken.items():
                if self._sending.pop(key, None) is not None and entry[0].still_mine():
                    self._until[key] = entry

    def sent(self, taken: dict[tuple[int, int], tuple[queue.Job, float]]) -> None:
        """Forget what take() returned once its send has finished (what put_back restored stays)."""
        with self._lock:
            for key in taken:
                self._sending.pop(key, None)

    def release(self, jobs: Sequence[queue.Job]) -> None:
        """Jobs whose outcome was sent, or that were never started."""
        self.sent(self.take(jobs))

    def held(self) -> list[queue.Job]:
        with self._lock:
            return [job for job, _ in self._until.values()]

    def left(self, job: queue.Job, now: float | None = None) -> float:
        """Seconds of lease surely left at `now` (monotonic; default: the
        present); minus infinity for a job not held."""
        with self._lock:
            entry = self._until.get(_claim_key(job))
        if entry is None or not job.still_mine():
            return float("-inf")
        return entry[1] - (time.monotonic() if now is None else now)

    def renew(self, jobs: Sequence[queue.Job]) -> set[tuple[int, int]]:
        """One fenced statement extends these leases; a job it does not
        match is lost. Raises psycopg.Error if the statement could not run
        (the connection is closed then, so the next try opens a fresh one)."""
        sent = time.monotonic()
        with self._conn_lock:
            try:
                kept = queue.extend_leases(self._connection(), jobs, self.lease)
            except psycopg.Error:
                self.close()
                raise
        lost = []
        with self._lock:
            for job in jobs:
                key = _claim_key(job)
                if key in kept:
                    if key in self._until:
                        self._until[key] = (job, sent + self.seconds)
                elif self._until.pop(key, None) is not None:
                    lost.append(job)
            fresh = _marked(lost)
        self._tell(fresh, "fenced")
        return kept

    def open(self) -> None:
        """Open the heartbeat connection now, so a process holds its three
        connections from the start; a failure here is left to the first beat."""
        with self._conn_lock:
            try:
                self._connection()
            except psycopg.Error:
                self.close()

    def _connection(self) -> psycopg.Connection:
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(
                self.dsn, autocommit=True, connect_timeout=5, application_name=self.application_name
            )
        return self._conn

    def beat(self, closing: threading.Event) -> None:
        """Extend every held lease. A failed beat is retried on a fresh
        connection with backoff; a job whose lease would pass (less the margin) first is given up."""
        backoff = min(0.05, self.seconds / 20)
        while jobs := self.held():
            try:
                self.renew(jobs)
                self.on_beat("beat", None)
                return
            except psycopg.Error as exc:
                self.on_beat("beat_failed", _error_line(exc))
            self.give_up_passed()
            if closing.wait(max(0.0, min(backoff, self.earliest_end() - time.monotonic()))):
                return
            backoff = min(backoff * 2, self.seconds / 8)

    def give_up(self, jobs: Sequence[queue.Job]) -> None:
        """Stop holding these jobs and tell their handlers they are lost."""
        self.release(jobs)
        self._lose(jobs, "given up")

    def give_up_passed(self) -> None:
        """Give up every job whose lease may pass within the margin without a renewal,
        those whose outcome is on its way too."""
        end = time.monotonic() + self.margin
        with self._lock:
            passed = [job for job, until in self._until.values() if until <= end]
            for job in passed:
                del self._until[_claim_key(job)]
            on_way = [job for job, until in self._sending.values() if until <= end and job.still_mine()]
            fresh, fresh_on_way = _marked(passed), _marked(on_way)  # under the lock: see put_back
        self._tell(fresh, "given up")
        self._tell(fresh_on_way, ON_ITS_WAY)

    def give_up_all(self) -> None:
        """Give up every job still held or on its way: the process stops holding any."""
        with self._lock:
            jobs = [job for job, _ in [*self._until.values(), *self._sending.values()]]
            self._until.clear()
            self._sending.clear()
            fresh = _marked(jobs)
        self._tell(fresh, "given up")

    def earliest_end(self) -> float:
        """The soonest moment (monotonic) a job is to be given up, its lease's end less the
        margin; infinity if none is."""
        with self._lock:
            ends = [until for _, until in self._until.values()]
            ends += [until for job, until in self._sending.values() if job.still_mine()]
        return min(ends, default=float("inf")) - self.margin

    def _lose(self, jobs: Sequence[queue.Job], why: str) -> None:
        self._tell(_marked(jobs), why)

    def _tell(self, jobs: Sequence[queue.Job], why: str) -> None:
        # Called once every job lost at the same moment is marked (_marked): a callback may
        # block, and a job still marked as held meanwhile would run on after a reaper took it.
        for job in jobs:
            self.on_lost(job, why)

    def backend_pid(self) -> int | None:
        """The heartbeat session's server process id, while it is open."""
        conn = self._conn
        return conn.info.backend_pid if conn is not None and not conn.closed else None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None


class Worker:
    """Runs handlers by kind until stopped, as one producer with
    `concurrency` executors (see the module's docstring): reap, claim, run,
    send the outcomes (complete or fail, fenced row by row), with one
    heartbeat for every job held. Events: claimed, done, retried, dead,
    fenced, lost and reconnect, each passed to `on_event(name, job)`."""

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
        (sql/complete_many_relaxed.sql says why the default need not)."""
        dsn = getattr(dsn_or_db, "dsn", dsn_or_db)
        if not isinstance(dsn, str):
            raise BadInput(f"expected a connection string or a Database, got {dsn_or_db!r}")
        if not isinstance(handlers, Mapping) or not handlers or not all(map(callable, handlers.values())):
            raise BadInput("handlers must map each kind to a callable")
        if not isinstance(heartbeat, bool):
            raise BadInput(f"heartbeat must be True or False, got {heartbeat!r}")
        poll = checks.seconds("poll", poll, 0.001, 86_400)
        self.dsn = dsn
        self.handlers = dict(handlers)
        self.concurrency = checks.whole_number("concurrency", concurrency, 1, MAX_CONCURRENCY)
        self.lease = checks.lease(lease)
        self.batch = checks.whole_number("batch", batch, 1, queue.MAX_BATCH)
        self.poll = float(poll)
        self.heartbeat = heartbeat
        lease_s = self.lease.total_seconds()
        if flush_after is None:
            flush_after = min(1.0, lease_s / 10)
        if not (isinstance(flush_after, (int, float)) and 0 <= flush_after < lease_s):
            raise BadInput(
                f"flush_after must be 0 or more seconds and shorter than the lease, got {flush_after!r}"
            )
        self.flush_after = float(flush_after)
        self.durable_completions = durable_completions
        # The reaper need not run before every claim: a lease cannot expire
        # sooner than its length after the claim that wrote it.
        self.reap_every = min(1.0, lease_s / 4)
        self.beat_every = lease_s / 4  # the heartbeat rule: see the module's docstring
        self._next_reap = 0.0
        self.on_event = on_event or _no_event
        self.stop_event = threading.Event()
        self.report = WorkerReport()
        self.leases = Leases(dsn, self.lease, self._lost, self._beat_done)
        self._lock = threading.Lock()  # guards the report's counts, _busy and the held outcomes
        self._work_lock = threading.Lock()  # one user of the work connection at a time
        self._work: psycopg.Connection | None = None
        self._listen: psycopg.Connection | None = None
        self._done: list[queue.Job] = []
        # Claims whose completion was sent as the connection broke: it may have committed with
        # no answer back, so when sent again it matches no running row. See _own_earlier.
        self._unsure: set[tuple[int, int]] = set()
        self._failed: list[tuple[queue.Job, Exception]] = []
        self._held_since: float | None = None  # when the oldest held outcome was added
        self._busy = 0  # executors with a batch
        self._batch_ended = False  # an executor finished a batch since the last send
        self._inbox: threads_queue.SimpleQueue[list[queue.Job] | None] = threads_queue.SimpleQueue()
        self._wake = threading.Event()  # anything the producer waits for
        self._notified = threading.Event()  # a notification arrived
        self._recheck = threading.Event()  # LISTEN reconnected: notifications may have been missed
        self._listening = threading.Event()  # the listener tried its first connection
        self._closing = threading.Event()  # the listener and the heartbeat stop
        # Rung once when the listener should stop, so it wakes at once instead
        # of at its next timeout, which every run() would otherwise wait out.
        self._doorbell: tuple[socket.socket, socket.socket] | None = None
        self._fatal: BaseException | None = None  # an executor's unexpected error

    # --- lifecycle ------------------------------------------------------------

    def stop(self) -> None:
        """Claim no more; finish the batches in hand, send their outcomes, then return from run()."""
        self.stop_event.set()
        self._wake.set()

    def stop_on_sigterm(self) -> None:
        """Finish the jobs in hand, then exit, on SIGTERM (main thread only)."""
        signal.signal(signal.SIGTERM, lambda *_: self.stop())

    def run(self, *, until_idle: bool = False) -> WorkerReport:
        """Work until stopped (or, with until_idle, until nothing is due and
        every executor is idle)."""
        helpers = self._start_threads()
        self._open_work()  # while the listener opens its own
        self._listening.wait(5)  # claim after LISTEN, so no notification falls between
        backoff = 0.2
        maybe_more = True  # the queue may hold due jobs: claim when an executor is free
        poll_at = time.monotonic() + self.poll
        try:
            while not self.stop_event.is_set():
                try:
                    if self._outcomes_due():
                        self._send_outcomes()
                    free = self._free()
                    if free and (maybe_more or until_idle):
                        asked = free * self.batch
                        got = self._claim_and_hand_out(asked)
                        maybe_more = got == asked
                        if got:
                            continue
                    if until_idle and self._idle():
                        break
                    if self._wait(poll_at):
                        maybe_more = True
                        poll_at = time.monotonic() + self.poll
                    backoff = 0.2
                except _LOST as exc:
                    # Lost the server or our session: start over on a fresh connection.
                    self._connection_lost(exc)
                    self._close_work()
                    maybe_more = True
                    self.stop_event.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
        finally:
            self._shut_down(helpers)
        if self._fatal is not None:
            raise self._fatal
        return self.report

    def run_once(self) -> int:
        """Reap (at most every `reap_every` s), claim one batch, run it on
        this thread and send its outcomes; the number of jobs claimed. No
        heartbeat beats here, but the check before each job still renews a
        lease that is half gone."""
        jobs = self._claim(self.batch)
        self._run_batch(jobs)
        while not self._idle():  # two claims of one job go in two sends
            self._send_outcomes()
        return len(jobs)

    def _start_threads(self) -> list[threading.Thread]:
        self._closing.clear()  # run() may be called again after it returned
        self._doorbell = socket.socketpair()
        helpers = [threading.Thread(target=self._listen_loop, daemon=True, name="pgq-listen")]
        if self.heartbeat:
            for loop, name in ((self._heartbeat_loop, "heartbeat"), (self._lease_clock_loop, "lease-clock")):
                helpers.append(threading.Thread(target=loop, daemon=True, name=f"pgq-{name}"))
        executors = [
            threading.Thread(target=self._execute, daemon=True, name=f"pgq-executor-{i}")
            for i in range(self.concurrency)
        ]
        for thread in helpers + executors:
            thread.start()
        return helpers + executors

    def _shut_down(self, threads: list[threading.Thread]) -> None:
        """Let the executors finish their batches (the heartbeat still beats
        for them), send what is left, then stop the listener and heartbeat."""
        for _ in range(self.concurrency):
            self._inbox.put(None)
        for thread in threads[-self.concurrency :]:
            thread.join()
        try:
            self._send_what_is_left()
        finally:  # even if an on_event callback raised: no heartbeat may hold leases on
            self._closing.set()
            self._ring_doorbell()
            for thread in threads[: -self.concurrency]:
                thread.join()
            try:
                self.leases.give_up_all()  # outcomes left unsent: their jobs will run again
            finally:
                self._close_work()
                self.leases.close()
                for end in self._doorbell or ():
                    end.close()
                self._doorbell = None

    def _send_what_is_left(self, tries: int = 3) -> None:
        """Send every held outcome before stopping: a second claim of one job goes in a
        statement of its own, and a lost connection is tried again on a fresh one. Outcomes
        still unsent after `tries` failures are left: their leases pass and the jobs run
        again (at least once)."""
        failures = 0
        while self._done or self._failed:  # the executors have stopped: only this thread adds
            try:
                self._send_outcomes()
            except _LOST as exc:
                self._connection_lost(exc)
                self._close_work()
                failures += 1
                if failures >= tries:
                    return
                time.sleep(0.1 * failures)
            except psycopg.Error as exc:
                with self._lock:
                    self.report.last_error = _error_line(exc)
                return

    def _ring_doorbell(self) -> None:
        try:
            if self._doorbell is not None:
                self._doorbell[1].send(b"!")
        except OSError:  # full or closed: the listener still stops at its next timeout
            pass

    # --- the producer ---------------------------------------------------------

    def _claim(self, batch: int) -> list[queue.Job]:
        """Reap if due, claim up to `batch` jobs and hold their leases. When
        the claim finds nothing, return any expired lease and look again."""
        with self._work_lock:
            work = self._work_conn()
            reaped_now = self._reap(work, force=False)
            jobs = self._claim_on(work, batch)
            empty = int(not jobs)
            if not jobs and not reaped_now:
                self._reap(work, force=True)
                jobs = self._claim_on(work, batch)
                empty += not jobs
        # Counted once the round is over, before any "claimed" event: a count that rises after
        # a watcher saw one (lesson 07's latency lab) means run() has stopped looking until its
        # next poll or notification (run(until_idle=True) looks again at each finished batch).
        if empty:
            with self._lock:
                self.report.empty_claims += empty
        if self.on_event is not _no_event:
            for job in jobs:
                self.on_event("claimed", job)
        return jobs

    def _claim_on(self, work: psycopg.Connection, batch: int) -> list[queue.Job]:
        since = time.monotonic()  # before the statement is sent: the lease surely runs from later
        jobs = queue.claim(work, batch=batch, lease=self.lease)
        self.leases.hold(jobs, since)
        with self._lock:
            self.report.claims += 1
            self.report.claimed += len(jobs)
        return jobs

    def _claim_and_hand_out(self, asked: int) -> int:
        jobs = self._claim(asked)
        for start in range(0, len(jobs), self.batch):
            with self._lock:
                self._busy += 1
            self._inbox.put(jobs[start : start + self.batch])
        return len(jobs)

    def _reap(self, work: psycopg.Connection, *, force: bool) -> bool:
        now = time.monotonic()
        if not force and now < self._next_reap:
            return False
        self._next_reap = now + self.reap_every
        reaped = queue.reap(work)
        with self._lock:
            self.report.reaper_passes += 1
            self.report.reaped += reaped
        return True

    def _free(self) -> int:
        with self._lock:
            return self.concurrency - self._busy

    def _idle(self) -> bool:
        with self._lock:
            return self._busy == 0 and not (self._done or self._failed)

    def _outcomes_due(self) -> bool:
        """An executor finished its batch, or the oldest held outcome has waited flush_after."""
        with self._lock:
            since, ended, self._batch_ended = self._held_since, self._batch_ended, False
        return since is not None and (ended or time.monotonic() - since >= self.flush_after)

    def _wait(self, poll_at: float) -> bool:
        """Until a notification, an executor's news, a held outcome's
        flush_after, the poll, or stop. True if the queue may now hold due
        jobs (a notification, or the poll)."""
        now = time.monotonic()
        timeout = poll_at - now
        with self._lock:
            if self._held_since is not None:
                timeout = min(timeout, self._held_since + self.flush_after - now)
        self._wake.wait(max(0.0, timeout))
        self._wake.clear()
        if self._notified.is_set():
            self._notified.clear()
            with self._lock:
                self.report.wakeups += 1
            return True
        if self._recheck.is_set():
            self._recheck.clear()
            return True
        if time.monotonic() >= poll_at:
            with self._lock:
                self.report.polls += 1
            return True
        return False

    # --- the executors --------------------------------------------------------

    def _execute(self) -> None:
        while (jobs := self._inbox.get()) is not None:
            try:
                self._run_batch(jobs)
            except BaseException as exc:  # not a handler's failure: stop, and run() raises it
                self._fatal = self._fatal or exc
                self.stop()
            finally:
                with self._lock:
                    self._busy -= 1
                self._wake.set()

    def _run_batch(self, jobs: list[queue.Job]) -> None:
        # One clock reading and one lock per job: a no-op job costs little
        # more than this loop, so the loop is kept lean.
        took, now = 0.0, time.monotonic()
        with self._lock:
            since = self._held_since
        for job in jobs:
            # Send what is held if running one more job like the last would
            # keep the oldest outcome waiting longer than flush_after.
            if since is not None and now - since + took >= self.flush_after:
                self._try_send_outcomes()
                now = time.monotonic()  # the send took time: the check below needs the present
                with self._lock:
                    since = self._held_since
            if not self._still_held(job, now):
                self.leases.release([job])
                self._count("fenced", job)
                now = time.monotonic()
                continue
            error = self._run_job(job)
            ended = time.monotonic()
            took, now = ended - now, ended
            with self._lock:
                if error is None:
                    self._done.append(job)
                else:
                    self._failed.append((job, error))
                if self._held_since is None:
                    self._held_since = ended
                    self._wake.set()  # the producer keeps flush_after for it
                since = self._held_since
        # The producer sends them, with those of every other executor that
        # finished meanwhile, in one statement, and then claims again.
        with self._lock:
            self._batch_ended = True

    def _try_send_outcomes(self) -> None:
        """An executor's send: if the connection is lost the outcomes stay
        held, and the producer sends them on a fresh connection."""
        try:
            self._send_outcomes()
        except _LOST as exc:
            self._connection_lost(exc)
            self._close_work()

    def _still_held(self, job: queue.Job, now: float) -> bool:
        """Start a job only while the process holds it: half its lease left
        at `now` (monotonic) by the last beat or the claim, or a fenced
        renewal that matched."""
        if self.leases.left(job, now) >= self.leases.seconds / 2:
            return True
        if not job.still_mine():
            return False
        try:
            kept = self.leases.renew([job])
        except psycopg.Error as exc:
            # Cannot tell: leave it; its lease passes and a reaper hands it on.
            with self._lock:
                self.report.last_error = _error_line(exc)
            self.leases.give_up([job])
            return False
        return _claim_key(job) in kept and job.still_mine()

    def _run_job(self, job: queue.Job) -> Exception | None:
        """Run the handler; the exception it raised, or None."""
        handler = self.handlers.get(job.kind)
        try:
            if handler is None:
                raise LookupError(f"no handler for kind {job.kind!r}")
            handler(job)
        except Exception as exc:  # a handler's failure is data: record it on the job
            return exc
        return None

    def _send_outcomes(self) -> None:
        """Send the held outcomes, then count and announce each job's result.
        Each list is one statement; they run one after the other, each in its
        own transaction, so no transaction holds row locks from both. What
        could not be sent stays held."""
        with self._work_lock:
            with self._lock:
                # A stale claim and a newer one of the same job go in separate
                # statements: the rows a statement returns name jobs, not claims.
                done, self._done = _once_each(self._done, [job.id for job in self._done])
                failed, self._failed = _once_each(self._failed, [job.id for job, _ in self._failed])
                later = self._done or self._failed
                self._held_since = time.monotonic() if later else None
                self._batch_ended = self._batch_ended or bool(later)
            if not (done or failed):
                return
            durable = self.durable_completions
            # Not renewed while their outcome is on its way: a beat that waited on their rows and
            # found them finished would count a lost lease. The lease clock still gives them up
            # at their end (a send that outlasts the lease may be fenced). A send that fails
            # holds them again, but for any given up meanwhile.
            taken = self.leases.take(done + [job for job, _ in failed])
            try:
                work = self._work_conn()
                completed = queue.complete_many(work, done, durable=durable) if done else []
                completed = self._own_earlier(work, done, completed)
            except BaseException:
                self._hold_again(done, failed, failures_sent=False)  # unsure first: see _lost
                self.leases.put_back(taken)
                raise
            # The completions have committed: whatever happens to the failures, count them.
            error: BaseException | None = None
            try:
                outcomes = queue.fail_many(work, failed, durable=durable) if failed else []
                outcomes = self._own_earlier_failures(work, failed, outcomes)
            except BaseException as exc:
                failing = {_claim_key(job) for job, _ in failed}
                self._hold_again([], failed, failures_sent=True)
                self.leases.put_back({key: held for key, held in taken.items() if key in failing})
                error, failed, outcomes = exc, [], []
            self.leases.sent(taken)
        finished = [job for job, ok in zip(done, completed, strict=True) if ok]
        with self._lock:  # once for the batch, not once per job
            self.report.done += len(finished)
            self.report.done_ids.extend(job.id for job in finished)
        if self.on_event is not _no_event:
            for job in finished:
                self.on_event("done", job)
        for job, ok in zip(done, completed, strict=True):
            if not ok:
                self._count("fenced", job)
        for (job, _), outcome in zip(failed, outcomes, strict=True):
            self._count("retried" if outcome == "ready" else outcome, job)  # ready again: a retry
        if error is not None:
            raise error

    def _hold_again(
        self, done: list[queue.Job], failed: list[tuple[queue.Job, Exception]], *, failures_sent: bool
    ) -> None:
        """Outcomes a send could not deliver go back to the front, to be sent again. What was
        sent may have committed as the connection broke, so it is marked unsure (see
        _own_earlier): the completions always, the failures if their statement went out."""
        with self._lock:
            self._done[:0], self._failed[:0] = done, failed
            self._unsure.update(_claim_key(job) for job in done)
            if failures_sent:
                self._unsure.update(_claim_key(job) for job, _ in failed)
            self._held_since = self._held_since or time.monotonic()

    def _own_earlier(
        self, work: psycopg.Connection, jobs: list[queue.Job], completed: list[bool]
    ) -> list[bool]:
        """`completed`, with a job this claim had already completed counted as completed, not
        fenced: its completion was sent as the connection broke and committed, though no answer
        came back (a server restart, a cut network). Among fenced completions only this claim's
        completes a job with that token, since a newer claim takes a new one
        (queue.completed_by)."""
        return self._settle_unsure(jobs, completed, lambda i, ok: ok or queue.completed_by(work, jobs[i]))

    def _own_earlier_failures(
        self, work: psycopg.Connection, failed: list[tuple[queue.Job, Exception]], outcomes: list[str]
    ) -> list[str]:
        """`outcomes`, with a failure this claim had already recorded counted as what it made of
        the job (a retry or dead), not fenced, as _own_earlier does for completions: while no
        newer claim or requeue has changed the row since (queue.failed_by)."""

        def settle(i: int, outcome: str) -> str:
            return (queue.failed_by(work, *failed[i]) or outcome) if outcome == "fenced" else outcome

        return self._settle_unsure([job for job, _ in failed], outcomes, settle)

    def _settle_unsure(
        self, jobs: list[queue.Job], outcomes: list[T], settle: Callable[[int, T], T]
    ) -> list[T]:
        """`outcomes`, with the i-th replaced by `settle(i, outcome)` for each job whose last send
        may have committed unseen (marked unsure by _hold_again); those jobs are then sure."""
        with self._lock:
            unsure = {_claim_key(job) for job in jobs} & self._unsure
        if not unsure:
            return outcomes
        checked = [
            settle(i, outcome) if _claim_key(job) in unsure else outcome
            for i, (job, outcome) in enumerate(zip(jobs, outcomes, strict=True))
        ]
        with self._lock:
            self._unsure -= unsure
        return checked

    def _count(self, event: str, job: queue.Job | None) -> None:
        with self._lock:
            setattr(self.report, event, getattr(self.report, event) + 1)
        self.on_event(event, job)

    # --- the heartbeat and the listener ---------------------------------------

    def _heartbeat_loop(self) -> None:
        """Beat every beat_every, counted from each beat's start, so a slow beat does not
        push the next one later."""
        self.leases.open()
        next_beat = time.monotonic() + self.beat_every
        while not self._closing.wait(max(0.0, next_beat - time.monotonic())):
            next_beat = time.monotonic() + self.beat_every
            self._survive(lambda: self.leases.beat(self._closing))

    def _lease_clock_loop(self) -> None:
        """Give each job up at its end (Leases.earliest_end), though no beat failed: beats
        that succeed slowly can let a lease end between them. A thread of its own, with no
        I/O, so a beat stuck on the network (a connect to a restarting server can take
        seconds) cannot make it late. It wakes at least every beat_every, so before the end
        of any job claimed meanwhile, unless its claim took most of the lease (the check
        before each job covers that one)."""
        while not self._closing.wait(
            max(0.0, min(self.leases.earliest_end(), time.monotonic() + self.beat_every) - time.monotonic())
        ):
            self._survive(self.leases.give_up_passed)

    def _survive(self, step: Callable[[], None]) -> None:
        """One step of the heartbeat's or the lease clock's loop. An on_event callback's error
        stops the Worker (run() raises it) instead of ending the thread, which must go on
        giving leases up until the Worker closes."""
        try:
            step()
        except Exception as exc:
            self._fatal = self._fatal or exc
            self.stop()

    def _beat_done(self, outcome: str, error: str | None) -> None:
        with self._lock:
            if outcome == "beat":
                self.report.beats += 1
            else:
                self.report.beat_failures += 1
                self.report.last_error = error

    def _lost(self, job: queue.Job, why: str) -> None:
        with self._lock:
            # Not counted if its outcome is on its way or may have committed: it is counted
            # as what it did, or fenced. It is announced all the same: this process no longer
            # holds the claim.
            if why != ON_ITS_WAY and _claim_key(job) not in self._unsure:
                self.report.leases_lost += 1
        self.on_event("lost", job)

    def _listen_loop(self) -> None:
        """Own the LISTEN connection: autocommit, never inside a transaction,
        or notifications would wait until that transaction ended. Each
        notification wakes the producer once; after a reconnect it claims
        at once, for notifications sent while nobody listened."""
        backoff = 0.2
        while not self._closing.is_set():
            try:
                if self._listen is None or self._listen.closed:
                    self._listen = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
                    run(self._listen, "listen")
                    if self._listening.is_set():  # a reconnect: look for what was sent meanwhile
                        self._recheck.set()
                        self._wake.set()
                    self._listening.set()
                self._hand_on_notifications(self._listen)
                backoff = 0.2
            except psycopg.Error as exc:
                self._listening.set()
                self._connection_lost(exc)
                self._close_listen()
                self._closing.wait(backoff)
                backoff = min(backoff * 2, 5.0)
        self._close_listen()

    def _hand_on_notifications(self, conn: psycopg.Connection) -> None:
        """Wake the producer for what has arrived on the LISTEN connection
        (LISTEN itself may have brought some), then wait until its socket has
        more to read or the doorbell rings; the loop around looks at _closing."""
        for _ in conn.notifies(timeout=0):
            self._notify()
        waits = [conn.fileno()]
        if self._doorbell is not None:
            waits.append(self._doorbell[0].fileno())
        select.select(waits, [], [], LISTEN_TIMEOUT)

    def _notify(self) -> None:
        self._notified.set()
        self._wake.set()

    # --- connections ------------------------------------------------------------

    def _open_work(self) -> None:
        """Open the work connection now; a failure is left to the first claim."""
        with self._work_lock:
            try:
                self._work_conn()
            except psycopg.Error:
                pass

    def _work_conn(self) -> psycopg.Connection:
        """The work connection, opened if missing or closed (hold _work_lock)."""
        if self._work is None or self._work.closed:
            self._work = psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
        return self._work

    def _connection_lost(self, exc: BaseException) -> None:
        with self._lock:
            self.report.last_error = _error_line(exc)
            self.report.reconnects += 1
        self.on_event("reconnect", None)

    def _close_work(self) -> None:
        with self._work_lock:
            conn, self._work = self._work, None
        _close(conn)

    def _close_listen(self) -> None:
        conn, self._listen = self._listen, None
        _close(conn)


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


T = TypeVar("T")


def _once_each(items: list[T], ids: list[int]) -> tuple[list[T], list[T]]:
    """Split outcomes (with the id of each one's job) into the first of each
    job and the rest, for a later statement."""
    if len(set(ids)) == len(ids):
        return items, []  # the usual case: no job twice
    seen: set[int] = set()
    first: list[T] = []
    rest: list[T] = []
    for item, job_id in zip(items, ids, strict=True):
        (rest if job_id in seen else first).append(item)
        seen.add(job_id)
    return first, rest


def _no_event(name: str, job: queue.Job | None) -> None:
    """The default on_event: nobody is watching."""


def _close(conn: psycopg.Connection | None) -> None:
    if conn is not None:
        try:
            conn.close()
        except Exception:
            pass

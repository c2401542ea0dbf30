"""Leases: every job the process holds, the heartbeat that renews them, and
the lease clock that gives each up before it ends.

The heartbeat rule: beat every quarter of the lease (n = 4) on one timer for
the whole process, which starts with the Worker and counts each tick from the
last beat's start, not from any claim. Every job the process holds is
covered, the ones waiting in a batch too: a job's first beat comes within a
quarter lease of its claim (wherever the claim fell in the timer's cycle;
plus the claim statement's own round trip, if a tick falls during it), and
each later beat a quarter lease after the one before. A beat is one
statement for every held job (sql/renew_leases.sql), on a session of its own.

The guarantee. Count from the last write of a job's lease (its claim, or a
beat that renewed it): with k beats in a row that did not renew it, the
next beat comes within (k + 1)/n of the lease, leaving at least
1 - (k + 1)/n of it, less that beat's round trip. One missed beat leaves half
the lease and two a quarter, so two missed beats in a row never lose a job;
three can (below). A beat misses a job in one of three ways, and none costs
more than that one beat:

- Another session holds the job's row (an operator's open UPDATE, a reaper
  at work): the statement skips that row (SKIP LOCKED) and renews the others.
  The skipped job is not lost: the statement reads its committed state, and
  while that still shows this claim the job stays held (counted in
  `renewals_skipped`) and the next beat tries it again. A job the statement
  finds no longer under this claim (reaped, claimed again, requeued) is lost.
- The statement cannot finish: it waits for the table's lock behind a
  pending ACCESS EXCLUSIVE request (an ALTER TABLE queued behind an open
  transaction), or the server is slow. The heartbeat session's lock_timeout
  (an eighth of the lease) and statement_timeout (a quarter, one beat's
  interval) end it, so a blocked or hung beat waits at most a quarter lease.
- The statement fails (its session ended, the server restarting).

A beat that failed or timed out is retried at once on a fresh connection,
with backoff (50 ms, doubling, at most an eighth of the lease), until one
succeeds or every job it holds is given up; a fresh connection's connect may
take up to its own timeout (5 s). So a beat that hangs is one missed beat,
not a lost lease: cancelled a quarter lease after it began, its retry renews
with half the lease left, less a reconnect and a round trip.

Whatever the beats do, a job is given up a tenth of its lease before the end
its last write set, by a lease-clock thread that does no I/O, so that a beat
stuck on the network cannot delay it, and (unless that thread wakes later than
the margin) the process stops counting a job as its own before a reaper can
take it: after missed beats, beats that succeed too slowly, a row locked
longer than the lease, or an outcome's send that outlasts the lease. That is
what three missed beats in a row can cost: the next beat may then be due as
late as the lease's very end, after the give-up.

The fenced check before a job starts (executor.py) runs the same statement
for that one job on the same session, under the same timeouts: it never waits
on the job's row either (that would hold every other job's beat behind it),
and only a renewal that matched lets the job start; a job whose row another
session holds then is given up, not started.

A handler learns that it lost its job through `job.lost` (a threading.Event)
or `job.still_mine()`, set when a beat finds the job fenced or the lease
clock gives it up (`job.lost_at` says when). With `heartbeat=False` there is
neither heartbeat nor lease clock: only the check before each job.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from datetime import timedelta

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .. import queue
from .connections import close_quietly, connect
from .report import error_line


def claim_key(job: queue.Job) -> tuple[int, int]:
    """One claim of one job: its id and the fencing token that claim took."""
    return job.id, job.fence_token


# The heartbeat rule's n: a beat every quarter of the lease.
BEATS_PER_LEASE = 4
# The largest timeout PostgreSQL takes, in milliseconds (about 24.8 days): a longer lease's
# heartbeat timeouts stop there.
MAX_TIMEOUT_MS = 2**31 - 1


def timeout_ms(seconds: float) -> int:
    """A timeout for the server, in whole milliseconds: rounded up, at least 1 (0 would
    turn it off) and at most MAX_TIMEOUT_MS."""
    return min(MAX_TIMEOUT_MS, max(1, math.ceil(seconds * 1000)))


# The `why` of a job given up while its outcome is being sent: not counted as a lost
# lease, since the outcome may commit all the same; it is counted as what it did.
ON_ITS_WAY = "given up on its way"


def mark_lost(jobs: Sequence[queue.Job]) -> list[queue.Job]:
    """Mark these claims lost (job.mark_lost); those not marked before, whose handlers are to be told."""
    return [job for job in jobs if job.mark_lost()]


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
        on_lease_lost: Callable[[queue.Job, str], None],
        on_beat: Callable[[str, str | None], None],
        on_skipped: Callable[[queue.Job], None] | None = None,
    ):
        self.dsn, self.lease = dsn, lease
        self.seconds = lease.total_seconds()
        self.on_lease_lost, self.on_beat = on_lease_lost, on_beat
        # Told of each held job a renewal skipped (another session held its row): not a loss.
        # Set once, here; called by the heartbeat and the executors' checks, under no lock.
        self.on_skipped = on_skipped or (lambda job: None)
        # The heartbeat session's timeouts (the module's docstring), set once, here: a statement
        # ends within one beat's interval, and a lock wait within half of that, its error
        # naming the lock.
        every = self.seconds / BEATS_PER_LEASE
        self.statement_timeout, self.lock_timeout = every, every / 2
        # Keyed by claim, (id, fence_token): a process can hold a stale claim
        # of a job and a newer one of the same job at once.
        # Written by the producer, senders, heartbeat, lease clock and executors' checks; read by them.
        self._until: dict[tuple[int, int], tuple[queue.Job, float]] = {}
        # Taken out for their outcome's send: not renewed (the send finishes them), but still
        # given up at their end, since a send that outlasts the lease may be fenced.
        # Written by senders and the lease clock; read by them and by the heartbeat (its backoff).
        self._sending: dict[tuple[int, int], tuple[queue.Job, float]] = {}
        self._lock = threading.Lock()  # guards _until and _sending: a leaf (the package's lock order)
        # A reaper may take a job as soon as the server's lease ends, only a claim's round
        # trip after our `until`, while the thread that gives it up can wake late by a busy
        # scheduler's delay. Giving up a tenth of the lease early keeps our end before any reap.
        self.margin = self.seconds / 10
        self._conn_lock = threading.Lock()  # one statement at a time on the connection; held alone
        # Written and read by the heartbeat and the executors' checks; read by anyone (backend_pid).
        self._conn: psycopg.Connection | None = None
        # Its own name in pg_stat_activity, so an operator (or a fault run)
        # can tell the heartbeat session from the work and LISTEN sessions.
        given = conninfo_to_dict(dsn)
        base = given.get("application_name")
        self.application_name = f"{base} heartbeat" if base else "pgq heartbeat"
        # Set as the session starts (libpq's options, after any the dsn gives), so every
        # statement on it, a fresh connection's first included, runs under them.
        timeouts = (
            f"-c statement_timeout={timeout_ms(self.statement_timeout)} "
            f"-c lock_timeout={timeout_ms(self.lock_timeout)}"
        )
        self.options = f"{given['options']} {timeouts}" if given.get("options") else timeouts

    def hold(self, jobs: Sequence[queue.Job], since: float) -> None:
        """Jobs just claimed by a statement sent at `since` (monotonic)."""
        until = since + self.seconds
        held = {claim_key(job): (job, until) for job in jobs}
        with self._lock:
            self._until.update(held)

    def take(self, jobs: Sequence[queue.Job]) -> dict[tuple[int, int], tuple[queue.Job, float]]:
        """Renew these jobs no more while their outcomes are sent (give_up_passed still
        watches their end); what was held, for put_back or forget_taken."""
        keys = [claim_key(job) for job in jobs]
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

    def forget_taken(self, taken: dict[tuple[int, int], tuple[queue.Job, float]]) -> None:
        """Forget what take() returned once its send has finished (what put_back restored stays)."""
        with self._lock:
            for key in taken:
                self._sending.pop(key, None)

    def release(self, jobs: Sequence[queue.Job]) -> None:
        """Jobs whose outcome was sent, or that were never started."""
        self.forget_taken(self.take(jobs))

    def held(self) -> list[queue.Job]:
        with self._lock:
            return [job for job, _ in self._until.values()]

    def seconds_left(self, job: queue.Job, now: float | None = None) -> float:
        """Seconds of lease surely left at `now` (monotonic; default: the
        present); minus infinity for a job not held."""
        with self._lock:
            entry = self._until.get(claim_key(job))
        if entry is None or not job.still_mine():
            return float("-inf")
        return entry[1] - (time.monotonic() if now is None else now)

    def renew(self, jobs: Sequence[queue.Job]) -> set[tuple[int, int]]:
        """One fenced statement that never waits on a row (sql/renew_leases.sql) extends
        these leases; the claims it renewed. A job whose claim no longer holds it is lost; one
        whose row another session held is skipped, and stays held with the lease it had.
        Raises psycopg.Error if the statement could not run or finish within the session's
        timeouts (the connection is closed then, so the next try opens a fresh one)."""
        sent_at = time.monotonic()  # before the statement is sent: the lease surely runs from later
        with self._conn_lock:
            try:
                held = queue.renew_leases(self._connection(), jobs, self.lease)
            except psycopg.Error:
                self.close()
                raise
        lost, skipped = [], []
        with self._lock:
            for job in jobs:
                key = claim_key(job)
                if key not in held:
                    if self._until.pop(key, None) is not None:
                        lost.append(job)
                elif not held[key]:
                    if key in self._until:  # not one taken meanwhile for its outcome's send
                        skipped.append(job)
                elif key in self._until:
                    self._until[key] = (job, sent_at + self.seconds)
            newly_lost = mark_lost(lost)
        self._tell_lost(newly_lost, "fenced")
        for job in skipped:
            self.on_skipped(job)
        return {key for key, renewed in held.items() if renewed}

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
            self._conn = connect(self.dsn, application_name=self.application_name, options=self.options)
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
                self.on_beat("beat_failed", error_line(exc))
            self.give_up_passed()
            if closing.wait(max(0.0, min(backoff, self.earliest_end() - time.monotonic()))):
                return
            backoff = min(backoff * 2, self.seconds / 8)

    def give_up(self, jobs: Sequence[queue.Job]) -> None:
        """Stop holding these jobs and tell their handlers they are lost."""
        self.release(jobs)
        self._tell_lost(mark_lost(jobs), "given up")

    def give_up_passed(self) -> None:
        """Give up every job whose lease may pass within the margin without a renewal,
        those whose outcome is on its way too."""
        end = time.monotonic() + self.margin
        with self._lock:
            passed = [job for job, until in self._until.values() if until <= end]
            for job in passed:
                del self._until[claim_key(job)]
            on_way = [job for job, until in self._sending.values() if until <= end and job.still_mine()]
            newly_lost, newly_lost_on_way = (
                mark_lost(passed),
                mark_lost(on_way),
            )  # under the lock: see put_back
        self._tell_lost(newly_lost, "given up")
        self._tell_lost(newly_lost_on_way, ON_ITS_WAY)

    def give_up_all(self) -> None:
        """Give up every job still held or on its way: the process stops holding any."""
        with self._lock:
            jobs = [job for job, _ in [*self._until.values(), *self._sending.values()]]
            self._until.clear()
            self._sending.clear()
            newly_lost = mark_lost(jobs)
        self._tell_lost(newly_lost, "given up")

    def earliest_end(self) -> float:
        """The soonest moment (monotonic) a job is to be given up, its lease's end less the
        margin; infinity if none is."""
        with self._lock:
            ends = [until for _, until in self._until.values()]
            ends += [until for job, until in self._sending.values() if job.still_mine()]
        return min(ends, default=float("inf")) - self.margin

    def _tell_lost(self, jobs: Sequence[queue.Job], why: str) -> None:
        # Called once every job lost at the same moment is marked (mark_lost): a callback may
        # block, and a job still marked as held meanwhile would run on after a reaper took it.
        for job in jobs:
            self.on_lease_lost(job, why)

    def backend_pid(self) -> int | None:
        """The heartbeat session's server process id, while it is open."""
        conn = self._conn
        return conn.info.backend_pid if conn is not None and not conn.closed else None

    def close(self) -> None:
        close_quietly(self._conn)
        self._conn = None


class Heartbeat:
    """The heartbeat's thread, which renews every held lease each `every` seconds, and the
    lease clock's, which gives each job up at its end: both around one Leases, until
    `closing` is set."""

    def __init__(
        self,
        leases: Leases,
        every: float,
        closing: threading.Event,
        on_error: Callable[[BaseException], None],
    ):
        self.leases = leases
        self.every = every  # the heartbeat rule: see the module's docstring
        self.closing = closing  # set by run()'s thread as the Worker stops; read by both threads
        self.on_error = on_error  # stops the Worker, whose run() raises the error
        self._threads: list[threading.Thread] = []  # run()'s thread only

    def start(self) -> None:
        self._threads = [
            threading.Thread(target=loop, daemon=True, name=f"pgq-{name}")
            for loop, name in ((self.beat_loop, "heartbeat"), (self.lease_clock_loop, "lease-clock"))
        ]
        for thread in self._threads:
            thread.start()

    def join(self) -> None:
        """Wait for both threads to end (set `closing` first)."""
        for thread in self._threads:
            thread.join()
        self._threads = []

    def beat_loop(self) -> None:
        """Beat every `every` s, counted from each beat's start, so a slow beat does not
        push the next one later."""
        self.leases.open()
        next_beat = time.monotonic() + self.every
        while not self.closing.wait(max(0.0, next_beat - time.monotonic())):
            next_beat = time.monotonic() + self.every
            self._run_step_or_stop_worker(lambda: self.leases.beat(self.closing))

    def lease_clock_loop(self) -> None:
        """Give each job up at its end (Leases.earliest_end), though no beat failed: beats
        that succeed slowly can let a lease end between them. A thread of its own, with no
        I/O, so a beat stuck on the network (a connect to a restarting server can take
        seconds) cannot make it late. It wakes at least every `every` s, so before the end
        of any job claimed meanwhile, unless its claim took most of the lease (the check
        before each job covers that one)."""
        while not self.closing.wait(
            max(0.0, min(self.leases.earliest_end(), time.monotonic() + self.every) - time.monotonic())
        ):
            self._run_step_or_stop_worker(self.leases.give_up_passed)

    def _run_step_or_stop_worker(self, step: Callable[[], None]) -> None:
        """One step of either loop. An on_event callback's error stops the Worker (run()
        raises it) instead of ending the thread, which must go on giving leases up until
        the Worker closes."""
        try:
            step()
        except Exception as exc:
            self.on_error(exc)

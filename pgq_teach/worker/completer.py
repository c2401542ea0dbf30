"""The completer: outcomes held, sent in batches, and settled when a send
may have committed unseen (in the shape of River's jobcompleter).

An executor hands each finished job's outcome here (`hold`). The outcomes go
in batches over the work connection, one fenced statement for the done jobs
and one for the failed ones: the producer sends those of every executor that
finished its batch in one go before it claims again, and an executor sends
its own mid-batch when `flush_after` says so. Outcomes a broken connection
did not confirm are held and sent again; a completion or a failure that had
committed all the same counts as what it did (done, retried or dead), not
fenced.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import psycopg

from .. import queue
from .connections import CONNECTION_BROKEN, WorkConnection
from .inbox import Inbox, Message
from .leases import Leases, claim_key
from .report import Reporter

T = TypeVar("T")


class Completer:
    """Holds the outcomes of finished jobs and sends them, fenced, in batches."""

    def __init__(
        self,
        work: WorkConnection,
        leases: Leases,
        reporter: Reporter,
        inbox: Inbox,
        *,
        durable: bool,
    ):
        self.work, self.leases, self.reporter, self.inbox = work, leases, reporter, inbox
        self.durable = durable  # wait for the disk on every completion (durable_completions)
        # Kinds with a row in job_kinds: their failures back off by the kind's policy
        # (sql/fail_many_by_kind.sql). Written by the claiming thread at its first claim; read by senders.
        self.by_kind: frozenset[str] = frozenset()
        self._lock = threading.Lock()  # guards the four fields below: a leaf (the package's lock order)
        # Written by the executors (hold) and senders (the producer, an executor mid-batch); read by senders.
        self._done: list[queue.Job] = []
        self._failed: list[tuple[queue.Job, Exception]] = []
        # When the oldest held outcome was added.
        # Written by the executors and senders; read by the producer and the executors.
        self._held_since: float | None = None
        # Claims whose outcome was sent as the connection broke: it may have committed with no
        # answer back, so when sent again it matches no running row. See _settle_unsure_completions.
        # Written by senders; read by senders and by whichever thread learns a lease lost.
        self._unsure: set[tuple[int, int]] = set()

    def hold(self, job: queue.Job, error: Exception | None, at: float) -> float:
        """Hold a finished job's outcome (done, or failed with `error`), finished at `at`
        (monotonic); when the oldest held outcome was added."""
        with self._lock:
            if error is None:
                self._done.append(job)
            else:
                self._failed.append((job, error))
            since = self._held_since
            first = since is None
            if since is None:
                since = self._held_since = at
        if first:
            self.inbox.post(Message.OUTCOME_HELD)  # the producer keeps flush_after for it
        return since

    def held_since(self) -> float | None:
        with self._lock:
            return self._held_since

    def holds_any(self) -> bool:
        with self._lock:
            return bool(self._done or self._failed)

    def is_unsure(self, job: queue.Job) -> bool:
        """Whether this claim's last send may have committed unseen: then a lease it lost is
        not counted, since the outcome is counted as what it did, or fenced."""
        with self._lock:
            return claim_key(job) in self._unsure

    def try_send(self) -> None:
        """An executor's send: if the connection breaks the outcomes stay
        held, and the producer sends them on a fresh connection."""
        try:
            self.send()
        except CONNECTION_BROKEN as exc:
            self.reporter.connection_broke(exc)
            self.work.close()

    def send_what_is_left(self, tries: int = 3) -> None:
        """Send every held outcome before stopping: a second claim of one job goes in a
        statement of its own, and a broken connection is tried again on a fresh one. Outcomes
        still unsent after `tries` failures are left: their leases pass and the jobs run
        again (at least once)."""
        failures = 0
        while self.holds_any():  # the executors have stopped: only this thread adds
            try:
                self.send()
            except CONNECTION_BROKEN as exc:
                self.reporter.connection_broke(exc)
                self.work.close()
                failures += 1
                if failures >= tries:
                    return
                time.sleep(0.1 * failures)
            except psycopg.Error as exc:
                self.reporter.error(exc)
                return

    def send(self) -> None:
        """Send the held outcomes, then count and announce each job's result.
        Each list is one statement; they run one after the other, each in its
        own transaction, so no transaction holds row locks from both. What
        could not be sent stays held."""
        with self.work.lock:
            with self._lock:
                # A stale claim and a newer one of the same job go in separate
                # statements: the rows a statement returns name jobs, not claims.
                done, self._done = _first_of_each_job(self._done, [job.id for job in self._done])
                failed, self._failed = _first_of_each_job(self._failed, [job.id for job, _ in self._failed])
                later = bool(self._done or self._failed)
                self._held_since = time.monotonic() if later else None
            if later:
                self.inbox.post(Message.SEND_AGAIN)
            if not (done or failed):
                return
            # Not renewed while their outcome is on its way: a beat that waited on their rows and
            # found them finished would count a lost lease. The lease clock still gives them up
            # at their end (a send that outlasts the lease may be fenced). A send that fails
            # holds them again, but for any given up meanwhile.
            taken = self.leases.take(done + [job for job, _ in failed])
            try:
                conn = self.work.get()
                completed = queue.complete_many(conn, done, durable=self.durable) if done else []
                completed = self._settle_unsure_completions(conn, done, completed)
            except BaseException:
                self._hold_again(
                    done, failed, failures_sent=False
                )  # unsure first: see Worker._report_lost_lease
                self.leases.put_back(taken)
                raise
            # The completions have committed: whatever happens to the failures, count them.
            error: BaseException | None = None
            try:
                by_kind = any(job.kind in self.by_kind for job, _ in failed)
                outcomes = (
                    queue.fail_many(conn, failed, durable=self.durable, by_kind=by_kind) if failed else []
                )
                outcomes = self._settle_unsure_failures(conn, failed, outcomes)
            except BaseException as exc:
                failing = {claim_key(job) for job, _ in failed}
                self._hold_again([], failed, failures_sent=True)
                self.leases.put_back({key: held for key, held in taken.items() if key in failing})
                error, failed, outcomes = exc, [], []
            self.leases.forget_taken(taken)
        self.reporter.finished([job for job, ok in zip(done, completed, strict=True) if ok])
        for job, ok in zip(done, completed, strict=True):
            if not ok:
                self.reporter.count("fenced", job)
        for (job, _), outcome in zip(failed, outcomes, strict=True):
            self.reporter.count("retried" if outcome == "ready" else outcome, job)  # ready again: a retry
        if error is not None:
            raise error

    def _hold_again(
        self, done: list[queue.Job], failed: list[tuple[queue.Job, Exception]], *, failures_sent: bool
    ) -> None:
        """Outcomes a send could not deliver go back to the front, to be sent again. What was
        sent may have committed as the connection broke, so it is marked unsure (see
        _settle_unsure_completions): the completions always, the failures if their statement went out."""
        with self._lock:
            self._done[:0], self._failed[:0] = done, failed
            self._unsure.update(claim_key(job) for job in done)
            if failures_sent:
                self._unsure.update(claim_key(job) for job, _ in failed)
            self._held_since = self._held_since or time.monotonic()

    def _settle_unsure_completions(
        self, conn: psycopg.Connection, jobs: list[queue.Job], completed: list[bool]
    ) -> list[bool]:
        """`completed`, with a job this claim had already completed counted as completed, not
        fenced: its completion was sent as the connection broke and committed, though no answer
        came back (a server restart, a cut network). Among fenced completions only this claim's
        completes a job with that token, since a newer claim takes a new one
        (queue.completed_by)."""
        return self._settle_unsure(jobs, completed, lambda i, ok: ok or queue.completed_by(conn, jobs[i]))

    def _settle_unsure_failures(
        self, conn: psycopg.Connection, failed: list[tuple[queue.Job, Exception]], outcomes: list[str]
    ) -> list[str]:
        """`outcomes`, with a failure this claim had already recorded counted as what it made of
        the job (a retry or dead), not fenced, as _settle_unsure_completions does for completions: while no
        newer claim or requeue has changed the row since (queue.failed_by)."""

        def settle(i: int, outcome: str) -> str:
            return (queue.failed_by(conn, *failed[i]) or outcome) if outcome == "fenced" else outcome

        return self._settle_unsure([job for job, _ in failed], outcomes, settle)

    def _settle_unsure(
        self, jobs: list[queue.Job], outcomes: list[T], settle: Callable[[int, T], T]
    ) -> list[T]:
        """`outcomes`, with the i-th replaced by `settle(i, outcome)` for each job whose last send
        may have committed unseen (marked unsure by _hold_again); those jobs are then sure."""
        with self._lock:
            unsure = {claim_key(job) for job in jobs} & self._unsure
        if not unsure:
            return outcomes
        checked = [
            settle(i, outcome) if claim_key(job) in unsure else outcome
            for i, (job, outcome) in enumerate(zip(jobs, outcomes, strict=True))
        ]
        with self._lock:
            self._unsure -= unsure
        return checked


def _first_of_each_job(items: list[T], ids: list[int]) -> tuple[list[T], list[T]]:
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

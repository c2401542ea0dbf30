"""Per-kind limits: the job timeout, the shared rate limit, and the pause after
failures in a row.

The job timeout (`Deadlines`). Each kind may have one: its row in job_kinds
(`pgq_teach.kinds`), or the Worker's `timeout` (seconds, or {kind: seconds}),
which overrides it for this process. It counts from the moment an executor
starts the handler. When it passes, the timeout clock (a thread of its own,
with no I/O) takes the job from the held leases, so no beat renews it again;
sets `job.lost`, so a handler that looks (`job.still_mine()`, or a wait on
`job.lost`) can stop; and holds a failure (`JobTimeout`) for the completer,
which retries the job by its kind's policy; the job is announced `lost`
(on_event) first, since another claim may run it from then on. Whatever the
handler does later is dropped: the job's outcome is the timeout's.

A thread cannot be killed in Python (the threading module offers no way to
stop one from outside), so a handler that never looks at `job.lost` keeps
its executor. The job is failed and retried all the same, on this process or
another; the stuck executor stays busy, so this Worker claims one batch fewer
per stuck executor, and none at all once every executor is stuck (the jobs
stay ready for other Workers; `WorkerReport.stuck` counts them). `stop()`
then waits for those handlers: end the process (SIGKILL) to be rid of them.
That loses no job (each was failed already; one whose failure was not yet
sent keeps a lease no beat renews, which passes, and the reaper hands it
back), but it undoes nothing the handler did: its side effects stay done.

The shared rate limit and the pause (`Gate`), between the claim and the
executors. A kind in `rate_limits` takes a token per claimed job from its
bucket (sql/take_tokens.sql), shared by every process; a job that got none,
and any job of a paused kind, is handed back at once (sql/hand_back.sql):
its try given back, not due again until the pause ends or a token is
expected for it (the first after 1/rate, the next after 2/rate, and so on,
so they do not all come back at once). After `pause_after` failures of one kind in a row (timeouts
count), the Worker pauses that kind for `pause_for` seconds; a success ends a
run of failures. The limit counts claims: with batch > 1 a batch's later jobs
start after the claim that took their tokens, never earlier.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import psycopg

from .. import kinds, queue
from .completer import Completer
from .leases import Leases, claim_key
from .report import Reporter


class JobTimeout(Exception):
    """A job ran past its job timeout: the failure the Worker records for it."""


class Deadlines:
    """Each running job's job timeout, and the timeout clock that enforces it."""

    def __init__(
        self,
        timeouts: Mapping[str, float],
        *,
        leases: Leases,
        completer: Completer,
        reporter: Reporter,
        on_failure: Callable[[queue.Job], None],
    ):
        self.on_failure = on_failure  # Gate.record's failure: a timeout counts in a run of failures
        # Effective timeouts by kind (the Worker's, over job_kinds'). Written by the claiming
        # thread (at its first claim, before any job is handed out); read by the executors and the clock.
        self.timeouts = dict(timeouts)
        self.leases, self.completer, self.reporter = leases, completer, reporter
        self._lock = threading.Lock()  # guards the three fields below: a leaf (the package's lock order)
        # Running jobs with a timeout: claim -> (job, end on the monotonic clock).
        # Written by the executors (start, finish) and the timeout clock; read by the clock.
        self._ends: dict[tuple[int, int], tuple[queue.Job, float]] = {}
        # Claims the timeout failed whose handler has not returned: their executors are stuck.
        # Written by the clock (add) and the executors (discard); read by anyone.
        self._stuck: set[tuple[int, int]] = set()
        # Set by start() (the clock looks at the ends again) and by wake() (it looks at closing).
        self._changed = threading.Event()

    def start(self, job: queue.Job) -> None:
        """An executor is about to run this job's handler."""
        timeout = self.timeouts.get(job.kind)
        if timeout is None:
            return
        with self._lock:
            self._ends[claim_key(job)] = (job, time.monotonic() + timeout)
        self._changed.set()

    def wake(self) -> None:
        """Wake the clock: set `closing` first and it ends now. (It used to look at `closing`
        every second, so every run() waited up to a second for it at its end.)"""
        self._changed.set()

    def finish(self, job: queue.Job) -> bool:
        """The handler returned: whether its outcome counts (False: the timeout failed the job)."""
        if job.kind not in self.timeouts:
            # start() kept no end for it, so the clock cannot have failed it; and the timeouts
            # change only at a run's first claim, before any job runs. No lock: a no-op job
            # costs little more than the executor's loop, and this was a lock per job.
            return True
        key = claim_key(job)
        with self._lock:
            stuck = key in self._stuck
            self._stuck.discard(key)
            self._ends.pop(key, None)
        if stuck:
            self.reporter.add(stuck=-1)
        return not stuck

    def stuck(self) -> int:
        """Executors still running a handler whose job timed out."""
        with self._lock:
            return len(self._stuck)

    def clock_loop(self, closing: threading.Event) -> None:
        """The timeout clock's loop, until `closing` is set and wake() called: wait for the
        soonest end (or a new job, or wake()), then fail every job past its timeout."""
        while not closing.is_set():
            with self._lock:
                soonest = min((end for _, end in self._ends.values()), default=None)
            # With no end kept there is nothing to expire until start() or wake() says so.
            wait = None if soonest is None else max(0.0, soonest - time.monotonic())
            if self._changed.wait(wait):
                self._changed.clear()
            self.expire_passed()

    def expire_passed(self) -> list[queue.Job]:
        """Fail every job past its timeout: no more renewals, its handler told, its failure held."""
        now = time.monotonic()
        with self._lock:
            passed = [(key, job) for key, (job, end) in self._ends.items() if end <= now]
            for key, _ in passed:
                del self._ends[key]
                self._stuck.add(key)
        jobs = [job for _, job in passed]
        if not jobs:
            return []
        self.leases.release(jobs)  # renewed no more; the failure's send ends the claim
        for job in jobs:
            if not job.mark_lost():
                continue  # lost already (fenced, or given up at its lease's end): nothing to fail
            # Announced as lost before its failure is sent: from then another claim may run it.
            self.reporter.lease_lost(job, counted=False)
            self.on_failure(job)
            self.completer.hold(
                job, JobTimeout(f"ran past its job timeout of {self.timeouts[job.kind]:g} s"), now
            )
            self.reporter.count("timed_out", job)
        self.reporter.add(stuck=len(jobs))
        return jobs


class Gate:
    """Between the claim and the executors: the shared rate limits and the pauses."""

    def __init__(
        self,
        rate_limits: Mapping[str, float],
        *,
        pause_after: int,
        pause_for: float,
        leases: Leases,
        reporter: Reporter,
    ):
        self.rate_limits = dict(rate_limits)
        self.pause_after, self.pause_for = pause_after, pause_for
        self.leases, self.reporter = leases, reporter
        self._lock = threading.Lock()  # guards the three fields below: a leaf (the package's lock order)
        # Failures in a row per kind. Written by the executors and the timeout clock; read by them.
        self._streak: dict[str, int] = {}
        # Paused kinds -> when (monotonic) the pause ends. Written by the executors and the timeout
        # clock; read by the claiming thread.
        self._paused_until: dict[str, float] = {}
        # When a job handed back is due again (monotonic): the producer claims again then.
        # Written and read by the claiming thread, under the work connection's lock.
        self.look_again_at = float("inf")
        # The most jobs the next claim asks for (None: no cap): after a claim that found too
        # few tokens, as many as it was granted (at least one), so the Worker claims about
        # what it can run rather than a whole batch to hand back. Claiming thread only.
        self.claim_cap: int | None = None
        # Claims in a row that were granted no token at all: other processes are taking them,
        # so each such claim waits twice as long as the last before it looks again (at most a
        # second, or one token's time if longer), rather than every process asking at every
        # token. Claiming thread only.
        self._dry = 0

    def waiting(self) -> bool:
        """Whether jobs handed back here are to be claimed again (look_again_at is set)."""
        return self.look_again_at != float("inf")

    def record(self, job: queue.Job, ok: bool) -> None:
        """A handler's outcome (a timeout is a failure): count the kind's failures in a row."""
        if ok and job.kind not in self._streak:
            # The usual case, without a lock per job. A failure of the kind on another thread
            # that lands just after this look is counted as if it came after this success,
            # which it may have: outcomes on two threads have no order of their own.
            return
        with self._lock:
            if ok:
                self._streak.pop(job.kind, None)
                return
            streak = self._streak.get(job.kind, 0) + 1
            paused = streak >= self.pause_after
            if paused:
                self._streak.pop(job.kind, None)
                self._paused_until[job.kind] = time.monotonic() + self.pause_for
            else:
                self._streak[job.kind] = streak
        if paused:
            self.reporter.paused(job.kind, self.pause_after, self.pause_for)

    def sort(self, work: psycopg.Connection, jobs: list[queue.Job]) -> list[queue.Job]:
        """The jobs to run now; the others are handed back without spending a try (call it
        holding the work connection's lock, on that connection)."""
        now = time.monotonic()
        with self._lock:
            paused = {kind: end - now for kind, end in self._paused_until.items() if end > now}
        if not (self.rate_limits or paused) or not jobs:
            self.claim_cap = None
            return jobs
        keep: list[queue.Job] = []
        back: list[tuple[queue.Job, float]] = []
        by_kind: dict[str, list[queue.Job]] = {}
        granted_all, short = 0, False
        for job in jobs:
            if job.kind in paused:
                back.append((job, paused[job.kind]))
            else:
                by_kind.setdefault(job.kind, []).append(job)
        for kind, claimed in by_kind.items():
            rate = self.rate_limits.get(kind)
            if rate is None:
                keep += claimed
                continue
            granted = kinds.take_tokens(work, kind, rate, len(claimed))
            granted_all, short = granted_all + granted, short or granted < len(claimed)
            keep += claimed[:granted]
            # Spread out, one per token to come, so they do not all come back at once; later
            # still after claims granted nothing (the fleet is taking the tokens).
            step = min(max(1.0, 1 / rate), 2**self._dry / rate) if granted == 0 else 1 / rate
            back += [(job, (i + 1) * step) for i, job in enumerate(claimed[granted:])]
        self.claim_cap = max(1, granted_all) if short else None
        self._dry = min(self._dry + 1, 20) if short and granted_all == 0 else 0
        if back:
            kinds.hand_back(work, back)  # the report counts them; the job's last_error stays its own
            self.leases.release([job for job, _ in back])
            self.reporter.add(handed_back=len(back))
            self.look_again_at = min(self.look_again_at, now + min(wait for _, wait in back))
        return keep

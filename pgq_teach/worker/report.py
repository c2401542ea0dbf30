"""What one Worker did, counted by every one of its threads, and the first
error that stops it.

The Worker never prints. `Reporter` counts into the `WorkerReport` under a
lock of its own and passes each event to the optional `on_event(name, job)`
after it lets go of that lock, so a callback that blocks holds up only its
own thread. `FirstError` keeps the first unexpected error any thread hit,
for run() to raise once the Worker has stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import queue

OnEvent = Callable[[str, queue.Job | None], None]


@dataclass
class WorkerReport:
    """What one Worker did, one count per field. Every field is written by the
    Worker's threads through `Reporter`, under its lock; `Worker.report` is
    this object itself, read without that lock, so while the Worker runs each
    field is as of a moment ago."""

    claimed: int = 0  # jobs its claims returned
    done: int = 0  # jobs whose completion committed
    retried: int = 0  # jobs failed and ready again after a backoff
    dead: int = 0  # jobs failed on their last try
    # Outcomes the fence refused, and jobs not started because this process no longer held
    # them. An outcome that committed as the connection broke counts as what it did, unless a
    # newer claim or a requeue changed the job before it was sent again.
    fenced: int = 0
    reaped: int = 0  # jobs its reaper passes put back (or killed on their last try)
    reaper_passes: int = 0  # reaper statements run; a pass may reap nothing
    claims: int = 0  # claim statements run
    # Claim statements that returned nothing, counted when the claim, and any reap and second
    # claim after it, are over.
    empty_claims: int = 0
    wakeups: int = 0  # notifications that ended a wait
    polls: int = 0  # waits that ended at the poll interval
    reconnects: int = 0  # fresh work connections after a broken one
    beats: int = 0  # heartbeat statements that ran
    # Beats whose statement failed, or that its session's lock or statement timeout ended.
    beat_failures: int = 0
    # Held jobs a beat or check left unrenewed because another session held the row: still
    # held, not lost.
    renewals_skipped: int = 0
    # Held jobs a beat or check found fenced, or given up at their lease's end. Not counted
    # for an outcome on its way then, or one that may have committed (counted as above).
    leases_lost: int = 0
    timed_out: int = 0  # jobs failed at their job timeout (limits.py)
    stuck: int = 0  # executors now running a handler whose job timed out
    # Jobs handed back without spending a try: no token for their kind's rate limit, or
    # their kind paused.
    handed_back: int = 0
    pauses: int = 0  # kinds paused after failures in a row
    last_pause: str | None = None  # which kind the last pause stopped, and for how long
    last_error: str | None = None  # the last error a thread hit, a broken connection included
    done_ids: list[int] = field(default_factory=list)  # the ids of the jobs done, in order


def error_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip()


def no_event(name: str, job: queue.Job | None) -> None:
    """The default on_event: nobody is watching."""


class Reporter:
    """Counts into one WorkerReport, and tells `on_event` what happened."""

    def __init__(self, report: WorkerReport, on_event: OnEvent):
        self.report = report  # written by every thread of the Worker; read by anyone (maybe a moment old)
        self.on_event = on_event  # set once, here; called by every thread, never under _lock
        self._lock = threading.Lock()  # guards the report's fields

    @property
    def watching(self) -> bool:
        """Whether anyone is told of events: a loop over a batch's jobs is skipped if not."""
        return self.on_event is not no_event

    def add(self, **counts: int) -> None:
        """Add to these counts at once (one lock for a claim's or a reap's numbers)."""
        with self._lock:
            for name, n in counts.items():
                setattr(self.report, name, getattr(self.report, name) + n)

    def count(self, event: str, job: queue.Job | None) -> None:
        """One more of `event` (a field of the report), then tell on_event."""
        self.add(**{event: 1})
        self.on_event(event, job)

    def finished(self, jobs: Sequence[queue.Job]) -> None:
        """These jobs are done: counted under one lock for the batch, not one per job."""
        with self._lock:
            self.report.done += len(jobs)
            self.report.done_ids.extend(job.id for job in jobs)
        if self.watching:
            for job in jobs:
                self.on_event("done", job)

    def error(self, exc: BaseException) -> None:
        with self._lock:
            self.report.last_error = error_line(exc)

    def connection_broke(self, exc: BaseException) -> None:
        with self._lock:
            self.report.last_error = error_line(exc)
            self.report.reconnects += 1
        self.on_event("reconnect", None)

    def beat(self, outcome: str, error: str | None) -> None:
        """A beat's outcome (Leases' on_beat): "beat", or "beat_failed" with its error."""
        with self._lock:
            if outcome == "beat":
                self.report.beats += 1
            else:
                self.report.beat_failures += 1
                self.report.last_error = error

    def renewal_skipped(self, job: queue.Job) -> None:
        """Leases' on_skipped: a renewal left this held job's lease as it was (its row was locked)."""
        self.count("renewals_skipped", job)

    def lease_lost(self, job: queue.Job, *, counted: bool) -> None:
        """This process no longer holds the claim: announced always, counted if `counted`."""
        if counted:
            self.add(leases_lost=1)
        self.on_event("lost", job)

    def paused(self, kind: str, failures: int, seconds: float) -> None:
        """A kind is paused: no job of it runs here for `seconds`, after `failures` in a row."""
        with self._lock:
            self.report.pauses += 1
            self.report.last_pause = f"{kind} paused for {seconds:g} s after {failures} failures in a row"
        self.on_event("paused", None)


class FirstError:
    """The first unexpected error any of the Worker's threads hit (not a handler's failure,
    which is data): run() raises it once the Worker has stopped."""

    def __init__(self) -> None:
        self._error: BaseException | None = None  # written by any thread, under _lock; read by run()
        self._lock = threading.Lock()

    def keep(self, exc: BaseException) -> None:
        """Keep `exc` unless an earlier error is kept already."""
        with self._lock:
            self._error = self._error or exc

    def first(self) -> BaseException | None:
        with self._lock:
            return self._error

"""Priorities, starvation and aging (for lesson 10b): one low-priority job under a
steady stream of urgent ones, claimed with the priority claim (sql/claim_priority.sql),
without and then with aging (sql/age_priorities.sql).

Each round enqueues `load` urgent jobs (priority 0) and claims and completes `load` jobs: the
queue's capacity exactly matches the urgent arrivals, so without aging the job at priority 9
is never the best and waits for ever (the run stops after `rounds`). With aging, once it has
been due for `age_after_s` it joins priority 0 with the oldest run_at, and the next claim takes
it. The knobs that make the result: `load`, `rounds` and `age_after_s`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import timedelta

from .. import checks, measurements, queue, seeding, tables
from ..databases import Database
from ..guide import GuideFigure
from ..statements import run
from .results import Comparison, Progress, Result, advice, finish, note, tell

KIND = "priority_lab"
GUIDE_OLDEST_FIRST = advice(
    "the claim", "the claim takes the oldest due job first (ORDER BY run_at); no priorities"
)


@dataclass
class StreamRun:
    """One run of the stream: in which round the low-priority job was claimed (None: never,
    within the rounds), and how long it had waited then. `looked_s`: from the low job's
    enqueue returning to the start of the run's last aging statement (0 without aging), a
    lower bound on how long the server had seen it due then: once it reaches age_after_s,
    that aging moved the job and the claim after it took it."""

    aging: bool
    claimed_in_round: int | None
    waited_s: float | None
    rounds_run: int
    looked_s: float = 0.0


@dataclass(kw_only=True)
class StarvationResult(Result):
    load: int
    rounds: int
    age_after_s: float
    without_aging: StreamRun
    with_aging: StreamRun
    guide: GuideFigure = field(default_factory=lambda: GUIDE_OLDEST_FIRST)

    @property
    def starved(self) -> bool:
        """Without aging, the low-priority job never ran while the urgent stream lasted."""
        return self.without_aging.claimed_in_round is None

    def comparison(self) -> list[Comparison]:
        return [
            ("rounds before the low job ran, no aging", self.guess_cell, _rounds(self.without_aging), "–"),
            ("rounds before the low job ran, with aging", "–", _rounds(self.with_aging), "–"),
        ]

    def report(self) -> list[str]:
        aged = self.with_aging
        return [
            note(
                f"{tables.count(self.load, 'urgent job')} enqueued and claimed per round, "
                f"{self.rounds} rounds:{self.stopped_note}"
            ),
            note(f"  without aging, the priority-9 job {_rounds(self.without_aging)}"),
            note(
                f"  with aging after {tables.duration(self.age_after_s)}, it {_rounds(aged)}"
                + (f", after waiting {tables.duration(aged.waited_s)}" if aged.waited_s is not None else "")
            ),
            *self.footer(),
        ]


def _rounds(r: StreamRun) -> str:
    if r.rounds_run == 0:  # only after a Stop: rounds is at least 1
        return "was not tried: stopped before the first round"
    if r.claimed_in_round is None:
        return f"never ran in {r.rounds_run} rounds"
    return f"ran in round {r.claimed_in_round}"


def starvation(
    db: Database,
    *,
    load: int = 20,
    rounds: int = 100,
    age_after_s: float = 0.5,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> StarvationResult:
    """Run the stream twice on a reset jobs table, without and with aging; see the module."""
    load = checks.whole_number("load", load, 1, 1_000)
    rounds = checks.whole_number("rounds", rounds, 1, 10_000)
    age_after_s = checks.seconds("age_after_s", age_after_s, 0.01, 60)
    stop = stop or threading.Event()
    runs: list[StreamRun] = []
    for aging in (False, True):
        runs.append(_stream(db, load, rounds, age_after_s if aging else None, stop, progress, len(runs)))
    return finish(
        StarvationResult,
        db,
        guess=guess,
        stopped=stop,
        load=load,
        rounds=rounds,
        age_after_s=age_after_s,
        without_aging=runs[0],
        with_aging=runs[1],
    )


def _stream(
    db: Database,
    load: int,
    rounds: int,
    age_after_s: float | None,
    stop: threading.Event,
    progress: Progress | None,
    done_runs: int,
) -> StreamRun:
    """One run: the low job first, then the urgent rounds, until it is claimed or rounds end."""
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        began = time.monotonic()  # before the enqueue: the wait it reports is never short
        low = queue.enqueue(conn, KIND, {"low": True}, priority=9)
        enqueued, looked = time.monotonic(), 0.0
        for round_no in range(1, rounds + 1):
            if stop.is_set():
                return StreamRun(age_after_s is not None, None, None, round_no - 1, looked)
            queue.enqueue_many(conn, KIND, [{"round": round_no}] * load, priority=0, notify=False)
            if age_after_s is not None:
                looked = time.monotonic() - enqueued
                run(conn, "age_priorities", {"after": timedelta(seconds=age_after_s)})
            jobs = queue.claim_priority(conn, batch=load)
            queue.complete_many(conn, jobs)
            tell(progress, done_runs * rounds + round_no, 2 * rounds)
            if any(job.id == low for job in jobs):
                waited = time.monotonic() - began
                return StreamRun(age_after_s is not None, round_no, waited, round_no, looked)
    return StreamRun(age_after_s is not None, None, None, rounds, looked)


@dataclass(kw_only=True)
class UrgentResult(Result):
    """One urgent job (priority 0) enqueued behind a backlog of ordinary ones (priority 5):
    how many jobs each claim took, in the claims before the one that took it, draining the
    queue batch by batch."""

    backlog: int
    batch: int
    ahead_fifo: int  # jobs the FIFO claim (claim.sql) took before the urgent one
    ahead_priority: int  # jobs the priority claim (claim_priority.sql) took before it
    # Whether each claim reached the urgent job: a run stopped before it took only `ahead` jobs
    reached_fifo: bool = True
    reached_priority: bool = True
    guide: GuideFigure = field(default_factory=lambda: GUIDE_OLDEST_FIRST)

    def quoted(self) -> dict[str, float]:
        """The figures the interview quotes, with the knobs that made them."""
        return {
            "backlog": self.backlog,
            "batch": self.batch,
            "ahead_fifo": self.ahead_fifo,
            "ahead_priority": self.ahead_priority,
        }

    def comparison(self) -> list[Comparison]:
        fifo = self.ahead_fifo if self.reached_fifo else f"not reached: {self.ahead_fifo:,} taken (stopped)"
        best = self.ahead_priority if self.reached_priority else "not reached (stopped)"
        return [
            ("jobs claimed before the urgent one, FIFO claim", self.guess_cell, fifo, "–"),
            ("jobs claimed before the urgent one, priority claim", "–", best, "–"),
        ]

    def report(self) -> list[str]:
        return [
            note(
                f"one urgent job behind {tables.count(self.backlog, 'ordinary job')}, "
                f"claimed in batches of {self.batch}:{self.stopped_note}"
            ),
            f"  the FIFO claim {_took(self.ahead_fifo, self.reached_fifo)}",
            f"  the priority claim {_took(self.ahead_priority, self.reached_priority)}",
            *self.footer(),
        ]


def _took(ahead: int, reached: bool) -> str:
    if reached:
        return f"took {tables.count(ahead, 'job')} before it"
    return f"took {tables.count(ahead, 'job')} and was stopped before it reached it"


def urgent(
    db: Database,
    *,
    backlog: int = 5_000,
    batch: int = 50,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> UrgentResult:
    """The backlog at priority 5, then one job at priority 0; drained with each claim, on a
    fresh table, until the urgent job is claimed. The knobs: `backlog` and `batch`."""
    backlog = checks.whole_number("backlog", backlog, 1, 100_000)
    batch = checks.whole_number("batch", batch, 1, 1_000)
    stop = stop or threading.Event()
    (ahead_fifo, reached_fifo), (ahead_priority, reached_priority) = (
        _ahead_of_urgent(
            db, claim, backlog, batch, stop, lambda done, n=n: tell(progress, n * backlog + done, 2 * backlog)
        )
        for n, claim in enumerate((queue.claim, queue.claim_priority))
    )
    result = finish(
        UrgentResult,
        db,
        guess=guess,
        stopped=stop,
        backlog=backlog,
        batch=batch,
        ahead_fifo=ahead_fifo,
        ahead_priority=ahead_priority,
        reached_fifo=reached_fifo,
        reached_priority=reached_priority,
    )
    if not result.stopped and reached_fifo and reached_priority:
        measurements.record(measurements.URGENT_AHEAD_10B, result.quoted())
    return result


def _ahead_of_urgent(
    db: Database, claim, backlog: int, batch: int, stop: threading.Event, told
) -> tuple[int, bool]:
    """The jobs claimed before the claim that took the urgent job, and whether one took it."""
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        queue.enqueue_many(conn, KIND, [{"n": n} for n in range(backlog)], priority=5, notify=False)
        urgent_id = queue.enqueue(conn, KIND, {"urgent": True}, priority=0, notify=False)
        ahead = 0
        while not stop.is_set():
            jobs = claim(conn, batch=batch)
            if not jobs:
                break
            queue.complete_many(conn, jobs)
            ids = [job.id for job in jobs]
            if urgent_id in ids:
                return ahead, True  # the jobs of the claims before the one that took it
            ahead += len(jobs)
            told(ahead)
        return ahead, False

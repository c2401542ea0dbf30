"""Claim checks (lessons 01 and 03): the race lab's workers run the learner's
own claim, and the verdict counts what went wrong.

Each worker calls the learner's statement as the learner role; the jobs it
returns are worked one at a time (a batch claim hands out its rows in turn).
An empty result while due jobs remain is a wasted attempt, and the worker
tries again; an empty result with nothing due ends that worker.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field

import psycopg

from ..experiments.race import RaceResult, run_race
from ..guide import figure
from ..statements import run, run_one
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, locking, parse, plan
from .verdict import Evidence, Verdict

LEASE = "5 minutes"


@dataclass
class ClaimCounts:
    """What the workers saw, counted across all of them."""

    claims: int = 0
    wasted: int = 0
    over_limit: int = 0
    biggest: int = 0
    runaway: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


class LearnerClaimer:
    """The `claimer=` for run_race: one learner-role session per worker."""

    def __init__(self, scratch: Scratch, learner: LearnerSQL, values: dict, limit: int, jobs: int):
        self.scratch, self.learner, self.values, self.limit, self.jobs = scratch, learner, values, limit, jobs
        self.counts = ClaimCounts()
        self.sessions: list[psycopg.Connection] = []

    def __call__(self, _race_conn: psycopg.Connection):
        conn = self.scratch.connect()
        self.sessions.append(conn)
        pending: list[int] = []

        def claim_one():
            while not pending:
                if self.counts.runaway:
                    return None
                rows = execute(conn, self.learner, self.values).fetchall()
                if not rows and run_one(conn, "exercise/due_left")[0] == 0:
                    return None
                self._count(len(rows))
                pending.extend(self._job_id(r) for r in rows)
            job_id = pending.pop(0)
            return job_id, lambda: run(conn, "teaching/mark_done", {"id": job_id})

        return claim_one

    def _count(self, n: int) -> None:
        c = self.counts
        with c.lock:
            c.claims += 1
            c.wasted += n == 0
            c.over_limit += n > self.limit
            c.biggest = max(c.biggest, n)
            # A statement that never marks anything taken would loop forever.
            c.runaway = c.runaway or c.claims > 10 * self.jobs

    @staticmethod
    def _job_id(row) -> int:
        if isinstance(row[0], bool) or not isinstance(row[0], int):
            raise Refused(f"the claim's first column must be the job's id; it returned {row[0]!r}")
        return row[0]

    def close(self) -> None:
        for conn in self.sessions:
            conn.close()


@dataclass(frozen=True)
class ClaimRace:
    """The race's result, the workers' counts and the plan's locking."""

    race: RaceResult
    counts: ClaimCounts
    limit: int
    locks: bool
    locks_in_with: bool
    modifies: bool

    @property
    def elapsed_s(self) -> float:
        return self.race.elapsed_s

    @property
    def shared_ideal_s(self) -> float:
        """Perfect sharing: every job's work split evenly over the workers (guide #6)."""
        return self.serial_ideal_s / self.race.workers

    @property
    def serial_ideal_s(self) -> float:
        return self.race.jobs * self.race.work_ms / 1000

    @property
    def never_run(self) -> int:
        return self.race.jobs - len(self.race.claims_per_job)

    def shared_job(self) -> tuple[int, int] | None:
        """A job two workers both ran, and how many workers ran it."""
        workers = defaultdict(set)
        for r in self.race.runs:
            workers[r.job_id].add(r.worker)
        shared = sorted(j for j, w in workers.items() if len(w) > 1)
        return (shared[0], len(workers[shared[0]])) if shared else None


def race_claim(
    scratch: Scratch,
    learner: LearnerSQL,
    *,
    batch: int = 1,
    workers: int = 8,
    jobs: int = 400,
    work_ms: float = 5,
    progress=None,
    stop=None,
) -> ClaimRace:
    values = {"batch": batch, "lease": LEASE}
    with scratch.connect() as conn:
        columns = parse(conn, learner)
        if "id" not in columns[:1]:
            raise Refused(
                "a claim returns the jobs it took: make the first column the job's id "
                "(RETURNING id, ... or SELECT id, ...)"
            )
        tree = plan(conn, learner, values)
    locks, in_with = locking(tree)
    claimer = LearnerClaimer(scratch, learner, values, batch, jobs)
    try:
        race = run_race(
            scratch.db,
            workers=workers,
            jobs=jobs,
            work_ms=work_ms,
            progress=progress,
            stop=stop,
            claimer=claimer,
        )
    finally:
        claimer.close()
    return ClaimRace(race, claimer.counts, batch, locks, in_with, tree.get("Node Type") == "ModifyTable")


def _hint(found: ClaimRace) -> str:
    shared = found.shared_job()
    if shared and not found.modifies:
        return (
            f"{shared[1]} workers got job {shared[0]}: your statement only reads, so nothing marks the job "
            "taken; mark it running in the same statement that picks it."
        )
    if shared:
        return f"two workers got job {shared[0]}: does your statement lock the row it picks?"
    if found.counts.over_limit:
        return (
            f"one claim returned {found.counts.biggest} rows with a LIMIT of {found.limit}: pick and lock "
            "the rows inside a WITH query, and update only those."
        )
    if found.never_run or found.counts.runaway:
        return (
            "some jobs never ran: does your statement find every due ready job (status = 'ready' AND "
            "run_at BETWEEN '-infinity' AND now()), oldest first?"
        )
    return ""


def claim_evidence(found: ClaimRace) -> list[Evidence]:
    race, c = found.race, found.counts
    return [
        Evidence(
            "jobs run more than once",
            f"{race.run_more_than_once:,} of {race.jobs:,}",
            race.run_more_than_once == 0,
        ),
        Evidence(
            "jobs never run",
            f"{found.never_run:,}" + (" (stopped: over 10 claims per job)" if c.runaway else ""),
            found.never_run == 0 and not c.runaway,
        ),
        Evidence(
            f"claims over the LIMIT of {found.limit}",
            f"{c.over_limit:,} (largest {c.biggest:,} row{'' if c.biggest == 1 else 's'})",
            c.over_limit == 0,
        ),
        Evidence(
            "wasted attempts (came back empty while jobs were due)", f"{c.wasted:,} of {c.claims:,} claims"
        ),
        Evidence("locks the row it picks (LockRows in the plan)", "yes" if found.locks else "no"),
        Evidence("locks inside the WITH query", "yes" if found.locks_in_with else "no"),
        Evidence(
            "elapsed against the ideals",
            f"{found.elapsed_s:.2f} s; ideal {found.shared_ideal_s:.2f} s shared by {race.workers} workers, "
            f"{found.serial_ideal_s:.2f} s one at a time",
        ),
    ]


def claim_verdict(exercise: str, found: ClaimRace, *, need_lock_in_with: bool) -> Verdict:
    evidence = claim_evidence(found)
    if need_lock_in_with:
        evidence[5] = Evidence(evidence[5].what, evidence[5].found, found.locks_in_with)
    hint = _hint(found)
    if not hint and need_lock_in_with and not found.locks_in_with:
        hint = (
            "it ran correctly, but the lock is not inside a WITH query: put FOR UPDATE SKIP LOCKED in the "
            "WITH that picks the rows, so each claim locks exactly the rows it marks."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        passed_headline="no job ran twice, none was lost",
        passed_hint=(
            f"correct, and {found.counts.wasted:,} attempts came back empty while jobs were due: "
            "FOR UPDATE SKIP LOCKED lets each worker take a different job at once."
            if found.counts.wasted and not found.locks
            else None
        ),
        server_version=found.race.server_version,
        guide=figure(1) if found.race.run_more_than_once else figure(6),
        numbers={
            "run_more_than_once": found.race.run_more_than_once,
            "never_run": found.never_run,
            "over_limit": found.counts.over_limit,
            "wasted": found.counts.wasted,
            "locks": found.locks,
            "locks_in_with": found.locks_in_with,
            "elapsed_s": found.elapsed_s,
            "shared_ideal_s": found.shared_ideal_s,
        },
        stopped=found.race.stopped,
    )


def check_claim(
    scratch, learner, *, exercise: str, need_lock_in_with: bool = False, progress=None, stop=None
) -> Verdict:
    found = race_claim(scratch, learner, progress=progress, stop=stop)
    return claim_verdict(exercise, found, need_lock_in_with=need_lock_in_with)


def check_guarded_update(scratch, learner, *, exercise: str, progress=None, stop=None) -> Verdict:
    if learner.first_word != "UPDATE":
        raise Refused("this exercise asks for one UPDATE statement whose subquery picks the job")
    found = race_claim(scratch, learner, progress=progress, stop=stop)
    verdict = claim_verdict(exercise, found, need_lock_in_with=False)
    shared = found.shared_job()
    if shared:
        verdict.hint = (
            f"two workers got job {shared[0]}: the worker that waited re-checks its WHERE on the row the "
            "winner committed. Does your WHERE still hold once the job is running?"
        )
    if verdict.passed:
        verdict.headline = f"no job ran twice; {found.counts.wasted:,} attempts were wasted"
        verdict.hint = (
            "the guard works: a worker that lost the race updates 0 rows instead of running the job "
            "again. Each wasted attempt is a round trip; lesson 03's claim avoids them."
        )
    return verdict


BATCH = 10


def check_batch_claim(scratch, learner, *, exercise: str, progress=None, stop=None) -> Verdict:
    if "batch" not in learner.placeholders:
        raise Refused("a batch claim takes its size from :batch (LIMIT :batch), so the check can set it")
    found = race_claim(scratch, learner, batch=BATCH, progress=progress, stop=stop)
    verdict = claim_verdict(exercise, found, need_lock_in_with=False)
    verdict.guide = figure(5)
    return verdict

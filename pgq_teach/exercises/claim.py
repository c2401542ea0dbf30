"""Claim checks (lessons 01 and 03): the race lab's workers run the learner's
own claim, and the verdict counts what went wrong.

Each worker calls the learner's statement as the learner role; the jobs it
returns are worked one at a time (a batch claim hands out its rows in turn).
An empty result while due jobs remain is a wasted attempt, and the worker
tries again; an empty result with nothing due ends that worker.

After the race, the claim meets two staged scenes (`claim_scene`), each with
its own lease and its own jobs: due ones whose age order is not their id
order, and a few not due yet among the lowest ids. The first claim must take
the oldest due jobs and write the lease it was given; no call may take a job
that is not due. A claim with no ORDER BY, no run_at check, or a lease
written into its text fails there, whatever the race shows. Each scene's jobs
start with attempts and fence tokens drawn afresh, and the claim of a job
must count the attempt (attempts + 1) and take a new fencing token (a
larger fence_token), or the reaper's max_attempts and lesson 05's fence have
nothing to read (judged for 01/claim and 03/claim).

Last, claims in turn (`two_claims`): a second claim runs while the first's
transaction is still open, a third once it has committed. A claim that takes
a job the first took fails there every time, where the race catches it only
when two workers happen to overlap. For lesson 03, the second claim must not
wait on the first's locks: FOR UPDATE without SKIP LOCKED queues every worker
behind the one holding the oldest job.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import psycopg
from psycopg.rows import dict_row

from .. import seeding, tables
from ..experiments.race import RaceResult, run_race
from ..guide import figure
from ..statements import run, run_one
from .learner_sql import LearnerSQL, Refused
from .sandbox import (
    LOCK_TIMEOUT_S,
    RACE_TIMEOUT_S,
    WATCHDOG_GRACE_S,
    Scratch,
    execute,
    locking,
    parse,
    plan,
    stage,
)
from .scenes import draw, falls_due
from .verdict import Evidence, Verdict

LEASE = "5 minutes"
KIND = "send_receipt"
SCENES = 2
SCENE_JOBS = 12  # at least; a batch claim gets three batches' worth
NOT_DUE = 2  # jobs staged with run_at ahead, among the lowest ids
# How long the first of two claims holds its transaction open for the second to
# block behind it or finish; well under LOCK_TIMEOUT_S, which would cancel the wait.
PAIR_WAIT_S = LOCK_TIMEOUT_S / 2
RACE_DEADLINE_S = RACE_TIMEOUT_S + WATCHDOG_GRACE_S  # the watchdog's, for a race's session
# The whole race's: a claim that takes milliseconds drains it in about a second, and a
# slow one would otherwise run in every session, each statement up to RACE_TIMEOUT_S.
RACE_BUDGET_S = 30.0


@dataclass(frozen=True)
class ClaimScene:
    """One staged scene: what the first claim took against what it should
    have, the lease it wrote, and any job it took before its time."""

    lease_s: int
    oldest: list[int]  # the due jobs the first claim should take
    got: list[int]
    lease_left_s: list[float | None]  # per job the first claim took; None: no lease written
    not_due_taken: list[int]
    uncounted: list[int] = field(default_factory=list)  # taken, but attempts not one more than staged
    unfenced: list[int] = field(default_factory=list)  # taken, but fence_token no larger than staged

    @property
    def in_order(self) -> bool:
        return sorted(self.got) == sorted(self.oldest)

    @property
    def lease_ok(self) -> bool:
        # Read a moment after the claim: the lease left is a little under what was asked.
        return bool(self.got) and all(
            left is not None and self.lease_s - 5 <= left <= self.lease_s + 1 for left in self.lease_left_s
        )


@dataclass(frozen=True)
class TwoClaims:
    """Claims in turn (`two_claims`): the jobs each took, and whether the
    second waited on the first's locks."""

    first: list[int]
    second: list[int]  # while the first's transaction was open
    after: list[int]  # once the first had committed
    waited: bool

    @property
    def both(self) -> list[int]:
        """The first's jobs that a later claim took again: each would run twice."""
        return sorted(set(self.first) & (set(self.second) | set(self.after)))


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
    """The `claimer=` and `connect=` for run_race: each worker claims on a learner-role
    session of its own."""

    def __init__(self, scratch: Scratch, learner: LearnerSQL, values: dict, limit: int, jobs: int):
        self.scratch, self.learner, self.values, self.limit, self.jobs = scratch, learner, values, limit, jobs
        self.counts = ClaimCounts()
        self.sessions: list[psycopg.Connection] = []
        self.budget_spent: float | None = None  # the budget, once the race has spent it

    def connect(self) -> psycopg.Connection:
        """One worker's session, kept so end_race can cancel its statement."""
        conn = self.scratch.connect(timeout_s=RACE_TIMEOUT_S)
        self.sessions.append(conn)
        return conn

    def __call__(self, conn: psycopg.Connection):
        pending: list[int] = []

        def claim_one():
            while not pending:
                if self.budget_spent is not None:
                    raise Refused(self.why_cancelled())
                if self.counts.runaway:
                    return None
                rows = execute(conn, self.learner, self.values, seconds=RACE_DEADLINE_S).fetchall()
                if not rows and run_one(conn, "exercise/due_left")[0] == 0:
                    return None
                self._count(len(rows))
                pending.extend(self.job_id(r) for r in rows)
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
    def job_id(row) -> int:
        if isinstance(row[0], bool) or not isinstance(row[0], int):
            raise Refused(f"the claim's first column must be the job's id; it returned {row[0]!r}")
        return row[0]

    def end_race(self, budget_s: float) -> None:
        """The race has run `budget_s`: cancel each session's statement; the next claim is refused."""
        self.budget_spent = budget_s
        for conn in list(self.sessions):
            try:
                conn.cancel_safe(timeout=2)
            except psycopg.Error:
                pass  # the session is gone already

    def why_cancelled(self) -> str:
        if self.budget_spent is not None:
            return (
                f"the race ran past {self.budget_spent:g} s and was stopped; with a claim that takes "
                "milliseconds it takes about a second"
            )
        return (
            f"a claim in the race ran past the race's {RACE_TIMEOUT_S} s statement timeout and was "
            "cancelled; a queue statement takes milliseconds, even waiting for other workers' commits"
        )

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
    scenes: tuple[ClaimScene, ...] = ()
    pair: TwoClaims | None = None

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

    @property
    def taken_again(self) -> list[int]:
        """The jobs a claim took that a later claim took again (`two_claims`)."""
        return self.pair.both if self.pair else []


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
    budget_s: float = RACE_BUDGET_S,
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
        # Alone first, within a lone statement's timeout, so a slow statement is refused
        # before the race's sessions run it; RACE_BUDGET_S bounds one that slows later.
        with scratch.db.connection() as owner:
            seeding.reset_and_seed(owner, KIND, jobs)
        claimed(conn, learner, values)
    locks, in_with = locking(tree)
    claimer = LearnerClaimer(scratch, learner, values, batch, jobs)
    budget = threading.Timer(budget_s, claimer.end_race, args=(budget_s,))
    budget.daemon = True
    budget.start()
    try:
        race = run_race(
            scratch.db,
            workers=workers,
            jobs=jobs,
            work_ms=work_ms,
            progress=progress,
            stop=stop,
            claimer=claimer,
            connect=claimer.connect,
        )
    except psycopg.errors.QueryCanceled:  # the budget's cancel or the race's timeout; Stop is judged later
        raise Refused(claimer.why_cancelled()) from None
    finally:
        budget.cancel()
        claimer.close()
    # The scenes come after the race, so a statement the race shows to be slow or wrong meets the
    # race's own verdict first; a stopped race skips them.
    rng = draw()
    scenes = () if race.stopped else tuple(claim_scene(scratch, learner, batch, rng) for _ in range(SCENES))
    pair = None if race.stopped else two_claims(scratch, learner, batch)
    modifies = tree.get("Node Type") == "ModifyTable"
    return ClaimRace(race, claimer.counts, batch, locks, in_with, modifies, scenes, pair)


def claim_scene(scratch: Scratch, learner: LearnerSQL, batch: int, rng) -> ClaimScene:
    """Stage due jobs out of id order and a few not yet due, claim once and
    read the lease, then claim until nothing comes back."""
    jobs = max(SCENE_JOBS, 3 * batch)
    lease_s = rng.choice([s for s in range(61, 3600) if s != 300])  # never the race's 5 minutes
    not_due = rng.sample(range(1, NOT_DUE + 3), NOT_DUE)  # low ids: a scan in table order meets them first
    due = [i for i in range(1, jobs + 1) if i not in not_due]
    # The oldest due jobs sit among the later ids, so table order is never age order.
    late = due[len(due) // 2 :]
    oldest = rng.sample(late, batch)
    rest = [i for i in due if i not in oldest]
    rng.shuffle(rest)
    ages = {job_id: 86_400 - 60 * rank for rank, job_id in enumerate(oldest + rest)}
    values = {"batch": batch, "lease": f"{lease_s} seconds"}
    # Earlier tries and claims: a claim counts one more and takes a larger token.
    staged = {i: (rng.randrange(1, 5), rng.randrange(1_000, 1_000_000)) for i in range(1, jobs + 1)}
    with scratch.db.connection() as owner, scratch.connect() as conn:
        seeding.reset_and_seed(owner, KIND, jobs)
        for job_id, (attempts, token) in staged.items():
            stage(owner, [job_id], "ready", attempts, token, None)
        ahead = {job_id: rng.randrange(600, 86_400) for job_id in not_due}
        # In id order: the rows' new versions then lie in id order, the order a scan meets them.
        falls_due(owner, {i: ahead[i] if i in ahead else -ages[i] for i in range(1, jobs + 1)})
        run(owner, "lab/analyze_jobs")  # the planner then knows the table is tiny, and scans it
        got = claimed(conn, learner, values)
        left = [run_one(owner, "lab/lease_left", {"id": i})[2] for i in got]
        rows = {i: run(owner, "lab/job_row", {"id": i}, row_factory=dict_row).fetchone() for i in got}
        uncounted = [i for i, r in rows.items() if r is None or r["attempts"] != staged[i][0] + 1]
        unfenced = [i for i, r in rows.items() if r is None or not r["fence_token"] > staged[i][1]]
        for _ in range(jobs):  # the rest, one claim at a time, until it comes back empty
            if not execute(conn, learner, values).fetchall():
                break
        taken = [i for i in not_due if run_one(owner, "lab/lease_left", {"id": i})[0] != "ready"]
    return ClaimScene(lease_s, oldest, got, left, taken, uncounted, unfenced)


def claimed(conn: psycopg.Connection, learner: LearnerSQL, values: dict) -> list[int]:
    """The ids of the jobs one call of the learner's claim took."""
    return [LearnerClaimer.job_id(r) for r in execute(conn, learner, values).fetchall()]


def two_claims(scratch: Scratch, learner: LearnerSQL, batch: int) -> TwoClaims:
    """Claim in one session; claim again in a second while the first's
    transaction is still open, and commit the first once the second waits on
    its locks or is done; then claim once more.

    The race meets a claim's flaw only when two workers happen to overlap;
    this meets it every time. A claim that neither skips locked rows nor
    re-checks the status picks from a snapshot in which the first's jobs are
    still ready, so it takes them again once the first commits; one that
    marks nothing takes them again afterwards."""
    values = {"batch": batch, "lease": LEASE}
    with scratch.db.connection() as owner:
        seeding.reset_and_seed(owner, KIND, 3 * batch)
        with scratch.connect(autocommit=False) as first, scratch.connect() as second:
            took = claimed(first, learner, values)
            with ThreadPoolExecutor(1) as pool:
                later = pool.submit(claimed, second, learner, values)
                try:
                    waited = wait_for_lock_or_end(owner, second.info.backend_pid, later)
                finally:
                    first.commit()  # whatever the wait did: the second may be blocked on these locks
                during = later.result()
            return TwoClaims(took, during, claimed(second, learner, values), waited)


def wait_for_lock_or_end(
    owner: psycopg.Connection, pid: int, claim: Future, within_s: float = PAIR_WAIT_S
) -> bool:
    """Wait until session `pid` waits for a lock (True) or `claim` is done or
    `within_s` has passed (False). `owner` is autocommit, so each look at
    pg_stat_activity is a fresh one."""
    deadline = time.monotonic() + within_s
    while not claim.done() and time.monotonic() < deadline:
        if run_one(owner, "exercise/session_waits_on_lock", {"pid": pid})[0]:
            return True
        time.sleep(0.005)
    return False


def _hint(found: ClaimRace) -> str:
    shared = found.shared_job()
    if shared and not found.modifies:
        return (
            f"{shared[1]} workers got job {shared[0]}: your statement only reads, so nothing marks the job "
            "taken; mark it running in the same statement that picks it."
        )
    if shared:
        return f"two workers got job {shared[0]}: does your statement lock the row it picks?"
    again = found.taken_again
    if again and not found.modifies:
        return (
            f"a second claim got job {again[0]} too: your statement only reads, so nothing marks the job "
            "taken; mark it running in the same statement that picks it."
        )
    if again:
        return f"a second claim got job {again[0]} too: does your statement lock the row it picks?"
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


def _lease_text(scene: ClaimScene) -> str:
    if not scene.got:
        return "the first claim took no job"
    written = [left for left in scene.lease_left_s if left is not None]
    if len(written) < len(scene.lease_left_s):
        return "no lease written (leased_until is NULL)"
    return f"the lease ends in {min(written):,.0f} s"


def _took(ids: list[int]) -> str:
    """The jobs a claim took, by id: "took job 3", "took jobs 3, 5", "took no job"."""
    if not ids:
        return "took no job"
    return f"took {tables.plural(len(ids), 'job')} {', '.join(map(str, sorted(ids)))}"


def count_evidence(scenes: tuple[ClaimScene, ...]) -> list[Evidence]:
    """Whether the first claim of each scene counted the attempt and took a new fencing token."""
    uncounted = [i for s in scenes for i in s.uncounted]
    unfenced = [i for s in scenes for i in s.unfenced]
    n = len(scenes)
    return [
        Evidence(
            "counts the attempt (attempts + 1)",
            f"{_took(uncounted)} without adding one to attempts"
            if uncounted
            else f"yes, in {n} of {n} scenes",
            not uncounted,
        ),
        Evidence(
            "takes a new fencing token (fence_token + 1)",
            f"{_took(unfenced)} without a larger fence_token" if unfenced else f"yes, in {n} of {n} scenes",
            not unfenced,
        ),
    ]


def scene_evidence(scenes: tuple[ClaimScene, ...]) -> list[Evidence]:
    """What the staged scenes showed, one line per rule, the first miss named."""
    if not scenes:
        return []
    unordered = [s for s in scenes if not s.in_order]
    early = [s for s in scenes if s.not_due_taken]
    leaseless = [s for s in scenes if not s.lease_ok]
    n = len(scenes)
    return [
        Evidence(
            "the first claim takes the oldest due jobs (ORDER BY run_at)",
            f"{_took(unordered[0].got)}; the oldest due: {', '.join(map(str, sorted(unordered[0].oldest)))}"
            if unordered
            else f"yes, in {n} of {n} scenes",
            not unordered,
        ),
        Evidence(
            "jobs not due yet left alone (run_at ahead)",
            f"took {len(early[0].not_due_taken)} of {NOT_DUE} not-yet-due jobs" if early else "none taken",
            not early,
        ),
        Evidence(
            "writes the lease it is given (:lease)",
            f"asked for {leaseless[0].lease_s:,} s: {_lease_text(leaseless[0])}"
            if leaseless
            else f"yes, {' and '.join(f'{s.lease_s:,} s' for s in scenes)}",
            not leaseless,
        ),
    ]


def _scene_hint(scenes: tuple[ClaimScene, ...]) -> str:
    """The fixes the staged scenes call for, lease first: lesson 03's point."""
    fixes = []
    if any(not s.lease_ok for s in scenes):
        fixes.append(
            "write the lease the claim is given, leased_until = now() + :'lease'::interval: without it "
            "the reaper can never hand a crashed worker's job back"
        )
    if any(s.not_due_taken for s in scenes):
        fixes.append(
            "take only due jobs, run_at BETWEEN '-infinity' AND now(): a job whose run_at is ahead "
            "(a retry's backoff) must wait"
        )
    if any(not s.in_order for s in scenes):
        fixes.append(
            "take the oldest due first, ORDER BY run_at before the LIMIT, or old jobs can wait for ever"
        )
    return "; ".join(fixes) + "." if fixes else ""


def _run_twice(found: ClaimRace) -> str:
    """The race's count, and what the claims in turn showed if the race showed nothing."""
    race, again = found.race, found.taken_again
    text = f"{race.run_more_than_once:,} of {race.jobs:,}"
    if again and not race.run_more_than_once:
        text += f" in the race, but a second claim {_took(again)} the first had"
    return text


def claim_evidence(found: ClaimRace) -> list[Evidence]:
    race, c = found.race, found.counts
    once = not race.run_more_than_once and not found.taken_again
    return [
        Evidence("jobs run more than once", _run_twice(found), once),
        Evidence(
            "jobs never run",
            f"{found.never_run:,}" + (" (stopped: over 10 claims per job)" if c.runaway else ""),
            found.never_run == 0 and not c.runaway,
        ),
        Evidence(
            f"claims over the LIMIT of {found.limit}",
            f"{c.over_limit:,} (largest {tables.count(c.biggest, 'row')})",
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
        *scene_evidence(found.scenes),
    ]


def claim_verdict(
    exercise: str, found: ClaimRace, *, need_lock_in_with: bool, judge_counts: bool = False
) -> Verdict:
    """`judge_counts`: the claim must count the attempt and take a new fencing token;
    `need_lock_in_with` (lesson 03): it locks inside the WITH query, and skips locked rows."""
    evidence = claim_evidence(found)
    if need_lock_in_with:
        evidence[5] = Evidence(evidence[5].what, evidence[5].found, found.locks_in_with)
    counts = count_evidence(found.scenes) if judge_counts and found.scenes else []
    waited = need_lock_in_with and found.pair is not None and found.pair.waited
    if need_lock_in_with and found.pair is not None:
        evidence.append(
            Evidence(
                "a second claim passes over the rows the first holds (SKIP LOCKED)",
                "it waited for the first claim's locks" if waited else "yes, it did not wait",
                not waited,
            )
        )
    evidence += counts
    hint = _hint(found) or _scene_hint(found.scenes)
    if not hint and any(e.ok is False for e in counts):
        hint = (
            "a claim counts the try and takes a new fencing token as it marks the job running: "
            "attempts = jobs.attempts + 1, fence_token = jobs.fence_token + 1."
        )
    if not hint and waited:
        hint = (
            "it waited for the first claim's locks: FOR UPDATE SKIP LOCKED passes over rows another worker "
            "holds, so workers never queue behind each other."
        )
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
        guide=figure(1) if found.race.run_more_than_once or found.taken_again else figure(6),
        numbers={
            "run_more_than_once": found.race.run_more_than_once,
            "taken_again": len(found.taken_again),
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
    return claim_verdict(exercise, found, need_lock_in_with=need_lock_in_with, judge_counts=True)


def check_guarded_update(scratch, learner, *, exercise: str, progress=None, stop=None) -> Verdict:
    if learner.first_word != "UPDATE":
        raise Refused("this exercise asks for one UPDATE statement whose subquery picks the job")
    found = race_claim(scratch, learner, progress=progress, stop=stop)
    verdict = claim_verdict(exercise, found, need_lock_in_with=False)
    shared, again = found.shared_job(), found.taken_again
    if shared or again:
        who = f"two workers got job {shared[0]}" if shared else f"a second claim got job {again[0]} too"
        verdict.hint = (
            f"{who}: the one that waited re-checks its WHERE on the row the winner committed. "
            "Does your WHERE still hold once the job is running?"
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

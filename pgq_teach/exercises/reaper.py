"""The reaper (lesson 04): only expired leases come back (a job out of
attempts goes dead), live leases and other rows stay as they were, and the
plan uses the partial index on running jobs (guide: EXPLAIN showed it).

The reaper meets two staged scenes, each with its own job ids, drawn afresh
on every check, among many done rows. Each holds several workers' running
jobs: expired leases of jobs with other max_attempts (one that used all 3 of
its 3, one on its 6th of 10, one whose max_attempts was lowered below its
attempts, one on its 1st of 5) and live leases that must stay: one with
minutes left, one with a random number of seconds under 30 left, and one with
a second or two left, staged just before the reaper runs. A reaper that
writes a number of attempts into its text, ignores max_attempts, or takes
leases that are merely close to their end (`leased_until < now() + interval
'25 seconds'`), fails. A short lease counts only if the reaper's statement
ended before it could have run out (timed from its staging, on the client)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, indexes_used, plan, sessions, stage
from .scenes import draw
from .verdict import Evidence, Verdict

JOBS = 3_000  # mostly done rows, so reading the whole table and using the index differ
KEEP = 40  # ids 1..KEEP stay ready; the scenes' running jobs are drawn from them
SCENES = 2
INDEX = "jobs_running_idx"


@dataclass(frozen=True)
class Staged:
    """One running job of a scene, and the status the reaper must leave it in."""

    what: str
    attempts: int
    max_attempts: int
    lease_s: float
    want: str
    last: bool = False  # staged right before the reaper runs: a lease of a second or two


def scene(rng: random.Random) -> list[Staged]:
    """The running jobs of one scene: expired leases of jobs with other
    max_attempts, and live leases."""
    lowered = rng.randrange(2, 5)
    short, last = rng.uniform(2, 29), rng.uniform(1, 2)
    used_up = rng.randrange(2, 5)
    midway = rng.randrange(6, 9)
    return [
        Staged(f"expired, all {used_up} of its {used_up} attempts used", used_up, used_up, -30, "dead"),
        Staged(
            f"expired, attempt {midway} of {midway + 4}", midway, midway + 4, -rng.randrange(1, 90), "ready"
        ),
        Staged(
            f"expired, attempt {lowered + 2} after max_attempts was lowered to {lowered}",
            lowered + 2,
            lowered,
            -rng.randrange(1, 90),
            "dead",
        ),
        Staged("expired, attempt 1 of 5", 1, 5, -rng.randrange(1, 90), "ready"),
        Staged("lease still running (5 min left)", 1, 5, 300, "running"),
        Staged(f"lease still running ({short:.0f} s left)", rng.randrange(1, 5), 5, short, "running"),
        Staged(
            f"lease still running ({last:.1f} s left)", rng.randrange(1, 5), 5, last, "running", last=True
        ),
    ]


def _stage(owner, rng: random.Random, job_id: int, job: Staged) -> None:
    stage(
        owner,
        [job_id],
        "running",
        job.attempts,
        rng.randrange(1_000, 1_000_000),
        job.lease_s,
        max_attempts=job.max_attempts,
    )


def check_reap(scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None) -> Verdict:
    if learner.first_word not in ("UPDATE", "WITH"):  # WITH: pick and lock the rows first, as reap.sql does
        raise Refused("the reaper is one UPDATE of the expired rows (a WITH query may lead into it)")
    rng = draw()
    wrong: list[tuple[int, Staged, str]] = []  # (job id, what was staged, its status after the reaper)
    others: list[int] = []
    used: set[str] = set()
    checked = 0
    with sessions(scratch, learner, "send_receipt", JOBS) as (owner, conn):
        run(owner, "exercise/stage_done_beyond", {"keep": KEEP})
        for _ in range(SCENES):
            jobs = scene(rng)
            ids = rng.sample(range(1, KEEP + 1), len(jobs))
            for job_id, job in zip(ids, jobs, strict=True):
                _stage(owner, rng, job_id, job)
            run(owner, "lab/analyze_jobs")
            before = {r[0]: r for r in run(owner, "lab/all_jobs").fetchall()}
            used |= indexes_used(plan(conn, learner, {}))
            staged_at = time.monotonic()
            for job_id, job in zip(ids, jobs, strict=True):
                if job.last:  # its second or two starts now
                    _stage(owner, rng, job_id, job)
            execute(conn, learner, {})
            took_s = (
                time.monotonic() - staged_at
            )  # at most this passed between staging and the reaper's now()
            after = {r[0]: r for r in run(owner, "lab/all_jobs").fetchall()}
            wrong += [
                (i, j, after[i][3])
                for i, j in zip(ids, jobs, strict=True)
                if after[i][3] != j.want and not (j.last and took_s >= j.lease_s)
            ]
            others += [i for i in before if i not in ids and before[i] != after[i]]
            checked += len(before) - len(ids)
            for job_id in ids:  # back to ready, so the next scene starts from the same table
                stage(owner, [job_id], "ready", 0, 0, None)
    live = [w for w in wrong if w[1].want == "running"]
    expired = [w for w in wrong if w[1].want != "running"]
    evidence = [
        Evidence(
            "expired leases back to ready, or dead once the job's own max_attempts is used",
            "; ".join(f"job {i} ({j.what}): {s}, should be {j.want}" for i, j, s in expired)
            or f"all right in {SCENES} scenes",
            not expired,
        ),
        Evidence(
            "live leases left running",
            "; ".join(f"job {i} ({j.what}): {s}" for i, j, s in live) or f"all running in {SCENES} scenes",
            not live,
        ),
        Evidence("other rows left alone", f"{len(others):,} of {checked:,} changed", not others),
        Evidence(
            f"plan uses the partial index {INDEX}",
            ", ".join(sorted(used)) or "no index: reads the whole table",
            INDEX in used,
        ),
    ]
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(expired, bool(live or others), INDEX in used),
        numbers={
            "indexes": sorted(used),
            "live_changed": [w[0] for w in live],
            "others_changed": len(others),
        },
        passed_headline="only expired leases came back, through the partial index",
        passed_hint="only expired leases came back, and the plan reads just the running rows' index.",
        server_version=scratch.db.server.version,
    )


def _hint(expired: list[tuple[int, Staged, str]], strays: bool, indexed: bool) -> str:
    """The fixes the scenes call for: rows that must not change first, then the index, then dead."""
    if strays:
        return (
            "only running jobs whose lease has passed may change: "
            "status = 'running' AND leased_until BETWEEN '-infinity' AND now()."
        )
    fixes = []
    if not indexed:
        fixes.append(
            "the planner can use the partial index only if your WHERE says status = 'running' as a "
            "literal, as its predicate does"
        )
    if expired:
        fixes.append(_dead_rule_hint(expired))
    return "; ".join(fixes) + "." if fixes else ""


def _dead_rule_hint(expired: list[tuple[int, Staged, str]]) -> str:
    """What the expired jobs' statuses say about the learner's dead rule. Lesson 06
    teaches greatest(); the comparison here is the one lesson 04 can use."""
    late_dead = [j for _, j, s in expired if j.want == "ready" and s == "dead"]
    never_dead = [j for _, j, s in expired if j.want == "dead" and s == "ready"]
    if any(s == "running" for _, _, s in expired):
        return (
            "every running job whose lease has passed must leave running: ready, or dead once its tries "
            "are used"
        )
    if late_dead:
        return (
            "a job with tries left became dead: each job has its own max_attempts, so compare attempts "
            "with that column, not with a number written into the statement"
        )
    if never_dead and all("lowered" in j.what for j in never_dead):
        return (
            "a job past its max_attempts (lowered after it was claimed) came back ready: dead is "
            "attempts >= max_attempts, not only attempts equal to it"
        )
    return (
        "a job that has used all its tries came back ready: set status with a CASE, dead when attempts "
        ">= the job's own max_attempts, else ready"
    )

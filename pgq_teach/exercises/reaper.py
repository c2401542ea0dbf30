"""The reaper (lesson 04): only expired leases come back (a job out of
attempts goes dead), live leases and other rows stay as they were, and the
plan uses the partial index on running jobs (guide: EXPLAIN showed it)."""

from __future__ import annotations

from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, indexes_used, plan, sessions, stage
from .verdict import Evidence, Verdict

JOBS = 3_000  # mostly done rows, so reading the whole table and using the index differ
KEEP = 10
INDEX = "jobs_running_idx"
# id: (status, attempts, lease seconds from now, expected status after the reaper)
STAGE = {
    1: ("running", 1, -60, "ready"),
    2: ("running", 2, -1, "ready"),
    3: ("running", 5, -30, "dead"),
    4: ("running", 1, 300, "running"),
    5: ("running", 1, 30, "running"),
}


def check_reap(scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None) -> Verdict:
    if learner.first_word not in ("UPDATE", "WITH"):  # WITH: pick and lock the rows first, as reap.sql does
        raise Refused("the reaper is one UPDATE of the expired rows (a WITH query may lead into it)")
    with sessions(scratch, learner, "send_receipt", JOBS) as (owner, conn):
        run(owner, "exercise/stage_done_beyond", {"keep": KEEP})
        for job_id, (status, attempts, lease_s, _) in STAGE.items():
            stage(owner, [job_id], status, attempts, attempts, lease_s)
        run(owner, "lab/analyze_jobs")
        before = {r[0]: r for r in run(owner, "lab/all_jobs").fetchall()}
        used = indexes_used(plan(conn, learner, {}))
        execute(conn, learner, {})
        after = {r[0]: r for r in run(owner, "lab/all_jobs").fetchall()}
    status_of = {i: after[i][3] for i in STAGE}
    wrong = {i: (s, STAGE[i][3]) for i, s in status_of.items() if s != STAGE[i][3]}
    others = [i for i in before if i not in STAGE and before[i] != after[i]]
    live = [i for i, s in STAGE.items() if s[3] == "running" and status_of[i] != "running"]
    expired = [i for i, s in STAGE.items() if s[3] != "running"]
    evidence = [
        Evidence(
            "expired leases back to ready (or dead when out of attempts)",
            ", ".join(f"job {i}: {status_of[i]}" for i in expired),
            all(i not in wrong for i in expired),
        ),
        Evidence(
            "live leases left running",
            f"{len(STAGE) - len(expired) - len(live)} of {len(STAGE) - len(expired)}",
            not live,
        ),
        Evidence(
            "other rows left alone", f"{len(others):,} of {len(before) - len(STAGE):,} changed", not others
        ),
        Evidence(
            f"plan uses the partial index {INDEX}",
            ", ".join(sorted(used)) or "no index: reads the whole table",
            INDEX in used,
        ),
    ]
    if live or others:
        hint = (
            "only running jobs whose lease has passed may change: "
            "status = 'running' AND leased_until BETWEEN '-infinity' AND now()."
        )
    elif INDEX not in used:
        hint = (
            "the planner can use the partial index only if your WHERE says status = 'running' as a literal, "
            "as its predicate does."
        )
    else:
        hint = (
            "a job whose attempts reached max_attempts goes dead: "
            "CASE WHEN attempts = greatest(attempts, max_attempts) ..."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"indexes": sorted(used), "live_changed": live, "others_changed": len(others)},
        passed_headline="only expired leases came back, through the partial index",
        passed_hint="only expired leases came back, and the plan reads just the running rows' index.",
        server_version=scratch.db.server.version,
    )

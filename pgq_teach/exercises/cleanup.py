"""Cleanup (lesson 10): the learner's delete runs in a loop, each call its own
transaction, until it deletes nothing. Only done rows may go, every one of
them, in batches no bigger than :batch; the longest transaction is reported."""

from __future__ import annotations

import time

from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .verdict import Evidence, Verdict

JOBS, KEEP, BATCH = 3_000, 1_000, 500
MAX_CALLS = 100


def check_cleanup(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word != "DELETE":
        raise Refused("cleanup is one DELETE of a batch of done jobs")
    with sessions(scratch, learner, "send_receipt", JOBS) as (owner, conn):
        run(owner, "exercise/stage_done_beyond", {"keep": KEEP})
        stage(owner, [1], "running", 1, 1)
        stage(owner, [2], "dead", 1, 1)
        batches: list[int] = []
        longest = 0.0
        while len(batches) < MAX_CALLS:
            began = time.perf_counter()
            n = execute(conn, learner, {"batch": BATCH}).rowcount
            longest = max(longest, time.perf_counter() - began)
            batches.append(n)
            if n == 0 or (stop and stop.is_set()):
                break
        left = {r[0]: r[3] for r in run(owner, "lab/all_jobs").fetchall()}
    done_left = sum(1 for s in left.values() if s == "done")
    kept = sum(1 for i in range(1, KEEP + 1) if i in left)
    evidence = [
        Evidence("done rows left", f"{done_left:,} of {JOBS - KEEP:,}", done_left == 0),
        Evidence("other rows kept (ready, running, dead)", f"{kept:,} of {KEEP:,}", kept == KEEP),
        Evidence(
            f"largest batch (the limit is {BATCH})",
            f"{max(batches):,} rows in {len(batches)} calls",
            max(batches) <= BATCH,
        ),
        Evidence("longest transaction", f"{longest * 1000:,.1f} ms"),
    ]
    if kept < KEEP:
        hint = "only done rows may go: WHERE status = 'done'."
    elif max(batches) > BATCH:
        hint = (
            "delete at most :batch rows per call: pick the ids of done jobs in a subquery with "
            "LIMIT :batch, and delete only those."
        )
    else:
        hint = "call it until it deletes nothing: every done row must go."
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"batches": batches, "longest_ms": longest * 1000},
        passed_headline=f"all done rows deleted in batches of at most {BATCH}",
        passed_hint="short batches: each transaction ends quickly, so VACUUM is never held back for long.",
        server_version=scratch.db.server.version,
    )

"""Cleanup (lesson 10): the learner's delete runs in a loop, each call its own
transaction, until it deletes nothing. Only done rows may go, every one of
them, in batches no bigger than :batch; the longest transaction is reported.

It runs in two staged scenes, each with its own :batch and its own ready,
running and dead jobs scattered among the done ones, drawn afresh on every
check: a LIMIT written into the statement, or a delete that ignores status,
fails."""

from __future__ import annotations

import time

from .. import seeding
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .scenes import draw
from .verdict import Evidence, Verdict

JOBS, KEEP = 3_000, 300
SCENES = 2
MAX_CALLS = 100


def stage_scene(owner, rng) -> set[int]:
    """A fresh table: KEEP jobs left ready, running or dead at random ids, the
    rest done. The ids that must stay."""
    seeding.reset_and_seed(owner, "send_receipt", JOBS)
    keep = set(rng.sample(range(1, JOBS + 1), KEEP))
    run(owner, "exercise/stage_done_beyond", {"keep": 0})
    for status, ids in (
        ("ready", sorted(keep)[::3]),
        ("running", sorted(keep)[1::3]),
        ("dead", sorted(keep)[2::3]),
    ):
        stage(owner, ids, status, 1, rng.randrange(1, 1_000), None if status != "running" else 60)
    return keep


def drain(conn, learner: LearnerSQL, batch: int, stop) -> tuple[list[int], float]:
    """Call the delete until it deletes nothing: rows per call, and the longest call in s."""
    batches: list[int] = []
    longest = 0.0
    while len(batches) < MAX_CALLS:
        began = time.perf_counter()
        n = execute(conn, learner, {"batch": batch}).rowcount
        longest = max(longest, time.perf_counter() - began)
        batches.append(n)
        if n == 0 or (stop and stop.is_set()):
            break
    return batches, longest


def check_cleanup(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word != "DELETE":
        raise Refused("cleanup is one DELETE of a batch of done jobs")
    rng = draw()
    sizes = rng.sample(range(100, 900), SCENES)  # a different :batch in each scene
    done_left, kept, over, short = 0, 0, [], []
    batches: list[int] = []
    longest = 0.0
    with sessions(scratch, learner, "send_receipt", 0) as (owner, conn):
        for batch in sizes:
            keep = stage_scene(owner, rng)
            calls, slowest = drain(conn, learner, batch, stop)
            left = {r[0]: r[3] for r in run(owner, "lab/all_jobs").fetchall()}
            done_left += sum(1 for s in left.values() if s == "done")
            kept += sum(1 for i in keep if i in left)
            over += [(batch, max(calls))] if max(calls) > batch else []
            full = [batch] * ((JOBS - KEEP) // batch) + (
                [(JOBS - KEEP) % batch] if (JOBS - KEEP) % batch else []
            )
            if not over and calls[: len(full)] != full:
                short += [(batch, calls[0])]
            batches += calls
            longest = max(longest, slowest)
    evidence = [
        Evidence("done rows left", f"{done_left:,} of {SCENES * (JOBS - KEEP):,}", done_left == 0),
        Evidence(
            "other rows kept (ready, running, dead)", f"{kept:,} of {SCENES * KEEP:,}", kept == SCENES * KEEP
        ),
        Evidence(
            f"largest batch (the limit is :batch, {' and '.join(map(str, sizes))} in the two scenes)",
            "; ".join(f"{n:,} rows with :batch {b}" for b, n in over)
            or f"within :batch in {len(batches)} calls",
            not over,
        ),
        Evidence(
            "full batches while done rows remain (LIMIT :batch, not a number of your own)",
            "; ".join(f"the first call deleted {n:,} with :batch {b}" for b, n in short) or "yes",
            not short,
        ),
        Evidence("longest transaction", f"{longest * 1000:,.1f} ms"),
    ]
    if kept < SCENES * KEEP:
        hint = "only done rows may go: WHERE status = 'done'."
    elif over or short:
        hint = (
            "delete at most :batch rows per call, the value passed in, not a number written into the "
            "statement: pick the ids of done jobs in a subquery with LIMIT :batch, and delete only those."
        )
    else:
        hint = "call it until it deletes nothing: every done row must go."
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"batches": batches, "longest_ms": longest * 1000},
        passed_headline=f"all done rows deleted in batches of at most :batch ({sizes[0]} and {sizes[1]})",
        passed_hint="short batches: each transaction ends quickly, so VACUUM is never held back for long.",
        server_version=scratch.db.server.version,
    )

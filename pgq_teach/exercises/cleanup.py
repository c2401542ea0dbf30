"""Cleanup (lesson 10): the learner's delete runs in a loop, each call its own
transaction, until it deletes nothing. Only done rows may go, every one of
them, in batches no bigger than :batch; the longest transaction is reported.

It runs in two staged scenes, each with ready, running and dead jobs
scattered among the done ones, drawn afresh on every check: the first with
the lesson's :batch of 500, the second with another drawn at random. Each call
must delete exactly :batch rows while enough done rows remain, so a LIMIT
written into the statement fails, as does a delete that ignores status."""

from __future__ import annotations

import time

from .. import seeding
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .scenes import draw
from .verdict import Evidence, Verdict

JOBS, KEEP, BATCH = 3_000, 300, 500
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


def full(batch: int) -> list[int]:
    """Rows per call a right answer deletes with this :batch, until the done rows run out."""
    whole, rest = divmod(JOBS - KEEP, batch)
    return [batch] * whole + ([rest] if rest else [])


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
    if learner.main_word != "DELETE":  # a WITH query may pick the batch
        raise Refused("cleanup is one DELETE of a batch of done jobs")
    rng = draw()
    sizes = [
        BATCH,
        rng.choice([b for b in range(100, 900) if b != BATCH]),
    ]  # the lesson's :batch, then another
    done_left, kept = 0, 0
    runs: list[list[int]] = []  # rows deleted per call, per scene
    longest = 0.0
    with sessions(scratch, learner, "send_receipt", 0) as (owner, conn):
        for batch in sizes:
            keep = stage_scene(owner, rng)
            calls, slowest = drain(conn, learner, batch, stop)
            left = {r[0]: r[3] for r in run(owner, "lab/all_jobs").fetchall()}
            done_left += sum(1 for s in left.values() if s == "done")
            kept += sum(1 for i in keep if i in left)
            runs.append(calls)
            longest = max(longest, slowest)
    batches = [n for calls in runs for n in calls]
    first_over = max(runs[0]) > BATCH
    inexact = [(b, calls) for b, calls in zip(sizes, runs, strict=True) if calls[: len(full(b))] != full(b)]
    evidence = [
        Evidence("done rows left", f"{done_left:,} of {SCENES * (JOBS - KEEP):,}", done_left == 0),
        Evidence(
            "other rows kept (ready, running, dead)", f"{kept:,} of {SCENES * KEEP:,}", kept == SCENES * KEEP
        ),
        Evidence(
            f"largest batch (the limit is {BATCH})",
            f"{max(runs[0]):,} rows in {len(runs[0])} calls",
            not first_over,
        ),
        Evidence(
            f"full batches of :batch while done rows remain (:batch {sizes[0]}, then {sizes[1]})",
            "not judged: the batches were over the limit already"
            if first_over
            else "; ".join(f"with :batch {b} the first call deleted {calls[0]:,}" for b, calls in inexact)
            or "yes, in both scenes",
            None if first_over else not inexact,
        ),
        Evidence("longest transaction", f"{longest * 1000:,.1f} ms"),
    ]
    if kept < SCENES * KEEP:
        hint = "only done rows may go: WHERE status = 'done'."
    elif first_over:
        hint = (
            "one call deleted more than :batch rows, one long transaction: delete at most :batch rows a "
            "call, picking the ids of done jobs in a subquery with LIMIT :batch and deleting only those."
        )
    elif inexact:
        hint = (
            "the batch must be the value passed in, LIMIT :batch, not a number written into the statement: "
            "the caller sets it to fit its table, and this check draws another size every time."
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

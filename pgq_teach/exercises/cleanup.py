"""Cleanup (lesson 10): the learner's delete runs in a loop, each call its own
transaction, until it deletes nothing, each call given :after, the largest id
the calls before it deleted (0 at first), as the library's `cleanup` carries
it. Only done rows may go, every one of them, in batches no bigger than
:batch; the longest transaction is reported. The server's plan must find the
batch through an index: a Seq Scan of jobs is the slow form the lesson
rejects (joined to the whole table as id IN (SELECT ... LIMIT), or restarting
at page 0 in every batch with no keyset), judged by the plan, not the text.

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
from .sandbox import Scratch, execute, nodes, plan, sessions, stage
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


def job_ids(owner) -> set[int]:
    return {row[0] for row in run(owner, "lab/all_jobs").fetchall()}


def drain(owner, conn, learner: LearnerSQL, batch: int, stop) -> tuple[list[int], float]:
    """Call the delete until it deletes nothing, each call given the largest id
    deleted so far as :after: rows per call, and the longest call in s."""
    batches: list[int] = []
    longest, after, ids = 0.0, 0, job_ids(owner)
    while len(batches) < MAX_CALLS:
        began = time.perf_counter()
        execute(conn, learner, {"batch": batch, "after": after})
        longest = max(longest, time.perf_counter() - began)
        left = job_ids(owner)
        gone, ids = ids - left, left
        after = max(gone, default=after)
        batches.append(len(gone))
        if not gone or (stop and stop.is_set()):
            break
    return batches, longest


def seq_scans(conn, learner: LearnerSQL, batch: int) -> list[str]:
    """The plan's Seq Scans of jobs (EXPLAIN without ANALYZE: nothing runs), each
    named by the node above it, for the statement's first batch past the middle id."""
    tree = plan(conn, learner, {"batch": batch, "after": JOBS // 2})
    found = []
    for parent, _ in nodes(tree):
        for child in parent.get("Plans", []):
            if child.get("Node Type") == "Seq Scan" and child.get("Relation Name") == "jobs":
                found.append(f"Seq Scan under {parent['Node Type']}")
    return found


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
    scanned: list[str] = []  # the plan's Seq Scans of jobs, planned on the first scene
    with sessions(scratch, learner, "send_receipt", 0) as (owner, conn):
        for batch in sizes:
            keep = stage_scene(owner, rng)
            if not scanned:
                run(owner, "lab/analyze_jobs")  # planned with statistics, as a live table has them
                scanned = seq_scans(conn, learner, batch) or ["none"]
            calls, slowest = drain(owner, conn, learner, batch, stop)
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
        Evidence(
            "finds each batch through an index, from :after (no Seq Scan of jobs in the plan)",
            "no Seq Scan of jobs" if scanned == ["none"] else "; ".join(scanned),
            scanned == ["none"],
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
    elif done_left:
        hint = (
            "call it until it deletes nothing: every done row must go. Take the next batch in id "
            "order after :after (id > :after ORDER BY id), or a call can skip done rows below its last id."
        )
    else:
        hint = (
            "the plan reads jobs with a Seq Scan: written id IN (SELECT ... LIMIT :batch) it joins the "
            "whole table in every batch, and with no keyset the LIMIT's scan restarts at page 0. Pick the "
            "batch with id > :after ORDER BY id LIMIT :batch, inside id = ANY(ARRAY(...))."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"batches": batches, "longest_ms": longest * 1000},
        passed_headline=f"all done rows deleted in batches of at most :batch ({sizes[0]} and {sizes[1]})",
        passed_hint="short batches: each transaction ends quickly, so VACUUM is never held back for long.",
        server_version=scratch.db.server.version,
    )

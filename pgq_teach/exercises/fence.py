"""Complete with a fence (lesson 05): a stale worker's call must match 0 rows
and the current worker's 1, in two stories the guide's figure #10 covers and
one it does not: the job's lease ran out and another worker claimed it; and
the job went dead, was requeued (attempts back to 0) and was claimed again.

Each story is a staged scene of several workers' running jobs, with ids and
fence tokens drawn afresh on every check; one neighbour job holds the very
token number the current worker holds (tokens count per job). So a statement
that writes a story's token into its text, or leaves out the id or the
fence_token column, fails here for the reason the lesson gives."""

from __future__ import annotations

import random

from .. import tables
from ..guide import figure
from ..statements import run_one
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .scenes import draw, fence_tokens
from .verdict import Evidence, Verdict

JOBS = 8  # the running jobs of several workers, one of them the story's
# (story, the current claim's attempts, the stale worker's attempts): a requeue resets attempts
STORIES = [
    ("lease ran out, B claimed it again", 2, 1),
    ("dead, requeued, B claimed it again", 1, 1),
]


def _call(conn, learner: LearnerSQL, job_id: int, attempts: int, token: int) -> int:
    values = {"id": job_id, "attempts": attempts, "fence_token": token}
    return execute(conn, learner, values).rowcount


def _stage_workers(owner, rng: random.Random, attempts: int) -> tuple[int, int, dict[int, int]]:
    """Every job running under its own worker's token; one neighbour shares the
    story job's token number. The story's job id, its token, and every job's token."""
    ids = list(range(1, JOBS + 1))
    job_id, twin = rng.sample(ids, 2)
    tokens = dict(zip(ids, fence_tokens(rng, JOBS), strict=True))
    tokens[twin] = tokens[job_id]
    for i in ids:
        stage(owner, [i], "running", attempts, tokens[i])
    return job_id, tokens[job_id], tokens


def _others_running(owner, job_id: int) -> list[int]:
    """The other jobs that are no longer running."""
    status = {i: run_one(owner, "exercise/job_wait", {"id": i})[0] for i in range(1, JOBS + 1)}
    return [i for i, s in status.items() if i != job_id and s != "running"]


def check_complete(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.main_word != "UPDATE":  # a WITH query may lead into it
        raise Refused("complete is one UPDATE of the job's row")
    rng = draw()
    evidence, stale_hits, current_misses, touched = [], [], [], []
    with sessions(scratch, learner, "send_receipt", JOBS) as (owner, conn):
        for story, attempts, old_attempts in STORIES:
            job_id, token, _ = _stage_workers(owner, rng, attempts)
            old_token = token - rng.randrange(1, 4)  # an earlier claim of the same job
            stale = _call(conn, learner, job_id, old_attempts, old_token)
            status_after_stale = run_one(owner, "exercise/job_wait", {"id": job_id})[0]
            current = _call(conn, learner, job_id, attempts, token)
            status_after = run_one(owner, "exercise/job_wait", {"id": job_id})[0]
            touched += _others_running(owner, job_id)
            evidence += [
                Evidence(
                    f"{story}: stale worker A's call",
                    f"job {job_id}, token {old_token}: matched {tables.count(stale, 'row')}; "
                    f"job {status_after_stale}",
                    stale == 0 and status_after_stale == "running",
                ),
                Evidence(
                    f"{story}: current worker B's call",
                    f"token {token}: matched {tables.count(current, 'row')}; job {status_after}",
                    current == 1 and status_after == "done",
                ),
            ]
            if stale:
                stale_hits.append(story)
            if status_after != "done":
                current_misses.append(story)
    evidence.append(
        Evidence(
            "other workers' jobs left running (one holds the same token number)",
            f"{len(set(touched))} changed"
            + (f": job {', '.join(map(str, sorted(set(touched))))}" if touched else ""),
            not touched,
        )
    )
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(stale_hits, current_misses, bool(touched)),
        numbers={
            "stale_hits": len(stale_hits),
            "current_misses": len(current_misses),
            "others": len(touched),
        },
        passed_headline="stale calls match 0 rows, current calls 1",
        passed_hint="the fence holds: only the worker with the job's current fence_token can finish it.",
        server_version=scratch.db.server.version,
        guide=figure(10),
    )


def _hint(stale_hits: list[str], current_misses: list[str], touched: bool) -> str:
    """What to fix, from the stories in which a call matched what it must not, or missed."""
    if len(stale_hits) == 1 and "requeued" in stale_hits[0]:
        return (
            "after a requeue the stale worker's call still matched: requeue_dead resets attempts to 0, so "
            "attempts no longer proves the claim. Fence on fence_token, which only ever goes up."
        )
    if stale_hits:
        return "a stale worker finished someone else's claim: add the fence, AND fence_token = :fence_token."
    if touched:
        return (
            "the call finished other workers' jobs: a token number belongs to one job, so match the "
            "job's id too, WHERE id = :id AND fence_token = :fence_token."
        )
    if current_misses:
        return (
            "the current worker could not finish its job: compare the job's own column with the value "
            "passed in, fence_token = :fence_token. A token written into the statement fits one story "
            "only; this check draws new tokens every time."
        )
    return "the current worker must be able to finish: match its id, status = 'running' and its token."

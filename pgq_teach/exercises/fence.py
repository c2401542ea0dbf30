"""Complete with a fence (lesson 05): a stale worker's call must match 0 rows
and the current worker's 1, in two stories the guide's figure #10 covers and
one it does not: the job's lease ran out and another worker claimed it; and
the job went dead, was requeued (attempts back to 0) and was claimed again."""

from __future__ import annotations

from ..guide import figure
from ..statements import run_one
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .verdict import Evidence, Verdict

# (story, job id, the job's attempts and fence_token now, the stale worker's attempts and token)
STORIES = [
    ("lease ran out, B claimed it again", 1, (2, 2), (1, 1)),
    ("dead, requeued, B claimed it again", 2, (1, 2), (1, 1)),
]


def _call(conn, learner: LearnerSQL, job_id: int, attempts: int, token: int) -> int:
    values = {"id": job_id, "attempts": attempts, "fence_token": token}
    return execute(conn, learner, values).rowcount


def check_complete(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word != "UPDATE":
        raise Refused("complete is one UPDATE of the job's row")
    with sessions(scratch, learner, "send_receipt", len(STORIES)) as (owner, conn):
        evidence, stale_hits = [], []
        for story, job_id, (attempts, token), (old_attempts, old_token) in STORIES:
            stage(owner, [job_id], "running", attempts, token)
            stale = _call(conn, learner, job_id, old_attempts, old_token)
            status_after_stale = run_one(owner, "exercise/job_wait", {"id": job_id})[0]
            current = _call(conn, learner, job_id, attempts, token)
            status_after = run_one(owner, "exercise/job_wait", {"id": job_id})[0]
            evidence += [
                Evidence(
                    f"{story}: stale worker A's call",
                    f"matched {stale} row{'' if stale == 1 else 's'}; job {status_after_stale}",
                    stale == 0 and status_after_stale == "running",
                ),
                Evidence(
                    f"{story}: current worker B's call",
                    f"matched {current} row{'' if current == 1 else 's'}; job {status_after}",
                    current == 1 and status_after == "done",
                ),
            ]
            if stale:
                stale_hits.append(story)
    return Verdict.from_evidence(
        exercise,
        evidence,
        _hint(stale_hits),
        numbers={"stale_hits": len(stale_hits)},
        passed_headline="stale calls match 0 rows, current calls 1",
        passed_hint="the fence holds: only the worker with the job's current fence_token can finish it.",
        server_version=scratch.db.server.version,
        guide=figure(10),
    )


def _hint(stale_hits: list[str]) -> str:
    """What to fix, from the stories in which a stale worker's call matched."""
    if len(stale_hits) == 1 and "requeued" in stale_hits[0]:
        return (
            "after a requeue the stale worker's call still matched: requeue_dead resets attempts to 0, so "
            "attempts no longer proves the claim. Fence on fence_token, which only ever goes up."
        )
    if stale_hits:
        return "a stale worker finished someone else's claim: add the fence, AND fence_token = :fence_token."
    return "the current worker must be able to finish: match its id, status = 'running' and its token."

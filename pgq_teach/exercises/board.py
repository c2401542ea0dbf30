"""The interview's "write it on the board" graders for the two mechanisms no
lesson's Your turn checks: the lease extension (a fenced heartbeat) and the
hand-back (a claimed job returned without spending its try, to wait a while).

Each check stages several workers' running jobs, with fence tokens drawn
afresh (one neighbour holds the very token number the story's worker holds),
and plays the stories the rehearsal's deep dive is about:

- the extension: a stale worker's heartbeat, and one for a job the reaper has
  already returned, must renew nothing; the current worker's must set the lease
  to the clock plus :lease, and change nothing else;
- the hand-back: a stale worker's call must hand nothing back; the current
  worker's must make the job ready, give its try back (attempts - 1), clear the
  lease and move run_at to at least now plus :wait, so no worker claims it again
  before the wait is over.
"""

from __future__ import annotations

import random
from typing import Any

from .. import tables
from ..statements import run_one
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .scenes import draw, fence_tokens
from .verdict import Evidence, Verdict

JOBS = 8
STAGED_LEASE_S = 5  # every staged lease ends soon, so a renewed one stands out
SLACK_S = 5  # a loaded machine's time between the call and the read


def state(owner, job_id: int) -> dict[str, Any]:
    status, attempts, token, lease_left_s, wait_s = run_one(owner, "exercise/board_job", {"id": job_id})
    return {
        "status": status,
        "attempts": attempts,
        "token": token,
        "lease_left_s": lease_left_s,
        "wait_s": wait_s,
    }


def stage_workers(owner, rng: random.Random, attempts: int) -> tuple[int, dict[int, int]]:
    """Every job running under its own worker's token, its lease ending soon; one neighbour
    shares the story job's token number. The story's job id and every job's token."""
    ids = list(range(1, JOBS + 1))
    job_id, twin = rng.sample(ids, 2)
    tokens = dict(zip(ids, fence_tokens(rng, JOBS), strict=True))
    tokens[twin] = tokens[job_id]
    for i in ids:
        stage(owner, [i], "running", attempts, tokens[i], lease_s=STAGED_LEASE_S)
    return job_id, tokens


def others_changed(owner, job_id: int, attempts: int, tokens: dict[int, int]) -> list[int]:
    """The other jobs that are no longer as staged: running, their attempts, token and short lease."""
    changed = []
    for i, token in tokens.items():
        s = state(owner, i)
        staged = s["status"] == "running" and s["attempts"] == attempts and s["token"] == token
        if i != job_id and not (
            staged and s["lease_left_s"] is not None and s["lease_left_s"] <= STAGED_LEASE_S
        ):
            changed.append(i)
    return changed


def untouched(changed: list[int]) -> Evidence:
    return Evidence(
        "other workers' jobs left as they were (one holds the same token number)",
        f"{len(changed)} changed" + (f": job {', '.join(map(str, changed))}" if changed else ""),
        not changed,
    )


def check_extend_lease(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.main_word != "UPDATE":
        raise Refused("the lease extension is one UPDATE of the job's row")
    rng = draw()
    lease_s = rng.randrange(90, 900)
    values = {"lease": f"{lease_s} seconds"}
    with sessions(scratch, learner, "render_pdf", JOBS) as (owner, conn):
        job_id, tokens = stage_workers(owner, rng, 2)
        token = tokens[job_id]
        stale = execute(conn, learner, {**values, "id": job_id, "fence_token": token - rng.randrange(1, 4)})
        after_stale = state(owner, job_id)
        stage(owner, [job_id], "ready", 2, token, lease_s=None)  # the reaper returned it
        reaped = execute(conn, learner, {**values, "id": job_id, "fence_token": token})
        after_reaped = state(owner, job_id)
        stage(owner, [job_id], "running", 2, token, lease_s=STAGED_LEASE_S)  # still this worker's
        current = execute(conn, learner, {**values, "id": job_id, "fence_token": token})
        after = state(owner, job_id)
        changed = others_changed(owner, job_id, 2, tokens)
    left = after["lease_left_s"]
    renewed = left is not None and lease_s - SLACK_S <= left <= lease_s + 1
    kept = after["status"] == "running" and after["attempts"] == 2 and after["token"] == token
    evidence = [
        Evidence(
            "a stale worker's heartbeat renews nothing",
            f"matched {tables.count(stale.rowcount, 'row')}; "
            f"lease ends in {after_stale['lease_left_s']:.0f} s",
            stale.rowcount == 0 and after_stale["lease_left_s"] <= STAGED_LEASE_S,
        ),
        Evidence(
            "a heartbeat for a job the reaper returned renews nothing",
            f"matched {tables.count(reaped.rowcount, 'row')}; job {after_reaped['status']}",
            reaped.rowcount == 0
            and after_reaped["status"] == "ready"
            and after_reaped["lease_left_s"] is None,
        ),
        Evidence(
            f"the current worker's heartbeat: lease ends :lease ({lease_s} s) from now",
            f"matched {tables.count(current.rowcount, 'row')}; lease ends in "
            + ("no time (none)" if left is None else f"{left:.0f} s"),
            current.rowcount == 1 and renewed,
        ),
        Evidence(
            "the heartbeat changes the lease only",
            f"{after['status']}, attempts {after['attempts']}, "
            f"token {'kept' if after['token'] == token else 'changed'}",
            kept,
        ),
        untouched(changed),
    ]
    if stale.rowcount:
        hint = "a stale worker renewed a lease it lost: add the fence, AND fence_token = :fence_token."
    elif changed:  # first: a statement that misses the id also renews the twin in the reaper's story
        hint = "the heartbeat renewed other workers' jobs: match the job's id too, WHERE id = :id."
    elif reaped.rowcount:
        hint = (
            "the heartbeat renewed a job the reaper had already returned to ready: keep status = 'running' "
            "in the WHERE, so a worker that lost its job learns it from 0 rows."
        )
    elif not kept:
        hint = (
            "an extension sets leased_until only: the claim counts the try and takes the token, "
            "not the heartbeat."
        )
    elif not renewed:
        hint = (
            "the lease did not end :lease from now: set "
            "leased_until = clock_timestamp() + :'lease'::interval, "
            "with the length passed in, not one written into the statement."
        )
    else:
        hint = (
            "the current worker's heartbeat must match its job: id, status = 'running' and its fence_token."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        passed_headline="only the current worker's heartbeat renews its lease",
        passed_hint="the extension is fenced: a worker that lost the job, to a new claim or to the reaper, "
        "renews nothing.",
        server_version=scratch.db.server.version,
    )


def check_hand_back(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.main_word != "UPDATE":
        raise Refused("the hand-back is one UPDATE of the job's row")
    rng = draw()
    wait_s = rng.randrange(20, 600)
    values = {"wait": f"{wait_s} seconds"}
    with sessions(scratch, learner, "shipping_label", JOBS) as (owner, conn):
        job_id, tokens = stage_workers(owner, rng, 3)
        token = tokens[job_id]
        stale = execute(conn, learner, {**values, "id": job_id, "fence_token": token - rng.randrange(1, 4)})
        after_stale = state(owner, job_id)
        current = execute(conn, learner, {**values, "id": job_id, "fence_token": token})
        after = state(owner, job_id)
        changed = others_changed(owner, job_id, 3, tokens)
    waits = after["wait_s"] is not None and wait_s - SLACK_S <= after["wait_s"] <= wait_s + 1
    evidence = [
        Evidence(
            "a stale worker's hand-back hands nothing back",
            f"matched {tables.count(stale.rowcount, 'row')}; job {after_stale['status']}",
            stale.rowcount == 0 and after_stale["status"] == "running",
        ),
        Evidence(
            "the current worker's hand-back makes the job ready, its lease cleared",
            f"matched {tables.count(current.rowcount, 'row')}; job {after['status']}, "
            + ("no lease" if after["lease_left_s"] is None else "a lease left"),
            current.rowcount == 1 and after["status"] == "ready" and after["lease_left_s"] is None,
        ),
        Evidence(
            "no try spent: attempts back from 3 to 2",
            f"attempts {after['attempts']}",
            after["attempts"] == 2,
        ),
        Evidence(
            f"not claimable again before :wait ({wait_s} s)",
            "due " + ("never" if after["wait_s"] is None else f"in {after['wait_s']:.0f} s"),
            waits,
        ),
        Evidence("the token kept", "kept" if after["token"] == token else "changed", after["token"] == token),
        untouched(changed),
    ]
    if stale.rowcount:
        hint = "a stale worker handed back a job it lost: add the fence, AND fence_token = :fence_token."
    elif changed:
        hint = "the hand-back changed other workers' jobs: match the job's id too, WHERE id = :id."
    elif current.rowcount != 1 or after["status"] != "ready" or after["lease_left_s"] is not None:
        hint = (
            "the current worker's job must go back to ready with its lease cleared: "
            "status = 'ready', leased_until = NULL."
        )
    elif after["attempts"] != 2:
        hint = (
            "the hand-back spent a try: a missing token or a paused kind is not the job's fault, so give it "
            "back, attempts = greatest(attempts - 1, 0)."
        )
    elif not waits:
        hint = (
            "the job was due again at once, so the next claim takes it straight back: move run_at to "
            "greatest(run_at, now() + :'wait'::interval)."
        )
    else:
        hint = "the hand-back leaves the fence_token as it is: only a claim takes a new one."
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        passed_headline="handed back: ready, its try given back, due after the wait",
        passed_hint="the hand-back is fenced, spends no try and keeps the job out of the next claim "
        "until the wait ends.",
        server_version=scratch.db.server.version,
    )

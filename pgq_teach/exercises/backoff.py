"""Fail with backoff (lesson 06): one job through its failures. The waits must
be 20, 40, 80 and 160 s (guide #11), capped at an hour, the job dead at
max_attempts and still dead when max_attempts was lowered below attempts,
with no overflow however high attempts goes.

Each failure is a staged scene with its own job id and fence token, drawn
afresh on every check, beside a neighbour job holding the same token number:
the neighbour must stay running, and a stale worker's failure (an older
token) must change nothing. A statement that writes a token or a
max_attempts into its text, or leaves out the id, fails."""

from __future__ import annotations

import psycopg

from ..guide import figure
from ..statements import run_one
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, sessions, stage
from .scenes import draw
from .verdict import Evidence, Verdict

CAP_S = 3600
JOBS = 6  # the job that fails, a neighbour with the same token number, and others
STALE = "a stale worker's failure (an older token) changes nothing"
# (what, attempts, max_attempts, expected status, expected wait in s or None)
STEPS = [(f"failure {k} of 5", k, 5, "ready", 10 * 2**k) for k in range(1, 5)] + [
    ("failure 5 of 5", 5, 5, "dead", None),
    ("failure 9 of 20 (10 s x 2^9 is over the hour)", 9, 20, "ready", CAP_S),
    ("failure 3 after max_attempts was lowered to 2", 3, 2, "dead", None),
    ("failure 5,000 of 10,000 (no overflow)", 5_000, 10_000, "ready", CAP_S),
    (STALE, 2, 5, "running", None),
]


def _fail_once(owner, conn, learner: LearnerSQL, rng, what: str, attempts: int, max_attempts: int):
    """Stage the job and its neighbour, fail the job once; its status and wait,
    and the neighbour's status."""
    job_id, twin = rng.sample(range(1, JOBS + 1), 2)
    token = rng.randrange(1_000, 1_000_000)
    stage(owner, [job_id, twin], "running", attempts, token, max_attempts=max_attempts)
    sent = token - rng.randrange(1, 4) if what == STALE else token
    values = {"id": job_id, "attempts": attempts, "fence_token": sent, "error": "HTTP 503 from webhook"}
    try:
        with conn.transaction():  # the read below sees the same now() as the statement
            execute(conn, learner, values)
            status, wait_s, _, _ = run_one(conn, "exercise/job_wait", {"id": job_id})
    except psycopg.DataError as exc:
        return "error", exc.diag.message_primary, "running"
    return status, wait_s, run_one(owner, "exercise/job_wait", {"id": twin})[0]


def check_fail(scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None) -> Verdict:
    if learner.main_word != "UPDATE":  # a WITH query may lead into it
        raise Refused("fail is one UPDATE of the job's row")
    evidence, touched = [], []
    rng = draw()
    with sessions(scratch, learner, "call_webhook", JOBS) as (owner, conn):
        for what, attempts, max_attempts, want, want_wait in STEPS:
            status, wait, twin = _fail_once(owner, conn, learner, rng, what, attempts, max_attempts)
            if twin != "running":
                touched.append(what)
            if status == "error":
                evidence.append(Evidence(what, f"the statement failed: {wait}", False))
                continue
            shown = f"{status}" + (f", runs again in {wait:,.0f} s" if status == "ready" else "")
            ok = status == want and (want_wait is None or abs(wait - want_wait) < 0.5)
            evidence.append(Evidence(what, shown, ok))
    evidence.append(
        Evidence(
            "a neighbour job with the same token number left running",
            f"changed in {len(touched)} of {len(STEPS)} failures",
            not touched,
        )
    )
    hint = _hint({e.what for e in evidence if not e.ok}, bool(touched))
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        passed_headline="waits 20, 40, 80, 160 s; capped; dead when it should be",
        passed_hint=(
            "the waits double from 20 s, stop at an hour, and the dead rule survives a lowered max_attempts."
        ),
        server_version=scratch.db.server.version,
        guide=figure(11),
    )


def _hint(failed: set[str], touched: bool) -> str:
    """One fix for each kind of row that failed, in the order a learner can act on them:
    what the statement changes first, then the dead rule, the waits, the cap and the overflow."""
    fixes = []
    if touched:
        fixes.append(
            "the failure changed another job: match the job's id too, WHERE id = :id AND fence_token = ..."
        )
    if STALE in failed:
        fixes.append("a stale worker's failure changed the job: fence it, AND fence_token = :fence_token")
    if any("lowered" in what for what in failed):
        fixes.append(
            "a job past its max_attempts must still become dead: compare attempts with "
            "greatest(attempts, max_attempts), so lowering max_attempts still ends in dead"
        )
    elif "failure 5 of 5" in failed:
        fixes.append("the failure that uses the last try makes the job dead, not ready")
    if failed & {f"failure {k} of 5" for k in range(1, 5)}:
        fixes.append("the wait after failure k is 10 s x 2^k: 20, 40, 80, 160 s")
    if any("over the hour" in what for what in failed):
        fixes.append("cap the wait at an hour: least(..., interval '1 hour')")
    if any("no overflow" in what for what in failed):
        fixes.append(
            "power(2, attempts) overflows for a large attempts even under the hour's cap: cap the exponent "
            "first, for example power(2, least(attempts, 20))"
        )
    if not fixes:
        return "the wait after failure k is 10 s x 2^k: 20, 40, 80, 160 s, at most one hour."
    return "; ".join(fixes) + "."

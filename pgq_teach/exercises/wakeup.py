"""The wake-up (lesson 07): the learner's one statement enqueues a job and
notifies the workers. A real listener (LISTEN jobs_ready, on its own
autocommit session, as the library's Worker does) hears what it sends:

- run in a transaction that rolls back: no job, and nothing heard;
- run in one that commits: one job, and exactly one notification on
  jobs_ready, heard only after COMMIT, carrying only the new job's id.

Rollback and commit hold for any one statement (the server delivers a NOTIFY
only when its transaction commits, guide #12); they are shown live so the
learner sees why enqueue and notify belong in one transaction. What the
learner can get wrong is the channel, the count and the payload."""

from __future__ import annotations

from psycopg.types.json import Jsonb

from ..guide import figure
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, parse
from .verdict import Evidence, Verdict

CHANNEL = "jobs_ready"  # the channel the library's Worker listens on (sql/listen.sql)
QUIET_S = 0.5  # how long to listen for a notification that must not come
DELIVERY_S = 2.0  # how long to wait for those that must; they take milliseconds
VALUES = {"kind": "send_receipt", "payload": Jsonb({"order_id": 101, "email": "ana@example.com"})}


def heard(listener, seconds: float) -> list[str]:
    return [n.payload for n in listener.notifies(timeout=seconds) if n.channel == CHANNEL]


def job_ids(owner) -> list[int]:
    return [row[0] for row in run(owner, "lab/all_jobs").fetchall()]


def check_notify(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word not in ("WITH", "INSERT", "SELECT"):
        raise Refused("this exercise runs one statement that enqueues a job and notifies (WITH ... INSERT)")
    with scratch.db.connection() as owner, scratch.db.connection() as listener:
        run(listener, "listen")
        with scratch.connect() as check:
            parse(check, learner)
        with scratch.connect(autocommit=False) as conn:
            execute(conn, learner, VALUES)
            conn.rollback()
            after_rollback = heard(listener, QUIET_S), job_ids(owner)
            if progress:
                progress(1, 3)
            execute(conn, learner, VALUES)
            before_commit = heard(listener, QUIET_S)
            conn.commit()
            after_commit = heard(listener, DELIVERY_S)
        jobs = job_ids(owner)
    if progress:
        progress(3, 3)
    payloads = after_commit
    new_id = str(jobs[0]) if len(jobs) == 1 else None
    shown = ", ".join(
        repr(p if len(p) <= 60 else p[:57] + "...") + f" ({len(p.encode())} bytes)" for p in payloads
    )
    evidence = [
        Evidence(
            "rolled back: no job, nothing heard",
            f"{len(after_rollback[1])} job(s), {len(after_rollback[0])} notification(s)",
            not after_rollback[0] and not after_rollback[1],
        ),
        Evidence("nothing heard before COMMIT", f"{len(before_commit)} notification(s)", not before_commit),
        Evidence("committed: exactly one job enqueued", f"{len(jobs)} job(s)", len(jobs) == 1),
        Evidence(
            f"exactly one notification on {CHANNEL} after COMMIT",
            f"{len(payloads)} heard",
            len(payloads) == 1,
        ),
        Evidence(
            "its payload is the new job's id, and only that",
            shown or "nothing heard",
            new_id is not None and payloads == [new_id],
        ),
    ]
    if len(jobs) != 1:
        hint = "the statement must INSERT exactly one job (WITH job AS (INSERT ... RETURNING id) ...)."
    elif not payloads:
        hint = f"the workers LISTEN on {CHANNEL}: call pg_notify('{CHANNEL}', ...) for the new job."
    elif len(payloads) > 1:
        hint = "one job, one notification: notify once, for the row the INSERT returned."
    else:
        hint = (
            "send the id, not the data: a payload must stay under 8,000 bytes, and a notification can be "
            "folded or lost, so the job's data must live in the table: pg_notify('jobs_ready', id::text)."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"payloads": payloads, "job_id": new_id, "rolled_back_heard": len(after_rollback[0])},
        passed_headline="the job and its wake-up commit together, and the notification carries only the id",
        passed_hint=(
            "one statement, one transaction: the job and its wake-up commit together, and the id is all "
            "a worker needs."
        ),
        server_version=scratch.db.server.version,
        guide=figure(12),
    )

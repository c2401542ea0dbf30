"""The wake-up (lesson 07): the learner's one statement enqueues a job and
notifies the workers. A real listener (LISTEN jobs_ready, on its own
autocommit session, as the library's Worker does) hears what it sends:

- run in a transaction that rolls back: no job, and nothing heard;
- run in one that commits: one job, and exactly one notification on
  jobs_ready, heard only after COMMIT, carrying only the new job's id or its
  kind (the library's sql/notify_ready.sql sends the kind; the Worker reads neither).

Rollback and commit hold for any one statement (the server delivers a NOTIFY
only when its transaction commits, guide #12); they are shown live so the
learner sees why enqueue and notify belong in one transaction. What the
learner can get wrong is the channel, the count and the payload.

The commit runs twice, each time with a kind and payload drawn afresh, so a
statement that writes a kind, a payload or an id into its text fails: each
new job must hold what was passed, and each notification its own id or kind
(the two commits draw different kinds)."""

from __future__ import annotations

import random

from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from .. import tables
from ..guide import figure
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, parse
from .scenes import draw
from .verdict import Evidence, Verdict

CHANNEL = "jobs_ready"  # the channel the library's Worker listens on (sql/listen.sql)
QUIET_S = 0.5  # how long to listen for a notification that must not come
DELIVERY_S = 2.0  # the most to wait for the first that must; they take milliseconds
KINDS = ("send_receipt", "build_invoice", "call_webhook", "refund_order")
COMMITS = 2


def values(rng: random.Random, not_kind: str = "") -> dict:
    """A kind (other than `not_kind`) and a payload for one enqueue, drawn afresh."""
    order = rng.randrange(100, 100_000)
    return {
        "kind": rng.choice([k for k in KINDS if k != not_kind]),
        "payload": Jsonb({"order_id": order, "email": f"c{order}@example.com"}),
    }


def heard(listener, seconds: float, stop_after: int | None = None) -> list[str]:
    """The payloads heard on CHANNEL within `seconds` (sooner once `stop_after` came on any channel)."""
    return [
        n.payload for n in listener.notifies(timeout=seconds, stop_after=stop_after) if n.channel == CHANNEL
    ]


def heard_after_commit(listener) -> list[str]:
    """What a commit sent: the first notification, waited for up to DELIVERY_S, then any more
    within QUIET_S. A commit's notifications reach the listener together, so a second one
    would be in by then; waiting the whole DELIVERY_S each time made every check 3 s slower."""
    first = heard(listener, DELIVERY_S, stop_after=1)
    return first + heard(listener, QUIET_S)


def job_ids(owner) -> list[int]:
    return [row[0] for row in run(owner, "lab/all_jobs").fetchall()]


def new_jobs(owner, known: list[int]) -> list[dict]:
    """The jobs not in `known`, each as a dict of its columns."""
    return [
        row for row in run(owner, "lab/all_jobs", row_factory=dict_row).fetchall() if row["id"] not in known
    ]


def check_notify(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word not in ("WITH", "INSERT", "SELECT"):
        raise Refused("this exercise runs one statement that enqueues a job and notifies (WITH ... INSERT)")
    rng = draw()
    commits: list[tuple[dict, list[dict], list[str]]] = []  # (values passed, new jobs, payloads heard)
    with scratch.db.connection() as owner, scratch.db.connection() as listener:
        run(listener, "listen")
        with scratch.connect() as check:
            parse(check, learner)
        with scratch.connect(autocommit=False) as conn:
            execute(conn, learner, values(rng))
            conn.rollback()
            after_rollback = heard(listener, QUIET_S), job_ids(owner)
            before_commit: list[str] = []
            for done in range(COMMITS):
                if progress:
                    progress(done + 1, COMMITS + 1)
                # each commit another kind: a kind written into the statement fits one of them only
                known, passed = job_ids(owner), values(rng, commits[-1][0]["kind"] if commits else "")
                execute(conn, learner, passed)
                before_commit += heard(listener, QUIET_S)
                conn.commit()
                commits.append((passed, new_jobs(owner, known), heard_after_commit(listener)))
    if progress:
        progress(COMMITS + 1, COMMITS + 1)
    jobs = [job for _, new, _ in commits for job in new]
    payloads = [p for _, _, heard_now in commits for p in heard_now]
    one_job = all(len(new) == 1 for _, new, _ in commits)
    one_each = all(len(h) == 1 for _, _, h in commits)
    ids_sent = one_job and all(h in ([str(new[0]["id"])], [v["kind"]]) for v, new, h in commits)
    as_passed = one_job and all(
        new[0]["kind"] == v["kind"] and new[0]["payload"] == v["payload"].obj for v, new, _ in commits
    )
    shown = ", ".join(
        repr(p if len(p) <= 60 else p[:57] + "...") + f" ({tables.count(len(p.encode()), 'byte')})"
        for p in payloads
    )
    evidence = [
        Evidence(
            "rolled back: no job, nothing heard",
            f"{tables.count(len(after_rollback[1]), 'job')}, "
            f"{tables.count(len(after_rollback[0]), 'notification')}",
            not after_rollback[0] and not after_rollback[1],
        ),
        Evidence(
            "nothing heard before COMMIT", tables.count(len(before_commit), "notification"), not before_commit
        ),
        Evidence(
            "each commit enqueues exactly one job",
            ", ".join(tables.count(len(new), "job") for _, new, _ in commits),
            one_job,
        ),
        Evidence(
            "each new job holds the kind and payload passed (:kind, :payload)",
            "yes, both times" if as_passed else _held(commits),
            as_passed,
        ),
        Evidence(
            f"exactly one notification on {CHANNEL} after each COMMIT",
            ", ".join(f"{len(h)} heard" for _, _, h in commits),
            one_each,
        ),
        Evidence(
            "its payload is the new job's id or its kind, and only that",
            shown or "nothing heard",
            ids_sent,
        ),
    ]
    if not one_job:
        hint = "the statement must INSERT exactly one job (WITH job AS (INSERT ... RETURNING id) ...)."
    elif not as_passed:
        hint = (
            "insert the values passed in, VALUES (:'kind', :'payload'), not ones written into the statement."
        )
    elif not payloads:
        hint = f"the workers LISTEN on {CHANNEL}: call pg_notify('{CHANNEL}', ...) for the new job."
    elif not one_each:
        hint = "one job, one notification: notify once, for the row the INSERT returned."
    elif all(len(p) <= 20 for p in payloads):  # short, but not this job's id: written into the text
        hint = (
            "send this job's own id, from the INSERT's RETURNING, pg_notify('jobs_ready', id::text), "
            "or the kind passed in, :'kind', not a value written into the statement."
        )
    else:
        hint = (
            "send the id (or the kind), not the data: a payload must stay under 8,000 bytes, and a "
            "notification can be folded or lost, so the job's data must live in the table: "
            "pg_notify('jobs_ready', id::text)."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        # payloads and job_id: the first commit's, as the lesson tells it; the lists: every commit's.
        numbers={
            "payloads": commits[0][2],
            "job_id": str(commits[0][1][0]["id"]) if commits[0][1] else None,
            "heard": payloads,
            "job_ids": [str(job["id"]) for job in jobs],
            "rolled_back_heard": len(after_rollback[0]),
        },
        passed_headline="the job and its wake-up commit together, and the notification carries only the id",
        passed_hint=(
            "one statement, one transaction: the job and its wake-up commit together, and the id is all "
            "a worker needs."
        ),
        server_version=scratch.db.server.version,
        guide=figure(12),
    )


def _held(commits: list[tuple[dict, list[dict], list[str]]]) -> str:
    """What the first mismatched job held, beside what was passed."""
    for passed, new, _ in commits:
        if len(new) == 1 and (new[0]["kind"], new[0]["payload"]) != (passed["kind"], passed["payload"].obj):
            job = new[0]
            held = f"the job holds {job['kind']}, {job['payload']}"
            return f"passed {passed['kind']}, {passed['payload'].obj}; {held}"
    return "no single new job to compare"

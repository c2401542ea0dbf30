"""What lesson 05's labs share: the receipt job (`KIND`, `ORDER`) and
`prepare`, which empties the jobs and the inbox and enqueues one; the
lab's limits; its scripted sessions (`lab_session`), named 'pgq-fence
<name>' on the server; and a claim (`claimed`), its lease's end
(`lease_end`) and its fenced completion (`complete`)."""

from __future__ import annotations

from ... import queue, seeding
from ...databases import Database
from ...errors import PgqError
from ...statements import run
from ..crash import answer, claim_one
from ..sessions import Session, run_and_wait

KIND = "send_receipt"
ORDER = 101
LAB_PREFIX = "pgq-fence"
# Short leases so the lab runs in seconds; the library's default is five
# minutes, because a lease must outlast the slowest healthy run of a job.
LEASE_LIMITS = (0.5, 10.0)
WORK_LIMITS = (0.5, 30.0)
WORKER_LIMITS = (1, 4)
LEASE_LIMITS_LONG = (0.5, 600.0)  # a claim that must not pass while the lab runs


def prepare(db: Database) -> int:
    """Empty the jobs, the inbox and the receipts record; enqueue one receipt job. Its id."""
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        run(conn, "lab/inbox_create")
        run(conn, "lab/receipts_sent_create")
        run(conn, "lab/inbox_reset")
        return queue.enqueue(conn, KIND, {"order": ORDER}, notify=False)


def lease_end(job: queue.Job) -> float:
    """When a claimed job's lease runs out, as a Unix time."""
    if job.leased_until is None:  # a claim always sets one; say so plainly if it did not
        raise PgqError(f"job {job.id} was claimed without a lease")
    return job.leased_until.timestamp()


def lab_session(db: Database, name: str) -> Session:
    """One of the lab's scripted sessions, named 'pgq-fence <name>' on the server."""
    return Session(db, name, prefix=LAB_PREFIX)


def claimed(session: Session, lease_s: float) -> queue.Job:
    """The session's claim (sql/claim.sql); an error if no job was there."""
    job, _ = claim_one(session, lease_s)
    if job is None:
        raise PgqError(f"{session.name} found no job to claim")
    return job


def complete(session: Session, job: queue.Job) -> int:
    """The course's completion (sql/complete.sql), fenced on the claim's token:
    the rows it updated (0 once a newer claim holds the job)."""
    return len(answer(run_and_wait(session, "complete", {"id": job.id, "fence_token": job.fence_token})))

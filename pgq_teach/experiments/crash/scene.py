"""The crash lab's scene, and what lesson 04's other labs share with it.

`CrashScene` is the lab: a hold-style worker (BEGIN, claim with FOR UPDATE SKIP
LOCKED, then "working" inside the transaction) and a lease-style worker (claim
with a lease, commit, then "working" with no transaction open), each on one
job, plus a third session that ends their sessions with pg_terminate_backend,
claims, reaps and reads the board. All three are scripted `Session`s, and a
`LabMonitor` reads the board, pg_locks and pg_stat_activity on its own
connection (pgq_teach.experiments.sessions). The other labs name their
sessions with `lab_session` and read a step's rows with `answer`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ... import checks, queue, seeding
from ...databases import Database
from ...errors import BadInput, PgqError
from ...statements import record, records
from ..sessions import ActivityRow, ClosesOnExit, LabMonitor, Session, Step, run_and_wait, wait_gone

KIND = "send_receipt"
LAB_PREFIX = "pgq-crash"
HOLD, LEASE, THIRD = "hold worker", "lease worker", "third session"
# A lab lease is seconds long so the learner sees it run out. The library's
# default (queue.DEFAULT_LEASE, five minutes) must outlast the slowest real
# job with room to spare, or healthy workers would be reaped mid-job.
# The guide's scripted sequence needs no one to click, so its lease is short;
# by hand a person reads the board and makes three clicks (end the session,
# claim, reap) before the lease passes, which takes well over 2 s: the
# hands-on lease starts at 20 s, and the learner may set it (HANDS_ON_LIMITS).
DEFAULT_LEASE_S = 2.0
HANDS_ON_LEASE_S = 20.0
HANDS_ON_LIMITS = (2.0, 60.0)
LEASE_LIMITS = (0.5, 60.0)
GONE_TIMEOUT_S = 5.0  # how long a terminated session may take to disappear
OTHERS_LIMITS = (1, 100_000)


# --- what the board shows -----------------------------------------------------------


@dataclass(frozen=True)
class BoardRow:
    """One job as the board shows it. `lease_left_s` is negative once the lease has passed."""

    id: int
    status: str
    attempts: int
    lease_left_s: float | None
    last_error: str | None


@dataclass(frozen=True)
class LockHolder:
    """A session holding a lock on the jobs table (pg_locks)."""

    pid: int
    application_name: str
    mode: str
    state: str | None

    @property
    def worker(self) -> str:
        return self.application_name.removeprefix(f"{LAB_PREFIX} ")


def lab_session(db: Database, name: str) -> Session:
    """One of the lab's scripted sessions, named 'pgq-crash <name>' on the server."""
    return Session(db, name, prefix=LAB_PREFIX)


def answer(step: Step) -> tuple[tuple, ...]:
    """The rows a step returned; the server's error, plainly, if it failed."""
    if step.failed:
        raise PgqError(f"{step.statement} failed with error {step.sqlstate}: {step.message}")
    return step.rows


def claim_one(session: Session, lease_s: float) -> tuple[queue.Job | None, float]:
    """The course's claim (sql/claim.sql) on one session, outside BEGIN, so it
    commits at once: the job (or None) and the seconds it took."""
    step = run_and_wait(session, "claim", {"batch": 1, "lease": checks.lease(lease_s)})
    answer(step)
    named = step.named()
    return (record(queue.Job, named[0]) if named else None), step.seconds


# --- the lab ------------------------------------------------------------------------


class CrashScene(ClosesOnExit):
    """Two workers, two jobs, and a third session. Methods return once their
    statement has (none of them waits on a lock); `board()`, `lock_holders()`
    and `sessions()` may be called from another thread at the same time."""

    def __init__(self, db: Database, lease_s: float = DEFAULT_LEASE_S):
        self.db = db
        self.lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
        self.hold: Session | None = None
        self.lease: Session | None = None
        self.hold_job: int | None = None
        self.lease_job: queue.Job | None = None
        with db.connection(application_name=f"{LAB_PREFIX} reset") as conn:
            seeding.reset_and_seed(conn, KIND, 2)
        self.monitor = LabMonitor(db, LAB_PREFIX)
        self.third = lab_session(db, THIRD)

    # the two workers

    def start_hold_worker(self) -> int:
        """BEGIN and lock the oldest ready job; the transaction stays open while it "works"."""
        if self.hold is not None:
            raise BadInput("the hold-style worker has already started")
        self.hold = lab_session(self.db, HOLD)
        self.hold.begin()
        rows = answer(run_and_wait(self.hold, "teaching/hold_skip_locked"))
        if not rows:
            raise PgqError("the hold-style worker found no ready job: start it before the lease-style worker")
        self.hold_job = rows[0][0]
        return rows[0][0]

    def start_lease_worker(self) -> queue.Job:
        """Claim one job with a lease; the claim commits at once and the worker
        "works" with no transaction."""
        if self.lease is not None:
            raise BadInput("the lease-style worker has already started")
        self.lease = lab_session(self.db, LEASE)
        job, _ = claim_one(self.lease, self.lease_s)
        if job is None:
            raise PgqError("the lease-style worker found no ready job")
        self.lease_job = job
        return job

    def end_session(self, worker: str) -> int:
        """End a worker's session with pg_terminate_backend, from the third
        session, as a crash or a lost network would; wait until the server
        has let it go. The number of sessions ended (0 if it was not running).

        The worker is idle (the hold worker idle in its transaction), so its
        Session's thread is waiting for a command, not for the server: the
        session ends under it and its next command would fail, as a psql
        window's does."""
        names = {"hold": self.hold, "lease": self.lease}
        session = names[checks.one_of("worker", worker, names)]
        if session is None:
            return 0
        name = session.application_name
        ended = answer(run_and_wait(self.third, "lab/terminate_sessions_named", {"name": name}))
        wait_gone(self.monitor, [pid for pid, _ in ended], GONE_TIMEOUT_S)
        return len(ended)

    # the third session

    def third_claim(self) -> tuple[queue.Job | None, float]:
        """A third worker claims with the course's claim: the job, and how long it took."""
        return claim_one(self.third, self.lease_s)

    def reap(self) -> int:
        """Run the reaper (sql/reap.sql) once; the number of jobs it handed back."""
        return len(answer(run_and_wait(self.third, "reap")))

    # what the server says

    def board(self) -> list[BoardRow]:
        return self.monitor.look("lab/crash_board", row_factory=records(BoardRow))

    def lock_holders(self) -> list[LockHolder]:
        holders = records(LockHolder)
        return self.monitor.look("lab/jobs_lock_holders", {"prefix": LAB_PREFIX}, row_factory=holders)

    def sessions(self) -> list[ActivityRow]:
        """The lab's sessions in pg_stat_activity: an ended one is gone."""
        return self.monitor.read()

    def row(self, job_id: int) -> BoardRow:
        return next(r for r in self.board() if r.id == job_id)

    def close(self) -> None:
        """Close every session; an open hold transaction rolls back."""
        for session in (self.hold, self.lease, self.third):
            if session is not None:
                session.close()
        self.monitor.close()

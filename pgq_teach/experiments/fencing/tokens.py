"""The token over a job's whole life: `token_after_requeue` shows whether the
fencing token repeats once a dead job is put back by hand, and
`token_after_release` what a claim's attempts and token are after
sql/release_many.sql hands the job back."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ... import checks, queue, seeding, tables
from ...databases import Database
from ...errors import PgqError
from ...guide import GuideFigure, figure
from ...statements import run
from ..crash import answer
from ..results import Comparison, Result, finish
from ..sessions import run_and_wait
from .lab import (
    KIND,
    LEASE_LIMITS,
    LEASE_LIMITS_LONG,
    ORDER,
    claimed,
    complete,
    lab_session,
    lease_end,
    prepare,
)


@dataclass(kw_only=True)
class RequeueResult(Result):
    a_token: int  # the stalled first claim's token
    c_token: int  # the claim after a person requeued the dead job
    a_attempts: int
    c_attempts: int
    a_rows_on_attempts: int  # rows A's late completion would match, fenced on attempts (rolled back)
    a_rows: int  # rows the stalled worker's late completion updated
    c_rows: int
    c_error: str | None  # why C's completion was refused, if it was
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def token_repeated(self) -> bool:
        return self.a_token == self.c_token

    def summary(self) -> str:
        lines = [
            "the course fences on fence_token; the guide fences on attempts",
            f"  attempts: A's claim {self.a_attempts}, C's claim {self.c_attempts} "
            "(the requeue reset it); "
            "fenced on attempts, A's late completion would match "
            f"{tables.count(self.a_rows_on_attempts, 'row')}",
            f"  A claimed with token {self.a_token} and stalled; "
            "the job was reaped, dead, and requeued by hand",
            f"  C claimed it with token {self.c_token}: "
            + ("the same number" if self.token_repeated else "a new number"),
            f"  A's late completion updated {tables.count(self.a_rows, 'row')}; C's updated {self.c_rows}"
            + (f" ({self.c_error})" if self.c_error else ""),
        ]
        return "\n".join(lines + self.footer())

    def comparison(self) -> list[Comparison]:
        return [
            ("A's late completion fenced on attempts, rows", None, self.a_rows_on_attempts, None),
            (
                "A's late completion fenced on fence_token, rows",
                None,
                self.a_rows,
                self.guide.values["a_rows"],
            ),
            ("C's completion, rows", None, self.c_rows, self.guide.values["b_rows"]),
        ]


def token_after_requeue(db: Database, lease_s: float = 0.5) -> RequeueResult:
    """A claims a one-attempt job and stalls; the reaper makes it dead; a
    person requeues it; C claims it; then A completes, late. A, the person
    and C are three scripted sessions."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    prepare(db)
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        queue.enqueue(conn, KIND, {"order": ORDER}, max_attempts=1, notify=False)
    with lab_session(db, "A") as a, lab_session(db, "person") as person, lab_session(db, "C") as c:
        a_job = claimed(a, lease_s)
        time.sleep(max(0.0, lease_end(a_job) - time.time()) + 0.1)
        reaped = answer(run_and_wait(person, "reap"))
        requeued = answer(run_and_wait(person, "requeue_dead", {"kind": KIND}))
        if (len(reaped), len(requeued)) != (1, 1):
            raise PgqError("the job was not reaped to dead and requeued as expected")
        c_job = claimed(c, 60)
        # What A's late completion would do fenced on attempts, as the guide
        # writes it: tried inside BEGIN, then rolled back, so it changes nothing here.
        a.begin()
        params = {"id": a_job.id, "attempts": a_job.attempts}
        a_rows_on_attempts = len(answer(run_and_wait(a, "exercise/wrong/complete_on_attempts", params)))
        a.rollback()
        a_rows = complete(a, a_job)
        c_rows = complete(c, c_job)
    return finish(
        RequeueResult,
        db,
        a_token=a_job.fence_token,
        c_token=c_job.fence_token,
        a_attempts=a_job.attempts,
        c_attempts=c_job.attempts,
        a_rows_on_attempts=a_rows_on_attempts,
        a_rows=a_rows,
        c_rows=c_rows,
        c_error=None
        if c_rows
        else "C's completion matched no row: A's stale one had already completed the job",
    )


@dataclass(kw_only=True)
class ReleaseResult(Result):
    """A job claimed, handed back unsent with sql/release_many.sql (as lesson
    11's relay does when the broker does not answer), then claimed again: no
    requeue, no person."""

    first_attempts: int
    second_attempts: int
    first_token: int
    second_token: int
    released: int  # rows release_many.sql handed back
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    def summary(self) -> str:
        lines = [
            f"a job claimed (attempts {self.first_attempts}, token {self.first_token}), "
            f"handed back by release_many.sql ({tables.count(self.released, 'row')}), claimed again "
            f"(attempts {self.second_attempts}, token {self.second_token})",
            "  attempts "
            + ("repeated" if self.first_attempts == self.second_attempts else "did not repeat")
            + " without any requeue; fence_token "
            + ("repeated" if self.first_token == self.second_token else "did not"),
        ]
        return "\n".join(lines + self.footer())


def token_after_release(db: Database, lease_s: float = 60.0) -> ReleaseResult:
    """Claim one job, hand it back with release_many.sql (its try given back),
    claim it again: what the two claims' attempts and fencing tokens were."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS_LONG)
    prepare(db)
    with db.connection() as conn:
        [first] = queue.claim(conn, lease=lease_s)
        params = {"ids": [first.id], "fence_tokens": [first.fence_token], "error": "broker did not answer"}
        with queue.atomic(conn):
            released = len(run(conn, "release_many", params).fetchall())
        [second] = queue.claim(conn, lease=lease_s)
    return finish(
        ReleaseResult,
        db,
        first_attempts=first.attempts,
        second_attempts=second.attempts,
        first_token=first.fence_token,
        second_token=second.fence_token,
        released=released,
    )

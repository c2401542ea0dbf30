"""Lesson 06, retries and dead jobs: the backoff schedule fail.sql sets, why
its dead test uses greatest(), requeuing dead jobs by hand, and what jitter
does to a thundering herd.

`uncapped_failure()` shows what a failure statement that errors does to the
job (nothing: it waits out its lease, then the reaper retries it at once).
`FailureStepper` is the "fail it" lab: one job, claimed and failed once per
call, made due at once so the lab need not wait out the backoff (it says so).
The waits are read back from the server, never computed here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

import psycopg
from psycopg.rows import dict_row

from .. import charts, checks, queue, seeding, tables
from ..databases import Database
from ..errors import BadInput, PgqError
from ..guide import GuideFigure, figure
from ..statements import records, run, run_one, statement
from ..worker import Worker
from .results import Comparison, Progress, Result, advice, finish, guess_text, note, tell
from .sessions import ClosesOnExit

KIND = "call_webhook"
ERROR = "HTTP 503 from webhook"
LEASE_S = 60  # the lab fails each claim at once; the lease never comes into play
MAX_STEPS = 50
FAIL_STATEMENTS = {
    "fail": "the course's fail.sql",
    "teaching/fail_without_greatest": "without greatest() (teaching variant)",
    "teaching/fail_with_jitter": "with jitter (teaching variant)",
}
HERD_LIMITS = (1, 10_000)


def fail_params(name: str, job: queue.Job, error: str) -> dict:
    """The parameters a teaching variant of fail.sql takes, whichever column
    it fences on (the claim's attempts, or its own fence_token)."""
    offered = {
        "id": job.id,
        "attempts": job.attempts,
        "fence_token": getattr(job, "fence_token", None),
        "error": error,
    }
    return {key: offered[key] for key in statement(name).params}


# --- one job through its failures (figure #11) ----------------------------------------------


@dataclass(frozen=True)
class FailureStep:
    """One failure: the attempt that failed, where it left the job, and the
    wait fail.sql set before the next try (whole seconds, as the server set it)."""

    attempt: int
    status: str
    wait_s: float
    last_error: str


class FailureStepper(ClosesOnExit):
    """One job, failed on demand. Each `fail_once()` claims the job, fails
    it with `statement` and reads back the wait; then, if it is ready again,
    makes it due now (sql/lab/make_due.sql) so the next failure need not wait."""

    def __init__(self, db: Database, *, max_attempts: int = 5, kind: str = KIND):
        self.db = db
        self.kind = kind
        self.steps: list[FailureStep] = []
        self.conn = db.connect(application_name="pgq-retry lab")
        seeding.reset_jobs(self.conn)
        self.job_id = queue.enqueue(
            self.conn,
            kind,
            {"url": "https://partner.example/hook"},
            max_attempts=checks.whole_number("max_attempts", max_attempts, 1, 1_000),
            notify=False,
        )

    @property
    def status(self) -> str:
        return run_one(self.conn, "job_state", {"id": self.job_id})[0]

    def fail_once(self, error: str = ERROR, statement: str = "fail") -> FailureStep:
        checks.one_of("statement", statement, FAIL_STATEMENTS)
        if self.status == "dead":
            raise BadInput(f"job {self.job_id} is dead: requeue it, or reset the lab")
        if len(self.steps) >= MAX_STEPS:
            raise BadInput(f"the lab stops at {MAX_STEPS} failures")
        jobs = queue.claim(self.conn, lease=LEASE_S)
        if not jobs:
            raise PgqError(f"job {self.job_id} was not claimable")
        job = jobs[0]
        if statement == "fail":
            queue.fail(self.conn, job, error)
        else:  # the teaching variant: the library only runs the course's statement
            if run(self.conn, statement, fail_params(statement, job, error)).fetchone() is None:
                raise PgqError(f"{statement} matched no row")
        status, attempts, last_error, wait = run_one(self.conn, "lab/retry_wait", {"id": job.id})
        step = FailureStep(attempts, status, round(wait, 1), last_error)
        self.steps.append(step)
        if status == "ready":
            run(self.conn, "lab/make_due", {"id": job.id})
        return step

    def lower_max_attempts(self, max_attempts: int) -> None:
        """Change the job's max_attempts, as an operator might."""
        max_attempts = checks.whole_number("max_attempts", max_attempts, 1, 1_000)
        params = {"id": self.job_id, "max_attempts": max_attempts}
        run(self.conn, "lab/set_max_attempts", params)

    def close(self) -> None:
        self.conn.close()


@dataclass(kw_only=True)
class ScheduleResult(Result):
    """The guess is of the longest wait, in seconds."""

    steps: list[FailureStep]
    max_attempts: int
    statement: str = "fail"
    guide: GuideFigure = field(default_factory=lambda: figure(11))

    @property
    def waits_s(self) -> list[int]:
        """The waits set after each failure that left the job ready, to the second."""
        return [round(s.wait_s) for s in self.steps if s.status == "ready"]

    @property
    def final(self) -> FailureStep:
        return self.steps[-1]

    def report(self) -> list[str]:
        lines: list[str] = [
            note(
                f"one {KIND} job, max_attempts {self.max_attempts}, failed {len(self.steps)} times with "
                f"{FAIL_STATEMENTS[self.statement]} "
                "(the lab made it due after each failure instead of waiting)" + self.stopped_note + ":"
            )
        ]
        for s in self.steps:  # the table has the waits the guide lists, not each failure's
            then = f"ready again in {round(s.wait_s):,} s" if s.status == "ready" else "dead"
            lines.append(note(f"  failure {s.attempt:>2}: {then}"))
        lines += [
            f"  longest wait: {max(self.waits_s, default=0):,} s "
            f"(your guess: {guess_text(self.guess, ' s')})",
            note(f"  last error kept: {self.final.last_error!r}"),
        ]
        return lines + self.footer()

    def comparison(self) -> list[Comparison]:
        waits = self.guide.values["waits_s"]
        cap = self.guide.values["cap_s"]
        return [
            (
                "waits after failures 1 to 4, s",
                None,
                ", ".join(map(str, self.waits_s[:4])),
                ", ".join(map(str, waits)),
            ),
            (
                f"the fifth failure leaves it (max_attempts {self.max_attempts})",
                None,
                self.steps[4].status if len(self.steps) > 4 else "–",
                "dead",
            ),
            ("longest wait, s", self.guess_cell, max(self.waits_s, default=0), self.guide_longest),
            ("waits held at the one-hour cap", None, self.capped, f"none in five failures (cap {cap:,} s)"),
        ]

    @property
    def capped(self) -> int:
        """How many waits the hour cap held down (a wait of exactly the cap)."""
        return sum(wait >= self.guide.values["cap_s"] for wait in self.waits_s)

    @property
    def guide_longest(self) -> int | str:
        """The guide's longest wait for a run like this one: 160 s over its
        five failures; nothing to set beside a longer run."""
        waits = self.guide.values["waits_s"]
        return max(waits) if len(self.steps) <= len(waits) + 1 else "–"

    def chart(self) -> charts.Chart:
        """The wait after each failure, beside the guide's hour cap, on a log scale: the first
        waits (20 s) are slivers beside the cap (3,600 s) on a plain one."""
        cap = self.guide.values["cap_s"]
        rows = [
            # read a moment after the failure, a capped wait shows as 3,599.9 s: whole seconds, as waits_s
            {"failure": f"after failure {s.attempt}", "wait": s.wait_s, "capped": round(s.wait_s) >= cap}
            for s in self.steps
            if s.status == "ready"
        ]
        return charts.bars(
            rows,
            label="failure",
            value="wait",
            heading="The wait fail.sql sets after each failure",
            value_axis=charts.axis("wait, log scale", "s"),
            refs=[charts.Reference(f"guide #{self.guide.number}: the cap, {cap:,.0f} s", cap)],
            tooltip=["capped:N"],
            log=True,
        )


def schedule(
    db: Database,
    failures: int = 5,
    *,
    max_attempts: int = 5,
    statement: str = "fail",
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> ScheduleResult:
    """Fail one job `failures` times with `statement`, the course's fail.sql
    or a teaching variant of it (stopping at dead)."""
    failures = checks.whole_number("failures", failures, 1, MAX_STEPS)
    checks.one_of("statement", statement, FAIL_STATEMENTS)
    stop = stop or threading.Event()
    with FailureStepper(db, max_attempts=max_attempts) as stepper:
        for n in range(failures):
            if stop.is_set() or stepper.status == "dead":
                break
            stepper.fail_once(statement=statement)
            tell(progress, n + 1, failures)
        steps = list(stepper.steps)
    return finish(
        ScheduleResult,
        db,
        steps=steps,
        max_attempts=max_attempts,
        statement=statement,
        guess=guess,
        stopped=stop,
    )


# --- why greatest() -------------------------------------------------------------------------


GUIDE_GREATEST = advice(
    "retries",
    "the greatest() test is attempts at or above max_attempts, so it still works if max_attempts is lowered",
)


@dataclass(kw_only=True)
class LoweredResult(Result):
    statement: str
    before: list[FailureStep]  # three failures under max_attempts 5
    lowered_to: int
    after: list[FailureStep]  # failures after max_attempts was lowered
    guide: GuideFigure = field(default_factory=lambda: GUIDE_GREATEST)

    @property
    def ends_dead(self) -> bool:
        return bool(self.after) and self.after[-1].status == "dead"

    def summary(self) -> str:
        after = ", ".join(f"{s.attempt}: {s.status}" for s in self.after)
        return (
            f"{FAIL_STATEMENTS[self.statement]}: 3 failures, then max_attempts lowered to {self.lowered_to}; "
            f"the next failures (attempt: status): {after}"
        )

    def comparison(self) -> list[Comparison]:
        return [
            (
                f"failures after max_attempts was lowered to {self.lowered_to}",
                None,
                len(self.after),
                None,
            ),
            ("the job ends", None, "dead" if self.ends_dead else "still retrying", "dead (attempts used up)"),
        ]


def lowered_max_attempts(
    db: Database, statement: str = "fail", *, lower_to: int = 2, more: int = 8
) -> LoweredResult:
    """Fail a job three times, lower its max_attempts to `lower_to`, then fail
    it up to `more` more times with `statement` (stopping at dead)."""
    checks.one_of("statement", statement, FAIL_STATEMENTS)
    more = checks.whole_number("more", more, 1, MAX_STEPS - 3)
    with FailureStepper(db, max_attempts=5) as stepper:
        for _ in range(3):
            stepper.fail_once()
        stepper.lower_max_attempts(lower_to)
        for _ in range(more):
            stepper.fail_once(statement=statement)
            if stepper.status == "dead":
                break
        steps = list(stepper.steps)
    return finish(
        LoweredResult,
        db,
        statement=statement,
        before=steps[:3],
        lowered_to=lower_to,
        after=steps[3:],
    )


# --- requeue dead jobs by hand ----------------------------------------------------------------


@dataclass(frozen=True)
class DeadJob:
    id: int
    kind: str
    attempts: int
    last_error: str | None


def dead_jobs(conn: psycopg.Connection) -> list[DeadJob]:
    return run(conn, "lab/dead_jobs", row_factory=records(DeadJob)).fetchall()


def make_dead(db: Database, jobs: dict[str, tuple[int, str]]) -> list[DeadJob]:
    """For each kind, `count` one-attempt jobs that fail once with `error`,
    and so die: {"call_webhook": (3, "HTTP 503 from webhook"), ...}."""
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        for kind, (count, error) in jobs.items():
            for _ in range(checks.whole_number("count", count, 1, 1_000)):
                queue.enqueue(conn, kind, {}, max_attempts=1, notify=False)
            for job in queue.claim(conn, batch=count, lease=LEASE_S):
                queue.fail(conn, job, error)
        return dead_jobs(conn)


# --- the thundering herd ----------------------------------------------------------------------------


@dataclass(kw_only=True)
class JitterHerdResult(Result):
    """The guess is of the spread, in seconds."""

    jitter: bool
    jobs: int
    seconds: list[tuple[int, int]]  # (second after the first failure, jobs due in it)
    instants: int  # distinct run_at values
    first_s: float
    last_s: float
    failing_s: float  # from the first failure's start to the last one's, on the server's clock
    guide: GuideFigure = field(default_factory=lambda: figure(11))

    @property
    def spread_s(self) -> float:
        return self.last_s - self.first_s

    def report(self) -> list[str]:
        how = "with jitter (teaching/fail_with_jitter.sql)" if self.jitter else "without jitter (fail.sql)"
        return [
            note(
                f"{self.jobs:,} jobs failed within {self.failing_s:.2f} s, "
                f"each in its own transaction, {how}: "
                f"they come due from {self.first_s:.2f} to {self.last_s:.2f} s after the first failure "
                f"(spread {self.spread_s:.2f} s; your guess: {guess_text(self.guess, ' s')})"
                + self.stopped_note
            )
        ]

    def comparison(self) -> list[Comparison]:
        first_wait = self.guide.values["waits_s"][0]
        return [
            ("the failures took, s", None, self.failing_s, None),
            ("first retries due after, s", None, f"{self.first_s:.2f} to {self.last_s:.2f}", first_wait),
            ("spread of the retries, s", self.guess_cell, self.spread_s, None),
        ]

    def chart(self) -> charts.Chart:
        """How many failed jobs come due in each second after the failures."""
        rows = [{"due": f"due {s} to {s + 1} s later", "jobs": n} for s, n in self.seconds]
        return charts.bars(
            rows,
            label="due",
            value="jobs",
            heading=f"When {self.jobs:,} failed jobs come due, {'with' if self.jitter else 'without'} jitter",
            value_axis=charts.axis("jobs due in that second", "count"),
        )


def herd(
    db: Database,
    jobs: int = 1_000,
    *,
    jitter: bool,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> JitterHerdResult:
    """Claim `jobs` jobs and fail every one, each in its own transaction, as
    many workers would in an outage, with fail.sql or with its jittered
    teaching variant. Times are read on the server's clock, from just before
    the first failure."""
    jobs = checks.whole_number("jobs", jobs, *HERD_LIMITS)
    if not isinstance(jitter, bool):
        raise BadInput(f"jitter must be True or False, got {jitter!r}")
    stop = stop or threading.Event()
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, jobs)
        claimed = queue.claim(conn, batch=jobs, lease=LEASE_S)
        moment: datetime = run_one(conn, "lab/open_transaction")[0]
        for n, job in enumerate(claimed, start=1):
            if stop.is_set() and n > 1:  # one failure at least, so a stopped run has a result to show
                break
            if jitter:
                run(conn, "teaching/fail_with_jitter", fail_params("teaching/fail_with_jitter", job, ERROR))
            else:
                queue.fail(conn, job, ERROR)
            if n % 100 == 0:
                tell(progress, n, jobs)
        failing_s = run_one(conn, "lab/seconds_since", {"since": moment})[0]
        rows = run(conn, "lab/due_times", {"since": moment}).fetchall()
        first, last, instants = run_one(conn, "lab/due_range", {"since": moment})
    if not rows:
        raise PgqError("no failed job is ready again")
    return finish(
        JitterHerdResult,
        db,
        jitter=jitter,
        jobs=jobs,
        seconds=[(s, n) for s, n in rows],
        instants=instants,
        first_s=first,
        last_s=last,
        failing_s=failing_s,
        guess=guess,
        stopped=stop,
    )


GUIDE_BACKOFF = advice(
    "retries",
    "backoff matters because the usual cause of failure, a partner API being down, needs time to clear",
)


# --- a herd meets the workers: how many calls at once ------------------------------------


@dataclass(kw_only=True)
class MeteredResult(Result):
    """A backlog of due jobs drained by a few library Workers, each with
    `concurrency` executors: the most handlers that ran at the same moment,
    which is what the partner sees."""

    jobs: int
    workers: int
    concurrency: int  # executors per Worker: handler calls one Worker makes at once
    work_s: float
    done: int
    max_in_flight: int  # the most handler calls running at one moment
    elapsed_s: float
    guide: GuideFigure = field(default_factory=lambda: GUIDE_BACKOFF)

    def summary(self) -> str:
        lines = [
            f"{self.jobs:,} due jobs, {self.workers} library Workers with "
            f"{tables.count(self.concurrency, 'executor')} each, {self.work_s * 1000:g} ms per call: "
            f"{self.done:,} done in {self.elapsed_s:.1f} s" + self.stopped_note,
            f"  at most {self.max_in_flight} calls to the partner at the same moment "
            f"({tables.count(self.workers, 'Worker')} x {tables.count(self.concurrency, 'executor')} "
            f"= {self.slots})",
        ]
        return "\n".join(lines + self.footer())

    @property
    def slots(self) -> int:
        """Handler calls the pool can make at once: Workers times executors."""
        return self.workers * self.concurrency


def metered_herd(
    db: Database, jobs: int = 200, *, workers: int = 4, concurrency: int = 1, work_s: float = 0.02
) -> MeteredResult:
    """Seed `jobs` due jobs (a herd that has just come due) and drain them with
    `workers` library Workers of `concurrency` executors each, until the queue
    is idle; each handler call is one call to the partner, and we record how
    many were running at once."""
    jobs = checks.whole_number("jobs", jobs, *HERD_LIMITS)
    workers = checks.whole_number("workers", workers, 1, 16)
    concurrency = checks.whole_number("concurrency", concurrency, 1, 16)
    work_s = checks.seconds("work_s", work_s, 0.0, 1.0)
    in_flight = 0
    most = 0
    counting = threading.Lock()

    def call_partner(job: queue.Job) -> None:
        nonlocal in_flight, most
        with counting:
            in_flight += 1
            most = max(most, in_flight)
        time.sleep(work_s)
        with counting:
            in_flight -= 1

    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, jobs)
    errors: list[BaseException] = []

    def drain() -> None:
        try:
            Worker(db.dsn, {KIND: call_partner}, concurrency=concurrency).run(until_idle=True)
        except BaseException as exc:  # raised again below, on the caller's thread
            errors.append(exc)

    began = time.monotonic()
    threads = [threading.Thread(target=drain, name=f"pgq-06 worker {n}") for n in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    if errors:
        raise errors[0]
    with db.connection() as conn:
        done = queue.status_counts(conn).get("done", 0)
    return finish(
        MeteredResult,
        db,
        jobs=jobs,
        workers=workers,
        concurrency=concurrency,
        work_s=work_s,
        done=done,
        max_in_flight=most,
        elapsed_s=elapsed,
    )


# --- an uncapped exponent: what happens to the job ------------------------------------------


@dataclass(kw_only=True)
class UncappedResult(Result):
    """A job on attempt 5,000 of 10,000 fails, and its failure statement
    (lesson 06's seeded attempt, exercise/wrong/fail_uncapped.sql) errors
    instead of backing off; then its lease passes and the reaper runs."""

    attempts: int
    sqlstate: str  # the failure statement's error
    message: str
    status_after_error: str
    status_after_reap: str
    run_at_kept: bool  # the reaper left run_at as the claim found it: no backoff
    due_after_reap: bool  # run_at is already past: the next claim may take it at once
    last_error: str | None
    guide: GuideFigure = field(default_factory=lambda: figure(11))

    def summary(self) -> str:
        lines = [
            f"attempt {self.attempts:,} failed; the uncapped failure statement raised "
            f"{self.sqlstate} ({self.message}), so it changed nothing",
            f"  the job stayed {self.status_after_error} until its lease passed; then the reaper made it "
            f"{self.status_after_reap}, run_at "
            + ("unchanged" if self.run_at_kept else "changed")
            + (", due at once" if self.due_after_reap else "")
            + f", last_error {self.last_error!r}",
        ]
        return "\n".join(lines + self.footer())


def job_row(conn: psycopg.Connection, job_id: int) -> dict:
    """Every column of one job, by name."""
    row = run(conn, "lab/job_row", {"id": job_id}, row_factory=dict_row).fetchone()
    if row is None:
        raise PgqError(f"job {job_id} vanished during the lab")
    return row


def uncapped_failure(db: Database, attempts: int = 5_000, lease_s: float = 0.5) -> UncappedResult:
    """Claim a job allowed 10,000 attempts on its `attempts`-th try, fail it
    with the seeded attempt's uncapped statement (it errors and is rolled
    back), wait out the lease and run the reaper once."""
    attempts = checks.whole_number("attempts", attempts, 1_024, 9_999)
    lease_s = checks.seconds("lease_s", lease_s, 0.2, 5.0)
    name = "exercise/wrong/fail_uncapped"
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        job_id = queue.enqueue(
            conn, KIND, {"url": "https://partner.example/hook"}, max_attempts=10_000, notify=False
        )
        run(conn, "lab/set_attempts", {"id": job_id, "attempts": attempts - 1})
        job = queue.claim(conn, lease=lease_s)[0]
        run_at = job_row(conn, job_id)["run_at"]
        try:
            with conn.transaction():
                run(conn, name, fail_params(name, job, ERROR))
        except psycopg.Error as exc:
            sqlstate, message = exc.sqlstate or "", str(exc.diag.message_primary or exc)
        else:
            raise PgqError(f"{name} did not fail on attempt {attempts:,}")
        after_error = job_row(conn, job_id)
        if job.leased_until is None:  # a claim always sets one
            raise PgqError(f"job {job_id} was claimed without a lease")
        time.sleep(max(0.0, job.leased_until.timestamp() - time.time()) + 0.1)
        queue.reap(conn)
        after_reap = job_row(conn, job_id)
        due = run_one(conn, "lab/seconds_since", {"since": after_reap["run_at"]})[0] >= 0
    return finish(
        UncappedResult,
        db,
        attempts=attempts,
        sqlstate=sqlstate,
        message=message,
        status_after_error=after_error["status"],
        status_after_reap=after_reap["status"],
        run_at_kept=after_reap["run_at"] == run_at,
        due_after_reap=due,
        last_error=after_reap["last_error"],
    )

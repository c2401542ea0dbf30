"""Lesson 05, the stalled worker: a slow worker is not a dead one.

`stale_worker()` runs the guide's sequence (figure #10) with a 1 s lease:
A claims the job and sends the receipt email, then stalls; the reaper hands
the job back and B claims it; A's completion updates 0 rows, B's 1. It also
counts the customer's inbox, with a plain handler (two receipts) or an
idempotent one (one). Every step is an `Event` for the timeline.

`long_job()` runs a job longer than its lease on two library `Worker`s, with
and without `heartbeat=True`, and samples the lease deadline as it moves.

`token_after_requeue()` shows whether the fencing token repeats once a dead
job is put back by hand.

A, B, the reaper and the person who requeues are scripted `Session`s
(pgq_teach.experiments.sessions), each statement its own transaction unless
the story opens one; the long job runs on the library's own `Worker`s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import dict_row

from .. import charts, checks, queue, seeding, tables
from ..databases import Database
from ..errors import BadInput, PgqError
from ..guide import GuideFigure, figure
from ..statements import run, run_one
from ..worker import Worker
from .crash import answer, claim_one
from .results import Comparison, Progress, Result, advice, finish, guess_text, tell
from .sessions import Session, run_and_wait

KIND = "send_receipt"
ORDER = 101
HANDLERS = ("plain", "idempotent")
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


def send_receipt(session: Session, order_id: int, worker: str, handler: str) -> bool:
    """The job's work: email the receipt. The idempotent handler first records
    "receipt for this order sent" under a unique key and sends only if that
    record is new. True if an email went out."""
    params = {"order_id": order_id, "worker": worker}
    if handler == "idempotent" and not answer(run_and_wait(session, "lab/record_receipt_sent", params)):
        return False
    answer(run_and_wait(session, "lab/send_receipt_email", params))
    return True


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


def first_value(session: Session, statement: str, params: dict | None = None) -> Any:
    return answer(run_and_wait(session, statement, params))[0][0]


# --- the guide's sequence (figure #10) ---------------------------------------------------


LANES = ("A", "B", "reaper")  # the sequence's lanes: the two workers and the reaper


@dataclass(frozen=True)
class Event:
    """One step on the timeline: when (seconds from the start), whose lane, what."""

    t_s: float
    lane: str  # "A", "B" or "reaper"
    what: str


@dataclass(kw_only=True)
class FencingResult(Result):
    handler: str
    lease_s: float
    a_token: int
    b_token: int
    a_attempts: int
    b_attempts: int
    reaped: int
    a_rows: int  # rows A's completion updated
    b_rows: int
    inbox: list[str]  # who sent each receipt in the customer's inbox, read from the table
    final_status: str
    events: list[Event]
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def emails(self) -> int:
        """Receipts in the customer's inbox; the guess is of this."""
        return len(self.inbox)

    def chart(self, shown: int | None = None) -> charts.Chart:
        """The sequence's first `shown` steps (all by default) as numbered dots in
        their lanes (A, B, the reaper), red where a completion changed 0 rows,
        and A's lease as a band from its claim to its deadline."""
        events = self.events[: len(self.events) if shown is None else shown]
        span = max(self.events[-1].t_s * 1.15, self.lease_s * 1.3)
        claim = self.events[0].t_s
        kinds = {
            "A's lease": "#c6dbef",
            "a step": charts.BLUE,
            "a completion that changed 0 rows": charts.RED,
        }
        times = {
            lane: charts.spread([e.t_s for e in events if e.lane == lane], span * 18 / charts.WIDTH)
            for lane in LANES
        }
        marks = []
        for n, event in enumerate(events, start=1):
            t = times[event.lane].pop(0)
            kind = "a completion that changed 0 rows" if "0 row" in event.what else "a step"
            marks.append(
                {
                    "lane": event.lane,
                    "time": t,
                    "kind": kind,
                    "label": str(n),
                    "at, s": event.t_s,
                    "what": event.what,
                }
            )
        lease = {"lane": "A", "start": claim, "end": claim + self.lease_s, "kind": "A's lease"}
        return charts.timeline(
            [lease],
            marks=marks,
            heading=f"A stalls past its {self.lease_s:g} s lease ({self.handler} handler)",
            kinds=kinds,
            lanes=LANES,
            time_axis=charts.axis("time since the start", "s", ",.1~f"),
        )

    def summary(self) -> str:
        steps = [f"  {e.t_s:5.2f} s  {e.lane:<6} {e.what}" for e in self.events]
        lines = [
            f"one receipt job, a {self.lease_s:g} s lease, {self.handler} handler" + self.stopped_note,
            *steps,
            f"  A's completion updated {tables.count(self.a_rows, 'row')}, B's {self.b_rows}; "
            f"the job is {self.final_status}",
            f"  the customer's inbox: {tables.count(self.emails, 'receipt')}, "
            f"sent by {', '.join(self.inbox) or 'nobody'} "
            f"(your guess: {guess_text(self.guess)})",
        ]
        return "\n".join(lines + self.footer())

    def comparison(self) -> list[Comparison]:
        values = self.guide.values
        return [
            ("A's completion, rows updated", None, self.a_rows, values["a_rows"]),
            ("B's completion, rows updated", None, self.b_rows, values["b_rows"]),
            ("fencing token, A then B", None, f"{self.a_token} then {self.b_token}", "1 then 2"),
            (
                f"receipts in the inbox ({self.handler} handler)",
                self.guess_cell,
                self.emails,
                "two: fencing cannot unsend" if self.handler == "plain" else "–",
            ),
        ]


def stale_worker(
    db: Database,
    lease_s: float = 1.0,
    *,
    handler: str = "plain",
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> FencingResult:
    """A claims and sends, then stalls past its lease; the reaper runs; B
    claims and sends; A completes (fenced out), then B completes. A, B and
    the reaper are three scripted sessions, each statement its own
    transaction, as in three psql windows."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    handler = checks.one_of("handler", handler, HANDLERS)
    stop = stop or threading.Event()
    job_id = prepare(db)
    events: list[Event] = []
    started = time.monotonic()

    def note(lane: str, what: str) -> None:
        events.append(Event(time.monotonic() - started, lane, what))

    total = 6
    with lab_session(db, "A") as a, lab_session(db, "B") as b, lab_session(db, "reaper") as reaper:
        a_job = claimed(a, lease_s)
        note("A", f"claims job {job_id}: fencing token {a_job.fence_token}, lease {lease_s:g} s")
        sent = send_receipt(a, a_job.payload["order"], "A", handler)
        note(
            "A",
            "sends the receipt email, then stalls" if sent else "finds the receipt recorded; sends nothing",
        )
        tell(progress, 1, total)

        # A stalls until its lease has passed: a long GC pause, a slow disk, a stuck call.
        stop.wait(max(0.0, (lease_end(a_job) - time.time()) + 0.1))
        reaped = len(answer(run_and_wait(reaper, "reap")))
        note("reaper", f"lease passed: hands back {tables.count(reaped, 'job')}")
        tell(progress, 2, total)

        b_job = claimed(b, lease_s * 10)  # B's lease is long enough for its work
        note("B", f"claims job {job_id}: fencing token {b_job.fence_token}")
        sent = send_receipt(b, b_job.payload["order"], "B", handler)
        note("B", "sends the receipt email" if sent else "finds the receipt recorded; sends nothing")
        tell(progress, 3, total)

        a_rows = complete(a, a_job)
        updated = tables.count(a_rows, "row")
        note("A", f"wakes and completes with token {a_job.fence_token}: {updated} updated")
        tell(progress, 4, total)
        b_rows = complete(b, b_job)
        note("B", f"completes with token {b_job.fence_token}: {tables.count(b_rows, 'row')} updated")
        tell(progress, 5, total)
        inbox = [row[0] for row in answer(run_and_wait(reaper, "lab/inbox_senders", {"order_id": ORDER}))]
        final = first_value(reaper, "job_state", {"id": job_id})
        tell(progress, 6, total)
    return finish(
        FencingResult,
        db,
        handler=handler,
        lease_s=lease_s,
        a_token=a_job.fence_token,
        b_token=b_job.fence_token,
        a_attempts=a_job.attempts,
        b_attempts=b_job.attempts,
        reaped=reaped,
        a_rows=a_rows,
        b_rows=b_rows,
        inbox=inbox,
        final_status=final,
        events=events,
        guess=guess,
        stopped=stop,
    )


# --- long jobs on purpose: the heartbeat ------------------------------------------------


@dataclass(frozen=True)
class FencingRun:
    """One run of the job's handler by one worker, in seconds from the start."""

    worker: str
    token: int
    start_s: float
    end_s: float
    outcome: str  # "done" (its completion updated the row) or "fenced" (it updated nothing)


# Guide #10 (A's stale completion updates 0 rows, B's 1) is one stale worker
# and one current one; a long job's runs are a different story, so its
# results stand beside the guide's prose on the lease instead.
GUIDE_SLOW_WORKER = advice(
    "why completion must check attempts",
    "a slow worker is not a dead one: if A is still busy when its lease expires, "
    "B can claim the same job, and then two workers are running it",
)


@dataclass(kw_only=True)
class LongJobResult(Result):
    """The guess is of how many times the handler runs."""

    heartbeat: bool
    lease_s: float
    work_s: float
    runs: list[FencingRun]
    final_status: str
    last_error: str | None
    lease_samples: list[tuple[float, int, float]]  # (seconds from start, attempts, seconds left on the lease)
    workers: int = 2
    concurrency: int = 1  # executors per Worker
    guide: GuideFigure = field(default_factory=lambda: GUIDE_SLOW_WORKER)

    @property
    def times_run(self) -> int:
        return len(self.runs)

    def chart(self) -> charts.Chart:
        """Each run of the handler as a bar in its worker's lane (red when its
        completion was fenced out), and a 'lease ends' lane with a dot where the
        deadline stood at each look: still with no heartbeat, marching with one."""
        kinds = {
            "a run that completed": charts.BLUE,
            "a run fenced out": charts.RED,
            "the lease's deadline": charts.GREY,
        }
        rows = [
            {
                "lane": r.worker,
                "start": r.start_s,
                "end": r.end_s,
                "kind": "a run that completed" if r.outcome == "done" else "a run fenced out",
                "token": r.token,
            }
            for r in self.runs
        ]
        marks = [
            {
                "lane": "lease ends",
                "time": t + left,
                "kind": "the lease's deadline",
                "label": "",
                "looked at, s": t,
                "claim": attempts,
            }
            for t, attempts, left in self.lease_samples
        ]
        return charts.timeline(
            rows,
            marks=marks,
            heading=f"{self.work_s:g} s of work, {self.lease_s:g} s lease, "
            f"{'with' if self.heartbeat else 'without'} a heartbeat",
            kinds=kinds,
            lanes=[*(f"W{n}" for n in range(1, self.workers + 1)), "lease ends"],
            time_axis=charts.axis("time since the start", "s", ",.1~f"),
        )

    @property
    def lease_moved(self) -> bool:
        """Did one claim's deadline move later while its job ran (a heartbeat extending it)?"""
        claims: dict[int, list[float]] = {}
        for t, attempts, left in self.lease_samples:
            claims.setdefault(attempts, []).append(t + left)
        return any(max(d) - min(d) > self.lease_s / 2 for d in claims.values())

    def summary(self) -> str:
        runs = "\n".join(
            f"    {r.worker} (token {r.token}) {r.start_s:5.2f} to {r.end_s:5.2f} s: {r.outcome}"
            for r in self.runs
        )
        return "\n".join(
            [
                f"{'with' if self.heartbeat else 'without'} a heartbeat: {self.work_s:g} s of work, "
                f"{self.lease_s:g} s lease, {tables.count(self.workers, 'worker')}"
                + (f" of {self.concurrency} executors" if self.concurrency > 1 else "")
                + self.stopped_note,
                f"  the handler ran {tables.count(self.times_run, 'time')} "
                f"(your guess: {guess_text(self.guess)}):",
                runs,
                f"  the job ended {self.final_status}" + (f" ({self.last_error})" if self.last_error else ""),
                "  each claim's lease deadline "
                + ("moved with the work" if self.lease_moved else "stayed where the claim put it"),
                *self.footer(),
            ]
        )

    def comparison(self) -> list[Comparison]:
        fenced = sum(r.outcome == "fenced" for r in self.runs)
        return [
            ("times the handler ran", self.guess_cell, self.times_run, None),
            ("completions fenced out (0 rows)", None, fenced, "a stale completion updates 0 rows"),
            ("the job ended", None, self.final_status, None),
            ("lease deadline moved with the work", None, "yes" if self.lease_moved else "no", None),
        ]


def long_job(
    db: Database,
    *,
    heartbeat: bool,
    lease_s: float = 1.0,
    work_s: float = 3.0,
    workers: int = 2,
    concurrency: int = 1,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> LongJobResult:
    """One job that takes `work_s` seconds; `workers` library `Worker`s (W1,
    W2, ...) of `concurrency` executors each, with a `lease_s` lease, polling
    every 0.2 s; W1 claims first. Runs until the job is done or dead and every
    handler has returned.

    A Worker's producer reaps only when it looks for work, that is while an
    executor is free: a lone worker of one executor, busy on the job, never
    reaps it, so its passed lease costs nothing. A second worker, a second
    executor of the same worker, or a scheduled reaper hands the job on."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    work_s = checks.seconds("work_s", work_s, *WORK_LIMITS)
    workers = checks.whole_number("workers", workers, *WORKER_LIMITS)
    concurrency = checks.whole_number("concurrency", concurrency, *WORKER_LIMITS)
    if not isinstance(heartbeat, bool):
        raise BadInput(f"heartbeat must be True or False, got {heartbeat!r}")
    stop = stop or threading.Event()
    job_id = prepare(db)
    started = time.monotonic()
    runs: list[FencingRun] = []
    claims: list[str] = []
    lock = threading.Lock()

    def worker(name: str) -> Worker:
        begun: dict[int, float] = {}

        def handle(job: queue.Job) -> None:
            begun[job.fence_token] = time.monotonic() - started
            stop.wait(work_s)

        def on_event(event: str, job) -> None:
            if event == "claimed":
                with lock:
                    claims.append(name)
            elif event in ("done", "fenced"):
                token = job.fence_token
                with lock:
                    runs.append(FencingRun(name, token, begun[token], time.monotonic() - started, event))

        return Worker(
            db.dsn,
            {KIND: handle},
            concurrency=concurrency,
            lease=lease_s,
            poll=0.2,
            heartbeat=heartbeat,
            on_event=on_event,
        )

    fleet = [worker(f"W{n}") for n in range(1, workers + 1)]
    threads = [threading.Thread(target=w.run, daemon=True) for w in fleet]
    samples: list[tuple[float, int, float]] = []
    limit = started + work_s * 6 + lease_s * 6 + 10
    expected = work_s * 3  # for the progress bar only
    try:
        threads[0].start()
        with db.connection(application_name=f"{LAB_PREFIX} monitor") as monitor:
            while run_one(monitor, "lab/lease_left", {"id": job_id})[0] == "ready":
                time.sleep(0.01)  # W1 claims first, so the story is the same every run
            for thread in threads[1:]:
                thread.start()
            while not stop.is_set():
                status, attempts, left = run_one(monitor, "lab/lease_left", {"id": job_id})
                now = time.monotonic()
                if status == "running" and left is not None:
                    samples.append((now - started, attempts, left))
                with lock:
                    settled = len(runs) == len(claims)
                if status in ("done", "dead") and settled:
                    break
                if now > limit:
                    raise PgqError(f"the long job had not settled within {limit - started:.0f} s")
                tell(progress, min(int((now - started) * 10), int(expected * 10)), int(expected * 10))
                time.sleep(0.1)
    finally:
        for w in fleet:
            w.stop()
        for t in threads:
            if t.is_alive():
                t.join(work_s + 5)
    with db.connection() as conn:
        row = run(conn, "lab/job_row", {"id": job_id}, row_factory=dict_row).fetchone()
    if row is None:
        raise PgqError(f"job {job_id} vanished during the lab")
    with lock:
        return finish(
            LongJobResult,
            db,
            heartbeat=heartbeat,
            lease_s=lease_s,
            work_s=work_s,
            runs=sorted(runs, key=lambda r: r.start_s),
            final_status=row["status"],
            last_error=row["last_error"],
            lease_samples=samples,
            workers=workers,
            concurrency=concurrency,
            guess=guess,
            stopped=stop,
        )


# --- the token over a job's whole life ------------------------------------------------------


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


# --- one producer with executors: a batch under one heartbeat --------------------------


@dataclass(kw_only=True)
class PoolBatchResult(Result):
    """A batch of long jobs claimed at once by worker A (heartbeat on), with
    worker B looking for work beside it. The guess is of how many runs in all."""

    lease_s: float
    work_s: float
    runs: dict[int, list[str]]  # job id -> the workers that ran it, from the runs ledger
    beats: int
    leases_lost: int
    handler_saw_lost: bool  # the fenced handler's job.lost was set while it ran
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def total_runs(self) -> int:
        return sum(len(workers) for workers in self.runs.values())

    def summary(self) -> str:
        per_job = ", ".join(f"job {job}: {'+'.join(w) or 'never'}" for job, w in self.runs.items())
        return "\n".join(
            [
                f"a batch of {len(self.runs)} jobs of {self.work_s:g} s each, {self.lease_s:g} s lease, "
                "one heartbeat for the batch, worker B beside" + self.stopped_note,
                f"  runs in all: {self.total_runs} (your guess: {guess_text(self.guess)}); {per_job}",
                f"  heartbeat statements: {self.beats}; leases lost: {self.leases_lost}",
                "  a handler whose job was fenced mid-run saw job.lost: "
                + ("yes" if self.handler_saw_lost else "no"),
                *self.footer(),
            ]
        )

    def comparison(self) -> list[Comparison]:
        return [
            ("runs in all", self.guess_cell, self.total_runs, "each job once (at least once)"),
            ("handler saw job.lost", None, "yes" if self.handler_saw_lost else "no", None),
        ]


def pool_batch(
    db: Database,
    *,
    lease_s: float = 1.0,
    work_s: float = 0.8,
    batch: int = 3,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> PoolBatchResult:
    """Worker A claims `batch` jobs at once (each `work_s` long, under a
    `lease_s` lease, heartbeat on); once they are all running, worker B starts
    looking for work. Every run is written to a ledger on the server. Then one
    more job, fenced by hand while its handler runs: does the handler see it?"""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    work_s = checks.seconds("work_s", work_s, 0.1, lease_s)
    batch = checks.whole_number("batch", batch, 2, 5)
    stop = stop or threading.Event()
    with db.connection() as conn:
        seeding.reset_and_seed(conn, KIND, batch)
        run(conn, "lab/runs_create")
        run(conn, "lab/runs_clear")
    a = Worker(db, {KIND: _recording(db, "A", work_s)}, lease=lease_s, batch=batch, poll=0.1)
    b = Worker(db, {KIND: _recording(db, "B", work_s)}, lease=lease_s, poll=0.05)
    a_done = threading.Thread(target=a.run, kwargs={"until_idle": True}, daemon=True)
    a_done.start()
    with db.connection() as conn:
        while queue.status_counts(conn).get("running", 0) < batch and a_done.is_alive():
            time.sleep(0.01)
    b_thread = threading.Thread(target=b.run, daemon=True)
    b_thread.start()
    while a_done.is_alive() and not stop.is_set():
        a_done.join(0.1)
        tell(progress, 1 if a_done.is_alive() else 2, 3)
    b.stop()
    b_thread.join(10)
    a_done.join(10)
    with db.connection() as conn:
        runs = {job_id: list(workers) for job_id, _, workers in run(conn, "lab/runs_per_job")}
    saw_lost = _fenced_mid_run(db, lease_s)
    tell(progress, 3, 3)
    return finish(
        PoolBatchResult,
        db,
        lease_s=lease_s,
        work_s=work_s,
        runs=runs,
        beats=a.report.beats,
        leases_lost=a.report.leases_lost,
        handler_saw_lost=saw_lost,
        guess=guess,
        stopped=stop,
    )


@dataclass(kw_only=True)
class FirstBeatsResult(Result):
    """One Worker (heartbeat on) claims jobs that come due at staggered
    moments: how long after each claim its job's first beat landed, read from
    the lease deadlines the claim and the beat wrote (the server's clock)."""

    lease_s: float
    first_beat_s: dict[int, float]  # job id -> seconds from its claim to its first beat
    guide: GuideFigure = field(default_factory=lambda: figure(10))

    @property
    def beat_every_s(self) -> float:
        return self.lease_s / 4

    def summary(self) -> str:
        gaps = ", ".join(f"{gap:.2f}" for gap in self.first_beat_s.values())
        return "\n".join(
            [
                f"{tables.count(len(self.first_beat_s), 'job')} claimed at staggered moments by one Worker, "
                f"{self.lease_s:g} s lease, a beat every {self.beat_every_s:g} s" + self.stopped_note,
                f"  each job's first beat came this long after its claim (s): {gaps}",
                *self.footer(),
            ]
        )


def first_beats(
    db: Database, *, lease_s: float = 1.0, jobs: int = 5, spacing_s: float = 0.31, work_s: float = 0.6
) -> FirstBeatsResult:
    """Enqueue `jobs` jobs due `spacing_s` apart, each `work_s` long; one
    Worker with enough executors claims each as it comes due. Each claim
    returns the lease deadline it wrote; a monitor watches the running jobs'
    deadlines, and the first one that differs is the job's first beat. The
    gap between the two deadlines is the time from the claim to the beat, on
    the server's clock (both are clock_timestamp() plus the same lease)."""
    lease_s = checks.seconds("lease_s", lease_s, *LEASE_LIMITS)
    jobs = checks.whole_number("jobs", jobs, 2, 8)
    spacing_s = checks.seconds("spacing_s", spacing_s, 0.05, 2.0)
    work_s = checks.seconds("work_s", work_s, lease_s / 2, lease_s * 2)
    prepare(db)
    with db.connection() as conn:
        seeding.reset_jobs(conn)
        ids = [
            queue.enqueue(conn, KIND, {"n": n}, run_at=timedelta(seconds=0.2 + n * spacing_s), notify=False)
            for n in range(jobs)
        ]
    claimed_until: dict[int, datetime] = {}  # job id -> the deadline its claim wrote
    beat_until: dict[int, datetime] = {}  # job id -> the first deadline a beat wrote

    def on_event(event: str, job: queue.Job | None) -> None:
        if event == "claimed" and job is not None and job.leased_until is not None:
            claimed_until.setdefault(job.id, job.leased_until)

    worker = Worker(
        db,
        {KIND: lambda job: time.sleep(work_s)},
        concurrency=jobs,
        lease=lease_s,
        poll=0.02,
        on_event=on_event,
    )
    thread = threading.Thread(target=worker.run, daemon=True)
    limit = time.monotonic() + 0.2 + jobs * spacing_s + work_s + 10
    thread.start()
    try:
        with db.connection(application_name=f"{LAB_PREFIX} monitor") as monitor:
            while len(beat_until) < len(ids):
                if time.monotonic() > limit:
                    raise PgqError("not every job got a heartbeat in time")
                for job_id, leased_until in run(monitor, "lab/running_leases").fetchall():
                    claim = claimed_until.get(job_id)
                    if claim is not None and leased_until not in (None, claim):
                        beat_until.setdefault(job_id, leased_until)
                time.sleep(0.005)
    finally:
        worker.stop()
        thread.join(work_s + 10)
    return finish(
        FirstBeatsResult,
        db,
        lease_s=lease_s,
        first_beat_s={job_id: (beat_until[job_id] - claimed_until[job_id]).total_seconds() for job_id in ids},
    )


def _recording(db: Database, worker: str, work_s: float) -> Callable[[queue.Job], None]:
    """A handler whose first act writes its run to the ledger, then works."""

    def handle(job: queue.Job) -> None:
        with db.connection() as conn:
            run(conn, "lab/run_record", {"job_id": job.id, "fence_token": job.fence_token, "worker": worker})
        time.sleep(work_s)

    return handle


def _fenced_mid_run(db: Database, lease_s: float) -> bool:
    """One job; once its handler runs, fence it by hand (a new token, as a reaper
    and another claim would). True if the handler's job.lost was set within 5 s."""
    started, seen = threading.Event(), threading.Event()

    def handle(job: queue.Job) -> None:
        started.set()
        if job.lost.wait(5):
            seen.set()

    with db.connection() as conn:
        [job_id] = queue.enqueue_many(conn, KIND, [{}])
        worker = Worker(db, {KIND: handle}, lease=lease_s, poll=0.1)
        thread = threading.Thread(target=worker.run, kwargs={"until_idle": True}, daemon=True)
        thread.start()
        if started.wait(10):
            run(conn, "lab/fence_job", {"id": job_id, "lease": "1 minute"})
        thread.join(15)
    return seen.is_set()

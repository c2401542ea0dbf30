"""Long jobs on purpose, the heartbeat: `long_job` runs a job longer than its
lease on library `Worker`s, with and without `heartbeat=True`, and samples
the lease deadline as it moves."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from psycopg.rows import dict_row

from ... import charts, checks, queue, tables
from ...databases import Database
from ...errors import BadInput, PgqError
from ...guide import GuideFigure
from ...statements import run, run_one
from ...worker import Worker
from ..results import Comparison, Progress, Result, advice, finish, guess_text, note, tell
from .lab import KIND, LAB_PREFIX, LEASE_LIMITS, WORK_LIMITS, WORKER_LIMITS, prepare


@dataclass(frozen=True)
class FencingRun:
    """One run of the job's handler by one worker, in seconds from the start."""

    worker: str
    token: int
    start_s: float
    end_s: float
    # "done" (its completion updated the row), "fenced" (it updated nothing), or "stopped"
    # (Stop cut its work short: the handler failed, so the job was not recorded as done)
    outcome: str


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
        names = {
            "done": "a run that completed",
            "fenced": "a run fenced out",
            "stopped": "a run cut short by Stop",
        }
        kinds = {
            names["done"]: charts.BLUE,
            names["fenced"]: charts.RED,
            names["stopped"]: charts.ORANGE,
            "the lease's deadline": charts.GREY,
        }
        rows = [
            {
                "lane": r.worker,
                "start": r.start_s,
                "end": r.end_s,
                "kind": names[r.outcome],
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

    def report(self) -> list[str]:
        runs = [
            note(f"    {r.worker} (token {r.token}) {r.start_s:5.2f} to {r.end_s:5.2f} s: {r.outcome}")
            for r in self.runs
        ]
        return [
            note(
                f"{'with' if self.heartbeat else 'without'} a heartbeat: {self.work_s:g} s of work, "
                f"{self.lease_s:g} s lease, {tables.count(self.workers, 'worker')}"
                + (f" of {self.concurrency} executors" if self.concurrency > 1 else "")
                + self.stopped_note
            ),
            f"  the handler ran {tables.count(self.times_run, 'time')} "
            f"(your guess: {guess_text(self.guess)}):",
            *runs,
            note(
                f"  the job ended {self.final_status}" + (f" ({self.last_error})" if self.last_error else "")
            ),
            note(
                "  each claim's lease deadline "
                + ("moved with the work" if self.lease_moved else "stayed where the claim put it")
            ),
            *self.footer(),
        ]

    def comparison(self) -> list[Comparison]:
        fenced = sum(r.outcome == "fenced" for r in self.runs)
        cut = sum(r.outcome == "stopped" for r in self.runs)
        rows: list[Comparison] = [
            ("times the handler ran", self.guess_cell, self.times_run, None),
            ("completions fenced out (0 rows)", None, fenced, "a stale completion updates 0 rows"),
            ("the job ended", None, self.final_status, None),
            ("lease deadline moved with the work", None, "yes" if self.lease_moved else "no", None),
        ]
        if cut:
            rows.append(("runs cut short by Stop (not done)", None, cut, "a stopped run completes nothing"))
        return rows


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
            if stop.wait(work_s):  # Stop: the work was not done, so the job must not complete
                raise PgqError("stopped before its work was done")

        def on_event(event: str, job) -> None:
            if event == "claimed":
                with lock:
                    claims.append(name)
            elif event in ("done", "fenced", "retried", "dead"):  # a failure here is only ever Stop's
                token, outcome = job.fence_token, event if event in ("done", "fenced") else "stopped"
                with lock:
                    runs.append(FencingRun(name, token, begun[token], time.monotonic() - started, outcome))

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
                # Stop, or a W1 that never claims, ends the wait: it once held Stop for minutes
                if stop.is_set():
                    break
                if time.monotonic() > limit:
                    raise PgqError(f"no worker claimed the long job within {limit - started:.0f} s")
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

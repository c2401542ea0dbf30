"""`pgq-teach bench`: the queue's speed, every setup side by side in one run on
one server (issue 13).

Each setup drains the same no-op jobs from a fresh database, three times,
interleaved (setup A, B, C, then A, B, C again), so a busy moment on a shared
machine hits every setup alike. Every run's end state is checked on the
server: all jobs done, none claimed twice (each claim adds one to a job's
fencing token, so a token above 1 is a second claim). Timings are reported,
never asserted.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any

import psycopg

from . import machine, queue, tables
from .databases import Database, open_database
from .errors import BadInput
from .experiments.results import Progress
from .experiments.sessions import together
from .guide import figure
from .machine import MachineLoad
from .statements import run, run_one
from .tables import Column, Table
from .worker import Worker, running_idle

KIND = "noop"
RAW_BATCH = 100  # the guide's batch
WORKER_BATCHES = (1, 10, 100)
WORKER_COUNTS = (1, 4, 16)
RAW_CONNECTIONS = (1, 4)
PGQUEUER_BATCHES = (10, 100)
POOL_SIZES = (1, 4, 16)  # executors in one Worker
PICKUP_POOL = 16


@dataclass
class DrainOutcome:
    """One run of one setup: what it measured and whether its end state held."""

    value: float
    ok: bool
    note: str = ""
    p99_ms: float | None = None
    wakeups_per_job: float | None = None
    sessions: int | None = None
    cpu_us_per_job: float | None = None  # this process's CPU time (the client's) over the drain


@dataclass
class Setup:
    name: str
    unit: str  # "jobs/s" or "ms"
    go: Callable[[Database, int], DrainOutcome]
    batch: int | None = None
    workers: int | None = None
    family: str = ""


@dataclass
class BenchRow:
    name: str
    unit: str
    family: str
    batch: int | None
    workers: int | None
    values: list[float] = field(default_factory=list)
    p99_ms: list[float] = field(default_factory=list)
    wakeups_per_job: list[float] = field(default_factory=list)
    sessions: list[int] = field(default_factory=list)
    cpu_us_per_job: list[float] = field(default_factory=list)
    ok: bool = True
    notes: list[str] = field(default_factory=list)
    vs_ceiling: float | None = None
    vs_pgqueuer: float | None = None

    @property
    def median(self) -> float | None:
        return statistics.median(self.values) if self.values else None

    @property
    def p99_median(self) -> float | None:
        return statistics.median(self.p99_ms) if self.p99_ms else None

    @property
    def cpu_median(self) -> float | None:
        return statistics.median(self.cpu_us_per_job) if self.cpu_us_per_job else None


# Two tables, each unit once in its header, so a narrow terminal or a pipe's 80 columns wrap
# names, never a figure away from its unit. Throughput setups:
THROUGHPUT_COLUMNS = [
    Column("setup"),
    Column("median", tables.NUMBER, "jobs/s", digits=0),
    Column("min–max", unit="jobs/s"),
    Column("× ceiling", tables.NUMBER),
    Column("× PgQueuer", tables.NUMBER),
    Column("client CPU", tables.NUMBER, "µs/job", digits=1),
    Column("end state"),
]
# and the wake-up latency setups:
LATENCY_COLUMNS = [
    Column("setup"),
    Column("p50", tables.NUMBER, "ms", digits=1),
    Column("p99", tables.NUMBER, "ms", digits=1),
    Column("p50 min–max", unit="ms"),
    Column("wake-ups per job", tables.NUMBER, digits=1),
    Column("sessions held", tables.COUNT),
    Column("end state"),
]


@dataclass
class BenchResult:
    server_version: str
    cpus: int
    jobs: int
    repeats: int
    rows: list[BenchRow]
    pgqueuer: str  # "installed 1.6.0" or why its rows are missing
    stopped: bool = False
    guess: Any = None
    guide: Any = None
    targets: list[tuple[str, str, bool | None]] = field(default_factory=list)
    machine: MachineLoad | None = None  # how busy the machine was: a busy run gets no verdict

    @property
    def ok(self) -> bool:
        """Every run's end state held (all done, none claimed twice)."""
        return all(row.ok for row in self.rows)

    def row(self, name: str) -> BenchRow | None:
        return next((r for r in self.rows if r.name == name), None)

    def table(self, width: int | None = None) -> str:
        """The terminal tables, to the terminal's width: throughput, then wake-up latency."""
        throughput: list[list[Any]] = []
        latency: list[list[Any]] = []
        for r in self.rows:
            state = "ok" if r.ok else "FAILED: " + "; ".join(r.notes)
            if not r.values:
                state = "; ".join(r.notes) or "not run"
            if r.unit == "ms":
                latency.append(
                    [r.name]
                    + (
                        [r.median, r.p99_median, f"{min(r.values):.1f}–{max(r.values):.1f}"]
                        if r.values
                        else [None] * 3
                    )
                    + [
                        statistics.median(r.wakeups_per_job) if r.wakeups_per_job else None,
                        max(r.sessions) if r.sessions else None,
                        state,
                    ]
                )
                continue
            spread = f"{min(r.values):,.0f}–{max(r.values):,.0f}" if r.values else None
            throughput.append(
                [r.name, r.median if r.values else None, spread, r.vs_ceiling, r.vs_pgqueuer]
                + [r.cpu_median, state]
            )
        parts = [Table(THROUGHPUT_COLUMNS, throughput).text(width)] if throughput else []
        parts += [Table(LATENCY_COLUMNS, latency).text(width)] if latency else []
        return "\n\n".join(parts)

    def summary(self, width: int | None = None) -> str:
        """What the terminal shows after a run, laid out to its width."""
        head = (
            f"{self.server_version}; {self.cpus} CPUs; {self.jobs:,} jobs per run; "
            f"{self.repeats} runs each, interleaved, on a fresh database; PgQueuer: {self.pgqueuer}"
        )
        if self.guide is not None:
            head += f"\nFor comparison, {self.guide} (an idle machine)"
        if self.machine is not None:
            head += f"\n{self.machine.line()}"
        goals = "\n".join(
            f"- {text}: {got} ({'met' if met else 'not met' if met is False else 'no verdict'})"
            for text, got, met in self.targets
        )
        verdict = (
            "every run ended with all jobs done, none claimed twice"
            if self.ok
            else "SOME RUNS FAILED their end-state check"
        )
        stopped = "\n(stopped early)" if self.stopped else ""
        after = tables.fit(
            f"Targets (issues 13, 21 and 49):\n{goals}\n\n{verdict}{stopped}", width, indent="  "
        )
        return f"{tables.fit(head, width)}\n\n{self.table(width)}\n\n{after}"

    def to_json(self) -> dict:
        data = asdict(self)
        for row, out in zip(self.rows, data["rows"], strict=True):
            out["median"] = row.median
            out["p99_ms_median"] = row.p99_median
            out["cpu_us_per_job_median"] = row.cpu_median
        data["ok"] = self.ok
        return data


# --- the setups ------------------------------------------------------------------


def _seed(db: Database, jobs: int) -> None:
    with db.connection() as conn:
        run(conn, "lab/seed_jobs", {"kind": KIND, "count": jobs})
        run(conn, "lab/analyze_jobs")


def _end_state(db: Database, jobs: int, *, claimed: bool = True) -> tuple[bool, str]:
    with db.connection() as conn:
        total, done, twice, never = run_one(conn, "lab/bench_end_state")
    if claimed:
        ok = total == done == jobs and twice == 0 and never == 0
    else:
        ok = total == jobs and done == 0 and never == jobs
    return (
        ok,
        "" if ok else f"{total:,} jobs, {done:,} done, {twice:,} claimed twice, {never:,} never claimed",
    )


def ceiling(db: Database, jobs: int) -> DrainOutcome:
    """Two set-based UPDATEs: every job claimed at once, then every job done."""
    _seed(db, jobs)
    with db.connection() as conn:
        began = time.perf_counter()
        run(conn, "lab/bench_claim_all")
        run(conn, "lab/complete_running")
        took = time.perf_counter() - began
    ok, note = _end_state(db, jobs)
    return DrainOutcome(jobs / took, ok, note)


def raw_loop(connections: int) -> Callable[[Database, int], DrainOutcome]:
    """The guide's loop on `connections` connections: claim 100 (claim.sql),
    then one fenced set-based completion (complete_many.sql), each statement
    committed on its own, durably."""

    def go(db: Database, jobs: int) -> DrainOutcome:
        _seed(db, jobs)
        conns = [db.connect() for _ in range(connections)]
        completed: list[list[int]] = [[] for _ in conns]
        lease = timedelta(minutes=5)

        def drain(i: int) -> None:
            conn = conns[i]
            while rows := run(conn, "claim", {"batch": RAW_BATCH, "lease": lease}).fetchall():
                params = {"ids": [r[0] for r in rows], "fence_tokens": [r[6] for r in rows]}
                completed[i] += [r[0] for r in run(conn, "complete_many", params).fetchall()]

        try:
            cpu = time.process_time()
            took = together(connections, drain)
            cpu = time.process_time() - cpu
        finally:
            for conn in conns:
                conn.close()
        ok, note = _end_state(db, jobs)
        ids = [i for part in completed for i in part]
        if len(ids) != len(set(ids)) or len(ids) != jobs:
            ok, note = False, f"{len(ids):,} completions reported for {jobs:,} jobs"
        return DrainOutcome(jobs / took, ok, note, cpu_us_per_job=cpu / jobs * 1e6)

    return go


CLAIM_TENANTS = 1_000  # the fair claim's cost grows with the tenants that have ready jobs
CLAIM_PRIORITIES = 10


def claim_loop(name: str) -> Callable[[Database, int], DrainOutcome]:
    """One connection drains a queue spread over 1,000 tenants and 10 priorities with one
    claim of the library's (`claim`, the FIFO claim as taught; `claim_priority`; `claim_fair`,
    per_tenant at the batch, so the cap never binds and the cost is the claim's own) at batch
    100, each batch completed in one fenced statement: the claims side by side on one queue."""
    claims: dict[str, Callable[..., list[queue.Job]]] = {
        "claim": queue.claim,
        "claim_priority": queue.claim_priority,
        "claim_fair": lambda conn, **kw: queue.claim_fair(conn, per_tenant=RAW_BATCH, **kw),
    }
    claim = claims[name]

    def go(db: Database, jobs: int) -> DrainOutcome:
        with db.connection() as conn:
            params = {"kind": KIND, "count": jobs, "tenants": CLAIM_TENANTS, "priorities": CLAIM_PRIORITIES}
            run(conn, "lab/seed_tenant_jobs", params)
            run(conn, "lab/analyze_jobs")
            done = 0
            began = time.perf_counter()
            while batch := claim(conn, batch=RAW_BATCH):
                done += sum(queue.complete_many(conn, batch))
            took = time.perf_counter() - began
        ok, note = _end_state(db, jobs)
        if done != jobs:
            ok, note = False, f"{done:,} completions reported for {jobs:,} jobs"
        return DrainOutcome(jobs / took, ok, note)

    return go


def worker_drain(
    batch: int, workers: int, durable: bool = False, concurrency: int = 1
) -> Callable[[Database, int], DrainOutcome]:
    """The library's Worker, `workers` of them on threads (in one process, as
    the raw loop's connections are), each with `concurrency` executors, at
    `batch`; with `durable`, every completion waits for its WAL flush."""

    def go(db: Database, jobs: int) -> DrainOutcome:
        _seed(db, jobs)
        fleet = [
            Worker(
                db.dsn,
                {KIND: lambda job: None},
                batch=batch,
                durable_completions=durable,
                concurrency=concurrency,
            )
            for _ in range(workers)
        ]
        cpu = time.process_time()  # every Worker's threads, and their start and stop
        took = together(workers, lambda i: fleet[i].run(until_idle=True))
        cpu = time.process_time() - cpu
        ok, note = _end_state(db, jobs)
        ids = [i for w in fleet for i in w.report.done_ids]
        trouble = sum(w.report.fenced + w.report.reconnects + w.report.retried for w in fleet)
        if len(ids) != len(set(ids)) or len(ids) != jobs or trouble:
            ok, note = False, f"{len(ids):,} done for {jobs:,} jobs; {trouble} fenced, reconnects or retries"
        return DrainOutcome(jobs / took, ok, note, cpu_us_per_job=cpu / jobs * 1e6)

    return go


def bulk_enqueue(db: Database, jobs: int) -> DrainOutcome:
    """enqueue_many of `jobs` payloads in one transaction, committed."""
    payloads = [{"n": n} for n in range(jobs)]
    with db.connection() as conn:
        began = time.perf_counter()
        with conn.transaction():
            ids = queue.enqueue_many(conn, KIND, payloads)
        took = time.perf_counter() - began
    ok, note = _end_state(db, jobs, claimed=False)
    if len(set(ids)) != jobs:
        ok, note = False, f"{len(set(ids)):,} distinct ids for {jobs:,} payloads"
    return DrainOutcome(jobs / took, ok, note)


def pickup_latency(
    samples: int, *, workers: int = 1, concurrency: int = 1
) -> Callable[[Database, int], DrainOutcome]:
    """`workers` idle Workers, each with `concurrency` executors, waiting on
    LISTEN (fallback poll 5 s, so only the notification can wake them in
    time): from just before enqueue() to the handler starting, `samples`
    times; with the wake-ups per job (notifications that ended a wait) and
    the sessions they hold."""

    def go(db: Database, jobs: int) -> DrainOutcome:
        started: dict[int, float] = {}
        arrived = threading.Event()

        def handler(job: queue.Job) -> None:
            started[job.id] = time.perf_counter()
            arrived.set()

        fleet = [Worker(db.dsn, {KIND: handler}, poll=5.0, concurrency=concurrency) for _ in range(workers)]
        waits: list[float] = []
        with running_idle(fleet), db.connection() as conn:
            sessions = run_one(conn, "lab/other_sessions")[0]
            woken = sum(w.report.wakeups for w in fleet)
            for _ in range(samples):
                arrived.clear()
                sent = time.perf_counter()
                job_id = queue.enqueue(conn, KIND, {})
                if not arrived.wait(10):
                    break
                waits.append((started[job_id] - sent) * 1000)
                time.sleep(0.02)  # back to its LISTEN wait before the next one
            time.sleep(0.1)  # the last job's wake-ups land
            woken = sum(w.report.wakeups for w in fleet) - woken
        ok, note = _end_state(db, samples)
        if len(waits) != samples:
            ok, note = False, f"{len(waits)} of {samples} jobs picked up within 10 s"
        cuts = statistics.quantiles(waits, n=100, method="inclusive") if len(waits) > 1 else waits * 99
        return DrainOutcome(
            cuts[49], ok, note, p99_ms=cuts[98], wakeups_per_job=woken / samples, sessions=sessions
        )

    return go


def pgqueuer_version() -> str | None:
    try:
        from importlib.metadata import version

        import pgqueuer  # noqa: F401

        return version("pgqueuer")
    except Exception:
        return None


def pgqueuer_drain(batch: int) -> Callable[[Database, int], DrainOutcome]:
    def go(db: Database, jobs: int) -> DrainOutcome:
        from .peers import pgqueuer_run

        took, seen, left = pgqueuer_run(db, jobs, batch)
        ok = len(seen) == len(set(seen)) == jobs and left == 0
        note = (
            "" if ok else f"{len(seen):,} handler calls ({len(set(seen)):,} jobs) for {jobs:,}; {left:,} left"
        )
        return DrainOutcome(jobs / took, ok, note)

    return go


def setups(samples: int, with_pgqueuer: bool) -> list[Setup]:
    out = [Setup("two set-based UPDATEs (the ceiling)", "jobs/s", ceiling, family="ceiling")]
    out += [
        Setup(f"guide's raw loop, batch {RAW_BATCH}, {c} conn", "jobs/s", raw_loop(c), RAW_BATCH, c, "raw")
        for c in RAW_CONNECTIONS
    ]
    out += [
        Setup(
            f"Worker batch {b}, {tables.count(w, 'worker')}",
            "jobs/s",
            worker_drain(b, w),
            b,
            w,
            "worker",
        )
        for b in WORKER_BATCHES
        for w in WORKER_COUNTS
    ]
    out += [
        Setup(
            f"Worker batch 100, {tables.count(w, 'worker')}, durable completions",
            "jobs/s",
            worker_drain(100, w, durable=True),
            100,
            w,
            "durable",
        )
        for w in RAW_CONNECTIONS
    ]
    out += [
        Setup(
            f"Worker batch 100, 1 worker, {tables.count(c, 'executor')}",
            "jobs/s",
            worker_drain(100, 1, concurrency=c),
            100,
            1,
            "pool",
        )
        for c in POOL_SIZES
    ]
    out += [
        Setup(
            f"{what}, batch {RAW_BATCH}, 1 conn, {CLAIM_TENANTS:,} tenants",
            "jobs/s",
            claim_loop(name),
            RAW_BATCH,
            1,
            "claims",
        )
        for what, name in (
            ("FIFO claim", "claim"),
            ("priority claim", "claim_priority"),
            ("fair claim", "claim_fair"),
        )
    ]
    out.append(Setup("enqueue_many (bulk enqueue)", "jobs/s", bulk_enqueue, family="enqueue"))
    pickups = {
        "1 idle Worker": pickup_latency(samples),
        f"1 Worker with {PICKUP_POOL} idle executors": pickup_latency(samples, concurrency=PICKUP_POOL),
        f"{PICKUP_POOL} idle Workers": pickup_latency(samples, workers=PICKUP_POOL),
    }
    out += [Setup(f"NOTIFY pickup, {who}", "ms", go, family="latency") for who, go in pickups.items()]
    if with_pgqueuer:
        out += [
            Setup(f"PgQueuer batch {b}, 1 worker", "jobs/s", pgqueuer_drain(b), b, 1, "pgqueuer")
            for b in PGQUEUER_BATCHES
        ]
    return out


# --- the run -----------------------------------------------------------------------


def check_inputs(*, jobs: Any, repeats: Any, samples: Any) -> None:
    for name, value, low, high in (
        ("jobs", jobs, 100, 5_000_000),
        ("repeats", repeats, 1, 20),
        ("samples", samples, 2, 10_000),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise BadInput(f"{name} must be a whole number from {low:,} to {high:,}, got {value!r}")


def run_bench(
    *,
    jobs: int = 20_000,
    repeats: int = 3,
    samples: int = 200,
    label: str = "bench",
    only: Callable[[Setup], bool] | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> BenchResult:
    """Run every setup `repeats` times, interleaved, each on a fresh database
    (`label`, dropped and made again before every run)."""
    check_inputs(jobs=jobs, repeats=repeats, samples=samples)
    stop = stop or threading.Event()
    peer = pgqueuer_version()
    chosen = [s for s in setups(samples, peer is not None) if only is None or only(s)]
    rows = [BenchRow(s.name, s.unit, s.family, s.batch, s.workers) for s in chosen]
    db = open_database(label)
    result = BenchResult(
        db.server.line(),
        os.cpu_count() or 0,
        jobs,
        repeats,
        rows,
        f"installed {peer}" if peer else "not installed (pip install -e '.[bench]')",
        guide=figure(19),
    )
    with db.connection() as conn:
        postmaster = machine.postmaster_of(conn.info.backend_pid)
    with machine.ServerWatch(postmaster) as watch:
        load_at_start, start = machine.load_average(), machine.snapshot(watch)
        _run_setups(result, chosen, label, jobs, progress, stop)
    result.machine = machine.between(start, machine.snapshot(watch), load_at_start)
    _compare(result)
    return result


def _run_setups(
    result: BenchResult,
    chosen: list[Setup],
    label: str,
    jobs: int,
    progress: Progress | None,
    stop: threading.Event,
) -> None:
    """Each setup `result.repeats` times, interleaved, each on a fresh database."""
    repeats, rows = result.repeats, result.rows
    total, done = repeats * len(chosen), 0
    for _ in range(repeats):
        for setup, row in zip(chosen, rows, strict=True):
            if stop.is_set():
                result.stopped = True
                break
            db = open_database(label, reset=True)
            try:
                outcome = setup.go(db, jobs)
            except psycopg.Error as exc:
                row.ok = False
                row.notes.append(f"{type(exc).__name__}: {exc}".strip())
            else:
                row.values.append(outcome.value)
                if outcome.p99_ms is not None:
                    row.p99_ms.append(outcome.p99_ms)
                if outcome.wakeups_per_job is not None:
                    row.wakeups_per_job.append(outcome.wakeups_per_job)
                if outcome.sessions is not None:
                    row.sessions.append(outcome.sessions)
                if outcome.cpu_us_per_job is not None:
                    row.cpu_us_per_job.append(outcome.cpu_us_per_job)
                if not outcome.ok:
                    row.ok = False
                    row.notes.append(outcome.note)
            done += 1
            if progress:
                progress(done, total)


def _compare(result: BenchResult) -> None:
    ceiling_row = result.row("two set-based UPDATEs (the ceiling)")
    top = ceiling_row.median if ceiling_row else None
    peers = {r.batch: r.median for r in result.rows if r.family == "pgqueuer" and r.median}
    for r in result.rows:
        if r.unit != "jobs/s" or r.median is None or r.family == "enqueue":
            continue  # enqueueing is not draining: no ratio to the drains' ceiling
        if top:
            r.vs_ceiling = r.median / top
        peer = peers.get(r.batch) if r.family in ("worker", "pgqueuer", "raw") else None
        if peer:
            r.vs_pgqueuer = r.median / peer
    result.targets = _targets(result)


def _ratio(a: BenchRow | None, b: BenchRow | None) -> float | None:
    return a.median / b.median if a and b and a.median and b.median else None


def _ratio_target(
    text: str, a: BenchRow | None, b: BenchRow | None, at_least: float
) -> tuple[str, str, bool | None]:
    """A target on the ratio of two rows' medians: its text, the ratio, and whether it was met."""
    got = _ratio(a, b)
    return (text, f"{got:.2f}" if got else "not measured", got >= at_least if got else None)


def _workers(n: int) -> str:
    return f"Worker batch 100, {tables.count(n, 'worker')}"


def _targets(result: BenchResult) -> list[tuple[str, str, bool | None]]:
    out = [
        _ratio_target(
            f"Worker batch 100 ≥ 0.9 × raw loop at {tables.count(n, 'connection')}",
            result.row(_workers(n)),
            result.row(f"guide's raw loop, batch {RAW_BATCH}, {n} conn"),
            0.9,
        )
        for n in (1, 4)
    ]
    out.append(
        _ratio_target(
            "Worker batch 100 ≥ 2 × PgQueuer batch 100 (1 worker each)",
            result.row(_workers(1)),
            result.row("PgQueuer batch 100, 1 worker"),
            2,
        )
    )
    lat = result.row("NOTIFY pickup, 1 idle Worker")
    if lat and lat.median is not None and lat.p99_median is not None:
        out.append(
            (
                "NOTIFY pickup p50 ≤ 10 ms and p99 ≤ 50 ms",
                f"p50 {lat.median:.1f} ms, p99 {lat.p99_median:.1f} ms",
                lat.median <= 10 and lat.p99_median <= 50,
            )
        )
    out += [
        _ratio_target(
            f"one Worker with {tables.count(n, 'executor')} ≥ 0.9 × {tables.count(n, 'separate Worker')}, "
            "batch 100",
            result.row(f"{_workers(1)}, {tables.count(n, 'executor')}"),
            result.row(_workers(n)),
            0.9,
        )
        for n in POOL_SIZES
    ]
    pool = result.row(f"NOTIFY pickup, 1 Worker with {PICKUP_POOL} idle executors")
    if pool and pool.median is not None and pool.p99_median is not None and pool.wakeups_per_job:
        per_job = statistics.median(pool.wakeups_per_job)
        out.append(
            (
                f"pickup with {PICKUP_POOL} executors: p50 ≤ 5 ms, p99 ≤ 10 ms, 1.0 wake-ups per job",
                f"p50 {pool.median:.1f} ms, p99 {pool.p99_median:.1f} ms, {per_job:.2f} wake-ups per job",
                pool.median <= 5 and pool.p99_median <= 10 and per_job <= 1.0,
            )
        )
    enq = result.row("enqueue_many (bulk enqueue)")
    if enq and enq.median:
        out.append(("enqueue_many ≥ 100,000 jobs/s", f"{enq.median:,.0f} jobs/s", enq.median >= 100_000))
    out += _client_cpu(result)
    if result.machine is None or result.machine.busy is not False:
        # A busy machine stretches the server's time and the client's alike: no verdict.
        out = [(text, got, None) for text, got, _ in out]
    return out


def _client_cpu(result: BenchResult) -> list[tuple[str, str, bool | None]]:
    """Client CPU per job, the Worker's against the raw loop's at 1 and 4: reported, no target."""
    out: list[tuple[str, str, bool | None]] = []
    for n in (1, 4):
        worker, raw = result.row(_workers(n)), result.row(f"guide's raw loop, batch {RAW_BATCH}, {n} conn")
        if worker and raw and worker.cpu_median and raw.cpu_median:
            got = f"{worker.cpu_median:.1f} against {raw.cpu_median:.1f} µs/job"
            out.append(
                (f"client CPU per job, Worker and raw loop at {tables.count(n, 'connection')}", got, None)
            )
    return out

"""Lesson 09, bloat and VACUUM, measured on the live server:

- drain: 100,000 jobs through claim and done, sampling the table's size and
  its dead row versions as it goes (guide #17);
- empty_claim: what one claim reads when nothing is ready, from
  EXPLAIN (ANALYZE, BUFFERS): the steady signal the guide measures;
- vacuum: VACUUM (VERBOSE), with its "removed" and "dead but not yet
  removable" counts read from the server's own report;
- IdleTransaction: the forgotten REPEATABLE READ session that holds a snapshot
  and stops VACUUM (guide #18), and BloatLab, which steps through the guide's
  experiment around it;
- holders and exact_counts: who holds the horizon back (backend_xid from any
  database, backend_xmin from this one), and pgstattuple's exact view where
  the server ships it (horizon.held_elsewhere: an ID held in another database).

The lesson's database has autovacuum switched off on jobs, so VACUUM runs
only when the lesson says so and every learner measures the same thing.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from dataclasses import dataclass, field

import psycopg
from psycopg.rows import dict_row

from .. import charts, checks, measurements, queue, tables
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import explain, run, run_one
from .results import Comparison, Progress, Result, finish, guess_text, guide_bars, note, tell
from .sessions import Session, run_and_wait

LIMITS = {"jobs": (1, 200_000), "batch": (1, queue.MAX_BATCH), "samples": (1, 200)}
IDLE_PREFIX, IDLE_SESSION = "pgq idle", "transaction"  # application_name "pgq idle transaction"
IDLE_NAME = f"{IDLE_PREFIX} {IDLE_SESSION}"  # so the learner can spot it in pg_stat_activity
INDEX_PAGES = re.compile(r'index "(\w+)": pages: (\d+) in total, (\d+) newly deleted')
TUPLES = re.compile(r"tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable")


# --- the drain (guide #17) -----------------------------------------------------


@dataclass(frozen=True)
class Sample:
    drained: int
    table_bytes: int
    dead_tuples: int
    holders: int = 0  # rows of the activity query (sql/stats_sessions.sql) that hold back jobs


@dataclass(kw_only=True)
class DrainResult(Result):
    """A drain, sampled; the guess is the table's size afterwards, in MB."""

    jobs: int
    batch: int
    drained: int
    elapsed_s: float
    samples: list[Sample]
    guide: GuideFigure = field(default_factory=lambda: figure(17))
    buffers: int = 0  # buffers the drain's statements touched in jobs and its indexes (pg_statio)
    claim_plan: list[str] = field(default_factory=list)  # EXPLAIN of claim.sql on the seeded table

    @property
    def claims_through_ready_index(self) -> bool:
        """Whether the claim's plan walks jobs_ready_idx in run_at order (no Sort),
        the walk that marks the drained jobs' index entries dead as it passes them."""
        plan = "\n".join(self.claim_plan)
        return "Index Scan using jobs_ready_idx" in plan and "Sort" not in plan

    @property
    def table_bytes(self) -> int:
        return self.samples[-1].table_bytes if self.samples else 0

    @property
    def table_mb(self) -> float:
        return self.table_bytes / 1024 / 1024

    @property
    def dead_tuples(self) -> int:
        return self.samples[-1].dead_tuples if self.samples else 0

    @property
    def held_samples(self) -> int:
        """How many samples found another session (or a prepared transaction, or
        a slot) holding back the horizon: 0 means the drain had it to itself."""
        return sum(1 for point in self.samples if point.holders)

    def comparison(self) -> list[Comparison]:
        return [
            (
                "table size, MB",
                self.guess_cell,
                round(self.table_mb, 1),
                f"{self.guide.values['table_mb']} (PG 16)",
            ),
            ("dead row versions (statistics)", None, self.dead_tuples, None),
            ("seconds to drain", None, self.elapsed_s, None),
        ]

    def report(self) -> list[str]:
        return [
            note(
                f"drain: {self.drained:,} of {self.jobs:,} jobs through claim and done, "
                f"batches of {self.batch}" + self.stopped_note
            ),
            f"  elapsed {self.elapsed_s:.2f} s",
            note(  # the dead row versions and buffers touched: the table has the size
                f"  table {self.table_mb:.1f} MB  (your guess: {guess_text(self.guess, ' MB')}); "
                f"dead row versions {self.dead_tuples:,}; buffers touched {self.buffers:,}"
            ),
            *self.footer(),
        ]

    def size_chart(self) -> charts.Chart:
        """The table's size as the drain goes, beside the guide's size after its drain."""
        mb = self.guide.values["table_mb"]
        return charts.lines(
            [
                {"jobs drained": s.drained, "table size, MB": s.table_bytes / 1024 / 1024}
                for s in self.samples
            ],
            x="jobs drained",
            y="table size, MB",
            heading="Table size during the drain",
            x_axis=charts.axis("jobs drained", "jobs"),
            y_axis=charts.axis("table size", "MB"),
            refs=[charts.Reference(f"guide #{self.guide.number}: {mb:g} MB (PostgreSQL 16)", mb)],
        )

    def dead_chart(self) -> charts.Chart:
        """Dead row versions as the drain goes: every claim and every done leaves one."""
        return charts.lines(
            [{"jobs drained": s.drained, "dead row versions": s.dead_tuples} for s in self.samples],
            x="jobs drained",
            y="dead row versions",
            heading="Dead row versions during the drain",
            x_axis=charts.axis("jobs drained", "jobs"),
            y_axis=charts.axis("dead row versions", "rows"),
        )


def prepare(db: Database, jobs: int) -> None:
    """An empty jobs table, autovacuum off on it, then `jobs` due jobs, and
    ANALYZE: with autovacuum off, auto-ANALYZE is off too, and without
    statistics the planner claims through a Bitmap Heap Scan and a Sort, which
    never marks the drained jobs' index entries dead (a live queue's table has
    statistics, so the lab gives it some)."""
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/autovacuum_off")
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs})
        run(conn, "lab/analyze_jobs")


def table_bytes(db: Database) -> int:
    """The jobs table's size on disk now."""
    with db.connection() as conn:
        return run_one(conn, "lab/table_bloat")[0]


def sample(conn, drained: int) -> Sample:
    run(conn, "lab/flush_stats")  # this session's counts reach the statistics now
    table_bytes, _, _, dead = run_one(conn, "lab/table_bloat")
    # what else held back this database's horizon just then (a logical slot's
    # catalog_xmin does not hold back jobs): the drain's own pruning waits on it
    holding = [row for row in run(conn, "stats_sessions") if row[-1] != "system catalogs only"]
    return Sample(drained, table_bytes, dead or 0, len(holding))


def drain(
    db: Database,
    *,
    jobs: int = 100_000,
    batch: int = 100,
    samples: int = 20,
    prepared: bool = False,
    record: bool = False,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> DrainResult:
    """Seed `jobs` due jobs (unless `prepared` says the caller already did,
    with prepare()), then claim them `batch` at a time and mark each batch
    done, as fast as one session can; sample size and dead row versions about
    `samples` times on the way. With `record`, a finished drain's rate is kept
    for later lessons to quote (lesson 09's first drain does this)."""
    for name, value in (("jobs", jobs), ("batch", batch), ("samples", samples)):
        checks.whole_number(name, value, *LIMITS[name])
    stop = stop or threading.Event()
    if not prepared:
        prepare(db, jobs)
    every = max(1, jobs // samples)
    drained, next_sample = 0, every
    with db.connection() as conn:
        # the plan the claim gets on the seeded table, as the server plans it with these values
        claim_plan = explain(conn, "claim", {"batch": batch, "lease": queue.DEFAULT_LEASE})
        points = [sample(conn, 0)]
        buffers_before = run_one(conn, "lab/table_buffers")[0]
        t0 = time.perf_counter()
        paused = 0.0  # time spent sampling, left out of the drain's time
        while not stop.is_set():
            got = queue.claim(conn, batch=batch)
            if not got:
                break
            queue.complete_many(conn, got)
            drained += len(got)
            if drained >= next_sample:
                s0 = time.perf_counter()
                points.append(sample(conn, drained))
                paused += time.perf_counter() - s0
                next_sample += every
                tell(progress, drained, jobs)
        elapsed = time.perf_counter() - t0 - paused
        if not points or points[-1].drained != drained:
            points.append(sample(conn, drained))
        else:
            run(conn, "lab/flush_stats")
        buffers = run_one(conn, "lab/table_buffers")[0] - buffers_before
    if not stop.is_set():
        tell(progress, jobs, jobs)
    if record and drained == jobs and elapsed > 0:
        measurements.record(measurements.DRAIN_JOBS_PER_S_09, round(drained / elapsed))
    return finish(
        DrainResult,
        db,
        jobs=jobs,
        batch=batch,
        drained=drained,
        elapsed_s=elapsed,
        samples=points,
        stopped=drained < jobs,
        guess=guess,
        buffers=buffers,
        claim_plan=claim_plan,
    )


# --- what one empty claim reads ------------------------------------------------


@dataclass(frozen=True)
class ClaimCost:
    buffers: int
    ms: float
    plan: dict

    def __str__(self) -> str:
        return f"{tables.count(self.buffers, 'buffer')}, {tables.milliseconds(self.ms)}"


def empty_claim(db: Database, runs: int = 3) -> ClaimCost:
    """EXPLAIN (ANALYZE, BUFFERS) of the claim, `runs` times on a queue with
    nothing ready; the median buffers (shared hit + read) and time."""
    costs = []
    with db.connection() as conn:
        if any(status == "ready" for status, *_ in run(conn, "stats_status").fetchall()):
            # ANALYZE runs the claim: with a job ready it would claim it
            raise BadInput("empty_claim measures a claim with nothing ready, but some jobs are ready")
        for _ in range(runs):
            plan = run_one(conn, "lab/explain_empty_claim")[0][0]
            top = plan["Plan"]
            costs.append((top["Shared Hit Blocks"] + top["Shared Read Blocks"], plan["Execution Time"], plan))
    buffers = int(statistics.median(c[0] for c in costs))
    ms = statistics.median(c[1] for c in costs)
    return ClaimCost(buffers, ms, costs[-1][2])


# --- VACUUM (VERBOSE) ----------------------------------------------------------


@dataclass(frozen=True)
class VacuumReport:
    removed: int
    remain: int
    not_removable: int
    text: str

    def index_pages(self, index: str) -> tuple[int, int] | None:
        """(pages in total, pages this VACUUM newly deleted) of one index, from its
        VERBOSE report; None if it did not report that index."""
        for name, total, deleted in INDEX_PAGES.findall(self.text):
            if name == index:
                return int(total), int(deleted)
        return None

    def __str__(self) -> str:
        return (
            f"VACUUM: {self.removed:,} removed, {self.remain:,} remain, "
            f"{self.not_removable:,} dead but not yet removable"
        )


def vacuum(db: Database) -> VacuumReport:
    """VACUUM (VERBOSE) jobs, read back from the server's own INFO report."""
    messages: list[str] = []
    with db.connection() as conn:
        conn.add_notice_handler(lambda diag: messages.append(diag.message_primary or ""))
        run(conn, "lab/vacuum_verbose_jobs")
    text = "\n".join(messages)
    match = TUPLES.search(text)
    if match is None:
        raise RuntimeError(f"VACUUM (VERBOSE) said nothing about tuples; it said:\n{text}")
    removed, remain, not_removable = (int(n) for n in match.groups())
    return VacuumReport(removed, remain, not_removable, text)


# --- what VACUUM does for an empty claim (guide #17) ----------------------------------


@dataclass(kw_only=True)
class VacuumEffect(Result):
    """An empty claim before and after VACUUM, with pgstattuple's exact counts
    around it where the server ships them; the guess is the buffers the claim
    reads before VACUUM."""

    before: ClaimCost
    vacuum: VacuumReport
    after: ClaimCost
    exact_before: ExactCounts
    exact_after: ExactCounts
    guide: GuideFigure = field(default_factory=lambda: figure(17))

    def comparison(self) -> list[Comparison]:
        g = self.guide.values
        return [
            (
                "empty claim right after the drain, buffers",
                self.guess_cell,
                self.before.buffers,
                f"{g['buffers_pg16']} (PG 16), {g['buffers_pg18']} (PG 18)",
            ),
            ("  its time, ms", None, self.before.ms, None),
            ("empty claim after VACUUM, buffers", None, self.after.buffers, g["after_vacuum"]),
            ("  its time, ms", None, self.after.ms, None),
        ]

    def report(self) -> list[str]:
        return [
            f"empty claim: {self.before.buffers:,} buffers before VACUUM "
            f"(your guess: {guess_text(self.guess)}), {self.after.buffers:,} after",
            note(f"  {self.vacuum}"),  # what VACUUM removed: the table has the claims only
            *self.footer(),
        ]


def vacuum_effect(db: Database, *, guess: float | None = None) -> VacuumEffect:
    """On a drained queue: an empty claim, pgstattuple's counts, VACUUM
    (VERBOSE), then the empty claim and the counts again."""
    before = empty_claim(db)
    measurements.record(measurements.DRAINED_BUFFERS, before.buffers)  # lesson 12 quotes it
    exact_before = exact_counts(db)
    report = vacuum(db)
    after = empty_claim(db)
    return finish(
        VacuumEffect,
        db,
        before=before,
        vacuum=report,
        after=after,
        exact_before=exact_before,
        exact_after=exact_counts(db),
        guess=guess,
    )


# --- the idle transaction (guide #18) -------------------------------------------


class IdleTransaction:
    """A session that opens a REPEATABLE READ transaction, runs one SELECT,
    and then sits idle: its snapshot stays until the transaction ends (at
    READ COMMITTED, `isolation`, it is dropped when the SELECT ends).
    `timeout` (such as "1s") sets idle_in_transaction_session_timeout first.
    `read_job`, a job's id, has it also read that job by id after the SELECT:
    at READ COMMITTED it then holds no snapshot, yet keeps its lock on `jobs`
    (ACCESS SHARE, on the table and every index) until it ends. The session
    is a sessions.Session, named IDLE_NAME, so its timeline records what it ran."""

    def __init__(
        self,
        db: Database,
        *,
        timeout: str | None = None,
        isolation: psycopg.IsolationLevel = psycopg.IsolationLevel.REPEATABLE_READ,
        read_job: int | None = None,
    ):
        self.db, self.timeout, self.isolation, self.read_job = db, timeout, isolation, read_job
        self.session: Session | None = None
        self.pid: int | None = None

    @property
    def is_open(self) -> bool:
        return self.session is not None and not self.session.closed and not self.session.conn.closed

    def open(self) -> int:
        """Open it (once); the session's pid."""
        if self.is_open and self.pid is not None:
            return self.pid
        session = Session(self.db, IDLE_SESSION, prefix=IDLE_PREFIX)
        # set before any command is queued, while the session's thread waits for one
        session.conn.isolation_level = self.isolation
        if self.timeout is not None:
            session.run("lab/set_idle_timeout", {"timeout": self.timeout})  # committed: lasts the session
        session.begin()  # the single SELECT: the snapshot is taken here
        if self.read_job is not None:
            session.run("lab/job_row", {"id": self.read_job})
            # a SELECT sent with parameters keeps its unnamed portal, and the portal's snapshot,
            # until the next statement (docs, "Extended Query"): a plain one leaves only the lock
            session.run("lab/open_transaction")
        session.wait_done()
        failed = next((step for step in session.timeline if step.failed), None)
        if failed is not None:
            session.close()
            raise RuntimeError(
                f"the idle transaction did not open: {failed.statement} failed with "
                f"{failed.sqlstate}: {failed.message}"
            )
        self.session, self.pid = session, session.pid
        return self.pid

    def close(self) -> None:
        """End it and close the session (the server rolls back: it changed nothing).
        Quiet when the server has already ended it (the timeout)."""
        session, self.session = self.session, None
        if session is None:
            return
        if session.in_transaction:
            # ROLLBACK first: the server answers it only once the snapshot is released, while a
            # closed connection's backend leaves on its own time, and a VACUUM run at once could
            # still find the old snapshot there
            session.rollback()
            try:
                session.wait_done()
            except psycopg.Error:
                pass  # the server had already ended the session (the timeout): nothing is held
        session.close()

    def next_statement_sqlstate(self) -> str | None:
        """Run one more statement in this session, as the forgetful client
        finally would: None if it ran, else the SQLSTATE of the server's error
        (25P03 once idle_in_transaction_session_timeout has ended the session)."""
        if self.session is None:
            raise BadInput("the idle transaction is not open")
        self.session.run("lab/open_transaction")
        self.session.wait_done()
        return self.session.timeline[-1].sqlstate

    def jobs_it_sees(self) -> int:
        """How many rows of jobs this transaction's snapshot sees (its own count(*),
        run inside it: the snapshot stays the one its first SELECT took)."""
        if self.session is None:
            raise BadInput("the idle transaction is not open")
        step = run_and_wait(self.session, "lab/count_jobs")
        if step.failed:
            raise RuntimeError(f"count(*) in the idle transaction failed: {step.sqlstate}: {step.message}")
        return int(step.rows[0][0])

    def alive(self) -> bool:
        """Whether the server still has this session (asked from another one)."""
        if self.pid is None:
            return False
        with self.db.connection() as conn:
            return run_one(conn, "lab/session_alive", {"pid": self.pid})[0]


@dataclass(frozen=True)
class QuietIdle:
    """An idle READ COMMITTED transaction that has only read, through a drain and a VACUUM."""

    state: str  # as pg_stat_activity shows it: "idle in transaction"
    listed_as_holder: bool  # whether the guide's activity query lists it
    vacuum: VacuumReport  # VACUUM while it stayed open


def read_committed_idle(db: Database, *, jobs: int = 1_000) -> QuietIdle:
    """Open an idle READ COMMITTED transaction after one SELECT, drain `jobs` jobs,
    and VACUUM while it stays open: it holds no snapshot and no transaction ID,
    so it holds nothing back, idle in transaction though it is."""
    checks.whole_number("jobs", jobs, *LIMITS["jobs"])
    prepare(db, jobs)
    idle = IdleTransaction(db, isolation=psycopg.IsolationLevel.READ_COMMITTED)
    pid = idle.open()
    try:
        drain(db, jobs=jobs, prepared=True)
        report = vacuum(db)
        with db.connection() as conn:
            state = run_one(conn, "lab/session_state", {"pid": pid})[0]
        listed = any(row["pid"] == pid for row in holders(db))
    finally:
        idle.close()
    return QuietIdle(state, listed, report)


def holders(db: Database) -> list[dict]:
    """The course's activity query (sql/stats_sessions.sql) from `db`: what
    holds back its cleanup, oldest horizon first. A transaction ID is listed
    from any database (reach 'every database'), a snapshot alone from this
    one only, and a logical slot's catalog_xmin as 'system catalogs only'."""
    with db.connection(row_factory=dict_row) as conn:
        return run(conn, "stats_sessions").fetchall()


# --- pgstattuple's exact view ---------------------------------------------------


@dataclass(frozen=True)
class ExactCounts:
    available: bool
    reason: str
    table_bytes: int = 0
    live: int = 0
    dead: int = 0
    dead_percent: float = 0.0
    free_percent: float = 0.0


def contrib_extension(conn: psycopg.Connection, name: str) -> str | None:
    """Install the contrib extension `name` here if the server ships it
    (lab/NAME_available.sql, lab/create_NAME.sql): None once it is installed,
    else the reason it cannot be."""
    available, installed = run_one(conn, f"lab/{name}_available")
    if not available:
        return f"this server does not ship the {name} extension (contrib)"
    if not installed:
        try:
            run(conn, f"lab/create_{name}")
        except psycopg.errors.InsufficientPrivilege:
            return f"{name} is shipped, but this role may not install it (it needs a superuser)"
    return None


def exact_counts(db: Database) -> ExactCounts:
    """pgstattuple('jobs'), installing the extension if the server ships it;
    otherwise available=False with the reason."""
    with db.connection() as conn:
        missing = contrib_extension(conn, "pgstattuple")
        if missing is not None:
            return ExactCounts(False, missing)
        size, live, dead, dead_pct, _, free_pct = run_one(conn, "lab/pgstattuple_jobs")
    return ExactCounts(True, "pgstattuple is installed", size, live, dead, dead_pct, free_pct)


# --- the lab: drain, VACUUM and measure, with or without the idle transaction ----


@dataclass(frozen=True)
class DrainStep:
    action: str  # "drain" or "vacuum"
    transaction_open: bool
    claim: ClaimCost
    drain: DrainResult | None = None
    vacuum: VacuumReport | None = None

    @property
    def label(self) -> str:
        state = "transaction open" if self.transaction_open else "no transaction"
        return f"after {self.action}, {state}"


@dataclass(kw_only=True)
class HeldBack(Result):
    """What the lab's steps measured so far, beside guide #18; the guess is
    the buffers an empty claim reads after VACUUM with the transaction open."""

    steps: list[DrainStep]
    guide: GuideFigure = field(default_factory=lambda: figure(18))

    def last(self, action: str, transaction_open: bool) -> DrainStep | None:
        """The latest step of this kind, or None."""
        return next(
            (s for s in reversed(self.steps) if (s.action, s.transaction_open) == (action, transaction_open)),
            None,
        )

    def comparison(self) -> list[Comparison]:
        g = self.guide.values
        held, freed = self.last("vacuum", True), self.last("vacuum", False)
        return [
            (
                "VACUUM, transaction open: dead but not yet removable",
                None,
                held and held.vacuum and held.vacuum.not_removable,
                g["dead"],
            ),
            ("then an empty claim, buffers", self.guess_cell, held and held.claim.buffers, g["buffers"]),
            (
                "VACUUM once it ended, then an empty claim, buffers",
                None,
                freed and freed.claim.buffers,
                g["after_buffers"],
            ),
        ]

    def summary(self) -> str:
        lines = [f"the idle-transaction lab, {tables.count(len(self.steps), 'step')}"]
        lines += [
            f"  {n}. {s.label}: empty claim {s.claim.buffers:,} buffers" for n, s in enumerate(self.steps, 1)
        ]
        return "\n".join(lines + self.footer())


@dataclass
class BloatLab:
    """The guide's experiment #18, step by step: open (or end) the idle
    transaction, drain, VACUUM; after each drain or VACUUM an empty claim is
    measured and kept in `steps`, so the chart shows what the learner did.
    `report(guess)` is the result so far."""

    db: Database
    jobs: int = 100_000
    steps: list[DrainStep] = field(default_factory=list)
    idle: IdleTransaction = field(init=False)
    guide: GuideFigure = field(default_factory=lambda: figure(18))

    def __post_init__(self) -> None:
        checks.whole_number("jobs", self.jobs, *LIMITS["jobs"])
        self.idle = IdleTransaction(self.db)

    @property
    def server_version(self) -> str:
        return self.db.server.version

    @property
    def transaction_open(self) -> bool:
        return self.idle.is_open

    def open_transaction(self) -> int:
        return self.idle.open()

    def end_transaction(self) -> None:
        self.idle.close()

    def drain(self, *, progress: Progress | None = None, stop: threading.Event | None = None) -> DrainStep:
        """Drain `jobs` fresh jobs, then measure an empty claim."""
        result = drain(self.db, jobs=self.jobs, progress=progress, stop=stop)
        step = DrainStep("drain", self.transaction_open, empty_claim(self.db), drain=result)
        self.steps.append(step)
        return step

    def vacuum(self) -> DrainStep:
        """VACUUM (VERBOSE) again, then measure an empty claim."""
        report = vacuum(self.db)
        step = DrainStep("vacuum", self.transaction_open, empty_claim(self.db), vacuum=report)
        self.steps.append(step)
        if step.transaction_open:  # lesson 12 quotes what the held snapshot costs a claim
            measurements.record(measurements.IDLE_SNAPSHOT_BUFFERS, step.claim.buffers)
        return step

    def report(self, guess: float | None = None) -> HeldBack:
        return finish(HeldBack, self.db, steps=list(self.steps), guess=guess)

    def chart(self) -> charts.Chart:
        """Buffers one empty claim read at each step, beside the guide's figure."""
        rows = [
            {"step": f"{n}. {s.label}", "buffers": s.claim.buffers, "claim, ms": round(s.claim.ms, 2)}
            for n, s in enumerate(self.steps, start=1)
        ]
        buffers = self.guide.values["buffers"]
        return guide_bars(
            rows,
            label="step",
            value="buffers",
            unit="buffers",
            guide=(f"guide #{self.guide.number}: {buffers:,} buffers", buffers),
            heading="What one empty claim reads, step by step",
            tooltip=["claim, ms:Q"],
        )

    def close(self) -> None:
        self.idle.close()

"""Lesson 08, indexes that stay small, measured on the live server:

- index_sizes: 100,000 done jobs and 100 ready, indexes rebuilt: the partial
  ready index against a full (status, run_at) index (guide #14), with
  distinct run_at values or all-equal keys (btree deduplication);
- drained_index: the ready index after 100,000 queued jobs drain, after
  VACUUM, and after REINDEX INDEX CONCURRENTLY (guide #15);
- read_plans: the claim's locking read with the literal 'ready' against
  status = $1 under a generic plan: plans and buffers (guide #16);
- reap_index_plan: the reaper's statement uses its own partial index.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import psycopg

from .. import charts, checks, measurements
from ..databases import Database
from ..guide import GuideFigure, figure
from ..statements import explain, run, run_one
from . import bloat
from .results import Comparison, Progress, Result, finish, guess_text, guide_bars, note

READY_INDEX, RUNNING_INDEX, FULL_INDEX = "jobs_ready_idx", "jobs_running_idx", "jobs_status_run_at_idx"
# The index most people write first; lesson 08's exercise seeds the same statement.
FULL_INDEX_STATEMENT = "exercise/wrong/full_status_index"
LIMITS = {"done": (0, 1_000_000), "ready": (1, 100_000)}
AUTO_RUNS = 8  # runs of the prepared read in the default plan_cache_mode: past its five custom plans


def check_counts(done: int, ready: int) -> None:
    checks.whole_number("done", done, *LIMITS["done"])
    checks.whole_number("ready", ready, *LIMITS["ready"])


def sizes(db: Database) -> dict[str, int]:
    """Each index on jobs and its size in bytes."""
    with db.connection() as conn:
        return {name: size for name, size, _ in run(conn, "exercise/index_sizes").fetchall()}


def seed_history(
    db: Database, done: int, ready: int, *, distinct: bool = True, full_index: bool = False
) -> None:
    """An empty table, then `done` finished jobs and `ready` due ones, the
    full index too if asked, every index rebuilt, statistics fresh."""
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/autovacuum_off")
        if done:
            run(conn, "lab/seed_done_jobs", {"count": done, "distinct": distinct})
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": ready})
        run(conn, "lab/drop_full_index")
        if full_index:
            run(conn, FULL_INDEX_STATEMENT)
        run(conn, "lab/reindex_jobs")
        run(conn, "lab/analyze_jobs")


# --- partial against full (guide #14) ----------------------------------------------


@dataclass(kw_only=True)
class IndexSizes(Result):
    """Index sizes; the guess is how many times bigger the full index is."""

    done: int
    ready: int
    distinct: bool
    bytes: dict[str, int]
    guide: GuideFigure = field(default_factory=lambda: figure(14))

    def kb(self, index: str) -> float:
        return self.bytes[index] / 1024

    @property
    def ratio(self) -> float:
        return self.bytes[FULL_INDEX] / self.bytes[READY_INDEX]

    def comparison(self) -> list[Comparison]:
        g = self.guide.values
        return [
            ("partial ready index, kB", None, round(self.kb(READY_INDEX)), g["partial_kb"]),
            ("full (status, run_at) index, kB", None, round(self.kb(FULL_INDEX)), g["full_kb"]),
            (
                "full / partial, times",
                self.guess_cell,
                round(self.ratio),
                round(g["full_kb"] / g["partial_kb"]),
            ),
        ]

    def report(self) -> list[str]:
        keys = "distinct run_at values" if self.distinct else "all-equal (status, run_at) keys"
        shown = (READY_INDEX, FULL_INDEX)  # the table's two; the other indexes are notes
        return [
            note(f"{self.done:,} done + {self.ready:,} ready jobs, {keys}, indexes rebuilt"),
            *(
                line if name in shown else note(line)
                for name in sorted(self.bytes)
                for line in [f"  {name:<24} {self.kb(name):>8,.0f} kB"]
            ),
            f"  full / partial ready: {self.ratio:,.0f}x  (your guess: {guess_text(self.guess, 'x')})",
            *self.footer(),
        ]

    def chart(self) -> charts.Chart:
        """Each index's size, beside the guide's full index."""
        full_kb = self.guide.values["full_kb"]
        return guide_bars(
            [{"index": name, "size": self.kb(name)} for name in (READY_INDEX, RUNNING_INDEX, FULL_INDEX)],
            label="index",
            value="size",
            unit="kB",
            guide=(f"guide #{self.guide.number}, the full index: {full_kb:,} kB", full_kb),
            heading=f"Index sizes, {self.done:,} done + {self.ready} ready"
            + ("" if self.distinct else " (all-equal keys)"),
        )


def index_sizes(
    db: Database, *, done: int = 100_000, ready: int = 100, distinct: bool = True, guess: float | None = None
) -> IndexSizes:
    """`done` done and `ready` ready jobs, with the full (status, run_at) index beside
    the course's partial ones, every index rebuilt; their sizes. The guide's own data
    (distinct run_at values) also records the partial ready index's size for lesson 12."""
    check_counts(done, ready)
    seed_history(db, done, ready, distinct=distinct, full_index=True)
    result = finish(IndexSizes, db, done=done, ready=ready, distinct=distinct, bytes=sizes(db), guess=guess)
    if distinct and (done, ready) == (100_000, 100):
        measurements.record(measurements.PARTIAL_INDEX_KB, round(result.kb(READY_INDEX)))
    return result


# --- the index that does not shrink (guide #15) ------------------------------------


@dataclass(kw_only=True)
class DrainedIndex(Result):
    """The ready index through a drain; the guess is its size after the drain, in kB."""

    jobs: int
    seeded_kb: float
    after_drain_kb: float
    # None when Stop ended the drain: a queue not drained has no "after the drain" to
    # VACUUM and REINDEX, so those stages are not run (nor shown)
    after_vacuum_kb: float | None
    after_reindex_kb: float | None
    # the ready index's pages, and how many of them VACUUM newly deleted (its VERBOSE report):
    # emptied pages go back to the index's free space map, while the file keeps its size
    vacuum_index_pages: int = 0
    vacuum_pages_deleted: int = 0
    guide: GuideFigure = field(default_factory=lambda: figure(15))

    def comparison(self) -> list[Comparison]:
        rows: list[Comparison] = [
            (
                "ready index after the drain, kB" + (" (stopped part way)" if self.stopped else ""),
                self.guess_cell,
                round(self.after_drain_kb),
                self.guide.values["kb"],
            )
        ]
        if self.after_vacuum_kb is None or self.after_reindex_kb is None:
            return rows + [("VACUUM and REINDEX", None, "not run: Stop ended the drain first", None)]
        return rows + [
            ("after VACUUM, kB", None, round(self.after_vacuum_kb), "(not measured)"),
            ("after REINDEX INDEX CONCURRENTLY, kB", None, round(self.after_reindex_kb), "(not measured)"),
        ]

    def report(self) -> list[str]:
        head = [
            note(f"ready index, {self.jobs:,} queued jobs drained" + self.stopped_note),
            f"  with the jobs queued:         {self.seeded_kb:>8,.0f} kB",
            f"  after the drain:              {self.after_drain_kb:>8,.0f} kB"
            f"  (your guess: {guess_text(self.guess, ' kB')})",
        ]
        if self.after_vacuum_kb is None or self.after_reindex_kb is None:
            not_run = note("  VACUUM and REINDEX not run: Stop ended the drain first")
            return [*head, not_run, *self.footer()]
        return head + [
            note(
                f"  after VACUUM:                 {self.after_vacuum_kb:>8,.0f} kB"
                f"  ({self.vacuum_pages_deleted:,} of its {self.vacuum_index_pages:,} pages newly deleted)"
            ),
            f"  after REINDEX CONCURRENTLY:   {self.after_reindex_kb:>8,.0f} kB",
            *self.footer(),
        ]

    def chart(self) -> charts.Chart:
        """The ready index's size after the drain, VACUUM and REINDEX, beside the guide's
        (after a stopped drain, only the drain's bar, under a heading that says so)."""
        rows = [{"moment": "after the drain", "size": self.after_drain_kb}]
        if self.after_vacuum_kb is not None and self.after_reindex_kb is not None:
            rows += [
                {"moment": "after VACUUM", "size": self.after_vacuum_kb},
                {"moment": "after REINDEX CONCURRENTLY", "size": self.after_reindex_kb},
            ]
        kb = self.guide.values["kb"]
        return guide_bars(
            rows,
            label="moment",
            value="size",
            unit="kB",
            guide=(f"guide #{self.guide.number}: {kb:,} kB", kb),
            heading="The ready index, " + ("drain stopped part way" if self.stopped else "empty queue"),
        )


def drained_index(
    db: Database,
    *,
    jobs: int = 100_000,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> DrainedIndex:
    """Queue `jobs` jobs, drain them, then measure the ready index after the
    drain, after VACUUM, and after REINDEX INDEX CONCURRENTLY."""
    checks.whole_number("jobs", jobs, *bloat.LIMITS["jobs"])
    with db.connection() as conn:
        run(conn, "lab/drop_full_index")
    bloat.prepare(db, jobs)
    seeded = sizes(db)[READY_INDEX] / 1024
    result = bloat.drain(db, jobs=jobs, samples=10, progress=progress, stop=stop, prepared=True)
    after_drain = sizes(db)[READY_INDEX] / 1024
    after_vacuum = after_reindex = None
    pages = (0, 0)
    if not result.stopped:  # VACUUM and REINDEX come after a drain: a stopped one has neither
        pages = bloat.vacuum(db).index_pages(READY_INDEX) or (0, 0)
        after_vacuum = sizes(db)[READY_INDEX] / 1024
        with db.connection() as conn:
            run(conn, "reindex_ready")
        after_reindex = sizes(db)[READY_INDEX] / 1024
    return finish(
        DrainedIndex,
        db,
        jobs=jobs,
        seeded_kb=seeded,
        after_drain_kb=after_drain,
        after_vacuum_kb=after_vacuum,
        after_reindex_kb=after_reindex,
        vacuum_index_pages=pages[0],
        vacuum_pages_deleted=pages[1],
        stopped=result.stopped,
        guess=guess,
    )


# --- what deduplication did: posting lists, read with pageinspect -----------------


@dataclass(frozen=True)
class PostingLists:
    """A btree index's leaf items, as pageinspect reads them (available=False, with
    the reason, on a server that does not ship pageinspect or may not install it)."""

    available: bool
    reason: str
    posting_lists: int = 0  # items holding one key and a list of row pointers
    pointers_each: float = 0.0  # row pointers per posting list, on average
    leaf_items: int = 0  # every item on the leaf pages, posting lists included
    row_pointers: int = 0  # row pointers in all: one per indexed row version


def posting_lists(db: Database, index: str) -> PostingLists:
    """Count the posting lists in `index` and the row pointers each holds."""
    with db.connection() as conn:
        missing = bloat.contrib_extension(conn, "pageinspect")
        if missing is not None:
            return PostingLists(False, missing)
        lists, each, items, pointers = run_one(conn, "lab/posting_lists", {"index": index})
    return PostingLists(True, "pageinspect is installed", lists, each, items, pointers)


# --- REINDEX: what the plain one blocks, and what stalls the concurrent one ------------


@dataclass(frozen=True)
class ConcurrentRun:
    """REINDEX INDEX CONCURRENTLY beside one idle session, under a lock_timeout."""

    beside: str  # the idle session, in words
    sqlstate: str | None  # how it ended (None: it finished)
    waited_s: float
    invalid_left: list[str]  # invalid indexes on jobs afterwards (then dropped by the lab)

    def __str__(self) -> str:
        ended = (
            f"gave up after {self.waited_s:.1f} s, SQLSTATE {self.sqlstate}" if self.sqlstate else "finished"
        )
        left = ", ".join(self.invalid_left) or "none"
        return f"beside {self.beside}: {ended}; invalid indexes left: {left}"


@dataclass(kw_only=True)
class ReindexLocks(Result):
    """What a plain REINDEX blocks, and which idle sessions stall REINDEX
    CONCURRENTLY (sql/reindex_ready.sql) under a lock_timeout."""

    lock_timeout: str
    # a read of one job by id, which never uses jobs_ready_idx, while a plain REINDEX of that
    # index is open in another transaction: the SQLSTATE it ended with (None: it ran)
    read_by_id_during_plain: str | None
    # REINDEX CONCURRENTLY beside each idle session of IDLE_KINDS, by its key
    concurrently: dict[str, ConcurrentRun]
    guide: GuideFigure = field(default_factory=lambda: figure(15))

    def summary(self) -> str:
        return "\n".join(
            [
                f"lock_timeout {self.lock_timeout} on the waiting sessions:",
                "  a read of one job by id, during a plain REINDEX INDEX jobs_ready_idx: "
                + (
                    f"gave up waiting, SQLSTATE {self.read_by_id_during_plain}"
                    if self.read_by_id_during_plain
                    else "ran"
                ),
                "  REINDEX INDEX CONCURRENTLY ...",
            ]
            + [f"    {run}" for run in self.concurrently.values()]
            + self.footer()
        )


LOCK_TIMEOUT = "1s"

# The idle sessions REINDEX CONCURRENTLY runs beside: (words, isolation, job read by id or None).
# What stalls it is an older snapshot in this database (it waits for those before it swaps the
# indexes) or any lock on jobs (it waits for every locker before it marks the old index dead);
# an idle READ COMMITTED transaction holds no snapshot but keeps the locks of what it read.
IDLE_KINDS: dict[str, tuple[str, psycopg.IsolationLevel, int | None]] = {
    "snapshot": (
        "an idle REPEATABLE READ transaction that ran SELECT now() (a snapshot)",
        psycopg.IsolationLevel.REPEATABLE_READ,
        None,
    ),
    "lock": (
        "an idle READ COMMITTED transaction that read one job by id (a lock on jobs)",
        psycopg.IsolationLevel.READ_COMMITTED,
        1,
    ),
    "nothing": (
        "an idle READ COMMITTED transaction that ran SELECT now() (neither)",
        psycopg.IsolationLevel.READ_COMMITTED,
        None,
    ),
}


def sqlstate_of(conn: psycopg.Connection, name: str) -> str | None:
    """Run one named statement: None if it ran, else the server's SQLSTATE."""
    try:
        run(conn, name)
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


def reindex_locks(db: Database, *, jobs: int = 1_000) -> ReindexLocks:
    """Hold a plain REINDEX of the ready index open in one transaction and read
    one job by id from another session; then run REINDEX CONCURRENTLY
    (sql/reindex_ready.sql) under a lock_timeout beside each idle session of
    IDLE_KINDS in turn, list the invalid indexes each run leaves, and drop them."""
    checks.whole_number("jobs", jobs, 1, 100_000)
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": jobs})
    with db.connection(autocommit=False) as holder, db.connection() as other:
        run(other, "lab/set_lock_timeout", {"timeout": LOCK_TIMEOUT})
        run(holder, "teaching/reindex_ready_plain")  # its lock stays until the rollback
        try:
            read = sqlstate_of_read(other)
        finally:
            holder.rollback()
        concurrently = {key: reindex_beside(db, other, *kind) for key, kind in IDLE_KINDS.items()}
    return finish(
        ReindexLocks,
        db,
        lock_timeout=LOCK_TIMEOUT,
        read_by_id_during_plain=read,
        concurrently=concurrently,
    )


def reindex_beside(
    db: Database,
    conn: psycopg.Connection,
    beside: str,
    isolation: psycopg.IsolationLevel,
    read_job: int | None,
) -> ConcurrentRun:
    """REINDEX CONCURRENTLY on `conn` while one idle transaction is open; then
    drop whatever invalid index it left, so the next run starts clean."""
    idle = bloat.IdleTransaction(db, isolation=isolation, read_job=read_job)
    idle.open()
    try:
        began = time.monotonic()
        sqlstate = sqlstate_of(conn, "reindex_ready")
        waited = time.monotonic() - began
    finally:
        idle.close()
    invalid = [name for (name,) in run(conn, "lab/invalid_indexes").fetchall()]
    for name in invalid:
        run(conn, "lab/drop_index", idents={"name": name})
    return ConcurrentRun(beside, sqlstate, waited, invalid)


def sqlstate_of_read(conn: psycopg.Connection) -> str | None:
    """Read job 1 by id (the primary key, never the ready index): None if it ran."""
    try:
        run(conn, "lab/job_row", {"id": 1}).fetchall()
    except psycopg.Error as exc:
        return exc.sqlstate
    return None


# --- plans and buffers (guide #16, and the literal 'ready') -------------------------


@dataclass(frozen=True)
class PlanCost:
    """One run of a read under EXPLAIN (ANALYZE, BUFFERS)."""

    buffers: int
    ms: float
    shape: str  # one line per plan node, indented, with the index it used

    @property
    def indexes(self) -> set[str]:
        return {word for line in self.shape.splitlines() for word in line.split() if word.startswith("jobs_")}


def shape(node: dict, depth: int = 0) -> str:
    """A plan node and its children as indented lines: 'Index Scan using jobs_ready_idx'."""
    text = node["Node Type"]
    if "Index Name" in node:
        text += f" using {node['Index Name']}"
    elif "Relation Name" in node:
        text += f" on {node['Relation Name']}"
    lines = ["  " * depth + text]
    lines += [shape(child, depth + 1) for child in node.get("Plans", [])]
    return "\n".join(lines)


def plan_cost(explained: list) -> PlanCost:
    top = explained[0]["Plan"]
    return PlanCost(
        top["Shared Hit Blocks"] + top["Shared Read Blocks"], explained[0]["Execution Time"], shape(top)
    )


@dataclass(kw_only=True)
class ReadPlans(Result):
    """The claim's read, literal and parameterised; the guess is the buffers
    the read with status = $1 touches under a generic plan."""

    done: int
    ready: int
    literal: PlanCost
    generic: PlanCost
    guide: GuideFigure = field(default_factory=lambda: figure(16))
    # the same prepared read in the default plan_cache_mode (auto), after AUTO_RUNS runs: the
    # server compares the generic plan's estimate with the custom plans' and keeps the cheaper
    auto: PlanCost | None = None

    def comparison(self) -> list[Comparison]:
        return [
            ("literal 'ready': buffers", None, self.literal.buffers, None),
            ("status = $1, generic plan: buffers", self.guess_cell, self.generic.buffers, None),
        ]

    def report(self) -> list[str]:
        # every line bar the server's: each plan's time and shape are not in the table
        return [
            note(line)
            for line in [
                f"the claim's locking read, {self.done:,} done + {self.ready} ready jobs",
                f"  status = 'ready' (literal): {self.literal.buffers:,} buffers, {self.literal.ms:.2f} ms",
                *("    " + line for line in self.literal.shape.splitlines()),
                *(
                    [f"  status = $1, default mode, run {AUTO_RUNS}: {self.auto.buffers:,} buffers (custom)"]
                    if self.auto and READY_INDEX in self.auto.indexes
                    else []
                ),
                f"  status = $1, generic plan:  {self.generic.buffers:,} buffers, {self.generic.ms:.2f} ms"
                f"  (your guess: {guess_text(self.guess)})",
                *("    " + line for line in self.generic.shape.splitlines()),
            ]
        ] + self.footer()


def read_plans(
    db: Database, *, done: int = 100_000, ready: int = 100, guess: float | None = None
) -> ReadPlans:
    """The locking read with the literal 'ready', then the same read prepared
    with status = $1: run AUTO_RUNS times in the default plan_cache_mode, then
    under plan_cache_mode = force_generic_plan."""
    check_counts(done, ready)
    seed_history(db, done, ready)
    with db.connection() as conn:
        literal = plan_cost(run_one(conn, "lab/explain_analyze_read")[0])
        run(conn, "teaching/prepare_read_by_status")
        for _ in range(AUTO_RUNS):  # past the five custom plans, in the default mode
            auto = plan_cost(run_one(conn, "lab/explain_read_by_status")[0])
        run(conn, "lab/force_generic_plan")
        generic = plan_cost(run_one(conn, "lab/explain_read_by_status")[0])
    return finish(
        ReadPlans, db, done=done, ready=ready, literal=literal, generic=generic, auto=auto, guess=guess
    )


def generic_plan_with_full_index(db: Database) -> PlanCost:
    """The same generic-plan read on the table as it is, with the full
    (status, run_at) index added for the run and dropped afterwards: the
    index a generic plan can use, because it covers every status."""
    with db.connection() as conn:
        run(conn, "lab/drop_full_index")
        run(conn, FULL_INDEX_STATEMENT)
        try:
            run(conn, "lab/analyze_jobs")
            run(conn, "teaching/prepare_read_by_status")
            run(conn, "lab/force_generic_plan")
            return plan_cost(run_one(conn, "lab/explain_read_by_status")[0])
        finally:
            run(conn, "lab/drop_full_index")


def reap_index_plan(db: Database) -> str:
    """The reaper's plan on the table as it is (EXPLAIN only: nothing is reaped)."""
    with db.connection() as conn:
        return "\n".join(explain(conn, "reap"))

"""What the course's claim and completion cost on the learner's server, per batch
size, in the units an estimate uses: commits per second, WAL bytes per second
and per job, and bytes kept per job (lesson 12).

For each batch size: seed `jobs` due jobs (measuring the WAL the insert wrote),
then one session claims a batch and completes it in one fenced statement until
nothing is due, while the server's WAL position (`pg_current_wal_lsn`) and the
database's `xact_commit` are read before and after. One session is a floor, not
the server's ceiling: more sessions commit more a second until the CPUs or the
disk give out. What a commit costs depends on `synchronous_commit` and `fsync`,
so the result names both. The WAL position is server-wide: anything else
writing on this server during the run is counted too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .. import checks, queue
from ..databases import Database
from ..errors import BadInput
from ..guide import GuideFigure, figure
from ..statements import run
from .results import Comparison, Progress, Result, finish, guess_text, tell

BATCHES = (1, 10, 20, 50)  # the course's scenarios claim in batches of 10, 20 and 50


@dataclass(frozen=True)
class BatchRun:
    """One batch size's run: jobs drained, time, commits and WAL bytes."""

    batch: int
    jobs: int
    elapsed_s: float
    commits: int
    wal_bytes: int
    insert_wal_bytes: int

    @property
    def commits_per_s(self) -> float:
        return self.commits / self.elapsed_s

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.elapsed_s

    @property
    def wal_bytes_per_s(self) -> float:
        return self.wal_bytes / self.elapsed_s

    @property
    def wal_bytes_per_job(self) -> float:
        """WAL of one job's claim and completion."""
        return self.wal_bytes / self.jobs

    @property
    def insert_wal_bytes_per_job(self) -> float:
        """WAL of one job's insert (seeded in one statement, so a floor for one insert per order)."""
        return self.insert_wal_bytes / self.jobs

    def as_record(self) -> dict[str, float]:
        return {
            "batch": self.batch,
            "jobs": self.jobs,
            "elapsed_s": round(self.elapsed_s, 4),
            "commits": self.commits,
            "wal_bytes": self.wal_bytes,
            "insert_wal_bytes": self.insert_wal_bytes,
            "commits_per_s": round(self.commits_per_s, 1),
            "wal_bytes_per_s": round(self.wal_bytes_per_s),
            "wal_bytes_per_job": round(self.wal_bytes_per_job, 1),
            "insert_wal_bytes_per_job": round(self.insert_wal_bytes_per_job, 1),
        }


@dataclass(kw_only=True)
class Capacity(Result):
    """The runs, one per batch size, with the settings that decide a commit's cost.
    The guess is the learner's commits a second at batch 1."""

    runs: list[BatchRun]
    bytes_per_job: float
    synchronous_commit: str
    fsync: str
    sessions: int = 1
    guide: GuideFigure = field(default_factory=lambda: figure(19))

    def at(self, batch: int) -> BatchRun:
        for r in self.runs:
            if r.batch == batch:
                return r
        raise KeyError(batch)

    def as_record(self) -> dict[str, Any]:
        """What lesson 12 stores in the measurement store."""
        return {
            "runs": {str(r.batch): r.as_record() for r in self.runs},
            "bytes_per_job": round(self.bytes_per_job, 1),
            "synchronous_commit": self.synchronous_commit,
            "fsync": self.fsync,
            "sessions": self.sessions,
            "server_version": self.server_version,
        }

    def comparison(self) -> list[Comparison]:
        rows: list[Comparison] = [("commits/s at batch 1", self.guess_cell, self.runs[0].commits_per_s, None)]
        rows += [(f"commits/s at batch {r.batch}", None, r.commits_per_s, None) for r in self.runs[1:]]
        return rows

    def lines(self) -> list[str]:
        out = [
            f"one session, synchronous_commit={self.synchronous_commit}, fsync={self.fsync}; "
            f"{self.bytes_per_job:,.0f} bytes kept per job (table and indexes)"
        ]
        for r in self.runs:
            out.append(
                f"batch {r.batch:>3}: {r.jobs:,} jobs in {r.elapsed_s:.2f} s = {r.jobs_per_s:,.0f} jobs/s, "
                f"{r.commits:,} commits ({r.commits_per_s:,.0f}/s), "
                f"{r.wal_bytes_per_job:,.0f} WAL bytes a job ({r.wal_bytes_per_s / 1e6:,.2f} MB/s), "
                f"insert {r.insert_wal_bytes_per_job:,.0f} WAL bytes a job"
            )
        return out

    def summary(self) -> str:
        return "\n".join(
            [*self.lines(), f"your guess: {guess_text(self.guess, ' commits/s at batch 1')}", *self.footer()]
        )


def read_counters(conn: Any) -> dict[str, Any]:
    run(conn, "lab/flush_stats")  # this session's commits reach pg_stat_database now
    row = run(conn, "lab/wal_and_commits").fetchone()
    assert row is not None  # one row, always
    return {"wal_bytes": row[0], "commits": row[1], "synchronous_commit": row[2], "fsync": row[3]}


def one_batch(conn: Any, batch: int, jobs: int, stop: threading.Event) -> tuple[BatchRun, float, dict]:
    """Seed `jobs`, drain them at `batch`; the run, the bytes kept per job, and the settings."""
    run(conn, "lab/reset_jobs")
    before_insert = read_counters(conn)
    run(conn, "lab/seed_jobs", {"kind": "capacity", "count": jobs})
    after_insert = read_counters(conn)
    run(conn, "lab/vacuum_jobs")
    size, rows = run(conn, "lab/jobs_table_bytes").fetchone() or (0, 0)
    before = read_counters(conn)
    began = time.perf_counter()
    done = 0
    while not stop.is_set() and (held := queue.claim(conn, batch=batch)):
        done += sum(queue.complete_many(conn, held))
    elapsed = time.perf_counter() - began
    after = read_counters(conn)
    result = BatchRun(
        batch=batch,
        jobs=done,
        elapsed_s=elapsed,
        commits=after["commits"] - before["commits"],
        wal_bytes=after["wal_bytes"] - before["wal_bytes"],
        insert_wal_bytes=after_insert["wal_bytes"] - before_insert["wal_bytes"],
    )
    return result, size / max(rows, 1), after


def measure(
    db: Database,
    *,
    batches: tuple[int, ...] = BATCHES,
    jobs: int = 500,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> Capacity:
    """Measure commits/s and WAL bytes/s of the course's claim and batched
    completion at each batch size, one session, `jobs` empty jobs each (or
    100 batches, if that is more)."""
    checks.whole_number("jobs", jobs, 100, 100_000)
    if not batches or isinstance(batches, (str, bytes)):
        raise BadInput(f"batches must be a list of batch sizes, got {batches!r}")
    batches = tuple(sorted({checks.whole_number("batch", b, 1, queue.MAX_BATCH) for b in batches}))
    stop = stop or threading.Event()
    runs: list[BatchRun] = []
    bytes_per_job, settings = 0.0, dict[str, Any]()
    with db.connection() as conn:
        for n, batch in enumerate(batches):
            # at least 100 batches each, so a big batch's run is not over in a few milliseconds
            result, per_job, settings = one_batch(conn, batch, max(jobs, 100 * batch), stop)
            runs.append(result)
            bytes_per_job = bytes_per_job or per_job
            tell(progress, n + 1, len(batches))
        run(conn, "lab/reset_jobs")
    return finish(
        Capacity,
        db,
        runs=runs,
        bytes_per_job=bytes_per_job,
        synchronous_commit=settings.get("synchronous_commit", "?"),
        fsync=settings.get("fsync", "?"),
        guess=guess,
        stopped=stop,
    )

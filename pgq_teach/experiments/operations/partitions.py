"""Lesson 10: a day of history dropped as a partition against the same day
deleted row by row: dead rows left, time, bytes on disk, and the locks the DROP
holds on the parent."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import date, timedelta

from ... import checks, tables
from ...databases import Database
from ...guide import GuideFigure
from ...statements import run, run_one
from ..results import Comparison, Progress, Result, finish, guess_text, tell
from .cleanup import dead_rows, wait_for_dead
from .rules import GUIDE_PARTITION


@dataclass(kw_only=True)
class PartitionComparison(Result):
    rows_per_day: int
    delete_s: float
    drop_s: float
    dead_after_delete: int
    dead_after_drop: int  # dead rows across all of history after the DROP, less before it
    partitions_left: list[str]
    # bytes on disk: the deleted day's before and just after its DELETE, the dropped day's just
    # before its DROP (lab/history_bytes.sql), and the whole database's just before the DROP and
    # just after it committed (lab/database_bytes.sql)
    deleted_day_bytes: tuple[int, int] = (0, 0)
    dropped_day_bytes: int = 0
    database_bytes_around_drop: tuple[int, int] = (0, 0)
    drop_locks_on_parent: list[str] = field(default_factory=list)  # what the DROP held on jobs_history
    guess: float | None = None  # dead rows left by dropping a day
    guide: GuideFigure = GUIDE_PARTITION

    def comparison(self) -> list[Comparison]:
        return [
            ("dead rows left, DROP the day's table", self.guess_cell, self.dead_after_drop, "none to VACUUM"),
            ("dead rows left, DELETE the day's rows", None, self.dead_after_delete, None),
            ("DELETE the day's rows, ms", None, self.delete_s * 1000, None),
            ("DROP the day's table, ms", None, self.drop_s * 1000, None),
        ]

    def summary(self) -> str:
        return "\n".join(
            [
                f"one day of history, {self.rows_per_day:,} rows, removed two ways:",
                (
                    f"  DELETE the day's rows : {self.delete_s * 1000:8.1f} ms, "
                    f"dead rows left {self.dead_after_delete:,}"
                ),
                (
                    f"  DROP the day's table  : {self.drop_s * 1000:8.1f} ms, "
                    f"dead rows left {self.dead_after_drop:,} (your guess: {guess_text(self.guess)})"
                ),
                (
                    f"  on disk: the deleted day {tables.size(self.deleted_day_bytes[0])} before its DELETE, "
                    f"{tables.size(self.deleted_day_bytes[1])} after; the database "
                    f"{tables.size(self.database_bytes_around_drop[0])} before the DROP, "
                    f"{tables.size(self.database_bytes_around_drop[1])} once it committed "
                    f"(the dropped day was {tables.size(self.dropped_day_bytes)})"
                ),
                f"  until it commits, the DROP holds on jobs_history: {', '.join(self.drop_locks_on_parent)}",
                f"  partitions left: {', '.join(self.partitions_left)}",
            ]
            + self.footer()
        )


def total_dead(conn) -> int:
    """Dead row versions across every table of jobs_history, as the statistics report them."""
    return sum(dead for _, dead in dead_rows(conn, "jobs_history").values())


def wait_for_total_dead(conn, at_least: int, timeout: float = 1.0) -> int:
    """total_dead, waiting up to `timeout` s for it to reach `at_least` (statistics lag)."""
    deadline = time.monotonic() + timeout
    while (dead := total_dead(conn)) < at_least and time.monotonic() < deadline:
        time.sleep(0.1)
    return dead


def history_bytes(conn) -> dict[str, int]:
    """{table: bytes on disk} for jobs_history and each of its partitions."""
    return dict(run(conn, "lab/history_bytes").fetchall())


def partition_name(day: date) -> str:
    return f"jobs_history_{day:%Y%m%d}"


def partition_drop_vs_delete(
    db: Database,
    *,
    rows_per_day: int = 50_000,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> PartitionComparison:
    """Three days of history in day partitions; delete day 1's rows, drop day 2's
    partition. Short enough that `stop` is not checked; it is taken for the panel."""
    checks.whole_number("rows_per_day", rows_per_day, 1_000, 1_000_000)
    days = [date(2026, 11, 1) + timedelta(days=n) for n in range(3)]
    with db.connection() as conn:
        run(conn, "lab/history_drop")
        run(conn, "lab/history_create")
        for day in days:
            run(
                conn,
                "lab/history_partition",
                {"day": day.isoformat(), "next_day": (day + timedelta(days=1)).isoformat()},
                idents={"name": partition_name(day)},
            )
            run(conn, "lab/history_fill_day", {"day": day.isoformat(), "count": rows_per_day})
        tell(progress, 1, 3)
        run(conn, "lab/flush_stats")
        deleted_day, dropped_day = days[0], days[1]
        deleted_before = history_bytes(conn)[partition_name(deleted_day)]
        began = time.perf_counter()
        run(
            conn,
            "lab/history_delete_day",
            {"day": deleted_day.isoformat(), "next_day": (deleted_day + timedelta(days=1)).isoformat()},
        )
        delete_s = time.perf_counter() - began
        deleted_after = history_bytes(conn)[partition_name(deleted_day)]  # before any VACUUM could come
        run(conn, "lab/flush_stats")
        dead_deleted = wait_for_dead(conn, partition_name(deleted_day), rows_per_day)
        dead_before_drop = total_dead(conn)
        tell(progress, 2, 3)
        dropped_bytes = history_bytes(conn)[partition_name(dropped_day)]
        database_before = run_one(conn, "lab/database_bytes")[0]
        began = time.perf_counter()
        with conn.transaction(), db.connection() as other:
            run(conn, "lab/history_drop_day", idents={"name": partition_name(dropped_day)})
            drop_s = time.perf_counter() - began
            # asked from another session before the DROP commits: the parent's lock it holds
            held = run(other, "lab/locks_held_on", {"pid": conn.info.backend_pid, "table": "jobs_history"})
            parent_locks = [mode for (mode,) in held.fetchall()]
        database_after = run_one(conn, "lab/database_bytes")[0]  # committed: the file is cut to zero
        run(conn, "lab/flush_stats")
        # dead rows across all of history, after the drop less before it: what the drop left
        # behind (a DELETE of the same day would add rows_per_day here; wait long enough to see them)
        dead_added_by_drop = wait_for_total_dead(conn, dead_before_drop + 1) - dead_before_drop
        history = dead_rows(conn, "jobs_history")
        tell(progress, 3, 3)
    left = sorted(t for t in history if t != "jobs_history")
    return finish(
        PartitionComparison,
        db,
        rows_per_day=rows_per_day,
        delete_s=delete_s,
        drop_s=drop_s,
        dead_after_delete=dead_deleted,
        dead_after_drop=dead_added_by_drop,
        partitions_left=left,
        drop_locks_on_parent=parent_locks,
        deleted_day_bytes=(deleted_before, deleted_after),
        dropped_day_bytes=dropped_bytes,
        database_bytes_around_drop=(database_before, database_after),
        guess=guess,
    )

"""A double click (lesson 10c): two sessions enqueue the same order's `order_created` job with
the same unique key at once, while the first one's transaction is still open; then the
order's `order_paid` job with the same key; then the created job is finished and enqueued
once more.

What it asks the server: whether the second session waited on the first's uncommitted insert
(pg_stat_activity, sql/exercise/session_waits_on_lock.sql), the order's jobs afterwards
(sql/lab/jobs_for_order.sql), and the definition of the partial unique index that holds the
key (sql/exercise/index_sizes.sql). The knob that makes the result: `order_id`, which is the
key (`order-<id>`); any order gives the same result.

The guide has no unique jobs (its enqueue adds a row every time); River, Oban, pg-boss and
Graphile Worker's answers are compared in docs/beyond-fifo.md.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from psycopg.rows import dict_row

from .. import checks, queue, seeding
from ..databases import Database
from ..guide import GuideFigure
from ..statements import run
from .results import Comparison, Progress, Result, advice, finish, note, tell

CREATED, PAID = "order_created", "order_paid"
INDEX = "jobs_live_unique_key_idx"  # sql/schema.sql
WAIT_FOR_BLOCK_S = 10.0  # how long the lab waits to see the second session blocked
GUIDE_NO_UNIQUE = advice("enqueue", "the enqueue adds a row every time; the guide has no unique jobs")


@dataclass(frozen=True)
class OrderJob:
    id: int
    kind: str
    status: str


@dataclass(kw_only=True)
class DoubleClickResult(Result):
    order_id: int
    unique_key: str
    first_id: int  # the first session's enqueue
    second_id: int  # the second session's, made while the first's insert was uncommitted
    second_waited: bool  # the server showed the second session waiting on a lock
    paid_id: int  # order_paid, same key, another kind
    again_id: int  # order_created again, after the first was finished
    jobs: list[OrderJob]  # the order's jobs at the end, from the server
    index_definition: str
    guide: GuideFigure = field(default_factory=lambda: GUIDE_NO_UNIQUE)

    def comparison(self) -> list[Comparison]:
        return [
            ("jobs made by the double click", self.guess_cell, self.created_live, "–"),
            (
                "the second click got the first's id",
                "–",
                "yes" if self.second_id == self.first_id else "no",
                "–",
            ),
            ("order_paid with the same key kept", "–", "yes" if self.paid_id != self.first_id else "no", "–"),
            (
                "a new job once the first was done",
                "–",
                "yes" if self.again_id != self.first_id else "no",
                "–",
            ),
        ]

    @property
    def created_live(self) -> int:
        """order_created jobs made by the two clicks: the first's, and the second's if it differed."""
        return len({self.first_id, self.second_id})

    def report(self) -> list[str]:
        waited = "waited for the first's commit" if self.second_waited else "did not wait"
        lines = [
            f"Two sessions enqueued {CREATED} with unique_key {self.unique_key!r} at once:"
            + self.stopped_note,
            f"  first session: job {self.first_id}; second session ({waited}): job {self.second_id}",
            f"  {PAID} with the same key: job {self.paid_id}",
            f"  {CREATED} again after job {self.first_id} was done: job {self.again_id}",
            "  the order's jobs now: " + ", ".join(f"{j.id} {j.kind} {j.status}" for j in self.jobs),
            f"  the key is held by: {self.index_definition}",
        ]
        # the two sessions' jobs are the table's first rows
        return [note(line) if n != 1 else line for n, line in enumerate(lines)] + self.footer()


def double_click(
    db: Database,
    *,
    order_id: int = 101,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> DoubleClickResult:
    """Two sessions enqueue one order's created job with one key at once; then its paid job;
    then, once the first is done, the created job again."""
    order_id = checks.whole_number("order_id", order_id, 1, 10**12)
    key, payload = f"order-{order_id}", {"order_id": order_id}
    with db.connect() as conn, db.connect() as first, db.connect() as second:
        seeding.reset_jobs(conn)
        got: dict[str, int] = {}
        errors: list[BaseException] = []

        def click_again() -> None:
            try:
                got["second"] = queue.enqueue(second, CREATED, payload, unique_key=key)
            except BaseException as e:  # raised again on the lab's thread below
                errors.append(e)

        with first.transaction():
            first_id = queue.enqueue(first, CREATED, payload, unique_key=key)
            clicker = threading.Thread(target=click_again, name="pgq-second-click")
            clicker.start()
            waited = _blocked(conn, second.info.backend_pid, clicker)
        # The first session's commit: the second's insert sees the key held, and returns its id.
        clicker.join()
        if errors:
            raise errors[0]
        tell(progress, 1, 3)
        paid_id = queue.enqueue(conn, PAID, payload, unique_key=key)
        _finish_job(conn, first_id)
        again_id = queue.enqueue(conn, CREATED, payload, unique_key=key)
        tell(progress, 2, 3)
        jobs = [
            OrderJob(**row)
            for row in run(conn, "lab/jobs_for_order", {"order_id": order_id}, row_factory=dict_row)
        ]
        defs = {
            row["name"]: row["definition"] for row in run(conn, "exercise/index_sizes", row_factory=dict_row)
        }
        tell(progress, 3, 3)
    return finish(
        DoubleClickResult,
        db,
        guess=guess,
        stopped=stop or False,
        order_id=order_id,
        unique_key=key,
        first_id=first_id,
        second_id=got["second"],
        second_waited=waited,
        paid_id=paid_id,
        again_id=again_id,
        jobs=jobs,
        index_definition=defs[INDEX],
    )


def _blocked(conn, pid: int, clicker: threading.Thread) -> bool:
    """Whether the server shows session `pid` waiting on a lock, asked until it does (or the
    click came back without waiting, or WAIT_FOR_BLOCK_S passed)."""
    deadline = time.monotonic() + WAIT_FOR_BLOCK_S
    while time.monotonic() < deadline and clicker.is_alive():
        [(waiting,)] = run(conn, "exercise/session_waits_on_lock", {"pid": pid}).fetchall()
        if waiting:
            return True
        time.sleep(0.02)
    return False


def _finish_job(conn, job_id: int) -> None:
    """Claim the order's created job (the only due job) and complete it, as a worker would."""
    [job] = queue.claim(conn)
    if job.id != job_id:
        raise RuntimeError(f"expected to claim job {job_id}, claimed {job.id}")
    queue.complete(conn, job)

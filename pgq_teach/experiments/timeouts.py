"""A hung handler (lesson 10c), in three runs of a real Worker on kind `hang`:

1. The heartbeat alone: the kind has no job timeout, the handler never returns until the lab
   lets it, and the lab reads the job's `leased_until` from the server every `sample_s` for
   `watch_s`: each beat moves it on while nothing is done. Then the lab gives the kind a job
   timeout in job_kinds and asks the oldest-running alert (sql/stats_kinds.sql, through
   `kinds.stats`): the hung job's age is past it. (This Worker read job_kinds at its first
   claim, so it does not enforce the new timeout: the alert sees what the heartbeat hides.)
2. The job timeout: a fresh job and a fresh Worker, which reads the kind's `timeout_s`. Past
   it the job is failed with JobTimeout and retried by the kind's policy (`backoff_base_s`
   x 2^attempts, so it waits out the backoff in the lab, not running again).
3. Every executor stuck: a handler that never looks at `job.lost`, one executor, two jobs.
   A thread cannot be killed in Python, so the executor stays busy: the Worker fails the job
   at its timeout, counts it stuck, and claims nothing more until the handler returns. Then
   the lab lets the handler return: its late result is dropped (executor.py: the timeout's
   failure is the job's outcome), the freed executor runs the other job, and the server is
   asked what the stuck job's row holds, and what a completion sent late with the stuck
   claim's fence token changes (sql/complete.sql matches only a running job of that token).

The knobs that make the result: `lease_s` (a beat every quarter of it), `watch_s`,
`timeout_s` and `backoff_base_s`. The guide has no job timeout (its worker holds a job until
its handler returns); docs/per-kind.md describes the library's. pg-boss fails a job whose
handler outlives `expireInSeconds` ("handler execution exceeded 2000ms", timgit/pg-boss#443).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime

from psycopg.rows import dict_row

from .. import checks, kinds, measurements, queue, seeding
from ..databases import Database
from ..guide import GuideFigure
from ..statements import run
from ..worker import Worker
from .results import Comparison, Progress, Result, advice, finish, note, tell

KIND = "hang"
POLL_S = 0.05  # the Worker's poll: the lab's Worker looks for work often, so the runs stay short
WAIT_S = 30.0  # the longest the lab waits for any one thing it expects to happen
GUIDE_NO_TIMEOUT = advice(
    "the worker", "the worker holds a job until its handler returns; the guide has no job timeout"
)


@dataclass(frozen=True)
class LeaseReading:
    at_s: float  # since the job was claimed (seconds, from the server's clock)
    leased_until_s: float  # the lease's end, seconds after the claim (server clock)
    status: str


@dataclass(kw_only=True)
class HungResult(Result):
    lease_s: float
    watch_s: float
    timeout_s: float
    backoff_base_s: float
    readings: list[LeaseReading]  # run 1: the lease, as the server held it, while nothing was done
    beat_status: str  # run 1: the job's status at the end of the watch
    alert_age_s: float  # run 1: the oldest running job's age, as the alert read it
    alert_past_timeout: bool  # run 1: the alert saw it past the kind's timeout
    timed_out_status: str  # run 2: the job's status after its timeout
    timed_out_attempts: int
    timed_out_error: str
    retry_wait_s: float  # run 2: how long until it is due again
    handler_told: bool  # run 2: the handler saw job.lost set
    stuck: int  # run 3: executors the Worker counted stuck
    second_status: str  # run 3: the other job's status while the only executor was stuck
    claimed_while_stuck: int  # run 3: jobs claimed by the Worker while its executor was stuck
    stuck_job_status: str  # run 3: the stuck handler's own job, on the server, while it hung
    stuck_job_error: str
    freed_second_status: str  # run 3: the other job, once the stuck handler returned
    late_status: str  # run 3: the stuck handler's job after its handler returned late
    late_finished: bool  # run 3: whether anything wrote its finished_at
    late_completion_rows: int  # run 3: rows a completion with the stuck claim's token changed
    guide: GuideFigure = field(default_factory=lambda: GUIDE_NO_TIMEOUT)

    @property
    def lease_moved_s(self) -> float:
        """How far the heartbeat moved the lease's end during the watch."""
        return self.readings[-1].leased_until_s - self.readings[0].leased_until_s

    @property
    def past_first_lease_s(self) -> float:
        """How long the job was still running after the end of the lease its claim wrote."""
        return self.readings[-1].at_s - self.lease_s

    def quoted(self) -> dict[str, float | str]:
        """The figures the interview quotes, with the knobs that made them."""
        return {
            "lease_s": self.lease_s,
            "past_first_lease_s": self.past_first_lease_s,
            "timeout_s": self.timeout_s,
            "timed_out_status": self.timed_out_status,
            "late_completion_rows": self.late_completion_rows,
        }

    def comparison(self) -> list[Comparison]:
        return [
            (
                "heartbeat alone: running past its first lease by (s)",
                self.guess_cell,
                round(self.past_first_lease_s, 1),
                "–",
            ),
            ("heartbeat alone: status after the watch", "–", self.beat_status, "–"),
            ("heartbeat alone: lease moved on by", "–", f"{self.lease_moved_s:.1f} s", "–"),
            (
                "oldest running past its timeout (the alert)",
                "–",
                "yes" if self.alert_past_timeout else "no",
                "–",
            ),
            (
                "with a job timeout: status, tries",
                "–",
                f"{self.timed_out_status}, {self.timed_out_attempts}",
                "–",
            ),
            ("every executor stuck: jobs claimed meanwhile", "–", self.claimed_while_stuck, "–"),
            ("the stuck job's late completion: rows changed", "–", self.late_completion_rows, "–"),
        ]

    def report(self) -> list[str]:
        lines = [
            f"lease {self.lease_s:g} s (a beat every {self.lease_s / 4:g} s), "
            f"watched for {self.watch_s:g} s; "
            f"job timeout {self.timeout_s:g} s, backoff base {self.backoff_base_s:g} s:{self.stopped_note}",
            f"  heartbeat alone: still {self.beat_status}; leased_until moved {self.lease_moved_s:.1f} s "
            f"in {len(self.readings)} readings; the alert read the oldest running job at "
            f"{self.alert_age_s:.1f} s, {'past' if self.alert_past_timeout else 'within'} its timeout",
            f"  with the job timeout: {self.timed_out_status} after {self.timed_out_attempts} "
            f"{'try' if self.timed_out_attempts == 1 else 'tries'} ({self.timed_out_error}), due again "
            f"in {self.retry_wait_s:,.0f} s; the handler was told: {'yes' if self.handler_told else 'no'}",
            f"  a handler that never looks: {self.stuck} executor stuck, the other job {self.second_status}, "
            f"{self.claimed_while_stuck} claimed meanwhile; its own job {self.stuck_job_status} "
            f"({self.stuck_job_error})",
            f"  once that handler returned: its job still {self.late_status}, finished "
            f"{'yes' if self.late_finished else 'no'}; a late completion with its token changed "
            f"{self.late_completion_rows} rows; the freed executor ran the other job: "
            f"{self.freed_second_status}",
        ]
        return [note(line) for line in lines[:-1]] + [lines[-1]] + self.footer()


@contextmanager
def running(worker: Worker) -> Iterator[Worker]:
    """`worker` run on a thread of its own for a `with` block, then stopped; an error it hit
    is raised here."""
    errors: list[BaseException] = []

    def go() -> None:
        try:
            worker.run()
        except BaseException as e:  # raised again on the caller's thread
            errors.append(e)

    thread = threading.Thread(target=go, daemon=True, name="pgq-lab-worker")
    thread.start()
    try:
        yield worker
    finally:
        worker.stop()
        thread.join(WAIT_S)
    if errors:
        raise errors[0]


def wait_until(ready: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    """Ask `ready` until it holds; a lab that waits longer than `timeout` says what it waited for."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout:g} s for {what}")
        time.sleep(POLL_S)


def hung_handler(
    db: Database,
    *,
    lease_s: float = 2.0,
    watch_s: float = 4.0,
    timeout_s: float = 1.0,
    backoff_base_s: float = 600.0,
    guess: float | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> HungResult:
    """The three runs above, on a fresh table."""
    lease_s = checks.seconds("lease_s", lease_s, 1.0, 60.0)
    watch_s = checks.seconds("watch_s", watch_s, lease_s, 120.0)
    timeout_s = checks.seconds("timeout_s", timeout_s, 0.1, 60.0)
    backoff_base_s = checks.seconds("backoff_base_s", backoff_base_s, 60.0, kinds.MAX_BACKOFF_S)
    with db.connect() as conn:
        seeding.reset_jobs(conn)
        beat = _heartbeat_alone(db, conn, lease_s, watch_s, timeout_s, backoff_base_s, stop)
        tell(progress, 1, 3)
        timed = _timed_out(db, conn)
        tell(progress, 2, 3)
        stuck = _every_executor_stuck(db, conn)
        tell(progress, 3, 3)
    result = finish(
        HungResult,
        db,
        guess=guess,
        stopped=stop or False,
        lease_s=lease_s,
        watch_s=watch_s,
        timeout_s=timeout_s,
        backoff_base_s=backoff_base_s,
        **beat,
        **timed,
        **stuck,
    )
    if not result.stopped:
        measurements.record(measurements.HUNG_HANDLER_10C, result.quoted())
    return result


def _heartbeat_alone(db, conn, lease_s, watch_s, timeout_s, backoff_base_s, stop) -> dict:
    kinds.set_policy(
        conn, KIND, backoff_base_s=backoff_base_s, backoff_cap_s=backoff_base_s * 64, timeout_s=None
    )
    job_id = queue.enqueue(conn, KIND, {"run": "heartbeat alone"})
    release = threading.Event()
    worker = Worker(db.dsn, {KIND: lambda job: release.wait(WAIT_S + watch_s)}, lease=lease_s, poll=POLL_S)
    try:
        with running(worker):
            wait_until(lambda: _row(conn, job_id)["status"] == "running", "the job to be claimed")
            claimed = _row(conn, job_id)["attempted_at"]
            readings = []
            end = time.monotonic() + watch_s
            while time.monotonic() < end and not (stop and stop.is_set()):
                readings.append(_reading(conn, job_id, claimed))
                time.sleep(lease_s / 8)
            readings.append(_reading(conn, job_id, claimed))
            # Now the kind gets a timeout: this Worker read job_kinds at its first claim and
            # keeps going; the alert reads the kind's row, and sees the job past it.
            kinds.set_policy(
                conn,
                KIND,
                backoff_base_s=backoff_base_s,
                backoff_cap_s=backoff_base_s * 64,
                timeout_s=timeout_s,
            )
            [alert] = [s for s in kinds.stats(conn) if s.kind == KIND]
            status = _row(conn, job_id)["status"]
            release.set()  # before the Worker stops: stop() waits for its handlers
    finally:
        release.set()
    age = alert.oldest_running_age.total_seconds() if alert.oldest_running_age else 0.0
    return {
        "readings": readings,
        "beat_status": status,
        "alert_age_s": age,
        "alert_past_timeout": alert.past_timeout,
    }


def _timed_out(db, conn) -> dict:
    """A fresh job under a Worker that reads the kind's timeout: failed at it, and told."""
    job_id = queue.enqueue(conn, KIND, {"run": "job timeout"})
    told: list[bool] = []

    def hang(job: queue.Job) -> None:
        told.append(job.lost.wait(WAIT_S))  # hung until the timeout says so

    worker = Worker(db.dsn, {KIND: hang}, poll=POLL_S)
    with running(worker):
        wait_until(
            lambda: (_row(conn, job_id)["last_error"] or "").startswith("JobTimeout"), "the job timeout"
        )
    [row] = run(conn, "lab/retry_wait", {"id": job_id}, row_factory=dict_row).fetchall()
    return {
        "timed_out_status": row["status"],
        "timed_out_attempts": row["attempts"],
        "timed_out_error": row["last_error"],
        "retry_wait_s": row["wait_s"],
        "handler_told": told == [True],
    }


def _every_executor_stuck(db, conn) -> dict:
    """A handler that never looks at job.lost, one executor, two jobs."""
    seeding.reset_jobs(conn)
    first = queue.enqueue(conn, KIND, {"run": "deaf", "n": 1})
    second = queue.enqueue(conn, KIND, {"run": "deaf", "n": 2})
    release = threading.Event()
    worker = Worker(db.dsn, {KIND: lambda job: release.wait(WAIT_S)}, poll=POLL_S, concurrency=1)
    try:
        with running(worker):
            wait_until(lambda: worker.report.stuck == 1, "the executor to be counted stuck")
            wait_until(
                lambda: (_row(conn, first)["last_error"] or "").startswith("JobTimeout"),
                "the timeout's failure",
            )
            polls = worker.report.polls
            wait_until(
                lambda: worker.report.polls >= polls + 5, "five more polls"
            )  # it looked, and took nothing
            stuck, claimed, status = worker.report.stuck, worker.report.claimed, _row(conn, second)["status"]
            hung = _row(conn, first)  # the stuck handler's own job, while its handler still runs
            release.set()  # the handler returns late; its executor is free again
            wait_until(
                lambda: _row(conn, second)["status"] == "done", "the freed executor to run the other job"
            )
    finally:
        release.set()
    late = _row(conn, first)
    # What a completion sent late, with the stuck claim's token, would change: the fence.
    late_rows = len(run(conn, "complete", {"id": first, "fence_token": hung["fence_token"]}).fetchall())
    return {
        "stuck": stuck,
        "second_status": status,
        "claimed_while_stuck": claimed - 1,
        "stuck_job_status": hung["status"],
        "stuck_job_error": hung["last_error"] or "",
        "freed_second_status": _row(conn, second)["status"],
        "late_status": late["status"],
        "late_finished": late["finished_at"] is not None,
        "late_completion_rows": late_rows,
    }


def _row(conn, job_id: int) -> dict:
    [row] = run(conn, "lab/job_row", {"id": job_id}, row_factory=dict_row).fetchall()
    return row


def _reading(conn, job_id: int, claimed: datetime) -> LeaseReading:
    [row] = run(conn, "lab/lease_since", {"id": job_id, "since": claimed}, row_factory=dict_row).fetchall()
    return LeaseReading(at_s=row["at_s"], leased_until_s=row["leased_until_s"], status=row["status"])

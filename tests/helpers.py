"""Small readers the tests share: they look at rows, never at mocks."""

import time

from psycopg.rows import dict_row

from pgq_teach.queue import status_counts
from pgq_teach.seeding import seed_jobs
from pgq_teach.statements import run


def job_row(conn, job_id: int) -> dict | None:
    return run(conn, "lab/job_row", {"id": job_id}, row_factory=dict_row).fetchone()


def counts(conn) -> dict:
    return status_counts(conn)


def seed(conn, n: int, kind: str = "send_receipt") -> None:
    seed_jobs(conn, kind, n)


def expire_leases(conn, jobs) -> None:
    """Stage a stall: the jobs' leases end a second ago, so the reaper finds them
    expired now (sql/lab/expire_leases.sql), without sleeping through the lease."""
    run(conn, "lab/expire_leases", {"ids": [job.id for job in jobs]})


def wait_for(check, timeout: float, step: float = 0.02) -> bool:
    """Poll `check` until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return False

"""Small readers the tests share: they look at rows, never at mocks."""

import time

from pgq_teach.statements import run


def job_row(conn, job_id: int) -> dict:
    cur = run(conn, "lab/job_row", {"id": job_id})
    cols = [c.name for c in cur.description]
    row = cur.fetchone()
    return dict(zip(cols, row)) if row else None


def counts(conn) -> dict:
    return {s: n for s, n, _ in run(conn, "stats_status").fetchall()}


def seed(conn, n: int, kind: str = "send_receipt") -> None:
    run(conn, "lab/seed_jobs", {"kind": kind, "count": n})


def wait_for(check, timeout: float, step: float = 0.02) -> bool:
    """Poll `check` until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return False

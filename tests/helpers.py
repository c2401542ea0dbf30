"""Small readers the tests share: they look at rows, never at mocks."""

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

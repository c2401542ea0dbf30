"""A known starting point for experiments and fault runs: the jobs table
emptied (ids from 1 again) and filled with many due jobs in one statement.

Lab helpers only: they delete every job, so use them in a lesson's or a
test's own database (see pgq_teach.databases), never on real data.
"""

from __future__ import annotations

import psycopg

from . import checks
from .statements import run

MAX_SEED = 10_000_000


def reset_jobs(conn: psycopg.Connection) -> None:
    """Empty the jobs table and restart its ids at 1."""
    run(conn, "lab/reset_jobs")


def seed_jobs(conn: psycopg.Connection, kind: str, count: int) -> None:
    """Add `count` due jobs of `kind`, payload {"n": 1..count}, oldest first."""
    params = {"kind": checks.job_kind(kind), "count": checks.whole_number("count", count, 0, MAX_SEED)}
    run(conn, "lab/seed_jobs", params)


def reset_and_seed(conn: psycopg.Connection, kind: str, count: int) -> None:
    """Empty the jobs table, then add `count` due jobs of `kind` with ids 1..count.
    Input is checked before the table is touched."""
    checks.job_kind(kind)
    checks.whole_number("count", count, 0, MAX_SEED)
    reset_jobs(conn)
    seed_jobs(conn, kind, count)

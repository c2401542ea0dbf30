"""Where the learner's SQL runs: a scratch database made for the check (never
a lesson's own), as a role that can reach only the jobs table there, with a
statement timeout and a lock timeout on every session.

The server decides whether the text is exactly one statement: `parse` hands
it to PostgreSQL's parser as an unnamed prepared statement (nothing runs),
which refuses more than one command and reports any syntax or name error.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import pq
from psycopg.conninfo import make_conninfo
from psycopg.pq.abc import PGresult

from ..databases import Database, open_database
from ..statements import run
from .learner_sql import LearnerSQL, Refused

ROLE = "pgq_learner"
STATEMENT_TIMEOUT_S = 3
LOCK_TIMEOUT_S = 2


@dataclass(frozen=True)
class Scratch:
    """A scratch database and the learner role's way into it."""

    db: Database
    learner_dsn: str

    def connect(self, *, autocommit: bool = True) -> psycopg.Connection:
        """A session as the learner role; the timeouts are set again here, so
        they hold even if the role's defaults were changed."""
        options = f"-c statement_timeout={STATEMENT_TIMEOUT_S}s -c lock_timeout={LOCK_TIMEOUT_S}s"
        return psycopg.connect(self.learner_dsn, autocommit=autocommit, connect_timeout=5, options=options)


def open_scratch(exercise: str) -> Scratch:
    """A fresh scratch database for one exercise, with the course's tables
    (and the fencing token column) and the learner role's grants."""
    db = open_database(f"scratch_{exercise}", reset=True)
    db.apply("exercise/add_fence_token")
    password = secrets.token_hex(16)
    with db.connection() as conn:
        params = {
            "password": password,
            "statement_timeout": f"{STATEMENT_TIMEOUT_S}s",
            "lock_timeout": f"{LOCK_TIMEOUT_S}s",
        }
        run(conn, "exercise/learner_role", params, idents={"role": ROLE, "database": db.name})
    return Scratch(db, make_conninfo(db.dsn, user=ROLE, password=password))


def _server_message(res: PGresult) -> str:
    text = (res.error_message or b"").decode("utf-8", "replace").strip()
    return text.removeprefix("ERROR:").strip().splitlines()[0] if text else "unknown error"


def parse(conn: psycopg.Connection, learner: LearnerSQL) -> list[str]:
    """Ask the server to parse the statement without running it; the names
    of the columns it returns. Refused if it is not exactly one valid statement."""
    res = conn.pgconn.prepare(b"", learner.for_server.encode())
    if res.status != pq.ExecStatus.COMMAND_OK:
        message = _server_message(res)
        if "multiple commands" in message:
            raise Refused("exactly one statement, please: PostgreSQL found more than one, so nothing was run")
        raise Refused(f"PostgreSQL could not read it, so nothing was run: {message}")
    described = conn.pgconn.describe_prepared(b"")
    return [(described.fname(i) or b"").decode() for i in range(described.nfields)]


def execute(conn: psycopg.Connection, learner: LearnerSQL, values: dict[str, Any]) -> psycopg.Cursor:
    """Run the learner's statement with the exercise's values."""
    if learner.placeholders:
        return conn.execute(learner.for_psycopg, learner.params(values))
    return conn.execute(learner.for_server)


def plan(conn: psycopg.Connection, learner: LearnerSQL, values: dict[str, Any]) -> dict:
    """The server's plan for the statement (EXPLAIN without ANALYZE runs nothing)."""
    prefix = "EXPLAIN (COSTS OFF, FORMAT JSON) "
    if learner.placeholders:
        cur = conn.execute(prefix + learner.for_psycopg, learner.params(values))
    else:
        cur = conn.execute(prefix + learner.for_server)
    row = cur.fetchone()
    if row is None:
        raise LookupError("EXPLAIN returned no plan")
    return row[0][0]["Plan"]


def nodes(node: dict, in_cte: bool = False) -> Iterator[tuple[dict, bool]]:
    """Every plan node, with whether it sits inside a WITH query."""
    in_cte = in_cte or str(node.get("Subplan Name", "")).startswith("CTE ")
    yield node, in_cte
    for child in node.get("Plans", []):
        yield from nodes(child, in_cte)


def locking(tree: dict) -> tuple[bool, bool]:
    """(locks any rows, locks them inside a WITH query): a LockRows node."""
    found = [in_cte for node, in_cte in nodes(tree) if node.get("Node Type") == "LockRows"]
    return bool(found), any(found)


def indexes_used(tree: dict) -> set[str]:
    return {node["Index Name"] for node, _ in nodes(tree) if "Index Name" in node}


@contextmanager
def sessions(
    scratch: Scratch, learner: LearnerSQL, kind: str, jobs: int
) -> Iterator[tuple[psycopg.Connection, psycopg.Connection]]:
    """The owner's session and the learner role's, once the server has read the
    learner's statement (Refused if it cannot) and `jobs` jobs of `kind` are in
    the table: how every check that stages jobs begins."""
    with scratch.db.connection() as owner, scratch.connect() as conn:
        parse(conn, learner)
        run(owner, "lab/seed_jobs", {"kind": kind, "count": jobs})
        yield owner, conn


def stage(
    owner: psycopg.Connection,
    ids: Iterable[int],
    status: str,
    attempts: int,
    token: int,
    lease_s: float | None = 60,
    max_attempts: int = 5,
) -> None:
    """Put jobs in the state a story needs: status, attempts, fence_token, a
    lease ending `lease_s` from now (None: no lease), max_attempts."""
    for job_id in ids:
        values = {"id": job_id, "status": status, "attempts": attempts, "fence_token": token}
        run(owner, "exercise/stage_job", {**values, "lease_s": lease_s, "max_attempts": max_attempts})

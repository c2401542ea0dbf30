"""Lesson 10: idle_in_transaction_session_timeout on a worker role ending a
forgotten transaction; the client sees 25P03. Beside it, the same forgotten
transaction as the admin role, and how each of the three timeouts treats a long
active statement. Sessions here are plain psycopg connections."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from ... import checks
from ...databases import Database
from ...guide import GuideFigure
from ...statements import run, run_one
from ..results import Comparison, Result, finish
from .rules import GUIDE_TIMEOUT

LAB_ROLE = "pgq_lab_idle_worker"  # a lab role, never the real queue_worker


@dataclass(kw_only=True)
class TimeoutDemo(Result):
    timeout_s: float
    role: str
    setting_seen: str = ""
    ended_after_s: float = 0.0
    sqlstate: str | None = None
    error: str = ""
    session_gone: bool = False
    skipped: str = ""
    # the same forgotten transaction opened by the admin role, which has no timeout: still open?
    other_role_survived: bool = False
    # a statement kept active (pg_sleep) past the timeout, in a transaction, under each setting:
    # the SQLSTATE it ended with (None: it ran to the end), "not on this server" where unknown
    active_statement: dict[str, str | None] = field(default_factory=dict)
    guess: float | None = None  # seconds until the server ends the forgotten transaction
    guide: GuideFigure = GUIDE_TIMEOUT

    def comparison(self) -> list[Comparison]:
        if self.skipped:
            return []
        return [
            ("idle_in_transaction_session_timeout", None, self.setting_seen, "1min (default 0, off)"),
            ("the next statement failed after, s", self.guess_cell, self.ended_after_s, None),
            ("SQLSTATE the client saw", None, self.sqlstate, None),
            ("session gone from pg_stat_activity", None, "yes" if self.session_gone else "no", None),
        ]

    def summary(self) -> str:
        if self.skipped:
            return f"skipped: {self.skipped}"
        return "\n".join(
            [
                f"role {self.role}: idle_in_transaction_session_timeout = {self.setting_seen}",
                (
                    f"a forgotten transaction was ended; the client's next statement failed after "
                    f"{self.ended_after_s:.1f} s with SQLSTATE {self.sqlstate}: {self.error}"
                ),
                f"the session is gone from pg_stat_activity: {self.session_gone}",
                f"the same forgotten transaction, as the admin role (no timeout set), is still open: "
                f"{self.other_role_survived}",
                f"a statement active for {self.timeout_s + 1:g} s in a transaction, under each setting:",
            ]
            + [
                f"  {setting:<36} {ending or 'ran to the end'}"
                for setting, ending in self.active_statement.items()
            ]
            + self.footer()
        )


def idle_timeout(db: Database, *, timeout_s: float = 1.0, guess: float | None = None) -> TimeoutDemo:
    """Make a lab worker role with sql/roles.sql and a short timeout, open a
    transaction as that role and forget it; the server ends the session and
    the client sees 25P03."""
    timeout_s = checks.seconds("timeout_s", timeout_s, 0.2, 10)
    demo: dict[str, Any] = {"timeout_s": timeout_s, "role": LAB_ROLE}
    password = secrets.token_hex(12)
    with db.connection() as admin:
        drop_lab_role(admin)
        try:
            # the production statement, sql/roles.sql, for a lab role with a short timeout
            params = {"password": password, "idle_timeout": f"{int(timeout_s * 1000)}ms"}
            run(admin, "roles", params, idents={"role": LAB_ROLE})
        except psycopg.errors.InsufficientPrivilege as exc:
            drop_lab_role(admin)
            why = f"this server's user may not create roles ({exc.diag.message_primary})"
            return finish(TimeoutDemo, db, skipped=why, guess=guess, **demo)
        try:
            with psycopg.connect(make_conninfo(db.dsn, user=LAB_ROLE, password=password)) as worker:
                setting = run_one(worker, "lab/session_settings")[1]
                pid = worker.info.backend_pid
                worker.commit()
                run(worker, "lab/open_transaction")  # BEGIN ... and the worker forgets it
                began = time.monotonic()
                time.sleep(timeout_s + 0.5)
                # Asked before the client sends anything, so the server alone can have ended it.
                gone = session_ends(admin, pid, within_s=2.0)
                sqlstate, error = None, ""
                try:
                    run(worker, "lab/count_jobs")
                except psycopg.Error as exc:
                    sqlstate, error = exc.sqlstate, (exc.diag.message_primary or str(exc)).strip()
                ended = time.monotonic() - began
            other_survived = admin_transaction_survives(db, timeout_s)
            conninfo = make_conninfo(db.dsn, user=LAB_ROLE, password=password)
            active = {name: active_statement_ends(conninfo, name, timeout_s) for name in TIMEOUTS}
        finally:
            drop_lab_role(admin)
    return finish(
        TimeoutDemo,
        db,
        other_role_survived=other_survived,
        active_statement=active,
        setting_seen=setting,
        ended_after_s=ended,
        sqlstate=sqlstate,
        error=error,
        session_gone=gone,
        guess=guess,
        **demo,
    )


# the three timeouts, each set on the lab role's session: how each treats a long active statement
TIMEOUTS = {
    "idle_in_transaction_session_timeout": None,  # already set on the role by sql/roles.sql
    "statement_timeout": "lab/set_statement_timeout",
    "transaction_timeout": "lab/set_transaction_timeout",  # PostgreSQL 17 and later
}


def active_statement_ends(conninfo: str, timeout: str, timeout_s: float) -> str | None:
    """In a fresh session of the lab role, with `timeout` set to timeout_s, open a
    transaction and run one statement that stays active for timeout_s + 1 s: the
    SQLSTATE it ended with, or None if it ran to the end."""
    setter = TIMEOUTS[timeout]
    with psycopg.connect(conninfo) as conn:
        if setter is not None:
            try:
                run(conn, setter, {"timeout": f"{int(timeout_s * 1000)}ms"})
            except psycopg.errors.UndefinedObject:
                return "not on this server (PostgreSQL 17+)"
            conn.commit()
        try:
            run(conn, "lab/sleep", {"seconds": timeout_s + 1})
            conn.commit()
        except psycopg.Error as exc:
            return exc.sqlstate
    return None


def session_ends(admin: psycopg.Connection, pid: int, within_s: float) -> bool:
    """Whether the server process `pid` is gone, or goes within `within_s` (a session the
    server ends exits a moment after its timeout fires)."""
    deadline = time.monotonic() + within_s
    while run_one(admin, "lab/session_alive", {"pid": pid})[0]:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def admin_transaction_survives(db: Database, timeout_s: float) -> bool:
    """Whether a transaction the admin role opens and forgets is still usable
    after the lab role's timeout has passed: the timeout is on the role, not the server."""
    with db.connection(autocommit=False) as other:
        run(other, "lab/open_transaction")
        time.sleep(timeout_s + 0.5)
        try:
            run(other, "lab/count_jobs")
        except psycopg.Error:  # 25P03 arrives as an InternalError, a lost server as an OperationalError
            return False
        other.rollback()
        return True


def drop_lab_role(admin) -> None:
    try:
        run(admin, "lab/drop_owned", idents={"name": LAB_ROLE})
    except psycopg.errors.UndefinedObject:
        pass  # not there: nothing to revoke
    run(admin, "lab/terminate_sessions_of_role", {"name": LAB_ROLE})
    run(admin, "lab/drop_role", idents={"name": LAB_ROLE})

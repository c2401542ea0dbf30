"""The session holding VACUUM back (lesson 09): the learner writes one query
on pg_stat_activity, and the checker grades it against real sessions, all of
the learner's own role (a role sees the details only of its own sessions):

- the culprit: a REPEATABLE READ transaction idle after one SELECT; its
  snapshot keeps VACUUM from removing the dead versions made after it;
- a READ COMMITTED transaction idle after one SELECT: idle in transaction
  too, but between statements it holds no snapshot and blocks nothing;
- an idle session outside any transaction;
- and the learner's query's own session, which holds a snapshot while it runs.

The query must name the culprit's pid and no other. Then the checker ends the
sessions it named and runs VACUUM again: the dead versions go (guide #18)."""

from __future__ import annotations

import psycopg

from ..experiments.bloat import vacuum
from ..guide import figure
from ..statements import run
from .learner_sql import LearnerSQL, Refused
from .sandbox import Scratch, execute, parse
from .verdict import Evidence, Verdict

JOBS = 1_000
APP = "worker"  # every staged session has the same application_name: the state must tell them apart


def vacuum_counts(scratch: Scratch) -> tuple[int, int]:
    """(removed, dead but not yet removable), from VACUUM (VERBOSE) jobs as the owner."""
    report = vacuum(scratch.db)
    return report.removed, report.not_removable


def session(scratch: Scratch, isolation: psycopg.IsolationLevel | None) -> psycopg.Connection:
    """A session of the learner's role; with `isolation`, left idle inside a
    transaction after one SELECT."""
    conn = scratch.connect(autocommit=isolation is None)
    run(conn, "exercise/name_session", {"name": APP})
    if isolation is not None:
        conn.commit()  # the name is set; the transaction that stays open starts below
        conn.isolation_level = isolation
        run(conn, "lab/open_transaction")
    return conn


def check_holder(
    scratch: Scratch, learner: LearnerSQL, *, exercise: str, progress=None, stop=None
) -> Verdict:
    if learner.first_word not in ("SELECT", "WITH"):
        raise Refused("this exercise runs one SELECT on pg_stat_activity")
    staged: list[psycopg.Connection] = []
    try:
        with scratch.db.connection() as owner:
            run(owner, "lab/autovacuum_off")
            run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": JOBS})
            culprit = session(scratch, psycopg.IsolationLevel.REPEATABLE_READ)
            quiet = session(scratch, psycopg.IsolationLevel.READ_COMMITTED)
            idle = session(scratch, None)
            staged += [culprit, quiet, idle]
            target = culprit.info.backend_pid
            names = {
                target: "the idle REPEATABLE READ transaction",
                quiet.info.backend_pid: "an idle READ COMMITTED transaction, which holds no snapshot",
                idle.info.backend_pid: "an idle session outside any transaction",
            }
            run(owner, "exercise/finish_ready_jobs")  # JOBS dead versions, made after the culprit's snapshot
            _, held_before = vacuum_counts(scratch)
            if progress:
                progress(1, 3)
            with scratch.connect() as conn:
                columns = parse(conn, learner)
                own_pid = conn.info.backend_pid
                rows = execute(conn, learner, {}).fetchall()
            column = columns.index("pid") if "pid" in columns else 0
            found = [row[column] for row in rows]
            if not all(isinstance(pid, int) for pid in found):
                raise Refused("return the sessions' pids: a column named pid, from pg_stat_activity")
            names[own_pid] = "your query's own session"
            for conn in staged:  # end the sessions the query named, as a DBA would
                if conn.info.backend_pid in found:
                    # ROLLBACK returns once the server has dropped the snapshot; a bare
                    # close() does not wait, and VACUUM straight after could still be held back.
                    conn.rollback()
                    conn.close()
            removed, held_after = vacuum_counts(scratch)
            if progress:
                progress(3, 3)
    finally:
        for conn in staged:
            conn.close()
    extra = [pid for pid in dict.fromkeys(found) if pid != target]
    evidence = [
        Evidence(
            "VACUUM before: dead versions kept for an open snapshot",
            f"{held_before:,} of {JOBS:,} dead but not yet removable",
            None,
        ),
        Evidence(
            "names the idle REPEATABLE READ transaction",
            f"pid {target} {'found' if target in found else 'missing'}",
            target in found,
        ),
        Evidence(
            "no session that holds nothing back",
            "; ".join(f"pid {pid}: {names.get(pid, 'another session')}" for pid in extra) or "none",
            not extra,
        ),
        Evidence(
            "VACUUM after ending the sessions you named",
            f"{removed:,} removed, {held_after:,} dead but not yet removable",
            held_after == 0 and removed >= JOBS,
        ),
    ]
    if target not in found:
        hint = "look for a session that holds a snapshot: backend_xmin (or backend_xid) IS NOT NULL."
    elif own_pid in found:
        hint = (
            "your query's own session holds a snapshot while it runs: leave it out with "
            "pid <> pg_backend_pid()."
        )
    else:
        hint = (
            "idle in transaction is not enough: a READ COMMITTED transaction between statements holds no "
            "snapshot. Ask for backend_xmin or backend_xid IS NOT NULL instead of the state."
        )
    return Verdict.from_evidence(
        exercise,
        evidence,
        hint,
        numbers={"found": found, "culprit": target, "held_before": held_before, "held_after": held_after},
        passed_headline="your query names the one session holding VACUUM back, and ending it let VACUUM work",
        passed_hint=(
            "backend_xmin marks the snapshot that holds VACUUM back; ending that session lets VACUUM work."
        ),
        server_version=scratch.db.server.version,
        guide=figure(18),
    )

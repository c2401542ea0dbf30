"""Lesson 09, the horizon across databases: a transaction ID held in another
database of the server, and what the course's activity query
(sql/stats_sessions.sql) shows of it from this one.

Every snapshot, in any database, takes as its xmin the oldest transaction ID
running anywhere on the server (GetSnapshotData, src/backend/storage/ipc/
procarray.c, PostgreSQL 15 and 18), so a session here whose snapshot carries
that ID looks like the culprit and is only a bystander: the query lists the
ID's holder, from its own database, ahead of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import databases, seeding
from ..databases import Database
from ..statements import run, run_one
from .bloat import IdleTransaction, holders


@dataclass(frozen=True)
class HeldElsewhere:
    """A row-locking transaction in another database, and an idle snapshot
    taken here after it began: the activity query's rows, run from here."""

    holder_pid: int  # the session in the other database
    holder_xid: str  # its transaction ID (from its row lock)
    bystander_pid: int  # an idle REPEATABLE READ transaction here, opened after it
    bystander_xmin: str | None  # its snapshot's xmin: the oldest ID running on the server
    rows: list[dict]  # the activity query, run here while both were open

    def row(self, pid: int) -> dict | None:
        """The activity query's row for this pid (None: not listed)."""
        return next((r for r in self.rows if r["pid"] == pid), None)

    def carrier_before_bystander(self) -> bool:
        """Whether the query lists the holder of the ID the bystander's snapshot
        carries, ahead of the bystander. On a quiet server that holder is the
        lab's; on a busy one it may be an older transaction of someone else."""
        bystander = self.row(self.bystander_pid)
        if bystander is None or self.bystander_xmin is None:
            return False
        ahead = self.rows[: self.rows.index(bystander)]
        return any(r["backend_xid"] == self.bystander_xmin for r in ahead)


def held_elsewhere(db: Database) -> HeldElsewhere:
    """Lock one job in a second database on db's server (a transaction ID, held
    open), open an idle snapshot in `db`, and run the activity query in `db`."""
    label = "elsewhere-" + db.name.removeprefix(databases.PREFIX)
    other, bystander = databases.open_database(label, reset=True, server=db.server), IdleTransaction(db)
    try:
        with other.connection() as conn:
            seeding.reset_and_seed(conn, "send_receipt", 1)
        with other.connection(autocommit=False) as hold, db.connection() as here:
            run(hold, "teaching/hold_skip_locked").fetchall()  # a row lock: the transaction gets an ID
            pids = (hold.info.backend_pid, bystander.open())
            (_, xid, _), (_, _, xmin) = (run_one(here, "lab/session_horizon", {"pid": p}) for p in pids)
            rows = holders(db)
            hold.rollback()
    finally:
        bystander.close()
        databases.drop_database(label, server=db.server)
    return HeldElsewhere(pids[0], xid, pids[1], xmin, rows)

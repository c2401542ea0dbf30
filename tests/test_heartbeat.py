"""The heartbeat against other sessions' locks (worker/leases.py's guarantee): a row
another session holds is skipped, not waited for and not lost, while every other lease is
renewed. Each test prints what it measured (pytest -s, or -rP, shows it)."""

import time
from datetime import datetime, timedelta

import pgq_teach as pgq
from pgq_teach import queue
from pgq_teach.statements import run


def leases_of(conn, ids) -> dict[int, datetime]:
    """The lease deadline each running job has in the committed state, as the server reads it now."""
    return {row[0]: row[1] for row in run(conn, "lab/running_leases").fetchall() if row[0] in ids}


def test_renew_leases_skips_a_locked_row_and_reads_its_committed_state(db, conn):
    """The statement alone: a row another transaction holds is left as it was and reported
    held but not renewed, while the others are renewed; once a fence commits, it is missing."""
    pgq.enqueue_many(conn, "slow", [{}, {}])
    a, b = pgq.claim(conn, batch=2, lease=60)
    before = leases_of(conn, {a.id, b.id})
    with db.connection(autocommit=False) as other:
        run(other, "lab/set_max_attempts", {"id": a.id, "max_attempts": 10})  # left open
        began = time.monotonic()
        assert queue.renew_leases(conn, [a, b], 120) == {
            (a.id, a.fence_token): False,
            (b.id, b.fence_token): True,
        }
        took = time.monotonic() - began
        after = leases_of(conn, {a.id, b.id})
        assert after[a.id] == before[a.id] and after[b.id] > before[b.id] + timedelta(seconds=50)
        # An uncommitted fence is not seen: the committed state still shows this claim.
        run(other, "lab/fence_job", {"id": a.id, "lease": "1 minute"})
        assert queue.renew_leases(conn, [a], 120) == {(a.id, a.fence_token): False}
        other.commit()
    assert queue.renew_leases(conn, [a, b], 120) == {(b.id, b.fence_token): True}  # a: fenced, lost
    print(f"\nrenew_leases beside a held row: answered in {took * 1000:.0f} ms without waiting")

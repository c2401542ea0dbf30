"""Bad input gets a clear error before any SQL runs, and the data stays as it was.

Each library call is made twice: once on a closed connection (so an error
that reached the database would be an OperationalError, not BadInput), and
once on a live one, after which the jobs table is compared with before."""

from datetime import datetime, timedelta

import pytest

import pgq_teach as pgq
from pgq_teach.statements import run

from helpers import seed

NOT_JSON = object()


def nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value

CALLS = {
    "payload not JSON-serialisable": lambda c: pgq.enqueue(c, "send_receipt", {"when": NOT_JSON}),
    "payload with NaN": lambda c: pgq.enqueue(c, "send_receipt", {"x": float("nan")}),
    "payload with a NUL character": lambda c: pgq.enqueue(c, "send_receipt", {"x": "a\x00b"}),
    "payload over 1 MB": lambda c: pgq.enqueue(c, "send_receipt", {"blob": "x" * 1_000_001}),
    "empty kind": lambda c: pgq.enqueue(c, "", {}),
    "blank kind": lambda c: pgq.enqueue(c, "   ", {}),
    "kind not a string": lambda c: pgq.enqueue(c, 42, {}),
    "NUL byte in the kind": lambda c: pgq.enqueue(c, "send\x00receipt", {}),
    "kind too long for NOTIFY": lambda c: pgq.enqueue(c, "k" * 201, {}),
    "max_attempts 0": lambda c: pgq.enqueue(c, "send_receipt", {}, max_attempts=0),
    "max_attempts not a number": lambda c: pgq.enqueue(c, "send_receipt", {}, max_attempts="5"),
    "naive run_at": lambda c: pgq.enqueue(c, "send_receipt", {}, run_at=datetime(2030, 1, 1)),
    "batch 0": lambda c: pgq.claim(c, batch=0),
    "batch 10,001": lambda c: pgq.claim(c, batch=10_001),
    "batch True": lambda c: pgq.claim(c, batch=True),
    "negative lease": lambda c: pgq.claim(c, lease=timedelta(seconds=-5)),
    "zero lease": lambda c: pgq.claim(c, lease=0),
    "infinite lease": lambda c: pgq.claim(c, lease=float("inf")),
    "complete a non-job": lambda c: pgq.complete(c, {"id": 1}),
    "extend with a negative lease": lambda c: pgq.extend_lease(c, pgq.Job(1, "k", {}, 1), -1),
    "requeue an empty kind": lambda c: pgq.requeue_dead(c, kind=""),
    "cleanup batch 0": lambda c: pgq.cleanup(c, batch=0),
    "payload with a lone surrogate": lambda c: pgq.enqueue(c, "send_receipt", {"note": "\ud800"}),
    "kind with a lone surrogate": lambda c: pgq.enqueue(c, "send\ud800", {}),
    "max_attempts beyond a 32-bit int": lambda c: pgq.enqueue(c, "send_receipt", {}, max_attempts=2**31),
    "a lease past the year 294276": lambda c: pgq.claim(c, lease=1e13),
    "a lease too long for a timedelta": lambda c: pgq.claim(c, lease=1e20),
    "a lease over a year": lambda c: pgq.claim(c, lease=timedelta(days=366)),
    "a payload nested 100,000 deep": lambda c: pgq.enqueue(c, "send_receipt", nested(100_000)),
}


def snapshot(conn):
    return run(conn, "lab/all_jobs").fetchall()


@pytest.mark.parametrize("case", list(CALLS))
def test_refused_before_sql_and_nothing_changes(db, case):
    with db.connection() as conn:
        seed(conn, 3)
        pgq.claim(conn)
        before = snapshot(conn)
    closed = db.connect()
    closed.close()
    with pytest.raises(pgq.BadInput) as err:
        CALLS[case](closed)
    assert str(err.value) and "Traceback" not in str(err.value)
    with db.connection() as conn:
        with pytest.raises(pgq.BadInput):
            CALLS[case](conn)
        assert snapshot(conn) == before


def test_the_payload_limit_is_documented_and_notify_carries_only_the_kind(db):
    """Payloads up to the limit are accepted; NOTIFY sends the kind, never the data."""
    assert pgq.checks.MAX_PAYLOAD_BYTES == 1_000_000
    assert "1,000,000-byte limit" in str(pytest.raises(pgq.BadInput, pgq.enqueue, None, "k", {"b": "x" * 10**6}).value)
    with db.connection() as listener, db.connection() as conn:
        run(listener, "listen")
        job_id = pgq.enqueue(conn, "build_invoice", {"blob": "x" * 900_000})
        heard = list(listener.notifies(timeout=2, stop_after=1))
        assert [n.payload for n in heard] == ["build_invoice"]
        assert len(run(conn, "lab/job_row", {"id": job_id}).fetchone()) > 0


def test_completing_twice_and_failing_unclaimed_leave_rows_alone(db):
    with db.connection() as conn:
        pgq.enqueue(conn, "send_receipt", {})
        never = pgq.enqueue(conn, "send_receipt", {})
        [job] = pgq.claim(conn)
        pgq.complete(conn, job)
        before = snapshot(conn)
        with pytest.raises(pgq.NotClaimed, match="already completed"):
            pgq.complete(conn, job)
        with pytest.raises(pgq.NotClaimed, match="never claimed"):
            pgq.fail(conn, pgq.Job(never, "send_receipt", {}, attempts=0), "boom")
        assert snapshot(conn) == before

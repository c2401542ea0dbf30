"""The migration helper on a real PostgreSQL: each try under a lock timeout, what it
waited on read from pg_blocking_pids, landing on a later try once the blocker goes,
and the refusals (a transaction that already holds a lock on jobs; bad input)."""

from __future__ import annotations

import psycopg
import pytest

from pgq_teach import migrate
from pgq_teach.errors import BadInput
from pgq_teach.statements import run


def has_lab_column(db) -> bool:
    with db.connection() as conn:
        cursor = run(conn, "lab/all_jobs")
        return "lab_region" in [c.name for c in cursor.description]


def test_lands_on_a_later_try_once_the_blocker_goes(db):
    blocker = db.connect(autocommit=False)
    run(blocker, "lab/count_jobs")  # an open transaction that read jobs: ACCESS SHARE, kept
    blocker_pid = blocker.info.backend_pid
    seen: list[migrate.MigrationTry] = []

    def after(attempt: migrate.MigrationTry) -> None:
        seen.append(attempt)
        if not attempt.landed:
            blocker.rollback()  # the blocker goes after the first try gave up

    try:
        result = migrate.migrate(
            db, "lab/add_column_constant", lock_timeout_ms=150, tries=5, backoff_s=0.05, on_try=after
        )
    finally:
        blocker.close()
    assert result.landed
    assert [t.landed for t in result.tries] == [False, True]
    assert seen == result.tries
    first = result.tries[0]
    assert first.error.startswith("55P03")
    assert [b.pid for b in first.blockers] == [blocker_pid]
    assert first.blockers[0].state == "idle in transaction"
    assert "count(*)" in first.blockers[0].query
    assert first.blockers[0].xact_start is not None and first.blockers[0].query_start is not None
    assert result.tries[1].blockers == []
    assert has_lab_column(db)
    assert "waited on pid" in result.summary()


def test_gives_up_when_the_blocker_stays(db):
    with db.connection(autocommit=False) as blocker:
        run(blocker, "lab/count_jobs")
        blocker_pid = blocker.info.backend_pid
        with pytest.raises(migrate.MigrationGaveUp) as caught:
            migrate.migrate(db, "lab/add_column_constant", lock_timeout_ms=50, tries=3, backoff_s=0.01)
        blocker.rollback()
    tries = caught.value.migration.tries
    assert [t.landed for t in tries] == [False, False, False]
    assert caught.value.migration.blocker_pids == {blocker_pid}
    assert not has_lab_column(db)


def test_refuses_a_transaction_that_holds_a_lock_on_jobs(db):
    with db.connection(autocommit=False) as conn:
        run(conn, "lab/count_jobs")
        with pytest.raises(BadInput) as caught:
            migrate.migrate(db, "lab/add_column_constant", conn=conn)
        conn.rollback()
    message = str(caught.value)
    assert "\n" not in message and "AccessShareLock on jobs" in message
    assert not has_lab_column(db)


def test_runs_in_a_transaction_that_holds_no_lock_on_jobs(db):
    with db.connection(autocommit=False) as conn:
        run(conn, "lab/ping")  # a transaction is open, but it has not touched jobs
        result = migrate.migrate(db, "lab/add_column_constant", conn=conn)
        assert result.landed and conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        conn.commit()
    assert has_lab_column(db)


@pytest.mark.parametrize(
    ("args", "kwargs", "names"),
    [
        (("lab/no_such_statement",), {}, "name"),
        ((42,), {}, "name"),
        (("lab/seed_jobs",), {}, "parameters"),
        (("lab/add_column_constant",), {"lock_timeout_ms": 0}, "lock_timeout_ms"),
        (("lab/add_column_constant",), {"tries": 0}, "tries"),
        (("lab/add_column_constant",), {"backoff_s": -1}, "backoff_s"),
    ],
)
def test_bad_input_gets_one_line(db, args, kwargs, names):
    with pytest.raises(BadInput) as caught:
        migrate.migrate(db, *args, **kwargs)
    message = str(caught.value)
    assert "\n" not in message and names in message
    assert not has_lab_column(db)


def test_bad_target_gets_one_line():
    with pytest.raises(BadInput) as caught:
        migrate.migrate(None, "lab/add_column_constant")
    assert "\n" not in str(caught.value)

"""Each test's database: a copy of the run's template, named apart from every
other parallel worker's, and as separate from its siblings as any database."""

from __future__ import annotations

import os
import time

import psycopg
import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import ReusedDatabase, counts
from pgq_teach import databases
from pgq_teach.experiments import indexes
from pgq_teach.statements import run, run_one


def test_a_workers_tag_ends_every_name_once_within_postgres_limit(monkeypatch):
    monkeypatch.setenv(databases.TAG_VARIABLE, "gw1")
    assert databases.database_name("01-double-send") == "pgq_01_double_send_gw1"
    assert databases.database_name("01_double_send_gw1") == "pgq_01_double_send_gw1"  # read back from a name
    long = databases.database_name("x" * 100)
    assert len(long) == 63 and long.endswith("_gw1")
    monkeypatch.delenv(databases.TAG_VARIABLE)
    assert databases.database_name("01-double-send") == "pgq_01_double_send"


def test_under_xdist_this_tests_database_carries_its_workers_tag(db):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    assert db.name.endswith(f"_{worker}") if worker else "_gw" not in db.name


def test_a_clone_copies_the_rows_and_then_goes_its_own_way(pg, db):
    with db.connection() as conn:
        job_id = pgq.enqueue(conn, "send_receipt", {"n": 1})
    clone = databases.clone_database(f"{db.name}_clone", db)
    try:
        with clone.connection() as theirs, db.connection() as ours:
            assert [j.id for j in pgq.claim(theirs)] == [job_id]
            assert counts(theirs) == {"running": 1}
            assert counts(ours) == {"ready": 1}
    finally:
        databases.drop_database(clone.name.removeprefix(databases.PREFIX))


def test_lock_holders_are_read_in_this_database_only(template, db):
    """Clones share their tables' oids, so pg_locks must be read with the database:
    a lock on another clone's jobs table is not this one's."""
    other = databases.clone_database(f"{db.name}_other", template)
    try:
        with other.connection(autocommit=False, application_name="pgq-holder elsewhere") as holder:
            run(holder, "lab/count_jobs")  # AccessShareLock on that database's jobs
            with other.connection() as there, db.connection() as here:
                seen_there = run(there, "lab/jobs_lock_holders", {"prefix": "pgq-holder"}).fetchall()
                seen_here = run(here, "lab/jobs_lock_holders", {"prefix": "pgq-holder"}).fetchall()
                assert run_one(here, "lab/count_jobs")  # the same table oid, here too
            holder.rollback()
    finally:
        databases.drop_database(other.name.removeprefix(databases.PREFIX))
    assert [row[2] for row in seen_there] == ["AccessShareLock"]
    assert seen_here == []


@pytest.mark.parametrize("label", ["", "   "])
def test_an_empty_label_is_refused(label):
    with pytest.raises(pgq.BadInput, match="label"):
        databases.database_name(label)


@pytest.fixture
def keeper(template, admin):
    """A reused database of the test's own, beside the one its worker's tests take turns in."""
    kept = ReusedDatabase(template, label="t_reuse_check")
    yield kept
    kept.drop(admin.get())


def test_a_reused_database_reaches_the_next_test_empty_with_no_session_left(keeper, admin):
    first = keeper.next_test(admin.get())
    first_oid = oid(first)
    left_open = first.connect()
    with first.connection() as conn:
        ids = [pgq.enqueue(conn, "send_receipt", {"n": n}) for n in range(3)]
        assert counts(conn) == {"ready": 3}  # a scan of jobs, counted with the inserts
    second = keeper.next_test(admin.get())
    assert oid(second) == first_oid, keeper.anew_because  # the same database, emptied, not made anew
    with pytest.raises(psycopg.OperationalError):
        run(left_open, "lab/ping")  # ended, as DROP DATABASE ... WITH (FORCE) ended them
    left_open.close()
    assert counters(second) == (0, 0, 0)  # no scans, inserts or planner statistics carried over
    with second.connection() as conn:
        assert counts(conn) == {}
        assert pgq.enqueue(conn, "send_receipt", {"n": 0}) == ids[0]  # identities restarted


def oid(db) -> int:
    with db.connection() as conn:
        return run(conn, "admin/catalog_mark", row_factory=dict_row).fetchone()["database_oid"]


def options(db) -> list | None:
    with db.connection() as conn:
        return run(conn, "admin/jobs_options").fetchone()[0]


def counters(db) -> tuple:
    with db.connection() as conn:
        return run(conn, "admin/jobs_counters").fetchone()


def claims(db) -> list:
    with db.connection() as conn:
        return pgq.claim(conn)  # returns the fence token: fails where the column is gone


@pytest.mark.parametrize(
    "change, back",
    [
        ("exercise/drop_ready_index", lambda db: "jobs_ready_idx" in indexes.sizes(db)),  # rows go
        ("lab/drop_fence_token", lambda db: claims(db) == []),  # a row is rewritten
        ("lab/analyze_jobs", lambda db: counters(db)[2] == 0),  # ANALYZE's rows
        ("lab/autovacuum_off", lambda db: options(db) is None),  # a table's own settings (pg_class)
    ],
    ids=["a dropped index", "a dropped column", "the planner's statistics", "a table's settings"],
)
def test_a_test_that_changed_the_schema_leaves_the_next_one_a_fresh_copy(keeper, admin, change, back):
    changed = keeper.next_test(admin.get())
    with changed.connection() as conn:
        pgq.enqueue(conn, "send_receipt", {"n": 1})
        run(conn, change)
    fresh = keeper.next_test(admin.get())
    assert back(fresh)


def test_a_test_that_truncated_its_tables_still_leaves_the_database_to_reuse(keeper, admin):
    """TRUNCATE gives a table (and its indexes and sequence) new files, rewriting their pg_class
    rows: no change of schema, so the database is emptied and kept, not copied anew."""
    first = keeper.next_test(admin.get())
    first_oid = oid(first)
    with first.connection() as conn:
        pgq.enqueue(conn, "send_receipt", {"n": 1})
        run(conn, "lab/reset_jobs")
        pgq.enqueue(conn, "send_receipt", {"n": 2})
    second = keeper.next_test(admin.get())
    assert oid(second) == first_oid  # the same database, not a copy made under the same name
    with second.connection() as conn:
        assert counts(conn) == {}


# Autovacuum made slow enough to find it at work: it visits each database every second and
# sleeps 100 ms after each page it reads (a cost of 1 per page, a limit of 1).
SLOW_AUTOVACUUM = {"autovacuum_naptime": "1s", "autovacuum_vacuum_cost_delay": "100ms"}
SLOW_AUTOVACUUM |= {"autovacuum_vacuum_cost_limit": "1"}


def test_an_autovacuum_worker_at_work_in_a_database_is_no_session_left_in_it(alone, alone_db):
    """The reused database's flake: an autovacuum worker is listed in pg_stat_activity under
    the database it visits, and counted as a session left, it made the database anew."""
    with psycopg.connect(alone.dsn, autocommit=True) as admin:
        for name, value in SLOW_AUTOVACUUM.items():
            run(admin, "admin/alter_system", {"value": value}, idents={"name": name})
        run(admin, "admin/reload_config")
        try:
            with alone_db.connection() as conn:
                run(conn, "lab/seed_done_jobs", {"count": 20_000, "distinct": True})
                run(conn, "exercise/wrong/cleanup_all_at_once")  # dead rows: work for autovacuum here
                deadline = time.monotonic() + 60
                while run_one(conn, "lab/autovacuum_workers")[1] == 0 and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert run_one(conn, "lab/autovacuum_workers")[1] >= 1, "no autovacuum came within 60 s"
            assert run_one(admin, "admin/sessions_in_database", {"name": alone_db.name}) == (0,)
            assert run_one(admin, "admin/end_sessions_in_database", {"name": alone_db.name}) == (0,)
            with alone_db.connection() as conn:
                assert run_one(conn, "lab/autovacuum_workers")[1] >= 1  # still at work: it was there
        finally:
            for name in SLOW_AUTOVACUUM:
                run(admin, "admin/alter_system_reset", idents={"name": name})
            run(admin, "admin/reload_config")

"""Lesson 10's experiments on a real PostgreSQL: the dashboard's load and
snapshots, cleanup in batches against one DELETE, a day partition dropped
against deleted, and the idle-in-transaction timeout's 25P03."""

from __future__ import annotations

from datetime import date

import pytest

from helpers import cannot_run, chart_rows, wait_for
from pgq_teach.errors import BadInput
from pgq_teach.experiments import operations


def test_cleanup_in_batches_holds_short_transactions_and_leaves_the_same_dead_rows(db):
    r = operations.cleanup_vs_bulk_delete(db, rows=20_000, batch=2_000)
    assert not r.stopped
    assert r.batched.rows == r.in_subquery.rows == r.bulk.rows == 20_000
    assert r.batched.transactions == r.in_subquery.transactions == 11 and r.bulk.transactions == 1
    assert r.batched.dead_rows == r.bulk.dead_rows == 20_000
    assert len(r.batched.transaction_ms) == 11


def test_the_cleanup_batch_finds_its_rows_by_primary_key_and_the_in_form_scans_the_table(db):
    r = operations.cleanup_vs_bulk_delete(db, rows=20_000, batch=2_000)
    assert r.plans["in"].seq_scan_rows >= 20_000  # a Seq Scan of all of jobs, under a hash join
    assert "Hash Join" in r.plans["in"].shape
    assert r.plans["keyset"].seq_scan_rows == 0  # the keyset walks the primary key: no Seq Scan
    assert r.plans["keyset"].shape.count("Index Scan using jobs_pkey") == 2, r.plans["keyset"].shape
    assert any("Index Scan using jobs_pkey" in line for line in r.library_plan), r.library_plan
    # No buffer comparison at this size: 2,000 primary-key lookups read about three pages each,
    # more than a Seq Scan of this small table (PostgreSQL 15 counts 6,096 against 2,339); the
    # scan's rows, asserted above, are what grow with the table (lesson 10 measures 1M rows).
    assert "rows read by Seq Scans" in r.summary()


def test_cleanup_records_the_bulk_deletes_dead_rows_for_lesson_12(db, tmp_path, monkeypatch):
    from pgq_teach import measurements

    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    operations.cleanup_vs_bulk_delete(db, rows=5_000, batch=1_000)
    assert measurements.read(measurements.BULK_DELETE_DEAD_ROWS)["value"] == 5_000


def test_dropping_a_day_partition_leaves_no_dead_rows(db):
    r = operations.partition_drop_vs_delete(db, rows_per_day=5_000)
    assert r.dead_after_delete == 5_000 and r.dead_after_drop == 0
    assert "AccessExclusiveLock" in r.drop_locks_on_parent  # seen from a second session before the commit
    assert r.partitions_left == ["jobs_history_20261101", "jobs_history_20261103"]
    # the DELETE kept its day's file as large as before; the database shrank by the dropped day's
    # size once the DROP committed (within 64 kB: a catalog page or two may move meanwhile)
    assert r.deleted_day_bytes[1] == r.deleted_day_bytes[0] > 0
    before, after = r.database_bytes_around_drop
    assert r.dropped_day_bytes > 0 and abs(before - after - r.dropped_day_bytes) <= 64 * 1024


def test_idle_in_transaction_timeout_ends_the_session_with_25p03(db):
    r = operations.idle_timeout(db, timeout_s=0.5)
    if r.skipped:
        cannot_run(db, r.skipped)
    assert r.setting_seen == "500ms" and r.sqlstate == "25P03" and r.session_gone
    assert r.other_role_survived  # the timeout is the worker role's, not the server's
    # a statement kept active past the timeout is not idle: only the other two timeouts end it
    assert r.active_statement["idle_in_transaction_session_timeout"] is None
    assert r.active_statement["statement_timeout"] == "57014"
    if db.server.major >= 17:
        assert r.active_statement["transaction_timeout"] == "25P04"
    else:
        assert r.active_statement["transaction_timeout"].startswith("not on this server")


def test_the_stored_default_naptime_run_loads_and_shows_both_settings_alike():
    r = operations.stored_autovacuum_run()
    assert r.naptime == "1min" and r.churn_s >= 120 and len(r.runs) == 2
    defaults, guide = r.with_settings("defaults"), r.with_settings("guide")
    assert len(defaults.samples) > 100 and isinstance(defaults.samples[0], tuple)
    assert abs(defaults.autovacuums - guide.autovacuums) <= 1
    # lesson 10 says so: at the default naptime even the guide's peak went far past the
    # defaults' threshold (its check compares the learner's live run with this)
    assert guide.peak_dead > 10 * defaults.starts_at(r.base_rows)
    assert (
        guide.peak_dead > 0.5 * defaults.peak_dead
    )  # the visits' timing moves each peak (0.79 to 1.03 seen)
    assert "autovacuum_naptime 1min" in r.summary()
    drawn = chart_rows(r.chart(), "line")  # thinned to about 200 a line, each peak kept
    assert len(drawn) <= 2 * 200 and max(p["n_dead_tup"] for p in drawn) == max(
        defaults.peak_dead, guide.peak_dead
    )
    # it says it is a stored run, when and on which server, and the knobs it ran with
    assert date.fromisoformat(r.recorded_on) and r.knobs["autovacuum_naptime"] == "60s"
    assert f"stored run: recorded {r.recorded_on} on PostgreSQL {r.server_version}" in r.summary()
    assert "this server" not in r.summary().replace("not this server", "")


def test_a_stored_run_round_trips(tmp_path):
    stored = operations.stored_autovacuum_run()
    path = operations.store_autovacuum_run(stored, tmp_path / "run.json")
    again = operations.stored_autovacuum_run(path)
    assert again.runs == stored.runs and again.naptime == stored.naptime
    assert again.recorded_on == stored.recorded_on  # a stored run keeps the day it was measured


@pytest.mark.parametrize(
    "call",
    [
        lambda db: operations.cleanup_vs_bulk_delete(db, rows=10),
        lambda db: operations.cleanup_vs_bulk_delete(db, rows=5_000, batch=0),
        lambda db: operations.partition_drop_vs_delete(db, rows_per_day="many"),
        lambda db: operations.idle_timeout(db, timeout_s=0),
        lambda db: operations.Load(db, workers=0),
        lambda db: operations.autovacuum_per_table(db, naptime="5s"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(db, call):
    with pytest.raises(BadInput):
        call(db)


def test_the_autovacuum_lab_runs_defaults_and_the_guide_settings_under_the_same_churn(alone_db):
    # The lab sets autovacuum_naptime server-wide, and the launcher visits every database in
    # turn, so other tests' databases would slow it: an embedded server of its own (alone_db).
    db = alone_db
    r = operations.autovacuum_per_table(db, base_rows=50_000, churn_s=8, jobs_per_tick=200, guess=12_000)
    if r.skipped:
        cannot_run(db, r.skipped)
    defaults, guide = r.with_settings("defaults"), r.with_settings("guide")
    assert r.naptime == "1s" and not r.stopped
    assert (guide.scale_factor, guide.threshold) == (0.01, 1000)  # the second run used the guide's settings
    starts = defaults.starts_at(50_000)  # 10,050
    one_tick = 2 * 200  # dead versions a tick adds: claim + complete
    assert len(defaults.vacuums_so_far) == len(defaults.busy_elsewhere) == len(defaults.samples)
    # What the settings guarantee, read from pg_stat_user_tables: with the defaults,
    # no autovacuum finished on jobs before the threshold (within one tick's dead rows)
    assert defaults.peak_dead >= starts
    assert defaults.dead_before_first_autovacuum >= starts - one_tick, (
        defaults.samples,
        defaults.vacuums_so_far,
    )
    # With the guide's, autovacuum may start at 1,500 dead rows, and a free worker comes
    # within a naptime (1 s, about 4,000 dead rows here). The lab waited until no worker
    # was busy in another database; if all of them still were before the first
    # autovacuum, the timing is not the settings' to keep, so say so rather than guess.
    if not r.visits_in_time:
        pytest.skip(
            f"the launcher visits {r.databases} databases in turn, so this one only every "
            f"{r.visit_every_s:.1f} s, while the churn adds {r.dead_per_visit:,.0f} dead rows: too seldom "
            "for the guide's settings to show"
        )
    if guide.starved_before_first_autovacuum:
        pytest.skip(
            f"all {guide.max_workers} autovacuum workers were busy in other databases before the "
            f"guide's first autovacuum, at {guide.busy_elsewhere.count(guide.max_workers)} of "
            f"{len(guide.busy_elsewhere)} ticks, after the lab waited "
            f"{guide.waited_for_workers_s:.0f} s for them"
        )
    assert guide.autovacuums >= 1
    assert guide.dead_before_first_autovacuum < starts, (
        guide.samples,
        guide.vacuums_so_far,
        guide.busy_elsewhere,
    )
    rules = {row["reference"]: row["value"] for row in chart_rows(r.chart(), "rule")}
    assert rules[f"defaults: autovacuum starts at {starts:,.0f}"] == starts  # each setting's start, drawn
    from pgq_teach.widgets.dashboard import autovacuum_chart, autovacuum_html

    html = autovacuum_html(r)
    assert "<td class=pgq-num>12,000</td>" in html and "peak n_dead_tup, defaults" in html
    assert {row["settings"] for row in chart_rows(autovacuum_chart(r)[0], "line")} == {"defaults", "guide"}
    assert "your guess for the defaults' peak: 12,000" in r.summary()
    with db.connection() as conn:  # the server-wide setting is back to its default
        assert operations.run(conn, "lab/show_naptime").fetchone()[0] == "1min"


def test_an_unmade_guess_reads_no_guess(db):
    r = operations.partition_drop_vs_delete(db, rows_per_day=1_000)
    assert r.guess is None and r.comparison()[0][1] == "no guess" and "your guess: no guess" in r.summary()


def test_autovacuum_lab_leaves_a_server_it_does_not_own_alone(db):
    from dataclasses import replace

    theirs = replace(db, server=replace(db.server, backend="dsn", origin=""))
    r = operations.autovacuum_per_table(theirs, churn_s=5)
    assert r.skipped.startswith("autovacuum_naptime is a server-wide setting") and r.runs == []
    assert "skipped" in r.summary()
    from pgq_teach.widgets.dashboard import autovacuum_html

    assert "Skipped: autovacuum_naptime" in autovacuum_html(r)


def test_the_status_query_estimates_done_on_a_big_table_and_counts_exactly_on_a_small_one(db):
    """stats_status.sql stays cheap on a big table: done and dead are estimated from the
    planner's statistics above 200,000 rows, ready and running always counted; the exact
    count (queue.status_counts, count_by_status.sql) reads everything."""
    from pgq_teach import queue
    from pgq_teach.statements import run

    with db.connection() as conn:
        run(conn, "lab/seed_done_jobs", {"count": 5_000, "distinct": True})
        run(conn, "lab/seed_jobs", {"kind": "send_receipt", "count": 10})
        small = queue.stats(conn)
        assert small.counts == {"done": 5_000, "ready": 10} and small.estimated == []
        run(conn, "lab/seed_done_jobs", {"count": 245_000, "distinct": True})
        # the inserts' counts reach the statistics before ANALYZE sets the live count, or
        # they would be added to it again afterwards (as the autovacuum lab does)
        run(conn, "lab/flush_stats")
        run(conn, "lab/analyze_jobs")
        big = queue.stats(conn)
        assert big.estimated == ["done"] and big.counts["ready"] == 10  # ready: still counted
        assert abs(big.counts["done"] - 250_000) < 250_000 * 0.02  # the planner's estimate, within 2%
        assert "done ~" in str(big)
        assert queue.status_counts(conn) == {"done": 250_000, "ready": 10}  # the exact count
        # a cleanup of most done rows shows at once, not at the next ANALYZE: reltuples still
        # says 250,010 rows until then, the statistics' live count 50,010 (so counted exactly)
        run(conn, "lab/jobs_autovacuum", {"enabled": False, "scale_factor": 0.2, "threshold": 50})
        queue.cleanup(conn, batch=5_000)
        run(conn, "lab/seed_done_jobs", {"count": 50_000, "distinct": True})
        run(conn, "lab/flush_stats")  # the statistics see the deletes within seconds

        def counted_exactly() -> bool:
            run(conn, "lab/flush_stats")
            after = queue.stats(conn)
            return after.counts == {"done": 50_000, "ready": 10} and after.estimated == []

        assert wait_for(counted_exactly, timeout=15, step=0.5), queue.stats(conn)


def test_the_cleanup_subquery_reads_past_dead_rows_unless_its_scan_is_synchronized(db, conn):
    """teaching/cleanup_from_first_page.sql's LIMIT subquery is a Seq Scan of jobs. Started at the table's
    first page (a table under a quarter of shared_buffers, or synchronize_seqscans off)
    it reads past every row the earlier batches deleted, until VACUUM clears them;
    synchronized (the default, on a bigger table) it starts where the last batch's scan
    reached, and stays about one batch's pages. Lesson 10 and the statement's header
    say both, so each half of this fails on a world where only the other held. (The
    library's cleanup_done.sql walks the primary key from :after instead.)"""
    from pgq_teach.statements import run, run_one

    run(conn, "lab/jobs_autovacuum", {"enabled": False, "scale_factor": 0.2, "threshold": 50})
    run(conn, "lab/seed_done_jobs", {"count": 320_000, "distinct": True})
    run(conn, "lab/vacuum_jobs")
    run(conn, "lab/analyze_jobs")
    pages, synchronized_above, synchronizing = run_one(conn, "lab/seqscan_sync_cutoff")
    if pages <= synchronized_above or not synchronizing:
        cannot_run(db, f"jobs has {pages} pages; this server synchronizes scans above {synchronized_above}")
    first = operations.limit_scan_buffers(conn, 5_000)
    for _ in range(32):  # 160,000 of the 320,000 rows: half the table's pages now hold only dead rows
        with conn.transaction():
            run(conn, "teaching/cleanup_from_first_page", {"batch": 5_000})
    synchronized = operations.limit_scan_buffers(conn, 5_000)
    run(conn, "lab/set_synchronize_seqscans", {"enabled": False})
    from_first_page = operations.limit_scan_buffers(conn, 5_000)
    assert first < 200  # one batch's pages, about 95
    assert synchronized < 3 * first, (first, synchronized)
    assert from_first_page > pages // 3, (pages, from_first_page)  # past the deleted half


def test_the_keyset_cleanup_stays_flat_while_the_first_page_form_grows(db):
    """Lesson 10's claim at a test's size: on a table under a quarter of shared_buffers the
    Seq Scan form starts at page 0 in every batch and its last batch reads past every
    page the earlier batches emptied, while the library's keyset (cleanup_done.sql) reads the same in both."""
    r = operations.cleanup_scaling(db, rows=60_000, batch=2_000)
    keyset, first_page = r.run("keyset"), r.run("first_page")
    assert keyset.rows == first_page.rows == 60_000 and keyset.batches == 31
    assert [n for n, _ in keyset.samples] == [1, 15, 30]
    emptied = r.table_pages * 29 // 30  # the pages the 29 batches before the last one emptied
    assert abs(keyset.samples[-1][1] - keyset.samples[0][1]) < 0.05 * emptied, keyset.samples
    if r.synchronized:
        cannot_run(db, f"jobs has {r.table_pages} pages: its Seq Scans are synchronized here")
    # the last batch reads past every one of those pages (PostgreSQL 15 reads more per batch
    # than 18 for the same 2,000 lookups, so compare the pages added, not a ratio)
    assert first_page.samples[-1][1] - first_page.samples[0][1] > 0.9 * emptied, first_page.samples


def test_stored_cleanup_runs_cover_both_versions_and_both_shared_buffers():
    """The runs lesson 10 quotes (tools/record_cleanup_scaling.py): 10x the lesson's rows,
    PostgreSQL 15 and 18, shared_buffers 128 MB and 1 GB; the keyset flat in each."""
    stored = operations.stored_scaling_runs()
    assert {(r.server_major, r.shared_buffers) for r in stored} >= {(15, "128MB"), (18, "128MB"), (18, "1GB")}
    for r in stored:
        assert r.rows == 2_000_000 and not r.stopped
        assert r.run("keyset").growth < 1.2, r.label()
        # the form with no keyset: its middle batch costs what its first did only where its scans
        # are synchronized (the lesson says which configurations those are)
        first, middle, _ = (b for _, b in r.run("first_page").samples)
        assert (middle < 1.2 * first) == r.synchronized, r.label()
        # and even synchronized its last batch wrapped around the table, past the middle batch's
        # rows that the sampler's rolled-back EXPLAIN had moved the starting point beyond
        assert r.run("first_page").growth > 1.5, r.label()
    # a keyset batch reads several times more on 15 than on 18 (one index descent per id before 17)
    pg15, pg18 = (
        [r for r in stored if r.server_major == v and r.shared_buffers == "128MB"][0] for v in (15, 18)
    )
    assert pg15.run("keyset").samples[0][1] > 2 * pg18.run("keyset").samples[0][1]
    # and on 18 the keyset's two walks of the primary key read about twice a Seq Scan batch at its best
    assert 1.5 < pg18.run("keyset").samples[0][1] / pg18.run("first_page").samples[0][1] < 2.5


def test_the_loads_forgotten_session_is_gone_from_the_server_only_after_stop(db):
    load = operations.Load(db, rate=10, workers=1)
    load.start()
    try:
        assert load.forgotten_session_gone(wait_s=0.5) is False  # still idle in transaction
    finally:
        load.stop()
    assert load.forgotten_session_gone()
    assert operations.Load(db, stuck_session=False).forgotten_session_gone() is False  # none opened


def test_a_snapshot_finds_the_forgotten_session_by_pid_beside_an_older_holder_elsewhere(db):
    """The sessions query lists transaction IDs from every database, so on a shared server the
    oldest row can be another database's: the lesson finds the forgotten session by its pid."""
    from pgq_teach import databases, seeding
    from pgq_teach.statements import run

    label = "older-" + db.name.removeprefix(databases.PREFIX)
    other = databases.open_database(label, reset=True, server=db.server)
    load = operations.Load(db, rate=10, workers=1)
    try:
        with other.connection() as conn:
            seeding.reset_and_seed(conn, "send_receipt", 1)
        with other.connection(autocommit=False) as hold:
            run(hold, "teaching/hold_skip_locked").fetchall()  # a row lock: the transaction gets an ID
            load.start()
            try:
                with db.connection() as conn:
                    snap = operations.snapshot(conn)
            finally:
                load.stop()
            hold_pid = hold.info.backend_pid
            hold.rollback()
    finally:
        databases.drop_database(label, server=db.server)
    elsewhere, forgotten = snap.session(hold_pid), snap.session(load.stuck_pid)
    assert elsewhere is not None and elsewhere["datname"] == other.name
    assert elsewhere["reach"] == "every database" and elsewhere["backend_xid"] is not None
    assert forgotten is not None and forgotten["datname"] == db.name
    assert forgotten["reach"] == "this database" and forgotten["backend_xid"] is None
    # opened first, the other database's transaction is the older: "the oldest row" would name it
    assert snap.session_age_s(hold_pid) > snap.session_age_s(load.stuck_pid) > 0
    assert snap.session(None) is None and snap.session_age_s(None) == 0.0

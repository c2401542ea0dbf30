"""Lesson 09's experiments on a real server: dead versions from a drain,
what an empty claim reads before and after VACUUM, and the idle
REPEATABLE READ transaction that stops VACUUM (guide #17, #18)."""

import contextlib
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest

from helpers import cannot_run, chart_rows, counts, gone, seed
from pgq_teach import seeding
from pgq_teach.errors import BadInput
from pgq_teach.experiments import bloat, horizon
from pgq_teach.infra import embedded
from pgq_teach.statements import run, run_one

# Drains measure what on-access pruning leaves: the buffers a drain touches, the table's size.
# A write transaction open anywhere on the server, in any database, holds that pruning back
# (every snapshot's xmin is the oldest transaction ID running on the server: GetSnapshotData,
# procarray.c), and the parallel pass has plenty: every test here runs on an embedded server of
# its module's own.
pytestmark = pytest.mark.usefixtures("alone")

JOBS = 5_000  # big enough for an index of many pages, small enough to be quick


@pytest.mark.parametrize("kwargs", [{"jobs": 0}, {"jobs": 1.5}, {"batch": 0}, {"samples": True}])
def test_drain_refuses_bad_input_before_touching_the_table(db, conn, kwargs):
    seed(conn, 3)
    with pytest.raises(BadInput):
        bloat.drain(db, **kwargs)
    assert counts(conn) == {"ready": 3}


def test_drain_completes_every_job_and_leaves_dead_versions(db, conn):
    result = bloat.drain(db, jobs=JOBS, samples=5)
    assert not result.stopped and result.drained == JOBS
    assert counts(conn) == {"done": JOBS}
    assert result.samples[-1].table_bytes > result.samples[0].table_bytes
    # the statistics count two dead versions per job (claim, done), none before the drain: exact
    # on 15 and later, where the drain's session flushes its counts (pg_stat_force_next_flush)
    assert result.samples[0].dead_tuples == 0 and result.dead_tuples == 2 * JOBS
    assert [s.drained for s in result.samples] == sorted(s.drained for s in result.samples)


def test_a_stopped_drain_says_so(db):
    stop = threading.Event()
    stop.set()
    result = bloat.drain(db, jobs=JOBS, stop=stop)
    assert result.stopped and result.drained == 0


def test_empty_claim_refuses_when_a_job_is_ready(db, conn):
    seed(conn, 1)
    with pytest.raises(BadInput, match="ready"):
        bloat.empty_claim(db)
    assert counts(conn) == {"ready": 1}  # nothing was claimed


def test_vacuum_brings_the_empty_claim_down_to_the_index_root(db):
    bloat.drain(db, jobs=JOBS)
    before = bloat.empty_claim(db)
    report = bloat.vacuum(db)
    after = bloat.empty_claim(db)
    assert report.not_removable == 0
    assert before.buffers >= 5  # the walk over the drained entries' index pages
    assert after.buffers <= 2 < before.buffers


def test_an_idle_repeatable_read_transaction_stops_vacuum(db):
    idle = bloat.IdleTransaction(db)
    pid = idle.open()
    try:
        assert any(row["pid"] == pid and row["backend_xmin"] is not None for row in bloat.holders(db))
        bloat.drain(db, jobs=JOBS)
        held = bloat.vacuum(db)
        held_claim = bloat.empty_claim(db)
    finally:
        idle.close()
    freed = bloat.vacuum(db)
    assert held.removed == 0 and held.not_removable == 2 * JOBS  # claim and done, each job
    assert freed.removed == 2 * JOBS and freed.not_removable == 0
    assert bloat.empty_claim(db).buffers <= 2 < held_claim.buffers
    assert not any(row["pid"] == pid for row in bloat.holders(db))


def test_an_idle_snapshot_in_another_database_is_not_listed_and_holds_nothing_back(db):
    """stats_sessions.sql lists a snapshot alone from this database only: since PostgreSQL 14 a
    snapshot (no transaction ID) held in another database does not hold back VACUUM here."""
    from pgq_teach import databases

    other = databases.open_database("holder-elsewhere", reset=True)  # on the same server as db
    idle = bloat.IdleTransaction(other)
    try:
        pid = idle.open()
        assert not any(row["pid"] == pid for row in bloat.holders(db))
        bloat.drain(db, jobs=JOBS)
        report = bloat.vacuum(db)
    finally:
        idle.close()
        databases.drop_database("holder-elsewhere")
    assert report.not_removable == 0  # beside a holder in this database: 2 * JOBS (the test above)


def test_a_transaction_id_held_in_another_database_is_listed_first_and_its_bystander_after(db):
    """The culprit of a cross-database hold is the ID's holder, in the other database; a session
    here whose snapshot carries that ID as its xmin is a bystander, listed after it."""
    seen = horizon.held_elsewhere(db)  # in a second database on db's server, made and dropped for it
    assert seen.bystander_xmin == seen.holder_xid  # on a server of its own: a snapshot here starts from it
    first = seen.rows[0]
    assert first["pid"] == seen.holder_pid and first["datname"] != db.name
    assert first["backend_xid"] == seen.holder_xid and first["reach"] == "every database"
    bystander = seen.row(seen.bystander_pid)
    assert bystander is not None and bystander["backend_xid"] is None
    assert bystander["reach"] == "this database"
    assert seen.carrier_before_bystander()


def test_the_drain_samples_who_holds_the_horizon_and_pruning_waits_on_a_foreign_id(db):
    """Lesson 09's first check reads the drain's own samples of the activity query: none saw a
    holder on a drain alone, every one saw a transaction ID held in another database, and that
    drain pruned nothing (a bigger table) though pgstattuple, run after the ID ended, finds as
    few dead versions as after a drain alone: the reads since pruned the full pages."""
    from pgq_teach import databases

    alone = bloat.drain(db, jobs=JOBS, samples=5)
    assert alone.held_samples == 0
    other = databases.open_database("holder-of-an-id", reset=True)  # on the same server as db
    try:
        with other.connection() as conn:
            seeding.reset_and_seed(conn, "send_receipt", 1)
        with other.connection(autocommit=False) as hold:
            run(hold, "teaching/hold_skip_locked").fetchall()  # a row lock: the transaction gets an ID
            held = bloat.drain(db, jobs=JOBS, samples=5)
            hold.rollback()
    finally:
        databases.drop_database("holder-of-an-id")
    assert held.held_samples == len(held.samples)
    assert held.table_bytes > 1.05 * alone.table_bytes
    effect = bloat.vacuum_effect(db)
    if effect.exact_before.available:
        assert effect.exact_before.dead < held.dead_tuples // 10


@contextlib.contextmanager
def logical_wal(db) -> Iterator[None]:
    """wal_level = logical for the block: on the embedded server (the test's own, `alone`) it is
    set and the server restarted, then put back; on another server it must be so already."""
    with db.connection() as conn:
        level = run_one(conn, "lab/wal_level")[0]
    if level == "logical":
        yield
        return
    if db.server.backend != "embedded":
        cannot_run(db, "a logical slot needs wal_level = logical")
    with psycopg.connect(db.server.dsn, autocommit=True) as admin:
        run(admin, "admin/alter_system", {"value": "logical"}, idents={"name": "wal_level"})
    embedded.restart()
    try:
        yield
    finally:
        with psycopg.connect(db.server.dsn, autocommit=True) as admin:
            run(admin, "admin/alter_system_reset", idents={"name": "wal_level"})
        embedded.restart()


def test_a_logical_slot_is_listed_as_holding_back_the_catalogs_only_and_vacuum_removes_all(alone_db):
    """A logical slot's catalog_xmin holds back the system catalogs, never jobs. On a server of
    its own: it restarts the server with wal_level = logical, which the course's server lacks."""
    db = alone_db
    slot = f"pgq_test_{db.name}"[:63]
    with logical_wal(db), db.connection() as conn:
        run(conn, "lab/create_logical_slot", {"slot": slot})
        try:
            bloat.drain(db, jobs=1_000)
            report = bloat.vacuum(db)
            row = next(r for r in bloat.holders(db) if r["state"] == f"slot: {slot}")
        finally:
            run(conn, "lab/drop_slot", {"slot": slot})
    assert row["backend_xmin"] is None and row["catalog_xmin"] is not None
    assert row["reach"] == "system catalogs only"
    assert report.not_removable == 0 and report.removed > 0


def test_idle_in_transaction_session_timeout_ends_the_session(db):
    idle = bloat.IdleTransaction(db, timeout="300ms")
    idle.open()
    assert idle.alive()
    deadline = time.monotonic() + 10
    while idle.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not idle.alive()
    assert idle.next_statement_sqlstate() == "25P03"  # what the forgetful client hears next
    idle.close()  # ending an already-ended session is quiet


def test_a_live_idle_transaction_runs_its_next_statement(db):
    idle = bloat.IdleTransaction(db)
    try:
        idle.open()
        assert idle.next_statement_sqlstate() is None
    finally:
        idle.close()


def test_the_lab_records_each_step(db):
    lab = bloat.BloatLab(db, jobs=JOBS)
    try:
        lab.open_transaction()
        drained = lab.drain()
        held = lab.vacuum()
        lab.end_transaction()
        freed = lab.vacuum()
    finally:
        lab.close()
    assert [s.action for s in lab.steps] == ["drain", "vacuum", "vacuum"]
    assert drained.transaction_open and held.transaction_open and not freed.transaction_open
    assert held.vacuum.not_removable == 2 * JOBS and freed.vacuum.not_removable == 0
    assert freed.claim.buffers < held.claim.buffers
    assert [r["buffers"] for r in chart_rows(lab.chart(), "bar")] == [s.claim.buffers for s in lab.steps]


def test_an_idle_transaction_makes_the_drain_touch_more_buffers(db):
    plain = bloat.drain(db, jobs=JOBS)
    lab = bloat.BloatLab(db, jobs=JOBS)
    try:
        lab.open_transaction()
        held = lab.drain().drain
    finally:
        lab.close()
    assert plain.buffers > JOBS  # every claim and completion reads pages of jobs and its indexes
    # no entry can be marked dead, no page pruned: more pages visited (about a third more at
    # 100,000 jobs, lesson 09; a few percent at this size)
    assert held.buffers > plain.buffers


def test_pgstattuple_counts_exactly_where_the_server_has_it(db):
    bloat.drain(db, jobs=JOBS)
    bloat.vacuum(db)
    exact = bloat.exact_counts(db)
    if not exact.available:
        cannot_run(db, exact.reason)
    assert exact.live == JOBS and exact.dead == 0


def test_the_drain_charts_draw_every_sample(db):
    result = bloat.drain(db, jobs=JOBS, samples=4)
    points = chart_rows(result.size_chart(), "line")
    assert [p["jobs drained"] for p in points] == [s.drained for s in result.samples]
    assert chart_rows(result.size_chart(), "rule") == [
        {"reference": "guide #17: 29 MB (PostgreSQL 16)", "value": 29}
    ]
    assert len(chart_rows(result.dead_chart(), "line")) == len(result.samples)


def test_the_drain_rows_and_summary_say_no_guess_until_one_is_made(db):
    silent = bloat.drain(db, jobs=JOBS, samples=2)
    assert silent.comparison()[0] == ("table size, MB", "no guess", round(silent.table_mb, 1), "29 (PG 16)")
    assert "(your guess: no guess)" in silent.summary()
    guessed = bloat.drain(db, jobs=JOBS, samples=2, guess=12.5)
    assert guessed.comparison()[0][1] == 12.5 and "(your guess: 12.5 MB)" in guessed.summary()


def test_vacuum_effect_measures_the_claim_on_both_sides_of_vacuum(db):
    bloat.drain(db, jobs=JOBS)
    effect = bloat.vacuum_effect(db, guess=40)
    assert effect.vacuum.not_removable == 0 and effect.after.buffers <= 2 < effect.before.buffers
    rows = {measure: (guess, here) for measure, guess, here, _ in effect.comparison()}
    assert rows["empty claim right after the drain, buffers"] == (40, effect.before.buffers)
    assert rows["empty claim after VACUUM, buffers"] == (None, effect.after.buffers)
    if effect.exact_before.available:
        assert effect.vacuum.removed == effect.exact_before.dead and effect.exact_after.dead == 0


def test_the_idle_transaction_is_a_named_session_with_a_timeline(db):
    from pgq_teach.experiments import sessions

    idle = bloat.IdleTransaction(db, timeout="10s")
    pid = idle.open()
    try:
        seen = sessions.activity(db, bloat.IDLE_NAME)
        assert [(r.pid, r.state) for r in seen] == [(pid, "idle in transaction")]
        assert [s.statement for s in idle.session.timeline] == ["lab/set_idle_timeout"]
        assert idle.session.in_transaction
    finally:
        idle.close()
    assert not idle.is_open
    assert gone(lambda: sessions.activity(db, bloat.IDLE_NAME)), sessions.activity(db, bloat.IDLE_NAME)


def test_the_lab_report_sets_the_guess_beside_guide_18(db):
    lab = bloat.BloatLab(db, jobs=JOBS)
    try:
        assert [row[2] for row in lab.report().comparison()] == [None, None, None]  # nothing measured yet
        lab.open_transaction()
        lab.drain()
        held = lab.vacuum()
        lab.end_transaction()
        freed = lab.vacuum()
    finally:
        lab.close()
    rows = lab.report(guess=900).comparison()
    assert [(guess, here, guide) for _, guess, here, guide in rows] == [
        (None, 2 * JOBS, 200_000),
        (900, held.claim.buffers, 1_609),
        (None, freed.claim.buffers, 1),
    ]
    assert lab.report().comparison()[1][1] == "no guess"


def test_the_drain_claims_through_the_ready_index_once_the_table_is_analyzed(db):
    """bloat.prepare runs ANALYZE (autovacuum, and so auto-ANALYZE, is off on the table):
    with statistics the claim walks jobs_ready_idx in run_at order, the walk lesson 09 measures."""
    r = bloat.drain(db, jobs=2_000, batch=100)
    assert r.claims_through_ready_index, r.claim_plan


def test_a_job_leaves_two_dead_versions_and_a_third_when_cleanup_deletes_it(db, conn):
    """Lesson 09 says two per job while the done row stays, three once cleanup deletes it
    (lesson 12 says three): counted by the server."""
    from pgq_teach import queue
    from pgq_teach.statements import run, run_one

    drained = bloat.drain(db, jobs=3_000, batch=100)
    assert drained.dead_tuples == 2 * 3_000
    assert queue.cleanup(conn, batch=1_000) == 3_000
    run(conn, "lab/flush_stats")
    assert run_one(conn, "lab/table_bloat")[3] == 3 * 3_000


def test_the_idle_snapshot_sees_none_of_the_jobs_whose_dead_versions_it_holds(db):
    """VACUUM keeps versions by transaction ID, not by what the snapshot can see: every
    drained job was inserted after the idle transaction began, and it sees none of them."""
    lab = bloat.BloatLab(db, jobs=2_000)
    try:
        lab.open_transaction()
        lab.drain()
        step = lab.vacuum()
        assert step.vacuum.removed == 0 and step.vacuum.not_removable == 2 * 2_000
        assert lab.idle.jobs_it_sees() == 0
    finally:
        lab.close()


def test_the_vacuum_report_names_the_index_pages_it_deleted(db):
    bloat.drain(db, jobs=20_000, batch=100)
    report = bloat.vacuum(db)
    total, deleted = report.index_pages("jobs_ready_idx")
    assert total > 10 and deleted >= 0.9 * total - 2
    assert report.index_pages("no_such_index") is None


def test_an_idle_read_committed_transaction_holds_nothing_back(db):
    quiet = bloat.read_committed_idle(db, jobs=1_000)
    assert quiet.state == "idle in transaction" and not quiet.listed_as_holder
    assert quiet.vacuum.not_removable == 0


def test_the_idle_lab_says_what_to_press_next_until_vacuum_has_run_on_each_side_of_the_end():
    from pgq_teach.experiments.bloat import DrainStep
    from pgq_teach.widgets.idle_lab import next_step

    def steps(*actions: tuple[str, bool]) -> list[DrainStep]:
        return [DrainStep(action, held, claim=None) for action, held in actions]  # type: ignore[arg-type]

    assert next_step([], transaction_open=False).startswith("Press Open")
    assert next_step([], transaction_open=True).startswith("Press Drain")
    assert "VACUUM" in next_step(steps(("drain", True)), transaction_open=True)
    held = steps(("drain", True), ("vacuum", True))
    assert next_step(held, transaction_open=True).startswith("Press End")
    assert next_step(held, transaction_open=False) == "Press VACUUM again."
    story = steps(("drain", True), ("vacuum", True), ("vacuum", False))
    assert next_step(story, transaction_open=False) is None  # done
    # a VACUUM with no transaction before the held one does not finish the story
    assert next_step(steps(("vacuum", False), ("vacuum", True)), transaction_open=True) is not None
    # nor does a VACUUM on each side of the end with no drain under the transaction: it would
    # declare done and compare 0 removable versions with the guide's 200,000
    no_drain = steps(("vacuum", True), ("vacuum", False))
    assert next_step(no_drain, transaction_open=False) == "Press Open an idle transaction, then Drain."
    assert next_step(steps(("vacuum", True)), transaction_open=True).startswith("Press Drain")

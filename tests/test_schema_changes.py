"""Lesson 10d's experiments on a real PostgreSQL, with the library's Workers running:
the plain ALTER behind an open report stops every claim and lets leases run out; the
same migration through `migrate` keeps claims coming and lands on a later try; and
which lock each kind of schema change takes."""

from __future__ import annotations

import pytest

from helpers import chart_rows
from pgq_teach.errors import BadInput
from pgq_teach.experiments import schema_changes
from pgq_teach.widgets.schema_lab import LocksLab, MigrationLab


def test_the_freeze_stops_every_claim_until_the_report_ends(db):
    frozen = schema_changes.freeze(db, rows=2_000, hold_s=3.0, lease_s=1.0)
    # the lock queue: the migration waits for the report, the queue's own statements for the migration
    migration = next(q for q in frozen.lock_queue if q.pid == frozen.migration_pid)
    assert migration.mode == "AccessExclusiveLock" and not migration.granted
    assert migration.blocked_by == [frozen.report_pid]
    report = next(q for q in frozen.lock_queue if q.pid == frozen.report_pid)
    assert report.granted and report.state == "idle in transaction"
    behind = frozen.waiting_behind_migration()
    assert any(q.who.startswith("worker") for q in behind), frozen.summary()
    assert all(q.mode in ("RowShareLock", "RowExclusiveLock") for q in behind)  # what claims and beats need
    # no claim returned while the queue stood, and claims came back once the migration landed
    assert frozen.claims_while_queued == 0
    assert frozen.claims_between(frozen.landed_at_s, frozen.ended_at_s) > 0
    assert frozen.released_at_s <= frozen.landed_at_s
    # the freeze outlasted the lease: held jobs were given up; a job runs again only once reaped
    assert frozen.leases_lost > 0
    assert frozen.run_again <= frozen.leases_expired
    rows = chart_rows(frozen.chart(), "line")
    assert any(r["claims per second"] == 0 for r in rows) and any(r["claims per second"] > 0 for r in rows)
    assert "WAITING" in frozen.queue_table().html()


def test_the_fix_keeps_claims_coming_and_lands_on_a_later_try(db):
    fixed = schema_changes.fix(db, rows=2_000, hold_s=3.0, lease_s=1.0, lock_timeout_ms=200)
    assert len(fixed.tries) > 1 and fixed.tries[-1].landed
    assert not any(t.landed for t in fixed.tries[:-1])
    for attempt in fixed.tries[:-1]:  # every try that gave up waited on the report, and said so
        assert attempt.error.startswith("55P03")
        # the report, and maybe a worker's statement that held its lock at that moment
        assert fixed.report_pid in [b.pid for b in attempt.blockers]
    assert fixed.claims_while_queued > 0  # the queue never stopped
    assert fixed.landed_at_s >= fixed.released_at_s
    assert fixed.run_again <= fixed.leases_expired


def test_which_lock_each_change_takes(db):
    survey = schema_changes.which_locks(db, sizes=(2_000, 20_000))
    for rows in (2_000, 20_000):
        constant = survey.at("ADD COLUMN, constant default", rows)
        volatile = survey.at("ADD COLUMN, volatile default", rows)
        assert constant.lock == volatile.lock == "AccessExclusiveLock"
        assert not constant.rewrote and volatile.rewrote  # metadata only, against a new file
        assert constant.read_waits and constant.write_waits
        plain = survey.at("CREATE INDEX", rows)
        concurrent = survey.at("CREATE INDEX CONCURRENTLY", rows)
        assert (plain.lock, plain.read_waits, plain.write_waits) == ("ShareLock", False, True)
        assert (concurrent.lock, concurrent.read_waits, concurrent.write_waits) == (
            "ShareUpdateExclusiveLock",
            False,
            False,
        )
        not_valid = survey.at("ADD CONSTRAINT CHECK NOT VALID", rows)
        validate = survey.at("VALIDATE CONSTRAINT", rows)
        assert not_valid.lock == "AccessExclusiveLock"
        assert (validate.lock, validate.read_waits, validate.write_waits) == (
            "ShareUpdateExclusiveLock",
            False,
            False,
        )
    assert survey.invalid_after_failed_build == ["lab_kind_key"]
    assert survey.failed_build_error.startswith("23505")
    assert len(chart_rows(survey.chart(), "bar")) == len(survey.changes) == 14


@pytest.mark.parametrize(
    ("call", "kwargs", "named"),
    [
        (schema_changes.freeze, {"rows": 0}, "rows"),
        (schema_changes.freeze, {"lease_s": 0}, "lease_s"),
        (schema_changes.fix, {"lock_timeout_ms": 0}, "lock_timeout_ms"),
        (schema_changes.freeze, {"hold_s": "long"}, "hold_s"),
        (schema_changes.which_locks, {"sizes": ()}, "sizes"),
        (schema_changes.which_locks, {"sizes": (1,)}, "sizes"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(db, call, kwargs, named):
    with pytest.raises(BadInput) as caught:
        call(db, **kwargs)
    assert named in str(caught.value) and "\n" not in str(caught.value)


def test_the_locks_lab_runs_headless_to_its_end(db):
    lab = LocksLab(db, rows=1_000)
    survey = lab.run_and_wait(300)
    try:
        assert survey.sizes == [1_000, 10_000]  # the lesson's size, and 10 times it
        assert lab.done and "pgq-done" in lab._dom_classes
        assert "pgq-lock-survey" in lab.output.value  # the table of changes is drawn
    finally:
        lab.close()


def test_the_migration_lab_reads_its_knobs_when_run_is_pressed(db):
    lab = MigrationLab(db, lock_timeout_ms=300)
    try:
        lab.lease_s.value, lab.hold_s.value, lab.rows.value = 2.0, 1.0, 500
        assert lab.settings() == {"lease_s": 2.0, "hold_s": 1.0, "rows": 500, "lock_timeout_ms": 300}
        assert MigrationLab(db).lock_timeout_ms is None  # the freeze has no lock timeout to set
    finally:
        lab.close()

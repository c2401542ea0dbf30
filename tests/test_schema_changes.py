"""Lesson 10d's experiments on a real PostgreSQL, with the library's Workers running:
the plain ALTER behind an open report stops every claim and lets leases run out; the
same migration through `migrate` keeps claims coming and lands on a later try; and
which lock each kind of schema change takes."""

from __future__ import annotations

import pytest

from helpers import chart_rows
from pgq_teach.errors import BadInput
from pgq_teach.experiments import schema_changes


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
    assert "WAITING" in frozen.summary()


def test_the_fix_keeps_claims_coming_and_lands_on_a_later_try(db):
    fixed = schema_changes.fix(db, rows=2_000, hold_s=3.0, lease_s=1.0, lock_timeout_ms=200)
    assert len(fixed.tries) > 1 and fixed.tries[-1].landed
    assert not any(t.landed for t in fixed.tries[:-1])
    for attempt in fixed.tries[:-1]:  # every try that gave up waited on the report, and said so
        assert attempt.error.startswith("55P03")
        assert [b.pid for b in attempt.blockers] == [fixed.report_pid]
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

"""Lesson 10c's experiments on a real server (pgq_teach/experiments/uniqueness.py, timeouts.py
and alerts.py): each asserts what the server showed (ids, waits on a lock, statuses, leases
read on the server's clock, the kind's stats), never how long a run took."""

import pytest

from pgq_teach.errors import BadInput
from pgq_teach.experiments import alerts, timeouts, uniqueness


def test_a_double_click_makes_one_job_keeps_another_kinds_and_a_done_job_frees_its_key(db):
    r = uniqueness.double_click(db, order_id=7)
    assert r.second_waited  # the server showed the second session waiting on the first's insert
    assert r.second_id == r.first_id and r.created_live == 1
    assert r.paid_id != r.first_id and r.again_id not in (r.first_id, r.paid_id)
    assert [(j.id, j.kind, j.status) for j in r.jobs] == [
        (r.first_id, uniqueness.CREATED, "done"),
        (r.paid_id, uniqueness.PAID, "ready"),
        (r.again_id, uniqueness.CREATED, "ready"),
    ]
    assert "(kind, unique_key)" in r.index_definition and "'running'" in r.index_definition


def test_a_hung_handler_keeps_its_lease_until_a_job_timeout_fails_it(db):
    r = timeouts.hung_handler(db, lease_s=1.0, watch_s=2.0, timeout_s=0.5)
    first, last = r.readings[0], r.readings[-1]
    assert {x.status for x in r.readings} == {"running"} and r.beat_status == "running"
    assert last.at_s > r.lease_s  # still running past the lease its claim wrote
    assert (
        last.leased_until_s > first.leased_until_s and last.leased_until_s > last.at_s
    )  # the beats moved it on
    assert r.alert_past_timeout and r.alert_age_s > r.timeout_s
    assert (r.timed_out_status, r.timed_out_attempts, r.handler_told) == ("ready", 1, True)
    assert r.timed_out_error.startswith("JobTimeout")
    assert r.retry_wait_s > r.backoff_base_s  # the kind's backoff, base x 2^1, not fail.sql's 20 s
    assert (r.stuck, r.second_status, r.claimed_while_stuck) == (1, "ready", 0)
    # the stuck handler's own job: failed at its timeout while the handler still ran, and its
    # late return changed nothing (the Worker dropped it; a fenced completion matches no row)
    assert (r.stuck_job_status, r.stuck_job_error[:10]) == ("ready", "JobTimeout")
    assert (r.late_status, r.late_finished, r.late_completion_rows) == ("ready", False, 0)
    assert r.freed_second_status == "done"  # the executor came back when the handler returned


def test_the_enqueue_to_done_p99_sees_late_invoices_that_no_dead_job_shows(db):
    r = alerts.late_invoices(db, jobs=100, late=4, backoff_base_s=0.5)
    assert (r.done, r.dead) == (100, 0)  # the dead-jobs alert has nothing to say
    assert r.failure_rate == pytest.approx(4 / 104)  # four failed tries of 104
    assert r.done_p99_s >= r.first_retry_s  # the late ones waited out their backoff
    assert r.done_p50_s < r.first_retry_s  # the middle did not


@pytest.mark.parametrize(
    "call",
    [
        lambda db: uniqueness.double_click(db, order_id=0),
        lambda db: timeouts.hung_handler(db, timeout_s=0),
        lambda db: timeouts.hung_handler(db, lease_s=2, watch_s=1),
        lambda db: alerts.late_invoices(db, jobs=10, late=11),
    ],
)
def test_bad_input_is_refused_before_anything_runs(db, conn, call):
    with pytest.raises(BadInput):
        call(db)

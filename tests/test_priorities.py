"""experiments.priorities: starvation of a low priority under a steady urgent stream, and aging
(sql/age_priorities.sql) as one answer, on a real server."""

import threading

import pytest

import pgq_teach as pgq
from pgq_teach.experiments import priorities
from pgq_teach.statements import run


def test_without_aging_the_low_job_starves_and_with_aging_it_runs_once_it_has_waited(db):
    result = priorities.starvation(db, load=5, rounds=200, age_after_s=0.05)
    assert result.starved
    assert result.without_aging.rounds_run == 200
    aged = result.with_aging
    assert aged.claimed_in_round is not None  # in the first round that ran after it had waited
    assert aged.waited_s is not None and aged.waited_s >= 0.05
    assert "never ran in 200 rounds" in result.summary()


def test_aging_moves_only_ready_jobs_that_waited_past_it(conn):
    old = pgq.enqueue(conn, "k", {}, priority=7, run_at=-priorities.timedelta(minutes=5))
    pgq.enqueue(conn, "k", {}, priority=7)  # due now: has not waited
    pgq.enqueue(conn, "k", {}, priority=7, run_at=priorities.timedelta(minutes=5))  # not yet due
    moved = [r[0] for r in run(conn, "age_priorities", {"after": priorities.timedelta(minutes=1)})]
    assert moved == [old]
    assert [job.id for job in pgq.claim_priority(conn)] == [old]


@pytest.mark.parametrize("kwargs", [{"load": 0}, {"rounds": 0}, {"age_after_s": 0}])
def test_bad_settings_are_refused_before_the_table_is_touched(conn, db, kwargs):
    job = pgq.enqueue(conn, "k", {})
    with pytest.raises(pgq.BadInput):
        priorities.starvation(db, **kwargs)
    assert pgq.queue.job_state(conn, job)["status"] == "ready"


def test_the_urgent_job_waits_out_the_backlog_under_fifo_and_goes_first_under_priorities(db):
    result = priorities.urgent(db, backlog=500, batch=20)
    assert result.ahead_fifo == 500  # the whole backlog, 25 claims of 20, before the claim that took it
    assert result.ahead_priority == 0  # the first claim took it
    assert not result.stopped
    rows = result.comparison()
    assert [row[2] for row in rows] == [500, 0]


@pytest.mark.parametrize("kwargs", [{"backlog": 0}, {"batch": 0}, {"batch": 1_001}])
def test_bad_urgent_settings_are_refused_before_the_table_is_touched(conn, db, kwargs):
    pgq.enqueue(conn, "k", {})
    with pytest.raises(pgq.BadInput):
        priorities.urgent(db, **kwargs)
    assert pgq.queue.status_counts(conn) == {"ready": 1}


def test_a_stopped_urgent_run_says_the_urgent_job_was_not_reached(db):
    stop = threading.Event()
    stop.set()
    result = priorities.urgent(db, backlog=100, stop=stop)
    assert result.stopped and not result.reached_fifo and not result.reached_priority
    assert "(stopped early)" in result.summary()
    assert "took 0 jobs before it" not in result.summary()  # it never got there: no "before it"
    assert result.summary().count("was stopped before it reached it") == 2


def test_a_stopped_starvation_run_says_what_did_not_run(db):
    stop = threading.Event()
    stop.set()
    result = priorities.starvation(db, rounds=10, stop=stop)
    assert "(stopped early)" in result.summary()
    assert "never ran" not in result.summary()  # it was never tried, which is not starving


def test_under_overload_aging_puts_the_whole_aged_backlog_ahead_of_a_new_urgent_job(conn):
    """Aging is unbounded (lesson 10b and docs/beyond-fifo.md say so): jobs aged to priority 0
    keep their older run_at, so an urgent job enqueued after them waits for all of them."""
    backlog = pgq.enqueue_many(conn, "k", [{}] * 1_000, priority=5, run_at=-priorities.timedelta(minutes=5))
    urgent = pgq.enqueue(conn, "k", {"urgent": True}, priority=0)
    moved = [r[0] for r in run(conn, "age_priorities", {"after": priorities.timedelta(minutes=1)})]
    assert sorted(moved) == sorted(backlog)
    ahead, ids = 0, []
    while urgent not in ids:
        ids = [job.id for job in pgq.claim_priority(conn, batch=100)]
        assert ids
        ahead += len(ids)
    assert ahead - len(ids) == 1_000 and ids == [urgent]  # ten full claims of aged jobs first

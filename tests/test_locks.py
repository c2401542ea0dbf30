"""The lock lab's model: two sessions on a real PostgreSQL, and the guide's
scripted replay (figures #2, #3 and #4)."""

import threading

import pytest

from helpers import gone, job_row, seed
from pgq_teach import BadInput
from pgq_teach.experiments import locks
from pgq_teach.experiments.locks import LockSession as Session
from pgq_teach.experiments.locks import activity, prepare, replay


def lab_threads():
    return [t for t in threading.enumerate() if t.name.startswith("pgq-lab") and t.is_alive()]


@pytest.fixture
def two_jobs(db):
    prepare(db)
    return db


@pytest.fixture
def sessions(two_jobs):
    a, b = Session(two_jobs, "A"), Session(two_jobs, "B")
    yield a, b
    a.close()
    b.close()


# --- the guide's sequence -------------------------------------------------------------


def test_for_update_waits_on_a_transaction_lock_then_takes_job_2(db):
    """Guide #2: B waits (Lock / transactionid) behind A, then rechecks job 1,
    finds it done and returns job 2 once A commits."""
    result = replay(db, "for_update", hold_seconds=1.5)
    assert result.still_waiting_at_sample
    assert result.wait_event == ("Lock", "transactionid")
    assert result.blocked_by_a
    assert result.a_job == 1 and result.b_job == 2
    assert result.b_seconds >= result.a_held  # B's answer came after A's COMMIT, on one clock
    assert result.sqlstate is None
    assert result.guide.number == 2
    with db.connection() as conn:
        assert job_row(conn, 1)["status"] == "done"  # A finished its job
        assert job_row(conn, 2)["status"] == "ready"  # B rolled back
    assert "job 2" in result.summary()


def test_nowait_fails_at_once_with_55P03(db):
    """Guide #3."""
    result = replay(db, "nowait", hold_seconds=2.0)
    assert result.sqlstate == "55P03"
    assert "could not obtain lock on row" in result.message
    assert result.b_job is None
    # At once means before A let go: B's error came while A still held the lock (one clock),
    # and the server never saw B waiting on it. The time is the summary's to report.
    assert result.b_seconds < result.a_held
    assert result.wait_event != ("Lock", "transactionid")
    assert result.guide.number == 3
    assert ("B's error (SQLSTATE)", None, "55P03", "55P03") in result.comparison()


def test_skip_locked_takes_job_2_without_waiting(db):
    """Guide #4."""
    result = replay(db, "skip_locked", hold_seconds=2.0)
    assert result.b_job == 2
    # Without waiting: B had job 2 while A still held job 1 (one clock), and the server never
    # saw B waiting on A's lock. The guide's under 10 ms is the summary's to set beside B's time.
    assert result.b_seconds < result.a_held
    assert result.wait_event != ("Lock", "transactionid")
    assert result.guide.number == 4


def test_replay_leaves_no_session_or_thread_behind(db):
    replay(db, "skip_locked", hold_seconds=0.5)
    assert gone(lambda: activity(db)), activity(db)
    assert lab_threads() == []  # close() joins its thread: at once


def test_replay_closes_everything_when_it_fails_midway(db, monkeypatch):
    def broken_look(source, prefix=locks.LAB_PREFIX):
        raise RuntimeError("the look at pg_stat_activity failed")

    monkeypatch.setattr(locks, "activity", broken_look)
    with pytest.raises(RuntimeError, match="pg_stat_activity"):
        replay(db, "for_update", hold_seconds=0.5)
    monkeypatch.undo()
    assert gone(lambda: activity(db)), activity(db)
    assert lab_threads() == []  # close() joins its thread: at once


@pytest.mark.parametrize(
    "bad",
    [
        dict(clause="yolo"),
        dict(hold_seconds=0),
        dict(hold_seconds=100),
        dict(hold_seconds="2"),
        dict(hold_seconds=True),
    ],
)
def test_replay_refuses_bad_input_before_touching_the_table(db, bad):
    with db.connection() as conn:
        seed(conn, 3)
    with pytest.raises(BadInput):
        replay(db, **{"clause": "for_update", "hold_seconds": 1.0, **bad})
    with db.connection() as conn:
        assert job_row(conn, 3)["status"] == "ready"


# --- one session at a time ---------------------------------------------------------------


def test_a_session_moves_through_its_states(two_jobs, sessions):
    a, _ = sessions
    assert a.state.phase == "idle"
    a.begin()
    assert a.wait_done().phase == "in transaction"
    a.claim("skip_locked")
    state = a.wait_done()
    assert (state.phase, state.job_id, state.in_transaction) == ("got job", 1, True)
    assert state.describe().startswith("job 1 after")
    a.commit()
    state = a.wait_done()
    assert state.phase == "idle" and "job 1 marked done" in state.note
    with two_jobs.connection() as conn:
        assert job_row(conn, 1)["status"] == "done"


def test_commands_queue_and_run_in_order(two_jobs, sessions):
    a, _ = sessions
    a.begin()
    a.claim("for_update")
    a.rollback()
    state = a.wait_done()
    assert state.phase == "idle" and "job 1 ready again" in state.note
    with two_jobs.connection() as conn:
        assert job_row(conn, 1)["status"] == "ready"


def test_a_waiting_claim_shows_in_activity_and_rollback_hands_over_job_1(two_jobs, sessions):
    a, b = sessions
    a.begin()
    a.claim("for_update")
    assert a.wait_done().job_id == 1
    b.claim("for_update")
    waiting = b.wait_until("waiting")
    assert waiting.describe().startswith("waiting…")
    row = _wait_for_lock_wait(two_jobs, b.pid)
    assert (row.wait_event_type, row.wait_event) == ("Lock", "transactionid")
    assert row.blocking_pids == (a.pid,)
    assert row.session == "B"
    a.rollback()  # job 1 was never done, so B's recheck keeps it
    state = b.wait_done()
    assert (state.phase, state.job_id) == ("got job", 1)


def test_a_claim_without_begin_commits_at_once(two_jobs, sessions):
    """As in psql: no BEGIN, so the lock ends with the statement."""
    a, b = sessions
    a.claim("for_update")
    state = a.wait_done()
    assert (state.job_id, state.in_transaction) == (1, False)
    assert "lock is already gone" in state.describe()
    b.claim("nowait")
    assert b.wait_done().job_id == 1  # nothing holds job 1 any more


def test_a_nowait_error_leaves_the_session_usable_after_rollback(two_jobs, sessions):
    a, b = sessions
    a.begin()
    a.claim("for_update")
    a.wait_done()
    b.begin()
    b.claim("nowait")
    state = b.wait_done()
    assert (state.phase, state.sqlstate, state.in_transaction) == ("error", "55P03", True)
    assert "ROLLBACK" in state.describe()
    b.claim("skip_locked")  # the transaction is aborted: the server refuses
    assert b.wait_done().sqlstate == "25P02"
    b.rollback()
    assert b.wait_done().phase == "idle"
    b.begin()
    b.claim("skip_locked")
    assert b.wait_done().job_id == 2


def test_commit_after_an_error_rolls_back(two_jobs, sessions):
    a, b = sessions
    a.begin()
    a.claim("for_update")
    b.begin()
    a.wait_done()
    b.claim("nowait")
    b.commit()
    state = b.wait_done()
    assert state.phase == "idle" and "rolled it back" in state.note


def test_close_cancels_a_waiting_claim_and_ends_the_thread(two_jobs):
    a, b = Session(two_jobs, "A"), Session(two_jobs, "B")
    try:
        a.begin()
        a.claim("for_update")
        a.wait_done()
        b.claim("for_update")
        b.wait_until("waiting")
        _wait_for_lock_wait(two_jobs, b.pid)
        b.close()
        assert b.state.phase == "closed"
        assert [r.session for r in activity(two_jobs)] == ["A"]
        with pytest.raises(RuntimeError, match="closed"):
            b.begin()
    finally:
        a.close()
        b.close()  # twice is fine
    assert gone(lambda: activity(two_jobs)), activity(two_jobs)
    assert lab_threads() == []  # close() joins its thread: at once


def test_an_error_in_the_sessions_thread_is_raised_again_on_wait(two_jobs):
    def broken_display(state):
        raise ValueError("display broke")

    with Session(two_jobs, "A", on_change=broken_display) as a:
        a.begin()
        with pytest.raises(ValueError, match="display broke"):
            a.wait_done()


def test_claim_and_wait_refuse_unknown_names(two_jobs, sessions):
    a, _ = sessions
    with pytest.raises(BadInput):
        a.claim("FOR UPDATE")
    with pytest.raises(BadInput):
        a.wait_until("asleep")


def _wait_for_lock_wait(db, pid, timeout=5.0):
    """Poll pg_stat_activity until `pid` waits for a lock."""
    import time

    deadline = time.monotonic() + timeout
    with db.connection() as conn:
        while True:
            row = next((r for r in activity(conn) if r.pid == pid), None)
            if row is not None and row.waits_for_lock:
                return row
            assert time.monotonic() < deadline, f"pid {pid} never waited for a lock: {row}"
            time.sleep(0.05)


def test_a_reset_gives_up_with_advice_while_a_session_holds_a_job(two_jobs, sessions):
    from pgq_teach.experiments.locks import JobsBusy

    a, _ = sessions
    a.begin()
    a.claim("for_update")
    a.wait_done()
    with pytest.raises(JobsBusy, match="ROLLBACK"):
        prepare(two_jobs, lock_timeout_ms=200)
    a.rollback()
    a.wait_done()
    prepare(two_jobs, lock_timeout_ms=200)  # nothing in the way now


def test_only_the_first_waiter_waits_on_the_transaction_the_rest_on_the_tuple(db):
    """Issue 8 point 4, with three waiters (issue 22): B queues on A's
    transaction; C and D queue on the row's tuple lock, which B holds.
    pg_blocking_pids() names B for C, and B and C for D: C is ahead of D in
    the queue for the same lock (a "soft block"), so D is not blocked by the
    first waiter alone."""
    result = locks.line_of_waiters(db, waiters=3)
    assert list(result.pids) == ["B", "C", "D"]
    assert (result.b_row.wait_event_type, result.b_row.wait_event) == ("Lock", "transactionid")
    assert result.blockers("B") == ("A",)
    for name in ("C", "D"):
        row = result.rows[name]
        assert (row.wait_event_type, row.wait_event) == ("Lock", "tuple")
    assert result.blockers("C") == ("B",) and result.c_waits_behind_b
    assert sorted(result.blockers("D")) == ["B", "C"]
    assert sorted(result.jobs.values(), key=str) == [2, None, None] and result.served_first in result.pids
    assert gone(lambda: activity(db)), activity(db)
    assert lab_threads() == []  # close() joins its thread: at once


def test_a_session_runs_any_named_statement_and_records_its_timeline(two_jobs):
    from pgq_teach.experiments.sessions import Session as Scripted

    with Scripted(two_jobs, "S") as s:
        s.run("lab/job_row", {"id": 1})
        s.begin()
        s.run("teaching/hold_nowait")
        s.rollback()
        s.wait_done()
        steps = s.timeline
    assert steps[0].statement == "lab/job_row" and steps[0].rows and not steps[0].failed
    assert steps[1].statement == "teaching/hold_nowait" and steps[1].in_transaction
    assert steps[0].started <= steps[0].ended <= steps[1].started


def test_the_monitor_surfaces_its_errors(db, monkeypatch):
    from pgq_teach.experiments import sessions

    monitor = sessions.ActivityMonitor(db)

    def broken(*args, **kwargs):
        raise RuntimeError("monitor broke")

    monkeypatch.setattr(sessions, "activity", broken)
    with pytest.raises(RuntimeError, match="monitor broke"):
        monitor.wait_for(lambda r: True, "anything", timeout=2)
    assert isinstance(monitor.error, RuntimeError)
    with pytest.raises(RuntimeError):
        monitor.read()
    monitor.close()

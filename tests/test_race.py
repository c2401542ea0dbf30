"""Concurrency through the library's claim, and the naive claim's real bug."""

import threading
import time

import psycopg
import pytest

from helpers import chart_rows
from pgq_teach import BadInput, run
from pgq_teach.experiments import race
from pgq_teach.experiments.race import run_race


def test_skip_locked_lease_claim_runs_every_job_exactly_once(db):
    result = run_race(db, workers=8, jobs=400, work_ms=10, mode="lease_skip_locked")
    assert result.claims_per_job == {j: 1 for j in range(1, 401)}
    assert result.done == 400 and result.run_more_than_once == 0


def test_naive_claim_runs_some_jobs_more_than_once(db):
    """Guide #1: the read-then-update race is real on this server too."""
    result = run_race(db, workers=8, jobs=400, work_ms=10, mode="naive")
    assert result.run_more_than_once > 0
    assert result.total_runs > 400
    assert result.done == 400


@pytest.mark.parametrize("mode", ["hold_for_update", "hold_skip_locked", "lease_for_update"])
def test_the_locking_claims_never_run_a_job_twice(db, mode):
    result = run_race(db, workers=4, jobs=80, work_ms=2, mode=mode)
    assert result.run_more_than_once == 0 and result.done == 80


def test_the_guarded_update_runs_no_job_twice_and_counts_its_wasted_claims(db):
    """Issue 8 point 3: UPDATE ... WHERE id = :id AND status = 'ready' re-checks
    the status, so a worker that lost the race updates 0 rows and reads again."""
    result = run_race(db, workers=8, jobs=400, work_ms=10, mode="guarded_update")
    assert result.run_more_than_once == 0 and result.total_runs == result.done == 400
    assert result.wasted_claims > 0  # the price: claims that matched 0 rows
    assert ("wasted claims (matched 0 rows)", None, result.wasted_claims, None) in result.comparison()


def test_a_claimer_replaces_the_built_in_style(db):
    """The exercises' checker races the learner's own claim through claimer=."""
    made = []

    def claimer(conn):
        made.append(conn)
        return race.style_claimer("lease_skip_locked", lambda: None)(conn)

    result = run_race(db, workers=3, jobs=30, work_ms=0, claimer=claimer)
    assert len(made) == 3 and result.mode == race.CUSTOM and result.done == 30
    assert "your own claim" in result.summary()
    assert all(conn.closed for conn in made)


def test_a_failing_claimer_is_raised_and_every_connection_closed(db):
    made = []

    def claimer(conn):
        made.append(conn)
        if len(made) == 2:
            raise RuntimeError("the learner's claim is broken")
        return lambda: None

    with pytest.raises(RuntimeError, match="broken"):
        run_race(db, workers=3, jobs=5, work_ms=0, claimer=claimer)
    assert len(made) == 3 and all(conn.closed for conn in made)


def test_no_connection_leaks_when_one_connect_fails(db, monkeypatch):
    opened = []
    real = db.connect

    def connect(**kwargs):
        if len(opened) == 2:
            raise OSError("no more connections")
        conn = real(**kwargs)
        opened.append(conn)
        return conn

    monkeypatch.setattr(type(db), "connect", lambda self, **kw: connect(**kw))
    with pytest.raises(OSError):
        run_race(db, workers=4, jobs=5, work_ms=0, mode="naive")
    assert len(opened) == 2 and all(conn.closed for conn in opened)


def test_the_sweep_runs_the_naive_race_once_per_worker_count(db):
    stop = threading.Event()
    result = race.sweep_workers(db, workers=(1, 2, 4), jobs=60, work_ms=2, stop=stop)
    assert result.workers == [1, 2, 4] and not result.stopped
    assert result.run_more_than_once[1] == 0 and result.extra_runs[1] == 0  # one worker cannot race itself
    assert all(r.done == 60 for r in result.races)
    lines = chart_rows(result.chart(), "line")  # two lines, a point for each worker count
    assert sorted((r["measure"], r["workers"]) for r in lines) == sorted(
        (m, w) for m in ("jobs run more than once", "extra runs (work done again)") for w in (1, 2, 4)
    )


@pytest.mark.parametrize(
    "bad", [dict(workers=0), dict(jobs=0), dict(work_ms=-1), dict(mode="yolo"), dict(workers=2.5)]
)
def test_race_refuses_bad_input_before_touching_the_table(db, bad):
    run_race(db, workers=2, jobs=5, work_ms=0, mode="lease_skip_locked")
    with pytest.raises(BadInput):
        run_race(db, **{**dict(workers=2, jobs=5, work_ms=0, mode="naive"), **bad})
    from helpers import counts

    with db.connection() as conn:
        assert counts(conn) == {"done": 5}


@pytest.mark.parametrize("level", [r"read\ committed", r"repeatable\ read", "serializable"])
def test_the_naive_mark_goes_through_at_every_level_when_nothing_overlaps(db, level):
    """Lesson 01 and sql/teaching/naive_mark.sql: A reads, B reads, A marks,
    B marks, each statement its own transaction at `level` (asked of the
    server): both marks change the row."""
    race.prepare(db, 2)
    options = f"-c default_transaction_isolation={level}"
    with db.connection(options=options) as a, db.connection(options=options) as b:
        assert run(b, "lab/isolation_level").fetchone()[0] == level.replace("\\", "")
        a_read = run(a, "teaching/naive_read").fetchone()[0]
        b_read = run(b, "teaching/naive_read").fetchone()[0]
        marked = (
            run(a, "teaching/naive_mark", {"id": a_read}).rowcount,
            run(b, "teaching/naive_mark", {"id": b_read}).rowcount,
        )
    assert a_read == b_read == 1 and marked == (1, 1)


@pytest.mark.parametrize(
    "level, b_gets", [(r"read\ committed", 1), (r"repeatable\ read", "40001"), ("serializable", "40001")]
)
def test_a_stricter_level_refuses_the_naive_mark_only_when_it_waited(db, level, b_gets):
    """naive_mark.sql's header: when B's standalone mark has to wait for A's
    uncommitted one, REPEATABLE READ and SERIALIZABLE refuse it with 40001;
    READ COMMITTED marks the job again."""
    race.prepare(db, 2)
    a = db.connect(autocommit=False)
    b = db.connect(options=f"-c default_transaction_isolation={level}", application_name="pgq-test B")
    got: list = []

    def b_marks() -> None:
        try:
            got.append(run(b, "teaching/naive_mark", {"id": 1}).rowcount)
        except psycopg.errors.SerializationFailure as exc:
            got.append(exc.sqlstate)

    try:
        run(a, "teaching/naive_mark", {"id": 1})
        thread = threading.Thread(target=b_marks)
        thread.start()
        with db.connection() as watcher:
            deadline = time.monotonic() + 5
            while not any(
                row[-1] == [a.info.backend_pid]
                for row in run(watcher, "lab/lock_lab_sessions", {"prefix": "pgq-test B"})
            ):
                assert time.monotonic() < deadline, "B was never seen waiting for A"
                time.sleep(0.02)
        a.commit()
        thread.join(10)
    finally:
        a.close()
        b.close()
    assert got == [b_gets]

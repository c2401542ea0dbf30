"""Unique jobs (sql/enqueue_unique.sql, enqueue_many_unique.sql, live_unique_ids.sql): a live
key adds nothing and returns the live job's id, across concurrent sessions; keys are scoped by
kind; a finished job frees its key; bad input is refused before any SQL."""

import threading

import psycopg
import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import counts, job_row, wait_for
from pgq_teach import queue
from pgq_teach.experiments.sessions import together
from pgq_teach.statements import run

PREFIX = "pgq-lab-unique"


def test_a_second_enqueue_of_a_live_key_returns_the_first_job_and_adds_nothing(conn):
    first = queue.enqueue(conn, "send_receipt", {"order": 1}, unique_key="order-1")
    again = queue.enqueue(conn, "send_receipt", {"order": 1, "click": 2}, unique_key="order-1")
    assert again == first
    assert counts(conn) == {"ready": 1}
    assert job_row(conn, first)["payload"] == {"order": 1}  # the first job kept, not overwritten


def test_a_running_job_holds_its_key_and_a_done_one_frees_it(conn):
    first = queue.enqueue(conn, "send_receipt", {}, unique_key="order-1")
    [job] = queue.claim(conn)
    assert queue.enqueue(conn, "send_receipt", {}, unique_key="order-1") == first
    assert queue.complete(conn, job)
    second = queue.enqueue(conn, "send_receipt", {}, unique_key="order-1")
    assert second != first
    assert counts(conn) == {"done": 1, "ready": 1}


def test_another_kind_with_the_same_key_is_kept(conn):
    created = queue.enqueue(conn, "order_created", {}, unique_key="order-7")
    paid = queue.enqueue(conn, "order_paid", {}, unique_key="order-7")
    assert paid != created
    assert counts(conn) == {"ready": 2}


def dead(conn, kind: str, key: str) -> int:
    """A job of `kind` holding `key`, failed on its one try: dead, so its key is free again
    (call it with no other job ready: the claim takes the oldest)."""
    job_id = queue.enqueue(conn, kind, {}, unique_key=key, max_attempts=1)
    [job] = queue.claim(conn)
    queue.fail(conn, job, RuntimeError("the partner is down"))
    assert job_row(conn, job_id)["status"] == "dead"
    return job_id


def test_a_requeue_leaves_dead_a_job_whose_key_a_live_job_holds_and_requeues_the_rest(conn):
    """A dead job's key is free, so a new job may take it; requeuing the dead one then would
    break the unique index and, as one statement, requeue nothing at all."""
    old = dead(conn, "send_receipt", "order-1")
    other = dead(conn, "send_receipt", "order-2")
    plain = dead(conn, "call_webhook", "order-1")  # another kind's key: free to come back
    live = queue.enqueue(conn, "send_receipt", {}, unique_key="order-1")
    assert queue.requeue_dead(conn) == 2
    assert job_row(conn, old)["status"] == "dead"  # the live job does its work
    assert [job_row(conn, i)["status"] for i in (live, other, plain)] == ["ready"] * 3


def test_of_two_dead_jobs_with_one_key_the_requeue_brings_back_the_newest(conn):
    first = dead(conn, "send_receipt", "order-1")
    second = dead(conn, "send_receipt", "order-1")
    assert queue.requeue_dead(conn, "send_receipt") == 1
    assert (job_row(conn, first)["status"], job_row(conn, second)["status"]) == ("dead", "ready")


def test_on_conflict_raise_carries_the_live_job_and_leaves_the_caller_s_transaction_usable(conn):
    first = queue.enqueue(conn, "send_receipt", {}, unique_key="order-1")
    with conn.transaction():
        other = queue.enqueue(conn, "send_receipt", {}, unique_key="order-2")
        with pytest.raises(pgq.Duplicate) as caught:
            queue.enqueue(conn, "send_receipt", {}, unique_key="order-1", on_conflict="raise")
    assert caught.value.job_id == first
    assert "order-1" in str(caught.value)
    assert {job_row(conn, first)["status"], job_row(conn, other)["status"]} == {"ready"}
    assert counts(conn) == {"ready": 2}


def test_enqueue_many_keeps_each_new_key_and_returns_the_live_ids_in_order(conn):
    held = queue.enqueue(conn, "send_receipt", {"n": 0}, unique_key="b")
    ids = queue.enqueue_many(
        conn, "send_receipt", [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}], unique_keys=["a", "b", None, "a"]
    )
    assert ids[1] == held
    assert ids[3] == ids[0]  # repeated within the list: the first's job
    assert len({ids[0], ids[1], ids[2]}) == 3
    assert [job_row(conn, i)["payload"]["n"] for i in ids] == [1, 0, 3, 1]
    assert counts(conn) == {"ready": 3}


def test_enqueue_many_with_raise_adds_nothing_when_one_key_is_live(conn):
    held = queue.enqueue(conn, "send_receipt", {}, unique_key="b")
    with pytest.raises(pgq.Duplicate) as caught:
        queue.enqueue_many(conn, "send_receipt", [{}, {}], unique_keys=["a", "b"], on_conflict="raise")
    assert caught.value.job_id == held
    assert counts(conn) == {"ready": 1}


def test_priority_and_tenant_are_written(conn):
    job_id = queue.enqueue(conn, "send_receipt", {}, priority=3, tenant="acme")
    [many] = queue.enqueue_many(conn, "send_receipt", [{}], priority=9, tenant="zeta")
    assert (job_row(conn, job_id)["priority"], job_row(conn, job_id)["tenant"]) == (3, "acme")
    assert (job_row(conn, many)["priority"], job_row(conn, many)["tenant"]) == (9, "zeta")


def test_eight_sessions_enqueuing_one_key_at_once_make_one_job(db, conn):
    ids: list[int] = [0] * 8

    def enqueue(i: int) -> None:
        with db.connection() as own:
            ids[i] = queue.enqueue(own, "send_receipt", {"session": i}, unique_key="order-1")

    together(8, enqueue)
    assert counts(conn) == {"ready": 1}
    assert set(ids) == {
        run(conn, "live_unique_ids", {"kind": "send_receipt", "unique_keys": ["order-1"]}).fetchone()[1]
    }


@pytest.mark.parametrize("first_commits", [True, False])
def test_seven_sessions_waiting_on_an_uncommitted_key_follow_its_outcome(db, conn, first_commits):
    """The first session's insert is held uncommitted until the seven others are seen waiting on
    it (pg_stat_activity): then it commits (all seven get its id) or rolls back (one of the
    seven adds the job, and the other six get that one's id)."""
    ids: list[int] = [0] * 7

    def enqueue(i: int) -> None:
        with db.connection(application_name=f"{PREFIX}-{i}") as own:
            ids[i] = queue.enqueue(own, "send_receipt", {"session": i}, unique_key="order-1")

    threads = [threading.Thread(target=enqueue, args=(i,)) for i in range(7)]
    with db.connection(application_name=f"{PREFIX}-first") as first, first.transaction():
        first_id = queue.enqueue(first, "send_receipt", {}, unique_key="order-1")
        for t in threads:
            t.start()
        assert wait_for(lambda: len(_waiting(conn)) == 7, timeout=30)
        if not first_commits:
            raise psycopg.Rollback()  # the block rolls back and swallows it
    for t in threads:
        t.join(timeout=30)
    live = run(conn, "live_unique_ids", {"kind": "send_receipt", "unique_keys": ["order-1"]}).fetchall()
    assert counts(conn) == {"ready": 1}
    assert set(ids) == {live[0][1]}
    assert (live[0][1] == first_id) == first_commits


def _waiting(conn) -> list[dict]:
    rows = run(conn, "lab/lock_lab_sessions", {"prefix": PREFIX}, row_factory=dict_row).fetchall()
    return [r for r in rows if r["wait_event_type"] == "Lock"]


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda c: queue.enqueue(c, "k", {}, priority=10), "priority must be from 0 to 9"),
        (lambda c: queue.enqueue(c, "k", {}, priority=-1), "priority must be from 0 to 9"),
        (lambda c: queue.enqueue(c, "k", {}, tenant=""), "tenant must be a non-empty string"),
        (lambda c: queue.enqueue(c, "k", {}, unique_key="k" * 201), "unique_key is 201 characters"),
        (
            lambda c: queue.enqueue(c, "k", {}, unique_key="a", on_conflict="drop"),
            "on_conflict must be one of",
        ),
        (lambda c: queue.enqueue_many(c, "k", [{}, {}], unique_keys=["a"]), "one key per payload"),
        (lambda c: queue.enqueue_many(c, "k", [{}], unique_keys=[""]), "unique_key must be a non-empty"),
    ],
)
def test_bad_input_is_refused_in_one_line_before_any_sql(conn, call, message):
    with pytest.raises(pgq.BadInput, match=message) as caught:
        call(conn)
    assert "\n" not in str(caught.value)
    assert counts(conn) == {}


@pytest.mark.parametrize(
    "level", [psycopg.IsolationLevel.REPEATABLE_READ, psycopg.IsolationLevel.SERIALIZABLE], ids=str
)
def test_eight_sessions_above_read_committed_add_one_job_and_the_others_get_one_clear_error(db, conn, level):
    """Each session's snapshot is taken before any of them enqueues, so the job the first adds is
    invisible to the seven others' look-up: the server refuses their inserts (SQLSTATE 40001)
    and the library says so in one line, naming the key; no duplicate is added."""
    outcomes: list[object] = [None] * 8
    ready = threading.Barrier(8)

    def enqueue(i: int) -> None:
        with db.connection() as own:
            own.isolation_level = level
            with own.transaction():
                assert run(own, "lab/isolation_level").fetchone()[0] == level.name.lower().replace("_", " ")
                ready.wait()  # every snapshot taken, none enqueued yet
                try:
                    outcomes[i] = queue.enqueue(own, "send_receipt", {"session": i}, unique_key="order-1")
                except pgq.UniqueRace as race:
                    outcomes[i] = race

    together(8, enqueue)
    added = [o for o in outcomes if isinstance(o, int)]
    races = [o for o in outcomes if isinstance(o, pgq.UniqueRace)]
    assert len(added) == 1 and len(races) == 7
    assert all("'order-1'" in str(r) and "\n" not in str(r) for r in races)
    assert counts(conn) == {"ready": 1}
    assert (
        run(conn, "live_unique_ids", {"kind": "send_receipt", "unique_keys": ["order-1"]}).fetchone()[1]
        == added[0]
    )

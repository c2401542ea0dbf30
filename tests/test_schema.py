"""schema.sql: the beyond-FIFO columns, indexes and job_kinds, what the taught statements
write into them, and the upgrade of a jobs table made before they existed."""

from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import expire_leases, job_row, seed
from pgq_teach.statements import run

OLD_COLUMNS = ("id", "kind", "payload", "status", "run_at", "attempts", "fence_token", "max_attempts")
NEW_INDEXES = {"jobs_ready_priority_idx", "jobs_ready_tenant_priority_idx", "jobs_live_unique_key_idx"}


def stage(conn, job_id: int, status: str, attempts: int, fence_token: int) -> None:
    """Put one job into a state by hand, with columns every shape of the table has."""
    values = {"id": job_id, "status": status, "attempts": attempts, "fence_token": fence_token}
    run(conn, "exercise/stage_job", {**values, "lease_s": None, "max_attempts": 5})


def all_jobs(conn) -> dict[int, dict]:
    return {row["id"]: row for row in run(conn, "lab/all_jobs", row_factory=dict_row)}


def index_names(conn) -> set[str]:
    return {row[0] for row in run(conn, "exercise/index_shape")}


def test_a_database_from_before_the_beyond_fifo_columns_is_upgraded_with_its_rows(conn):
    run(conn, "lab/drop_jobs_tables")
    run(conn, "lab/create_jobs_before_beyond_fifo")
    seed(conn, 2_000)
    stage(conn, 1, "done", 1, 1)
    stage(conn, 2, "running", 2, 2)
    stage(conn, 3, "dead", 5, 5)
    before = all_jobs(conn)
    filenode = run(conn, "lab/jobs_filenode").fetchone()[0]
    started = datetime.now(timezone.utc)

    run(conn, "schema")

    after = all_jobs(conn)
    assert after.keys() == before.keys()
    for job_id, row in after.items():
        assert {c: row[c] for c in OLD_COLUMNS} == {c: before[job_id][c] for c in OLD_COLUMNS}
    # The upgrade's moment for every old row: one value, from the catalog, no row written for it.
    [enqueued] = {row["enqueued_at"] for row in after.values()}
    assert started - timedelta(seconds=5) <= enqueued <= datetime.now(timezone.utc)
    assert {(row["attempted_at"], row["finished_at"]) for row in after.values()} == {(None, None)}
    assert {(row["priority"], row["tenant"], row["unique_key"]) for row in after.values()} == {
        (0, None, None)
    }
    assert None not in {row["event_id"] for row in after.values()}
    assert len({row["event_id"] for row in after.values()}) == len(after)  # each row its own
    # event_id's volatile default rewrote the table, once: a second open writes nothing.
    rewritten = run(conn, "lab/jobs_filenode").fetchone()[0]
    assert rewritten != filenode
    run(conn, "schema")
    assert run(conn, "lab/jobs_filenode").fetchone()[0] == rewritten
    assert {"jobs_ready_idx", "jobs_running_idx"} | NEW_INDEXES <= index_names(conn)
    assert run(conn, "lab/insert_job_kind", kind_row("send_receipt")).fetchone() == ("send_receipt",)

    # The upgraded table works as a new one: the oldest due job is claimed and finished.
    [job] = pgq.claim(conn)
    assert job.id == 4
    assert pgq.complete(conn, job) is True
    row = job_row(conn, job.id)
    assert row["attempted_at"] is not None and row["finished_at"] >= row["attempted_at"]
    assert row["enqueued_at"] == enqueued


def shape(conn) -> tuple[list[str], set[tuple]]:
    """The jobs table's columns in order, and each index's name, key columns and predicate."""
    columns = [column.name for column in run(conn, "lab/all_jobs").description or []]
    indexes = {
        (name, tuple(keys), predicate) for name, _bytes, keys, predicate in run(conn, "exercise/index_shape")
    }
    return columns, indexes


def test_an_upgraded_table_has_the_shape_of_a_new_one(conn):
    fresh = shape(conn)
    run(conn, "lab/drop_jobs_tables")
    run(conn, "lab/create_jobs_before_beyond_fifo")
    run(conn, "schema")
    assert shape(conn) == fresh


def test_enqueue_writes_enqueued_at_and_a_new_event_id_and_no_retry_moves_them(conn):
    first = pgq.enqueue(conn, "send_receipt", {}, max_attempts=3)
    second = pgq.enqueue(conn, "send_receipt", {}, run_at=timedelta(hours=1))  # never in the way
    row = job_row(conn, first)
    assert row["enqueued_at"] == row["run_at"]  # both now(): a job never retried has waited since then
    assert (row["attempted_at"], row["finished_at"], row["priority"]) == (None, None, 0)
    assert row["event_id"] != job_row(conn, second)["event_id"]
    enqueued, event_id = row["enqueued_at"], row["event_id"]

    [a] = pgq.claim(conn)
    claimed = job_row(conn, first)
    assert claimed["attempted_at"] >= enqueued
    assert pgq.fail(conn, a, "the mail server said no") == "ready"
    retried = job_row(conn, first)
    assert retried["run_at"] > enqueued and retried["finished_at"] is None
    assert (retried["enqueued_at"], retried["event_id"]) == (enqueued, event_id)

    run(conn, "lab/make_due", {"id": first})
    [b] = pgq.claim(conn)
    assert b.id == first and job_row(conn, first)["attempted_at"] > claimed["attempted_at"]
    expire_leases(conn, [b])
    assert pgq.reap(conn) == 1  # back to ready: not finished
    assert job_row(conn, first)["finished_at"] is None
    run(conn, "lab/make_due", {"id": first})
    [c] = pgq.claim(conn)
    assert pgq.fail(conn, c, "no again") == "dead"
    dead = job_row(conn, first)
    assert dead["finished_at"] >= dead["attempted_at"]
    assert (dead["enqueued_at"], dead["event_id"]) == (enqueued, event_id)

    assert pgq.requeue_dead(conn) == 1
    assert job_row(conn, first)["finished_at"] is None
    assert job_row(conn, first)["enqueued_at"] == enqueued


def test_every_way_to_finish_writes_finished_at(conn):
    ids = pgq.enqueue_many(conn, "send_receipt", [{"n": n} for n in range(6)], max_attempts=1)
    jobs = pgq.claim(conn, batch=6)
    assert pgq.complete(conn, jobs[0]) is True
    assert pgq.complete_many(conn, jobs[1:2]) == [True]
    assert pgq.complete_many(conn, jobs[2:3], durable=False) == [True]
    assert pgq.fail_many(conn, [(jobs[3], "no")]) == ["dead"]
    assert pgq.fail_many(conn, [(jobs[4], "no")], durable=False) == ["dead"]
    expire_leases(conn, jobs[5:])
    assert pgq.reap(conn) == 1
    rows = [job_row(conn, job_id) for job_id in ids]
    assert [r["status"] for r in rows] == ["done"] * 3 + ["dead"] * 3
    assert all(r["finished_at"] >= r["attempted_at"] >= r["enqueued_at"] for r in rows)


def test_the_reaper_writes_finished_at_only_on_dead(conn):
    seed(conn, 1)
    jobs = pgq.claim(conn)
    expire_leases(conn, jobs)
    assert pgq.reap(conn) == 1
    row = job_row(conn, jobs[0].id)
    assert (row["status"], row["finished_at"]) == ("ready", None)


def beyond(kind: str = "webhook", priority: int = 0, tenant=None, unique_key=None) -> dict:
    return {"kind": kind, "priority": priority, "tenant": tenant, "unique_key": unique_key}


@pytest.mark.parametrize(
    "values",
    [
        beyond(priority=-1),
        beyond(priority=10),
        beyond(tenant=""),
        beyond(tenant="t" * 201),
        beyond(unique_key=""),
        beyond(unique_key="k" * 201),
    ],
    ids=["priority -1", "priority 10", "empty tenant", "long tenant", "empty key", "long key"],
)
def test_the_table_refuses_what_is_out_of_range(conn, values):
    with pytest.raises(psycopg.errors.CheckViolation):
        run(conn, "lab/insert_job_beyond_fifo", values)


def test_the_table_takes_the_edges_of_each_range(conn):
    for values in (
        beyond(priority=9, tenant="t" * 200, unique_key="k" * 200),
        beyond(priority=0, tenant="a"),
    ):
        run(conn, "lab/insert_job_beyond_fifo", values)


def test_a_unique_key_holds_within_its_kind_while_its_job_is_live(conn):
    [first] = run(conn, "lab/insert_job_beyond_fifo", beyond("receipt", unique_key="order-7")).fetchone()
    with pytest.raises(psycopg.errors.UniqueViolation):
        run(conn, "lab/insert_job_beyond_fifo", beyond("receipt", unique_key="order-7"))
    run(conn, "lab/insert_job_beyond_fifo", beyond("label", unique_key="order-7"))  # another kind: kept
    [job] = pgq.claim(conn)
    assert job.id == first  # running still holds the key
    with pytest.raises(psycopg.errors.UniqueViolation):
        run(conn, "lab/insert_job_beyond_fifo", beyond("receipt", unique_key="order-7"))
    assert pgq.complete(conn, job) is True  # done frees it
    run(conn, "lab/insert_job_beyond_fifo", beyond("receipt", unique_key="order-7"))


def kind_row(kind: str, **values) -> dict:
    defaults = {"backoff_base_s": 10, "backoff_cap_s": 3600, "max_attempts": 5, "timeout_s": None}
    return {"kind": kind, **defaults, **values}


@pytest.mark.parametrize(
    "values",
    [
        {"backoff_base_s": 0},
        {"backoff_base_s": 7200},  # above its cap
        {"backoff_cap_s": 2_592_001},
        {"backoff_cap_s": float("nan")},
        {"max_attempts": 0},
        {"timeout_s": 0},
        {"timeout_s": float("inf")},
    ],
    ids=["base 0", "base over cap", "cap over 30 days", "cap NaN", "0 tries", "timeout 0", "timeout inf"],
)
def test_job_kinds_refuses_a_policy_out_of_range(conn, values):
    with pytest.raises(psycopg.errors.CheckViolation):
        run(conn, "lab/insert_job_kind", kind_row("send_receipt", **values))


def test_job_kinds_takes_todays_values_and_a_timeout(conn):
    run(conn, "lab/insert_job_kind", kind_row("send_receipt"))
    run(
        conn, "lab/insert_job_kind", kind_row("invoice", backoff_cap_s=86_400, max_attempts=25, timeout_s=0.5)
    )

"""schema.sql: the beyond-FIFO columns, indexes and job_kinds, and the upgrade of a jobs
table made before they existed."""

from datetime import datetime, timedelta, timezone

import psycopg
import pytest
from psycopg.rows import dict_row

import pgq_teach as pgq
from helpers import job_row, seed
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
    assert job_row(conn, job.id)["enqueued_at"] == enqueued


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

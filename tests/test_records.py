"""Rows become records by column name, in one place (statements.records): a
statement that returns more columns, or the same ones in another order, still
builds the same Job everywhere the course claims one."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import timedelta

import pytest

import pgq_teach as pgq
from pgq_teach import statements
from pgq_teach.experiments import crash, race
from pgq_teach.experiments.sessions import Session

CLAIM_SHAPES = {
    # two more columns, first
    "wider": [("RETURNING jobs.id,", "RETURNING jobs.status, jobs.last_error, jobs.id,")],
    # the same columns, the fencing token moved first (rows are no longer in the record's field order)
    "reordered": [
        ("RETURNING jobs.id,", "RETURNING jobs.fence_token, jobs.id,"),
        ("jobs.leased_until,\n          jobs.fence_token;", "jobs.leased_until;"),
    ],
}


@pytest.fixture(params=sorted(CLAIM_SHAPES))
def claim_shape(request, tmp_path, monkeypatch):
    """The course's sql/ with claim.sql returning its columns in another shape."""
    copy = tmp_path / "sql"
    shutil.copytree(statements.sql_dir(), copy)
    claim = copy / "claim.sql"
    text = claim.read_text()
    for old, new in CLAIM_SHAPES[request.param]:
        assert text.count(old) == 1
        text = text.replace(old, new)
    claim.write_text(text)
    monkeypatch.setattr(statements, "sql_dir", lambda: copy)
    statements.statement.cache_clear()  # statements are read once per process: read the copy's
    yield request.param
    monkeypatch.undo()
    statements.statement.cache_clear()  # and the course's own again after


def claimed_as_expected(job: pgq.Job, job_id: int, fence_token: int = 1) -> bool:
    return (job.id, job.kind, job.payload, job.attempts, job.max_attempts, job.fence_token) == (
        job_id,
        "send_receipt",
        {"n": job_id},
        1,
        3,
        fence_token,
    ) and job.leased_until is not None


def test_a_claim_of_another_shape_still_builds_each_job_by_name(db, conn, claim_shape):
    ids = [pgq.enqueue(conn, "send_receipt", {"n": n + 1}, max_attempts=3) for n in range(3)]
    assert list(statements.statement("claim").params) == ["batch", "lease"]
    changed = CLAIM_SHAPES[claim_shape][0][1]
    assert changed in statements.statement("claim").text  # the changed copy is in use

    [first] = pgq.claim(conn, lease=timedelta(seconds=30))  # the library's claim
    assert claimed_as_expected(first, ids[0])
    [second] = race.lease_claim(conn, "claim")  # the race lab's
    assert claimed_as_expected(second, ids[1])
    with Session(db, "A") as session:  # the crash lab's, on a scripted session
        third, _seconds = crash.claim_one(session, 30)
    assert third is not None and claimed_as_expected(third, ids[2])


@dataclass(frozen=True)
class Pair:
    a: int
    b: str = "unset"


def test_a_record_takes_each_field_from_its_column_and_leaves_the_rest_out():
    assert statements.record(Pair, {"b": "x", "extra": 1, "a": 2}) == Pair(2, "x")
    assert statements.record(Pair, {"a": 2}) == Pair(2)
    with pytest.raises(TypeError):
        statements.record(Pair, {"b": "x"})  # a field with no column and no default

"""The capacity experiment (lesson 12): commits and WAL bytes of the course's
claim and batched completion, per batch size, on the real server; and the
interview records it in the measurement store."""

from __future__ import annotations

import pytest

from pgq_teach import interview, measurements, queue
from pgq_teach.errors import BadInput
from pgq_teach.experiments import capacity


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


def test_each_batch_costs_two_commits_and_some_wal(db):
    result = capacity.measure(db, batches=(1, 10), jobs=200)
    one, ten = result.at(1), result.at(10)
    assert (one.jobs, ten.jobs) == (200, 1000)  # at least 100 batches each: 1,000 jobs at batch 10
    # a claim and a completion per batch, plus the empty claim that ends the run, the reads, and
    # any other session committing in this database meanwhile (autovacuum does)
    assert 2 * 200 <= one.commits <= 2 * 200 * 1.1 + 10
    assert 2 * 100 <= ten.commits <= 2 * 100 * 1.1 + 10
    assert one.wal_bytes_per_job > 0 and one.insert_wal_bytes_per_job > 0
    assert result.bytes_per_job > 0 and result.synchronous_commit and result.fsync
    with db.connection() as conn:
        assert queue.status_counts(conn) == {}  # the lab table is left empty


def test_the_interview_records_it_and_the_estimate_reads_it(db):
    result = interview.measure_capacity(db, batches=(10,), jobs=200)
    stored = measurements.read(measurements.CAPACITY_12)
    assert stored["value"]["runs"]["10"]["commits"] == result.at(10).commits
    est = interview.scenario_estimate("small-store")  # small store claims in batches of 10
    assert est.measured.commits_per_s == stored["value"]["runs"]["10"]["commits_per_s"]
    assert "measured in lesson 12-the-interview at " + stored["at"] in est.measured.source


@pytest.mark.parametrize("kwargs", [{"jobs": 5}, {"batches": ()}, {"batches": (0,)}, {"batches": "10"}])
def test_bad_input_is_refused_before_anything_runs(db, kwargs):
    with pytest.raises(BadInput):
        capacity.measure(db, **kwargs)

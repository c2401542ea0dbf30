"""Concurrency through the library's claim, and the naive claim's real bug."""

import pytest

from pgq_teach import BadInput
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


@pytest.mark.parametrize("bad", [dict(workers=0), dict(jobs=0), dict(work_ms=-1), dict(mode="yolo"),
                                 dict(workers=2.5)])
def test_race_refuses_bad_input_before_touching_the_table(db, bad):
    run_race(db, workers=2, jobs=5, work_ms=0, mode="lease_skip_locked")
    with pytest.raises(BadInput):
        run_race(db, **{**dict(workers=2, jobs=5, work_ms=0, mode="naive"), **bad})
    from helpers import counts
    with db.connection() as conn:
        assert counts(conn) == {"done": 5}

"""Lesson 03 on a real PostgreSQL: batch claims, the five ways, zero work,
the claim's plans, stopping, and bad input."""

import threading
from dataclasses import replace

import pytest

from helpers import chart_rows, counts, seed
from pgq_teach import BadInput
from pgq_teach.experiments import claims, race
from pgq_teach.experiments.race import lease_claim
from pgq_teach.widgets import claims_lab


class Recorder:
    """A progress callback that remembers every call and can pull `stop`
    once the run has got some way in."""

    def __init__(self, stop_at: int | None = None):
        self.calls: list[tuple[int, int]] = []
        self.threads: set[int] = set()
        self.stop = threading.Event()
        self.stop_at = stop_at
        self.lock = threading.Lock()

    def __call__(self, done: int, total: int) -> None:
        with self.lock:
            self.calls.append((done, total))
            self.threads.add(threading.get_ident())
        if self.stop_at is not None and done >= self.stop_at:
            self.stop.set()


def test_batch_drain_claims_every_job_once_and_no_batch_over_its_limit(db):
    """Guide #5, scaled down: 5,000 jobs in 50 batches of 100."""
    progress = Recorder()
    result = claims.batch_drain(db, jobs=5_000, batch=100, workers=4, progress=progress)
    assert result.batches >= 50  # four sessions at once: the last rows may be split between them
    assert result.largest_batch == 100 and result.workers == 4
    assert result.total_claimed == 5_000
    assert result.every_job_once and result.run_more_than_once == 0
    assert result.attempts_spent == {1: 5_000}  # the server's count, not the sessions' record
    assert result.status_counts == {"running": 5_000}
    assert not result.stopped
    assert progress.calls[-1] == (5_000, 5_000)
    assert result.guide.number == 5 and result.server_version == db.server.version
    assert "1,000 batches" in result.summary() and "4 workers at once" in result.summary()


def test_batch_drain_ends_with_the_remainder(db):
    result = claims.batch_drain(db, jobs=250, batch=100, workers=1)
    assert result.batch_sizes == [100, 100, 50]
    assert result.every_job_once


def test_every_job_once_needs_the_servers_count_too(db):
    """A job the server counts two attempts on fails the check, though the sessions'
    own record of their batches shows each job once."""
    result = claims.batch_drain(db, jobs=250, batch=100, workers=1)
    assert replace(result, attempts_spent={1: 249, 2: 1}).every_job_once is False


def test_five_way_runs_every_mode_and_only_naive_runs_jobs_twice(db):
    progress = Recorder()
    result = claims.five_way(db, rounds=1, workers=8, jobs=200, work_ms=5, progress=progress)
    assert [r.mode for r in result.races] == list(claims.FIVE_WAYS)
    assert all(len(times) == 1 for times in result.elapsed_s.values())
    for mode in claims.LOCKING_STYLES:
        assert result.run_more_than_once[mode] == [0], mode
    # naive's duplicates depend on timing at this size; guide #1's claim is tested in test_race.py
    assert result.run_more_than_once["naive"][0] >= 0
    assert all(r.done == 200 for r in result.races)
    # hold + FOR UPDATE is one line by construction: never faster than the serial ideal, give or take
    assert result.serial_ideal_s == pytest.approx(1.0) and result.shared_ideal_s == pytest.approx(0.125)
    assert result.median("hold_for_update") >= result.serial_ideal_s  # one job at a time, plus claims
    # What happened, not how fast: hold + FOR UPDATE never had two jobs in progress at once,
    # and the other locking claims had several (an order of starts and ends on one clock).
    assert result.most_at_once["hold_for_update"] == [1], result.most_at_once
    for mode in ("hold_skip_locked", "lease_for_update", "lease_skip_locked"):
        assert result.most_at_once[mode][0] >= 2, (mode, result.most_at_once)
    # one progress bar over all five races
    assert progress.calls[-1] == (1_000, 1_000)
    assert max(done for done, _ in progress.calls) <= 1_000
    bars = {r["claim"]: r["drain time"] for r in chart_rows(result.chart(), "bar")}
    assert bars["hold + FOR UPDATE (no job run twice)"] == result.median("hold_for_update")
    rules = {r["reference"]: r["value"] for r in chart_rows(result.chart(), "rule")}
    assert rules == {"serial ideal 1.0 s": 1.0, "shared ideal 0.1 s": 0.125}
    assert result.guide.number == 6


def test_most_at_once_counts_overlaps_and_a_job_that_ends_as_the_next_starts_is_not_one():
    def run(start, end):
        return race.RaceRun(worker=0, job_id=0, start=start, end=end)

    assert race.most_at_once([]) == 0
    assert race.most_at_once([run(0, 1), run(1, 2), run(2, 3)]) == 1  # handed on, one at a time
    assert race.most_at_once([run(0, 2), run(1, 3), run(1.5, 4), run(3, 5)]) == 3


def test_zero_work_runs_every_job_once_in_both_lease_modes(db):
    result = claims.zero_work(db, jobs=300, workers=4, rounds=2)
    assert [r.mode for r in result.races] == [
        "lease_skip_locked",
        "lease_for_update",
        "lease_for_update",
        "lease_skip_locked",
    ]
    assert result.every_job_once
    assert all(len(times) == 2 for times in result.elapsed_s.values())
    assert result.skip_locked_saving is not None and result.verdict()
    assert result.guide.number == 7


def test_claim_plans_show_the_partial_index_under_lockrows_and_the_cte_step(db):
    """Guide #16, and the claim's WITH query planned as its own step."""
    plans = claims.explain_claims(db)
    assert plans.uses_ready_index and plans.lockrows_above_index_scan
    assert plans.claim_locks_in_its_own_step
    assert "LockRows" in plans.in_subquery and "CTE" not in plans.in_subquery


def test_the_in_subquery_claim_claims_a_batch_on_a_quiet_table(conn):
    """The teaching variant is not wrong when it runs alone; the lesson's
    point is what the SQL does not promise."""
    seed(conn, 30)
    jobs = lease_claim(conn, "teaching/claim_in_subquery", batch=10)
    assert sorted(j.id for j in jobs) == list(range(1, 11))
    assert counts(conn) == {"ready": 20, "running": 10}


@pytest.mark.parametrize(
    "experiment, stop_at",
    [
        (lambda db, p, s: claims.batch_drain(db, jobs=5_000, batch=100, progress=p, stop=s), 100),
        (
            lambda db, p, s: claims.five_way(
                db, rounds=1, workers=4, jobs=100, work_ms=2, progress=p, stop=s
            ),
            150,
        ),
        (lambda db, p, s: claims.zero_work(db, jobs=500, workers=4, rounds=2, progress=p, stop=s), 600),
    ],
    ids=["batch_drain", "five_way", "zero_work"],
)
def test_stop_ends_a_run_early_and_says_so(db, experiment, stop_at):
    progress = Recorder(stop_at=stop_at)
    result = experiment(db, progress, progress.stop)
    assert result.stopped
    total = progress.calls[-1][1]
    assert max(done for done, _ in progress.calls) < total
    assert "stopped early" in result.summary()


BAD = {
    "drain jobs 0": lambda db: claims.batch_drain(db, jobs=0),
    "drain jobs 2.5": lambda db: claims.batch_drain(db, jobs=2.5),
    "drain batch 0": lambda db: claims.batch_drain(db, jobs=10, batch=0),
    "drain batch 10,001": lambda db: claims.batch_drain(db, jobs=10, batch=10_001),
    "drain batch True": lambda db: claims.batch_drain(db, jobs=10, batch=True),
    "five rounds 0": lambda db: claims.five_way(db, rounds=0),
    "five rounds 11": lambda db: claims.five_way(db, rounds=11),
    "five workers 0": lambda db: claims.five_way(db, workers=0),
    "five jobs 0": lambda db: claims.five_way(db, jobs=0),
    "five work_ms -1": lambda db: claims.five_way(db, work_ms=-1),
    "zero rounds 0": lambda db: claims.zero_work(db, rounds=0),
    "zero jobs 0": lambda db: claims.zero_work(db, jobs=0),
    "zero workers 65": lambda db: claims.zero_work(db, workers=65),
    "plans ready 0": lambda db: claims.explain_claims(db, ready=0),
    "plans claimed -1": lambda db: claims.explain_claims(db, claimed=-1),
}


def test_bad_input_is_refused_before_touching_the_table(db):
    claims.batch_drain(db, jobs=10, batch=10)
    for name, call in BAD.items():
        with pytest.raises(BadInput):
            call(db)
        with db.connection() as conn:
            assert counts(conn) == {"running": 10}, name


def test_the_panel_runs_headless_and_shows_guess_server_and_guide(db):
    panel = claims_lab.BatchDrainLab(db, jobs=1_000, batch=100, workers=1)
    panel.guess.value = 7
    result = panel.run_and_wait(timeout=60)
    assert result.batches == 10 and result.guess == 7
    assert panel.progress.value == panel.progress.max == 1_000
    html = panel.output.value
    assert "pgq-compare" in html and "<td class=pgq-num>7</td>" in html and db.server.version in html
    assert panel.status.value.startswith("done") and panel.done
    assert panel.run_and_wait() is result  # already run: not pressed again


def test_the_zero_work_lab_charts_and_sums_up_in_ms_as_its_guess_is(db):
    """One unit per lab: the guess is in ms, so the chart and the summary are too."""
    result = claims.zero_work(db, jobs=100, workers=2, rounds=1, guess=250)
    spec = result.chart().to_dict()
    bars = chart_rows(spec, "bar")
    measured = [t * 1000 for times in result.elapsed_s.values() for t in times]
    assert sorted(b["drain time"] for b in bars) == sorted(measured)
    assert spec["layer"][0]["encoding"]["x"]["axis"]["title"] == "drain time (ms)"
    rounds = [line for line in result.summary().splitlines() if "lease +" in line and "," not in line[-4:]]
    assert rounds and all(line.endswith(" ms") for line in rounds), result.summary()

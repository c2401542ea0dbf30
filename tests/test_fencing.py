"""Lesson 05 on a real server: a stalled worker is fenced out but its email
is not unsent; an idempotent handler sends one; a heartbeat keeps a long
job from being run again; and what a repeated fencing token lets through."""

import pytest

import helpers
from helpers import chart_rows, shown_charts
from pgq_teach import measurements
from pgq_teach.errors import BadInput
from pgq_teach.experiments import fencing
from pgq_teach.widgets.fencing_lab import FencingLab, LongJobLab


def test_the_stale_completion_updates_no_row_and_the_plain_handler_sends_twice(db):
    result = fencing.stale_worker(db, lease_s=0.5, handler="plain")
    assert result.reaped == 1
    assert result.b_token > result.a_token
    assert (result.a_rows, result.b_rows) == (0, 1)
    assert result.final_status == "done"
    assert result.inbox == ["A", "B"]  # read from the inbox table: A's receipt stays after A is fenced out
    assert [e.lane for e in result.events] == ["A", "A", "reaper", "B", "B", "A", "B"]
    assert "(your guess: no guess)" in result.summary() and result.comparison()[3][1] == "no guess"


def test_the_idempotent_handler_sends_one_receipt(db):
    result = fencing.stale_worker(db, lease_s=0.5, handler="idempotent", guess=2)
    assert (result.a_rows, result.b_rows) == (0, 1)
    assert result.comparison()[3][1:3] == (2, 1)
    assert result.inbox == ["A"]  # B found A's record and sent nothing


def test_without_a_heartbeat_a_long_job_runs_again_and_again_until_dead(db):
    result = fencing.long_job(db, heartbeat=False, lease_s=0.5, work_s=1.0)
    assert result.times_run == 5  # one run per attempt, each outliving its lease
    assert all(r.outcome == "fenced" for r in result.runs)
    assert result.final_status == "dead" and result.last_error == "lease expired"
    assert not result.lease_moved
    assert "figure" not in str(result.guide) and "#10" not in result.summary()  # guide #10 is not this story
    assert {r["kind"] for r in chart_rows(result.chart(), "bar")} == {"a run fenced out"}
    assert result.comparison()[0][1:3] == ("no guess", 5)


def test_with_a_heartbeat_it_runs_once(db):
    result = fencing.long_job(db, heartbeat=True, lease_s=0.5, work_s=1.5, guess=1)
    assert result.times_run == 1 and result.comparison()[0][1:3] == (1, 1)
    assert result.runs[0].outcome == "done" and result.final_status == "done"
    assert result.lease_moved


def test_a_long_job_stopped_mid_run_is_never_recorded_done(db, tmp_path, monkeypatch):
    """Issue 45: Stop woke the handler, which returned, so a 3 s job was done after 0.15 s.
    Stop now fails the run: the job is not done, the run says Stop cut it short, and the
    lab records no run count for lesson 05."""
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = LongJobLab(db, heartbeat=False, lease_s=1.0, work_s=3.0)
    try:
        lab.run_button.click()
        assert helpers.wait_for(lambda: lab.progress.value >= 3, 10)  # 0.3 s into the run: the job is running
        lab.stop_button.click()
        result = lab.wait(30)
    finally:
        lab.close()
    assert result.stopped and result.final_status != "done"
    assert [r.outcome for r in result.runs] == ["stopped"] and result.runs[0].end_s < 3.0
    assert result.comparison()[-1][::2] == ("runs cut short by Stop (not done)", 1)
    assert {r["kind"] for r in chart_rows(result.chart(), "bar")} == {"a run cut short by Stop"}
    assert measurements.read(measurements.RUNS_WITHOUT_HEARTBEAT) is None


def test_the_token_after_a_requeue(db):
    result = fencing.token_after_requeue(db)
    assert result.a_attempts == result.c_attempts == 1  # the requeue reset attempts
    assert result.a_rows_on_attempts == 1  # fenced on attempts, the stale completion would get through
    # fence_token is never reset: the stale worker stays fenced out
    assert not result.token_repeated and (result.a_rows, result.c_rows) == (0, 1)


@pytest.mark.parametrize(
    "call",
    [
        lambda db: fencing.stale_worker(db, lease_s=0),
        lambda db: fencing.stale_worker(db, handler="careful"),
        lambda db: fencing.long_job(db, heartbeat="yes"),
        lambda db: fencing.long_job(db, heartbeat=True, work_s=600),
        lambda db: fencing.long_job(db, heartbeat=False, workers=0),
        lambda db: fencing.long_job(db, heartbeat=False, concurrency=9),
        lambda db: fencing.first_beats(db, jobs=1),
        lambda db: fencing.first_beats(db, lease_s=1.0, work_s=0.1),
    ],
)
def test_bad_input_is_refused(db, call):
    with pytest.raises(BadInput):
        call(db)


def test_the_lab_steps_and_plays_by_clicking(db):
    lab = FencingLab(db, lease_s=0.5)
    try:
        lab.handler.value = "idempotent"
        lab.run_button.click()
        result = lab.wait(30)
        assert result.emails == 1 and lab.shown == 0
        assert result.guess is None  # an empty box is no guess, not 0
        assert "Press Step" in lab.status.value and not lab.done
        lab.step_button.click()
        assert lab.shown == 1 and len(chart_rows(shown_charts(lab.chart)[0], "circle")) == 1
        assert lab.status.value.startswith(f"1 of {len(result.events)} steps shown") and not lab.done
        lab.play_button.click()
        lab.wait_play()
        assert lab.shown == len(result.events) and lab.step_button.disabled and lab.play_button.disabled
        assert "guide #10" in lab.output.value and "no guess" in lab.output.value
        # done, and says so: no "Press Step" beside two disabled buttons
        assert lab.done and lab.status.value.startswith("done: all") and "Press Step" not in lab.status.value
        assert "plain handler" in lab.status.value  # what to try next
    finally:
        lab.close()


def test_attempts_repeat_after_release_many_and_the_token_does_not(db):
    result = fencing.token_after_release(db)
    assert result.released == 1
    assert result.first_attempts == result.second_attempts == 1  # the try was given back: no requeue
    assert result.second_token == result.first_token + 1
    assert "attempts repeated without any requeue; fence_token did not" in result.summary()


def test_the_first_beat_comes_within_a_quarter_lease_of_the_claim_on_one_timer(db):
    result = fencing.first_beats(db, lease_s=1.0, jobs=5, spacing_s=0.31)
    gaps = list(result.first_beat_s.values())
    assert len(gaps) == 5 and all(gap > 0 for gap in gaps)
    assert max(gaps) <= result.beat_every_s + 0.1
    assert min(gaps) < result.beat_every_s / 2  # the timer is the process's, not the claim's


def test_a_lone_worker_of_two_executors_reaps_its_own_long_job(db):
    # The free executor's producer looks for work, reaps the passed lease and claims the job again.
    result = fencing.long_job(db, heartbeat=False, lease_s=0.5, work_s=1.0, workers=1, concurrency=2)
    assert result.times_run == 5 and {r.worker for r in result.runs} == {"W1"}
    assert all(r.outcome == "fenced" for r in result.runs)
    assert result.final_status == "dead" and result.last_error == "lease expired"
    assert "1 worker of 2 executors" in result.summary()


def test_a_lone_worker_finishes_a_long_job_without_a_heartbeat(db):
    # A Worker of one executor, busy on the job, never reaps it: alone, its passed lease costs nothing.
    result = fencing.long_job(db, heartbeat=False, lease_s=0.5, work_s=1.0, workers=1)
    assert result.times_run == 1 and result.runs[0].outcome == "done"
    assert result.final_status == "done" and not result.lease_moved
    assert [r["kind"] for r in chart_rows(result.chart(), "bar")] == ["a run that completed"]


def test_the_long_job_lab_records_the_runs_without_a_heartbeat(db, tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = LongJobLab(db, heartbeat=False, lease_s=0.5, work_s=1.0)
    result = lab.run_and_wait(60)
    assert result.times_run == 5 and len(chart_rows(shown_charts(lab.chart_box)[0], "bar")) == 5
    assert measurements.read(measurements.RUNS_WITHOUT_HEARTBEAT)["value"] == 5

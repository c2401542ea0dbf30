"""Lesson 06 on a real server: the backoff fail.sql sets, dead on the fifth
failure, greatest() against a lowered max_attempts, requeuing by kind, and
jitter spreading a herd."""

import pytest

from helpers import chart_rows, shown_charts
from pgq_teach import measurements, queue
from pgq_teach.errors import BadInput
from pgq_teach.experiments import retries
from pgq_teach.widgets.retry_lab import HerdLab, RetryLab


def test_waits_double_and_the_fifth_failure_is_dead(db):
    result = retries.schedule(db, 5)
    assert result.waits_s == [20, 40, 80, 160]
    assert [s.status for s in result.steps] == ["ready"] * 4 + ["dead"]
    assert result.final.last_error == retries.ERROR and result.final.attempt == 5
    assert result.comparison()[2][1:] == (
        "no guess",
        160,
        160,
    )  # the longest wait beside the guide's longest, not the cap
    assert "(your guess: no guess)" in result.summary()


def test_the_cap_shows_from_the_ninth_failure(db):
    result = retries.schedule(db, 12, max_attempts=13)
    assert result.waits_s == [20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600, 3600]
    assert [r["capped"] for r in chart_rows(result.chart(), "bar")] == [False] * 8 + [True] * 4
    assert chart_rows(result.chart(), "rule")[0]["value"] == 3600  # the guide's cap, drawn beside the bars


def test_greatest_makes_a_lowered_job_dead_and_the_variant_retries_on(db):
    kept = retries.lowered_max_attempts(db, "fail")
    assert [s.status for s in kept.after] == ["dead"] and kept.after[0].attempt == 4
    loose = retries.lowered_max_attempts(db, "teaching/fail_without_greatest", more=8)
    assert len(loose.after) == 8 and all(s.status == "ready" for s in loose.after)
    assert not loose.ends_dead and loose.after[-1].attempt == 11


def test_requeue_dead_by_kind_leaves_other_kinds_dead(db):
    dead = retries.make_dead(db, {"call_webhook": (3, "HTTP 503"), "send_receipt": (1, "mail down")})
    assert [(d.kind, d.last_error) for d in dead] == [("call_webhook", "HTTP 503")] * 3 + [
        ("send_receipt", "mail down")
    ]
    with db.connection() as conn:
        assert queue.requeue_dead(conn, "call_webhook") == 3
        assert [d.kind for d in retries.dead_jobs(conn)] == ["send_receipt"]
        assert len(queue.claim(conn, batch=10)) == 3


def test_without_jitter_the_herd_comes_due_as_close_together_as_it_failed(db):
    result = retries.herd(db, 500, jitter=False)
    # each job failed in its own transaction: no two share a now(), and each waits exactly 20 s
    assert result.instants > 1
    assert 20 <= result.first_s and result.last_s <= 20 + result.failing_s
    assert result.spread_s <= result.failing_s
    assert result.comparison()[2][1] == "no guess"


def test_with_jitter_it_spreads_over_the_window(db):
    result = retries.herd(db, 500, jitter=True, guess=10)
    assert result.comparison()[2][1] == 10 and "your guess: 10 s" in result.summary()
    assert (
        15 <= result.first_s and result.last_s <= 25 + result.failing_s
    )  # 20 s x 0.75 to 1.25, from each failure
    assert result.spread_s > 8  # 500 draws over a 10 s window
    assert result.spread_s > result.failing_s + 5  # the spread is jitter's, not the failures' own
    assert result.instants > 450
    assert len(result.seconds) >= 10


@pytest.mark.parametrize(
    "call",
    [
        lambda db: retries.schedule(db, 0),
        lambda db: retries.schedule(db, 5, statement="teaching/naive_mark"),
        lambda db: retries.lowered_max_attempts(db, "teaching/naive_mark"),
        lambda db: retries.herd(db, 0, jitter=True),
        lambda db: retries.herd(db, 10, jitter="yes"),
        lambda db: retries.uncapped_failure(db, attempts=10),
    ],
)
def test_bad_input_is_refused(db, call):
    with pytest.raises(BadInput):
        call(db)


def test_an_uncapped_failure_leaves_the_job_to_the_reaper_without_backoff(db):
    result = retries.uncapped_failure(db, attempts=5_000, lease_s=0.3)
    assert result.sqlstate == "22003"  # value out of range: power() overflowed
    assert result.status_after_error == "running"  # the failed statement changed nothing
    assert result.status_after_reap == "ready" and result.run_at_kept and result.due_after_reap
    assert result.last_error == "lease expired"  # the real error is gone


def test_the_longest_wait_sits_beside_the_guides_longest_not_the_cap(db):
    five = retries.schedule(db, 5).comparison()
    assert five[2][2:] == (160, 160) and five[3][2] == 0
    twelve = retries.schedule(db, 12, max_attempts=13).comparison()
    assert twelve[2][2:] == (3600, "–") and twelve[3][2] == 4


def test_the_lab_by_clicking(db, tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = RetryLab(db)
    lab.guess.value = 160
    try:
        for _ in range(5):
            lab.fail_button.click()
        result = lab.wait()
        assert result.waits_s == [20, 40, 80, 160] and result.final.status == "dead"
        assert lab.fail_button.disabled and "dead" in lab.status.value
        assert lab.done and "Press Reset" in lab.status.value
        assert lab.table.value.count('class="pgq-failure"') == 5
        assert result.guess == 160 and result.comparison()[2][1:3] == (160, 160)
        assert result.comparison()[0][2] == "20, 40, 80, 160"
        assert measurements.read(measurements.RETRY_WAITS_S)["value"] == [20, 40, 80, 160]
        lab.fail_button.click()  # disabled in a browser; headless it must still refuse
        assert len(lab.steps) == 5 and "dead" in lab.status.value
        lab.reset_button.click()
        assert lab.steps == [] and not lab.fail_button.disabled and not lab.done
    finally:
        lab.close()


def test_jitter_scales_the_wait_after_the_cap(db):
    # teaching/fail_with_jitter.sql multiplies after least(..., 1 hour): a capped wait is 45 to 75 minutes
    result = retries.schedule(db, 49, max_attempts=50, statement="teaching/fail_with_jitter")
    capped = result.waits_s[8:]
    assert len(capped) == 41 and all(2700 <= w <= 4500 for w in capped)
    assert max(capped) > 3600  # 41 draws: all under the hour has odds of 2^-41
    assert "with jitter" in result.summary()


def test_the_herd_lab_records_the_jittered_spread(db, tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = HerdLab(db, jitter=True, jobs=300)
    result = lab.run_and_wait(60)
    assert result.spread_s > 5
    shown = chart_rows(shown_charts(lab.chart_box)[0], "bar")
    assert sum(r["jobs"] for r in shown) == sum(n for _, n in result.seconds)
    assert measurements.read(measurements.JITTER_SPREAD_S)["value"] == round(result.spread_s, 2)


def test_a_herd_reaches_the_partner_only_as_wide_as_the_worker_pool(db):
    result = retries.metered_herd(db, 60, workers=3, work_s=0.02)
    assert result.done == 60
    assert result.max_in_flight == 3  # every worker busy at once, never more than the pool


def test_a_herd_reaches_the_partner_as_wide_as_the_executors_not_the_workers(db):
    # Each Worker runs `concurrency` handlers at once: one call per Worker would be 2 here.
    result = retries.metered_herd(db, 80, workers=2, concurrency=3, work_s=0.02)
    assert result.done == 80 and result.slots == 6
    assert result.workers < result.max_in_flight <= result.slots
    assert "(2 Workers x 3 executors = 6)" in result.summary()


def test_metered_herd_refuses_bad_input_before_touching_the_table(db):
    with pytest.raises(BadInput, match="workers"):
        retries.metered_herd(db, 10, workers=0)
    with pytest.raises(BadInput, match="concurrency"):
        retries.metered_herd(db, 10, concurrency=0)

"""Lesson 06 on a real server: the backoff fail.sql sets, dead on the fifth
failure, greatest() against a lowered max_attempts, requeuing by kind, and
jitter spreading a herd."""

import pytest

from pgq_teach import queue
from pgq_teach.errors import BadInput
from pgq_teach.experiments import retries
from pgq_teach.widgets.retry_lab import RetryLab


def test_waits_double_and_the_fifth_failure_is_dead(db):
    result = retries.schedule(db, 5)
    assert result.waits_s == [20, 40, 80, 160]
    assert [s.status for s in result.steps] == ["ready"] * 4 + ["dead"]
    assert result.final.last_error == retries.ERROR and result.final.attempt == 5
    assert result.comparison()[2][1:] == ("no guess", 160, 3600)
    assert "(your guess: no guess)" in result.summary()


def test_the_cap_shows_from_the_ninth_failure(db):
    result = retries.schedule(db, 12, max_attempts=13)
    assert result.waits_s == [20, 40, 80, 160, 320, 640, 1280, 2560, 3600, 3600, 3600, 3600]
    assert result.chart_svg().count("(the 1 h cap)") == 4


def test_greatest_makes_a_lowered_job_dead_and_the_variant_retries_on(db):
    kept = retries.lowered_max_attempts(db, "fail")
    assert [s.status for s in kept.after] == ["dead"] and kept.after[0].attempt == 4
    loose = retries.lowered_max_attempts(db, "teaching/fail_without_greatest", more=8)
    assert len(loose.after) == 8 and all(s.status == "ready" for s in loose.after)
    assert not loose.ends_dead and loose.after[-1].attempt == 11


def test_requeue_dead_by_kind_leaves_other_kinds_dead(db):
    dead = retries.make_dead(db, {"call_webhook": (3, "HTTP 503"), "send_receipt": (1, "mail down")})
    assert [(d.kind, d.last_error) for d in dead] == [("call_webhook", "HTTP 503")] * 3 + [("send_receipt", "mail down")]
    with db.connection() as conn:
        assert queue.requeue_dead(conn, "call_webhook") == 3
        assert [d.kind for d in retries.dead_jobs(conn)] == ["send_receipt"]
        assert len(queue.claim(conn, batch=10)) == 3


def test_without_jitter_the_herd_comes_due_at_one_instant(db):
    result = retries.herd(db, 500, jitter=False)
    assert result.instants == 1 and result.spread_s == 0
    assert result.seconds == [(20, 500)]
    assert result.comparison()[1][1] == "no guess"


def test_with_jitter_it_spreads_over_the_window(db):
    result = retries.herd(db, 500, jitter=True, guess=10)
    assert result.comparison()[1][1] == 10 and "your guess: 10 s" in result.summary()
    assert 15 <= result.first_s and result.last_s <= 25  # 20 s scaled by 0.75 to 1.25
    assert result.spread_s > 8  # 500 draws over a 10 s window
    assert result.instants > 450
    assert len(result.seconds) == 10


@pytest.mark.parametrize("call", [
    lambda db: retries.schedule(db, 0),
    lambda db: retries.schedule(db, 5, statement="teaching/naive_mark"),
    lambda db: retries.lowered_max_attempts(db, "teaching/naive_mark"),
    lambda db: retries.herd(db, 0, jitter=True),
    lambda db: retries.herd(db, 10, jitter="yes"),
])
def test_bad_input_is_refused(db, call):
    with pytest.raises(BadInput):
        call(db)


def test_the_lab_by_clicking(db):
    lab = RetryLab(db)
    try:
        for _ in range(5):
            lab.fail_button.click()
        result = lab.wait()
        assert result.waits_s == [20, 40, 80, 160] and result.final.status == "dead"
        assert lab.fail_button.disabled and "dead" in lab.status.value
        assert lab.table.value.count('class="pgq-failure"') == 5
        assert result.guess is None and result.comparison()[0][2] == "20, 40, 80, 160"
        lab.fail_button.click()  # disabled in a browser; headless it must still refuse
        assert len(lab.steps) == 5 and "dead" in lab.status.value
        lab.reset_button.click()
        assert lab.steps == [] and not lab.fail_button.disabled
    finally:
        lab.close()


def test_jitter_scales_the_wait_after_the_cap(db):
    # teaching/fail_with_jitter.sql multiplies after least(..., 1 hour): a capped wait is 45 to 75 minutes
    result = retries.schedule(db, 49, max_attempts=50, statement="teaching/fail_with_jitter")
    capped = result.waits_s[8:]
    assert len(capped) == 41 and all(2700 <= w <= 4500 for w in capped)
    assert max(capped) > 3600  # 41 draws: all under the hour has odds of 2^-41
    assert "with jitter" in result.summary()

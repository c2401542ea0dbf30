"""Lesson 11: the signals' recommendation, the drain rate, and the outbox
relay to a stand-in broker, on a real PostgreSQL."""

from __future__ import annotations

import pytest

from pgq_teach.errors import BadInput
from pgq_teach.experiments import switching
from pgq_teach.experiments.switching import Consumer, StandInBroker, StandInDown, recommend
from pgq_teach.infra import learner


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


@pytest.mark.parametrize(
    "signals, fixes, verdict",
    [
        (set(), False, "stay"),
        ({"churn"}, False, "fix first"),
        ({"connections"}, False, "fix first"),
        ({"churn", "connections"}, True, "move"),
        ({"fan_out"}, False, "move"),
        ({"replay"}, False, "move"),
        ({"teams", "churn"}, False, "move"),
    ],
)
def test_the_recommendation_follows_the_signals(signals, fixes, verdict):
    assert recommend(signals, fixes_tried=fixes).verdict == verdict


def test_stay_gives_the_guide_reasons_and_move_names_the_relay():
    assert any("one team owns both" in r for r in recommend(set()).reasons)
    assert any("outbox relay" in r for r in recommend({"replay"}).reasons)
    with pytest.raises(BadInput):
        recommend({"cheaper"})


def test_the_checklist_widget_saves_its_ticks(tmp_path):
    from pgq_teach.widgets.switch_checklist import SwitchChecklist

    c = SwitchChecklist()
    assert c.recommendation.verdict == "stay"
    c.boxes["churn"].value = True
    assert c.recommendation.verdict == "fix first" and "fix first" in c.output.value
    c.fixes.value = True
    assert c.recommendation.verdict == "move"
    again = SwitchChecklist()  # after a kernel restart
    assert again.ticked() == {"churn"} and again.fixes.value and again.recommendation.verdict == "move"
    assert learner.load("switch-checklist") == {"signals": ["churn"], "fixes_tried": True}


def test_drain_rate_completes_every_job_once(db):
    d = switching.drain_rate(db, jobs=5_000, batch=100, workers=3, guess=7)
    assert d.completed == 5_000 and not d.stopped and d.jobs_per_s > 0
    assert d.guide_jobs_per_s == 25_000
    from pgq_teach.widgets.common import result_html

    html = result_html(d)
    assert (
        "seconds for 5,000 jobs" in html
        and "<td class=pgq-num>7</td>" in html
        and "<td class=pgq-num>25,000</td>" in html
    )
    assert d.comparison()[0][3] is None  # the guide's 4 s is for 100,000 jobs, not 5,000
    assert "your guess: 7 s" in d.summary()


def test_the_stand_in_broker_refuses_while_down_and_the_consumer_deduplicates():
    broker, consumer = StandInBroker(), Consumer()
    broker.publish(1, {})
    broker.up = False
    with pytest.raises(StandInDown):
        broker.publish(2, {})
    broker.up = True
    broker.publish(1, {})
    broker.publish(2, {})
    consumer.consume(broker)
    consumer.consume(broker)  # a second pass reads only what is new
    assert consumer.processed == [1, 2] and consumer.duplicates_skipped == 1 and broker.refused == 1


def test_the_outbox_relay_loses_nothing_and_delivers_at_least_once(db):
    r = switching.outbox_relay(db, orders=30, rolled_back=4, crash_batch=3)
    assert r.nothing_lost and r.distinct_delivered == r.orders_committed == 30
    assert r.refused_while_down == 10 and r.waiting_while_down == 10
    assert r.broker_messages == 33 and r.republished_after_crash == 3
    assert r.consumer_processed == 30 and r.duplicates_skipped == 3
    assert r.status_counts == {"done": 30}
    assert r.comparison()[0][:3] == ("messages in the broker", "no guess", 33)  # an unmade guess is not 0


@pytest.mark.parametrize(
    "kwargs", [{"orders": 2}, {"crash_batch": 0}, {"crash_batch": 50}, {"rolled_back": -1}]
)
def test_the_outbox_relay_refuses_bad_input(db, kwargs):
    with pytest.raises(BadInput):
        switching.outbox_relay(db, **kwargs)


@pytest.mark.parametrize("kwargs", [{"jobs": 0}, {"batch": 100_000}, {"workers": True}])
def test_drain_rate_refuses_bad_input(db, kwargs):
    with pytest.raises(BadInput):
        switching.drain_rate(db, **kwargs)


def test_the_relay_exercise_fails_a_completion_fenced_on_the_first_token_only(pg):
    """Issue 20: a batch fenced on its first token passed while every row of a batch
    held the same token. Relay D's batch holds tokens 2 and 1, as real claims give."""
    from pgq_teach import exercises
    from pgq_teach.statements import statement

    verdict = exercises.check(
        "11/relay_complete", statement("exercise/wrong/complete_batch_on_first_token").text
    )
    assert not verdict.passed and not verdict.refused
    assert any(e.what == "relay D's completion" for e in verdict.failures), verdict.summary()
    model = exercises.check("11/relay_complete", exercises.exercise("11/relay_complete").answer_text())
    assert model.passed, model.summary()


def test_the_hand_back_exercise_passes_the_model_and_fails_a_hand_back_that_spends_tries(pg):
    """Lesson 11's second Your turn grades the no-burn rule and per-key order."""
    from pgq_teach import exercises
    from pgq_teach.exercises import relay

    exercise = exercises.exercise("11/relay_hand_back")
    model = exercises.check("11/relay_hand_back", exercise.answer_text())
    assert model.passed, model.summary()
    burns = exercises.check("11/relay_hand_back", exercise.attempt_text())
    assert not burns.passed and not burns.refused
    assert burns.numbers["max_tries"] == relay.OUTAGE_ROUNDS and "spent a try" in burns.hint
    unfenced = exercises.check(
        "11/relay_hand_back", exercise.answer_text().replace("AND jobs.fence_token = claimed.fence_token", "")
    )
    assert not unfenced.passed and "relay S's claim" in unfenced.hint


def test_your_turn_knows_when_it_holds_the_first_attempt():
    from pgq_teach.widgets.your_turn import YourTurn

    turn = YourTurn("11/relay_hand_back", save=False)
    assert turn.holds_first_attempt
    turn.editor.value += "\n-- my own change"
    assert not turn.holds_first_attempt

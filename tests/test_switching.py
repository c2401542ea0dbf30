"""Lesson 11: the signals' recommendation, the drain rate, the stand-in broker the
relay exercise grades with, and the broker labs' refusal where the real broker is
missing, on a real PostgreSQL."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from helpers import wait_for
from pgq_teach import outbox, queue
from pgq_teach.errors import BadInput, SetupError
from pgq_teach.experiments import switching
from pgq_teach.experiments.switching import recommend
from pgq_teach.infra import broker, learner
from pgq_teach.outbox import OUTBOX_KIND, Consumer, OutboxEvent, StandInBroker, StandInDown
from pgq_teach.statements import records, run, run_one


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


def test_without_the_broker_lesson_11_refuses_in_one_line_before_anything_runs(db, tmp_path, monkeypatch):
    """Lesson 11 needs the extra broker: with no nats-server, its labs and its server start
    each say so in one line, and nothing runs (the lesson's table keeps its rows)."""
    from pgq_teach.widgets.broker_labs import OutageLab

    with db.connection() as conn:
        queue.enqueue(conn, "publish_order", {"order_id": 1})
    monkeypatch.setattr(broker, "binary", lambda: None)
    assert not broker.available()
    with pytest.raises(SetupError) as refused:
        OutageLab(db)
    assert "\n" not in str(refused.value) and "pgq-teach[broker]" in str(refused.value)
    with pytest.raises(SetupError, match=r"pgq-teach\[broker\]"):
        broker.Broker(tmp_path / "store").start()
    with db.connection() as conn:
        assert queue.status_counts(conn) == {"ready": 1}


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


def heads(conn) -> list[int]:
    """The per-key claim's heads now (claim_in_key_order.sql), by job id."""
    params = {"kind": OUTBOX_KIND, "batch": 10, "lease": timedelta(seconds=30)}
    return [
        e.id for e in run(conn, "claim_in_key_order", params, row_factory=records(OutboxEvent)).fetchall()
    ]


def new_order(db) -> int:
    with db.connection() as conn:
        run(conn, "lab/reset_jobs")
        run(conn, "outbox_key_index")
        return int(run_one(conn, "lab/place_order", {"email": "a@example.com", "total": 10})[0])


def test_per_key_order_breaks_when_a_later_id_commits_first(db):
    """The claim's precondition, broken: id 1 drawn first and still open, id 2 committed.
    NOT EXISTS cannot see the uncommitted id 1, so id 2, the order's later event, is the head."""
    order = new_order(db)
    with db.connection() as a, db.connection() as b, db.connection() as relay:
        with a.transaction():
            first = queue.enqueue(a, OUTBOX_KIND, {"order_id": order, "seq": 1}, notify=False)
            with b.transaction():
                second = queue.enqueue(b, OUTBOX_KIND, {"order_id": order, "seq": 2}, notify=False)
            assert first < second and heads(relay) == [second]  # published ahead of its order's first


def test_the_order_lock_makes_one_order_s_events_commit_in_id_order(db):
    """write_event locks the order's row first: a second writer of the same order waits
    (its blocker is the first writer) until the first commits, and only then draws its id,
    so the head is the first event, and the second follows it."""
    order = new_order(db)
    got: dict[str, int] = {}
    with db.connection() as a, db.connection() as b, db.connection() as relay:
        waiting = threading.Thread(target=lambda: got.update(second=outbox.write_event(b, order, {"seq": 2})))
        with a.transaction():
            first = outbox.write_event(a, order, {"seq": 1})
            waiting.start()

            def blocked_by() -> list[int]:
                return [r[0] for r in run(relay, "migration_blockers", {"pid": b.info.backend_pid})]

            assert wait_for(lambda: blocked_by() == [a.info.backend_pid], timeout=10)
            assert heads(relay) == [] and "second" not in got  # nothing committed, nothing drawn
        waiting.join(10)
        assert got["second"] > first
        assert heads(relay) == [first]  # the first event is the head; the second waits behind it
    with pytest.raises(BadInput, match="does not exist"):
        with db.connection() as conn:
            outbox.write_event(conn, order + 1, {"seq": 1})


def test_the_commit_order_lab_breaks_the_precondition_then_meets_it(db):
    plain, locked = switching.commit_order(db).rows
    assert plain.first_id < plain.second_id and not plain.second_waited
    assert plain.heads_while_open == [2]  # the later event was the head: it would go first
    assert locked.first_id < locked.second_id and locked.second_waited
    assert locked.heads_while_open == [] and locked.heads_after == [1]

"""Lesson 07's experiments on a real server: the NOTIFY rules of guide #12,
the payload limit, pickup latency with the library's Worker (guide #13),
and NOTIFY's cost with several producers."""

import pytest

from helpers import counts
from pgq_teach.errors import BadInput
from pgq_teach.experiments import wakeups


def test_every_rule_holds_on_this_server(db):
    result = wakeups.notify_rules(db)
    assert [r.name for r in result.rules] == list(wakeups.RULES)
    assert {r.name: r.holds for r in result.rules} == dict.fromkeys(wakeups.RULES, True)
    assert result.rule("identical").observed == "1" and result.rule("distinct").observed == "3"


def test_unknown_rules_are_refused(db):
    with pytest.raises(BadInput):
        wakeups.notify_rules(db, ["no such rule"])
    with pytest.raises(BadInput):
        wakeups.notify_rules(db, [])


def test_the_payload_limit_is_the_servers(db):
    assert wakeups.payload_limit(db, 7_999).accepted
    refused = wakeups.payload_limit(db, 8_000)
    assert not refused.accepted and refused.sqlstate == "22023"


def test_payload_size_is_checked_first(db):
    with pytest.raises(BadInput):
        wakeups.payload_limit(db, -1)


def test_listen_belongs_to_one_session(db):
    bound = wakeups.listen_is_per_session(db)
    assert bound.heard_by_next_client == ["for the listening session"]  # whoever holds session S
    assert (bound.listening_session_heard, bound.heard_by_listening_client) == (1, 0)


def test_a_listening_session_keeps_what_arrives_while_its_client_reads_nothing(db):
    late = wakeups.heard_after_busy(db, count=4, busy_s=0.5)
    assert late.heard == late.sent and len(late.sent) == 4  # every one, in order, at the next read


@pytest.mark.parametrize("kwargs", [{"count": 0}, {"busy_s": -1}, {"busy_s": "1"}])
def test_heard_after_busy_refuses_bad_input(db, kwargs):
    with pytest.raises(BadInput):
        wakeups.heard_after_busy(db, **kwargs)


def test_notify_wakes_the_worker_long_before_the_poll(db, conn):
    result = wakeups.pickup_latency(db, jobs=6, poll_s=1.0, seed=3)
    assert not result.stopped and len(result.pickups) == 6
    # What ended the worker's wait, from its own counters: the time is the lab's to show.
    assert result.woken_by(True) == ["notification"] * 3  # woken, not polled
    assert result.woken_by(False) == ["poll"] * 3  # the silent ones waited for the poll
    assert counts(conn) == {"done": 6}


@pytest.mark.parametrize("kwargs", [{"jobs": 1}, {"poll_s": 0}, {"poll_s": "1"}])
def test_pickup_latency_refuses_bad_input(db, kwargs):
    with pytest.raises(BadInput):
        wakeups.pickup_latency(db, **kwargs)


def test_a_job_without_notify_waits_for_the_workers_next_poll(db):
    result = wakeups.pickup_latency(db, jobs=6, poll_s=0.5, seed=3)
    assert not result.stopped and len(result.pickups) == 6
    assert result.woken_by(True) == ["notification"] * 3  # woken, not polled
    assert result.woken_by(False) == ["poll"] * 3  # silent ones: the poll ended the wait


def test_notify_cost_runs_every_mode_and_commits_every_job(db, conn):
    result = wakeups.notify_cost(db, producers=4, transactions=5, per_transaction=3, rounds=1)
    assert set(result.elapsed_s) == set(wakeups.COST_MODES) and not result.stopped
    assert counts(conn) == {"ready": 4 * 5 * 3}  # the last mode's jobs, all committed
    assert result.enqueued == {mode: 4 * 5 * 3 for mode in wakeups.COST_MODES}  # counted in the table
    # heard by the listening session: one per job (distinct ids), one per transaction (never folded
    # across transactions), none
    assert result.heard == {"per job": 4 * 5 * 3, "per transaction": 4 * 5, "none": 0}


@pytest.mark.parametrize("kwargs", [{"producers": 0}, {"transactions": 0}, {"rounds": 11}])
def test_notify_cost_refuses_bad_input(db, kwargs):
    with pytest.raises(BadInput):
        wakeups.notify_cost(db, **kwargs)


def test_a_transaction_mode_pooler_loses_the_listen(db):
    result = wakeups.through_pooler(db)
    if not result.ran:
        pytest.skip(result.reason)
    assert (result.heard_direct, result.heard_session_mode, result.heard_transaction_mode) == (1, 1, 0)
    assert result.reason.startswith("PgBouncer ")  # its own version line


def test_without_pgbouncer_the_pooler_demo_says_why(db, monkeypatch):
    monkeypatch.setattr(wakeups.poolers, "pooler_installed", lambda: None)
    result = wakeups.through_pooler(db)
    assert not result.ran and "not installed" in result.reason


def test_an_unmade_guess_reads_no_guess_and_a_made_one_is_kept(db):
    silent = wakeups.pickup_latency(db, jobs=2, poll_s=0.2, seed=3)
    assert "your guess, the median without NOTIFY: no guess" in silent.summary()
    assert [row[1] for row in silent.comparison()] == [None, "no guess", None]
    guessed = wakeups.pickup_latency(db, jobs=2, poll_s=0.2, seed=3, guess=150)
    rows = {measure: (guess, here) for measure, guess, here, _ in guessed.comparison()}
    assert rows["without NOTIFY, median ms"] == (150, guessed.median_ms(False))
    assert "150 ms" in guessed.summary() and "PostgreSQL" in guessed.summary()


def test_the_rules_rows_pair_what_happened_with_what_the_guide_says(db):
    result = wakeups.notify_rules(db, ["identical", "nobody listening"])
    assert result.comparison() == [
        (result.rule("identical").question, None, "1", "1"),
        (result.rule("nobody listening").question, None, "nothing", "nothing"),
    ]
    assert result.server_major == db.server.major and not result.stopped


def test_the_sender_is_a_scripted_session_whose_refused_notify_commits_nothing(db):
    steps = wakeups.notify_in_one_transaction(db, ["fits", "x" * 8_000, "after"])
    assert [s.failed for s in steps] == [False, True, True] and all(s.in_transaction for s in steps)
    assert steps[1].sqlstate == "22023" and steps[2].sqlstate == "25P02"  # then the transaction is aborted


def test_the_cost_rows_carry_what_the_listener_heard(db):
    result = wakeups.notify_cost(db, producers=2, transactions=2, per_transaction=2, rounds=1)
    heard = {measure: here for measure, _, here, _ in result.comparison() if "heard" in measure}
    assert heard == {
        "NOTIFY per job: notifications heard": 8,
        "NOTIFY per transaction: notifications heard": 4,
        "NOTIFY none: notifications heard": 0,
    }


def test_the_rules_lab_runs_one_rule_then_all_headless(db):
    from pgq_teach.widgets.notify_lab import NotifyRulesLab

    lab = NotifyRulesLab(db)
    lab.rule_buttons["distinct"].click()
    assert lab.wait(30).rules[0].name == "distinct" and len(lab.result.rules) == 1
    assert not any(b.disabled for b in lab.buttons)  # usable again once the run ended
    # one rule held, not every rule; and the lab has no guess or setting to change (issue 45)
    assert "the rule distinct held; not run this time: identical, busy listener" in lab.output.value
    assert "every rule" not in lab.output.value and "guess" not in lab.status.value
    assert "Not run yet: identical, busy listener, nobody listening" in lab.status.value
    lab.all_button.click()
    assert lab.wait(60).all_hold and len(lab.result.rules) == len(wakeups.RULES)
    assert lab.output.value.count('class="pgq-rule"') == len(wakeups.RULES)
    assert "every rule held" in lab.output.value
    assert "Every rule has run" in lab.status.value and "setting" not in lab.status.value


def test_every_listener_hears_every_notification(db):
    """Lesson 07's Check yourself Q1: a worker's count of notifications can exceed the
    jobs it will get, because every listening worker hears the same ones."""
    first, second = wakeups.listen(db), wakeups.listen(db)
    try:
        wakeups.notify_in_one_transaction(db, ["job 1", "job 2"])
        assert wakeups.heard(first, 2.0) == ["job 1", "job 2"]
        assert wakeups.heard(second, 2.0) == ["job 1", "job 2"]
    finally:
        first.close()
        second.close()

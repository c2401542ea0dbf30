"""The lock lab widget, driven headless by clicking its buttons, as a person
(or the browser test) would."""

import re
import threading
import time

import pytest

from helpers import gone, wait_for
from pgq_teach.experiments.locks import activity
from pgq_teach.widgets.lock_lab import LockLab


@pytest.fixture
def lab(db):
    lab = LockLab(db)
    yield lab
    lab.close()


def waiting_seconds(status_html):
    match = re.search(r"waiting… ([0-9.]+) s", status_html)
    assert match, status_html
    return float(match.group(1))


def test_the_lab_has_two_sessions_with_readable_buttons(lab):
    assert "pgq-session-a" in lab.a._dom_classes and "pgq-session-b" in lab.b._dom_classes
    assert "pgq-status" in lab.b.status._dom_classes and "pgq-activity" in lab.activity._dom_classes
    assert [b.description for b in lab.a.buttons] == [
        "BEGIN",
        "FOR UPDATE",
        "NOWAIT",
        "SKIP LOCKED",
        "COMMIT",
        "ROLLBACK",
    ]
    assert lab.a.session.pid != lab.b.session.pid
    assert {r.session for r in lab.refresh_activity()} == {"A", "B"}


def test_for_update_then_commit_then_skip_locked_by_clicking(lab):
    # A takes job 1 and holds it; B's plain FOR UPDATE has to wait.
    lab.a.begin_button.click()
    lab.a.claim_buttons["for_update"].click()
    lab.b.claim_buttons["for_update"].click()
    lab.b.wait_until("waiting", timeout=5)
    assert "waiting" in lab.b.status.value
    row = lab.wait_until_blocked(lab.b, timeout=5)
    assert (row.wait_event_type, row.wait_event) == ("Lock", "transactionid")
    assert row.blocking_pids == (lab.a.session.pid,)
    assert 'data-session="B" class="pgq-lock-wait"' in lab.activity.value
    assert "transactionid" in lab.activity.value
    assert lab.refreshing

    # The status line counts up while B waits.
    first = waiting_seconds(lab.b.status.value)
    time.sleep(0.8)
    assert waiting_seconds(lab.b.status.value) > first

    # A marks job 1 done and commits: B rechecks job 1, moves on, gets job 2.
    lab.a.commit_button.click()
    state = lab.b.wait_done(timeout=10)
    assert state.job_id == 2
    assert "job 2" in lab.b.status.value
    assert "job 1 marked done" in lab.a.status.value

    # Again from two ready jobs, with SKIP LOCKED: no wait at all.
    lab.reset_button.click()
    lab.wait()
    lab.a.begin_button.click()
    lab.a.claim_buttons["for_update"].click()
    lab.b.claim_buttons["skip_locked"].click()
    state = lab.b.wait_done(timeout=5)
    # No wait: B has job 2 while A still holds job 1 in its open transaction, which it has
    # not committed, so B cannot have waited for A's lock.
    a_state = lab.a.session.state
    assert state.job_id == 2 and (a_state.job_id, a_state.in_transaction) == (1, True)
    assert "job 2" in lab.b.status.value and "waiting" not in lab.b.status.value


def test_nowait_shows_the_error_in_the_status(lab):
    lab.a.begin_button.click()
    lab.a.claim_buttons["for_update"].click()
    lab.b.begin_button.click()
    lab.b.claim_buttons["nowait"].click()
    assert lab.b.wait_done().sqlstate == "55P03"
    assert "55P03" in lab.b.status.value and "could not obtain lock on row" in lab.b.status.value
    lab.b.rollback_button.click()
    assert lab.b.wait_done().phase == "idle"


def test_the_refresher_stops_by_itself_when_nothing_waits(lab):
    lab.a.begin_button.click()
    lab.a.claim_buttons["for_update"].click()
    lab.b.claim_buttons["for_update"].click()
    lab.wait_until_blocked(lab.b)
    lab.a.rollback_button.click()
    assert lab.b.wait_done().job_id == 1
    deadline = time.monotonic() + 3
    while lab.refreshing and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not lab.refreshing
    assert 'class="pgq-lock-wait"' not in lab.activity.value


def test_close_stops_the_refresher_and_ends_both_sessions(db):
    lab = LockLab(db)
    lab.a.begin_button.click()
    lab.a.claim_buttons["for_update"].click()
    lab.b.claim_buttons["for_update"].click()
    lab.wait_until_blocked(lab.b)
    assert lab.refreshing
    lab.close()
    assert not lab.refreshing
    assert [t.name for t in threading.enumerate() if t.name.startswith("pgq-lab") and t.is_alive()] == []
    assert gone(lambda: activity(db)), activity(db)
    assert all(b.disabled for b in lab.a.buttons + lab.b.buttons)
    lab.a.begin_button.click()  # a click after close does nothing, and raises nothing
    lab.close()  # twice is fine


def test_replay_button_shows_the_result_beside_the_guide(lab):
    lab.mode.value = "nowait"
    lab.guess.value = 2
    lab.replay_button.click()
    result = lab.wait(timeout=30)
    assert result is lab.result
    assert result.sqlstate == "55P03" and result.guess == 2
    assert "pgq-compare" in lab.replay_output.value and "55P03" in lab.replay_output.value
    assert not lab.a.begin_button.disabled
    # The lab is ready to play again: two ready jobs.
    lab.b.claim_buttons["skip_locked"].click()
    assert lab.b.wait_done().job_id == 1


def test_a_new_lab_closes_the_earlier_one_on_the_same_database(db):
    first = LockLab(db)
    first.a.begin_button.click()
    first.a.claim_buttons["for_update"].click()
    assert first.a.wait_done().job_id == 1  # holds job 1: it would block a reset
    second = LockLab(db)
    try:
        assert first.a.session.closed and first.b.session.closed
        assert {r.session for r in activity(db)} == {"A", "B"}  # the new lab's two
        second.a.claim_buttons["skip_locked"].click()
        assert second.a.wait_done().job_id == 1
    finally:
        second.close()


def test_the_status_line_says_what_to_press_next_at_every_step(lab):
    """The lab's status line follows the sessions, not only the first step (it stayed on
    "Press BEGIN in session A" whatever the learner did)."""

    def says(text):
        assert wait_for(lambda: text in lab.status.value, 5), lab.status.value

    says("Press BEGIN in session A")
    lab.a.begin_button.click()
    says("Session A is in a transaction: press a claim in A.")
    lab.a.claim_buttons["for_update"].click()
    says("Session A holds job 1 until COMMIT or ROLLBACK. Now press a claim in B")
    lab.b.claim_buttons["for_update"].click()
    lab.b.wait_until("waiting", timeout=5)
    says("Session B waits for the row lock session A holds")
    lab.a.commit_button.click()
    assert lab.b.wait_done(timeout=10).job_id == 2
    says("Session B's claim ran outside BEGIN, so it committed at once")
    lab.reset_button.click()
    lab.wait()
    says("Two ready jobs: 1 and 2.")


def test_a_replay_beside_the_lab_leaves_no_closed_session_in_its_activity_view(lab, db):
    """After lesson 02's replays, the lab's view listed their sessions "idle in transaction"
    though they had closed: a look taken while they ran stayed on screen."""
    from pgq_teach.widgets.lock_lab import replay

    replay(db, "skip_locked")
    assert "idle in transaction" not in lab.activity.value
    assert {r.session for r in lab.refresh_activity()} == {"A", "B"}

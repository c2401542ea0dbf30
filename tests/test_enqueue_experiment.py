"""Transactional enqueue on a real PostgreSQL: the order and its receipt job
commit or vanish together, and so does the wake-up notification."""

import pytest

from helpers import counts, job_row
from pgq_teach import BadInput
from pgq_teach.experiments.enqueue import KIND, transactional_enqueue


def test_a_rolled_back_order_leaves_no_job_and_no_notification(db, conn):
    gone = transactional_enqueue(db, quiet_s=0.1).rolled_back
    assert gone.ending == "rollback"
    assert not gone.order_kept and gone.jobs_for_order == 0
    assert job_row(conn, gone.job_id) is None  # enqueue returned an id, yet no row survived
    assert gone.heard_while_open == () and gone.heard_after == () and gone.delivered_after_s is None


def test_a_committed_order_has_its_job_and_one_notification_after_commit(db, conn):
    kept = transactional_enqueue(db, quiet_s=0.1).committed
    assert kept.ending == "commit" and kept.order_kept and kept.jobs_for_order == 1
    job = job_row(conn, kept.job_id)
    assert job["kind"] == KIND and job["status"] == "ready" and job["payload"] == {"order_id": kept.order_id}
    assert kept.heard_while_open == ()  # nothing until COMMIT
    assert kept.heard_after == (KIND,)  # then exactly one, carrying the kind only
    assert kept.delivered_after_s >= 0  # heard after the COMMIT, never before it


def test_the_result_counts_and_summarises_both_transactions(db, conn):
    result = transactional_enqueue(db, quiet_s=0.1, guess=2)
    assert result.notifications_heard == 1 and result.guess == 2
    assert counts(conn) == {"ready": 1}
    text = result.summary()
    assert "Rolled back:" in text and "Committed:" in text and "your guess: 2" in text
    assert "guide #12" in text and f"PostgreSQL {db.server.version}" in text
    # short lines in words a first-day learner reads: nothing wraps, no "->" shorthand
    assert max(len(line) for line in text.splitlines()) <= 80 and "->" not in text
    assert "no guess" in transactional_enqueue(db, quiet_s=0.05).summary()


def test_it_runs_again_in_the_same_database(db):
    first = transactional_enqueue(db, quiet_s=0.05)
    second = transactional_enqueue(db, quiet_s=0.05)
    assert second.committed.order_id > first.committed.order_id
    assert second.committed.jobs_for_order == 1 and second.rolled_back.jobs_for_order == 0
    assert second.notifications_heard == 1


@pytest.mark.parametrize(
    "bad",
    [
        dict(quiet_s=0),
        dict(quiet_s=-1),
        dict(quiet_s=float("nan")),
        dict(quiet_s=True),
        dict(quiet_s="1"),
        dict(quiet_s=11),
        dict(guess=-1),
        dict(guess=1.5),
    ],
)
def test_bad_input_is_refused_before_anything_runs(db, conn, bad):
    with pytest.raises(BadInput):
        transactional_enqueue(db, **{"quiet_s": 0.1, **bad})
    assert counts(conn) == {}  # the committed case would have left a ready job

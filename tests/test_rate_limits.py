"""experiments.rate_limits: library Workers calling one partner with no limit, then under the
shared rate limit, on a real server. Asserts counts (calls, tries, the most in a window against
the limit's promise), never how long anything took."""

import threading

import pytest

import pgq_teach as pgq
from helpers import chart_rows
from pgq_teach import kinds, queue, seeding
from pgq_teach.experiments import rate_limits
from pgq_teach.experiments.rate_limits import KIND
from pgq_teach.statements import run, run_one

RATE = 10


def test_the_shared_limit_holds_the_partner_to_its_rate_plus_one_seconds_burst_and_spends_no_try(db):
    result = rate_limits.partner_quota(db, workers=4, per_second=RATE, seconds=2, work_s=0.005)
    print(result.summary())  # the rates, for the report
    free, held = result.unlimited, result.limited
    assert 0 < held.most_in_one_second <= 2 * RATE  # the rate, plus one second of burst
    for t in range(1, 4):  # any window of t seconds, up to the whole run: at most the rate x (t + 1)
        assert held.most_in(t) <= RATE * (t + 1), (t, held.most_in(t))
    assert free.most_in_one_second > 2 * RATE  # what the limit is there to stop
    # every call spent exactly one try; a job handed back for want of a token spent none
    assert free.tries_spent == free.calls and held.tries_spent == held.calls
    assert held.handed_back > 0 and free.handed_back == 0
    # a handed-back job lost its place: its new run_at put it behind every job due before then, the
    # backlog it was ahead of included (the server's count of where each ready job waits)
    assert held.waiting_handed_back > 0 and held.ready_not_handed_back > 0
    assert held.fewest_places_lost > 0  # each is further back than at enqueue (see the test below)
    assert held.first_place_handed_back > held.ready_not_handed_back
    assert free.waiting_handed_back == 0 and free.first_place_handed_back is None
    rows = chart_rows(result.chart(), "line")
    assert sum(row["calls"] for row in rows if row["run"] == "shared limit") <= held.calls


def test_the_busiest_window_is_counted_from_each_call():
    run = rate_limits.QuotaRun(
        limited=True, call_times_s=[0.0, 0.5, 0.99, 1.0, 1.2, 1.3, 3.0], tries_spent=7, handed_back=0
    )
    assert run.most_in_one_second == 5  # 0.5, 0.99, 1.0, 1.2 and 1.3: within a second of 0.5
    assert run.per_second(4) == [3, 3, 0, 1]
    assert run.most_in(0.5) == 4  # 0.99, 1.0, 1.2 and 1.3: within half a second of 0.99
    assert run.most_in(3) == 6 and run.most_in(3.01) == 7  # a window ends before its end


def test_each_run_starts_with_the_bucket_empty_as_a_first_take_leaves_it(conn):
    assert kinds.take_tokens(conn, KIND, RATE, 100) == 0  # the first take: an empty bucket
    run(conn, "lab/age_bucket", {"kind": KIND, "seconds": 60})  # left unused, as by the no-limit run
    run(conn, "lab/empty_bucket", {"kind": KIND})
    assert (
        kinds.take_tokens(conn, KIND, RATE, 100) <= 1
    )  # no second's burst left over: at most one earned since


def test_a_stop_ends_both_runs_early_and_says_so(db):
    stop = threading.Event()
    stop.set()
    result = rate_limits.partner_quota(db, workers=1, seconds=5, stop=stop)
    assert result.stopped and "stopped early" in result.summary()
    # neither run began: each says so, with no count of 0 that reads as a limit holding
    assert not result.unlimited.ran and not result.limited.ran
    assert result.summary().count("not run (stopped before it began)") == 2
    assert [row[2] for row in result.comparison()] == ["not run (stopped)"] * 6
    assert chart_rows(result.chart(), "line") == []


@pytest.mark.parametrize("kwargs", [{"workers": 0}, {"per_second": 0}, {"seconds": 31}, {"work_s": -1}])
def test_bad_settings_are_refused_before_the_table_is_touched(conn, db, kwargs):
    pgq.enqueue(conn, "k", {})
    with pytest.raises(pgq.BadInput):
        rate_limits.partner_quota(db, **kwargs)
    assert pgq.queue.status_counts(conn) == {"ready": 1}


@pytest.mark.parametrize("handed_back, places_lost", [(-1, 0), (0, 9)])
def test_only_the_places_lost_tell_a_job_that_lost_its_place_from_one_that_was_last_anyway(
    conn, handed_back, places_lost
):
    """lab/hand_back_places.sql counts a job as handed back when its run_at is past its
    enqueued_at, which also puts it behind every job due at enqueue: behind every job never
    handed back, by that definition, whichever job it was. Whether it lost its place shows in
    the places lost: none for the newest job, last in line already, nine for the oldest."""
    seeding.reset_and_seed(conn, KIND, 10)
    claimed = queue.claim(conn, batch=10)
    back = claimed.pop(handed_back)
    with queue.atomic(conn):  # the other nine go back to ready as they were, run_at kept
        params = {
            "ids": [j.id for j in claimed],
            "fence_tokens": [j.fence_token for j in claimed],
            "error": "",
        }
        run(conn, "release_many", params)
    assert kinds.hand_back(conn, [(back, 60)]) == [back.id]
    waiting, first_place, not_moved, fewest_lost, most_lost = run_one(
        conn, "lab/hand_back_places", {"kind": KIND}
    )
    assert (waiting, not_moved, first_place) == (1, 9, 10)  # behind the nine, either way
    assert fewest_lost == most_lost == places_lost

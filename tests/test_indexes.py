"""Lesson 08's experiments on a real server: partial against full index
sizes, the index that does not shrink, and the literal 'ready' against a
generic plan (guide #14, #15, #16)."""

import psycopg
import pytest

from helpers import cannot_run, counts, seed
from pgq_teach.errors import BadInput
from pgq_teach.experiments import bloat, indexes
from pgq_teach.statements import run_one

DONE = 20_000  # enough rows for the full index to span many pages


@pytest.mark.parametrize("kwargs", [{"done": -1}, {"ready": 0}, {"done": "many"}, {"ready": True}])
def test_bad_counts_are_refused_before_touching_the_table(db, conn, kwargs):
    seed(conn, 2)
    with pytest.raises(BadInput):
        indexes.index_sizes(db, **kwargs)
    assert counts(conn) == {"ready": 2}


def test_the_partial_index_stays_small_beside_done_jobs(db):
    result = indexes.index_sizes(db, done=DONE, ready=100)
    assert result.bytes[indexes.READY_INDEX] <= 16 * 1024
    assert result.bytes[indexes.RUNNING_INDEX] <= 16 * 1024
    assert result.ratio >= 20


def test_equal_keys_deduplicate_the_full_index(db):
    distinct = indexes.index_sizes(db, done=DONE, ready=100, distinct=True)
    equal = indexes.index_sizes(db, done=DONE, ready=100, distinct=False)
    assert equal.bytes[indexes.FULL_INDEX] < distinct.bytes[indexes.FULL_INDEX] / 2


def test_the_ready_index_keeps_its_size_until_rebuilt(db):
    result = indexes.drained_index(db, jobs=DONE)
    assert not result.stopped
    assert result.after_drain_kb == result.after_vacuum_kb == result.seeded_kb > 100
    assert result.after_reindex_kb <= 16


def test_a_generic_plan_on_status_cannot_use_the_partial_index(db):
    plans = indexes.read_plans(db, done=DONE, ready=100)
    assert indexes.READY_INDEX in plans.literal.indexes
    assert indexes.READY_INDEX not in plans.generic.indexes
    assert plans.generic.buffers > 10 * plans.literal.buffers
    # in the default mode the generic plan's estimate is far dearer, so the server keeps custom plans
    assert indexes.READY_INDEX in plans.auto.indexes and plans.auto.buffers < plans.generic.buffers / 10


def test_the_reaper_uses_its_own_partial_index(db):
    indexes.seed_history(db, DONE, 10)
    assert "jobs_running_idx" in indexes.reap_index_plan(db)


def test_a_generic_plan_can_use_a_full_index_which_is_then_dropped(db):
    plans = indexes.read_plans(db, done=DONE, ready=100)
    with_full = indexes.generic_plan_with_full_index(db)
    assert indexes.FULL_INDEX in with_full.indexes
    assert with_full.buffers < plans.generic.buffers
    assert indexes.FULL_INDEX not in indexes.sizes(db)


def test_index_results_carry_the_guess_in_their_rows(db):
    silent = indexes.index_sizes(db, done=DONE, ready=100)
    assert silent.comparison()[2][1] == "no guess" and "(your guess: no guess)" in silent.summary()
    guessed = indexes.read_plans(db, done=DONE, ready=100, guess=50)
    row = ("status = $1, generic plan: buffers", 50, guessed.generic.buffers, None)
    assert guessed.comparison()[1] == row
    assert "(your guess: 50)" in guessed.summary() and guessed.server_major == db.server.major


def test_deduplication_makes_posting_lists_of_about_130_pointers(db):
    indexes.index_sizes(db, done=100_000, ready=100, distinct=False)
    lists = indexes.posting_lists(db, "jobs_status_run_at_idx")
    if not lists.available:
        cannot_run(db, lists.reason)
    assert lists.row_pointers == 100_100
    assert 600 <= lists.posting_lists <= 950 and 100 <= lists.pointers_each <= 160


def test_distinct_keys_make_no_posting_lists(db):
    indexes.index_sizes(db, done=5_000, ready=10, distinct=True)
    lists = indexes.posting_lists(db, "jobs_status_run_at_idx")
    if not lists.available:
        cannot_run(db, lists.reason)
    assert lists.posting_lists == 0 and lists.leaf_items == lists.row_pointers == 5_010


def test_plain_reindex_blocks_a_read_by_id_and_concurrently_waits_for_a_snapshot_or_a_lock(db):
    r = indexes.reindex_locks(db)
    assert r.read_by_id_during_plain == "55P03"
    snapshot, lock, nothing = (r.concurrently[key] for key in ("snapshot", "lock", "nothing"))
    # an older snapshot in this database stalls it before the swap: the new copy is left
    assert snapshot.sqlstate == "55P03" and snapshot.waited_s >= 0.9
    assert snapshot.invalid_left == ["jobs_ready_idx_ccnew"]
    # a lock on jobs (an idle READ COMMITTED reader: no snapshot) stalls it after the swap:
    # the rebuild is in place and the old index is left, renamed
    assert lock.sqlstate == "55P03" and lock.invalid_left == ["jobs_ready_idx_ccold"]
    # an idle transaction with neither: it does not wait for "every older transaction"
    assert nothing.sqlstate is None and nothing.invalid_left == []
    assert not {"jobs_ready_idx_ccnew", "jobs_ready_idx_ccold"} & set(indexes.sizes(db))  # dropped
    assert "jobs_ready_idx" in indexes.sizes(db)
    assert "gave up" in r.summary() and "finished" in r.summary()


def test_an_idle_read_committed_reader_holds_its_lock_and_no_snapshot(db, conn):
    """The reader the REINDEX test stalls on holds no backend_xmin: a SELECT sent with parameters
    would keep its portal's snapshot until the next statement, which the lab's reader ends."""
    seed(conn, 3)
    idle = bloat.IdleTransaction(db, isolation=psycopg.IsolationLevel.READ_COMMITTED, read_job=1)
    try:
        pid = idle.open()
        state, xid, xmin = run_one(conn, "lab/session_horizon", {"pid": pid})
    finally:
        idle.close()
    assert state == "idle in transaction" and xid is None and xmin is None


def test_vacuum_deletes_the_drained_ready_index_pages_and_the_file_keeps_its_size(db):
    r = indexes.drained_index(db, jobs=20_000)
    assert r.vacuum_pages_deleted >= 0.9 * r.vacuum_index_pages - 2
    assert r.after_vacuum_kb == r.after_drain_kb

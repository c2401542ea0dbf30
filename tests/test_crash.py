"""Lesson 04 on a real server: a crashed hold-style worker frees its job at
once, a crashed lease-style worker's job waits for its lease and the reaper,
a held transaction keeps VACUUM from removing dead rows, and the reaper's
plan uses the partial index."""

import pytest

from helpers import expire_leases
from pgq_teach import measurements, seeding
from pgq_teach.databases import drop_database, open_database
from pgq_teach.errors import BadInput
from pgq_teach.experiments import crash
from pgq_teach.widgets.crash_lab import CleanupLab, CrashLab


def test_held_job_is_ready_at_once_and_leased_job_waits_for_its_lease(db):
    result = crash.crash_both(db, lease_s=2.0)
    assert (result.hold_job, result.lease_job, result.lease_attempts) == (1, 2, 1)
    assert result.claim_before_crash is None  # both jobs taken while both workers live
    # At once: the first claim after the hold worker's session ended took its job. The claim
    # skips locked rows rather than wait, so while the lock was held it took nothing (above).
    # How long that claim took is the summary's to report, not a test's to bound.
    assert result.held_job_claimed == 1
    assert result.lease_status_after_end == "running"
    assert result.reaped_at_once == 0
    assert result.lease_left_at_end_s > 0  # asked of the server: the lease had not run out
    assert result.back_after_s >= result.lease_left_at_end_s - 0.05
    assert result.reaped_after_lease and result.leased_job_after.attempts == 1
    assert not result.stopped and "guide #8" in result.summary()
    # no guess made: the summary and the comparison say so, never 0
    assert "(your guess: no guess)" in result.summary()
    assert [row[1] for row in result.comparison()] == [None, None, "no guess"]


def test_the_guess_is_carried_into_the_comparison(db):
    result = crash.crash_both(db, lease_s=0.5, guess=1.5)
    assert result.comparison()[2][1] == 1.5 and "(your guess: 1.5 s)" in result.summary()


def test_by_hand_pg_locks_shows_the_hold_worker_until_its_session_ends(db):
    with crash.CrashScene(db, lease_s=5) as scene:
        assert scene.start_hold_worker() == 1
        assert scene.start_lease_worker().id == 2
        holders = scene.lock_holders()
        assert [(h.worker, h.mode) for h in holders] == [("hold worker", "RowShareLock")]
        assert scene.third_claim()[0] is None
        assert sorted(s.application_name for s in scene.sessions()) == [
            "pgq-crash hold worker",
            "pgq-crash lease worker",
            "pgq-crash third session",
        ]
        assert scene.end_session("hold") == 1
        assert scene.lock_holders() == []
        # pg_stat_activity no longer has the ended session (end_session waited for it to go)
        assert "pgq-crash hold worker" not in [s.application_name for s in scene.sessions()]
        assert scene.third_claim()[0].id == 1
        assert scene.end_session("hold") == 0
        assert scene.end_session("lease") == 1
        assert scene.reap() == 0 and scene.row(2).status == "running"


def test_a_held_transaction_keeps_vacuum_from_removing_dead_rows(db):
    result = crash.cleanup_held_back(db, others=300)
    assert result.updated == 300
    assert result.during.removed == 0
    assert result.during.not_removable == 300
    # after the commit: the 300, plus the old version of job 1 the worker marked done
    assert result.after.removed == 301
    assert result.after.not_removable == 0
    assert result.culprit["backend_xid"] is not None and result.culprit["backend_xmin"] is None
    assert result.culprit["state"] == "idle in transaction"
    # the idle reader, open since before the worker and still open at the second VACUUM, held nothing
    assert result.contrast == {"state": "idle in transaction", "backend_xid": None, "backend_xmin": None}
    assert result.comparison()[1][1] == "no guess"
    assert crash.cleanup_held_back(db, others=10, guess=10).comparison()[1][1:] == (10, 10, 1_000)


def test_the_held_transaction_holds_back_pruning_in_another_database_not_vacuum_alone(alone_db):
    # On a server of its own: a claim about every database on the server, which another
    # test's transaction, in any database, would hold back too (make test's CI run saw
    # the table reach 3 pages, not 1, after the commit, beside the parallel tests).
    db = alone_db
    other = open_database("test-crash-elsewhere", reset=True)
    try:
        result = crash.cleanup_held_back(db, others=200, elsewhere=other)
    finally:
        drop_database("test-crash-elsewhere")
    assert result.during.not_removable == 200  # held back here...
    assert result.elsewhere.removed == 200 and result.elsewhere.not_removable == 0  # ...not VACUUM alone
    assert result.elsewhere_xmin == result.culprit["backend_xid"]  # but every snapshot there carries its ID
    assert result.churn.pages_clear == 1 and result.churn.pages_held >= 10  # and nothing was pruned there
    assert "another database" in result.summary() and result.comparison()[3][2] == 200


def test_vacuum_compares_ids_not_times(db):
    order = crash.older_id_commits_later(db, rows=100)
    assert order.writer_xid < order.holder_xid  # the writer's ID first, its commit after the worker began
    assert order.vacuum.removed == 100 and order.vacuum.not_removable == 0
    assert "100 removed" in str(order)


def test_an_empty_reaper_pass_reads_what_vacuum_has_not_cleaned(db):
    result = crash.reaper_backlog(db, jobs=2_000)
    ran, twice = result.buffers("2,000 jobs ran"), result.buffers("4,000 jobs ran")
    assert result.buffers("nothing had run") <= 2
    assert 2 * ran - 3 <= twice and ran > 20  # it grows with the jobs that ran
    assert result.vacuum_held.removed == 0 and result.buffers("VACUUM beside the held transaction") >= twice
    assert result.vacuum_after.removed > 0 and result.buffers("VACUUM once it had ended") <= 2
    assert "VACUUM after it ended" in result.summary()


def test_the_reaper_uses_the_partial_index_on_leased_until(db):
    plan = crash.reaper_plan(db)
    assert plan.uses_running_index, plan.plan
    # five leases moved into the past are reaped; the 45 with minutes left stay running
    assert (plan.expired, plan.reaped_now, plan.still_running) == (5, 5, 45)
    assert "the guide (the reaper)" in plan.summary() and plan.comparison()[1][2] == 5


def test_a_worker_reaps_about_once_a_second_not_before_every_claim(db):
    result = crash.reaper_cadence(db, jobs=150, work_s=0.02)
    assert result.claimed == 150 and result.elapsed_s > 2  # several seconds, so the bound means something
    assert result.reaper_passes <= result.elapsed_s / result.reap_every_s + 2
    assert result.reaper_passes >= result.elapsed_s / result.reap_every_s - 1  # and it does keep reaping


@pytest.mark.parametrize(
    "call",
    [
        lambda db: crash.crash_both(db, lease_s=0),
        lambda db: crash.crash_both(db, lease_s="2"),
        lambda db: crash.cleanup_held_back(db, others=0),
        lambda db: crash.cleanup_held_back(db, elsewhere=db),
        lambda db: crash.reaper_plan(db, running=True),
        lambda db: crash.reaper_plan(db, running=5, expired=6),
        lambda db: crash.reaper_cadence(db, work_s=-1),
        lambda db: crash.reaper_backlog(db, jobs=0),
        lambda db: crash.older_id_commits_later(db, rows=0),
    ],
)
def test_bad_input_is_refused_before_anything_runs(db, call):
    with pytest.raises(BadInput):
        call(db)


def test_end_session_names_a_worker(db):
    with crash.CrashScene(db) as scene, pytest.raises(BadInput):
        scene.end_session("third")


def test_the_lab_by_clicking(db, tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = CrashLab(db, lease_s=2.0)
    try:
        lab.hold_panel.start_button.click()
        lab.lease_panel.start_button.click()
        assert "RowShareLock" in lab.board.value and 'data-job="2" data-status="running"' in lab.board.value
        assert lab.refreshing  # the scene's monitor keeps redrawing the board while the lease runs
        assert lab.guess.value is None  # an empty box is no guess, not 0
        lab.hold_panel.end_button.click()
        sessions = lab.board.value.split("pgq-lab-sessions")[1]
        assert "hold worker" not in sessions and "lease worker" in sessions  # gone from pg_stat_activity
        lab.claim_button.click()
        assert "claimed job 1" in lab.third_status.value
        assert "Next: Now End the lease-style worker" in lab.third_status.value and not lab.done
        lab.lease_panel.end_button.click()
        lab.reap_button.click()
        assert "handed back 0" in lab.third_status.value and "Run the reaper" in lab.third_status.value
        assert not lab.done  # the leased job is not back yet
        with db.connection() as conn:
            expire_leases(conn, [lab.live_scene().lease_job])  # its lease, passed: no sleeping through it
        lab.reap_button.click()
        assert lab.done and lab.third_status.value.startswith("done: the reaper handed back 1 job")
        lab.reset_button.click()
        assert not lab.done and "Start the hold-style worker" in lab.third_status.value
        lab.run_button.click()
        result = lab.wait(30)
        assert result.reaped_after_lease and "guide #8" in lab.output.value
        assert result.lease_s == crash.DEFAULT_LEASE_S  # the sequence runs by itself, on a short lease
        assert result.guess is None and "no guess" in lab.output.value
        assert (
            lab.done and "two ready jobs again" in lab.third_status.value.lower()
        )  # reset for trying by hand
        recorded = measurements.read(measurements.LEASED_JOB_BACK_S)  # the lab keeps it for later lessons
        assert recorded["value"] == round(result.back_after_s, 2) and recorded["unit"] == "s"
    finally:
        lab.close()
    assert not lab.refreshing and lab.refresh_error is None


def test_the_lab_lease_is_long_enough_for_a_person_and_the_learner_can_set_it(db, tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = CrashLab(db)
    try:
        assert lab.lease_s == crash.HANDS_ON_LEASE_S == 20
        lab.lease.value = 45  # the slider: a new scene, two ready jobs, a 45 s lease
        lab.lease_panel.start_button.click()
        left = lab.live_scene().board()[0].lease_left_s
        assert left is not None and 40 < left <= 45  # asked of the server, not read back
        assert (lab.lease.min, lab.lease.max) == crash.HANDS_ON_LIMITS
    finally:
        lab.close()


def test_the_cleanup_lab_runs_in_one_line_and_records_what_vacuum_kept(db, tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = CleanupLab(db, others=200)
    try:
        result = lab.run_and_wait(60)
    finally:
        drop_database(lab.elsewhere_label)
    assert result.during.not_removable == 200 and result.elsewhere.removed == 200
    assert lab.elsewhere.name != db.name and lab.elsewhere.name.startswith("pgq_elsewhere_")
    assert measurements.read(measurements.DEAD_NOT_REMOVABLE)["value"] == 200


def test_two_reapers_at_once_never_wait_and_never_reap_a_job_twice(db):
    with db.connection() as conn:
        seeding.reset_and_seed(conn, "send_receipt", 30)
    reapers = crash.two_reapers(db, expired=10)
    assert (reapers.first, reapers.second, reapers.after_both) == (10, 0, 0)
    with pytest.raises(BadInput):
        crash.two_reapers(db, expired=0)


def test_the_crash_labs_next_step_follows_what_was_done_in_any_order():
    """Issue 45: the hint read a fixed order ("Both workers are working" after one was ended)."""
    from pgq_teach.widgets.crash_lab import HANDS_ON, next_step

    both = {"hold started", "lease started"}
    assert next_step({"lease started"}) == "Now Start the hold-style worker."
    assert "Run the reaper" in next_step(both | {"lease ended"})
    assert "Both workers" not in next_step(both | {"lease ended"})
    assert next_step(both | {"lease ended", "reaped"}) == "Now End the hold-style worker's session."
    assert "Third worker claims" in next_step(both | {"lease ended", "reaped", "hold ended"})
    assert next_step(both | {"hold ended", "claimed"}) == "Now End the lease-style worker's session."
    assert next_step(set(HANDS_ON)) is None  # every step done, whichever came first


def test_the_lab_in_the_other_order_says_what_its_state_calls_for(db, tmp_path, monkeypatch):
    """The lease-style worker ended first, a third claim pressed before any worker started:
    each status line follows the lab's state, and the lab still ends done."""
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))
    lab = CrashLab(db, lease_s=2.0)
    try:
        lab.claim_button.click()  # nothing started: refused with a sentence, no job taken
        assert lab.third_status.value.startswith("Start both workers first")
        lab.lease_panel.start_button.click()
        assert "Next: Now Start the hold-style worker" in lab.third_status.value
        lab.hold_panel.start_button.click()
        lab.lease_panel.end_button.click()
        assert "Run the reaper" in lab.third_status.value and "Both workers" not in lab.third_status.value
        with db.connection() as conn:
            expire_leases(conn, [lab.live_scene().lease_job])
        lab.reap_button.click()
        assert "handed back 1 job" in lab.third_status.value
        assert "Next: Now End the hold-style worker's session" in lab.third_status.value and not lab.done
        lab.hold_panel.end_button.click()
        assert "Third worker claims" in lab.third_status.value
        lab.claim_button.click()
        assert lab.done and lab.third_status.value.startswith("done: third worker claimed job")
    finally:
        lab.close()

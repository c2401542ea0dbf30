"""Every SQL statement a model answer quotes runs on the course's server, in a
scratch database with the course's schema, and reports the rows its content
file says (so a wrong model answer, like FOR UPDATE beside DISTINCT, or a
uniqueness index that forgets done jobs, fails here). The SQL comes from the
content files: it is learner-facing prose, checked by running it."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import psycopg
import pytest

from pgq_teach import interview, kinds, queue, statements
from pgq_teach.errors import BadInput

WITH_SQL = interview.WITH_SQL
STEPS_WITH_SQL = tuple(s.key for s in interview.STEPS if s.sql)  # the deep dive's mechanisms


def test_the_model_answers_that_quote_sql_include_the_two_that_were_wrong():
    assert {"fairness", "unique"} <= set(WITH_SQL) and STEPS_WITH_SQL == ("deep_dive",)


@pytest.mark.parametrize("key", WITH_SQL + STEPS_WITH_SQL)
def test_every_sql_in_a_model_answer_runs_and_reports_its_rows(conn, key):
    statements.run(conn, "lab/reset_jobs")  # ids from 1, as the answers' scenes number them
    for n, sql_step in enumerate(interview.quoted_sql(key)):
        assert interview.execute_step(conn, sql_step) == sql_step.rows, (key, n, sql_step.text)


def test_the_deep_dive_writes_the_six_mechanisms_and_they_do_what_their_names_say(conn):
    """Two orders of three kinds each: the claim takes four, the completion finishes job 1
    (a stale token finishes nothing), the extension renews job 2, the backoff puts it back
    later with its try spent, the hand-back gives job 3 its try back, and the reaper
    returns job 4, whose worker died; 5 and 6 are untouched."""
    steps = interview.step("deep_dive").sql
    names = [s.name.split(" (")[0] for s in steps if s.shown]
    assert names == [
        "the claim",
        "the fenced completion",
        "the lease extension",
        "the backoff on failure",
        "the hand-back",
        "the reaper",
    ]
    assert all(1 <= len(s.text.strip().splitlines()) <= 5 for s in steps if s.shown)  # board-sized
    statements.run(conn, "lab/reset_jobs")
    for sql_step in steps:
        interview.execute_step(conn, sql_step)
    rows = {
        r["id"]: r for r in statements.run(conn, "lab/all_jobs", row_factory=psycopg.rows.dict_row).fetchall()
    }
    assert len({r["kind"] for r in rows.values()}) == 3 and len(rows) == 6
    assert rows[1]["status"] == "done"
    assert rows[2]["status"] == "ready" and rows[2]["attempts"] == 1 and rows[2]["run_at"] > rows[5]["run_at"]
    assert rows[3]["status"] == "ready" and rows[3]["attempts"] == 0  # the try given back
    assert rows[3]["run_at"] > rows[5]["run_at"]  # and not claimable again before its wait
    assert rows[4]["status"] == "ready" and rows[4]["last_error"] == "lease expired"
    assert [rows[n]["attempts"] for n in (5, 6)] == [0, 0]


def test_the_board_s_hand_back_leaves_a_job_as_the_worker_s_hand_back_does(conn):
    """The hand-back written on the board and the one the Worker runs for a missing token
    or a paused kind (kinds.hand_back): each job ready, its try given back, not due before
    its wait; a stale token hands nothing back."""
    board = next(s for s in interview.step("deep_dive").sql if s.name.startswith("the hand-back"))
    statements.run(conn, "lab/reset_jobs")
    for n in (1, 2):
        queue.enqueue(conn, "shipping_label", {"order_id": n})
    on_board, by_library = sorted(queue.claim(conn, batch=2), key=lambda j: j.id)

    def written(job: queue.Job, token: int) -> int:
        params = {"id": job.id, "fence_token": token, "wait": "30 seconds"}
        return interview.execute_step(conn, replace(board, params=tuple(params.items())))

    before = datetime.now(timezone.utc) - timedelta(seconds=1)  # this machine's clock, the server's too
    assert written(on_board, on_board.fence_token - 1) == 0  # a worker that lost the job
    assert written(on_board, on_board.fence_token) == 1
    assert kinds.hand_back(conn, [(by_library, 30)]) == [by_library.id]
    rows = statements.run(conn, "lab/all_jobs", row_factory=psycopg.rows.dict_row).fetchall()
    for row in rows:
        assert row["status"] == "ready" and row["attempts"] == 0 and row["leased_until"] is None
        assert row["run_at"] >= before + timedelta(seconds=30)
    assert queue.claim(conn, batch=2) == []  # neither is claimable during its wait


def test_the_model_answers_name_no_file_but_show_the_lines():
    """A model answer shows a mechanism's lines; "the course's fail.sql" could not be checked
    on a board."""
    texts = [interview.model_answer(s, sc) for s in interview.STEP_KEYS for sc in interview.SCENARIOS]
    texts += [f.model() for f in interview.FOLLOW_UPS.values()]
    for text in texts:
        assert not re.search(r"\w\.sql\b|sql/", text), text[:200]
    for sc in interview.SCENARIOS:
        deep = interview.model_answer("deep_dive", sc)
        assert "FOR UPDATE SKIP LOCKED" in deep and "fence_token = :fence_token" in deep


UNIQUE_INDEXES = [
    (key, n)
    for key in WITH_SQL + STEPS_WITH_SQL
    for n, s in enumerate(interview.quoted_sql(key))
    if "CREATE UNIQUE INDEX" in s.text.upper()
]


@pytest.mark.parametrize(("key", "n"), UNIQUE_INDEXES)
def test_no_model_answer_s_unique_index_drops_a_job_of_another_kind(conn, key, n):
    """Every kind of every scenario, and lesson 11's paid and shipped events, twice for one
    order (two webhooks an order, two events): with the answer's unique index in place,
    every job of a kind the index is not about is kept, ON CONFLICT DO NOTHING or not."""
    index = interview.quoted_sql(key)[n]
    interview.execute_step(conn, index)
    about = set(re.findall(r"kind\s*=\s*'(\w+)'", index.text))
    assert about, "a unique key per order must name its kind, or it applies to every kind"
    kinds = {j.name for s in interview.SCENARIOS.values() for j in s.jobs} | {"paid", "shipped"}
    for kind in sorted(kinds - about):
        for event in ("first", "second"):
            (kept,) = statements.run(
                conn, "lab/enqueue_for_order", {"kind": kind, "order_id": 202, "event": event}
            ).fetchall() or [None]
            assert kept is not None, (key, kind, event)


def test_a_lesson_runs_a_model_answer_s_sql_on_its_own_database_and_nothing_stays(db, conn):
    queue.enqueue(conn, "receipt", {"order_id": 101})  # a job the lesson already had
    assert interview.run_model_sql(db, "unique") == [0, 1, 1, 0, 3]  # the order's other kinds all kept
    assert interview.run_model_sql(db, "fairness") == [0, 5, 0, 3]
    assert queue.status_counts(conn) == {"ready": 1}  # rolled back: the lesson's job, no index left
    queue.enqueue(conn, "receipt", {"order_id": 101})  # so a second one is still allowed
    with pytest.raises(BadInput, match="quotes no SQL"):
        interview.run_model_sql(db, "bloat")


def test_the_fair_claim_takes_one_job_per_tenant(conn):
    column, setup, index, claim = interview.follow_up("fairness").sql
    for sql_step in (column, setup, index):
        conn.execute(sql_step.text)
    tenants = sorted(row[1] for row in conn.execute(claim.text).fetchall())
    assert tenants == ["big", "other", "small"]  # the flooding tenant gets one, like the others


def test_a_second_worker_running_the_fair_claim_meanwhile_skips_the_first_one_s_jobs(db):
    """Two sessions: the first claims and has not committed; the second neither waits
    for it nor takes its jobs, and gets the flooding tenant's next job (the only other one)."""
    column, setup, index, claim = interview.follow_up("fairness").sql
    # the second session's lock_timeout turns a wait into an error, not a hang
    with db.connection() as first, db.connection(options="-c lock_timeout=2000") as second:
        for sql_step in (column, setup, index):
            first.execute(sql_step.text)
        first.commit()
        mine = {row[0] for row in first.execute(claim.text).fetchall()}  # open transaction
        theirs = second.execute(claim.text).fetchall()
        assert len(mine) == 3 and [row[1] for row in theirs] == ["big"] and not mine & {theirs[0][0]}


@pytest.mark.parametrize("with_index", [True, False])
def test_the_fair_claim_s_plan_at_a_flood_reads_little_per_job_only_with_its_index(db, with_index):
    """The model answer's claim on a flood of 10,000 jobs from one tenant ahead of one job
    each from 50 others (the answer's own example is 5 jobs): with the (tenant, run_at)
    index, each pick is a short index scan, and the claim reads two passes over the ready
    rows (the DISTINCT, and the join back to the table) plus a few buffers a job. Without it,
    every small tenant's pick walks the whole flood: the bound fails, as the answer says."""
    column, _setup, index, claim = interview.follow_up("fairness").sql
    with db.connection() as conn:
        conn.execute(column.text)  # the tenant column the answer adds, written at enqueue
        statements.run(conn, "lab/seed_tenant_flood", {"flood": 10_000, "tenants": 50})
        if with_index:
            conn.execute(index.text)
        statements.run(conn, "lab/analyze_jobs")
        conn.commit()
        statements.run(conn, "lab/flush_stats")
        before = statements.run_one(conn, "lab/table_buffers")[0]
        claimed = len(conn.execute(claim.text).fetchall())
        statements.run(conn, "lab/flush_stats")
        read = statements.run_one(conn, "lab/table_buffers")[0] - before
        pages = statements.run_one(conn, "lab/jobs_table_pages")[0]
    assert claimed == 51  # one a tenant, the flood's included
    bound = 3 * pages + 20 * claimed  # wide: about 2 passes and 5 buffers a job were measured
    assert (read < bound) is with_index, (read, pages, claimed)


def test_the_step_model_answers_quote_no_sql_that_the_test_would_miss():
    """A step's prose describes; every SQL line a learner reads is in a `sql` list, run above."""
    for s in interview.STEPS:
        for scenario in interview.SCENARIOS:
            prose = interview.model_answer(s.key, scenario, board=False)
            assert "```" not in prose and "RETURNING" not in prose and "SET status" not in prose


def test_the_retry_follow_up_s_schedule_is_the_course_s_fail(conn):
    """retry_policy says one schedule of five attempts doubling from 20 s gives up after
    about five minutes: the course's own fail.sql, run on the server, waits that long."""
    from datetime import datetime, timezone

    from pgq_teach import queue

    assert "waits of 20, 40, 80 and 160 s" in " ".join(interview.follow_up("retry_policy").model().split())
    queue.enqueue(conn, "receipt", {"order_id": 1})
    waits, outcome = [], "ready"
    while outcome == "ready":
        statements.run(conn, "lab/make_all_due")
        (job,) = queue.claim(conn)
        outcome = queue.fail(conn, job, "provider down")
        if outcome == "ready":
            since = datetime.now(timezone.utc)
            (row,) = statements.run(conn, "lab/due_times", {"since": since.isoformat()}).fetchall()
            waits.append(row[0])
    assert outcome == "dead" and len(waits) == 4  # five attempts, four waits between them
    assert [round(w / 10) * 10 for w in waits] == [20, 40, 80, 160] and 280 <= sum(waits) <= 320

"""Every SQL statement a model answer quotes runs on the course's server, in a
scratch database with the course's schema, and reports the rows its content
file says (so a wrong model answer, like FOR UPDATE beside DISTINCT, or a
uniqueness index that forgets done jobs, fails here). The SQL comes from the
content files: it is learner-facing prose, checked by running it."""

from __future__ import annotations

import pytest

from pgq_teach import interview, queue, statements
from pgq_teach.errors import BadInput

WITH_SQL = interview.WITH_SQL


def test_the_model_answers_that_quote_sql_include_the_two_that_were_wrong():
    assert {"fairness", "unique"} <= set(WITH_SQL)


@pytest.mark.parametrize("key", WITH_SQL)
def test_every_sql_in_a_model_answer_runs_and_reports_its_rows(conn, key):
    for n, sql_step in enumerate(interview.follow_up(key).sql):
        cur = conn.execute(sql_step.text)
        rows = len(cur.fetchall()) if cur.description else max(cur.rowcount, 0)
        assert rows == sql_step.rows, (key, n, sql_step.text)


def test_a_lesson_runs_a_model_answer_s_sql_on_its_own_database_and_nothing_stays(db, conn):
    queue.enqueue(conn, "receipt", {"order_id": 101})  # a job the lesson already had
    assert interview.run_model_sql(db, "unique") == [0, 1, 1, 0]
    assert interview.run_model_sql(db, "fairness") == [5, 0, 3]
    assert queue.status_counts(conn) == {"ready": 1}  # rolled back: the lesson's job, no index left
    queue.enqueue(conn, "receipt", {"order_id": 101})  # so a second one is still allowed
    with pytest.raises(BadInput, match="quotes no SQL"):
        interview.run_model_sql(db, "bloat")


def test_the_fair_claim_takes_one_job_per_tenant(conn):
    setup, index, claim = interview.follow_up("fairness").sql
    conn.execute(setup.text)
    conn.execute(index.text)
    tenants = sorted(row[1] for row in conn.execute(claim.text).fetchall())
    assert tenants == ["big", "other", "small"]  # the flooding tenant gets one, like the others


def test_a_second_worker_running_the_fair_claim_meanwhile_skips_the_first_one_s_jobs(db):
    """Two sessions: the first claims and has not committed; the second neither waits
    for it nor takes its jobs, and gets the flooding tenant's next job (the only other one)."""
    setup, index, claim = interview.follow_up("fairness").sql
    # the second session's lock_timeout turns a wait into an error, not a hang
    with db.connection() as first, db.connection(options="-c lock_timeout=2000") as second:
        first.execute(setup.text)
        first.execute(index.text)
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
    setup, index, claim = interview.follow_up("fairness").sql
    with db.connection() as conn:
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
    """Steps describe their SQL in words; SQL a learner reads lives in a follow-up's `sql`, tested above."""
    for s in interview.STEPS:
        assert "```" not in s.model and "RETURNING id;" not in s.model


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

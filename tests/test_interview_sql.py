"""Every SQL statement a model answer quotes runs on the course's server, in a
scratch database with the course's schema, and reports the rows its content
file says (so a wrong model answer, like FOR UPDATE beside DISTINCT, or a
uniqueness index that forgets done jobs, fails here). The SQL comes from the
content files: it is learner-facing prose, checked by running it."""

from __future__ import annotations

import pytest
from pgq_teach import interview

WITH_SQL = [key for key, f in interview.FOLLOW_UPS.items() if f.sql]


def test_the_model_answers_that_quote_sql_include_the_two_that_were_wrong():
    assert {"fairness", "unique"} <= set(WITH_SQL)


@pytest.mark.parametrize("key", WITH_SQL)
def test_every_sql_in_a_model_answer_runs_and_reports_its_rows(conn, key):
    for n, sql_step in enumerate(interview.follow_up(key).sql):
        cur = conn.execute(sql_step.text)
        rows = len(cur.fetchall()) if cur.description else max(cur.rowcount, 0)
        assert rows == sql_step.rows, (key, n, sql_step.text)


def test_the_fair_claim_takes_one_job_per_tenant(conn):
    setup, claim = interview.follow_up("fairness").sql
    conn.execute(setup.text)
    tenants = sorted(row[1] for row in conn.execute(claim.text).fetchall())
    assert tenants == ["big", "other", "small"]  # the flooding tenant gets one, like the others


def test_the_step_model_answers_quote_no_sql_that_the_test_would_miss():
    """Steps describe their SQL in words; SQL a learner reads lives in a follow-up's `sql`, tested above."""
    for s in interview.STEPS:
        assert "```" not in s.model and "RETURNING id;" not in s.model

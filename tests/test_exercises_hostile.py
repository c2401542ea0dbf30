"""The learner's SQL is untrusted: anything but one query is refused before it
runs and leaves the scratch database as it was; a long statement is cancelled
by the timeout; the role reaches nothing beyond the scratch jobs table."""

import time

import pytest

from pgq_teach import databases, exercises
from pgq_teach.exercises import sandbox
from pgq_teach.statements import run


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


@pytest.fixture
def scratch(pg):
    s = sandbox.open_scratch("test_hostile")
    with s.db.connection() as owner:
        run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": 5})
    yield s
    databases.drop_database("scratch_test_hostile")


def state(s):
    with s.db.connection() as owner:
        return run(owner, "exercise/scratch_state").fetchone()


HOSTILE = [
    ("a second statement", "SELECT id FROM jobs LIMIT 1; DROP TABLE jobs", "exactly one statement"),
    (
        "a second statement after a comment",
        "UPDATE jobs SET status = 'done' /* ; */; TRUNCATE jobs",
        "exactly one statement",
    ),
    ("a DROP", "DROP TABLE jobs", "DROP is not one"),
    ("a DROP behind a comment", "/* just a claim */ -- really\n DROP TABLE jobs", "DROP is not one"),
    ("COPY to a program", "COPY jobs TO PROGRAM 'touch {marker}'", "COPY is not one"),
    ("an empty cell", "  -- nothing here\n", "only a comment"),
    ("an unknown placeholder", "SELECT id FROM jobs WHERE id = :victim", ":victim is not a value"),
    ("a name that does not exist", "SELECT id FROM no_such_table", "PostgreSQL could not read it"),
]


@pytest.mark.parametrize("what, sql, says", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_sql_is_refused_and_changes_nothing(scratch, tmp_path, what, sql, says):
    marker = tmp_path / "copied"
    before = state(scratch)
    verdict = exercises.judge(exercises.exercise("01/claim"), sql.format(marker=marker), scratch=scratch)
    assert verdict.refused and not verdict.passed
    assert says in verdict.headline, verdict.headline
    assert "Traceback" not in verdict.summary()
    assert state(scratch) == before
    assert not marker.exists()


def test_pg_sleep_is_cancelled_by_the_statement_timeout(pg):
    began = time.monotonic()
    verdict = exercises.check("01/claim", "SELECT 1 AS id FROM pg_sleep(600)")
    assert verdict.refused and "statement timeout" in verdict.headline
    assert time.monotonic() - began < 60  # 3 s per worker, all 8 at once; far from 600 s


def test_the_role_cannot_read_server_files(pg):
    verdict = exercises.check("01/claim", "SELECT length(pg_read_file('/etc/hostname'))::bigint AS id")
    assert verdict.refused and "may only read and change the jobs table" in verdict.headline


def test_the_learner_role_has_no_rights_beyond_the_jobs_table(scratch):
    with scratch.db.connection() as owner:
        cur = run(owner, "exercise/role_rights", {"role": sandbox.ROLE})
        rights = dict(zip([c.name for c in cur.description], cur.fetchone()))
    assert rights == {
        "rolsuper": False,
        "rolcreatedb": False,
        "rolcreaterole": False,
        "rolbypassrls": False,
        "memberships": 0,
        "can_create": False,
        "can_temp": False,
    }
    with scratch.connect() as conn:
        assert run(conn, "lab/session_settings").fetchone()[0] == sandbox.ROLE
    assert scratch.db.name.startswith("pgq_scratch_")

"""The learner's SQL is hostile input. Every attack a security review found,
and more in the same spirit, is refused by the parse tree or contained by the
roles and limits; after each one the cluster is as it was: its roles and their
defaults, its databases, the files at the top of the data directory, and no
session of the learner's or checker's role left behind.

(This file is exempt from the no-SQL-in-tests rule: its SQL is what a learner
types into "Your turn", the input under test.)"""

import time

import psycopg
import pytest

from pgq_teach import databases, exercises
from pgq_teach.exercises import sandbox
from pgq_teach.exercises.learner_sql import Refused, read
from pgq_teach.exercises.verdict import MAX_TEXT
from pgq_teach.statements import run
from pgq_teach.widgets.your_turn import YourTurn

ROLES = [sandbox.ROLE, sandbox.CHECKER_ROLE]
LABEL = "test_hostile"


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


@pytest.fixture
def scratch(pg):
    s = sandbox.open_scratch(LABEL)
    with s.db.connection() as owner:
        run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": 5})
    yield s
    databases.drop_database(f"scratch_{LABEL}")


def fingerprint(s, wait_s: float = 15) -> tuple:
    """The cluster's fingerprint, once no session of the checker's roles is left
    (a closed session takes a moment to leave pg_stat_activity)."""
    deadline = time.monotonic() + wait_s
    while True:
        with s.db.connection() as owner:
            row = run(owner, "exercise/cluster_fingerprint", {"roles": ROLES}).fetchone()
        if row[-1] == 0 or time.monotonic() > deadline:
            return tuple(row)
        time.sleep(0.2)


def state(s):
    with s.db.connection() as owner:
        return run(owner, "exercise/scratch_state").fetchone()


# (what, exercise, the learner's text, what the refusal says). {marker}: a file the
# attack would write if it ran; it must never appear.
REFUSED = [
    # The review's findings.
    (
        "a \\r-ended comment hiding ALTER ROLE",
        "01/claim",
        "--\rALTER ROLE pgq_learner SET search_path = pg_catalog /*\nSELECT */",
        "ALTER ROLE is not one",
    ),
    ("a \\r-ended comment hiding SET", "01/claim", "--\rSET statement_timeout = 0 /*\nSELECT */", "SET is not one"),
    ("a \\r-ended comment hiding DO", "01/claim", "--\rDO $$ BEGIN NULL; END $$ /*\nSELECT */", "DO is not one"),
    (
        "an IMMUTABLE function that writes a file as the superuser",
        "08/index",
        "CREATE FUNCTION ix(bigint) RETURNS bigint IMMUTABLE LANGUAGE sql AS "
        "$$ COPY (SELECT 1) TO PROGRAM 'touch {marker}'; SELECT $1 $$",
        "CREATE FUNCTION is not one",
    ),
    ("CREATE STATISTICS on that function", "08/index", "CREATE STATISTICS st ON (ix(id)) FROM jobs", "is not one"),
    (
        "a trigger on the table",
        "08/index",
        "CREATE TRIGGER t BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION ix()",
        "CREATE TRIGGER is not one",
    ),
    ("an index expression calling a function", "08/index", "CREATE INDEX ON jobs ((ix(id)))", "ix() is not a"),
    (
        "a predicate calling a function",
        "08/index",
        "CREATE INDEX ON jobs (run_at) WHERE status = 'ready' AND pg_sleep(5) IS NOT NULL",
        "pg_sleep() is not a",
    ),
    (
        "a default calling a function",
        "08/index",
        "ALTER TABLE jobs ALTER COLUMN kind SET DEFAULT ix(1)::text",
        "ALTER TABLE is not one",
    ),
    (
        "an operator on the table's type",
        "08/index",
        "CREATE OPERATOR === (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = ix)",
        "is not one",
    ),
    (
        "set_config on statement_timeout inside an UPDATE",
        "05/complete",
        "UPDATE jobs SET status = 'done' WHERE id = :id AND set_config('statement_timeout', '0', false) <> ''",
        "set_config() is not a",
    ),
    (
        "set_config on lock_timeout",
        "05/complete",
        "UPDATE jobs SET status = 'done' WHERE id = :id AND set_config('lock_timeout', '0', false) <> ''",
        "set_config() is not a",
    ),
    ("a sleep", "01/claim", "SELECT 1 AS id FROM pg_sleep(600)", "pg_sleep() is not a"),
    ("ALTER ROLE", "09/holder", "ALTER ROLE pgq_learner SET search_path = pg_catalog", "ALTER ROLE is not one"),
    (
        "pg_terminate_backend on sibling sessions",
        "09/holder",
        "SELECT pg_terminate_backend(pid) AS pid FROM pg_stat_activity WHERE usename = current_user",
        "pg_terminate_backend() is not a",
    ),
    # And more in the same spirit.
    ("a DO block", "01/claim", "DO $$ BEGIN PERFORM pg_sleep(600); END $$", "DO is not one"),
    ("PREPARE", "01/claim", "PREPARE p AS SELECT id FROM jobs", "PREPARE is not one"),
    ("EXECUTE", "01/claim", "EXECUTE p", "EXECUTE is not one"),
    ("COPY to a program", "01/claim", "COPY jobs TO PROGRAM 'touch {marker}'", "COPY is not one"),
    (
        "COPY to a program inside a function body",
        "01/claim",
        "SELECT id FROM jobs WHERE id = (SELECT $$ COPY jobs TO PROGRAM 'touch {marker}' $$::int)",
        None,
    ),
    (
        "a CTE that deletes from another table",
        "01/claim",
        "WITH gone AS (DELETE FROM pg_catalog.pg_authid RETURNING 1) SELECT id FROM jobs",
        "pg_catalog.pg_authid is not one",
    ),
    (
        "a CTE that writes a table of another schema",
        "01/claim",
        "WITH x AS (INSERT INTO public.other (a) VALUES (1) RETURNING a) SELECT id FROM jobs",
        "public.other is not one",
    ),
    ("search_path by SET", "01/claim", "SET search_path = evil, pg_catalog", "SET is not one"),
    (
        "search_path by set_config",
        "01/claim",
        "SELECT id FROM jobs WHERE set_config('search_path', 'evil', false) = ''",
        "set_config() is not a",
    ),
    ("a catalog write", "01/claim", "UPDATE pg_authid SET rolsuper = true", "pg_authid is not one"),
    ("LISTEN", "07/notify", "LISTEN jobs_ready", "LISTEN is not one"),
    ("NOTIFY", "07/notify", "NOTIFY jobs_ready, 'x'", "NOTIFY is not one"),
    (
        "an advisory lock held for ever",
        "01/claim",
        "SELECT id FROM jobs WHERE pg_advisory_lock(1) IS NOT NULL",
        "pg_advisory_lock() is not a",
    ),
    (
        "a huge generate_series in a subquery",
        "01/claim",
        "SELECT id FROM jobs WHERE id IN (SELECT g FROM generate_series(1, 1e12) AS g)",
        "generate_series() is not a",
    ),
    (
        "a billion-wide format",
        "09/holder",
        "SELECT length(format('%1000000000s', 'x')) AS pid",
        "format() is not a",
    ),
    (
        "one huge row from string_agg",
        "09/holder",
        "SELECT string_agg(a.kind, '') AS pid FROM jobs a, jobs b, jobs c",
        "string_agg() is not a",
    ),
    ("deep nesting", "01/claim", "SELECT " + "(SELECT " * 300 + "1" + ")" * 300 + " AS id", "nested too deeply"),
    (
        "a unicode-escaped function name",
        "01/claim",
        'SELECT id FROM jobs WHERE U&"\\0070g_sleep"(600) IS NULL',
        "pg_sleep() is not a",
    ),
    (
        "a dollar quote hiding a second statement's end",
        "01/claim",
        "SELECT $q$ x $q$ AS id; DROP TABLE jobs",
        "exactly one statement",
    ),
    ("two statements", "01/claim", "SELECT id FROM jobs LIMIT 1; DROP TABLE jobs", "exactly one statement"),
    ("SELECT INTO", "01/claim", "SELECT * INTO stolen FROM jobs", "SELECT INTO"),
    ("CREATE TEMP", "01/claim", "CREATE TEMP TABLE t AS SELECT * FROM jobs", "CREATE TEMP is not one"),
    ("LOCK TABLE", "01/claim", "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE", "LOCK is not one"),
    ("a cursor", "01/claim", "DECLARE c CURSOR WITH HOLD FOR SELECT * FROM jobs", "DECLARE is not one"),
    ("BEGIN", "01/claim", "BEGIN", "BEGIN is not one"),
    ("DISCARD ALL", "01/claim", "DISCARD ALL", "DISCARD is not one"),
    ("a large object", "01/claim", "SELECT lo_import('/etc/hostname')::bigint AS id", "lo_import() is not a"),
    ("dblink", "01/claim", "SELECT id FROM dblink('dbname=postgres', 'SELECT 1') AS t(id int)", "dblink() is"),
    (
        "a schema-qualified file read",
        "01/claim",
        "SELECT length(pg_catalog.pg_read_file('/etc/hostname'))::bigint AS id",
        "pg_read_file() is not a",
    ),
    ("a directory listing", "09/holder", "SELECT pg_ls_dir('.') AS pid", "pg_ls_dir() is not a"),
    ("TABLE of a catalog", "09/holder", "TABLE pg_authid", "pg_authid is not one"),
    ("ALTER SYSTEM", "01/claim", "ALTER SYSTEM SET fsync = off", "ALTER SYSTEM is not one"),
    ("CREATE ROLE", "01/claim", "CREATE ROLE evil SUPERUSER", "CREATE ROLE is not one"),
    ("CREATE DATABASE", "01/claim", "CREATE DATABASE evil", "CREATE DATABASE is not one"),
    ("EXPLAIN ANALYZE", "01/claim", "EXPLAIN ANALYZE SELECT id FROM jobs", "EXPLAIN is not one"),
    ("CALL", "01/claim", "CALL evil()", "CALL is not one"),
    ("an index on a catalog", "08/index", "CREATE INDEX ON pg_catalog.pg_authid (rolname)", "is not one"),
    ("an index in another tablespace", "08/index", "CREATE INDEX ON jobs (run_at) TABLESPACE pg_global", "TABLESPACE"),
    ("an index with an operator class", "08/index", "CREATE INDEX ON jobs (kind text_pattern_ops)", "operator class"),
    ("an unknown placeholder", "01/claim", "SELECT id FROM jobs WHERE id = :victim", ":victim is not a value"),
    ("a placeholder behind a \\r comment", "01/claim", "SELECT id FROM jobs --\r WHERE id = :victim", ":victim"),
]


@pytest.mark.parametrize("what, key, sql, says", REFUSED, ids=[r[0] for r in REFUSED])
def test_hostile_sql_is_refused_and_leaves_the_cluster_as_it_was(scratch, tmp_path, what, key, sql, says):
    marker = tmp_path / "written_by_the_server"
    before_cluster, before_table = fingerprint(scratch), state(scratch)
    verdict = exercises.judge(exercises.exercise(key), sql.format(marker=marker), scratch=scratch)
    assert not verdict.passed, verdict.summary()
    if says is not None:
        assert verdict.refused and says in verdict.headline, verdict.headline
    assert "Traceback" not in verdict.summary()
    assert fingerprint(scratch) == before_cluster
    if key != "08/index":  # the index check seeds its own table
        assert state(scratch) == before_table
    assert not marker.exists()


# Statements the reader lets through (they are queries on jobs), contained by
# the roles and limits: (what, exercise, text, what the verdict says).
CONTAINED = [
    (
        "3,000,000 rows",
        "09/holder",
        "SELECT a.id AS pid FROM jobs a, jobs b, jobs c LIMIT 3000000",
        "over 1,000 rows",
    ),
    (
        "a cross join that runs for ever",
        "09/holder",
        "SELECT count(*)::int AS pid FROM jobs a, jobs b, jobs c, jobs d, jobs e",
        "statement timeout",
    ),
    (
        "an INSERT that would fill the disk",
        "01/claim",
        "INSERT INTO jobs (kind, payload) SELECT a.kind, a.payload FROM jobs a, jobs b, jobs c RETURNING id",
        "statement timeout",  # a change with RETURNING runs to its end before the first row comes back
    ),
    ("a 19,000-character error message", "01/claim", "SELECT '" + "x" * 19_000 + "'::int AS id", "invalid input"),
    ("an index on an operator that is not there", "08/index", "CREATE INDEX ON jobs (run_at) WHERE id === 1", "==="),
]


@pytest.mark.parametrize("what, key, sql, says", CONTAINED, ids=[c[0] for c in CONTAINED])
def test_hostile_sql_that_runs_is_contained(scratch, what, key, sql, says):
    before = fingerprint(scratch)
    verdict = exercises.judge(exercises.exercise(key), sql, scratch=scratch)
    assert not verdict.passed and says in verdict.headline, verdict.headline
    assert len(verdict.headline) <= MAX_TEXT and all(len(e.found) <= MAX_TEXT for e in verdict.evidence)
    assert len(verdict.html()) < 20 * MAX_TEXT
    assert fingerprint(scratch) == before


def test_a_slow_statement_after_a_timeout_attack_still_meets_the_timeout(scratch):
    lift = "UPDATE jobs SET status = 'done' WHERE id = :id AND set_config('statement_timeout', '0', false) <> ''"
    assert exercises.judge(exercises.exercise("05/complete"), lift, scratch=scratch).refused
    slow = "SELECT count(*)::int AS pid FROM jobs a, jobs b, jobs c, jobs d"
    verdict = exercises.judge(exercises.exercise("09/holder"), slow, scratch=scratch)
    assert verdict.refused and "statement timeout" in verdict.headline, verdict.headline


def test_the_watchdog_cancels_and_closes_whatever_the_session_says(scratch):
    with scratch.db.connection() as owner:
        run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": 300})
    endless = read("SELECT count(*) FROM jobs a, jobs b, jobs c, jobs d", ())
    conn = scratch.connect()
    conn.execute("SET statement_timeout = 0")  # a learner holding the DSN lifts the server's limit
    with pytest.raises(Refused, match="deadline"):
        sandbox.execute(conn, endless, {}, seconds=1)
    assert conn.closed


def test_the_role_defaults_are_reset_on_every_check(scratch):
    before = fingerprint(scratch)
    with scratch.connect() as conn:  # a role may change its own defaults: the review's attack
        conn.execute("ALTER ROLE pgq_learner SET search_path = pg_catalog")
        conn.execute("ALTER ROLE pgq_learner SET statement_timeout = 0")
    assert fingerprint(scratch) != before
    fresh = sandbox.open_scratch(LABEL)
    assert fingerprint(fresh) == before
    verdict = exercises.judge(exercises.exercise("05/complete"), exercises.exercise("05/complete").answer_text(), scratch=fresh)
    assert verdict.passed, verdict.summary()


def test_a_learner_session_cannot_end_or_cancel_a_sibling(scratch):
    with scratch.connect() as attacker, scratch.connect() as sibling:
        for call in ("SELECT pg_terminate_backend(%s)", "SELECT pg_cancel_backend(%s)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                attacker.execute(call, [sibling.info.backend_pid])
        assert sibling.execute("SELECT 1").fetchone() == (1,)


def test_the_roles_own_nothing_and_create_nothing(scratch):
    verdict = exercises.judge(exercises.exercise("08/index"), exercises.exercise("08/index").answer_text(), scratch=scratch)
    assert verdict.passed, verdict.summary()
    with scratch.db.connection() as owner:
        for role in ROLES:
            cur = run(owner, "exercise/role_rights", {"role": role})
            rights = dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))
            assert rights == {
                "rolsuper": False,
                "rolcreatedb": False,
                "rolcreaterole": False,
                "rolbypassrls": False,
                "memberships": 0,
                "can_create": False,
                "can_temp": False,
            }, role
    with scratch.connect() as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):  # the learner owns no table
            conn.execute("CREATE INDEX ON jobs (id)")
        assert run(conn, "lab/session_settings").fetchone()[0] == sandbox.ROLE


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("CREATE INDEX ON jobs (id) WHERE status = 'ready'", "run_at is the key"),
        ("CREATE INDEX ON jobs (kind)", "run_at is the key"),
        ("CREATE INDEX ON jobs (id) WHERE status = 'ready'", "no Sort in the claim's plan"),
        ("CREATE INDEX ON jobs (run_at) WHERE status <> 'done'", "your index's size"),
    ],
)
def test_a_wrong_index_fails_for_the_lessons_reason(scratch, sql, reason):
    verdict = exercises.judge(exercises.exercise("08/index"), sql, scratch=scratch)
    assert not verdict.passed and not verdict.refused, verdict.summary()
    assert any(e.what.startswith(reason) for e in verdict.failures), verdict.summary()


ENDLESS_CLAIM = "SELECT count(*)::int AS id FROM jobs a, jobs b, jobs c, jobs d"


def test_stop_ends_a_running_check(pg):
    turn = YourTurn("01/claim", sql=ENDLESS_CLAIM, save=False)
    assert turn.stop_button.disabled
    turn.start()
    assert not turn.stop_button.disabled and turn.check_button.disabled
    time.sleep(1)
    turn.stop_button.click()
    verdict = turn.wait(60)
    assert not verdict.passed and (verdict.stopped or sandbox.STOPPED in verdict.headline), verdict.headline
    assert turn.status.value == "stopped" and turn.stop_button.disabled and not turn.check_button.disabled


def test_one_check_per_exercise_at_a_time(pg):
    first = YourTurn("01/claim", sql=ENDLESS_CLAIM, save=False)
    second = YourTurn("01/claim", sql=ENDLESS_CLAIM, save=False)
    first.start()
    time.sleep(0.5)
    second.start()
    with pytest.raises(Refused, match="already running"):
        second.wait(30)
    first.stop()
    first.wait(60)
    with sandbox.one_check("01/claim"):  # free again once the first check ended
        pass

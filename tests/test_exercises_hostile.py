"""The learner's SQL is hostile input. Every attack a security review found,
and more in the same spirit, is refused by the parse tree or contained by the
roles and limits; after each one the cluster is as it was: its roles and their
defaults, its databases, the files at the top of the data directory, and no
session of the learner's or checker's role left behind.

(This file is exempt from the no-SQL-in-tests rule: its SQL is what a learner
types into "Your turn", the input under test.)"""

import re
import threading
import time

import psycopg
import pytest

from helpers import lessons_fingerprint, on_server, wait_for
from pgq_teach import databases, exercises
from pgq_teach.exercises import learner_sql, sandbox
from pgq_teach.exercises.learner_sql import Refused, read
from pgq_teach.exercises.verdict import MAX_TEXT
from pgq_teach.infra import learner, server
from pgq_teach.statements import run
from pgq_teach.widgets.your_turn import YourTurn

ROLES = [sandbox.ROLE, sandbox.CHECKER_ROLE]
LABEL = "test_hostile"


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


def seeded_scratch(label: str) -> sandbox.Scratch:
    s = sandbox.open_scratch(label)
    with s.db.connection() as owner:
        run(owner, "lab/seed_jobs", {"kind": "send_receipt", "count": 5})
    return s


@pytest.fixture
def scratch(pg):
    yield seeded_scratch(LABEL)
    databases.drop_database(f"scratch_{LABEL}", server=server.get_checker())


@pytest.fixture(scope="module")
def unchanged_scratch(module_server):
    """One scratch database for the attacks that must leave it as it was: each test
    asserts its jobs table and the cluster unchanged after its attack, so the next
    one starts from the same table (and a failure is still that attack's). On the
    module's own server, as the tests that use it fingerprint the cluster (ALONE)."""
    label = f"{LABEL}_unchanged"
    with on_server(module_server):
        made = seeded_scratch(label)
    yield made
    with on_server(module_server):
        databases.drop_database(f"scratch_{label}", server=server.get_checker())


# The tests that fingerprint the whole cluster before and after an attack (roles and their
# settings, databases, the learner role's sessions), or change the learner's and checker's
# roles, which the checks that other tests run at the same time change too: each runs on an
# embedded server of this module's own (tests/conftest.py, alone), set up before its scratch.
ALONE = pytest.mark.usefixtures("alone")


def fingerprint(s, wait_s: float = 15) -> tuple:
    """The cluster's fingerprint, once no session of the checker's roles is left
    (a closed session takes a moment to leave pg_stat_activity)."""
    deadline = time.monotonic() + wait_s
    while True:
        with s.db.connection() as owner:
            row = run(owner, "exercise/cluster_fingerprint", {"roles": ROLES}).fetchone()
        if row[-1] == 0 or time.monotonic() > deadline:
            return tuple(row)
        time.sleep(0.02)


def state(s):
    with s.db.connection() as owner:
        return run(owner, "exercise/scratch_state").fetchone()


GROWTH = ("grows past", "WITH RECURSIVE", "ARRAY(SELECT", "needs a LIMIT")


def chain(link: str, links: int = 26) -> str:
    """A chain of WITH queries, each link computing k from the last one's k."""
    parts = [f"a{i + 1} AS (SELECT {link} AS k FROM a{i})" for i in range(links)]
    return f"WITH a0 AS (SELECT kind AS k FROM jobs LIMIT 1), {', '.join(parts)} SELECT length(k::text) AS pid FROM a{links}"  # noqa: E501 (the input under test, kept on one line)


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
    (
        "a \\r-ended comment hiding SET",
        "01/claim",
        "--\rSET statement_timeout = 0 /*\nSELECT */",
        "SET is not one",
    ),
    (
        "a \\r-ended comment hiding DO",
        "01/claim",
        "--\rDO $$ BEGIN NULL; END $$ /*\nSELECT */",
        "DO is not one",
    ),
    (
        "an IMMUTABLE function that writes a file as the superuser",
        "08/index",
        "CREATE FUNCTION ix(bigint) RETURNS bigint IMMUTABLE LANGUAGE sql AS "
        "$$ COPY (SELECT 1) TO PROGRAM 'touch {marker}'; SELECT $1 $$",
        "CREATE FUNCTION is not one",
    ),
    (
        "CREATE STATISTICS on that function",
        "08/index",
        "CREATE STATISTICS st ON (ix(id)) FROM jobs",
        "is not one",
    ),
    (
        "a trigger on the table",
        "08/index",
        "CREATE TRIGGER t BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION ix()",
        "CREATE TRIGGER is not one",
    ),
    (
        "an index expression calling a function",
        "08/index",
        "CREATE INDEX ON jobs ((ix(id)))",
        "ix() is not a",
    ),
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
        "UPDATE jobs SET status = 'done' WHERE id = :id AND set_config('statement_timeout', '0', false) <> ''",  # noqa: E501 (the input under test, kept on one line)
        "set_config() is not a",
    ),
    (
        "set_config on lock_timeout",
        "05/complete",
        "UPDATE jobs SET status = 'done' WHERE id = :id AND set_config('lock_timeout', '0', false) <> ''",
        "set_config() is not a",
    ),
    ("a sleep", "01/claim", "SELECT 1 AS id FROM pg_sleep(600)", "pg_sleep() is not a"),
    (
        "ALTER ROLE",
        "09/holder",
        "ALTER ROLE pgq_learner SET search_path = pg_catalog",
        "ALTER ROLE is not one",
    ),
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
    (
        "deep nesting",
        "01/claim",
        "SELECT " + "(SELECT " * 300 + "1" + ")" * 300 + " AS id",
        "nested too deeply",
    ),
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
    (
        "dblink",
        "01/claim",
        "SELECT id FROM dblink('dbname=postgres', 'SELECT 1') AS t(id int)",
        "dblink() is",
    ),
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
    (
        "an index in another tablespace",
        "08/index",
        "CREATE INDEX ON jobs (run_at) TABLESPACE pg_global",
        "TABLESPACE",
    ),
    (
        "an index with an operator class",
        "08/index",
        "CREATE INDEX ON jobs (kind text_pattern_ops)",
        "operator class",
    ),
    (
        "an unknown placeholder",
        "01/claim",
        "SELECT id FROM jobs WHERE id = :victim",
        ":victim is not a value",
    ),
    # Values grown without a forbidden function: each link of a chain of WITH
    # queries uses the last one's column twice. The planner inlines the chain into
    # one expression of 2^26 nodes before anything can cancel it: before this was
    # refused, one such statement grew a backend past 15 GB and the OOM killer's
    # SIGKILL restarted the whole cluster, every learner's sessions with it.
    ("a chain of WITH queries doubling a text", "09/holder", chain("k || k"), "grows past"),
    (
        "a chain of WITH queries multiplying by concat",
        "09/holder",
        chain("concat(k, k, k, k, k, k, k, k, k, k)", 8),
        "grows past",
    ),
    ("a chain of WITH queries doubling a jsonb", "09/holder", chain("jsonb_build_array(k, k)"), "grows past"),
    ("a chain of WITH queries doubling an array", "09/holder", chain("ARRAY[k] || ARRAY[k]"), "grows past"),
    (
        "a chain named by column aliases",
        "09/holder",
        "WITH a0(k) AS (SELECT kind FROM jobs LIMIT 1), "
        + ", ".join(f"a{i + 1}(k) AS (SELECT k || k FROM a{i})" for i in range(26))
        + " SELECT length(k) AS pid FROM a26",
        "grows past",
    ),
    (
        "a chain of whole rows",
        "09/holder",
        "WITH a0 AS (SELECT kind FROM jobs LIMIT 1), "
        + ", ".join(
            f"a{i + 1} AS (SELECT to_jsonb(a{i}) AS j, to_jsonb(a{i}) AS k FROM a{i})" for i in range(26)
        )
        + " SELECT length(j::text) AS pid FROM a26",
        "grows past",
    ),
    (
        "a long literal used again and again",
        "09/holder",
        "WITH t AS (SELECT '" + "x" * 19_000 + "' AS k) SELECT length(k || k || k) AS pid FROM t",
        "grows past",
    ),
    (
        "nested FROM subqueries doubling a text",
        "09/holder",
        "SELECT length(k) AS pid FROM "
        + "(SELECT k || k AS k FROM " * 26
        + "(SELECT kind AS k FROM jobs) AS s"
        + ") AS s" * 26,
        "grows past",
    ),
    (
        "a recursive WITH doubling a text",
        "09/holder",
        "WITH RECURSIVE r(s, n) AS (SELECT 'x'::text, 0 UNION ALL SELECT s || s, n + 1 FROM r WHERE n < 29) "
        "SELECT length(s) AS pid FROM r ORDER BY n DESC LIMIT 1",
        "WITH RECURSIVE",
    ),
    (
        "ARRAY(SELECT ...) gathering a cross join into one value",
        "09/holder",
        "SELECT ARRAY(SELECT a.kind || b.kind FROM jobs a, jobs b, jobs c, jobs d, jobs e, jobs f) AS pid",
        "ARRAY(SELECT",
    ),
    (
        "ARRAY(SELECT ...) with no LIMIT where the cleanup may use one",
        "10/cleanup",
        "DELETE FROM jobs WHERE id = ANY(ARRAY(SELECT a.id FROM jobs a, jobs b, jobs c, jobs d, jobs e))",
        "needs a LIMIT",
    ),
    (
        "ARRAY(SELECT ...) with a LIMIT far past a batch",
        "10/cleanup",
        "DELETE FROM jobs WHERE id = ANY(ARRAY(SELECT a.id FROM jobs a, jobs b, jobs c LIMIT 100000000))",
        "needs a LIMIT",
    ),
    ("a 9,000-deep chain of +", "01/claim", "SELECT " + "1+" * 9_000 + "1 AS id", "nested too deeply"),
    (
        "an index with storage options",
        "08/index",
        "CREATE INDEX ON jobs (run_at) WITH (fillfactor = 10)",
        "DefElem",  # refused by node, before the index check names it
    ),
    ("a hash index", "08/index", "CREATE INDEX ON jobs USING hash (run_at)", "B-tree"),
    ("lpad to a billion", "09/holder", "SELECT length(lpad('x', 1000000000)) AS pid", "lpad() is not a"),
    ("repeat", "09/holder", "SELECT length(repeat('x', 1000000000)) AS pid", "repeat() is not a"),
    (
        "array_fill",
        "09/holder",
        "SELECT cardinality(array_fill(1, ARRAY[100000000])) AS pid",
        "array_fill() is not a",
    ),
    (
        "jsonb_agg",
        "09/holder",
        "SELECT length(jsonb_agg(a)::text) AS pid FROM jobs a, jobs b, jobs c",
        "jsonb_agg() is not a",
    ),
    # SQL that runs SQL, reached as a function, a table, a cast or a clause.
    (
        "query_to_xml",
        "09/holder",
        "SELECT length(query_to_xml('SELECT 1', true, true, '')::text) AS pid",
        "query_to_xml() is",
    ),
    (
        "query_to_xml_and_xmlschema",
        "09/holder",
        "SELECT length(query_to_xml_and_xmlschema('SELECT 1', true, true, '')::text) AS pid",
        "query_to_xml_and_xmlschema() is",
    ),
    (
        "cursor_to_xml",
        "09/holder",
        "SELECT length(cursor_to_xml('c', 1, true, true, '')::text) AS pid",
        "cursor_to_xml() is",
    ),
    ("an XML constructor", "09/holder", "SELECT length(xmlelement(name a)::text) AS pid", "XmlExpr"),
    (
        "a function in ROWS FROM",
        "09/holder",
        "SELECT a::int AS pid FROM ROWS FROM (unnest(ARRAY[1]), pg_sleep(600)) AS t(a, b)",
        "pg_sleep() is not a",
    ),
    (
        "TABLESAMPLE",
        "09/holder",
        "SELECT id::int AS pid FROM jobs TABLESAMPLE SYSTEM (100)",
        "RangeTableSample",
    ),
    ("pg_settings", "09/holder", "SELECT 1 AS pid FROM pg_settings", "pg_settings is not one"),
    ("pg_file_settings", "09/holder", "SELECT 1 AS pid FROM pg_file_settings", "pg_file_settings is not one"),
    (
        "pg_hba_file_rules",
        "09/holder",
        "SELECT 1 AS pid FROM pg_hba_file_rules",
        "pg_hba_file_rules is not one",
    ),
    (
        "pg_shadow",
        "09/holder",
        "SELECT 1 AS pid FROM pg_catalog.pg_shadow",
        "pg_catalog.pg_shadow is not one",
    ),
    (
        "pg_authid in a subquery",
        "09/holder",
        "SELECT (SELECT count(*) FROM pg_authid)::int AS pid",
        "pg_authid is not one",
    ),
    ("the course's sequence", "01/claim", "SELECT nextval('jobs_id_seq') AS id", "nextval() is not a"),
    (
        "a transaction advisory lock",
        "01/claim",
        "SELECT id FROM jobs WHERE pg_advisory_xact_lock(1) IS NULL",
        "pg_advisory_xact_lock() is",
    ),
    # Where pglast and the server could read the text differently.
    (
        "U& with UESCAPE naming pg_sleep",
        "09/holder",
        "SELECT 1 AS pid WHERE U&\"!0070g_sleep\" UESCAPE '!' (600) IS NULL",
        "pg_sleep() is not a",
    ),
    ("psql's \\;", "01/claim", "SELECT id FROM jobs \\; DROP TABLE jobs", "could not read it"),
    ("a placeholder as a table", "01/claim", "SELECT id FROM :batch", "could not read it"),
    ('psql\'s :"name" identifier', "01/claim", 'SELECT id FROM jobs AS :"batch"', "could not read it"),
    (
        "a placeholder behind a \\r comment",
        "01/claim",
        "SELECT id FROM jobs --\r WHERE id = :victim",
        ":victim",
    ),
    # M1: a WITH query named after a catalog. Its own body, a DML target and a query
    # outside its scope never see it, so each of these names the catalog itself.
    (
        "a WITH query named after the catalog it reads",
        "09/holder",
        "WITH pg_database AS (SELECT * FROM pg_database) SELECT datname AS pid FROM pg_database",
        "pg_database is not one",
    ),
    (
        "a WITH query named after pg_settings",
        "01/claim",
        "WITH pg_settings AS (SELECT name, setting FROM pg_settings) SELECT setting::int AS id FROM pg_settings",  # noqa: E501 (the input under test, kept on one line)
        "pg_settings is not one",
    ),
    (
        "a WITH query named jobs over pg_authid",
        "01/claim",
        "WITH jobs AS (SELECT oid AS id FROM pg_authid) SELECT id FROM jobs",
        "pg_authid is not one",
    ),
    (
        "a WITH query read before it is defined",
        "09/holder",
        "WITH a AS (SELECT * FROM pg_locks), pg_locks AS (SELECT 1 AS pid) SELECT pid FROM a",
        "pg_locks is not one",
    ),
    (
        "a WITH query read outside its subquery",
        "09/holder",
        "SELECT pid FROM (WITH pg_stat_statements AS (SELECT 1 AS pid) SELECT pid FROM pg_stat_statements) AS t, pg_stat_statements",  # noqa: E501 (the input under test, kept on one line)
        "pg_stat_statements is not one",
    ),
    (
        "UPDATE of a catalog shadowed by a WITH query",
        "05/complete",
        "WITH pg_authid AS (SELECT 1 AS rolsuper) UPDATE pg_authid SET rolsuper = true WHERE :id IS NOT NULL",
        "pg_authid is not one",
    ),
    (
        "DELETE from a WITH query's name",
        "10/cleanup",
        "WITH batch AS (SELECT id FROM jobs LIMIT :batch) DELETE FROM batch",
        "batch is not one",
    ),
    # M2: pg_notify only once per job the statement enqueued.
    (
        "pg_notify per row of a join of the enqueued job",
        "07/notify",
        "WITH job AS (INSERT INTO jobs (kind, payload) VALUES (:'kind', :'payload') RETURNING id) "
        "SELECT pg_notify('jobs_ready', a.id::text) FROM job, jobs a, jobs b",
        "pg_notify may run only once",
    ),
    (
        "pg_notify per row of jobs",
        "07/notify",
        "SELECT pg_notify('jobs_ready', a.kind || b.kind) FROM jobs a, jobs b",
        "pg_notify may run only once",
    ),
    (
        "pg_notify over an INSERT of many rows",
        "07/notify",
        "WITH job AS (INSERT INTO jobs (kind, payload) SELECT a.kind, a.payload FROM jobs a, jobs b RETURNING id) "  # noqa: E501 (the input under test, kept on one line)
        "SELECT pg_notify('jobs_ready', id::text) FROM job",
        "pg_notify may run only once",
    ),
    (
        "pg_notify over unnest",
        "07/notify",
        "WITH job AS (INSERT INTO jobs (kind, payload) VALUES (:'kind', :'payload') RETURNING id) "
        "SELECT pg_notify('jobs_ready', unnest(ARRAY[id::text, id::text, id::text])) FROM job",
        "pg_notify may run only once",
    ),
    (
        "pg_notify in the RETURNING of an INSERT of many rows",
        "07/notify",
        "INSERT INTO jobs (kind, payload) SELECT a.kind, a.payload FROM jobs a, jobs b "
        "RETURNING id, pg_notify('jobs_ready', id::text)",
        "pg_notify may run only once",
    ),
    (
        "pg_notify in an INSERT's WHERE",
        "07/notify",
        "INSERT INTO jobs (kind, payload) SELECT kind, payload FROM jobs WHERE pg_notify('jobs_ready', kind) IS NULL",  # noqa: E501 (the input under test, kept on one line)
        "pg_notify may run only once",
    ),
    (
        "pg_notify in a subquery of the enqueued job's SELECT",
        "07/notify",
        "WITH job AS (INSERT INTO jobs (kind, payload) VALUES (:'kind', :'payload') RETURNING id) "
        "SELECT id, (SELECT count(pg_notify('jobs_ready', a.kind)) FROM jobs a, jobs b) FROM job",
        "pg_notify may run only once",
    ),
]


@ALONE
@pytest.mark.parametrize("what, key, sql, says", REFUSED, ids=[r[0] for r in REFUSED])
def test_hostile_sql_is_refused_and_leaves_the_cluster_as_it_was(request, tmp_path, what, key, sql, says):
    # A scratch of its own where the check may change the table (the index check seeds its
    # own, a statement not refused runs the whole check); else the one this file shares.
    fresh = key == "08/index" or says is None
    scratch = request.getfixturevalue("scratch" if fresh else "unchanged_scratch")
    marker = tmp_path / "written_by_the_server"
    if (
        says in GROWTH
    ):  # never handed to a server should the reader let it through: it could take the cluster down
        ex = exercises.exercise(key)
        with pytest.raises(Refused, match=re.escape(says)):
            read(sql, ex.params, ex.words, exercise=key)
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
    (
        "a 19,000-character error message",
        "01/claim",
        "SELECT '" + "x" * 19_000 + "'::int AS id",
        "invalid input",
    ),
    (
        "an index on an operator that is not there",
        "08/index",
        "CREATE INDEX ON jobs (run_at) WHERE id === 1",
        "===",
    ),
    (
        "1,000 rows of a 19,000-character text",
        "09/holder",
        "SELECT '" + "x" * 19_000 + "' || a.id AS pid FROM jobs a, jobs b, jobs c, jobs d",
        "characters",
    ),
    (
        "a nested comment hiding a statement",
        "01/claim",
        "SELECT id FROM jobs /* /* */ ; DROP TABLE jobs; /* */ */ LIMIT 0",
        "",
    ),
    ("a cast naming a dangerous function", "09/holder", "SELECT 'pg_sleep'::regproc::oid::int AS pid", ""),
    (
        "a regular expression that explodes when compiled",
        "09/holder",
        "SELECT 1 AS pid WHERE 'a' ~ '((((a{1,200}){1,200}){1,200}){1,200})'",
        "too complex",
    ),
    (
        "a 300-table join for the planner",
        "09/holder",
        "SELECT count(*)::int AS pid FROM "
        + ", ".join(f"jobs a{i}" for i in range(300))
        + " WHERE "
        + " AND ".join(f"a{i}.id = a{i + 1}.id" for i in range(299)),
        "",
    ),
    ("psql's variable syntax inside a string", "09/holder", "SELECT ':pid' AS pid", ""),
    (
        "a placeholder inside a dollar quote",
        "05/complete",
        "UPDATE jobs SET status = $$:id$$ WHERE id = :id",
        "",
    ),
    ("a 120,000-digit numeric", "09/holder", "SELECT length((2::numeric ^ 400000)::text) AS pid", ""),
    (
        "MERGE ... RETURNING a cross join's rows",
        "01/claim",
        "MERGE INTO jobs USING (SELECT a.kind, a.payload FROM jobs a, jobs b, jobs c, jobs d, jobs e, jobs f) AS s "  # noqa: E501 (the input under test, kept on one line)
        "ON false WHEN NOT MATCHED THEN INSERT (kind, payload) VALUES (s.kind, s.payload) RETURNING jobs.id",
        "",
    ),
    (
        "FOR UPDATE on pg_stat_activity",
        "09/holder",
        "SELECT pid FROM pg_stat_activity FOR UPDATE",
        "permission denied",  # the server refuses it: the view is not the role's to lock
    ),
    (
        "an E'' string escaping its own quote",
        "01/claim",
        "SELECT id FROM jobs WHERE kind = E'\\' ; DROP TABLE jobs; --'",
        "",  # one string to pglast and to the server alike: no DROP runs
    ),
]


@ALONE
@pytest.mark.parametrize("what, key, sql, says", CONTAINED, ids=[c[0] for c in CONTAINED])
def test_hostile_sql_that_runs_is_contained(scratch, what, key, sql, says):
    before = fingerprint(scratch)
    verdict = exercises.judge(exercises.exercise(key), sql, scratch=scratch)
    assert not verdict.passed, verdict.headline
    assert says in verdict.headline, verdict.headline
    assert len(verdict.headline) <= MAX_TEXT and all(len(e.found) <= MAX_TEXT for e in verdict.evidence)
    assert len(verdict.html()) < 20 * MAX_TEXT
    assert fingerprint(scratch) == before
    state(scratch)  # the jobs table is still there


def test_a_slow_statement_after_a_timeout_attack_still_meets_the_timeout(scratch):
    lift = (
        "UPDATE jobs SET status = 'done' WHERE id = :id AND set_config('statement_timeout', '0', false) <> ''"
    )
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


@ALONE
def test_the_role_defaults_are_reset_on_every_check(scratch):
    before = fingerprint(scratch)
    with scratch.connect() as conn:  # a role may change its own defaults: the review's attack
        conn.execute("ALTER ROLE pgq_learner SET search_path = pg_catalog")
        conn.execute("ALTER ROLE pgq_learner SET statement_timeout = 0")
    assert fingerprint(scratch) != before
    fresh = sandbox.open_scratch(LABEL)
    assert fingerprint(fresh) == before
    verdict = exercises.judge(
        exercises.exercise("05/complete"), exercises.exercise("05/complete").answer_text(), scratch=fresh
    )
    assert verdict.passed, verdict.summary()


def test_a_learner_session_cannot_end_or_cancel_a_sibling(scratch):
    with scratch.connect() as attacker, scratch.connect() as sibling:
        for call in ("SELECT pg_terminate_backend(%s)", "SELECT pg_cancel_backend(%s)"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                attacker.execute(call, [sibling.info.backend_pid])
        assert sibling.execute("SELECT 1").fetchone() == (1,)


@ALONE
def test_the_fingerprint_sees_a_database_made_beside_the_scratch(scratch):
    """The fingerprint is not blind on the server the attacks run on (the checker): a database made
    there changes it, and once dropped the cluster reads as before (a role's default
    changing it is shown above)."""
    before = fingerprint(scratch)
    databases.open_database(f"{LABEL}_beside", schema=False, server=scratch.db.server)
    try:
        assert fingerprint(scratch) != before
    finally:
        databases.drop_database(f"{LABEL}_beside", server=scratch.db.server)
    assert fingerprint(scratch) == before


@ALONE
def test_the_roles_own_nothing_and_create_nothing(scratch):
    verdict = exercises.judge(
        exercises.exercise("08/index"), exercises.exercise("08/index").answer_text(), scratch=scratch
    )
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


def open_sessions(key: str) -> set:
    """The learner sessions the checks of exercise `key` hold open in this process."""
    return {c for c in list(sandbox.LIVE.get(sandbox.label_of(key), ())) if not c.closed}


def wait_for_a_new_session(key: str, before: set) -> None:
    """Wait until a check of `key` has opened a session (so it holds the exercise and runs)."""
    assert wait_for(lambda: open_sessions(key) - before, 30), f"no check of {key} began"


def test_stop_ends_a_running_check(pg):
    turn = YourTurn("01/claim", sql=ENDLESS_CLAIM, save=False)
    assert turn.stop_button.disabled
    before = open_sessions("01/claim")
    turn.start()
    assert not turn.stop_button.disabled and turn.check_button.disabled
    wait_for_a_new_session("01/claim", before)
    turn.stop_button.click()
    verdict = turn.wait(60)
    assert not verdict.passed and (verdict.stopped or sandbox.STOPPED in verdict.headline), verdict.headline
    assert turn.status.value == "stopped" and turn.stop_button.disabled and not turn.check_button.disabled


def test_one_check_per_exercise_at_a_time(pg):
    first = YourTurn("01/claim", sql=ENDLESS_CLAIM, save=False)
    second = YourTurn("01/claim", sql=ENDLESS_CLAIM, save=False)
    before = open_sessions("01/claim")
    first.start()
    wait_for_a_new_session("01/claim", before)
    second.start()
    busy = second.wait(30)
    assert busy.refused and "already running" in busy.headline, busy.headline
    first.stop()
    first.wait(60)
    with sandbox.one_check("01/claim"):  # free again once the first check ended
        pass


def test_exercises_check_holds_the_one_check_too(pg):
    """Not only the widget: two calls of exercises.check in one process (two
    notebooks' threads, say) never run one exercise's check at once, and the
    refused one is not saved as a try."""
    runs = {}
    first = threading.Thread(
        target=lambda: runs.setdefault("first", exercises.check("01/claim", ENDLESS_CLAIM))
    )
    before = open_sessions("01/claim")
    first.start()
    wait_for_a_new_session("01/claim", before)
    second = exercises.check("01/claim", exercises.exercise("01/claim").answer_text())
    assert second.refused and "already running" in second.headline, second.headline
    sandbox.stop_checks("01/claim")
    first.join(60)
    assert runs["first"].stopped and runs["first"].headline == sandbox.STOPPED, runs["first"].headline
    assert "01/claim" not in learner.load("progress")  # neither the stopped nor the refused check is a try


def test_stop_that_lands_on_the_checkers_own_statement_is_still_a_stop(pg):
    """Stop cancels whatever the learner's sessions run, the checker's own
    statements included; the cancel then surfaces as a timeout or an error, and
    the verdict must still say Stop, and not be saved as a failed try."""
    runs = {}
    answer = exercises.exercise("03/batch_claim").answer_text()
    worker = threading.Thread(target=lambda: runs.setdefault("v", exercises.check("03/batch_claim", answer)))
    worker.start()
    deadline = time.monotonic() + 30
    while not sandbox.LIVE.get("03_batch_claim") and time.monotonic() < deadline:
        time.sleep(0.01)
    sandbox.stop_checks("03/batch_claim")
    worker.join(60)
    assert runs["v"].stopped and not runs["v"].passed, runs["v"].summary()
    assert "03/batch_claim" not in learner.load("progress")


def test_a_stop_pressed_with_no_check_running_does_not_stop_the_next(pg):
    sandbox.stop_checks("05/complete")
    verdict = exercises.check("05/complete", exercises.exercise("05/complete").answer_text())
    assert verdict.passed and not verdict.stopped, verdict.summary()


def test_the_learner_reads_strings_as_pglast_does_whatever_the_database_says(scratch):
    """pglast reads strings with standard_conforming_strings on. A server whose
    default is off would read `'x\\'` as an open string, so text that pglast
    reads as two strings would be, to the server, a string, then code it never
    checked (here a pg_notify). The learner's sessions pin it on."""
    with scratch.db.connection() as owner:
        run(owner, "exercise/old_string_syntax", idents={"database": scratch.db.name})
    hidden = "SELECT 'x\\', ' AS a, pg_notify($$leak$$, $$x$$)::text AS pid --' AS pid"
    with scratch.db.connection() as listener:
        run(listener, "lab/listen_channel", idents={"channel": "leak"})
        verdict = exercises.judge(exercises.exercise("09/holder"), hidden, scratch=scratch)
        assert not verdict.passed, verdict.summary()
        assert list(listener.notifies(timeout=1, stop_after=1)) == []


def test_the_roles_cannot_lift_their_disk_limit(scratch):
    with scratch.connect() as conn:
        assert conn.execute("SHOW temp_file_limit").fetchone() == (sandbox.TEMP_FILE_LIMIT,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SET temp_file_limit = -1")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("ALTER ROLE pgq_learner SET temp_file_limit = -1")


@pytest.mark.parametrize("key", [k for k, e in exercises.EXERCISES.items() if not e.form])
def test_every_model_answer_and_seeded_attempt_stays_far_below_the_growth_limit(key):
    ex = exercises.exercise(key)
    for text in (ex.answer_text(), ex.attempt_text()):
        grown = learner_sql.expansion(read(text, ex.params, ex.words, exercise=key).tree)
        assert grown * 10 < learner_sql.MAX_EXPANSION, (key, grown)


def test_role_setups_run_at_once_take_turns(pg):
    """Roles are cluster-wide: two checks setting them up at once (two pytest workers here; two
    notebooks, or a notebook and the CLI, for a learner) would update the same pg_authid rows,
    and one failed with "tuple concurrently updated" before exercise/learner_role.sql locked
    pg_authid (an advisory lock would not do: it belongs to one database, and each check has a
    scratch database of its own). Four sessions, each on its own scratch database, run it together."""
    labels = [f"{LABEL}_turns_{n}" for n in range(4)]
    scratches = [sandbox.open_scratch(label) for label in labels]
    start, errors = threading.Barrier(len(labels)), []

    def set_up(db) -> None:
        try:
            with db.connection() as conn:
                start.wait(timeout=30)
                for _ in range(15):
                    sandbox.set_up_roles(conn, db.name)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    try:
        threads = [threading.Thread(target=set_up, args=(s.db,)) for s in scratches]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not any(t.is_alive() for t in threads)
        assert errors == []
    finally:
        for label in labels:
            databases.drop_database(f"scratch_{label}", server=server.get_checker())


def doubling_chain(links: int, materialized: str = "NOT MATERIALIZED", value: str = "kind") -> str:
    """C1: a chain of WITH queries, each reading the last one twice. Inlined, the planner
    copies each link's subtree twice over, 2^links copies, before it first checks for a
    cancel: 388 MB at 15 links, the cluster's memory gone at about 21."""
    links_sql = ", ".join(
        f"a{i + 1} AS {materialized} (SELECT x.k FROM a{i} AS x, a{i} AS y)" for i in range(links)
    )
    return f"WITH a0 AS {materialized} (SELECT {value} AS k FROM jobs), {links_sql} SELECT length(k::text) AS id FROM a{links}"  # noqa: E501 (the input under test, kept on one line)


@pytest.fixture
def no_server(monkeypatch):
    """Any check that would open a scratch database fails the test: what the reader
    refuses must never reach a server, not even its parse analysis."""

    def reached(*args, **kwargs):
        raise AssertionError("the learner's SQL reached a server")

    monkeypatch.setattr(exercises, "open_scratch", reached)


# (what, exercise, the learner's text, what the refusal says): refused by the reader alone.
READER_ONLY = [
    ("C1: 25 links NOT MATERIALIZED", "01/claim", doubling_chain(25), "NOT MATERIALIZED"),
    (
        "C1: 25 links NOT MATERIALIZED, a costly constant in each copy",
        "01/claim",
        doubling_chain(25, value="(2::numeric ^ 400000)"),
        "NOT MATERIALIZED",
    ),
    (
        "C1: 25 links as plain WITH queries",
        "01/claim",
        doubling_chain(25, ""),
        "reads tables over 1,000 times",
    ),
    (
        "C1: 25 links read twice through subqueries",
        "09/holder",
        "WITH a0 AS (SELECT pid FROM pg_stat_activity), "
        + ", ".join(
            f"a{i + 1} AS (SELECT pid FROM a{i} WHERE pid IN (SELECT pid FROM a{i}))" for i in range(25)
        )
        + " SELECT pid FROM a25",
        "reads tables over 1,000 times",
    ),
    (
        "C2: the chain named pg_authid, then UPDATE pg_authid",
        "05/complete",
        doubling_chain(20).replace("a20", "pg_authid").split(" SELECT length")[0]
        + " UPDATE pg_authid SET rolsuper = true WHERE :id IS NOT NULL",
        "pg_authid is not one",
    ),
    (
        "C2: the chain inside a WITH query named jobs, then UPDATE pg_authid",
        "05/complete",
        "WITH jobs AS (SELECT 1 AS id) UPDATE pg_catalog.pg_authid SET rolsuper = true WHERE :id IS NOT NULL",
        "pg_catalog.pg_authid is not one",
    ),
    # ARRAY(SELECT ...) over a WITH query is bounded only by that query's own LIMIT.
    (
        "ARRAY over a WITH query with no LIMIT",
        "10/cleanup",
        "WITH batch AS (SELECT id FROM jobs WHERE id > :after) DELETE FROM jobs WHERE id = ANY(ARRAY(SELECT id FROM batch))",  # noqa: E501 (the input under test, kept on one line)
        "needs a LIMIT",
    ),
    (
        "ARRAY over a capped WITH query, each row multiplied",
        "10/cleanup",
        "WITH batch AS (SELECT id FROM jobs LIMIT :batch) DELETE FROM jobs WHERE id = ANY(ARRAY(SELECT unnest(ARRAY[id, id, id]) FROM batch)) AND id > :after",  # noqa: E501 (the input under test, kept on one line)
        "needs a LIMIT",
    ),
    (
        "ARRAY over a capped WITH query joined to jobs",
        "10/cleanup",
        "WITH batch AS (SELECT id FROM jobs LIMIT :batch) DELETE FROM jobs WHERE id = ANY(ARRAY(SELECT a.id FROM batch, jobs a)) AND id > :after",  # noqa: E501 (the input under test, kept on one line)
        "needs a LIMIT",
    ),
    ("a lone surrogate", "01/claim", "SELECT '\ud800' AS id", "not valid UTF-8"),
    ("a lone surrogate in a name", "09/holder", 'SELECT 1 AS "\udfff"', "not valid UTF-8"),
]


@pytest.mark.parametrize("what, key, sql, says", READER_ONLY, ids=[r[0] for r in READER_ONLY])
def test_the_reader_refuses_it_before_any_server_sees_it(no_server, what, key, sql, says):
    ex = exercises.exercise(key)
    with pytest.raises(Refused, match=re.escape(says)):
        read(sql, ex.params, ex.words, exercise=key)
    verdict = exercises.check(key, sql)  # saved: a lone surrogate is kept as the learner typed it
    assert verdict.refused and says in verdict.headline and "\n" not in verdict.headline, verdict.headline
    assert exercises.entries()[key].latest.sql == sql


def test_the_reader_reads_a_chain_in_time_linear_in_its_length(monkeypatch):
    """expansion() once went round the whole statement once per WITH query it held
    (1.3 s at the 20,000-character cap): the reader now reads each expression once."""
    visits = []
    expr = learner_sql.Reading.expr

    def counted(self, node, level):
        visits.append(1)
        return expr(self, node, level)

    monkeypatch.setattr(learner_sql.Reading, "expr", counted)

    def visits_for(links: int) -> int:
        visits.clear()
        text = "WITH a0 AS (SELECT kind AS k FROM jobs), " + ", ".join(
            f"a{i + 1} AS (SELECT k || k AS k FROM a{i})" for i in range(links)
        )
        learner_sql.Reading(learner_sql.pglast.parse_sql(text + f" SELECT k FROM a{links}")[0].stmt)
        return len(visits)

    assert visits_for(400) <= 2.1 * visits_for(200)


# H1: each run of a claim multiplies one job's kind by 16 (8 bytes to 128 MB in six runs), and
# a check runs the claim hundreds of times. Under SKIP LOCKED each worker grows a row of its own.
GROWING_CLAIM = (
    f"UPDATE jobs SET kind = {' || '.join(['kind'] * 16)} "
    "WHERE id = (SELECT id FROM jobs ORDER BY id DESC LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"
)
# How a run of it may end at the course's own limits: the size read after a write, the
# checker's own "out of memory" (its address-space limit) once a value passes what a backend
# may hold, or a session kept waiting behind a worker still copying a value that big.
STOPPED = ("scratch database grew past", "out of memory", "waited over", "statement timeout", "restarted")


@ALONE
@pytest.mark.parametrize("limit_mb", [None, 8], ids=["the course's limits", "the size limit at 8 MB"])
def test_a_claim_that_grows_its_table_every_run_is_stopped_and_reaches_no_lesson(monkeypatch, limit_mb):
    """The reader bounds one run's growth only. With the size limit at 8 MB the size read
    after each write must be what stops the check (a value reaches 8 MB at the fifth run and
    128 MB at the sixth), so a size check that missed the growth between runs fails here."""
    if limit_mb is not None:
        monkeypatch.setattr(sandbox, "MAX_SCRATCH_BYTES", limit_mb * 2**20)
    ex = exercises.exercise("01/claim")
    read(GROWING_CLAIM, ex.params, ex.words, exercise="01/claim")  # the reader lets each run through
    server.get_checker()  # started before the fingerprint: it is no part of the lessons'
    before = lessons_fingerprint()
    verdict = exercises.check("01/claim", GROWING_CLAIM, save=False)
    assert not verdict.passed and "Traceback" not in verdict.summary(), verdict.summary()
    if limit_mb is None:
        assert any(part in verdict.headline for part in STOPPED), verdict.headline
    else:
        assert verdict.refused and f"grew past {limit_mb} MB" in verdict.headline, verdict.headline
        right = exercises.check("01/claim", ex.answer_text(), save=False)  # the limit is the growth's,
        assert right.passed, right.summary()  # not what the check's own seeding takes
    assert lessons_fingerprint() == before  # postmaster start time included: it never restarted
    after = exercises.check("05/complete", exercises.exercise("05/complete").answer_text(), save=False)
    assert after.passed, after.summary()

"""The checker: the learner's "Your turn" SQL runs only on an embedded PostgreSQL 18 of its
own, under an address-space limit, and a statement that will not stop is ended by killing
that server, which comes back afresh from its template. After each hostile check here the
lessons' server reads exactly as before (roles, settings, databases, sessions, locks, and
its postmaster's start time: it never restarted), and the next exercise's model answer passes.

Each test runs on this module's own server (`alone`), so its checker is this module's too:
a kill here ends no other test's check.

(This file is exempt from the no-SQL-in-tests rule, as tests/test_exercises_hostile.py is:
its SQL is what a learner types into "Your turn", the input under test.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psycopg
import pytest

from helpers import lessons_fingerprint
from pgq_teach import exercises
from pgq_teach.exercises import learner_sql, sandbox
from pgq_teach.infra import embedded, server
from pgq_teach.statements import run

ALONE = pytest.mark.usefixtures("alone")
NEXT = "05/complete"  # the exercise whose model answer must pass after each attack


@pytest.fixture(autouse=True)
def learner_home(tmp_path, monkeypatch):
    monkeypatch.setenv("PGQ_HOME", str(tmp_path))


def on_the_checker(conn_dsn: str, name: str) -> bool:
    with psycopg.connect(conn_dsn, autocommit=True, connect_timeout=5) as conn:
        return bool(run(conn, "admin/database_exists", {"name": name}).fetchone())


@ALONE
def test_the_learners_sql_runs_on_the_checker_and_the_verdict_says_so():
    lessons = server.get_server()
    ex = exercises.exercise(NEXT)
    verdict = exercises.check(NEXT, ex.answer_text(), save=False)
    assert verdict.passed, verdict.summary()
    checker = server.get_checker()
    assert checker.dsn != lessons.dsn and checker.major == 18
    assert verdict.server_version == checker.version
    assert "graded on the checker" in verdict.summary() and "pgq-graded-on" in verdict.html()
    scratch = sandbox.open_scratch(sandbox.label_of(NEXT))
    assert on_the_checker(checker.dsn, scratch.db.name)
    assert not on_the_checker(lessons.dsn, scratch.db.name)


@ALONE
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/limits")
def test_every_checker_backend_runs_under_the_address_space_limit():
    checker = server.get_checker()
    with psycopg.connect(checker.dsn, autocommit=True) as conn:
        pid = conn.info.backend_pid
        with open(f"/proc/{pid}/limits") as limits:
            line = next(x for x in limits if x.startswith("Max address space"))
    assert line.split()[3:5] == [str(embedded.CHECKER_ADDRESS_SPACE)] * 2, line


def stop_the_learners_backend(checker_dsn: str, done: threading.Event, found: list) -> None:
    """SIGSTOP the learner's session that runs the statement, as soon as it shows: a backend
    that reads no cancel, as one deep in the planner (C1) is."""
    with psycopg.connect(checker_dsn, autocommit=True) as conn:
        while not done.is_set():
            for pid, query in run(conn, "lab/active_pids_of_role", {"role": sandbox.ROLE}).fetchall():
                if "jobs e" in query:
                    os.kill(pid, signal.SIGSTOP)
                    found.append(pid)
                    return
            time.sleep(0.02)


# What a blow-up's verdict says: the checker's own error, the watchdog's kill, or (seen once
# in a loaded parallel run, the planner not yet at the limit by then) the watchdog's cancel.
OUT_OF_MEMORY = ("out of memory", "the checker was restarted", "deadline")


def doubling(links: int) -> str:
    """C1 as the review wrote it at first: each WITH query named once, its column used twice,
    so the planner pulls each link up into the next and the expression doubles per link."""
    parts = [f"a{i + 1} AS (SELECT k || k AS k FROM a{i})" for i in range(links)]
    return f"WITH a0 AS (SELECT kind AS k FROM jobs LIMIT 1), {', '.join(parts)} SELECT length(k) AS pid FROM a{links}"  # noqa: E501 (the input under test, kept on one line)


ATTACKS = [
    (
        # Passes the reader as it is: five reads of jobs, sorted whole before the row cap can
        # see a row, so it spills to disk until temp_file_limit or the statement timeout ends it.
        "a sort the reader lets through",
        "09/holder",
        "SELECT a.id AS pid FROM jobs a, jobs b, jobs c, jobs d, jobs e "
        "ORDER BY md5(a.kind || b.kind || c.kind || d.kind || e.kind)",
        ("temp_file_limit", "statement timeout", "deadline"),
    ),
    (
        # The reader refuses this (its growth bound); lifted for this test alone, the planner
        # grows the expression 2^26 times: unlimited, it would take the machine's memory.
        "C1 at 26 links, the reader's growth bound lifted",
        "09/holder",
        doubling(26),
        OUT_OF_MEMORY,
    ),
    (
        "a backend that reads no cancel",
        "09/holder",
        "SELECT count(*)::int AS pid FROM jobs a, jobs b, jobs c, jobs d, jobs e",
        ("your statement did not stop within 4 s", "the checker was restarted"),
    ),
]


@ALONE
@pytest.mark.parametrize("what, key, sql, says", ATTACKS, ids=[a[0] for a in ATTACKS])
def test_a_hostile_check_never_reaches_the_lessons_server(monkeypatch, what, key, sql, says):
    checker = server.get_checker()  # started before the fingerprint: it is no part of the lessons'
    before = lessons_fingerprint()
    checker_pid = embedded.checker_status()["pid"]
    done, stopped = threading.Event(), []
    if what.startswith("C1"):
        monkeypatch.setattr(learner_sql, "MAX_EXPANSION", 10**12)
    if "no cancel" in what:
        stopper = threading.Thread(target=stop_the_learners_backend, args=(checker.dsn, done, stopped))
        stopper.daemon = True
        stopper.start()
    try:
        verdict = exercises.check(key, sql, save=False)
    finally:
        done.set()
    assert not verdict.passed, verdict.summary()
    assert any(part in verdict.headline for part in says), verdict.summary()
    assert "Traceback" not in verdict.summary()
    if "no cancel" in what:
        assert stopped, "the test never found the learner's session to stop"
        assert all(part in verdict.headline for part in says), verdict.headline
        assert embedded.checker_status()["pid"] != checker_pid  # killed, and started afresh
    assert lessons_fingerprint() == before  # postmaster start time included: it never restarted
    ex = exercises.exercise(NEXT)
    after = exercises.check(NEXT, ex.answer_text(), save=False)
    assert after.passed, after.summary()


@ALONE
def test_a_check_that_grows_the_scratch_past_its_limit_is_stopped(monkeypatch):
    """H1: the size read after a writing statement's runs stops the check (the limit lowered
    to one byte here, so the model answer's first write passes it)."""
    monkeypatch.setattr(sandbox, "MAX_SCRATCH_BYTES", 1)
    verdict = exercises.check(NEXT, exercises.exercise(NEXT).answer_text(), save=False)
    assert verdict.refused and "scratch database grew past" in verdict.headline, verdict.summary()


@ALONE
def test_server_stop_stops_the_checker_whatever_the_backend():
    """On a PGQ_DSN server (here the module's own, named by its DSN) `server stop` leaves that
    server alone and still stops the checker; the next check starts it afresh and passes."""
    lessons = server.get_server()
    server.get_checker()
    env = {**os.environ, "PGQ_BACKEND": "dsn", "PGQ_DSN": lessons.dsn}
    done = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "server", "stop"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "is yours to stop" in done.stdout and "stopped the checker" in done.stdout, done.stdout
    assert not embedded.checker_status()["running"]
    assert embedded.status()["running"]  # the lessons' server was left alone
    verdict = exercises.check(NEXT, exercises.exercise(NEXT).answer_text(), save=False)
    assert verdict.passed, verdict.summary()


DEBIAN_15 = "/usr/lib/postgresql/15/bin"  # Debian's postgresql-15, which .ci/run installs


@pytest.fixture
def lessons_on_15():
    """A throwaway PostgreSQL 15 from Debian's binaries, on a Unix socket in its own folder,
    chosen as the lessons' server through PGQ_DSN (the checker stays this module's own)."""
    import shutil
    import tempfile

    if not os.path.exists(f"{DEBIAN_15}/postgres"):
        pytest.skip(f"no PostgreSQL 15 at {DEBIAN_15}: apt-get install postgresql-15")
    folder = tempfile.mkdtemp(prefix="pgq-teach-15-")  # the system temp folder, which postgres can reach
    as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_owner:
        shutil.chown(folder, "postgres")
    data = f"{folder}/data"
    quiet = {"capture_output": True, "check": True, "timeout": 120, "cwd": folder}
    subprocess.run([*as_owner, f"{DEBIAN_15}/initdb", "-D", data, "-U", "postgres", "--auth=trust"], **quiet)
    options = f"-c listen_addresses='' -c unix_socket_directories={folder}"
    ctl = [*as_owner, f"{DEBIAN_15}/pg_ctl", "-D", data, "-l", f"{data}/log"]
    subprocess.run([*ctl, "-o", options, "-w", "start"], **quiet)
    try:
        with embedded.environment(
            PGQ_BACKEND="dsn", PGQ_DSN=f"postgresql://postgres@/postgres?host={folder}"
        ):
            server.reset_choice()
            yield server.get_server()
    finally:
        server.reset_choice()
        subprocess.run([*ctl, "-m", "immediate", "stop"], capture_output=True, timeout=120, cwd=folder)
        shutil.rmtree(folder, ignore_errors=True)


@ALONE
def test_a_learner_on_15_is_graded_on_the_checkers_18_and_told_so(lessons_on_15):
    assert lessons_on_15.major == 15
    verdict = exercises.check(NEXT, exercises.exercise(NEXT).answer_text(), save=False)
    assert verdict.passed, verdict.summary()
    checker = server.get_checker()
    assert checker.major == 18 and verdict.server_version == checker.version, verdict.server_version
    assert f"graded on the checker: PostgreSQL {checker.version}" in verdict.summary(), verdict.summary()
    scratch = sandbox.open_scratch(sandbox.label_of(NEXT))
    assert not on_the_checker(lessons_on_15.dsn, scratch.db.name)  # nothing of it on the 15

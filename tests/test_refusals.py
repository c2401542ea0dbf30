"""Bad input beyond tests/test_bad_input.py's table: calls that are refused
once a job has moved on, error texts that are stored rather than refused,
and the fault and load commands' options."""

import subprocess
import sys

import psycopg
import pytest

import pgq_teach as pgq
from helpers import job_row
from pgq_teach.databases import database_name
from pgq_teach.statements import run


def snapshot(conn):
    return run(conn, "lab/all_jobs").fetchall()


def test_failing_a_dead_job_again_is_refused_and_changes_nothing(conn):
    job_id = pgq.enqueue(conn, "send_receipt", {}, max_attempts=1)
    [job] = pgq.claim(conn)
    assert pgq.fail(conn, job, "smtp down") == "dead"
    before = snapshot(conn)
    with pytest.raises(pgq.NotClaimed, match="already failed it for good"):
        pgq.fail(conn, job, "again")
    assert snapshot(conn) == before and job_row(conn, job_id)["last_error"] == "smtp down"


def test_an_error_text_with_nul_or_of_any_length_is_stored_safely(conn):
    """Not refused: a handler's error is data, so fail() keeps what it can."""
    pgq.enqueue(conn, "send_receipt", {})
    [job] = pgq.claim(conn)
    pgq.fail(conn, job, "bad\x00byte " + "x" * 10_000)
    error = job_row(conn, job.id)["last_error"]
    assert "\x00" not in error and error.startswith("bad\\0byte x")
    assert len(error) == pgq.queue.MAX_ERROR_CHARS


def test_a_handler_that_is_not_callable_is_refused(db):
    with pytest.raises(pgq.BadInput, match="callable"):
        pgq.Worker(db.dsn, {"send_receipt": "send it"})


@pytest.mark.parametrize(
    "args, says",
    [
        (["fault-run", "--jobs", "0"], "--jobs must be from 1 to 1,000,000, got 0"),
        (["fault-run", "--seconds", "nan"], "--seconds must be a number of seconds from 1 to 86400, got nan"),
        (
            ["fault-run", "--requeue-every", "0"],
            "--requeue-every must be a number of seconds from 0.05 to 86400, got 0",
        ),
        (
            ["torture", "--workers", "two"],
            "argument --workers: invalid int value: 'two'",
        ),  # the old name, an alias
        (
            ["load", "--fail-rate", "1"],
            "--fail-rate must be a fraction from 0 up to (not including) 1, got 1.0",
        ),
        (["load", "--max-attempts", "-3"], "--max-attempts must be from 1 to 20, got -3"),
    ],
)
def test_the_fault_and_load_commands_refuse_bad_options_before_any_database(pg, args, says):
    label = "refused_before_any_database"
    out = subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", *args, "--db", label],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2 and says in out.stderr and "Traceback" not in out.stderr
    with psycopg.connect(pg.dsn, autocommit=True) as admin:
        assert run(admin, "admin/database_exists", {"name": database_name(label)}).fetchone() is None


def test_handlers_that_are_not_a_mapping_are_refused(db):
    with pytest.raises(pgq.BadInput, match="callable"):
        pgq.Worker(db.dsn, [print])

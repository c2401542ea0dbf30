"""`pgq-teach psql LESSON` opens psql on the lesson's own database, where the
course's SQL files run by hand after \\set, as lesson 02's two-terminal
section does."""

import subprocess
import sys

import pytest

from helpers import job_row, seed
from pgq_teach import databases
from pgq_teach.errors import BadInput, SetupError
from pgq_teach.infra.psql import lesson_label, psql_binary, psql_command
from pgq_teach.infra.server import get_server

LABEL = "02-row-locks"  # psql opens only the course's lessons


@pytest.fixture
def lesson_db(pg):
    try:
        psql_binary(get_server())
    except SetupError as exc:
        pytest.skip(str(exc))
    db = databases.open_database(LABEL, reset=True)
    yield db
    databases.drop_database(LABEL)


def pgq_psql(*args: str, script: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", "psql", *args],
        input=script,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_opens_on_the_lesson_database_and_runs_claim_sql_after_set(lesson_db):
    with lesson_db.connection() as conn:
        seed(conn, 2)
    script = "\\set batch 1\n\\set lease '1 minute'\n\\i sql/claim.sql\nSELECT current_database();\n"
    done = pgq_psql(LABEL, "-X", "-v", "ON_ERROR_STOP=1", script=script)
    assert done.returncode == 0, done.stderr
    assert f"psql on database {lesson_db.name}" in done.stdout
    assert "send_receipt" in done.stdout and "(1 row)" in done.stdout and "UPDATE 1" in done.stdout
    assert f" {lesson_db.name}\n" in done.stdout  # current_database()
    with lesson_db.connection() as conn:
        assert job_row(conn, 1)["status"] == "running" and job_row(conn, 1)["attempts"] == 1
        assert job_row(conn, 2)["status"] == "ready"


def test_a_missing_set_is_psql_s_own_error_and_changes_nothing(lesson_db):
    with lesson_db.connection() as conn:
        seed(conn, 1)
    done = pgq_psql(LABEL, "-X", "-v", "ON_ERROR_STOP=1", script="\\i sql/claim.sql\n")
    assert done.returncode != 0 and "syntax error" in done.stderr
    with lesson_db.connection() as conn:
        assert job_row(conn, 1)["status"] == "ready"


def test_lessons_by_number_or_slug():
    assert lesson_label("2") == lesson_label("02") == "02-row-locks"
    assert lesson_label("04-crashed-workers") == "04-crashed-workers"
    assert lesson_label(None) == "shop"
    for wrong in ("99", "abc", "../../etc", "٣", "9" * 5000, "02-row-locks/..", ""):
        with pytest.raises(BadInput, match="LESSON must be"):
            lesson_label(wrong)


def test_the_command_line_names_the_lesson_database(lesson_db):
    command = psql_command(LABEL, ["-c", "SELECT 1"])
    assert command.database == lesson_db.name
    assert command.argv[-2:] == ["-c", "SELECT 1"] and lesson_db.name in command.argv[1]
    assert (command.cwd / "sql" / "claim.sql").is_file()

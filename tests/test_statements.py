"""The SQL lives once, in sql/, and every file says what it is."""

import re

import pytest

from pgq_teach import statements
from pgq_teach.statements import statement


def test_every_file_has_the_three_part_header():
    for name in statements.names():
        header = statement(name).header
        assert header.startswith(f"{name}.sql:"), name
        assert "Safe:" in header, name
        assert "Parameters:" in header, name


# The only files that hold more than one statement, as CONTRIBUTING.md names them.
MULTI_STATEMENT = {
    "schema",
    "roles",
    "lab/fault_setup",
    "exercise/learner_role",
    "exercise/give_jobs_to_checker",
}


def statement_count(text: str) -> int:
    """Statements in a file's body: lines ending in ';', outside dollar-quoted bodies."""
    outside = re.sub(r"\$(\w*)\$.*?\$\1\$", "", text, flags=re.S)
    return sum(1 for line in outside.splitlines() if line.rstrip().endswith(";")) or 1


def test_only_the_named_files_hold_more_than_one_statement():
    many = {name for name in statements.names() if statement_count(statement(name).text) > 1}
    assert many == MULTI_STATEMENT
    assert statement_count("SELECT 1;\nDO $x$ BEGIN PERFORM 1; END $x$;\nSELECT 2;") == 3


def test_teaching_variants_say_so():
    teaching = [n for n in statements.names() if n.startswith("teaching/")]
    assert {
        "teaching/naive_read",
        "teaching/naive_mark",
        "teaching/hold_for_update",
        "teaching/hold_nowait",
        "teaching/hold_skip_locked",
    } <= set(teaching)
    for name in teaching:
        assert "TEACHING ONLY" in statement(name).header, name


def test_claim_uses_skip_locked_inside_the_with_and_a_literal_ready():
    text = statement("claim").text
    with_part = text.split(")\nUPDATE")[0]
    assert "FOR UPDATE SKIP LOCKED" in with_part
    assert "status = 'ready'" in with_part
    assert statement("claim").params == ("batch", "lease")


def test_placeholders_become_parameters_never_text():
    q = statement("complete").query()
    assert "%(id)s" in q and "%(fence_token)s" in q
    assert ":id" not in q
    # casts survive untouched
    assert "%(lease)s::interval" in statement("claim").query()


def test_identifiers_are_quoted():
    q = statement("admin/create_database").query(name='we"ird')
    assert 'CREATE DATABASE "we""ird"' in q.as_string(None)


def test_unknown_statement_names_the_known_ones():
    with pytest.raises(KeyError, match="claim"):
        statement("no_such_thing")


def test_run_checks_parameters_before_sending(conn):
    with pytest.raises(ValueError, match="missing"):
        statements.run(conn, "complete", {"id": 1})


# Where SQL text must not appear: the package, the tests and the notebooks'
# code cells. Exempt, by name: this file, whose pattern spells the keywords,
# and the exercise tests, whose SQL is what a learner types into "Your turn":
# the input under test, not the course's own statements.
SQL_TEXT = re.compile(r"\b(SELECT|UPDATE|INSERT INTO|DELETE FROM)\b[^\n\"']*\b(FROM|SET|VALUES|WHERE)\b")
# A string literal handed straight to execute(), however short ("SHOW ...", "SELECT 1").
EXECUTED_TEXT = re.compile(
    r"\.execute\(\s*[rf]?[\"']\s*(SHOW|SET|RESET|BEGIN|COMMIT|ROLLBACK|LISTEN|NOTIFY|CREATE|DROP|ALTER|"
    r"VACUUM|ANALYZE|TRUNCATE|CHECKPOINT|SELECT|UPDATE|INSERT|DELETE)\b"
)
NO_SQL_EXEMPT = {
    "tests/test_statements.py",
    "tests/test_exercises_hostile.py",
    "tests/test_checker.py",
    "tests/test_exercises_sql.py",
    "tests/test_exercises_notify_and_holder.py",
}


def without_docstrings(source: str) -> str:
    """The source with its docstrings blanked: prose may quote a statement
    ("UPDATE ... WHERE id = :id") without being SQL that runs."""
    import ast

    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                for n in range(body[0].lineno - 1, body[0].end_lineno):
                    lines[n] = ""
    return "\n".join(lines)


def sources_that_must_hold_no_sql():
    """(path relative to the repository, text) for every Python file of the
    package and the tests, and every code cell of every notebook."""
    import json
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    for path in sorted([*(repo / "pgq_teach").rglob("*.py"), *(repo / "tests").rglob("*.py")]):
        yield str(path.relative_to(repo)), without_docstrings(path.read_text(encoding="utf-8"))
    for path in sorted((repo / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for n, cell in enumerate(cells):
            if cell["cell_type"] == "code":
                yield f"{path.relative_to(repo)} cell {n}", "".join(cell["source"])


def test_python_tests_and_notebooks_hold_no_inline_sql():
    seen = dict(sources_that_must_hold_no_sql())
    assert any(name.startswith("notebooks/") for name in seen) and "pgq_teach/queue.py" in seen
    offenders = [
        name
        for name, text in seen.items()
        if name not in NO_SQL_EXEMPT and (SQL_TEXT.search(text) or EXECUTED_TEXT.search(text))
    ]
    assert offenders == []


def test_the_sql_check_would_catch_inline_sql():
    assert SQL_TEXT.search('conn.execute("UPDATE jobs SET status = %s")')
    assert SQL_TEXT.search("cur.execute('SELECT id FROM jobs')")
    assert not SQL_TEXT.search('run(conn, "claim", {"batch": 1})')
    assert EXECUTED_TEXT.search('conn.execute("SHOW synchronous_commit")')
    assert not EXECUTED_TEXT.search('run(conn, "lab/synchronous_commit")')
    quoted = 'def f():\n    """UPDATE ... WHERE id = :id re-checks"""\n    conn.execute("DELETE FROM jobs WHERE id = 1")'  # noqa: E501 (the input under test, kept on one line)
    assert SQL_TEXT.search(without_docstrings(quoted)) and "UPDATE" not in without_docstrings(quoted)


def test_wheel_ships_the_sql(tmp_path):
    import subprocess
    import sys
    import zipfile

    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        check=True,
        capture_output=True,
    )
    wheel = next(tmp_path.glob("pgq_teach-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "pgq_teach/sql/claim.sql" in names
    assert "pgq_teach/sql/teaching/naive_read.sql" in names

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


def test_teaching_variants_say_so():
    teaching = [n for n in statements.names() if n.startswith("teaching/")]
    assert {"teaching/naive_read", "teaching/naive_mark", "teaching/hold_for_update",
            "teaching/hold_nowait", "teaching/hold_skip_locked"} <= set(teaching)
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


def test_python_holds_no_inline_sql():
    from pathlib import Path

    pattern = re.compile(r"\b(SELECT|UPDATE|INSERT INTO|DELETE FROM)\b[^\n\"']*\b(FROM|SET|VALUES|WHERE)\b")
    root = Path(statements.__file__).parent
    offenders = [str(p) for p in root.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_wheel_ships_the_sql(tmp_path):
    import subprocess
    import sys
    import zipfile

    root = __import__("pathlib").Path(__file__).resolve().parent.parent
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q",
                    "-w", str(tmp_path), str(root)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("pgq_teach-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "pgq_teach/sql/claim.sql" in names
    assert "pgq_teach/sql/teaching/naive_read.sql" in names

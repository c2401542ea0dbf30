"""The Worker: handlers by kind, failures recorded, LISTEN wake-ups with a
fallback poll, reconnection, and a clean stop."""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import timedelta

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import pgq_teach as pgq
from helpers import counts, job_row, wait_for
from pgq_teach import worker as pgq_worker
from pgq_teach.statements import run


class Running:
    """A Worker on a thread; join() raises any error the worker hit."""

    def __init__(self, worker):
        self.worker = worker
        self.error = None
        self.thread = threading.Thread(target=self._go, daemon=True)
        self.thread.start()

    def _go(self):
        try:
            self.worker.run()
        except BaseException as exc:
            self.error = exc

    def join(self):
        self.worker.stop()
        self.thread.join(10)
        assert not self.thread.is_alive(), "worker did not stop within 10 s"
        if self.error:
            raise self.error


def test_worker_runs_handlers_and_records_failures(db, conn):
    seen = []

    def ok(job):
        seen.append(job.payload["n"])

    def broken(job):
        raise ValueError("bad invoice template")

    ids = [pgq.enqueue(conn, "send_receipt", {"n": n}) for n in range(3)]
    bad = pgq.enqueue(conn, "build_invoice", {})
    orphan = pgq.enqueue(conn, "unknown_kind", {})
    events = []
    worker = pgq.Worker(
        db.dsn,
        {"send_receipt": ok, "build_invoice": broken},
        poll=0.2,
        on_event=lambda name, job: events.append(name),
    )
    report = worker.run(until_idle=True)
    assert sorted(seen) == [0, 1, 2]
    assert report.done == 3 and report.retried == 2 and sorted(report.done_ids) == ids
    # One word per idea: the event is named as the count is.
    assert sorted(events) == ["claimed"] * 5 + ["done"] * 3 + ["retried"] * 2
    assert job_row(conn, bad)["last_error"] == "ValueError: bad invoice template"
    assert job_row(conn, bad)["status"] == "ready"
    assert "no handler for kind 'unknown_kind'" in job_row(conn, orphan)["last_error"]


def test_worker_reaps_at_most_every_reap_every_not_before_every_claim(db, conn):
    pgq.enqueue_many(conn, "send_receipt", [{}] * 300)
    worker = pgq.Worker(db.dsn, {"send_receipt": lambda job: None}, poll=0.2)
    began = time.monotonic()
    report = worker.run(until_idle=True)
    took = time.monotonic() - began
    assert report.claimed == 300 and report.reaped == 0
    # One pass at the start, one a reap_every after each pass, one more before calling the queue idle.
    assert 1 <= report.reaper_passes <= took / worker.reap_every + 2, (report.reaper_passes, took)
    assert report.reaper_passes < report.claimed  # not one per claim


def test_notify_wakes_a_waiting_worker_and_plain_insert_waits_for_the_poll(db, conn):
    """Guide #13: with NOTIFY, a wake-up ends the worker's wait and it claims the job, no
    poll between; without it, only the fallback poll finds the job. What woke the worker is
    read off its report as each handler starts, not timed (the time is the benchmarks')."""
    woken_by = {}  # job id -> (wake-ups, polls) the worker had counted when its handler ran

    def handler(job):
        woken_by.setdefault(job.id, (worker.report.wakeups, worker.report.polls))

    worker = pgq.Worker(db.dsn, {"send_receipt": handler}, poll=3.0)
    running = Running(worker)
    try:
        assert wait_for(lambda: worker.report.empty_claims >= 1, 10)  # idle on LISTEN
        empty, before = worker.report.empty_claims, (worker.report.wakeups, worker.report.polls)
        loud = pgq.enqueue(conn, "send_receipt", {})
        assert wait_for(lambda: loud in woken_by, 10)
        assert woken_by[loud] == (before[0] + 1, before[1]), "not woken by its notification alone"
        # Once its next claim has come back empty it waits again (a full claim
        # makes it look once more, and that look must not find the quiet job).
        assert wait_for(lambda: worker.report.empty_claims > empty, 5)
        before = (worker.report.wakeups, worker.report.polls)
        quiet = pgq.enqueue(conn, "send_receipt", {}, notify=False)
        assert wait_for(lambda: quiet in woken_by, 10)
        wakeups, polls = woken_by[quiet]
        assert wakeups == before[0] and polls > before[1], "the poll is not what found it"
    finally:
        running.join()


def test_worker_reconnects_after_its_sessions_are_terminated(db, conn):
    done = []
    worker = pgq.Worker(db.dsn, {"send_receipt": lambda job: done.append(job.id)}, poll=0.5)
    running = Running(worker)
    try:
        time.sleep(0.5)
        killed = run(conn, "lab/terminate_other_sessions").fetchall()
        assert len(killed) >= 2  # the work and the LISTEN connections
        assert wait_for(lambda: worker.report.reconnects >= 1, 5)
        job_id = pgq.enqueue(conn, "send_receipt", {})
        assert wait_for(lambda: job_id in done, 5)
    finally:
        running.join()


def test_stopping_does_not_wait_out_the_listeners_timeout(db, monkeypatch):
    """The listener waits on its LISTEN socket and on a doorbell that stop()
    rings, so run() returns at once rather than at the listener's next
    timeout (made an hour here, so only the doorbell can end the wait: a join that waited
    it out would fail Running.join's check that the thread stopped)."""
    monkeypatch.setattr(pgq_worker, "LISTEN_TIMEOUT", 3600.0)
    worker = pgq.Worker(db.dsn, {"send_receipt": lambda job: None}, poll=3600)
    running = Running(worker)
    assert wait_for(lambda: worker.report.empty_claims >= 1, 10)  # idle, listening
    running.join()


def test_heartbeat_keeps_a_long_job_leased(db, conn):
    job_id = pgq.enqueue(conn, "build_invoice", {})

    def slow(job):
        time.sleep(2.5)

    worker = pgq.Worker(db.dsn, {"build_invoice": slow}, lease=timedelta(seconds=1.5), heartbeat=True)
    report = worker.run(until_idle=True)
    assert report.done == 1 and report.fenced == 0
    assert job_row(conn, job_id)["attempts"] == 1


def test_worker_refuses_bad_settings(db):
    with pytest.raises(pgq.BadInput):
        pgq.Worker(db.dsn, {})
    with pytest.raises(pgq.BadInput):
        pgq.Worker(db.dsn, {"k": print}, lease=0)
    with pytest.raises(pgq.BadInput):
        pgq.Worker(db.dsn, {"k": print}, batch=0)
    with pytest.raises(pgq.BadInput):
        pgq.Worker(db.dsn, {"k": print}, poll=-1)


def test_cli_worker_stops_cleanly_on_sigterm(db, conn):
    label = db.name[len("pgq_") :]
    env = dict(os.environ, PGQ_DSN=db.server.dsn, PGQ_BACKEND="dsn")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_teach.cli", "worker", "--db", label, "--poll", "0.2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        job_id = pgq.enqueue(conn, "send_receipt", {})
        assert wait_for(lambda: job_row(conn, job_id)["status"] == "done", 15, step=0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "done 1" in out


def test_cli_worker_runs_processes_of_executors(db, conn):
    """--processes 2 --concurrency 4: two processes drain the queue between
    them, and each prints its own report."""
    import re

    label = db.name[len("pgq_") :]
    env = dict(os.environ, PGQ_DSN=db.server.dsn, PGQ_BACKEND="dsn")
    pgq.enqueue_many(conn, "send_receipt", [{}] * 40)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pgq_teach.cli",
            "worker",
            "--db",
            label,
            "--processes",
            "2",
            "--concurrency",
            "4",
            "--sleep-ms",
            "20",
            "--poll",
            "0.2",
            "--until-idle",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    reports = [int(n) for n in re.findall(r", done (\d+),", proc.stdout)]
    assert len(reports) == 2 and sum(reports) == 40
    assert counts(conn) == {"done": 40}


class CutAfterCommit:
    """A Unix-socket relay to the server that cuts one session at the moment its completion's
    answer comes back: the server has committed it (the answer is sent after the commit), the
    client never hears. What a server restart or a cut network can do to a worker."""

    MARK = b"SET status = 'done'"  # in complete_many.sql's text, as the client sends it

    def __init__(self, server_dsn: str, on_cut=lambda: None, refuse_for: float = 0.0):
        self.on_cut = on_cut  # called as the answer is held back: what the database says then
        self.refuse_for = refuse_for  # after the cut, new sessions are refused this long (a restart)
        self.refused_until = 0.0
        info = conninfo_to_dict(server_dsn)
        host, port = info.get("host") or "/tmp", info.get("port") or "5432"
        # the server's Unix socket (the embedded one has no other), or its TCP port (PGQ_DSN, Docker)
        self.upstream = (
            (socket.AF_UNIX, f"{host}/.s.PGSQL.{port}")
            if host.startswith("/")
            else (socket.AF_INET, (host, int(port)))
        )
        self.folder = tempfile.mkdtemp(prefix="pgq-cut-")
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(f"{self.folder}/.s.PGSQL.{port}")
        self.listener.listen()
        self.dsn = make_conninfo(server_dsn, host=self.folder)
        self.cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if time.monotonic() < self.refused_until:
                client.close()
                continue
            server = socket.socket(self.upstream[0])
            server.connect(self.upstream[1])
            armed = threading.Event()
            threading.Thread(target=self._pump, args=(client, server, armed, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, armed, False), daemon=True).start()

    def _pump(self, source, sink, armed, from_client):
        try:
            while data := source.recv(65536):
                if from_client and self.MARK in data:
                    armed.set()
                if not from_client and armed.is_set() and not self.cut.is_set() and b"UPDATE" in data:
                    self.on_cut()
                    self.refused_until = time.monotonic() + self.refuse_for
                    self.cut.set()
                    break
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def close(self):
        self.listener.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def test_a_completion_that_committed_as_the_connection_broke_is_counted_done_not_fenced(db, conn):
    job_id = pgq.enqueue(conn, "send_receipt", {})
    at_cut = []
    relay = CutAfterCommit(
        db.dsn, on_cut=lambda: at_cut.append(job_row(conn, job_id)["status"]), refuse_for=1.0
    )
    ran = []
    # a 1 s lease: the heartbeat (its own session, not cut) beats every 0.25 s while the work
    # session cannot reconnect, and finds the job no longer running
    worker = pgq.Worker(relay.dsn, {"send_receipt": lambda job: ran.append(job.id)}, poll=0.05, lease=1.0)
    running = Running(worker)
    try:
        assert wait_for(lambda: worker.report.done + worker.report.fenced >= 1, 15), worker.report
    finally:
        running.join()
        relay.close()
    assert at_cut == ["done"]  # cut once, the completion committed, its answer never delivered
    assert job_row(conn, job_id)["status"] == "done" and ran == [job_id]  # committed, run once
    assert worker.report.reconnects >= 1
    assert (worker.report.done, worker.report.fenced) == (1, 0)  # its own completion, not a newer claim's
    assert worker.report.beats >= 1 and worker.report.leases_lost == 0  # a beat found it done: no lease lost


class CutAfterFailure(CutAfterCommit):
    MARK = b"last_error = mine.error"  # in fail_many.sql's text, as the client sends it


@pytest.mark.parametrize("max_attempts, outcome", [(5, "ready"), (1, "dead")])
def test_a_failure_that_committed_as_the_connection_broke_is_counted_as_it_ended_not_fenced(
    db, conn, max_attempts, outcome
):
    job_id = pgq.enqueue(conn, "send_receipt", {}, max_attempts=max_attempts)
    at_cut = []
    relay = CutAfterFailure(
        db.dsn, on_cut=lambda: at_cut.append(job_row(conn, job_id)["status"]), refuse_for=1.0
    )
    ran = []

    def broken(job):
        ran.append(job.id)
        raise RuntimeError("the mail server said no")

    worker = pgq.Worker(relay.dsn, {"send_receipt": broken}, poll=0.05, lease=1.0)
    running = Running(worker)
    try:
        report = worker.report
        assert wait_for(lambda: report.retried + report.dead + report.fenced >= 1, 15), report
    finally:
        running.join()
        relay.close()
    assert at_cut == [outcome]  # cut once, the failure committed, its answer never delivered
    row = job_row(conn, job_id)
    assert row["status"] == outcome and row["attempts"] == 1 and ran == [job_id]  # recorded once, run once
    assert worker.report.reconnects >= 1
    counted = {"ready": worker.report.retried, "dead": worker.report.dead, "fenced": worker.report.fenced}
    assert counted == {"ready": 0, "dead": 0, "fenced": 0} | {outcome: 1}  # its own failure, as it ended
    assert worker.report.leases_lost == 0  # a beat that found it no longer running counted no lost lease


def blocked_on(conn, name: str, holder_pid: int) -> bool:
    """Whether a session named `name` waits on a row lock that `holder_pid` holds."""
    rows = run(conn, "lab/lock_lab_sessions", {"prefix": name}).fetchall()
    return any(row[1] == name and holder_pid in row[5] for row in rows)


def cut_while_blocked(conn, holder, name: str) -> None:
    """Once the Worker's work session waits on `holder`'s row lock, end the sessions named
    `name` (work and LISTEN; the heartbeat's has a name of its own), and once they are gone
    let the row go: the waiting statement never runs."""
    assert wait_for(lambda: blocked_on(conn, name, holder.info.backend_pid), 10)
    ended = {row[0] for row in run(conn, "lab/terminate_sessions_named", {"name": name}).fetchall()}
    assert ended and wait_for(
        lambda: not ended & {row[0] for row in run(conn, "lab/lock_lab_sessions", {"prefix": name})}, 10
    )
    holder.rollback()


def test_completions_that_committed_before_the_failures_statement_broke_are_counted_done(db, conn):
    """One send holds a completion and a failure, each its own statement. The completion
    commits; the session is cut while the failure waits on a row lock. The completion is
    counted done and lets its lease go (no lost lease), and the failure is sent again."""
    name = "pgq-test-split-send"
    go, started = threading.Event(), threading.Event()

    def fails(job):
        started.set()
        go.wait(10)
        raise RuntimeError("planned")

    fine = pgq.enqueue(conn, "fine", {})  # the lower id: first in the claim and the batch
    failing = pgq.enqueue(conn, "fails", {})
    # a 60 s lease: no heartbeat beats (and waits on the locked row) while the test runs
    worker = pgq.Worker(
        make_conninfo(db.dsn, application_name=name),
        {"fine": lambda job: None, "fails": fails},
        batch=2,
        poll=0.05,
        lease=60,
    )
    running = Running(worker)
    with db.connection(autocommit=False) as holder:
        try:
            assert started.wait(10)
            run(holder, "exercise/touch_job", {"id": failing})  # the failure's statement waits on it
            go.set()
            cut_while_blocked(conn, holder, name)
            assert wait_for(lambda: worker.report.retried >= 1, 15), worker.report
        finally:
            go.set()
            running.join()
    assert job_row(conn, fine)["status"] == "done" and job_row(conn, failing)["status"] == "ready"
    report = worker.report
    assert (report.done, report.retried, report.fenced, report.leases_lost) == (1, 1, 0, 0), report
    assert report.done_ids == [fine] and report.reconnects >= 1 and worker.leases.held() == []


def test_stop_sends_what_is_held_again_when_its_last_send_breaks(db, conn):
    """stop() lets the executor finish, then sends the held completion. That send waits on a
    row lock and its session is cut: stop() sends it again on a fresh connection, rather than
    leave a finished job to run again after its lease."""
    name = "pgq-test-last-send"
    go, started = threading.Event(), threading.Event()

    def slow(job):
        started.set()
        go.wait(10)

    job_id = pgq.enqueue(conn, "slow", {})
    worker = pgq.Worker(make_conninfo(db.dsn, application_name=name), {"slow": slow}, poll=0.05, lease=60)
    running = Running(worker)
    with db.connection(autocommit=False) as holder:
        try:
            assert started.wait(10)
            run(holder, "exercise/touch_job", {"id": job_id})
            worker.stop()
            go.set()  # the executor ends its batch; run() is stopping, so the shutdown sends it
            cut_while_blocked(conn, holder, name)
        finally:
            go.set()
            running.join()
    assert job_row(conn, job_id)["status"] == "done"
    report = worker.report
    assert (report.done, report.fenced) == (1, 0) and report.reconnects >= 1, report

"""Small readers the tests share: they look at rows, never at mocks."""

import atexit
import contextlib
import functools
import importlib.util
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import psycopg
import pytest
from psycopg.rows import dict_row

from pgq_teach import databases
from pgq_teach.infra import broker, embedded, server
from pgq_teach.queue import status_counts
from pgq_teach.seeding import seed_jobs
from pgq_teach.statements import run


def job_row(conn, job_id: int) -> dict | None:
    return run(conn, "lab/job_row", {"id": job_id}, row_factory=dict_row).fetchone()


def counts(conn) -> dict:
    return status_counts(conn)


def seed(conn, n: int, kind: str = "send_receipt") -> None:
    seed_jobs(conn, kind, n)


def expire_leases(conn, jobs) -> None:
    """Stage a stall: the jobs' leases end a second ago, so the reaper finds them
    expired now (sql/lab/expire_leases.sql), without sleeping through the lease."""
    run(conn, "lab/expire_leases", {"ids": [job.id for job in jobs]})


def round_trips(conn, call) -> int:
    """How many times the server said it was ready for the next query while
    `call()` ran on `conn`: one per round trip (libpq's protocol trace)."""
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        try:
            call()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        return sum("\tB\t" in line and "\tReadyForQuery" in line for line in trace)


def wait_for(check, timeout: float, step: float = 0.02) -> bool:
    """Poll `check` until it is true or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(step)
    return False


def recording_handler(dsn: str, worker: str, seconds: float = 0.0):
    """A handler whose first act records its run in the job_runs ledger (on
    the server, so runs are counted by the database), then works `seconds`."""
    import psycopg

    def handle(job) -> None:
        with psycopg.connect(dsn, autocommit=True) as conn:
            run(conn, "lab/run_record", {"job_id": job.id, "fence_token": job.fence_token, "worker": worker})
        time.sleep(seconds)

    return handle


def gone(look, timeout: float = 10) -> bool:
    """Whether `look()` (the sessions a lab named) comes back empty within `timeout`:
    a backend leaves pg_stat_activity a moment after its client closes, and under a loaded
    parallel run that moment was long enough to be seen. Still there after 10 s: left open."""
    return wait_for(lambda: look() == [], timeout, step=0.1)


def runs_per_job(conn) -> dict[int, list[str]]:
    """Job id -> the workers that ran it, in order, as the ledger says."""
    return {row[0]: list(row[2]) for row in run(conn, "lab/runs_per_job")}


def claimed(by_status: dict[str, int]) -> int:
    """How many jobs have been claimed: running, or done already."""
    return by_status.get("running", 0) + by_status.get("done", 0)


def serve_recording_worker(spec: dict) -> None:
    """A second worker PROCESS for the tests: prints "ready" once it has loaded and connected
    (the test waits for that line before its own worker claims), then, once the test's worker
    has claimed `running` jobs (running, or done already), works with a recording handler for
    `seconds` (or, with `stop_after_run`, until it has run one job), then prints the report's
    counts as JSON. Why the handshake: on a loaded machine loading this process once took
    longer than the test's three 0.8 s jobs, so it missed them all and never started."""
    import json
    from datetime import timedelta

    import psycopg

    from pgq_teach.worker import Worker

    with psycopg.connect(spec["dsn"], autocommit=True) as conn:
        print("ready", flush=True)
        wait_for(lambda: claimed(counts(conn)) >= spec["running"], 30, step=0.01)
    record = recording_handler(spec["dsn"], spec["name"], spec["work"])

    def handler(job) -> None:
        record(job)
        if spec.get("stop_after_run"):
            worker.stop()  # it has shown it was working: no need to wait out `seconds`

    worker = Worker(spec["dsn"], {spec["kind"]: handler}, lease=timedelta(seconds=spec["lease"]), poll=0.05)
    stopper = threading.Timer(spec["seconds"], worker.stop)
    stopper.start()
    try:
        report = worker.run()
    finally:
        stopper.cancel()  # a worker stopped after its run must not keep the process alive for `seconds`
    print(json.dumps({"claimed": report.claimed, "done": report.done, "reaped": report.reaped}))


NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def assert_fits(text: str, width: int, *figures: str) -> None:
    """Every line of a terminal's `text` is at most `width` characters, and every
    number in `figures` is shown whole (a wrapped cell may break between words,
    never inside a number)."""
    assert max(len(line) for line in text.splitlines()) <= width, text
    shown = set(NUMBER.findall(text))
    for figure in figures:
        for number in NUMBER.findall(figure):
            assert number in shown, (number, figure, text)


NO_SKIPS = "PGQ_NO_SKIPS"  # set by make test: see cannot_run


def cannot_run(db: databases.Database, reason: str) -> NoReturn:
    """Skip a test whose experiment says it could not run on this server (an extension, a
    role or a server-wide setting it may not have), except where the suite controls why: under
    make test (PGQ_NO_SKIPS=1) on the embedded server, as its superuser, everything an
    experiment asks for is the suite's to give, so a skip there would hide a regression, and
    the test fails instead."""
    if os.environ.get(NO_SKIPS) == "1" and db.server.backend == "embedded":
        pytest.fail(f"the experiment could not run on the embedded server, which make test sets up: {reason}")
    pytest.skip(reason)


def needs_extra(module: str, extra: str) -> None:
    """Skip a test that needs `module` from this checkout's optional `extra` when it is not
    installed, except under make test (PGQ_NO_SKIPS=1), which installs the extra first (the
    Makefile): there a missing one is a failure, not a skip that hides the test."""
    if importlib.util.find_spec(module) is not None:
        return
    fix = f"pip install -e '.[{extra}]'"
    if os.environ.get(NO_SKIPS) == "1":
        pytest.fail(f"make test installs the optional extra {extra}, yet {module} is missing: {fix}")
    pytest.skip(f"needs the optional extra {extra} ({fix}), which make test installs")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on just now (for a JupyterLab of a test's own)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


VEGA_LITE = "application/vnd.vegalite.v5+json"


def chart_rows(chart, mark: str) -> list[dict]:
    """The data rows a chart's layer draws with `mark` ("bar", "line", "rule",
    "circle"...), read from the chart's Vega-Lite spec: what the browser plots."""
    spec = chart.to_dict() if hasattr(chart, "to_dict") else chart
    for layer in spec.get("layer", [spec]):
        kind = layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"]
        if kind == mark:
            data = layer.get("data", spec.get("data"))
            return spec["datasets"][data["name"]] if "name" in data else data["values"]
    raise AssertionError(f"no {mark} layer in the chart")


def shown_charts(box) -> list[dict]:
    """The Vega-Lite specs an Output widget shows (the charts a lab displayed)."""
    return [out["data"][VEGA_LITE] for out in box.outputs if VEGA_LITE in out.get("data", {})]


@contextlib.contextmanager
def choosing(folder: Path, **more: str | None) -> Iterator[None]:
    """Choose the embedded server in `folder` (its PGQ_DATA_DIR) for this process and every
    command or kernel it starts, with `more` variables set; on the way out the variables are
    put back and the server chosen before is chosen again."""
    values = {"PGQ_DATA_DIR": str(folder), "PGQ_BACKEND": "embedded", "PGQ_DSN": None, "PGQ_PG_MAJOR": None}
    try:
        with embedded.environment(**values, **more):
            server.reset_choice()
            yield
    finally:
        server.reset_choice()


# What a stopped server's folder holds beside its cluster, of the one server that ran there: its
# start options and log, the wheel's list of the processes holding a handle on it, and its
# statistics (a fresh cluster starts with none). The template is rid of them once, before any copy.
NOT_CLUSTER = ("postmaster.opts", "log", ".handle_pids.json", "pg_stat/pgstat.stat")


@functools.cache  # once per process: each pytest-xdist worker makes its own
def data_template() -> Path | None:
    """A stopped PostgreSQL 18 data folder that this process made the first time it was asked
    for: initdb'd and started once by embedded.start(), so it holds what that start sets
    (max_connections, the WAL settings) as a learner's server does after its first start, then
    stopped cleanly. A copy starts without initdb and without that first start's restart.
    PostgreSQL 18's alone: `choosing` unsets PGQ_PG_MAJOR, and a test that picks 16 in a
    server_folder gets its files beside pg18, where no copy goes, so its start runs initdb as
    before. None if it could not be made: every server then makes its own, as before."""
    home = Path(tempfile.mkdtemp(prefix="pgq-teach-template-"))  # not under /root: server_folder says why
    atexit.register(remove_at_exit, home, os.getpid())
    try:
        return made_and_stopped(home / "pg18")
    except Exception as exc:  # the run goes on with an initdb per server, as before the template
        warnings.warn(f"no template data folder for the tests' own servers: {exc}", stacklevel=2)
        return None


def remove_at_exit(folder: Path, maker: int) -> None:
    """Remove `folder` as the process that made it exits (a child forked from it runs the same
    exit hooks, and must leave it to its parent)."""
    if os.getpid() == maker:
        shutil.rmtree(folder, ignore_errors=True)


def made_and_stopped(pgdata: Path) -> Path:
    """`pgdata` initdb'd and started by embedded.start(), then stopped, with NOT_CLUSTER gone."""
    # The environment alone, not `choosing`: the server this process had chosen stays chosen.
    with embedded.environment(
        PGQ_DATA_DIR=str(pgdata), PGQ_BACKEND="embedded", PGQ_DSN=None, PGQ_PG_MAJOR=None
    ):
        try:
            embedded.start()
        finally:
            embedded.stop()
        embedded.make_checker_template()  # in pg18-checker: a check there starts without initdb
    if (pgdata / "postmaster.pid").exists() or any(pgdata.glob(".s.PGSQL.*")):
        raise OSError(f"the server in {pgdata} did not stop cleanly")
    for name in NOT_CLUSTER:
        (pgdata / name).unlink(missing_ok=True)
    return pgdata


def copy_template(pgdata: Path) -> None:
    """Copy the process's template (data_template) to `pgdata`, or leave `pgdata` absent if
    there is none or the copy fails (the server's first start then runs initdb). cp -a keeps
    each file's owner and mode (as root the wheel runs the server as its own system user, which
    owns what initdb made), in about half the CPU time of shutil.copytree's file by file. The
    checker's template goes beside it (pg18-checker/template), so a check there runs no initdb."""
    template = data_template()
    if template is None:
        return
    checker = template.with_name(f"{template.name}-checker") / "template"
    try:
        subprocess.run(
            ["cp", "-a", "--", str(template), str(pgdata)], check=True, capture_output=True, text=True
        )
        if checker.is_dir():  # the checker's template beside it (embedded.checker_folder)
            beside = pgdata.with_name(f"{pgdata.name}-checker")
            beside.mkdir()
            subprocess.run(
                ["cp", "-a", "--", str(checker), str(beside / "template")],
                check=True,
                capture_output=True,
                text=True,
            )
    except (OSError, subprocess.CalledProcessError) as exc:
        said = getattr(exc, "stderr", None) or exc
        warnings.warn(
            f"the template data folder was not copied, so this server runs initdb: {said}", stacklevel=2
        )
        shutil.rmtree(pgdata, ignore_errors=True)


@contextlib.contextmanager
def server_folder(prefix: str = "pgq-teach-test-", *, fresh: bool = False) -> Iterator[Path]:
    """A new folder for an embedded server of its own, its data in `pg18` inside: a copy of the
    process's template (data_template), so its first start runs no initdb and no restart, or with
    `fresh` none, made by the server's first start as a learner's is (for a test of that start).
    Afterwards, however the block ends, that server is stopped if it runs and the folder is
    removed. Not under /root, where as root the wheel would open every parent for traversal, and
    not under pytest's tmp_path, whose root another pytest run may lock down to 0700 while the
    server's own user still needs in."""
    home = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        if not fresh:
            copy_template(home / "pg18")
        yield home
    finally:
        with choosing(home / "pg18"):
            # Lesson 11's broker keeps its state beside the data folder and runs in a session
            # of its own: stopped here, or it outlives the folder with nothing left to stop it.
            broker.Broker().stop()
            if embedded.status()["running"]:
                embedded.stop()
            embedded.stop_checker()  # the checker a check there started, in pg18-checker
            if (home / "pg18-pg16").exists():  # the embedded 16 a test started there (reproduce's compare)
                with embedded.environment(PGQ_PG_MAJOR="16"):
                    embedded.stop()
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def on_server(folder: Path | None) -> Iterator[server.Server]:
    """Choose the embedded server in `folder` for the block (as choosing does), or with None
    keep the server already chosen: the server either way."""
    if folder is None:
        yield server.get_server()
        return
    with choosing(folder):
        yield server.get_server()


def needs_a_server_of_its_own(shared: server.Server) -> bool:
    """Whether a test that must be alone gets an embedded server of its own: always in a
    parallel run (pytest-xdist), and on the embedded backend (a start costs seconds). A
    one-process run on PGQ_DSN or Docker (.ci/run) keeps that server, which nothing else is
    using then, so the fault run still restarts it through PGQ_RESTART_CMD."""
    return bool(os.environ.get("PYTEST_XDIST_WORKER")) or shared.backend == "embedded"


class ReusedDatabase:
    """One database a worker's tests take turns in, emptied between them rather than dropped
    and copied again. Why: every DROP DATABASE forces an immediate checkpoint, which writes
    out the dirty pages of every other test's and lesson's database on the server (about 530
    requested checkpoints a make test, in pg_stat_checkpointer), and each copy writes about
    12 MB. Measured on the library tests (3 workers, 2 CPUs): 58 fewer CPU-seconds of 453,
    2 GB fewer written. Emptied: every other session in it ended, every public table truncated
    with its identities restarted, its statistics counters zeroed. A test that changed its
    schema, its settings or its planner statistics (ANALYZE; admin/catalog_mark.sql) gets a
    fresh copy of the template instead, as every test did before. What does carry over: a
    thread or process a failed test left running, which may connect again."""

    LOCK_WAIT = "5s"

    def __init__(self, template: databases.Database, label: str = "t_reused"):
        self.template, self.label = template, label
        self.database: databases.Database | None = None
        self.mark: tuple | None = None
        self.reusable = True
        self.anew_because = ""  # why the last next_test made the database anew ("" if it did not)

    def next_test(self, admin: psycopg.Connection) -> databases.Database:
        """The database for the next test: this one emptied, or a fresh copy of the template."""
        self.anew_because = "no database yet" if self.database is None else "not reusable"
        if self.database is not None and self.reusable and self.emptied(admin, self.database):
            self.anew_because = ""
            return self.database
        self.database = databases.clone_database(self.label, self.template, admin)
        with self.database.connection() as conn:
            self.mark = tuple(run(conn, "admin/catalog_mark").fetchone())
        return self.database

    def emptied(self, admin: psycopg.Connection, database: databases.Database) -> bool:
        """Whether the database was emptied for the next test (False: make it anew, as after
        anything unexpected: the database gone, a lock not granted within LOCK_WAIT)."""
        try:
            run(admin, "admin/end_sessions_in_database", {"name": database.name})
            (left_running,) = run(admin, "admin/sessions_in_database", {"name": database.name}).fetchone()
            if left_running:
                self.anew_because = f"{left_running} client session(s) did not end"
                return False
            with database.connection(options=f"-c lock_timeout={self.LOCK_WAIT}") as conn:
                if tuple(run(conn, "admin/catalog_mark").fetchone()) != self.mark:
                    self.anew_because = "its schema, settings or planner statistics changed"
                    return False
                run(conn, "admin/empty_course_tables")
                run(conn, "lab/flush_stats")  # this session's own counts land before the reset
                run(conn, "admin/reset_statistics")
                self.mark = tuple(run(conn, "admin/catalog_mark").fetchone())
        except psycopg.errors.InsufficientPrivilege:  # pg_statistic, pg_stat_reset: a superuser's
            self.reusable = False
            return False
        except psycopg.Error as exc:
            self.anew_because = f"{type(exc).__name__}: {exc}"
            return False
        return True

    def drop(self, admin: psycopg.Connection) -> None:
        if self.database is not None:
            databases.drop_database(self.label, admin)
            self.database = None


def serve_rate_limited_worker(spec: dict) -> None:
    """A Worker PROCESS for the shared rate limit's test: prints "ready" once loaded, waits
    for the go file, then works kind `kind` under `rate_limits` with a recording handler until
    `total` runs are recorded (or 120 s pass), and prints its report's counts as JSON."""
    import json
    from pathlib import Path

    import psycopg

    from pgq_teach.worker import Worker

    print("ready", flush=True)
    wait_for(lambda: Path(spec["go"]).exists(), 60, step=0.01)
    sessions = threading.local()  # a session per executor, open before its first call is timed

    def record(job) -> None:
        if getattr(sessions, "conn", None) is None:
            sessions.conn = psycopg.connect(spec["dsn"], autocommit=True)
        run(
            sessions.conn, "lab/run_record", {"job_id": job.id, "fence_token": job.fence_token, "worker": "w"}
        )

    worker = Worker(
        spec["dsn"],
        {spec["kind"]: record},
        rate_limits={spec["kind"]: spec["rate"]},
        poll=0.05,
        concurrency=2,
    )
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    with psycopg.connect(spec["dsn"], autocommit=True) as conn:
        wait_for(lambda: len(run(conn, "lab/run_starts").fetchall()) >= spec["total"], 120, step=0.1)
    worker.stop()
    thread.join(30)
    report = worker.report
    print(json.dumps({"claimed": report.claimed, "done": report.done, "handed_back": report.handed_back}))


class Running:
    """A Worker on a thread of its own; join() stops it and raises any error it hit."""

    def __init__(self, worker):
        self.worker, self.error = worker, None
        self.thread = threading.Thread(target=self._go, daemon=True)
        self.thread.start()

    def _go(self):
        try:
            self.worker.run()
        except BaseException as exc:
            self.error = exc

    def join(self, timeout: float = 30) -> None:
        self.worker.stop()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "worker did not stop"
        if self.error:
            raise self.error


def lessons_fingerprint() -> tuple:
    """The lessons' server as nothing typed into Your turn may change it (a closed session
    takes a moment to leave pg_stat_activity, so read until two reads agree)."""
    lessons = server.get_server()
    last = None
    for _ in range(50):
        with psycopg.connect(lessons.dsn, autocommit=True, connect_timeout=5) as conn:
            row = tuple(run(conn, "exercise/lessons_fingerprint").fetchone())
        if row == last:
            return row
        last = row
        time.sleep(0.1)
    return last


@contextlib.contextmanager
def default_sigint() -> Iterator[None]:
    """While it is open, a process started here gets SIGINT's default disposition even when
    this one ignores SIGINT: a handler (unlike SIG_IGN) is reset to the default by exec.
    (preexec_fn would do it in the child, but is not safe beside the runner's threads.)"""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)

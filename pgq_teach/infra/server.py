"""Which PostgreSQL the course uses, chosen in one place.

1. PGQ_DSN is set: that server, as it is.
2. Docker answers a ping within a second (or PGQ_BACKEND=docker): the
   course's container, image $PGQ_IMAGE (postgres:18), found or started.
   In auto, an image that is not here and cannot be pulled (offline, a
   registry error) falls back to step 3, and the backend line says why;
   the failed pull is remembered for ten minutes (see container.py), so
   the calls after it fall back at once.
3. Otherwise the embedded PostgreSQL 18, which needs nothing installed.
   PGQ_PG_MAJOR=16 makes it PostgreSQL 16 (the optional extra pg16), and
   then auto skips step 2.

PGQ_BACKEND=auto|dsn|docker|embedded forces the choice; only an explicit
choice fails when its server cannot be had.

This is also the one module through which every server the course runs is
started, stopped, found and cleaned: the lessons' server, the checker (Your
turn's own PostgreSQL 18) and each member of the failover drill's pair.
embedded.py is the wheel's driver behind it (it knows pg_ctl and the folders);
no other module imports it (tests/test_layout.py).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ..errors import SetupError
from ..statements import run_one
from . import container, embedded
from .embedded import PG16_EXTRA, environment, hand_over

if TYPE_CHECKING:
    from .replica import Pair

__all__ = ["PG16_EXTRA", "environment", "hand_over"]  # the driver's names callers reach through here

BACKENDS = ("auto", "dsn", "docker", "embedded")
CONNECT_TIMEOUT = 5  # seconds; an unreachable PGQ_DSN must fail fast, not hang


@dataclass(frozen=True)
class Server:
    backend: str
    dsn: str
    version: str
    version_num: int
    origin: str = ""
    handed: str = ""  # the backend pgq-teach lab found, when it hands its server to a kernel as a DSN

    @property
    def major(self) -> int:
        return self.version_num // 10000

    @property
    def where(self) -> str:
        return describe(self.dsn)

    @property
    def kind(self) -> str:
        """The backend as the learner started it: a kernel of `pgq-teach lab` reaches the lab's
        server through a DSN, yet it is the same embedded server the terminal named."""
        return self.handed or self.backend

    def line(self) -> str:
        """The one line every entry point prints, the CLI and a lesson's kernel alike."""
        via = f" ({self.origin})" if self.origin else ""
        return f"PostgreSQL {self.version} · backend {self.kind}{via} · {self.where}"

    def dsn_for(self, dbname: str) -> str:
        return make_conninfo(self.dsn, dbname=dbname)


def describe(dsn: str) -> str:
    """Where a connection string points, with any password masked. A Unix
    socket is named as a folder, never as host:port, so it cannot be misread."""
    try:
        parts = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "an unparseable PGQ_DSN"
    host = str(parts.get("host") or "localhost")  # parsed from a string: text, but typed str | int
    user = parts.get("user") or "(default user)"
    dbname = parts.get("dbname") or user
    if host.startswith("/"):
        home = os.path.expanduser("~")
        if host.startswith(home + os.sep):
            host = "~" + host[len(home) :]  # the learner's own path stays out of shared notebooks
        return f"user {user}, database {dbname}, Unix socket in {host} (no TCP port)"
    secret = ":***" if parts.get("password") else ""
    return f"{user}{secret}@{host}:{parts.get('port') or 5432}/{dbname}"


def wanted_backend() -> str:
    """PGQ_BACKEND as set (auto when unset), checked."""
    value = os.environ.get("PGQ_BACKEND", "auto").strip().lower() or "auto"
    if value not in BACKENDS:
        raise SetupError(f"PGQ_BACKEND={value!r} is not one of: {', '.join(BACKENDS)}.")
    return value


def chosen_backend() -> str:
    """The backend get_server() tries first (auto may still fall back to embedded)."""
    value = wanted_backend()
    if value == "auto":
        if os.environ.get("PGQ_DSN"):
            return "dsn"
        return "docker" if container.engine_answers() else "embedded"
    return value


def ways(backend: str) -> str:
    """What to do when `backend` cannot be had, said about that backend."""
    if backend == "dsn" and os.environ.get("PGQ_DSN"):
        return (
            "Check that the server PGQ_DSN names is running and lets you in, or unset PGQ_DSN "
            "(and PGQ_BACKEND) to use the embedded PostgreSQL, which needs nothing installed."
        )
    return (
        "The three ways: set PGQ_DSN to a server you run; or PGQ_BACKEND=docker "
        "with a Docker engine; or unset both for the embedded PostgreSQL."
    )


def _probe(backend: str, dsn: str, origin: str = "", handed: str = "") -> Server:
    try:
        with psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
            version, num = run_one(conn, "admin/server_version")
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SetupError(f"Cannot reach PostgreSQL at {describe(dsn)}: {first}. {ways(backend)}") from None
    return Server(backend, dsn, version.split()[0], num, origin, handed)


def _docker(explicit: bool) -> Server:
    try:
        dsn, image = container.start()
    except container.NoImage as exc:
        if not explicit:
            raise
        raise SetupError(
            f"PGQ_BACKEND=docker, but {exc}. Pull it where a registry is reachable (docker pull "
            f"{container.image()}), or set PGQ_IMAGE to an image you have (offline, `python -m "
            "pgq_teach.infra.standin_image` builds pgq-local/postgres:18 from the embedded PostgreSQL), "
            "or unset PGQ_BACKEND to use the embedded PostgreSQL, which needs nothing installed."
        ) from None
    return _probe("docker", dsn, image)


@lru_cache(maxsize=1)
def get_server() -> Server:
    """Provision (or find) the server once per process."""
    wanted = wanted_backend()
    if wanted == "dsn" or (wanted == "auto" and os.environ.get("PGQ_DSN")):
        dsn = os.environ.get("PGQ_DSN")
        if not dsn:
            raise SetupError(f"PGQ_BACKEND=dsn, but PGQ_DSN is not set. {ways('none')}")
        try:
            conninfo_to_dict(dsn)  # garbage gets one line here, not psycopg's traceback later
        except psycopg.ProgrammingError as exc:
            raise SetupError(
                f"PGQ_DSN is not a connection string ({str(exc).strip()}); use postgresql://USER@HOST/DB "
                "or 'host=... dbname=...'"
            ) from None
        # PGQ_LAB_BACKEND and PGQ_ORIGIN: set by `pgq-teach lab` for its kernels (cli/course.py).
        handed = os.environ.get("PGQ_LAB_BACKEND", "")
        return _probe("dsn", dsn, os.environ.get("PGQ_ORIGIN", ""), handed if handed in BACKENDS else "")
    if wanted == "docker":
        container.forget_failed_pull()  # asked for Docker by name: try the pull again
        if not container.engine_answers():
            raise SetupError(
                "PGQ_BACKEND=docker, but no Docker engine answers. Start Docker, or unset PGQ_BACKEND "
                "to use the embedded PostgreSQL, which needs nothing installed."
            )
        return _docker(explicit=True)
    # Asking for PostgreSQL 16 (PGQ_PG_MAJOR=16) means the embedded one, not the postgres:18 container.
    origin = ""
    if wanted == "auto" and embedded.major() == 18 and container.engine_answers():
        try:
            return _docker(explicit=False)
        except SetupError as exc:
            # The one line that says why: it rides on the backend line every entry point prints.
            why = str(exc)[:1].lower() + str(exc)[1:]
            origin = f"Docker answers, but {why.splitlines()[0]}"
    # A server left running by a deleted or moved clone is restarted from this install; the
    # line says so, since the learner's sessions on it were ended.
    replaced = embedded.replace_another_install()
    return _probe("embedded", embedded.start(), "; ".join(filter(None, (origin, replaced))))


def start_server() -> Server:
    """`pgq-teach server start`: a start asked for by hand tries a failed pull
    again, then provisions (or finds) the server as get_server() does."""
    container.forget_failed_pull()
    return get_server()


CHECKER_ORIGIN = "the checker: its own embedded PostgreSQL 18, for Your turn only"
_checker: dict[str, Server] = {}  # by the checker's folder: the version read once per start


def get_checker() -> Server:
    """The checker (embedded.start_checker): the embedded PostgreSQL 18 where the learner's
    "Your turn" SQL runs, whatever server the lessons use (PGQ_DSN, Docker or embedded), and
    nothing else does. Started on demand, found when it runs."""
    dsn = embedded.start_checker()
    key = str(embedded.checker_folder())
    found = _checker.get(key)
    if found is None or found.dsn != dsn:
        found = _checker[key] = _probe("checker", dsn, CHECKER_ORIGIN)
    return found


def rebuild_checker() -> Server:
    """Kill the checker and start it afresh from its template (embedded.rebuild_checker)."""
    embedded.rebuild_checker()
    return get_checker()


def replica_pair(*, synchronous: bool) -> contextlib.AbstractContextManager[Pair]:
    """A throwaway primary and a streaming replica of it (infra/replica.py), for the failover
    drill: never the course's own server. A context manager that stops both, drops the
    replication slot and removes their folder however its block ends."""
    return replica.pair(synchronous=synchronous)


# The lessons' embedded server: stop, restart, status, and where its data is.


def data_folder() -> Path:
    """The embedded server's data folder ($PGQ_DATA_DIR, else the course's own)."""
    return embedded.data_dir()


def stop_server(*, immediate: bool = False) -> bool:
    """Stop the embedded server if it runs; True if it was running (embedded.stop)."""
    return embedded.stop(immediate=immediate)


def restart_server() -> None:
    """A fast restart of the embedded server: sessions end, committed data stays."""
    embedded.restart()


def server_status() -> dict:
    """The embedded server's data folder, whether it runs, its pid, and another install's
    claim on it, without starting it."""
    return embedded.status()


def refuse_to_remove() -> None:
    """BadInput, before anything is removed, if the data folder or the checker's holds files
    that are not the course's PostgreSQL: `clean --all` removes both."""
    embedded.refuse_a_folder_not_postgresqls(data_folder())
    embedded.refuse_a_checker_folder_not_ours(embedded.checker_folder())


# The checker: started by get_checker() above.


def stop_checker() -> bool:
    """Stop the checker if it runs (a fast shutdown); True if it was running."""
    return embedded.stop_checker()


def checker_status() -> dict:
    """Whether the checker runs, its pid and its folder, without starting it."""
    return embedded.checker_status()


def checker_folder() -> Path:
    """The checker's folder (its template and its scratch copy)."""
    return embedded.checker_folder()


def checker_data() -> Path:
    """The checker's scratch copy, the data folder its postmaster runs."""
    return embedded.checker_data()


def checker_backend(pid: int) -> bool:
    """Whether `pid` is a live backend of the running checker."""
    return embedded.checker_backend(pid)


def kill_checker() -> bool:
    """SIGKILL the checker and every process under it; True if it was running."""
    return embedded.kill_checker()


# A member of the failover drill's pair (infra/replica.py): a data folder of the wheel's
# PostgreSQL 18 that only the drill uses.


def init_member(pgdata: Path) -> None:
    """initdb a new primary in `pgdata`: trust authentication, UTF-8, superuser postgres."""
    embedded.wheel_command(
        "initdb", ["--auth=trust", "--auth-local=trust", "--encoding=utf8", "-U", "postgres"], pgdata
    )


def copy_member(pgdata: Path, source: str, slot: str) -> None:
    """pg_basebackup the server `source` names into `pgdata`, streaming its WAL from `slot`."""
    embedded.wheel_command(
        "pg_basebackup", ["-D", str(pgdata), "-d", source, "-X", "stream", "-S", slot, "-c", "fast"]
    )


def start_member(pgdata: Path, log: Path, seconds: int) -> None:
    """pg_ctl start, waiting up to `seconds`; SetupError if it did not start."""
    embedded.wheel_command("pg_ctl", ["-w", "-t", str(seconds), "-l", str(log), "start"], pgdata)


def stop_member(pgdata: Path) -> None:
    """An immediate stop (its folder is about to go), then SIGKILL of every process left."""
    if member_pid(pgdata) is None:
        return
    with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired, SetupError):
        embedded.wheel_command("pg_ctl", ["-w", "-t", "30", "-m", "immediate", "stop"], pgdata)
    embedded.kill_tree(pgdata)


def kill_member(pgdata: Path) -> bool:
    """SIGKILL the postmaster of `pgdata` and every process under it; True if it was running."""
    return embedded.kill_tree(pgdata)


def member_pid(pgdata: Path) -> int | None:
    """The live postmaster of `pgdata` (postmaster.pid), or None."""
    return embedded.postmaster_of(pgdata)


def reset_choice() -> None:
    """Forget the cached choice (after changing PGQ_* variables)."""
    get_server.cache_clear()
    _checker.clear()


# Last, once every operation above is defined: replica.py starts and stops its members through
# this module, so it imports this one as it loads; callers reach it as `server.replica`.
from . import replica  # noqa: E402
